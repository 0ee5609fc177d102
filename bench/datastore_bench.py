#!/usr/bin/env python3
"""datastore (paper 000, section 3.3): 64 nodes, batches of transactions simulated
round-robin, remote accesses by message, per-access metadata on the heap, batching factor 10
(lightweight) and 20 (heavy). Compares plain Time Warp (--preempt off) with time-sharing modes
at each thread count, the sequential engine beside them: wall time, committed events/s,
efficiency (committed / processed), rollbacks, antimessages, preemptions (at model calls / by
ticks) and what became of the preempted events (resumed / rolled back). Runs are interleaved,
REPS each; medians. Extra kairos options follow "--".

    python3 bench/datastore_bench.py [--kairos build/kairos] [--reps 3] [--threads 2,4]
                                     [--batches 10,20] [--end 100] [--modes off,return,adaptive]
                                     [-- --state chunk ...]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from phold_std import commit, machine  # noqa: E402


def run_once(kairos, batch, end, engine, extra):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [kairos, "run", "datastore", "--lps", "64", "-P", f"batch={batch}", "--end",
               str(end), "--progress", "off", "--stats", f.name, *engine, *extra]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return json.load(open(f.name))


def row(stats):
    """The figures of one run, as a tuple."""
    ts = stats.get("time_sharing") or {}
    return (stats["wall_seconds"], stats["committed_events"] / stats["wall_seconds"],
            stats["committed_events"] / stats["processed_events"], stats["rollbacks"],
            stats.get("antimessages", 0), ts.get("preempted_at_calls", 0),
            ts.get("preempted_by_ticks", 0) + ts.get("preempted_by_slice", 0),
            ts.get("resumed", 0), ts.get("rolled_back", 0), stats["run_digest"])


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default="build/kairos")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", default="2,4")
    ap.add_argument("--batches", default="10,20")
    ap.add_argument("--end", type=float, default=100)
    ap.add_argument("--modes", default="off,return,adaptive")
    ap.add_argument("extra", nargs="*", help="more kairos run options, after --")
    a = ap.parse_args()
    modes = a.modes.split(",")
    print(f"datastore, 64 nodes, end {a.end:g}, {a.reps} interleaved reps, commit {commit()}, "
          f"{machine()}, extra options {a.extra}\n")
    print("| batch | threads | mode | wall s | committed ev/s | efficiency | rollbacks "
          "| antimessages | preempted at calls / by ticks | resumed / rolled back |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for batch in a.batches.split(","):
        configs = [("seq", "sequential", ["--sync", "sequential"])]
        for th in a.threads.split(","):
            configs += [(th, m, ["--threads", th, "--preempt", m]) for m in modes]
        res = {c[:2]: [] for c in configs}
        for _ in range(a.reps):
            for th, m, engine in configs:
                res[(th, m)].append(row(run_once(a.kairos, batch, a.end, engine, a.extra)))
        digests = {r[-1] for rs in res.values() for r in rs}
        for (th, m), rs in res.items():
            med = [statistics.median(r[j] for r in rs) for j in range(9)]
            pre = "-" if m in ("off", "sequential") else f"{med[5]:.0f} / {med[6]:.0f}"
            fate = "-" if m in ("off", "sequential") else f"{med[7]:.0f} / {med[8]:.0f}"
            print(f"| {batch} | {th} | {m} | {med[0]:.3f} | {med[1]:,.0f} | {med[2]:.3f} "
                  f"| {med[3]:.0f} | {med[4]:.0f} | {pre} | {fate} |")
        if len(digests) != 1:
            print(f"\nDIGEST MISMATCH at batch={batch}: {sorted(digests)}")
            sys.exit(1)


if __name__ == "__main__":
    main()
