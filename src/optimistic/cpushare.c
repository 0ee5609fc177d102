/* cpushare.c - what the balancer (migrate.c) knows of each worker's core: the share of the
 * wall time the worker actually ran (its CPU time over the time it was awake) and its wait
 * on the run queue, over windows ended at GVT rounds and between them; and a retired
 * worker's probes of its core. Near 1 on a core of its own, near 1/2 beside another busy
 * process. Each worker measures itself; the closer of a round reads the published shares. */
#define _GNU_SOURCE
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "optimistic/tw.h"
#include "optimistic/balance.h"
#include "base/clock.h"

/* This thread's time waiting on a run queue so far (ns), from the kernel's schedstat; the
 * last value when it cannot be read (so a window without it shows no wait). */
static uint64_t thread_waited_ns(const struct tw_thread *th)
{
    char buf[96];
    ssize_t n = th->bal.sched_fd >= 0 ? pread(th->bal.sched_fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0) return th->bal.waited;
    buf[n] = 0;
    unsigned long long run, wait;
    return sscanf(buf, "%llu %llu", &run, &wait) == 2 && wait >= th->bal.waited ? wait
                                                                                : th->bal.waited;
}

/* The best of the last windows' shares. */
static double best_share(const struct tw_thread *th)
{
    double best = 0;
    for (unsigned i = 0; i < TW_SHARED_WINDOWS && i < th->bal.nshares; i++)
        if (th->bal.shares[i] > best) best = th->bal.shares[i];
    return best;
}

/* Publish the window's share s: a low one only once it has lasted TW_SHARED_WINDOWS (a
 * window alone may be a blip - a page-fault storm, the hypervisor), unless the run queue
 * says another process shares the core; a high one at once (blips only go down). */
static void publish_share(struct tw_thread *th, double s, bool queued)
{
    th->bal.shares[th->bal.nshares++ % TW_SHARED_WINDOWS] = s;
    atomic_store_explicit(&th->bal.rq_shared, queued, memory_order_relaxed);
    double best = queued ? s : best_share(th);
    if (queued || best >= TW_FREE_SHARE || th->bal.nshares >= TW_SHARED_WINDOWS)
        atomic_store_explicit(&th->bal.cpu_share, best, memory_order_relaxed);
}

/* The first window starts with the worker, before it pins itself to its core (engine.c):
 * a worker pinned to a busy core waits there first, 10-18 ms, inside the pinning call, and
 * that wait is the first sign of its sharing. */
void tw_balance_start(struct tw_thread *th)
{
    th->bal.wall = kr__clock_ns();
    th->bal.cpu = kr__thread_cpu_ns();
    th->bal.waited = thread_waited_ns(th);
    th->bal.slept = th->bal.slept_ns;
}

/* A window's share (CPU time over `awake` ns) published, unless `decisive` and it says
 * neither shared (the run queue waited over TW_WAIT_SHARED of `wall`) nor free; a window
 * mostly asleep says nothing (dropped, or kept growing if `decisive`). True if the window
 * is done with. */
static bool window_share(struct tw_thread *th, uint64_t cpu, uint64_t waited, uint64_t wall,
                         uint64_t awake, uint64_t min_ns, bool decisive)
{
    if (awake <= min_ns / 2) return !decisive;
    double s = (double)cpu / (double)awake;
    bool queued = (double)waited >= TW_WAIT_SHARED * (double)wall;
    if (decisive && !queued && s < TW_FREE_SHARE) return false;
    bool was = atomic_load_explicit(&th->bal.rq_shared, memory_order_relaxed);
    publish_share(th, s > 1 ? 1 : s, queued);
    /* (found sharing: a round now, so that the closer plans with it - rounds wait for this
     * worker, and the next had come 20-40 ms later) */
    if (queued && !was) tw_gvt_maybe_start(th, true);
    return true;
}

/* Over the window from th->bal.wall to now (at least min_ns long), the share of the wall
 * time it was not sleeping that it actually ran: near 1 on a core of its own, near 1/2
 * when another busy process shares the core. A window mostly asleep says nothing and is
 * dropped. `decisive`: only a window that says the core is shared (by the run queue) or
 * free counts, else it goes on growing. False if the window goes on. */
static bool balance_window(struct tw_thread *th, uint64_t min_ns, bool decisive)
{
    uint64_t now = kr__clock_ns();
    if (now - th->bal.wall < min_ns) return false;
    uint64_t cpu = kr__thread_cpu_ns(), waited = thread_waited_ns(th);
    uint64_t wall = now - th->bal.wall, slept = th->bal.slept_ns - th->bal.slept;
    uint64_t awake = wall > slept ? wall - slept : 0;
    /* (bal.wall 0: back from retirement, set_active - the window starts now) */
    if (th->bal.wall && !window_share(th, cpu - th->bal.cpu, waited - th->bal.waited, wall,
                                      awake, min_ns, decisive))
        return false;
    th->bal.wall = now;
    th->bal.cpu = cpu;
    th->bal.waited = waited;
    th->bal.slept = th->bal.slept_ns;
    return true;
}

