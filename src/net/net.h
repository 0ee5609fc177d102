/* net.h - one run as several processes (MPI ranks): how a launch by mpirun is recognised,
 * the MPI module that is loaded only then, and the collective steps the run takes.
 *
 * The kairos executable does not link MPI: a process started by itself never loads it
 * (starting libmpi costs every run ~3 ms, and a kairos built where MPI was installed runs
 * where it is not). The MPI calls live in a module of their own (net/mpi.c, built as
 * kairos-mpi.so when CMake finds MPI), opened when the environment says that mpirun
 * started more than one rank. Without it, such a launch is refused with what to do.
 */
#ifndef KR_NET_NET_H
#define KR_NET_NET_H

#include <stdbool.h>
#include <stddef.h>
#include "base/error.h"
#include "msg/event.h"

#define KR_NET_ABI 5
#define KR_NET_MODULE "kairos-mpi.so"
#define KR_NET_ENTRY "kr_net_mpi_entry"

/* What each rank brings to a GVT round across ranks (docs/cluster.md), combined over the
 * ranks by a non-blocking all-reduce: keys by their minimum (or maximum, where said), counts
 * by their sum. The run's start uses it too: `min` is then the lowest event of all, and
 * `lookahead` the run's. */
struct kr__net_gvt {
    struct kr__key min;       /* the rank's lowest unprocessed key (pending, in buffers) */
    struct kr__key safe_hi;   /* the latest safe event it ran (max: where a stop may be) */
    struct kr__key err;       /* the lowest key of a committed model error (or infinity) */
    double lookahead;         /* start: the lookahead its LPs declared (min; infinity: none) */
    int64_t in_flight;        /* remote messages of the old colour it sent, less those it
                                * received: their sum is what is still on the way */
    uint64_t done;            /* its LPs whose done() holds */
    struct kr__key max_done;  /* the latest key after which one of them became done (max) */
    uint64_t flags;           /* KR_NET_* (or) */
};
enum {
    KR_NET_STOPPING = 1,  /* a rank was interrupted: stop at a committed time */
    KR_NET_UNACKED = 2,   /* a rank's workers may still run safe events (not all stopped) */
    KR_NET_SNAP_DUE = 4,  /* a rank's clock says a snapshot is due (--snapshot-seconds) */
    KR_NET_WAITING = 8,   /* taking a snapshot: rank 0 lacks output before its point */
    KR_NET_FAILED = 16,   /* taking a snapshot: a rank's run failed (no snapshot) */
};

/* What the MPI module provides (one table, checked by its abi). */
struct kr__net_ops {
    unsigned abi;                                   /* KR_NET_ABI */
    /* MPI_Init_thread: this rank and the world's size, and the library's name; 0, or -1
     * with a message in err. */
    int (*init)(int *rank, int *size, char *lib, size_t libcap, char *err, size_t errcap);
    void (*finalize)(void);
    /* Every rank's v, in rank order, into all[size]. 0, or -1. */
    int (*allgather_int)(int v, int *all);
    /* Start combining every rank's *in into *out (both must stay put until done); *req
     * names the operation (kr__net_ops.test). 0, or -1. */
    int (*gvt_start)(const struct kr__net_gvt *in, struct kr__net_gvt *out, void **req);
    /* Start sending len bytes at buf (which must stay put until done) to rank `to`. 0, or
     * -1. */
    int (*isend)(const void *buf, size_t len, int to, void **req);
    /* Progress an operation: 1 once it is done (req is then freed), 0 not yet, -1 error. */
    int (*test)(void *req);
    /* Take in one message sent with isend, if one has arrived: 1 (its bytes in buf, *len,
     * *from), 0 none, -1 error, or -2 if it needs more than cap bytes (*len: how many;
     * it stays to be taken with a larger buffer). */
    int (*recv)(void *buf, size_t cap, size_t *len, int *from);
    /* Blocking, on a tag of their own (the run's start and end, never beside recv's
     * traffic of the same kind): send len bytes to rank `to`; take the next such message
     * from rank `from` into a malloc'd *buf of *len bytes. 0, or -1. */
    int (*send_bytes)(const void *buf, size_t len, int to);
    int (*recv_bytes)(void **buf, size_t *len, int from);
    /* Collective: every rank's bytes, concatenated in rank order into a malloc'd *all of
     * *total bytes at rank 0 (elsewhere *all is NULL). 0, or -1. */
    int (*gather_bytes)(const void *buf, size_t len, void **all, size_t *total);
    /* End the whole job (every rank) with this exit status. */
    void (*abort)(int code);
};

struct kr__net {
    int rank, size;                   /* 0 and 1 for a process on its own */
    bool mute;                        /* another rank reports the run's failure */
    bool started;                     /* the run across ranks has begun (a failure now is
                                       * the model's or the run's: reported as on one) */
    bool defer;                       /* this rank failed because another did (kr__net_agree
                                       * lets a rank that failed on its own report) */
    const struct kr__net_ops *ops;    /* NULL: no MPI (one process) */
    char lib[128];                    /* the MPI library (its version string's first line) */
};
extern struct kr__net kr__net;

/* The world's size that the launcher put in the environment (Open MPI, MPICH, PMIx, srun): 1
 * when kairos was not started by mpirun, or as one rank only, or KAIROS_MPI=off says to run
 * each rank as a run of its own; *rank its rank. */
int kr__net_launched(int *rank);
/* Where a program that links the engine finds the MPI module when it is not beside the
 * program (colon-separated paths; NULL: nowhere else). */
extern const char *kr__net_module_hint;
/* A program that goes on with MPI after the run (the ROSS layer: its models reduce their
 * totals after tw_run) stops it itself, with kr__net_stop. */
extern bool kr__net_keep;
/* Join the other ranks if mpirun started several: load the module, MPI_Init. A failure is
 * this rank's (a usage error: no MPI support, the module missing or broken). */
int kr__net_start(struct kr__error *err);
/* Collective (every rank: at the start, after a run's set-up, after the run): the failure
 * of the lowest rank that failed on its own (not kr__net.defer, which a rank that took
 * another's failure here becomes) - else of the lowest that failed - becomes every rank's
 * status; only that rank keeps its message to print (the others are
 * muted), and before the run has started it names its rank when others did not fail.
 * Returns the agreed status. */
int kr__net_agree(struct kr__error *err);
/* Collective: every rank's text (lines "NAME VALUE": what it runs; empty if it failed
 * already) compared with rank 0's there; the first line that differs becomes rank 0's
 * failure (KR_ERR_USAGE, naming it and the ranks), for kr__net_agree to report. */
int kr__net_same(const char *text, size_t len, struct kr__error *err);
/* Collective: the output the other ranks kept (len bytes at buf; rank 0's own went out as
 * it came) printed by rank 0 in rank order, after its own. 0, or -1 on an MPI error. */
int kr__net_print_gathered(const char *buf, size_t len);
/* MPI_Finalize, if started. */
void kr__net_stop(void);

#endif
