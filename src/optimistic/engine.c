/* engine.c - the optimistic engine's worker loop: take in messages, take part in GVT, run
 * the lowest-timestamp pending event of the thread's LPs, deliver its sends. */
#define _GNU_SOURCE
#include "core/sanitize.h"
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "optimistic/tw.h"
#include "state/mode.h"
#include "core/grow.h"
#include "core/error.h"
#include "core/snapshot.h"
#include "stats/progress.h"

/* May thread th run e now? Within its window (optimism.c), or e lies below the safe time
 * (no rollback can reach it: it holds memory only until the next commit), or e is at GVT:
 * the thread holding the lowest pending event must always proceed, or a thread whose
 * uncommitted events all lie above GVT would wait for a GVT only it can advance. */
static inline bool tw_may_run(struct tw_thread *th, const struct kr__ev *e)
{
    if (__builtin_expect(th->queries, 0)) {
        if (e->xflags & KR_EVX_QUERY) return tw_query_ready(th, e);
        if (e->k.ts > th->qwait) return false; /* (query.c: let the asker be the least) */
    }
    if (th->uncommitted < th->win.limit) return true;
    return (th->fast && tw_below_safe(th, e)) || e->k.ts <= tw_gvt(th->g);
}

void tw_work_push(struct tw_thread *th, struct kr__ev *e, int anti)
{
    if (th->wn == th->wcap) KR_GROW(th->work, th->wcap, th->wn + 1, 256, "local delivery queue");
    th->work[th->wn].e = e;
    th->work[th->wn].anti = anti;
    th->wn++;
}

void tw_mark_dirty(struct tw_thread *th, struct kr__lp *lp, kr_lp id)
{
    struct tw_lp *tl = tw_lp_of(lp);
    if (tl->dirty) return;
    tl->dirty = true;
    if (th->ndirty == th->capdirty)
        KR_GROW(th->dirty, th->capdirty, th->ndirty + 1, 256, "commit list");
    th->dirty[th->ndirty++] = id;
}

void tw_mark_dirty_again(struct tw_thread *th, kr_lp id)
{
    struct kr__lp *lp = kr__lp_at(th->r, id);
    struct tw_lp *tl = tw_lp_of(lp);
    tl->dirty = false;
    tw_mark_dirty(th, lp, id);
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
        if ((tl->tail && (kr__key_lt(&k, &tl->tail->k) ||
                          (th->bundles && !kr__key_cmp(&k, &tl->tail->k)))) ||
            (th->nsusp && lp->ult && kr__key_lt(&e->k, &((struct kr__ev *)lp->ult->ev)->k)))
            tw_rollback(th, lp, &k, true);
    }
    e->st = KR_EV_PENDING;
    kr__heap_push(&th->heap, e);
}

/* Run queued same-thread deliveries in order; they may queue more (rollbacks). */
void tw_flush_local(struct tw_thread *th)
{
    for (size_t i = 0; i < th->wn; i++) {
        struct tw_item it = th->work[i];
        if (it.anti == 1) tw_cancel(th, it.e);
        else if (it.anti) tw_rank_take(th, it.e); /* (from another rank: ranks.c) */
        else tw_deliver(th, it.e);
    }
    th->wn = 0;
}

/* ---- safe events (tw.h) ---- */

/* Before draining: the least of the other threads' clocks. A message drained after this
 * was pushed after its sender published the clock read here, so it lies at or above it. */
static void tw_safe_read(struct tw_thread *th)
{
    th->safe_prev = th->safe;
    th->safe = tw_clock_min(th->g, th->id);
}

/* After draining: publish floor + lookahead, where the floor bounds every event this
 * thread may still run (pending ones, and re-executions after stragglers, which arrive at
 * or above `safe`). Written only when it moved, and at most every TW_CLOCK_TURNS turns
 * unless `now` or `clock_eager` (tw.h); the quiet record, which every send voids, only then:
 * with no lookahead the clocks stand still and the records are all there is, and writing
 * one each turn cost queueing 7%. */
static void tw_clock_publish(struct tw_thread *th, const struct kr__ev *top, bool now)
{
    bool turn = now || !(++th->clock_turn & (TW_CLOCK_TURNS - 1));
    if (!turn && !th->clock_eager) return;
    if (turn) tw_quiet_publish(th, top);
    struct tw_global *g = th->g;
    kr_time f = top ? top->k.ts : INFINITY;
    if (th->safe < f && th->nlps) f = th->safe; /* (without LPs nothing can reach it) */
    f += g->lookahead;
    if (g->net.on) tw_rank_clock_publish(th, f); /* (its stamp's part: records to ranks) */
    if (f == th->clock_sent) return;
    /* (a message put before the clock moves must be visible by the time it has: a backlog
     * the receiver has no room for yet holds the clock where it is) */
    if (th->npost && (tw_post_publish(th) & KR_CHAN_KEPT)) return;
    if (g->check && f < th->clock_sent)
        kr__internal_error("thread %u's clock went back from %.17g to %.17g", th->id,
                           th->clock_sent, f);
    th->clock_sent = f;
    atomic_store_explicit(&g->clock[th->id].bits, kr__time_bits(f), memory_order_release);
}

/* Write this thread's quiet record (tw.h) with its lowest pending key - unless it sent
 * since the last one: it would likely send again soon, voiding the record at once, a write
 * each other thread's next read of the line pays for. */
/* Queries: whether line l already names the rest of key k (its owner's own line). */
static bool tw_qline_same(const struct tw_qline *l, const struct kr__key *k)
{
    return atomic_load_explicit(&l->tie, memory_order_relaxed) == k->tie &&
           atomic_load_explicit(&l->src, memory_order_relaxed) == k->src &&
           atomic_load_explicit(&l->seq, memory_order_relaxed) == k->seq;
}

void tw_quiet_publish(struct tw_thread *th, const struct kr__ev *top)
{
    if (th->qtalked) {
        th->qtalked = false;
        return;
    }
    struct tw_clock *c = &th->g->clock[th->id];
    struct kr__key k = top ? top->k : kr__key_at(INFINITY);
    uint64_t bits = kr__time_bits(k.ts);
    if (!(th->qseq & 1)) {
        /* (with queries the whole key counts: a new top of the same time and generation
         * from another sender, left unwritten, once let another thread's asker wait for
         * an event that had already run, while this thread's asker waited for it: found
         * by fuzz_model) */
        if (atomic_load_explicit(&c->top_bits, memory_order_relaxed) == bits &&
            atomic_load_explicit(&c->top_gen, memory_order_relaxed) == k.gen &&
            atomic_load_explicit(&c->taken, memory_order_relaxed) == th->qtaken &&
            (!th->g->queries || tw_qline_same(&th->g->qline[th->id], &k)))
            return; /* (unchanged: no write) */
        tw_quiet_void(th);
    }
    atomic_thread_fence(memory_order_release); /* (the fields after the odd sequence) */
    atomic_store_explicit(&c->top_bits, bits, memory_order_relaxed);
    atomic_store_explicit(&c->top_gen, k.gen, memory_order_relaxed);
    if (th->g->queries) { /* (the rest of the key, under the same sequence) */
        struct tw_qline *l = &th->g->qline[th->id];
        atomic_store_explicit(&l->tie, k.tie, memory_order_relaxed);
        atomic_store_explicit(&l->src, k.src, memory_order_relaxed);
        atomic_store_explicit(&l->seq, k.seq, memory_order_relaxed);
    }
    if (k.ts > th->qtop_max) th->qtop_max = k.ts;
    atomic_store_explicit(&c->sent, th->qsent, memory_order_relaxed);
    atomic_store_explicit(&c->taken, th->qtaken, memory_order_relaxed);
    atomic_store_explicit(&c->seq, ++th->qseq, memory_order_seq_cst);
}

/* Queries: the whole key of a quiet record's top k, the least so far in *whole. */
static void tw_quiet_whole(const struct tw_qline *l, struct kr__key *k, struct kr__key *whole)
{
    k->tie = atomic_load_explicit(&l->tie, memory_order_relaxed);
    k->src = atomic_load_explicit(&l->src, memory_order_relaxed);
    k->seq = atomic_load_explicit(&l->seq, memory_order_relaxed);
    if (kr__key_lt(k, whole)) *whole = *k;
}

