/* pin.h - what pin.c decides the home of a run that starts on one worker from (with
 * cpu_set_t, so it needs _GNU_SOURCE and <sched.h> before it; the rest of pin.c is
 * declared in core.h). */
#ifndef KR_CORE_PIN_H
#define KR_CORE_PIN_H

#include <sched.h>
#include <stdbool.h>

/* kr__pin_worker_home's choice, from worker `here` (kr__pin_worker_here) and the CPUs found
 * busy (NULL: none): -1 (no home: the run starts spread) when no worker's core is busy;
 * else here, unless its core is busy and another worker's is not. */
int kr__pin_home_of(unsigned nthreads, int here, const cpu_set_t *busy);
/* The CPUs where a task of another process is runnable now (/proc: state R, the CPU it is
 * on); false if there is none - the kernel's count of runnable tasks says so without a
 * look at each - or /proc cannot tell. */
bool kr__cpus_busy(cpu_set_t *busy);

#endif
