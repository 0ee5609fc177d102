/* ckpt.c - full and incremental checkpoints and chain restore (see ckpt.h).
 *
 * Full:        per area (creation order): u32 nused, [use bitmap, live chunks].
 * Incremental: u32 n, n x {u32 area, u32 nused, [use bitmap]}   areas whose metadata changed
 *              chunk mode: u32 n, n x {u32 area, bitmap, chunks}  dirty live chunks
 *              page modes: u32 n, n x {u32 page, live-unit bitmap, live units}
 *                                                                dirty pages, live data only
 * Areas are never destroyed (a rolled-back area is kept, emptied), so an area index means
 * the same area in every checkpoint of the chain. */
#include "state/ckpt.h"
#include <string.h>
#include "state/buddy.h"

static bool paged(const struct kr__arena *a)
{
    return a->mode == KR_STATE_PAGE || a->mode == KR_STATE_BUDDY || a->mode == KR_STATE_SCAN;
}

static size_t bitmap_bytes(const struct kr__area *ar) { return (size_t)KR_AREA_NWORDS(ar) * 8; }

/* Page modes save of a dirty page only its live chunks. A page lies within one area, so
 * it splits into n units of u = min(chunk size, page) bytes, unit k live when its chunk is. */
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

/* Output cursor. */
static void put(unsigned char **o, const void *p, size_t n)
{
    memcpy(*o, p, n);
    *o += n;
}

static void put32(unsigned char **o, uint32_t v) { put(o, &v, 4); }

static uint32_t get32(const unsigned char **in)
{
    uint32_t v;
    memcpy(&v, *in, 4);
    *in += 4;
    return v;
}

/* Bytes of the chunks selected by `sel` in ar. */
static size_t sel_bytes(const struct kr__area *ar, const uint64_t *sel, const uint64_t *and)
{
    size_t n = 0;
    for (uint32_t w = 0; w < KR_AREA_NWORDS(ar); w++)
        n += (size_t)__builtin_popcountll(sel[w] & (and ? and[w] : ~0ull));
    return n * kr__arena_class_bytes(ar->cls);
}

/* Copy the chunks selected by sel (& and) of ar to the cursor. */
static void put_chunks(unsigned char **o, const struct kr__area *ar, const uint64_t *sel,
                       const uint64_t *and)
{
    size_t csz = kr__arena_class_bytes(ar->cls);
    for (uint32_t w = 0; w < KR_AREA_NWORDS(ar); w++)
        for (uint64_t m = sel[w] & (and ? and[w] : ~0ull); m; m &= m - 1) {
            uint32_t idx = w * 64 + (uint32_t)__builtin_ctzll(m);
            put(o, ar->data + (size_t)idx * csz, csz);
        }
}

static bool any_bits(const uint64_t *a, const uint64_t *b, uint32_t nwords)
{
    for (uint32_t w = 0; w < nwords; w++)
        if (a[w] & b[w]) return true;
    return false;
}

static size_t full_size(const struct kr__arena *a)
{
    size_t bytes = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        bytes += 4;
        if (ar->nused)
            bytes += bitmap_bytes(ar) + (size_t)ar->nused * kr__arena_class_bytes(ar->cls);
    }
    return bytes;
}

static void write_full(const struct kr__arena *a, unsigned char *o)
{
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        put32(&o, ar->nused);
        if (!ar->nused) continue;
        put(&o, ar->bits, bitmap_bytes(ar));
        put_chunks(&o, ar, ar->bits, NULL);
    }
}

static size_t incr_size(const struct kr__arena *a)
{
    size_t bytes = 8;
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        if (ar->flags & KR_AF_META_DIRTY) bytes += 8 + (ar->nused ? bitmap_bytes(ar) : 0);
        if (a->mode == KR_STATE_CHUNK && ar->nused &&
            any_bits(KR_AREA_DIRTY(ar), ar->bits, KR_AREA_NWORDS(ar)))
            bytes += 4 + bitmap_bytes(ar) + sel_bytes(ar, KR_AREA_DIRTY(ar), ar->bits);
    }
    if (paged(a))
        for (uint32_t p = 0; p < a->seg->npages; p++) {
            if (!(a->seg->pg[p] & KR_PG_DIRTY)) continue;
            struct page_units v;
            page_units(a, p, &v);
            bytes += 4 + (size_t)v.words * 8 + live_units(&v) * v.u;
        }
    return bytes;
}

