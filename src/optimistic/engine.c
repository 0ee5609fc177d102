/* engine.c - the optimistic engine's worker loop: take in messages, take part in GVT, run
 * the lowest-timestamp pending event of the thread's LPs, deliver its sends. */
#define _GNU_SOURCE
#include "base/sanitize.h"
#include <stdlib.h>
#include <unistd.h>
#include "optimistic/worker.h"
#include "optimistic/clock.h"
#include "optimistic/query.h"
#include "optimistic/preempt.h"
#include "optimistic/balance.h"
#include "optimistic/ranks.h"
#include "base/grow.h"
#include "base/error.h"

/* May thread th run e now? Within its window (optimism.c), or e lies below the safe time
 * (no rollback can reach it: it holds memory only until the next commit), or e is at GVT:
 * the thread holding the lowest pending event must always proceed, or a thread whose
 * uncommitted events all lie above GVT would wait for a GVT only it can advance. */
static inline bool tw_may_run(struct tw_thread *th, const struct kr__ev *e)
{
    if (__builtin_expect(th->queries, 0)) {
        if (e->xflags & KR_EVX_QUERY) return tw_query_ready(th, e);
        if (e->k.ts > th->q.wait) return false; /* (query.c: let the asker be the least) */
    }
    if (th->uncommitted < th->win.limit) return true;
    return (th->fast && tw_below_safe(th, e)) || e->k.ts <= tw_gvt(th->g);
}

void tw_work_push(struct tw_thread *th, struct kr__ev *e, int anti)
{
    if (th->loc.wn == th->loc.wcap)
        KR_GROW(th->loc.work, th->loc.wcap, th->loc.wn + 1, 256, "local delivery queue");
    th->loc.work[th->loc.wn].e = e;
    th->loc.work[th->loc.wn].anti = anti;
    th->loc.wn++;
}

void tw_mark_dirty(struct tw_thread *th, struct kr__lp *lp, kr_lp id)
{
    struct tw_lp *tl = tw_lp_of(lp);
    if (tl->dirty) return;
    tl->dirty = true;
    if (th->cm.ndirty == th->cm.capdirty)
        KR_GROW(th->cm.dirty, th->cm.capdirty, th->cm.ndirty + 1, 256, "commit list");
    th->cm.dirty[th->cm.ndirty++] = id;
}

void tw_mark_dirty_again(struct tw_thread *th, kr_lp id)
{
    struct kr__lp *lp = kr__lp_at(th->r, id);
    struct tw_lp *tl = tw_lp_of(lp);
    tl->dirty = false;
    tw_mark_dirty(th, lp, id);
}

/* k comes before the LP's last processed event (bundles: or at its key, a late member). */
static inline bool tw_before_tail(const struct tw_thread *th, const struct tw_lp *tl,
                                  const struct kr__key *k)
{
    return kr__key_lt(k, &tl->tail->k) || (th->bundles && !kr__key_cmp(k, &tl->tail->k));
}

/* e (its key floored to k) comes before what lp has run: its last processed event, or the
 * event suspended on its stack. */
static inline bool tw_straggler(const struct tw_thread *th, const struct kr__lp *lp,
                                const struct tw_lp *tl, const struct kr__key *k,
                                const struct kr__ev *e)
{
    if (tl->tail && tw_before_tail(th, tl, k)) return true;
    return tw_suspended_on(th, lp) && kr__key_lt(&e->k, &((struct kr__ev *)lp->ult->ev)->k);
}

/* A positive event reaches its owner: a straggler rolls the LP back first. A thread alone
 * never gets one (it runs its events in key order, and each sends only later ones): it
 * skips the look at the LP's local time, a cache miss per event with many LPs. */
void tw_deliver(struct tw_thread *th, struct kr__ev *e)
{
    if (!th->alone && e->k.ts <= th->g->lvt[tw_lidx(th->g, e->dest)]) {
        struct kr__lp *lp = kr__lp_at(th->r, e->dest);
        struct tw_lp *tl = tw_lp_of(lp);
        /* (bundles: a late member is a straggler to its whole bundle, whose start key a
         * member may have: msg/event.h) */
        struct kr__key k = tw_key_floor(th, &e->k);
        if (tw_straggler(th, lp, tl, &k, e)) tw_rollback(th, lp, &k, true);
    }
    e->st = KR_EV_PENDING;
    kr__heap_push(&th->heap, e);
}

