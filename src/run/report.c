/* report.c - see report.h. */
#include "run/report.h"
#include "core/snapshot.h"
#include "core/trace.h"
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "base/error.h"
#include "core/statesave.h"
#include "run/options.h"
#include "net/net.h"
#include "state/image.h"

/* --snapshot and kairos resume. */
static void snapshot_lines(const struct kr__run *r, FILE *f, const struct kr__totals *t)
{
    uint64_t before = kr__snapshot_committed(r);
    if (r->cfg->resume_dir)
        fprintf(f, "  resumed:          from %s/snapshot, at virtual time %.17g, after %llu "
                "committed events (the counts above are since; %llu in all)\n",
                r->cfg->resume_dir, kr__snapshot_time(r), (unsigned long long)before,
                (unsigned long long)(before + t->committed));
    if (!r->cfg->snap_dir) return;
    fprintf(f, "  snapshots:        %llu written to %s", (unsigned long long)r->snap.written,
            r->cfg->snap_dir);
    if (r->snap.written)
        fprintf(f, " (%.1f KiB and %.2f ms each on average), the last at virtual time %.17g",
                (double)r->snap.bytes / (double)r->snap.written / 1024.0,
                (double)r->snap.ns / (double)r->snap.written / 1e6, r->snap.time);
    fputc('\n', f);
}

static const char *signal_said(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal";
}

static void summary_ended(const struct kr__run *r, FILE *f)
{
    if (r->interrupted)
        fprintf(f, "  ended:            interrupted by %s: committed up to virtual time %.17g\n",
                signal_said(r->interrupted), r->end_key.ts);
    else
        fprintf(f, "  ended:            %s\n",
                r->ended_by_done ? "done() holds for every LP" :
                isinf(r->cfg->end) ? "no event left" : "end time reached");
}

/* What the run was, and how it ended. */
static void summary_head(const struct kr__run *r, FILE *f)
{
    char ranks[32] = "";
    if (r->nranks > 1) snprintf(ranks, sizeof ranks, "%u ranks x ", r->nranks);
    const struct kr__engine *e = r->cfg->engine;
    char scheme[48] = "";
    if (e->scheme) snprintf(scheme, sizeof scheme, " (%s)", e->scheme);
    fprintf(f, "kairos: model %s, engine %s%s, %s%u thread%s, %llu LPs, end time %g, seed "
            "%llu\n", r->model->name, e->name, scheme, ranks, r->nthreads,
            r->nthreads == 1 ? "" : "s", (unsigned long long)r->n, r->cfg->end,
            (unsigned long long)r->cfg->seed);
    summary_ended(r, f);
}

static void summary_queries(const struct kr__run *r, const struct kr__totals *t, FILE *f)
{
    fprintf(f, "  queries:          %llu answered (%llu asked of another thread)",
            (unsigned long long)t->queries, (unsigned long long)t->queries_remote);
    if (r->cfg->engine->restores_state) /* (optimistic/query.c) */
        fprintf(f, "; %llu events ran as the least event, to ask, %llu were undone to "
                "wait for that, %llu LPs rolled back to answer, %.3f s waited for answers "
                "(%llu other events ran meanwhile)",
                (unsigned long long)t->query_events, (unsigned long long)t->query_undone,
                (unsigned long long)t->query_rollbacks, (double)t->query_wait_ns / 1e9,
                (unsigned long long)t->query_aside);
    fputc('\n', f);
}

static void summary_memory(const struct kr__run *r, const struct kr__totals *t, FILE *f)
{
    const double mib = 1024.0 * 1024.0;
    fprintf(f, "  memory budget:    %.1f MiB; peak in use %.1f MiB (events %.1f, "
            "checkpoints %.1f, LP states %.1f); %llu memory-limited rollbacks, %llu "
            "sendbacks\n",
            (double)r->cfg->memory_max / mib, (double)r->mem_peak[3] / mib,
            (double)r->mem_peak[0] / mib, (double)r->mem_peak[1] / mib,
            (double)r->mem_peak[2] / mib, (unsigned long long)t->mem_rollbacks,
            (unsigned long long)t->sendbacks);
    if (r->mem_peak[3] > r->cfg->memory_max)
        fprintf(f, "  memory warning:   in use went past the budget (it is checked at "
                "intervals%s)\n", kr__state_ops(r->state_mode)->region
                    ? "; every LP's base copy, kept by --state other than full, cannot be "
                      "given back" : "");
}

