#!/usr/bin/env python3
"""Build the tiny reference models under tests/fixtures/models/ and record
what Hugging Face transformers computes with them.

Each model is a 2-layer decoder with random weights drawn from a fixed seed.
It is written with `save_pretrained`, loaded back from disk (so the reference
is computed from exactly the files the C engine reads), and run in float32
with eager attention.  `reference.json` beside the weights holds, for two
prompts, the logits at every prompt position and 32 greedy tokens.
`kv_bf16.bin` beside it holds the logits of the same prompts at every position
when keys and values are stored as bfloat16 (rounded to nearest even, attention
in f32), the engine's MLSTACK_KV_BF16 cache: f32 little-endian, row-major
[positions of case 0 + positions of case 1, vocab].

Rerunnable: the same versions of numpy/torch/transformers give the same bytes.

    python3 tools/make_fixtures.py            # all models
    python3 tools/make_fixtures.py qwen3 llama  # only these

Families (tests/fixtures/families/, checked by tests/test_families.c): one
tiny model per architecture and per option that changes the math (Gemma 1/2/3,
Phi-3 longrope, Granite, OLMo 2, RoPE variants, sliding windows, MoE, ...).
Each holds one prompt of PROMPT_LONG tokens, longer than every sliding window
and every original RoPE context in them; `logits.bin` beside reference.json
holds transformers' logits at every position (f32 little-endian, row-major
[positions, vocab]) and reference.json the ids, 32 greedy tokens and what the
options did (how much soft-capping clipped).

Needs: torch, transformers, numpy, safetensors.  Run time: under a minute on
one core.
"""

import json
import os
import shutil
import sys
import zlib