/* Run queued same-thread deliveries in order; they may queue more (rollbacks). */
void tw_flush_local(struct tw_thread *th)
{
    for (size_t i = 0; i < th->loc.wn; i++) {
        struct tw_item it = th->loc.work[i];
        if (it.anti == 1) tw_cancel(th, it.e);
        else if (it.anti) tw_rank_take(th, it.e); /* (from another rank: ranks.c) */
        else tw_deliver(th, it.e);
    }
    th->loc.wn = 0;
}

/* A send to a worker of this process (owner), kept as parent's child for cancellation. */
static inline void tw_send_here(struct tw_thread *th, unsigned owner, struct kr__ev *e,
                                struct kr__ev *parent)
{
    if (parent) tw_child_link(parent, e);
    if (owner == th->id) {
        tw_work_push(th, e, 0);
        return;
    }
    th->cnt->remote_sent++;
    tw_transport_send(th, owner, e);
}

/* Write this thread's quiet record (tw.h) with its lowest pending key - unless it sent
 * since the last one: it would likely send again soon, voiding the record at once, a write
 * each other thread's next read of the line pays for. */
static void tw_send(struct kr__ctx *c, struct kr__ev *e)
{
    struct tw_thread *th = c->eng;
    struct tw_global *g = th->g;
    if (__builtin_expect(th->lazy != NULL, 0) && tw_lazy_keep(th, c->ev, e)) return;
    /* (alone: not even the owner table, a random read per send with many LPs) */
    unsigned owner = th->alone ? th->id : tw_owner(g, e->dest);
    /* (children are kept for cancellation: init's and a safe event's are never undone) */
    struct kr__ev *parent = th->in_safe ? NULL : c->ev;
    if (__builtin_expect(tw_remote(g, owner), 0)) {
        tw_rank_send(th, e, owner, parent);
        return;
    }
    tw_send_here(th, owner, e, parent);
}

const struct kr__engine_ops tw_ops = { tw_send, tw_emit, tw_fail, tw_query,
                                              tw_record };

static void tw_send_span(struct kr__ctx *c, struct kr__ev *e)
{
    if (!kr__span_refused(c, e)) tw_send(c, e);
}

/* (the windows scheme with spans: its clocks count on them, clock.c) */
const struct kr__engine_ops tw_ops_span = { tw_send_span, tw_emit, tw_fail, tw_query,
                                            tw_record };

/* The bundle record e runs with: coasting's, an asker's in query mode (kept apart:
 * query.c), or the worker's. */
static inline struct kr__bundle *tw_bundle_for(struct tw_thread *th, const struct kr__ev *e,
                                               int mode)
{
    if (mode == KR_MODE_COAST) return &th->cbund;
    return e == th->q.ev ? &th->q.bund : &th->bund;
}

/* Run one event of lp (or re-run it silently when coasting). */
static void tw_execute(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e, int mode)
{
    kr__ctx_event(lp, e, mode);
    if (th->bundles) kr__bundle_enter(tw_bundle_for(th, e, mode));
    th->err.cur = &th->err.jmp;
    th->err.armed = true;
    kr__watch_begin(&th->watch, e);
    if (_setjmp(th->err.jmp) == 0) {
        kr__run_event(th->r, lp, e);
        if (mode == KR_MODE_EVENT && kr__run_done(th->r, lp, e->dest))
            e->flags |= KR_EVF_DONE_AFTER;
    } else if (!th->q.abort) { /* (an aborted run is undone: query.c) */
        tw_keep_error(th, lp, e);
    }
    kr__watch_end(&th->watch);
    th->err.armed = false;
    kr__ctx.mode = KR_MODE_NONE;
}

void tw_coast(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *from)
{
    for (struct kr__ev *x = from, *n; x; x = n) {
        n = th->bundles ? tw_bundle_listed(th, x) : x->next;
        tw_execute(th, lp, x, KR_MODE_COAST);
        th->cnt->coasted += th->bundles ? th->cbund.n : 1;
    }
}

/* Run e on the worker's stack, timing one event in TW_EVENT_SAMPLE (and per type, under
 * adaptive time-sharing). */
