"""Model metrics (kr_metric, issue 37 item 5) and the state-side statistics (kr_tally,
kr_histogram, kr_timeavg). The timers model records each served customer's wait and the
queue at each arrival; with -P dump=1 it prints every value too. The --stats model_metrics
must be the values it printed: the counts, minimum and maximum exactly, the sums to rounding,
each bin's count, and the percentiles within the sketch's 1% of the exact ones; they must be
the same bits on every engine, thread count and state mode, across 2 MPI ranks, and after a
resume from a snapshot; --end inf widens the bins (the finite model). Misuse - a name the
model did not declare, a NaN, a call in init - is a model error naming kr_metric. The
tallies the model keeps (count, mean, variance, min, max, a histogram's median) match its
printed values."""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from common import run, fail, Tally, expect_exit, digest, build_kind

kairos, build = sys.argv[1], sys.argv[2]
model = os.path.join(build, "libtimers.so")
t = Tally()
tmp = tempfile.mkdtemp(prefix="kr-metrics-")
args = [model, "--lps", "32", "--end", "200"]


def metrics_of(err):
    return err.stats["model_metrics"]


rc, out, err = run(kairos, "run", *args, "-P", "dump=1", "--sync", "sequential")
mm = metrics_of(err)
values = {"wait": [], "queue": []}
for line in out.splitlines():
    w = line.split()
    if w[0] == "metric":
        values[w[1]].append((float(w[2]), float(w[3])))
