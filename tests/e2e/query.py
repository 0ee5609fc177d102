#!/usr/bin/env python3
"""Queries (kr_query, struct kr_model.query; issue 16 part 1). The query test model
(tests/models/query.c) checks every answer itself against a closed form of each LP's
count at the asking event - its own state before the event, a neighbour's, nested queries,
a cycle of queries back through the asker, and final states from finish - and fails the
run with kr_error on a wrong one. Here: those runs pass on the sequential engine (with
--check too) and on the optimistic engine in many layouts (threads, state modes, lazy
cancellation, --check, a memory budget), all with the sequential digest and output, and
with LPs rolled back to answer, and (--check: every asking event waits for another
thread's answer on its event stack) with other events run meanwhile; each misuse is the
same model error on both engines; the conservative engine (every event one at a time on its
scheduler) gives the sequential digest, output and answers, and the same misuse errors;
bundles that ask (tests/models/tbundle.c with TBUNDLE_QUERY) commit the sequential history
on both parallel engines; and a model built against the previous struct kr_model layout (no
query field) still loads."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from common import run, fail, digest, Tally, stats_of, expect_exit, build_kind, \
    scan_available, pick

kairos, build = sys.argv[1], sys.argv[2]
t = Tally()
MODEL = f"{build}/libquery.so"
SEQ = ["--sync", "sequential"]
kind = build_kind(kairos)

CASES = [  # (LPs, end, extra): every tick asks; some ask while others run ahead; many LPs
    (1, "6.5", []), (2, "9.5", []), (5, "20.5", []), (16, "40.5", []),
    (16, "80.5", ["-P", "every=5", "-P", "noise=1"]),
    (64, "60.5", ["-P", "every=17", "-P", "noise=1"]),
]
OPTIMISTIC = [["--threads", "1"], ["--threads", "2"], ["--threads", "3"], ["--threads", "4"],
              ["--threads", "2", "--check"], ["--threads", "2", "--cancel", "lazy"],
              ["--threads", "2", "--state", "page"],
              ["--threads", "3", "--state", "buddy", "--ckpt-interval", "3"],
              ["--threads", "2", "--memory-max", "4000000"],
              ["--threads", "2", "--preempt", "tick"], ["--threads", "2", "--safe", "off"],
              ["--threads", "2", "--state", "chunk"], ["--threads", "3", "--check"],
              ["--threads", "2", "--check", "--cancel", "lazy", "--state", "page"]] + \
             ([["--threads", "2", "--state", "scan"]] if scan_available(kairos) else [])
if kind == "tsan":  # (no time-sharing there: refused before the run)
    OPTIMISTIC = [o for o in OPTIMISTIC if "--preempt" not in o]


def case_answers():
    """(the quick tier: every other optimistic layout, the long tier every one)"""
    rolled = aside = 0
    layouts = pick(OPTIMISTIC[::2], OPTIMISTIC)
    for lps, end, extra in CASES:
        base = [MODEL, "--lps", str(lps), "--end", end, *extra]
        out, err, st = stats_of(kairos, [*base, *SEQ])
        out_c, err_c, _ = stats_of(kairos, [*base, *SEQ, "--check"])
        # (chunk mode: the swap for a query to the running LP keeps its written-chunk bits)
        out_k, err_k, _ = stats_of(kairos, [*base, *SEQ, "--check", "--state", "chunk"])
        if digest(err_k) != digest(err) or out_k != out:
            fail(f"{lps} LPs: --check --state chunk differs from the plain run")
        ticks = int(float(end))
        want = f"LP 0 ticked {ticks} times, LP {1 % lps} counts {(1 % lps + 1) * ticks}\n"
        if not out.endswith(want):
            fail(f"{lps} LPs: output does not end with {want!r}:\n{out[-500:]}")
        if digest(err) != digest(err_c) or out != out_c:
            fail(f"{lps} LPs: --check gives digest {digest(err_c)} vs {digest(err)}, output "
                 f"equal: {out == out_c}")
        if not st["queries"]["answered"]:
            fail(f"{lps} LPs: no query answered")
        for layout in layouts:
            o, e, s = stats_of(kairos, [*base, *layout])
            if digest(e) != digest(err) or o != out:
                fail(f"{lps} LPs {' '.join(layout)}: digest {digest(e)} vs sequential "
                     f"{digest(err)}, output equal: {o == out}")
            if s["queries"]["answered"] != st["queries"]["answered"]:
                fail(f"{lps} LPs {' '.join(layout)}: {s['queries']['answered']} queries "
                     f"answered, sequential {st['queries']['answered']}")
            rolled += s["queries"]["rollbacks_to_answer"]
            aside += s["queries"]["ran_while_waiting"] if "--check" in layout else 0
    if not rolled:
        fail("no LP was ever rolled back to answer a query: the test shows nothing of it")
    if not aside:
        fail("no event ran while an asker waited on its stack: the test shows nothing of it")
    t.ok(f"self, neighbour, nested, cyclic and finish queries answered from the state at the "
         f"asking event, sequential (--check too) and {len(layouts)} optimistic layouts "
         f"alike ({len(CASES)} cases; {rolled} LPs rolled back to answer, {aside} events "
         f"run while askers waited on their stacks)")


def case_misuse():
    handler = "in its query handler (asked by LP 0)"
    read_only = "in a query handler: a query only reads the LP's state"
    wrong = {
        1: (["--check"], [handler, "--check: the query handler changed the LP's state"]),
        2: ([], [handler, "kr_schedule " + read_only]),
        3: ([], ["LP 0, in init: kr_query in init"]),
        4: ([], ["kr_query: LP 0's query handler says its answer is 16 bytes, over the 8"]),
        5: ([], ["kr_query: 64 queries nested at virtual time 1", "cycle of queries"]),
        6: ([], [handler, "kr_random_u64 " + read_only]),
        7: ([], [handler, "kr_printf " + read_only]),
        8: ([], ["event type 0: kr_query: LP 6 is out of range"]),
        9: ([], ["kr_query: payload of 1032 bytes is over the limit of 1024"]),
        10: ([], ["in done() after init: kr_query in done()"]),
        11: ([], [handler, "refused by LP 0"]),
        12: ([], ["LP 2, virtual time 1, in its query handler (asked by LP 1): refused by "
                  "LP 2"]),
    }
    for case, (extra, needles) in wrong.items():
        msgs = []
        for layout in (SEQ, ["--threads", "2"], ["--threads", "2", "--check"]):
            _, err = expect_exit(kairos, t, 1, needles, "run", MODEL, "--lps", "3", "--end",
                                 "3.5", "-P", f"misuse={case}", *layout, *extra)
            msgs.append([line for line in err.splitlines() if "error:" in line])
        if msgs[0] != msgs[1] or msgs[0] != msgs[2]:
            fail(f"misuse={case}: the engines say it differently:\n{msgs}")
    # without --check, the write through the const pointer shows in the model's own check
    expect_exit(kairos, t, 1, ["nested: answer 1, expected 0"], "run", MODEL, "--lps", "3",
                "--end", "3.5", "-P", "misuse=1", *SEQ)


def case_conservative():
    """The conservative engine runs a model with queries one event at a time on its
    scheduler: the sequential digest, output and answers; the same misuse messages."""
    for lps, end, extra in CASES:
        base = [MODEL, "--lps", str(lps), "--end", end, *extra, "-P", "zero_lookahead=1"]
        out, err, st = stats_of(kairos, [*base, *SEQ])
        for layout in (["--sync", "conservative", "--threads", "1"], ["--sync", "conservative"]):
            o, e, s = stats_of(kairos, [*base, *layout])
            if digest(e) != digest(err) or o != out or \
                    s["queries"]["answered"] != st["queries"]["answered"]:
                fail(f"{lps} LPs {' '.join(layout)}: digest {digest(e)} vs {digest(err)}, "
                     f"output equal: {o == out}, answers {s['queries']['answered']}")
            if "every event ran on the scheduler, one at a time" not in e:
                fail(f"{lps} LPs {' '.join(layout)}: the summary does not say how it ran")
    for case in range(2, 13):
        args = ["run", MODEL, "--lps", "3", "--end", "3.5", "-P", f"misuse={case}", "-P",
                "zero_lookahead=1"]
        _, _, es = run(kairos, *args, *SEQ, check=False)
        _, _, ec = run(kairos, *args, "--sync", "conservative", check=False)
        ms = [line for line in es.splitlines() if "error:" in line]
        if not ms or ms != [line for line in ec.splitlines() if "error:" in line]:
            fail(f"misuse={case}: the conservative engine says\n{ec}\nthe sequential\n{es}")
    t.ok(f"the conservative engine answers queries as the sequential engine ({len(CASES)} "
         "cases at 1 and 2 workers) and reports each misuse alike")


def case_bundles():
    """Queries from same-time bundles (tbundle built with TBUNDLE_QUERY: every bundle of
    plain events and timers asks its own LP - the count before it, checked - and the next):
    the sequential digest on the optimistic engine, with bundles waiting for answers on
    their stacks (--check) and undone to ask, and on the conservative engine."""
    base = [f"{build}/libtbundle_query.so", "--lps", "64", "--end", "300"]
    out, err, st = stats_of(kairos, [*base, *SEQ])
    aside = undone = 0
    for layout in (["--threads", "1"], ["--threads", "2"], ["--threads", "3", "--check"],
                   ["--threads", "2", "--check", "--cancel", "lazy"],
                   ["--threads", "2", "--state", "page"], ["--sync", "conservative"]):
        o, e, s = stats_of(kairos, [*base, *layout])
        if digest(e) != digest(err) or o != out or \
                s["queries"]["answered"] != st["queries"]["answered"]:
            fail(f"tbundle_query {' '.join(layout)}: digest {digest(e)} vs {digest(err)}, "
                 f"output equal: {o == out}")
        aside += s["queries"]["ran_while_waiting"] if "--check" in layout else 0
        undone += s["queries"]["undone_to_ask"]
    if not undone:
        fail("no bundle was undone to ask: the test shows nothing of it")
    t.ok(f"bundles that ask queries commit the sequential history on both parallel engines "
         f"({undone} undone to ask, {aside} events run while one waited)")


def case_old_layout():
    """KR_ABI_VERSION 2 models (struct kr_model without `query`) load and run on every
    engine; the bytes after their table are never read as a query handler."""
    for layout in (SEQ, ["--threads", "2"], ["--sync", "conservative"]):
        _, out, _ = run(kairos, "run", f"{build}/libabi2.so", "--lps", "3", "--end", "3.5",
                        *layout)
        if out != "tick 1\ntick 2\ntick 3\n":
            fail(f"abi2 {' '.join(layout)}: printed {out!r}")
    t.ok("a model built against KR_ABI_VERSION 2 runs on all three engines")


def case_commo():
    """The built-in commo model (commanders ask readiness down the tree, from events and from
    finish) commits the sequential digest and output in optimistic layouts and state modes,
    with queries between threads."""
    base = ["commo", "--lps", "150", "--end", "40"]
    out, err, st = stats_of(kairos, [*base, *SEQ])
    if "engagements" not in out or not st["queries"]["answered"]:
        fail(f"commo: no summary or no queries:\n{out[-300:]}")
    remote = 0
    layouts = [["--threads", "1"], ["--threads", "2"], ["--threads", "3"],
               ["--threads", "2", "--state", "page"],
               ["--threads", "3", "--state", "buddy", "--ckpt-interval", "4"],
               ["--threads", "2", "--cancel", "lazy"],
               ["--threads", "2", "--check"], ["--threads", "2", "-P", "spread=0"]]
    for layout in layouts:
        o, e, s = stats_of(kairos, [*base, *layout])
        if "spread=0" in layout:
            continue  # (another model layout: only that it runs)
        if digest(e) != digest(err) or o != out:
            fail(f"commo {' '.join(layout)}: digest {digest(e)} vs sequential {digest(err)}, "
                 f"output equal: {o == out}")
        remote += s["queries"]["remote"]
    if not remote:
        fail("commo: no query went to another thread")
    t.ok(f"commo: the sequential digest and output in {len(layouts) - 1} optimistic layouts "
         f"({remote} queries between threads)")


def interrupt_once(threads, after_bytes, extra=()):
    d = tempfile.mkdtemp(prefix="kr-query-")
    try:
        return interrupt_in(d, threads, after_bytes, extra)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def interrupt_in(d, threads, after_bytes, extra):
    out, stats = os.path.join(d, "out"), os.path.join(d, "stats.json")
    base = ["--lps", "16", "-P", "every=3", "-P", "noise=1"]
    p = subprocess.Popen([kairos, "run", MODEL, *base, "--end", "1e9", "--threads",
                          str(threads), "--stats", stats, "--progress", "off", *extra],
                         stdout=open(out, "w"), stderr=subprocess.PIPE, text=True)
    for _ in range(1000):
        if os.path.getsize(out) >= after_bytes:
            break
        time.sleep(0.01)
    p.send_signal(signal.SIGINT)
    try:
        _, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        fail(f"{threads} threads: no exit 60 s after SIGINT")
    if p.returncode != 130 or "interrupted by SIGINT" not in err:
        fail(f"SIGINT: exit {p.returncode}\n{err}")
    end = json.load(open(stats))["final_gvt"]
    text = open(out).read()
    _, ref, ref_err = run(kairos, "run", MODEL, *base, "--end", end, *SEQ)
    if ref != text or digest(ref_err) != json.load(open(stats))["run_digest"]:
        fail(f"SIGINT at {end}: output or digest differ from the sequential run to there")
    return end


def case_interrupt():
    """SIGINT while events wait to ask and ask (threads waiting on each other's answers;
    once an asking event held GVT, and so the stop, back for ever): the run stops at a
    committed point, whose sequential run (--end there) prints the same and has the same
    digest. With --check, askers wait on their stacks as the run stops."""
    ends = [interrupt_once(threads, after) for threads, after in
            pick(((2, 1), (3, 200)), ((2, 1), (3, 200), (2, 1000), (3, 4000), (2, 8000)))]
    ends += [interrupt_once(threads, after, ["--check"]) for threads, after in
             pick(((2, 500),), ((2, 500), (3, 3000)))]
    t.ok(f"SIGINT stops a run of asking events at a committed point ({ends}), the "
         f"sequential run to there alike")


def case_fuzzed():
    """Found by fuzz/fuzz_model.c: two events of one time and generation from one sender,
    on two threads, both waiting to ask. The thread whose top changed to the later one (the
    earlier sender's event had run) left its quiet record naming the old top - only the
    time and generation were compared - so the other thread's asker, the least, waited for
    it, and the run hung on 2 threads (every time)."""
    args = ["--lps", "6", "--end", "14", "--seed", "247", "-P", "p0=-1787342405142373066",
            "-P", "p1=-799514936808955890", "-P", "p2=-4017539317094710146",
            "-P", "p3=-7247376075751841310", "-P", "p4=8137800572783513406",
            "-P", "p5=-3540864556031423696", "-P", "p6=701206547172480941",
            "-P", "p7=2348532390141487789"]
    model = f"{build}/libfuzzed.so"
    _, out, err = run(kairos, "run", model, *args, *SEQ)
    for layout in (["--threads", "2"], ["--threads", "2", "--check"], ["--threads", "3"]):
        try:
            p = subprocess.run([kairos, "run", model, *args, *layout, "--progress", "off"],
                               capture_output=True, text=True, timeout=60)
        except subprocess.TimeoutExpired:
            fail(f"fuzzed {' '.join(layout)}: hung (no end within 60 s)")
        if p.returncode or digest(p.stderr) != digest(err) or p.stdout != out:
            fail(f"fuzzed {' '.join(layout)}: exit {p.returncode}, digest {digest(p.stderr)} "
                 f"vs sequential {digest(err)}")
    t.ok("fuzz_model's finding: two askers at one time and generation, on 2 and 3 threads: "
         "the sequential digest and output, no hang")


case_answers()
case_fuzzed()
case_commo()
case_interrupt()
case_misuse()
case_conservative()
case_bundles()
case_old_layout()
t.finish()
