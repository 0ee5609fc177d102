/* runla.c - a test model whose lookahead is a parameter, declared by run_lookahead (issue
 * 39): every LP passes a token to the next one, each hop `la` plus an exponential later, so
 * `la` is the lookahead, known before the run - the conservative engine's `auto` chooses
 * windows for a positive one. -P la=-1 makes run_lookahead return a value the loader must
 * refuse; built with RUNLA_BOTH it also declares a `lookahead`, which is refused too. */
#include "kairos.h"

static const struct kr_param runla_params[] = {
    { "la", KR_PARAM_DOUBLE, "0.5", "each hop's least delay: the lookahead", 0, 0 },
    { 0 },
};

static kr_time runla_lookahead(void)
{
    return kr_param_double("la", 0.5);
}

static void hop(kr_lp me, kr_time now)
{
    double la = kr_param_double("la", 0.5);
    kr_schedule((me + 1) % kr_lp_count(), now + la + kr_expo(1), 0, NULL, 0);
}

static void runla_init(kr_lp me)
{
    uint64_t *hops = kr_calloc(1, sizeof *hops);
    kr_set_state(hops);
    hop(me, 0);
}

static void runla_event(kr_lp me, kr_time now, unsigned type, const void *payload,
                        size_t size, void *state)
{
    (void)type, (void)payload, (void)size;
    uint64_t *hops = state;
    kr_touch(hops, sizeof *hops);
    ++*hops;
    hop(me, now);
}

static void runla_finish(kr_lp me, void *state)
{
    kr_printf("LP %llu: %llu hops\n", (unsigned long long)me,
              (unsigned long long)*(uint64_t *)state);
}

static const struct kr_model runla_model = {
    .name = "runla",
    .init = runla_init,
    .event = runla_event,
    .finish = runla_finish,
    .params = runla_params,
    .run_lookahead = runla_lookahead,
#ifdef RUNLA_BOTH
    .lookahead = 1,
#endif
};

KR_MODEL_EXPORT(runla, runla_model)
