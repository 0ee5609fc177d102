/* metrics.c - model metrics: bins of virtual time, their sketches, and their place in a
 * snapshot (see metrics.h). */
#include "core/metrics.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "base/grow.h"

/* The sketch: a value v != 0 goes to bucket ceil(log|v| / log g), g = (1 + a) / (1 - a),
 * whose middle 2 g^k / (g + 1) is within a of every value in it (Masson, Rim and Lee's
 * DDSketch, 2019). Keys put the negative buckets below 0, the positive above, each in the
 * order of their values (|log v| / log g stays under 40 000 for every double). */
#define KEY_SIDE 50000

static double log_g(void)
{
    return log1p(2 * KR_METRIC_ACCURACY / (1 - KR_METRIC_ACCURACY));
}

static int32_t key_of(double v)
{
    if (v == 0) return 0;
    int32_t k = (int32_t)ceil(log(fabs(v)) / log_g());
    return v > 0 ? KEY_SIDE + k : -KEY_SIDE - k;
}

static double value_of(int32_t key)
{
    if (key == 0) return 0;
    int32_t k = key > 0 ? key - KEY_SIDE : -KEY_SIDE - key;
    double lg = log_g(), v = 2 * exp(k * lg) / (1 + exp(lg));
    return key > 0 ? v : -v;
}

/* Add n values of bucket key to s's sketch. */
static void bucket_add(struct kr__mstat *s, int32_t key, uint64_t n)
{
    uint32_t lo = 0, hi = s->nb;
    while (lo < hi) {
        uint32_t m = lo + (hi - lo) / 2;
        if (s->b[m].key < key) lo = m + 1;
        else hi = m;
    }
    if (lo < s->nb && s->b[lo].key == key) {
        s->b[lo].n += n;
        return;
    }
    if (s->nb == s->capb) KR_GROW(s->b, s->capb, s->nb + 1, 16, "a metric's sketch");
    memmove(&s->b[lo + 1], &s->b[lo], (s->nb - lo) * sizeof s->b[0]);
    s->b[lo] = (struct kr__mbucket){ key, n };
    if (++s->nb <= KR_METRIC_BUCKETS) return;
    s->b[1].n += s->b[0].n; /* (the lowest values lose their accuracy first) */
    memmove(&s->b[0], &s->b[1], --s->nb * sizeof s->b[0]);
}

static void stat_add(struct kr__mstat *s, double v)
{
    if (!s->n || v < s->min) s->min = v;
    if (!s->n || v > s->max) s->max = v;
    s->n++;
    s->sum += v;
    bucket_add(s, key_of(v), 1);
}

/* into += s (s is left as it was). */
static void stat_merge(struct kr__mstat *into, const struct kr__mstat *s)
{
    if (!s->n) return;
    if (!into->n || s->min < into->min) into->min = s->min;
    if (!into->n || s->max > into->max) into->max = s->max;
    into->n += s->n;
    into->sum += s->sum;
    for (uint32_t i = 0; i < s->nb; i++) bucket_add(into, s->b[i].key, s->b[i].n);
}

static void stat_free(struct kr__mstat *s)
{
    free(s->b);
    *s = (struct kr__mstat){ 0 };
}

