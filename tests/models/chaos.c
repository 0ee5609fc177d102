/* chaos.c - a test model that does, at random, everything a model may do: allocate,
 * reallocate, write and free variable-size heap blocks kept in a linked list, print, and send
 * delayed and zero-delay events of random payload sizes to random LPs. All randomness comes
 * from kr_random, so every engine must commit the same history, state and output.
 * Built twice: plain, and (libchaos_instr.so) with kairos/transparent.h and the store
 * instrumentation of docs/guide.md, which lets it run with --state chunk unchanged. */
#include <string.h>
#include "kairos.h"

enum { CONTINUE, NOTE };

struct block {
    struct block *next;
    size_t size;
    unsigned char data[];
};

struct chaos {
    struct block *blocks;
    uint64_t nblocks, events, notes, sum;
};

static void touch(struct chaos *s)
{
    double r = kr_random();
    if (r < 0.3 && s->nblocks < 40) { /* allocate */
        size_t n = 1 + kr_random_u64() % 3000;
        struct block *b = kr_malloc(sizeof *b + n);
        b->size = n;
        for (size_t i = 0; i < n; i += 97) b->data[i] = (unsigned char)kr_random_u64();
        b->next = s->blocks;
        s->blocks = b;
        s->nblocks++;
    } else if (r < 0.5 && s->blocks) { /* free the k-th block */
        struct block **p = &s->blocks;
        for (uint64_t k = kr_random_u64() % s->nblocks; k > 0; k--) p = &(*p)->next;
        struct block *dead = *p;
        *p = dead->next;
        kr_free(dead);
        s->nblocks--;
    } else if (r < 0.6 && s->blocks) { /* grow or shrink the first block */
        size_t n = 1 + kr_random_u64() % 5000;
        struct block *b = kr_realloc(s->blocks, sizeof *b + n);
        if (n > b->size) memset(b->data + b->size, 0x5a, n - b->size);
        b->size = n;
        s->blocks = b;
    }
    for (struct block *b = s->blocks; b; b = b->next) s->sum = s->sum * 33 + b->data[b->size / 2];
}

static void send_random(kr_lp me, kr_time now, unsigned type, double delay)
{
    unsigned char buf[KR_PAYLOAD_MAX];
    size_t n = kr_random_u64() % (KR_PAYLOAD_MAX + 1);
    for (size_t i = 0; i < n; i++) buf[i] = (unsigned char)(i * 7 + me);
    kr_lp dest = kr_random() < 0.5 ? me : kr_random_u64() % kr_lp_count();
    double span = kr_param_double("span", 0);
    if (span > 0) kr_schedule_span(dest, now + span + delay, span, type, buf, n);
    else kr_schedule(dest, now + delay, type, buf, n);
}

static void chaos_init(kr_lp me)
{
    struct chaos *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    for (int i = 0; i < 2; i++) send_random(me, 0, CONTINUE, kr_expo(1.0));
}

static void chaos_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                        void *state)
{
    struct chaos *s = state;
    const unsigned char *p = payload;
    for (size_t i = 0; i < size; i += 31) s->sum += p[i];
    s->events++;
    touch(s);
    if (type == NOTE) {
        s->notes++;
        if (kr_random() < 0.05)
            kr_printf("LP %llu note %llu at %.6f (%zu bytes, sum %llx)\n", (unsigned long long)me,
                      (unsigned long long)s->notes, now, size, (unsigned long long)s->sum);
        return;
    }
    send_random(me, now, CONTINUE, kr_random() < 0.1 ? 0.0 : kr_expo(1.0)); /* keep going */
    if (kr_random() < 0.4) send_random(me, now, NOTE, kr_random() < 0.5 ? 0.0 : kr_expo(0.3));
}

/* With -P done_after=N, an LP is done once it processed N events (run with --end inf). */
static bool chaos_done(kr_lp me, const void *state)
{
    (void)me;
    int64_t n = kr_param_int("done_after", 0);
    return n > 0 && ((const struct chaos *)state)->events >= (uint64_t)n;
}

static const struct kr_param chaos_params[] = {
    { "done_after", KR_PARAM_INT, "0", "events after which an LP is done (0: never)", 0, 0 },
    { "span", KR_PARAM_DOUBLE, "0", "> 0: every event lasts this long (kr_schedule_span) and "
      "sends nothing earlier than its end, so the conservative engine can run it", 0, 0 },
    { 0 },
};

static void chaos_finish(kr_lp me, void *state)
{
    struct chaos *s = state;
    if (me % 16 == 0)
        kr_printf("LP %llu: %llu events, %llu notes, %llu blocks, sum %llx\n", (unsigned long long)me,
                  (unsigned long long)s->events, (unsigned long long)s->notes,
                  (unsigned long long)s->nblocks, (unsigned long long)s->sum);
}

static const struct kr_model chaos_model = {
    .name = "chaos", .init = chaos_init, .event = chaos_event, .done = chaos_done,
    .finish = chaos_finish, .params = chaos_params,
#if defined(CHAOS_INSTRUMENTED) || defined(KAIROS_MARKS_WRITES) /* (kairos_add_model
                          * INSTRUMENTED: built with the store instrumentation, every write is
                          * marked) */
    .flags = KR_MODEL_MARKS_WRITES,
#endif
};

KR_MODEL_EXPORT(chaos, chaos_model)
