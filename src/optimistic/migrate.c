/* migrate.c - LP migration between worker threads, and the load balancer that plans it.
 * One process only: the per-LP tables are indexed by LP id here, which holds where the
 * process owns every LP (g->lo is 0); across MPI ranks balancing is off (ranks.c).
 *
 * An LP moves with its whole optimistic history: state, processed list, checkpoints,
 * uncommitted output, parked events, and its pending events out of the old owner's heap.
 * Moves happen when every worker is inside tw_migrate: the thread that closes a GVT round
 * plans them and raises `mig_req` before it publishes the horizon, so each worker enters
 * right after applying that horizon, and no round starts until all have left (state stays
 * idle). Inside, the workers first publish their channels and take in what reached them
 * until a whole pass sent nothing (rollbacks there send antimessages), so no message for a
 * moving LP is in flight; then
 * each hands over the pending events of the LPs it loses, the owner table changes, and
 * each takes in what it gained. The ownership is a table (owner), so the mapping stays one
 * function; what is committed cannot change.
 *
 * Policies (--balance): off; auto, which retires a worker whose core is shared (it gets
 * well under its wall time as CPU while another worker gets nearly all of it): its LPs go
 * to the other workers, it leaves GVT and sleeps, and it comes back (the first mapping is
 * restored) once a probe finds its core free again; auto also tries one worker fewer when
 * rollbacks undo much of the work, and keeps that only if more gets committed (the trial);
 * storm (tests), random moves at every round. The share trial of a retired worker is in
 * share.c. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "optimistic/tw.h"
#include "optimistic/clock.h"
#include "optimistic/query.h"
#include "optimistic/balance.h"
#include "base/grow.h"
#include "base/error.h"

/* ---- the moves ---- */

/* Processed events not yet committed on lp (the thread's `uncommitted` share). */
static uint64_t lp_uncommitted(const struct tw_lp *tl)
{
    uint64_t n = 0;
    for (const struct kr__ev *x = tl->first_unc; x; x = x->next) n++;
    return n;
}

/* Checkpoint bytes lp holds (blob accounting moves with it). */
static size_t lp_ckpt_bytes(const struct tw_thread *th, const struct kr__lp *lp)
{
    struct tw_lp *tl = tw_lp_of(lp);
    size_t n = 0;
    if (th->g->cf.chained) {
        for (const struct kr__ckpt *c = tw_chain_tip(tl); c; c = c->prev)
            n += c->bytes;
        return n;
    }
    for (const struct kr__ev *x = tl->head; x; x = x->next)
        if (x->ckpt) n += x->ckpt->bytes;
    return n + (tl->base ? tl->base->bytes : 0);
}

/* The old owner's side: suspended events of leaving LPs are abandoned (a stack does not
 * move), their pending events leave the heap, their bookkeeping leaves this thread. */
static void give_up(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    for (size_t i = 0; i < g->bl.nmoves; i++) {
        const struct tw_move *m = &g->bl.moves[i];
        struct kr__lp *lp = kr__lp_at(th->r, m->lp);
        if (m->from != th->id || !lp->ult || !th->ts.nsusp) continue;
        tw_rollback(th, lp, &((struct kr__ev *)lp->ult->ev)->k, true);
    }
}

/* The pending events of leaving LPs out of the heap, into th->mg.ev for their new owners
 * (cancelled ones dropped here rather than carried). */
static void heap_hand_over(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    struct kr__heap *h = &th->heap;
    size_t keep = 0;
    th->mg.n = 0;
    for (size_t i = 0; i < h->n; i++) {
        struct kr__ev *e = kr__heap_ev(h, i);
        if (g->target[e->dest] == th->id) {
            kr__heap_move(h, keep++, i);
        } else if (e->st == KR_EV_CANCELLED) {
            kr__pool_put(th->pool, e);
        } else {
            if (th->mg.n == th->mg.cap)
                KR_GROW(th->mg.ev, th->mg.cap, th->mg.n + 1, 256, "migration buffer");
            th->mg.ev[th->mg.n++] = e;
        }
    }
    h->n = keep;
    kr__heap_rebuild(h);
}

