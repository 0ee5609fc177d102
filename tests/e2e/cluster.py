#!/usr/bin/env python3
"""A run across MPI ranks (issue 15): the launch is recognised, a kairos without the MPI
module refuses it with what to do, and every check that only a multi-rank run can fail
(--sync, the LP count, a model missing on one rank) is agreed between the ranks and
reported once, by the lowest failing rank, with the same exit status on all.

    cluster.py KAIROS BUILD_DIR

The checks without mpirun (the environment a launcher sets, faked) run everywhere; those
with mpirun are skipped, and say so, where Open MPI or the module (BUILD_DIR/kairos-mpi.so)
is missing."""
import json
import os
import re
import shutil
import subprocess
import sys
from common import Tally, build_kind, digest, fail, run, LONG

kairos, build = sys.argv[1], sys.argv[2]
t = Tally()
kind = build_kind(kairos)
MODULE = os.path.join(build, "kairos-mpi.so")
NO_MPI_MSG = "started by mpirun as one of 2 ranks, but this kairos cannot join them"


def env_with(**kv):
    e = dict(os.environ)
    for k in ("OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "PMI_SIZE", "PMI_RANK",
              "PMIX_SIZE", "PMIX_RANK", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID",
              "KAIROS_MPI_MODULE"):
        e.pop(k, None)
    e.update(kv)
    if kind == "asan":  # (the MPI library's start-up allocations are not ours to free)
        e["ASAN_OPTIONS"] = e.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
    if kind == "tsan":  # (Open MPI's own lock order: see the file)
        e["TSAN_OPTIONS"] = (e.get("TSAN_OPTIONS", "") + " suppressions=" +
                             os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                          "tsan-openmpi.supp"))
    return e


def launched(rank, *args):
    """kairos as if a launcher had started it as rank `rank` of 2, with no module."""
    return subprocess.run([kairos, *args], capture_output=True, text=True, timeout=60,
                          env=env_with(OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_RANK=str(rank),
                                       KAIROS_MPI_MODULE="/nonexistent/kairos-mpi.so"))


def without_mpirun():
    base = ["run", "phold", "--lps", "64", "--end", "10"]
    _, _, plain = run(kairos, *base)
    p0, p1 = launched(0, *base), launched(1, *base)
    if p0.returncode != 2 or NO_MPI_MSG not in p0.stderr or "libopenmpi-dev" not in p0.stderr:
        fail(f"rank 0 of a launch without the module: exit {p0.returncode}\n{p0.stderr}")
    if p1.returncode != 2 or p1.stderr:
        fail(f"rank 1 of a launch without the module must exit 2 quietly (rank 0 reports): "
             f"exit {p1.returncode}\n{p1.stderr}")
    t.ok("launched as 2 ranks without the MPI module: rank 0 says what to do, rank 1 is "
         "quiet, both exit 2")
    p = subprocess.run([kairos, *base], capture_output=True, text=True, timeout=60,
                       env=env_with(SLURM_STEP_NUM_TASKS="2", SLURM_PROCID="0", PMIX_RANK="0",
                                    KAIROS_MPI_MODULE="/nonexistent/kairos-mpi.so"))
    if p.returncode != 2 or NO_MPI_MSG not in p.stderr:
        fail(f"a task of a 2-task srun step (Slurm's variables, PMIx without a size) must "
             f"not run alone: exit {p.returncode}\n{p.stderr}")
    t.ok("a task of a 2-task srun step is recognised as one of 2 ranks")
    p = subprocess.run([kairos, *base], capture_output=True, text=True, timeout=60,
                       env=env_with(SLURM_STEP_NUM_TASKS="2", SLURM_PROCID="1"))
    if p.returncode != 0:
        fail(f"a task of a plain srun (a sweep: no PMIx) must run on its own: exit "
             f"{p.returncode}\n{p.stderr}")
    p = subprocess.run([kairos, *base], capture_output=True, text=True, timeout=60,
                       env=env_with(OMPI_COMM_WORLD_SIZE="2", OMPI_COMM_WORLD_RANK="1",
                                    KAIROS_MPI="off"))
    if p.returncode != 0 or digest(p.stderr) != digest(plain):
        fail(f"KAIROS_MPI=off: a rank must run as a plain process: exit {p.returncode}\n"
             f"{p.stderr}")
    t.ok("a plain srun task and KAIROS_MPI=off run as processes of their own")
    one = subprocess.run([kairos, *base, "--stats", os.devnull], capture_output=True,
                         text=True, timeout=60, env=env_with(OMPI_COMM_WORLD_SIZE="1",
                                                             OMPI_COMM_WORLD_RANK="0"))
    if one.returncode != 0 or "run digest:" not in one.stderr:
        fail(f"a launch of one rank must run as a plain process: exit {one.returncode}\n"
             f"{one.stderr}")
    if digest(one.stderr) != digest(plain):
        fail("a launch of one rank gave another digest than a plain run")
    t.ok("launched as 1 rank: the run of a plain process, same digest")


def mpirun(np, *args, shell=None, program=None, refused=False):
    # (one machine: shared memory only; the TCP transport's own locking is what
    # ThreadSanitizer reported here, not kairos's; no single-copy: containers forbid ptrace.
    # refused: every rank refuses to start and exits by itself, so mpirun need not give
    # them its 1-s grace before SIGKILL, which costs 2 s a launch)
    cmd = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader",
           "--mca", "btl_vader_single_copy_mechanism", "none", "-np", str(np)]
    if refused:
        cmd[1:1] = ["--mca", "odls_base_sigkill_timeout", "0"]
    cmd += ["sh", "-c", shell] if shell else [program or kairos, *args]
    e = env_with(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                 KAIROS=kairos)
    if program:  # (a test program is not next to the module: say where it is)
        e["KAIROS_MPI_MODULE"] = MODULE
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=e)
    except subprocess.TimeoutExpired:
        fail(f"hang: {' '.join(cmd)} did not finish in 120 s")


