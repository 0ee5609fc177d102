/* fuzzed.c - a test model whose behaviour is a 64-byte program, given as the eight integer
 * parameters p0..p7 (8 bytes each, low byte first). The libFuzzer target fuzz/fuzz_model.c
 * writes them from its input and checks that every engine commits the same history; a
 * coverage-guided fuzzer then looks for the model behaviour that tells engines apart,
 * where a seed only draws from one distribution (the chaos model).
 *
 * Each event runs three ops of the program from a position that moves with the LP's event
 * count. Op = byte & 15, its argument byte >> 4: allocate, free, grow and write heap blocks;
 * send a note to itself at once (zero-delay chains), to a neighbour at a multiple of a
 * quarter (ties with the other LPs' notes), to a random LP at a random delay, with a
 * payload of a chosen size; print; ask another LP (kr_query); fail with kr_error (rarely,
 * at a point that depends on the history only). A TICK event keeps each LP going: it sends
 * the next one to itself, 0.5 to 2 later. Notes carry their depth and send nothing past 3:
 * a tick causes at most 39 events, so a run's size is bounded by --lps and --end. */
#include <string.h>
#include "kairos.h"

enum { TICK, NOTE };
#define PROG 64
#define MAX_BLOCKS 24
#define MAX_DEPTH 3

struct block {
    struct block *next;
    size_t size;
    unsigned char data[];
};

struct fz {
    struct block *blocks;
    uint64_t nblocks, events, sum;
    unsigned char prog[PROG];
};

static void fz_init(kr_lp me)
{
    static const char *names[8] = { "p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7" };
    struct fz *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    for (int w = 0; w < 8; w++) {
        uint64_t v = (uint64_t)kr_param_int(names[w], 0);
        for (int b = 0; b < 8; b++) s->prog[8 * w + b] = (unsigned char)(v >> (8 * b));
    }
    kr_schedule(me, kr_expo(1.0), TICK, NULL, 0);
}

static void fold(struct fz *s, uint64_t v) { s->sum = (s->sum ^ v) * 0x100000001b3ull; }

static void heap_op(struct fz *s, unsigned op, unsigned arg)
{
    if (op <= 1 && s->nblocks < MAX_BLOCKS) { /* allocate */
        size_t n = 1 + arg * 200 + kr_random_u64() % 64;
        struct block *b = kr_malloc(sizeof *b + n);
        b->size = n;
        memset(b->data, (int)(s->events & 0xff), n);
        b->next = s->blocks;
        s->blocks = b;
        s->nblocks++;
    } else if (op == 2 && s->blocks) { /* free the arg-th block */
        struct block **p = &s->blocks;
        for (uint64_t k = arg % s->nblocks; k > 0; k--) p = &(*p)->next;
        struct block *dead = *p;
        *p = dead->next;
        kr_free(dead);
        s->nblocks--;
    } else if (op == 3 && s->blocks) { /* grow or shrink the first block */
        size_t n = 1 + arg * 300;
        struct block *b = kr_realloc(s->blocks, sizeof *b + n);
        if (n > b->size) memset(b->data + b->size, 0x33, n - b->size);
        b->size = n;
        s->blocks = b;
    } else if (op == 4) { /* write into every block, read them back */
        for (struct block *b = s->blocks; b; b = b->next) {
            b->data[(arg * 37) % b->size] ^= (unsigned char)s->sum;
            fold(s, b->data[b->size / 2]);
        }
    }
}

static void note(kr_lp dest, kr_time t, unsigned depth, size_t size)
{
    unsigned char buf[KR_PAYLOAD_MAX];
    for (size_t i = 0; i < size; i++) buf[i] = (unsigned char)(i * 11 + depth);
    buf[0] = (unsigned char)depth;
    kr_schedule(dest, t, NOTE, buf, size ? size : 1);
}

