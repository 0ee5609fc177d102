"""Bad input gets a clear error and a non-zero exit, never a crash or a hang: command-line
mistakes (exit 2) and model misuse (exit 1), each message naming what and where."""
import os
import subprocess
import sys
from common import run, fail, digest, Tally, scan_available, build_kind, expect_exit

kairos, build = sys.argv[1], sys.argv[2]
misuse = os.path.join(build, "libmisuse.so")
noentry = os.path.join(build, "libnoentry.so")
t = Tally()


def expect(rc_want, needles, *args, out_want=None):
    return expect_exit(kairos, t, rc_want, needles, *args, out_want=out_want)


# command line
expect(2, ["unknown model 'nosuch'", "phold"], "run", "nosuch")
expect(2, ["unknown option '--bogus'"], "run", "phold", "--bogus")
expect(2, ["--threads must be from 1 to 1024"], "run", "phold", "--threads", "0")
expect(2, ["--threads needs a whole number", "'abc'"], "run", "phold", "--threads", "abc")
expect(2, ["--lps must be from 1 to"], "run", "phold", "--lps", "0")
expect(2, ["--end needs a positive number", "'-5'"], "run", "phold", "--end", "-5")
expect(2, ["--end needs a positive number", "'1e'"], "run", "phold", "--end", "1e")
expect(2, ["--sync must be"], "run", "phold", "--sync", "pessimistic")
expect(2, ["option --seed needs a value"], "run", "phold", "--seed")
expect(2, ["no parameter 'bogus'", "kairos run phold --help"], "run", "phold", "-P", "bogus=1")
expect(2, ["must be an integer", "'x12'"], "run", "phold", "-P", "population=x12")
expect(2, ["-P needs name=value"], "run", "phold", "-P", "population")
expect(2, ["model 'finite': type_names[1] is not a name"], "run",
       os.path.join(build, "libbadnames.so"))
# an option the run's engine does not read: a note naming it (a script that switches --sync
# keeps its options, so the run goes on), and none where the engine reads it
for sync, opt, owner in [("sequential", ["--state", "chunk"], "optimistic"),
                         ("conservative", ["--balance", "off"], "optimistic"),
                         ("optimistic", ["--handoff", "push"], "conservative")]:
    expect(0, [f"note: {opt[0]} is an option of the {owner} engine; this run uses the {sync} "
               "engine"], "run", "phold", "--end", "5", "--sync", sync, *opt, "--progress", "off")
for args in (["--state", "chunk"], ["--sync", "sequential", "--check", "--state", "chunk"]):
    _, quiet = expect(0, [], "run", "phold", "--end", "5", *args, "--progress", "off")
    if "note:" in quiet:  # (sequential --check runs events twice in that state mode)
        fail(f"a note where the engine reads the option ({args}):\n{quiet}")
# issue 35, unclear errors: each one line and a test
expect(2, ["--memory-max needs a size like 64M", "'0x10'"], "run", "phold", "--memory-max", "0x10")
expect(2, ["--memory-max needs a size like 64M", "'1e3'"], "run", "phold", "--memory-max", "1e3")
expect(2, ["--stats", "is a directory"], "run", "phold", "--stats", build)
expect(2, ["--snapshot /dev/null: not a directory"], "run", "phold", "--snapshot", "/dev/null",
       "--snapshot-every", "5")
expect(2, ["--snapshot", "cannot create it"], "run", "phold", "--snapshot",
       "/nonexistent/dir/snaps", "--snapshot-every", "5")
expect(2, ["--balance must be", "storm"], "run", "phold", "--balance", "bogus")
expect(1, ["model 'hazard', LP ", "--check: the event wrote through its payload pointer, and "
           "its payload is empty"], "run", os.path.join(build, "libhazard.so"), "--lps", "4",
       "--end", "10", "-P", "case=29", "--sync", "sequential", "--check")
expect(1, ["kr_random in done()"], "run", os.path.join(build, "libhazard.so"), "--lps", "4",
       "--end", "10", "-P", "case=28", "--sync", "sequential")
expect(2, ["declares flags 0x40 that this Kairos does not know"], "run",
       os.path.join(build, "libbare_flags.so"))
expect(1, ["kr_malloc(100000)", "takes 131072 bytes, more than the", "left of --arena-max 120000",
           "raise --arena-max"], "run", misuse, "-P", "case=6", "--arena-max", "120000",
       "--sync", "sequential")
expect(2, ["does not export kr_model_entry"], "run", noentry)
expect(2, ["cannot load model"], "run", "./does-not-exist.so")
expect(2, ["unknown command"], "frobnicate")

