/* reverse.c - --state reverse in the optimistic engine (state/reverse.c): reverse
 * computation. Before an event that may be rolled back runs, a reverse record takes the
 * place of a checkpoint: the LP's rolled-back words (random stream, send count, state
 * root) and the model's reverse area, zeroed, which the handler fills through
 * kr_reverse_area. A rollback undoes the LP's events newest first, each by the model's
 * reverse handler and then its record's words; nothing is copied back and nothing coasts.
 * A record is a struct kr__ckpt without arena bytes, so the paths that free checkpoints
 * with their events (commit, fossil collection, migration's accounting) free records too. */
#include <stdio.h>
#include <string.h>
#include "optimistic/tw.h"
#include "base/error.h"
#include "state/mode.h"

void tw_rev_record(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    size_t n = th->r->model->reverse_bytes;
    struct kr__ckpt *c = kr__blob_get(&th->blobs, sizeof *c + n);
    *c = (struct kr__ckpt){ .bytes = sizeof *c + n, .full = 1, .mode = KR_STATE_REVERSE,
                            .span = e->dur };
    kr__lp_save_words(lp, c->words);
    memset(c->data, 0, n);
    e->ckpt = c;
    e->flags |= KR_EVF_CKPT;
    kr__ctx.rev_area = n ? c->data : NULL; /* (cleared once the event has run) */
}

/* An event that failed part-way left its LP in a state no reverse handler knows: had it
 * committed, the run would have ended with its error; rolled back, nothing can undo it. */
static _Noreturn void half_run(struct tw_thread *th, const struct kr__ev *e)
{
    char what[320], msg[1024];
    kr__event_where(what, sizeof what, th->r, e);
    const struct tw_lp *tl = tw_lp_of(kr__lp_at(th->r, e->dest));
    snprintf(msg, sizeof msg, "--state reverse: %s failed speculatively (%s) and is "
             "now rolled back, but an event stopped part-way cannot be reversed by its "
             "handler; run the model with --state full (or fix the error: it may show on "
             "the sequential engine too)", what, tl->fail && tl->fail->err ? tl->fail->err
             : "model error");
    kr__die(msg);
}

/* Undo e, lp's newest processed event, with the model's reverse handler; its record is
 * freed. The context is kept: a rollback may come while another event's context is set. */
void tw_rev_undo(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    struct kr__ckpt *c = e->ckpt;
    if (e->flags & KR_EVF_ERROR) half_run(th, e);
    if (!c)
        kr__internal_error("thread %u reverses LP %llu's event at %.17g, which has no reverse "
                           "record", th->id, (unsigned long long)e->dest, e->k.ts);
    struct kr__ctx keep = kr__ctx;
    kr__ctx_event(lp, e, KR_MODE_REVERSE);
    th->r->model->reverse(e->dest, e->k.ts, e->type, e->payload, e->size, lp->root, c->data);
    kr__ctx = keep;
    kr__lp_load_words(lp, c->words);
    kr__ckpt_release(&th->blobs, c);
}
