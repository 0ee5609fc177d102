#!/usr/bin/env python3
"""--trace FILE and kairos trace-diff (issue 18 part 4). A trace is the committed history,
one event a line in key order: the same bytes on every engine, thread count and state mode
for several models; --trace-limit keeps its first N events alike everywhere; a resumed
run's trace is the tail of the uninterrupted one; a model that is not rollback-safe (the
ledger model's -P unsafe=1) commits other payloads on the optimistic engine, and trace-diff
names the first such event; trace-diff's own errors are usage errors. --trace-mode run:
each thread's events (and coasting), rollbacks with their depth, checkpoints, GVT rounds
and preemptions on the wall clock, one thread's spans never overlapping; its limit counts
per thread."""
import json
import os
import shutil
import subprocess
import sys
from common import run, fail, digest, Tally, build_kind

kairos, build = sys.argv[1], sys.argv[2]
t = Tally()
SEQ = ["--sync", "sequential"]
LEDGER = os.path.join(build, "libledger.so")
MODELS = {  # name: (arguments, the layouts it runs on besides the sequential engine)
    "pcs": (["pcs", "--lps", "64", "--end", "0.3"], ["opt"]),
    "ledger": ([LEDGER, "--lps", "32", "--end", "30"], ["opt", "cons"]),
    "life": (["life", "-P", "width=64", "-P", "height=64", "-P", "generations=20", "--lps",
              "64", "--end", "inf"], ["opt", "cons"]),
    "chaos": ([os.path.join(build, "libchaos.so"), "--lps", "64", "--end", "30"], ["opt"]),
    # (timers' events say whether they ran or were cancelled)
    "timers": ([os.path.join(build, "libtimers.so"), "--lps", "32", "--end", "100"], ["opt"]),
}
LAYOUTS = {"opt": [["--threads", "1"], ["--threads", "2"], ["--threads", "3", "--state", "page"],
                   ["--threads", "2", "--cancel", "lazy"]],
           "cons": [["--sync", "conservative", "--threads", "2"]]}
tmp = os.path.join(build, "trace-test")
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)


def trace_of(name, args, lay, extra=()):
    path = os.path.join(tmp, f"{name}.{len(os.listdir(tmp))}.json")
    _, _, err = run(kairos, "run", *args, *lay, "--trace", path, *extra)
    return path, err


def diff(a, b):
    return subprocess.run([kairos, "trace-diff", a, b], capture_output=True, text=True,
                          timeout=120)


def same_everywhere():
    for name, (args, kinds) in MODELS.items():
        ref, err = trace_of(name, args, SEQ)
        data = json.load(open(ref))  # (valid JSON, as a viewer reads it)
        n = data["otherData"]["events"]
        if n < 100 or len(data["traceEvents"]) != n or data["otherData"]["cut_at_limit"]:
            fail(f"{name}: the trace holds {len(data['traceEvents'])} events, says {n}")
        if n != int(err.stats["committed_events"]):
            fail(f"{name}: {n} events in the trace, {err.stats['committed_events']} committed")
        want = open(ref, "rb").read()
        for lay in [x for k in kinds for x in LAYOUTS[k]]:
            path, e = trace_of(name, args, lay)
            if open(path, "rb").read() != want or digest(e) != digest(err):
                q = diff(ref, path)
                fail(f"{name} {' '.join(lay)}: the trace differs from the sequential one\n"
                     f"{q.stdout}{q.stderr}")
        q = diff(ref, path)
        if q.returncode != 0 or f"the same committed history: {n} events" not in q.stdout:
            fail(f"{name}: trace-diff of equal traces: exit {q.returncode}\n{q.stdout}")
    t.ok(f"{len(MODELS)} models: the trace is the same bytes on the sequential, optimistic "
         "(1-3 threads, page state, lazy cancellation) and conservative engines; trace-diff "
         "says so")


def limited():
    args = MODELS["ledger"][0]
    full, _ = trace_of("ledger", args, SEQ)
    lines = open(full).read().splitlines()
    for lay in (SEQ, ["--threads", "3"], ["--sync", "conservative", "--threads", "2"]):
        path, _ = trace_of("ledger", args, lay, ["--trace-limit", "100"])
        data = json.load(open(path))
        got = open(path).read().splitlines()
        if data["otherData"]["events"] != 100 or not data["otherData"]["cut_at_limit"] or \
                got[2:102] != lines[2:102]:
            fail(f"--trace-limit 100 {' '.join(lay)}: not the first 100 events of the full "
                 "trace")
    t.ok("--trace-limit 100: the full trace's first 100 events on every engine")


