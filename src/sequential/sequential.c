/* sequential.c - the reference engine: one thread, one future-event set, every event
 * committed the moment it runs. Every other engine must reproduce its run digest. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/bundle.h"
#include "base/clock.h"
#include "core/core.h"
#include "base/error.h"
#include "core/interrupt.h"
#include "core/snapshot.h"
#include "core/watchdog.h"
#include "queue/heap.h"
#include "sequential/recheck.h"
#include "state/arena.h"
#include "core/progress.h"

struct seq {
    struct kr__heap heap;
    struct kr__recheck *check;   /* --check: run every event twice and compare */
    struct kr__watch watch;      /* --event-timeout */
    struct kr__bundle bundle;    /* bundles: the one being run (core/bundle.h) */
    /* Queries (a model with a query handler): the running LP's state before its event,
     * which a query reaching that LP sees (taken before every event: a state copy each). */
    struct kr__blobs blobs;
    struct kr__ckpt *pre;        /* NULL: no event running, or a model without queries */
    kr_lp running;               /* the LP whose event runs */
    bool swapped;                /* its state in memory is `pre` now (a query is answered) */
    struct kr__ckpt *mid;        /* ...and its state mid-event, and its write marks (--check),
                                  * kept here so that a model error in the answer, which
                                  * unwinds past seq_query, leaks neither (seq_free) */
    uint64_t *mid_dirty;
    kr_time snap_at;             /* --snapshot: the next before the first event at or after
                                  * this time (-inf: before the next event; +inf: none)... */
    uint64_t snap_wall;          /* ...or once the wall clock passes this (ns: UINT64_MAX,
                                  * none), looked at every 64 events */
    uint64_t snap_tick;
    struct kr__recbuf rec;       /* the running event's kr_commit records */
};

static void seq_send(struct kr__ctx *c, struct kr__ev *e)
{
    struct seq *s = c->eng;
    if (s->check && c->mode == KR_MODE_EVENT) {
        kr__recheck_capture_send(s->check, e);
        return;
    }
    e->st = KR_EV_PENDING;
    kr__heap_push(&s->heap, e);
}

/* ...without --check: the event is pending at once. */
static void seq_send_plain(struct kr__ctx *c, struct kr__ev *e)
{
    struct seq *s = c->eng;
    e->st = KR_EV_PENDING;
    kr__heap_push(&s->heap, e);
}

static void seq_emit(struct kr__ctx *c, const char *text, size_t len)
{
    struct seq *s = c->eng;
    if (s->check && c->mode == KR_MODE_EVENT) kr__recheck_capture_text(s->check, text, len);
    else kr__emit_direct(c, text, len);
}

/* An event's records reach the commit hook once it has run (the event commits as it ends),
 * after its text, as on every engine. A metric's value is reduced at once: this event
 * commits, in key order, and the reduction prints nothing (so a model with metrics and no
 * hook keeps the lean loop); under --check, after the checked run, like the others. */
static void seq_record(struct kr__ctx *c, uint64_t tag, const void *data, size_t size)
{
    struct seq *s = c->eng;
    if (tag == KR_REC_METRIC && !s->check) {
        struct kr__mrec m;
        memcpy(&m, data, sizeof m);
        kr__metric_add(c->run->metrics, c->now, &m);
        return;
    }
    kr__recbuf_add(s->check && c->mode == KR_MODE_EVENT ? &s->check->rec : &s->rec, tag,
                   data, size);
}

/* The checked run of one event: deliver and print what its second execution produced. */
static void seq_run_checked(struct kr__run *r, struct seq *s, struct kr__lp *lp, struct kr__ev *e)
{
    struct kr__recheck *c = s->check;
    kr__recheck_event(c, r, lp, e);
    for (size_t i = 0; i < c->nsent; i++) {
        c->sent[i]->st = KR_EV_PENDING;
        kr__heap_push(&s->heap, c->sent[i]);
    }
    if (c->nout) kr__emit_direct(&kr__ctx, c->out, c->nout); /* (counted: snapshots) */
    if (c->rec.n) kr__recbuf_deliver(r, &c->rec, e->k.ts);
}

/* --check --state chunk: the written-chunk bits of lp's areas, kept across a swap (which
 * restarts them) so that the event's writes before its query are still checked. */
