/* heap.c - growth and teardown of the event heap (the hot operations are inline in heap.h). */
#include "queue/heap.h"
#include <stdlib.h>
#include "base/grow.h"
#include "base/error.h"

void kr__heap_init(struct kr__heap *h)
{
    h->n = 0;
    h->cap = 0;
    h->a = NULL;
}

void kr__heap_grow(struct kr__heap *h)
{
    KR_GROW(h->a, h->cap, h->cap + 1, 1024, "event heap");
}

void kr__heap_destroy(struct kr__heap *h)
{
    free(h->a);
    kr__heap_init(h);
}

void kr__heap_rebuild(struct kr__heap *h)
{
    for (size_t i = h->n / 2; i-- > 0;) kr__heap_sift_down(h, i, h->a[i]);
}