static void hand_over(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    heap_hand_over(th);
    th->mg.max_done_out = th->gv.max_done_committed; /* (read by the new owners in take_in) */
    size_t kd = 0;
    for (size_t i = 0; i < th->cm.ndirty; i++)
        if (g->target[th->cm.dirty[i]] == th->id) th->cm.dirty[kd++] = th->cm.dirty[i];
    th->cm.ndirty = kd;
    for (size_t i = 0; i < g->bl.nmoves; i++) {
        const struct tw_move *m = &g->bl.moves[i];
        if (m->from != th->id) continue;
        struct kr__lp *lp = kr__lp_at(th->r, m->lp);
        th->uncommitted -= lp_uncommitted(tw_lp_of(lp));
        th->gv.ndone -= lp->done_seen || lp->done_init;
        th->blobs.held -= lp_ckpt_bytes(th, lp);
        th->nlps--;
        th->cnt->migrated_out++;
    }
}

/* An LP moved here: its uncommitted events, done() answers, checkpoints and open pages
 * now count on this thread. */
static void take_lp(struct tw_thread *th, const struct tw_move *m)
{
    const struct tw_global *g = th->g;
    struct kr__lp *lp = kr__lp_at(th->r, m->lp);
    struct tw_lp *tl = tw_lp_of(lp);
    th->uncommitted += lp_uncommitted(tl);
    th->gv.ndone += lp->done_seen || lp->done_init;
    th->blobs.held += lp_ckpt_bytes(th, lp);
    if (kr__key_lt(&th->gv.max_done_committed, &g->th[m->from].mg.max_done_out))
        th->gv.max_done_committed = g->th[m->from].mg.max_done_out;
    th->nlps++;
    if (tl->dirty) tw_mark_dirty_again(th, m->lp);
}

/* The new owner's side: the LPs' pending events, bookkeeping and commit duties. */
static void take_in(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    for (unsigned t = 0; t < g->n; t++) {
        const struct tw_thread *o = &g->th[t];
        for (size_t i = 0; i < o->mg.n; i++)
            if (g->owner[o->mg.ev[i]->dest] == th->id) kr__heap_push(&th->heap, o->mg.ev[i]);
    }
    for (size_t i = 0; i < g->bl.nmoves; i++)
        if (g->bl.moves[i].to == th->id) take_lp(th, &g->bl.moves[i]);
}

/* A worker without LPs leaves GVT and the clocks (it can receive nothing); one that gets
 * LPs again rejoins at the current horizon. Run by each worker for itself, inside. */
static void set_active(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    bool active = th->nlps > 0;
    if (active == !th->retired) return;
    th->retired = !active;
    if (th->retired) {
        th->gv.report = kr__key_at(INFINITY);
        th->gv.all_done = true;
        th->gv.max_done = kr__key_at(-INFINITY);
        atomic_store_explicit(&g->clock[th->id].bits, kr__time_bits(INFINITY),
                              memory_order_release);
        th->clk.sent = INFINITY;
        th->clk.talked = false; /* (nothing pending: it sends no more) */
        tw_quiet_publish(th, NULL);
        /* (--memory-max: its heap went with its LPs; its events stay counted where they
         * were allocated) */
        atomic_store_explicit(&g->mem[th->id].pending, 0, memory_order_relaxed);
    }
    if (!th->retired) { /* back: at the horizon every other worker has applied */
        th->cm.applied = g->horizon;
        th->gv.seen_epoch = atomic_load_explicit(&g->epoch, memory_order_acquire);
        atomic_store_explicit(&th->bal.wants_back, 0, memory_order_relaxed);
        atomic_store_explicit(&th->bal.probe, -1.0, memory_order_relaxed);
        th->bal.free_probes = 0;
        th->bal.nshares = 0; /* (the shares measured before it left say nothing now) */
        atomic_store_explicit(&th->bal.cpu_share, -1.0, memory_order_relaxed);
        atomic_store_explicit(&th->bal.rq_shared, 0, memory_order_relaxed);
        th->bal.wall = 0;
    }
    pthread_mutex_lock(&th->cm.sink.mu);
    th->cm.sink.upto = th->retired ? kr__key_at(INFINITY) : th->cm.applied;
    pthread_mutex_unlock(&th->cm.sink.mu);
}