/* A line per model metric: its values over the whole run. */
static void summary_metrics(const struct kr__metrics *ms, FILE *f)
{
    for (unsigned i = 0; ms && i < ms->n; i++) {
        const struct kr__mstat *a = &ms->m[i].all;
        fprintf(f, "  metric %-9s %llu values", ms->m[i].name, (unsigned long long)a->n);
        if (a->n)
            fprintf(f, ", mean %.6g, p50 %.6g, p99 %.6g (min %.6g, max %.6g)",
                    kr__xsum_value(&a->sum) / (double)a->n, kr__mstat_quantile(a, 0.5),
                    kr__mstat_quantile(a, 0.99), a->min, a->max);
        fputc('\n', f);
    }
}

/* The summary's event counts: committed, processed, cancelled timers. */
static void summary_events(const struct kr__totals *t, double rate, FILE *f)
{
    fprintf(f, "  committed events: %llu (%.3f M/s)\n", (unsigned long long)t->committed,
            rate / 1e6);
    fprintf(f, "  processed events: %llu (efficiency %.1f%%)\n", (unsigned long long)t->processed,
            t->processed ? 100.0 * (double)t->committed / (double)t->processed : 100.0);
    if (t->timers_cancelled)
        fprintf(f, "  timers:           %llu of the committed events were cancelled timers "
                "(their handler never ran)\n", (unsigned long long)t->timers_cancelled);
}

void kr__report_summary(const struct kr__run *r, FILE *f)
{
    struct kr__totals t;
    kr__totals(r->counters, r->nthreads, &t);
    double rate = r->wall_seconds > 0 ? (double)t.committed / r->wall_seconds : 0;
    summary_head(r, f);
    summary_events(&t, rate, f);
    summary_metrics(r->metrics, f);
    if (r->cfg->engine->summary) r->cfg->engine->summary(r, f);
    if (r->model->query) summary_queries(r, &t, f);
    if (r->cfg->memory_max) summary_memory(r, &t, f);
    snapshot_lines(r, f, &t);
    fprintf(f, "  wall time:        %.3f s, peak memory %.1f MiB\n", r->wall_seconds,
            (double)r->peak_rss / (1024.0 * 1024.0));
    fprintf(f, "  run digest:       %016llx\n", (unsigned long long)r->run_digest);
}

/* The length of the well-formed UTF-8 sequence at s (1-4; no overlong forms, surrogates or
 * code points past U+10FFFF), or 0. */
/* The length of a UTF-8 sequence that starts with byte c (0: no lead byte). */
static size_t utf8_lead(unsigned c)
{
    return c < 0x80 ? 1 : c < 0xC2 ? 0 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : c < 0xF5 ? 4 : 0;
}

/* The second byte's range after the leads that allow less (RFC 3629: no overlong forms,
 * no surrogates, nothing past U+10FFFF). */
static bool second_ok(unsigned lead, unsigned b)
{
    unsigned lo = lead == 0xE0 ? 0xA0 : lead == 0xF0 ? 0x90 : 0x80;
    unsigned hi = lead == 0xED ? 0x9F : lead == 0xF4 ? 0x8F : 0xBF;
    return b >= lo && b <= hi;
}

static size_t utf8_len(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n = utf8_lead(c);
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return n > 1 && !second_ok(c, s[1]) ? 0 : n;
}

/* The character at p, as JSON writes it: a quote or backslash escaped, a control character
 * or a byte of no valid UTF-8 sequence as its six-character escape, else as it is. The
 * bytes it took. */
static size_t json_char(FILE *f, const unsigned char *p)
{
    size_t n = utf8_len(p);
    if (*p == '"' || *p == '\\') fprintf(f, "\\%c", *p);
    else if (*p < 0x20 || !n) fprintf(f, "\\u%04x", *p);
    else fwrite(p, 1, n, f);
    return n ? n : 1;
}

/* (A byte that is not part of well-formed UTF-8 - a file name in Latin-1, say - is written
 * as the code point of the same number, \u00XX: the document stays UTF-8, as JSON must.) */
void kr__json_str(FILE *f, const char *s)
{
    fputc('"', f);
    const unsigned char *p = (const unsigned char *)s;
    while (p && *p) p += json_char(f, p);
    fputc('"', f);
}

void kr__json_num(FILE *f, double v)
{
    if (isinf(v) || isnan(v)) fputs("null", f);
    else fprintf(f, "%.17g", v);
}

static void cpu_model(char *buf, size_t cap)
{
    snprintf(buf, cap, "unknown");
    FILE *c = fopen("/proc/cpuinfo", "r");
    if (!c) return;
    char line[512];
    while (fgets(line, sizeof line, c)) {
        char *colon = strchr(line, ':');
        if (!strncmp(line, "model name", 10) && colon) {
            snprintf(buf, cap, "%s", colon + 2);
            buf[strcspn(buf, "\n")] = 0;
            break;
        }
    }
    fclose(c);
}

