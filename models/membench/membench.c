/* membench.c - the memory-management benchmark of ROOT-Sim (paper 004, section 4), a PHOLD
 * variant whose LP state is dynamic memory: N linked lists of buffers, list i holding
 * buffers of size(i), sizes spread linearly from `min` to `max`; at start S/N bytes go to
 * each list (so small buffers are more numerous). Two events:
 *   DEALLOCATE (each LP reschedules its own, exponential gaps): free a random buffer of a
 *     random list and send ALLOCATE(that size) to a random LP at the same virtual time -
 *     buffers migrate between LPs while the total stays constant;
 *   ALLOCATE(i): allocate a buffer of size(i) and link it into list i.
 * Every event then visits the lists breadth-first from a random list, one untouched buffer
 * per list in turn, touching `span` x S bytes: writing (memset) a `write_ratio` share of
 * them and reading (memcpy) the rest. Small `span` = high locality.
 *
 * Writes are marked (kr_touch, kr_memset), so the model runs with every --state mode. */
#include <string.h>
#include "kairos.h"

#define MB_MAX_LISTS 64

enum { DEALLOCATE, ALLOCATE };

struct buf {
    struct buf *next;
    uint32_t size;          /* bytes of the block, header included */
    uint32_t stamp;         /* event count when last written */
    unsigned char data[];
};

struct mb_state {
    struct buf *head[MB_MAX_LISTS];
    uint32_t count[MB_MAX_LISTS];
    uint64_t events, allocs, frees, written, read;
    uint64_t sum;           /* checksum of what reads saw */
};

struct mb_params {
    int lists;
    size_t min, max, state;
    double span, write_ratio, dealloc_mean;
};

static const struct kr_param mb_params[] = {
    { "lists", KR_PARAM_INT, "8", "N: buffer lists per LP", 1, MB_MAX_LISTS },
    { "min", KR_PARAM_INT, "32", "smallest buffer, bytes (>= 24)", 0, 0 },
    { "max", KR_PARAM_INT, "4096", "largest buffer, bytes", 0, 0 },
    { "state", KR_PARAM_INT, "10240", "S: initial state per LP, bytes of buffers", 0, 0 },
    { "span", KR_PARAM_DOUBLE, "0.4", "x/S: share of the state touched by each event", 0, 1 },
    { "write_ratio", KR_PARAM_DOUBLE, "1.0", "share of touched buffers written (rest read)", 0, 1 },
    { "dealloc_mean", KR_PARAM_DOUBLE, "1.0", "mean gap between an LP's deallocations", 0, 0 },
    { 0 },
};

static const struct mb_params *params(void)
{
    static __thread struct mb_params p;
    static __thread int loaded;
    if (loaded) return &p;
    p.lists = (int)kr_param_int("lists", 8);
    p.min = (size_t)kr_param_int("min", 32);
    p.max = (size_t)kr_param_int("max", 4096);
    p.state = (size_t)kr_param_int("state", 10240);
    p.span = kr_param_double("span", 0.4);
    p.write_ratio = kr_param_double("write_ratio", 1.0);
    p.dealloc_mean = kr_param_double("dealloc_mean", 1.0);
    /* (lists, span and write_ratio: the table's ranges, checked before the run) */
    if (p.min < sizeof(struct buf) + 8 || p.max < p.min)
        kr_error("min=%zu, max=%zu: need %zu <= min <= max", p.min, p.max, sizeof(struct buf) + 8);
    if (!(p.dealloc_mean > 0)) kr_error("dealloc_mean must be positive");
    loaded = 1;
    return &p;
}

static size_t size_of(const struct mb_params *p, int i)
{
    return p->lists == 1 ? p->min : p->min + (p->max - p->min) * (size_t)i / (size_t)(p->lists - 1);
}

static void push(struct mb_state *s, int i, size_t size)
{
    struct buf *b = kr_malloc(size); /* zero-filled and marked by the allocator */
    b->size = (uint32_t)size;
    b->next = s->head[i];
    kr_touch(s, sizeof *s);
    s->head[i] = b;
    s->count[i]++;
}

