/* tw.h - internal structures of the optimistic (Time Warp) engine. A worker thread owns a
 * contiguous block of LPs, their pending events (one heap, lowest-timestamp-first), their
 * processed lists and checkpoints; nothing else touches them. Other threads reach it only
 * through its channels (one per sender, transport.c). */
#ifndef KR_OPTIMISTIC_TW_H
#define KR_OPTIMISTIC_TW_H

#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include "base/clock.h"
#include "base/typetime.h"
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
#include "optimistic/parts.h"
#include "optimistic/options.h"

struct tw_global;


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
    struct tw_bal bal;        /* --balance auto: its CPU share, its weight (migrate.c) */
    bool fast;                /* safe events on (--safe on, no done(), not stopping) */
    bool alone;               /* no event can arrive below its LPs' time: the only thread,
                               * or one that owns every LP of the process, has no
                               * uncommitted event, and sends to no rank (tw_alone_update) */
    struct tw_lone lone;      /* lone mode (lone.c) */
    struct tw_clocks_th clk;  /* safe events' clock and quiet record (clock.c) */
    struct tw_posting out;    /* messages to other threads not yet published (transport.c) */
    struct tw_catch err;      /* where a model error in an event unwinds to */
    struct tw_ckpting ck;     /* checkpoint interval and costs (rollback.c) */
    struct tw_mem_th mem;     /* --memory-max (optimism.c) */
    struct tw_mig_th mg;      /* migration (migrate.c) */
    bool bundles;             /* the model has KR_MODEL_BUNDLES (core/bundle.h) */
    bool queries;             /* g->cf.queries, on this thread's own line (read per event) */
    bool in_safe;             /* running a safe event: its sends are never cancelled */
    bool plain;               /* none of bundles, queries, lazy cancellation, ranks */
    kr_time fast_hi;          /* latest safe event run: an interrupted run commits past it */
    struct tw_asking q;       /* queries (query.c) */
    kr_time last_ts;          /* timestamp of the latest event run (progress, tw_clock) */
    struct kr__ev *lazy;      /* the kept sends of the event it runs (--cancel lazy) */
    struct kr__bundle bund;   /* bundles: the one it runs (core/bundle.h)... */
    struct kr__bundle cbund;  /* ...and the one it coasts (inside a rollback, mid-run) */
    struct tw_local loc;      /* deliveries to its own LPs, after the event (engine.c) */
    struct tw_pacing pace;    /* the loop's turns (engine.c) */
    uint64_t uncommitted;     /* processed events not yet committed (flow control) */
    struct tw_window win;     /* ...and how many may be (optimism.c) */
    uint64_t round_mark;      /* `processed` when this thread last asked for a GVT round */
    struct tw_rank_th rk;     /* across ranks (ranks.c) */
    struct tw_gvt_th gv;      /* its part in GVT rounds (gvt.c) */
    struct tw_committing cm;  /* commit (commit.c) */
    struct tw_sharing ts;     /* time-sharing (preempt.c) */
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

/* A GVT round's reduction (gvt.c): each thread reports the least key it may still run or
 * has in flight; the last thread through starts the reduction with this process's least,
 * which then ends - here at once, or once every rank has reported (ranks.c) - in
 * tw_gvt_found (tw_gvt_done_found for the done phase). The cross-rank reduction is one
 * table: nothing in gvt.c asks whether there are ranks. */
struct tw_gvt_ops {
    void (*start)(struct tw_thread *th, uint64_t s, const struct kr__key *least);
    void (*start_done)(struct tw_thread *th, uint64_t s, bool all, const struct kr__key *maxd);
    /* Before a thread reports: take in what the reduction brought (NULL: nothing). */
    void (*report)(struct tw_thread *th);
    /* A turn in the phases past this process's own (TW_PH_NET...; NULL: none). */
    void (*poll)(struct tw_thread *th, uint64_t s);
};
extern const struct tw_gvt_ops tw_gvt_local, tw_gvt_ranks;

/* A mechanism of the engine and its life cycle: what it sets up for each thread before
 * init runs (on the setting-up thread), what it does on the worker when the thread reports
 * in a GVT round and when a new horizon is published, and what it leaves in the results
 * and frees after the run. The table (setup.c, tw_modules) is walked in its order; a hook
 * is NULL where a mechanism has nothing to do, and `used` (NULL: every run) leaves a
 * mechanism out of runs that do not need it, chosen once at set-up (tw_hooks). */
