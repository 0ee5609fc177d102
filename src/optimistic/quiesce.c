/* quiesce.c - every worker meeting: the barrier and quiescence, which LP migration
 * (migrate.c) and snapshots (snapshot.c) run with every worker inside - no message left in
 * flight between them. */
#define _GNU_SOURCE
#include <time.h>
#include "optimistic/tw.h"
#include "optimistic/query.h"
#include "optimistic/balance.h"
#include "base/error.h"

/* ---- barrier (all n workers; spins, then sleeps: a worker may be descheduled) ---- */

void tw_barrier(struct tw_global *g, struct tw_thread *serve)
{
    unsigned gen = atomic_load_explicit(&g->bar_gen, memory_order_acquire);
    if (atomic_fetch_add_explicit(&g->bar_count, 1, memory_order_acq_rel) + 1 == g->n) {
        atomic_store_explicit(&g->bar_count, 0, memory_order_relaxed);
        atomic_fetch_add_explicit(&g->bar_gen, 1, memory_order_release);
        return;
    }
    for (unsigned spin = 0; atomic_load_explicit(&g->bar_gen, memory_order_acquire) == gen;) {
        if (serve) tw_query_serve(serve);
        if (++spin < 2048) {
            __builtin_ia32_pause();
            continue;
        }
        struct timespec ts = { 0, 20000 };
        nanosleep(&ts, NULL);
    }
}

/* ---- quiescence (migration and snapshots: snapshot.c) ---- */

/* --check: after quiescence nothing is left in a channel to this thread. */
static void check_quiet(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    for (unsigned from = 0; from < g->n; from++) {
        struct kr__chan *c = tw_chan(g, from, th->id);
        uint64_t tail = atomic_load_explicit(&c->tail, memory_order_acquire);
        if (from != th->id && tail != atomic_load_explicit(&c->head, memory_order_relaxed))
            kr__internal_error("quiescence: %llu messages from thread %u to thread %u "
                               "were not taken in",
                               (unsigned long long)(tail - atomic_load_explicit(
                                   &c->head, memory_order_relaxed)), from, th->id);
    }
}

/* Publish and drain until no worker sent a message during a whole pass (or kept one back
 * in a full channel): then every message is in its destination's heap (or local queue,
 * flushed by the drain). */
void tw_quiesce(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    if (tw_post_publish(th)) atomic_fetch_add_explicit(&g->mig_pushes, 1, memory_order_release);
    for (;;) {
        tw_barrier(g, NULL);
        tw_drain(th);
        /* (what the drain sent was counted as it was sent; a backlog that only now fits
         * its ring was not: any publish that made something visible, or kept something
         * back, asks for another pass) */
        if (tw_post_publish(th)) atomic_fetch_add_explicit(&g->mig_pushes, 1, memory_order_release);
        tw_barrier(g, NULL);
        uint64_t pushed = atomic_load_explicit(&g->mig_pushes, memory_order_acquire);
        tw_barrier(g, NULL);
        if (th->id == 0) atomic_store_explicit(&g->mig_pushes, 0, memory_order_relaxed);
        if (!pushed) break;
    }
    if (g->cf.check) check_quiet(th);
}
