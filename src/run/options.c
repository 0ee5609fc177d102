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

static const char *const progress_names[] = { "auto", "on", "off", NULL };
static const char *const trace_mode_names[] = { "committed", "run", NULL };
static const int progress_values[] = { -1, 1, 0 };

/* The run's rows: the head, then each engine's rows (kr__engine.options), then the tail
 * (kairos --help, --stats "config" and the ranks' identity list them in that order). */
static const struct kr__opt head[] = {
    { "--sync", "ENGINE", KR_OPT_ENGINE, F(engine), "optimistic", .json = "sync",
      .help = "optimistic (Time Warp, default), conservative (Horizon:\n"
              "events that overlap in virtual time run in parallel, never\n"
              "rolled back; needs event durations or a lookahead) or\n"
              "sequential" },
    { "--threads", "N", KR_OPT_UINT, F(threads), NULL, 1, KR_THREADS_MAX, .json = "threads",
      .help = "worker threads (default: all cores; conservative: N workers\n"
              "beside the scheduler thread, default cores - 1; under mpirun:\n"
              "per rank, default the cores shared by the ranks on the machine)" },
    { "--lps", "N", KR_OPT_U64, F(lps), "1024", 1, UINT32_MAX, .json = "lps",
      .help = "number of logical processes (default 1024)" },
    { "--end", "T", KR_OPT_TIME, F(end), "1000", 0, INFINITY, .json = "end",
      .help = "end of virtual time: events at T or later do not run\n"
              "(default 1000; 'inf' runs until the model's done() holds\n"
              "for every LP, or until no event is left)" },
    { "--seed", "S", KR_OPT_U64, F(seed), "1", 0, (double)UINT64_MAX, .json = "seed",
      .help = "seed of every LP's random stream (default 1)" },
    { "--state", "MODE", KR_OPT_STATE, F(state_mode), "full", .json = "state",
      .help = "how LP state is saved (default full):\n"
              "  full   copy every live block at each checkpoint\n"
              "  chunk  incremental: blocks marked written (kr_touch,\n"
              "         kairos/transparent.h or the instrumented build)\n"
              "  page   incremental: pages caught by write protection\n"
              "  buddy  like page, pages grouped into buddy partitions\n"
              "         planned from measured write patterns and costs\n"
              "  scan   like page, written pages tracked by the kernel\n"
              "         (userfaultfd write-protect + PAGEMAP_SCAN, Linux 6.7+)\n"
              "  reverse  no checkpoints: the model's reverse handler undoes\n"
              "         each rolled-back event (struct kr_model.reverse)" },
};

