"""--end inf without done() (issue 37, item 6): a run whose events run out ends there, on
every engine, with the sequential engine's digest and output, and says why ("no event
left", --stats ended_by "no_events"); with done() it still ends by done(); a finite --end
still says the end time. (Across ranks: cluster.py's "finite" case.)"""
import os
import sys
from common import run, fail, digest, committed, Tally

kairos, build = sys.argv[1], sys.argv[2]
finite = os.path.join(build, "libfinite.so")
t = Tally()

args = [finite, "--lps", "64", "--end", "inf"]
rc, ref_out, err = run(kairos, "run", *args, "--sync", "sequential")
ref, n = digest(err), committed(err)
if "no event left" not in err or err.stats["ended_by"] != "no_events" or n == 0:
    fail(f"the sequential run does not say its events ran out:\n{err}")
if "died" not in ref_out:
    fail("no token died: the model did not run")
engines = [["--threads", "1"], ["--threads", "2"], ["--threads", "3"],
           ["--threads", "2", "--state", "page"], ["--threads", "2", "--gvt-period", "0.05"],
           ["--sync", "conservative", "--threads", "1"], ["--sync", "conservative"],
           ["--sync", "sequential", "--check"]]
for eng in engines:
    rc, out, err = run(kairos, "run", *args, *eng)
    if digest(err) != ref or out != ref_out or err.stats["ended_by"] != "no_events":
        fail(f"{eng}: digest {digest(err)}, ended by {err.stats['ended_by']} (sequential "
             f"{ref}, no_events), or the output differs")
t.ok(f"events that run out end a --end inf run on every engine: {n} events, digest {ref}")

rc, out, err = run(kairos, "run", finite, "--lps", "64", "--end", "1e9", "--threads", "2")
if digest(err) != ref or err.stats["ended_by"] != "end_time" or "end time reached" not in err:
    fail(f"a finite --end past the last event: {err.stats['ended_by']}, digest {digest(err)}")
t.ok("a finite --end past the last event commits the same and says the end time")

ring = os.path.join(build, "libring.so")
for eng in (["--sync", "sequential"], ["--threads", "2"]):
    rc, out, err = run(kairos, "run", ring, "--lps", "16", "--end", "inf", "-P", "laps=30", *eng)
    if err.stats["ended_by"] != "done" or "done() holds" not in err:
        fail(f"ring {eng}: ended by {err.stats['ended_by']}, not done()")
t.ok("a model with done() still ends by it under --end inf")
t.finish()
