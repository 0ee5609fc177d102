/* gvt.c - asynchronous shared-memory GVT, folded into the worker loop; no thread ever
 * waits for another.
 *
 * GVT is not a bare timestamp but a full ordering key (ts, gen, src, seq): every event a
 * thread may still run has a key >= GVT (a child's key always exceeds its parent's), so all
 * events with smaller keys can commit, even when thousands share GVT's timestamp. (A
 * timestamp GVT commits nothing at that time: a synchronous model with more events at one
 * time than a thread may hold uncommitted would livelock.)
 *
 * A round has two phases (three when the model has done()). Phase 1: each thread, at its
 * next check, publishes its channels and starts tracking the lowest key it sends to other
 * threads (min_sent, starting from what a full channel kept back). Phase 2, once all have
 * passed phase 1: each thread takes in what was published to it and reports min(lowest
 * pending event, min_sent). GVT is the minimum of the reports. A message not yet taken in at
 * a report was either sent after its sender passed phase 1 (so it is in that sender's
 * min_sent), or kept back in a full channel then (likewise), or published before (so the
 * receiver's phase-2 drain found it); anything sent later descends from an event already
 * counted. Phase 3 (done): each thread says whether
 * all its LPs are done at GVT and since which event. The last thread through a phase
 * closes it; the last of the round publishes the commit horizon. */
#include <math.h>
#include "optimistic/tw.h"
#include "optimistic/balance.h"
#include "optimistic/ranks.h"
#include "base/error.h"

static void report_done(struct tw_thread *th, const struct kr__key *gvt);

static bool last_through(struct tw_global *g)
{
    return atomic_fetch_add_explicit(&g->count, 1, memory_order_acq_rel) + 1 ==
           atomic_load_explicit(&g->active, memory_order_relaxed);
}

/* Whether the threads are gathering to migrate LPs or take a snapshot. */
static bool quiescing(const struct tw_global *g)
{
    return atomic_load_explicit(&g->mig_req, memory_order_relaxed) ||
           atomic_load_explicit(&g->sn.req, memory_order_relaxed);
}

/* Start a round if none is running and the period has passed (or `force`: this thread has
 * processed enough events since it last asked, so the uncommitted working set stays small
 * enough to be in cache when it is committed). True if this call started one. */
bool tw_gvt_maybe_start(struct tw_thread *th, bool force)
{
    struct tw_global *g = th->g;
    uint64_t s = atomic_load_explicit(&g->state, memory_order_acquire);
    if (s & TW_PH_MASK) return false;
    if (quiescing(g)) return false;
    uint64_t now = kr__clock_ns();
    if (!force &&
        now - atomic_load_explicit(&g->last_round_ns, memory_order_relaxed) < g->cf.period_ns)
        return false;
    th->round_mark = th->cnt->processed - th->cnt->safe;
    uint64_t next = (s & ~TW_PH_MASK) + TW_ROUND + TW_PH_SEND;
    if (!atomic_compare_exchange_strong_explicit(&g->state, &s, next, memory_order_acq_rel,
                                                 memory_order_relaxed))
        return false;
    atomic_store_explicit(&g->last_round_ns, now, memory_order_relaxed);
    return true;
}

static void publish(struct tw_global *g, struct kr__key h, bool stop, uint64_t s)
{
    g->horizon = h;
    atomic_fetch_add_explicit(&g->epoch, 1, memory_order_release);
    atomic_store_explicit(&g->count, 0, memory_order_relaxed);
    atomic_store_explicit(&g->state, s & ~TW_PH_MASK, memory_order_release);
    if (stop) atomic_store_explicit(&g->stop, 1, memory_order_release);
}

/* Whether every worker of this process saw the stop, and GVT is past every safe event
 * they had run. */
static bool threads_past_safe(const struct tw_global *g)
{
    if (atomic_load_explicit(&g->end.stop_acks, memory_order_acquire) < g->end.fast_threads)
        return false;
    uint64_t hi = atomic_load_explicit(&g->end.safe_hi, memory_order_relaxed);
    return !hi || g->gvt.ts > tw_time_of(hi - 1); /* (time bits + 1) */
}

