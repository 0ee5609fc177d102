/* spin.c - see spin.h. */
#include "spin.h"
#include <stdint.h>
#include <time.h>

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec * 1e-3;
}

/* Loop iterations per microsecond, measured once per process (not model state: the same for
 * every LP). The fastest of 16 short trials: a trial the OS interrupted is slow, and would
 * make every later event do less work. */
static double per_us(void)
{
    static _Atomic double k;
    double v = k;
    if (v != 0) return v;
    double best = 1e30;
    for (int trial = 0; trial < 16; trial++) {
        uint64_t x = 1, n = 1u << 18;
        double a = now_us();
        for (uint64_t i = 0; i < n; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
        double took = now_us() - a;
        __asm__ volatile("" : : "r"(x)); /* keep the loop */
        if (took > 0 && took < best) best = took;
    }
    v = (double)(1u << 18) / best;
    k = v;
    return v;
}

void models_spin_us(double us)
{
    uint64_t x = 1, n = (uint64_t)(us * per_us());
    for (uint64_t i = 0; i < n; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    __asm__ volatile("" : : "r"(x));
}
