#!/usr/bin/env python3
"""Fixture for tests/test_kvquant.c: K/V rows and what gguf-py (the independent reference of
ggml's quantizers) makes of them as llama.cpp's KV cache types Q8_0 and Q4_0, after the
rotation a quantized cache applies to rows of a multiple of 64 values (each 64 by the
orthonormal Walsh-Hadamard matrix: the fast transform's butterflies in float32, then / 8, as
mlstack__kv_rot computes them).

Writes tests/fixtures/kvquant/:
  rows.f32       R rows of D = 64 float32 values (little-endian): random rows of varied scale,
                 and rows that reach the quantizers' edges (all zero, a lone value, values on
                 rounding ties of Q8_0, the largest magnitude negative, huge and tiny values)
  q8_0.bin       gguf.quants.quantize(H rows, Q8_0): R x 2 blocks of 34 bytes
  q4_0.bin       gguf.quants.quantize(H rows, Q4_0): R x 2 blocks of 18 bytes
  q8_0.f32, q4_0.f32   gguf.quants.dequantize of those bytes (R x D float32)

  python3 tools/make_kvquant_fixture.py   (rerunnable: a fixed seed)"""
import os

import numpy as np
from gguf import GGMLQuantizationType, quants

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "kvquant")
D = 64


def rows():
    rng = np.random.default_rng(49)
    out = [rng.standard_normal(D) * s for s in (0.01, 0.3, 1.0, 1.0, 3.0, 17.0, 120.0)]
    out += [rng.standard_normal(D) * rng.uniform(0.1, 10, D) for _ in range(9)]
    z = np.zeros(D)
    out.append(z)
    lone = np.zeros(D)
    lone[5], lone[40] = 2.0, -7.5
    out.append(lone)
    ties = np.arange(D) % 40 - 19.5  # Q8_0 with max 127 -> d = 1: every value a tie
    ties[0] = 127.0
    ties[32] = -127.0
    out.append(ties)
    neg = rng.standard_normal(D)
    neg[3], neg[35] = -9.0, -11.0  # Q4_0's scale from a negative value
    out.append(neg)
    out.append(rng.standard_normal(D) * 3e3)  # f16 holds it too
    out.append(rng.standard_normal(D) * 1e-6)
    return np.stack(out).astype(np.float32)


def rotate(x):
    """Each 64 values times the orthonormal Sylvester Hadamard matrix, in float32: log2(64)
    stages of butterflies (a + b, a - b), then times 1/8 (exact)."""
    y = x.astype(np.float32).reshape(-1, 64).copy()
    h = 1
    while h < 64:
        for i in range(0, 64, 2 * h):
            a, b = y[:, i:i + h].copy(), y[:, i + h:i + 2 * h].copy()
            y[:, i:i + h], y[:, i + h:i + 2 * h] = a + b, a - b
        h *= 2
    return (y * np.float32(0.125)).reshape(x.shape)


def main():
    os.makedirs(OUT, exist_ok=True)
    x = rows()
    x.tofile(os.path.join(OUT, "rows.f32"))
    for name, t in (("q8_0", GGMLQuantizationType.Q8_0), ("q4_0", GGMLQuantizationType.Q4_0)):
        q = quants.quantize(rotate(x), t)
        q.tofile(os.path.join(OUT, name + ".bin"))
        quants.dequantize(q, t).astype(np.float32).tofile(os.path.join(OUT, name + ".f32"))
    print("%d rows of %d -> %s" % (x.shape[0], D, OUT))


if __name__ == "__main__":
    main()
