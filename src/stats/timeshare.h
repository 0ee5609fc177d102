/* timeshare.h - statistics of time-sharing (--preempt): preemptions by trigger, resumed vs
 * abandoned, ticks, armed time, event time and model calls per event, for the summary line
 * "time sharing:" and the --stats JSON "time_sharing" object. */
#ifndef KR_STATS_TIMESHARE_H
#define KR_STATS_TIMESHARE_H

#include <stdio.h>
#include "../core/core.h"

void kr__timeshare_summary(const struct kr__run *r, FILE *f);
void kr__timeshare_json(const struct kr__run *r, FILE *f);

#endif
