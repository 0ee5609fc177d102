/* ranks.c - the optimistic engine across MPI ranks (docs/cluster.md): events and
 * antimessages to LPs of other ranks, GVT rounds over all ranks, committed output sent to
 * rank 0, and the end of the run.
 *
 * A rank owns a block of LPs (kr__run.lo .. hi) and runs the one-process engine on them; an
 * LP of another rank has owner g->n + its rank (tw_owner: the block rule, no table), so
 * that a send or a cancellation tells it apart as cheaply as a local one. A send to another
 * rank is encoded into the sending thread's message for that rank (net/xport.c); the
 * sender keeps its copy in the parent's child list, ahead of the local children, with the
 * remote id that names it there.
 * Workers flush and take in messages in their loop turns. What arrives is decoded into the
 * poller's pool and handed to the owner thread like a message from another thread; the
 * owner matches remote ids with antimessages (msg/match.c) in either order.
 *
 * GVT (Mattern's colours): each worker flips its colour at a round's phase 1 and counts the
 * records it sends and takes in by colour. The rank's round closes with a reduction over
 * all ranks of the least key (pending, in channels, and sent in this colour) and of the old
 * colour's records sent less received; until that sum is 0 some old record is still on its
 * way, and the ranks repeat phase 2 and the reduction.
 *
 * Safe events (tw.h) across ranks: each message is stamped with the sending rank's clock -
 * the least clock of its workers, each lowered to its records still waiting in its messages
 * - below which that rank sends nothing more. Messages from one rank arrive in order, so
 * once a poller has handed a message's events to their threads, the other ranks' least
 * stamp bounds everything still to come from them: it joins the workers' clocks
 * (tw_clock_min). A rank with nothing to send moves its clock on with stamps alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "optimistic/tw.h"
#include "optimistic/clock.h"
#include "optimistic/ranks.h"
#include "msg/wire.h"
#include "base/error.h"
#include "core/snapshot.h"
#include "state/addrmap.h"

_Noreturn void tw_net_broken(const char *what)
{
    char msg[256];
    snprintf(msg, sizeof msg, "MPI failed while %s on rank %d; the run cannot go on", what,
             kr__net.rank);
    kr__die(msg);
}

/* A message's stamp: the rank's clock (the file's comment). Under the network lock. */
static double rank_clock(void *arg)
{
    const struct tw_global *g = arg;
    kr_time c = INFINITY;
    for (unsigned t = 0; t < g->n; t++) {
        kr_time v = tw_time_of(atomic_load_explicit(&g->clock[t].rbits, memory_order_acquire));
        if (v < c) c = v;
    }
    return c;
}

/* Each other rank's output mark and clock, both at minus infinity. */
static void per_rank_tables(struct tw_net *net)
{
    net->rupto = calloc((size_t)net->nranks, sizeof *net->rupto);
    if (!net->rupto) kr__fatal_oom("output marks", (size_t)net->nranks * sizeof *net->rupto);
    for (int k = 0; k < net->nranks; k++) net->rupto[k] = kr__key_at(-INFINITY);
    net->from = malloc((size_t)net->nranks * sizeof *net->from);
    if (!net->from) kr__fatal_oom("clocks of other ranks", (size_t)net->nranks * sizeof(double));
    for (int k = 0; k < net->nranks; k++) net->from[k] = -INFINITY;
}

void tw_rank_setup(struct tw_global *g)
{
    struct tw_net *net = &g->net;
    net->err = kr__key_at(INFINITY);
    net->on = kr__net.size > 1;
    if (!net->on) return;
    g->gvt_ops = &tw_gvt_ranks;
    net->rank = kr__net.rank;
    net->nranks = kr__net.size;
    if (g->n + (unsigned)net->nranks > UINT16_MAX)
        kr__die("too many threads and ranks for the owner table (at most 65535 in all)");
    if (kr__xport_init(&net->x, g->n + 1)) tw_net_broken("setting up messages between ranks");
    pthread_mutex_init(&net->out_mu, NULL);
    pthread_mutex_init(&net->text_mu, NULL);
    per_rank_tables(net);
    net->hold = 0;
    atomic_init(&net->clock_bits, kr__time_bits(-INFINITY));
    net->x.clock = rank_clock;
    net->x.clock_ctx = g;
    /* (moves stay inside a rank, and migrate.c indexes the per-LP tables by LP id, which
     * holds only where lo is 0: not built for ranks yet) */
    g->cf.balance = KR_BALANCE_OFF;
}

void tw_rank_free(struct tw_global *g)
{
    struct tw_net *net = &g->net;
    if (!net->on) return;
    for (unsigned t = 0; t < g->n; t++) kr__match_destroy(&g->th[t].rk.match);
    kr__xport_destroy(&net->x);
    kr__outvec_free(&net->rout);
    free(net->rupto);
    free(net->from);
    pthread_mutex_destroy(&net->out_mu);
    pthread_mutex_destroy(&net->text_mu);
}

