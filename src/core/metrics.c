/* metrics.c - model metrics: bins of virtual time, their sketches, and their place in a
 * snapshot (see metrics.h). */
#include "core/metrics.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "base/grow.h"

/* The sketch: a value v != 0 goes to bucket k = ceil(log|v| / log g), g = (1 + a) / (1 - a),
 * of its sign's side, whose middle 2 g^k / (g + 1) is within a of every value in it (Masson,
 * Rim and Lee's DDSketch, 2019); 0 is counted apart. */
static double log_g(void)
{
    return log1p(2 * KR_METRIC_ACCURACY / (1 - KR_METRIC_ACCURACY)); /* (folded) */
}

static int32_t bucket_of(double v)
{
    return (int32_t)ceil(log(fabs(v)) / log_g());
}

static double middle(int32_t k)
{
    double lg = log_g();
    return 2 * exp(k * lg) / (1 + exp(lg));
}

static void store_room(struct kr__mstore *st, uint32_t len)
{
    if (len > st->cap) KR_GROW(st->c, st->cap, len, 16, "a metric's sketch");
}

/* Buckets below `base` fold into the store's lowest (past KR_METRIC_BUCKETS, the
 * smallest magnitudes lose their accuracy first). */
static void store_fold_to(struct kr__mstore *st, int32_t base)
{
    uint32_t drop = (uint32_t)((int64_t)base - st->base);
    if (drop > st->len) drop = st->len;
    uint64_t acc = 0;
    for (uint32_t i = 0; i < drop; i++) acc += st->c[i];
    memmove(st->c, st->c + drop, (st->len - drop) * sizeof st->c[0]);
    st->len -= drop;
    if (!st->len) {
        store_room(st, 1);
        st->c[0] = 0;
        st->len = 1;
    }
    st->base = base;
    st->c[0] += acc;
}

/* Room below the store's base down to k, or as far as KR_METRIC_BUCKETS below the top
 * allow, k then folded into the lowest: the store covers what it would had k come first
 * (a sketch does not depend on the order of its values). Returns k's bucket. */
static int32_t store_grow_down(struct kr__mstore *st, int32_t k)
{
    int64_t lowest = (int64_t)st->base + st->len - KR_METRIC_BUCKETS;
    int32_t to = k < lowest ? (int32_t)lowest : k;
    uint32_t shift = (uint32_t)(st->base - to);
    if (shift) {
        store_room(st, st->len + shift);
        memmove(st->c + shift, st->c, st->len * sizeof st->c[0]);
        memset(st->c, 0, shift * sizeof st->c[0]);
        st->base = to;
        st->len += shift;
    }
    return to;
}

/* Room above the store's top up to k, the lowest buckets folded if k lies too far up. */
static void store_grow_up(struct kr__mstore *st, int32_t k)
{
    if ((int64_t)k - st->base >= KR_METRIC_BUCKETS)
        store_fold_to(st, k - (int32_t)KR_METRIC_BUCKETS + 1);
    uint32_t len = (uint32_t)(k - st->base) + 1;
    store_room(st, len);
    memset(st->c + st->len, 0, (len - st->len) * sizeof st->c[0]);
    st->len = len;
}

static void store_add(struct kr__mstore *st, int32_t k, uint64_t n)
{
    if (!st->len) {
        store_room(st, 1);
        st->base = k;
        st->c[0] = 0;
        st->len = 1;
    } else if (k < st->base) {
        k = store_grow_down(st, k);
    } else if ((int64_t)k - st->base >= st->len) {
        store_grow_up(st, k);
    }
    st->c[k - st->base] += n;
}

/* ---- exact sums ---- */

static void xsum_carry(struct kr__xsum *x)
{
    for (int i = 0; i < KR_XSUM_DIGITS - 1; i++) {
        int64_t c = x->d[i] >> 32; /* (arithmetic: a negative digit borrows) */
        x->d[i] -= c * ((int64_t)1 << 32);
        x->d[i + 1] += c;
    }
    x->adds = 0;
}

static void xsum_add(struct kr__xsum *x, double v)
{
    uint64_t bits;
    memcpy(&bits, &v, 8);
    uint64_t e = (bits >> 52) & 0x7ff, m = bits & ((1ull << 52) - 1);
    if (e) m |= 1ull << 52;
    uint32_t p = e ? (uint32_t)e - 1 : 0; /* v = m 2^(p - 1074) */
    unsigned __int128 w = (unsigned __int128)m << (p & 31);
    int64_t lo = (int64_t)(w & 0xffffffffu), mid = (int64_t)((w >> 32) & 0xffffffffu),
            hi = (int64_t)(w >> 64);
    int64_t sign = bits >> 63 ? -1 : 1;
    x->d[p >> 5] += sign * lo;
    x->d[(p >> 5) + 1] += sign * mid;
    x->d[(p >> 5) + 2] += sign * hi;
    if (++x->adds == 1u << 30) xsum_carry(x);
}

