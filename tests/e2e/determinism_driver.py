"""Randomized determinism driver: every model x engine x thread count x state-saving mode x
preemption mode x seed, sampled at random, must commit the sequential engine's history: the
same run digest and byte for byte the same output (reverse computation included, for the
model with a reverse handler). Sequential and optimistic runs add --check
at random (the sequential engine re-executes every event; the optimistic one verifies its
invariants).

  determinism_driver.py KAIROS BUILD [--seconds S] [--seed N] [--record FILE]

The test suite runs it for a short budget with a seed of its own; bench/soak.py runs it for
hours with fresh seeds and records the result. A mismatch prints the two commands that
disagree and exits 1. Every run gets the same timeout the other tests use: a hang fails."""
import argparse
import os
import random
import sys
import time
from common import run, fail, digest, build_kind

# (name, arguments, what it supports). `spans`: the parameter that makes it run under the
# conservative engine (None: it declares a lookahead); `chunk`: it marks its writes.
MODELS = [
    ("phold", ["phold", "--lps", "64", "--end", "40"], {"spans": None, "chunk": True}),
    ("phold-busy", ["phold", "--lps", "32", "--end", "10", "-P", "busy_us=5", "-P",
                    "lookahead=0.05"], {"spans": None, "chunk": True}),
    ("queueing", ["queueing", "--lps", "16", "--end", "200"], {"spans": "spans=1", "chunk": True}),
    ("pcs", ["pcs", "--lps", "16", "--end", "1"], {"spans": "spans=1", "chunk": True}),
    ("datastore", ["datastore", "--lps", "8", "--end", "5"], {"chunk": True}),
    ("membench", ["membench", "--lps", "16", "--end", "20", "-P", "state=4000"], {"chunk": True}),
    ("null", ["null", "--lps", "20", "--end", "inf", "-P", "modules=20", "-P", "events=100"],
     {"spans": None, "chunk": True}),
    ("chaos", ["{build}/libchaos.so", "--lps", "24", "--end", "40"], {}),
    ("ring", ["{build}/libring.so", "--lps", "12", "--end", "inf", "-P", "laps=40"], {}),
    ("pointers", ["{build}/libhazard.so", "--lps", "16", "--end", "30", "-P", "case=1"],
     {"spans": None}),
    ("plainheap", ["{build}/libplainheap_wrap.so", "--lps", "12", "--end", "20"], {}),
    ("seir", ["{build}/libseir.so", "--lps", "24", "--end", "15"], {}),
    ("airport", ["{build}/libairport.so", "--lps", "24", "--end", "20"], {}),
    ("life", ["{build}/liblife.so", "--lps", "25", "--end", "12"], {"spans": None}),
    ("bundles", ["{build}/libbundles.so", "--lps", "24", "--end", "60"], {"spans": "echo=0"}),
    ("typeorder", ["{build}/libtypeorder.so", "--lps", "16", "--end", "40"], {"spans": None}),
    ("life-blocks", ["life", "--lps", "16", "-P", "width=16", "-P", "height=16", "-P", "block=4",
                     "-P", "generations=20"], {"spans": None}),
    ("commo", ["commo", "--lps", "120", "--end", "40"], {}),
    ("timers", ["{build}/libtimers.so", "--lps", "16", "--end", "60"],
     {"spans": "zero=0", "chunk": True}),
    # (timers and queries in same-time bundles)
    ("tbundle-query", ["{build}/libtbundle_query.so", "--lps", "16", "--end", "60"],
     {"spans": None}),
    ("query", ["{build}/libquery.so", "--lps", "12", "--end", "30.5", "-P", "every=4", "-P",
               "noise=1"], {"spans": "zero_lookahead=1"}),
    # (spans beside a lookahead and without: the windows scheme's clocks read them)
    ("spans", ["{build}/libspans.so", "--lps", "24", "--end", "60"], {"spans": None}),
    ("spans-la0", ["{build}/libspans.so", "--lps", "24", "--end", "60", "-P", "la=0"],
     {"spans": None}),
    ("queueing-spans", ["queueing", "--lps", "16", "--end", "200", "-P", "spans=1"],
     {"spans": None, "chunk": True}),
    # (a reverse handler: --state reverse, and sequential --check runs event/reverse/event)
    ("revstate", ["{build}/librevstate.so", "--lps", "24", "--end", "40", "-P", "kb=2"],
     {"reverse": True}),
]


