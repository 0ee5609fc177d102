/* bundle.h - same-time bundles (KR_MODEL_BUNDLES): all of an LP's events with one timestamp
 * and one zero-delay generation run as one call of its handler, which reads them with
 * kr_bundle_count / kr_bundle_get (api.c).
 *
 * The key puts a bundle's members next to each other (`tie`, msg/event.h), so an engine
 * gathers one by popping while its queue's top is of the same bundle (kr__ev_same_bundle),
 * runs the first member with the others listed here, and commits every member as an event
 * of its own (the digest, the event counts and the output are per member, on every engine).
 * Sends and output belong to the first member. */
#ifndef KR_CORE_BUNDLE_H
#define KR_CORE_BUNDLE_H

#include "core/core.h"
#include "base/grow.h"
#include "queue/heap.h"
#include <stdlib.h>

struct kr__bundle {
    struct kr__ev **ev;        /* the members in key order; ev[0] is the one that runs */
    size_t n, cap;
};

/* Start a bundle with its first member. */
static inline void kr__bundle_start(struct kr__bundle *b, struct kr__ev *e)
{
    if (!b->cap) KR_GROW(b->ev, b->cap, 1, 16, "bundle of events");
    b->ev[0] = e;
    b->n = 1;
}

static inline void kr__bundle_add(struct kr__bundle *b, struct kr__ev *e)
{
    if (b->n == b->cap) KR_GROW(b->ev, b->cap, b->n + 1, 16, "bundle of events");
    b->ev[b->n++] = e;
}

/* Start b with e, just popped from h, and pop the rest of e's bundle, which the key put
 * next (a conservative barrier event is never a member: its key can equal LP 0's first). */
static inline void kr__bundle_take(struct kr__bundle *b, struct kr__heap *h, struct kr__ev *e)
{
    kr__bundle_start(b, e);
    struct kr__ev *x;
    while ((x = kr__heap_top(h)) && kr__ev_same_bundle(x, e) && !(x->flags & KR_EVF_BARRIER))
        kr__bundle_add(b, kr__heap_pop(h));
}

/* The committed path of the sequential and conservative engines: commit e - with bundles,
 * every member of b, e first - each as an event of its own, the run's end key past the
 * last, and give each back to pool but `keep` (NULL: none). Returns the events committed. */
static inline size_t kr__bundle_commit(struct kr__run *r, struct kr__lp *lp,
                                       const struct kr__bundle *b, struct kr__ev *e,
                                       const struct kr__ev *keep, struct kr__pool *pool)
{
    size_t n = r->bundles ? b->n : 1;
    for (size_t i = 0; i < n; i++) {
        struct kr__ev *x = r->bundles ? b->ev[i] : e;
        kr__lp_commit_event(lp, x);
        r->end_key = x->k;
        r->end_key.seq++;
        if (x != keep) kr__pool_put(pool, x);
    }
    return n;
}

/* Point the model context at b (after kr__ctx_event, which forgets any bundle). With timers
 * among its members, its first one says so (KR_PAYLOAD_TIMERS_IN) and b's array gets room
 * after them for the members that run: which do is known only when the bundle runs
 * (kr__timer_dispatch, each time it runs: --check and coasting run it again). */
static inline void kr__bundle_enter(struct kr__bundle *b)
{
    kr__ctx.bundle = b->ev;
    kr__ctx.nbundle = (unsigned)b->n;
    if (!atomic_load_explicit(&kr__timers.at, memory_order_relaxed)) return; /* (none yet) */
    bool timers = false;
    for (size_t i = 0; i < b->n && !timers; i++) timers = b->ev[i]->pflags & KR_PAYLOAD_TIMER;
    b->ev[0]->pflags = (uint8_t)((b->ev[0]->pflags & ~KR_PAYLOAD_TIMERS_IN) |
                                 (timers ? KR_PAYLOAD_TIMERS_IN : 0));
    if (!timers) return;
    if (b->cap < 2 * b->n) KR_GROW(b->ev, b->cap, 2 * b->n, 16, "bundle of events");
    kr__ctx.bundle = b->ev;
    kr__ctx.bundle_all = b->ev;
    kr__ctx.nbundle_all = (unsigned)b->n;
}

static inline void kr__bundle_free(struct kr__bundle *b)
{
    free(b->ev);
    b->ev = NULL;
    b->n = b->cap = 0;
}

#endif
