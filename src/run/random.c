/* random.c - the model API's distributions (kairos.h). Each draws only from the calling
 * LP's stream (kr__random_u64), so a value is rolled back with the LP and the same on every
 * engine, thread and rank count; each follows one published method, named at its function,
 * and uses no state outside the stream (the polar method's second normal is not kept: it
 * would be state the engines do not save). */
#define _GNU_SOURCE /* lgamma_r: lgamma writes the global signgam */
#include <math.h>
#include <stdint.h>
#include "kairos.h"
#include "base/error.h"
#include "run/random.h"

/* Means, counts and trial numbers above this are refused: counts are computed in doubles,
 * exact below 2^53. */
#define KR_DIST_MAX 0x1p53

/* Uniform on [0, 1), 53 bits. */
static double unit(const char *fn)
{
    return (double)(kr__random_u64(fn) >> 11) * 0x1.0p-53;
}

/* Uniform on (0, 1): the same grid moved half a step, for logarithms. */
static double open_unit(const char *fn)
{
    return ((double)(kr__random_u64(fn) >> 11) + 0.5) * 0x1.0p-53;
}

static double log_factorial(double k)
{
    int sign;
    return lgamma_r(k + 1, &sign);
}

double kr_uniform(double a, double b)
{
    if (!isfinite(a) || !isfinite(b) || a > b)
        kr__model_error("kr_uniform(%g, %g): needs finite bounds a <= b", a, b);
    double x = a + (b - a) * unit("kr_uniform");
    return x < b || a == b ? x : nextafter(b, a); /* (a rounding up to b: just below it) */
}

/* The polar method: Marsaglia and Bray, "A convenient method for generating normal
 * variables", SIAM Review 6(3), 1964. */
static double std_normal(const char *fn)
{
    for (;;) {
        double u = 2 * unit(fn) - 1, v = 2 * unit(fn) - 1, s = u * u + v * v;
        if (s < 1 && s > 0) return u * sqrt(-2 * log(s) / s);
    }
}

double kr_normal(double mean, double sd)
{
    if (!isfinite(mean) || !isfinite(sd) || sd < 0)
        kr__model_error("kr_normal(%g, %g): needs a finite mean and a finite sd >= 0", mean, sd);
    return mean + sd * std_normal("kr_normal");
}

double kr_lognormal(double mu, double sigma)
{
    if (!isfinite(mu) || !isfinite(sigma) || sigma < 0)
        kr__model_error("kr_lognormal(%g, %g): needs a finite mu and a finite sigma >= 0 (the "
                        "mean and sd of the logarithm)", mu, sigma);
    return exp(mu + sigma * std_normal("kr_lognormal"));
}

/* Marsaglia and Tsang, "A simple method for generating gamma variables", ACM Transactions
 * on Mathematical Software 26(3), 2000: for shape a >= 1 a squeeze and a rejection on a
 * transformed normal; for a < 1, their Gamma(a + 1) * U^(1/a). Scale 1. */
static double std_gamma(double a, const char *fn)
{
    if (a < 1) {
        double g = std_gamma(a + 1, fn);
        return g * pow(open_unit(fn), 1 / a);
    }
    double d = a - 1.0 / 3, c = 1 / sqrt(9 * d);
    for (;;) {
        double x, v;
        do {
            x = std_normal(fn);
            v = 1 + c * x;
        } while (v <= 0);
        v = v * v * v;
        double u = open_unit(fn), x2 = x * x;
        if (u < 1 - 0.0331 * x2 * x2 || log(u) < 0.5 * x2 + d * (1 - v + log(v))) return d * v;
    }
}

double kr_gamma(double shape, double scale)
{
    if (!(shape > 0) || !(scale > 0) || isinf(shape) || isinf(scale))
        kr__model_error("kr_gamma(%g, %g): needs a finite shape > 0 and a finite scale > 0",
                        shape, scale);
    return scale * std_gamma(shape, "kr_gamma");
}

/* Inversion: scale * (-ln(1 - U))^(1/shape). */
double kr_weibull(double shape, double scale)
{
    if (!(shape > 0) || !(scale > 0) || isinf(shape) || isinf(scale))
        kr__model_error("kr_weibull(%g, %g): needs a finite shape > 0 and a finite scale > 0",
                        shape, scale);
    return scale * pow(-log1p(-unit("kr_weibull")), 1 / shape);
}

/* Gamma(k, mean / k): the sum of k exponentials of mean mean / k, in constant time. */
double kr_erlang(unsigned k, double mean)
{
    if (k == 0 || !(mean > 0) || isinf(mean))
        kr__model_error("kr_erlang(%u, %g): needs k >= 1 phases and a finite mean > 0", k, mean);
    return mean / k * std_gamma((double)k, "kr_erlang");
}

/* Means under 10: the product of uniforms (Knuth, The Art of Computer Programming 2,
 * 3.4.1), about mean + 1 draws. Else PTRS: Hörmann, "The transformed rejection method for
 * generating Poisson random variables", Insurance: Mathematics and Economics 12(1), 1993,
 * about 1.2 pairs of draws. */
static uint64_t poisson_ptrs(double mu, const char *fn)
{
    double slam = sqrt(mu), loglam = log(mu);
    double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    double inv_alpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2);
    for (;;) {
        double u = unit(fn) - 0.5, v = unit(fn), us = 0.5 - fabs(u);
        double k = floor((2 * a / us + b) * u + mu + 0.43);
        if (us >= 0.07 && v <= vr) return (uint64_t)k;
        if (k < 0 || (us < 0.013 && v > us)) continue;
        if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <= -mu + k * loglam - log_factorial(k))
            return (uint64_t)k;
    }
}