static void json_machine(FILE *f)
{
    struct utsname u;
    char cpu[256], host[256] = "unknown";
    uname(&u);
    cpu_model(cpu, sizeof cpu);
    gethostname(host, sizeof host - 1);
    fprintf(f, "  \"machine\": {\"hostname\": ");
    kr__json_str(f, host);
    fprintf(f, ", \"cpus_online\": %ld, \"cpu_model\": ", sysconf(_SC_NPROCESSORS_ONLN));
    kr__json_str(f, cpu);
    fprintf(f, ", \"kernel\": ");
    kr__json_str(f, u.release);
    fprintf(f, ", \"memory_bytes\": %lld},\n",
            (long long)sysconf(_SC_PHYS_PAGES) * (long long)sysconf(_SC_PAGESIZE));
}

static void json_config(FILE *f, const struct kr__run *r)
{
    fputs("  \"config\": {", f);
    kr__options_json(f, r->cfg);
    fputs("},\n", f);
}

static void json_series(FILE *f, const struct kr__run *r)
{
    fputs("  \"series\": {\"columns\": [\"wall_seconds\", \"gvt\", \"committed\", \"processed\", "
          "\"rss_bytes\", \"rollbacks\", \"rolled_back\", \"preempted_at_calls\", "
          "\"preempted_by_ticks\"], \"rows\": [", f);
    for (size_t i = 0; i < r->series.n; i++) {
        const double *row = r->series.rows + i * KR_SERIES_COLS;
        fprintf(f, "%s[%.4f, ", i ? ", " : "", row[0]);
        kr__json_num(f, row[1]);
        for (int c = 2; c < KR_SERIES_COLS; c++) fprintf(f, ", %.0f", row[c]);
        fputc(']', f);
    }
    fputs("]},\n", f);
}

static void json_threads(FILE *f, const struct kr__run *r)
{
    fputs("  \"threads_detail\": [", f);
    for (unsigned i = 0; i < r->nthreads; i++) {
        const struct kr__counters *c = &r->counters[i];
        fprintf(f,
                "%s\n    {\"thread\": %u, \"processed\": %llu, \"committed\": %llu, "
                "\"rolled_back\": %llu, \"rollbacks\": %llu, \"antimessages\": %llu, "
                "\"checkpoints\": %llu, \"checkpoint_bytes\": %llu, \"restores\": %llu, "
                "\"coasted\": %llu, \"safe\": %llu, \"lone\": %llu, \"remote_sent\": %llu, "
                "\"fossil_freed\": %llu, "
                "\"event_pool_bytes\": %llu, \"checkpoint_peak_bytes\": %llu, "
                "\"throttled\": %llu, \"window\": %llu, \"window_cuts\": %llu, "
                "\"idle_sleeps\": %llu, \"yields\": %llu, \"cpu_seconds\": %.6f}",
                i ? "," : "", i, (unsigned long long)c->processed, (unsigned long long)c->committed,
                (unsigned long long)c->rolled_back, (unsigned long long)c->rollbacks,
                (unsigned long long)c->antimessages, (unsigned long long)c->ck.taken,
                (unsigned long long)c->ck.bytes, (unsigned long long)c->ck.restores,
                (unsigned long long)c->coasted, (unsigned long long)c->safe,
                (unsigned long long)c->lone,
                (unsigned long long)c->remote_sent, (unsigned long long)c->fossil_freed,
                (unsigned long long)c->pool_bytes, (unsigned long long)c->ckpt_peak_bytes,
                (unsigned long long)c->win.throttled, (unsigned long long)c->win.final,
                (unsigned long long)c->win.cuts, (unsigned long long)c->idle_sleeps,
                (unsigned long long)c->yields, (double)c->cpu_ns / 1e9);
    }
    fputs("\n  ]\n", f);
}

/* --stats FILE: a regular file (or a new one) is written beside it (tmp) and renamed over
 * it once complete, so a write that fails leaves the old file or none, never half a
 * document; anything else (a pipe, /dev/stderr, a symbolic link, which a rename would
 * replace) is written in place (tmp empty). */
static FILE *stats_open(const char *path, char *tmp, size_t cap)
{
    struct stat st;
    tmp[0] = 0;
    if ((lstat(path, &st) != 0 || S_ISREG(st.st_mode)) &&
        (size_t)snprintf(tmp, cap, "%s.tmp", path) < cap) {
        FILE *f = fopen(tmp, "w");
        if (f) return f;
        tmp[0] = 0; /* (a directory it cannot create files in: the file itself, then) */
    }
    return fopen(path, "w");
}

