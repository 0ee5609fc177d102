/* parts.h - the optimistic engine's records, one per mechanism, that a worker's record
 * (struct tw_thread) and the run's (struct tw_global) hold (tw.h), with the constants they
 * are sized by. A mechanism's state lives in its record, named after its file: the
 * balancer's in tw_bal and tw_balancer (migrate.c), queries' in tw_asking (query.c) ...
 * Private to the optimistic engine. */
#ifndef KR_OPTIMISTIC_PARTS_H
#define KR_OPTIMISTIC_PARTS_H

#include <pthread.h>
#include <setjmp.h>
#include "core/core.h"
#include "core/bundle.h"
#include "base/typetime.h"
#include "msg/match.h"
#include "stats/output.h"
#include "ult/ult.h"

/* Time one event in this many (the cost of an event, for statistics and tuning). */
#define TW_EVENT_SAMPLE 64
/* ...and one checkpoint in this many (clock reads cost PHOLD-std a few percent). */
#define TW_CKPT_SAMPLE 8
#define TW_CKPT_AUTO_START 16
#define TW_CKPT_AUTO_MAX 1024
/* The default interval (--ckpt-interval not given) is 1 while the thread's events cost at
 * least TW_CKPT_CHEAP checkpoints each: saving before every unsafe event then costs at most
 * 1/TW_CKPT_CHEAP of the work, and a rollback coasts over nothing. Measured: PHOLD with 5-us
 * events beside a busy core, 2 threads, whose events cost ~115 checkpoints: before the
 * shared worker retired, the other coasted 1100-4800 events (1-2% of the run) at K = 16. */
#define TW_CKPT_CHEAP 64

/* Counters at the last checkpoint-interval tuning step. */
struct tw_tune {
    uint64_t processed, checkpoints /* timed */, rollbacks, timed /* events */;
};
/* The last TW_COST_SAMPLES timings of one kind (ns): their median is what a checkpoint or
 * an event costs now, which no cold start, tick or descheduled sample moves (the means of
 * a short PHOLD run beside other work: 500-1700 ns a checkpoint, against 44 quiet). */
#define TW_COST_SAMPLES 16
struct tw_costs {
    uint32_t ns[TW_COST_SAMPLES];
    unsigned n;
};
static inline void tw_cost_add(struct tw_costs *c, uint64_t ns)
{
    c->ns[c->n++ % TW_COST_SAMPLES] = ns > UINT32_MAX ? UINT32_MAX : (uint32_t)ns;
}

/* A GVT round at least every TW_ROUND_EVENTS events of a thread keeps what it commits in
 * cache (measured on PHOLD-std: 1 thread 4.0 M/s with 5 ms rounds, 8.9 M/s with ~2k-event
 * rounds). A thread with TW_MAX_UNCOMMITTED uncommitted events waits for GVT instead of
 * speculating further: bounded optimism keeps memory bounded and stops rollback storms.
 * The window (optimism.c) lowers this bound while speculation costs more than it gains. */
#define TW_ROUND_EVENTS 2048
#define TW_MAX_UNCOMMITTED (4 * TW_ROUND_EVENTS)

/* Adaptive optimism (optimism.c): the thread's window and what it was judged on. */
struct tw_window {
    uint64_t limit;           /* uncommitted speculative events allowed (0: safe events only) */
    uint64_t max_bytes;       /* checkpoint bytes this thread may hold while speculating */
    bool fixed;               /* --window N: never adapted (but by --memory-max) */
    uint64_t fixed_limit;     /* ...that N */
    bool mem_short;           /* --memory-max: past the budget at the last check */
    unsigned mem_over;        /* ...checks in a row with events and states alone past it */
    bool resting;             /* cut: no probe before probe_ns */
    unsigned bad;             /* periods in a row whose rollbacks wasted too much */
    uint64_t probe_ns, rest_ns;
    uint64_t t0, committed, safe, restore_ns, undone; /* counters at the period's start */
};

