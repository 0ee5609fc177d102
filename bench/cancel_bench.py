#!/usr/bin/env python3
"""Lazy against aggressive cancellation (--cancel, issue 16) on the optimistic engine: each
model's runs alternate (aggressive, lazy, aggressive, ...), since this VM's speed drifts
within minutes. Prints per model the median committed events/s of each with its range, the
ratio lazy/aggressive, and per mode the median rollbacks, antimessages and sends kept, as
Markdown for bench/RESULTS.md, with the cross-core round trip before and after. Every run of
a model must give one digest.

    python3 bench/cancel_bench.py [--kairos build/kairos] [--reps 5] [--threads 2] [--load]
                                  [--only phold,queueing]

--load runs everything with a busy loop pinned to the last core."""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

import loadcheck

MODELS = [
    ("PHOLD-std", ["phold", "--end", "3000"]),
    ("PHOLD 16 LPs", ["phold", "--lps", "16", "--end", "60000"]),
    ("queueing", ["queueing", "--lps", "4096", "--end", "300"]),
    ("pcs", ["pcs", "--lps", "256", "--end", "2"]),
    ("seir", ["{build}/libseir.so", "--lps", "4096", "--end", "60"]),
    ("airport", ["{build}/libairport.so", "--lps", "4096", "--end", "100"]),
    ("islands", ["{build}/libislands.so", "--lps", "1024", "--end", "2000"]),
    ("commo", ["commo", "--lps", "1000", "--end", "200"]),
]


def run_once(kairos, args):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([kairos, "run", *args, "--progress", "off", "--stats", f.name],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
        return json.load(open(f.name))


def med(xs):
    return statistics.median(xs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kairos", default="build/kairos")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--load", action="store_true")
    ap.add_argument("--only")
    a = ap.parse_args()
    build = os.path.dirname(os.path.abspath(a.kairos))
    tool = os.path.join(build, "kr_pingpong")
    print(loadcheck.describe())
    print(f"cross-core round trip before: {loadcheck.pingpong(tool)}")
    cpu = (os.cpu_count() or 1) - 1
    if a.load:
        print(f"a busy loop runs on core {cpu} throughout")
    print(f"\n{a.threads} threads, {a.reps} interleaved runs per mode\n")
    print("| model | aggressive M ev/s | lazy M ev/s | lazy/aggr. | rollbacks aggr. / lazy | "
          "antimessages aggr. / lazy | sends kept |")
    print("|---|---|---|---|---|---|---|")
    only = set(a.only.split(",")) if a.only else None
    with loadcheck.busy_core(cpu if a.load else None):
        for name, margs in MODELS:
            if only and not any(o in name.lower() for o in only):
                continue
            margs = [x.format(build=build) for x in margs] + ["--threads", str(a.threads)]
            res = {"aggressive": [], "lazy": []}
            for _ in range(a.reps):
                for mode in res:
                    res[mode].append(run_once(a.kairos, margs + ["--cancel", mode]))
            digests = {s["run_digest"] for m in res.values() for s in m}
            if len(digests) != 1:
                raise SystemExit(f"{name}: digests differ: {digests}")
            rate = {m: [s["committed_per_second"] / 1e6 for s in v] for m, v in res.items()}
            col = {m: {k: med([s[k] for s in v]) for k in ("rollbacks", "antimessages",
                                                           "lazy_kept")}
                   for m, v in res.items()}
            ag, lz = rate["aggressive"], rate["lazy"]
            print(f"| {name} | {med(ag):.3f} ({min(ag):.3f}-{max(ag):.3f}) | "
                  f"{med(lz):.3f} ({min(lz):.3f}-{max(lz):.3f}) | {med(lz) / med(ag):.2f} | "
                  f"{col['aggressive']['rollbacks']:.0f} / {col['lazy']['rollbacks']:.0f} | "
                  f"{col['aggressive']['antimessages']:.0f} / {col['lazy']['antimessages']:.0f} "
                  f"| {col['lazy']['lazy_kept']:.0f} |", flush=True)
    print(f"\ncross-core round trip after: {loadcheck.pingpong(tool)}")


if __name__ == "__main__":
    main()
