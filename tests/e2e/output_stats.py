"""The command line's user-visible behaviour: help texts, model listing, the --stats JSON
schema, and no progress line when stderr is not a terminal."""
import json
import os
import shutil
import sys
import tempfile
from common import run, fail, digest, Tally

kairos, build = sys.argv[1], sys.argv[2]
t = Tally()

rc, out, err = run(kairos, "--help")
for n in ("kairos run MODEL", "--sync", "--threads", "--ckpt-interval", "--gvt-period", "--stats", "-P"):
    if n not in out:
        fail(f"--help lacks {n}")
t.ok("kairos --help")
rc, out, err = run(kairos, "models")
if "phold" not in out or "queueing" not in out:
    fail("kairos models lacks phold/queueing")
t.ok("kairos models")
rc, out, err = run(kairos, "run", "phold", "--help")
for n in ("population", "lookahead", "mean", "remote", "busy_us", "state_bytes"):
    if n not in out:
        fail(f"phold --help lacks {n}")
t.ok("kairos run phold --help lists parameters")

required = ["engine", "threads", "lps", "end_time", "seed", "committed_events", "processed_events",
            "rollbacks", "antimessages", "wall_seconds", "peak_rss_bytes", "run_digest", "config",
            "machine", "threads_detail"]
def lp_stats_rows(path, lps):
    import csv
    rows = list(csv.DictReader(open(path)))
    cols = ["lp", "rank", "thread", "committed", "processed", "rollbacks", "rolled_back",
            "state_bytes"]
    if not rows or list(rows[0].keys()) != cols:
        fail(f"--lp-stats {path}: want the columns {cols}")
    if [int(r["lp"]) for r in rows] != list(range(lps)):
        fail(f"--lp-stats {path}: want one row per LP, in LP order")
    for r in rows:
        if int(r["processed"]) != int(r["committed"]) + int(r["rolled_back"]) or \
                int(r["state_bytes"]) <= 0:
            fail(f"--lp-stats {path}: an inconsistent row {r}")
    return rows


def lp_stats(d):
    """--lp-stats: a row per LP whose sums are the summary's counts, on every engine."""
    chaos = os.path.join(build, "libchaos.so")
    path = os.path.join(d, "lp.csv")
    for engine, threads in ((["--sync", "sequential"], {"0"}),
                            # (--balance auto may retire a worker whose core is shared,
                            # and its LPs move: seen under ThreadSanitizer in a busy suite)
                            (["--threads", "2", "--balance", "off"], {"0", "1"}),
                            (["--sync", "conservative", "--threads", "2", "-P", "span=0.05"],
                             {""})):
        rc, out, err = run(kairos, "run", chaos, "--lps", "32", "--end", "30", *engine,
                           "--lp-stats", path)
        st = err.stats
        rows = lp_stats_rows(path, 32)
        sums = {k: sum(int(r[k]) for r in rows) for k in ("committed", "rollbacks",
                                                          "rolled_back")}
        if sums != {"committed": st["committed_events"], "rollbacks": st["rollbacks"],
                    "rolled_back": st["rolled_back_events"]}:
            fail(f"--lp-stats {' '.join(engine)}: sums {sums} against the run's "
                 f"{st['committed_events']}, {st['rollbacks']}, {st['rolled_back_events']}")
        if {r["thread"] for r in rows} != threads or {r["rank"] for r in rows} != {"0"}:
            fail(f"--lp-stats {' '.join(engine)}: threads {set(r['thread'] for r in rows)}")
    t.ok("--lp-stats: a row per LP, its sums the run's committed events, rollbacks and "
         "events undone (sequential, optimistic 2 threads, conservative)")
    rc, _, err = run(kairos, "run", "phold", "--end", "5", "--lp-stats", "/nonexistent/d/x.csv",
                     check=False)
    if rc != 2 or "--lp-stats /nonexistent/d/x.csv: cannot create it" not in err:
        fail(f"unwritable --lp-stats path must fail clearly, before the run:\n{err}")
    t.ok("unwritable --lp-stats path is a clear error before the run")



