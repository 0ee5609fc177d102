/* mode.h - the state-saving modes (--state) as back ends behind one table: each mode's
 * name, what it needs from the run and the engines, how it finds and saves an event's
 * writes, and its own statistics. Each mode is one file that fills its entry (full here in
 * mode.c, chunk.c, page.c, buddy.c, scan.c, reverse.c); nothing compares mode ids, every caller asks
 * the mode's entry (issues 14 and 36). Adding a mode: a file with its entry and one line
 * in mode.c's table (docs/design.md, "State saving"). */
#ifndef KR_STATE_MODE_H
#define KR_STATE_MODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "state/seg.h"

/* The modes' ids: indexes of the table, kept by options, runs and checkpoints. */
enum kr__state_mode { KR_STATE_FULL, KR_STATE_CHUNK, KR_STATE_PAGE, KR_STATE_BUDDY, KR_STATE_SCAN,
                      KR_STATE_REVERSE, KR_STATE_MAX = 8 };

struct kr__arena;
struct kr__area;

/* An incremental mode's part of a checkpoint. ckpt.c owns the shared format (full
 * checkpoints, and the area metadata that starts every incremental one); the mode saves
 * what the event wrote, found its own way (chunk marks, page faults, the kernel's bits). */
struct kr__track_ops {
    /* The written data since the last checkpoint: its bytes, then the record itself
     * (starting with its own u32 count), written at o. */
    size_t (*size)(const struct kr__arena *a);
    void (*write)(const struct kr__arena *a, unsigned char *o);
    /* Put a record back under what newer checkpoints of the chain restored already; mark
     * what it holds written again (the checkpoint is dropped, its parent stays newest). */
    void (*apply)(struct kr__arena *a, const unsigned char *in);
    void (*redirty)(struct kr__arena *a, const unsigned char *in);
    /* Chunk idx of ar back from src (a full checkpoint's copy), but for the parts a newer
     * checkpoint restored. */
    void (*copy_chunk)(struct kr__arena *a, struct kr__area *ar, uint32_t idx,
                       const unsigned char *src);
    /* Tracking restarts: the checkpoint just taken or restored is the reference. */
    void (*restart)(struct kr__arena *a);
    /* Before a restore (nothing restored yet, pages writable) and after it. */
    void (*restore_begin)(struct kr__arena *a);
    void (*restore_end)(struct kr__arena *a);
};

struct kr__state_ops {
    const char *name;           /* --state value, summary, --stats */
    int id;                     /* enum kr__state_mode: its index in the table, the value
                                 * options, runs and checkpoints keep */
    bool region;                /* areas live in a per-LP slice reserved up front (seg.h) */
    bool incremental;           /* checkpoints chain (incremental ones between full ones):
                                 * --ckpt-full-every applies */
    bool by_pages;              /* writes are found by pages (page, buddy, scan) */
    bool faults;                /* ... by write faults: pages start read-only, and a fault
                                 * on a closed page of the running LP opens it */
    bool open_pages;            /* an event without a checkpoint leaves its pages writable:
                                 * they are closed by a checkpoint before the next one runs
                                 * speculatively, or before the LP migrates */
    bool marks;                 /* the model marks its writes (KR_MODEL_MARKS_WRITES) */
    bool reverse;               /* no checkpoints: the model's reverse handler undoes each
                                 * event (struct kr_model.reverse; optimistic/reverse.c) */
    const struct kr__track_ops *track; /* incremental checkpoints (NULL: all are full) */
    /* The region is reserved at [base, base + bytes): 0, or -1 with errno (NULL: nothing);
     * and given back. */
    int (*region_open)(void *base, size_t bytes);
    void (*region_close)(void);
    void (*region_ready)(void);              /* the region is set up (NULL: nothing) */
    void (*lp_ready)(struct kr__seg *seg);   /* an LP's slice is set up (NULL: nothing) */
    void (*before_take)(struct kr__seg *seg); /* a checkpoint is about to read the written
                                              * set (NULL: nothing) */
    /* A write fault at addr in the running LP's own slice: true if it was the mode's
     * tracking (the write resumes), false if it is the model's crash. Runs in the signal
     * handler (NULL: no mode faults). */
    bool (*write_fault)(struct kr__seg *seg, void *addr);
    /* Its line of the summary from the run's write faults and mprotect calls (or kernel
     * scans), and its extra members of --stats "state_saving" (NULL: none). */
    void (*summary)(FILE *f, uint64_t faults, uint64_t mprotects);
    void (*json)(FILE *f);
};

/* The entries (each in its mode's file). */
extern const struct kr__state_ops kr__state_chunk, kr__state_page, kr__state_buddy,
    kr__state_scan, kr__state_reverse;
/* The page-granular part shared by page, buddy and scan (page.c), and the write fault of
 * page and buddy. */
extern const struct kr__track_ops kr__page_track;
bool kr__page_write_fault(struct kr__seg *s, void *addr);

/* Indexed by id; NULL past the modes there are. Read on allocation and at every
 * checkpoint, so it is a table, not a call. `id` is a mode's (every id kept anywhere came
 * from the table: kr__state_ops_find). */
extern const struct kr__state_ops *kr__state_modes[KR_STATE_MAX];
static inline const struct kr__state_ops *kr__state_ops(int id) { return kr__state_modes[id]; }
/* The mode that saves nothing incrementally (full): the default, and what runs use where
 * nothing is restored. */
const struct kr__state_ops *kr__state_default(void);
/* Add a mode before the run starts (a test's stub back end, tests/unit/test_chain.c): its
 * id must be the next free one. Returns the id, or -1. Built-in modes are lines of the
 * table in mode.c instead. */
int kr__state_add(const struct kr__state_ops *m);
/* The mode named `name`, or NULL. */
const struct kr__state_ops *kr__state_ops_find(const char *name);
/* The names, for messages: "full, chunk, page, buddy or scan". */
const char *kr__state_mode_names(void);

#endif
