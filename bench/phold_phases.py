#!/usr/bin/env python3
"""PHOLD-phases (paper 000, section 3.2): 2025 LPs on a 45 x 45 torus, 5 jobs per LP routed
to random neighbours, three phases of equal virtual length whose events do about 30, 150 and
300 us of busy arithmetic. Compares plain Time Warp (--preempt off) with time-sharing modes,
per phase: wall time (from the run's progress series: when GVT passed each phase boundary),
efficiency (committed / processed within the phase). Runs are interleaved, REPS each; medians.

    python3 bench/phold_phases.py [--kairos build/kairos] [--reps 5] [--threads 2,4]
                                  [--phase-length 1.5] [--modes off,adaptive,tick]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import tempfile


def run_once(kairos, threads, mode, L, extra):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [kairos, "run", "phold", "--lps", "2025", "-P", "mesh=45", "-P", "population=5",
               "-P", f"phase_length={L}", "--end", f"{3 * L}", "--threads", str(threads),
               "--preempt", mode, "--progress", "off", "--stats", f.name, *extra]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        return json.load(open(f.name))


def phases(stats, L):
    """Per phase: (wall seconds, efficiency), from the series rows [wall, gvt, committed,
    processed, rss]; the last phase ends with the run."""
    rows = stats["series"]["rows"] if isinstance(stats["series"], dict) else stats["series"]
    bounds = [(0.0, 0, 0)]
    for b in (L, 2 * L):
        r = next((r for r in rows if r[1] >= b), rows[-1])
        bounds.append((r[0], r[2], r[3]))
    bounds.append((stats["wall_seconds"], stats["committed_events"], stats["processed_events"]))
    out = []
    for a, z in zip(bounds, bounds[1:]):
        dp = z[2] - a[2]
        out.append((z[0] - a[0], (z[1] - a[1]) / dp if dp else 1.0))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kairos", default="build/kairos")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", default="2,4")
    ap.add_argument("--phase-length", type=float, default=1.5)
    ap.add_argument("--modes", default="off,adaptive,tick")
    ap.add_argument("--tick-us", default=None)
    a = ap.parse_args()
    extra = ["--tick-us", a.tick_us] if a.tick_us else []
    modes = a.modes.split(",")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"PHOLD-phases, phase length {a.phase_length}, {a.reps} interleaved reps, commit "
          f"{commit}, {platform.node()} ({os.cpu_count()} CPUs)\n")
    print("| threads | mode | A wall s | B wall s | C wall s | total s | A eff | B eff | C eff "
          "| rollbacks | preemptions (calls/ticks) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for th in a.threads.split(","):
        res = {m: [] for m in modes}
        for _ in range(a.reps):
            for m in modes:
                res[m].append(run_once(a.kairos, th, m, a.phase_length, extra))
        for m in modes:
            ph = [phases(s, a.phase_length) for s in res[m]]
            med = lambda f: statistics.median(f(p) for p in ph)
            walls = [med(lambda p, i=i: p[i][0]) for i in range(3)]
            effs = [med(lambda p, i=i: p[i][1]) for i in range(3)]
            tot = statistics.median(s["wall_seconds"] for s in res[m])
            rb = statistics.median(s["rollbacks"] for s in res[m])
            ts = [s.get("time_sharing") for s in res[m]]
            pre = "-" if not ts[0] else "%d/%d" % (
                statistics.median(t["preempted_at_calls"] for t in ts),
                statistics.median(t["preempted_by_ticks"] for t in ts))
            print(f"| {th} | {m} | " + " | ".join(f"{w:.3f}" for w in walls) + f" | {tot:.3f} | "
                  + " | ".join(f"{e:.3f}" for e in effs) + f" | {rb:.0f} | {pre} |")


if __name__ == "__main__":
    main()
