#!/usr/bin/env python3
"""Snapshots and resume (issue 17): a run writing snapshots (--snapshot, by virtual time and
by wall time; sequential, or optimistic on 1-4 threads in the state modes a model without
write marks runs in, with lazy cancellation, time-sharing preemptions, migrations and heavy
rollback) is killed with SIGKILL at random moments; `kairos resume` continues from its last
snapshot on a random engine and thread count, appending to the killed run's stdout file,
and must end with the digest and the byte-identical stdout of the run that was never
stopped. A damaged or truncated snapshot, another model file, a wrong
stdout and the options a resumed run cannot change are refused with a clear message; a
state a snapshot cannot hold leaves the run going with a warning. KR_SNAP_SEED picks the
random stream; the quick tier (and KR_SNAP_QUICK=1) kills each model once, the long tier
(--long) 20 times the issue's four models and 5 the others."""
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from common import run, fail, digest, Tally, expect_exit, build_kind, in_own_dir, LONG

kairos, build = sys.argv[1], sys.argv[2]
t = Tally()
tmp = tempfile.mkdtemp(prefix="kr-snap-")
rnd = random.Random(int(os.environ.get("KR_SNAP_SEED", "17")))

MODELS = {  # name: (arguments, engines it resumes on)
    "phold": (["phold", "--lps", "256", "--end", "4000"], "soc"),
    "chaos": ([f"{build}/libchaos.so", "--lps", "32", "--end", "4000"], "so"),
    "pcs": (["pcs", "--lps", "16", "--end", "30"], "so"),
    "hazard-pointers": ([f"{build}/libhazard.so", "--lps", "4", "--end", "30000", "-P",
                         "case=1"], "so"),
    "datastore": (["datastore", "--lps", "16", "--end", "200"], "so"),
    # (same-time bundles and done(); queries - an asker may be waiting as the snapshot comes)
    "life": (["life", "--lps", "64", "-P", "width=64", "-P", "height=64", "-P",
              "generations=4000", "-P", "print=10", "--end", "5000"], "soc"),
    "commo": (["commo", "--lps", "64", "--end", "3000"], "so"),
    # (timers: the pending lists are in the states' images, timer events flagged)
    "timers": ([f"{build}/libtimers.so", "--lps", "64", "--end", "8000"], "sok"),
}
# (the chaos model built to mark its writes: --state chunk, "k", writes and resumes it)
if os.path.exists(f"{build}/libchaos_instr.so"):
    MODELS["chaos-marked"] = ([f"{build}/libchaos_instr.so", "--lps", "32", "--end", "4000"],
                              "sok")
# (Under a sanitizer, numbers in a state - the chaos model's sprinkled bytes, PCS's and the
# datastore's values - now and then equal addresses in the sanitizer's own anonymous
# mappings, which are many and vary from run to run; the digest check warns of such words
# too, and a snapshot cannot save them: it is skipped with a warning. There the matrix keeps
# the models whose states hold only counts and pointers, with fewer kills: slow builds.)
KIND = build_kind(kairos)
if KIND in ("asan", "tsan"):
    MODELS = {k: v for k, v in MODELS.items() if k in ("phold", "hazard-pointers")}
# (long: the four models are killed 20 times each, the others 5; 3 under sanitizers)
KILLS = {m: 1 if os.environ.get("KR_SNAP_QUICK") or not LONG else 3 if KIND in ("asan", "tsan") else
         20 if m in ("phold", "pcs", "datastore", "chaos") else 5 for m in MODELS}
ENGINES = {"s": [["--sync", "sequential"]],
           "o": [["--threads", "1"], ["--threads", "2"], ["--threads", "4"],
                 ["--threads", "2", "--state", "page"], ["--threads", "2", "--cancel", "lazy"]],
           "c": [["--sync", "conservative", "--threads", "2"]],
           "k": [["--threads", "2", "--state", "chunk"]]}