static uint64_t *seq_dirty_save(const struct kr__lp *lp)
{
    const struct kr__arena *a = &lp->arena;
    if (!kr__arena_marks(a)) return NULL;
    size_t words = 0;
    for (uint32_t i = 0; i < a->n; i++) words += KR_AREA_NWORDS(kr__arena_area(a, i));
    uint64_t *d = malloc(words * sizeof *d + 1), *o = d;
    if (!d) kr__fatal_oom("--check marks", words * sizeof *d);
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        memcpy(o, KR_AREA_DIRTY(ar), KR_AREA_NWORDS(ar) * sizeof *o);
        o += KR_AREA_NWORDS(ar);
    }
    return d;
}

static void seq_dirty_load(struct kr__lp *lp, uint64_t *d)
{
    if (!d) return;
    const uint64_t *o = d;
    for (uint32_t i = 0; i < lp->arena.n; i++) {
        struct kr__area *ar = kr__arena_area(&lp->arena, i);
        memcpy(KR_AREA_DIRTY(ar), o, KR_AREA_NWORDS(ar) * sizeof *o);
        o += KR_AREA_NWORDS(ar);
    }
    free(d);
}

/* A query reaching the asking LP itself: its state before the event swapped in (the one
 * it has now kept aside)... */
static void swap_in(struct seq *s, struct kr__lp *lp)
{
    s->mid_dirty = seq_dirty_save(lp);
    s->mid = kr__lp_snapshot(&s->blobs, lp);
    kr__lp_restore(lp, s->pre);
    s->swapped = true;
}

/* ...and back after the answer. */
static void swap_out(struct seq *s, struct kr__lp *lp)
{
    s->swapped = false;
    kr__lp_restore(lp, s->mid);
    kr__ckpt_release(&s->blobs, s->mid);
    seq_dirty_load(lp, s->mid_dirty);
    s->mid = NULL;
    s->mid_dirty = NULL;
}

/* kr_query: every other LP's state in memory is the one at the asking event (all earlier
 * events ran, no later one); the running LP's is mid-event, so its state before the event
 * is swapped in for the answer, and back. */
static size_t seq_query(struct kr__ctx *c, kr_lp dest, const void *q, size_t size, void *ans,
                        size_t cap)
{
    struct seq *s = c->eng;
    struct kr__lp *lp = kr__lp_at(c->run, dest);
    bool swap = s->pre && dest == s->running && !s->swapped;
    if (swap) swap_in(s, lp);
    bool opened = kr__recheck_reach(c->run, dest, true); /* (--check: within reach) */
    size_t n = kr__query_answer(c, dest, q, size, ans, cap);
    if (opened) kr__recheck_reach(c->run, dest, false);
    c->run->counters[0].q.answered++;
    if (swap) swap_out(s, lp);
    return n;
}

/* Every event commits as it runs: output and errors take effect at once (a model error
 * is the run's: no fail hook). */
static const struct kr__engine_ops seq_ops = { seq_send, seq_emit, NULL, seq_query,
                                               seq_record };
static const struct kr__engine_ops seq_ops_plain = { seq_send_plain, kr__emit_direct, NULL,
                                                     seq_query, seq_record };

/* ...running a lone worker of the windows scheme, which reads spans (kr__promises). */
static void seq_send_span(struct kr__ctx *c, struct kr__ev *e)
{
    if (!kr__span_refused(c, e)) seq_send_plain(c, e);
}

static const struct kr__engine_ops seq_ops_span = { seq_send_span, kr__emit_direct, NULL,
                                                    seq_query, seq_record };

/* Bundles: the rest of e's bundle, which the key put next in the set. */
static void seq_gather(struct kr__run *r, struct seq *s, struct kr__ev *e)
{
    kr__bundle_take(&s->bundle, &s->heap, e);
    kr__heap_prefetch_next(&s->heap, r->lp_mem + KR_LP_HOT, r->lp_bytes, 1);
    kr__bundle_enter(&s->bundle);
}

/* --memory-max: what the sequential engine holds is what the run needs (no speculation to
 * give back): over the budget, the run fails. */
static void seq_memory(struct kr__run *r, const struct seq *s, kr_time now)
{
    struct kr__mem m = { kr__pool_in_use(&r->pools[0]), 0,
                         atomic_load_explicit(&kr__area_bytes, memory_order_relaxed),
                         s->heap.n * (size_t)KR_POOL_SMALL_EVENT };
    kr__memory_need(r, &m, now);
}

