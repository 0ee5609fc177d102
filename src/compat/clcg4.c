/* clcg4.c - ROSS's random numbers for the ROSS layer (ross.c): the combined generator of
 * P. L'Ecuyer and T. H. Andres, "A random number generator based on the combination of four
 * LCGs" (Mathematics and Computers in Simulation 44, 1997), with its streams: generator g
 * starts at seed x a^(g 2^(v+w)) mod m in each component (v = 31, w = 41, as ROSS sets them),
 * LP gid's stream i being generator gid x g_tw_nRNG_per_lp + i. Undrawing runs each
 * component backwards by the inverse multiplier a^(m-2) mod m. The distributions are ROSS's
 * documented ones, drawing the same uniforms in the same order, so a model sees the numbers
 * it sees on ROSS. Written from those definitions. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include "ross.h"
#include "compat/ross_int.h"

static const int64_t clcg_m[4] = { 2147483647, 2147483543, 2147483423, 2147483323 };
static const int64_t clcg_a[4] = { 45991, 207707, 138556, 49689 };
/* 1/m of each component, as the paper's combination writes them */
static const double clcg_inv[4] = { 4.65661287524579692e-10, 4.65661310075985993e-10,
                                    4.65661336096842131e-10, 4.65661357780891134e-10 };
#define CLCG_V 31
#define CLCG_W 41
#define TWO_PI 6.28318530718 /* (ROSS's constant, to draw its normals) */

static int64_t clcg_back[4];    /* a^(m-2) mod m: the inverse multipliers */
static int64_t clcg_jump[4][64]; /* (a^(2^(v+w)))^(2^k) mod m: generator g's start is the
                                  * product over g's bits (a million LPs seed in a blink) */

static int64_t mulmod(int64_t x, int64_t y, int64_t m)
{
    return (int64_t)((uint64_t)x * (uint64_t)y % (uint64_t)m);
}

static int64_t powmod(int64_t b, uint64_t e, int64_t m)
{
    int64_t r = 1;
    for (b %= m; e; e >>= 1, b = mulmod(b, b, m))
        if (e & 1) r = mulmod(r, b, m);
    return r;
}

void ross_rand_setup(void)
{
    for (int j = 0; j < 4; j++) {
        clcg_back[j] = powmod(clcg_a[j], (uint64_t)(clcg_m[j] - 2), clcg_m[j]);
        int64_t x = clcg_a[j];
        for (int i = 0; i < CLCG_V + CLCG_W; i++) x = mulmod(x, x, clcg_m[j]);
        for (int k = 0; k < 64; k++, x = mulmod(x, x, clcg_m[j])) clcg_jump[j][k] = x;
    }
}

/* A seed component kept within 1 .. m-1, as the generator needs. */
static int64_t clamp(int64_t s, int j)
{
    return s < 1 ? 1 : s > clcg_m[j] - 1 ? clcg_m[j] - 1 : s;
}

void ross_rand_seed(tw_rng_stream *g, const uint32_t seed[4], uint64_t generator)
{
    g->count = 0;
    for (int j = 0; j < 4; j++) {
        int64_t s = clamp(seed[j], j);
        for (uint64_t b = generator; b; b &= b - 1)
            s = mulmod(clcg_jump[j][__builtin_ctzll(b)], s, clcg_m[j]);
        g->Ig[j] = g->Lg[j] = g->Cg[j] = (int32_t)clamp(s, j);
    }
    g->tw_normal_u1 = g->tw_normal_u2 = 0;
    g->tw_normal_flipflop = 0;
}

/* The combination of the four current seeds: x1/m1 - x2/m2 + x3/m3 - x4/m4 modulo 1, in
 * the paper's order of operations (the last bit of each draw depends on it). */
static double combine(const tw_rng_stream *g)
{
    double u = clcg_inv[0] * g->Cg[0];
    u -= clcg_inv[1] * g->Cg[1];
    if (u < 0) u += 1.0;
    u += clcg_inv[2] * g->Cg[2];
    if (u >= 1.0) u -= 1.0;
    u -= clcg_inv[3] * g->Cg[3];
    if (u < 0) u += 1.0;
    return u;
}

double tw_rand_unif(tw_rng_stream *g)
{
    g->count++;
    for (int j = 0; j < 4; j++) g->Cg[j] = (int32_t)mulmod(clcg_a[j], g->Cg[j], clcg_m[j]);
    return combine(g);
}

double tw_rand_reverse_unif(tw_rng_stream *g)
{
    g->count--;
    for (int j = 0; j < 4; j++) g->Cg[j] = (int32_t)mulmod(clcg_back[j], g->Cg[j], clcg_m[j]);
    return combine(g);
}

