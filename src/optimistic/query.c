/* query.c - kr_query on the optimistic engine (issue 16; docs/design.md section 6).
 *
 * A query must see its LP's state after all of that LP's events that order before the
 * asking event's key K, and an answer once given is never taken back. So an event asks only
 * when it is the run's least unprocessed event: then nothing below K can still arrive
 * anywhere, every LP's events below K have run and stay, and an LP that ran past K (on
 * speculation) is rolled back to K to answer - as a straggler at K would.
 *
 * An event that asks while it runs speculatively is undone at once (tw_query_undo: its
 * sends are cancelled, its state restored) and marked KR_EVX_QUERY; it then waits at its
 * thread's top until it is the least (tw_query_ready: its key below the whole top key of
 * every other thread's quiet record in one consistent reading, engine.c), and runs again
 * in query mode (tw_process_query), checkpointed before - the state a query reaching its own
 * LP sees, swapped in for the answer and back - and after, so it is never re-run by
 * coasting. At most one event of the run is in query mode at a time: every other thread's
 * quiet record names a top above it until it has run.
 *
 * A query to an LP of another thread is a request on the asker's stack, pushed onto that
 * thread's inbox. Every thread serves its inbox each loop turn, and answers at once: below
 * K it has nothing left to run. The asker spins a while for the answer; an event of a type
 * that once waited longer (the other thread descheduled or busy) runs on an event stack
 * next time and, once its spin is over, is suspended there: its thread goes on with its
 * turns - arrivals, GVT, answering (the nesting may come back to it), and its next events
 * of types that never asked, on speculation - and resumes it when the answer is in. A
 * handler's nested query spins, serving its own thread's inbox. The handler writes the answer into
 * the asker's buffer; its model error goes back as a message, raised in the asker's event.
 * A thread leaving as the run stops refuses what it is asked (TW_Q_STOPPED): the asking
 * event is undone and the run ends before it. For a model with queries the clocks and the
 * quiet bounds count no lookahead and no hop (tw_after, engine.c): a query is asked at its
 * event's own key, and a rollback to answer it cancels from there.
 *
 * Bundles (KR_MODEL_BUNDLES): the bundle asks as one. It is ready once no member can still
 * be on its way - its last possible key, (ts, gen, LP, max, max), below every other
 * thread's whole top - and is gathered into th->q.bund (tw_query_gather), apart from the
 * th->bund of the events the thread runs while it waits; all of it joins the processed list
 * when it has run (or is undone), and its members go back into the heap if its run is
 * abandoned (tw_query_unbundle). While it waits on its stack the context's view of it is
 * kept (q.cbundle) and given back when it resumes (preempt.c, run_asker). */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "optimistic/tw.h"
#include "optimistic/query.h"
#include "optimistic/preempt.h"
#include "base/error.h"

/* The running event asked outside query mode, or a nested answer was refused: unwind to
 * it (tw_execute), which then is undone. */
static _Noreturn void tw_query_unwind(struct tw_thread *th)
{
    th->q.abort = true;
    th->err.armed = false;
    longjmp(*th->err.cur, 1);
}

/* This thread's own asker waiting at its top (its time; inf: none), published if it
 * changed. */
static void publish_wait(struct tw_thread *th, const struct kr__ev *top)
{
    bool asks = top && (top->xflags & KR_EVX_QUERY) && !tw_query_ready(th, top);
    kr_time w = asks ? top->k.ts : INFINITY;
    if (w == th->q.wait_own) return;
    th->q.wait_own = w;
    atomic_store_explicit(&th->g->qline[th->id].wait_bits, kr__time_bits(w), memory_order_relaxed);
}

/* Each turn: publish the time of this thread's top if it waits to ask (and no longer when
 * it does not), and read the least such time of the others. A thread runs nothing later
 * than that (tw_may_run): its record then shows a top past the asker, which becomes the
 * least sooner than if every thread ran ahead until its window filled. Measured: commo,
 * 1000 LPs to time 100, 2 threads: 1.42-1.60 M/s without, 1.94-2.07 with (3 runs each). */
