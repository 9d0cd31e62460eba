#!/usr/bin/env python3
"""Hugging Face `tokenizers` encode throughput on one thread, to compare with tools/bench_tokenizer.c.

Usage: RAYON_NUM_THREADS=1 python3 tools/bench_tokenizer_hf.py DIR [TEXT_FILE]
Without TEXT_FILE it writes build/bench_text.txt (1 MB of the tokenizer test corpus, repeated)
and uses that; give the same file to build/bench_tokenizer. The whole text is one encode call,
as in the C tool, best of 3.
"""
import json
import os
import sys
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def make_text(path, size=1 << 20):
    corpus = json.load(open("tests/fixtures/tokenizer/corpus.json", encoding="utf-8"))
    out, n = [], 0
    while n < size:
        for s in corpus:
            b = (s + "\n").encode("utf-8")
            out.append(b)
            n += len(b)
            if n >= size:
                break
    data = b"".join(out)[:size]
    data = data.decode("utf-8", "ignore").encode("utf-8")  # cut at a character boundary
    os.makedirs(os.path.dirname(path), exist_ok=True)
    open(path, "wb").write(data)


def main():
    d = sys.argv[1]
    path = sys.argv[2] if len(sys.argv) > 2 else "build/bench_text.txt"
    if not os.path.exists(path):
        make_text(path)
    text = open(path, "rb").read().decode("utf-8")
    nbytes = len(text.encode("utf-8"))
    j = os.path.join(d, "tokenizer.json")
    if os.path.exists(j):
        import tokenizers
        tok = tokenizers.Tokenizer.from_file(j)
        encode = lambda s: tok.encode(s, add_special_tokens=False).ids
    else:  # vocab.json + merges.txt: let transformers build it
        from transformers import AutoTokenizer
        t = AutoTokenizer.from_pretrained(d)
        encode = lambda s: t._tokenizer.encode(s, add_special_tokens=False).ids
    best, n = 1e9, 0
    for _ in range(3):
        t0 = time.perf_counter()
        n = len(encode(text))
        best = min(best, time.perf_counter() - t0)
    print("hf tokenizers  %-20s %8d bytes %8d ids  %7.2f MB/s" % (os.path.basename(d.rstrip("/")), nbytes, n, nbytes / best / 1e6))


if __name__ == "__main__":
    main()
