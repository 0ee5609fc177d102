/* calibrate.c - `kairos calibrate`: what do extra ticks cost on this machine (paper 000,
 * section 3.1)? Threads run a fixed busy loop, first with no ticks, then with the tick
 * timer at each period ΔET; the handler is the engine's own, in platform mode (it counts
 * and returns), so the measurement is the cost of delivery alone. Runs are interleaved and
 * repeated; the table shows the median slowdown per thread count and period. The smallest
 * period whose slowdown stays under the limit (default 3%) on every thread count is
 * recommended and saved, and later runs take it as the default --tick-us. A ticked run that
 * takes ten times its baseline is cut short: where a tick costs about its own period (as
 * on some virtual machines) the loop would otherwise never finish. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ult/ult.h"
#include "base/clock.h"
#include "core/core.h"
#include "base/error.h"
#include "calibrate.h"
#include "run/command.h"

/* Until calibrated. Paper 000 measured < 4% at 50 us on bare metal, but a tick costs 15-80
 * us on some virtual machines (timer expiry is a VM exit), so an uncalibrated run takes a
 * period whose cost stays small even there; with it --preempt adaptive arms ticks only for
 * events of several hundred microseconds. */
#define GIVE_UP 10.0      /* a ticked run stops at this many times its baseline */
#define CHUNK (1u << 16)  /* loop iterations between deadline checks */
#define MAX_LIST 32

struct cal_arg {
    unsigned id, nthreads;
    uint64_t iters;
    uint64_t tick_ns;      /* 0: no ticks */
    uint64_t deadline;     /* kr__clock_ns() at which to give up; 0: none */
    bool cut;              /* gave up before the end */
    timer_t timer;         /* the thread's tick timer, once `armed` */
    _Atomic bool armed;
    pthread_barrier_t *bar;
    uint64_t result;
    uint64_t ticks;
};

/* A failure of calibrate (a mistake on its command line, or a thread it cannot start): the
 * command's message and exit status (the command may exit; the library never does). */
static _Noreturn __attribute__((format(printf, 2, 3))) void cal_fail(int status, const char *fmt,
                                                                    ...)
{
    struct kr__error err;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err.msg, sizeof err.msg, fmt, ap);
    va_end(ap);
    err.status = status;
    exit(kr__cmd_fail_exit(&err));
}

