#!/usr/bin/env python3
"""The built-in `life` model (issue 16 part 5): LPs own blocks of a torus and exchange edges
each generation as same-time bundles. With -P dump=1 every LP prints its cells at the start
and at the end; a plain Game of Life computed here from the start must give the end and the
population line of every generation (so a wrong edge, corner or wrap-around fails), on
every engine, with the sequential digest. Blocks of one cell, a grid one block wide (its own
east and west neighbour) and bad layouts are checked too."""
import re
import sys
from common import run, fail, digest, Tally, build_kind, expect_exit

kairos, build = sys.argv[1], sys.argv[2]
t = Tally()
tsan = build_kind(kairos) == "tsan"


def grid_of(out, when, w, h, b):
    g = [[None] * w for _ in range(h)]
    for lx, ly, y, row in re.findall(rf"^{when} (\d+) (\d+) (\d+) ([01]+)$", out, re.M):
        for x, ch in enumerate(row):
            g[int(ly) * b + int(y)][int(lx) * b + x] = int(ch)
    if any(c is None for r in g for c in r):
        fail(f"{when}: not every cell was printed")
    return g


def step(g):
    h, w = len(g), len(g[0])
    nxt = [[0] * w for _ in range(h)]
    for y in range(h):
        for x in range(w):
            n = sum(g[(y + dy) % h][(x + dx) % w] for dy in (-1, 0, 1) for dx in (-1, 0, 1)
                    if dx or dy)
            nxt[y][x] = int(n == 3 or (g[y][x] and n == 2))
    return nxt


def check(w, h, b, gens, layouts):
    lps = (w // b) * (h // b)
    base = ["run", "life", "--lps", str(lps), "-P", f"width={w}", "-P", f"height={h}", "-P",
            f"block={b}", "-P", f"generations={gens}", "-P", "dump=1"]
    _, out, err = run(kairos, *base, "--sync", "sequential")
    g = grid_of(out, "start", w, h, b)
    pops = [sum(map(sum, g))]
    for _ in range(gens):
        g = step(g)
        pops.append(sum(map(sum, g)))
    if grid_of(out, "end", w, h, b) != g:
        fail(f"{w}x{h} in blocks of {b}: the cells after {gens} generations differ from a "
             f"plain Game of Life")
    got = [int(n) for n in re.findall(r"^generation \d+: (\d+) alive$", out, re.M)]
    if got != pops:
        fail(f"{w}x{h}/{b}: populations {got[:8]}... want {pops[:8]}...")
    for layout in layouts:
        _, o, e = run(kairos, *base, *layout)
        if digest(e) != digest(err) or o != out:
            fail(f"{w}x{h}/{b} {' '.join(layout)}: digest {digest(e)} vs sequential "
                 f"{digest(err)}, output equal: {o == out}")
    t.ok(f"{w}x{h} torus in {lps} blocks of {b}: {gens} generations as a plain Game of Life; "
         f"{len(layouts)} layouts give the sequential digest and output")


LAYOUTS = [["--threads", "1"], ["--threads", "2"], ["--threads", "4", "--check"],
           ["--threads", "3", "--state", "page"], ["--threads", "2", "--cancel", "lazy"],
           ["--threads", "4", "--balance", "storm"],
           ["--sync", "conservative", "--threads", "2"],
           ["--sync", "sequential", "--check"]]
check(24, 16, 4, 40, LAYOUTS)
check(8, 12, 4, 30, LAYOUTS[:3])   # two blocks wide: east and west are one LP
check(4, 12, 4, 30, LAYOUTS[:3])   # one block wide: its own east and west neighbour
check(6, 5, 1, 25, LAYOUTS[:3])    # blocks of one cell: every edge is a corner's size

expect_exit(kairos, t, 1, ["needs width and height multiples of block and --lps 1024"],
            "run", "life", "--lps", "1000", "--end", "5")
expect_exit(kairos, t, 1, ["needs width and height multiples of block"], "run", "life",
            "--lps", "4", "-P", "width=10", "-P", "height=8", "-P", "block=4", "--end", "5")
t.finish()