def once(p, rc, needle, what):
    n = p.stderr.count("kairos: error:")
    if p.returncode != rc or needle not in p.stderr or n != 1:
        fail(f"{what}: want exit {rc} and one report containing '{needle}', got exit "
             f"{p.returncode} and {n} reports:\n{p.stderr}")
    t.ok(f"{what}: exit {rc}, reported once")


def with_mpirun():
    for sync in ("sequential", "conservative --conservative horizon"):
        once(mpirun(2, "run", "phold", "--lps", "64", "--end", "10", "--sync", *sync.split(),
                    refused=True), 2,
             f"--sync {sync} runs in one process", f"2 ranks, --sync {sync}")
    once(mpirun(2, "run", "phold", "--lps", "3", "--threads", "2", refused=True), 2,
         "--lps 3 is fewer than 2 ranks x 2 threads", "2 ranks x 2 threads, 3 LPs")
    once(mpirun(2, "run", "phold", "--lps", "64", "--trace", os.path.join(build, "t.json"),
                refused=True),
         2, "--trace across MPI ranks is not available yet", "2 ranks, --trace")
    ring = os.path.join(build, "libring.so")
    pick = (f'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then m=/nonexistent/libring.so; '
            f'else m={ring}; fi; exec "$KAIROS" run "$m" --lps 8 --threads 1')
    p = mpirun(2, shell=pick, refused=True)
    once(p, 2, "rank 1 of 2", "the model missing on rank 1")
    if "cannot load model '/nonexistent/libring.so'" not in p.stderr:
        fail(f"the model missing on rank 1: the report must name the model\n{p.stderr}")
    p = mpirun(1, "run", "phold", "--lps", "64", "--end", "10", "--stats", os.devnull)
    _, _, plain = run(kairos, "run", "phold", "--lps", "64", "--end", "10")
    if p.returncode != 0:
        fail(f"mpirun -np 1 must run as a plain process:\n{p.stderr}")
    if digest(p.stderr) != digest(plain):
        fail("mpirun -np 1 gave another digest than a plain run")
    t.ok("mpirun -np 1: the run of a plain process, same digest")
    p = mpirun(3, program=os.path.join(build, "tests", "test_net"))
    if p.returncode != 0 or p.stdout.count("net: ") != 3 or "failed" in p.stderr:
        fail(f"test_net on 3 ranks (a GVT round's reduction through the module): exit "
             f"{p.returncode}\n{p.stdout}\n{p.stderr}")
    t.ok("3 ranks: a GVT round's keys and counts combine alike on every rank (test_net)")
    for np in (2, 3) if LONG else (3,):
        p = mpirun(np, program=os.path.join(build, "tests", "test_xport"))
        if p.returncode != 0 or p.stdout.count("xport: ") != 2 * np or "failed" in p.stderr:
            fail(f"test_xport on {np} ranks (aggregated events between ranks): exit "
                 f"{p.returncode}\n{p.stdout}\n{p.stderr}")
        t.ok(f"{np} ranks x 2 threads: 20 000 records per thread and rank arrive once, intact, "
             "in order, aggregated (test_xport)")


def different_ranks():
    """Issue 35, 2: ranks started with another seed, parameter, model, model file, LP count
    or thread count (an MPMD launch, a stale copy on one node) refuse to start, exit 2,
    naming the first difference and the ranks - never an answer of neither run."""
    ring = os.path.join(build, "libring.so")
    stale = os.path.join(build, "stale", "libring.so")
    os.makedirs(os.path.dirname(stale), exist_ok=True)
    shutil.copyfile(ring, stale)
    with open(stale, "ab") as f:
        f.write(b"\0")  # (the same model, another build of it)
    base = "--lps 64 --end 10 --threads 1"
    cases = [("--seed 2", "--seed is '1' on rank 0 and '2' on rank 1", "phold"),
             ("-P mean=2", "-P is '(nothing)' on rank 0 and 'mean=2' on rank 1", "phold"),
             ("--lps 128", "--lps is '64' on rank 0 and '128' on rank 1", "phold"),
             ("--threads 2", "--threads is '1' on rank 0 and '2' on rank 1", "phold"),
             ("--state page", "--state is '\"full\"' on rank 0 and '\"page\"' on rank 1",
              "phold"),
             ("", "model is 'phold", "queueing"),
             ("", "model is 'ring ", stale)]
    for extra, needle, other in (cases if LONG else [cases[i] for i in (0, 6)]):
        m0 = "phold" if other in ("phold", "queueing") else ring
        sh = (f'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then exec "$KAIROS" run {other} {base} '
              f'{extra}; else exec "$KAIROS" run {m0} {base}; fi')
        p = mpirun(2, shell=sh, refused=True)
        once(p, 2, "the ranks do not run the same thing: " + needle,
             f"rank 1 started with {extra or 'model ' + os.path.basename(other)}")
    shutil.rmtree(os.path.dirname(stale), ignore_errors=True)


