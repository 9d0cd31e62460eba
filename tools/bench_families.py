#!/usr/bin/env python3
"""Prefill/decode speed of mlstack and llama.cpp on the same random-weight model shapes.

For each shape below it writes a Hugging Face folder of random bf16 weights (transformers'
class on the meta device, filled with N(0, 0.02): no download, no slow init), converts it to a
Q8_0 GGUF with llama.cpp's own convert_hf_to_gguf.py (its vocabulary step replaced by a
placeholder one of vocab_size tokens, since the shapes have no tokenizer; llama-bench feeds
random token ids anyway), then runs, interleaved per shape,
    mlstack bench --shape FOLDER/config.json --dtype bf16 --quant q8_0 -p P -n N -t T -r R
    llama-bench -m FOLDER.gguf -p P -n N -t T -r R
and prints one table (tokens/s, median of R for mlstack, mean of R for llama-bench as each
reports it) with the 1-minute load average before each run.

    python3 tools/bench_families.py --work DIR [--llama PEER_DIR] [--shapes gemma3,phi3,qwen3moe]

Needs: torch, transformers, safetensors, numpy, and a llama.cpp checkout (for the converter and
its gguf-py) plus llama-bench. Memory: about 3x the largest shape's bf16 size.
"""

import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Shapes of the real models' text stacks; where a shape is cut (fewer layers) the note says so.
SHAPES = {
    # google/gemma-3-1b-it: the whole model (262k vocabulary, tied head)
    "gemma3": dict(cls="Gemma3ForCausalLM", note="Gemma-3-1B, full shape",
                   cfg=dict(vocab_size=262144, hidden_size=1152, intermediate_size=6912, num_hidden_layers=26,
                            num_attention_heads=4, num_key_value_heads=1, head_dim=256, sliding_window=512,
                            query_pre_attn_scalar=256, max_position_embeddings=32768, rms_norm_eps=1e-6,
                            rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1000000.0},
                                             "sliding_attention": {"rope_type": "default", "rope_theta": 10000.0}},
                            layer_types=[("full_attention" if (i + 1) % 6 == 0 else "sliding_attention")
                                         for i in range(26)],
                            tie_word_embeddings=True)),
    # microsoft/Phi-3-mini-4k-instruct: its layer shape, 8 of the 32 layers
    "phi3": dict(cls="Phi3ForCausalLM", note="Phi-3-mini layers, 8 of 32",
                 cfg=dict(vocab_size=32064, hidden_size=3072, intermediate_size=8192, num_hidden_layers=8,
                          num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096,
                          original_max_position_embeddings=4096, rms_norm_eps=1e-5, tie_word_embeddings=False,
                          rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
    # Qwen/Qwen3-30B-A3B: its layer shape (128 experts, 8 routed, 768 wide), 4 of the 48 layers
    "qwen3moe": dict(cls="Qwen3MoeForCausalLM", note="Qwen3-30B-A3B layers, 4 of 48",
                     cfg=dict(vocab_size=151936, hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768,
                              num_hidden_layers=4, num_attention_heads=32, num_key_value_heads=4, head_dim=128,
                              num_experts=128, num_experts_per_tok=8, norm_topk_prob=True, decoder_sparse_step=1,
                              max_position_embeddings=40960, rms_norm_eps=1e-6, tie_word_embeddings=False,
                              rope_parameters={"rope_type": "default", "rope_theta": 1000000.0})),
}


def make_folder(name, spec, out):
    import torch
    import transformers
    if os.path.exists(os.path.join(out, "model.safetensors.index.json")) or os.path.exists(
            os.path.join(out, "model.safetensors")):
        return
    cls = getattr(transformers, spec["cls"])
    cfg = cls.config_class(**spec["cfg"], bos_token_id=1, eos_token_id=2, pad_token_id=0)
    with torch.device("meta"):
        model = cls(cfg)
    model = model.to_empty(device="cpu").to(torch.bfloat16)
    gen = torch.Generator().manual_seed(1234)
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if "norm" in pname:
                p.fill_(0.0 if spec["cls"].startswith("Gemma") else 1.0)
            else:
                p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float32).mul_(0.02).to(p.dtype))
    model.config.dtype = torch.bfloat16
    model.save_pretrained(out, max_shard_size="20GB")
    print("%s: %s, %.2f B parameters" % (name, out, sum(p.numel() for p in model.parameters()) / 1e9), flush=True)


