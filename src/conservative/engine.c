/* engine.c - the conservative engine (--sync conservative): Horizon's expanded events
 * (paper 003). Every event lasts from its start to its completion (start + duration; the
 * duration is the model's, from kr_schedule_span, else the run's lookahead) and may only
 * schedule events that start at or after its completion. One scheduler thread owns the
 * future-event set and the barrier t_b, the earliest completion among the events offloaded
 * and not yet complete: nothing that could still be scheduled starts before t_b, so the
 * first event of the set may run in parallel with them if it starts before t_b.
 *
 * Determinism: the scheduler takes events in key order, so they are offloaded in key order;
 * the offload test is strict (start < t_b), so an event never runs beside one whose
 * children could tie with it at equal time; an LP runs one event at a time (an event whose
 * LP is busy waits for it); and the effects that order matters for (output, the digest,
 * done(), model errors) are applied when a job retires, in offload order. So the committed
 * history is the sequential engine's.
 *
 * --barriers events replaces the t_b test with the classic scheme: each offloaded event
 * puts a second, barrier event at its completion into the set, and the scheduler blocks
 * when it reaches one until that event has completed. --handoff pull and --scheduler-works
 * are in handoff.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "conservative/cons.h"
#include "base/grow.h"
#include "base/clock.h"
#include "base/error.h"
#include "core/interrupt.h"
#include "core/snapshot.h"
#include "core/progress.h"

extern const struct kr__engine_ops kr__cons_ops;

#define JOBS_PER_CHUNK 256

struct job_chunk {
    struct job_chunk *next;
    struct cons_job jobs[JOBS_PER_CHUNK];
};

/* --offload auto: event types whose events take less than --offload-us (default 2) on
 * average run on the scheduler. Handing an event to a worker and taking its results back
 * costs about 0.5 us here (the null model: 0.22 us an event at one worker against 0.065 us
 * sequentially, half of the events handed out), so a shorter event is done sooner where it
 * is. */
#define CONS_TIME_EVERY 64 /* events of a type timed: the first 16, then one in this many */

static bool timed(struct cons *c, unsigned type)
{
    return c->offload_auto && kr__typetime_due(&c->types, type, 16, CONS_TIME_EVERY);
}

/* One timed run into its type's mean. A sample is counted as at most 4x the threshold, so
 * that one run the OS interrupted does not send a short type out for a thousand events. */
static void fold_time(struct cons *c, const struct cons_job *j)
{
    float x = (float)j->ns < 4 * c->offload_ns ? (float)j->ns : 4 * c->offload_ns;
    kr__typetime_add(&c->types, j->ev->type, x);
}

/* Run e on the scheduler rather than hand it out: its type is known to be short (or the
 * model answers queries: every event runs here). */
static bool run_here(const struct cons *c, const struct kr__ev *e)
{
    if (c->queries) return true;
    float m = kr__typetime_mean(&c->types, e->type);
    return c->offload_auto && m >= 0 && m < c->offload_ns;
}

static struct cons_job *job_new(struct cons *c, struct kr__ev *e)
{
    if (!c->free_jobs) { /* grows with the most jobs ever unretired; never per event */
        struct job_chunk *k = calloc(1, sizeof *k);
        if (!k) kr__fatal_oom("conservative jobs", sizeof *k);
        k->next = c->chunks;
        c->chunks = k;
        for (unsigned i = 0; i < JOBS_PER_CHUNK; i++) {
            k->jobs[i].next = c->free_jobs;
            c->free_jobs = &k->jobs[i];
        }
    }
    struct cons_job *j = c->free_jobs;
    c->free_jobs = j->next;
    j->ev = e;
    j->tc = e->k.ts + e->dur;
    j->refs = c->barrier_events ? 2 : 1;
    j->next = NULL;
    j->timed = timed(c, e->type);
    j->reaped = false;
    atomic_store_explicit(&j->complete, false, memory_order_relaxed);
    return j;
}

static void job_unref(struct cons *c, struct cons_job *j)
{
    if (--j->refs) return;
    j->next = c->free_jobs;
    c->free_jobs = j;
}

