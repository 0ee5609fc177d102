/* phold_limit.c - the floor for PHOLD: a bare sequential loop with nothing of a PDES engine
 * around it (a reference for issue 13's "at least 50% of a bare loop", not a library).
 *
 * One binary heap of 16-byte events (timestamp, destination), one 16-byte record per LP
 * (its random stream and event count), PHOLD-std's rules: population 1, timestamp increment
 * 0.1 + exponential(1.0) drawn as kairos draws it, a uniformly random destination. No ties
 * broken, no digest, no state saving, no output: whatever kairos costs beyond this is the
 * engine's.
 *
 *     build/phold_limit LPS EVENTS    prints committed M events/s, bytes per LP */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

struct ev {
    double ts;
    uint64_t dest;
};

struct lp {
    uint64_t rng;
    uint64_t events;
};

static struct ev *heap;
static size_t nheap;

static void push(struct ev e)
{
    size_t i = nheap++;
    while (i > 0 && heap[(i - 1) / 2].ts > e.ts) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = e;
}

static struct ev pop(void)
{
    struct ev top = heap[0], last = heap[--nheap];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= nheap) break;
        if (c + 1 < nheap && heap[c + 1].ts < heap[c].ts) c++;
        if (!(heap[c].ts < last.ts)) break;
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = last;
    return top;
}

static uint64_t next_u64(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform(uint64_t *s)
{
    return (double)(next_u64(s) >> 11) * 0x1.0p-53;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: phold_limit LPS EVENTS\n");
        return 2;
    }
    uint64_t n = strtoull(argv[1], NULL, 10), events = strtoull(argv[2], NULL, 10);
    struct lp *lps = calloc(n, sizeof *lps);
    heap = malloc(n * sizeof *heap);
    if (!lps || !heap || n == 0) {
        fprintf(stderr, "phold_limit: out of memory\n");
        return 1;
    }
    for (uint64_t i = 0; i < n; i++) {
        lps[i].rng = i * 0x632BE59BD9B4E019ull + 1;
        push((struct ev){ 0.1 - log1p(-uniform(&lps[i].rng)), i });
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (uint64_t k = 0; k < events; k++) {
        struct ev e = pop();
        struct lp *lp = &lps[e.dest];
        lp->events++;
        uint64_t dest = next_u64(&lp->rng) % n;
        push((struct ev){ e.ts + 0.1 - log1p(-uniform(&lp->rng)), dest });
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double s = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) * 1e-9;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++) sum += lps[i].events;
    printf("%.3f M events/s, %zu bytes per LP (%llu events)\n", (double)events / s / 1e6,
           sizeof(struct lp) + sizeof(struct ev), (unsigned long long)sum);
    free(lps);
    free(heap);
    return 0;
}