# Who writes the snapshots, by the engines the model runs on ("o": chaos and phold on many
# threads roll back heavily, --preempt tick puts events on stacks to be abandoned,
# --balance storm moves LPs between rounds; "c": jobs outstanding must retire first).
WRITERS = {"s": [["--sync", "sequential"]],
           "c": [["--sync", "conservative", "--threads", "2"],
                 ["--sync", "conservative", "--threads", "3", "--barriers", "events"],
                 ["--sync", "conservative", "--threads", "2", "--offload", "always"]],
           "o": [["--threads", "1"], ["--threads", "2"], ["--threads", "4"],
                 ["--threads", "2", "--state", "page"], ["--threads", "3", "--state", "buddy"],
                 ["--threads", "2", "--state", "scan"],
                 ["--threads", "3", "--cancel", "lazy"],
                 ["--threads", "2", "--preempt", "tick"],
                 ["--threads", "3", "--balance", "storm"],
                 ["--threads", "2", "--ckpt-interval", "1", "--cancel", "lazy"]],
           "k": [["--threads", "2", "--state", "chunk"],
                 ["--threads", "3", "--state", "chunk", "--preempt", "tick"]]}
if KIND == "tsan":  # (TSan refuses --preempt tick: test_ult)
    WRITERS["o"] = [w for w in WRITERS["o"] if "--preempt" not in w]


COMMITTED = {}  # the uninterrupted run's committed events, by its arguments


def reference(args):
    _, out, err = run(kairos, "run", *args, "--sync", "sequential")
    COMMITTED[tuple(args)] = int(re.search(r"committed events: (\d+)", err).group(1))
    return out, digest(err)


def kill_later(p, snap, delay):
    """SIGKILL p `delay` seconds after its first snapshot is there (or once it ended)."""
    first = os.path.join(snap, "snapshot")
    for _ in range(6000):
        if os.path.exists(first) or p.poll() is not None:
            break
        time.sleep(0.005)
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    p.wait()


def killed_run(args, snap, out_path, when, writer=("--sync", "sequential")):
    """The snapshotted run, killed `when[0]` seconds after its first snapshot."""
    with open(out_path, "w") as out, open(out_path + ".err", "w") as err:
        check = ["--check"] if rnd.random() < 0.3 else []  # (its output is counted too;
        if "conservative" in writer:                        # the conservative engine has
            check = []                                      # no --check)
        p = subprocess.Popen([kairos, "run", *args, *writer, "--progress", "off",
                              "--snapshot", snap, *when[1], *check], stdout=out, stderr=err)
        kill_later(p, snap, when[0])


def resume_once(name, args, engines, writers, ref_out, ref_digest):
    snap, out_path = os.path.join(tmp, f"{name}.snap"), os.path.join(tmp, f"{name}.out")
    shutil.rmtree(snap, ignore_errors=True)
    end = args[args.index("--end") + 1]
    every = ["--snapshot-every", str(float(end) / 40)]
    when = (rnd.uniform(0, 0.2), rnd.choice([every, ["--snapshot-seconds", "0.02"],
                                                 every + ["--snapshot-seconds", "0.05"]]))
    writer = rnd.choice([w for k in writers for w in WRITERS[k]])
    killed_run(args, snap, out_path, when, writer)
    if not os.path.exists(os.path.join(snap, "snapshot")):
        fail(f"{name} {' '.join(when[1])}, written by {' '.join(writer)}: no snapshot written "
             f"before the run ended:\n{open(out_path + '.err').read()[-1500:]}")
    layout = rnd.choice([e for k in engines for e in ENGINES[k]])
    with open(out_path, "a") as out:
        p = subprocess.run([kairos, "resume", snap, "--progress", "off", *layout], stdout=out,
                           stderr=subprocess.PIPE, text=True)
    if p.returncode != 0:
        fail(f"{name}: resume {' '.join(layout)} exited {p.returncode}:\n{p.stderr}")
    got = open(out_path).read()
    m = re.search(r"after \d+ committed events \(the counts above are since; (\d+) in all\)",
                  p.stderr)
    if not m or int(m.group(1)) != COMMITTED[tuple(args)]:
        fail(f"{name}: the resumed run's summary does not count the uninterrupted run's "
             f"{COMMITTED[tuple(args)]} committed events in all:\n{p.stderr[-1000:]}")
    if digest(p.stderr) != ref_digest or got != ref_out:
        fail(f"{name}: written by {' '.join(writer)}, killed after {when[0]:.2f} s "
             f"({' '.join(when[1])}), resumed with "
             f"{' '.join(layout)}: digest {digest(p.stderr)} vs {ref_digest}, stdout equal: "
             f"{got == ref_out}")
    return layout