static void jobs_free(struct cons *c)
{
    while (c->chunks) {
        struct job_chunk *k = c->chunks;
        c->chunks = k->next;
        for (unsigned i = 0; i < JOBS_PER_CHUNK; i++) {
            free(k->jobs[i].text);
            free(k->jobs[i].rec.b);
            kr__bundle_free(&k->jobs[i].bundle);
            free(k->jobs[i].err); /* (failed jobs are never recycled: the run ends there) */
        }
        free(k);
    }
}

/* The earliest completion among offloaded events not yet complete (+inf: none). */
static kr_time barrier(const struct cons *c)
{
    kr_time tb = INFINITY;
    for (size_t i = 0; i < c->ninflight; i++)
        if (c->inflight[i]->tc < tb) tb = c->inflight[i]->tc;
    return tb;
}

/* A completed job: its time folded, its LP free, its sends into the set (dropped if it
 * failed: the run ends at its error). */
static inline void reap_job(struct cons *c, struct cons_job *j)
{
    j->reaped = true;
    if (j->timed) fold_time(c, j);
    c->lp_busy[j->ev->dest] = 0;
    if (j->err) c->failed = true;
    for (struct kr__ev *e = j->out, *n; e; e = n) {
        n = e->next;
        if (j->err) kr__pool_put(&c->r->pools[0], e);
        else kr__heap_push(&c->heap, e);
    }
    j->out = j->out_tail = NULL;
}

/* Take in every completed job: its LP is free again and its sends join the set. */
static void reap(struct cons *c)
{
    for (size_t i = 0; i < c->ninflight;) {
        struct cons_job *j = c->inflight[i];
        if (!atomic_load_explicit(&j->complete, memory_order_acquire)) {
            i++;
            continue;
        }
        c->inflight[i] = c->inflight[--c->ninflight];
        reap_job(c, j);
    }
}

/* The run dies (a timeout, a fatal model error): print the output of the completed jobs at
 * the head of the retire queue, which the scheduler would have retired next. Only where the
 * scheduler is not changing the queue: on its own thread, or while it is stuck in an event
 * (the watchdog's case). */
static void cons_salvage(void *arg)
{
    struct cons *c = arg;
    bool mine = kr__ctx.eng == &c->w[0];
    if (!mine && !(atomic_load_explicit(&c->watch[0].seq, memory_order_acquire) & 1)) return;
    for (struct cons_job *j = c->retire_head; j; j = j->next) {
        if (!atomic_load_explicit(&j->complete, memory_order_acquire) || j->err) break;
        if (j->ntext) fwrite(j->text, 1, j->ntext, stdout);
    }
}

/* Every 65 536 retired events: the progress line, which reads the published counts (the
 * scheduler publishes the total retired so far, the workers' own counts are summed at
 * the end). */
static void retired_tick(struct kr__counters *cnt, struct kr__progress *prog,
                         const struct kr__ev *e)
{
    atomic_store_explicit(&cnt->pub_committed, cnt->cons.retired, memory_order_relaxed);
    atomic_store_explicit(&cnt->pub_processed, cnt->cons.retired, memory_order_relaxed);
    kr__progress_tick(prog, e->k.ts);
}

/* Apply one completed job, the next in key order: output, digest, done(). The caller
 * recycles the job; the event goes back to its pool. */
static int retire_one(struct cons *c, struct cons_job *j, struct kr__progress *prog)
{
    struct kr__run *r = c->r;
    struct kr__ev *e = j->ev;
    struct kr__lp *lp = kr__lp_at(r, e->dest);
    if (j->ntext) kr__emit_direct(&(struct kr__ctx){ .run = r }, j->text, j->ntext);
    if (j->rec.n) kr__recbuf_deliver(r, &j->rec, e->k.ts);
    kr__bundle_commit(r, lp, &j->bundle, e, e, &r->pools[0]); /* (e: below, once read) */
    if (r->model->done) {
        kr__ctx_event(lp, e, KR_MODE_EVENT); /* (where, should done() break its promise) */
        c->ndone += kr__lp_done_step(lp, j->done_after);
        kr__ctx.mode = KR_MODE_NONE;
    }
    struct kr__counters *cnt = &r->counters[0];
    if (__builtin_expect((++cnt->cons.retired & 0xffff) == 0, 0)) retired_tick(cnt, prog, e);
    kr__pool_put(&r->pools[0], e);
    return r->model->done && c->ndone == r->n ? CONS_RETIRE_DONE : CONS_RETIRE_MORE;
}

