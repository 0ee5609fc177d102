/* inbox.h - a thread's bottom-half inbox: lock-free multi-producer, single-consumer.
 *
 * Producers push with a CAS on the head (a Treiber stack); the owner takes the whole chain
 * with one exchange and reverses it, so the messages of any one producer come out in the
 * order it pushed them (an antimessage never overtakes its message). `bh_min` is the lowest
 * timestamp pushed since the owner last drained: the seam for preemption (check-and-switch).
 */
#ifndef KR_MSG_INBOX_H
#define KR_MSG_INBOX_H

#include <stdatomic.h>
#include <math.h>
#include "event.h"

struct kr__inbox {
    _Alignas(64) _Atomic(struct kr__ev *) head;
    _Atomic uint64_t bh_min;   /* bits of a non-negative double: integer order == time order */
    char pad_[64 - sizeof(void *) - sizeof(uint64_t)];
};

static inline uint64_t kr__time_bits(kr_time t)
{
    uint64_t u;
    memcpy(&u, &t, sizeof u);
    return u;
}

static inline void kr__inbox_init(struct kr__inbox *b)
{
    atomic_init(&b->head, NULL);
    atomic_init(&b->bh_min, kr__time_bits(INFINITY));
}

static inline void kr__inbox_push(struct kr__inbox *b, struct kr__ev *e, kr_time ts)
{
    struct kr__ev *h = atomic_load_explicit(&b->head, memory_order_relaxed);
    do {
        e->next = h;
    } while (!atomic_compare_exchange_weak_explicit(&b->head, &h, e, memory_order_release,
                                                    memory_order_relaxed));
    uint64_t bits = kr__time_bits(ts);
    uint64_t cur = atomic_load_explicit(&b->bh_min, memory_order_relaxed);
    while (bits < cur && !atomic_compare_exchange_weak_explicit(&b->bh_min, &cur, bits,
                                                                memory_order_relaxed,
                                                                memory_order_relaxed)) {
    }
}

/* Take everything pushed so far, oldest first (per producer). NULL when empty. */
static inline struct kr__ev *kr__inbox_drain(struct kr__inbox *b)
{
    if (atomic_load_explicit(&b->head, memory_order_relaxed) == NULL) return NULL;
    atomic_store_explicit(&b->bh_min, kr__time_bits(INFINITY), memory_order_relaxed);
    struct kr__ev *h = atomic_exchange_explicit(&b->head, NULL, memory_order_acquire);
    struct kr__ev *rev = NULL;
    while (h) {
        struct kr__ev *n = h->next;
        h->next = rev;
        rev = h;
        h = n;
    }
    return rev;
}

#endif
