/* interrupt.c - see interrupt.h. The handler only stores the signal number (and, on a
 * second signal, writes one line and exits): everything else happens on the engines'
 * threads, outside signal context. */
#include "core/interrupt.h"
#include "core/core.h"
#include "base/error.h"
#include "base/sanitize.h"
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

_Atomic int kr__interrupt_sig;

/* A second signal this soon after the first is its echo, not the user's second word: a
 * Ctrl-C reaches every process of the terminal's group, mpirun among them, which forwards
 * it to its ranks again (they then quit without a summary, and mpirun kills them a second
 * later). */
#define ECHO_NS 1000000000ll

static _Atomic long long first_ns;
static _Atomic int done;

static long long now_ns(void)
{
    struct timespec ts; /* (clock_gettime is async-signal-safe) */
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* The first interrupt: noted, and said (true); a later one: false. */
static bool first_interrupt(int sig)
{
    int none = 0;
    if (!atomic_compare_exchange_strong(&kr__interrupt_sig, &none, sig)) return false;
    atomic_store(&first_ns, now_ns());
    static const char msg[] = "\nkairos: interrupted: stopping at the next committed "
                              "point (signal again to quit at once)\n";
    ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)n;
    return true;
}

/* raise(SIGTERM) in model code: the model's call, like exit() (interpose.c) - a model
 * error at the event, deferred on a speculative path (unwound as a crash is: this
 * handler does not defer the signal, SA_NODEFER) */
static void raised_by_model(int sig, const siginfo_t *si)
{
#if !defined(KR_TSAN) /* (it delivers signals late, from its runtime: an interrupt there) */
    if (si && si->si_code == SI_TKILL && si->si_pid == getpid() && kr__in_lp())
        kr__model_error("the model raised %s; a model ends a run with done() or --end, or "
                        "stops it with kr_error(), which name what went wrong",
                        sig == SIGINT ? "SIGINT" : "SIGTERM");
#else
    (void)sig, (void)si;
#endif
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    raised_by_model(sig, si);
    int first = atomic_load(&kr__interrupt_sig);
    if (atomic_load(&done)) kr__exit_now(128 + (first ? first : sig)); /* (the run is over) */
    if (first_interrupt(sig) || now_ns() - atomic_load(&first_ns) < ECHO_NS) return;
    static const char quit[] = "kairos: interrupted twice: quitting without a summary\n";
    ssize_t n = write(STDERR_FILENO, quit, sizeof quit - 1);
    (void)n;
    kr__exit_now(128 + sig);
}

static void install(int sig)
{
    struct sigaction old, sa;
    if (sigaction(sig, NULL, &old) == 0 && old.sa_handler == SIG_IGN) return;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | SA_SIGINFO | SA_NODEFER;
    sigaction(sig, &sa, NULL);
}

void kr__interrupt_install(void)
{
    install(SIGINT);
    install(SIGTERM);
}

void kr__interrupt_done(void)
{
    atomic_store(&done, 1);
}
