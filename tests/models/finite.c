/* finite.c - a test model whose events run out, with no done() test: every LP starts a
 * token that hops to random LPs, each hop at least the lookahead later, and dies after a
 * number of hops drawn when it starts; the run has nothing left to do once the last token
 * dies (TWOS, SimPy and ROSS-style models end this way). For --end inf without done()
 * (issue 37, item 6), on every engine and across ranks; its metric "left" (the hops a token
 * has left, at each) has bins that widen as time passes under --end inf (item 5). */
#include "kairos.h"

struct finite_lp {
    uint64_t seen, hash;
};

struct token {
    uint64_t id, left;
};

static const struct kr_param finite_params[] = {
    { "hops", KR_PARAM_INT, "40", "mean hops of a token before it dies", 1, 1e9 },
    { 0 },
};

static void hop(kr_lp me, kr_time now, struct token tk)
{
    (void)me;
    kr_lp dest = kr_random_u64() % kr_lp_count();
    kr_schedule(dest, now + 1 + kr_expo(1), 0, &tk, sizeof tk);
}

static void finite_init(kr_lp me)
{
    struct finite_lp *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    struct token tk = { me, 1 + kr_poisson((double)kr_param_int("hops", 40)) };
    hop(me, 0, tk);
}

static void finite_event(kr_lp me, kr_time now, unsigned type, const void *payload,
                         size_t size, void *state)
{
    (void)type, (void)size;
    struct finite_lp *s = state;
    struct token tk = *(const struct token *)payload;
    s->seen++;
    kr_metric("left", (double)tk.left);
    s->hash = (s->hash ^ tk.id) * 0x100000001b3ull + (uint64_t)(now * 1e6);
    if (--tk.left == 0) {
        kr_printf("token %llu died at LP %llu at %.9f\n", (unsigned long long)tk.id,
                  (unsigned long long)me, now);
        return;
    }
    hop(me, now, tk);
}

static void finite_finish(kr_lp me, void *state)
{
    struct finite_lp *s = state;
    kr_printf("LP %llu saw %llu tokens, hash %llx\n", (unsigned long long)me,
              (unsigned long long)s->seen, (unsigned long long)s->hash);
}

/* (built a second time with BAD_TYPE_NAMES: a name the loader must refuse, bad_input.py) */
#ifdef BAD_TYPE_NAMES
static const char *const finite_types[] = { "HOP", "a \"quoted\" name", NULL };
#else
static const char *const finite_types[] = { "HOP", NULL };
#endif

static const char *const finite_metrics[] = { "left", NULL };

static const struct kr_model finite_model = {
    .name = "finite", .init = finite_init, .event = finite_event, .finish = finite_finish,
    .lookahead = 1, .params = finite_params, .type_names = finite_types,
    .metrics = finite_metrics,
};

KR_MODEL_EXPORT(finite, finite_model)
