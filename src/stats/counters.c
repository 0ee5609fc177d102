/* counters.c - see counters.h. */
#include "stats/counters.h"
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
        t->checkpoints += c->checkpoints;
        t->ckpt_bytes += c->ckpt_bytes;
        t->restores += c->restores;
        t->coasted += c->coasted;
        t->safe += c->safe;
        t->migrated += c->migrated_out;
        t->remote_sent += c->remote_sent;
        t->window_cuts += c->window_cuts;
    }
    for (unsigned i = 0; i < n; i++) /* (each saw them all, but a retired worker) */
        if (all[i].gvt_rounds > t->gvt_rounds) t->gvt_rounds = all[i].gvt_rounds;
}
