"""Reliability cases (docs/reliability.md, issue 12): the digest names pointers by what they
point at, numbers out of range are errors, output paths are checked before the run, a signal
or a dying run keeps what was committed, write errors are reported. Each case failed before
its fix."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from common import run, fail, digest, Tally, build_kind, expect_exit, pick, LONG

kairos, build = sys.argv[1], sys.argv[2]
hazard = os.path.join(build, "libhazard.so")
t = Tally()
tmp = tempfile.mkdtemp(prefix="kr-rel-")  # (the runs' files, each in a directory in it)
ENGINES = [["--sync", "sequential"], ["--threads", "1"], ["--threads", "2"],
           ["--sync", "conservative", "--threads", "1"]]
KIND = build_kind(kairos)  # 'tsan': no time-sharing; sanitizers: no tight ulimit -v
PREEMPT = ["off"] if KIND == "tsan" else ["off", "return", "tick"]


def expect_fail(rc_want, needles, *args):
    return expect_exit(kairos, t, rc_want, needles, *args)


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
    # a pointer into the C library heap cannot be named: the run says so (--check: where)
    _, _, err = run(kairos, *hazard_args(2, "--sync", "sequential", "--check"))
    if err.count("kairos: warning:") != 1 or "LP 0, virtual time" not in err \
            or "outside its kr_malloc memory" not in err:
        fail(f"state pointer into the C library heap: no single warning naming the event:\n{err}")
    _, _, err = run(kairos, *hazard_args(2, "--threads", "2"))
    if "model 'hazard', LP 0: its state holds an address" not in err:
        fail(f"state pointer into the C library heap, optimistic: no warning:\n{err}")
    t.ok("a state pointer into the C library heap: one warning naming LP (and event, --check)")
    # a payload struct with uninitialised padding: its bytes enter the digest; --check names it
    # (not under AddressSanitizer: its frames live on a fake stack that --check cannot vary)
    if KIND != "asan":
        expect_fail(1, ["model 'hazard', LP ", "payload byte 4 (of 16) differs between two runs",
                        "padding of a struct"], *hazard_args(15, "--sync", "sequential", "--check"))


def case_payload_pointers():
    """Issue 35, 1: a payload holding pointers into the program image (a string literal, a
    const table, a function) that the receiver follows names them in the digest and the
    trace: one digest and output in every run (ASLR moves them) on every engine, two
    traces alike; a snapshot's pending events carry them into another process. A pointer
    into the sender's state or the C library heap is refused, naming it, on every engine."""
    work = tempfile.mkdtemp(prefix="payptr-", dir=tmp)
    seen, outs = set(), set()
    for i, eng in enumerate(ENGINES + [["--threads", "2", "--state", "page"]]):
        for rep in range(2):
            trace = os.path.join(work, f"t{i}{rep}.json")
            _, out, err = run(kairos, *hazard_args(17, "--trace", trace), *eng)
            seen.add(digest(err))
            outs.add(out)
    if len(seen) != 1 or len(outs) != 1 or "from a odd LP" not in outs.pop():
        fail(f"payload pointers into the image: {len(seen)} digests, {len(outs)} outputs "
             f"in 10 runs (want one each)")
    q = subprocess.run([kairos, "trace-diff", os.path.join(work, "t00.json"),
                        os.path.join(work, "t21.json")], capture_output=True, text=True)
    if q.returncode != 0 or "the same committed history" not in q.stdout:
        fail(f"payload pointers: trace-diff of two runs reports a difference:\n{q.stdout}")
    t.ok("payloads pointing into the image: one digest and output in 10 runs on 5 "
         "engines/modes, traces alike")
    snap, full = os.path.join(work, "snap"), os.path.join(work, "full")
    with open(full, "w") as f:
        subprocess.run([kairos, *hazard_args(17, "--sync", "sequential", "--snapshot", snap,
                                             "--snapshot-every", "5", "--progress", "off")],
                       stdout=f, stderr=subprocess.DEVNULL, check=True)
    for eng in (["--sync", "sequential"], ["--threads", "2"]):
        cut = os.path.join(work, "cut")
        shutil.copyfile(full, cut)
        with open(cut, "a") as f:
            p = subprocess.run([kairos, "resume", snap, "--progress", "off", *eng], stdout=f,
                               stderr=subprocess.PIPE, text=True)
        if p.returncode or digest(p.stderr) not in seen or open(cut).read() != open(full).read():
            fail(f"payload pointers, resumed {eng}: exit {p.returncode}, digest "
                 f"{digest(p.stderr)} vs {seen}")
    t.ok("a snapshot's pending events with image pointers resume in another process")
    shutil.rmtree(work, ignore_errors=True)
    for case, where in ((18, "into the sending LP's own state (kr_malloc)"),
                        (19, ") into ")):
        for eng in ENGINES + [["--threads", "2", "--state", "page"]]:
            expect_fail(1, ["model 'hazard', LP ", "event type 0: kr_schedule: the payload of "
                            "a type-0 event to LP ", "holds a pointer at byte 0", where,
                            "send the values"], *hazard_args(case, "-P", "at=3"), *eng)
    low_numbers()


