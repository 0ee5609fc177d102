"""Time-sharing (--preempt): every preemption mode gives the sequential engine's run digest
and output for every model, with ticks frequent enough to preempt events at arbitrary
instructions (phold with busy work, pcs floating point); an endless loop on a wrong
speculative path is broken by preemption and rolled back; an endless loop on the committed
path is reported after --event-timeout."""
import json
import os
import shutil
import sys
import tempfile
from common import run, fail, digest, committed, Tally, build_kind

kairos, build = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp(prefix="kairos-preempt-")
# Hermetic: the default --tick-us comes from this file (absent until calibrate writes it).
os.environ["KAIROS_CALIBRATION"] = os.path.join(tmp, "calibration")
ring = os.path.join(build, "libring.so")
chaos = os.path.join(build, "libchaos.so")
spin = os.path.join(build, "libspinloop.so")
plain = os.path.join(build, "libplainheap_wrap.so")
t = Tally()

models = {
    "phold-busy": ["phold", "--lps", "64", "--end", "20", "-P", "busy_us=40", "-P", "lookahead=0.01"],
    "phold-std": ["phold", "--end", "100"],
    "queueing": ["queueing", "--lps", "16", "--end", "300"],
    "chaos": [chaos, "--lps", "32", "--end", "20"],
    "ring": [ring, "--lps", "16", "--end", "inf", "-P", "laps=100"],
    "membench": ["membench", "--lps", "16", "--end", "30", "-P", "state=20000"],
    "pcs": ["pcs", "--lps", "16", "--end", "2", "-P", "channels=200"],
    "plainheap-wrap": [plain, "--lps", "16", "--end", "30"],
    "datastore": ["datastore", "--lps", "16", "--end", "10", "-P", "op_us=20"],
}
modes = [["--preempt", "off"], ["--preempt", "return"], ["--preempt", "tick", "--tick-us", "100"],
         ["--preempt", "adaptive"], ["--preempt", "adaptive", "--alpha", "-1", "--tick-us", "200"]]
# A ThreadSanitizer build has no time-sharing (signals are deferred): what remains to test
# there is plain Time Warp against the sequential engine, and the event timeouts.
tsan = build_kind(kairos) == "tsan"
if tsan:
    modes = modes[:1]
    print("note: ThreadSanitizer build: only --preempt off is tested")


def ts_line(err):
    """The run's --stats "time_sharing" object (None without time-sharing)."""
    return err.stats.get("time_sharing")


ticked = 0
for name, args in models.items():
    rc, ref_out, err = run(kairos, "run", *args, "--sync", "sequential")
    ref, n = digest(err), committed(err)
    for mode in modes:
        for th in ("1", "2", "4"):
            if th == "4" and mode[1] not in ("tick", "return") and not tsan:
                continue
            extra = ["--state", "page"] if name == "membench" and th == "2" else []
            rc, out, err = run(kairos, "run", *args, "--threads", th, *mode, *extra)
            if digest(err) != ref or committed(err) != n or out != ref_out:
                fail(f"{name} {mode} threads {th}: digest {digest(err)} vs {ref}, "
                     f"{committed(err)} vs {n} events, output equal: {out == ref_out}")
            s = ts_line(err)
            if mode[1] != "off" and s is None:
                fail(f"{name} {mode}: no time-sharing statistics:\n{err}")
            if s:
                ticked += s["preempted_by_ticks"]
    t.ok(f"{name}: every --preempt mode at 1/2/4 threads matches sequential ({ref})")
if ticked == 0 and not tsan:
    fail("no event was ever preempted by a tick: the asynchronous path went untested")
t.ok(f"{ticked} preemptions by ticks across the matrix")

# An endless loop on a wrong speculative path: broken by preemption (plain Time Warp would
# spin for ever), the event abandoned and run again after the straggler. (--balance off:
# both workers hold LPs from the start - the balancer starts a run on one worker, in
# lone mode, where nothing is speculative.)
rc, ref_out, err = run(kairos, "run", spin, "--lps", "4", "--end", "20", "--sync", "sequential")
ref = digest(err)
for mode in ([] if tsan else (["--preempt", "return"], ["--preempt", "tick"], ["--preempt", "adaptive"])):
    rc, out, err = run(kairos, "run", spin, "--lps", "4", "--end", "20", "--threads", "2",
                       "--balance", "off", *mode)
    s = ts_line(err)
    if digest(err) != ref or out != ref_out or "passed the gate at time 10" not in out:
        fail(f"speculative loop {mode}: digest {digest(err)} vs {ref}; output {out!r}")
    if not s or s["rolled_back"] < 1:
        fail(f"speculative loop {mode}: the looping event was not preempted and rolled back:\n{err}")
    pre = s["preempted_at_calls"] + s["preempted_by_ticks"] + s["preempted_by_slice"]
    t.ok(f"speculative endless loop broken by preemption ({mode[1]}: {pre} preemptions, "
         f"{s['rolled_back']} rolled back)")

