/* tally.c - statistics a model keeps in its LP state: tallies, histograms and time
 * averages (kairos.h). Plain values in the state, so they roll back with it; each call
 * marks what it writes, for --state chunk. */
#include <math.h>
#include <string.h>
#include "kairos.h"
#include "base/error.h"

void kr_tally_add(struct kr_tally *t, double x)
{
    kr_touch(t, sizeof *t);
    if (!t->n || x < t->min) t->min = x;
    if (!t->n || x > t->max) t->max = x;
    t->n++;
    double d = x - t->mean; /* (Welford, 1962) */
    t->mean += d / (double)t->n;
    t->m2 += d * (x - t->mean);
}

double kr_tally_var(const struct kr_tally *t)
{
    return t->n < 2 ? 0 : t->m2 / (double)(t->n - 1);
}

void kr_histogram_init(struct kr_histogram *h, double lo, double hi, unsigned bins)
{
    if (!(lo < hi) || !isfinite(lo) || !isfinite(hi) || bins < 1 || bins > KR_HISTOGRAM_BINS)
        kr__model_error("kr_histogram_init(%g, %g, %u): want finite lo < hi and 1 to %u bins",
                        lo, hi, bins, KR_HISTOGRAM_BINS);
    kr_touch(h, sizeof *h);
    memset(h, 0, sizeof *h);
    h->lo = lo;
    h->hi = hi;
    h->bins = bins;
}

void kr_histogram_add(struct kr_histogram *h, double x)
{
    if (!h->bins)
        kr__model_error("kr_histogram_add on a histogram that kr_histogram_init has not set "
                        "up");
    kr_touch(h, sizeof *h);
    h->n++;
    if (x < h->lo) {
        h->below++;
    } else if (!(x < h->hi)) {
        h->above++;
    } else {
        unsigned i = (unsigned)((x - h->lo) / (h->hi - h->lo) * h->bins);
        h->count[i < h->bins ? i : h->bins - 1]++;
    }
}

/* The value at `rank` among the histogram's bins (cum counted below the first), linear
 * within its bin; hi past the last. */
static double bin_quantile(const struct kr_histogram *h, double rank, double cum)
{
    double w = (h->hi - h->lo) / h->bins;
    for (unsigned i = 0; i < h->bins; i++) {
        double c = (double)h->count[i];
        if (c > 0 && rank <= cum + c) return h->lo + w * (i + (rank - cum) / c);
        cum += c;
    }
    return h->hi;
}

double kr_histogram_quantile(const struct kr_histogram *h, double q)
{
    if (!h->n || !(q >= 0 && q <= 1)) return NAN;
    double rank = q * (double)h->n, cum = (double)h->below;
    if (rank < cum || (rank == 0 && h->below)) return h->lo;
    return bin_quantile(h, rank, cum);
}

void kr_timeavg_set(struct kr_timeavg *a, kr_time now, double level)
{
    if (now < 0) now = 0; /* (init's time is -inf: its level holds from the first event) */
    kr_touch(a, sizeof *a);
    if (!a->started) {
        a->started = true;
        a->start = a->last = now;
    } else if (now > a->last) {
        a->area += a->level * (now - a->last);
        a->last = now;
    }
    a->level = level;
}

double kr_timeavg_mean(const struct kr_timeavg *a, kr_time now)
{
    if (!a->started) return NAN;
    if (!isfinite(now)) now = a->last; /* (finish: up to the last change) */
    if (!(now > a->start)) return a->level;
    double area = a->area + (now > a->last ? a->level * (now - a->last) : 0);
    return area / (now - a->start);
}