for name, tv in values.items():
    m = mm[name]
    vs = sorted(v for _, v in tv)
    n = len(vs)
    if n < 1000 or m["count"] != n or m["min"] != vs[0] or m["max"] != vs[-1] or \
            not math.isclose(m["sum"], math.fsum(vs), rel_tol=1e-9, abs_tol=1e-9):
        fail(f"{name}: count {m['count']} min {m['min']} max {m['max']} sum {m['sum']}, the "
             f"values printed: {n}, {vs[0]}, {vs[-1]}, {math.fsum(vs)}")
    for q in (0.5, 0.9, 0.99):
        exact = vs[int(q * (n - 1))]
        got = m[f"p{round(q * 100)}"]
        if abs(got - exact) > 0.0101 * abs(exact) + 1e-12:
            fail(f"{name} p{round(q * 100)}: {got}, exactly {exact} (more than 1% apart)")
    width = m["bin_width"]
    want = {}
    for tm, _ in tv:
        b = min(int(tm // width), 99)
        want[b] = want.get(b, 0) + 1
    got = {round(b["t"] / width): b["count"] for b in m["bins"]}
    if got != want or width != 2:
        fail(f"{name}: bins of width {width} hold {got}, the printed values {want}")
t.ok(f"model_metrics are the values printed: counts, min, max, sums, bins, percentiles "
     f"within 1% ({len(values['wait'])} waits, {len(values['queue'])} queue lengths)")

# the tallies: per LP, from the same waits printed in the same order
tallies = [line.split() for line in out.splitlines() if line.startswith("tally ")]
n_all = sum(int(x[3]) for x in tallies)
if len(tallies) != 32 or n_all != len(values["wait"]):
    fail(f"{len(tallies)} tallies counting {n_all} waits, {len(values['wait'])} recorded")
lo, hi = min(float(x[9]) for x in tallies if int(x[3])), max(float(x[11]) for x in tallies)
total = sum(int(x[3]) * float(x[5]) for x in tallies)
if lo != mm["wait"]["min"] or hi != mm["wait"]["max"] or \
        not math.isclose(total, mm["wait"]["sum"], rel_tol=1e-9):
    fail(f"the tallies' min {lo}, max {hi}, total {total} disagree with the metric")
for x in tallies:
    if int(x[3]) > 1 and not (float(x[7]) >= 0 and lo <= float(x[13]) <= hi and
                              0 <= float(x[15]) <= 24):
        fail(f"a tally's variance, median or time-averaged queue is out of range: {x}")
t.ok("the model's tallies agree with the metric: counts, min, max, means")

ref_out, ref = out, json.dumps(mm, sort_keys=True)
layouts = [["--threads", "1"], ["--threads", "2"], ["--threads", "2", "--state", "page"],
           ["--threads", "3", "--cancel", "lazy"], ["--sync", "sequential", "--check"]]
for lay in layouts:
    rc, out, e = run(kairos, "run", *args, "-P", "dump=1", *lay)
    if json.dumps(metrics_of(e), sort_keys=True) != ref or out != ref_out:
        fail(f"{lay}: model_metrics differ from the sequential run's")
z = args + ["-P", "zero=0"]
_, _, zs = run(kairos, "run", *z, "--sync", "sequential")
_, _, zc = run(kairos, "run", *z, "--sync", "conservative")
if metrics_of(zs) != metrics_of(zc):
    fail("conservative: model_metrics differ from the sequential run's")
t.ok(f"model_metrics are the same bits on {len(layouts)} layouts and the conservative engine")

# a resume from a snapshot half-way: the metrics reduced before it come from the snapshot
# (written by the sequential engine, or by 2 threads: theirs drained into it)
_, _, full = run(kairos, "run", *args, "--sync", "sequential")
for writer, reader in ((["--sync", "sequential"], ["--threads", "2"]),
                       (["--threads", "2"], ["--sync", "sequential"])):
    snap = os.path.join(tmp, "snap")
    shutil.rmtree(snap, ignore_errors=True)
    run(kairos, "run", *args, *writer, "--snapshot", snap, "--snapshot-every", "100")
    stats = os.path.join(tmp, "resumed.json")
    p = subprocess.run([kairos, "resume", snap, *reader, "--progress", "off", "--stats",
                        stats], capture_output=True, text=True, timeout=120)
    if p.returncode or json.load(open(stats))["model_metrics"] != metrics_of(full):
        fail(f"written by {writer}, resumed on {reader} from its snapshot at 100: exit "
             f"{p.returncode}, or other metrics\n{p.stderr}")
t.ok("a run resumed from a snapshot (of either engine) ends with the uninterrupted run's "
     "model_metrics")

# --end inf: bins of width 1, doubled as time passes (the finite model's "left")
fin = [os.path.join(build, "libfinite.so"), "--lps", "64", "--end", "inf"]
_, _, fs = run(kairos, "run", *fin, "--sync", "sequential")
_, _, fo = run(kairos, "run", *fin, "--threads", "2")
left = metrics_of(fs)["left"]
if metrics_of(fo) != metrics_of(fs) or left["bin_width"] < 2 or len(left["bins"]) > 100 or \
        left["count"] != fs.stats["committed_events"] or \
        sum(b["count"] for b in left["bins"]) != left["count"]:
    fail(f"--end inf: width {left['bin_width']}, {len(left['bins'])} bins, count "
         f"{left['count']} of {fs.stats['committed_events']} events, or 2 threads differ")
t.ok(f"--end inf: bins widened to {left['bin_width']}, the same on 2 threads")

if shutil.which("mpirun") and os.path.exists(os.path.join(build, "kairos-mpi.so")) and \
        build_kind(kairos) == "":
    e = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    mstats = os.path.join(tmp, "ranks.json")
    p = subprocess.run(["mpirun", "--oversubscribe", "--mca", "btl", "self,vader", "--mca",
                        "btl_vader_single_copy_mechanism", "none", "-np", "2", kairos, "run",
                        *args, "--threads", "1", "--progress", "off", "--stats", mstats],
                       capture_output=True, text=True, timeout=120, env=e)
    if p.returncode or json.dumps(json.load(open(mstats))["model_metrics"],
                                  sort_keys=True) != ref:
        fail(f"2 ranks: exit {p.returncode}, or model_metrics differ\n{p.stderr[-2000:]}")
    t.ok("2 MPI ranks reduce the same model_metrics on rank 0")

for bad, needle in ((1, 'kr_metric("nope")'), (2, "must be a finite number"),
                    (3, "kr_metric in init")):
    expect_exit(kairos, t, 1, [needle, "model 'timers'"], "run", *args, "-P", f"bad={bad}",
                "--sync", "sequential")
shutil.rmtree(tmp, ignore_errors=True)
t.finish()
