#!/usr/bin/env python3
"""Kairos's conservative engine beside PARSIR (issue 39): PHOLD with 1024 LPs, increments of
`--lookahead` (0.1) plus exponential(1), random destinations, one event per LP and
`--busy-us` of work per event, on Kairos (sequential; conservative horizon and windows;
optimistic) and on PARSIR, Quaglia's engine of lookahead windows, built from its public
repository in a scratch directory (never copied into this one). Runs are interleaved
(kairos seq, horizon, windows, optimistic, PARSIR, seq, ...) since this VM's speed drifts;
prints Markdown: the
median committed events/s of each with its range, and the cross-core round trip.

    python3 bench/parsir_bench.py [--kairos build/kairos] [--reps 3] [--threads 2]
        [--busy-us 5] [--end 150] [--lookahead 0.1] [--repo URL|GIT_DIR] [--commit 2fd77bd]
        [--scratch /tmp/kairos-parsir]

PARSIR is configured by its headers (include/run.h: threads, objects, lookahead) and runs
a model linked in: this script writes PHOLD for it, as above, against PARSIR's documented
API (ProcessEvent, ScheduleNewEvent, Random, Expent) - its own PHOLD is another benchmark
(a thousand events per object, state lists reallocated per event). PARSIR's main() never
returns (it ends in pause()): the run ends when every worker has printed that it has no
more events; the model then prints its event count on SIGTERM. Two rates for PARSIR: end
to end (from the start of the process, its static queues' set-up included) and from its
first worker's start. Needs gcc, make and libnuma-dev (PARSIR links -lnuma)."""
import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
import loadcheck

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.join(HERE, "..", "build")
URL = "https://github.com/FrancescoQuaglia/PARSIR"

# PHOLD for PARSIR (written here; compiled in the scratch copy as its models/phold).
MODEL = r"""
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "application.h"

static struct { uint32_t s1, s2; } rng[OBJECTS];
static _Atomic unsigned long events;

static void busy(double us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) * 1e-3 < us);
}

static void report(int sig)
{
    char line[64];
    int n = snprintf(line, sizeof line, "kairos-phold events %lu\n", (unsigned long)events);
    (void)sig;
    (void)!write(1, line, (size_t)n);
    _exit(0);
}

__attribute__((constructor)) static void on_term(void)
{
    signal(SIGTERM, report);
}

static void next(unsigned int me, double now)
{
    double ts = now + LOOKAHEAD + Expent(1.0, &rng[me].s1, &rng[me].s2);
    int dest = (int)((double)OBJECTS * Random(&rng[me].s1, &rng[me].s2));
    if (dest >= OBJECTS) dest = OBJECTS - 1;
    if (ts < END_TIME) ScheduleNewEvent(dest, ts, NORMAL, NULL, 0);
}

void ProcessEvent(unsigned int me, double now, int type, void *content, unsigned int size,
                  void *ptr)
{
    (void)content;
    (void)size;
    (void)ptr;
    if (type == INIT) {
        rng[me].s1 = me + 1;
        rng[me].s2 = (me + 1) * 2654435761u;
        next(me, now);
        return;
    }
    if (BUSY_US > 0) busy(BUSY_US);
    atomic_fetch_add_explicit(&events, 1, memory_order_relaxed);
    next(me, now);
}
"""

HEADER = """#include <stdint.h>
#include <stdlib.h>
#include "setup.h"
#define NORMAL 1
#define END_TIME ({end})
#define BUSY_US ({busy})
"""


