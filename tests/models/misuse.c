/* misuse.c - a test model that misuses the API on purpose, one way per `case` parameter,
 * so the tests can check that each misuse gives a clear error and exit status 1. Case 0 is
 * a correct run whose only error lies on a speculative path (see `speculative`). */
#include <math.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include "kairos.h"

enum {
    OK_SPECULATIVE, DEST_RANGE, PAST, NAN_TIME, INF_TIME, PAYLOAD, ARENA, BAD_FREE, BAD_STATE,
    USER_ERROR, IN_FINISH, INIT_ERROR, NOT_MONOTONE, GLOBAL_STATE, ZERO_DELAY_LOOP,
    NULL_WRITE, DIV_ZERO, STACK_OVERFLOW, FOREIGN_STATE, OK_SPECULATIVE_CRASH,
    SPAN_VIOLATION, BAD_SPAN, LOOKAHEAD_IN_EVENT, OK_SPECULATIVE_DONE_CRASH,
    OK_SPECULATIVE_DONE_ERROR, OUTSIDE_CRASH
};

/* A real integer division (sanitizer builds must not trap it first: the test is that the
 * engine reports the SIGFPE). */
__attribute__((noinline, no_sanitize("undefined"))) static int divide(int a, volatile int b)
{
    return a / b;
}

static volatile uintptr_t bad_address = 8; /* volatile: the compiler cannot see it is bad */

__attribute__((noinline, no_sanitize("undefined"))) static void poke(uintptr_t addr)
{
    *(volatile int *)addr = 1;
}

static struct st *lp0_state; /* FOREIGN_STATE: LP 1 writes LP 0's state (forbidden) */

/* Deep enough to overflow any thread stack; the array keeps it from becoming a loop. */
static int recurse(volatile int depth)
{
    volatile char pad[256];
    if (depth > 1 << 30) return 0; /* never: 256 MiB of frames overflow first */
    pad[depth % 256] = (char)depth;
    return recurse(depth + 1) + pad[(depth + 1) % 256];
}

static const struct kr_param params[] = {
    { "case", KR_PARAM_INT, "0", "which misuse to commit (see misuse.c)", 0, 0 },
    { "spans", KR_PARAM_INT, "0", "1: every event lasts 0 (kr_schedule_span), so that the "
      "conservative engine runs the model", 0, 0 },
    { 0 },
};

struct st {
    int ok;          /* OK_SPECULATIVE: set by the early event from LP 0 */
    int events;
};

/* spans=1: events sent with a duration of 0, which the conservative engine accepts (the
 * model declares no lookahead). */
static void send(kr_lp dest, kr_time t, unsigned type, const void *p, size_t n)
{
    if (kr_param_int("spans", 0)) kr_schedule_span(dest, t, 0, type, p, n);
    else kr_schedule(dest, t, type, p, n);
}

/* OUTSIDE_CRASH: a thread of the model's own crashes, outside every callback - to the
 * engine a crash in engine code (the internal error's report: where, and its callers) */
static void *crash_thread(void *arg)
{
    (void)arg;
    poke(bad_address);
    return NULL;
}

static void misuse_init(kr_lp me)
{
    if (me == 0 && kr_param_int("case", 0) == OUTSIDE_CRASH) {
        pthread_t t;
        if (pthread_create(&t, NULL, crash_thread, NULL) == 0) pthread_join(t, NULL);
    }
    struct st *s = kr_malloc(sizeof *s);
    kr_set_state(s);
    if (me == 0) lp0_state = s;
    if (kr_param_int("case", 0) == INIT_ERROR && me == 1) send(me, -1.0, 0, NULL, 0);
    if (me == 0) send(0, 0.5, 1, NULL, 0);
    if (me == 1 && kr_param_int("case", 0) == SPAN_VIOLATION) /* lasts until 3.0 */
        kr_schedule_span(1, 2.0, 1.0, 2, NULL, 0);
    else if (me == 1)
        send(1, 2.0, 2, NULL, 0);
}

static void spin_ms(int ms)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 < ms);
}