/* A remote id: never 0, unique among a receiver's live events - the sending rank + 1 (16
 * bits), thread (12: --threads is at most 1024) and a count (36: 6.9e10 sends per thread
 * before one repeats, long after the first was committed). */
static uint64_t next_rid(struct tw_thread *th)
{
    _Static_assert(KR_THREADS_MAX <= 4096, "a thread's part of a remote id is 12 bits");
    th->rk.id_next = (th->rk.id_next + 1) & ((1ull << 36) - 1);
    return ((uint64_t)(th->g->net.rank + 1) << 48) | ((uint64_t)th->id << 36) | th->rk.id_next;
}

static unsigned char *reserve(struct tw_thread *th, int to, size_t bytes)
{
    unsigned char *p = kr__xport_reserve(&th->g->net.x, th->id, to, bytes);
    if (!p) tw_net_broken("sending events");
    return p;
}

/* A record of this thread's colour leaves: counted, and (sent after phase 1) bounded. */
static void sent_record(struct tw_thread *th, int to, size_t bytes, const struct kr__key *k)
{
    kr__xport_append(&th->g->net.x, th->id, to, bytes);
    th->rk.sent[th->rk.nround & 1]++;
    if (kr__key_lt(k, &th->gv.min_sent)) th->gv.min_sent = *k;
    if (k->ts < th->rk.buf_min) th->rk.buf_min = k->ts; /* (until its flush: the stamp) */
}

void tw_rank_send(struct tw_thread *th, struct kr__ev *e, unsigned owner, struct kr__ev *parent)
{
    int to = (int)(owner - th->g->n);
    uint64_t rid = next_rid(th);
    if (__builtin_expect(e->pflags & KR_PAYLOAD_IMAGE, 0)) { /* (pointers into the image:
                                                             * named) */
        unsigned char copy[KR_PAYLOAD_MAX], table[KR_ADDR_TABLE_BYTES(KR_PAYLOAD_MAX)];
        memcpy(copy, e->payload, e->size);
        size_t tn = kr__addrmap_export(copy, e->size, table);
        unsigned char *p = reserve(th, to, kr__wire_event_size(e->size, e->flags) + tn);
        size_t n = kr__wire_put_event(p, e, rid, th->rk.nround);
        sent_record(th, to, n + kr__wire_put_ptrs(p, copy, table, tn), &e->k);
    } else {
        unsigned char *p = reserve(th, to, kr__wire_event_size(e->size, e->flags));
        sent_record(th, to, kr__wire_put_event(p, e, rid, th->rk.nround), &e->k);
    }
    th->cnt->remote_sent++;
    th->cnt->rank_sent++;
    if (!parent) { /* (init: never cancelled) */
        kr__pool_put(th->pool, e);
        return;
    }
    /* The copy goes first in the child list; RKIDS on a copy says the next is one too, so
     * that the copies are found without reading a local child (another thread's event). */
    e->st = KR_EV_REMOTE;
    e->rid = rid;
    e->flags = KR_EVF_REMOTE | (parent->flags & KR_EVF_RKIDS);
    e->sib = parent->child;
    parent->child = e;
    parent->flags |= KR_EVF_RKIDS;
}

void tw_rank_cancel(struct tw_thread *th, struct kr__ev *copy)
{
    int to = (int)(tw_owner(th->g, copy->dest) - th->g->n);
    unsigned char *p = reserve(th, to, sizeof(struct kr__wire_hdr));
    sent_record(th, to, kr__wire_put_anti(p, &copy->k, copy->dest, copy->rid, th->rk.nround),
                &copy->k);
    kr__pool_put(th->pool, copy);
}

void tw_rank_forget(struct tw_thread *th, struct kr__ev *parent)
{
    struct kr__ev *c = parent->child;
    for (bool more = true; more; c = parent->child) {
        more = c->flags & KR_EVF_RKIDS;
        parent->child = c->sib;
        kr__pool_put(th->pool, c);
    }
    parent->flags &= (uint8_t)~KR_EVF_RKIDS;
}

/* --check: nothing from another rank arrives below what this thread counted as safe. */
static void check_above_safe(const struct tw_thread *th, const struct kr__ev *e)
{
    if (e->k.ts < th->clk.safe_prev)
        kr__internal_error("thread %u received a%s from another rank at time %.17g below its "
                           "safe time %.17g (LP %llu)", th->id, e->flags & KR_EVF_ANTI ?
                           "n antimessage" : "n event", e->k.ts, th->clk.safe_prev,
                           (unsigned long long)e->dest);
}

