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
/* A turn with nothing to run: spin, then sleep (snap: waiting for a snapshot's round;
 * held: an event it has is held back). */
void tw_idle(struct tw_thread *th, unsigned *spins, bool oversubscribed, bool snap, bool held);
/* A retired worker's turn; false once the run stops. */
bool tw_retired_turn(struct tw_thread *th);
/* Leaving: with every other worker, then the history and pools (the test seam's end). */
void tw_thread_epilogue(struct tw_thread *th);
/* The thread's end: its epilogue, its last messages to other ranks, the watcher told. */
void tw_worker_end(struct tw_thread *th);

#endif
