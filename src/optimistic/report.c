/* report.c - the optimistic engine's part of the summary (rollbacks, safe events, the
 * window, balance, state saving, time-sharing) and of the --stats JSON ("time_sharing";
 * "state_saving" is every engine's, core/statesave.c), and across ranks every rank's counters
 * gathered on rank 0. */
#include <stdlib.h>
#include <string.h>
#include "optimistic/tw.h"
#include "core/statesave.h"
#include "core/progress.h"

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
        t->ult_events += c->ts.ult_events;
        t->by_return += c->ts.preempt_return;
        t->by_tick += c->ts.preempt_tick;
        t->by_slice += c->ts.preempt_slice;
        t->resumed += c->ts.resumed;
        t->abandoned += c->ts.abandoned;
        t->switches += c->ts.switches;
        t->ticks += c->ts.ticks;
        t->ticks_platform += c->ts.ticks_platform;
        t->ticks_outside += c->ts.ticks_outside;
        t->armed_ns += c->ts.tick_armed_ns;
        if (c->ts.stacks_peak > t->stacks_peak) t->stacks_peak = c->ts.stacks_peak;
        t->de_ns += c->de_ns * (double)c->ts.ult_events;
        t->apms += c->apms * (double)c->ts.ult_events;
    }
    if (t->ult_events) {
        t->de_ns /= (double)t->ult_events;
        t->apms /= (double)t->ult_events;
    }
}

/* Whether the run ran with time-sharing (--preempt on, and none of the features that turn
 * it off). */
static bool time_shared(const struct kr__run *r, const struct kr__tw_options *o)
{
    return o->preempt != KR_PREEMPT_OFF && !r->bundles && !r->model->query && !r->reverse;
}

/* Time-sharing (--preempt): preemptions by trigger, resumed vs abandoned, ticks, armed
 * time, event time and model calls per event. */
static void timeshare_summary(const struct kr__run *r, FILE *f)
{
    const struct kr__tw_options *o = tw_options(r->cfg);
    if (!time_shared(r, o)) return;
    struct ts_totals t;
    totals(r, &t);
    uint64_t pre = t.by_return + t.by_tick + t.by_slice;
    fprintf(f, "  time sharing:     %s, tick %g us%s, %llu preemptions (%llu at model calls, %llu "
            "by ticks, %llu slices), %llu resumed, %llu rolled back; ticks armed %.3f s; "
            "event %.2f us, %.1f calls/event\n", kr__preempt_name(o->preempt),
            o->tick_us, strcmp(o->tick_from, "default") ? "" :
            " (uncalibrated default: run 'kairos calibrate')", (unsigned long long)pre,
            (unsigned long long)t.by_return,
            (unsigned long long)t.by_tick, (unsigned long long)t.by_slice,
            (unsigned long long)t.resumed, (unsigned long long)t.abandoned,
            (double)t.armed_ns * 1e-9 / (r->nthreads ? r->nthreads : 1), t.de_ns / 1e3, t.apms);
}

/* Across ranks: a row per rank (rank 0 has them all, ranks.c). */
static void ranks_json(const struct kr__run *r, FILE *f)
{
    fprintf(f, "  \"per_rank\": [");
    for (unsigned k = 0; k < r->nranks; k++) {
        const struct kr__rank_stats *s = &r->rank_stats[k];
        fprintf(f, "%s\n    {\"rank\": %u, \"committed_events\": %llu, \"processed_events\": "
                "%llu, \"rollbacks\": %llu, \"rolled_back_events\": %llu, \"antimessages\": "
                "%llu, \"events_to_ranks\": %llu, \"events_from_ranks\": %llu, "
                "\"mpi_messages_sent\": %llu, \"mpi_messages_received\": %llu, "
                "\"events_per_message\": %.3f, \"gvt_rounds\": %llu, \"gvt_reductions\": "
                "%llu, \"gvt_reduction_us_mean\": %.3f, \"peak_rss_bytes\": %llu}",
                k ? "," : "", k,
                (unsigned long long)s->committed, (unsigned long long)s->processed,
                (unsigned long long)s->rollbacks, (unsigned long long)s->rolled_back,
                (unsigned long long)s->antimessages, (unsigned long long)s->rank_sent,
                (unsigned long long)s->rank_received, (unsigned long long)s->messages_sent,
                (unsigned long long)s->messages_received,
                s->messages_sent ? (double)s->rank_sent / (double)s->messages_sent : 0.0,
                (unsigned long long)s->gvt_rounds, (unsigned long long)s->reductions,
                s->reductions ? s->reduce_seconds * 1e6 / (double)s->reductions : 0.0,
                (unsigned long long)s->peak_rss);
    }
    fprintf(f, "\n  ],\n");
}

