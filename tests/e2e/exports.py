"""What the kairos executable shows a loaded model (src/exports.list): every function of the
model API in include/kairos.h (but kr_model_entry, which the model defines), and nothing of the engine's internals (kr__*, tw_*, cons_*,
the models' helpers). Also runs tools/check_layers.py: includes and calls between layers
point down (docs/design.md section 2); and checks that the compiler keeps the engines'
prefetches."""
import fnmatch
import os
import re
import subprocess
import sys
from common import fail, Tally

kairos, build = sys.argv[1], sys.argv[2]
root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
t = Tally()

ALLOWED = ["kr_[a-z]*", "__wrap_*", "__asan_store*", "__asan_handle_no_return", "exit", "_exit",
           "abort", "pthread_create", "printf", "vprintf", "fprintf", "vfprintf", "puts",
           "putchar", "fputs", "write", "__printf_chk", "__fprintf_chk"]
# (a sanitizer build's instrumented code defines what its runtime reads)
SANITIZER = ["__asan_*", "__tsan_*", "__ubsan_*", "__sanitizer_*", "__lsan_*"]
kind = subprocess.run([kairos, "--version"], capture_output=True, text=True).stdout
if "Sanitizer" in kind:
    ALLOWED += SANITIZER
nm = subprocess.run(["nm", "-D", "--defined-only", kairos], capture_output=True, text=True,
                    check=True).stdout
exported = set()
for line in nm.splitlines():
    parts = line.split()
    if len(parts) < 3 or "@" in parts[2]:  # (the C library's data, copied into the binary)
        continue
    name = parts[2]
    exported.add(name)
    if not any(fnmatch.fnmatchcase(name, p) for p in ALLOWED) or name.startswith("kr__"):
        fail(f"the kairos binary exports '{name}' to loaded models: only the model API and the "
             "hooks of src/exports.list may be exported")
t.ok(f"{len(exported)} exported symbols, all of them the model API or its hooks")

header = open(os.path.join(root, "include", "kairos.h")).read()
# every kr_ name called or declared in the header (kr_builtin_ names are made by a macro;
# "kr_time (*run_lookahead)" is a member's type)
api = {n for n in re.findall(r"\b(kr_[a-z][a-z0-9_]*)\s*\((?!\*)", header)
       if n != "kr_model_entry" and not n.startswith("kr_builtin")}
if len(api) < 20:
    fail(f"found only {len(api)} kr_ functions in include/kairos.h: the pattern is stale")
missing = sorted(api - exported)
if missing:
    fail(f"the model API is not exported, a model cannot link: {', '.join(missing)}")
t.ok(f"all {len(api)} functions of include/kairos.h exported")

# The engines hide the next event's memory latency with kr__heap_prefetch_next and
# kr__lp_prefetch_state. GCC counts a prefetch as free of side effects: a helper of loads and
# prefetches only was judged pure and its calls dropped whenever it was not inlined first
# (2x slower at 65 536 LPs, silently). A wrapper that does nothing else must keep them.
if os.uname().machine == "x86_64":
    probe = ('#include "core/core.h"\n#include "queue/heap.h"\n'
             "static inline void wrap(const struct kr__heap *h, const struct kr__run *r)\n"
             "{ kr__lp_prefetch_state(r, 3); kr__heap_prefetch_next(h, r->lp_mem, 128, 2); }\n"
             "void probe(const struct kr__heap *h, const struct kr__run *r) { wrap(h, r); }\n")
    asm = subprocess.run(["cc", "-std=gnu11", "-O2", "-I", os.path.join(root, "src"), "-I",
                          os.path.join(root, "include"), "-x", "c", "-S", "-o", "-", "-"],
                         input=probe, capture_output=True, text=True, check=True).stdout
    if asm.count("prefetch") < 5:
        fail(f"the engines' prefetch helpers lost prefetches at -O2:\n{asm}")
    t.ok("kr__heap_prefetch_next and kr__lp_prefetch_state keep their 5 prefetches behind a "
         "wrapper at -O2")

objs = os.path.join(build, "CMakeFiles")
p = subprocess.run([sys.executable, os.path.join(root, "tools", "check_layers.py"), root, objs],
                   capture_output=True, text=True)
if p.returncode:
    fail(f"includes or calls between layers:\n{p.stdout}")
t.ok("tools/check_layers.py: every include and every call points down")
t.finish()