def same_as_sequential():
    """The engine across ranks commits the sequential history: digest and stdout."""
    ring, chaos = os.path.join(build, "libring.so"), os.path.join(build, "libchaos.so")
    islands = os.path.join(build, "libislands.so")
    cases = {
        "phold": ["phold", "--lps", "256", "--end", "20"],
        "queueing": ["queueing", "--lps", "64", "--end", "100"],
        "pcs": ["pcs", "--lps", "64", "--end", "0.3"],
        "datastore": ["datastore", "--lps", "16", "--end", "1"],
        "chaos": [chaos, "--lps", "64", "--end", "30", "-P", "span=0.05"],
        "chaos-done": [chaos, "--lps", "16", "--end", "inf", "-P", "done_after=200"],
        "ring-done": [ring, "--lps", "16", "--end", "inf", "-P", "laps=300"],
        # (few events between ranks, so their clocks move by stamps alone; the run's
        # lookahead declared only by the LPs of the last ranks)
        "islands": [islands, "--lps", "64", "--end", "300", "-P", "lookahead=0.3"],
        # (same-time bundles: members from several ranks, late ones among them)
        "bundles": [os.path.join(build, "libbundles.so"), "--lps", "64", "--end", "60"],
        # (payloads pointing into the image, followed by the receiver: named on the wire)
        "payload-pointers": [os.path.join(build, "libhazard.so"), "--lps", "16", "--end", "20",
                             "-P", "case=17"],
        # (commit hooks: rank 0 calls them with every rank's records, in key order)
        "ledger": [os.path.join(build, "libledger.so"), "--lps", "32", "--end", "30"],
        # (every distribution of the model API, drawn by every event)
        "dists": [os.path.join(build, "libdists.so"), "--lps", "64", "--end", "30"],
        # (--end inf without done(): the ranks end once no event is left on any)
        "finite": [os.path.join(build, "libfinite.so"), "--lps", "64", "--end", "inf"],
        # (timers: each LP's pending list in its state, cancelled ones skipped alike)
        "timers": [os.path.join(build, "libtimers.so"), "--lps", "64", "--end", "150"],
        # (timers in same-time bundles, members from several ranks)
        "timers-bundles": [os.path.join(build, "libtbundle.so"), "--lps", "32", "--end", "100"],
    }
    # (ranks, threads per rank, extra options): every layout of the issue in full mode; an
    # incremental mode and a tiny GVT period (many rounds, records of two colours in flight)
    layouts = [(2, 1, []), (3, 2, []), (4, 1, []),
               (2, 1, ["--state", "page", "--gvt-period", "0.05"]),
               (3, 2, ["--state", "page", "--gvt-period", "0.05"]),
               (2, 1, ["--check"] + ([] if kind == "tsan" else ["--preempt", "tick"])),
               (3, 2, ["--check"]), (2, 2, ["--cancel", "lazy", "--check"]),
               # (the conservative engine's windows scheme: safe events only, issue 39)
               (2, 2, ["--sync", "conservative", "--conservative", "windows"])]
    # (a ThreadSanitizer build has no time-sharing)
    # (the quick tier: each case on one layout, taken in turn, so every layout runs)
    for i, (name, args) in enumerate(cases.items()):
        rc, out, err = run(kairos, "run", *args, "--sync", "sequential")
        if rc != 0:
            fail(f"{name}: the sequential run failed:\n{err}")
        mine = layouts if LONG else [layouts[i % len(layouts)]]
        for np, threads, extra in mine:
            p = mpirun(np, "run", *args, "--threads", str(threads), *extra)
            what = f"{name}, {np} ranks x {threads} thread{'s' if threads > 1 else ''} " + \
                   " ".join(extra)
            if p.returncode != 0:
                fail(f"{what}: exit {p.returncode}\n{p.stderr}")
            if digest(p.stderr) != digest(err):
                fail(f"{what}: digest {digest(p.stderr)}, sequential {digest(err)}")
            if p.stdout != out:
                fail(f"{what}: stdout differs from the sequential stdout "
                     f"({len(p.stdout)} vs {len(out)} bytes)")
            if p.stderr.count("run digest:") != 1 or f"{np} ranks x" not in p.stderr:
                fail(f"{what}: want one summary, from rank 0, naming the ranks:\n{p.stderr}")
        t.ok(f"{name}: the sequential digest and stdout on " + ("2x1, 3x2, 4x1 ranks x "
             "threads, with --state page and 50-us GVT rounds, with --check (and --preempt "
             "tick), with --cancel lazy" if LONG else
             "; ".join(f"{n}x{th} {' '.join(x)}" for n, th, x in mine)))

    # (reverse computation: the model's reverse handler undoes rollbacks on every rank)
    rev = [os.path.join(build, "librevstate.so"), "--lps", "96", "--end", "100"]
    rc, out, err = run(kairos, "run", *rev, "--sync", "sequential")
    for np, threads in ((2, 1), (3, 2)):
        p = mpirun(np, "run", *rev, "--threads", str(threads), "--state", "reverse")
        if p.returncode != 0 or digest(p.stderr) != digest(err) or p.stdout != out:
            fail(f"revstate {np}x{threads} --state reverse: exit {p.returncode}, digest "
                 f"{digest(p.stderr) if p.returncode == 0 else '-'}, sequential "
                 f"{digest(err)}, stdout {'equal' if p.stdout == out else 'differs'}\n"
                 f"{p.stderr}")
    t.ok("revstate: the sequential digest and stdout with --state reverse on 2x1, 3x2 ranks")

    # (spans across ranks: the wire carries them, and the windows scheme's clocks and its
    # check read them on every rank - tests/models/spans.c, with and without a lookahead)
    spans = [os.path.join(build, "libspans.so"), "--lps", "64", "--end", "150"]
    windows = ["--sync", "conservative", "--conservative", "windows"]
    # (without a lookahead the ranks' clocks cannot pass each other: each event waits for
    # a GVT round across the ranks, about 1 ms (engine.c, TW_HELD_NS) - the quick tier runs
    # it to 20, 948 events)
    la0 = ["-P", "la=0"] + ([] if LONG else ["--end", "20"])
    for extra, np, threads in (([], 2, 1), (la0, 3, 2)):
        rc, out, err = run(kairos, "run", *spans, *extra, "--sync", "sequential")
        p = mpirun(np, "run", *spans, *extra, *windows, "--threads", str(threads))
        if p.returncode != 0 or digest(p.stderr) != digest(err) or p.stdout != out:
            fail(f"spans {extra} {np}x{threads} windows: exit {p.returncode}, digest "
                 f"{digest(p.stderr) if p.returncode == 0 else '-'}, sequential "
                 f"{digest(err)}, stdout {'equal' if p.stdout == out else 'differs'}\n"
                 f"{p.stderr}")
    p = mpirun(2, "run", *spans, "-P", "violate=30", *windows, "--threads", "1")
    if p.returncode != 1 or "starts before this event ends at" not in p.stderr or \
            "model 'spans', LP 1, virtual time 3" not in p.stderr:
        fail(f"spans violate=30 on 2 ranks: want the span refused, exit 1\n{p.stderr}")
    t.ok("spans: the sequential digest and stdout on 2x1 and 3x2 ranks (windows, with and "
         "without a lookahead); a send inside a span refused across ranks")


