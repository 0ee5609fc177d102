/* snapshot.c - whole-run snapshots written by the optimistic engine (--snapshot; the file
 * and resume are core/snapshot.c's, the same for every engine).
 *
 * A snapshot holds a run where every event before one key is committed and none after it.
 * Here that key is a GVT horizon, with the run stopped around it. When one is due, the
 * closer of a GVT round asks (snap_want); the workers turn safe events off - those are
 * committed as they run, and a snapshot can hold none past its key - and say how far they
 * went, as for an interrupted run. The first round whose GVT lies past them all publishes
 * its horizon with snap_req, and every worker enters tw_snap_round once it has applied it.
 * There each rolls its LPs back to the horizon, cancelling at once what the undone events
 * had sent (lazy cancellation too: the snapshot cannot hold a send kept on a pending event),
 * and all drain until nothing is in flight: then every LP's state is its committed one and
 * the heaps hold exactly the events the committed history sent and did not run yet. Thread
 * 0 prints the committed output and writes the file while the others wait; the clocks
 * restart at the horizon and safe events come back on. The speculative work past the
 * horizon is done again: that, beside the writing, is what a snapshot costs. */
#include <math.h>
#include <stdlib.h>
#include "optimistic/tw.h"
#include "optimistic/query.h"
#include "optimistic/balance.h"
#include "optimistic/ranks.h"
#include "base/clock.h"
#include "base/error.h"
#include "core/snapshot.h"

/* As for a stop: every worker has turned safe events off, and GVT's time lies past the
 * last one run (an equal time could hold one at a higher key). all: the ranks' round. */
static bool safe_passed(struct tw_global *g, const struct kr__net_gvt *all)
{
    if (all) return !(all->flags & KR_NET_UNACKED) && g->gvt.ts > all->safe_hi.ts;
    if (atomic_load_explicit(&g->end.stop_acks, memory_order_acquire) < g->end.fast_threads)
        return false;
    uint64_t hi = atomic_load_explicit(&g->end.safe_hi, memory_order_relaxed);
    return !hi || g->gvt.ts > tw_time_of(hi - 1);
}

/* A snapshot is due: GVT has reached its virtual time, or its wall time has come (across
 * ranks, as the round's reduction says). */
static bool snap_due(const struct tw_global *g, const struct kr__net_gvt *all)
{
    bool wall = all ? all->flags & KR_NET_SNAP_DUE
                    : g->sn.wall != UINT64_MAX && kr__clock_ns() >= g->sn.wall;
    return g->gvt.ts >= g->sn.at || wall;
}

bool tw_snap_plan(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    if (!th->r->cfg->snap_dir || atomic_load_explicit(&g->end.stopping, memory_order_relaxed))
        return false;
    /* (across ranks, each decides what the round's reduction saw of all ranks: all take
     * their snapshot at one horizon) */
    const struct kr__net_gvt *all = g->net.on ? &g->net.out : NULL;
    if (!atomic_load_explicit(&g->sn.want, memory_order_relaxed)) {
        if (snap_due(g, all)) atomic_store_explicit(&g->sn.want, 1, memory_order_relaxed);
        return false;
    }
    if (!safe_passed(g, all)) return false;
    atomic_store_explicit(&g->sn.req, 1, memory_order_relaxed); /* (published with it) */
    return true;
}

/* The sends that lazy rollbacks kept on pending events, cancelled (this thread's own
 * antimessages are queued, and taken in after). */
static void cancel_kept(struct tw_thread *th)
{
    for (size_t i = 0; i < th->heap.n; i++) {
        struct kr__ev *e = kr__heap_ev(&th->heap, i);
        if (!(e->xflags & KR_EVX_LAZY)) continue;
        tw_cancel_children(th, e);
        e->child = NULL;
        e->xflags &= (uint8_t)~KR_EVX_LAZY;
    }
}

/* Whether LP lp ran an event at h or later (or has one preempted, under time-sharing). */
static bool ran_past(const struct tw_thread *th, const struct kr__lp *lp, const struct kr__key *h)
{
    const struct tw_lp *tl = tw_lp_of(lp);
    return (tl->tail && !kr__key_lt(&tl->tail->k, h)) || tw_suspended_on(th, lp);
}

/* Every LP of this thread back to the horizon h (a preempted event abandoned), and the sends
 * that earlier lazy rollbacks kept on pending events cancelled. */
static void roll_back(struct tw_thread *th, const struct kr__key *h)
{
    struct tw_global *g = th->g;
    for (kr_lp id = g->lo; id < g->lo + g->nlocal; id++) {
        if (g->owner[tw_lidx(g, id)] != th->id) continue;
        struct kr__lp *lp = kr__lp_at(th->r, id);
        if (ran_past(th, lp, h)) tw_rollback(th, lp, h, true);
    }
    if (g->cf.lazy) cancel_kept(th);
    tw_flush_local(th);
}

/* What an LP still holds that a snapshot cannot (NULL: nothing). */
static const char *unsettled(const struct kr__lp *lp)
{
    const struct tw_lp *tl = tw_lp_of(lp);
    if (tl->first_unc) return "uncommitted events";
    if (tl->fail) return "a failed event";
    return lp->ult ? "a preempted event" : NULL;
}

