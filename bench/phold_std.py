#!/usr/bin/env python3
"""PHOLD-std benchmark (docs/references.md): 1 initial event per LP, increment
0.1 + exponential(1.0), uniform destinations. Each configuration runs REPS times (default 5);
prints the median committed events/s, efficiency (committed/processed) and peak memory, as a
Markdown table ready for bench/RESULTS.md, with the commit and machine it ran on.

    python3 bench/phold_std.py [--kairos build/kairos] [--reps 5] [--events 10e6] [--only NAME]
                               [--contended] [--scale]

The cross-core round trip (build/kr_pingpong, bench/tools/pingpong.c) is printed before and
after the runs: on a VM it varies from ~90 ns to over a microsecond and decides how parallel
runs fare. --contended runs every configuration with a busy loop pinned to the last core as
well (a user's machine is never idle). --scale instead measures 65 536 and 1 048 576 LPs,
sequential and optimistic on 1 thread, against the bare PHOLD loop of bench/limit (build/
phold_limit), with the peak memory per LP."""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

import loadcheck

CONFIGS = [
    # name, LPs, extra arguments
    ("sequential", 1024, ["--sync", "sequential"]),
    ("optimistic 1 thread", 1024, ["--threads", "1"]),
    ("optimistic 2 threads", 1024, ["--threads", "2"]),
    ("optimistic 1 thread, 4096 LPs", 4096, ["--threads", "1"]),
    ("optimistic 1 thread, 65536 LPs", 65536, ["--threads", "1"]),
    ("optimistic 4 threads (oversubscribed)", 1024, ["--threads", "4"]),
]


def end_time(lps, events):
    # each LP has one event in flight; increments average 1.1 time units
    return events * 1.1 / lps


def run_once(kairos, lps, extra, events):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [kairos, "run", "phold", "--lps", str(lps), "--end", f"{end_time(lps, events):.6g}",
               "--progress", "off", "--stats", f.name, *extra]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return json.load(open(f.name))


def machine():
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} CPUs, Linux {platform.release()}"


def commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default="build/kairos")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--events", type=float, default=10e6)
    ap.add_argument("--only", help="run only configurations whose name contains this")
    ap.add_argument("--contended", action="store_true",
                    help="also run each configuration beside a busy loop on the last core")
    ap.add_argument("--scale", action="store_true",
                    help="65536 and 1M LPs against the bare loop (bench/limit), bytes per LP")
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--pingpong", default=os.path.join(here, "..", "build", "kr_pingpong"))
    ap.add_argument("--limit", default=os.path.join(here, "..", "build", "phold_limit"))
    args = ap.parse_args()
    if args.scale:
        return scale(args)
    print(f"PHOLD-std, {args.reps} runs per configuration, ~{args.events / 1e6:.0f} M committed events each")
    print(f"commit {commit()}; machine: {machine()}")
    print(f"cross-core round trip before: {loadcheck.pingpong(args.pingpong)}\n")
    print("| configuration | LPs | committed events | median M ev/s (min-max) | efficiency | peak memory | digest |")
    print("|---|---|---|---|---|---|---|")
    for contended in ([False, True] if args.contended else [False]):
        table(args, contended)
    print(f"\ncross-core round trip after: {loadcheck.pingpong(args.pingpong)}")


def scale(args):
    """Large LP counts: the engine against the bare loop (same events), and memory per LP."""
    print(f"PHOLD-std at scale, {args.reps} runs each, ~{args.events / 1e6:.0f} M events")
    print(f"commit {commit()}; machine: {machine()}\n")
    print("| LPs | bare loop M ev/s | sequential M ev/s (of bare) | bytes/LP | "
          "optimistic 1 thread M ev/s | bytes/LP |")
    print("|---|---|---|---|---|---|")
    for lps in (65536, 1048576):
        bare, seq, opt = [], [], []
        for _ in range(args.reps):  # (interleaved: the machine drifts)
            out = subprocess.run([args.limit, str(lps), str(int(args.events))], check=True,
                                 capture_output=True, text=True).stdout
            bare.append(float(out.split()[0]))
            seq.append(run_once(args.kairos, lps, ["--sync", "sequential"], args.events))
            opt.append(run_once(args.kairos, lps, ["--threads", "1"], args.events))
        def rate(runs):
            r = [x["committed_per_second"] / 1e6 for x in runs]
            return statistics.median(r), f"{statistics.median(r):.2f} ({min(r):.2f}-{max(r):.2f})"
        def per_lp(runs):
            return f"{statistics.median(x['peak_rss_bytes'] for x in runs) / lps:.0f}"
        b = statistics.median(bare)
        (sm, s), (_, o) = rate(seq), rate(opt)
        print(f"| {lps} | {b:.2f} ({min(bare):.2f}-{max(bare):.2f}) | {s} **{sm / b:.0%}** | "
              f"{per_lp(seq)} | {o} | {per_lp(opt)} |", flush=True)


def table(args, contended):
    last = (os.cpu_count() or 1) - 1
    with loadcheck.busy_core(last if contended else None):
        rows(args, f", busy loop on core {last}" if contended else "")


def rows(args, suffix):
    for name, lps, extra in CONFIGS:
        if args.only and args.only not in name:
            continue
        name += suffix
        runs = [run_once(args.kairos, lps, extra, args.events) for _ in range(args.reps)]
        rates = [r["committed_per_second"] / 1e6 for r in runs]
        eff = statistics.median(r["efficiency"] for r in runs)
        mem = statistics.median(r["peak_rss_bytes"] for r in runs) / 2**20
        digests = {r["run_digest"] for r in runs}
        print(f"| {name} | {lps} | {runs[0]['committed_events']} | {statistics.median(rates):.2f} "
              f"({min(rates):.2f}-{max(rates):.2f}) | {100 * eff:.1f}% | {mem:.1f} MiB "
              f"({mem * 2**20 / lps / 1024:.2f} KiB/LP) | {'/'.join(sorted(digests))} |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