/* Closes f and renames tmp (if any) to path: -1 if all went well, else the reason (errno,
 * or 0 if none is known). */
static int close_error(FILE *f, const char *path, const char *tmp)
{
    if (ferror(f)) { /* (a write that failed on the way: fclose may not say) */
        int e = errno; /* (its reason, if nothing since has changed errno) */
        fclose(f);
        return e;
    }
    if (fclose(f)) return errno;
    if (tmp[0] && rename(tmp, path)) return errno;
    return -1;
}

static int stats_close(FILE *f, const char *path, const char *tmp, struct kr__error *err,
                       const char *what)
{
    int e = close_error(f, path, tmp);
    if (e < 0) return KR_OK;
    if (tmp[0]) unlink(tmp);
    return kr__fail(err, KR_ERR_RESOURCE, "writing %s to '%s' failed: %s; the run's "
                    "summary above is complete", what, path, strerror(e ? e : EIO));
}

/* "type_names": the model's names of its event types, or null. */
static void json_type_names(FILE *f, const struct kr_model *m)
{
    fputs("  \"type_names\": ", f);
    if (!m->type_names) {
        fputs("null,\n", f);
        return;
    }
    fputc('[', f);
    for (unsigned i = 0; m->type_names[i]; i++) {
        fputs(i ? ", " : "", f);
        kr__json_str(f, m->type_names[i]);
    }
    fputs("],\n", f);
}

/* One bin's (or the whole run's) values: count, sum, mean, min, max, percentiles. */
static void json_mstat(FILE *f, const struct kr__mstat *s)
{
    static const double qs[] = { 0.5, 0.9, 0.99 };
    static const char *const qn[] = { "p50", "p90", "p99" };
    fprintf(f, "\"count\": %llu, \"sum\": ", (unsigned long long)s->n);
    double sum = kr__xsum_value(&s->sum);
    kr__json_num(f, sum);
    fputs(", \"mean\": ", f);
    kr__json_num(f, s->n ? sum / (double)s->n : NAN);
    fputs(", \"min\": ", f);
    kr__json_num(f, s->n ? s->min : NAN);
    fputs(", \"max\": ", f);
    kr__json_num(f, s->n ? s->max : NAN);
    for (int i = 0; i < 3; i++) {
        fprintf(f, ", \"%s\": ", qn[i]);
        kr__json_num(f, kr__mstat_quantile(s, qs[i]));
    }
}

/* A metric's bins that saw a value, each with its start time. */
static void json_metric_bins(FILE *f, const struct kr__metric *m)
{
    fputs(", \"bins\": [", f);
    const char *sep = "";
    for (uint32_t b = 0; b < m->nbins; b++) {
        if (!m->bins[b].n) continue;
        fprintf(f, "%s\n      {\"t\": ", sep);
        kr__json_num(f, b * m->width);
        fputs(", ", f);
        json_mstat(f, &m->bins[b]);
        fputc('}', f);
        sep = ",";
    }
    fputs("]", f);
}

/* "model_metrics": per metric, the whole run's values and each bin that holds any. */
static void json_metrics(FILE *f, const struct kr__metrics *ms)
{
    fputs("  \"model_metrics\": {", f);
    for (unsigned i = 0; ms && i < ms->n; i++) {
        const struct kr__metric *m = &ms->m[i];
        fprintf(f, "%s\n    ", i ? "," : "");
        kr__json_str(f, m->name);
        fputs(": {\"bin_width\": ", f);
        kr__json_num(f, m->width);
        fputs(", ", f);
        json_mstat(f, &m->all);
        json_metric_bins(f, m);
        fputs("}", f);
    }
    fputs(ms ? "\n  },\n" : "},\n", f);
}

/* "ended_by", and for a failed run its message. */
static void json_ended(FILE *f, const struct kr__run *r)
{
    fprintf(f, "  \"ended_by\": \"%s\",\n", r->rc ? "error" : r->interrupted ? "interrupted" :
            r->ended_by_done ? "done" : isinf(r->cfg->end) ? "no_events" : "end_time");
    if (!r->rc) return;
    fputs("  \"error\": ", f);
    kr__json_str(f, r->fail.msg);
    fputs(",\n", f);
}

/* (a failed run has no digest) */
static void json_digest(FILE *f, const struct kr__run *r)
{
    if (r->rc) fputs("  \"run_digest\": null,\n", f);
    else fprintf(f, "  \"run_digest\": \"%016llx\",\n", (unsigned long long)r->run_digest);
}

