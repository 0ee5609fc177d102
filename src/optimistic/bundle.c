/* bundle.c - bundles (KR_MODEL_BUNDLES, core/bundle.h) on the optimistic engine: an event
 * runs with every pending event of its LP that shares its key's time and tie, as one; they
 * join the processed list, are coasted and commit together. */
#include "optimistic/tw.h"

/* Bundles: the processed bundle that starts at x (its members follow it in the LP's
 * processed list) into th->cbund; returns the event after it. */
struct kr__ev *tw_bundle_listed(struct tw_thread *th, struct kr__ev *x)
{
    kr__bundle_start(&th->cbund, x);
    struct kr__ev *n = x->next;
    for (; n && kr__ev_same_bundle(n, x); n = n->next) kr__bundle_add(&th->cbund, n);
    return n;
}

/* Bundles: the rest of e's bundle, which the key put next in the heap. A member that a
 * rollback left holding lazily kept sends gives them to the bundle's run. */
void tw_gather(struct tw_thread *th, struct kr__ev *e)
{
    kr__bundle_start(&th->bund, e);
    struct kr__ev *x;
    while ((x = tw_top(th)) && kr__ev_same_bundle(x, e)) {
        kr__heap_pop(&th->heap);
        if (x->xflags & KR_EVX_LAZY) tw_lazy_join(th, x);
        x->flags = 0;
        x->child = NULL;
        x->ckpt = NULL;
        kr__bundle_add(&th->bund, x);
    }
}

/* Bundles: every member joins the processed list, before any message is taken in (one
 * could roll the LP back, or another, whose coasting fills th->cbund). done() was asked
 * once, after the whole bundle: its answer belongs to the last member (commit.c). */
void tw_bundle_processed(struct tw_thread *th, struct kr__lp *lp, struct kr__bundle *b)
{
    struct kr__ev *first = b->ev[0], *last = b->ev[b->n - 1];
    if ((first->flags & KR_EVF_DONE_AFTER) && last != first) {
        first->flags &= (uint8_t)~KR_EVF_DONE_AFTER;
        last->flags |= KR_EVF_DONE_AFTER;
    }
    for (size_t i = 0; i < b->n; i++) tw_processed(th, lp, b->ev[i]);
}

/* Bundles, a safe one: the members after the first commit with it. */
void tw_bundle_commit_rest(struct tw_thread *th, struct kr__lp *lp)
{
    for (size_t i = 1; i < th->bund.n; i++) {
        struct kr__ev *x = th->bund.ev[i];
        kr__lp_commit_event(lp, x);
        th->cnt->processed++;
        th->cnt->committed++;
        th->cnt->safe++;
        kr__pool_put(th->pool, x);
    }
}

static void bundles_end(struct tw_thread *th)
{
    kr__bundle_free(&th->bund);
    kr__bundle_free(&th->cbund);
}

const struct tw_module tw_mod_bundles = { .name = "bundles", .end = bundles_end };
