/* test_heap.c - the event heap pops in (ts, gen, tie, src, seq) order, including ties,
 * against a sorted reference over random workloads with interleaved push and pop; in both
 * slot layouts, across the switches between them, with key fields wider than the packing
 * (whose ties go by the keys), and after slots are removed in place and the heap rebuilt. */
#include "check.h"
#include "queue/heap.h"

#define NEV 40000
static struct kr__ev evs[NEV];
static struct kr__ev *ref[NEV];
static uint64_t x = 12345;

static uint64_t rnd(void)
{
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x >> 11;
}

static int cmp(const void *a, const void *b)
{
    return kr__key_cmp(&(*(struct kr__ev *const *)a)->k, &(*(struct kr__ev *const *)b)->k);
}

/* Event i's key: `times` distinct timestamps (few: many ties), some fields now and then
 * too wide for a packing of 1000 LPs with destination ties (gen >= 256, seq >= 2^43). */
static void key(size_t i, unsigned times, bool wide)
{
    struct kr__key *k = &evs[i].k;
    k->ts = (double)(rnd() % times);
    k->gen = (uint32_t)(rnd() % 3);
    k->tie = (uint32_t)(rnd() % 5);
    k->src = rnd() % 7;
    k->seq = i;
    if (wide && rnd() % 50 == 0) k->gen = 300;
    if (wide && rnd() % 50 == 0) k->seq = (1ull << 50) + i;
    if (wide && rnd() % 50 == 0) k->src = 5000;
}

/* Push n events, pop them all: the keys' order. */
static void round_trip(struct kr__heap *h, size_t n, unsigned times, bool wide)
{
    for (size_t i = 0; i < n; i++) {
        key(i, times, wide);
        ref[i] = &evs[i];
        kr__heap_push(h, &evs[i]);
    }
    qsort(ref, n, sizeof ref[0], cmp);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) bad += kr__heap_pop(h) != ref[i];
    CHECK(bad == 0);
    CHECK(kr__heap_pop(h) == NULL);
    CHECK(h->n == 0);
}

/* Remove every third slot in place (as migration does), rebuild, pop the rest in order. */
static void filter_rebuild(struct kr__heap *h, size_t n, unsigned times)
{
    for (size_t i = 0; i < n; i++) {
        key(i, times, true);
        kr__heap_push(h, &evs[i]);
    }
    size_t keep = 0, m = 0;
    for (size_t i = 0; i < h->n; i++) {
        struct kr__ev *e = kr__heap_ev(h, i);
        if (e->k.seq % 3 == 0) continue;
        ref[m++] = e;
        kr__heap_move(h, keep++, i);
    }
    h->n = keep;
    kr__heap_rebuild(h);
    qsort(ref, m, sizeof ref[0], cmp);
    size_t bad = 0;
    for (size_t i = 0; i < m; i++) bad += kr__heap_pop(h) != ref[i];
    CHECK(bad == 0);
    CHECK(h->n == 0);
}

int main(void)
{
    struct kr__heap h;
    /* without a packing: plain slots throughout, whatever the ties */
    kr__heap_init(&h);
    for (int round = 0; round < 4; round++) round_trip(&h, 5000u * (size_t)(round + 1), 50, false);
    CHECK(!h.tied);
    kr__heap_destroy(&h);

    /* with one: many ties turn the slots tied (after KR_HEAP_JUDGE pops), none turn them
     * plain again, and every order is the keys' on the way */
    kr__heap_init_keys(&h, 1000, true, false);
    CHECK(!h.tied);
    round_trip(&h, NEV, 20, true);
    CHECK(h.tied);
    filter_rebuild(&h, NEV, 20);
    CHECK(h.tied);
    round_trip(&h, NEV, 1u << 30, true);
    CHECK(!h.tied);
    filter_rebuild(&h, 20000, 1u << 30);
    round_trip(&h, NEV, 3, false);
    CHECK(h.tied);
    kr__heap_destroy(&h);

    /* a packing that cannot hold the key (2^40 LPs with destination ties): plain */
    kr__heap_init_keys(&h, 1ull << 40, true, false);
    round_trip(&h, NEV, 20, false);
    CHECK(!h.tied);
    kr__heap_destroy(&h);

    /* interleaved: popped keys never decrease when pushes are never below the last pop */
    kr__heap_init_keys(&h, 1000, false, false);
    double last = 0;
    size_t used = 0;
    for (int i = 0; i < 100000; i++) {
        if (rnd() % 3 != 0 && used < NEV) {
            struct kr__ev *e = &evs[used++];
            e->k = (struct kr__key){ last + (double)(rnd() % 1000) / 100.0, 0, 0, 0, (uint64_t)i };
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