void tw_run_sampled(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    bool stat = (th->cnt->processed & (TW_EVENT_SAMPLE - 1)) == 0;
    bool type = tw_ts_sample_type(th, e->type);
    if (!stat && !type) {
        tw_execute(th, lp, e, KR_MODE_EVENT);
        return;
    }
    uint64_t t0 = kr__clock_ns();
    tw_execute(th, lp, e, KR_MODE_EVENT);
    uint64_t dt = kr__clock_ns() - t0;
    if (stat) tw_event_timed(th, dt);
    if (type) tw_ts_sampled(th, e->type, dt); /* long enough for stacks now? */
}

/* A safe event that ran to its end commits at once: its output (printed with it), the
 * digest and the counts. */
static inline void tw_safe_commit(struct tw_thread *th, struct kr__lp *lp,
                                  const struct kr__ev *e, size_t nout)
{
    if (kr__lp_out_n(lp) != nout) tw_output_through(th, lp, e);
    kr__lp_commit_event(lp, e);
    th->cnt->processed++;
    th->cnt->committed++;
    th->cnt->safe++;
}

/* A safe event that failed: onto the processed list (tw_process_safe). */
static void safe_failed(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    if (th->bundles) tw_bundle_processed(th, lp, &th->bund);
    else tw_processed(th, lp, e);
    tw_flush_local(th);
}

/* A committed safe event's part in bundles (the rest of its bundle) and ranks (its copies
 * sent to other ranks, which need no anti-message). */
static inline void tw_safe_features(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    if (th->bundles) tw_bundle_commit_rest(th, lp);
    if (e->flags & KR_EVF_RKIDS) tw_rank_forget(th, e);
}

/* A safe event (tw.h): no checkpoint, committed at once and freed while hot. One that
 * failed joins the processed list instead, to commit (and be reported) in key order with
 * the rest at GVT; it cannot be rolled back either way. */
static inline __attribute__((always_inline)) void
tw_process_safe(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e, bool plain)
{
    struct tw_lp *tl = tw_lp_of(lp);
    if (tw_history_held(th, tl)) tw_drop_history(th, lp);
    tl->since_ckpt = TW_CKPT_NOW; /* the next unsafe event is the first restore point */
    if (e->k.ts > th->fast_hi) th->fast_hi = e->k.ts; /* (the latest: tw_memory_floor) */
    e->child = NULL;
    e->flags &= KR_EVF_SPAN; /* (kept while it runs: kr__span_refused) */
    size_t nout = kr__lp_out_n(lp);
    th->in_safe = true;
    tw_run_sampled(th, lp, e);
    th->in_safe = false;
    if (e->flags & KR_EVF_ERROR) {
        safe_failed(th, lp, e);
        return;
    }
    tw_safe_commit(th, lp, e, nout);
    if (!plain) tw_safe_features(th, lp, e);
    e->child = NULL;
    if (th->g->cf.open_pages) tw_keep_open(th, lp, e->dest); /* (the arena's line: not else) */
    kr__pool_put(th->pool, e);
    tw_flush_local(th);
}

/* (A safe event runs on the worker's stack even where time-sharing would give it one: no
 * earlier work can arrive for it, which is what preemption waits for.) */
static inline bool tw_is_safe(const struct tw_thread *th, const struct kr__lp *lp,
                              const struct kr__ev *e, bool plain)
{
    const struct tw_lp *tl = tw_lp_of(lp);
    return th->fast && tw_below_safe(th, e) && !tl->first_unc && !tw_suspended_on(th, lp) &&
           (plain || !th->queries); /* (an event that asks is undone once: query.c) */
}

/* An LP frozen after a failed speculative event (until rolled back) parks e: true then. */
static inline bool tw_parked(struct tw_lp *tl, struct kr__ev *e)
{
    if (!tw_poisoned(tl)) return false;
    e->st = KR_EV_PARKED;
    struct tw_fail *f = tl->fail;
    e->next = f->parked;
    f->parked = e;
    return true;
}

/* Before e runs: the sends of its undone run, kept by lazy cancellation; and an event
 * that asks queries runs apart (query.c): true then, it has run.
 * Another event of lp may be preempted: then e has its key (a lower one would have rolled
 * it back on arrival, a higher one waits behind it), a stale event and the namesake sent
 * after its sender rolled back, which lazy cancellation lets meet. An LP runs one event at
 * a time: the preempted one is abandoned and starts afresh after e. */
static bool tw_start_rare(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    if (tw_suspended_on(th, lp)) tw_rollback(th, lp, &e->k, true);
    bool query = tw_query_mode(th, e);
    if (e->xflags & KR_EVX_LAZY) tw_lazy_start(th, e);
    if (query && th->bundles) tw_query_gather(th, e);
    if (query) tw_process_query(th, lp, e);
    return query;
}

