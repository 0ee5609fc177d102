/* timer.h - an LP's pending timers (kr_timer_set, issue 37): the ids of the timers it has
 * set and that have neither run nor been cancelled, in ascending order, in one chunk of the
 * LP's own arena - part of its state, so that every state mode saves and restores it, a
 * snapshot's image keeps it and every engine sees the same list at the same event. The
 * chunk's address is the LP's fourth rolled-back word (core/lp.h), kept outside the LP's
 * full record in an array made by the run's first timer: a model that sets none pays
 * nothing for it. A timer's event carries KR_PAYLOAD_TIMER (state/addrmap.h); it runs only
 * if its id is still in the list when it is reached (kr__timer_dispatch). */
#ifndef KR_CORE_TIMER_H
#define KR_CORE_TIMER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include "msg/event.h"

struct kr__lp;

/* Where each LP's list is: for the LPs [lo, lo + n) of the run in progress, whose records
 * lie lp_bytes apart from lp_mem (indexed by id); `at` is NULL until a timer is set. */
struct kr__timer_index {
    _Atomic(uint64_t *) at;
    const char *lp_mem;
    size_t lp_bytes;
    uint64_t lo, n;
};
extern struct kr__timer_index kr__timers;

/* A run starts (none set) and ends. */
void kr__timers_start(const char *lp_mem, size_t lp_bytes, uint64_t lo, uint64_t n);
void kr__timers_end(void);

/* lp's list as a rolled-back word (0: none), and set from one (a checkpoint, an image). */
static inline uint64_t kr__timers_word(const struct kr__lp *lp)
{
    uint64_t *at = atomic_load_explicit(&kr__timers.at, memory_order_acquire);
    if (__builtin_expect(!at, 1)) return 0;
    return at[((const char *)lp - kr__timers.lp_mem) / kr__timers.lp_bytes - kr__timers.lo];
}
void kr__timers_set_word(struct kr__lp *lp, uint64_t w);

/* In the calling LP's context (kr__ctx): add id (greater than every id in the list; a
 * model error if its arena is full), take it out (false: it was not in), or look. */
void kr__timer_add(uint64_t id);
bool kr__timer_take(uint64_t id);
bool kr__timer_has(uint64_t id);

/* The event to run for e, a timer or a bundle's first member with timers among the members
 * (KR_PAYLOAD_TIMERS_IN): e if it is still pending (it no longer is; a cancelled one is
 * marked KR_PAYLOAD_CANCELLED for the digest and trace), or with bundles the first member
 * that runs, the context's bundle then the members that run (kr_bundle_count); NULL if none
 * does. */
struct kr__ev *kr__timer_dispatch(struct kr__lp *lp, struct kr__ev *e);

/* A timer's id from its event's key (the LP's send count when it was set, + 1: 0 is none). */
static inline uint64_t kr__timer_id(const struct kr__key *k)
{
    return k->seq + 1;
}

#endif
