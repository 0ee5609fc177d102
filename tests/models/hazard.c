/* hazard.c - a test model for the reliability cases (docs/reliability.md): ordinary C
 * idioms a modeller writes (pointers to literals, tables, functions and one past an array
 * in the state), and ways a run can end badly (exit or abort in an event, a stack frame
 * bigger than an event stack, a signal while output is being printed). Every LP prints one
 * line per event, so a test can check that what was committed reaches stdout.
 *   case 0  a plain printing run (signals: the test interrupts it)
 *   case 1  state pointers the digest must name by what they point at
 *   case 2  a state pointer into the C library heap, in LP `heap_lp`'s state (--check must
 *           report it; a snapshot cannot hold it)
 *   case 3  exit(0) in an event at virtual time >= `at`
 *   case 4  abort() in an event at virtual time >= `at`
 *   case 5  an event with a 400 KiB local array (bigger than the default event stack)
 *   case 6  done() that crashes (NULL write) on every call
 *   case 7  an endless loop in finish()
 *   case 8  an endless loop in done() once LP 0 has processed an event at >= `at`
 *   case 9  _exit(0) in an event at virtual time >= `at`
 *   case 10 kr_printf from a thread the model started, in an event at >= `at`
 *   case 11 an endless loop in an event at virtual time >= `at`
 *   case 12 kr_malloc in done()
 *   case 13 done() that writes the LP's state
 *   case 14 a write 40 bytes past the end of a 1024-byte kr_malloc block (alone in its
 *           area), once, in LP 5's first event at virtual time >= `at`
 *   case 15 a payload struct whose padding is never set (initialised member by member)
 *   case 16 kr_error in LP 1's first event at virtual time >= `at`
 *   case 17 payloads holding pointers into the program image (a string literal, a const
 *           table, a function), which the receiver follows: the digest, the trace, the
 *           wire between ranks and snapshots must name them, not copy addresses
 *   case 18 a payload holding a pointer into the sender's state (kr_malloc), from `at` on
 *   case 19 a payload holding a pointer into the C library heap, from `at` on
 *   case 20 an event blocked in a system call at virtual time >= `at`: `block` 0 a read
 *           from a pipe no one writes, 1 poll() with no end, 2 a mutex locked twice,
 *           3 sleep(1000)
 *   case 21 kr_schedule from a thread the model started, in an event at >= `at` (the
 *           event then counts `work_after` down: time for a tick to preempt it there)
 *   case 22 kr_error from a thread the model started, in an event at >= `at`
 *   case 23 printf (24: puts, 25: write(1, ...)) straight to stdout in events at >= `at`
 *   case 26 raise(SIGTERM) in LP 1's first event at virtual time >= `at`
 *   case 27 every event counts itself in a global that finish() prints (not in LP state)
 *   case 28 kr_random() in done()
 *   case 29 a write through the payload pointer of an empty event (run it with --check)
 *   case 30 events of LPs but 0 at >= `at` read LP 0's state through a pointer init kept in
 *           a global, and print what they read
 *   case 31 payloads holding numbers that lie in memory init maps below 4 GiB (as a
 *           program built without -pie, or valgrind, keeps its heap there) when `low` is 1,
 *           and that the receiver prints: numbers, whatever is mapped there
 */
#include <poll.h>
#include <signal.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "kairos.h"

enum { PRINTING, POINTERS, HEAP_POINTER, EXIT_IN_EVENT, ABORT_IN_EVENT, BIG_FRAME, DONE_CRASH,
       FINISH_LOOP, DONE_LOOP, UNDERSCORE_EXIT, FOREIGN_THREAD, EVENT_LOOP,
       MALLOC_IN_DONE, DONE_WRITES, HEAP_OVERFLOW, PADDED_PAYLOAD, ERROR_AT, IMAGE_PAYLOAD,
       STATE_PAYLOAD, HEAP_PAYLOAD, BLOCKED, FOREIGN_SEND, FOREIGN_ERROR, RAW_PRINTF,
       RAW_PUTS, RAW_WRITE, RAISE_TERM, GLOBAL_COUNT, RANDOM_IN_DONE, WRITE_EMPTY,
       PEEK_LP0, LOW_NUMBERS };

#define LOW_BASE 0x40000000ul /* case 31: 1 GiB */

static uint64_t global_count; /* case 27 */

struct named {                      /* cases 17-19 */
    const char *name;
    const double *table;
    double (*op)(double);
    uint64_t k;
};

struct padded {                     /* case 15: 4 bytes of padding after `tag` */
    uint32_t tag;
    double value;
};

