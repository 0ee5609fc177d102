/* arena.h - per-LP memory arena: power-of-two size classes, each served by a chain of areas
 * with in-use bitmaps (the DyMeLoR design). An LP's whole state lives here, so the engine can
 * checkpoint and restore it without the model's help. Areas start small and double, so a
 * tiny state costs tens of bytes, not a page.
 */
#ifndef KR_STATE_ARENA_H
#define KR_STATE_ARENA_H

#include <stddef.h>
#include <stdint.h>

#define KR_ARENA_MIN_SHIFT 4      /* smallest chunk: 16 bytes */
#define KR_ARENA_CLASSES 23       /* largest chunk: 64 MiB */

struct kr__area {
    struct kr__area *next;        /* next area of the same class */
    char *data;                   /* nchunks * (16 << cls) bytes, 16-aligned */
    uint32_t cls;
    uint32_t nchunks;
    uint32_t nused;
    uint32_t nwords;              /* bitmap words */
    uint32_t index;               /* creation order within the arena */
    uint32_t rank;                /* position in its class's list: with cls, names the area
                                   * independently of creation order (state hashing) */
    uint64_t bits[];
};

struct kr__arena {
    struct kr__area *head[KR_ARENA_CLASSES];
    struct kr__area **areas;      /* creation order */
    struct kr__area **sorted;     /* by data address, for free() and pointer lookup */
    uint32_t n, cap;
    size_t used;                  /* chunk bytes in use */
    size_t held;                  /* bytes of all areas */
    size_t limit;                 /* on `used`; 0 = unlimited */
};

/* Failure codes of kr__arena_alloc / kr__arena_free. */
enum { KR_ARENA_OK = 0, KR_ARENA_EXHAUSTED, KR_ARENA_TOO_BIG, KR_ARENA_BAD_PTR, KR_ARENA_NOMEM };

void kr__arena_init(struct kr__arena *a, size_t limit);
void kr__arena_destroy(struct kr__arena *a);
/* Zero-filled chunk of at least `size` bytes, or NULL with *err set. */
void *kr__arena_alloc(struct kr__arena *a, size_t size, int *err);
int kr__arena_free(struct kr__arena *a, void *p);
/* Usable size of an allocated chunk, 0 if `p` is not one. */
size_t kr__arena_chunk_size(const struct kr__arena *a, const void *p);
/* Hash of the live contents, with pointers into this arena replaced by (class, rank,
 * offset), so the same logical state hashes the same in every engine and run, however its
 * areas came to be (a rolled-back run may have created one early and left it empty). */
uint64_t kr__arena_hash(const struct kr__arena *a, const void *root);

static inline size_t kr__arena_class_bytes(uint32_t cls)
{
    return (size_t)1 << (cls + KR_ARENA_MIN_SHIFT);
}

#endif
