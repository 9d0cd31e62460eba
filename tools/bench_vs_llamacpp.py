#!/usr/bin/env python3
"""Side-by-side speed of llama.cpp and mlstack on the same random-weight models.

    tools/bench_vs_llamacpp.py                              # full matrix (slow)
    tools/bench_vs_llamacpp.py --shapes smollm2 --types f16,q8_0 --threads 1,2 -r 3
    tools/bench_vs_llamacpp.py --batched --shapes smollm2 --types f16 --npl 1,2,4,8,16
    tools/bench_vs_llamacpp.py --shapes llama3.1-8b,qwen3-4b --types q4_k_m,iq4_xs,iq2_xxs --tests pp512,tg64

Needs llama.cpp's tools from tools/build_llamacpp.sh (peer/bin) and the
models from tools/gen_bench_models.py (models/bench/SHAPE-TYPE; missing ones are
generated unless --no-gen).  The random-block shapes (llama3.2-1b, llama3.2-3b, qwen3-4b,
llama3.1-8b; types q4_k_m, iq4_xs, iq2_xxs, q8_0, tq2_0) are a GGUF alone, which both engines
read (0.7-5.2 GB each; the 8B Q4_K_M takes about 9 GiB of memory in llama.cpp, which repacks it).  mlstack is run as `build/mlstack bench`; when that
command does not exist yet, its column reads "-" and a message says why.

Default mode, for every shape x type x threads x test (pp128, pp512, tg64) and
each of -r repetitions, runs one llama-bench repetition and one mlstack bench
repetition, alternating which engine goes first, so that slow drift or a noisy
neighbour hits both engines alike.  Reported: the median tokens/s over the
repetitions (min-max in --spread) and the ratio mlstack / llama.cpp.

Peer failures are recorded, not hidden: when llama.cpp exits with an error the row says so; when
it crashes (a signal: its weight-repacking / AMX path segfaults on some Intel CPUs) the run is
retried once without repacking (llama-bench --repack 0, llama-batched-bench -nr), the rest of
that row uses the same setting, and the 'llama.cpp setting' column says which one each number
used ("default" where it ran as shipped).  A list of failures ends the output (and --json-out).

--memory measures what loading costs: peak resident memory (the process's maximum RSS, from
wait4) and time to first token (the wall time of a process that loads the model and generates
one token after a 4-word prompt, warm page cache: one untimed run first), median of -r runs.
llama.cpp runs llama-completion on the GGUF with mmap (its default), -c 4096 (the KV pool
mlstack allocates by default) and --no-warmup (its warm-up decode is no part of loading);
mlstack runs `mlstack run` on the same GGUF and on the folder (quantized at load for q8_0/q4_1),
and for q8_0/q4_1 also on two folders `mlstack quantize` writes from it first: the saved rows
(--rows, the format older builds read: packed into panels at start) and the saved panels (the
default: mapped in place, no packing at start).

--long runs the long-context tests: prefill of 4096 and 8192 tokens (pp4096, pp8192) and 32
decoded tokens at depth 4096 and 8192 (llama-bench -d; `mlstack bench -d`; other sizes with
--long-sizes), and reports the share of mlstack's time spent in attention, from one extra
profiled run (--profile).

--batched runs llama-batched-bench (prompt NPP, NTG generated tokens, NPL
parallel sequences) against `mlstack bench --parallel NPL` (through mlstack's scheduler; its
prompts are 32 tokens and only the aggregate decode rate is measured, so the pp columns stay
empty on its side).

mlstack's side of the contract (one JSON object per line and configuration):
    default:   keys shape|model, type, threads, n_prompt, n_gen,
               tps_median, tps_min, tps_max (tokens/s)
    --batched: keys threads, parallel, decode_tps (tokens/s, all sequences together)
The command lines are templates (--mlstack-cmd, --mlstack-batched-cmd) in case
the flags change.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shlex
import signal
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
QUANT_TYPES = ("q8_0", "q4_1")
# gen_bench_models.py's random-block shapes: a GGUF only (no float folder), which both engines read
# as it is (mlstack -m FILE.gguf), in the mixes q4_k_m, iq4_xs, iq2_xxs, q8_0 and tq2_0
BLOCK_SHAPES = ("llama3.2-1b", "llama3.2-3b", "qwen3-4b", "llama3.1-8b")

DEFAULT_MLSTACK_CMD = ("{mlstack} bench -m {model_dir} -p {n_prompt} -n {n_gen} -d {depth} "
                       "-t {threads} -r {reps} {quant_flag} --bw-mib 0 --json")
DEFAULT_MLSTACK_BATCHED_CMD = ("{mlstack} bench -m {model_dir} --parallel {npl} -n {ntg} -r 1 "
                               "-t {threads} {quant_flag} --bw-mib 0 --json")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def rel(p: str) -> str:
    try:
        r = os.path.relpath(p)
        return r if not r.startswith("../..") else p
    except ValueError:
        return p


def run_cmd(cmd: list[str], timeout: float, verbose: bool) -> tuple[int, str, str]:
    if verbose:
        log("$ " + " ".join(shlex.quote(rel(c) if os.path.isabs(c) else c) for c in cmd))
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        return 124, "", f"timed out after {timeout:.0f} s"
    except OSError as e:
        return 127, "", str(e)


def json_lines(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and line.endswith("}"):
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return out


def attention_share(text: str) -> float | None:
    """The attention row's share (percent) in a profile summary (mlstack_engine_profile_summary)."""
    m = re.search(r"^attention\s+\d+\s+[\d.]+\s+([\d.]+)%", text, re.M)
    return float(m.group(1)) if m else None


