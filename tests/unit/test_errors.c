/* test_errors.c - the library's error contract (src/core/error.h): before the engine starts
 * and after it ends, a failure comes back to the caller as a status and a message, and the
 * process goes on; the library can then run again. Each case is one kr__run_main or option
 * call in this process, which would have ended it before. */
#include <math.h>
#include "check.h"
#include "core/core.h"
#include "core/error.h"
#include "core/options.h"

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

int main(void)
{
    bad_options();
    bad_runs();
    /* ...and after all that, a run that works, twice */
    char *ok[] = { "--lps", "16", "--end", "5", "--sync", "sequential", "--progress", "off" };
    for (int k = 0; k < 2; k++) {
        struct kr__error err = { 0 };
        struct kr__config c = config("phold", 8, ok);
        CHECK(run(&c, &err) == KR_OK);
    }
    return check_done("errors");
}
