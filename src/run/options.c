/* options.c - the table of 'kairos run' options (options.h) and what is made from it. */
#include "run/options.h"
#include "run/report.h"
#include "base/sanitize.h"
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"
#include "state/mode.h"
#include "ult/ult.h"

/* How a value is read, and the field it goes to. */
enum opt_kind {               /* (the numeric kinds first: numeric()) */
    K_UINT,    /* unsigned: a whole number in [min, max]; with `autoz`, "auto" is 0 */
    K_U64,     /* uint64_t: a whole number in [min, max] */
    K_SIZE,    /* size_t: a whole number in [min, max] */
    K_BYTES,   /* size_t: a size with a K, M or G suffix */
    K_TIME,    /* double: a positive number or inf, in [min, max] */
    K_REAL,    /* double: a finite number >= min */
    K_CHOICE,  /* int: one of `names`, the value its index (or `values`) */
    K_SWITCH,  /* bool: two names, false and true (or as `values` says) */
    K_FLAG,    /* bool: no value, set true */
    K_STRING,  /* const char *: taken as it is */
    K_ENGINE,  /* const struct kr__engine *: by name (engines.c) */
    K_STATE,   /* int: a state-saving mode by name (state/mode.c) */
};

/* Engines an option is for (its help says so), none: every engine. */
enum { E_TW = 1, E_CONS = 2 };

struct opt {
    const char *name;          /* "--threads" */
    const char *arg;           /* what its value looks like in --help ("N"), NULL: a flag */
    enum opt_kind kind;
    size_t off;                /* of its field in struct kr__config */
    const char *def;           /* default, read like a command-line value; NULL: set in code */
    double min, max;
    const char *const *names;  /* K_CHOICE, K_SWITCH: NULL-terminated */
    const int *values;         /* K_CHOICE, K_SWITCH: each name's value (NULL: its index) */
    unsigned names_shown;      /* K_CHOICE: names listed in messages (the rest are for tests) */
    bool autoz;                /* K_UINT: "auto" is 0 */
    bool json_auto;            /* K_UINT: 0 is "auto" in --stats */
    const char *what;          /* K_REAL: what a value must be; K_TIME: the unit and why of
                                * its range (for messages) */
    void (*after)(struct kr__config *c);   /* after the command line set it */
    unsigned engines;          /* E_*; 0: every engine */
    bool local;                /* may differ between MPI ranks (kr__options_identity) */
    const char *json;          /* member of --stats "config", NULL: none */
    const char *help;          /* prose, wrapped by kr__options_help; a line that starts
                                * with two spaces is a table row, kept as it is */
};

#define F(field) offsetof(struct kr__config, field)

/* A bad value unwinds to the entry point that is reading it (kr__option_parse, ...), which
 * returns the error to its caller: the readers below just return values. */
struct reading {
    jmp_buf back;
    struct kr__error *err;
};
static __thread struct reading *reading;

static _Noreturn __attribute__((format(printf, 1, 2))) void bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reading->err->msg, sizeof reading->err->msg, fmt, ap);
    va_end(ap);
    reading->err->status = KR_ERR_USAGE;
    longjmp(reading->back, 1);
}

/* (an on/off switch is a JSON boolean; other switches write their names) */
static const char *const on_off[] = { "on", "off", NULL };
static const int on_off_values[] = { 1, 0 };
static const char *const balance_names[] = { "off", "auto", "storm", NULL };
static const char *const cancel_names[] = { "aggressive", "lazy", NULL };
static const char *const preempt_names[] = { "off", "return", "tick", "adaptive", NULL };
static const char *const progress_names[] = { "auto", "on", "off", NULL };
static const char *const trace_mode_names[] = { "committed", "run", NULL };
static const int progress_values[] = { -1, 1, 0 };
static const char *const handoff_names[] = { "push", "pull", NULL };
static const char *const barrier_names[] = { "free", "events", NULL };
static const char *const offload_names[] = { "auto", "always", NULL };

