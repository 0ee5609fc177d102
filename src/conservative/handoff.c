/* handoff.c - how the conservative engine's workers get jobs and run them.
 *
 * Push (default, paper 003 s4.1): each worker spins on a small buffer (paper 003: one slot;
 * here CONS_DEPTH) that the scheduler writes directly; no lock and no system call between
 * offloading an event and running it.
 * Pull (--handoff pull, the baseline the paper improves on): one work queue under a mutex,
 * workers sleep on a condition variable and the scheduler sleeps on another until a job
 * completes.
 *
 * Running a job: the model's event handler on the worker's thread, its sends collected in
 * the job (the scheduler inserts them into the future-event set when it reaps the job), its
 * output buffered in the job (printed when it retires, in key order), a model error caught
 * by longjmp and kept in the job. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "conservative/cons.h"
#include "base/grow.h"
#include "base/clock.h"
#include "base/error.h"

/* A send without a duration from a model without a lookahead: a model error. */
static __attribute__((cold, noinline)) void no_duration(struct kr__ctx *x, struct kr__ev *e,
                                                        const struct kr__run *r)
{
    kr_lp d = e->dest;
    kr_time t = e->k.ts;
    kr__pool_put(x->pool, e);
    kr__model_error("kr_schedule to LP %llu at %.17g: --sync conservative needs every event's "
                    "duration, and this model declares no lookahead; declare one (struct "
                    "kr_model.lookahead or run_lookahead, or kr_set_lookahead in init) or "
                    "send with kr_schedule_span, or use --sync optimistic (a model may offer a "
                    "formulation with durations as a parameter: kairos run %s --help)",
                    (unsigned long long)d, t, r->cfg->model);
}

/* A send that starts before the sending event ends: a model error. */
static __attribute__((cold, noinline)) void before_end(struct kr__ctx *x, struct kr__ev *e,
                                                       kr_time end)
{
    kr_time t = e->k.ts;
    kr_lp d = e->dest;
    kr__pool_put(x->pool, e);
    kr__model_error("event to LP %llu at %.17g starts before this event ends at %.17g (start + "
                    "duration %g): under --sync conservative an event may only schedule "
                    "events at or after its own end; shorten its duration (kr_schedule_span "
                    "or the lookahead) or use --sync optimistic", (unsigned long long)d, t,
                    end, x->ev->dur);
}

static void cons_send(struct kr__ctx *x, struct kr__ev *e)
{
    struct cons_worker *w = x->eng;
    struct kr__run *r = w->c->r;
    if (!(e->flags & KR_EVF_SPAN) && r->lookahead <= 0 && !r->promise.lookahead_declared) {
        no_duration(x, e, r);
        return;
    }
    e->st = KR_EV_PENDING;
    if (x->mode == KR_MODE_INIT) { /* init runs on the scheduler, before any event */
        kr__heap_push(&w->c->heap, e);
        return;
    }
    kr_time end = x->ev->k.ts + x->ev->dur;
    if (e->k.ts < end) {
        before_end(x, e, end);
        return;
    }
    if (w->direct) { /* the scheduler's own event with nothing outstanding */
        kr__heap_push(&w->c->heap, e);
        return;
    }
    struct cons_job *j = w->job;
    e->next = NULL;
    if (j->out_tail) j->out_tail->next = e;
    else j->out = e;
    j->out_tail = e;
}

static void cons_emit(struct kr__ctx *x, const char *text, size_t len)
{
    struct cons_worker *w = x->eng;
    struct cons_job *j = w->job;
    if (!j || w->direct) { /* init and finish, and the direct path: committed as they run */
        kr__emit_direct(x, text, len);
        return;
    }
    if (j->ntext + len > j->captext)
        KR_GROW(j->text, j->captext, j->ntext + len, 256, "event output");
    memcpy(j->text + j->ntext, text, len);
    j->ntext += len;
}

/* Records wait in the job, in the direct path too: they reach the hook as it retires. */
static void cons_record(struct kr__ctx *x, uint64_t tag, const void *data, size_t size)
{
    struct cons_worker *w = x->eng;
    kr__recbuf_add(&w->job->rec, tag, data, size);
}

/* A model error in an event: kept in the job, reported when the job retires (so the error
 * of the earliest event in key order is the one reported, as the sequential engine does). */
static void cons_fail(struct kr__ctx *x, const char *msg)
{
    struct cons_worker *w = x->eng;
    if (!w->job || (x->mode != KR_MODE_EVENT && x->mode != KR_MODE_DONE))
        return; /* init: fatal at once */
    w->err_msg = msg; /* copied after the longjmp: this may be a signal handler */
    longjmp(w->jmp, 1);
}