/* A worker left with every LP runs alone, in lone bursts, once the history they came with
 * has committed: a round for it now, not a period later (life beside a busy core was lone
 * 6-18 ms after the moves, now 3.5-7.5). LPs that came without history (from a lone home
 * found on a busy core) need no round: lone at once - it had waited for the next commit,
 * 4.5-10 ms of the general path (queueing beside a busy core 0, 7 of 10 runs). None once
 * workers are leaving. */
static void lone_soon(struct tw_thread *th)
{
    const struct tw_global *g = th->g;
    if (th->nlps != g->nlocal || g->net.on ||
        atomic_load_explicit(&g->end.left, memory_order_relaxed))
        return;
    if (th->uncommitted) tw_gvt_maybe_start(th, true);
    else tw_lone_update(th);
}

/* Thread 0, between the hand-over and the take-in: the new owners, and how many threads
 * have LPs once the moves land (hand_over took the leaving LPs off already). */
static void apply_moves(struct tw_global *g)
{
    for (size_t i = 0; i < g->bl.nmoves; i++) g->owner[g->bl.moves[i].lp] = g->bl.moves[i].to;
    unsigned active = 0;
    for (unsigned t = 0; t < g->n; t++) {
        kr_lp n = g->th[t].nlps;
        for (size_t i = 0; i < g->bl.nmoves; i++) n += g->bl.moves[i].to == t;
        active += n > 0;
    }
    atomic_store_explicit(&g->active, active, memory_order_relaxed);
}

/* The highest time any thread ran safe events to. */
static kr_time highest_fast(const struct tw_global *g)
{
    kr_time hi = -INFINITY;
    for (unsigned t = 0; t < g->n; t++)
        if (g->th[t].fast_hi > hi) hi = g->th[t].fast_hi;
    return hi;
}

void tw_migrate(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    tw_quiet_void(th); /* (pending events change hands: no quiet record holds) */
    tw_lone_leave(th); /* (before its events do) */
    tw_barrier(g, NULL); /* everyone has applied the horizon the moves were planned at */
    tw_close_pages(th); /* (page modes: the list of LPs with open pages is per thread) */
    give_up(th);
    tw_quiesce(th);
    kr_time lo = tw_clock_min(g, g->n); /* (read before anyone rewrites a clock) */
    hand_over(th);
    tw_barrier(g, NULL);
    if (th->id == 0) apply_moves(g);
    /* (an LP arrives with uncommitted events whose sends its old owner may have run safe:
     * every thread's own-accord rollbacks stay above every safe event run, tw_memory_floor) */
    kr_time hi = highest_fast(g);
    tw_barrier(g, NULL);
    th->fast_hi = hi;
    take_in(th);
    /* A thread that gained pending events may now send below its old clock, never below
     * the least clock of all (those events lay in some heap, at or above its floor): every
     * clock restarts there, and so does what this thread counts as safe. */
    th->clk.sent = th->clk.safe = th->clk.safe_prev = lo;
    th->clk.qbound = kr__key_at(-INFINITY);
    atomic_store_explicit(&g->clock[th->id].bits, kr__time_bits(lo), memory_order_release);
    set_active(th);
    /* (lone mode left above: back at its next commit or now, lone_soon) */
    tw_alone_update(th);
    th->cnt->migrations++;
    tw_barrier(g, NULL);
    if (th->id == 0) {
        g->bl.nmoves = 0;
        atomic_store_explicit(&g->mig_req, 0, memory_order_release);
    }
    tw_barrier(g, NULL);
    lone_soon(th);
}

