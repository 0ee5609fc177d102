#!/usr/bin/env python3
"""ROOT-Sim 3's own test models on Kairos's ROOT-Sim layer, beside ROOT-Sim itself (issue 38,
item 3): ROOT-Sim's core and its testing framework are taken from their public
repositories into a scratch directory (never copied into this one), ROOT-Sim is built there
with its tests, and the same sources are built unchanged against an installed Kairos
(pkg-config kairos-rootsim, from `cmake --install` of this build into the scratch
directory):

- correctness (test/integration/correctness: 256 LPs allocating, freeing and sending
  buffers; at the end every LP's checksum is compared with ROOT-Sim's expected output, and
  a wrong one aborts): serial.c (ROOT-Sim's serial runtime; Kairos's sequential engine) and
  parallel.c (2 threads; Kairos's optimistic engine, and with --state page and buddy);
- phold (test/integration/phold.c: 8192 LPs to time 1000) on every core.

Each is run --reps times, interleaved; prints Markdown: the median wall time of the whole
process with its range, the peak memory, and whether it passed (exit 0) - and, on Kairos,
whether every engine gave one digest.

    python3 bench/rootsim_models.py [--build build] [--reps 3] [--core URL|GIT_DIR]
        [--core-commit 58be4dac] [--framework URL|GIT_DIR] [--framework-commit 7e2608b]
        [--scratch /tmp/kairos-rootsim]

Needs gcc, cmake, git and pkg-config."""
import argparse
import os
import re
import statistics
import subprocess
import time
import loadcheck
from peers import fetch, sh

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
CORE_URL = "https://github.com/ROOT-Sim/core"
FRAMEWORK_URL = "https://github.com/ROOT-Sim/testing-framework"
CORRECT = ["test/integration/correctness/application.c",
           "test/integration/correctness/functions.c",
           "test/integration/correctness/output_256.c"]
# name, ROOT-Sim's test program, its sources, Kairos runs (label, extra options)
TESTS = [
    ("correctness serial", "test_correctness_serial",
     ["test/integration/correctness/serial.c", *CORRECT], [("sequential", [])]),
    ("correctness parallel (2 threads)", "test_correctness_parallel",
     ["test/integration/correctness/parallel.c", *CORRECT],
     [("optimistic", []), ("optimistic --state page", ["--state", "page"]),
      ("optimistic --state buddy", ["--state", "buddy"])]),
    ("phold (8192 LPs, every core)", "test_phold", ["test/integration/phold.c"],
     [("optimistic", []), ("sequential", ["--sync", "sequential"])]),
]


def build_rootsim(core, framework, scratch):
    b = os.path.join(scratch, "rootsim-build")
    sh("cmake", "-S", core, "-B", b, "-DCMAKE_BUILD_TYPE=Release",
       f"-DFETCHCONTENT_SOURCE_DIR_RSTEST={framework}")
    sh("cmake", "--build", b, "-j", str(os.cpu_count() or 2))
    return os.path.join(b, "test")


def build_kairos(name, core, framework, files, prefix, scratch):
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(prefix, "lib", "pkgconfig"))
    cflags = sh("pkg-config", "--cflags", "kairos-rootsim", env=env).split()
    libs = sh("pkg-config", "--libs", "kairos-rootsim", env=env).split()
    fw = os.path.join(framework, "src")
    srcs = [os.path.join(core, f) for f in files] + \
        [os.path.join(fw, f) for f in ("test.c", "rng.c", "thread.c")]
    out = os.path.join(scratch, re.sub(r"\W+", "_", name) + ".k")
    sh("gcc", "-O2", "-std=gnu11", "-w", *cflags, "-I" + fw, *srcs, "-o", out, *libs)
    return out


def run(cmd):
    """(wall seconds, peak MiB, exit status, run digest or None)."""
    t0 = time.monotonic()
    p = subprocess.run(["/usr/bin/time", "-f", "PEAK %M", *cmd], capture_output=True,
                       text=True, timeout=1800)
    wall = time.monotonic() - t0
    peak = re.findall(r"PEAK (\d+)", p.stderr)
    dig = re.search(r"run digest:\s+([0-9a-f]{16})", p.stderr)
    return wall, int(peak[-1]) / 1024 if peak else 0, p.returncode, dig and dig.group(1)


def med(xs):
    return f"{statistics.median(xs):.2f} ({min(xs):.2f}-{max(xs):.2f})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--build", default=os.path.join(SRC, "build"))
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--core", default=CORE_URL)
    ap.add_argument("--core-commit", default="58be4dac")
    ap.add_argument("--framework", default=FRAMEWORK_URL)
    ap.add_argument("--framework-commit", default="7e2608b")
    ap.add_argument("--scratch", default="/tmp/kairos-rootsim")
    a = ap.parse_args()
    os.makedirs(a.scratch, exist_ok=True)
    print(loadcheck.describe())
    core = fetch(a.core, a.core_commit, a.scratch, "core")
    fw = fetch(a.framework, a.framework_commit, a.scratch, "testing-framework")
    tests = build_rootsim(core, fw, a.scratch)
    prefix = os.path.join(a.scratch, "prefix")
    sh("cmake", "--install", a.build, "--prefix", prefix)
    rt = loadcheck.pingpong(os.path.join(a.build, "kr_pingpong"))
    print(f"ROOT-Sim {a.core_commit}, testing framework {a.framework_commit}; {a.reps} "
          f"interleaved runs; cross-core round trip {rt}")
    for name, prog, files, kruns in TESTS:
        kprog = build_kairos(name, core, fw, files, prefix, a.scratch)
        res = {}
        for _ in range(a.reps):  # (interleaved: the VM's speed drifts within minutes)
            res.setdefault("ROOT-Sim", []).append(run([os.path.join(tests, prog)]))
            for label, extra in kruns:
                res.setdefault("Kairos " + label, []).append(run([kprog, *extra]))
        print(f"\n### {name}\n")
        print("| runtime | wall seconds (median, range) | peak MiB | passed | digest |")
        print("|---|---|---|---|---|")
        digests = {r[3] for k, rs in res.items() if k != "ROOT-Sim" for r in rs}
        for k, rs in res.items():
            ok = all(r[2] == 0 for r in rs)
            dig = "-" if k == "ROOT-Sim" else ("one for all" if len(digests) == 1 else
                                               f"**{len(digests)} digests**")
            print(f"| {k} | {med([r[0] for r in rs])} | {max(r[1] for r in rs):.0f} | "
                  f"{'yes' if ok else '**no**'} | {dig} |")
    print(f"\ncross-core round trip after: "
          f"{loadcheck.pingpong(os.path.join(a.build, 'kr_pingpong'))}")


if __name__ == "__main__":
    main()
