/* lp.h - a logical process as the engines see it: the rolled-back words (RNG, send count,
 * state root), its arena, and the bookkeeping each engine keeps per LP. */
#ifndef KR_CORE_LP_H
#define KR_CORE_LP_H

#include <stdbool.h>
#include <stddef.h>
#include "kairos.h"
#include "msg/event.h"
#include "state/arena.h"
#include "state/ckpt.h"
#include "stats/output.h"

struct kr__ult;

/* An LP frozen after a failed speculative event (optimistic): rare, so kept apart. */
struct kr__lp_fail {
    struct kr__ev *parked;        /* events held back while poisoned */
    char *err;                    /* the deferred error message of `poison` */
};

struct kr__lp {
    /* Hot: touched by every event of this LP. The first two cache lines only, so that with a
     * large number of LPs an event costs as few cache misses as possible. */
    uint64_t rng;                 /* rolled back (saved in every checkpoint) */
    uint64_t seq;                 /* rolled back: sends so far, the tie key of the next send */
    void *root;                   /* rolled back: kr_set_state */
    struct kr__ev *head, *tail;   /* optimistic: processed events, oldest first */
    struct kr__ev *first_unc;     /* first processed event not yet committed (NULL: none) */
    struct kr__ev *poison;        /* event that failed speculatively; LP frozen after it */
    uint32_t since_ckpt;          /* events since the last checkpoint */
    uint32_t nkept;               /* committed events still on the processed list */
    bool dirty;                   /* on its thread's to-commit list */
    bool done_init;               /* done() after init */
    bool done_seen;               /* done() has held on committed state */
    bool ckpt_full_next;          /* the next checkpoint must be full (dirty set unknown) */
    bool pages_open;              /* page/buddy: pages left open by safe events (on its
                                   * thread's list of them, tw_close_pages) */
    uint64_t digest;              /* committed history */
    uint64_t committed;
    struct kr__ckpt *base;        /* state before `head` */
    struct kr__ev *ckpt_ev;       /* latest processed event holding a checkpoint */
    struct kr__outvec *out;       /* speculative output not yet committed (NULL: none
                                   * yet; output is rare, and millions of LPs hold one) */
    /* Cold: memory management, errors, rarely used bookkeeping. */
    struct kr__arena arena;
    struct kr__ult *ult;          /* time-sharing: the stack of its preempted event */
    struct kr__lp_fail *fail;     /* optimistic: set with `poison` (kr__lp_fail_of) */
} __attribute__((aligned(64)));

/* Three cache lines an LP (PHOLD at 1 M LPs: 594 -> 530 bytes per LP, from four). */
_Static_assert(sizeof(struct kr__lp) == 192, "an LP is three cache lines");
_Static_assert(offsetof(struct kr__lp, arena) <= 128,
               "keep the hot part of an LP in two cache lines");

static inline size_t kr__lp_out_n(const struct kr__lp *lp)
{
    return lp->out ? lp->out->n : 0;
}

/* Rollback: drop lp's speculative output from key k on. */
static inline void kr__lp_out_drop_from(struct kr__lp *lp, const struct kr__key *k)
{
    if (lp->out) kr__outvec_drop_from(lp->out, k);
}

/* lp's output buffer, made on first use. */
struct kr__outvec *kr__lp_out(struct kr__lp *lp);
/* lp's failure record, made on first use. */
struct kr__lp_fail *kr__lp_fail_of(struct kr__lp *lp);
/* Free both (the LP's run is over, or it is no longer poisoned: fail only). */
void kr__lp_fail_clear(struct kr__lp *lp);

static inline void kr__lp_save_words(const struct kr__lp *lp, uint64_t w[KR_CKPT_WORDS])
{
    w[0] = lp->rng;
    w[1] = lp->seq;
    w[2] = (uint64_t)(uintptr_t)lp->root;
    w[3] = 0; /* spare */
}

static inline void kr__lp_load_words(struct kr__lp *lp, const uint64_t w[KR_CKPT_WORDS])
{
    lp->rng = w[0];
    lp->seq = w[1];
    lp->root = (void *)(uintptr_t)w[2];
}

#endif
