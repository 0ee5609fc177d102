/* test_ckpt.c - checkpoint/restore property test: random heap mutations (alloc, free,
 * realloc-like moves, writes) with checkpoints taken along the way; restoring any earlier
 * checkpoint gives back exactly the bytes and allocation map recorded then, and allocation
 * after a restore behaves as it did the first time. */
#include "check.h"
#include "state/ckpt.h"

enum { SLOTS = 64, STEPS = 400, MAXB = 600 };

struct snap {
    struct kr__ckpt *c;
    unsigned char *ptr[SLOTS];
    size_t size[SLOTS];
    unsigned char bytes[SLOTS][MAXB];
    uint64_t hash;
};

static uint64_t rng = 7;
static uint64_t next(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng >> 33;
}

int main(void)
{
    struct kr__arena a;
    struct kr__blobs b;
    kr__arena_init(&a, 0, KR_STATE_FULL, NULL);
    kr__blobs_init(&b);
    unsigned char *ptr[SLOTS] = { 0 };
    size_t size[SLOTS] = { 0 };
    static struct snap snaps[STEPS / 10];
    int ns = 0, err;
    for (int step = 0; step < STEPS; step++) {
        int s = (int)(next() % SLOTS);
        switch (next() % 4) {
        case 0: /* alloc or free */
            if (ptr[s]) {
                CHECK(kr__arena_free(&a, ptr[s]) == KR_ARENA_OK);
                ptr[s] = NULL;
                size[s] = 0;
            } else {
                size[s] = 1 + next() % MAXB;
                ptr[s] = kr__arena_alloc(&a, size[s], &err);
                CHECK(ptr[s] != NULL);
            }
            break;
        case 1: /* move to a new block, as realloc does */
            if (ptr[s]) {
                size_t n = 1 + next() % MAXB;
                unsigned char *q = kr__arena_alloc(&a, n, &err);
                memcpy(q, ptr[s], n < size[s] ? n : size[s]);
                kr__arena_free(&a, ptr[s]);
                ptr[s] = q;
                size[s] = n;
            }
            break;
        default: /* writes */
            if (ptr[s]) for (int k = 0; k < 8; k++) ptr[s][next() % size[s]] = (unsigned char)next();
            break;
        }
        if (step % 10 == 9) {
            struct snap *sn = &snaps[ns++];
            uint64_t w[KR_CKPT_WORDS] = { (uint64_t)step, 2, 3, 4 };
            sn->c = kr__ckpt_take(&b, &a, w, NULL, true);
            memcpy(sn->ptr, ptr, sizeof ptr);
            memcpy(sn->size, size, sizeof size);
            for (int i = 0; i < SLOTS; i++) if (ptr[i]) memcpy(sn->bytes[i], ptr[i], size[i]);
            sn->hash = kr__arena_hash(&a, NULL, NULL);
        }
    }
    /* restore snapshots in random order and compare byte for byte */
    for (int r = 0; r < 60; r++) {
        struct snap *sn = &snaps[next() % (uint64_t)ns];
        uint64_t w[KR_CKPT_WORDS];
        kr__ckpt_restore(&a, sn->c, w);
        CHECK(w[1] == 2 && w[3] == 4);
        CHECK(kr__arena_hash(&a, NULL, NULL) == sn->hash);
        for (int i = 0; i < SLOTS; i++) {
            if (!sn->ptr[i]) continue;
            CHECK(kr__arena_chunk_size(&a, sn->ptr[i]) >= sn->size[i]);
            CHECK(memcmp(sn->ptr[i], sn->bytes[i], sn->size[i]) == 0);
        }
        /* scribble after restoring: a later restore must undo it too */
        for (int i = 0; i < SLOTS; i++) if (sn->ptr[i]) sn->ptr[i][0] ^= 0xff;
        void *extra = kr__arena_alloc(&a, 100, &err);
        CHECK(extra != NULL);
    }
    for (int i = 0; i < ns; i++) kr__ckpt_release(&b, snaps[i].c);
    CHECK(b.held == 0);
    kr__blobs_destroy(&b);
    kr__arena_destroy(&a);
    return check_done("ckpt");
}
