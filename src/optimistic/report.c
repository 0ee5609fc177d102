/* report.c - the optimistic engine's part of the summary (rollbacks, safe events, the
 * window, balance, state saving, time-sharing) and of the --stats JSON ("time_sharing";
 * "state_saving" is every engine's, stats/statesave.c). */
#include <string.h>
#include "optimistic/tw.h"
#include "stats/statesave.h"

struct ts_totals {
    uint64_t ult_events, by_return, by_tick, by_slice, resumed, abandoned, switches;
    uint64_t ticks, ticks_platform, ticks_outside, armed_ns, stacks_peak;
    double de_ns, apms;          /* thread means, weighted by events on stacks */
};

static void totals(const struct kr__run *r, struct ts_totals *t)
{
    memset(t, 0, sizeof *t);
    for (unsigned i = 0; i < r->nthreads; i++) {
        const struct kr__counters *c = &r->counters[i];
        t->ult_events += c->ult_events;
        t->by_return += c->preempt_return;
        t->by_tick += c->preempt_tick;
        t->by_slice += c->preempt_slice;
        t->resumed += c->resumed;
        t->abandoned += c->abandoned;
        t->switches += c->switches;
        t->ticks += c->ticks;
        t->ticks_platform += c->ticks_platform;
        t->ticks_outside += c->ticks_outside;
        t->armed_ns += c->tick_armed_ns;
        if (c->stacks_peak > t->stacks_peak) t->stacks_peak = c->stacks_peak;
        t->de_ns += c->de_ns * (double)c->ult_events;
        t->apms += c->apms * (double)c->ult_events;
    }
    if (t->ult_events) {
        t->de_ns /= (double)t->ult_events;
        t->apms /= (double)t->ult_events;
    }
}

/* Time-sharing (--preempt): preemptions by trigger, resumed vs abandoned, ticks, armed
 * time, event time and model calls per event. */
static void timeshare_summary(const struct kr__run *r, FILE *f)
{
    if (r->cfg->tw.preempt == KR_PREEMPT_OFF) return;
    struct ts_totals t;
    totals(r, &t);
    uint64_t pre = t.by_return + t.by_tick + t.by_slice;
    fprintf(f, "  time sharing:     %s, tick %g us%s, %llu preemptions (%llu at model calls, %llu "
            "by ticks, %llu slices), %llu resumed, %llu rolled back; ticks armed %.3f s; "
            "event %.2f us, %.1f calls/event\n", kr__preempt_name(r->cfg->tw.preempt),
            r->cfg->tw.tick_us, strcmp(r->cfg->tw.tick_from, "default") ? "" :
            " (uncalibrated default: run 'kairos calibrate')", (unsigned long long)pre,
            (unsigned long long)t.by_return,
            (unsigned long long)t.by_tick, (unsigned long long)t.by_slice,
            (unsigned long long)t.resumed, (unsigned long long)t.abandoned,
            (double)t.armed_ns * 1e-9 / (r->nthreads ? r->nthreads : 1), t.de_ns / 1e3, t.apms);
}

void tw_json(const struct kr__run *r, FILE *f)
{
    if (r->cfg->tw.preempt == KR_PREEMPT_OFF) return;
    struct ts_totals t;
    totals(r, &t);
    fprintf(f,
            "  \"time_sharing\": {\"preempt\": \"%s\", \"tick_us\": %.17g, \"tick_from\": \"%s\", "
            "\"alpha\": %.17g, "
            "\"stack_kb\": %zu, \"events_on_stacks\": %llu, \"preempted_at_calls\": %llu, "
            "\"preempted_by_ticks\": %llu, \"preempted_by_slice\": %llu, \"resumed\": %llu, "
            "\"rolled_back\": %llu, \"context_switches\": %llu, \"ticks\": %llu, "
            "\"ticks_in_platform\": %llu, \"ticks_outside_model\": %llu, "
            "\"ticks_armed_seconds\": %.6f, \"event_us_mean\": %.4f, \"calls_per_event\": %.4f, "
            "\"stacks_peak\": %llu},\n",
            kr__preempt_name(r->cfg->tw.preempt), r->cfg->tw.tick_us, r->cfg->tw.tick_from,
            r->cfg->tw.alpha, r->cfg->stack_kb, (unsigned long long)t.ult_events,
            (unsigned long long)t.by_return, (unsigned long long)t.by_tick,
            (unsigned long long)t.by_slice, (unsigned long long)t.resumed,
            (unsigned long long)t.abandoned, (unsigned long long)t.switches,
            (unsigned long long)t.ticks, (unsigned long long)t.ticks_platform,
            (unsigned long long)t.ticks_outside, (double)t.armed_ns * 1e-9, t.de_ns / 1e3, t.apms,
            (unsigned long long)t.stacks_peak);
}

static void balance_summary(const struct kr__run *r, const struct kr__totals *t, FILE *f)
{
    if (!t->migrated && !r->balance_retired) return;
    fprintf(f, "  balance:          %llu LP moves in %llu migrations; %llu workers "
            "retired from a shared core, %llu returns; %llu trials of one worker fewer "
            "(%llu undone)\n", (unsigned long long)t->migrated,
            (unsigned long long)r->migrations, (unsigned long long)r->balance_retired,
            (unsigned long long)r->balance_back, (unsigned long long)r->balance_trials,
            (unsigned long long)r->balance_undone);
}

void tw_summary(const struct kr__run *r, FILE *f)
{
    struct kr__totals t;
    kr__totals(r->counters, r->nthreads, &t);
    fprintf(f, "  rollbacks:        %llu (%llu events undone, %llu antimessages, %llu "
            "checkpoints, %llu GVT rounds)\n", (unsigned long long)t.rollbacks,
            (unsigned long long)t.rolled_back, (unsigned long long)t.antimessages,
            (unsigned long long)t.checkpoints, (unsigned long long)t.gvt_rounds);
    fprintf(f, "  safe events:      %llu (%.1f%%: no checkpoint, committed at once)\n",
            (unsigned long long)t.safe,
            t.processed ? 100.0 * (double)t.safe / (double)t.processed : 0.0);
    if (t.window_cuts) {
        fprintf(f, "  window:           speculation cut %llu times (rollbacks wasted over 4x "
                "what it gained); at the end", (unsigned long long)t.window_cuts);
        for (unsigned i = 0; i < r->nthreads; i++)
            fprintf(f, " %llu", (unsigned long long)r->counters[i].window_final);
        fputc('\n', f);
    }
    balance_summary(r, &t, f);
    kr__state_summary(r, f);
    timeshare_summary(r, f);
}
