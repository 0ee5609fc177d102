"""The ROSS layer (include/kairos/ross/ross.h, issue 38 item 1): a model written against
ROSS's API (tests/ross/phold.c, which builds unchanged against ROSS itself) runs as its own
program with ROSS's options and Kairos's beside them.

- Against ROSS: the model's committed event count and every printed LP statistic (events,
  remote sends counted by the commit handler, the last event's time to 6 decimals, a
  tw_calloc'd array of chain lengths) equal what ROSS's own sequential engine printed for
  the same options (recorded below from ROSS dc3a6a0, `--synch=1`): the same CLCG4 streams,
  seeded as ROSS seeds them, and the same drops of events at or past the end.
- On every Kairos engine (--synch=1/2/3/6, threads, state modes, time-sharing) the same
  digest and output as the sequential run; with --state reverse too, where the model's
  reverse handlers undo the rollbacks, and --synch=4 checks each reverse handler (one that
  forgets a random draw is named).
- What a ROSS program gets wrong is said: a bad option value, Kairos's --end/--lps given
  instead of ROSS's, tw_error in an event (exit 1, naming the LP, time and place)."""
import os
import shutil
import subprocess
import sys
import tempfile
import json
from common import fail, Tally, build_kind, digest, TIMEOUT

kairos, build = sys.argv[1], sys.argv[2]
prog = os.path.join(build, "ross", "phold")
t = Tally()

# ROSS dc3a6a0, sequential (--synch=1), the same model and options: its stdout
ROSS_SMALL = """PHOLD: 64 LPs, 2 start events each, remote 0.25, mean 0.9, lookahead 0.1
LP 0: 213 events, 55 sent on to others, last at 99.930601, chains 57 51 53 52
LP 16: 297 events, 61 sent on to others, last at 99.797088, chains 75 73 74 75
LP 32: 240 events, 54 sent on to others, last at 99.934920, chains 62 63 62 53
LP 48: 130 events, 45 sent on to others, last at 96.411306, chains 34 28 33 35
"""
ROSS_SMALL_EVENTS = 12706
ROSS_REMOTE = ["--nlp=256", "--end=300", "--remote=0.9", "--print-every=128"]
ROSS_REMOTE_LINES = [
    "LP 0: 595 events, 546 sent on to others, last at 299.633635, chains 140 155 149 151",
    "LP 128: 596 events, 545 sent on to others, last at 299.862648, chains 151 166 133 146"]
ROSS_REMOTE_EVENTS = 153305


def ross_run(*args, rc_want=0):
    """Run the ROSS program; returns (stdout, stderr, --stats JSON or None)."""
    fd, stats = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    cmd = [prog, *args, "--stats", stats, "--progress", "off"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=TIMEOUT * 4)
    except subprocess.TimeoutExpired:
        fail(f"{cmd}: hung")
    with open(stats) as f:
        text = f.read()
    os.unlink(stats)
    if p.returncode != rc_want:
        fail(f"{cmd}: exit {p.returncode}, wanted {rc_want}\n{p.stderr}")
    return p.stdout, p.stderr, json.loads(text) if text else None


# --- against ROSS's own sequential run
out, err, st = ross_run("--synch=1", "--end=100")
if out != ROSS_SMALL or st["committed_events"] != ROSS_SMALL_EVENTS:
    fail(f"64 LPs: not what ROSS printed ({st and st['committed_events']} events):\n{out}")
if "warning" in err:
    fail(f"a warning in a plain run:\n{err}")
ref = st["run_digest"]
t.ok(f"as on ROSS: {ROSS_SMALL_EVENTS} events, every LP's statistics")

out2, _, st2 = ross_run("--synch=1", *ROSS_REMOTE)
lines = [ln for ln in out2.splitlines() if ln.startswith("LP ")]
if lines != ROSS_REMOTE_LINES or st2["committed_events"] != ROSS_REMOTE_EVENTS:
    fail(f"remote 0.9: not what ROSS printed ({st2['committed_events']} events):\n{out2}")
ref2 = st2["run_digest"]
t.ok(f"as on ROSS with 90% remote events: {ROSS_REMOTE_EVENTS} events")

# --- every engine: the sequential digest and output
layouts = [["--synch=3", "--threads", "1"], ["--synch=3", "--threads", "2"],
           ["--synch=2", "--threads", "2"], ["--synch=6"],
           ["--synch=3", "--threads", "2", "--state", "page"],
           ["--synch=3", "--threads", "2", "--ckpt-interval", "5"],
           ["--threads", "2", "--cancel", "lazy"]]