def fetch(a):
    """The PARSIR tree at a.commit in a.scratch/src."""
    src = os.path.join(a.scratch, "src")
    shutil.rmtree(src, ignore_errors=True)
    os.makedirs(src)
    git_dir = a.repo if os.path.isdir(a.repo) else os.path.join(a.scratch, "repo.git")
    if not os.path.isdir(a.repo) and not os.path.isdir(git_dir):
        subprocess.run(["git", "clone", "--bare", "--quiet", a.repo, git_dir], check=True)
    arch = subprocess.run(["git", "--git-dir", git_dir, "archive", a.commit],
                          capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", src], input=arch, check=True)
    return src


def build_parsir(a, threads):
    src = fetch(a)
    with open(os.path.join(src, "include", "run.h"), "w") as f:
        f.write(f"#define THREADS ({threads})\n#define OBJECTS (1024)\n"
                f"#define LOOKAHEAD ({a.lookahead!r})\n")
    model = os.path.join(src, "models", "phold")
    with open(os.path.join(model, "application.h"), "w") as f:
        f.write(HEADER.format(end=a.end, busy=a.busy_us))
    with open(os.path.join(model, "application.c"), "w") as f:
        f.write(MODEL)
    for stale in ("lib", "bin"):  # (the repository carries built objects: build afresh)
        for name in os.listdir(os.path.join(src, stale)):
            os.remove(os.path.join(src, stale, name))
    for o in ("intermediate-phold.o", "phold.o"):
        if os.path.exists(os.path.join(model, o)):
            os.remove(os.path.join(model, o))
    p = subprocess.run(["make", "phold"], cwd=os.path.join(src, "build"), capture_output=True,
                       text=True)
    exe = os.path.join(src, "bin", "PARSIR-simulator")
    if p.returncode or not os.path.exists(exe):
        sys.exit(f"building PARSIR failed:\n{p.stdout}\n{p.stderr}")
    # (its build removes the hardware file on one NUMA node, asking numactl; without numactl
    # the file stays, and PARSIR then gives node 0 no objects and runs no event: remove it
    # as its script would)
    hw = os.path.join(src, "setup-data", "hw.txt")
    if os.path.exists(hw) and "NUMA node(s): 1" in " ".join(open(hw).read().split()):
        os.remove(hw)
    return exe


def run_parsir(exe, threads):
    """(events/s end to end, events/s from the first worker's start)."""
    t0 = time.monotonic()
    # (stdbuf: its lines as they are printed - into a pipe, stdio would hold them, and the
    # process never exits to flush them)
    p = subprocess.Popen(["stdbuf", "-oL", exe], stdout=subprocess.PIPE, text=True,
                         cwd=os.path.dirname(exe))
    first, done = None, 0
    for line in p.stdout:
        if "worker thread" in line and "started" in line and first is None:
            first = time.monotonic()
        if "no more events to process" in line:
            done += 1
            if done == threads:
                break
    t1 = time.monotonic()
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=60)
    n = [int(w.split()[-1]) for w in out.splitlines() if w.startswith("kairos-phold events")]
    if not n:
        sys.exit(f"PARSIR's run printed no event count:\n{out}")
    return n[0] / (t1 - t0), n[0] / (t1 - (first or t0))


def run_kairos(kairos, args):
    p = subprocess.run([kairos, "run", "phold", "--lps", "1024", *args, "--progress", "off"],
                       capture_output=True, text=True)
    if p.returncode:
        sys.exit(f"kairos {' '.join(args)} failed:\n{p.stderr}")
    for line in p.stderr.splitlines():
        if "committed events" in line:
            return float(line.split("(")[1].split()[0]) * 1e6
    sys.exit(f"no committed count from kairos {' '.join(args)}")


def cell(xs, base=None):
    m = statistics.median(xs)
    s = f"{m / 1e6:.3f} ({min(xs) / 1e6:.3f}-{max(xs) / 1e6:.3f})"
    return s + (f" **{m / base:.2f}x**" if base else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kairos", default=os.path.join(BUILD, "kairos"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--busy-us", type=float, default=5)
    ap.add_argument("--end", type=float, default=150)
    ap.add_argument("--lookahead", type=float, default=0.1)
    ap.add_argument("--repo", default=URL)
    ap.add_argument("--commit", default="2fd77bd")
    ap.add_argument("--scratch", default="/tmp/kairos-parsir")
    a = ap.parse_args()
    exe = build_parsir(a, a.threads)
    th = str(a.threads)
    common = ["-P", f"busy_us={a.busy_us:g}", "-P", f"lookahead={a.lookahead!r}", "--end",
              f"{a.end:g}"]
    kinds = {
        "sequential": common + ["--sync", "sequential"],
        f"horizon {th} workers": common + ["--sync", "conservative", "--conservative", "horizon",
                                           "--threads", th],
        f"windows {th} threads": common + ["--sync", "conservative", "--conservative", "windows",
                                           "--threads", th],
        f"optimistic {th} threads": common + ["--threads", th],
    }
    tool = os.path.join(BUILD, "kr_pingpong")
    print(loadcheck.describe())
    print(f"cross-core round trip before: {loadcheck.pingpong(tool)}\n")
    rates = {k: [] for k in kinds}
    parsir, parsir_own = [], []
    for _ in range(a.reps):
        for k, args in kinds.items():
            rates[k].append(run_kairos(a.kairos, args))
        e2e, own = run_parsir(exe, a.threads)
        parsir.append(e2e)
        parsir_own.append(own)
    base = statistics.median(rates["sequential"])
    print(f"PHOLD, 1024 LPs, lookahead {a.lookahead:g}, {a.busy_us:g} us an event, end "
          f"{a.end:g}; M "
          f"committed events/s, medians of {a.reps} interleaved runs (ranges), against "
          "Kairos sequential\n")
    print("| engine | M events/s |\n|---|---|")
    for k in kinds:
        print(f"| Kairos {k} | {cell(rates[k], None if k == 'sequential' else base)} |")
    print(f"| PARSIR {th} threads, end to end | {cell(parsir, base)} |")
    print(f"| PARSIR {th} threads, from its first worker's start | {cell(parsir_own, base)} |")
    print(f"\ncross-core round trip after: {loadcheck.pingpong(tool)}")


if __name__ == "__main__":
    main()
