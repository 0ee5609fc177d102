/* test_stats.c - the model's statistics: kr_tally against a two-pass mean and variance,
 * kr_histogram's counts and quantiles, kr_timeavg's time-weighted mean on a known level;
 * and the metrics' reduction (core/metrics.c): every percentile of values spread over many
 * magnitudes, negative and zero among them, within the sketch's 1% of the exact one; bins
 * widened under --end inf holding what direct bins of the final width hold; a snapshot's
 * record read back into the same bins; sums exact whatever the order; reducers of parts of
 * the values (the optimistic engine's threads) drained into the same result. */
#include <math.h>
#include <stdlib.h>
#include "check.h"
#include "core/metrics.h"

static uint64_t rng = 88172645463325252ull;

static double uniform(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void tally(void)
{
    struct kr_tally t = { 0 };
    double xs[1000], sum = 0, ss = 0;
    for (int i = 0; i < 1000; i++) {
        xs[i] = 1e6 + uniform(); /* (a large mean: the naive sum of squares would lose it) */
        kr_tally_add(&t, xs[i]);
        sum += xs[i];
    }
    double mean = sum / 1000;
    for (int i = 0; i < 1000; i++) ss += (xs[i] - mean) * (xs[i] - mean);
    CHECK(t.n == 1000 && fabs(t.mean - mean) < 1e-12 * mean);
    CHECK(fabs(kr_tally_var(&t) - ss / 999) < 1e-9 * (ss / 999));
    qsort(xs, 1000, sizeof xs[0], by_value);
    CHECK(t.min == xs[0] && t.max == xs[999]);
    struct kr_tally one = { 0 };
    kr_tally_add(&one, 3);
    CHECK(kr_tally_var(&one) == 0 && one.min == 3 && one.max == 3);
}

static void histogram(void)
{
    struct kr_histogram h = { 0 };
    kr_histogram_init(&h, 0, 10, 10);
    for (int i = 0; i < 100; i++) kr_histogram_add(&h, i / 10.0); /* 10 in each bin */
    kr_histogram_add(&h, -1);
    kr_histogram_add(&h, 10);
    CHECK(h.n == 102 && h.below == 1 && h.above == 1);
    for (unsigned b = 0; b < 10; b++) CHECK(h.count[b] == 10);
    CHECK(fabs(kr_histogram_quantile(&h, 0.5) - 5.0) < 0.11);
    CHECK(kr_histogram_quantile(&h, 0) == 0 && kr_histogram_quantile(&h, 1) == 10);
    CHECK(isnan(kr_histogram_quantile(&h, 2)));
}

static void timeavg(void)
{
    struct kr_timeavg a = { 0 };
    CHECK(isnan(kr_timeavg_mean(&a, 1)));
    kr_timeavg_set(&a, -INFINITY, 2); /* (init: from time 0) */
    kr_timeavg_set(&a, 4, 6);         /* 2 over [0, 4) */
    kr_timeavg_set(&a, 4, 1);         /* (a change at the same time: the last one holds) */
    CHECK(fabs(kr_timeavg_mean(&a, 8) - (2 * 4 + 1 * 4) / 8.0) < 1e-12);
    CHECK(fabs(kr_timeavg_mean(&a, INFINITY) - 2.0) < 1e-12); /* (up to the last change) */
}

static double exact(const double *sorted, size_t n, double q)
{
    return sorted[(size_t)(q * (double)(n - 1))];
}

static void sketch(void)
{
    static const char *const names[] = { "x", NULL };
    struct kr__metrics *ms = kr__metrics_new(names, 1000);
    enum { N = 20000 };
    static double xs[N];
    for (int i = 0; i < N; i++) {
        double v = exp(20 * uniform() - 10); /* (1e-4 .. 2e4) */
        xs[i] = i % 7 == 0 ? -v : i % 13 == 0 ? 0 : v;
        struct kr__mrec r = { 0, 0, xs[i] };
        kr__metric_add(ms, 999.0 * uniform(), &r);
    }
    qsort(xs, N, sizeof xs[0], by_value);
    const struct kr__mstat *all = &ms->m[0].all;
    CHECK(all->n == N && all->min == xs[0] && all->max == xs[N - 1]);
    for (double q = 0; q <= 1.0; q += 0.01) {
        double e = exact(xs, N, q), got = kr__mstat_quantile(all, q);
        CHECK(fabs(got - e) <= 0.0101 * fabs(e));
    }
    uint64_t in_bins = 0;
    for (uint32_t b = 0; b < ms->m[0].nbins; b++) in_bins += ms->m[0].bins[b].n;
    CHECK(ms->m[0].width == 10 && ms->m[0].nbins == 100 && in_bins == N);
    struct kr__bytes img = { 0 };
    kr__metrics_save(ms, &img);
    struct kr__metrics *back = kr__metrics_new(names, 1000);
    struct kr__cursor in = { img.p, img.p + img.n, NULL };
    CHECK(kr__metrics_load(back, &in) && in.p == in.end);
    for (uint32_t b = 0; b < 100; b++)
        CHECK(back->m[0].bins[b].n == ms->m[0].bins[b].n &&
              kr__xsum_value(&back->m[0].bins[b].sum) == kr__xsum_value(&ms->m[0].bins[b].sum) &&
              kr__mstat_quantile(&back->m[0].bins[b], 0.5) ==
                  kr__mstat_quantile(&ms->m[0].bins[b], 0.5));
    struct kr__cursor cut = { img.p, img.p + img.n / 2, NULL };
    struct kr__metrics *torn = kr__metrics_new(names, 1000);
    CHECK(!kr__metrics_load(torn, &cut) && cut.why);
    kr__metrics_free(torn);
    kr__metrics_free(back);
    kr__bytes_free(&img);
    kr__metrics_free(ms);
}

/* Values over 40 orders of magnitude (4 600 buckets): past KR_METRIC_BUCKETS a side folds
 * its smallest magnitudes together; the percentiles above the fold (the top 41 of 92 in
 * log) stay within 1%, the least and greatest are exact, and a snapshot's record of
 * the folded sketch reads back into one that answers alike. */
static void folded(void)
{
    static const char *const names[] = { "x", NULL };
    struct kr__metrics *ms = kr__metrics_new(names, 10);
    enum { N = 5000 };
    static double xs[N];
    for (int i = 0; i < N; i++) {
        xs[i] = exp(92 * uniform() - 46);
        struct kr__mrec r = { 0, 0, xs[i] };
        kr__metric_add(ms, 5, &r);
    }
    qsort(xs, N, sizeof xs[0], by_value);
    const struct kr__mstat *all = &ms->m[0].all;
    CHECK(all->pos.len == KR_METRIC_BUCKETS && kr__mstat_quantile(all, 0) == xs[0] &&
          kr__mstat_quantile(all, 1) == xs[N - 1]);
    for (double q = 0.6; q < 1.0; q += 0.01) {
        double e = exact(xs, N, q);
        CHECK(fabs(kr__mstat_quantile(all, q) - e) <= 0.0101 * e);
    }
    struct kr__bytes img = { 0 };
    kr__metrics_save(ms, &img);
    struct kr__metrics *back = kr__metrics_new(names, 10);
    struct kr__cursor in = { img.p, img.p + img.n, NULL };
    CHECK(kr__metrics_load(back, &in));
    struct kr__mrec more = { 0, 0, 1e-30 };
    kr__metric_add(ms, 5, &more);
    kr__metric_add(back, 5, &more);
    for (double q = 0; q <= 1.0; q += 0.01)
        CHECK(kr__mstat_quantile(&back->m[0].all, q) == kr__mstat_quantile(&ms->m[0].all, q));
    kr__bytes_free(&img);
    kr__metrics_free(back);
    kr__metrics_free(ms);
}

static double sum_of(const double *v, size_t n)
{
    static const char *const names[] = { "x", NULL };
    struct kr__metrics *ms = kr__metrics_new(names, 10);
    for (size_t i = 0; i < n; i++) {
        struct kr__mrec r = { 0, 0, v[i] };
        kr__metric_add(ms, 1, &r);
    }
    double s = kr__xsum_value(&ms->m[0].all.sum);
    kr__metrics_free(ms);
    return s;
}

/* Sums are exact: they do not depend on the order of the values, and cancel exactly. */
static void exact_sums(void)
{
    double a[] = { 1e100, 1, -1e100 }, b[] = { 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1 };
    double c[] = { 5e-324, 5e-324, -1.5, 1.5, 1e308, -1e308 };
    CHECK(sum_of(a, 3) == 1 && sum_of(b, 10) == 1.0 && sum_of(c, 6) == 1e-323);
    enum { N = 3000 };
    static double v[N], w[N];
    for (int i = 0; i < N; i++) v[i] = (uniform() - 0.5) * exp(60 * uniform() - 30);
    double want = sum_of(v, N);
    for (int round = 0; round < 5; round++) {
        for (int i = 0; i < N; i++) w[i] = v[i];
        for (int i = N - 1; i > 0; i--) { /* (a shuffle) */
            int j = (int)(uniform() * (i + 1));
            double x = w[i];
            w[i] = w[j];
            w[j] = x;
        }
        CHECK(sum_of(w, N) == want);
    }
}

/* Two reducers of halves of the values (threads), drained into a third: the same bins,
 * percentiles and sums as one that took them all, in another order, with --end inf's
 * widths apart. */
static void drained(void)
{
    static const char *const names[] = { "x", NULL };
    struct kr__metrics *one = kr__metrics_new(names, INFINITY),
                       *half[2] = { kr__metrics_new(names, INFINITY),
                                    kr__metrics_new(names, INFINITY) },
                       *all = kr__metrics_new(names, INFINITY);
    for (int i = 0; i < 4000; i++) {
        double t = 300 * uniform() * (i % 2 ? 1 : 0.2); /* (the halves widen apart) */
        struct kr__mrec r = { 0, 0, exp(10 * uniform()) - 100 };
        kr__metric_add(one, t, &r);
        kr__metric_add(half[i % 2], t, &r);
    }
    kr__metrics_drain(all, half[0]);
    kr__metrics_drain(all, half[1]);
    CHECK(half[0]->m[0].all.n == 0 && half[0]->m[0].nbins == 0);
    const struct kr__metric *a = &all->m[0], *o = &one->m[0];
    CHECK(a->width == o->width && a->nbins == o->nbins && a->all.n == 4000);
    for (uint32_t b = 0; b < o->nbins; b++)
        CHECK(a->bins[b].n == o->bins[b].n &&
              kr__xsum_value(&a->bins[b].sum) == kr__xsum_value(&o->bins[b].sum) &&
              kr__mstat_quantile(&a->bins[b], 0.9) == kr__mstat_quantile(&o->bins[b], 0.9));
    CHECK(kr__mstat_quantile(&a->all, 0.5) == kr__mstat_quantile(&o->all, 0.5));
    kr__metrics_free(one);
    kr__metrics_free(half[0]);
    kr__metrics_free(half[1]);
    kr__metrics_free(all);
}

/* --end inf: width 1, doubled with neighbours merged; the bins end as direct bins of the
 * final width would be. */
static void widening(void)
{
    static const char *const names[] = { "x", NULL };
    struct kr__metrics *ms = kr__metrics_new(names, INFINITY);
    uint64_t want[KR_METRIC_BINS] = { 0 };
    double t = 0;
    rng = 88172645463325252ull;
    for (int i = 0; i < 5000; i++) {
        t += uniform() * 0.2;
        struct kr__mrec r = { 0, 0, (double)(i % 10) };
        kr__metric_add(ms, t, &r);
    }
    double w = ms->m[0].width; /* (t reached ~500: width 8, 63 bins) */
    rng = 88172645463325252ull;
    t = 0;
    CHECK(w == 8);
    for (int i = 0; i < 5000; i++) {
        t += uniform() * 0.2;
        want[(size_t)floor(t / w)]++;
    }
    for (uint32_t b = 0; b < KR_METRIC_BINS; b++) CHECK(ms->m[0].bins[b].n == want[b]);
    kr__metrics_free(ms);
}

int main(void)
{
    tally();
    histogram();
    timeavg();
    sketch();
    folded();
    exact_sums();
    drained();
    widening();
    return check_done("stats");
}
