/* test_channel.c - batched channels under real concurrency: 3 producers, each with its own
 * channel to one consumer, put 200k events each and publish in uneven batches while the
 * consumer takes; rings fill, so backlogs are exercised. Nothing is lost or duplicated and
 * each producer's events come out in the order it put them. Then, on one thread: nothing is
 * visible before it is published, bh_min while the receiver listens, and the backlog's
 * accounting. */
#include <pthread.h>
#include "check.h"
#include "msg/channel.h"

#define PRODUCERS 3
#define PER 200000

static struct kr__chan chan[PRODUCERS];
static struct kr__arrivals arr;
static struct kr__ev *evs;

static void *producer(void *arg)
{
    uintptr_t p = (uintptr_t)arg;
    for (uint64_t i = 0; i < PER; i++) {
        struct kr__ev *e = &evs[p * PER + i];
        e->k.src = p;
        e->k.seq = i;
        e->k.ts = (double)(i % 1000);
        kr__chan_put(&chan[p], e);
        if ((i * 7919 + p) % 37 == 0) kr__chan_publish(&chan[p], &arr);
    }
    while (kr__chan_publish(&chan[p], &arr) & KR_CHAN_KEPT) {
    }
    return NULL;
}

static void concurrent(void)
{
    evs = calloc(PRODUCERS * PER, sizeof *evs);
    CHECK(evs != NULL);
    for (int p = 0; p < PRODUCERS; p++) kr__chan_init(&chan[p], p ? KR_CHAN_SLOTS : 4);
    kr__arrivals_init(&arr);
    pthread_t t[PRODUCERS];
    for (uintptr_t p = 0; p < PRODUCERS; p++) pthread_create(&t[p], NULL, producer, (void *)p);
    uint64_t next[PRODUCERS] = { 0 }, got = 0;
    struct kr__ev *buf[50];
    while (got < PRODUCERS * PER) {
        for (int p = 0; p < PRODUCERS; p++) {
            size_t n = kr__chan_take(&chan[p], buf, 50);
            for (size_t i = 0; i < n; i++) {
                CHECK(buf[i]->k.src == (uint64_t)p);
                CHECK(buf[i]->k.seq == next[p]); /* FIFO, no loss, no duplicate */
                next[p]++;
                got++;
            }
        }
    }
    for (int p = 0; p < PRODUCERS; p++) pthread_join(t[p], NULL);
    for (int p = 0; p < PRODUCERS; p++) CHECK(kr__chan_take(&chan[p], buf, 50) == 0);
    free(evs);
}

static void one_thread(void)
{
    static struct kr__chan c;
    static struct kr__ev ev[KR_CHAN_SLOTS + 100];
    struct kr__ev *buf[KR_CHAN_SLOTS];
    kr__chan_init(&c, KR_CHAN_SLOTS);
    kr__arrivals_init(&arr);
    ev[0].k.ts = 7.5;
    ev[1].k.ts = 3.25;
    kr__chan_put(&c, &ev[0]);
    kr__chan_put(&c, &ev[1]);
    CHECK(kr__chan_take(&c, buf, 8) == 0);        /* put, not published */
    CHECK(kr__chan_publish(&c, &arr) == KR_CHAN_NEW);
    CHECK(kr__chan_publish(&c, &arr) == 0);       /* (nothing new) */
    CHECK(atomic_load(&arr.bh_min) == kr__time_bits(INFINITY)); /* (nobody listens) */
    CHECK(kr__chan_take(&c, buf, 8) == 2);
    CHECK(buf[0] == &ev[0] && buf[1] == &ev[1]);  /* oldest first */
    kr__arrivals_listen(&arr, true);              /* an event on a stack: bh_min */
    kr__chan_put(&c, &ev[0]);
    kr__chan_put(&c, &ev[1]);
    CHECK(atomic_load(&arr.bh_min) == kr__time_bits(INFINITY)); /* (not published yet) */
    CHECK(kr__chan_publish(&c, &arr) == KR_CHAN_NEW);
    CHECK(atomic_load(&arr.bh_min) == kr__time_bits(3.25));
    kr__arrivals_listen(&arr, false);
    CHECK(atomic_load(&arr.bh_min) == kr__time_bits(INFINITY));
    CHECK(kr__chan_take(&c, buf, 8) == 2);
    /* more than a ring holds: the rest waits in the backlog, counted by its least key */
    for (unsigned i = 0; i < KR_CHAN_SLOTS + 100; i++) {
        ev[i].k.ts = 1000.0 - i;
        kr__chan_put(&c, &ev[i]);
    }
    CHECK(kr__chan_publish(&c, &arr) == (KR_CHAN_NEW | KR_CHAN_KEPT));
    struct kr__key m = kr__chan_backlog_min(&c);
    CHECK(m.ts == 1000.0 - (KR_CHAN_SLOTS + 99));
    CHECK(kr__chan_take(&c, buf, KR_CHAN_SLOTS) == KR_CHAN_SLOTS);
    CHECK(buf[KR_CHAN_SLOTS - 1] == &ev[KR_CHAN_SLOTS - 1]);
    CHECK(kr__chan_publish(&c, &arr) == KR_CHAN_NEW); /* the backlog fits now */
    CHECK(kr__chan_backlog_min(&c).ts == INFINITY);
    CHECK(kr__chan_take(&c, buf, KR_CHAN_SLOTS) == 100);
    CHECK(buf[0] == &ev[KR_CHAN_SLOTS] && buf[99] == &ev[KR_CHAN_SLOTS + 99]);
}

int main(void)
{
    concurrent();
    one_thread();
    return check_done("channel");
}