uint64_t kr_poisson(double mean)
{
    if (!(mean >= 0) || mean > KR_DIST_MAX)
        kr__model_error("kr_poisson(%g): needs a mean from 0 to 2^53", mean);
    if (mean >= 10) return poisson_ptrs(mean, "kr_poisson");
    double limit = exp(-mean), prod = open_unit("kr_poisson");
    uint64_t k = 0;
    for (; prod > limit; k++) prod *= open_unit("kr_poisson");
    return k;
}

/* n p < 10 (p <= 1/2): inversion by sequential search, BINV of Kachitvichyanukul and
 * Schmeiser, "Binomial random variate generation", Communications of the ACM 31(2), 1988.
 * Else BTRS: Hörmann, "The generation of binomial random variates", Journal of Statistical
 * Computation and Simulation 46(1-2), 1993. */
static uint64_t binomial_inv(double n, double p, const char *fn)
{
    double q = 1 - p, s = p / q, a = (n + 1) * s;
    for (;;) { /* (a search that passes n by rounding starts again) */
        double r = pow(q, n), u = unit(fn), x = 0;
        while (u > r && x <= n) {
            u -= r;
            x++;
            r *= a / x - s;
        }
        if (x <= n) return (uint64_t)x;
    }
}

static uint64_t binomial_btrs(double n, double p, const char *fn)
{
    double q = 1 - p, spq = sqrt(n * p * q);
    double b = 1.15 + 2.53 * spq, a = -0.0873 + 0.0248 * b + 0.01 * p, c = n * p + 0.5;
    double alpha = (2.83 + 5.1 / b) * spq, vr = 0.92 - 4.2 / b, lpq = log(p / q);
    double m = floor((n + 1) * p), h = log_factorial(m) + log_factorial(n - m);
    for (;;) {
        double u = unit(fn) - 0.5, v = unit(fn), us = 0.5 - fabs(u);
        double k = floor((2 * a / us + b) * u + c);
        if (k < 0 || k > n) continue;
        if (us >= 0.07 && v <= vr) return (uint64_t)k;
        v = log(v * alpha / (a / (us * us) + b));
        if (v <= h - log_factorial(k) - log_factorial(n - k) + (k - m) * lpq) return (uint64_t)k;
    }
}

/* A binomial draw with p <= 0.5: by inversion when few successes are expected, else BTRS. */
static uint64_t binomial_low(uint64_t n, double p)
{
    double nd = (double)n;
    return nd * p < 10 ? binomial_inv(nd, p, "kr_binomial") : binomial_btrs(nd, p, "kr_binomial");
}

uint64_t kr_binomial(uint64_t n, double p)
{
    if (!(p >= 0 && p <= 1) || (double)n > KR_DIST_MAX)
        kr__model_error("kr_binomial(%llu, %g): needs n up to 2^53 trials and a probability p "
                        "from 0 to 1", (unsigned long long)n, p);
    if (n == 0 || p == 0) return 0;
    if (p == 1) return n;
    if (p > 0.5) return n - binomial_low(n, 1 - p); /* (the failures of the mirrored trial) */
    return binomial_low(n, p);
}

/* Inversion: P(X > k) = (1 - p)^k. */
uint64_t kr_geometric(double p)
{
    if (!(p > 0 && p <= 1))
        kr__model_error("kr_geometric(%g): needs a success probability p > 0 and <= 1", p);
    if (p == 1) return 1;
    double x = floor(log(open_unit("kr_geometric")) / log1p(-p));
    return x < 0x1p64 ? (uint64_t)x + 1 : UINT64_MAX; /* (p near 0: a count past 2^64) */
}

/* The weights' sum, each checked to be finite and >= 0. */
static double weights_sum(const double *weights, unsigned n)
{
    double sum = 0;
    for (unsigned i = 0; i < n; i++) {
        if (!(weights[i] >= 0) || isinf(weights[i]))
            kr__model_error("kr_discrete: weight %u is %g; weights must be finite and >= 0", i,
                            weights[i]);
        sum += weights[i];
    }
    return sum;
}

/* kr_discrete's weights checked (each finite and >= 0, their sum finite and > 0): the sum. */
static double discrete_sum(const double *weights, unsigned n)
{
    if (!weights || n == 0)
        kr__model_error("kr_discrete(%p, %u): needs an array of n >= 1 weights",
                        (const void *)weights, n);
    double sum = weights_sum(weights, n);
    if (!(sum > 0) || isinf(sum))
        kr__model_error("kr_discrete: the %u weights sum to %g; they must sum to a finite "
                        "number > 0", n, sum);
    return sum;
}

/* Inversion by sequential search over the weights (Devroye, Non-Uniform Random Variate
 * Generation, 1986, III.2): n steps at most. */
unsigned kr_discrete(const double *weights, unsigned n)
{
    double sum = discrete_sum(weights, n);
    double t = unit("kr_discrete") * sum;
    unsigned last = 0;
    for (unsigned i = 0; i < n; i++) {
        if (weights[i] > 0) last = i;
        if (t < weights[i]) return i;
        t -= weights[i];
    }
    return last; /* (rounding left t at the end: the last outcome that can happen) */
}
