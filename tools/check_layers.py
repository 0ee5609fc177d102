#!/usr/bin/env python3
"""Check that includes between the layers of src/ only point down (docs/design.md section 2).

    python3 tools/check_layers.py [ROOT [OBJDIR]]   exit 0 if every include is allowed, else 1

With OBJDIR (the build's CMakeFiles directory, where the objects of src/ are) it also checks that no
object uses a symbol that only a higher layer defines: calls point down too.

Each file of src/ and tools/ belongs to the layer of its folder (LAYERS below; FILES lists
the exceptions); a file may include a header of its own layer or of a lower one, never a higher one.
Engines never include one another, and no two folders of one layer include each other (a
cycle). What still points the wrong way is listed in KNOWN with the reason: the check fails
on anything else, and on a KNOWN entry that no longer exists (so the list only shrinks)."""
import os
import re
import sys

# The layer of each folder (its files'): lower numbers are lower layers. One folder, one
# layer (issue 36 item 5): the folder a file is in says what it may include.
LAYERS = {
    # leaves: errors, growable arrays, hashing, time, per-type timing
    "src/base": 0,
    # events and pools, the future-event set, LP memory and checkpoints, event stacks; the
    # per-thread counters and the committed-output buffers (what the run and LPs hold)
    "src/msg": 1, "src/queue": 1, "src/state": 1, "src/ult": 1, "src/stats": 1,
    # the engine interface: the run's and LP's structures, faults, timeouts, snapshots,
    # traces, progress and statistics; the transport between ranks
    "src/core": 2, "src/net": 2,
    # the engines
    "src/sequential": 3, "src/optimistic": 3, "src/conservative": 3,
    # the run and the model API (with write marking and the --wrap entry points), the option
    # and engine tables, the run's report (above the engines)
    "src/run": 4,
    # the command, and the layers that give other engines' APIs (ROSS's) on top of Kairos's:
    # what a program with a model of its own calls in (run/command.h)
    "tools": 5, "src/compat": 5,
}
# Files whose layer is not their folder's, each with its reason (the list only shrinks).
FILES = {
}
ENGINES = ("src/sequential/", "src/optimistic/", "src/conservative/")
# The CMake object target of each layer of the library (CMakeLists.txt, KR_LAYERS).
TARGETS = {"kr_base": 0, "kr_modules": 1, "kr_iface": 2, "kr_engines": 3, "kr_run": 4}

# What still points the wrong way, each with its reason: an include (file, file) or a cycle
# between two folders of one layer (folder, folder). Issue 14 item 3 empties this.
KNOWN = {
}

# The C library's functions that the engine replaces for model code (core/interpose.c): a
# call to them anywhere goes there by the linker's choice, not by a dependency.
INTERPOSED = {"exit", "_exit", "abort", "pthread_create", "printf", "vprintf", "fprintf",
              "vfprintf", "puts", "putchar", "fputs", "write", "__printf_chk", "__fprintf_chk"}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def layer_of(path):
    if path in FILES:
        return FILES[path]
    folder = os.path.dirname(path)
    while folder and folder not in LAYERS:
        folder = os.path.dirname(folder)
    return LAYERS.get(folder)


def includes(root, path):
    text = open(os.path.join(root, path), encoding="utf-8").read()
    for inc in INCLUDE.findall(text):
        for base in ("src", os.path.dirname(path)):  # (written from src/, or relative)
            target = os.path.normpath(os.path.join(base, inc))
            if os.path.exists(os.path.join(root, target)) and target.startswith("src/"):
                yield target
                break


def sources(root):
    for top in ("src", "tools"):
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(d, f), root)


def engine_of(path):
    return next((e for e in ENGINES if path.startswith(e)), None)


