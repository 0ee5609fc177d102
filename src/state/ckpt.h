/* ckpt.h - checkpoints of an LP: its arena plus a few words of engine bookkeeping (RNG, send
 * count, state root). A checkpoint is full (every live chunk) or incremental (only what
 * changed since the previous checkpoint of the chain: area metadata that changed, plus dirty
 * chunks in chunk mode or dirty pages in page/buddy mode). Incremental checkpoints chain
 * back through `prev` to a full one; restore walks that chain newest-first, taking each
 * chunk or page from the newest checkpoint that holds it (the DyMeLoR / Di-DyMeLoR log
 * chain). The engine owns the chain; this module only reads it.
 */
#ifndef KR_STATE_CKPT_H
#define KR_STATE_CKPT_H

#include <stdbool.h>
#include <stdint.h>
#include "state/arena.h"
#include "state/blob.h"

#define KR_CKPT_WORDS 4

struct kr__ckpt {
    struct kr__ckpt *prev;   /* the LP's previous checkpoint: the chain, newest to oldest;
                              * restore follows it only down to a full one */
    uint64_t bytes;          /* whole buffer, header included */
    uint32_t nareas;         /* areas that existed when taken */
    uint16_t depth;          /* incremental checkpoints since the last full one (0: full) */
    uint8_t full;
    uint8_t mode;            /* enum kr__state_mode it was taken in */
    double span;             /* the duration of the event it was taken before: the windows
                              * scheme gives it back when the event is undone (rollback.c) */
    uint64_t words[KR_CKPT_WORDS];
    unsigned char data[];
};

/* Take a checkpoint of `a` now, chained after `prev` (the newest checkpoint, or NULL):
 * full, or incremental to `prev` (full mode and a NULL prev always give a full one). Either
 * way the arena's dirty tracking restarts from here. */
struct kr__ckpt *kr__ckpt_take(struct kr__blobs *b, struct kr__arena *a,
                               const uint64_t words[KR_CKPT_WORDS], struct kr__ckpt *prev,
                               bool full);
/* Bring `a` back to the state of `c` (walking its chain). Dirty tracking restarts clean. */
void kr__ckpt_restore(struct kr__arena *a, const struct kr__ckpt *c,
                      uint64_t words[KR_CKPT_WORDS]);
/* After restoring to `c` when `c` itself is being dropped (its event was undone) and
 * c->prev stays the chain's newest: mark dirty what c changed relative to c->prev, so the
 * next checkpoint, incremental to c->prev, is complete. False if c is full: the next
 * checkpoint must then be full. */
bool kr__ckpt_redirty(struct kr__arena *a, const struct kr__ckpt *c);
/* --check: a chunk live both in full checkpoint c and now whose bytes changed - in chunk
 * mode with `unmarked`, one not marked written (the arena's marks are read only then).
 * Returns its address (and the first changed offset and chunk size), or NULL if there is
 * none (with `unmarked`: every change was marked). */
void *kr__ckpt_first_change(const struct kr__arena *a, const struct kr__ckpt *c,
                            bool unmarked, size_t *off, size_t *size);
static inline void kr__ckpt_release(struct kr__blobs *b, struct kr__ckpt *c)
{
    kr__blob_put(b, c, c->bytes);
}

#endif
