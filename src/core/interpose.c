/* interpose.c - exit(), _exit() and abort() called by model code during a run, and
 * pthread_create from an event (the thread it starts is the model's: an API call from it is
 * blamed on that event, kr__foreign_call). The kairos
 * executable exports these names, so a model (built in, or a shared object, whose calls
 * bind to the executable first) reaches them here rather than in the C library. A call
 * from a model callback is a model error like kr_error: the sequential engine stops at
 * once after the committed output, the optimistic engine defers it until the event commits
 * (a call on a wrong speculative path is rolled back with it) and prints everything
 * committed before it. The C library's own calls (exit after main, abort on heap
 * corruption) use internal names and never come here.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "core/core.h"
#include "core/error.h"

/* While a model is loaded or a run is in progress, the call is the model's: a model error
 * (deferred by the engines that defer errors, which then unwind and never return here), or
 * fatal from a thread of the model. Returns only outside a run: the C library's call goes on. */
static void model_call(const char *what)
{
    const struct kr__run *r = kr__run_current;
    char msg[512];
    if (kr__model_loading) {
        snprintf(msg, sizeof msg, "model '%s' called %s while being loaded (in a constructor or "
                 "kr_model_entry()); a model does its work in init and its events",
                 kr__model_loading, what);
        kr__die(msg);
    }
    if (!r) return;
    if (kr__in_lp())
        kr__model_error("the model called %s; a model ends a run with done() or --end, or "
                        "stops it with kr_error(), which name what went wrong", what);
    snprintf(msg, sizeof msg, "model '%s': %s was called during the run, outside the model's "
             "callbacks (from a thread of the model?)", r->model->name, what);
    kr__die(msg);
}

void exit(int status)
{
    char what[32];
    snprintf(what, sizeof what, "exit(%d)", status);
    model_call(what);
    void (*real)(int) = (void (*)(int))dlsym(RTLD_NEXT, "exit");
    if (real) real(status);
    kr__exit_now(status);
}

void _exit(int status)
{
    char what[32];
    snprintf(what, sizeof what, "_exit(%d)", status);
    model_call(what);
    kr__exit_now(status);
}

void abort(void)
{
    model_call("abort()");
    void (*real)(void) = (void (*)(void))dlsym(RTLD_NEXT, "abort");
    if (real) real();
    kr__exit_now(128 + 6);
}

/* ---- threads the model starts ---- */

_Thread_local _Atomic bool kr__foreign_inbox __attribute__((tls_model("local-exec")));
_Thread_local _Atomic bool *kr__foreign_parent;

struct spawn {
    void *(*fn)(void *);
    void *arg;
    _Atomic bool *inbox;
};

static void *spawned(void *p)
{
    struct spawn s = *(struct spawn *)p;
    free(p);
    kr__foreign_parent = s.inbox;
    return s.fn(s.arg);
}

int pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
    typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
    static _Atomic(create_fn) real;
    create_fn next = atomic_load_explicit(&real, memory_order_relaxed);
    if (!next) {
        *(void **)&next = dlsym(RTLD_NEXT, "pthread_create");
        if (!next) return EAGAIN;
        atomic_store_explicit(&real, next, memory_order_relaxed);
    }
    if (!kr__in_lp()) return next(t, a, fn, arg); /* (the engine's threads, and others) */
    struct spawn *s = malloc(sizeof *s);
    if (!s) return EAGAIN;
    *s = (struct spawn){ fn, arg, &kr__foreign_inbox };
    int rc = next(t, a, spawned, s);
    if (rc) free(s);
    return rc;
}
