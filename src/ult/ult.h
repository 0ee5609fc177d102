/* ult.h - user-level threads (ULTs) for time-sharing (paper 000; docs/design.md section 6):
 * events run on their own stacks so that the platform can take the CPU back in the middle
 * of an event and resume it later.
 *
 * Two ways into the platform:
 *  - synchronously, when a model call (kr_schedule, kr_malloc, ...) returns: KR_API_LEAVE
 *    runs check-and-switch; the switch saves only what the calling convention says a
 *    callee must preserve (kr__ult_swap, a dozen instructions);
 *  - asynchronously, from the extra-tick signal handler (tick.c), at any instruction of
 *    model code. The kernel has already saved the complete CPU state - every general
 *    register, flags, x87/SSE/AVX (XSAVE) - in the signal frame on the ULT's own stack; the
 *    handler then switches synchronously, and resuming the ULT returns from the handler
 *    through sigreturn, which restores all of it. So one cheap switch serves both cases.
 *
 * The worker's own stack is the platform context. A ULT is bound to an LP while that LP
 * has an event in progress (running or preempted) and goes back to the thread's pool when
 * the event ends or is abandoned: stacks are needed only for events in flight, not for
 * every LP (65536 LPs x a guarded stack would pass the kernel's limit of 65530 mappings). */
#ifndef KR_ULT_ULT_H
#define KR_ULT_ULT_H

#include "base/sanitize.h"
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "kairos.h"

/* Every thread that runs model callbacks has --stack-kb of stack (event stacks of
 * time-sharing too) with this much unmapped address space below it, so that a frame that
 * outgrows its stack (an array on the stack) faults there and is reported as a stack
 * overflow instead of landing in another stack or in engine memory. Address space only. */
#define KR_STACK_GUARD ((size_t)16 << 20)

/* Why a ULT gave the CPU back. */
enum kr__ult_status { KR_ULT_IDLE, KR_ULT_RUNNING, KR_ULT_DONE, KR_ULT_SUSPENDED };
enum kr__ult_reason { KR_BY_RETURN = 1, KR_BY_TICK, KR_BY_SLICE, KR_BY_WAIT };

struct kr__ult {
    void *sp;                  /* saved stack pointer while switched out */
    char *lo, *hi;             /* the usable stack; one guard page below lo */
    struct kr__ult *next;      /* pool free list */
    void *ev;                  /* engine: the event this ULT runs */
    uint8_t status;            /* enum kr__ult_status */
    uint8_t reason;            /* enum kr__ult_reason of the last suspension */
    bool fresh;                /* sp is a boot frame (never run, or reset) */
    bool preempted;            /* engine: its event has been suspended at least once */
    void *jmp;                 /* engine: where a model error in its event unwinds to */
    uint64_t run_ns;           /* engine: wall time of its event's slices so far */
    uint64_t paused0;          /* engine: the run's paused time when its event started */
    uint64_t over_at;          /* engine: when it was first seen over the timeout, or 0 */
    uint64_t calls;            /* engine: model calls (platform returns) of its event */
    void *scratch;             /* kr_reverse_area outside --state reverse: its event's
                                * (core/lp.c), scratch_n bytes, made on first use */
    size_t scratch_n;
    _Atomic bool foreign;      /* a thread its event started called the API (interpose.c):
                                * per stack, for a tick may switch to another event while
                                * that thread still runs */
#if defined(KR_ASAN)
    void *asan_fake;
#endif
#if defined(KR_TSAN)
    void *tsan_fiber;
#endif
};

/* A worker's stacks. entry(arg) runs on every ULT; it never returns (it loops, giving the
 * CPU back with kr__ult_exit after each event). */
struct kr__ult_pool {
    struct kr__ult *free;
    size_t stack_bytes;
    size_t live, peak, max;    /* stacks in use; refuse suspensions at max */
    void (*entry)(void *);
    void *arg;
    struct kr__ult **all;      /* every stack made, to unmap at the end */
    size_t nall, capall;
};

/* What model-facing calls and the tick handler read on this thread. Initial-exec TLS:
 * safe to touch in a signal handler. */
