#!/usr/bin/env python3
"""Longer fuzzing runs (fuzz/README.md): each target for --minutes, new inputs kept in
fuzz/corpus, a line appended to bench/results/fuzz.md."""
import argparse
import os
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ap = argparse.ArgumentParser()
ap.add_argument("--minutes", type=float, default=10)
a = ap.parse_args()
sys.exit(subprocess.run([sys.executable, os.path.join(root, "fuzz", "run.py"), "--seconds",
                         str(int(a.minutes * 60)), "--record",
                         os.path.join(root, "bench", "results", "fuzz.md")]).returncode)