/* The run's identity: model, engine, shape. */
static void json_head(FILE *f, const struct kr__run *r)
{
    fprintf(f, "{\n  \"schema\": \"kairos-stats\",\n  \"schema_version\": 1,\n  \"model\": ");
    kr__json_str(f, r->model->name);
    fprintf(f, ",\n  \"engine\": \"%s\",\n", r->cfg->engine->name);
    if (r->cfg->engine->scheme) fprintf(f, "  \"scheme\": \"%s\",\n", r->cfg->engine->scheme);
    fprintf(f, "  \"threads\": %u,\n  \"ranks\": %u,\n  \"lps\": %llu,\n"
            "  \"end_time\": ", r->nthreads, r->nranks ? r->nranks : 1,
            (unsigned long long)r->n);
    kr__json_num(f, r->cfg->end);
    fprintf(f, ",\n  \"seed\": %llu,\n", (unsigned long long)r->cfg->seed);
}

/* The totals every engine counts. */
static void json_totals(FILE *f, const struct kr__run *r, const struct kr__totals *t)
{
    fprintf(f, ",\n  \"committed_events\": %llu,\n  \"processed_events\": %llu,\n"
            "  \"efficiency\": %.6f,\n  \"committed_per_second\": %.1f,\n"
            "  \"rollbacks\": %llu,\n  \"rolled_back_events\": %llu,\n  \"antimessages\": %llu,\n"
            "  \"lazy_kept\": %llu,\n"
            "  \"checkpoints\": %llu,\n  \"checkpoint_bytes\": %llu,\n  \"coasted_events\": %llu,\n"
            "  \"safe_events\": %llu,\n  \"lone_events\": %llu,\n  \"migrated_lps\": %llu,\n"
            "  \"migrations\": %llu,\n"
            "  \"retired_workers\": %llu,\n  \"worker_trials\": %llu,\n"
            "  \"worker_trials_undone\": %llu,\n  \"share_trials\": %llu,\n"
            "  \"share_trials_kept\": %llu,\n"
            "  \"window_cuts\": %llu,\n  \"gvt_rounds\": %llu,\n"
            "  \"wall_seconds\": %.6f,\n  \"peak_rss_bytes\": %zu,\n",
            (unsigned long long)t->committed, (unsigned long long)t->processed,
            t->processed ? (double)t->committed / (double)t->processed : 1.0,
            r->wall_seconds > 0 ? (double)t->committed / r->wall_seconds : 0.0,
            (unsigned long long)t->rollbacks, (unsigned long long)t->rolled_back,
            (unsigned long long)t->antimessages, (unsigned long long)t->lazy_kept,
            (unsigned long long)t->checkpoints, (unsigned long long)t->ckpt_bytes,
            (unsigned long long)t->coasted,
            (unsigned long long)t->safe, (unsigned long long)t->lone,
            (unsigned long long)t->migrated,
            (unsigned long long)r->bal.migrations, (unsigned long long)r->bal.retired,
            (unsigned long long)r->bal.trials, (unsigned long long)r->bal.undone,
            (unsigned long long)r->bal.shares, (unsigned long long)r->bal.shares_kept,
            (unsigned long long)t->window_cuts, (unsigned long long)t->gvt_rounds, r->wall_seconds,
            r->peak_rss);
}

/* The parts only some runs have: a memory budget, queries, snapshots, a resume. */
static void json_features(FILE *f, const struct kr__run *r, const struct kr__totals *t)
{
    if (r->cfg->memory_max)
        fprintf(f, "  \"memory\": {\"budget_bytes\": %zu, \"peak_bytes\": %zu, "
                "\"peak_event_bytes\": %zu, \"peak_checkpoint_bytes\": %zu, "
                "\"peak_state_bytes\": %zu, \"memory_limited_rollbacks\": %llu, "
                "\"sendbacks\": %llu},\n",
                r->cfg->memory_max, (size_t)r->mem_peak[3], (size_t)r->mem_peak[0],
                (size_t)r->mem_peak[1], (size_t)r->mem_peak[2],
                (unsigned long long)t->mem_rollbacks, (unsigned long long)t->sendbacks);
    if (r->model->query)
        fprintf(f, "  \"queries\": {\"answered\": %llu, \"remote\": %llu, \"asking_events\": "
                "%llu, \"undone_to_ask\": %llu, \"rollbacks_to_answer\": %llu, "
                "\"wait_seconds\": %.6f, \"ran_while_waiting\": %llu},\n",
                (unsigned long long)t->queries, (unsigned long long)t->queries_remote,
                (unsigned long long)t->query_events, (unsigned long long)t->query_undone,
                (unsigned long long)t->query_rollbacks, (double)t->query_wait_ns / 1e9,
                (unsigned long long)t->query_aside);
    if (r->cfg->snap_dir)
        fprintf(f, "  \"snapshots\": {\"written\": %llu, \"bytes\": %llu, \"seconds\": %.6f, "
                "\"last_time\": %.17g},\n", (unsigned long long)r->snap.written,
                (unsigned long long)r->snap.bytes, (double)r->snap.ns / 1e9,
                r->snap.written ? r->snap.time : 0.0);
    if (r->cfg->resume_dir)
        fprintf(f, "  \"resumed_at\": %.17g,\n  \"committed_before_resume\": %llu,\n",
                kr__snapshot_time(r), (unsigned long long)kr__snapshot_committed(r));
}