long tw_rand_integer(tw_rng_stream *g, long low, long high)
{
    long top = high == LONG_MAX ? high : high + 1;
    if (top <= low) return 0;
    return low + (long)(tw_rand_unif(g) * (double)(top - low));
}

unsigned long tw_rand_ulong(tw_rng_stream *g, unsigned long low, unsigned long high)
{
    unsigned long top = high == ULONG_MAX ? high : high + 1;
    if (top < low) return 0;
    return low + (unsigned long)(tw_rand_unif(g) * (double)(top - low));
}

long tw_rand_binomial(tw_rng_stream *g, long n, double p)
{
    long k = 0;
    for (long t = 0; t < n; t++) k += tw_rand_unif(g) <= p;
    return k;
}

double tw_rand_exponential(tw_rng_stream *g, double mean)
{
    return -mean * log(tw_rand_unif(g));
}

double tw_rand_pareto(tw_rng_stream *g, double shape, double scale)
{
    return scale * 1.0 / pow(tw_rand_unif(g), 1 / shape);
}

/* Shape > 1: Cheng's rejection from a log-logistic envelope (1977, algorithm GB). */
static double gamma_cheng(tw_rng_stream *g, double shape, double scale)
{
    double a = 1 / sqrt(2 * shape - 1), b = shape - log(4), q = shape + 1 / a, phi = 4.5;
    double d = 1 + log(phi);
    for (;;) {
        double u1 = tw_rand_unif(g), u2 = tw_rand_unif(g);
        double v = a * log(u1 / (1 - u1)), y = shape * exp(v), z = u1 * u1 * u2;
        double w = b + q * v - y;
        if (w + d - phi * z >= 0 || w >= log(z)) return scale * y;
    }
}

/* Shape < 1: Ahrens and Dieter's GS rejection. */
static double gamma_gs(tw_rng_stream *g, double shape, double scale)
{
    double b = (exp(1) + shape) / exp(1);
    for (;;) {
        double p = b * tw_rand_unif(g);
        if (p <= 1) {
            double y = pow(p, 1 / shape);
            if (tw_rand_unif(g) <= exp(-y)) return scale * y;
        } else {
            double y = -log((b - p) / shape);
            if (tw_rand_unif(g) <= pow(y, shape - 1)) return scale * y;
        }
    }
}

double tw_rand_gamma(tw_rng_stream *g, double shape, double scale)
{
    if (shape > 1) return gamma_cheng(g, shape, scale);
    if (shape == 1) return tw_rand_exponential(g, scale);
    return gamma_gs(g, shape, scale);
}

long tw_rand_geometric(tw_rng_stream *g, double p)
{
    long n = 1;
    while (tw_rand_unif(g) > p) n++;
    return n;
}

/* Box and Muller: a pair of uniforms gives a sine draw, then the cosine draw of the same
 * pair; `rng_calls` says how many uniforms this draw took (for a reverse handler). */
double tw_rand_normal01(tw_rng_stream *g, unsigned int *rng_calls)
{
    *rng_calls = 0;
    g->tw_normal_flipflop = !g->tw_normal_flipflop;
    if (g->tw_normal_flipflop || g->tw_normal_u1 < 0.0 || g->tw_normal_u1 >= 1.0 ||
        g->tw_normal_u2 < 0.0 || g->tw_normal_u2 > 1.0) {
        g->tw_normal_u1 = tw_rand_unif(g);
        g->tw_normal_u2 = tw_rand_unif(g);
        *rng_calls = 2;
        return sqrt(-2.0 * log(g->tw_normal_u1)) * sin(TWO_PI * g->tw_normal_u2);
    }
    return sqrt(-2.0 * log(g->tw_normal_u1)) * cos(TWO_PI * g->tw_normal_u2);
}

double tw_rand_normal_sd(tw_rng_stream *g, double mu, double sd, unsigned int *rng_calls)
{
    return mu + tw_rand_normal01(g, rng_calls) * sd;
}

long tw_rand_poisson(tw_rng_stream *g, double lambda)
{
    double limit = exp(-lambda), prod = tw_rand_unif(g);
    long n = 0;
    while (prod >= limit) {
        n++;
        prod *= tw_rand_unif(g);
    }
    return n;
}

double tw_rand_lognormal(tw_rng_stream *g, double mean, double sd, unsigned int *rng_calls)
{
    return exp(mean + sd * tw_rand_normal01(g, rng_calls));
}

double tw_rand_weibull(tw_rng_stream *g, double mean, double shape)
{
    double scale = mean / tgamma(1.0 + 1.0 / shape);
    return scale * pow(-log(tw_rand_unif(g)), 1.0 / shape);
}