/* Deliveries between LPs of the same thread are queued and run after the current event,
 * so a rollback never starts inside a model handler. */
struct tw_item {
    struct kr__ev *e;
    int anti;
};

/* Safe events. A thread's clock is a time below which it will send no more messages: its
 * floor (the least of its next pending event and what the other clocks allow to reach it)
 * plus the model's lookahead. An event below every other thread's clock can no longer be
 * reached by a straggler or an antimessage, so it runs without a checkpoint and commits at
 * once, as in the sequential engine. With one thread every event is safe. Each clock has
 * its own cache line, written when it moved: at every loop turn where the clocks can move
 * (a lookahead, and a core per thread), else every TW_CLOCK_TURNS turns, with the quiet
 * record (and when idle). A stale clock costs safe events: the laggard's events are all
 * safe only while it sees the leader's clock of now. PHOLD-std on 2 threads, publishing
 * every 16 turns: 23-24% safe events, 11.0 M/s; every turn: 52-54%, 12.4 M/s. */
#define TW_CLOCK_TURNS 16
/* What a thread holds, published at its commits for the others' --memory-max checks. */
struct tw_mempub {
    _Alignas(64) _Atomic size_t events, ckpts, pending;
    char pad_[64 - 3 * sizeof(size_t)];
};

struct tw_clock {
    _Alignas(64) _Atomic uint64_t bits;   /* kr_time bits (may be -inf) */
    _Atomic uint64_t now_bits;            /* progress: its latest event's timestamp, as often */
    /* Quiet record (engine.c, tw_quiet_*), under a sequence lock: odd while written, and
     * left odd (void) from a thread's first cross-thread send after writing it until it is
     * written again. While even: at the moment it was written the thread's lowest pending
     * key was (top_bits, top_gen), and it had put `sent` and taken `taken` messages. */
    _Atomic uint32_t seq;
    _Atomic uint32_t top_gen;
    _Atomic uint64_t top_bits;
    _Atomic uint64_t sent, taken;
    /* Across ranks: its clock lowered to its records to other ranks still in its messages
     * (those may leave after a later clock: ranks.c, the stamp). */
    _Atomic uint64_t rbits;
    char pad_[64 - 7 * sizeof(uint64_t)];
};

/* Safe events without lookahead. The clocks above reach a fixed point when the lookahead is
 * 0 (each thread's floor waits on the other's), so no event is ever below them. The quiet
 * records give a second bound: when every other thread's record is valid and, read twice
 * without a change, all messages ever put were taken (the sums of `sent` and `taken`
 * match, this thread's own counts included), nothing is in flight and no other thread has
 * talked since it wrote its record. Then every message that can still reach this thread
 * descends from some other thread's pending event - at or above the least published top L -
 * or from what this thread sends from now on; each hop to another thread's LP orders its
 * message after its cause and at least the lookahead later. So nothing can arrive below
 * tw_after(L), and each send of this thread lowers that bound to tw_after(its key). Events
 * below the bound (comparing timestamp and zero-delay hops) are safe. */

/* Queries (query.c). A request for an answer from an LP of another thread, on the asker's
 * stack (it waits for the answer), pushed onto the owner's inbox. */
enum { TW_Q_WAIT, TW_Q_ANSWERED, TW_Q_FAILED, TW_Q_STOPPED };
struct tw_qreq {
    struct tw_qreq *next;
    struct kr__key k;             /* the asking event's key: the answer is dest's state there */
    kr_lp dest, asker;
    const void *q;
    size_t size;
    void *ans;                    /* the asker's buffer: the handler writes straight to it */
    size_t cap, n;
    unsigned depth;               /* queries nested at the asker (kr__ctx.qdepth) */
    char *err;                    /* TW_Q_FAILED: the handler's model error (malloc'd) */
    _Atomic int status;           /* TW_Q_*: set last, with release */
};
/* Per thread: its inbox, and the rest of its quiet record's top key (the record has (ts,
 * gen); queries need the whole key to find the run's least event). */