static const struct kr_param params[] = {
    { "case", KR_PARAM_INT, "0", "which hazard (see hazard.c)", 0, 0 },
    { "at", KR_PARAM_DOUBLE, "5", "virtual time at which cases 3, 4 and 8 strike", 0, 0 },
    { "frame_kb", KR_PARAM_INT, "400", "case 5: size of the event's local array", 0, 0 },
    { "work", KR_PARAM_INT, "0", "busy-loop iterations per event (slows a run down)", 0, 0 },
    { "work_after", KR_PARAM_INT, "0", "case 21: busy-loop iterations after the thread ended", 0, 0 },
    { "heap_lp", KR_PARAM_INT, "0", "case 2: the LP whose state points into the C heap", 0, 0 },
    { "block", KR_PARAM_INT, "0", "case 20: how the event blocks (see hazard.c)", 0, 0 },
    { "low", KR_PARAM_INT, "1", "case 31: map the numbers' memory (1) or not (0)", 0, 1 },
    { 0 },
};

static const double weights[4] = { 0.5, 0.25, 0.125, 0.125 };

static double halve(double x) { return x / 2; }
static double twice(double x) { return x * 2; }

struct st {
    uint64_t events;
    const char *label;              /* a string literal */
    const double *table;            /* a const table */
    double (*op)(double);           /* a function */
    double *samples, *samples_end;  /* an array and one past its end */
    void *outside;                  /* case 2: C library heap */
    char *block;                    /* case 14 */
    bool overran;
};

static void *kept;
static const struct st *lp0;        /* case 30 */

static int which(void) { return (int)kr_param_int("case", 0); }

