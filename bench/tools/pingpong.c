/* pingpong.c - cross-core round-trip latency: two threads pinned to two cores bounce a
 * counter through one cache line. Printed beside parallel benchmark results, because on a
 * VM the round trip varies from ~90 ns to over a microsecond and decides how parallel runs
 * fare. Prints the median and the 10th/90th percentiles of batches of round trips, in ns.
 *
 *   kr_pingpong [CPU_A CPU_B] [ROUNDS]     (default cpus 0 1, 200000 round trips) */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define BATCH 1000

static _Alignas(64) _Atomic uint64_t ball;
static int cpu_b;
static long rounds;

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    pthread_setaffinity_np(pthread_self(), sizeof s, &s);
}

static void *pong(void *arg)
{
    (void)arg;
    pin(cpu_b);
    for (uint64_t i = 1; i <= (uint64_t)rounds; i++) {
        while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i - 1) {}
        atomic_store_explicit(&ball, 2 * i, memory_order_release);
    }
    return NULL;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int cpu_a = argc > 2 ? atoi(argv[1]) : 0;
    cpu_b = argc > 2 ? atoi(argv[2]) : 1;
    rounds = argc > 3 ? atol(argv[3]) : argc == 2 ? atol(argv[1]) : 200000;
    rounds -= rounds % BATCH;
    if (rounds < BATCH) rounds = BATCH;
    size_t nb = (size_t)(rounds / BATCH);
    double *per = malloc(nb * sizeof *per);
    pthread_t t;
    pin(cpu_a);
    pthread_create(&t, NULL, pong, NULL);
    for (size_t b = 0; b < nb; b++) {
        double t0 = now_ns();
        for (uint64_t i = b * BATCH + 1; i <= (b + 1) * BATCH; i++) {
            atomic_store_explicit(&ball, 2 * i - 1, memory_order_release);
            while (atomic_load_explicit(&ball, memory_order_acquire) != 2 * i) {}
        }
        per[b] = (now_ns() - t0) / BATCH;
    }
    pthread_join(t, NULL);
    qsort(per, nb, sizeof *per, cmp);
    printf("cross-core round trip cpu %d <-> %d: median %.0f ns (p10 %.0f, p90 %.0f), %ld trips\n",
           cpu_a, cpu_b, per[nb / 2], per[nb / 10], per[nb * 9 / 10], rounds);
    free(per);
    return 0;
}