static void tick_given(struct kr__config *c)
{
    c->tw.tick_from = "option";
}

static void ckpt_given(struct kr__config *c)
{
    c->tw.ckpt_given = true;
}

/* ThreadSanitizer builds cannot run time-sharing (tw_validate). */
#if defined(KR_TSAN)
#define PREEMPT_DEFAULT "off"
#else
#define PREEMPT_DEFAULT "adaptive"
#endif

static const struct opt table[] = {
    { "--sync", "ENGINE", K_ENGINE, F(engine), "optimistic", .json = "sync",
      .help = "optimistic (Time Warp, default), conservative (Horizon:\n"
              "events that overlap in virtual time run in parallel, never\n"
              "rolled back; needs event durations or a lookahead) or\n"
              "sequential" },
    { "--threads", "N", K_UINT, F(threads), NULL, 1, KR_THREADS_MAX, .json = "threads",
      .help = "worker threads (default: all cores; conservative: N workers\n"
              "beside the scheduler thread, default cores - 1; under mpirun:\n"
              "per rank, default the cores shared by the ranks on the machine)" },
    { "--lps", "N", K_U64, F(lps), "1024", 1, UINT32_MAX, .json = "lps",
      .help = "number of logical processes (default 1024)" },
    { "--end", "T", K_TIME, F(end), "1000", 0, INFINITY, .json = "end",
      .help = "end of virtual time: events at T or later do not run\n"
              "(default 1000; 'inf' runs until the model's done() holds)" },
    { "--seed", "S", K_U64, F(seed), "1", 0, (double)UINT64_MAX, .json = "seed",
      .help = "seed of every LP's random stream (default 1)" },
    { "--state", "MODE", K_STATE, F(tw.state_mode), "full", .engines = E_TW, .json = "state",
      .help = "how LP state is saved (default full):\n"
              "  full   copy every live block at each checkpoint\n"
              "  chunk  incremental: blocks marked written (kr_touch,\n"
              "         kairos/transparent.h or the instrumented build)\n"
              "  page   incremental: pages caught by write protection\n"
              "  buddy  like page, pages grouped into buddy partitions\n"
              "         planned from measured write patterns and costs\n"
              "  scan   like page, written pages tracked by the kernel\n"
              "         (userfaultfd write-protect + PAGEMAP_SCAN, Linux 6.7+)" },
    { "--ckpt-interval", "K", K_UINT, F(tw.ckpt_interval), "16", 1, 1000000, .autoz = true,
      .engines = E_TW, .json = "ckpt_interval", .after = ckpt_given,
      .help = "checkpoint an LP every K events it processes, or 'auto':\n"
              "tuned at run time from checkpoint and coasting costs. Default\n"
              "16, or 1 while an event costs over 64 checkpoints (a rollback\n"
              "then re-runs nothing, for at most 1/64 more work)" },
    { "--ckpt-full-every", "F", K_UINT, F(tw.ckpt_full_every), "10", 1, 65535, .engines = E_TW,
      .json = "ckpt_full_every",
      .help = "with chunk/page/buddy/scan, every F-th checkpoint is full\n"
              "and the others incremental (default 10)" },
    { "--gvt-period", "MS", K_TIME, F(tw.gvt_period_ms), "5", 0, 60000, .engines = E_TW,
      .json = "gvt_period_ms", .what = "milliseconds",
      .help = "milliseconds between GVT rounds (default 5, at most 60000)" },
    { "--balance", "MODE", K_CHOICE, F(tw.balance), "auto", .names = balance_names,
      .names_shown = 3, .engines = E_TW, .json = "balance",
      .help = "moving LPs between worker threads: off, storm (for testing:\n"
              "random LPs move at GVT rounds, and now and then all go to\n"
              "one worker), or auto\n"
              "(default: a worker whose core another process keeps busy\n"
              "hands its LPs to the others until the core is free again,\n"
              "and is tried with a share in proportion to the CPU it gets;\n"
              "when rollbacks undo much of the work or speculation does\n"
              "not pay (--window), one worker fewer is tried and kept\n"
              "while it commits as much per second)" },
    { "--safe", "on|off", K_SWITCH, F(tw.safe_events), "on", .names = on_off,
      .values = on_off_values, .engines = E_TW,
      .json = "safe",
      .help = "an event that no straggler can reach any more (below what\n"
              "every other thread may still send, from their next events\n"
              "plus the lookahead) runs without a checkpoint and commits at\n"
              "once (default on; off: plain Time Warp)" },
    { "--cancel", "MODE", K_CHOICE, F(tw.cancel), "aggressive", .names = cancel_names,
      .names_shown = 2, .engines = E_TW, .json = "cancel",
      .help = "what a rollback does with the events the undone events sent:\n"
              "  aggressive  cancels them at once (default)\n"
              "  lazy        keeps them until the event runs again; one it\n"
              "              sends again alike (destination, time, type,\n"
              "              payload) stays, the others are cancelled\n"
              "              (events to other ranks: always at once)" },
    { "--window", "N|auto", K_UINT, F(tw.window), "auto", 1, 1u << 30, .autoz = true,
      .json_auto = true, .engines = E_TW, .json = "window",
      .help = "speculative events a thread may hold uncommitted before it\n"
              "waits for GVT (default auto: up to 8192, cut to safe events\n"
              "only while its rollbacks - restores, undone and coasted\n"
              "events - take over 4x the time of what its speculation\n"
              "committed, two periods in a row)" },
    { "--preempt", "MODE", K_CHOICE, F(tw.preempt), PREEMPT_DEFAULT, .names = preempt_names,
      .names_shown = 4, .engines = E_TW, .json = "preempt",
      .help = "time-sharing (event preemption):\n"
              "  off       plain Time Warp: an event runs to its end\n"
              "  return    events on their own stacks, preempted when a\n"
              "            model call returns and earlier work has arrived\n"
              "  tick      also preempted by extra ticks every --tick-us\n"
              "  adaptive  ticks only while events are long next to the\n"
              "            gaps between model calls; events under 5 us\n"
              "            on average are not preempted (default)" },
    { "--tick-us", "US", K_TIME, F(tw.tick_us), NULL, KR_TICK_US_MIN, 1e6, .engines = E_TW,
      .json = "tick_us", .after = tick_given, .local = true, /* (calibrated per machine) */
      .what = "microseconds (shorter ticks leave the worker no time between them)",
      .help = "extra-tick period (default: from 'kairos calibrate', else 1000)" },
    { "--alpha", "A", K_REAL, F(tw.alpha), "-0.5", -1, .engines = E_TW, .json = "alpha",
      .what = "a number of at least -1 (-1: ticks always on)",
      .help = "adaptive rule: ticks while mean event time / (model calls per\n"
              "event + 1) >= (1 + A) x tick (default -0.5; -1: always)" },
    { "--stack-kb", "N", K_SIZE, F(stack_kb), "8192", 16, 1u << 20, .json = "stack_kb",
      .help = "stack for model code, the same on every engine and on the\n"
              "event stacks of time-sharing and of events that wait for a\n"
              "query's answer (default 8192); a deeper stack is reported as\n"
              "a stack overflow" },
    { "--event-timeout", "S", K_REAL, F(event_timeout), "60", 0, .json = "event_timeout",
      .what = "seconds (0: no limit)",
      .help = "an event on the committed path still running after S seconds\n"
              "is reported as a model error (default 60; 0: never)" },
    { "--handoff", "MODE", K_SWITCH, F(cons.handoff_pull), "push", .names = handoff_names,
      .engines = E_CONS, .json = "handoff",
      .help = "push (the scheduler writes each job into a worker's\n"
              "two-slot buffer, which the worker spins on; default) or pull\n"
              "(a locked work queue; the baseline of paper 003)" },
    { "--barriers", "MODE", K_SWITCH, F(cons.barrier_events), "free", .names = barrier_names,
      .engines = E_CONS, .json = "barriers",
      .help = "free (the scheduler tracks the earliest completion, default)\n"
              "or events (a barrier event queued at each event's\n"
              "completion; the baseline)" },
    { "--scheduler-works", "on|off", K_SWITCH, F(cons.scheduler_works), "on", .names = on_off,
      .values = on_off_values, .engines = E_CONS, .json = "scheduler_works",
      .help = "with push, the scheduler runs an event itself\n"
              "when no worker has room for it (default on)" },
    { "--offload", "MODE", K_SWITCH, F(cons.offload_always), "auto", .names = offload_names,
      .engines = E_CONS, .json = "offload",
      .help = "auto (default: event types that take under --offload-us on\n"
              "average run on the scheduler, where they cost less than a\n"
              "hand-out; needs --scheduler-works on) or always" },
    { "--offload-us", "US", K_REAL, F(cons.offload_us), "2", 0, .engines = E_CONS,
      .json = "offload_us", .what = "microseconds (0: hand out every event)",
      .help = "the bound of --offload auto (default 2)" },
    { "--arena-max", "BYTES", K_BYTES, F(arena_max), "64M", 16, (double)((size_t)1 << 40),
      .json = "arena_max",
      .help = "limit on one LP's state in use (kr_malloc, rounded up to\n"
              "powers of two), suffix K, M or G (default 64M)" },
    { "--memory-max", "BYTES", K_BYTES, F(memory_max), "0", 0, (double)((size_t)1 << 50),
      .json = "memory_max",
      .help = "budget for events, checkpoints and LP states together, per\n"
              "process (per rank under MPI), suffix K, M or G (default 0:\n"
              "none); the optimistic engine stops speculating, rolls back and\n"
              "sends pending events back to stay near it; a budget below what\n"
              "the run needs is an error" },
    { "--snapshot", "DIR", K_STRING, F(snap_dir), NULL,
      .help = "write whole-run snapshots into directory DIR, each replacing\n"
              "the last once complete, for 'kairos resume DIR' (with\n"
              "--snapshot-every and/or --snapshot-seconds); every engine\n"
              "writes them and resumes from them, under mpirun too (rank 0\n"
              "writes the file)" },
    { "--snapshot-every", "T", K_REAL, F(snap_every), "0", 0, .json = "snapshot_every",
      .what = "a virtual time (0: none)",
      .help = "a snapshot each T of virtual time (default 0: none)" },
    { "--snapshot-seconds", "S", K_REAL, F(snap_seconds), "0", 0,
      .json = "snapshot_seconds", .what = "seconds (0: none)",
      .help = "a snapshot each S seconds of wall time (default 0: none)" },
    { "--stats", "FILE", K_STRING, F(stats_path), NULL,
      .help = "write run statistics as JSON (schema: docs/stats-schema.md)" },
    { "--lp-stats", "FILE", K_STRING, F(lp_stats_path), NULL,
      .help = "write a CSV row per LP: committed and processed events,\n"
              "rollbacks, events undone, state bytes, rank and thread\n"
              "(docs/stats-schema.md)" },
    { "--trace", "FILE", K_STRING, F(trace_path), NULL,
      .help = "write a trace (Chrome trace-event JSON, for Perfetto or\n"
              "chrome://tracing) of the run: see --trace-mode" },
    { "--trace-mode", "MODE", K_CHOICE, F(trace_mode), "committed",
      .names = trace_mode_names,
      .help = "committed (default): the committed history, one event a line,\n"
              "virtual time on its axis, the same bytes on every engine and\n"
              "thread count ('kairos trace-diff A B' compares two); run: what\n"
              "each thread did on the wall clock - events run, rollbacks and\n"
              "their depth, GVT rounds, checkpoints, preemptions" },
    { "--trace-limit", "N", K_U64, F(trace_limit), "1000000", 1, 1e9,
      .help = "--trace keeps the first N committed events (run: the first N\n"
              "records of each thread; default 1000000)" },
    { "--progress", "WHEN", K_CHOICE, F(progress), "auto", .names = progress_names,
      .values = progress_values, .names_shown = 3,
      .help = "live progress line: auto (on a terminal), on, off" },
    { "--check", NULL, K_FLAG, F(check), NULL,
      .help = "slower, for testing: the sequential engine runs every event\n"
              "twice and checks the model is re-executable and touches no\n"
              "global or other LP's state; the optimistic engine verifies\n"
              "its own invariants (GVT, commitment)" },
};
#define NOPTS (sizeof table / sizeof table[0])