static const struct kr__opt tail[] = {
    { "--stack-kb", "N", KR_OPT_SIZE, F(stack_kb), "8192", 16, 1u << 20, .json = "stack_kb",
      .help = "stack for model code, the same on every engine and on the\n"
              "event stacks of time-sharing and of events that wait for a\n"
              "query's answer (default 8192); a deeper stack is reported as\n"
              "a stack overflow" },
    { "--event-timeout", "S", KR_OPT_REAL, F(event_timeout), "60", 0, .json = "event_timeout",
      .what = "seconds (0: no limit)",
      .help = "an event on the committed path still running after S seconds\n"
              "is reported as a model error (default 60; 0: never)" },
    { "--arena-max", "BYTES", KR_OPT_BYTES, F(arena_max), "64M", 16, (double)((size_t)1 << 40),
      .json = "arena_max",
      .help = "limit on one LP's state in use (kr_malloc, rounded up to\n"
              "powers of two), suffix K, M or G (default 64M)" },
    { "--memory-max", "BYTES", KR_OPT_BYTES, F(memory_max), "0", 0, (double)((size_t)1 << 50),
      .json = "memory_max",
      .help = "budget for events, checkpoints and LP states together, per\n"
              "process (per rank under MPI), suffix K, M or G (default 0:\n"
              "none); the optimistic engine stops speculating, rolls back and\n"
              "sends pending events back to stay near it; a budget below what\n"
              "the run needs is an error" },
    { "--snapshot", "DIR", KR_OPT_STRING, F(snap_dir), NULL,
      .help = "write whole-run snapshots into directory DIR, each replacing\n"
              "the last once complete, for 'kairos resume DIR' (with\n"
              "--snapshot-every and/or --snapshot-seconds); every engine\n"
              "writes them and resumes from them, under mpirun too (rank 0\n"
              "writes the file)" },
    { "--snapshot-every", "T", KR_OPT_REAL, F(snap_every), "0", 0, .json = "snapshot_every",
      .what = "a virtual time (0: none)",
      .help = "a snapshot each T of virtual time (default 0: none)" },
    { "--snapshot-seconds", "S", KR_OPT_REAL, F(snap_seconds), "0", 0,
      .json = "snapshot_seconds", .what = "seconds (0: none)",
      .help = "a snapshot each S seconds of wall time (default 0: none)" },
    { "--stats", "FILE", KR_OPT_STRING, F(stats_path), NULL,
      .help = "write run statistics as JSON (schema: docs/stats-schema.md)" },
    { "--lp-stats", "FILE", KR_OPT_STRING, F(lp_stats_path), NULL,
      .help = "write a CSV row per LP: committed and processed events,\n"
              "rollbacks, events undone, state bytes, rank and thread\n"
              "(docs/stats-schema.md)" },
    { "--trace", "FILE", KR_OPT_STRING, F(trace_path), NULL,
      .help = "write a trace (Chrome trace-event JSON, for Perfetto or\n"
              "chrome://tracing) of the run: see --trace-mode" },
    { "--trace-mode", "MODE", KR_OPT_CHOICE, F(trace_mode), "committed",
      .names = trace_mode_names,
      .help = "committed (default): the committed history, one event a line,\n"
              "virtual time on its axis, the same bytes on every engine and\n"
              "thread count ('kairos trace-diff A B' compares two); run: what\n"
              "each thread did on the wall clock - events run, rollbacks and\n"
              "their depth, GVT rounds, checkpoints, preemptions" },
    { "--trace-limit", "N", KR_OPT_U64, F(trace_limit), "1000000", 1, 1e9,
      .help = "--trace keeps the first N committed events (run: the first N\n"
              "records of each thread; default 1000000)" },
    { "--progress", "WHEN", KR_OPT_CHOICE, F(progress), "auto", .names = progress_names,
      .values = progress_values, .names_shown = 3,
      .help = "live progress line: auto (on a terminal), on, off" },
    { "--check", NULL, KR_OPT_FLAG, F(check), NULL,
      .help = "slower, for testing: the sequential engine runs every event\n"
              "twice and checks the model is re-executable and touches no\n"
              "global or other LP's state; the optimistic engine verifies\n"
              "its own invariants (GVT, commitment)" },
};
#define NHEAD (sizeof head / sizeof head[0])
#define NTAIL (sizeof tail / sizeof tail[0])

/* One row of the whole table, and whose record it writes. */
struct row {
    const struct kr__opt *o;
    const struct kr__engine *e;  /* the engine whose row it is; NULL: the run's */
    unsigned slot;               /* e's slot in struct kr__config (its table index) */
};

/* The number of rows engine e adds. */
static size_t rows_of(const struct kr__engine *e)
{
    size_t n = 0;
    while (e->options && e->options[n].name) n++;
    return n;
}

/* Row *at of the engines' part into *w; false, with *at counted past them, if beyond. */
static bool engine_row(struct row *w, size_t *at)
{
    for (unsigned s = 0; s < KR_ENGINES_MAX && kr__engine_at(s); s++) {
        const struct kr__engine *e = kr__engine_at(s);
        size_t n = rows_of(e);
        if (*at < n) {
            *w = (struct row){ &e->options[*at], e, s };
            return true;
        }
        *at -= n;
    }
    return false;
}

/* The rows in order: the head, each engine's rows in the engine table's order, the tail;
 * *k counts the rows walked (0 at the start). */
static bool next_row(struct row *w, size_t *k)
{
    size_t at = (*k)++;
    if (at < NHEAD) {
        *w = (struct row){ &head[at], NULL, 0 };
        return true;
    }
    at -= NHEAD;
    if (engine_row(w, &at)) return true;
    if (at >= NTAIL) return false;
    *w = (struct row){ &tail[at], NULL, 0 };
    return true;
}

/* The record a row writes. */
static void *record(struct kr__config *c, const struct row *w)
{
    return w->e ? (void *)c->opt_rec[w->slot] : (void *)c;
}

static void *field(struct kr__config *c, const struct row *w)
{
    return (char *)record(c, w) + w->o->off;
}

static const void *cfield(const struct kr__config *c, const struct row *w)
{
    return field((struct kr__config *)c, w);
}

