/* xport.c - aggregated messages to other ranks (see xport.h). */
#include "net/xport.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"

#define XPORT_POLL_MAX 16   /* messages taken in per turn at most: the turn stays short */

int kr__xport_init(struct kr__xport *x, unsigned nthreads)
{
    memset(x, 0, sizeof *x);
    if (!kr__net.ops) return -1;
    x->ops = kr__net.ops;
    x->rank = kr__net.rank;
    x->nranks = kr__net.size;
    x->nthreads = nthreads;
    x->out = calloc((size_t)nthreads * (size_t)x->nranks, sizeof *x->out);
    x->incap = KR_XPORT_BYTES;
    x->in = malloc(x->incap);
    x->stamped = malloc((size_t)x->nranks * sizeof *x->stamped);
    if (!x->out || !x->in || !x->stamped) {
        free(x->out);
        free(x->in);
        free(x->stamped);
        return -1;
    }
    for (int k = 0; k < x->nranks; k++) x->stamped[k] = -INFINITY;
    pthread_mutex_init(&x->mu, NULL);
    return 0;
}

/* Progress message m's send under the lock: 1 done (or none), 0 still going, -1 error. */
static int reap(struct kr__xport *x, struct kr__xmsg *m)
{
    if (!m->req) return 1;
    pthread_mutex_lock(&x->mu);
    int r = x->ops->test(m->req);
    pthread_mutex_unlock(&x->mu);
    if (r == 1) m->req = NULL;
    return r;
}

/* A pair's messages, each waited for (every rank is past its last event by now). */
static void out_free(struct kr__xport *x, struct kr__xout *o)
{
    for (unsigned k = 0; k < o->nm; k++) {
        while (reap(x, &o->m[k]) == 0) {}
        free(o->m[k].buf);
    }
    free(o->m);
}

void kr__xport_destroy(struct kr__xport *x)
{
    size_t pairs = (size_t)x->nthreads * (size_t)x->nranks;
    for (size_t i = 0; x->out && i < pairs; i++) out_free(x, &x->out[i]);
    if (x->out) pthread_mutex_destroy(&x->mu);
    free(x->out);
    free(x->in);
    free(x->stamped);
    memset(x, 0, sizeof *x);
}

/* The pair's message to fill: a free one (its send done), or a new one. */
static struct kr__xmsg *to_fill(struct kr__xout *o)
{
    if (o->nm) return &o->m[o->fill];
    o->m = calloc(1, sizeof *o->m);
    if (!o->m) kr__fatal_oom("messages to other ranks", sizeof *o->m);
    o->nm = 1;
    return o->m;
}

/* Room for bytes more in m (a fresh one gets its stamp's place first). */
static void room(struct kr__xmsg *m, size_t bytes)
{
    if (!m->n) m->n = KR_XPORT_HDR;
    if (m->cap >= m->n + bytes) return;
    /* (one record larger than a message gets one to itself) */
    size_t cap = m->n + bytes > KR_XPORT_BYTES ? m->n + bytes : KR_XPORT_BYTES;
    unsigned char *b = realloc(m->buf, cap);
    if (!b) kr__fatal_oom("a message to another rank", cap);
    m->buf = b;
    m->cap = cap;
}

static bool has_records(const struct kr__xout *o)
{
    return o->nm && o->m[o->fill].n > KR_XPORT_HDR;
}

/* Stamp m and send it (the stamp read under the lock, so that stamps to one rank only
 * grow); nonzero if the send failed. */
static int stamp_send(struct kr__xport *x, struct kr__xmsg *m, int to)
{
    pthread_mutex_lock(&x->mu);
    double c = x->clock ? x->clock(x->clock_ctx) : -INFINITY;
    memcpy(m->buf, &c, sizeof c);
    memcpy(m->buf + sizeof c, &x->epoch, sizeof x->epoch);
    int r = x->ops->isend(m->buf, m->n, to, &m->req);
    x->messages_sent += r == 0;
    x->stamps_sent += r == 0 && m->n == KR_XPORT_HDR;
    if (c > x->stamped[to]) x->stamped[to] = c;
    pthread_mutex_unlock(&x->mu);
    return r;
}

/* Another message buffer to fill, every other one being in flight. */
static void one_more(struct kr__xout *o)
{
    struct kr__xmsg *more = realloc(o->m, (o->nm + 1) * sizeof *o->m);
    if (!more) kr__fatal_oom("messages to other ranks", (o->nm + 1) * sizeof *o->m);
    o->m = more;
    o->m[o->nm] = (struct kr__xmsg){ 0 };
    o->fill = o->nm++;
}

/* Stamp and send the message being filled, and make a free one the one to fill. */
static int send_fill(struct kr__xport *x, struct kr__xout *o, int to)
{
    if (stamp_send(x, &o->m[o->fill], to)) return -1;
    for (unsigned k = 1; k < o->nm; k++) { /* oldest first */
        unsigned i = (o->fill + k) % o->nm;
        int d = reap(x, &o->m[i]);
        if (d < 0) return -1;
        if (d == 1) {
            o->fill = i;
            o->m[i].n = 0; /* (room() makes the stamp's place) */
            return 0;
        }
    }
    one_more(o); /* (all in flight) */
    return 0;
}

