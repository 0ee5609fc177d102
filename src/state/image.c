/* image.c - an LP's state, independent of addresses (see image.h).
 *
 * Layout (native byte order; a snapshot file adds its own header and checksum):
 *   u32 magic, u32 classes
 *   per class, ascending:  u8 class, u32 slots, u32 live
 *     per live chunk, by ordinal:  u32 ordinal, the chunk's bytes (its pointer words 0),
 *                                  u32 pointers, per pointer {u32 word, word value}
 *   the root, a word value; in a "KRI2" image (magic IMAGE_MAGIC2) a second one, the
 *   engine's (the LP's pending timers, core/timer.h), which KRI1 images of states without
 *   it leave out
 * A word value is u8 kind, u64 a, u64 b: a number (a), an arena position (class a,
 * position b) or a program-image address (module name hash a, offset b). `slots` covers
 * every live chunk and every position a pointer names (a pointer may dangle past the last
 * live chunk), so the loaded arena has an address for each. */
#include "state/image.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "state/addrmap.h"

#define IMAGE_MAGIC 0x3149524Bu  /* "KRI1" */
#define IMAGE_MAGIC2 0x3249524Bu /* "KRI2" */
/* A damaged count must not make the loader reserve terabytes (the fuzz build, less). */
#ifndef KR_IMAGE_MAX_BYTES
#define KR_IMAGE_MAX_BYTES (1ull << 36)
#endif

enum { W_NUMBER, W_ARENA, W_IMAGE, W_KINDS };

struct word {
    uint8_t kind;
    uint64_t a, b;
};

/* Room for n more bytes in b (doubling); false, b->oom set, if there is no memory. */
static bool bytes_room(struct kr__bytes *b, size_t n)
{
    size_t cap = b->cap ? b->cap : 256;
    while (cap - b->n < n) cap *= 2;
    unsigned char *q = realloc(b->p, cap);
    if (!q) {
        b->oom = true;
        return false;
    }
    b->p = q;
    b->cap = cap;
    return true;
}