/* (one test per event for all of that: the common event has none of it) */
static inline bool tw_start(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e,
                            bool plain)
{
    if (__builtin_expect(th->ts.nsusp | e->xflags | (!plain && th->queries), 0))
        return tw_start_rare(th, lp, e);
    return false;
}

/* What lets e be undone: its reverse handler's record, or every K events a checkpoint. */
static inline __attribute__((always_inline)) void
tw_restore_point(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    struct tw_lp *tl = tw_lp_of(lp);
    if (__builtin_expect(th->g->cf.reverse, 0)) tw_rev_record(th, lp, e);
    else if (tl->since_ckpt >= th->ck.interval) tw_take_ckpt(th, lp, e);
    tl->since_ckpt++;
}

/* An unsafe event that ran, off the plain path: undone if it asked a query on speculation
 * (false then: nothing more to do), else processed with its bundle and kept sends. */
static inline bool tw_ran_any(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    if (__builtin_expect(th->q.abort, 0)) {
        tw_query_undo(th, lp, e, th->bundles ? &th->bund : NULL);
        return false;
    }
    if (th->bundles) tw_bundle_processed(th, lp, &th->bund);
    if (th->lazy) tw_lazy_end(th);
    if (!th->bundles) tw_processed(th, lp, e);
    return true;
}

/* An event that may be rolled back: checkpointed every K, joins the processed list. */
static inline __attribute__((always_inline)) void
tw_process_unsafe(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e, bool plain)
{
    e->flags &= KR_EVF_SPAN; /* (before the checkpoint: KR_EVF_CKPT; the span is kept) */
    tw_restore_point(th, lp, e);
    e->child = NULL;
    if (tw_ts_on_stack(th, e->type)) { /* on its own stack: may be preempted (preempt.c) */
        if (!plain && th->lazy) tw_lazy_end(th); /* (it runs others while it waits) */
        tw_ts_start(th, lp, e);
        return;
    }
    tw_run_sampled(th, lp, e);
    kr__ctx.rev_area = NULL;
    if (plain) tw_processed(th, lp, e);
    else if (!tw_ran_any(th, lp, e)) return;
    tw_flush_local(th);
}

/* --check: no event runs below GVT. */
static void check_above_gvt(const struct tw_thread *th, const struct kr__ev *e)
{
    if (e->k.ts < tw_gvt(th->g))
        kr__internal_error("thread %u runs an event at time %.17g below GVT %.17g (LP %llu)",
                           th->id, e->k.ts, tw_gvt(th->g), (unsigned long long)e->dest);
}

/* plain (th->plain): none of bundles, queries, lazy cancellation and ranks, whose tests
 * the compiler then drops from this path (tw_process) - each a load and a branch per
 * event, together ~2% of PHOLD-std's instructions on one thread. */
static inline __attribute__((always_inline)) void
tw_process_as(struct tw_thread *th, struct kr__ev *e, bool plain)
{
    struct kr__lp *lp = kr__lp_at(th->r, e->dest);
    if (tw_parked(tw_lp_of(lp), e)) return;
    if (th->g->cf.check) check_above_gvt(th, e);
    th->last_ts = e->k.ts;
    if (tw_start(th, lp, e, plain)) return;
    if (!plain && th->bundles) tw_gather(th, e);
    if (!tw_is_safe(th, lp, e, plain)) {
        tw_process_unsafe(th, lp, e, plain);
        return;
    }
    tw_process_safe(th, lp, e, plain);
    if (!plain && th->lazy) tw_lazy_end(th);
}

static void tw_process_plain(struct tw_thread *th, struct kr__ev *e)
{
    tw_process_as(th, e, true);
}

static void tw_process_any(struct tw_thread *th, struct kr__ev *e)
{
    tw_process_as(th, e, false);
}

static inline void tw_process(struct tw_thread *th, struct kr__ev *e)
{
    if (th->plain) tw_process_plain(th, e);
    else tw_process_any(th, e);
}

/* e has run to its end: it joins lp's processed list. */
void tw_finish_event(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    tw_processed(th, lp, e);
    tw_flush_local(th);
}