def measure_process(cmd: list[str], timeout: float, verbose: bool) -> tuple[int, float, float, str]:
    """Runs cmd; returns (exit status, wall seconds, peak RSS in MiB from wait4, output tail)."""
    import tempfile
    import time
    if verbose:
        log("$ " + " ".join(shlex.quote(rel(c) if os.path.isabs(c) else c) for c in cmd))
    with tempfile.TemporaryFile() as out:
        t0 = time.monotonic()
        try:
            p = subprocess.Popen(cmd, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
        except OSError as e:
            return 127, 0.0, 0.0, str(e)
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.002)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        text = out.read().decode("utf-8", "replace")
    # ru_maxrss: KiB on Linux (bytes on macOS)
    rss = ru.ru_maxrss / (1048576.0 if sys.platform == "darwin" else 1024.0)
    return p.returncode, wall, rss, text


def tail(text: str, n: int = 6) -> str:
    return "\n".join("    " + l for l in text.strip().splitlines()[-n:])


# ---------------------------------------------------------------- models

def model_dir(args, shape: str, typ: str) -> str:
    return os.path.join(args.models, f"{shape}-{typ}")


def ensure_model(args, shape: str, typ: str) -> bool:
    d = model_dir(args, shape, typ)
    have = os.path.isfile(os.path.join(d, "model.gguf")) and \
        (shape in BLOCK_SHAPES or os.path.isfile(os.path.join(d, "model.safetensors")))
    if have:
        return True
    if args.no_gen:
        log(f"missing {rel(d)} (run tools/gen_bench_models.py --shape {shape} --dtype {typ} --out {rel(d)})")
        return False
    log(f"generating {rel(d)} ...")
    rc, so, se = run_cmd([sys.executable, os.path.join(ROOT, "tools", "gen_bench_models.py"),
                          "--shape", shape, "--dtype", typ, "--out", d], 7200, args.verbose)
    if rc != 0:
        log(f"gen_bench_models failed for {shape}-{typ}:\n{tail(so + se)}")
        return False
    return True


# ---------------------------------------------------------------- engines

