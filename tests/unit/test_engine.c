/* test_engine.c - the engine interface (core/core.h, struct kr__engine) is enough to write an
 * engine: a stub engine of one file - one heap, every event run and committed in key order,
 * for models without done(), queries, bundles or a commit hook - added to the table at run
 * time (kr__engine_add; a built-in engine is a line of the table in run/engines.c), chosen
 * by --sync, commits the sequential engine's history on built-in models (run digest), and
 * refuses what it cannot run: options through its descriptor's validate, queries through
 * no_queries, and done(), bundles or a commit hook when its run sees the model. Adding an
 * engine starts from this file (CONTRIBUTING.md). */
#include <fcntl.h>
#include <math.h>
#include <unistd.h>
#include "check.h"
#include "core/core.h"
#include "run/options.h"
#include "run/run.h"
#include "queue/heap.h"

/* ---- the stub engine ---- */

struct stub {
    struct kr__heap heap;
};

static void stub_send(struct kr__ctx *c, struct kr__ev *e)
{
    struct stub *s = c->eng;
    e->st = KR_EV_PENDING;
    kr__heap_push(&s->heap, e);
}

/* Output prints at once (every event commits as it ends); a model error is the run's. */
static const struct kr__engine_ops stub_ops = { stub_send, kr__emit_direct, NULL, NULL, NULL };

struct stub_body {
    struct kr__run *r;
    struct stub *s;
};

static void stub_loop(void *arg)
{
    struct stub_body *b = arg;
    struct kr__run *r = b->r;
    kr__lps_init_all(r);
    r->end_key = kr__key_at(0);
    struct kr__ev *e;
    while ((e = kr__heap_top(&b->s->heap)) && e->k.ts < r->cfg->end) {
        kr__heap_pop(&b->s->heap);
        struct kr__lp *lp = kr__lp_at(r, e->dest);
        kr__ctx_event(lp, e, KR_MODE_EVENT);
        kr__run_event(r, lp, e);
        kr__lp_commit_event(lp, e);
        r->end_key = e->k;
        r->end_key.seq++;
        kr__pool_put(&r->pools[0], e);
        r->counters[0].processed++;
    }
}

static int stub_run(struct kr__run *r)
{
    const struct kr_model *m = r->model;
    if (m->done || m->commit || (m->flags & KR_MODEL_BUNDLES))
        return kr__fail(&r->fail, KR_ERR_USAGE, "--sync stub: model '%s' uses done(), bundles "
                        "or a commit hook, which a stub engine does not run", m->name);
    struct stub s;
    kr__heap_init(&s.heap);
    kr__ctx.run = r;
    kr__ctx.ops = &stub_ops;
    kr__ctx.pool = &r->pools[0];
    kr__ctx.eng = &s;
    struct stub_body b = { r, &s };
    int st = kr__guarded(r, stub_loop, &b);
    kr__ctx.mode = KR_MODE_NONE;
    if (st == KR_OK) {
        struct kr__ev *top = kr__heap_top(&s.heap);
        kr__run_ended(r, false, top ? top->k.ts : INFINITY);
        r->final_gvt = top ? top->k.ts : INFINITY;
        r->counters[0].committed = r->counters[0].processed;
    }
    kr__heap_destroy(&s.heap);
    return st;
}

static unsigned stub_one(unsigned ncpu)
{
    (void)ncpu;
    return 1;
}

static unsigned stub_threads(const struct kr__config *cfg, uint64_t lps)
{
    (void)cfg, (void)lps;
    return 1;
}

static int stub_validate(const struct kr__config *cfg, struct kr__error *err)
{
    if (cfg->check)
        return kr__fail(err, KR_ERR_USAGE, "--sync stub: no --check (a stub engine)");
    return KR_OK;
}

static const struct kr__engine stub_engine = {
    .name = "stub", .no_queries = "it is a stub", .default_threads = stub_one,
    .threads = stub_threads, .validate = stub_validate, .run = stub_run,
};

