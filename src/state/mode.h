/* mode.h - the state-saving modes (--state) behind one table: each mode's name, what it
 * needs from the run and the engines, and its own statistics. Nothing outside src/state/
 * compares modes; it asks the mode's descriptor (issue 14). */
#ifndef KR_STATE_MODE_H
#define KR_STATE_MODE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "state/seg.h"

struct kr__state_ops {
    const char *name;           /* --state value, summary, --stats */
    int id;                     /* enum kr__state_mode */
    bool region;                /* areas live in a per-LP slice reserved up front (seg.h) */
    bool incremental;           /* checkpoints chain (incremental ones between full ones):
                                 * --ckpt-full-every applies */
    bool by_pages;              /* writes are found by pages (page, buddy, scan) */
    bool open_pages;            /* an event without a checkpoint leaves its pages writable:
                                 * they are closed by a checkpoint before the next one runs
                                 * speculatively, or before the LP migrates */
    bool marks;                 /* the model marks its writes (KR_MODEL_MARKS_WRITES) */
    void (*region_ready)(void);              /* the region is reserved (NULL: nothing) */
    void (*lp_ready)(struct kr__seg *seg);   /* an LP's slice is set up (NULL: nothing) */
    /* Its line of the summary from the run's write faults and mprotect calls (or kernel
     * scans), and its extra members of --stats "state_saving" (NULL: none). */
    void (*summary)(FILE *f, uint64_t faults, uint64_t mprotects);
    void (*json)(FILE *f);
};

const struct kr__state_ops *kr__state_ops(int id);
/* The mode named `name`, or NULL. */
const struct kr__state_ops *kr__state_ops_find(const char *name);
/* The names, for messages: "full, chunk, page, buddy or scan". */
const char *kr__state_mode_names(void);

#endif
