#!/usr/bin/env python3
"""Compare two kairos builds on the same runs, interleaved (A, B, A, B, ...), since this VM's
speed drifts within minutes: prints per configuration the median committed events/s of each
build with its range (min-max), B/A (of the medians), the median and quartiles of the
paired ratios (each repetition's B over its A: the two runs of a pair are seconds apart, so
a drift of the VM's speed mostly cancels; the order alternates, A B then B A), and the
cross-core round trip measured before and after (bench/tools/pingpong.c), as Markdown for
bench/RESULTS.md. Digests must agree.

    python3 bench/ab.py A/kairos B/kairos [--reps 5] [--load] [--busy-core 1]
        [--pingpong build/kr_pingpong] [--config 'MODEL ARGS...' ...]

--load runs every configuration a second time with a busy loop pinned to core 1 (a user's
machine is never idle), or to --busy-core N: the core the run's thread happens to be on
decides where a run with --threads 2 starts (--balance auto), so measure both."""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import loadcheck

CONFIGS = [
    ("PHOLD-std sequential", ["phold", "--end", "5000", "--sync", "sequential"]),
    ("PHOLD-std optimistic 1 thread", ["phold", "--end", "5000", "--threads", "1"]),
    ("PHOLD-std optimistic 2 threads", ["phold", "--end", "5000", "--threads", "2"]),
    ("queueing sequential", ["queueing", "--lps", "4096", "--end", "300", "--sync", "sequential"]),
    ("queueing optimistic 2 threads", ["queueing", "--lps", "4096", "--end", "300", "--threads", "2"]),
    ("PHOLD conservative 1 worker", ["phold", "--end", "3000", "--sync", "conservative",
                                      "--conservative", "horizon", "--threads", "1"]),
    # few LPs: the threads are tightly coupled, a message held back is a straggler
    ("PHOLD 16 LPs optimistic 2 threads", ["phold", "--lps", "16", "--end", "100000",
                                           "--threads", "2"]),
]


def run_once(kairos, args):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([kairos, "run", *args, "--progress", "off", "--stats", f.name],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=True)
        st = json.load(open(f.name))
    return st["committed_per_second"], st["run_digest"]


def fmt(xs):
    d = 2 if min(xs) >= 1e6 else 3  # (0.08 M/s rows: two decimals hid a 10% change)
    return f"{statistics.median(xs) / 1e6:.{d}f} ({min(xs) / 1e6:.{d}f}-{max(xs) / 1e6:.{d}f})"


def paired(rb, ra):
    """The median of the per-repetition ratios rb[i]/ra[i], with their quartiles."""
    rs = [b / a for a, b in zip(ra, rb)]
    if len(rs) < 4:
        return f"{statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})"
    q = statistics.quantiles(rs, n=4)
    return f"{statistics.median(rs):.2f} ({q[0]:.2f}-{q[2]:.2f})"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--load", action="store_true")
    ap.add_argument("--busy-core", type=int, default=1)
    ap.add_argument("--config", action="append", default=[],
                    help="a run's arguments instead of the built-in set (repeatable), "
                         "e.g. --config 'build/libairport.so --lps 4096 --end 100 --threads 1'")
    ap.add_argument("--pingpong", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                        "kr_pingpong"))
    a = ap.parse_args()
    loads = [False, True] if a.load else [False]
    configs = [(c, c.split()) for c in a.config] if a.config else CONFIGS
    print(loadcheck.describe())
    print(f"cross-core round trip before: {loadcheck.pingpong(a.pingpong)}\n")
    print("| configuration | load | A M ev/s median (range) | B M ev/s median (range) | B/A | "
          "B/A paired (quartiles) |")
    print("|---|---|---|---|---|---|")
    for loaded in loads:
        with loadcheck.busy_core(a.busy_core if loaded else None):
            for name, args in configs:
                ra, rb, digests = [], [], set()
                for rep in range(a.reps):
                    pair = ((a.a, ra), (a.b, rb))
                    for kairos, acc in (pair if rep % 2 == 0 else pair[::-1]):
                        rate, d = run_once(kairos, args)
                        acc.append(rate)
                        digests.add((kairos, d))
                da = {d for k, d in digests if k == a.a}
                db = {d for k, d in digests if k == a.b}
                note = "" if len(da) == 1 and len(db) == 1 else " (digests vary!)"
                print(f"| {name}{note} | {f'busy core {a.busy_core}' if loaded else 'idle'} | {fmt(ra)} | "
                      f"{fmt(rb)} | {statistics.median(rb) / statistics.median(ra):.2f} | "
                      f"{paired(rb, ra)} |")
    print(f"\ncross-core round trip after: {loadcheck.pingpong(a.pingpong)}")


if __name__ == "__main__":
    main()
