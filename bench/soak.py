"""Determinism soak: tests/e2e/determinism_driver.py for a long budget with a fresh seed,
its result line appended to bench/results/soak.md (runs, mismatches, seed, commit).

  python3 bench/soak.py [--build build] [--minutes 60]

A mismatch stops the soak and prints the two commands that disagree (the line is not
recorded then: fix the bug first)."""
import argparse
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.dirname(here)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default=os.path.join(root, "build"))
    ap.add_argument("--minutes", type=float, default=60)
    a = ap.parse_args()
    commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    record = os.path.join(here, "results", "soak.md")
    if not os.path.exists(record):
        with open(record, "w") as f:
            f.write("# Determinism soak (bench/soak.py)\n\nOne line a soak: when, the driver's "
                    "seed, runs, mismatches, seconds, distinct reference runs, commit.\n\n")
    tmp = record + ".line"
    rc = subprocess.run([sys.executable, os.path.join(root, "tests", "e2e", "determinism_driver.py"),
                         os.path.join(a.build, "kairos"), a.build, "--seconds", str(a.minutes * 60),
                         "--record", tmp], cwd=os.path.join(root, "tests", "e2e")).returncode
    if rc != 0:
        sys.exit(rc)
    line = open(tmp).read().strip()
    os.remove(tmp)
    with open(record, "a") as f:
        f.write(f"- {line}  commit {commit}\n")
    print(f"recorded in {record}")


if __name__ == "__main__":
    main()
