/* statesave.h - statistics of state saving (checkpoints, restores, page tracking, buddy
 * plans) for the summary and the --stats JSON "state_saving" object. */
#ifndef KR_CORE_STATESAVE_H
#define KR_CORE_STATESAVE_H

#include <stdio.h>
#include "core/core.h"

struct kr__state_totals {
    uint64_t checkpoints, full, full_bytes, incr_bytes, ckpt_ns, ckpt_timed;
    uint64_t restores, restore_ns, events_timed, event_ns;
    uint64_t faults, mprotects, partitions, plans;
    double interval_mean;        /* K: fixed, or the threads' tuned values averaged */
    double state_bytes_mean;     /* bytes in use per LP at the end */
};

void kr__state_totals(const struct kr__run *r, struct kr__state_totals *t);
void kr__state_summary(const struct kr__run *r, FILE *f);
void kr__state_json(const struct kr__run *r, FILE *f);

#endif
