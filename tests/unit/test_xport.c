/* test_xport.c - events between ranks through the aggregated transport (net/xport.h), on the
 * MPI module. Alone it checks only that nothing of MPI starts; under mpirun (tests/e2e/
 * cluster.py runs it on 2 and 3 ranks) each of 2 threads per rank sends 20 000 wire records
 * to every other rank - payloads of 0 to 200 bytes, now and then 10 KiB (a message of its
 * own) and 100 KiB (past MPI's eager limit: sent only once taken) - flushing every few
 * records, while both threads take in what arrives. Every record must arrive once, intact,
 * in the order its thread sent it, and the stamps from one rank (a count of the clock's
 * reads here) must never go back, messages with only a stamp included. */
#include <pthread.h>
#include "check.h"
#include "msg/wire.h"
#include "net/xport.h"

#define T 2
#define N 20000
#define NLPS (1ull << 40)

static struct kr__xport x;
static uint64_t next_i[64][T];     /* per source rank and thread: the next record expected */
static uint64_t received;           /* (all under x.mu: deliver runs under it) */
static _Atomic int bad;
static double clock_now;           /* the stamps: each read is later (under x.mu) */
static double last_stamp[64];      /* per source rank (under x.mu) */
static uint64_t stamps_only;       /* messages taken in with no record (under x.mu) */

static double clock_read(void *ctx)
{
    (void)ctx;
    return clock_now += 1.0;
}

static size_t payload_of(uint64_t i)
{
    return i % 5000 == 4999 ? 100 * 1024 : i % 1000 == 999 ? 10 * 1024 : (i * 37) % 201;
}

static unsigned char byte_of(uint64_t rid, size_t k)
{
    return (unsigned char)(rid * 131 + k * 7);
}

static void deliver(void *ctx, const unsigned char *b, size_t n, int from, double stamp)
{
    (void)ctx;
    if (stamp < last_stamp[from]) bad = 1;
    last_stamp[from] = stamp;
    stamps_only += n == 0;
    const unsigned char *p = b, *end = b + n;
    struct kr__wire_item it;
    int r;
    while ((r = kr__wire_next(&p, end, NLPS, &it)) == KR_WIRE_OK) {
        unsigned src = (unsigned)(it.h.rid >> 48), t = (unsigned)(it.h.rid >> 40) & 0xff;
        uint64_t i = it.h.rid & 0xffffffffffull;
        if (src != (unsigned)from || t >= T || i != next_i[src][t] || it.h.k.ts != (double)i ||
            it.h.size != payload_of(i) || it.h.dest != (uint64_t)x.rank)
            bad = 1;
        for (size_t k = 0; k < it.h.size && !bad; k++)
            if (it.payload[k] != byte_of(it.h.rid, k)) bad = 1;
        next_i[src][t] = i + 1;
        received++;
    }
    if (r != KR_WIRE_END) bad = 1;
}

static uint64_t got(void)
{
    pthread_mutex_lock(&x.mu);
    uint64_t n = received;
    pthread_mutex_unlock(&x.mu);
    return n;
}

static void *sender(void *arg)
{
    unsigned t = (unsigned)(uintptr_t)arg;
    static _Thread_local unsigned char evbuf[sizeof(struct kr__ev) + 100 * 1024];
    struct kr__ev *e = (struct kr__ev *)evbuf;
    for (uint64_t i = 0; i < N; i++) {
        uint64_t rid = (uint64_t)x.rank << 48 | (uint64_t)t << 40 | i;
        e->k = (struct kr__key){ (double)i, 0, 0, 1, i };
        e->type = 3;
        e->size = (uint32_t)payload_of(i);
        for (size_t k = 0; k < e->size; k++) e->payload[k] = byte_of(rid, k);
        for (int to = 0; to < x.nranks; to++) {
            if (to == x.rank) continue;
            e->dest = (kr_lp)to;
            unsigned char *w = kr__xport_reserve(&x, t, to, kr__wire_event_bytes(e->size));
            if (!w) bad = 1;
            else kr__xport_append(&x, t, to, kr__wire_put_event(w, e, rid, 0));
        }
        if (i % 7 == 6 && kr__xport_flush(&x, t)) bad = 1;
        if (i % 700 == 699 && kr__xport_stamp(&x, t)) bad = 1; /* (just flushed: stamps) */
        if (i % 3 == 0 && kr__xport_poll(&x, deliver, NULL) < 0) bad = 1;
    }
    if (kr__xport_flush(&x, t)) bad = 1;
    uint64_t want = (uint64_t)(x.nranks - 1) * T * N;
    while (!bad && got() < want) {
        if (kr__xport_poll(&x, deliver, NULL) < 0) bad = 1;
        if (kr__xport_flush(&x, t)) bad = 1; /* (reaps finished sends) */
    }
    return NULL;
}

int main(void)
{
    struct kr__error err = { 0 };
    CHECK(kr__net_start(&err) == KR_OK);
    if (kr__net.size == 1) {
        CHECK(kr__xport_init(&x, T) == -1); /* (no module: no transport) */
        return check_done("xport (one process: nothing of MPI started)");
    }
    CHECK(kr__net.size <= 64);
    CHECK(kr__xport_init(&x, T) == 0);
    x.clock = clock_read;
    pthread_t th[T];
    for (unsigned t = 0; t < T; t++)
        CHECK(pthread_create(&th[t], NULL, sender, (void *)(uintptr_t)t) == 0);
    for (unsigned t = 0; t < T; t++) pthread_join(th[t], NULL);
    CHECK(!bad);
    CHECK(received == (uint64_t)(kr__net.size - 1) * T * N);
    for (int r = 0; r < kr__net.size; r++)
        for (unsigned t = 0; t < T; t++) CHECK(next_i[r][t] == (r == kr__net.rank ? 0 : N));
    CHECK(kr__net_agree(&err) == KR_OK); /* (every rank is done taking in) */
    printf("xport: rank %d sent %llu messages for %llu records\n", kr__net.rank,
           (unsigned long long)x.messages_sent,
           (unsigned long long)(kr__net.size - 1) * T * N);
    /* aggregated: a flush every 7 records per thread, so ~7 records a message per pair */
    CHECK(x.messages_sent * 5 < (uint64_t)(kr__net.size - 1) * T * N);
    CHECK(x.stamps_sent > 0 && stamps_only > 0);
    kr__xport_destroy(&x);
    kr__net_stop();
    return check_done("xport");
}
