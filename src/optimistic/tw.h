/* tw.h - internal structures of the optimistic (Time Warp) engine. A worker thread owns a
 * contiguous block of LPs, their pending events (one heap, lowest-timestamp-first), their
 * processed lists and checkpoints; nothing else touches them. Other threads reach it only
 * through its channels (one per sender, transport.c). */
#ifndef KR_OPTIMISTIC_TW_H
#define KR_OPTIMISTIC_TW_H

#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include "core/clock.h"
#include "core/typetime.h"
#include "core/bundle.h"
#include "core/core.h"
#include "core/interrupt.h"
#include "core/place.h"
#include "msg/channel.h"
#include "msg/match.h"
#include "net/xport.h"
#include "queue/heap.h"
#include "state/blob.h"
#include "stats/output.h"
#include "ult/ult.h"
#include "core/watchdog.h"
#include "optimistic/ranks.h"

struct tw_global;

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

struct tw_thread {
    _Alignas(64) unsigned id;
    struct kr__run *r;
    struct tw_global *g;
    struct kr__heap heap;
    struct kr__pool *pool;
    struct kr__counters *cnt;
    struct kr__blobs blobs;
    kr_lp nlps;               /* LPs this thread owns (g->owner) */
    bool retired;             /* no LPs (a shared core): out of GVT and the clocks */
    struct kr__ev **mig;      /* migration: pending events handed over... */
    struct kr__key max_done_out; /* ...and max_done_committed as it was then */
    size_t nmig, capmig;
    /* balance auto: CPU share over the last window */
    _Atomic double cpu_share;   /* -1: not measured yet */
    _Atomic int rq_shared;      /* its last window waited on the run queue (TW_WAIT_SHARED) */
    _Atomic int wants_back;     /* retired, and its core is free again */
    /* its share of the LPs (per mille of a core, TW_WEIGHT_FULL with a core of its own, 0
     * retired) and, found on a shared core, the share it would get there (0: not found) -
     * both the round closer's, read only in planning */
    unsigned bal_weight, bal_part;
    uint64_t bal_wall, bal_cpu, bal_slept, slept_ns;
    int sched_fd;             /* /proc/thread-self/schedstat (-1: none), ... */
    uint64_t bal_waited;      /* ...its run-queue wait at the window's start */
    double shares[TW_SHARED_WINDOWS];
    unsigned nshares;
    unsigned free_probes;
    /* its counters at its last phase-2 report, read by the round's closer (the trial) */
    uint64_t rep_committed, rep_processed, rep_rolled, rep_cuts;
    unsigned ckpt_interval;   /* K: checkpoint an LP every K of its events (tuned if auto) */
    struct tw_tune tune;      /* what the last tuning step saw */
    struct tw_costs ck_cost, ev_cost; /* recent checkpoints and events (tw_ckpt_by_cost) */
    bool fast;                /* safe events on (--safe on, no done(), not stopping) */
    bool alone;               /* no event can arrive below its LPs' time: the only thread,
                               * or one that owns every LP of the process, has no
                               * uncommitted event, and sends to no rank (tw_alone_update) */
    struct tw_lone lone;      /* lone mode (lone.c) */
    bool bundles;             /* the model has KR_MODEL_BUNDLES (core/bundle.h) */
    bool queries;             /* g->queries, on this thread's own line (read per event) */
    bool in_safe;             /* running a safe event: its sends are never cancelled */
    bool plain;               /* none of bundles, queries, lazy cancellation, ranks */
    size_t mem_share;         /* --memory-max: its share for events and checkpoints, or 0 */
    struct kr__ev **sendback; /* ...pending events whose senders it asks to roll back */
    size_t nsendback, capsendback;
    kr_time safe;             /* events below this are safe (the other clocks' least)... */
    kr_time safe_prev;        /* ...and before the last drain (--check: no message below) */
    kr_time clock_sent;       /* what this thread last published as its clock */
    kr_time fast_hi;          /* latest safe event run: an interrupted run commits past it */
    struct kr__key qbound;    /* nothing can arrive below this (ts, gen): tw_quiet_try */
    uint64_t qsent, qtaken;   /* messages put to other threads, taken from them */
    kr_time qtop_max;         /* the latest time any quiet record of it named (optimism.c) */
    struct kr__key qfull;     /* queries: no other thread's pending event lies below this
                               * whole key (tw_quiet_try; own sends lower it) */
    struct kr__ev *qev;       /* queries: the event it runs in query mode (NULL: none)... */
    struct kr__key qk;        /* ...the key every query is answered at now... */
    struct kr__ckpt *qmid;    /* ...its LP holds its state before qev, to answer a query,
                               * and qev's state mid-event is kept here (NULL: not so)... */
    struct tw_qreq *qrq;      /* ...and qev waits on its stack for this answer (NULL: not) */
    bool qabort;              /* the running event asked a query outside query mode, or an
                               * answer was refused as the run stops: it is undone */
    char *qerr;               /* a failed remote answer's message, until the next one */
    kr_time qwait;            /* the least time another thread's event waits to ask at */
    kr_time qwait_own;        /* the time its own top waits to ask at (+inf: none) */
    uint64_t qtypes;          /* event types (mod 64) that asked here: one of them that is
                               * the least when it comes up runs in query mode at once */
    uint64_t qwtypes;         /* event types (mod 64) whose event in query mode waited long
                               * for an answer from another thread: they run on a stack... */
    unsigned qquick;          /* ...until this many answers in a row come quickly */
    bool over;                /* threads outnumber cores (tw_worker) */
    uint32_t qseq;            /* its quiet record's sequence (odd: void) */
    bool qtalked;             /* sent since the record was last written */
    uint64_t qlast;           /* the others' sequences and own counts, summed, at the last
                               * try (tw_quiet_try) */
    unsigned clock_turn;
    bool clock_eager;         /* publish the clock at every turn (TW_CLOCK_TURNS) */
    kr_time last_ts;          /* timestamp of the latest event run (progress, tw_clock) */
    unsigned prog_turn;
    struct kr__ev *lazy;      /* the kept sends of the event it runs (--cancel lazy) */
    struct kr__bundle bund;   /* bundles: the one it runs (core/bundle.h)... */
    struct kr__bundle cbund;  /* ...and the one it coasts (inside a rollback, mid-run) */
    struct tw_item *work;
    size_t wn, wcap;
    /* Outgoing (transport.c): channels with messages put since they were last published. */
    unsigned *post;
    size_t npost;
    unsigned post_n;          /* messages put since the last publish */
    unsigned post_turns;      /* loop turns since then */
    unsigned post_every;      /* publish after this many turns (TW_POST_NS) */
    unsigned every;           /* housekeeping after this many turns (TW_EVERY_NS) */
    uint64_t turns_t0;        /* when the turns since the last housekeeping began */
    uint64_t uncommitted;     /* processed events not yet committed (flow control) */
    struct tw_window win;     /* ...and how many may be (optimism.c) */
    uint64_t round_mark;      /* `processed` when this thread last asked for a GVT round */
    kr_lp *dirty;             /* LPs with uncommitted processed events */
    size_t ndirty, capdirty;
    kr_lp *open;              /* page/buddy: LPs whose safe events left pages open */
    size_t nopen, capopen;
    /* Across ranks (ranks.c). */
    unsigned nround;          /* GVT rounds whose phase 1 it passed: its colour is the lowest
                               * bit (what it sends to other ranks is counted by colour) */
    bool nudge;               /* another rank is in a later round: start one */
    unsigned net_turns;       /* loop turns since it last flushed and took messages in... */
    unsigned net_every;       /* ...and how many make TW_RANK_POST_NS (tw_post_pace) */
    uint64_t rsent[2], rrecv[2]; /* records to and from other ranks, by colour */
    int64_t rep_white;        /* at its report: of the old colour, sent less received */
    uint64_t rid_next;
    kr_time rbuf_min;         /* least time of its records to other ranks not yet flushed */
    kr_time stamp_last;       /* worker 0: the rank's clock at its last stamps (ranks.c) */
    bool net_held;            /* hand-offs of its polls wait in a full channel (ranks.c) */
    struct kr__match rmatch;  /* events from other ranks, by remote id (their antimessages) */
    /* GVT participation. */
    uint64_t seen_state;
    uint64_t seen_epoch;
    struct kr__key min_sent;  /* lowest key sent to other threads since phase 1 */
    struct kr__key report;    /* this round's local minimum */
    bool all_done;            /* done-phase report */
    struct kr__key max_done;
    kr_lp ndone;              /* my LPs whose committed state is done */
    struct kr__key max_done_committed;  /* latest "became done" among those */
    struct kr__outsink sink;
    struct kr__key applied;   /* horizon this thread last committed up to */
    jmp_buf jmp;              /* events run on the worker's stack (and coasting) */
    jmp_buf *jmp_cur;         /* where a model error unwinds to: jmp, or an event stack's */
    bool armed;               /* jmp_cur is valid: a model error is deferred, not fatal */
    const char *err_msg;      /* the deferred error's message, until tw_keep_error copies it */
    /* Time-sharing (preempt.c). */
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
    pthread_t tid;
    struct kr__watch watch;   /* --event-timeout for events on the worker's own stack */
};

