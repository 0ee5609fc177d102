/* arena.h - per-LP memory arena: power-of-two size classes, each served by a chain of areas
 * with in-use bitmaps (the DyMeLoR design). An LP's whole state lives here, so the engine can
 * checkpoint and restore it without the model's help. Areas start small and double, so a
 * tiny state costs tens of bytes, not a page.
 */
#ifndef KR_STATE_ARENA_H
#define KR_STATE_ARENA_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "state/mode.h"
#include "state/seg.h"

#define KR_ARENA_MIN_SHIFT 4      /* smallest chunk: 16 bytes */
#define KR_ARENA_CLASSES 23       /* largest chunk: 64 MiB */

struct kr__area {
    char *data;                   /* nchunks * (16 << cls) bytes, 16-aligned */
    uint32_t next;                /* creation index of the next area of the same class, 0
                                   * for none (index 0, the arena's first, heads its class) */
    uint32_t nused;
    uint32_t first;               /* ordinal of its first chunk among all chunks of its
                                   * class: (class, ordinal) names a chunk independently of
                                   * how areas are sized (state hashing, every mode alike) */
    uint8_t lg;                   /* log2 of its number of chunks (always a power of two) */
    uint8_t cls;
    uint8_t flags;                /* KR_AF_*: metadata bookkeeping of checkpoints */
    uint64_t bits[];              /* use bitmap; tracked modes add a dirty bitmap (chunk
                                   * mode) and a scratch bitmap (restore), see KR_AREA_* */
};

enum { KR_AF_META_DIRTY = 1, KR_AF_META_MARK = 2 };

/* An area's header is 24 bytes, so that with one bitmap word the chunks start 32 bytes in:
 * millions of LPs hold one small area each (PHOLD at 1 M LPs: 160 -> 112 bytes of heap
 * with a 40-byte header, then 112 -> 80 with this one and an 8-byte canary). */
_Static_assert(sizeof(struct kr__area) == 24, "keep the area header at 24 bytes");

static inline uint32_t kr__area_nchunks(const struct kr__area *ar)
{
    return 1u << ar->lg;
}

/* Bitmap words of an area (one bit a chunk). */
#define KR_AREA_NWORDS(ar) ((kr__area_nchunks(ar) + 63) / 64)
#define KR_AREA_USE(ar) ((ar)->bits)
#define KR_AREA_DIRTY(ar) ((ar)->bits + KR_AREA_NWORDS(ar))
#define KR_AREA_MARK(ar) ((ar)->bits + 2 * (size_t)KR_AREA_NWORDS(ar))

/* An arena lives in every LP, so it is kept small (millions of LPs): a class's first area
 * is named by its creation index, not a pointer, both area lists share one block, and an
 * arena of one area - most LPs, whose state is one allocation - has no list at all. */
#define KR_ARENA_FIRST_FAR 255    /* first[cls]: index too large to keep, search `areas` */
struct kr__arena {
    union {
        struct kr__area **areas;  /* cap > 0: creation order; then `cap` more, by data
                                   * address (for free() and pointer lookup) */
        struct kr__area *one;     /* cap == 0: the only area, if n == 1 */
    };
    uint32_t n, cap;
    size_t used;                  /* chunk bytes in use */
    size_t limit;                 /* on `used`; 0 = unlimited */
    struct kr__seg *seg;          /* tracked modes: the LP's slice, where areas are carved */
    uint8_t mode;                 /* enum kr__state_mode: its entry in the table (mode.h) */
    uint8_t first[KR_ARENA_CLASSES]; /* per class: creation index + 1 of its first area (0:
                                   * none); its next ones follow through `next` */
};

/* The model marks its writes in this arena (chunk mode): it keeps dirty bits per chunk. */
static inline bool kr__arena_marks(const struct kr__arena *a)
{
    return kr__state_ops(a->mode)->marks;
}

/* Its areas are carved from the LP's slice, in whole pages (the incremental modes). */
static inline bool kr__arena_sliced(const struct kr__arena *a)
{
    return kr__state_ops(a->mode)->region;
}

