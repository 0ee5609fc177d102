/* preempt.c - fine-grain time-sharing in the optimistic engine (paper 000; design.md
 * section 6).
 *
 * With --preempt other than off, an event runs on an event stack (src/ult). When it is
 * preempted - check-and-switch found a lower timestamp arrived for the thread at a model
 * call's return or at an extra tick, or it held the CPU for a whole liveness slice - it goes
 * back into the thread's pending heap under its own key, marked SUSPENDED, and its LP keeps
 * the stack. The platform then takes in the arrivals (rolling back whatever the new messages
 * require), runs lower-timestamp events of other LPs, and resumes the event when it is again
 * the lowest: nothing done so far is lost. If the LP must roll back to before the event (a
 * straggler, or the event itself cancelled), the partial event is abandoned: its sends so far
 * are cancelled, its output dropped, its state restored from the checkpoints, the stack reset
 * (tw_ts_abandon, called by tw_rollback). An LP with a suspended event runs nothing else, and
 * fossil collection leaves it alone: its state is mid-event.
 *
 * Extra ticks are per worker (src/ult/tick.c). In adaptive mode each thread keeps
 * exponential means of the event time Δe and of the model calls per event (APMS) and arms
 * the fine ticks while Δe / (APMS + 1) >= (1 + α) ΔET: the gap between two chances to
 * preempt (calls, plus the event's end) is long next to a tick. Otherwise - and in return
 * mode - a slow liveness tick stays on, so an event looping for ever on a speculative path
 * is still preempted and rolled back when the straggler that cancels it arrives. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "optimistic/tw.h"
#include "optimistic/query.h"
#include "optimistic/preempt.h"
#include "base/error.h"

/* The liveness slice: an event holding the CPU this long gives the platform a turn (drain,
 * GVT, the timeout check) and is resumed at once if it is still the lowest. */
#define TW_SLICE_NS (10 * 1000 * 1000ull)
/* Preempted events one thread may hold: each keeps a stack. */
#define TW_MAX_SUSPENDED 1024
/* Exponential means weigh the newest sample 1/8; the adaptive rule is checked every 16
 * events (arming is a system call). */
#define TW_MEAN_W 0.125
#define TW_RULE_EVERY 16
/* (TW_STACKS_MIN_NS, tw.h: adaptive mode runs an event type on stacks only while its events
 * take 5 us on average: a switch pair and the segment timing cost ~90 ns an event here
 * (PHOLD-std 1 thread: 8.0 M/s on the worker's stack, 4.6 on event stacks), 2% of that.) */

const char *kr__preempt_name(int p)
{
    switch (p) {
    case KR_PREEMPT_OFF: return "off";
    case KR_PREEMPT_RETURN: return "return";
    case KR_PREEMPT_TICK: return "tick";
    default: return "adaptive";
    }
}

/* Every event stack runs this: one event per turn, then back to the platform. */
static void ts_entry(void *arg)
{
    struct tw_thread *th = arg;
    for (;;) {
        struct kr__ult *u = kr__ult_self.cur;
        struct kr__ev *e = u->ev;
        struct kr__lp *lp = kr__lp_at(th->r, e->dest);
        jmp_buf jb;
        u->jmp = &jb;
        th->err.cur = &jb;
        th->err.armed = true;
        if (_setjmp(jb) == 0) {
            kr__ult_self.app = 1;
            atomic_signal_fence(memory_order_seq_cst);
            kr__run_event(th->r, lp, e);
            if (atomic_load_explicit(&u->foreign, memory_order_relaxed)) kr__foreign_raise();
            if (kr__run_done(th->r, lp, e->dest)) e->flags |= KR_EVF_DONE_AFTER;
            atomic_signal_fence(memory_order_seq_cst);
        } else {
            /* A crash unwinds here still in application mode: leave it before recording
             * the failure, or a tick could suspend this stack - and a rollback drop it -
             * with the record half made (its memory leaked or freed twice). */
            kr__ult_self.app = 0;
            atomic_signal_fence(memory_order_seq_cst);
            kr__ult_unwound(u);
            if (!th->q.abort) tw_keep_error(th, lp, e); /* deferred: reported if it commits */
        }
        kr__ult_self.app = 0;
        th->err.armed = false;
        u->jmp = NULL;
        kr__ult_yield(KR_ULT_DONE, 0);
    }
}