def convert(folder, gguf_path, llama_src):
    if os.path.exists(gguf_path):
        return
    tok = os.path.join(folder, "tokenizer.json")
    if not os.path.exists(tok):  # the Gemma converter counts the vocabulary in tokenizer.json
        with open(os.path.join(folder, "config.json")) as f:
            n = json.load(f)["vocab_size"]
        with open(tok, "w") as f:
            json.dump({"model": {"vocab": {"<t%d>" % i: i for i in range(n)}}, "added_tokens": []}, f)
    code = r"""
import sys
sys.path.insert(0, LLAMA)
sys.argv = ["convert_hf_to_gguf.py", FOLDER, "--outtype", "q8_0", "--outfile", OUT]
import convert_hf_to_gguf as c
import gguf

def placeholder_vocab(self):
    n = self.hparams["vocab_size"]
    w = self.gguf_writer
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    # ids 3..258: the byte pieces SentencePiece vocabularies carry (llama.cpp looks up <0x0A>)
    # and the special pieces llama.cpp marks by name for some models (Phi-3: <unk> <s> </s> <|endoftext|>)
    toks = [("<0x%02X>" % (i - 3)) if 3 <= i < 259 else ("<t%d>" % i) for i in range(n)]
    toks[0], toks[1], toks[2], toks[259] = "<unk>", "<s>", "</s>", "<|endoftext|>"
    w.add_token_list([t.encode() for t in toks])
    w.add_token_scores([0.0] * n)
    types = [gguf.TokenType.BYTE if 3 <= i < 259 else gguf.TokenType.NORMAL for i in range(n)]
    types[0], types[1], types[2] = gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL
    types[259] = gguf.TokenType.CONTROL
    w.add_token_types(types)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)

real = c.get_model_class
def patched(*a, **k):
    cls = real(*a, **k)
    cls.set_vocab = placeholder_vocab
    return cls
c.get_model_class = patched
c.main()
"""
    code = code.replace("LLAMA", repr(llama_src)).replace("FOLDER", repr(folder)).replace("OUT", repr(gguf_path))
    subprocess.run([sys.executable, "-c", code], check=True)


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def run_mlstack(cli, folder, p, n, t, r):
    out = subprocess.run([cli, "bench", "--shape", os.path.join(folder, "config.json"), "--dtype", "bf16", "--quant",
                          "q8_0", "-p", str(p), "-n", str(n), "-t", str(t), "-r", str(r), "--bw-mib", "0", "--json"],
                         check=True, capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            res[d.get("test")] = d
    return res, out


def run_llama(bench, gguf_path, p, n, t, r):
    out = subprocess.run([bench, "-m", gguf_path, "-p", str(p), "-n", str(n), "-t", str(t), "-r", str(r), "-o", "jsonl"],
                         check=True, capture_output=True, text=True).stdout
    res = {}
    for line in out.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            res["pp%d" % d["n_prompt"] if d["n_prompt"] else "tg%d" % d["n_gen"]] = d
    return res, out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True, help="folder for the random models and GGUFs")
    ap.add_argument("--llama", default=os.path.join(ROOT, "peer"), help="peer folder: bin/llama-bench, src/vendor/llama.cpp")
    ap.add_argument("--cli", default=os.path.join(ROOT, "build", "mlstack"))
    ap.add_argument("--shapes", default=",".join(SHAPES))
    ap.add_argument("-p", type=int, default=64)
    ap.add_argument("-n", type=int, default=16)
    ap.add_argument("-t", type=int, default=2)
    ap.add_argument("-r", type=int, default=3)
    ap.add_argument("--prepare-only", action="store_true")
    args = ap.parse_args()
    llama_src = os.path.join(args.llama, "src", "vendor", "llama.cpp")
    rows = []
    for name in args.shapes.split(","):
        spec = SHAPES[name]
        folder = os.path.join(args.work, name)
        gguf_path = folder + "-q8_0.gguf"
        make_folder(name, spec, folder)
        convert(folder, gguf_path, llama_src)
        if args.prepare_only:
            continue
        la0 = loadavg()
        try:
            ours, raw_ours = run_mlstack(args.cli, folder, args.p, args.n, args.t, args.r)
        except subprocess.CalledProcessError as e:
            ours, raw_ours = {}, "mlstack failed: %s\n" % e
        la1 = loadavg()
        try:
            theirs, raw_theirs = run_llama(os.path.join(args.llama, "bin", "llama-bench"), gguf_path, args.p, args.n,
                                           args.t, args.r)
        except subprocess.CalledProcessError as e:
            theirs, raw_theirs = {}, "llama-bench failed: %s\n" % e
        sys.stderr.write(raw_ours + raw_theirs)
        sys.stderr.flush()
        rows.append((name, spec["note"], ours, theirs, la0, la1))
    pp, tg = "pp%d" % args.p, "tg%d" % args.n
    print("| shape | mlstack pp%d | llama.cpp pp%d | mlstack tg%d | llama.cpp tg%d | load avg before (ours/theirs) |"
          % (args.p, args.p, args.n, args.n))
    print("|---|---|---|---|---|---|")
    for name, note, ours, theirs, la0, la1 in rows:
        def g(d, k, key):
            v = d.get(k, {}).get(key)
            return "%.2f" % v if isinstance(v, (int, float)) else "?"
        print("| %s (%s) | %s | %s | %s | %s | %.1f / %.1f |" % (name, note, g(ours, pp, "tps_median"),
                                                               g(theirs, pp, "avg_ts"), g(ours, tg, "tps_median"),
                                                               g(theirs, tg, "avg_ts"), la0, la1))


if __name__ == "__main__":
    main()
