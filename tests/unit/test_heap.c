/* test_heap.c - the event heap pops in (ts, gen, src, seq) order, including ties, against
 * a sorted reference over random workloads with interleaved push and pop. */
#include "check.h"
#include "queue/calq.h"
#include "queue/heap.h"

static struct kr__ev evs[20000];

static int cmp(const void *a, const void *b)
{
    return kr__key_cmp(&(*(struct kr__ev *const *)a)->k, &(*(struct kr__ev *const *)b)->k);
}

int main(void)
{
    struct kr__heap h;
    kr__heap_init(&h);
    uint64_t x = 12345;
    for (int round = 0; round < 4; round++) {
        size_t n = 5000u * (size_t)(round + 1);
        struct kr__ev *ref[20000];
        for (size_t i = 0; i < n; i++) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            evs[i].k.ts = (double)((x >> 33) % 50); /* many ties on ts */
            evs[i].k.gen = (uint32_t)((x >> 20) % 3);
            evs[i].k.src = (x >> 10) % 7;
            evs[i].k.seq = i;
            ref[i] = &evs[i];
            kr__heap_push(&h, &evs[i]);
        }
        qsort(ref, n, sizeof ref[0], cmp);
        for (size_t i = 0; i < n; i++) {
            struct kr__ev *e = kr__heap_pop(&h);
            CHECK(e == ref[i]);
        }
        CHECK(kr__heap_pop(&h) == NULL);
        CHECK(h.n == 0);
    }
    /* interleaved: popped keys never decrease when pushes are never below the last pop */
    double last = 0;
    size_t used = 0;
    for (int i = 0; i < 100000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        if ((x >> 40) % 3 != 0 && used < 20000) {
            struct kr__ev *e = &evs[used++];
            e->k.ts = last + (double)((x >> 20) % 1000) / 100.0;
            e->k.seq = (uint64_t)i;
            kr__heap_push(&h, e);
        } else if (h.n) {
            struct kr__ev *e = kr__heap_pop(&h);
            CHECK(e->k.ts >= last);
            last = e->k.ts;
        }
    }
    kr__heap_destroy(&h);

    /* the calendar queue pops in exactly the heap's order, under the same workloads */
    struct kr__calq q;
    kr__calq_init(&q);
    kr__heap_init(&h);
    last = 0;
    used = 0;
    for (int i = 0; i < 200000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        if ((x >> 40) % 5 < 3 && used < 20000) {
            struct kr__ev *e = &evs[used++];
            e->k.ts = last + (double)((x >> 20) % 1000) / ((x >> 50) % 2 ? 100.0 : 10000.0);
            if ((x >> 30) % 11 == 0) e->k.ts = last > 5 ? last - 5 : 0; /* as a rollback does */
            e->k.gen = (uint32_t)((x >> 12) % 2);
            e->k.seq = (uint64_t)i;
            kr__heap_push(&h, e);
            kr__calq_push(&q, e);
        } else if (h.n) {
            struct kr__ev *a = kr__heap_pop(&h), *b = kr__calq_pop(&q);
            CHECK(a == b);
            last = a->k.ts;
        }
        if (used == 20000 && h.n == 0) used = 0;
    }
    while (h.n) CHECK(kr__heap_pop(&h) == kr__calq_pop(&q));
    CHECK(kr__calq_pop(&q) == NULL);
    kr__calq_destroy(&q);
    kr__heap_destroy(&h);
    return check_done("heap");
}
