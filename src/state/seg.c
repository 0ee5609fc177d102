/* seg.c - the reserved region of LP slices and page protection (see seg.h). */
#include "state/seg.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "state/buddy.h"
#include "base/error.h"
#include "state/mode.h"
#include "state/scan.h"

static struct {
    char *base;
    size_t slice;
    unsigned shift;
    uint64_t n;
    const struct kr__state_ops *ops;
    struct kr__seg *segs;
} region;

/* The log2 of a slice of at least slice_bytes (16 pages or more) for each of n LPs, or 0
 * (errno ENOMEM) if the region would pass 128 TiB. */
static unsigned slice_shift(uint64_t n, size_t slice_bytes)
{
    unsigned shift = KR_PAGE_SHIFT + 4;
    while (((size_t)1 << shift) < slice_bytes) shift++;
    if (shift < 47 && n <= (((uint64_t)1 << 47) >> shift)) return shift;
    errno = ENOMEM;
    return 0;
}

/* Each LP's segment in the region, tracked as the mode does. */
static void segs_init(uint64_t n, const struct kr__state_ops *m)
{
    for (uint64_t i = 0; i < n; i++) {
        region.segs[i].base = region.base + (i << region.shift);
        region.segs[i].tracking = m->by_pages;
        region.segs[i].scan = m->by_pages && !m->faults;
    }
}

/* The state mode could not take the region: it goes (errno kept). -2. */
static int region_undo(void *p, size_t total)
{
    int e = errno;
    munmap(p, total);
    free(region.segs);
    memset(&region, 0, sizeof region);
    errno = e;
    return -2;
}