void tw_rank_take(struct tw_thread *th, struct kr__ev *e)
{
    uint64_t rid = e->rid;
    if (th->g->cf.check) check_above_safe(th, e);
    if (e->flags & KR_EVF_ANTI) {
        struct kr__ev *t = kr__match_anti(&th->rk.match, rid, e->k.ts);
        kr__pool_put(th->pool, e);
        if (t) tw_cancel(th, t);
        return;
    }
    e->ckpt = NULL;
    e->flags &= (uint8_t)~KR_EVF_REMOTE;
    int m = kr__match_event(&th->rk.match, rid, e);
    if (m == KR_MATCH_ANNIHILATED) {
        kr__pool_put(th->pool, e);
        return;
    }
    if (m == KR_MATCH_DUPLICATE)
        kr__internal_error("thread %u got remote event %#llx twice (LP %llu, time %.17g)",
                           th->id, (unsigned long long)rid, (unsigned long long)e->dest,
                           e->k.ts);
    tw_deliver(th, e);
}

/* Committed remote events leave the map once it is a quarter full: a scan of the whole
 * table at every commit was 8% of a 2-rank PHOLD run with 65 536 LPs per rank. (Scanning
 * only just before the table grows measured 1.2-1.4 M/s instead of 0.8-1.0 there, but the
 * stale entries kept doubling it: 223 MiB per rank instead of 80. To do: a scan in slices.) */
void tw_rank_fossil(struct tw_thread *th, kr_time t)
{
    if (4 * th->rk.match.n >= th->rk.match.mask + 1) kr__match_fossil(&th->rk.match, t);
}

/* ---- taking messages in ---- */

struct take_ctx {
    struct tw_global *g;
    struct tw_thread *th;     /* the poller (NULL: the watcher, at the end) */
};

/* The payload's words that point into the program image, at this process's addresses
 * (KR_PAYLOAD_IMAGE); a module this rank has not loaded ends the run. */
static void import_pointers(const struct tw_global *g, struct kr__ev *e,
                            const struct kr__wire_item *it)
{
    uint64_t missing = 0;
    if (kr__addrmap_import(e->payload, e->size, it->table, &missing)) return;
    char msg[320];
    snprintf(msg, sizeof msg, "rank %d got an event for LP %llu (type %u) whose payload "
             "points into a module (name hash %016llx) it has not loaded: every rank must "
             "run the same model and kairos", g->net.rank, (unsigned long long)e->dest,
             e->type, (unsigned long long)missing);
    kr__die(msg);
}

/* The event (or antimessage) a wire item carries, as its sender made it. */
static struct kr__ev *ev_from_wire(struct tw_thread *th, const struct kr__wire_item *it,
                                   bool anti)
{
    struct kr__ev *e = kr__pool_get(th->pool, anti ? 0 : it->h.size);
    e->k = it->h.k;
    e->dest = it->h.dest;
    e->type = it->h.type;
    e->size = it->h.size;
    e->flags = (uint8_t)(KR_EVF_REMOTE | (anti ? KR_EVF_ANTI : it->h.flags & KR_EVF_SPAN));
    e->xflags = 0;
    e->pflags = it->table ? KR_PAYLOAD_IMAGE : KR_PAYLOAD_PLAIN;
    e->rid = it->h.rid;
    e->dur = it->h.flags & KR_EVF_SPAN ? it->dur : th->g->r->lookahead; /* (as it was sent) */
    e->child = e->sib = NULL;
    if (!anti) {
        memcpy(e->payload, it->payload, it->h.size);
        th->cnt->rank_received++;
    }
    return e;
}

/* An event or antimessage from another rank, into the poller's pool and on to its owner. */
static void take_event(struct tw_thread *th, const struct kr__wire_item *it)
{
    struct tw_global *g = th->g;
    bool anti = it->h.kind == KR_WIRE_ANTI;
    struct kr__ev *e = ev_from_wire(th, it, anti);
    if (it->table) import_pointers(g, e, it);
    unsigned owner = tw_owner(g, e->dest);
    if (tw_remote(g, owner))
        kr__internal_error("rank %d got a%s for LP %llu, which rank %u owns", g->net.rank,
                           anti ? "n antimessage" : "n event", (unsigned long long)e->dest,
                           owner - g->n);
    if (owner == th->id) tw_work_push(th, e, 2); /* (tw_flush_local: tw_rank_take) */
    else tw_transport_send(th, owner, e);
}

/* Rank 0: committed output of another rank. */
static void take_text(struct tw_net *net, const struct kr__wire_item *it, int from)
{
    pthread_mutex_lock(&net->out_mu);
    if (it->h.kind == KR_WIRE_UPTO) net->rupto[from] = it->h.k;
    else kr__outvec_add_part(&net->rout, &it->h.k, it->h.type, (const char *)it->payload,
                             it->h.size);
    pthread_mutex_unlock(&net->out_mu);
}

