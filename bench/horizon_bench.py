#!/usr/bin/env python3
"""The conservative engine (paper 003). A digest table, then two tables of medians of REPS
interleaved runs:

0. Every model that runs conservatively: run digest and committed events of the sequential
   engine and of the conservative engine at 1, 2 and 4 workers (they must be equal).

1. The null model (110 modules x 50 000 events of no work, 1 s long, every 20 s: 5.5 M
   events): wall time of pull vs push handoff and barrier events vs event-free barriers at
   1..W workers, every event handed out (--offload always, the paper's setting), the default
   (--offload auto) and the sequential engine beside them.
2. PHOLD-std (1024 LPs, lookahead 0.1) without and with 5 us of busy work per event:
   committed events/s of the sequential, optimistic and conservative engines at 1 and 2
   workers/threads.
3. The expanded-event formulations of queueing (4096 LPs) and PCS (64 cells of 1000
   channels, 80 KB states): the same three engines, wall seconds.

    python3 bench/horizon_bench.py [--kairos build/kairos] [--reps 3] [--workers 1,2,3,4]
                                   [--events 50000] [--only digests|null|phold|models]
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

# (this script measures Horizon: --conservative auto would run phold on windows)
HORIZON = ["--sync", "conservative", "--conservative", "horizon"]


def run_once(kairos, args):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [kairos, "run", *args, "--progress", "off", "--stats", f.name]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return json.load(open(f.name))


def interleaved(kairos, configs, reps):
    """configs: {name: args}; returns {name: [stats, ...]} and checks one digest for all."""
    res = {n: [] for n in configs}
    for _ in range(reps):
        for n, args in configs.items():
            res[n].append(run_once(kairos, args))
    digests = {s["run_digest"] for rs in res.values() for s in rs}
    if len(digests) != 1:
        print(f"DIGEST MISMATCH: {sorted(digests)}")
        sys.exit(1)
    return res


DIGEST_MODELS = {
    "phold (lookahead 0.1)": ["phold", "--end", "200"],
    "phold (lookahead 0: zero durations)": ["phold", "--lps", "64", "--end", "20",
                                            "-P", "lookahead=0"],
    "null": ["null", "--lps", "110", "--end", "inf", "-P", "events=2000"],
    "queueing -P spans=1": ["queueing", "-P", "spans=1", "--lps", "64", "--end", "2000"],
    "pcs -P spans=1": ["pcs", "-P", "spans=1", "--lps", "64", "--end", "1", "-P", "channels=200"],
}


def digest_table(a):
    print("\nRun digest and committed events, sequential vs conservative (1, 2, 4 workers)\n")
    print("| model | sequential | 1 worker | 2 workers | 4 workers | equal |")
    print("|---|---|---|---|---|---|")
    bad = False
    for name, args in DIGEST_MODELS.items():
        cells = [run_once(a.kairos, args + ["--sync", "sequential"])]
        for w in ("1", "2", "4"):
            cells.append(run_once(a.kairos, args + [*HORIZON, "--threads", w]))
        keys = {(s["run_digest"], s["committed_events"]) for s in cells}
        bad |= len(keys) != 1
        row = " | ".join(f"{s['run_digest']} / {s['committed_events']}" for s in cells)
        print(f"| {name} | {row} | {'yes' if len(keys) == 1 else 'NO'} |")
    if bad:
        print("DIGEST MISMATCH")
        sys.exit(1)


def null_table(a):
    base = ["null", "--lps", "110", "--end", "inf", "-P", f"events={a.events}"]
    variants = [("push, event-free", []), ("push, barrier events", ["--barriers", "events"]),
                ("pull, event-free", ["--handoff", "pull"]),
                ("pull, barrier events", ["--handoff", "pull", "--barriers", "events"])]
    configs = {("sequential", "-"): base + ["--sync", "sequential"]}
    for w in a.workers.split(","):
        for name, v in variants:
            configs[(name + ", offload always", w)] = base + [*HORIZON, "--threads", w,
                                                           "--offload", "always", *v]
        configs[("push, event-free, offload auto (default)", w)] = base + [*HORIZON,
                                                                           "--threads", w]
    res = interleaved(a.kairos, configs, a.reps)
    seq = statistics.median(s["wall_seconds"] for s in res[("sequential", "-")])
    print(f"\nNull model, {110 * a.events} events, {a.reps} interleaved reps: median wall seconds "
          f"(x sequential)\n")
    print("| configuration | workers | wall s | x sequential | mean in flight | scheduler ran |")
    print("|---|---|---|---|---|---|")
    for (name, w), rs in res.items():
        wall = statistics.median(s["wall_seconds"] for s in rs)
        c = rs[0].get("conservative")
        fl = f"{statistics.median(s['conservative']['mean_in_flight'] for s in rs):.2f}" if c else "-"
        ran = f"{statistics.median(s['conservative']['scheduler_ran'] for s in rs):.0f}" if c else "-"
        print(f"| {name} | {w} | {wall:.3f} | {wall / seq:.2f} | {fl} | {ran} |")


def phold_table(a):
    print(f"\nPHOLD-std (1024 LPs, lookahead 0.1, --end {a.phold_end}), {a.reps} interleaved reps: "
          f"median committed M events/s\n")
    print("| busy work | engine | workers / threads | M events/s | efficiency |")
    print("|---|---|---|---|---|")
    for busy in ("0", "5"):
        end = a.phold_end if busy == "0" else a.phold_end / 50
        base = ["phold", "--end", f"{end:g}", "-P", f"busy_us={busy}"]
        configs = {("sequential", "-"): base + ["--sync", "sequential"]}
        for n in ("1", "2"):
            configs[("optimistic", n)] = base + ["--threads", n]
            configs[("conservative", n)] = base + [*HORIZON, "--threads", n]
        res = interleaved(a.kairos, configs, a.reps)
        for (eng, n), rs in res.items():
            rate = statistics.median(s["committed_events"] / s["wall_seconds"] for s in rs) / 1e6
            eff = statistics.median(s["efficiency"] for s in rs)
            print(f"| {busy} us | {eng} | {n} | {rate:.3f} | {eff:.3f} |")


def models_table(a):
    print(f"\nExpanded-event models, {a.reps} interleaved reps: median wall seconds "
          f"(x sequential)\n")
    print("| model | engine | workers / threads | wall s | x sequential |")
    print("|---|---|---|---|---|")
    models = {"queueing -P spans=1, 4096 LPs, --end 500":
              ["queueing", "-P", "spans=1", "--lps", "4096", "--end", "500"],
              "pcs -P spans=1, 64 cells, --end 5": ["pcs", "-P", "spans=1", "--lps", "64", "--end", "5"]}
    for name, base in models.items():
        configs = {("sequential", "-"): base + ["--sync", "sequential"]}
        for n in ("1", "2"):
            configs[("optimistic", n)] = base + ["--threads", n]
            configs[("conservative", n)] = base + [*HORIZON, "--threads", n]
        res = interleaved(a.kairos, configs, a.reps)
        seq = statistics.median(s["wall_seconds"] for s in res[("sequential", "-")])
        for (eng, n), rs in res.items():
            wall = statistics.median(s["wall_seconds"] for s in rs)
            print(f"| {name} | {eng} | {n} | {wall:.3f} | {wall / seq:.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default="build/kairos")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--workers", default="1,2,3,4")
    ap.add_argument("--events", type=int, default=50000)
    ap.add_argument("--phold-end", type=float, default=5000)
    ap.add_argument("--only", choices=["digests", "null", "phold", "models"])
    a = ap.parse_args()
    print(f"commit {commit()}, {machine()}")
    if a.only in (None, "digests"):
        digest_table(a)
    if a.only in (None, "null"):
        null_table(a)
    if a.only in (None, "phold"):
        phold_table(a)
    if a.only in (None, "models"):
        models_table(a)


if __name__ == "__main__":
    main()
