#!/usr/bin/env python3
"""No function of src/ or tools/ over cyclomatic complexity 15 (CONTRIBUTING.md), measured
with lizard (pip install lizard). Exit 0 if none is, 1 if some are, 77 if lizard is missing
(ctest reports that as skipped; .ci/run installs it)."""
import os
import subprocess
import sys

LIMIT = 15
root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))
try:
    import lizard  # noqa: F401
except ImportError:
    print("lizard is not installed (pip install lizard): complexity not checked")
    sys.exit(77)
p = subprocess.run([sys.executable, "-m", "lizard", "-C", str(LIMIT), "-w",
                    os.path.join(root, "src"), os.path.join(root, "tools")],
                   capture_output=True, text=True)
over = [line for line in p.stdout.splitlines() if "warning:" in line]
for line in over:
    print("FAIL:", line.replace(root + "/", ""))
print(f"{len(over)} function(s) over complexity {LIMIT}" if over else
      f"complexity: no function over {LIMIT}")
sys.exit(1 if over else 0)