/* The same across ranks, from the round's reduction. */
static bool ranks_past_safe(const struct tw_global *g)
{
    return !(g->net.out.flags & KR_NET_UNACKED) && g->gvt.ts > g->net.out.safe_hi.ts;
}

/* May an interrupted run stop at GVT's time? Once every worker has turned safe events off
 * and GVT has passed the last one run (those were committed at once), and GVT's time has
 * moved past the last horizon's: that horizon may have split the events tied at its time,
 * and what an interrupted run commits must be every event before some time T and none
 * after, what `--end T` commits on any engine. (A horizon at a time, key_at(t), never
 * splits a tie; GVT's whole key can, and commits sooner - zero-delay chains at one time
 * would wait otherwise, a model error deferred at the end of one forever.) */
static bool stop_point(const struct tw_global *g)
{
    if (!atomic_load_explicit(&g->end.stopping, memory_order_relaxed)) return false;
    /* (across ranks, every rank's workers as the round's reduction saw them: ranks.c) */
    if (!(g->net.on ? ranks_past_safe(g) : threads_past_safe(g))) return false;
    return g->gvt.ts > g->horizon.ts;
}

/* Where a stopping run's history ends: at GVT's time, or the last horizon if later. */
static struct kr__key stop_horizon(const struct tw_global *g)
{
    return g->gvt.ts > g->horizon.ts ? kr__key_at(g->gvt.ts) : g->horizon;
}

/* Commit everything before GVT (capped at the end time); stop once GVT reaches the end, or
 * at a point in time once the run was interrupted (from then on, horizons are times). */
static void publish_gvt(struct tw_thread *th, uint64_t s)
{
    struct tw_global *g = th->g;
    struct kr__key end = kr__key_at(th->r->cfg->end);
    if (!kr__key_lt(&g->gvt, &end)) {
        publish(g, end, true, s);
    } else if (atomic_load_explicit(&g->stop, memory_order_acquire) || stop_point(g)) {
        publish(g, stop_horizon(g), true, s);
    } else {
        if (!tw_snap_plan(th)) tw_balance_plan(th); /* (not both in one round) */
        publish(g, g->gvt, false, s);
    }
}

static void close_phase2(struct tw_thread *th, uint64_t s)
{
    struct tw_global *g = th->g;
    struct kr__key gvt = kr__key_at(INFINITY);
    for (unsigned t = 0; t < g->n; t++)
        if (kr__key_lt(&g->th[t].gv.report, &gvt)) gvt = g->th[t].gv.report;
    g->gvt_ops->start(th, s, &gvt);
}

/* GVT is known (of this process, or of all ranks): the done phase, or the horizon. */
void tw_gvt_found(struct tw_thread *th, uint64_t s, struct kr__key gvt)
{
    struct tw_global *g = th->g;
    /* (bundles: a member still in flight may lie between processed members of its bundle,
     * which is undone whole when it arrives: nothing of that bundle may commit yet) */
    gvt = tw_key_floor(th, &gvt);
    if (g->cf.check && kr__key_lt(&gvt, &g->gvt))
        kr__internal_error("GVT went backwards: %.17g after %.17g", gvt.ts, g->gvt.ts);
    g->gvt = gvt;
    atomic_store_explicit(&g->gvt_bits, kr__time_bits(gvt.ts), memory_order_release);
    if (__builtin_expect(kr__trace_run, 0))
        kr__trace_span(KR_SPAN_GVT, kr__trace_now(), 0, 0, gvt.ts, 0);
    if (th->r->model->done) {
        atomic_store_explicit(&g->count, 0, memory_order_relaxed);
        atomic_store_explicit(&g->state, (s & ~TW_PH_MASK) | TW_PH_DONE, memory_order_release);
        return;
    }
    publish_gvt(th, s);
}

static void close_phase3(struct tw_thread *th, uint64_t s)
{
    struct tw_global *g = th->g;
    bool all = true;
    struct kr__key maxd = kr__key_at(-INFINITY);
    for (unsigned t = 0; t < g->n; t++) {
        all = all && g->th[t].gv.all_done;
        if (kr__key_lt(&maxd, &g->th[t].gv.max_done)) maxd = g->th[t].gv.max_done;
    }
    g->gvt_ops->start_done(th, s, all, &maxd);
}