void tw_query_wait(struct tw_thread *th, const struct kr__ev *top)
{
    struct tw_global *g = th->g;
    publish_wait(th, top);
    kr_time m = INFINITY;
    for (unsigned i = 0; i < g->n; i++) {
        if (i == th->id) continue;
        kr_time t = tw_time_of(atomic_load_explicit(&g->qline[i].wait_bits,
                                                    memory_order_relaxed));
        if (t < m) m = t;
    }
    th->q.wait = m;
}

bool tw_query_ready(const struct tw_thread *th, const struct kr__ev *e)
{
    /* (bundles: every member must be here, none still on its way - the bundle's last
     * possible key below every other thread's whole top; `tie` is its LP) */
    struct kr__key k = e->k;
    if (th->bundles) k.src = k.seq = UINT64_MAX;
    return th->alone || e->k.ts < th->clk.safe || kr__key_lt(&k, &th->q.full);
}

/* Does e run in query mode? If it asked before, and also if events of its type have asked
 * and it is the least now: it then runs once, checkpointed, rather than undone when it
 * asks (a restore and coasting over up to K events) and run again. Measured: qcost (every
 * step asks, 1024 LPs), 3 interleaved runs: 1 thread 1.15 -> 2.02 M steps/s (0.41x ->
 * 0.72x sequential), 2 threads 1.18 -> 1.53 M. */
bool tw_query_mode(const struct tw_thread *th, const struct kr__ev *e)
{
    if (e->xflags & KR_EVX_QUERY) return true;
    return th->g->cf.queries && (th->q.types >> (e->type & 63) & 1) && tw_query_ready(th, e);
}

/* lp's state before the event in query mode (its checkpoint `pre`) in place of its state
 * mid-event, which is kept in th->q.mid. */
static void tw_swap_in(struct tw_thread *th, struct kr__lp *lp, const struct kr__ckpt *pre)
{
    th->q.mid = kr__lp_snapshot(&th->blobs, lp);
    kr__lp_restore(lp, pre);
}

/* ...and back. The arena's record of what the event wrote is gone: the next checkpoint of
 * the LP is a full one. */
static void tw_swap_out(struct tw_thread *th, struct kr__lp *lp)
{
    kr__lp_restore(lp, th->q.mid);
    kr__ckpt_release(&th->blobs, th->q.mid);
    th->q.mid = NULL;
    tw_lp_of(lp)->ckpt_full_next = true;
}

/* Roll lp back to key k from inside a query: the rollback may coast, which runs model code
 * through the thread's context and event jump buffer - both in use by the event or query
 * being answered here. */
static void tw_query_rollback(struct tw_thread *th, struct kr__lp *lp, const struct kr__key *k)
{
    struct kr__ctx was = kr__ctx;
    jmp_buf jb;
    memcpy(jb, th->err.jmp, sizeof jb);
    jmp_buf *cur = th->err.cur;
    bool armed = th->err.armed;
    tw_rollback(th, lp, k, true);
    th->cnt->q.rollbacks++;
    memcpy(th->err.jmp, jb, sizeof jb);
    th->err.cur = cur;
    th->err.armed = armed;
    kr__ctx = was;
}

/* The handler's model error: kept (the per-thread message buffer is reused) as the one
 * this thread raises next. */
static void tw_query_keep_error(struct tw_thread *th)
{
    char *m = strdup(th->err.msg);
    if (!m) kr__die(th->err.msg);
    free(th->q.err);
    th->q.err = m;
    th->err.msg = m;
}

/* Run dest's handler, catching a model error (or a refused nested answer): true then, the
 * context as it was. */