def resumed():
    args = MODELS["ledger"][0]
    full, _ = trace_of("ledger", args, SEQ)
    snap = os.path.join(tmp, "snap")
    _, out, _ = run(kairos, "run", *args, *SEQ, "--snapshot", snap, "--snapshot-every", "10")
    out_path = os.path.join(tmp, "out")
    with open(out_path, "w") as f:
        f.write(out)
    path = os.path.join(tmp, "resumed.json")
    q = subprocess.run(f'exec "{kairos}" resume {snap} --threads 2 --progress off --trace '
                       f'{path} >> {out_path}', shell=True, capture_output=True, text=True,
                       timeout=300)
    tail = [ln[1:] for ln in open(path).read().splitlines()[2:-1]]
    whole = [ln[1:] for ln in open(full).read().splitlines()[2:-1]]
    if q.returncode != 0 or not tail or whole[-len(tail):] != tail:
        fail(f"a resumed run's trace is not the tail of the uninterrupted one\n{q.stderr}")
    t.ok("a run resumed from its snapshot at 20, on 2 threads: its trace is the "
         "uninterrupted trace's tail")


def unsafe():
    args = [LEDGER, "--lps", "32", "--end", "40", "-P", "unsafe=1"]
    found = 0
    for seed in ("1", "2", "3", "4", "5"):
        a, ea = trace_of("unsafe", args, SEQ, ["--seed", seed])
        # (--balance off: two workers speculating from the start, not lone on one)
        b, eb = trace_of("unsafe", args, ["--threads", "2", "--balance", "off"],
                         ["--seed", seed])
        q = diff(a, b)
        if digest(ea) == digest(eb):
            if q.returncode != 0:
                fail(f"unsafe seed {seed}: the same digest, and trace-diff says\n{q.stdout}")
            continue
        if q.returncode != 1 or "the first difference is committed event" not in q.stdout \
                or '"payload"' not in q.stdout:
            fail(f"unsafe seed {seed}: the digests differ; trace-diff exit {q.returncode}\n"
                 f"{q.stdout}{q.stderr}")
        found += 1
    if not found:
        fail("the unsafe model committed the sequential history in 5 runs of 2 threads")
    t.ok(f"a model that is not rollback-safe: in {found} of 5 runs its optimistic history "
         "differs, and trace-diff names the first event whose payload differs")


