#!/usr/bin/env python3
"""Constrained decoding side by side: mlstack's token masks against llama.cpp's --json-schema.

For each JSON Schema of tools/bench_grammar.c (person, catalog, event), both engines decode the
same chat prompt greedily from the same GGUF file with the same thread count:

  mlstack    build/bench_grammar -m GGUF: the mask (plus the matcher's advance) is timed apart from
             the decode step, in CPU time of the calling thread, warm (second run of the grammar);
  llama.cpp  llama-cli / llama-completion --json-schema-file: its sampler time per token (which is
             where llama.cpp applies the grammar) and its eval time per token, from llama_perf's
             lines; and the same prompt without a schema, for the sampler's own cost.

Prints one table: per schema and engine, tokens, grammar/sampling ms per token, decode ms per token
and the grammar's share of a decode step. Numbers are wall/CPU ms on whatever machine runs it:
run it alone (a compile beside it halves everything).

  python3 tools/bench_grammar_vs_llamacpp.py [--gguf models/SmolLM2-135M-Instruct.Q4_1.gguf]
          [--peer peer] [-t 2] [-n 160]

Needs llama.cpp's tools from tools/build_llamacpp.sh (llama-completion or llama-cli) and build/mlstack,
whose `template` command renders the chat prompt from the GGUF's own template (the template tests
hold it to transformers' apply_chat_template byte for byte)."""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

ASKS = {  # the same asks as tools/bench_grammar.c's cases
    "person": "Describe a fictional person as JSON with name, age, email and city.",
    "catalog": "List three products of a shop as JSON: each with id, title, price and tags.",
    "event": "Give a calendar event as JSON: title, date, a status and attendees.",
}


def run(cmd, timeout=600):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=timeout,
                       cwd=ROOT)
    return p.returncode, p.stdout, p.stderr


def ours(args):
    """Rows of bench_grammar's warm runs: {schema: (tokens, mask_mean, mask_p99, step_mean, share)}."""
    exe = os.path.join(ROOT, "build", "bench_grammar")
    src = os.path.join(ROOT, "tools", "bench_grammar.c")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        rc, out, err = run(["cc", "-O2", "-I.", src, "-o", exe, "-lpthread", "-lm"])
        if rc:
            sys.exit("bench_grammar did not build:\n" + err)
    rc, out, err = run([exe, "-m", args.gguf, "-t", str(args.threads), "-n", str(args.tokens), "-q", "/nonexistent"])
    if rc:
        sys.exit("bench_grammar failed:\n" + out + err)
    rows = {}
    lines = out.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"(\w+)\s+([\d.]+) ms \| warm\s+(\d+) \|", line)
        if not m or i + 1 >= len(lines):
            continue
        c = re.search(r"cpu: mask mean ([\d.]+) ms, p99 ([\d.]+) ms; step mean ([\d.]+) ms, median ([\d.]+) ms",
                      lines[i + 1])
        if c:
            rows[m.group(1)] = dict(compile_ms=float(m.group(2)), tokens=int(m.group(3)), mask_mean=float(c.group(1)),
                                    mask_p99=float(c.group(2)), step=float(c.group(3)))
    return rows, out


def render(args, ask):
    """The chat prompt for one user message, from the GGUF's chat template (mlstack template)."""
    msgs = os.path.join(ROOT, "build", "bench_grammar_messages.json")
    with open(msgs, "w") as f:
        json.dump([{"role": "user", "content": ask}], f)
    rc, out, err = run([os.path.join(ROOT, "build", "mlstack"), "template", "-m", args.gguf, "--messages", msgs,
                        "--add-generation-prompt"])
    if rc:
        sys.exit("mlstack template failed:\n" + err)
    return out


def llama_bin(args):
    for name in ("llama-completion", "llama-cli"):
        p = os.path.join(args.peer, "bin", name)
        if os.path.exists(p):
            return p
    sys.exit("no llama-cli in %s/bin: run tools/build_llamacpp.sh with LLAMACPP_TARGETS including llama-cli" % args.peer)


