/* watchdog.c - see watchdog.h. */
#define _GNU_SOURCE /* syscall, SYS_rt_tgsigqueueinfo */
#include "core/watchdog.h"
#include "base/sanitize.h"
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/procfile.h"
#include "core/core.h"
#include "base/error.h"

/* A thread that was signalled and has not ended its callback after this long is stuck
 * where it cannot be unwound: the process ends. */
#define KR_WATCH_GRACE_NS (1000u * 1000 * 1000)
/* A gap between two polls longer than this is a stop (SIGSTOP, a suspended machine): only
 * this much of it counts as blocked. */
#define KR_WATCH_GAP_NS (200u * 1000 * 1000)

/* What a timed-out event did: blocked in system call `call`, or (-1) ran. */
static void timeout_what(char *buf, size_t cap, const struct kr__run *r, long call)
{
    if (call >= 0) snprintf(buf, cap, KR_BLOCKED_FMT, r->cfg->event_timeout, call);
    else snprintf(buf, cap, KR_TIMEOUT_FMT, r->cfg->event_timeout);
}

void kr__timeout_message(char *buf, size_t cap, const struct kr__run *r, const struct kr__ev *e,
                         long call, const char *hint)
{
    char where[320], what[512];
    kr__event_where(where, sizeof where, r, e);
    timeout_what(what, sizeof what, r, call);
    snprintf(buf, cap, "%s: %s%s", where, what, hint);
}

/* A slot that times a callback other than an event (init, done() after init, finish). */
static void callback_message(char *buf, size_t cap, const struct kr__run *r,
                             const struct kr__watch *w)
{
    unsigned mode = atomic_load_explicit(&w->mode, memory_order_relaxed);
    bool blocked = atomic_load_explicit(&w->call, memory_order_relaxed) >= 0;
    snprintf(buf, cap, "model '%s', LP %llu, in %s: the callback has %s for more than %g s "
             "(--event-timeout) without returning: %s If it is only slow, raise "
             "--event-timeout (0: no limit)", r->model->name,
             (unsigned long long)atomic_load_explicit(&w->lp, memory_order_relaxed),
             mode == KR_MODE_INIT ? "init" : mode == KR_MODE_FINISH ? "finish" : "done()",
             blocked ? "waited in a system call" : "run", r->cfg->event_timeout,
             blocked ? "a read no one answers, a lock taken twice, a sleep?" :
             "an endless loop?");
}

void kr__watch_bind(struct kr__watch *w)
{
    w->has_cpu = pthread_getcpuclockid(pthread_self(), &w->cpu) == 0;
    w->tid = (pid_t)syscall(SYS_gettid);
    atomic_store_explicit(&w->kicked, 0, memory_order_relaxed);
    atomic_store_explicit(&w->call, -1, memory_order_relaxed);
}

static uint64_t slot_now(const struct kr__watch *w)
{
    struct timespec ts;
    if (w->has_cpu && clock_gettime(w->cpu, &ts) == 0)
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return kr__clock_ns();
}

/* Whether system call nr writes to stdin, stdout or stderr (its first argument fd0). */
static bool writes_stdio(long nr, unsigned long fd0)
{
    return (nr == SYS_write || nr == SYS_writev || nr == SYS_pwrite64) && fd0 <= 2;
}

/* The system call the slot's thread is blocked in, or -1: running or runnable, or writing
 * to stdout or stderr (a reader that stalls is not the event's doing), or not known. */
static long blocked_call(const struct kr__watch *w)
{
    char path[64], buf[160];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)w->tid);
    if (kr__read_proc(path, buf, sizeof buf) <= 0) return -1;
    char *end;
    long nr = strtol(buf, &end, 10);
    if (end == buf || nr < 0) return -1; /* ("running", or -1 with registers: in user code) */
    return writes_stdio(nr, strtoul(end, NULL, 16)) ? -1 : nr;
}

/* Ask the slot's thread to end its callback (its handler: core/fault.c). Not under
 * ThreadSanitizer, which delivers the signal late from its runtime, where the handler
 * cannot unwind: the signal would only cut a blocked call short (EINTR). */
