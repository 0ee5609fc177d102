/* ckpt.h - checkpoint and restore of an LP: its arena's live chunks plus a few words of
 * engine bookkeeping (RNG, send count, state root). This is the interface incremental and
 * page-tracked state saving plug into: take, restore, release.
 */
#ifndef KR_STATE_CKPT_H
#define KR_STATE_CKPT_H

#include <stdint.h>
#include "arena.h"
#include "blob.h"

#define KR_CKPT_WORDS 4

struct kr__ckpt {
    uint32_t bytes;        /* whole buffer, header included */
    uint32_t nareas;       /* areas that existed when taken */
    uint64_t words[KR_CKPT_WORDS];
    unsigned char data[];
};

struct kr__ckpt *kr__ckpt_take(struct kr__blobs *b, const struct kr__arena *a,
                               const uint64_t words[KR_CKPT_WORDS]);
void kr__ckpt_restore(struct kr__arena *a, const struct kr__ckpt *c,
                      uint64_t words[KR_CKPT_WORDS]);
static inline void kr__ckpt_release(struct kr__blobs *b, struct kr__ckpt *c)
{
    kr__blob_put(b, c, c->bytes);
}

#endif