import numpy as np
import torch
from transformers import (
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT_DIR = os.path.join(ROOT, "tests", "fixtures", "models")

PROMPT_LENGTHS = (5, 11)
NEW_TOKENS = 32
MIN_MARGIN = 1e-3  # top-1 minus top-2 logit, below this a prompt is rejected
MIN_DISTINCT = 8  # a greedy run with fewer distinct tokens is "too repetitive"
MAX_ATTEMPTS = 200

# Shape shared by every model (overridden per model where noted).
COMMON = dict(
    hidden_size=64,
    intermediate_size=160,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=256,
    rms_norm_eps=1e-5,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=None,
)

# config_style:
#   "transformers-5": config.json exactly as transformers 5 writes it
#                     (rope_parameters {...rope_theta...}, "dtype").
#   "transformers-4": rewritten to the older layout most Hub repositories
#                     still ship (top-level rope_theta, rope_scaling, "torch_dtype").
# Both load to the same model in transformers; the C loader must read both.
MODELS = [
    dict(name="llama", cls=LlamaForCausalLM, cfg=LlamaConfig, vocab=512,
         style="transformers-5"),
    dict(name="llama_tied", cls=LlamaForCausalLM, cfg=LlamaConfig, vocab=517,
         extra=dict(tie_word_embeddings=True, intermediate_size=168),
         style="transformers-4"),
    dict(name="llama3_rope", cls=LlamaForCausalLM, cfg=LlamaConfig, vocab=600,
         extra=dict(
             rope_theta=500000.0,
             rope_scaling={"rope_type": "llama3", "factor": 8.0,
                           "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                           "original_max_position_embeddings": 64},
             bos_token_id=5, eos_token_id=[6, 7]),
         style="transformers-4"),
    dict(name="llama_linear_rope", cls=LlamaForCausalLM, cfg=LlamaConfig, vocab=512,
         extra=dict(rope_scaling={"rope_type": "linear", "factor": 2.0}),
         style="transformers-5"),
    dict(name="mistral", cls=MistralForCausalLM, cfg=MistralConfig, vocab=528,
         extra=dict(sliding_window=None),
         style="transformers-5"),
    dict(name="qwen2", cls=Qwen2ForCausalLM, cfg=Qwen2Config, vocab=640,
         extra=dict(tie_word_embeddings=True, rope_theta=1000000.0,
                    intermediate_size=136),
         style="transformers-4"),
    dict(name="qwen3", cls=Qwen3ForCausalLM, cfg=Qwen3Config, vocab=520,
         extra=dict(head_dim=32, rope_theta=1000000.0, intermediate_size=152,
                    rms_norm_eps=1e-6),
         style="transformers-5"),
    dict(name="llama_bf16", cls=LlamaForCausalLM, cfg=LlamaConfig, vocab=512,
         dtype=torch.bfloat16, style="transformers-4"),
    dict(name="llama_f16", cls=LlamaForCausalLM, cfg=LlamaConfig, vocab=512,
         dtype=torch.float16, style="transformers-5"),
    dict(name="llama_sharded", cls=LlamaForCausalLM, cfg=LlamaConfig, vocab=544,
         shards=2, style="transformers-5"),
]

DTYPE_NAMES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float16: "float16"}


def model_seed(name):
    return zlib.crc32(name.encode()) & 0x7FFFFFFF


def build_config(spec):
    kw = dict(COMMON)
    kw["vocab_size"] = spec["vocab"]
    kw.update(spec.get("extra", {}))
    rope_theta = kw.pop("rope_theta", 10000.0)
    rope_scaling = kw.pop("rope_scaling", None)
    # transformers 5 takes RoPE settings as one dict.
    rope = {"rope_type": "default", "rope_theta": rope_theta}
    if rope_scaling:
        rope.update(rope_scaling)
        rope["rope_theta"] = rope_theta
    kw["rope_parameters"] = rope
    cfg = spec["cfg"](**kw)
    cfg._attn_implementation = "eager"
    return cfg


def init_weights(model, seed):
    """Weights big enough that the logits are spread out and greedy decoding
    wanders: matrices N(0, 0.15), biases N(0, 0.2), norm gains 1 + N(0, 0.1)."""
    rng = np.random.default_rng(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            shape = tuple(p.shape)
            if "norm" in name:
                v = 1.0 + 0.1 * rng.standard_normal(shape)
            elif name.endswith(".bias"):
                v = 0.2 * rng.standard_normal(shape)
            elif "embed_tokens" in name:
                v = 0.5 * rng.standard_normal(shape)
            else:
                v = 0.15 * rng.standard_normal(shape)
            p.copy_(torch.from_numpy(v.astype(np.float32)))


def to_legacy_config(path):
    """Rewrite config.json to the transformers-4 layout (rope_theta at the top,
    rope_scaling for the rest, torch_dtype) keeping the key order sorted as
    transformers writes it."""
    with open(path) as f:
        cfg = json.load(f)
    rope = cfg.pop("rope_parameters")
    cfg["rope_theta"] = rope.pop("rope_theta")
    cfg["rope_scaling"] = None if rope.get("rope_type", "default") == "default" else rope
    cfg["torch_dtype"] = cfg.pop("dtype")
    with open(path, "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def kv_rounding_attention(dtype):
    """An attention implementation for transformers: its model's own eager attention on keys and
    values rounded to `dtype` (torch rounds to nearest even) and back to f32, what a cache that
    stores them in `dtype` gives. The keys are the ones eager attention receives, after RoPE (and
    the key norm), from the cache during generation, so every position is rounded once whatever
    the chunking."""
    import importlib
    from transformers import AttentionInterface, AttentionMaskInterface
    from transformers.masking_utils import eager_mask

    def attend(module, query, key, value, attention_mask, **kw):
        eager = importlib.import_module(type(module).__module__).eager_attention_forward
        return eager(module, query, key.to(dtype).float(), value.to(dtype).float(), attention_mask, **kw)

    name = "kv_" + str(dtype).replace("torch.", "")
    AttentionInterface.register(name, attend)
    AttentionMaskInterface.register(name, eager_mask)  # the additive mask eager attention expects
    return name


def logits_with_attention(model, ids, impl):
    model.set_attn_implementation(impl)
    try:
        with torch.no_grad():
            return model(torch.tensor([ids])).logits[0].float()
    finally:
        model.set_attn_implementation("eager")


def margin_of(row):
    top2 = torch.topk(row.float(), 2).values
    return float(top2[0] - top2[1])


def prompt_ids(seed, length, attempt, vocab, bos):
    rng = np.random.default_rng([seed, length, attempt])
    return [int(bos)] + [int(x) for x in rng.integers(3, vocab, size=length - 1)]


def run_case(model, ids):
    """Logits at every prompt position, 32 greedy tokens, and the smallest
    top-1/top-2 gap over all of them."""
    x = torch.tensor([ids], dtype=torch.long)
    # generate() fills unset options from model.generation_config, which holds
    # the saved eos ids; replace it so no EOS can end the run early.
    model.generation_config = GenerationConfig()
    with torch.no_grad():
        logits = model(x).logits[0].float()
        gen = GenerationConfig(
            do_sample=False, num_beams=1, max_new_tokens=NEW_TOKENS,
            eos_token_id=None, pad_token_id=0, bos_token_id=None,
            temperature=None, top_p=None, top_k=None, repetition_penalty=None,
            return_dict_in_generate=True, output_logits=True)
        out = model.generate(x, attention_mask=torch.ones_like(x), generation_config=gen)
    greedy = [int(t) for t in out.sequences[0, len(ids):]]
    assert len(greedy) == NEW_TOKENS, len(greedy)
    margins = [margin_of(r) for r in logits]
    for step, lg in enumerate(out.logits):
        row = lg[0].float()
        # plain argmax: nothing between the raw logits and the chosen token
        assert int(torch.argmax(row)) == greedy[step], (step, int(torch.argmax(row)), greedy[step])
        margins.append(margin_of(row))
    return logits, greedy, min(margins)


def fmt(v):
    v = float(np.float32(v))
    assert np.isfinite(v)
    return "%.9g" % v


def write_reference(path, name, arch, dtype_name, compute, style, cases):
    # Hand-written so each case is a few long lines instead of thousands.
    parts = ['{"model": %s, "architecture": %s, "dtype": %s, "compute": %s, "config_style": %s,\n "cases": [\n'
             % tuple(json.dumps(s) for s in (name, arch, dtype_name, compute, style))]
    for i, (ids, logits, greedy) in enumerate(cases):
        rows = ",\n   ".join("[" + ", ".join(fmt(v) for v in row) + "]" for row in logits.tolist())
        parts.append('  {"ids": %s,\n   "greedy": %s,\n   "logits": [\n   %s]}%s\n'
                     % (json.dumps(ids), json.dumps(greedy), rows, "," if i + 1 < len(cases) else ""))
    parts.append(" ]}\n")
    text = "".join(parts)
    json.loads(text)  # must parse
    with open(path, "w") as f:
        f.write(text)


def make(spec):
    name = spec["name"]
    seed = model_seed(name)
    dtype = spec.get("dtype", torch.float32)
    out = os.path.join(OUT_DIR, name)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)

    cfg = build_config(spec)
    model = spec["cls"](cfg).eval()
    init_weights(model, seed)
    model = model.to(dtype)
    model.config.dtype = dtype
    model.generation_config = GenerationConfig(
        bos_token_id=cfg.bos_token_id, eos_token_id=cfg.eos_token_id)

    save_kw = {}
    if spec.get("shards"):
        total = sum(p.numel() * p.element_size() for p in model.state_dict().values())
        save_kw["max_shard_size"] = total // spec["shards"] + 4096
    model.save_pretrained(out, **save_kw)
    if spec["style"] == "transformers-4":
        to_legacy_config(os.path.join(out, "config.json"))

    files = sorted(os.listdir(out))
    shards = [f for f in files if f.endswith(".safetensors")]
    if spec.get("shards"):
        assert len(shards) == spec["shards"] and "model.safetensors.index.json" in files, files
    else:
        assert shards == ["model.safetensors"], files

    # The reference comes from the files on disk, upcast to f32 as the engine does.
    loaded = spec["cls"].from_pretrained(out, dtype="auto", attn_implementation="eager").eval()
    for k, v in loaded.state_dict().items():
        assert v.dtype == dtype, (k, v.dtype)
        assert torch.equal(v, model.state_dict()[k]), k
    loaded = loaded.float()
    assert loaded.config.vocab_size == spec["vocab"]

    cases, case_margins, attempts = [], [], []
    for n in PROMPT_LENGTHS:
        for attempt in range(MAX_ATTEMPTS):
            ids = prompt_ids(seed, n, attempt, spec["vocab"], cfg.bos_token_id)
            logits, greedy, m = run_case(loaded, ids)
            if m >= MIN_MARGIN and len(set(greedy)) >= MIN_DISTINCT:
                break
        else:
            raise SystemExit("%s: no usable prompt of length %d" % (name, n))
        cases.append((ids, logits, greedy))
        case_margins.append(m)
        attempts.append(attempt)

    compute = "f32" if dtype == torch.float32 else "f32 from %s weights" % {
        torch.bfloat16: "bf16", torch.float16: "f16"}[dtype]
    arch = loaded.config.architectures[0]
    assert arch == spec["cls"].__name__, arch
    write_reference(os.path.join(out, "reference.json"), name, arch,
                    DTYPE_NAMES[dtype], compute, spec["style"], cases)
    impl = kv_rounding_attention(torch.bfloat16)
    kv = torch.cat([logits_with_attention(loaded, ids, impl) for ids, _, _ in cases])
    # the rounding must matter (else the file checks nothing the f32 reference does not)
    assert float((kv - torch.cat([c[1] for c in cases])).abs().max()) > 1e-3, name
    kv.numpy().astype("<f4").tofile(os.path.join(out, "kv_bf16.bin"))
    nbytes = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    distinct = min(len(set(c[2])) for c in cases)
    return dict(name=name, files=len(os.listdir(out)), bytes=nbytes, margin=min(case_margins),
                attempts=attempts, distinct=distinct)


# ---- families: one long prompt, logits as binary, architecture options ----
FAM_DIR = os.path.join(ROOT, "tests", "fixtures", "families")
PROMPT_LONG = 112
FAM_COMMON = dict(
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    max_position_embeddings=256,
    rms_norm_eps=1e-6,
    bos_token_id=1,
    eos_token_id=2,
    pad_token_id=0,
)
FAM_VOCAB = 128
# FAM_COMMON keys a Mamba2Config has no use for
MAMBA2_DROP = ("intermediate_size", "num_attention_heads", "num_key_value_heads", "max_position_embeddings",
               "rms_norm_eps")

# Each entry: name, transformers class name, config overrides (rope_theta and
# rope_scaling as in build_config), "drop" (common keys the config class does
# not take), weight dtype.  Comments say what the fixture exercises.
FAMILIES = [
    # (1 + w) RMSNorm, sqrt(D) embedding scale, GeGLU (tanh), tied head
    dict(name="gemma", cls="GemmaForCausalLM", extra=dict(hidden_act="gelu_pytorch_tanh"), embed_std=0.15),
    # + pre/post norms, attention and final soft-capping that clip, query_pre_attn_scalar,
    # sliding (window 24 < 112) / global layers alternating
    dict(name="gemma2", cls="Gemma2ForCausalLM",
         extra=dict(num_hidden_layers=3, query_pre_attn_scalar=24, sliding_window=24, tie_word_embeddings=False,
                    attn_logit_softcapping=1.5, final_logit_softcapping=6.0),
         head_std=0.75, clip=dict(final=6.0, attn=1.5)),
    # + per-head (1 + w) q/k norms, per-layer RoPE bases (local 10000, global 1e6 with
    # linear scaling), sliding pattern from layer_types, final soft-capping
    dict(name="gemma3", cls="Gemma3ForCausalLM",
         extra=dict(num_hidden_layers=3, query_pre_attn_scalar=16, sliding_window=20,
                    layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                    rope_parameters={"full_attention": {"rope_type": "linear", "factor": 4.0, "rope_theta": 1000000.0},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
                    final_logit_softcapping=5.0, tie_word_embeddings=False),
         head_std=0.75, clip=dict(final=5.0), dtype=torch.bfloat16),
    # Gemma 4: norms applied as stored, unscaled scores of RMS-normalized q / k / v heads, a random
    # layer_scalar per layer, sliding (window 20) / full layers, proportional RoPE on full layers
    # (2 of 8 pairs rotate), the last 2 layers reading layers 1 and 2's KV (num_kv_shared_layers),
    # per-layer input embeddings (8 per layer)
    dict(name="gemma4", cls="Gemma4ForCausalLM",
         extra=dict(num_hidden_layers=5, sliding_window=20, global_head_dim=16, num_kv_shared_layers=2,
                    layer_types=["sliding_attention", "sliding_attention", "full_attention", "sliding_attention",
                                 "full_attention"],
                    hidden_size_per_layer_input=8, vocab_size_per_layer_input=FAM_VOCAB,
                    rope_parameters={"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                        "rope_theta": 1000000.0},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
         layer_scalar=True, mul={"q_norm": 0.5}, embed_std=0.35, prompt_len=128),
    # Gemma 4 with attention_k_eq_v (full layers: v from k_proj, no v_proj), the default layer
    # pattern (the last layer forced full), proportional RoPE with factor 2 on half the pairs, no
    # per-layer inputs, final soft-capping that clips, untied head
    dict(name="gemma4_keqv", cls="Gemma4ForCausalLM",
         extra=dict(num_hidden_layers=3, sliding_window=24, global_head_dim=16, attention_k_eq_v=True,
                    num_global_key_value_heads=2, hidden_size_per_layer_input=0, final_logit_softcapping=5.0,
                    tie_word_embeddings=False,
                    rope_parameters={"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.5,
                                                        "rope_theta": 1000000.0, "factor": 2.0},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
         layer_scalar=True, head_std=0.75, clip=dict(final=5.0), prompt_len=128),
    # Gemma 4 as published: full layers with heads twice as wide (global_head_dim 32 against
    # head_dim 16, as 512 against 256), proportional RoPE over the full head (4 of 16 pairs
    # rotate), the last 2 layers reading layer 2's (sliding) and layer 1's (full) KV, per-layer
    # inputs, final soft-capping
    dict(name="gemma4_hd", cls="Gemma4ForCausalLM",
         extra=dict(num_hidden_layers=5, sliding_window=20, global_head_dim=32, num_kv_shared_layers=2,
                    layer_types=["sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                                 "full_attention"],
                    hidden_size_per_layer_input=8, vocab_size_per_layer_input=FAM_VOCAB,
                    final_logit_softcapping=30.0,
                    rope_parameters={"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                        "rope_theta": 1000000.0},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
         layer_scalar=True, mul={"q_norm": 0.5}, embed_std=0.35, prompt_len=128),
    # Gemma 4 31B's attention: full layers of global_head_dim 32 with attention_k_eq_v and one KV
    # head (num_global_key_value_heads 1, sliding layers 2), no per-layer inputs
    dict(name="gemma4_hd_keqv", cls="Gemma4ForCausalLM",
         extra=dict(num_hidden_layers=4, sliding_window=24, global_head_dim=32, attention_k_eq_v=True,
                    num_global_key_value_heads=1, hidden_size_per_layer_input=0, tie_word_embeddings=False,
                    layer_types=["sliding_attention", "full_attention", "sliding_attention", "full_attention"],
                    rope_parameters={"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                        "rope_theta": 1000000.0},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
         layer_scalar=True, head_std=0.75, prompt_len=120),
    # Gemma 4 as its multimodal checkpoint: text_config, the text model under model.language_model,
    # a (tiny) vision tower mlstack skips; per-layer inputs of 4, the last layer reading layer 1's KV
    dict(name="gemma4_vl", cls="Gemma4ForConditionalGeneration",
         extra=dict(num_hidden_layers=3, sliding_window=20, global_head_dim=16, num_kv_shared_layers=1,
                    layer_types=["sliding_attention", "full_attention", "full_attention"],
                    hidden_size_per_layer_input=4, vocab_size_per_layer_input=FAM_VOCAB,
                    rope_parameters={"full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                        "rope_theta": 1000000.0},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
         vision=dict(hidden_size=16, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2, head_dim=8,
                     intermediate_size=32, position_embedding_size=64),
         layer_scalar=True, mul={"q_norm": 0.5}, embed_std=0.35, prompt_len=120),
    # Gemma 3n: 4 AltUp streams (the active one 0, correct_output_scale), Laurel of rank 8,
    # activation sparsity (0.95, 0.95, then 0.5 on layer 3), per-layer intermediate_size (one
    # value), per-layer inputs of 8, the last 2 layers reading layers 2 and 1's KV, final
    # soft-capping; norms applied as stored, q/k/v heads RMS-normalized, scores unscaled (AltUp's
    # weights drawn smaller and q_norm halved: otherwise transformers' own f32 and f64 differ by 4e-4)
    dict(name="gemma3n", cls="Gemma3nForCausalLM",
         extra=dict(num_hidden_layers=5, sliding_window=20, num_kv_shared_layers=2, intermediate_size=[64] * 5,
                    layer_types=["sliding_attention", "full_attention", "sliding_attention", "sliding_attention",
                                 "full_attention"],
                    hidden_size_per_layer_input=8, vocab_size_per_layer_input=FAM_VOCAB, altup_num_inputs=4,
                    laurel_rank=8, activation_sparsity_pattern=[0.95, 0.95, 0.0, 0.5, 0.0],
                    final_logit_softcapping=30.0,
                    rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
         std={"altup": 0.1}, mul={"q_norm": 0.5}, embed_std=0.35, prompt_len=128),
    # Gemma 3n's other options: 3 streams with the active one 1 (the per-layer input still goes to
    # streams 1 and 2, the active one included), no correct_output_scale, no shared-KV layers,
    # the default 4:1 pattern, sparsity on the first 2 layers only, untied head, soft-capping 50
    dict(name="gemma3n_alt", cls="Gemma3nForCausalLM",
         extra=dict(num_hidden_layers=5, sliding_window=24, num_kv_shared_layers=0, altup_num_inputs=3,
                    altup_active_idx=1, altup_correct_scale=False, laurel_rank=4,
                    activation_sparsity_pattern=[0.9, 0.6, 0.0, 0.0, 0.0], hidden_size_per_layer_input=4,
                    vocab_size_per_layer_input=96, final_logit_softcapping=50.0, tie_word_embeddings=False,
                    rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}}),
         std={"altup": 0.1}, mul={"q_norm": 0.5}, embed_std=0.35, prompt_len=120),
    # fused qkv_proj / gate_up_proj, partial rotary (half), longrope beyond the original
    # context (64 < 112), sliding window; recorded token by token (see run_incremental), and as
    # transformers' generate runs it (the prompt in one forward: long factors from row 0)
    dict(name="phi3", cls="Phi3ForCausalLM",
         extra=dict(partial_rotary_factor=0.5, original_max_position_embeddings=64, sliding_window=40,
                    rope_scaling={"rope_type": "longrope", "short_factor": [1.0, 1.7],
                                  "long_factor": [1.3, 6.0]}),
         drop=("head_dim",), incremental=True, generate=True),
    # embedding / residual / attention / logits multipliers
    dict(name="granite", cls="GraniteForCausalLM",
         extra=dict(embedding_multiplier=3.0, residual_multiplier=0.6, attention_multiplier=0.2,
                    logits_scaling=0.5)),
    # no pre-norms, post-attention / post-FFN norms, q/k RMSNorm over the whole projection
    dict(name="olmo2", cls="Olmo2ForCausalLM", drop=("head_dim",)),
    # yarn past its original context (32 < 112), derived attention factor; bf16 weights
    dict(name="llama_yarn", cls="LlamaForCausalLM",
         extra=dict(rope_scaling={"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}),
         dtype=torch.bfloat16),
    # yarn with mscale / mscale_all_dim and beta_fast, untruncated correction range
    dict(name="qwen3_yarn", cls="Qwen3ForCausalLM",
         extra=dict(rope_theta=1000000.0,
                    rope_scaling={"rope_type": "yarn", "factor": 8.0, "original_max_position_embeddings": 48,
                                  "mscale": 1.2, "mscale_all_dim": 0.8, "beta_fast": 16.0, "truncate": False})),
    # use_sliding_window: layers from max_window_layers on slide (window 16 < 112), q/k/v biases
    dict(name="qwen2_window", cls="Qwen2ForCausalLM",
         extra=dict(num_hidden_layers=3, use_sliding_window=True, sliding_window=16, max_window_layers=1)),
    # mixture of experts: top-2 of 4 (renormalized), sliding window
    dict(name="mixtral", cls="MixtralForCausalLM",
         extra=dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32, sliding_window=40),
         drop=("head_dim",)),
    # top-1 of 4 plus a gated shared expert, no renormalization, q/k/v biases
    dict(name="qwen2_moe", cls="Qwen2MoeForCausalLM",
         extra=dict(num_experts=4, num_experts_per_tok=1, moe_intermediate_size=32,
                    shared_expert_intermediate_size=48, norm_topk_prob=False)),
    # top-2 of 6 renormalized, per-head q/k norms, layer 0 dense (mlp_only_layers)
    dict(name="qwen3_moe", cls="Qwen3MoeForCausalLM",
         extra=dict(num_experts=6, num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=True,
                    mlp_only_layers=[0])),
    # top-2 of 4 without renormalization, q/k norms over the whole projection
    dict(name="olmoe", cls="OlmoeForCausalLM",
         extra=dict(num_experts=4, num_experts_per_tok=2, intermediate_size=32), drop=("head_dim",)),
    # Pythia: LayerNorm with bias, per-head fused query_key_value, parallel residual, exact GELU
    # MLP with biases, partial rotary (half of head_dim 8); config keys as older Hub repositories
    # write them (rotary_pct, rotary_emb_base)
    dict(name="gpt_neox", cls="GPTNeoXForCausalLM", extra=dict(partial_rotary_factor=0.5, hidden_act="gelu"),
         drop=("head_dim", "num_key_value_heads", "rms_norm_eps"), legacy="neox"),
    # sequential residual, no attention biases, tanh GELU, default partial rotary (1/4 of 16)
    dict(name="gpt_neox_seq", cls="GPTNeoXForCausalLM",
         extra=dict(use_parallel_residual=False, attention_bias=False, hidden_act="gelu_new", num_attention_heads=2),
         drop=("head_dim", "num_key_value_heads", "rms_norm_eps")),
    # StableLM 2: LayerNorm with bias, SwiGLU, q/k/v biases, GQA, partial rotary (1/4 of 16)
    dict(name="stablelm", cls="StableLmForCausalLM", extra=dict(num_attention_heads=2, num_key_value_heads=1, use_qkv_bias=True),
         drop=("head_dim", "rms_norm_eps")),
    # parallel residual (the MLP reads ln1 x), per-head q/k LayerNorms with their own weights
    dict(name="stablelm_par", cls="StableLmForCausalLM",
         extra=dict(num_attention_heads=2, use_parallel_residual=True, qk_layernorm=True),
         drop=("head_dim", "rms_norm_eps")),
    # gpt-oss: learned attention sinks that dominate (3 + the random init: removing them must move
    # the logits), sliding (window 24) / full layers, yarn past its original context (32 < 112),
    # top-2 of 4 experts with router and expert biases, the clamped SwiGLU with a limit that bites
    dict(name="gpt_oss", cls="GptOssForCausalLM",
         extra=dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32, sliding_window=24,
                    swiglu_limit=1.5, layer_types=["sliding_attention", "full_attention"],
                    rope_parameters={"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                     "truncate": False, "original_max_position_embeddings": 32,
                                     "rope_theta": 150000.0}),
         sinks=3.0, ablate=True),
    # the same with the experts in MXFP4 as OpenAI's checkpoints store them (_blocks + _scales):
    # logits of transformers' own dequantization (integrations.mxfp4), and blocks with extreme
    # scales: 2^-127 .. 2^-125 (subnormal products) and 8 times the block's own; the SwiGLU limit
    # at its default (7), the one llama.cpp's GGUF graph hardcodes (tools/make_gguf_fixtures.py
    # writes this model as gpt-oss-mxfp4.gguf)
    dict(name="gpt_oss_mxfp4", cls="GptOssForCausalLM",
         extra=dict(num_local_experts=4, num_experts_per_tok=2, intermediate_size=32, sliding_window=24,
                    layer_types=["sliding_attention", "full_attention"],
                    rope_parameters={"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
                                     "truncate": False, "original_max_position_embeddings": 32,
                                     "rope_theta": 150000.0}),
         sinks=3.0, mxfp4=True),
    # dynamic NTK RoPE past max_position_embeddings (64 < 112), recorded token by token: each
    # position's frequencies come from the length up to it (see run_incremental)
    dict(name="llama_dynamic", cls="LlamaForCausalLM",
         extra=dict(max_position_embeddings=64, rope_scaling={"rope_type": "dynamic", "factor": 4.0}),
         incremental=True),
    # Qwen3.5 hybrid: gated delta-net layers (causal conv over q|k|v, L2-normalised q/k, decay
    # g = -exp(A_log) softplus(a + dt_bias), beta = sigmoid(b), gated output RMSNorm; 2 key heads
    # serving 4 value heads, head dims 8 and 12) around gated full attention (q_proj's doubled
    # width, sigmoid output gate, (1 + w) q/k norms, partial rotary 1/4); layer order
    # linear, full, linear, linear, full; dense MLP. 128-token prompt
    dict(name="qwen3_5", cls="Qwen3_5ForCausalLM",
         extra=dict(num_hidden_layers=5, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
                    linear_value_head_dim=12, linear_conv_kernel_dim=4,
                    layer_types=["linear_attention", "full_attention", "linear_attention", "linear_attention",
                                 "full_attention"],
                    partial_rotary_factor=0.25, tie_word_embeddings=False),
         plus_one=True, prompt_len=128, delta=True),
    # Qwen3.5-MoE: top-2 of 4 always renormalized, a shared expert with its sigmoid gate;
    # full attention first, conv width 3, k heads = v heads (2 x 8 / 2 x 8)
    dict(name="qwen3_5_moe", cls="Qwen3_5MoeForCausalLM",
         extra=dict(num_hidden_layers=3, linear_num_key_heads=2, linear_num_value_heads=2, linear_key_head_dim=8,
                    linear_value_head_dim=8, linear_conv_kernel_dim=3,
                    layer_types=["full_attention", "linear_attention", "linear_attention"],
                    num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                    shared_expert_intermediate_size=48, partial_rotary_factor=0.25, tie_word_embeddings=False),
         plus_one=True, prompt_len=128, delta=True),
    # Qwen3-Next: q|k|v|z and b|a fused per key head group (in_proj_qkvz, in_proj_ba), top-1
    # of 4 without renormalization plus the gated shared expert, layer 2 dense (mlp_only_layers);
    # 1 key head serving 3 value heads
    dict(name="qwen3_next", cls="Qwen3NextForCausalLM",
         extra=dict(num_hidden_layers=3, linear_num_key_heads=1, linear_num_value_heads=3, linear_key_head_dim=8,
                    linear_value_head_dim=8, linear_conv_kernel_dim=4,
                    layer_types=["linear_attention", "linear_attention", "full_attention"],
                    num_experts=4, num_experts_per_tok=1, moe_intermediate_size=32, norm_topk_prob=False,
                    shared_expert_intermediate_size=48, mlp_only_layers=[2], partial_rotary_factor=0.5,
                    tie_word_embeddings=False),
         plus_one=True, prompt_len=128, delta=True),
    # Qwen3.5 as its vision-language checkpoint: config.json's text_config, the text model under
    # model.language_model, a (tiny) vision tower mlstack skips; text-only prompt
    dict(name="qwen3_5_vl", cls="Qwen3_5ForConditionalGeneration",
         extra=dict(num_hidden_layers=3, linear_num_key_heads=2, linear_num_value_heads=4, linear_key_head_dim=8,
                    linear_value_head_dim=8, linear_conv_kernel_dim=4,
                    layer_types=["linear_attention", "linear_attention", "full_attention"],
                    partial_rotary_factor=0.25, tie_word_embeddings=False),
         vision=dict(depth=1, hidden_size=16, num_heads=2, intermediate_size=32, out_hidden_size=32, patch_size=4,
                     spatial_merge_size=2, temporal_patch_size=2, num_position_embeddings=16),
         plus_one=True, prompt_len=120, delta=True),
    # LFM2 (hybrid): gated short-convolution layers (conv_L_cache 3) between GQA layers with
    # per-head q/k norms, tied head; a 128-token prompt (the recurrent state crosses 8 KV pages);
    # the conv input projections at 0.15 (their outputs multiply three ways: B * x * C)
    dict(name="lfm2", cls="Lfm2ForCausalLM",
         extra=dict(num_hidden_layers=6, block_auto_adjust_ff_dim=False, conv_L_cache=3, norm_eps=1e-5,
                    layer_types=["conv", "full_attention", "conv", "conv", "full_attention", "conv"]),
         drop=("rms_norm_eps",), prompt_len=128, std={"conv.in_proj": 0.15}, embed_std=0.3),
    # attention first, a wider convolution (4) with biases on it and its projections, untied head
    dict(name="lfm2_k4", cls="Lfm2ForCausalLM",
         extra=dict(num_hidden_layers=4, block_auto_adjust_ff_dim=False, conv_L_cache=4, conv_bias=True,
                    norm_eps=1e-5, tie_word_embeddings=False,
                    layer_types=["full_attention", "conv", "conv", "full_attention"]),
         drop=("rms_norm_eps",), prompt_len=124, std={"conv.in_proj": 0.15}),
    # LFM2-MoE: layer 0 dense, then top-2 of 4 experts by sigmoid scores plus a random
    # expert_bias (it changes which experts are chosen, not their weights), renormalized; routers
    # at 1.0 (well separated scores: few near-ties for Q8_0 / Q4_1 rounding to flip)
    dict(name="lfm2_moe", cls="Lfm2MoeForCausalLM",
         extra=dict(num_hidden_layers=4, num_dense_layers=1, num_experts=4, num_experts_per_tok=2,
                    moe_intermediate_size=32, conv_L_cache=3, norm_eps=1e-5,
                    layer_types=["conv", "full_attention", "conv", "full_attention"]),
         drop=("rms_norm_eps",), prompt_len=124, std={"conv.in_proj": 0.15, "feed_forward.gate": 1.0},
         expert_bias_std=0.3, embed_std=0.3),
    # top-1 of 3 without expert bias or renormalization, routed_scaling_factor 1.5 (experts at 0.12)
    dict(name="lfm2_moe_top1", cls="Lfm2MoeForCausalLM",
         extra=dict(num_hidden_layers=3, num_dense_layers=0, num_experts=3, num_experts_per_tok=1,
                    moe_intermediate_size=32, conv_L_cache=3, norm_eps=1e-5, use_expert_bias=False,
                    norm_topk_prob=False, routed_scaling_factor=1.5, tie_word_embeddings=False,
                    layer_types=["full_attention", "conv", "conv"]),
         drop=("rms_norm_eps",), prompt_len=120,
         std={"conv.in_proj": 0.15, "feed_forward.gate": 0.6, "experts": 0.12}, embed_std=0.3),
    # The 2026 families below run a 128-token prompt.
    # SmolLM3: NoPE layers every 4th (no_rope_layer_interval's default, and what llama.cpp's smollm3
    # GGUF fixes), untied head (tests/test_gguf.c reads it as llama.cpp writes it). Weights of seed
    # "smollm3-c": most draws of this 4-layer random model amplify reduce mode's other summation
    # order to 1.0e-4 - 2.3e-4 of the largest logit, over test_ranks' 1e-4 (this one: 6.6e-5)
    dict(name="smollm3", cls="SmolLM3ForCausalLM",
         extra=dict(num_hidden_layers=4, tie_word_embeddings=False), prompt_len=128, seed_name="smollm3-c"),
    # SmolLM3: use_sliding_window (window 24) on the layers layer_types names, NoPE layers from an
    # explicit no_rope_layers, attention biases (o_proj's too), tied head
    dict(name="smollm3_window", cls="SmolLM3ForCausalLM",
         extra=dict(num_hidden_layers=3, no_rope_layers=[0, 1, 1], use_sliding_window=True, sliding_window=24,
                    layer_types=["full_attention", "sliding_attention", "full_attention"], attention_bias=True),
         embed_std=0.2, prompt_len=128),
    # OLMo 3: OLMo 2's norms, sliding (window 24) / full layers every 4th, per-layer-type RoPE (yarn
    # on full layers past their original context of 32)
    dict(name="olmo3", cls="Olmo3ForCausalLM",
         extra=dict(num_hidden_layers=4, sliding_window=24,
                    rope_parameters={"full_attention": {"rope_type": "yarn", "factor": 4.0, "rope_theta": 500000.0,
                                                        "original_max_position_embeddings": 32},
                                     "sliding_attention": {"rope_type": "default", "rope_theta": 500000.0}}),
         drop=("head_dim",), prompt_len=128),
    # EXAONE 4: post-norms, per-head q/k norms, sliding (window 20) / full layers from
    # sliding_window_pattern 2; full layers have no RoPE
    dict(name="exaone4", cls="Exaone4ForCausalLM",
         extra=dict(num_hidden_layers=4, sliding_window=20, sliding_window_pattern=2), prompt_len=128),
    # Seed-OSS: q/k/v biases (attention_bias) and o_proj's (attention_out_bias)
    dict(name="seed_oss", cls="SeedOssForCausalLM", extra=dict(attention_out_bias=True), prompt_len=128),
    # Ministral 3: yarn past its original context of 32 and the query scale 1 + beta log(1 +
    # floor(pos / 32)) there (llama_4_scaling_beta)
    dict(name="ministral3", cls="Ministral3ForCausalLM",
         extra=dict(rope_parameters={"rope_type": "yarn", "rope_theta": 1000000.0, "factor": 4.0,
                                     "original_max_position_embeddings": 32, "beta_fast": 32.0, "beta_slow": 1.0,
                                     "mscale": 1.0, "mscale_all_dim": 1.0, "llama_4_scaling_beta": 0.4}),
         prompt_len=128),
    # Apertus: xIELU MLP without a gate (trained alpha_p / alpha_n per layer; twice as wide, as
    # ungated MLPs are, so ranks can balance 4 heads over 3 with FFN columns), per-head q/k norms,
    # llama3 RoPE
    dict(name="apertus", cls="ApertusForCausalLM",
         extra=dict(hidden_act="xielu", intermediate_size=128,
                    rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                  "high_freq_factor": 4.0, "original_max_position_embeddings": 32}),
         prompt_len=128),
    # BitNet b1.58: sub-norms before Wo and Wdown, relu2 in the gated MLP, untied head; its
    # projections ternary times a per-tensor scale (the mean |w|), as llama.cpp's converter and
    # transformers' WeightQuant make them (head_dim 8: the attention sub-norm is hidden_size wide)
    dict(name="bitnet", cls="BitNetForCausalLM", extra=dict(head_dim=8), ternary=True, prompt_len=128),
    # SiLU and a tied head: what llama.cpp's "bitnet" graph computes (tests/test_gguf.c reads it as
    # its converter writes it, tools/make_bitnet_gguf.py)
    dict(name="bitnet_silu", cls="BitNetForCausalLM", extra=dict(head_dim=8, hidden_act="silu", tie_word_embeddings=True),
         ternary=True, prompt_len=128),
    # ---- recurrent (Mamba2 SSD) layers: 128-token prompts; A_log, dt_bias, D drawn as the rest ----
    # pure Mamba2: one group, conv window 4 (conv bias), no projection biases, untied head
    dict(name="mamba2", cls="Mamba2ForCausalLM",
         extra=dict(num_heads=8, head_dim=8, state_size=16, expand=2, n_groups=1, conv_kernel=4,
                    layer_norm_epsilon=1e-5),
         drop=MAMBA2_DROP, prompt_len=128, no_rope=True),
    # two groups of B/C (heads 0-1 read group 0, 2-3 group 1), conv window 3 without bias,
    # in/out projection biases, three layers, tied head
    dict(name="mamba2_groups", cls="Mamba2ForCausalLM",
         extra=dict(num_hidden_layers=3, num_heads=4, head_dim=16, state_size=8, expand=2, n_groups=2,
                    conv_kernel=3, use_conv_bias=False, use_bias=True, tie_word_embeddings=True),
         drop=MAMBA2_DROP, prompt_len=128, no_rope=True, std={"in_proj": 0.1, "out_proj": 0.15}),
    # Granite 4.0-H: mamba / attention layers (layer_types), no RoPE ("nope"), dense shared MLP
    # only (num_local_experts 0), Granite multipliers, two groups
    dict(name="granite_hybrid", cls="GraniteMoeHybridForCausalLM",
         extra=dict(num_hidden_layers=4, layer_types=["mamba", "attention", "mamba", "mamba"],
                    position_embedding_type="nope", num_local_experts=0, shared_intermediate_size=48,
                    mamba_n_heads=4, mamba_d_head=16, mamba_d_state=8, mamba_n_groups=2, mamba_d_conv=4,
                    embedding_multiplier=3.0, residual_multiplier=0.6, attention_multiplier=0.2,
                    logits_scaling=0.5),
         drop=("head_dim",), prompt_len=128, std={"in_proj": 0.15}),
    # Granite 4.0-H MoE: attention first with RoPE, top-2 of 4 experts (softmax over the top 2)
    # beside the shared MLP, conv window 3 with bias on the mixer projections
    dict(name="granite_hybrid_moe", cls="GraniteMoeHybridForCausalLM",
         extra=dict(num_hidden_layers=3, layer_types=["attention", "mamba", "mamba"],
                    position_embedding_type="rope", num_local_experts=4, num_experts_per_tok=2,
                    intermediate_size=32, shared_intermediate_size=32, mamba_n_heads=8, mamba_d_head=8,
                    mamba_d_state=16, mamba_n_groups=1, mamba_d_conv=3, mamba_proj_bias=True,
                    embedding_multiplier=2.0, residual_multiplier=0.7, attention_multiplier=0.25,
                    logits_scaling=1.5),
         drop=("head_dim",), prompt_len=128),
    # top-1 of 4 experts (the softmax of one logit: weight 1)
    dict(name="granite_hybrid_top1", cls="GraniteMoeHybridForCausalLM",
         extra=dict(num_hidden_layers=2, layer_types=["mamba", "attention"], position_embedding_type="rope",
                    num_local_experts=4, num_experts_per_tok=1, intermediate_size=32, shared_intermediate_size=32,
                    mamba_n_heads=4, mamba_d_head=16, mamba_d_state=8, mamba_n_groups=4, mamba_d_conv=4),
         drop=("head_dim",), prompt_len=128),
    # Nemotron-H: one mixer per block (Mamba2, attention without RoPE, or a ReLU^2 MLP), each
    # behind its own norm; the mixer's width is heads x head_dim (not expand x hidden), 2 groups
    dict(name="nemotron_h", cls="NemotronHForCausalLM",
         extra=dict(layer_types=["linear_attention", "mlp", "full_attention", "mlp", "linear_attention", "mlp"],
                    num_hidden_layers=6, mamba_num_heads=4, mamba_head_dim=8, ssm_state_size=8, n_groups=2,
                    conv_kernel=4, expand=2, layer_norm_epsilon=1e-5, use_bias=False, use_conv_bias=True,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=16),
         drop=("rms_norm_eps",), prompt_len=128, no_rope=True, std={"in_proj": 0.15}),
    # DeepSeek V2 multi-head latent attention as V2-Lite has it: q straight from q_proj (no q LoRA),
    # a latent of 16 (kv_lora_rank) and a shared rope key of 8 interleaved dims, k heads of 8 + 8,
    # v heads of 12; yarn past an original context of 32 with mscale_all_dim in the softmax scale;
    # layer 0 dense, then top-2 of 4 softmax experts (greedy, not renormalized) times 1.5 beside a
    # shared expert
    dict(name="deepseek_v2", cls="DeepseekV2ForCausalLM",
         extra=dict(num_hidden_layers=3, num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=16,
                    qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12, first_k_dense_replace=1,
                    n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, n_shared_experts=1,
                    topk_method="greedy", routed_scaling_factor=1.5,
                    rope_parameters={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0,
                                     "original_max_position_embeddings": 32, "beta_fast": 32.0, "beta_slow": 1.0,
                                     "mscale": 0.707, "mscale_all_dim": 0.707}),
         drop=("head_dim",), prompt_len=128),
    # DeepSeek V2 with q LoRA (q_a_proj -> q_a_layernorm -> q_b_proj) and group-limited routing:
    # 8 experts in 4 groups, the best 2 groups by their best score, top-3 there; 2 shared experts
    dict(name="deepseek_v2_group", cls="DeepseekV2ForCausalLM",
         extra=dict(num_hidden_layers=2, num_key_value_heads=4, q_lora_rank=24, kv_lora_rank=16,
                    qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8, first_k_dense_replace=0,
                    n_routed_experts=8, num_experts_per_tok=3, moe_intermediate_size=16, n_shared_experts=2,
                    topk_method="group_limited_greedy", n_group=4, topk_group=2),
         drop=("head_dim",), prompt_len=128, std={"mlp.gate": 1.0}, ablate_groups=True),
    # DeepSeek V3: q LoRA, interleaved rope, noaux_tc routing (sigmoid scores, chosen with
    # e_score_correction_bias by groups ranked on their two best), renormalized, times 2.5
    dict(name="deepseek_v3", cls="DeepseekV3ForCausalLM",
         extra=dict(num_hidden_layers=3, num_key_value_heads=4, q_lora_rank=24, kv_lora_rank=16,
                    qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12, first_k_dense_replace=1,
                    n_routed_experts=8, num_experts_per_tok=2, moe_intermediate_size=16, n_shared_experts=1,
                    n_group=4, topk_group=2, routed_scaling_factor=2.5, norm_topk_prob=True),
         drop=("head_dim",), prompt_len=128, std={"mlp.gate": 1.0}, expert_bias_std=0.3, ablate_groups=True),
    # DeepSeek V3 without rope_interleave (rotate-half pairs) nor q LoRA, one group
    dict(name="deepseek_v3_flat", cls="DeepseekV3ForCausalLM",
         extra=dict(num_hidden_layers=2, num_key_value_heads=4, q_lora_rank=None, kv_lora_rank=16,
                    qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=8, first_k_dense_replace=1,
                    n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=16, n_shared_experts=1,
                    n_group=1, topk_group=1, rope_interleave=False),
         drop=("head_dim",), prompt_len=120, expert_bias_std=0.3),
    # Nemotron-H MoE (Nemotron 3 Nano): "moe" blocks of ReLU^2 experts (up, down; no gate) beside a
    # shared ReLU^2 expert; sigmoid scores plus a random e_score_correction_bias choose the top 2 of
    # 8 from the best 2 of 4 groups (a group scores the sum of its two best), the sigmoids of the
    # chosen renormalized, times routed_scaling_factor 2.5; routers at 1.0
    dict(name="nemotron_h_moe", cls="NemotronHForCausalLM",
         extra=dict(layer_types=["linear_attention", "moe", "full_attention", "moe", "linear_attention", "mlp"],
                    num_hidden_layers=6, mamba_num_heads=4, mamba_head_dim=8, ssm_state_size=8, n_groups=1,
                    conv_kernel=4, expand=2, layer_norm_epsilon=1e-5, use_bias=False, use_conv_bias=True,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=16, n_routed_experts=8,
                    num_experts_per_tok=2, moe_intermediate_size=32, moe_shared_expert_intermediate_size=48,
                    n_group=4, topk_group=2, routed_scaling_factor=2.5, norm_topk_prob=True),
         drop=("rms_norm_eps",), prompt_len=128, no_rope=True,
         std={"in_proj": 0.15, "gate.weight": 1.0, "experts": 0.2}, expert_bias_std=0.3),
    # one group, top-1 without renormalization (the chosen expert's sigmoid times 1.0), no bias
    # drawn; the blocks as hybrid_override_pattern "M*E-E" (the pattern older checkpoints write)
    dict(name="nemotron_h_moe_top1", cls="NemotronHForCausalLM",
         extra=dict(hybrid_override_pattern="M*E-E", mamba_num_heads=4, mamba_head_dim=8,
                    ssm_state_size=8, n_groups=2, conv_kernel=3, expand=2, layer_norm_epsilon=1e-5,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=16, n_routed_experts=4,
                    num_experts_per_tok=1, moe_intermediate_size=32, moe_shared_expert_intermediate_size=32,
                    n_group=1, topk_group=1, routed_scaling_factor=1.0, norm_topk_prob=False),
         drop=("rms_norm_eps", "num_hidden_layers"), prompt_len=128, no_rope=True,
         std={"in_proj": 0.15, "gate.weight": 1.0, "experts": 0.2}),
    # latent experts (Nemotron 3 Super style): the routed experts work in moe_latent_size 16,
    # projected from and back to hidden 32 (fc1/fc2_latent_proj), the shared expert on the hidden
    # rows; 2 groups of 3, the best 1 kept, top-2 renormalized, routed_scaling_factor 1.5
    dict(name="nemotron_h_moe_latent", cls="NemotronHForCausalLM",
         extra=dict(hybrid_override_pattern="ME*EM", mamba_num_heads=4, mamba_head_dim=8, ssm_state_size=8,
                    n_groups=1, conv_kernel=4, expand=2, layer_norm_epsilon=1e-5,
                    num_attention_heads=4, num_key_value_heads=2, head_dim=16, n_routed_experts=6,
                    num_experts_per_tok=2, moe_intermediate_size=32, moe_shared_expert_intermediate_size=32,
                    moe_latent_size=16, n_group=2, topk_group=1, routed_scaling_factor=1.5, norm_topk_prob=True),
         drop=("rms_norm_eps", "num_hidden_layers"), prompt_len=128, no_rope=True,
         std={"in_proj": 0.15, "gate.weight": 1.0, "experts": 0.12, "latent_proj": 0.15}, expert_bias_std=0.3),
    # Falcon-H1: attention and a Mamba2 mixer side by side in every layer on the same normed
    # input, summed, then a SwiGLU MLP; every multiplier away from 1 (embedding, lm_head, attention
    # in/out, key, ssm in/out, the five ssm_multipliers sections of in_proj's output, the MLP's
    # gate/down), mamba_d_ssm narrower than expand x hidden, no gated norm (mamba_rms_norm off:
    # y * silu(z)), projection biases (projectors_bias on out_proj, mamba_proj_bias on in_proj)
    dict(name="falcon_h1", cls="FalconH1ForCausalLM",
         extra=dict(num_hidden_layers=3, mamba_d_ssm=48, mamba_n_heads=6, mamba_d_head=8, mamba_n_groups=2,
                    mamba_d_state=8, mamba_d_conv=4, mamba_expand=2, mamba_rms_norm=False,
                    mamba_proj_bias=True, projectors_bias=True, embedding_multiplier=1.7,
                    lm_head_multiplier=0.6, attention_in_multiplier=0.8, attention_out_multiplier=1.3,
                    key_multiplier=0.7, ssm_in_multiplier=1.2, ssm_out_multiplier=0.9,
                    ssm_multipliers=[0.9, 1.1, 0.8, 1.2, 0.7], mlp_multipliers=[0.8, 1.25], rms_norm_eps=1e-5,
                    tie_word_embeddings=False),
         prompt_len=128, std={"in_proj": 0.15}),
    # the gated RMSNorm after the gate (mamba_norm_before_gate off, as Mamba2), one group, the
    # mixer as wide as expand x hidden (mamba_d_ssm null), d_head "auto", tied head
    dict(name="falcon_h1_norm", cls="FalconH1ForCausalLM",
         extra=dict(num_hidden_layers=2, mamba_d_ssm=None, mamba_n_heads=4, mamba_d_head="auto",
                    mamba_n_groups=1, mamba_d_state=16, mamba_d_conv=3, mamba_expand=2, mamba_rms_norm=True,
                    mamba_norm_before_gate=False, embedding_multiplier=0.9, lm_head_multiplier=0.8,
                    key_multiplier=1.3, ssm_multipliers=[1.0, 0.8, 1.1, 0.9, 1.2], tie_word_embeddings=True),
         prompt_len=128, std={"in_proj": 0.15}, embed_std=0.3),
    # the gated RMSNorm before the gate (mamba_norm_before_gate, Falcon-H1's default) over two groups
    dict(name="falcon_h1_prenorm", cls="FalconH1ForCausalLM",
         extra=dict(num_hidden_layers=2, mamba_d_ssm=64, mamba_n_heads=8, mamba_d_head=8, mamba_n_groups=2,
                    mamba_d_state=8, mamba_d_conv=4, mamba_rms_norm=True, mamba_norm_before_gate=True,
                    attention_in_multiplier=1.1, ssm_out_multiplier=1.2, mlp_multipliers=[1.2, 0.9]),
         prompt_len=128, std={"in_proj": 0.15}),
]


def legacy_neox_config(path):
    """GPT-NeoX config.json as transformers 4 wrote it: rotary_pct and rotary_emb_base at the
    top instead of rope_parameters, torch_dtype."""
    with open(path) as f:
        cfg = json.load(f)
    rope = cfg.pop("rope_parameters")
    cfg.pop("partial_rotary_factor", None)
    cfg["rotary_pct"] = rope["partial_rotary_factor"]
    cfg["rotary_emb_base"] = rope["rope_theta"]
    cfg["torch_dtype"] = cfg.pop("dtype")
    with open(path, "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def fam_config(spec):
    import transformers
    kw = dict(FAM_COMMON)
    for k in spec.get("drop", ()):
        kw.pop(k)
    kw["vocab_size"] = FAM_VOCAB
    kw.update(spec.get("extra", {}))
    if "rope_parameters" not in kw and not spec.get("no_rope"):
        rope = {"rope_type": "default", "rope_theta": kw.pop("rope_theta", 10000.0)}
        rope.update(kw.pop("rope_scaling", None) or {})
        if "partial_rotary_factor" in kw:
            rope["partial_rotary_factor"] = kw["partial_rotary_factor"]
        kw["rope_parameters"] = rope
    cls = getattr(transformers, spec["cls"])
    if "vision" in spec:  # a vision-language class: the text model's keys go to text_config
        cfg = cls.config_class(text_config=kw, vision_config=spec["vision"],
                               tie_word_embeddings=kw.get("tie_word_embeddings", False))
    else:
        cfg = cls.config_class(**kw)
    cfg._attn_implementation = "eager"
    return cls, cfg


def fam_init_weights(model, seed, embed_std=0.5, head_std=0.25, std=None, plus_one=False):
    """As init_weights; norm weights of (1 + w) norms (Gemma, Qwen3.5/Next; not the delta-net's
    gated output norm, which applies w) centred on 0; std: {name part: std} for projections that
    need their own scale."""
    rng = np.random.default_rng(seed)
    kind = type(model).__name__
    plus_one = plus_one or (kind.startswith("Gemma") and not kind.startswith(("Gemma4", "Gemma3n")))
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            shape = tuple(p.shape)
            if "norm" in name and name.endswith(".bias"):
                v = 0.1 * rng.standard_normal(shape)
            elif "norm" in name:
                v = (0.0 if plus_one and "linear_attn.norm" not in name else 1.0) + 0.2 * rng.standard_normal(shape)
            elif name.endswith(".bias"):
                v = 0.2 * rng.standard_normal(shape)
            elif "embed" in name:
                v = embed_std * rng.standard_normal(shape)
            elif "lm_head" in name:
                v = head_std * rng.standard_normal(shape)
            else:
                sd = [v for k, v in (std or {}).items() if k in name]
                v = (sd[0] if sd else 0.25) * rng.standard_normal(shape)
            p.copy_(torch.from_numpy(v.astype(np.float32)))


FP4 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def mxfp4_pack(w, rng):
    """w [E, rows, cols] (out, in order) -> OpenAI MXFP4 blocks U8 [E, rows, cols/32, 16] and
    scales U8 [E, rows, cols/32]: scale byte s = floor(log2(max|block|)) - 2 + 127 (gguf-py's
    MXFP4 rule), each value the nearest E2M1 code at 2^(s - 127), element 2i in the low nibble of
    byte i. One block in 11 gets an extreme scale instead: 0, 1, 2 (2^-127 .. 2^-125) or s + 3."""
    E, R, C = w.shape
    b = w.reshape(E, R, C // 32, 32).astype(np.float64)
    amax = np.abs(b).max(axis=-1)
    s = np.where(amax > 0, np.floor(np.log2(np.maximum(amax, 1e-30))) - 2 + 127, 0).astype(np.int64)
    pick = rng.integers(0, 11, size=s.shape) == 0
    ext = rng.integers(0, 4, size=s.shape)
    s = np.where(pick, np.where(ext < 3, ext, s + 3), s)
    s = np.clip(s, 0, 254)
    scale = np.ldexp(1.0, (s - 127))[..., None, None]
    codes = np.abs(FP4[None, None, None, None, :] * scale - b[..., None]).argmin(axis=-1).astype(np.uint8)
    blocks = codes[..., 0::2] | (codes[..., 1::2] << 4)
    return blocks.astype(np.uint8), s.astype(np.uint8)


def write_mxfp4(out, model, seed):
    """Rewrites out/model.safetensors with the experts' weights as MXFP4 blocks and scales, sets
    the config's quantization_config, and loads the experts' dequantized values (transformers'
    convert_moe_packed_tensors) back into `model`: the reference computes with those."""
    from safetensors.torch import load_file, save_file
    from transformers.integrations.mxfp4 import convert_moe_packed_tensors
    rng = np.random.default_rng(seed + 1)
    path = os.path.join(out, "model.safetensors")
    st = load_file(path)
    for k in sorted(st):
        if not (k.endswith("experts.gate_up_proj") or k.endswith("experts.down_proj")):
            continue
        w = st.pop(k).float().transpose(1, 2).contiguous().numpy()  # [E, out, in]
        blocks, scales = mxfp4_pack(w, rng)
        st[k + "_blocks"] = torch.from_numpy(blocks)
        st[k + "_scales"] = torch.from_numpy(scales)
        deq = convert_moe_packed_tensors(torch.from_numpy(blocks), torch.from_numpy(scales), dtype=torch.float32)
        with torch.no_grad():
            model.get_parameter(k).copy_(deq)
    save_file(st, path, metadata={"format": "pt"})
    cfg_path = os.path.join(out, "config.json")
    cfg = json.load(open(cfg_path))
    cfg["quantization_config"] = {"quant_method": "mxfp4",
                                  "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                             "model.embed_tokens", "lm_head"]}
    with open(cfg_path, "w") as f:
        f.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def run_incremental(model, ids, n_new):
    """transformers run one token per forward with its KV cache, as it decodes: for RoPE types
    whose frequencies depend on the length of the forward's sequence (longrope, dynamic), every row then
    sees the length up to itself. Logits at every prompt position and n_new greedy tokens."""
    from transformers import DynamicCache
    cache = DynamicCache(config=model.config.get_text_config())
    rows, greedy, seq = [], [], list(ids)
    with torch.no_grad():
        for i in range(len(ids) + n_new - 1):
            out = model(torch.tensor([[seq[i]]]), position_ids=torch.tensor([[i]]), past_key_values=cache, use_cache=True)
            row = out.logits[0, -1].float()
            rows.append(row)
            if i >= len(ids) - 1:
                greedy.append(int(torch.argmax(row)))
                seq.append(greedy[-1])
    return torch.stack(rows[:len(ids)]), greedy, rows[len(ids) - 1:]


def run_generate(model, ids, n_new):
    """As transformers' generate: the prompt in one forward (RoPE types that look at the forward's
    length, longrope, see all of it), then one token per forward with the KV cache. The greedy
    tokens, the last prompt position's logits and the smallest top-1 margin of the greedy steps."""
    from transformers import DynamicCache
    cache = DynamicCache(config=model.config)
    greedy, margins = [], []
    with torch.no_grad():
        out = model(torch.tensor([ids]), past_key_values=cache, use_cache=True)
        last = out.logits[0, -1].float()
        row = last
        for i in range(n_new):
            margins.append(margin_of(row))
            greedy.append(int(torch.argmax(row)))
            if i == n_new - 1:
                break
            out = model(torch.tensor([[greedy[-1]]]), position_ids=torch.tensor([[len(ids) + i]]),
                        past_key_values=cache, use_cache=True)
            row = out.logits[0, -1].float()
    return greedy, last, min(margins)


def fam_adjust_weights(model, spec, seed):
    """What a spec sets after the random draw: scaled parameters, ternary projections, buffers."""
    for part, f in sorted(spec.get("mul", {}).items()):  # parameters scaled after the draw
        with torch.no_grad():
            for pname, prm in model.named_parameters():
                if part in pname:
                    prm.mul_(f)
    if spec.get("ternary"):  # BitNet: projections as round(w / s) clamped to -1..1, times s = mean |w|
        with torch.no_grad():
            for pname, prm in model.named_parameters():
                if pname.endswith("_proj.weight"):
                    s = prm.abs().mean().clamp(min=1e-5)
                    prm.copy_((prm * (1 / s)).round().clamp(-1, 1) / (1 / s))
    if spec.get("layer_scalar"):  # a buffer (ones unless set here)
        rng = np.random.default_rng(seed + 2)
        with torch.no_grad():
            for bname, buf in sorted(model.named_buffers(), key=lambda kv: kv[0]):
                if bname.endswith("layer_scalar"):
                    buf.fill_(float(rng.uniform(0.6, 1.4)))
    if spec.get("sinks"):
        with torch.no_grad():
            for layer in model.model.layers:
                layer.self_attn.sinks += spec["sinks"]
    if spec.get("expert_bias_std"):  # a buffer (not a parameter): zeros unless set here
        rng = np.random.default_rng(seed + 1)
        with torch.no_grad():
            for bname, buf in sorted(model.named_buffers(), key=lambda kv: kv[0]):
                if bname.endswith("expert_bias") or bname.endswith("e_score_correction_bias"):
                    buf.copy_(torch.from_numpy((spec["expert_bias_std"] * rng.standard_normal(tuple(buf.shape))).astype(np.float32)))


def make_family(spec):
    name = spec["name"]
    seed = model_seed("family-" + spec.get("seed_name", name))
    dtype = spec.get("dtype", torch.float32)
    out = os.path.join(FAM_DIR, name)
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    cls, cfg = fam_config(spec)
    model = cls(cfg).eval()
    fam_init_weights(model, seed, spec.get("embed_std", 0.5), spec.get("head_std", 0.25), spec.get("std"),
                     spec.get("plus_one", False))
    fam_adjust_weights(model, spec, seed)
    model = model.to(dtype)
    model.config.dtype = dtype
    tcfg = cfg.get_text_config()
    model.generation_config = GenerationConfig(bos_token_id=tcfg.bos_token_id, eos_token_id=tcfg.eos_token_id)
    model.save_pretrained(out)
    if spec.get("legacy") == "neox":
        legacy_neox_config(os.path.join(out, "config.json"))
    if spec.get("mxfp4"):
        write_mxfp4(out, model, seed)
        loaded = model.float()
    else:
        loaded = cls.from_pretrained(out, dtype="auto", attn_implementation="eager").eval()
        for k, v in loaded.state_dict().items():
            assert torch.equal(v, model.state_dict()[k].to(v.dtype)), k
        loaded = loaded.float()

    for attempt in range(MAX_ATTEMPTS):
        ids = prompt_ids(seed, spec.get("prompt_len", PROMPT_LONG), attempt, FAM_VOCAB, tcfg.bos_token_id)
        if spec.get("incremental"):
            logits, greedy, rows = run_incremental(loaded, ids, NEW_TOKENS)
        else:
            logits, greedy, _ = run_case(loaded, ids)
            # the greedy choices (last prompt position and each new token) need a clear winner
            x = torch.tensor([ids + greedy[:-1]])
            with torch.no_grad():
                rows = loaded(x).logits[0, len(ids) - 1:].float()
        m = min(margin_of(r) for r in rows)
        gen = None
        if spec.get("generate"):
            gen = run_generate(loaded, ids, NEW_TOKENS)
            m = min(m, gen[2])
        if m >= MIN_MARGIN and len(set(greedy)) >= MIN_DISTINCT:
            break
    else:
        raise SystemExit("%s: no usable prompt" % name)
    clip = {}
    if "final" in spec.get("clip", {}):
        cap = spec["clip"]["final"]
        frac = float((logits.abs() > 0.9 * cap).float().mean())
        assert frac > 0.005, (name, frac)  # soft-capping must actually bite
        clip["final_logits_beyond_0.9_cap"] = round(frac, 4)
    if "attn" in spec.get("clip", {}):
        # the same prompt without attention soft-capping: the logits must move
        for layer in loaded.model.layers:
            layer.self_attn.attn_logit_softcapping = None
        with torch.no_grad():
            moved = float((loaded(torch.tensor([ids])).logits[0].float() - logits).abs().max())
        assert moved > 0.1, (name, moved)
        clip["attn_softcap_moves_logits_by"] = round(moved, 4)
    if spec.get("delta"):
        # the logits stored are transformers' one forward over the prompt, which runs the gated
        # delta rule chunked (torch_chunk_gated_delta_rule, chunks of 64); token by token with the
        # cache it runs the recurrent rule (torch_recurrent_gated_delta_rule), as mlstack does:
        # how far apart the two are is recorded
        rec, _, _ = run_incremental(loaded, ids, 1)
        clip["chunked_vs_recurrent_max_diff"] = float("%.3g" % float((rec - logits).abs().max()))
    if spec.get("ablate"):  # the sinks and the SwiGLU clamp must matter
        x = torch.tensor([ids])
        saved = [l.self_attn.sinks.detach().clone() for l in loaded.model.layers]
        with torch.no_grad():
            for l in loaded.model.layers:
                l.self_attn.sinks.fill_(-1e4)
            moved = float((loaded(x).logits[0].float() - logits).abs().max())
            for l, sv in zip(loaded.model.layers, saved):
                l.self_attn.sinks.copy_(sv)
            assert moved > 0.5, (name, "sinks", moved)
            clip["sinks_move_logits_by"] = round(moved, 4)
            for l in loaded.model.layers:
                l.mlp.experts.limit = 1e9
            moved = float((loaded(x).logits[0].float() - logits).abs().max())
            for l in loaded.model.layers:
                l.mlp.experts.limit = loaded.config.swiglu_limit
            assert moved > 0.05, (name, "clamp", moved)
            clip["swiglu_clamp_moves_logits_by"] = round(moved, 4)
    if spec.get("ablate_groups"):  # DeepSeek's grouped routing (and V3's choice bias) must matter
        x = torch.tensor([ids])
        gates = [l.mlp.gate for l in loaded.model.layers if hasattr(l.mlp, "gate")]
        with torch.no_grad():
            for g in gates:
                g.topk_group, g.saved_topk_group = g.num_group, g.topk_group
            moved = float((loaded(x).logits[0].float() - logits).abs().max())
            for g in gates:
                g.topk_group = g.saved_topk_group
            assert moved > 0.5, (name, "groups", moved)
            clip["group_limit_moves_logits_by"] = round(moved, 4)
            if hasattr(gates[0], "e_score_correction_bias"):
                saved = [g.e_score_correction_bias.detach().clone() for g in gates]
                for g in gates:
                    g.e_score_correction_bias.zero_()
                moved = float((loaded(x).logits[0].float() - logits).abs().max())
                for g, sv in zip(gates, saved):
                    g.e_score_correction_bias.copy_(sv)
                assert moved > 0.5, (name, "bias", moved)
                clip["score_correction_bias_moves_logits_by"] = round(moved, 4)
    arr = logits.numpy().astype("<f4")
    arr.tofile(os.path.join(out, "logits.bin"))
    if gen is not None:
        gen[1].numpy().astype("<f4").tofile(os.path.join(out, "generate_last.bin"))
    ref = {"model": name, "architecture": loaded.config.architectures[0], "dtype": DTYPE_NAMES[dtype],
           "compute": "f32",
           "run": "one token per forward, KV cache" if spec.get("incremental")
           else "one forward (gated delta rule chunked)" if spec.get("delta") else "one forward",
           "positions": len(ids), "vocab": FAM_VOCAB, "ids": ids, "greedy": greedy,
           "min_greedy_margin": round(m, 6), "attempts": attempt}
    ref.update(clip)
    if gen is not None:
        ref["greedy_generate"] = gen[0]
    with open(os.path.join(out, "reference.json"), "w") as f:
        f.write(json.dumps(ref) + "\n")
    nbytes = sum(os.path.getsize(os.path.join(out, f)) for f in os.listdir(out))
    return dict(name=name, files=len(os.listdir(out)), bytes=nbytes, margin=m, attempts=[attempt],
                distinct=len(set(greedy)))


def make_gemma3n_vl():
    """gemma3n as Gemma3nForConditionalGeneration: its config under text_config beside (stub)
    vision_config / audio_config, its tensors under model.language_model. transformers cannot
    build that class here (its vision tower needs timm), so the reference is the gemma3n
    fixture's own: Gemma3nForConditionalGeneration's text path is Gemma3nTextModel and the same
    LM head, the same forward on the same weights."""
    from safetensors.torch import load_file, save_file
    src, out = os.path.join(FAM_DIR, "gemma3n"), os.path.join(FAM_DIR, "gemma3n_vl")
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    with open(os.path.join(src, "config.json")) as f:
        text = json.load(f)
    cfg = dict(architectures=["Gemma3nForConditionalGeneration"], model_type="gemma3n",
               text_config=dict(text, model_type="gemma3n_text"), tie_word_embeddings=True,
               vision_config=dict(model_type="gemma3n_vision", hidden_size=16),
               audio_config=dict(model_type="gemma3n_audio", hidden_size=16), dtype="float32",
               transformers_version=text.get("transformers_version"))
    cfg["text_config"].pop("architectures", None)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
    tensors = {("model.language_model." + k[len("model."):] if k.startswith("model.") else k): v
               for k, v in load_file(os.path.join(src, "model.safetensors")).items()}
    tensors["model.vision_tower.stub.weight"] = torch.zeros(2)  # a tower mlstack must skip
    save_file(tensors, os.path.join(out, "model.safetensors"), metadata={"format": "pt"})
    for name in ("generation_config.json", "logits.bin"):
        shutil.copy(os.path.join(src, name), os.path.join(out, name))
    with open(os.path.join(src, "reference.json")) as f:
        ref = json.load(f)
    ref.update(model="gemma3n_vl", architecture="Gemma3nForConditionalGeneration",
               note="the gemma3n fixture's reference (transformers' Gemma3nForCausalLM on the same weights)")
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(ref, f)
    return dict(name="gemma3n_vl", files=len(os.listdir(out)), bytes=0, margin=1.0, attempts=[0], distinct=0)


def main(argv):
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    wanted = set(argv)
    unknown = wanted - {m["name"] for m in MODELS} - {f["name"] for f in FAMILIES} - {"gemma3n_vl"}
    if unknown:
        raise SystemExit("unknown model(s): %s" % ", ".join(sorted(unknown)))
    rows = [make(m) for m in MODELS if not wanted or m["name"] in wanted]
    rows += [make_family(f) for f in FAMILIES if not wanted or f["name"] in wanted]
    if not wanted or "gemma3n_vl" in wanted:  # after gemma3n, from its files
        rows.append(make_gemma3n_vl())

    print("%-18s %5s %9s %12s %9s %8s" % ("model", "files", "bytes", "min margin", "retries", "distinct"))
    for r in rows:
        print("%-18s %5d %9d %12.6f %9s %8d" % (r["name"], r["files"], r["bytes"], r["margin"],
                                              "/".join(map(str, r["attempts"])), r["distinct"]))
    for d in (OUT_DIR, FAM_DIR):
        total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(d) for f in fs)
        print("all fixtures under %s: %d bytes" % (os.path.relpath(d, ROOT), total))
    print("smallest top-1/top-2 margin: %.6f" % min(r["margin"] for r in rows))


if __name__ == "__main__":
    main(sys.argv[1:])
