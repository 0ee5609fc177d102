/* recheck.c - see recheck.h. */
#include "recheck.h"
#include <stdlib.h>
#include "../core/digest.h"
#include "../core/error.h"
#include "../state/ckpt.h"

void kr__recheck_init(struct kr__recheck *c)
{
    memset(c, 0, sizeof *c);
    kr__blobs_init(&c->blobs);
}

void kr__recheck_destroy(struct kr__recheck *c)
{
    kr__blobs_destroy(&c->blobs);
    free(c->sent);
    free(c->out);
}

void kr__recheck_capture_send(struct kr__recheck *c, struct kr__ev *e)
{
    if (c->nsent == c->capsent) {
        c->capsent = c->capsent ? c->capsent * 2 : 16;
        c->sent = realloc(c->sent, c->capsent * sizeof *c->sent);
        if (!c->sent) kr__fatal_oom("check buffer", c->capsent * sizeof *c->sent);
    }
    c->sent[c->nsent++] = e;
}

void kr__recheck_capture_text(struct kr__recheck *c, const char *text, size_t len)
{
    if (c->nout + len > c->capout) {
        c->capout = (c->nout + len) * 2;
        c->out = realloc(c->out, c->capout);
        if (!c->out) kr__fatal_oom("check buffer", c->capout);
    }
    memcpy(c->out + c->nout, text, len);
    c->nout += len;
}

/* Fingerprint of one run: the LP's state and words, what it sent, what it printed. */
static uint64_t fingerprint(const struct kr__recheck *c, const struct kr__lp *lp,
                            uint64_t *state_part)
{
    struct kr__alien al = { 0 };
    *state_part = kr__mix(kr__arena_hash(&lp->arena, lp->root, &al), lp->rng);
    if (al.found) kr__alien_report(kr__ctx.run, kr__ctx.id, &al);
    uint64_t h = kr__mix(*state_part, lp->seq);
    for (size_t i = 0; i < c->nsent; i++) {
        const struct kr__ev *e = c->sent[i];
        uint64_t t;
        memcpy(&t, &e->k.ts, sizeof t);
        h = kr__mix(kr__mix(kr__mix(h, e->dest), t), e->type);
        h = kr__mix_bytes(h, e->payload, e->size);
    }
    return c->nout ? kr__mix_bytes(h, c->out, c->nout) : kr__mix(h, 0);
}

static void run_once(struct kr__recheck *c, struct kr__run *r, struct kr__lp *lp, struct kr__ev *e)
{
    c->nsent = 0;
    c->nout = 0;
    kr__run_event(r, lp, e);
    const struct kr__area *ar = kr__arena_overrun(&lp->arena);
    if (ar) /* (before anything reads the heap the write may have broken) */
        kr__model_error("--check: the event wrote past the end of its kr_malloc memory (beyond "
                        "the last %zu-byte block of an area): an index or length off by some; "
                        "such a write corrupts the heap, and another run would crash elsewhere",
                        kr__arena_class_bytes(ar->cls));
}

/* --state chunk: every changed chunk must have been marked, or incremental checkpoints
 * would miss it and a rollback would restore a wrong state. */
static void check_marks(const struct kr__lp *lp, const struct kr__ckpt *before)
{
    size_t off, size;
    void *p = kr__ckpt_unmarked_write(&lp->arena, before, &off, &size);
    if (p)
        kr__model_error("--check: the event wrote byte %zu of the %zu-byte block at %p without "
                        "marking it (--state chunk saves only marked blocks): mark the write "
                        "with kr_touch or KR_WRITE, write through kr_memcpy/kr_memset, or use "
                        "the instrumented build (docs/guide.md)", off, size, p);
}

bool kr__recheck_done(struct kr__run *r, struct kr__lp *lp, struct kr__ev *e)
{
    if (!r->model->done) return false;
    uint64_t before = kr__mix(kr__arena_hash(&lp->arena, lp->root, NULL), lp->rng);
    bool d = kr__run_done(r, lp, e->dest);
    if (kr__mix(kr__arena_hash(&lp->arena, lp->root, NULL), lp->rng) != before) {
        kr__ctx.mode = KR_MODE_DONE;
        kr__model_error("--check: done() changed the LP's state; done() only reads it (it is "
                        "asked after every event, on speculative states too)");
    }
    return d;
}

void kr__recheck_event(struct kr__recheck *c, struct kr__run *r, struct kr__lp *lp, struct kr__ev *e)
{
    uint64_t w[KR_CKPT_WORDS];
    kr__lp_save_words(lp, w);
    struct kr__ckpt *saved = kr__ckpt_take(&c->blobs, &lp->arena, w, NULL, true);
    run_once(c, r, lp, e);
    if (lp->arena.mode == KR_STATE_CHUNK) check_marks(lp, saved);
    uint64_t state1, state2;
    uint64_t first = fingerprint(c, lp, &state1);
    size_t nsent1 = c->nsent, nout1 = c->nout;
    for (size_t i = 0; i < c->nsent; i++) kr__pool_put(kr__ctx.pool, c->sent[i]);
    kr__ckpt_restore(&lp->arena, saved, w);
    kr__lp_load_words(lp, w);
    kr__ckpt_release(&c->blobs, saved);
    run_once(c, r, lp, e);
    if (fingerprint(c, lp, &state2) == first) return;
    const char *what = state1 != state2 ? "left a different state"
                       : nsent1 != c->nsent ? "sent a different number of events"
                       : nout1 != c->nout ? "printed different output"
                       : "sent different events or printed different text";
    kr__model_error("--check: the event is not re-executable: run twice from the same state, it "
                    "%s. Time Warp re-executes events after rollbacks, so this model would "
                    "give wrong results there. Usual causes: global or static variables, "
                    "rand() or the clock instead of kr_random, memory not from kr_malloc", what);
}
