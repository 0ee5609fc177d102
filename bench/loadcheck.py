"""The machine's state around a benchmark: how busy it is before it starts (a leftover busy
loop or another job skews every figure after it: one ran unnoticed on core 1 for 20 minutes
of a session; reads /proc/stat twice), and the cross-core round trip (build/kr_pingpong),
which on a VM varies from ~90 ns to over a microsecond. Prints nothing itself."""
import contextlib
import os
import subprocess
import time


def _cpu_times():
    with open("/proc/stat") as f:
        fields = f.readline().split()[1:]
    vals = [int(x) for x in fields]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)  # idle + iowait
    return sum(vals), idle


def busy_share(seconds=0.5):
    """The share of all CPUs' time spent busy over `seconds` (0..1), or None off Linux."""
    try:
        t0, i0 = _cpu_times()
        time.sleep(seconds)
        t1, i1 = _cpu_times()
    except OSError:
        return None
    return 1 - (i1 - i0) / (t1 - t0) if t1 > t0 else None


def describe(seconds=0.5):
    """One line for a benchmark's header, with a warning when something else is running."""
    s = busy_share(seconds)
    if s is None:
        return "machine load before: not measured"
    line = f"machine load before: {100 * s:.0f}% of all CPUs busy"
    if s > 0.15:
        line += " - WARNING: something else is running; figures will be skewed"
    return line


def pingpong(tool):
    """The round trip as kr_pingpong prints it (median and percentiles), or why not."""
    if not tool or not os.path.exists(tool):
        return "not measured (build kr_pingpong)"
    out = subprocess.run([tool], capture_output=True, text=True).stdout.strip()
    return out.split(": ", 1)[-1]


@contextlib.contextmanager
def busy_core(cpu):
    """A busy loop pinned to core `cpu` while the block runs (None: none), the loaded case
    every benchmark measures beside the idle one."""
    busy = subprocess.Popen(["taskset", "-c", str(cpu), "sh", "-c", "while :; do :; done"]) \
        if cpu is not None else None
    try:
        yield
    finally:
        if busy:
            busy.kill()
            busy.wait()