static void *field(struct kr__config *c, const struct opt *o)
{
    return (char *)c + o->off;
}

static const void *cfield(const struct kr__config *c, const struct opt *o)
{
    return (const char *)c + o->off;
}

/* A whole number from min to max, in decimal; nothing is truncated or wrapped. */
static uint64_t read_whole(const struct opt *o, const char *v)
{
    char *end;
    errno = 0;
    if (!*v || *v == '-' || *v == '+' || *v == ' ')
        bad("%s needs a whole number, got '%s'", o->name, v);
    unsigned long long x = strtoull(v, &end, 10);
    if (*end) bad("%s needs a whole number, got '%s'", o->name, v);
    if (errno || (double)x < o->min || (double)x > o->max)
        bad("%s must be from %llu to %llu, got %s", o->name,
            (unsigned long long)o->min,
            o->max >= 0x1p64 ? UINT64_MAX : (unsigned long long)o->max, v);
    return x;
}

static double read_time(const struct opt *o, const char *v)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || isnan(x) || x <= 0)
        bad("%s needs a positive number (or 'inf'), got '%s'", o->name, v);
    if (x < o->min || x > o->max)
        bad("%s must be from %.15g to %.15g%s%s, got %s", o->name, o->min, o->max,
            o->what ? " " : "", o->what ? o->what : "", v);
    return x;
}