static void xsum_merge(struct kr__xsum *x, const struct kr__xsum *y)
{
    struct kr__xsum c = *y;
    xsum_carry(&c);
    xsum_carry(x);
    for (int i = 0; i < KR_XSUM_DIGITS; i++) x->d[i] += c.d[i];
    x->adds = 1;
}

double kr__xsum_value(const struct kr__xsum *x)
{
    struct kr__xsum c = *x;
    xsum_carry(&c);
    /* (canonical, a negative sum's top digit is negative and those below are its two's
     * complement: its magnitude is converted, digits in [0, 2^32) from the top down) */
    bool neg = c.d[KR_XSUM_DIGITS - 1] < 0;
    if (neg) {
        for (int i = 0; i < KR_XSUM_DIGITS; i++) c.d[i] = -c.d[i];
        xsum_carry(&c);
    }
    double v = 0;
    for (int i = KR_XSUM_DIGITS; i-- > 0;)
        if (c.d[i]) v += ldexp((double)c.d[i], 32 * i - 1074);
    return neg ? -v : v;
}

/* The least and greatest value, v the first or one more. */
static inline void stat_bounds(struct kr__mstat *s, double v)
{
    if (!s->n || v < s->min) s->min = v;
    if (!s->n || v > s->max) s->max = v;
}

static void stat_add(struct kr__mstat *s, double v, int32_t k)
{
    stat_bounds(s, v);
    s->n++;
    xsum_add(&s->sum, v);
    if (v > 0) store_add(&s->pos, k, 1);
    else if (v < 0) store_add(&s->neg, k, 1);
    else s->zero++;
}

static void store_merge(struct kr__mstore *into, const struct kr__mstore *st)
{
    for (uint32_t i = 0; i < st->len; i++)
        if (st->c[i]) store_add(into, st->base + (int32_t)i, st->c[i]);
}

/* into += s (s is left as it was). */
static void stat_merge(struct kr__mstat *into, const struct kr__mstat *s)
{
    if (!s->n) return;
    if (!into->n || s->min < into->min) into->min = s->min;
    if (!into->n || s->max > into->max) into->max = s->max;
    into->n += s->n;
    into->zero += s->zero;
    xsum_merge(&into->sum, &s->sum);
    store_merge(&into->pos, &s->pos);
    store_merge(&into->neg, &s->neg);
}

static void stat_free(struct kr__mstat *s)
{
    free(s->pos.c);
    free(s->neg.c);
    *s = (struct kr__mstat){ 0 };
}

static unsigned count_names(const char *const *names)
{
    unsigned n = 0;
    while (names[n]) n++;
    return n;
}

struct kr__metrics *kr__metrics_new(const char *const *names, double end)
{
    if (!names || !names[0]) return NULL;
    struct kr__metrics *ms = calloc(1, sizeof *ms);
    unsigned n = count_names(names);
    if (ms) ms->m = calloc(n, sizeof *ms->m);
    if (!ms || !ms->m) kr__fatal_oom("the model's metrics", n * sizeof *ms->m);
    ms->n = n;
    ms->fixed = isfinite(end) && end > 0;
    double width = ms->fixed ? end / KR_METRIC_BINS : 1;
    for (unsigned i = 0; i < n; i++)
        ms->m[i] = (struct kr__metric){ .name = names[i], .width = width };
    return ms;
}

void kr__metrics_free(struct kr__metrics *ms)
{
    if (!ms) return;
    for (unsigned i = 0; i < ms->n; i++) {
        struct kr__metric *m = &ms->m[i];
        for (uint32_t b = 0; m->bins && b < KR_METRIC_BINS; b++) stat_free(&m->bins[b]);
        free(m->bins);
        stat_free(&m->all);
    }
    free(ms->m);
    free(ms);
}

int kr__metric_id(const struct kr__metrics *ms, const char *name)
{
    for (unsigned i = 0; ms && i < ms->n; i++) /* (the same literal, mostly: no strcmp) */
        if (ms->m[i].name == name || !strcmp(ms->m[i].name, name)) return (int)i;
    return -1;
}