/* Under the network lock, once no hand-off of any poller waits in a full channel: the
 * other ranks' clock moves to their least stamp. */
static void clock_advance(struct tw_net *net)
{
    if (net->hold) return;
    kr_time c = INFINITY;
    for (int k = 0; k < net->nranks; k++)
        if (k != net->rank && net->from[k] < c) c = net->from[k];
    if (c > tw_time_of(atomic_load_explicit(&net->clock_bits, memory_order_relaxed)))
        atomic_store_explicit(&net->clock_bits, kr__time_bits(c), memory_order_release);
}

/* Under the network lock: the poller has handed on a message from rank `from` (the events
 * for its own LPs are on its work list, taken in before it runs another event); once what
 * it put for other threads is visible to them, the message's stamp may move the clock. A
 * full channel keeps some back: then the clock waits until this poller gets them through
 * (clock_retry). */
static void take_stamp(struct tw_thread *th, int from, double stamp)
{
    struct tw_net *net = &th->g->net;
    if (stamp > net->from[from]) net->from[from] = stamp;
    if (th->out.n && (tw_post_publish(th) & KR_CHAN_KEPT)) {
        if (!th->rk.held) net->hold++;
        th->rk.held = true;
        return;
    }
    if (th->rk.held) net->hold--;
    th->rk.held = false;
    clock_advance(net);
}

static void clock_retry(struct tw_thread *th)
{
    struct tw_net *net = &th->g->net;
    if (pthread_mutex_trylock(&net->x.mu)) return;
    take_stamp(th, net->rank, -INFINITY);
    pthread_mutex_unlock(&net->x.mu);
}

/* An event or antimessage counted in its round's colour: by the worker taking it (a newer
 * round nudges the worker's), or as late when the watcher takes it at the end. */
static void count_colour(struct take_ctx *c, const struct kr__wire_item *it)
{
    if (!c->th) {
        c->g->net.late[it->h.round & 1]++;
        return;
    }
    c->th->rk.recv[it->h.round & 1]++;
    if ((int8_t)(uint8_t)(it->h.round - c->th->rk.nround) > 0) c->th->rk.nudge = true;
}

/* --check: nothing comes below what the sender's last stamp promised. */
static void check_stamp(const struct tw_net *net, const struct kr__wire_item *it, int from)
{
    if (it->h.k.ts < net->from[from])
        kr__internal_error("rank %d got a%s at time %.17g from rank %d, whose stamp said "
                           "nothing below %.17g would come", net->rank,
                           it->h.kind == KR_WIRE_ANTI ? "n antimessage" : "n event",
                           it->h.k.ts, from, net->from[from]);
}

/* One item of a message: committed text (for rank 0's printer), or an event. */
static void take_item(struct take_ctx *c, const struct kr__wire_item *it, int from)
{
    struct tw_net *net = &c->g->net;
    if (it->h.kind == KR_WIRE_TEXT || it->h.kind == KR_WIRE_UPTO) {
        net->received_text++;
        if (net->rank == 0) take_text(net, it, from);
        return;
    }
    count_colour(c, it);
    if (c->g->cf.check) check_stamp(net, it, from);
    if (!net->ended && c->th) take_event(c->th, it);
}

static void take(void *arg, const unsigned char *buf, size_t n, int from, double stamp)
{
    struct take_ctx *c = arg;
    struct tw_net *net = &c->g->net;
    const unsigned char *p = buf, *end = buf + n;
    struct kr__wire_item it;
    int rc;
    while ((rc = kr__wire_next(&p, end, c->g->r->n, &it)) == KR_WIRE_OK) take_item(c, &it, from);
    if (rc != KR_WIRE_END)
        kr__internal_error("rank %d got a damaged message from rank %d: %s", net->rank, from,
                           kr__wire_strerror(rc));
    if (!net->ended && c->th) take_stamp(c->th, from, stamp);
}

/* A loop turn's share: send what waits and take in what came, every net_every turns (about
 * TW_RANK_POST_NS), or `now` (idle, a GVT report). */
void tw_rank_turn(struct tw_thread *th, bool now)
{
    struct tw_net *net = &th->g->net;
    if (!now && ++th->rk.turns < th->rk.every) return;
    th->rk.turns = 0;
    if (kr__xport_flush(&net->x, th->id)) tw_net_broken("sending events");
    th->rk.buf_min = INFINITY;
    /* (one worker sends the stamps alone: each would move the same clock; and only when it
     * moved, or an idle worker would take the lock for every rank at every spin) */
    if (th->id == 0 && th->fast) {
        double c = rank_clock(th->g);
        if (c > th->rk.stamp_last && kr__xport_stamp(&net->x, 0)) tw_net_broken("sending clocks");
        if (c > th->rk.stamp_last) th->rk.stamp_last = c;
    }
    struct take_ctx c = { th->g, th };
    if (kr__xport_poll(&net->x, take, &c) < 0) tw_net_broken("taking events in");
    if (th->rk.held) clock_retry(th);
}

