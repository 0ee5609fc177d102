/* pin.c - binding an engine thread to a core of its own, when there are cores enough. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <unistd.h>
#include "core.h"

void kr__pin_thread(unsigned id, unsigned nthreads)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu <= 0 || nthreads > (unsigned)ncpu) return; /* oversubscribed: let the OS place */
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(id % (unsigned)ncpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}
