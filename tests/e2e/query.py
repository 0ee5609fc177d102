#!/usr/bin/env python3
"""Queries (kr_query, struct kr_model.query; issue 16 part 1). The query test model
(tests/models/query.c) checks every answer itself against a closed form of each LP's
count at the asking event - its own state before the event, a neighbour's, nested queries,
a cycle of queries back through the asker, and final states from finish - and fails the
run with kr_error on a wrong one. Here: those runs pass at several LP counts, with --check
too (same digest and output); each misuse is a model error naming what was wrong; engines
that cannot answer refuse such a model before it starts; and a model built against the
previous struct kr_model layout (no query field) still loads."""
import sys
from common import run, fail, digest, Tally, stats_of, expect_exit

kairos, build = sys.argv[1], sys.argv[2]
t = Tally()
MODEL = f"{build}/libquery.so"
SEQ = ["--sync", "sequential"]


def case_answers():
    for lps, end in ((1, "6.5"), (2, "9.5"), (5, "20.5"), (16, "40.5")):
        base = [MODEL, "--lps", str(lps), "--end", end, *SEQ]
        out, err, st = stats_of(kairos, base)
        out_c, err_c, _ = stats_of(kairos, [*base, "--check"])
        ticks = int(float(end))
        want = f"LP 0 ticked {ticks} times, LP {1 % lps} counts {(1 % lps + 1) * ticks}\n"
        if not out.endswith(want):
            fail(f"{lps} LPs: output does not end with {want!r}:\n{out[-500:]}")
        if digest(err) != digest(err_c) or out != out_c:
            fail(f"{lps} LPs: --check gives digest {digest(err_c)} vs {digest(err)}, output "
                 f"equal: {out == out_c}")
        if st["committed_events"] != lps * ticks:
            fail(f"{lps} LPs: {st['committed_events']} events, wanted {lps * ticks}")
    t.ok("self, neighbour, nested, cyclic and finish queries answered from the state at the "
         "asking event (1, 2, 5, 16 LPs), the same with --check")


def case_misuse():
    handler = "in its query handler (asked by LP 0)"
    read_only = "in a query handler: a query only reads the LP's state"
    wrong = {
        1: (["--check"], ["--check: LP 0's query handler changed its state"]),
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
    }
    for case, (extra, needles) in wrong.items():
        expect_exit(kairos, t, 1, needles, "run", MODEL, "--lps", "3", "--end", "3.5",
                    "-P", f"misuse={case}", *SEQ, *extra)
    # without --check, the write through the const pointer shows in the model's own check
    expect_exit(kairos, t, 1, ["nested: answer 1, expected 0"], "run", MODEL, "--lps", "3",
                "--end", "3.5", "-P", "misuse=1", *SEQ)


def case_refused():
    expect_exit(kairos, t, 2, ["model 'query' answers queries", "the optimistic engine does "
                               "not answer yet", "run it with --sync sequential"],
                "run", MODEL, "--lps", "4", "--end", "3")
    expect_exit(kairos, t, 2, ["the conservative engine cannot answer"],
                "run", MODEL, "--lps", "4", "--end", "3", "--sync", "conservative")


def case_old_layout():
    """KR_ABI_VERSION 2 models (struct kr_model without `query`) load and run on every
    engine; the bytes after their table are never read as a query handler."""
    for layout in (SEQ, ["--threads", "2"], ["--sync", "conservative"]):
        rc, out, err = run(kairos, "run", f"{build}/libabi2.so", "--lps", "3", "--end", "3.5",
                           *layout)
        if out != "tick 1\ntick 2\ntick 3\n":
            fail(f"abi2 {' '.join(layout)}: printed {out!r}")
    t.ok("a model built against KR_ABI_VERSION 2 runs on all three engines")


case_answers()
case_misuse()
case_refused()
case_old_layout()
t.finish()