/* ---- the start on one worker ---- */

/* Beside a busy core, workers that split the LPs from the start ran at its pace until it
 * was found (10-13 ms), then the moves and the wait for lone mode (3-7 ms more): 5-9% of a
 * loaded run of 0.2-0.3 s. A run that can go lone starts instead with every LP on the
 * worker bound to the core this (the run's) thread is on, which runs them in lone mode
 * from its first event while the others probe their cores (start_probe, cpushare.c); the
 * first plan (plan_start) spreads the LPs over those found free. Beside a busy loop the
 * run's thread was on the busy core in 3 to 8 of 12 runs (7 of 10 beside core 0), and the
 * home found its core shared 6-25 ms in, then moved every LP to a free worker in 3-8 ms;
 * so a core where another process has a task runnable now is not chosen when another
 * worker's core has none (kr__pin_worker_home: 20 of 20 such runs started on the free
 * core). A home still found shared hands every LP on, once. Before init: its sends go
 * where the LPs are. Only when another process runs on a worker's core now: on an idle
 * machine the spread that followed left 2-thread runs 2-14% slower to their end (queueing
 * 0.88x, life 0.92x: bench/RESULTS.md, session 50), so such a run starts spread, and a
 * process that comes later is found by the share windows. */
static bool home_start_ok(const struct tw_global *g)
{
    const struct tw_thread *t0 = &g->th[0];
    return g->cf.balance == KR_BALANCE_AUTO && g->n >= 2 && t0->lone.ok && t0->fast;
}

void tw_balance_home(struct tw_global *g)
{
    int home = home_start_ok(g) ? kr__pin_worker_home(g->n) : -1;
    if (home < 0) return;
    g->bl.home = home;
    g->bl.starting = true;
    for (kr_lp i = 0; i < g->nlocal; i++) g->owner[i] = g->target[i] = (uint16_t)home;
    for (unsigned t = 0; t < g->n; t++) {
        g->th[t].nlps = (int)t == home ? g->nlocal : 0;
        g->th[t].bal.start_probe = (int)t != home;
    }
}

/* ...and, the clocks started, the others out (a clock at +inf, out of GVT). */
void tw_balance_home_out(struct tw_global *g)
{
    if (!g->bl.starting) return;
    for (unsigned t = 0; t < g->n; t++)
        if ((int)t != g->bl.home) set_active(&g->th[t]);
    atomic_store_explicit(&g->active, 1, memory_order_relaxed);
}

/* ---- planning (by the thread that closes a GVT round) ---- */

static void add_move(struct tw_global *g, kr_lp lp, unsigned to)
{
    unsigned from = g->owner[lp];
    if (from == to) return;
    if (g->bl.nmoves == g->bl.capmoves)
        KR_GROW(g->bl.moves, g->bl.capmoves, g->bl.nmoves + 1, 1024, "migration plan");
    g->bl.moves[g->bl.nmoves++] = (struct tw_move){ lp, (uint16_t)from, (uint16_t)to };
    g->target[lp] = (uint16_t)to;
}

static void block_mapping(struct tw_global *g, unsigned nact);

/* Up to 8 LPs, drawn from the storm's own generator, each to a drawn thread. */
static void storm_scatter(struct tw_global *g, kr_lp n)
{
    for (int k = 0; k < 8 && n; k++) {
        g->bl.storm = g->bl.storm * 6364136223846793005ull + 1442695040888963407ull;
        kr_lp lp = (kr_lp)((g->bl.storm >> 33) % n);
        unsigned to = (unsigned)((g->bl.storm >> 13) % g->n);
        if (g->target[lp] == g->owner[lp]) add_move(g, lp, to);
    }
}

/* storm: a few random LPs to random threads (a fixed stream: moves change no result) for
 * three rounds in eight; at the fifth all of them go to one worker, which keeps them three
 * rounds - the others retire, and it runs alone, in lone mode (lone.c) - and at the first
 * the first mapping is back. */
