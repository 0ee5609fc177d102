/* options.h - the optimistic engine's options (--state, --ckpt-*, --gvt-period, --balance,
 * --window, --safe, --cancel, --preempt and the time-sharing knobs): its part of the run's
 * configuration. A leaf header, so that the configuration can hold it without seeing the
 * engine. */
#ifndef KR_OPTIMISTIC_OPTIONS_H
#define KR_OPTIMISTIC_OPTIONS_H

#include <stdbool.h>

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
    int state_mode;             /* enum kr__state_mode: how LP state is saved */
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

#endif
