/* calq.c - see calq.h. */
#include "calq.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../core/error.h"

/* Day and bucket are computed the same way everywhere, so rounding can never put an event
 * in one bucket while the day test places it in another. */
static double day_of(const struct kr__calq *q, double ts)
{
    return floor(ts * q->inv_width);
}

static size_t bucket_of(const struct kr__calq *q, double ts)
{
    return (size_t)(uint64_t)day_of(q, ts) & (q->nb - 1);
}

static void bucket_add(struct kr__calq_bucket *b, struct kr__heap_slot s)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 4;
        b->a = realloc(b->a, b->cap * sizeof *b->a);
        if (!b->a) kr__fatal_oom("calendar bucket", b->cap * sizeof *b->a);
    }
    b->a[b->n++] = s;
}

static void set_day(struct kr__calq *q, double ts)
{
    q->day = day_of(q, ts);
    q->cur = (size_t)(uint64_t)q->day & (q->nb - 1);
}

static void alloc_table(struct kr__calq *q, size_t nb)
{
    q->b = calloc(nb, sizeof *q->b);
    if (!q->b) kr__fatal_oom("calendar table", nb * sizeof *q->b);
    q->nb = nb;
}

void kr__calq_init(struct kr__calq *q)
{
    memset(q, 0, sizeof *q);
    alloc_table(q, 16);
    q->width = 1.0;
    q->inv_width = 1.0;
    q->found = -1;
    set_day(q, 0);
}

void kr__calq_destroy(struct kr__calq *q)
{
    for (size_t i = 0; i < q->nb; i++) free(q->b[i].a);
    free(q->b);
    memset(q, 0, sizeof *q);
}

/* New table of nb buckets; width = 3 x the mean gap between the events in the earliest
 * tenth of the time span (Brown's rule of thumb, estimated cheaply). */
static void resize(struct kr__calq *q, size_t nb)
{
    struct kr__calq old = *q;
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < old.nb; i++)
        for (uint32_t j = 0; j < old.b[i].n; j++) {
            double t = old.b[i].a[j].ts;
            if (t < lo) lo = t;
            if (t > hi) hi = t;
        }
    double width = q->n > 1 && hi > lo ? 3.0 * (hi - lo) / (double)q->n : q->width;
    if (!(width > 0) || isinf(width)) width = 1.0;
    alloc_table(q, nb);
    q->width = width;
    q->inv_width = 1.0 / width;
    q->found = -1;
    for (size_t i = 0; i < old.nb; i++) {
        for (uint32_t j = 0; j < old.b[i].n; j++)
            bucket_add(&q->b[bucket_of(q, old.b[i].a[j].ts)], old.b[i].a[j]);
        free(old.b[i].a);
    }
    free(old.b);
    set_day(q, isinf(lo) ? 0 : lo);
}

void kr__calq_push(struct kr__calq *q, struct kr__ev *e)
{
    struct kr__heap_slot s = { e->k.ts, e };
    bucket_add(&q->b[bucket_of(q, s.ts)], s);
    q->n++;
    q->found = -1;
    if (day_of(q, s.ts) < q->day) set_day(q, s.ts); /* earlier than the current day */
    if (q->n > 2 * q->nb) resize(q, q->nb * 2);
}

/* Index of the smallest slot of the current bucket that belongs to the current day, or -1. */
static int64_t scan(const struct kr__calq *q)
{
    const struct kr__calq_bucket *b = &q->b[q->cur];
    int64_t m = -1;
    for (uint32_t j = 0; j < b->n; j++)
        if ((m < 0 || kr__slot_lt(&b->a[j], &b->a[m])) && day_of(q, b->a[j].ts) <= q->day) m = j;
    return m;
}

/* Find the next event: walk days from the current one; after a whole year without one,
 * jump straight to the minimum. Leaves cur/day_top on its day; returns its slot index. */
static int64_t find(struct kr__calq *q)
{
    if (q->found >= 0) return q->found;
    for (size_t k = 0; k < q->nb; k++) {
        int64_t m = scan(q);
        if (m >= 0) return q->found = m;
        q->cur = (q->cur + 1) & (q->nb - 1);
        q->day += 1;
    }
    double lo = INFINITY;
    for (size_t i = 0; i < q->nb; i++)
        for (uint32_t j = 0; j < q->b[i].n; j++)
            if (q->b[i].a[j].ts < lo) lo = q->b[i].a[j].ts;
    set_day(q, lo);
    return q->found = scan(q);
}

struct kr__ev *kr__calq_top(struct kr__calq *q)
{
    if (!q->n) return NULL;
    int64_t m = find(q);
    return q->b[q->cur].a[m].e;
}

struct kr__ev *kr__calq_pop(struct kr__calq *q)
{
    if (!q->n) return NULL;
    int64_t m = find(q);
    struct kr__calq_bucket *b = &q->b[q->cur];
    struct kr__ev *e = b->a[m].e;
    b->a[m] = b->a[--b->n];
    q->n--;
    q->found = -1;
    if (q->nb > 16 && q->n < q->nb / 4) resize(q, q->nb / 2);
    return e;
}