/* An LP frozen after a failed speculative event: rare, so kept apart. */
struct tw_fail {
    struct kr__ev *poison;        /* the event that failed; the LP is frozen after it (NULL:
                                   * not yet run to its end, or abandoned) */
    struct kr__ev *parked;        /* events held back while poisoned */
    char *err;                    /* the deferred error message of `poison` */
};

/* An LP's Time Warp bookkeeping: one cache line right after its struct kr__lp (core/lp.h),
 * next to the record's hot line (tw_lp_of). A sequential or conservative run does not carry
 * it. Written only by the LP's owner thread. */
struct tw_lp {
    struct kr__ev *head, *tail;   /* processed events, oldest first */
    struct kr__ev *first_unc;     /* first processed event not yet committed (NULL: none) */
    struct kr__ev *ckpt_ev;       /* latest processed event holding a checkpoint */
    struct kr__ckpt *base;        /* state before `head` */
    struct tw_fail *fail;         /* made by a failed event (tw_fail_of) */
    uint32_t since_ckpt;          /* events since the last checkpoint */
    uint32_t nkept;               /* committed events still on the processed list */
    bool dirty;                   /* on its thread's to-commit list */
    bool ckpt_full_next;          /* the next checkpoint must be full (dirty set unknown) */
    bool pages_open;              /* page/buddy: pages left open by safe events (on its
                                   * thread's list of them, tw_close_pages) */
    uint32_t id;                  /* the LP's id (--lps is at most 2^32 - 1) */
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct tw_lp) == 64, "an LP's Time Warp bookkeeping is one line");