def stats_across_ranks():
    path = os.path.join(build, "cluster-stats.json")
    p = mpirun(2, "run", "phold", "--lps", "256", "--end", "20", "--threads", "1",
               "--stats", path)
    run(kairos, "run", "phold", "--lps", "256", "--end", "20", "--sync", "sequential",
        "--stats", path + ".seq")
    with open(path) as f:
        st = json.load(f)
    with open(path + ".seq") as f:
        sq = json.load(f)
    if p.returncode != 0 or st["ranks"] != 2 or len(st["per_rank"]) != 2:
        fail(f"--stats of 2 ranks: want ranks 2 and two per_rank rows\n{p.stderr}")
    if st["committed_events"] != sq["committed_events"] or \
            sum(r["committed_events"] for r in st["per_rank"]) != sq["committed_events"]:
        fail(f"--stats of 2 ranks: committed events {st['committed_events']} (rows "
             f"{[r['committed_events'] for r in st['per_rank']]}), sequential "
             f"{sq['committed_events']}")
    a, b = st["per_rank"]
    if a["events_to_ranks"] != b["events_from_ranks"] or not a["events_to_ranks"] or \
            not a["mpi_messages_sent"]:
        fail(f"--stats of 2 ranks: events and messages between the ranks do not add up: "
             f"{a} {b}")
    # PHOLD has a lookahead: the ranks' stamps make events safe, as between threads (how
    # many depends on timing - 87-94% with 16 384 LPs on a quiet machine - so only some)
    p = mpirun(2, "run", "phold", "--lps", "16384", "--end", "5", "--threads", "1",
               "--stats", path)
    with open(path) as f:
        st = json.load(f)
    if p.returncode != 0 or not st["safe_events"]:
        fail(f"--stats of 2 ranks: {st['safe_events']} of {st['committed_events']} events "
             f"safe; PHOLD with a lookahead across 2 ranks should run some safely\n{p.stderr}")
    t.ok("--stats of 2 ranks: every rank's events in the totals, a row per rank, what one "
         "sent the other took in, safe events across ranks")
    # --lp-stats: rank 0 writes every rank's rows, in LP order; their sums are the run's.
    csv_path = os.path.join(build, "cluster-lp.csv")
    p = mpirun(2, "run", os.path.join(build, "libchaos.so"), "--lps", "32", "--end", "30",
               "--threads", "2", "--stats", path, "--lp-stats", csv_path)
    with open(path) as f:
        st = json.load(f)
    import csv
    rows = list(csv.DictReader(open(csv_path)))
    want = {"committed": st["committed_events"], "rollbacks": st["rollbacks"],
            "rolled_back": st["rolled_back_events"]}
    got = {k: sum(int(r[k]) for r in rows) for k in want}
    if p.returncode != 0 or [int(r["lp"]) for r in rows] != list(range(32)) or got != want or \
            [r["rank"] for r in rows] != ["0"] * 16 + ["1"] * 16 or \
            {r["thread"] for r in rows} != {"0", "1"}:
        fail(f"--lp-stats of 2 ranks x 2 threads: want 32 rows in LP order, ranks by block, "
             f"sums {want}; got {got}\n{p.stderr}")
    t.ok("--lp-stats of 2 ranks: rank 0 writes every rank's rows in LP order, their sums the "
         "run's")


def failed_run_stats(what, path, msg):
    """Issue 35, 8: a run that failed across ranks still has its --stats, from rank 0:
    ended_by "error", every rank's counters, the message (or that another rank had it)."""
    try:
        with open(path) as f:
            st = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{what}, 4 ranks: no --stats from the failed run ({e})")
    text = msg.removeprefix("kairos: error: ")
    if st.get("ended_by") != "error" or st.get("ranks") != 4 or st.get("run_digest") is not \
            None or st.get("error") not in (text, "a model error on another rank, which "
                                             "printed it"):
        fail(f"{what}, 4 ranks: --stats ended_by {st.get('ended_by')}, ranks "
             f"{st.get('ranks')}, digest {st.get('run_digest')}, error {st.get('error')!r}")


def errors_across_ranks():
    """A model error, a crash and an endless event on one rank of 4: every rank stops, the
    sequential engine's message once, its exit status (and its stdout, but for a rank that
    dies: docs/cluster.md)."""
    misuse, spin = os.path.join(build, "libmisuse.so"), os.path.join(build, "libspinloop.so")
    ledger = os.path.join(build, "libledger.so")
    cases = [("a model error on rank 1", [misuse, "-P", "case=9"], True),
             ("an error in the commit hook (rank 0)", [ledger, "-P", "fail_at=5.1"], True),
             ("an error in the commit hook's last call", [ledger, "-P", "fail_at=9.7"], True),
             ("a segfault on rank 1", [misuse, "-P", "case=15"], True),
             ("an endless event on rank 0 (--event-timeout)",
              [spin, "-P", "case=1", "--event-timeout", "1"], False)]
    # (one LP loops: when several ranks each time out on an endless event of their own,
    # each reports its own - the sequential engine names the first; docs/cluster.md)
    # (ThreadSanitizer cannot follow the longjmp out of the fault handler that defers a
    # crash on the parallel engines: bad_input.py skips it there too)
    if kind == "tsan":
        cases = [c for c in cases if "segfault" not in c[0]]
    if not LONG:  # (the quick tier: an error, a crash, a timeout; the hooks' errors: long)
        cases = [c for c in cases if "commit hook" not in c[0]]
    for what, args, same_out in cases:
        base = ["run", *args, "--lps", "4", "--end", "10"]
        rc, out, err = run(kairos, *base, "--sync", "sequential", check=False)
        msg = [ln for ln in err.splitlines() if ln.startswith("kairos: error:")]
        if rc != 1 or len(msg) != 1:
            fail(f"{what}: the sequential run must fail with one message:\n{err}")
        stats = os.path.join(build, "cluster-failed.json")
        if os.path.exists(stats):
            os.remove(stats)
        p = mpirun(4, *base, "--threads", "1", "--stats", stats)
        once(p, 1, msg[0], what + ", 4 ranks")
        if same_out and p.stdout != out:
            fail(f"{what}: stdout differs from the sequential stdout:\n{p.stdout}\n--\n{out}")
        if "endless" not in what:  # (under ThreadSanitizer a timeout ends the process)
            failed_run_stats(what, stats, msg[0])

    # A model error while a snapshot is due at every GVT round: the round that commits it
    # (on rank 0) is often a snapshot's, which every rank then skips (tw_rank_any: 1 run in
    # 3 with a snapshot every time unit); the error is reported as without snapshots, and
    # the last snapshot, resumed, meets it again.
    hazard = os.path.join(build, "libhazard.so")
    base = ["run", hazard, "-P", "case=16", "-P", "at=30", "-P", "work=100000", "--lps", "4",
            "--end", "100"]
    rc, out, err = run(kairos, *base, "--sync", "sequential", check=False)
    msg = [ln for ln in err.splitlines() if ln.startswith("kairos: error:")]
    snap = os.path.join(build, "cluster-err.snap")
    shutil.rmtree(snap, ignore_errors=True)
    # (50-us GVT rounds: under load, the default 5-ms round could reach the error first,
    # skip that snapshot, and leave none to resume - seen once in a loaded suite)
    p = mpirun(2, *base, "--threads", "1", "--snapshot", snap, "--snapshot-every", "0.1",
               "--gvt-period", "0.05")
    once(p, 1, msg[0], "a model error on rank 0, 2 ranks writing snapshots")
    if p.stdout != out:
        fail("a model error, 2 ranks writing snapshots: stdout differs from the sequential")
    if not os.path.exists(os.path.join(snap, "snapshot")):
        fail("a model error at 30, 2 ranks writing snapshots every 0.1: none was written")
    q = subprocess.run([kairos, "resume", snap, "--sync", "sequential", "--progress", "off"],
                       capture_output=True, text=True)
    if q.returncode != 1 or msg[0] not in q.stderr:
        fail(f"the last snapshot before a model error, resumed: want the same error\n"
             f"{q.stderr}")