/* The earliest unretired job failed: what it printed before the error (as the sequential
 * engine prints it), and the run's error. */
static int retire_failed(struct cons *c, struct cons_job *j)
{
    if (j->ntext) kr__emit_direct(&(struct kr__ctx){ .run = c->r }, j->text, j->ntext);
    j->ntext = 0;
    c->err = j->err;
    return CONS_RETIRE_ERROR;
}

/* Apply completed jobs at the head of the retire queue, in key order. Stops at a job with a
 * model error (CONS_RETIRE_ERROR, the job stays at the head). */
static int retire(struct cons *c, struct kr__progress *prog)
{
    struct cons_job *j;
    while ((j = c->retire_head) && j->reaped) { /* (not `complete`: reap first) */
        if (j->err) return retire_failed(c, j);
        c->retire_head = j->next;
        if (!c->retire_head) c->retire_tail = NULL;
        c->nretire--;
        int rr = retire_one(c, j, prog);
        job_unref(c, j);
        if (rr == CONS_RETIRE_DONE) return rr;
    }
    return CONS_RETIRE_MORE;
}

/* ---- snapshots (--snapshot; the file: core/snapshot.c) ----
 * One is taken with nothing outstanding: once one is due, no event is taken until every
 * job taken has retired; then every event before the set's first is committed, and the set
 * (less --barriers events' barriers) is what is pending. */

static bool snap_due(struct cons *c, const struct kr__ev *e)
{
    if (!c->snap_due)
        c->snap_due = e->k.ts >= c->snap_at ||
                      (c->snap_wall != UINT64_MAX && !(++c->snap_tick & 63) &&
                       kr__clock_ns() >= c->snap_wall);
    return c->snap_due;
}

static void snap_take(struct cons *c, const struct kr__ev *first)
{
    struct kr__ev **pending = malloc((c->heap.n + 1) * sizeof *pending);
    if (!pending) kr__fatal_oom("a snapshot's event list", (c->heap.n + 1) * sizeof *pending);
    size_t n = 0;
    for (size_t i = 0; i < c->heap.n; i++)
        if (!(kr__heap_ev(&c->heap, i)->flags & KR_EVF_BARRIER))
            pending[n++] = kr__heap_ev(&c->heap, i);
    kr__snapshot_write(c->r, pending, n, first->k.ts, NULL);
    free(pending);
    kr__snapshot_next(c->r, first->k.ts, &c->snap_at, &c->snap_wall);
    c->snap_due = false;
}

/* Before e, the set's first, is taken: false while a due snapshot waits for the jobs
 * outstanding to retire. */
static bool snap_turn(struct cons *c, const struct kr__ev *e)
{
    if (!c->r->cfg->snap_dir || !e || e->k.ts >= c->r->cfg->end || !snap_due(c, e)) return true;
    if (c->nretire || c->held) return false;
    snap_take(c, e);
    return true;
}

/* Interrupted: no event after the time of the last one taken starts (those at its time
 * still run, so that what is committed is every event before a time, what --end
 * reproduces). */
static bool cons_stops_before(const struct cons *c, const struct kr__ev *e)
{
    return e->k.ts > c->taken_ts && kr__interrupted();
}

/* A model that answers queries: the running LP's state before its event, for a query that
 * reaches it. */
static void query_keep(struct cons *c, struct kr__lp *lp, kr_lp id)
{
    c->running = id;
    c->pre = kr__lp_snapshot(&c->blobs, lp);
}

/* ...given back after the event (or its model error; with the mid-event state a failed
 * answer left swapped out). */
