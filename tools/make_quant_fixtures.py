#!/usr/bin/env python3
"""Writes tests/fixtures/gguf/quantize.gguf: float rows and the blocks llama.cpp's reference
quantizers make of them, for test_gguf's byte-identity check of mlstack__ggml_quantize_row;
and tests/fixtures/gguf/quantize_imatrix.gguf: the same rows, one importance-matrix row and
the blocks ggml_quantize_chunk makes with it (llama-quantize --imatrix's call), for the check of
mlstack__ggml_quantize_row_w; and tests/fixtures/gguf/quantize_iq.gguf: 32 float rows (those and
more), one importance-matrix row, and per low-bit i-quant (IQ2_XXS .. IQ1_M) the blocks
ggml_quantize_chunk makes with it (<TYPE>), without it where ggml allows (<TYPE>.plain), and
ggml's own dequantization of the former's first rows (<TYPE>.deq, F32), for test_gguf's byte-identity and
round-trip checks of those quantizers.

  python3 tools/make_quant_fixtures.py [--peer peer]

Tensors (GGUF shape [512, ROWS]):
  src        F32 rows: Gaussian weights, heavy tails, all-zero and constant blocks, tiny values
             (below the quantizers' 1e-15 "all zero" threshold and f16-subnormal scales),
             all-positive values, values on a coarse grid (rounding ties)
  <TYPE>     src quantized to TYPE.  Q4_0, Q4_1, Q5_0, Q5_1, Q8_0: gguf-py's
             gguf.quants.quantize (a Python port of ggml's reference quantizers).  Q2_K .. Q6_K
             IQ4_NL and IQ4_XS (gguf-py cannot quantize those): ggml's own ggml_quantize_chunk without
             an importance matrix -- the call llama-quantize makes -- from the llama.cpp peer
             that tools/build_llamacpp.sh builds (a small C program compiled against its
             libggml-base.a); both sources are checked to agree where both exist.

Needs gguf + numpy, a C compiler and the peer build (peer/cmake-build and peer/src)."""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "gguf", "quantize.gguf")
OUT_IM = os.path.join(ROOT, "tests", "fixtures", "gguf", "quantize_imatrix.gguf")
OUT_IMF = os.path.join(ROOT, "tests", "fixtures", "gguf", "imatrix-llama-kq.gguf")
OUT_IQ = os.path.join(ROOT, "tests", "fixtures", "gguf", "quantize_iq.gguf")
DEQ_ROWS = 6  # rows of <TYPE>.deq (the file stays small)
IQ_TYPES = ("IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ3_S", "IQ2_S", "IQ1_S", "IQ1_M")
IM_TYPES = ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS")
COLS = 512

PROG = r"""
#include <stdio.h>
#include <stdlib.h>
#include "ggml.h"
/* argv: type number, rows, cols[, im]; f32 rows on stdin (then, with im, cols importance
   weights), the quantized rows on stdout. argv[4] "deq": the type's rows on stdin, ggml's
   dequantization (f32) on stdout. */
int main(int argc, char **argv) {
    int type = atoi(argv[1]), rows = atoi(argv[2]), cols = atoi(argv[3]);
    if (argc > 4 && argv[4][0] == 'd') {
        size_t nq = ggml_row_size((enum ggml_type)type, cols) * rows;
        void *q = malloc(nq);
        float *f = malloc(sizeof(float) * (size_t)rows * cols);
        if (fread(q, 1, nq, stdin) != nq) return 1;
        ggml_get_type_traits((enum ggml_type)type)->to_float(q, f, (int64_t)rows * cols);
        fwrite(f, sizeof(float), (size_t)rows * cols, stdout);
        return 0;
    }
    float *x = malloc(sizeof(float) * (size_t)rows * cols), *qw = malloc(sizeof(float) * (size_t)cols);
    size_t n = ggml_row_size((enum ggml_type)type, cols) * rows;
    void *y = malloc(n);
    if (fread(x, sizeof(float), (size_t)rows * cols, stdin) != (size_t)rows * cols) return 1;
    if (argc > 4 && fread(qw, sizeof(float), (size_t)cols, stdin) != (size_t)cols) return 1;
    if (ggml_quantize_chunk((enum ggml_type)type, x, y, 0, rows, cols, argc > 4 ? qw : NULL) != n) return 2;
    fwrite(y, 1, n, stdout);
    return 0;
}
"""