def interrupted_across_ranks():
    """SIGTERM to mpirun (which passes it to every rank): all ranks stop at one committed
    time T, and the digest is that of --end T."""
    import signal
    import time
    cmd = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader", "--mca",
           "btl_vader_single_copy_mechanism", "none", "-np", "2", kairos, "run", "phold",
           "--lps", "1024", "--end", "1e9", "--threads", "1", "--progress", "on"]
    e = env_with(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=e)
    # Signal only once rank 0's first progress line shows the run under way: every rank is
    # then past MPI_Init and its handlers (the start agrees on a reduction). A fixed wait was
    # too short once under the parallel suite's load.
    head, deadline = b"", time.monotonic() + 120
    while b"[kairos]" not in head and time.monotonic() < deadline and p.poll() is None:
        head += os.read(p.stderr.fileno(), 4096)
    if b"[kairos]" not in head:
        p.kill()
        fail(f"SIGTERM to mpirun: no progress line within 120 s:\n{head.decode()}")
    p.send_signal(signal.SIGTERM)
    try:
        _, rest = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("SIGTERM to mpirun: the ranks did not stop within 60 s")
    err = head.decode() + rest
    m = re.search(r"interrupted by SIGTERM: committed up to virtual time (\S+)", err)
    if not m or err.count("run digest:") != 1:
        fail(f"SIGTERM to mpirun: want one summary saying where the run stopped:\n{err}")
    _, _, seq = run(kairos, "run", "phold", "--lps", "1024", "--end", m.group(1), "--sync",
                    "sequential")
    if digest(err) != digest(seq):
        fail(f"SIGTERM to mpirun: digest {digest(err)}, --end {m.group(1)} sequential "
             f"{digest(seq)}")
    t.ok("SIGTERM to mpirun: every rank stops at one committed time T, the digest of --end T")
    # Issue 35, 7: the ranks signalled themselves (a batch system's SIGTERM to every
    # process; a launcher that leaves them in the terminal's group, whose Ctrl-C reaches
    # them and mpirun, which forwards it again): one summary from rank 0 and its status,
    # 143 - a rank that exited 143 first made mpirun abort the job and cut rank 0's
    # report, and the echo counted as a second signal ("interrupted twice")
    for echo in (False, True) if LONG else (True,):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=e, start_new_session=True)
        head, deadline = b"", time.monotonic() + 120
        while b"[kairos]" not in head and time.monotonic() < deadline and p.poll() is None:
            head += os.read(p.stderr.fileno(), 4096)
        ranks = subprocess.run(["pgrep", "-P", str(p.pid), "-x", "kairos"], capture_output=True,
                               text=True).stdout.split()
        for _ in range(2 if echo else 1):
            for pid in ranks:
                os.kill(int(pid), signal.SIGTERM)
            time.sleep(0.002)
        try:
            _, rest = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            fail("SIGTERM to the ranks: they did not stop within 60 s")
        err = head.decode() + rest
        if len(ranks) != 2 or "interrupted twice" in err or err.count("run digest:") != 1 \
                or "interrupted by SIGTERM" not in err or p.returncode != 143:
            fail(f"SIGTERM to the ranks {ranks}{' twice' if echo else ''}: want one summary "
                 f"and exit 143, got exit {p.returncode}:\n{err[-3000:]}")
    t.ok("SIGTERM to every rank, once or with an echo: one summary, exit 143")