/* --snapshot: the pending events are the heap; every event before them is committed. */
static void seq_snapshot(struct kr__run *r, struct seq *s, kr_time at)
{
    struct kr__ev **pending = malloc((s->heap.n + 1) * sizeof *pending);
    if (!pending) kr__fatal_oom("a snapshot's event list", s->heap.n * sizeof *pending);
    for (size_t i = 0; i < s->heap.n; i++) pending[i] = kr__heap_ev(&s->heap, i);
    kr__recheck_reach_all(r, true); /* (--check: the snapshot reads every state) */
    kr__snapshot_write(r, pending, s->heap.n, at, NULL);
    kr__recheck_reach_all(r, false);
    free(pending);
    kr__snapshot_next(r, at, &s->snap_at, &s->snap_wall);
}

/* (Wall time is looked at every 64 events: a model of long events, PCS, runs a few
 * thousand in all, and every 4096 would never see a period pass.) */
static inline bool seq_snap_due(struct seq *s, const struct kr__ev *e)
{
    return e->k.ts >= s->snap_at || (s->snap_wall != UINT64_MAX && !(++s->snap_tick & 63) &&
                                     kr__clock_ns() >= s->snap_wall);
}

/* Every 64 events: the memory budget; every 65 536, the progress line's counts. */
static void seq_every_64(struct kr__run *r, const struct seq *s, struct kr__counters *cnt,
                         struct kr__progress *prog, kr_time ts)
{
    if (r->cfg->memory_max) seq_memory(r, s, ts);
    if ((cnt->processed & 0xffff) >= 64) return;
    cnt->committed = cnt->processed;
    kr__counters_publish(cnt);
    kr__progress_tick(prog, ts);
}

/* What a run uses beyond the bare loop, known at set-up: the loop is compiled once with
 * none of it (seq_loop_lean) and once with all of it (seq_loop_full), and the run takes
 * the one it needs, so a model that uses none of these runs none of their tests per
 * event (issue 36). */
enum {
    SEQ_BUNDLES = 1,   /* KR_MODEL_BUNDLES: an event is run with the rest of its bundle */
    SEQ_CHECK = 2,     /* --check: every event twice */
    SEQ_QUERY = 4,     /* a query handler: the LP's state before its event is kept */
    SEQ_DONE = 8,      /* done(): asked after every event */
    SEQ_SNAP = 16,     /* --snapshot-every / --snapshot-seconds */
    SEQ_TRACE = 32,    /* --trace-mode run: spans (a commit trace is the commit's own test) */
    SEQ_COMMIT = 64,   /* a commit hook: the event's records are delivered after it */
    SEQ_ALL = 127
};

static unsigned seq_features(const struct kr__run *r, const struct seq *s)
{
    const struct kr_model *m = r->model;
    return (r->bundles ? SEQ_BUNDLES : 0) | (s->check ? SEQ_CHECK : 0) |
           (m->query ? SEQ_QUERY : 0) | (m->done ? SEQ_DONE : 0) |
           (s->snap_at != INFINITY || s->snap_wall != UINT64_MAX ? SEQ_SNAP : 0) |
           (kr__trace_run ? SEQ_TRACE : 0) | (m->commit ? SEQ_COMMIT : 0);
}

/* One event (or bundle): twice under --check; for a model that answers queries with the
 * LP's state before it kept for a query that reaches the LP. */
static inline __attribute__((always_inline)) void
seq_run_one(struct kr__run *r, struct seq *s, struct kr__lp *lp, struct kr__ev *e,
            const unsigned f)
{
    if (!(f & (SEQ_CHECK | SEQ_QUERY | SEQ_TRACE | SEQ_COMMIT))) {
        kr__run_event_untraced(r, lp, e);
        return;
    }
    if (r->model->query) {
        s->running = e->dest;
        s->pre = kr__lp_snapshot(&s->blobs, lp);
    }
    if (s->check) {
        seq_run_checked(r, s, lp, e);
    } else {
        kr__run_event(r, lp, e);
        if (s->rec.n) kr__recbuf_deliver(r, &s->rec, e->k.ts);
    }
    if (s->pre) {
        kr__ckpt_release(&s->blobs, s->pre);
        s->pre = NULL;
    }
}

/* done() after e (under --check, asked twice and compared). */
static bool seq_done(struct kr__run *r, struct seq *s, struct kr__lp *lp, struct kr__ev *e)
{
    return s->check ? kr__recheck_done(s->check, r, lp, e) : kr__run_done(r, lp, e->dest);
}

/* Event e of lp (or its bundle) run, done() asked, and its LP's state closed again under
 * --check's slices; returns what done() said (false without done()). */
