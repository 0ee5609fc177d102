/* test_options.c - what the option table (src/run/options.c) makes: --help lines within
 * the width, every option parsed back from its own default, the --stats "config" members
 * with the values set, and errors that name the option. */
#define _GNU_SOURCE
#include <stdio.h>
#include "check.h"
#include "core/core.h"
#include "base/error.h"
#include "run/options.h"
#include "optimistic/options.h"
#include "conservative/options.h"

static char *help_text(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    kr__options_help(f);
    fclose(f);
    return buf;
}

static char *json_text(const struct kr__config *c)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    kr__options_json(f, c);
    fclose(f);
    return buf;
}

static void parse(struct kr__config *c, int argc, char **argv)
{
    struct kr__error err = { 0 };
    for (int i = 0; i < argc; i++) CHECK(kr__option_parse(c, argc, argv, &i, &err) == KR_OK);
}

int main(void)
{
    char *help = help_text();
    unsigned lines = 0;
    for (char *l = help, *nl; *l; l = nl + 1) {
        CHECK((nl = strchr(l, '\n')) != NULL);
        CHECK(nl - l <= 88); /* (the width help_text wraps to) */
        lines++;
    }
    CHECK(lines > 60);
    const char *names[] = { "--sync ENGINE", "--state MODE", "--window N|auto", "--check",
                            "--scheduler-works on|off", "-P name=value" };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        CHECK(strstr(help, names[k]) != NULL);
    CHECK(strstr(help, "optimistic: how LP state is saved") != NULL);
    CHECK(strstr(help, "  scan   like page") != NULL); /* a table row kept as it is */
    free(help);

    struct kr__config c = { .model = "phold" };
    struct kr__error err = { 0 };
    CHECK(kr__options_defaults(&c, &err) == KR_OK);
    char *json = json_text(&c);
    CHECK(strstr(json, "\"window\": \"auto\"") && strstr(json, "\"ckpt_interval\": 16"));
    CHECK(strstr(json, "\"safe\": true") && strstr(json, "\"handoff\": \"push\""));
    CHECK(strstr(json, "\"sync\": \"optimistic\"") && strstr(json, "\"state\": \"full\""));
    free(json);

    char *set[] = { "--window", "64", "--safe", "off", "--handoff", "pull", "--state", "buddy",
                    "--ckpt-interval", "auto", "--arena-max", "2M", "--progress", "off",
                    "--sync", "sequential", "--end", "inf", "-P", "mean=2", "-Plookahead=1" };
    parse(&c, sizeof set / sizeof set[0], set);
    const struct kr__tw_options *tw = tw_options(&c);
    CHECK(tw->window == 64 && !tw->safe_events && cons_options(&c)->handoff_pull);
    CHECK(tw->ckpt_interval == 0 && c.arena_max == 2u << 20 && c.progress == 0);
    CHECK(c.state_given && c.opt_given[0] && !strcmp(c.opt_given[0], "--window"));
    CHECK(c.nparams == 2 && !strcmp(c.params[1].key, "lookahead"));
    json = json_text(&c);
    CHECK(strstr(json, "\"window\": 64") && strstr(json, "\"ckpt_interval\": 0"));
    CHECK(strstr(json, "\"safe\": false") && strstr(json, "\"handoff\": \"pull\""));
    CHECK(strstr(json, "\"state\": \"buddy\"") && strstr(json, "\"sync\": \"sequential\""));
    CHECK(strstr(json, "\"end\": null")); /* (inf is not a JSON number) */
    CHECK(strstr(json, "\"params\": {\"mean\": \"2\", \"lookahead\": \"1\"}"));
    free(json);
    kr__options_free(&c);

    char *bad[] = { "--arena-max", "3X" };
    int i = 0;
    CHECK(kr__option_parse(&c, 2, bad, &i, &err) == KR_ERR_USAGE);
    CHECK(strstr(err.msg, "--arena-max needs a size like 64M, got '3X'") != NULL);
    char *range[] = { "--tick-us", "5" };
    i = 0;
    CHECK(kr__option_parse(&c, 2, range, &i, &err) == KR_ERR_USAGE);
    CHECK(strstr(err.msg, "--tick-us must be from 20 to 1000000 microseconds") != NULL);
    return check_done("options");
}