struct tw_qline {
    _Alignas(64) _Atomic(struct tw_qreq *) in;
    _Atomic uint32_t tie;
    _Atomic uint64_t src, seq;
    _Atomic uint64_t wait_bits;   /* the time of its event waiting to ask (+inf: none) */
};

/* Load balancing (balance.h, migrate.c): a low share of CPU must last this many windows. */
#define TW_SHARED_WINDOWS 3                 /* windows of TW_BALANCE_NS / 2 it must last
                                             * (5 cost short loaded runs 3-6%; 3 retired
                                             * nobody in 42 idle runs of 7 models) */

/* Commit, a worker's part (commit.c). */
struct tw_committing {
    kr_lp *dirty;             /* LPs with uncommitted processed events */
    size_t ndirty, capdirty;
    kr_lp *open;              /* page/buddy: LPs whose safe events left pages open */
    size_t nopen, capopen;
    struct kr__outsink sink;  /* committed output, for the printer */
    struct kr__key applied;   /* horizon this thread last committed up to */
    struct kr__metrics *metrics; /* the model's metrics this thread's commits reduced, until
                                  * drained into the run's (tw_metrics_drain; NULL: none,
                                  * or another rank than 0: those go out as records) */
};

/* Deliveries between LPs of the same thread are queued and run after the current event
 * (tw_flush_local). */
struct tw_local {
    struct tw_item *work;
    size_t wn, wcap;
};

/* The worker loop's turns (engine.c). */
struct tw_pacing {
    unsigned every;           /* housekeeping after this many turns (TW_EVERY_NS) */
    uint64_t turns_t0;        /* when the turns since the last housekeeping began */
    unsigned prog_turn;       /* turns, for its progress every TW_CLOCK_TURNS */
    bool over;                /* threads outnumber cores (tw_worker) */
};

/* Safe events, a worker's part (clock.c, tw.h): its clock and quiet record. */
struct tw_clocks_th {
    kr_time safe;             /* events below this are safe (the other clocks' least)... */
    kr_time safe_prev;        /* ...and before the last drain (--check: no message below) */
    kr_time sent;             /* what this thread last published as its clock */
    struct kr__key qbound;    /* nothing can arrive below this (ts, gen): tw_quiet_try */
    uint64_t qsent, qtaken;   /* messages put to other threads, taken from them */
    kr_time top_max;          /* the latest time any quiet record of it named (optimism.c) */
    uint32_t seq;             /* its quiet record's sequence (odd: void) */
    bool talked;              /* sent since the record was last written */
    uint64_t last;            /* the others' sequences and own counts, summed, at the last
                               * try (tw_quiet_try) */
    unsigned turn;            /* loop turns, for the clock's every TW_CLOCK_TURNS */
    bool eager;               /* publish the clock at every turn (TW_CLOCK_TURNS) */
};

/* Outgoing (transport.c): channels with messages put since they were last published. */
struct tw_posting {
    unsigned *chans;
    size_t n;
    unsigned msgs;            /* messages put since the last publish */
    unsigned turns;           /* loop turns since then */
    unsigned every;           /* publish after this many turns (TW_POST_NS) */
};

/* A model error in an event on the worker's stack unwinds to `jmp` (coasting too), on an
 * event stack to that stack's (preempt.c); deferred, it is reported only if it commits. */
struct tw_catch {
    jmp_buf jmp;              /* events run on the worker's stack (and coasting) */
    jmp_buf *cur;             /* where a model error unwinds to: jmp, or an event stack's */
    bool armed;               /* cur is valid: a model error is deferred, not fatal */
    const char *msg;          /* the deferred error's message, until tw_keep_error copies it */
};

/* Checkpointing (rollback.c): the interval and what tunes it. */
struct tw_ckpting {
    unsigned interval;        /* K: checkpoint an LP every K of its events (tuned if auto) */
    struct tw_tune tune;      /* what the last tuning step saw */
    struct tw_costs ck_cost, ev_cost; /* recent checkpoints and events (tw_ckpt_by_cost) */
};

