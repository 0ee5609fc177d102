/* grow.c - see grow.h. */
#include "base/grow.h"
#include <stdint.h>
#include <stdlib.h>
#include "base/error.h"

void *kr__grow(void *p, size_t *cap, size_t need, size_t elem, size_t first, const char *what)
{
    if (need <= *cap) return p;
    size_t n = *cap ? *cap : first ? first : 1;
    while (n < need) {
        if (n > SIZE_MAX / 2) kr__fatal_oom(what, SIZE_MAX);
        n *= 2;
    }
    if (n > SIZE_MAX / elem) kr__fatal_oom(what, SIZE_MAX);
    void *q = realloc(p, n * elem);
    if (!q) kr__fatal_oom(what, n * elem);
    *cap = n;
    return q;
}
