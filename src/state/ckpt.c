/* ckpt.c - full and incremental checkpoints and chain restore (see ckpt.h): the format they
 * share. The mode's part of an incremental one comes from its back end (mode.h).
 *
 * Full:        per area (creation order): u32 nused, [use bitmap, live chunks].
 * Incremental: u32 n, n x {u32 area, u32 nused, [use bitmap]}   areas whose metadata changed
 *              then the mode's record of what was written (chunk.c, page.c)
 * Areas are never destroyed (a rolled-back area is kept, emptied), so an area index means
 * the same area in every checkpoint of the chain. */
#include "state/ckpt.h"
#include <string.h>
#include "state/ckptfmt.h"
#include "state/mode.h"

static const struct kr__track_ops *track(int mode) { return kr__state_ops(mode)->track; }

static size_t full_size(const struct kr__arena *a)
{
    size_t bytes = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        bytes += 4;
        if (ar->nused)
            bytes += kr__ckpt_bitmap_bytes(ar) + (size_t)ar->nused * kr__arena_class_bytes(ar->cls);
    }
    return bytes;
}

static void write_full(const struct kr__arena *a, unsigned char *o)
{
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        kr__ckpt_put32(&o, ar->nused);
        if (!ar->nused) continue;
        kr__ckpt_put(&o, ar->bits, kr__ckpt_bitmap_bytes(ar));
        size_t csz = kr__arena_class_bytes(ar->cls);
        for (uint32_t w = 0; w < KR_AREA_NWORDS(ar); w++)
            for (uint64_t m = ar->bits[w]; m; m &= m - 1) {
                uint32_t idx = w * 64 + (uint32_t)__builtin_ctzll(m);
                kr__ckpt_put(&o, ar->data + (size_t)idx * csz, csz);
            }
    }
}

/* The incremental checkpoint's metadata part, then the mode's record (with its count). */
static size_t incr_size(const struct kr__arena *a, const struct kr__track_ops *t)
{
    size_t bytes = 8;
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        if (ar->flags & KR_AF_META_DIRTY) bytes += 8 + (ar->nused ? kr__ckpt_bitmap_bytes(ar) : 0);
    }
    return bytes + t->size(a);
}

static void write_incr(const struct kr__arena *a, unsigned char *o, const struct kr__track_ops *t)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < a->n; i++) n += (kr__arena_area(a, i)->flags & KR_AF_META_DIRTY) != 0;
    kr__ckpt_put32(&o, n);
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        if (!(ar->flags & KR_AF_META_DIRTY)) continue;
        kr__ckpt_put32(&o, i);
        kr__ckpt_put32(&o, ar->nused);
        if (ar->nused) kr__ckpt_put(&o, ar->bits, kr__ckpt_bitmap_bytes(ar));
    }
    t->write(a, o);
}

/* Dirty tracking restarts: the checkpoint just taken (or restored) is the reference. */
static void restart_tracking(struct kr__arena *a, const struct kr__track_ops *t)
{
    for (uint32_t i = 0; i < a->n; i++)
        kr__arena_area(a, i)->flags &= (uint8_t)~KR_AF_META_DIRTY;
    t->restart(a);
}

/* The checkpoint's bytes (all live blocks, or what changed since prev), then tracking
 * starts over. */
static inline void write_body(struct kr__arena *a, struct kr__ckpt *c,
                              const struct kr__track_ops *t)
{
    if (c->full) write_full(a, c->data);
    else write_incr(a, c->data, t);
    if (t) restart_tracking(a, t);
}

struct kr__ckpt *kr__ckpt_take(struct kr__blobs *b, struct kr__arena *a,
                               const uint64_t words[KR_CKPT_WORDS], struct kr__ckpt *prev,
                               bool full)
{
    const struct kr__state_ops *m = kr__state_ops(a->mode);
    const struct kr__track_ops *t = m->track;
    full = full || !prev || !t;
    if (m->before_take) m->before_take(a->seg); /* (the kernel's bits; buddy's interval) */
    size_t bytes = sizeof(struct kr__ckpt) + (full ? full_size(a) : incr_size(a, t));
    struct kr__ckpt *c = kr__blob_get(b, bytes);
    c->prev = prev;
    c->bytes = bytes;
    c->nareas = a->n;
    c->depth = full ? 0 : (uint16_t)(prev->depth + 1);
    c->full = full;
    c->mode = a->mode;
    memcpy(c->words, words, sizeof c->words);
    write_body(a, c, t);
    return c;
}

