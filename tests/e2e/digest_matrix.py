"""The determinism contract: every model gives the same run digest (and the same committed
output) on the sequential engine, the conservative engine's windows scheme at 2 (and 3)
threads, and the optimistic engine at 1, 2, 3 and 4 threads (more
threads than this machine's cores included), with several checkpoint intervals, and in a
rollback-heavy configuration (tiny lookahead, few LPs, many threads). The quick tier runs
every model and state mode at 1 and 2 threads (4 for the modes' rollback-heavy case)."""
import os
import sys
from common import run, fail, digest, committed, Tally, scan_available, pick

kairos, build = sys.argv[1], sys.argv[2]
ring = os.path.join(build, "libring.so")
ticks = os.path.join(build, "libticks.so")
chaos = os.path.join(build, "libchaos.so")
dists = os.path.join(build, "libdists.so")
t = Tally()

configs = {
    "phold-std": ["phold", "--end", "200"],
    "phold-rollback-heavy": ["phold", "--lps", "64", "--end", "60", "-P", "lookahead=0", "-P", "mean=0.1"],
    "phold-mixed": ["phold", "--lps", "256", "--end", "100", "-P", "remote=0.3", "-P", "population=3",
                    "-P", "state_bytes=200", "-P", "lookahead=0.01"],
    "queueing": ["queueing", "--lps", "16", "--end", "500"],
    # 20000 events share every timestamp: far more than a thread may hold uncommitted
    "ticks-synchronous": [ticks, "--lps", "10000", "--end", "6"],
    "ticks-big-payloads": [ticks, "--lps", "300", "--end", "30", "-P", "payload=1000"],
    "phold-big-state": ["phold", "--lps", "32", "--end", "40", "-P", "state_bytes=60000", "-P", "lookahead=0.01"],
    "phold-population": ["phold", "--lps", "256", "--end", "10", "-P", "population=40"],
    # random heap churn, prints, zero-delay and delayed sends of random sizes: rollback-heavy
    "chaos": [chaos, "--lps", "64", "--end", "30"],
    "ring-done": [ring, "--lps", "16", "--end", "inf", "-P", "laps=300"],
    "ring-end-first": [ring, "--lps", "16", "--end", "50", "-P", "laps=300"],
    "membench": ["membench", "--lps", "32", "--end", "60", "-P", "state=20000", "-P", "span=0.5",
                 "-P", "write_ratio=0.7"],
    "pcs": ["pcs", "--lps", "16", "--end", "2", "-P", "channels=200"],
    # the expanded-event formulations (for --sync conservative) under Time Warp too
    "queueing-spans": ["queueing", "--lps", "16", "--end", "500", "-P", "spans=1"],
    "pcs-spans": ["pcs", "--lps", "16", "--end", "1", "-P", "channels=200", "-P", "spans=1"],
    # heap metadata per access, batches of remote requests and answers, aborts
    "datastore": ["datastore", "--lps", "16", "--end", "10", "-P", "op_us=1"],
    # queries: commanders ask readiness down the tree, across threads (issue 16)
    "commo": ["commo", "--lps", "300", "--end", "60"],
    # every distribution of the model API drawn by every event (tests/models/dists.c)
    "dists": [dists, "--lps", "64", "--end", "30"],
    # timers set, cancelled, re-set and fired, some at the current time (tests/models/timers.c)
    "timers": [os.path.join(build, "libtimers.so"), "--lps", "32", "--end", "150"],
    # a large table per LP with a reverse handler (tests/models/revstate.c)
    "revstate": [os.path.join(build, "librevstate.so"), "--lps", "64", "--end", "100"],
    # spans beside a lookahead, and without one (tests/models/spans.c): the windows scheme's
    # clocks widen with them
    "spans": [os.path.join(build, "libspans.so"), "--lps", "64", "--end", "150"],
    "spans-la0": [os.path.join(build, "libspans.so"), "--lps", "32", "--end", "100", "-P", "la=0"],
}
engines = [["--sync", "sequential"]] + [["--threads", str(n)] for n in pick((1, 2), (1, 2, 3, 4))]
# (2 threads start on one worker, lone, and spread once the other's core is found free -
# 5-25 ms in, most of a short run here: --balance off keeps both speculating from the first
# event)
engines += [["--threads", "2", "--balance", "off"]]
# (the conservative engine's windows scheme: safe events only, on every model - one without
# a lookahead or with done() included, where it speculates a little or waits for GVT)
engines += [["--sync", "conservative", "--conservative", "windows", "--threads", str(n)]
            for n in pick((2,), (2, 3))]


def engines_agree(name, args):
    """Every engine and thread count of `engines` commits the sequential history."""
    rc, ref_out, err = run(kairos, "run", *args, "--sync", "sequential")
    ref, ref_n = digest(err), committed(err)
    rc, out, err = run(kairos, "run", *args, "--sync", "sequential", "--check")
    if digest(err) != ref or out != ref_out:
        fail(f"{name}: the re-execution check (--check) changed the result")
    if ref_n == 0:
        fail(f"{name}: nothing committed")
    for eng in engines[1:]:
        for k in pick((["--ckpt-interval", "7"], []), (["--ckpt-interval", "1"], ["--ckpt-interval", "7"], [])):
            if k and (eng[-1] not in ("2", "4") or "windows" in eng):
                continue
            rc, out, err = run(kairos, "run", *args, *eng, *k)
            if digest(err) != ref or committed(err) != ref_n:
                fail(f"{name} {eng} {k}: digest {digest(err)} / {committed(err)} events, "
                     f"sequential {ref} / {ref_n}")
            if out != ref_out:
                fail(f"{name} {eng} {k}: committed output differs from sequential")
    t.ok(f"{name}: digest {ref} ({ref_n} events) on every engine and thread count")

