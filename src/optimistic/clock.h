/* clock.h - safe events' bounds (clock.c): the clocks and quiet records each worker
 * publishes and the others read (the records themselves and the inline tests on them are
 * in tw.h, where the hot paths use them). Private to the optimistic engine. */
#ifndef KR_OPTIMISTIC_CLOCK_H
#define KR_OPTIMISTIC_CLOCK_H

#include "optimistic/tw.h"

/* clock.c: safe events' bounds. Before draining: the least of the other threads' clocks. */
void tw_safe_read(struct tw_thread *th);
/* After draining: this thread's clock (at once if `now`, else every TW_CLOCK_TURNS turns)
 * and quiet record with its lowest pending event top (NULL: none). */
void tw_clock_publish(struct tw_thread *th, const struct kr__ev *top, bool now);
/* Write the quiet record (tw.h) with this lowest pending event (NULL: none). */
void tw_quiet_publish(struct tw_thread *th, const struct kr__ev *top);
/* Its lowest event is not safe by the clocks: try the others' quiet records. */
void tw_quiet_try(struct tw_thread *th);
/* Safe events off (the run stops, a snapshot is due), and how far they went said. */
void tw_safe_stop(struct tw_thread *th);
/* Before the workers start: every clock at the lowest pending event plus the lookahead. */
void tw_clock_start(struct tw_global *g);
/* The clocks and quiet records are kept: for safe events, or for queries (an event waits
 * to ask until they show it is the least) - also once the run is stopping, or an asking
 * event would wait for ever and hold GVT, and with it the stop, back. */
static inline bool tw_bounds(const struct tw_thread *th)
{
    return th->fast || th->g->cf.queries;
}

/* The watcher asked the run to stop, or a snapshot is due (snapshot.c): safe events off,
 * and say how far they went. */
static inline bool tw_safe_off(const struct tw_global *g)
{
    return atomic_load_explicit(&g->end.stopping, memory_order_relaxed) ||
           atomic_load_explicit(&g->sn.want, memory_order_relaxed);
}

#endif
