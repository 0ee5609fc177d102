/* interrupt.h - SIGINT and SIGTERM (Ctrl-C, a batch system's time limit) stop a run at its
 * next committed point instead of killing it: every engine polls kr__interrupted() where it
 * could end anyway, commits what it has, prints the committed output, the summary and
 * --stats (ended_by "interrupted"), and the process exits 128 + the signal number. A second
 * signal exits at once - but not one within a second of the first (its echo: a Ctrl-C
 * reaches mpirun too, which forwards it), and not once the run is over (kr__interrupt_done:
 * the summary is out; MPI is finishing). A signal ignored when kairos starts (nohup, a
 * batch system) stays ignored.
 */
#ifndef KR_CORE_INTERRUPT_H
#define KR_CORE_INTERRUPT_H

#include <stdatomic.h>

extern _Atomic int kr__interrupt_sig;   /* the first signal received, 0 if none */

void kr__interrupt_install(void);
/* The run is over and reported: a signal now exits quietly with the first one's status. */
void kr__interrupt_done(void);

/* A relaxed load: cheap enough for every event of the sequential loop. */
static inline int kr__interrupted(void)
{
    return atomic_load_explicit(&kr__interrupt_sig, memory_order_relaxed);
}

#endif
