#!/usr/bin/env python3
"""Write the small GGUF fixtures under tests/fixtures/gguf/ with gguf-py (the `gguf` package,
llama.cpp's own Python writer), so that what the C reader sees comes from an independent
implementation:

  types.txt        every GGML type gguf-py knows: "id name block_elements block_bytes"
  quants.gguf      for each block type, a [2, 256] tensor named after the type and, beside it,
                   "<type>.ref": the same values as F32 from gguf.quants.dequantize.  Types
                   gguf-py can quantize are quantized from Gaussian data; the others (K-quants,
                   IQ4_NL) get random block bytes whose f16 scale fields hold modest values.
  llama-q8_0.gguf  tests/fixtures/models/llama as llama.cpp's converter would write it: tensor
                   names mapped, Q/K rows permuted for its RoPE layout, projections quantized to
                   Q8_0 by gguf-py, the embedding and norms kept F32.
  llama-kq.gguf    a random llama (hidden 256, 2 layers, vocab 256) whose 14 projections and
                   output head cover every block format mlstack computes natively or repacks
                   (KQ_TYPES below), the embedding F16: weights from gguf.quants.quantize where
                   gguf-py can, else random blocks with their f16 scales set so the weights'
                   standard deviation is about 0.05 (tests/test_gguf.c compares the native
                   kernels with the same file dequantized to f32).
  <family>-f32.gguf  the 2026 families' fixtures (smollm3, exaone4, seed_oss, apertus) as
                   llama.cpp's converter writes them, F32 (see FAMILY_GGUF)
  gpt-oss-mxfp4.gguf  tests/fixtures/families/gpt_oss_mxfp4 as llama.cpp's converter writes it
                   (conversion/gpt_oss.py): arch "gpt-oss", gate/up split, experts as GGML MXFP4
                   blocks (scale byte, then element j / j + 16 in the low / high nibble of byte j),
                   sinks as attn_sinks.weight; checked here against gguf-py's dequantization.
  iquants.gguf     the i-quants (IQ4_XS, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) as
                   quants.gguf: random blocks (gguf-py cannot quantize them) with modest f16
                   scales, each beside its gguf.quants.dequantize values
  llama-iq.gguf    llama-kq.gguf's shape with every projection and the head in an i-quant
                   (IQ_TYPES below), random blocks rescaled to a weight std of about 0.05
  ternary.gguf     TQ1_0 and TQ2_0: for each, a [2, 512] tensor quantized by gguf.quants.quantize
                   from Gaussian data ("<type>", its "<type>.ref" dequantization and the source
                   "<type>.src" in F32, for the writer's bytes), and "<type>.raw": random bytes
                   (TQ2_0's fields take the unused code 3 too) with "<type>.raw.ref"
  llama-tq.gguf    llama-kq.gguf's shape with every projection ternary (TQ1_0 / TQ2_0, TQ_TYPES
                   below; random trits, d about 0.08) and the head Q4_K
  ../../fuzz/corpus/gguf/  seeds for tests/fuzz/fuzz_gguf.c

Rerunnable; the same gguf/numpy versions give the same bytes.
    python3 tools/make_gguf_fixtures.py
Needs: gguf, numpy, safetensors.
"""
import json
import os

import numpy as np
import gguf
from gguf import quants
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType as T
from safetensors.numpy import load_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "gguf")
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus", "gguf")

# f16 scale fields of each block type: (byte offset in the block, count)
SCALE_FIELDS = {
    T.Q4_0: [(0, 1)], T.Q4_1: [(0, 2)], T.Q5_0: [(0, 1)], T.Q5_1: [(0, 2)], T.Q8_0: [(0, 1)],
    T.IQ4_NL: [(0, 1)], T.Q2_K: [(80, 2)], T.Q3_K: [(108, 1)], T.Q4_K: [(0, 2)], T.Q5_K: [(0, 2)],
    T.Q6_K: [(208, 1)],
}
BLOCK_TYPES = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_NL]


def write_types():
    with open(os.path.join(OUT, "types.txt"), "w") as f:
        for t in T:
            block, size = GGML_QUANT_SIZES[t]
            f.write("%d %s %d %d\n" % (t.value, t.name, block, size))


