/* trace.h - --trace FILE: the run's committed history, the same on every engine and
 * thread count (each committed event's key, LP, type and payload), for `kairos trace-diff`
 * and trace viewers (core/report.c writes it). */
#ifndef KR_CORE_TRACE_H
#define KR_CORE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include "msg/event.h"

struct kr__trace_rec {
    struct kr__key k;
    uint64_t dest;
    uint32_t type, size;
    uint64_t payload;  /* hash of the payload's bytes */
};

/* Set while --trace collects: kr__lp_commit_event then calls kr__trace_commit. */
extern bool kr__trace_on;
/* Collect the least max_events committed keys of the run about to start. */
void kr__trace_start(size_t max_events);
/* One committed event (any thread; each keeps its own least keys). */
void kr__trace_commit(const struct kr__ev *e);
/* Everything collected (malloc'd, unsorted; more than the limit when several threads
 * committed: the caller sorts and cuts); *dropped: some thread committed more than it
 * kept. */
size_t kr__trace_take(struct kr__trace_rec **out, bool *dropped);
void kr__trace_free(void);

#endif
