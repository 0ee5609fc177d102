/* wrap.c - the C library's heap and memory calls for models linked with the linker's
 * --wrap (KAIROS_WRAP_LINK_FLAGS, docs/state-saving.md): the model's references to malloc,
 * free, memcpy, ... - including the memcpy/memset calls the compiler itself emits for
 * struct copies, which `-include kairos/transparent.h` cannot reach - resolve to these.
 * Inside an LP's handlers they use the LP's arena (rolled back with it) and mark writes;
 * anywhere else (a library constructor, say) they are the C library's. */
#include <stdlib.h>
#include <string.h>
#include "core/core.h"

void *__wrap_malloc(size_t n);
void *__wrap_malloc(size_t n) { return kr__in_lp() ? kr_malloc(n) : malloc(n); }

void *__wrap_calloc(size_t n, size_t size);
void *__wrap_calloc(size_t n, size_t size)
{
    return kr__in_lp() ? kr_calloc(n, size) : calloc(n, size);
}

void *__wrap_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n)
{
    return kr__in_lp() ? kr_realloc(p, n) : realloc(p, n);
}

void __wrap_free(void *p);
void __wrap_free(void *p)
{
    if (kr__in_lp()) kr_free(p); /* a block not from this LP's arena is reported as misuse */
    else free(p);
}

char *__wrap_strdup(const char *s);
char *__wrap_strdup(const char *s) { return kr__in_lp() ? kr_strdup(s) : strdup(s); }

void *__wrap_memcpy(void *d, const void *s, size_t n);
void *__wrap_memcpy(void *d, const void *s, size_t n) { return kr_memcpy(d, s, n); }

void *__wrap_memmove(void *d, const void *s, size_t n);
void *__wrap_memmove(void *d, const void *s, size_t n) { return kr_memmove(d, s, n); }

void *__wrap_memset(void *d, int c, size_t n);
void *__wrap_memset(void *d, int c, size_t n) { return kr_memset(d, c, n); }