def bad_use():
    real, _ = trace_of("ledger", MODELS["ledger"][0], SEQ)
    junk = os.path.join(tmp, "junk.json")
    with open(junk, "w") as f:
        f.write('{"traceEvents":[]}\n')
    for argv, needle in (([real], "usage: kairos trace-diff A B"),
                         ([real, os.path.join(tmp, "missing")], "cannot read"),
                         ([real, junk], "is not a trace written by kairos run --trace")):
        q = subprocess.run([kairos, "trace-diff", *argv], capture_output=True, text=True)
        if q.returncode != 2 or needle not in q.stderr:
            fail(f"trace-diff {argv}: want exit 2 and '{needle}'\n{q.stderr}")
    rc, _, err = run(kairos, "run", "phold", "--trace", os.path.join(tmp, "no", "dir.json"),
                     check=False)
    if rc != 2 or "--trace" not in err:
        fail(f"--trace into a missing directory: want exit 2 naming --trace\n{err}")
    t.ok("trace-diff with one file, a missing one, or a JSON file that is no trace; --trace "
         "to a path that cannot be written: exit 2 with what is wrong")
    # issue 35, 12: /dev/zero (ran for ever), a file cut short (taken for a shorter history)
    lines = open(real).read().splitlines(keepends=True)
    cut = os.path.join(tmp, "cut.json")
    with open(cut, "w") as f:
        f.writelines(lines[:len(lines) // 2])
    for argv, needle in (([real, "/dev/zero"], "'/dev/zero' is not a regular file"),
                         ([real, cut], "is cut short: its header says"),
                         ([cut, real], "is cut short: its header says")):
        try:
            q = subprocess.run([kairos, "trace-diff", *argv], capture_output=True, text=True,
                               timeout=30)
        except subprocess.TimeoutExpired:
            fail(f"trace-diff {argv}: no end within 30 s")
        if q.returncode != 2 or needle not in q.stderr or "the same committed" in q.stdout:
            fail(f"trace-diff {argv}: want exit 2 and '{needle}'\n{q.stdout}{q.stderr}")
    t.ok("trace-diff of /dev/zero or of a trace cut short: exit 2 saying so, never a hang or "
         "a shorter history")


def type_names():
    """A model's type_names name its events in both trace modes and in --stats; the number
    stays in args.type (pcs names its five types)."""
    want = ["ARRIVAL", "COMPLETION", "LEAVE", "HANDOFF", "FADING"]
    path, err = trace_of("pcs-names", ["pcs", "--lps", "16", "--end", "0.2"], SEQ)
    ev = json.load(open(path))["traceEvents"]
    if err.stats["type_names"] != want:
        fail(f"--stats type_names: {err.stats['type_names']}, want {want}")
    if any(e["name"] != want[e["args"]["type"]] for e in ev) or \
            {e["name"] for e in ev} - set(want):
        fail("the committed trace does not name pcs's event types by type_names")
    path = os.path.join(tmp, "names-run.json")
    run(kairos, "run", "pcs", "--lps", "16", "--end", "0.2", "--threads", "2", "--trace", path,
        "--trace-mode", "run")
    ev = [e for e in json.load(open(path))["traceEvents"] if e["name"] == "event"]
    if not ev or any(e["args"]["type_name"] != want[e["args"]["type"]] for e in ev):
        fail("--trace-mode run: an event span without its type's name")
    _, _, err = run(kairos, "run", "phold", "--end", "1")
    if err.stats["type_names"] is not None:
        fail(f"phold names no type, --stats says {err.stats['type_names']}")
    t.ok("type_names name the events of both trace modes and are in --stats")


def run_mode():
    chaos = os.path.join(build, "libchaos.so")
    kind = build_kind(kairos)
    layouts = [(SEQ, {"event"}), (["--sync", "conservative", "--threads", "1"], {"event"}),
               (["--threads", "2", "--preempt", "off", "--ckpt-interval", "16"],  # (coasts:
                {"event", "coast", "rollback", "checkpoint", "GVT"})]  # K > 1 whatever it costs)
    if kind != "tsan":
        layouts.append((["--threads", "2", "--preempt", "tick", "--tick-us", "20"],
                        {"event", "rollback", "checkpoint", "GVT", "preempted"}))
    for lay, want in layouts:
        path = os.path.join(tmp, "run-mode.json")
        _, _, err = run(kairos, "run", chaos, "--lps", "64", "--end", "60", "-P", "span=0.05",
                        *lay, "--trace", path, "--trace-mode", "run")
        d = json.load(open(path))
        ev = d["traceEvents"]
        names = {e["name"] for e in ev}
        if d["otherData"]["kairos"] != "run" or not want <= names or \
                len(ev) != d["otherData"]["records"]:
            fail(f"--trace-mode run {' '.join(lay)}: records of {sorted(names)}, want "
                 f"{sorted(want)} at least")
        ran = sum(1 for e in ev if e["name"] in ("event", "coast"))
        if ran < int(err.stats["processed_events"]) // (8 if "tick" in lay else 1):
            fail(f"--trace-mode run {' '.join(lay)}: {ran} events for "
                 f"{err.stats['processed_events']} processed")
        if lay == SEQ and ran != int(err.stats["committed_events"]):
            fail(f"--trace-mode run, sequential: {ran} events, {err.stats['committed_events']} "
                 "committed")
        if any(e["name"] == "rollback" and e["args"]["depth"] < 1 for e in ev):
            fail("--trace-mode run: a rollback of depth 0")
        if "tick" not in lay:  # (a preempted event's span holds others: --preempt off)
            spans = {}
            for e in ev:
                if e["ph"] == "X":
                    spans.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
            for tid, sp in spans.items():
                sp.sort()
                if any(b[0] < a[1] - 0.002 for a, b in zip(sp, sp[1:])):
                    fail(f"--trace-mode run {' '.join(lay)}: spans of thread {tid} overlap")
    path = os.path.join(tmp, "run-limit.json")
    run(kairos, "run", chaos, "--lps", "64", "--end", "60", "--threads", "2", "--trace", path,
        "--trace-mode", "run", "--trace-limit", "50")
    d = json.load(open(path))
    if not 50 <= len(d["traceEvents"]) <= 100 or d["otherData"]["dropped_at_limit"] < 1:
        fail(f"--trace-mode run --trace-limit 50 on 2 threads: {len(d['traceEvents'])} "
             f"records, {d['otherData']['dropped_at_limit']} dropped")
    q = diff(path, path)
    if q.returncode != 2 or "--trace-mode run trace" not in q.stderr:
        fail(f"trace-diff of run-mode traces: want exit 2 saying why\n{q.stderr}")
    t.ok("--trace-mode run: events, coasting, rollbacks with depth, checkpoints, GVT rounds "
         "and preemptions per thread on the wall clock, on 3 engines; its limit per thread; "
         "trace-diff refuses it")


same_everywhere()
run_mode()
type_names()
limited()
resumed()
unsafe()
bad_use()
t.finish()