static void query_settle(struct cons *c)
{
    if (c->mid) {
        kr__ckpt_release(&c->blobs, c->mid);
        c->mid = NULL;
    }
    if (c->pre) kr__ckpt_release(&c->blobs, c->pre);
    c->pre = NULL;
}

/* kr_query: every other LP's state in memory is the one at the asking event (all earlier
 * events retired, no later one started: one runs at a time); the running LP's is
 * mid-event, so its state before the event is swapped in for the answer, and back. */
size_t cons_query(struct kr__ctx *x, kr_lp dest, const void *q, size_t size, void *ans,
                  size_t cap)
{
    struct cons *c = ((struct cons_worker *)x->eng)->c;
    struct kr__lp *lp = kr__lp_at(x->run, dest);
    bool swap = c->pre && dest == c->running && !c->mid;
    if (swap) {
        c->mid = kr__lp_snapshot(&c->blobs, lp);
        kr__lp_restore(lp, c->pre);
    }
    size_t n = kr__query_answer(x, dest, q, size, ans, cap);
    x->run->counters[0].q.answered++;
    if (swap) {
        kr__lp_restore(lp, c->mid);
        kr__ckpt_release(&c->blobs, c->mid);
        c->mid = NULL;
    }
    return n;
}

/* With nothing outstanding, may the first event run here at once? (Its LP is free, no
 * barrier holds it, and its type is short.) */
static bool direct_ok(struct cons *c, const struct kr__ev *e)
{
    return e && !(e->flags & KR_EVF_BARRIER) && e->k.ts < c->r->cfg->end && !c->failed &&
           !cons_stops_before(c, e) && run_here(c, e) &&
           !(c->r->cfg->snap_dir && snap_due(c, e)); /* (schedule_turn takes it) */
}

/* A model error in an event run on the scheduler (the earliest: nothing runs beside it). */
static int direct_failed(struct cons *c, struct cons_worker *w, struct cons_job *j)
{
    query_settle(c);
    cons_keep_error(w, j);
    kr__watch_settle(&c->watch[0]);
    kr__ctx.mode = KR_MODE_NONE;
    w->job = NULL;
    w->direct = false;
    c->err = j->err;
    return CONS_RETIRE_ERROR;
}

static inline void direct_counted(struct kr__counters *cnt, size_t n)
{
    cnt->processed += n;
    cnt->committed += n;
    cnt->cons.sched_ran++;
}

/* Nothing outstanding and the first event is short: run it here and retire it at once, as
 * the sequential engine would (no job, no queue: its sends go straight into the set and its
 * output straight out), and so on while the next one is short too, under one setjmp. */
static int run_direct(struct cons *c, struct kr__progress *prog)
{
    struct kr__run *r = c->r;
    struct cons_worker *w = &c->w[0];
    struct cons_job *j = &c->direct; /* (where cons_fail puts a model error) */
    struct kr__watch *watch = &c->watch[0];
    if (_setjmp(w->jmp)) return direct_failed(c, w, j); /* (in j's event or done step) */
    w->direct = true;
    w->job = j;
    j->ntext = 0;
    j->rec.n = 0;
    int rr;
    do {
        kr__lp_prefetch_state(r, kr__heap_top(&c->heap)->dest);
        struct kr__ev *e = kr__heap_pop(&c->heap);
        kr__heap_prefetch_next(&c->heap, r->lp_mem + KR_LP_HOT, r->lp_bytes, 1);
        c->taken_ts = e->k.ts;
        struct kr__lp *lp = kr__lp_at(r, e->dest);
        j->ev = e;
        if (r->bundles) kr__bundle_take(&j->bundle, &c->heap, e);
        j->timed = timed(c, e->type);
        uint64_t t0 = j->timed ? kr__clock_ns() : 0;
        kr__ctx_event(lp, e, KR_MODE_EVENT);
        if (r->bundles) kr__bundle_enter(&j->bundle);
        kr__watch_begin(watch, e);
        if (c->queries) query_keep(c, lp, e->dest);
        kr__run_event(r, lp, e);
        query_settle(c);
        j->done_after = kr__run_done(r, lp, e->dest);
        kr__watch_end(watch);
        kr__ctx.mode = KR_MODE_NONE;
        if (j->timed) {
            j->ns = kr__clock_ns() - t0;
            fold_time(c, j);
        }
        direct_counted(&r->counters[0], r->bundles ? j->bundle.n : 1);
        rr = retire_one(c, j, prog);
    } while (rr == CONS_RETIRE_MORE && direct_ok(c, kr__heap_top(&c->heap)));
    w->job = NULL;
    w->direct = false;
    return rr;
}

