/* pool.c - slab refill and teardown for the per-thread event pools (see pool.h). */
#include "msg/pool.h"
#include <stdbool.h>
#include <stdlib.h>
#include "base/grow.h"
#include "base/error.h"

/* Event sizes per class: 96-byte header + payload (class 0: up to 32 bytes of payload in two
 * cache lines; class 3: KR_PAYLOAD_MAX); KR_POOL_TINY: the first line alone. */
_Static_assert(96 + KR_PAYLOAD_MAX <= 1152, "largest pool class must hold KR_PAYLOAD_MAX");
_Static_assert(offsetof(struct kr__ev, ckpt) == 64, "KR_POOL_TINY holds the first line only");
#define SLAB_BYTES (64u * 1024u)

unsigned kr__pool_class(size_t payload)
{
    size_t need = sizeof(struct kr__ev) + payload;
    for (unsigned c = 0; c < KR_POOL_SIZED; c++)
        if (need <= kr__pool_slot_bytes(c)) return c;
    return KR_POOL_SIZED - 1; /* callers check KR_PAYLOAD_MAX before */
}

void kr__pool_init(struct kr__pool *p)
{
    memset(p, 0, sizeof *p);
    p->all = p;
    p->npools = 1;
    for (unsigned c = 0; c < KR_POOL_CLASSES; c++) atomic_init(&p->returned[c], NULL);
    atomic_init(&p->returned_bytes, 0);
}

struct kr__pool *kr__pools_new(unsigned n, bool compact)
{
    struct kr__pool *pools = aligned_alloc(64, n * sizeof *pools);
    if (!pools) kr__fatal_oom("event pools", n * sizeof *pools);
    for (unsigned i = 0; i < n; i++) {
        kr__pool_init(&pools[i]);
        pools[i].id = (uint16_t)i;
        pools[i].all = pools;
        pools[i].npools = n;
        pools[i].compact = compact;
        pools[i].out = calloc((size_t)n * KR_POOL_CLASSES, sizeof *pools[i].out);
        if (!pools[i].out) kr__fatal_oom("event pool batches", n * sizeof *pools[i].out);
    }
    return pools;
}

void kr__pools_free(struct kr__pool *pools, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        free(pools[i].out);
        kr__pool_destroy(&pools[i]);
    }
    free(pools);
}

static void hand_over(struct kr__pool *p, unsigned owner, unsigned cls)
{
    struct kr__pool_batch *b = &p->out[owner * KR_POOL_CLASSES + cls];
    if (!b->n) return;
    struct kr__pool *o = &p->all[owner];
    struct kr__ev *h = atomic_load_explicit(&o->returned[cls], memory_order_relaxed);
    do {
        b->tail->next = h;
    } while (!atomic_compare_exchange_weak_explicit(&o->returned[cls], &h, b->head,
                                                    memory_order_release, memory_order_relaxed));
    atomic_fetch_add_explicit(&o->returned_bytes, b->n * kr__pool_slot_bytes(cls),
                              memory_order_relaxed);
    b->head = b->tail = NULL;
    b->n = 0;
}

void kr__pool_give_back(struct kr__pool *p, struct kr__ev *e)
{
    struct kr__pool_batch *b = &p->out[e->pool * KR_POOL_CLASSES + e->cls];
    e->next = b->head;
    b->head = e;
    if (!b->tail) b->tail = e;
    if (++b->n >= KR_POOL_BATCH) hand_over(p, e->pool, e->cls);
}

void kr__pool_flush(struct kr__pool *p)
{
    for (unsigned o = 0; o < p->npools; o++)
        for (unsigned c = 0; c < KR_POOL_CLASSES; c++) hand_over(p, o, c);
}

/* Class `cls` ran empty: take back what other threads returned of it, whole. True if there
 * was any. */
static bool reclaim(struct kr__pool *p, unsigned cls)
{
    if (!atomic_load_explicit(&p->returned[cls], memory_order_relaxed)) return false;
    p->free[cls] = atomic_exchange_explicit(&p->returned[cls], NULL, memory_order_acquire);
    p->back_bytes += atomic_exchange_explicit(&p->returned_bytes, 0, memory_order_relaxed);
    return true;
}

struct kr__ev *kr__pool_refill(struct kr__pool *p, unsigned cls)
{
    if (reclaim(p, cls)) return p->free[cls];
    size_t sz = kr__pool_slot_bytes(cls);
    size_t slab = SLAB_BYTES > sz * 8 ? SLAB_BYTES : sz * 8;
    char *mem = aligned_alloc(64, slab);
    if (!mem) kr__fatal_oom("event pool slab", slab);
    if (p->nslabs == p->capslabs)
        KR_GROW(p->slabs, p->capslabs, p->nslabs + 1, 16, "event pool index");
    p->slabs[p->nslabs++] = mem;
    p->bytes += slab;
    struct kr__ev *head = NULL;
    for (size_t off = slab / sz; off-- > 0;) {
        struct kr__ev *e = (struct kr__ev *)(mem + off * sz);
        e->cls = (uint8_t)cls;
        e->pool = p->id;
        e->st = KR_EV_FREE;
        e->next = head;
        head = e;
    }
    p->free[cls] = head;
    return head;
}

void kr__pool_destroy(struct kr__pool *p)
{
    for (size_t i = 0; i < p->nslabs; i++) free(p->slabs[i]);
    free(p->slabs);
    memset(p, 0, sizeof *p);
}
