#!/usr/bin/env python3
"""Fault injection (issue 17; as SQLite's tests fail the N-th allocation): the N-th
allocation or write of a run fails (tests/fault/krfault.c, preloaded), for every N a small
sequential run reaches (sampled where there are many) while it prints committed output and
writes statistics and snapshots. Each must end one of two ways: exit 0 with the digest and
byte-identical stdout of the run without faults (the failure absorbed: a snapshot skipped
with a warning), or exit 1 with a clear last line ("kairos: error: ...", never an internal
error), stdout a prefix of the full output, the --stats file whole JSON or absent, no
temporary file left, and a snapshot, if one was written, that resumes to the full run's
digest and output. Never a crash, a hang or silence. Runs on 2 threads, whose failing site
varies from run to run, must end the same ways. Under ASan (the shim stands in front of its
allocator) nothing may leak. The quick tier samples 30 sites of each kind and 6 runs on
each parallel engine; the long tier (--long) 400 (ASan 160) and 40 (ASan 12)."""
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from common import fail, digest, Tally, build_kind, in_own_dir, pick

kairos, build = sys.argv[1], sys.argv[2]
t = Tally()
SHIM = os.path.join(build, "tests", "libkrfault.so")
KIND = build_kind(kairos)
if KIND == "tsan" or not os.path.exists(SHIM):
    print("skipped: no fault shim here (a ThreadSanitizer build cannot run behind one)")
    sys.exit(77)
tmp = tempfile.mkdtemp(prefix="kr-fault-")
rnd = random.Random(17)
MODEL = ["pcs", "--lps", "16", "--end", "10"]
SAMPLE = pick(30, 160 if KIND == "asan" else 400)  # (at most this many N of each kind)