/* ---- runs ---- */

/* Set up a run of `model` with `args`; KR_OK or the set-up's status (err says why). */
static int setup(struct kr__run *r, struct kr__config *c, const char *model, const char *engine,
                 char **args, int nargs, struct kr__error *err)
{
    char *base[] = { "--sync", (char *)engine, "--lps", "64", "--progress", "off" };
    *c = (struct kr__config){ .model = model };
    CHECK(kr__options_defaults(c, err) == KR_OK);
    for (int i = 0; i < 6; i++) CHECK(kr__option_parse(c, 6, base, &i, err) == KR_OK);
    for (int i = 0; i < nargs; i++) CHECK(kr__option_parse(c, nargs, args, &i, err) == KR_OK);
    int rc = kr__options_finish(c, 1, err);
    return rc ? rc : kr__run_setup(r, c, err);
}

/* A whole run's digest (0: it failed, with its status in *st). */
static uint64_t digest_of(const char *model, const char *engine, char **args, int nargs,
                          int *st)
{
    struct kr__config c;
    struct kr__run r;
    struct kr__error err = { 0 };
    *st = setup(&r, &c, model, engine, args, nargs, &err);
    uint64_t d = 0;
    if (*st == KR_OK) {
        *st = c.engine->run(&r);
        if (*st == KR_OK && kr__run_finish(&r) == KR_OK) d = r.run_digest;
        kr__run_free(&r);
    }
    kr__options_free(&c);
    return d;
}

static void same_history(const char *model, char **args, int nargs)
{
    int st;
    uint64_t want = digest_of(model, "sequential", args, nargs, &st);
    CHECK(want != 0 && st == KR_OK);
    uint64_t got = digest_of(model, "stub", args, nargs, &st);
    if (got != want)
        fprintf(stderr, "%s: stub %016llx, sequential %016llx\n", model,
                (unsigned long long)got, (unsigned long long)want);
    CHECK(got == want && st == KR_OK);
}

/* What the descriptor says it cannot do is refused at set-up, with the reason. */
static void refused(const char *model, char **args, int nargs, const char *needle)
{
    struct kr__config c;
    struct kr__run r;
    struct kr__error err = { 0 };
    int st = setup(&r, &c, model, "stub", args, nargs, &err);
    if (st == KR_OK) kr__run_free(&r);
    CHECK(st == KR_ERR_USAGE && strstr(err.msg, needle));
    if (st != KR_ERR_USAGE || !strstr(err.msg, needle)) fprintf(stderr, "got: %s\n", err.msg);
    kr__options_free(&c);
}

int main(void)
{
    int out = dup(1), null = open("/dev/null", O_WRONLY); /* (the models' committed output) */
    CHECK(out >= 0 && null >= 0 && dup2(null, 1) == 1);
    CHECK(kr__engine_add(&stub_engine) == 0);
    CHECK(kr__engine_add(&stub_engine) == -1); /* (the name is taken) */
    CHECK(kr__engine_find("stub") == &stub_engine);
    CHECK(strstr(kr__engine_names(), "or stub") != NULL); /* (what --sync's error lists) */
    char *phold[] = { "--end", "200" };
    char *queueing[] = { "--end", "100" };
    char *pcs[] = { "--end", "2" };
    char *datastore[] = { "--end", "50" };
    same_history("phold", phold, 2);
    same_history("queueing", queueing, 2);
    same_history("pcs", pcs, 2);
    same_history("datastore", datastore, 2);
    char *check[] = { "--end", "10", "--check" };
    refused("phold", check, 3, "no --check");
    refused("commo", phold, 2, "it is a stub"); /* (a model with queries) */
    int st;
    CHECK(digest_of("null", "stub", phold, 2, &st) == 0 && st == KR_ERR_USAGE); /* (done()) */
    fflush(stdout);
    dup2(out, 1);
    return check_done("engine");
}
