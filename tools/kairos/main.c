/* main.c - the `kairos` command line: run a model on an engine, list models, help. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../../src/core/core.h"
#include "../../src/core/error.h"
#include "../../src/state/mode.h"

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
        "  kairos calibrate [options]                      measure the cost of extra ticks\n"
        "                                                  and pick --tick-us for this machine\n"
        "  kairos --help | --version\n"
        "\n"
        "MODEL is a built-in model name (see 'kairos models') or the path of a model shared\n"
        "object that exports kr_model_entry(), e.g. ./mymodel.so.\n"
        "\n"
        "Options of 'run':\n"
        "  --sync ENGINE        optimistic (Time Warp, default), conservative (Horizon:\n"
        "                       events that overlap in virtual time run in parallel, never\n"
        "                       rolled back; needs event durations or a lookahead) or\n"
        "                       sequential\n"
        "  --threads N          worker threads (default: all cores; conservative: N workers\n"
        "                       beside the scheduler thread, default cores - 1)\n"
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
        "  --balance MODE       optimistic: moving LPs between worker threads: off, or auto\n"
        "                       (default: a worker whose core another process keeps busy\n"
        "                       hands its LPs to the others until the core is free again;\n"
        "                       when rollbacks undo much of the work or speculation does\n"
        "                       not pay (--window), one worker fewer is tried and kept\n"
        "                       while it commits as much per second)\n"
        "  --safe on|off        optimistic: an event that no straggler can reach any more\n"
        "                       (below what every other thread may still send, from their\n"
        "                       next events plus the lookahead) runs without a checkpoint\n"
        "                       and commits at once (default on; off: plain Time Warp)\n"
        "  --window N|auto      optimistic: speculative events a thread may hold uncommitted\n"
        "                       before it waits for GVT (default auto: up to 8192, cut to\n"
        "                       safe events only while its rollbacks - restores, undone\n"
        "                       and coasted events - take over 4x the time of what its\n"
        "                       speculation committed)\n"
        "  --preempt MODE       time-sharing (event preemption) of the optimistic engine:\n"
        "                         off       plain Time Warp: an event runs to its end\n"
        "                         return    events on their own stacks, preempted when a\n"
        "                                   model call returns and earlier work has arrived\n"
        "                         tick      also preempted by extra ticks every --tick-us\n"
        "                         adaptive  ticks only while events are long next to the\n"
        "                                   gaps between model calls; events under 5 us\n"
        "                                   on average are not preempted (default)\n"
        "  --tick-us US         extra-tick period (default: from 'kairos calibrate', else 1000)\n"
        "  --alpha A            adaptive rule: ticks while mean event time / (model calls per\n"
        "                       event + 1) >= (1 + A) x tick (default -0.5; -1: always)\n"
        "  --stack-kb N         stack for model code, the same on every engine and on the\n"
        "                       event stacks of time-sharing (default 8192); a deeper stack\n"
        "                       is reported as a stack overflow\n"
        "  --event-timeout S    an event on the committed path still running after S seconds\n"
        "                       is reported as a model error (default 60; 0: never)\n"
        "  --handoff MODE       conservative: push (the scheduler writes each job into a\n"
        "                       worker's two-slot buffer, which the worker spins on; default)\n"
        "                       or pull (a locked work queue; the baseline of paper 003)\n"
        "  --barriers MODE      conservative: free (the scheduler tracks the earliest\n"
        "                       completion, default) or events (a barrier event queued at each\n"
        "                       event's completion; the baseline)\n"
        "  --scheduler-works on|off  conservative, push: the scheduler runs an event itself\n"
        "                       when no worker has room for it (default on)\n"
        "  --offload MODE       conservative: auto (default: event types that take under\n"
        "                       --offload-us on average run on the scheduler, where they cost\n"
        "                       less than a hand-out; needs --scheduler-works on) or always\n"
        "  --offload-us US      the bound of --offload auto (default 2)\n"
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
        "Exit status: 0 success, 1 model or run-time error (also a failed write to stdout),\n"
        "2 bad command line, 3 internal error (an engine invariant failed: please report it),\n"
        "130/143 interrupted by SIGINT/SIGTERM (committed output, summary and --stats are\n"
        "still written; a second signal quits at once).\n",
        f);
}

/* A whole number from min to max, in decimal; nothing is truncated or wrapped. */
static uint64_t parse_u64(const char *opt, const char *v, uint64_t min, uint64_t max)
{
    char *end;
    errno = 0;
    if (!v || !*v || *v == '-' || *v == '+' || *v == ' ')
        kr__usage_error("%s needs a whole number, got '%s'", opt, v ? v : "");
    unsigned long long x = strtoull(v, &end, 10);
    if (*end) kr__usage_error("%s needs a whole number, got '%s'", opt, v);
    if (errno || x < min || x > max)
        kr__usage_error("%s must be from %llu to %llu, got %s", opt, (unsigned long long)min,
                        (unsigned long long)max, v);
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

/* One of the names name(lo..hi); `choices` lists them for the message. */
static int parse_choice(const char *opt, const char *v, const char *(*name)(int), int lo, int hi,
                        const char *choices)
{
    for (int m = lo; m <= hi; m++)
        if (!strcmp(v, name(m))) return m;
    kr__usage_error("%s must be %s, got '%s'", opt, choices, v);
}

/* A finite number >= min; `what` says what was expected. */
static double parse_real(const char *v, double min, const char *what)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < min)
        kr__usage_error("%s, got '%s'", what, v);
    return x;
}

