/* phold.c - PHOLD, the standard synthetic PDES benchmark. Each LP starts `population`
 * events; every event schedules one more at now + lookahead + exponential(mean), to a
 * uniformly random LP with probability `remote`, else to itself. Defaults are PHOLD-std
 * (docs/references.md): 1 event per LP, lookahead 0.1, mean 1.0, all destinations random.
 *
 * PHOLD-phases (paper 000, section 3.2): `mesh` M puts the LPs on an M x M torus and sends
 * every job to one of the 4 neighbours; `phase_length` L splits virtual time into three
 * phases [0, L), [L, 2L), [2L, ...) whose events do phase_a_us, phase_b_us, phase_c_us of
 * busy arithmetic (30, 150, 300 us by default):
 *   kairos run phold --lps 2025 -P mesh=45 -P population=5 -P phase_length=2 --end 6 */
#include <time.h>
#include "kairos.h"
#include "../common/spin.h"

struct phold_state {
    uint64_t events;            /* events this LP processed */
    uint64_t remote_sent;
    unsigned char *extra;       /* `state_bytes` of extra state, one line touched per event */
    uint64_t extra_n;
};

static const struct kr_param phold_params[] = {
    { "population", KR_PARAM_INT, "1", "initial events per LP", 0, 0 },
    { "lookahead", KR_PARAM_DOUBLE, "0.1", "fixed part of every timestamp increment", 0, 0 },
    { "mean", KR_PARAM_DOUBLE, "1.0", "mean of the exponential part of the increment", 0, 0 },
    { "remote", KR_PARAM_DOUBLE, "1.0", "probability that the destination is a random LP", 0, 1 },
    { "busy_us", KR_PARAM_DOUBLE, "0", "busy work per event, microseconds of wall time", 0, 0 },
    { "state_bytes", KR_PARAM_INT, "0", "extra state per LP, bytes", 0, 0 },
    { "mesh", KR_PARAM_INT, "0", "M > 0: LPs on an M x M torus (needs --lps M*M), jobs go to "
      "a random one of the 4 neighbours", 0, 0 },
    { "phase_length", KR_PARAM_DOUBLE, "0", "L > 0: three phases of virtual length L with the "
      "busy work below (PHOLD-phases)", 0, 0 },
    { "phase_a_us", KR_PARAM_DOUBLE, "30",
      "busy arithmetic per event in phase A, microseconds", 0, 0 },
    { "phase_b_us", KR_PARAM_DOUBLE, "150", "... in phase B", 0, 0 },
    { "phase_c_us", KR_PARAM_DOUBLE, "300", "... in phase C", 0, 0 },
    { 0 },
};

static void busy(double us)
{
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do {
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) * 1e-3 < us);
}

/* A random one of the 4 neighbours of `me` on the M x M torus. */
static kr_lp neighbour(kr_lp me, uint64_t m)
{
    uint64_t r = me / m, c = me % m;
    switch (kr_random_u64() % 4) {
    case 0: r = (r + 1) % m; break;
    case 1: r = (r + m - 1) % m; break;
    case 2: c = (c + 1) % m; break;
    default: c = (c + m - 1) % m;
    }
    return (kr_lp)(r * m + c);
}

/* (Parameters are read once per thread: a lookup is ~3 ns, and reading the six of an event
 * at each event made PHOLD-std 14% slower, 9.9 -> 8.5 M/s sequential.) */
static void send_next(kr_lp me, kr_time now, struct phold_state *s)
{
    static __thread double la = -1, mean, remote;
    static __thread int64_t mesh;
    if (la < 0) {
        la = kr_param_double("lookahead", 0.1);
        mean = kr_param_double("mean", 1.0);
        remote = kr_param_double("remote", 1.0);
        mesh = kr_param_int("mesh", 0);
    }
    kr_lp dest = me;
    if (mesh > 0) {
        dest = neighbour(me, (uint64_t)mesh);
        s->remote_sent++;
    } else if (remote >= 1.0 || kr_random() < remote) {
        dest = kr_random_u64() % kr_lp_count();
        s->remote_sent += dest != me;
    }
    kr_schedule(dest, now + la + kr_expo(mean), 0, NULL, 0);
}

static void phold_init(kr_lp me)
{
    int64_t mesh = kr_param_int("mesh", 0);
    if (mesh < 0 || (mesh > 0 && (uint64_t)mesh * (uint64_t)mesh != kr_lp_count()))
        kr_error("-P mesh=%lld needs --lps %lld (an M x M torus), this run has %llu LPs",
                 (long long)mesh, (long long)(mesh * mesh), (unsigned long long)kr_lp_count());
    struct phold_state *s = kr_malloc(sizeof *s);
    int64_t extra = kr_param_int("state_bytes", 0);
    if (extra > 0) {
        s->extra = kr_malloc((size_t)extra);
        s->extra_n = (uint64_t)extra;
    }
    kr_set_state(s);
    int64_t pop = kr_param_int("population", 1);
    for (int64_t i = 0; i < pop; i++) send_next(me, 0.0, s);
}

static void phold_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                        void *state)
{
    (void)type;
    (void)payload;
    (void)size;
    static __thread double busy_us = -1, phase_len, phase_us[3];
    if (busy_us < 0) {
        busy_us = kr_param_double("busy_us", 0);
        phase_len = kr_param_double("phase_length", 0);
        phase_us[0] = kr_param_double("phase_a_us", 30);
        phase_us[1] = kr_param_double("phase_b_us", 150);
        phase_us[2] = kr_param_double("phase_c_us", 300);
    }
    struct phold_state *s = state;
    kr_touch(s, sizeof *s); /* --state chunk: this event writes the LP's record... */
    s->events++;
    if (s->extra_n) { /* ...and one byte of the extra state */
        uint8_t *b = &s->extra[(s->events * 64) % s->extra_n];
        kr_touch(b, 1);
        (*b)++;
    }
    if (busy_us > 0) busy(busy_us);
    if (phase_len > 0) models_spin_us(phase_us[now < phase_len ? 0 : now < 2 * phase_len ? 1 : 2]);
    send_next(me, now, s);
}

/* Every send is at least `lookahead` ahead (the conservative engine's event duration):
 * known from the parameters before the run, so --conservative auto chooses windows. */
static kr_time phold_lookahead(void)
{
    return kr_param_double("lookahead", 0.1);
}

static const struct kr_model phold_model = {
    .name = "phold",
    .flags = KR_MODEL_MARKS_WRITES,
    .init = phold_init,
    .event = phold_event,
    .params = phold_params,
    .run_lookahead = phold_lookahead,
};

KR_MODEL_EXPORT(phold, phold_model)