void tw_processed(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    struct tw_lp *tl = tw_lp_of(lp);
    if (e->flags & KR_EVF_ERROR) tl->fail->poison = e; /* (done() ran with the event) */
    e->st = KR_EV_PROCESSED;
    e->next = NULL;
    e->prev = tl->tail;
    if (tl->tail) tl->tail->next = e;
    else tl->head = e;
    tl->tail = e;
    tw_set_lvt(th, lp);
    if (!tl->first_unc) {
        tl->first_unc = e;
        tw_mark_dirty(th, lp, e->dest);
    }
    th->cnt->processed++;
    th->uncommitted++;
    if (__builtin_expect(th->mem.share != 0, 0) && (th->uncommitted & 255) == 0)
        tw_memory_quick(th);
}

/* tw_top's rare part: drop the cancelled events at the top. */
__attribute__((noinline)) struct kr__ev *tw_top_drop(struct tw_thread *th)
{
    struct kr__ev *e;
    while ((e = kr__heap_top(&th->heap)) && e->st == KR_EV_CANCELLED) {
        kr__heap_pop(&th->heap);
        kr__pool_put(th->pool, e);
    }
    return e;
}

/* Run on while the next events lie below the safe time: nothing that arrives meanwhile can
 * reach them, so arrivals, GVT and the stop flag can wait TW_SAFE_BURST events (the loop's
 * turn around them cost queueing a tenth of its 0.3 us events). */
#define TW_SAFE_BURST 32

/* Latency hiding for many LPs: the next event's LP (its hot line and the Time Warp line
 * after it) and the two candidates for the event after it. */
static inline void tw_prefetch_next(const struct tw_thread *th)
{
    kr__heap_prefetch_next(&th->heap, th->r->lp_mem + KR_LP_HOT, th->r->lp_bytes, 2);
}

/* The thread's top event if it is pending, safe and below end. (A safe event may always
 * run, tw_may_run says - unless queries hold it back.) */
static inline struct kr__ev *tw_safe_top(struct tw_thread *th, kr_time end)
{
    struct kr__ev *e = tw_top(th);
    bool ok = e && tw_below_safe(th, e) && e->k.ts < end && e->st == KR_EV_PENDING &&
              (!th->queries || tw_may_run(th, e));
    return ok ? e : NULL;
}

static void tw_safe_burst(struct tw_thread *th, kr_time end)
{
    struct kr__ev *e;
    for (unsigned k = 0; k < TW_SAFE_BURST && (e = tw_safe_top(th, end)); k++) {
        kr__lp_prefetch_state(th->r, e->dest);
        kr__heap_pop(&th->heap);
        tw_prefetch_next(th);
        tw_process(th, e);
    }
}

/* The other ranks' part of a turn: their messages in and out, and a round started when
 * another rank is in a later one. */
static void tw_platform_ranks(struct tw_thread *th)
{
    tw_rank_turn(th, false);
    if (th->rk.nudge) tw_gvt_maybe_start(th, true);
}

/* Before running anything: messages in, GVT, the stop. False once the run stops. */
static bool tw_platform_turn(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    if (tw_bounds(th)) tw_safe_read(th);
    if (g->net.on) tw_platform_ranks(th);
    tw_drain(th);
    if (g->cf.queries) tw_query_serve(th);
    tw_gvt_poll(th);
    if (atomic_load_explicit(&g->stop, memory_order_acquire)) {
        tw_gvt_poll(th);
        return false;
    }
    if (th->fast && tw_safe_off(g)) tw_safe_stop(th);
    return true;
}

/* Whether the top event e may run now without waiting: safe, and not an asker whose
 * answer is not ready. */
static inline bool tw_top_ready(struct tw_thread *th, const struct kr__ev *e)
{
    return tw_below_safe(th, e) && (!(e->xflags & KR_EVX_QUERY) || tw_query_ready(th, e));
}

/* The thread's lowest pending event, the clock and quiet record published with it, and a
 * try to make it safe when it is not. */
static struct kr__ev *tw_turn_top(struct tw_thread *th)
{
    struct kr__ev *e = tw_top(th);
    if (tw_bounds(th)) {
        tw_clock_publish(th, e, false);
        if (e && !tw_top_ready(th, e)) tw_quiet_try(th);
    }
    if (th->g->cf.queries) tw_query_wait(th, e);
    return e;
}

/* Whether e may run while asker waits: pending below end, not of the asker's LP, not of a
 * type that has asked. */
