/* optimism.c - adaptive optimism: how many speculative events a thread may hold uncommitted (its
 * window), judged by what rollbacks waste against what speculation gains.
 *
 * Both are measured per thread in time: the gain is the speculative events that committed times
 * the mean event time, the waste is the time restoring state plus the events rolled back or
 * coasted again times the mean event time. Checkpoints are not counted: they are the price of
 * running ahead at all, and without them a thread would only wait (pcs, 79 KiB states, 2 threads:
 * checkpoints cost several times the events, rollbacks almost nothing, and cutting speculation
 * halved the rate). A thread whose rollbacks wasted more than four times what its speculation
 * gained, in two periods in a row, stops speculating: with safe events on it runs only those (and
 * the event at GVT), which need no checkpoint; otherwise it keeps a small window. After a rest
 * (doubling on every failed try) it probes with a small window and doubles it while speculation
 * gains at least twice what it wastes. Measured: PHOLD with 1 MiB of state per LP, 64 LPs, 2
 * threads, --state full: each restore takes ~110 us against 0.17 us events; with the fixed bound
 * of 8192 it ran at 0.11-0.6 M/s, with the window 1.0-1.2 M/s (and page mode 0.0075 -> 0.035 M/s).
 *
 * Memory: a thread also stops speculating while the checkpoints it holds exceed its share of a
 * quarter of the machine's memory (speculation never pays for swapping); the window, not a hard
 * stop, so that checkpoints no rollback needs any more still get freed by commits. */
#include <math.h>
#include <stdlib.h>
#include <unistd.h>
#include "optimistic/tw.h"
#include "optimistic/ranks.h"
#include "base/grow.h"
#include "state/arena.h"

#define TW_WINDOW_NS (20u * 1000 * 1000)    /* a decision at most this often... */
#define TW_WINDOW_EVENTS 64                 /* ...and on at least this many events */
#define TW_WINDOW_LOSS 4                    /* cut when rollbacks waste this many times what
                                             * speculation gains (datastore and pcs on 2
                                             * threads waste up to 1.5x in some periods and
                                             * gain from speculating all the same) */
#define TW_WINDOW_FLOOR 64                  /* without safe events: the least window */
#define TW_WINDOW_PROBE 256                 /* the window a probe starts with */
#define TW_WINDOW_REST_NS (40ull * 1000 * 1000)   /* first rest; doubles on each failed try */
#define TW_WINDOW_REST_MAX_NS (1280ull * 1000 * 1000)

static void snapshot(struct tw_window *w, const struct kr__counters *c, uint64_t now)
{
    w->t0 = now;
    w->committed = c->committed;
    w->safe = c->safe;
    w->restore_ns = c->ck.restore_ns;
    w->undone = c->rolled_back + c->coasted;
}

/* The conservative engine's windows scheme: no speculation - but a model with done() has
 * no safe events (the run's end is known only once every LP is done, and an event after
 * it must not have committed at once: clocks_init), and only the event at GVT could run,
 * a GVT round an event; it speculates as little as Time Warp does then. (The clocks' init
 * ran before this one: th->fast is known.) */
static uint64_t windows_limit(const struct tw_thread *th)
{
    return th->fast ? 0 : TW_WINDOW_FLOOR;
}

/* The machine's memory in bytes (0: unknown). */
static uint64_t phys_bytes(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz : 0;
}

/* --window N, or auto: its limit at the start and how much memory it may fill. */
static void window_init(struct tw_thread *th)
{
    unsigned fixed = tw_options(th->r->cfg)->window;
    struct tw_window *w = &th->win;
    memset(w, 0, sizeof *w);
    w->fixed = fixed != 0 || th->g->cf.windows;
    w->limit = w->fixed_limit = th->g->cf.windows ? windows_limit(th)
                                : fixed                ? fixed
                                                       : TW_MAX_UNCOMMITTED;
    w->rest_ns = TW_WINDOW_REST_NS;
    uint64_t mem = phys_bytes();
    w->max_bytes = mem ? mem / 4 / th->g->n : UINT64_MAX;
    snapshot(w, th->cnt, kr__clock_ns());
}

