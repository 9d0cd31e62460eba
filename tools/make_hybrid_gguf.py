#!/usr/bin/env python3
"""The hybrid families' fixtures (tests/fixtures/families/, made by tools/make_fixtures.py) as
llama.cpp's own convert_hf_to_gguf.py writes them, and llama.cpp's greedy continuation on each.

The fixtures carry no tokenizer (their vocabulary is 128 random ids), so the converter's vocabulary
step is replaced by a tiny byte-level BPE vocabulary (model "gpt2", pre-tokenizer "gpt-2"): three
control tokens, the printable ASCII bytes in byte-level form, a few merges. Everything else (tensor
names, the -exp(A_log) of ssm_a, squeezed conv weights, per-layer head_count_kv, ssm.* keys, the
delta-net reorders) is the converter's own code.

  tests/fixtures/gguf/hybrid/<fixture>-f32.gguf   the converted file (F32)
  tests/fixtures/gguf/hybrid/<fixture>.json       the prompt's ids and llama.cpp's greedy
                                                  continuation ids on that file (llama-completion)

  python3 tools/make_hybrid_gguf.py --peer PEER [--only lfm2,qwen3_5] [--types f32,f16,q8_0]
        [--keep DIR]
  python3 tools/make_hybrid_gguf.py --peer PEER --check
        the other way: build/mlstack quantize writes each fixture of WRITTEN as stored, Q8_0, Q4_1
        and Q4_K_M; llama.cpp must load each file and give mlstack's greedy text on it; and Falcon-H1
        written from its folder (multipliers folded) is compared tensor by tensor with the converter's
With qwen3_5 it also writes files with two types in the delta-net's input projections
(make_mixed: qwen3_5-mixed16.gguf and its all-F32 copy, qwen3_5-mixed.gguf by llama-quantize).
PEER is the llama.cpp build of tools/build_llamacpp.sh (PEER/src/vendor/llama.cpp holds the
converter, PEER/bin/llama-completion runs it). --types f32,f16,q8_0 also converts to F16 / Q8_0
(into --keep, default a temporary folder) and checks those files: mlstack's logits against
transformers' (the difference the stored type makes) and its greedy text against llama.cpp's.
Rerunnable: the same converter and gguf versions give the same bytes.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SRC = os.path.join(ROOT, "tests", "fixtures", "families")
OUT = os.path.join(ROOT, "tests", "fixtures", "gguf", "hybrid")
# fixture -> the GGUF architecture llama.cpp writes for it
HYBRIDS = {"lfm2": "lfm2", "lfm2_moe": "lfm2moe", "qwen3_5": "qwen35", "qwen3_5_moe": "qwen35moe",
           "qwen3_next": "qwen3next", "granite_hybrid": "granitehybrid", "nemotron_h": "nemotron_h",
           "mamba2": "mamba2", "falcon_h1": "falcon-h1", "nemotron_h_moe": "nemotron_h_moe",
           "nemotron_h_moe_latent": "nemotron_h_moe", "granite_hybrid_moe": "granitehybrid"}
PROMPT = "the cat sat on"
N_PREDICT = 16
MERGES = ["Ġ t", "h e", "Ġt he", "a t", "Ġ s", "Ġ c", "o n", "Ġ o"]


def tiny_vocab(n_vocab):
    """tokens, types, merges: 0-2 control, then byte-level characters of bytes 32..126, merges."""
    tokens = ["<pad>", "<s>", "</s>"]
    tokens += ["Ġ" if b == 32 else chr(b) for b in range(32, 127)]
    tokens += ["".join(m.split(" ")) for m in MERGES]
    while len(tokens) < n_vocab:
        tokens.append("<unused%d>" % len(tokens))
    tokens = tokens[:n_vocab]
    types = [3, 3, 3] + [1] * (n_vocab - 3)  # the fillers are normal tokens: both engines print them
    return tokens, types, [m for m in MERGES if "".join(m.split(" ")) in tokens]


def convert_here(src, out, outtype, peer):
    """Runs llama.cpp's converter in this process with the vocabulary step replaced."""
    llama = os.path.join(peer, "src", "vendor", "llama.cpp")
    sys.path.insert(0, os.path.join(llama, "gguf-py"))
    sys.path.insert(0, llama)
    import convert_hf_to_gguf as conv

    def set_vocab(self):
        n = self.hparams.get("vocab_size") or self.hparams["text_config"]["vocab_size"]
        tokens, types, merges = tiny_vocab(n)
        w = self.gguf_writer
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre("gpt-2")
        w.add_token_list(tokens)
        w.add_token_types(types)
        w.add_token_merges(merges)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_add_bos_token(False)

    real = conv.get_model_class
    cfg = json.load(open(os.path.join(src, "config.json")))
    if "hybrid_override_pattern" in cfg:
        # released Nemotron-H configs need remote code: AutoConfig refuses them and the converter
        # reads config.json as it is (here too, not transformers 5's defaults)
        conv.ModelBase.load_hparams = staticmethod(lambda d, *a, **k: json.load(open(os.path.join(d, "config.json"))))

    def patched(name, mmproj=False):
        cls = real(name, mmproj=mmproj)
        cls.set_vocab = set_vocab
        return cls

    conv.get_model_class = patched
    sys.argv = ["convert_hf_to_gguf.py", src, "--outtype", outtype, "--outfile", out]
    if conv.get_model_class(json.load(open(os.path.join(src, "config.json")))["architectures"][0]).supports_mtp_export:
        sys.argv.append("--no-mtp")
    conv.main()