static void ranks_summary(const struct kr__run *r, FILE *f)
{
    uint64_t sent = 0, msgs = 0;
    for (unsigned k = 0; k < r->nranks; k++) {
        sent += r->rank_stats[k].rank_sent;
        msgs += r->rank_stats[k].messages_sent;
    }
    fprintf(f, "  ranks:            %u; %llu events to other ranks in %llu MPI messages (%.1f "
            "per message); the peak memory below is rank 0's\n", r->nranks,
            (unsigned long long)sent,
            (unsigned long long)msgs, msgs ? (double)sent / (double)msgs : 0.0);
    for (unsigned k = 0; k < r->nranks; k++) {
        const struct kr__rank_stats *s = &r->rank_stats[k];
        fprintf(f, "    rank %u: %llu committed, %llu processed, %llu rollbacks; events out %llu, "
                "in %llu; GVT %llu reductions, mean %.1f us; peak memory %.1f MiB\n", k,
                (unsigned long long)s->committed, (unsigned long long)s->processed,
                (unsigned long long)s->rollbacks, (unsigned long long)s->rank_sent,
                (unsigned long long)s->rank_received, (unsigned long long)s->reductions,
                s->reductions ? s->reduce_seconds * 1e6 / (double)s->reductions : 0.0,
                (double)s->peak_rss / (1 << 20));
    }
}

/* --stats: time-sharing's part, summed over the threads. */
static void time_sharing_json(const struct kr__run *r, const struct kr__tw_options *o, FILE *f)
{
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
            kr__preempt_name(o->preempt), o->tick_us, o->tick_from,
            o->alpha, r->cfg->stack_kb, (unsigned long long)t.ult_events,
            (unsigned long long)t.by_return, (unsigned long long)t.by_tick,
            (unsigned long long)t.by_slice, (unsigned long long)t.resumed,
            (unsigned long long)t.abandoned, (unsigned long long)t.switches,
            (unsigned long long)t.ticks, (unsigned long long)t.ticks_platform,
            (unsigned long long)t.ticks_outside, (double)t.armed_ns * 1e-9, t.de_ns / 1e3, t.apms,
            (unsigned long long)t.stacks_peak);
}

void tw_json(const struct kr__run *r, FILE *f)
{
    fprintf(f, "  \"sequential_core\": %s,\n", r->alone ? "true" : "false");
    if (r->nranks > 1 && r->rank_stats) ranks_json(r, f);
    const struct kr__tw_options *o = tw_options(r->cfg);
    if (!time_shared(r, o)) return;
    time_sharing_json(r, o, f);
}

static void balance_summary(const struct kr__run *r, const struct kr__totals *t, FILE *f)
{
    if (!t->migrated && !r->bal.retired) return;
    fprintf(f, "  balance:          %llu LP moves in %llu migrations; %llu workers "
            "retired from a shared core (%llu trials of a share of it, %llu kept), %llu "
            "returns; %llu trials of one worker fewer (%llu undone)\n",
            (unsigned long long)t->migrated, (unsigned long long)r->bal.migrations,
            (unsigned long long)r->bal.retired, (unsigned long long)r->bal.shares,
            (unsigned long long)r->bal.shares_kept, (unsigned long long)r->bal.back,
            (unsigned long long)r->bal.trials, (unsigned long long)r->bal.undone);
}

static void window_summary(const struct kr__run *r, const struct kr__totals *t, FILE *f)
{
    fprintf(f, "  window:           speculation cut %llu times (rollbacks wasted over 4x "
            "what it gained); at the end", (unsigned long long)t->window_cuts);
    for (unsigned i = 0; i < r->nthreads; i++)
        fprintf(f, " %llu", (unsigned long long)r->counters[i].win.final);
    fputc('\n', f);
}

/* The lines of what happened to events: rollbacks, lazily kept sends, safe events and the
 * lone worker's. */
