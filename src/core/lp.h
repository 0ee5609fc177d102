/* lp.h - a logical process as the engines see it: the rolled-back words (RNG, send count,
 * state root), its arena, and the bookkeeping each engine keeps per LP. */
#ifndef KR_CORE_LP_H
#define KR_CORE_LP_H

#include <stdbool.h>
#include <stddef.h>
#include "kairos.h"
#include "core/timer.h"
#include "msg/event.h"
#include "state/arena.h"
#include "state/ckpt.h"
#include "stats/output.h"

struct kr__ult;

/* An LP's record, two cache lines: the one every event touches second, so that an engine's
 * own per-LP line (kr__engine.lp_extra: the optimistic engine's struct tw_lp) follows it
 * directly and the two come in together. */
struct kr__lp {
    /* Cool: memory management (kr_malloc, checkpoints). */
    struct kr__arena arena;
    /* Hot: touched by every event of this LP, on every engine. */
    uint64_t rng;                 /* rolled back (saved in every checkpoint) */
    uint64_t seq;                 /* rolled back: sends so far, the tie key of the next send */
    void *root;                   /* rolled back: kr_set_state */
    uint64_t digest;              /* committed history */
    uint64_t committed;
    struct kr__outvec *out;       /* speculative output not yet committed (NULL: none
                                   * yet; output is rare, and millions of LPs hold one) */
    struct kr__ult *ult;          /* time-sharing: the stack of its preempted event */
    bool done_init;               /* done() after init */
    bool done_seen;               /* done() has held on committed state */
} __attribute__((aligned(64)));

/* Two cache lines an LP (PHOLD at 1 M LPs, sequential: 594 -> 530 bytes per LP from four
 * lines, then 416 -> 352 from three). Its fourth rolled-back word, the list of its pending
 * timers, lives outside it (core/timer.h): no model without timers pays a byte for it. */
_Static_assert(sizeof(struct kr__lp) == 128, "an LP is two cache lines");
_Static_assert(offsetof(struct kr__lp, rng) == 64, "the hot part is the second line");
#define KR_LP_HOT 64              /* offset of the hot line (prefetched per event) */

static inline size_t kr__lp_out_n(const struct kr__lp *lp)
{
    return lp->out ? lp->out->n + lp->out->nval : 0;
}

/* Rollback: drop lp's speculative output from key k on. */
static inline void kr__lp_out_drop_from(struct kr__lp *lp, const struct kr__key *k)
{
    if (lp->out) kr__outvec_drop_from(lp->out, k);
}

/* lp's output buffer, made on first use. */
struct kr__outvec *kr__lp_out(struct kr__lp *lp);

static inline void kr__lp_save_words(const struct kr__lp *lp, uint64_t w[KR_CKPT_WORDS])
{
    w[0] = lp->rng;
    w[1] = lp->seq;
    w[2] = (uint64_t)(uintptr_t)lp->root;
    w[3] = kr__timers_word(lp); /* (0 but in a model that sets timers) */
}

static inline void kr__lp_load_words(struct kr__lp *lp, const uint64_t w[KR_CKPT_WORDS])
{
    lp->rng = w[0];
    lp->seq = w[1];
    lp->root = (void *)(uintptr_t)w[2];
    kr__timers_set_word(lp, w[3]);
}

/* A full checkpoint of lp now, outside any chain (its arena and words), and bringing lp
 * back to a checkpoint: --check's runs from one state, and the swaps that show a query the
 * running LP's state before its event. Both restart the arena's dirty tracking. */
static inline struct kr__ckpt *kr__lp_snapshot(struct kr__blobs *b, struct kr__lp *lp)
{
    uint64_t w[KR_CKPT_WORDS];
    kr__lp_save_words(lp, w);
    return kr__ckpt_take(b, &lp->arena, w, NULL, true);
}

static inline void kr__lp_restore(struct kr__lp *lp, const struct kr__ckpt *c)
{
    uint64_t w[KR_CKPT_WORDS];
    kr__ckpt_restore(&lp->arena, c, w);
    kr__lp_load_words(lp, w);
}

#endif