static bool kick(struct kr__watch *w)
{
#if defined(KR_TSAN)
    (void)w;
    return false;
#endif
    siginfo_t si;
    memset(&si, 0, sizeof si);
    si.si_signo = KR_SIG_TIMEOUT;
    si.si_code = SI_QUEUE;
    si.si_pid = getpid();
    si.si_uid = getuid();
    si.si_value.sival_ptr = w;
    return w->tid && syscall(SYS_rt_tgsigqueueinfo, getpid(), w->tid, KR_SIG_TIMEOUT, &si) == 0;
}

/* The callback of slot w (sequence s) timed out: signal its thread at each poll for a
 * second, then end the process. */
static void timed_out(struct kr__watch *w, const struct kr__run *r, const char *hint, uint64_t s,
                      uint64_t wall)
{
    if (atomic_load_explicit(&w->kicked, memory_order_relaxed) != s) {
        w->kick_ns = wall;
        atomic_store_explicit(&w->kicked, s, memory_order_release);
    }
    if (wall - w->kick_ns < KR_WATCH_GRACE_NS && kick(w)) return;
    const struct kr__ev *e = atomic_load_explicit(&w->ev, memory_order_relaxed);
    /* The thread is still inside that event (seq unchanged), so e is valid to read. */
    char msg[1024];
    if (e) kr__timeout_message(msg, sizeof msg, r, e,
                               atomic_load_explicit(&w->call, memory_order_relaxed), hint);
    else callback_message(msg, sizeof msg, r, w);
    if (atomic_load_explicit(&w->seq, memory_order_acquire) != s) return; /* it just returned */
    kr__die(msg);
}

/* A new event since the last poll: its time starts now. */
static void watch_restart(struct kr__watch *w, uint64_t s, uint64_t now_ns, uint64_t wall)
{
    w->seen = s;
    w->since_ns = w->cpu_last = now_ns;
    w->wall_last = wall;
    w->blocked_ns = 0;
    atomic_store_explicit(&w->call, -1, memory_order_relaxed);
}

/* Since the last look: if the event's thread ran under a tenth of the wall time, the
 * system call it is blocked in (if any) and the time it spent there. */
static void note_blocked(struct kr__watch *w, uint64_t now_ns, uint64_t wall)
{
    uint64_t dwall = wall - w->wall_last, dcpu = now_ns - w->cpu_last;
    w->cpu_last = now_ns;
    w->wall_last = wall;
    long call = w->has_cpu && dcpu < dwall / 10 ? blocked_call(w) : -1;
    if (call >= 0) {
        w->blocked_ns += dwall < KR_WATCH_GAP_NS ? dwall : KR_WATCH_GAP_NS;
        atomic_store_explicit(&w->call, call, memory_order_relaxed);
    }
}

void kr__watch_poll(struct kr__watch *w, const struct kr__run *r, const char *hint)
{
    double limit = r->cfg->event_timeout;
    uint64_t s = atomic_load_explicit(&w->seq, memory_order_acquire);
    if (limit <= 0 || !(s & 1)) {
        w->seen = s;
        return;
    }
    uint64_t now_ns = slot_now(w), wall = kr__clock_ns();
    if (s != w->seen) {
        watch_restart(w, s, now_ns, wall);
        return;
    }
    note_blocked(w, now_ns, wall);
    uint64_t lim = (uint64_t)(limit * 1e9);
    if (now_ns - w->since_ns < lim && w->blocked_ns < lim) return;
    if (now_ns - w->since_ns >= lim) atomic_store_explicit(&w->call, -1, memory_order_relaxed);
    timed_out(w, r, hint, s, wall);
}

bool kr__watch_meant(struct kr__watch *w)
{
    uint64_t s = atomic_load_explicit(&w->seq, memory_order_acquire);
    return (s & 1) && atomic_load_explicit(&w->kicked, memory_order_acquire) == s;
}

_Noreturn void kr__watch_raise(struct kr__watch *w, const struct kr__run *r)
{
    char what[512];
    timeout_what(what, sizeof what, r, atomic_load_explicit(&w->call, memory_order_relaxed));
    kr__model_error("%s", what);
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

static void later(struct timespec *at, long ns)
{
    at->tv_nsec += ns;
    if (at->tv_nsec >= 1000000000) at->tv_sec++, at->tv_nsec -= 1000000000;
}

static void *watch_main(void *arg)
{
    (void)arg;
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    pthread_mutex_lock(&seqw.mu);
    while (!seqw.stop) {
        later(&at, 50 * 1000 * 1000);
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
