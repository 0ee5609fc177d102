/* ckptfmt.h - the cursor, bitmap and saved-chunk helpers of the checkpoint format
 * (ckpt.c), shared with the modes' own parts of it (chunk.c, page.c). Internal to state/. */
#ifndef KR_STATE_CKPTFMT_H
#define KR_STATE_CKPTFMT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include "state/arena.h"

static inline size_t kr__ckpt_bitmap_bytes(const struct kr__area *ar)
{
    return (size_t)KR_AREA_NWORDS(ar) * 8;
}

/* Output cursor. */
static inline void kr__ckpt_put(unsigned char **o, const void *p, size_t n)
{
    memcpy(*o, p, n);
    *o += n;
}

static inline void kr__ckpt_put32(unsigned char **o, uint32_t v) { kr__ckpt_put(o, &v, 4); }

static inline uint32_t kr__ckpt_get32(const unsigned char **in)
{
    uint32_t v;
    memcpy(&v, *in, 4);
    *in += 4;
    return v;
}

static inline bool kr__ckpt_bit(const uint64_t *b, size_t i) { return b[i / 64] >> (i % 64) & 1; }

/* Walk over a saved chunk record of an area: its bitmap, then the chunks it selects. After
 * the last chunk, `data` is the cursor past the record. */
struct kr__ckpt_saved {
    const unsigned char *bits, *data;
    size_t csz;
    uint32_t w, nwords;
    uint64_t m;
    bool started;
};

static inline void kr__ckpt_saved_begin(struct kr__ckpt_saved *it, const struct kr__area *ar,
                                        const unsigned char *in)
{
    *it = (struct kr__ckpt_saved){ .bits = in, .data = in + kr__ckpt_bitmap_bytes(ar),
                                   .csz = kr__arena_class_bytes(ar->cls),
                                   .nwords = KR_AREA_NWORDS(ar) };
    if (it->nwords) memcpy(&it->m, it->bits, 8);
}

/* The next saved chunk: its index and its saved bytes (it->data). */
static inline bool kr__ckpt_saved_next(struct kr__ckpt_saved *it, uint32_t *idx)
{
    if (it->started) it->data += it->csz;
    it->started = true;
    while (!it->m) {
        if (++it->w >= it->nwords) return false;
        memcpy(&it->m, it->bits + (size_t)it->w * 8, 8);
    }
    *idx = it->w * 64 + (uint32_t)__builtin_ctzll(it->m);
    it->m &= it->m - 1;
    return true;
}

/* Copy a saved chunk record back (only the chunks live now, when only_live: a full
 * checkpoint holds chunks freed since), each through the mode's copy. Returns the cursor
 * after it. */
const unsigned char *kr__ckpt_apply_chunks(struct kr__arena *a, struct kr__area *ar,
                                           const unsigned char *in, bool only_live);

#endif