/* The least window: 0 (safe events only) when there can be safe events - they are on and
 * the lookahead is positive (with none, a model gets no safe events on more threads than
 * one). (Judging by how many of a thread's events were safe does not work: a thread that
 * speculates runs its events before they become safe.) */
static uint64_t floor_of(const struct tw_thread *th)
{
    return th->fast && th->g->cf.lookahead > 0 ? 0 : TW_WINDOW_FLOOR;
}

/* Speculation lost: stop (or keep the floor) and rest before the next try. */
static void cut(struct tw_thread *th, uint64_t now, uint64_t floor)
{
    struct tw_window *w = &th->win;
    w->limit = floor;
    w->resting = true;
    w->probe_ns = now + w->rest_ns;
    if (w->rest_ns < TW_WINDOW_REST_MAX_NS) w->rest_ns *= 2;
    th->cnt->win.cuts++;
}

/* Safe events went off (the run is stopping): a window of 0 would leave only the event at
 * GVT to run. */
void tw_window_unsafe(struct tw_thread *th)
{
    if (th->win.limit < TW_WINDOW_FLOOR) th->win.limit = TW_WINDOW_FLOOR;
}

/* A period's verdict: the window cut after two wasteful periods in a row (one may be a
 * descheduled thread's), doubled while speculation gains twice what it wastes. */
static void judge(struct tw_thread *th, uint64_t now, double gain, double cost)
{
    struct tw_window *w = &th->win;
    w->bad = cost > TW_WINDOW_LOSS * gain ? w->bad + 1 : 0;
    if (w->bad >= 2) {
        w->bad = 0;
        cut(th, now, floor_of(th));
    } else if (!w->bad && 2 * cost < gain && w->limit < TW_MAX_UNCOMMITTED) {
        w->limit = w->limit * 2 < TW_MAX_UNCOMMITTED ? w->limit * 2 : TW_MAX_UNCOMMITTED;
        if (w->limit == TW_MAX_UNCOMMITTED) w->rest_ns = TW_WINDOW_REST_NS; /* (paid off) */
    }
}

/* Memory first, then the rest and the probe after it: true if one of them set the window. */
static bool window_held(struct tw_thread *th, uint64_t now)
{
    struct tw_window *w = &th->win;
    if (th->blobs.held > w->max_bytes) { /* no more speculation for now */
        w->limit = floor_of(th);
        snapshot(w, th->cnt, now);
        return true;
    }
    if (w->resting && now < w->probe_ns) return true;
    if (w->resting || w->limit < TW_WINDOW_PROBE) { /* probe (after a rest, or memory) */
        w->resting = false;
        w->limit = TW_WINDOW_PROBE;
        snapshot(w, th->cnt, now);
        return true;
    }
    return false;
}

/* The least time a rollback of this thread's own accord may go back to: what it promised
 * the others stays true - its last GVT report (a round's GVT may be that low, and what the
 * thread runs again must lie above it), its clock (nothing sent below it: re-executions
 * from here send at or above it) and its quiet record (nothing pending below its key) - and
 * what it committed at once itself: a safe event may have come from one of its own
 * uncommitted events below the safe time (sent to another of its LPs), which must not be
 * undone then (past the latest safe event run, every event's sends are later still). A
 * straggler's rollback needs no such bound: the straggler came at or above all of them. */