/* The i-th area in creation order. */
static inline struct kr__area *kr__arena_area(const struct kr__arena *a, uint32_t i)
{
    return a->cap ? a->areas[i] : a->one;
}

/* The i-th area by data address. */
static inline struct kr__area *kr__arena_sorted(const struct kr__arena *a, uint32_t i)
{
    return a->cap ? a->areas[a->cap + i] : a->one;
}

/* Failure codes of kr__arena_alloc / kr__arena_free. */
enum { KR_ARENA_OK = 0, KR_ARENA_EXHAUSTED, KR_ARENA_TOO_BIG, KR_ARENA_BAD_PTR, KR_ARENA_NOMEM,
       KR_ARENA_MAPS /* the kernel's limit on mappings (vm.max_map_count) */ };

/* Full mode: areas are packed malloc blocks (a tiny state costs tens of bytes). Tracked
 * modes: areas are carved from `seg`, page-aligned, in whole pages. */
void kr__arena_init(struct kr__arena *a, size_t limit, int mode, struct kr__seg *seg);
void kr__arena_destroy(struct kr__arena *a);
/* Bytes of chunks in every arena's areas, all LPs of the process (--memory-max): areas
 * only grow until the arena is destroyed. */
extern _Atomic size_t kr__area_bytes;

/* Zero-filled chunk of at least `size` bytes, or NULL with *err set. */
void *kr__arena_alloc(struct kr__arena *a, size_t size, int *err);
int kr__arena_free(struct kr__arena *a, void *p);
/* Usable size of an allocated chunk, 0 if `p` is not one. */
size_t kr__arena_chunk_size(const struct kr__arena *a, const void *p);
/* A state word the hash could not name (addrmap.h): the first one found. */
struct kr__alien {
    bool found;
    uint64_t word;
    size_t offset, block;   /* byte offset in its block, the block's size */
    char where[80];         /* the mapping it points into */
};

/* Hash of the live contents, with pointers into this arena replaced by (class, position)
 * and pointers into the program image by (module, offset), so the same logical state hashes
 * the same in every engine, state-saving mode and run, however its areas came to be (a
 * rolled-back run may have created one early and left it empty; tracked modes size areas in
 * whole pages) and wherever the loader put the program. Allocation is first-fit by ordinal
 * in every layout, so ordinals agree. `alien` (may be NULL) gets the first word that points
 * into other mapped memory, which no hash can name. */
uint64_t kr__arena_hash(const struct kr__arena *a, const void *root, struct kr__alien *alien);
/* The same search for such a word without hashing (--check, after every event). */
void kr__arena_find_alien(const struct kr__arena *a, struct kr__alien *alien);
/* For state images (image.c): a class's areas in ordinal order, the area holding address
 * p (NULL: none), and a new area of class cls of n chunks (a power of two; tracked modes
 * round it up to whole pages), after the class's others. */
struct kr__area *kr__arena_class_first(const struct kr__arena *a, uint32_t cls);
struct kr__area *kr__arena_class_next(const struct kr__arena *a, const struct kr__area *ar);
struct kr__area *kr__arena_find(const struct kr__arena *a, const void *p);
struct kr__area *kr__arena_grow(struct kr__arena *a, uint32_t cls, uint32_t n, int *err);
/* Full mode: the first area whose end was written past (a model writing beyond its last
 * block), or NULL. Reads only: safe in a signal handler. */
const struct kr__area *kr__arena_overrun(const struct kr__arena *a);
/* Chunk mode: mark the chunks overlapping [p, p+n) dirty (p may be anywhere; bytes outside
 * this arena's areas are ignored). */
void kr__arena_mark(struct kr__arena *a, const void *p, size_t n);

static inline size_t kr__arena_class_bytes(uint32_t cls)
{
    return (size_t)1 << (cls + KR_ARENA_MIN_SHIFT);
}

#endif
