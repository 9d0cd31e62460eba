#!/usr/bin/env python3
"""BitNet b1.58 models as llama.cpp's own convert_hf_to_gguf.py writes them ("bitnet" architecture),
and llama.cpp's greedy continuation on each (tests/test_bitnet_gguf.c reads them).

llama.cpp's bitnet graph applies SiLU in the MLP whatever hidden_act says, so these models are
BitNetForCausalLM with hidden_act "silu" and a tied head (the graph has no output tensor); their
projections ternary times a per-tensor scale (tools/make_fixtures.py's "ternary" recipe, which is
also what the converter does to them). The converter's tensor map knows the sub-norms only by the
original checkpoints' names, so it is given a copy renamed so (converter_names). The vocabulary step is make_hybrid_gguf.py's tiny byte-level
one.

  tests/fixtures/gguf/bitnet/bitnet_silu-f32.gguf   tests/fixtures/families/bitnet_silu converted
                                                    F32 (hidden 32: no TQ block fits its rows)
  tests/fixtures/gguf/bitnet/bitnet_silu.json       prompt ids, transformers' logits (of the weights
                                                    the converter wrote), llama.cpp's text
  tests/fixtures/gguf/bitnet/bitnet_wide-tq2_0.gguf a wider random BitNet (hidden 256, FFN 512, 2
  tests/fixtures/gguf/bitnet/bitnet_wide-tq1_0.gguf layers, 4 heads of 64, 2 KV heads) converted
                                                    --outtype tq2_0 / tq1_0: every projection in
                                                    the ternary type
  tests/fixtures/gguf/bitnet/bitnet_wide-tq2_0.json  (and -tq1_0) prompt ids, transformers' logits of
                                                    the f32 model, llama.cpp's text on that file

  python3 tools/make_bitnet_gguf.py --peer PEER
PEER is the llama.cpp build of tools/build_llamacpp.sh. Rerunnable: the same converter and gguf
versions give the same bytes.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import make_hybrid_gguf as mh  # noqa: E402

OUT = os.path.join(ROOT, "tests", "fixtures", "gguf", "bitnet")
WIDE = dict(name="bitnet_wide", cls="BitNetForCausalLM",
            extra=dict(hidden_size=256, intermediate_size=512, num_attention_heads=4, num_key_value_heads=2,
                       head_dim=64, hidden_act="silu", tie_word_embeddings=True),
            ternary=True)


def converter_weights(model):
    """The projections as the converter writes them (conversion/bitnet.py weight_quant: round(w / s)
    clamped to -1..1, times s = mean |w|; not idempotent on weights already ternary: s shrinks by
    the share of nonzeros), so transformers' logits are those of the file's weights."""
    import torch
    with torch.no_grad():
        for pname, prm in model.named_parameters():
            if pname.endswith("_proj.weight"):
                iscale = 1 / prm.abs().mean().clamp(min=1e-5)
                prm.copy_((prm * iscale).round().clamp(-1, 1) / iscale)
    return model


MIN_MARGIN = 2.5  # top-1 over top-2 logit at every greedy step (ternary files compute with int8 activations)


def greedy_margin(model, ids, n):
    """The smallest top-1 / top-2 logit gap over the prompt's last position and n greedy steps."""
    import torch
    ids, m = list(ids), float("inf")
    with torch.no_grad():
        for _ in range(n):
            row = model(torch.tensor([ids])).logits[0, -1].float()
            top = torch.topk(row, 2).values
            m = min(m, float(top[0] - top[1]))
            ids.append(int(row.argmax()))
    return m


