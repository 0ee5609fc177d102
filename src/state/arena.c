/* arena.c - size-class chunk allocator of an LP (see arena.h). */
#include "state/arena.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "base/digest.h"
#include "state/addrmap.h"

#define AREA_MAX_BYTES (1u << 20)   /* areas grow by doubling up to this, then stay */

void kr__arena_init(struct kr__arena *a, size_t limit, int mode, struct kr__seg *seg)
{
    memset(a, 0, sizeof *a);
    a->limit = limit;
    a->mode = (uint8_t)mode;
    a->seg = seg; /* (mode full with a slice: sequential --check, seg.h) */
}

_Atomic size_t kr__area_bytes;

void kr__arena_destroy(struct kr__arena *a)
{
    size_t gone = 0;
    for (uint32_t i = 0; i < a->n; i++) {
        struct kr__area *ar = kr__arena_area(a, i);
        gone += (size_t)kr__area_nchunks(ar) * kr__arena_class_bytes(ar->cls);
        free(ar);
    }
    atomic_fetch_sub_explicit(&kr__area_bytes, gone, memory_order_relaxed);
    if (a->cap) free(a->areas - 1); /* (the guard word; the sorted list shares the block) */
    memset(a, 0, sizeof *a);
}

static int size_class(size_t size, uint32_t *cls)
{
    if (size <= 16) {
        *cls = 0;
        return 0;
    }
    uint32_t bits = 64 - (uint32_t)__builtin_clzll((unsigned long long)(size - 1));
    if (bits - KR_ARENA_MIN_SHIFT >= KR_ARENA_CLASSES) return -1;
    *cls = bits - KR_ARENA_MIN_SHIFT;
    return 0;
}

/* The arena's very first area holds one chunk, the first area of any other class ~128
 * bytes of chunks; each next one of a class doubles. (Most models allocate their state
 * first and once: millions of LPs hold one small block each - PHOLD at 1 M LPs ran 1.1 M/s
 * in 594 bytes per LP against 0.7 M/s in 658 with 128 bytes; a 16-byte state's area takes
 * 64 bytes of heap in one chunk, 80 in two. A class allocated again and again wants room:
 * queueing's customers ran 4% slower with 64.) */
static uint32_t area_chunks(const struct kr__arena *a, uint32_t cls, uint32_t k)
{
    size_t csz = kr__arena_class_bytes(cls), first = a->n ? 128 : 16;
    size_t n = csz >= first ? 1 : first / csz;
    for (uint32_t i = 0; i < k && n * csz * 2 <= AREA_MAX_BYTES; i++) n *= 2;
    return (uint32_t)n; /* (a power of two: kr__area.lg) */
}

/* The first area of class cls, or NULL. */
static struct kr__area *class_head(const struct kr__arena *a, uint32_t cls)
{
    uint8_t f = a->first[cls];
    if (f != KR_ARENA_FIRST_FAR) return f ? kr__arena_area(a, f - 1u) : NULL;
    for (uint32_t i = KR_ARENA_FIRST_FAR - 1; i < a->n; i++)
        if (a->areas[i]->cls == cls) return a->areas[i];
    return NULL; /* (unreachable: FAR is set only with an area) */
}

static struct kr__area *area_next(const struct kr__arena *a, const struct kr__area *ar)
{
    return ar->next ? kr__arena_area(a, ar->next) : NULL;
}

/* The index block starts with a guard word: a model writing past the end of an area may
 * hit the C library's next block, and if that is an index, the overrun scan must not follow
 * the pointers it wrote there (it skips that arena and names the one that overran). */
static uint64_t index_guard(const void *block)
{
    return 0x4B6169726F734978ull ^ (uint64_t)(uintptr_t)block;
}

static bool index_intact(const struct kr__arena *a)
{
    uint64_t g;
    memcpy(&g, a->areas - 1, sizeof g);
    return g == index_guard(a->areas - 1);
}

/* The index doubled (one block: guard, areas[cap], sorted[cap]); -1 without memory. */
static int index_grow(struct kr__arena *a)
{
    uint32_t cap = a->cap ? a->cap * 2 : 2;
    struct kr__area **x = realloc(a->cap ? a->areas - 1 : NULL, (2 * (size_t)cap + 1) * sizeof *x);
    if (!x) return -1;
    uint64_t g = index_guard(x);
    memcpy(x, &g, sizeof g);
    x++;
    if (a->cap) memmove(x + cap, x + a->cap, a->n * sizeof *x);
    else x[0] = x[cap] = a->one; /* (from `one`) */
    a->areas = x;
    a->cap = cap;
    return 0;
}

