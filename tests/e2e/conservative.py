"""The conservative engine (--sync conservative) keeps the determinism contract: every model
that can run there (events with durations or a lookahead) gives the sequential engine's run
digest, committed count and output at 1, 2 and 4 workers (more threads than cores included),
with push and pull handoff, event-free and event barriers, the scheduler running events or
not, short events kept on the scheduler or always handed out; done() ends the run after the same event; zero durations run correctly (one at a time);
and a run really overlaps events (more than one in flight)."""
import json
import os
import re
import sys
import tempfile
from common import run, fail, digest, committed, Tally

kairos, build = sys.argv[1], sys.argv[2]
ring = os.path.join(build, "libring.so")
chaos = os.path.join(build, "libchaos.so")
misuse = os.path.join(build, "libmisuse.so")
t = Tally()

configs = {
    "phold-std": ["phold", "--end", "100"],
    "phold-mesh": ["phold", "--lps", "64", "-P", "mesh=8", "-P", "population=3", "--end", "30"],
    "phold-mixed": ["phold", "--lps", "256", "--end", "40", "-P", "remote=0.3", "-P", "population=3",
                    "-P", "state_bytes=200", "-P", "lookahead=0.01"],
    # lookahead 0: every event lasts 0, so nothing may overlap
    "phold-zero-durations": ["phold", "--lps", "64", "--end", "20", "-P", "lookahead=0"],
    "ring-done": [ring, "--lps", "16", "--end", "inf", "-P", "laps=300"],
    "ring-end-first": [ring, "--lps", "16", "--end", "50", "-P", "laps=300"],
    "null": ["null", "--lps", "120", "--end", "inf", "-P", "events=300"],
    # heap churn, random payloads, prints from events, sends at the end of the span
    "chaos-spans": [chaos, "--lps", "64", "--end", "30", "-P", "span=0.05"],
    "chaos-spans-done": [chaos, "--lps", "16", "--end", "inf", "-P", "span=0.02", "-P",
                         "done_after=200"],
    # expanded-event formulations of the TWOS queueing network and PCS (send times drawn by
    # the sender; departures forwarded at arrival)
    "queueing-spans": ["queueing", "-P", "spans=1", "--lps", "16", "--end", "300"],
    "pcs-spans": ["pcs", "-P", "spans=1", "--lps", "16", "--end", "0.3", "-P", "channels=200"],
    # a speculative-only error in the optimistic engine is no error here either
    "misuse-ok": [misuse, "--lps", "2", "--end", "10", "-P", "spans=1"],
}
variants = [[], ["--offload", "always"], ["--handoff", "pull"], ["--barriers", "events"],
            ["--barriers", "events", "--offload", "always"], ["--scheduler-works", "off"],
            ["--handoff", "pull", "--barriers", "events"]]

for name, args in configs.items():
    rc, ref_out, err = run(kairos, "run", *args, "--sync", "sequential")
    ref, ref_n = digest(err), committed(err)
    if ref_n == 0:
        fail(f"{name}: nothing committed")
    for workers in ("1", "2", "4"):
        for v in variants:
            if v and workers == "4":
                continue
            rc, out, err = run(kairos, "run", *args, "--sync", "conservative", "--conservative",
                               "horizon", "--threads", workers, *v)
            if digest(err) != ref or committed(err) != ref_n:
                fail(f"{name} {workers} workers {v}: digest {digest(err)} / {committed(err)} events, "
                     f"sequential {ref} / {ref_n}\n{err}")
            if out != ref_out:
                fail(f"{name} {workers} workers {v}: committed output differs from sequential")
    # (--check at 3: windows restores state where it speculates, as the optimistic engine
    # does - under --check its checkpoints once leaked, ASan found)
    for workers in ("1", "2", "3", "4"):
        rc, out, err = run(kairos, "run", *args, "--sync", "conservative", "--conservative",
                           "windows", "--threads", workers,
                           *(["--check"] if workers == "3" else []))
        if digest(err) != ref or committed(err) != ref_n or out != ref_out:
            fail(f"{name} windows, {workers} threads: digest {digest(err)} / {committed(err)} "
                 f"events, sequential {ref} / {ref_n}; output the same: {out == ref_out}\n{err}")
        # (PHOLD: a lookahead and no done() - ring and chaos have one - so nothing speculates)
        if workers != "1" and not re.search(r"rollbacks: +0 ", err) and \
                name.startswith("phold") and "lookahead=0" not in args:
            fail(f"{name} windows, {workers} threads: a positive lookahead, and rolled back:\n{err}")
    t.ok(f"{name}: digest {ref} ({ref_n} events) at 1, 2, 4 workers and every variant of "
         "horizon, and at 1-4 threads of windows (3 under --check)")

