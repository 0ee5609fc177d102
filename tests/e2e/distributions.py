"""The model API's distributions (issue 37, item 1), with the test model tests/models/dists.c:
every case's sample mean and variance against the distribution's (within 5 standard errors),
and its shape - a Kolmogorov-Smirnov test for the continuous ones, a chi-square test for
the counts - at p > 0.001; the same draws on the optimistic engine; one run digest on
every engine for a model whose events draw from each; a model error naming the call for
each bad argument. The seed is fixed, so each test passes or fails the same way every
time: a generator that is off fails at once (p near 0 with 20 000 draws)."""
import math
import os
import sys
from common import run, fail, digest, Tally, expect_exit, pick

kairos, build = sys.argv[1], sys.argv[2]
dists = os.path.join(build, "libdists.so")
t = Tally()
N = pick(50000, 200000)


# ---- the regularized incomplete gamma function, for the gamma CDF and chi-square p ----

def gamma_p(a, x):
    """P(a, x): a series below a + 1, else 1 - the continued fraction of Q (modified Lentz)."""
    if x <= 0:
        return 0.0
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        n = a
        while abs(term) > abs(total) * 1e-16:
            n += 1
            term *= x / n
            total += term
        return total * math.exp(log_front)
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        h *= d * c
        if abs(d * c - 1) < 1e-16:
            break
    return 1.0 - math.exp(log_front) * h


def normal_cdf(z):
    return 0.5 * (1 + math.erf(z / math.sqrt(2)))


def ks_p(d, n):
    """Kolmogorov's limit distribution, with Stephens' correction for n."""
    lam = (math.sqrt(n) + 0.12 + 0.11 / math.sqrt(n)) * d
    return max(0.0, min(1.0, 2 * sum((-1) ** (j - 1) * math.exp(-2 * j * j * lam * lam)
                                     for j in range(1, 101))))


def ks_test(xs, cdf):
    xs = sorted(xs)
    n = len(xs)
    d = max(max((i + 1) / n - cdf(x), cdf(x) - i / n) for i, x in enumerate(xs))
    return d, ks_p(d, n)


def chi2_test(xs, pmf, lo, hi):
    """Counts of lo..hi (hi None: up to where the tail's expected count falls under 5),
    the tails merged into the end bins so that each expects 5 or more."""
    n = len(xs)
    ks = list(range(lo, (hi if hi is not None else int(max(xs))) + 1))
    exp = [n * pmf(k) for k in ks]
    obs = [0] * len(ks)
    for x in xs:
        obs[min(max(int(x) - lo, 0), len(ks) - 1)] += 1
    if hi is None:  # (the last bin takes the tail above the largest draw)
        exp[-1] += n * (1 - sum(pmf(k) for k in ks))
    bins_o, bins_e, acc_o, acc_e = [], [], 0, 0.0
    for o, e in zip(obs, exp):
        acc_o, acc_e = acc_o + o, acc_e + e
        if acc_e >= 5:
            bins_o.append(acc_o)
            bins_e.append(acc_e)
            acc_o, acc_e = 0, 0.0
    if acc_e and bins_e:
        bins_o[-1] += acc_o
        bins_e[-1] += acc_e
    chi2 = sum((o - e) ** 2 / e for o, e in zip(bins_o, bins_e))
    df = len(bins_e) - 1
    return chi2, df, 1 - gamma_p(df / 2, chi2 / 2) if df > 0 else 1.0


def poisson_pmf(lam):
    return lambda k: math.exp(-lam + k * math.log(lam) - math.lgamma(k + 1))


def binomial_pmf(n, p):
    return lambda k: math.comb(n, k) * p ** k * (1 - p) ** (n - k) if 0 <= k <= n else 0.0


def weibull_moments(k, lam):
    g1, g2 = math.gamma(1 + 1 / k), math.gamma(1 + 2 / k)
    return lam * g1, lam * lam * (g2 - g1 * g1)


def lognormal_moments(mu, s):
    return math.exp(mu + s * s / 2), (math.exp(s * s) - 1) * math.exp(2 * mu + s * s)


W4 = [1, 0, 3, 6]
# name: (mean, variance, ("ks", cdf) or ("chi2", pmf, lo, hi))
CASES = {
    "uniform": (0.5, 25 / 12, ("ks", lambda x: min(max((x + 2) / 5, 0), 1))),
    "normal": (5, 4, ("ks", lambda x: normal_cdf((x - 5) / 2))),
    "lognormal": (*lognormal_moments(0.5, 0.75),
                  ("ks", lambda x: normal_cdf((math.log(x) - 0.5) / 0.75) if x > 0 else 0)),
    "gamma_small": (1, 2, ("ks", lambda x: gamma_p(0.5, x / 2))),
    "gamma": (6.75, 10.125, ("ks", lambda x: gamma_p(4.5, x / 1.5))),
    "weibull": (*weibull_moments(1.7, 3),
                ("ks", lambda x: 1 - math.exp(-(x / 3) ** 1.7) if x > 0 else 0)),
    "erlang": (6, 12, ("ks", lambda x: gamma_p(3, x / 2))),
    "poisson_small": (3.5, 3.5, ("chi2", poisson_pmf(3.5), 0, None)),
    "poisson": (40, 40, ("chi2", poisson_pmf(40), 0, None)),
    "binomial_inv": (6, 4.2, ("chi2", binomial_pmf(20, 0.3), 0, 20)),
    "binomial": (400, 240, ("chi2", binomial_pmf(1000, 0.4), 0, 1000)),
    "binomial_hi_inv": (45, 4.5, ("chi2", binomial_pmf(50, 0.9), 0, 50)),
    "binomial_hi": (160, 32, ("chi2", binomial_pmf(200, 0.8), 0, 200)),
    "geometric": (5, 20, ("chi2", lambda k: 0.8 ** (k - 1) * 0.2 if k >= 1 else 0, 1, None)),
    "discrete": (sum(i * w for i, w in enumerate(W4)) / 10,
                 sum(i * i * w for i, w in enumerate(W4)) / 10
                 - (sum(i * w for i, w in enumerate(W4)) / 10) ** 2,
                 ("chi2", lambda k: W4[k] / 10 if 0 <= k < 4 else 0, 0, 3)),
}