/* --end inf: bins twice as wide, each the two it replaces. */
static void widen(struct kr__metric *m)
{
    for (uint32_t i = 0; i < KR_METRIC_BINS / 2; i++) {
        struct kr__mstat s = { 0 };
        stat_merge(&s, &m->bins[2 * i]);
        stat_merge(&s, &m->bins[2 * i + 1]);
        stat_free(&m->bins[2 * i]);
        stat_free(&m->bins[2 * i + 1]);
        m->bins[i] = s;
    }
    m->width *= 2;
    m->nbins = (m->nbins + 1) / 2;
}

/* A metric's bins, made at its first value (or a snapshot's). */
static void need_bins(struct kr__metric *m)
{
    if (!m->bins && !(m->bins = calloc(KR_METRIC_BINS, sizeof *m->bins)))
        kr__fatal_oom("a metric's bins", KR_METRIC_BINS * sizeof *m->bins);
}

/* Metric b's values moved into a (b is left empty). */
static void metric_drain(struct kr__metric *a, struct kr__metric *b)
{
    need_bins(a);
    while (a->width < b->width) widen(a); /* (--end inf: the wider bins hold both) */
    while (b->width < a->width) widen(b);
    for (uint32_t k = 0; k < b->nbins; k++) {
        stat_merge(&a->bins[k], &b->bins[k]);
        stat_free(&b->bins[k]);
    }
    if (b->nbins > a->nbins) a->nbins = b->nbins;
    b->nbins = 0;
    stat_merge(&a->all, &b->all);
    stat_free(&b->all);
}

void kr__metrics_drain(struct kr__metrics *into, struct kr__metrics *from)
{
    for (unsigned i = 0; into && from && i < into->n; i++)
        if (from->m[i].all.n) metric_drain(&into->m[i], &from->m[i]);
}

/* The bin of time t (its bins made at the first value; under --end inf, widened until t
 * falls in one: the last bin takes what lies past a fixed end). */
static uint32_t bin_for(const struct kr__metrics *ms, struct kr__metric *m, kr_time t)
{
    need_bins(m);
    double at = t > 0 ? floor(t / m->width) : 0;
    while (!ms->fixed && at >= KR_METRIC_BINS) {
        widen(m);
        at = floor(t / m->width);
    }
    return at < KR_METRIC_BINS ? (uint32_t)at : KR_METRIC_BINS - 1;
}

void kr__metric_add(struct kr__metrics *ms, kr_time t, const struct kr__mrec *rec)
{
    if (!ms || rec->id >= ms->n)
        kr__internal_error("a metric record of metric %u (the model has %u)", rec->id,
                           ms ? ms->n : 0);
    struct kr__metric *m = &ms->m[rec->id];
    uint32_t idx = bin_for(ms, m, t);
    int32_t k = rec->value != 0 ? bucket_of(rec->value) : 0;
    stat_add(&m->bins[idx], rec->value, k);
    stat_add(&m->all, rec->value, k);
    if (idx + 1 > m->nbins) m->nbins = idx + 1;
}

/* The value of the rank-th smallest (0-based) among s's values, from its bucket. */
static double rank_value(const struct kr__mstat *s, double rank)
{
    uint64_t cum = 0;
    for (uint32_t i = s->neg.len; i-- > 0;) /* (the most negative first) */
        if ((double)(cum += s->neg.c[i]) > rank) return -middle(s->neg.base + (int32_t)i);
    if ((double)(cum += s->zero) > rank) return 0;
    for (uint32_t i = 0; i < s->pos.len; i++)
        if ((double)(cum += s->pos.c[i]) > rank) return middle(s->pos.base + (int32_t)i);
    return s->max;
}

double kr__mstat_quantile(const struct kr__mstat *s, double q)
{
    if (!s->n) return NAN;
    if (q <= 0) return s->min; /* (kept exactly) */
    if (q >= 1) return s->max;
    double v = rank_value(s, q * (double)(s->n - 1));
    return v < s->min ? s->min : v > s->max ? s->max : v;
}

/* ---- snapshots: per metric f64 width, u32 bins, each bin and then the whole run as
 * u64 n, zero, f64 min, max, the sum's digits in canonical form (u32 count, i64 each from
 * the lowest that is not 0), and each side (positive, negative) as i32 base, u32 len,
 * len u64 counts ---- */

static void put(struct kr__bytes *b, const void *p, size_t n)
{
    kr__bytes_put(b, p, n);
}

