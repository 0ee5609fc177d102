/* blob.h - per-thread recycling of variable-size buffers (checkpoints): free lists per
 * 64-byte size step up to 8 KiB, malloc beyond. Keeps checkpointing free of malloc calls in
 * the steady state.
 */
#ifndef KR_STATE_BLOB_H
#define KR_STATE_BLOB_H

#include <stddef.h>

#define KR_BLOB_STEP 64u
#define KR_BLOB_LISTS 128u

struct kr__blobs {
    void *free[KR_BLOB_LISTS];
    size_t held;     /* bytes handed out and not returned */
    size_t peak;
};

void kr__blobs_init(struct kr__blobs *b);
void kr__blobs_destroy(struct kr__blobs *b);
/* A buffer of at least `bytes`; the caller remembers `bytes` to give it back. */
void *kr__blob_get(struct kr__blobs *b, size_t bytes);
void kr__blob_put(struct kr__blobs *b, void *p, size_t bytes);

#endif