static void write_incr(const struct kr__arena *a, unsigned char *o)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < a->n; i++) n += (kr__arena_area(a, i)->flags & KR_AF_META_DIRTY) != 0;
    put32(&o, n);
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        if (!(ar->flags & KR_AF_META_DIRTY)) continue;
        put32(&o, i);
        put32(&o, ar->nused);
        if (ar->nused) put(&o, ar->bits, bitmap_bytes(ar));
    }
    if (a->mode == KR_STATE_CHUNK) {
        unsigned char *count = o;
        o += 4;
        n = 0;
        for (uint32_t i = 0; i < a->n; i++) {
            const struct kr__area *ar = kr__arena_area(a, i);
            const uint64_t *d = KR_AREA_DIRTY(ar);
            if (!ar->nused || !any_bits(d, ar->bits, KR_AREA_NWORDS(ar))) continue;
            put32(&o, i);
            for (uint32_t w = 0; w < KR_AREA_NWORDS(ar); w++) {
                uint64_t sel = d[w] & ar->bits[w];
                put(&o, &sel, 8);
            }
            put_chunks(&o, ar, d, ar->bits);
            n++;
        }
        memcpy(count, &n, 4);
        return;
    }
    const struct kr__seg *s = a->seg;
    put32(&o, s->ndirty);
    for (uint32_t p = 0; p < s->npages; p++) {
        if (!(s->pg[p] & KR_PG_DIRTY)) continue;
        struct page_units v;
        page_units(a, p, &v);
        put32(&o, p);
        put(&o, v.live, (size_t)v.words * 8);
        for (uint32_t k = 0; k < v.n; k++)
            if (v.live[k / 64] >> (k % 64) & 1) put(&o, v.addr + k * v.u, v.u);
    }
}

/* Dirty tracking restarts: the checkpoint just taken (or restored) is the reference. */
static void clear_tracking(struct kr__arena *a)
{
    for (uint32_t i = 0; i < a->n; i++) {
        struct kr__area *ar = kr__arena_area(a, i);
        ar->flags &= (uint8_t)~KR_AF_META_DIRTY;
        if (a->mode == KR_STATE_CHUNK) memset(KR_AREA_DIRTY(ar), 0, bitmap_bytes(ar));
    }
    if (paged(a)) kr__seg_protect_dirty(a->seg);
}

struct kr__ckpt *kr__ckpt_take(struct kr__blobs *b, struct kr__arena *a,
                               const uint64_t words[KR_CKPT_WORDS], struct kr__ckpt *prev,
                               bool full)
{
    full = full || !prev || a->mode == KR_STATE_FULL;
    if (a->seg && a->seg->scan) kr__seg_collect(a->seg); /* the kernel's written bits */
    if (a->seg && a->seg->bud) kr__buddy_checkpoint(a->seg); /* before the dirty set clears */
    size_t bytes = sizeof(struct kr__ckpt) + (full ? full_size(a) : incr_size(a));
    struct kr__ckpt *c = kr__blob_get(b, bytes);
    c->prev = prev;
    c->bytes = bytes;
    c->nareas = a->n;
    c->depth = full ? 0 : (uint16_t)(prev->depth + 1);
    c->full = full;
    c->mode = a->mode;
    memcpy(c->words, words, sizeof c->words);
    if (full) write_full(a, c->data);
    else write_incr(a, c->data);
    if (a->mode != KR_STATE_FULL) clear_tracking(a);
    return c;
}

/* ---- restore ---- */

static void set_meta(struct kr__area *ar, uint32_t nused, const unsigned char *bits)
{
    ar->flags |= KR_AF_META_MARK;
    ar->nused = nused;
    if (nused) memcpy(ar->bits, bits, bitmap_bytes(ar));
    else memset(ar->bits, 0, bitmap_bytes(ar));
}

static bool test_bit(const uint64_t *b, size_t i) { return b[i / 64] >> (i % 64) & 1; }
static void set_bit(uint64_t *b, size_t i) { b[i / 64] |= 1ull << (i % 64); }

