/* query.h - kr_query on the optimistic engine (query.c): an asking event runs as the run's
 * least, answers come from the LP's owner at the asker's key. Private to the optimistic
 * engine. */
#ifndef KR_OPTIMISTIC_QUERY_H
#define KR_OPTIMISTIC_QUERY_H

#include "optimistic/tw.h"

size_t tw_query(struct kr__ctx *c, kr_lp dest, const void *q, size_t size, void *ans,
                size_t cap);
bool tw_query_ready(const struct tw_thread *th, const struct kr__ev *e);
bool tw_query_mode(const struct tw_thread *th, const struct kr__ev *e);
void tw_query_serve(struct tw_thread *th);
void tw_query_wait(struct tw_thread *th, const struct kr__ev *top);
void tw_query_refuse(struct tw_thread *th);
void tw_process_query(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e);
/* The event in query mode has run to its end on its stack (preempt.c). */
void tw_query_ran(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e);
/* Wait until the request it waits for is answered or refused (written into its stack):
 * before the thread leaves the run... */
void tw_query_settle(struct tw_thread *th);
/* ...and before its stack goes (tw_ts_abandon), which drops its query-mode state. */
void tw_query_drop(struct tw_thread *th);
/* The event that asked outside query mode (with bundles, b: its bundle, else NULL) undone,
 * to run again in query mode. */
void tw_query_undo(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e,
                   struct kr__bundle *b);
/* Bundles: e's bundle, about to run in query mode, out of the heap into th->q.bund; and
 * its members after e back into the heap when its run is abandoned (e stays there). */
void tw_query_gather(struct tw_thread *th, struct kr__ev *e);
void tw_query_unbundle(struct tw_thread *th);

#endif