static double read_real(const struct opt *o, const char *v)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < o->min)
        bad("%s needs %s, got '%s'", o->name, o->what, v);
    return x;
}

/* A size with an optional K, M or G suffix. */
static size_t read_bytes(const struct opt *o, const char *v)
{
    char *end;
    errno = 0;
    /* (decimal digits and one point only: strtod also reads 0x10, 1e3 and inf) */
    if (strspn(v, "0123456789.") == 0 || strspn(v, "0123456789.") < strcspn(v, "KMGkmg"))
        bad("%s needs a size like 64M, got '%s'", o->name, v);
    double x = strtod(v, &end);
    if (errno || end == v || !isfinite(x))
        bad("%s needs a size like 64M, got '%s'", o->name, v);
    static const char suffix[] = "KMG";
    const char *s = *end ? strchr(suffix, *end & ~0x20) : NULL;
    double mul = s ? (double)((size_t)1 << (10 * (s - suffix + 1))) : 1;
    if (*end && (!s || end[1]))
        bad("%s needs a size like 64M, got '%s'", o->name, v);
    if (!(x * mul >= o->min && x * mul <= o->max))
        bad("%s must be from 16 bytes to 1024G, got '%s'", o->name, v);
    return (size_t)(x * mul);
}

/* "a, b or c": the first n names. */
static const char *list_names(const struct opt *o, unsigned n, char *buf, size_t cap)
{
    buf[0] = 0;
    for (unsigned k = 0; k < n; k++)
        snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s",
                 k == 0 ? "" : k + 1 == n ? " or " : ", ", o->names[k]);
    return buf;
}

