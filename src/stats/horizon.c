/* horizon.c - see horizon.h. The scheduler's counters are all on thread 0's line; the
 * events each thread ran are its own `processed`. */
#include "horizon.h"

static bool shown(const struct kr__run *r)
{
    return r->cfg->sync == KR_SYNC_CONSERVATIVE;
}

static double mean_in_flight(const struct kr__counters *c)
{
    return c->cons_offloads ? (double)c->cons_inflight_sum / (double)c->cons_offloads : 0;
}

void kr__horizon_summary(const struct kr__run *r, FILE *f)
{
    if (!shown(r)) return;
    const struct kr__counters *c = &r->counters[0];
    fprintf(f, "  conservative:     %u worker%s + scheduler, %s handoff, %s barriers, offload %s; "
            "%.2f events in flight on average; scheduler ran %llu itself, held %llu times at "
            "the barrier and %llu by a busy LP\n", r->nthreads - 1, r->nthreads == 2 ? "" : "s",
            r->cfg->handoff_pull ? "pull" : "push", r->cfg->barrier_events ? "event" : "event-free",
            r->cfg->offload_always ? "always" : "auto", mean_in_flight(c), (unsigned long long)c->cons_sched_ran,
            (unsigned long long)c->cons_barrier_waits, (unsigned long long)c->cons_lp_waits);
}

void kr__horizon_json(const struct kr__run *r, FILE *f)
{
    if (!shown(r)) return;
    const struct kr__counters *c = &r->counters[0];
    fprintf(f, "  \"conservative\": {\"workers\": %u, \"handoff\": \"%s\", \"barriers\": \"%s\", "
            "\"scheduler_works\": %s, \"offload\": \"%s\", \"offload_us\": %.17g, \"lookahead\": %.17g, \"offloaded\": %llu, "
            "\"mean_in_flight\": %.4f, \"scheduler_ran\": %llu, \"barrier_waits\": %llu, "
            "\"busy_lp_waits\": %llu},\n", r->nthreads - 1,
            r->cfg->handoff_pull ? "pull" : "push", r->cfg->barrier_events ? "events" : "free",
            r->cfg->scheduler_works && !r->cfg->handoff_pull ? "true" : "false",
            r->cfg->offload_always ? "always" : "auto", r->cfg->offload_us, r->lookahead,
            (unsigned long long)c->cons_offloads, mean_in_flight(c),
            (unsigned long long)c->cons_sched_ran, (unsigned long long)c->cons_barrier_waits,
            (unsigned long long)c->cons_lp_waits);
}