/* A loop the compiler cannot shorten: a chain of dependent multiply-adds. */
static uint64_t busy(uint64_t iters, uint64_t x)
{
    for (uint64_t i = 0; i < iters; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

static void *cal_thread(void *p)
{
    struct cal_arg *a = p;
    kr__pin_thread(a->id, a->nthreads);
    bool timer = a->tick_ns && kr__tick_thread_init() == 0;
    pthread_barrier_wait(a->bar);
    if (timer) {
        a->timer = kr__tick_timer();
        kr__tick_arm(a->tick_ns);
        atomic_store(&a->armed, true);
    }
    uint64_t x = a->id + 1;
    for (uint64_t done = 0; done < a->iters && !a->cut; done += CHUNK) {
        x = busy(a->iters - done < CHUNK ? a->iters - done : CHUNK, x);
        a->cut = a->deadline && kr__clock_ns() > a->deadline;
    }
    a->result = x;
    if (timer) {
        kr__tick_arm(0);
        /* (the main thread may be stopping the timer too: it is deleted only after) */
        while (!atomic_exchange(&a->armed, false)) sched_yield();
        kr__tick_thread_fini();
    }
    a->ticks = kr__ult_self.ticks;
    kr__ult_self.ticks = 0;
    kr__ult_self.ticks_platform = 0;
    return NULL;
}

/* Join a calibration thread. Where a tick costs more than its period the thread makes no
 * progress and never reads its deadline, so a second after it the timer is stopped here. */
static void join_or_stop(pthread_t tid, struct cal_arg *a, uint64_t deadline)
{
    if (deadline) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        uint64_t left = deadline > kr__clock_ns() ? deadline - kr__clock_ns() : 0;
        left += 1000000000ull;
        ts.tv_sec += (time_t)(left / 1000000000ull);
        ts.tv_nsec += (long)(left % 1000000000ull);
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        if (pthread_timedjoin_np(tid, NULL, &ts) == 0) return;
        if (atomic_exchange(&a->armed, false)) { /* the thread cannot delete it meanwhile */
            struct itimerspec off;
            memset(&off, 0, sizeof off);
            timer_settime(a->timer, 0, &off, NULL);
            atomic_store(&a->armed, true);
        }
    }
    pthread_join(tid, NULL);
}

/* Wall seconds for nthreads threads to run iters each; a negative result if they gave up
 * after `limit` seconds (0: no limit). */
static double run_once(unsigned nthreads, uint64_t iters, uint64_t tick_ns, double limit,
                       uint64_t *ticks)
{
    pthread_t tid[MAX_LIST * 8];
    struct cal_arg arg[MAX_LIST * 8];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, nthreads + 1);
    uint64_t deadline = limit > 0 ? kr__clock_ns() + (uint64_t)(limit * 1e9) : 0;
    for (unsigned t = 0; t < nthreads; t++) {
        arg[t] = (struct cal_arg){ .id = t, .nthreads = nthreads, .iters = iters,
                                   .tick_ns = tick_ns, .deadline = deadline, .bar = &bar };
        if (pthread_create(&tid[t], NULL, cal_thread, &arg[t]))
            cal_fail(KR_ERR_RESOURCE, "calibrate: cannot start thread %u", t);
    }
    pthread_barrier_wait(&bar);
    uint64_t t0 = kr__clock_ns();
    uint64_t sink = 0;
    bool cut = false;
    *ticks = 0;
    for (unsigned t = 0; t < nthreads; t++) {
        join_or_stop(tid[t], &arg[t], deadline);
        sink += arg[t].result;
        *ticks += arg[t].ticks;
        cut |= arg[t].cut;
    }
    double sec = (double)(kr__clock_ns() - t0) * 1e-9;
    if (cut) sec = -sec;
    pthread_barrier_destroy(&bar);
    if (sink == 42) fputc(' ', stderr); /* keep the results alive */
    return sec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_double_desc(const void *a, const void *b)
{
    return cmp_double(b, a);
}

/* whole: every value must be a whole number (thread counts, repetitions). */
static unsigned parse_list(const char *opt, const char *v, double *out, double lo, double hi,
                           bool whole)
{
    unsigned n = 0;
    char *copy = strdup(v ? v : "");
    for (char *tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
        char *end;
        errno = 0;
        double x = strtod(tok, &end);
        if (errno || end == tok || *end || !(x >= lo && x <= hi) || n == MAX_LIST)
            cal_fail(KR_ERR_USAGE, "%s needs a comma-separated list of numbers from %g to %g "
                     "(at most %d), got '%s'", opt, lo, hi, MAX_LIST, v);
        if (whole && x != floor(x))
            cal_fail(KR_ERR_USAGE, "%s needs whole numbers, got '%s'", opt, tok);
        out[n++] = x;
    }
    free(copy);
    if (!n) cal_fail(KR_ERR_USAGE, "%s needs at least one value", opt);
    return n;
}

/* One number from lo to hi (not a list). */
static double parse_one(const char *opt, const char *v, double lo, double hi, bool whole)
{
    double x[MAX_LIST];
    if (parse_list(opt, v, x, lo, hi, whole) != 1)
        cal_fail(KR_ERR_USAGE, "%s takes one number, got '%s'", opt, v);
    return x[0];
}

static void save(double us, const char *summary)
{
    char buf[4096];
    const char *path = kr__calibration_path(buf, sizeof buf);
    if (!path) {
        fprintf(stderr, "kairos: calibrate: no HOME or KAIROS_CALIBRATION: not saved\n");
        return;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++) /* mkdir -p of the parent */
        if (*p == '/') {
            *p = 0;
            mkdir(dir, 0755);
            *p = '/';
        }
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "kairos: calibrate: cannot write %s (%s): not saved\n", path,
                strerror(errno));
        return;
    }
    fprintf(f, "# written by 'kairos calibrate': default --tick-us of later runs\n%s", summary);
    fprintf(f, "tick_us %g\n", us);
    fclose(f);
    printf("saved to %s (used as the default --tick-us)\n", path);
}