def case_kill_and_resume():
    resumed = 0
    for name, (args, engines) in MODELS.items():
        ref_out, ref_digest = reference(args)
        for _ in range(KILLS[name]):
            writers = "k" if name == "chaos-marked" else engines  # (chunk state writes it)
            resume_once(name, args, engines, writers, ref_out, ref_digest)
            resumed += 1
    t.ok(f"{resumed} runs written by random engines, killed with SIGKILL after a snapshot, "
         f"resumed on random engines: the uninterrupted digest and stdout")


def case_chained():
    """Killed, resumed (writing snapshots again: sequential, or optimistic on 2 threads),
    killed again, resumed again on another engine: still the uninterrupted digest and
    stdout."""
    chains = 0
    for name in [m for m in ("chaos", "phold") if m in MODELS]:
        args, _ = MODELS[name]
        ref_out, ref_digest = reference(args)
        snap, out_path = os.path.join(tmp, f"{name}.chain"), os.path.join(tmp, f"{name}.cout")
        shutil.rmtree(snap, ignore_errors=True)
        end = args[args.index("--end") + 1]
        every = ["--snapshot-every", str(float(end) / 40)]
        killed_run(args, snap, out_path, (0.02, every))
        again = ["--threads", "2"] if name == "phold" else ["--sync", "sequential"]
        with open(out_path, "a") as out:
            p = subprocess.Popen([kairos, "resume", snap, *again, "--progress", "off",
                                  "--snapshot", snap, *every], stdout=out,
                                 stderr=subprocess.DEVNULL)
            kill_later(p, snap, 0.05)
        with open(out_path, "a") as out:
            p = subprocess.run([kairos, "resume", snap, "--threads", "2", "--progress", "off"],
                               stdout=out, stderr=subprocess.PIPE, text=True)
        got = open(out_path).read()
        if p.returncode or digest(p.stderr) != ref_digest or got != ref_out:
            fail(f"{name}: killed, resumed, killed, resumed: exit {p.returncode}, digest "
                 f"{digest(p.stderr)} vs {ref_digest}, stdout equal: {got == ref_out}")
        chains += 1
    t.ok(f"{chains} runs killed twice (the resumed run writing snapshots too), resumed: the "
         f"uninterrupted digest and stdout")