static void events_summary(const struct kr__run *r, const struct kr__totals *t, FILE *f)
{
    fprintf(f, "  rollbacks:        %llu (%llu events undone, %llu antimessages, %llu "
            "checkpoints, %llu GVT rounds)\n", (unsigned long long)t->rollbacks,
            (unsigned long long)t->rolled_back, (unsigned long long)t->antimessages,
            (unsigned long long)t->checkpoints, (unsigned long long)t->gvt_rounds);
    if (tw_options(r->cfg)->cancel == KR_CANCEL_LAZY)
        fprintf(f, "  lazy cancel:      %llu sends of undone events kept (sent alike again)\n",
                (unsigned long long)t->lazy_kept);
    fprintf(f, "  safe events:      %llu (%.1f%%: no checkpoint, committed at once)\n",
            (unsigned long long)t->safe,
            t->processed ? 100.0 * (double)t->safe / (double)t->processed : 0.0);
    if (t->lone)
        fprintf(f, "  lone worker:      %llu events (%.1f%%) run the sequential engine's way by a "
                "worker that held every LP\n", (unsigned long long)t->lone,
                t->processed ? 100.0 * (double)t->lone / (double)t->processed : 0.0);
}

void tw_summary(const struct kr__run *r, FILE *f)
{
    struct kr__totals t;
    kr__totals(r->counters, r->nthreads, &t);
    if (r->alone) { /* (engine.c tw_alone: nothing of the rest happened) */
        fprintf(f, "  one worker:       the sequential engine's core ran it (nothing can "
                "arrive late: no checkpoint, rollback or GVT round; every event committed "
                "at once)\n");
        return;
    }
    events_summary(r, &t, f);
    if (t.window_cuts) window_summary(r, &t, f);
    balance_summary(r, &t, f);
    kr__state_summary(r, f);
    timeshare_summary(r, f);
    if (r->nranks > 1 && r->rank_stats) ranks_summary(r, f);
}

/* ---- across ranks (ranks.c) ---- */

/* This rank's row: its transport's counts and its threads' totals. */
static struct kr__rank_stats rank_row(const struct kr__run *r, const struct tw_global *g)
{
    const struct tw_net *net = &g->net;
    struct kr__rank_stats st = { .messages_sent = net->x.messages_sent,
                                 .messages_received = net->x.messages_received,
                                 .reductions = net->reductions,
                                 .reduce_seconds = (double)net->reduce_ns * 1e-9,
                                 .peak_rss = kr__peak_rss_bytes() };
    for (unsigned t = 0; t < g->n; t++) {
        const struct kr__counters *c = &r->counters[t];
        st.committed += c->committed;
        st.processed += c->processed;
        st.rollbacks += c->rollbacks;
        st.rolled_back += c->rolled_back;
        st.antimessages += c->antimessages;
        st.rank_sent += c->rank_sent;
        st.rank_received += c->rank_received;
        if (c->gvt_rounds > st.gvt_rounds) st.gvt_rounds = c->gvt_rounds;
    }
    return st;
}

/* Rank 0's side: every rank's row and counters (len bytes each, in all), the other ranks'
 * counters added into its own thread by thread. */
static void take_rows(struct kr__run *r, const struct tw_global *g, const unsigned char *all,
                      size_t len)
{
    int nranks = g->net.nranks;
    r->rank_stats = malloc((size_t)nranks * sizeof *r->rank_stats);
    if (!r->rank_stats) kr__fatal_oom("statistics", (size_t)nranks * sizeof *r->rank_stats);
    for (int k = 0; k < nranks; k++) {
        const unsigned char *p = all + (size_t)k * len;
        memcpy(&r->rank_stats[k], p, sizeof *r->rank_stats);
        for (unsigned t = 0; k && t < g->n; t++) {
            struct kr__counters c;
            memcpy(&c, p + sizeof *r->rank_stats + t * sizeof c, sizeof c);
            kr__counters_add(&r->counters[t], &c);
        }
    }
}

/* Rank 0 gets every rank's counters (added into its own, thread by thread) and a row per
 * rank (kr__run.rank_stats). Collective. */
void tw_rank_stats(struct kr__run *r, struct tw_global *g)
{
    struct tw_net *net = &g->net;
    size_t cb = g->n * sizeof *r->counters, len = sizeof(struct kr__rank_stats) + cb;
    unsigned char *mine = malloc(len);
    if (!mine) kr__fatal_oom("statistics", len);
    struct kr__rank_stats st = rank_row(r, g);
    memcpy(mine, &st, sizeof st);
    memcpy(mine + sizeof st, r->counters, cb);
    void *all = NULL;
    size_t total = 0;
    if (kr__net.ops->gather_bytes(mine, len, &all, &total)) tw_net_broken("gathering statistics");
    free(mine);
    r->nranks = (unsigned)net->nranks;
    if (!all) return;
    if (total != len * (size_t)net->nranks)
        kr__internal_error("statistics of %zu bytes from %d ranks, %zu expected", total,
                           net->nranks, len * (size_t)net->nranks);
    take_rows(r, g, all, len);
    free(all);
}
