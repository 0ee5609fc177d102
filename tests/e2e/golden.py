"""Recorded history: every built-in model and every model of bench/models and tests/models
that runs to an end keeps the run digest and committed output it had when the record was
made (tests/e2e/golden.txt). digest_matrix.py checks that the engines agree with each other;
this checks that they agree with the past, so that a refactoring that changes what is
committed (an RNG draw moved, a tie broken another way) cannot pass unnoticed.

    golden.py KAIROS BUILD            check every record (sequential, optimistic on 2 threads,
                                      conservative where the model has durations)
    golden.py KAIROS BUILD --update   rewrite golden.txt from the sequential engine

A record that changes on purpose is rewritten with --update, and the commit says why."""
import hashlib
import os
import sys
from common import run, fail, digest, Tally

HERE = os.path.dirname(os.path.abspath(__file__))
RECORD = os.path.join(HERE, "golden.txt")

# name, model (a built-in name, or a library in the build directory), arguments
CASES = [
    ("phold-std", "phold", "--lps 1024 --end 100"),
    ("phold-mixed", "phold", "--lps 256 --end 50 -P remote=0.3 -P population=3 "
     "-P state_bytes=200 -P lookahead=0.01"),
    # (the phases' busy work a hundredth of the default: wall time only, no part of the
    # history, and at the default 30-300 us an event the three runs took 23 s)
    ("phold-mesh", "phold", "--lps 2025 -P mesh=45 -P population=5 -P phase_length=2 --end 6 "
     "-P phase_a_us=0.3 -P phase_b_us=1.5 -P phase_c_us=3"),
    ("queueing", "queueing", "--lps 16 --end 500"),
    ("queueing-spans", "queueing", "--lps 16 --end 300 -P spans=1"),
    ("membench", "membench", "--lps 32 --end 60 -P state=20000 -P span=0.5 -P write_ratio=0.7"),
    ("pcs", "pcs", "--lps 16 --end 2 -P channels=200"),
    ("datastore", "datastore", "--lps 16 --end 10 -P op_us=1"),
    ("null", "null", "--lps 110 --end 20"),
    ("life-blocks", "life", "--lps 64 -P width=64 -P height=64 -P generations=40"),
    ("bundles", "libbundles.so", "--lps 64 --end 100"),
    ("typeorder", "libtypeorder.so", "--lps 32 --end 100"),
    ("airport", "libairport.so", "--lps 256 --end 20"),
    ("seir", "libseir.so", "--lps 256 --end 20"),
    ("life", "liblife.so", "--lps 256 --end 20"),
    ("chaos", "libchaos.so", "--lps 64 --end 30"),
    ("ring", "libring.so", "--lps 16 --end inf -P laps=300"),
    ("ticks", "libticks.so", "--lps 300 --end 30 -P payload=1000"),
    ("plainheap", "libplainheap_wrap.so", "--lps 32 --end 20"),
    ("commo", "commo", "--lps 200 --end 60"),
    ("query", "libquery.so", "--lps 16 --end 40.5 -P every=5 -P noise=1"),
]
ENGINES = [["--sync", "sequential"], ["--threads", "2"]]
# Models whose events all have durations (a lookahead or kr_schedule_span) run on the
# conservative engine too.
CONSERVATIVE = {"phold-std", "phold-mixed", "phold-mesh", "queueing-spans", "null",
                "life-blocks", "typeorder"}


def model_path(build, model):
    return os.path.join(build, model) if model.endswith(".so") else model


def observe(kairos, build, model, args, engine):
    _, out, err = run(kairos, "run", model_path(build, model), *args.split(), *engine)
    return digest(err), hashlib.sha256(out.encode()).hexdigest()[:16], out.count("\n")


def load():
    rec = {}
    for line in open(RECORD):
        if line.startswith("#") or not line.strip():
            continue
        name, d, h, n = line.split()
        rec[name] = (d, h, int(n))
    return rec


def update(kairos, build):
    with open(RECORD, "w") as f:
        f.write("# name, run digest, sha256 of stdout (first 16 hex), stdout lines - "
                "written by golden.py --update\n")
        for name, model, args in CASES:
            d, h, n = observe(kairos, build, model, args, ENGINES[0])
            f.write(f"{name} {d} {h} {n}\n")
            print(f"recorded {name}: {d} {h} {n}")


def check(kairos, build):
    rec, t = load(), Tally()
    for name, model, args in CASES:
        if name not in rec:
            fail(f"{name}: not recorded in {RECORD}; run golden.py --update")
        cons = [["--sync", "conservative", "--threads", "1"]] if name in CONSERVATIVE else []
        for engine in ENGINES + cons:
            got = observe(kairos, build, model, args, engine)
            if got != rec[name]:
                fail(f"{name} ({' '.join(engine)}): digest, stdout hash, lines {got}, recorded "
                     f"{rec[name]}: the committed history changed. If on purpose, rerun with "
                     "--update and say why in the commit")
            t.ok(f"{name} {' '.join(engine)}: {got[0]}")
    t.finish()


if __name__ == "__main__":
    (update if "--update" in sys.argv[3:] else check)(sys.argv[1], sys.argv[2])
