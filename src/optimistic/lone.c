/* lone.c - the lone worker (issue 36, 2): a worker that owns every LP of the process, has
 * nothing uncommitted and hears from no rank (tw_thread.alone: one thread, or the others
 * retired by the balancer) fears no straggler. In a plain run (th->lone.ok) it runs its
 * events the sequential engine's way - no checkpoint, no history, each committed as it
 * ends, its sends straight into the heap - in bursts between the loop's turns, which keep
 * GVT, the balancer, snapshots and the stop going.
 *
 * Lone mode (th->lone.on) holds from tw_lone_update, which found every LP without history,
 * until the worker stops being alone, loses its safe events (stopping, a snapshot), meets
 * an event it cannot run safely, or an event fails; only bursts run events meanwhile, so
 * no LP gains history, and an event needs no per-LP test (the Time Warp line of the LP is
 * not touched: with many LPs a cache line an event).
 *
 * A burst's sends leave the event's tail unset (kr__ctx.notail: no child, sibling or
 * checkpoint is linked there, and the second line of a 128-byte slot is a write miss an
 * event); tw_lone_leave sets it in every pending event before anything else runs them. */
#include <setjmp.h>
#include "optimistic/tw.h"
#include "base/error.h"

/* A burst lasts about this long: cheap events run thousands between turns, a long one
 * alone; the turns keep GVT rounds and the balancer's decisions near their period. */
#define TW_LONE_BURST_NS (100u * 1000)
#define TW_LONE_FIRST 32
#define TW_LONE_MAX 4096

/* Sends go straight into the heap (nothing runs below a lone worker's events: it is
 * pending at once); output and commit records into the LP's buffer as on every path, with
 * a flag so the event's commit moves it without a test of every LP's buffer. */
static void lone_send(struct kr__ctx *c, struct kr__ev *e)
{
    struct tw_thread *th = c->eng;
    e->st = KR_EV_PENDING;
    kr__heap_push(&th->heap, e);
}

static void lone_emit(struct kr__ctx *c, const char *text, size_t len)
{
    ((struct tw_thread *)c->eng)->lone.out = true;
    tw_emit(c, text, len);
}

static void lone_record(struct kr__ctx *c, uint64_t tag, const void *data, size_t size)
{
    ((struct tw_thread *)c->eng)->lone.out = true;
    tw_record(c, tag, data, size);
}

static const struct kr__engine_ops lone_ops = { lone_send, lone_emit, tw_fail, NULL,
                                                lone_record };

static void lone_send_span(struct kr__ctx *c, struct kr__ev *e)
{
    if (!kr__span_refused(c, e)) lone_send(c, e);
}

/* (the windows scheme with spans: tw_ops_of) */
static const struct kr__engine_ops lone_ops_span = { lone_send_span, lone_emit, tw_fail, NULL,
                                                     lone_record };

void tw_alone_update(struct tw_thread *th)
{
    const struct tw_global *g = th->g;
    /* (LPs taken over with speculative history may still get a straggler from this
     * thread's own lower events until that history commits) */
    th->alone = !g->net.on && !g->cf.seam &&
                (g->n == 1 || (th->nlps == g->nlocal && !th->uncommitted));
}

/* Whether every LP has committed all it ran, and none holds a failure. */
static bool all_committed(struct kr__run *r)
{
    for (kr_lp id = 0; id < r->n; id++) {
        const struct tw_lp *tl = tw_lp_of(kr__lp_at(r, id));
        if (tl->first_unc || tl->fail) return false;
    }
    return true;
}

/* Entering lone mode: the committed history every LP still keeps goes (what a safe event
 * does first on the general path), and each LP's next speculative event will be a restore
 * point. False if an LP has uncommitted or failed events: not lone then. */
static bool lone_enter(struct tw_thread *th)
{
    struct kr__run *r = th->r;
    if (!all_committed(r)) return false;
    for (kr_lp id = 0; id < r->n; id++) {
        struct kr__lp *lp = kr__lp_at(r, id);
        struct tw_lp *tl = tw_lp_of(lp);
        if (tw_history_held(th, tl)) tw_drop_history(th, lp);
        tl->since_ckpt = TW_CKPT_NOW;
    }
    return true;
}

void tw_lone_update(struct tw_thread *th)
{
    if (!th->alone) tw_alone_update(th);
    bool on = th->alone && th->lone.ok && th->fast && !th->ts.nsusp;
    if (on && !th->lone.on) on = lone_enter(th);
    if (!th->lone.max) th->lone.max = TW_LONE_FIRST;
    if (on) th->lone.on = true;
    else tw_lone_leave(th);
}

/* The tail an event sent in a burst lacks: what schedule gives every other send (a plain
 * run's pending event keeps no children - no lazy cancellation - and no checkpoint). */
static void lone_tail(struct kr__ev *e, kr_time lookahead)
{
    if (!kr__ev_has_tail(e) || (e->flags & KR_EVF_SPAN)) return; /* (a span's is set) */
    e->child = e->sib = NULL;
    e->ckpt = NULL;
    e->dur = lookahead;
}

void tw_lone_leave(struct tw_thread *th)
{
    if (!th->lone.on) return;
    th->lone.on = false;
    kr_time la = th->r->lookahead;
    for (size_t i = 0; i < th->heap.n; i++) {
        struct kr__ev *e = kr__heap_ev(&th->heap, i);
        if (e->st == KR_EV_PENDING) lone_tail(e, la);
    }
}

