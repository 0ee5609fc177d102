/* event.h - the event record shared by every engine, and its deterministic ordering key.
 *
 * Events are totally ordered by (ts, gen, tie, src, seq). `gen` counts zero-delay hops: an
 * event scheduled at the sender's own timestamp gets the sender's gen + 1, so a child always
 * orders after its parent even at equal time (this is what keeps zero-lookahead models from
 * rolling back forever). `tie` is 0, or with KR_MODEL_BUNDLES the destination (--lps is at
 * most 2^32 - 1): then an LP's events of one (ts, gen) - its bundle - are next to each other
 * in every queue; or with KR_MODEL_TYPE_ORDER the event's type.
 * (src, seq) names the sender LP and its own send count, which is rolled back with its
 * state: the order never depends on timing or on which thread delivered first.
 */
#ifndef KR_MSG_EVENT_H
#define KR_MSG_EVENT_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "kairos.h"

struct kr__key {
    kr_time ts;
    uint32_t gen;
    uint32_t tie;                 /* 0, or the destination (bundles), or the type */
    uint64_t src;
    uint64_t seq;
};

/* Where an event is in its life (struct kr__ev.st). */
enum { KR_EV_FREE, KR_EV_INFLIGHT, KR_EV_PENDING, KR_EV_PROCESSED, KR_EV_CANCELLED, KR_EV_PARKED,
       KR_EV_SUSPENDED, /* preempted mid-event (time-sharing); in the heap to be resumed */
       KR_EV_REMOTE     /* optimistic, across ranks: the sender's copy of an event it sent to
                         * another rank (in its parent's child list, for the antimessage) */ };

/* Flags (struct kr__ev.flags). */
enum {
    KR_EVF_ANTI = 1,       /* an antimessage: `child` is the target event */
    KR_EVF_DONE_AFTER = 2, /* model done() held after this event */
    KR_EVF_ERROR = 4,      /* the model failed inside this event (optimistic: reported at commit) */
    KR_EVF_SPAN = 8,       /* sent with kr_schedule_span: `dur` is the model's, not the lookahead */
    KR_EVF_BARRIER = 16, /* conservative, --barriers events: the completion of an offloaded event */
    KR_EVF_CKPT = 32,      /* optimistic: `ckpt` is set (read from the first line at commit) */
    KR_EVF_REMOTE = 64,    /* optimistic, across ranks: came from (or, KR_EV_REMOTE, went to)
                            * another rank; `rid` names it there */
    KR_EVF_RKIDS = 128,    /* optimistic: its child list starts with KR_EV_REMOTE copies */
};
/* The optimistic engine's second set of flags (struct kr__ev.xflags). */
enum {
    KR_EVX_SENDBACK = 2,   /* --memory-max: a request to the sender of `child` (key k) to roll
                            * back the event that sent it (optimism.c) */
    KR_EVX_LAZY = 1,       /* pending after a rollback, `child` still lists the local sends of
                            * its undone run: kept until it runs again (--cancel lazy) */
    KR_EVX_QUERY = 4,      /* it asked a kr_query: it runs only as the run's least event, in
                            * query mode (optimistic/query.c) */
};

struct kr__ckpt;

struct kr__ev {
    /* First cache line: all that the sequential engine uses of an event, and all that the
     * heap, commit and fossil collection read, so a committed event without payload costs
     * one line when it is cold. */
    struct kr__key k;
    struct kr__ev *next;          /* processed list, inbox chain, free list */
    kr_lp dest;
    uint32_t type;
    uint32_t size;
    uint8_t cls;                  /* pool size class */
    uint8_t st;
    uint8_t flags;
    uint8_t xflags;               /* optimistic: KR_EVX_* */
    uint16_t pool;                /* id of the pool (thread) that owns the memory */
    uint8_t pflags;               /* what the payload holds: KR_PAYLOAD_IMAGE
                                   * (state/addrmap.h) if a word points into the program
                                   * image, named, not hashed as a number; set when sent */
    uint8_t pad2_;
    /* The tail: what the optimistic and conservative engines keep while an event is
     * processed or rolled back. An event without payload on the sequential engine has none:
     * it is a 64-byte slot (KR_POOL_TINY, msg/pool.h), and nothing may touch these there. */
    union {
        struct kr__ckpt *ckpt;    /* state saved just before this event ran (optimistic;
                                   * KR_EVF_CKPT says it is set) */
        uint64_t rid;             /* KR_EVF_REMOTE, until it runs: its remote id */
    };
    union {
        struct kr__ev *prev;      /* optimistic: the LP's processed list */
        kr_time dur;              /* conservative: the event's duration (set when sent) */
    };
    struct kr__ev *child;         /* first event this one sent (or target, for an antimessage) */
    struct kr__ev *sib;           /* next sibling in the sender's child list (sender-owned) */
    unsigned char payload[];      /* `size` bytes, 8-aligned */
};
_Static_assert(offsetof(struct kr__ev, ckpt) == 64, "keep what every engine reads in one line");

static inline int kr__key_cmp(const struct kr__key *a, const struct kr__key *b)
{
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    if (a->gen != b->gen) return a->gen < b->gen ? -1 : 1;
    if (a->tie != b->tie) return a->tie < b->tie ? -1 : 1;
    if (a->src != b->src) return a->src < b->src ? -1 : 1;
    if (a->seq != b->seq) return a->seq < b->seq ? -1 : 1;
    return 0;
}

static inline int kr__key_lt(const struct kr__key *a, const struct kr__key *b)
{
    return kr__key_cmp(a, b) < 0;
}

/* The smallest key at time t: "every event before time t" is key < kr__key_at(t). */
static inline struct kr__key kr__key_at(kr_time t)
{
    struct kr__key k = { t, 0, 0, 0, 0 };
    return k;
}

/* A key after every event's: "all of it" where output moves and marks need a bound. */
static inline struct kr__key kr__key_last(void)
{
    struct kr__key k = { INFINITY, UINT32_MAX, 0, UINT64_MAX, UINT64_MAX };
    return k;
}

/* Bundles (KR_MODEL_BUNDLES): e and x are one bundle - the same LP, time and generation. */
static inline bool kr__ev_same_bundle(const struct kr__ev *e, const struct kr__ev *x)
{
    return e->dest == x->dest && e->k.ts == x->k.ts && e->k.gen == x->k.gen;
}

/* The smallest key of k's bundle: every member's key is at or above it. */
static inline struct kr__key kr__key_bundle_start(const struct kr__key *k)
{
    struct kr__key b = { k->ts, k->gen, k->tie, 0, 0 };
    return b;
}

#endif