def moments_ok(name, xs, mean, var):
    n = len(xs)
    m = sum(xs) / n
    v = sum((x - m) ** 2 for x in xs) / (n - 1)
    m4 = sum((x - m) ** 4 for x in xs) / n
    se_m, se_v = math.sqrt(var / n), math.sqrt(max(m4 - v * v, 0) / n)
    if abs(m - mean) > 5 * se_m or abs(v - var) > 5 * se_v + 1e-12:
        fail(f"{name}: sample mean {m:.6g} variance {v:.6g}, the distribution's {mean:.6g} "
             f"and {var:.6g} (standard errors {se_m:.3g}, {se_v:.3g})")
    return m, v


rc, out, err = run(kairos, "run", dists, "--lps", "4", "--end", "1", "--sync", "sequential",
                   "-P", f"dump={N}")
draws = {}
for line in out.splitlines():
    name, _, value = line.partition(" ")
    if name in CASES:
        draws.setdefault(name, []).append(float(value))
for name, (mean, var, test) in CASES.items():
    xs = draws.get(name, [])
    if len(xs) != N:
        fail(f"{name}: {len(xs)} draws printed, wanted {N}")
    m, v = moments_ok(name, xs, mean, var)
    if test[0] == "ks":
        d, p = ks_test(xs, test[1])
        what = f"KS D {d:.4f}"
    else:
        if any(x != int(x) or x < 0 for x in xs):
            fail(f"{name}: a count that is not a whole number >= 0")
        chi2, df, p = chi2_test(xs, *test[1:])
        what = f"chi-square {chi2:.1f} on {df} df"
    if p < 0.001:
        fail(f"{name}: {what}, p = {p:.2g}: not the distribution")
    t.ok(f"{name}: mean {m:.4g} (want {mean:.4g}), variance {v:.4g} (want {var:.4g}), "
         f"{what}, p = {p:.3f}")

# the same draws where LP 0's init runs on the optimistic engine (and on the others)
for eng in (["--threads", "2"], ["--sync", "conservative"]):
    rc, out2, err2 = run(kairos, "run", dists, "--lps", "4", "--end", "1", *eng,
                         "-P", f"dump={N // 10}")
    rc, ref, _ = run(kairos, "run", dists, "--lps", "4", "--end", "1", "--sync", "sequential",
                     "-P", f"dump={N // 10}")
    if out2 != ref:
        fail(f"{eng}: the draws differ from the sequential engine's")
t.ok("the same draws on the optimistic and conservative engines")

# a model whose events draw from every distribution: one digest everywhere (also in the
# digest matrix, with every thread count and checkpoint interval)
args = ["--lps", "64", "--end", pick(30, 100)]
rc, ref_out, err = run(kairos, "run", dists, *args, "--sync", "sequential")
ref = digest(err)
configs = [["--threads", "1"], ["--threads", "2"], ["--threads", "2", "--ckpt-interval", "1"],
           ["--threads", "2", "--state", "page"], ["--sync", "conservative"],
           ["--sync", "sequential", "--check"]]
for c in configs:
    rc, out, err = run(kairos, "run", dists, *args, *c)
    if digest(err) != ref or out != ref_out:
        fail(f"{c}: digest {digest(err)} (sequential {ref}) or output differs")
t.ok(f"events drawing from every distribution: digest {ref} on {len(configs) + 1} runs")

# a bad argument: a model error naming the call and its values, on every engine
BAD = ["kr_uniform(2, 1)", "kr_normal(0, -1)", "kr_lognormal(0, nan)", "kr_gamma(0, 1)",
       "kr_weibull(1, -2)", "kr_erlang(0, 1)", "kr_poisson(-1)", "kr_binomial(10, 1.5)",
       "kr_geometric(0)", "kr_discrete: the 2 weights sum to 0"]
for k, needle in enumerate(BAD, start=1):
    for eng in (["--sync", "sequential"], ["--threads", "2"]):
        expect_exit(kairos, t, 1, [needle, "model 'dists'", "event type 0 (DRAW)"], "run", dists,
                    "--lps", "4", "--end", "5", "-P", f"bad={k}", *eng)
t.ok("each bad argument is a model error naming the call")
t.finish()