def low_numbers():
    """Numbers in a payload that lie in memory mapped below 4 GiB (where a program built
    without -pie, or valgrind, keeps its C heap, and ids and counts are common) are numbers:
    the run goes on with one warning naming the first, and commits what it commits with
    nothing mapped there."""
    _, ref_out, ref_err = run(kairos, *hazard_args(31, "-P", "low=0", "--sync", "sequential"))
    if "number 0x4000" not in ref_out or "warning" in ref_err:
        fail(f"case 31 without the low mapping: no numbers printed, or a warning:\n{ref_err}")
    for eng in ENGINES:
        rc, out, err = run(kairos, *hazard_args(31), *eng, check=False)
        if rc == 1 and "cannot map memory at" in err:
            print("skipped: numbers below 4 GiB (this process cannot map memory at 1 GiB)")
            return
        if rc != 0 or digest(err) != digest(ref_err) or out != ref_out:
            fail(f"case 31 {eng}: exit {rc}; want the run without the low mapping's digest "
                 f"and output\n{err}")
        if err.count("kairos: warning:") != 1 or "below 4 GiB" not in err or \
                "taken as a number" not in err or "event type 0: kr_schedule: the payload" \
                not in err:
            fail(f"case 31 {eng}: want one warning naming the word below 4 GiB:\n{err}")
    t.ok("payload numbers in memory mapped below 4 GiB: one warning, and every engine commits "
         "what it commits with nothing mapped there")


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
    bare = os.path.join(build, "libbare.so")
    for what, needle in (("exit", "called exit(0) while being loaded"),
                         ("crash", "crashed with SIGSEGV (address (nil)) while being loaded"),
                         ("entry", "crashed with SIGSEGV (address (nil)) while being loaded")):
        p = subprocess.run([kairos, "run", bare, "--end", "5", "--lps", "2"], capture_output=True,
                           text=True, env={**os.environ, "KAIROS_TEST_LOAD": what})
        if p.returncode != 1 or needle not in p.stderr or "libbare.so" not in p.stderr:
            fail(f"model {what} while loading: exit {p.returncode}\n{p.stderr}")
        t.ok(f"a model that {what}s while loading: exit 1, named")
    expect_fail(1, ["model 'bare', LP 0, virtual time 1", "did init call kr_set_state?"],
                "run", bare, "--end", "5", "--lps", "2")
    # (two crashes on each worker - a failed speculative event does not stop the run - once
    # killed ThreadSanitizer builds: their handler ran with the signal blocked)
    expect_fail(1, ["model 'bare', LP 0, virtual time 1", "did init call kr_set_state?"],
                "run", bare, "--end", "5", "--lps", "4", "--threads", "2", "--balance", "off")
    expect_fail(2, ["model 'bare' declares no parameters (-P foo=1)"],
                "run", bare, "--end", "5", "--lps", "2", "-P", "foo=1")
    if KIND:  # (a sanitizer's shadow memory needs terabytes of address space)
        return
    # (thread stacks that do not fit the limit: safe events left 200 000 LPs room to run)
    p = subprocess.run(f"ulimit -v 400000; exec '{kairos}' run phold --lps 1000 --end 5 "
                       "--threads 2 --stack-kb 150000", shell=True, capture_output=True, text=True)
    if p.returncode != 1 or "ulimit -v" not in p.stderr or "error message" in p.stderr:
        fail(f"under ulimit -v: exit {p.returncode}\n{p.stderr}")
    t.ok("under ulimit -v: the message names the address-space limit")


