/* report.h - the end-of-run summary (stderr) and the --stats JSON file (schema in
 * docs/stats-schema.md; version 1). */
#ifndef KR_STATS_REPORT_H
#define KR_STATS_REPORT_H

#include <stdio.h>
#include "../core/core.h"

struct kr__totals {
    uint64_t processed, committed, rolled_back, rollbacks, antimessages, checkpoints,
        ckpt_bytes, restores, coasted, remote_sent, gvt_rounds, safe, migrated, window_cuts;
};

void kr__totals(const struct kr__run *r, struct kr__totals *t);
void kr__report_summary(const struct kr__run *r, FILE *f);
void kr__report_json(const struct kr__run *r, const char *path);

#endif
