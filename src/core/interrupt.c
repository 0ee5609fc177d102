/* interrupt.c - see interrupt.h. The handler only stores the signal number (and, on a
 * second signal, writes one line and exits): everything else happens on the engines'
 * threads, outside signal context. */
#include "core/interrupt.h"
#include "core/error.h"
#include <signal.h>
#include <string.h>
#include <unistd.h>

_Atomic int kr__interrupt_sig;

static void on_signal(int sig)
{
    int none = 0;
    if (atomic_compare_exchange_strong(&kr__interrupt_sig, &none, sig)) {
        static const char msg[] = "\nkairos: interrupted: stopping at the next committed "
                                  "point (signal again to quit at once)\n";
        ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
        (void)n;
        return;
    }
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
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, NULL);
}

void kr__interrupt_install(void)
{
    install(SIGINT);
    install(SIGTERM);
}