def peer_text(peer, path, prompt):
    """llama.cpp's greedy continuation on path, the same text twice in a row (on the loaded 2-core
    machine llama-completion once printed nothing, once all but the last token)."""
    texts = [peer_text_once(peer, path, prompt)]
    for _ in range(3):
        texts.append(peer_text_once(peer, path, prompt))
        if texts[-1] == texts[-2]:
            break
    return texts[-1]


def peer_text_once(peer, path, prompt):
    """llama.cpp's greedy continuation on path (text; it stops at the end-of-text token)."""
    exe = os.path.join(peer, "bin", "llama-completion")
    cmd = [exe, "-m", path, "-p", prompt, "-n", str(N_PREDICT), "-t", "2", "--temp", "0", "-no-cnv",
           "--no-warmup", "--no-display-prompt", "-s", "1"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    if p.returncode:
        raise SystemExit("llama-completion failed on %s:\n%s" % (path, p.stderr.decode()[-2000:]))
    text = p.stdout.decode("utf-8", "replace")
    # llama-completion ends with blank lines (and " [end of text]" at the end token); the vocabulary
    # has no newline token
    text = text.rstrip("\n")
    return text[:-len(" [end of text]")] if text.endswith(" [end of text]") else text


def encode(prompt, tokens):
    """The byte-level ids of prompt under tiny_vocab (merges applied greedily by rank)."""
    pieces = ["Ġ" if c == " " else c for c in prompt]
    ranks = {tuple(m.split(" ")): i for i, m in enumerate(MERGES)}
    while True:
        best = None
        for i in range(len(pieces) - 1):
            r = ranks.get((pieces[i], pieces[i + 1]))
            if r is not None and "".join((pieces[i], pieces[i + 1])) in tokens and (best is None or r < best[0]):
                best = (r, i)
        if best is None:
            break
        i = best[1]
        pieces[i:i + 2] = [pieces[i] + pieces[i + 1]]
    return [tokens.index(p) for p in pieces]


# make_fixtures.py's spec of each fixture, changed where llama.cpp needs it: its LFM2 graph takes
# attention heads x head_dim = hidden_size; its Nemotron-H converter a Mamba2 head width of 64; its
# Qwen3.5 delta-net value heads as wide as key heads, and M-RoPE sections that fit the rotary dims
# (text positions: any split is plain RoPE); experts in every Qwen3-Next layer, renormalized as
# llama.cpp always does, two key heads of two value heads each (ssm_ba grouped by key head);
# Granite without experts, its dense MLP intermediate_size wide; Granite with experts without RoPE,
# Mamba2 projection biases (the converter turns RoPE off in hybrid Granites; llama.cpp loads no such
# biases), its shared MLP wider than an
# expert (a mix-up of the two widths fails); Falcon-H1
# (every multiplier != 1: the converter folds them into the weights) without the projection biases
# llama.cpp does not load, its gated norm after the gate (llama.cpp's Mamba2 order); Nemotron-H MoE
# with one expert group (the converter writes no expert_group_used_count) and no MLP block beside
# the MoE blocks (nemotron_h_moe takes every block with an FFN as MoE); its latent form likewise
#
# llama.cpp does not load, its gated norm after the gate (llama.cpp's Mamba2 order)
QWEN35_ROPE = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25, "mrope_section": [1, 1, 0]}
OVERRIDES = {"lfm2": {"head_dim": 8}, "lfm2_moe": {"head_dim": 8},
             "qwen3_5": {"linear_value_head_dim": 8, "rope_parameters": QWEN35_ROPE},
             "qwen3_5_moe": {"rope_parameters": QWEN35_ROPE}, "qwen3_next": {"mlp_only_layers": [], "norm_topk_prob": True,
                            "linear_num_key_heads": 2, "linear_num_value_heads": 4},
             "granite_hybrid": {"num_experts_per_tok": 0, "shared_intermediate_size": 64},
             "granite_hybrid_moe": {"mamba_proj_bias": False, "position_embedding_type": "nope",
                                    "shared_intermediate_size": 48},
             "nemotron_h": {"mamba_num_heads": 1, "mamba_head_dim": 64, "n_groups": 1},
             "nemotron_h_moe": {"mamba_num_heads": 1, "mamba_head_dim": 64, "n_groups": 1, "n_group": 1, "topk_group": 1,
                                "layer_types": ["linear_attention", "moe", "full_attention", "moe", "linear_attention",
                                                "moe"]},
             "nemotron_h_moe_latent": {"mamba_num_heads": 1, "mamba_head_dim": 64, "n_groups": 1, "n_group": 1,
                                       "topk_group": 1},
             "falcon_h1": {"mamba_proj_bias": False, "projectors_bias": False, "mamba_rms_norm": True,
                           "mamba_norm_before_gate": False}}
