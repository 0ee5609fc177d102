/* ranks.h - the optimistic engine across MPI ranks (ranks.c, docs/cluster.md): events,
 * antimessages, GVT reductions, output and snapshots between ranks. Private to the
 * optimistic engine (tw.h includes it: its record, struct tw_net, is part of the engine's). */
#ifndef KR_OPTIMISTIC_RANKS_H
#define KR_OPTIMISTIC_RANKS_H

#include <pthread.h>
#include "core/core.h"
#include "net/net.h"
#include "net/xport.h"
#include "stats/output.h"

struct tw_global;
struct tw_thread;
struct kr__snap_link;

/* The run across MPI ranks (ranks.c, docs/cluster.md): this rank's share of the engine. */
struct tw_net {
    bool on;                   /* more than one rank */
    int rank, nranks;
    struct kr__xport x;        /* slots 0 .. n-1: the workers; n: the watcher (output) */
    struct kr__net_gvt in, out; /* the round's reduction (under x.mu while req is set) */
    void *req;
    _Atomic bool want_stop;    /* this rank was interrupted (the next round tells all) */
    bool ended;                /* past the last event: what still arrives is dropped */
    struct kr__key err;        /* the lowest model error of all ranks (infinity: none) */
    /* Rank 0: committed output of the other ranks, and how far each has sent it. */
    pthread_mutex_t out_mu;
    struct kr__outvec rout;
    struct kr__key *rupto;     /* [rank] */
    pthread_mutex_t text_mu;   /* ranks but 0: sending output (the watcher, a snapshot) */
    uint64_t sent_text, received_text; /* output records (end: nothing left in flight) */
    uint64_t late[2];          /* events and antimessages taken in (and dropped) at the end */
    uint64_t reductions, reduce_ns, reduce_t0; /* GVT reductions: how many, how long */
    /* Safe events across ranks (ranks.c): each rank's latest stamp (under x.mu), and their
     * least, once what came before it is handed to the workers: the other ranks' clock. */
    double *from;              /* [rank] */
    unsigned hold;             /* pollers whose hand-offs wait in a full channel */
    _Alignas(64) _Atomic uint64_t clock_bits;
    char pad_[64 - sizeof(uint64_t)];
};


void tw_rank_setup(struct tw_global *g);
kr_time tw_rank_begin(struct tw_global *g, kr_time lo);
void tw_rank_clock_publish(struct tw_thread *th, kr_time f);
void tw_rank_send(struct tw_thread *th, struct kr__ev *e, unsigned owner, struct kr__ev *parent);
void tw_rank_cancel(struct tw_thread *th, struct kr__ev *copy);
void tw_rank_forget(struct tw_thread *th, struct kr__ev *parent);
void tw_rank_take(struct tw_thread *th, struct kr__ev *e);
void tw_rank_turn(struct tw_thread *th, bool now);
void tw_rank_fossil(struct tw_thread *th, kr_time t);
/* (GVT across ranks: tw_gvt_ranks, the reduction's table, tw.h) */
void tw_rank_output(struct tw_global *g, bool all);
struct kr__key tw_rank_print_upto(struct tw_global *g, struct kr__outvec *v, struct kr__key upto);
void tw_rank_end(struct kr__run *r, struct tw_global *g);
int tw_rank_started(struct kr__run *r, char *out, size_t len, int st);
void tw_rank_free(struct tw_global *g);
void tw_rank_stats(struct kr__run *r, struct tw_global *g); /* (report.c) */
/* An MPI call failed: the run cannot go on (says what it was doing, on which rank). */
_Noreturn void tw_net_broken(const char *what);
/* Snapshots across ranks (snapshot.c), thread 0 of each rank with the others waiting: */
bool tw_rank_any(struct tw_global *g, bool mine);
bool tw_rank_settled(struct tw_global *g, struct kr__key *least);
void tw_rank_restart(struct tw_global *g, kr_time lo);
void tw_rank_link(struct tw_global *g, struct kr__snap_link *l);

#endif