static unsigned count_names(const struct opt *o)
{
    unsigned n = 0;
    while (o->names[n]) n++;
    return n;
}

/* The index of v among o's names. */
static unsigned read_choice(const struct opt *o, const char *v)
{
    for (unsigned k = 0; o->names[k]; k++)
        if (!strcmp(v, o->names[k])) return k;
    char buf[128];
    unsigned shown = o->names_shown ? o->names_shown : count_names(o);
    bad("%s must be %s, got '%s'", o->name, list_names(o, shown, buf, sizeof buf), v);
}

static void set_engine(struct kr__config *c, const char *v)
{
    const struct kr__engine *e = kr__engine_find(v);
    if (!e) bad("--sync must be %s, got '%s'", kr__engine_names(), v);
    c->engine = e;
}

static void set_state(struct kr__config *c, const char *v)
{
    const struct kr__state_ops *m = kr__state_ops_find(v);
    if (!m) bad("--state must be %s, got '%s'", kr__state_mode_names(), v);
    c->tw.state_mode = m->id;
}

static bool numeric(const struct opt *o)
{
    return o->kind <= K_REAL;
}

/* Set o's numeric field from the text v. */
static void set_number(struct kr__config *c, const struct opt *o, const char *v)
{
    void *p = field(c, o);
    switch (o->kind) {
    case K_UINT:
        *(unsigned *)p = o->autoz && !strcmp(v, "auto") ? 0 : (unsigned)read_whole(o, v);
        break;
    case K_U64: *(uint64_t *)p = read_whole(o, v); break;
    case K_SIZE: *(size_t *)p = (size_t)read_whole(o, v); break;
    case K_BYTES: *(size_t *)p = read_bytes(o, v); break;
    case K_TIME: *(double *)p = read_time(o, v); break;
    default: *(double *)p = read_real(o, v); break;
    }
}

