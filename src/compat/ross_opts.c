/* ross_opts.c - ROSS's command line for the ROSS layer: option tables (tw_opt_add), the
 * kernel's own options (--synch, --end, --rng-seed1 ...), --help, and what is left for
 * Kairos's options (--threads, --stats ...), which tw_run passes on. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ross.h"
#include "compat/ross_int.h"
#include "run/options.h"

#define ROSS_MAX_GROUPS 32

static unsigned nkp, batch, extramem, buddy, lz4, avl;
static unsigned long long max_opt_la;
static unsigned seed_lp[4], seed_core[4];
static char args_file[4096];

/* The kernel's options: read, and those with no meaning on Kairos ignored (said in --help). */
static const tw_optdef kernel_opts[] = {
    TWOPT_GROUP("ROSS Kernel (on Kairos)"),
    TWOPT_UINT("synch", g_tw_synchronization_protocol,
               "1 sequential, 2 conservative, 3 or 5 optimistic, 4 or 6 sequential --check "
               "(default: Kairos's, the optimistic engine)"),
    TWOPT_DOUBLE("end", g_tw_ts_end, "simulation end timestamp"),
    TWOPT_DOUBLE("cons-lookahead", g_tw_lookahead, "set g_tw_lookahead"),
    TWOPT_UINT("rng-seed1", seed_lp[0], "RNG seed 1 of 4"),
    TWOPT_UINT("rng-seed2", seed_lp[1], "RNG seed 2 of 4"),
    TWOPT_UINT("rng-seed3", seed_lp[2], "RNG seed 3 of 4"),
    TWOPT_UINT("rng-seed4", seed_lp[3], "RNG seed 4 of 4"),
    TWOPT_UINT("core-rng-seed1", seed_core[0], "core RNG seed 1 of 4"),
    TWOPT_UINT("core-rng-seed2", seed_core[1], "core RNG seed 2 of 4"),
    TWOPT_UINT("core-rng-seed3", seed_core[2], "core RNG seed 3 of 4"),
    TWOPT_UINT("core-rng-seed4", seed_core[3], "core RNG seed 4 of 4"),
    TWOPT_UINT("nkp", nkp, "ignored (Kairos has no kernel processes)"),
    TWOPT_UINT("batch", batch, "ignored"),
    TWOPT_UINT("extramem", extramem, "ignored (Kairos's event memory grows as needed)"),
    TWOPT_UINT("buddy-size", buddy, "ignored"),
    TWOPT_UINT("lz4-knob", lz4, "ignored"),
    TWOPT_UINT("avl-size", avl, "ignored"),
    TWOPT_ULONGLONG("max-opt-lookahead", max_opt_la, "ignored (Kairos bounds its optimism "
                    "itself; --window)"),
    TWOPT_ARGSFILE("args-file", args_file, "not supported on Kairos: give the options on "
                   "the command line"),
    TWOPT_END()
};

static const tw_optdef *groups[ROSS_MAX_GROUPS + 1] = { kernel_opts };
static unsigned ngroups = 1;
static int rest_argc;
static char **rest_argv;
static const char *program = "ross";

void tw_opt_add(const tw_optdef *options)
{
    if (!options || !options->type) return;
    if (ngroups == ROSS_MAX_GROUPS) ross_die("tw_opt_add: more than %d option tables",
                                             ROSS_MAX_GROUPS);
    groups[ngroups++] = options;
}

static void print_value(FILE *f, const tw_optdef *d)
{
    switch (d->type) {
    case TWOPTTYPE_ULONG: fprintf(f, "%lu", *(unsigned long *)d->value); break;
    case TWOPTTYPE_ULONGLONG: fprintf(f, "%llu", *(unsigned long long *)d->value); break;
    case TWOPTTYPE_UINT: fprintf(f, "%u", *(unsigned *)d->value); break;
    case TWOPTTYPE_STIME:
    case TWOPTTYPE_DOUBLE: fprintf(f, "%g", *(double *)d->value); break;
    case TWOPTTYPE_CHAR: fprintf(f, "%s", (const char *)d->value); break;
    case TWOPTTYPE_FLAG: fprintf(f, "%s", *(unsigned *)d->value ? "on" : "off"); break;
    default: break;
    }
}

/* One option's line of the help: its name, its text and (values) its value now. */
static void print_row(FILE *f, const tw_optdef *d, bool values)
{
    fprintf(f, "  --%-20s %s", d->name, d->help ? d->help : "");
    if (values && d->value && d->type != TWOPTTYPE_ARGSFILE) {
        fputs(" (", f);
        print_value(f, d);
        fputs(")", f);
    }
    fputc('\n', f);
}

static void print_groups(FILE *f, bool values)
{
    for (unsigned g = 0; g < ngroups; g++)
        for (const tw_optdef *d = groups[g]; d->type; d++) {
            if (d->type == TWOPTTYPE_GROUP) {
                fprintf(f, "\n%s:\n", d->help);
                continue;
            }
            print_row(f, d, values);
        }
}

void tw_opt_print(void)
{
    print_groups(stdout, true);
}

void tw_opt_settings(FILE *f)
{
    print_groups(f, true);
}