#define ARENA_MAX_LIMIT ((double)((size_t)1 << 40))

/* A size with an optional K, M or G suffix, from 16 bytes (the smallest block) to 1024G. */
static size_t parse_bytes(const char *opt, const char *v)
{
    char *end;
    errno = 0;
    double x = v ? strtod(v, &end) : NAN;
    if (!v || errno || end == v || !isfinite(x))
        kr__usage_error("%s needs a size like 64M, got '%s'", opt, v ? v : "");
    double mul = 1;
    if (*end == 'K' || *end == 'k') mul = 1024.0, end++;
    else if (*end == 'M' || *end == 'm') mul = 1024.0 * 1024, end++;
    else if (*end == 'G' || *end == 'g') mul = 1024.0 * 1024 * 1024, end++;
    if (*end) kr__usage_error("%s needs a size like 64M, got '%s'", opt, v);
    if (!(x * mul >= 16 && x * mul <= ARENA_MAX_LIMIT))
        kr__usage_error("%s must be from 16 bytes to 1024G, got '%s'", opt, v);
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

/* An option with two values: false for the first, true for the second. */
static bool parse_two(const char *opt, const char *v, const char *no, const char *yes)
{
    if (!strcmp(v, no)) return false;
    if (!strcmp(v, yes)) return true;
    kr__usage_error("%s must be %s or %s, got '%s'", opt, no, yes, v);
}

static void parse_option(struct kr__config *c, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    if (!strcmp(a, "--sync")) {
        const char *v = need_value(argc, argv, i);
        if (!(c->engine = kr__engine_find(v)))
            kr__usage_error("--sync must be %s, got '%s'", kr__engine_names(), v);
    } else if (!strcmp(a, "--threads")) {
        c->threads = (unsigned)parse_u64(a, need_value(argc, argv, i), 1, 1024);
    } else if (!strcmp(a, "--lps")) {
        c->lps = parse_u64(a, need_value(argc, argv, i), 1, UINT32_MAX);
    } else if (!strcmp(a, "--end")) {
        c->end = parse_time(a, need_value(argc, argv, i));
    } else if (!strcmp(a, "--seed")) {
        c->seed = parse_u64(a, need_value(argc, argv, i), 0, UINT64_MAX);
    } else if (!strcmp(a, "--ckpt-interval")) {
        const char *v = need_value(argc, argv, i);
        c->tw.ckpt_interval = !strcmp(v, "auto") ? 0 : (unsigned)parse_u64(a, v, 1, 1000000);
    } else if (!strcmp(a, "--ckpt-full-every")) {
        c->tw.ckpt_full_every = (unsigned)parse_u64(a, need_value(argc, argv, i), 1, 65535);
    } else if (!strcmp(a, "--state")) {
        const char *v = need_value(argc, argv, i);
        const struct kr__state_ops *m = kr__state_ops_find(v);
        if (!m) kr__usage_error("--state must be %s, got '%s'", kr__state_mode_names(), v);
        c->tw.state_mode = m->id;
    } else if (!strcmp(a, "--gvt-period")) {
        c->tw.gvt_period_ms = parse_time(a, need_value(argc, argv, i));
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
    } else if (!strcmp(a, "--balance")) {
        const char *v = need_value(argc, argv, i);
        if (!strcmp(v, "off")) c->tw.balance = KR_BALANCE_OFF;
        else if (!strcmp(v, "auto")) c->tw.balance = KR_BALANCE_AUTO;
        else if (!strcmp(v, "storm")) c->tw.balance = KR_BALANCE_STORM; /* (tests: random moves,
                                                                        * tiny channels) */
        else kr__usage_error("--balance must be off or auto, got '%s'", v);
    } else if (!strcmp(a, "--window")) {
        const char *v = need_value(argc, argv, i);
        c->tw.window = !strcmp(v, "auto") ? 0 : (unsigned)parse_u64(a, v, 1, 1u << 30);
    } else if (!strcmp(a, "--safe")) {
        const char *v = need_value(argc, argv, i);
        if (!strcmp(v, "on")) c->tw.safe_events = true;
        else if (!strcmp(v, "off")) c->tw.safe_events = false;
        else kr__usage_error("--safe must be on or off, got '%s'", v);
    } else if (!strcmp(a, "--preempt")) {
        c->tw.preempt = parse_choice(a, need_value(argc, argv, i), kr__preempt_name,
                                  KR_PREEMPT_OFF, KR_PREEMPT_ADAPTIVE, "off, return, tick or adaptive");
    } else if (!strcmp(a, "--tick-us")) {
        c->tw.tick_us = parse_time(a, need_value(argc, argv, i));
        c->tw.tick_from = "option";
        if (c->tw.tick_us < KR_TICK_US_MIN || c->tw.tick_us > 1e6)
            kr__usage_error("--tick-us must be from %d to 1000000 microseconds (shorter ticks "
                            "leave the worker no time between them), got %g", KR_TICK_US_MIN,
                            c->tw.tick_us);
    } else if (!strcmp(a, "--alpha")) {
        c->tw.alpha = parse_real(need_value(argc, argv, i), -1,
                              "--alpha needs a number of at least -1 (-1: ticks always on)");
    } else if (!strcmp(a, "--stack-kb")) {
        c->stack_kb = parse_u64(a, need_value(argc, argv, i), 16, 1u << 20);
    } else if (!strcmp(a, "--event-timeout")) {
        c->event_timeout = parse_real(need_value(argc, argv, i), 0,
                                      "--event-timeout needs seconds (0: no limit)");
    } else if (!strcmp(a, "--handoff")) {
        c->cons.handoff_pull = parse_two(a, need_value(argc, argv, i), "push", "pull");
    } else if (!strcmp(a, "--barriers")) {
        c->cons.barrier_events = parse_two(a, need_value(argc, argv, i), "free", "events");
    } else if (!strcmp(a, "--offload")) {
        c->cons.offload_always = parse_two(a, need_value(argc, argv, i), "auto", "always");
    } else if (!strcmp(a, "--offload-us")) {
        c->cons.offload_us = parse_real(need_value(argc, argv, i), 0,
                                   "--offload-us needs microseconds (0: hand out every event)");
    } else if (!strcmp(a, "--scheduler-works")) {
        c->cons.scheduler_works = !parse_two(a, need_value(argc, argv, i), "on", "off");
    } else if (!strcmp(a, "-P")) {
        add_param(c, need_value(argc, argv, i));
    } else if (!strncmp(a, "-P", 2)) {
        add_param(c, a + 2);
    } else {
        kr__usage_error("unknown option '%s' for 'kairos run'", a);
    }
}

/* An output file that cannot be written fails now, not after the whole run. */
static void check_output_path(const char *opt, const char *path)
{
    if (!path) return;
    if (access(path, F_OK) == 0) {
        if (access(path, W_OK) != 0)
            kr__usage_error("%s %s: cannot write it (%s)", opt, path, strerror(errno));
        return;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = 0;
    else if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    if (access(dir, W_OK | X_OK) != 0)
        kr__usage_error("%s %s: cannot create it: directory %s %s", opt, path, dir,
                        errno == ENOENT ? "does not exist" : "is not writable");
}

static int cmd_run(int argc, char **argv)
{
    if (argc < 3 || argv[2][0] == '-') kr__usage_error("'kairos run' needs a MODEL first (see 'kairos models')");
    struct kr__config c = { 0 };
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    c.model = argv[2];
    c.engine = kr__engine_default();
    c.lps = 1024;
    c.end = 1000;
    c.seed = 1;
    c.tw.ckpt_interval = 16;
    c.tw.ckpt_full_every = 10;
    c.tw.state_mode = KR_STATE_FULL;
    c.tw.gvt_period_ms = 5;
    c.tw.safe_events = true;
    c.tw.balance = KR_BALANCE_AUTO;
    c.arena_max = (size_t)64 << 20;
    c.progress = -1;
#if defined(__SANITIZE_THREAD__)
    c.tw.preempt = KR_PREEMPT_OFF; /* see tw_validate (src/optimistic/engine.c) */
#else
    c.tw.preempt = KR_PREEMPT_ADAPTIVE;
#endif
    c.tw.tick_us = kr__calibrated_tick_us(&c.tw.tick_from);
    c.tw.alpha = -0.5;
    c.stack_kb = 8192;
    c.event_timeout = 60;
    c.cons.scheduler_works = true;
    c.cons.offload_us = 2;
    c.threads = 0; /* the engine's default, below */
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            const struct kr_model *m = kr__model_load(c.model);
            kr__params_print(stdout, m);
            return 0;
        }
    }
    for (int i = 3; i < argc; i++) parse_option(&c, argc, argv, &i);
    if (c.engine->validate) c.engine->validate(&c);
    check_output_path("--stats", c.stats_path);
    if (c.threads == 0) c.threads = c.engine->default_threads(ncpu > 0 ? (unsigned)ncpu : 1);
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
        usage(argc < 2 ? stderr : stdout); /* asked for: stdout; a mistake: stderr */
        return argc < 2 ? KR_EXIT_USAGE : 0;
    }
    if (!strcmp(argv[1], "--version")) {
#if defined(__SANITIZE_THREAD__)
        puts("kairos " KAIROS_VERSION " (ThreadSanitizer build: no time-sharing)");
#elif defined(__SANITIZE_ADDRESS__)
        puts("kairos " KAIROS_VERSION " (AddressSanitizer build)");
#else
        puts("kairos " KAIROS_VERSION);
#endif
        return 0;
    }
    if (!strcmp(argv[1], "models")) {
        puts("Built-in models:");
        kr__models_list(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "run")) return cmd_run(argc, argv);
    if (!strcmp(argv[1], "calibrate")) return kr__calibrate_main(argc - 1, argv + 1);
    kr__usage_error("unknown command '%s'", argv[1]);
}