/* Set o's field from the text v (a command-line value or the default). */
static void set(struct kr__config *c, const struct opt *o, const char *v)
{
    if (numeric(o)) {
        set_number(c, o, v);
        return;
    }
    void *p = field(c, o);
    switch (o->kind) {
    case K_CHOICE: {
        unsigned k = read_choice(o, v);
        *(int *)p = o->values ? o->values[k] : (int)k;
        break;
    }
    case K_SWITCH: {
        unsigned k = read_choice(o, v);
        *(bool *)p = (o->values ? o->values[k] : (int)k) != 0;
        break;
    }
    case K_FLAG: *(bool *)p = true; break;
    case K_STRING: *(const char **)p = v; break;
    case K_ENGINE: set_engine(c, v); break;
    default: set_state(c, v); break;
    }
}

int kr__options_defaults(struct kr__config *c, struct kr__error *err)
{
    struct reading rd = { .err = err };
    reading = &rd;
    if (setjmp(rd.back)) { /* (a default the table cannot read: a Kairos bug) */
        err->status = KR_ERR_INTERNAL;
        return err->status;
    }
    for (size_t k = 0; k < NOPTS; k++)
        if (table[k].def) set(c, &table[k], table[k].def);
    c->tw.tick_us = kr__calibrated_tick_us(&c->tw.tick_from);
    return KR_OK;
}

static void add_param(struct kr__config *c, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) bad("-P needs name=value, got '%s'", kv);
    c->params = realloc(c->params, (c->nparams + 1) * sizeof *c->params);
    if (!c->params) bad("out of memory for the -P parameters");
    c->params[c->nparams].key = strndup(kv, (size_t)(eq - kv));
    c->params[c->nparams].val = eq + 1;
    c->nparams++;
}

static const char *need_value(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) bad("option %s needs a value", argv[*i]);
    return argv[++*i];
}

int kr__option_parse(struct kr__config *c, int argc, char **argv, int *i,
                     struct kr__error *err)
{
    struct reading rd = { .err = err };
    reading = &rd;
    if (setjmp(rd.back)) return err->status;
    const char *a = argv[*i];
    if (!strcmp(a, "-P") || !strncmp(a, "-P", 2)) {
        add_param(c, a[2] ? a + 2 : need_value(argc, argv, i));
        return KR_OK;
    }
    for (size_t k = 0; k < NOPTS; k++) {
        const struct opt *o = &table[k];
        if (strcmp(a, o->name)) continue;
        set(c, o, o->kind == K_FLAG ? "" : need_value(argc, argv, i));
        if (o->after) o->after(c);
        if (o->engines && !c->engine_opt[o->engines == E_CONS]) /* (for kr__options_unread) */
            c->engine_opt[o->engines == E_CONS] = o->name;
        return KR_OK;
    }
    bad("unknown option '%s' for 'kairos run'", a);
}