static void send_op(struct fz *s, kr_lp me, kr_time now, unsigned op, unsigned arg,
                    unsigned depth)
{
    kr_lp n = kr_lp_count();
    if (depth >= MAX_DEPTH) return;
    if (op == 5) note(me, now, depth + 1, 1 + arg);                  /* zero-delay chain */
    else if (op == 6) note((me + 1 + arg) % n, now + 0.25 * arg, depth + 1, 8); /* ties */
    else if (op == 7) { /* (one draw after the other: argument order is the compiler's) */
        kr_lp dest = kr_random_u64() % n;
        note(dest, now + kr_expo(1.0), depth + 1, 16);
    }
    else if (op == 11) note((me + arg) % n, now + 0.5, depth + 1, (size_t)arg * 64);
    (void)s;
}

static void other_op(struct fz *s, kr_lp me, kr_time now, unsigned op, unsigned arg)
{
    if (op == 8 && arg < 4)
        kr_printf("LP %llu at %.6f: %llu events, %llu blocks, sum %llx\n",
                  (unsigned long long)me, now, (unsigned long long)s->events,
                  (unsigned long long)s->nblocks, (unsigned long long)s->sum);
    else if (op == 9) { /* ask another LP (or itself: its state before this event) */
        uint64_t q = s->events, a = 0;
        kr_query((me + arg) % kr_lp_count(), &q, sizeof q, &a, sizeof a);
        fold(s, a);
    } else if (op == 10 && arg == 15 && s->events % 97 == 13)
        kr_error("fuzzed failure: LP %llu's event %llu, sum %llx", (unsigned long long)me,
                 (unsigned long long)s->events, (unsigned long long)s->sum);
    else if (op >= 12)
        fold(s, op * 16 + arg);
}

static void fz_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                     void *state)
{
    struct fz *s = state;
    const unsigned char *p = payload;
    unsigned depth = type == NOTE && size ? p[0] : 0;
    for (size_t i = 0; i < size; i += 7) fold(s, p[i]);
    unsigned pc = (unsigned)((s->events * 7 + type) % PROG);
    s->events++;
    for (unsigned k = 0; k < 3; k++) {
        unsigned char b = s->prog[(pc + k) % PROG];
        unsigned op = b & 15, arg = b >> 4;
        heap_op(s, op, arg);
        send_op(s, me, now, op, arg, depth);
        other_op(s, me, now, op, arg);
    }
    if (type == TICK)
        kr_schedule(me, now + 0.5 + 0.5 * (s->prog[pc] & 3), TICK, NULL, 0);
}

/* (a read: its state's summary, as the asker's question sees it) */
static size_t fz_query(kr_lp me, kr_time now, const void *question, size_t size,
                       const void *state, void *answer, size_t cap)
{
    const struct fz *s = state;
    uint64_t q = 0, a;
    memcpy(&q, question, size < sizeof q ? size : sizeof q);
    a = s->sum ^ (s->nblocks << 32) ^ s->events ^ q ^ me;
    (void)now;
    if (cap < sizeof a) return 0;
    memcpy(answer, &a, sizeof a);
    return sizeof a;
}

static void fz_finish(kr_lp me, void *state)
{
    struct fz *s = state;
    kr_printf("LP %llu: %llu events, %llu blocks, sum %llx\n", (unsigned long long)me,
              (unsigned long long)s->events, (unsigned long long)s->nblocks,
              (unsigned long long)s->sum);
}

#define WORD(n) { "p" #n, KR_PARAM_INT, "0", "bytes " #n "*8 .. " #n "*8+7 of the program", 0, 0 }
static const struct kr_param fz_params[] = {
    WORD(0), WORD(1), WORD(2), WORD(3), WORD(4), WORD(5), WORD(6), WORD(7), { 0 },
};

static const struct kr_model fz_model = {
    .name = "fuzzed", .init = fz_init, .event = fz_event, .finish = fz_finish,
    .params = fz_params, .query = fz_query,
};

KR_MODEL_EXPORT(fuzzed, fz_model)