static void hazard_init(kr_lp me)
{
    struct st *s = kr_malloc(sizeof *s);
    kr_set_state(s);
    if (which() == POINTERS) {
        s->label = me % 2 ? "odd" : "even";
        s->table = weights;
        s->op = me % 2 ? halve : twice;
        size_t n = 3 + me % 5;       /* ends in different places of its area */
        s->samples = kr_malloc(n * sizeof *s->samples);
        s->samples_end = s->samples + n;
    }
    if (which() == HEAP_POINTER && me == (kr_lp)kr_param_int("heap_lp", 0))
        s->outside = kept = malloc(64); /* (kept: no leak) */
    if (which() == HEAP_OVERFLOW) s->block = kr_malloc(1024);
    if (which() == HEAP_PAYLOAD && me == 0) kept = malloc(16); /* (init: one thread) */
    if (which() == PEEK_LP0 && me == 0) lp0 = s;
    if (which() == LOW_NUMBERS && me == 0 && kr_param_int("low", 1) &&
        mmap((void *)LOW_BASE, 1 << 16, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != (void *)LOW_BASE)
        kr_error("case 31: cannot map memory at %#lx", LOW_BASE);
    kr_schedule(me, 0.5 + kr_random(), 0, NULL, 0);
}

static __attribute__((noinline)) uint64_t big_frame(size_t kb)
{
    volatile char a[400 << 10];
    size_t n = kb << 10 < sizeof a ? kb << 10 : sizeof a;
    for (size_t i = 0; i < n; i += 512) a[i] = (char)i;
    return a[n / 2];
}

static void *foreign(void *arg)
{
    (void)arg;
    kr_printf("from a thread of the model\n");
    return NULL;
}

static volatile int forever = 1;

static void *foreign_send(void *arg)
{
    (void)arg;
    kr_schedule(0, 1e9, 0, NULL, 0);
    return NULL;
}

static void *foreign_error(void *arg)
{
    (void)arg;
    kr_error("gave up in a helper thread");
    return NULL;
}

static void block_forever(void)
{
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    int fd[2];
    struct pollfd none;
    switch (kr_param_int("block", 0)) {
    case 0:
        if (pipe(fd) == 0) {
            char c;
            (void)!read(fd[0], &c, 1);
        }
        break;
    case 1: poll(&none, 0, -1); break;
    case 2:
        pthread_mutex_lock(&mu);
        pthread_mutex_lock(&mu); /* (a default mutex: the second lock waits for ever) */
        break;
    default: sleep(1000); break;
    }
}

static void hazard_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                         void *state)
{
    (void)type, (void)payload, (void)size;
    struct st *s = state;
    s->events++;
    kr_printf("LP %llu event %llu at %.6f\n", (unsigned long long)me,
              (unsigned long long)s->events, now);
    for (volatile int64_t i = kr_param_int("work", 0); i > 0; i--) {}
    int c = which();
    double at = kr_param_double("at", 5);
    if (c == EXIT_IN_EVENT && now >= at) exit(0);
    if (c == ABORT_IN_EVENT && now >= at) abort();
    if (c == UNDERSCORE_EXIT && now >= at) _exit(0);
    if (c == HEAP_OVERFLOW && now >= at && me == 5 && !s->overran) {
        s->overran = true;
        memset(s->block, 0xAB, 1024 + 40); /* an off-by-some length */
    }
    if (c == ERROR_AT && now >= at && me == 1) kr_error("LP 1 gave up at %.3f", now);
    if (c == RAISE_TERM && now >= at && me == 1) raise(SIGTERM);
    if (c == GLOBAL_COUNT) global_count++;
    if (c == PEEK_LP0 && now >= at && me != 0)
        kr_printf("  LP 0 has run %llu events\n", (unsigned long long)lp0->events);
    if (c == WRITE_EMPTY && !size) *(volatile char *)payload = 1; /* (through a const) */
    if (c == EVENT_LOOP && now >= at)
        while (forever) {}
    if ((c == FOREIGN_THREAD || c == FOREIGN_SEND || c == FOREIGN_ERROR) && now >= at) {
        pthread_t t;
        pthread_create(&t, NULL, c == FOREIGN_SEND ? foreign_send :
                       c == FOREIGN_ERROR ? foreign_error : foreign, NULL);
        pthread_join(t, NULL);
        for (volatile int64_t i = kr_param_int("work_after", 0); i > 0; i--) {}
    }
    if (c == BLOCKED && now >= at) block_forever();
    if (c == RAW_PRINTF && now >= at) printf("raw %llu\n", (unsigned long long)me);
    if (c == RAW_PUTS && now >= at) puts("raw");
    if (c == RAW_WRITE && now >= at) (void)!write(1, "raw\n", 4);
    if (c == BIG_FRAME) s->events += big_frame((size_t)kr_param_int("frame_kb", 400));
    if (c == POINTERS) {
        s->samples[s->events % (size_t)(s->samples_end - s->samples)] = s->op(now);
        if (s->label[0] == 'o') s->table++;
        if (s->table == weights + 4) s->table = weights;
    }
    if (c >= IMAGE_PAYLOAD && c <= HEAP_PAYLOAD) {
        if (size == sizeof(struct named)) { /* (follow what the sender pointed at) */
            struct named got;
            memcpy(&got, payload, sizeof got);
            kr_printf("  from a %s LP: %.4f\n", got.name, got.op(got.table[got.k % 4]));
        }
        struct named m = { me % 2 ? "odd" : "even", weights, me % 2 ? halve : twice,
                           s->events };
        if (c == STATE_PAYLOAD && now >= at) m.name = (const char *)&s->events;
        if (c == HEAP_PAYLOAD && now >= at) m.name = kept;
        kr_schedule(kr_random_u64() % kr_lp_count(), now + 0.5 + kr_expo(1), 0, &m, sizeof m);
        return;
    }
    if (c == LOW_NUMBERS) {
        uint64_t k = LOW_BASE + 8 * (s->events % 64);
        if (size == sizeof k) {
            memcpy(&k, payload, sizeof k);
            kr_printf("  number %#llx\n", (unsigned long long)k);
        }
        kr_schedule(kr_random_u64() % kr_lp_count(), now + 0.5 + kr_expo(1), 0, &k, sizeof k);
        return;
    }
    if (c == PADDED_PAYLOAD) {
        struct padded m;           /* (set member by member: the padding is what was there) */
        m.tag = (uint32_t)s->events;
        m.value = now;
        kr_schedule(kr_random_u64() % kr_lp_count(), now + 0.5 + kr_expo(1), 0, &m, sizeof m);
        return;
    }
    kr_schedule(kr_random_u64() % kr_lp_count(), now + 0.5 + kr_expo(1), 0, NULL, 0);
}

static bool hazard_done(kr_lp me, const void *state)
{
    const struct st *s = state;
    if (which() == DONE_CRASH) *(volatile int *)(uintptr_t)(8 + s->events % 2) = 1;
    if (which() == DONE_LOOP && me == 0 && s->events && kr_now() >= kr_param_double("at", 5))
        while (forever) {}
    if (which() == MALLOC_IN_DONE && s->events) kr_malloc(8);
    if (which() == RANDOM_IN_DONE && s->events) (void)kr_random();
    if (which() == DONE_WRITES) ((struct st *)state)->events++;
    return false;
}

static void hazard_finish(kr_lp me, void *state)
{
    (void)state;
    if (which() == GLOBAL_COUNT && me == 0)
        kr_printf("%llu events counted\n", (unsigned long long)global_count);
    if (which() == FINISH_LOOP)
        while (forever) {}
}

static const struct kr_model hazard_model = {
    .name = "hazard",
    .init = hazard_init,
    .event = hazard_event,
    .done = hazard_done,
    .finish = hazard_finish,
    .lookahead = 0.5,
    .params = params,
};

KR_MODEL_EXPORT(hazard, hazard_model)