def pick_config(rnd, caps, tsan):
    """One random engine configuration the model supports."""
    engines = ["optimistic", "optimistic", "sequential", "windows"] + \
        (["conservative"] if "spans" in caps else [])
    eng = rnd.choice(engines)
    if eng == "windows":  # (every model: safe events only, a little speculation without them)
        args = ["--sync", "conservative", "--conservative", "windows", "--threads",
                str(rnd.choice([1, 2, 3, 4]))]
        return args + (["--check"] if rnd.random() < 0.3 else []), []
    args, extra = ["--sync", eng], []
    if eng == "conservative":
        args += ["--conservative", "horizon", "--threads", str(rnd.choice([1, 2, 3])),
                 "--handoff", rnd.choice(["push", "pull"])]
        if caps["spans"]:
            extra = ["-P", caps["spans"]]
        return args, extra
    if eng == "sequential":
        if rnd.random() < 0.5:
            args += ["--check"] + (["--state", "reverse"] if caps.get("reverse") else [])
        return args, extra
    states = ["full", "page", "buddy"] + (["chunk"] if caps.get("chunk") else []) + \
        (["reverse", "reverse"] if caps.get("reverse") else [])
    state = rnd.choice(states)
    # (an event preempted half-way cannot be reversed: --state reverse takes off or adaptive)
    preempts = ["off"] if tsan else ["off", "adaptive"] if state == "reverse" else \
        ["off", "return", "tick", "adaptive"]
    args += ["--threads", str(rnd.choice([1, 2, 3, 4])), "--state", state,
             "--preempt", rnd.choice(preempts), "--ckpt-interval", str(rnd.choice([1, 4, 16, "auto"])),
             "--gvt-period", rnd.choice(["0.05", "1", "5"]), "--safe", rnd.choice(["on", "off"]),
             "--balance", rnd.choice(["off", "auto", "storm"]),
             "--cancel", rnd.choice(["aggressive", "lazy"])]
    if "tick" in args:
        args += ["--tick-us", "200"]
    if rnd.random() < 0.3:
        args.append("--check")
    return args, extra


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kairos")
    ap.add_argument("build")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--seed", type=int, default=None, help="default: from the clock")
    ap.add_argument("--record", help="append a result line to this file")
    a = ap.parse_args()
    seed = a.seed if a.seed is not None else int(time.time())
    rnd = random.Random(seed)
    tsan = build_kind(a.kairos) == "tsan"
    refs = {}
    runs = 0
    t0 = time.time()
    print(f"determinism driver: seed {seed}, budget {a.seconds:g} s")
    while time.time() - t0 < a.seconds:
        name, margs, caps = rnd.choice(MODELS)
        margs = [m.format(build=a.build) for m in margs]
        lp_seed = str(rnd.choice([1, 2, 3, 7, 42, 1000]))
        cfg, extra = pick_config(rnd, caps, tsan)
        key = (name, lp_seed, tuple(extra))
        base = ["run", *margs, "--seed", lp_seed, "--progress", "off", *extra]
        if key not in refs:
            _, out, err = run(a.kairos, *base, "--sync", "sequential")
            refs[key] = (digest(err), out)
        _, out, err = run(a.kairos, *base, *cfg)
        runs += 1
        if (digest(err), out) != refs[key]:
            fail(f"mismatch after {runs} runs (driver seed {seed}):\n  reference: "
                 f"{' '.join([a.kairos, *base, '--sync', 'sequential'])}\n  this:      "
                 f"{' '.join([a.kairos, *base, *cfg])}\n  digest {digest(err)} vs {refs[key][0]}, "
                 f"output equal: {out == refs[key][1]}")
    took = time.time() - t0
    line = (f"{time.strftime('%Y-%m-%d %H:%M')}  seed {seed}  {runs} runs  0 mismatches  "
            f"{took:.0f} s  {len(refs)} references")
    print(line)
    if a.record:
        with open(a.record, "a") as f:
            f.write(line + "\n")
    print(f"{runs} passed, 0 failed")


if __name__ == "__main__":
    main()
