/* toolkit.c - what the modeller's toolkit costs (bench/toolkit_cost.py): every LP runs a
 * chain of events to itself, and each event does `calls` of one operation (-P op): 0
 * nothing, 1 a timer set and cancelled at once, 2 a timer set that later runs (a chain of
 * timers: the event is the timer), 3 kr_metric, 4 kr_tally_add. The difference to op=0,
 * per call, is the operation's cost.
 *
 *   kairos run build/libtoolkit.so --lps 1024 --end 1000 -P op=1 -P calls=4 */
#include <stdint.h>
#include "kairos.h"

struct lpstate {
    kr_timer t;
    struct kr_tally tally;
    uint64_t n;
};

static const struct kr_param params[] = {
    { "op", KR_PARAM_INT, "0", "0 none, 1 timer set+cancel, 2 timer chain, 3 kr_metric, "
      "4 kr_tally_add", 0, 4 },
    { "calls", KR_PARAM_INT, "1", "operations per event", 0, 1000 },
    { 0 },
};

static void next(kr_lp me, kr_time now, struct lpstate *s)
{
    kr_time at = now + 0.5 + kr_random();
    if (kr_param_int("op", 0) == 2) s->t = kr_timer_set(at, 0, NULL, 0);
    else kr_schedule(me, at, 0, NULL, 0);
}

static void toolkit_init(kr_lp me)
{
    struct lpstate *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    next(me, 0, s);
}

static void toolkit_event(kr_lp me, kr_time now, unsigned type, const void *payload,
                          size_t size, void *state)
{
    (void)type, (void)payload, (void)size;
    struct lpstate *s = state;
    int64_t op = kr_param_int("op", 0), calls = kr_param_int("calls", 1);
    for (int64_t i = 0; i < calls; i++) {
        if (op == 1) {
            kr_timer t = kr_timer_set(now + 1, 0, NULL, 0);
            kr_timer_cancel(&t);
        } else if (op == 3) {
            kr_metric("x", (double)(s->n & 255));
        } else if (op == 4) {
            kr_tally_add(&s->tally, (double)(s->n & 255));
        }
    }
    s->n++;
    next(me, now, s);
}

static const char *const metrics[] = { "x", NULL };
static const struct kr_model toolkit_model = {
    .name = "toolkit", .init = toolkit_init, .event = toolkit_event, .params = params,
    .metrics = metrics,
};
KR_MODEL_EXPORT(toolkit, toolkit_model)
