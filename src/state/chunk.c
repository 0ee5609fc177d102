/* chunk.c - --state chunk: the model marks what it writes (kr_mark_write, KR_MODEL_MARKS_WRITES)
 * and each area keeps a dirty bit per chunk; an incremental checkpoint saves the dirty live
 * chunks: u32 n, n x {u32 area, bitmap, chunks}. A restore marks each chunk it copies, so
 * walking the chain newest-first takes every chunk from the newest checkpoint holding it. */
#include <string.h>
#include "state/ckpt.h"
#include "state/ckptfmt.h"
#include "state/mode.h"

static void set_bit(uint64_t *b, size_t i) { b[i / 64] |= 1ull << (i % 64); }

static bool any_bits(const uint64_t *a, const uint64_t *b, uint32_t nwords)
{
    for (uint32_t w = 0; w < nwords; w++)
        if (a[w] & b[w]) return true;
    return false;
}

/* Bytes of the chunks selected by sel & and in ar. */
static size_t sel_bytes(const struct kr__area *ar, const uint64_t *sel, const uint64_t *and)
{
    size_t n = 0;
    for (uint32_t w = 0; w < KR_AREA_NWORDS(ar); w++)
        n += (size_t)__builtin_popcountll(sel[w] & and[w]);
    return n * kr__arena_class_bytes(ar->cls);
}

/* An area with a live chunk written since the last checkpoint. */
static bool written(const struct kr__area *ar)
{
    return ar->nused && any_bits(KR_AREA_DIRTY(ar), ar->bits, KR_AREA_NWORDS(ar));
}

static size_t chunk_size(const struct kr__arena *a)
{
    size_t bytes = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        if (written(ar))
            bytes += 4 + kr__ckpt_bitmap_bytes(ar) + sel_bytes(ar, KR_AREA_DIRTY(ar), ar->bits);
    }
    return bytes;
}

static void chunk_write(const struct kr__arena *a, unsigned char *o)
{
    unsigned char *count = o;
    o += 4;
    uint32_t n = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        if (!written(ar)) continue;
        const uint64_t *d = KR_AREA_DIRTY(ar);
        kr__ckpt_put32(&o, i);
        for (uint32_t w = 0; w < KR_AREA_NWORDS(ar); w++) {
            uint64_t sel = d[w] & ar->bits[w];
            kr__ckpt_put(&o, &sel, 8);
        }
        size_t csz = kr__arena_class_bytes(ar->cls);
        for (uint32_t w = 0; w < KR_AREA_NWORDS(ar); w++)
            for (uint64_t m = d[w] & ar->bits[w]; m; m &= m - 1) {
                uint32_t idx = w * 64 + (uint32_t)__builtin_ctzll(m);
                kr__ckpt_put(&o, ar->data + (size_t)idx * csz, csz);
            }
        n++;
    }
    memcpy(count, &n, 4);
}

static void chunk_apply(struct kr__arena *a, const unsigned char *in)
{
    for (uint32_t n = kr__ckpt_get32(&in); n; n--) {
        struct kr__area *ar = kr__arena_area(a, kr__ckpt_get32(&in));
        in = kr__ckpt_apply_chunks(a, ar, in, false);
    }
}

static void chunk_redirty(struct kr__arena *a, const unsigned char *in)
{
    for (uint32_t n = kr__ckpt_get32(&in); n; n--) {
        struct kr__area *ar = kr__arena_area(a, kr__ckpt_get32(&in));
        uint64_t *d = KR_AREA_DIRTY(ar);
        size_t cnt = 0;
        for (uint32_t w = 0; w < KR_AREA_NWORDS(ar); w++) {
            uint64_t m;
            memcpy(&m, in + (size_t)w * 8, 8);
            d[w] |= m;
            cnt += (size_t)__builtin_popcountll(m);
        }
        in += kr__ckpt_bitmap_bytes(ar) + cnt * kr__arena_class_bytes(ar->cls);
    }
}

static void chunk_copy(struct kr__arena *a, struct kr__area *ar, uint32_t idx,
                       const unsigned char *src)
{
    (void)a;
    if (kr__ckpt_bit(KR_AREA_MARK(ar), idx)) return;
    set_bit(KR_AREA_MARK(ar), idx);
    size_t csz = kr__arena_class_bytes(ar->cls);
    memcpy(ar->data + (size_t)idx * csz, src, csz);
}

static void chunk_restart(struct kr__arena *a)
{
    for (uint32_t i = 0; i < a->n; i++) {
        struct kr__area *ar = kr__arena_area(a, i);
        memset(KR_AREA_DIRTY(ar), 0, kr__ckpt_bitmap_bytes(ar));
    }
}

static void chunk_unmark(struct kr__arena *a)
{
    for (uint32_t i = 0; i < a->n; i++) {
        struct kr__area *ar = kr__arena_area(a, i);
        memset(KR_AREA_MARK(ar), 0, kr__ckpt_bitmap_bytes(ar));
    }
}

static const struct kr__track_ops chunk_track = {
    .size = chunk_size, .write = chunk_write, .apply = chunk_apply, .redirty = chunk_redirty,
    .copy_chunk = chunk_copy, .restart = chunk_restart, .restore_begin = chunk_unmark,
};

const struct kr__state_ops kr__state_chunk = {
    .name = "chunk", .id = KR_STATE_CHUNK, .region = true, .incremental = true, .marks = true,
    .track = &chunk_track,
};

/* Whether chunk idx of ar takes part in the comparison: live, and (unmarked) not marked
 * written. */
static bool compared(const struct kr__area *ar, uint32_t idx, bool unmarked)
{
    return kr__ckpt_bit(ar->bits, idx) && !(unmarked && kr__ckpt_bit(KR_AREA_DIRTY(ar), idx));
}

/* Whether n bytes at now differ from the saved ones: *off, the first that does. */
static bool differs(const char *now, const unsigned char *saved, size_t n, size_t *off)
{
    for (size_t k = 0; k < n; k++)
        if ((unsigned char)now[k] != saved[k]) {
            *off = k;
            return true;
        }
    return false;
}

void *kr__ckpt_first_change(const struct kr__arena *a, const struct kr__ckpt *c,
                            bool unmarked, size_t *off, size_t *size)
{
    const unsigned char *in = c->data;
    for (uint32_t i = 0; i < c->nareas; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        if (!kr__ckpt_get32(&in)) continue;
        struct kr__ckpt_saved it;
        uint32_t idx;
        kr__ckpt_saved_begin(&it, ar, in);
        while (kr__ckpt_saved_next(&it, &idx)) {
            const char *now = ar->data + (size_t)idx * it.csz;
            if (!compared(ar, idx, unmarked)) continue;
            if (differs(now, it.data, it.csz, off)) {
                *size = it.csz;
                return (void *)now;
            }
        }
        in = it.data;
    }
    return NULL;
}
