#!/usr/bin/env python3
"""kairos report (issue 18 part 3). From the --stats files of runs on three engines it
writes one self-contained page (nothing fetched from the network: the plots are PNG images
in it); headless Chromium renders it and the page's own check finds every plot drawn. A
model's metrics (kr_metric) are its first plots, and a run's --lp-stats file adds a per-LP
view; both render too.
Files that are not --stats files, and a missing -o, are usage errors. Without matplotlib,
kairos report says what to install (exit 2); without Chromium the browser check is skipped
unless KAIROS_REQUIRE_BROWSER=1 (.ci/run installs both and sets it)."""
import html
import json
import os
import re
import shutil
import subprocess
import sys
from common import run, fail, Tally

kairos, build = sys.argv[1], sys.argv[2]
t = Tally()
tmp = os.path.join(build, "report-test")
shutil.rmtree(tmp, ignore_errors=True)
os.makedirs(tmp)
required = os.environ.get("KAIROS_REQUIRE_BROWSER") == "1"


def report(*args):
    return subprocess.run([kairos, "report", *args], capture_output=True, text=True,
                          timeout=300)


def efficiency_bounded():
    """The efficiency plot never goes above 1: per interval it did (commits lag)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "tools"))
    import kairos_report
    rows = [{"wall_seconds": 0.1 * i, "processed": p, "committed": c}
            for i, (p, c) in enumerate([(0, 0), (1000, 100), (1500, 1400), (2000, 2010)])]
    pts = kairos_report.efficiency(rows)
    if len(pts) != 3 or max(v for _, v in pts) > 1 or abs(pts[1][1] - 1400 / 1500) > 1e-12:
        fail(f"the efficiency plot's points: {pts}")
    t.ok("efficiency in the report: committed / processed so far, never above 1")


def have_matplotlib():
    q = subprocess.run([sys.executable, "-c", "import matplotlib"], capture_output=True)
    return q.returncode == 0


def stats_files():
    runs = {"opt1": ["phold", "--lps", "1024", "--end", "3000", "--threads", "1"],
            "opt2": ["phold", "--lps", "1024", "--end", "3000", "--threads", "2"],
            "seq": ["phold", "--lps", "1024", "--end", "3000", "--sync", "sequential"],
            "cons": ["life", "--lps", "1024", "--end", "inf", "--sync", "conservative",
                     "--threads", "1"]}
    paths = []
    for name, args in runs.items():
        p = os.path.join(tmp, f"{name}.json")
        run(kairos, "run", *args, "--stats", p, "--progress", "off")
        paths.append(p)
    return paths


def written(paths):
    out = os.path.join(tmp, "report.html")
    q = report(*paths, "-o", out)
    m = re.search(r"wrote .*: 4 run\(s\), (\d+) plots", q.stdout)
    if q.returncode != 0 or not m:
        fail(f"kairos report of 4 runs: exit {q.returncode}\n{q.stdout}{q.stderr}")
    text = open(out, encoding="utf-8").read()
    plots = len(re.findall(r'<img class="plot"[^>]*src="data:image/png;base64,', text))
    if plots != int(m.group(1)) or plots < 10:
        fail(f"the page holds {plots} plots, the command said {m.group(1)}")
    if re.search(r'(src|href)="(?!data:)', text) or "http://" in text or "https://" in text:
        fail("the page refers to something outside itself")
    # (opt1, opt2 and seq commit one history: each gets its speed-up; life, none)
    ups = re.search(r"<tr><td>speed-up against the sequential run</td>(.*?)</tr>", text)
    cells = re.findall(r"<td>([^<]*)</td>", ups.group(1)) if ups else []
    if len(cells) != 4 or cells[2] != "1.00x" or cells[3] != "" or \
            not all(re.fullmatch(r"\d+\.\d\dx", c) for c in cells[:3]) or \
            "Speed-up against the sequential run" not in text:
        fail(f"the speed-up row and plot: {cells}")
    if "life conservative horizon 2t" not in text or "<td>scheme</td>" not in text:
        fail("the conservative run's label and table must name its scheme (horizon)")
    t.ok(f"kairos report of 4 runs on 3 engines: one self-contained page with {plots} plots, "
         "the conservative run named with its scheme")
    return out, plots


def browser(out, plots):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        if required:
            fail("KAIROS_REQUIRE_BROWSER=1 and no chromium on this machine")
        print("skipped: rendering the page (no chromium; .ci/run installs it)")
        return
    q = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        "--virtual-time-budget=10000", "--dump-dom",
                        "file://" + os.path.abspath(out)],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r'data-plots="([^"]*)"', q.stdout)
    if not m or m.group(1) != f"drawn {plots}":
        fail(f"headless Chromium: the page's check says {m.group(1) if m else 'nothing'}, "
             f"want 'drawn {plots}'\n{q.stderr[-2000:]}")
    t.ok(f"headless Chromium renders the page: all {plots} plots drawn")


def metrics_page():
    """A model's metrics (kr_metric) come first on the page, a plot each, drawn once for
    two runs of the same history."""
    paths = []
    for name, eng in (("m-seq", ["--sync", "sequential"]), ("m-opt", ["--threads", "2"])):
        p = os.path.join(tmp, f"{name}.json")
        run(kairos, "run", os.path.join(build, "libtimers.so"), "--lps", "32", "--end", "200",
            *eng, "--stats", p, "--progress", "off")
        paths.append(p)
    out = os.path.join(tmp, "metrics.html")
    q = report(*paths, "-o", out)
    text = open(out, encoding="utf-8").read() if q.returncode == 0 else ""
    caps = [html.unescape(c) for c in re.findall(r"<figcaption>([^<]*)</figcaption>", text)]
    want = ["Model metric 'queue' over virtual time", "Model metric 'wait' over virtual time"]
    if q.returncode or caps[:2] != want or sum("Model metric" in c for c in caps) != 2:
        fail(f"kairos report of a model with metrics: exit {q.returncode}, plots {caps}")
    t.ok("the model's metrics come first in the report, one plot each")
    return out, len(caps)


def per_lp():
    """A run's --lp-stats file after its --stats file adds the per-LP view: plots along the
    LPs, the busiest ones, and their table; a CSV first, or one that is not an --lp-stats
    file, is a usage error naming it."""
    st, lp = os.path.join(tmp, "lp.json"), os.path.join(tmp, "lp.csv")
    run(kairos, "run", "phold", "--lps", "256", "--end", "50", "--threads", "2", "--stats", st,
        "--lp-stats", lp, "--progress", "off")
    out = os.path.join(tmp, "lp.html")
    q = report(st, lp, "-o", out)
    text = open(out, encoding="utf-8").read() if q.returncode == 0 else ""
    caps = [html.unescape(c) for c in re.findall(r"<figcaption>([^<]*)</figcaption>", text)]
    rows = re.findall(r"<tr><td>(\d+)</td><td>0</td>", text)
    if q.returncode or not any(c.startswith("Events per LP of") for c in caps) or \
            not any(c.startswith("Busiest LPs of") for c in caps) or len(rows) != 10 or \
            "(256 LPs)" not in text:
        fail(f"kairos report with an --lp-stats file: exit {q.returncode}, plots {caps}, "
             f"{len(rows)} table rows\n{q.stderr}")
    t.ok("a run's --lp-stats file adds plots along its LPs and its busiest LPs' table")
    bad = os.path.join(tmp, "bad.csv")
    with open(bad, "w") as f:
        f.write("lp,what\n1,2\n")
    for args, needle in (([lp, st], "goes right after the --stats file"),
                         ([st, bad], f"cannot read '{bad}' as an --lp-stats file")):
        q = report(*args, "-o", os.path.join(tmp, "x.html"))
        if q.returncode != 2 or needle not in q.stderr:
            fail(f"kairos report {args}: want exit 2 and '{needle}'\n{q.stderr}")
    t.ok("an --lp-stats file before any run, or a CSV of other columns: exit 2 naming it")
    return out, len(caps)


def misuse(paths):
    junk = os.path.join(tmp, "junk.json")
    with open(junk, "w") as f:
        f.write('{"traceEvents": []}\n')
    for args, needle in (([paths[0]], "required"),
                         ([os.path.join(tmp, "missing.json"), "-o", "x.html"], "cannot read"),
                         ([junk, "-o", "x.html"], "is not a --stats file")):
        q = report(*args)
        if q.returncode != 2 or needle not in q.stderr:
            fail(f"kairos report {args}: want exit 2 and '{needle}'\n{q.stderr}")
    t.ok("kairos report without -o, of a missing file, of a file that is no --stats file: "
         "exit 2 saying so")
    # issue 35: a value edited to null or a string: named, no Python traceback
    run_ = json.load(open(paths[0]))
    run_["wall_seconds"] = None
    if run_.get("series", {}).get("rows"):
        run_["series"]["rows"][0][0] = "soon"
    edited = os.path.join(tmp, "edited.json")
    json.dump(run_, open(edited, "w"))
    q = report(paths[1], edited, "-o", os.path.join(tmp, "e.html"))
    if q.returncode != 2 or f"'{edited}' has a value that is not what kairos run writes" \
            not in q.stderr or "Traceback" in q.stderr:
        fail(f"kairos report of an edited --stats file: want exit 2 naming it\n{q.stderr}")
    t.ok("kairos report of a --stats file with a null and a string for numbers: exit 2 "
         "naming the file")


def output_is_input():
    """Issue 35, 10: -o naming one of the inputs overwrote the run's statistics with HTML."""
    st = os.path.join(tmp, "in.json")
    run(kairos, "run", "phold", "--lps", "64", "--end", "10", "--stats", st)
    before = open(st).read()
    q = report(st, "-o", st)
    if q.returncode != 2 or "is one of the --stats files to read" not in q.stderr or \
            open(st).read() != before:
        fail(f"kairos report a.json -o a.json: want exit 2 and the file kept\n{q.stderr}")
    t.ok("kairos report a.json -o a.json: refused (exit 2), the file kept")


output_is_input()
efficiency_bounded()
if not have_matplotlib():
    if required:
        fail("KAIROS_REQUIRE_BROWSER=1 and no matplotlib for this Python")
    q = report(os.path.join(tmp, "any.json"), "-o", os.path.join(tmp, "x.html"))
    if q.returncode != 2 or "matplotlib" not in q.stderr:
        fail(f"kairos report without matplotlib: want exit 2 naming it\n{q.stderr}")
    t.ok("without matplotlib, kairos report says to install it (exit 2)")
    print("skipped: the report's plots (no matplotlib; .ci/run installs it)")
else:
    files = stats_files()
    page, n = written(files)
    browser(page, n)
    browser(*metrics_page())
    browser(*per_lp())
    misuse(files)
t.finish()