static void arm(struct tw_thread *th, bool fine)
{
    uint64_t now = kr__clock_ns();
    if (th->ts.ticks_fine) th->cnt->ts.tick_armed_ns += now - th->ts.armed_t0;
    th->ts.ticks_fine = fine;
    th->ts.armed_t0 = now;
    kr__tick_arm(fine ? th->ts.tick_ns : TW_SLICE_NS);
}

/* Preemption on: the slice, the tick, the timeout and the adaptive rule; the tick armed
 * (without a timer, preemption at model calls only). */
static void ticks_start(struct tw_thread *th, const struct kr__config *cfg,
                        const struct kr__tw_options *o, struct kr__ult_self *s)
{
    s->slice_ns = TW_SLICE_NS;
    th->ts.tick_ns = (uint64_t)(o->tick_us * 1000.0);
    th->ts.timeout_ns = (uint64_t)(cfg->event_timeout * 1e9);
    th->ts.rule_ns = (1.0 + o->alpha) * (double)th->ts.tick_ns;
    kr__typetime_init(&th->ts.types); /* (each type on stacks until timed) */
    if (kr__tick_thread_init() != 0) return;
    arm(th, th->ts.preempt == KR_PREEMPT_TICK ||
                (th->ts.preempt == KR_PREEMPT_ADAPTIVE && o->alpha <= -1));
}

void tw_ts_thread_start(struct tw_thread *th)
{
    const struct kr__config *cfg = th->r->cfg;
    const struct kr__tw_options *o = tw_options(cfg);
    /* (a bundle runs on the worker's stack: its members are gathered from the heap, and a
     * late one must find it processed or pending, never half-run) */
    /* (nor an event of a model that answers queries: one that asks runs whole once it is
     * the run's least, query.c) */
    bool whole = th->bundles || th->g->cf.queries || th->g->cf.reverse;
    th->ts.preempt = whole ? KR_PREEMPT_OFF : (uint8_t)o->preempt;
    /* (a model that answers queries: its event in query mode waits for remote answers on a
     * stack, query.c - one at a time per thread, never preempted) */
    if (th->ts.preempt == KR_PREEMPT_OFF && !th->g->cf.queries) return;
    kr__ult_pool_init(&th->ts.ults, cfg->stack_kb * 1024 + KR_STACK_ENGINE,
                      th->g->cf.queries ? 1 : TW_MAX_SUSPENDED, ts_entry, th);
    th->ts.ults_on = true;
    struct kr__ult_self *s = &kr__ult_self;
    s->bh_min = &th->g->arr[th->id].bh_min;
    if (th->ts.preempt != KR_PREEMPT_OFF) ticks_start(th, cfg, o, s);
}

void tw_ts_thread_end(struct tw_thread *th)
{
    if (th->ts.preempt == KR_PREEMPT_OFF) {
        if (th->ts.ults_on) kr__ult_pool_destroy(&th->ts.ults);
        th->ts.ults_on = false;
        return;
    }
    if (th->ts.ticks_fine) th->cnt->ts.tick_armed_ns += kr__clock_ns() - th->ts.armed_t0;
    kr__tick_arm(0);
    kr__tick_thread_fini();
    const struct kr__ult_self *s = &kr__ult_self;
    struct kr__counters *c = th->cnt;
    c->ts.preempt_return = s->by_return;
    c->ts.preempt_tick = s->by_tick;
    c->ts.preempt_slice = s->by_slice;
    c->ts.switches = s->switches;
    c->ts.ticks = s->ticks;
    c->ts.ticks_platform = s->ticks_platform;
    c->ts.ticks_outside = s->ticks_outside;
    c->ts.stacks_peak = th->ts.ults.peak;
    c->de_ns = th->ts.de_ns;
    c->apms = th->ts.apms;
    kr__ult_pool_destroy(&th->ts.ults);
}

/* The adaptive rule (paper 000, eq. 2, with the event's end counted as a chance too), over
 * the events that can be preempted: those on stacks. */
static void adapt(struct tw_thread *th)
{
    bool want = th->ts.de_ns / (th->ts.apms + 1.0) >= th->ts.rule_ns;
    if (want != th->ts.ticks_fine) arm(th, want);
}

static bool any_type_on_stacks(const struct tw_thread *th)
{
    for (unsigned t = 0; t < KR_TYPES; t++)
        if (tw_ts_on_stack(th, t)) return true;
    return false;
}

/* Adaptive, a timed event on the worker's stack: its type's mean. Ticks stay armed only
 * while some type still runs on stacks. */
