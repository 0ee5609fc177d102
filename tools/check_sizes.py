#!/usr/bin/env python3
"""No file of src/ over 800 lines and no struct of src/ or include/ over 40 members (issue 36:
a record that every mechanism shares grows until each pays for all; split it by mechanism).

    python3 tools/check_sizes.py [ROOT]   exit 0 if both hold, else 1 (names what is over)

A member is a declarator at the struct's own level: `uint64_t a, b;` is two, a nested
struct or union with a name is one (its own members are counted as its own struct's, if it
is a named type) and an anonymous one's members count as the outer struct's. Comments,
strings and preprocessor lines are left out before counting."""
import os
import re
import sys

MAX_LINES = 800
MAX_MEMBERS = 40
root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))


def sources(*dirs):
    for d in dirs:
        for base, _, names in os.walk(os.path.join(root, d)):
            for n in sorted(names):
                if n.endswith((".c", ".h")):
                    yield os.path.join(base, n)


def plain(text):
    """The code without comments, string and character literals, and # lines."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    text = re.sub(r"'(\\.|[^'\\\n])*'", "''", text)
    return re.sub(r"^\s*#(?:[^\n]*\\\n)*[^\n]*", " ", text, flags=re.M)


def body_end(text, i):
    """The index just past the brace that closes the one at text[i]."""
    depth = 0
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return j + 1
    return len(text)


def declarators(stmt):
    """How many members one `type a, b[2], (*f)(int, int);` declares (commas at depth 0)."""
    depth, n = 0, 1
    for ch in stmt:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            n += 1
    return n


def members(body):
    """Members of a struct whose body (between its braces) is given."""
    n, i, stmt = 0, 0, ""
    while i < len(body):
        ch = body[i]
        if ch == "{":  # a nested struct/union: named, one member; anonymous, its own
            j = body_end(body, i)
            rest = body[j:body.index(";", j)] if ";" in body[j:] else ""
            if rest.strip():
                n += declarators(rest)
            else:
                n += members(body[i + 1:j - 1])
            i = body.index(";", j) + 1 if ";" in body[j:] else len(body)
            stmt = ""
            continue
        if ch == ";":
            if stmt.strip():
                n += declarators(stmt)
            stmt = ""
        else:
            stmt += ch
        i += 1
    return n


def structs(text):
    """(name, members) for each named struct definition in the code."""
    for m in re.finditer(r"\bstruct\s+(\w+)\s*(?:__attribute__\s*\(\(.*?\)\)\s*)?\{", text):
        i = m.end() - 1
        yield m.group(1), members(text[i + 1:body_end(text, i) - 1])


def main():
    bad = []
    for path in sources("src"):
        with open(path, encoding="utf-8") as f:
            n = sum(1 for _ in f)
        if n > MAX_LINES:
            bad.append(f"{os.path.relpath(path, root)}: {n} lines (at most {MAX_LINES}: "
                       "move a part with its own purpose to a file of its own)")
    largest = ("", 0)
    for path in sources("src", "include"):
        with open(path, encoding="utf-8") as f:
            text = plain(f.read())
        for name, n in structs(text):
            largest = max(largest, (name, n), key=lambda x: x[1])
            if n > MAX_MEMBERS:
                bad.append(f"{os.path.relpath(path, root)}: struct {name} has {n} members "
                           f"(at most {MAX_MEMBERS}: group a mechanism's into a record)")
    for b in bad:
        print("FAIL:", b)
    print(f"sizes: files of src/ at most {MAX_LINES} lines, structs at most {MAX_MEMBERS} "
          f"members (largest: struct {largest[0]}, {largest[1]})" if not bad else
          f"{len(bad)} over the limits")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