struct tw_global {
    struct kr__run *r;
    unsigned n;
    struct tw_thread *th;
    struct kr__chan *chan;                 /* n x n: [to * n + from] */
    struct kr__arrivals *arr;              /* per receiver */
    _Alignas(64) _Atomic uint64_t state;   /* round * TW_ROUND + phase (TW_PH_*, gvt.c) */
    _Atomic unsigned count;                /* threads through the current phase */
    _Atomic uint64_t last_round_ns;
    _Alignas(64) _Atomic uint64_t epoch;   /* bumps when `horizon` is published */
    struct kr__key horizon;                /* commit everything before this key */
    struct kr__key gvt;                    /* last GVT, a full ordering key (see gvt.c) */
    _Atomic uint64_t gvt_bits;             /* its timestamp, for other readers (progress) */
    _Atomic int stop;
    _Atomic unsigned running;
    pthread_mutex_t end_mu;                /* the last worker out signals end_cv, so that */
    pthread_cond_t end_cv;                 /* the watcher (tw_watch) ends the run at once */
    _Atomic unsigned left;                 /* workers out of their loop (tw_stop_together) */
    _Atomic uint64_t paused_ns;            /* wall time the process stood still (stopped by
                                            * SIGSTOP, a suspended machine), as the watcher
                                            * saw it: not an event's run time */
    pthread_mutex_t err_mu;
    pthread_mutex_t print_mu;              /* committed output is printed under it */
    char *err;                             /* lowest committed model error */
    struct kr__key err_key;
    bool by_done;
    uint64_t period_ns;                    /* start a GVT round at least this often... */
    uint64_t round_events;                 /* ...or when a thread processed this many events */
    bool ckpt_auto;                        /* --ckpt-interval auto: threads tune their K */
    unsigned ckpt_full_every;              /* a full checkpoint every this many */
    bool open_pages;                       /* page/buddy: safe events leave written pages
                                            * open (tw_keep_open) */
    bool lazy;                             /* --cancel lazy (rollback.c) */
    bool chained;                          /* checkpoints form chains (not --state full): they
                                            * are freed by trimming chains, else one by one */
    /* Per LP of this process (lo .. lo + nlocal: all LPs but across ranks; an index is
     * id - lo, tw_lidx): */
    kr_lp lo, nlocal;
    uint16_t *owner;                       /* its thread (changed only in tw_migrate) */
    uint16_t *target;                      /* its thread after the planned moves */
    kr_time *lvt;                          /* timestamp of its last processed event,
                                            * written by the owner. A compact array, so a
                                            * straggler check does not miss on the LP itself
                                            * (65536 LPs: 8 B vs 128 B) */
    int balance;                           /* enum kr__balance */
    unsigned chan_slots;                   /* per ring between two threads */
    _Atomic unsigned active;               /* threads in GVT rounds (with LPs) */
    _Atomic int mig_req;                   /* moves planned: every worker enters tw_migrate */
    _Atomic uint64_t mig_pushes;           /* messages pushed while migrating (quiescence) */
    _Alignas(64) _Atomic unsigned bar_count;
    _Atomic unsigned bar_gen;
    struct tw_move *moves;
    size_t nmoves, capmoves;
    uint64_t storm;                        /* --balance storm: its random stream, */
    uint64_t storm_rounds;                 /* ...and its rounds (all to one worker: 1 in 8) */
    uint64_t bal_last_ns;
    uint64_t bal_start_ns;                 /* the run's start (first shares awaited) */
    uint64_t cnt_retired, cnt_back;
    /* balance auto: the thread-count trial (migrate.c) */
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
    uint64_t part_t0, part_c0;             /* its measuring window */
    uint64_t part_next_ns, part_backoff_ns;
    uint64_t cnt_part, cnt_part_kept;
    bool check;                            /* --check: verify invariants as we go */
    bool seam;                             /* the test seam: stragglers from outside */
    struct tw_clock *clock;                /* per thread (safe events) */
    bool queries;                          /* the model answers queries (query.c) */
    struct tw_qline *qline;                /* per thread (queries) */
    struct tw_mempub *mem;                 /* per thread (--memory-max: optimism.c) */
    kr_time lookahead;
    /* An interrupted run stops only once GVT has passed every safe event run (those were
     * committed at once and cannot be rolled back): the watcher asks (stopping), each
     * worker turns safe events off and reports its latest one (safe_hi, acks). */
    _Atomic int stopping;
    _Atomic int snap_want;                 /* a snapshot is due: safe events off too */
    _Atomic unsigned stop_acks;
    _Atomic uint64_t safe_hi;              /* time bits + 1 (0: none; times are >= 0, whose
                                            * bits order as the times do) */
    unsigned fast_threads;                 /* workers that run safe events (acks expected) */
    /* --snapshot (snapshot.c): the next one is due at this GVT time or wall clock (ns;
     * UINT64_MAX: none); snap_req, published with a horizon, takes every worker into
     * tw_snap_round; inside, thread 0 says whether it writes and safe events come back. */
    kr_time snap_at;
    uint64_t snap_wall;
    _Atomic int snap_req;
    bool snap_skip, snap_refast;
    bool snap_more;                        /* across ranks: not settled yet (snapshot.c) */
    struct kr__key snap_least;             /* ...and the least pending key of all ranks */
    struct tw_net net;
};

