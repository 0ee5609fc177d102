"""The ROOT-Sim 3 layer (include/kairos/rootsim/ROOT-Sim.h, issue 38 item 3): a model written
against ROOT-Sim 3's API (tests/rootsim/buffers.c: rs_malloc'd lists of buffers sent between
LPs, its own generator in its state, ended by the `committed` test) runs as its own program,
its configuration giving the run's defaults and its command line Kairos's options.

- Every engine that can run it (sequential, optimistic on 1 and 2 threads, page tracking,
  the sequential --check) commits the same history: one digest and one output, and the run
  ends because `committed` holds for every LP (Kairos's done()).
- The conservative engine refuses it, saying why (a ROOT-Sim model declares no lookahead).
- --end from the command line ends it earlier; --lps is refused (the model counts on its
  configuration's); abort() in an event is a model error and RootsimRun's return value is
  the program's exit status (1)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
from common import fail, Tally, TIMEOUT

kairos, build = sys.argv[1], sys.argv[2]
prog = os.path.join(build, "rootsim", "buffers")
t = Tally()


def run(*args, rc_want=0, env=None):
    fd, stats = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    p = subprocess.run([prog, *args, "--stats", stats], capture_output=True, text=True,
                       timeout=TIMEOUT * 4, env=dict(os.environ, **(env or {})))
    text = open(stats).read()
    os.unlink(stats)
    if p.returncode != rc_want:
        fail(f"{args}: exit {p.returncode}, wanted {rc_want}\n{p.stderr}")
    return p.stdout, p.stderr, json.loads(text) if text else None


out, err, st = run("--sync", "sequential")
if st["ended_by"] != "done" or out.count("2000 events") != 4 or st["committed_events"] < 50000:
    fail(f"sequential: ended by {st['ended_by']}, {st['committed_events']} events:\n{out}")
if "warning" in err or "note" in err:
    fail(f"a warning or note in a plain run:\n{err}")
ref = st["run_digest"]
t.ok(f"sequential: {st['committed_events']} events, ended by committed() on every LP")
for lay in (["--threads", "1"], ["--threads", "2"], ["--threads", "2", "--state", "page"],
            ["--threads", "2", "--ckpt-interval", "3"], ["--sync", "sequential", "--check"]):
    o, e, s = run(*lay)
    if s["run_digest"] != ref or o != out or s["ended_by"] != "done":
        fail(f"{lay}: digest {s['run_digest']} (sequential {ref}), output "
             f"{'equal' if o == out else 'differs'}, ended by {s['ended_by']}\n{e}")
    t.ok(f"{' '.join(lay)}: the sequential digest and output")

_, e, _ = run("--sync", "conservative", rc_want=1)
if "declares no lookahead" not in e:
    fail(f"the conservative engine's refusal:\n{e}")
t.ok("--sync conservative: refused, saying the model declares no lookahead")
o, e, s = run("--end", "50", "--threads", "2")
if s["ended_by"] != "end_time" or s["committed_events"] >= st["committed_events"]:
    fail(f"--end 50: ended by {s['ended_by']}, {s['committed_events']} events")
t.ok("--end on the command line ends the run at that time")
# snapshots: the program resumes itself (--resume DIR), in another layout, appending to the
# first run's output
snap = os.path.join(build, "rootsim-snap")
shutil.rmtree(snap, ignore_errors=True)
out_path = snap + ".out"
with open(out_path, "w") as f:
    p = subprocess.run([prog, "--threads", "2", "--snapshot", snap, "--snapshot-every", "2000"],
                       stdout=f, stderr=subprocess.PIPE, text=True, timeout=TIMEOUT * 4)
if p.returncode or not os.path.exists(os.path.join(snap, "snapshot")):
    fail(f"--snapshot: exit {p.returncode}\n{p.stderr}")
with open(out_path, "a") as f:
    p = subprocess.run([prog, "--sync", "sequential", "--resume", snap], stdout=f,
                       stderr=subprocess.PIPE, text=True, timeout=TIMEOUT * 4)
if p.returncode or "resumed:" not in p.stderr or f"run digest:       {ref}" not in p.stderr or \
        open(out_path).read() != out:
    fail(f"--resume: exit {p.returncode}, want the sequential digest {ref} and output\n"
         f"{p.stderr}")
t.ok("snapshots on 2 threads, resumed sequentially (--resume DIR): the uninterrupted run's "
     "digest and output")
p = subprocess.run([prog, "--resume"], capture_output=True, text=True, timeout=TIMEOUT)
if p.returncode != 2 or "--resume needs DIR" not in p.stderr:
    fail(f"--resume without DIR: exit {p.returncode}\n{p.stderr}")
t.ok("--resume without DIR: refused, saying what it needs")
_, e, _ = run("--lps", "8", rc_want=2)
if "the configuration's `lps`" not in e:
    fail(f"--lps: {e}")
t.ok("--lps: refused (the configuration's)")
for lay in (["--sync", "sequential"], ["--threads", "2"]):
    _, e, _ = run(*lay, rc_want=1, env={"BUFFERS_ABORT_AT": "30"})
    if "abort()" not in e or "LP " not in e or "virtual time" not in e:
        fail(f"{lay}: abort() in an event:\n{e}")
    t.ok(f"{' '.join(lay)}: abort() in an event is a model error, RootsimRun returns 1")
t.finish()