void tw_ts_sampled(struct tw_thread *th, unsigned type, uint64_t event_ns)
{
    kr__typetime_add(&th->ts.types, type, (float)event_ns);
    if (th->ts.ticks_fine && !tw_ts_on_stack(th, type) && !any_type_on_stacks(th)) arm(th, false);
}

/* Back in the heap, its LP marked, until it is resumed (or abandoned). */
static void suspended(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e,
                      struct kr__ult *u)
{
    if (!u->preempted) th->ts.nsusp++;
    u->preempted = true;
    if (__builtin_expect(kr__trace_run, 0))
        kr__trace_span(KR_SPAN_PREEMPT, kr__trace_now(), 0, e->dest, e->k.ts, e->type);
    lp->ult = u;
    e->st = KR_EV_SUSPENDED;
    kr__heap_push(&th->heap, e);
    th->g->lvt[tw_lidx(th->g, e->dest)] = e->k.ts; /* deliveries below it take the slow path */
    tw_flush_local(th);                     /* what it sent so far to this thread's LPs */
}

/* An event resumed on its stack: its errors unwind into its own frame. */
static inline void resume_frame(struct tw_thread *th, const struct kr__ult *u)
{
    if (!u->jmp) return;
    th->err.cur = u->jmp;
    th->err.armed = true;
}

/* The bundle an asker runs with: as it saw it when it stopped to wait, or gathered now. */
static void asker_bundle(struct tw_thread *th, const struct kr__ult *u)
{
    if (!th->bundles) return;
    if (!u->jmp) {
        kr__bundle_enter(&th->q.bund);
        return;
    }
    kr__ctx.bundle = th->q.cbundle;
    kr__ctx.nbundle = th->q.cn;
}

/* The event in query mode of a model that answers queries (no time-sharing): it is never
 * preempted, and suspends itself only to wait for an answer (query.c); timed as on the
 * worker's stack (--event-timeout by the watchdog, the mean event time by sampling). */
static void run_asker(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e,
                      struct kr__ult *u)
{
    kr__ctx_event(lp, e, KR_MODE_EVENT);
    resume_frame(th, u);
    asker_bundle(th, u);
    kr__watch_begin(&th->watch, e);
    kr__ult_run(u);
    kr__watch_end(&th->watch);
    th->err.armed = false;
    kr__ctx.mode = KR_MODE_NONE;
    if (u->status == KR_ULT_SUSPENDED) {
        th->q.cbundle = kr__ctx.bundle;
        th->q.cn = kr__ctx.nbundle;
        suspended(th, lp, e, u);
        return;
    }
    if (u->preempted) {
        th->ts.nsusp--;
        lp->ult = NULL;
    }
    kr__ult_put(&th->ts.ults, u);
    tw_query_ran(th, lp, e);
}

/* An event that ran to its end on its stack: its costs counted, its stack back. */
static inline void segment_done(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e,
                                struct kr__ult *u)
{
    struct kr__counters *c = th->cnt;
    if (u->preempted) {
        th->ts.nsusp--;
        c->ts.resumed++;
        lp->ult = NULL;
    }
    c->ts.ult_events++;
    c->event_ns_sampled += u->run_ns;
    c->events_timed++;
    tw_cost_add(&th->ck.ev_cost, u->run_ns);
    th->ts.de_ns += TW_MEAN_W * ((double)u->run_ns - th->ts.de_ns);
    th->ts.apms += TW_MEAN_W * ((double)u->calls - th->ts.apms);
    if (th->ts.preempt == KR_PREEMPT_ADAPTIVE) {
        kr__typetime_add(&th->ts.types, e->type, (float)u->run_ns);
        if ((c->ts.ult_events % TW_RULE_EVERY) == 0) adapt(th);
    }
    kr__ult_put(&th->ts.ults, u);
    tw_finish_event(th, lp, e);
}