/* May the first event of the set run now, beside the offloaded ones? */
static bool may_offload(struct cons *c, const struct kr__ev *e)
{
    struct kr__counters *cnt = &c->r->counters[0];
    if (c->lp_busy[e->dest]) { /* one event at a time per LP */
        cnt->cons.lp_waits++;
        return false;
    }
    /* With done(): each unretired event may make one more LP done; the event that makes the
     * last one done must have no later event running beside it. */
    if (c->r->model->done && c->nretire && c->ndone + c->nretire + 1 >= c->r->n) return false;
    if (!c->barrier_events && e->k.ts >= barrier(c)) {
        cnt->cons.barrier_waits++;
        return false;
    }
    return true;
}

static void inflight_add(struct cons *c, struct cons_job *j)
{
    if (c->ninflight == c->capinflight)
        KR_GROW(c->inflight, c->capinflight, c->ninflight + 1, 16, "conservative in-flight set");
    c->inflight[c->ninflight++] = j;
}

/* Take the first event of the set as a job: into the retire queue and the in-flight set, its
 * LP busy; with --barriers events, its completion into the set as a barrier event. */
static struct cons_job *take(struct cons *c)
{
    struct kr__ev *e = kr__heap_pop(&c->heap);
    c->taken_ts = e->k.ts;
    struct cons_job *j = job_new(c, e);
    if (c->r->bundles) kr__bundle_take(&j->bundle, &c->heap, e);
    if (c->retire_tail) c->retire_tail->next = j;
    else c->retire_head = j;
    c->retire_tail = j;
    c->nretire++;
    inflight_add(c, j);
    c->lp_busy[e->dest] = 1;
    struct kr__counters *cnt = &c->r->counters[0];
    cnt->cons.offloads++;
    cnt->cons.inflight_sum += c->ninflight;
    if (c->barrier_events) {
        struct kr__ev *b = kr__pool_get(&c->r->pools[0], sizeof j);
        b->k = kr__key_at(j->tc); /* the smallest key at tc: before every event at tc */
        b->flags = KR_EVF_BARRIER;
        b->size = sizeof j;
        b->dest = e->dest;
        memcpy(b->payload, &j, sizeof j);
        kr__heap_push(&c->heap, b);
    }
    return j;
}

/* --barriers events: the first event of the set is a barrier; pass it once its job is
 * complete. Returns false while the scheduler must wait. */
static bool pass_barrier(struct cons *c, struct kr__ev *b)
{
    struct cons_job *j;
    memcpy(&j, b->payload, sizeof j);
    if (!atomic_load_explicit(&j->complete, memory_order_acquire)) {
        c->r->counters[0].cons.barrier_waits++;
        return false;
    }
    kr__heap_pop(&c->heap);
    kr__pool_put(&c->r->pools[0], b);
    job_unref(c, j);
    return true;
}

/* Nothing may start now: no event before the end, a failure, an interrupt, or the lowest
 * event may not go yet (may_offload). */
static bool blocked(struct cons *c, const struct kr__ev *e, kr_time end)
{
    return !e || e->k.ts >= end || c->failed || cons_stops_before(c, e) || !may_offload(c, e);
}

/* A job taken before the run failed comes after the failed event in key order: it never
 * runs, and retires empty. */
static struct cons_job *drop_held(struct cons_job *held)
{
    held->out = held->out_tail = NULL;
    held->err = NULL;
    held->ntext = 0;
    held->rec.n = 0;
    atomic_store_explicit(&held->complete, true, memory_order_release);
    return NULL;
}

/* Hand the lowest event e to a worker, or run it on the scheduler (its own share of the
 * work, or every worker busy), or hold it until a worker is free. CONS_RETIRE_MORE to go on,
 * else how the run ended (run_direct). */
