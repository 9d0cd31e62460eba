#!/usr/bin/env python3
"""Why llama.cpp's greedy text parts from mlstack's on the quantized hybrid files mlstack writes
(`tools/make_hybrid_gguf.py --check`): both engines' logits on the same file along llama.cpp's own
greedy continuation, position by position.

For each fixture x type, mlstack quantize writes the file; build/llamacpp_logits (tools/llamacpp_logits.cpp)
gives llama.cpp's logits over the prompt and its greedy continuation (one batch, then one token at a
time, as llama-completion); `mlstack eval --all` gives ours on the same ids, and on the F32 file the
fixture was converted to (how far quantizing the weights moved our logits: `quant`), and on the file's
dequantization by gguf-py (the same weight values with exact f32 activations). Printed:
  gap      max |ours - llama.cpp| over every position and logit (the two engines' rounding:
           llama.cpp quantizes activations to Q8_0/Q8_1/Q8_K for its integer dots and keeps no f32
           path for quantized weights; mlstack dots Q8_0/Q4_1 against its own Q8 activation blocks and
           K-quants by the float rule)
  act      max |ours - exact| and |llama.cpp - exact|, exact = mlstack on the dequantized file: what
           each engine's activation rounding alone moves the logits by
  part     the first position where our argmax is not llama.cpp's pick (none: the texts agree)
  margin   there, our logit of our pick minus ours of llama.cpp's pick, and llama.cpp's the other way
  flip     |(ours - llama.cpp) at our pick - at llama.cpp's pick|: the engine gap that decides
A part whose two margins are both below that position's flip is a near tie: the engines' ordinary
rounding difference decides it. A real difference shows as a gap far above the other files of the
same type, or a margin far above the flip. A part where that one row's gap is over 10x the median
row's is flagged as a jump: a discrete switch (an MoE router's top-k pick at a near tie) moved it.

  python3 tools/explain_roundtrips.py [--only lfm2,...] [--types q8_0,q4_1,q4_k_m] [--threads 1]
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

EXE = os.path.join(ROOT, "build", "mlstack")
PEER_LOGITS = os.path.join(ROOT, "build", "llamacpp_logits")


def rows_of(text):
    return [list(map(float, line.split())) for line in text.strip().split("\n") if line and line[0] != "i"]


def ours(path, ids):
    p = subprocess.run([EXE, "eval", "-m", path, "--ids", ",".join(map(str, ids)), "--all"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, check=True)
    return rows_of(p.stdout.decode())


def theirs(path, ids, threads):
    p = subprocess.run([PEER_LOGITS, path, ",".join(map(str, ids)), str(mh.N_PREDICT), str(threads)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
    out = p.stdout.decode().strip().split("\n")
    gen = [int(t) for t in out[-1][len("ids:"):].split()]
    return rows_of("\n".join(out[:-1])), gen


def argmax(r):
    return max(range(len(r)), key=lambda i: r[i])


def explain(name, q, threads):
    ref = json.load(open(os.path.join(mh.OUT, name + ".json")))
    ids = ref["prompt_ids"]
    tmp = tempfile.mkdtemp()
    try:
        path = os.path.join(tmp, "%s-%s.gguf" % (name, q))
        subprocess.run([EXE, "quantize", "-m", os.path.join(mh.OUT, name + "-f32.gguf"), "--quant", q, "-o", path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=True)
        lrows, gen = theirs(path, ids, threads)
        seq = ids + gen[:len(lrows) - len(ids)]  # the inputs of llama.cpp's rows (all of gen after an end token)
        orows = ours(path, seq)[:len(lrows)]
        frows = ours(os.path.join(mh.OUT, name + "-f32.gguf"), seq)[:len(lrows)]
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "dequant_gguf.py"), path, path + ".f32"],
                       stdout=subprocess.PIPE, check=True)
        drows = ours(path + ".f32", seq)[:len(lrows)]
    finally:
        shutil.rmtree(tmp)
    gaps = [max(abs(a - b) for a, b in zip(r1, r2)) for r1, r2 in zip(orows, lrows)]
    gap, typical = max(gaps), sorted(gaps)[len(gaps) // 2]
    quant = max(abs(a - b) for r1, r2 in zip(orows, frows) for a, b in zip(r1, r2))
    actq = max(abs(a - b) for r1, r2 in zip(orows, drows) for a, b in zip(r1, r2))
    actl = max(abs(a - b) for r1, r2 in zip(lrows, drows) for a, b in zip(r1, r2))
    part = None
    for i in range(len(ids) - 1, len(lrows)):
        o, lt = argmax(orows[i]), argmax(lrows[i])
        if o != lt:
            part = i
            break
    line = "%-22s %-7s gap %.2e (median row %.2e)  quant %.2e  act ours %.2e llama.cpp %.2e" % (name, q, gap, typical, quant, actq, actl)
    if part is None:
        return line + "  same text", None
    o, lt, ro, rl = argmax(orows[part]), argmax(lrows[part]), orows[part], lrows[part]
    mo, ml = ro[o] - ro[lt], rl[lt] - rl[o]
    flip = abs((ro[o] - rl[o]) - (ro[lt] - rl[lt]))
    tie = mo <= flip and ml <= flip
    jump = gaps[part] > 10 * typical  # one position far off the rest: a discrete switch (an expert pick)
    return line + "  part at token %d: ours %d (margin %.2e) vs %d (llama.cpp's margin %.2e), flip %.2e: %s" % (
        part - len(ids) + 1, o, mo, lt, ml, flip, "NOT A TIE" if not tie else
        "a jump at that position alone (row gap %.2e)" % gaps[part] if jump else "near tie"), tie


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--types", default="q8_0,q4_1,q4_k_m")
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    names = [n for n in mh.WRITTEN if not a.only or n in a.only.split(",")]
    parts = ties = 0
    for name in names:
        for q in a.types.split(","):
            line, tie = explain(name, q, a.threads)
            print(line, flush=True)
            parts += tie is not None
            ties += bool(tie)
    print("%d of %d files part; %d of them near ties" % (parts, len(names) * len(a.types.split(",")), ties))
    raise SystemExit(0 if parts == ties else 1)


if __name__ == "__main__":
    main()
