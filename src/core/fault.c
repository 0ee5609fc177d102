/* fault.c - synchronous signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT). A write fault on a
 * protected page of the running LP's own state is dirty tracking (page/buddy modes): the
 * page's partition is marked and opened and the write resumes. Anything else raised by
 * model code is a model crash, reported like any model error (model, LP, virtual time,
 * event type, address) - deferred if the event is speculative, because a speculative event
 * may run on a message that is later cancelled and never run in a sequential execution.
 * A fault in engine code is a Kairos bug: say so, then die with the signal's default action.
 *
 * The handler runs on an alternate stack (a model's stack overflow must be reportable) and
 * with SA_NODEFER, because deferred errors leave it by longjmp to the engine. */
#define _GNU_SOURCE /* REG_RSP, dladdr1 */
#include "base/sanitize.h"
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <signal.h>
#include <ucontext.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <unwind.h>
#include "core/core.h"
#include "base/error.h"
#include "core/watchdog.h"
#include "state/buddy.h"
#include "state/seg.h"
#include "ult/ult.h"

#define ALT_STACK_BYTES (64 * 1024)

static __thread void *alt_stack;

/* A tracking fault: a write to a protected page of the running LP's own state, which its
 * state mode takes (state/mode.h: write_fault). */
static bool tracking_fault(const siginfo_t *si)
{
    if (si->si_code != SEGV_ACCERR || !kr__in_lp()) return false;
    const struct kr__arena *a = &kr__ctx.lp->arena;
    const struct kr__state_ops *m = kr__state_ops(a->mode);
    uint64_t lp;
    struct kr__seg *s = kr__region_find(si->si_addr, &lp);
    return m->write_fault && s && s == a->seg && m->write_fault(s, si->si_addr);
}

static const char *sig_name(int sig)
{
    switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    default: return "SIGILL";
    }
}

/* The C library's code: a fault there (malloc on a heap the model corrupted) may leave its
 * locks held, so such a crash is never deferred to a longjmp and a later malloc. */
static uintptr_t libc_lo, libc_hi;

/* The code of the object holding address `probe`: [lo, hi) of its executable segments. */
struct code_range {
    uintptr_t probe, lo, hi;
};

/* [*lo, *hi) widened to cover [a, b). */
static void widen(uintptr_t *lo, uintptr_t *hi, uintptr_t a, uintptr_t b)
{
    if (a < *lo) *lo = a;
    if (b > *hi) *hi = b;
}

static int find_code(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct code_range *c = arg;
    uintptr_t probe = c->probe, lo = UINTPTR_MAX, hi = 0;
    bool has = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD) continue;
        uintptr_t a = info->dlpi_addr + p->p_vaddr, b = a + p->p_memsz;
        has |= probe >= a && probe < b;
        if (p->p_flags & PF_X) widen(&lo, &hi, a, b);
    }
    if (!has) return 0;
    c->lo = lo;
    c->hi = hi;
    return 1;
}

static void code_of(uintptr_t probe, uintptr_t *lo, uintptr_t *hi)
{
    struct code_range c = { probe, 0, 0 };
    dl_iterate_phdr(find_code, &c);
    *lo = c.lo;
    *hi = c.hi;
}

static bool in_libc(const ucontext_t *uc)
{
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    return pc >= libc_lo && pc < libc_hi;
}

/* Kairos's own code, the executable (built-in models are in it too): an API call a model
 * made, never unwound from by a timeout. */
static uintptr_t self_lo, self_hi;

/* The C library's thread sits in a system call, or is about to restart one (the instruction
 * before or at its program counter is `syscall`, 0f 05): unwinding from there is as safe as
 * a thread's cancellation, which ends blocked calls the same way. */
static bool at_syscall(const ucontext_t *uc)
{
    const unsigned char *pc = (const unsigned char *)uc->uc_mcontext.gregs[REG_RIP];
    if (!in_libc(uc) || (uintptr_t)pc < libc_lo + 2 || (uintptr_t)pc + 2 > libc_hi) return false;
    return (pc[-2] == 0x0f && pc[-1] == 0x05) || (pc[0] == 0x0f && pc[1] == 0x05);
}

/* Whether the thread was stopped where a timeout may unwind it: in model code, or blocked
 * in a system call (not inside Kairos, nor elsewhere in the C library, whose locks it may
 * hold). */
static bool model_interruptible(const ucontext_t *uc)
{
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    if (pc >= self_lo && pc < self_hi) return false;
    return !in_libc(uc) || at_syscall(uc);
}

