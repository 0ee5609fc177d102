/* buddy.h - buddy partitions of an LP's state pages (page-protection tracking, buddy mode;
 * paper 002). Pages are the leaves of a complete binary tree; a partition is a tree node:
 * an aligned power-of-two run of pages opened by one fault and one mprotect and logged
 * whole. Which nodes to use is decided by the linear-time bottom-up algorithm (a node is
 * used when its expected cost per checkpoint interval is below the best cost of its two
 * halves), from measured first-write frequencies and the mprotect, fault and copy costs
 * measured once at start-up.
 *
 * Frequencies are measured in windows: every KR_BUDDY_REPLAN checkpoints of an LP, its next
 * KR_BUDDY_WINDOW checkpoint intervals run with one-page partitions (so each page written
 * is seen), then the plan is recomputed. Models whose write pattern drifts are re-planned.
 */
#ifndef KR_STATE_BUDDY_H
#define KR_STATE_BUDDY_H

#include <stdbool.h>
#include <stdint.h>
#include "state/seg.h"

#define KR_BUDDY_WINDOW 8
#define KR_BUDDY_REPLAN 64
#define KR_BUDDY_CAL_ORDERS 9   /* costs measured for 1 .. 256 pages */

struct kr__buddy {
    uint32_t leaves;        /* power of two >= pages of the slice */
    uint32_t *written;      /* per node (root 1, children 2i, 2i+1): intervals with a write */
    uint32_t *stamp;        /* per node: tick of the last interval counted */
    double *cost;           /* per node: best cost (scratch of the planner) */
    uint8_t *use;           /* per node: the node itself is a partition */
    uint32_t tick;          /* intervals ever measured (stamps) */
    uint32_t intervals;     /* intervals measured in this window */
    uint32_t since_plan;    /* checkpoints since the plan took effect */
    bool measuring;
    uint32_t plans;         /* plans computed */
    uint32_t partitions;    /* partitions with at least one page, current plan */
};

/* Start-up micro-benchmark (once per process, before workers start). */
struct kr__buddy_costs {
    double fault_ns;                          /* signal delivery + handler, beyond mprotect */
    double mprotect_ns[KR_BUDDY_CAL_ORDERS];  /* one mprotect of 2^k pages */
    double copy_ns[KR_BUDDY_CAL_ORDERS];      /* memcpy of 2^k pages */
};
void kr__buddy_calibrate(void);
const struct kr__buddy_costs *kr__buddy_costs(void);
/* The calibration's scratch page, recognised by the fault handler. */
bool kr__buddy_calib_fault(void *addr);

void kr__buddy_init(struct kr__seg *s);
void kr__buddy_free(struct kr__buddy *b);
/* The slice grew: resize the tree (measuring restarts). */
void kr__buddy_grow(struct kr__seg *s);
/* A checkpoint ends a write interval: count it (window) or advance towards a re-plan. */
void kr__buddy_checkpoint(struct kr__seg *s);

#endif
