/* rollback.c - undoing speculative work: periodic checkpoints, rollback to a key with
 * restore + silent re-execution (coasting forward), and cancellation of sent events with
 * antimessages (aggressive cancellation). */
#include <stdlib.h>
#include "tw.h"
#include "../core/error.h"

void tw_coast(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *from);

/* Save lp's state as it is now: before event `at`, or as the base (at == NULL). */
void tw_take_ckpt(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *at)
{
    uint64_t w[KR_CKPT_WORDS];
    kr__lp_save_words(lp, w);
    struct kr__ckpt *c = kr__ckpt_take(&th->blobs, &lp->arena, w);
    th->cnt->checkpoints++;
    th->cnt->ckpt_bytes += c->bytes;
    lp->since_ckpt = 0;
    if (at) {
        at->ckpt = c;
        lp->ckpt_ev = at;
    } else {
        if (lp->base) kr__ckpt_release(&th->blobs, lp->base);
        lp->base = c;
    }
}

static void restore(struct tw_thread *th, struct kr__lp *lp, const struct kr__ckpt *c)
{
    uint64_t w[KR_CKPT_WORDS];
    kr__ckpt_restore(&lp->arena, c, w);
    kr__lp_load_words(lp, w);
    th->cnt->restores++;
}

/* Cancel an event this thread sent (the sender side of an antimessage). */
static void cancel_child(struct tw_thread *th, struct kr__ev *c)
{
    unsigned owner = tw_owner(th->g, c->dest);
    th->cnt->antimessages++;
    if (owner == th->id) {
        tw_work_push(th, c, 1);
        return;
    }
    struct kr__ev *a = kr__pool_get(th->pool, 0);
    a->k = c->k;
    a->dest = c->dest;
    a->flags = KR_EVF_ANTI;
    a->child = c;
    a->size = 0;
    tw_transport_send(th, owner, a);
}

/* The receiver side: c is owned by this thread. */
void tw_cancel(struct tw_thread *th, struct kr__ev *c)
{
    if (c->st == KR_EV_PROCESSED) tw_rollback(th, &th->r->lps[c->dest], &c->k, true);
    c->st = KR_EV_CANCELLED; /* pending or parked: dropped when it surfaces */
}

static void unpark(struct tw_thread *th, struct kr__lp *lp)
{
    struct kr__ev *p = lp->parked;
    lp->parked = NULL;
    while (p) {
        struct kr__ev *n = p->next;
        if (p->st == KR_EV_PARKED) p->st = KR_EV_PENDING;
        kr__heap_push(&th->heap, p);
        p = n;
    }
}

/* Undo one processed event (the tail); returns its checkpoint, if it had one. */
static struct kr__ckpt *undo_tail(struct tw_thread *th, struct kr__lp *lp, bool cancel)
{
    struct kr__ev *e = lp->tail;
    if (th->g->check && kr__key_lt(&e->k, &th->applied))
        kr__internal_error("thread %u rolls back LP %llu's event at %.17g, below the committed "
                           "horizon %.17g", th->id, (unsigned long long)e->dest, e->k.ts,
                           th->applied.ts);
    lp->tail = e->prev;
    if (lp->tail) lp->tail->next = NULL;
    else lp->head = NULL;
    if (cancel) {
        for (struct kr__ev *c = e->child, *n; c; c = n) {
            n = c->sib;
            cancel_child(th, c);
        }
    }
    e->child = NULL;
    if (e == lp->poison) {
        lp->poison = NULL;
        free(lp->err);
        lp->err = NULL;
        unpark(th, lp);
    }
    if (e == lp->first_unc) lp->first_unc = NULL;
    th->uncommitted--;
    struct kr__ckpt *c = e->ckpt;
    e->ckpt = NULL;
    e->flags = 0;
    e->st = KR_EV_PENDING;
    kr__heap_push(&th->heap, e);
    return c;
}

/* Undo every processed event of lp with key >= k, then rebuild the state just before k. */
void tw_rollback(struct tw_thread *th, struct kr__lp *lp, const struct kr__key *k, bool cancel)
{
    struct kr__ckpt *first = NULL; /* checkpoint of the earliest undone event, if any */
    uint64_t undone = 0;
    while (lp->tail && !kr__key_lt(&lp->tail->k, k)) {
        if (first) kr__ckpt_release(&th->blobs, first);
        first = undo_tail(th, lp, cancel);
        undone++;
    }
    if (!undone) return;
    tw_set_lvt(th, lp);
    th->cnt->rollbacks++;
    th->cnt->rolled_back += undone;
    kr__outvec_drop_from(&lp->out, k);
    struct kr__ev *c = lp->tail;
    while (c && !c->ckpt) c = c->prev;
    lp->ckpt_ev = c;
    if (first) {
        restore(th, lp, first);
        kr__ckpt_release(&th->blobs, first);
        lp->since_ckpt = th->g->ckpt_interval; /* re-save before the next event */
        return;
    }
    restore(th, lp, c ? c->ckpt : lp->base);
    uint64_t before = th->cnt->coasted;
    tw_coast(th, lp, c ? c : lp->head);
    lp->since_ckpt = (uint32_t)(th->cnt->coasted - before);
}
