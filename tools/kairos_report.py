#!/usr/bin/env python3
"""kairos report RUN.json [RUN.json ...] -o report.html: one self-contained HTML page (no
network: plots are PNG images inside it) from the --stats files of one or more runs - the
model's own metrics over virtual time first (kr_metric), then the runs' configuration and
digest, GVT and committed rate over wall time, rollbacks and efficiency,
memory, per-thread and per-rank work, idle and throttling, state saving and time sharing.
Several runs are drawn side by side (thread scaling, state modes). A run's --lp-stats CSV
file, given after its --stats file, adds a per-LP view: events and rollbacks along the LPs
and the busiest ones. `kairos report` runs
this script; the plots come from kairos_plots.py, which bench/ scripts use too."""
import argparse
import csv
import html
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kairos_plots import bars, line_panels, png_data_uri, require  # noqa: E402

MIB = 1024.0 * 1024.0


def die(msg):
    """A usage error, as the kairos command reports one (exit 2)."""
    sys.stderr.write(f"kairos: error: {msg}\n")
    sys.exit(2)


def load(path):
    try:
        with open(path, encoding="utf-8") as f:
            run = json.load(f)
    except (OSError, ValueError) as e:
        die(f"cannot read '{path}' as a --stats file: {e}")
    if not isinstance(run, dict) or run.get("schema") != "kairos-stats":
        die(f"'{path}' is not a --stats file of kairos run (no \"schema\": "
            "\"kairos-stats\")")
    return run


def labels(runs, paths):
    """A short name per run; the file's name where two would read alike."""
    names = [f"{r['model']} {r['engine']}" + (f" {r['scheme']}" if r.get("scheme") else "") +
             f" {r.get('threads', 1)}t" +
             (f" x{r['ranks']}r" if r.get("ranks", 1) > 1 else "") +
             (f" {r['config'].get('state')}" if r.get("engine") == "optimistic" else "")
             for r in runs]
    return [f"{n} ({os.path.basename(p)})" if names.count(n) > 1 else n
            for n, p in zip(names, paths)]


def series(run):
    """The progress samples as dicts (wall_seconds, gvt, committed, ...)."""
    s = run.get("series") or {}
    cols = s.get("columns") or []
    return [dict(zip(cols, row)) for row in s.get("rows") or []]


def steps(rows, key):
    """(wall, per-second rate of key) between samples."""
    out = []
    for a, b in zip(rows, rows[1:]):
        dt = b["wall_seconds"] - a["wall_seconds"]
        if dt > 0:
            out.append((b["wall_seconds"], (b[key] - a[key]) / dt))
    return out


def efficiency(rows):
    """(wall, committed / processed so far) at each sample: never above 1. Per interval the
    ratio reached 1.4 - commits lag the processing they follow - and the threads' counts
    are sampled a moment apart, so the cumulative one is capped at 1 too."""
    return [(x["wall_seconds"], min(1.0, x["committed"] / x["processed"]))
            for x in rows if x["processed"] > 0]


def time_plots(runs, names):
    rows = {n: series(r) for n, r in zip(names, runs)}
    rows = {n: r for n, r in rows.items() if len(r) >= 2}
    if not rows:
        return []
    figs = [("GVT over wall time", line_panels(
        [("GVT", {n: [(x["wall_seconds"], x["gvt"]) for x in r] for n, r in rows.items()})],
        "wall time (s)", "virtual time")),
        ("Committed events per second", line_panels(
            [("committed rate", {n: [(t, v / 1e6) for t, v in steps(r, "committed")]
                                 for n, r in rows.items()})],
            "wall time (s)", "M events/s"))]
    eff = {n: efficiency(r) for n, r in rows.items()}
    figs.append(("Rollbacks and efficiency", line_panels(
        [("rollbacks per second", {n: steps(r, "rollbacks") for n, r in rows.items()}),
         ("efficiency (committed / processed so far)", eff)],
        "wall time (s)", "")))
    figs.append(("Memory", line_panels(
        [("resident memory", {n: [(x["wall_seconds"], x["rss_bytes"] / MIB) for x in r]
                              for n, r in rows.items()})],
        "wall time (s)", "MiB")))
    return figs