int kr__report_json(const struct kr__run *r, const char *path, struct kr__error *err)
{
    char tmp[4096];
    FILE *f = stats_open(path, tmp, sizeof tmp);
    if (!f)
        return kr__fail(err, KR_ERR_RESOURCE, "cannot write statistics to '%s': %s", path,
                        strerror(errno));
    struct kr__totals t;
    kr__totals(r->counters, r->nthreads, &t);
    json_head(f, r);
    json_type_names(f, r->model);
    json_metrics(f, r->metrics);
    json_ended(f, r);
    fputs("  \"final_gvt\": ", f);
    kr__json_num(f, r->final_gvt);
    fprintf(f, ",\n  \"timers_cancelled\": %llu", (unsigned long long)t.timers_cancelled);
    json_totals(f, r, &t);
    json_digest(f, r);
    json_features(f, r, &t);
    json_config(f, r);
    kr__state_json(r, f);
    if (r->cfg->engine->json) r->cfg->engine->json(r, f);
    json_machine(f);
    json_series(f, r);
    json_threads(f, r);
    fputs("}\n", f);
    return stats_close(f, path, tmp, err, "statistics");
}

/* ---- --lp-stats ---- */

#define LP_ROWS_PIECE (4u << 20)

/* This rank's rows into b, from LP *id on, until a piece is full; false once all are in. */
static bool lp_rows(const struct kr__run *r, kr_lp *id, struct kr__bytes *b)
{
    char row[256];
    for (; *id < r->hi && b->n < LP_ROWS_PIECE; (*id)++) {
        const struct kr__lp *lp = kr__lp_at(r, *id);
        const struct kr__lpstat *s = &r->lpstat[*id - r->lo];
        char thread[16] = "";
        if (s->thread >= 0) snprintf(thread, sizeof thread, "%d", (int)s->thread);
        int n = snprintf(row, sizeof row, "%llu,%d,%s,%llu,%llu,%llu,%llu,%zu\n",
                         (unsigned long long)*id, kr__net.rank, thread,
                         (unsigned long long)lp->committed,
                         (unsigned long long)(lp->committed + s->rolled_back),
                         (unsigned long long)s->rollbacks, (unsigned long long)s->rolled_back,
                         lp->arena.used);
        kr__bytes_put(b, row, (size_t)n);
    }
    if (b->oom) kr__fatal_oom("--lp-stats rows", LP_ROWS_PIECE);
    return *id < r->hi;
}

/* Ranks but 0: the rows to rank 0 in pieces, then an empty one. */
static void lp_rows_send(const struct kr__run *r)
{
    struct kr__bytes b = { 0 };
    kr_lp id = r->lo;
    for (bool more = true; more;) {
        b.n = 0;
        more = lp_rows(r, &id, &b);
        if (b.n && kr__net.ops->send_bytes(b.p, b.n, 0)) kr__die("MPI failed sending --lp-stats");
    }
    if (kr__net.ops->send_bytes("", 0, 0)) kr__die("MPI failed sending --lp-stats");
    kr__bytes_free(&b);
}

/* Rank 0: rank k's rows into f (NULL: taken in and dropped). */
static void lp_rows_take(FILE *f, int k)
{
    for (;;) {
        void *buf = NULL;
        size_t n = 0;
        if (kr__net.ops->recv_bytes(&buf, &n, k)) kr__die("MPI failed taking in --lp-stats");
        if (f && n) fwrite(buf, 1, n, f);
        free(buf);
        if (!n) return;
    }
}