static void plan_storm(struct tw_global *g)
{
    kr_lp n = g->r->n;
    unsigned phase = (unsigned)(g->bl.storm_rounds++ % 8);
    if (phase == 4) {
        unsigned to = (unsigned)(g->bl.storm_rounds / 8 % g->n);
        for (kr_lp lp = 0; lp < n; lp++) add_move(g, lp, to);
        return;
    }
    if (phase > 4) return;
    if (phase == 0) {
        block_mapping(g, g->n);
        return;
    }
    storm_scatter(g, n);
}

/* Contiguous blocks in proportion to the workers' weights (bal_weight): equal weights give
 * the first mapping (core/place.h), a weight of 0 no LP. */
void tw_map_by_weight(struct tw_global *g)
{
    uint64_t total = 0, sum = 0;
    for (unsigned t = 0; t < g->n; t++) total += g->th[t].bal.weight;
    kr_lp n = g->r->n, lo = 0;
    for (unsigned t = 0; t < g->n; t++) {
        sum += g->th[t].bal.weight;
        kr_lp hi = (kr_lp)((unsigned __int128)sum * n / total);
        for (kr_lp lp = lo; lp < hi; lp++) add_move(g, lp, t);
        lo = hi;
    }
}

/* The first `nact` workers with a core each, the rest none (all of them: the first
 * mapping). */
static void block_mapping(struct tw_global *g, unsigned nact)
{
    for (unsigned t = 0; t < g->n; t++) g->th[t].bal.weight = t < nact ? TW_WEIGHT_FULL : 0;
    tw_map_by_weight(g);
}

/* The wait before a trial's question is asked again: TW_TRIAL_BACKOFF_NS first (b 0),
 * doubling to TW_TRIAL_MAX_NS (both trials). */
uint64_t tw_backoff_step(uint64_t *b)
{
    if (!*b) *b = TW_TRIAL_BACKOFF_NS;
    uint64_t wait = *b;
    if (*b < TW_TRIAL_MAX_NS) *b *= 2;
    return wait;
}

static void trial_set(struct tw_global *g, unsigned nact, int state, double rate)
{
    g->bl.trial_rate = rate;
    g->bl.trial = state;
    if (nact != g->bl.trial_nact) block_mapping(g, nact);
    g->bl.trial_nact = nact;
}

/* A window after a change of the worker count: keep it if the committed rate says so. */
static void trial_judge(struct tw_global *g, uint64_t now, double rate)
{
    bool fewer = g->bl.trial == TW_TRIAL_RUNNING;
    bool better = fewer ? rate >= g->bl.trial_rate * TW_TRIAL_FEWER
                        : rate > g->bl.trial_rate * TW_TRIAL_MORE;
    uint64_t wait = tw_backoff_step(&g->bl.trial_backoff_ns);
    unsigned nact = g->bl.trial_nact;
    if (fewer && better) { /* keep; one fewer again next window if still needed */
        g->bl.trial_next_ns = now;
        g->bl.trial_back_ns = now + wait;
    } else if (fewer) { /* undo */
        g->bl.cnt_undone++;
        nact++;
        g->bl.trial_next_ns = now + wait;
    } else if (better) { /* back for good: as if new (and perhaps one more back) */
        g->bl.trial_backoff_ns = 0;
        g->bl.trial_back_ns = now;
    } else { /* fewer was better after all */
        nact--;
        g->bl.trial_back_ns = now + wait;
    }
    trial_set(g, nact, nact == g->n ? TW_TRIAL_NONE : TW_TRIAL_KEPT, rate);
}