const struct kr__engine_ops kr__cons_ops = { cons_send, cons_emit, cons_fail, cons_query,
                                             cons_record };

void cons_keep_error(struct cons_worker *w, struct cons_job *j)
{
    j->err = strdup(w->err_msg);
    if (!j->err) kr__die(w->err_msg);
}

void cons_execute(struct cons *c, struct cons_worker *w, struct cons_job *j)
{
    struct kr__run *r = c->r;
    struct kr__ev *e = j->ev;
    struct kr__lp *lp = kr__lp_at(r, e->dest);
    j->out = j->out_tail = NULL;
    j->ntext = 0;
    j->rec.n = 0;
    j->err = NULL;
    j->done_after = false;
    w->job = j;
    kr__ctx_event(lp, e, KR_MODE_EVENT);
    if (r->bundles) kr__bundle_enter(&j->bundle);
    struct kr__watch *watch = &c->watch[w->id];
    volatile uint64_t t0 = j->timed ? kr__clock_ns() : 0; /* (kept across the longjmp) */
    kr__watch_begin(watch, e);
    if (_setjmp(w->jmp) == 0) {
        kr__run_event(r, lp, e);
        j->done_after = kr__run_done(r, lp, e->dest);
    } else {
        cons_keep_error(w, j);
    }
    kr__watch_end(watch);
    if (j->timed) j->ns = kr__clock_ns() - t0;
    kr__ctx.mode = KR_MODE_NONE;
    w->job = NULL;
    size_t n = r->bundles ? j->bundle.n : 1;
    r->counters[w->id].processed += n;
    r->counters[w->id].committed += n; /* nothing is ever undone here */
    atomic_store_explicit(&j->complete, true, memory_order_release);
}

/* An idle worker spins, so that a pushed job starts within a microsecond, but not for long:
 * a spinning thread slows the scheduler's own work where the two share a physical core
 * (hyperthreads, or virtual CPUs on one host core: the null model run by the scheduler alone
 * took 1.4x longer beside a spinning sibling on the development machine), and where threads
 * outnumber cores it takes the core from the scheduler or a busy worker. So after
 * CONS_PARK_NS without a job (256 spins when oversubscribed) it parks on a futex that
 * cons_offload wakes. */
#define CONS_PARK_NS 50000

static void park(struct cons *c, struct cons_worker *w)
{
    c->r->counters[w->id].idle_sleeps++;
    atomic_store(&w->parked, 1); /* seq_cst: ordered before the slot check (see wake) */
    if (!atomic_load(&w->slot[w->take]) && !atomic_load(&c->stop))
        syscall(SYS_futex, &w->parked, FUTEX_WAIT_PRIVATE, 1, NULL, NULL, 0);
    atomic_store_explicit(&w->parked, 0, memory_order_relaxed);
}

/* After the slot (or stop) is written: a worker that parked before seeing it is woken. */
static void wake(struct cons_worker *w)
{
    if (atomic_load(&w->parked) && atomic_exchange(&w->parked, 0))
        syscall(SYS_futex, &w->parked, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void idle(struct cons *c, struct cons_worker *w, unsigned *spins, uint64_t *since)
{
    ++*spins;
    if (c->oversubscribed ? *spins >= 256 : (*spins % 256 == 0 && *spins > 256 &&
                                             kr__clock_ns() - *since >= CONS_PARK_NS)) {
        park(c, w);
        *spins = 0;
        return;
    }
    if (*spins == 1) *since = kr__clock_ns();
    __builtin_ia32_pause();
}

bool cons_work_next(struct cons *c, struct cons_worker *w)
{
    struct cons_job *j = atomic_load_explicit(&w->slot[w->take], memory_order_acquire);
    if (!j) return false;
    cons_execute(c, w, j);
    atomic_store_explicit(&w->slot[w->take], NULL, memory_order_release);
    w->take = (w->take + 1) % CONS_DEPTH;
    return true;
}

static void push_loop(struct cons *c, struct cons_worker *w)
{
    unsigned spins = 0;
    uint64_t since = 0;
    for (;;) {
        if (cons_work_next(c, w)) {
            spins = 0;
        } else if (atomic_load_explicit(&c->stop, memory_order_acquire)) {
            return;
        } else {
            idle(c, w, &spins, &since);
        }
    }
}

static void pull_loop(struct cons *c, struct cons_worker *w)
{
    struct cons_queue *q = &c->q;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->head && !atomic_load_explicit(&c->stop, memory_order_relaxed))
            pthread_cond_wait(&q->work, &q->mu);
        struct cons_job *j = q->head;
        if (!j) break;
        q->head = j->qnext;
        if (!q->head) q->tail = NULL;
        pthread_mutex_unlock(&q->mu);
        cons_execute(c, w, j);
        pthread_mutex_lock(&q->mu);
        pthread_cond_signal(&q->done);
    }
    pthread_mutex_unlock(&q->mu);
}