kr_time tw_memory_floor(const struct tw_thread *th)
{
    const struct tw_global *g = th->g;
    kr_time lo = tw_gvt(g);
    if (nextafter(th->gv.report.ts, INFINITY) > lo) lo = nextafter(th->gv.report.ts, INFINITY);
    if (nextafter(th->fast_hi, INFINITY) > lo) lo = nextafter(th->fast_hi, INFINITY);
    if (!th->fast) return lo; /* (no clock, no record) */
    if (th->clk.sent - g->cf.lookahead > lo) lo = th->clk.sent - g->cf.lookahead;
    /* (any record it wrote may have been read while valid: the latest time one named) */
    if (nextafter(th->clk.top_max, INFINITY) > lo) lo = nextafter(th->clk.top_max, INFINITY);
    return lo;
}

/* The latest time an LP of this thread has run to (from lo). */
static kr_time furthest(struct tw_thread *th, kr_time lo)
{
    kr_time far = lo;
    for (size_t i = 0; i < th->cm.ndirty; i++) {
        const struct tw_lp *tl = tw_lp_of(kr__lp_at(th->r, th->cm.dirty[i]));
        if (tl->tail && tl->tail->k.ts > far) far = tl->tail->k.ts;
    }
    return far;
}

/* --memory-max: roll back this thread's LPs past halfway from the floor above to the
 * furthest of them, which gives back their checkpoints and, through antimessages, what
 * they sent. */
static bool memory_rollback(struct tw_thread *th)
{
    kr_time lo = tw_memory_floor(th), far = furthest(th, lo);
    kr_time cut = lo + (far - lo) / 2;
    if (!(cut > tw_gvt(th->g)) || !(far > lo)) return false; /* (nothing to give back) */
    struct kr__key k = kr__key_at(cut);
    bool gave = false;
    for (size_t i = 0; i < th->cm.ndirty; i++) {
        struct kr__lp *lp = kr__lp_at(th->r, th->cm.dirty[i]);
        const struct tw_lp *tl = tw_lp_of(lp);
        if (!tl->tail || tl->tail->k.ts < cut) continue;
        tw_rollback(th, lp, &k, true);
        th->cnt->win.mem_rollbacks++;
        gave = true;
    }
    tw_flush_local(th);
    return gave;
}

/* Whether event x sent the event r stands for (r: a sent-back event's record). */
static bool sent_it(const struct kr__ev *x, const struct kr__ev *r)
{
    for (const struct kr__ev *c = x->child; c; c = c->sib)
        if (c == r->child && !kr__key_cmp(&c->k, &r->k)) return true;
    return false;
}

/* --memory-max, sendback (Jefferson's cancelback): the sender's side. The uncommitted
 * event of LP r->dest that sent r->child (pointer and key; the child's key is never written
 * by its receiver) is rolled back, if the floor above allows it: it runs again later and
 * sends the event again; the antimessage frees the pending copy. Not found (its sender
 * committed, or init sent it, or a rollback already undid it): nothing to do. */
void tw_sendback_take(struct tw_thread *th, struct kr__ev *r)
{
    struct kr__lp *lp = kr__lp_at(th->r, r->dest);
    struct tw_lp *tl = tw_lp_of(lp);
    kr_time lo = tw_memory_floor(th);
    for (struct kr__ev *x = tl->tail; x && tl->first_unc; x = x->prev) {
        if (x->k.ts < lo || kr__key_lt(&x->k, &tl->first_unc->k)) break;
        if (!sent_it(x, r)) continue;
        struct kr__key k = tw_key_floor(th, &x->k);
        tw_rollback(th, lp, &k, true);
        th->cnt->win.sendbacks++;
        break;
    }
    r->xflags = 0;
    kr__pool_put(th->pool, r);
    tw_flush_local(th);
}

/* The heap without its cancelled events (they only leave it when they reach its top: here
 * they leave now); the latest time still pending, at least gvt. */
