/* pin.c - engine threads: their stacks (the stack contract of docs/guide.md: --stack-kb for
 * model code on every engine, a large guard below) and binding each to a core of its own,
 * when there are cores enough. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "base/procfile.h"
#include <unistd.h>
#include "core/core.h"
#include "core/pin.h"
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

/* An environment variable's value as a count (0: unset or not a number). */
static unsigned env_count(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) return 0;
    char *end;
    unsigned long n = strtoul(v, &end, 10);
    return !*end && n < 65536 ? (unsigned)n : 0;
}

void kr__local_ranks(unsigned *rank, unsigned *size)
{
    static const char *const names[][2] = {
        { "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE" }, /* Open MPI */
        { "MPI_LOCALRANKID", "MPI_LOCALNRANKS" },                       /* MPICH */
        { "SLURM_LOCALID", "SLURM_NTASKS_PER_NODE" },                   /* srun */
    };
    *rank = 0;
    *size = 1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        unsigned s = env_count(names[i][1]);
        if (s > 1) {
            *rank = env_count(names[i][0]) % s;
            *size = s;
            return;
        }
    }
}

/* Worker `id` of `nthreads` in this process, beside the other ranks on this machine: the
 * CPUs the process may use are dealt out over all of those workers (mpirun may have bound
 * each rank to cores of its own, or left them all on every core). */
static cpu_set_t allowed; /* the process's CPUs, as first read (by the run's thread) */

static void take_allowed(void)
{
    if (sched_getaffinity(0, sizeof allowed, &allowed)) CPU_ZERO(&allowed);
}

/* The k-th CPU the process may use. */
static int nth_allowed(unsigned k)
{
    for (unsigned c = 0, i = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed) && i++ == k) return (int)c;
    return -1;
}

/* The CPU worker `id` of `nthreads` is bound to, or -1: the OS places it where workers
 * outnumber cores, and where one worker is alone on the machine (nothing to keep apart or
 * near; bound to the first core, it ran at 0.42x the sequential engine beside a busy loop
 * there, while the unbound sequential engine moved to the free one). */
static int pin_cpu(unsigned id, unsigned nthreads)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, take_allowed);
    unsigned lr, ls;
    kr__local_ranks(&lr, &ls);
    unsigned cnt = (unsigned)CPU_COUNT(&allowed);
    bool bound = cnt < (unsigned)sysconf(_SC_NPROCESSORS_ONLN); /* (by mpirun: its own) */
    unsigned total = bound ? nthreads : ls * nthreads, at = bound ? id : lr * nthreads + id;
    return cnt && total > 1 && total <= cnt ? nth_allowed(at % cnt) : -1;
}

void kr__pin_thread(unsigned id, unsigned nthreads)
{
    int c = pin_cpu(id, nthreads);
    if (c < 0) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(c, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

int kr__pin_worker_here(unsigned nthreads)
{
    int here = sched_getcpu();
    for (unsigned id = 0; here >= 0 && id < nthreads; id++)
        if (pin_cpu(id, nthreads) == here) return (int)id;
    return -1;
}

/* ---- where other processes run now (the home of a run that starts on one worker) ---- */

/* Field `k` (from 1) of a stat line whose second field, the command name in parentheses,
 * ends at `close` (it may hold spaces and parentheses itself), or NULL. */
static const char *stat_field(const char *close, int k)
{
    const char *p = close + 1; /* (the space before field 3) */
    for (int field = 3; field < k && p; field++) p = strchr(p + 1, ' ');
    return p;
}

/* Task `path`'s stat (/proc/P/task/T/stat): runnable, on CPU *cpu (field 39)? */
static bool task_runnable(const char *path, int *cpu)
{
    char buf[1024];
    kr__read_proc(path, buf, sizeof buf);
    const char *close = strrchr(buf, ')');
    if (!close || strncmp(close, ") R", 3)) return false;
    const char *p = stat_field(close, 39);
    return p && sscanf(p, " %d", cpu) == 1;
}

static bool numeric_name(const struct dirent *e)
{
    return e->d_name[0] >= '0' && e->d_name[0] <= '9';
}

static void busy_add(cpu_set_t *busy, int cpu)
{
    if (busy && cpu >= 0 && cpu < CPU_SETSIZE) CPU_SET(cpu, busy);
}

/* Process `pid`'s runnable tasks: their CPUs into *busy (if not NULL); how many. */
static unsigned runnable_tasks(const char *pid, cpu_set_t *busy)
{
    char dir[64], path[96];
    snprintf(dir, sizeof dir, "/proc/%s/task", pid);
    DIR *d = opendir(dir);
    if (!d) return 0;
    unsigned n = 0;
    for (struct dirent *t; (t = readdir(d));) {
        int cpu;
        snprintf(path, sizeof path, "%s/%.20s/stat", dir, t->d_name);
        if (!numeric_name(t) || !task_runnable(path, &cpu)) continue;
        n++;
        busy_add(busy, cpu);
    }
    closedir(d);
    return n;
}

/* Runnable tasks on the machine now (/proc/loadavg's fourth field), or 0. */
static unsigned runnable_now(void)
{
    char buf[128];
    unsigned run = 0, all;
    kr__read_proc("/proc/loadavg", buf, sizeof buf);
    return sscanf(buf, "%*f %*f %*f %u/%u", &run, &all) == 2 ? run : 0;
}

bool kr__cpus_busy(cpu_set_t *busy)
{
    CPU_ZERO(busy);
    if (runnable_now() <= runnable_tasks("self", NULL)) return false;
    char self[24];
    snprintf(self, sizeof self, "%d", (int)getpid());
    DIR *d = opendir("/proc");
    if (!d) return false;
    for (struct dirent *e; (e = readdir(d));)
        if (numeric_name(e) && strcmp(e->d_name, self)) runnable_tasks(e->d_name, busy);
    closedir(d);
    return CPU_COUNT(busy) > 0;
}

/* Worker `id`'s core is in `busy` (false for no worker, -1, or one not bound). */
static bool worker_busy(unsigned nthreads, int id, const cpu_set_t *busy)
{
    if (!busy) return false;
    int c = id < 0 ? -1 : pin_cpu((unsigned)id, nthreads);
    return c >= 0 && CPU_ISSET(c, busy);
}

int kr__pin_home_of(unsigned nthreads, int here, const cpu_set_t *busy)
{
    int free_one = -1;
    bool any_busy = false, here_busy = false;
    for (unsigned id = 0; id < nthreads; id++) {
        bool b = worker_busy(nthreads, (int)id, busy);
        any_busy |= b;
        here_busy |= b && (int)id == here;
        if (!b && free_one < 0) free_one = (int)id;
    }
    if (!any_busy || here < 0) return -1;
    return here_busy && free_one >= 0 ? free_one : here; /* (all busy: the balancer's) */
}

int kr__pin_worker_home(unsigned nthreads)
{
    int here = kr__pin_worker_here(nthreads);
    cpu_set_t busy;
    return kr__pin_home_of(nthreads, here, here >= 0 && kr__cpus_busy(&busy) ? &busy : NULL);
}
