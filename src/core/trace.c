/* trace.c - --trace: the committed history, collected where every engine commits an event
 * (kr__lp_commit_event), or (--trace-mode run) spans of what each thread did when. Each
 * thread that commits keeps the `limit` least keys it has committed in a max-heap of its own
 * (no lock, no shared line per event); at the end the threads' heaps together hold the run's
 * `limit` least committed keys, whatever thread committed them and in whatever order
 * (run/report.c sorts and writes them). */
#include "core/trace.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "state/addrmap.h"
#include "base/clock.h"
#include "base/digest.h"
#include "base/error.h"

struct trace_buf {
    struct kr__trace_rec *a;  /* max-heap by key */
    struct kr__span *s;       /* --trace-mode run: its spans, in the order taken */
    size_t n, cap;
    uint64_t dropped;         /* what it did not keep (full) */
    uint32_t tid;             /* the order threads first recorded: a viewer's track */
    struct trace_buf *next;
};

bool kr__trace_on, kr__trace_run;
static uint64_t t_start;
static uint32_t nbufs;
static size_t limit;
static pthread_mutex_t bufs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct trace_buf *bufs;
static _Atomic unsigned epoch;       /* (a thread's buffer from an earlier run is not this one's) */
static __thread struct trace_buf *mine;
static __thread unsigned mine_epoch;

uint64_t kr__trace_now(void)
{
    return kr__clock_ns() - t_start;
}

void kr__trace_start(size_t max_events, bool run)
{
    kr__trace_free();
    limit = max_events;
    epoch++;
    t_start = kr__clock_ns();
    kr__trace_on = max_events > 0 && !run;
    kr__trace_run = max_events > 0 && run;
}

static struct trace_buf *buf_new(void)
{
    struct trace_buf *b = calloc(1, sizeof *b);
    if (!b) kr__fatal_oom("the --trace buffer", sizeof *b);
    pthread_mutex_lock(&bufs_mu);
    b->next = bufs;
    b->tid = nbufs++;
    bufs = b;
    pthread_mutex_unlock(&bufs_mu);
    return b;
}

static struct trace_buf *my_buf(void)
{
    if (!mine || mine_epoch != epoch) {
        mine = buf_new();
        mine_epoch = epoch;
    }
    return mine;
}

static bool above(const struct kr__trace_rec *x, const struct kr__trace_rec *y)
{
    return kr__key_lt(&y->k, &x->k);
}

static void sift_up(struct kr__trace_rec *a, size_t i)
{
    while (i && above(&a[i], &a[(i - 1) / 2])) {
        struct kr__trace_rec t = a[i];
        a[i] = a[(i - 1) / 2];
        a[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

static void sift_down(struct kr__trace_rec *a, size_t n)
{
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && above(&a[l], &a[m])) m = l;
        if (l + 1 < n && above(&a[l + 1], &a[m])) m = l + 1;
        if (m == i) return;
        struct kr__trace_rec t = a[i];
        a[i] = a[m];
        a[m] = t;
        i = m;
    }
}

/* A full buffer's array p (committed keys or spans, elem bytes each) with twice the room,
 * up to the limit: no buffer holds more (the keys' is a heap of the lowest once full). */
static void *buf_grow(struct trace_buf *b, void *p, size_t elem)
{
    size_t cap = b->cap ? b->cap * 2 : 1024;
    if (cap > limit) cap = limit;
    void *a = realloc(p, cap * elem);
    if (!a) kr__fatal_oom("the --trace buffer", cap * elem);
    b->cap = cap;
    return a;
}

void kr__trace_commit(const struct kr__ev *e)
{
    struct trace_buf *b = my_buf();
    struct kr__trace_rec r = { e->k, e->dest, e->type, e->size,
                               e->pflags & KR_PAYLOAD_IMAGE
                                   ? kr__addrmap_mix_payload(0x7EACE, e->payload, e->size)
                                   : kr__mix_bytes(0x7EACE, e->payload, e->size),
                               e->pflags };
    if (b->n == limit) { /* (full: keep it only if it is below the greatest kept) */
        b->dropped++;
        if (!kr__key_lt(&r.k, &b->a[0].k)) return;
        b->a[0] = r;
        sift_down(b->a, b->n);
        return;
    }
    if (b->n == b->cap) b->a = buf_grow(b, b->a, sizeof *b->a);
    b->a[b->n] = r;
    sift_up(b->a, b->n++);
}

void kr__trace_span(unsigned kind, uint64_t t0, uint64_t dur, uint64_t lp, kr_time vt,
                    uint32_t arg)
{
    struct trace_buf *b = my_buf();
    if (b->n == limit) {
        b->dropped++;
        return;
    }
    if (b->n == b->cap) b->s = buf_grow(b, b->s, sizeof *b->s);
    b->s[b->n++] = (struct kr__span){ t0, dur, vt, lp, kind, arg, b->tid };
}

/* Every thread's records (spans, or committed events) one after another into all: how
 * many. (Under bufs_mu.) */
static size_t copy_all(unsigned char *all, size_t elem, bool spans)
{
    size_t n = 0;
    for (struct trace_buf *b = bufs; b; b = b->next) {
        if (b->n) memcpy(all + n * elem, spans ? (void *)b->s : (void *)b->a, b->n * elem);
        n += b->n;
    }
    return n;
}

/* Every thread's records of one kind (spans, or committed keys) in one array. */
static size_t take_all(void **out, size_t elem, bool spans, uint64_t *dropped)
{
    size_t n = 0;
    *dropped = 0;
    pthread_mutex_lock(&bufs_mu);
    for (struct trace_buf *b = bufs; b; b = b->next) n += b->n, *dropped += b->dropped;
    unsigned char *all = malloc((n + 1) * elem);
    if (!all) {
        pthread_mutex_unlock(&bufs_mu);
        kr__fatal_oom("the --trace records", (n + 1) * elem);
    }
    n = copy_all(all, elem, spans);
    pthread_mutex_unlock(&bufs_mu);
    *out = all;
    return n;
}

size_t kr__trace_take_spans(struct kr__span **out, uint64_t *dropped)
{
    return take_all((void **)out, sizeof **out, true, dropped);
}

size_t kr__trace_take(struct kr__trace_rec **out, bool *dropped)
{
    uint64_t d;
    size_t n = take_all((void **)out, sizeof **out, false, &d);
    *dropped = d > 0;
    return n;
}

void kr__trace_free(void)
{
    pthread_mutex_lock(&bufs_mu);
    while (bufs) {
        struct trace_buf *b = bufs;
        bufs = b->next;
        free(b->a);
        free(b->s);
        free(b);
    }
    nbufs = 0;
    pthread_mutex_unlock(&bufs_mu);
    kr__trace_on = kr__trace_run = false;
    epoch++;
}