/* One event, run and committed; `timed`: its run is the burst's cost sample. */
static inline __attribute__((always_inline)) void
lone_event(struct tw_thread *th, struct kr__run *r, struct kr__ev *e, const bool timed)
{
    kr__lp_prefetch_state(r, e->dest);
    kr__heap_pop(&th->heap);
    kr__heap_prefetch_next(&th->heap, r->lp_mem + KR_LP_HOT, r->lp_bytes, 1);
    struct kr__lp *lp = kr__lp_at(r, e->dest);
    th->last_ts = e->k.ts;
    /* (e->child is not cleared: a lone send links no child, and e is freed at its commit -
     * the field lies on the event's second line, a write miss an event; lone_failed clears
     * it for the one event that lives on) */
    e->flags &= KR_EVF_SPAN; /* (kept while it runs: kr__span_refused) */
    kr__ctx_event(lp, e, KR_MODE_EVENT);
    uint64_t t0 = timed ? kr__clock_ns() : 0;
    th->err.armed = true;
    kr__watch_begin(&th->watch, e);
    kr__run_event_untraced(r, lp, e);
    kr__watch_end(&th->watch);
    th->err.armed = false;
    if (timed) tw_event_timed(th, kr__clock_ns() - t0);
    th->lone.n++;
    kr__lp_commit_event(lp, e);
    if (__builtin_expect(th->lone.out, 0)) {
        th->lone.out = false;
        tw_output_through(th, lp, e);
    }
    kr__pool_put(th->pool, e);
}

static inline bool lone_next(struct tw_thread *th, struct kr__ev *e, kr_time end)
{
    return e && e->k.ts < end && e->st == KR_EV_PENDING && tw_below_safe(th, e);
}

/* The burst's loop, in a function of its own: in one that calls setjmp the compiler keeps
 * the inlined heap sift's values in memory (a fifth slower, measured). */
static __attribute__((noinline)) void lone_run(struct tw_thread *th, kr_time end, unsigned max)
{
    struct kr__run *r = th->r;
    struct kr__ev *e = tw_top(th);
    if (!lone_next(th, e, end)) return;
    lone_event(th, r, e, true);
    /* (below both the end and the safe time, a pending top runs: one test of its time and
     * one of its state; anything else - a cancelled top, the quiet bound - the full test) */
    const kr_time lim = end < th->clk.safe ? end : th->clk.safe;
    for (unsigned k = 1; k < max; k++) {
        e = kr__heap_top(&th->heap);
        if (__builtin_expect(!e || !(e->k.ts < lim) || e->st != KR_EV_PENDING, 0) &&
            !lone_next(th, e = tw_top(th), end))
            break;
        lone_event(th, r, e, false);
    }
}

/* After a burst of n events that took dt ns: the next one's length. */
static void lone_pace(struct tw_thread *th, uint64_t n, uint64_t dt)
{
    if (n == th->lone.max && dt < TW_LONE_BURST_NS / 2 && th->lone.max < TW_LONE_MAX)
        th->lone.max *= 2;
    else if (dt > 2 * TW_LONE_BURST_NS && th->lone.max > 1)
        th->lone.max /= 2;
}

static void lone_close(struct tw_thread *th)
{
    kr__ctx.mode = KR_MODE_NONE;
    kr__ctx.ops = tw_ops_of(th->g);
    kr__ctx.notail = false;
    if (th->last_ts > th->fast_hi) th->fast_hi = th->last_ts;
    th->cnt->processed += th->lone.n;
    th->cnt->committed += th->lone.n;
    th->cnt->safe += th->lone.n;
    th->cnt->lone += th->lone.n;
}

/* A model error unwound to the burst: the context's event is kept failed, as the general
 * path keeps it (committed, or undone, in key order at GVT), and lone mode ends. */
static void lone_failed(struct tw_thread *th)
{
    struct kr__ev *e = (struct kr__ev *)kr__ctx.ev;
    struct kr__lp *lp = kr__ctx.lp;
    e->child = NULL; /* (it sent no child the general path knows of) */
    e->ckpt = NULL;  /* (nor has a checkpoint: its tail may be unset) */
    tw_keep_error(th, lp, e);
    kr__watch_end(&th->watch);
    th->err.armed = false;
    th->lone.out = false;
    lone_close(th);
    tw_lone_leave(th);
    tw_finish_event(th, lp, e);
}

/* Run the worker's next events, from its top, in lone mode. One setjmp a burst, not one
 * an event. Returns the events run. */
uint64_t tw_lone_burst(struct tw_thread *th, kr_time end)
{
    jmp_buf jb;
    th->lone.n = 0;
    kr__ctx.ops = th->g->cf.spans ? &lone_ops_span : &lone_ops;
    kr__ctx.notail = true;
    th->err.cur = &jb;
    uint64_t t0 = kr__clock_ns();
    if (_setjmp(jb)) {
        lone_failed(th);
        return 1;
    }
    lone_run(th, end, th->lone.max);
    uint64_t n = th->lone.n;
    th->lone.t = kr__clock_ns();
    lone_pace(th, n, th->lone.t - t0);
    lone_close(th);
    return n;
}
