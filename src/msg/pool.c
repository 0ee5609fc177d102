/* pool.c - slab refill and teardown for the per-thread event pools (see pool.h). */
#include "pool.h"
#include <stdlib.h>
#include "../core/error.h"

/* Event sizes per class: 96-byte header + payload (class 0: up to 32 bytes of payload in two
 * cache lines; class 3: KR_PAYLOAD_MAX). */
static const size_t class_bytes[KR_POOL_CLASSES] = { KR_POOL_SMALL_EVENT, 256, 512, 1152 };
_Static_assert(96 + KR_PAYLOAD_MAX <= 1152, "largest pool class must hold KR_PAYLOAD_MAX");
#define SLAB_BYTES (64u * 1024u)

unsigned kr__pool_class(size_t payload)
{
    size_t need = sizeof(struct kr__ev) + payload;
    for (unsigned c = 0; c < KR_POOL_CLASSES; c++)
        if (need <= class_bytes[c]) return c;
    return KR_POOL_CLASSES - 1; /* callers check KR_PAYLOAD_MAX before */
}

void kr__pool_init(struct kr__pool *p)
{
    memset(p, 0, sizeof *p);
}

struct kr__ev *kr__pool_refill(struct kr__pool *p, unsigned cls)
{
    size_t sz = class_bytes[cls];
    size_t slab = SLAB_BYTES > sz * 8 ? SLAB_BYTES : sz * 8;
    char *mem = aligned_alloc(64, slab);
    if (!mem) kr__fatal_oom("event pool slab", slab);
    if (p->nslabs == p->capslabs) {
        p->capslabs = p->capslabs ? p->capslabs * 2 : 16;
        p->slabs = realloc(p->slabs, p->capslabs * sizeof *p->slabs);
        if (!p->slabs) kr__fatal_oom("event pool index", p->capslabs * sizeof *p->slabs);
    }
    p->slabs[p->nslabs++] = mem;
    p->bytes += slab;
    struct kr__ev *head = NULL;
    for (size_t off = slab / sz; off-- > 0;) {
        struct kr__ev *e = (struct kr__ev *)(mem + off * sz);
        e->cls = (uint8_t)cls;
        e->st = KR_EV_FREE;
        e->next = head;
        head = e;
    }
    p->free[cls] = head;
    return head;
}

void kr__pool_destroy(struct kr__pool *p)
{
    for (size_t i = 0; i < p->nslabs; i++) free(p->slabs[i]);
    free(p->slabs);
    memset(p, 0, sizeof *p);
}