def case_short_ticks():
    """12: tick periods that starve the worker loop (5-8 us livelocked with 0 committed
    events) are refused on the command line and ignored in a calibration file."""
    expect_fail(2, ["--tick-us must be from 20"], "run", "phold", "--tick-us", "5")
    if KIND == "tsan":
        return
    d = tempfile.mkdtemp(prefix="cal-", dir=tmp)
    cal, stats = os.path.join(d, "calibration"), os.path.join(d, "s.json")
    open(cal, "w").write("tick_us 5\n")
    p = subprocess.run([kairos, "run", "phold", "--end", "20", "--threads", "2", "--preempt",
                        "tick", "--stats", stats], capture_output=True, text=True, timeout=60,
                       env={**os.environ, "KAIROS_CALIBRATION": cal})
    ts = json.load(open(stats))["time_sharing"] if p.returncode == 0 else {}
    if ts.get("tick_us") != 1000 or ts.get("tick_from") != "default":
        fail(f"a calibration file saying 5 us: exit {p.returncode}, {ts}\n{p.stderr}")
    t.ok("a calibration file saying tick_us 5 is ignored (default 1000 us)")


def case_heap_overflow():
    """14: a model writing past the end of its kr_malloc memory is a model error naming the LP
    (every engine; with --check, the event), not an internal error or a glibc abort."""
    if KIND == "asan":  # (AddressSanitizer reports the write itself, at the write)
        return
    for eng in ENGINES:
        expect_fail(1, ["model 'hazard', LP 5: its state was written past the end of its kr_malloc"],
                    *hazard_args(14, "-P", "at=10"), *eng)
    expect_fail(1, ["LP 5, virtual time 10.", "--check: the event wrote past the end"],
                *hazard_args(14, "-P", "at=10", "--sync", "sequential", "--check"))


def case_many_lps():
    """Tracked state modes lay every LP in one kernel mapping: 40 000 LPs run under --state
    page (stopped at 32 746 with 'arena exhausted'); past the kernel's vm.max_map_count the
    message names it."""
    if KIND or not LONG:  # (sanitizers keep the application to a fraction of the address
        return            # space; a scale test: the long tier)
    _, _, err = run(kairos, "run", "phold", "--lps", "40000", "--end", "2", "--state", "page")
    _, _, ref = run(kairos, "run", "phold", "--lps", "40000", "--end", "2", "--state", "full")
    if digest(err) != digest(ref):
        fail("40 000 LPs, --state page: digest differs from --state full")
    t.ok("40 000 LPs under --state page, same digest as full")
    _, _, err = run(kairos, "run", "phold", "--lps", "100000", "--end", "1", "--state", "chunk")
    t.ok("100 000 LPs under --state chunk")
    if int(open("/proc/sys/vm/max_map_count").read()) < 150000:  # (the usual 65 530)
        # (without safe events every LP keeps pages open between its checkpoints; with them,
        # how many do at once depends on how far the threads speculate)
        expect_fail(1, ["vm.max_map_count"], "run", "phold", "--lps", "100000", "--end", "2",
                    "--state", "page", "--safe", "off")


