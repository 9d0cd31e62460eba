#!/usr/bin/env python3
"""DeepSeek V2 / V3 (llama.cpp architecture deepseek2: multi-head latent attention) and gpt-oss
fixtures as llama.cpp's own convert_hf_to_gguf.py writes them, with llama.cpp's greedy text on each
(the GGUF counterpart of tests/fixtures/families/, as tools/make_hybrid_gguf.py does for hybrids).

The models are tools/make_fixtures.py's (same spec, same weights recipe), changed only where
llama.cpp's graph fixes a value the fixture varies: the released DeepSeek configs' scoring_func /
topk_method (the converter reads them), gpt-oss's SwiGLU limit (llama.cpp fixes 7.0) and its rope
(llama.cpp's yarn rounds the correction range to whole dims, as gpt-oss's truncate: false does not:
the texts part), and a q LoRA for V2 (llama.cpp reads q_proj without one, V2-Lite's, only in 26- or
27-layer models). The vocabulary step is make_hybrid_gguf.py's tiny byte-level BPE; llama.cpp runs
with an F32 KV cache (its default F16 rounds the random models' near-tied logits apart).

  tests/fixtures/gguf/moe/<fixture>-f32.gguf   the converted file (F32)
  tests/fixtures/gguf/moe/<fixture>.json       prompt ids, transformers' logits at every position,
                                               llama.cpp's greedy continuation on the file

  python3 tools/make_moe_gguf.py --peer PEER [--only deepseek_v2,...]
  python3 tools/make_moe_gguf.py --peer PEER --check
        the other way: build/mlstack writes each fixture's GGUF again (mlstack quantize --quant
        none, and q8_0); llama.cpp must load it and, as stored, give the text it gives on its own
        converted file
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
OUT = os.path.join(ROOT, "tests", "fixtures", "gguf", "moe")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import make_hybrid_gguf as mh  # noqa: E402

# fixture -> (its changes to make_fixtures.py's spec, keys added to the saved config.json)
FIXTURES = {
    "deepseek_v2": ({"q_lora_rank": 24}, {"scoring_func": "softmax", "topk_method": "greedy"}),
    "deepseek_v3": ({}, {"scoring_func": "sigmoid", "topk_method": "noaux_tc"}),
    "gpt_oss": ({"swiglu_limit": 7.0, "rope_parameters": {"rope_type": "default", "rope_theta": 150000.0}}, {}),
}
CHECK_QUANTS = ["none", "q8_0"]


def peer_text(peer, path, prompt):
    """llama.cpp's greedy continuation on path, KV cache in F32 (text; stops at the end token)."""
    exe = os.path.join(peer, "bin", "llama-completion")
    cmd = [exe, "-m", path, "-p", prompt, "-n", str(mh.N_PREDICT), "-t", "1", "--temp", "0", "-no-cnv",
           "--no-warmup", "--no-display-prompt", "-s", "1", "-ctk", "f32", "-ctv", "f32"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=600)
    if p.returncode:
        raise SystemExit("llama-completion failed on %s:\n%s" % (path, p.stderr.decode()[-2000:]))
    text = p.stdout.decode("utf-8", "replace").rstrip("\n")
    return text[:-len(" [end of text]")] if text.endswith(" [end of text]") else text


def make_model(name, out):
    extra, keys = FIXTURES[name]
    saved = dict(mh.OVERRIDES)
    mh.OVERRIDES[name] = dict(mh.OVERRIDES.get(name, {}), **extra)
    try:
        model = mh.make_model(name, out)
    finally:
        mh.OVERRIDES.clear()
        mh.OVERRIDES.update(saved)
    if keys:
        path = os.path.join(out, "config.json")
        cfg = json.load(open(path))
        cfg.update(keys)
        json.dump(cfg, open(path, "w"), indent=2)
    return model


def check_written(peer, names, out_dir=OUT, quants=CHECK_QUANTS, runs=1):
    """mlstack writes each fixture's GGUF (in out_dir) again: as stored, llama.cpp must give on it
    the text it gives on its own converted file (the reference the GGUF tests hold mlstack's text
    to; a fixture whose reference is null is only printed); other types are printed beside
    mlstack's text (mlstack run keeps an F16 KV cache: near ties may part). llama.cpp's text is the
    most common of `runs` runs (on a loaded machine it has ended a text early). Returns the number
    of mismatches."""
    bad = 0
    exe = os.path.join(ROOT, "build", "mlstack")
    for name in names:
        ref = json.load(open(os.path.join(out_dir, name + ".json")))["llamacpp_text"]
        for q in quants:
            out = os.path.join(tempfile.mkdtemp(), "%s-%s.gguf" % (name, q))
            p = subprocess.run([exe, "quantize", "-m", os.path.join(out_dir, name + "-f32.gguf"), "--quant", q, "-o",
                                out], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if p.returncode:
                print("%-16s %-5s mlstack quantize failed: %s" % (name, q, p.stderr.decode()[-300:]))
                bad += 1
                continue
            try:
                texts = [peer_text(peer, out, mh.PROMPT) for _ in range(runs)]
                theirs = max(texts, key=texts.count)
            except SystemExit as e:
                theirs = "(llama.cpp failed: %s)" % str(e)[-300:]
            if q == "none" and ref is not None:
                bad += theirs != ref
                print("%-16s %-5s %s  llama.cpp on mlstack's file %r, on its own %r" %
                      (name, q, "same" if theirs == ref else "DIFFER", theirs, ref))
            else:
                print("%-16s %-5s llama.cpp %r  mlstack %r" % (name, q, theirs, mh.ours_text(out)))
            shutil.rmtree(os.path.dirname(out))
    return bad


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    names = [n for n in FIXTURES if not a.only or n in a.only.split(",")]
    if a.check:
        raise SystemExit(1 if check_written(a.peer, names) else 0)
    import torch
    os.makedirs(OUT, exist_ok=True)
    for name in names:
        tmp = tempfile.mkdtemp()
        src = os.path.join(tmp, name)
        model = make_model(name, src)
        tokens = mh.tiny_vocab(model.config.vocab_size)[0]
        ids = mh.encode(mh.PROMPT, tokens)
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].float()
        out = os.path.join(OUT, "%s-f32.gguf" % name)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_hybrid_gguf.py"), "--peer", a.peer,
                            "--convert", src, out, "f32"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode:
            raise SystemExit("%s: the converter failed:\n%s" % (name, p.stdout.decode()[-3000:]))
        shutil.rmtree(tmp)
        # the most common of three runs: on a loaded machine llama.cpp has ended a deepseek2 text early
        texts = [peer_text(a.peer, out, mh.PROMPT) for _ in range(3)]
        text = max(texts, key=texts.count)
        ref = {"prompt": mh.PROMPT, "prompt_ids": ids, "n_predict": mh.N_PREDICT, "llamacpp_text": text,
               "logits": [[float("%.6g" % v) for v in row] for row in logits.tolist()]}
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(ref, f)
            f.write("\n")
        print(name, repr(text))


if __name__ == "__main__":
    main()