/* A worker's clock (engine.c) as its stamp's part: lowered to its records that wait in its
 * messages, which leave only at its next flush, maybe after a stamp from the new clock. */
void tw_rank_clock_publish(struct tw_thread *th, kr_time f)
{
    uint64_t v = kr__time_bits(th->rk.buf_min < f ? th->rk.buf_min : f);
    _Atomic uint64_t *rb = &th->g->clock[th->id].rbits;
    if (atomic_load_explicit(rb, memory_order_relaxed) != v) /* (a write only if it moved) */
        atomic_store_explicit(rb, v, memory_order_release);
}

/* ---- GVT across ranks ---- */

/* Start the reduction of net->in (reduce_test sees it through). */
static void reduce_begin(struct tw_net *net, const char *what)
{
    pthread_mutex_lock(&net->x.mu); /* (the worker that sees the result reads reduce_t0) */
    net->reduce_t0 = kr__clock_ns();
    int rc = net->x.ops->gvt_start(&net->in, &net->out, &net->req);
    pthread_mutex_unlock(&net->x.mu);
    if (rc) tw_net_broken(what);
}

static void reduce_start(struct tw_global *g, uint64_t s, unsigned phase)
{
    reduce_begin(&g->net, "starting a GVT round");
    atomic_store_explicit(&g->state, (s & ~TW_PH_MASK) | phase, memory_order_release);
}

/* What this rank tells the others in a round: it is stopping, a stop is not acknowledged
 * by all its threads yet, a snapshot is due by the wall clock. */
static unsigned round_flags(const struct tw_global *g)
{
    bool unacked =
        atomic_load_explicit(&g->end.stop_acks, memory_order_acquire) < g->end.fast_threads;
    bool snap_due = g->sn.wall != UINT64_MAX && kr__clock_ns() >= g->sn.wall;
    return (g->net.want_stop ? KR_NET_STOPPING : 0) | (unacked ? KR_NET_UNACKED : 0) |
           (snap_due ? KR_NET_SNAP_DUE : 0);
}

static void tw_rank_gvt_start(struct tw_thread *th, uint64_t s, const struct kr__key *min)
{
    struct tw_global *g = th->g;
    struct tw_net *net = &g->net;
    int64_t white = 0;
    for (unsigned t = 0; t < g->n; t++) white += g->th[t].rk.white;
    pthread_mutex_lock(&g->end.err_mu);
    struct kr__key err = g->end.err ? g->end.err_key : kr__key_at(INFINITY);
    pthread_mutex_unlock(&g->end.err_mu);
    /* (an interrupted run stops past every rank's safe events: gvt.c, stop_point) */
    uint64_t hi = atomic_load_explicit(&g->end.safe_hi, memory_order_relaxed);
    net->in = (struct kr__net_gvt){ .min = *min, .err = err, .in_flight = white,
                                    .safe_hi = kr__key_at(hi ? tw_time_of(hi - 1) : -INFINITY),
                                    .lookahead = INFINITY, .max_done = kr__key_at(-INFINITY),
                                    .flags = round_flags(g) };
    reduce_start(g, s, TW_PH_NET);
}

static void tw_rank_done_start(struct tw_thread *th, uint64_t s, bool all,
                               const struct kr__key *maxd)
{
    struct tw_net *net = &th->g->net;
    net->in.done = all;
    net->in.max_done = *maxd;
    reduce_start(th->g, s, TW_PH_NET_DONE);
}

/* One look at the round's reduction: 1 done (this caller owns the result), 0 not yet. */
static int reduce_test(struct tw_net *net)
{
    if (pthread_mutex_trylock(&net->x.mu)) return 0;
    int rc = net->req ? net->x.ops->test(net->req) : 0;
    if (rc == 1) net->req = NULL;
    pthread_mutex_unlock(&net->x.mu);
    if (rc < 0) tw_net_broken("in a GVT round");
    return rc;
}

/* The ranks' GVT: the horizon (or the end), or another phase 2 while old records are on
 * their way. */
