/* dists.c - a test model of the distributions (kairos.h, issue 37). With -P dump=N, LP 0
 * draws N values of each case in its init and prints one "case value" line each, which
 * tests/e2e/distributions.py judges against the distributions' moments and with KS and
 * chi-square tests. Its events draw from every distribution - delays from gamma,
 * lognormal, Weibull and Erlang, destinations from kr_discrete, counts from Poisson,
 * binomial and geometric - so a draw rolled back or replayed wrongly changes the digest or
 * the output on some engine (the digest matrix). -P bad=K (1-10) calls the K-th of
 * kr_uniform, kr_normal, kr_lognormal, kr_gamma, kr_weibull, kr_erlang, kr_poisson,
 * kr_binomial, kr_geometric, kr_discrete with a bad argument in LP 0's first event: a
 * model error. */
#include <math.h>
#include "kairos.h"

struct dist_lp {
    uint64_t events, hash;
    double sum;
};

static const struct kr_param dists_params[] = {
    { "dump", KR_PARAM_INT, "0", "LP 0's init prints this many draws of each case", 0, 1e7 },
    { "bad", KR_PARAM_INT, "0", "1-10: a distribution called with a bad argument in LP 0's "
      "first event", 0, 10 },
    { 0 },
};

static const double weights4[] = { 1, 0, 3, 6 };

/* One case of the dump: its name and one draw. */
struct dist_case {
    const char *name;
    double (*draw)(void);
};

static double c_uniform(void) { return kr_uniform(-2, 3); }
static double c_normal(void) { return kr_normal(5, 2); }
static double c_lognormal(void) { return kr_lognormal(0.5, 0.75); }
static double c_gamma_small(void) { return kr_gamma(0.5, 2); }
static double c_gamma(void) { return kr_gamma(4.5, 1.5); }
static double c_weibull(void) { return kr_weibull(1.7, 3); }
static double c_erlang(void) { return kr_erlang(3, 6); }
static double c_poisson_small(void) { return (double)kr_poisson(3.5); }
static double c_poisson(void) { return (double)kr_poisson(40); }
static double c_binomial_inv(void) { return (double)kr_binomial(20, 0.3); }
static double c_binomial(void) { return (double)kr_binomial(1000, 0.4); }
static double c_binomial_hi_inv(void) { return (double)kr_binomial(50, 0.9); }
static double c_binomial_hi(void) { return (double)kr_binomial(200, 0.8); }
static double c_geometric(void) { return (double)kr_geometric(0.2); }
static double c_discrete(void) { return (double)kr_discrete(weights4, 4); }

static const struct dist_case cases[] = {
    { "uniform", c_uniform }, { "normal", c_normal }, { "lognormal", c_lognormal },
    { "gamma_small", c_gamma_small }, { "gamma", c_gamma }, { "weibull", c_weibull },
    { "erlang", c_erlang }, { "poisson_small", c_poisson_small }, { "poisson", c_poisson },
    { "binomial_inv", c_binomial_inv }, { "binomial", c_binomial },
    { "binomial_hi_inv", c_binomial_hi_inv }, { "binomial_hi", c_binomial_hi },
    { "geometric", c_geometric }, { "discrete", c_discrete },
};

static void dump(int64_t n)
{
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++)
        for (int64_t i = 0; i < n; i++) kr_printf("%s %.17g\n", cases[c].name, cases[c].draw());
}

static void dists_init(kr_lp me)
{
    struct dist_lp *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    if (me == 0) dump(kr_param_int("dump", 0));
    kr_schedule(me, kr_uniform(0, 1), 0, NULL, 0);
}

static void bad_call(int64_t which)
{
    static const double none[] = { 0, 0 };
    switch (which) {
    case 1: kr_uniform(2, 1); break;
    case 2: kr_normal(0, -1); break;
    case 3: kr_lognormal(0, NAN); break;
    case 4: kr_gamma(0, 1); break;
    case 5: kr_weibull(1, -2); break;
    case 6: kr_erlang(0, 1); break;
    case 7: kr_poisson(-1); break;
    case 8: kr_binomial(10, 1.5); break;
    case 9: kr_geometric(0); break;
    case 10: kr_discrete(none, 2); break;
    default: break;
    }
}

static void dists_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                        void *state)
{
    (void)type, (void)payload, (void)size;
    struct dist_lp *s = state;
    if (me == 0 && s->events == 0) bad_call(kr_param_int("bad", 0));
    /* (one draw a statement: the order of calls within an expression is unspecified in C) */
    double x = kr_normal(0, 1);
    x += kr_uniform(-1, 1);
    x += kr_lognormal(0, 0.5);
    uint64_t k = kr_poisson(2.5);
    k += kr_poisson(25);
    k += kr_binomial(30, 0.2);
    k += kr_binomial(500, 0.6);
    k += kr_geometric(0.5);
    s->events++;
    s->sum += x;
    s->hash = (s->hash ^ k ^ (uint64_t)(x * 1e6)) * 0x100000001b3ull;
    if (s->events % 16 == 0)
        kr_printf("LP %llu at %.9f: %llu events, hash %llx, sum %.9f\n", (unsigned long long)me,
                  now, (unsigned long long)s->events, (unsigned long long)s->hash, s->sum);
    kr_lp n = kr_lp_count();
    kr_lp dest = (me + (kr_lp)kr_discrete(weights4, 4) * 7) % n;
    double delay;
    switch (kr_discrete(weights4, 4)) {
    case 0: delay = kr_gamma(2, 0.3); break;
    case 2: delay = kr_weibull(1.5, 0.5); break;
    default:
        delay = kr_erlang(2, 0.6);
        delay += kr_lognormal(-1, 0.4) / 8;
        break;
    }
    kr_schedule(dest, now + 0.1 + delay, 0, NULL, 0);
}

static void dists_finish(kr_lp me, void *state)
{
    struct dist_lp *s = state;
    kr_printf("LP %llu: %llu events, hash %llx, sum %.9f\n", (unsigned long long)me,
              (unsigned long long)s->events, (unsigned long long)s->hash, s->sum);
}

static const char *const dists_types[] = { "DRAW", NULL };

static const struct kr_model dists_model = {
    .name = "dists", .init = dists_init, .event = dists_event, .finish = dists_finish,
    .type_names = dists_types,
    .lookahead = 0.1, .params = dists_params,
};

KR_MODEL_EXPORT(dists, dists_model)