/* A whole number from min to max, in decimal; nothing is truncated or wrapped. */
static uint64_t read_whole(const struct kr__opt *o, const char *v)
{
    char *end;
    errno = 0;
    if (strchr("-+ ", *v)) /* (strchr finds the terminator too: an empty value) */
        bad("%s needs a whole number, got '%s'", o->name, v);
    unsigned long long x = strtoull(v, &end, 10);
    if (*end) bad("%s needs a whole number, got '%s'", o->name, v);
    if (errno || (double)x < o->min || (double)x > o->max)
        bad("%s must be from %llu to %llu, got %s", o->name,
            (unsigned long long)o->min,
            o->max >= 0x1p64 ? UINT64_MAX : (unsigned long long)o->max, v);
    return x;
}

/* A time out of its option's range: the error, with the unit if the table names one. */
static _Noreturn void out_of_range(const struct kr__opt *o, const char *v)
{
    char unit[96] = "";
    if (o->what) snprintf(unit, sizeof unit, " %s", o->what);
    bad("%s must be from %.15g to %.15g%s, got %s", o->name, o->min, o->max, unit, v);
}

static double read_time(const struct kr__opt *o, const char *v)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !(x > 0)) /* (NaN is not > 0) */
        bad("%s needs a positive number (or 'inf'), got '%s'", o->name, v);
    if (x < o->min || x > o->max) out_of_range(o, v);
    return x;
}

static double read_real(const struct kr__opt *o, const char *v)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(x) || x < o->min)
        bad("%s needs %s, got '%s'", o->name, o->what, v);
    return x;
}

/* A size with an optional K, M or G suffix. */
/* A size's number part: decimal digits and one point only (strtod also reads 0x10, 1e3 and
 * inf); *end after it. */
static double size_number(const struct kr__opt *o, const char *v, char **end)
{
    errno = 0;
    if (strspn(v, "0123456789.") == 0 || strspn(v, "0123456789.") < strcspn(v, "KMGkmg"))
        bad("%s needs a size like 64M, got '%s'", o->name, v);
    double x = strtod(v, end);
    if (errno || *end == v || !isfinite(x))
        bad("%s needs a size like 64M, got '%s'", o->name, v);
    return x;
}

/* What the suffix at end (K, M, G or none) multiplies by. */
static double suffix_mul(const struct kr__opt *o, const char *v, const char *end)
{
    static const char suffix[] = "KMG";
    if (!*end) return 1;
    const char *s = strchr(suffix, *end & ~0x20);
    if (!s || end[1]) bad("%s needs a size like 64M, got '%s'", o->name, v);
    return (double)((size_t)1 << (10 * (s - suffix + 1)));
}

static size_t read_bytes(const struct kr__opt *o, const char *v)
{
    char *end;
    double x = size_number(o, v, &end);
    double mul = suffix_mul(o, v, end);
    if (!(x * mul >= o->min && x * mul <= o->max))
        bad("%s must be from 16 bytes to 1024G, got '%s'", o->name, v);
    return (size_t)(x * mul);
}

/* "a, b or c": the first n names. */
static const char *list_names(const struct kr__opt *o, unsigned n, char *buf, size_t cap)
{
    buf[0] = 0;
    for (unsigned k = 0; k < n; k++)
        snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s",
                 k == 0 ? "" : k + 1 == n ? " or " : ", ", o->names[k]);
    return buf;
}

static unsigned count_names(const struct kr__opt *o)
{
    unsigned n = 0;
    while (o->names[n]) n++;
    return n;
}

/* The index of v among o's names. */
static unsigned read_choice(const struct kr__opt *o, const char *v)
{
    for (unsigned k = 0; o->names[k]; k++)
        if (!strcmp(v, o->names[k])) return k;
    char buf[128];
    unsigned shown = o->names_shown ? o->names_shown : count_names(o);
    bad("%s must be %s, got '%s'", o->name, list_names(o, shown, buf, sizeof buf), v);
}

static const struct kr__engine *read_engine(const char *v)
{
    const struct kr__engine *e = kr__engine_find(v);
    if (!e) bad("--sync must be %s, got '%s'", kr__engine_names(), v);
    return e;
}

static int read_state(const char *v)
{
    const struct kr__state_ops *m = kr__state_ops_find(v);
    if (!m) bad("--state must be %s, got '%s'", kr__state_mode_names(), v);
    return m->id;
}