/* Room for one more area in the index (none for the first: `one`). Made before the area is
 * allocated, so that the C library does not place the grown index right after the new
 * area, where an overrun of that area would hide itself by breaking its own arena's guard. */
static int index_reserve(struct kr__arena *a)
{
    return a->n && a->n >= a->cap ? index_grow(a) : 0;
}

static void index_area(struct kr__arena *a, struct kr__area *ar)
{
    if (!a->n) {
        a->one = ar;
        a->n = 1;
        return;
    }
    struct kr__area **sorted = a->areas + a->cap;
    a->areas[a->n] = ar;
    uint32_t i = a->n++;
    while (i > 0 && sorted[i - 1]->data > ar->data) {
        sorted[i] = sorted[i - 1];
        i--;
    }
    sorted[i] = ar;
}

/* Tracked modes: an area's data is whole pages of the LP's slice, its header apart. */
static struct kr__area *new_seg_area(struct kr__arena *a, uint32_t cls, uint32_t n, int *err)
{
    size_t csz = kr__arena_class_bytes(cls);
    if (csz < KR_PAGE) n = (uint32_t)((((size_t)n * csz + KR_PAGE - 1) & ~(KR_PAGE - 1)) / csz);
    uint32_t nwords = (n + 63) / 64;
    struct kr__area *ar = calloc(1, sizeof(struct kr__area) + 3 * (size_t)nwords * 8);
    if (!ar) {
        *err = KR_ARENA_NOMEM;
        return NULL;
    }
    ar->lg = (uint8_t)__builtin_ctz(n); /* (whole pages of a power-of-two class) */
    int why;
    ar->data = kr__seg_carve(a->seg, (size_t)n * csz, a->n, &why);
    if (!ar->data) {
        free(ar);
        *err = why == KR_SEG_MAPS ? KR_ARENA_MAPS : why == KR_SEG_NOMEM ? KR_ARENA_NOMEM
                                                                         : KR_ARENA_EXHAUSTED;
        return NULL;
    }
    return ar;
}

/* Full mode: 8 bytes after an area's chunks that no block covers. A model that writes past
 * the end of its last block breaks them before it breaks the C library's heap, so the
 * write can be named (kr__arena_overrun) rather than surfacing later as a crash in engine
 * code. (8, not 16: an area of one 32-byte chunk - PHOLD's state - is then 72 bytes, 80
 * with the C library's size word; with 16 it took 96.) */
#define CANARY_BYTES 8
static const unsigned char canary[CANARY_BYTES] = "KrArEnd";

/* The chunks start 16-aligned because malloc's blocks are (the header is rounded up). */
_Static_assert(_Alignof(max_align_t) >= 16, "malloc must return 16-aligned blocks");

static struct kr__area *new_heap_area(struct kr__arena *a, uint32_t cls, uint32_t n, int *err)
{
    uint32_t nwords = (n + 63) / 64;
    size_t hdr = (sizeof(struct kr__area) + nwords * 8 + 15) & ~(size_t)15;
    size_t data = (size_t)n * kr__arena_class_bytes(cls) + CANARY_BYTES;
    /* (sequential --check: the chunks in the LP's slice, the header apart) */
    struct kr__area *ar = malloc(a->seg ? hdr : hdr + data); /* (16-aligned: see above) */
    if (!ar) {
        *err = KR_ARENA_NOMEM;
        return NULL;
    }
    memset(ar, 0, hdr);
    ar->data = a->seg ? kr__seg_take(a->seg, data) : (char *)ar + hdr;
    if (!ar->data) {
        free(ar);
        *err = KR_ARENA_EXHAUSTED;
        return NULL;
    }
    memcpy(ar->data + (size_t)n * kr__arena_class_bytes(cls), canary, CANARY_BYTES);
    ar->lg = (uint8_t)__builtin_ctz(n);
    return ar;
}

/* A new area of its class into the index, after the class's last one (or as its first). */
static void link_area(struct kr__arena *a, struct kr__area *ar, struct kr__area *last)
{
    uint32_t index = a->n;
    index_area(a, ar);
    if (last) last->next = index;
    else a->first[ar->cls] = index + 1 < KR_ARENA_FIRST_FAR ? (uint8_t)(index + 1)
                                                            : KR_ARENA_FIRST_FAR;
}