def start(args, ignore_int=False):
    """Start kairos with stdout to a file; returns (process, stdout path, stats path)."""
    d = tempfile.mkdtemp(prefix="run-", dir=tmp)
    out, stats = os.path.join(d, "out"), os.path.join(d, "stats.json")
    pre = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore_int else None
    p = subprocess.Popen([kairos, *map(str, args), "--stats", stats, "--progress", "off"],
                         stdout=open(out, "w"), stderr=subprocess.PIPE, text=True,
                         preexec_fn=pre)
    return p, out, stats


def finish(p, limit):
    try:
        _, err = p.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        p.kill()
        fail(f"no exit {limit} s after the signal")
    return err


def wait_for_output(path, nbytes=1):
    for _ in range(500):
        if os.path.getsize(path) >= nbytes:
            return
        time.sleep(0.01)
    fail("the run printed nothing in 5 s")


def case_signals():
    """5: SIGINT/SIGTERM stop at a committed point: the committed output (a prefix of the
    full output, whole lines), the summary, --stats with ended_by "interrupted", exit
    128 + signal within a second, on every engine."""
    for eng in ENGINES:
        for sig in (signal.SIGINT, signal.SIGTERM):
            p, out, stats = start(hazard_args(0, "--end", "1e9", "-P", "work=2000", "--lps", "64")
                                  + eng)
            wait_for_output(out, 20000)
            t0 = time.time()
            p.send_signal(sig)
            err = finish(p, 10)
            took = time.time() - t0
            if p.returncode != 128 + sig:
                fail(f"{eng} {sig.name}: exit {p.returncode}, wanted {128 + sig}\n{err}")
            if took > 1.0:
                fail(f"{eng} {sig.name}: exit {took:.2f} s after the signal")
            if f"interrupted by {sig.name}" not in err or "run digest" not in err:
                fail(f"{eng} {sig.name}: no summary:\n{err}")
            st = json.load(open(stats))
            text = open(out).read()
            lines = text.splitlines()
            if st["ended_by"] != "interrupted" or not text.endswith("\n") \
                    or len(lines) != st["committed_events"]:
                fail(f"{eng} {sig.name}: ended_by {st['ended_by']}, {len(lines)} lines for "
                     f"{st['committed_events']} committed events, ends {text[-30:]!r}")
            last = float(lines[-1].split()[-1])
            _, ref, _ = run(kairos, *hazard_args(0, "--lps", "64", "--end", last + 1,
                                                 "--sync", "sequential"))
            if not ref.startswith(text):
                fail(f"{eng} {sig.name}: the interrupted output is not a prefix of the full one")
            t.ok(f"{' '.join(eng)} {sig.name}: exit {p.returncode} in {took:.2f} s, "
                 f"{len(lines)} committed lines, stats written")
    # a signal ignored at start stays ignored
    p, out, stats = start(hazard_args(0, "--end", "200", "--sync", "sequential", "-P",
                                      "work=20000"), ignore_int=True)
    wait_for_output(out)
    p.send_signal(signal.SIGINT)
    err = finish(p, 60)
    if p.returncode != 0 or json.load(open(stats))["ended_by"] != "end_time":
        fail(f"SIGINT ignored at start: exit {p.returncode}\n{err}")
    t.ok("SIGINT ignored at start stays ignored")
    # a second signal quits at once (here the first stops the run, finish() never returns)
    p, out, stats = start(hazard_args(7, "--end", "1e9", "--sync", "sequential"))
    wait_for_output(out)
    p.send_signal(signal.SIGINT)
    time.sleep(1.2)  # (one within a second of the first is its echo: interrupt.c)
    p.send_signal(signal.SIGINT)
    err = finish(p, 5)
    if p.returncode != 130 or "interrupted twice" not in err:
        fail(f"second SIGINT: exit {p.returncode}\n{err}")
    t.ok("a second SIGINT quits at once")