/* --event-timeout (core/watchdog.c): the watcher asks this thread to end the callback it
 * is stuck in, as a model error. Not from the engine's code or inside the C library but
 * at a system call (locks may be held there): the watcher asks again at its next look. */
static void timeout_signal(const siginfo_t *si, const ucontext_t *uc)
{
#if defined(KR_TSAN)
    (void)si, (void)uc; /* (it delivers signals late, from its runtime: the process ends) */
    return;
#endif
    struct kr__watch *w = si->si_code == SI_QUEUE ? si->si_value.sival_ptr : NULL;
    if (!w || !kr__in_lp() || !kr__run_current || !kr__watch_meant(w)) return;
    if (model_interruptible(uc)) kr__watch_raise(w, kr__run_current);
}

/* The fault lies in the guard below the stack model code runs on (an event stack, or the
 * engine thread's own), or the stack pointer itself has left the stack: a frame larger
 * than the stack. */
static bool thread_overflow(const siginfo_t *si, const ucontext_t *uc)
{
    const char *lo = kr__ult_self.cur ? kr__ult_self.cur->lo : kr__stack_lo;
    if (!lo) return false;
    const char *a = si->si_addr, *sp = (const char *)uc->uc_mcontext.gregs[REG_RSP];
    return (a >= lo - KR_STACK_GUARD && a < lo) || (sp < lo && sp >= lo - KR_STACK_GUARD);
}

/* Was the model's state written past its end (area canaries)? Then that is the diagnosis,
 * whatever crashed afterwards. The scan reads headers the overrun may have clobbered: a
 * fault inside it abandons the scan rather than recursing. */
static __thread volatile sig_atomic_t scanning;
static __thread sigjmp_buf scan_jmp;

static void overrun_check(void)
{
#if defined(KR_TSAN)
    return; /* (ThreadSanitizer cannot follow a siglongjmp out of a nested handler) */
#endif
    if (scanning) return;
    char buf[640];
    const struct kr__run *r = kr__run_current;
    for (volatile kr_lp id = r ? r->lo : 0; r && id < r->hi; id++) {
        scanning = 1;
        if (sigsetjmp(scan_jmp, 0) == 0 && kr__overrun_lp(id, buf, sizeof buf)) kr__die(buf);
    }
    scanning = 0;
}

/* A SIGSEGV the model caused that has a name: a stack overflow, another LP's state. */
static void another_state(const siginfo_t *si, const ucontext_t *uc);

/* Whether a is in the page --check gives events with an empty payload. */
static bool in_empty_payload(const char *a)
{
    const char *empty = kr__empty_payload;
    return empty && a >= empty && a < empty + 4096;
}

static void segv_diagnosis(const siginfo_t *si, const ucontext_t *uc)
{
    /* The kernel raises SIGSEGV itself (SI_KERNEL, no address) when it cannot push a signal
     * frame, e.g. a tick arriving while the event's stack is all but full. */
    const void *sp = si->si_code == SI_KERNEL ? (const void *)uc->uc_mcontext.gregs[REG_RSP] : NULL;
    if (kr__ult_guard_hit(si->si_addr, sp) || thread_overflow(si, uc))
        kr__model_error("the model overflowed its stack (--stack-kb %zu KiB, the same for model "
                        "code on every engine): deep recursion or large local arrays; raise "
                        "--stack-kb or move large arrays to kr_malloc",
                        kr__run_current ? kr__run_current->cfg->stack_kb : 0);
    if (in_empty_payload(si->si_addr))
        kr__model_error("--check: the event wrote through its payload pointer, and its payload "
                        "is empty (size 0): a payload is read-only, and an empty one has no "
                        "bytes (the write lands in Kairos's memory); keep what the event "
                        "changes in the LP's state");
    another_state(si, uc);
}

/* A fault in another LP's state (its slice of the region). */
static void another_state(const siginfo_t *si, const ucontext_t *uc)
{
    uint64_t lp;
    struct kr__seg *s = kr__region_find(si->si_addr, &lp);
    bool wrote = uc->uc_mcontext.gregs[REG_ERR] & 2; /* (the page fault's error code) */
    if (!s || s == kr__ctx.lp->arena.seg) return;
    if (kr__run_current && kr__run_current->check_slices)
        kr__model_error("--check: the model %s address %p, in the state of LP %llu, through a "
                        "pointer it kept (in a global, a table or another LP's state): an LP's "
                        "state is private to it, and another engine shows that LP at another "
                        "time; ask it with kr_query or send it an event", wrote ? "wrote to"
                        : "read", si->si_addr, (unsigned long long)lp);
    kr__model_error("the model wrote to address %p, in the state of LP %llu (%s): an LP's "
                        "state is private to it; send that LP an event instead", si->si_addr,
                        (unsigned long long)lp, sig_name(SIGSEGV));
}