static int dispatch(struct cons *c, struct kr__progress *prog, struct kr__ev *e,
                    struct cons_job **held)
{
    if (c->scheduler_works && run_here(c, e)) {
        if (c->nretire == 0) return run_direct(c, prog); /* (with barrier events: none left) */
        struct cons_job *j = take(c);
        c->r->counters[0].cons.sched_ran++;
        cons_execute(c, &c->w[0], j);
        return CONS_RETIRE_MORE;
    }
    struct cons_job *j = take(c);
    if (cons_offload(c, j)) return CONS_RETIRE_MORE;
    if (!c->scheduler_works) {
        *held = j;
        return CONS_RETIRE_MORE;
    }
    c->r->counters[0].cons.sched_ran++; /* every worker busy: run it here */
    cons_execute(c, &c->w[0], j);
    return CONS_RETIRE_MORE;
}

/* The job no worker was free for, offered again. */
static inline int held_turn(struct cons *c)
{
    if (!cons_offload(c, c->held)) return CONS_TURN_WAIT;
    c->held = NULL;
    return CONS_TURN_ON;
}

/* One turn of the scheduler (paper 003, Figure 4): take in completed jobs, retire what
 * can be, then hand out (or run) the first event if it may start. Returns CONS_TURN_ON,
 * CONS_TURN_WAIT when nothing can go on until a job completes, or how the run ended:
 * CONS_RETIRE_DONE, CONS_RETIRE_ERROR, or CONS_RETIRE_MORE when the set has nothing left
 * before the end time and every job has retired. *spins: reset when an event goes out. */
static int schedule_turn(struct cons *c, struct kr__progress *prog, unsigned *spins)
{
    reap(c);
    int rr = retire(c, prog);
    if (rr == CONS_RETIRE_DONE) return rr;
    if (rr == CONS_RETIRE_ERROR && c->ninflight == 0) return rr;
    if (c->held && c->failed) c->held = drop_held(c->held);
    if (c->held) return held_turn(c);
    struct kr__ev *e = kr__heap_top(&c->heap);
    if (e && (e->flags & KR_EVF_BARRIER)) return pass_barrier(c, e) ? CONS_TURN_ON : CONS_TURN_WAIT;
    if (!snap_turn(c, e)) return CONS_TURN_WAIT;
    if (blocked(c, e, c->r->cfg->end)) return c->nretire == 0 ? CONS_RETIRE_MORE : CONS_TURN_WAIT;
    *spins = 0;
    int rd = dispatch(c, prog, e, &c->held);
    return rd == CONS_RETIRE_MORE ? CONS_TURN_ON : rd;
}

/* The scheduler's loop: turns, waiting where one must. Returns how the run ended. */
static int schedule(struct cons *c, struct kr__progress *prog)
{
    unsigned spins = 0;
    for (;;) {
        int t = schedule_turn(c, prog, &spins);
        if (t == CONS_TURN_WAIT) cons_wait(c, &spins);
        else if (t != CONS_TURN_ON) return t;
    }
}

static void cons_setup(struct cons *c, struct kr__run *r)
{
    memset(c, 0, sizeof *c);
    c->r = r;
    c->taken_ts = -INFINITY;
    kr__snapshot_first(r, &c->snap_at, &c->snap_wall);
    c->nw = r->nthreads - 1;
    const struct kr__cons_options *o = cons_options(r->cfg);
    c->push = !o->handoff_pull;
    c->barrier_events = o->barrier_events;
    c->queries = r->model->query != NULL;
    c->scheduler_works = (o->scheduler_works && c->push) || c->queries;
    c->offload_auto = !o->offload_always;
    c->offload_ns = (float)(o->offload_us * 1000.0);
    kr__typetime_init(&c->types);
    kr__run_heap_init(r, &c->heap);
    kr__blobs_init(&c->blobs);
    c->w = aligned_alloc(64, (c->nw + 1) * sizeof *c->w);
    c->watch = aligned_alloc(64, (c->nw + 1) * sizeof *c->watch);
    c->lp_busy = calloc(r->n, 1);
    if (!c->w || !c->watch || !c->lp_busy) kr__fatal_oom("conservative engine", r->n);
    memset(c->w, 0, (c->nw + 1) * sizeof *c->w);
    memset(c->watch, 0, (c->nw + 1) * sizeof *c->watch);
    kr__watch_bind(&c->watch[0]); /* the scheduler's, on this thread */
    for (unsigned i = 0; i <= c->nw; i++) {
        c->w[i].c = c;
        c->w[i].id = i;
    }
    kr__ctx.run = r;
    kr__ctx.ops = &kr__cons_ops;
    kr__ctx.pool = &r->pools[0];
    kr__ctx.eng = &c->w[0];
}