if build_kind(kairos) != "tsan":
    layouts.append(["--synch=3", "--threads", "2", "--preempt", "tick"])
for lay in layouts:
    for args, want_out, want in ((["--end=100"], out, ref), (ROSS_REMOTE, out2, ref2)):
        o, e, s = ross_run(*lay, *args)
        if s["run_digest"] != want or o != want_out:
            fail(f"{lay} {args}: digest {s['run_digest']} (sequential {want}), output "
                 f"{'equal' if o == want_out else 'differs'}\n{e}")
    t.ok(f"{' '.join(lay)}: the sequential digest and output")

# --- reverse computation (issue 38 item 2): the model's reverse handlers undo rolled-back
# events instead of checkpoints, with the same digest and output
rolled = 0
for lay in (["--synch=3", "--threads", "1"], ["--synch=3", "--threads", "2"],
            ["--synch=3", "--threads", "2", "--cancel", "lazy"],
            ["--synch=2", "--conservative", "windows", "--threads", "2"]):
    for args, want_out, want in ((["--end=100"], out, ref), (ROSS_REMOTE, out2, ref2)):
        o, e, s = ross_run(*lay, "--state", "reverse", *args)
        if s["run_digest"] != want or o != want_out:
            fail(f"{lay} --state reverse {args}: digest {s['run_digest']} (sequential "
                 f"{want}), output {'equal' if o == want_out else 'differs'}\n{e}")
        rolled += s.get("rollbacks", 0) or 0
    t.ok(f"{' '.join(lay)} --state reverse: the sequential digest and output")
if not rolled:
    fail("no --state reverse run rolled back: no reverse handler was called")
t.ok(f"--state reverse: {rolled} rollbacks undone by the model's reverse handlers")
# --synch=4 runs each event, its reverse and the event again; a reverse handler that
# forgets a draw is named
o, e, s = ross_run("--synch=4", "--end=100")
if s["run_digest"] != ref or o != out or s["engine"] != "sequential":
    fail(f"--synch=4: digest {s['run_digest']} (sequential {ref}) or another output\n{e}")
o, e, _ = ross_run("--synch=4", "--end=100", "--bad-reverse=1", rc_want=1)
if "in its reverse handler" not in e or "event type 0" not in e or "LP " not in e or \
        "random stream 0: its reverse handler calls tw_rand_reverse_unif" not in e:
    fail(f"--synch=4 with a reverse handler that forgets a draw:\n{e}")
t.ok("--synch=4: event, reverse, event; a reverse handler that forgets a draw is named")

# --- --synch names the engine; --help lists both sets of options
for synch, engine in (("1", "sequential"), ("2", "conservative"), ("3", "optimistic")):
    _, _, s = ross_run(f"--synch={synch}", "--end=100")
    if s["engine"] != engine:
        fail(f"--synch={synch} ran the {s['engine']} engine, not the {engine} one")
p = subprocess.run([prog, "--help"], capture_output=True, text=True, timeout=TIMEOUT)
if p.returncode != 0 or "PHOLD (ROSS style)" not in p.stdout or "--threads" not in p.stdout \
        or "--synch" not in p.stdout:
    fail(f"--help: exit {p.returncode}\n{p.stdout[:2000]}")
t.ok("--help: ROSS's options, the model's and Kairos's")

# --- the globals note: a run on more threads says what it changes for a ROSS model
_, e1, _ = ross_run("--synch=1", "--end=100")
_, e2, _ = ross_run("--synch=3", "--threads", "2", "--end=100")
if "global variables are shared" in e1 or "global variables are shared" not in e2:
    fail(f"the note on globals: on 1 thread {'given' if 'shared' in e1 else 'not given'}, "
         f"on 2 {'given' if 'shared' in e2 else 'not given'}\n{e2}")
t.ok("a run on 2 threads notes that the model's globals are shared and not rolled back")

