/* test_heap.c - the event heap pops in (ts, gen, src, seq) order, including ties, against
 * a sorted reference over random workloads with interleaved push and pop. */
#include "check.h"
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

    return check_done("heap");
}