def case_interrupt_time():
    """5: the time an interrupted run reports is exact: it committed every event before T and
    nothing else, so `--end T` on the sequential engine commits the same events and digest.
    Queueing moves customers in zero time, so events tie at almost every time - an engine
    that stopped between tied events would commit part of them."""
    for eng in ENGINES + [["--sync", "conservative", "--threads", "2"]]:
        spans = ["-P", "spans=1"] if "conservative" in eng else []  # (expanded events)
        margs = ["run", "queueing", "--lps", "4096", *spans]
        p, _, stats = start(margs + ["--end", "1e9"] + eng)
        time.sleep(0.6)
        p.send_signal(signal.SIGINT)
        err = finish(p, 20)
        m = re.search(r"committed up to virtual time (\S+)", err)
        if p.returncode != 130 or not m:
            fail(f"{eng}: exit {p.returncode}\n{err}")
        st = json.load(open(stats))
        _, _, ref = run(kairos, *margs, "--end", m.group(1), "--sync", "sequential")
        if ref.stats["committed_events"] != st["committed_events"] or \
                ref.stats["run_digest"] != st["run_digest"]:
            fail(f"{eng}: interrupted at {m.group(1)} with {st['committed_events']} events, "
                 f"digest {st['run_digest']}; sequential --end {m.group(1)}: "
                 f"{ref.stats['committed_events']}, {ref.stats['run_digest']}")
        t.ok(f"{' '.join(eng)}: interrupted at virtual time {float(m.group(1)):.3f} after "
             f"{st['committed_events']} events, as sequential --end there")


def case_write_errors():
    """7: output that cannot be written is an error (exit 1, message); `| head` ends quietly
    with SIGPIPE's status."""
    base = f"'{kairos}' run '{hazard}' --lps 16 --end 100 --progress off"
    for eng in ENGINES:
        e = " ".join(eng)
        for redir, why in ((">/dev/full", "No space left on device"), (">&-", "Bad file descriptor")):
            p = subprocess.run(f"{base} {e} {redir}", shell=True, capture_output=True, text=True)
            if p.returncode != 1 or why not in p.stderr or "output is incomplete" not in p.stderr:
                fail(f"{e} {redir}: exit {p.returncode}\n{p.stderr}")
            t.ok(f"{e} {redir}: exit 1, '{why}'")
        p = subprocess.run(f"{base} {e} --end 5000 | head -1; exit ${{PIPESTATUS[0]}}", shell=True,
                           executable="/bin/bash", capture_output=True, text=True)
        if p.returncode != 128 + signal.SIGPIPE or "error" in p.stderr:
            fail(f"{e} | head -1: exit {p.returncode}\n{p.stderr}")
        t.ok(f"{e} | head -1: quiet, exit {p.returncode}")