/* The next area of class cls: n chunks (a power of two; 0: the usual size). */
static struct kr__area *new_area(struct kr__arena *a, uint32_t cls, uint32_t n, int *err)
{
    uint32_t k = 0, first = 0;
    struct kr__area *last = class_head(a, cls);
    for (struct kr__area *x = last; x; x = area_next(a, x)) {
        first += kr__area_nchunks(x);
        k++;
        last = x;
    }
    if (!n) n = area_chunks(a, cls, k);
    if (index_reserve(a)) {
        *err = KR_ARENA_NOMEM;
        return NULL;
    }
    struct kr__area *ar = kr__arena_sliced(a) ? new_seg_area(a, cls, n, err)
                                            : new_heap_area(a, cls, n, err);
    if (!ar) return NULL;
    atomic_fetch_add_explicit(&kr__area_bytes, (size_t)n * kr__arena_class_bytes(cls),
                              memory_order_relaxed); /* (rare: areas double as they grow) */
    ar->cls = (uint8_t)cls;
    ar->first = first;
    ar->flags = KR_AF_META_DIRTY;
    link_area(a, ar, last);
    return ar;
}

/* Chunk (w, bit) of area ar, free: in use, zeroed (and marked written, in chunk mode). */
static inline void *take_chunk(struct kr__arena *a, struct kr__area *ar, uint32_t w, uint32_t bit)
{
    ar->bits[w] |= 1ull << bit;
    ar->nused++;
    size_t csz = kr__arena_class_bytes(ar->cls);
    a->used += csz;
    char *p = ar->data + (size_t)(w * 64 + bit) * csz;
    memset(p, 0, csz);
    if (kr__arena_marks(a)) KR_AREA_DIRTY(ar)[w] |= 1ull << bit;
    ar->flags |= KR_AF_META_DIRTY;
    return p;
}

void *kr__arena_alloc(struct kr__arena *a, size_t size, int *err)
{
    uint32_t cls;
    if (size_class(size, &cls)) {
        *err = KR_ARENA_TOO_BIG;
        return NULL;
    }
    /* The limit is on bytes in use, part of the LP's state and restored with it, so every
     * engine fails at the same event. (Bytes held include areas that a rolled-back
     * speculative run created: judged on those, runs failed at different events.) */
    if (a->limit && a->used + kr__arena_class_bytes(cls) > a->limit) {
        *err = KR_ARENA_EXHAUSTED;
        return NULL;
    }
    struct kr__area *ar = class_head(a, cls);
    while (ar && ar->nused == kr__area_nchunks(ar)) ar = area_next(a, ar);
    if (!ar && !(ar = new_area(a, cls, 0, err))) return NULL;
    for (uint32_t w = 0; w < KR_AREA_NWORDS(ar); w++) {
        uint64_t free_bits = ~ar->bits[w];
        if (!free_bits) continue;
        uint32_t bit = (uint32_t)__builtin_ctzll(free_bits);
        if (w * 64 + bit >= kr__area_nchunks(ar)) break;
        return take_chunk(a, ar, w, bit);
    }
    *err = KR_ARENA_NOMEM; /* unreachable: nused < nchunks guarantees a free bit */
    return NULL;
}

static struct kr__area *find_area(const struct kr__arena *a, const void *p)
{
    const char *c = p;
    uint32_t lo = 0, hi = a->n;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        struct kr__area *ar = kr__arena_sorted(a, mid);
        if (c < ar->data) hi = mid;
        else if (c >= ar->data + ((size_t)kr__arena_class_bytes(ar->cls) << ar->lg)) lo = mid + 1;
        else return ar;
    }
    return NULL;
}

/* Chunk index of p in ar, or -1 if p is not the start of an allocated chunk. */
static int64_t chunk_of(const struct kr__area *ar, const void *p)
{
    size_t off = (size_t)((const char *)p - ar->data);
    size_t csz = kr__arena_class_bytes(ar->cls);
    if (off % csz) return -1;
    size_t idx = off / csz;
    if (!(ar->bits[idx / 64] >> (idx % 64) & 1)) return -1;
    return (int64_t)idx;
}

int kr__arena_free(struct kr__arena *a, void *p)
{
    struct kr__area *ar = find_area(a, p);
    int64_t idx = ar ? chunk_of(ar, p) : -1;
    if (idx < 0) return KR_ARENA_BAD_PTR;
    ar->bits[idx / 64] &= ~(1ull << (idx % 64));
    ar->nused--;
    ar->flags |= KR_AF_META_DIRTY;
    a->used -= kr__arena_class_bytes(ar->cls);
    return KR_ARENA_OK;
}