/* --check: nothing of this thread is speculative or in flight any more. */
static void check_lps_settled(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    for (kr_lp id = g->lo; id < g->lo + g->nlocal; id++) {
        if (g->owner[tw_lidx(g, id)] != th->id) continue;
        const char *what = unsettled(kr__lp_at(th->r, id));
        if (what)
            kr__internal_error("snapshot: LP %llu still has %s", (unsigned long long)id, what);
    }
}

/* An event a snapshot writes is pending (or a cancelled timer) and keeps no sends. */
static void check_pending(const struct tw_thread *th, const struct kr__ev *e)
{
    if ((e->st != KR_EV_PENDING && e->st != KR_EV_CANCELLED) || (e->xflags & KR_EVX_LAZY))
        kr__internal_error("snapshot: thread %u holds an event of LP %llu at %.17g in "
                           "state %d%s", th->id, (unsigned long long)e->dest, e->k.ts,
                           e->st, e->xflags & KR_EVX_LAZY ? " with kept sends" : "");
}

static void check_settled(struct tw_thread *th)
{
    check_lps_settled(th);
    for (size_t i = 0; i < th->heap.n; i++) check_pending(th, kr__heap_ev(&th->heap, i));
    if (th->loc.wn) kr__internal_error("snapshot: thread %u has %zu deliveries queued", th->id,
                                   th->loc.wn);
}

/* The least key of this rank's pending events. */
static struct kr__key least_pending(const struct tw_global *g)
{
    struct kr__key m = kr__key_at(INFINITY);
    for (unsigned t = 0; t < g->n; t++) {
        const struct kr__heap *h = &g->th[t].heap;
        for (size_t i = 0; i < h->n; i++) {
            const struct kr__ev *e = kr__heap_ev(h, i);
            if (e->st != KR_EV_CANCELLED && kr__key_lt(&e->k, &m)) m = e->k;
        }
    }
    return m;
}

/* Thread 0, the others waiting: the committed output out, then the file (across ranks,
 * rank 0 writes it with the others' parts; at: the least pending time of all ranks). */
/* Every thread's pending events but the cancelled ones (n of them), in a new array. */
static struct kr__ev **pending_events(const struct tw_global *g, size_t *n)
{
    size_t all = 0;
    for (unsigned t = 0; t < g->n; t++) all += g->th[t].heap.n;
    struct kr__ev **pending = malloc((all + 1) * sizeof *pending);
    if (!pending) kr__fatal_oom("a snapshot's event list", (all + 1) * sizeof *pending);
    *n = 0;
    for (unsigned t = 0; t < g->n; t++) {
        const struct kr__heap *h = &g->th[t].heap;
        for (size_t i = 0; i < h->n; i++)
            if (kr__heap_ev(h, i)->st != KR_EV_CANCELLED) pending[(*n)++] = kr__heap_ev(h, i);
    }
    return pending;
}

/* The snapshot at `at`: written by its writer (rank 0), sent there by the other ranks. */
static void write_or_send(struct tw_global *g, bool writer, struct kr__ev **pending, size_t n,
                          kr_time at)
{
    struct kr__snap_link link;
    if (g->net.on) tw_rank_link(g, &link);
    tw_metrics_drain(g);
    if (writer) kr__snapshot_write(g->r, pending, n, at, g->net.on ? &link : NULL);
    else kr__snapshot_send(g->r, pending, n, &link);
}

static void write_it(struct tw_global *g, kr_time at)
{
    bool writer = !g->net.on || g->net.rank == 0;
    if (writer) tw_print_committed(g, false); /* (all before the horizon: ranks.c has it) */
    size_t n;
    struct kr__ev **pending = pending_events(g, &n);
    if (!isinf(at)) write_or_send(g, writer, pending, n, at); /* (inf: the run is over) */
    free(pending);
    kr__snapshot_next(g->r, isinf(at) ? g->horizon.ts : at, &g->sn.at, &g->sn.wall);
}

/* Across ranks, after the rollbacks: every worker sends what it has and takes in what
 * comes until nothing is on its way between any ranks; the least pending key of all of
 * them into g->sn.least. */
static void settle_ranks(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    for (;;) {
        tw_rank_turn(th, true);
        tw_quiesce(th); /* (ends with all threads through a barrier) */
        if (th->id == 0) {
            g->sn.least = least_pending(g);
            g->sn.more = !tw_rank_settled(g, &g->sn.least);
        }
        tw_barrier(g, NULL);
        if (!g->sn.more) break;
    }
}

/* Go on from the horizon: nothing pending or to come lies below it, so every clock
 * restarts there (plus the lookahead) - the rollbacks may have undone sends below the old
 * ones - and no quiet record read before holds. Safe events come back unless the run is
 * stopping. (A skipped snapshot undid nothing, and what is in flight may lie below that:
 * the clocks stay.) */
