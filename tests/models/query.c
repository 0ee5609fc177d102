/* query.c - a test model for kr_query that checks every answer itself (tests/e2e/query.py).
 *
 * Every LP i ticks at times 1, 2, 3, ... (each tick schedules the next) and adds i + 1 to
 * its count. Ticks at one time run in LP order (the key orders them by sender, and each LP
 * sends its own), so when LP i asks at time t, LP j's count is (j + 1) t for j < i and
 * (j + 1)(t - 1) otherwise - its own before this tick included. Each tick asks itself
 * (after adding), its neighbour, a nested query (the neighbour asks its neighbour) and a
 * cycle of n + 1 hops (at most 41) that comes back through the asker, and compares each
 * answer with that closed form: an engine that shows a later or earlier state fails the run
 * with kr_error. finish asks the neighbour's final count. -P every=N asks on some ticks
 * only (the others run ahead on speculation), -P noise=1 adds events that never touch the
 * count; -P misuse=N misuses the API instead (query.py checks the messages). */
#include <kairos.h>

enum { Q_COUNT, Q_NEST, Q_CYCLE, Q_BIG };

struct st {
    uint64_t count;
    uint64_t noise;    /* -P noise=1: stirred by other events, never asked */
};

struct question {
    uint32_t kind;
    uint32_t hops;
};

static int64_t misuse, every, noise;

static uint64_t expect(kr_lp asker, kr_lp j, uint64_t t)
{
    return (j + 1) * (j < asker ? t : t - 1);
}

static uint64_t ask(kr_lp dest, uint32_t kind, uint32_t hops)
{
    struct question q = { kind, hops };
    uint64_t a = 0;
    size_t n = kr_query(dest, &q, sizeof q, &a, sizeof a);
    if (n != sizeof a)
        kr_error("query of LP %llu: answer of %zu bytes", (unsigned long long)dest, n);
    return a;
}

static size_t answer(kr_lp me, kr_time now, const void *question, size_t size, const void *state,
                     void *ans, size_t cap)
{
    (void)now;
    const struct question *q = question;
    const struct st *s = state;
    uint64_t a = s->count;
    if (size != sizeof *q) kr_error("question of %zu bytes", size);
    if (misuse == 1) ((struct st *)state)->count++; /* a write through the const pointer */
    if (misuse == 2) kr_schedule(me, 1e9, 0, NULL, 0);
    if (misuse == 6) a += (uint64_t)kr_random_u64();
    if (misuse == 7) kr_printf("from a query\n");
    if (misuse == 11) kr_error("refused by LP %llu", (unsigned long long)me);
    if (misuse == 12 && me == kr_lp_count() - 1) /* (asked from another thread, mostly) */
        kr_error("refused by LP %llu", (unsigned long long)me);
    if (q->kind == Q_NEST) a += ask((me + 1) % kr_lp_count(), Q_COUNT, 0);
    if (q->kind == Q_CYCLE && q->hops) a += ask((me + 1) % kr_lp_count(), Q_CYCLE, q->hops - 1);
    if (misuse == 4) return cap + 8;
    if (cap < sizeof a) return 0;
    *(uint64_t *)ans = a;
    return sizeof a;
}

static void init(kr_lp me)
{
    struct st *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    misuse = kr_param_int("misuse", 0);
    every = kr_param_int("every", 1);
    noise = kr_param_int("noise", 0);
    if (kr_param_int("zero_lookahead", 0)) kr_set_lookahead(0); /* (--sync conservative) */
    if (misuse == 3) ask(me, Q_COUNT, 0);
    kr_schedule(me, 1, 0, NULL, 0);
}

static void check(const char *what, uint64_t got, uint64_t want)
{
    if (got != want)
        kr_error("%s: answer %llu, expected %llu", what, (unsigned long long)got,
                 (unsigned long long)want);
}

