#!/usr/bin/env python3
"""Every code block of README.md and docs/*.md, compiled or run, so that the manual cannot drift
from the code.

A fenced block names its language: `text` is output or a synopsis shown as it is (not run);
`c` is compiled (-std=c99, the project's warnings as errors) and, when it has a main, linked
against the implementation and run; `sh` is run by bash -e in a scratch folder that links the
checkout's files (so `build/mlstack` and `models/...` resolve as written; a block of only `make`
lines is checked with `make -n`, which fails for a target that does not exist); `python` is run
by python3 there. A page's blocks run in order and share its servers: what an sh block starts in
the background is stopped after the page. Port 8080 is replaced by a free port. Any other
language, or none, fails. Relative links and #anchors must resolve, and the README stays a
manual (at most 650 lines).

    tests/test_readme.py [--mlstack build/mlstack] [--object build/tests/mlstack.o]

Ends with "N passed, N failed[, N skipped]"."""
import argparse
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_testlib import ROOT, Checks, free_port  # noqa: E402

T = Checks()
GGUF = os.path.join(ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")
WARN = ["-Wall", "-Wextra", "-Werror", "-Wshadow", "-Wstrict-prototypes"]


def blocks(path):
    """(line, language, text) of each fenced block."""
    out, lang, start, body = [], None, 0, []
    for i, line in enumerate(open(path, encoding="utf-8").read().split("\n"), 1):
        if lang is None and line.startswith("```"):
            lang, start, body = line[3:].strip(), i, []
        elif lang is not None and line.rstrip() == "```":
            out.append((start, lang, "\n".join(body) + "\n"))
            lang = None
        elif lang is not None:
            body.append(line)
    T.check(lang is None, f"{os.path.relpath(path, ROOT)}: every fence is closed")
    return out


def anchors(text):
    """GitHub's anchors of the headings."""
    out = set()
    for h in re.findall(r"^#+ (.*)$", text, re.M):
        a = re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        out.add(a)
    return out


def check_links(path):
    text = open(path, encoding="utf-8").read()
    text_nocode = re.sub(r"```.*?```", "", text, flags=re.S)
    bad = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text_nocode):
        if re.match(r"[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        if not os.path.exists(dest):
            bad.append(target)
        elif anchor and dest.endswith(".md") and anchor not in anchors(open(dest, encoding="utf-8").read()):
            bad.append(target)
    T.check(not bad, f"{os.path.relpath(path, ROOT)}: links resolve", bad)


def scratch():
    d = tempfile.mkdtemp(prefix="mlstack-readme-")
    for name in os.listdir(ROOT):
        if name != ".git":
            os.symlink(os.path.join(ROOT, name), os.path.join(d, name))
    return d


def show(out, limit=1200):
    out = out.strip()
    if len(out) > limit:
        out = out[:limit // 2] + "\n  [...]\n" + out[-limit // 2:]
    for line in out.split("\n"):
        print("    | " + line)


def run_c(where, code, cwd, obj, exe_dir):
    src = os.path.join(exe_dir, f"block{abs(hash(where))}.c")
    has_main = re.search(r"\bint\s+main\s*\(", code) is not None
    with open(src, "w") as f:
        f.write(code)
    cc = os.environ.get("CC", "cc")
    if not has_main:  # a function: compiled alone
        r = subprocess.run([cc, "-std=c99", *WARN, "-O1", "-I", ROOT, "-c", src, "-o", src + ".o"],
                           capture_output=True, text=True)
        T.check(r.returncode == 0, f"{where}: C compiles", r.stderr[-2000:])
        return
    exe = src[:-2]
    if obj:  # the implementation already compiled: the block's own code only
        cmd = [cc, "-std=c99", *WARN, "-Og", "-DMLSTACK__IMPORT_INTERNALS", "-fno-inline", "-I", ROOT, "-o", exe, src,
               obj, "-lpthread", "-lm"]
    else:
        cmd = [cc, "-std=c99", *WARN, "-O1", "-I", ROOT, "-o", exe, src, "-lpthread", "-lm"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if not T.check(r.returncode == 0, f"{where}: C compiles and links", r.stderr[-2000:]):
        return
    r = subprocess.run([exe], cwd=cwd, capture_output=True, text=True, timeout=300)
    show(r.stdout + r.stderr)
    T.check(r.returncode == 0 and r.stdout.strip(), f"{where}: C program runs and prints", r.stdout + r.stderr)


def run_sh(where, code, cwd, groups, log_dir):
    lines = [re.sub(r"\s+#.*$", "", l).strip() for l in code.split("\n")]
    lines = [l for l in lines if l and not l.startswith("#")]
    if lines and all(l.startswith("make ") or l == "make" for l in lines):
        for l in lines:
            r = subprocess.run(["make", "-n", "-C", ROOT, *l.split()[1:]], capture_output=True, text=True)
            T.check(r.returncode == 0, f"{where}: `{l}` is a make target (make -n)", r.stderr[-500:])
        return
    log = os.path.join(log_dir, f"sh{len(groups)}.log")
    with open(log, "w") as f:  # a file, not a pipe: a server left running keeps its end open
        p = subprocess.Popen(["bash", "-e", "-o", "pipefail", "-c", code], cwd=cwd, stdout=f, stderr=subprocess.STDOUT,
                             start_new_session=True)
    groups.append(p.pid)
    try:
        rc = p.wait(timeout=600)
    except subprocess.TimeoutExpired:
        rc = "timeout"
    out = open(log, encoding="utf-8", errors="replace").read()
    show(out)
    T.check(rc == 0, f"{where}: sh runs (exit {rc})", out[-1500:])


def run_py(where, code, cwd):
    try:
        r = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)
        rc, out = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired:
        rc, out = "timeout", ""
    show(out)
    T.check(rc == 0, f"{where}: python runs (exit {rc})", out[-1500:])


def stop(groups):
    for g in groups:
        try:
            os.killpg(g, signal.SIGTERM)
        except ProcessLookupError:
            continue
    deadline = time.time() + 30
    for g in groups:
        while time.time() < deadline:
            try:
                os.killpg(g, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        else:
            try:
                os.killpg(g, signal.SIGKILL)
            except ProcessLookupError:
                pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mlstack", default=os.path.join(ROOT, "build", "mlstack"))
    ap.add_argument("--object", default=None, help="the implementation compiled (build/tests/mlstack.o)")
    args = ap.parse_args()
    pages = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    n_readme = open(pages[0], encoding="utf-8").read().count("\n")
    T.check(n_readme <= 650, f"README.md is a manual: {n_readme} lines (at most 650)")
    for page in pages:
        check_links(page)
    if not os.path.exists(GGUF):
        T.skip("code blocks", f"{GGUF} is missing (make model)")
        T.finish()
    if not os.path.exists(os.path.join(ROOT, "build", "mlstack")) or (
            os.path.realpath(args.mlstack) != os.path.realpath(os.path.join(ROOT, "build", "mlstack"))):
        print(f"note: the blocks run build/mlstack as written (this run was given {args.mlstack})")
    tmp = scratch()
    work = tempfile.mkdtemp(prefix="mlstack-readme-bin-")
    port = str(free_port())
    try:
        for page in pages:
            rel = os.path.relpath(page, ROOT)
            groups = []
            try:
                for line, lang, code in blocks(page):
                    where = f"{rel}:{line}"
                    code = code.replace("8080", port)
                    print(f"-- {where} ({lang})")
                    if lang == "text":
                        continue
                    if lang == "c":
                        run_c(where, code, tmp, args.object, work)
                    elif lang == "sh":
                        run_sh(where, code, tmp, groups, work)
                    elif lang == "python":
                        run_py(where, code, tmp)
                    else:
                        T.check(False, f"{where}: a block is text, c, sh or python", repr(lang))
            finally:
                stop(groups)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
    T.finish()


if __name__ == "__main__":
    main()