/* Thread i's quiet record into the sums and least tops of tw_quiet_try; false if void. */
static bool tw_quiet_read(const struct tw_global *g, unsigned i, uint64_t *seqs, uint64_t *sent,
                          uint64_t *taken, struct kr__key *lo, struct kr__key *whole)
{
    struct tw_clock *c = &g->clock[i];
    uint32_t q = atomic_load_explicit(&c->seq, memory_order_seq_cst);
    if (q & 1) return false;
    *seqs += q;
    *sent += atomic_load_explicit(&c->sent, memory_order_relaxed);
    *taken += atomic_load_explicit(&c->taken, memory_order_relaxed);
    struct kr__key k = kr__key_at(tw_time_of(atomic_load_explicit(&c->top_bits,
                                                                  memory_order_relaxed)));
    k.gen = atomic_load_explicit(&c->top_gen, memory_order_relaxed);
    if (tw_hop_lt(&k, lo)) *lo = k;
    if (g->queries) tw_quiet_whole(&g->qline[i], &k, whole);
    return true;
}

/* Raise qbound from the other threads' quiet records (tw.h): each valid, all unchanged
 * between two reads (so at one moment in between they all held), and every message put was
 * taken. Sequences only grow, so equal sums mean each is unchanged; a try that would see
 * what the last failed one saw is skipped, and so is one while a record is void (threads
 * that talk: their lines are read each turn for the clocks anyway). */
static void tw_quiet_try(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    if (g->net.on) return; /* (other ranks have no quiet records: only their stamps) */
    uint64_t mark = th->qsent + th->qtaken;
    for (unsigned i = 0; i < g->n; i++) {
        if (i == th->id) continue;
        uint32_t q = atomic_load_explicit(&g->clock[i].seq, memory_order_relaxed);
        if (q & 1) return;
        mark += q;
    }
    if (mark == th->qlast) return;
    th->qlast = mark;
    uint64_t seqs = 0, sent = th->qsent, taken = th->qtaken;
    struct kr__key lo = kr__key_at(INFINITY), whole = lo;
    for (unsigned i = 0; i < g->n; i++)
        if (i != th->id && !tw_quiet_read(g, i, &seqs, &sent, &taken, &lo, &whole)) return;
    atomic_thread_fence(memory_order_acquire);
    for (unsigned i = 0; i < g->n; i++)
        if (i != th->id) seqs -= atomic_load_explicit(&g->clock[i].seq, memory_order_seq_cst);
    if (seqs || sent != taken) return;
    struct kr__key b = tw_after(g, &lo);
    if (tw_hop_lt(&th->qbound, &b)) th->qbound = b;
    if (kr__key_lt(&th->qfull, &whole)) th->qfull = whole;
}

/* The clocks and quiet records are kept: for safe events, or for queries (an event waits
 * to ask until they show it is the least) - also once the run is stopping, or an asking
 * event would wait for ever and hold GVT, and with it the stop, back. */
static inline bool tw_bounds(const struct tw_thread *th)
{
    return th->fast || th->g->queries;
}

/* The watcher asked the run to stop, or a snapshot is due (snapshot.c): safe events off,
 * and say how far they went. */
static inline bool tw_safe_off(const struct tw_global *g)
{
    return atomic_load_explicit(&g->stopping, memory_order_relaxed) ||
           atomic_load_explicit(&g->snap_want, memory_order_relaxed);
}

static void tw_safe_stop(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    th->fast = false;
    th->lone.on = false;
    tw_window_unsafe(th); /* (a window of 0 relied on safe events) */
    uint64_t b = th->fast_hi >= 0 ? kr__time_bits(th->fast_hi) + 1 : 0; /* (0: none) */
    uint64_t cur = atomic_load_explicit(&g->safe_hi, memory_order_relaxed);
    while (b > cur && !atomic_compare_exchange_weak_explicit(&g->safe_hi, &cur, b,
                                                             memory_order_relaxed,
                                                             memory_order_relaxed)) {
    }
    atomic_fetch_add_explicit(&g->stop_acks, 1, memory_order_release);
    if (!th->retired) tw_gvt_maybe_start(th, true); /* (the round past them all is what
                                                      * is waited for) */
}

static void tw_send(struct kr__ctx *c, struct kr__ev *e)
{
    struct tw_thread *th = c->eng;
    struct tw_global *g = th->g;
    if (__builtin_expect(th->lazy != NULL, 0) && tw_lazy_keep(th, c->ev, e)) return;
    if (th->alone && th->in_safe && th->plain) { /* (no straggler: pending at once) */
        e->st = KR_EV_PENDING;
        kr__heap_push(&th->heap, e);
        return;
    }
    /* (alone: not even the owner table, a random read per send with many LPs) */
    unsigned owner = th->alone ? th->id : tw_owner(g, e->dest);
    /* (children are kept for cancellation: init's and a safe event's are never undone) */
    struct kr__ev *parent = th->in_safe ? NULL : c->ev;
    if (__builtin_expect(tw_remote(g, owner), 0)) {
        tw_rank_send(th, e, owner, parent);
        return;
    }
    if (parent) tw_child_link(parent, e);
    if (owner == th->id) {
        tw_work_push(th, e, 0);
        return;
    }
    th->cnt->remote_sent++;
    tw_transport_send(th, owner, e);
}

void tw_emit(struct kr__ctx *c, const char *text, size_t len)
{
    if (!c->ev) { /* init: virtual time -inf is committed, and runs in LP order on one thread */
        kr__emit_direct(c, text, len);
        return;
    }
    kr__outvec_add(kr__lp_out(c->lp), &c->ev->k, text, len);
}

/* A kr_commit record joins the event's output (a u64 LP, the bytes): rolled back, moved at
 * commit, sent to rank 0 and printed - that is, given to the hook - in key order with it. */
void tw_record(struct kr__ctx *c, const void *data, size_t size)
{
    char rec[8 + KR_PAYLOAD_MAX];
    uint64_t id = c->id;
    memcpy(rec, &id, 8);
    if (size) memcpy(rec + 8, data, size);
    kr__outvec_add_record(kr__lp_out(c->lp), &c->ev->k, rec, 8 + size);
}

void tw_fail(struct kr__ctx *c, const char *msg)
{
    struct tw_thread *th = c->eng;
    if (!th || !th->armed ||
        (c->mode != KR_MODE_EVENT && c->mode != KR_MODE_COAST && c->mode != KR_MODE_DONE &&
         c->mode != KR_MODE_QUERY))
        return;
    th->err_msg = msg; /* copied after the longjmp (tw_keep_error): this may be a signal handler */
    th->armed = false;
    longjmp(*th->jmp_cur, 1); /* the event is marked failed; reported only if it commits */
}

const struct kr__engine_ops tw_ops = { tw_send, tw_emit, tw_fail, tw_query,
                                              tw_record };

void tw_keep_error(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    if (th->g->check && kr__ult_self.app) /* (a tick here could suspend it half-recorded) */
        kr__internal_error("thread %u records LP %llu's failed event at %.17g in application "
                           "mode", th->id, (unsigned long long)e->dest, e->k.ts);
    e->flags |= KR_EVF_ERROR;
    struct tw_fail *f = tw_fail_of(tw_lp_of(lp));
    free(f->err);
    f->err = strdup(th->err_msg);
    if (!f->err) kr__die(th->err_msg);
}

struct tw_fail *tw_fail_of(struct tw_lp *tl)
{
    if (!tl->fail && !(tl->fail = calloc(1, sizeof *tl->fail)))
        kr__fatal_oom("failure record", sizeof *tl->fail);
    return tl->fail;
}

void tw_fail_clear(struct tw_lp *tl)
{
    if (!tl->fail) return;
    free(tl->fail->err);
    free(tl->fail);
    tl->fail = NULL;
}

/* Run one event of lp (or re-run it silently when coasting). */
static void tw_execute(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e, int mode)
{
    kr__ctx_event(lp, e, mode);
    if (th->bundles) kr__bundle_enter(mode == KR_MODE_COAST ? &th->cbund : &th->bund);
    th->jmp_cur = &th->jmp;
    th->armed = true;
    kr__watch_begin(&th->watch, e);
    if (_setjmp(th->jmp) == 0) {
        kr__run_event(th->r, lp, e);
        if (mode == KR_MODE_EVENT && kr__run_done(th->r, lp, e->dest))
            e->flags |= KR_EVF_DONE_AFTER;
    } else if (!th->qabort) { /* (an aborted run is undone: query.c) */
        tw_keep_error(th, lp, e);
    }
    kr__watch_end(&th->watch);
    th->armed = false;
    kr__ctx.mode = KR_MODE_NONE;
}