static inline __attribute__((always_inline)) bool
seq_event(struct kr__run *r, struct seq *s, struct kr__lp *lp, struct kr__ev *e,
          const unsigned f)
{
    if ((f & SEQ_BUNDLES) && r->bundles) seq_gather(r, s, e);
    kr__watch_begin(&s->watch, e);
    if (f & SEQ_CHECK) kr__recheck_reach(r, e->dest, true); /* (check_slices) */
    seq_run_one(r, s, lp, e, f);
    bool done = (f & SEQ_DONE) && r->model->done && seq_done(r, s, lp, e);
    if (f & SEQ_CHECK) kr__recheck_reach(r, e->dest, false);
    kr__watch_end(&s->watch);
    return done;
}

/* Commit e (and the rest of its bundle); returns the events committed. */
static inline __attribute__((always_inline)) size_t
seq_commit(struct kr__run *r, struct seq *s, struct kr__lp *lp, struct kr__ev *e,
           const unsigned f)
{
    if (f & SEQ_BUNDLES) return kr__bundle_commit(r, lp, &s->bundle, e, NULL, &r->pools[0]);
    kr__lp_commit_event(lp, e);
    r->end_key = e->k;
    r->end_key.seq++;
    kr__pool_put(&r->pools[0], e);
    return 1;
}

/* The next event to run: the least, if before end. (Interrupted: the events at the last
 * one's time still run, so that what is committed is every event before a time, what
 * --end reproduces.) */
static inline struct kr__ev *seq_next(struct seq *s, kr_time end, kr_time last)
{
    struct kr__ev *e = kr__heap_top(&s->heap);
    if (!e || !(e->k.ts < end) || (e->k.ts > last && kr__interrupted())) return NULL;
    return e;
}

/* done() after an event: the LP's step, and whether every LP is done now. */
static inline __attribute__((always_inline)) bool
seq_all_done(struct kr__run *r, struct kr__lp *lp, bool done, uint64_t *ndone, const unsigned f)
{
    return (f & SEQ_DONE) && r->model->done && kr__lp_done_step(lp, done) && ++*ndone == r->n;
}

/* The loop, for the features in f (a constant in each of its two copies: a feature out of
 * f costs nothing; one in it is still tested, since the full copy serves every run that
 * uses any). Returns true when the run ends because done() holds for every LP. */
static inline __attribute__((always_inline)) bool
seq_loop_with(struct kr__run *r, struct seq *s, uint64_t ndone, struct kr__progress *prog,
              const unsigned f)
{
    struct kr__counters *cnt = &r->counters[0];
    const kr_time end = r->cfg->end;
    struct kr__ev *e;
    kr_time last = -INFINITY;
    while ((e = seq_next(s, end, last))) {
        last = e->k.ts;
        if ((f & SEQ_SNAP) && __builtin_expect(seq_snap_due(s, e), 0))
            seq_snapshot(r, s, e->k.ts);
        kr__lp_prefetch_state(r, e->dest);
        kr__heap_pop(&s->heap);
        kr__heap_prefetch_next(&s->heap, r->lp_mem + KR_LP_HOT, r->lp_bytes, 1);
        struct kr__lp *lp = kr__lp_at(r, e->dest);
        kr__ctx_event(lp, e, KR_MODE_EVENT);
        bool done = seq_event(r, s, lp, e, f);
        kr_time ts = e->k.ts;
        size_t n = seq_commit(r, s, lp, e, f);
        cnt->processed += n;
        if (seq_all_done(r, lp, done, &ndone, f)) return true;
        /* (n events just committed: a count crossing a multiple of 64 ends below n) */
        if (__builtin_expect((cnt->processed & 63) < n, 0))
            seq_every_64(r, s, cnt, prog, ts);
    }
    return false;
}

static bool seq_loop_lean(struct kr__run *r, struct seq *s, uint64_t ndone,
                          struct kr__progress *prog)
{
    return seq_loop_with(r, s, ndone, prog, 0);
}

static bool seq_loop_full(struct kr__run *r, struct seq *s, uint64_t ndone,
                          struct kr__progress *prog)
{
    return seq_loop_with(r, s, ndone, prog, SEQ_ALL);
}

/* The run proper, under kr__guarded: a model error in init, an event or done() unwinds
 * out of it. */
struct seq_body {
    struct kr__run *r;
    struct seq *s;
    struct kr__progress prog;
    bool by_done;
};

