/* test_pool.c - event pools: classes by payload size, LIFO reuse (the event just freed is the
 * next one handed out: it is hot in cache), no overlap between live events, growth by slabs,
 * 64-byte events without payload in compact pools. */
#include "check.h"
#include "msg/pool.h"

int main(void)
{
    struct kr__pool p;
    kr__pool_init(&p);
    CHECK(kr__pool_class(0) == 0);
    CHECK(kr__pool_class(KR_POOL_SMALL_PAYLOAD) == 0);
    CHECK(kr__pool_class(KR_POOL_SMALL_PAYLOAD + 1) == 1);
    struct kr__ev *mid = kr__pool_get(&p, KR_POOL_SMALL_PAYLOAD + 1);
    CHECK(mid->cls == 1);
    kr__pool_put(&p, mid);
    CHECK(kr__pool_class(KR_PAYLOAD_MAX) == 3);
    struct kr__ev *a = kr__pool_get(&p, 8);
    CHECK(a->cls == 0);
    kr__pool_put(&p, a);
    CHECK(kr__pool_get(&p, 8) == a);
    enum { N = 5000 };
    static struct kr__ev *live[N];
    for (int i = 0; i < N; i++) {
        size_t payload = (size_t)(i % 4) * 300;
        live[i] = kr__pool_get(&p, payload);
        CHECK(live[i]->cls == kr__pool_class(payload));
        memset(live[i]->payload, i & 0xff, payload);
        live[i]->size = (uint32_t)payload;
    }
    for (int i = 0; i < N; i++)
        for (uint32_t j = 0; j < live[i]->size; j++) CHECK(live[i]->payload[j] == (unsigned char)(i & 0xff));
    size_t want = kr__pool_slot_bytes(a->cls); /* (--memory-max counts slots' bytes) */
    for (int i = 0; i < N; i++) want += kr__pool_slot_bytes(live[i]->cls);
    CHECK(kr__pool_in_use(&p) == want);
    for (int i = 0; i < N; i++) kr__pool_put(&p, live[i]);
    kr__pool_put(&p, a);
    CHECK(kr__pool_in_use(&p) == 0);
    size_t bytes = p.bytes;
    for (int i = 0; i < N; i++) live[i] = kr__pool_get(&p, (size_t)(i % 4) * 300);
    CHECK(p.bytes == bytes); /* reuse, no growth */
    kr__pool_destroy(&p);

    /* events freed by another thread go back to their owner, batched */
    struct kr__pool *two = kr__pools_new(2, false);
    static struct kr__ev *mine[3 * KR_POOL_BATCH];
    for (int i = 0; i < 3 * KR_POOL_BATCH; i++) {
        mine[i] = kr__pool_get(&two[0], 8);
        CHECK(mine[i]->pool == 0);
    }
    size_t slab_bytes = two[0].bytes;
    for (int i = 0; i < 3 * KR_POOL_BATCH; i++) kr__pool_put(&two[1], mine[i]); /* remote frees */
    CHECK(two[1].free[0] == NULL);               /* nothing kept by the freeing pool */
    CHECK(atomic_load(&two[0].returned[0]) != NULL); /* full batches already handed over */
    CHECK(atomic_load(&two[0].returned[1]) == NULL); /* (per size class) */
    kr__pool_flush(&two[1]);
    CHECK(atomic_load(&two[0].returned_bytes) == 3 * KR_POOL_BATCH * kr__pool_slot_bytes(0));
    CHECK(kr__pool_in_use(&two[0]) == 0);         /* (all of them freed, if not yet back) */
    while (two[0].free[0]) kr__pool_get(&two[0], 8); /* use up the local free list */
    size_t live0 = kr__pool_in_use(&two[0]);
    for (int i = 0; i < 3 * KR_POOL_BATCH; i++) CHECK(kr__pool_get(&two[0], 8)->pool == 0);
    CHECK(two[0].bytes == slab_bytes);            /* served by reclaimed events, no new slab */
    CHECK(kr__pool_in_use(&two[0]) == live0 + 3 * KR_POOL_BATCH * kr__pool_slot_bytes(0));
    kr__pools_free(two, 2);

    /* compact pools (an engine that uses no event's tail): no payload, one line each */
    struct kr__pool *cp = kr__pools_new(2, true);
    CHECK(kr__ev_has_tail(kr__pool_get(&cp[0], 1)));
    static struct kr__ev *tiny[N];
    for (int i = 0; i < N; i++) {
        tiny[i] = kr__pool_get(&cp[0], 0);
        CHECK(tiny[i]->cls == KR_POOL_TINY && !kr__ev_has_tail(tiny[i]));
        memset(&tiny[i]->k, i & 0xff, offsetof(struct kr__ev, next)); /* (the key, whole) */
        tiny[i]->dest = (kr_lp)i;
    }
    for (int i = 0; i < N; i++) { /* nothing of one overlaps another's first line */
        CHECK(tiny[i]->dest == (kr_lp)i && tiny[i]->cls == KR_POOL_TINY && tiny[i]->pool == 0);
        CHECK(((const unsigned char *)&tiny[i]->k)[31] == (unsigned char)(i & 0xff));
    }
    size_t tiny_bytes = cp[0].bytes;
    CHECK(tiny_bytes < (size_t)N * 96); /* (64 bytes an event, and a partial slab) */
    for (int i = 0; i < N; i++) kr__pool_put(&cp[1], tiny[i]); /* back to its owner, as any */
    kr__pool_flush(&cp[1]);
    CHECK(atomic_load(&cp[0].returned[KR_POOL_TINY]) != NULL);
    for (int i = 0; i < N; i++) CHECK(kr__pool_get(&cp[0], 0)->cls == KR_POOL_TINY);
    CHECK(cp[0].bytes == tiny_bytes);
    kr__pools_free(cp, 2);
    return check_done("pool");
}