static __attribute__((noinline)) bool tw_answer_caught(struct tw_thread *th, struct kr__ctx *c,
                                                       kr_lp dest, const void *q, size_t size,
                                                       void *ans, size_t cap, size_t *n)
{
    struct kr__ctx was = *c;
    jmp_buf jb, *outer = th->err.cur;
    bool armed = th->err.armed;
    th->err.cur = &jb;
    th->err.armed = true;
    bool failed = _setjmp(jb) != 0;
    if (!failed) *n = kr__query_answer(c, dest, q, size, ans, cap);
    else if (!th->q.abort) tw_query_keep_error(th);
    th->err.cur = outer;
    th->err.armed = armed;
    if (failed) *c = was;
    return failed;
}

/* The asked LP (of this thread) at the asker's key: its own state before the event swapped
 * in (true: to swap back after), or rolled back if it ran past the key. */
static bool local_state(struct tw_thread *th, struct kr__lp *lp, const struct tw_lp *tl,
                        kr_lp dest)
{
    if (th->q.ev && th->q.ev->dest == dest) {
        if (th->q.mid) return false;
        tw_swap_in(th, lp, th->q.ev->ckpt);
        return true;
    }
    if (tl->tail && !kr__key_lt(&tl->tail->k, &th->q.k)) tw_query_rollback(th, lp, &th->q.k);
    return false;
}

/* Answer from an LP of this thread, at th->q.k: its state there is the one in memory once
 * an LP that ran past it is rolled back, and for the LP of the event in query mode, its
 * state before that event. A model error (or a refused nested answer) unwinds on to the
 * caller's catch after the swap is undone. */
static size_t tw_query_local(struct tw_thread *th, struct kr__ctx *c, kr_lp dest,
                             const void *q, size_t size, void *ans, size_t cap)
{
    struct kr__lp *lp = kr__lp_at(th->r, dest);
    const struct tw_lp *tl = tw_lp_of(lp);
    bool swap = local_state(th, lp, tl, dest);
    size_t n = 0;
    bool failed = tw_answer_caught(th, c, dest, q, size, ans, cap, &n);
    if (swap) tw_swap_out(th, lp);
    if (failed) {
        th->err.armed = false;
        longjmp(*th->err.cur, 1);
    }
    th->cnt->q.answered++;
    return n;
}

/* Waiting for an answer: spin a while, then sleep briefly - at once when threads outnumber
 * cores, where the thread to answer may be waiting for this one's core (the reasons of
 * tw_idle, engine.c). Measured: 3 threads on 2 cores, query -P every=5 -P noise=1, 16 LPs:
 * 3.7 s spinning, 0.41 s with this. */
static void tw_query_pause(struct tw_thread *th, unsigned *spins)
{
    if (!th->pace.over && ++*spins < 4096) {
        __builtin_ia32_pause();
        return;
    }
    *spins = 0;
    struct timespec ts = { 0, 20000 };
    nanosleep(&ts, NULL);
}

/* On the worker's stack (a handler's nested query, or an event in query mode of a type
 * that has not waited long yet): spin for the answer, serving this thread's own inbox
 * meanwhile (the nesting may come back to it). */
static void tw_query_spin(struct tw_thread *th, const struct tw_qreq *rq)
{
    unsigned spins = 0;
    while (atomic_load_explicit(&rq->status, memory_order_acquire) == TW_Q_WAIT) {
        tw_query_serve(th);
        tw_query_pause(th, &spins);
    }
}

/* First a short spin: an answer from a thread on another core comes back within ~1 us
 * (its next turn), sooner than a switch to the worker and its whole turn notice it. */
#define TW_QUERY_SPIN 1024
/* An event in query mode on the worker's stack that waited longer than this for an answer
 * (the other thread descheduled, or busy) puts its type on stacks. */
#define TW_QUERY_LONG_NS 20000
/* ...and back after this many answers in a row came within the spin. */
#define TW_QUERY_QUICK 256

/* A spin for the answer first (not when sharing cores, nor under --check): true if it
 * came. After TW_QUERY_QUICK quick answers, its type goes back to the worker's stack. */
