#!/usr/bin/env python3
"""ROSS's models on Kairos's ROSS layer, beside ROSS itself (issue 38): ROSS and ROSS-Models
are taken from their public repositories into a scratch directory (never copied into this
one), ROSS is built there with its own PHOLD, and every listed model is built unchanged
against an installed Kairos (Kairos::ross, from `cmake --install` of this build into the
scratch directory) and run:

- on Kairos: sequential (--synch=1), optimistic on 1 and 2 threads and on 2 ranks of 1
  thread (--synch=3, mpirun: each process a PE, as on ROSS), the conservative engine on
  2 threads (--synch=2: g_tw_lookahead is the lookahead), and optimistic on 1 and 2 threads
  with --state reverse (the model's own reverse handlers undo rollbacks); every
  run must give the sequential digest (a model whose printed statistics come from globals
  updated in its handlers prints other numbers on 2 threads: said in the table);
- on ROSS: sequential (1 rank) and optimistic on 1 and 2 ranks (mpirun), with the
  committed event count compared. ROSS's own models/phold and tests/ross/phold.c (the
  layer's test model, plain ROSS) build against ROSS dc3a6a0 (--ross-commit);
  ROSS-Models' models (db8b997) are written against an older ROSS (g_tw_npe, g_tw_pe as an
  array), so they build against ROSS 6cb9316 (--ross-old-commit, April 2019, just before
  the clean-up that removed those names). Kairos's layer takes both spellings.

Prints Markdown: per model and engine the median committed events/s over --reps
interleaved runs with its range, end to end (committed events over the process's wall
time: set-up, which dominates models of a million LPs, included) and by the engine's own
clock (Kairos: --stats wall_seconds, init to end; ROSS: its "Event Rate", from the end of
its set-up), the peak memory, and whether the digest (Kairos) or the event count (ROSS
against Kairos) agrees.

    python3 bench/ross_models.py [--build build] [--reps 3] [--only phold,airport]
        [--ross URL|GIT_DIR] [--ross-commit dc3a6a0] [--ross-old-commit 6cb9316]
        [--models URL|GIT_DIR] [--models-commit db8b997] [--scratch /tmp/kairos-ross]

Left out by default (--only names them): traffic (a million intersections; minutes).
Needs gcc, cmake, git, pkg-config and Open MPI (mpicc, mpirun) for ROSS."""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import tempfile
import json
import time
import loadcheck
from peers import fetch, sh

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
ROSS_URL = "https://github.com/ROSS-org/ROSS"
MODELS_URL = "https://github.com/ROSS-org/ROSS-Models"

# name, where (ross: the ROSS tree; models: ROSS-Models; kairos: this tree), sources,
# options of a run of about a second, which ROSS builds it (new: --ross-commit, old:
# --ross-old-commit), in the default set
MODELS = [
    ("phold", "ross", ["models/phold/phold.main.c"], ["--nlp=1024", "--end=2000"], "new",
     True),
    ("phold-test", "kairos", ["tests/ross/phold.c"],
     ["--nlp=1024", "--end=1500", "--remote=0.5"], "new", True),
    ("airport", "models", ["airport/airport.c"], ["--end=50000"], "old", True),
    ("wifi", "models", ["wifi/wifi.c", "wifi/coding-error.c", "wifi/prop-loss.c"],
     ["--nlp=16", "--end=100000"], "old", True),
    ("srw", "models", ["srw/srw.c"], ["--end=1000000"], "old", True),
    ("qhold", "models", ["qhold/qhold_main.c", "qhold/qhold_driver.c"],
     ["--nlp_per_pe=16", "--end=4e12", "--population=16"], "old", True),
    ("phold-delta", "models", ["phold-delta/dphold.c"], ["--nlp=8", "--end=500"], "old",
     True),
    ("torus", "models", ["torus/torus.c"], ["--end=3000"], "old", True),
    ("pcs", "models", ["pcs/pcs.c"], ["--end=5"], "old", True),
    ("traffic", "models", ["traffic/Intersection.c"], ["--end=0.5"], "old", False),
]
KAIROS_ENGINES = [("sequential", ["--synch=1"]), ("optimistic 1 thread", ["--synch=3",
                  "--threads", "1"]), ("optimistic 2 threads", ["--synch=3", "--threads", "2"]),
                  ("conservative 2 threads", ["--synch=2", "--threads", "2"]),
                  ("optimistic 1 thread, reverse", ["--synch=3", "--threads", "1", "--state",
                   "reverse"]),
                  ("optimistic 2 threads, reverse", ["--synch=3", "--threads", "2", "--state",
                   "reverse"]),
                  ("optimistic 2 ranks", ["--synch=3", "--threads", "1"])]
