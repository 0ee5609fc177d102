/* worker.c - a worker's life around its loop (engine.c): its start on its core, the
 * housekeeping between turns, idle and retired turns, and leaving the run together. */
#define _GNU_SOURCE
#include "optimistic/worker.h"
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "optimistic/clock.h"
#include "optimistic/query.h"
#include "optimistic/preempt.h"
#include "optimistic/balance.h"
#include "optimistic/ranks.h"
#include "base/error.h"

/* At housekeeping, from the time of the last `turns` loop turns: how many turns make
 * TW_POST_NS, the longest a message waits, and how many TW_EVERY_NS. */
static void tw_post_pace(struct tw_thread *th, unsigned turns)
{
    uint64_t now = kr__clock_ns();
    uint64_t turn_ns = (now - th->pace.turns_t0) / turns + 1;
    th->pace.turns_t0 = now;
    th->out.every = turn_ns >= TW_POST_NS ? 1 :
                     TW_POST_NS / turn_ns > TW_POST_TURNS_MAX ? TW_POST_TURNS_MAX :
                     (unsigned)(TW_POST_NS / turn_ns);
    th->pace.every = TW_EVERY_NS / turn_ns >= TW_EVERY_TURNS ? TW_EVERY_TURNS :
                (unsigned)(TW_EVERY_NS / turn_ns) + 1;
    th->rk.every = turn_ns >= TW_RANK_POST_NS ? 1 :
                    TW_RANK_POST_NS / turn_ns > TW_RANK_POST_TURNS_MAX ? TW_RANK_POST_TURNS_MAX :
                    (unsigned)(TW_RANK_POST_NS / turn_ns);
}

/* Whether an idle thread asks for a round at once: with uncommitted work (to commit it),
 * for a snapshot's bound, or once it has nothing below the end - once an episode, until it
 * runs events again (gv.end_asked), since a thread left with no events for a long time
 * would start rounds back to back while the others work. (The end waited for the periodic
 * round: a lone worker's 60-ms airport run took 66-70 ms at the default 5-ms period,
 * 200 ms at --gvt-period 200, and a minute at 60000.) */
static bool round_now(struct tw_thread *th, enum tw_round_use use)
{
    if (th->uncommitted > 0 || use == TW_ROUND_SNAP) return true;
    return use == TW_ROUND_END && th->gv.end_asked != th->cnt->processed + 1;
}

