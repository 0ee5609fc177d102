/* test_cons.c - the conservative scheduler driven by hand (the test seam in
 * conservative/engine.c): this thread plays the scheduler and its three workers, and
 * chooses the order in which offloaded jobs complete - oldest first, newest first, or at
 * random - which real threads meet only by chance. After every turn of the scheduler:
 *  - no two jobs in flight belong to one LP;
 *  - a job in flight started before the completion of every job taken before it that is
 *    still in flight (Horizon's barrier: nothing can still be scheduled before it);
 *  - jobs retire in key order (the end key only grows).
 * And each whole run, with the barrier tracked or as barrier events, the scheduler running
 * events itself or holding them for a worker, commits the sequential engine's history (run
 * digest), with more than one job in flight at times. Two models: PHOLD (random times, every
 * event may go to any LP) and the null model with events lasting exactly until the next
 * one starts (ties between a start and a completion at every step; ends by done()). */
#include <math.h>
#include "check.h"
#include "conservative/cons.h"
#include "core/core.h"
#include "run/options.h"
#include "run/run.h"

#define WORKERS 3

enum policy { OLDEST, NEWEST, RANDOM };

/* A model and its arguments; how its runs end (RETIRE_*). (PHOLD keeps its parameters per
 * thread for the whole process: every run of one model here has the same.) */
struct model {
    const char *name;
    char *args[10];
    int nargs, ends;
};

static const struct model models[] = {
    { "phold", { "-P", "lookahead=0.5", "--end", "30" }, 4, CONS_RETIRE_MORE },
    { "null", { "-P", "modules=16", "-P", "events=12", "-P", "duration=1", "-P", "interval=1",
                "--end", "inf" }, 10, CONS_RETIRE_DONE },
};

static void configure(struct kr__config *c, const struct model *m, const char *engine,
                      const char *barriers, const char *works)
{
    char *args[] = { "--sync", (char *)engine, "--threads", "3", "--lps", "16", "--progress",
                     "off", "--event-timeout", "0", "--offload", "always", "--barriers",
                     (char *)barriers, "--scheduler-works", (char *)works };
    int argc = (int)(sizeof args / sizeof args[0]);
    if (!strcmp(engine, "sequential")) argc -= 6; /* (the conservative options) */
    struct kr__error err = { 0 };
    *c = (struct kr__config){ .model = m->name };
    CHECK(kr__options_defaults(c, &err) == KR_OK);
    for (int i = 0; i < argc; i++) CHECK(kr__option_parse(c, argc, args, &i, &err) == KR_OK);
    for (int i = 0; i < m->nargs; i++)
        CHECK(kr__option_parse(c, m->nargs, (char **)m->args, &i, &err) == KR_OK);
    CHECK(kr__options_finish(c, 1, &err) == KR_OK);
}

/* The invariants of one moment; returns how many jobs are in flight. */
static unsigned check_flight(const struct cons *c)
{
    unsigned n = 0;
    for (const struct cons_job *j = c->retire_head; j; j = j->next) {
        if (j->reaped) continue;
        n++;
        for (const struct cons_job *i = c->retire_head; i != j; i = i->next) {
            if (i->reaped) continue;
            CHECK(i->ev->dest != j->ev->dest);
            CHECK(j->ev->k.ts < i->tc);
        }
    }
    return n;
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* The worker whose next job the policy completes now (0: none has one). */
static unsigned pick(const struct cons *c, enum policy p, uint64_t *rng)
{
    unsigned best = 0, n = 0;
    const struct cons_job *bj = NULL;
    for (unsigned w = 1; w <= c->nw; w++) {
        const struct cons_worker *x = &c->w[w];
        const struct cons_job *j = atomic_load(&x->slot[x->take]);
        if (!j) continue;
        n++;
        bool better = !bj || (p == OLDEST && kr__key_lt(&j->ev->k, &bj->ev->k)) ||
                      (p == NEWEST && kr__key_lt(&bj->ev->k, &j->ev->k)) ||
                      (p == RANDOM && rng_next(rng) % n == 0);
        if (better) {
            best = w;
            bj = j;
        }
    }
    return best;
}

/* finish, and the run digest; the run and its configuration freed. */
static uint64_t finish(struct kr__run *r, struct kr__config *cfg)
{
    CHECK(kr__run_finish(r) == KR_OK);
    uint64_t d = r->run_digest;
    kr__run_free(r);
    kr__options_free(cfg);
    return d;
}

/* A whole run stepped by hand; its run digest. */
static uint64_t stepped_run(const struct model *m, const char *barriers, const char *works,
                            enum policy p, unsigned *most)
{
    struct kr__config cfg;
    configure(&cfg, m, "conservative", barriers, works);
    struct kr__run r;
    struct kr__error err = { 0 };
    CHECK(kr__run_setup(&r, &cfg, &err) == KR_OK);
    struct cons *c = cons_test_start(&r);
    CHECK(c->nw == WORKERS);
    uint64_t rng = 0x9E3779B97F4A7C15ull + (uint64_t)p;
    struct kr__key last = r.end_key;
    int t;
    *most = 0;
    while ((t = cons_test_turn(c)) < 0) {
        CHECK(!kr__key_lt(&r.end_key, &last));
        last = r.end_key;
        unsigned n = check_flight(c);
        if (n > *most) *most = n;
        bool now = t == CONS_TURN_WAIT || (p == RANDOM && rng_next(&rng) % 3 == 0);
        unsigned w = now ? pick(c, p, &rng) : 0;
        if (w) CHECK(cons_test_work(c, w));
        else CHECK(t != CONS_TURN_WAIT); /* (it waits only on a job a worker holds) */
    }
    if (t != m->ends) fprintf(stderr, "ended with %d: %s\n", t, c->err ? c->err : "");
    CHECK(t == m->ends && (t == CONS_RETIRE_DONE || c->nretire == 0));
    cons_test_end(&r, c, t);
    return finish(&r, &cfg);
}

static uint64_t sequential_run(const struct model *m)
{
    struct kr__config cfg;
    configure(&cfg, m, "sequential", NULL, NULL);
    struct kr__run r;
    struct kr__error err = { 0 };
    CHECK(kr__run_setup(&r, &cfg, &err) == KR_OK);
    CHECK(cfg.engine->run(&r) == KR_OK);
    return finish(&r, &cfg);
}

static void each_way(const struct model *m)
{
    uint64_t want = sequential_run(m);
    const char *barriers[] = { "free", "events" }, *works[] = { "on", "off" };
    for (unsigned b = 0; b < 2; b++)
        for (unsigned w = 0; w < 2; w++)
            for (enum policy p = OLDEST; p <= RANDOM; p++) {
                unsigned most;
                uint64_t d = stepped_run(m, barriers[b], works[w], p, &most);
                if (d != want || most < 2)
                    fprintf(stderr, "%s --barriers %s --scheduler-works %s, policy %d: digest "
                            "%016llx (want %016llx), at most %u in flight\n", m->name,
                            barriers[b], works[w], p, (unsigned long long)d,
                            (unsigned long long)want, most);
                CHECK(d == want);
                CHECK(most >= 2);
            }
}

int main(void)
{
    for (size_t k = 0; k < sizeof models / sizeof models[0]; k++) each_way(&models[k]);
    return check_done("cons");
}