def metric_series(metric, runs, names):
    """Per run (one of each history) the metric's levels and counts per bin, at its
    middle."""
    levels, counts, seen = {}, {}, set()
    for n, r in zip(names, runs):
        m = (r.get("model_metrics") or {}).get(metric)
        if not m or not m.get("bins") or r.get("run_digest") in seen:
            continue
        seen.add(r.get("run_digest"))
        bins = m["bins"]
        mid = [b["t"] + m["bin_width"] / 2 for b in bins]
        for key in ("mean", "p50", "p90", "p99"):
            levels[f"{n} {key}" if len(runs) > 1 else key] = \
                [(x, b[key]) for x, b in zip(mid, bins) if b[key] is not None]
        counts[n] = [(x, b["count"]) for x, b in zip(mid, bins)]
    return levels, counts


def metric_plots(runs, names):
    """The model's own metrics (kr_metric), one figure each, first on the page: per bin of
    virtual time its mean and percentiles, and how many values it holds. Runs of the same
    history would draw the same lines (the metrics are the same bits on every engine): the
    first of them stands for the others."""
    figs = []
    for metric in sorted({m for r in runs for m in (r.get("model_metrics") or {})}):
        levels, counts = metric_series(metric, runs, names)
        if levels:
            figs.append((f"Model metric '{metric}' over virtual time", line_panels(
                [(f"{metric}: mean and percentiles per bin", levels),
                 (f"{metric}: values per bin", counts)], "virtual time", "")))
    return figs


def speedups(runs):
    """Each run's committed rate over that of a sequential run among them that committed
    the same history (the same run_digest), or None where there is none."""
    seq = {r.get("run_digest"): r.get("committed_per_second") for r in runs
           if r.get("engine") == "sequential" and r.get("committed_per_second")}
    return [r.get("committed_per_second", 0) / seq[r["run_digest"]]
            if r.get("run_digest") in seq else None for r in runs]


def run_plots(runs, names):
    figs = [("Committed rate of each run", bars(
        "committed events per second (whole run)",
        {n: {"M events/s": r.get("committed_per_second", 0) / 1e6}
         for n, r in zip(names, runs)}, "M events/s"))]
    ups = speedups(runs)
    if any(u is not None and r.get("engine") != "sequential" for u, r in zip(ups, runs)):
        figs.append(("Speed-up against the sequential run", bars(
            "committed rate / the sequential run's of the same history",
            {n: {"speed-up": u} for n, u in zip(names, ups) if u is not None}, "x")))
    figs.append(("Work per run", bars(
        "events", {n: {"committed": r.get("committed_events", 0),
                       "rolled back": r.get("rolled_back_events", 0),
                       "safe": r.get("safe_events", 0)} for n, r in zip(names, runs)},
        "events")))
    return figs


def thread_plots(runs, names):
    figs = []
    for n, r in zip(names, runs):
        threads = r.get("threads_detail") or []
        if threads:
            tid = [f"thread {t['thread']}" for t in threads]
            figs.append((f"Threads of {n}", bars(
                f"events per thread: {n}",
                {k: {"committed": t.get("committed", 0), "rolled back": t.get("rolled_back", 0)}
                 for k, t in zip(tid, threads)}, "events")))
            # (turns of the loop, not events: a throttled turn waited for GVT to let it
            # speculate further, an idle sleep found no work at all)
            figs.append((f"Loop turns of {n}", bars(
                f"turns that ran no event, per thread: {n}",
                {k: {"throttled (window full)": t.get("throttled", 0),
                     "idle sleeps": t.get("idle_sleeps", 0)}
                 for k, t in zip(tid, threads)}, "turns")))
            # (a flat GVT curve while CPU seconds fall short of the wall time: the process
            # was not running - another process had the core - not a hang)
            figs.append((f"CPU time of {n}", bars(
                f"CPU seconds per thread against the run's wall time: {n}",
                {k: {"CPU seconds": t.get("cpu_seconds", 0),
                     "wall seconds": r.get("wall_seconds", 0)}
                 for k, t in zip(tid, threads)}, "seconds")))
        ranks = r.get("per_rank") or []
        if ranks:
            figs.append((f"Ranks of {n}", bars(
                f"per rank: {n}",
                {f"rank {k['rank']}": {"committed": k.get("committed_events", 0),
                                       "rolled back": k.get("rolled_back_events", 0),
                                       "to other ranks": k.get("events_to_ranks", 0)}
                 for k in ranks}, "events")))
    return figs


