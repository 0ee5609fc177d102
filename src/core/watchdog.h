/* watchdog.h - --event-timeout where an event cannot be preempted (the sequential engine,
 * and events run on a worker's own stack): the running thread marks each event's start and
 * end in its slot (two stores and a pointer, no lock); a watcher (the optimistic engine's
 * main thread, or a small thread beside the sequential and conservative engines) polls the
 * slots. An event times out when its thread has spent the timeout's CPU time in it (an
 * endless loop), or as long blocked in a system call other than a write to stdout or
 * stderr (a read no one answers, a lock taken twice, a sleep: /proc says which call) - a
 * stopped process, a starved thread or a stalled reader of the output count for neither.
 * The watcher then signals the thread (KR_SIG_TIMEOUT), whose handler (core/fault.c) turns
 * the timeout into a model error at the event, unwound as a crash in model code is: the
 * engines end the run at it with everything committed before it printed, and a speculative
 * event that loops only on a wrong path is rolled back instead. A thread that does not
 * unwind within a second (inside the C library's locks, or engine code) ends the process
 * as before: kr__die, committed output first.
 * Events on event stacks are timed by the engine itself (src/optimistic/preempt.c). */
#ifndef KR_CORE_WATCHDOG_H
#define KR_CORE_WATCHDOG_H

#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include "msg/event.h"

/* The watcher's signal to a thread whose event timed out (time-sharing's ticks use
 * SIGRTMIN + 4). */
#define KR_SIG_TIMEOUT (SIGRTMIN + 5)

struct kr__run;

struct kr__watch {
    _Alignas(64) _Atomic uint64_t seq;     /* odd while an event runs */
    _Atomic(const struct kr__ev *) ev;     /* NULL: a callback (lp, mode) */
    _Atomic uint64_t lp;
    _Atomic unsigned mode;                 /* enum kr__mode */
    clockid_t cpu;                         /* CPU clock of the thread using the slot */
    bool has_cpu;                          /* (else wall time) */
    pid_t tid;                             /* that thread (0: not known) */
    _Atomic uint64_t kicked;               /* seq of the event the watcher signalled to end */
    _Atomic long call;                     /* the system call it was found blocked in, or -1 */
    /* watcher side */
    uint64_t seen;                         /* seq at the last poll */
    uint64_t since_ns;                     /* when seq was first seen at that odd value */
    uint64_t cpu_last, wall_last;          /* the thread's CPU clock and the wall clock then */
    uint64_t blocked_ns;                   /* wall time it was seen blocked in a call */
    uint64_t kick_ns;                      /* when it was first signalled */
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

/* The --event-timeout model error for event e (blocked in system call `call`, or -1: it
 * ran), `hint` appended (the watchdog and the engine's own check on preempted events say
 * the same). */
void kr__timeout_message(char *buf, size_t cap, const struct kr__run *r, const struct kr__ev *e,
                         long call, const char *hint);
/* Check one slot; signals its thread if its callback timed out, and exits the process with
 * the error if that thread does not end the callback within a second. `hint` is appended
 * to that message (may be ""). */
void kr__watch_poll(struct kr__watch *w, const struct kr__run *r, const char *hint);
/* In the handler of KR_SIG_TIMEOUT, on the thread of slot w: true if the callback the
 * watcher meant is still running (then the caller raises kr__watch_raise); false if it
 * returned meanwhile. */
bool kr__watch_meant(struct kr__watch *w);
/* The timeout as a model error at the running callback (does not return). */
_Noreturn void kr__watch_raise(struct kr__watch *w, const struct kr__run *r);
/* The slot of init, done() after init and finish, on whichever thread runs them. */
extern struct kr__watch kr__watch_callbacks;
/* The watcher thread of a run (no-op when --event-timeout is 0): it polls the callback slot
 * and the n slots an engine attaches (the sequential and conservative engines; NULL
 * detaches them). */
void kr__watch_thread_start(const struct kr__run *r);
void kr__watch_attach(struct kr__watch *w, size_t n);
void kr__watch_thread_stop(void);

#endif
