/* test_chain.c - property test of checkpoint chains in every state-saving mode, driven the
 * way the optimistic engine drives them: random heap mutations (alloc, free, realloc-like
 * moves, small and multi-page blocks, scattered writes), checkpoints every few steps (full
 * every F, else incremental to the newest), rollbacks to a random kept checkpoint (either
 * kept as the new tip, or dropped after restoring with its changes re-marked dirty, as when
 * an event holding a checkpoint is undone), and fossil trims. After every restore the
 * arena must equal, byte for byte, the reference copy recorded when that checkpoint was
 * taken. In page and buddy modes writes are tracked by the real fault handler, in scan
 * mode by the kernel. A stub back end added at run time ("every": incremental checkpoints
 * that save every live chunk, no tracking) passes the same test: a new mode is one file of
 * struct kr__state_ops and struct kr__track_ops (state/mode.h) and one line of the table. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include "check.h"
#include "core/core.h"
#include "state/buddy.h"
#include "state/ckpt.h"
#include "state/ckptfmt.h"

enum { SLOTS = 48, STEPS = 3000, MAXCK = 4096 };

struct ref {
    struct kr__ckpt *c;
    unsigned char *ptr[SLOTS];
    size_t size[SLOTS];
    unsigned char *bytes[SLOTS];
    uint64_t hash;
    uint64_t id;
};

static uint64_t rng = 7;
static uint64_t next(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng >> 33;
}

static struct kr__lp lp;
static struct kr__arena *a = &lp.arena;
static unsigned char *ptr[SLOTS];
static size_t size[SLOTS];
static struct ref refs[MAXCK];
static int nref;
static bool full_next;

static void touch(void *p, size_t n) /* chunk mode: what kr_touch does */
{
    if (kr__arena_marks(a)) kr__arena_mark(a, p, n);
}

/* ---- the stub mode: its record is every area in use, {u32 area, bitmap, live chunks} ---- */

static size_t every_size(const struct kr__arena *x)
{
    size_t bytes = 4;
    for (uint32_t i = 0; i < x->n; i++) {
        const struct kr__area *ar = kr__arena_area(x, i);
        if (ar->nused)
            bytes += 4 + kr__ckpt_bitmap_bytes(ar) + ar->nused * kr__arena_class_bytes(ar->cls);
    }
    return bytes;
}

static void every_write(const struct kr__arena *x, unsigned char *o)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < x->n; i++) n += kr__arena_area(x, i)->nused != 0;
    kr__ckpt_put32(&o, n);
    for (uint32_t i = 0; i < x->n; i++) {
        const struct kr__area *ar = kr__arena_area(x, i);
        if (!ar->nused) continue;
        kr__ckpt_put32(&o, i);
        kr__ckpt_put(&o, ar->bits, kr__ckpt_bitmap_bytes(ar));
        size_t csz = kr__arena_class_bytes(ar->cls);
        for (size_t k = 0; k < kr__area_nchunks(ar); k++)
            if (kr__ckpt_bit(ar->bits, k)) kr__ckpt_put(&o, ar->data + k * csz, csz);
    }
}

static void every_apply(struct kr__arena *x, const unsigned char *in)
{
    for (uint32_t n = kr__ckpt_get32(&in); n; n--) {
        struct kr__area *ar = kr__arena_area(x, kr__ckpt_get32(&in));
        in = kr__ckpt_apply_chunks(x, ar, in, false);
    }
}

static void every_redirty(struct kr__arena *x, const unsigned char *in)
{
    (void)x, (void)in; /* the next checkpoint saves everything anyway */
}

/* A chunk is copied from the newest checkpoint of the chain holding it (the restore walks
 * newest-first): the area's mark bits say which are done. */
static void every_copy(struct kr__arena *x, struct kr__area *ar, uint32_t idx,
                       const unsigned char *src)
{
    (void)x;
    uint64_t *mark = KR_AREA_MARK(ar);
    if (kr__ckpt_bit(mark, idx)) return;
    mark[idx / 64] |= 1ull << (idx % 64);
    size_t csz = kr__arena_class_bytes(ar->cls);
    memcpy(ar->data + (size_t)idx * csz, src, csz);
}

static void every_nothing(struct kr__arena *x) { (void)x; }

static void every_unmark(struct kr__arena *x)
{
    for (uint32_t i = 0; i < x->n; i++) {
        struct kr__area *ar = kr__arena_area(x, i);
        memset(KR_AREA_MARK(ar), 0, kr__ckpt_bitmap_bytes(ar));
    }
}

static const struct kr__track_ops every_track = {
    .size = every_size, .write = every_write, .apply = every_apply, .redirty = every_redirty,
    .copy_chunk = every_copy, .restart = every_nothing, .restore_begin = every_unmark,
};

static const struct kr__state_ops every_mode = {
    .name = "every", .id = KR_STATE_REVERSE + 1, .region = true, .incremental = true,
    .track = &every_track,
};

static size_t random_size(void)
{
    return next() % 8 ? 1 + next() % 700 : 4000 + next() % 20000; /* some span pages */
}

static void mutate(void)
{
    int s = (int)(next() % SLOTS), err;
    switch (next() % 4) {
    case 0:
        if (ptr[s]) {
            CHECK(kr__arena_free(a, ptr[s]) == KR_ARENA_OK);
            ptr[s] = NULL;
        } else {
            size[s] = random_size();
            ptr[s] = kr__arena_alloc(a, size[s], &err);
            CHECK(ptr[s] != NULL);
        }
        break;
    case 1:
        if (ptr[s]) {
            size_t n = random_size();
            unsigned char *q = kr__arena_alloc(a, n, &err);
            CHECK(q != NULL);
            memcpy(q, ptr[s], n < size[s] ? n : size[s]);
            kr__arena_free(a, ptr[s]);
            ptr[s] = q;
            size[s] = n;
        }
        break;
    default:
        if (ptr[s])
            for (int k = 0; k < 6; k++) {
                unsigned char *b = &ptr[s][next() % size[s]];
                touch(b, 1);
                *b = (unsigned char)next();
            }
        break;
    }
}