def case_dying_runs():
    """6: whatever ends a run, what was committed is printed and the status says it failed:
    exit(), _exit() and abort() in an event print what the sequential engine prints (every
    line before the call) on every engine; an event timeout prints a prefix of it. Under
    time-sharing the call unwinds an event's own stack in application mode, which --check
    watches (a tick there once suspended the failure record half made: a leak)."""
    for case, needle in ((3, "the model called exit(0)"), (9, "the model called _exit(0)"),
                         (4, "the model called abort()")) + \
            (() if KIND == "tsan" else ((26, "the model raised SIGTERM"),)):
        args = hazard_args(case, "-P", "at=10", "--progress", "off")
        _, ref, _ = run(kairos, *args, "--sync", "sequential", check=False)
        shared = [] if KIND == "tsan" else [["--threads", "2", "--preempt", "return", "--check"]]
        for eng in ENGINES + shared:
            out, err = expect_fail(1, [needle, "model 'hazard', LP ", "virtual time 10."], *args, *eng)
            if out != ref or not ref:
                fail(f"case {case} {eng}: printed {len(out.splitlines())} lines, the sequential "
                     f"engine {len(ref.splitlines())}")
    # Issue 35, 5: an event that loops ends as a model error at it on every engine - on
    # the optimistic engine's worker stacks too (the watchdog signals the thread, which
    # unwinds) - with everything committed before it printed, as the sequential engine does
    args = hazard_args(11, "-P", "at=10", "--progress", "off", "--event-timeout", "0.3")
    _, ref, _ = run(kairos, *args, "--sync", "sequential", check=False)
    for eng in TIMEOUT_ENGINES:
        out, err = expect_fail(1, ["--event-timeout", "virtual time 10.", "an endless loop?"],
                               *args, *eng)
        timeout_output(f"timeout {eng}", out, ref)
    # On an event stack the engine fails the preempted event itself when it has run too
    # long: what it printed before its loop prints too (it was lost, also in default runs
    # beside a busy core, where adaptive time-sharing slices a long event: 1 run in 30)
    if KIND != "tsan":
        for eng in (["--threads", "2", "--preempt", "tick"], ["--threads", "1", "--preempt", "tick"]):
            out, err = expect_fail(1, ["--event-timeout", "virtual time 10."], *args, *eng)
            timeout_output(f"timeout {eng}", out, ref)
    # Issue 35, 6: kr_* from a thread the model started: named, exit 1, never a crash, and
    # the committed output kept on every engine (the optimistic engine printed none)
    for case, fn in ((10, "kr_printf"), (21, "kr_schedule"), (22, "kr_error(\"gave up")):
        args = hazard_args(case, "-P", "at=10", "--progress", "off")
        _, ref, _ = run(kairos, *args, "--sync", "sequential", check=False)
        for eng in ENGINES:
            out, _ = expect_fail(1, ["model 'hazard'", fn, "thread Kairos did not start"],
                                 *args, *eng)
            if out != ref or not ref:
                fail(f"case {case} {eng}: {len(out.splitlines())} lines printed, the "
                     f"sequential engine {len(ref.splitlines())}")
    # (a tick may preempt the event after its thread called, and run another event of the
    # worker before it: the call fails the event that started the thread, not that one)
    if KIND != "tsan":
        args = hazard_args(21, "-P", "at=10", "-P", "work_after=3000000", "--progress", "off")
        _, ref, _ = run(kairos, *args, "--sync", "sequential", check=False)
        for _ in range(3):
            out, _ = expect_fail(1, ["LP 5, virtual time 10.03", "kr_schedule"], *args,
                                 "--threads", "2", "--preempt", "tick")
            if out != ref:
                fail(f"case 21 --preempt tick: {len(out.splitlines())} lines printed, the "
                     f"sequential engine {len(ref.splitlines())}")


# (ThreadSanitizer delivers signals late, from its own runtime, and cannot follow the
# handler's longjmp: there a timed-out event ends the process as before - the committed
# output printed, the failed event's own line perhaps not - and the optimistic engine's
# worker stacks, whose output commits at GVT, are not checked)
TIMEOUT_ENGINES = ENGINES if KIND != "tsan" else [ENGINES[0], ENGINES[3]]


def timeout_output(what, out, ref):
    """A timed-out run printed what the sequential engine prints (all but the failed event's
    own line, where the process ends instead: ThreadSanitizer)."""
    if KIND != "tsan" and (out != ref or not ref):
        fail(f"{what}: {len(out.splitlines())} lines printed, the sequential engine "
             f"{len(ref.splitlines())}")
    if KIND == "tsan" and (not ref.startswith(out) or len(out.splitlines()) < len(ref.splitlines()) - 1):
        fail(f"{what}: {len(out.splitlines())} lines of {len(ref.splitlines())}")


