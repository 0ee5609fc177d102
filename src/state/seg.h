/* seg.h - page-granular state segments for the tracked state-saving modes (chunk, page,
 * buddy). One virtual range is reserved for all LPs at start; LP i owns the slice
 * [base + i*slice, base + (i+1)*slice), where its arena carves page-aligned areas. An address
 * maps to its LP and page by arithmetic, which the write-fault handler and the write-marking
 * calls need (no search, async-signal-safe).
 *
 * Page tracking (page and buddy modes): after each checkpoint every page of the slice is
 * write-protected. The first write into a page raises SIGSEGV; the handler marks the page's
 * partition dirty and opens it (one mprotect). Invariant: a page is open (writable) exactly
 * when it is dirty. In page mode every partition is one page; in buddy mode partitions are
 * aligned power-of-two runs of pages chosen by buddy.c. In scan mode the kernel keeps the
 * written bits (scan.c): kr__seg_collect turns them into dirty flags at each checkpoint and
 * nothing is protected by hand.
 */
#ifndef KR_STATE_SEG_H
#define KR_STATE_SEG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KR_PAGE_SHIFT 12
#define KR_PAGE ((size_t)1 << KR_PAGE_SHIFT)

/* Per-page flags. */
enum { KR_PG_DIRTY = 1, KR_PG_MARK = 2 };

struct kr__buddy;

struct kr__seg {
    char *base;              /* this LP's slice */
    size_t top;              /* bytes carved for areas so far (whole pages) */
    uint32_t npages, cap;    /* pages carved; capacity of the arrays below */
    uint8_t *pg;             /* KR_PG_* per page */
    uint32_t *pg_area;       /* index (creation order) of the area holding each page */
    uint8_t *order;          /* buddy: log2 size of the partition starting at each page
                              * (meaningful at partition starts; page mode: all 0) */
    uint32_t ndirty;         /* dirty pages */
    bool tracking;           /* pages are tracked: protected between checkpoints (page,
                              * buddy) or written bits kept by the kernel (scan) */
    bool scan;               /* scan mode: the kernel tracks, no faults reach us */
    bool failed;             /* an mprotect failed: the run stops with an error */
    bool closed;             /* sequential --check: out of reach (PROT_NONE) */
    uint64_t faults;         /* tracking faults taken */
    uint64_t mprotects;      /* mprotect calls */
    struct kr__buddy *bud;   /* buddy mode: write statistics and plan */
};

/* Reserve slices for n LPs of at most `slice_bytes` each (rounded up to a power of two).
 * Returns 0, or with errno set -1 (the address space cannot be reserved) or -2 (scan: the
 * kernel refused write tracking). */
struct kr__state_ops;
int kr__region_init(uint64_t n, size_t slice_bytes, const struct kr__state_ops *m);
void kr__region_destroy(void);
struct kr__seg *kr__region_seg(uint64_t lp);
size_t kr__region_slice(void);

/* Whether address w lies in the region but past every area carved in its slice: no block
 * was ever there, so a state word equal to it is a number, not a pointer to another LP
 * (addrmap.c). Read where no LP allocates (a state hash, a snapshot). */
bool kr__region_unused(uintptr_t w);

/* Sequential --check (mode full): every LP's state in its slice of one region, so that
 * while one LP's event runs every other LP's state can be made unreachable - a read or
 * write through a pointer kept in a global faults at the access, which fault.c names. */
/* `bytes` at the top of the slice, 16-aligned (areas packed as on the heap), or NULL if
 * the slice is full. */
char *kr__seg_take(struct kr__seg *s, size_t bytes);
/* Every LP's slice within reach (read and write) or out of it (PROT_NONE): the run's
 * states closed while events run, the running LP's opened for its event (kr__region_reach:
 * an mprotect over its own pages only, where closing all but one slice each event cost
 * every LP's pages each time). The calls return false if an mprotect failed (errno);
 * kr__region_reach returns whether the slice changed (*failed set on failure). */
bool kr__region_reach_all(bool on);
bool kr__region_reach(uint64_t lp, bool on, bool *failed);

/* Why kr__seg_carve failed. */
enum { KR_SEG_FULL = 1, KR_SEG_NOMEM, KR_SEG_MAPS };
/* Carve `bytes` (a page multiple) at the top of the slice for area `area_index`: readable
 * and writable, and dirty. NULL with *why set if the slice is full, memory ran out or the
 * kernel refused another mapping (vm.max_map_count). */
char *kr__seg_carve(struct kr__seg *s, size_t bytes, uint32_t area_index, int *why);

/* Address -> page index in s, or -1 if p is not in s's carved pages. */
static inline int64_t kr__seg_page(const struct kr__seg *s, const void *p)
{
    size_t off = (size_t)((const char *)p - s->base);
    if ((const char *)p < s->base || off >= s->top) return -1;
    return (int64_t)(off >> KR_PAGE_SHIFT);
}

/* Scan mode: add the pages written since the last collection to the dirty flags (and let
 * the kernel track afresh). Before a checkpoint reads the dirty set. */
void kr__seg_collect(struct kr__seg *s);

/* After a checkpoint: every dirty page becomes clean and write-protected. */
void kr__seg_protect_dirty(struct kr__seg *s);
/* Open every page for writing (before a restore writes the state back). */
void kr__seg_open_all(struct kr__seg *s);
/* After a restore: all pages clean and protected. */
void kr__seg_close_all(struct kr__seg *s);
/* Mark page p dirty (with its whole partition) and open it. */
void kr__seg_open_page(struct kr__seg *s, uint32_t p);

/* The slice holding p and its LP, or NULL (async-signal-safe: the fault handler's lookup). */
struct kr__seg *kr__region_find(const void *p, uint64_t *lp);

#endif