static kr_time drop_cancelled(struct tw_thread *th, kr_time gvt)
{
    struct kr__heap *h = &th->heap;
    kr_time last = gvt;
    size_t keep = 0;
    for (size_t i = 0; i < h->n; i++) {
        struct kr__ev *e = kr__heap_ev(h, i);
        if (e->st == KR_EV_CANCELLED) {
            kr__pool_put(th->pool, e);
            continue;
        }
        kr__heap_move(h, keep++, i);
        if (e->k.ts > last) last = e->k.ts;
    }
    h->n = keep;
    kr__heap_rebuild(h);
    return last;
}

/* Up to `want` pending events after `from` sent from this process, listed in
 * th->mem.sendback. */
static void list_sendbacks(struct tw_thread *th, kr_time from, size_t want)
{
    struct kr__heap *h = &th->heap;
    th->mem.nsendback = 0;
    for (size_t i = 0; i < h->n && th->mem.nsendback < want; i++) {
        struct kr__ev *e = kr__heap_ev(h, i);
        unsigned owner = tw_owner(th->g, e->k.src);
        if (!(e->k.ts > from) || e->st != KR_EV_PENDING || tw_remote(th->g, owner)) continue;
        if (th->mem.nsendback == th->mem.capsendback)
            KR_GROW(th->mem.sendback, th->mem.capsendback, th->mem.nsendback + 1, 64,
                    "sendback list");
        th->mem.sendback[th->mem.nsendback++] = e;
    }
}

/* Sendback, the receiver's side: ask the senders of this thread's pending events furthest
 * ahead - the last quarter of the time from GVT to the latest, at most enough to cover
 * `excess` bytes - to roll back. */
static void sendback(struct tw_thread *th, size_t excess)
{
    kr_time gvt = tw_gvt(th->g), last = drop_cancelled(th, gvt);
    list_sendbacks(th, gvt + (last - gvt) * 0.75, excess / KR_POOL_SMALL_EVENT + 1);
    for (size_t i = 0; i < th->mem.nsendback; i++) { /* (a rollback here moves the heap's slots) */
        struct kr__ev *e = th->mem.sendback[i];
        struct kr__ev *r = kr__pool_get(th->pool, 0);
        r->k = e->k;
        r->dest = e->k.src;
        r->flags = 0;
        r->xflags = KR_EVX_SENDBACK;
        r->child = e;
        r->size = 0;
        unsigned owner = tw_owner(th->g, e->k.src);
        if (owner == th->id) tw_sendback_take(th, r);
        else tw_transport_send(th, owner, r);
    }
}

/* This thread's use published, and every thread's summed with the LP states'. */
static struct kr__mem memory_sum(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    atomic_store_explicit(&g->mem[th->id].events, kr__pool_in_use(th->pool),
                          memory_order_relaxed);
    atomic_store_explicit(&g->mem[th->id].ckpts, th->blobs.held, memory_order_relaxed);
    atomic_store_explicit(&g->mem[th->id].pending, th->heap.n * KR_POOL_SMALL_EVENT,
                          memory_order_relaxed);
    struct kr__mem m = { 0, 0, atomic_load_explicit(&kr__area_bytes, memory_order_relaxed), 0 };
    for (unsigned t = 0; t < g->n; t++) {
        m.events += atomic_load_explicit(&g->mem[t].events, memory_order_relaxed);
        m.ckpts += atomic_load_explicit(&g->mem[t].ckpts, memory_order_relaxed);
        m.pending += atomic_load_explicit(&g->mem[t].pending, memory_order_relaxed);
    }
    return m;
}

/* The run needs more than its budget three rounds in a row: it fails with what it needs. */
static void memory_failed(struct tw_thread *th, const struct kr__mem *m)
{
    char msg[512];
    kr__memory_msg(th->r, m, tw_gvt(th->g), msg, sizeof msg);
    tw_fail_at_commit(th->g, msg, &th->g->gvt);
}

