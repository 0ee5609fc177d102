#!/usr/bin/env python3
"""Same-time bundles (KR_MODEL_BUNDLES, issue 16) and type order (KR_MODEL_TYPE_ORDER,
issue 18), with kr_end_time() and kr_seed(). Bundles: an LP's events of one time and one
zero-delay generation run as one call of its handler, on every engine alike. The bundles
test model (tests/models/bundles.c) fails the run itself if a bundle is split, mixes
generations or lists its members out of tie order; here every engine and layout must commit
the sequential digest and output, bundles of several events must occur (and late members
must have rolled some back on the optimistic engine), and wrong calls of the bundle API
are model errors naming what was wrong."""
import re
import sys
from common import run, fail, digest, Tally, stats_of, build_kind, expect_exit

kairos, build = sys.argv[1], sys.argv[2]
t = Tally()
tsan = build_kind(kairos) == "tsan"
MODEL = f"{build}/libbundles.so"

CASES = [
    ("echoes", ["--lps", "64", "--end", "200"]),
    ("done", ["--lps", "32", "--end", "inf", "-P", "done_after=40"]),
    ("lookahead", ["--lps", "64", "--end", "200", "-P", "echo=0"]),
]
OPTIMISTIC = [["--threads", "1"], ["--threads", "2"], ["--threads", "4"],
              ["--threads", "3", "--check"], ["--threads", "2", "--state", "page"],
              ["--threads", "3", "--state", "buddy", "--ckpt-interval", "4"],
              ["--threads", "4", "--balance", "storm"],
              ["--threads", "2", "--cancel", "lazy"],
              ["--threads", "4", "--cancel", "lazy", "--check"],
              ["--threads", "2", "--gvt-period", "0.0005"]] + \
             ([] if tsan else [["--threads", "3", "--preempt", "tick"]])
CONSERVATIVE = [["--sync", "conservative", "--threads", "1"],
                ["--sync", "conservative", "--threads", "2"],
                ["--sync", "conservative", "--threads", "2", "--barriers", "events"]]


def largest(out):
    sizes = [int(m) for m in re.findall(r"largest (\d+)", out)]
    if not sizes:
        fail(f"no per-LP summary in the output:\n{out[:2000]}")
    return max(sizes)


def case_engines():
    for name, args in CASES:
        ref_out, ref_err, _ = stats_of(kairos, [MODEL, *args, "--sync", "sequential"])
        if largest(ref_out) < 3:
            fail(f"{name}: no bundle of 3 or more events: the test would show nothing")
        layouts = [["--sync", "sequential", "--check"]] + OPTIMISTIC + \
                  (CONSERVATIVE if name == "lookahead" else [])
        undone = 0
        for layout in layouts:
            out, err, st = stats_of(kairos, [MODEL, *args, *layout])
            if digest(err) != digest(ref_err) or out != ref_out:
                fail(f"{name} {' '.join(layout)}: digest {digest(err)} vs sequential "
                     f"{digest(ref_err)}, output equal: {out == ref_out}")
            if st["committed_events"] != ref_err.stats["committed_events"]:
                fail(f"{name} {' '.join(layout)}: {st['committed_events']} events committed, "
                     f"sequential {ref_err.stats['committed_events']}")
            undone += st.get("rolled_back_events", 0)
        if not undone:
            fail(f"{name}: nothing was rolled back in any optimistic layout")
        t.ok(f"{name}: sequential digest, output and event count on {len(layouts)} layouts "
             f"(largest bundle {largest(ref_out)}, {undone} events undone)")


def case_misuse():
    wrong = {1: "kr_bundle_get: member 2 of a bundle of 2 events",
             2: "in init: kr_bundle_count outside the event handler",
             3: "in done() after init: kr_bundle_count outside the event handler",
             4: "in finish: kr_bundle_count outside the event handler"}
    for case, needle in wrong.items():
        for layout in (["--sync", "sequential"], ["--threads", "2"]):
            expect_exit(kairos, t, 1, [needle], "run", MODEL, "--lps", "8", "--end", "20",
                        "-P", f"misuse={case}", *layout)


def case_settings():
    """kr_end_time() and kr_seed(), read in finish, are the run's --end and --seed."""
    for layout in (["--sync", "sequential"], ["--threads", "2"]):
        for end, seed, want in (("30", "7", "end 30, seed 7"), ("inf", "12345678901",
                                                               "end inf, seed 12345678901")):
            extra = ["-P", "done_after=5"] if end == "inf" else []
            _, out, _ = run(kairos, "run", MODEL, "--lps", "8", "--end", end, "--seed", seed,
                            *extra, *layout)
            if want not in out:
                fail(f"--end {end} --seed {seed} {' '.join(layout)}: no '{want}' in\n{out}")
    t.ok("kr_end_time() and kr_seed() give --end (inf too) and --seed on two engines")


def case_type_order():
    """KR_MODEL_TYPE_ORDER: at one time an LP's events come in ascending type on every
    engine (the typeorder model checks it itself); without the flag the same model trips
    its check; with bundles too it is refused."""
    model = f"{build}/libtypeorder.so"
    base = ["--lps", "32", "--end", "100"]
    ref_out, ref_err, _ = stats_of(kairos, [model, *base, "--sync", "sequential", "--check"])
    layouts = [["--threads", "1"], ["--threads", "2"], ["--threads", "4", "--check"],
               ["--threads", "2", "--cancel", "lazy"], ["--threads", "4", "--balance", "storm"],
               ["--sync", "conservative", "--threads", "2"]]
    for layout in layouts:
        out, err, _ = stats_of(kairos, [model, *base, *layout])
        if digest(err) != digest(ref_err) or out != ref_out:
            fail(f"typeorder {' '.join(layout)}: digest {digest(err)} vs sequential "
                 f"{digest(ref_err)}, output equal: {out == ref_out}")
    t.ok(f"KR_MODEL_TYPE_ORDER: types in order at every time, the sequential digest and "
         f"output on {len(layouts)} layouts")
    expect_exit(kairos, t, 1, ["after type"], "run", f"{build}/libtypeorder_off.so", *base,
                "--sync", "sequential")
    expect_exit(kairos, t, 2, ["declares both KR_MODEL_BUNDLES and KR_MODEL_TYPE_ORDER"],
                "run", f"{build}/libbundles_typeorder.so", "--lps", "8", "--end", "5")


case_engines()
case_misuse()
case_settings()
case_type_order()
t.finish()