unsigned char *kr__xport_reserve(struct kr__xport *x, unsigned t, int to, size_t bytes)
{
    struct kr__xout *o = &x->out[(size_t)t * (size_t)x->nranks + (size_t)to];
    struct kr__xmsg *m = to_fill(o);
    if (m->n > KR_XPORT_HDR && m->n + bytes > KR_XPORT_BYTES) {
        if (send_fill(x, o, to)) return NULL;
        m = &o->m[o->fill];
    }
    room(m, bytes);
    return m->buf + m->n;
}

void kr__xport_append(struct kr__xport *x, unsigned t, int to, size_t bytes)
{
    struct kr__xout *o = &x->out[(size_t)t * (size_t)x->nranks + (size_t)to];
    o->m[o->fill].n += bytes;
    o->records++;
}

/* The messages to one rank that have gone, oldest first, up to the first still going:
 * -1 if MPI failed. */
static int reap_done(struct kr__xport *x, struct kr__xout *o)
{
    for (unsigned k = 1; k < o->nm; k++) {
        int d = reap(x, &o->m[(o->fill + k) % o->nm]);
        if (d <= 0) return d;
    }
    return 0;
}

int kr__xport_flush(struct kr__xport *x, unsigned t)
{
    for (int to = 0; to < x->nranks; to++) {
        if (to == x->rank) continue;
        struct kr__xout *o = &x->out[(size_t)t * (size_t)x->nranks + (size_t)to];
        /* Oldest first, up to the first still going: sends to one rank finish in order,
         * and testing every message in flight each turn was 12% of a run whose receiver
         * lagged (hundreds in flight). */
        if (reap_done(x, o) || (has_records(o) && send_fill(x, o, to))) return -1;
    }
    return 0;
}

/* Whether this rank's clock moved past the last stamp rank `to` has of it. */
static bool clock_moved(struct kr__xport *x, int to)
{
    pthread_mutex_lock(&x->mu);
    bool moved = x->clock && x->clock(x->clock_ctx) > x->stamped[to];
    pthread_mutex_unlock(&x->mu);
    return moved;
}

int kr__xport_stamp(struct kr__xport *x, unsigned t)
{
    for (int to = 0; to < x->nranks; to++) {
        if (to == x->rank) continue;
        struct kr__xout *o = &x->out[(size_t)t * (size_t)x->nranks + (size_t)to];
        if (has_records(o)) continue; /* (its flush carries the stamp) */
        if (!clock_moved(x, to)) continue;
        struct kr__xmsg *m = to_fill(o);
        room(m, 0);
        if (send_fill(x, o, to)) return -1;
    }
    return 0;
}

void kr__xport_new_epoch(struct kr__xport *x)
{
    pthread_mutex_lock(&x->mu);
    x->epoch++;
    for (int k = 0; k < x->nranks; k++) x->stamped[k] = -INFINITY;
    pthread_mutex_unlock(&x->mu);
}

/* The clock stamp of the message in x->in (of len bytes, from rank `from`); -inf if it is
 * from before the clocks went back. */
static double stamp_of(const struct kr__xport *x, size_t len, int from)
{
    if (len < KR_XPORT_HDR)
        kr__internal_error("rank %d got a message of %zu bytes from rank %d: shorter than "
                           "its stamp", x->rank, len, from);
    double stamp;
    uint64_t epoch;
    memcpy(&stamp, x->in, sizeof stamp);
    memcpy(&epoch, x->in + sizeof stamp, sizeof epoch);
    return epoch < x->epoch ? -INFINITY : stamp;
}

static void grow_in(struct kr__xport *x, size_t len)
{
    unsigned char *b = realloc(x->in, len);
    if (!b) kr__fatal_oom("a message from another rank", len);
    x->in = b;
    x->incap = len;
}

int kr__xport_poll(struct kr__xport *x, kr__xport_deliver *deliver, void *ctx)
{
    if (pthread_mutex_trylock(&x->mu)) return 0; /* (another worker has the turn) */
    int count = 0;
    while (count < XPORT_POLL_MAX) {
        size_t len = 0;
        int from = -1;
        int r = x->ops->recv(x->in, x->incap, &len, &from);
        if (r == -2) { /* larger than the buffer: grow it, take the message again */
            grow_in(x, len);
            continue;
        }
        if (r <= 0) {
            pthread_mutex_unlock(&x->mu);
            return r < 0 ? -1 : count;
        }
        x->messages_received++;
        count++;
        /* (under the lock: it must not send) */
        deliver(ctx, x->in + KR_XPORT_HDR, len - KR_XPORT_HDR, from, stamp_of(x, len, from));
    }
    pthread_mutex_unlock(&x->mu);
    return count;
}
