#!/usr/bin/env python3
"""--memory-max (issue 16 part 3): for each model, the sequential engine's peak of events and
states (its --stats "memory" section), then the optimistic engine on 2 threads unbounded and
at 4x, 2x and 1.2x that peak, 3 runs each: median committed events/s (range), median
memory-limited rollbacks and sendbacks, and the largest peak in use seen at the checks (x
the sequential peak), as Markdown, with the cross-core round trip before and after.

    python3 bench/memory_bench.py [--kairos build/kairos] [--reps 3] [--only commo]"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import loadcheck

MODELS = [
    ("PHOLD-std", ["phold", "--end", "3000"]),
    ("PHOLD, 4 KB states, 2048 LPs", ["phold", "--lps", "2048", "-P", "state_bytes=4000",
                                      "--end", "400"]),
    ("pcs, 256 LPs", ["pcs", "--lps", "256", "--end", "1"]),
    ("commo, 1000 LPs", ["commo", "--lps", "1000", "--end", "200"]),
]
BUDGETS = [("none", None), ("4x", 4), ("2x", 2), ("1.2x", 1.2)]


def run(kairos, args):
    """The run's --stats, or None and the last line of its error."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([kairos, "run", *args, "--progress", "off", "--stats", f.name],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode:
            return None, p.stderr.strip().splitlines()[-1][:160]
        return json.load(open(f.name)), None


def row(kairos, margs, label, budget, need, reps):
    rates, rolled, sent, peaks = [], [], [], []
    for _ in range(reps):
        limit = str(int(need * budget)) if budget else "64G"
        st, err = run(kairos, margs + ["--threads", "2", "--memory-max", limit])
        if not st:
            return f"| {label} | failed: {err} | | | |"
        rates.append(st["committed_per_second"] / 1e6)
        rolled.append(st["memory"]["memory_limited_rollbacks"])
        sent.append(st["memory"]["sendbacks"])
        peaks.append(st["memory"]["peak_bytes"])
    return (f"| {label} | {statistics.median(rates):.3f} ({min(rates):.3f}-{max(rates):.3f}) | "
            f"{statistics.median(rolled):.0f} | {statistics.median(sent):.0f} | "
            f"{max(peaks)} ({max(peaks) / need:.2f}x) |")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--kairos", default=os.path.join(here, "..", "build", "kairos"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", help="models whose name contains one of these (comma-separated)")
    a = ap.parse_args()
    tool = os.path.join(os.path.dirname(os.path.abspath(a.kairos)), "kr_pingpong")
    print(f"cross-core round trip before: {loadcheck.pingpong(tool)}")
    only = a.only.lower().split(",") if a.only else None
    for name, margs in MODELS:
        if only and not any(o in name.lower() for o in only):
            continue
        st, err = run(a.kairos, margs + ["--sync", "sequential", "--memory-max", "64G"])
        if not st:
            raise SystemExit(f"{name}: the sequential run failed: {err}")
        need = st["memory"]["peak_bytes"]
        print(f"\n{name}: sequential peak {need} bytes, "
              f"{st['committed_per_second'] / 1e6:.3f} M/s\n")
        print("| budget | 2 threads M ev/s | memory-limited rollbacks | sendbacks | peak in use |")
        print("|---|---|---|---|---|")
        for label, budget in BUDGETS:
            print(row(a.kairos, margs, label, budget, need, a.reps), flush=True)
    print(f"\ncross-core round trip after: {loadcheck.pingpong(tool)}")


if __name__ == "__main__":
    main()