static void mb_init(kr_lp me)
{
    const struct mb_params *p = params();
    struct mb_state *s = kr_malloc(sizeof *s);
    kr_set_state(s);
    for (int i = 0; i < p->lists; i++) {
        size_t sz = size_of(p, i), share = p->state / (size_t)p->lists;
        for (size_t n = (share + sz - 1) / sz; n > 0; n--) push(s, i, sz);
    }
    kr_schedule(me, kr_expo(p->dealloc_mean), DEALLOCATE, NULL, 0);
}

/* Breadth-first visit touching about span * S bytes of buffer data. */
static void visit(struct mb_state *s, const struct mb_params *p)
{
    struct buf *cur[MB_MAX_LISTS];
    memcpy(cur, s->head, sizeof cur);
    size_t left = (size_t)(p->span * (double)p->state);
    int i = (int)(kr_random_u64() % (uint64_t)p->lists), idle = 0;
    unsigned char scratch[4096];
    uint64_t written = 0, read = 0, sum = 0;
    while (left > 0 && idle < p->lists) {
        struct buf *b = cur[i];
        if (!b) {
            idle++;
        } else {
            idle = 0;
            cur[i] = b->next;
            size_t n = b->size - sizeof *b;
            if (n > left) n = left;
            left -= n;
            if (kr_random() < p->write_ratio) {
                kr_touch(b, sizeof *b);
                b->stamp = (uint32_t)s->events;
                kr_memset(b->data, (int)(s->events & 0xff), n);
                written += n;
            } else {
                for (size_t off = 0; off < n; off += sizeof scratch) {
                    size_t m = n - off < sizeof scratch ? n - off : sizeof scratch;
                    memcpy(scratch, b->data + off, m);
                    sum = sum * 31 + scratch[m / 2] + b->stamp;
                }
                read += n;
            }
        }
        i = (i + 1) % p->lists;
    }
    s->written += written;
    s->read += read;
    s->sum = s->sum * 1099511628211ull + sum;
}

static void deallocate(kr_lp me, kr_time now, struct mb_state *s, const struct mb_params *p)
{
    int i = (int)(kr_random_u64() % (uint64_t)p->lists);
    if (s->count[i]) {
        struct buf **at = &s->head[i];
        for (uint64_t k = kr_random_u64() % s->count[i]; k > 0; k--) at = &(*at)->next;
        struct buf *dead = *at;
        kr_touch(at, sizeof *at);
        *at = dead->next;
        s->count[i]--;
        s->frees++;
        kr_free(dead);
        uint32_t list = (uint32_t)i;
        kr_schedule(kr_random_u64() % kr_lp_count(), now, ALLOCATE, &list, sizeof list);
    }
    kr_schedule(me, now + kr_expo(p->dealloc_mean), DEALLOCATE, NULL, 0);
}

static void mb_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                     void *state)
{
    const struct mb_params *p = params();
    struct mb_state *s = state;
    kr_touch(s, sizeof *s);
    s->events++;
    if (type == DEALLOCATE) {
        deallocate(me, now, s, p);
    } else {
        uint32_t list;
        if (size != sizeof list) kr_error("ALLOCATE event with a %zu-byte payload", size);
        memcpy(&list, payload, sizeof list);
        push(s, (int)list, size_of(p, (int)list));
        s->allocs++;
    }
    visit(s, p);
}

static void mb_finish(kr_lp me, void *state)
{
    const struct mb_params *p = params();
    const struct mb_state *s = state;
    uint64_t bufs = 0, bytes = 0;
    for (int i = 0; i < p->lists; i++) {
        bufs += s->count[i];
        bytes += s->count[i] * size_of(p, i);
    }
    kr_printf("membench LP %llu: events %llu, allocs %llu, frees %llu, buffers %llu (%llu bytes), "
              "written %llu, read %llu, checksum %016llx\n", (unsigned long long)me,
              (unsigned long long)s->events, (unsigned long long)s->allocs,
              (unsigned long long)s->frees, (unsigned long long)bufs, (unsigned long long)bytes,
              (unsigned long long)s->written, (unsigned long long)s->read,
              (unsigned long long)s->sum);
}

static const struct kr_model membench_model = {
    .name = "membench",
    .init = mb_init,
    .event = mb_event,
    .finish = mb_finish,
    .params = mb_params,
    .flags = KR_MODEL_MARKS_WRITES,
};

KR_MODEL_EXPORT(membench, membench_model)
