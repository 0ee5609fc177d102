/* progress.h - the live progress line on a terminal: virtual time %, committed events/s,
 * efficiency, memory. Silent when stderr is not a terminal (unless --progress on). */
#ifndef KR_STATS_PROGRESS_H
#define KR_STATS_PROGRESS_H

#include <stdbool.h>
#include "../core/core.h"

struct kr__progress {
    const struct kr__run *r;
    bool on;
    bool drawn;
    double t0, last;
    uint64_t last_committed;
};

void kr__progress_start(struct kr__progress *p, const struct kr__run *r);
/* Redraw if half a second has passed; `vt` is the committed virtual time (GVT). */
void kr__progress_tick(struct kr__progress *p, kr_time vt);
void kr__progress_stop(struct kr__progress *p);
double kr__wall_now(void);
size_t kr__rss_bytes(void);
size_t kr__peak_rss_bytes(void);

#endif