ROSS_ENGINES = [("sequential", 1, ["--synch=1"]), ("optimistic 1 rank", 1, ["--synch=3"]),
                ("optimistic 2 ranks", 2, ["--synch=3"])]


def build_ross(src, scratch, name):
    b = os.path.join(scratch, name)
    env = dict(os.environ, CC="mpicc")
    sh("cmake", "-S", src, "-B", b, "-DCMAKE_BUILD_TYPE=Release", "-DROSS_BUILD_MODELS=ON",
       env=env)
    sh("cmake", "--build", b, "-j", str(os.cpu_count() or 2), env=env)
    return b


def build_model(name, files, kairos_prefix, ross, out):
    """Against the installed Kairos (ross None) or ROSS (ross = (src, build)): the program,
    or None with the compiler's first error."""
    if ross:
        inc = ["-I" + os.path.join(ross[0], "core"), "-I" + os.path.join(ross[1], "core")]
        cmd = ["mpicc", "-O2", "-w", *inc, *files, "-o", out,
               os.path.join(ross[1], "core", "libROSS.a"), "-lm"]
    else:
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(kairos_prefix, "lib", "pkgconfig"))
        cflags = sh("pkg-config", "--cflags", "kairos-ross", env=env).split()
        libs = sh("pkg-config", "--libs", "kairos-ross", env=env).split()
        cmd = ["gcc", "-O2", "-std=gnu11", "-w", *cflags, *files, "-o", out, *libs]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        err = [ln for ln in p.stderr.splitlines() if "error" in ln]
        return None, (err[0] if err else p.stderr.strip()[-200:])
    return out, None


# Where the programs run: ROSS writes ross.csv and ross_all_lp_stats/ into the working
# directory, and models their own files (phold.bin) - never into this repository (main).
RUN_DIR = None


def timed(cmd):
    """Run cmd in RUN_DIR; (CompletedProcess, wall seconds)."""
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=RUN_DIR)
    return p, time.monotonic() - t0


def run_kairos(prog, args, ranks=1):
    """(own events/s, peak MiB, digest, stdout, events, end-to-end events/s) of one run, or
    None with the error."""
    fd, stats = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [prog, *per_rank(args, ranks), "--stats", stats, "--progress", "off"]
    if ranks > 1:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), *cmd]
    p, wall = timed(cmd)
    text = open(stats).read()
    os.unlink(stats)
    if p.returncode or not text:
        return None, p.stderr.strip().splitlines()[-1:] or ["no --stats"]
    s = json.loads(text)
    n = s["committed_events"]
    return (n / max(s["wall_seconds"], 1e-9), s.get("peak_rss_bytes", 0) / 2**20,
            s["run_digest"], p.stdout, n, n / wall), None


# Models whose LP count is an option per ROSS process: divided by the ranks on ROSS, so
# that every run simulates the same LPs
PER_PE = ("--nlp=", "--nlp_per_pe=")
# ...and those whose LPs per process are fixed: on 2 ranks ROSS runs twice the LPs
FIXED_PER_PE = ("srw",)


def per_rank(args, ranks):
    out = []
    for x in args:
        for opt in PER_PE:
            if x.startswith(opt):
                x = f"{opt}{int(x[len(opt):]) // ranks}"
        out.append(x)
    return out


def run_ross(prog, ranks, args):
    """(own events/s, peak MiB of one rank, committed events, end-to-end events/s) of one
    ROSS run, or None."""
    cmd = ["/usr/bin/time", "-f", "PEAK %M", prog, *per_rank(args, ranks), "--extramem=200000"]
    if ranks > 1:
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), *cmd]
    p, wall = timed(cmd)
    out = p.stdout + p.stderr
    rate = re.search(r"Event Rate \(events/sec\)\s+([0-9.]+)", out)
    net = re.search(r"Net Events Processed\s+(\d+)", out)
    peak = [int(x) for x in re.findall(r"PEAK (\d+)", out)]
    if p.returncode or not rate or not net:
        return None, out.strip().splitlines()[-1:]
    n = int(net.group(1))
    return (float(rate.group(1)), max(peak) / 1024 if peak else 0, n, n / wall), None


def med(xs):
    if not xs:
        return "-"
    m = statistics.median(xs)
    return f"{m / 1e6:.3f} ({min(xs) / 1e6:.3f}-{max(xs) / 1e6:.3f})"


