/* blob.c - see blob.h. Free buffers are chained through their first word. */
#include "state/blob.h"
#include <stdlib.h>
#include "base/error.h"

void kr__blobs_init(struct kr__blobs *b)
{
    for (unsigned i = 0; i < KR_BLOB_LISTS; i++) b->free[i] = NULL;
    b->held = b->peak = 0;
}

void kr__blobs_destroy(struct kr__blobs *b)
{
    for (unsigned i = 0; i < KR_BLOB_LISTS; i++) {
        void *p = b->free[i];
        while (p) {
            void *n = *(void **)p;
            free(p);
            p = n;
        }
        b->free[i] = NULL;
    }
}

static size_t list_of(size_t bytes)
{
    return (bytes + KR_BLOB_STEP - 1) / KR_BLOB_STEP - 1;
}

void *kr__blob_get(struct kr__blobs *b, size_t bytes)
{
    size_t l = list_of(bytes);
    void *p;
    if (l < KR_BLOB_LISTS && b->free[l]) {
        p = b->free[l];
        b->free[l] = *(void **)p;
    } else {
        size_t sz = (l + 1) * KR_BLOB_STEP;
        p = aligned_alloc(KR_BLOB_STEP, sz);
        if (!p) kr__fatal_oom("checkpoint buffer", sz);
    }
    b->held += bytes;
    if (b->held > b->peak) b->peak = b->held;
    return p;
}

void kr__blob_put(struct kr__blobs *b, void *p, size_t bytes)
{
    size_t l = list_of(bytes);
    b->held -= bytes;
    if (l < KR_BLOB_LISTS) {
        *(void **)p = b->free[l];
        b->free[l] = p;
    } else {
        free(p);
    }
}