/* --memory-max, at each commit: publish what this thread holds, add the others' and the LP
 * states. Past the budget, stop speculating and roll back. With pending events (at the
 * common slot's size) and states alone past it three checks in a row - what any engine
 * holds - the run fails, naming what it needs. Checkpoints that no rollback can give back
 * (the base copies of --state page, buddy and chunk) may keep a run over the budget: the
 * summary says so. True while memory is short (the window is the floor). */
static bool memory_short(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    struct tw_window *w = &th->win;
    struct kr__mem m = memory_sum(th);
    size_t budget = th->r->cfg->memory_max;
    th->mem.share = m.states < budget ? (budget - m.states) / g->n : 1;
    if (!kr__memory_check(th->r, &m)) {
        if (w->mem_short && w->fixed) w->limit = w->fixed_limit;
        w->mem_short = false;
        w->mem_over = 0;
        return false;
    }
    w->mem_short = true;
    w->limit = floor_of(th);
    memory_rollback(th);
    size_t all = m.events + m.ckpts + m.states; /* (as it was before the rollbacks) */
    if (all > budget) sendback(th, all - budget);
    /* (pending counts events sent by events still speculative: the rollbacks above take
     * those back, so a need past the budget fails only when it stays there) */
    w->mem_over = kr__memory_need_over(th->r, &m) ? w->mem_over + 1 : 0;
    if (w->mem_over >= 3) memory_failed(th, &m);
    return true;
}

/* --memory-max after init (after its snapshot in a resumed run), before any speculation:
 * the states and pending events are then what every engine holds, so a run whose init
 * alone needs more fails here, as the sequential engine does, at virtual time 0. */
void tw_memory_init(struct tw_global *g)
{
    struct kr__run *r = g->th[0].r;
    struct kr__mem m = { 0, 0, atomic_load_explicit(&kr__area_bytes, memory_order_relaxed), 0 };
    for (unsigned t = 0; t < g->n; t++) {
        m.events += kr__pool_in_use(g->th[t].pool);
        m.pending += g->th[t].heap.n * KR_POOL_SMALL_EVENT;
    }
    kr__memory_need(r, &m, 0);
}

void tw_memory_quick(struct tw_thread *th)
{
    if (kr__pool_in_use(th->pool) + th->blobs.held > th->mem.share)
        th->win.limit = floor_of(th);
}

/* At each commit: judge the last period's speculation and set the window for the next. */
static void window_on_gvt(struct tw_thread *th)
{
    struct tw_window *w = &th->win;
    if (th->r->cfg->memory_max && memory_short(th)) return;
    if (w->fixed) return;
    const struct kr__counters *c = th->cnt;
    uint64_t now = kr__clock_ns();
    if (window_held(th, now)) return;
    uint64_t spec = (c->committed - w->committed) - (c->safe - w->safe);
    uint64_t undone = c->rolled_back + c->coasted - w->undone;
    if (now - w->t0 < TW_WINDOW_NS || spec + undone < TW_WINDOW_EVENTS) return;
    double ev = c->events_timed ? (double)c->event_ns_sampled / (double)c->events_timed : 0;
    double gain = (double)spec * ev;
    double cost = (double)(c->ck.restore_ns - w->restore_ns) + (double)undone * ev;
    snapshot(w, c, now);
    judge(th, now, gain, cost);
}

static void window_end(struct tw_thread *th)
{
    th->cnt->win.final = th->win.limit;
}

const struct tw_module tw_mod_window = {
    .name = "window", .init = window_init, .on_gvt = window_on_gvt, .end = window_end,
};

/* --memory-max: what it publishes of its memory, and its sendback list. */
static void memory_init(struct tw_thread *th)
{
    struct tw_mempub *m = &th->g->mem[th->id];
    atomic_init(&m->events, 0);
    atomic_init(&m->ckpts, 0);
    atomic_init(&m->pending, 0);
}

static void memory_end(struct tw_thread *th)
{
    free(th->mem.sendback);
}

const struct tw_module tw_mod_memory = { .name = "memory", .init = memory_init, .end = memory_end };
