/* test_errors.c - the library's error contract (src/base/error.h): a failure comes back to
 * the caller as a status and a message, and the process goes on; the library can then run
 * again. Before the engine starts (options, model, parameters), after it ends (--stats), and
 * a model error on the committed path during the run, on every engine: in init, in an event
 * (kr_error, a crash), in done(), in finish. Each case is one kr__run_main or option call in
 * this process, which would have ended it before. argv[1]: the misuse test model. */
#include <math.h>
#include "check.h"
#include "core/core.h"
#include "base/error.h"
#include "run/options.h"

static struct kr__config config(const char *model, int argc, char **argv)
{
    struct kr__config c = { .model = model };
    struct kr__error err = { 0 };
    CHECK(kr__options_defaults(&c, &err) == KR_OK);
    for (int i = 0; i < argc; i++) CHECK(kr__option_parse(&c, argc, argv, &i, &err) == KR_OK);
    CHECK(kr__options_finish(&c, 1, &err) == KR_OK);
    return c;
}

static int run(struct kr__config *c, struct kr__error *err)
{
    int interrupted = -1;
    int st = kr__run_main(c, err, &interrupted);
    CHECK(interrupted == 0);
    kr__options_free(c);
    return st;
}

static void bad_options(void)
{
    struct kr__config c = { .model = "phold" };
    struct kr__error err = { 0 };
    CHECK(kr__options_defaults(&c, &err) == KR_OK);
    char *bad[][2] = { { "--threads", "0" }, { "--sync", "pessimistic" }, { "--end", "-1" },
                       { "--bogus", "1" }, { "--state", "nope" } };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int i = 0;
        err.status = KR_OK;
        CHECK(kr__option_parse(&c, 2, bad[k], &i, &err) == KR_ERR_USAGE);
        CHECK(err.status == KR_ERR_USAGE && strstr(err.msg, bad[k][0]) != NULL);
    }
    int i = 0;
    char *novalue[] = { "--seed" };
    CHECK(kr__option_parse(&c, 1, novalue, &i, &err) == KR_ERR_USAGE);
    CHECK(strstr(err.msg, "needs a value") != NULL);
    char *cons[] = { "--sync", "conservative", "--check" }; /* (the engine's validate hook) */
    for (i = 0; i < 3; i++) CHECK(kr__option_parse(&c, 3, cons, &i, &err) == KR_OK);
    CHECK(kr__options_finish(&c, 1, &err) == KR_ERR_USAGE && strstr(err.msg, "--check"));
    kr__options_free(&c);
}

static void bad_runs(void)
{
    struct kr__error err = { 0 };
    struct kr__config c = config("nosuchmodel", 0, NULL);
    CHECK(run(&c, &err) == KR_ERR_USAGE && strstr(err.msg, "unknown model 'nosuchmodel'"));
    c = config("./nosuch.so", 0, NULL);
    CHECK(run(&c, &err) == KR_ERR_USAGE && strstr(err.msg, "cannot load model"));
    char *p1[] = { "-P", "nosuch=1" };
    c = config("phold", 2, p1);
    CHECK(run(&c, &err) == KR_ERR_USAGE && strstr(err.msg, "has no parameter 'nosuch'"));
    char *p2[] = { "-P", "batch=0", "--lps", "4" };
    c = config("datastore", 4, p2);
    CHECK(run(&c, &err) == KR_ERR_USAGE && strstr(err.msg, "must be from 1 to"));
    char *stats[] = { "--stats", "/nonexistent-dir/s.json", "--lps", "16", "--end", "2",
                      "--sync", "sequential", "--progress", "off" };
    c = config("phold", 10, stats);
    CHECK(run(&c, &err) == KR_ERR_RESOURCE && strstr(err.msg, "cannot write statistics"));
}

/* Cases of tests/models/misuse.c, each with what its message must say. */
static const struct {
    const char *ccase, *says;
} misuse[] = {
    { "11", "LP 1, in init: kr_schedule" },              /* INIT_ERROR */
    { "9", "the customer count went negative (-3)" },     /* USER_ERROR, in an event */
    { "12", "done() returned false after it had returned true" }, /* NOT_MONOTONE */
    { "10", "LP 0, in finish: kr_schedule" },            /* IN_FINISH */
    { "16", "SIGFPE" },                                   /* DIV_ZERO, a crash in an event */
#if !defined(__SANITIZE_THREAD__) /* (there the overflow faults inside ThreadSanitizer's
                                    * runtime, which fault.c treats as the C library: a
                                    * crash that may hold locks ends the process) */
    { "17", "overflowed its stack" },                     /* STACK_OVERFLOW */
#endif
};

static void model_errors(const char *so)
{
    const char *engines[][2] = { { "sequential", "1" }, { "optimistic", "1" },
                                 { "optimistic", "2" }, { "conservative", "2" } };
    for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++) {
        for (size_t k = 0; k < sizeof misuse / sizeof misuse[0]; k++) {
            char ccase[32];
            snprintf(ccase, sizeof ccase, "case=%s", misuse[k].ccase);
            char *args[] = { "--lps", "4", "--end", "10", "--progress", "off", "--sync",
                             (char *)engines[e][0], "--threads", (char *)engines[e][1], "-P",
                             ccase, "-P", "spans=1" };
            struct kr__config c = config(so, 14, args);
            struct kr__error err = { 0 };
            int st = run(&c, &err);
            if (st != KR_ERR_MODEL || !strstr(err.msg, misuse[k].says))
                fprintf(stderr, "%s, %s threads, case %s: status %d, '%s'\n", engines[e][0],
                        engines[e][1], misuse[k].ccase, st, err.msg);
            CHECK(st == KR_ERR_MODEL && strstr(err.msg, misuse[k].says));
            CHECK(strstr(err.msg, "model 'misuse'"));
        }
    }
}

int main(int argc, char **argv)
{
    bad_options();
    bad_runs();
    if (argc > 1) model_errors(argv[1]);
    /* ...and after all that, a run that works, twice */
    char *ok[] = { "--lps", "16", "--end", "5", "--sync", "sequential", "--progress", "off" };
    for (int k = 0; k < 2; k++) {
        struct kr__error err = { 0 };
        struct kr__config c = config("phold", 8, ok);
        CHECK(run(&c, &err) == KR_OK);
    }
    return check_done("errors");
}