def random_blocks(rng, t, rows, cols):
    block, size = GGML_QUANT_SIZES[t]
    raw = rng.integers(0, 256, size=(rows, cols // block, size), dtype=np.uint8)
    for off, n in SCALE_FIELDS[t]:
        vals = (rng.uniform(0.002, 0.05, size=(rows, cols // block, n)) *
                rng.choice([-1, 1], size=(rows, cols // block, n))).astype(np.float16)
        raw[:, :, off:off + 2 * n] = vals.view(np.uint8).reshape(rows, cols // block, 2 * n)
    return raw.reshape(rows, cols // block * size)


def write_quants():
    rng = np.random.default_rng(20261201)
    w = gguf.GGUFWriter(os.path.join(OUT, "quants.gguf"), "llama")
    for t in BLOCK_TYPES + [T.F16, T.BF16]:
        x = rng.standard_normal((2, 256)).astype(np.float32)
        try:
            q = quants.quantize(x, t)
        except NotImplementedError:
            q = random_blocks(rng, t, 2, 256)
        ref = quants.dequantize(q, t).astype(np.float32)
        assert ref.shape == (2, 256) and np.all(np.isfinite(ref)), t.name
        w.add_tensor(t.name, q, raw_shape=q.shape, raw_dtype=t)
        w.add_tensor(t.name + ".ref", ref)
    # MXFP4: random nibbles under exponent bytes that include the extremes gguf-py's
    # e8m0_to_fp32_half special-cases (0, 1: subnormal halves) and large ones (up to 2^122)
    t = T.MXFP4
    q = rng.integers(0, 256, size=(2, 8, 17), dtype=np.uint8)
    q[:, :, 0] = np.array([0, 1, 2, 3, 100, 127, 140, 250, 126, 125, 2, 0, 1, 128, 129, 200],
                          dtype=np.uint8).reshape(2, 8)
    q = q.reshape(2, 8 * 17)
    ref = quants.dequantize(q, t).astype(np.float32)
    assert ref.shape == (2, 256) and np.all(np.isfinite(ref)), t.name
    w.add_tensor(t.name, q, raw_shape=q.shape, raw_dtype=t)
    w.add_tensor(t.name + ".ref", ref)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def permute(x, n_head):
    """llama.cpp's convert_hf_to_gguf.py LlamaModel.permute: rows of each head reordered so
    that RoPE rotates adjacent pairs."""
    return x.reshape(n_head, 2, x.shape[0] // n_head // 2, *x.shape[1:]).swapaxes(1, 2).reshape(x.shape)


def write_llama():
    src = os.path.join(ROOT, "tests", "fixtures", "models", "llama")
    cfg = json.load(open(os.path.join(src, "config.json")))
    st = load_file(os.path.join(src, "model.safetensors"))
    w = gguf.GGUFWriter(os.path.join(OUT, "llama-q8_0.gguf"), "llama")
    w.add_name("mlstack tiny llama fixture")
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_key_length(cfg["head_dim"])
    w.add_value_length(cfg["head_dim"])
    w.add_rope_dimension_count(cfg["head_dim"])
    w.add_rope_freq_base(cfg["rope_parameters"]["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_vocab_size(cfg["vocab_size"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q8_0)
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]

    def q8(name, x):
        q = quants.quantize(x.astype(np.float32), T.Q8_0)
        w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=T.Q8_0)

    w.add_tensor("token_embd.weight", st["model.embed_tokens.weight"])
    w.add_tensor("output_norm.weight", st["model.norm.weight"])
    q8("output.weight", st["lm_head.weight"])
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        b = "blk.%d." % l
        w.add_tensor(b + "attn_norm.weight", st[p + "input_layernorm.weight"])
        w.add_tensor(b + "ffn_norm.weight", st[p + "post_attention_layernorm.weight"])
        q8(b + "attn_q.weight", permute(st[p + "self_attn.q_proj.weight"], nh))
        q8(b + "attn_k.weight", permute(st[p + "self_attn.k_proj.weight"], nkv))
        q8(b + "attn_v.weight", st[p + "self_attn.v_proj.weight"])
        q8(b + "attn_output.weight", st[p + "self_attn.o_proj.weight"])
        q8(b + "ffn_gate.weight", st[p + "mlp.gate_proj.weight"])
        q8(b + "ffn_up.weight", st[p + "mlp.up_proj.weight"])
        q8(b + "ffn_down.weight", st[p + "mlp.down_proj.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# llama-kq.gguf: the format of each projection, per layer, and of the output head
KQ_TYPES = [
    {"attn_q": T.Q4_K, "attn_k": T.Q5_0, "attn_v": T.Q6_K, "attn_output": T.Q5_K,
     "ffn_gate": T.Q4_0, "ffn_up": T.Q5_1, "ffn_down": T.Q6_K},
    {"attn_q": T.Q2_K, "attn_k": T.Q3_K, "attn_v": T.IQ4_NL, "attn_output": T.Q4_K,
     "ffn_gate": T.Q5_K, "ffn_up": T.Q3_K, "ffn_down": T.Q2_K},
]
KQ_HEAD = T.Q6_K


def kq_tensor(rng, t, rows, cols):
    """A [rows, cols] tensor of type t: quantized Gaussian data where gguf-py can, else random
    blocks rescaled (their f16 scale fields, to which the values are proportional) to std 0.05."""
    x = (rng.standard_normal((rows, cols)) * 0.05).astype(np.float32)
    try:
        return quants.quantize(x, t)
    except NotImplementedError:
        pass
    q = random_blocks(rng, t, rows, cols)
    std = float(np.std(quants.dequantize(q, t)))
    block, size = GGML_QUANT_SIZES[t]
    v = q.reshape(rows, cols // block, size)
    for off, n in SCALE_FIELDS[t]:
        f = v[:, :, off:off + 2 * n].copy().view(np.float16).astype(np.float32) * (0.05 / std)
        v[:, :, off:off + 2 * n] = f.astype(np.float16).view(np.uint8)
    return v.reshape(rows, cols // block * size)


def write_block_model(fname, title, seed, layer_types, head_type, file_type, tensor):
    """A 2-D-weights llama model whose layer l holds its projections in the types layer_types[l]
    names (blocks from tensor(rng, type, rows, cols)), its head in head_type."""
    rng = np.random.default_rng(seed)
    D, H, HKV, DH, FF, V = 256, 4, 1, 64, 256, 256
    w = gguf.GGUFWriter(os.path.join(OUT, fname), "llama")
    w.add_name(title)
    w.add_block_count(len(layer_types))
    w.add_context_length(256)
    w.add_embedding_length(D)
    w.add_feed_forward_length(FF)
    w.add_head_count(H)
    w.add_head_count_kv(HKV)
    w.add_key_length(DH)
    w.add_value_length(DH)
    w.add_rope_dimension_count(DH)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(V)
    w.add_file_type(file_type)

    def add(name, t, rows, cols):
        q = tensor(rng, t, rows, cols)
        w.add_tensor(name, q, raw_shape=q.shape, raw_dtype=t)

    w.add_tensor("token_embd.weight", rng.standard_normal((V, D)).astype(np.float16))
    w.add_tensor("output_norm.weight", (1 + 0.1 * rng.standard_normal(D)).astype(np.float32))
    add("output.weight", head_type, V, D)
    shapes = {"attn_q": (H * DH, D), "attn_k": (HKV * DH, D), "attn_v": (HKV * DH, D),
              "attn_output": (D, H * DH), "ffn_gate": (FF, D), "ffn_up": (FF, D), "ffn_down": (D, FF)}
    for l, types in enumerate(layer_types):
        b = "blk.%d." % l
        w.add_tensor(b + "attn_norm.weight", (1 + 0.1 * rng.standard_normal(D)).astype(np.float32))
        w.add_tensor(b + "ffn_norm.weight", (1 + 0.1 * rng.standard_normal(D)).astype(np.float32))
        for name, t in types.items():
            add(b + name + ".weight", t, *shapes[name])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def write_kq():
    write_block_model("llama-kq.gguf", "mlstack native block formats fixture", 20261202, KQ_TYPES, KQ_HEAD,
                      gguf.LlamaFileType.MOSTLY_Q4_K_M, kq_tensor)


# The 2026 families' fixtures (tests/fixtures/families/) as llama.cpp's convert_hf_to_gguf.py
# writes them, F32: its architecture names, tensor names (norms by role: attn_norm / ffn_norm before,
# post_attention_norm / post_ffw_norm after), Q/K rows permuted where its model class permutes them
# (SmolLM3 as Llama; Apertus and the TextModel classes not), and keys (sliding window and its
# pattern, xIELU's per-layer parameters, llama3 rope_freqs).
FAMILY_GGUF = {
    # name: (gguf architecture, permute q/k, {HF norm name: GGUF norm name})
    "smollm3": ("smollm3", True, {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}),
    "exaone4": ("exaone4", False, {"post_attention_layernorm": "post_attention_norm",
                                   "post_feedforward_layernorm": "post_ffw_norm"}),
    "seed_oss": ("seed_oss", False, {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm"}),
    "apertus": ("apertus", False, {"attention_layernorm": "attn_norm", "feedforward_layernorm": "ffn_norm"}),
}
PROJ = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v",
        "self_attn.o_proj": "attn_output", "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up",
        "mlp.down_proj": "ffn_down", "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm"}


def llama3_factors(rope, dim):
    """LlamaModel.generate_extra_tensors: the divisors of llama3 rope scaling."""
    import math
    base = rope.get("rope_theta", 10000.0)
    freqs = 1.0 / (base ** (np.arange(0, dim, 2, dtype=np.float32) / dim))
    factor, lo, hi = rope.get("factor", 8.0), rope.get("low_freq_factor", 1.0), rope.get("high_freq_factor", 4.0)
    old = rope.get("original_max_position_embeddings", 8192)
    out = []
    for f in freqs:
        wl = 2 * math.pi / f
        if wl < old / hi:
            out.append(1)
        elif wl > old / lo:
            out.append(factor)
        else:
            sm = (old / wl - lo) / (hi - lo)
            out.append(1 / ((1 - sm) / factor + sm))
    return np.array(out, dtype=np.float32)


def write_family(name):
    arch, perm, norms = FAMILY_GGUF[name]
    src = os.path.join(ROOT, "tests", "fixtures", "families", name)
    cfg = json.load(open(os.path.join(src, "config.json")))
    st = load_file(os.path.join(src, "model.safetensors"))
    w = gguf.GGUFWriter(os.path.join(OUT, name + "-f32.gguf"), arch)
    n_layers, nh, nkv, hd = (cfg["num_hidden_layers"], cfg["num_attention_heads"], cfg["num_key_value_heads"],
                             cfg["head_dim"])
    w.add_name("mlstack tiny %s fixture" % name)
    w.add_block_count(n_layers)
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_rope_dimension_count(hd)
    rope = cfg["rope_parameters"]
    w.add_rope_freq_base(rope["rope_theta"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_vocab_size(cfg["vocab_size"])
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    if cfg.get("sliding_window") is not None and "layer_types" in cfg:
        w.add_sliding_window(cfg["sliding_window"])
        w.add_sliding_window_pattern([t == "sliding_attention" for t in cfg["layer_types"]])
    if cfg.get("hidden_act") == "xielu":
        for key, add in (("alpha_n", w.add_xielu_alpha_n), ("alpha_p", w.add_xielu_alpha_p),
                         ("beta", w.add_xielu_beta), ("eps", w.add_xielu_eps)):
            add([float(st["model.layers.%d.mlp.act_fn.%s" % (l, key)].reshape(-1)[0]) for l in range(n_layers)])
    if rope.get("rope_type") == "llama3":
        w.add_tensor("rope_freqs.weight", llama3_factors(rope, hd))
    w.add_tensor("token_embd.weight", st["model.embed_tokens.weight"])
    w.add_tensor("output_norm.weight", st["model.norm.weight"])
    if "lm_head.weight" in st:
        w.add_tensor("output.weight", st["lm_head.weight"])
    for l in range(n_layers):
        p, b = "model.layers.%d." % l, "blk.%d." % l
        for hf, gg in norms.items():
            w.add_tensor(b + gg + ".weight", st[p + hf + ".weight"])
        for hf, gg in PROJ.items():
            for suffix in (".weight", ".bias"):
                if p + hf + suffix not in st:
                    continue
                x = st[p + hf + suffix]
                if perm and hf in ("self_attn.q_proj", "self_attn.k_proj"):
                    x = permute(x, nh if hf.endswith("q_proj") else nkv)
                w.add_tensor(b + gg + suffix, x)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


IQ_BLOCK_TYPES = [T.IQ4_XS, T.IQ2_XXS, T.IQ2_XS, T.IQ2_S, T.IQ3_XXS, T.IQ3_S, T.IQ1_S, T.IQ1_M]


def iq_blocks(rng, t, rows, cols, scale=None):
    """Random blocks of i-quant t whose f16 d is scale (an array [rows, blocks]) or modest random
    values; IQ1_M keeps d in the top nibbles of its four scale words (bytes 48..55)."""
    block, size = GGML_QUANT_SIZES[t]
    nb = cols // block
    raw = rng.integers(0, 256, size=(rows, nb, size), dtype=np.uint8)
    if scale is None:
        scale = rng.uniform(0.002, 0.05, size=(rows, nb)) * rng.choice([-1, 1], size=(rows, nb))
    d = scale.astype(np.float16).view(np.uint16)
    if t == T.IQ1_M:
        words = raw[:, :, 48:56].copy().view(np.uint16) & np.uint16(0x0FFF)
        for k in range(4):
            words[:, :, k] |= ((d >> np.uint16(4 * k)) & np.uint16(15)) << np.uint16(12)
        raw[:, :, 48:56] = words.view(np.uint8)
    else:
        raw[:, :, 0:2] = d.reshape(rows, nb, 1).view(np.uint8)
    return raw.reshape(rows, nb * size)


def write_iquants():
    rng = np.random.default_rng(20261206)
    w = gguf.GGUFWriter(os.path.join(OUT, "iquants.gguf"), "llama")
    for t in IQ_BLOCK_TYPES:
        q = iq_blocks(rng, t, 2, 512)
        ref = quants.dequantize(q, t).astype(np.float32)
        assert ref.shape == (2, 512) and np.all(np.isfinite(ref)), t.name
        w.add_tensor(t.name, q, raw_shape=q.shape, raw_dtype=t)
        w.add_tensor(t.name + ".ref", ref)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


# llama-iq.gguf: the format of each projection, per layer, and of the output head
IQ_TYPES = [
    {"attn_q": T.IQ4_XS, "attn_k": T.IQ2_XXS, "attn_v": T.IQ2_XS, "attn_output": T.IQ2_S,
     "ffn_gate": T.IQ3_XXS, "ffn_up": T.IQ3_S, "ffn_down": T.IQ1_S},
    {"attn_q": T.IQ1_M, "attn_k": T.IQ4_XS, "attn_v": T.IQ3_S, "attn_output": T.IQ3_XXS,
     "ffn_gate": T.IQ2_S, "ffn_up": T.IQ2_XS, "ffn_down": T.IQ4_XS},
]
IQ_HEAD = T.IQ4_XS


def iq_tensor(rng, t, rows, cols):
    """Random blocks of t with their d set so the weights' standard deviation is about 0.05."""
    nb = cols // GGML_QUANT_SIZES[t][0]
    one = np.ones((rows, nb))
    std = float(np.std(quants.dequantize(iq_blocks(np.random.default_rng(1), t, rows, cols, one), t)))
    scale = (0.05 / std) * rng.uniform(0.5, 1.5, size=(rows, nb)) * rng.choice([-1, 1], size=(rows, nb))
    return iq_blocks(rng, t, rows, cols, scale)


def write_ternary():
    rng = np.random.default_rng(20261208)
    w = gguf.GGUFWriter(os.path.join(OUT, "ternary.gguf"), "llama")
    for t in (T.TQ1_0, T.TQ2_0):
        src = rng.standard_normal((2, 512)).astype(np.float32)
        q = quants.quantize(src, t)
        w.add_tensor(t.name, q, raw_shape=q.shape, raw_dtype=t)
        w.add_tensor(t.name + ".ref", quants.dequantize(q, t).astype(np.float32))
        w.add_tensor(t.name + ".src", src)
        size = GGML_QUANT_SIZES[t][1]
        raw = rng.integers(0, 256, size=(2, 2, size), dtype=np.uint8)
        raw[:, :, size - 2:] = rng.uniform(0.01, 0.1, size=(2, 2, 1)).astype(np.float16).view(np.uint8)
        raw = raw.reshape(2, 2 * size)
        w.add_tensor(t.name + ".raw", raw, raw_shape=raw.shape, raw_dtype=t)
        w.add_tensor(t.name + ".raw.ref", quants.dequantize(raw, t).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


TQ_TYPES = [
    {"attn_q": T.TQ1_0, "attn_k": T.TQ2_0, "attn_v": T.TQ1_0, "attn_output": T.TQ2_0,
     "ffn_gate": T.TQ1_0, "ffn_up": T.TQ2_0, "ffn_down": T.TQ1_0},
    {"attn_q": T.TQ2_0, "attn_k": T.TQ1_0, "attn_v": T.TQ2_0, "attn_output": T.TQ1_0,
     "ffn_gate": T.TQ2_0, "ffn_up": T.TQ1_0, "ffn_down": T.TQ2_0},
]


def tq_tensor(rng, t, rows, cols):
    """Ternary weights (a third each of -1, 0, 1) times d about 0.08 per block, as t's blocks; the
    head (Q4_K) as kq_tensor makes it."""
    if t not in (T.TQ1_0, T.TQ2_0):
        return kq_tensor(rng, t, rows, cols)
    trits = rng.integers(-1, 2, size=(rows, cols)).astype(np.float32)
    d = rng.uniform(0.05, 0.11, size=(rows, cols // 256, 1)).astype(np.float16).astype(np.float32)
    x = (trits.reshape(rows, cols // 256, 256) * d).reshape(rows, cols)
    return quants.quantize(x, t)


def write_tq_model():
    write_block_model("llama-tq.gguf", "mlstack ternary formats fixture", 20261209, TQ_TYPES, T.Q4_K,
                      gguf.LlamaFileType.MOSTLY_TQ2_0, tq_tensor)


def write_iq_model():
    write_block_model("llama-iq.gguf", "mlstack i-quant formats fixture", 20261207, IQ_TYPES, IQ_HEAD,
                      gguf.LlamaFileType.MOSTLY_IQ4_XS, iq_tensor)


def write_corpus():
    os.makedirs(CORPUS, exist_ok=True)
    data = open(os.path.join(OUT, "quants.gguf"), "rb").read()
    open(os.path.join(CORPUS, "valid_quants.gguf"), "wb").write(data)
    open(os.path.join(CORPUS, "bad_truncated_infos.gguf"), "wb").write(data[:300])
    bad = bytearray(data)
    bad[8:16] = (1 << 40).to_bytes(8, "little")  # tensor count
    open(os.path.join(CORPUS, "bad_tensor_count.gguf"), "wb").write(bytes(bad))
    # a tiny file with a tokenizer vocabulary (string arrays) and no tensors
    w = gguf.GGUFWriter(os.path.join(CORPUS, "valid_vocab.gguf"), "llama")
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(["a", "b", "ab", "\u0120", "<|endoftext|>"])
    w.add_token_types([1, 1, 1, 1, 3])
    w.add_token_merges(["a b"])
    w.add_bos_token_id(4)
    w.add_eos_token_id(4)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def mxfp4_to_ggml(blocks, scales):
    """OpenAI MXFP4 blocks [..., nb, 16] (element 2i: low nibble of byte i) and scales [..., nb] ->
    GGML MXFP4 rows [..., nb * 17]."""
    codes = np.stack([blocks & 15, blocks >> 4], axis=-1).reshape(*blocks.shape[:-1], 32)
    packed = codes[..., :16] | (codes[..., 16:] << 4)
    out = np.concatenate([scales[..., None], packed], axis=-1).astype(np.uint8)
    return out.reshape(*blocks.shape[:-2], blocks.shape[-2] * 17)


def write_gpt_oss():
    import torch
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    src = os.path.join(ROOT, "tests", "fixtures", "families", "gpt_oss_mxfp4")
    cfg = json.load(open(os.path.join(src, "config.json")))
    st = load_file(os.path.join(src, "model.safetensors"))
    rope = cfg["rope_parameters"]
    w = gguf.GGUFWriter(os.path.join(OUT, "gpt-oss-mxfp4.gguf"), "gpt-oss")
    w.add_name("mlstack tiny gpt-oss fixture")
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_head_count(cfg["num_attention_heads"])
    w.add_head_count_kv(cfg["num_key_value_heads"])
    w.add_key_length(cfg["head_dim"])
    w.add_value_length(cfg["head_dim"])
    w.add_rope_freq_base(rope["rope_theta"])
    w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    w.add_rope_scaling_factor(rope["factor"])
    w.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_expert_count(cfg["num_local_experts"])
    w.add_expert_used_count(cfg["num_experts_per_tok"])
    w.add_expert_feed_forward_length(cfg["intermediate_size"])
    w.add_sliding_window(cfg["sliding_window"])
    w.add_bos_token_id(cfg["bos_token_id"])
    w.add_eos_token_id(cfg["eos_token_id"])
    w.add_tensor("token_embd.weight", st["model.embed_tokens.weight"])
    w.add_tensor("output_norm.weight", st["model.norm.weight"])
    w.add_tensor("output.weight", st["lm_head.weight"])
    names = {"input_layernorm.weight": "attn_norm.weight", "post_attention_layernorm.weight": "post_attention_norm.weight",
             "self_attn.sinks": "attn_sinks.weight", "mlp.router.weight": "ffn_gate_inp.weight",
             "mlp.router.bias": "ffn_gate_inp.bias"}
    for p in ("q", "k", "v"):
        for k in ("weight", "bias"):
            names["self_attn.%s_proj.%s" % (p, k)] = "attn_%s.%s" % (p, k)
    for k in ("weight", "bias"):
        names["self_attn.o_proj." + k] = "attn_output." + k
    for il in range(cfg["num_hidden_layers"]):
        pre = "model.layers.%d." % il
        for hf, gg in names.items():
            w.add_tensor("blk.%d.%s" % (il, gg), st[pre + hf])
        gu_b, gu_s = st[pre + "mlp.experts.gate_up_proj_blocks"], st[pre + "mlp.experts.gate_up_proj_scales"]
        parts = {"gate": (gu_b[:, ::2], gu_s[:, ::2]), "up": (gu_b[:, 1::2], gu_s[:, 1::2]),
                 "down": (st[pre + "mlp.experts.down_proj_blocks"], st[pre + "mlp.experts.down_proj_scales"])}
        for name, (b, sc) in parts.items():
            rows = mxfp4_to_ggml(b, sc)
            deq = quants.dequantize(rows, T.MXFP4)  # gguf-py's reading of the repacked rows
            ref = convert_moe_packed_tensors(torch.from_numpy(np.ascontiguousarray(b)),
                                             torch.from_numpy(np.ascontiguousarray(sc)), dtype=torch.float32)
            assert np.array_equal(deq, ref.transpose(1, 2).numpy()), name  # transformers' values
            w.add_tensor("blk.%d.ffn_%s_exps.weight" % (il, name), rows, raw_dtype=T.MXFP4)
        gub = st[pre + "mlp.experts.gate_up_proj_bias"]
        w.add_tensor("blk.%d.ffn_gate_exps.bias" % il, np.ascontiguousarray(gub[:, ::2]))
        w.add_tensor("blk.%d.ffn_up_exps.bias" % il, np.ascontiguousarray(gub[:, 1::2]))
        w.add_tensor("blk.%d.ffn_down_exps.bias" % il, st[pre + "mlp.experts.down_proj_bias"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    write_types()
    write_quants()
    write_llama()
    write_kq()
    write_iquants()
    write_iq_model()
    write_ternary()
    write_tq_model()
    for fam in FAMILY_GGUF:
        write_family(fam)
    write_gpt_oss()
    write_corpus()
