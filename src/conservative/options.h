/* options.h - the conservative engine's options (--conservative, and Horizon's --handoff,
 * --barriers, --scheduler-works, --offload, --offload-us): its record in the run's
 * configuration, written by its rows of the option table (options.c). */
#ifndef KR_CONSERVATIVE_OPTIONS_H
#define KR_CONSERVATIVE_OPTIONS_H

#include <stdbool.h>
#include "core/core.h"

/* --conservative: which scheme runs (kr__cons_engine.resolve). */
enum { KR_CONS_AUTO, KR_CONS_HORIZON, KR_CONS_WINDOWS };

struct kr__cons_options {
    int scheme;                 /* KR_CONS_* */
    bool scheduler_works;       /* the scheduler runs an event when every worker is busy */
    bool handoff_pull;          /* a locked work queue instead of job slots */
    bool barrier_events;        /* completions as queued events */
    bool offload_always;        /* hand out even events too short to pay */
    double offload_us;          /* offload auto: "too short" means under this */
};

_Static_assert(sizeof(struct kr__cons_options) <= KR_ENGINE_OPTS_BYTES,
               "the conservative engine's options outgrow their room in struct kr__config");

/* Its rows of the option table. */
extern const struct kr__opt cons_option_rows[];

/* The run's conservative options. */
static inline const struct kr__cons_options *cons_options(const struct kr__config *cfg)
{
    return kr__engine_opts(cfg, &kr__cons_engine);
}

#endif