void kr__options_free(struct kr__config *c)
{
    for (size_t i = 0; i < c->nparams; i++) free((void *)c->params[i].key);
    free(c->params);
    free(c->owned);
    c->owned = NULL;
    c->params = NULL;
    c->nparams = 0;
}

/* --snapshot and its periods come together. */
static int snapshot_options(const struct kr__config *c, struct kr__error *err)
{
    bool when = c->snap_every > 0 || c->snap_seconds > 0;
    if (when && !c->snap_dir)
        return kr__fail(err, KR_ERR_USAGE, "--snapshot-every and --snapshot-seconds need "
                        "--snapshot DIR, the directory the snapshots go to");
    if (c->snap_dir && !when)
        return kr__fail(err, KR_ERR_USAGE, "--snapshot %s needs --snapshot-every T (virtual "
                        "time) or --snapshot-seconds S (wall time), or both", c->snap_dir);
    return KR_OK;
}

int kr__options_finish(struct kr__config *c, unsigned ncpu, struct kr__error *err)
{
    if (snapshot_options(c, err)) return err->status;
    if (c->engine->validate && c->engine->validate(c, err)) return err->status;
    if (c->threads == 0) c->threads = c->engine->default_threads(ncpu);
    return KR_OK;
}

/* An option given for another engine than the run's (a script that switches --sync keeps
 * them, so it is a note, not an error): NULL, or the note. */
const char *kr__options_unread(const struct kr__config *c, char *buf, size_t cap)
{
    static const char *const owner[2] = { "optimistic", "conservative" };
    for (int e = 0; e < 2; e++) {
        if (!c->engine_opt[e] || !strcmp(c->engine->name, owner[e])) continue;
        if (c->check && !strcmp(c->engine_opt[e], "--state") &&
            !strcmp(c->engine->name, "sequential"))
            continue; /* (sequential --check runs each event twice under that state mode) */
        snprintf(buf, cap, "%s is an option of the %s engine; this run uses the %s engine, "
                 "which does not read it", c->engine_opt[e], owner[e], c->engine->name);
        return buf;
    }
    return NULL;
}

/* Help texts start at column HELP_COL ("  --name ARG" is padded to it, or followed by two
 * spaces) and are wrapped before HELP_WIDTH. In a text, a line that starts with two spaces
 * is a table row, printed as it is on a line of its own; other lines are prose, joined and
 * wrapped. */
#define HELP_COL 23
#define HELP_WIDTH 88

struct help_line {
    FILE *f;
    int col;                   /* where the next character goes */
    bool fresh;                /* nothing printed since the indent */
};

static void help_newline(struct help_line *h)
{
    fprintf(h->f, "\n%*s", HELP_COL, "");
    h->col = HELP_COL;
    h->fresh = true;
}

static void help_word(struct help_line *h, const char *w, int len)
{
    if (!h->fresh && h->col + 1 + len > HELP_WIDTH) help_newline(h);
    if (!h->fresh) {
        fputc(' ', h->f);
        h->col++;
    }
    fprintf(h->f, "%.*s", len, w);
    h->col += len;
    h->fresh = false;
}

static void help_text(struct help_line *h, const char *text)
{
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        if (!strncmp(line, "  ", 2)) { /* a table row */
            if (!h->fresh) help_newline(h);
            fprintf(h->f, "%.*s", len, line);
            h->col += len;
            h->fresh = false;
            h->col = HELP_WIDTH; /* (the next word starts a line of its own) */
        } else {
            for (const char *w = line; w < line + len;) {
                while (w < line + len && *w == ' ') w++;
                const char *e = w;
                while (e < line + len && *e != ' ') e++;
                if (e > w) help_word(h, w, (int)(e - w));
                w = e;
            }
        }
        line += len + (end != NULL);
    }
}