static void take(struct kr__blobs *b, unsigned F)
{
    struct kr__ckpt *tip = nref ? refs[nref - 1].c : NULL;
    bool full = !tip || full_next || tip->depth + 1u >= F;
    static uint64_t ids;
    uint64_t w[KR_CKPT_WORDS] = { ++ids, 2, 3, 4 };
    struct ref *r = &refs[nref++];
    r->id = ids;
    CHECK(nref < MAXCK);
    r->c = kr__ckpt_take(b, a, w, tip, full);
    full_next = false;
    for (int i = 0; i < SLOTS; i++) {
        r->ptr[i] = ptr[i];
        r->size[i] = size[i];
        r->bytes[i] = ptr[i] ? malloc(size[i]) : NULL;
        if (ptr[i]) memcpy(r->bytes[i], ptr[i], size[i]);
    }
    r->hash = kr__arena_hash(a, NULL, NULL);
}

static void drop(struct kr__blobs *b, int i)
{
    kr__ckpt_release(b, refs[i].c);
    for (int k = 0; k < SLOTS; k++) free(refs[i].bytes[k]);
}

static void verify(const struct ref *r)
{
    CHECK(kr__arena_hash(a, NULL, NULL) == r->hash);
    for (int i = 0; i < SLOTS; i++) {
        if (!r->ptr[i]) continue;
        CHECK(kr__arena_chunk_size(a, r->ptr[i]) >= r->size[i]);
        CHECK(memcmp(r->ptr[i], r->bytes[i], r->size[i]) == 0);
    }
}

/* Roll back to refs[j]: as the new tip, or (drop_it) restored then dropped, refs[j-1]
 * becoming the tip with refs[j]'s changes marked dirty. */
static void rollback(struct kr__blobs *b, int j, bool drop_it)
{
    uint64_t w[KR_CKPT_WORDS];
    kr__ckpt_restore(a, refs[j].c, w);
    CHECK(w[0] == refs[j].id && w[3] == 4);
    verify(&refs[j]);
    memcpy(ptr, refs[j].ptr, sizeof ptr);
    memcpy(size, refs[j].size, sizeof size);
    for (int i = nref - 1; i > j; i--) drop(b, i);
    nref = j + 1;
    if (drop_it) {
        if (!kr__ckpt_redirty(a, refs[j].c)) full_next = true;
        drop(b, j);
        nref = j;
    }
}

/* Fossil collection: the chain from refs[k] back to its full checkpoint stays. */
static void trim(struct kr__blobs *b, int k)
{
    int f = k;
    while (!refs[f].c->full) f--;
    for (int i = 0; i < f; i++) drop(b, i);
    memmove(refs, refs + f, (size_t)(nref - f) * sizeof refs[0]);
    nref -= f;
    refs[0].c->prev = NULL;
}

static void run(int mode, unsigned F)
{
    const struct kr__state_ops *m = kr__state_ops(mode);
    if (m->region && kr__region_init(1, (size_t)64 << 20, m)) {
        CHECK(mode == KR_STATE_SCAN); /* only the kernel feature may be missing */
        printf("scan mode not available here (%s): skipped\n", strerror(errno));
        return;
    }
    struct kr__seg *seg = kr__region_seg(0);
    memset(&lp, 0, sizeof lp);
    kr__arena_init(a, 0, mode, seg);
    if (m->lp_ready) m->lp_ready(seg);
    kr__ctx.lp = &lp; /* page modes: the fault handler accepts writes of the running LP */
    kr__ctx.mode = KR_MODE_EVENT;
    struct kr__blobs b;
    kr__blobs_init(&b);
    memset(ptr, 0, sizeof ptr);
    nref = 0;
    full_next = false;
    int restores = 0;
    for (int step = 0; step < STEPS; step++) {
        mutate();
        if (next() % 4 == 0) take(&b, F);
        if (nref > 1 && next() % 16 == 0) {
            int j = (int)(next() % (uint64_t)nref);
            rollback(&b, j, j > 0 && next() % 2);
            restores++;
        }
        if (nref > 8 && next() % 32 == 0) trim(&b, (int)(next() % (uint64_t)nref));
    }
    CHECK(restores > 50);
    if (seg && seg->tracking && !seg->scan) CHECK(seg->faults > 0);
    for (int i = 0; i < nref; i++) drop(&b, i);
    CHECK(b.held == 0);
    kr__blobs_destroy(&b);
    kr__ctx.lp = NULL;
    kr__ctx.mode = KR_MODE_NONE;
    kr__arena_destroy(a);
    kr__region_destroy();
}

int main(void)
{
    kr__fault_install();
    kr__buddy_calibrate();
    const unsigned every[] = { 1, 3, 10 };
    int stub = kr__state_add(&every_mode);
    CHECK(stub == KR_STATE_REVERSE + 1 && kr__state_ops_find("every") == &every_mode);
    CHECK(kr__state_add(&every_mode) == -1); /* (the same id or name twice) */
    CHECK(strstr(kr__state_mode_names(), "or every") != NULL); /* (what --state's lists) */
    for (int mode = KR_STATE_FULL; mode <= stub; mode++)
        for (int f = 0; f < 3; f++) run(mode, every[f]);
    return check_done("chain");
}