def bench_model(a, row, prefix, rosses, trees):
    name, where, files, args, which, _ = row
    root = {"ross": trees["ross"], "models": trees["models"], "kairos": SRC}[where]
    paths = [os.path.join(root, f) for f in files]
    kprog, kerr = build_model(name, paths, prefix, None, os.path.join(a.scratch, name + ".k"))
    ross = rosses.get(which)
    rprog, rerr = (build_model(name, paths, None, ross, os.path.join(a.scratch, name + ".r"))
                   if ross else (None, "ROSS not built"))
    res = {}
    for _ in range(a.reps):  # (interleaved: the VM's speed drifts within minutes)
        for eng, extra in KAIROS_ENGINES:
            if kprog:
                r, e = run_kairos(kprog, extra + args, 2 if "ranks" in eng else 1)
                res.setdefault(("kairos", eng), []).append(r or e)
        for eng, ranks, extra in ROSS_ENGINES:
            if rprog:
                r, e = run_ross(rprog, ranks, extra + args)
                res.setdefault(("ross", eng), []).append(r or e)
    return kerr, rerr, res


def report(name, kerr, rerr, res):
    print(f"\n### {name}\n")
    if kerr:
        print(f"Does not build on Kairos's ROSS layer: `{kerr}`\n")
    if rerr:
        print(f"On ROSS: not run (`{rerr}`)\n")
    print("| engine | committed events | M events/s end to end | M events/s, engine's clock "
          "| peak MiB | agrees |")
    print("|---|---|---|---|---|---|")
    seq = res.get(("kairos", "sequential"), [])
    ref = seq[0] if seq and isinstance(seq[0], tuple) else None
    for (side, eng), runs in res.items():
        ok = [r for r in runs if isinstance(r, tuple)]
        if not ok:
            print(f"| {side} {eng} | failed: {runs[0][0] if runs[0] else '?'} | | | | |")
            continue
        events = ok[0][4] if side == "kairos" else ok[0][2]
        if side == "kairos" and "ranks" in eng and name in FIXED_PER_PE:
            agree = "twice the LPs (a fixed count per process)"
        elif side == "kairos" and ref:
            same = all(r[2] == ref[2] for r in ok)
            out = all(r[3] == ref[3] for r in ok)
            agree = ("digest" if same else "**digest differs**") + \
                    ("" if out else ", **printed statistics differ** (globals)")
        elif "2 ranks" in eng and name in FIXED_PER_PE and side == "ross":
            agree = "twice the LPs (a fixed count per process)"
        else:
            agree = ("events = Kairos" if ref and events == ref[4] else
                     f"**events differ** (Kairos {ref[4] if ref else '?'})")
        print(f"| {side} {eng} | {events} | {med([r[-1] for r in ok])} | "
              f"{med([r[0] for r in ok])} | {max(r[1] for r in ok):.0f} | {agree} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--ross", default=ROSS_URL)
    ap.add_argument("--ross-commit", default="dc3a6a0")
    ap.add_argument("--ross-old-commit", default="6cb9316")
    ap.add_argument("--models", default=MODELS_URL)
    ap.add_argument("--models-commit", default="db8b997")
    ap.add_argument("--scratch", default="/tmp/kairos-ross")
    a = ap.parse_args()
    global RUN_DIR
    RUN_DIR = os.path.join(os.path.abspath(a.scratch), "runs")
    os.makedirs(RUN_DIR, exist_ok=True)
    print(loadcheck.describe())
    trees = {"ross": fetch(a.ross, a.ross_commit, a.scratch, "ross"),
             "ross-old": fetch(a.ross, a.ross_old_commit, a.scratch, "ross-old"),
             "models": fetch(a.models, a.models_commit, a.scratch, "ross-models")}
    rosses = {}
    if shutil.which("mpicc"):
        rosses = {"new": (trees["ross"], build_ross(trees["ross"], a.scratch, "ross-build")),
                  "old": (trees["ross-old"], build_ross(trees["ross-old"], a.scratch,
                                                        "ross-old-build"))}
    prefix = os.path.join(a.scratch, "prefix")
    sh("cmake", "--install", a.build, "--prefix", prefix)
    rt = loadcheck.pingpong(os.path.join(a.build, "kr_pingpong"))
    print(f"ROSS {a.ross_commit} (and {a.ross_old_commit} for ROSS-Models {a.models_commit}); "
          f"{a.reps} interleaved runs; cross-core round trip {rt}")
    only = set(filter(None, a.only.split(",")))
    for row in MODELS:
        if (only and row[0] not in only) or (not only and not row[5]):
            continue
        report(row[0], *bench_model(a, row, prefix, rosses, trees))
    after = loadcheck.pingpong(os.path.join(a.build, "kr_pingpong"))
    print(f"\ncross-core round trip after: {after}")


if __name__ == "__main__":
    main()
