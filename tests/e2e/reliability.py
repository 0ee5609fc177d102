"""Reliability cases (docs/reliability.md, issue 12): the digest names pointers by what they
point at, numbers out of range are errors, output paths are checked before the run, a signal
or a dying run keeps what was committed, write errors are reported. Each case failed before
its fix."""
import os
import signal
import subprocess
import sys
import tempfile
import time
from common import run, fail, digest, Tally

kairos, build = sys.argv[1], sys.argv[2]
hazard = os.path.join(build, "libhazard.so")
t = Tally()
ENGINES = [["--sync", "sequential"], ["--threads", "1"], ["--threads", "2"],
           ["--sync", "conservative", "--threads", "1"]]


def expect_fail(rc_want, needles, *args):
    rc, out, err = run(kairos, *args, check=False)
    if rc != rc_want:
        fail(f"{args}: exit {rc}, wanted {rc_want}\n{err}")
    for n in needles:
        if n not in err:
            fail(f"{args}: message lacks '{n}':\n{err}")
    t.ok(f"{' '.join(map(str, args))} -> exit {rc}")
    return out, err


def hazard_args(case, *extra):
    return ["run", hazard, "--lps", "16", "--end", "20", "-P", f"case={case}", *extra]


def case_pointer_digest():
    """1: pointers to literals, const tables, functions and one past an array hash by what
    they name: the same digest in every run (ASLR moves them) and on every engine."""
    seen = set()
    for eng in ENGINES + [["--threads", "2", "--state", "page"], ["--threads", "2", "--state", "buddy"]]:
        for _ in range(2):
            _, _, err = run(kairos, *hazard_args(1, "--progress", "off"), *eng)
            seen.add(digest(err))
    if len(seen) != 1:
        fail(f"pointer idioms: digests differ between runs or engines: {seen}")
    t.ok("state pointers to literals/tables/functions/one-past-end: one digest in 12 runs (4 engines, page, buddy)")
    # a pointer into the C library heap cannot be named: --check says so
    expect_fail(1, ["LP 0", "outside its kr_malloc memory", "[heap]"],
                *hazard_args(2, "--sync", "sequential", "--check"))


def case_numbers():
    """2, 3: numbers are read in base 10 and never wrap."""
    _, out, err = run(kairos, "run", "phold", "--sync", "sequential", "--end", "5", "-P",
                      "population=010", "--stats", "/dev/null")
    rc, _, err08 = run(kairos, "run", "phold", "--sync", "sequential", "--end", "5", "-P",
                       "population=08", check=False)
    if rc != 0:
        fail(f"-P population=08 refused:\n{err08}")
    _, _, err10 = run(kairos, "run", "phold", "--sync", "sequential", "--end", "5", "-P",
                      "population=10")
    if digest(err) != digest(err10):
        fail("-P population=010 is not 10")
    t.ok("-P integers are decimal (010 = 10, 08 accepted)")
    expect_fail(2, ["--threads", "4294967297"], "run", "phold", "--threads", "4294967297")
    expect_fail(2, ["--ckpt-interval must be from 1 to 1000000"], "run", "phold", "--ckpt-interval", "4294967296")
    for v in ("0.5", "inf", "1e30", "nan"):
        expect_fail(2, ["--arena-max", v], "run", "phold", "--arena-max", v)
    expect_fail(2, ["--threads", "whole"], "calibrate", "--threads", "1.5")
    expect_fail(2, ["--reps", "whole"], "calibrate", "--reps", "2.5")
    expect_fail(2, ["--stack-kb"], "run", "phold", "--stack-kb", "18446744073709551615")


def case_output_paths():
    """8: a --stats path that cannot be written fails before the run, not after it."""
    out, err = expect_fail(2, ["--stats", "/nonexistent-dir/x.json"],
                           "run", "phold", "--end", "1e9", "--stats", "/nonexistent-dir/x.json")
    if "run digest" in err:
        fail("--stats path checked only after the run")


def case_messages():
    """Errors that pointed the wrong way."""
    p = subprocess.run([kairos], capture_output=True, text=True)
    if p.returncode != 2 or p.stdout or "Usage" not in p.stderr:
        fail(f"kairos without a command: exit {p.returncode}, usage on stdout: {p.stdout[:60]!r}")
    t.ok("kairos without a command: usage on stderr, exit 2")
    p = subprocess.run([os.path.abspath(kairos), "run", "libhazard.so", "--end", "2", "--lps", "4"],
                       capture_output=True, text=True, cwd=build)
    if p.returncode != 0:
        fail(f"kairos run x.so for a file in the current directory:\n{p.stderr}")
    t.ok("kairos run x.so loads the file in the current directory")


for case in (case_pointer_digest, case_numbers, case_output_paths, case_messages):
    case()
t.finish()
