/* marks.c - write marking for --state chunk: kr_touch and the writing helpers, and the
 * store callbacks of the instrumented model build. The compiler pass is GCC's (or Clang's)
 * kernel-address sanitizer instrumentation, told to call out on every store and to do
 * nothing else (no shadow memory, no runtime):
 *   -fsanitize=kernel-address --param asan-instrument-reads=0 --param asan-stack=0
 *   --param asan-globals=0 --param asan-instrumentation-with-call-threshold=0
 * Every store of the model then calls __asan_storeN_noabort(address), which marks the
 * chunk when the address is in the running LP's state (stack and other stores cost a range
 * test). In other modes every call is a test and a return. */
#include "base/sanitize.h"
#include <string.h>
#include "core/core.h"

/* Set once before a run in chunk mode: other modes return before touching the LP (whose
 * arena fields are on a cold cache line: reading them cost PHOLD-std one miss per event). */
bool kr__chunk_marking;

/* The running LP's arena if it tracks chunks, else NULL. */
static inline struct kr__arena *chunk_arena(void)
{
    if (!kr__chunk_marking) return NULL;
    struct kr__lp *lp = kr__ctx.lp;
    return lp && kr__arena_marks(&lp->arena) ? &lp->arena : NULL;
}

void kr_touch(void *p, size_t n)
{
    struct kr__arena *a = chunk_arena();
    if (a) kr__arena_mark(a, p, n);
}

void *kr_memcpy(void *dst, const void *src, size_t n)
{
    kr_touch(dst, n);
    return memcpy(dst, src, n);
}

void *kr_memmove(void *dst, const void *src, size_t n)
{
    kr_touch(dst, n);
    return memmove(dst, src, n);
}

void *kr_memset(void *dst, int c, size_t n)
{
    kr_touch(dst, n);
    return memset(dst, c, n);
}

char *kr_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = kr_malloc(n);
    if (d) memcpy(d, s, n); /* a fresh block is marked by the allocation */
    return d;
}

/* Store callbacks of the instrumented build. Not in sanitizer builds of Kairos itself,
 * where the AddressSanitizer runtime defines these names (base/sanitize.h). */
#if !defined(KR_ASAN)
static inline void store(const void *p, size_t n)
{
    struct kr__arena *a = chunk_arena();
    if (!a) return;
    const struct kr__seg *s = a->seg;
    if ((const char *)p < s->base || (const char *)p >= s->base + s->top) return; /* stack */
    kr__arena_mark(a, p, n);
}

#define KR_STORE(n)                                                                 \
    void __asan_store##n##_noabort(void *p);                                        \
    void __asan_store##n##_noabort(void *p) { store(p, n); }                        \
    void __asan_store##n(void *p);                                                  \
    void __asan_store##n(void *p) { store(p, n); }
KR_STORE(1)
KR_STORE(2)
KR_STORE(4)
KR_STORE(8)
KR_STORE(16)

void __asan_storeN_noabort(void *p, long n);
void __asan_storeN_noabort(void *p, long n) { store(p, (size_t)n); }
void __asan_storeN(void *p, long n);
void __asan_storeN(void *p, long n) { store(p, (size_t)n); }
void __asan_handle_no_return(void);
void __asan_handle_no_return(void) {}
#endif
