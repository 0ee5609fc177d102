#!/usr/bin/env python3
"""Commit hooks (struct kr_model.commit, kr_commit; issue 18 part 2). The ledger test model
(tests/models/ledger.c) hands every event's job to kr_commit, some events twice with text
printed between, and its hook prints a running hash of every record it has seen, in the
order it saw them: so stdout shows the commit order record by record. Here: every engine,
thread count and mode prints the sequential stdout and digest; an error in the hook ends
every engine at the same record with the same message and the same output before it (in
the middle of the run and in its last commit); each misuse is a model error naming the
call; a snapshot keeps the ledger, and its resume on another engine prints the rest alike;
Life with -P hook=1 (populations summed by the hook) prints what Life prints with reports
sent to LP 0. (Across MPI ranks: cluster.py.)"""
import os
import shutil
import subprocess
import sys
from common import run, fail, digest, Tally, build_kind

kairos, build = sys.argv[1], sys.argv[2]
t = Tally()
kind = build_kind(kairos)
LEDGER = os.path.join(build, "libledger.so")
SEQ = ["--sync", "sequential"]

CASES = [  # LPs, end, extra: ties on a coarse grain, continuous times, a record printed each
    (1, "20", []), (16, "30", []), (64, "15", ["-P", "grain=0"]),
    (16, "25", ["-P", "every=1", "-P", "jobs=6"]),
]
LAYOUTS = [SEQ + ["--check"], ["--threads", "1"], ["--threads", "2"], ["--threads", "3"],
           ["--threads", "4", "--state", "page"], ["--threads", "2", "--cancel", "lazy"],
           ["--threads", "2", "--check"], ["--threads", "2", "--ckpt-interval", "3"],
           ["--threads", "2", "--memory-max", "3000000"],
           ["--sync", "conservative", "--threads", "2"]]
if kind != "tsan":  # (time-sharing is not available under ThreadSanitizer)
    LAYOUTS.append(["--threads", "2", "--preempt", "tick"])


def same_everywhere():
    for lps, end, extra in CASES:
        base = ["run", LEDGER, "--lps", str(lps), "--end", end, *extra]
        _, ref, err = run(kairos, *base, *SEQ)
        if ref.count("ledger ") < 3:
            fail(f"ledger {lps} LPs: the hook printed too little to test\n{ref}")
        for lay in LAYOUTS:
            if lps < 3 and "--threads" in lay:  # (more threads than LPs is refused)
                continue
            _, out, e = run(kairos, *base, *lay)
            if digest(e) != digest(err) or out != ref:
                fail(f"ledger {lps} LPs {' '.join(lay)}: digest {digest(e)} (want "
                     f"{digest(err)}), stdout {'same' if out == ref else 'differs'}")
    t.ok(f"ledger: the sequential stdout (the hook's running hash of every record) and digest "
         f"on {len(LAYOUTS)} layouts of 3 engines, {len(CASES)} models")