/* GVT round phases (gvt.c): state = round * TW_ROUND + phase. */
enum { TW_PH_IDLE, TW_PH_SEND, TW_PH_REPORT, TW_PH_DONE, TW_PH_NET, TW_PH_NET_DONE };
#define TW_PH_MASK 7ull
#define TW_ROUND 8ull

static inline kr_time tw_time_of(uint64_t b)
{
    kr_time t;
    memcpy(&t, &b, sizeof t);
    return t;
}

static inline kr_time tw_gvt(const struct tw_global *g)
{
    return tw_time_of(atomic_load_explicit(&g->gvt_bits, memory_order_acquire));
}

/* The least clock of the workers other than `skip` (safe events; g->n: all of them), and
 * of the other ranks. */
static inline kr_time tw_clock_min(const struct tw_global *g, unsigned skip)
{
    kr_time s = g->net.on ? tw_time_of(atomic_load_explicit(&g->net.clock_bits,
                                                            memory_order_acquire)) : INFINITY;
    for (unsigned i = 0; i < g->n; i++) {
        if (i == skip) continue;
        kr_time c = tw_time_of(atomic_load_explicit(&g->clock[i].bits, memory_order_acquire));
        if (c < s) s = c;
    }
    return s;
}

/* An LP of this process: its index in the per-LP tables. */
static inline kr_lp tw_lidx(const struct tw_global *g, kr_lp id)
{
    return id - g->lo;
}

