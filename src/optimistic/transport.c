/* transport.c - how messages cross between worker threads: batched channels (msg/channel.h),
 * when a sender publishes them, and how a receiver takes them in.
 *
 * A sender publishes its channels once TW_POST_BATCH messages wait or after about
 * TW_POST_NS of its loop turns (tw_post_turn), at once for a message below its receiver's
 * progress (tw_transport_send), and always before anything that reasons about messages in
 * flight: a GVT phase-1 pass (gvt.c), a new safe-event clock (engine.c), going idle, a
 * migration (migrate.c). A message that waited in a full channel's backlog past such a point
 * is counted by its sender instead (tw_post_backlog_min). */
#include "optimistic/tw.h"
#include "optimistic/ranks.h"
#include <stdlib.h>
#include "base/error.h"

unsigned tw_post_publish(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    size_t keep = 0;
    unsigned done = 0;
    for (size_t i = 0; i < th->out.n; i++) {
        unsigned to = th->out.chans[i];
        struct kr__chan *c = tw_chan(g, th->id, to);
        unsigned d = kr__chan_publish(c, &g->arr[to]);
        done |= d;
        if (d & KR_CHAN_KEPT) th->out.chans[keep++] = to; /* (a full ring: the rest waits) */
        else c->listed = false;
    }
    th->out.n = keep;
    th->out.msgs = 0;
    th->out.turns = 0;
    return done;
}

struct kr__key tw_post_backlog_min(const struct tw_thread *th)
{
    struct kr__key m = kr__key_at(INFINITY);
    for (size_t i = 0; i < th->out.n; i++) {
        struct kr__key b = kr__chan_backlog_min(tw_chan(th->g, th->id, th->out.chans[i]));
        if (kr__key_lt(&b, &m)) m = b;
    }
    return m;
}

/* --check: nothing arrives below the safe time or the quiet bound the thread ran under. */
static __attribute__((noinline)) void check_taken(const struct tw_thread *th,
                                                  const struct kr__ev *e)
{
    const char *what = e->flags & KR_EVF_ANTI ? "n antimessage" : " message";
    if (e->k.ts < th->clk.safe_prev)
        kr__internal_error("thread %u received a%s at time %.17g below its safe time "
                           "%.17g (LP %llu)", th->id, what, e->k.ts, th->clk.safe_prev,
                           (unsigned long long)e->dest);
    if (tw_hop_lt(&e->k, &th->clk.qbound))
        kr__internal_error("thread %u received a%s at (%.17g, %u hops) below its quiet bound "
                           "(%.17g, %u) (LP %llu)", th->id, what, e->k.ts, e->k.gen,
                           th->clk.qbound.ts, th->clk.qbound.gen, (unsigned long long)e->dest);
}

static void tw_take(struct tw_thread *th, struct kr__ev *e)
{
    if (__builtin_expect(e->xflags & KR_EVX_SENDBACK, 0)) { /* (a request, not an event to
                                                            * run: no time to check) */
        tw_sendback_take(th, e);
        return;
    }
    if (th->g->cf.check) check_taken(th, e);
    if (e->flags & KR_EVF_REMOTE) {
        tw_rank_take(th, e);
    } else if (e->flags & KR_EVF_ANTI) {
        tw_cancel(th, e->child);
        kr__pool_put(th->pool, e);
    } else {
        tw_deliver(th, e);
    }
}

#define TW_TAKE_MAX 64
#define TW_TAKE_AHEAD 4

/* n events taken from a channel, each prefetched TW_TAKE_AHEAD before its turn. */
static inline void take_batch(struct tw_thread *th, struct kr__ev *const *buf, size_t n)
{
    th->clk.qtaken += n;
    for (size_t i = 0; i < n && i < TW_TAKE_AHEAD; i++) __builtin_prefetch(buf[i]);
    for (size_t i = 0; i < n; i++) {
        if (i + TW_TAKE_AHEAD < n) __builtin_prefetch(buf[i + TW_TAKE_AHEAD]);
        tw_take(th, buf[i]);
    }
}

/* Take in everything published to this thread. The events were written on other cores:
 * the pointers come a cache line of 8 at a time, and each event is prefetched a few ahead
 * of its use. */
void tw_drain(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    struct kr__ev *buf[TW_TAKE_MAX];
    for (unsigned from = 0; from < g->n; from++) {
        if (from == th->id) continue;
        struct kr__chan *c = tw_chan(g, from, th->id);
        size_t n;
        while ((n = kr__chan_take(c, buf, TW_TAKE_MAX)) > 0) {
            take_batch(th, buf, n);
            if (n < TW_TAKE_MAX) break;
        }
    }
    tw_flush_local(th);
}

/* Its channels from every thread, where they arrive, and its list of channels to publish. */
static void transport_init(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    kr__arrivals_init(&g->arr[th->id]);
    for (unsigned from = 0; from < g->n; from++)
        kr__chan_init(tw_chan(g, from, th->id), g->cf.chan_slots);
    th->out.chans = malloc(g->n * sizeof *th->out.chans);
    if (!th->out.chans) kr__fatal_oom("channels", g->n * sizeof *th->out.chans);
    th->out.every = 1; /* (until the turns are timed) */
}

static void transport_end(struct tw_thread *th)
{
    free(th->out.chans);
}

const struct tw_module tw_mod_transport = {
    .name = "transport", .init = transport_init, .end = transport_end,
};
