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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "core/core.h"
#include "ult/ult.h"
#include "base/error.h"
#include "base/sanitize.h"

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

/* clang links a sanitizer's runtime into the executable, its interceptors included: the
 * names below would replace them (threads it then does not track: leaks reported that are
 * none), and RTLD_NEXT would pass them by. Such builds (the fuzzers) do without these. */
#if defined(__clang__) && (defined(KR_ASAN) || defined(KR_TSAN))
#define KR_INTERPOSE_LIBC 0
#else
#define KR_INTERPOSE_LIBC 1
#endif

/* The C library's own functions behind the names below, looked up once (before any event:
 * kr__interpose_init; lazily for a call before that, never in a signal handler). */
static struct {
    int (*vfprintf)(FILE *, const char *, va_list);
    int (*puts)(const char *);
    int (*putchar)(int);
    int (*fputs)(const char *, FILE *);
    ssize_t (*write)(int, const void *, size_t);
    int (*pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
} real;

static void look_up(void)
{
    *(void **)&real.vfprintf = dlsym(RTLD_NEXT, "vfprintf");
    *(void **)&real.puts = dlsym(RTLD_NEXT, "puts");
    *(void **)&real.putchar = dlsym(RTLD_NEXT, "putchar");
    *(void **)&real.fputs = dlsym(RTLD_NEXT, "fputs");
    *(void **)&real.pthread_create = dlsym(RTLD_NEXT, "pthread_create");
    *(void **)&real.write = dlsym(RTLD_NEXT, "write");
    if (real.vfprintf && real.puts && real.putchar && real.fputs && real.write &&
        real.pthread_create)
        return;
    /* (not kr__die: its write would come back here, inside pthread_once) */
    static const char msg[] = "kairos: internal error: the C library lacks vfprintf, puts, "
                              "putchar, fputs, write or pthread_create\n";
    (void)!syscall(SYS_write, STDERR_FILENO, msg, sizeof msg - 1);
    syscall(SYS_exit_group, KR_EXIT_INTERNAL);
}

void kr__interpose_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, look_up);
}

/* ---- threads the model starts ---- */

_Thread_local _Atomic bool kr__foreign_inbox __attribute__((tls_model("local-exec")));
_Thread_local _Atomic bool *kr__foreign_parent;

#if KR_INTERPOSE_LIBC
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
    kr__interpose_init();
    if (!kr__in_lp()) return real.pthread_create(t, a, fn, arg); /* (the engine's, others) */
    struct spawn *s = malloc(sizeof *s);
    if (!s) return EAGAIN;
    /* (the flag of the event that starts it: on an event stack the stack's own, since a
     * tick may switch to another event of this thread before that one ends) */
    struct kr__ult *u = kr__ult_self.app ? kr__ult_self.cur : NULL;
    *s = (struct spawn){ fn, arg, u ? &u->foreign : &kr__foreign_inbox };
    int rc = real.pthread_create(t, a, spawned, s);
    if (rc) free(s);
    return rc;
}

#endif

/* ---- output that bypasses kr_printf ---- */

/* printf, puts, putchar, write(1, ...) and their kin straight to stdout from a model
 * callback: that text is not committed output - a rolled-back event prints it too, in no
 * order with the committed output, and engines differ. Warned once per run, naming where,
 * then done as asked. (Kairos's own output goes through fwrite and the C library's
 * internal names, never these.) */
static atomic_flag stdout_warned = ATOMIC_FLAG_INIT;

void kr__interpose_reset(void)
{
    atomic_flag_clear(&stdout_warned);
}

bool kr__stdout_committed;

#if KR_INTERPOSE_LIBC
/* With kr__stdout_committed (a program whose model prints as ROSS models do: the ROSS
 * layer), what a model callback writes to stdout is its committed output, as kr_printf's
 * (not from done() or a query handler, which may not print: warned as usual). */
static bool committed_stdout(void)
{
    int m = kr__ctx.mode;
    return kr__stdout_committed && kr__in_lp() && m != KR_MODE_DONE && m != KR_MODE_QUERY &&
           m != KR_MODE_REVERSE;
}

