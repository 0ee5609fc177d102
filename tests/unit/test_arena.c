/* test_arena.c - the per-LP arena: zero-filled chunks of the right class, no overlap, free
 * and reuse, bad frees refused, the limit enforced, and a pointer-independent state hash. */
#include "check.h"
#include "state/arena.h"

int main(void)
{
    struct kr__arena a;
    kr__arena_init(&a, 0, KR_STATE_FULL, NULL);
    int err = 0;
    enum { N = 3000 };
    static unsigned char *p[N];
    static size_t sz[N];
    uint64_t x = 99;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        sz[i] = 1 + (x >> 33) % 3000;
        p[i] = kr__arena_alloc(&a, sz[i], &err);
        CHECK(p[i] != NULL);
        CHECK(((uintptr_t)p[i] & 15) == 0);
        CHECK(kr__arena_chunk_size(&a, p[i]) >= sz[i]);
        for (size_t j = 0; j < sz[i]; j++) CHECK(p[i][j] == 0);
        memset(p[i], (i & 0x7f) + 1, sz[i]);
    }
    for (int i = 0; i < N; i++)
        for (size_t j = 0; j < sz[i]; j++) CHECK(p[i][j] == (unsigned char)((i & 0x7f) + 1));
    for (int i = 0; i < N; i += 2) CHECK(kr__arena_free(&a, p[i]) == KR_ARENA_OK);
    CHECK(kr__arena_free(&a, p[0]) == KR_ARENA_BAD_PTR);      /* double free */
    CHECK(kr__arena_free(&a, p[1] + 1) == KR_ARENA_BAD_PTR);  /* interior pointer */
    int local;
    CHECK(kr__arena_free(&a, &local) == KR_ARENA_BAD_PTR);    /* not arena memory */
    void *again = kr__arena_alloc(&a, sz[0], &err);
    CHECK(again != NULL);
    CHECK(((unsigned char *)again)[0] == 0);                  /* reused chunks are zeroed */
    kr__arena_destroy(&a);

    kr__arena_init(&a, 4096, KR_STATE_FULL, NULL);
    void *q = kr__arena_alloc(&a, 1000, &err);
    CHECK(q != NULL);
    CHECK(kr__arena_alloc(&a, 8000, &err) == NULL && err == KR_ARENA_EXHAUSTED);
    kr__arena_destroy(&a);

    /* an arena of one area (most LPs: one state block) keeps no index block; its area is
     * found, checked for overruns and moved into a block when a second one comes */
    kr__arena_init(&a, 0, KR_STATE_FULL, NULL);
    unsigned char *one = kr__arena_alloc(&a, 32, &err);
    CHECK(one && a.n == 1 && a.cap == 0 && kr__arena_area(&a, 0) == kr__arena_sorted(&a, 0));
    CHECK(kr__area_nchunks(kr__arena_area(&a, 0)) == 1);
    CHECK(kr__arena_chunk_size(&a, one) == 32 && kr__arena_overrun(&a) == NULL);
    one[32] ^= 1;                                             /* one byte past its end */
    CHECK(kr__arena_overrun(&a) == kr__arena_area(&a, 0));
    one[32] ^= 1;
    void *two = kr__arena_alloc(&a, 100, &err);
    CHECK(two && a.n == 2 && a.cap == 2 && kr__arena_area(&a, 0)->data == (char *)one);
    CHECK(kr__arena_chunk_size(&a, one) == 32 && kr__arena_chunk_size(&a, two) == 128);
    CHECK(kr__arena_free(&a, one) == KR_ARENA_OK && kr__arena_overrun(&a) == NULL);
    kr__arena_destroy(&a);

    /* same logical state in two arenas (different addresses) hashes the same */
    struct kr__arena b1, b2;
    kr__arena_init(&b1, 0, KR_STATE_FULL, NULL);
    kr__arena_init(&b2, 0, KR_STATE_FULL, NULL);
    void **r1 = kr__arena_alloc(&b1, 64, &err), **r2 = kr__arena_alloc(&b2, 64, &err);
    r1[0] = kr__arena_alloc(&b1, 32, &err);
    r2[0] = kr__arena_alloc(&b2, 32, &err);
    CHECK(r1[0] != r2[0]);
    CHECK(kr__arena_hash(&b1, r1, NULL) == kr__arena_hash(&b2, r2, NULL));
    ((char *)r2[0])[3] = 1;
    CHECK(kr__arena_hash(&b1, r1, NULL) != kr__arena_hash(&b2, r2, NULL));
    kr__arena_destroy(&b1);
    kr__arena_destroy(&b2);

    /* ...and so does the same state reached with areas created in another order (a rolled-
     * back speculative run may create an area early and leave it empty) */
    kr__arena_init(&b1, 0, KR_STATE_FULL, NULL);
    kr__arena_init(&b2, 0, KR_STATE_FULL, NULL);
    void *p1 = kr__arena_alloc(&b1, 32, &err);
    void *q1 = kr__arena_alloc(&b1, 64, &err);
    void *p2 = kr__arena_alloc(&b2, 32, &err);
    void *extra[8];
    for (int i = 0; i < 8; i++) extra[i] = kr__arena_alloc(&b2, 32, &err); /* more 32-B areas */
    for (int i = 0; i < 8; i++) kr__arena_free(&b2, extra[i]);
    void *q2 = kr__arena_alloc(&b2, 64, &err);
    memset(p1, 1, 32);
    memset(p2, 1, 32);
    memcpy(q1, &p1, sizeof p1); /* a pointer inside the state */
    memcpy(q2, &p2, sizeof p2);
    CHECK(b1.n == 2 && b2.n > 2); /* (b2: more 32-B areas, empty now) */
    CHECK(kr__arena_hash(&b1, q1, NULL) == kr__arena_hash(&b2, q2, NULL));
    kr__arena_destroy(&b1);
    kr__arena_destroy(&b2);

    /* one past the end of an area's last chunk names the same place as the next chunk of
     * the class (which tracked layouts keep in the same area); pointers into the program
     * image hash by what they name, pointers into the C library heap are reported */
    kr__arena_init(&b1, 0, KR_STATE_FULL, NULL);
    kr__arena_init(&b2, 0, KR_STATE_FULL, NULL);
    char *c1[9], *c2[9];
    for (int i = 0; i < 9; i++) c1[i] = kr__arena_alloc(&b1, 16, &err);
    for (int i = 0; i < 9; i++) c2[i] = kr__arena_alloc(&b2, 16, &err);
    int k = 0; /* the last chunk of the first area */
    while (k < 8 && c1[k] + 16 == c1[k + 1]) k++;
    CHECK(b1.n == 2 && k < 8);
    void **h1 = kr__arena_alloc(&b1, 64, &err), **h2 = kr__arena_alloc(&b2, 64, &err);
    h1[0] = c1[k] + 16;
    h2[0] = c2[k + 1];
    h1[1] = h2[1] = (void *)"a literal";
    h1[2] = h2[2] = (void *)(uintptr_t)kr__arena_init;
    struct kr__alien al = { 0 };
    CHECK(kr__arena_hash(&b1, h1, &al) == kr__arena_hash(&b2, h2, NULL) && !al.found);
    void *outside = malloc(64);
    h1[3] = outside;
    kr__arena_hash(&b1, h1, &al);
    CHECK(al.found && al.word == (uintptr_t)outside && al.offset == 24 && al.block == 64);
    free(outside);
    kr__arena_destroy(&b1);
    kr__arena_destroy(&b2);
    return check_done("arena");
}