static void misuse_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                         void *state)
{
    (void)payload;
    (void)size;
    struct st *s = state;
    int c = (int)kr_param_int("case", 0);
    if (c == FOREIGN_STATE && me == 0) return; /* LP 0's state stays as checkpointed after init */
    s->events++;
    char big[KR_PAYLOAD_MAX + 1] = { 0 };
    int local = 0;
    if (type == 3) { s->ok = 1; return; }
    if (type == 4) { send(me, now, 4, NULL, 0); return; } /* forever at one time */
    if (type == 1) { /* LP 0 at 0.5: slow, then tells LP 1 it is fine (time 1.0) */
        if (c == OK_SPECULATIVE || c == OK_SPECULATIVE_CRASH || c == OK_SPECULATIVE_DONE_CRASH ||
            c == OK_SPECULATIVE_DONE_ERROR)
            spin_ms(50);
        send(1, 1.0, 3, NULL, 0);
    }
    if (type != 2) return;
    switch (c) { /* LP 1 at time 2.0 */
    case OK_SPECULATIVE:
        if (!s->ok) kr_error("reached only on a wrong speculative path");
        break;
    case DEST_RANGE: send(kr_lp_count() + 5, now + 1, 0, NULL, 0); break;
    case PAST: send(me, now - 0.5, 0, NULL, 0); break;
    case NAN_TIME: send(me, NAN, 0, NULL, 0); break;
    case INF_TIME: send(me, INFINITY, 0, NULL, 0); break;
    case PAYLOAD: send(me, now + 1, 0, big, sizeof big); break;
    case ARENA: for (int i = 0; i < 100; i++) kr_malloc(100000); break;
    case BAD_FREE: kr_free(&local); break;
    case BAD_STATE: kr_set_state(&local); break;
    case USER_ERROR: /* what it printed first is still printed, as sequentially */
        kr_printf("LP %llu counted its customers\n", (unsigned long long)me);
        kr_error("the customer count went negative (%d)", -3);
        break;
    case ZERO_DELAY_LOOP: send(me, now, 4, NULL, 0); break;
    case NULL_WRITE: poke(bad_address); break;
    case DIV_ZERO: s->events = divide(10, 0); break;
    case STACK_OVERFLOW: s->events = recurse(0); break;
    case FOREIGN_STATE: lp0_state->events = 99; break;
    case OK_SPECULATIVE_CRASH: /* crashes only on a wrong speculative path */
        if (!s->ok) poke(bad_address);
        break;
    case SPAN_VIOLATION: kr_schedule_span(me, now + 0.5, 0, 0, NULL, 0); break; /* < 3.0 */
    case BAD_SPAN: kr_schedule_span(me, now + 1, -1, 0, NULL, 0); break;
    case LOOKAHEAD_IN_EVENT: kr_set_lookahead(0.5); break;
    case GLOBAL_STATE: { /* not rollback-safe: state outside the arena */
        static int calls;
        s->events += ++calls;
        break;
    }
    default: break;
    }
}

static bool misuse_done(kr_lp me, const void *state)
{
    (void)me;
    const struct st *s = state;
    int c = (int)kr_param_int("case", 0);
    if (c == NOT_MONOTONE) return me == 1 && s->events == 1; /* true, then false */
    /* LP 1 after its event at 2.0 without LP 0's word: only on a wrong speculative path */
    bool wrong = me == 1 && s->events >= 1 && !s->ok;
    if (c == OK_SPECULATIVE_DONE_CRASH && wrong) poke(bad_address);
    if (c == OK_SPECULATIVE_DONE_ERROR && wrong) kr_error("done() on a wrong speculative path");
    return false;
}

static void misuse_finish(kr_lp me, void *state)
{
    (void)state;
    if (kr_param_int("case", 0) == IN_FINISH && me == 0) send(0, 1.0, 0, NULL, 0);
}

static const struct kr_model misuse_model = {
    .name = "misuse",
    .init = misuse_init,
    .event = misuse_event,
    .done = misuse_done,
    .finish = misuse_finish,
    .params = params,
};

KR_MODEL_EXPORT(misuse, misuse_model)
