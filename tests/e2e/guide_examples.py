"""The guide's complete examples (docs/guide.md: a ```c block that starts with
"/* example: NAME */") build as outside models with the C compiler, without a warning, and
run: the sequential engine's digest and output on the optimistic engine at 1 and 2 threads
and under --check, so an example a reader copies works as printed."""
import os
import re
import subprocess
import sys
import tempfile
from common import run, fail, digest, Tally

kairos, build = sys.argv[1], sys.argv[2]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
t = Tally()
guide = open(os.path.join(root, "docs", "guide.md"), encoding="utf-8").read()
examples = re.findall(r"```c\n(/\* example: (\w+) \*/\n.*?)```", guide, re.S)
if not examples:
    fail("docs/guide.md has no complete example")
with tempfile.TemporaryDirectory() as d:
    for code, name in examples:
        src, lib = os.path.join(d, name + ".c"), os.path.join(d, f"lib{name}.so")
        with open(src, "w") as f:
            f.write(code)
        p = subprocess.run(["cc", "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-fPIC",
                            "-shared", "-DKR_OUTSIDE_MODEL", "-I", os.path.join(root, "include"),
                            src, "-o", lib, "-lm"], capture_output=True, text=True)
        if p.returncode:
            fail(f"the guide's example '{name}' does not build:\n{p.stderr}")
        args = ["--lps", "8", "--end", "50"]
        rc, ref_out, err = run(kairos, "run", lib, *args, "--sync", "sequential")
        ref = digest(err)
        if not ref_out:
            fail(f"{name}: printed nothing")
        for eng in (["--threads", "1"], ["--threads", "2"], ["--sync", "sequential", "--check"]):
            rc, out, err = run(kairos, "run", lib, *args, *eng)
            if digest(err) != ref or out != ref_out:
                fail(f"{name} {eng}: digest {digest(err)} (sequential {ref}) or output differs")
        t.ok(f"the guide's example '{name}' builds and runs alike on the sequential and "
             f"optimistic engines: {ref}")
t.finish()
