/* interpose.c - exit(), _exit() and abort() called by model code during a run. The kairos
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