def check_include(src, dst, ls, seen):
    """The problem with src (of layer ls) including dst, or None."""
    ld = layer_of(dst)
    cross = engine_of(src) and engine_of(dst) and engine_of(src) != engine_of(dst)
    if ld is not None and ld <= ls and not (cross and ld > 0):
        return None
    seen.add((src, dst))
    if (src, dst) in KNOWN:
        return None
    why = "one engine includes another" if cross else \
        f"layer {ls} includes layer {ld}: an upward include"
    return f"{src} includes {dst}: {why} (docs/design.md section 2)"


def check_cycles(folders, seen):
    bad = []
    for (a, layer), outs in folders.items():
        for b in outs:
            if a in folders.get((b, layer), set()) and a < b:
                seen.add((a, b))
                if (a, b) not in KNOWN:
                    bad.append(f"{a} and {b} include each other in layer {layer} (a cycle)")
    return bad


def check(root):
    bad, seen, folders = [], set(), {}
    for src in sources(root):
        ls = layer_of(src)
        if ls is None:
            bad.append(f"{src}: in no layer (add it to LAYERS in tools/check_layers.py)")
            continue
        for dst in includes(root, src):
            if os.path.dirname(src) != os.path.dirname(dst) and layer_of(dst) == ls:
                # (a folder may hold files of several layers: one node per folder and layer)
                folders.setdefault((os.path.dirname(src), ls), set()).add(os.path.dirname(dst))
            problem = check_include(src, dst, ls, seen)
            if problem:
                bad.append(problem)
    bad += check_cycles(folders, seen)
    bad += [f"{k[0]} and {k[1]}: fixed, drop it from KNOWN" for k in KNOWN if k not in seen]
    return bad


def symbols(obj):
    """(defined, used) symbol names of an object file."""
    import subprocess
    nm = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = [], []
    for parts in (line.split() for line in nm.splitlines()):
        if len(parts) == 3 and parts[1] in "TDBRV":
            defined.append(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            used.append(parts[1])
    return defined, used


def objects(root, objdir, bad):
    """(source path, layer, object path) of each object of a layer target built from a
    source of today: CMake puts the object of src/x/y.c at <target>.dir/src/x/y.c.o under
    objdir. A source built in another layer's target than LAYERS says goes into bad."""
    for target, tlayer in TARGETS.items():
        tdir = os.path.join(objdir, target + ".dir")
        for d, _, files in os.walk(tdir):
            for f in (f for f in files if f.endswith(".c.o")):
                obj = os.path.join(d, f)
                src = os.path.relpath(obj, tdir)[:-2]
                if not os.path.exists(os.path.join(root, src)):
                    continue  # (an object left from a source that moved)
                layer = layer_of(src)
                if layer != tlayer:
                    bad.append(f"{src} is built in {target} (layer {tlayer}) but is of layer "
                               f"{layer}: move it in CMakeLists.txt or in LAYERS")
                yield src, layer, obj


def check_calls(root, objdir):
    """Calls and references point down too: no object file uses a symbol that only an
    object of a higher layer defines (the include check cannot see a function declared low
    and defined high). objdir: the build's CMakeFiles directory."""
    defined, used, bad = {}, [], []
    for src, layer, obj in objects(root, objdir, bad):
        d, u = symbols(obj)
        defined.update((sym, (src, layer)) for sym in d)
        used += [(src, layer, sym) for sym in u if sym not in INTERPOSED]
    if not defined:
        bad.append(f"no object of the layer targets under {objdir}: is it a build's CMakeFiles?")
    for src, layer, sym in used:
        where = defined.get(sym)
        if where and where[1] > layer and (src, where[0]) not in KNOWN:
            bad.append(f"{src} (layer {layer}) uses {sym}, defined in {where[0]} (layer "
                       f"{where[1]}): a call that points up")
    return sorted(set(bad))


if __name__ == "__main__":
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    problems = check(root)
    if len(sys.argv) > 2:
        problems += check_calls(root, sys.argv[2])
    for p in problems:
        print("FAIL:", p)
    print(f"{len(problems)} problem(s)" if problems else "layers: every include points down")
    sys.exit(1 if problems else 0)
