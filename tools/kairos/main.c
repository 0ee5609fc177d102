/* main.c - the `kairos` command line: run a model on an engine, list models, help. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../../src/core/core.h"
#include "../../src/core/error.h"
#include "../../src/stats/statesave.h"

#define KAIROS_VERSION "0.1.0"

static void usage(FILE *f)
{
    fputs(
        "Kairos " KAIROS_VERSION " - parallel discrete event simulation (Linux x86-64)\n"
        "\n"
        "Usage:\n"
        "  kairos run MODEL [options] [-P name=value ...]   run a model\n"
        "  kairos run MODEL --help                         list the model's parameters\n"
        "  kairos models                                   list the built-in models\n"
        "  kairos --help | --version\n"
        "\n"
        "MODEL is a built-in model name (see 'kairos models') or the path of a model shared\n"
        "object that exports kr_model_entry(), e.g. ./mymodel.so.\n"
        "\n"
        "Options of 'run':\n"
        "  --sync ENGINE        optimistic (Time Warp, default) or sequential\n"
        "  --threads N          worker threads of the optimistic engine (default: all cores)\n"
        "  --lps N              number of logical processes (default 1024)\n"
        "  --end T              end of virtual time: events at T or later do not run\n"
        "                       (default 1000; 'inf' runs until the model's done() holds)\n"
        "  --seed S             seed of every LP's random stream (default 1)\n"
        "  --state MODE         how the optimistic engine saves LP state (default full):\n"
        "                         full   copy every live block at each checkpoint\n"
        "                         chunk  incremental: blocks marked written (kr_touch,\n"
        "                                kairos/transparent.h or the instrumented build)\n"
        "                         page   incremental: pages caught by write protection\n"
        "                         buddy  like page, pages grouped into buddy partitions\n"
        "                                planned from measured write patterns and costs\n"
        "                         scan   like page, written pages tracked by the kernel\n"
        "                                (userfaultfd write-protect + PAGEMAP_SCAN, Linux 6.7+)\n"
        "  --ckpt-interval K    checkpoint an LP every K events it processes (default 16),\n"
        "                       or 'auto': tuned at run time from checkpoint and coasting costs\n"
        "  --ckpt-full-every F  with chunk/page/buddy, every F-th checkpoint is full and the\n"
        "                       others incremental (default 10)\n"
        "  --gvt-period MS      milliseconds between GVT rounds (default 5)\n"
        "  --arena-max BYTES    limit on one LP's state in use (kr_malloc, rounded up to\n"
        "                       powers of two), suffix K, M or G (default 64M)\n"
        "  --stats FILE         write run statistics as JSON (schema: docs/stats-schema.md)\n"
        "  --progress WHEN      live progress line: auto (on a terminal), on, off\n"
        "  --check              slower, for testing: the sequential engine runs every event\n"
        "                       twice and checks the model is re-executable; the optimistic\n"
        "                       engine verifies its own invariants (GVT, commitment)\n"
        "  -P name=value        set a model parameter (repeatable)\n"
        "\n"
        "Every run prints a summary with a run digest: a hash of each LP's committed history and\n"
        "final state. It is the same for every engine and thread count.\n"
        "Exit status: 0 success, 1 model or run-time error, 2 bad command line,\n"
        "3 internal error (an engine invariant failed: please report it).\n",
        f);
}

static uint64_t parse_u64(const char *opt, const char *v, uint64_t min)
{
    char *end;
    errno = 0;
    if (!v || !*v || *v == '-') kr__usage_error("%s needs a whole number, got '%s'", opt, v ? v : "");
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end) kr__usage_error("%s needs a whole number, got '%s'", opt, v);
    if (x < min) kr__usage_error("%s must be at least %llu, got %s", opt, (unsigned long long)min, v);
    return x;
}

static double parse_time(const char *opt, const char *v)
{
    char *end;
    errno = 0;
    double x = v ? strtod(v, &end) : NAN;
    if (!v || errno || end == v || *end || isnan(x) || x <= 0)
        kr__usage_error("%s needs a positive number (or 'inf'), got '%s'", opt, v ? v : "");
    return x;
}

static size_t parse_bytes(const char *opt, const char *v)
{
    char *end;
    errno = 0;
    double x = v ? strtod(v, &end) : NAN;
    if (!v || errno || end == v || isnan(x) || x <= 0) kr__usage_error("%s needs a size like 64M, got '%s'", opt, v ? v : "");
    double mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1024.0, end++;
    else if (*end == 'M' || *end == 'm') mul = 1024.0 * 1024, end++;
    else if (*end == 'G' || *end == 'g') mul = 1024.0 * 1024 * 1024, end++;
    if (*end) kr__usage_error("%s needs a size like 64M, got '%s'", opt, v);
    return (size_t)(x * mul);
}

static const char *need_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) kr__usage_error("option %s needs a value", argv[*i]);
    return argv[++*i];
}

static void add_param(struct kr__config *c, const char *kv)
{
    const char *eq = kv ? strchr(kv, '=') : NULL;
    if (!eq || eq == kv) kr__usage_error("-P needs name=value, got '%s'", kv ? kv : "");
    c->params = realloc(c->params, (c->nparams + 1) * sizeof *c->params);
    if (!c->params) kr__fatal_oom("parameters", 0);
    c->params[c->nparams].key = strndup(kv, (size_t)(eq - kv));
    c->params[c->nparams].val = eq + 1;
    c->nparams++;
}

static void parse_option(struct kr__config *c, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--sync")) {
        const char *v = need_value(argc, argv, i);
        if (!strcmp(v, "sequential")) c->sync = KR_SYNC_SEQUENTIAL;
        else if (!strcmp(v, "optimistic")) c->sync = KR_SYNC_OPTIMISTIC;
        else kr__usage_error("--sync must be 'optimistic' or 'sequential', got '%s'", v);
    } else if (!strcmp(a, "--threads")) {
        c->threads = (unsigned)parse_u64(a, need_value(argc, argv, i), 1);
        if (c->threads > 1024) kr__usage_error("--threads %u is more than 1024", c->threads);
    } else if (!strcmp(a, "--lps")) {
        c->lps = parse_u64(a, need_value(argc, argv, i), 1);
        if (c->lps > UINT32_MAX) kr__usage_error("--lps must be below 2^32");
    } else if (!strcmp(a, "--end")) {
        c->end = parse_time(a, need_value(argc, argv, i));
    } else if (!strcmp(a, "--seed")) {
        c->seed = parse_u64(a, need_value(argc, argv, i), 0);
    } else if (!strcmp(a, "--ckpt-interval")) {
        const char *v = need_value(argc, argv, i);
        c->ckpt_interval = !strcmp(v, "auto") ? 0 : (unsigned)parse_u64(a, v, 1);
        if (c->ckpt_interval > 1000000) kr__usage_error("--ckpt-interval must be at most 1000000");
    } else if (!strcmp(a, "--ckpt-full-every")) {
        c->ckpt_full_every = (unsigned)parse_u64(a, need_value(argc, argv, i), 1);
        if (c->ckpt_full_every > 65535) kr__usage_error("--ckpt-full-every must be at most 65535");
    } else if (!strcmp(a, "--state")) {
        const char *v = need_value(argc, argv, i);
        c->state_mode = -1;
        for (int m = KR_STATE_FULL; m <= KR_STATE_SCAN; m++)
            if (!strcmp(v, kr__state_mode_name(m))) c->state_mode = m;
        if (c->state_mode < 0)
            kr__usage_error("--state must be full, chunk, page, buddy or scan, got '%s'", v);
    } else if (!strcmp(a, "--gvt-period")) {
        c->gvt_period_ms = parse_time(a, need_value(argc, argv, i));
    } else if (!strcmp(a, "--arena-max")) {
        c->arena_max = parse_bytes(a, need_value(argc, argv, i));
    } else if (!strcmp(a, "--stats")) {
        c->stats_path = need_value(argc, argv, i);
    } else if (!strcmp(a, "--progress")) {
        const char *v = need_value(argc, argv, i);
        if (!strcmp(v, "on")) c->progress = 1;
        else if (!strcmp(v, "off")) c->progress = 0;
        else if (!strcmp(v, "auto")) c->progress = -1;
        else kr__usage_error("--progress must be on, off or auto, got '%s'", v);
    } else if (!strcmp(a, "--check")) {
        c->check = true;
    } else if (!strcmp(a, "-P")) {
        add_param(c, need_value(argc, argv, i));
    } else if (!strncmp(a, "-P", 2)) {
        add_param(c, a + 2);
    } else {
        kr__usage_error("unknown option '%s' for 'kairos run'", a);
    }
}

static int cmd_run(int argc, char **argv)
{
    if (argc < 3 || argv[2][0] == '-') kr__usage_error("'kairos run' needs a MODEL first (see 'kairos models')");
    struct kr__config c = { 0 };
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c.model = argv[2];
    c.sync = KR_SYNC_OPTIMISTIC;
    c.threads = ncpu > 0 ? (unsigned)ncpu : 1;
    c.lps = 1024;
    c.end = 1000;
    c.seed = 1;
    c.ckpt_interval = 16;
    c.ckpt_full_every = 10;
    c.state_mode = KR_STATE_FULL;
    c.gvt_period_ms = 5;
    c.arena_max = (size_t)64 << 20;
    c.progress = -1;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            const struct kr_model *m = kr__model_load(c.model);
            kr__params_print(stdout, m);
            return 0;
        }
    }
    for (int i = 3; i < argc; i++) parse_option(&c, argc, argv, &i);
    if (isinf(c.end)) {
        const struct kr_model *m = kr__model_load(c.model);
        if (!m->done)
            kr__usage_error("--end inf needs a model with a done() test, and model '%s' has none; "
                            "give a finite --end", m->name);
    }
    int rc = kr__run_main(&c);
    for (size_t i = 0; i < c.nparams; i++) free((void *)c.params[i].key);
    free(c.params);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return argc < 2 ? KR_EXIT_USAGE : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        puts("kairos " KAIROS_VERSION);
        return 0;
    }
    if (!strcmp(argv[1], "models")) {
        puts("Built-in models:");
        kr__models_list(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "run")) return cmd_run(argc, argv);
    kr__usage_error("unknown command '%s'", argv[1]);
}
