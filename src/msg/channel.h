/* channel.h - batched delivery between threads: a single-producer, single-consumer ring of
 * event pointers per (sender, receiver) pair.
 *
 * The sender fills its ring privately and publishes a whole batch with one store of the
 * ring's tail, so one cache-line handoff carries many events. (A shared multi-producer
 * inbox cost two contended CAS per event, one on its head and one on its minimum, and the
 * receiver then chased a linked list whose every node had just been written on another
 * core: on PHOLD with 2 threads a third of all cycles.) A full ring sends further events to
 * a private backlog, in order, so a sender never waits for its receiver. Each pair's events
 * come out in the order they were put: an antimessage never overtakes its message.
 *
 * What is put but not yet published is still the sender's: whoever reasons about messages
 * in flight (GVT, the safe-event clocks, migration) publishes first, and a backlog that did
 * not fit is the sender's to count (kr__chan_backlog_min). The policy of when to publish
 * belongs to the engine; this is the mechanism, and the shape a distributed transport takes
 * too (a batch per destination rank, published as one message). */
#ifndef KR_MSG_CHANNEL_H
#define KR_MSG_CHANNEL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <math.h>
#include "msg/event.h"

/* 4 KiB of pointers per pair: room for a few publish periods of a fast sender. */
#define KR_CHAN_SLOTS 512u

static inline uint64_t kr__time_bits(kr_time t)
{
    uint64_t u;
    memcpy(&u, &t, sizeof u);
    return u;
}

/* Per receiver, the seam for preemption's check-and-switch: while it listens (an event runs
 * on an event stack), the least timestamp published to it (bits of a non-negative double,
 * so integer order is time order). Only then: a sender that lowered it at every publish
 * and a receiver that reset it at every take handed its line back and forth twice per
 * batch (on PHOLD, 2 threads, 6% of all cycles waited on that line). A message published
 * just before the receiver starts listening is not in it: that event is not preempted for
 * it, and the message rolls it back when it is taken in, as always. */
struct kr__arrivals {
    _Alignas(64) _Atomic uint64_t bh_min;
    _Atomic int listening;
    char pad_[64 - sizeof(uint64_t) - sizeof(int)];
};

struct kr__chan {
    _Alignas(64) _Atomic uint64_t tail;   /* producer: slots below this are filled */
    _Alignas(64) _Atomic uint64_t head;   /* consumer: slots below this are taken */
    uint64_t rmask;                       /* (the consumer's copy of `mask`) */
    /* the producer's own line */
    _Alignas(64) uint64_t wtail;          /* filled up to here, published or not */
    uint64_t mask;                        /* slots used - 1 (a power of two - 1) */
    uint64_t head_seen;                   /* `head` when last read */
    struct kr__ev *back, *back_tail;      /* did not fit (in order, through e->next) */
    kr_time pend_min;                     /* least timestamp put since the last publish */
    bool listed;                          /* on the producer's to-publish list */
    struct kr__ev *slot[KR_CHAN_SLOTS];
};

/* `slots`: a power of two up to KR_CHAN_SLOTS (tests use few, to fill rings). */
static inline void kr__chan_init(struct kr__chan *c, unsigned slots)
{
    memset(c, 0, sizeof *c);
    c->mask = c->rmask = slots - 1;
    atomic_init(&c->tail, 0);
    atomic_init(&c->head, 0);
    c->pend_min = INFINITY;
}

static inline void kr__arrivals_init(struct kr__arrivals *a)
{
    atomic_init(&a->bh_min, kr__time_bits(INFINITY));
    atomic_init(&a->listening, 0);
}

static inline bool kr__chan_room(struct kr__chan *c)
{
    if (c->wtail - c->head_seen <= c->mask) return true;
    c->head_seen = atomic_load_explicit(&c->head, memory_order_acquire);
    return c->wtail - c->head_seen <= c->mask;
}

/* Producer: queue e (not visible to the consumer until published). */
static inline void kr__chan_put(struct kr__chan *c, struct kr__ev *e)
{
    if (e->k.ts < c->pend_min) c->pend_min = e->k.ts;
    if (!c->back && kr__chan_room(c)) {
        c->slot[c->wtail++ & c->mask] = e;
        return;
    }
    e->next = NULL;
    if (c->back) c->back_tail->next = e;
    else c->back = e;
    c->back_tail = e;
}

/* What a publish did (flags): made messages visible; kept some back (the ring is full). */
enum { KR_CHAN_NEW = 1, KR_CHAN_KEPT = 2 };

/* Producer: move the backlog into the ring as far as it fits and publish everything in the
 * ring. */
static inline unsigned kr__chan_publish(struct kr__chan *c, struct kr__arrivals *to)
{
    unsigned done = 0;
    while (c->back && kr__chan_room(c)) {
        struct kr__ev *e = c->back;
        c->back = e->next;
        c->slot[c->wtail++ & c->mask] = e;
    }
    if (c->wtail != atomic_load_explicit(&c->tail, memory_order_relaxed)) {
        atomic_store_explicit(&c->tail, c->wtail, memory_order_release);
        done = KR_CHAN_NEW;
        if (atomic_load_explicit(&to->listening, memory_order_relaxed)) {
            uint64_t bits = kr__time_bits(c->pend_min);
            uint64_t cur = atomic_load_explicit(&to->bh_min, memory_order_relaxed);
            while (bits < cur &&
                   !atomic_compare_exchange_weak_explicit(&to->bh_min, &cur, bits,
                                                          memory_order_relaxed,
                                                          memory_order_relaxed)) {
            }
        }
    }
    if (c->back) return done | KR_CHAN_KEPT;
    c->pend_min = INFINITY;
    return done;
}

/* Producer: the least key still in the backlog (INFINITY timestamp when empty). */
static inline struct kr__key kr__chan_backlog_min(const struct kr__chan *c)
{
    struct kr__key m = kr__key_at(INFINITY);
    for (const struct kr__ev *e = c->back; e; e = e->next)
        if (kr__key_lt(&e->k, &m)) m = e->k;
    return m;
}

/* Consumer: take up to `max` published events, oldest first; their slots are free again at
 * once. Returns how many. */
static inline size_t kr__chan_take(struct kr__chan *c, struct kr__ev **out, size_t max)
{
    uint64_t h = atomic_load_explicit(&c->head, memory_order_relaxed);
    uint64_t t = atomic_load_explicit(&c->tail, memory_order_acquire);
    size_t n = t - h < max ? (size_t)(t - h) : max;
    for (size_t i = 0; i < n; i++) out[i] = c->slot[(h + i) & c->rmask];
    if (n) atomic_store_explicit(&c->head, h + n, memory_order_release);
    return n;
}

/* Receiver: listen from now on (on), or stop and forget what was heard (off). */
static inline void kr__arrivals_listen(struct kr__arrivals *a, bool on)
{
    if (!on) atomic_store_explicit(&a->bh_min, kr__time_bits(INFINITY), memory_order_relaxed);
    atomic_store_explicit(&a->listening, on, memory_order_seq_cst);
}

#endif
