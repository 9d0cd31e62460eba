#!/usr/bin/env python3
"""KL table: GGUF files quantized by `mlstack quantize` vs by llama.cpp's `llama-quantize`, from
the same f32 weights, scored against those weights by `mlstack kl` (mean KL divergence of the
next-token distributions, max KL, top-1 agreement, perplexities) over a text, and how many
tensors of mlstack's file equal llama-quantize's (type and bytes).

The f32 weights are SmolLM2's Q4_1 GGUF dequantized (tools/dequant_gguf.py): the only source
both tools can start from here. Writes everything under --work and prints a Markdown table.

  python3 tools/kl_table.py [--gguf models/SmolLM2-135M-Instruct.Q4_1.gguf] [--peer peer]
          [--text README.md] [--tokens 1024] [--types Q4_0,...,IQ4_NL] [--work build/kl]

--types: llama-quantize's file type names (default: every one `mlstack quantize` makes).

Needs build/mlstack, gguf + numpy, and llama-quantize from tools/build_llamacpp.sh
(LLAMACPP_TARGETS="llama-quantize"); without it only mlstack's files are scored (said so)."""
import argparse
import os
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def sh(cmd):
    print("+ " + " ".join(cmd), file=sys.stderr)
    p = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode:
        sys.exit("failed (%d): %s\n%s" % (p.returncode, " ".join(cmd), p.stderr.decode()[-2000:]))
    return p.stdout.decode()


def same_tensors(a, b):
    """How many of b's tensors a holds with the same type and the same bytes (gguf-py reader)."""
    import gguf
    import numpy as np
    ta = {t.name: t for t in gguf.GGUFReader(os.path.join(ROOT, a)).tensors}
    tb = gguf.GGUFReader(os.path.join(ROOT, b)).tensors
    n = 0
    for t in tb:
        u = ta.get(t.name)
        n += u is not None and u.tensor_type == t.tensor_type and \
            np.asarray(u.data).tobytes() == np.asarray(t.data).tobytes()
    return "%d of %d" % (n, len(tb))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gguf", default="models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--peer", default="peer")
    ap.add_argument("--text", default="README.md")
    ap.add_argument("--tokens", type=int, default=1024)
    ap.add_argument("--types", default="Q4_0,Q4_1,Q5_0,Q5_1,Q8_0,Q2_K,Q3_K_S,Q3_K_M,Q3_K_L,Q4_K_S,Q4_K_M,"
                    "Q5_K_S,Q5_K_M,Q6_K,IQ4_NL")
    ap.add_argument("--work", default="build/kl")
    ap.add_argument("-t", "--threads", type=int, default=2)
    a = ap.parse_args()
    os.makedirs(os.path.join(ROOT, a.work), exist_ok=True)
    f32 = os.path.join(a.work, "f32.gguf")
    if not os.path.exists(os.path.join(ROOT, f32)):
        sh([sys.executable, "tools/dequant_gguf.py", a.gguf, f32])
    lq = os.path.join(ROOT, a.peer, "bin", "llama-quantize")
    have_lq = os.access(lq, os.X_OK)
    if not have_lq:
        print("SKIP llama-quantize: %s not found (tools/build_llamacpp.sh with "
              "LLAMACPP_TARGETS=llama-quantize); scoring mlstack's files only" % lq, file=sys.stderr)
    files, labels = [], {}
    for t in a.types.split(","):
        ours = os.path.join(a.work, "mlstack-%s.gguf" % t)
        sh(["build/mlstack", "quantize", "-m", f32, "--quant", t.lower(), "-o", ours])
        files.append(ours)
        labels[ours] = (t, "mlstack")
        if have_lq:
            theirs = os.path.join(a.work, "llama-%s.gguf" % t)
            sh([lq, f32, theirs, t, str(a.threads)])
            files.append(theirs)
            labels[theirs] = (t, "llama-quantize")
    out = sh(["build/mlstack", "kl", "-m", f32, "-f", a.text, "--tokens", str(a.tokens), "-t", str(a.threads),
              "--files", ",".join(files)])
    rows = {}
    for line in out.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] in labels:
            rows[cells[0]] = cells
    print("reference: %s dequantized to f32; %s tokens of %s\n" % (a.gguf, a.tokens, a.text))
    print("| type | quantizer | MiB | mean KL | max KL | top-1 agree | ppl (f32) | ppl (quant) | "
          "tensors byte-identical to llama-quantize's |")
    print("|---|---|---|---|---|---|---|---|---|")
    for f in files:
        t, who = labels[f]
        c = rows.get(f)
        mib = os.path.getsize(os.path.join(ROOT, f)) / 1048576
        theirs = os.path.join(a.work, "llama-%s.gguf" % t)
        same = same_tensors(f, theirs) if who == "mlstack" and have_lq else ""
        if c:
            print("| %s | %s | %.1f | %s | %s | %s | %s | %s | %s |" % (t, who, mib, c[2], c[3], c[4], c[5], c[6], same))
        else:
            print("| %s | %s | %.1f | (no result) | | | | | %s |" % (t, who, mib, same))


if __name__ == "__main__":
    main()