static bool as_output(const char *text, size_t len)
{
    if (!committed_stdout()) return false;
    sig_atomic_t was = kr__ult_enter();
    if (kr__ctx.mode != KR_MODE_COAST && len) kr__ctx.ops->emit(&kr__ctx, text, len);
    kr__ult_leave(was);
    return true;
}

/* as_output of a format: its length in *n. */
static bool vas_output(const char *fmt, va_list ap, int *n)
{
    if (!committed_stdout()) return false;
    char small[512], *text = small;
    va_list cp;
    va_copy(cp, ap);
    int len = vsnprintf(small, sizeof small, fmt, cp);
    va_end(cp);
    if (len >= (int)sizeof small) {
        if (!(text = malloc((size_t)len + 1))) kr__fatal_oom("printf text", (size_t)len + 1);
        vsnprintf(text, (size_t)len + 1, fmt, ap);
    }
    if (len > 0) as_output(text, (size_t)len);
    if (text != small) free(text);
    *n = len;
    return true;
}

static void stdout_use(const char *fn)
{
    if (!kr__in_lp() || !kr__run_current || atomic_flag_test_and_set(&stdout_warned)) return;
    char where[320];
    kr__ctx_where(where, sizeof where);
    fprintf(stderr, "kairos: warning: %s: %s writes to stdout directly: that text is not "
            "committed output (an event rolled back prints it too, out of order, and engines "
            "differ); use kr_printf (this warning is given once)\n", where, fn);
}

int vfprintf(FILE *f, const char *fmt, va_list ap)
{
    kr__interpose_init();
    int n;
    if (f == stdout && vas_output(fmt, ap, &n)) return n;
    if (f == stdout) stdout_use("fprintf");
    return real.vfprintf(f, fmt, ap);
}

int vprintf(const char *fmt, va_list ap)
{
    int n;
    if (vas_output(fmt, ap, &n)) return n;
    stdout_use("printf");
    return vfprintf(stdout, fmt, ap);
}

/* (printf, fprintf and the _FORTIFY_SOURCE builds' __printf_chk, __fprintf_chk: one body) */
#define KR_VA_CALL(last, call)                                                             \
    do {                                                                                   \
        va_list ap;                                                                        \
        va_start(ap, last);                                                                \
        int n_ = call;                                                                     \
        va_end(ap);                                                                        \
        return n_;                                                                         \
    } while (0)

int printf(const char *fmt, ...)
{
    KR_VA_CALL(fmt, vprintf(fmt, ap));
}

int fprintf(FILE *f, const char *fmt, ...)
{
    KR_VA_CALL(fmt, vfprintf(f, fmt, ap));
}

int puts(const char *s)
{
    kr__interpose_init();
    if (as_output(s, strlen(s))) {
        as_output("\n", 1);
        return 1;
    }
    stdout_use("puts");
    return real.puts(s);
}

int putchar(int c)
{
    kr__interpose_init();
    char ch = (char)c;
    if (as_output(&ch, 1)) return (unsigned char)c;
    stdout_use("putchar");
    return real.putchar(c);
}

int fputs(const char *s, FILE *f)
{
    kr__interpose_init();
    if (f == stdout && as_output(s, strlen(s))) return 1;
    if (f == stdout) stdout_use("fputs");
    return real.fputs(s, f);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    kr__interpose_init();
    if (fd == STDOUT_FILENO) stdout_use("write(1, ...)");
    return real.write(fd, buf, n);
}

/* (_FORTIFY_SOURCE builds call these) */
int __printf_chk(int flag, const char *fmt, ...)
{
    (void)flag;
    KR_VA_CALL(fmt, vprintf(fmt, ap));
}

int __fprintf_chk(FILE *f, int flag, const char *fmt, ...)
{
    (void)flag;
    KR_VA_CALL(fmt, vfprintf(f, fmt, ap));
}
#endif
