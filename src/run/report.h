/* report.h - the end-of-run summary (stderr) and the --stats JSON file (schema in
 * docs/stats-schema.md; version 1). */
#ifndef KR_RUN_REPORT_H
#define KR_RUN_REPORT_H

#include <stdio.h>
#include "core/core.h"

void kr__report_summary(const struct kr__run *r, FILE *f);
/* KR_ERR_RESOURCE in err if the file cannot be written. */
int kr__report_json(const struct kr__run *r, const char *path, struct kr__error *err);
/* --lp-stats FILE: a CSV row per LP (docs/stats-schema.md), written by rank 0 with every
 * rank's rows (collective under mpirun: path NULL takes them in and writes nothing). */
int kr__report_lp_stats(const struct kr__run *r, const char *path, struct kr__error *err);
/* --trace FILE: the committed history collected (core/trace.h), sorted, cut at
 * --trace-limit, written beside the file and renamed over it. */
int kr__report_trace(const struct kr__run *r, const char *path, struct kr__error *err);

/* JSON pieces (also for the option table's "config"): a string, quoted and escaped; a
 * number, or null when it is not finite. */
void kr__json_str(FILE *f, const char *s);
void kr__json_num(FILE *f, double v);

#endif
