/* test_chain.c - property test of checkpoint chains in every state-saving mode, driven the
 * way the optimistic engine drives them: random heap mutations (alloc, free, realloc-like
 * moves, small and multi-page blocks, scattered writes), checkpoints every few steps (full
 * every F, else incremental to the newest), rollbacks to a random kept checkpoint (either
 * kept as the new tip, or dropped after restoring with its changes re-marked dirty, as when
 * an event holding a checkpoint is undone), and fossil trims. After every restore the
 * arena must equal, byte for byte, the reference copy recorded when that checkpoint was
 * taken. In page and buddy modes writes are tracked by the real fault handler, in scan
 * mode by the kernel. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include "check.h"
#include "core/core.h"
#include "state/buddy.h"
#include "state/ckpt.h"

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
    if (a->mode == KR_STATE_CHUNK) kr__arena_mark(a, p, n);
}

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
    if (mode != KR_STATE_FULL && kr__region_init(1, (size_t)64 << 20, mode)) {
        CHECK(mode == KR_STATE_SCAN); /* only the kernel feature may be missing */
        printf("scan mode not available here (%s): skipped\n", strerror(errno));
        return;
    }
    struct kr__seg *seg = kr__region_seg(0);
    memset(&lp, 0, sizeof lp);
    kr__arena_init(a, 0, mode, seg);
    if (mode == KR_STATE_BUDDY) kr__buddy_init(seg);
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
    for (int mode = KR_STATE_FULL; mode <= KR_STATE_SCAN; mode++)
        for (int f = 0; f < 3; f++) run(mode, every[f]);
    return check_done("chain");
}