def resumed_across_ranks():
    """A snapshot written by one process (sequential, or optimistic on 2 threads) resumed on
    2 and 3 ranks: rank 0 cuts the output file it is given to what the snapshot had
    committed and appends the rest - the uninterrupted run's digest and stdout, byte for
    byte."""
    chaos = os.path.join(build, "libchaos.so")
    cases = {"chaos": ([chaos, "--lps", "32", "--end", "60"], ["--threads", "2"]),
             "pcs": (["pcs", "--lps", "64", "--end", "0.3"], ["--sync", "sequential"]),
             "datastore": (["datastore", "--lps", "16", "--end", "1"], ["--sync", "sequential"])}
    if kind in ("asan", "tsan"):  # (numbers in those states equal sanitizer mappings'
        # addresses now and then - PCS's INT_MAX lies in AddressSanitizer's low shadow - and
        # a snapshot cannot save them: snapshot.py; states of counts and pointers here)
        ring = os.path.join(build, "libring.so")
        cases = {"ring": ([ring, "--lps", "16", "--end", "20"], ["--sync", "sequential"]),
                 # (to 40: with most events safe, a run to 10 took 3-10 GVT rounds and now
                 # and then wrote no snapshot - under ASan 1 run in 6; to 40, 13-15 rounds)
                 "phold": (["phold", "--lps", "64", "--end", "40"],
                           ["--threads", "2", "--gvt-period", "0.05"])}
    if not LONG:  # (the quick tier: one model)
        cases = dict(list(cases.items())[:1])
    for name, (args, writer) in cases.items():
        snap = os.path.join(build, f"cluster-{name}.snap")
        ref_path = os.path.join(build, f"cluster-{name}.out")
        shutil.rmtree(snap, ignore_errors=True)
        every = str(float(args[args.index("--end") + 1]) / 3)
        with open(ref_path, "w") as out:
            p = subprocess.run([kairos, "run", *args, *writer, "--progress", "off", "--snapshot",
                                snap, "--snapshot-every", every], stdout=out,
                               stderr=subprocess.PIPE, text=True)
        ref = open(ref_path).read()
        wrote = re.search(r"snapshots: +([1-9]\d*) written", p.stderr)
        if p.returncode != 0 or not wrote or (name == next(iter(cases)) and not ref):
            fail(f"{name}: the run writing snapshots (want some; output from the first "
                 f"model):\n{p.stderr}")
        for np, threads in ((2, 1), (3, 2)):
            got_path = os.path.join(build, f"cluster-{name}.{np}.out")
            shutil.copyfile(ref_path, got_path)  # (past the snapshot too: cut, then appended)
            q = mpirun(np, shell=f'exec "$KAIROS" resume {snap} --threads {threads} '
                                 f'--progress off >> {got_path}')
            what = f"{name} resumed on {np} ranks x {threads}"
            if q.returncode != 0 or digest(q.stderr) != digest(p.stderr):
                fail(f"{what}: exit {q.returncode}, digest {digest(q.stderr)}, uninterrupted "
                     f"{digest(p.stderr)}\n{q.stderr}")
            if open(got_path).read() != ref:
                fail(f"{what}: the output file is not the uninterrupted run's stdout")
            if q.stderr.count("run digest:") != 1 or "resumed:" not in q.stderr:
                fail(f"{what}: want one summary, from rank 0, saying it resumed:\n{q.stderr}")
    writers = ", ".join(f"{m} ({' '.join(w)})" for m, (_, w) in cases.items())
    t.ok(f"snapshots of {writers} resumed on 2x1 and 3x2 ranks x threads: the uninterrupted "
         "digest, the output file cut and completed")
    # A set-up that fails on one rank fails on all, reported once (the others waited in the
    # engine for it before): rank 0's output file not the snapshot's (left as it was), the
    # snapshot missing on rank 1.
    first = next(iter(cases))  # (its snapshot comes after some output)
    snap = os.path.join(build, f"cluster-{first}.snap")
    bad = os.path.join(build, "cluster-bad.out")
    with open(bad, "w") as f:
        f.write("not the run's output\n" +
                open(os.path.join(build, f"cluster-{first}.out")).read())
    before = open(bad).read()
    p = mpirun(2, shell=f'exec "$KAIROS" resume {snap} --progress off >> {bad}', refused=True)
    once(p, 2, "rank 0 of 2 (1 of the ranks failed, the lowest reports): stdout does not start "
         "with the output of the snapshot's run", "resume on 2 ranks into another file")
    if open(bad).read() != before:
        fail("resume on 2 ranks into another file: the file was changed")
    pick = (f'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then d=/nonexistent; else d={snap}; fi; '
            f'exec "$KAIROS" resume "$d" --progress off > /dev/null')
    once(mpirun(2, shell=pick, refused=True), 2, "rank 1 of 2",
         "resume on 2 ranks, the snapshot missing on 1")


def resume_into(snap, ref_path, name, layout, base=None):
    """Resume snap into a copy of base (the uninterrupted output unless said: cut, then
    appended), which must end as the uninterrupted output; layout is (ranks, options). The
    resumed run's stderr."""
    np, opts = layout
    got_path = f"{ref_path}.{np}.got"
    shutil.copyfile(base or ref_path, got_path)
    cmd = f'exec "$KAIROS" resume {snap} --progress off {opts} >> {got_path}'
    if np:
        q = mpirun(np, shell=cmd)
    else:
        q = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120,
                           env=env_with(KAIROS=kairos))
    if q.returncode != 0:
        fail(f"{name}: resume on {np or 1} process(es) {opts}: exit {q.returncode}\n{q.stderr}")
    if open(got_path).read() != open(ref_path).read():
        fail(f"{name}: resumed on {np or 1} process(es) {opts}: the output file is not the "
             "uninterrupted run's stdout")
    return q.stderr


