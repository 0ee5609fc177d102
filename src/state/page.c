/* page.c - the page-granular tracking that page, buddy and scan modes share, and --state
 * page itself: the slice's pages are write-protected after each checkpoint, the first write
 * to one faults and opens it (core/fault.c), and an incremental checkpoint saves of each
 * dirty page only its live chunks: u32 n, n x {u32 page, live-unit bitmap, live units}.
 * Buddy mode (buddy.c) opens aligned runs of pages at once; scan mode (scan.c) has the
 * kernel keep the written bits. A restore marks each page it copies (newest first). */
#include <string.h>
#include "state/ckptfmt.h"
#include "state/mode.h"

/* A dirty page's live chunks. A page lies within one area, so it splits into n units of
 * u = min(chunk size, page) bytes, unit k live when its chunk is. */
struct page_units {
    char *addr;
    size_t u;
    uint32_t n, words;
    uint64_t live[KR_PAGE / 16 / 64];
};

static void page_units(const struct kr__arena *a, uint32_t p, struct page_units *v)
{
    const struct kr__seg *s = a->seg;
    const struct kr__area *ar = kr__arena_area(a, s->pg_area[p]);
    size_t csz = kr__arena_class_bytes(ar->cls);
    v->addr = s->base + ((size_t)p << KR_PAGE_SHIFT);
    v->u = csz < KR_PAGE ? csz : KR_PAGE;
    v->n = (uint32_t)(KR_PAGE / v->u);
    v->words = (v->n + 63) / 64;
    memset(v->live, 0, sizeof v->live);
    size_t first = (size_t)(v->addr - ar->data) / csz;
    for (uint32_t k = 0; k < v->n; k++) {
        size_t idx = first + (csz < KR_PAGE ? k : 0);
        if (ar->bits[idx / 64] >> (idx % 64) & 1) v->live[k / 64] |= 1ull << (k % 64);
    }
}

static size_t live_units(const struct page_units *v)
{
    size_t n = 0;
    for (uint32_t w = 0; w < v->words; w++) n += (size_t)__builtin_popcountll(v->live[w]);
    return n;
}

static size_t page_size(const struct kr__arena *a)
{
    size_t bytes = 0;
    for (uint32_t p = 0; p < a->seg->npages; p++) {
        if (!(a->seg->pg[p] & KR_PG_DIRTY)) continue;
        struct page_units v;
        page_units(a, p, &v);
        bytes += 4 + (size_t)v.words * 8 + live_units(&v) * v.u;
    }
    return bytes;
}

static void page_write(const struct kr__arena *a, unsigned char *o)
{
    const struct kr__seg *s = a->seg;
    kr__ckpt_put32(&o, s->ndirty);
    for (uint32_t p = 0; p < s->npages; p++) {
        if (!(s->pg[p] & KR_PG_DIRTY)) continue;
        struct page_units v;
        page_units(a, p, &v);
        kr__ckpt_put32(&o, p);
        kr__ckpt_put(&o, v.live, (size_t)v.words * 8);
        for (uint32_t k = 0; k < v.n; k++)
            if (v.live[k / 64] >> (k % 64) & 1) kr__ckpt_put(&o, v.addr + k * v.u, v.u);
    }
}

/* A chunk live at the restore target inside page p was live when the newest checkpoint
 * holding p was taken (allocating it later would have dirtied p again), so the live chunks
 * saved with p are all of p that matters. */
static void page_apply(struct kr__arena *a, const unsigned char *in)
{
    struct kr__seg *s = a->seg;
    for (uint32_t n = kr__ckpt_get32(&in); n; n--) {
        uint32_t p = kr__ckpt_get32(&in);
        struct page_units v;
        page_units(a, p, &v); /* for the unit size; the saved mask replaces `live` */
        memcpy(v.live, in, (size_t)v.words * 8);
        in += (size_t)v.words * 8;
        bool fresh = !(s->pg[p] & KR_PG_MARK);
        s->pg[p] |= KR_PG_MARK;
        for (uint32_t k = 0; k < v.n; k++) {
            if (!(v.live[k / 64] >> (k % 64) & 1)) continue;
            if (fresh) memcpy(v.addr + k * v.u, in, v.u);
            in += v.u;
        }
    }
}

static void page_redirty(struct kr__arena *a, const unsigned char *in)
{
    struct kr__seg *s = a->seg;
    for (uint32_t n = kr__ckpt_get32(&in); n; n--) {
        uint32_t p = kr__ckpt_get32(&in);
        struct page_units v;
        page_units(a, p, &v);
        memcpy(v.live, in, (size_t)v.words * 8);
        in += (size_t)v.words * 8 + live_units(&v) * v.u;
        if (!(s->pg[p] & KR_PG_DIRTY)) kr__seg_open_page(s, p);
    }
}

/* A full checkpoint's chunk, but for its parts in pages a newer checkpoint restored. */
static void page_copy(struct kr__arena *a, struct kr__area *ar, uint32_t idx,
                      const unsigned char *src)
{
    size_t csz = kr__arena_class_bytes(ar->cls);
    char *dst = ar->data + (size_t)idx * csz;
    struct kr__seg *s = a->seg;
    for (size_t off = 0; off < csz;) {
        uint32_t p = (uint32_t)((size_t)(dst + off - s->base) >> KR_PAGE_SHIFT);
        size_t in_page = KR_PAGE - ((size_t)(dst + off - s->base) & (KR_PAGE - 1));
        size_t n = csz - off < in_page ? csz - off : in_page;
        if (!(s->pg[p] & KR_PG_MARK)) memcpy(dst + off, src + off, n);
        off += n;
    }
}

static void page_restart(struct kr__arena *a) { kr__seg_protect_dirty(a->seg); }

static void page_restore_begin(struct kr__arena *a)
{
    for (uint32_t p = 0; p < a->seg->npages; p++) a->seg->pg[p] &= (uint8_t)~KR_PG_MARK;
    kr__seg_open_all(a->seg);
}

static void page_restore_end(struct kr__arena *a) { kr__seg_close_all(a->seg); }

const struct kr__track_ops kr__page_track = {
    .size = page_size, .write = page_write, .apply = page_apply, .redirty = page_redirty,
    .copy_chunk = page_copy, .restart = page_restart, .restore_begin = page_restore_begin,
    .restore_end = page_restore_end,
};

/* The first write to a closed page: its partition opens (one mprotect), marked dirty. */
bool kr__page_write_fault(struct kr__seg *s, void *addr)
{
    int64_t p = kr__seg_page(s, addr);
    if (p < 0 || (s->pg[p] & KR_PG_DIRTY)) return false;
    s->faults++;
    kr__seg_open_page(s, (uint32_t)p);
    return true;
}

static void page_summary(FILE *f, uint64_t faults, uint64_t mprotects)
{
    fprintf(f, "  page tracking:    %llu write faults, %llu mprotect calls\n",
            (unsigned long long)faults, (unsigned long long)mprotects);
}

const struct kr__state_ops kr__state_page = {
    .name = "page", .id = KR_STATE_PAGE, .region = true, .incremental = true,
    .by_pages = true, .faults = true, .open_pages = true, .track = &kr__page_track,
    .write_fault = kr__page_write_fault, .summary = page_summary,
};
