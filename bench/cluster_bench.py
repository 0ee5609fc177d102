#!/usr/bin/env python3
"""Kairos across MPI ranks on this machine (docs/cluster.md, issue 15): PHOLD-std with 1024
LPs on the sequential engine, 1 rank x 2 threads and 2 ranks x 1 thread, runs interleaved
(so that the VM's drift hits every configuration alike); then PHOLD with ~5 us of work per
event, sequential vs 2 ranks x 1 thread. Prints medians with their ranges, and for the runs
across ranks the mean events per MPI message, beside the machine's load and the cross-core
round trip measured before and after.

    python3 bench/cluster_bench.py [--kairos build/kairos] [--reps 5] [--events 4e6]
                                   [--load] [--base OTHER/kairos] [--scale]

--load runs everything with a busy loop pinned to the last core (a user's machine is never
idle). --base adds the runs across ranks of another build, interleaved with this one's (to
compare two commits). --scale adds PHOLD-std with 65 536 LPs per rank (1 rank x 1 and 2
threads, 2 ranks x 1 thread): the weak-scaling case of docs/cluster.md. Needs mpirun (Open
MPI) and build/kairos-mpi.so."""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

import loadcheck

MPIRUN = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader",
          "--mca", "btl_vader_single_copy_mechanism", "none"]


def phold_args(lps, events, work_us):
    end = events * 1.1 / lps
    extra = ["-P", f"busy_us={work_us}"] if work_us else []
    return ["run", "phold", "--lps", str(lps), "--end", f"{end:.6g}", "--progress", "off",
            *extra]


def run_once(kairos, ranks, threads, args):
    """One run: its --stats (rank 0's file, every rank's counts)."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [kairos, *args, "--stats", f.name]
        cmd += ["--sync", "sequential"] if ranks == 0 else ["--threads", str(threads)]
        if ranks:
            cmd = MPIRUN + ["-np", str(ranks)] + cmd
        env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       env=env)
        return json.load(open(f.name))


def per_message(st):
    rows = st.get("per_rank") or []
    sent = sum(r["events_to_ranks"] for r in rows)
    msgs = sum(r["mpi_messages_sent"] for r in rows)
    return sent / msgs if msgs else None


def table(title, configs, reps, args):
    print(f"\n{title}\n")
    print("| configuration | M committed ev/s, median (range) | efficiency | safe | events per "
          "MPI message | peak MiB (rank 0) | digest |")
    print("|---|---|---|---|---|---|---|")
    res = {name: [] for name, _, _, _ in configs}
    for _ in range(reps):  # interleaved: one run of each, then again
        for name, kairos, ranks, threads in configs:
            res[name].append(run_once(kairos, ranks, threads, args))
    for name, _, _, _ in configs:
        rates = [s["committed_per_second"] / 1e6 for s in res[name]]
        eff = statistics.median(s["efficiency"] for s in res[name])
        pm = [x for x in (per_message(s) for s in res[name]) if x]
        digests = {s["run_digest"] for s in res[name]}
        safe = statistics.median(s.get("safe_events", 0) / max(s["committed_events"], 1)
                                 for s in res[name])
        mib = statistics.median(s["peak_rss_bytes"] / 2**20 for s in res[name])
        print(f"| {name} | {statistics.median(rates):.3f} ({min(rates):.3f}-{max(rates):.3f}) | "
              f"{eff:.3f} | {100 * safe:.0f}% | "
              f"{f'{statistics.median(pm):.1f}' if pm else '-'} | {mib:.0f} | "
              f"{', '.join(sorted(digests))} |")
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kairos", default="build/kairos")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--events", type=float, default=4e6)
    ap.add_argument("--load", action="store_true")
    ap.add_argument("--base", help="another build's kairos: its runs across ranks beside")
    ap.add_argument("--scale", action="store_true")
    a = ap.parse_args()
    tool = os.path.join(os.path.dirname(a.kairos), "kr_pingpong")
    print(loadcheck.describe())
    print(f"cross-core round trip before: {loadcheck.pingpong(tool)}")
    cpu = (os.cpu_count() or 1) - 1
    if a.load:
        print(f"a busy loop runs on core {cpu} throughout")
    with loadcheck.busy_core(cpu if a.load else None):
        k, b = a.kairos, a.base
        base = lambda name, ranks, threads: [(f"{name} (base)", b, ranks, threads)] if b else []
        configs = [("sequential", k, 0, 1), ("1 rank x 2 threads", k, 1, 2),
                   ("2 ranks x 1 thread", k, 2, 1), *base("2 ranks x 1 thread", 2, 1)]
        table(f"PHOLD-std, 1024 LPs, ~{a.events / 1e6:.0f} M events, {a.reps} interleaved runs",
              configs, a.reps, phold_args(1024, a.events, 0))
        table(f"PHOLD, 1024 LPs, 5 us of work per event, ~{a.events / 50e6 * 1e3:.0f} k "
              f"events, {a.reps} interleaved runs",
              [("sequential", k, 0, 1), ("2 ranks x 1 thread", k, 2, 1),
               *base("2 ranks x 1 thread", 2, 1)], a.reps, phold_args(1024, a.events / 50, 5))
        if a.scale:
            table(f"PHOLD-std, 131 072 LPs (65 536 per rank), ~{a.events / 1e6:.0f} M events, "
                  f"{a.reps} interleaved runs",
                  [("sequential", k, 0, 1), ("1 rank x 2 threads", k, 1, 2),
                   ("2 ranks x 1 thread", k, 2, 1), *base("2 ranks x 1 thread", 2, 1)],
                  a.reps, phold_args(131072, a.events, 0))
    print(f"\ncross-core round trip after: {loadcheck.pingpong(tool)}")


if __name__ == "__main__":
    main()
