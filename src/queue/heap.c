/* heap.c - growth, teardown, the choice of slot layout and the tied slots of the event heap
 * (the operations on plain slots are inline in heap.h). */
#include "queue/heap.h"
#include <stdlib.h>
#include "base/grow.h"
#include "base/error.h"

void kr__heap_init(struct kr__heap *h)
{
    *h = (struct kr__heap){ .size = sizeof(struct kr__heap_slot), .left = KR_HEAP_LOOK };
}

/* Bits to write x in. */
static unsigned width(uint64_t x)
{
    return x ? 64 - (unsigned)__builtin_clzll(x) : 0;
}

/* Widths: a sender's id takes what the run's LP count needs, a tie the same (destinations)
 * or a byte (types), a generation a byte (zero-delay chains are short), and the sender's
 * sequence number the rest - 40 bits or more up to a million LPs without bundles. A field
 * outside its width (a longer chain, a 2^40th send) sends that slot's ties to the keys; a
 * run whose widths do not fit at all (billions of LPs) keeps plain slots. */
void kr__heap_init_keys(struct kr__heap *h, uint64_t lps, bool tie_dest, bool tie_type)
{
    kr__heap_init(h);
    unsigned src = width(lps ? lps - 1 : 0);
    unsigned tie = tie_dest ? src : tie_type ? 8 : 0;
    unsigned gen = 8;
    if (src + tie + gen > 63 - 16) return;
    const unsigned bits[4] = { 63 - src - tie - gen, src, tie, gen };
    for (unsigned i = 0, at = 0; i < 4; at += bits[i], i++) {
        h->bits[i] = (uint8_t)bits[i];
        h->shift[i] = (uint8_t)at;
    }
    h->can_tie = true;
}

/* The key after its time in 63 bits, ordered as the key: its fields side by side, each in
 * the width the run gave it; KR_HEAP_TB_NONE where one is wider. */
static inline uint64_t kr__heap_tb(const struct kr__heap *h, const struct kr__key *k)
{
    uint64_t over = (k->seq >> h->bits[0]) | (k->src >> h->bits[1]) |
                    ((uint64_t)k->tie >> h->bits[2]) | ((uint64_t)k->gen >> h->bits[3]);
    if (__builtin_expect(over != 0, 0)) return KR_HEAP_TB_NONE;
    return k->seq | k->src << h->shift[1] | (uint64_t)k->tie << h->shift[2] |
           (uint64_t)k->gen << h->shift[3];
}

/* Tied slots: a tie by the packed rests where both fit - two packings differ first where
 * the keys do, so they order as the keys - else by the keys. */
static inline int kr__tslot_lt(const struct kr__heap_tslot *x, const struct kr__heap_tslot *y)
{
    if (x->ts != y->ts) return x->ts < y->ts;
    if (__builtin_expect((x->tb != KR_HEAP_TB_NONE) & (y->tb != KR_HEAP_TB_NONE), 1))
        return x->tb < y->tb;
    return kr__key_lt(&x->e->k, &y->e->k);
}

void kr__heap_push_tied(struct kr__heap *h, struct kr__ev *e)
{
    struct kr__heap_tslot *a = h->a, s = { e->k.ts, e, kr__heap_tb(h, &e->k) };
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) >> 1;
        if (!kr__tslot_lt(&s, &a[p])) break;
        a[i] = a[p];
        i = p;
    }
    a[i] = s;
}

/* (in byte offsets: a child's is twice its parent's plus a slot, where indices would cost
 * a multiply by 24 a level) */
static inline void kr__heap_sift_tied(struct kr__heap *h, size_t i, struct kr__heap_tslot x)
{
    const size_t S = sizeof(struct kr__heap_tslot);
    char *a = h->a;
    const size_t end = h->n * S;
    size_t at = i * S;
    for (;;) {
        size_t c = 2 * at + S;
        if (c >= end) break;
        const struct kr__heap_tslot *p = (const struct kr__heap_tslot *)(a + c);
        c += (size_t)(c + S < end && kr__tslot_lt(p + 1, p)) * S;
        p = (const struct kr__heap_tslot *)(a + c);
        if (!kr__tslot_lt(p, &x)) break;
        *(struct kr__heap_tslot *)(a + at) = *p;
        at = c;
    }
    *(struct kr__heap_tslot *)(a + at) = x;
}

struct kr__ev *kr__heap_pop_tied(struct kr__heap *h)
{
    struct kr__heap_tslot *a = h->a;
    struct kr__ev *top = a[0].e;
    if (--h->n) kr__heap_sift_tied(h, 0, a[h->n]);
    return top;
}

void kr__heap_grow(struct kr__heap *h)
{
    h->a = kr__grow(h->a, &h->cap, h->cap + 1, h->size, 1024, "event heap");
}

void kr__heap_destroy(struct kr__heap *h)
{
    free(h->a);
    kr__heap_init(h);
}

void kr__heap_rebuild(struct kr__heap *h)
{
    for (size_t i = h->n / 2; i-- > 0;) {
        if (h->tied)
            kr__heap_sift_tied(h, i, ((struct kr__heap_tslot *)h->a)[i]);
        else
            kr__heap_sift_plain(h, i, ((struct kr__heap_slot *)h->a)[i]);
    }
}

/* Plain slots to tied ones, in place from the last (a tied slot i covers plain slots i
 * and up, all read before it is written). The order is the same. */
static void to_tied(struct kr__heap *h)
{
    void *a = realloc(h->a, (h->cap ? h->cap : 1) * sizeof(struct kr__heap_tslot));
    if (!a) return; /* (plain slots are slower here, not wrong) */
    struct kr__heap_slot *p = a;
    struct kr__heap_tslot *t = a;
    for (size_t i = h->n; i-- > 0;) {
        struct kr__heap_slot s = p[i];
        t[i] = (struct kr__heap_tslot){ s.ts, s.e, kr__heap_tb(h, &s.e->k) };
    }
    h->a = a;
    h->size = sizeof *t;
    h->tied = true;
}

/* ...and back, from the first (a plain slot i covers tied slots i and below). */
static void to_plain(struct kr__heap *h)
{
    struct kr__heap_slot *p = h->a;
    const struct kr__heap_tslot *t = h->a;
    for (size_t i = 0; i < h->n; i++) {
        struct kr__heap_tslot s = t[i];
        p[i] = (struct kr__heap_slot){ s.ts, s.e };
    }
    h->cap = h->cap * sizeof *t / sizeof *p;
    h->size = sizeof *p;
    h->tied = false;
}

/* A look at the top: does a child have its time? Looking every KR_HEAP_LOOK pops costs a
 * pop a countdown, where counting the ties in the sift cost PHOLD-std 18 instructions an
 * event, and at each pop 12 (bench/RESULTS.md, session 45).
 * Tied slots once 12 looks of 16 saw a tie, plain again at 2 or fewer: life's top ties at
 * nearly every look (its pops met 15-18 ties each), PHOLD's, seir's, queueing's,
 * airport's and pcs's at none (none met), commo's rarely (0.07 a pop). */
void kr__heap_judge(struct kr__heap *h)
{
    h->left = KR_HEAP_LOOK;
    kr_time t = kr__heap_ts(h, 0);
    h->tied_looks += (h->n > 1 && kr__heap_ts(h, 1) == t) || (h->n > 2 && kr__heap_ts(h, 2) == t);
    if (++h->looks < KR_HEAP_LOOKS) return;
    if (!h->tied && h->can_tie && h->tied_looks >= 12)
        to_tied(h);
    else if (h->tied && h->tied_looks <= 2)
        to_plain(h);
    h->looks = h->tied_looks = 0;
}
