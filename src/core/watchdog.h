/* watchdog.h - --event-timeout where an event cannot be preempted (the sequential engine,
 * and events run on a worker's own stack): the running thread marks each event's start and
 * end in its slot (two stores and a pointer, no lock); a watcher (the optimistic engine's
 * main thread, or a small thread beside the sequential and conservative engines) polls the
 * slots and ends the run with a model error naming the event when one has not returned
 * within the timeout.
 * Events on event stacks are timed by the engine itself (src/optimistic/preempt.c). */
#ifndef KR_CORE_WATCHDOG_H
#define KR_CORE_WATCHDOG_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "msg/event.h"

struct kr__run;

struct kr__watch {
    _Alignas(64) _Atomic uint64_t seq;     /* odd while an event runs */
    _Atomic(const struct kr__ev *) ev;     /* NULL: a callback (lp, mode) */
    _Atomic uint64_t lp;
    _Atomic unsigned mode;                 /* enum kr__mode */
    clockid_t cpu;                         /* CPU clock of the thread using the slot */
    bool has_cpu;                          /* (else wall time) */
    /* watcher side */
    uint64_t seen;                         /* seq at the last poll */
    uint64_t since_ns;                     /* when seq was first seen at that odd value */
};

/* The calling thread is the one whose callbacks this slot times: a timeout counts its CPU
 * time, so that a stopped process (SIGSTOP) or a write to a stalled stdout reader is not
 * taken for an endless loop. */
void kr__watch_bind(struct kr__watch *w);

static inline void kr__watch_begin(struct kr__watch *w, const struct kr__ev *e)
{
    atomic_store_explicit(&w->ev, e, memory_order_relaxed);
    uint64_t s = atomic_load_explicit(&w->seq, memory_order_relaxed);
    atomic_store_explicit(&w->seq, s + 1, memory_order_release);
}

/* A callback that is not an event: init, done() after init, finish (mode: enum kr__mode). */
static inline void kr__watch_begin_callback(struct kr__watch *w, uint64_t lp, unsigned mode)
{
    atomic_store_explicit(&w->ev, NULL, memory_order_relaxed);
    atomic_store_explicit(&w->lp, lp, memory_order_relaxed);
    atomic_store_explicit(&w->mode, mode, memory_order_relaxed);
    uint64_t s = atomic_load_explicit(&w->seq, memory_order_relaxed);
    atomic_store_explicit(&w->seq, s + 1, memory_order_release);
}

static inline void kr__watch_end(struct kr__watch *w)
{
    uint64_t s = atomic_load_explicit(&w->seq, memory_order_relaxed);
    atomic_store_explicit(&w->seq, s + 1, memory_order_release);
}

/* A callback that a model error unwound before kr__watch_end: mark it ended. */
static inline void kr__watch_settle(struct kr__watch *w)
{
    if (atomic_load_explicit(&w->seq, memory_order_relaxed) & 1) kr__watch_end(w);
}

/* The --event-timeout model error for event e, `hint` appended (the sequential engine, the
 * watchdog and the engine's own check on preempted events all say the same). */
void kr__timeout_message(char *buf, size_t cap, const struct kr__run *r, const struct kr__ev *e,
                         const char *hint);
/* Check one slot; exits the process with the error if it timed out. `hint` is appended to
 * the message (may be ""). */
void kr__watch_poll(struct kr__watch *w, const struct kr__run *r, const char *hint);
/* The slot of init, done() after init and finish, on whichever thread runs them. */
extern struct kr__watch kr__watch_callbacks;
/* The watcher thread of a run (no-op when --event-timeout is 0): it polls the callback slot
 * and the n slots an engine attaches (the sequential and conservative engines; NULL
 * detaches them). */
void kr__watch_thread_start(const struct kr__run *r);
void kr__watch_attach(struct kr__watch *w, size_t n);
void kr__watch_thread_stop(void);

#endif