/* --memory-max, a worker's part (optimism.c). */
struct tw_mem_th {
    size_t share;             /* its share for events and checkpoints, or 0 */
    struct kr__ev **sendback; /* pending events whose senders it asks to roll back */
    size_t nsendback, capsendback;
};

/* Migration, a worker's part (migrate.c): pending events handed over, and max_done_committed
 * as it was then. */
struct tw_mig_th {
    struct kr__ev **ev;
    struct kr__key max_done_out;
    size_t n, cap;
};

/* GVT rounds, a worker's part (gvt.c). */
struct tw_gvt_th {
    uint64_t seen_state;      /* the round state it last acted on (g->state) */
    uint64_t seen_epoch;      /* the horizon it last applied (g->epoch) */
    struct kr__key min_sent;  /* lowest key sent to other threads since phase 1 */
    struct kr__key report;    /* this round's local minimum */
    bool all_done;            /* done-phase report */
    struct kr__key max_done;
    kr_lp ndone;              /* its LPs whose committed state is done */
    struct kr__key max_done_committed;  /* latest "became done" among those */
    uint64_t end_asked;       /* 1 + its processed count when it last started a round with
                               * nothing below the end (0: never; worker.c round_now) */
};

/* Time-sharing, a worker's part (preempt.c). */
struct tw_sharing {
    uint8_t preempt;          /* enum kr__preempt */
    bool ticks_fine;          /* fine-grain ticks armed (else only the liveness slice) */
    struct kr__typetime types; /* adaptive: mean event time per event type */
    unsigned nsusp;           /* LPs with a preempted event (or one waiting for answers) */
    bool ults_on;             /* event stacks: time-sharing, or a model that answers queries */
    struct kr__ult_pool ults;
    uint64_t tick_ns, timeout_ns;
    uint64_t armed_t0;        /* when the fine ticks were last armed */
    double de_ns, apms;       /* exponential means over events on stacks: event time, model
                               * calls per event (the tick rule) */
    double rule_ns;           /* adaptive: arm while de / (apms + 1) >= this */
};

/* Across ranks, a worker's part (ranks.c). */
struct tw_rank_th {
    unsigned nround;          /* GVT rounds whose phase 1 it passed: its colour is the lowest
                               * bit (what it sends to other ranks is counted by colour) */
    bool nudge;               /* another rank is in a later round: start one */
    uint64_t held_ns;         /* idle, its top held back since (engine.c; 0: not held)... */
    uint64_t held_ran;        /* ...with this many events processed then, */
    uint64_t held_clock;      /* ...and the other ranks' clock then (net.clock_bits) */
    unsigned turns;           /* loop turns since it last flushed and took messages in... */
    unsigned every;           /* ...and how many make TW_RANK_POST_NS (tw_post_pace) */
    uint64_t sent[2], recv[2]; /* records to and from other ranks, by colour */
    int64_t white;            /* at its report: of the old colour, sent less received */
    uint64_t id_next;         /* the remote id of its next event sent to another rank */
    kr_time buf_min;          /* least time of its records to other ranks not yet flushed */
    kr_time stamp_last;       /* worker 0: the rank's clock at its last stamps */
    bool held;                /* hand-offs of its polls wait in a full channel */
    struct kr__match match;   /* events from other ranks, by remote id (their antimessages) */
};

