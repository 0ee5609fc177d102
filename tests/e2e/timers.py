"""Timers (kr_timer_set / kr_timer_cancel / kr_timer_pending, issue 37 item 2). The timers test
model (tests/models/timers.c) checks the promises itself in every event - a waiting
customer's timer is pending and its cancel succeeds once, a renege fires only for a customer
still waiting, a timer that ran is neither pending nor cancellable, a zeroed kr_timer is
none - so a run that ends well kept them. Here: it does on every engine, thread count and
state mode with the sequential digest and output; cancelled timers' events are in the
committed trace marked "cancelled" and the others "ran", the same on every engine, and the
summary and --stats (timers_cancelled) count them; in same-time bundles (KR_MODEL_BUNDLES)
a bundle holds exactly the timers not cancelled (tests/models/tbundle.c checks each). (The digest matrix, the determinism driver, snapshots and
ranks run the model too.)"""
import json
import os
import sys
from common import run, fail, digest, committed, Tally, expect_exit, pick, build_kind

kairos, build = sys.argv[1], sys.argv[2]
model = os.path.join(build, "libtimers.so")
t = Tally()
tmp = os.path.join(build, "timers-test")
os.makedirs(tmp, exist_ok=True)

args = [model, "--lps", "64", "--end", "300"]
rc, ref_out, err = run(kairos, "run", *args, "--sync", "sequential")
ref, n = digest(err), committed(err)
skipped = err.stats["timers_cancelled"]
if rc != 0 or n < 10000 or ref_out.count("reneged") != 64 or "idle at" not in ref_out:
    fail(f"the sequential run: exit {rc}, {n} events, output:\n{ref_out[:500]}\n{err}")
reneged = sum(int(line.split()[5]) for line in ref_out.splitlines() if "reneged" in line)
if reneged == 0:
    fail("no customer reneged: no renege timer ran")
layouts = [["--sync", "sequential", "--check"],
           ["--sync", "sequential", "--check", "--state", "chunk"],
           ["--threads", "1"], ["--threads", "2"], ["--threads", "3", "--gvt-period", "0.05"],
           ["--threads", "2", "--state", "page"], ["--threads", "2", "--state", "chunk"],
           ["--threads", "2", "--cancel", "lazy"], ["--threads", "2", "--ckpt-interval", "5"]]
if build_kind(kairos) != "tsan":
    layouts.append(["--threads", "2", "--preempt", "tick"])
rolled = 0
for lay in layouts:
    rc, out, e = run(kairos, "run", *args, *lay)
    if digest(e) != ref or out != ref_out or committed(e) != n or \
            e.stats["timers_cancelled"] != skipped:
        fail(f"{lay}: digest {digest(e)} ({committed(e)} events), sequential {ref} ({n}), "
             f"or another output")
    rolled += e.stats.get("rollbacks", 0) or 0
if not rolled:
    fail("no optimistic run rolled back: timers were never undone")
t.ok(f"timers keep their promises with the sequential digest on {len(layouts)} layouts "
     f"({n} events, {reneged} reneges, {rolled} rollbacks)")

# Under --sync conservative every event the LP sends, to itself too, is at least the
# lookahead later: the model's zero=0 sets no timer at the current time.
z = args + ["-P", "zero=0"]
rc, zout, ze = run(kairos, "run", *z, "--sync", "sequential")
for lay in (["--sync", "conservative", "--threads", "1"], ["--sync", "conservative"]):
    rc, out, e = run(kairos, "run", *z, *lay)
    if digest(e) != digest(ze) or out != zout:
        fail(f"{lay}: digest {digest(e)}, sequential {digest(ze)}, or another output")
t.ok("the conservative engine commits the sequential history of a model with timers")


def trace(lay):
    path = os.path.join(tmp, f"trace.{len(os.listdir(tmp))}.json")
    run(kairos, "run", *args, *lay, "--trace", path)
    with open(path) as f:
        return json.load(f)["traceEvents"]


seq = trace(["--sync", "sequential"])
marks = {}
for ev in seq:
    k = ev["args"].get("timer")
    marks[(ev["name"], k)] = marks.get((ev["name"], k), 0) + 1
if not marks.get(("RENEGE", "cancelled")) or not marks.get(("RENEGE", "ran")) or \
        not marks.get(("IDLE", "cancelled")) or marks.get(("ARRIVE", "ran")) or \
        marks.get(("SERVED", "ran")) or not marks.get(("ARRIVE", None)):
    fail(f"the trace's timer marks: {marks}")
if marks[("RENEGE", "ran")] != reneged:
    fail(f"{marks[('RENEGE', 'ran')]} RENEGE timers ran in the trace, the model counted "
         f"{reneged} reneges")
if sum(c for (a, b), c in marks.items() if b == "cancelled") != skipped or \
        f"{skipped} of the committed events were cancelled timers" not in err:
    fail(f"the trace's cancelled timers {marks} do not add up to the summary's {skipped}")
if trace(["--threads", "2"]) != seq:
    fail("the committed trace of 2 threads differs from the sequential one")
t.ok(f"the committed trace marks timers' events ran or cancelled, alike on 2 threads: "
     f"{ {f'{a} {b}': c for (a, b), c in marks.items() if b} }")

# Same-time bundles: tbundle checks every bundle holds exactly the timers not cancelled
# beside its plain events; the timers model runs with KR_MODEL_BUNDLES too.
for lib, bargs in (("libtbundle.so", ["--lps", "16", "--end", "300"]),
                   ("libtimers_bundles.so", ["--lps", "32", "--end", "150"])):
    b = [os.path.join(build, lib), *bargs]
    rc, bout, be = run(kairos, "run", *b, "--sync", "sequential")
    if rc or not be.stats["timers_cancelled"]:
        fail(f"{lib}: exit {rc}, {be.stats['timers_cancelled']} cancelled timers")
    for lay in (["--sync", "sequential", "--check"], ["--threads", "1"], ["--threads", "2"],
                ["--threads", "3", "--state", "page"], ["--threads", "2", "--cancel", "lazy"],
                ["--sync", "conservative"] if lib == "libtbundle.so" else ["--threads", "3"]):
        rc, out, e = run(kairos, "run", *b, *lay)
        if digest(e) != digest(be) or out != bout:
            fail(f"{lib} {lay}: digest {digest(e)}, sequential {digest(be)}, or other output")
t.ok("timers in same-time bundles: a bundle holds exactly the timers not cancelled, on "
     "every engine")
t.finish()