struct tw_module {
    const char *name;
    bool (*used)(const struct tw_global *g);
    void (*init)(struct tw_thread *th);
    void (*on_report)(struct tw_thread *th);
    void (*on_gvt)(struct tw_thread *th);
    void (*end)(struct tw_thread *th);
};

#define TW_HOOKS_MAX 16
/* The run's per-round hooks, from the modules it uses (tw_hooks_setup). */
struct tw_hooks {
    void (*report[TW_HOOKS_MAX])(struct tw_thread *th);
    void (*gvt[TW_HOOKS_MAX])(struct tw_thread *th);
    unsigned nreport, ngvt;
};

extern const struct tw_module tw_mod_transport, tw_mod_clocks, tw_mod_ckpt, tw_mod_commit,
    tw_mod_gvt, tw_mod_window, tw_mod_memory, tw_mod_balance, tw_mod_queries, tw_mod_ranks,
    tw_mod_bundles, tw_mod_snapshots;

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
    struct tw_ending end;                  /* the run's end (setup.c) */
    pthread_mutex_t print_mu;              /* committed output is printed under it */
    /* Per LP of this process (lo .. lo + nlocal: all LPs but across ranks; an index is
     * id - lo, tw_lidx): */
    kr_lp lo, nlocal;
    uint16_t *owner;                       /* its thread (changed only in tw_migrate) */
    uint16_t *target;                      /* its thread after the planned moves */
    kr_time *lvt;                          /* timestamp of its last processed event,
                                            * written by the owner. A compact array, so a
                                            * straggler check does not miss on the LP itself
                                            * (65536 LPs: 8 B vs 128 B) */
    _Atomic unsigned active;               /* threads in GVT rounds (with LPs) */
    _Atomic int mig_req;                   /* moves planned: every worker enters tw_migrate */
    _Atomic uint64_t mig_pushes;           /* messages pushed while migrating (quiescence) */
    _Alignas(64) _Atomic unsigned bar_count;
    _Atomic unsigned bar_gen;
    struct tw_settings cf;                 /* what the run is set up with */
    struct tw_balancer bl;                 /* the balancer's plans (migrate.c) */
    struct tw_clock *clock;                /* per thread (safe events) */
    struct tw_qline *qline;                /* per thread (queries) */
    struct tw_mempub *mem;                 /* per thread (--memory-max: optimism.c) */
    struct tw_snapping sn;                 /* --snapshot (snapshot.c) */
    struct tw_net net;
    const struct tw_gvt_ops *gvt_ops;      /* this process alone, or across ranks */
    struct tw_hooks hk;                    /* the modules' per-round hooks */
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
    return e->k.ts < th->clk.safe || tw_hop_lt(&e->k, &th->clk.qbound);
}

/* The least (ts, gen) a message can have that reaches an LP of another thread as a
 * consequence of an event or message with key k: at least one hop between LPs, each one
 * ordered after its cause (a zero-delay send is one gen later) and the lookahead later. */
static inline struct kr__key tw_after(const struct tw_global *g, const struct kr__key *k)
{
    struct kr__key a = kr__key_at(k->ts + g->cf.lookahead);
    if (g->cf.queries) { /* (a query needs no hop: it is asked at the asking event's key) */
        a.gen = k->gen;
        return a;
    }
    if (g->cf.lookahead == 0) a.gen = k->gen + 1; /* (below KR_MAX_ZERO_DELAY_HOPS) */
    return a;
}

static inline void tw_quiet_void(struct tw_thread *th)
{
    if (!(th->clk.seq & 1))
        atomic_store_explicit(&th->g->clock[th->id].seq, ++th->clk.seq, memory_order_seq_cst);
}

/* A message leaves this thread (or a query, asked at key k: query.c): its quiet record goes
 * void before the message can be seen, and what can come back of it lowers the bound. */