def written_across_ranks():
    """Snapshots written by runs across 2x1 and 3x2 ranks x threads: the run itself keeps
    the sequential digest and stdout, and its last snapshot resumed in one process and on 2
    ranks ends with them too. A run killed with SIGKILL after its first snapshot resumes
    on 2 ranks writing snapshots again, and the last of those in one process. A state that
    a snapshot cannot hold on rank 1 skips the snapshot, said once by rank 0."""
    chaos = os.path.join(build, "libchaos.so")
    cases = {"chaos": [chaos, "--lps", "32", "--end", "60"],
             "pcs": ["pcs", "--lps", "64", "--end", "0.3"],
             "datastore": ["datastore", "--lps", "16", "--end", "1"]}
    if kind in ("asan", "tsan"):  # (as in resumed_across_ranks; long enough for GVT rounds
        # past the snapshot times: ring's 16 LPs to 20 made 3 rounds under ASan)
        cases = {"ring": [os.path.join(build, "libring.so"), "--lps", "16", "--end", "200"],
                 "phold": ["phold", "--lps", "64", "--end", "100"]}
    if not LONG:  # (the quick tier: one model)
        cases = dict(list(cases.items())[:1])
    for name, args in cases.items():
        _, out, err = run(kairos, "run", *args, "--sync", "sequential")
        ref_path = os.path.join(build, f"cluster-w-{name}.ref")
        with open(ref_path, "w") as f:
            f.write(out)
        every = str(float(args[args.index("--end") + 1]) / 5)
        for np, threads in ((2, 1), (3, 2)):
            snap = os.path.join(build, f"cluster-w-{name}-{np}.snap")
            shutil.rmtree(snap, ignore_errors=True)
            p = mpirun(np, "run", *args, "--threads", str(threads), "--progress", "off",
                       "--gvt-period", "0.05", "--snapshot", snap, "--snapshot-every", every)
            what = f"{name} on {np} ranks x {threads} writing snapshots"
            if p.returncode != 0 or digest(p.stderr) != digest(err) or p.stdout != out:
                fail(f"{what}: exit {p.returncode}, digest {digest(p.stderr)} (sequential "
                     f"{digest(err)}), stdout equal: {p.stdout == out}\n{p.stderr}")
            if not re.search(r"snapshots: +([1-9]\d*) written", p.stderr):
                fail(f"{what}: want snapshots written, said in the summary:\n{p.stderr}")
            if p.stderr.count("rank 0's output goes through mpirun") != 1:
                fail(f"{what}: rank 0's output through mpirun: want one warning that a "
                     f"dying job loses what mpirun has not written:\n{p.stderr}")
            for layout in ((0, "--sync sequential"), (2, "--threads 1")):
                q = resume_into(snap, ref_path, what, layout)
                if digest(q) != digest(err):
                    fail(f"{what}: resumed on {layout}: digest {digest(q)}, uninterrupted "
                         f"{digest(err)}")
    t.ok(f"snapshots written on 2x1 and 3x2 ranks x threads ({', '.join(cases)}): the "
         "sequential digest and stdout, and so have their resumes in one process and on 2 ranks")
    killed_and_chained()
    # A state a snapshot cannot hold, on rank 1 only (LP 3 of 4): rank 0 says so, once for
    # each snapshot. (Its digest is not compared: the pointer makes it vary, as warned; the
    # busy loop makes the run long enough for GVT rounds past the snapshot times.)
    hazard = os.path.join(build, "libhazard.so")
    p = mpirun(2, "run", hazard, "--lps", "4", "--end", "100", "-P", "case=2", "-P",
               "heap_lp=3", "-P", "work=200000", "--threads", "1", "--snapshot",
               os.path.join(build, "cluster-w-hazard.snap"), "--snapshot-every", "10")
    skipped = re.findall(r"the snapshot at virtual time (\S+) was not written \(LP 3's state "
                         r"holds a pointer to", p.stderr)
    if p.returncode != 0 or "end time reached" not in p.stderr or not skipped or \
            len(set(skipped)) != len(skipped) or \
            len(skipped) != p.stderr.count("was not written"):
        fail(f"a C-heap pointer in LP 3 on rank 1: want the run to go on to its end, rank 0 "
             f"saying once for each snapshot that it was not written and why:\n{p.stderr}")
    t.ok("a state a snapshot cannot hold on rank 1: not written, said by rank 0 (naming the "
         "LP), the run goes on to its end")


def killed_and_chained():
    """PHOLD on 2 ranks killed (SIGKILL to mpirun) after its first snapshot; resumed on 2
    ranks x 2 threads writing snapshots again; the last of those resumed in one process:
    the uninterrupted digest and stdout. (PHOLD prints nothing: the chaos model's lines.)"""
    import signal
    import time
    # (long enough that the run is far from its end when killed, and that the resumed run
    # reaches several snapshots of its own: a run that ended first would test nothing)
    args = [os.path.join(build, "libchaos.so"), "--lps", "64"]
    end = 2000
    if kind in ("asan", "tsan"):
        args = [os.path.join(build, "libring.so"), "--lps", "64", "-P", "laps=1000000"]
        end = 4000
    args += ["--end", str(end)]
    _, out, err = run(kairos, "run", *args, "--sync", "sequential")
    ref_path = os.path.join(build, "cluster-k.ref")
    with open(ref_path, "w") as f:
        f.write(out)
    snap, snap2 = (os.path.join(build, f"cluster-k{i}.snap") for i in (1, 2))
    for d in (snap, snap2):
        shutil.rmtree(d, ignore_errors=True)
    part = os.path.join(build, "cluster-k.out")
    open(part, "w").close()
    # (rank 0 writes the file itself, as docs/cluster.md says to: through mpirun, output
    # not yet passed on when mpirun dies too would be lost)
    run_line = " ".join(args) + f" --threads 1 --progress off --snapshot {snap} " \
                                f"--snapshot-every {end / 100}"
    cmd = ["mpirun", "--oversubscribe", "--mca", "btl", "self,vader", "--mca",
           "btl_vader_single_copy_mechanism", "none", "-np", "2", "sh", "-c",
           f'exec "$KAIROS" run {run_line} >> {part}']
    e = env_with(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", KAIROS=kairos)
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=e)
    deadline = time.monotonic() + 120
    while not os.path.exists(os.path.join(snap, "snapshot")) and p.poll() is None and \
            time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.02)
    if p.poll() is not None:
        fail(f"2 ranks to be killed after a snapshot: the run ended first (exit {p.returncode})")
    # (the ranks die, as on a machine that fails: mpirun itself cannot pass SIGKILL on)
    ranks = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True)
    for pid in ranks.stdout.split():
        os.kill(int(pid), signal.SIGKILL)
    p.send_signal(signal.SIGKILL)
    _, said = p.communicate()
    if b"goes through mpirun" in said:
        fail("rank 0 writing its own output file: no warning about mpirun passing it on")
    if not os.path.exists(os.path.join(snap, "snapshot")):
        fail("2 ranks killed after a snapshot: none was written")
    q = resume_into(snap, ref_path, "killed on 2 ranks", (2, f"--threads 2 --snapshot {snap2} "
                                                          f"--snapshot-every {end / 10}"),
                    base=part)
    if digest(q) != digest(err) or not re.search(r"snapshots: +([1-9]\d*) written", q):
        fail(f"killed on 2 ranks, resumed on 2x2 writing snapshots: digest {digest(q)}, "
             f"uninterrupted {digest(err)}\n{q}")
    q = resume_into(snap2, ref_path, "resumed twice", (0, "--sync sequential"))
    if digest(q) != digest(err):
        fail(f"the snapshot written by a resumed run on 2 ranks, resumed in one process: "
             f"digest {digest(q)}, uninterrupted {digest(err)}")
    t.ok("killed on 2 ranks after a snapshot, resumed on 2x2 writing snapshots, the last of "
         "those resumed in one process: the uninterrupted digest and stdout")


