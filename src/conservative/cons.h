/* cons.h - the conservative engine's shared structures (Horizon, paper 003): jobs (one
 * offloaded event and what it produced), the retire queue that puts their effects back in
 * key order, and the two ways of handing a job to a worker (push: one slot per worker the
 * scheduler writes directly; pull: one locked queue all workers take from). */
#ifndef KR_CONSERVATIVE_CONS_H
#define KR_CONSERVATIVE_CONS_H

#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "core/bundle.h"
#include "core/core.h"
#include "conservative/options.h"
#include "base/typetime.h"
#include "core/watchdog.h"
#include "queue/heap.h"

/* One offloaded event. Written by the worker that runs it until `complete` is set (release),
 * then read and recycled by the scheduler: one writer at a time, no lock. */
struct cons_job {
    struct kr__ev *ev;
    struct kr__bundle bundle;    /* bundles: ev and the rest of its bundle (core/bundle.h) */
    kr_time tc;                  /* completion time: start + duration */
    struct kr__ev *out, *out_tail; /* events it sent, in send order */
    char *text;                  /* its kr_printf output */
    size_t ntext, captext;
    struct kr__recbuf rec;       /* its kr_commit records (delivered after the text) */
    char *err;                   /* its model error, or NULL */
    bool done_after;             /* the model's done() held for its LP after it */
    unsigned refs;               /* retire queue, and a barrier event (--barriers events) */
    bool timed;                  /* measure its run time (ns) for --offload auto */
    uint64_t ns;
    _Atomic bool complete;
    bool reaped;                 /* scheduler: its sends are in the set, its LP free */
    struct cons_job *next;       /* retire queue, free list */
    struct cons_job *qnext;      /* pull: the work queue */
};

/* Push: jobs a worker holds, the running one included. With 2 the scheduler can queue the
 * next job behind the running one, so that a worker that finishes starts again at once
 * instead of idling until the scheduler (perhaps running an event itself) gets round to it. */
#define CONS_DEPTH 2

/* A worker thread (the scheduler has one too, for the events it runs itself). */
struct cons_worker {
    /* push: a ring of jobs from the scheduler; a slot is emptied when its job completes */
    _Alignas(64) _Atomic(struct cons_job *) slot[CONS_DEPTH];
    unsigned put;                /* scheduler: the slot it fills next */
    unsigned take;               /* the worker: the slot it runs next */
    _Atomic uint32_t parked;     /* push: 1 while it sleeps on this word (futex) */
    struct cons *c;
    unsigned id;                 /* 1..W; 0 is the scheduler */
    pthread_t tid;
    struct cons_job *job;        /* running now (its thread only) */
    bool direct;                 /* scheduler: its event's sends go straight into the set,
                                  * its output straight out (run_direct) */
    jmp_buf jmp;                 /* a model error unwinds the event to here */
    const char *err_msg;         /* ...with this message (kr__model_error's buffer) */
    char pad_[64];
};

/* Pull handoff: the classic locked work queue and condition variables. */
struct cons_queue {
    pthread_mutex_t mu;
    pthread_cond_t work;         /* a job was queued, or stop */
    pthread_cond_t done;         /* a job completed */
    struct cons_job *head, *tail;
};

