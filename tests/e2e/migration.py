"""LP migration of the optimistic engine (--balance, issue 13). `--balance storm` moves eight
random LPs at every GVT round - with their histories, checkpoints and pending events, under
rollbacks, with and without safe events, with time-sharing - and workers that lose all
their LPs leave GVT and come back when given some. No move may change what is committed:
every run must give the sequential digest and output; --check verifies on the way that
the per-thread LP and done counts agree with the owner table and that no message arrives
below a safe time. A model with done() checks that the end point survives moves."""
import json
import sys
import tempfile
from common import run, fail, digest, Tally, build_kind

kairos, build = sys.argv[1], sys.argv[2]
t = Tally()
TSAN = build_kind(kairos) == "tsan"

MODELS = [
    ("airport", [f"{build}/libairport.so", "--lps", "96", "--end", "40"], "full"),
    ("life", [f"{build}/liblife.so", "--lps", "36", "--end", "15"], "full"),
    ("pcs", ["pcs", "--lps", "16", "--end", "1"], "chunk"),
    ("phold", ["phold", "--lps", "64", "--end", "40"], "chunk"),
    ("queueing", ["queueing", "--lps", "32", "--end", "100"], "chunk"),
    ("chaos", [f"{build}/libchaos.so", "--lps", "24", "--end", "40"], "full"),
    ("ring (done)", [f"{build}/libring.so", "--lps", "12", "--end", "inf", "-P", "laps=40"],
     "full"),
]


def stats_of(args):
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        _, out, err = run(kairos, "run", *args, "--progress", "off", "--stats", f.name)
        return out, err, json.load(open(f.name))


def main():
    configs = [["--threads", "2"], ["--threads", "3", "--check"], ["--threads", "4"],
               ["--threads", "3", "--safe", "off"]]
    if not TSAN:
        configs += [["--threads", "2", "--preempt", "return"],
                    ["--threads", "4", "--preempt", "tick", "--tick-us", "200"]]
    for name, margs, state in MODELS:
        ref_out, ref_err, _ = stats_of(margs + ["--sync", "sequential"])
        moved = 0
        for cfg in configs:
            for rep in range(3):
                args = margs + cfg + ["--state", state, "--balance", "storm"]
                out, err, st = stats_of(args)
                if digest(err) != digest(ref_err) or out != ref_out:
                    fail(f"{name} {' '.join(args)} (run {rep + 1}): digest {digest(err)} vs "
                         f"sequential {digest(ref_err)}, output equal: {out == ref_out}")
                moved += st["migrated_lps"]
        if not moved:
            fail(f"{name}: no LP moved in {3 * len(configs)} storm runs")
        t.ok(f"{name}: sequential digest and output in {3 * len(configs)} storm runs "
             f"({moved} LP moves; {state}; 2-4 threads, --check, safe off"
             f"{'' if TSAN else ', preempt return/tick'})")
    # page-tracked modes do not migrate (their written pages are per-thread state): off
    _, _, st = stats_of([f"{build}/libairport.so", "--lps", "96", "--end", "20", "--threads",
                         "2", "--state", "page", "--balance", "storm"])
    if st["migrated_lps"]:
        fail("--state page migrated LPs")
    t.ok("--state page: no migration")


main()
t.finish()