static inline void tw_quiet_sent_at(struct tw_thread *th, const struct kr__key *k)
{
    th->clk.qsent++;
    th->clk.talked = true;
    tw_quiet_void(th);
    struct kr__key b = tw_after(th->g, k);
    if (tw_hop_lt(&b, &th->clk.qbound)) th->clk.qbound = b;
    if (th->g->cf.queries && kr__key_lt(k, &th->q.full)) th->q.full = *k;
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
    if (kr__key_lt(&e->k, &th->gv.min_sent)) /* GVT: in flight since phase 1 */
        th->gv.min_sent = e->k;
    tw_quiet_sent(th, e);
    struct kr__chan *c = tw_chan(th->g, th->id, owner);
    if (!c->listed) {
        c->listed = true;
        th->out.chans[th->out.n++] = owner;
    }
    kr__chan_put(c, e);
    th->out.msgs++;
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
    if (th->out.n && (th->out.msgs >= TW_POST_BATCH || ++th->out.turns >= th->out.every))
        tw_post_publish(th);
    if (!(++th->pace.prog_turn & (TW_CLOCK_TURNS - 1))) /* (its progress, for the senders) */
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
/* ...and lone mode ends (every pending event gets the tail a burst's send left unset) */
void tw_lone_leave(struct tw_thread *th);
/* Lone mode: run the next events from the top; returns how many ran (0: none could). */
uint64_t tw_lone_burst(struct tw_thread *th, kr_time end);
/* engine.c: the general path's engine operations, and those lone mode shares with it. */
extern const struct kr__engine_ops tw_ops, tw_ops_span;
/* The general path's operations for this run: with spans, sends are checked against them. */
static inline const struct kr__engine_ops *tw_ops_of(const struct tw_global *g)
{
    return g->cf.spans ? &tw_ops_span : &tw_ops;
}
void tw_emit(struct kr__ctx *c, const char *text, size_t len);
void tw_record(struct kr__ctx *c, uint64_t tag, const void *data, size_t size);
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
    tw_cost_add(&th->ck.ev_cost, dt);
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
 * it); the rest of e's bundle out of the heap into th->bund; every member of b (th->bund,
 * or an asker's th->q.bund) processed; the members after the first of a safe one committed */
struct kr__ev *tw_bundle_listed(struct tw_thread *th, struct kr__ev *x);
void tw_gather(struct tw_thread *th, struct kr__ev *e);
void tw_bundle_processed(struct tw_thread *th, struct kr__lp *lp, struct kr__bundle *b);
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
/* Whether an LP about to run without history (a safe event, lone mode) holds some to drop
 * first: processed events, or a base checkpoint the run does not chain. */
static inline bool tw_history_held(const struct tw_thread *th, const struct tw_lp *tl)
{
    return tl->head || (!th->g->cf.chained && tl->base);
}
/* Has lp an event preempted on its stack? (Time-sharing; nsusp first: 0 without it.) */
static inline bool tw_suspended_on(const struct tw_thread *th, const struct kr__lp *lp)
{
    return th->ts.nsusp && lp->ult;
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
/* --state reverse (reverse.c): e's reverse record, in place of a checkpoint, before it
 * runs (its area in the context: kr_reverse_area); and e, lp's newest processed event,
 * undone by the model's reverse handler, its record freed. */
void tw_rev_record(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e);
void tw_rev_undo(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e);
void tw_trim_chain(struct tw_thread *th, struct kr__ckpt *c);
void tw_tune_ckpt(struct tw_thread *th);
void tw_ckpt_by_cost(struct tw_thread *th);
/* optimism.c */
/* --memory-max between commits, every 256 speculative events: past this thread's share of
 * the budget (th->mem.share), stop speculating until the next commit's check. */
void tw_memory_quick(struct tw_thread *th);
/* --memory-max: the least time a rollback of the thread's own accord may go back to. */
kr_time tw_memory_floor(const struct tw_thread *th);
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
bool tw_gvt_maybe_start(struct tw_thread *th, bool force);
/* Across ranks, an idle turn of th whose top is held back (held), or not: a hold of 1 ms
 * in which the other ranks' clock stood still starts a round. */
void tw_gvt_held(struct tw_thread *th, bool held);
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
/* The model's metrics the threads reduced, into the run's (the workers stopped: at the end,
 * or waiting while a snapshot is written). */
void tw_metrics_drain(struct tw_global *g);
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
