#!/usr/bin/env python3
"""PCS with large states (paper 002, section 4): 256 cells of 1000 channels at 50%
utilisation (about 80 KB of state per cell), checkpoint interval 80, a full checkpoint every
10; committed events/s and checkpoint sizes per state-saving mode (full for reference),
median of REPS runs. Prints a Markdown table.

    python3 bench/pcs_bench.py [--kairos build/kairos] [--reps 3] [--threads 2] [--end 1.5]
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

MODES = ["full", "chunk", "page", "buddy", "scan"]


def run_once(kairos, mode, args, extra):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [kairos, "run", "pcs", "--lps", "256", "--threads", str(args.threads), "--end", str(args.end),
               "--state", mode, "--ckpt-interval", str(args.k), "--ckpt-full-every", "10",
               "--progress", "off", "--stats", f.name, *extra]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return json.load(open(f.name))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default="build/kairos")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--end", type=float, default=1.5)
    ap.add_argument("--k", type=int, default=80)
    ap.add_argument("-P", action="append", default=[], help="extra model parameter name=value")
    args = ap.parse_args()
    extra = [x for p in args.P for x in ("-P", p)]
    print(f"PCS: 256 cells, {args.threads} threads, K={args.k}, full every 10, end {args.end} min, "
          f"median of {args.reps} runs {' '.join(extra)}")
    print(f"commit {commit()}; machine: {machine()}\n")
    print("| mode | committed M ev/s (min-max) | vs page | efficiency | state KiB/LP | full ckpt KiB "
          "| incremental KiB | incr/full | checkpoint us | restore us | faults/ckpt | mprotect/ckpt | digest |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    res = {}
    for mode in MODES:
        runs = [run_once(args.kairos, mode, args, extra) for _ in range(args.reps)]
        rates = [r["committed_per_second"] / 1e6 for r in runs]
        ss = [r["state_saving"] for r in runs]
        med = lambda f: statistics.median(f(s) for s in ss)  # noqa: E731
        ck = lambda s: max(1, s["checkpoints_full"] + s["checkpoints_incremental"])  # noqa: E731
        res[mode] = statistics.median(rates)
        full_kib, incr_kib = med(lambda s: s["mean_full_bytes"]) / 1024, med(lambda s: s["mean_incremental_bytes"]) / 1024
        print(f"| {mode} | {res[mode]:.3f} ({min(rates):.3f}-{max(rates):.3f}) | "
              f"{res[mode] / res['page']:.2f}x | " if "page" in res else
              f"| {mode} | {res[mode]:.3f} ({min(rates):.3f}-{max(rates):.3f}) | - | ", end="")
        print(f"{100 * statistics.median(r['efficiency'] for r in runs):.1f}% | "
              f"{med(lambda s: s['mean_state_bytes']) / 1024:.1f} | {full_kib:.1f} | "
              f"{incr_kib:.1f} | {incr_kib / full_kib if full_kib and mode != 'full' else 0:.2f} | "
              f"{med(lambda s: s['mean_checkpoint_ns']) / 1e3:.1f} | "
              f"{med(lambda s: s['mean_restore_ns']) / 1e3:.1f} | "
              f"{med(lambda s: s['write_faults'] / ck(s)):.1f} | {med(lambda s: s['mprotect_calls'] / ck(s)):.1f} | "
              f"{'/'.join(sorted({r['run_digest'] for r in runs}))} |", flush=True)
    if "page" in res and "buddy" in res:
        print(f"\nbuddy / page = {res['buddy'] / res['page']:.2f}x; chunk / page = {res['chunk'] / res['page']:.2f}x")


if __name__ == "__main__":
    sys.exit(main())
