/* counters.h - per-thread statistics, one cache line apart so workers never share a line. */
#ifndef KR_STATS_COUNTERS_H
#define KR_STATS_COUNTERS_H

#include <stdint.h>
#include <stdatomic.h>

/* The counters' groups: counts only (uint64_t), so that a thread's counters add up as one
 * array (kr__counters_add). */
struct kr__cnt_ckpt {
    uint64_t taken;
    uint64_t bytes;
    uint64_t full;                       /* of checkpoints: full ones (the rest incremental) */
    uint64_t full_bytes;
    uint64_t incr_bytes;
    uint64_t ns;                         /* time taking the checkpoints that were timed... */
    uint64_t timed;                      /* ...one in TW_CKPT_SAMPLE */
    uint64_t restores;
    uint64_t restore_ns;                 /* time restoring (chain walks) */
};

/* The optimistic engine's speculation window (optimism.c) and memory budget. */
struct kr__cnt_window {
    uint64_t throttled;                  /* loop turns held back by the optimism bound */
    uint64_t cuts;                       /* times speculation lost and the window was cut */
    uint64_t mem_rollbacks;              /* --memory-max: LPs rolled back to give memory back */
    uint64_t sendbacks;                  /* ...and senders rolled back for a pending event */
    uint64_t final;                      /* the window at the end */
};

struct kr__cnt_query {
    uint64_t answered;                   /* kr_query answered (by this thread's LPs) */
    uint64_t remote;                     /* kr_query sent to another thread to answer */
    uint64_t events;                     /* events run in query mode (optimistic/query.c):
                                          * that asked, or of a type that asked */
    uint64_t undone;                     /* events undone because they asked outside it */
    uint64_t rollbacks;                  /* LPs rolled back to answer at an earlier time */
    uint64_t wait_ns;                    /* time its askers spent waiting for answers from
                                          * other threads (serving their own meanwhile) */
    uint64_t aside;                      /* events it ran while its asker waited so */
};

struct kr__cnt_ts {
    uint64_t ult_events;                 /* events run on their own stacks */
    uint64_t preempt_return, preempt_tick, preempt_slice; /* suspensions, by trigger */
    uint64_t resumed;                    /* preempted events that later ran to their end */
    uint64_t abandoned;                  /* preempted events rolled back before finishing */
    uint64_t switches;                   /* context switches, both directions */
    uint64_t ticks, ticks_platform, ticks_outside; /* delivered; in platform mode; outside
                                                    * model code (both left alone) */
    uint64_t tick_armed_ns;              /* time with fine-grain ticks armed */
    uint64_t stacks_peak;                /* event stacks in use at once, at most */
};

struct kr__cnt_cons {
    uint64_t retired;                    /* events retired (applied in key order) */
    uint64_t offloads;                   /* events handed out (to a worker or run here) */
    uint64_t inflight_sum;               /* events in flight, summed at each offload */
    uint64_t sched_ran;                  /* events the scheduler ran itself */
    uint64_t barrier_waits;              /* scheduler turns held at the barrier */
    uint64_t lp_waits;                   /* ...held because the event's LP was busy */
};