def hook_errors():
    base = ["run", LEDGER, "--lps", "16", "--end", "30"]
    for at in ("12.3", "29.7"):  # (mid-run, and in the run's last commit)
        rc, ref, err = run(kairos, *base, "-P", f"fail_at={at}", *SEQ, check=False)
        msg = [ln for ln in err.splitlines() if ln.startswith("kairos: error:")]
        if rc != 1 or len(msg) != 1 or "in its commit hook" not in msg[0]:
            fail(f"an error in the hook at {at}, sequential: want exit 1 and one message "
                 f"naming the hook\n{err}")
        for lay in LAYOUTS[1:]:
            rc, out, e = run(kairos, *base, "-P", f"fail_at={at}", *lay, check=False)
            got = [ln for ln in e.splitlines() if ln.startswith("kairos: error:")]
            if rc != 1 or got != msg or out != ref:
                fail(f"an error in the hook at {at}, {' '.join(lay)}: exit {rc}, stdout "
                     f"{'same' if out == ref else 'differs'}\n{e}")
    t.ok("an error in the commit hook (mid-run and in the last commit): exit 1, the same "
         "message and the same output before it on every engine and layout")
    # With snapshots due often, the printing that fails is often a snapshot's: that
    # snapshot is not written (its ledger would be half-way); the last one, resumed, meets
    # the error again, and the output file ends as the failed run's stdout.
    base = ["run", LEDGER, "--lps", "16", "--end", "200", "-P", "fail_at=150.1"]
    rc, ref, err = run(kairos, *base, *SEQ, check=False)
    msg = [ln for ln in err.splitlines() if ln.startswith("kairos: error:")]
    snap = os.path.join(build, "commit-hook-err.snap")
    for lay in (["--threads", "2", "--gvt-period", "0.05"], SEQ):
        shutil.rmtree(snap, ignore_errors=True)
        rc, out, e = run(kairos, *base, *lay, "--snapshot", snap, "--snapshot-every", "0.5",
                         check=False)
        got = [ln for ln in e.splitlines() if ln.startswith("kairos: error:")]
        if rc != 1 or got != msg or out != ref or "warning" in e:
            fail(f"an error in the hook, snapshots every 0.5, {' '.join(lay)}: exit {rc}, "
                 f"stdout {'same' if out == ref else 'differs'}\n{e}")
        if not os.path.exists(os.path.join(snap, "snapshot")):
            fail(f"an error in the hook at 150, snapshots every 0.5: none written\n{e}")
        out_path = snap + ".out"
        with open(out_path, "w") as f:
            f.write(out)
        q = subprocess.run(f'exec "{kairos}" resume {snap} --progress off >> {out_path}',
                           shell=True, capture_output=True, text=True, timeout=300)
        got = [ln for ln in q.stderr.splitlines() if ln.startswith("kairos: error:")]
        if q.returncode != 1 or got != msg or open(out_path).read() != ref:
            fail(f"the last snapshot before an error in the hook, resumed: exit "
                 f"{q.returncode}\n{q.stderr}")
    t.ok("an error in the hook with a snapshot due at every GVT round: the same error and "
         "output, no snapshot of a half-updated ledger; the last one, resumed, meets it again")


def commit_end():
    """ledger_bytes sizes the ledger at run time (a count per LP: it follows --lps), and
    commit_end reduces it once after the last commit, before finish's lines, on every
    engine; a kr_error there is the run's model error."""
    for lps in (8, 64):
        base = ["run", LEDGER, "--lps", str(lps), "--end", "20"]
        _, ref, err = run(kairos, *base, *SEQ)
        lines = ref.splitlines()
        ends = [i for i, ln in enumerate(lines) if ln.startswith("commit_end:")]
        first_finish = next(i for i, ln in enumerate(lines) if ln.startswith("lp 0:"))
        if len(ends) != 1 or "per LP adds up" not in lines[ends[0]] or \
                ends[0] != first_finish - 1 or any(ln.startswith("ledger ")
                                                   for ln in lines[ends[0]:]):
            fail(f"{lps} LPs: want one commit_end line, after every hook line and right before "
                 f"finish's, adding up\n{ref[-600:]}")
        for lay in (["--threads", "2"], ["--sync", "conservative", "--threads", "2"]):
            _, out, e = run(kairos, *base, *lay)
            if out != ref or digest(e) != digest(err):
                fail(f"commit_end {lps} LPs {' '.join(lay)}: the output differs")
    for lay in (SEQ, ["--threads", "2"], ["--sync", "conservative", "--threads", "2"]):
        rc, out, e = run(kairos, "run", LEDGER, "--lps", "8", "--end", "10", "-P", "end_fail=1",
                         *lay, check=False)
        if rc != 1 or "model 'ledger', in commit_end, after the last commit: commit_end " \
                      "refuses" not in e or "lp 0:" in out:
            fail(f"end_fail {' '.join(lay)}: want exit 1, the message and no finish line\n{e}")
    rc, out, e = run(kairos, "run", LEDGER, "--lps", "8", "-P", "end_fail=2", check=False)
    if rc != 1 or "model 'ledger', in ledger_bytes, before init: no ledger for 8 LPs" not in e \
            or out:
        fail(f"a kr_error in ledger_bytes: want exit 1, the message and no output\n{e}")
    rc, _, e = run(kairos, "run", os.path.join(build, "libledger_both.so"), check=False)
    if rc != 2 or "declares both ledger_size and ledger_bytes" not in e:
        fail(f"a ledger sized two ways: want exit 2 and the refusal\n{e}")
    t.ok("commit_end: once after the last commit and before finish, with a ledger sized by "
         "ledger_bytes for 8 and 64 LPs, on 3 engines; its kr_error is the run's error")


