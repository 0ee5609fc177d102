/* options.h - the conservative engine's options (--handoff, --barriers, --scheduler-works,
 * --offload, --offload-us): its part of the run's configuration. A leaf header, so that the
 * configuration can hold it without seeing the engine. */
#ifndef KR_CONSERVATIVE_OPTIONS_H
#define KR_CONSERVATIVE_OPTIONS_H

#include <stdbool.h>

struct kr__cons_options {
    bool scheduler_works;       /* the scheduler runs an event when every worker is busy */
    bool handoff_pull;          /* a locked work queue instead of job slots */
    bool barrier_events;        /* completions as queued events */
    bool offload_always;        /* hand out even events too short to pay */
    double offload_us;          /* offload auto: "too short" means under this */
};

#endif
