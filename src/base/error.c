/* error.c - see error.h. Every way a run ends on an error goes through kr__die or
 * kr__internal_error: the committed output is printed first (the engine's salvage hook),
 * under a deadline, since a crash may leave locks held (a fault inside malloc, a thread
 * stuck inside stdio); past it the message is written with write(2) alone and the process
 * exits all the same. Nothing on this path allocates. A leaf: it knows nothing of runs or
 * LPs (kr__model_error, which does, is in lp.c). */
#include "base/error.h"
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SALVAGE_DEADLINE_S 3

static void (*salvage_fn)(void *);
static void *salvage_arg;
static atomic_flag dying = ATOMIC_FLAG_INIT;
static char last_words[2048];   /* the message, for the deadline handler */
static int last_status;

/* (the system call itself: _exit() is the model's, caught by interpose.c) */
_Noreturn void kr__exit_now(int status)
{
    for (;;) syscall(SYS_exit_group, status);
}

int kr__fail(struct kr__error *e, int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    e->status = status;
    return status;
}

void kr__set_salvage(void (*fn)(void *), void *arg)
{
    salvage_arg = arg;
    salvage_fn = fn;
}

void kr__output_close(void)
{
    salvage_fn = NULL;
    kr__out_closed = true;
}

static void write_str(const char *s)
{
    size_t n = strlen(s);
    while (n) {
        ssize_t w = write(STDERR_FILENO, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

/* (The reason last: the line a user and a script read first is why the run ended.) */
static void on_deadline(int sig)
{
    (void)sig;
    write_str("kairos: the committed output could not be printed in full: the process was not "
              "in a state to print it (a lock it needs is held by the thread that failed, or "
              "by a stuck one)\n");
    write_str(last_words);
    kr__exit_now(last_status);
}

/* One thread ends the run; another that fails meanwhile waits for it to do so. */
static void begin_dying(const char *prefix, const char *msg, int status)
{
    if (atomic_flag_test_and_set(&dying))
        for (;;) pause();
    snprintf(last_words, sizeof last_words, "%s%s\n", prefix, msg);
    last_status = status;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_deadline;
    sigaction(SIGALRM, &sa, NULL);
    alarm(SALVAGE_DEADLINE_S);
}

/* A file being written that a death must not leave behind (kr__unlink_on_death). */
static char doomed[4096];
static atomic_bool doomed_set;

void kr__unlink_on_death(const char *path)
{
    atomic_store_explicit(&doomed_set, false, memory_order_release);
    if (!path || snprintf(doomed, sizeof doomed, "%s", path) >= (int)sizeof doomed) return;
    atomic_store_explicit(&doomed_set, true, memory_order_release);
}

static _Noreturn void end_dying(void)
{
    void (*fn)(void *) = salvage_fn;
    salvage_fn = NULL;
    if (atomic_load_explicit(&doomed_set, memory_order_acquire)) unlink(doomed);
    if (fn) fn(salvage_arg);
    fflush(stdout);
    write_str(last_words);
    kr__exit_now(last_status);
}

_Noreturn void kr__fatal_oom(const char *what, size_t bytes)
{
    char msg[256];
    snprintf(msg, sizeof msg, "out of memory allocating %zu bytes for %s; reduce --lps or the "
             "model's state, or run on a machine with more memory", bytes, what);
    kr__die(msg);
}

_Noreturn void kr__internal_error(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    begin_dying("kairos: internal error (engine invariant violated, please report): ", msg,
                KR_EXIT_INTERNAL);
    end_dying();
}

int kr__out_errno;
bool kr__out_closed;

static _Noreturn void output_failed(int err)
{
    fprintf(stderr, "kairos: error: writing the committed output to stdout failed (%s): the "
            "output is incomplete\n", strerror(err));
    fflush(stderr);
    kr__exit_now(KR_EXIT_MODEL);
}

void kr__stdout_flush(void)
{
    errno = 0;
    if (fflush(stdout) == EOF) output_failed(kr__out_errno ? kr__out_errno : errno ? errno : EIO);
    if (ferror(stdout)) output_failed(kr__out_errno ? kr__out_errno : EIO);
}

_Noreturn void kr__die(const char *msg)
{
    begin_dying("kairos: error: ", msg, KR_EXIT_MODEL);
    end_dying();
}

_Noreturn void kr__die_status(const char *prefix, const char *msg, int status)
{
    begin_dying(prefix, msg, status);
    end_dying();
}
