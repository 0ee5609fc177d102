#!/usr/bin/env python3
"""What a query costs (issue 16): bench/models/qcost.c, where each step of an LP needs
another LP's value, asked with kr_query (libqcost.so: one event a step) or by a request and
an answer event (libqcost_events.so: three events a step, the usual way without queries),
on the sequential engine and the optimistic engine at 1 and 2 threads. Runs alternate
between the variants and engines (this VM's speed drifts within minutes); prints the median
steps per second with its range, as Markdown for bench/RESULTS.md, with the cross-core
round trip before and after. Every run of a way, on every engine, must give one digest.

    python3 bench/query_bench.py [--kairos build/kairos] [--reps 5] [--lps 1024]
                                 [--end 100] [--load]

--load runs everything with a busy loop pinned to the last core."""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

import loadcheck

ENGINES = [("sequential", ["--sync", "sequential"]), ("optimistic 1", ["--threads", "1"]),
           ("optimistic 2", ["--threads", "2"])]
# (name, library, events per step)
WAYS = [("kr_query", "libqcost.so", 1), ("request + answer events", "libqcost_events.so", 3)]


def run_once(kairos, args):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([kairos, "run", *args, "--progress", "off", "--stats", f.name],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
        return json.load(open(f.name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kairos", default="build/kairos")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--lps", type=int, default=1024)
    ap.add_argument("--end", default="100")
    ap.add_argument("--load", action="store_true")
    a = ap.parse_args()
    build = os.path.dirname(os.path.abspath(a.kairos))
    tool = os.path.join(build, "kr_pingpong")
    print(loadcheck.describe())
    print(f"cross-core round trip before: {loadcheck.pingpong(tool)}")
    cpu = (os.cpu_count() or 1) - 1
    if a.load:
        print(f"a busy loop runs on core {cpu} throughout")
    with loadcheck.busy_core(cpu if a.load else None):
        for remote in ("0", "0.5"):
            rates, digests, extra = {}, {}, {}
            for _ in range(a.reps):
                for way, lib, per in WAYS:
                    for eng, eargs in ENGINES:
                        st = run_once(a.kairos, [os.path.join(build, lib), "--lps", str(a.lps),
                                                 "--end", a.end, "-P", f"remote={remote}",
                                                 *eargs])
                        rates.setdefault((way, eng), []).append(
                            st["committed_events"] / per / st["wall_seconds"])
                        digests.setdefault(way, set()).add(st["run_digest"])
                        q = st.get("queries", {})
                        extra[(way, eng)] = (st["efficiency"], q.get("remote", 0))
            for k, d in digests.items():
                if len(d) != 1:
                    raise SystemExit(f"{k}: digests differ between runs or engines: {d}")
            print(f"\n-P remote={remote}, {a.lps} LPs, end {a.end}, {a.reps} interleaved runs\n")
            print("| way | engine | steps/s (median, range) | x sequential | efficiency | "
                  "queries to another thread |")
            print("| --- | --- | --- | --- | --- | --- |")
            for way, _, _ in WAYS:
                base = statistics.median(rates[(way, "sequential")])
                for eng, _ in ENGINES:
                    r = rates[(way, eng)]
                    eff, qr = extra[(way, eng)]
                    print(f"| {way} | {eng} | {statistics.median(r) / 1e6:.3f} M "
                          f"({min(r) / 1e6:.3f}-{max(r) / 1e6:.3f}) | "
                          f"{statistics.median(r) / base:.2f} | {eff:.2f} | {qr} |")
    print(f"\ncross-core round trip after: {loadcheck.pingpong(tool)}")


if __name__ == "__main__":
    main()