static bool numeric(const struct kr__opt *o)
{
    return o->kind <= KR_OPT_REAL;
}

/* A whole number option that may also say "auto" (0: chosen by the run). */
static unsigned read_count(const struct kr__opt *o, const char *v)
{
    return o->autoz && !strcmp(v, "auto") ? 0 : (unsigned)read_whole(o, v);
}

/* Set o's numeric field p from the text v. */
static void set_number(void *p, const struct kr__opt *o, const char *v)
{
    switch (o->kind) {
    case KR_OPT_UINT: *(unsigned *)p = read_count(o, v); break;
    case KR_OPT_U64: *(uint64_t *)p = read_whole(o, v); break;
    case KR_OPT_SIZE: *(size_t *)p = (size_t)read_whole(o, v); break;
    case KR_OPT_BYTES: *(size_t *)p = read_bytes(o, v); break;
    case KR_OPT_TIME: *(double *)p = read_time(o, v); break;
    default: *(double *)p = read_real(o, v); break;
    }
}

/* The value of o's k-th name (its index, without a values list). */
static int choice_value(const struct kr__opt *o, unsigned k)
{
    return o->values ? o->values[k] : (int)k;
}

/* Set the row's field from the text v (a command-line value or the default). */
static void set(struct kr__config *c, const struct row *w, const char *v)
{
    const struct kr__opt *o = w->o;
    void *p = field(c, w);
    if (numeric(o)) {
        set_number(p, o, v);
        return;
    }
    switch (o->kind) {
    case KR_OPT_CHOICE: *(int *)p = choice_value(o, read_choice(o, v)); break;
    case KR_OPT_SWITCH: *(bool *)p = choice_value(o, read_choice(o, v)) != 0; break;
    case KR_OPT_FLAG: *(bool *)p = true; break;
    case KR_OPT_STRING: *(const char **)p = v; break;
    case KR_OPT_ENGINE: *(const struct kr__engine **)p = read_engine(v); break;
    default: *(int *)p = read_state(v); break;
    }
}

/* Whether e's option `name` chooses its scheme (struct kr__opt.schemes); name NULL: the
 * option that does, or NULL. */
static const char *scheme_option(const struct kr__engine *e, const char *name)
{
    for (const struct kr__opt *o = e->options; o && o->name; o++)
        if (o->schemes && (!name || !strcmp(o->name, name))) return o->name;
    return NULL;
}

/* Each engine's slot: its record, cleared (kr__engine_opts finds it). */
static void engine_slots(struct kr__config *c)
{
    for (unsigned s = 0; s < KR_ENGINES_MAX; s++) {
        const struct kr__engine *e = kr__engine_at(s);
        c->opt_engine[s] = e;
        c->opt_given[s] = NULL;
        memset(c->opt_rec[s], 0, sizeof c->opt_rec[s]);
        if (e && e->options_size > sizeof c->opt_rec[s])
            bad("the %s engine's options take %zu bytes, over KR_ENGINE_OPTS_BYTES", e->name,
                e->options_size);
    }
}

/* Each engine's own defaults, after the table's (struct kr__engine.options_init). */
static void engines_init(struct kr__config *c)
{
    for (unsigned s = 0; s < KR_ENGINES_MAX; s++)
        if (c->opt_engine[s] && c->opt_engine[s]->options_init)
            c->opt_engine[s]->options_init(c->opt_rec[s]);
}

