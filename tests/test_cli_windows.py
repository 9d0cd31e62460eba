#!/usr/bin/env python3
"""The mlstack command-line tool built for Windows (MinGW-w64, static .exe) and run under Wine,
against the native build on the same inputs: --help, tokenize, template, info, eval (logits are
the same bits on every CPU path and platform: README "Reproducible results"), greedy run, and
the errors a user meets (a missing folder, serve, which this release has only on POSIX).

    tests/test_cli_windows.py --exe build/win64/mlstack.exe --native build/mlstack \
                              --wine wine64 --prefix build/win64/prefix

Ends with "N passed, N failed"."""
import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cli_testlib import ROOT, Checks  # noqa: E402

T = Checks()
MODEL = "tests/fixtures/models/llama"  # a fixture with a tokenizer and a chat template


def run(argv, env=None, stdin=None, timeout=300):
    p = subprocess.run(argv, cwd=ROOT, env=env, input=stdin, capture_output=True, timeout=timeout)
    # Windows programs end lines with CR LF
    return p.returncode, p.stdout.replace(b"\r\n", b"\n"), p.stderr.replace(b"\r\n", b"\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--exe", required=True)
    ap.add_argument("--native", required=True)
    ap.add_argument("--wine", required=True)
    ap.add_argument("--prefix", required=True)
    a = ap.parse_args()
    env = dict(os.environ, WINEPREFIX=os.path.abspath(a.prefix), WINEDEBUG="-all")
    env.pop("MLSTACK_ISA", None)

    def win(*args, stdin=None):
        return run([a.wine, a.exe] + list(args), env=env, stdin=stdin)

    def nat(*args, stdin=None):
        return run([a.native] + list(args), stdin=stdin)

    rc, out, _ = win("--help")
    T.check(rc == 0 and b"commands:" in out and b"serve" in out, "mlstack.exe --help", out[:200])
    for cmd in ("run", "eval", "tokenize"):
        rc, out, _ = win(cmd, "--help")
        T.check(rc == 0 and b"usage: mlstack " + cmd.encode() in out, f"mlstack.exe {cmd} --help", out[:200])

    text = "Héllo, wörld! 123 \u4e2d\u6587"
    shared = os.path.join(os.path.dirname(ROOT), "shared", "tokenizers")
    toks = [(("tokenize", "-m", os.path.join(shared, name), text), f"tokenize ({name})") for name in ("smollm2", "qwen2.5")
            if os.path.isdir(os.path.join(shared, name))]
    if not toks:
        T.skip("tokenize", "../shared/tokenizers is not beside the checkout")
    for args, what in toks + [
                       (("info", "-m", MODEL), "info"),
                       (("eval", "-m", MODEL, "--ids", "1,5,9,17,33", "--all"), "eval, every position"),
                       (("run", "-m", MODEL, "--ids", "3,4,5", "-n", "12", "--json"), "greedy run (JSON: text and ids)")]:
        rw, ow, ew = win(*args)
        rn, on, en = nat(*args)
        if what == "info":  # the model's lines (the kernel, rank and thread lines describe the host)
            # (the version line names each build's compiler and commit)
            ow, on = [b"\n".join([ln for ln in o.split(b"\n") if not ln.startswith(b"mlstack ")][1:9]) for o in (ow, on)]
        elif what.startswith("greedy run"):  # the ids and text (not the timings)
            try:
                jw, jn = json.loads(ow), json.loads(on)
                ow, on = json.dumps([jw["ids"], jw["text"]]).encode(), json.dumps([jn["ids"], jn["text"]]).encode()
            except (ValueError, KeyError):
                pass
        T.check(rw == 0 and rn == 0 and ow == on and ow, f"{what}: Windows output = native output",
                (rw, rn, ow[:300], on[:300], ew[-300:]))

    rw, ow, ew = win("eval", "-m", "no/such/folder", "--ids", "1")
    T.check(rw != 0 and b"no/such/folder" in ew.replace(b"\\", b"/"), "a missing model folder: an error naming it", ew[-300:])
    rw, ow, ew = win("serve", "-m", MODEL)
    T.check(rw != 0 and b"Windows" in ew, "serve on Windows: a clear error, not a crash", (rw, ew[-300:]))
    T.finish()


if __name__ == "__main__":
    main()
