/* watchdog.c - see watchdog.h. */
#include "core/watchdog.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include "core/clock.h"
#include "core/core.h"
#include "core/error.h"

void kr__timeout_message(char *buf, size_t cap, const struct kr__run *r, const struct kr__ev *e,
                         const char *hint)
{
    char where[256];
    kr__event_where(where, sizeof where, r, e);
    snprintf(buf, cap, "%s: " KR_TIMEOUT_FMT "%s", where, r->cfg->event_timeout, hint);
}

/* A slot that times a callback other than an event (init, done() after init, finish). */
static void callback_message(char *buf, size_t cap, const struct kr__run *r,
                             const struct kr__watch *w)
{
    unsigned mode = atomic_load_explicit(&w->mode, memory_order_relaxed);
    snprintf(buf, cap, "model '%s', LP %llu, in %s: the callback has run for more than %g s "
             "(--event-timeout) without returning: an endless loop? If it is only slow, raise "
             "--event-timeout (0: no limit)", r->model->name,
             (unsigned long long)atomic_load_explicit(&w->lp, memory_order_relaxed),
             mode == KR_MODE_INIT ? "init" : mode == KR_MODE_FINISH ? "finish" : "done()",
             r->cfg->event_timeout);
}

void kr__watch_bind(struct kr__watch *w)
{
    w->has_cpu = pthread_getcpuclockid(pthread_self(), &w->cpu) == 0;
}

static uint64_t slot_now(const struct kr__watch *w)
{
    struct timespec ts;
    if (w->has_cpu && clock_gettime(w->cpu, &ts) == 0)
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return kr__clock_ns();
}

void kr__watch_poll(struct kr__watch *w, const struct kr__run *r, const char *hint)
{
    double limit = r->cfg->event_timeout;
    uint64_t s = atomic_load_explicit(&w->seq, memory_order_acquire);
    if (limit <= 0 || !(s & 1)) {
        w->seen = s;
        return;
    }
    uint64_t now_ns = slot_now(w);
    if (s != w->seen) { /* a new event since the last poll */
        w->seen = s;
        w->since_ns = now_ns;
        return;
    }
    if ((double)(now_ns - w->since_ns) < limit * 1e9) return;
    const struct kr__ev *e = atomic_load_explicit(&w->ev, memory_order_relaxed);
    /* The thread is still inside that event (seq unchanged), so e is valid to read. */
    char msg[768];
    if (e) kr__timeout_message(msg, sizeof msg, r, e, hint);
    else callback_message(msg, sizeof msg, r, w);
    if (atomic_load_explicit(&w->seq, memory_order_acquire) != s) return; /* it just returned */
    kr__die(msg);
}

struct kr__watch kr__watch_callbacks;

/* One watcher thread for the whole run: it polls the callback slot and the slots an engine
 * attaches (sequential, conservative; the optimistic engine's main thread polls its
 * workers). It waits on a condition variable rather than sleeping, so that the end of the
 * run stops it at once (a nanosleep made every run end up to 50 ms late). */
static struct {
    pthread_t tid;
    bool on;
    bool stop;                  /* under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* stop was set: the run is over */
    struct kr__watch *w;        /* n slots attached by the engine, under mu */
    size_t n;
    const struct kr__run *r;
} seqw = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void *watch_main(void *arg)
{
    (void)arg;
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    pthread_mutex_lock(&seqw.mu);
    while (!seqw.stop) {
        at.tv_nsec += 50 * 1000 * 1000;
        if (at.tv_nsec >= 1000000000) at.tv_sec++, at.tv_nsec -= 1000000000;
        while (!seqw.stop && pthread_cond_timedwait(&seqw.cv, &seqw.mu, &at) == 0) {}
        if (seqw.stop) break;
        kr__watch_poll(&kr__watch_callbacks, seqw.r, "");
        for (size_t i = 0; i < seqw.n; i++) kr__watch_poll(&seqw.w[i], seqw.r, "");
    }
    pthread_mutex_unlock(&seqw.mu);
    return NULL;
}

void kr__watch_thread_start(const struct kr__run *r)
{
    if (r->cfg->event_timeout <= 0) return;
    seqw.w = NULL;
    seqw.n = 0;
    seqw.r = r;
    seqw.stop = false;
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&seqw.cv, &a);
    pthread_condattr_destroy(&a);
    seqw.on = pthread_create(&seqw.tid, NULL, watch_main, NULL) == 0;
    if (!seqw.on) pthread_cond_destroy(&seqw.cv);
}

void kr__watch_attach(struct kr__watch *w, size_t n)
{
    pthread_mutex_lock(&seqw.mu);
    seqw.w = w;
    seqw.n = w ? n : 0;
    pthread_mutex_unlock(&seqw.mu);
}

void kr__watch_thread_stop(void)
{
    if (!seqw.on) return;
    pthread_mutex_lock(&seqw.mu);
    seqw.stop = true;
    pthread_cond_signal(&seqw.cv);
    pthread_mutex_unlock(&seqw.mu);
    pthread_join(seqw.tid, NULL);
    pthread_cond_destroy(&seqw.cv);
    seqw.on = false;
}
