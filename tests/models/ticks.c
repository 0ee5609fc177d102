/* ticks.c - a synchronous test model: every LP has an event at every whole time unit, so
 * thousands of events share each timestamp (as in cellular automata such as Life). Each
 * tick an LP also sends a zero-delay message to a neighbour. Exercises commitment when far
 * more events share one timestamp than a thread may hold uncommitted. */
#include <string.h>
#include "kairos.h"

struct tick_state { uint64_t ticks, msgs, sum; };

static const struct kr_param ticks_params[] = {
    { "payload", KR_PARAM_INT, "8", "bytes of payload in each message", 8, 1024 },
    { 0 },
};

static void ticks_init(kr_lp me)
{
    struct tick_state *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    kr_schedule(me, 1.0, 0, NULL, 0);
}

static void ticks_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                        void *state)
{
    struct tick_state *s = state;
    if (type == 1) {
        const unsigned char *p = payload;
        s->msgs++;
        for (size_t i = 0; i < size; i++) s->sum = s->sum * 31 + p[i];
        return;
    }
    s->ticks++;
    unsigned char buf[KR_PAYLOAD_MAX];
    size_t n = (size_t)kr_param_int("payload", 8);
    for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(me * 7 + s->ticks + i);
    kr_schedule((me + 1 + kr_random_u64() % 7) % kr_lp_count(), now, 1, buf, n);
    kr_schedule(me, now + 1.0, 0, NULL, 0);
}

static const struct kr_model ticks_model = {
    .name = "ticks", .init = ticks_init, .event = ticks_event, .params = ticks_params,
};

KR_MODEL_EXPORT(ticks, ticks_model)