def source_rows():
    rng = np.random.default_rng(14)
    rows = []
    for s in (0.02, 0.05, 1.0):
        rows.append(rng.normal(0, s, COLS))
    rows.append(rng.standard_t(2, COLS) * 0.01)  # heavy tails
    r = rng.normal(0, 0.03, COLS)
    r[:64] = 0  # all-zero blocks (and a zero 256-superblock's first quarter)
    r[256:288] = 0.125  # a constant block
    rows.append(r)
    r = rng.normal(0, 1e-6, COLS)  # f16-subnormal scales
    r[:32] = rng.normal(0, 1e-20, 32)  # below the 1e-15 all-zero threshold
    rows.append(r)
    rows.append(rng.uniform(0.1, 1.0, COLS))  # all positive: the min terms
    rows.append(np.round(rng.normal(0, 1, COLS) * 4) / 8)  # a coarse grid: rounding ties
    r = rng.normal(0, 0.02, COLS)
    r[::37] *= 40  # single outliers in many blocks
    rows.append(r)
    return np.stack(rows).astype(np.float32)


def importance_row():
    """Mean squared activations as llama-imatrix finds them: positive, spread over decades, a
    few dead (zero) columns and a few hot ones."""
    rng = np.random.default_rng(15)
    qw = np.exp(rng.normal(-2, 1.5, COLS))
    qw[rng.choice(COLS, 12, replace=False)] = 0
    qw[rng.choice(COLS, 6, replace=False)] *= 300
    return qw.astype(np.float32)


def ggml_quantize(exe, t, x, qw=None):
    args = [exe, str(int(t)), str(x.shape[0]), str(x.shape[1])] + (["im"] if qw is not None else [])
    data = x.tobytes() + (qw.tobytes() if qw is not None else b"")
    p = subprocess.run(args, input=data, stdout=subprocess.PIPE, check=True)
    return np.frombuffer(p.stdout, dtype=np.uint8)