static void gvt_result(struct tw_thread *th, uint64_t s)
{
    struct tw_global *g = th->g;
    struct tw_net *net = &g->net;
    if (g->cf.check && net->out.in_flight < 0)
        kr__internal_error("GVT round: %lld more old-colour records taken in than sent",
                           (long long)-net->out.in_flight);
    if (net->out.in_flight) {
        atomic_store_explicit(&g->count, 0, memory_order_relaxed);
        atomic_store_explicit(&g->state, (s & ~TW_PH_MASK) + TW_ROUND + TW_PH_REPORT,
                              memory_order_release);
        return;
    }
    if (net->out.flags & KR_NET_STOPPING) atomic_store(&g->end.stopping, 1);
    if (!isinf(net->out.err.ts)) { /* a model error on some rank: every rank stops */
        pthread_mutex_lock(&net->out_mu); /* (the printer reads it) */
        net->err = net->out.err;
        pthread_mutex_unlock(&net->out_mu);
        atomic_store_explicit(&g->stop, 1, memory_order_release);
    }
    tw_gvt_found(th, s, net->out.min);
}

static void tw_rank_gvt_poll(struct tw_thread *th, uint64_t s)
{
    struct tw_net *net = &th->g->net;
    if (!reduce_test(net)) return;
    net->reductions++;
    net->reduce_ns += kr__clock_ns() - net->reduce_t0;
    if ((s & TW_PH_MASK) == TW_PH_NET) gvt_result(th, s);
    else tw_gvt_done_found(th, s, th->g->net.out.done == (uint64_t)th->g->net.nranks,
                           th->g->net.out.max_done);
}

/* Before a thread's GVT report: what other ranks sent, taken in now. */
static void rank_report(struct tw_thread *th)
{
    tw_rank_turn(th, true);
}

const struct tw_gvt_ops tw_gvt_ranks = { tw_rank_gvt_start, tw_rank_done_start, rank_report,
                                         tw_rank_gvt_poll };

/* ---- committed output to rank 0 ---- */

/* One record of committed output to rank 0, on the printer's channel (slot n). */
static void send_text(struct tw_net *net, unsigned n, const struct kr__outrec *o)
{
    unsigned char *p = kr__xport_reserve(&net->x, n, 0, kr__wire_event_bytes(o->len));
    if (!p) tw_net_broken("sending committed output");
    kr__xport_append(&net->x, n, 0, kr__wire_put_text(p, &o->k, o->part, o->text, o->len));
    net->sent_text++;
}

/* Ranks but 0: what the workers committed, with the mark of how far it reaches, to rank 0
 * (from the watcher's slot, n: by the watcher, or by thread 0 taking a snapshot). */
void tw_rank_output(struct tw_global *g, bool all)
{
    struct tw_net *net = &g->net;
    pthread_mutex_lock(&net->text_mu);
    struct kr__outvec v = { 0 };
    struct kr__key upto = kr__outsinks_take(&g->th[0].cm.sink, g->n, sizeof g->th[0], &v);
    if (all) upto = kr__key_last();
    for (size_t i = 0; i < v.n; i++) send_text(net, g->n, &v.r[i]);
    kr__outvec_free(&v);
    unsigned char *p = kr__xport_reserve(&net->x, g->n, 0, sizeof(struct kr__wire_hdr));
    if (!p) tw_net_broken("sending committed output");
    kr__xport_append(&net->x, g->n, 0, kr__wire_put_upto(p, &upto));
    net->sent_text++;
    if (kr__xport_flush(&net->x, g->n)) tw_net_broken("sending committed output");
    pthread_mutex_unlock(&net->text_mu);
}

/* Rank 0: the other ranks' output joins v, and how far all of it may be printed. */
struct kr__key tw_rank_print_upto(struct tw_global *g, struct kr__outvec *v, struct kr__key upto)
{
    struct tw_net *net = &g->net;
    pthread_mutex_lock(&net->out_mu);
    struct kr__key last = kr__key_last();
    kr__outvec_move_before(&net->rout, &last, v);
    for (int k = 1; k < net->nranks; k++)
        if (kr__key_lt(&net->rupto[k], &upto)) upto = net->rupto[k];
    if (!isinf(net->err.ts)) { /* nothing after the first error of all ranks */
        struct kr__key past = net->err;
        past.seq++;
        if (kr__key_lt(&past, &upto)) upto = past;
    }
    pthread_mutex_unlock(&net->out_mu);
    return upto;
}

/* ---- snapshots (snapshot.c): thread 0 of each rank, the others waiting ---- */

/* One reduction, waited for (every rank makes the same ones in the same order). */
static void reduce_now(struct tw_net *net, uint64_t flags, const struct kr__key *min,
                       int64_t in_flight)
{
    net->in = (struct kr__net_gvt){ .min = *min, .safe_hi = kr__key_at(-INFINITY),
                                    .err = kr__key_at(INFINITY), .lookahead = INFINITY,
                                    .in_flight = in_flight,
                                    .max_done = kr__key_at(-INFINITY), .flags = flags };
    reduce_begin(net, "taking a snapshot");
    while (!reduce_test(net)) {}
}

/* Whether any rank's `mine` holds. */
bool tw_rank_any(struct tw_global *g, bool mine)
{
    struct kr__key none = kr__key_at(INFINITY);
    reduce_now(&g->net, mine ? KR_NET_FAILED : 0, &none, 0);
    return g->net.out.flags & KR_NET_FAILED;
}