# --- two LP types, a custom mapping, the type map, pre_run, a PE type, MPI_Reduce
tower = os.path.join(build, "ross", "tower")
tower_ref = None
for lay in (["--synch=1"], ["--synch=1", "--typemap=1"], ["--synch=3", "--threads", "2"],
            ["--synch=3", "--threads", "2", "--typemap=1"], ["--synch=2", "--threads", "2"]):
    fd, stats = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    p = subprocess.run([tower, *lay, "--end=200", "--stats", stats], capture_output=True,
                       text=True, timeout=TIMEOUT * 4)
    st_t = json.load(open(stats))
    os.unlink(stats)
    if p.returncode or "tower: " not in p.stdout or "PE finals: 1\n" not in p.stdout or \
            p.stdout.count("airport ") != 4 or "custom mapping" not in p.stderr:
        fail(f"tower {lay}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    if tower_ref is None:
        tower_ref = (st_t["run_digest"], p.stdout)
    elif (st_t["run_digest"], p.stdout) != tower_ref:
        fail(f"tower {lay}: digest {st_t['run_digest']} or output differ from sequential's")
    t.ok(f"tower {' '.join(lay)}: two types, custom mapping, PE final: the sequential digest")

p = subprocess.run([tower, "--synch=3", "--state", "reverse", "--end=200"], capture_output=True,
                   text=True, timeout=TIMEOUT)
if p.returncode != 2 or "type has no reverse handler (revent_f" not in p.stderr:
    fail(f"tower --state reverse (a type without revent): exit {p.returncode}\n{p.stderr}")
t.ok("--state reverse with an LP type that has no reverse handler: refused, naming it")

# --- snapshots: the program resumes itself (--resume DIR, with the options of the run that
# took them); the lines its main printed before tw_run count as the output's start, so the
# file it appends to ends as the uninterrupted run's; pre_run is not run again
snapdir = os.path.join(build, "ross-snap")
for model, args, again in ((prog, ["--nlp=64", "--end=200"], ["--synch=1"]),
                           (tower, ["--end=200"], ["--synch=3", "--threads", "2"])):
    shutil.rmtree(snapdir, ignore_errors=True)
    full = subprocess.run([model, "--synch=1", *args], capture_output=True, text=True,
                          timeout=TIMEOUT)
    out_path = snapdir + ".out"
    with open(out_path, "w") as out:
        p = subprocess.run([model, "--synch=3", "--threads", "2", *args, "--snapshot", snapdir,
                            "--snapshot-every", "60"], stdout=out, stderr=subprocess.PIPE,
                           text=True, timeout=TIMEOUT)
    if p.returncode or not os.path.exists(os.path.join(snapdir, "snapshot")):
        fail(f"{os.path.basename(model)} --snapshot: exit {p.returncode}\n{p.stderr}")
    with open(out_path, "a") as out:
        p = subprocess.run([model, *again, *args, "--resume", snapdir], stdout=out,
                           stderr=subprocess.PIPE, text=True, timeout=TIMEOUT)
    got = open(out_path).read()
    if p.returncode or "resumed:" not in p.stderr or digest(p.stderr) != digest(full.stderr) \
            or got != full.stdout:
        fail(f"{os.path.basename(model)} resumed ({' '.join(again)}): exit {p.returncode}, "
             f"digest {digest(p.stderr)} against {digest(full.stderr)}, output "
             f"{'equal' if got == full.stdout else 'differs'}\n{p.stderr}")
    t.ok(f"{os.path.basename(model)}: snapshots on 2 threads, resumed {' '.join(again)}: the "
         f"uninterrupted run's digest and output")
p = subprocess.run([tower, "--synch=1", "--end=150", "--resume", snapdir], capture_output=True,
                   text=True, timeout=TIMEOUT)
if p.returncode != 2 or "resume with the options of the run that took it" not in p.stderr:
    fail(f"a resume with another end time: exit {p.returncode}\n{p.stderr}")
t.ok("--resume with options that give other LPs or another end: refused, saying which")

# --- what a ROSS program gets wrong
for args, rc, needle in ((["--nlp=abc"], 2, "option --nlp: 'abc' is not a valid value"),
                         (["--end", "5"], 2, "--end=T"),
                         (["--lps", "5"], 2, "tw_define_lps"),
                         (["--resume"], 2, "--resume needs DIR"),
                         (["--synch=9"], 2, "ROSS's protocols are 1 to 6"),
                         (["--args-file=x"], 2, "not supported on Kairos"),
                         (["--threads", "zero"], 2, "--threads")):
    p = subprocess.run([prog, *args], capture_output=True, text=True, timeout=TIMEOUT)
    if p.returncode != rc or needle not in p.stderr:
        fail(f"{args}: exit {p.returncode} (wanted {rc}), message lacks {needle!r}:\n{p.stderr}")
    t.ok(f"{' '.join(args)}: exit {rc}, said")
for lay in (["--synch=1"], ["--synch=3", "--threads", "2"]):
    o, e, _ = ross_run(*lay, "--end=100", "--fail-at=50", rc_want=1)
    if "tw_error at" not in e or "phold.c:" not in e or "fails at" not in e or "LP " not in e:
        fail(f"{lay}: tw_error's message:\n{e}")
    t.ok(f"{' '.join(lay)}: tw_error in an event fails the run (exit 1), naming where")
t.finish()