def write_imatrix_fixture(exe, x):
    import gguf
    T = gguf.GGMLQuantizationType
    qw = importance_row()
    w = gguf.GGUFWriter(OUT_IM, "quantize-imatrix-fixture")
    w.add_tensor("src", x)
    w.add_tensor("imatrix", qw)
    for name in IM_TYPES:
        t = T[name]
        blk, size = gguf.GGML_QUANT_SIZES[t]
        ref = ggml_quantize(exe, t, x, qw)
        if ref.tobytes() == ggml_quantize(exe, t, x).tobytes():
            sys.exit("make_quant_fixtures: %s: the imatrix changed nothing" % name)
        w.add_tensor(name, ref.reshape(x.shape[0], x.shape[1] // blk * size), raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote %s (%d bytes)" % (os.path.relpath(OUT_IM, ROOT), os.path.getsize(OUT_IM)))


def iq_rows():
    """source_rows() and 23 more: Gaussian rows of spread scales, Laplacian and uniform ones,
    rows with exact zeros sprinkled in, and sign patterns (odd numbers of negatives per 8)."""
    rng = np.random.default_rng(16)
    rows = list(source_rows())
    for s in (0.003, 0.01, 0.03, 0.1, 0.3, 3.0):
        rows.append(rng.normal(0, s, COLS))
    for s in (0.01, 0.05, 1.0):
        rows.append(rng.laplace(0, s, COLS))
    for s in (0.02, 1.0):
        rows.append(rng.uniform(-s, s, COLS))
    for _ in range(4):
        r = rng.normal(0, 0.02, COLS)
        r[rng.random(COLS) < 0.3] = 0
        rows.append(r)
    for _ in range(4):
        r = np.abs(rng.normal(0, 0.02, COLS))
        r[rng.choice(COLS, 100, replace=False)] *= -1
        rows.append(r)
    r = rng.normal(0, 0.02, COLS)
    r[rng.choice(COLS, 8, replace=False)] *= 60
    rows.append(r)
    rows.append(np.round(rng.normal(0, 1, COLS) * 2) / 4)
    rows.append(rng.standard_t(3, COLS) * 0.02)
    rows.append(rng.normal(0.01, 0.02, COLS))
    return np.stack(rows).astype(np.float32)


def write_iq_fixture(exe):
    import gguf
    T = gguf.GGMLQuantizationType
    x, qw = iq_rows(), importance_row()
    w = gguf.GGUFWriter(OUT_IQ, "quantize-iq-fixture")
    w.add_tensor("src", x)
    w.add_tensor("imatrix", qw)
    for name in IQ_TYPES:
        t = T[name]
        blk, size = gguf.GGML_QUANT_SIZES[t]
        shape = (x.shape[0], x.shape[1] // blk * size)
        ref = ggml_quantize(exe, t, x, qw)
        w.add_tensor(name, ref.reshape(shape), raw_dtype=t)
        p = subprocess.run([exe, str(int(t)), str(DEQ_ROWS), str(x.shape[1]), "deq"],
                           input=ref.reshape(shape)[:DEQ_ROWS].tobytes(), stdout=subprocess.PIPE, check=True)
        w.add_tensor(name + ".deq", np.frombuffer(p.stdout, dtype=np.float32).reshape(DEQ_ROWS, x.shape[1]))
        if name in ("IQ3_XXS", "IQ3_S", "IQ2_S", "IQ1_M"):  # ggml quantizes these without one too
            plain = ggml_quantize(exe, t, x)
            if plain.tobytes() == ref.tobytes():
                sys.exit("make_quant_fixtures: %s: the imatrix changed nothing" % name)
            w.add_tensor(name + ".plain", plain.reshape(shape), raw_dtype=t)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote %s (%d bytes)" % (os.path.relpath(OUT_IQ, ROOT), os.path.getsize(OUT_IQ)))


def write_imatrix_file():
    """An importance matrix in llama-imatrix's GGUF format for llama-kq.gguf's 14 projections
    (2 layers, 256 columns each): value k of entry e (attn_q, attn_k, attn_v, attn_output,
    ffn_gate, ffn_up, ffn_down of layer 0, then layer 1) = 0.25 (1 + (7 k + e) mod 13), stored
    as sums 8x that and a count of 8 (test_gguf writes the same values as a legacy .dat)."""
    import gguf
    w = gguf.GGUFWriter(OUT_IMF, "imatrix")
    w.add_string("general.type", "imatrix")
    w.add_array("imatrix.datasets", ["fixture"])
    w.add_uint32("imatrix.chunk_count", 1)
    w.add_uint32("imatrix.chunk_size", 512)
    names = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")
    k = np.arange(256)
    for e in range(14):
        v = 0.25 * (1 + (7 * k + e) % 13)
        name = "blk.%d.%s.weight" % (e // 7, names[e % 7])
        w.add_tensor(name + ".in_sum2", (8 * v).astype(np.float32).reshape(1, 256))
        w.add_tensor(name + ".counts", np.array([[8]], dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote %s (%d bytes)" % (os.path.relpath(OUT_IMF, ROOT), os.path.getsize(OUT_IMF)))


def main():
    import gguf
    from gguf import quants
    T = gguf.GGMLQuantizationType
    ap = argparse.ArgumentParser()
    ap.add_argument("--peer", default="peer")
    a = ap.parse_args()
    write_imatrix_file()
    peer = os.path.join(ROOT, a.peer)
    inc = os.path.join(peer, "src", "vendor", "llama.cpp", "ggml", "include")
    lib = os.path.join(peer, "cmake-build", "ggml", "src", "libggml-base.a")
    if not os.path.exists(lib) or not os.path.isdir(inc):
        sys.exit("make_quant_fixtures: %s or %s missing (tools/build_llamacpp.sh)" % (lib, inc))
    x = source_rows()
    with tempfile.TemporaryDirectory() as d:
        src, exe = os.path.join(d, "q.c"), os.path.join(d, "q")
        open(src, "w").write(PROG)
        subprocess.run(["cc", "-O2", "-I", inc, src, lib, "-o", exe, "-fopenmp", "-lm", "-lpthread", "-lstdc++"], check=True)
        w = gguf.GGUFWriter(OUT, "quantize-fixture")
        w.add_tensor("src", x)
        for name in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"):
            t = T[name]
            ref = ggml_quantize(exe, t, x)
            try:
                py = quants.quantize(x, t)
            except NotImplementedError:
                py = None
            if py is not None and py.tobytes() != ref.tobytes():
                sys.exit("make_quant_fixtures: %s: gguf-py and ggml disagree" % name)
            blk, size = gguf.GGML_QUANT_SIZES[t]
            w.add_tensor(name, ref.reshape(x.shape[0], x.shape[1] // blk * size),
                         raw_dtype=t)
            print("%-6s %s" % (name, "gguf-py = ggml" if py is not None else "ggml"))
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()
        print("wrote %s (%d bytes)" % (os.path.relpath(OUT, ROOT), os.path.getsize(OUT)))
        write_imatrix_fixture(exe, x)
        write_iq_fixture(exe)


if __name__ == "__main__":
    main()
