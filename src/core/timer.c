/* timer.c - an LP's pending timers: the sorted list in its arena (see timer.h). */
#include "core/timer.h"
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "base/error.h"
#include "state/addrmap.h"

struct kr__timer_index kr__timers;

/* The list: a chunk of the LP's arena. */
struct tlist {
    uint32_t n, cap;
    uint64_t id[];
};
#define TLIST_FIRST 6 /* (a 64-byte chunk) */

void kr__timers_start(const char *lp_mem, size_t lp_bytes, uint64_t lo, uint64_t n)
{
    kr__timers_end();
    kr__timers.lp_mem = lp_mem;
    kr__timers.lp_bytes = lp_bytes;
    kr__timers.lo = lo;
    kr__timers.n = n;
}

void kr__timers_end(void)
{
    free(atomic_exchange(&kr__timers.at, NULL));
}

/* The array of lists, made by the first timer of the run: threads that race to make it
 * keep the first one published. */
static uint64_t *index_made(void)
{
    uint64_t *at = atomic_load_explicit(&kr__timers.at, memory_order_acquire);
    if (at) return at;
    uint64_t *mine = calloc(kr__timers.n ? kr__timers.n : 1, sizeof *mine);
    if (!mine) kr__fatal_oom("the LPs' timer lists", kr__timers.n * sizeof *mine);
    if (atomic_compare_exchange_strong_explicit(&kr__timers.at, &at, mine, memory_order_acq_rel,
                                                memory_order_acquire))
        return mine;
    free(mine);
    return at;
}

static uint64_t *slot_of(const struct kr__lp *lp)
{
    uint64_t *at = index_made();
    return &at[((const char *)lp - kr__timers.lp_mem) / kr__timers.lp_bytes - kr__timers.lo];
}

void kr__timers_set_word(struct kr__lp *lp, uint64_t w)
{
    if (!w && !atomic_load_explicit(&kr__timers.at, memory_order_acquire)) return;
    *slot_of(lp) = w;
}

static struct tlist *list_of(const struct kr__lp *lp)
{
    return (struct tlist *)(uintptr_t)kr__timers_word(lp);
}

/* The count and ids [from, from + k) of the list are written by this event (--state
 * chunk: the model's marks and the engine's alike). */
static void written(struct kr__lp *lp, struct tlist *t, uint32_t from, uint32_t k)
{
    if (!kr__arena_marks(&lp->arena)) return;
    kr__arena_mark(&lp->arena, t, sizeof *t);
    if (k) kr__arena_mark(&lp->arena, &t->id[from], k * sizeof t->id[0]);
}

/* Where id lies in t, or t->n if it is not there. */
static uint32_t slot(const struct tlist *t, uint64_t id)
{
    uint32_t lo = 0, hi = t->n;
    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (t->id[m] < id) lo = m + 1;
        else hi = m;
    }
    return lo < t->n && t->id[lo] == id ? lo : t->n;
}

/* The ids of list t into its larger successor n; t freed. */
static void moved_from(struct kr__lp *lp, struct tlist *n, struct tlist *t)
{
    n->n = t->n;
    memcpy(n->id, t->id, t->n * sizeof t->id[0]);
    kr__arena_free(&lp->arena, t);
}

/* A list with room for one more (the old one's ids moved over). */
static struct tlist *room(struct kr__lp *lp, struct tlist *t)
{
    if (t && t->n < t->cap) return t;
    uint32_t cap = t ? 2 * t->cap + 2 : TLIST_FIRST; /* (2^k - 2 ids fill a chunk) */
    int err = 0;
    struct tlist *n = kr__arena_alloc(&lp->arena, sizeof *n + cap * sizeof n->id[0], &err);
    if (!n)
        kr__model_error("kr_timer_set: no memory for the LP's list of %u pending timers (it "
                        "is kept in the LP's arena: %zu bytes in use, limit %zu); raise "
                        "--arena-max, or cancel the timers the model no longer needs",
                        t ? t->n + 1 : 1, lp->arena.used, lp->arena.limit);
    n->cap = cap;
    if (t) moved_from(lp, n, t);
    written(lp, n, 0, n->n);
    kr__timers_set_word(lp, (uint64_t)(uintptr_t)n);
    return n;
}

void kr__timer_add(uint64_t id)
{
    struct kr__lp *lp = kr__ctx.lp;
    struct tlist *t = room(lp, list_of(lp));
    written(lp, t, t->n, 1);
    t->id[t->n++] = id;
}

static bool take(struct kr__lp *lp, uint64_t id)
{
    struct tlist *t = list_of(lp);
    uint32_t i = t ? slot(t, id) : 0;
    if (!t || i == t->n) return false;
    written(lp, t, i, t->n - i - 1);
    memmove(&t->id[i], &t->id[i + 1], (t->n - i - 1) * sizeof t->id[0]);
    t->n--;
    return true;
}

bool kr__timer_take(uint64_t id)
{
    return take(kr__ctx.lp, id);
}

bool kr__timer_has(uint64_t id)
{
    const struct tlist *t = list_of(kr__ctx.lp);
    return t && slot(t, id) < t->n;
}

/* Timer event e of lp is reached: true if it runs (it was pending: it no longer is), false
 * if it was cancelled - then KR_PAYLOAD_CANCELLED marks it for the trace. */
static bool fires(struct kr__lp *lp, struct kr__ev *e)
{
    bool runs = take(lp, kr__timer_id(&e->k));
    e->pflags = (uint8_t)((e->pflags & ~KR_PAYLOAD_CANCELLED) | (runs ? 0 : KR_PAYLOAD_CANCELLED));
    return runs;
}

struct kr__ev *kr__timer_dispatch(struct kr__lp *lp, struct kr__ev *e)
{
    if (!(e->pflags & KR_PAYLOAD_TIMERS_IN)) return fires(lp, e) ? e : NULL;
    struct kr__ev **all = kr__ctx.bundle_all, **live = all + kr__ctx.nbundle_all;
    unsigned n = 0;
    for (unsigned i = 0; i < kr__ctx.nbundle_all; i++)
        if (!(all[i]->pflags & KR_PAYLOAD_TIMER) || fires(lp, all[i]))
            live[n++] = all[i];
    kr__ctx.bundle = live;
    kr__ctx.nbundle = n;
    return n ? live[0] : NULL;
}