/* An LP's thread: a compact table (2 bytes an LP, so a send does not touch the destination
 * LP's memory), changed only by migration; an LP of another rank is g->n + its rank, by
 * the block rule (core/place.h: no table as large as the whole run on every rank). Moves
 * (migrate.c) stay inside one process, and across ranks they are off: there lo is 0. */
static inline unsigned tw_owner(const struct tw_global *g, kr_lp id)
{
    kr_lp i = id - g->lo; /* (below lo wraps around: one comparison for both ends) */
    if (__builtin_expect(i < g->nlocal, 1)) return g->owner[i];
    return g->n + kr__block_of(id, g->r->n, (unsigned)g->net.nranks);
}

/* lp's Time Warp bookkeeping: the line right after its record (kr__engine.lp_extra; only
 * an optimistic run's records have it). Like strchr, a const record gives a writable line:
 * callers that only read take it as const. */
static inline struct tw_lp *tw_lp_of(const struct kr__lp *lp)
{
    return (struct tw_lp *)(void *)(lp + 1);
}

static inline void tw_set_lvt(struct tw_thread *th, const struct kr__lp *lp)
{
    const struct tw_lp *tl = tw_lp_of(lp);
    th->g->lvt[tw_lidx(th->g, tl->id)] = tl->tail ? tl->tail->k.ts : -INFINITY;
}

static inline struct kr__chan *tw_chan(const struct tw_global *g, unsigned from, unsigned to)
{
    return &g->chan[(size_t)to * g->n + from];
}

/* The least key of what stands or falls with the event of key k: k, or with bundles its
 * bundle's start (a bundle runs, is undone and commits whole: msg/event.h). Where a
 * straggler, an antimessage or a sendback undoes an LP from, and how far GVT may commit. */
static inline struct kr__key tw_key_floor(const struct tw_thread *th, const struct kr__key *k)
{
    return th->bundles ? kr__key_bundle_start(k) : *k;
}

/* (ts, gen) order: the part of a key that bounds what can follow it (tw.h, quiet records). */
static inline bool tw_hop_lt(const struct kr__key *a, const struct kr__key *b)
{
    return a->ts < b->ts || (a->ts == b->ts && a->gen < b->gen);
}

/* Below the safe time, or below what can still arrive (quiet records). */
static inline bool tw_below_safe(const struct tw_thread *th, const struct kr__ev *e)
{
    return e->k.ts < th->safe || tw_hop_lt(&e->k, &th->qbound);
}

/* The least (ts, gen) a message can have that reaches an LP of another thread as a
 * consequence of an event or message with key k: at least one hop between LPs, each one
 * ordered after its cause (a zero-delay send is one gen later) and the lookahead later. */
static inline struct kr__key tw_after(const struct tw_global *g, const struct kr__key *k)
{
    struct kr__key a = kr__key_at(k->ts + g->lookahead);
    if (g->queries) { /* (a query needs no hop: it is asked at the asking event's key) */
        a.gen = k->gen;
        return a;
    }
    if (g->lookahead == 0) a.gen = k->gen + 1; /* (below KR_MAX_ZERO_DELAY_HOPS) */
    return a;
}

static inline void tw_quiet_void(struct tw_thread *th)
{
    if (!(th->qseq & 1))
        atomic_store_explicit(&th->g->clock[th->id].seq, ++th->qseq, memory_order_seq_cst);
}

/* A message leaves this thread (or a query, asked at key k: query.c): its quiet record goes
 * void before the message can be seen, and what can come back of it lowers the bound. */
static inline void tw_quiet_sent_at(struct tw_thread *th, const struct kr__key *k)
{
    th->qsent++;
    th->qtalked = true;
    tw_quiet_void(th);
    struct kr__key b = tw_after(th->g, k);
    if (tw_hop_lt(&b, &th->qbound)) th->qbound = b;
    if (th->g->queries && kr__key_lt(k, &th->qfull)) th->qfull = *k;
}

static inline void tw_quiet_sent(struct tw_thread *th, const struct kr__ev *e)
{
    tw_quiet_sent_at(th, &e->k);
}

/* The one place a message (event or antimessage) leaves this thread: the seam where a
 * distributed transport (MPI) will route messages for LPs of other processes. It is put
 * into the (this thread, owner) channel and published later (transport.c). */
