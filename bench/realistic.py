#!/usr/bin/env python3
"""The optimistic engine against the sequential one on models written the way users write
them (issue 13, item 4): for each model, the sequential engine, the optimistic engine on 1
and on 2 threads, run interleaved (seq, opt1, opt2, seq, ...) since this VM's speed drifts
within minutes (the order reverses every other repetition). Prints the median committed
events/s with its range, each engine's ratio to the sequential median, and the median and
quartiles of its paired ratios (each repetition's run over that repetition's sequential
run, seconds apart: most of a drift of the VM's speed cancels), as Markdown, with the
cross-core round trip (bench/tools/pingpong.c) before and after. Every run of a model must
give one digest.

    python3 bench/realistic.py [--kairos build/kairos] [--reps 5] [--load] [--only seir,life]
        [--scale K] [-- extra kairos options for every optimistic run]

--only may also name the built-in TWOS models (life-blocks, life-big, commo), which the
default set leaves out.

--load repeats everything with a busy loop pinned to core 1.

--scale K runs every model K times as long in virtual time (--end times K): most rows take
0.25-0.7 s sequential, where the first tenth of a second (a balancer finding a busy core,
its trials) weighs more than in a user's run of minutes."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import loadcheck

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "build")

MODELS = [
    ("seir", ["{build}/libseir.so", "--lps", "4096", "--end", "60"]),
    ("airport", ["{build}/libairport.so", "--lps", "4096", "--end", "100"]),
    ("life", ["{build}/liblife.so", "--lps", "4096", "--end", "60"]),
    ("pcs", ["pcs", "--lps", "256", "--end", "2"]),
    ("queueing", ["queueing", "--lps", "4096", "--end", "300"]),
    ("datastore", ["datastore", "--lps", "64", "--end", "20"]),
    ("phold-std", ["phold", "--end", "3000"]),
    # the row of long events: 5 us of work in each (about 0.75 s sequential)
    ("phold-5us", ["phold", "-P", "busy_us=5", "--end", "150"]),
]

# TWOS's regular and irregular benchmarks, built in (issue 16): only with --only.
TWOS = [
    ("life-blocks", ["life", "--lps", "1024", "-P", "generations=200", "-P", "print=10"]),
    ("life-big", ["life", "--lps", "64", "-P", "block=32", "-P", "generations=400", "-P",
                  "print=10"]),
    ("commo", ["commo", "--lps", "1000", "--end", "200"]),
]

ENGINES = [
    ("sequential", ["--sync", "sequential"]),
    ("optimistic 1 thread", ["--threads", "1"]),
    ("optimistic 2 threads", ["--threads", "2"]),
]


def run_once(kairos, args):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run([kairos, "run", *args, "--progress", "off", "--stats", f.name],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if p.returncode != 0:
            sys.exit(f"failed: {' '.join([kairos, 'run', *args])}\n{p.stderr}")
        st = json.load(open(f.name))
    return st["committed_per_second"], st["run_digest"]


def fmt(xs):
    return f"{statistics.median(xs) / 1e6:.3f} ({min(xs) / 1e6:.3f}-{max(xs) / 1e6:.3f})"


def paired(xs, base):
    """The median and quartiles of the per-repetition ratios xs[i]/base[i]."""
    rs = [x / b for x, b in zip(xs, base)]
    lo, hi = (min(rs), max(rs)) if len(rs) < 4 else (statistics.quantiles(rs, n=4)[0],
                                                     statistics.quantiles(rs, n=4)[2])
    return f"(paired {statistics.median(rs):.2f}, {lo:.2f}-{hi:.2f})"


def bench_model(kairos, name, margs, reps, extra, loaded):
    rates = {e: [] for e, _ in ENGINES}
    digests = set()
    for rep in range(reps):
        for eng, eargs in (ENGINES if rep % 2 == 0 else ENGINES[::-1]):
            args = margs + eargs + (extra if eng != "sequential" else [])
            r, d = run_once(kairos, args)
            rates[eng].append(r)
            digests.add(d)
    seq = statistics.median(rates["sequential"])
    cells = []
    for eng, _ in ENGINES:
        m = statistics.median(rates[eng])
        cells.append(f"{fmt(rates[eng])}" + ("" if eng == "sequential" else
                                             f" **{m / seq:.2f}x** {paired(rates[eng], rates['sequential'])}"))
    note = "" if len(digests) == 1 else " (DIGESTS DIFFER)"
    print(f"| {name}{note} | {'busy core 1' if loaded else 'idle'} | " + " | ".join(cells) + " |",
          flush=True)
    return len(digests) == 1


def scaled(margs, k):
    """The model's arguments with --end times k."""
    if k == 1.0 or "--end" not in margs:
        return margs
    i = margs.index("--end") + 1
    return margs[:i] + [f"{float(margs[i]) * k:g}"] + margs[i + 1:]


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    ap = argparse.ArgumentParser()
    ap.add_argument("--kairos", default=os.path.join(BUILD, "kairos"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--load", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--scale", type=float, default=1.0)
    a = ap.parse_args(argv)
    build = os.path.dirname(os.path.abspath(a.kairos))
    tool = os.path.join(build, "kr_pingpong")
    only = set(a.only.split(",")) if a.only else None
    print(loadcheck.describe())
    print(f"cross-core round trip before: {loadcheck.pingpong(tool)}\n")
    print("| model | load | sequential M ev/s | optimistic 1 thread | optimistic 2 threads |")
    print("|---|---|---|---|---|")
    ok = True
    for loaded in ([False, True] if a.load else [False]):
        with loadcheck.busy_core(1 if loaded else None):
            for name, margs in MODELS + (TWOS if only else []):
                if only and name not in only:
                    continue
                margs = scaled([m.format(build=build) for m in margs], a.scale)
                ok &= bench_model(a.kairos, name, margs, a.reps, extra, loaded)
    print(f"\ncross-core round trip after: {loadcheck.pingpong(tool)}")
    if extra:
        print(f"optimistic runs with: {' '.join(extra)}")
    if a.scale != 1.0:
        print(f"every model's --end times {a.scale:g}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