/* Whether every LP is done at GVT, and since when: the end, or the horizon. */
void tw_gvt_done_found(struct tw_thread *th, uint64_t s, bool all, struct kr__key maxd)
{
    struct tw_global *g = th->g;
    kr_time end = th->r->cfg->end;
    if (all && maxd.ts < end) {
        maxd.seq++; /* commit up to and including the event after which all were done */
        g->end.by_done = true;
        publish(g, maxd, true, s);
        return;
    }
    publish_gvt(th, s);
}

/* This process alone: its least report is GVT. */
static void local_start(struct tw_thread *th, uint64_t s, const struct kr__key *least)
{
    tw_gvt_found(th, s, *least);
}

static void local_start_done(struct tw_thread *th, uint64_t s, bool all,
                             const struct kr__key *maxd)
{
    tw_gvt_done_found(th, s, all, *maxd);
}

const struct tw_gvt_ops tw_gvt_local = { local_start, local_start_done, NULL, NULL };

/* The lowest key this thread may still run or has sent into flight since phase 1. */
static struct kr__key local_min(struct tw_thread *th)
{
    struct kr__ev *top = kr__heap_top(&th->heap);
    struct kr__key m = top ? top->k : kr__key_at(INFINITY);
    return kr__key_lt(&th->gv.min_sent, &m) ? th->gv.min_sent : m;
}

/* Phase 1 seen (send): the thread's colour turns, its posted sends count. */
static void phase_send(struct tw_thread *th, uint64_t s)
{
    struct tw_global *g = th->g;
    th->rk.nround++; /* (its colour: what it sends to other ranks from now on) */
    th->rk.nudge = false;
    th->gv.min_sent = tw_post_publish(th) & KR_CHAN_KEPT ? tw_post_backlog_min(th)
                                                      : kr__key_at(INFINITY);
    if (last_through(g)) {
        atomic_store_explicit(&g->count, 0, memory_order_relaxed);
        atomic_store_explicit(&g->state, (s & ~TW_PH_MASK) | TW_PH_REPORT, memory_order_release);
    }
}

/* Phase 2 seen (report): the thread's least key and its white messages. */
static void phase_report(struct tw_thread *th, uint64_t s)
{
    struct tw_global *g = th->g;
    if (g->gvt_ops->report) g->gvt_ops->report(th);
    tw_drain(th);
    th->gv.report = local_min(th);
    th->rk.white = (int64_t)(th->rk.sent[!(th->rk.nround & 1)] -
                             th->rk.recv[!(th->rk.nround & 1)]);
    th->cnt->gvt_rounds++; /* every thread reports in every round */
    for (unsigned i = 0; i < g->hk.nreport; i++) g->hk.report[i](th);
    if (last_through(g)) close_phase2(th, s);
}

static void phase_seen(struct tw_thread *th, uint64_t s)
{
    switch (s & TW_PH_MASK) {
    case TW_PH_SEND:
        phase_send(th, s);
        break;
    case TW_PH_REPORT:
        phase_report(th, s);
        break;
    case TW_PH_DONE:
        report_done(th, &th->g->gvt);
        if (last_through(th->g)) close_phase3(th, s);
        break;
    default:
        break;
    }
}

/* A new GVT (epoch ep): each mechanism's on-GVT hook, in registration order. */
static void gvt_hooks(struct tw_thread *th, uint64_t ep)
{
    th->gv.seen_epoch = ep;
    for (unsigned i = 0; i < th->g->hk.ngvt; i++) th->g->hk.gvt[i](th);
}

void tw_gvt_poll(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    uint64_t s = atomic_load_explicit(&g->state, memory_order_acquire);
    if (s != th->gv.seen_state) {
        th->gv.seen_state = s;
        phase_seen(th, s);
    }
    if ((s & TW_PH_MASK) >= TW_PH_NET && g->gvt_ops->poll) g->gvt_ops->poll(th, s);
    uint64_t ep = atomic_load_explicit(&g->epoch, memory_order_acquire);
    if (ep != th->gv.seen_epoch) gvt_hooks(th, ep);
}

