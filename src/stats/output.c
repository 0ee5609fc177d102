/* output.c - see output.h. */
#include "stats/output.h"
#include <stdlib.h>
#include "base/grow.h"
#include "base/error.h"

static void reserve(struct kr__outvec *v, size_t more)
{
    if (v->n + more > v->cap) KR_GROW(v->r, v->cap, v->n + more, 16, "output buffer");
}

static void add(struct kr__outvec *v, const struct kr__key *k, uint32_t kind, const char *text,
                size_t len)
{
    reserve(v, 1);
    struct kr__outrec *r = &v->r[v->n];
    r->k = *k;
    r->part = kind;
    if (v->n && kr__key_cmp(&v->r[v->n - 1].k, k) == 0)
        r->part = kind | ((v->r[v->n - 1].part & ~KR_OUT_RECORD) + 1);
    r->len = (uint32_t)len;
    r->text = malloc(len + 1);
    if (!r->text) kr__fatal_oom("output text", len + 1);
    memcpy(r->text, text, len);
    r->text[len] = 0;
    v->n++;
}

void kr__outvec_add(struct kr__outvec *v, const struct kr__key *k, const char *text, size_t len)
{
    add(v, k, 0, text, len);
}

void kr__outvec_add_record(struct kr__outvec *v, const struct kr__key *k, const char *rec,
                           size_t len)
{
    add(v, k, KR_OUT_RECORD, rec, len);
}

void kr__outvec_add_part(struct kr__outvec *v, const struct kr__key *k, uint32_t part,
                         const char *text, size_t len)
{
    kr__outvec_add(v, k, text, len);
    v->r[v->n - 1].part = part;
}

void kr__outvec_add_value(struct kr__outvec *v, const struct kr__key *k, uint32_t id,
                          double value)
{
    if (v->nval == v->capval) KR_GROW(v->val, v->capval, v->nval + 1, 16, "metric values");
    v->val[v->nval++] = (struct kr__outval){ *k, id, value };
}

void kr__outvec_drop_from(struct kr__outvec *v, const struct kr__key *k)
{
    while (v->n && !kr__key_lt(&v->r[v->n - 1].k, k)) free(v->r[--v->n].text);
    while (v->nval && !kr__key_lt(&v->val[v->nval - 1].k, k)) v->nval--;
}

void kr__outvec_move_before(struct kr__outvec *v, const struct kr__key *h, struct kr__outvec *to)
{
    size_t m = 0;
    while (m < v->n && kr__key_lt(&v->r[m].k, h)) m++;
    if (!m) return;
    reserve(to, m);
    memcpy(to->r + to->n, v->r, m * sizeof *v->r);
    to->n += m;
    memmove(v->r, v->r + m, (v->n - m) * sizeof *v->r);
    v->n -= m;
}

void kr__outvec_free(struct kr__outvec *v)
{
    for (size_t i = 0; i < v->n; i++) free(v->r[i].text);
    free(v->r);
    v->r = NULL;
    v->n = v->cap = 0;
    free(v->val);
    v->val = NULL;
    v->nval = v->capval = 0;
}

static int rec_cmp(const void *a, const void *b)
{
    const struct kr__outrec *x = a, *y = b;
    int c = kr__key_cmp(&x->k, &y->k);
    if (c) return c;
    return x->part < y->part ? -1 : x->part > y->part;
}

void kr__outvec_emit_before(struct kr__outvec *v, const struct kr__key *h,
                            void (*emit)(void *arg, const struct kr__outrec *o), void *arg)
{
    if (!v->n) return;
    qsort(v->r, v->n, sizeof *v->r, rec_cmp);
    size_t m = 0;
    while (m < v->n && kr__key_lt(&v->r[m].k, h)) {
        emit(arg, &v->r[m]);
        free(v->r[m].text);
        m++;
    }
    memmove(v->r, v->r + m, (v->n - m) * sizeof *v->r);
    v->n -= m;
}

static struct kr__outsink *sink_at(struct kr__outsink *first, size_t stride, unsigned t)
{
    return (struct kr__outsink *)((char *)first + stride * t);
}

/* Under every sink's lock at once (taken in order: no one else holds two): marks and records
 * of one moment. Read one sink at a time, a worker that had left (+inf) could come back,
 * at the mark the others had then, and commit while the others went on past it: their
 * later mark let their records print ahead of its. */
struct kr__key kr__outsinks_take(struct kr__outsink *first, unsigned n, size_t stride,
                                 struct kr__outvec *to)
{
    const struct kr__key all = kr__key_last();
    struct kr__key upto = all;
    for (unsigned t = 0; t < n; t++) pthread_mutex_lock(&sink_at(first, stride, t)->mu);
    for (unsigned t = 0; t < n; t++) {
        struct kr__outsink *s = sink_at(first, stride, t);
        if (kr__key_lt(&s->upto, &upto)) upto = s->upto;
        kr__outvec_move_before(&s->v, &all, to);
    }
    for (unsigned t = n; t-- > 0;) pthread_mutex_unlock(&sink_at(first, stride, t)->mu);
    return upto;
}