/* This rank's rows, a block at a time (to f, or dropped when it could not be opened). */
static void lp_rows_write(FILE *f, const struct kr__run *r)
{
    struct kr__bytes b = { 0 };
    kr_lp id = r->lo;
    for (bool more = true; more;) {
        b.n = 0;
        more = lp_rows(r, &id, &b);
        if (f) fwrite(b.p, 1, b.n, f);
    }
    kr__bytes_free(&b);
}

/* Every rank's rows into f (rank 0; f NULL: taken from the ranks and dropped). */
static void lp_rows_all(FILE *f, const struct kr__run *r)
{
    if (f) fputs("lp,rank,thread,committed,processed,rollbacks,rolled_back,state_bytes\n", f);
    lp_rows_write(f, r);
    for (int k = 1; k < kr__net.size; k++) lp_rows_take(f, k);
}

int kr__report_lp_stats(const struct kr__run *r, const char *path, struct kr__error *err)
{
    if (kr__net.rank) {
        lp_rows_send(r);
        return KR_OK;
    }
    char tmp[4096];
    FILE *f = path ? stats_open(path, tmp, sizeof tmp) : NULL;
    int e = errno;
    lp_rows_all(f, r);
    if (!path) return KR_OK;
    if (!f)
        return kr__fail(err, KR_ERR_RESOURCE, "cannot write --lp-stats to '%s': %s", path,
                        strerror(e));
    return stats_close(f, path, tmp, err, "statistics");
}

/* ---- --trace: the committed history (core/trace.c collects it) ---- */

static int trace_cmp(const void *a, const void *b)
{
    return kr__key_cmp(&((const struct kr__trace_rec *)a)->k,
                       &((const struct kr__trace_rec *)b)->k);
}

/* A timer's event in the committed trace: whether it ran. */
static const char *timer_arg(uint32_t pflags)
{
    if (!(pflags & KR_PAYLOAD_TIMER)) return "";
    return pflags & KR_PAYLOAD_CANCELLED ? ",\"timer\":\"cancelled\"" : ",\"timer\":\"ran\"";
}

/* One event a line, in key order; nothing in it depends on the engine, threads or timing,
 * so two runs' files are equal byte for byte when their histories are (trace-diff). The
 * axis (ts, microseconds for a viewer) is virtual time x 1e6. */
static void trace_body(FILE *f, const struct kr_model *m, const struct kr__trace_rec *a,
                       size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct kr__trace_rec *x = &a[i];
        const char *name = kr__type_name(m, x->type); /* (checked: no quote, no backslash) */
        char number[24];
        if (!name) {
            snprintf(number, sizeof number, "type %u", x->type);
            name = number;
        }
        fprintf(f, "%c{\"name\":\"%s\",\"ph\":\"i\",\"s\":\"t\",\"pid\":0,\"tid\":%llu,"
                "\"ts\":%.17g,\"args\":{\"t\":%.17g,\"type\":%u,\"gen\":%u,\"src\":%llu,"
                "\"seq\":%llu,\"size\":%u,\"payload\":\"%016llx\"%s}}\n", i ? ',' : ' ',
                name,
                (unsigned long long)x->dest, x->k.ts * 1e6, x->k.ts, x->type, x->k.gen,
                (unsigned long long)x->k.src, (unsigned long long)x->k.seq, x->size,
                (unsigned long long)x->payload, timer_arg(x->pflags));
    }
}

