/* output.h - committed output (kr_printf). Text is held per LP while its event is
 * speculative, moved to a per-thread buffer when the event commits, and printed in
 * (virtual time, tie key, order within the event) order, so stdout is the same under every
 * engine and thread count. */
#ifndef KR_STATS_OUTPUT_H
#define KR_STATS_OUTPUT_H

#include <stdio.h>
#include <pthread.h>
#include "msg/event.h"

/* In a record's part: not text but a kr_commit record (a u64 LP and the bytes), for the
 * model's commit hook; it sorts after the event's text, records in the order made. */
#define KR_OUT_RECORD 0x80000000u

struct kr__outrec {
    struct kr__key k;
    uint32_t part;        /* order within one event (KR_OUT_RECORD: a record) */
    uint32_t len;
    char *text;           /* malloc'd; output is rare, so this is off the event path */
};

/* A model metric's value (kr_metric) held with its event while that is speculative: no
 * text, no allocation, no order against the output (core/metrics.h: sums are exact). */
struct kr__outval {
    struct kr__key k;
    uint32_t id;
    double value;
};

struct kr__outvec {
    struct kr__outrec *r;
    size_t n, cap;
    struct kr__outval *val;       /* (the optimistic engine's metric values, in key order) */
    size_t nval, capval;
};

/* Append text produced by the event with key k (copies the text). */
void kr__outvec_add(struct kr__outvec *v, const struct kr__key *k, const char *text, size_t len);
/* Append a kr_commit record made by the event with key k (copied). */
void kr__outvec_add_record(struct kr__outvec *v, const struct kr__key *k, const char *rec,
                           size_t len);
/* Append a metric value of the event with key k. */
void kr__outvec_add_value(struct kr__outvec *v, const struct kr__key *k, uint32_t id,
                          double value);
/* Append a record with its part given (output of another rank, in key order or not). */
void kr__outvec_add_part(struct kr__outvec *v, const struct kr__key *k, uint32_t part,
                         const char *text, size_t len);
/* Drop (rollback) every record whose key is >= k; records are in key order. */
void kr__outvec_drop_from(struct kr__outvec *v, const struct kr__key *k);
/* Move every record with key < h to the end of `to`. */
void kr__outvec_move_before(struct kr__outvec *v, const struct kr__key *h, struct kr__outvec *to);
void kr__outvec_free(struct kr__outvec *v);
/* Sort records with key < h out of `v`, hand them to emit in order, and remove them. */
void kr__outvec_emit_before(struct kr__outvec *v, const struct kr__key *h,
                            void (*emit)(void *arg, const struct kr__outrec *o), void *arg);

/* A worker's committed output, shared with the printer thread. */
struct kr__outsink {
    pthread_mutex_t mu;
    struct kr__outvec v;
    struct kr__key upto;   /* everything before this key has been committed by the owner */
};

/* Take the records of n sinks (first, and one every `stride` bytes after it) into `to`, and
 * return the least of their marks: how far what was taken may be printed. */
struct kr__key kr__outsinks_take(struct kr__outsink *first, unsigned n, size_t stride,
                                 struct kr__outvec *to);

#endif
