/* typetime.h - how long a model's events of each kind take: an exponential mean of sampled
 * run times per event type (type modulo KR_TYPES), for engines that decide per kind of
 * event how to run it (time-sharing: on an event stack or not; conservative: hand it to a
 * worker or not). A model's few long events among many short ones keep their own mean. */
#ifndef KR_BASE_TYPETIME_H
#define KR_BASE_TYPETIME_H

#include <stdbool.h>
#include <stdint.h>

#define KR_TYPES 16

struct kr__typetime {
    float ns[KR_TYPES];          /* mean run time; < 0: not measured yet */
    uint32_t seen[KR_TYPES];     /* events of the type counted by kr__typetime_due */
};

static inline void kr__typetime_init(struct kr__typetime *t)
{
    for (unsigned i = 0; i < KR_TYPES; i++) {
        t->ns[i] = -1;
        t->seen[i] = 0;
    }
}

/* The mean of `type` (< 0: none yet). */
static inline float kr__typetime_mean(const struct kr__typetime *t, unsigned type)
{
    return t->ns[type % KR_TYPES];
}

/* Count an event of `type`; true if it should be timed: the first `first` of the type,
 * then one in `every` (a power of two). */
static inline bool kr__typetime_due(struct kr__typetime *t, unsigned type, uint32_t first,
                                    uint32_t every)
{
    uint32_t n = ++t->seen[type % KR_TYPES];
    return n <= first || (n & (every - 1)) == 0;
}

/* One timed run of `type` into its mean (weight 1/8; the first sets it). */
static inline void kr__typetime_add(struct kr__typetime *t, unsigned type, float ns)
{
    float *m = &t->ns[type % KR_TYPES];
    *m = *m < 0 ? ns : *m + 0.125f * (ns - *m);
}

#endif
