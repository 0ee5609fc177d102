/* worker.h - what the worker loop (engine.c) calls of a worker's life around it
 * (worker.c). Private to the optimistic engine. */
#ifndef KR_OPTIMISTIC_WORKER_H
#define KR_OPTIMISTIC_WORKER_H

#include "optimistic/tw.h"

/* Before the first turn: bound to its core, its ticks, stacks and context set. */
void tw_worker_start(struct tw_thread *th);
/* Every pace.every turns that ran events: pacing, the balancer, GVT, tuning, turns taken
 * with threads beside on the core (over). */
void tw_housekeeping(struct tw_thread *th, bool over, unsigned turns);
/* What a GVT round would do for a thread with nothing to run (tw_idle). */
enum tw_round_use {
    TW_ROUND_NONE,  /* nothing: it has an event below the bound, held back */
    TW_ROUND_SNAP,  /* nothing below the bound, events below the end: the snapshot's round
                     * moves the bound */
    TW_ROUND_END    /* nothing below the end: the round that finds every thread so ends
                     * the run */
};
/* An idle turn's GVT round: started if one is due, or would help now (use). */
void tw_idle_round(struct tw_thread *th, enum tw_round_use use);
/* A turn with nothing to run: spin, then sleep (use: what a round would do for it; held:
 * an event it has is held back). */
void tw_idle(struct tw_thread *th, unsigned *spins, bool oversubscribed,
             enum tw_round_use use, bool held);
/* A retired worker's turn; false once the run stops. */
bool tw_retired_turn(struct tw_thread *th);
/* Leaving: with every other worker, then the history and pools (the test seam's end). */
void tw_thread_epilogue(struct tw_thread *th);
/* The thread's end: its epilogue, its last messages to other ranks, the watcher told. */
void tw_worker_end(struct tw_thread *th);

#endif
