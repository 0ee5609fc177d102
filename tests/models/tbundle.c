/* tbundle.c - timers in same-time bundles (KR_MODEL_BUNDLES; issue 37 item 2): at every
 * integer time each LP gets one bundle of plain events (from itself and from other LPs)
 * and of the timers it set a step before, some of which it cancelled meanwhile. The
 * handler checks the bundle itself (kr_error if wrong): it holds every plain event sent to
 * it for that time and exactly the timers not cancelled, each once; then it sets timers
 * for the next step, cancels some of them at once and some (set a step earlier, due now +
 * 1) later, and sends plain events. Each LP counts what it expects in its state, so the
 * check holds on every engine, rolled back with the rest. Built with TBUNDLE_QUERY it also
 * answers queries (the members it has seen) and every bundle asks its own LP - the answer
 * must be the count before the bundle - and the next LP, whose answer enters its hash:
 * queries from bundles, on the optimistic engine too. */
#include <stdint.h>
#include <string.h>
#include "kairos.h"

#define TIMERS 6

enum { PLAIN, TIMER };

struct tb {
    kr_timer t[2][TIMERS];    /* the timers due at a step, in group step % 2 */
    uint32_t live[2];         /* bit i: t[g][i] not cancelled */
    uint32_t plain_next;      /* plain events sent to this LP for the next step, from it */
    uint64_t seen, hash;
};

struct msg {
    uint32_t kind, slot;
    uint64_t step;
};

static void sends(kr_lp me, kr_time now, struct tb *s)
{
    kr_lp n = kr_lp_count();
    for (int i = 0; i < 2; i++) { /* (to itself: counted, so the bundle can be checked) */
        struct msg m = { PLAIN, 0, (uint64_t)now + 1 };
        kr_schedule(me, now + 1, PLAIN, &m, sizeof m);
        s->plain_next++;
    }
    struct msg m = { PLAIN, 1, (uint64_t)now + 1 }; /* (others': not counted) */
    kr_schedule((me + 1 + kr_random_u64() % (n > 1 ? n - 1 : 1)) % n, now + 1, PLAIN, &m,
                sizeof m);
}

/* Timers due at `due` into group `due % 2`, a quarter cancelled at once. */
static void set_group(uint64_t due, struct tb *s)
{
    unsigned h = due % 2;
    s->live[h] = 0;
    for (int i = 0; i < TIMERS; i++) {
        struct msg m = { TIMER, (uint32_t)i, due };
        s->t[h][i] = kr_timer_set((kr_time)due, TIMER, &m, sizeof m);
        s->live[h] |= 1u << i;
        if (kr_random() < 0.25 && kr_timer_cancel(&s->t[h][i])) s->live[h] &= ~(1u << i);
    }
}

/* At step `now`: cancel some of the timers due at the next step (set a step ago), and set
 * those due the step after. */
static void arm(uint64_t now, struct tb *s)
{
    unsigned g = (now + 1) % 2;
    for (int i = 0; i < TIMERS; i++)
        if ((s->live[g] >> i & 1) && kr_random() < 0.3) {
            if (!kr_timer_cancel(&s->t[g][i])) kr_error("a pending timer would not cancel");
            s->live[g] &= ~(1u << i);
        }
    set_group(now + 2, s);
}

static void tb_init(kr_lp me)
{
    struct tb *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    sends(me, 0, s);
    set_group(1, s);
    set_group(2, s);
}

/* The bundle at `now`: the plain events this LP sent itself, the live timers, once each. */
static void check(kr_time now, struct tb *s, uint32_t plain, uint32_t timers)
{
    if (plain != s->plain_next)
        kr_error("at %g: %u of this LP's own plain events in the bundle, %u sent", now, plain,
                 s->plain_next);
    uint32_t live = s->live[(uint64_t)now % 2];
    if (timers != live)
        kr_error("at %g: timers %#x in the bundle, %#x not cancelled", now, timers, live);
}

#ifdef TBUNDLE_QUERY
static size_t tb_answer(kr_lp me, kr_time now, const void *q, size_t size, const void *state,
                        void *ans, size_t cap)
{
    (void)me, (void)now, (void)q, (void)size;
    const struct tb *s = state;
    if (cap < sizeof s->seen) return 0;
    memcpy(ans, &s->seen, sizeof s->seen);
    return sizeof s->seen;
}

/* Its own count before the bundle, and the next LP's now. */
static void ask(kr_lp me, kr_time now, struct tb *s, uint64_t before)
{
    uint64_t own = 0, next = 0;
    if (kr_query(me, NULL, 0, &own, sizeof own) != sizeof own || own != before)
        kr_error("at %g: asked itself, got %llu members seen, %llu before the bundle", now,
                 (unsigned long long)own, (unsigned long long)before);
    kr_query((me + 1) % kr_lp_count(), NULL, 0, &next, sizeof next);
    s->hash = (s->hash ^ next) * 0x100000001b3ull;
}
#endif

static void tb_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                     void *state)
{
    (void)type, (void)payload, (void)size;
    struct tb *s = state;
    uint64_t before = s->seen;
    (void)before;
    uint32_t plain = 0, timers = 0;
    for (unsigned k = 0; k < kr_bundle_count(); k++) {
        const void *p;
        kr_bundle_get(k, NULL, &p, NULL);
        const struct msg *m = p;
        if (m->step != (uint64_t)now) kr_error("a member of step %llu at %g",
                                               (unsigned long long)m->step, now);
        if (m->kind == TIMER && (timers >> m->slot & 1)) kr_error("timer %u twice", m->slot);
        if (m->kind == TIMER) timers |= 1u << m->slot;
        else plain += m->slot == 0;
        s->seen++;
        s->hash = (s->hash ^ (m->kind * 64 + m->slot)) * 0x100000001b3ull;
    }
    check(now, s, plain, timers);
#ifdef TBUNDLE_QUERY
    ask(me, now, s, before);
#endif
    s->plain_next = 0;
    sends(me, now, s);
    arm((uint64_t)now, s);
}

static void tb_finish(kr_lp me, void *state)
{
    struct tb *s = state;
    kr_printf("LP %llu: %llu members, hash %016llx\n", (unsigned long long)me,
              (unsigned long long)s->seen, (unsigned long long)s->hash);
}

static const struct kr_model tb_model = {
    .name = "tbundle", .init = tb_init, .event = tb_event, .finish = tb_finish,
    .lookahead = 1, .flags = KR_MODEL_BUNDLES,
#ifdef TBUNDLE_QUERY
    .query = tb_answer,
#endif
};

KR_MODEL_EXPORT(tbundle, tb_model)
