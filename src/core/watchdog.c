/* watchdog.c - see watchdog.h. */
#include "watchdog.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include "clock.h"
#include "core.h"
#include "error.h"

void kr__timeout_message(char *buf, size_t cap, const struct kr__run *r, const struct kr__ev *e,
                         const char *hint)
{
    char where[256];
    kr__event_where(where, sizeof where, r, e);
    snprintf(buf, cap, "%s: " KR_TIMEOUT_FMT "%s", where, r->cfg->event_timeout, hint);
}

void kr__watch_poll(struct kr__watch *w, const struct kr__run *r, uint64_t now_ns, const char *hint)
{
    double limit = r->cfg->event_timeout;
    uint64_t s = atomic_load_explicit(&w->seq, memory_order_acquire);
    if (limit <= 0 || !(s & 1)) {
        w->seen = s;
        return;
    }
    if (s != w->seen) { /* a new event since the last poll */
        w->seen = s;
        w->since_ns = now_ns;
        return;
    }
    if ((double)(now_ns - w->since_ns) < limit * 1e9) return;
    const struct kr__ev *e = atomic_load_explicit(&w->ev, memory_order_relaxed);
    /* The thread is still inside that event (seq unchanged), so e is valid to read. */
    char msg[768];
    kr__timeout_message(msg, sizeof msg, r, e, hint);
    if (atomic_load_explicit(&w->seq, memory_order_acquire) != s) return; /* it just returned */
    kr__die(msg);
}

static struct {
    pthread_t tid;
    bool on;
    _Atomic int stop;
    struct kr__watch *w;        /* n slots */
    size_t n;
    const struct kr__run *r;
} seqw;

static void *watch_main(void *arg)
{
    (void)arg;
    while (!atomic_load_explicit(&seqw.stop, memory_order_acquire)) {
        struct timespec ts = { 0, 50 * 1000 * 1000 };
        nanosleep(&ts, NULL);
        uint64_t now = kr__clock_ns();
        for (size_t i = 0; i < seqw.n; i++) kr__watch_poll(&seqw.w[i], seqw.r, now, "");
    }
    return NULL;
}

void kr__watch_thread_start(struct kr__watch *w, size_t n, const struct kr__run *r)
{
    if (r->cfg->event_timeout <= 0) return;
    seqw.w = w;
    seqw.n = n;
    seqw.r = r;
    atomic_store(&seqw.stop, 0);
    seqw.on = pthread_create(&seqw.tid, NULL, watch_main, NULL) == 0;
}

void kr__watch_thread_stop(void)
{
    if (!seqw.on) return;
    atomic_store_explicit(&seqw.stop, 1, memory_order_release);
    pthread_join(seqw.tid, NULL);
    seqw.on = false;
}
