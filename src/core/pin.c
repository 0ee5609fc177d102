/* pin.c - engine threads: their stacks (the stack contract of docs/guide.md: --stack-kb for
 * model code on every engine, a large guard below) and binding each to a core of its own,
 * when there are cores enough. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/error.h"
#include <unistd.h>
#include "core/core.h"
#include "ult/ult.h"

__thread char *kr__stack_lo;

struct start {
    void *(*fn)(void *);
    void *arg;
};

void kr__stack_note(void)
{
    pthread_attr_t a;
    void *lo;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &a)) return;
    if (!pthread_attr_getstack(&a, &lo, &size)) kr__stack_lo = lo;
    pthread_attr_destroy(&a);
}

static void *trampoline(void *arg)
{
    struct start s = *(struct start *)arg;
    free(arg);
    kr__stack_note();
    return s.fn(s.arg);
}

int kr__thread_start(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack_kb,
                     const char *what, struct kr__error *err)
{
    struct start *s = malloc(sizeof *s);
    if (!s) return kr__fail(err, KR_ERR_RESOURCE, "out of memory starting %s", what);
    s->fn = fn;
    s->arg = arg;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, stack_kb * 1024 + KR_STACK_ENGINE);
    pthread_attr_setguardsize(&a, KR_STACK_GUARD);
    int rc = pthread_create(t, &a, trampoline, s);
    pthread_attr_destroy(&a);
    if (!rc) return KR_OK;
    free(s);
    return kr__fail(err, KR_ERR_RESOURCE, "cannot start %s (%s): each engine thread reserves "
                    "--stack-kb (%zu KiB) of stack and a %zu MiB guard of address space; lower "
                    "--stack-kb or --threads, or raise the limit on address space (ulimit -v) "
                    "or threads", what, strerror(rc), stack_kb, KR_STACK_GUARD >> 20);
}

void kr__thread_start_or_die(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack_kb,
                             const char *what)
{
    struct kr__error err;
    if (kr__thread_start(t, fn, arg, stack_kb, what, &err)) kr__die(err.msg);
}

void kr__pin_thread(unsigned id, unsigned nthreads)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (ncpu <= 0 || nthreads > (unsigned)ncpu) return; /* oversubscribed: let the OS place */
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(id % (unsigned)ncpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}