static bool await_spin(struct tw_thread *th, struct tw_qreq *rq)
{
    for (unsigned i = 0; i < TW_QUERY_SPIN && !th->pace.over && !th->g->cf.check; i++) {
        if (atomic_load_explicit(&rq->status, memory_order_acquire) != TW_Q_WAIT) {
            if (++th->q.quick >= TW_QUERY_QUICK) th->q.wtypes &= ~(1ull << (th->q.ev->type & 63));
            return true;
        }
        __builtin_ia32_pause();
    }
    return false;
}

/* The event in query mode waits on its stack: the worker goes on with its turns (arrivals,
 * GVT, answering requests - its own nested ones too) and resumes it each turn, the event
 * being its least, until the answer is in. Context and unwind target are the worker's to
 * change meanwhile; the event gets back those it had. */
static void tw_query_await(struct tw_thread *th, struct tw_qreq *rq)
{
    if (await_spin(th, rq)) return;
    th->q.quick = 0;
    struct kr__ctx was = kr__ctx;
    jmp_buf *cur = th->err.cur;
    bool armed = th->err.armed;
    unsigned spins = 0;
    th->q.rq = rq;
    while (atomic_load_explicit(&rq->status, memory_order_acquire) == TW_Q_WAIT) {
        if (spins++) tw_query_pause(th, &spins); /* (not before the first turn) */
        kr__ult_yield(KR_ULT_SUSPENDED, KR_BY_WAIT);
        kr__ctx = was;
        th->err.cur = cur;
        th->err.armed = armed;
    }
    th->q.rq = NULL;
}

void tw_query_settle(struct tw_thread *th)
{
    if (th->q.rq) tw_query_spin(th, th->q.rq);
}

void tw_query_drop(struct tw_thread *th)
{
    tw_query_settle(th);
    th->q.rq = NULL;
    if (th->q.mid) { /* (the LP's state is about to be restored from a checkpoint) */
        kr__ckpt_release(&th->blobs, th->q.mid);
        th->q.mid = NULL;
    }
    th->q.ev = NULL;
}

static void tw_query_post(struct tw_global *g, unsigned owner, struct tw_qreq *rq)
{
    _Atomic(struct tw_qreq *) *in = &g->qline[owner].in;
    struct tw_qreq *h = atomic_load_explicit(in, memory_order_relaxed);
    do {
        rq->next = h;
    } while (!atomic_compare_exchange_weak_explicit(in, &h, rq, memory_order_release,
                                                    memory_order_relaxed));
}

/* The owner could not answer: the run stops (unwound), or the asking event fails with the
 * answering handler's error. */
_Noreturn static void remote_failed(struct tw_thread *th, int st, char *err)
{
    if (st == TW_Q_STOPPED) tw_query_unwind(th);
    free(th->q.err);
    th->q.err = err;
    th->err.msg = err;
    th->err.armed = false;
    longjmp(*th->err.cur, 1);
}

/* An answer waited for long on the worker's stack: the asking event's type runs on a stack
 * of its own from now on (tw_process_query). */
static void long_wait(struct tw_thread *th)
{
    if (th->q.ev && !th->q.rq) th->q.wtypes |= 1ull << (th->q.ev->type & 63);
}

/* Ask owner's thread and wait, serving this thread's own inbox meanwhile. The request
 * counts as a message in the quiet records: the receiver may roll back for it, and cancel
 * from its key on. */
static size_t tw_query_remote(struct tw_thread *th, struct kr__ctx *c, unsigned owner,
                              kr_lp dest, const void *q, size_t size, void *ans, size_t cap)
{
    struct tw_qreq rq = { .k = th->q.k, .dest = dest, .asker = c->id, .q = q, .size = size,
                          .ans = ans, .cap = cap, .depth = c->qdepth };
    atomic_init(&rq.status, TW_Q_WAIT);
    tw_quiet_sent_at(th, &rq.k); /* (its rollback there sends from k on) */
    /* (GVT: that rollback puts events from k on back into the owner's heap, perhaps after
     * its report of this round; a request before this thread passed phase 1 is answered
     * before it does, so before any phase-2 report) */
    if (kr__key_lt(&rq.k, &th->gv.min_sent)) th->gv.min_sent = rq.k;
    uint64_t t0 = kr__clock_ns();
    tw_query_post(th->g, owner, &rq);
    th->cnt->q.remote++;
    bool stack = kr__ult_self.cur != NULL;
    if (stack) tw_query_await(th, &rq); /* (the event in query mode) */
    else tw_query_spin(th, &rq);
    int st = atomic_load_explicit(&rq.status, memory_order_acquire);
    uint64_t waited = kr__clock_ns() - t0;
    th->cnt->q.wait_ns += waited;
    if (!stack && waited > TW_QUERY_LONG_NS) long_wait(th);
    if (st != TW_Q_ANSWERED) remote_failed(th, st, rq.err);
    return rq.n;
}

