#!/usr/bin/env python3
"""The API reference, docs/api.md, generated from include/kairos.h: a table of where each
call may be made and what it costs (the "Where:" and "Cost:" sentences of its comment),
then the header declaration by declaration, each with its comment as text. The header is
the one place these are written; edit it and run this again.

    python3 tools/api_ref.py [--check]

--check exits 1 (saying so) when docs/api.md is not what the header gives (a test)."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HEADER = os.path.join(ROOT, "include", "kairos.h")
OUT = os.path.join(ROOT, "docs", "api.md")


def split(body):
    """Lines into blocks: a top-level comment and the code after it, up to the next such
    comment or a blank line."""
    blocks, comment, code, inside = [], [], [], False
    for ln in body.splitlines():
        starts = ln.startswith("/*") and not inside
        if (starts or not ln.strip()) and (comment or code):
            blocks.append((comment, code))
            comment, code = [], []
        if starts or inside:
            inside = "*/" not in ln
            comment.append(ln)
        elif ln.strip():
            code.append(ln)
    return blocks + ([(comment, code)] if comment or code else [])


def chunks(text):
    """The header from the first typedef to the C++ guard's end: (comment text, code)."""
    body = text[text.index("typedef double kr_time"):text.index("#ifdef __cplusplus\n}")]
    for comment, code in split(body):
        words = [re.sub(r"^\s*(/\*|\*/|\*)?\s?", "", ln).replace("*/", "").strip()
                 for ln in comment]
        yield " ".join(w for w in words if w), "\n".join(code)


def declared(code):
    """Functions a block declares (not those its macros call)."""
    bare = re.sub(r"/\*.*?\*/", "", code, flags=re.S)
    return [m for m in re.findall(r"^[A-Za-z][\w \*]*?\b(kr_\w+)\s*\(", bare, re.M)]


def names(code):
    """What a block declares: functions, then structs, enums, macros, typedefs."""
    bare = re.sub(r"/\*.*?\*/", "", code, flags=re.S)
    found = declared(code)
    found += re.findall(r"^(?:struct|enum) (\w+) \{", bare, re.M)
    found += re.findall(r"^#define (\w+)", bare, re.M)
    found += re.findall(r"^typedef [\w ]+ (\w+);", bare, re.M)
    return list(dict.fromkeys(found))


def where_cost(comment):
    """The comment's "Where: ..." and "Cost: ..." (or "Where and cost: as X")."""
    m = re.search(r"Where and cost: as (\w+)", comment)
    if m:
        return ("as " + m.group(1),) * 2
    w = re.search(r"Where: (.*?)\.(?: |$)", comment)
    c = re.search(r"Cost: (.*?)(?:\.(?: |$)|$)", comment)
    return (w.group(1) if w else "", c.group(1) if c else "")


def render(text):
    out = ["# API reference", "",
           "Generated from `include/kairos.h` by `tools/api_ref.py` - edit the header, then run",
           "`python3 tools/api_ref.py` (the `api_reference` test checks that this file is",
           "current). How to write a model with these calls: `guide.md`.", "",
           "## Where each call may be made, and what it costs", "",
           "\"Any callback\" is init, an event handler, done(), a query handler and finish. A",
           "call where it may not be made stops the run with a model error naming it.", "",
           "| call | where | cost |", "|---|---|---|"]
    blocks = list(chunks(text))
    for comment, code in blocks:
        w, c = where_cost(comment)
        for n in declared(code):
            if w or c:
                out.append(f"| `{n}` | {w} | {c} |")
    out += ["", "## Declarations", ""]
    for comment, code in blocks:
        decl = names(code)
        if not decl:
            continue
        out += [f"### {', '.join('`' + n + '`' for n in decl)}", ""]
        if comment:
            out += [comment, ""]
        out += ["```c", code, "```", ""]
    return "\n".join(out).rstrip("\n") + "\n"


def main():
    doc = render(open(HEADER).read())
    if "--check" in sys.argv[1:]:
        if not os.path.exists(OUT) or open(OUT).read() != doc:
            print("docs/api.md is not what include/kairos.h gives: run python3 "
                  "tools/api_ref.py", file=sys.stderr)
            return 1
        print("api reference: docs/api.md is current")
        return 0
    with open(OUT, "w") as f:
        f.write(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
