/* fault.c - synchronous signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL). A write fault on a
 * protected page of the running LP's own state is dirty tracking (page/buddy modes): the
 * page's partition is marked and opened and the write resumes. Anything else raised by
 * model code is a model crash, reported like any model error (model, LP, virtual time,
 * event type, address) - deferred if the event is speculative, because a speculative event
 * may run on a message that is later cancelled and never run in a sequential execution.
 * A fault in engine code is a Kairos bug: say so, then die with the signal's default action.
 *
 * The handler runs on an alternate stack (a model's stack overflow must be reportable) and
 * with SA_NODEFER, because deferred errors leave it by longjmp to the engine. */
#define _GNU_SOURCE /* REG_RSP */
#include <errno.h>
#include <signal.h>
#include <ucontext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core.h"
#include "error.h"
#include "../state/buddy.h"
#include "../state/seg.h"
#include "../ult/ult.h"

#define ALT_STACK_BYTES (64 * 1024)

static __thread void *alt_stack;

/* A tracking fault: a write to a protected page of the running LP's own state. */
static bool tracking_fault(const siginfo_t *si)
{
    if (si->si_code != SEGV_ACCERR || !kr__in_lp()) return false;
    uint64_t lp;
    struct kr__seg *s = kr__region_find(si->si_addr, &lp);
    if (!s || !s->tracking || s->scan || s != kr__ctx.lp->arena.seg) return false;
    int64_t p = kr__seg_page(s, si->si_addr);
    if (p < 0 || (s->pg[p] & KR_PG_DIRTY)) return false;
    s->faults++;
    kr__seg_open_page(s, (uint32_t)p);
    return true;
}

static const char *sig_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    default: return "SIGILL";
    }
}

static void model_crash(int sig, const siginfo_t *si, const ucontext_t *uc)
{
    /* The kernel raises SIGSEGV itself (SI_KERNEL, no address) when it cannot push a signal
     * frame, e.g. a tick arriving while the event's stack is all but full. */
    const void *sp = si->si_code == SI_KERNEL ? (const void *)uc->uc_mcontext.gregs[REG_RSP] : NULL;
    if (sig == SIGSEGV && kr__ult_guard_hit(si->si_addr, sp)) {
        const struct kr__ult *u = kr__ult_self.cur;
        kr__model_error("the event handler overflowed its stack (%zu KiB, an event stack of "
                        "time-sharing): deep recursion or large local arrays; raise --stack-kb "
                        "or move large arrays to kr_malloc", (size_t)(u->hi - u->lo) / 1024);
    }
    uint64_t lp;
    struct kr__seg *s = sig == SIGSEGV ? kr__region_find(si->si_addr, &lp) : NULL;
    if (s && s != kr__ctx.lp->arena.seg)
        kr__model_error("the model wrote to address %p, in the state of LP %llu (%s): an LP's "
                        "state is private to it; send that LP an event instead", si->si_addr,
                        (unsigned long long)lp, sig_name(sig));
    if (sig == SIGFPE)
        kr__model_error("the model crashed with SIGFPE (arithmetic error, e.g. an integer "
                        "division by zero) at instruction %p", si->si_addr);
    if (sig == SIGILL)
        kr__model_error("the model crashed with SIGILL (illegal instruction at %p)", si->si_addr);
    kr__model_error("the model crashed with %s: invalid memory access at address %p (a bad or "
                    "dangling pointer, a write past a block, or a stack overflow); to find the "
                    "line, run it sequentially under a debugger: gdb --args kairos run ... "
                    "--sync sequential", sig_name(sig), si->si_addr);
}

static void engine_crash(int sig, const siginfo_t *si)
{
    char buf[192];
    int n = snprintf(buf, sizeof buf, "kairos: internal error: %s at address %p in engine "
                     "code (not in a model handler); please report\n", sig_name(sig), si->si_addr);
    ssize_t ignored = write(2, buf, n > 0 ? (size_t)n : 0);
    (void)ignored;
    signal(sig, SIG_DFL); /* returning re-runs the instruction: default action, core dump */
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    if (sig == SIGSEGV && (kr__buddy_calib_fault(si->si_addr) || tracking_fault(si))) {
        errno = saved;
        return;
    }
    if (kr__in_lp()) model_crash(sig, si, uc); /* does not return */
    engine_crash(sig, si);
    errno = saved;
}

void kr__fault_install(void)
{
    static bool done;
    if (done) return;
    done = true;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL };
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
    kr__fault_thread_init();
}

void kr__fault_thread_init(void)
{
    if (alt_stack) return;
    alt_stack = malloc(ALT_STACK_BYTES);
    if (!alt_stack) return; /* no alternate stack: stack overflows are not reportable */
    stack_t st = { .ss_sp = alt_stack, .ss_size = ALT_STACK_BYTES, .ss_flags = 0 };
    if (sigaltstack(&st, NULL)) {
        free(alt_stack);
        alt_stack = NULL;
        return;
    }
    kr__ult_self.alt_lo = alt_stack; /* ticks landing in the fault handler are ignored */
    kr__ult_self.alt_hi = (char *)alt_stack + ALT_STACK_BYTES;
}

void kr__fault_thread_fini(void)
{
    if (!alt_stack) return;
    stack_t st = { .ss_sp = NULL, .ss_size = 0, .ss_flags = SS_DISABLE };
    sigaltstack(&st, NULL);
    free(alt_stack);
    alt_stack = NULL;
    kr__ult_self.alt_lo = kr__ult_self.alt_hi = NULL;
}