def case_raw_stdout():
    """Issue 35, 15: printf, puts or write(1, ...) straight to stdout from an event: one
    warning naming the LP, time and type, pointing to kr_printf, on every engine."""
    for case, fn in ((23, "printf"), (24, "puts"), (25, "write(1, ...)")):
        for eng in ENGINES:
            _, _, err = run(kairos, *hazard_args(case, "-P", "at=10", "--progress", "off"),
                            *eng)
            w = [ln for ln in err.splitlines() if ln.startswith("kairos: warning:")]
            if len(w) != 1 or "model 'hazard', LP " not in w[0] or "virtual time 1" not in \
                    w[0] or f"{fn} writes to stdout directly" not in w[0] or "kr_printf" not in w[0]:
                fail(f"case {case} {eng}: want one warning naming the event and kr_printf:\n{err}")
    _, _, err = run(kairos, *hazard_args(0, "--progress", "off"))
    if "warning" in err:
        fail(f"a model printing with kr_printf only got a warning:\n{err}")
    t.ok("printf, puts and write(1) from an event: one warning naming the event, every engine")


def case_failed_stats():
    """Issue 35, 8: a run that ends in a model error, a crash in model code or a timeout
    still writes its --stats: ended_by "error", the message, no digest - on every engine."""
    work = tempfile.mkdtemp(prefix="fstats-", dir=tmp)
    # (a timeout ends the process where the thread cannot be unwound - under
    # ThreadSanitizer -, and then there is no --stats)
    timeout = () if KIND == "tsan" else ((11, ["--event-timeout", "0.3"]),)
    for case, extra in ((16, []), (18, [])) + timeout:
        for eng in ENGINES:
            st = os.path.join(work, "st.json")
            args = hazard_args(case, "-P", "at=10", "--progress", "off", "--stats", st, *extra)
            _, err = expect_fail(1, ["kairos: error: model 'hazard', LP "], *args, *eng)
            if not os.path.exists(st):
                fail(f"case {case} {eng}: the failed run wrote no --stats")
            d = json.load(open(st))
            msg = [ln for ln in err.splitlines() if ln.startswith("kairos: error: ")][0]
            if d["ended_by"] != "error" or d["run_digest"] is not None or \
                    d["error"] != msg[len("kairos: error: "):]:
                fail(f"case {case} {eng}: --stats of a failed run: ended_by {d['ended_by']}, "
                     f"digest {d['run_digest']}, error {d.get('error')!r}")
            os.unlink(st)
    shutil.rmtree(work, ignore_errors=True)


def case_blocked_events():
    """Issue 35, 11: an event blocked in a system call (a read from a pipe no one writes,
    poll with no end, a mutex locked twice, sleep) times out like a loop on every engine,
    with the committed output kept; the quick tier tries each on one engine in turn."""
    # (time-sharing's signals - ticks, and arrivals of earlier messages - make a blocked
    # poll() or sleep() return early with EINTR: the model then goes on; events on worker
    # stacks are what blocks)
    engines = [e if e[0] != "--threads" else e + ["--preempt", "off"] for e in TIMEOUT_ENGINES]
    combos = [(b, eng) for b in range(4) for eng in engines]
    for block, eng in pick([(b, engines[(b + 1) % len(engines)]) for b in range(4)], combos):
        args = hazard_args(20, "-P", f"block={block}", "-P", "at=10", "--progress", "off",
                           "--event-timeout", "0.3")
        _, ref, _ = run(kairos, *args, "--sync", "sequential", check=False)
        out, _ = expect_fail(1, ["virtual time 10.", "in a system call", "--event-timeout"],
                             *args, *eng)
        timeout_output(f"blocked {block} {eng}", out, ref)


def case_done_contract():
    """9: one contract for done() on every engine: it runs with the event's protection (a
    crash is a model error naming done(), a speculative-only one is discarded: bad_input
    cases 23, 24), it may only read (kr_malloc there is refused everywhere, and --check sees
    a done() that writes its state)."""
    for eng in ENGINES:
        expect_fail(1, ["model 'hazard', LP 0, in done() after init", "SIGSEGV"],
                    *hazard_args(6), *eng)
        expect_fail(1, ["in done() after the event", "kr_malloc in done()", "only reads"],
                    *hazard_args(12), *eng)
    expect_fail(1, ["in done() after the event", "--check: done() changed the LP's state"],
                *hazard_args(13, "--sync", "sequential", "--check"))