struct kr__metrics *kr__metrics_new(const char *const *names, double end)
{
    if (!names || !names[0]) return NULL;
    struct kr__metrics *ms = calloc(1, sizeof *ms);
    unsigned n = 0;
    while (names[n]) n++;
    if (ms) ms->m = calloc(n, sizeof *ms->m);
    if (!ms || !ms->m) kr__fatal_oom("the model's metrics", n * sizeof *ms->m);
    ms->n = n;
    ms->fixed = isfinite(end) && end > 0;
    for (unsigned i = 0; i < n; i++) {
        ms->m[i].name = names[i];
        ms->m[i].width = ms->fixed ? end / KR_METRIC_BINS : 1;
    }
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

void kr__metric_add(struct kr__metrics *ms, kr_time t, const struct kr__mrec *rec)
{
    if (!ms || rec->id >= ms->n)
        kr__internal_error("a metric record of metric %u (the model has %u)", rec->id,
                           ms ? ms->n : 0);
    struct kr__metric *m = &ms->m[rec->id];
    if (!m->bins && !(m->bins = calloc(KR_METRIC_BINS, sizeof *m->bins)))
        kr__fatal_oom("a metric's bins", KR_METRIC_BINS * sizeof *m->bins);
    double at = t > 0 ? floor(t / m->width) : 0;
    while (!ms->fixed && at >= KR_METRIC_BINS) {
        widen(m);
        at = floor(t / m->width);
    }
    uint32_t idx = at < KR_METRIC_BINS ? (uint32_t)at : KR_METRIC_BINS - 1;
    stat_add(&m->bins[idx], rec->value);
    stat_add(&m->all, rec->value);
    if (idx + 1 > m->nbins) m->nbins = idx + 1;
}

double kr__mstat_quantile(const struct kr__mstat *s, double q)
{
    if (!s->n) return NAN;
    double rank = q * (double)(s->n - 1);
    uint64_t cum = 0;
    for (uint32_t i = 0; i < s->nb; i++) {
        cum += s->b[i].n;
        if ((double)cum > rank) {
            double v = value_of(s->b[i].key);
            return v < s->min ? s->min : v > s->max ? s->max : v;
        }
    }
    return s->max;
}

/* ---- snapshots: per metric f64 width, u32 bins, each bin and then the whole run as
 * u64 n, f64 sum, min, max, u32 buckets, each i32 key and u64 count ---- */

static void put(struct kr__bytes *b, const void *p, size_t n)
{
    kr__bytes_put(b, p, n);
}

static void stat_save(const struct kr__mstat *s, struct kr__bytes *b)
{
    put(b, &s->n, 8);
    put(b, &s->sum, 8);
    put(b, &s->min, 8);
    put(b, &s->max, 8);
    put(b, &s->nb, 4);
    for (uint32_t i = 0; i < s->nb; i++) {
        put(b, &s->b[i].key, 4);
        put(b, &s->b[i].n, 8);
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

static bool stat_load(struct kr__mstat *s, struct kr__cursor *in)
{
    s->n = kr__cursor_get(in, 8);
    s->sum = get_f64(in);
    s->min = get_f64(in);
    s->max = get_f64(in);
    uint32_t nb = (uint32_t)kr__cursor_get(in, 4);
    if (nb > KR_METRIC_BUCKETS) kr__cursor_fail(in, "a metric's sketch is damaged");
    for (uint32_t i = 0; i < nb && !in->why; i++) {
        int32_t key = (int32_t)(uint32_t)kr__cursor_get(in, 4);
        uint64_t cnt = kr__cursor_get(in, 8);
        if (s->nb && key <= s->b[s->nb - 1].key) kr__cursor_fail(in, "a metric's sketch is "
                                                                 "damaged");
        else bucket_add(s, key, cnt);
    }
    return !in->why;
}

bool kr__metrics_load(struct kr__metrics *ms, struct kr__cursor *in)
{
    uint32_t n = (uint32_t)kr__cursor_get(in, 4);
    if (n != (ms ? ms->n : 0)) kr__cursor_fail(in, "the snapshot's metrics are not the model's");
    for (uint32_t i = 0; i < n && !in->why; i++) {
        struct kr__metric *m = &ms->m[i];
        m->width = get_f64(in);
        m->nbins = (uint32_t)kr__cursor_get(in, 4);
        if (m->nbins > KR_METRIC_BINS || !(m->width > 0)) {
            kr__cursor_fail(in, "the snapshot's metrics are damaged");
            break;
        }
        if (m->nbins && !m->bins && !(m->bins = calloc(KR_METRIC_BINS, sizeof *m->bins)))
            kr__fatal_oom("a metric's bins", KR_METRIC_BINS * sizeof *m->bins);
        for (uint32_t k = 0; k < m->nbins && stat_load(&m->bins[k], in); k++) {}
        if (!in->why) stat_load(&m->all, in);
    }
    return !in->why;
}
