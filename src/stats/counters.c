/* counters.c - see counters.h. */
#include "stats/counters.h"
#include <stddef.h>
#include <string.h>

void kr__totals(const struct kr__counters *all, unsigned n, struct kr__totals *t)
{
    memset(t, 0, sizeof *t);
    for (unsigned i = 0; i < n; i++) {
        const struct kr__counters *c = &all[i];
        t->processed += c->processed;
        t->committed += c->committed;
        t->rolled_back += c->rolled_back;
        t->rollbacks += c->rollbacks;
        t->antimessages += c->antimessages;
        t->lazy_kept += c->lazy_kept;
        t->checkpoints += c->ck.taken;
        t->ckpt_bytes += c->ck.bytes;
        t->restores += c->ck.restores;
        t->coasted += c->coasted;
        t->safe += c->safe;
        t->lone += c->lone;
        t->migrated += c->migrated_out;
        t->remote_sent += c->remote_sent;
        t->window_cuts += c->win.cuts;
        t->mem_rollbacks += c->win.mem_rollbacks;
        t->sendbacks += c->win.sendbacks;
        t->queries += c->q.answered;
        t->queries_remote += c->q.remote;
        t->query_events += c->q.events;
        t->query_undone += c->q.undone;
        t->query_rollbacks += c->q.rollbacks;
        t->query_wait_ns += c->q.wait_ns;
        t->query_aside += c->q.aside;
        t->timers_cancelled += c->timers_cancelled;
    }
    for (unsigned i = 0; i < n; i++) /* (each saw them all, but a retired worker) */
        if (all[i].gvt_rounds > t->gvt_rounds) t->gvt_rounds = all[i].gvt_rounds;
}

void kr__counters_add(struct kr__counters *into, const struct kr__counters *c)
{
    uint64_t wf = into->win.final, kf = into->ckpt_interval_final, sp = into->ts.stacks_peak,
             gr = into->gvt_rounds;
    /* (every field from `processed` up to the doubles is a count) */
    uint64_t *a = &into->processed;
    const uint64_t *b = &c->processed;
    size_t n = (offsetof(struct kr__counters, de_ns) - offsetof(struct kr__counters, processed)) /
               sizeof(uint64_t);
    for (size_t i = 0; i < n; i++) a[i] += b[i];
    into->win.final = wf > c->win.final ? wf : c->win.final;
    into->ckpt_interval_final = kf > c->ckpt_interval_final ? kf : c->ckpt_interval_final;
    into->ts.stacks_peak = sp > c->ts.stacks_peak ? sp : c->ts.stacks_peak;
    into->gvt_rounds = gr > c->gvt_rounds ? gr : c->gvt_rounds; /* (the same rounds) */
}
