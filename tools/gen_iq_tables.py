#!/usr/bin/env python3
"""Print the i-quant grid tables of mlstack.h (>>ggmlquant, mlstack__iq_grid_*) from gguf-py's
copies of llama.cpp's grids (gguf.quants IQ2_XXS .. IQ1_S: each grid point packed as indices
into a short value map), so the header's tables come from an independent source. One uint16
per grid point: element j of an 8-element point (IQ2_*, IQ1_*) is bits 2j..2j+1, an index into
the format's value map; element j of a 4-element point (IQ3_*) is bits 3j..3j+2.
    python3 tools/gen_iq_tables.py > /tmp/iq_tables.h
With --check FILE (ggml-common.h of a llama.cpp tree) the expanded grids are also compared with
llama.cpp's own tables. Last, the IQ2_XXS points of the IQ panels (>>kernels,
mlstack__iqp2_points): entry i holds, in byte t, the map index of element t of IQ2_XXS grid
point i.
Needs: gguf, numpy."""
import re
import sys

import numpy as np
from gguf import quants

TABLES = [("iq2xxs", quants.IQ2_XXS, 2), ("iq2xs", quants.IQ2_XS, 2), ("iq2s", quants.IQ2_S, 2),
          ("iq3xxs", quants.IQ3_XXS, 3), ("iq3s", quants.IQ3_S, 3), ("iq1s", quants.IQ1_S, 2)]


def codes(cls, bits):
    cls.init_grid()
    grid = cls.grid.reshape(cls.grid_shape)
    vmap = list(cls.grid_map)
    out = []
    for point in grid:
        c = 0
        for j, v in enumerate(point):
            c |= vmap.index(int(v)) << (bits * j)
        out.append(c)
    return out


def expanded(cls):
    cls.init_grid()
    return cls.grid.reshape(cls.grid_shape).astype(np.int64)


def check(path):
    text = open(path).read()
    for name, cls, _ in TABLES:
        m = re.search(r"GGML_TABLE_BEGIN\(uint(\d+)_t, %s_grid, \w+\)\s*\n(.*?)GGML_TABLE_END" % name, text, re.S)
        assert m, name
        width = int(m.group(1))
        vals = [int(v, 16) for v in re.findall(r"0x[0-9a-fA-F]+", m.group(2))]
        g = expanded(cls)
        nb = width // 8
        assert len(vals) == len(g) and nb == g.shape[1], name
        for v, point in zip(vals, g):
            got = [((v >> (8 * j)) & 0xFF) for j in range(nb)]
            got = [x - 256 if x >= 128 else x for x in got]
            assert got == list(point), name
        print("%s: %d points equal llama.cpp's" % (name, len(vals)), file=sys.stderr)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        check(sys.argv[2])
    for name, cls, bits in TABLES:
        c = codes(cls, bits)
        print("static const uint16_t mlstack__iq_grid_%s[%d] = {" % (name, len(c)))
        for i in range(0, len(c), 16):
            print("    " + ", ".join("0x%04x" % v for v in c[i:i + 16]) + ",")
        print("};")
    c = codes(quants.IQ2_XXS, 2)
    points = [sum(((p >> (2 * t)) & 3) << (8 * t) for t in range(8)) for p in c]
    print("static const uint64_t mlstack__iqp2_points[256] = {")
    for i in range(0, len(points), 5):
        print("    " + ", ".join("0x%016x" % v for v in points[i:i + 5]) + ",")
    print("};")


if __name__ == "__main__":
    main()
