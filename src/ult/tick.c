/* tick.c - extra ticks: a per-worker POSIX timer (timer_create, SIGEV_THREAD_ID) sends the
 * worker a real-time signal every ΔET. The handler is the extra-tick manager of paper 000:
 * in platform mode it returns at once, so engine code is never preempted; in application
 * mode it runs check-and-switch, and preempts the event (switches to the platform context)
 * when a lower timestamp has arrived for this thread, or when the event has held the CPU
 * longer than the liveness slice.
 *
 * Where the paper's kernel module moves the interrupted instruction pointer and pushes a
 * return address on the user stack (hence its -mno-red-zone), a POSIX signal frame is built
 * by the kernel below the red zone, so model code needs no special flags.
 *
 * Only model code is preempted: an interrupted instruction in the C library (which may hold
 * its malloc or stdio locks), the dynamic loader or a sanitizer runtime is left alone until
 * a later tick. Preemptible code is the executable's and the model library's text. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include "ult/ult.h"
#include "base/clock.h"

#define MAX_RANGES 16

static uintptr_t ranges[2 * MAX_RANGES];
static unsigned nranges;
static __thread timer_t tick_timer;
static __thread bool have_timer;

int kr__tick_signal(void)
{
    return SIGRTMIN + 4;
}

static bool pc_ok(const struct kr__ult_self *s, uintptr_t pc)
{
    for (unsigned i = 0; i < s->npc_ranges; i++)
        if (pc >= s->pc_ranges[2 * i] && pc < s->pc_ranges[2 * i + 1]) return true;
    return false;
}

/* Why the running event should yield now: an event below it waits (KR_BY_TICK), its
 * slice is over (KR_BY_SLICE), or 0. */
static int tick_reason(const struct kr__ult_self *s)
{
    uint64_t b = atomic_load_explicit(s->bh_min, memory_order_relaxed);
    if (s->now > kr__ult_bits_time(b)) return KR_BY_TICK;
    if (s->slice_ns && kr__clock_ns() - s->seg_start_ns > s->slice_ns) return KR_BY_SLICE;
    return 0;
}

/* The running event's ULT suspended from the handler, `why`; back when it resumes. */
static void tick_suspend(struct kr__ult_self *s, int why)
{
    s->app = 0;
    atomic_signal_fence(memory_order_seq_cst);
    /* The tick is blocked while its handler runs, and this one now stays suspended
     * while other events run: unblock it for them. When this ULT resumes and the
     * handler returns, sigreturn restores the interrupted mask (unblocked) anyway. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, kr__tick_signal());
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    if (why == KR_BY_TICK) s->by_tick++;
    else s->by_slice++;
    kr__ult_yield(KR_ULT_SUSPENDED, why);
    atomic_signal_fence(memory_order_seq_cst);
    s->app = 1;
}

static void on_tick(int sig, siginfo_t *si, void *ucv)
{
    (void)sig;
    (void)si;
    struct kr__ult_self *s = &kr__ult_self;
    s->ticks++;
    if (!s->app) {
        s->ticks_platform++;
        return;
    }
    char here;
    if (&here >= s->alt_lo && &here < s->alt_hi) return; /* inside the fault handler */
    const ucontext_t *uc = ucv;
    if (!pc_ok(s, (uintptr_t)uc->uc_mcontext.gregs[REG_RIP])) {
        s->ticks_outside++;
        return;
    }
    int saved = errno;
    int why = tick_reason(s);
    if (why && s->can_suspend) tick_suspend(s, why);
    errno = saved;
}

struct find {
    const void *code;
    bool self;
};

/* Whether one of the object's loaded segments holds the address `code`. */
static bool object_holds(const struct dl_phdr_info *info, const void *code)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (uintptr_t)code >= lo && (uintptr_t)code < hi) return true;
    }
    return false;
}

/* Add the executable segment [lo, hi) unless it is there already (or the table is full). */
static void add_range(uintptr_t lo, uintptr_t hi)
{
    for (unsigned k = 0; k < nranges; k++)
        if (ranges[2 * k] == lo) return;
    if (nranges >= MAX_RANGES) return;
    ranges[2 * nranges] = lo;
    ranges[2 * nranges + 1] = hi;
    nranges++;
}

static bool code_segment(const ElfW(Phdr) *ph)
{
    return ph->p_type == PT_LOAD && (ph->p_flags & PF_X);
}

static int add_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct find *f = arg;
    bool main_exe = f->self;   /* the first object listed is the executable */
    f->self = false;
    if (!main_exe && !object_holds(info, f->code)) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (!code_segment(ph)) continue;
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        add_range(lo, lo + ph->p_memsz);
    }
    return 0;
}

void kr__tick_install(const void *model_code)
{
    nranges = 0;
    struct find f = { model_code, true };
    dl_iterate_phdr(add_object, &f);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_tick;
    /* Not SA_NODEFER: when ticks cost more than their period (a slow virtual machine and
     * a short --tick-us) they would nest without end. SA_RESTART: platform code's system
     * calls just continue. No SA_ONSTACK: the signal frame (the saved CPU state) must stay
     * on the interrupted ULT's stack. */
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(kr__tick_signal(), &sa, NULL);
}

int kr__tick_thread_init(void)
{
    kr__ult_self.pc_ranges = ranges;
    kr__ult_self.npc_ranges = nranges;
    if (have_timer) return 0;
    struct sigevent sev;
    memset(&sev, 0, sizeof sev);
    sev.sigev_notify = SIGEV_THREAD_ID;
    sev.sigev_signo = kr__tick_signal();
    sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
    if (timer_create(CLOCK_MONOTONIC, &sev, &tick_timer)) return errno;
    have_timer = true;
    return 0;
}

void kr__tick_thread_fini(void)
{
    if (!have_timer) return;
    timer_delete(tick_timer);
    have_timer = false;
}

timer_t kr__tick_timer(void)
{
    return tick_timer;
}

void kr__tick_arm(uint64_t period_ns)
{
    if (!have_timer) return;
    struct itimerspec its;
    memset(&its, 0, sizeof its);
    its.it_interval.tv_sec = (time_t)(period_ns / 1000000000ull);
    its.it_interval.tv_nsec = (long)(period_ns % 1000000000ull);
    its.it_value = its.it_interval;
    timer_settime(tick_timer, 0, &its, NULL);
}

/* An environment variable's value, or NULL if it is unset or empty. */
static const char *env_set(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

/* Where the recommended period is kept. */
const char *kr__calibration_path(char *buf, size_t cap)
{
    const char *env = env_set("KAIROS_CALIBRATION");
    if (env) return env;
    const char *xdg = env_set("XDG_CONFIG_HOME"), *home = env_set("HOME");
    if (xdg) snprintf(buf, cap, "%s/kairos/calibration", xdg);
    else if (home) snprintf(buf, cap, "%s/.config/kairos/calibration", home);
    else return NULL;
    return buf;
}

/* Whether line is "tick_us X" with X in range (into *x). */
static bool tick_line(const char *line, double *x)
{
    return sscanf(line, "tick_us %lf", x) == 1 && *x >= KR_TICK_US_MIN && *x <= 1e6;
}

double kr__calibrated_tick_us(const char **from)
{
    char buf[4096];
    const char *path = kr__calibration_path(buf, sizeof buf);
    FILE *f = path ? fopen(path, "r") : NULL;
    *from = "default";
    if (!f) return KR_TICK_US_DEFAULT;
    double us = KR_TICK_US_DEFAULT, x;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (tick_line(line, &x)) {
            us = x;
            *from = "calibration";
        }
    fclose(f);
    return us;
}