int kr__region_init(uint64_t n, size_t slice_bytes, const struct kr__state_ops *m)
{
    unsigned shift = slice_shift(n, slice_bytes);
    if (!shift) return -1;
    size_t total = (size_t)n << shift;
    /* One mapping for all LPs. Page and buddy tracking protect pages one by one, so the
     * region starts read-only: a closed page then merges with its neighbours into one
     * kernel mapping, and only pages open for writing count against vm.max_map_count.
     * Chunk and scan tracking never change protections: the region is writable from the
     * start, one mapping however many LPs (an mprotect per LP split it in two per LP: 32 750
     * LPs at the usual limit of 65 530). */
    int prot = m->faults ? PROT_READ : PROT_READ | PROT_WRITE;
    void *p = mmap(NULL, total, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return -1;
    region.segs = calloc(n, sizeof *region.segs);
    if (!region.segs) {
        munmap(p, total);
        errno = ENOMEM;
        return -1;
    }
    region.base = p;
    region.slice = (size_t)1 << shift;
    region.shift = shift;
    region.n = n;
    region.ops = m;
    if (m->region_open && m->region_open(p, total)) return region_undo(p, total);
    segs_init(n, m);
    return 0;
}

void kr__region_destroy(void)
{
    if (!region.base) return;
    for (uint64_t i = 0; i < region.n; i++) {
        struct kr__seg *s = &region.segs[i];
        free(s->pg);
        free(s->pg_area);
        free(s->order);
        kr__buddy_free(s->bud);
    }
    if (region.ops->region_close) region.ops->region_close();
    munmap(region.base, (size_t)region.n << region.shift);
    free(region.segs);
    memset(&region, 0, sizeof region);
}

char *kr__seg_take(struct kr__seg *s, size_t bytes)
{
    size_t n = (bytes + 15) & ~(size_t)15;
    if (n < bytes || n > region.slice - s->top) return NULL;
    char *p = s->base + s->top;
    s->top += n;
    return p;
}

bool kr__region_reach_all(bool on)
{
    if (mprotect(region.base, (size_t)region.n << region.shift,
                 on ? PROT_READ | PROT_WRITE : PROT_NONE))
        return false;
    for (uint64_t i = 0; i < region.n; i++) region.segs[i].closed = !on;
    return true;
}

bool kr__region_reach(uint64_t lp, bool on, bool *failed)
{
    struct kr__seg *s = &region.segs[lp];
    if (s->closed != on) return false;
    if (mprotect(s->base, region.slice, on ? PROT_READ | PROT_WRITE : PROT_NONE)) {
        *failed = true;
        return false;
    }
    s->closed = !on;
    return true;
}

struct kr__seg *kr__region_seg(uint64_t lp)
{
    return region.base && lp < region.n ? &region.segs[lp] : NULL;
}

size_t kr__region_slice(void) { return region.slice; }

/* The LP whose slice holds p, or NULL (used by the fault handler: no locks, no calls). */
struct kr__seg *kr__region_find(const void *p, uint64_t *lp)
{
    const char *c = p;
    if (!region.base || c < region.base) return NULL;
    uint64_t i = (uint64_t)(c - region.base) >> region.shift;
    if (i >= region.n) return NULL;
    *lp = i;
    return &region.segs[i];
}

bool kr__region_unused(uintptr_t w)
{
    uintptr_t base = (uintptr_t)region.base;
    if (!base || w < base) return false;
    uint64_t i = (uint64_t)(w - base) >> region.shift;
    if (i >= region.n) return false;
    /* (past the top, not at it: a pointer one past the last area is a pointer) */
    return (w - base) - (i << region.shift) > region.segs[i].top;
}

/* An mprotect that fails (the kernel's limit on mappings, usually) cannot be worked around:
 * a write would fault forever. Stop with a message saying what to change (one message,
 * whichever threads fail at once: kr__die lets one through). */
_Noreturn static void protect_failed(int err)
{
    kr__die(err == ENOMEM
            ? "mprotect failed: the kernel's limit on memory mappings (vm.max_map_count) is "
              "reached while tracking state pages. With --state page|buddy every run of pages "
              "an LP has open for writing is a mapping of its own: use --state chunk or scan, "
              "fewer LPs, or raise the limit (sysctl -w vm.max_map_count=...)"
            : "mprotect failed unexpectedly while tracking state pages; use --state chunk, "
              "scan or full");
}

static void protect(struct kr__seg *s, uint32_t first, uint32_t count, int prot)
{
    s->mprotects++;
    if (mprotect(s->base + ((size_t)first << KR_PAGE_SHIFT), (size_t)count << KR_PAGE_SHIFT, prot))
        protect_failed(errno);
}

/* cap doubled until it holds need. */
static uint32_t doubled(uint32_t cap, uint32_t need)
{
    while (cap < need) cap *= 2;
    return cap;
}

static int grow(struct kr__seg *s, uint32_t need)
{
    if (need <= s->cap) return 0;
    uint32_t cap = doubled(s->cap ? s->cap : 16, need);
    uint8_t *pg = realloc(s->pg, cap);
    if (!pg) return -1;
    s->pg = pg;
    uint32_t *pa = realloc(s->pg_area, (size_t)cap * sizeof *pa);
    if (!pa) return -1;
    s->pg_area = pa;
    uint8_t *o = realloc(s->order, cap);
    if (!o) return -1;
    s->order = o;
    s->cap = cap;
    return 0;
}

/* The np pages after the segment's last, of area area_index: open, and counted dirty when
 * tracked. */
static void new_pages(struct kr__seg *s, uint32_t np, uint32_t area_index)
{
    for (uint32_t i = 0; i < np; i++) {
        uint32_t q = s->npages + i;
        s->pg_area[q] = area_index;
        s->order[q] = 0;
        s->pg[q] = s->tracking ? KR_PG_DIRTY : 0;
    }
    if (s->tracking) s->ndirty += np;
}

/* New pages open for writing (under page and buddy tracking): 0, or why not. */
static int open_new(struct kr__seg *s, char *p, size_t bytes)
{
    if (mprotect(p, bytes, PROT_READ | PROT_WRITE))
        return errno == ENOMEM ? KR_SEG_MAPS : KR_SEG_NOMEM;
    s->mprotects++;
    return 0;
}

char *kr__seg_carve(struct kr__seg *s, size_t bytes, uint32_t area_index, int *why)
{
    uint32_t np = (uint32_t)(bytes >> KR_PAGE_SHIFT);
    *why = s->top + bytes > region.slice ? KR_SEG_FULL : grow(s, s->npages + np) ? KR_SEG_NOMEM : 0;
    if (*why) return NULL;
    char *p = s->base + s->top;
    /* (elsewhere the region is writable from the start) */
    if (s->tracking && !s->scan && (*why = open_new(s, p, bytes))) return NULL;
    new_pages(s, np, area_index);
    s->npages += np;
    s->top += bytes;
    if (s->bud) kr__buddy_grow(s);
    return p;
}

/* One mprotect from the first to the last dirty page: the clean pages between are
 * read-only already, and each call costs a lock of the address space and a TLB shootdown
 * on every core running this process, much more than the pages it covers. */
static void mark_run(void *arg, uint32_t first, uint32_t count)
{
    struct kr__seg *s = arg;
    for (uint32_t p = first; p < first + count && p < s->npages; p++) {
        if (s->pg[p] & KR_PG_DIRTY) continue;
        s->pg[p] |= KR_PG_DIRTY;
        s->ndirty++;
    }
}

void kr__seg_collect(struct kr__seg *s)
{
    if (!s->scan || !s->npages) return;
    s->mprotects++; /* counted as one protection call: the scan re-protects */
    if (kr__scan_written(s->base, s->top, mark_run, s) < 0) protect_failed(errno);
}

/* Every page of s marked clean. */
static void clear_dirty(struct kr__seg *s)
{
    for (uint32_t p = 0; p < s->npages; p++) s->pg[p] &= (uint8_t)~KR_PG_DIRTY;
    s->ndirty = 0;
}

void kr__seg_protect_dirty(struct kr__seg *s)
{
    if (s->scan) { /* the collection re-protected them already */
        clear_dirty(s);
        return;
    }
    if (!s->ndirty) return;
    uint32_t first = UINT32_MAX, last = 0;
    for (uint32_t p = 0; p < s->npages; p++) {
        if (!(s->pg[p] & KR_PG_DIRTY)) continue;
        s->pg[p] &= (uint8_t)~KR_PG_DIRTY;
        if (first == UINT32_MAX) first = p;
        last = p;
    }
    protect(s, first, last - first + 1, PROT_READ);
    s->ndirty = 0;
}

void kr__seg_open_all(struct kr__seg *s)
{
    if (s->npages && !s->scan) protect(s, 0, s->npages, PROT_READ | PROT_WRITE);
}

void kr__seg_close_all(struct kr__seg *s)
{
    if (!s->npages) return;
    if (s->scan) kr__seg_collect(s); /* forget the restore's own writes */
    else protect(s, 0, s->npages, PROT_READ);
    for (uint32_t p = 0; p < s->npages; p++) s->pg[p] &= (uint8_t)~KR_PG_DIRTY;
    s->ndirty = 0;
}

void kr__seg_open_page(struct kr__seg *s, uint32_t p)
{
    if (s->scan) {
        mark_run(s, p, 1);
        return;
    }
    uint32_t len = (uint32_t)1 << s->order[p];
    uint32_t first = p & ~(len - 1);
    if (first + len > s->npages) len = s->npages - first;
    protect(s, first, len, PROT_READ | PROT_WRITE);
    for (uint32_t q = first; q < first + len; q++) {
        if (s->pg[q] & KR_PG_DIRTY) continue;
        s->pg[q] |= KR_PG_DIRTY;
        s->ndirty++;
    }
}
