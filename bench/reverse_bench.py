#!/usr/bin/env python3
"""Reverse computation against checkpoints (issue 38 item 2): tests/models/revstate.c, a
table of `kb` KiB per LP of which each event changes one slot (saving its old value in the
reverse area), run on the optimistic engine at 2 threads with --state full, page, buddy and
reverse, beside the sequential engine, at several table sizes. Each configuration is run
--reps times, interleaved (the VM's speed drifts within minutes); printed are the median
committed events/s by the engine's clock (--stats wall_seconds) with its range, the peak
memory, the rollbacks, and whether every run gave the sequential digest. The cross-core
round trip is measured before and after; --busy CPU runs a busy loop pinned to that core.
Prints Markdown for bench/RESULTS.md.

    python3 bench/reverse_bench.py [--build build] [--reps 3] [--kb 1,16,64] [--busy 1]"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile

import loadcheck

MODES = [("sequential", ["--sync", "sequential"]),
         ("2 threads, full", ["--threads", "2", "--state", "full"]),
         ("2 threads, page", ["--threads", "2", "--state", "page"]),
         ("2 threads, buddy", ["--threads", "2", "--state", "buddy"]),
         ("2 threads, reverse", ["--threads", "2", "--state", "reverse"])]


def one(kairos, model, kb, lps, end, extra):
    fd, path = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [kairos, "run", model, "--lps", str(lps), "--end", str(end), "-P", f"kb={kb}",
           "--progress", "off", "--stats", path, *extra]
    p = subprocess.run(cmd, capture_output=True, text=True)
    with open(path) as f:
        text = f.read()
    os.unlink(path)
    if p.returncode or not text:
        return None
    s = json.loads(text)
    return (s["committed_events"] / s["wall_seconds"], s.get("peak_rss_bytes", 0) / 2**20,
            s.get("rollbacks", 0) or 0, s["run_digest"])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(here), "build"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--kb", default="1,16,64")
    ap.add_argument("--lps", type=int, default=1024)
    ap.add_argument("--end", type=float, default=300)
    ap.add_argument("--busy", type=int, default=None, help="a busy loop on this core")
    a = ap.parse_args()
    kairos = os.path.join(a.build, "kairos")
    model = os.path.join(a.build, "librevstate.so")
    probe = os.path.join(a.build, "kr_pingpong")
    print(loadcheck.describe())
    print(f"cross-core round trip before: {loadcheck.pingpong(probe)}; "
          f"busy core: {a.busy if a.busy is not None else 'none'}\n")
    print("| table per LP | engine, --state | M events/s (range) | peak MiB | rollbacks "
          "| digest |")
    print("|---|---|---|---|---|---|")
    with loadcheck.busy_core(a.busy):
        for kb in map(int, a.kb.split(",")):
            res = {name: [] for name, _ in MODES}
            for _ in range(a.reps):
                for name, extra in MODES:
                    res[name].append(one(kairos, model, kb, a.lps, a.end, extra))
            ref = res["sequential"][0][3] if res["sequential"][0] else None
            for name, _ in MODES:
                ok = [r for r in res[name] if r]
                if not ok:
                    print(f"| {kb} KiB | {name} | failed | | | |")
                    continue
                rate = [r[0] / 1e6 for r in ok]
                same = all(r[3] == ref for r in ok) and len(ok) == len(res[name])
                print(f"| {kb} KiB | {name} | {statistics.median(rate):.3f} "
                      f"({min(rate):.3f}-{max(rate):.3f}) | {max(r[1] for r in ok):.0f} | "
                      f"{statistics.median([r[2] for r in ok]):.0f} | "
                      f"{'sequential' if same else '**differs**'} |")
    print(f"\ncross-core round trip after: {loadcheck.pingpong(probe)}")


if __name__ == "__main__":
    main()
