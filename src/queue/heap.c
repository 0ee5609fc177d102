/* heap.c - growth and teardown of the event heap (the hot operations are inline in heap.h). */
#include "heap.h"
#include <stdlib.h>
#include "../core/error.h"

void kr__heap_init(struct kr__heap *h)
{
    h->n = 0;
    h->cap = 0;
    h->a = NULL;
}

void kr__heap_grow(struct kr__heap *h)
{
    size_t cap = h->cap ? h->cap * 2 : 1024;
    struct kr__heap_slot *a = realloc(h->a, cap * sizeof *a);
    if (!a) kr__fatal_oom("event heap", cap * sizeof *a);
    h->a = a;
    h->cap = cap;
}

void kr__heap_destroy(struct kr__heap *h)
{
    free(h->a);
    kr__heap_init(h);
}

static void sift_down(struct kr__heap *h, size_t i)
{
    struct kr__heap_slot x = h->a[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && kr__slot_lt(&h->a[c + 1], &h->a[c])) c++;
        if (!kr__slot_lt(&h->a[c], &x)) break;
        h->a[i] = h->a[c];
        i = c;
    }
    h->a[i] = x;
}

void kr__heap_rebuild(struct kr__heap *h)
{
    for (size_t i = h->n / 2; i-- > 0;) sift_down(h, i);
}
