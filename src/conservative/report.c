/* report.c - the conservative engine's part of the summary (the "conservative:" line) and
 * of the --stats JSON (the "conservative" object): how it handed events out (push or pull,
 * event-free or barrier events), how many ran beside each other, what held the scheduler
 * back. The scheduler's counters are all on thread 0's line; the events each thread ran
 * are its own `processed`. */
#include "conservative/cons.h"

static double mean_in_flight(const struct kr__counters *c)
{
    return c->cons.offloads ? (double)c->cons.inflight_sum / (double)c->cons.offloads : 0;
}

void cons_summary(const struct kr__run *r, FILE *f)
{
    const struct kr__counters *c = &r->counters[0];
    const struct kr__cons_options *o = cons_options(r->cfg);
    fprintf(f,
            "  conservative:     %u worker%s + scheduler, %s handoff, %s barriers, offload %s; "
            "%.2f events in flight on average; scheduler ran %llu itself, held %llu times at "
            "the barrier and %llu by a busy LP\n",
            r->nthreads - 1, r->nthreads == 2 ? "" : "s",
            o->handoff_pull ? "pull" : "push",
            o->barrier_events ? "event" : "event-free",
            o->offload_always ? "always" : "auto", mean_in_flight(c),
            (unsigned long long)c->cons.sched_ran, (unsigned long long)c->cons.barrier_waits,
            (unsigned long long)c->cons.lp_waits);
    if (r->model->query)
        fputs("  conservative:     the model answers queries: every event ran on the "
              "scheduler, one at a time (a query sees every other LP at the asker's time)\n",
              f);
}

void cons_json(const struct kr__run *r, FILE *f)
{
    const struct kr__counters *c = &r->counters[0];
    const struct kr__cons_options *o = cons_options(r->cfg);
    fprintf(f,
            "  \"conservative\": {\"workers\": %u, \"handoff\": \"%s\", \"barriers\": \"%s\", "
            "\"scheduler_works\": %s, \"offload\": \"%s\", \"offload_us\": %.17g, \"lookahead\": "
            "%.17g, \"offloaded\": %llu, "
            "\"mean_in_flight\": %.4f, \"scheduler_ran\": %llu, \"barrier_waits\": %llu, "
            "\"busy_lp_waits\": %llu},\n",
            r->nthreads - 1, o->handoff_pull ? "pull" : "push",
            o->barrier_events ? "events" : "free",
            o->scheduler_works && !o->handoff_pull ? "true" : "false",
            o->offload_always ? "always" : "auto", o->offload_us, r->lookahead,
            (unsigned long long)c->cons.offloads, mean_in_flight(c),
            (unsigned long long)c->cons.sched_ran, (unsigned long long)c->cons.barrier_waits,
            (unsigned long long)c->cons.lp_waits);
}
