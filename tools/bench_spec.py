#!/usr/bin/env python3
"""Speculative decoding on input-grounded tasks: decode tokens/s with and without drafts.

    tools/bench_spec.py [-m models/smollm2-135m-instruct] [--modes none,ngram,self:q4_1] [--rounds 5]

Each task asks the chat model to rewrite, summarize or correct a text given in the prompt, so
much of the answer copies the input (what prompt lookup drafts from). Every round runs every
task in every mode as a separate `mlstack run --chat --json` (greedy, fixed -n), the modes in a
rotated order each round, so that a noisy neighbour or slow drift hits all modes alike. Per task
and mode: the median decode tokens/s over the rounds; the speed-up is the median over rounds of
the paired ratio (mode / none in the same round), which cancels most of the machine's load
changes between rounds. Acceptance: accepted / drafted tokens. Greedy output must be the same
ids in every mode (speculation never changes greedy output); a difference is reported as an
error and the exit status is 1.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

TASKS = [
    ("rewrite", "Rewrite the following paragraph in clear, plain English, keeping every fact:\n\n"
     "The committee met on Tuesday to discuss the budget for the new library. After a long debate, the "
     "members agreed to spend two million dollars on the building, half a million on books, and the rest "
     "on computers and staff training. The library will open next spring, and it will stay open until ten "
     "o'clock every evening so that students and workers can use it after school and work."),
    ("summarize", "Summarize this email in three bullet points, using its own words where you can:\n\n"
     "Hi team, the server migration is moving to Saturday the 14th because the data center needs an extra "
     "week to install the new racks. Please make sure all of your services have a tested backup by Thursday "
     "the 12th. The old servers will be switched off at noon on Saturday, and the new ones should be ready "
     "by six in the evening. If your service cannot be down for six hours, tell Maria before Wednesday so "
     "that we can plan a separate window for it. Thanks, Tom"),
    ("correct", "Correct the spelling and grammar of this text and return the corrected text only:\n\n"
     "Their are many reason why people likes to travel. Some peoples travel for see new places and meet new "
     "friends, other travels for work. When you travels you learns about other culture and you becomes more "
     "open minded. Travel can be expensive but it is worth it for most of peoples."),
    ("story", "Write a short story about a lighthouse keeper who finds a message in a bottle."),
]
# "story" is free writing, not grounded in its input: it shows what drafts cost when they rarely
# hit (not run by default; --tasks rewrite,summarize,correct,story adds it).
DEFAULT_TASKS = "rewrite,summarize,correct"


def run_one(exe: str, model: str, prompt: str, mode: str, n: int, threads: int, timeout: float) -> dict:
    cmd = [exe, "run", "-m", model, "--chat", "--json", "-n", str(n), "-t", str(threads), "-p", prompt]
    if mode != "none":
        cmd += ["--spec", mode]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:8])} ... failed (rc {p.returncode}): {p.stderr.strip()[-400:]}")
    return json.loads(p.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", default=os.path.join(ROOT, "models", "smollm2-135m-instruct"))
    ap.add_argument("--mlstack", default=os.path.join(ROOT, "build", "mlstack"))
    ap.add_argument("--modes", default="none,ngram,self:q4_1", help="comma list; 'none' is the baseline")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("-n", type=int, default=128, help="tokens to generate per run")
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--tasks", default=DEFAULT_TASKS)
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--json-out")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    if "none" not in modes:
        modes.insert(0, "none")
    tasks = [t for t in TASKS if t[0] in args.tasks.split(",")]
    if not os.path.isfile(os.path.join(args.model, "config.json")):
        print(f"bench_spec: {args.model} is missing (make model)", file=sys.stderr)
        return 1
    tps = {(t, m): [] for t, _ in tasks for m in modes}
    ratios = {(t, m): [] for t, _ in tasks for m in modes}
    drafted = {(t, m): 0 for t, _ in tasks for m in modes}
    accepted = dict(drafted)
    ids: dict[str, list[int]] = {}
    bad = 0
    for rnd in range(args.rounds):
        for ti, (task, prompt) in enumerate(tasks):
            order = modes[(rnd + ti) % len(modes):] + modes[:(rnd + ti) % len(modes)]
            got = {}
            for m in order:
                j = run_one(args.mlstack, args.model, prompt, m, args.n, args.threads, args.timeout)
                got[m] = j
                tps[(task, m)].append(j["decode_tps"])
                drafted[(task, m)] += j.get("spec_drafted", 0)
                accepted[(task, m)] += j.get("spec_accepted", 0)
                if task not in ids:
                    ids[task] = j["ids"]
                elif j["ids"] != ids[task]:
                    print(f"ERROR: {task}, mode {m}: greedy ids differ from the other modes", file=sys.stderr)
                    bad += 1
            for m in modes:
                if got["none"]["decode_tps"] > 0:
                    ratios[(task, m)].append(got[m]["decode_tps"] / got["none"]["decode_tps"])
        print(f"round {rnd + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(f"speculative decoding, {os.path.basename(args.model.rstrip('/'))}, greedy, -n {args.n}, -t {args.threads}, "
          f"{args.rounds} interleaved rounds (median decode t/s; speed-up = median of per-round paired ratios)")
    print("| task | mode | tokens | decode t/s median | min | max | speed-up vs none | accepted / drafted |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    overall = {m: [] for m in modes}
    for task, _ in tasks:
        for m in modes:
            v = tps[(task, m)]
            r = statistics.median(ratios[(task, m)]) if ratios[(task, m)] else 0
            overall[m] += ratios[(task, m)]
            acc = (f"{accepted[(task, m)]} / {drafted[(task, m)]} ({100 * accepted[(task, m)] / drafted[(task, m)]:.0f}%)"
                   if drafted[(task, m)] else "-")
            print(f"| {task} | {m} | {len(ids.get(task, []))} | {statistics.median(v):.2f} | {min(v):.2f} | {max(v):.2f} "
                  f"| {r:.2f}x | {acc} |")
    for m in modes:
        if m != "none" and overall[m]:
            print(f"{m}: median speed-up over all tasks and rounds {statistics.median(overall[m]):.2f}x")
    if args.json_out:
        with open(args.json_out, "w") as f:
            json.dump(dict(modes=modes, rounds=args.rounds, n=args.n,
                           rows=[dict(task=t, mode=m, tps=tps[(t, m)], ratios=ratios[(t, m)], drafted=drafted[(t, m)],
                                      accepted=accepted[(t, m)]) for t, _ in tasks for m in modes]), f, indent=1)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
