"""Reverse computation (struct kr_model.reverse, kr_reverse_area, --state reverse: issue 38
item 2) on a model written against kairos.h (tests/models/revstate.c: a 16 KiB table per
LP, each event changing one slot). With --state reverse the optimistic engine takes no
checkpoint and undoes rolled-back events with the model's reverse handler: every layout
gives the sequential digest and output, and rolls back. `--check --state reverse` runs
each event, its reverse handler and the event again; a reverse handler that leaves the
state changed is named (LP, time, event type, "in its reverse handler", the byte). What reverse
computation cannot cover is refused with a message: a model without a reverse handler,
--preempt tick, a send from a reverse handler, a timer, reverse_bytes without reverse.
(The ROSS layer's reverse handlers: ross.py.)"""
import os
import sys
from common import run, fail, digest, committed, Tally, expect_exit, build_kind

kairos, build = sys.argv[1], sys.argv[2]
model = os.path.join(build, "librevstate.so")
t = Tally()

args = [model, "--lps", "128", "--end", "200"]
rc, ref_out, err = run(kairos, "run", *args, "--sync", "sequential")
ref, n = digest(err), committed(err)
if n < 10000 or "does not add up" in ref_out or ref_out.count(" events, sum ") != 128:
    fail(f"the sequential run: {n} events, output:\n{ref_out[:400]}")
layouts = [["--threads", "1"], ["--threads", "2"], ["--threads", "3", "--gvt-period", "0.05"],
           ["--threads", "2", "--cancel", "lazy"], ["--threads", "2", "--balance", "storm"],
           ["--sync", "conservative", "--conservative", "windows", "--threads", "2"],
           ["--sync", "sequential", "--check"]]
rolled = 0
for lay in layouts:
    rc, out, e = run(kairos, "run", *args, *lay, "--state", "reverse")
    if digest(e) != ref or out != ref_out or committed(e) != n:
        fail(f"{lay} --state reverse: digest {digest(e)} ({committed(e)} events), "
             f"sequential {ref} ({n}), or another output")
    if "sequential" not in lay and e.stats["state_saving"]["mode"] != "reverse":
        fail(f"{lay}: --stats does not say the reverse mode ran")
    rolled += e.stats.get("rollbacks", 0) or 0
if not rolled:
    fail("no --state reverse run rolled back: the reverse handler was never called")
t.ok(f"--state reverse on {len(layouts)} layouts: the sequential digest and output "
     f"({n} events, {rolled} rollbacks undone by the reverse handler)")

# the same model under checkpoints: reverse_bytes' area is scratch there, same answer
for lay in (["--threads", "2"], ["--threads", "2", "--state", "page"]):
    rc, out, e = run(kairos, "run", *args, *lay)
    if digest(e) != ref or out != ref_out:
        fail(f"{lay}: digest {digest(e)}, sequential {ref}, or another output")
if build_kind(kairos) != "tsan":
    rc, out, e = run(kairos, "run", *args, "--threads", "2", "--preempt", "adaptive",
                     "--state", "reverse")
    if digest(e) != ref or out != ref_out:
        fail("--preempt adaptive --state reverse: another digest or output")
t.ok("checkpointed modes and --preempt adaptive (which stays off) give the same answer")

# --check: event, reverse, event - a wrong reverse handler is named
expect_exit(kairos, t, 1, ["in its reverse handler", "event type 0", "LP ",
                           "does not undo everything", "byte 0 of the state root"],
            "run", *args, "--sync", "sequential", "--check", "--state", "reverse",
            "-P", "bad=1")
# what reverse computation cannot do is refused, saying what to do (bad=2 is seen when a
# handler runs: --balance off keeps both workers speculating from the start, where the
# balancer starts a run on one worker, in lone mode, which reverses nothing)
expect_exit(kairos, t, 1, ["kr_schedule in a reverse handler", "in its reverse handler"],
            "run", *args, "--threads", "2", "--balance", "off", "--state", "reverse",
            "-P", "bad=2")
expect_exit(kairos, t, 1, ["kr_timer_set under --state reverse", "--state full"],
            "run", *args, "--threads", "2", "--state", "reverse", "-P", "bad=3")
expect_exit(kairos, t, 2, ["model 'phold' has no reverse handler", "--state full"],
            "run", "phold", "--end", "10", "--state", "reverse")
expect_exit(kairos, t, 2, ["declares reverse_bytes but no reverse handler"],
            "run", os.path.join(build, "librevstate_norev.so"), "--end", "10")
if build_kind(kairos) != "tsan":
    expect_exit(kairos, t, 2, ["--state reverse with --preempt tick"],
                "run", *args, "--state", "reverse", "--preempt", "tick")
t.finish()
