#!/usr/bin/env python3
"""The membench sweep of paper 004: state S = 10 KB, 100 KB, 1 MB; read/write span 20-80%
of S; a full checkpoint every 5 and every 20 (incremental ones between, a checkpoint at
every event as in the paper, K = 1); state saving full vs chunk vs page vs buddy. Four LPs
on two threads, so rollbacks (and restores) happen. Each point is the median of REPS runs.
Prints a Markdown table (event, checkpoint and restore latency, bytes per checkpoint) and
writes bench/results/membench.csv and one SVG plot per metric.

    python3 bench/membench_sweep.py [--kairos build/kairos] [--reps 3] [--threads 2]
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from kairos_plots import line_panels, save  # noqa: E402
from phold_std import commit, machine  # noqa: E402

SIZES = [(10240, "10 KB", 2500), (102400, "100 KB", 250), (1048576, "1 MB", 25)]  # S, label, --end
SPANS = [0.2, 0.4, 0.6, 0.8]
FULL_EVERY = [5, 20]
MODES = ["full", "chunk", "page", "buddy", "scan"]


def run_once(kairos, S, end, span, mode, F, threads):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [kairos, "run", "membench", "--lps", "4", "--threads", str(threads), "--end", str(end),
               "--state", mode, "--ckpt-interval", "1", "--ckpt-full-every", str(F),
               "--progress", "off", "--stats", f.name, "-P", f"state={S}", "-P", f"span={span}"]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return json.load(open(f.name))


def point(kairos, S, end, span, mode, F, reps, threads):
    runs = [run_once(kairos, S, end, span, mode, F, threads) for _ in range(reps)]
    ss = [r["state_saving"] for r in runs]
    med = lambda f: statistics.median(f(s) for s in ss)  # noqa: E731
    digests = {r["run_digest"] for r in runs}
    return {
        "event_us": med(lambda s: s["mean_event_ns"]) / 1e3,
        "ckpt_us": med(lambda s: s["mean_checkpoint_ns"]) / 1e3,
        "restore_us": med(lambda s: s["mean_restore_ns"]) / 1e3,
        "kib_per_ckpt": med(lambda s: (s["full_bytes"] + s["incremental_bytes"]) /
                            max(1, s["checkpoints_full"] + s["checkpoints_incremental"])) / 1024,
        "incr_kib": med(lambda s: s["mean_incremental_bytes"]) / 1024,
        "full_kib": med(lambda s: s["mean_full_bytes"]) / 1024,
        "faults_per_event": statistics.median(r["state_saving"]["write_faults"] / r["processed_events"]
                                              for r in runs),
        "committed_per_s": statistics.median(r["committed_per_second"] for r in runs),
        "digest": "/".join(sorted(digests)),
        "restores": statistics.median(r["state_saving"]["restores"] for r in runs),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kairos", default="build/kairos")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "results"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    print(f"membench sweep (paper 004): 4 LPs, {args.threads} threads, checkpoint every event, "
          f"median of {args.reps} runs")
    print(f"commit {commit()}; machine: {machine()}\n")
    print("| S | span | full every | mode | event us | checkpoint us | restore us | KiB/checkpoint "
          "| incremental KiB | faults/event | committed ev/s | digest |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = []
    for S, label, end in SIZES:
        for span in SPANS:
            for F in FULL_EVERY:
                for mode in MODES:
                    if mode == "full" and F != FULL_EVERY[0]:
                        continue  # every checkpoint is full: F does not apply
                    p = point(args.kairos, S, end, span, mode, F, args.reps, args.threads)
                    p.update(S=S, label=label, span=span, F=F, mode=mode)
                    rows.append(p)
                    print(f"| {label} | {span:.0%} | {F if mode != 'full' else '-'} | {mode} | "
                          f"{p['event_us']:.2f} | {p['ckpt_us']:.2f} | {p['restore_us']:.2f} | "
                          f"{p['kib_per_ckpt']:.1f} | {p['incr_kib']:.1f} | "
                          f"{p['faults_per_event']:.2f} | {p['committed_per_s']:.0f} | {p['digest']} |",
                          flush=True)
    with open(os.path.join(args.out, "membench.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)
    for metric, ylabel in (("event_us", "event latency (us)"), ("ckpt_us", "checkpoint latency (us)"),
                           ("restore_us", "restore latency (us)"), ("kib_per_ckpt", "KiB per checkpoint")):
        panels = []
        for S, label, _ in SIZES:
            series = {}
            for r in rows:
                if r["S"] != S:
                    continue
                name = "full" if r["mode"] == "full" else f"{r['mode']} F={r['F']}"
                series.setdefault(name, []).append((100 * r["span"], r[metric]))
            panels.append((f"S = {label}", series))
        styles = {"full": ("#000000", "")}
        for i, m in enumerate(MODES[1:]):
            for j, F in enumerate(FULL_EVERY):
                styles[f"{m} F={F}"] = (["#1f77b4", "#d62728", "#2ca02c", "#9467bd"][i], ["", "5,3"][j])
        save(line_panels(panels, "span (% of S)", ylabel, log_y=True, styles=styles),
             os.path.join(args.out, f"membench_{metric}.svg"))
    print(f"\nwrote {args.out}/membench.csv and membench_*.svg")


if __name__ == "__main__":
    sys.exit(main())
