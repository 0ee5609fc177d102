/* trace.h - --trace FILE: the run's committed history, the same on every engine and
 * thread count (each committed event's key, LP, type and payload), for `kairos trace-diff`
 * and trace viewers (run/report.c writes it). */
#ifndef KR_CORE_TRACE_H
#define KR_CORE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include "kairos.h"
#include "msg/event.h"

struct kr__trace_rec {
    struct kr__key k;
    uint64_t dest;
    uint32_t type, size;
    uint64_t payload;  /* hash of the payload's bytes */
    uint32_t pflags;   /* the event's (state/addrmap.h): a timer's, cancelled or not */
};

/* --trace-mode run: what each thread did and when (wall clock), for a trace viewer. */
enum kr__span_kind { KR_SPAN_EVENT, KR_SPAN_COAST, KR_SPAN_ROLLBACK, KR_SPAN_GVT,
                     KR_SPAN_CKPT, KR_SPAN_PREEMPT };
struct kr__span {
    uint64_t t0, dur;  /* ns since the run began; 0 for an instant */
    kr_time vt;        /* the event's time, a rollback's target, the new GVT */
    uint64_t lp;
    uint32_t kind, arg; /* arg: the event's type, a rollback's depth, checkpoint bytes */
    uint32_t tid;       /* (filled in when taken) */
};

/* Set while --trace collects: kr__lp_commit_event then calls kr__trace_commit... */
extern bool kr__trace_on;
/* ...or, --trace-mode run, kr__run_event and the engines call kr__trace_span. */
extern bool kr__trace_run;
/* Collect the least max_events committed keys of the run about to start (run: the first
 * max_events spans of each thread). */
void kr__trace_start(size_t max_events, bool run);
/* ns since kr__trace_start (the spans' clock). */
uint64_t kr__trace_now(void);
/* One span of the calling thread (each keeps its first max_events). */
void kr__trace_span(unsigned kind, uint64_t t0, uint64_t dur, uint64_t lp, kr_time vt,
                    uint32_t arg);
/* Every span (malloc'd, unsorted); *dropped: spans past a thread's limit. */
size_t kr__trace_take_spans(struct kr__span **out, uint64_t *dropped);
/* One committed event (any thread; each keeps its own least keys). */
void kr__trace_commit(const struct kr__ev *e);
/* Everything collected (malloc'd, unsorted; more than the limit when several threads
 * committed: the caller sorts and cuts); *dropped: some thread committed more than it
 * kept. */
size_t kr__trace_take(struct kr__trace_rec **out, bool *dropped);
void kr__trace_free(void);

#endif
