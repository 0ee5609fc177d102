#!/usr/bin/env python3
"""PHOLD-phases (paper 000, section 3.2): 2025 LPs on a 45 x 45 torus, 5 jobs per LP routed
to random neighbours, three phases of equal virtual length whose events do about 30, 150 and
300 us of busy arithmetic. Compares plain Time Warp (--preempt off) with time-sharing modes,
per phase: wall time, efficiency (1 - undone / processed), rollbacks and preemptions, cut from
the run's --stats series where GVT passed each phase boundary. Runs are interleaved, REPS
each; medians. Extra kairos options (e.g. a rollback-prone setting) follow "--".

    python3 bench/phold_phases.py [--kairos build/kairos] [--reps 5] [--threads 2,4]
                                  [--phase-length 1.5] [--modes off,adaptive,tick]
                                  [-- -P lookahead=0.01 ...]
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
    """Per phase: (wall seconds, efficiency, rollbacks, preemptions at calls, by ticks), cut
    from the series where GVT passed each phase boundary; the last phase ends with the run."""
    ser = stats["series"]
    col = {c: i for i, c in enumerate(ser["columns"])}
    ts = stats.get("time_sharing") or {}
    final = {"wall_seconds": stats["wall_seconds"], "committed": stats["committed_events"],
             "processed": stats["processed_events"], "rollbacks": stats["rollbacks"],
             "rolled_back": stats["rolled_back_events"],
             "preempted_at_calls": ts.get("preempted_at_calls", 0),
             "preempted_by_ticks": ts.get("preempted_by_ticks", 0) + ts.get("preempted_by_slice", 0)}
    keys = list(final)
    bounds = [{k: 0.0 for k in keys}]
    for b in (L, 2 * L):
        r = next((r for r in ser["rows"] if r[col["gvt"]] is not None and r[col["gvt"]] >= b),
                 ser["rows"][-1])
        bounds.append({k: r[col[k]] for k in keys})
    bounds.append(final)
    out = []
    for a, z in zip(bounds, bounds[1:]):
        d = {k: z[k] - a[k] for k in keys}
        # efficiency from processed and undone in the same window (both published together;
        # committed counts lag behind processing by a GVT round)
        p = d["processed"]
        out.append((d["wall_seconds"], (p - d["rolled_back"]) / p if p else 1.0,
                    d["rollbacks"], d["preempted_at_calls"], d["preempted_by_ticks"]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kairos", default="build/kairos")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", default="2,4")
    ap.add_argument("--phase-length", type=float, default=1.5)
    ap.add_argument("--modes", default="off,adaptive,tick")
    ap.add_argument("--tick-us", default=None)
    ap.add_argument("extra", nargs="*", help="more kairos run options, after --")
    a = ap.parse_args()
    extra = (["--tick-us", a.tick_us] if a.tick_us else []) + a.extra
    modes = a.modes.split(",")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    print(f"PHOLD-phases, phase length {a.phase_length}, {a.reps} interleaved reps, commit "
          f"{commit}, {platform.node()} ({os.cpu_count()} CPUs), extra options {extra}\n")
    print("| threads | mode | phase | wall s | efficiency | rollbacks | preempted at calls "
          "| preempted by ticks |")
    print("|---|---|---|---|---|---|---|---|")
    for th in a.threads.split(","):
        res = {m: [] for m in modes}
        for _ in range(a.reps):
            for m in modes:
                res[m].append(run_once(a.kairos, th, m, a.phase_length, extra))
        for m in modes:
            ph = [phases(s, a.phase_length) for s in res[m]]
            for i, name in enumerate(("A", "B", "C")):
                med = [statistics.median(p[i][j] for p in ph) for j in range(5)]
                print(f"| {th} | {m} | {name} | {med[0]:.3f} | {med[1]:.3f} | {med[2]:.0f} "
                      f"| {med[3]:.0f} | {med[4]:.0f} |")
            tot = statistics.median(s["wall_seconds"] for s in res[m])
            eff = statistics.median(s["committed_events"] / s["processed_events"] for s in res[m])
            print(f"| {th} | {m} | all | {tot:.3f} | {eff:.3f} | "
                  f"{statistics.median(s['rollbacks'] for s in res[m]):.0f} | | |")


if __name__ == "__main__":
    main()
