#!/usr/bin/env python3
"""Write a copy of a GGUF file with every tensor dequantized to F32 by gguf-py
(gguf.quants.dequantize) and every metadata key copied, file type set to ALL_F32.

The KL table of tools/kl_table.py uses it to turn the SmolLM2 Q4_1 GGUF into the f32 weights
that both mlstack quantize and llama-quantize start from.

    python3 tools/dequant_gguf.py IN.gguf OUT.gguf [F16_NAMES]

F16_NAMES (comma-separated substrings): tensors whose names contain one are written F16 instead
(tools/make_hybrid_gguf.py makes a file of two types in one layer that way).
Needs: gguf, numpy.
"""
import sys

import numpy as np
import gguf
from gguf import quants
from gguf.constants import GGMLQuantizationType as T, GGUFValueType as VT


def main(src, dst, f16=()):
    r = gguf.GGUFReader(src)
    arch = r.fields["general.architecture"].contents()
    w = gguf.GGUFWriter(dst, arch)
    for name, f in r.fields.items():
        if name.startswith("GGUF.") or name == "general.architecture":
            continue
        v = f.contents()
        if name == "general.file_type":
            v = int(gguf.LlamaFileType.ALL_F32)
        if f.types[0] == VT.ARRAY:
            w.add_key_value(name, v, VT.ARRAY, sub_type=f.types[-1])
        else:
            w.add_key_value(name, v, f.types[0])
    for t in r.tensors:
        shape = [int(x) for x in reversed(t.shape)]  # numpy order: rows first
        if t.tensor_type in (T.F32,):
            x = np.array(t.data, dtype=np.float32).reshape(shape)
        else:
            x = quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)
        w.add_tensor(t.name, x.astype(np.float16) if any(p in t.name for p in f16) else x)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3].split(",") if len(sys.argv) == 4 else ())