# model misuse, on every engine: same message, exit 1
cases = {
    1: ["model 'misuse', LP 1, virtual time 2, event type 2", "destination LP 7 is out of range"],
    2: ["virtual time 2, event type 2", "is in the past"],
    3: ["event type 2", "is not a finite number"],
    4: ["event type 2", "is not a finite number"],
    5: ["event type 2", "payload of 1025 bytes is over the limit of 1024"],
    6: ["event type 2", "arena is exhausted", "--arena-max"],
    7: ["event type 2", "kr_free", "not a live block"],
    8: ["event type 2", "kr_set_state", "not a block from kr_malloc"],
    9: ["model 'misuse', LP 1, virtual time 2, event type 2", "customer count went negative (-3)"],
    10: ["in finish", "kr_schedule in finish"],
    11: ["model 'misuse', LP 1, in init", "is in the past"],
    12: ["done() returned false after it had returned true"],
    14: ["model 'misuse', LP 1, virtual time 2, event type 4", "virtual time cannot advance",
         "zero-delay loop"],
}
# (the conservative engine runs the model with every event lasting 0: spans=1; the send
# messages then name kr_schedule_span)
conservative = [["--sync", "conservative", "--threads", w, "-P", "spans=1"] for w in ("1", "2")]
for sync in [["--sync", "sequential"], ["--threads", "1"], ["--threads", "2"]] + conservative:
    for c, needles in cases.items():
        extra = ["--arena-max", "64K"] if c == 6 else []
        if "conservative" in sync:
            if c == 14:
                continue  # 4 M zero-delay events one at a time: slow, and not about this engine
            needles = [n.replace("kr_schedule", "kr_schedule_span") for n in needles]
        # what the failing event printed before its error is printed on every engine
        out = "LP 1 counted its customers\n" if c == 9 else None
        expect(1, needles, "run", misuse, "--lps", "2", "--end", "10", *sync, *extra, "-P", f"case={c}",
               out_want=out)

# expanded events and the run's lookahead: misuse on every engine, and what only the
# conservative engine requires
for sync in (["--sync", "sequential"], ["--threads", "2"], conservative[1]):
    expect(1, ["model 'misuse', LP 1, virtual time 2, event type 2",
               "kr_schedule_span: duration -1 is not a finite number >= 0"],
           "run", misuse, "--lps", "2", "--end", "10", *sync, "-P", "case=21")
    expect(1, ["model 'misuse', LP 1, virtual time 2, event type 2",
               "kr_set_lookahead is only valid in init"],
           "run", misuse, "--lps", "2", "--end", "10", *sync, "-P", "case=22")
rc, _, err = run(kairos, "run", misuse, "--lps", "2", "--end", "10", "--sync", "sequential",
                 "-P", "case=20", check=False)
if rc != 0:
    fail(f"an event sent before its sender's end is fine sequentially: exit {rc}\n{err}")
t.ok("case=20 runs sequentially")
expect(1, ["model 'misuse', LP 1, virtual time 2, event type 2", "at 2.5 starts before this "
           "event ends at 3", "--sync conservative", "kr_schedule_span"],
       "run", misuse, "--lps", "2", "--end", "10", *conservative[1], "-P", "case=20")
# the windows scheme reads spans beside the lookahead (they widen its clocks), so it checks
# them as Horizon does, on 1 worker (the sequential core) too; the engines that do not read
# spans run the model (tests/models/spans.c)
spans = os.path.join(build, "libspans.so")
violate = [spans, "--lps", "32", "--end", "100", "-P", "violate=30"]
for sync in (["--threads", "1"], ["--threads", "2"], ["--threads", "3"]):
    expect(1, ["model 'spans', LP 1, virtual time 3", "event type 0", "starts before this "
               "event ends at", "from kr_schedule_span", "--sync conservative"],
           "run", *violate, "--sync", "conservative", "--conservative", "windows", *sync)
expect(1, ["model 'spans', LP 1, virtual time 3", "starts before this event ends at"],
       "run", *violate, "--sync", "conservative", "--conservative", "horizon", "--threads", "2")
for sync in (["--sync", "sequential"], ["--threads", "2"]):
    rc, _, err = run(kairos, "run", *violate, *sync, check=False)
    if rc != 0:
        fail(f"spans violate=30 {sync}: engines that do not read spans run it; exit {rc}\n{err}")
t.ok("a send inside its sender's span: refused by the windows scheme at 1-3 threads and by "
     "Horizon, run by the sequential and optimistic engines")
expect(1, ["model 'queueing', LP 0, in init", "--sync conservative needs every event's duration",
           "kr_set_lookahead", "kr_schedule_span", "kairos run queueing --help"],
       "run", "queueing", "--sync", "conservative")
expect(2, ["--handoff must be push or pull, got 'shove'"], "run", "phold", "--sync",
       "conservative", "--handoff", "shove")
