#!/usr/bin/env python3
"""Gemma 3n and Gemma 4 fixtures as llama.cpp's own convert_hf_to_gguf.py writes them (GGUF
architectures gemma3n and gemma4), with transformers' logits and llama.cpp's greedy text on each
(the GGUF counterpart of tests/fixtures/families/, as tools/make_moe_gguf.py does for MoE).

The models are tools/make_fixtures.py's (same spec, same weights recipe). The vocabulary step is
make_hybrid_gguf.py's tiny byte-level BPE; the Gemma converters read the vocabulary size from a
tokenizer.json, so the source folder gets a stub one of that size. llama.cpp's converter takes
Gemma 3n with 4 AltUp streams only (gemma3n_alt's 3 are refused there) and Gemma 4 with a
proportional rope on its full layers (gemma4_hd, gemma4_hd_keqv; gemma4 saves neither global_head_dim nor
per_layer_config, which the converter needs). llama.cpp runs with an F32 KV
cache (make_moe_gguf.peer_text).

  tests/fixtures/gguf/gemma/<fixture>-f32.gguf   the converted file (F32)
  tests/fixtures/gguf/gemma/<fixture>.json       prompt ids, transformers' logits at every position,
                                                 llama.cpp's greedy continuation on the file

  python3 tools/make_gemma_gguf.py --peer PEER [--only gemma3n,...]
  python3 tools/make_gemma_gguf.py --peer PEER --check
        the other way: build/mlstack writes each fixture's GGUF again (mlstack quantize --quant
        none, and q8_0); llama.cpp must load it and, as stored, give the text it gives on its own
        converted file (Q8_0: both engines' texts printed)
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
OUT = os.path.join(ROOT, "tests", "fixtures", "gguf", "gemma")
sys.path.insert(0, os.path.join(ROOT, "tools"))
import make_hybrid_gguf as mh  # noqa: E402
import make_moe_gguf as mm  # noqa: E402

FIXTURES = ["gemma3n", "gemma4_hd", "gemma4_hd_keqv"]
# llama.cpp's gemma4 shares KV as the released models do: the last two layers before the shared
# ones are sliding then full (it reads layer first - 2 for a sliding layer, first - 1 for a full
# one), so gemma4_hd's layer types are reordered to S S F S F
S, F = "sliding_attention", "full_attention"
mh.OVERRIDES["gemma4_hd"] = {"layer_types": [S, S, F, S, F]}
# llama.cpp's gemma3n graph fixes E2B/E4B's sizes instead of reading its keys: per-layer inputs 256
# wide, Laurel rank 64, KV shared from layer 20 on, sparsity 0.95 in the first 10 layers only. A
# fixture of those sizes is megabytes, so on gemma3n llama.cpp's text is not recorded (null): the
# file is held to transformers' logits only.
NO_PEER = {"gemma3n"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    names = [n for n in FIXTURES if not a.only or n in a.only.split(",")]
    if a.check:
        raise SystemExit(1 if mm.check_written(a.peer, names, OUT, ["none", "q8_0"], runs=3) else 0)
    import torch
    os.makedirs(OUT, exist_ok=True)
    for name in names:
        tmp = tempfile.mkdtemp()
        src = os.path.join(tmp, name)
        model = mh.make_model(name, src)
        n_vocab = model.config.get_text_config().vocab_size
        tokens = mh.tiny_vocab(n_vocab)[0]
        with open(os.path.join(src, "tokenizer.json"), "w") as f:
            json.dump({"model": {"vocab": {t: i for i, t in enumerate(tokens)}}, "added_tokens": []}, f)
        ids = mh.encode(mh.PROMPT, tokens)
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].float()
        out = os.path.join(OUT, "%s-f32.gguf" % name)
        p = subprocess.run([sys.executable, os.path.join(ROOT, "tools", "make_hybrid_gguf.py"), "--peer", a.peer,
                            "--convert", src, out, "f32"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if p.returncode:
            raise SystemExit("%s: the converter failed:\n%s" % (name, p.stdout.decode()[-3000:]))
        shutil.rmtree(tmp)
        text = None
        if name not in NO_PEER:
            texts = [mm.peer_text(a.peer, out, mh.PROMPT) for _ in range(3)]
            text = max(texts, key=texts.count)
        ref = {"prompt": mh.PROMPT, "prompt_ids": ids, "n_predict": mh.N_PREDICT, "llamacpp_text": text,
               "logits": [[float("%.6g" % v) for v in row] for row in logits.tolist()]}
        with open(os.path.join(OUT, name + ".json"), "w") as f:
            json.dump(ref, f)
            f.write("\n")
        print(name, repr(text))


if __name__ == "__main__":
    main()