# An endless loop on the committed path: a model error after --event-timeout.
for th in (["--threads", "1"], ["--threads", "2"], ["--sync", "sequential"],
           ["--threads", "2", "--preempt", "off"], ["--sync", "conservative", "--threads", "1"],
           ["--sync", "conservative", "--threads", "2", "--handoff", "pull"]):
    rc, out, err = run(kairos, "run", spin, "--lps", "4", "--end", "20", *th,
                       "--event-timeout", "0.5", "-P", "case=1", check=False)
    want = ["model 'spinloop', LP 0, virtual time 1, event type 3", "more than 0.5 s",
            "--event-timeout", "endless loop"]
    if rc != 1 or any(w not in err for w in want):
        fail(f"committed loop, threads {th}: exit {rc}, expected a timeout error:\n{err}")
    t.ok(f"committed endless loop reported after --event-timeout ({' '.join(th)})")

# The same after 199 quick events of the looping type: the conservative engine runs that
# type on the scheduler thread by then (--offload auto), and its watchdog slot is watched too.
for th in (["--sync", "sequential"], ["--threads", "2"], ["--sync", "conservative", "--threads", "1"],
           ["--sync", "conservative", "--threads", "1", "--offload", "always"]):
    rc, out, err = run(kairos, "run", spin, "--lps", "4", "--end", "1000", *th,
                       "--event-timeout", "0.5", "-P", "case=2", check=False)
    want = ["model 'spinloop', LP 0, virtual time 200, event type 4", "more than 0.5 s"]
    if rc != 1 or any(w not in err for w in want):
        fail(f"committed loop after quick events, {th}: exit {rc}, expected a timeout error:\n{err}")
    t.ok(f"committed endless loop after quick events of its type reported ({' '.join(th)})")

# Plain Time Warp: the watchdog signals the looping worker, whose event ends as a model error
# at its key - rolled back by the straggler, with the error - and the run ends as the
# sequential one (issue 35). (ThreadSanitizer cannot unwind it: reported, with advice.)
# (--balance off: two workers speculating from the start, as above)
rc, out, err = run(kairos, "run", spin, "--lps", "4", "--end", "20", "--threads", "2",
                   "--balance", "off", "--preempt", "off", "--event-timeout", "0.5", check=False)
if tsan:
    if rc != 1 or "LP 1, virtual time 10, event type 1" not in err or \
            "--preempt return or tick" not in err:
        fail(f"speculative loop under --preempt off: exit {rc}, expected a timeout error:\n{err}")
    t.ok("speculative endless loop under --preempt off: reported after --event-timeout")
else:
    _, ref_out, ref_err = run(kairos, "run", spin, "--lps", "4", "--end", "20", "--sync",
                              "sequential")
    if rc != 0 or digest(err) != digest(ref_err) or out != ref_out:
        fail(f"speculative loop under --preempt off: exit {rc}, want the sequential run's "
             f"end (its digest {digest(ref_err)}):\n{err}")
    t.ok("speculative endless loop under --preempt off: unwound by the watchdog, rolled back, "
         "the sequential digest")


def tick_of_run():
    stats = os.path.join(tmp, "s.json")
    rc, out, err = run(kairos, "run", "phold", "--end", "5", "--threads", "2", "--stats", stats)
    ts = json.load(open(stats))["time_sharing"]
    return ts["tick_us"], ts["tick_from"], err


if tsan:  # (calibrate measures ticks, which a ThreadSanitizer build defers)
    shutil.rmtree(tmp, ignore_errors=True)
    t.finish()
    sys.exit(0)

# kairos calibrate saves a period (here the only one measured, with a limit every period
# meets or, if ticks cost more here, as the longest measured) and later runs default to it.
tick, src, err = tick_of_run()
if (tick, src) != (1000, "default") or "uncalibrated default" not in err:
    fail(f"uncalibrated run: tick {tick} from {src}, expected 1000 from default:\n{err}")
rc, out, err = run(kairos, "calibrate", "--threads", "1", "--ticks", "2000", "--seconds", "0.05",
                   "--reps", "1", "--limit", "100")
if "tick_us 2000" not in open(os.environ["KAIROS_CALIBRATION"]).read() or "2000" not in out:
    fail(f"calibrate did not save --tick-us 2000:\n{out}{err}")
tick, src, err = tick_of_run()
if (tick, src) != (2000, "calibration") or "uncalibrated" in err:
    fail(f"calibrated run: tick {tick} from {src}, expected 2000 from calibration")
t.ok("kairos calibrate saves the period; later runs take it (and say when they run uncalibrated)")
shutil.rmtree(tmp, ignore_errors=True)
t.finish()
