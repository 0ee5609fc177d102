#!/usr/bin/env python3
"""Build the libFuzzer targets (a clang-14 build with KAIROS_FUZZ=ON) and run each for a
bounded time on its corpus (fuzz/corpus/<target>). Exits 1 if a target found a crash, an
overrun, a leak or undefined behaviour (the input is kept as crash-* in the build folder).
--scratch: new inputs go to a temporary folder (CI), not into the kept corpus; --record
FILE: append a line (date, seconds, runs, findings) for bench/results/fuzz.md."""
import argparse
import datetime
import os
import re
import subprocess
import sys
import tempfile

TARGETS = ["image", "snapshot", "options", "json", "model"]
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build(folder):
    subprocess.run(["cmake", "-S", ROOT, "-B", folder, "-DCMAKE_C_COMPILER=clang-14",
                    "-DKAIROS_FUZZ=ON", "-DKAIROS_MPI=OFF", "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                   check=True, stdout=subprocess.DEVNULL)
    subprocess.run(["cmake", "--build", folder, "-j", str(os.cpu_count() or 1), "--target",
                    *[f"fuzz_{t}" for t in TARGETS]], check=True, stdout=subprocess.DEVNULL)


def fuzz(folder, target, seconds, scratch):
    corpus = os.path.join(ROOT, "fuzz", "corpus", target)
    dirs = [tempfile.mkdtemp(prefix=f"kr-fuzz-{target}-"), corpus] if scratch else [corpus]
    p = subprocess.run([os.path.join(folder, f"fuzz_{target}"), f"-max_total_time={seconds}",
                        "-rss_limit_mb=2048", "-timeout=60", "-print_final_stats=1",
                        f"-artifact_prefix={folder}/", *dirs],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    runs = re.search(r"stat::number_of_executed_units:\s*(\d+)", p.stdout)
    return p.returncode, int(runs.group(1)) if runs else 0, p.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=int, default=60, help="per target")
    ap.add_argument("--build", default=os.path.join(ROOT, "build-fuzz"))
    ap.add_argument("--scratch", action="store_true")
    ap.add_argument("--record")
    a = ap.parse_args()
    build(a.build)
    bad = []
    total = 0
    for t in TARGETS:
        rc, runs, out = fuzz(a.build, t, a.seconds, a.scratch)
        total += runs
        print(f"fuzz_{t}: {runs} runs in {a.seconds} s, exit {rc}")
        if rc:
            bad.append(t)
            print(out[-4000:])
    if a.record:
        with open(a.record, "a") as f:
            when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
            f.write(f"- {when}  {a.seconds} s per target ({', '.join(TARGETS)})  {total} runs  "
                    f"{'findings: ' + ', '.join(bad) if bad else 'no findings'}\n")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
