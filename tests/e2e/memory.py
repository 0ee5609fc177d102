#!/usr/bin/env python3
"""--memory-max (issue 16 part 3): events, checkpoints and LP states together under a budget.
The sequential engine holds what a run needs and fails, naming the amounts, when that is
over the budget. The optimistic engine stops speculating and rolls LPs back to stay under
it: at a budget a little above the sequential engine's peak it must still finish with the
sequential digest and output, on 2 and 4 threads and in two state modes; below what the run
needs it fails with the same kind of message; the conservative engine refuses the option."""
import sys
from common import run, fail, digest, Tally, stats_of, expect_exit, build_kind

kairos, build = sys.argv[1], sys.argv[2]
# (a sanitizer build runs 4 threads with --check 5-50x slower: one pressure run there)
PRESSURE_RUNS = 1 if build_kind(kairos) in ("asan", "tsan") else 3
t = Tally()

CASES = [
    ("phold 4 KB states", ["phold", "--lps", "2048", "-P", "state_bytes=4000", "--end", "200"]),
    ("chaos", [f"{build}/libchaos.so", "--lps", "64", "--end", "30"]),
    ("pcs", ["pcs", "--lps", "64", "--end", "0.3"]),
]


def case(name, margs):
    out, err, st = stats_of(kairos, [*margs, "--sync", "sequential", "--memory-max", "64G"])
    mem = st.get("memory")
    if not mem or mem["budget_bytes"] != 64 << 30 or not mem["peak_bytes"]:
        fail(f"{name}: --stats has no memory section with the budget and a peak: {mem}")
    if mem["peak_checkpoint_bytes"] or \
            mem["peak_bytes"] > mem["peak_event_bytes"] + mem["peak_state_bytes"]:
        fail(f"{name}: the sequential engine's peak is not of events and states ({mem})")
    need = mem["peak_bytes"]
    limited = sent = 0
    for factor, layouts in ((1.2, [["--threads", "2"], ["--threads", "4"],
                                   ["--threads", "2", "--state", "buddy"]]),
                            (2, [["--threads", "2"], ["--threads", "3", "--check"]])):
        budget = int(need * factor)
        if "--state" in layouts[-1] and factor == 1.2:
            budget = int(need * 3)  # (a base copy of every state besides the state)
        for layout in layouts:
            args = [*margs, *layout, "--memory-max", str(budget)]
            o, e, s = stats_of(kairos, args)
            if digest(e) != digest(err) or o != out:
                fail(f"{name} {' '.join(args)}: digest {digest(e)} vs sequential {digest(err)}, "
                     f"output equal: {o == out}")
            limited += s["memory"]["memory_limited_rollbacks"]
            sent += s["memory"]["sendbacks"]
    t.ok(f"{name}: sequential peak {need} bytes; at 1.2x and 2x on 2-4 threads the sequential "
         f"digest and output ({limited} memory-limited rollbacks, {sent} sendbacks)")
    small = str(need // 2)
    for layout in (["--sync", "sequential"], ["--threads", "2"]):
        expect_exit(kairos, t, 1, ["kairos: error: --memory-max ", "is below what this run needs",
                                   "raise --memory-max"],
                    "run", *margs, *layout, "--memory-max", small)


def case_pressure():
    """4 threads on 2 cores at 1.1x the sequential peak: threads that run ahead are rolled
    back and senders asked to take their pending events back (sendback), repeatedly; every
    run must still commit the sequential history (--check verifies the engine's invariants
    on the way)."""
    margs = ["phold", "--lps", "4096", "-P", "state_bytes=4000", "--end", "300"]
    out, err, st = stats_of(kairos, [*margs, "--sync", "sequential", "--memory-max", "64G"])
    budget = str(int(st["memory"]["peak_bytes"] * 1.1))
    limited = sent = 0
    for _ in range(PRESSURE_RUNS):
        o, e, s = stats_of(kairos, [*margs, "--threads", "4", "--check", "--memory-max", budget])
        if digest(e) != digest(err) or o != out:
            fail(f"under memory pressure: digest {digest(e)} vs sequential {digest(err)}")
        limited += s["memory"]["memory_limited_rollbacks"]
        sent += s["memory"]["sendbacks"]
    t.ok(f"4 threads at 1.1x the sequential peak, {PRESSURE_RUNS} run(s): the sequential "
         f"digest ({limited} "
         f"memory-limited rollbacks, {sent} sendbacks)")


def case_one_rule():
    """Issue 35, 3: one rule on every engine. What a run needs - its pending events and LP
    states - is measured alike everywhere; past the budget right after init (or after the
    snapshot a resumed run starts from) every engine fails at virtual time 0 with the same
    message; a budget below what the run reaches later fails on every engine, one above its
    peak passes on every engine."""
    margs = ["phold", "--lps", "2048", "-P", "state_bytes=4000", "--end", "50"]
    engines = [["--sync", "sequential"], ["--threads", "1"], ["--threads", "2"],
               ["--threads", "2", "--state", "page"]]
    msgs = set()
    for eng in engines:
        _, err = expect_exit(kairos, t, 1, ["needs at virtual time 0: ", "(pending events ",
                                            "LP states ", "which every engine holds"],
                             "run", *margs, *eng, "--memory-max", "2M")
        msgs |= {ln for ln in err.splitlines() if ln.startswith("kairos: error:")}
    if len(msgs) != 1:
        fail(f"after init, the engines word the need differently: {sorted(msgs)}")
    for name, margs, low in (("chaos", [f"{build}/libchaos.so", "--lps", "64", "--end", "30"],
                              "200K"),
                             ("queueing", ["queueing", "--end", "50"], "150K")):
        for eng in engines[:3]:
            expect_exit(kairos, t, 1, ["is below what this run needs at virtual time"], "run",
                        *margs, *eng, "--memory-max", low)
            run(kairos, "run", *margs, *eng, "--memory-max", "64M")
        t.ok(f"{name}: --memory-max {low} fails and 64M passes on every engine")


for name, margs in CASES:
    case(name, margs)
case_one_rule()
case_pressure()
expect_exit(kairos, t, 2, ["--memory-max is for the sequential and optimistic engines and the "
                          "conservative engine's windows scheme"],
            "run", "phold", "--end", "10", "--sync", "conservative", "--conservative", "horizon",
            "--memory-max", "10M")
expect_exit(kairos, t, 0, [], "run", "phold", "--end", "10", "--sync", "conservative",
            "--conservative", "windows", "--memory-max", "64M")
t.finish()