size_t tw_query(struct kr__ctx *c, kr_lp dest, const void *q, size_t size, void *ans,
                size_t cap)
{
    struct tw_thread *th = c->eng;
    if (c->mode == KR_MODE_COAST)
        kr__internal_error("thread %u re-runs LP %llu's event at %.17g, which asks a query: "
                           "an event that asks is checkpointed after, never coasted", th->id,
                           (unsigned long long)c->id, c->now);
    if (c->mode == KR_MODE_EVENT && th->q.ev != c->ev) tw_query_unwind(th);
    unsigned owner = tw_owner(th->g, dest);
    if (owner == th->id) return tw_query_local(th, c, dest, q, size, ans, cap);
    return tw_query_remote(th, c, owner, dest, q, size, ans, cap);
}

/* One request from another thread, answered in the asker's place: its LP and depth of
 * nesting, at its key. The status is written last: the asker's stack frame goes then. */
static __attribute__((noinline)) void tw_query_serve_one(struct tw_thread *th,
                                                         struct tw_qreq *rq)
{
    struct kr__ctx was = kr__ctx;
    struct kr__key qk = th->q.k;
    kr__ctx.lp = NULL;
    kr__ctx.ev = NULL;
    kr__ctx.id = rq->asker;
    kr__ctx.now = rq->k.ts;
    kr__ctx.mode = KR_MODE_QUERY;
    kr__ctx.bundle = NULL;
    kr__ctx.nbundle = 0;
    kr__ctx.qdepth = rq->depth;
    th->q.k = rq->k;
    jmp_buf jb, *outer = th->err.cur;
    bool armed = th->err.armed;
    th->err.cur = &jb;
    th->err.armed = true;
    int st = TW_Q_ANSWERED;
    if (_setjmp(jb) == 0) {
        rq->n = tw_query_local(th, &kr__ctx, rq->dest, rq->q, rq->size, rq->ans, rq->cap);
    } else if (th->q.abort) {
        th->q.abort = false;
        st = TW_Q_STOPPED;
    } else {
        rq->err = strdup(th->err.msg);
        if (!rq->err) kr__die(th->err.msg);
        st = TW_Q_FAILED;
    }
    th->err.cur = outer;
    th->err.armed = armed;
    th->q.k = qk;
    kr__ctx = was;
    atomic_store_explicit(&rq->status, st, memory_order_release);
}

void tw_query_serve(struct tw_thread *th)
{
    _Atomic(struct tw_qreq *) *in = &th->g->qline[th->id].in;
    if (!atomic_load_explicit(in, memory_order_relaxed)) return;
    struct tw_qreq *rq = atomic_exchange_explicit(in, NULL, memory_order_acquire);
    while (rq) {
        struct tw_qreq *next = rq->next; /* (before the answer: then rq may be gone) */
        th->clk.qtaken++;
        tw_query_serve_one(th, rq);
        rq = next;
    }
}

void tw_query_refuse(struct tw_thread *th)
{
    struct tw_qreq *rq = atomic_exchange_explicit(&th->g->qline[th->id].in, NULL,
                                                  memory_order_acquire);
    while (rq) {
        struct tw_qreq *next = rq->next;
        th->clk.qtaken++;
        atomic_store_explicit(&rq->status, TW_Q_STOPPED, memory_order_release);
        rq = next;
    }
}

