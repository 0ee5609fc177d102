/* bundles.c - a test model of same-time bundles (KR_MODEL_BUNDLES): messages go between
 * random LPs at whole-number times, so an LP gets several at once, and some answer with a
 * zero-delay echo (the next generation at the same time). The handler checks what a bundle
 * must be and fails the run (kr_error) if it is not:
 *  - members come in tie order: by sender, then by the sender's send count (carried in the
 *    payload, counted here as the engine counts sends);
 *  - at one time an LP runs at most one bundle of messages (generation 0, all sent at an
 *    earlier time) and then at most one of echoes (generation 1), never another.
 * It prints bundles of LPs divisible by 8 at random and, at the end, each LP's counts and a
 * hash of every member it saw, so every engine must commit the same bundles. With
 * -P misuse=1..4 it calls the bundle API wrongly: past the bundle's end, in init, in done()
 * and in finish (each a model error). */
#include <stdbool.h>
#include <string.h>
#include "kairos.h"

enum { MSG, ECHO };

struct note {
    uint64_t src, seq;       /* sender and its send count: the tie order */
    uint64_t value;
};

struct lpst {
    uint64_t sent;           /* sends so far (the engine's own count, from init on) */
    uint64_t hash, bundles, members, most;
    kr_time last;            /* time of the last bundle */
    bool had_msg, had_echo;  /* ...and what bundles it had then */
};

static void send(kr_lp me, struct lpst *s, kr_lp dest, kr_time t, unsigned type)
{
    struct note n = { me, s->sent++, kr_random_u64() };
    kr_schedule(dest, t, type, &n, sizeof n);
}

static void bundles_init(kr_lp me)
{
    struct lpst *s = kr_calloc(1, sizeof *s);
    s->last = -1;
    kr_set_state(s);
    if (kr_param_double("echo", 0.3) == 0) kr_set_lookahead(1); /* (for --sync conservative) */
    if (kr_param_int("misuse", 0) == 2 && me == 1) kr_bundle_count();
    for (int i = 0; i < 3; i++)
        send(me, s, kr_random_u64() % kr_lp_count(), (double)(1 + kr_random_u64() % 3), MSG);
}

/* A bundle of messages or of echoes, once per time each (echoes follow messages). */
static void check_kind(kr_lp me, kr_time now, struct lpst *s, unsigned type)
{
    if (now != s->last) {
        s->last = now;
        s->had_msg = s->had_echo = false;
    }
    if (type == MSG && (s->had_msg || s->had_echo))
        kr_error("LP %llu at %g: a second bundle with messages at one time",
                 (unsigned long long)me, now);
    if (type == ECHO && s->had_echo)
        kr_error("LP %llu at %g: a second bundle of echoes at one time", (unsigned long long)me,
                 now);
    if (type == MSG) s->had_msg = true;
    else s->had_echo = true;
}

static void bundles_event(kr_lp me, kr_time now, unsigned type, const void *payload,
                          size_t size, void *state)
{
    struct lpst *s = state;
    unsigned n = kr_bundle_count();
    const struct note *prev = NULL;
    check_kind(me, now, s, type);
    for (unsigned k = 0; k < n; k++) {
        unsigned ty;
        const void *p;
        size_t sz;
        kr_bundle_get(k, &ty, &p, &sz);
        if (k == 0 && (p != payload || sz != size || ty != type))
            kr_error("LP %llu at %g: member 0 is not the event passed to the handler",
                     (unsigned long long)me, now);
        const struct note *x = p;
        if (sz != sizeof *x || ty != type)
            kr_error("LP %llu at %g: member %u of %u: type %u (bundle of type %u), %zu bytes",
                     (unsigned long long)me, now, k, n, ty, type, sz);
        if (prev && (x->src < prev->src || (x->src == prev->src && x->seq <= prev->seq)))
            kr_error("LP %llu at %g: member %u (from LP %llu, send %llu) out of tie order",
                     (unsigned long long)me, now, k, (unsigned long long)x->src,
                     (unsigned long long)x->seq);
        prev = x;
        s->hash = (s->hash ^ x->value ^ (x->src << 40) ^ k) * 0x100000001b3ull;
        if (ty == MSG) send(me, s, kr_random_u64() % kr_lp_count(), now + 1 + kr_random_u64() % 2,
                            MSG);
        if (ty == MSG && kr_random() < kr_param_double("echo", 0.3))
            send(me, s, kr_random_u64() % kr_lp_count(), now, ECHO);
    }
    if (kr_param_int("misuse", 0) == 1 && now >= 5) kr_bundle_get(n, NULL, NULL, NULL);
    s->bundles++;
    s->members += n;
    if (n > s->most) s->most = n;
    if (me % 8 == 0 && kr_random() < 0.05)
        kr_printf("LP %llu at %g: %s bundle of %u\n", (unsigned long long)me, now,
                  type == MSG ? "message" : "echo", n);
}

/* With -P done_after=N, an LP is done once it ran N bundles (run with --end inf). */
static bool bundles_done(kr_lp me, const void *state)
{
    (void)me;
    if (kr_param_int("misuse", 0) == 3) kr_bundle_count();
    int64_t n = kr_param_int("done_after", 0);
    return n > 0 && ((const struct lpst *)state)->bundles >= (uint64_t)n;
}

static void bundles_finish(kr_lp me, void *state)
{
    struct lpst *s = state;
    if (kr_param_int("misuse", 0) == 4) kr_bundle_count();
    if (me == 0) /* (the run's settings, as every engine reads them) */
        kr_printf("end %g, seed %llu\n", kr_end_time(), (unsigned long long)kr_seed());
    kr_printf("LP %llu: %llu bundles, %llu events, largest %llu, hash %016llx\n",
              (unsigned long long)me, (unsigned long long)s->bundles,
              (unsigned long long)s->members, (unsigned long long)s->most,
              (unsigned long long)s->hash);
}

static const struct kr_param bundles_params[] = {
    { "echo", KR_PARAM_DOUBLE, "0.3", "chance that a message is echoed at zero delay (0: the model "
      "declares lookahead 1, which --sync conservative needs)", 0, 1 },
    { "done_after", KR_PARAM_INT, "0", "bundles after which an LP is done (0: never)", 0, 0 },
    { "misuse", KR_PARAM_INT, "0", "1..4: a wrong call of the bundle API (see the source)", 0, 4 },
    { 0 },
};

static const struct kr_model bundles_model = {
    .name = "bundles", .init = bundles_init, .event = bundles_event, .done = bundles_done,
    .finish = bundles_finish, .params = bundles_params,
#ifdef BUNDLES_AND_TYPE_ORDER /* (a model that asks for both: refused, bundles.py) */
    .flags = KR_MODEL_BUNDLES | KR_MODEL_TYPE_ORDER,
#else
    .flags = KR_MODEL_BUNDLES,
#endif
};

KR_MODEL_EXPORT(bundles, bundles_model)