expect(2, ["--barriers must be free or events"], "run", "phold", "--barriers", "none")
expect(2, ["--scheduler-works must be on or off"], "run", "phold", "--scheduler-works", "yes")
expect(2, ["--offload must be auto or always"], "run", "phold", "--offload", "never")
expect(2, ["--offload-us needs microseconds"], "run", "phold", "--offload-us", "-1")
expect(2, ["--check is for the sequential and optimistic engines and the conservative "
           "engine's windows scheme"], "run", "phold", "--sync", "conservative",
       "--conservative", "horizon", "--check")

# model crashes (signals in model code), on every engine and with page protection: a clear
# model error, never a hang or a core dump
crashes = {
    15: ["model 'misuse', LP 1, virtual time 2, event type 2", "crashed with SIGSEGV",
         "invalid memory access at address 0x8 (in libmisuse.so+0x", "addr2line -f -e", "gdb"],
    16: ["model 'misuse', LP 1, virtual time 2, event type 2", "SIGFPE", "division by zero",
         "(in libmisuse.so+0x"],
    17: ["model 'misuse', LP 1, virtual time 2, event type 2", "overflowed its stack",
         "8192 KiB", "--stack-kb"],
}
setups = [["--sync", "sequential"], ["--threads", "1"], ["--threads", "2"], conservative[1],
          ["--threads", "2", "--state", "page"], ["--threads", "2", "--preempt", "off"]]
tsan = build_kind(kairos) == "tsan"
if not tsan:  # (no time-sharing in a ThreadSanitizer build)
    setups.append(["--threads", "2", "--preempt", "tick"])
if not tsan and scan_available(kairos):  # (TSan dies on userfaultfd write-protect faults)
    setups.append(["--threads", "2", "--state", "scan"])
# the same stack overflow message on every engine, event stacks of time-sharing or not
# (ThreadSanitizer cannot reliably follow the longjmp out of the fault handler with which the
# parallel engines defer a crash: there only the sequential engine's reports are checked)
# (AddressSanitizer's own bookkeeping fails now and then - 1-2 runs in 20 on a loaded machine,
# with or without safe events - on a stack overflow caught by page tracking's fault handler,
# and on one where ticks preempt the recursion on an event stack (seen twice in full suite
# runs beside another build, never in 8 runs alone): "CHECK failed: asan_thread.cpp ...
# kCurrentStackFrameMagic"; release builds test both cases)
asan = build_kind(kairos) == "asan"
for sync in setups[:1] if tsan else setups:
    for c, needles in crashes.items():
        if asan and c == 17 and ("page" in sync or "tick" in sync):
            continue
        expect(1, needles, "run", misuse, "--lps", "2", "--end", "10", *sync, "-P", f"case={c}")
# a crash outside every model callback (a thread of the model's own): an internal error
# saying where it was and its callers, for addr2line on the same build
if not tsan:  # (exit 3, which run() takes for a crash of the engine itself)
    p = subprocess.run([kairos, "run", misuse, "--lps", "2", "--end", "10", "-P", "case=25"],
                       capture_output=True, text=True, timeout=120)
    for n in ["kairos: internal error: SIGSEGV at address 0x8 in engine code",
              "with where it was: (in libmisuse.so+0x", "addr2line -f -e", "; called from "]:
        if p.returncode != 3 or n not in p.stderr:
            fail(f"a crash outside the callbacks: exit {p.returncode}, lacks {n!r}:\n{p.stderr}")
    t.ok("a crash outside every callback: exit 3, an internal error saying where and whence")
for sync in setups[:1] if tsan else setups[:4]:
    expect(1, crashes[17][:2] + ["64 KiB"], "run", misuse, "--lps", "2", "--end", "10", *sync,
           "--stack-kb", "64", "-P", "case=17")

# time-sharing options
expect(2, ["--preempt must be off, return, tick or adaptive", "'often'"], "run", "phold",
       "--preempt", "often")
expect(2, ["--tick-us must be from 20 to 1000000"], "run", "phold", "--tick-us", "1")
expect(2, ["--tick-us must be from 20 to 1000000"], "run", "phold", "--tick-us", "8")
expect(2, ["--tick-us needs a positive number"], "run", "phold", "--tick-us", "fast")
# (an infinite period was accepted and turned into an undefined number of nanoseconds)
expect(2, ["--gvt-period must be from 0 to 60000 milliseconds, got inf"], "run", "phold",
       "--gvt-period", "inf")
expect(2, ["--alpha needs a number of at least -1"], "run", "phold", "--alpha", "-2")
expect(2, ["--stack-kb must be from 16 to 1048576"], "run", "phold", "--stack-kb", "4")
expect(2, ["--event-timeout needs seconds"], "run", "phold", "--event-timeout", "-1")
# a parameter's declared range (struct kr_param min, max) is checked before the run
expect(2, ["parameter 'batch' of model 'datastore' must be from 1 to 1024, got 0 (-P)"], "run",
       "datastore", "--lps", "4", "--end", "1", "-P", "batch=0")
