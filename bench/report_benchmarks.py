#!/usr/bin/env python3
"""The built-in benchmarks in one kairos report: PHOLD, PCS and Life on the sequential,
optimistic (1 and 2 threads) and conservative engines, with --stats, drawn into
bench/results/report/report.html by the report's own code (tools/kairos_report.py), and a
screenshot of the page from headless Chromium (report.png), as the browser test renders it.

    python3 bench/report_benchmarks.py [--kairos build/kairos] [--out bench/results/report]
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import kairos_report  # noqa: E402

RUNS = [  # (file name, arguments)
    ("phold-seq", ["phold", "--end", "5000", "--sync", "sequential"]),
    ("phold-opt1", ["phold", "--end", "5000", "--threads", "1"]),
    ("phold-opt2", ["phold", "--end", "5000", "--threads", "2"]),
    ("pcs-seq", ["pcs", "--lps", "1024", "--end", "0.3", "--sync", "sequential"]),
    ("pcs-opt2", ["pcs", "--lps", "1024", "--end", "0.3", "--threads", "2"]),
    ("life-opt2", ["life", "-P", "generations=300", "--end", "inf", "--threads", "2"]),
    ("life-cons", ["life", "-P", "generations=300", "--end", "inf", "--sync", "conservative",
                   "--conservative", "horizon", "--threads", "1"]),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kairos", default=os.path.join(HERE, "..", "build", "kairos"))
    ap.add_argument("--out", default=os.path.join(HERE, "results", "report"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    paths = []
    for name, args in RUNS:
        p = os.path.join(a.out, f"{name}.json")
        q = subprocess.run([a.kairos, "run", *args, "--progress", "off", "--stats", p],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if q.returncode:
            sys.exit(f"{name}: exit {q.returncode}\n{q.stderr}")
        paths.append(p)
        print(f"{name}: {q.stderr.splitlines()[-1].strip()}")
    html = os.path.join(a.out, "report.html")
    kairos_report.main([*paths, "-o", html])
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("no chromium: no screenshot")
        return 0
    subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", "--window-size=1400,3200",
                    "--screenshot=" + os.path.abspath(os.path.join(a.out, "report.png")),
                    "file://" + os.path.abspath(html)], capture_output=True, timeout=120)
    print(f"wrote {a.out}/report.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