def saving_plots(runs, names):
    ss = {n: r["state_saving"] for n, r in zip(names, runs) if r.get("state_saving")}
    ts = {n: r["time_sharing"] for n, r in zip(names, runs) if r.get("time_sharing")}
    figs = []
    if ss:
        figs.append(("State saving", bars(
            "mean cost", {n: {"checkpoint (ns)": s.get("mean_checkpoint_ns", 0),
                              "restore (ns)": s.get("mean_restore_ns", 0),
                              "event (ns)": s.get("mean_event_ns", 0)} for n, s in ss.items()},
            "ns")))
    if ts:
        figs.append(("Time sharing", bars(
            "preemptions", {n: {"at model calls": s.get("preempted_at_calls", 0),
                                "by ticks": s.get("preempted_by_ticks", 0),
                                "by slice": s.get("preempted_by_slice", 0),
                                "rolled back": s.get("rolled_back", 0)} for n, s in ts.items()},
            "count")))
    return figs


LP_COLUMNS = ("lp", "rank", "thread", "committed", "processed", "rollbacks", "rolled_back",
              "state_bytes")


def load_lps(path):
    """The rows of an --lp-stats CSV file, as dicts of ints."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.DictReader(f))
        if not rows or tuple(rows[0]) != LP_COLUMNS:
            raise ValueError(f"want the columns {', '.join(LP_COLUMNS)}")
        return [{k: int(v) for k, v in r.items()} for r in rows]
    except (OSError, ValueError, TypeError) as e:
        die(f"cannot read '{path}' as an --lp-stats file of kairos run: {e}")


def per_lp(rows, key, most=500):
    """(LP id, value) - with many LPs, the mean of groups of neighbours, at most `most`."""
    step = max(1, -(-len(rows) // most))
    return [(rows[i]["lp"], sum(r[key] for r in rows[i:i + step]) / len(rows[i:i + step]))
            for i in range(0, len(rows), step)]


def lp_plots(lps, names):
    """Per run given its --lp-stats file: committed and rolled-back events and rollbacks
    along the LPs (an imbalance shows as a slope or a spike), and the busiest LPs."""
    figs = []
    for n, rows in zip(names, lps):
        if not rows:
            continue
        figs.append((f"Events per LP of {n}", line_panels(
            [("events per LP", {"committed": per_lp(rows, "committed"),
                                "rolled back": per_lp(rows, "rolled_back")}),
             ("rollbacks per LP", {"rollbacks": per_lp(rows, "rollbacks")})],
            "LP" + (" (means of neighbours)" if len(rows) > 500 else ""), "")))
        top = sorted(rows, key=lambda r: (-r["processed"], r["lp"]))[:15]
        figs.append((f"Busiest LPs of {n}", bars(
            f"the {len(top)} LPs that ran the most events: {n}",
            {f"LP {r['lp']}": {"committed": r["committed"], "rolled back": r["rolled_back"]}
             for r in top}, "events")))
    return figs


def lp_tables(lps, names):
    """The ten busiest LPs of each run given its --lp-stats file."""
    out = ""
    for n, rows in zip(names, lps):
        if not rows:
            continue
        top = sorted(rows, key=lambda r: (-r["processed"], r["lp"]))[:10]
        head = "".join(f"<th>{c}</th>" for c in LP_COLUMNS)
        body = "".join("<tr>" + "".join(f"<td>{r[c]}</td>" for c in LP_COLUMNS) + "</tr>\n"
                       for r in top)
        out += (f"<h3>Busiest LPs of {html.escape(n)} ({len(rows)} LPs)</h3>\n"
                f"<table><tr>{head}</tr>\n{body}</table>\n")
    return out


def cell(run, key):
    v = run.get(key, "")
    return "inf" if v is None and key == "end_time" else str(v)  # (JSON has no infinity)


def table(runs, names):
    keys = ["engine", "scheme", "threads", "ranks", "lps", "end_time", "seed", "ended_by",
            "committed_events", "processed_events", "efficiency", "committed_per_second",
            "rollbacks", "gvt_rounds", "wall_seconds", "peak_rss_bytes", "run_digest"]
    head = "".join(f"<th>{html.escape(n)}</th>" for n in names)
    body = ""
    for k in keys:
        body += f"<tr><td>{k}</td>" + "".join(
            f"<td>{html.escape(cell(r, k))}</td>" for r in runs) + "</tr>\n"
    ups = speedups(runs)
    if any(u is not None for u in ups):
        body += "<tr><td>speed-up against the sequential run</td>" + "".join(
            f"<td>{'' if u is None else f'{u:.2f}x'}</td>" for u in ups) + "</tr>\n"
    conf = ""
    for k in sorted({k for r in runs for k in (r.get("config") or {})}):
        conf += f"<tr><td>{k}</td>" + "".join(
            f"<td>{html.escape(json.dumps((r.get('config') or {}).get(k, '')))}</td>"
            for r in runs) + "</tr>\n"
    return (f"<table><tr><th></th>{head}</tr>\n{body}</table>\n<details><summary>"
            f"configuration (options and parameters)</summary><table><tr><th></th>{head}"
            f"</tr>\n{conf}</table></details>")


# (the page checks its own plots once loaded: what a browser test reads back)
CHECK = """<script>
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.plot'), bad = 0;
  imgs.forEach(function (i) { if (!i.complete || i.naturalWidth < 100) bad++; });
  document.body.setAttribute('data-plots', bad ? 'missing ' + bad : 'drawn ' + imgs.length);
});
</script>"""


def page(runs, names, lps=None):
    lps = lps or [None] * len(runs)
    figs = (metric_plots(runs, names) + time_plots(runs, names) + run_plots(runs, names) +
            thread_plots(runs, names) + lp_plots(lps, names) + saving_plots(runs, names))
    parts = []
    for title, fig in figs:
        parts.append(f'<figure><img class="plot" alt="{html.escape(title)}" '
                     f'src="{png_data_uri(fig)}"><figcaption>{html.escape(title)}'
                     "</figcaption></figure>")
    title = "Kairos report: " + ", ".join(names)
    style = ("body{font-family:sans-serif;margin:1.5em}table{border-collapse:collapse;"
             "font-size:12px}td,th{border:1px solid #ccc;padding:2px 6px;text-align:left}"
             "figure{display:inline-block;margin:1em}img{max-width:100%}")
    return (f"<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}"
            f"</title><style>{style}</style></head>\n<body>\n<h1>{html.escape(title)}</h1>\n"
            f"<h2>Runs</h2>\n{table(runs, names)}\n{lp_tables(lps, names)}<h2>Plots</h2>\n" +
            "\n".join(parts) +
            f"\n{CHECK}\n</body></html>\n"), len(figs)


def drawn(runs, paths, lps=None):
    """page() of the runs; a file whose values are not what kairos run writes (null, a
    string where a number goes: edited by hand?) is named, not a traceback."""
    try:
        return page(runs, labels(runs, paths), lps)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:
        for r, p in zip(runs, paths):
            try:
                page([r], labels([r], [p]))
            except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e1:
                die(f"'{p}' has a value that is not what kairos run writes ({type(e1).__name__}: "
                    f"{e1}); was it edited? Write it again with kairos run --stats")
        die(f"the --stats files cannot be drawn together ({type(e).__name__}: {e})")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="kairos report", description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+", metavar="RUN.json",
                    help="--stats files of kairos run, each followed by its --lp-stats CSV "
                    "file if it has one (a per-LP view)")
    ap.add_argument("-o", "--output", required=True, metavar="report.html")
    a = ap.parse_args(argv)
    for p in a.runs:  # (an -o naming an input would overwrite the run's statistics)
        if os.path.exists(p) and os.path.exists(a.output) and os.path.samefile(p, a.output):
            die(f"-o {a.output} is one of the --stats files to read; write the report to "
                "another file (report.html)")
    require()  # (first: without matplotlib, say so before anything else)
    paths, lps = [], []
    for p in a.runs:
        if p.endswith(".csv"):
            if not paths or lps[-1] is not None:
                die(f"'{p}': an --lp-stats file goes right after the --stats file of its run")
            lps[-1] = load_lps(p)
        else:
            paths.append(p)
            lps.append(None)
    runs = [load(p) for p in paths]
    text, n = drawn(runs, paths, lps)
    tmp = a.output + ".tmp"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, a.output)
    except OSError as e:
        die(f"cannot write '{a.output}': {e}")
    print(f"kairos: wrote {a.output}: {len(runs)} run(s), {n} plots")
    return 0


if __name__ == "__main__":
    sys.exit(main())