with tempfile.TemporaryDirectory() as d:
    # each thread's CPU seconds: some for every thread that ran events, none past what
    # its process had (the wall time, plus the set-up before it on the run's thread)
    for eng in (["--sync", "sequential"], ["--threads", "2"], ["--sync", "conservative"]):
        path = os.path.join(d, "cpu.json")
        run(kairos, "run", "phold", "--end", "500", "--stats", path, *eng)
        s = json.load(open(path))
        cpu = [x["cpu_seconds"] for x in s["threads_detail"]]
        ran = [x["processed"] > 0 for x in s["threads_detail"]]
        if any(r and c <= 0 for r, c in zip(ran, cpu)) or max(cpu) > 2 * s["wall_seconds"] + 1:
            fail(f"{' '.join(eng)}: cpu_seconds {cpu} for a run of {s['wall_seconds']} s")
    t.ok("threads_detail cpu_seconds: each thread's CPU time (sequential, optimistic, "
         "conservative)")
    for eng in (["--sync", "sequential"], ["--threads", "2"]):
        path = os.path.join(d, "s.json")
        rc, out, err = run(kairos, "run", "phold", "--end", "1500", "--stats", path, *eng, "-P", "mean=0.9")
        s = json.load(open(path))
        for k in required:
            if k not in s:
                fail(f"stats lacks {k}")
        if s["run_digest"] != digest(err):
            fail("stats digest differs from the summary")
        if s["committed_events"] <= 0 or s["processed_events"] < s["committed_events"]:
            fail("stats counts are inconsistent")
        if len(s["threads_detail"]) != s["threads"]:
            fail("threads_detail has one entry per thread")
        if sum(x["committed"] for x in s["threads_detail"]) != s["committed_events"]:
            fail("per-thread committed counts do not add up")
        if s["config"]["params"] != {"mean": "0.9"}:
            fail(f"config.params wrong: {s['config']['params']}")
        ser = s["series"]
        if ser["columns"] != ["wall_seconds", "gvt", "committed", "processed", "rss_bytes",
                              "rollbacks", "rolled_back", "preempted_at_calls",
                              "preempted_by_ticks"]:
            fail(f"series columns: {ser['columns']}")
        if any(len(row) != len(ser["columns"]) for row in ser["rows"]):
            fail("series rows must match the columns")
        for c in (2, 3, 5, 6, 7, 8):
            if [r[c] for r in ser["rows"]] != sorted(r[c] for r in ser["rows"]):
                fail(f"{ser['columns'][c]} counts in the series must not decrease")
        if "\r" in err:
            fail("progress line printed although stderr is not a terminal")
    t.ok("--stats JSON has the documented keys and consistent counts; no progress off-terminal")
    rc, out, err = run(kairos, "run", "phold", "--end", "20", "--stats", "/nonexistent/dir/s.json", check=False)
    if rc != 2 or "--stats /nonexistent/dir/s.json: cannot create it" not in err or "run digest" in err:
        fail(f"unwritable --stats path must fail clearly, before the run:\n{err}")
    t.ok("unwritable --stats path is a clear error before the run")
    # A model file whose name is not UTF-8 (a Latin-1 e-acute) and a parameter value with
    # such bytes: --stats is still UTF-8 JSON, the bytes kept as \u00XX.
    so = os.path.join(d, "chaos-caf\xe9.so".encode("latin-1").decode("utf-8", "surrogateescape"))
    shutil.copy(os.path.join(build, "libchaos.so"), so)
    st = os.path.join(d, "latin.json")
    run(kairos, "run", so, "--lps", "4", "--end", "5", "--stats", st)
    try:
        model = json.loads(open(st, "rb").read().decode("utf-8"))["config"]["model"]
    except (UnicodeDecodeError, ValueError) as e:
        fail(f"--stats of a model path with a Latin-1 byte is not UTF-8 JSON: {e}")
    if not model.endswith("chaos-caf\u00e9.so"):
        fail(f"--stats names the model {model!r}")
    t.ok("--stats stays UTF-8 JSON when a path or value is not UTF-8")
    lp_stats(d)


t.finish()