struct kr__area *kr__arena_class_first(const struct kr__arena *a, uint32_t cls)
{
    return class_head(a, cls);
}

struct kr__area *kr__arena_class_next(const struct kr__arena *a, const struct kr__area *ar)
{
    return area_next(a, ar);
}

struct kr__area *kr__arena_find(const struct kr__arena *a, const void *p)
{
    return find_area(a, p);
}

struct kr__area *kr__arena_grow(struct kr__arena *a, uint32_t cls, uint32_t n, int *err)
{
    return new_area(a, cls, n, err);
}

size_t kr__arena_chunk_size(const struct kr__arena *a, const void *p)
{
    struct kr__area *ar = find_area(a, p);
    if (!ar || chunk_of(ar, p) < 0) return 0;
    return kr__arena_class_bytes(ar->cls);
}

/* A word that may be an address outside the arena: a module's address by its name and
 * offset, another mapping's noted as the first alien pointer (if asked), else itself. */
static uint64_t canonical_outside(uint64_t w, struct kr__alien *alien)
{
    enum kr__addr_kind kind;
    char where[80];
    uint64_t c = kr__addrmap_canon(w, &kind, where, sizeof where);
    if (kind == KR_ADDR_FOREIGN && alien && !alien->found) {
        alien->found = true;
        alien->word = w;
        snprintf(alien->where, sizeof alien->where, "%s", where);
    }
    return kind == KR_ADDR_IMAGE ? kr__mix(0x1A6E000000000000ull, c) : c;
}

/* A word that points into the arena, or one past the end of an area (the end of an array
 * in its last chunk), becomes a tagged (class, position) pair: the position counts bytes
 * over all chunks of the class in ordinal order, so a pointer one past chunk i and one to
 * chunk i + 1 agree whether or not the two share an area (layouts differ between modes). A
 * pointer into the program image is named by module and offset (addrmap.h). */
static uint64_t canonical_word(const struct kr__arena *a, uint64_t w, struct kr__alien *alien)
{
    if (!kr__addr_maybe(w)) return w; /* (most words: no search) */
    const char *p = (const char *)(uintptr_t)w;
    struct kr__area *ar = find_area(a, p);
    if (!ar && w) ar = find_area(a, p - 1);
    if (!ar) return canonical_outside(w, alien);
    uint64_t pos = (uint64_t)ar->first * kr__arena_class_bytes(ar->cls) + (uint64_t)(p - ar->data);
    return kr__mix(0xA7E4000000000000ull ^ ((uint64_t)ar->cls << 48), pos);
}

/* h with the csz bytes at p, word by word as canonical_word sees them; the first alien
 * pointer's place noted. */
static uint64_t hash_chunk(const struct kr__arena *a, const char *p, size_t csz, uint64_t h,
                           struct kr__alien *alien)
{
    bool had = alien && alien->found;
    for (size_t off = 0; off < csz; off += 8) {
        uint64_t w;
        memcpy(&w, p + off, 8);
        h = kr__mix(h, canonical_word(a, w, alien));
        if (alien && alien->found && !had) {
            alien->offset = off;
            alien->block = csz;
            had = true;
        }
    }
    return h;
}

static uint64_t hash_area(const struct kr__arena *a, const struct kr__area *ar, uint64_t h,
                          struct kr__alien *alien)
{
    size_t csz = kr__arena_class_bytes(ar->cls);
    for (uint32_t c = 0; c < kr__area_nchunks(ar); c++) {
        if (!(ar->bits[c / 64] >> (c % 64) & 1)) continue;
        h = kr__mix(h, ((uint64_t)ar->cls << 48) ^ (ar->first + c));
        h = hash_chunk(a, ar->data + (size_t)c * csz, csz, h, alien);
    }
    return h;
}

uint64_t kr__arena_hash(const struct kr__arena *a, const void *root, struct kr__alien *alien)
{
    uint64_t h = kr__mix(0x5EED, root ? canonical_word(a, (uint64_t)(uintptr_t)root, NULL) : 0);
    for (uint32_t cls = 0; cls < KR_ARENA_CLASSES; cls++)
        for (const struct kr__area *ar = class_head(a, cls); ar; ar = area_next(a, ar))
            if (ar->nused) h = hash_area(a, ar, h, alien);
    return h;
}