static inline void tw_transport_send(struct tw_thread *th, unsigned owner, struct kr__ev *e)
{
    e->st = KR_EV_INFLIGHT;
    if (kr__key_lt(&e->k, &th->min_sent)) th->min_sent = e->k; /* GVT: in flight since phase 1 */
    tw_quiet_sent(th, e);
    struct kr__chan *c = tw_chan(th->g, th->id, owner);
    if (!c->listed) {
        c->listed = true;
        th->post[th->npost++] = owner;
    }
    kr__chan_put(c, e);
    th->post_n++;
    /* Below where the receiver has got to, the message is a straggler already, and each turn
     * it waits costs the receiver more to undo: it goes now. (Held back with the rest,
     * PHOLD with 16 LPs on 2 threads fell from 3.3 to 0.16-0.45 M/s, 4-12% efficiency.) */
    kr_time prog = tw_time_of(atomic_load_explicit(&th->g->clock[owner].now_bits,
                                                   memory_order_relaxed));
    if (e->k.ts < prog) kr__chan_publish(c, &th->g->arr[owner]);
    if (atomic_load_explicit(&th->g->mig_req, memory_order_relaxed))
        atomic_fetch_add_explicit(&th->g->mig_pushes, 1, memory_order_release);
}

/* transport.c */
/* Publish every channel this thread has put messages into: KR_CHAN_NEW if that made some
 * visible, KR_CHAN_KEPT if a full ring kept some back. */
unsigned tw_post_publish(struct tw_thread *th);
/* The least key of the messages kept back that way (infinite when none). */
struct kr__key tw_post_backlog_min(const struct tw_thread *th);
void tw_drain(struct tw_thread *th);
/* A sender publishes once TW_POST_BATCH messages wait, or after about TW_POST_NS of its own
 * loop turns (post_every turns, from the measured turn time): batches on short events
 * without delaying messages on long ones, which would arrive as stragglers (datastore,
 * ~8 us events, 2 threads: 8 turns between publishes, 1.5x the rollbacks and now and then
 * a rollback storm at 1/6 the speed). */
#define TW_POST_BATCH 32
#define TW_POST_NS 2000
/* Between ranks a message costs more (an MPI send and probe): a worker flushes and polls
 * about every TW_RANK_POST_NS of its turns. PHOLD-std, 2 ranks x 1 thread, 4 interleaved
 * runs: every ~2 us, 2-3 events per message and 2.8-6.1 M/s; ~8 us, 10-15 and 5.2-7.8;
 * ~32 us, 27-30 and 3.9-5.2 (later events, more rollbacks). */
#define TW_RANK_POST_NS 8000
#define TW_RANK_POST_TURNS_MAX 64
/* The loop's housekeeping (GVT start, pacing, checkpoint tuning, load sampling) runs every
 * 256 turns that ran events, or sooner so that it runs at least every TW_EVERY_NS: with
 * 10-us events in bursts of safe ones, 256 turns took 80 ms, and a 5-ms GVT period became
 * 45 ms (datastore: 12 GVT rounds in a 0.55 s run, a shared core seen 100 ms late). */
#define TW_EVERY_NS (1000u * 1000)
#define TW_EVERY_TURNS 256
#define TW_POST_TURNS_MAX 16
/* --balance storm (tests) shrinks every channel to this, so that moves meet backlogs. */
#define TW_STORM_SLOTS 8
/* After a loop turn: publish once enough messages or turns have gathered. */
static inline void tw_post_turn(struct tw_thread *th)
{
    if (th->npost && (th->post_n >= TW_POST_BATCH || ++th->post_turns >= th->post_every))
        tw_post_publish(th);
    if (!(++th->prog_turn & (TW_CLOCK_TURNS - 1))) /* (its progress, for the senders) */
        atomic_store_explicit(&th->g->clock[th->id].now_bits, kr__time_bits(th->last_ts),
                              memory_order_relaxed);
}

/* engine.c */
void tw_deliver(struct tw_thread *th, struct kr__ev *e);
void tw_flush_local(struct tw_thread *th);
/* lone.c: after a commit or a migration, is the thread alone now (tw_thread.alone)? */
void tw_alone_update(struct tw_thread *th);
/* ...and at a commit, in lone mode (tw_thread.lone)? */
void tw_lone_update(struct tw_thread *th);
/* Lone mode: run the next events from the top; returns how many ran (0: none could). */
uint64_t tw_lone_burst(struct tw_thread *th, kr_time end);
/* engine.c: the general path's engine operations, and those lone mode shares with it. */
extern const struct kr__engine_ops tw_ops;
void tw_emit(struct kr__ctx *c, const char *text, size_t len);
void tw_record(struct kr__ctx *c, const void *data, size_t size);
void tw_fail(struct kr__ctx *c, const char *msg);
struct kr__ev *tw_top_drop(struct tw_thread *th);

