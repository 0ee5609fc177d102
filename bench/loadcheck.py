"""How busy the machine is before a benchmark starts: a leftover busy loop or another job
skews every figure after it (one ran unnoticed on core 1 for 20 minutes of a session).
Reads /proc/stat twice; prints nothing itself."""
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