static void show_help(void)
{
    printf("Usage: %s [ROSS options --name=value] [Kairos options]\n"
           "A ROSS model running on Kairos (docs/from-ross-rootsim.md).\n", program);
    print_groups(stdout, true);
    printf("\nKairos options (as 'kairos run' takes them; the LP count comes from "
           "tw_define_lps and the end time from --end=T):\n");
    kr__options_help(stdout);
    printf("\nResuming (a run that wrote snapshots with --snapshot DIR):\n"
           "  --resume DIR         continue from the snapshot in DIR: give the program's own "
           "options again,\n"
           "                       append to the first run's output (>> FILE)\n");
    exit(0);
}

static bool number_ok(const char *v, const char *end)
{
    return v[0] && end && !*end && errno == 0;
}

/* An unsigned option's value: false if it does not fit. */
static bool read_uint(const tw_optdef *d, const char *v, char **end)
{
    unsigned long x = strtoul(v, end, 0);
    if (x > 0xffffffffUL) return false;
    *(unsigned *)d->value = (unsigned)x;
    return true;
}

static bool real_type(int type)
{
    return type == TWOPTTYPE_STIME || type == TWOPTTYPE_DOUBLE;
}

/* One option's value into its variable; false if it does not read as one. */
static bool apply(const tw_optdef *d, const char *v)
{
    char *end = NULL;
    errno = 0;
    switch (d->type) {
    case TWOPTTYPE_ULONG: *(unsigned long *)d->value = strtoul(v, &end, 0); break;
    case TWOPTTYPE_ULONGLONG: *(unsigned long long *)d->value = strtoull(v, &end, 0); break;
    case TWOPTTYPE_UINT:
        if (!read_uint(d, v, &end)) return false;
        break;
    case TWOPTTYPE_STIME:
    case TWOPTTYPE_DOUBLE: *(double *)d->value = strtod(v, &end); break;
    case TWOPTTYPE_CHAR: memcpy(d->value, v, strlen(v) + 1); return true;
    default: return false;
    }
    /* (strtoul reads "-1" as the largest value: a sign is refused for the unsigned ones) */
    return number_ok(v, end) && (real_type(d->type) || v[0] != '-');
}

/* Whether option d is the one called name[0..len) (a group's heading is no option). */
static bool named(const tw_optdef *d, const char *name, size_t len)
{
    return d->name && d->type != TWOPTTYPE_GROUP && strlen(d->name) == len &&
           !strncmp(d->name, name, len);
}

static const tw_optdef *find(const char *name, size_t len)
{
    for (unsigned g = 0; g < ngroups; g++)
        for (const tw_optdef *d = groups[g]; d->type; d++)
            if (named(d, name, len)) return d;
    return NULL;
}

static bool take_flag(const tw_optdef *d, const char *eq)
{
    if (eq) ross_die("option --%s is a flag: give it without a value", d->name);
    *(unsigned *)d->value = 1;
    return true;
}

/* A --name or --name=value of ROSS's tables: true if taken (its value set). */
static bool take(const char *arg)
{
    const char *name = arg + 2, *eq = strchr(name, '=');
    const tw_optdef *d = find(name, eq ? (size_t)(eq - name) : strlen(name));
    if (!d) return false;
    if (d->type == TWOPTTYPE_FLAG) return take_flag(d, eq);
    if (d->type == TWOPTTYPE_ARGSFILE)
        ross_die("--%s: option files are not supported on Kairos; give the options on the "
                 "command line", d->name);
    if (!eq) return false; /* (Kairos's --end T, say: refused by tw_run) */
    if (!apply(d, eq + 1))
        ross_die("option --%s: '%s' is not a valid value", d->name, eq + 1);
    return true;
}

/* What the model gets back starts as the program's name, which the help shows too. */
static void rest_start(int n, char **in)
{
    rest_argv = calloc((size_t)n + 1, sizeof *rest_argv);
    if (!rest_argv) ross_die("out of memory reading the command line");
    rest_argc = 0;
    if (n <= 0) return;
    const char *slash = strrchr(in[0], '/');
    program = slash ? slash + 1 : in[0];
    rest_argv[rest_argc++] = in[0];
}

void ross_opts_parse(int *argc, char ***argv)
{
    int n = *argc;
    char **in = *argv;
    rest_start(n, in);
    for (int i = 1; i < n; i++) {
        const char *a = in[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) show_help();
        if (strncmp(a, "--", 2) || !take(a)) rest_argv[rest_argc++] = in[i];
    }
    /* ROSS leaves argv to the model as what it did not read: so does this */
    *argc = rest_argc;
    *argv = rest_argv;
}

int ross_opts_rest(char ***argv)
{
    *argv = rest_argv;
    return rest_argc;
}

/* The four parts given on the command line, or ROSS's defaults: 11111111 x (first + j)
 * (LP streams 11111111 .. 44444444, core streams 55555555 .. 88888888). */
static void seed_or(uint32_t out[4], const unsigned given[4], uint32_t first)
{
    bool any = given[0] || given[1] || given[2] || given[3];
    for (uint32_t j = 0; j < 4; j++) out[j] = any ? given[j] : 11111111u * (first + j);
}

void ross_opts_seeds(uint32_t lp_seed[4], uint32_t core_seed[4])
{
    seed_or(lp_seed, seed_lp, 1);
    seed_or(core_seed, seed_core, 5);
}

void ross_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "kairos: error: %s: ", program);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}