class LlamaCpp:
    def __init__(self, args):
        self.args = args
        self.bench = os.path.join(args.peer, "bin", "llama-bench")
        self.batched = os.path.join(args.peer, "bin", "llama-batched-bench")
        self.why_not = None
        exe = self.batched if args.batched else self.bench
        if not os.access(exe, os.X_OK):
            self.why_not = f"{rel(exe)} not found: run tools/build_llamacpp.sh"
        self.failures: list[dict] = []
        vf = os.path.join(args.peer, "VERSION")
        self.version = open(vf).read().strip().replace("\n", "; ") if os.path.isfile(vf) else "unknown"

    def _failed(self, what: str, cmd: list[str], rc: int, out: str) -> None:
        sig = f"signal {-rc} ({signal.Signals(-rc).name})" if rc < 0 and -rc in signal.Signals._value2member_map_ else f"rc {rc}"
        self.failures.append(dict(what=what, cmd=" ".join(shlex.quote(c) for c in cmd), status=sig, tail=tail(out)))
        log(f"{what} failed ({sig}):\n{tail(out)}")

    def run_test(self, gguf_path: str, threads: int, n_prompt: int, n_gen: int,
                 no_repack: bool = False, depth: int = 0) -> tuple[float | None, str]:
        """tokens/s (None on failure) and the setting used: "default" or "--repack 0". A crash
        with the default setting (llama.cpp's repacking path) is recorded and retried once
        without repacking; the caller keeps that setting for the row's later repetitions."""
        for nr in ((True,) if no_repack else (False, True)):
            cmd = [self.bench, "-m", gguf_path, "-p", str(n_prompt), "-n", str(n_gen),
                   "-t", str(threads), "-r", "1", "-o", "json"] + (["-d", str(depth)] if depth else []) \
                + (["--repack", "0"] if nr else []) \
                + self.args.llama_bench_args
            label = "--repack 0" if nr else "default"
            rc, so, se = run_cmd(cmd, self.args.timeout, self.args.verbose)
            if rc != 0:
                self._failed(f"llama-bench {label} pp{n_prompt} tg{n_gen} d{depth} t{threads} {rel(gguf_path)}", cmd, rc,
                             se or so)
                if rc < 0 and not nr:
                    continue  # a crash: retry without repacking
                return None, label
            try:
                rows = json.loads(so[so.index("["):])
            except ValueError:
                log(f"llama-bench: no JSON in its output:\n{tail(so + se)}")
                return None, label
            for r in rows:
                if int(r.get("n_prompt", -1)) == n_prompt and int(r.get("n_gen", -1)) == n_gen \
                        and int(r.get("n_depth", 0)) == depth:
                    return float(r["avg_ts"]), label
            return None, label
        return None, "--repack 0"

    def run_batched(self, gguf_path: str, threads: int, npp: int, ntg: int,
                    npl: list[int], no_repack: bool = False) -> tuple[dict[int, tuple[float, float]] | None, str]:
        """As run_test: the results and the setting used ("default" or "-nr", after a crash)."""
        ctx = max(npl) * (npp + ntg) + 64
        for nr in ((True,) if no_repack else (False, True)):
            cmd = [self.batched, "-m", gguf_path, "-c", str(ctx), "-b", "2048", "-ub", "512",
                   "-npp", str(npp), "-ntg", str(ntg), "-npl", ",".join(map(str, npl)),
                   "-t", str(threads), "-tb", str(threads), "--output-format", "jsonl"] \
                + (["-nr"] if nr else []) + self.args.llama_bench_args
            label = "-nr" if nr else "default"
            rc, so, se = run_cmd(cmd, self.args.timeout, self.args.verbose)
            if rc != 0:
                self._failed(f"llama-batched-bench {label} npl {npl} t{threads} {rel(gguf_path)}", cmd, rc, se or so)
                if rc < 0 and not nr:
                    continue
                return None, label
            res = {}
            for r in json_lines(so):
                if "pl" in r and "speed_pp" in r:
                    res[int(r["pl"])] = (float(r["speed_pp"]), float(r["speed_tg"]))
            if not res:
                log(f"llama-batched-bench: no JSON lines in its output:\n{tail(so + se)}")
                return None, label
            return res, label
        return None, "-nr"