void kr__options_help(FILE *f)
{
    for (size_t k = 0; k < NOPTS; k++) {
        const struct opt *o = &table[k];
        char head[64];
        snprintf(head, sizeof head, "  %s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
        int pad = (int)strlen(head) <= HELP_COL - 2 ? HELP_COL - (int)strlen(head) : 2;
        fprintf(f, "%s%*s", head, pad, "");
        struct help_line h = { f, (int)strlen(head) + pad, true };
        help_text(&h, o->engines == E_TW ? "optimistic:" : o->engines == E_CONS ? "conservative:"
                                                                               : "");
        help_text(&h, o->help);
        fputc('\n', f);
    }
    fputs("  -P name=value        set a model parameter (repeatable)\n", f);
}

/* The name of an int choice's value. */
static const char *choice_name(const struct opt *o, int v)
{
    for (unsigned k = 0; o->names[k]; k++)
        if ((o->values ? o->values[k] : (int)k) == v) return o->names[k];
    return "?";
}

static void json_number(FILE *f, const struct opt *o, const void *p)
{
    switch (o->kind) {
    case K_UINT:
        if (o->json_auto && !*(const unsigned *)p) fputs("\"auto\"", f);
        else fprintf(f, "%u", *(const unsigned *)p);
        break;
    case K_U64: fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case K_SIZE:
    case K_BYTES: fprintf(f, "%zu", *(const size_t *)p); break;
    default: kr__json_num(f, *(const double *)p); break;
    }
}

static void json_value(FILE *f, const struct kr__config *c, const struct opt *o)
{
    const void *p = cfield(c, o);
    if (numeric(o)) {
        json_number(f, o, p);
        return;
    }
    switch (o->kind) {
    case K_CHOICE: kr__json_str(f, choice_name(o, *(const int *)p)); break;
    case K_SWITCH: /* (an on/off switch is a boolean) */
        if (o->names == on_off) fputs(*(const bool *)p ? "true" : "false", f);
        else kr__json_str(f, choice_name(o, *(const bool *)p));
        break;
    case K_FLAG: fputs(*(const bool *)p ? "true" : "false", f); break;
    case K_STRING: kr__json_str(f, *(const char *const *)p); break;
    case K_ENGINE: kr__json_str(f, c->engine->name); break;
    default: kr__json_str(f, kr__state_ops(c->tw.state_mode)->name); break;
    }
}

void kr__options_json(FILE *f, const struct kr__config *c)
{
    fputs("\"model\": ", f);
    kr__json_str(f, c->model);
    for (size_t k = 0; k < NOPTS; k++) {
        if (!table[k].json) continue;
        fprintf(f, ", \"%s\": ", table[k].json);
        json_value(f, c, &table[k]);
    }
    fputs(", \"params\": {", f);
    for (size_t i = 0; i < c->nparams; i++) {
        fputs(i ? ", " : "", f);
        kr__json_str(f, c->params[i].key);
        fputs(": ", f);
        kr__json_str(f, c->params[i].val);
    }
    fputc('}', f);
}

static int kv_by_key(const void *a, const void *b)
{
    return strcmp(((const struct kr__kv *)a)->key, ((const struct kr__kv *)b)->key);
}

void kr__options_identity(FILE *f, const struct kr__config *c)
{
    for (size_t k = 0; k < NOPTS; k++) {
        if (!table[k].json || table[k].local) continue;
        fprintf(f, "%s ", table[k].name);
        json_value(f, c, &table[k]);
        fputc('\n', f);
    }
    struct kr__kv *kv = malloc((c->nparams + 1) * sizeof *kv); /* (sorted: -P in any order) */
    if (!kv) kr__fatal_oom("the options' identity", c->nparams * sizeof *kv);
    if (c->nparams) memcpy(kv, c->params, c->nparams * sizeof *kv);
    qsort(kv, c->nparams, sizeof *kv, kv_by_key);
    for (size_t i = 0; i < c->nparams; i++) fprintf(f, "-P %s=%s\n", kv[i].key, kv[i].val);
    free(kv);
}