/* Bundles: the processed bundle that starts at x (its members follow it in the LP's
 * processed list) into th->cbund; returns the event after it. */
static struct kr__ev *tw_bundle_listed(struct tw_thread *th, struct kr__ev *x)
{
    kr__bundle_start(&th->cbund, x);
    struct kr__ev *n = x->next;
    for (; n && kr__ev_same_bundle(n, x); n = n->next) kr__bundle_add(&th->cbund, n);
    return n;
}

void tw_coast(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *from)
{
    for (struct kr__ev *x = from, *n; x; x = n) {
        n = th->bundles ? tw_bundle_listed(th, x) : x->next;
        tw_execute(th, lp, x, KR_MODE_COAST);
        th->cnt->coasted += th->bundles ? th->cbund.n : 1;
    }
}

static inline struct kr__ev *tw_top(struct tw_thread *th);

/* Bundles: the rest of e's bundle, which the key put next in the heap. A member that a
 * rollback left holding lazily kept sends gives them to the bundle's run. */
static void tw_gather(struct tw_thread *th, struct kr__ev *e)
{
    kr__bundle_start(&th->bund, e);
    struct kr__ev *x;
    while ((x = tw_top(th)) && kr__ev_same_bundle(x, e)) {
        kr__heap_pop(&th->heap);
        if (x->xflags & KR_EVX_LAZY) tw_lazy_join(th, x);
        x->flags = 0;
        x->child = NULL;
        x->ckpt = NULL;
        kr__bundle_add(&th->bund, x);
    }
}

static void tw_processed(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e);

/* Bundles: every member joins the processed list, before any message is taken in (one
 * could roll the LP back, or another, whose coasting fills th->cbund). done() was asked
 * once, after the whole bundle: its answer belongs to the last member (commit.c). */
static void tw_bundle_processed(struct tw_thread *th, struct kr__lp *lp)
{
    struct kr__ev *first = th->bund.ev[0], *last = th->bund.ev[th->bund.n - 1];
    if ((first->flags & KR_EVF_DONE_AFTER) && last != first) {
        first->flags &= (uint8_t)~KR_EVF_DONE_AFTER;
        last->flags |= KR_EVF_DONE_AFTER;
    }
    for (size_t i = 0; i < th->bund.n; i++) tw_processed(th, lp, th->bund.ev[i]);
}