/* Pending top, dropping cancelled events on the way. (Inline, the rest out of line: called
 * a few times per event, its call cost life on 1 thread 21 instructions an event.) */
static inline struct kr__ev *tw_top(struct tw_thread *th)
{
    struct kr__ev *e = kr__heap_top(&th->heap);
    if (__builtin_expect(e && e->st == KR_EV_CANCELLED, 0)) return tw_top_drop(th);
    return e;
}

/* One event in TW_EVENT_SAMPLE took dt ns: the summary's mean and the checkpoint interval's
 * cost model (tw_run_sampled; in lone mode the first event of each burst). */
static inline void tw_event_timed(struct tw_thread *th, uint64_t dt)
{
    th->cnt->event_ns_sampled += dt;
    th->cnt->events_timed++;
    tw_cost_add(&th->ev_cost, dt);
}
void tw_work_push(struct tw_thread *th, struct kr__ev *e, int anti);
void tw_mark_dirty(struct tw_thread *th, struct kr__lp *lp, kr_lp id);
void tw_mark_dirty_again(struct tw_thread *th, kr_lp id); /* (an arriving LP, dirty already) */
/* commit.c, page and buddy modes: an LP whose safe event left pages open is listed
 * (tw_keep_open); the list's LPs closed by a checkpoint each (before a move, a snapshot, or
 * once the list is long) */
void tw_keep_open(struct tw_thread *th, struct kr__lp *lp, kr_lp id);
void tw_close_pages(struct tw_thread *th);
/* engine.c: e has run to its end on the general path: it joins lp's processed list */
void tw_processed(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e);
/* bundle.c: the processed bundle that starts at x into th->cbund (returns the event after
 * it); the rest of e's bundle out of the heap into th->bund; every member of th->bund
 * processed; the members after the first of a safe one committed */
struct kr__ev *tw_bundle_listed(struct tw_thread *th, struct kr__ev *x);
void tw_gather(struct tw_thread *th, struct kr__ev *e);
void tw_bundle_processed(struct tw_thread *th, struct kr__lp *lp);
void tw_bundle_commit_rest(struct tw_thread *th, struct kr__lp *lp);
void tw_finish_event(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e);
/* After a model error unwound e's event: mark it failed and keep the message (a copy, made
 * outside any signal handler the error came from). */
void tw_keep_error(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e);
/* The LP's failure record, made on first use; tw_fail_clear frees it (no longer poisoned,
 * or the run is over). */
struct tw_fail *tw_fail_of(struct tw_lp *tl);
void tw_fail_clear(struct tw_lp *tl);
/* The LP's newest checkpoint (with chains: the tip of its chain), or NULL. */
static inline struct kr__ckpt *tw_chain_tip(const struct tw_lp *tl)
{
    return tl->ckpt_ev ? tl->ckpt_ev->ckpt : tl->base;
}
/* Is the LP frozen after a failed speculative event? */
static inline bool tw_poisoned(const struct tw_lp *tl)
{
    return tl->fail && tl->fail->poison;
}
/* rollback.c */
void tw_cancel_children(struct tw_thread *th, struct kr__ev *e);
void tw_rollback(struct tw_thread *th, struct kr__lp *lp, const struct kr__key *k, bool cancel);
void tw_cancel(struct tw_thread *th, struct kr__ev *c);
/* --cancel lazy (rollback.c): the sends kept on e, taken off it as it starts running; one it
 * sends alike again stays (tw_lazy_keep), the rest are cancelled as it ends (tw_lazy_end). */
void tw_lazy_start(struct tw_thread *th, struct kr__ev *e);
bool tw_lazy_keep(struct tw_thread *th, struct kr__ev *parent, struct kr__ev *e);
void tw_lazy_join(struct tw_thread *th, struct kr__ev *x);
void tw_lazy_end(struct tw_thread *th);
void tw_take_ckpt(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *at);
void tw_trim_chain(struct tw_thread *th, struct kr__ckpt *c);
void tw_tune_ckpt(struct tw_thread *th);
void tw_ckpt_by_cost(struct tw_thread *th);
/* optimism.c */
void tw_window_init(struct tw_thread *th, unsigned fixed);
void tw_window_adapt(struct tw_thread *th);
/* --memory-max between commits, every 256 speculative events: past this thread's share of
 * the budget (th->mem_share), stop speculating until the next commit's check. */