static int span_cmp(const void *a, const void *b)
{
    const struct kr__span *x = a, *y = b;
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static const char *const span_names[] = { "event", "coast", "rollback", "GVT", "checkpoint",
                                          "preempted" };

/* (a virtual time, JSON: a non-finite one is null) */
static void json_vt(FILE *f, kr_time t)
{
    if (isfinite(t)) fprintf(f, "%.17g", t);
    else fputs("null", f);
}

/* A span's own argument: a rollback's depth, a checkpoint's bytes, an event's type (and its
 * name, if the model names it). */
static void span_arg(FILE *f, const struct kr_model *m, const struct kr__span *x)
{
    if (x->kind == KR_SPAN_ROLLBACK) {
        fprintf(f, ",\"depth\":%u", x->arg);
    } else if (x->kind == KR_SPAN_CKPT) {
        fprintf(f, ",\"bytes\":%u", x->arg);
    } else if (x->kind != KR_SPAN_GVT) {
        const char *name = kr__type_name(m, x->arg);
        fprintf(f, ",\"type\":%u", x->arg);
        if (name) fprintf(f, ",\"type_name\":\"%s\"", name);
    }
}

/* A span's "args": its LP (not GVT's), its virtual time (a rollback's target, GVT's time,
 * an event's time) and what span_arg adds. */
static void span_args(FILE *f, const struct kr_model *m, const struct kr__span *x)
{
    fputs("\"args\":{", f);
    if (x->kind != KR_SPAN_GVT) fprintf(f, "\"lp\":%llu,", (unsigned long long)x->lp);
    fputs(x->kind == KR_SPAN_ROLLBACK ? "\"to\":" : x->kind == KR_SPAN_GVT ? "\"gvt\":" : "\"t\":",
          f);
    json_vt(f, x->vt);
    span_arg(f, m, x);
    fputc('}', f);
}

/* Whether a span of this kind has a duration (the others are instants). */
static bool span_lasts(unsigned kind)
{
    return kind == KR_SPAN_EVENT || kind == KR_SPAN_COAST || kind == KR_SPAN_CKPT;
}

/* One span: events and checkpoints last (ph X), the others are instants on their thread's
 * track (GVT on all of them); ts and dur in microseconds of wall time. */
static void span_line(FILE *f, const struct kr_model *m, const struct kr__span *x, bool first)
{
    const char *name = span_names[x->kind];
    bool lasts = span_lasts(x->kind);
    fprintf(f, "%c{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"%s\",\"pid\":0,\"tid\":%u,"
            "\"ts\":%.3f,", first ? ' ' : ',', name, name, lasts ? "X" : "i", x->tid,
            (double)x->t0 / 1e3);
    if (lasts) fprintf(f, "\"dur\":%.3f,", (double)x->dur / 1e3);
    else fprintf(f, "\"s\":\"%s\",", x->kind == KR_SPAN_GVT ? "g" : "t");
    span_args(f, m, x);
    fputs("}\n", f);
}

/* --trace-mode run: every thread's spans by start time, its first --trace-limit. */
static void trace_run_body(FILE *f, const struct kr__run *r)
{
    struct kr__span *a;
    uint64_t dropped;
    size_t n = kr__trace_take_spans(&a, &dropped);
    qsort(a, n, sizeof *a, span_cmp);
    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"kairos\":\"run\",\"model\":", f);
    kr__json_str(f, r->model->name);
    fprintf(f, ",\"engine\":\"%s\",\"threads\":%u,\"lps\":%llu,\"records\":%zu,"
            "\"dropped_at_limit\":%llu},\n\"traceEvents\":[\n", r->cfg->engine->name,
            r->nthreads, (unsigned long long)r->n, n, (unsigned long long)dropped);
    for (size_t i = 0; i < n; i++) span_line(f, r->model, &a[i], i == 0);
    fputs("]}\n", f);
    free(a);
}

/* The trace's records of the whole run (--trace-mode run). */
static int trace_run_file(const struct kr__run *r, const char *path, struct kr__error *err)
{
    char tmp[4096];
    FILE *f = stats_open(path, tmp, sizeof tmp);
    if (!f)
        return kr__fail(err, KR_ERR_RESOURCE, "cannot write the trace to '%s': %s", path,
                        strerror(errno));
    trace_run_body(f, r);
    return stats_close(f, path, tmp, err, "the trace");
}

/* The committed events, in key order, up to --trace-limit of them. */
static int trace_events_file(const struct kr__run *r, const char *path, struct kr__error *err)
{
    struct kr__trace_rec *a;
    bool cut;
    size_t n = kr__trace_take(&a, &cut);
    qsort(a, n, sizeof *a, trace_cmp);
    size_t limit = (size_t)r->cfg->trace_limit;
    cut = cut || n > limit;
    if (n > limit) n = limit;
    char tmp[4096];
    FILE *f = stats_open(path, tmp, sizeof tmp);
    if (!f) {
        free(a);
        return kr__fail(err, KR_ERR_RESOURCE, "cannot write the trace to '%s': %s", path,
                        strerror(errno));
    }
    fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{\"kairos\":\"committed history\","
          "\"model\":", f);
    kr__json_str(f, r->model->name);
    fprintf(f, ",\"lps\":%llu,\"seed\":%llu,\"events\":%zu,\"cut_at_limit\":%s},\n"
            "\"traceEvents\":[\n", (unsigned long long)r->n, (unsigned long long)r->cfg->seed,
            n, cut ? "true" : "false");
    trace_body(f, r->model, a, n);
    fputs("]}\n", f);
    free(a);
    return stats_close(f, path, tmp, err, "the trace");
}

int kr__report_trace(const struct kr__run *r, const char *path, struct kr__error *err)
{
    return r->cfg->trace_mode == 1 ? trace_run_file(r, path, err)
                                   : trace_events_file(r, path, err);
}