static bool aside_ok(struct tw_thread *th, const struct kr__ev *e, const struct kr__ev *asker,
                     kr_time end)
{
    return e->k.ts < end && e->st == KR_EV_PENDING && e->dest != asker->dest &&
           !(th->q.types >> (e->type & 63) & 1) && tw_may_run(th, e);
}

/* The event in query mode (popped: asker) waits on its stack for an answer from another
 * thread: meanwhile the thread runs its next event, speculatively like any other, unless
 * that is the asker's LP's (one event at a time) or of a type that has asked (it would
 * be undone when it asks: query.c). True if it ran one; the asker is back in the heap,
 * its least, which the clocks and quiet records show. */
static bool tw_query_aside(struct tw_thread *th, struct kr__ev *asker, kr_time end)
{ /* (false: the asker, still popped, is resumed) */
    if (atomic_load_explicit(&th->q.rq->status, memory_order_acquire) != TW_Q_WAIT) return false;
    struct kr__ev *e = tw_top(th);
    if (!e || !aside_ok(th, e, asker, end)) return false;
    kr__heap_pop(&th->heap);
    kr__heap_push(&th->heap, asker);
    th->cnt->q.aside++;
    tw_process(th, e);
    return true;
}

/* A lone worker's turn (lone.c): true if it ran a burst; an event it cannot run that way
 * ends lone mode. */
static inline bool tw_lone_turn(struct tw_thread *th, const struct kr__ev *e, kr_time end)
{
    if (e->st == KR_EV_PENDING && tw_below_safe(th, e) && tw_lone_burst(th, end)) {
        tw_post_turn(th);
        return true;
    }
    tw_lone_leave(th);
    return false;
}

/* The top event e (popped) is suspended on its stack: resumed, unless it waits for an
 * answer and another event runs aside meanwhile. */
static void tw_resume_top(struct tw_thread *th, struct kr__ev *e, kr_time end)
{
    if (!th->q.rq || !tw_query_aside(th, e, end)) tw_ts_resume(th, e);
}

/* A turn that runs e, the thread's lowest pending event. */
static inline void tw_run_top(struct tw_thread *th, struct kr__ev *e, kr_time end)
{
    if (th->lone.on && tw_lone_turn(th, e, end)) return;
    kr__lp_prefetch_state(th->r, e->dest);
    kr__heap_pop(&th->heap);
    tw_prefetch_next(th);
    if (e->st == KR_EV_SUSPENDED) tw_resume_top(th, e, end);
    else tw_process(th, e);
    if (th->fast) tw_safe_burst(th, end);
    tw_post_turn(th);
}

/* How far events may run: the end, or before the next snapshot's time until that is taken
 * (its round rewrites sn.at, every worker inside). Lone bursts and safe events outran the
 * rounds that take one, and a short run ended with none. */
static inline kr_time tw_run_bound(const struct tw_global *g, kr_time stop)
{
    return g->sn.at < stop ? g->sn.at : stop;
}

/* What a round would do for a thread whose top e (if any) is not below `end`, or is held
 * back (below). */
static enum tw_round_use tw_round_use(const struct tw_thread *th, const struct kr__ev *e,
                                      bool below)
{
    if (below) return TW_ROUND_NONE;
    return e && e->k.ts < th->r->cfg->end ? TW_ROUND_SNAP : TW_ROUND_END;
}

/* A turn with nothing to run below `end` (e: the top, if any). */
static void tw_wait_turn(struct tw_thread *th, const struct kr__ev *e, kr_time end,
                         unsigned *spins, bool over)
{
    bool below = e && e->k.ts < end;
    th->cnt->win.throttled += below;
    if (tw_bounds(th)) tw_clock_publish(th, e, true);
    tw_idle(th, spins, over, tw_round_use(th, e, below), below);
}

/* Whether the workers outnumber the cores (the other ranks' workers on this machine count
 * too). */
static bool tw_oversubscribed(const struct tw_thread *th)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned lr, ls;
    kr__local_ranks(&lr, &ls);
    return ncpu > 0 && ls * th->g->n > (unsigned)ncpu;
}

/* Housekeeping is due after pace.every turns (lone bursts are long, and their length
 * changes: by their clock). */
static inline bool tw_housekeeping_due(const struct tw_thread *th, unsigned turns)
{
    return turns >= th->pace.every ||
           (th->lone.on && th->lone.t - th->pace.turns_t0 >= TW_EVERY_NS);
}

