#!/usr/bin/env python3
"""Turn a llama-architecture GGUF (SmolLM2-135M-Instruct Q4_1 is the one we use)
into a Hugging Face model folder, without torch or transformers.

    python3 tools/convert_gguf.py MODEL.gguf OUT_DIR [--style transformers|hub]
    python3 tools/convert_gguf.py --verify tests/fixtures/smollm2/record.json OUT_DIR

The weights come out exactly as transformers makes them when it loads the GGUF
(`from_pretrained(dir, gguf_file=...)`) and saves the model again:

  * every tensor is dequantized with gguf-py's `dequantize` (the function
    transformers calls) to float32;
  * llama.cpp's converter reorders the rows of q_proj and k_proj so that RoPE
    can rotate adjacent pairs; transformers undoes that, and so do we;
  * a GGUF without `output.weight` means tied embeddings: the folder then has
    no `lm_head.weight` (transformers 5 leaves tied copies out when saving).

`--verify` recomputes the sha256 of every tensor's bytes in OUT_DIR and
compares them (and the tokenizer/config files of the detected style) with the
record written by tools/smollm2_record.py.  Exit status 1 on any mismatch.

Styles of the non-weight files:
  transformers  byte for byte what transformers 5.24 writes for this GGUF:
                config.json with "rope_parameters" and "dtype", the chat
                template in chat_template.jinja, a tokenizer.json rebuilt the
                way transformers' GGUF tokenizer converter builds it.
  hub           the layout of the original Hub repository: config.json with
                top-level "rope_theta" / "rope_scaling" / "torch_dtype", the
                chat template inside tokenizer_config.json, and the Hub's own
                tokenizer.json (SmolLM2 splits digits one by one, which the
                transformers GGUF converter drops).

Needs only: gguf, numpy, safetensors.
"""

import argparse
import hashlib
import json
import os
import struct
import sys

import numpy as np

# The transformers release whose output the "transformers" style mirrors.
TRANSFORMERS_VERSION = "5.24.0"

# ----------------------------------------------------------------------------
# GGUF metadata


def read_gguf(path):
    from gguf import GGUFReader

    reader = GGUFReader(path)
    meta = {}
    for key, field in reader.fields.items():
        if key.startswith("GGUF."):
            continue
        meta[key] = field.contents()
    return reader, meta


def as_f32_float(x):
    """A GGUF float32 as transformers turns it into a Python float."""
    return float(np.float32(x))


def shortest_f32(x):
    """The shortest decimal that reads back as the same float32 (1e-05, not 9.99999974e-06)."""
    return float(repr(np.float32(x)).replace("np.float32(", "").rstrip(")"))


# ----------------------------------------------------------------------------
# Tensors


def hf_tensor_name(gguf_name):
    """GGUF llama tensor name -> transformers LlamaForCausalLM parameter name."""
    fixed = {
        "token_embd.weight": "model.embed_tokens.weight",
        "output_norm.weight": "model.norm.weight",
        "output.weight": "lm_head.weight",
    }
    if gguf_name in fixed:
        return fixed[gguf_name]
    parts = gguf_name.split(".")
    if parts[0] != "blk" or len(parts) != 4:
        return None
    layer, kind, suffix = parts[1], parts[2], parts[3]
    per_layer = {
        "attn_norm": "input_layernorm",
        "ffn_norm": "post_attention_layernorm",
        "attn_q": "self_attn.q_proj",
        "attn_k": "self_attn.k_proj",
        "attn_v": "self_attn.v_proj",
        "attn_output": "self_attn.o_proj",
        "ffn_gate": "mlp.gate_proj",
        "ffn_up": "mlp.up_proj",
        "ffn_down": "mlp.down_proj",
    }
    if kind not in per_layer:
        return None
    return "model.layers.%s.%s.%s" % (layer, per_layer[kind], suffix)