# State-saving modes: incremental chains (full every 3), page and buddy protection, chunk
# marking (models that mark writes; chaos through the compiler instrumentation), reverse
# computation (a model with a reverse handler), with
# rollback-heavy configurations, at 1, 2 and 4 threads.
chaos_instr = os.path.join(build, "libchaos_instr.so")
state_configs = {
    "phold-rollback-heavy": (configs["phold-rollback-heavy"], ["full", "chunk", "page", "buddy", "scan"]),
    "phold-big-state": (configs["phold-big-state"], ["chunk", "page", "buddy"]),
    "queueing": (configs["queueing"], ["chunk", "page", "buddy"]),
    "chaos": (configs["chaos"], ["page", "buddy", "scan"]),
    "ring-done": (configs["ring-done"], ["page", "buddy"]),
    "membench": (configs["membench"], ["full", "chunk", "page", "buddy", "scan"]),
    "pcs": (configs["pcs"], ["chunk", "page", "buddy", "scan"]),
    "queueing-spans": (configs["queueing-spans"], ["chunk", "buddy"]),
    "pcs-spans": (configs["pcs-spans"], ["chunk", "page"]),
    "datastore": (configs["datastore"], ["chunk", "page", "buddy", "scan"]),
    "timers": (configs["timers"], ["chunk", "page", "buddy", "scan"]),
    # (reverse computation: the model's handler undoes rollbacks, no checkpoint taken)
    "revstate": (configs["revstate"], ["reverse", "page"]),
}
# plain C heap calls, made transparent by -include kairos/transparent.h or by --wrap
for variant in ("t", "wrap"):
    state_configs[f"plainheap-{variant}"] = ([os.path.join(build, f"libplainheap_{variant}.so"),
                                            "--lps", "32", "--end", "40"], ["full", "page", "buddy", "scan"])
if os.path.exists(chaos_instr):
    state_configs["chaos-instrumented"] = ([chaos_instr, "--lps", "64", "--end", "30"],
                                           ["chunk", "page"])
has_scan = scan_available(kairos)


def modes_agree(name, args, modes):
    """Every state-saving mode of `modes` commits the sequential history."""
    modes = [m for m in modes if m != "scan" or has_scan]
    rc, ref_out, err = run(kairos, "run", *args, "--sync", "sequential")
    ref, ref_n = digest(err), committed(err)
    for mode in modes:
        for eng, k in pick(((["--threads", "2"], "1"), (["--threads", "4"], "3")),
                           ((["--threads", "1"], "16"), (["--threads", "2"], "1"),
                            (["--threads", "2"], "auto"), (["--threads", "4"], "3"))):
            rc, out, err = run(kairos, "run", *args, *eng, "--state", mode, "--ckpt-interval", k,
                               "--ckpt-full-every", "3")
            if digest(err) != ref or committed(err) != ref_n or out != ref_out:
                fail(f"{name} --state {mode} {eng} K={k}: digest {digest(err)} / "
                     f"{committed(err)} events, sequential {ref} / {ref_n}")
    t.ok(f"{name}: same digest with --state {', '.join(modes)} at 1, 2 and 4 threads")


def variants_agree():
    """Builds and parameters that must not change the history, and seeds that must."""
    _, out_t, err_t = run(kairos, "run", os.path.join(build, "libplainheap_t.so"), "--lps", "32", "--end", "40")
    _, out_w, err_w = run(kairos, "run", os.path.join(build, "libplainheap_wrap.so"), "--lps", "32", "--end", "40")
    if digest(err_t) != digest(err_w) or out_t != out_w:
        fail("plainheap: transparent.h and --wrap builds of the same model differ")
    t.ok("plainheap: the transparent.h and --wrap builds commit the same history")

    # datastore: allocating a batch's metadata up front (clustered=1) simulates the same history
    _, out_rr, _ = run(kairos, "run", *configs["datastore"], "--threads", "2")
    _, out_cl, _ = run(kairos, "run", *configs["datastore"], "--threads", "2", "-P", "clustered=1")
    if out_rr != out_cl or "committed" not in out_rr:
        fail("datastore: clustered=1 changed the simulated store")
    t.ok("datastore: round-robin and clustered metadata allocation give the same store")

    # seeds matter, and a rerun is identical
    _, _, e1 = run(kairos, "run", "phold", "--end", "50", "--seed", "2", "--threads", "2")
    _, _, e2 = run(kairos, "run", "phold", "--end", "50", "--seed", "2", "--threads", "2")
    _, _, e3 = run(kairos, "run", "phold", "--end", "50", "--seed", "3", "--threads", "2")
    if digest(e1) != digest(e2) or digest(e1) == digest(e3):
        fail("seed handling: reruns must agree, different seeds must differ")
    t.ok("reruns agree, seeds change the digest")


def case(f, *args):
    """One forked case of Tally.cases, named for its failure line."""
    def run_case():
        f(*args)
    run_case.__name__ = f"{f.__name__} {args[0]}" if args else f.__name__
    return run_case


# (each case forked, two at a time: most of the time is the launches of short runs)
t.cases([case(engines_agree, n, a) for n, a in configs.items()] +
        [case(modes_agree, n, a, m) for n, (a, m) in state_configs.items()] +
        [case(variants_agree)])
t.finish()
