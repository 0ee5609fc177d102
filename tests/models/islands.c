/* islands.c - a test model whose LPs talk mostly within small groups (islands of 8 LPs, so a
 * worker thread's block of LPs seldom hears from the others) and now and then to any LP, with
 * zero-delay sends among the delayed ones and no lookahead. Worker threads stay quiet for
 * long stretches and then talk at the same virtual time: what the optimistic engine's quiet
 * records (safe events without lookahead) must get right. State on the model heap, and
 * printed output, so a wrong safe event shows in the digest or the output.
 * With -P lookahead=L, every hop takes at least L, the LPs of the first half declare 2L and
 * the others L: the run's lookahead is L, which only the second half's init tells (across
 * ranks, the ranks of the first half must learn it from the others). */
#include <string.h>
#include "kairos.h"

enum { HOP };

struct island_lp {
    uint64_t hops, far, hash;    /* far: hops sent off the island */
    uint64_t *trail;             /* the last TRAIL payloads seen, on the model heap */
};
#define TRAIL 16

static const struct kr_param islands_params[] = {
    { "far", KR_PARAM_DOUBLE, "0.002", "probability that a hop goes to any LP", 0, 1 },
    { "zero", KR_PARAM_DOUBLE, "0.3", "probability that a hop takes no virtual time", 0, 1 },
    { "lookahead", KR_PARAM_DOUBLE, "0", "> 0: every hop takes at least this long (LPs of "
      "the first half declare twice as much)", 0, 0 },
    { 0 },
};

/* One hop on; true if it left the island. */
static bool hop(kr_lp me, kr_time now, uint64_t v)
{
    kr_lp dest;
    if (kr_random() < kr_param_double("far", 0.002)) dest = kr_random_u64() % kr_lp_count();
    else dest = (me & ~(kr_lp)7) | (kr_random_u64() % 8);
    if (dest >= kr_lp_count()) dest = me;
    double delay = kr_random() < kr_param_double("zero", 0.3) ? 0.0 : kr_expo(1.0);
    kr_schedule(dest, now + kr_param_double("lookahead", 0) + delay, HOP, &v, sizeof v);
    return dest / 8 != me / 8;
}

static void islands_init(kr_lp me)
{
    struct island_lp *s = kr_calloc(1, sizeof *s);
    s->trail = kr_calloc(TRAIL, sizeof *s->trail);
    kr_set_state(s);
    double la = kr_param_double("lookahead", 0);
    if (la > 0) kr_set_lookahead(me < kr_lp_count() / 2 ? 2 * la : la);
    hop(me, 0, me);
    hop(me, 0, me * 7 + 1);
}

static void islands_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                          void *state)
{
    (void)type;
    struct island_lp *s = state;
    uint64_t v;
    memcpy(&v, payload, size < sizeof v ? size : sizeof v);
    s->trail[s->hops % TRAIL] = v;
    s->hops++;
    s->hash = (s->hash ^ v) * 0x100000001b3ull + (uint64_t)(now * 1024);
    if (s->hops % 97 == 0)
        kr_printf("LP %llu hop %llu at %.6f hash %llx\n", (unsigned long long)me,
                  (unsigned long long)s->hops, now, (unsigned long long)s->hash);
    s->far += hop(me, now, v * 31 + me);
}

static void islands_finish(kr_lp me, void *state)
{
    struct island_lp *s = state;
    uint64_t t = 0;
    for (int i = 0; i < TRAIL; i++) t = t * 33 + s->trail[i];
    if (me % 8 == 0)
        kr_printf("LP %llu: %llu hops, %llu sent afar, hash %llx, trail %llx\n",
                  (unsigned long long)me, (unsigned long long)s->hops,
                  (unsigned long long)s->far, (unsigned long long)s->hash,
                  (unsigned long long)t);
}

static const struct kr_model islands_model = {
    .name = "islands", .init = islands_init, .event = islands_event,
    .finish = islands_finish, .params = islands_params,
};

KR_MODEL_EXPORT(islands, islands_model)