/* The workers' counts at their last reports: committed, processed, rolled back, cuts. */
static void trial_counts(const struct tw_global *g, uint64_t *c, uint64_t *p, uint64_t *rb,
                         uint64_t *cuts)
{
    for (unsigned t = 0; t < g->n; t++) {
        *c += g->th[t].bal.rep_committed;
        *p += g->th[t].bal.rep_processed;
        *rb += g->th[t].bal.rep_rolled;
        *cuts += g->th[t].bal.rep_cuts;
    }
}

/* The thread-count trial (tw.h): fewer workers can commit more when they mostly undo each
 * other's work (few LPs, tight coupling) - the committed rate decides, window by window. */
/* A window of the trials ended with `rate` committed events/s: judge the running trial,
 * or start one (one worker fewer) when the threads are coupled, or try the kept worker
 * count again one higher (has the model changed?). */
static void trial_step(struct tw_global *g, uint64_t now, double rate, bool coupled)
{
    if (g->bl.trial == TW_TRIAL_RUNNING || g->bl.trial == TW_TRIAL_BACK) {
        trial_judge(g, now, rate);
    } else if (coupled && g->bl.trial_nact >= 2 && now >= g->bl.trial_next_ns) {
        g->bl.cnt_trials++;
        trial_set(g, g->bl.trial_nact - 1, TW_TRIAL_RUNNING, rate);
    } else if (g->bl.trial == TW_TRIAL_KEPT && now >= g->bl.trial_back_ns) {
        trial_set(g, g->bl.trial_nact + 1, TW_TRIAL_BACK, rate);
    }
}

static void plan_trial(struct tw_global *g, uint64_t now)
{
    uint64_t c = 0, p = 0, rb = 0, cuts = 0;
    trial_counts(g, &c, &p, &rb, &cuts);
    if (g->bl.win_t0 && now - g->bl.win_t0 < TW_TRIAL_NS) return;
    struct tw_balancer *b = &g->bl;
    double rate = b->win_t0 ? (double)(c - b->win_c0) * 1e9 / (double)(now - b->win_t0) : 0;
    double eff = p > b->win_p0 ? 1.0 - (double)(rb - b->win_r0) / (double)(p - b->win_p0) : 1;
    bool first = !g->bl.win_t0, coupled = eff < TW_TRIAL_EFF || cuts > g->bl.win_x0;
    g->bl.win_t0 = now, g->bl.win_c0 = c, g->bl.win_p0 = p, g->bl.win_r0 = rb, g->bl.win_x0 = cuts;
    if (!first) trial_step(g, now, rate, coupled);
}

struct tw_shares {
    int worst, best;          /* active workers with a core each: least and most CPU share */
    double lo, hi;
    unsigned back, retired;   /* workers out of a shared core: wanting back, all */
    unsigned unmeasured;      /* active workers without a share yet */
};

/* read_shares for retired worker t: whether it wants back in (unless it is out for the
 * trial: its core is free). */
static void retired_share(const struct tw_global *g, unsigned t, struct tw_shares *v)
{
    if (t >= g->bl.trial_nact) return;
    v->back += atomic_load_explicit(&g->th[t].bal.wants_back, memory_order_relaxed);
    v->retired++;
}

static struct tw_shares read_shares(const struct tw_global *g)
{
    struct tw_shares v = { -1, -1, 2, -1, 0, 0, 0 };
    for (unsigned t = 0; t < g->n; t++) {
        struct tw_thread *th = &g->th[t];
        double s = atomic_load_explicit(&th->bal.cpu_share, memory_order_relaxed);
        if (th->retired) {
            retired_share(g, t, &v);
        } else if (th->bal.part) { /* (a share of a shared core: back once it is free - a
                                    * window of it can show 0.9 when the run queue does not) */
            v.back += s >= TW_FREE_SHARE &&
                      !atomic_load_explicit(&th->bal.rq_shared, memory_order_relaxed);
        } else if (s >= 0) { /* (negative: not measured yet) */
            if (s < v.lo) v.lo = s, v.worst = (int)t;
            if (s > v.hi) v.hi = s, v.best = (int)t;
        } else {
            v.unmeasured++;
        }
    }
    return v;
}

