/* qcost.c - what a query costs (bench/query_bench.py): every LP keeps a value and, at
 * exponential intervals, needs another LP's. libqcost.so asks for it (kr_query: one event
 * per step); libqcost_events.so (QCOST_EVENTS: no query handler, so nothing of queries
 * slows its run) sends a request, and the other LP answers with an event (three events per
 * step, the answer two links later: the usual way without queries). -P remote sets the share
 * of steps that need a random LP's value rather than the next LP's, -P work the busy-work
 * per event in loop iterations.
 *
 *   kairos run build/libqcost.so --lps 1024 --end 100 */
#include <stdint.h>
#include <string.h>
#include "kairos.h"

enum { STEP, REQUEST, ANSWER };

struct lpstate {
    uint64_t value, steps;
};

static const struct kr_param params[] = {
    { "remote", KR_PARAM_DOUBLE, "0.5", "share of steps that need a random LP's value", 0, 1 },
    { "link", KR_PARAM_DOUBLE, "0.1", "delay of a message (the lookahead)", 1e-6, 1e9 },
    { "work", KR_PARAM_INT, "200", "busy-work per event (loop iterations)", 0, 1e9 },
    { 0 },
};

static void spin(int64_t n, uint64_t *v)
{
    uint64_t x = *v;
    for (int64_t i = 0; i < n; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    *v = x;
}

static kr_lp neighbour(kr_lp me)
{
    double remote = kr_param_double("remote", 0.5);
    kr_lp n = kr_lp_count();
    return kr_random() < remote ? (kr_lp)(kr_random_u64() % n) : (me + 1) % n;
}

static __attribute__((unused)) size_t answer(kr_lp me, kr_time now, const void *q, size_t size,
                                             const void *state, void *ans, size_t cap)
{
    (void)me, (void)now, (void)q, (void)size;
    const struct lpstate *s = state;
    if (cap < sizeof s->value) return 0;
    memcpy(ans, &s->value, sizeof s->value);
    return sizeof s->value;
}

static void init(kr_lp me)
{
    struct lpstate *s = kr_calloc(1, sizeof *s);
    s->value = me;
    kr_set_state(s);
    kr_set_lookahead(kr_param_double("link", 0.1));
    kr_schedule(me, kr_expo(1), STEP, NULL, 0);
}

static void use(kr_lp me, kr_time now, struct lpstate *s, uint64_t v)
{
    s->value = s->value * 31 + v;
    s->steps++;
    kr_schedule(me, now + kr_expo(1), STEP, NULL, 0);
}

static void event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                  void *state)
{
    (void)size;
    struct lpstate *s = state;
    spin(kr_param_int("work", 200), &s->value);
    double link = kr_param_double("link", 0.1);
    uint64_t v = 0;
#ifndef QCOST_EVENTS
    if (type == STEP) {
        kr_query(neighbour(me), NULL, 0, &v, sizeof v);
        use(me, now, s, v);
        return;
    }
#endif
    if (type == STEP) {
        kr_lp from = me;
        kr_schedule(neighbour(me), now + link, REQUEST, &from, sizeof from);
    } else if (type == REQUEST) {
        kr_lp to;
        memcpy(&to, payload, sizeof to);
        kr_schedule(to, now + link, ANSWER, &s->value, sizeof s->value);
    } else {
        memcpy(&v, payload, sizeof v);
        use(me, now, s, v);
    }
}

static const struct kr_model model = {
    .name = "qcost",
    .init = init,
    .event = event,
    .params = params,
#ifndef QCOST_EVENTS
    .query = answer,
#endif
};

KR_MODEL_EXPORT(qcost, model)
