/* preempt.h - time-sharing (preempt.c, paper 000): events on stacks of their own,
 * preempted by ticks or at model calls, resumed or abandoned. Private to the optimistic
 * engine. */
#ifndef KR_OPTIMISTIC_PREEMPT_H
#define KR_OPTIMISTIC_PREEMPT_H

#include "optimistic/tw.h"

void tw_ts_thread_start(struct tw_thread *th);
void tw_ts_thread_end(struct tw_thread *th);
void tw_ts_start(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e);
void tw_ts_sampled(struct tw_thread *th, unsigned type, uint64_t event_ns);

/* Time-sharing: does an event of this type run on its own stack (and may be preempted)?
 * Under adaptive, while its type's mean time is long enough to pay for the switches. */
#define TW_STACKS_MIN_NS 5000.0f
static inline bool tw_ts_on_stack(const struct tw_thread *th, unsigned type)
{
    if (th->ts.preempt == KR_PREEMPT_OFF) return false;
    float m = kr__typetime_mean(&th->ts.types, type);
    return th->ts.preempt != KR_PREEMPT_ADAPTIVE || m < 0 || m >= TW_STACKS_MIN_NS;
}

/* Adaptive: time this worker-stack event? One in TW_EVENT_SAMPLE of each type, so a short
 * type that turns long is noticed. */
static inline bool tw_ts_sample_type(struct tw_thread *th, unsigned type)
{
    return th->ts.preempt == KR_PREEMPT_ADAPTIVE &&
           kr__typetime_due(&th->ts.types, type, 0, TW_EVENT_SAMPLE);
}
void tw_ts_resume(struct tw_thread *th, struct kr__ev *e);
struct kr__ckpt *tw_ts_abandon(struct tw_thread *th, struct kr__lp *lp, bool cancel);

#endif