PERF = {
    # older llama.cpp: "sampling time = X ms / N runs"; newer: "sampling time = X ms" alone (then
    # per token over the generated tokens: eval runs + the one from the prompt's eval)
    "sampling": re.compile(r"\bsampling time =\s*([\d.]+) ms(?: /\s*(\d+) runs)?"),
    "eval": re.compile(r"\beval time =\s*([\d.]+) ms /\s*(\d+) runs"),
}


def theirs(args, exe, prompt, schema_file):
    """llama.cpp's per-token sampler and eval times. A crash with its default setting (its weight
    repacking / AMX path segfaults on some Intel CPUs) is retried once with -nr (no repacking);
    the result says which setting ran."""
    cmd = [exe, "-m", args.gguf, "-t", str(args.threads), "-n", str(args.tokens), "--temp", "0", "-p", prompt,
           "-no-cnv", "--no-warmup", "-c", "2048", "--seed", "1"]
    if schema_file:
        cmd += ["--json-schema", open(schema_file).read()]
    setting = "default"
    rc, out, err = run(cmd)
    if rc < 0 or rc >= 128:
        print("llama.cpp %s crashed (%s) with its default setting: retried with -nr (no repacking)" % (
            os.path.basename(exe), "signal %d" % -rc if rc < 0 else "exit %d" % rc), file=sys.stderr)
        setting = "-nr"
        rc, out, err = run(cmd + ["-nr"])
    text = out + err
    got = {}
    for line in text.splitlines():
        if "prompt eval time" in line:
            continue
        for k, rx in PERF.items():
            m = rx.search(line)
            if m:
                got[k] = (float(m.group(1)), int(m.group(2)) if m.group(2) else 0)
    if rc or "sampling" not in got or "eval" not in got:
        return None, text[-2000:]
    runs = got["sampling"][1] or got["eval"][1] + 1
    return dict(sampling=got["sampling"][0] / runs, eval=got["eval"][0] / max(got["eval"][1], 1),
                tokens=got["eval"][1] + 1, setting=setting), text


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gguf", default=os.path.join("models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--peer", default=os.path.join(ROOT, "peer"))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("-n", "--tokens", type=int, default=160)
    args = ap.parse_args()
    exe = llama_bin(args)
    mine, raw = ours(args)
    print("mlstack bench_grammar (warm grammar; CPU ms of the calling thread):")
    print("\n".join("  " + line for line in raw.splitlines() if line.strip()))
    print()
    hdr = "%-8s %-9s %6s | %12s %12s | %10s | %7s" % ("schema", "engine", "tokens", "grammar/tok", "(p99)",
                                                      "decode/tok", "share")
    print(hdr)
    print("-" * len(hdr))
    for name, ask in ASKS.items():
        prompt = render(args, ask)
        # llama.cpp adds BOS by its GGUF's flag; SmolLM2's template starts with <|im_start|> and has none
        schema = os.path.join(ROOT, "build", "bench_grammar_%s.json" % name)
        free, _ = theirs(args, exe, prompt, None)
        con, log = theirs(args, exe, prompt, schema)
        m = mine.get(name)
        if m:
            print("%-8s %-9s %6d | %9.3f ms %9.3f ms | %7.2f ms | %6.2f%%" % (
                name, "mlstack", m["tokens"], m["mask_mean"], m["mask_p99"], m["step"],
                100 * m["mask_mean"] / m["step"]))
        if con and free:
            extra = con["sampling"] - free["sampling"]
            print("%-8s %-9s %6d | %9.3f ms %12s | %7.2f ms | %6.2f%%   (sampler %.3f ms/tok with schema, %.3f without; %s)" % (
                name, "llama.cpp", con["tokens"], extra, "-", con["eval"], 100 * extra / con["eval"],
                con["sampling"], free["sampling"], con["setting"]))
        else:
            print("%-8s %-9s failed: %s" % (name, "llama.cpp", (log or "").strip().splitlines()[-3:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
