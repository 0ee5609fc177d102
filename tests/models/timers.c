/* timers.c - a test model of timers (kr_timer_set, issue 37 item 2): service desks whose
 * waiting customers give up (renege) when a timer set at their arrival fires first, and
 * whose service cancels that timer; served customers go on to another desk. Each desk also
 * keeps an idle alarm that every arrival moves later (cancel and set again), and now and
 * then a timer at the current time that it cancels at once. The model checks the timers'
 * promises itself (kr_error if one is broken): a cancel of a waiting customer's timer
 * succeeds, a renege fires only for a customer still waiting, a fired timer is no longer
 * pending, a zeroed kr_timer is none. It marks its writes (--state chunk). Model metrics
 * (issue 37 item 5): "wait", each served customer's time in the queue, and "queue", the
 * queue's length at each arrival; with -P dump=1 it also prints each value it records,
 * for a check of the reduction, and at the end its own tallies (kr_tally, kr_timeavg,
 * kr_histogram). */
#include <string.h>
#include "kairos.h"

#define QCAP 24

enum { ARRIVE, SERVED, RENEGE, IDLE, NOW };

struct cust {
    uint64_t id;
    kr_time arrived;
    kr_timer renege;
};

struct desk {
    struct cust q[QCAP];
    unsigned head, n;
    bool busy;
    kr_timer idle, now;
    uint64_t served, reneged, lost, idles, nows_cancelled, hash, next_id;
    struct kr_tally waits;
    struct kr_timeavg queue;
    struct kr_histogram wait_hist;
};

struct who {
    uint64_t id;
};

static const struct kr_param timers_params[] = {
    { "patience", KR_PARAM_DOUBLE, "4", "mean time a customer waits before giving up", 0.01,
      1e9 },
    { "service", KR_PARAM_DOUBLE, "1", "mean service time", 0.01, 1e9 },
    { "dump", KR_PARAM_INT, "0", "print each metric value recorded", 0, 1 },
    { "bad", KR_PARAM_INT, "0", "misuse kr_metric: 1 an undeclared name, 2 NaN, 3 in init",
      0, 3 },
    { "zero", KR_PARAM_INT, "1", "also set timers at the current time (not under --sync "
      "conservative, where every event the LP sends, to itself too, is at least the lookahead "
      "later)", 0, 1 },
    { 0 },
};

static void metric(const char *name, kr_time now, double v)
{
    kr_metric(name, v);
    if (kr_param_int("dump", 0)) kr_printf("metric %s %.17g %.17g\n", name, now, v);
}

/* -P bad=N: a misuse of kr_metric, which must be a model error naming it. */
static void misuse(int bad)
{
    if (bad == 1) kr_metric("nope", 1);
    if (bad == 2) kr_metric("wait", 0.0 / 0.0);
    if (bad == 3) kr_metric("wait", 1);
}

static void mix(struct desk *s, uint64_t x)
{
    s->hash = (s->hash ^ x) * 0x100000001b3ull;
}

/* A customer arrives at `dest` (at least the lookahead from now if it is another desk). */
static void send_customer(kr_lp me, kr_lp dest, kr_time at, uint64_t id)
{
    struct who w = { id };
    (void)me;
    kr_schedule(dest, at, ARRIVE, &w, sizeof w);
}

static void start_service(kr_lp me, kr_time now, struct desk *s)
{
    struct cust *c = &s->q[s->head];
    if (!kr_timer_pending(&c->renege))
        kr_error("customer %llu is waiting, but its renege timer is not pending",
                 (unsigned long long)c->id);
    kr_timer copy = c->renege; /* (a copy names the same timer) */
    if (!kr_timer_cancel(&copy) || copy.id != 0)
        kr_error("cancelling the renege timer of waiting customer %llu failed",
                 (unsigned long long)c->id);
    if (kr_timer_pending(&c->renege) || kr_timer_cancel(&c->renege))
        kr_error("customer %llu's timer is still pending after its cancel",
                 (unsigned long long)c->id);
    s->busy = true;
    metric("wait", now, now - c->arrived);
    kr_tally_add(&s->waits, now - c->arrived);
    kr_histogram_add(&s->wait_hist, now - c->arrived);
    struct who w = { c->id };
    kr_schedule(me, now + 1 + kr_expo(kr_param_double("service", 1)), SERVED, &w, sizeof w);
}

static void timers_init(kr_lp me)
{
    struct desk *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    if (kr_param_int("bad", 0) == 3) misuse(3);
    kr_histogram_init(&s->wait_hist, 0, 10, 20);
    kr_timeavg_set(&s->queue, kr_now(), 0);
    kr_timer zero = { 0, 0 };
    if (kr_timer_pending(&zero) || kr_timer_cancel(&zero))
        kr_error("a zeroed kr_timer is not a timer");
    for (int k = 0; k < 3; k++)
        send_customer(me, me, kr_expo(1), (me << 32) + ++s->next_id);
    s->idle = kr_timer_set(6, IDLE, NULL, 0);
}