int kr__options_defaults(struct kr__config *c, struct kr__error *err)
{
    struct reading rd = { .err = err };
    reading = &rd;
    if (setjmp(rd.back)) { /* (a default the table cannot read: a Kairos bug) */
        err->status = KR_ERR_INTERNAL;
        return err->status;
    }
    engine_slots(c);
    size_t k = 0;
    for (struct row w; next_row(&w, &k);)
        if (w.o->def) set(c, &w, w.o->def);
    engines_init(c);
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

/* After row w's option was read: its hook, and what kr__options_unread needs (the first
 * option given of each engine, or the first after a scheme's choice). */
static void given(struct kr__config *c, const struct row *w)
{
    const struct kr__opt *o = w->o;
    if (o->after) o->after(record(c, w));
    if (w->e && (!c->opt_given[w->slot] || scheme_option(w->e, c->opt_given[w->slot])))
        c->opt_given[w->slot] = o->name;
    if (o->kind == KR_OPT_STATE) c->state_given = true;
}

int kr__option_parse(struct kr__config *c, int argc, char **argv, int *i,
                     struct kr__error *err)
{
    struct reading rd = { .err = err };
    reading = &rd;
    if (setjmp(rd.back)) return err->status;
    const char *a = argv[*i];
    if (!strncmp(a, "-P", 2)) { /* (-P name=value or -Pname=value) */
        add_param(c, a[2] ? a + 2 : need_value(argc, argv, i));
        return KR_OK;
    }
    size_t k = 0;
    for (struct row w; next_row(&w, &k);) {
        const struct kr__opt *o = w.o;
        if (strcmp(a, o->name)) continue;
        set(c, &w, o->kind == KR_OPT_FLAG ? "" : need_value(argc, argv, i));
        given(c, &w);
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

/* The engines that roll LP state back, the readers of --state ("optimistic"). */
static const char *restoring(char *buf, size_t cap)
{
    buf[0] = 0;
    for (size_t i = 0; kr__engine_at(i); i++)
        if (kr__engine_at(i)->restores_state)
            snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? "/" : "",
                     kr__engine_at(i)->name);
    return buf;
}

/* The note for an option given of engine slot s, which this run's engine (or scheme) does
 * not read; false if the run's scheme reads it after all. */
static bool engine_unread(const struct kr__config *c, unsigned s, char *buf, size_t cap)
{
    const struct kr__engine *e = c->opt_engine[s];
    if (!strcmp(e->name, c->engine->name)) { /* (another scheme of this engine) */
        if (scheme_option(e, c->opt_given[s])) return false;
        snprintf(buf, cap, "%s is an option of the %s engine's %s scheme; this run uses "
                 "its %s scheme, which does not read it (%s %s runs that one)",
                 c->opt_given[s], e->name, e->scheme, c->engine->scheme,
                 scheme_option(e, NULL), e->scheme);
    } else {
        snprintf(buf, cap, "%s is an option of the %s engine; this run uses the %s engine, "
                 "which does not read it", c->opt_given[s], e->name, c->engine->name);
    }
    return true;
}

/* The note for --state given to an engine that keeps no LP state to restore; false if
 * it is read. (--check runs each event twice under that state mode, whichever engine.) */
static bool state_unread(const struct kr__config *c, char *buf, size_t cap)
{
    char who[64];
    if (!c->state_given || c->engine->restores_state || c->check) return false;
    snprintf(buf, cap, "--state is an option of the %s engine; this run uses the %s "
             "engine, which does not read it", restoring(who, sizeof who), c->engine->name);
    return true;
}

/* An option given for another engine than the run's (a script that switches --sync keeps
 * them, so it is a note, not an error): NULL, or the note. */
const char *kr__options_unread(const struct kr__config *c, char *buf, size_t cap)
{
    if (state_unread(c, buf, cap)) return buf;
    for (unsigned s = 0; s < KR_ENGINES_MAX; s++)
        if (c->opt_given[s] && c->opt_engine[s] != c->engine && engine_unread(c, s, buf, cap))
            return buf;
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

/* A table row (a line that starts with two spaces) as it is, on a line of its own. */
static void help_row(struct help_line *h, const char *line, int len)
{
    if (!h->fresh) help_newline(h);
    fprintf(h->f, "%.*s", len, line);
    h->fresh = false;
    h->col = HELP_WIDTH; /* (the next word starts a line of its own) */
}

/* A line of prose, word by word (filled to HELP_WIDTH). */
static void help_words(struct help_line *h, const char *line, int len)
{
    for (const char *w = line; w < line + len;) {
        while (w < line + len && *w == ' ') w++;
        const char *e = w;
        while (e < line + len && *e != ' ') e++;
        if (e > w) help_word(h, w, (int)(e - w));
        w = e;
    }
}

static void help_text(struct help_line *h, const char *text)
{
    for (const char *line = text; *line;) {
        const char *end = strchr(line, '\n');
        int len = end ? (int)(end - line) : (int)strlen(line);
        if (!strncmp(line, "  ", 2)) help_row(h, line, len);
        else help_words(h, line, len);
        line += len + (end != NULL);
    }
}

/* What kairos --help says before a row's text: whose option it is ("optimistic:"). */
static const char *help_owner(const struct row *w, char *buf, size_t cap)
{
    char who[64];
    if (w->e) snprintf(buf, cap, "%s:", w->e->name);
    else if (w->o->kind == KR_OPT_STATE) snprintf(buf, cap, "%s:", restoring(who, sizeof who));
    else buf[0] = 0;
    return buf;
}

void kr__options_help(FILE *f)
{
    size_t k = 0;
    for (struct row w; next_row(&w, &k);) {
        const struct kr__opt *o = w.o;
        char head[64], owner[80];
        if (o->arg) snprintf(head, sizeof head, "  %s %s", o->name, o->arg);
        else snprintf(head, sizeof head, "  %s", o->name);
        int pad = (int)strlen(head) <= HELP_COL - 2 ? HELP_COL - (int)strlen(head) : 2;
        fprintf(f, "%s%*s", head, pad, "");
        struct help_line h = { f, (int)strlen(head) + pad, true };
        help_text(&h, help_owner(&w, owner, sizeof owner));
        help_text(&h, o->help);
        fputc('\n', f);
    }
    fputs("  -P name=value        set a model parameter (repeatable)\n", f);
}

/* The name of an int choice's value. */
static const char *choice_name(const struct kr__opt *o, int v)
{
    for (unsigned k = 0; o->names[k]; k++)
        if ((o->values ? o->values[k] : (int)k) == v) return o->names[k];
    return "?";
}

static void json_number(FILE *f, const struct kr__opt *o, const void *p)
{
    switch (o->kind) {
    case KR_OPT_UINT:
        if (o->json_auto && !*(const unsigned *)p) fputs("\"auto\"", f);
        else fprintf(f, "%u", *(const unsigned *)p);
        break;
    case KR_OPT_U64: fprintf(f, "%llu", (unsigned long long)*(const uint64_t *)p); break;
    case KR_OPT_SIZE:
    case KR_OPT_BYTES: fprintf(f, "%zu", *(const size_t *)p); break;
    default: kr__json_num(f, *(const double *)p); break;
    }
}

static void json_bool(FILE *f, bool b)
{
    fputs(b ? "true" : "false", f);
}

static void json_value(FILE *f, const struct kr__config *c, const struct row *w)
{
    const struct kr__opt *o = w->o;
    const void *p = cfield(c, w);
    if (numeric(o)) {
        json_number(f, o, p);
        return;
    }
    switch (o->kind) {
    case KR_OPT_CHOICE: kr__json_str(f, choice_name(o, *(const int *)p)); break;
    case KR_OPT_SWITCH: /* (an on/off switch is a boolean) */
        if (o->json_bool) json_bool(f, *(const bool *)p);
        else kr__json_str(f, choice_name(o, *(const bool *)p));
        break;
    case KR_OPT_FLAG: json_bool(f, *(const bool *)p); break;
    case KR_OPT_STRING: kr__json_str(f, *(const char *const *)p); break;
    case KR_OPT_ENGINE: kr__json_str(f, (*(const struct kr__engine *const *)p)->name); break;
    default: kr__json_str(f, kr__state_ops(*(const int *)p)->name); break;
    }
}

void kr__options_json(FILE *f, const struct kr__config *c)
{
    fputs("\"model\": ", f);
    kr__json_str(f, c->model);
    size_t k = 0;
    for (struct row w; next_row(&w, &k);) {
        if (!w.o->json) continue;
        fprintf(f, ", \"%s\": ", w.o->json);
        json_value(f, c, &w);
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

/* The -P parameters by name: two runs that give them in another order agree. */
static void params_sorted(FILE *f, const struct kr__config *c)
{
    struct kr__kv *kv = malloc((c->nparams + 1) * sizeof *kv);
    if (!kv) kr__fatal_oom("the options' identity", c->nparams * sizeof *kv);
    if (c->nparams) memcpy(kv, c->params, c->nparams * sizeof *kv);
    qsort(kv, c->nparams, sizeof *kv, kv_by_key);
    for (size_t i = 0; i < c->nparams; i++) fprintf(f, "-P %s=%s\n", kv[i].key, kv[i].val);
    free(kv);
}

void kr__options_identity(FILE *f, const struct kr__config *c)
{
    size_t k = 0;
    for (struct row w; next_row(&w, &k);) {
        if (!w.o->json || w.o->local) continue;
        fprintf(f, "%s ", w.o->name);
        json_value(f, c, &w);
        fputc('\n', f);
    }
    params_sorted(f, c);
}