/* Queries, a worker's part (query.c). */
struct tw_asking {
    struct kr__key full;      /* no other thread's pending event lies below this whole key
                               * (tw_quiet_try; own sends lower it) */
    struct kr__ev *ev;        /* the event it runs in query mode (NULL: none)... */
    struct kr__key k;         /* ...the key every query is answered at now... */
    struct kr__ckpt *mid;     /* ...its LP holds its state before ev, to answer a query,
                               * and ev's state mid-event is kept here (NULL: not so)... */
    struct tw_qreq *rq;       /* ...and ev waits on its stack for this answer (NULL: not) */
    bool abort;               /* the running event asked a query outside query mode, or an
                               * answer was refused as the run stops: it is undone */
    char *err;                /* a failed remote answer's message, until the next one */
    kr_time wait;             /* the least time another thread's event waits to ask at */
    kr_time wait_own;         /* the time its own top waits to ask at (+inf: none) */
    uint64_t types;           /* event types (mod 64) that asked here: one of them that is
                               * the least when it comes up runs in query mode at once */
    uint64_t wtypes;          /* event types (mod 64) whose event in query mode waited long
                               * for an answer from another thread: they run on a stack... */
    unsigned quick;           /* ...until this many answers in a row come quickly */
    struct kr__bundle bund;   /* bundles: ev's bundle (th->bund serves the events run while
                               * it waits on its stack)... */
    struct kr__ev *const *cbundle; /* ...and the context's view of it while it waits */
    unsigned cn;
};

/* --balance auto, a worker's part (migrate.c): its CPU share over windows of wall time, read
 * by the closer of a round, who plans the moves. */
struct tw_bal {
    _Atomic double cpu_share;   /* -1: not measured yet */
    _Atomic int rq_shared;      /* its last window waited on the run queue (TW_WAIT_SHARED) */
    _Atomic int wants_back;     /* retired, and its core is free again */
    _Atomic double probe;       /* retired: its core's share at its last probe (-1: none) */
    /* its share of the LPs (per mille of a core, TW_WEIGHT_FULL with a core of its own, 0
     * retired) and, found on a shared core, the share it would get there (0: not found) -
     * both the round closer's, read only in planning */
    unsigned weight, part;
    uint64_t wall, cpu, slept; /* the window's start: wall and CPU time, time slept */
    uint64_t slept_ns;        /* time it slept for lack of work, in all */
    int sched_fd;             /* /proc/thread-self/schedstat (-1: none), ... */
    uint64_t waited;          /* ...its run-queue wait at the window's start */
    double shares[TW_SHARED_WINDOWS];
    unsigned nshares;
    unsigned free_probes;
    bool start_probe;         /* started out: its core not probed yet (tw_balance_home) */
    /* its counters at its last phase-2 report, read by the round's closer (the trial) */
    uint64_t rep_committed, rep_processed, rep_rolled, rep_cuts;
};

/* The run's settings (setup.c), read-only once the workers run (lookahead: from the clocks'
 * start). */
struct tw_settings {
    uint64_t period_ns;                    /* start a GVT round at least this often... */
    uint64_t round_events;                 /* ...or when a thread processed this many events */
    bool ckpt_auto;                        /* --ckpt-interval auto: threads tune their K */
    bool ckpt_by_cost;                     /* no --ckpt-interval: K is ckpt_interval, or 1
                                            * for costly events (tw_ckpt_by_cost) */
    unsigned ckpt_interval;                /* --ckpt-interval K */
    unsigned ckpt_full_every;              /* a full checkpoint every this many */
    bool open_pages;                       /* page/buddy: safe events leave written pages
                                            * open (tw_keep_open) */
    bool lazy;                             /* --cancel lazy (rollback.c) */
    bool chained;                          /* checkpoints form chains (not --state full): they
                                            * are freed by trimming chains, else one by one */
    bool reverse;                          /* --state reverse: no checkpoints; each unsafe
                                            * event keeps a reverse record (reverse.c) */
    int balance;                           /* enum kr__balance */
    unsigned chan_slots;                   /* per ring between two threads */
    bool check;                            /* --check: verify invariants as we go */
    bool seam;                             /* the test seam: stragglers from outside */
    bool queries;                          /* the model answers queries (query.c) */
    bool windows;                          /* the conservative engine's windows scheme:
                                            * no speculation (optimism.c) */
    bool spans;                            /* windows, safe events on and no done(),
                                            * queries or bundles: events sent
                                            * with kr_schedule_span widen the clocks, and
                                            * the spans are checked (clock.c) */
    kr_time lookahead;
};