/* Run (or resume) e on its stack until it ends or is preempted. */
static void run_segment(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e,
                        struct kr__ult *u)
{
    if (th->ts.preempt == KR_PREEMPT_OFF) {
        run_asker(th, lp, e, u);
        return;
    }
    struct kr__ult_self *s = &kr__ult_self;
    kr__ctx_event(lp, e, KR_MODE_EVENT);
    resume_frame(th, u);
    s->now = e->k.ts;
    s->can_suspend = th->ts.ults.live < th->ts.ults.max;
    uint64_t calls0 = s->returns;
    uint64_t t0 = kr__clock_ns();
    s->seg_start_ns = t0;
    /* Slices are timed by the wall clock (cheap). Once the event has run half its
     * --event-timeout, by the thread's CPU clock: a machine loaded by other processes, a
     * stop or a stall must not turn a long event into a timeout. */
    bool cpu = th->ts.timeout_ns && u->run_ns >= th->ts.timeout_ns / 2;
    uint64_t c0 = cpu ? kr__thread_cpu_ns() : 0;
    kr__arrivals_listen(&th->g->arr[th->id], true); /* (check-and-switch) */
    kr__watch_begin(&th->watch, e); /* (a slice that never ends: blocked, or a loop with no
                                     * model call under --preempt return) */
    kr__ult_run(u);
    kr__watch_end(&th->watch);
    kr__arrivals_listen(&th->g->arr[th->id], false);
    u->run_ns += cpu ? kr__thread_cpu_ns() - c0 : kr__clock_ns() - t0;
    u->calls += s->returns - calls0;
    th->err.armed = false;
    kr__ctx.mode = KR_MODE_NONE;
    if (u->status == KR_ULT_SUSPENDED) {
        suspended(th, lp, e, u);
        return;
    }
    segment_done(th, lp, e, u);
}

void tw_ts_start(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    struct kr__ult *u = kr__ult_get(&th->ts.ults);
    u->ev = e;
    u->preempted = false;
    u->jmp = NULL;
    u->run_ns = 0;
    u->paused0 = atomic_load_explicit(&th->g->end.paused_ns, memory_order_relaxed);
    u->over_at = 0;
    u->calls = 0;
    run_segment(th, lp, e, u);
}

#define TW_JUDGE_AGAIN_NS (100u * 1000 * 1000)

/* An event on the committed path that will not end: a model error at its key, and what it
 * printed before - as the sequential engine prints it. */
static bool timed_out(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e,
                      struct kr__ult *u)
{
    if (!th->ts.timeout_ns || u->run_ns < th->ts.timeout_ns) return false;
    /* Slices are timed by the wall clock: time the whole process stood still does not count.
     * The watcher notices such a pause only when it runs again, so an event over the limit
     * is judged again a little later before it is failed. */
    uint64_t paused =
        atomic_load_explicit(&th->g->end.paused_ns, memory_order_relaxed) - u->paused0;
    uint64_t now = kr__clock_ns();
    if (u->run_ns < th->ts.timeout_ns + paused) {
        u->over_at = 0;
        return false;
    }
    if (!u->over_at) u->over_at = now;
    if (now - u->over_at < TW_JUDGE_AGAIN_NS) return false;
    if (kr__key_lt(&th->cm.applied, &e->k)) { /* not yet known to be the lowest anywhere */
        tw_gvt_maybe_start(th, true);
        return false;
    }
    char msg[768];
    kr__timeout_message(msg, sizeof msg, th->r, e, -1, "");
    /* (everything below e is committed and the LP runs nothing past it: what its buffer
     * holds through e's key is e's own output) */
    if (kr__lp_out_n(lp)) tw_output_through(th, lp, e);
    tw_fail_at_commit(th->g, msg, &e->k);
    return true;
}

void tw_ts_resume(struct tw_thread *th, struct kr__ev *e)
{
    struct kr__lp *lp = kr__lp_at(th->r, e->dest);
    struct kr__ult *u = lp->ult;
    if (timed_out(th, lp, e, u)) {
        kr__heap_push(&th->heap, e); /* stays suspended; the run stops */
        return;
    }
    run_segment(th, lp, e, u);
}

/* lp must roll back to before its preempted event: drop the partial event. Returns the
 * checkpoint taken just before it, if any (the caller restores from it). */
struct kr__ckpt *tw_ts_abandon(struct tw_thread *th, struct kr__lp *lp, bool cancel)
{
    struct kr__ult *u = lp->ult;
    struct kr__ev *e = u->ev;
    if (e == th->q.ev) { /* (waiting for an answer into its stack) */
        if (th->bundles) tw_query_unbundle(th);
        tw_query_drop(th);
    }
    if (cancel) tw_cancel_children(th, e);
    e->child = NULL; /* (its output goes with tw_rollback's: key >= k) */
    lp->ult = NULL;
    th->ts.nsusp--;
    th->cnt->ts.abandoned++;
    kr__ult_put(&th->ts.ults, u);
    struct kr__ckpt *c = e->ckpt;
    e->ckpt = NULL;
    e->flags &= KR_EVF_SPAN; /* (never processed: its span is intact) */
    e->st = KR_EV_PENDING; /* it is in the heap: it will start afresh */
    return c;
}