# the layer kinds as the released configs write them (transformers 5 rewrites them; the converter
# reads these): Granite 4.0-H's layer_types names, Nemotron-H's hybrid_override_pattern
RELEASED_TYPES = {"granite_hybrid": {"linear_attention": "mamba", "full_attention": "attention"},
                  "granite_hybrid_moe": {"linear_attention": "mamba", "full_attention": "attention"}}
NEMOTRON = {"linear_attention": "M", "mamba": "M", "mlp": "-", "full_attention": "*", "attention": "*", "moe": "E"}
PATTERN = {"nemotron_h": NEMOTRON, "nemotron_h_moe": NEMOTRON, "nemotron_h_moe_latent": NEMOTRON}


def make_model(name, out):
    """The fixture's random model (tools/make_fixtures.py's spec and weights recipe) into out;
    returns the transformers model (f32, eager)."""
    import torch
    sys.path.insert(0, os.path.join(ROOT, "tools"))
    import make_fixtures as mf
    spec = dict(next(s for s in mf.FAMILIES if s["name"] == name))
    spec["extra"] = dict(spec.get("extra", {}), **OVERRIDES.get(name, {}))
    seed = mf.model_seed("family-" + spec.get("seed_name", name))
    cls, cfg = mf.fam_config(spec)
    model = cls(cfg).eval()
    mf.fam_init_weights(model, seed, spec.get("embed_std", 0.5), spec.get("head_std", 0.25), spec.get("std"),
                        spec.get("plus_one", False))
    if spec.get("expert_bias_std"):
        import numpy as np
        rng = np.random.default_rng(seed + 1)
        with torch.no_grad():
            for bname, buf in sorted(model.named_buffers(), key=lambda kv: kv[0]):
                if bname.endswith("expert_bias") or bname.endswith("e_score_correction_bias"):
                    v = spec["expert_bias_std"] * rng.standard_normal(tuple(buf.shape))
                    buf.copy_(torch.from_numpy(v.astype(np.float32)))
    model.save_pretrained(out)
    if name in RELEASED_TYPES:
        path = os.path.join(out, "config.json")
        cfg = json.load(open(path))
        cfg["layer_types"] = [RELEASED_TYPES[name].get(t, t) for t in cfg["layer_types"]]
        json.dump(cfg, open(path, "w"), indent=2)
    if name in PATTERN:
        path = os.path.join(out, "config.json")
        cfg = json.load(open(path))
        types = cfg.get("layer_types") or cfg["layers_block_type"]
        cfg["hybrid_override_pattern"] = "".join(PATTERN[name][t] for t in types)
        cfg["num_hidden_layers"] = len(types)
        dense = "E" not in cfg["hybrid_override_pattern"]
        for k in ("num_experts_per_tok", "n_routed_experts", "n_shared_experts", "n_group", "topk_group",
                  "norm_topk_prob", "routed_scaling_factor", "layers_block_type", "layer_types"):
            if dense or k in ("layers_block_type", "layer_types"):
                cfg.pop(k, None)  # a dense model's released config has no expert keys
        json.dump(cfg, open(path, "w"), indent=2)
    return model


WRITTEN = list(HYBRIDS)  # mlstack writes every hybrid to GGUF
CHECK_QUANTS = ["none", "q8_0", "q4_1", "q4_k_m"]