/* Copy chunk idx of ar from src, except the parts already restored from newer checkpoints
 * (marked chunk in chunk mode, marked pages in page modes). */
static void copy_chunk(struct kr__arena *a, struct kr__area *ar, uint32_t idx,
                       const unsigned char *src)
{
    size_t csz = kr__arena_class_bytes(ar->cls);
    char *dst = ar->data + (size_t)idx * csz;
    if (a->mode == KR_STATE_FULL) {
        memcpy(dst, src, csz);
        return;
    }
    if (a->mode == KR_STATE_CHUNK) {
        if (test_bit(KR_AREA_MARK(ar), idx)) return;
        set_bit(KR_AREA_MARK(ar), idx);
        memcpy(dst, src, csz);
        return;
    }
    struct kr__seg *s = a->seg;
    for (size_t off = 0; off < csz;) {
        uint32_t p = (uint32_t)((size_t)(dst + off - s->base) >> KR_PAGE_SHIFT);
        size_t in_page = KR_PAGE - ((size_t)(dst + off - s->base) & (KR_PAGE - 1));
        size_t n = csz - off < in_page ? csz - off : in_page;
        if (!(s->pg[p] & KR_PG_MARK)) memcpy(dst + off, src + off, n);
        off += n;
    }
}

/* Walk over a saved chunk record of an area: its bitmap, then the chunks it selects. After
 * the last chunk, `data` is the cursor past the record. */
struct saved_chunks {
    const unsigned char *bits, *data;
    size_t csz;
    uint32_t w, nwords;
    uint64_t m;
    bool started;
};

static void saved_begin(struct saved_chunks *it, const struct kr__area *ar, const unsigned char *in)
{
    *it = (struct saved_chunks){ .bits = in, .data = in + bitmap_bytes(ar),
                                 .csz = kr__arena_class_bytes(ar->cls),
                                 .nwords = KR_AREA_NWORDS(ar) };
    if (it->nwords) memcpy(&it->m, it->bits, 8);
}

/* The next saved chunk: its index and its saved bytes (it->data). */
static bool saved_next(struct saved_chunks *it, uint32_t *idx)
{
    if (it->started) it->data += it->csz;
    it->started = true;
    while (!it->m) {
        if (++it->w >= it->nwords) return false;
        memcpy(&it->m, it->bits + (size_t)it->w * 8, 8);
    }
    *idx = it->w * 64 + (uint32_t)__builtin_ctzll(it->m);
    it->m &= it->m - 1;
    return true;
}

/* Copy a saved chunk record back (only the chunks live now, when only_live: a full
 * checkpoint holds chunks freed since). Returns the cursor after it. */
static const unsigned char *apply_chunks(struct kr__arena *a, struct kr__area *ar,
                                         const unsigned char *in, bool only_live)
{
    struct saved_chunks it;
    uint32_t idx;
    saved_begin(&it, ar, in);
    while (saved_next(&it, &idx))
        if (!only_live || test_bit(ar->bits, idx)) copy_chunk(a, ar, idx, it.data);
    return it.data;
}

static void apply_full(struct kr__arena *a, const struct kr__ckpt *c)
{
    const unsigned char *in = c->data;
    for (uint32_t i = 0; i < c->nareas; i++) {
        struct kr__area *ar = kr__arena_area(a, i);
        uint32_t nused = get32(&in);
        if (!(ar->flags & KR_AF_META_MARK)) set_meta(ar, nused, in);
        if (nused) in = apply_chunks(a, ar, in, true);
    }
}

