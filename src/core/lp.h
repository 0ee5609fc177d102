/* lp.h - a logical process as the engines see it: the rolled-back words (RNG, send count,
 * state root), its arena, and the bookkeeping each engine keeps per LP. */
#ifndef KR_CORE_LP_H
#define KR_CORE_LP_H

#include <stdbool.h>
#include "kairos.h"
#include "../msg/event.h"
#include "../state/arena.h"
#include "../state/ckpt.h"
#include "../stats/output.h"

struct kr__lp {
    /* Saved and restored with every checkpoint (words[] of struct kr__ckpt). */
    uint64_t rng;
    uint64_t seq;          /* sends so far: the tie-break key of the next send */
    void *root;            /* kr_set_state */
    uint64_t spare_;
    struct kr__arena arena;
    /* Optimistic bookkeeping. */
    struct kr__ev *head, *tail;   /* processed events, oldest first */
    struct kr__ev *first_unc;     /* first processed event not yet committed (NULL: none) */
    struct kr__ckpt *base;        /* state before `head` */
    struct kr__ev *poison;        /* event that failed speculatively; LP frozen after it */
    struct kr__ev *parked;        /* events held back while poisoned */
    char *err;                    /* the deferred error message of `poison` */
    uint32_t since_ckpt;
    uint32_t thread;
    /* Committed history. */
    uint64_t digest;
    uint64_t committed;
    struct kr__outvec out;        /* speculative output not yet committed */
    bool done_init;               /* done() after init */
    bool done_seen;               /* done() has held on committed state */
    bool dirty;                   /* on its thread's to-commit list */
    struct kr__key done_key;      /* first committed event after which done() held */
};

static inline void kr__lp_save_words(const struct kr__lp *lp, uint64_t w[KR_CKPT_WORDS])
{
    w[0] = lp->rng;
    w[1] = lp->seq;
    w[2] = (uint64_t)(uintptr_t)lp->root;
    w[3] = 0;
}

static inline void kr__lp_load_words(struct kr__lp *lp, const uint64_t w[KR_CKPT_WORDS])
{
    lp->rng = w[0];
    lp->seq = w[1];
    lp->root = (void *)(uintptr_t)w[2];
}

#endif
