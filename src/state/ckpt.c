/* ckpt.c - full checkpoints: per area, its use count, then (if any chunk is live) its
 * bitmap and the live chunks only. Areas created after a checkpoint are emptied on restore
 * (kept for reuse, so allocation after a rollback lands where it did the first time). */
#include "ckpt.h"
#include <string.h>

static size_t area_bytes(const struct kr__area *ar)
{
    if (!ar->nused) return 4;
    return 4 + (size_t)ar->nwords * 8 + (size_t)ar->nused * kr__arena_class_bytes(ar->cls);
}

struct kr__ckpt *kr__ckpt_take(struct kr__blobs *b, const struct kr__arena *a,
                               const uint64_t words[KR_CKPT_WORDS])
{
    size_t bytes = sizeof(struct kr__ckpt);
    for (uint32_t i = 0; i < a->n; i++) bytes += area_bytes(a->areas[i]);
    struct kr__ckpt *c = kr__blob_get(b, bytes);
    c->bytes = (uint32_t)bytes;
    c->nareas = a->n;
    memcpy(c->words, words, sizeof c->words);
    unsigned char *o = c->data;
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = a->areas[i];
        memcpy(o, &ar->nused, 4);
        o += 4;
        if (!ar->nused) continue;
        memcpy(o, ar->bits, (size_t)ar->nwords * 8);
        o += (size_t)ar->nwords * 8;
        size_t csz = kr__arena_class_bytes(ar->cls);
        for (uint32_t w = 0; w < ar->nwords; w++) {
            for (uint64_t m = ar->bits[w]; m; m &= m - 1) {
                uint32_t idx = w * 64 + (uint32_t)__builtin_ctzll(m);
                memcpy(o, ar->data + (size_t)idx * csz, csz);
                o += csz;
            }
        }
    }
    return c;
}

void kr__ckpt_restore(struct kr__arena *a, const struct kr__ckpt *c,
                      uint64_t words[KR_CKPT_WORDS])
{
    const unsigned char *in = c->data;
    size_t used = 0;
    memcpy(words, c->words, sizeof c->words);
    for (uint32_t i = 0; i < a->n; i++) {
        struct kr__area *ar = a->areas[i];
        uint32_t nused = 0;
        if (i < c->nareas) {
            memcpy(&nused, in, 4);
            in += 4;
        }
        ar->nused = nused;
        if (!nused) {
            memset(ar->bits, 0, (size_t)ar->nwords * 8);
            continue;
        }
        memcpy(ar->bits, in, (size_t)ar->nwords * 8);
        in += (size_t)ar->nwords * 8;
        size_t csz = kr__arena_class_bytes(ar->cls);
        used += (size_t)nused * csz;
        for (uint32_t w = 0; w < ar->nwords; w++) {
            for (uint64_t m = ar->bits[w]; m; m &= m - 1) {
                uint32_t idx = w * 64 + (uint32_t)__builtin_ctzll(m);
                memcpy(ar->data + (size_t)idx * csz, in, csz);
                in += csz;
            }
        }
    }
    a->used = used;
}