static void cal_usage(void)
{
    puts("Usage: kairos calibrate [options]\n"
         "Measures the slowdown extra ticks cause to busy threads and picks --tick-us.\n"
         "  --threads LIST   thread counts to measure (default 1,...,cores)\n"
         "  --ticks LIST     tick periods in microseconds (default 2000,1000,500,200,100,50,20)\n"
         "  --seconds S      length of one baseline run (default 0.5)\n"
         "  --reps R         repetitions of each measurement, median kept (default 5)\n"
         "  --limit PCT      slowdown allowed for the recommendation (default 3)\n"
         "  --no-save        print only; do not save the recommendation");
}

struct cal_opts {
    double threads[MAX_LIST], ticks[MAX_LIST];
    unsigned nt, nk, reps;
    double seconds, limit;
    bool save;
};

/* The options of 'kairos calibrate' into o; 1 if --help was printed. */
static int cal_options(int argc, char **argv, struct cal_opts *o)
{
    static const double ticks[] = { 2000, 1000, 500, 200, 100, 50, 20 };
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (struct cal_opts){ .nk = 7, .reps = 5, .seconds = 0.5, .limit = 3, .save = true };
    memcpy(o->ticks, ticks, sizeof ticks);
    for (long t = 1; t <= (ncpu > 0 ? ncpu : 1) && o->nt < 8; t++) o->threads[o->nt++] = (double)t;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            cal_usage();
            return 1;
        }
        if (!strcmp(a, "--no-save")) {
            o->save = false;
            continue;
        }
        if (!v)
            cal_fail(KR_ERR_USAGE, "calibrate: option %s needs a value (or unknown option)", a);
        i++;
        if (!strcmp(a, "--threads")) o->nt = parse_list(a, v, o->threads, 1, 64, true);
        else if (!strcmp(a, "--ticks"))
            o->nk = parse_list(a, v, o->ticks, KR_TICK_US_MIN, 1e6, false);
        else if (!strcmp(a, "--seconds")) o->seconds = parse_one(a, v, 0.01, 600, false);
        else if (!strcmp(a, "--limit")) o->limit = parse_one(a, v, 0.01, 100, false);
        else if (!strcmp(a, "--reps")) o->reps = (unsigned)parse_one(a, v, 1, 101, true);
        else
            cal_fail(KR_ERR_USAGE, "calibrate: unknown option '%s' (see 'kairos calibrate "
                     "--help')", a);
    }
    return 0;
}

/* Loop iterations that make one baseline run on one thread take about `seconds`. */
static uint64_t cal_size(double seconds)
{
    uint64_t iters = 1u << 20, dummy;
    double t1 = run_once(1, iters, 0, 0, &dummy);
    while (t1 < 0.02) {
        iters *= 4;
        t1 = run_once(1, iters, 0, 0, &dummy);
    }
    return (uint64_t)((double)iters * seconds / t1);
}

/* What the measurements of one row say so far, and the summary saved with the result. */
struct cal_row {
    unsigned n;                  /* threads */
    bool gave_up;                /* a longer period left the loop no time */
    double *worst;               /* per period: the worst slowdown over thread counts */
    char *summary;
    size_t cap, len;
};