/* The run's end (setup.c, gvt.c): the workers running, the lowest committed model error,
 * and an interrupted run's stop, which waits until GVT has passed every safe event run
 * (those were committed at once and cannot be rolled back): the watcher asks (stopping),
 * each worker turns safe events off and reports its latest one (safe_hi, acks). */
struct tw_ending {
    _Atomic unsigned running;
    pthread_mutex_t mu;                    /* the last worker out signals cv, so that */
    pthread_cond_t cv;                     /* the watcher (tw_watch) ends the run at once */
    _Atomic unsigned left;                 /* workers out of their loop (tw_stop_together) */
    _Atomic uint64_t paused_ns;            /* wall time the process stood still (stopped by
                                            * SIGSTOP, a suspended machine), as the watcher
                                            * saw it: not an event's run time */
    pthread_mutex_t err_mu;
    char *err;                             /* lowest committed model error */
    struct kr__key err_key;
    bool by_done;
    _Atomic int stopping;
    _Atomic unsigned stop_acks;
    _Atomic uint64_t safe_hi;              /* time bits + 1 (0: none; times are >= 0, whose
                                            * bits order as the times do) */
    unsigned fast_threads;                 /* workers that run safe events (acks expected) */
};

/* --snapshot (snapshot.c): the next one is due at this GVT time or wall clock (ns;
 * UINT64_MAX: none); req, published with a horizon, takes every worker into tw_snap_round;
 * inside, thread 0 says whether it writes and safe events come back. */
struct tw_snapping {
    kr_time at;
    uint64_t wall;
    _Atomic int want;                      /* a snapshot is due: safe events off too */
    _Atomic int req;
    bool skip, refast;
    bool more;                             /* across ranks: not settled yet */
    struct kr__key least;                  /* ...and the least pending key of all ranks */
};

/* The balancer (migrate.c): what the closer of a round plans with. */
struct tw_balancer {
    struct tw_move *moves;
    size_t nmoves, capmoves;
    uint64_t storm;                        /* --balance storm: its random stream, */
    uint64_t storm_rounds;                 /* ...and its rounds (all to one worker: 1 in 8) */
    uint64_t last_ns;                      /* its last decision */
    uint64_t start_ns;                     /* the run's start (first shares awaited) */
    bool starting;                         /* started on one worker, not spread yet... */
    int home;                              /* ...that one (tw_balance_home) */
    uint64_t cnt_retired, cnt_back;
    /* balance auto: the thread-count trial */
    int trial;
    unsigned trial_nact;                   /* workers the trial uses (the first ones) */
    double trial_rate;                     /* committed/s before the trial's change */
    uint64_t win_t0, win_c0, win_p0, win_r0, win_x0; /* the measuring window */
    uint64_t trial_next_ns;                /* no trial (one fewer) before this... */
    uint64_t trial_back_ns;                /* ...nor one more back */
    uint64_t trial_backoff_ns;
    uint64_t cnt_trials, cnt_undone;
    /* balance auto: the share trial (TW_PART_*) */
    int part;
    bool part_on;                          /* the shared workers have their shares */
    double part_rate;                      /* committed/s in the window before (BASE) */
    uint64_t part_t0, part_c0;             /* its measuring window, */
    kr_time part_v0;                       /* ...and GVT's time when it began */
    uint64_t part_next_ns, part_backoff_ns;
    uint64_t cnt_part, cnt_part_kept;
};

/* Lone mode (lone.c): a worker alone (tw_thread.alone) runs the sequential engine's way. */
struct tw_lone {
    bool ok;                  /* it may, when alone: plain, no --check, open pages or run
                               * trace */
    bool on;                  /* in lone mode (tw_lone_update) */
    bool out;                 /* a lone event wrote output or a commit record */
    unsigned max;             /* events a burst runs at most (tuned: lone_pace) */
    uint64_t n;               /* events the current burst committed */
    uint64_t t;               /* when the last burst ended (ns) */
};

struct tw_move {
    kr_lp lp;
    uint16_t from, to;
};

#endif
