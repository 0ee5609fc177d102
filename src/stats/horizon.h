/* horizon.h - statistics of the conservative engine (--sync conservative): how it handed
 * events out (push or pull, event-free or barrier events), how many ran beside each other,
 * what held the scheduler back, for the summary line "conservative:" and the --stats JSON
 * "conservative" object. */
#ifndef KR_STATS_HORIZON_H
#define KR_STATS_HORIZON_H

#include <stdio.h>
#include "../core/core.h"

void kr__horizon_summary(const struct kr__run *r, FILE *f);
void kr__horizon_json(const struct kr__run *r, FILE *f);

#endif
