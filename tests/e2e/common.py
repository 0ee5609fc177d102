"""Helpers of the end-to-end tests: run the kairos command, read what it reports.

A successful `kairos run` writes --stats JSON (run() asks for it unless the test gives its
own --stats), and digest() and committed() read the run digest and the committed events
from that JSON, not from the human summary: the summary's wording may change. Messages of
failed runs are text, and tests match them as text."""
import json
import os
import re
import subprocess
import sys
import tempfile

# The tier (tests/CMakeLists.txt): ctest's default runs the quick tier, a part of each long
# suite that still covers every engine, mode and feature once; `ctest -L long` runs the
# scripts again with --long, whole. A script reads LONG and pick(quick, long).
LONG = "--long" in sys.argv
if LONG:
    sys.argv.remove("--long")


def pick(quick, long):
    """What a suite runs in this tier."""
    return long if LONG else quick


TIMEOUT = 120
# A sanitizer build runs a state-heavy model 10-50x slower (ThreadSanitizer intercepts every
# memcpy of a checkpoint): a hang is a run that exceeds the budget scaled by this.
SLOWDOWN = {"tsan": 4, "asan": 2, "": 1}
_kinds = {}


class Stderr(str):
    """A run's stderr, carrying the --stats JSON the run wrote (`stats`, None if none)."""
    stats = None


def _wants_stats(args):
    return (len(args) >= 2 and args[0] == "run" and not args[1].startswith("-")
            and not {"--stats", "--help", "-h"} & set(args))


def run(kairos, *args, check=True):
    """Run kairos; returns (returncode, stdout, stderr). Fails on a crash or hang. The
    stderr of a `kairos run` carries the run's --stats JSON (Stderr.stats)."""
    args = [str(a) for a in args]
    tmp = None
    if _wants_stats(args):
        fd, tmp = tempfile.mkstemp(suffix=".json")
        os.close(fd)
        args[2:2] = ["--stats", tmp]  # (before the test's own options: a test may end on
                                      # an option that lacks its value)
    cmd = [kairos, *args]
    if kairos not in _kinds:
        _kinds[kairos] = build_kind(kairos)
    limit = TIMEOUT * SLOWDOWN[_kinds[kairos]]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        fail(f"hang: {' '.join(cmd)} did not finish in {limit}s")
    finally:
        err_stats = _read_stats(tmp)
    if p.returncode < 0 or p.returncode > 2:
        fail(f"crash: {' '.join(cmd)} exited {p.returncode}\n{p.stderr}")
    if check and p.returncode != 0:
        fail(f"{' '.join(cmd)} exited {p.returncode}\n{p.stderr}")
    err = Stderr(p.stderr)
    err.stats = err_stats
    return p.returncode, p.stdout, err


def _read_stats(path):
    if not path:
        return None
    try:
        with open(path) as f:
            text = f.read()
        return json.loads(text) if text else None
    finally:
        os.unlink(path)


def stats_of(kairos, args):
    """Run a model that must succeed; returns (stdout, stderr, the --stats JSON)."""
    _, out, err = run(kairos, "run", *args, "--progress", "off")
    if err.stats is None:
        fail(f"kairos run {' '.join(map(str, args))} wrote no --stats")
    return out, err, err.stats


def expect_exit(kairos, tally, rc_want, needles, *args, out_want=None):
    """Run kairos expecting exit status rc_want and every needle in its stderr (and, if
    given, exactly out_want on stdout); returns (stdout, stderr)."""
    rc, out, err = run(kairos, *args, check=False)
    if rc != rc_want:
        fail(f"{args}: exit {rc}, wanted {rc_want}\n{err}")
    for n in needles:
        if n not in err:
            fail(f"{args}: message lacks '{n}':\n{err}")
    if out_want is not None and out != out_want:
        fail(f"{args}: printed {out!r}, wanted {out_want!r}")
    tally.ok(f"{' '.join(map(str, args))} -> exit {rc}")
    return out, err


def digest(stderr):
    """The run digest: from the run's --stats JSON (run()), else from the summary text."""
    if getattr(stderr, "stats", None):
        return stderr.stats["run_digest"]
    m = re.search(r"run digest:\s+([0-9a-f]{16})", stderr)
    if not m:
        fail(f"no run digest in:\n{stderr}")
    return m.group(1)


def committed(stderr):
    """Committed events: from the run's --stats JSON (run()), else from the summary."""
    if getattr(stderr, "stats", None):
        return stderr.stats["committed_events"]
    return int(re.search(r"committed events: (\d+)", stderr).group(1))


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


class Tally:
    def __init__(self):
        self.passed = 0

    def cases(self, funcs, jobs=2):
        """Run each function (a case of its own: files, checks) in a forked child, `jobs` at
        a time, for tests that mostly wait on launches (mpirun); each child's output is
        printed whole, in the functions' order, and its checks counted here. Exits 1 (as
        fail does) once all have ended if any failed, naming which."""
        results, running, todo = {}, {}, list(enumerate(funcs))
        while todo or running:
            while todo and len(running) < max(jobs, 1):
                i, f = todo.pop(0)
                out = tempfile.TemporaryFile(mode="w+")
                sys.stdout.flush()
                pid = os.fork()
                if pid == 0:
                    os._exit(_child_case(f, out))
                running[pid] = (i, out)
            pid, status = os.wait()
            if pid in running:
                i, out = running.pop(pid)
                results[i] = (status, out)
        failed = []
        for i, f in enumerate(funcs):
            status, out = results[i]
            out.seek(0)
            text = out.read()
            sys.stdout.write(text)
            self.passed += sum(1 for line in text.splitlines() if line.startswith("ok:"))
            if status:
                failed.append(f.__name__)
        if failed:
            print("FAIL: in", ", ".join(failed))
            sys.exit(1)

    def ok(self, what):
        self.passed += 1
        print("ok:", what)

    def finish(self):
        print(f"{self.passed} passed, 0 failed")


def in_own_dir(f, space):
    """f as a case of Tally.cases whose script-global `tmp` (space: the script's globals())
    is a directory of its own, made inside the script's: cases that name their files alike
    can then run side by side."""
    def case():
        space["tmp"] = tempfile.mkdtemp(prefix="case-", dir=space["tmp"])
        f()
    case.__name__ = f.__name__
    return case


def _child_case(f, out):
    """In a child of Tally.cases: f's output into out; its exit status."""
    os.dup2(out.fileno(), 1)
    os.dup2(out.fileno(), 2)
    code = 0
    try:
        f()
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    except BaseException:  # (a bug of the test itself: its traceback is its output)
        import traceback
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    sys.stderr.flush()
    return code


def build_kind(kairos):
    """'tsan', 'asan' or '' from kairos --version: what a sanitizer build cannot do is
    skipped (ThreadSanitizer: time-sharing; both: tight address-space limits)."""
    v = subprocess.run([kairos, "--version"], capture_output=True, text=True).stdout
    return "tsan" if "ThreadSanitizer" in v else "asan" if "AddressSanitizer" in v else ""


def scan_available(kairos):
    """--state scan needs Linux 6.7+ and userfaultfd (often blocked in containers)."""
    rc, _, err = run(kairos, "run", "phold", "--lps", "2", "--end", "1", "--state", "scan",
                     check=False)
    if rc != 0:
        print(f"note: --state scan not available here, its cases are skipped: {err.strip()}")
    return rc == 0
