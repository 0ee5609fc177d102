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

/* The loop that both the calibration and the work run. One copy of its machine code (not
 * inlined, not cloned for the calibration's constant count): the speed of a tight loop
 * depends on where the linker puts it, which moves with unrelated changes to the binary,
 * and two copies calibrated one against the other made the built-in models' busy work
 * vary with the build (datastore's events 7-14% slower in a build whose only change was
 * elsewhere in the engine). */
#if defined(__clang__)
__attribute__((noinline))
#else
__attribute__((noinline, noipa))
#endif
static uint64_t spin(uint64_t n)
{
    uint64_t x = 1;
    for (uint64_t i = 0; i < n; i++) x = x * 6364136223846793005ull + 1442695040888963407ull;
    __asm__ volatile("" : "+r"(x)); /* (the loop stays a loop) */
    return x;
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
        double a = now_us();
        uint64_t x = spin(1u << 18);
        double took = now_us() - a;
        __asm__ volatile("" : : "r"(x));
        if (took > 0 && took < best) best = took;
    }
    v = (double)(1u << 18) / best;
    k = v;
    return v;
}

void models_spin_us(double us)
{
    uint64_t x = spin((uint64_t)(us * per_us()));
    __asm__ volatile("" : : "r"(x));
}