static void *worker_main(void *arg)
{
    struct cons_worker *w = arg;
    struct cons *c = w->c;
    struct kr__run *r = c->r;
    kr__pin_thread(w->id, c->nw + 1);
    kr__fault_thread_init();
    kr__watch_bind(&c->watch[w->id]);
    kr__ctx.run = r;
    kr__ctx.ops = &kr__cons_ops;
    kr__ctx.pool = &r->pools[w->id];
    kr__ctx.eng = w;
    kr__ctx.mode = KR_MODE_NONE;
    if (c->push) push_loop(c, w);
    else pull_loop(c, w);
    kr__pool_flush(&r->pools[w->id]);
    r->counters[w->id].pool_bytes = r->pools[w->id].bytes;
    r->counters[w->id].cpu_ns = kr__thread_cpu_ns();
    kr__fault_thread_fini();
    return NULL;
}

void cons_handoff_start(struct cons *c)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c->oversubscribed = ncpu > 0 && c->nw + 1 > (unsigned)ncpu;
    pthread_mutex_init(&c->q.mu, NULL);
    pthread_cond_init(&c->q.work, NULL);
    pthread_cond_init(&c->q.done, NULL);
    c->q.head = c->q.tail = NULL;
    atomic_store(&c->stop, false);
    kr__pin_thread(0, c->nw + 1);
    for (unsigned i = 1; i <= c->nw; i++)
        kr__thread_start_or_die(&c->w[i].tid, worker_main, &c->w[i], c->r->cfg->stack_kb,
                                "a worker");
}

void cons_handoff_stop(struct cons *c)
{
    pthread_mutex_lock(&c->q.mu);
    atomic_store(&c->stop, true); /* seq_cst: before the parked checks in wake */
    pthread_cond_broadcast(&c->q.work);
    pthread_mutex_unlock(&c->q.mu);
    for (unsigned i = 1; i <= c->nw; i++) wake(&c->w[i]);
    for (unsigned i = 1; i <= c->nw; i++) pthread_join(c->w[i].tid, NULL);
    pthread_mutex_destroy(&c->q.mu);
    pthread_cond_destroy(&c->q.work);
    pthread_cond_destroy(&c->q.done);
}

/* --handoff pull: j onto the shared queue, a worker woken. */
static void queue_push(struct cons_queue *q, struct cons_job *j)
{
    j->qnext = NULL;
    pthread_mutex_lock(&q->mu);
    if (q->tail) q->tail->qnext = j;
    else q->head = j;
    q->tail = j;
    pthread_cond_signal(&q->work);
    pthread_mutex_unlock(&q->mu);
}

bool cons_offload(struct cons *c, struct cons_job *j)
{
    if (!c->push) {
        queue_push(&c->q, j);
        return true;
    }
    struct cons_worker *to = NULL; /* an idle worker, else one with room behind its job */
    for (unsigned i = 1; i <= c->nw; i++) {
        struct cons_worker *w = &c->w[i];
        if (atomic_load_explicit(&w->slot[w->put], memory_order_relaxed)) continue; /* full */
        to = w;
        if (!atomic_load_explicit(&w->slot[(w->put + CONS_DEPTH - 1) % CONS_DEPTH],
                                  memory_order_relaxed))
            break; /* (the slot filled last is empty: so is the whole ring) */
    }
    if (!to) return false;
    atomic_store(&to->slot[to->put], j); /* seq_cst: before the parked check */
    to->put = (to->put + 1) % CONS_DEPTH;
    wake(to);
    return true;
}

static bool any_complete(const struct cons *c)
{
    for (size_t i = 0; i < c->ninflight; i++)
        if (atomic_load_explicit(&c->inflight[i]->complete, memory_order_acquire)) return true;
    return false;
}

void cons_wait(struct cons *c, unsigned *spins)
{
    if (!c->push) { /* sleep until a worker signals a completion */
        pthread_mutex_lock(&c->q.mu);
        while (c->ninflight && !any_complete(c)) pthread_cond_wait(&c->q.done, &c->q.mu);
        pthread_mutex_unlock(&c->q.mu);
        return;
    }
    if (c->oversubscribed && ++*spins >= 64) { /* a worker may need this core */
        *spins = 0;
        sched_yield();
        return;
    }
    __builtin_ia32_pause();
}