static void seq_body(void *arg)
{
    struct seq_body *b = arg;
    struct kr__run *r = b->r;
    uint64_t ndone = kr__lps_init_all(r);
    if (r->cfg->memory_max) seq_memory(r, b->s, 0); /* (init's states and events) */
    r->end_key = kr__key_at(0);
    kr__ctx.mode = KR_MODE_EVENT;
    kr__watch_attach(&b->s->watch, 1);
    kr__progress_start(&b->prog, r);
    bool (*loop)(struct kr__run *, struct seq *, uint64_t, struct kr__progress *) =
        seq_features(r, b->s) ? seq_loop_full : seq_loop_lean;
    kr__recheck_reach_all(r, false); /* (--check: every state out of reach but the running LP's) */
    b->by_done = (r->model->done && ndone == r->n) || loop(r, b->s, ndone, &b->prog);
    if (r->cfg->memory_max) seq_memory(r, b->s, r->end_key.ts); /* (the peaks: the last look) */
}

static void seq_free(struct seq *s)
{
    /* (a model error in an event or an answer unwound past their release: found by
     * fuzz_model, one state copy leaked per failed run of a model with queries) */
    if (s->mid) kr__ckpt_release(&s->blobs, s->mid);
    if (s->pre) kr__ckpt_release(&s->blobs, s->pre);
    free(s->mid_dirty);
    free(s->rec.b);
    kr__heap_destroy(&s->heap);
    kr__bundle_free(&s->bundle);
    kr__blobs_destroy(&s->blobs);
    if (s->check) kr__recheck_destroy(s->check);
}

/* The engine's record before the run (check: --check's, used only under --check). */
static void seq_init(struct kr__run *r, struct seq *s, struct kr__recheck *check)
{
    kr__run_heap_init(r, &s->heap);
    s->bundle = (struct kr__bundle){ 0 };
    s->check = NULL;
    kr__blobs_init(&s->blobs);
    s->pre = s->mid = NULL;
    s->mid_dirty = NULL;
    s->swapped = false;
    kr__snapshot_first(r, &s->snap_at, &s->snap_wall);
    s->snap_tick = 0;
    s->rec = (struct kr__recbuf){ 0 };
    if (r->cfg->check) {
        kr__recheck_init(check, r);
        s->check = check;
    }
}

/* How the run ended, and where: done() everywhere, or the next event's time (interrupted:
 * the loop ran every event at the last one's time). */
static void seq_ended(struct kr__run *r, struct seq *s, bool by_done)
{
    struct kr__ev *top = kr__heap_top(&s->heap);
    kr_time next = top ? top->k.ts : INFINITY;
    kr__run_ended(r, by_done, next);
    r->final_gvt = by_done ? r->end_key.ts : next;
}

static int seq_run(struct kr__run *r)
{
    struct seq s;
    struct kr__recheck check;
    seq_init(r, &s, &check);
    kr__ctx.run = r;
    kr__ctx.ops = s.check ? &seq_ops : r->promise.spans ? &seq_ops_span : &seq_ops_plain;
    kr__ctx.pool = &r->pools[0];
    kr__ctx.eng = &s;
    kr__ctx.notail = true; /* (nothing here reads an event's tail) */
    for (kr_lp id = 0; r->lpstat && id < r->n; id++) r->lpstat[id].thread = 0; /* (one) */
    memset(&s.watch, 0, sizeof s.watch);
    kr__watch_bind(&s.watch);
    struct seq_body b = { .r = r, .s = &s };
    int st = kr__guarded(r, seq_body, &b);
    kr__progress_stop(&b.prog);
    kr__watch_settle(&s.watch);
    kr__watch_attach(NULL, 0);
    kr__ctx.mode = KR_MODE_NONE;
    kr__ctx.notail = false;
    kr__recheck_reach_all(r, true); /* (after the loop, or a model error out of an event) */
    if (st) {
        seq_free(&s);
        return st;
    }
    seq_ended(r, &s, b.by_done);
    r->counters[0].committed = r->counters[0].processed;
    r->counters[0].pool_bytes = r->pools[0].bytes;
    r->counters[0].cpu_ns = kr__thread_cpu_ns(); /* (the run's thread: its set-up too) */
    seq_free(&s);
    return KR_OK;
}

static unsigned seq_default_threads(unsigned ncpu)
{
    (void)ncpu;
    return 1;
}

static unsigned seq_threads(const struct kr__config *cfg, uint64_t lps)
{
    (void)cfg;
    (void)lps;
    return 1;
}

const struct kr__engine kr__seq_engine = {
    .name = "sequential",
    .compact_events = true,
    .default_threads = seq_default_threads,
    .threads = seq_threads,
    .run = seq_run,
};