def misuse():
    cases = {1: "kr_schedule in the commit hook", 2: "kr_commit in init",
             3: "a record is at most 1024 bytes", 4: "in the commit hook",
             5: "kr_commit in finish"}
    for k, needle in cases.items():
        for lay in (SEQ, ["--threads", "2"], ["--sync", "conservative", "--threads", "2"]):
            rc, _, e = run(kairos, "run", LEDGER, "--lps", "8", "--end", "10", "-P",
                           f"misuse={k}", *lay, check=False)
            if rc != 1 or needle not in e:
                fail(f"misuse {k} {' '.join(lay)}: want exit 1 and '{needle}'\n{e}")
    # A failing event that ran safe stays in its LP's history with no checkpoint before it;
    # the end of the run rolled it back when the horizon lay below it - no state to restore,
    # a SIGSEGV (exit 3) in 5 of 60 runs beside a busy core, most runs under ThreadSanitizer
    for rep in range(12):
        rc, _, e = run(kairos, "run", LEDGER, "--lps", "8", "--end", "10", "-P", "misuse=3",
                       "--threads", "2", check=False)
        if rc != 1 or "a record is at most 1024 bytes" not in e:
            fail(f"misuse 3 --threads 2 (run {rep + 1}): want exit 1 and the model's error\n{e}")
    t.ok("kr_schedule and kr_random in the hook, kr_commit in init and finish, an oversized "
         "record: each a model error naming it, on every engine (2 threads: 12 runs)")


def resumed():
    base = ["run", LEDGER, "--lps", "16", "--end", "30"]
    _, ref, err = run(kairos, *base, *SEQ)
    snap = os.path.join(build, "commit-hook.snap")
    for lay in (["--threads", "2"], ["--sync", "conservative", "--threads", "2"], SEQ):
        shutil.rmtree(snap, ignore_errors=True)
        out_path = snap + ".out"
        with open(out_path, "w") as f:
            _, out, e = run(kairos, *base, *SEQ, "--snapshot", snap, "--snapshot-every", "10")
            f.write(out)
        if "at virtual time 20" not in e:
            fail(f"the run with snapshots: want its last at 20\n{e}")
        q = subprocess.run(f'exec "{kairos}" resume {snap} --progress off {" ".join(lay)} '
                           f'>> {out_path}', shell=True, capture_output=True, text=True,
                           timeout=300)
        if q.returncode != 0 or digest(q.stderr) != digest(err) or \
                open(out_path).read() != ref:
            fail(f"resumed at 20 {' '.join(lay)}: exit {q.returncode}, digest "
                 f"{digest(q.stderr)} (want {digest(err)})\n{q.stderr}")
    t.ok("a snapshot keeps the ledger: resumed on each engine, the hook goes on printing the "
         "uninterrupted run's hashes")


def life():
    base = ["run", "life", "-P", "width=64", "-P", "height=64", "-P", "generations=30",
            "--lps", "64", "--end", "inf"]
    _, ref, _ = run(kairos, *base, *SEQ)
    _, hooked, err = run(kairos, *base, "-P", "hook=1", *SEQ)
    if hooked != ref or ref.count("alive") != 31:
        fail(f"life -P hook=1: stdout differs from the reports to LP 0\n{hooked}\n--\n{ref}")
    for lay in (["--threads", "2"], ["--threads", "3", "--state", "page"],
                ["--sync", "conservative", "--threads", "2"]):
        _, out, e = run(kairos, *base, "-P", "hook=1", *lay)
        if out != ref or digest(e) != digest(err):
            fail(f"life -P hook=1 {' '.join(lay)}: stdout or digest differs")
    t.ok("life -P hook=1: the hook's populations are the LP 0 reports' lines, on every "
         "engine, with one digest")


same_everywhere()
hook_errors()
commit_end()
misuse()
resumed()
life()
t.finish()