struct cons {
    struct kr__run *r;
    struct kr__heap heap;
    unsigned nw;                 /* workers */
    struct cons_worker *w;       /* [0] the scheduler, [1..nw] the workers */
    struct kr__watch *watch;     /* --event-timeout: one slot per thread, as w */
    bool push, barrier_events, scheduler_works, oversubscribed;
    _Atomic bool stop;
    struct cons_queue q;
    /* scheduler only */
    struct cons_job *retire_head, *retire_tail;  /* offloaded, in key order */
    size_t nretire;
    struct cons_job **inflight;  /* offloaded and not yet complete */
    size_t ninflight, capinflight;
    uint8_t *lp_busy;            /* an LP with an event offloaded and not complete */
    struct cons_job *free_jobs;
    struct job_chunk *chunks;    /* where the jobs live, for teardown */
    bool failed;                 /* a job reported a model error: offload nothing more */
    const char *err;             /* the error that ends the run */
    bool offload_auto;           /* short event types run on the scheduler (--offload auto) */
    float offload_ns;            /* ...shorter than this on average (--offload-us) */
    struct kr__typetime types;   /* ...measured per event type */
    struct cons_job direct;      /* an event run here with nothing else outstanding */
    uint64_t ndone;              /* LPs whose done() held, as retired */
    struct cons_job *held;       /* taken, waiting for a free worker (--scheduler-works off) */
    kr_time taken_ts;            /* time of the last event taken (an interrupt stops after) */
    /* --snapshot: the next is due before the first event at or after snap_at, or once the
     * clock passes snap_wall (looked at every 64 events); snap_due, once seen, until taken */
    kr_time snap_at;
    uint64_t snap_wall;
    unsigned snap_tick;
    bool snap_due;
    /* A model that answers queries: every event runs on the scheduler, one at a time, so
     * that every other LP's state in memory is the one at the asking event; the running
     * LP's state before its event is kept for a query that reaches it (cons_query). */
    bool queries;
    struct kr__blobs blobs;
    struct kr__ckpt *pre, *mid;  /* (mid: the running LP's state while `pre` answers) */
    kr_lp running;
};

/* How retiring jobs, and the run, went on or ended; and what a turn of the scheduler did
 * besides (engine.c: schedule_turn). */
enum {
    CONS_RETIRE_MORE, CONS_RETIRE_DONE, CONS_RETIRE_ERROR,
    CONS_TURN_WAIT = -1, CONS_TURN_ON = -2
};

/* handoff.c */
/* After a model error unwound job j's event: keep its message (a copy, made outside any
 * signal handler the error came from). */
void cons_keep_error(struct cons_worker *w, struct cons_job *j);
void cons_handoff_start(struct cons *c);
void cons_handoff_stop(struct cons *c);
/* Hand job j to a worker: true if one took it (push: a free slot; pull: always). */
bool cons_offload(struct cons *c, struct cons_job *j);
/* Push: worker w runs the next job pushed to it, if there is one (false: none). */
bool cons_work_next(struct cons *c, struct cons_worker *w);
/* The scheduler waits a little for a job to complete (spin, yield or sleep). */
void cons_wait(struct cons *c, unsigned *spins);
/* Run job j's event (and done()) on the calling thread (a worker, or the scheduler itself),
 * catching a model error in the job. */
void cons_execute(struct cons *c, struct cons_worker *w, struct cons_job *j);
/* Test seam (tests/unit/test_cons.c, engine.c): the scheduler's turns and the workers' jobs
 * stepped by hand from the calling thread, so that a test chooses the order in which
 * offloaded jobs complete (push handoff; no worker thread starts). cons_test_start sets up
 * and runs init; cons_test_turn is one turn of the scheduler (CONS_TURN_ON, CONS_TURN_WAIT, or how
 * the run ended: RETIRE_*); cons_test_work has worker w (1..) run its next job;
 * cons_test_end ends the run as the engine does (`how`: the last turn's) and frees it. */
struct cons *cons_test_start(struct kr__run *r);
int cons_test_turn(struct cons *c);
bool cons_test_work(struct cons *c, unsigned w);
void cons_test_end(struct kr__run *r, struct cons *c, int how);
/* kr_query (engine.c): see struct cons.queries. */
size_t cons_query(struct kr__ctx *x, kr_lp dest, const void *q, size_t size, void *ans,
                  size_t cap);
/* The engine's summary line and --stats object (report.c). */
void cons_summary(const struct kr__run *r, FILE *f);
void cons_json(const struct kr__run *r, FILE *f);

#endif
