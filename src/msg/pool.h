/* pool.h - per-thread event pools: size-classed slabs, last-in-first-out free lists.
 *
 * No locks and no malloc per event: a thread takes events from its own pool and puts its
 * own events back there. An event freed by another thread goes back to its owner, in
 * batches: the freeing thread chains up to KR_POOL_BATCH of them per size class and hands
 * the chain over with one CAS onto the owner's `returned` stack of that class; when a class
 * runs empty, the owner takes that stack back whole as its free list before it would grow
 * (without walking it: every event there was last written on another core, and a walk
 * is one cache miss after another - measured 11% of PHOLD's cycles on 2 threads).
 * (Freeing into the freeing thread's pool instead lets memory drift from one pool to
 * another without bound under asymmetric traffic: measured +500k events per 10 M on PHOLD
 * with 2 threads; freeing a remote event into the receiver's pool was also measured for
 * speed on PHOLD-std, 2 threads: no gain.) */
#ifndef KR_MSG_POOL_H
#define KR_MSG_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include "msg/event.h"

#include <stdatomic.h>

#define KR_POOL_CLASSES 5
#define KR_POOL_SIZED 4            /* classes 0..3 by payload size; then KR_POOL_TINY */
#define KR_POOL_TINY 4             /* 64 bytes: no tail, no payload (pools of engines that
                                    * use no tail, struct kr__pool.compact) */
#define KR_POOL_BATCH 64
#define KR_POOL_SMALL_EVENT 128u   /* class 0: the common event fits two cache lines */
/* Largest payload of a class-0 event. */
#define KR_POOL_SMALL_PAYLOAD (KR_POOL_SMALL_EVENT - sizeof(struct kr__ev))
_Static_assert(sizeof(struct kr__ev) == 96, "event header layout changed: check pool classes");

struct kr__pool_batch {
    struct kr__ev *head, *tail;
    unsigned n;
};

struct kr__pool {
    struct kr__ev *free[KR_POOL_CLASSES];
    uint16_t id;
    bool compact;          /* events without payload take a KR_POOL_TINY slot (the engine
                            * uses no event's tail: kr__engine.compact_events) */
    struct kr__pool *all;  /* every pool of the run, indexed by id */
    unsigned npools;
    struct kr__pool_batch *out;   /* per owner and class: events of other pools freed here */
    void **slabs;          /* every slab, for teardown */
    size_t nslabs, capslabs;
    size_t bytes;          /* slab bytes held */
    /* Own events handed out less those put back here, per class, and the bytes of those
     * that came back from other threads (--memory-max: kr__pool_in_use; exact once the
     * others have flushed what they freed). A count per class, not a byte sum, keeps a get
     * and a put at one increment each: an event's bytes are its class's. */
    size_t live_n[KR_POOL_CLASSES];
    size_t back_bytes;
    _Alignas(64) _Atomic(struct kr__ev *) returned[KR_POOL_CLASSES]; /* from other threads */
    _Atomic size_t returned_bytes;
    char pad_[64 - KR_POOL_CLASSES * sizeof(void *) - sizeof(size_t)];
};

/* Pools of a run: `n` pools in one 64-byte aligned array (free with kr__pools_free);
 * `compact`: for an engine that uses no event's tail. */
struct kr__pool *kr__pools_new(unsigned n, bool compact);
void kr__pools_free(struct kr__pool *pools, unsigned n);
void kr__pool_init(struct kr__pool *p);
void kr__pool_give_back(struct kr__pool *p, struct kr__ev *e);
/* Hand every pending batch back to its owner (at the end of a thread's run). */
void kr__pool_flush(struct kr__pool *p);
void kr__pool_destroy(struct kr__pool *p);
struct kr__ev *kr__pool_refill(struct kr__pool *p, unsigned cls);
unsigned kr__pool_class(size_t payload);

/* Bytes of a slot of class c. */
static inline size_t kr__pool_slot_bytes(unsigned c)
{
    static const size_t bytes[KR_POOL_CLASSES] = { KR_POOL_SMALL_EVENT, 256, 512, 1152, 64 };
    return bytes[c];
}

/* Bytes of p's events in use, less those other threads gave back (p's own thread only). */
static inline size_t kr__pool_in_use(struct kr__pool *p)
{
    size_t out = 0;
    for (unsigned c = 0; c < KR_POOL_CLASSES; c++) out += p->live_n[c] * kr__pool_slot_bytes(c);
    size_t back = p->back_bytes + atomic_load_explicit(&p->returned_bytes, memory_order_relaxed);
    return out > back ? out - back : 0;
}

static inline struct kr__ev *kr__pool_get(struct kr__pool *p, size_t payload)
{
    unsigned c = payload > KR_POOL_SMALL_PAYLOAD ? kr__pool_class(payload)
                 : payload == 0 && p->compact ? KR_POOL_TINY : 0;
    struct kr__ev *e = p->free[c];
    if (__builtin_expect(e == NULL, 0)) e = kr__pool_refill(p, c);
    p->free[c] = e->next;
    /* (the next one may come back from another core: start fetching it for writing) */
    __builtin_prefetch(e->next, 1);
    p->live_n[c]++;
    return e;
}

/* Does e have the tail of struct kr__ev (ckpt, prev or dur, child, sib)? */
static inline bool kr__ev_has_tail(const struct kr__ev *e)
{
    return e->cls != KR_POOL_TINY;
}

/* A new event's tail, where it has one: no children yet, its duration (conservative). */
static inline void kr__ev_tail_init(struct kr__ev *e, kr_time dur)
{
    if (!kr__ev_has_tail(e)) return;
    e->child = e->sib = NULL;
    e->dur = dur;
    e->ckpt = NULL;
}

/* A tail left unset (kr__ctx.notail): in a debug build, filled with bytes no pointer or
 * duration has, so that a path which reads it before the engine sets it crashes under
 * the sanitizers instead of reading what the slot's last event left there. */
static inline void kr__ev_tail_unset(struct kr__ev *e)
{
#ifndef NDEBUG
    if (kr__ev_has_tail(e)) memset(&e->ckpt, 0xa5, offsetof(struct kr__ev, payload) -
                                                        offsetof(struct kr__ev, ckpt));
#else
    (void)e;
#endif
}

static inline void kr__pool_put(struct kr__pool *p, struct kr__ev *e)
{
    e->st = KR_EV_FREE;
    if (__builtin_expect(e->pool != p->id, 0)) {
        kr__pool_give_back(p, e);
        return;
    }
    e->next = p->free[e->cls];
    p->free[e->cls] = e;
    p->live_n[e->cls]--;
}

#endif