def ours_text(path):
    exe = os.path.join(ROOT, "build", "mlstack")
    out = subprocess.run([exe, "run", "-m", path, "-p", PROMPT, "-n", str(N_PREDICT)], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL).stdout.decode("utf-8", "replace")
    return out[len(PROMPT):].rstrip("\n") if out.startswith(PROMPT) else out


def check_stored(peer, name, path, ids, logits):
    """A converted F16 / Q8_0 file: mlstack's logits against transformers' (the difference the stored
    type makes) and its greedy text against llama.cpp's on the same file."""
    exe = os.path.join(ROOT, "build", "mlstack")
    p = subprocess.run([exe, "eval", "-m", path, "--ids", ",".join(map(str, ids)), "--all"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    if p.returncode:
        print("%-14s %s: mlstack failed: %s" % (name, os.path.basename(path), p.stderr.decode()[-300:]))
        return 1
    rows = [list(map(float, line.split())) for line in p.stdout.decode().strip().split("\n")]
    d = max(abs(a - b) for r1, r2 in zip(rows, logits) for a, b in zip(r1, r2))
    ours, theirs = ours_text(path), peer_text(peer, path, PROMPT)
    print("%-14s %-22s max |logit - transformers| %.2e  greedy text %s" %
          (name, os.path.basename(path), d, "= llama.cpp's" if ours == theirs else "DIFFERS: %r vs %r" % (ours, theirs)))
    return ours != theirs


def check_written(peer, names):
    """mlstack writes each fixture's GGUF (as stored and quantized); llama.cpp must load it and give
    mlstack's greedy text on that file. Returns the number of mismatches."""
    bad = 0
    exe = os.path.join(ROOT, "build", "mlstack")
    for name in names:
        for q in CHECK_QUANTS:
            out = os.path.join(tempfile.mkdtemp(), "%s-%s.gguf" % (name, q))
            p = subprocess.run([exe, "quantize", "-m", os.path.join(OUT, name + "-f32.gguf"), "--quant", q, "-o", out],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if p.returncode:
                print("%-8s %-7s mlstack quantize failed: %s" % (name, q, p.stderr.decode()[-300:]))
                bad += 1
                continue
            ours = ours_text(out)
            try:
                theirs = peer_text(peer, out, PROMPT)
            except SystemExit as e:
                theirs = "(llama.cpp failed: %s)" % str(e)[-200:]
            same = ours == theirs
            bad += not same
            print("%-8s %-7s %s  ours %r  llama.cpp %r" % (name, q, "same" if same else "DIFFER", ours, theirs))
    return bad


def make_mixed(peer):
    """Two types in the delta-net's input projections (llama-quantize's Q4_K_M gives attn_qkv Q6_K
    beside a Q4_K attn_gate, ssm_alpha and ssm_beta in some layers): qwen3_5-mixed16.gguf (those
    three F16, the rest F32) and qwen3_5-mixed16-f32.gguf (the same values, all F32), by
    tools/dequant_gguf.py; qwen3_5-mixed.gguf, llama-quantize's Q8_0 with those three in Q4_1."""
    src, out = os.path.join(OUT, "qwen3_5-f32.gguf"), os.path.join(OUT, "qwen3_5-mixed.gguf")
    deq = [sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "dequant_gguf.py")]
    m16 = os.path.join(OUT, "qwen3_5-mixed16.gguf")
    subprocess.run(deq + [src, m16, "attn_gate,ssm_alpha,ssm_beta"], check=True)
    subprocess.run(deq + [m16, os.path.join(OUT, "qwen3_5-mixed16-f32.gguf")], check=True)
    types = [a for t in ("attn_gate", "ssm_alpha", "ssm_beta") for a in ("--tensor-type", t + "=q4_1")]
    subprocess.run([os.path.join(peer, "bin", "llama-quantize"), *types, src, out, "Q8_0", "1"], check=True,
                   stdout=subprocess.DEVNULL)
    print("wrote", m16, out)


def check_fold(peer):
    """Falcon-H1 written by mlstack from its safetensors folder (multipliers folded into the weights)
    against the converter's file of the same model: each tensor's largest difference, then llama.cpp's
    greedy text on mlstack's tensors with the converter's vocabulary. Returns 1 on a mismatch."""
    sys.path.insert(0, os.path.join(peer, "src", "vendor", "llama.cpp", "gguf-py"))
    import gguf
    import numpy as np
    tmp = tempfile.mkdtemp()
    make_model("falcon_h1", os.path.join(tmp, "hf"))
    ours = os.path.join(tmp, "ours.gguf")
    subprocess.run([os.path.join(ROOT, "build", "mlstack"), "quantize", "-m", os.path.join(tmp, "hf"), "--quant",
                    "none", "-o", ours], check=True, stdout=subprocess.DEVNULL)
    theirs = gguf.GGUFReader(os.path.join(OUT, "falcon_h1-f32.gguf"))
    mine = gguf.GGUFReader(ours)
    ref = {t.name: np.array(t.data) for t in theirs.tensors}
    worst = 0.0
    for t in mine.tensors:
        d = float(np.max(np.abs(np.array(t.data).reshape(ref[t.name].shape) - ref[t.name])))
        worst = max(worst, d)
        if d:
            print("  %-28s max |ours - converter| %.3g" % (t.name, d))
    print("falcon_h1 folded by mlstack: %d tensors (converter: %d), max |ours - converter| %.3g" %
          (len(mine.tensors), len(theirs.tensors), worst))
    merged = os.path.join(tmp, "merged.gguf")
    w = gguf.GGUFWriter(merged, "falcon-h1")
    for f in list(mine.fields.values()) + [f for f in theirs.fields.values() if f.name.startswith("tokenizer.")]:
        if f.name.startswith(("GGUF.", "general.architecture", "tokenizer.ggml.model")) and f.name != "tokenizer.ggml.model":
            continue
        if f.name == "tokenizer.ggml.model" and f in mine.fields.values():
            continue
        val = f.contents()
        vtype = f.types[0]
        sub = f.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(f.name, val, vtype, sub_type=sub)
    for t in mine.tensors:
        w.add_tensor(t.name, np.array(t.data), raw_shape=list(reversed([int(x) for x in t.shape])))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    a, b = ours_text(merged), peer_text(peer, merged, PROMPT)
    print("falcon_h1 folded: greedy text %s: ours %r llama.cpp %r" % ("same" if a == b else "DIFFERS", a, b))
    shutil.rmtree(tmp)
    return int(a != b or len(mine.tensors) != len(theirs.tensors))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--types", default="f32")
    ap.add_argument("--keep", default="")
    ap.add_argument("--check", action="store_true", help="only check the files mlstack writes (WRITTEN)")
    ap.add_argument("--convert", nargs=3, metavar=("SRC", "OUT", "TYPE"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.convert:
        convert_here(a.convert[0], a.convert[1], a.convert[2], os.path.abspath(a.peer))
        return
    names = [n for n in HYBRIDS if not a.only or n in a.only.split(",")]
    if a.check:
        bad = check_written(a.peer, [n for n in names if n in WRITTEN])
        bad += check_fold(a.peer) if "falcon_h1" in names else 0
        raise SystemExit(1 if bad else 0)
    import torch
    os.makedirs(OUT, exist_ok=True)
    keep = a.keep or tempfile.mkdtemp()
    os.makedirs(keep, exist_ok=True)
    for name in names:
        tmp = tempfile.mkdtemp()
        src = os.path.join(tmp, name)
        model = make_model(name, src)
        n_vocab = model.config.get_text_config().vocab_size
        tokens = tiny_vocab(n_vocab)[0]
        ids = encode(PROMPT, tokens)
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].float()
        for ty in a.types.split(","):
            out = os.path.join(OUT if ty == "f32" else keep, "%s-%s.gguf" % (name, ty))
            p = subprocess.run([sys.executable, os.path.abspath(__file__), "--peer", a.peer, "--convert", src, out,
                                ty], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if p.returncode:
                raise SystemExit("%s: the converter failed:\n%s" % (name, p.stdout.decode()[-3000:]))
            print("wrote", out)
        shutil.rmtree(tmp)
        for ty in a.types.split(","):  # the other stored types: checked, not kept as fixtures
            if ty != "f32":
                check_stored(a.peer, name, os.path.join(keep, "%s-%s.gguf" % (name, ty)), ids, logits.tolist())
        text = peer_text(a.peer, os.path.join(OUT, "%s-f32.gguf" % name), PROMPT)
        ref = {"prompt": PROMPT, "prompt_ids": ids, "n_predict": N_PREDICT, "llamacpp_text": text,
               "logits": [[float("%.6g" % v) for v in row] for row in logits.tolist()]}
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(ref, f)
            f.write("\n")
        print(name, repr(text))
        if name == "qwen3_5":
            make_mixed(a.peer)


if __name__ == "__main__":
    main()