class Mlstack:
    def __init__(self, args):
        self.args = args
        self.exe = args.mlstack
        self.why_not = None
        if not os.access(self.exe, os.X_OK):
            self.why_not = f"{rel(self.exe)} not found: run make"
            return
        # `mlstack --help` lists the commands; until `bench` is among them it is
        # not there (unknown commands just print the usage).
        rc, so, se = run_cmd([self.exe, "--help"], 60, False)
        if not re.search(r"^\s+bench\b", so + se, re.M):
            self.why_not = f"`{rel(self.exe)} bench` is not available yet (not in `mlstack --help`)"

    def _cmd(self, template: str, **kw) -> list[str]:
        typ = kw.pop("typ")
        # a GGUF file runs as stored (--gguf); a folder of float weights quantizes at load
        gguf_file = kw["model_dir"].endswith(".gguf")
        kw["quant_flag"] = f"--quant {typ}" if typ in QUANT_TYPES and not gguf_file else ""
        kw["mlstack"] = shlex.quote(self.exe)
        kw["model_dir"] = shlex.quote(kw["model_dir"])
        return shlex.split(template.format(**kw))

    def run_test(self, mdir: str, typ: str, threads: int, n_prompt: int, n_gen: int, depth: int = 0,
                 profile: str | None = None) -> float | None:
        """tokens/s; with `profile` (a trace path) one more run is profiled and self.last_attention
        gets the share of that run's time in attention (None when the summary has no such row)."""
        cmd = self._cmd(self.args.mlstack_cmd, model_dir=mdir, typ=typ, threads=threads,
                        n_prompt=n_prompt, n_gen=n_gen, reps=1, depth=depth)
        if profile:
            cmd += ["--profile", profile]
        rc, so, se = run_cmd(cmd, self.args.timeout, self.args.verbose)
        if rc != 0:
            log(f"mlstack bench failed (rc {rc}):\n{tail(se or so)}")
            return None
        if profile:
            self.last_attention = attention_share(se)
        for r in json_lines(so):
            if int(r.get("n_prompt", -1)) == n_prompt and int(r.get("n_gen", -1)) == n_gen \
                    and int(r.get("threads", threads)) == threads and int(r.get("depth", 0)) == depth:
                return float(r.get("tps_median", r.get("tps", 0.0)))
        log(f"mlstack bench: no matching JSON line (n_prompt={n_prompt}, n_gen={n_gen}):\n{tail(so + se)}")
        return None

    def run_batched(self, mdir: str, typ: str, threads: int, npp: int, ntg: int,
                    npl: list[int]) -> dict[int, tuple[float, float]] | None:
        cmd = self._cmd(self.args.mlstack_batched_cmd, model_dir=mdir, typ=typ, threads=threads,
                        npp=npp, ntg=ntg, npl=",".join(map(str, npl)))
        rc, so, se = run_cmd(cmd, self.args.timeout, self.args.verbose)
        if rc != 0:
            log(f"mlstack bench --parallel failed (rc {rc}):\n{tail(se or so)}")
            return None
        res = {}
        for r in json_lines(so):
            if r.get("test") == "parallel" and "decode_tps" in r:
                res[int(r["parallel"])] = (None, float(r["decode_tps"]))
        return res or None


# ---------------------------------------------------------------- tables

def fmt(v: float | None) -> str:
    return "-" if v is None else (f"{v:.1f}" if v < 1000 else f"{v:.0f}")


def summary(samples: list[float], spread: bool) -> tuple[float | None, str]:
    samples = [v for v in samples if v is not None]
    if not samples:
        return None, "-"
    med = statistics.median(samples)
    s = fmt(med)
    if spread and len(samples) > 1:
        s += f" ({fmt(min(samples))}-{fmt(max(samples))})"
    return med, s


def ratio(a: float | None, b: float | None) -> str:
    return "-" if a is None or b is None or b == 0 else f"{a / b:.2f}"


def header_lines(args, lc: LlamaCpp) -> list[str]:
    cpu = platform.processor() or "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return [
        f"date: {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}; cpu: {cpu} "
        f"({os.cpu_count()} logical CPUs); llama.cpp: {lc.version}",
        f"command: tools/bench_vs_llamacpp.py {' '.join(shlex.quote(a) for a in sys.argv[1:])}",
        "",
    ]


def parse_tests(spec: str) -> list[tuple[str, int, int]]:
    tests = []
    for t in spec.split(","):
        t = t.strip()
        m = re.fullmatch(r"(pp|tg)(\d+)", t)
        if not m:
            sys.exit(f"bad test {t!r}: use ppN or tgN")
        n = int(m.group(2))
        tests.append((t, n, 0) if m.group(1) == "pp" else (t, 0, n))
    return tests



def model_configs(args):
    """(shape, type, folder, its GGUF) for every shape and type asked for whose model exists; with
    --gguf, the given files instead, each run as it is by both engines (mlstack -m FILE.gguf)."""
    if args.gguf:
        for item in args.gguf:
            label, _, path = item.rpartition("=")
            shape, _, typ = label.partition("/") if label else (os.path.basename(path), "", "")
            if not os.path.isfile(path):
                log(f"--gguf: no file {path}")
                continue
            yield shape, typ or "file", path, path
        return
    for shape in args.shapes:
        for typ in args.types:
            if ensure_model(args, shape, typ):
                gguf_path = os.path.join(model_dir(args, shape, typ), "model.gguf")
                yield shape, typ, gguf_path if shape in BLOCK_SHAPES else model_dir(args, shape, typ), gguf_path

