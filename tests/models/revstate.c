/* revstate.c - a test model with reverse computation (struct kr_model.reverse, --state
 * reverse): each LP holds a large table (-P kb=16: 16 KiB of counters) and a running sum;
 * an event adds a random amount to one slot, keeps the slot's old value and which slot in
 * its reverse area (kr_reverse_area), prints now and then, and passes a token on. Its
 * reverse handler puts both back - the case reverse computation is for: a large state of
 * which each event changes a few words. Misuses, for the tests: -P bad=1 forgets the sum
 * in reverse (--check must name the reverse handler), bad=2 schedules from reverse, bad=3
 * sets a timer (refused under --state reverse); built with REVSTATE_NO_REVERSE it declares
 * reverse_bytes without a reverse handler, which the loader refuses. */
#include <string.h>
#include "kairos.h"

static const struct kr_param revstate_params[] = {
    { "kb", KR_PARAM_INT, "16", "KiB of counters in each LP's table", 1, 65536 },
    { "bad", KR_PARAM_INT, "0", "misuse: 1 wrong reverse, 2 a send in reverse, 3 a timer", 0,
      3 },
    { 0 },
};

struct table {
    uint64_t sum;
    uint64_t events;
    size_t n;
    uint64_t slot[];
};

struct saved {        /* the reverse area */
    uint64_t old;     /* the slot's value before the event */
    uint32_t at;      /* which slot */
};

static void pass_on(kr_lp me, kr_time now)
{
    kr_lp to = (me + 1 + kr_random_u64() % 3) % kr_lp_count();
    kr_schedule(to, now + 0.1 + kr_expo(1.0), 0, NULL, 0);
}

static void revstate_init(kr_lp me)
{
    size_t n = (size_t)kr_param_int("kb", 16) * 1024 / sizeof(uint64_t);
    struct table *t = kr_calloc(1, sizeof *t + n * sizeof t->slot[0]);
    t->n = n;
    kr_set_state(t);
    pass_on(me, 0);
}

static void revstate_event(kr_lp me, kr_time now, unsigned type, const void *payload,
                           size_t size, void *state)
{
    (void)type, (void)payload, (void)size;
    struct table *t = state;
    struct saved *s = kr_reverse_area();
    s->at = (uint32_t)(kr_random_u64() % t->n);
    s->old = t->slot[s->at];
    uint64_t add = 1 + kr_random_u64() % 100;
    t->slot[s->at] += add;
    t->sum += add;
    t->events++;
    if (t->events % 64 == 0)
        kr_printf("LP %llu at %.6f: sum %llu\n", (unsigned long long)me, now,
                  (unsigned long long)t->sum);
    if (kr_param_int("bad", 0) == 3) kr_timer_set(now + 1, 1, NULL, 0);
    pass_on(me, now);
}

static __attribute__((unused)) void revstate_reverse(kr_lp me, kr_time now, unsigned type, const void *payload,
                             size_t size, void *state, void *saved)
{
    (void)me, (void)type, (void)payload, (void)size;
    struct table *t = state;
    const struct saved *s = saved;
    if (kr_param_int("bad", 0) != 1) t->sum -= t->slot[s->at] - s->old;
    t->slot[s->at] = s->old;
    t->events--;
    if (kr_param_int("bad", 0) == 2) kr_schedule(me, now + 1, 0, NULL, 0);
}

static void revstate_finish(kr_lp me, void *state)
{
    const struct table *t = state;
    uint64_t check = 0;
    for (size_t i = 0; i < t->n; i++) check += t->slot[i];
    kr_printf("LP %llu: %llu events, sum %llu%s\n", (unsigned long long)me,
              (unsigned long long)t->events, (unsigned long long)t->sum,
              check == t->sum ? "" : " (the table does not add up)");
}

static const struct kr_model revstate_model = {
    .name = "revstate",
    .init = revstate_init,
    .event = revstate_event,
    .finish = revstate_finish,
    .params = revstate_params,
#ifndef REVSTATE_NO_REVERSE
    .reverse = revstate_reverse,
#endif
    .reverse_bytes = sizeof(struct saved),
};

KR_MODEL_EXPORT(revstate, revstate_model)