/* Bundles, a safe one: the members after the first commit with it. */
static void tw_bundle_commit_rest(struct tw_thread *th, struct kr__lp *lp)
{
    for (size_t i = 1; i < th->bund.n; i++) {
        struct kr__ev *x = th->bund.ev[i];
        kr__lp_commit_event(lp, x);
        th->cnt->processed++;
        th->cnt->committed++;
        th->cnt->safe++;
        kr__pool_put(th->pool, x);
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

/* Page and buddy modes: a safe event takes no checkpoint, so the pages it wrote stay open
 * (writable), and every run of open pages is a kernel mapping of its own, which the kernel
 * limits (vm.max_map_count). The LPs left with open pages are listed, and once the threads
 * together have TW_OPEN_MAX of them, each is closed by a checkpoint as its new base. (Closing
 * them at every commit cost airport in page mode half its rate: a checkpoint for nearly
 * every event. Scan mode protects nothing by hand.) */
#define TW_OPEN_MAX 8192
void tw_close_pages(struct tw_thread *th)
{
    for (size_t i = 0; i < th->nopen; i++) {
        struct kr__lp *lp = kr__lp_at(th->r, th->open[i]);
        struct tw_lp *tl = tw_lp_of(lp);
        tl->pages_open = false;
        /* With history, its own next checkpoint closes them; mid-event, the state is not
         * an event's. */
        if (tl->head || (th->nsusp && lp->ult) || !lp->arena.seg->ndirty) continue;
        tw_take_ckpt(th, lp, NULL); /* its state is all committed: the new base */
        tw_trim_chain(th, tl->base);
    }
    th->nopen = 0;
}

static void tw_keep_open(struct tw_thread *th, struct kr__lp *lp, kr_lp id)
{
    struct tw_lp *tl = tw_lp_of(lp);
    if (!lp->arena.seg->ndirty || tl->pages_open) return;
    if (th->nopen == th->capopen)
        KR_GROW(th->open, th->capopen, th->nopen + 1, 256, "list of LPs with open pages");
    tl->pages_open = true;
    th->open[th->nopen++] = id;
    if (th->nopen >= TW_OPEN_MAX / th->g->n) tw_close_pages(th);
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

/* A safe event (tw.h): no checkpoint, committed at once and freed while hot. One that
 * failed joins the processed list instead, to commit (and be reported) in key order with
 * the rest at GVT; it cannot be rolled back either way. */
static inline __attribute__((always_inline)) void
tw_process_safe(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e, bool plain)
{
    struct tw_lp *tl = tw_lp_of(lp);
    if (tl->head || (!th->g->chained && tl->base)) tw_drop_history(th, lp);
    tl->since_ckpt = TW_CKPT_NOW; /* the next unsafe event is the first restore point */
    th->fast_hi = e->k.ts;
    e->child = NULL;
    e->flags = 0;
    size_t nout = kr__lp_out_n(lp);
    th->in_safe = true;
    tw_run_sampled(th, lp, e);
    th->in_safe = false;
    if (e->flags & KR_EVF_ERROR) {
        if (th->bundles) tw_bundle_processed(th, lp);
        else tw_processed(th, lp, e);
        tw_flush_local(th);
        return;
    }
    tw_safe_commit(th, lp, e, nout);
    if (!plain && th->bundles) tw_bundle_commit_rest(th, lp);
    if (!plain && e->flags & KR_EVF_RKIDS) tw_rank_forget(th, e); /* (copies: no anti) */
    e->child = NULL;
    if (th->g->open_pages) tw_keep_open(th, lp, e->dest); /* (the arena's line: not else) */
    kr__pool_put(th->pool, e);
    tw_flush_local(th);
}

/* (A safe event runs on the worker's stack even where time-sharing would give it one: no
 * earlier work can arrive for it, which is what preemption waits for.) */
static inline bool tw_is_safe(const struct tw_thread *th, const struct kr__lp *lp,
                              const struct kr__ev *e, bool plain)
{
    const struct tw_lp *tl = tw_lp_of(lp);
    return th->fast && tw_below_safe(th, e) && !tl->first_unc && !(th->nsusp && lp->ult) &&
           (plain || !th->queries); /* (an event that asks is undone once: query.c) */
}

static void tw_park(struct tw_lp *tl, struct kr__ev *e)
{
    e->st = KR_EV_PARKED;
    struct tw_fail *f = tl->fail;
    e->next = f->parked;
    f->parked = e;
}

/* Before e runs: the sends of its undone run, kept by lazy cancellation; and an event
 * that asks queries runs apart (query.c): true then, it has run.
 * Another event of lp may be preempted: then e has its key (a lower one would have rolled
 * it back on arrival, a higher one waits behind it), a stale event and the namesake sent
 * after its sender rolled back, which lazy cancellation lets meet. An LP runs one event at
 * a time: the preempted one is abandoned and starts afresh after e. */
static bool tw_start_rare(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    if (th->nsusp && lp->ult) tw_rollback(th, lp, &e->k, true);
    bool query = tw_query_mode(th, e);
    if (e->xflags & KR_EVX_LAZY) tw_lazy_start(th, e);
    if (query) tw_process_query(th, lp, e);
    return query;
}

/* (one test per event for all of that: the common event has none of it) */
static inline bool tw_start(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e,
                            bool plain)
{
    if (__builtin_expect(th->nsusp | e->xflags | (!plain && th->queries), 0))
        return tw_start_rare(th, lp, e);
    return false;
}

/* An event that may be rolled back: checkpointed every K, joins the processed list. */
static inline __attribute__((always_inline)) void
tw_process_unsafe(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e, bool plain)
{
    struct tw_lp *tl = tw_lp_of(lp);
    e->flags = 0; /* (before the checkpoint: KR_EVF_CKPT) */
    if (tl->since_ckpt >= th->ckpt_interval) tw_take_ckpt(th, lp, e);
    tl->since_ckpt++;
    e->child = NULL;
    if (tw_ts_on_stack(th, e->type)) { /* on its own stack: may be preempted (preempt.c) */
        if (!plain && th->lazy) tw_lazy_end(th); /* (it runs others while it waits) */
        tw_ts_start(th, lp, e);
        return;
    }
    tw_run_sampled(th, lp, e);
    if (!plain && __builtin_expect(th->qabort, 0)) {
        tw_query_undo(th, lp, e);
        return;
    }
    if (!plain && th->bundles) tw_bundle_processed(th, lp);
    if (!plain && th->lazy) tw_lazy_end(th);
    if (plain || !th->bundles) tw_processed(th, lp, e);
    tw_flush_local(th);
}

/* plain (th->plain): none of bundles, queries, lazy cancellation and ranks, whose tests
 * the compiler then drops from this path (tw_process) - each a load and a branch per
 * event, together ~2% of PHOLD-std's instructions on one thread. */
static inline __attribute__((always_inline)) void
tw_process_as(struct tw_thread *th, struct kr__ev *e, bool plain)
{
    struct kr__lp *lp = kr__lp_at(th->r, e->dest);
    struct tw_lp *tl = tw_lp_of(lp);
    if (tw_poisoned(tl)) { /* frozen after a failed speculative event until rolled back */
        tw_park(tl, e);
        return;
    }
    if (th->g->check && e->k.ts < tw_gvt(th->g))
        kr__internal_error("thread %u runs an event at time %.17g below GVT %.17g (LP %llu)",
                           th->id, e->k.ts, tw_gvt(th->g), (unsigned long long)e->dest);
    th->last_ts = e->k.ts;
    if (tw_start(th, lp, e, plain)) return;
    if (!plain && th->bundles) tw_gather(th, e);
    if (tw_is_safe(th, lp, e, plain)) {
        tw_process_safe(th, lp, e, plain);
        if (!plain && th->lazy) tw_lazy_end(th);
        return;
    }
    tw_process_unsafe(th, lp, e, plain);
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

static void tw_processed(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
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
    if (__builtin_expect(th->mem_share != 0, 0) && (th->uncommitted & 255) == 0)
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

/* Before the workers start (init done, its sends drained): no message can be sent below
 * the lowest pending event plus the lookahead, so that starts every clock. (Starting from
 * -inf, each thread's floor would wait for the other's forever.) */
static void tw_clock_start(struct tw_global *g)
{
    kr_time lo = INFINITY;
    for (unsigned t = 0; t < g->n; t++) {
        struct kr__ev *top = tw_top(&g->th[t]);
        if (top && top->k.ts < lo) lo = top->k.ts;
    }
    /* (across ranks: the least of all ranks, init's events between them included) */
    if (g->net.on) lo = tw_rank_begin(g, lo);
    /* (init may have set it; across ranks, any rank's. Queries: a query is asked at its
     * event's time, so the clocks cannot count on the lookahead) */
    g->lookahead = g->queries ? 0 : g->r->lookahead;
    for (unsigned t = 0; t < g->n; t++) {
        g->th[t].clock_sent = lo + g->lookahead;
        atomic_store_explicit(&g->clock[t].bits, kr__time_bits(lo + g->lookahead),
                              memory_order_relaxed);
        atomic_store_explicit(&g->clock[t].rbits, kr__time_bits(lo + g->lookahead),
                              memory_order_relaxed);
    }
}

/* At housekeeping, from the time of the last `turns` loop turns: how many turns make
 * TW_POST_NS, the longest a message waits, and how many TW_EVERY_NS. */
static void tw_post_pace(struct tw_thread *th, unsigned turns)
{
    uint64_t now = kr__clock_ns();
    uint64_t turn_ns = (now - th->turns_t0) / turns + 1;
    th->turns_t0 = now;
    th->post_every = turn_ns >= TW_POST_NS ? 1 :
                     TW_POST_NS / turn_ns > TW_POST_TURNS_MAX ? TW_POST_TURNS_MAX :
                     (unsigned)(TW_POST_NS / turn_ns);
    th->every = TW_EVERY_NS / turn_ns >= TW_EVERY_TURNS ? TW_EVERY_TURNS :
                (unsigned)(TW_EVERY_NS / turn_ns) + 1;
    th->net_every = turn_ns >= TW_RANK_POST_NS ? 1 :
                    TW_RANK_POST_NS / turn_ns > TW_RANK_POST_TURNS_MAX ? TW_RANK_POST_TURNS_MAX :
                    (unsigned)(TW_RANK_POST_NS / turn_ns);
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

static void tw_safe_burst(struct tw_thread *th, kr_time end)
{
    struct kr__ev *e;
    /* (a safe event may always run, tw_may_run says - unless queries hold it back) */
    for (unsigned k = 0; k < TW_SAFE_BURST && (e = tw_top(th)) && tw_below_safe(th, e) &&
                         e->k.ts < end && e->st == KR_EV_PENDING &&
                         (!th->queries || tw_may_run(th, e)); k++) {
        kr__lp_prefetch_state(th->r, e->dest);
        kr__heap_pop(&th->heap);
        tw_prefetch_next(th);
        tw_process(th, e);
    }
}

/* No work: spin a while (on its own core a thread loses nothing, and work from another
 * thread is picked up within a microsecond), then sleep briefly. Measured: PHOLD with 16
 * LPs on 2 threads went from 0.8-1.0 to 5.3-6.5 M/s going from 64 to 4096 spins, since a
 * nanosleep costs at least ~60 us here. Oversubscribed threads sleep at once: a yield
 * hardly gives the core away (the scheduler often picks the yielder again), which starves
 * the descheduled thread that holds GVT back. Measured: chaos, 8 LPs on 4 threads, two runs
 * sharing 2 cores: 3-5% of runs took 10-100 s when idle threads yielded (even 4 yields
 * before sleeping), none of 200 over 0.15 s with sleeps; PHOLD-std on 4 threads loses
 * about a quarter (yields 5.6, sleeps ~4 M/s, medians of 10 interleaved, noisy). */
static void tw_idle(struct tw_thread *th, unsigned *spins, bool oversubscribed)
{
    if (th->npost) tw_post_publish(th);
    if (th->g->net.on) tw_rank_turn(th, true);
    if (!oversubscribed && ++*spins < 4096) {
        __builtin_ia32_pause();
        return;
    }
    *spins = 0;
    th->cnt->idle_sleeps++;
    tw_gvt_maybe_start(th, th->uncommitted > 0); /* idle with uncommitted work: commit it */
    struct timespec ts = { 0, 20000 };
    uint64_t t0 = kr__clock_ns();
    nanosleep(&ts, NULL);
    th->slept_ns += kr__clock_ns() - t0; /* (not running by choice: balance auto) */
}

/* Wait until every worker has left its loop, then apply the last published horizon: a GVT
 * round that closed while this thread was leaving (its report was in) published a horizon
 * the others apply, and an LP's committed history must end at the same key on every thread
 * (an interrupted run is summarised and digested as it stands). No round can close after
 * all have left. */
static void tw_stop_together(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    if (g->queries) tw_query_settle(th); /* (its answer still to be written, or refused) */
    atomic_fetch_add_explicit(&g->left, 1, memory_order_acq_rel);
    while (atomic_load_explicit(&g->left, memory_order_acquire) < g->n) {
        if (atomic_load_explicit(&g->mig_req, memory_order_acquire)) { /* (planned before */
            tw_migrate(th);                                            /* the others left) */
            continue;
        }
        if (atomic_load_explicit(&g->snap_req, memory_order_acquire)) {
            tw_snap_round(th);
            continue;
        }
        if (g->queries) tw_query_refuse(th); /* (one still asking left after the answer) */
        struct timespec ts = { 0, 20000 };
        nanosleep(&ts, NULL);
    }
    uint64_t ep = atomic_load_explicit(&g->epoch, memory_order_acquire);
    if (ep != th->seen_epoch) {
        th->seen_epoch = ep;
        tw_commit(th, &g->horizon);
    }
}

/* Housekeeping, every `every` turns that ran events (TW_EVERY_NS): pacing, GVT, tuning,
 * taking turns. */
static void tw_housekeeping(struct tw_thread *th, bool over, unsigned turns)
{
    tw_post_pace(th, turns);
    tw_gvt_maybe_start(th, th->cnt->processed - th->cnt->safe - th->round_mark >=
                               th->g->round_events);
    if (th->g->ckpt_auto) tw_tune_ckpt(th);
    else if (!th->r->cfg->tw.ckpt_given) tw_ckpt_by_cost(th);
    /* More threads than cores: take turns often, or a descheduled thread's messages arrive
     * as stragglers far in everyone's past. (Yielding when another process shares the core
     * was measured too, and is much worse: it hands that process our time slice.) */
    if (over) {
        th->cnt->yields++;
        sched_yield();
    }
}

/* A retired worker's turn (no LPs: out of GVT; back when its core is free, migrate.c).
 * False once the run stops. */
static bool tw_retired_turn(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    if (atomic_load_explicit(&g->mig_req, memory_order_acquire)) tw_migrate(th);
    else if (atomic_load_explicit(&g->snap_req, memory_order_acquire)) tw_snap_round(th);
    else if (atomic_load_explicit(&g->stop, memory_order_acquire)) return false;
    else if (th->fast && tw_safe_off(g)) tw_safe_stop(th);
    else tw_retired_wait(th);
    return true;
}

/* Before running anything: messages in, GVT, the stop. False once the run stops. */
static bool tw_platform_turn(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    if (tw_bounds(th)) tw_safe_read(th);
    if (g->net.on) {
        tw_rank_turn(th, false);
        if (th->nudge) tw_gvt_maybe_start(th, true); /* (another rank is in a later round) */
    }
    tw_drain(th);
    if (g->queries) tw_query_serve(th);
    tw_gvt_poll(th);
    if (atomic_load_explicit(&g->stop, memory_order_acquire)) {
        tw_gvt_poll(th);
        return false;
    }
    if (th->fast && tw_safe_off(g)) tw_safe_stop(th);
    return true;
}

/* Open path read-only on a descriptor above 2: with stdout closed by the caller, a plain
 * open would take descriptor 1 and the committed output would go into this file. (A write
 * to it in the moment before it moves fails with EBADF, as on the closed descriptor.) */
static int tw_open_high(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0 || fd > 2) return fd;
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    close(fd);
    return high;
}

static void tw_worker_start(struct tw_thread *th)
{
    kr__pin_thread(th->id, th->g->n);
    kr__fault_thread_init();
    kr__watch_bind(&th->watch);
    tw_ts_thread_start(th);
    kr__ctx.run = th->r;
    kr__ctx.ops = &tw_ops;
    kr__ctx.pool = th->pool;
    kr__ctx.eng = th;
    kr__ctx.mode = KR_MODE_NONE;
    th->turns_t0 = kr__clock_ns();
    th->sched_fd = tw_open_high("/proc/thread-self/schedstat"); /* (balance) */
    tw_balance_start(th);
    tw_lone_update(th); /* (one thread: lone from its first event) */
}

/* The thread's lowest pending event, the clock and quiet record published with it, and a
 * try to make it safe when it is not. */
static struct kr__ev *tw_turn_top(struct tw_thread *th)
{
    struct kr__ev *e = tw_top(th);
    if (tw_bounds(th)) {
        tw_clock_publish(th, e, false);
        if (e && (!tw_below_safe(th, e) ||
                  ((e->xflags & KR_EVX_QUERY) && !tw_query_ready(th, e))))
            tw_quiet_try(th);
    }
    if (th->g->queries) tw_query_wait(th, e);
    return e;
}

/* The event in query mode (popped: asker) waits on its stack for an answer from another
 * thread: meanwhile the thread runs its next event, speculatively like any other, unless
 * that is the asker's LP's (one event at a time) or of a type that has asked (it would
 * be undone when it asks: query.c). True if it ran one; the asker is back in the heap,
 * its least, which the clocks and quiet records show. */
static bool tw_query_aside(struct tw_thread *th, struct kr__ev *asker, kr_time end)
{ /* (false: the asker, still popped, is resumed) */
    if (atomic_load_explicit(&th->qrq->status, memory_order_acquire) != TW_Q_WAIT) return false;
    struct kr__ev *e = tw_top(th);
    bool run = e && e->k.ts < end && e->st == KR_EV_PENDING && e->dest != asker->dest &&
               !(th->qtypes >> (e->type & 63) & 1) && tw_may_run(th, e);
    if (!run) return false;
    kr__heap_pop(&th->heap);
    kr__heap_push(&th->heap, asker);
    th->cnt->query_aside++;
    tw_process(th, e);
    return true;
}

/* A turn that runs e, the thread's lowest pending event. */
static inline void tw_run_top(struct tw_thread *th, struct kr__ev *e, kr_time end)
{
    if (th->lone.on) { /* (lone.c: an event it cannot run that way ends lone mode) */
        if (e->st == KR_EV_PENDING && tw_below_safe(th, e) && tw_lone_burst(th, end)) {
            tw_post_turn(th);
            return;
        }
        th->lone.on = false;
    }
    kr__lp_prefetch_state(th->r, e->dest);
    kr__heap_pop(&th->heap);
    tw_prefetch_next(th);
    if (e->st == KR_EV_SUSPENDED) {
        if (!th->qrq || !tw_query_aside(th, e, end)) tw_ts_resume(th, e);
    } else {
        tw_process(th, e);
    }
    if (th->fast) tw_safe_burst(th, end);
    tw_post_turn(th);
}

/* A thread's share of the end of the run: once all have left their loops, the last
 * horizon (and a committed error's), then its history and pools. */
static void tw_thread_epilogue(struct tw_thread *th)
{
    tw_stop_together(th);
    tw_commit_before_error(th);
    tw_release_all(th);
    if (th->sched_fd >= 0) close(th->sched_fd);
    free(th->qerr);
    th->qerr = NULL;
    kr__pool_flush(th->pool);
}

static void tw_worker_end(struct tw_thread *th)
{
    tw_thread_epilogue(th);
    if (th->g->net.on && kr__xport_flush(&th->g->net.x, th->id)) /* (ranks.c: tw_rank_end) */
        kr__die("MPI failed while a worker sent its last messages; the run cannot go on");
    tw_ts_thread_end(th);
    kr__fault_thread_fini();
    struct tw_global *g = th->g;
    if (atomic_fetch_sub_explicit(&g->running, 1, memory_order_release) == 1) {
        pthread_mutex_lock(&g->end_mu);
        pthread_cond_signal(&g->end_cv);
        pthread_mutex_unlock(&g->end_mu);
    }
}

static void *tw_worker(void *arg)
{
    struct tw_thread *th = arg;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    unsigned lr, ls; /* (the other ranks' workers on this machine count too) */
    kr__local_ranks(&lr, &ls);
    bool over = ncpu > 0 && ls * th->g->n > (unsigned)ncpu;
    th->over = over;
    /* (without a lookahead the clocks stand still; sharing cores, a write per turn is a
     * line handed between threads that take turns on one core) */
    th->clock_eager = th->g->lookahead > 0 && !over;
    tw_worker_start(th);
    const kr_time end = th->r->cfg->end;
    unsigned spins = 0, turns = 0;
    for (;;) {
        if (th->retired) {
            if (!tw_retired_turn(th)) break;
            continue;
        }
        if (!tw_platform_turn(th)) break;
        struct kr__ev *e = tw_turn_top(th);
        if (e && e->k.ts < end && tw_may_run(th, e)) {
            tw_run_top(th, e, end);
            spins = 0;
            /* (lone bursts are long, and their length changes: by their clock) */
            if (++turns >= th->every ||
                (th->lone.on && th->lone.t - th->turns_t0 >= TW_EVERY_NS)) {
                tw_housekeeping(th, over, turns);
                turns = 0;
            }
        } else {
            th->cnt->throttled += e && e->k.ts < end;
            if (tw_bounds(th)) tw_clock_publish(th, e, true);
            tw_idle(th, &spins, over);
        }
    }
    tw_worker_end(th);
    return NULL;
}

static bool tw_page_tracked(const struct kr__run *r)
{
    return kr__state_ops(r->state_mode)->by_pages;
}

static void tw_setup_threads(struct kr__run *r, struct tw_global *g)
{
    for (unsigned t = 0; t < g->n; t++) {
        struct tw_thread *th = &g->th[t];
        memset(th, 0, sizeof *th);
        th->id = t;
        th->r = r;
        th->g = g;
        th->pool = &r->pools[t];
        th->cnt = &r->counters[t];
        kr_lp lo = r->lo + kr__block_first(t, r->hi - r->lo, g->n),
              hi = r->lo + kr__block_first(t + 1, r->hi - r->lo, g->n);
        th->nlps = hi - lo;
        for (kr_lp id = lo; id < hi; id++) {
            g->owner[tw_lidx(g, id)] = g->target[tw_lidx(g, id)] = (uint16_t)t;
            g->lvt[tw_lidx(g, id)] = -INFINITY;
        }
        atomic_init(&g->mem[t].events, 0);
        atomic_init(&g->mem[t].ckpts, 0);
        atomic_init(&g->mem[t].pending, 0);
        atomic_init(&th->cpu_share, -1.0);
        atomic_init(&th->rq_shared, 0);
        atomic_init(&th->wants_back, 0);
        th->bal_weight = TW_WEIGHT_FULL;
        th->min_sent = kr__key_at(INFINITY);
        th->ckpt_interval = g->ckpt_auto ? TW_CKPT_AUTO_START : r->cfg->tw.ckpt_interval;
        /* (done() decides the end only later; queries need the bounds, and run no safe
         * event: tw_is_safe) */
        th->fast = (r->cfg->tw.safe_events && !r->model->done) || g->queries;
        th->qfull = kr__key_at(-INFINITY);
        th->alone = g->n == 1 && !g->net.on;
        th->bundles = r->bundles;
        th->queries = g->queries;
        th->plain = !th->bundles && !g->queries && !g->lazy && !g->net.on;
        th->lone.ok = th->plain && !g->check && !g->open_pages && !kr__trace_run;
        th->lone.max = TW_SAFE_BURST;
        tw_window_init(th, r->cfg->tw.window);
        th->safe = th->safe_prev = th->clock_sent = th->fast_hi = -INFINITY;
        th->qbound = kr__key_at(-INFINITY);
        th->qseq = 1; /* (void until first written) */
        th->qtop_max = -INFINITY;
        th->qlast = UINT64_MAX;
        th->clock_turn = TW_CLOCK_TURNS - 1; /* the first turn publishes */
        th->post_every = th->net_every = 1; /* (until the turns are timed) */
        th->every = 1;
        atomic_init(&g->clock[t].bits, kr__time_bits(-INFINITY));
        atomic_init(&g->clock[t].now_bits, kr__time_bits(-INFINITY));
        atomic_init(&g->clock[t].seq, 1);
        atomic_init(&g->clock[t].top_gen, 0);
        atomic_init(&g->clock[t].top_bits, kr__time_bits(-INFINITY));
        atomic_init(&g->clock[t].sent, 0);
        atomic_init(&g->clock[t].taken, 0);
        atomic_init(&g->clock[t].rbits, kr__time_bits(-INFINITY));
        atomic_init(&g->qline[t].in, NULL);
        atomic_init(&g->qline[t].tie, 0);
        atomic_init(&g->qline[t].src, 0);
        atomic_init(&g->qline[t].seq, 0);
        atomic_init(&g->qline[t].wait_bits, kr__time_bits(INFINITY));
        th->qwait = th->qwait_own = INFINITY;
        th->rbuf_min = INFINITY;
        th->stamp_last = -INFINITY;
        th->last_ts = -INFINITY;
        kr__heap_init(&th->heap);
        kr__blobs_init(&th->blobs);
        pthread_mutex_init(&th->sink.mu, NULL);
        th->sink.upto = kr__key_at(-INFINITY);
        th->applied = kr__key_at(-INFINITY);
        kr__arrivals_init(&g->arr[t]);
        for (unsigned from = 0; from < g->n; from++)
            kr__chan_init(tw_chan(g, from, t), g->chan_slots);
        th->post = malloc(g->n * sizeof *th->post);
        if (!th->post) kr__fatal_oom("channels", g->n * sizeof *th->post);
    }
}

/* Init runs on the calling thread in LP order (virtual time -inf is committed at once). */
static void tw_init_lps(struct kr__run *r, struct tw_global *g)
{
    for (kr_lp id = r->lo; id < r->hi; id++) {
        kr__lp_setup(r, id);
        tw_lp_of(kr__lp_at(r, id))->id = (uint32_t)id;
    }
    for (unsigned t = 0; t < g->n; t++) {
        struct tw_thread *th = &g->th[t];
        kr__ctx.ops = &tw_ops;
        kr__ctx.eng = th;
        kr__ctx.pool = th->pool;
        for (kr_lp id = r->lo; id < r->hi; id++) {
            if (g->owner[tw_lidx(g, id)] != t) continue;
            kr__lp_run_init(r, id);
            tw_flush_local(th); /* same-thread sends of init */
            /* Page tracking: its base checkpoint at once, which closes its pages, so they
             * merge into one kernel mapping with the rest instead of every LP's open pages
             * counting against vm.max_map_count until all have run init. Otherwise its
             * first event takes the first checkpoint (when it is not safe): checkpoints
             * taken here would lie between the LPs' states in memory, and states spread
             * over twice the address range missed in cache twice as often (airport, 4096
             * LPs, 1 thread: stalls on the first state access 4x the sequential engine's). */
            struct kr__lp *lp = kr__lp_at(r, id);
            if (tw_page_tracked(r)) tw_take_ckpt(th, lp, NULL);
            else tw_lp_of(lp)->since_ckpt = TW_CKPT_NOW;
            th->ndone += lp->done_init;
        }
    }
    /* Init sends to other threads went into channels (their backlogs, past a ring's
     * room); move them in now. */
    for (bool left = true; left;) {
        left = false;
        for (unsigned t = 0; t < g->n; t++) left |= tw_post_publish(&g->th[t]) & KR_CHAN_KEPT;
        for (unsigned t = 0; t < g->n; t++) {
            kr__ctx.eng = &g->th[t];
            kr__ctx.pool = g->th[t].pool;
            tw_drain(&g->th[t]);
        }
    }
    for (unsigned t = 0; t < g->n; t++) {
        g->th[t].min_sent = kr__key_at(INFINITY);
        g->th[t].max_done_committed = kr__key_at(-INFINITY);
    }
}

/* The calling thread prints committed output and the progress line while workers run; a
 * thread ending the run on an error prints what is committed too (tw_salvage), hence the
 * lock around the whole of it. */
static void tw_emit_committed(void *arg, const struct kr__outrec *o)
{
    struct tw_global *g = arg;
    struct kr__run *r = g->r;
    if (!(o->part & KR_OUT_RECORD)) {
        kr__emit_direct(&(struct kr__ctx){ .run = r }, o->text, o->len); /* (counted) */
        return;
    }
    /* (a hook's error is the run's at the record's event - the others have committed
     * without one -, and output stops there: kr__out_closed) */
    if (kr__out_closed || kr__record_deliver(r, o->k.ts, o->text, o->len, true)) return;
    tw_fail_at_commit(g, r->fail.msg, &o->k);
    r->fail = (struct kr__error){ 0 };
}

void tw_print_committed(struct tw_global *g, bool all)
{
    if (g->net.on && g->net.rank) return; /* (rank 0 prints: tw_rank_output) */
    pthread_mutex_lock(&g->print_mu);
    struct kr__key upto = kr__key_at(INFINITY);
    struct kr__outvec v = { 0 };
    for (unsigned t = 0; t < g->n; t++) {
        struct kr__outsink *s = &g->th[t].sink;
        pthread_mutex_lock(&s->mu);
        if (kr__key_lt(&s->upto, &upto)) upto = s->upto;
        kr__outvec_move_before(&s->v, &(struct kr__key){ INFINITY, UINT32_MAX, 0, UINT64_MAX,
                                                         UINT64_MAX }, &v);
        pthread_mutex_unlock(&s->mu);
    }
    if (all) upto = (struct kr__key){ INFINITY, UINT32_MAX, 0, UINT64_MAX, UINT64_MAX };
    if (g->net.on) upto = tw_rank_print_upto(g, &v, upto); /* (the other ranks' output) */
    pthread_mutex_lock(&g->err_mu);
    if (g->err) { /* nothing after an error (the failed event's own output, yes) */
        struct kr__key past = g->err_key;
        past.seq++;
        if (kr__key_lt(&past, &upto)) upto = past;
    }
    pthread_mutex_unlock(&g->err_mu);
    kr__outvec_emit_before(&v, &upto, tw_emit_committed, g);
    /* what is not printable yet goes back to thread 0's sink, to be merged next time */
    if (v.n) {
        struct kr__outsink *s = &g->th[0].sink;
        pthread_mutex_lock(&s->mu);
        kr__outvec_move_before(&v, &(struct kr__key){ INFINITY, UINT32_MAX, 0, UINT64_MAX,
                                                      UINT64_MAX }, &s->v);
        pthread_mutex_unlock(&s->mu);
    }
    kr__outvec_free(&v);
    kr__stdout_flush();
    pthread_mutex_unlock(&g->print_mu);
}

/* The run dies (a timeout, exit() or abort() in an event, a crash): print what was
 * committed, as the sequential engine has by then. */
static void tw_salvage(void *arg)
{
    tw_print_committed(arg, false);
}

/* A watcher loop that took this long means the process was stopped (or the machine
 * suspended): the time does not count towards --event-timeout of events on stacks. */
#define TW_PAUSE_NS (500u * 1000 * 1000)

/* An interrupted run stops at a committed point in time that lies past every safe event run
 * so far (committed at once, they cannot be rolled back): first every worker turns safe
 * events off and reports its latest; a GVT round past them all stops the run (gvt.c). */
static void tw_stop_request(struct tw_global *g)
{
    if (g->net.on) atomic_store(&g->net.want_stop, true); /* (all ranks, by a GVT round) */
    else atomic_store_explicit(&g->stopping, 1, memory_order_relaxed);
}

/* The watcher's pause between looks: 10 ms, or until the last worker is out (a plain sleep
 * made every run end up to 10 ms late: 1.5% of a 0.7-s run). */
static void tw_watch_wait(struct tw_global *g)
{
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    at.tv_nsec += 10 * 1000 * 1000;
    if (at.tv_nsec >= 1000000000) at.tv_sec++, at.tv_nsec -= 1000000000;
    pthread_mutex_lock(&g->end_mu);
    while (atomic_load_explicit(&g->running, memory_order_acquire) > 0 &&
           pthread_cond_timedwait(&g->end_cv, &g->end_mu, &at) == 0) {}
    pthread_mutex_unlock(&g->end_mu);
}

static void tw_watch(struct kr__run *r, struct tw_global *g)
{
    struct kr__progress prog;
    kr__progress_start(&prog, r);
    bool others = g->net.on && g->net.rank; /* (rank 0 shows the progress and prints) */
    if (others) prog.on = false;
    uint64_t last = kr__clock_ns();
    while (atomic_load_explicit(&g->running, memory_order_acquire) > 0) {
        tw_watch_wait(g);
        uint64_t now = kr__clock_ns();
        if (now - last > TW_PAUSE_NS) /* a 10 ms sleep took far longer: we stood still */
            atomic_fetch_add_explicit(&g->paused_ns, now - last, memory_order_relaxed);
        last = now;
        if (kr__interrupted()) tw_stop_request(g);
        if (others) tw_rank_output(g, false);
        else tw_print_committed(g, false);
        kr__progress_tick(&prog, tw_gvt(g));
        for (unsigned t = 0; t < g->n; t++)
            kr__watch_poll(&g->th[t].watch, r, r->cfg->tw.preempt == KR_PREEMPT_OFF ?
                           " (with --preempt off an event cannot be preempted: if it loops only "
                           "on a wrong speculative path, --preempt return or tick breaks the "
                           "loop)" :
                           " (it ran on the worker's stack, where events shorter than 5 us on "
                           "average run under --preempt adaptive: --preempt return or tick "
                           "preempts every event)");
    }
    kr__progress_stop(&prog);
}

/* The engine's shared part, before the threads are set up. */
static struct tw_global *tw_global_new(struct kr__run *r)
{
    struct tw_global *g = calloc(1, sizeof *g);
    if (!g) kr__fatal_oom("engine", sizeof *g);
    g->r = r;
    g->n = r->nthreads;
    g->th = aligned_alloc(64, g->n * sizeof *g->th);
    g->chan = aligned_alloc(64, (size_t)g->n * g->n * sizeof *g->chan);
    g->arr = aligned_alloc(64, g->n * sizeof *g->arr);
    g->clock = aligned_alloc(64, g->n * sizeof *g->clock);
    g->mem = aligned_alloc(64, g->n * sizeof *g->mem);
    g->qline = aligned_alloc(64, g->n * sizeof *g->qline);
    if (!g->th || !g->chan || !g->arr || !g->clock || !g->mem || !g->qline)
        kr__fatal_oom("worker threads", (size_t)g->n * g->n * sizeof *g->chan);
    g->lo = r->lo;
    g->nlocal = r->hi - r->lo;
    g->owner = malloc(g->nlocal * sizeof *g->owner);
    g->target = malloc(g->nlocal * sizeof *g->target);
    g->lvt = malloc(g->nlocal * sizeof *g->lvt);
    if (!g->owner || !g->target || !g->lvt)
        kr__fatal_oom("LP tables", g->nlocal * (2 * sizeof *g->owner + sizeof *g->lvt));
    g->queries = r->model->query != NULL;
    /* (queries: LPs stay where they are - a query finds its LP's thread by the table) */
    g->balance = g->queries ? KR_BALANCE_OFF : r->cfg->tw.balance;
    /* (--balance storm, a test mode, also fills channels: backlogs in every move) */
    g->chan_slots = g->balance == KR_BALANCE_STORM ? TW_STORM_SLOTS : KR_CHAN_SLOTS;
    g->storm = r->cfg->seed;
    atomic_init(&g->active, g->n);
    g->trial_nact = g->n;
    g->period_ns = (uint64_t)(r->cfg->tw.gvt_period_ms * 1e6);
    g->ckpt_auto = r->cfg->tw.ckpt_interval == 0;
    const struct kr__state_ops *m = kr__state_ops(r->state_mode);
    g->ckpt_full_every = m->incremental ? r->cfg->tw.ckpt_full_every : 1;
    g->chained = m->incremental;
    g->lazy = r->cfg->tw.cancel == KR_CANCEL_LAZY;
    g->open_pages = m->open_pages;
    g->round_events = TW_ROUND_EVENTS;
    g->check = r->cfg->check;
    g->horizon = kr__key_at(-INFINITY);
    g->gvt = kr__key_at(-INFINITY);
    atomic_init(&g->gvt_bits, kr__time_bits(-INFINITY));
    pthread_mutex_init(&g->err_mu, NULL);
    pthread_mutex_init(&g->print_mu, NULL);
    pthread_mutex_init(&g->end_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->end_cv, &ca);
    pthread_condattr_destroy(&ca);
    atomic_init(&g->last_round_ns, kr__clock_ns());
    g->bal_start_ns = kr__clock_ns();
    kr__snapshot_first(r, &g->snap_at, &g->snap_wall);
    return g;
}

/* After the run: what the summary needs, then everything freed. */
static void tw_global_end(struct kr__run *r, struct tw_global *g)
{
    r->end_key = g->horizon;
    /* (interrupted: the last horizon is a time, gvt.c stop_point) */
    kr__run_ended(r, g->by_done, g->horizon.ts);
    r->final_gvt = tw_gvt(g);
    r->migrations = g->th[0].cnt->migrations;
    r->balance_retired = g->cnt_retired;
    r->balance_back = g->cnt_back;
    r->balance_trials = g->cnt_trials;
    r->balance_undone = g->cnt_undone;
    r->balance_shares = g->cnt_part;
    r->balance_shares_kept = g->cnt_part_kept;
    for (unsigned t = 0; t < g->n; t++) {
        struct tw_thread *th = &g->th[t];
        th->cnt->pool_bytes = th->pool->bytes;
        th->cnt->ckpt_peak_bytes = th->blobs.peak;
        th->cnt->ckpt_interval_final = th->ckpt_interval;
        th->cnt->window_final = th->win.limit;
        kr__heap_destroy(&th->heap);
        kr__bundle_free(&th->bund);
        kr__bundle_free(&th->cbund);
        free(th->sendback);
        kr__blobs_destroy(&th->blobs);
        kr__outvec_free(&th->sink.v);
        free(th->work);
        free(th->dirty);
        free(th->open);
        free(th->mig);
        free(th->post);
    }
    tw_rank_free(g); /* (the threads' remote-id maps) */
    free(g->th);
    free(g->chan);
    free(g->arr);
    free(g->clock);
    free(g->mem);
    free(g->qline);
    free(g->owner);
    free(g->target);
    free(g->lvt);
    free(g->moves);
    free(g->err);
    pthread_cond_destroy(&g->end_cv);
    free(g);
}

struct tw_init_arg {
    struct kr__run *r;
    struct tw_global *g;
};

static void tw_init_body(void *arg)
{
    struct tw_init_arg *a = arg;
    tw_init_lps(a->r, a->g);
    if (a->r->cfg->memory_max) tw_memory_init(a->g);
}

/* The run's failure, if a committed event failed: the lowest key's error (across ranks,
 * the rank that has it reports it; the others fail quietly: kr__net.defer). */
static int tw_failure(struct kr__run *r, const struct tw_global *g)
{
    bool other = g->net.on && !isinf(g->net.err.ts) &&
                 (!g->err || kr__key_cmp(&g->err_key, &g->net.err) != 0);
    if (other) {
        kr__net.defer = true;
        return kr__fail(&r->fail, KR_ERR_MODEL, "a model error on another rank, which "
                        "printed it");
    }
    if (!g->err) return KR_OK;
    return kr__fail(&r->fail, KR_ERR_MODEL, "%s", g->err);
}

/* init runs here, in LP order, on this thread: a model error in it is the run's (no
 * worker has started; what the threads were given is freed). Across ranks, ranks but 0
 * keep init's output for rank 0 to print in rank order, and all agree whether to go on. */
static int tw_init_all(struct kr__run *r, struct tw_global *g)
{
    char *out = NULL;
    size_t len = 0;
    if (g->net.on && g->net.rank) kr__emit_file = open_memstream(&out, &len);
    int st = kr__guarded(r, tw_init_body, &(struct tw_init_arg){ r, g });
    if (kr__emit_file) fclose(kr__emit_file);
    kr__emit_file = NULL;
    if (g->net.on) st = tw_rank_started(r, out, len, st);
    free(out);
    return st;
}

/* One worker in one process has no straggler to fear - nothing can arrive below its LPs'
 * times - so it needs no checkpoint, history, antimessage or GVT: it runs the sequential
 * engine's core, which commits the same history, at the sequential engine's cost (issue
 * 36, 2). Not under --safe off or --check, which ask for the optimistic machinery itself,
 * nor in a tracked state mode, whose region is laid out for its checkpoints; nor with
 * KAIROS_TEST_TIME_WARP=1, which keeps the Time Warp path (its lone bursts) for the tests
 * and benchmarks of that path - production reaches it when the balancer leaves one worker
 * with every LP. */
static bool tw_alone(const struct kr__run *r)
{
    const struct kr__config *cfg = r->cfg;
    const char *keep = getenv("KAIROS_TEST_TIME_WARP");
    return r->nthreads == 1 && kr__net.size <= 1 && cfg->tw.safe_events && !cfg->check &&
           !kr__state_ops(r->state_mode)->region && !(keep && !strcmp(keep, "1"));
}

static int tw_run_alone(struct kr__run *r)
{
    int st = kr__seq_engine.run(r);
    r->counters[0].safe = r->counters[0].committed; /* (each committed as it ran) */
    r->alone = true;
    return st;
}

static int tw_run(struct kr__run *r)
{
    if (r->model->query && r->bundles)
        return kr__fail(&r->fail, KR_ERR_USAGE, "model '%s' answers queries and has "
                        "KR_MODEL_BUNDLES: the optimistic engine does not run the two together "
                        "yet (an event that asks runs alone, a bundle does not); run it with "
                        "--sync sequential", r->model->name);
    if (tw_alone(r)) return tw_run_alone(r);
    struct tw_global *g = tw_global_new(r);
    if (r->cfg->tw.preempt != KR_PREEMPT_OFF) kr__tick_install((const void *)r->model->event);
    tw_rank_setup(g);
    tw_setup_threads(r, g);
    int st = tw_init_all(r, g);
    if (st) {
        tw_global_end(r, g);
        return st;
    }
    kr__set_salvage(tw_salvage, g);
    g->fast_threads = g->th[0].fast ? g->n : 0;
    tw_clock_start(g);
    atomic_store(&g->running, g->n);
    for (unsigned t = 0; t < g->n; t++)
        kr__thread_start_or_die(&g->th[t].tid, tw_worker, &g->th[t], r->cfg->stack_kb,
                                "a worker");
    tw_watch(r, g);
    for (unsigned t = 0; t < g->n; t++) pthread_join(g->th[t].tid, NULL);
    kr__set_salvage(NULL, NULL);
    if (g->net.on) {
        if (g->net.rank) tw_rank_output(g, true);
        tw_rank_end(r, g);
        tw_rank_stats(r, g);
    }
    tw_print_committed(g, g->err == NULL);
    for (kr_lp id = g->lo; r->lpstat && id < g->lo + g->nlocal; id++) /* (--lp-stats) */
        r->lpstat[id - r->lo].thread = g->owner[tw_lidx(g, id)];
    st = tw_failure(r, g);
    tw_global_end(r, g);
    return st;
}

/* Test seam (tests/unit/test_tw.c): the engine's threads stepped by hand from the calling
 * thread, so that a test chooses how they interleave. tw_test_step runs one event with
 * nothing of the worker loop around it (no GVT); tw_test_turn is one whole turn of the loop
 * (arrivals, GVT, one event), with a turn that finds nothing to run publishing its channels
 * as an idle worker does, but never sleeping. */
struct tw_global *tw_test_start(struct kr__run *r, unsigned chan_slots)
{
    struct tw_global *g = tw_global_new(r);
    if (chan_slots) g->chan_slots = chan_slots;
    tw_setup_threads(r, g);
    tw_init_lps(r, g);
    g->fast_threads = g->th[0].fast ? g->n : 0;
    tw_clock_start(g);
    atomic_store(&g->running, g->n);
    for (unsigned t = 1; t < g->n; t++) g->th[t].sched_fd = -1;
    g->seam = true; /* (a test sends stragglers from outside: never alone) */
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

bool tw_test_turn(struct tw_thread *th)
{
    tw_test_use(th);
    if (!tw_platform_turn(th)) return false;
    struct kr__ev *e = tw_turn_top(th);
    if (e && e->k.ts < th->r->cfg->end && tw_may_run(th, e)) {
        tw_run_top(th, e, th->r->cfg->end);
        if ((th->cnt->processed & 255) == 0) tw_housekeeping(th, false, 256);
    } else { /* (as tw_idle, without its spinning and sleeping) */
        th->cnt->throttled += e && e->k.ts < th->r->cfg->end;
        if (th->fast) tw_clock_publish(th, e, true);
        if (th->npost) tw_post_publish(th);
        tw_gvt_maybe_start(th, th->uncommitted > 0);
    }
    return true;
}

/* The end of every thread's run (the loop's epilogue; the others are stepped by this
 * thread, so none waits for them), then the engine's. */
void tw_test_end(struct kr__run *r, struct tw_global *g)
{
    atomic_store(&g->left, g->n - 1);
    for (unsigned t = 0; t < g->n; t++) {
        tw_test_use(&g->th[t]);
        tw_thread_epilogue(&g->th[t]);
    }
    tw_ts_thread_end(&g->th[0]); /* (tw_worker_start's ticks and stacks: a tick left armed */
    kr__fault_thread_fini();      /* kills the test once its handler is gone) */
    tw_print_committed(g, g->err == NULL);
    tw_global_end(r, g);
}

static unsigned tw_default_threads(unsigned ncpu)
{
    return ncpu;
}

/* ThreadSanitizer delivers asynchronous signals only at its own interception points and
 * does not follow a stack switch made inside a signal handler: time-sharing cannot run in a
 * ThreadSanitizer build (AddressSanitizer builds run it). */
static int tw_validate(const struct kr__config *cfg, struct kr__error *err)
{
#if defined(KR_TSAN)
    if (cfg->tw.preempt != KR_PREEMPT_OFF)
        return kr__fail(err, KR_ERR_USAGE, "--preempt %s is not available in a ThreadSanitizer "
                        "build (it defers signals); use --preempt off, or a normal build",
                        kr__preempt_name(cfg->tw.preempt));
#else
    (void)cfg;
    (void)err;
#endif
    return KR_OK;
}

const struct kr__engine kr__tw_engine = {
    .lp_extra = sizeof(struct tw_lp),
    .name = "optimistic",
    .restores_state = true,
    .default_threads = tw_default_threads,
    .threads = kr__engine_workers,
    .validate = tw_validate,
    .run = tw_run,
    .summary = tw_summary,
    .json = tw_json,
};
