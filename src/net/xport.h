/* xport.h - events to other ranks, aggregated (docs/cluster.md): each worker thread keeps one
 * message per destination rank and appends wire records to it (msg/wire.h); a message goes
 * out when the next record would not fit, or when the thread flushes at its loop turn, so
 * that none waits long. A sender never waits for a send to finish: while its messages are in
 * flight it fills another (one more is made when all are; a message past MPI's eager limit
 * is done only once its receiver takes it, and two ranks each waiting for the other to take
 * one would wait forever). Every MPI call is made under the rank's network lock (the module
 * runs MPI_THREAD_SERIALIZED); taking messages in is a try: a worker that finds another one
 * at it goes on with its events.
 *
 * Messages from one rank to another arrive in the order sent (every send is made under the
 * lock, and MPI does not overtake between one pair of ranks with one tag), and records in a
 * message in the order appended; records from different threads of a rank may interleave.
 *
 * Every message starts with a stamp: the sender's clock (kr__xport.clock) when it went
 * out. The engine's clock is a time below which the rank will send nothing more, so a
 * receiver that has taken in the message knows that every later one from that rank lies at
 * or above it (safe events across ranks, docs/cluster.md). A rank with nothing to send can
 * still move its clock on, with a message that holds only the stamp (kr__xport_stamp).
 */
#ifndef KR_NET_XPORT_H
#define KR_NET_XPORT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "net/net.h"

/* A message's size: under Open MPI's eager limit here (1 KiB moved 16 events in 0.76 us a
 * round trip, 16 KiB 256 in 9.9 us: past the limit a message waits for its receiver). */
#define KR_XPORT_BYTES 4096
/* Each message's first bytes: the stamp (a double, the sender's byte order) and the epoch
 * of the sender's clock (a u64). */
#define KR_XPORT_HDR (sizeof(double) + sizeof(uint64_t))

struct kr__xmsg {
    unsigned char *buf;
    size_t n, cap;
    void *req;                /* in flight (NULL: free, or the one being filled) */
};

struct kr__xout {             /* one (thread, destination rank) pair */
    struct kr__xmsg *m;       /* the one being filled, the others in flight or free */
    unsigned nm, fill;
    uint64_t records;         /* records appended (all messages) */
};

struct kr__xport {
    const struct kr__net_ops *ops;
    int rank, nranks;
    unsigned nthreads;
    struct kr__xout *out;     /* [thread * nranks + rank] */
    pthread_mutex_t mu;       /* every MPI call */
    unsigned char *in;        /* the receive buffer (under mu) */
    size_t incap;
    uint64_t messages_sent, messages_received; /* (under mu) */
    uint64_t stamps_sent;     /* messages that held only a stamp (under mu) */
    /* The stamp of each message, called under mu (NULL: -infinity), and the latest one
     * sent to each rank. */
    double (*clock)(void *ctx);
    void *clock_ctx;
    double *stamped;          /* [rank] (under mu) */
    /* The clock's epoch (under mu): a snapshot turns the clocks back, and a stamp from an
     * earlier epoch of its sender, still on its way then, must not count when it arrives
     * (kr__xport_new_epoch). Every rank turns its clocks back at the same points. */
    uint64_t epoch;
};

/* For `nthreads` threads of this rank (kr__net must be started). 0, or -1. */
int kr__xport_init(struct kr__xport *x, unsigned nthreads);
/* Waits for the messages still in flight, then frees everything. */
void kr__xport_destroy(struct kr__xport *x);
/* Room for a record of `bytes` in thread t's message to rank `to`: where to write it. A
 * full message is sent first. NULL on an MPI error. */
unsigned char *kr__xport_reserve(struct kr__xport *x, unsigned t, int to, size_t bytes);
/* The record written at the reserved place is complete. */
void kr__xport_append(struct kr__xport *x, unsigned t, int to, size_t bytes);
/* Send thread t's messages that hold records, and reap finished sends (each loop turn).
 * 0, or -1 on an MPI error. */
int kr__xport_flush(struct kr__xport *x, unsigned t);
/* Thread t: a message with only a stamp to each rank that t has nothing for, if the
 * clock moved past the last stamp that rank got. 0, or -1 on an MPI error. */
int kr__xport_stamp(struct kr__xport *x, unsigned t);
/* The clock went back (every rank's at once): from now on stamps are of the next epoch,
 * and those of earlier ones that arrive later are given as -infinity. */
void kr__xport_new_epoch(struct kr__xport *x);
/* Take in what has arrived, each message's records and stamp to deliver(ctx, bytes, n,
 * from rank, stamp): the count of messages, 0 if none or another thread holds the network
 * turn, -1 on an MPI error. deliver runs under the lock. */
typedef void kr__xport_deliver(void *ctx, const unsigned char *b, size_t n, int from,
                               double stamp);
int kr__xport_poll(struct kr__xport *x, kr__xport_deliver *deliver, void *ctx);

#endif