/* A path's last component. */
static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

/* Where the crashing instruction is: " (in f+0x1c, libm.so+0x11ac: addr2line -f -e PATH
 * 0x11ac)" when the dynamic symbol table names its function, else " (in libm.so+0x11ac:
 * addr2line ...)"; addr2line gives the function and, built with -g, the line (a static
 * function is not in the dynamic table). Empty if no loaded object holds it. (dladdr1 reads the
 * loader's tables: fine here, model code is not inside the loader.) */
static void crash_site(const ucontext_t *uc, char *buf, size_t cap)
{
    uintptr_t pc = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    buf[0] = 0;
    if (!dladdr1((void *)pc, &info, (void **)&sym, RTLD_DL_SYMENT) || !info.dli_fname ||
        !info.dli_fname[0])
        return;
    const char *base = base_name(info.dli_fname);
    unsigned long off = (unsigned long)(pc - (uintptr_t)info.dli_fbase);
    uintptr_t in = pc - (uintptr_t)info.dli_saddr;
    if (info.dli_sname && sym && in < sym->st_size)
        snprintf(buf, cap, " (in %s+0x%lx, %s+0x%lx: addr2line -f -e %s 0x%lx)",
                 info.dli_sname, (unsigned long)in, base, off, info.dli_fname, off);
    else
        snprintf(buf, cap, " (in %s+0x%lx: addr2line -f -e %s 0x%lx)", base, off,
                 info.dli_fname, off);
}

/* ThreadSanitizer runs this handler with the signal blocked, SA_NODEFER or not, and the
 * engine's longjmp out of a model error leaves the mask as it is: a second crash on the
 * thread - a speculative one, then the next LP's - found SIGSEGV blocked, and the kernel
 * killed the process. Unblocked before that longjmp. */
static void tsan_unblock(int sig)
{
#if defined(KR_TSAN)
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
#else
    (void)sig;
#endif
}

/* SIGABRT in model code: the C library found its memory corrupted (the model's own
 * abort() calls are caught in interpose.c). */
static void libc_aborted(void)
{
    kr__ctx.fatal = true;
    kr__model_error("the C library aborted while model code was running: it found its "
                    "memory corrupted (free() of a bad pointer, a write past a block, a "
                    "failed assert in a library); the model's state is suspect");
}

/* Before a crash is described: what --check hid comes back into reach, an overrun found
 * since is reported first, and a crash inside the C library ends the run (fatal); the
 * signal unblocked again under ThreadSanitizer. */
static void crash_prepare(int sig, const ucontext_t *uc)
{
    tsan_unblock(sig);
    /* (sequential --check: every LP's state back within reach, for what reads them next) */
    if (kr__run_current && kr__run_current->check_slices) kr__region_reach_all(true);
    if (sig != SIGFPE && sig != SIGILL) overrun_check();
    if (sig == SIGABRT) libc_aborted();
    if (in_libc(uc)) kr__ctx.fatal = true;
}

/* Whether a crash near address 0 is the model reading the state of an LP whose init set
 * none. */
static bool no_state_yet(const siginfo_t *si, const ucontext_t *uc)
{
    return (uintptr_t)si->si_addr < 4096 && kr__ctx.lp && !kr__ctx.lp->root && !in_libc(uc);
}

static void model_crash(int sig, const siginfo_t *si, const ucontext_t *uc)
{
    crash_prepare(sig, uc);
    if (sig == SIGSEGV) segv_diagnosis(si, uc);
    char site[640];
    crash_site(uc, site, sizeof site);
    if (sig == SIGFPE)
        kr__model_error("the model crashed with SIGFPE (arithmetic error, e.g. an integer "
                        "division by zero) at instruction %p%s", si->si_addr, site);
    if (sig == SIGILL)
        kr__model_error("the model crashed with SIGILL (illegal instruction at %p)%s",
                        si->si_addr, site);
    if (no_state_yet(si, uc))
        kr__model_error("the model crashed with %s: invalid memory access at address %p, and "
                        "this LP has no state: did init call kr_set_state? (the state handed "
                        "to events and done() is NULL until it does)", sig_name(sig), si->si_addr);
    kr__model_error("the model crashed with %s: invalid memory access at address %p%s (a bad "
                    "or dangling pointer, a write past a block, or a stack overflow); to find "
                    "the line, run it sequentially under a debugger: gdb --args kairos run ... "
                    "--sync sequential", sig_name(sig), si->si_addr, site);
}

