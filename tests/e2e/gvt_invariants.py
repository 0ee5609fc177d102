"""GVT and commitment under stress, with the engine checking its own invariants (--check):
no event ever runs below GVT, GVT never decreases, no committed event is ever rolled back,
and each LP commits in key order. Runs rollback-heavy and oversubscribed configurations with
very frequent GVT rounds, and each must still match the sequential digest."""
import os
import sys
from common import run, fail, digest, Tally

kairos, build = sys.argv[1], sys.argv[2]
ring = os.path.join(build, "libring.so")
t = Tally()

configs = {
    "phold zero lookahead": ["phold", "--lps", "32", "--end", "40", "-P", "lookahead=0", "-P", "mean=0.05",
                             "-P", "population=4"],
    "phold self-heavy": ["phold", "--lps", "128", "--end", "50", "-P", "remote=0.2", "-P", "lookahead=0"],
    "queueing zero-delay hops": ["queueing", "--lps", "12", "--end", "300"],
    "ring ends by done()": [ring, "--lps", "8", "--end", "inf", "-P", "laps=200", "-P", "tokens=3"],
}
for name, args in configs.items():
    _, _, err = run(kairos, "run", *args, "--sync", "sequential")
    ref = digest(err)
    for threads in (2, 3, 4):
        for period in ("0.02", "2"):
            rc, out, err = run(kairos, "run", *args, "--threads", threads, "--gvt-period", period,
                               "--ckpt-interval", "3", "--check")
            if digest(err) != ref:
                fail(f"{name}, {threads} threads, GVT period {period} ms: digest {digest(err)} != {ref}")
    t.ok(f"{name}: invariants hold and digest {ref} matches at 2-4 threads")
t.finish()