void tw_idle_round(struct tw_thread *th, enum tw_round_use use)
{
    if (tw_gvt_maybe_start(th, round_now(th, use)) && use == TW_ROUND_END)
        th->gv.end_asked = th->cnt->processed + 1;
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
/* (use: what a round would do for it - a snapshot's or the end's round at a sleep, not a
 * period later; held: an event it has is held back, tw_gvt_held) */
void tw_idle(struct tw_thread *th, unsigned *spins, bool oversubscribed,
             enum tw_round_use use, bool held)
{
    if (th->out.n) tw_post_publish(th);
    if (th->g->net.on) {
        tw_rank_turn(th, true);
        tw_gvt_held(th, held);
    }
    if (!oversubscribed && ++*spins < 4096) {
        __builtin_ia32_pause();
        return;
    }
    *spins = 0;
    th->cnt->idle_sleeps++;
    tw_idle_round(th, use);
    struct timespec ts = { 0, 20000 };
    uint64_t t0 = kr__clock_ns();
    nanosleep(&ts, NULL);
    th->bal.slept_ns += kr__clock_ns() - t0; /* (not running by choice: balance auto) */
}

/* Wait until every worker has left its loop, then apply the last published horizon: a GVT
 * round that closed while this thread was leaving (its report was in) published a horizon
 * the others apply, and an LP's committed history must end at the same key on every thread
 * (an interrupted run is summarised and digested as it stands). No round can close after
 * all have left. */
static void tw_stop_together(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    if (g->cf.queries) tw_query_settle(th); /* (its answer still to be written, or refused) */
    atomic_fetch_add_explicit(&g->end.left, 1, memory_order_acq_rel);
    while (atomic_load_explicit(&g->end.left, memory_order_acquire) < g->n) {
        if (atomic_load_explicit(&g->mig_req, memory_order_acquire)) { /* (planned before */
            tw_migrate(th);                                            /* the others left) */
            continue;
        }
        if (atomic_load_explicit(&g->sn.req, memory_order_acquire)) {
            tw_snap_round(th);
            continue;
        }
        if (g->cf.queries) tw_query_refuse(th); /* (one still asking left after the answer) */
        struct timespec ts = { 0, 20000 };
        nanosleep(&ts, NULL);
    }
    uint64_t ep = atomic_load_explicit(&g->epoch, memory_order_acquire);
    if (ep != th->gv.seen_epoch) {
        th->gv.seen_epoch = ep;
        tw_commit(th, &g->horizon);
    }
}

/* Housekeeping, every `every` turns that ran events (TW_EVERY_NS): pacing, GVT, tuning,
 * taking turns. */
void tw_housekeeping(struct tw_thread *th, bool over, unsigned turns)
{
    tw_post_pace(th, turns);
    tw_balance_tick(th, th->pace.turns_t0);
    tw_gvt_maybe_start(th, th->cnt->processed - th->cnt->safe - th->round_mark >=
                               th->g->cf.round_events);
    if (th->g->cf.ckpt_auto) tw_tune_ckpt(th);
    else if (th->g->cf.ckpt_by_cost && !th->lone.on) tw_ckpt_by_cost(th); /* (lone: no new
                                                                            * samples) */
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
bool tw_retired_turn(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    if (atomic_load_explicit(&g->mig_req, memory_order_acquire)) tw_migrate(th);
    else if (atomic_load_explicit(&g->sn.req, memory_order_acquire)) tw_snap_round(th);
    else if (atomic_load_explicit(&g->stop, memory_order_acquire)) return false;
    else if (th->fast && tw_safe_off(g)) tw_safe_stop(th);
    else tw_retired_wait(th);
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

void tw_worker_start(struct tw_thread *th)
{
    th->bal.sched_fd = tw_open_high("/proc/thread-self/schedstat"); /* (balance) */
    tw_balance_start(th); /* (before the pinning: moving to a busy core is a wait) */
    kr__pin_thread(th->id, th->g->n);
    kr__fault_thread_init();
    kr__watch_bind(&th->watch);
    tw_ts_thread_start(th);
    kr__ctx.run = th->r;
    kr__ctx.ops = tw_ops_of(th->g);
    kr__ctx.pool = th->pool;
    kr__ctx.eng = th;
    kr__ctx.mode = KR_MODE_NONE;
    th->pace.turns_t0 = kr__clock_ns();
    tw_lone_update(th); /* (one thread: lone from its first event) */
}

/* A thread's share of the end of the run: once all have left their loops, the last
 * horizon (and a committed error's), then its history and pools. */
void tw_thread_epilogue(struct tw_thread *th)
{
    tw_stop_together(th);
    tw_commit_before_error(th);
    tw_release_all(th);
    if (th->bal.sched_fd >= 0) close(th->bal.sched_fd);
    free(th->q.err);
    th->q.err = NULL;
    kr__pool_flush(th->pool);
}

void tw_worker_end(struct tw_thread *th)
{
    tw_thread_epilogue(th);
    th->cnt->cpu_ns = kr__thread_cpu_ns();
    if (th->g->net.on && kr__xport_flush(&th->g->net.x, th->id)) /* (ranks.c: tw_rank_end) */
        kr__die("MPI failed while a worker sent its last messages; the run cannot go on");
    tw_ts_thread_end(th);
    kr__fault_thread_fini();
    struct tw_global *g = th->g;
    if (atomic_fetch_sub_explicit(&g->end.running, 1, memory_order_release) == 1) {
        pthread_mutex_lock(&g->end.mu);
        pthread_cond_signal(&g->end.cv);
        pthread_mutex_unlock(&g->end.mu);
    }
}