static void apply_incr(struct kr__arena *a, const struct kr__ckpt *c)
{
    const unsigned char *in = c->data;
    for (uint32_t n = get32(&in); n; n--) {
        struct kr__area *ar = kr__arena_area(a, get32(&in));
        uint32_t nused = get32(&in);
        if (!(ar->flags & KR_AF_META_MARK)) set_meta(ar, nused, in);
        if (nused) in += bitmap_bytes(ar);
    }
    if (c->mode == KR_STATE_CHUNK) {
        for (uint32_t n = get32(&in); n; n--) {
            struct kr__area *ar = kr__arena_area(a, get32(&in));
            in = apply_chunks(a, ar, in, false);
        }
        return;
    }
    /* A chunk live at the restore target inside page p was live when the newest checkpoint
     * holding p was taken (allocating it later would have dirtied p again), so the live
     * chunks saved with p are all of p that matters. */
    struct kr__seg *s = a->seg;
    for (uint32_t n = get32(&in); n; n--) {
        uint32_t p = get32(&in);
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

static void clear_marks(struct kr__arena *a)
{
    for (uint32_t i = 0; i < a->n; i++) {
        struct kr__area *ar = kr__arena_area(a, i);
        ar->flags &= ~(uint32_t)KR_AF_META_MARK;
        if (a->mode == KR_STATE_CHUNK) memset(KR_AREA_MARK(ar), 0, bitmap_bytes(ar));
    }
    if (paged(a))
        for (uint32_t p = 0; p < a->seg->npages; p++) a->seg->pg[p] &= (uint8_t)~KR_PG_MARK;
}

void kr__ckpt_restore(struct kr__arena *a, const struct kr__ckpt *c,
                      uint64_t words[KR_CKPT_WORDS])
{
    memcpy(words, c->words, sizeof c->words);
    clear_marks(a);
    if (paged(a)) kr__seg_open_all(a->seg);
    for (const struct kr__ckpt *x = c; x; x = x->prev) {
        if (x->full) {
            apply_full(a, x);
            break;
        }
        apply_incr(a, x);
    }
    size_t used = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        struct kr__area *ar = kr__arena_area(a, i);
        if (!(ar->flags & KR_AF_META_MARK)) { /* created after c: empty at c */
            ar->nused = 0;
            memset(ar->bits, 0, bitmap_bytes(ar));
        }
        used += (size_t)ar->nused * kr__arena_class_bytes(ar->cls);
    }
    a->used = used;
    if (a->mode == KR_STATE_FULL) return;
    if (paged(a)) kr__seg_close_all(a->seg);
    clear_tracking(a);
}

bool kr__ckpt_redirty(struct kr__arena *a, const struct kr__ckpt *c)
{
    if (c->full) return false;
    const unsigned char *in = c->data;
    for (uint32_t n = get32(&in); n; n--) {
        struct kr__area *ar = kr__arena_area(a, get32(&in));
        ar->flags |= KR_AF_META_DIRTY;
        if (get32(&in)) in += bitmap_bytes(ar);
    }
    if (c->mode == KR_STATE_CHUNK) {
        for (uint32_t n = get32(&in); n; n--) {
            struct kr__area *ar = kr__arena_area(a, get32(&in));
            uint64_t *d = KR_AREA_DIRTY(ar);
            size_t cnt = 0;
            for (uint32_t w = 0; w < KR_AREA_NWORDS(ar); w++) {
                uint64_t m;
                memcpy(&m, in + (size_t)w * 8, 8);
                d[w] |= m;
                cnt += (size_t)__builtin_popcountll(m);
            }
            in += bitmap_bytes(ar) + cnt * kr__arena_class_bytes(ar->cls);
        }
        return true;
    }
    struct kr__seg *s = a->seg;
    for (uint32_t n = get32(&in); n; n--) {
        uint32_t p = get32(&in);
        struct page_units v;
        page_units(a, p, &v);
        memcpy(v.live, in, (size_t)v.words * 8);
        in += (size_t)v.words * 8 + live_units(&v) * v.u;
        if (!(s->pg[p] & KR_PG_DIRTY)) kr__seg_open_page(s, p);
    }
    return true;
}

void *kr__ckpt_unmarked_write(const struct kr__arena *a, const struct kr__ckpt *c,
                              size_t *off, size_t *size)
{
    const unsigned char *in = c->data;
    for (uint32_t i = 0; i < c->nareas; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        if (!get32(&in)) continue;
        struct saved_chunks it;
        uint32_t idx;
        saved_begin(&it, ar, in);
        while (saved_next(&it, &idx)) {
            const char *now = ar->data + (size_t)idx * it.csz;
            if (!test_bit(ar->bits, idx) || test_bit(KR_AREA_DIRTY(ar), idx)) continue;
            for (size_t k = 0; k < it.csz; k++)
                if ((unsigned char)now[k] != it.data[k]) {
                    *off = k;
                    *size = it.csz;
                    return (void *)now;
                }
        }
        in = it.data;
    }
    return NULL;
}