/* The worst worker's core is shared and the best one's is not: by CPU share (over windows),
 * or by the run queue (one window: a start-up window can show a free core's share below
 * TW_FREE_SHARE, 0.79 seen, while the shared one waited 73% of it). */
static bool shares_apart(const struct tw_global *g, const struct tw_shares *v)
{
    if (v->lo <= TW_SHARED_SHARE && v->hi >= TW_FREE_SHARE) return true;
    return atomic_load_explicit(&g->th[v->worst].bal.rq_shared, memory_order_relaxed) &&
           !atomic_load_explicit(&g->th[v->best].bal.rq_shared, memory_order_relaxed) &&
           v->lo <= TW_SHARED_SHARE;
}

/* The home worker's first window says its core is shared (the run's thread was on a busy
 * core when the home was chosen); `known`: it has said anything yet. */
static bool home_shared(const struct tw_global *g, bool *known)
{
    const struct tw_bal *b = &g->th[g->bl.home].bal;
    double s = atomic_load_explicit(&b->cpu_share, memory_order_relaxed);
    bool queued = atomic_load_explicit(&b->rq_shared, memory_order_relaxed);
    *known = queued || s >= 0;
    return queued || (s >= 0 && s < TW_SHARED_SHARE);
}

/* Every worker but the home has probed its core. */
static bool start_probed(const struct tw_global *g)
{
    for (unsigned t = 0; t < g->n; t++)
        if ((int)t != g->bl.home &&
            atomic_load_explicit(&g->th[t].bal.probe, memory_order_acquire) < 0)
            return false;
    return true;
}

/* Each worker but the home that its probe did not find free takes the share the probe
 * found; how many. */
static unsigned start_shared(struct tw_global *g)
{
    unsigned n = 0;
    for (unsigned t = 0; t < g->n; t++) {
        struct tw_bal *b = &g->th[t].bal;
        if ((int)t == g->bl.home || atomic_load_explicit(&b->wants_back, memory_order_relaxed))
            continue;
        b->part = tw_share_weight(atomic_load_explicit(&b->probe, memory_order_relaxed));
        n++;
    }
    return n;
}

/* The start's plan (tw_balance_home), once every other worker has probed its core and the
 * home has a first window, or TW_START_WAIT_NS on (a worker that has not got its core yet
 * is on a busy one; a home without a share yet counts as free): the workers found free get
 * LPs - the first mapping when all are -, those found shared stay out as tw_share_retire
 * leaves them, their share trial to come, and so does the home if its core is shared and
 * another is free. */
static void plan_start(struct tw_global *g, uint64_t now)
{
    bool known, shared_home = home_shared(g, &known);
    if (now - g->bl.start_ns < TW_START_WAIT_NS && (!known || !start_probed(g))) return;
    g->bl.starting = false;
    g->bl.last_ns = now;
    unsigned shared = start_shared(g);
    if (shared_home && shared < g->n - 1) {
        struct tw_bal *b = &g->th[g->bl.home].bal;
        b->part = tw_share_weight(atomic_load_explicit(&b->cpu_share, memory_order_relaxed));
        shared++;
    }
    if (shared) tw_share_out(g, shared, now);
    else block_mapping(g, g->n);
}

/* A shared core is free again: the first mapping, every worker with a core of its own. */
static void all_back(struct tw_global *g)
{
    for (unsigned t = 0; t < g->n; t++) g->th[t].bal.part = 0;
    block_mapping(g, g->n);
    g->bl.part = TW_PART_NONE;
    g->bl.part_on = false;
    g->bl.cnt_back++;
}

/* auto: retire the worker that gets least CPU when another gets nearly all of it, and try
 * it with a share of the LPs (the share trial); bring workers of shared cores back (the
 * first mapping) once their cores are free; and the thread-count trial. */