/* One cell: n threads, period ticks[k], reps interleaved runs with and without ticks. */
static void cal_cell(const struct cal_opts *o, uint64_t iters, unsigned k, struct cal_row *row)
{
    double base[101], tick[101];
    uint64_t got = 0, tk;
    bool cut = false;
    for (unsigned r = 0; r < o->reps && !cut && !row->gave_up; r++) { /* interleaved: drift
                                                                     * hits both alike */
        base[r] = run_once(row->n, iters, 0, 0, &tk);
        tick[r] = run_once(row->n, iters, (uint64_t)(o->ticks[k] * 1000), GIVE_UP * base[r], &tk);
        got += tk;
        cut = tick[r] < 0;
    }
    if (cut || row->gave_up) { /* shorter periods after one that failed: worse still */
        row->worst[k] = 1e9;
        if (row->gave_up)
            printf("%-8u %-10g %-12s %-12s skipped (a longer period gave up)\n", row->n,
                   o->ticks[k], "-", "-");
        else
            printf("%-8u %-10g %-12s %-12s > +%.0f%%   (gave up: the ticks leave the loop "
                   "almost no time)\n", row->n, o->ticks[k], "-", "-", (GIVE_UP - 1) * 100);
        row->gave_up = true;
        return;
    }
    qsort(base, o->reps, sizeof *base, cmp_double);
    qsort(tick, o->reps, sizeof *tick, cmp_double);
    double b = base[o->reps / 2], t = tick[o->reps / 2], slow = (t / b - 1) * 100;
    if (slow > row->worst[k]) row->worst[k] = slow;
    printf("%-8u %-10g %-12.4f %-12.4f %+.2f%%   (%.0f ticks/s/thread)\n", row->n, o->ticks[k],
           b, t, slow, (double)got / o->reps / row->n / t);
    if (row->len < row->cap - 128)
        row->len += (size_t)snprintf(row->summary + row->len, row->cap - row->len,
                                     "# threads %u tick_us %g slowdown %.2f%%\n", row->n,
                                     o->ticks[k], slow);
}

/* The shortest period under the limit on every thread count, else the longest measured. */
static double cal_recommend(const struct cal_opts *o, const double *worst)
{
    double best = 0, largest = 0;
    for (unsigned k = 0; k < o->nk; k++) {
        if (worst[k] <= o->limit && (best == 0 || o->ticks[k] < best)) best = o->ticks[k];
        if (o->ticks[k] > largest) largest = o->ticks[k];
    }
    if (best == 0) {
        printf("no period kept the slowdown under %g%%: ticks are costly here. Recommended "
               "--tick-us %g (the longest measured); --preempt adaptive arms ticks only for "
               "events several times longer, and --preempt return avoids them\n", o->limit,
               largest);
        return largest;
    }
    printf("recommended --tick-us %g (the shortest period under %g%% slowdown on every "
           "thread count)\n", best, o->limit);
    return best;
}

int kr__calibrate_main(int argc, char **argv)
{
    struct cal_opts o;
    if (cal_options(argc, argv, &o)) return 0;
    setvbuf(stdout, NULL, _IOLBF, 0); /* rows as they are measured */
    kr__tick_install(NULL);
    uint64_t iters = cal_size(o.seconds);
    printf("extra-tick cost: busy loop of %.2f s per thread, median of %u interleaved runs\n",
           o.seconds, o.reps);
    printf("%-8s %-10s %-12s %-12s %s\n", "threads", "tick_us", "baseline_s", "ticked_s",
           "slowdown");
    double worst[MAX_LIST] = { 0 };
    char summary[4096] = "";
    struct cal_row row = { .worst = worst, .summary = summary, .cap = sizeof summary };
    /* Longest period first, so a period whose ticks leave no time for the loop ends the
     * row: at shorter ones the interrupts alone can starve every thread, even this one. */
    qsort(o.ticks, o.nk, sizeof *o.ticks, cmp_double_desc);
    for (unsigned ti = 0; ti < o.nt; ti++) {
        row.n = (unsigned)o.threads[ti];
        row.gave_up = false;
        for (unsigned k = 0; k < o.nk; k++) cal_cell(&o, iters, k, &row);
    }
    double best = cal_recommend(&o, worst);
    if (o.save) save(best, summary);
    return 0;
}
