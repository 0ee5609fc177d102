/* buffers.c - a ROOT-Sim 3 model (against ROOT-Sim.h, unchanged on ROOT-Sim): the ROOT-Sim
 * layer's test model. Each LP keeps a list of rs_malloc'd buffers of random sizes, reads
 * one in each event into a running checksum, now and then allocates, frees, or sends one to
 * another LP (the receiver copies it into a buffer of its own); its random numbers come
 * from a generator in its state, as ROOT-Sim 3 models keep them. The run ends when every LP
 * has run COMPLETE events (the `committed` test) - or at --end - and LP_FINI prints what
 * some LPs saw. */
#include <ROOT-Sim.h>
#include <stdint.h>
#include <string.h>

#define LPS 64
#define MAX_BUFFERS 32
#define MAX_WORDS 24
#define COMPLETE 2000

enum { TICK, DELIVER };

struct buffer {
    struct buffer *next;
    unsigned words;
    uint64_t data[];
};

struct lp {
    uint64_t rng;
    unsigned events, count;
    uint64_t checksum;
    struct buffer *head;
};

static double draw(struct lp *s)
{
    s->rng = s->rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(s->rng >> 11) * 0x1.0p-53;
}

static void push(struct lp *s, const uint64_t *data, unsigned words)
{
    struct buffer *b = rs_malloc(sizeof *b + words * sizeof(uint64_t));
    b->words = words;
    for (unsigned i = 0; i < words; i++) b->data[i] = data ? data[i] : s->rng ^ i;
    b->next = s->head;
    s->head = b;
    s->count++;
}

static struct buffer **nth(struct lp *s, unsigned k)
{
    struct buffer **p = &s->head;
    while (k--) p = &(*p)->next;
    return p;
}

static void drop(struct lp *s, unsigned k)
{
    struct buffer **p = nth(s, k), *b = *p;
    *p = b->next;
    rs_free(b);
    s->count--;
}

static void tick(lp_id_t me, simtime_t now, struct lp *s)
{
    /* (tests: a model that aborts, as ROOT-Sim's own tests do on a wrong result) */
    if (getenv("BUFFERS_ABORT_AT") && now > atof(getenv("BUFFERS_ABORT_AT"))) abort();
    s->events++;
    ScheduleNewEvent(me, now + 1 + 9 * draw(s), TICK, NULL, 0);
    if (s->count) {
        struct buffer *b = *nth(s, (unsigned)(draw(s) * s->count));
        for (unsigned i = 0; i < b->words; i++) s->checksum = s->checksum * 31 + b->data[i];
    }
    if (s->count < MAX_BUFFERS && draw(s) < 0.2) push(s, NULL, 1 + (unsigned)(draw(s) * MAX_WORDS));
    if (s->count > 1 && draw(s) < 0.15) drop(s, (unsigned)(draw(s) * s->count));
    if (s->count && draw(s) < 0.1) {
        unsigned k = (unsigned)(draw(s) * s->count);
        struct buffer *b = *nth(s, k);
        lp_id_t dest = (lp_id_t)(draw(s) * LPS);
        ScheduleNewEvent(dest, now + 0.5 + draw(s), DELIVER, b->data,
                         b->words * (unsigned)sizeof(uint64_t));
        drop(s, k);
    }
}

static void ProcessEvent(lp_id_t me, simtime_t now, unsigned type, const void *content,
                         unsigned size, void *st)
{
    struct lp *s = st;
    switch (type) {
    case LP_INIT:
        s = rs_calloc(1, sizeof *s);
        s->rng = (me + 1) * 0x9E3779B97F4A7C15ull;
        SetState(s);
        for (unsigned i = 0, n = 1 + (unsigned)(draw(s) * 8); i < n; i++)
            push(s, NULL, 1 + (unsigned)(draw(s) * MAX_WORDS));
        ScheduleNewEvent(me, 10 * draw(s), TICK, NULL, 0);
        break;
    case TICK:
        if (s->events < COMPLETE) tick(me, now, s);
        break;
    case DELIVER:
        if (s->events < COMPLETE && s->count < MAX_BUFFERS)
            push(s, content, size / (unsigned)sizeof(uint64_t));
        break;
    case LP_FINI:
        if (me % 16 == 0)
            printf("LP %llu: %u events, %u buffers, checksum %016llx\n", (unsigned long long)me,
                   s->events, s->count, (unsigned long long)s->checksum);
        while (s->head) drop(s, 0);
        rs_free(s);
        break;
    default:
        fprintf(stderr, "unknown event type %u\n", type);
        abort();
    }
}

static bool CanEnd(lp_id_t me, const void *snapshot)
{
    (void)me;
    const struct lp *s = snapshot;
    return s->events >= COMPLETE;
}

static struct simulation_configuration conf = {
    .lps = LPS,
    .n_threads = 0,
    .termination_time = 0,
    .gvt_period = 1000,
    .log_level = LOG_SILENT,
    .stats_file = NULL,
    .ckpt_interval = 0,
    .core_binding = true,
    .serial = false,
    .dispatcher = ProcessEvent,
    .committed = CanEnd,
};

int main(void)
{
    RootsimInit(&conf);
    return RootsimRun();
}
