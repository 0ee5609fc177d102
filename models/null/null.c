/* null.c - the null model of paper 003 (section 5.1): `modules` LPs each run `events`
 * events of no work, one every `interval` of virtual time, each lasting `duration` (an
 * expanded event, kr_schedule_span). All modules start at time 0, so at every interval
 * `modules` events overlap: the run measures what an engine spends per event, nothing else.
 * Defaults are the paper's: 110 modules x 50 000 events of 1 s every 20 s, 5.5 M events.
 * LPs beyond `modules` stay idle. Ends by done() once every module has run its events:
 *
 *   kairos run null --lps 110 --end inf --sync conservative */
#include "kairos.h"

struct module {
    uint64_t ran;
};

static const struct kr_param null_params[] = {
    { "modules", KR_PARAM_INT, "110", "LPs that run events (at most --lps; the rest idle)", 0, 0 },
    { "events", KR_PARAM_INT, "50000", "events per module", 0, 0 },
    { "duration", KR_PARAM_DOUBLE, "1", "virtual time each event lasts", 0, 0 },
    { "interval", KR_PARAM_DOUBLE, "20", "virtual time between a module's events", 0, 0 },
    { 0 },
};

struct null_params {
    uint64_t modules, events;
    double duration, interval;
};

static const struct null_params *params(void)
{
    static __thread struct null_params p; /* (a cache of constants, the same for all LPs) */
    static __thread int loaded;
    if (loaded) return &p;
    int64_t m = kr_param_int("modules", 110), e = kr_param_int("events", 50000);
    p.duration = kr_param_double("duration", 1);
    p.interval = kr_param_double("interval", 20);
    if (m < 1 || (uint64_t)m > kr_lp_count())
        kr_error("modules must be 1..%llu (--lps), got %lld", (unsigned long long)kr_lp_count(),
                 (long long)m);
    if (e < 0) kr_error("events must be >= 0, got %lld", (long long)e);
    if (!(p.duration >= 0 && p.interval > 0 && p.interval >= p.duration))
        kr_error("need 0 <= duration <= interval and interval > 0 (an event schedules the "
                 "module's next one at its own end or later), got duration %g, interval %g",
                 p.duration, p.interval);
    p.modules = (uint64_t)m;
    p.events = (uint64_t)e;
    loaded = 1;
    return &p;
}

static void null_init(kr_lp me)
{
    const struct null_params *p = params();
    struct module *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    if (me < p->modules && p->events > 0) kr_schedule_span(me, 0, p->duration, 0, NULL, 0);
}

static void null_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                       void *state)
{
    (void)type;
    (void)payload;
    (void)size;
    const struct null_params *p = params();
    struct module *s = state;
    kr_touch(&s->ran, sizeof s->ran);
    if (++s->ran < p->events) kr_schedule_span(me, now + p->interval, p->duration, 0, NULL, 0);
}

static bool null_done(kr_lp me, const void *state)
{
    const struct null_params *p = params();
    const struct module *s = state;
    return me >= p->modules || s->ran >= p->events;
}

static const struct kr_model null_model = {
    .name = "null",
    .flags = KR_MODEL_MARKS_WRITES,
    .init = null_init,
    .event = null_event,
    .done = null_done,
    .params = null_params,
};

KR_MODEL_EXPORT(null, null_model)