def bench_default(args, lc: LlamaCpp, ml: Mlstack) -> list[dict]:
    tests = parse_tests(args.tests)
    rows = []
    print("\n".join(header_lines(args, lc)))
    print("| shape | type | threads | test | llama.cpp t/s | llama.cpp setting | mlstack t/s | ratio |")
    print("|---|---|---:|---|---:|---|---:|---:|")
    for shape, typ, mdir, gguf_path in model_configs(args):
        for th in args.threads:
            for name, n_p, n_g in tests:
                s_lc: list[float] = []
                s_ml: list[float] = []
                setting, n_fail = "default", len(lc.failures)
                for rep in range(args.reps):
                    order = ("lc", "ml") if rep % 2 == 0 else ("ml", "lc")
                    for eng in order:
                        if eng == "lc" and lc.why_not is None:
                            v, used = lc.run_test(gguf_path, th, n_p, n_g, no_repack=setting != "default")
                            if used != setting:  # the default crashed: the rest of the row without repacking
                                s_lc, setting = [], used
                            if v is not None:
                                s_lc.append(v)
                        elif eng == "ml" and ml.why_not is None:
                            v = ml.run_test(mdir, typ, th, n_p, n_g)
                            if v is not None:
                                s_ml.append(v)
                m_lc, t_lc = summary(s_lc, args.spread)
                m_ml, t_ml = summary(s_ml, args.spread)
                fails = lc.failures[n_fail:]
                label = setting if not fails else f"{setting}; {len(fails)} failed: {fails[0]['status']}"
                print(f"| {shape} | {typ} | {th} | {name} | {t_lc} | {label} | {t_ml} | {ratio(m_ml, m_lc)} |",
                      flush=True)
                rows.append(dict(shape=shape, type=typ, threads=th, test=name, n_prompt=n_p, n_gen=n_g,
                                 llamacpp_tps=s_lc, llamacpp_setting=setting, llamacpp_failures=fails,
                                 mlstack_tps=s_ml))
    return rows