def make_model(spec, out, seed_name=None):
    """The spec's random model (make_fixtures.py's weights recipe, ternary projections) into out."""
    import torch
    import make_fixtures as mf
    seed = mf.model_seed("family-" + (seed_name or spec["name"]))
    cls, cfg = mf.fam_config(spec)
    model = cls(cfg).eval()
    mf.fam_init_weights(model, seed, spec.get("embed_std", 0.5), spec.get("head_std", 0.25), spec.get("std"))
    with torch.no_grad():
        for pname, prm in model.named_parameters():
            if pname.endswith("_proj.weight"):
                s = prm.abs().mean().clamp(min=1e-5)
                prm.copy_((prm * (1 / s)).round().clamp(-1, 1) / (1 / s))
    model.save_pretrained(out)
    return model


def converter_names(src, dst):
    """A copy of folder src whose sub-norms carry the names llama.cpp's tensor map knows (the
    original BitNet checkpoints': self_attn.inner_attn_ln, mlp.ffn_layernorm); it has no entry for
    transformers' attn_sub_norm / ffn_sub_norm and refuses them."""
    from safetensors.torch import load_file, save_file
    shutil.copytree(src, dst)
    st = load_file(os.path.join(src, "model.safetensors"))
    st = {k.replace("self_attn.attn_sub_norm", "self_attn.inner_attn_ln").replace("mlp.ffn_sub_norm",
                                                                                    "mlp.ffn_layernorm"): v
          for k, v in st.items()}
    save_file(st, os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})
    return dst


def convert(peer, src, out, ty):
    src = converter_names(src, tempfile.mkdtemp() + "/m")
    p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_hybrid_gguf.py"), "--peer", peer,
                        "--convert", src, out, ty], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode:
        raise SystemExit("%s: the converter failed:\n%s" % (src, p.stdout.decode()[-3000:]))
    print("wrote", out)


def write_ref(peer, name, gguf_path, ids, logits):
    text = mh.peer_text(peer, gguf_path, mh.PROMPT)
    ref = {"prompt": mh.PROMPT, "prompt_ids": ids, "n_predict": mh.N_PREDICT, "llamacpp_text": text,
           "logits": [[float("%.6g" % v) for v in row] for row in logits.tolist()]}
    with open(os.path.join(OUT, name + ".json"), "w") as f:
        json.dump(ref, f)
        f.write("\n")
    print(name, repr(text))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", required=True)
    a = ap.parse_args()
    import torch
    import make_fixtures as mf
    os.makedirs(OUT, exist_ok=True)
    tmp = tempfile.mkdtemp()
    # the family fixture, F32
    src = os.path.join(ROOT, "tests", "fixtures", "families", "bitnet_silu")
    cls, _ = mf.fam_config(next(s for s in mf.FAMILIES if s["name"] == "bitnet_silu"))
    model = converter_weights(cls.from_pretrained(src, dtype=torch.float32, attn_implementation="eager").eval())
    ids = mh.encode(mh.PROMPT, mh.tiny_vocab(model.config.vocab_size)[0])
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].float()
    out = os.path.join(OUT, "bitnet_silu-f32.gguf")
    convert(a.peer, src, out, "f32")
    write_ref(a.peer, "bitnet_silu", out, ids, logits)
    # the wide model, TQ2_0 and TQ1_0: the first seed whose greedy continuation has clear winners
    for k in range(100):
        src = os.path.join(tmp, "wide%d" % k)
        model = converter_weights(make_model(WIDE, src, "bitnet_wide-%d" % k))
        ids = mh.encode(mh.PROMPT, mh.tiny_vocab(model.config.vocab_size)[0])
        m = greedy_margin(model, ids, mh.N_PREDICT)
        if m >= MIN_MARGIN:
            print("seed bitnet_wide-%d: smallest greedy margin %.3f" % (k, m))
            break
    else:
        raise SystemExit("no seed with greedy margins >= %g" % MIN_MARGIN)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].float()
    for ty in ("tq2_0", "tq1_0"):
        out = os.path.join(OUT, "bitnet_wide-%s.gguf" % ty)
        convert(a.peer, src, out, ty)
        write_ref(a.peer, "bitnet_wide-%s" % ty, out, ids, logits)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