static void cons_teardown(struct cons *c)
{
    struct kr__ev *top = kr__heap_top(&c->heap);
    while (top && (top->flags & KR_EVF_BARRIER)) { /* barriers past the end */
        kr__heap_pop(&c->heap);
        top = kr__heap_top(&c->heap);
    }
    if (!c->r->ended_by_done) c->r->final_gvt = top ? top->k.ts : INFINITY;
    kr__heap_destroy(&c->heap);
    jobs_free(c);
    free(c->direct.text);
    free(c->direct.rec.b);
    kr__bundle_free(&c->direct.bundle);
    free(c->direct.err);
    query_settle(c);
    kr__blobs_destroy(&c->blobs);
    free(c->inflight);
    free(c->lp_busy);
    free(c->watch);
    free(c->w);
}

/* init, then the scheduler, each under kr__guarded: a model error in init, or in a done()
 * step as a job retires, unwinds out of it (the run's failure). */
struct cons_body {
    struct cons *c;
    struct kr__progress prog;
    int rr;                      /* schedule's CONS_RETIRE_* */
};

static void cons_init_body(void *arg)
{
    struct cons *c = arg;
    c->ndone = kr__lps_init_all(c->r); /* on the scheduler thread, before any event */
}

static void cons_schedule_body(void *arg)
{
    struct cons_body *b = arg;
    b->rr = schedule(b->c, &b->prog);
}

/* The scheduler and its workers, from start to stop: KR_OK, or the run's failure. */
static int cons_main(struct kr__run *r, struct cons *c, int *rr)
{
    struct cons_body b = { .c = c, .rr = CONS_RETIRE_MORE };
    kr__progress_start(&b.prog, r);
    cons_handoff_start(c);
    kr__watch_attach(c->watch, c->nw + 1);
    kr__set_salvage(cons_salvage, c);
    int st = kr__guarded(r, cons_schedule_body, &b);
    kr__set_salvage(NULL, NULL);
    kr__watch_attach(NULL, 0);
    cons_handoff_stop(c);
    kr__progress_stop(&b.prog);
    kr__pool_flush(&r->pools[0]);
    r->counters[0].pool_bytes = r->pools[0].bytes;
    if (!st && b.rr == CONS_RETIRE_ERROR) /* the earliest failed event in key order */
        st = kr__fail(&r->fail, KR_ERR_MODEL, "%s", c->err);
    *rr = b.rr;
    return st;
}

/* The run's end, as the scheduler's last turn said (the end key: the last retired). */
static void cons_ended(struct cons *c, int how)
{
    struct kr__run *r = c->r;
    struct kr__ev *top = kr__heap_top(&c->heap);
    while (top && (top->flags & KR_EVF_BARRIER)) { /* (no model event) */
        kr__heap_pop(&c->heap);
        top = kr__heap_top(&c->heap);
    }
    /* (interrupted: every event before it retired, cons_stops_before) */
    kr__run_ended(r, how == CONS_RETIRE_DONE, top ? top->k.ts : INFINITY);
    if (r->ended_by_done) r->final_gvt = r->end_key.ts;
}

