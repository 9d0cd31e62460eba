#!/usr/bin/env python3
"""Write one set of random weights twice: as a Hugging Face folder for mlstack
and as a GGUF for llama.cpp, so the two engines can be benchmarked on the same
model shape, weight type and values.

    tools/gen_bench_models.py --shape smollm2 --dtype q8_0 --out models/bench/smollm2-q8_0

writes into OUT:
    config.json          LlamaForCausalLM config of the chosen shape
    model.safetensors    the weights in f32, f16 or bf16 (for q8_0 / q4_1: f16,
                         mlstack quantizes at load with --quant)
    model.gguf           the same weights for llama.cpp, in F32, F16, BF16, Q8_0
                         or Q4_1 (1-D norm weights stay F32, as llama.cpp's
                         converters keep them), with a dummy tokenizer

The values are the same for every dtype: each tensor comes from its own seeded
generator (seed and tensor name), is rounded to bfloat16 and has magnitudes
below 2^-14 flushed to zero, so f32, f16 and bf16 hold exactly the same numbers
(quantized types are quantized from them).  Tensors are produced and written
one at a time, so memory stays near the size of the largest tensor.

Only numpy and gguf (gguf-py) are needed; safetensors are written directly.
If a sibling folder of OUT already holds a model.safetensors with identical
content (same shape, dtype, seed and std, recorded in its metadata) it is
hard-linked instead of written again (--no-link to disable).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import time
import zlib

import numpy as np

try:
    import gguf
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as QT
except ImportError:  # pragma: no cover
    sys.exit("gen_bench_models: the gguf Python package is needed (pip install gguf)")


SHAPES = {
    # SmolLM2-135M
    "smollm2": dict(hidden_size=576, num_hidden_layers=30, num_attention_heads=9,
                    num_key_value_heads=3, intermediate_size=1536, vocab_size=49152,
                    tie_word_embeddings=True, rope_theta=100000.0, rms_norm_eps=1e-5,
                    max_position_embeddings=8192, bos_token_id=1, eos_token_id=2,
                    name="SmolLM2-135M (random weights)"),
    # TinyLlama-1.1B
    "tinyllama": dict(hidden_size=2048, num_hidden_layers=22, num_attention_heads=32,
                      num_key_value_heads=4, intermediate_size=5632, vocab_size=32000,
                      tie_word_embeddings=False, rope_theta=10000.0, rms_norm_eps=1e-5,
                      max_position_embeddings=2048, bos_token_id=1, eos_token_id=2,
                      name="TinyLlama-1.1B (random weights)"),
}

# Shapes written straight to GGUF as random blocks (--dtype q4_k_m, iq4_xs, iq2_xxs, q8_0 or tq2_0; no
# float copy anywhere, so even the 8B shape is made in a minute and its size in memory): for
# side-by-side benchmarks on the same file, not for text. Each tensor's blocks are random bytes
# from its own seeded generator with their f16 scales set so the weights' std is about --std.
# The mixes follow llama.cpp's file types, simplified: Q4_K_M: Q4_K, with attn_v and ffn_down
# Q6_K in the layers llama.cpp gives more bits (the first and last eighth, every third between),
# output Q6_K; IQ4_XS: IQ4_XS, output Q6_K; IQ2_XXS: IQ2_XXS, output Q5_K; Q8_0: Q8_0; TQ2_0 (ternary,
# BitNet-style; random 2-bit fields, so +2 too): TQ2_0, output Q6_K. The
# embedding is Q8_0 in every mix (mlstack keeps Q8_0 / Q4_1 tables as blocks; other block types
# it dequantizes to f32 at load) and the head is untied.
BLOCK_SHAPES = {
    "llama3.2-1b": dict(arch="llama", hidden_size=2048, num_hidden_layers=16, num_attention_heads=32,
                        num_key_value_heads=8, head_dim=64, intermediate_size=8192, vocab_size=128256,
                        rope_theta=500000.0, name="Llama-3.2-1B (random blocks)"),
    "llama3.2-3b": dict(arch="llama", hidden_size=3072, num_hidden_layers=28, num_attention_heads=24,
                        num_key_value_heads=8, head_dim=128, intermediate_size=8192, vocab_size=128256,
                        rope_theta=500000.0, name="Llama-3.2-3B (random blocks)"),
    "qwen3-4b": dict(arch="qwen3", hidden_size=2560, num_hidden_layers=36, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128, intermediate_size=9728, vocab_size=151936,
                     rope_theta=1000000.0, name="Qwen3-4B (random blocks)"),
    "llama3.1-8b": dict(arch="llama", hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                        num_key_value_heads=8, head_dim=128, intermediate_size=14336, vocab_size=128256,
                        rope_theta=500000.0, name="Llama-3.1-8B (random blocks)"),
}
BLOCK_DTYPES = ("q4_k_m", "iq4_xs", "iq2_xxs", "q8_0", "tq2_0")
BLOCK_FTYPE = {"q4_k_m": gguf.LlamaFileType.MOSTLY_Q4_K_M, "iq4_xs": gguf.LlamaFileType.MOSTLY_IQ4_XS,
               "iq2_xxs": gguf.LlamaFileType.MOSTLY_IQ2_XXS, "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
               "tq2_0": gguf.LlamaFileType.MOSTLY_TQ2_0}
# byte offsets of the f16 scale fields (d, and dmin where the type has one) in a block
BLOCK_SCALES = {QT.Q8_0: (0,), QT.Q4_K: (0, 2), QT.Q5_K: (0, 2), QT.Q6_K: (208,), QT.IQ4_XS: (0,),
                QT.IQ2_XXS: (0,), QT.TQ2_0: (64,)}

DTYPES = ("f32", "f16", "bf16", "q8_0", "q4_1")

GGUF_TYPE = {"f32": QT.F32, "f16": QT.F16, "bf16": QT.BF16, "q8_0": QT.Q8_0, "q4_1": QT.Q4_1}
GGUF_FTYPE = {
    "f32": gguf.LlamaFileType.ALL_F32,
    "f16": gguf.LlamaFileType.MOSTLY_F16,
    "bf16": gguf.LlamaFileType.MOSTLY_BF16,
    "q8_0": gguf.LlamaFileType.MOSTLY_Q8_0,
    "q4_1": gguf.LlamaFileType.MOSTLY_Q4_1,
}
# safetensors dtype per requested dtype (quantized types are quantized by mlstack at load)
ST_DTYPE = {"f32": "F32", "f16": "F16", "bf16": "BF16", "q8_0": "F16", "q4_1": "F16"}
ST_BYTES = {"F32": 4, "F16": 2, "BF16": 2}


# ---------------------------------------------------------------- the model

def tensor_plan(cfg: dict) -> list[tuple[str, str, tuple[int, ...], str]]:
    """(hf_name, gguf_name, shape [rows, cols] as in PyTorch, kind) in file order.
    kind: 'norm' (ones), 'mat' (random), 'q' / 'k' (random, permuted for GGUF)."""
    h = cfg["hidden_size"]
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    hd = h // nh
    f = cfg["intermediate_size"]
    v = cfg["vocab_size"]
    plan = [("model.embed_tokens.weight", "token_embd.weight", (v, h), "mat")]
    for i in range(cfg["num_hidden_layers"]):
        p, g = f"model.layers.{i}.", f"blk.{i}."
        plan += [
            (p + "input_layernorm.weight", g + "attn_norm.weight", (h,), "norm"),
            (p + "self_attn.q_proj.weight", g + "attn_q.weight", (nh * hd, h), "q"),
            (p + "self_attn.k_proj.weight", g + "attn_k.weight", (nkv * hd, h), "k"),
            (p + "self_attn.v_proj.weight", g + "attn_v.weight", (nkv * hd, h), "mat"),
            (p + "self_attn.o_proj.weight", g + "attn_output.weight", (h, nh * hd), "mat"),
            (p + "post_attention_layernorm.weight", g + "ffn_norm.weight", (h,), "norm"),
            (p + "mlp.gate_proj.weight", g + "ffn_gate.weight", (f, h), "mat"),
            (p + "mlp.up_proj.weight", g + "ffn_up.weight", (f, h), "mat"),
            (p + "mlp.down_proj.weight", g + "ffn_down.weight", (h, f), "mat"),
        ]
    plan.append(("model.norm.weight", "output_norm.weight", (h,), "norm"))
    if not cfg["tie_word_embeddings"]:
        plan.append(("lm_head.weight", "output.weight", (v, h), "mat"))
    return plan


def make_tensor(name: str, shape: tuple[int, ...], kind: str, seed: int, std: float) -> np.ndarray:
    """float32 values that are exact in bf16 and in f16 (normal range or zero)."""
    if kind == "norm":
        return np.ones(shape, dtype=np.float32)
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    x = rng.standard_normal(shape, dtype=np.float32)
    x *= np.float32(std)
    bits = x.view(np.uint32)
    # round to nearest even bf16, in place
    bits += np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    bits &= np.uint32(0xFFFF0000)
    x[np.abs(x) < np.float32(2.0 ** -14)] = 0.0   # below f16's normal range
    return x


def permute_rows(w: np.ndarray, n_head: int) -> np.ndarray:
    """The q/k row order llama.cpp expects (what its HF converter applies):
    within each head, interleave the two rotary halves."""
    rows = w.shape[0]
    return (w.reshape(n_head, 2, rows // n_head // 2, *w.shape[1:])
             .swapaxes(1, 2).reshape(w.shape))


def hf_config(shape: str, st_dtype: str) -> dict:
    s = SHAPES[shape]
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": s["hidden_size"],
        "intermediate_size": s["intermediate_size"],
        "num_hidden_layers": s["num_hidden_layers"],
        "num_attention_heads": s["num_attention_heads"],
        "num_key_value_heads": s["num_key_value_heads"],
        "head_dim": s["hidden_size"] // s["num_attention_heads"],
        "vocab_size": s["vocab_size"],
        "max_position_embeddings": s["max_position_embeddings"],
        "rope_theta": s["rope_theta"],
        "rope_scaling": None,
        "rms_norm_eps": s["rms_norm_eps"],
        "hidden_act": "silu",
        "attention_bias": False,
        "mlp_bias": False,
        "tie_word_embeddings": s["tie_word_embeddings"],
        "bos_token_id": s["bos_token_id"],
        "eos_token_id": s["eos_token_id"],
        "torch_dtype": {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[st_dtype],
        "initializer_range": 0.02,
    }


# ---------------------------------------------------------------- safetensors

def to_st_bytes(x: np.ndarray, st_dtype: str) -> np.ndarray:
    if st_dtype == "F32":
        return x
    if st_dtype == "F16":
        return x.astype(np.float16)
    return (x.view(np.uint32) >> np.uint32(16)).astype(np.uint16)  # exact: x is bf16-valued


def st_header_metadata(shape: str, st_dtype: str, seed: int, std: float) -> dict:
    return {"format": "pt", "mlstack_bench": f"{shape}:{st_dtype}:seed={seed}:std={std!r}:v1"}


def read_st_metadata(path: str) -> dict | None:
    try:
        with open(path, "rb") as fp:
            (n,) = struct.unpack("<Q", fp.read(8))
            if n > 100_000_000:
                return None
            return json.loads(fp.read(n)).get("__metadata__")
    except (OSError, ValueError, struct.error):
        return None


def find_twin(out: str, meta: dict) -> str | None:
    parent = os.path.dirname(os.path.abspath(out))
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return None
    for d in names:
        cand = os.path.join(parent, d, "model.safetensors")
        if os.path.abspath(os.path.join(parent, d)) == os.path.abspath(out) or not os.path.isfile(cand):
            continue
        if read_st_metadata(cand) == meta:
            return cand
    return None


def write_safetensors(path: str, plan, st_dtype: str, meta: dict, seed: int, std: float) -> None:
    header: dict = {"__metadata__": meta}
    off = 0
    for hf, _, shp, _ in plan:
        n = int(np.prod(shp)) * ST_BYTES[st_dtype]
        header[hf] = {"dtype": st_dtype, "shape": list(shp), "data_offsets": [off, off + n]}
        off += n
    hjson = json.dumps(header, separators=(",", ":")).encode()
    hjson += b" " * (-len(hjson) % 8)          # keep the data 8-byte aligned
    tmp = path + ".part"
    with open(tmp, "wb") as fp:
        fp.write(struct.pack("<Q", len(hjson)))
        fp.write(hjson)
        for hf, _, shp, kind in plan:
            to_st_bytes(make_tensor(hf, shp, kind, seed, std), st_dtype).tofile(fp)
    os.replace(tmp, path)


# ---------------------------------------------------------------- gguf

def gguf_nbytes(shape: tuple[int, ...], qt: QT) -> int:
    block, size = GGML_QUANT_SIZES[qt]
    n = int(np.prod(shape))
    assert shape[-1] % block == 0, (shape, qt)
    return n // block * size


def gguf_quantize(x: np.ndarray, qt: QT) -> np.ndarray:
    if qt == QT.F32:
        return x
    if qt == QT.F16:
        return x.astype(np.float16)
    if qt == QT.BF16:  # exact for bf16-valued x; no rounding needed
        return (x.view(np.uint32) >> np.uint32(16)).astype(np.uint16)
    return gguf.quants.quantize(x, qt)


def add_dummy_tokenizer(w: "gguf.GGUFWriter", n_vocab: int, bos: int, eos: int) -> None:
    """A sentencepiece-style ('llama') vocab of the right size: <unk> <s> </s>,
    the 256 byte tokens, then filler pieces.  Enough for llama-bench, which
    feeds random token ids; not meant for real text."""
    tokens: list[str] = ["<unk>", "<s>", "</s>"]
    types = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [gguf.TokenType.BYTE] * 256
    k = 0
    while len(tokens) < n_vocab:
        tokens.append(f"\u2581t{k}")
        types.append(gguf.TokenType.NORMAL)
        k += 1
    tokens = tokens[:n_vocab]
    types = types[:n_vocab]
    scores = [0.0] * 3 + [0.0] * 256 + [-float(i) for i in range(n_vocab - 259)]
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores[:n_vocab])
    w.add_token_types(types)
    w.add_bos_token_id(bos)
    w.add_eos_token_id(eos)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)


def write_gguf(path: str, shape: str, dtype: str, plan, seed: int, std: float) -> None:
    s = SHAPES[shape]
    qt_mat = GGUF_TYPE[dtype]
    nh, nkv = s["num_attention_heads"], s["num_key_value_heads"]
    tmp = path + ".part"
    w = gguf.GGUFWriter(tmp, "llama")
    w.add_name(s["name"])
    w.add_vocab_size(s["vocab_size"])
    w.add_context_length(s["max_position_embeddings"])
    w.add_embedding_length(s["hidden_size"])
    w.add_block_count(s["num_hidden_layers"])
    w.add_feed_forward_length(s["intermediate_size"])
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_rope_dimension_count(s["hidden_size"] // nh)
    w.add_rope_freq_base(s["rope_theta"])
    w.add_layer_norm_rms_eps(s["rms_norm_eps"])
    w.add_file_type(GGUF_FTYPE[dtype])
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    add_dummy_tokenizer(w, s["vocab_size"], s["bos_token_id"], s["eos_token_id"])

    types = []
    for _, gn, shp, kind in plan:
        qt = QT.F32 if kind == "norm" else qt_mat
        types.append(qt)
        w.add_tensor_info(gn, shp, np.dtype(np.float32), gguf_nbytes(shp, qt), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for (hf, _, shp, kind), qt in zip(plan, types):
        x = make_tensor(hf, shp, kind, seed, std)
        if kind == "q":
            x = permute_rows(x, nh)
        elif kind == "k":
            x = permute_rows(x, nkv)
        w.write_tensor_data(gguf_quantize(x, qt))
        del x
    w.close()
    os.replace(tmp, path)


# ---------------------------------------------------------------- random-block GGUF shapes

def block_type(dtype: str, gname: str, n_layers: int) -> QT:
    """The GGML type of tensor gname in the simplified mix of dtype (BLOCK_SHAPES' comment)."""
    if gname.endswith("norm.weight"):
        return QT.F32
    if gname == "token_embd.weight" or dtype == "q8_0":
        return QT.Q8_0
    if gname == "output.weight":
        return QT.Q5_K if dtype == "iq2_xxs" else QT.Q6_K
    if dtype == "q4_k_m":
        i = int(gname.split(".")[1])
        more = i < n_layers // 8 or i >= 7 * n_layers // 8 or (i - n_layers // 8) % 3 == 2
        return QT.Q6_K if more and (".attn_v." in gname or ".ffn_down." in gname) else QT.Q4_K
    return {"iq4_xs": QT.IQ4_XS, "tq2_0": QT.TQ2_0}.get(dtype, QT.IQ2_XXS)


def block_unit_std(qt: QT) -> float:
    """The std of type qt's weights when every scale field holds 1.0 (over random blocks)."""
    block, size = GGML_QUANT_SIZES[qt]
    raw = np.random.default_rng(7).integers(0, 256, size=(64, size), dtype=np.uint8)
    for off in BLOCK_SCALES[qt]:
        raw[:, off:off + 2] = np.array([1.0], dtype=np.float16).view(np.uint8)
    return float(np.std(gguf.quants.dequantize(raw, qt)))


def random_blocks(name: str, shape: tuple[int, int], qt: QT, seed: int, std: float) -> np.ndarray:
    """Random blocks of qt for a [rows, cols] tensor, scales set for a weight std of about std."""
    block, size = GGML_QUANT_SIZES[qt]
    rows, nb = shape[0], shape[1] // block
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    raw = rng.integers(0, 256, size=(rows, nb, size), dtype=np.uint8)
    scale = np.float16(std / block_unit_std(qt))
    for off in BLOCK_SCALES[qt]:
        raw[:, :, off:off + 2] = np.array([scale], dtype=np.float16).view(np.uint8)
    return raw.reshape(rows, nb * size)


def write_block_gguf(path: str, shape: str, dtype: str, seed: int, std: float) -> None:
    s = BLOCK_SHAPES[shape]
    h, nh, nkv, hd, f, v = (s["hidden_size"], s["num_attention_heads"], s["num_key_value_heads"], s["head_dim"],
                            s["intermediate_size"], s["vocab_size"])
    n_layers, arch = s["num_hidden_layers"], s["arch"]
    plan = [("token_embd.weight", (v, h))]
    for i in range(n_layers):
        g = f"blk.{i}."
        plan += [(g + "attn_norm.weight", (h,)), (g + "attn_q.weight", (nh * hd, h)),
                 (g + "attn_k.weight", (nkv * hd, h)), (g + "attn_v.weight", (nkv * hd, h)),
                 (g + "attn_output.weight", (h, nh * hd)), (g + "ffn_norm.weight", (h,)),
                 (g + "ffn_gate.weight", (f, h)), (g + "ffn_up.weight", (f, h)), (g + "ffn_down.weight", (h, f))]
        if arch == "qwen3":
            plan += [(g + "attn_q_norm.weight", (hd,)), (g + "attn_k_norm.weight", (hd,))]
    plan += [("output_norm.weight", (h,)), ("output.weight", (v, h))]
    tmp = path + ".part"
    w = gguf.GGUFWriter(tmp, arch)
    w.add_name(s["name"])
    w.add_vocab_size(v)
    w.add_context_length(131072)
    w.add_embedding_length(h)
    w.add_block_count(n_layers)
    w.add_feed_forward_length(f)
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_rope_dimension_count(hd)
    w.add_rope_freq_base(s["rope_theta"])
    w.add_layer_norm_rms_eps(1e-5 if arch == "llama" else 1e-6)
    w.add_file_type(BLOCK_FTYPE[dtype])
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    add_dummy_tokenizer(w, v, 1, 2)
    types = [block_type(dtype, name, n_layers) for name, _ in plan]
    for (name, shp), qt in zip(plan, types):
        w.add_tensor_info(name, shp, np.dtype(np.float32), gguf_nbytes(shp, qt), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for (name, shp), qt in zip(plan, types):
        if qt == QT.F32:
            w.write_tensor_data(np.ones(shp, dtype=np.float32))
        else:
            w.write_tensor_data(random_blocks(name, shp, qt, seed, std))
    w.close()
    os.replace(tmp, path)


# ---------------------------------------------------------------- gpt-oss (GGUF only)

# gpt-oss-20b's shape (openai/gpt-oss-20b config.json); --layers keeps the first N of its 24
GPT_OSS_20B = dict(hidden_size=2880, num_hidden_layers=24, num_attention_heads=64, num_key_value_heads=8,
                   head_dim=64, intermediate_size=2880, num_local_experts=32, num_experts_per_tok=4,
                   vocab_size=201088, sliding_window=128, max_position_embeddings=131072, rope_theta=150000.0,
                   rope_factor=32.0, rope_orig=4096, rms_norm_eps=1e-5)


def write_gpt_oss_gguf(path: str, n_layers: int, seed: int) -> None:
    """gpt-oss-20b-shaped random weights as llama.cpp's converter lays them out: experts MXFP4
    (random E2M1 codes under block scales 2^-7 .. 2^-5), attention and router F32 with biases,
    sinks, embedding and output Q8_0, a dummy vocabulary. Read by llama.cpp and by mlstack."""
    c = GPT_OSS_20B
    D, H, KV, Dh, F, E, V = (c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"],
                             c["intermediate_size"], c["num_local_experts"], c["vocab_size"])
    rng = np.random.default_rng(seed)
    tmp = path + ".part"
    w = gguf.GGUFWriter(tmp, "gpt-oss")
    w.add_name("gpt-oss-20b-shaped random (%d layers)" % n_layers)
    w.add_block_count(n_layers)
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(D)
    w.add_feed_forward_length(F)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_key_length(Dh)
    w.add_value_length(Dh)
    w.add_rope_freq_base(c["rope_theta"])
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    w.add_rope_scaling_factor(c["rope_factor"])
    w.add_rope_scaling_orig_ctx_len(c["rope_orig"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_expert_count(E)
    w.add_expert_used_count(c["num_experts_per_tok"])
    w.add_expert_feed_forward_length(F)
    w.add_sliding_window(c["sliding_window"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_MXFP4_MOE)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    add_dummy_tokenizer(w, V, 1, 2)
    plan = [("token_embd.weight", (V, D), QT.Q8_0), ("output_norm.weight", (D,), QT.F32),
            ("output.weight", (V, D), QT.Q8_0)]
    for il in range(n_layers):
        b = "blk.%d." % il
        plan += [(b + "attn_norm.weight", (D,), QT.F32), (b + "post_attention_norm.weight", (D,), QT.F32),
                 (b + "attn_sinks.weight", (H,), QT.F32), (b + "attn_q.weight", (H * Dh, D), QT.F32),
                 (b + "attn_q.bias", (H * Dh,), QT.F32), (b + "attn_k.weight", (KV * Dh, D), QT.F32),
                 (b + "attn_k.bias", (KV * Dh,), QT.F32), (b + "attn_v.weight", (KV * Dh, D), QT.F32),
                 (b + "attn_v.bias", (KV * Dh,), QT.F32), (b + "attn_output.weight", (D, H * Dh), QT.F32),
                 (b + "attn_output.bias", (D,), QT.F32), (b + "ffn_gate_inp.weight", (E, D), QT.F32),
                 (b + "ffn_gate_inp.bias", (E,), QT.F32)]
        for p, (rows, cols) in (("gate", (F, D)), ("up", (F, D)), ("down", (D, F))):
            plan += [(b + "ffn_%s_exps.weight" % p, (E, rows, cols), QT.MXFP4),
                     (b + "ffn_%s_exps.bias" % p, (E, rows), QT.F32)]
    for name, shp, qt in plan:
        w.add_tensor_info(name, shp, np.dtype(np.float32), gguf_nbytes(shp, qt), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    for name, shp, qt in plan:
        if qt == QT.MXFP4:
            nb = shp[-1] // 32
            x = rng.integers(0, 256, size=(*shp[:-1], nb, 17), dtype=np.uint8)
            x[..., 0] = rng.integers(120, 123, size=x.shape[:-1], dtype=np.uint8)
            w.write_tensor_data(x.reshape(*shp[:-1], nb * 17))
        elif qt == QT.Q8_0:
            rows = []
            for r0 in range(0, shp[0], 16384):
                x = (rng.standard_normal((min(16384, shp[0] - r0), shp[1]), dtype=np.float32) * 0.02)
                rows.append(gguf.quants.quantize(x, QT.Q8_0))
            w.write_tensor_data(np.concatenate(rows))
        else:
            std = 1.0 if "sinks" in name else 0.0 if "norm" in name else 0.02
            x = rng.standard_normal(shp, dtype=np.float32) * np.float32(std)
            if "norm" in name:
                x += np.float32(1.0)
            w.write_tensor_data(x)
    w.close()
    os.replace(tmp, path)


# ---------------------------------------------------------------- Gemma 3n (GGUF only)

# Gemma-3n-E2B's text shape (tools/shapes/gemma3n-e2b.json): 30 layers of hidden 2048, 8/2 heads of
# 256, FFN 8192, 4 AltUp streams, Laurel rank 64, per-layer inputs 256 wide, the last 10 layers
# reading earlier layers' KV, sparsity 0.95 in the first 10. The released vocabulary is 262,400
# with per-layer rows for 262,144; here both are 262,144 (llama.cpp's table has a row per token).
def write_gemma3n_gguf(path: str, n_layers: int, seed: int, std: float) -> None:
    """Gemma-3n-E2B-shaped random weights as llama.cpp's converter lays them out (keys and tensor
    names of its gemma3n): projections, AltUp projections, Laurel and the embedding Q8_0 (random
    blocks), the per-layer input table F16 (4 GB, read in place by both engines), AltUp
    coefficients, router and norms F32; k/v and k norms in every layer, as llama.cpp requires."""
    with open(os.path.join(SHAPES_DIR, "gemma3n-e2b.json"), encoding="utf-8") as f:
        c = json.load(f)
    D, H, KV, Dh, V, P = (c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"],
                          c["vocab_size"], c["hidden_size_per_layer_input"])
    FF, R, N, L = c["intermediate_size"][0], c["laurel_rank"], c["altup_num_inputs"], n_layers
    arch = "gemma3n"
    tmp = path + ".part"
    w = gguf.GGUFWriter(tmp, arch)
    w.add_name("Gemma-3n-E2B-shaped random (%d layers)" % L)
    w.add_block_count(L)
    w.add_context_length(c["max_position_embeddings"])
    w.add_embedding_length(D)
    w.add_feed_forward_length([FF] * L)
    w.add_head_count(H)
    w.add_head_count_kv(KV)
    w.add_key_length(Dh)
    w.add_value_length(Dh)
    w.add_rope_freq_base(c["rope_parameters"]["full_attention"]["rope_theta"])
    w.add_float32(arch + ".rope.freq_base_swa", c["rope_parameters"]["sliding_attention"]["rope_theta"])
    w.add_layer_norm_rms_eps(c["rms_norm_eps"])
    w.add_final_logit_softcapping(c["final_logit_softcapping"])
    w.add_sliding_window(c["sliding_window"])
    w.add_altup_active_idx(c["altup_active_idx"])
    w.add_altup_num_inputs(N)
    w.add_embedding_length_per_layer_input(P)
    w.add_shared_kv_layers(max(0, c["num_kv_shared_layers"] - (c["num_hidden_layers"] - L)))
    pattern = c["activation_sparsity_pattern"][:L]
    w.add_activation_sparsity_scale([1.6448535919189453 if p == 0.95 else float("-inf") for p in pattern])
    w.add_sliding_window_pattern([t == "sliding_attention" for t in c["layer_types"][:L]])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    add_dummy_tokenizer(w, V, c["bos_token_id"], c["eos_token_id"])
    q, f32, f16 = QT.Q8_0, QT.F32, QT.F16
    plan = [("token_embd.weight", (V, D), q), ("per_layer_token_embd.weight", (V, L * P), f16),
            ("per_layer_model_proj.weight", (L * P, D), q), ("per_layer_proj_norm.weight", (P,), f32),
            ("altup_proj.weight", (N - 1, D, D), q), ("altup_unembd_proj.weight", (N - 1, D, D), q),
            ("output_norm.weight", (D,), f32)]
    for il in range(L):
        b = "blk.%d." % il
        plan += [(b + "attn_norm.weight", (D,), f32), (b + "attn_q.weight", (H * Dh, D), q),
                 (b + "attn_k.weight", (KV * Dh, D), q), (b + "attn_v.weight", (KV * Dh, D), q),
                 (b + "attn_output.weight", (D, H * Dh), q), (b + "attn_q_norm.weight", (Dh,), f32),
                 (b + "attn_k_norm.weight", (Dh,), f32), (b + "post_attention_norm.weight", (D,), f32),
                 (b + "ffn_norm.weight", (D,), f32), (b + "ffn_gate.weight", (FF, D), q),
                 (b + "ffn_up.weight", (FF, D), q), (b + "ffn_down.weight", (D, FF), q),
                 (b + "post_ffw_norm.weight", (D,), f32), (b + "inp_gate.weight", (P, D), q),
                 (b + "proj.weight", (D, P), q), (b + "post_norm.weight", (D,), f32),
                 (b + "altup_correct_coef.weight", (N, N), f32), (b + "altup_correct_scale.weight", (D,), f32),
                 (b + "altup_predict_coef.weight", (N * N, N), f32), (b + "altup_router.weight", (N, D), f32),
                 (b + "altup_router_norm.weight", (D,), f32), (b + "laurel_l.weight", (R, D), q),
                 (b + "laurel_r.weight", (D, R), q), (b + "laurel_post_norm.weight", (D,), f32)]
    for name, shp, qt in plan:
        w.add_tensor_info(name, shp, np.dtype(np.float32), gguf_nbytes(shp, qt), raw_dtype=qt)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_ti_data_to_file()
    rng = np.random.default_rng(seed)
    for name, shp, qt in plan:
        if qt == f16:  # the 4 GB table in slices of rows: its own padding, as write_tensor_data pads
            fout = w.fout[0]
            w.tensors[0].pop(next(iter(w.tensors[0])))
            w.write_padding(fout, fout.tell())
            for r0 in range(0, shp[0], 8192):
                x = rng.integers(-127, 128, size=(min(8192, shp[0] - r0), shp[1]), dtype=np.int8)
                (x.astype(np.float16) * np.float16(std / 73.0)).tofile(fout)
            w.write_padding(fout, shp[0] * shp[1] * 2)
        elif qt == q:
            w.write_tensor_data(random_blocks(name, (int(np.prod(shp[:-1])), shp[-1]), qt, seed, std))
        elif "norm" in name or "scale" in name:
            w.write_tensor_data(np.ones(shp, dtype=np.float32))
        else:  # AltUp's coefficients and router: small, so the streams stay near the input's size
            w.write_tensor_data((rng.standard_normal(shp, dtype=np.float32) * np.float32(0.1)))
    w.close()
    os.replace(tmp, path)


# ---------------------------------------------------------------- main


# ---------------------------------------------------------------- hybrids

# The smallest public checkpoints' shapes (text part): Qwen3.5-0.8B and LFM2-1.2B, as config.json
# files in tools/shapes/ (which `make bench` also runs through `mlstack bench --shape`).
SHAPES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "shapes")
HYBRID_SHAPES = {}
for _name in ("qwen35-0.8b", "lfm2-1.2b"):
    with open(os.path.join(SHAPES_DIR, _name + ".json"), encoding="utf-8") as _f:
        HYBRID_SHAPES[_name] = json.load(_f)


def write_hybrid(a) -> int:
    """A random hybrid in a public checkpoint's shape: transformers builds it (its own init) and
    saves a bf16 folder; llama.cpp's converter writes OUT/model-q8_0.gguf (and -bf16); mlstack
    quantize writes OUT/model-q4_k_m.gguf from the bf16 one. The tokenizer is --tokenizer's
    (any byte-level BPE tokenizer.json; the converter pads the vocabulary to the shape's)."""
    import shutil
    import subprocess
    import torch
    import transformers
    cfg = dict(HYBRID_SHAPES[a.shape])
    arch = cfg.pop("architectures")[0]
    cfg.pop("model_type", None)
    conf = {"Qwen3_5ForCausalLM": transformers.Qwen3_5TextConfig,
            "Lfm2ForCausalLM": transformers.Lfm2Config}[arch](**cfg)
    conf.architectures = [arch]
    hf = os.path.join(a.out, "hf")
    if not os.path.exists(os.path.join(hf, "model.safetensors")) or a.force:
        torch.manual_seed(a.seed)
        with torch.no_grad():
            getattr(transformers, arch)(conf).to(torch.bfloat16).save_pretrained(hf)
        for f in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy(os.path.join(a.tokenizer, f), hf)
    conv = os.path.join(a.peer, "src", "vendor", "llama.cpp")
    env = dict(os.environ, PYTHONPATH=os.path.join(conv, "gguf-py"))
    for typ in ("bf16", "q8_0"):
        out = os.path.join(a.out, f"model-{typ}.gguf")
        if not os.path.exists(out) or a.force:
            mtp = ["--no-mtp"] if arch.startswith("Qwen3_5") else []  # the converter refuses it elsewhere
            subprocess.run([sys.executable, os.path.join(conv, "convert_hf_to_gguf.py"), hf, *mtp,
                            "--outtype", typ, "--outfile", out], check=True, env=env)
    out = os.path.join(a.out, "model-q4_k_m.gguf")
    if not os.path.exists(out) or a.force:
        subprocess.run([a.mlstack, "quantize", "-m", os.path.join(a.out, "model-bf16.gguf"), "--quant", "q4_k_m",
                        "-o", out], check=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", required=True,
                    choices=sorted(SHAPES) + ["gpt-oss-20b", "gemma3n-e2b"] + sorted(HYBRID_SHAPES) +
                    sorted(BLOCK_SHAPES))
    ap.add_argument("--dtype", choices=sorted(set(DTYPES) | set(BLOCK_DTYPES)) + ["mxfp4"],
                    help="not for the hybrid shapes (they write all three)")
    ap.add_argument("--tokenizer", default=os.path.join(os.path.dirname(__file__), "..", "models", "smollm2-135m-instruct"),
                    help="hybrid shapes: a folder with tokenizer.json and tokenizer_config.json")
    ap.add_argument("--peer", default=os.path.join(os.path.dirname(__file__), "..", "peer"),
                    help="hybrid shapes: llama.cpp's peer folder (tools/build_llamacpp.sh), for its converter")
    ap.add_argument("--mlstack", default=os.path.join(os.path.dirname(__file__), "..", "build", "mlstack"))
    ap.add_argument("--layers", type=int, default=0,
                    help="gpt-oss-20b, gemma3n-e2b: the first N layers only (0: all)")
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--std", type=float, default=0.02, help="weight standard deviation")
    ap.add_argument("--no-gguf", action="store_true", help="skip model.gguf")
    ap.add_argument("--no-safetensors", action="store_true", help="skip config.json and model.safetensors")
    ap.add_argument("--no-link", action="store_true", help="never hard-link an identical sibling safetensors")
    ap.add_argument("--force", action="store_true", help="rewrite files that exist")
    a = ap.parse_args(argv)

    os.makedirs(a.out, exist_ok=True)
    if a.shape in HYBRID_SHAPES:
        return write_hybrid(a)
    if not a.dtype:
        ap.error("--dtype is needed")
    if a.shape in BLOCK_SHAPES:  # GGUF only, random blocks
        if a.dtype not in BLOCK_DTYPES:
            ap.error("--shape %s takes --dtype %s" % (a.shape, ", ".join(BLOCK_DTYPES)))
        gp = os.path.join(a.out, "model.gguf")
        t0 = time.time()
        write_block_gguf(gp, a.shape, a.dtype, a.seed, a.std)
        print(f"{gp}: {os.path.getsize(gp) / 1e6:.1f} MB in {time.time() - t0:.1f} s")
        return 0
    if a.shape == "gemma3n-e2b":  # GGUF only (mlstack reads it as llama.cpp does)
        if a.dtype != "q8_0":
            ap.error("--shape gemma3n-e2b takes --dtype q8_0")
        gp = os.path.join(a.out, "model.gguf")
        t0 = time.time()
        write_gemma3n_gguf(gp, a.layers or 30, a.seed, a.std)
        print(f"{gp}: {os.path.getsize(gp) / 1e6:.1f} MB in {time.time() - t0:.1f} s")
        return 0
    if a.shape == "gpt-oss-20b":  # GGUF only (mlstack reads it as llama.cpp does), MXFP4 experts
        if a.dtype != "mxfp4":
            ap.error("--shape gpt-oss-20b takes --dtype mxfp4")
        gp = os.path.join(a.out, "model.gguf")
        t0 = time.time()
        write_gpt_oss_gguf(gp, a.layers or GPT_OSS_20B["num_hidden_layers"], a.seed)
        print(f"{gp}: {os.path.getsize(gp) / 1e6:.1f} MB in {time.time() - t0:.1f} s")
        return 0
    plan = tensor_plan(SHAPES[a.shape])
    st_dtype = ST_DTYPE[a.dtype]
    t0 = time.time()

    if not a.no_safetensors:
        with open(os.path.join(a.out, "config.json"), "w") as fp:
            json.dump(hf_config(a.shape, st_dtype), fp, indent=2)
            fp.write("\n")
        st = os.path.join(a.out, "model.safetensors")
        meta = st_header_metadata(a.shape, st_dtype, a.seed, a.std)
        if os.path.exists(st) and not a.force and read_st_metadata(st) == meta:
            print(f"{st}: up to date")
        else:
            twin = None if a.no_link else find_twin(a.out, meta)
            if os.path.exists(st):
                os.remove(st)
            if twin:
                os.link(twin, st)
                print(f"{st}: hard link to {twin}")
            else:
                write_safetensors(st, plan, st_dtype, meta, a.seed, a.std)
                print(f"{st}: {os.path.getsize(st) / 1e6:.1f} MB ({st_dtype})")

    if not a.no_gguf:
        gp = os.path.join(a.out, "model.gguf")
        stamp = os.path.join(a.out, "model.gguf.stamp")
        key = f"{a.shape}:{a.dtype}:seed={a.seed}:std={a.std!r}:v1"
        fresh = (os.path.exists(gp) and os.path.exists(stamp)
                 and open(stamp).read().strip() == key)
        if fresh and not a.force:
            print(f"{gp}: up to date")
        else:
            write_gguf(gp, a.shape, a.dtype, plan, a.seed, a.std)
            with open(stamp, "w") as fp:
                fp.write(key + "\n")
            print(f"{gp}: {os.path.getsize(gp) / 1e6:.1f} MB ({GGUF_TYPE[a.dtype].name})")

    print(f"done in {time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
