/* typeorder.c - a test model of KR_MODEL_TYPE_ORDER: LPs send events of random types 0-2 to
 * random LPs at whole-number times, so an LP gets several at once, and the handler fails the
 * run (kr_error) if, at one time, a type comes after a higher one. Built twice: with the
 * flag (libtypeorder.so, which must pass on every engine) and without it
 * (libtypeorder_off.so, -DTYPEORDER_OFF, whose events arrive in sender order and must trip
 * the check: so the check can fail). Each LP prints what it saw at the end. */
#include "kairos.h"

struct lpst {
    kr_time last;
    unsigned last_type;
    uint64_t events, hash;
};

static void send(kr_lp me, kr_time now)
{
    unsigned type = (unsigned)(kr_random_u64() % 3);
    uint64_t v = kr_random_u64();
    (void)me;
    kr_schedule(kr_random_u64() % kr_lp_count(), now + 1 + (double)(kr_random_u64() % 2), type,
                &v, sizeof v);
}

static void typeorder_init(kr_lp me)
{
    struct lpst *s = kr_calloc(1, sizeof *s);
    s->last = -1;
    kr_set_state(s);
    for (int i = 0; i < 3; i++) send(me, 0);
}

static void typeorder_event(kr_lp me, kr_time now, unsigned type, const void *payload,
                            size_t size, void *state)
{
    struct lpst *s = state;
    const uint64_t *v = payload;
    (void)size;
    if (now == s->last && type < s->last_type)
        kr_error("LP %llu at %g: type %u after type %u", (unsigned long long)me, now, type,
                 s->last_type);
    s->last = now;
    s->last_type = type;
    s->events++;
    s->hash = (s->hash ^ *v ^ type) * 0x100000001b3ull;
    send(me, now);
}

static void typeorder_finish(kr_lp me, void *state)
{
    struct lpst *s = state;
    kr_printf("LP %llu: %llu events, hash %016llx\n", (unsigned long long)me,
              (unsigned long long)s->events, (unsigned long long)s->hash);
}

static const struct kr_model typeorder_model = {
    .name = "typeorder", .init = typeorder_init, .event = typeorder_event,
    .finish = typeorder_finish, .lookahead = 1,
#ifndef TYPEORDER_OFF
    .flags = KR_MODEL_TYPE_ORDER,
#endif
};

KR_MODEL_EXPORT(typeorder, typeorder_model)
