#!/usr/bin/env python3
"""What the modeller's toolkit costs (issue 37): bench/models/toolkit.c, where every event
does `calls` of one operation - a timer set and cancelled at once (its event still reaches
its time and is skipped), a chain of timers instead of plain sends, kr_metric, kr_tally_add
- against the same model doing none. Two measures: instructions (cachegrind, the sequential
engine and the optimistic engine on one thread: exact, not noisy) and wall time (medians of
interleaved runs with ranges, sequential and optimistic at 1 and 2 threads; the cross-core
round trip before and after), both per call. Prints Markdown for bench/RESULTS.md.

    python3 bench/toolkit_cost.py [--kairos build/kairos] [--reps 5] [--calls 4]"""
import argparse
import json
import os
import re
import statistics
import subprocess
import tempfile

import loadcheck

OPS = [("none", 0), ("timer set + cancel", 1), ("timer chain (a timer per event)", 2),
       ("kr_metric", 3), ("kr_tally_add", 4)]
ENGINES = [("sequential", ["--sync", "sequential"]), ("optimistic 1", ["--threads", "1"]),
           ("optimistic 2", ["--threads", "2"])]


def args_of(lib, op, calls, lps, end):
    return [lib, "--lps", str(lps), "--end", str(end), "-P", f"op={op}", "-P",
            f"calls={calls if op in (1, 3, 4) else 0}"]


def events_of(st):
    """The model's own events: a cancelled timer's event reaches its time and is counted
    among the committed ones, but it is part of what the cancel costs."""
    return st["committed_events"] - st.get("timers_cancelled", 0)


def instructions(kairos, args):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        p = subprocess.run(["valgrind", "--tool=cachegrind", "--cache-sim=no",
                            "--cachegrind-out-file=/dev/null", kairos, "run", *args,
                            "--progress", "off", "--stats", f.name],
                           capture_output=True, text=True, check=True)
        refs = int(re.search(r"I\s+refs:\s+([\d,]+)", p.stderr).group(1).replace(",", ""))
        return refs, events_of(json.load(open(f.name)))


def rate(kairos, args):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        subprocess.run([kairos, "run", *args, "--progress", "off", "--stats", f.name],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=True)
        st = json.load(open(f.name))
        return st["wall_seconds"], events_of(st)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kairos", default="build/kairos")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--calls", type=int, default=4)
    ap.add_argument("--lps", type=int, default=1024)
    a = ap.parse_args()
    build = os.path.dirname(os.path.abspath(a.kairos))
    lib = os.path.join(build, "libtoolkit.so")
    print(loadcheck.describe())
    print(f"cross-core round trip before: {loadcheck.pingpong(os.path.join(build, 'kr_pingpong'))}")
    print("\n| operation | instructions a call, sequential | optimistic, 1 thread |")
    print("|---|---|---|")
    base = {}
    for name, op in OPS:
        cells = []
        for eng, eargs in ENGINES[:2]:
            refs, events = instructions(a.kairos, args_of(lib, op, a.calls, a.lps, 200) + eargs)
            if op == 0:
                base[eng] = (refs, events)
                cells.append(f"{refs / events:.0f} an event")
                continue
            per = (refs / events - base[eng][0] / base[eng][1]) / (a.calls if op != 2 else 1)
            cells.append(f"{per:+.0f}" + ("" if op != 2 else " an event"))
        print(f"| {name} | " + " | ".join(cells) + " |")
    walls = {}
    for _ in range(a.reps):
        for name, op in OPS:
            for eng, eargs in ENGINES:
                w, ev = rate(a.kairos, args_of(lib, op, a.calls, a.lps, 2000) + eargs)
                walls.setdefault((op, eng), []).append(w / ev * 1e9)
    print(f"\n| operation | ns a call: sequential | optimistic 1 | optimistic 2 |")
    print("|---|---|---|---|")
    for name, op in OPS:
        cells = []
        for eng, _ in ENGINES:
            ns = walls[(op, eng)]
            if op == 0:
                cells.append(f"{statistics.median(ns):.0f} an event "
                             f"({min(ns):.0f}-{max(ns):.0f})")
                continue
            b = statistics.median(walls[(0, eng)])
            per = [(x - b) / (a.calls if op != 2 else 1) for x in ns]
            cells.append(f"{statistics.median(per):+.1f} ({min(per):+.1f} to {max(per):+.1f})")
        print(f"| {name} | " + " | ".join(cells) + " |")
    trip = loadcheck.pingpong(os.path.join(build, "kr_pingpong"))
    print(f"\ncross-core round trip after: {trip}")
    print(f"{a.reps} interleaved runs each, {a.lps} LPs, --end 2000 (cachegrind: --end 200), "
          f"{a.calls} calls an event")


if __name__ == "__main__":
    main()
