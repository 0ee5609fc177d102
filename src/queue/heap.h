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
 * 2 threads 1.02-1.06, but seir sequential 0.80-0.81. That was put down to tied timestamps
 * then; a count of ties at each pop (2026-12-02) finds none in seir, so the likelier cause is
 * the descent to a leaf in seir's large heap, where a sift-down stops early. Cancelled events
 * stay in the heap and are dropped when they reach the top (lazy deletion: an antimessage
 * for a pending event costs one store).
 *
 * Two slot layouts, one in use at a time, chosen by what the run's pops meet (pay only for
 * the ties a run has): plain slots (time, event) for timestamps that differ, as in PHOLD,
 * queueing, seir; tied slots (time, event, the rest of the key packed in 63 bits) once the
 * top keeps a child at its time, as in life, whose generations share a time: a tie is then
 * decided in the array, not by reading two events' keys a level (life 1.5-2x faster on
 * every engine). Tied slots on a run without ties cost PHOLD-std 6-24% (wider slots to
 * move, a packing a push), so a heap starts plain and is judged by looks at its top
 * (kr__heap_judge). Both orders are the keys', so the layout leaves no trace in the history.
 */
#ifndef KR_QUEUE_HEAP_H
#define KR_QUEUE_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "msg/event.h"

/* A plain slot, and a tied one; the event at the same offset in both, so the top and the
 * slots' events are read without asking which layout is in use. */
struct kr__heap_slot {
    kr_time ts;
    struct kr__ev *e;
};
struct kr__heap_tslot {
    kr_time ts;
    struct kr__ev *e;
    uint64_t tb;                  /* the key after its time (kr__heap_tb), or KR_HEAP_TB_NONE */
};

_Static_assert(offsetof(struct kr__heap_tslot, e) == offsetof(struct kr__heap_slot, e),
               "a slot's event where kr__heap_ev reads it, in both layouts");

#define KR_HEAP_TB_NONE UINT64_MAX
#define KR_HEAP_LOOK 1024u        /* pops between two looks at the top */
#define KR_HEAP_LOOKS 16u         /* looks to a judgement of the layout */

struct kr__heap {
    void *a;                      /* the slots: struct kr__heap_slot, or _tslot if tied */
    size_t n, cap;                /* cap: slots of the layout in use */
    size_t size;                  /* bytes of a slot of that layout */
    bool tied;
    bool can_tie;                 /* the run's key fits the packing (kr__heap_init_keys) */
    uint32_t left;                /* pops to the next look at the top (kr__heap_judge) */
    uint32_t looks, tied_looks;   /* looks since the last judgement, and those that saw
                                   * the top's time in a child */
    /* The packing of a tied slot's tb, low bits first: seq, src, tie, gen, each field
     * `bits` wide at `shift`; bits 0: the field must be 0 to fit. */
    uint8_t bits[4], shift[4];
};

void kr__heap_init(struct kr__heap *h);
/* ...with the packing for a run of `lps` LPs (the senders' ids), whose key's tie holds
 * destinations (tie_dest) or types (tie_type) or neither. Without it the heap stays plain. */
void kr__heap_init_keys(struct kr__heap *h, uint64_t lps, bool tie_dest, bool tie_type);
void kr__heap_destroy(struct kr__heap *h);
void kr__heap_grow(struct kr__heap *h);
/* Restore the heap order after slots were removed in place (kr__heap_move; migration). */
void kr__heap_rebuild(struct kr__heap *h);
/* A look at the top every KR_HEAP_LOOK pops (pop calls it), and every KR_HEAP_LOOKS the
 * layout for the ties they saw. */
void kr__heap_judge(struct kr__heap *h);
/* Push and pop on tied slots (out of line: a plain run's loops carry none of their code;
 * a tied run's call costs less than one event's key read a level). */
void kr__heap_push_tied(struct kr__heap *h, struct kr__ev *e);
struct kr__ev *kr__heap_pop_tied(struct kr__heap *h);

/* Slot i's event and time, whichever the layout (read as bytes: a tied slot is not a
 * plain one to the compiler; a load each, all the same). */
static inline struct kr__ev *kr__heap_ev(const struct kr__heap *h, size_t i)
{
    struct kr__ev *e;
    memcpy(&e, (const char *)h->a + i * h->size + offsetof(struct kr__heap_slot, e), sizeof e);
    return e;
}

static inline kr_time kr__heap_ts(const struct kr__heap *h, size_t i)
{
    kr_time ts;
    memcpy(&ts, (const char *)h->a + i * h->size, sizeof ts);
    return ts;
}

/* Slot `from` into slot `to` (to <= from: keeping some slots in place; then rebuild). */
static inline void kr__heap_move(struct kr__heap *h, size_t to, size_t from)
{
    memmove((char *)h->a + to * h->size, (const char *)h->a + from * h->size, h->size);
}

/* Plain slots: by time, a tie by the events' keys. */
static inline int kr__slot_lt(const struct kr__heap_slot *x, const struct kr__heap_slot *y)
{
    if (x->ts != y->ts) return x->ts < y->ts;
    return kr__key_lt(&x->e->k, &y->e->k);
}

static inline void kr__heap_push_plain(struct kr__heap *h, struct kr__ev *e)
{
    struct kr__heap_slot *a = h->a, s = { e->k.ts, e };
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) >> 1;
        if (!kr__slot_lt(&s, &a[p])) break;
        a[i] = a[p];
        i = p;
    }
    a[i] = s;
}

static inline void kr__heap_push(struct kr__heap *h, struct kr__ev *e)
{
    if (__builtin_expect(h->n == h->cap, 0)) kr__heap_grow(h);
    if (__builtin_expect(h->tied, 0))
        kr__heap_push_tied(h, e);
    else
        kr__heap_push_plain(h, e);
}

static inline struct kr__ev *kr__heap_top(const struct kr__heap *h)
{
    return h->n ? kr__heap_ev(h, 0) : NULL;
}

/* Put x into hole i, moving smaller children up (pop, and kr__heap_rebuild). (The smaller
 * child's choice compiles to arithmetic, not a branch, while the compare has no side
 * effect: it goes either way at random, and mispredicted a level it made PHOLD-std 16%
 * slower, measured on tied slots.) */
static inline void kr__heap_sift_plain(struct kr__heap *h, size_t i, struct kr__heap_slot x)
{
    struct kr__heap_slot *a = h->a;
    size_t n = h->n;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        c += (size_t)(c + 1 < n && kr__slot_lt(&a[c + 1], &a[c]));
        if (!kr__slot_lt(&a[c], &x)) break;
        a[i] = a[c];
        i = c;
    }
    a[i] = x;
}

static inline struct kr__ev *kr__heap_pop(struct kr__heap *h)
{
    if (h->n == 0) return NULL;
    if (__builtin_expect(--h->left == 0, 0)) kr__heap_judge(h);
    if (__builtin_expect(h->tied, 0)) return kr__heap_pop_tied(h);
    struct kr__heap_slot *a = h->a;
    struct kr__ev *top = a[0].e;
    if (--h->n) kr__heap_sift_plain(h, 0, a[h->n]);
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
    const char *lp = hot + kr__heap_top(h)->dest * lp_bytes;
    for (unsigned i = 0; i < lines; i++) __builtin_prefetch(lp + 64 * i);
    if (h->n > 1) __builtin_prefetch(kr__heap_ev(h, 1));
    if (h->n > 2) __builtin_prefetch(kr__heap_ev(h, 2));
}

#endif
