/* options.h - the optimistic engine's options (--ckpt-*, --gvt-period, --balance, --window,
 * --safe, --cancel, --preempt and the time-sharing knobs): its record in the run's
 * configuration, written by its rows of the option table (options.c). (--state is the
 * run's: core.h.) */
#ifndef KR_OPTIMISTIC_OPTIONS_H
#define KR_OPTIMISTIC_OPTIONS_H

#include <stdbool.h>
#include "core/core.h"

/* --preempt: plain Time Warp, or events on their own stacks preempted at model-call returns
 * (return), also by extra ticks always (tick) or while the adaptive rule says so. */
enum kr__preempt { KR_PREEMPT_OFF, KR_PREEMPT_RETURN, KR_PREEMPT_TICK, KR_PREEMPT_ADAPTIVE };
const char *kr__preempt_name(int p);

/* --cancel: a rolled-back event's sends cancelled at once, or kept until it runs again and
 * cancelled only if it does not send them again (rollback.c). */
enum kr__cancel { KR_CANCEL_AGGRESSIVE, KR_CANCEL_LAZY };

/* --balance (storm: random moves at every GVT round, for tests). */
enum kr__balance { KR_BALANCE_OFF, KR_BALANCE_AUTO, KR_BALANCE_STORM };

struct kr__tw_options {
    unsigned ckpt_interval;     /* 0: auto (tuned at run time) */
    bool ckpt_given;            /* --ckpt-interval was given: K holds (else the default
                                 * falls to 1 for costly events: tw_ckpt_by_cost) */
    unsigned ckpt_full_every;   /* every F-th checkpoint is full (tracked modes) */
    double gvt_period_ms;
    int balance;                /* enum kr__balance: LP migration */
    int cancel;                 /* enum kr__cancel */
    unsigned window;            /* uncommitted speculative events a thread may hold; 0:
                                 * auto (adapted to cost, at most 8192) */
    bool safe_events;           /* events no rollback can reach run without state saving
                                 * and commit at once (--safe on, default) */
    int preempt;                /* enum kr__preempt: time-sharing */
    double tick_us;             /* extra-tick period ΔET */
    const char *tick_from;      /* where tick_us came from: option, calibration or default */
    double alpha;               /* adaptive rule: ticks while Δe/(APMS+1) >= (1+alpha) ΔET */
};

_Static_assert(sizeof(struct kr__tw_options) <= KR_ENGINE_OPTS_BYTES,
               "the optimistic engine's options outgrow their room in struct kr__config");

/* Its rows of the option table. */
extern const struct kr__opt tw_option_rows[];
void tw_options_init(void *rec);

/* The run's optimistic options. */
static inline const struct kr__tw_options *tw_options(const struct kr__config *cfg)
{
    return kr__engine_opts(cfg, &kr__tw_engine);
}

#endif