void *tw_worker(void *arg)
{
    struct tw_thread *th = arg;
    bool over = tw_oversubscribed(th);
    th->pace.over = over;
    /* (without a lookahead the clocks stand still; sharing cores, a write per turn is a
     * line handed between threads that take turns on one core) */
    th->clk.eager = th->g->cf.lookahead > 0 && !over;
    tw_worker_start(th);
    const kr_time stop = th->r->cfg->end;
    unsigned spins = 0, turns = 0;
    for (;;) {
        if (th->retired) {
            if (!tw_retired_turn(th)) break;
            continue;
        }
        if (!tw_platform_turn(th)) break;
        struct kr__ev *e = tw_turn_top(th);
        const kr_time end = tw_run_bound(th->g, stop);
        if (e && e->k.ts < end && tw_may_run(th, e)) {
            tw_run_top(th, e, end);
            spins = 0;
            if (tw_housekeeping_due(th, ++turns)) {
                tw_housekeeping(th, over, turns);
                turns = 0;
            }
        } else {
            tw_wait_turn(th, e, end, &spins, over);
        }
    }
    tw_worker_end(th);
    return NULL;
}

/* Test seam (tests/unit/test_tw.c): the engine's threads stepped by hand from the calling
 * thread, so that a test chooses how they interleave. tw_test_step runs one event with
 * nothing of the worker loop around it (no GVT); tw_test_turn is one whole turn of the loop
 * (arrivals, GVT, one event), with a turn that finds nothing to run publishing its channels
 * as an idle worker does, but never sleeping. */
struct tw_global *tw_test_start(struct kr__run *r, unsigned chan_slots)
{
    struct tw_global *g = tw_global_new(r);
    if (chan_slots) g->cf.chan_slots = chan_slots;
    tw_setup_threads(r, g);
    tw_init_lps(r, g);
    g->end.fast_threads = g->th[0].fast ? g->n : 0;
    tw_clock_start(g);
    atomic_store(&g->end.running, g->n);
    for (unsigned t = 1; t < g->n; t++) g->th[t].bal.sched_fd = -1;
    g->cf.seam = true; /* (a test sends stragglers from outside: never alone) */
    g->th[0].alone = false;
    tw_worker_start(&g->th[0]);
    return g;
}

void tw_test_use(struct tw_thread *th)
{
    kr__ctx.pool = th->pool;
    kr__ctx.eng = th;
}

struct kr__ev *tw_test_step(struct tw_thread *th)
{
    struct kr__ev *e = tw_top(th);
    if (!e || e->k.ts >= th->r->cfg->end || !tw_may_run(th, e)) return NULL;
    tw_run_top(th, e, th->r->cfg->end);
    return e;
}

/* A stepped turn with nothing to run: as tw_idle, without its spinning and sleeping. */
static void test_idle(struct tw_thread *th, const struct kr__ev *e)
{
    bool below = e && e->k.ts < th->r->cfg->end;
    th->cnt->win.throttled += below;
    if (th->fast) tw_clock_publish(th, e, true);
    if (th->out.n) tw_post_publish(th);
    tw_idle_round(th, tw_round_use(th, e, below));
}

bool tw_test_turn(struct tw_thread *th)
{
    tw_test_use(th);
    if (!tw_platform_turn(th)) return false;
    struct kr__ev *e = tw_turn_top(th);
    if (e && e->k.ts < th->r->cfg->end && tw_may_run(th, e)) {
        tw_run_top(th, e, th->r->cfg->end);
        if ((th->cnt->processed & 255) == 0) tw_housekeeping(th, false, 256);
    } else {
        test_idle(th, e);
    }
    return true;
}

/* The end of every thread's run (the loop's epilogue; the others are stepped by this
 * thread, so none waits for them), then the engine's. */
void tw_test_end(struct kr__run *r, struct tw_global *g)
{
    atomic_store(&g->end.left, g->n - 1);
    for (unsigned t = 0; t < g->n; t++) {
        tw_test_use(&g->th[t]);
        tw_thread_epilogue(&g->th[t]);
    }
    tw_ts_thread_end(&g->th[0]); /* (tw_worker_start's ticks and stacks: a tick left armed */
    kr__fault_thread_fini();      /* kills the test once its handler is gone) */
    tw_print_committed(g, g->end.err == NULL);
    tw_global_end(r, g);
}
