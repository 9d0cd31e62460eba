#!/usr/bin/env python3
"""Quantizes one float GGUF file with llama-quantize and with `mlstack quantize` (the same file
type, with or without the same --imatrix) and compares the two files tensor by tensor: the
GGML type each chose and the bytes. Prints one line per file type:

  IQ4_XS  imatrix  ok  197 tensors (98 IQ4_NL, 30 IQ4_XS, ...) 59.3 MiB identical

or the tensors that differ (name, both types, first differing byte). Exit status 1 when any
tensor differs.

  python3 tools/cmp_quant_llamacpp.py -m FLOAT.gguf --types iq4_xs,q4_k_m [--imatrix IM]
          [--peer peer] [--mlstack build/mlstack] [-t THREADS] [--keep DIR]

FLOAT.gguf: an F32/F16/BF16 GGUF both tools read (`mlstack quantize -m HF_FOLDER -o X.gguf`
writes one); IM: an importance matrix from llama-imatrix (GGUF or --output-format dat). Both
tools' wall times are printed too (one run each, quantizing back to back). Needs gguf-py."""
import argparse
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def run(cmd):
    t0 = time.time()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode:
        sys.stdout.write(p.stdout.decode("utf-8", "replace")[-3000:])
        sys.exit("cmp_quant_llamacpp: %s failed (%d)" % (" ".join(cmd), p.returncode))
    return time.time() - t0


def tensors(path):
    import gguf
    r = gguf.GGUFReader(path)
    return {t.name: (t.tensor_type.name, t.data.tobytes()) for t in r.tensors}


def compare(a_path, b_path):
    a, b = tensors(a_path), tensors(b_path)
    bad, counts, nbytes = [], {}, 0
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            bad.append("%s only in %s" % (name, "llama.cpp" if name in a else "mlstack"))
            continue
        (ta, da), (tb, db) = a[name], b[name]
        if ta != tb:
            bad.append("%s: llama.cpp %s, mlstack %s" % (name, ta, tb))
        elif da != db:
            k = next(i for i in range(min(len(da), len(db))) if da[i] != db[i]) if len(da) == len(db) else -1
            bad.append("%s (%s): bytes differ from byte %d" % (name, ta, k))
        else:
            counts[ta] = counts.get(ta, 0) + 1
            nbytes += len(da)
    return bad, counts, nbytes, len(set(a) | set(b))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-m", required=True)
    ap.add_argument("--types", default="iq4_xs")
    ap.add_argument("--imatrix")
    ap.add_argument("--peer", default="peer")
    ap.add_argument("--mlstack", default=os.path.join(ROOT, "build", "mlstack"))
    ap.add_argument("-t", "--threads", type=int, default=os.cpu_count())
    ap.add_argument("--keep")
    a = ap.parse_args()
    lq = os.path.join(a.peer if os.path.isabs(a.peer) else os.path.join(ROOT, a.peer), "bin", "llama-quantize")
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        d = a.keep or tmp
        for ty in a.types.split(","):
            ref, ours = os.path.join(d, "llama-%s.gguf" % ty), os.path.join(d, "mlstack-%s.gguf" % ty)
            cmd = [lq] + (["--imatrix", a.imatrix] if a.imatrix else []) + [a.m, ref, ty.upper(), str(a.threads)]
            t_ref = run(cmd)
            t_ours = run([a.mlstack, "quantize", "-m", a.m, "--quant", ty, "-o", ours] +
                         (["--imatrix", a.imatrix] if a.imatrix else []))
            bad, counts, nbytes, n = compare(ref, ours)
            mix = ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
            print("%-7s %-10s %-4s %d of %d tensors identical (%s; %.1f MiB)  llama-quantize %.1f s, "
                  "mlstack %.1f s" % (ty.upper(), "imatrix" if a.imatrix else "no-imatrix", "ok" if not bad else
                                      "DIFF", n - len(bad), n, mix, nbytes / 2**20, t_ref, t_ours))
            for line in bad[:12]:
                print("    " + line)
            failed |= bool(bad)
            if not a.keep:
                os.remove(ref), os.remove(ours)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