def unpermute_rows(w, n_head):
    """Undo llama.cpp's q/k row order.  Within each head, llama.cpp stores the
    rows as (pair, half) -> we put them back as (half, pair), the order
    Hugging Face's rotate_half RoPE expects."""
    dim = w.shape[0] // n_head // 2
    return w.reshape(n_head, dim, 2, *w.shape[1:]).swapaxes(2, 1).reshape(w.shape)


def convert_tensors(reader, meta):
    from gguf import dequantize

    arch = meta["general.architecture"]
    if arch != "llama":
        raise SystemExit("only llama-architecture GGUF files are handled, this one is %r" % arch)
    n_head = int(meta["llama.attention.head_count"])
    n_kv = int(meta.get("llama.attention.head_count_kv", n_head))
    tensors = {}
    for t in reader.tensors:
        name = hf_tensor_name(t.name)
        if name is None:
            print("  skipping GGUF tensor %s (no transformers counterpart)" % t.name)
            continue
        w = dequantize(t.data, t.tensor_type)
        if ".attn_q." in t.name:
            w = unpermute_rows(w, n_head)
        elif ".attn_k." in t.name:
            w = unpermute_rows(w, n_kv)
        tensors[name] = np.ascontiguousarray(w, dtype=np.float32)
    return tensors


# ----------------------------------------------------------------------------
# config.json / generation_config.json


def dump_config(d):
    # transformers' PretrainedConfig.to_json_string
    return json.dumps(d, indent=2, sort_keys=True) + "\n"


