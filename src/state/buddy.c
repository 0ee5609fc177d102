/* buddy.c - buddy-partition planning, the start-up cost micro-benchmark (see buddy.h) and
 * the --state buddy entry of the mode table (mode.h). */
#include "state/buddy.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "base/error.h"
#include "state/mode.h"

static struct kr__buddy_costs costs;
static char *volatile calib_page;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

bool kr__buddy_calib_fault(void *addr)
{
    char *p = calib_page;
    if (!p || (char *)addr < p || (char *)addr >= p + KR_PAGE) return false;
    mprotect(p, KR_PAGE, PROT_READ | PROT_WRITE);
    return true;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median over 5 batches of `reps` runs of one measurement, per run. */
#define MEDIAN_OF_5(reps, body)                                   \
    ({                                                            \
        double m_[5];                                             \
        for (int b_ = 0; b_ < 5; b_++) {                          \
            double t0_ = now_ns();                                \
            for (int r_ = 0; r_ < (reps); r_++) { body; }         \
            m_[b_] = (now_ns() - t0_) / (reps);                   \
        }                                                         \
        qsort(m_, 5, sizeof m_[0], cmp_double);                   \
        m_[2];                                                    \
    })

void kr__buddy_calibrate(void)
{
    size_t max = KR_PAGE << (KR_BUDDY_CAL_ORDERS - 1);
    char *scratch = mmap(NULL, max, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *copy = malloc(max);
    if (scratch == MAP_FAILED || !copy) kr__fatal_oom("buddy calibration", 2 * max);
    memset(scratch, 1, max);
    memset(copy, 2, max);
    for (int k = 0; k < KR_BUDDY_CAL_ORDERS; k++) {
        size_t bytes = KR_PAGE << k;
        int reps = k < 4 ? 64 : 16;
        costs.mprotect_ns[k] = MEDIAN_OF_5(reps, {
            mprotect(scratch, bytes, PROT_READ);
            mprotect(scratch, bytes, PROT_READ | PROT_WRITE);
        }) / 2;
        costs.copy_ns[k] = MEDIAN_OF_5(reps, {
            memcpy(copy, scratch, bytes);
            __asm__ volatile("" ::: "memory");
        });
    }
    calib_page = scratch;
    double with_fault = MEDIAN_OF_5(64, {
        mprotect(scratch, KR_PAGE, PROT_READ);
        *(volatile char *)scratch = 3; /* faults; the handler reopens the page */
    });
    calib_page = NULL;
    double f = with_fault - 2 * costs.mprotect_ns[0];
    costs.fault_ns = f > 0 ? f : 0;
    munmap(scratch, max);
    free(copy);
}

const struct kr__buddy_costs *kr__buddy_costs(void) { return &costs; }

/* Cost of one mprotect / copy of 2^k pages; beyond the measured sizes, linear. */
static double scaled(const double *t, unsigned k)
{
    if (k < KR_BUDDY_CAL_ORDERS) return t[k];
    return t[KR_BUDDY_CAL_ORDERS - 1] * (double)(1u << (k - KR_BUDDY_CAL_ORDERS + 1));
}

static void reset_window(struct kr__seg *s)
{
    struct kr__buddy *b = s->bud;
    memset(b->written, 0, 2 * (size_t)b->leaves * sizeof *b->written);
    b->intervals = 0;
    b->measuring = true;
    if (s->npages)
        memset(s->order, 0, s->npages); /* one-page partitions: every page written is seen */
}

static int alloc_tree(struct kr__buddy *b, uint32_t leaves)
{
    size_t n = 2 * (size_t)leaves;
    uint32_t *w = calloc(n, sizeof *w), *st = calloc(n, sizeof *st);
    double *c = calloc(n, sizeof *c);
    uint8_t *u = calloc(n, 1);
    if (!w || !st || !c || !u) {
        free(w), free(st), free(c), free(u);
        return -1;
    }
    free(b->written), free(b->stamp), free(b->cost), free(b->use);
    b->written = w, b->stamp = st, b->cost = c, b->use = u;
    b->leaves = leaves;
    return 0;
}

void kr__buddy_init(struct kr__seg *s)
{
    struct kr__buddy *b = calloc(1, sizeof *b);
    if (!b || alloc_tree(b, 16)) kr__fatal_oom("buddy partition tree", sizeof *b);
    s->bud = b;
    kr__buddy_grow(s);
    reset_window(s);
}

void kr__buddy_free(struct kr__buddy *b)
{
    if (!b) return;
    free(b->written), free(b->stamp), free(b->cost), free(b->use);
    free(b);
}

void kr__buddy_grow(struct kr__seg *s)
{
    struct kr__buddy *b = s->bud;
    if (s->npages <= b->leaves) return;
    uint32_t leaves = b->leaves;
    while (leaves < s->npages) leaves *= 2;
    if (alloc_tree(b, leaves)) kr__fatal_oom("buddy partition tree", 2 * (size_t)leaves * 17);
    reset_window(s);
}

/* Expected cost per interval of using node i (2^k pages) as one partition: if written
 * (probability p), one fault, one mprotect to open it and copying it all. (Closing is one
 * mprotect per checkpoint over all dirty pages, whatever the partitions: not a per-node
 * cost.) */
static double node_cost(const struct kr__buddy *b, uint32_t i, unsigned k)
{
    if (!b->written[i]) return 0;
    double p = (double)b->written[i] / b->intervals;
    return p * (costs.fault_ns + scaled(costs.mprotect_ns, k) + scaled(costs.copy_ns, k));
}

/* Pages under node i take partition order k, or its children are resolved further. */
static void assign(struct kr__seg *s, struct kr__buddy *b, uint32_t i, unsigned k)
{
    if (b->use[i]) {
        uint32_t first = (i << k) - b->leaves, n = 1u << k;
        for (uint32_t p = first; p < first + n && p < s->npages; p++) s->order[p] = (uint8_t)k;
        if (first < s->npages) b->partitions++;
        return;
    }
    assign(s, b, 2 * i, k - 1);
    assign(s, b, 2 * i + 1, k - 1);
}

/* The bottom-up pass over the tree (linear in the number of pages). */
static void plan(struct kr__seg *s)
{
    struct kr__buddy *b = s->bud;
    unsigned k = 0;
    for (uint32_t i = b->leaves; i < 2 * b->leaves; i++) {
        b->cost[i] = node_cost(b, i, 0);
        b->use[i] = 1;
    }
    for (uint32_t lo = b->leaves / 2; lo >= 1; lo /= 2) {
        k++;
        for (uint32_t i = lo; i < 2 * lo; i++) {
            double whole = node_cost(b, i, k), halves = b->cost[2 * i] + b->cost[2 * i + 1];
            b->use[i] = whole <= halves;
            b->cost[i] = b->use[i] ? whole : halves;
        }
    }
    b->partitions = 0;
    assign(s, b, 1, k);
    b->plans++;
}

/* Page p was written this interval: so were its partitions, up to the root (each counted
 * once an interval). */
static void count_written(struct kr__buddy *b, uint32_t p)
{
    for (uint32_t i = b->leaves + p; i >= 1 && b->stamp[i] != b->tick; i /= 2) {
        b->stamp[i] = b->tick;
        b->written[i]++;
    }
}

void kr__buddy_checkpoint(struct kr__seg *s)
{
    struct kr__buddy *b = s->bud;
    if (!b->measuring) {
        if (++b->since_plan >= KR_BUDDY_REPLAN) reset_window(s);
        return;
    }
    b->tick++;
    for (uint32_t p = 0; p < s->npages; p++)
        if (s->pg[p] & KR_PG_DIRTY) count_written(b, p);
    if (++b->intervals < KR_BUDDY_WINDOW) return;
    plan(s);
    b->measuring = false;
    b->since_plan = 0;
}

/* ---- --state buddy: page tracking by these partitions ---- */

static void buddy_summary(FILE *f, uint64_t faults, uint64_t mprotects)
{
    fprintf(f, "  page tracking:    %llu write faults, %llu mprotect calls, buddy partitions "
            "re-planned\n", (unsigned long long)faults, (unsigned long long)mprotects);
}

/* The costs the planner measured at start-up. */
static void buddy_json(FILE *f)
{
    fprintf(f, ", \"buddy_costs\": {\"fault_ns\": %.1f, \"mprotect_ns\": [", costs.fault_ns);
    for (int k = 0; k < KR_BUDDY_CAL_ORDERS; k++)
        fprintf(f, "%s%.1f", k ? ", " : "", costs.mprotect_ns[k]);
    fputs("], \"copy_ns\": [", f);
    for (int k = 0; k < KR_BUDDY_CAL_ORDERS; k++)
        fprintf(f, "%s%.1f", k ? ", " : "", costs.copy_ns[k]);
    fputs("]}", f);
}

static void buddy_lp_ready(struct kr__seg *seg)
{
    if (!seg->bud) kr__buddy_init(seg);
}

/* A checkpoint ends the interval before its dirty set clears. */
static void buddy_before_take(struct kr__seg *seg)
{
    if (seg->bud) kr__buddy_checkpoint(seg);
}

const struct kr__state_ops kr__state_buddy = {
    .name = "buddy", .id = KR_STATE_BUDDY, .region = true, .incremental = true,
    .by_pages = true, .faults = true, .open_pages = true, .track = &kr__page_track,
    .region_ready = kr__buddy_calibrate, .lp_ready = buddy_lp_ready,
    .before_take = buddy_before_take, .write_fault = kr__page_write_fault,
    .summary = buddy_summary, .json = buddy_json,
};