void kr__bytes_put(struct kr__bytes *b, const void *p, size_t n)
{
    if (b->oom || !n) return; /* (n 0: p may be NULL, an empty sketch's counts) */
    if (b->cap - b->n < n && !bytes_room(b, n)) return;
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

void kr__bytes_free(struct kr__bytes *b)
{
    free(b->p);
    *b = (struct kr__bytes){ 0 };
}

static void put8(struct kr__bytes *b, uint8_t v) { kr__bytes_put(b, &v, 1); }
static void put32(struct kr__bytes *b, uint32_t v) { kr__bytes_put(b, &v, 4); }
static void put64(struct kr__bytes *b, uint64_t v) { kr__bytes_put(b, &v, 8); }

static void put_word(struct kr__bytes *b, const struct word *x)
{
    put8(b, x->kind);
    put64(b, x->a);
    put64(b, x->b);
}

/* ---- save ---- */

/* The first foreign word found is the one reported. */
static void note_alien(struct kr__alien *alien, uint64_t w, const char *where)
{
    if (alien->found) return;
    alien->found = true;
    alien->word = w;
    snprintf(alien->where, sizeof alien->where, "%s", where);
}

/* A pointer into the LP's arena (or one past an area's end) as its class and position;
 * false if p is not in the arena. */
static bool in_arena(const struct kr__arena *a, const char *p, struct word *x)
{
    const struct kr__area *ar = kr__arena_find(a, p);
    if (!ar) ar = kr__arena_find(a, p - 1); /* (one past an area's end) */
    if (!ar) return false;
    uint64_t pos = (uint64_t)ar->first * kr__arena_class_bytes(ar->cls) + (uint64_t)(p - ar->data);
    *x = (struct word){ W_ARENA, ar->cls, pos };
    return true;
}

/* What word w of a's state is, as the state hash names it (arena.c). False: it points into
 * other mapped memory (recorded in alien). */
static bool classify(const struct kr__arena *a, uint64_t w, struct word *x,
                     struct kr__alien *alien)
{
    *x = (struct word){ W_NUMBER, w, 0 };
    if (!kr__addr_maybe(w)) return true;
    if (in_arena(a, (const char *)(uintptr_t)w, x)) return true;
    uint64_t name = 0, offset = 0;
    char where[80];
    enum kr__addr_kind k = kr__addrmap_split(w, &name, &offset, where, sizeof where);
    if (k == KR_ADDR_IMAGE) *x = (struct word){ W_IMAGE, name, offset };
    if (k != KR_ADDR_FOREIGN) return true;
    if (alien) note_alien(alien, w, where);
    return false;
}

static bool live(const struct kr__area *ar, uint32_t c)
{
    return ar->bits[c / 64] >> (c % 64) & 1;
}

/* Widen slots[] to cover the position x names, if it names one: the slot it lies in (a
 * position at a slot's start may be one past the slot before; the next is kept too, so
 * that it has an address either way - found by fuzzing: a dangling pointer to a class's
 * slot 0 with no live chunk left). */
static void cover(const struct word *x, uint32_t slots[KR_ARENA_CLASSES])
{
    if (x->kind != W_ARENA) return;
    size_t csz = kr__arena_class_bytes((uint32_t)x->a);
    uint64_t need = x->b / csz + 1;
    if (need > slots[x->a]) slots[x->a] = (uint32_t)need;
}

/* Every word of a live chunk classified, the slots it points into covered; false at the
 * first that points into memory no image can name. */
static bool chunk_words(const struct kr__arena *a, const char *p, size_t csz,
                        uint32_t slots[KR_ARENA_CLASSES], struct kr__alien *alien)
{
    for (size_t off = 0; off < csz; off += 8) {
        uint64_t w;
        struct word x;
        memcpy(&w, p + off, 8);
        if (!classify(a, w, &x, alien)) return false;
        cover(&x, slots);
    }
    return true;
}

/* extent's work for one area: its live chunks counted and their words classified. */
static bool area_extent(const struct kr__arena *a, const struct kr__area *ar,
                        uint32_t slots[KR_ARENA_CLASSES], uint32_t nlive[KR_ARENA_CLASSES],
                        struct kr__alien *alien)
{
    uint32_t cls = ar->cls;
    size_t csz = kr__arena_class_bytes(cls);
    for (uint32_t c = 0; c < kr__area_nchunks(ar) && ar->nused; c++) {
        if (!live(ar, c)) continue;
        nlive[cls]++;
        if (ar->first + c + 1 > slots[cls]) slots[cls] = ar->first + c + 1;
        if (!chunk_words(a, ar->data + (size_t)c * csz, csz, slots, alien)) return false;
    }
    return true;
}

/* Per class, the slots the image needs (see the layout); false on an unnameable word. */
static bool extent(const struct kr__arena *a, uint32_t slots[KR_ARENA_CLASSES],
                   uint32_t nlive[KR_ARENA_CLASSES], struct kr__alien *alien)
{
    for (uint32_t cls = 0; cls < KR_ARENA_CLASSES; cls++)
        for (const struct kr__area *ar = kr__arena_class_first(a, cls); ar;
             ar = kr__arena_class_next(a, ar))
            if (!area_extent(a, ar, slots, nlive, alien)) return false;
    return true;
}

/* One live chunk: its bytes with the pointer words zeroed, then the pointers. */
static void save_chunk(const struct kr__arena *a, const struct kr__area *ar, uint32_t c,
                       struct kr__bytes *out)
{
    size_t csz = kr__arena_class_bytes(ar->cls);
    const char *p = ar->data + (size_t)c * csz;
    put32(out, ar->first + c);
    size_t bytes_at = out->n;
    kr__bytes_put(out, p, csz);
    size_t count_at = out->n;
    uint32_t n = 0;
    put32(out, 0);
    for (size_t off = 0; off < csz; off += 8) {
        uint64_t w;
        struct word x;
        memcpy(&w, p + off, 8);
        classify(a, w, &x, NULL); /* (extent saw every word nameable) */
        if (x.kind == W_NUMBER) continue;
        put32(out, (uint32_t)(off / 8));
        put_word(out, &x);
        n++;
        if (!out->oom) memset(out->p + bytes_at + off, 0, 8);
    }
    if (!out->oom) memcpy(out->p + count_at, &n, 4);
}

/* Size class cls of the image: its slots, its live chunks' count, then each live chunk. */
static void save_class(const struct kr__arena *a, uint32_t cls, uint32_t slots, uint32_t nlive,
                       struct kr__bytes *out)
{
    put8(out, (uint8_t)cls);
    put32(out, slots);
    put32(out, nlive);
    for (const struct kr__area *ar = kr__arena_class_first(a, cls); ar;
         ar = kr__arena_class_next(a, ar))
        for (uint32_t c = 0; c < kr__area_nchunks(ar) && ar->nused; c++)
            if (live(ar, c)) save_chunk(a, ar, c, out);
}

static uint32_t classes_used(const uint32_t slots[KR_ARENA_CLASSES])
{
    uint32_t n = 0;
    for (uint32_t cls = 0; cls < KR_ARENA_CLASSES; cls++) n += slots[cls] > 0;
    return n;
}

bool kr__image_save(const struct kr__arena *a, const void *root, const void *aux,
                    struct kr__bytes *out, struct kr__alien *alien)
{
    uint32_t slots[KR_ARENA_CLASSES] = { 0 }, nlive[KR_ARENA_CLASSES] = { 0 };
    struct word r, x;
    if (!classify(a, (uint64_t)(uintptr_t)root, &r, alien) ||
        !classify(a, (uint64_t)(uintptr_t)aux, &x, alien))
        return false;
    cover(&r, slots);
    cover(&x, slots);
    if (!extent(a, slots, nlive, alien)) return false;
    uint32_t ncls = classes_used(slots);
    put32(out, aux ? IMAGE_MAGIC2 : IMAGE_MAGIC);
    put32(out, ncls);
    for (uint32_t cls = 0; cls < KR_ARENA_CLASSES; cls++)
        if (slots[cls]) save_class(a, cls, slots[cls], nlive[cls], out);
    put_word(out, &r);
    if (aux) put_word(out, &x);
    return !out->oom;
}

/* ---- load ---- */

void kr__cursor_fail(struct kr__cursor *in, const char *why)
{
    if (!in->why) in->why = why;
    in->p = in->end;
}

const unsigned char *kr__cursor_take(struct kr__cursor *in, size_t n)
{
    if ((size_t)(in->end - in->p) < n) {
        kr__cursor_fail(in, "the state image is truncated");
        return NULL;
    }
    const unsigned char *p = in->p;
    in->p += n;
    return p;
}

uint64_t kr__cursor_get(struct kr__cursor *in, size_t n)
{
    uint64_t v = 0;
    const unsigned char *p = kr__cursor_take(in, n);
    if (p) memcpy(&v, p, n); /* (little-endian hosts: the low bytes) */
    return v;
}

static struct word get_word(struct kr__cursor *in)
{
    struct word x;
    x.kind = (uint8_t)kr__cursor_get(in, 1);
    x.a = kr__cursor_get(in, 8);
    x.b = kr__cursor_get(in, 8);
    if (x.kind >= W_KINDS || (x.kind == W_ARENA && x.a >= KR_ARENA_CLASSES))
        kr__cursor_fail(in, "the state image is damaged (a word of unknown kind)");
    return x;
}

/* The area of class cls holding slot `ord`, and the slot's index in it. */
static struct kr__area *slot_area(const struct kr__arena *a, uint32_t cls, uint64_t ord,
                                  uint32_t *idx)
{
    for (struct kr__area *ar = kr__arena_class_first(a, cls); ar;
         ar = kr__arena_class_next(a, ar)) {
        if (ord >= ar->first && ord < (uint64_t)ar->first + kr__area_nchunks(ar)) {
            *idx = (uint32_t)(ord - ar->first);
            return ar;
        }
    }
    return NULL;
}

/* Areas for `slots` chunks of class cls in an empty class: as few as the largest area
 * allows, so that the slots lie in one block of memory (a pointer one past a chunk and
 * one to the next chunk, which the image cannot tell apart, are then the same address). */
static bool reserve(struct kr__arena *a, uint32_t cls, uint32_t slots)
{
    size_t csz = kr__arena_class_bytes(cls);
    uint32_t most = csz >= (1u << 20) ? 1 : (uint32_t)((1u << 20) / csz);
    for (uint32_t have = 0; have < slots;) {
        uint32_t want = slots - have < most ? slots - have : most, n = 1;
        while (n < want) n *= 2;
        int err;
        struct kr__area *ar = kr__arena_grow(a, cls, n, &err);
        if (!ar) return false;
        have += kr__area_nchunks(ar);
    }
    return true;
}

/* Chunk idx of ar holds bytes, and the arena's books say it is in use (and written). */
static void chunk_in_use(struct kr__arena *a, struct kr__area *ar, uint32_t idx,
                         const unsigned char *bytes, size_t csz)
{
    memcpy(ar->data + (size_t)idx * csz, bytes, csz);
    ar->bits[idx / 64] |= 1ull << (idx % 64);
    ar->nused++;
    ar->flags |= KR_AF_META_DIRTY;
    if (kr__arena_marks(a)) KR_AREA_DIRTY(ar)[idx / 64] |= 1ull << (idx % 64);
    a->used += csz;
}

/* Past a chunk's pointer words (pass 1: each checked to lie in its chunk of csz bytes). */
static void skip_words(struct kr__cursor *in, size_t csz)
{
    uint32_t n = (uint32_t)kr__cursor_get(in, 4);
    for (uint32_t i = 0; i < n && !in->why; i++) {
        if (kr__cursor_get(in, 4) >= csz / 8)
            kr__cursor_fail(in, "the state image is damaged (a word past its chunk)");
        get_word(in);
    }
}

/* A live chunk's bytes into its slot (pass 1); its pointer records are checked, not read. */
static void load_chunk(struct kr__arena *a, uint32_t cls, uint32_t slots, int64_t *prev,
                       struct kr__cursor *in)
{
    size_t csz = kr__arena_class_bytes(cls);
    uint32_t ord = (uint32_t)kr__cursor_get(in, 4), idx;
    struct kr__area *ar = ord < slots && (int64_t)ord > *prev ? slot_area(a, cls, ord, &idx)
                                                            : NULL;
    const unsigned char *bytes = kr__cursor_take(in, csz);
    if (!ar || !bytes) {
        kr__cursor_fail(in, "the state image is damaged (a chunk out of place)");
        return;
    }
    *prev = ord;
    chunk_in_use(a, ar, idx, bytes, csz);
    skip_words(in, csz);
}

/* A class record that can be: classes ascending, slots for every live chunk, within the
 * image's size limit. */
static bool class_ok(int64_t cls, int64_t last, uint32_t slots, uint32_t nlive)
{
    return cls > last && cls < KR_ARENA_CLASSES && slots && nlive <= slots &&
           (uint64_t)slots * kr__arena_class_bytes((uint32_t)cls) <= KR_IMAGE_MAX_BYTES;
}

/* One class record (after the one of class *last) and its live chunks; false if it is
 * damaged or its area cannot be had. */
static bool load_class(struct kr__arena *a, struct kr__cursor *in, int64_t *last)
{
    int64_t cls = (int64_t)kr__cursor_get(in, 1);
    uint32_t slots = (uint32_t)kr__cursor_get(in, 4), nlive = (uint32_t)kr__cursor_get(in, 4);
    if (!class_ok(cls, *last, slots, nlive)) {
        kr__cursor_fail(in, "the state image is damaged (a class record)");
        return false;
    }
    *last = cls;
    if (!reserve(a, (uint32_t)cls, slots)) {
        kr__cursor_fail(in, "no memory for the state's blocks");
        return false;
    }
    int64_t prev = -1;
    for (uint32_t i = 0; i < nlive && !in->why; i++)
        load_chunk(a, (uint32_t)cls, slots, &prev, in);
    return true;
}

/* Pass 1: the classes' areas and the chunks' bytes; returns the roots that follow them
 * (0: not an image). */
static unsigned load_classes(struct kr__arena *a, struct kr__cursor *in)
{
    uint64_t magic = kr__cursor_get(in, 4);
    if (magic != IMAGE_MAGIC && magic != IMAGE_MAGIC2) {
        kr__cursor_fail(in, "this is not a state image");
        return 0;
    }
    uint32_t ncls = (uint32_t)kr__cursor_get(in, 4);
    int64_t last = -1;
    for (uint32_t k = 0; k < ncls && !in->why; k++)
        if (!load_class(a, in, &last)) return 0;
    return magic == IMAGE_MAGIC2 ? 2 : 1;
}

/* A pointer into a loaded module (the model's code or constants) as an address here. */
static uint64_t module_address(const struct word *x, struct kr__cursor *in)
{
    uintptr_t base;
    if (kr__addrmap_module(x->a, &base)) return base + x->b;
    kr__cursor_fail(in, "the state points into a module (the model's code or constants) "
                        "that is not loaded here");
    return 0;
}

/* The address a word value names here. */
static uint64_t address(const struct kr__arena *a, const struct word *x, struct kr__cursor *in)
{
    if (x->kind == W_NUMBER) return x->a;
    if (x->kind == W_IMAGE) return module_address(x, in);
    uint32_t cls = (uint32_t)x->a, idx;
    size_t csz = kr__arena_class_bytes(cls);
    uint64_t ord = x->b / csz;
    const struct kr__area *ar = slot_area(a, cls, ord, &idx);
    if (ar) return (uint64_t)(uintptr_t)(ar->data + (size_t)idx * csz + x->b % csz);
    if (x->b % csz == 0 && ord && (ar = slot_area(a, cls, ord - 1, &idx))) /* one past */
        return (uint64_t)(uintptr_t)(ar->data + (size_t)(idx + 1) * csz);
    kr__cursor_fail(in, "the state image is damaged (a pointer past its class)");
    return 0;
}

/* Pass 2 for one chunk (at data): its pointer words, made addresses here. */
static void chunk_pointers(struct kr__arena *a, struct kr__cursor *in, char *data)
{
    uint32_t n = (uint32_t)kr__cursor_get(in, 4);
    for (uint32_t j = 0; j < n && !in->why; j++) {
        uint32_t wi = (uint32_t)kr__cursor_get(in, 4);
        struct word x = get_word(in);
        uint64_t v = address(a, &x, in);
        memcpy(data + (size_t)wi * 8, &v, 8);
    }
}

/* Pass 2: the pointer words, now that every class has its areas. */
static void load_pointers(struct kr__arena *a, struct kr__cursor *in)
{
    kr__cursor_get(in, 4); /* (the magic, checked in pass 1) */
    uint32_t ncls = (uint32_t)kr__cursor_get(in, 4);
    for (uint32_t k = 0; k < ncls && !in->why; k++) {
        uint32_t cls = (uint32_t)kr__cursor_get(in, 1);
        kr__cursor_get(in, 4);
        uint32_t nlive = (uint32_t)kr__cursor_get(in, 4);
        size_t csz = kr__arena_class_bytes(cls);
        for (uint32_t i = 0; i < nlive && !in->why; i++) {
            uint32_t idx = 0, ord = (uint32_t)kr__cursor_get(in, 4);
            struct kr__area *ar = slot_area(a, cls, ord, &idx); /* (pass 1 found it) */
            kr__cursor_take(in, csz);
            chunk_pointers(a, in, ar->data + (size_t)idx * csz);
        }
    }
}

/* Pass 2 over the image's used bytes: its pointers, and the roots (r, x), made addresses
 * here. NULL, or what is wrong. */
static const char *second_pass(struct kr__arena *a, const unsigned char *in, size_t used,
                               const struct word *r, const struct word *x, void **root,
                               void **aux)
{
    struct kr__cursor again = { in, in + used, NULL };
    load_pointers(a, &again);
    *root = (void *)(uintptr_t)address(a, r, &again);
    *aux = (void *)(uintptr_t)address(a, x, &again);
    return again.why;
}

size_t kr__image_load(struct kr__arena *a, const unsigned char *in, size_t n, void **root,
                      void **aux, const char **why)
{
    struct kr__cursor c = { in, in + n, NULL };
    unsigned roots = load_classes(a, &c);
    struct word r = get_word(&c), x = { W_NUMBER, 0, 0 };
    if (roots == 2) x = get_word(&c);
    size_t used = (size_t)(c.p - in);
    if (!c.why) c.why = second_pass(a, in, used, &r, &x, root, aux);
    if (!c.why && a->limit && a->used > a->limit)
        c.why = "the state is larger than this run's limit on an LP's memory";
    *why = c.why;
    return c.why ? 0 : used;
}
