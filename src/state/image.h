/* image.h - an LP's state in a form that does not depend on where its memory lies: the
 * basis of whole-run snapshots (issue 17). Every live chunk of the LP's arena is written by
 * (class, ordinal), with each word that points into the arena written as (class, position)
 * and each that points into the program image as (module, offset) - the names the state
 * hash gives them (arena.h). Loaded into an empty arena, wherever it lies, in any engine
 * and state mode, it is the same state: the same hash, the same pointers between its
 * blocks, the same ordinals for the blocks allocated next.
 *
 * As for the hash, a word is a pointer when its value lies in the arena (or one past the
 * end of an area); a number that happens to equal such an address is taken for a pointer
 * too - an address-sized integer in a live chunk of the same arena, which a model does not
 * store by chance. A word that points into other mapped memory (the C library heap, a
 * stack, another LP) cannot be saved: kr__image_save says which.
 */
#ifndef KR_STATE_IMAGE_H
#define KR_STATE_IMAGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "state/arena.h"

/* A growing byte buffer; `oom` once an append failed (the rest are dropped). */
struct kr__bytes {
    unsigned char *p;
    size_t n, cap;
    bool oom;
};
void kr__bytes_put(struct kr__bytes *b, const void *p, size_t n);
void kr__bytes_free(struct kr__bytes *b);

/* A bounded reader of bytes (images, snapshot files): past the end, or once failed, it
 * yields nothing and keeps its first reason. */
struct kr__cursor {
    const unsigned char *p, *end;
    const char *why; /* NULL: no problem yet */
};
void kr__cursor_fail(struct kr__cursor *in, const char *why);
/* The next n bytes, or NULL (truncated: `why` says so). */
const unsigned char *kr__cursor_take(struct kr__cursor *in, size_t n);
/* The next n (<= 8) bytes as a number (0 once past the end). */
uint64_t kr__cursor_get(struct kr__cursor *in, size_t n);

/* Append the image of arena a with state root `root` and the engine's root `aux` (NULL:
 * none; core/timer.h) to out. False if a live word points into memory no image can name
 * (`alien` says which and where), or out->oom. */
bool kr__image_save(const struct kr__arena *a, const void *root, const void *aux,
                    struct kr__bytes *out, struct kr__alien *alien);

/* Load the image at the start of in[0, n) into a, which must hold nothing yet; *root gets
 * the state root. Returns the bytes the image took, or 0 with *why set: a damaged or
 * truncated image, a module it points into that is not loaded here, a state over the
 * arena's limit, or no memory. After a failure a holds part of the state: destroy it.
 * *aux gets the engine's root (NULL if the image has none). */
size_t kr__image_load(struct kr__arena *a, const unsigned char *in, size_t n, void **root,
                      void **aux, const char **why);

#endif
