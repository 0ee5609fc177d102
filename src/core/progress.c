/* progress.c - see progress.h. */
#include "core/progress.h"
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
#include "base/error.h"

double kr__wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

size_t kr__rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long size = 0, res = 0;
    if (f) {
        if (fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
        fclose(f);
    }
    return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

size_t kr__peak_rss_bytes(void)
{
    /* VmHWM, not getrusage: ru_maxrss survives exec, so a run started from a big parent
     * (a Python benchmark driver) would report the parent's size. */
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %zu kB", &kb) == 1) break;
    if (f) fclose(f);
    return kb * 1024;
}

/* Sum over the threads of the published counter at `offset` in struct kr__counters. */
static uint64_t pub_sum(const struct kr__run *r, size_t offset)
{
    uint64_t s = 0;
    for (unsigned t = 0; t < r->nthreads; t++)
        s += atomic_load_explicit((_Atomic uint64_t *)((char *)&r->counters[t] + offset),
                                  memory_order_relaxed);
    return s;
}
#define PUB_SUM(r, field) pub_sum((r), offsetof(struct kr__counters, field))

static void sample(struct kr__progress *p, double now, kr_time vt, uint64_t committed,
                   uint64_t processed)
{
    struct kr__run *r = p->r;
    if (r->series.n == r->series.cap) {
        r->series.cap = r->series.cap ? r->series.cap * 2 : 64;
        double *s = realloc(r->series.rows, r->series.cap * KR_SERIES_COLS * sizeof *s);
        if (!s) return; /* statistics only: a missing row is not worth failing the run */
        r->series.rows = s;
    }
    double *row = r->series.rows + r->series.n++ * KR_SERIES_COLS;
    row[0] = now - p->t0;
    row[1] = vt;
    row[2] = (double)committed;
    row[3] = (double)processed;
    row[4] = (double)kr__rss_bytes();
    row[5] = (double)PUB_SUM(r, pub_rollbacks);
    row[6] = (double)PUB_SUM(r, pub_rolled_back);
    row[7] = (double)PUB_SUM(r, pub_preempt_calls);
    row[8] = (double)PUB_SUM(r, pub_preempt_ticks);
    p->last_sample = now;
}

void kr__progress_start(struct kr__progress *p, struct kr__run *r)
{
    p->r = r;
    int mode = r->cfg->progress;
    p->on = mode == 1 || (mode == -1 && isatty(STDERR_FILENO));
    p->drawn = false;
    p->t0 = p->last = p->last_sample = kr__wall_now();
    p->last_committed = 0;
}

/* The progress line, redrawn in place on stderr. */
static void draw(const struct kr__progress *p, double now, kr_time vt, uint64_t committed,
                 uint64_t processed)
{
    double rate = (double)(committed - p->last_committed) / (now - p->last);
    double end = p->r->cfg->end;
    double pct = isinf(end) || end <= 0 ? 0 : 100.0 * (vt > end ? end : vt) / end;
    fprintf(stderr, "\r\033[K[kairos] %5.1f%% vt %-10.4g %7.2f M committed ev/s  eff %5.1f%%  "
            "mem %zu MiB  %.0fs", pct, vt, rate / 1e6,
            processed ? 100.0 * (double)committed / (double)processed : 100.0,
            kr__rss_bytes() >> 20, now - p->t0);
    fflush(stderr);
}

void kr__progress_tick(struct kr__progress *p, kr_time vt)
{
    double now = kr__wall_now();
    if (now - p->last_sample < 0.1) return;
    kr__stdout_flush(); /* a full disk stops the run now, not at its end */
    if (vt < 0) vt = 0; /* GVT is -inf until the first round */
    uint64_t committed = PUB_SUM(p->r, pub_committed), processed = PUB_SUM(p->r, pub_processed);
    sample(p, now, vt, committed, processed);
    if (!p->on || now - p->last < 0.5) return;
    draw(p, now, vt, committed, processed);
    p->drawn = true;
    p->last = now;
    p->last_committed = committed;
}

void kr__progress_stop(struct kr__progress *p)
{
    if (p->drawn) fputs("\r\033[K", stderr);
    p->drawn = false;
}