/* A worker's share of its core is far below another's, and no trial runs: retire it. */
static bool retire_now(struct tw_global *g, const struct tw_shares *v)
{
    return g->bl.trial == TW_TRIAL_NONE && v->worst >= 0 && v->worst != v->best &&
           shares_apart(g, v) && atomic_load_explicit(&g->active, memory_order_relaxed) >= 2;
}

/* A core shared or free again: the workers out or back. True if that was decided. */
static bool plan_cores(struct tw_global *g, const struct tw_shares *v, uint64_t now)
{
    if (!v->back && !retire_now(g, v)) return false;
    g->bl.last_ns = now;
    if (v->back) all_back(g);
    else tw_share_retire(g, (unsigned)v->worst, v->lo, now);
    return true;
}

/* A decision's look (at most every TW_BALANCE_NS): the cores, then the trials. */
static void plan_look(struct tw_global *g, uint64_t now)
{
    struct tw_shares v = read_shares(g);
    /* (At the start, decide once every worker has a share: one measured alone cannot be
     * compared. A worker that mostly sleeps may never get one: not waited for later.) */
    bool starting = now - g->bl.start_ns < 2 * TW_BALANCE_NS;
    if (v.unmeasured && !v.back && starting) return;
    if (plan_cores(g, &v, now)) return;
    /* (at the start, a look that changes nothing is no decision: the first shares come in
     * window by window, and a shared core seen at 10 ms had waited 40 ms for the next look) */
    if (!starting) g->bl.last_ns = now;
    if (g->bl.part != TW_PART_NONE) tw_share_plan(g, now);
    else if (!v.retired) plan_trial(g, now);
}

static void plan_auto(struct tw_global *g, uint64_t now)
{
    if (g->bl.starting) {
        plan_start(g, now);
        return;
    }
    if (tw_share_trying(g) && now - g->bl.part_t0 >= TW_PART_EARLY_NS) { /* (each round) */
        tw_share_plan(g, now);
        return;
    }
    if (now - g->bl.last_ns >= TW_BALANCE_NS) plan_look(g, now);
}

/* Called by the closer of a round before it publishes; true if moves were planned. */
bool tw_balance_plan(struct tw_thread *th)
{
    return tw_balance_plan_at(th->g, kr__clock_ns());
}

bool tw_balance_plan_at(struct tw_global *g, uint64_t now)
{
    if (g->cf.balance == KR_BALANCE_OFF || g->n < 2) return false;
    if (g->cf.balance == KR_BALANCE_STORM) plan_storm(g);
    else plan_auto(g, now);
    if (!g->bl.nmoves) return false;
    atomic_store_explicit(&g->mig_req, 1, memory_order_relaxed); /* (published with the epoch) */
    return true;
}

/* Its CPU share unknown yet, at full weight. */
static void balance_init(struct tw_thread *th)
{
    atomic_init(&th->bal.cpu_share, -1.0);
    atomic_init(&th->bal.rq_shared, 0);
    atomic_init(&th->bal.wants_back, 0);
    atomic_init(&th->bal.probe, -1.0);
    th->bal.weight = TW_WEIGHT_FULL;
}

/* Its report in a GVT round: its counters then (the thread-count trials compare them)
 * and its CPU share. */
static void balance_on_report(struct tw_thread *th)
{
    th->bal.rep_committed = th->cnt->committed;
    th->bal.rep_processed = th->cnt->processed;
    th->bal.rep_rolled = th->cnt->rolled_back;
    th->bal.rep_cuts = th->cnt->win.cuts;
    tw_balance_sample(th);
}

/* Moves planned with this horizon: every worker enters the migration. */
static void balance_on_gvt(struct tw_thread *th)
{
    if (atomic_load_explicit(&th->g->mig_req, memory_order_acquire)) tw_migrate(th);
}

static void balance_end(struct tw_thread *th)
{
    free(th->mg.ev);
}

const struct tw_module tw_mod_balance = {
    .name = "balance", .init = balance_init, .on_report = balance_on_report,
    .on_gvt = balance_on_gvt, .end = balance_end,
};