def case_callback_timeouts():
    """10: --event-timeout covers every model callback: finish() and a committed done()."""
    for eng in ENGINES:
        out, _ = expect_fail(1, ["model 'hazard', LP 0, in finish", "--event-timeout"],
                             *hazard_args(7, "--event-timeout", "0.3"), *eng)
        if len(out.splitlines()) != 221:
            fail(f"finish loop {eng}: {len(out.splitlines())} of 221 committed lines printed")
        expect_fail(1, ["LP 0, virtual time ", "--event-timeout"],
                    *hazard_args(8, "-P", "at=10", "--event-timeout", "0.3"), *eng)


def case_stack_frames():
    """4: a frame bigger than the stack is a stack overflow on every engine and preemption
    mode, with the same --stack-kb limit; a frame that fits runs everywhere."""
    modes = ENGINES + [["--threads", "2", "--preempt", m] for m in PREEMPT]
    fits = "4096" if KIND else "1024"  # (sanitizer builds use far more stack)
    ref = None
    for eng in modes:
        # (ThreadSanitizer's own signal handling dies on a large frame's fault on a worker
        # thread: there only the sequential engine's report is checked)
        if KIND != "tsan" or eng == ENGINES[0]:
            expect_fail(1, ["the model overflowed its stack (--stack-kb 256 KiB", "LP 3, virtual time"],
                        *hazard_args(5, "--stack-kb", "256"), *eng)
        _, _, err = run(kairos, *hazard_args(5, "--stack-kb", fits), *eng)
        ref = ref or digest(err)
        if digest(err) != ref:
            fail(f"400 KiB frame on a {fits} KiB stack, {eng}: digest differs")
    t.ok(f"a 400 KiB frame runs on a {fits} KiB stack on every engine, same digest")


def case_false_timeouts():
    """13: --event-timeout counts the CPU time of the event, so a stopped process (SIGSTOP
    longer than the timeout, then SIGCONT) or a stdout reader that stalls is not taken for
    an endless loop."""
    args = hazard_args(0, "--end", "300", "-P", "work=3000", "--event-timeout", "1")
    slow = hazard_args(0, "--lps", "2", "--end", "3", "-P", "work=200000000",  # ~0.4 s events
                       "--event-timeout", "1")
    for eng in pick(ENGINES[2:3], ENGINES):  # (quick tier: 2 threads; long: every engine)
        p, out, stats = start(slow + eng)
        time.sleep(0.6)  # inside an event
        p.send_signal(signal.SIGSTOP)
        time.sleep(2.5)
        p.send_signal(signal.SIGCONT)
        err = finish(p, 120)
        if p.returncode != 0:
            fail(f"SIGSTOP 2.5 s under --event-timeout 1, {eng}: exit {p.returncode}\n{err}")
        t.ok(f"{' '.join(eng)}: stopped 2.5 s under --event-timeout 1, no timeout")
        p = subprocess.Popen([kairos, *map(str, args + eng)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        time.sleep(2.5)  # nobody reads: the pipe fills, kairos blocks writing
        _, err = p.communicate(timeout=120)
        if p.returncode != 0:
            fail(f"stalled stdout reader, {eng}: exit {p.returncode}\n{err.decode()}")
        t.ok(f"{' '.join(eng)}: stdout reader stalled 2.5 s under --event-timeout 1, no timeout")


# (each case forked, two at a time: much of it waits on signals, timeouts and launches)
t.cases([case_pointer_digest, case_payload_pointers, case_numbers, case_output_paths,
         case_messages, case_signals, case_interrupt_time, case_write_errors, case_dying_runs,
         case_blocked_events, case_failed_stats, case_raw_stdout, case_done_contract,
         case_callback_timeouts, case_stack_frames, case_false_timeouts, case_many_lps,
         case_heap_overflow, case_short_ticks])
shutil.rmtree(tmp, ignore_errors=True)
t.finish()