/* ---- restore ---- */

static void set_meta(struct kr__area *ar, uint32_t nused, const unsigned char *bits)
{
    ar->flags |= KR_AF_META_MARK;
    ar->nused = nused;
    if (nused) memcpy(ar->bits, bits, kr__ckpt_bitmap_bytes(ar));
    else memset(ar->bits, 0, kr__ckpt_bitmap_bytes(ar));
}

const unsigned char *kr__ckpt_apply_chunks(struct kr__arena *a, struct kr__area *ar,
                                           const unsigned char *in, bool only_live)
{
    const struct kr__track_ops *t = track(a->mode);
    struct kr__ckpt_saved it;
    uint32_t idx;
    kr__ckpt_saved_begin(&it, ar, in);
    while (kr__ckpt_saved_next(&it, &idx)) {
        if (only_live && !kr__ckpt_bit(ar->bits, idx)) continue;
        if (t) t->copy_chunk(a, ar, idx, it.data);
        else memcpy(ar->data + (size_t)idx * it.csz, it.data, it.csz);
    }
    return it.data;
}

static void apply_full(struct kr__arena *a, const struct kr__ckpt *c)
{
    const unsigned char *in = c->data;
    for (uint32_t i = 0; i < c->nareas; i++) {
        struct kr__area *ar = kr__arena_area(a, i);
        uint32_t nused = kr__ckpt_get32(&in);
        if (!(ar->flags & KR_AF_META_MARK)) set_meta(ar, nused, in);
        if (nused) in = kr__ckpt_apply_chunks(a, ar, in, true);
    }
}

static void apply_incr(struct kr__arena *a, const struct kr__ckpt *c)
{
    const unsigned char *in = c->data;
    for (uint32_t n = kr__ckpt_get32(&in); n; n--) {
        struct kr__area *ar = kr__arena_area(a, kr__ckpt_get32(&in));
        uint32_t nused = kr__ckpt_get32(&in);
        if (!(ar->flags & KR_AF_META_MARK)) set_meta(ar, nused, in);
        if (nused) in += kr__ckpt_bitmap_bytes(ar);
    }
    track(c->mode)->apply(a, in);
}

/* c and the increments before it, newest first, down to the full checkpoint they rest on. */
static inline void apply_chain(struct kr__arena *a, const struct kr__ckpt *c)
{
    for (const struct kr__ckpt *x = c; x; x = x->prev) {
        if (x->full) {
            apply_full(a, x);
            return;
        }
        apply_incr(a, x);
    }
}

/* After a restore: an area the checkpoint did not mark was created after it (empty then);
 * the bytes in use, counted again. */
static inline size_t areas_settled(struct kr__arena *a)
{
    size_t used = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        struct kr__area *ar = kr__arena_area(a, i);
        if (!(ar->flags & KR_AF_META_MARK)) {
            ar->nused = 0;
            memset(ar->bits, 0, kr__ckpt_bitmap_bytes(ar));
        }
        used += (size_t)ar->nused * kr__arena_class_bytes(ar->cls);
    }
    return used;
}

void kr__ckpt_restore(struct kr__arena *a, const struct kr__ckpt *c,
                      uint64_t words[KR_CKPT_WORDS])
{
    const struct kr__track_ops *t = track(a->mode);
    memcpy(words, c->words, sizeof c->words);
    for (uint32_t i = 0; i < a->n; i++)
        kr__arena_area(a, i)->flags &= ~(uint32_t)KR_AF_META_MARK;
    if (t) t->restore_begin(a);
    apply_chain(a, c);
    a->used = areas_settled(a);
    if (!t) return;
    if (t->restore_end) t->restore_end(a);
    restart_tracking(a, t);
}

bool kr__ckpt_redirty(struct kr__arena *a, const struct kr__ckpt *c)
{
    if (c->full) return false;
    const unsigned char *in = c->data;
    for (uint32_t n = kr__ckpt_get32(&in); n; n--) {
        struct kr__area *ar = kr__arena_area(a, kr__ckpt_get32(&in));
        ar->flags |= KR_AF_META_DIRTY;
        if (kr__ckpt_get32(&in)) in += kr__ckpt_bitmap_bytes(ar);
    }
    track(c->mode)->redirty(a, in);
    return true;
}