def case_refused():
    snap = os.path.join(tmp, "r.snap")
    out = os.path.join(tmp, "r.out")
    args = ["phold", "--lps", "16", "--end", "50"]
    _, text, _ = run(kairos, "run", *args, "--sync", "sequential", "--snapshot", snap,
                     "--snapshot-every", "20")
    path = os.path.join(snap, "snapshot")
    good = open(path, "rb").read()
    expect_exit(kairos, t, 2, ["kairos resume takes the model, its parameters"],
                "resume", snap, "--lps", "8")
    expect_exit(kairos, t, 2, ["kairos resume takes the model"], "resume", snap,
                "-P", "mean=2")
    bad = bytearray(good)
    bad[len(bad) // 2] ^= 0x10
    open(path, "wb").write(bytes(bad))
    expect_exit(kairos, t, 2, ["is damaged", "checksum"], "resume", snap)
    open(path, "wb").write(good[:len(good) - 7])
    expect_exit(kairos, t, 2, ["is damaged", "length"], "resume", snap)
    open(path, "wb").write(b"not a snapshot at all, no")
    expect_exit(kairos, t, 2, ["is not a Kairos snapshot"], "resume", snap)
    expect_exit(kairos, t, 2, ["cannot read the snapshot"], "resume",
                os.path.join(tmp, "nowhere"))
    open(path, "wb").write(good)
    expect_exit(kairos, t, 2, ["--snapshot-every and --snapshot-seconds need --snapshot"],
                "run", *args, "--snapshot-every", "5")
    expect_exit(kairos, t, 2, ["needs --snapshot-every"], "run", *args, "--snapshot", snap)
    # another model file under the same path
    so = os.path.join(tmp, "hazard.so")
    shutil.copy(f"{build}/libhazard.so", so)
    csnap = os.path.join(tmp, "c.snap")
    run(kairos, "run", so, "--lps", "8", "--end", "20", "--sync", "sequential", "--snapshot",
        csnap, "--snapshot-every", "5")
    with open(so, "ab") as f:
        f.write(b"\0changed")
    expect_exit(kairos, t, 2, ["has changed since"], "resume", csnap)
    # stdout that is not the snapshot's run's output
    printing = [f"{build}/libhazard.so", "--lps", "8", "--end", "20", "--sync", "sequential"]
    run(kairos, "run", *printing, "--snapshot", csnap, "--snapshot-every", "5")
    with open(out, "w") as f:
        f.write("something else entirely, and long enough to be compared " * 200)
    with open(out, "a") as f:
        p = subprocess.run([kairos, "resume", csnap], stdout=f, stderr=subprocess.PIPE,
                           text=True)
    if p.returncode != 2 or "does not start with the output" not in p.stderr:
        fail(f"resume into another file: exit {p.returncode}\n{p.stderr}")
    t.ok("damaged, truncated, foreign and missing snapshots, a changed model file, another "
         "output file and options a resume cannot change are refused")
    # issue 35, 9: a resume the engine refuses (chaos declares no lookahead: no conservative
    # run) leaves its output file as it was - the killed run's tail included; a resume that
    # runs cuts that tail and appends (not under a sanitizer, where chaos's snapshots are
    # skipped: see MODELS)
    if KIND in ("asan", "tsan"):
        return text
    chaos = [f"{build}/libchaos.so", "--lps", "16", "--end", "40", "--sync", "sequential"]
    ksnap, kout = os.path.join(tmp, "k.snap"), os.path.join(tmp, "k.out")
    with open(kout, "w") as f:
        subprocess.run([kairos, "run", *chaos, "--snapshot", ksnap, "--snapshot-every", "10",
                        "--progress", "off"], stdout=f, stderr=subprocess.DEVNULL, check=True)
    full = open(kout).read()
    with open(kout, "a") as f:
        f.write("the tail a killed run printed after its last snapshot\n")
    before = open(kout).read()
    with open(kout, "a") as f:
        p = subprocess.run([kairos, "resume", ksnap, "--sync", "conservative"], stdout=f,
                           stderr=subprocess.PIPE, text=True)
    if p.returncode != 1 or "--sync conservative needs" not in p.stderr or \
            open(kout).read() != before:
        fail(f"a refused resume: exit {p.returncode}, the file {'kept' if open(kout).read() == before else 'changed'}\n{p.stderr}")
    with open(kout, "a") as f:
        subprocess.run([kairos, "resume", ksnap, "--progress", "off"], stdout=f,
                       stderr=subprocess.DEVNULL, check=True)
    if open(kout).read() != full:
        fail("a resume after a refused one: the output file is not the full run's")
    t.ok("a resume the engine refuses leaves the output file as it was; the next one cuts "
         "and completes it")
    return text


def case_state_it_cannot_hold():
    """A state holding a pointer into the C library's heap cannot be saved: a warning, and the
    run goes on to its normal end."""
    snap = os.path.join(tmp, "h.snap")
    hazard = f"{build}/libhazard.so"
    _, _, err = run(kairos, "run", hazard, "--lps", "4", "--end", "5", "--sync", "sequential",
                    "-P", "case=2", "--snapshot", snap, "--snapshot-every", "1", check=False)
    if "was not written" not in err or "cannot save" not in err:
        fail(f"hazard heap pointer: no warning about the snapshot:\n{err[-800:]}")
    t.ok("a state with a C-heap pointer: the snapshot is not written, said so, the run goes on")


def case_interrupted():
    """Ctrl-C while the optimistic engine writes snapshots often (a stop and a snapshot asked
    for together, both turning safe events off): the run stops as interrupted runs do (exit
    130, a summary), and a resume of its last snapshot still ends with the uninterrupted
    digest and stdout."""
    stopped = 0
    for name in ("chaos", "commo"):
        if name not in MODELS:
            continue
        args, _ = MODELS[name]
        ref_out, ref_digest = reference(args)
        for threads in ("1", "2", "3"):
            snap, out_path = os.path.join(tmp, f"{name}.int"), os.path.join(tmp, f"{name}.iout")
            shutil.rmtree(snap, ignore_errors=True)
            with open(out_path, "w") as out:
                p = subprocess.Popen([kairos, "run", *args, "--threads", threads, "--progress",
                                      "off", "--snapshot", snap, "--snapshot-seconds", "0.005"],
                                     stdout=out, stderr=subprocess.PIPE, text=True)
                time.sleep(rnd.uniform(0.05, 0.2))
                p.send_signal(signal.SIGINT)
                try:
                    _, err = p.communicate(timeout=60)
                except subprocess.TimeoutExpired:
                    p.kill()
                    fail(f"{name} {threads} threads: no exit 60 s after SIGINT")
            if p.returncode == 0:  # (ended before the signal: nothing to resume)
                continue
            if p.returncode != 130 or "interrupted by SIGINT" not in err:
                fail(f"{name} {threads} threads, SIGINT: exit {p.returncode}\n{err[-1500:]}")
            if not os.path.exists(os.path.join(snap, "snapshot")):
                continue  # (a loaded machine: the signal came before the first snapshot)
            with open(out_path, "a") as out:
                q = subprocess.run([kairos, "resume", snap, "--threads", "2", "--progress",
                                    "off"], stdout=out, stderr=subprocess.PIPE, text=True)
            got = open(out_path).read()
            if q.returncode or digest(q.stderr) != ref_digest or got != ref_out:
                fail(f"{name} {threads} threads: interrupted, resumed: exit {q.returncode}, "
                     f"digest {digest(q.stderr)} vs {ref_digest}, stdout equal: {got == ref_out}")
            stopped += 1
    if "chaos" in MODELS and not stopped:
        fail("no run was interrupted: each ended before its SIGINT")
    t.ok(f"{stopped} runs interrupted while writing snapshots stop cleanly and resume to the "
         "uninterrupted digest and stdout")


def case_every_one_taken():
    """Every snapshot that falls due is taken, however fast the run: nothing runs at or past
    a snapshot's time before it is written (a lone worker's bursts, which run thousands of
    events between GVT rounds, ran a short run to its end with some of them, or all, never
    taken: none of the 3 here, none of ROSS's tower beside a busy core)."""
    times = set()
    setups = [(["--threads", "1"], True), (["--threads", "2"], False),
              (["--threads", "2", "--balance", "storm"], False)]
    for args, lone in setups:
        snap = os.path.join(tmp, "every.snap")
        shutil.rmtree(snap, ignore_errors=True)
        if lone:
            os.environ["KAIROS_TEST_TIME_WARP"] = "1"  # (one thread, in lone bursts)
        try:
            _, _, err = run(kairos, "run", "phold", "--lps", "16", "--end", "200", *args,
                            "--snapshot", snap, "--snapshot-every", "60")
        finally:
            os.environ.pop("KAIROS_TEST_TIME_WARP", None)
        m = re.search(r"snapshots: +(\d+) written .* the last at virtual time (\S+)", err)
        if not m or m.group(1) != "3":
            fail(f"{args}: not the 3 snapshots due at 60, 120 and 180:\n{err[-900:]}")
        times.add(m.group(2))
    if len(times) != 1:
        fail(f"the last snapshot at different times: {sorted(times)}")
    t.ok("a run of 16 LPs to 200, a snapshot every 60: all 3 written, the last at one time, "
         "on 1 thread in lone bursts, 2 threads and 2 with migrations")


# (each case forked, two at a time: much of it waits for snapshots and kills)
cases = [case_every_one_taken, case_kill_and_resume, case_chained, case_interrupted,
         case_refused] + ([case_state_it_cannot_hold]
                          if os.path.exists(f"{build}/libhazard.so") else [])
try:
    t.cases([in_own_dir(f, globals()) for f in cases])
finally:
    shutil.rmtree(tmp, ignore_errors=True)
t.finish()