/* After every worker of every rank has sent what it had, taken in what came and handed it
 * on: true once nothing sent between ranks (events, antimessages: sent less received over
 * all ranks) is on its way and rank 0 has every rank's output before the horizon. *least:
 * this rank's least pending key in, all ranks' out. (Taking in sends nothing back here:
 * every LP is at the horizon, and what arrives lies past it.) */
bool tw_rank_settled(struct tw_global *g, struct kr__key *least)
{
    struct tw_net *net = &g->net;
    int64_t flight = 0;
    for (unsigned t = 0; t < g->n; t++) {
        const struct tw_thread *th = &g->th[t];
        flight += (int64_t)(th->rk.sent[0] + th->rk.sent[1]) -
                  (int64_t)(th->rk.recv[0] + th->rk.recv[1]);
    }
    uint64_t flags = 0;
    if (net->rank == 0) {
        pthread_mutex_lock(&net->out_mu);
        for (int k = 1; k < net->nranks; k++)
            if (kr__key_lt(&net->rupto[k], &g->horizon)) flags = KR_NET_WAITING;
        pthread_mutex_unlock(&net->out_mu);
    }
    reduce_now(net, flags, least, flight);
    *least = net->out.min;
    return !net->out.in_flight && !(net->out.flags & KR_NET_WAITING);
}

/* The clocks went back to lo on every rank: so do the other ranks' stamps here, and stamps
 * still on their way from before count for nothing (net/xport.h). */
void tw_rank_restart(struct tw_global *g, kr_time lo)
{
    struct tw_net *net = &g->net;
    pthread_mutex_lock(&net->x.mu);
    for (int k = 0; k < net->nranks; k++) net->from[k] = lo;
    atomic_store_explicit(&net->clock_bits, kr__time_bits(lo), memory_order_release);
    pthread_mutex_unlock(&net->x.mu);
    kr__xport_new_epoch(&net->x);
}

static void link_send(void *ctx, const void *buf, size_t len)
{
    struct tw_net *net = ctx;
    pthread_mutex_lock(&net->x.mu);
    int rc = net->x.ops->send_bytes(buf, len, 0);
    pthread_mutex_unlock(&net->x.mu);
    if (rc) tw_net_broken("sending its part of a snapshot");
}

static void *link_recv(void *ctx, int from, size_t *len)
{
    struct tw_net *net = ctx;
    void *buf = NULL;
    pthread_mutex_lock(&net->x.mu);
    int rc = net->x.ops->recv_bytes(&buf, len, from);
    pthread_mutex_unlock(&net->x.mu);
    if (rc) tw_net_broken("taking in the parts of a snapshot");
    return buf;
}

void tw_rank_link(struct tw_global *g, struct kr__snap_link *l)
{
    *l = (struct kr__snap_link){ g->net.nranks, link_send, link_recv, &g->net };
}

/* ---- the end ---- */

/* Every rank past its last event: take in (and drop) what is still on its way, until the
 * ranks agree that every record sent has been taken in - then no message is left
 * unreceived at MPI_Finalize, and rank 0 has all the output - and on the lowest model error
 * of all ranks, if there was one. */
/* Commit hooks run on rank 0 as it prints: with every rank's output in, it prints the rest
 * now, and one more reduction makes an error in a hook every rank's. */
static void end_hooks(struct tw_global *g, struct take_ctx *c)
{
    struct tw_net *net = &g->net;
    if (net->rank == 0) tw_print_committed(g, g->end.err == NULL && isinf(net->err.ts));
    pthread_mutex_lock(&g->end.err_mu);
    struct kr__key err = g->end.err ? g->end.err_key : kr__key_at(INFINITY);
    pthread_mutex_unlock(&g->end.err_mu);
    net->in = (struct kr__net_gvt){ .min = kr__key_at(INFINITY), .err = err };
    reduce_begin(net, "ending the run");
    while (!reduce_test(net))
        if (kr__xport_poll(&net->x, take, c) < 0) tw_net_broken("ending the run");
    pthread_mutex_lock(&net->out_mu);
    if (kr__key_lt(&net->out.err, &net->err)) net->err = net->out.err;
    pthread_mutex_unlock(&net->out_mu);
}

/* Messages this rank sent to others less those it took from them (the sum over ranks is
 * what is still in flight). */
static int64_t in_flight(const struct tw_global *g)
{
    const struct tw_net *net = &g->net;
    int64_t sent = (int64_t)net->sent_text, got = (int64_t)net->received_text;
    for (unsigned t = 0; t < g->n; t++) {
        sent += (int64_t)(g->th[t].rk.sent[0] + g->th[t].rk.sent[1]);
        got += (int64_t)(g->th[t].rk.recv[0] + g->th[t].rk.recv[1]);
    }
    return sent - got - (int64_t)(net->late[0] + net->late[1]);
}

