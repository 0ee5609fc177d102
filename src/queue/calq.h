/* calq.h - a calendar queue (Brown, 1988) with array buckets: an alternative future-event
 * set measured against the binary heap (heap.h). Buckets are "days" of width `width`; an
 * event lives in bucket floor(ts / width) mod nbuckets, unsorted, as a (ts, event) slot. Push
 * touches one bucket; pop scans the current day's bucket. The table doubles or halves with
 * the number of events and re-estimates the width from the events near the front.
 */
#ifndef KR_QUEUE_CALQ_H
#define KR_QUEUE_CALQ_H

#include <stddef.h>
#include <stdint.h>
#include "heap.h"

struct kr__calq_bucket {
    struct kr__heap_slot *a;
    uint32_t n, cap;
};

struct kr__calq {
    struct kr__calq_bucket *b;
    size_t nb;            /* power of two */
    size_t n;
    double width;
    double day;           /* current day: floor(ts / width) of the events it holds */
    size_t cur;           /* bucket of the current day */
    double inv_width;     /* 1 / width */
    int64_t found;        /* slot of the minimum in bucket cur, or -1 (valid until a change) */
};

void kr__calq_init(struct kr__calq *q);
void kr__calq_destroy(struct kr__calq *q);
void kr__calq_push(struct kr__calq *q, struct kr__ev *e);
struct kr__ev *kr__calq_pop(struct kr__calq *q);
struct kr__ev *kr__calq_top(struct kr__calq *q);

#endif