def model_facts(meta, tensors):
    tok = meta["tokenizer.ggml.tokens"]
    hidden = int(meta["llama.embedding_length"])
    n_head = int(meta["llama.attention.head_count"])
    f = dict(
        hidden_size=hidden,
        intermediate_size=int(meta["llama.feed_forward_length"]),
        num_hidden_layers=int(meta["llama.block_count"]),
        num_attention_heads=n_head,
        num_key_value_heads=int(meta.get("llama.attention.head_count_kv", n_head)),
        max_position_embeddings=int(meta["llama.context_length"]),
        rms_norm_eps=meta["llama.attention.layer_norm_rms_epsilon"],
        rope_theta=meta.get("llama.rope.freq_base", 10000.0),
        vocab_size=int(meta.get("llama.vocab_size", len(tok))),
        tie_word_embeddings="lm_head.weight" not in tensors,
        head_dim=int(meta.get("llama.rope.dimension_count", hidden // n_head)),
    )
    for key in ("bos", "eos", "unknown", "padding"):
        v = meta.get("tokenizer.ggml.%s_token_id" % key)
        f[key] = None if v is None else int(v)
    if "llama.rope.scaling.type" in meta:
        raise SystemExit("GGUF rope scaling metadata is not handled by this converter")
    return f


def config_transformers(meta, f):
    cfg = {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": f["bos"],
        "dtype": "float32",
        "eos_token_id": f["eos"],
        "head_dim": f["head_dim"],
        "hidden_act": "silu",
        "hidden_size": f["hidden_size"],
        "initializer_range": 0.02,
        "intermediate_size": f["intermediate_size"],
        "max_position_embeddings": f["max_position_embeddings"],
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": f["num_attention_heads"],
        "num_hidden_layers": f["num_hidden_layers"],
        "num_key_value_heads": f["num_key_value_heads"],
        "pad_token_id": f["padding"],
        "pretraining_tp": 1,
        "rms_norm_eps": as_f32_float(f["rms_norm_eps"]),
        "rope_parameters": {"rope_theta": as_f32_float(f["rope_theta"]), "rope_type": "default"},
        "tie_word_embeddings": f["tie_word_embeddings"],
        "transformers_version": TRANSFORMERS_VERSION,
        "unk_token_id": f["unknown"],
        "use_cache": True,
        "vocab_size": f["vocab_size"],
    }
    if "general.name" in meta:
        # transformers files general.name under this key
        cfg["_model_name_or_path"] = meta["general.name"]
    return cfg


def generation_config_transformers(f):
    return {
        "_from_model_config": True,
        "bos_token_id": f["bos"],
        "eos_token_id": f["eos"],
        "output_attentions": False,
        "output_hidden_states": False,
        "pad_token_id": f["padding"],
        "transformers_version": TRANSFORMERS_VERSION,
        "use_cache": True,
    }


def config_hub(meta, f):
    return {
        "architectures": ["LlamaForCausalLM"],
        "attention_bias": False,
        "attention_dropout": 0.0,
        "bos_token_id": f["bos"],
        "eos_token_id": f["eos"],
        "head_dim": f["head_dim"],
        "hidden_act": "silu",
        "hidden_size": f["hidden_size"],
        "initializer_range": 0.02,
        "intermediate_size": f["intermediate_size"],
        "max_position_embeddings": f["max_position_embeddings"],
        "mlp_bias": False,
        "model_type": "llama",
        "num_attention_heads": f["num_attention_heads"],
        "num_hidden_layers": f["num_hidden_layers"],
        "num_key_value_heads": f["num_key_value_heads"],
        "pad_token_id": f["padding"],
        "pretraining_tp": 1,
        "rms_norm_eps": shortest_f32(f["rms_norm_eps"]),
        "rope_scaling": None,
        "rope_theta": shortest_f32(f["rope_theta"]),
        "tie_word_embeddings": f["tie_word_embeddings"],
        "torch_dtype": "float32",
        "transformers_version": "4.42.3",
        "use_cache": True,
        "vocab_size": f["vocab_size"],
    }


def generation_config_hub(f):
    return {
        "_from_model_config": True,
        "bos_token_id": f["bos"],
        "eos_token_id": f["eos"],
        "pad_token_id": f["padding"],
        "transformers_version": "4.42.3",
    }


# ----------------------------------------------------------------------------
# Tokenizer


def byte_alphabet():
    """GPT-2's byte -> printable character table."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


def tokenizer_parts(meta):
    if meta.get("tokenizer.ggml.model") != "gpt2":
        raise SystemExit("only byte-level BPE ('gpt2') GGUF tokenizers are handled")
    spelling = byte_alphabet()
    alphabet = set(spelling.values())
    tokens = list(meta["tokenizer.ggml.tokens"])
    types = list(meta.get("tokenizer.ggml.token_type") or [])
    vocab_tokens = [t if set(t) <= alphabet else "".join(spelling[b] for b in t.encode("utf-8")) for t in tokens]
    # control tokens (type 3) spelled in the byte alphabet become special added tokens
    special = [(i, t) for i, (t, ty) in enumerate(zip(tokens, types)) if ty == 3 and set(t) <= alphabet]
    if any(ty == 4 for ty in types):
        raise SystemExit("user-defined GGUF tokens are not handled")
    merges = [m.split(" ") for m in meta.get("tokenizer.ggml.merges", [])]
    return vocab_tokens, special, merges


def added_token(i, t):
    return {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
            "normalized": False, "special": True}


def byte_level(add_prefix_space):
    return {"type": "ByteLevel", "add_prefix_space": add_prefix_space, "trim_offsets": True, "use_regex": True}


def dump_tokenizer(d):
    # The Rust `tokenizers` pretty printer: 2-space indent, non-ASCII kept, no final newline.
    return json.dumps(d, indent=2, ensure_ascii=False)


def tokenizer_json_transformers(meta):
    vocab_tokens, special, merges = tokenizer_parts(meta)
    return dump_tokenizer({
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added_token(i, t) for i, t in special],
        "normalizer": None,
        "pre_tokenizer": byte_level(False),
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {},
        },
        "decoder": byte_level(True),
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None,
            "continuing_subword_prefix": "", "end_of_word_suffix": "",
            "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": {t: i for i, t in enumerate(vocab_tokens)},
            "merges": merges,
        },
    })


def tokenizer_json_hub(meta):
    pre = meta.get("tokenizer.ggml.pre")
    if pre != "smollm":
        raise SystemExit("--style hub knows only the 'smollm' pre-tokenizer, this GGUF has %r" % pre)
    vocab_tokens, special, merges = tokenizer_parts(meta)
    return dump_tokenizer({
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [added_token(i, t) for i, t in special],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Digits", "individual_digits": True}, byte_level(False)]},
        "post_processor": None,
        "decoder": byte_level(True),
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None,
            "continuing_subword_prefix": None, "end_of_word_suffix": None,
            "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
            "vocab": {t: i for i, t in enumerate(vocab_tokens)},
            "merges": [" ".join(m) for m in merges],
        },
    })


def special_names(meta):
    tokens = meta["tokenizer.ggml.tokens"]

    def tok(key):
        v = meta.get("tokenizer.ggml.%s_token_id" % key)
        return None if v is None else tokens[int(v)]

    return dict(bos_token=tok("bos"), eos_token=tok("eos"), pad_token=tok("padding"), unk_token=tok("unknown"))


def tokenizer_config_transformers(meta):
    d = {k: v for k, v in special_names(meta).items() if v is not None}
    d.update({
        "backend": "tokenizers",
        "is_local": True,
        "local_files_only": False,
        "model_max_length": 1000000000000000019884624838656,
        "tokenizer_class": "TokenizersBackend",
    })
    return json.dumps(d, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def tokenizer_config_hub(meta):
    _, special, _ = tokenizer_parts(meta)
    names = special_names(meta)
    d = {
        "add_prefix_space": False,
        "added_tokens_decoder": {
            str(i): {"content": t, "lstrip": False, "normalized": False, "rstrip": False,
                     "single_word": False, "special": True} for i, t in special},
        "additional_special_tokens": [t for t in (names["bos_token"], names["eos_token"]) if t],
        "clean_up_tokenization_spaces": False,
        "model_max_length": int(meta["llama.context_length"]),
        "tokenizer_class": "GPT2Tokenizer",
        "vocab_size": len(meta["tokenizer.ggml.tokens"]),
    }
    d.update({k: v for k, v in names.items() if v is not None})
    if "tokenizer.chat_template" in meta:
        d["chat_template"] = meta["tokenizer.chat_template"]
    return json.dumps(d, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


# ----------------------------------------------------------------------------
# Writing and hashing


def write_text(path, text):
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)


def build_files(meta, tensors, style):
    f = model_facts(meta, tensors)
    files = {}
    if style == "transformers":
        files["config.json"] = dump_config(config_transformers(meta, f))
        files["generation_config.json"] = dump_config(generation_config_transformers(f))
        files["tokenizer.json"] = tokenizer_json_transformers(meta)
        files["tokenizer_config.json"] = tokenizer_config_transformers(meta)
        if "tokenizer.chat_template" in meta:
            files["chat_template.jinja"] = meta["tokenizer.chat_template"]
    elif style == "hub":
        files["config.json"] = dump_config(config_hub(meta, f))
        files["generation_config.json"] = dump_config(generation_config_hub(f))
        files["tokenizer.json"] = tokenizer_json_hub(meta)
        files["tokenizer_config.json"] = tokenizer_config_hub(meta)
    else:
        raise SystemExit("unknown style %r" % style)
    return files


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def safetensors_hashes(path):
    """{name: {"dtype", "shape", "sha256"}} of the bytes of each tensor in one
    .safetensors file, read straight from the file."""
    out = {}
    with open(path, "rb") as fh:
        (n,) = struct.unpack("<Q", fh.read(8))
        header = json.loads(fh.read(n))
        base = 8 + n
        for name in sorted(header):
            if name == "__metadata__":
                continue
            info = header[name]
            start, end = info["data_offsets"]
            fh.seek(base + start)
            data = fh.read(end - start)
            if len(data) != end - start:
                raise SystemExit("%s: tensor %s runs past the end of the file" % (path, name))
            out[name] = {"dtype": info["dtype"], "shape": info["shape"],
                         "sha256": hashlib.sha256(data).hexdigest()}
    return out


def folder_hashes(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as fh:
            shard_names = sorted(set(json.load(fh)["weight_map"].values()))
    else:
        shard_names = ["model.safetensors"]
    out = {}
    for s in shard_names:
        out.update(safetensors_hashes(os.path.join(folder, s)))
    return out


def detect_style(folder):
    with open(os.path.join(folder, "config.json")) as fh:
        cfg = json.load(fh)
    return "transformers" if "rope_parameters" in cfg else "hub"


def verify(record_path, folder, style=None):
    with open(record_path) as fh:
        record = json.load(fh)
    style = style or detect_style(folder)
    print("verifying %s against %s (style %s)" % (folder, record_path, style))
    bad = 0
    want = record["tensors"]
    have = folder_hashes(folder)
    for name in sorted(set(want) | set(have)):
        w, h = want.get(name), have.get(name)
        if w is None:
            print("  EXTRA    %s (not in the record)" % name)
            bad += 1
        elif h is None:
            print("  MISSING  %s" % name)
            bad += 1
        elif (w["dtype"], list(w["shape"]), w["sha256"]) != (h["dtype"], list(h["shape"]), h["sha256"]):
            print("  MISMATCH %s: want %s %s %s, have %s %s %s" % (
                name, w["dtype"], w["shape"], w["sha256"][:16], h["dtype"], h["shape"], h["sha256"][:16]))
            bad += 1
    print("  tensors: %d checked, %d bad" % (len(want), bad))
    files = record.get("files", {}).get(style, {})
    for name, digest in sorted(files.items()):
        path = os.path.join(folder, name)
        got = sha256_file(path) if os.path.exists(path) else None
        if got != digest:
            print("  FILE MISMATCH %s: want %s, have %s" % (name, digest[:16], (got or "missing")[:16]))
            bad += 1
    print("  files: %d checked" % len(files))
    print("verify: %s" % ("OK" if bad == 0 else "FAILED (%d problems)" % bad))
    return 0 if bad == 0 else 1


def convert(gguf_path, out_dir, style):
    from safetensors.numpy import save_file

    print("reading %s" % gguf_path)
    reader, meta = read_gguf(gguf_path)
    print("dequantizing %d tensors" % len(reader.tensors))
    tensors = convert_tensors(reader, meta)
    files = build_files(meta, tensors, style)
    os.makedirs(out_dir, exist_ok=True)
    for name in ("model.safetensors.index.json", "chat_template.jinja"):
        if os.path.exists(os.path.join(out_dir, name)) and name not in files:
            os.remove(os.path.join(out_dir, name))  # left over from another style
    tmp = os.path.join(out_dir, "model.safetensors.tmp")
    save_file(tensors, tmp, metadata={"format": "pt"})
    os.chmod(tmp, 0o644)  # the safetensors writer creates it owner-only
    os.replace(tmp, os.path.join(out_dir, "model.safetensors"))
    for name, text in files.items():
        write_text(os.path.join(out_dir, name), text)
    n = sum(v.size for v in tensors.values())
    print("wrote %s: %d tensors, %d parameters, style %s" % (out_dir, len(tensors), n, style))


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("paths", nargs="+", help="MODEL.gguf OUT_DIR, or with --verify: OUT_DIR")
    ap.add_argument("--style", choices=("transformers", "hub"), default=None,
                    help="layout of the non-weight files (default: transformers; --verify detects it)")
    ap.add_argument("--verify", metavar="RECORD", help="check OUT_DIR against a record.json")
    args = ap.parse_args(argv)
    if args.verify:
        if len(args.paths) != 1:
            ap.error("--verify takes one folder")
        return verify(args.verify, args.paths[0], args.style)
    if len(args.paths) != 2:
        ap.error("need MODEL.gguf and OUT_DIR")
    convert(args.paths[0], args.paths[1], args.style or "transformers")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
