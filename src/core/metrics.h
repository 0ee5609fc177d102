/* metrics.h - model metrics (kr_metric, issue 37 item 5): each value an event records
 * travels as a record with the event's output (tagged KR_REC_METRIC instead of an LP: core/
 * ledger.c tells the two apart) and is reduced here where that output is printed - one
 * process, or rank 0 - in the commit order, so every engine, thread and rank count, and a
 * resumed run, adds the same values in the same order to the same bins: the same bits.
 * Per metric, bins of virtual time (KR_METRIC_BINS at most: the run's end / that wide, or,
 * with --end inf, 1 wide and doubled, neighbours merged, as time passes) and the whole run,
 * each with count, sum, min, max and a log-bucket sketch of the values (relative accuracy
 * KR_METRIC_ACCURACY, buckets merged exactly: the quantiles of a merged bin are those of
 * its values together). */
#ifndef KR_CORE_METRICS_H
#define KR_CORE_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include "kairos.h"
#include "state/image.h"

#define KR_METRICS_MAX 64u
#define KR_METRIC_BINS 100u
#define KR_METRIC_ACCURACY 0.01
#define KR_METRIC_BUCKETS 2048u /* per side of a sketch; past it the smallest magnitudes
                                 * merge */
/* The tag of a metric's record where a kr_commit record has its LP. */
#define KR_REC_METRIC UINT64_MAX

/* One side of a sketch (the values above 0, or below): the counts of the log-buckets of
 * |v| from `base` on, dense (a metric's values span a few hundred buckets at most, mostly:
 * an add is an index, not a search). */
struct kr__mstore {
    int32_t base;
    uint32_t len;
    size_t cap;
    uint64_t *c;
};

/* A sum of doubles kept exactly, so that it does not depend on the order of the adds (the
 * engines reduce in different orders: the optimistic one in each thread as its LPs commit):
 * a fixed-point number with its lowest bit 2^-1074, in 32-bit digits held in 64-bit words
 * that take 2^30 adds before their carries must move (kr__xsum_value does that on a
 * copy; the digits' canonical form is unique, so its double is too). */
#define KR_XSUM_DIGITS 68
struct kr__xsum {
    int64_t d[KR_XSUM_DIGITS];
    uint32_t adds;
};
double kr__xsum_value(const struct kr__xsum *x);

/* The values of one bin (or of the whole run). */
struct kr__mstat {
    uint64_t n, zero;
    double min, max;
    struct kr__xsum sum;
    struct kr__mstore pos, neg;
};

struct kr__metric {
    const char *name;
    double width;               /* of a bin */
    uint32_t nbins;             /* bins up to the last one that holds a value */
    struct kr__mstat *bins;     /* [KR_METRIC_BINS] (NULL until the first value) */
    struct kr__mstat all;
};

struct kr__metrics {
    unsigned n;
    bool fixed;                 /* a finite end: the width never changes */
    struct kr__metric *m;
};

/* The model's metrics for a run to `end` (NULL: the model declares none). */
struct kr__metrics *kr__metrics_new(const char *const *names, double end);
/* into += from (the same names and end; from's bins emptied: it goes on from nothing). */
void kr__metrics_drain(struct kr__metrics *into, struct kr__metrics *from);
void kr__metrics_free(struct kr__metrics *ms);
/* The index of `name` in the model's list, or -1. */
int kr__metric_id(const struct kr__metrics *ms, const char *name);
/* A metric's record (what kr_metric hands the engine) and its reduction at time t. */
struct kr__mrec {
    uint32_t id, pad_;
    double value;
};
void kr__metric_add(struct kr__metrics *ms, kr_time t, const struct kr__mrec *rec);
/* The q-quantile (0..1) of the values of s, within the sketch's accuracy (NaN: none). */
double kr__mstat_quantile(const struct kr__mstat *s, double q);
/* Snapshots: every bin, appended; read back into ms (made for the same names and end):
 * false with in->why set if the record is damaged. */
void kr__metrics_save(const struct kr__metrics *ms, struct kr__bytes *b);
bool kr__metrics_load(struct kr__metrics *ms, struct kr__cursor *in);

#endif