static void restart(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    if (!th->retired && !g->sn.skip) {
        kr_time lo = g->horizon.ts + g->cf.lookahead;
        th->clk.sent = th->clk.safe = th->clk.safe_prev = lo;
        atomic_store_explicit(&g->clock[th->id].bits, kr__time_bits(lo), memory_order_release);
        atomic_store_explicit(&g->clock[th->id].rbits, kr__time_bits(lo), memory_order_release);
        th->rk.stamp_last = -INFINITY; /* (thread 0's stamps to other ranks start again) */
    }
    th->clk.qbound = th->q.full = kr__key_at(-INFINITY);
    th->clk.top_max = -INFINITY;
    th->clk.last = UINT64_MAX;
    if (g->sn.refast) th->fast = true;
}

/* Thread 0, inside: safe events back on (the acks counted afresh), unless a stop was asked
 * meanwhile - then they stay off, and its acks stand. */
static void decide_after(struct tw_global *g)
{
    g->sn.refast =
        g->end.fast_threads && !atomic_load_explicit(&g->end.stopping, memory_order_acquire);
    if (g->sn.refast) {
        atomic_store_explicit(&g->end.stop_acks, 0, memory_order_relaxed);
        atomic_store_explicit(&g->end.safe_hi, 0, memory_order_relaxed);
    }
    atomic_store_explicit(&g->sn.want, 0, memory_order_relaxed);
}

/* (across ranks: any rank's - a model error found by this commit is only this rank's yet;
 * ranks but 0 send their output up to the horizon now, for rank 0 to print before the
 * file) */
static bool run_failed(struct tw_global *g)
{
    pthread_mutex_lock(&g->end.err_mu);
    bool failed = g->end.err != NULL;
    pthread_mutex_unlock(&g->end.err_mu);
    failed = failed || atomic_load_explicit(&g->stop, memory_order_acquire);
    if (!g->net.on) return failed;
    if (g->net.rank) tw_rank_output(g, false);
    return tw_rank_any(g, failed);
}

/* Every worker: back to the horizon, nothing left in flight, the file. */
static void take_it(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    tw_close_pages(th);
    /* (the antimessages about to come lie below what it took as safe or quiet) */
    th->clk.safe = th->clk.safe_prev = -INFINITY;
    th->clk.qbound = th->q.full = kr__key_at(-INFINITY);
    roll_back(th, &g->horizon);
    tw_barrier(g, NULL); /* (all rolled back before any drains: no straggler now) */
    if (g->net.on) settle_ranks(th);
    else tw_quiesce(th);
    if (g->cf.check) check_settled(th);
    tw_barrier(g, NULL);
    if (th->id == 0) write_it(g, g->net.on ? g->sn.least.ts : least_pending(g).ts);
}

/* One that had left its loop applies the horizon here (tw_stop_together); a retired one
 * has nothing to commit, and its sink stays open to the end. */
static void commit_seen(struct tw_thread *th)
{
    uint64_t ep = atomic_load_explicit(&th->g->epoch, memory_order_acquire);
    if (ep == th->gv.seen_epoch || th->retired) return;
    th->gv.seen_epoch = ep;
    tw_commit(th, &th->g->horizon);
}

/* Thread 0, the round over: the ranks' restart, the pause's cost if one was written (its
 * counts before the round: snaps, ns, from t0), and no request left. */
static void round_done(struct tw_global *g, uint64_t t0, uint64_t snaps, uint64_t ns)
{
    struct kr__run *r = g->r;
    if (g->net.on && !g->sn.skip) tw_rank_restart(g, g->horizon.ts + g->cf.lookahead);
    if (r->snap.written != snaps) r->snap.ns = ns + (kr__clock_ns() - t0);
    atomic_store_explicit(&g->sn.req, 0, memory_order_release);
}

/* (Its cost in the summary and --stats is the whole pause, on thread 0's clock: the
 * rollbacks, the drain and the waits besides the writing.) */
void tw_snap_round(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    struct kr__run *r = th->r;
    uint64_t t0 = kr__clock_ns(), snaps = r->snap.written, ns = r->snap.ns;
    commit_seen(th);
    tw_quiet_void(th);
    if (g->cf.queries) tw_query_settle(th); /* (an asker's answer: others answer meanwhile) */
    tw_barrier(g, g->cf.queries ? th : NULL);
    if (th->id == 0) g->sn.skip = run_failed(g); /* (a stopping run: no snapshot) */
    tw_barrier(g, NULL);
    if (!g->sn.skip) take_it(th);
    if (th->id == 0) decide_after(g);
    tw_barrier(g, NULL);
    restart(th);
    tw_barrier(g, NULL);
    if (th->id == 0) round_done(g, t0, snaps, ns);
    tw_barrier(g, NULL);
}

static bool snapshots_used(const struct tw_global *g)
{
    return g->r->cfg->snap_dir != NULL;
}

/* A snapshot due at this horizon: every worker takes part. */
static void snapshots_on_gvt(struct tw_thread *th)
{
    if (atomic_load_explicit(&th->g->sn.req, memory_order_acquire)) tw_snap_round(th);
}

const struct tw_module tw_mod_snapshots = {
    .name = "snapshots", .used = snapshots_used, .on_gvt = snapshots_on_gvt,
};