void tw_balance_sample(struct tw_thread *th)
{
    if (th->g->cf.balance == KR_BALANCE_AUTO) balance_window(th, TW_BALANCE_NS / 2, false);
}

/* Between GVT rounds too, from the loop's housekeeping (`now` just read there): a worker
 * on a shared core takes part in few rounds (they wait for it), and its first window had
 * lasted 45-68 ms instead of TW_BALANCE_NS / 2 - the busy core found 50-113 ms into the
 * run with almost nothing committed (datastore beside a busy loop). Until a worker has a
 * share published, a window may end from TW_FIRST_NS on if it is decisive: the workers'
 * first shares decide whether one leaves a busy core, and until then the free core's
 * worker mostly waits for it (a first 20-ms window of 0.78 on the free core, not published
 * as a low share may be a blip, had put the decision off to 80 ms). */
void tw_balance_tick(struct tw_thread *th, uint64_t now)
{
    if (th->g->n < 2 || th->g->cf.balance != KR_BALANCE_AUTO) return;
    if (now - th->bal.wall >= TW_BALANCE_NS / 2) balance_window(th, TW_BALANCE_NS / 2, false);
    else if (atomic_load_explicit(&th->bal.cpu_share, memory_order_relaxed) < 0)
        balance_window(th, TW_FIRST_NS, true); /* (until a share is published) */
}

/* The start probe's window (from w0: wall, CPU and run-queue wait) so far: its share, and
 * whether it waited; true if that decides. */
struct start_win {
    uint64_t w0, c0, q0;
    double s;
    bool queued;
};

static bool start_decided(struct tw_thread *th, struct start_win *w, uint64_t now)
{
    w->s = (double)(kr__thread_cpu_ns() - w->c0) / (double)(now - w->w0);
    w->queued = (double)(thread_waited_ns(th) - w->q0) >= TW_WAIT_SHARED * (double)(now - w->w0);
    return (!w->queued && w->s >= TW_FREE_SHARE) || now - w->w0 >= TW_START_PROBE_NS;
}

/* A worker that starts out (the start on one worker, tw_balance_home): its core probed
 * once it is bound there (a thread starts on its creator's core, and waited 11 ms there
 * once, beside a busy loop, before it could bind itself to a free one). Free as soon as it
 * ran TW_FREE_SHARE of TW_FIRST_NS or more with little wait on the run queue; shared only
 * if after TW_START_PROBE_NS it still waited (a busy loop beside: 8-14 ms of 20-24, the
 * share 0.40-0.61): on an idle VM, 7 first windows of 60 read 0.03-0.72, some with waits
 * of 1.5-4 ms (the hypervisor, the run's own thread), and only a wait that lasts tells a
 * busy process beside. Then a round, for the plan. */
static void start_probe(struct tw_thread *th)
{
    const struct tw_global *g = th->g;
    struct start_win w = { kr__clock_ns(), kr__thread_cpu_ns(), thread_waited_ns(th), 1, false };
    uint64_t now = w.w0, at = w.w0 + TW_FIRST_NS;
    while (!atomic_load_explicit(&g->stop, memory_order_acquire)) {
        if ((now = kr__clock_ns()) < at) {
            __builtin_ia32_pause();
            continue;
        }
        if (start_decided(th, &w, now)) break;
        at = now + TW_FIRST_NS / 5;
    }
    th->bal.start_probe = false;
    th->bal.wall = now; /* (the next probe a period on) */
    atomic_store_explicit(&th->bal.wants_back, !w.queued, memory_order_relaxed);
    atomic_store_explicit(&th->bal.probe, w.s > 1 ? 1 : w.s, memory_order_release);
    tw_gvt_maybe_start(th, true);
}

/* The CPU share a spin of TW_PROBE_NS gets on this core. */
static double probe_spin(void)
{
    uint64_t c0 = kr__thread_cpu_ns(), w0 = kr__clock_ns();
    while (kr__clock_ns() - w0 < TW_PROBE_NS) __builtin_ia32_pause();
    return (double)(kr__thread_cpu_ns() - c0) / (double)(kr__clock_ns() - w0);
}

/* A retired worker: sleep, and now and then spin briefly to see whether the core is free
 * again (three probes in a row). */
void tw_retired_wait(struct tw_thread *th)
{
    if (th->bal.start_probe) {
        start_probe(th);
        return;
    }
    struct timespec ts = { 0, 5 * 1000 * 1000 };
    nanosleep(&ts, NULL);
    uint64_t now = kr__clock_ns();
    if (now - th->bal.wall < TW_PROBE_EVERY_NS) return;
    th->bal.wall = now;
    double s = probe_spin();
    atomic_store_explicit(&th->bal.probe, s > 1 ? 1 : s, memory_order_relaxed);
    th->bal.free_probes = s >= TW_FREE_SHARE ? th->bal.free_probes + 1 : 0;
    if (th->bal.free_probes >= 3)
        atomic_store_explicit(&th->bal.wants_back, 1, memory_order_relaxed);
}