/* An exact sum's digits, carried, without the zeros at either end. */
static void xsum_save(const struct kr__xsum *sum, struct kr__bytes *b)
{
    struct kr__xsum c = *sum;
    xsum_carry(&c);
    uint32_t lo = 0, hi = KR_XSUM_DIGITS;
    while (lo < hi && !c.d[lo]) lo++;
    while (hi > lo && !c.d[hi - 1]) hi--;
    uint32_t n = hi - lo;
    put(b, &lo, 4);
    put(b, &n, 4);
    put(b, c.d + lo, n * sizeof c.d[0]);
}

static void stat_save(const struct kr__mstat *s, struct kr__bytes *b)
{
    put(b, &s->n, 8);
    put(b, &s->zero, 8);
    put(b, &s->min, 8);
    put(b, &s->max, 8);
    xsum_save(&s->sum, b);
    for (const struct kr__mstore *st = &s->pos; st; st = st == &s->pos ? &s->neg : NULL) {
        put(b, &st->base, 4);
        put(b, &st->len, 4);
        put(b, st->c, st->len * sizeof st->c[0]);
    }
}

void kr__metrics_save(const struct kr__metrics *ms, struct kr__bytes *b)
{
    uint32_t n = ms ? ms->n : 0;
    put(b, &n, 4);
    for (uint32_t i = 0; i < n; i++) {
        const struct kr__metric *m = &ms->m[i];
        put(b, &m->width, 8);
        put(b, &m->nbins, 4);
        for (uint32_t k = 0; k < m->nbins; k++) stat_save(&m->bins[k], b);
        stat_save(&m->all, b);
    }
}

static double get_f64(struct kr__cursor *in)
{
    uint64_t w = kr__cursor_get(in, 8);
    double d;
    memcpy(&d, &w, 8);
    return d;
}

static void store_load(struct kr__mstore *st, struct kr__cursor *in)
{
    int32_t base = (int32_t)(uint32_t)kr__cursor_get(in, 4);
    uint32_t len = (uint32_t)kr__cursor_get(in, 4);
    if (len > KR_METRIC_BUCKETS) {
        kr__cursor_fail(in, "a metric's sketch is damaged");
        return;
    }
    store_room(st, len ? len : 1); /* (as it was: a later add grows it alike) */
    st->base = base;
    st->len = len;
    for (uint32_t i = 0; i < len; i++) st->c[i] = kr__cursor_get(in, 8);
}

static bool stat_load(struct kr__mstat *s, struct kr__cursor *in)
{
    s->n = kr__cursor_get(in, 8);
    s->zero = kr__cursor_get(in, 8);
    s->min = get_f64(in);
    s->max = get_f64(in);
    uint32_t lo = (uint32_t)kr__cursor_get(in, 4), n = (uint32_t)kr__cursor_get(in, 4);
    if (lo > KR_XSUM_DIGITS || n > KR_XSUM_DIGITS - lo) {
        kr__cursor_fail(in, "a metric's sum is damaged");
        return false;
    }
    for (uint32_t i = 0; i < n; i++) s->sum.d[lo + i] = (int64_t)kr__cursor_get(in, 8);
    store_load(&s->pos, in);
    store_load(&s->neg, in);
    return !in->why;
}

/* A metric's bins and its whole-run statistics, as a snapshot holds them. */
static bool bins_load(struct kr__metric *m, struct kr__cursor *in)
{
    if (m->nbins) need_bins(m);
    for (uint32_t k = 0; k < m->nbins && stat_load(&m->bins[k], in); k++) {}
    if (!in->why) stat_load(&m->all, in);
    return !in->why;
}

/* One metric's histogram; false (in->why) if it cannot be read. */
static bool metric_load(struct kr__metric *m, struct kr__cursor *in)
{
    m->width = get_f64(in);
    m->nbins = (uint32_t)kr__cursor_get(in, 4);
    if (m->nbins > KR_METRIC_BINS || !(m->width > 0)) {
        kr__cursor_fail(in, "the snapshot's metrics are damaged");
        return false;
    }
    return bins_load(m, in);
}

bool kr__metrics_load(struct kr__metrics *ms, struct kr__cursor *in)
{
    uint32_t n = (uint32_t)kr__cursor_get(in, 4);
    if (n != (ms ? ms->n : 0)) kr__cursor_fail(in, "the snapshot's metrics are not the model's");
    for (uint32_t i = 0; i < n && !in->why && metric_load(&ms->m[i], in); i++) {}
    return !in->why;
}
