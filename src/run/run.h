/* run.h - the run's set-up and teardown on their own (run.c), for tests that drive an
 * engine by hand; kr__run_main does both around the engine. */
#ifndef KR_RUN_RUN_H
#define KR_RUN_RUN_H

#include "core/core.h"
#include "base/error.h"

/* Model, parameters, LP table, counters, pools, state region: KR_OK or err. */
int kr__run_setup(struct kr__run *r, const struct kr__config *cfg, struct kr__error *err);
/* Everything kr__run_setup and the LPs' set-up allocated, and the watcher thread it started. */
void kr__run_free(struct kr__run *r);

#endif