struct kr__ult_self {
    volatile sig_atomic_t app;        /* 1: model code runs on a ULT (application mode) */
    volatile sig_atomic_t can_suspend;/* the platform can take one more preempted event */
    struct kr__ult *cur;              /* the ULT running now (app or platform mode) */
    void *plat_sp;                    /* the platform context while a ULT runs */
    kr_time now;                      /* timestamp of the running event */
    const _Atomic uint64_t *bh_min;   /* lowest timestamp arrived since the last drain */
    uint64_t slice_ns;                /* give the platform a turn after this much (liveness) */
    uint64_t seg_start_ns;            /* when the running event was last (re)started */
    const uintptr_t *pc_ranges;       /* preemptible code [lo, hi) pairs, see tick.c */
    unsigned npc_ranges;
    /* counters (read by the engine) */
    uint64_t returns;                 /* check-and-switch at a model call's return */
    uint64_t by_return, by_tick, by_slice;
    uint64_t ticks, ticks_platform, ticks_outside;
    uint64_t switches;                /* context switches (both directions) */
    char *alt_lo, *alt_hi;            /* this thread's signal stack (fault.c) */
};

extern __thread struct kr__ult_self kr__ult_self __attribute__((tls_model("initial-exec")));

static inline kr_time kr__ult_bits_time(uint64_t b)
{
    kr_time t;
    memcpy(&t, &b, sizeof t);
    return t;
}

/* Out of line: a switch to the platform (check-and-switch found earlier work). */
void kr__ult_check_slow(void);

/* Model call bracket (api.c): enter platform mode, and on the way out run
 * check-and-switch if the call came from application mode. */
static inline sig_atomic_t kr__ult_enter(void)
{
    sig_atomic_t a = kr__ult_self.app;
    kr__ult_self.app = 0;
    atomic_signal_fence(memory_order_seq_cst);
    return a;
}

static inline void kr__ult_leave(sig_atomic_t was_app)
{
    if (!was_app) return;
    atomic_signal_fence(memory_order_seq_cst);
    struct kr__ult_self *s = &kr__ult_self;
    s->returns++;
    uint64_t b = atomic_load_explicit(s->bh_min, memory_order_relaxed);
    if (s->now > kr__ult_bits_time(b) && s->can_suspend) kr__ult_check_slow();
    atomic_signal_fence(memory_order_seq_cst);
    s->app = 1;
}

/* Pool and switching (ult.c). */
void kr__ult_pool_init(struct kr__ult_pool *p, size_t stack_bytes, size_t max,
                       void (*entry)(void *), void *arg);
void kr__ult_pool_destroy(struct kr__ult_pool *p);
struct kr__ult *kr__ult_get(struct kr__ult_pool *p);
/* Back to the pool; a ULT left mid-event (abandoned) is reset to a fresh start. */
void kr__ult_put(struct kr__ult_pool *p, struct kr__ult *u);
/* An error in the running ULT's event unwound into its entry (from a crash handler on the
 * signal stack, or from deep frames). Under AddressSanitizer the frames it left are still
 * poisoned - its no-return hook cleared the handler's stack, not this one - and a tick's
 * signal frame written there later reads as an overflow: this clears them. */
void kr__ult_unwound(const struct kr__ult *u);
/* Platform: run u (start or resume) until it finishes its event or is preempted. */
void kr__ult_run(struct kr__ult *u);
/* On a ULT: give the CPU back with this status (DONE after an event, SUSPENDED). */
void kr__ult_yield(int status, int reason);
/* A stack overflow of the running ULT: addr is in its guard area, or (a signal the kernel
 * could not deliver, such as a tick arriving with the stack almost full) the interrupted
 * stack pointer sp is within a signal frame of its bottom. */
bool kr__ult_guard_hit(const void *addr, const void *sp);

/* Extra ticks (tick.c). */
int kr__tick_signal(void);
void kr__tick_install(const void *model_code);
int kr__tick_thread_init(void);          /* per worker: create its timer; 0 ok */
void kr__tick_thread_fini(void);
void kr__tick_arm(uint64_t period_ns);   /* 0 disarms */
timer_t kr__tick_timer(void);            /* the calling thread's (calibrate stops it) */

/* Shortest extra-tick period: a tick costs 25-30 us here, and periods of 5-8 us starved the
 * worker loop (no event committed, ever). */
#define KR_TICK_US_MIN 20
#define KR_TICK_US_DEFAULT 1000.0        /* --tick-us when 'kairos calibrate' saved none */
/* Where 'kairos calibrate' keeps its recommended period ($KAIROS_CALIBRATION, else
 * $XDG_CONFIG_HOME/kairos/calibration or ~/.config/kairos/calibration), NULL if nowhere;
 * and the period saved there (from: "calibration"), else the default (from: "default"). */
const char *kr__calibration_path(char *buf, size_t cap);
double kr__calibrated_tick_us(const char **from);

#endif
