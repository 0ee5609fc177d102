/* test_pin.c - binding engine threads to cores (core/pin.c), each case on a thread of its
 * own so the test's thread keeps the process's CPUs:
 *  - a worker alone on the machine (one thread, no other rank here) is left where the OS
 *    puts it: bound to core 0, it ran at 0.42x the sequential engine beside a busy loop on
 *    core 0, while the unbound sequential engine moved to the free core;
 *  - two workers on a machine with two CPUs or more each get one CPU, different ones;
 *  - so does one worker of a rank that shares the machine with another (mpirun's local
 *    size), the CPUs dealt out over both ranks' workers. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include "check.h"
#include "core/core.h"

struct pin_case {
    unsigned id, nthreads;
    cpu_set_t got;
};

static void *pin_here(void *arg)
{
    struct pin_case *c = arg;
    kr__pin_thread(c->id, c->nthreads);
    CHECK(sched_getaffinity(0, sizeof c->got, &c->got) == 0);
    return NULL;
}

/* The CPUs a thread has after kr__pin_thread(id, nthreads). */
static cpu_set_t pinned(unsigned id, unsigned nthreads)
{
    struct pin_case c = { .id = id, .nthreads = nthreads };
    pthread_t t;
    CHECK(pthread_create(&t, NULL, pin_here, &c) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    return c.got;
}

static int only_cpu(const cpu_set_t *s)
{
    if (CPU_COUNT(s) != 1) return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, s)) return c;
    return -1;
}

int main(void)
{
    unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    unsetenv("MPI_LOCALNRANKS");
    unsetenv("SLURM_NTASKS_PER_NODE");
    cpu_set_t all;
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    cpu_set_t alone = pinned(0, 1);
    CHECK(CPU_EQUAL(&alone, &all)); /* one worker: not bound */
    if (CPU_COUNT(&all) >= 2) {
        cpu_set_t a = pinned(0, 2), b = pinned(1, 2);
        CHECK(only_cpu(&a) >= 0 && only_cpu(&b) >= 0 && only_cpu(&a) != only_cpu(&b));
        /* one worker of rank 1 of 2 on this machine: the second CPU, as worker 1 of 2 */
        setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
        setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
        cpu_set_t r = pinned(0, 1);
        CHECK(only_cpu(&r) == only_cpu(&b));
        unsetenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    }
    return check_done("test_pin");
}