/* Whether word w could be a pointer the hash cannot name: not a number, and neither in nor
 * one past an area (`*last`, the area the previous pointer hit, answers most look-ups). */
static bool maybe_alien(const struct kr__arena *a, uint64_t w, const struct kr__area **last)
{
    if (!kr__addr_maybe(w)) return false;
    const char *p = (const char *)(uintptr_t)w;
    const struct kr__area *l = *last;
    if (l && p >= l->data && p <= l->data + (kr__arena_class_bytes(l->cls) << l->lg))
        return false;
    const struct kr__area *ar = find_area(a, p);
    if (!ar) ar = find_area(a, p - 1);
    if (ar) *last = ar;
    return !ar;
}

/* The first alien pointer in the csz bytes at p into *alien: true if found. */
static bool chunk_alien(const struct kr__arena *a, const char *p, size_t csz,
                        const struct kr__area **last, struct kr__alien *alien)
{
    for (size_t off = 0; off < csz; off += 8) {
        uint64_t w;
        memcpy(&w, p + off, 8);
        if (!maybe_alien(a, w, last)) continue;
        canonical_word(a, w, alien);
        if (alien->found) {
            alien->offset = off;
            alien->block = csz;
            return true;
        }
    }
    return false;
}

void kr__arena_find_alien(const struct kr__arena *a, struct kr__alien *alien)
{
    const struct kr__area *last = NULL;
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        size_t csz = kr__arena_class_bytes(ar->cls);
        for (uint32_t c = 0; c < kr__area_nchunks(ar) && ar->nused; c++) {
            if (!(ar->bits[c / 64] >> (c % 64) & 1)) continue;
            if (chunk_alien(a, ar->data + (size_t)c * csz, csz, &last, alien)) return;
        }
    }
}

/* An overrun from elsewhere may have clobbered an area's header: what it says is only
 * believed if it holds together (sequential --check: the header is apart from the chunks,
 * in the LP's slice). */
static bool header_sane(const struct kr__arena *a, const struct kr__area *ar)
{
    size_t hdr = (sizeof(struct kr__area) + (size_t)KR_AREA_NWORDS(ar) * 8 + 15) & ~(size_t)15;
    return ar->cls < KR_ARENA_CLASSES && ar->lg <= 20 &&
           (a->seg || ar->data == (const char *)ar + hdr);
}

/* Whether the canary after area ar's last chunk is as it was written. */
static bool canary_intact(const struct kr__area *ar)
{
    return !memcmp(ar->data + (kr__arena_class_bytes(ar->cls) << ar->lg), canary, CANARY_BYTES);
}

const struct kr__area *kr__arena_overrun(const struct kr__arena *a)
{
    if (kr__arena_sliced(a) || !a->n) return NULL; /* (tracked: in the LP's slice) */
    if (a->cap && !index_intact(a)) return NULL; /* (overwritten by another's overrun) */
    for (uint32_t i = 0; i < a->n; i++) {
        const struct kr__area *ar = kr__arena_area(a, i);
        if (header_sane(a, ar) && !canary_intact(ar)) return ar;
    }
    return NULL;
}

/* The chunks of [c, end) in the area c lies in marked written: where that area ends (or
 * end). */
static const char *mark_area(struct kr__arena *a, const char *c, const char *end)
{
    const struct kr__seg *s = a->seg;
    uint32_t pg = (uint32_t)((size_t)(c - s->base) >> KR_PAGE_SHIFT);
    struct kr__area *ar = kr__arena_area(a, s->pg_area[pg]);
    size_t csz = kr__arena_class_bytes(ar->cls);
    const char *aend = ar->data + (csz << ar->lg);
    const char *stop = end < aend ? end : aend;
    size_t i = (size_t)(c - ar->data) / csz, last = (size_t)(stop - 1 - ar->data) / csz;
    uint64_t *d = KR_AREA_DIRTY(ar);
    for (; i <= last; i++) d[i / 64] |= 1ull << (i % 64);
    return stop;
}

void kr__arena_mark(struct kr__arena *a, const void *p, size_t n)
{
    const struct kr__seg *s = a->seg;
    if (!n || !s) return;
    const char *c = p, *end = c + n;
    if (end < c) end = s->base + s->top; /* wrapped: clamp */
    if (c < s->base) c = s->base;
    if (end > s->base + s->top) end = s->base + s->top;
    while (c < end) c = mark_area(a, c, end);
}