def env_for(fault):
    e = dict(os.environ, LD_PRELOAD=SHIM, KR_FAULT=fault)
    # (ASan wants its runtime first among the libraries; the shim forwards to it)
    e["ASAN_OPTIONS"] = (e.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0").lstrip(":")
    return e


def run_with(fault, engine, where, model=MODEL):
    """One run writing stdout, --stats and snapshots into `where`; (status, out, err)."""
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(where)
    args = [kairos, "run", *model, *engine, "--progress", "off",
            "--stats", os.path.join(where, "st.json"),
            "--snapshot", os.path.join(where, "snap"), "--snapshot-every", "2"]
    with open(os.path.join(where, "out"), "wb") as out:
        try:
            p = subprocess.run(args, stdout=out, stderr=subprocess.PIPE, text=True,
                               env=env_for(fault), timeout=120)
        except subprocess.TimeoutExpired:
            fail(f"KR_FAULT={fault} {' '.join(engine)}: no end within 120 s")
    return p.returncode, open(os.path.join(where, "out"), "rb").read(), p.stderr


def counts(engine, model=MODEL):
    st, out, err = run_with("count", engine, os.path.join(tmp, "count"), model)
    m = re.search(r"krfault: (\d+) allocations, (\d+) writes", err)
    if st != 0 or not m:
        fail(f"counting run {' '.join(engine)}: exit {st}\n{err[-1500:]}")
    return int(m.group(1)), int(m.group(2)), out, digest(err)


def sample(n):
    if n <= SAMPLE:
        return list(range(1, n + 1))
    first = set(range(1, SAMPLE // 2 + 1))
    spread = {1 + round(i * (n - 1) / (SAMPLE // 2 - 1)) for i in range(SAMPLE // 2)}
    return sorted(first | spread)


def last_line(err):
    lines = [x for x in err.splitlines() if x.startswith("kairos: ")]
    return lines[-1] if lines else ""


def check_files(fault, where):
    st = os.path.join(where, "st.json")
    if os.path.exists(st):
        try:
            json.load(open(st))
        except ValueError:
            fail(f"KR_FAULT={fault}: --stats left a broken file")
    for f in (st + ".tmp", os.path.join(where, "snap", "snapshot.tmp")):
        if os.path.exists(f):
            fail(f"KR_FAULT={fault}: {os.path.basename(f)} left behind")


def check_resume(fault, where, ref_out, ref_digest):
    """The snapshot a failed run left (if any) resumes to the full run."""
    snap = os.path.join(where, "snap")
    if not os.path.exists(os.path.join(snap, "snapshot")):
        return False
    with open(os.path.join(where, "out"), "ab") as out:
        p = subprocess.run([kairos, "resume", snap, "--progress", "off"], stdout=out,
                           stderr=subprocess.PIPE, text=True)
    got = open(os.path.join(where, "out"), "rb").read()
    if p.returncode or digest(p.stderr) != ref_digest or got != ref_out:
        fail(f"KR_FAULT={fault}: the snapshot it left resumed to exit {p.returncode}, digest "
             f"{digest(p.stderr)} vs {ref_digest}, stdout equal: {got == ref_out}")
    return True


def verdict(what, fault, where, run, ref_out, ref_digest):
    """How one faulty run (status, stdout, stderr) ended: 'absorbed' (the full digest and
    output), 'error' (exit 1, a clear last line, stdout a prefix of the full one) or
    'sanitizer' (the allocation that failed was the sanitizer runtime's own, which stops on
    a CHECK: pthread_getattr_np as a thread starts); anything else fails the test."""
    st, out, err = run
    if re.search(r"ERROR: (Address|Leak)Sanitizer|runtime error:", err):
        fail(f"{what}: the sanitizer reported:\n{err[-3000:]}")
    if "AddressSanitizer: CHECK failed" in err:
        return "sanitizer"
    if st < 0:
        fail(f"{what}: killed by signal {-st}\n{err[-1500:]}")
    check_files(fault, where)
    if st == 0:
        if digest(err) != ref_digest or out != ref_out:
            fail(f"{what}: exit 0 but digest {digest(err)} vs {ref_digest}, stdout equal: "
                 f"{out == ref_out}\n{err[-1500:]}")
        return "absorbed"
    line = last_line(err)
    if st != 1 or not line.startswith("kairos: error: ") or "internal error" in line:
        fail(f"{what}: exit {st}, last words {line!r}\n{err[-1500:]}")
    if not ref_out.startswith(out):
        fail(f"{what}: the output written before the error is not a prefix of the full one")
    return "error"


def judge(fault, engine, ref_out, ref_digest, resume):
    """One faulty run: verdict()'s, or 'resumed' (an error whose snapshot resumed)."""
    where = os.path.join(tmp, "run")
    run = run_with(fault, engine, where)
    v = verdict(f"KR_FAULT={fault} {' '.join(engine)}", fault, where, run, ref_out, ref_digest)
    if v == "error" and resume and check_resume(fault, where, ref_out, ref_digest):
        return "resumed"
    return v


def sequential(kind):
    """The N-th allocation (kind alloc) or write (write) of a sequential run failing, for
    sampled N."""
    allocs, writes, ref_out, ref_digest = counts(["--sync", "sequential"])
    n = allocs if kind == "alloc" else writes
    seen = {"absorbed": 0, "error": 0, "resumed": 0, "sanitizer": 0}
    for i, k in enumerate(sample(n)):
        seen[judge(f"{kind}:{k}", ["--sync", "sequential"], ref_out, ref_digest,
                   resume=kind == "write" or i % 8 == 0)] += 1
    t.ok(f"the N-th {kind} failing, {sum(seen.values())} of {n} sites: {seen['absorbed']} "
         f"absorbed (the full digest and output), {seen['error'] + seen['resumed']} clear "
         f"errors ({seen['resumed']} left a snapshot that resumed to the full run)"
         + in_runtime(seen))


def random_allocations(engine, what):
    """Runs of a parallel engine (whose failing site varies from run to run) with a random
    allocation failing: absorbed or a clear error."""
    allocs, _, ref_out, ref_digest = counts(engine)
    runs = pick(6, 12 if KIND == "asan" else 40)
    for _ in range(runs):
        judge(f"alloc:{rnd.randint(1, allocs)}", engine, ref_out, ref_digest, resume=False)
    t.ok(f"{runs} runs {what} with a random allocation failing: absorbed or a clear error")


def in_runtime(seen):
    """The tally's note on failures that hit the sanitizer's own allocations."""
    return f", {seen['sanitizer']} in the sanitizer's own runtime" if seen["sanitizer"] else ""


def resume_with(fault, snap, base, where):
    """kairos resume of snap into a copy of the output file base; (status, out, err)."""
    shutil.rmtree(where, ignore_errors=True)
    os.makedirs(where)
    path = os.path.join(where, "out")
    shutil.copyfile(base, path)
    with open(path, "ab") as out:
        try:
            p = subprocess.run([kairos, "resume", snap, "--progress", "off", "--stats",
                                os.path.join(where, "st.json")], stdout=out,
                               stderr=subprocess.PIPE, text=True, env=env_for(fault),
                               timeout=120)
        except subprocess.TimeoutExpired:
            fail(f"KR_FAULT={fault} resume: no end within 120 s")
    return p.returncode, open(path, "rb").read(), p.stderr


def judge_resume(fault, snap, base, ref_out, ref_digest):
    """A resume with a fault: verdict()'s - and after an error, a resume without a fault
    still completes the output file it left."""
    where = os.path.join(tmp, "resume")
    what = f"KR_FAULT={fault} resume"
    v = verdict(what, fault, where, resume_with(fault, snap, base, where), ref_out, ref_digest)
    if v != "error":
        return v
    path = os.path.join(where, "out")
    with open(path, "ab") as f:
        p = subprocess.run([kairos, "resume", snap, "--progress", "off"], stdout=f,
                           stderr=subprocess.PIPE, text=True)
    if p.returncode or digest(p.stderr) != ref_digest or open(path, "rb").read() != ref_out:
        fail(f"{what}: resumed again without a fault: exit {p.returncode}, digest "
             f"{digest(p.stderr)} vs {ref_digest}")
    return "error"


def case_resume():
    """kairos resume itself with its N-th allocation or write failing (its reading of the
    snapshot, the LPs it loads, the output it appends, --stats). (The hazard model's plain
    printing run: PCS's states hold numbers that equal sanitizer mappings' addresses, and
    its snapshots are skipped under ASan.)"""
    engine = ["--sync", "sequential"]
    model = [os.path.join(build, "libhazard.so"), "--lps", "16", "--end", "10"]
    allocs, writes, ref_out, ref_digest = counts(engine, model)
    where = os.path.join(tmp, "count")  # (its last snapshot and output, kept)
    snap, base = os.path.join(tmp, "snap"), os.path.join(tmp, "base")
    shutil.rmtree(snap, ignore_errors=True)
    shutil.copytree(os.path.join(where, "snap"), snap)
    full = open(os.path.join(where, "out"), "rb").read()
    p = subprocess.run([kairos, "resume", snap, "--progress", "off"], capture_output=True,
                       text=True)
    at = int(re.search(r"after (\d+) committed events", p.stderr).group(1)) if p.returncode \
        == 0 else -1
    open(base, "wb").write(full)  # (the file is cut to the snapshot's output, then appended)
    st, _, err = resume_with("count", snap, base, os.path.join(tmp, "rcount"))
    m = re.search(r"krfault: (\d+) allocations, (\d+) writes", err)
    if st != 0 or not m or at < 0:
        fail(f"counting resume: exit {st}\n{err[-1500:]}")
    for kind, n in (("alloc", int(m.group(1))), ("write", int(m.group(2)))):
        seen = {"absorbed": 0, "error": 0, "sanitizer": 0}
        for k in sample(n)[::2]:
            seen[judge_resume(f"{kind}:{k}", snap, base, ref_out, ref_digest)] += 1
        t.ok(f"resume with its N-th {kind} failing, {sum(seen.values())} of {n} sites: "
             f"{seen['absorbed']} absorbed, {seen['error']} clear errors leaving the output a "
             f"prefix that a second resume completed" + in_runtime(seen))


def allocations_failing():
    sequential("alloc")


def writes_failing():
    sequential("write")


def on_two_threads():
    random_allocations(["--threads", "2"], "on 2 threads")


def conservative_on_two_threads():
    random_allocations(["--sync", "conservative", "--threads", "2", "-P", "spans=1"],
                       "of the conservative engine on 2 threads")  # (spans: durations)


# (each case forked, two at a time, in a directory of its own: short runs, mostly launches)
try:
    t.cases([in_own_dir(f, globals()) for f in (allocations_failing, writes_failing,
                                                on_two_threads, case_resume,
                                                conservative_on_two_threads)])
finally:
    shutil.rmtree(tmp, ignore_errors=True)
t.finish()