/* e (with bundles, every member of b) joins the processed list. */
static void tw_query_finish(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e,
                            struct kr__bundle *b)
{
    if (!b) {
        tw_finish_event(th, lp, e);
        return;
    }
    tw_bundle_processed(th, lp, b);
    tw_flush_local(th);
}

void tw_query_gather(struct tw_thread *th, struct kr__ev *e)
{
    tw_gather(th, e);
    struct kr__bundle b = th->q.bund; /* (the two swap arrays: no allocation) */
    th->q.bund = th->bund;
    th->bund = b;
}

void tw_query_unbundle(struct tw_thread *th)
{
    for (size_t i = 1; i < th->q.bund.n; i++) {
        struct kr__ev *x = th->q.bund.ev[i];
        x->st = KR_EV_PENDING;
        kr__heap_push(&th->heap, x);
    }
    th->q.bund.n = 0;
}

void tw_query_undo(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e,
                   struct kr__bundle *b)
{
    th->q.abort = false;
    if (th->lazy) tw_lazy_end(th);
    tw_query_finish(th, lp, e, b);
    struct kr__key k = e->k;
    tw_rollback(th, lp, &k, true);
    e->xflags |= KR_EVX_QUERY;
    th->q.types |= 1ull << (e->type & 63);
    tw_flush_local(th);
    th->cnt->q.undone++;
}

/* An event of a type that has waited long for a remote answer (past the spin of
 * tw_query_await) runs on its own stack, where it waits for the next ones (preempt.c;
 * tw_query_ran once it has run). The others run on the worker's stack and spin for an
 * answer: with the other cores free it comes within that spin, and a stack costs a switch
 * pair an event (measured: qcost, 1 thread, 0.88x with every event on a stack; 2 threads
 * 0.93x with those of types that had asked another thread). --check (tests) puts every
 * one on a stack and has it wait there at once. (Kept sends of lazy cancellation are
 * settled before a stack: the worker handles others' rollbacks while the event waits.) */
void tw_process_query(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    e->flags = 0;
    tw_take_ckpt(th, lp, e); /* (what a query reaching lp sees) */
    e->child = NULL;
    th->q.ev = e;
    th->q.k = e->k;
    unsigned bit = e->type & 63;
    if (th->q.wtypes >> bit & 1 || th->g->cf.check) { /* (--check: every asker waits so) */
        if (th->lazy) tw_lazy_end(th);
        tw_ts_start(th, lp, e);
        return;
    }
    tw_run_sampled(th, lp, e);
    tw_query_ran(th, lp, e);
}

void tw_query_ran(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    struct tw_lp *tl = tw_lp_of(lp);
    th->q.ev = NULL;
    tl->since_ckpt = TW_CKPT_NOW; /* (saved again after it, whatever K becomes: a rollback
                                   * past it restores that, and never coasts it) */
    struct kr__bundle *b = th->bundles ? &th->q.bund : NULL;
    if (th->q.abort) { /* (an answer refused: the run stops) */
        tw_query_undo(th, lp, e, b);
        return;
    }
    th->cnt->q.events++;
    if (th->lazy) tw_lazy_end(th);
    tw_query_finish(th, lp, e, b);
}

/* No query asked or awaited yet. */
static void queries_end(struct tw_thread *th)
{
    kr__bundle_free(&th->q.bund);
}

static void queries_init(struct tw_thread *th)
{
    struct tw_qline *ql = &th->g->qline[th->id];
    th->q.full = kr__key_at(-INFINITY);
    atomic_init(&ql->in, NULL);
    atomic_init(&ql->tie, 0);
    atomic_init(&ql->src, 0);
    atomic_init(&ql->seq, 0);
    atomic_init(&ql->wait_bits, kr__time_bits(INFINITY));
    th->q.wait = th->q.wait_own = INFINITY;
}

const struct tw_module tw_mod_queries = { .name = "queries", .init = queries_init,
                                          .end = queries_end };
