/* spans.c - a test model of expanded events beside a lookahead (issue 39): every event
 * passes one token on. Most are sent with kr_schedule_span and a span the sender draws (0
 * one time in five, else exponential, mean -P span_mean, often longer than the lookahead),
 * the rest with kr_schedule, lasting the lookahead (-P la, declared by run_lookahead). An
 * event sends only at or after its end: to itself from its end on, to another LP from its
 * end or its time plus the lookahead, whichever is later, sometimes exactly there. So the
 * conservative engine's windows scheme may count on the spans (they widen its clocks) and
 * Horizon runs it too. -P violate=T: LP 1's first span event at or after time T sends to
 * itself inside its own span, which the conservative engine must refuse (and the others,
 * which do not read spans, run). */
#include <string.h>
#include "kairos.h"

enum { SPAN_EV, PLAIN_EV };

static const struct kr_param spans_params[] = {
    { "la", KR_PARAM_DOUBLE, "0.5", "the lookahead (every send to another LP is this later)",
      0, 0 },
    { "span_mean", KR_PARAM_DOUBLE, "2", "mean span of the events sent with a span", 0, 0 },
    { "violate", KR_PARAM_DOUBLE, "-1", "misuse: LP 1 sends inside its span from this time "
      "on (< 0: never)", 0, 0 },
    { 0 },
};

struct lp_state {
    uint64_t events, sum;
    int violated;
};

static kr_time spans_lookahead(void)
{
    return kr_param_double("la", 0.5);
}

/* One token to `to` at `t`: with a span (drawn here, carried in the payload) or without. */
static void pass(kr_lp to, kr_time t)
{
    if (kr_random() < 0.3) {
        kr_schedule(to, t, PLAIN_EV, NULL, 0);
        return;
    }
    double d = kr_random() < 0.2 ? 0 : kr_expo(kr_param_double("span_mean", 2));
    kr_schedule_span(to, t, d, SPAN_EV, &d, sizeof d);
}

static void spans_init(kr_lp me)
{
    struct lp_state *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    pass(me, kr_expo(1.0));
}

static void spans_event(kr_lp me, kr_time now, unsigned type, const void *payload,
                        size_t size, void *state)
{
    (void)size;
    struct lp_state *s = state;
    double la = kr_param_double("la", 0.5), d = la;
    if (type == SPAN_EV) memcpy(&d, payload, sizeof d);
    kr_time end = now + d;
    s->events++;
    s->sum = s->sum * 31 + (uint64_t)(now * 1e6) + type;
    if (s->events % 50 == 0)
        kr_printf("LP %llu at %.6f: %llu events, sum %llx\n", (unsigned long long)me, now,
                  (unsigned long long)s->events, (unsigned long long)s->sum);
    double v = kr_param_double("violate", -1);
    if (v >= 0 && me == 1 && type == SPAN_EV && d > 0 && now >= v && !s->violated) {
        s->violated = 1;
        pass(me, now + d / 2); /* (inside its span: refused by the conservative engine) */
        return;
    }
    kr_lp to = kr_random() < 0.25 ? me : (kr_lp)(kr_random_u64() % kr_lp_count());
    kr_time at = to == me || end > now + la ? end : now + la;
    pass(to, kr_random() < 0.2 ? at : at + kr_expo(0.5));
}

static void spans_finish(kr_lp me, void *state)
{
    const struct lp_state *s = state;
    kr_printf("LP %llu: %llu events, sum %llx\n", (unsigned long long)me,
              (unsigned long long)s->events, (unsigned long long)s->sum);
}

static const struct kr_model spans_model = {
    .name = "spans",
    .init = spans_init,
    .event = spans_event,
    .finish = spans_finish,
    .params = spans_params,
    .run_lookahead = spans_lookahead,
};

KR_MODEL_EXPORT(spans, spans_model)
