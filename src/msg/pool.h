/* pool.h - per-thread event pools: size-classed slabs, last-in-first-out free lists.
 *
 * No locks and no malloc per event: a thread takes and returns events to its own pool. An
 * event freed by a thread other than its allocator goes into the freeing thread's pool (it
 * is hot in that thread's cache); pools only grow by whole slabs.
 */
#ifndef KR_MSG_POOL_H
#define KR_MSG_POOL_H

#include <stddef.h>
#include "event.h"

#define KR_POOL_CLASSES 4
#define KR_POOL_SMALL_EVENT 128u   /* class 0: the common event fits two cache lines */
/* Largest payload of a class-0 event. */
#define KR_POOL_SMALL_PAYLOAD (KR_POOL_SMALL_EVENT - sizeof(struct kr__ev))
_Static_assert(sizeof(struct kr__ev) == 96, "event header layout changed: check pool classes");

struct kr__pool {
    struct kr__ev *free[KR_POOL_CLASSES];
    void **slabs;          /* every slab, for teardown */
    size_t nslabs, capslabs;
    size_t bytes;          /* slab bytes held */
    size_t live;           /* events handed out and not returned (this pool's view) */
};

void kr__pool_init(struct kr__pool *p);
void kr__pool_destroy(struct kr__pool *p);
struct kr__ev *kr__pool_refill(struct kr__pool *p, unsigned cls);
unsigned kr__pool_class(size_t payload);

static inline struct kr__ev *kr__pool_get(struct kr__pool *p, size_t payload)
{
    unsigned c = payload <= KR_POOL_SMALL_PAYLOAD ? 0 : kr__pool_class(payload);
    struct kr__ev *e = p->free[c];
    if (__builtin_expect(e == NULL, 0)) e = kr__pool_refill(p, c);
    p->free[c] = e->next;
    p->live++;
    return e;
}

static inline void kr__pool_put(struct kr__pool *p, struct kr__ev *e)
{
    e->st = KR_EV_FREE;
    e->next = p->free[e->cls];
    p->free[e->cls] = e;
    p->live--;
}

#endif
