/* ring.c - an outside model, built as a shared object and run with
 *     kairos run ./libring.so --end inf
 * Tokens travel around a ring of LPs; each hop takes 1 + exponential(0.5) time units. An LP
 * is done once it has forwarded `laps` tokens, so the run ends by done(), not by --end.
 * Build it like models/example/CMakeLists.txt does: -DKR_OUTSIDE_MODEL, -fPIC, -shared,
 * and the include path of kairos.h; no library to link (kairos provides the API). */
#include <string.h>
#include "kairos.h"

struct ring_state {
    uint64_t forwarded;
    uint64_t hops_total;         /* sum of the hop counts carried by tokens seen */
};

static const struct kr_param ring_params[] = {
    { "laps", KR_PARAM_INT, "1000", "tokens each LP forwards before it is done", 0, 0 },
    { "tokens", KR_PARAM_INT, "1", "tokens each LP starts", 0, 0 },
    { 0 },
};

static void ring_init(kr_lp me)
{
    struct ring_state *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    if (me == 0)
        kr_printf("ring of %llu LPs, %lld laps each\n", (unsigned long long)kr_lp_count(),
                  (long long)kr_param_int("laps", 1000));
    uint64_t hops = 0;
    for (int64_t i = 0; i < kr_param_int("tokens", 1); i++)
        kr_schedule(me, kr_expo(1.0), 0, &hops, sizeof hops);
}

static void ring_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                       void *state)
{
    (void)type;
    struct ring_state *s = state;
    uint64_t hops;
    if (size != sizeof hops) kr_error("token payload has %zu bytes, expected 8", size);
    memcpy(&hops, payload, sizeof hops);
    hops++;
    s->hops_total += hops;
    s->forwarded++;
    kr_schedule((me + 1) % kr_lp_count(), now + 1.0 + kr_expo(0.5), 0, &hops, sizeof hops);
}

static bool ring_done(kr_lp me, const void *state)
{
    (void)me;
    const struct ring_state *s = state;
    return s->forwarded >= (uint64_t)kr_param_int("laps", 1000);
}

static void ring_finish(kr_lp me, void *state)
{
    struct ring_state *s = state;
    if (me < 4)
        kr_printf("LP %llu forwarded %llu tokens, hop sum %llu\n", (unsigned long long)me,
                  (unsigned long long)s->forwarded, (unsigned long long)s->hops_total);
}

static const struct kr_model ring_model = {
    .name = "ring",
    .init = ring_init,
    .event = ring_event,
    .done = ring_done,
    .finish = ring_finish,
    .lookahead = 1.0,
    .params = ring_params,
};

KR_MODEL_EXPORT(ring, ring_model)
