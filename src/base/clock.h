/* clock.h - the monotonic clock in nanoseconds, for timing events, checkpoints, ticks and
 * timeouts (a vDSO call: safe in signal handlers); and the calling thread's CPU time. */
#ifndef KR_BASE_CLOCK_H
#define KR_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t kr__clock_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time the calling thread has run (a system call: not for a per-event path). */
static inline uint64_t kr__thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
