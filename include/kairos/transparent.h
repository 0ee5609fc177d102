/* kairos/transparent.h - plain C heap and memory calls for Kairos models. Compile a model
 * with `-include kairos/transparent.h` and its malloc, calloc, realloc, free and strdup
 * come from the LP's arena (saved, restored and rolled back with the rest of the state;
 * allocation and release are rolled back too), and memcpy, memmove and memset into the
 * state are marked for --state chunk. Only in model sources: the engine and libraries keep
 * the C library's.
 *
 * Plain stores (s->x = 1) still need kr_touch/KR_WRITE under --state chunk, or the
 * instrumented build (docs/guide.md); --state page and buddy need neither. */
#ifndef KAIROS_TRANSPARENT_H
#define KAIROS_TRANSPARENT_H

#include <stdlib.h>
#include <string.h>
#include "../kairos.h"

#undef malloc
#undef calloc
#undef realloc
#undef free
#undef strdup
#undef memcpy
#undef memmove
#undef memset
#define malloc(n) kr_malloc(n)
#define calloc(n, s) kr_calloc(n, s)
#define realloc(p, n) kr_realloc(p, n)
#define free(p) kr_free(p)
#define strdup(s) kr_strdup(s)
#define memcpy(d, s, n) kr_memcpy(d, s, n)
#define memmove(d, s, n) kr_memmove(d, s, n)
#define memset(d, c, n) kr_memset(d, c, n)

#endif
