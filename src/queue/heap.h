/* heap.h - the future-event set: an implicit binary min-heap of events by ordering key.
 *
 * Each slot caches the timestamp next to the pointer, so a sift compares doubles in one
 * contiguous array and only dereferences an event to break a timestamp tie.
 * A cache-line-aligned 4-ary heap was measured against it (PHOLD-std sequential, 2026-11-22,
 * same machine, back to back): 1024 LPs 11.7-12.2 vs 12.6-13.7 M/s, 65536 LPs 1.8-2.1 vs
 * 2.7-3.5 M/s; the binary heap stays. So did a calendar queue with array buckets (commit
 * "Experiment: calendar queue"): 9.7-10.0 vs 12.6-13.4 M/s at 1024 LPs, 1.7 vs 3.4-3.6 M/s
 * at 65536 LPs. A bottom-up pop (Floyd: the hole goes down to a leaf, then the last slot
 * rises) was measured too (2026-11-25, bench/ab.py, 7-9 runs): PHOLD-std sequential 1.01-1.05,
 * 2 threads 1.02-1.06, but seir sequential 0.80-0.81 - with timestamps tied the descent
 * reads two events per level all the way down, where a sift-down stops early. Cancelled events
 * stay in the heap and are dropped when they reach the top (lazy deletion: an antimessage
 * for a pending event costs one store).
 */
#ifndef KR_QUEUE_HEAP_H
#define KR_QUEUE_HEAP_H

#include <stddef.h>
#include "msg/event.h"

struct kr__heap_slot {
    kr_time ts;
    struct kr__ev *e;
};

struct kr__heap {
    struct kr__heap_slot *a;
    size_t n, cap;
};

void kr__heap_init(struct kr__heap *h);
void kr__heap_destroy(struct kr__heap *h);
void kr__heap_grow(struct kr__heap *h);
/* Restore the heap order after slots were removed in place (LP migration). */
void kr__heap_rebuild(struct kr__heap *h);

static inline int kr__slot_lt(const struct kr__heap_slot *x, const struct kr__heap_slot *y)
{
    if (x->ts != y->ts) return x->ts < y->ts;
    return kr__key_lt(&x->e->k, &y->e->k);
}

static inline void kr__heap_push(struct kr__heap *h, struct kr__ev *e)
{
    if (__builtin_expect(h->n == h->cap, 0)) kr__heap_grow(h);
    struct kr__heap_slot s = { e->k.ts, e };
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) >> 1;
        if (!kr__slot_lt(&s, &h->a[p])) break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i] = s;
}

static inline struct kr__ev *kr__heap_top(const struct kr__heap *h)
{
    return h->n ? h->a[0].e : NULL;
}

/* Put x into hole i, moving smaller children up (pop, and kr__heap_rebuild). */
static inline void kr__heap_sift_down(struct kr__heap *h, size_t i, struct kr__heap_slot x)
{
    size_t n = h->n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && kr__slot_lt(&h->a[c + 1], &h->a[c])) c++;
        if (!kr__slot_lt(&h->a[c], &x)) break;
        h->a[i] = h->a[c];
        i = c;
    }
    h->a[i] = x;
}

static inline struct kr__ev *kr__heap_pop(struct kr__heap *h)
{
    if (h->n == 0) return NULL;
    struct kr__ev *top = h->a[0].e;
    struct kr__heap_slot last = h->a[--h->n];
    if (h->n) kr__heap_sift_down(h, 0, last);
    return top;
}

/* Latency hiding for large LP counts: prefetch `lines` cache lines of the next event's LP
 * record (records lp_bytes apart; `hot`: the first record's line to start from), and the
 * two candidates for the event after it. */
static inline void kr__heap_prefetch_next(const struct kr__heap *h, const char *hot,
                                          size_t lp_bytes, unsigned lines)
{
    /* GCC counts a prefetch as free of side effects, so a function of loads and prefetches
     * only is judged pure and its calls dropped as dead (GCC 12, -O2: this helper vanished
     * from the engines' loops whenever it was not inlined first). An empty volatile asm is
     * a side effect, and costs no instruction. */
    __asm__ volatile("");
    if (h->n == 0) return;
    const char *lp = hot + h->a[0].e->dest * lp_bytes;
    for (unsigned i = 0; i < lines; i++) __builtin_prefetch(lp + 64 * i);
    if (h->n > 1) __builtin_prefetch(h->a[1].e);
    if (h->n > 2) __builtin_prefetch(h->a[2].e);
}

#endif