# events overlap (mean in flight above 1) where durations allow, and never with zero ones
with tempfile.TemporaryDirectory() as d:
    def in_flight(args):
        path = os.path.join(d, "s.json")
        run(kairos, "run", *args, "--sync", "conservative", "--conservative", "horizon",
            "--threads", "2", "--scheduler-works", "off", "--stats", path)
        s = json.load(open(path))
        if s["engine"] != "conservative" or s["conservative"]["workers"] != 2:
            fail(f"stats do not describe the conservative run: {s['engine']}, {s.get('conservative')}")
        return s["conservative"]["mean_in_flight"]
    m = in_flight(configs["null"])
    if m <= 1.2:
        fail(f"null model: {m} events in flight on average, expected overlap")
    z = in_flight(configs["phold-zero-durations"])
    if z != 1.0:
        fail(f"zero durations: {z} events in flight on average, expected exactly 1")
    t.ok(f"events overlap where durations allow ({m:.2f} in flight), never with zero durations")

# --offload auto keeps short event types on the scheduler and hands out long ones. The bound
# is set far from both (empty events take well under 50 us even under ThreadSanitizer; the
# busy ones spin 300 us of wall time), so that a slow machine does not change the answer.
with tempfile.TemporaryDirectory() as d:
    def on_workers(args):
        path = os.path.join(d, "s.json")
        run(kairos, "run", *args, "--sync", "conservative", "--conservative", "horizon",
            "--threads", "1", "--offload-us", "50", "--stats", path)
        s = json.load(open(path))
        return sum(th["processed"] for th in s["threads_detail"][1:]) / s["committed_events"]
    short = on_workers(configs["null"])
    busy = on_workers(["phold", "--lps", "64", "--end", "5", "-P", "busy_us=300"])
    if short > 0.01 or busy < 0.2:
        fail(f"--offload auto: workers ran {short:.3f} of the null model's events (expected "
             f"almost none) and {busy:.3f} of 300 us events (expected a good share)")
    t.ok(f"--offload auto: workers ran {short:.4f} of empty events, {busy:.2f} of 300 us ones")

# --conservative auto: windows for a model whose lookahead is known before the run (life:
# struct kr_model.lookahead; phold: run_lookahead), horizon for one whose lookahead is 0
# (phold -P lookahead=0) or none (null), or with done() (ring);
# the scheme is
# in the summary and --stats; Horizon's options beside windows are noted as unread.
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "s.json")
    life = os.path.join(build, "liblife.so")
    for args, want in (([life, "--lps", "64", "--end", "10"], "windows"),
                       (["phold", "--lps", "64", "--end", "10"], "windows"),
                       (["phold", "--lps", "64", "--end", "10", "-P", "lookahead=0"], "horizon"),
                       (configs["ring-done"], "horizon"),
                       (configs["null"], "horizon")):
        rc, out, err = run(kairos, "run", *args, "--sync", "conservative", "--threads", "2",
                           "--stats", path)
        s = json.load(open(path))
        if f"engine conservative ({want})" not in err or s.get("scheme") != want:
            fail(f"--conservative auto for {args[0]}: want {want}, got {s.get('scheme')}\n{err}")
    rc, out, err = run(kairos, "run", *configs["ring-done"], "--sync", "conservative",
                       "--conservative", "windows", "--handoff", "pull")
    if "--handoff is an option of the conservative engine's horizon scheme; this run uses its " \
       "windows scheme" not in err:
        fail(f"--handoff beside windows: want a note that it is not read\n{err}")
    rc, out, err = run(kairos, "run", *configs["ring-done"], "--sync", "conservative",
                       "--conservative", "windows", "--threads", "2")
    if "note:" in err:
        fail(f"--conservative windows alone: no note expected\n{err}")
    # run_lookahead: the value a parameter gives, refused when negative or beside `lookahead`
    runla = os.path.join(build, "librunla.so")
    _, ref_out, ref_err = run(kairos, "run", runla, "--lps", "32", "--end", "50", "--sync",
                              "sequential")
    rc, out, err = run(kairos, "run", runla, "--lps", "32", "--end", "50", "--sync",
                       "conservative", "--threads", "2")
    if "engine conservative (windows)" not in err or digest(err) != digest(ref_err) or \
            out != ref_out:
        fail(f"run_lookahead 0.5: want windows and the sequential digest and output\n{err}")
    for args, msg in (([runla, "-P", "la=-1"], "run_lookahead returned -1"),
                      ([os.path.join(build, "librunla_both.so")],
                       "declares both lookahead and run_lookahead")):
        rc, out, err = run(kairos, "run", *args, "--lps", "8", "--end", "5", check=False)
        if rc != 2 or msg not in err:
            fail(f"{args}: want exit 2 and '{msg}', got {rc}\n{err}")
    t.ok("--conservative auto: windows with a lookahead known before the run, else horizon; "
         "the scheme in "
         "the summary and --stats; Horizon's options beside windows noted as unread")
t.finish()