def bench_batched(args, lc: LlamaCpp, ml: Mlstack) -> list[dict]:
    rows = []
    print("\n".join(header_lines(args, lc)))
    print("| shape | type | threads | npp | ntg | npl | llama.cpp pp t/s | mlstack pp t/s | ratio pp "
          "| llama.cpp tg t/s | mlstack tg t/s | ratio tg | llama.cpp setting |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for shape, typ, mdir, gguf_path in model_configs(args):
        for th in args.threads:
            acc_lc: dict[int, list[tuple[float, float]]] = {p: [] for p in args.npl}
            acc_ml: dict[int, list[tuple[float, float]]] = {p: [] for p in args.npl}
            setting, n_fail = "default", len(lc.failures)
            for rep in range(args.reps):
                order = ("lc", "ml") if rep % 2 == 0 else ("ml", "lc")
                for eng in order:
                    if eng == "lc" and lc.why_not is None:
                        res, used = lc.run_batched(gguf_path, th, args.npp, args.ntg, args.npl,
                                                   no_repack=setting != "default")
                        if used != setting:
                            acc_lc, setting = {p: [] for p in args.npl}, used
                        acc = acc_lc
                    elif eng == "ml" and ml.why_not is None:
                        res = ml.run_batched(mdir, typ, th, args.npp, args.ntg, args.npl)
                        acc = acc_ml
                    else:
                        continue
                    for p, v in (res or {}).items():
                        if p in acc:
                            acc[p].append(v)
            fails = lc.failures[n_fail:]
            label = setting if not fails else f"{setting}; {len(fails)} failed: {fails[0]['status']}"
            for p in args.npl:
                cells = []
                for k in (0, 1):
                    m1, t1 = summary([v[k] for v in acc_lc[p]], args.spread)
                    m2, t2 = summary([v[k] for v in acc_ml[p]], args.spread)
                    cells += [t1, t2, ratio(m2, m1)]
                print(f"| {shape} | {typ} | {th} | {args.npp} | {args.ntg} | {p} | " + " | ".join(cells)
                      + f" | {label} |", flush=True)
                rows.append(dict(shape=shape, type=typ, threads=th, npp=args.npp, ntg=args.ntg, npl=p,
                                 llamacpp=acc_lc[p], llamacpp_setting=setting, llamacpp_failures=fails,
                                 mlstack=acc_ml[p]))
    return rows


MEMORY_PROMPT = "The three primary colors"


def bench_memory(args, lc: LlamaCpp, ml: Mlstack) -> list[dict]:
    """Peak RSS and time to first token: llama.cpp (GGUF, mmap) vs mlstack on the same GGUF and
    on the folder (quantized at load for quantized types)."""
    rows = []
    comp = os.path.join(args.peer, "bin", "llama-completion")
    lc_ok = lc.why_not is None and os.access(comp, os.X_OK)
    if lc.why_not is None and not lc_ok:
        log(f"skipping llama.cpp: {rel(comp)} not found")
    print("\n".join(header_lines(args, lc)))
    print(f"peak RSS (MiB) and time to first token (ms: process start to one generated token, warm page cache), "
          f"median of {args.reps}")
    print("| shape | type | threads | llama.cpp RSS | llama.cpp TTFT | llama.cpp setting | mlstack GGUF RSS "
          "| mlstack GGUF TTFT | mlstack folder RSS | mlstack folder TTFT | mlstack saved rows RSS "
          "| mlstack saved rows TTFT | mlstack saved panels RSS | mlstack saved panels TTFT | ratio RSS | ratio TTFT "
          "| ratio RSS panels | ratio TTFT panels |")
    print("|---|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    import tempfile
    if ml.why_not is None:
        os.makedirs(args.models, exist_ok=True)  # a fresh checkout has no models/bench yet
    saved_root = tempfile.mkdtemp(prefix="saved-", dir=args.models) if ml.why_not is None else None
    for shape, typ, mdir, gguf_path in model_configs(args):
        saved = {}
        for eng, extra in (("rows", ["--rows"]), ("panels", [])):
            if saved_root is None or typ not in QUANT_TYPES:
                continue
            out = os.path.join(saved_root, f"{shape}-{typ}-{eng}")
            rc, so, se = run_cmd([ml.exe, "quantize", "-m", mdir, "--quant", typ, "-o", out] + extra, args.timeout,
                                 args.verbose)
            if rc != 0:
                log(f"mlstack quantize failed (rc {rc}):\n{tail(se or so)}")
            else:
                saved[eng] = out
        for th in args.threads:
            res: dict[str, list[tuple[float, float]]] = {"lc": [], "gguf": [], "dir": [], "rows": [], "panels": []}
            setting, n_fail = "default", len(lc.failures)

            def cmd_of(eng: str) -> list[str]:
                if eng == "lc":
                    return [comp, "-m", gguf_path, "-p", MEMORY_PROMPT, "-n", "1", "-t", str(th), "-c", "4096",
                            "--no-warmup", "-no-cnv", "--temp", "0"] \
                        + (["-nr"] if setting != "default" else []) + args.llama_bench_args
                quant = ["--quant", typ] if typ in QUANT_TYPES and eng == "dir" else []
                path = gguf_path if eng == "gguf" else saved[eng] if eng in saved else mdir
                # token ids: the bench folders carry no tokenizer files (5 ids, about the prompt's length)
                return [ml.exe, "run", "-m", path, "--ids", "1,450,2211,7601,11", "-n", "1", "-t", str(th)] + quant
            folder = [] if mdir == gguf_path else ["dir"]  # a GGUF alone (--gguf, block shapes): no folder
            engines = ([] if not lc_ok else ["lc"]) + ([] if ml.why_not else ["gguf"] + folder + sorted(saved))
            for eng in engines:
                rc, _, _, text = measure_process(cmd_of(eng), args.timeout, args.verbose)  # warms the page cache
                if eng == "lc" and rc < 0:  # a crash in its repacking path: without repacking
                    lc._failed(f"llama-completion default {rel(gguf_path)}", cmd_of(eng), rc, text)
                    setting = "-nr"
            for rep in range(args.reps):
                for eng in (engines if rep % 2 == 0 else engines[::-1]):
                    rc, wall, rss, text = measure_process(cmd_of(eng), args.timeout, args.verbose)
                    if rc != 0:
                        if eng == "lc":
                            lc._failed(f"llama-completion {setting} {rel(gguf_path)}", cmd_of(eng), rc, text)
                        else:
                            log(f"mlstack run failed (rc {rc}):\n{tail(text)}")
                        continue
                    res[eng].append((rss, wall * 1e3))
            cells = []
            med = {}
            for eng in ("lc", "gguf", "dir", "rows", "panels"):
                for k in (0, 1):
                    m, t = summary([v[k] for v in res[eng]], args.spread)
                    med[eng, k] = m
                    cells.append(t)
                if eng == "lc":
                    cells.append(setting)
            fails = lc.failures[n_fail:]
            if fails:
                cells[2] = f"{setting}; {len(fails)} failed: {fails[0]['status']}"
            print(f"| {shape} | {typ} | {th} | " + " | ".join(cells)
                  + f" | {ratio(med['gguf', 0], med['lc', 0])} | {ratio(med['gguf', 1], med['lc', 1])}"
                  + f" | {ratio(med['panels', 0], med['lc', 0])} | {ratio(med['panels', 1], med['lc', 1])} |",
                  flush=True)
            rows.append(dict(shape=shape, type=typ, threads=th, llamacpp=res["lc"], llamacpp_setting=setting,
                             mlstack_gguf=res["gguf"], mlstack_folder=res["dir"], mlstack_saved_rows=res["rows"],
                             mlstack_saved_panels=res["panels"], llamacpp_failures=fails))
    if saved_root:
        import shutil
        shutil.rmtree(saved_root, ignore_errors=True)
    print("ratios: mlstack on the GGUF (ratio) and on the saved panels (ratio ... panels) / llama.cpp on the GGUF "
          "(below 1: mlstack uses less memory, starts sooner)")
    return rows


def long_tests(sizes: list[int]) -> list[tuple[str, int, int, int]]:
    """(name, n_prompt, n_gen, depth): ppN for each size, then tg32 at depth N."""
    return [(f"pp{n}", n, 0, 0) for n in sizes] + [(f"tg32@d{n}", 0, 32, n) for n in sizes]


def max_positions(mdir: str) -> int | None:
    """max_position_embeddings of the model folder's config.json, or None."""
    try:
        with open(os.path.join(mdir, "config.json")) as f:
            return int(json.load(f).get("max_position_embeddings") or 0) or None
    except (OSError, ValueError):
        return None


def bench_long(args, lc: LlamaCpp, ml: Mlstack) -> list[dict]:
    """Long contexts: prefill of 4k/8k tokens and decode at depth 4k/8k, with the share of
    mlstack's time in attention (one extra profiled run per row)."""
    import tempfile
    rows = []
    tests = long_tests(args.long_sizes)
    print("\n".join(header_lines(args, lc)))
    print("| shape | type | threads | test | llama.cpp t/s | llama.cpp setting | mlstack t/s | ratio "
          "| mlstack attention share |")
    print("|---|---|---:|---|---:|---|---:|---:|---:|")
    for shape, typ, mdir, gguf_path in model_configs(args):
        max_pos = max_positions(mdir)
        for th in args.threads:
            for name, n_p, n_g, depth in tests:
                # decode at depth D reads positions D .. D + n_g - 1: keep them inside the model's
                # context (mlstack refuses positions past max_position_embeddings), both engines alike
                if max_pos and depth + n_g > max_pos:
                    depth = max_pos - n_g
                    name = f"tg{n_g}@d{depth}"
                s_lc: list[float] = []
                s_ml: list[float] = []
                setting, n_fail, att = "default", len(lc.failures), None
                for rep in range(args.reps):
                    for eng in (("lc", "ml") if rep % 2 == 0 else ("ml", "lc")):
                        if eng == "lc" and lc.why_not is None:
                            v, used = lc.run_test(gguf_path, th, n_p, n_g, no_repack=setting != "default",
                                                  depth=depth)
                            if used != setting:
                                s_lc, setting = [], used
                            if v is not None:
                                s_lc.append(v)
                        elif eng == "ml" and ml.why_not is None:
                            with tempfile.TemporaryDirectory() as td:
                                v = ml.run_test(mdir, typ, th, n_p, n_g, depth=depth,
                                                profile=os.path.join(td, "trace.json") if rep == 0 else None)
                            if rep == 0:
                                att = getattr(ml, "last_attention", None) if v is not None else None
                            if v is not None:
                                s_ml.append(v)
                m_lc, t_lc = summary(s_lc, args.spread)
                m_ml, t_ml = summary(s_ml, args.spread)
                fails = lc.failures[n_fail:]
                label = setting if not fails else f"{setting}; {len(fails)} failed: {fails[0]['status']}"
                att_s = "-" if att is None else f"{att:.1f}%"
                print(f"| {shape} | {typ} | {th} | {name} | {t_lc} | {label} | {t_ml} | {ratio(m_ml, m_lc)} "
                      f"| {att_s} |", flush=True)
                rows.append(dict(shape=shape, type=typ, threads=th, test=name, n_prompt=n_p, n_gen=n_g,
                                 depth=depth, llamacpp_tps=s_lc, llamacpp_setting=setting,
                                 llamacpp_failures=fails, mlstack_tps=s_ml, mlstack_attention_share=att))
    return rows


def int_list(s: str) -> list[int]:
    return [int(x) for x in s.split(",") if x.strip()]


def str_list(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", type=str_list, default=["smollm2", "tinyllama"])
    ap.add_argument("--types", type=str_list, default=["f32", "f16", "bf16", "q8_0", "q4_1"])
    ap.add_argument("--gguf", type=str_list, default=[],
                    help="comma list of [SHAPE/TYPE=]FILE.gguf: bench these files as they are, both engines on "
                         "the same file (any GGML type: K-quants included), instead of --shapes x --types")
    ap.add_argument("--threads", "-t", type=int_list, default=[1, 2])
    ap.add_argument("--tests", default="pp128,pp512,tg64", help="comma list of ppN / tgN")
    ap.add_argument("-r", "--reps", type=int, default=5, help="repetitions per engine and test")
    ap.add_argument("--spread", action="store_true", help="print min-max next to the median")
    ap.add_argument("--batched", action="store_true", help="llama-batched-bench mode")
    ap.add_argument("--memory", action="store_true", help="peak RSS and time to first token")
    ap.add_argument("--long", action="store_true", help="long-context tests (pp4096, pp8192, tg32 at depth 4k, 8k)")
    ap.add_argument("--long-sizes", type=int_list, default=[4096, 8192],
                    help="with --long: prompt lengths and depths (default 4096,8192)")
    ap.add_argument("--npp", type=int, default=128)
    ap.add_argument("--ntg", type=int, default=64)
    ap.add_argument("--npl", type=int_list, default=[1, 2, 4, 8, 16])
    ap.add_argument("--models", default=os.path.join(ROOT, "models", "bench"),
                    help="folder of SHAPE-TYPE model folders (default models/bench)")
    ap.add_argument("--no-gen", action="store_true", help="do not generate missing models")
    ap.add_argument("--peer", default=os.path.join(ROOT, "peer"),
                    help="tools/build_llamacpp.sh destination (default peer)")
    ap.add_argument("--mlstack", default=os.path.join(ROOT, "build", "mlstack"))
    ap.add_argument("--mlstack-cmd", default=DEFAULT_MLSTACK_CMD,
                    help="template; fields: mlstack model_dir n_prompt n_gen threads reps quant_flag")
    ap.add_argument("--mlstack-batched-cmd", default=DEFAULT_MLSTACK_BATCHED_CMD,
                    help="template; fields: mlstack model_dir npp ntg npl threads quant_flag")
    ap.add_argument("--llama-bench-args", type=shlex.split, default=[],
                    help="extra arguments for llama-bench / llama-batched-bench")
    ap.add_argument("--only", choices=("both", "llamacpp", "mlstack"), default="both")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per engine run")
    ap.add_argument("--json-out", help="also write the raw samples here")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every command")
    args = ap.parse_args(argv)

    lc, ml = LlamaCpp(args), Mlstack(args)
    if args.only == "mlstack":
        lc.why_not = "--only mlstack"
    if args.only == "llamacpp":
        ml.why_not = "--only llamacpp"
    for name, eng in (("llama.cpp", lc), ("mlstack", ml)):
        if eng.why_not:
            log(f"skipping {name}: {eng.why_not}")
    if lc.why_not and ml.why_not:
        log("nothing to run")
        return 1

    try:
        load1 = os.getloadavg()[0]
        if load1 > 0.5:
            log(f"warning: load average {load1:.2f} before starting; other processes on these "
                f"cores make multi-thread numbers (llama.cpp's spinning threads especially) unreliable")
    except OSError:
        pass
    if args.memory:
        rows = bench_memory(args, lc, ml)
    elif args.long:
        rows = bench_long(args, lc, ml)
    else:
        rows = bench_batched(args, lc, ml) if args.batched else bench_default(args, lc, ml)
    if lc.failures:
        print(f"\nllama.cpp failed {len(lc.failures)} time(s); a crash with its default setting (weight repacking) is "
              "retried once without repacking (llama-bench --repack 0, llama-batched-bench -nr), and that row's "
              "numbers then all use it (column 'llama.cpp setting'):")
        for f in lc.failures:
            print(f"- {f['what']}: {f['status']}")
    if args.json_out:
        with open(args.json_out, "w") as fp:
            json.dump(dict(argv=sys.argv[1:], llamacpp=lc.version, rows=rows, llamacpp_failures=lc.failures), fp,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