static void misuse_in_event(kr_lp me)
{
    char big[KR_PAYLOAD_MAX + 8] = { 0 };
    uint64_t a;
    if (misuse == 5) ask(me, Q_CYCLE, 1000);
    if (misuse == 8) ask(kr_lp_count() + 3, Q_COUNT, 0);
    if (misuse == 9) kr_query(me, big, sizeof big, &a, sizeof a);
}

/* Noise (type 1): other LPs' events between the ticks, some of them zero-delay, that
 * never touch the count. */
static void stir(kr_lp me, kr_time now, struct st *s)
{
    KR_WRITE(s->noise, s->noise * 31 + (uint64_t)(now * 4) + me);
    if (kr_random() < 0.5) kr_schedule((me + 3) % kr_lp_count(), now, 1, NULL, 0);
}

static void tick(kr_lp me, kr_time now, struct st *s)
{
    uint64_t t = (uint64_t)now, n = kr_lp_count(), j = (me + 1) % n, k = (me + 2) % n;
    KR_WRITE(s->count, s->count + me + 1); /* (marked: it runs under --state chunk too) */
    if (noise) {
        kr_schedule((me * 7 + t) % n, now + 0.25, 1, NULL, 0);
        kr_schedule((me * 5 + t) % n, now + 0.75 * kr_random(), 1, NULL, 0);
    }
    kr_schedule(me, now + 1, 0, NULL, 0);
    if ((t + me) % (uint64_t)every) return; /* (a tick that asks nothing) */
    misuse_in_event(me);
    check("self", ask(me, Q_COUNT, 0), expect(me, me, t));
    check("neighbour", ask(j, Q_COUNT, 0), expect(me, j, t));
    check("nested", ask(j, Q_NEST, 0), expect(me, j, t) + expect(me, k, t));
    uint64_t cyc = 0, hops = n < 40 ? n : 40; /* (past the asker once; 64 is too deep) */
    for (uint64_t h = 0; h <= hops; h++) cyc += expect(me, (me + 1 + h) % n, t);
    check("cycle", ask(j, Q_CYCLE, (uint32_t)hops), cyc);
    if (me == 0 && t % 4 == 0) kr_printf("t=%llu LP 1 count %llu\n", (unsigned long long)t,
                                         (unsigned long long)ask(1 % n, Q_COUNT, 0));
}

static void event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                  void *state)
{
    (void)payload, (void)size;
    if (type == 1) stir(me, now, state);
    else tick(me, now, state);
}

static bool done(kr_lp me, const void *state)
{
    (void)state;
    if (misuse == 10) ask(me, Q_COUNT, 0);
    return false;
}

static void finish(kr_lp me, void *state)
{
    const struct st *s = state;
    uint64_t ticks = s->count / (me + 1), j = (me + 1) % kr_lp_count();
    check("finish", ask(j, Q_COUNT, 0), (j + 1) * ticks);
    if (me == 0) kr_printf("LP 0 ticked %llu times, LP %llu counts %llu\n",
                           (unsigned long long)ticks, (unsigned long long)j,
                           (unsigned long long)ask(j, Q_COUNT, 0));
}

static const struct kr_param params[] = {
    { "misuse", KR_PARAM_INT, "0", "0: none; 1-12: a misuse of kr_query (query.py)", 0, 12 },
    { "every", KR_PARAM_INT, "1", "an LP's tick asks when (time + LP) % every is 0", 1, 1000 },
    { "zero_lookahead", KR_PARAM_INT, "0", "1: declare a lookahead of 0 (events may send at "
      "once, as the conservative engine must be told)", 0, 1 },
    { "noise", KR_PARAM_INT, "0", "1: events between the ticks that never touch the count",
      0, 1 },
    { NULL, 0, NULL, NULL, 0, 0 },
};

static const struct kr_model model = {
    .name = "query",
    .init = init,
    .event = event,
    .done = done,
    .finish = finish,
    .params = params,
    .query = answer,
    .flags = KR_MODEL_MARKS_WRITES,
};

KR_MODEL_EXPORT(query, model)