static void arrive(kr_lp me, kr_time now, struct desk *s, uint64_t id)
{
    mix(s, id);
    if (kr_param_int("bad", 0) && now > 5) misuse((int)kr_param_int("bad", 0));
    metric("queue", now, s->n);
    kr_timer_cancel(&s->idle); /* (true, or false if it just fired: both are fine) */
    s->idle = kr_timer_set(now + 6, IDLE, NULL, 0);
    if (s->n == QCAP) {
        s->lost++;
    } else {
        struct cust *c = &s->q[(s->head + s->n++) % QCAP];
        c->id = id;
        c->arrived = now;
        struct who w = { id };
        c->renege = kr_timer_set(now + 1 + kr_expo(kr_param_double("patience", 4)), RENEGE,
                                 &w, sizeof w);
        if (c->renege.id == 0 || c->renege.at < now) kr_error("kr_timer_set returned no timer");
        if (!s->busy) start_service(me, now, s);
        kr_timeavg_set(&s->queue, now, s->n);
    }
    /* (a timer at this very time, cancelled at once or by NOW) */
    if (kr_param_int("zero", 1) && kr_random() < 0.1) {
        s->now = kr_timer_set(now, NOW, NULL, 0);
        if (kr_random() < 0.5 && kr_timer_cancel(&s->now)) s->nows_cancelled++;
    }
    /* (new customers keep coming: each arrival brings one more, sometimes) */
    if (kr_random() < 0.75)
        send_customer(me, (kr_lp)(kr_random_u64() % kr_lp_count()), now + 1 + kr_expo(2),
                      (me << 32) + ++s->next_id);
}

static void served(kr_lp me, kr_time now, struct desk *s, uint64_t id)
{
    struct cust *c = &s->q[s->head];
    if (!s->busy || !s->n || c->id != id) kr_error("a service ended that did not start");
    mix(s, id ^ (uint64_t)(now * 1e6));
    s->served++;
    s->head = (s->head + 1) % QCAP;
    s->n--;
    s->busy = false;
    kr_timeavg_set(&s->queue, now, s->n);
    if (kr_random() < 0.35)
        send_customer(me, (kr_lp)(kr_random_u64() % kr_lp_count()), now + 1 + kr_expo(1), id);
    if (s->n) start_service(me, now, s);
}

/* A customer's renege timer fired: it must still be waiting, not in service. */
static void renege(kr_time now, struct desk *s, uint64_t id)
{
    unsigned i = 0;
    while (i < s->n && s->q[(s->head + i) % QCAP].id != id) i++;
    if (i == s->n || (i == 0 && s->busy))
        kr_error("the renege timer of customer %llu fired, but it is not waiting (it was "
                 "cancelled when its service started)", (unsigned long long)id);
    struct cust *c = &s->q[(s->head + i) % QCAP];
    if (kr_timer_pending(&c->renege)) kr_error("a timer that fired is still pending");
    if (kr_timer_cancel(&c->renege)) kr_error("a timer that fired could be cancelled");
    for (unsigned k = i; k + 1 < s->n; k++)
        s->q[(s->head + k) % QCAP] = s->q[(s->head + k + 1) % QCAP];
    s->n--;
    kr_timeavg_set(&s->queue, now, s->n);
    s->reneged++;
    mix(s, ~id ^ (uint64_t)(now * 1e6));
}

static void one(kr_lp me, kr_time now, struct desk *s, unsigned type, const void *payload)
{
    uint64_t id = payload ? ((const struct who *)payload)->id : 0;
    switch (type) {
    case ARRIVE: arrive(me, now, s, id); break;
    case SERVED: served(me, now, s, id); break;
    case RENEGE: renege(now, s, id); break;
    case IDLE:
        s->idles++;
        kr_printf("desk %llu idle at %.6f\n", (unsigned long long)me, now);
        break;
    case NOW:
        if (kr_timer_pending(&s->now)) kr_error("the NOW timer runs but is still pending");
        mix(s, 0x4e4f57);
        break;
    default: kr_error("unknown event type %u", type);
    }
}

/* (with KR_MODEL_BUNDLES, TIMERS_BUNDLES: every member of the bundle, the cancelled timers'
 * left out; else the one event) */
static void timers_event(kr_lp me, kr_time now, unsigned type, const void *payload,
                         size_t size, void *state)
{
    (void)size;
    struct desk *s = state;
    kr_touch(s, sizeof *s);
    unsigned n = kr_bundle_count();
    for (unsigned k = 0; k < n; k++) {
        kr_bundle_get(k, &type, &payload, NULL);
        one(me, now, s, type, payload);
    }
}

static void timers_finish(kr_lp me, void *state)
{
    struct desk *s = state;
    kr_printf("desk %llu: served %llu reneged %llu lost %llu idle %llu now-cancelled %llu "
              "waiting %u hash %016llx\n", (unsigned long long)me,
              (unsigned long long)s->served, (unsigned long long)s->reneged,
              (unsigned long long)s->lost, (unsigned long long)s->idles,
              (unsigned long long)s->nows_cancelled, s->n, (unsigned long long)s->hash);
    if (kr_param_int("dump", 0))
        kr_printf("tally %llu n %llu mean %.17g var %.17g min %.17g max %.17g median %.17g "
                  "queue %.17g\n", (unsigned long long)me, (unsigned long long)s->waits.n,
                  s->waits.mean, kr_tally_var(&s->waits), s->waits.min, s->waits.max,
                  kr_histogram_quantile(&s->wait_hist, 0.5),
                  kr_timeavg_mean(&s->queue, kr_end_time()));
}

static const char *const timers_types[] = { "ARRIVE", "SERVED", "RENEGE", "IDLE", "NOW", NULL };
static const char *const timers_metrics[] = { "wait", "queue", NULL };

static const struct kr_model timers_model = {
    .name = "timers", .init = timers_init, .event = timers_event, .finish = timers_finish,
    .lookahead = 1, .params = timers_params, .type_names = timers_types,
    .metrics = timers_metrics,
#ifdef TIMERS_BUNDLES /* (same-time bundles: tests/e2e/timers.py) */
    .flags = KR_MODEL_MARKS_WRITES | KR_MODEL_BUNDLES,
#else
    .flags = KR_MODEL_MARKS_WRITES,
#endif
};

KR_MODEL_EXPORT(timers, timers_model)