struct kr__counters {
    _Alignas(64) uint64_t processed;     /* events executed, including ones later rolled back */
    uint64_t committed;
    uint64_t rolled_back;                /* executions undone */
    uint64_t rollbacks;
    uint64_t antimessages;               /* cancellations sent */
    uint64_t lazy_kept;                  /* sends of undone events kept: sent alike again */
    struct kr__cnt_ckpt ck;              /* checkpoints and restores */
    uint64_t coasted;                    /* events re-executed silently after a restore */
    uint64_t safe;                       /* safe events: no checkpoint, committed at once */
    uint64_t lone;                       /* ...of them, run in lone mode (optimistic/lone.c) */
    uint64_t migrations;                 /* migration rounds taken part in */
    uint64_t migrated_out;               /* LPs this thread handed to another */
    uint64_t event_ns_sampled;           /* time in the events that were timed... */
    uint64_t events_timed;               /* ...one in TW_EVENT_SAMPLE */
    uint64_t remote_sent;                /* events sent to another thread (or rank) */
    uint64_t rank_sent;                  /* of them: to another rank (MPI) */
    uint64_t rank_received;              /* events taken in from other ranks */
    uint64_t gvt_rounds;
    uint64_t fossil_freed;
    struct kr__cnt_window win;           /* speculation window and memory budget */
    struct kr__cnt_query q;              /* kr_query */
    uint64_t idle_sleeps;                /* times the thread slept or yielded for lack of work */
    uint64_t yields;                     /* turns given up because threads outnumber cores */
    uint64_t cpu_ns;                     /* CPU time the thread ran (set at its end) */
    uint64_t ckpt_interval_final;        /* K in effect at the end (tuned if auto) */
    uint64_t pool_bytes;
    uint64_t ckpt_peak_bytes;
    uint64_t timers_cancelled;           /* committed events that were cancelled timers
                                          * (kr_timer_cancel: their handler never ran) */
    struct kr__cnt_ts ts;                /* time-sharing (--preempt) */
    double de_ns, apms;                  /* final means: event time, model calls per event */
    struct kr__cnt_cons cons;            /* conservative engine (the scheduler's line) */
    /* Published for the progress line and the --stats series (written by the owner at
     * commit points, read by the main thread). */
    _Atomic uint64_t pub_committed, pub_processed, pub_rollbacks, pub_rolled_back;
    _Atomic uint64_t pub_preempt_calls, pub_preempt_ticks;
};

/* Publish the owner's counts (relaxed: statistics only, each value on its own). */
static inline void kr__counters_publish(struct kr__counters *c)
{
    atomic_store_explicit(&c->pub_committed, c->committed, memory_order_relaxed);
    atomic_store_explicit(&c->pub_processed, c->processed, memory_order_relaxed);
    atomic_store_explicit(&c->pub_rollbacks, c->rollbacks, memory_order_relaxed);
    atomic_store_explicit(&c->pub_rolled_back, c->rolled_back, memory_order_relaxed);
    atomic_store_explicit(&c->pub_preempt_calls, c->ts.preempt_return, memory_order_relaxed);
    atomic_store_explicit(&c->pub_preempt_ticks, c->ts.preempt_tick + c->ts.preempt_slice,
                          memory_order_relaxed);
}

/* The threads' counters summed (GVT rounds: the most any thread saw; each saw them all,
 * but a retired worker). */
struct kr__totals {
    uint64_t processed, committed, rolled_back, rollbacks, antimessages, lazy_kept, checkpoints,
        ckpt_bytes, restores, coasted, remote_sent, gvt_rounds, safe, lone, migrated, window_cuts,
        mem_rollbacks, sendbacks, queries, queries_remote, query_events, query_undone,
        query_rollbacks, query_wait_ns, query_aside, timers_cancelled;
};
void kr__totals(const struct kr__counters *all, unsigned n, struct kr__totals *t);
/* Add c's counts into `into` (the same thread of another rank: its counts summed, its
 * final values and peaks the larger). */
void kr__counters_add(struct kr__counters *into, const struct kr__counters *c);

/* One rank's share of a run across ranks (rank 0 reports every rank's). */
struct kr__rank_stats {
    uint64_t committed, processed, rollbacks, rolled_back, antimessages;
    uint64_t rank_sent, rank_received;       /* events to and from other ranks */
    uint64_t messages_sent, messages_received; /* MPI messages carrying them (and output) */
    uint64_t gvt_rounds, reductions;         /* GVT rounds, and the reductions they took */
    double reduce_seconds;                   /* wall time from starting a reduction to
                                              * its result, summed */
    uint64_t peak_rss;                       /* the rank's peak memory, bytes */
};

#endif