static void loading_crash(int sig, const siginfo_t *si)
{
    char buf[512];
    snprintf(buf, sizeof buf, "model '%s' crashed with %s (address %p) while being loaded, in a "
             "constructor or kr_model_entry()", kr__model_loading, sig_name(sig), si->si_addr);
    kr__die(buf);
}

/* The return addresses of the calls that led here, through the signal's frame, with GCC's
 * unwinder (libgcc_s, linked at start: glibc's backtrace() loads it with dlopen at its
 * first call, an allocation that LeakSanitizer then reports). */
struct frames {
    void *pc[12];
    int n;
};

static _Unwind_Reason_Code one_frame(struct _Unwind_Context *ctx, void *arg)
{
    struct frames *f = arg;
    if (f->n == (int)(sizeof f->pc / sizeof f->pc[0])) return _URC_END_OF_STACK;
    f->pc[f->n++] = (void *)_Unwind_GetIP(ctx);
    return _URC_NO_REASON;
}

/* Where an engine crash was, and its callers, as file+offset (for addr2line on the same
 * build): a crash seen once in CI can be placed without a core file. The first frames are
 * this handler's own. */
static void engine_site(const ucontext_t *uc, char *buf, size_t cap)
{
    crash_site(uc, buf, cap);
    struct frames f = { .n = 0 };
    _Unwind_Backtrace(one_frame, &f);
    size_t len = strlen(buf);
    const char *sep = "; called from ";
    for (int i = 0; i < f.n && len + 48 < cap; i++) {
        Dl_info info;
        if (!dladdr(f.pc[i], &info) || !info.dli_fname) continue;
        const char *base = base_name(info.dli_fname);
        len += (size_t)snprintf(buf + len, cap - len, "%s%s+0x%lx", sep, base,
                                (unsigned long)((uintptr_t)f.pc[i] - (uintptr_t)info.dli_fbase));
        sep = ", ";
    }
}

/* Outside model code: a Kairos bug, or memory the model corrupted earlier (a write past a
 * block lands in the C library's heap metadata or the engine's data, and the crash comes
 * later, in engine code). Exit 3, as documented for internal errors, after the committed
 * output. */
static void engine_crash(int sig, const siginfo_t *si, const ucontext_t *uc)
{
    char what[96], site[900], buf[1600];
    overrun_check(); /* the model's doing after all? */
    if (sig == SIGABRT) snprintf(what, sizeof what, "the C library aborted (SIGABRT)");
    else snprintf(what, sizeof what, "%s at address %p", sig_name(sig), si->si_addr);
    engine_site(uc, site, sizeof site);
    const struct kr__run *r = kr__run_current;
    snprintf(buf, sizeof buf, "%s in engine code, not in a model callback (model '%s'): a "
             "Kairos bug, or memory the model corrupted earlier (a write past the end of a "
             "kr_malloc block, or through a stale pointer). Check the model with --sync "
             "sequential --check --state page; if it is clean, please report this, with "
             "where it was:%s", what, r ? r->model->name : "?", site);
    kr__die_status("kairos: internal error: ", buf, KR_EXIT_INTERNAL);
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    if (sig == KR_SIG_TIMEOUT) {
        timeout_signal(si, uc); /* (returns if it did not unwind) */
        errno = saved;
        return;
    }
    if (scanning) { /* a fault inside the overrun scan: that LP's tables are clobbered */
        scanning = 0;
        siglongjmp(scan_jmp, 1);
    }
    if (sig == SIGSEGV && (kr__buddy_calib_fault(si->si_addr) || tracking_fault(si))) {
        errno = saved;
        return;
    }
    if (kr__in_lp()) model_crash(sig, si, uc); /* does not return */
    if (kr__model_loading) loading_crash(sig, si);
    engine_crash(sig, si, uc);
}

void kr__fault_install(void)
{
    static bool done;
    if (done) return;
    done = true;
    kr__interpose_init(); /* (the printf family's lookups, never in a signal handler) */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT };
    code_of((uintptr_t)strlen, &libc_lo, &libc_hi);
    code_of((uintptr_t)kr__fault_install, &self_lo, &self_hi);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaction(sigs[i], &sa, NULL);
    sigaction(KR_SIG_TIMEOUT, &sa, NULL);
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