/* One reduction of the end: what is in flight between the ranks, and the first error;
 * true while messages are still on their way. */
static bool end_round(struct tw_global *g, struct take_ctx *c, const struct kr__key *err)
{
    struct tw_net *net = &g->net;
    if (kr__xport_flush(&net->x, g->n)) tw_net_broken("ending the run");
    if (kr__xport_poll(&net->x, take, c) < 0) tw_net_broken("ending the run");
    net->in = (struct kr__net_gvt){ .min = kr__key_at(INFINITY), .err = *err,
                                    .in_flight = in_flight(g) };
    reduce_begin(net, "ending the run");
    while (!reduce_test(net))
        if (kr__xport_poll(&net->x, take, c) < 0) tw_net_broken("ending the run");
    return net->out.in_flight != 0;
}

void tw_rank_end(struct kr__run *r, struct tw_global *g)
{
    (void)r;
    struct tw_net *net = &g->net;
    net->ended = true;
    struct take_ctx c = { g, NULL };
    pthread_mutex_lock(&g->end.err_mu);
    struct kr__key err = g->end.err ? g->end.err_key : kr__key_at(INFINITY);
    pthread_mutex_unlock(&g->end.err_mu);
    while (end_round(g, &c, &err)) {
    }
    /* (a model error found in the last commit: every rank fails, the lowest key reports) */
    pthread_mutex_lock(&net->out_mu);
    if (kr__key_lt(&net->out.err, &net->err)) net->err = net->out.err;
    pthread_mutex_unlock(&net->out_mu);
    if (g->r->model->commit) end_hooks(g, &c);
}

/* ---- the start ---- */

int tw_rank_started(struct kr__run *r, char *out, size_t len, int st)
{
    const struct kr__net_ops *o = kr__net.ops;
    if (kr__net_print_gathered(out, len)) tw_net_broken("gathering init's output");
    int *sts = calloc((size_t)kr__net.size, sizeof *sts);
    if (!sts) kr__fatal_oom("start-up statuses", (size_t)kr__net.size * sizeof *sts);
    if (o->allgather_int(st, sts)) tw_net_broken("agreeing on the start");
    int failed = -1;
    for (int k = 0; k < kr__net.size && failed < 0; k++)
        if (sts[k]) failed = k;
    free(sts);
    if (st || failed < 0) return st;
    kr__net.defer = true;
    return kr__fail(&r->fail, KR_ERR_MODEL, "init failed on rank %d", failed);
}

/* Every rank, before its workers start: init's records to other ranks leave (stamped
 * -infinity, ahead of every real stamp), and the ranks agree on the run's lookahead (the
 * least any LP declared, as one process finds it: each rank saw only its own LPs' init) and
 * on the least event of all, `lo` here (pending, or sent by init to another rank). Nothing
 * from another rank can come below that, and nothing sent later below it plus the lookahead:
 * it starts every clock (engine.c, tw_clock_start). Collective. */
kr_time tw_rank_begin(struct tw_global *g, kr_time lo)
{
    struct tw_net *net = &g->net;
    struct kr__run *r = g->r;
    for (unsigned t = 0; t < g->n; t++) {
        struct tw_thread *th = &g->th[t];
        if (th->rk.buf_min < lo) lo = th->rk.buf_min; /* (init's records to other ranks) */
        if (kr__xport_flush(&net->x, t)) tw_net_broken("sending init's events");
        th->rk.buf_min = INFINITY;
    }
    net->in = (struct kr__net_gvt){ .min = kr__key_at(lo), .safe_hi = kr__key_at(-INFINITY),
                                    .err = kr__key_at(INFINITY),
                                    .lookahead = r->promise.lookahead_declared ? r->lookahead : INFINITY,
                                    .max_done = kr__key_at(-INFINITY) };
    reduce_begin(net, "starting the run");
    while (!reduce_test(net)) {}
    if (!isinf(net->out.lookahead)) {
        r->lookahead = net->out.lookahead;
        r->promise.lookahead_declared = true;
    }
    lo = net->out.min.ts;
    for (int k = 0; k < net->nranks; k++) net->from[k] = lo;
    atomic_store_explicit(&net->clock_bits, kr__time_bits(lo), memory_order_release);
    return lo;
}

/* Nothing buffered for other ranks yet; flushed every turn until the turns are timed. */
static void ranks_init(struct tw_thread *th)
{
    th->rk.buf_min = INFINITY;
    th->rk.stamp_last = -INFINITY;
    th->rk.every = 1;
}

const struct tw_module tw_mod_ranks = { .name = "ranks", .init = ranks_init };