expect(2, ["parameter 'locality' of model 'datastore' must be from 0 to 1, got 1.5"], "run",
       "datastore", "--lps", "4", "--end", "1", "-P", "locality=1.5")
expect(1, ["remote accesses need at least 2 nodes"], "run", "datastore", "--lps", "1", "--end", "1")
# a model built against another layout of kairos.h is refused, not misread
expect(2, ["built against an older kairos.h", "rebuild it"], "run",
       os.path.join(build, "liboldabi.so"), "--end", "1")
expect(2, ["calibrate: unknown option '--bogus'"], "calibrate", "--bogus", "1")
expect(2, ["--ticks needs a comma-separated list"], "calibrate", "--ticks", "50,x")
expect(2, ["--seconds takes one number", "'0.5,0.6'"], "calibrate", "--seconds", "0.5,0.6")
for mode in ("page", "buddy"):
    expect(1, ["model 'misuse', LP 1, virtual time 2, event type 2", "in the state of LP 0",
               "private"], "run", misuse, "--lps", "2", "--end", "10", "--state", mode,
           "-P", "case=18")

# --state chunk: refused for models that do not mark writes; --check finds missed marks
expect(2, ["--state must be full, chunk, page, buddy, scan or reverse", "'bogus'"], "run", "phold", "--state", "bogus")
expect(2, ["--ckpt-full-every must be from 1 to 65535"], "run", "phold", "--ckpt-full-every", "0")
expect(2, ["--ckpt-interval needs a whole number"], "run", "phold", "--ckpt-interval", "often")
expect(2, ["--state chunk", "model 'misuse' does not declare", "KR_MODEL_MARKS_WRITES",
           "--state page or buddy"], "run", misuse, "--state", "chunk")
unmarked = os.path.join(build, "libchaos_unmarked.so")
expect(1, ["model 'chaos', LP", "--check: the event wrote byte", "without marking it",
           "kr_touch"], "run", unmarked, "--lps", "8", "--end", "20", "--sync", "sequential",
       "--state", "chunk", "--check")

# --check catches a model that keeps state in a static variable: the event that writes the
# model's global memory is named, with where (issue 35, 13: a write that changes no LP's
# state - a counter printed in finish - passed before)
expect(1, ["model 'misuse', LP 1, virtual time 2, event type 2", "--check: the event wrote to "
           "the model's global or static memory", "libmisuse.so, offset 0x", "nm -n"],
       "run", misuse, "--lps", "2", "--end", "10", "--sync", "sequential", "--check", "-P", "case=13")
expect(1, ["model 'hazard', LP ", "--check: the event wrote to the model's global or static "
           "memory"], "run", os.path.join(build, "libhazard.so"), "--lps", "4", "--end", "10",
       "-P", "case=27", "--sync", "sequential", "--check")
rc, out, err = run(kairos, "run", misuse, "--lps", "2", "--end", "10", "--sync", "sequential", "-P", "case=13")
t.ok("without --check the same model runs (the check is what finds it)")
# ...and one that reads another LP's state through a pointer kept in a global: the first
# such read is named, at its event (issue 35, 14)
expect(1, ["model 'hazard', LP 5, virtual time 10.03", "--check: the model read address ",
           "in the state of LP 0, through a pointer it kept", "kr_query"],
       "run", os.path.join(build, "libhazard.so"), "--lps", "16", "--end", "20", "-P",
       "case=30", "-P", "at=10", "--sync", "sequential", "--check")
# (queries reach the other LP's state the sanctioned way; --end 2: 92 160 queries, and
# --check opens and closes the target's state around each, two mprotect calls)
for check in ([], ["--check"]):
    run(kairos, "run", os.path.join(build, "libquery.so"), "--end", "2", "--sync",
        "sequential", *check)
instr = os.path.join(build, "libchaos_instr.so")  # (not in sanitizer builds)
if os.path.exists(instr):
    run(kairos, "run", instr, "--lps", "64", "--end", "20", "--sync", "sequential", "--check",
        "--state", "chunk")
t.ok("--check lets an event reach its own LP's state and a query its target's")

# an error on a wrong speculative path only must not fail the run
ref = None
# an event's error or crash, done()'s crash or error (crashes: not under TSan, as above)
for case in ("0", "24") if tsan else ("0", "19", "23", "24"):
    ref = None
    for sync in (["--sync", "sequential"], ["--threads", "2"], ["--threads", "2"],
                 ["--threads", "2", "--state", "page"]):
        rc, out, err = run(kairos, "run", misuse, "--lps", "2", "--end", "10", *sync, "-P", f"case={case}")
        d = digest(err)
        ref = ref or d
        if d != ref:
            fail(f"speculative-error run digest {d} != {ref}")
t.ok("an error or a crash on a rolled-back speculative path is discarded")
t.finish()
