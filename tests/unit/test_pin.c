/* test_pin.c - binding engine threads to cores (core/pin.c; each binding on a thread of its
 * own, so the test's thread keeps the process's CPUs):
 *  - a worker alone on the machine (one thread, no other rank here) is left where the OS
 *    puts it: bound to core 0, it ran at 0.42x the sequential engine beside a busy loop on
 *    core 0, while the unbound sequential engine moved to the free core;
 *  - two workers on a machine with two CPUs or more each get one CPU, different ones;
 *  - so does one worker of a rank that shares the machine with another (mpirun's local
 *    size), the CPUs dealt out over both ranks' workers;
 *  - a process spinning on a CPU is found there (kr__cpus_busy); a run starts on one worker
 *    (a home) only when another process runs on a worker's core - on an idle machine it
 *    starts spread, since the spread after a home start left idle 2-thread runs 2-14%
 *    slower to their end (bench/RESULTS.md, session 50) - and the home moves off the run
 *    thread's core only when that core is busy and another worker's is not
 *    (kr__pin_home_of). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"
#include "core/core.h"
#include "core/pin.h"

struct pin_case {
    unsigned id, nthreads;
    cpu_set_t got;
    int rc;
};

/* (no CHECK on this thread: the checks' counter is the test thread's) */
static void *pin_here(void *arg)
{
    struct pin_case *c = arg;
    kr__pin_thread(c->id, c->nthreads);
    c->rc = sched_getaffinity(0, sizeof c->got, &c->got);
    return NULL;
}

/* The CPUs a thread has after kr__pin_thread(id, nthreads). */
static cpu_set_t pinned(unsigned id, unsigned nthreads)
{
    struct pin_case c = { .id = id, .nthreads = nthreads };
    pthread_t t;
    CHECK(pthread_create(&t, NULL, pin_here, &c) == 0);
    CHECK(pthread_join(t, NULL) == 0 && c.rc == 0);
    return c.got;
}

static int only_cpu(const cpu_set_t *s)
{
    if (CPU_COUNT(s) != 1) return -1;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, s)) return c;
    return -1;
}

static cpu_set_t one(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    if (cpu >= 0) CPU_SET(cpu, &s);
    return s;
}

/* A child process spinning on `cpu` is seen there. */
static void check_busy_found(int cpu)
{
    int p[2];
    CHECK(pipe(p) == 0);
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        cpu_set_t s = one(cpu);
        if (sched_setaffinity(0, sizeof s, &s)) _exit(1);
        if (write(p[1], "x", 1) != 1) _exit(1);
        for (volatile unsigned long i = 0;; i++) {
        }
    }
    char c;
    CHECK(read(p[0], &c, 1) == 1); /* (bound, and spinning from now on) */
    cpu_set_t busy;
    bool found = kr__cpus_busy(&busy);
    kill(child, SIGKILL);
    waitpid(child, NULL, 0);
    close(p[0]);
    close(p[1]);
    CHECK(found && CPU_ISSET(cpu, &busy));
}

/* The home's choice on 2 workers bound to CPUs a and b. */
static void check_home(int a, int b)
{
    cpu_set_t none = one(-1), on_a = one(a), on_b = one(b), both = one(a);
    CPU_SET(b, &both);
    /* (nothing else on the workers' cores: no home, the run starts spread) */
    CHECK(kr__pin_home_of(2, 0, NULL) == -1 && kr__pin_home_of(2, 0, &none) == -1);
    CHECK(kr__pin_home_of(2, 1, &none) == -1);
    cpu_set_t elsewhere = one((a > b ? a : b) + 1); /* (a CPU no worker is bound to) */
    CHECK(kr__pin_home_of(2, 0, &elsewhere) == -1);
    CHECK(kr__pin_home_of(2, 0, &on_a) == 1 && kr__pin_home_of(2, 1, &on_b) == 0);
    CHECK(kr__pin_home_of(2, 0, &on_b) == 0 && kr__pin_home_of(2, 1, &on_a) == 1);
    CHECK(kr__pin_home_of(2, 0, &both) == 0); /* (both busy: where it is) */
    CHECK(kr__pin_home_of(2, -1, &on_a) == -1);
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
        check_home(only_cpu(&a), only_cpu(&b));
        check_busy_found(only_cpu(&b));
    }
    return check_done("test_pin");
}