def rootsim_across_ranks():
    """The ROOT-Sim 3 layer under mpirun: every process runs the model's main, and Kairos
    gives each its block of the configuration's LPs; the run (ended by the model's
    `committed` test, done() across ranks) commits one process's digest and output."""
    prog = os.path.join(build, "rootsim", "buffers")
    ref = subprocess.run([prog, "--sync", "sequential"], capture_output=True, text=True,
                         timeout=120)
    for np_, threads in ((2, 1), (3, 1), (2, 2)):
        p = mpirun(np_, "--threads", str(threads), program=prog)
        if p.returncode or digest(p.stderr) != digest(ref.stderr) or p.stdout != ref.stdout:
            fail(f"ROOT-Sim buffers on {np_} ranks x {threads}: exit {p.returncode}, digest or "
                 f"output differ from one process's\n{p.stdout}\n{p.stderr}")
    t.ok("a ROOT-Sim 3 model on 2 and 3 ranks (and 2 x 2 threads): one process's digest and "
         "output")


def ross_across_ranks():
    """The ROSS layer under mpirun: each process a PE, as on ROSS (tw_nnodes, g_tw_mynode,
    tw_define_lps's LPs each process's). PHOLD's LPs split over 1, 2 and 3 processes commit
    the history of one process with them all (digest and every LP's statistics); the tower
    model (two types, a custom mapping, a PE final) reduces its PE count with MPI_Reduce
    across the ranks, the same on the optimistic and the windows engines."""
    phold = os.path.join(build, "ross", "phold")
    tower = os.path.join(build, "ross", "tower")
    ref = subprocess.run([phold, "--synch=1", "--nlp=96", "--end=100", "--print-every=16"],
                         capture_output=True, text=True, timeout=120)
    want = [ln for ln in ref.stdout.splitlines() if ln.startswith("LP ")]
    for np_, extra in ((2, []), (3, []), (2, ["--state", "reverse"])):
        p = mpirun(np_, "--synch=3", f"--nlp={96 // np_}", "--end=100", "--print-every=16",
                   *extra, program=phold)
        got = [ln for ln in p.stdout.splitlines() if ln.startswith("LP ")]
        if p.returncode or digest(p.stderr) != digest(ref.stderr) or got != want or \
                p.stdout.count("PHOLD:") != 1:
            fail(f"ROSS phold on {np_} ranks: exit {p.returncode}, digest, LP lines or the "
                 f"header (rank 0 only) differ from one process's\n{p.stdout}\n{p.stderr}")
    t.ok("a ROSS model on 2 and 3 ranks (its LPs per process), and on 2 with --state "
         "reverse: one process's digest and statistics; its main prints once (g_tw_mynode)")
    digests = set()
    for synch in ("--synch=3", "--synch=2"):
        p = mpirun(2, synch, "--end=200", program=tower)
        if p.returncode or "PE finals: 2\n" not in p.stdout:
            fail(f"tower on 2 ranks {synch}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
        digests.add(digest(p.stderr))
    if len(digests) != 1:
        fail(f"tower on 2 ranks: the optimistic and windows engines differ: {digests}")
    t.ok("a ROSS model's MPI_Reduce after tw_run sums over the ranks (PE finals: 2); "
         "optimistic and windows give one digest on 2 ranks")
    # a custom mapping that deals the ids out to the PEs (ROSS-Models' torus places its
    # two LP types in two ranges): Kairos calls it as each PE to learn every LP's type
    p = mpirun(2, "--synch=3", "--end=200", "--scatter=2", program=tower)
    if p.returncode or digest(p.stderr) not in digests or "PE finals: 2\n" not in p.stdout:
        fail(f"tower --scatter=2 on 2 ranks: exit {p.returncode}, want digest {digests}\n"
             f"{p.stdout}\n{p.stderr}")
    p = mpirun(2, "--synch=3", "--end=200", "--scatter=1", program=tower)
    if p.returncode == 0 or "its type was set outside the mapping function" not in p.stderr:
        fail(f"tower --scatter=1 on 2 ranks: want types set outside the mapping refused\n"
             f"{p.stderr}")
    p = mpirun(2, "--synch=3", "--end=200", "--scatter=3", program=tower)
    if p.returncode == 0 or "ross-custom-mapping" not in p.stderr or \
            "may read nothing of the process but g_tw_mynode" not in p.stderr:
        fail(f"tower --scatter=3 on 2 ranks: want the ranks' types found to differ\n{p.stderr}")
    t.ok("a custom mapping that scatters the ids over the PEs: the digest of the block "
         "mapping; types set outside it, or by more than g_tw_mynode, refused")


without_mpirun()
if not shutil.which("mpirun"):
    print("skipped: the checks under mpirun (no mpirun on this machine)")
elif not os.path.exists(MODULE):
    print(f"skipped: the checks under mpirun ({MODULE} not built: CMake found no MPI)")
else:  # (each case writes files of its own names; two at a time: most of a case's time
    # is mpirun's launch and teardown, not CPU; under the sanitizers CI already runs two
    # tests at once)
    t.cases([with_mpirun, different_ranks, same_as_sequential, stats_across_ranks,
             errors_across_ranks, interrupted_across_ranks, resumed_across_ranks,
             written_across_ranks, ross_across_ranks, rootsim_across_ranks],
            jobs=1 if kind else 2)
t.finish()
