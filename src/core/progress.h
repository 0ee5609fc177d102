/* progress.h - the live progress line on a terminal: virtual time %, committed events/s,
 * efficiency, memory. Silent when stderr is not a terminal (unless --progress on). */
#ifndef KR_CORE_PROGRESS_H
#define KR_CORE_PROGRESS_H

#include <stdbool.h>
#include "core/core.h"

struct kr__progress {
    struct kr__run *r;
    bool on;
    bool drawn;
    double t0, last, last_sample;
    uint64_t last_committed;
};

void kr__progress_start(struct kr__progress *p, struct kr__run *r);
/* Record a row of the run's time series every 100 ms, and redraw the line every 500 ms;
 * `vt` is the committed virtual time (GVT). */
void kr__progress_tick(struct kr__progress *p, kr_time vt);
void kr__progress_stop(struct kr__progress *p);
double kr__wall_now(void);
size_t kr__rss_bytes(void);
size_t kr__peak_rss_bytes(void);

#endif