void tw_memory_quick(struct tw_thread *th);
/* --memory-max after init: what init left needs more than the budget? The run fails. */
void tw_memory_init(struct tw_global *g);
/* --memory-max: a sendback request reached the thread of the event's sender LP (r->dest):
 * roll back the uncommitted event that sent r->child, if it may. Frees r. */
void tw_sendback_take(struct tw_thread *th, struct kr__ev *r);
void tw_window_unsafe(struct tw_thread *th);
void tw_run_sampled(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e);
/* e joins its parent's children, after the copies of events sent to other ranks (tw.h,
 * KR_EVF_RKIDS: they stay first, so that they are found without reading a local child). */
static inline void tw_child_link(struct kr__ev *p, struct kr__ev *e)
{
    struct kr__ev **at = &p->child;
    if (p->flags & KR_EVF_RKIDS) {
        struct kr__ev *x = p->child;
        while (x->flags & KR_EVF_RKIDS) x = x->sib;
        at = &x->sib;
    }
    e->sib = *at;
    *at = e;
}

/* (ranks.h) An owner at or past g->n is rank owner - g->n. */
static inline bool tw_remote(const struct tw_global *g, unsigned owner)
{
    return owner >= g->n;
}
/* snapshot.c (--snapshot) */
/* The closer of a GVT round, before it publishes a horizon that does not stop the run:
 * ask for a snapshot when one is due; true if this horizon is its point (snap_req). */
bool tw_snap_plan(struct tw_thread *th);
/* Every worker, once it has applied that horizon: the snapshot, written there. */
void tw_snap_round(struct tw_thread *th);
/* setup.c: print the committed output (all: to the end) */
void tw_print_committed(struct tw_global *g, bool all);
/* ...the shared record, the threads, init's LPs and the end, also for the test seam */
struct tw_global *tw_global_new(struct kr__run *r);
void tw_setup_threads(struct kr__run *r, struct tw_global *g);
void tw_init_lps(struct kr__run *r, struct tw_global *g);
void tw_global_end(struct kr__run *r, struct tw_global *g);
/* engine.c: a worker thread's loop */
void *tw_worker(void *arg);
/* gvt.c */
void tw_gvt_poll(struct tw_thread *th);
void tw_gvt_found(struct tw_thread *th, uint64_t s, struct kr__key gvt);
void tw_gvt_done_found(struct tw_thread *th, uint64_t s, bool all, struct kr__key maxd);
void tw_gvt_maybe_start(struct tw_thread *th, bool force);
/* commit.c */
/* An LP's next event takes a checkpoint first (since_ckpt at least any interval). */
#define TW_CKPT_NOW (UINT32_MAX / 2)
void tw_drop_history(struct tw_thread *th, struct kr__lp *lp);
bool tw_commit(struct tw_thread *th, const struct kr__key *h); /* false: a model error */
void tw_release_all(struct tw_thread *th);
void tw_commit_before_error(struct tw_thread *th);
void tw_fail_at_commit(struct tw_global *g, const char *msg, const struct kr__key *k);
/* Committed output of lp into the thread's sink (the printer sorts it and prints it once
 * every thread's horizon has passed it): what lies before upto, or up to and including e's. */
void tw_output_before(struct tw_thread *th, struct kr__lp *lp, const struct kr__key *upto);
void tw_output_through(struct tw_thread *th, struct kr__lp *lp, const struct kr__ev *e);

/* The engine's part of the summary and of --stats (report.c). */
void tw_summary(const struct kr__run *r, FILE *f);
void tw_json(const struct kr__run *r, FILE *f);

/* Test seam (engine.c): the threads stepped by hand from the calling thread. tw_test_step
 * runs the lowest pending event of th and returns it (NULL: none may run); tw_test_turn is
 * one turn of the worker loop (false: the run has stopped); tw_test_use points the calling
 * thread's context at th. chan_slots: the rings between threads hold this many events (a
 * power of two; 0: as in a run), so that a test can have events kept back in backlogs. */
struct tw_global *tw_test_start(struct kr__run *r, unsigned chan_slots);
void tw_test_use(struct tw_thread *th);
struct kr__ev *tw_test_step(struct tw_thread *th);
bool tw_test_turn(struct tw_thread *th);
void tw_test_end(struct kr__run *r, struct tw_global *g);

#endif