static int cons_run(struct kr__run *r)
{
    struct cons c;
    cons_setup(&c, r);
    int st = kr__guarded(r, cons_init_body, &c);
    if (st) {
        cons_teardown(&c);
        return st;
    }
    r->end_key = kr__key_at(0);
    if (r->model->done && c.ndone == r->n) { /* done before the first event */
        r->ended_by_done = true;
        r->final_gvt = 0;
        cons_teardown(&c);
        return KR_OK;
    }
    int rc;
    if (!(st = cons_main(r, &c, &rc))) cons_ended(&c, rc);
    cons_teardown(&c);
    r->counters[0].cpu_ns = kr__thread_cpu_ns(); /* (the scheduler: the run's thread) */
    return st;
}

/* (the test seam, cons.h) */
static __thread struct kr__progress test_prog;

struct cons *cons_test_start(struct kr__run *r)
{
    struct cons *c = malloc(sizeof *c);
    if (!c) kr__fatal_oom("conservative engine", sizeof *c);
    cons_setup(c, r);
    c->ndone = kr__lps_init_all(r);
    r->end_key = kr__key_at(0);
    kr__progress_start(&test_prog, r);
    return c;
}

/* The calling thread acts as thread w (0: the scheduler). */
static void cons_test_use(struct cons *c, unsigned w)
{
    kr__ctx.ops = &kr__cons_ops;
    kr__ctx.pool = &c->r->pools[w];
    kr__ctx.eng = &c->w[w];
}

int cons_test_turn(struct cons *c)
{
    unsigned spins = 0;
    cons_test_use(c, 0);
    return schedule_turn(c, &test_prog, &spins);
}

bool cons_test_work(struct cons *c, unsigned w)
{
    cons_test_use(c, w);
    return cons_work_next(c, &c->w[w]);
}

void cons_test_end(struct kr__run *r, struct cons *c, int how)
{
    for (unsigned w = 0; w <= c->nw; w++) kr__pool_flush(&r->pools[w]);
    cons_ended(c, how);
    cons_teardown(c);
    free(c);
}

/* The scheduler takes a core of its own: cores - 1 workers. */
static unsigned cons_default_threads(unsigned ncpu)
{
    return ncpu > 1 ? ncpu - 1 : 1;
}

static unsigned cons_threads(const struct kr__config *cfg, uint64_t lps)
{
    (void)lps;
    return cfg->threads + 1; /* + the scheduler */
}

static int cons_validate(const struct kr__config *cfg, struct kr__error *err)
{
    if (cfg->check)
        return kr__fail(err, KR_ERR_USAGE, "--check is for the sequential and optimistic "
                        "engines and the conservative engine's windows scheme; its horizon "
                        "scheme never re-executes an event (check the model with --sync "
                        "sequential --check, or --conservative windows --check)");
    if (cfg->memory_max)
        return kr__fail(err, KR_ERR_USAGE, "--memory-max is for the sequential and optimistic "
                        "engines and the conservative engine's windows scheme: its horizon "
                        "scheme does not bound its memory yet");
    return KR_OK;
}

/* --conservative: windows when asked, or (auto) when the model's lookahead is known before
 * the run (struct kr_model's lookahead or run_lookahead; one set only in init is not) and
 * positive - a model without one (spans only: the null model) runs windows up to 25x
 * slower than Horizon, which waits for nothing but completions - and the model has no
 * done() (windows then speculates a little, optimism.c) and no query handler (queries
 * hold the clocks at the asker's time: query.c). */
static const struct kr__engine *cons_resolve(const struct kr__config *cfg,
                                             const struct kr_model *m, kr_time lookahead)
{
    int s = cons_options(cfg)->scheme;
    bool windows = s == KR_CONS_WINDOWS ||
                   (s == KR_CONS_AUTO && lookahead > 0 && !m->done && !m->query);
    return windows ? &kr__windows_engine : &kr__cons_engine;
}

const struct kr__engine kr__cons_engine = {
    .name = "conservative",
    .scheme = "horizon",
    .resolve = cons_resolve,
    .default_threads = cons_default_threads,
    .threads = cons_threads,
    .validate = cons_validate,
    .run = cons_run,
    .summary = cons_summary,
    .json = cons_json,
    .options = cons_option_rows,
    .options_size = sizeof(struct kr__cons_options),
};