/* Done-phase report: are all my LPs done on their state at GVT, and since which event?
 * LPs without uncommitted events are answered by the committed counts; only LPs on the
 * to-commit list are looked at, so a round costs what was processed, not the LP count. */
/* --check: what migrations keep per thread agrees with the owner table. */
static void check_done_counts(const struct tw_thread *th)
{
    kr_lp own = 0, dn = 0;
    for (kr_lp id = th->g->lo; id < th->g->lo + th->g->nlocal; id++) {
        if (th->g->owner[tw_lidx(th->g, id)] != th->id) continue;
        own++;
        const struct kr__lp *lp = kr__lp_at(th->r, id);
        dn += lp->done_seen || lp->done_init;
    }
    if (own != th->nlps || dn != th->gv.ndone)
        kr__internal_error("thread %u owns %llu LPs (counted %llu), %llu of them done "
                           "(counted %llu)", th->id, (unsigned long long)own,
                           (unsigned long long)th->nlps, (unsigned long long)dn,
                           (unsigned long long)th->gv.ndone);
}

/* Is the LP done after one of its uncommitted events below h? The latest such time is
 * kept in max_done. */
static bool done_below(struct tw_thread *th, const struct tw_lp *tl, const struct kr__key *h)
{
    for (struct kr__ev *x = tl->first_unc; x && kr__key_lt(&x->k, h); x = x->next) {
        if (x->flags & KR_EVF_ERROR) return false;
        if (x->flags & KR_EVF_DONE_AFTER) {
            if (kr__key_lt(&th->gv.max_done, &x->k)) th->gv.max_done = x->k;
            return true;
        }
    }
    return false;
}

static void report_done(struct tw_thread *th, const struct kr__key *gvt)
{
    struct kr__key h = *gvt;
    kr_lp done = th->gv.ndone;
    th->gv.max_done = th->gv.max_done_committed;
    for (size_t i = 0; i < th->cm.ndirty; i++) {
        struct kr__lp *lp = kr__lp_at(th->r, th->cm.dirty[i]);
        if (lp->done_seen || lp->done_init) continue; /* counted already */
        done += done_below(th, tw_lp_of(lp), &h);
    }
    th->gv.all_done = done == th->nlps;
    if (th->g->cf.check) check_done_counts(th);
}

static void gvt_init(struct tw_thread *th)
{
    th->gv.min_sent = kr__key_at(INFINITY);
}

/* Whether the hold starts now: the first, or events ran or stamps came since the last. */
static bool held_anew(const struct tw_thread *th, uint64_t ran, uint64_t clock)
{
    return !th->rk.held_ns || th->rk.held_ran != ran || th->rk.held_clock != clock;
}

/* Across ranks, an idle turn whose top is held back (held): the ranks' clocks carry no
 * quiet records, so without a lookahead they bound each other and only a GVT round moves
 * them, a round an event. A hold of TW_HELD_NS in which the other ranks' clock stood still
 * starts a round: waiting for the sleep (4096 spins, each with a look at MPI: some 4 ms)
 * or the period, a 6 330-event run of spans without a lookahead took 23 s on 2 ranks, now
 * 6. (With a lookahead, stamps move that clock and end holds. At 200 us - 1.2 s - spans
 * with one made half as many rounds again and ran a fifth longer on 2 ranks; at 1 ms
 * neither shows.) */
#define TW_HELD_NS (1000u * 1000)
void tw_gvt_held(struct tw_thread *th, bool held)
{
    if (!held) {
        th->rk.held_ns = 0;
        return;
    }
    uint64_t now = kr__clock_ns(), ran = th->cnt->processed,
             clock = atomic_load_explicit(&th->g->net.clock_bits, memory_order_relaxed);
    if (held_anew(th, ran, clock)) {
        th->rk.held_ns = now; /* (held anew: events ran, or stamps came, since) */
        th->rk.held_ran = ran;
        th->rk.held_clock = clock;
        return;
    }
    if (now - th->rk.held_ns < TW_HELD_NS) return;
    th->rk.held_ns = now;
    tw_gvt_maybe_start(th, true);
}

const struct tw_module tw_mod_gvt = { .name = "gvt", .init = gvt_init };
