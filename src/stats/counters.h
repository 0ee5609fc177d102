/* counters.h - per-thread statistics, one cache line apart so workers never share a line. */
#ifndef KR_STATS_COUNTERS_H
#define KR_STATS_COUNTERS_H

#include <stdint.h>
#include <stdatomic.h>

struct kr__counters {
    _Alignas(64) uint64_t processed;     /* events executed, including ones later rolled back */
    uint64_t committed;
    uint64_t rolled_back;                /* executions undone */
    uint64_t rollbacks;
    uint64_t antimessages;               /* cancellations sent */
    uint64_t checkpoints;
    uint64_t ckpt_bytes;
    uint64_t ckpt_full;                  /* of checkpoints: full ones (the rest incremental) */
    uint64_t ckpt_full_bytes;
    uint64_t ckpt_incr_bytes;
    uint64_t ckpt_ns;                    /* time taking the checkpoints that were timed... */
    uint64_t ckpt_timed;                 /* ...one in TW_CKPT_SAMPLE */
    uint64_t restores;
    uint64_t restore_ns;                 /* time restoring (chain walks) */
    uint64_t coasted;
    uint64_t event_ns_sampled;           /* time in the events that were timed... */
    uint64_t events_timed;               /* ...one in TW_EVENT_SAMPLE */                    /* events re-executed silently after a restore */
    uint64_t remote_sent;                /* events sent to another thread */
    uint64_t gvt_rounds;
    uint64_t fossil_freed;
    uint64_t throttled;                  /* loop turns held back by the optimism bound */
    uint64_t idle_sleeps;                /* times the thread slept or yielded for lack of work */
    uint64_t yields;                     /* turns given up because threads outnumber cores */
    uint64_t ckpt_interval_final;        /* K in effect at the end (tuned if auto) */
    uint64_t pool_bytes;
    uint64_t ckpt_peak_bytes;
    _Atomic uint64_t pub_committed;      /* committed, published for the progress line */
    _Atomic uint64_t pub_processed;
};

#endif
