/* run.c - a run from start to end, above the engines: its set-up (model, parameters, LP
 * table, state region), the engine on a thread of its own, finish at virtual time +inf on
 * the committed states, the run digest, the report, and freeing it all. */
#include <errno.h>
#include <stdatomic.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "core/core.h"
#include "base/digest.h"
#include "base/error.h"
#include "core/watchdog.h"
#include "core/interrupt.h"
#include "state/addrmap.h"
#include "state/mode.h"
#include "core/statesave.h"
#include "core/progress.h"
#include "run/report.h"
#include "run/run.h"
#include "core/snapshot.h"
#include "core/trace.h"
#include "core/place.h"
#include "net/net.h"

static void send_refused(struct kr__ctx *c, struct kr__ev *e)
{
    (void)c;
    (void)e; /* unreachable: kr_schedule refuses sends in finish before dispatching */
}

static const struct kr__engine_ops finish_ops = { send_refused, kr__emit_direct, NULL, NULL,
                                                  NULL };

/* finish for this process's LPs, in LP order, and their words of the run digest (under
 * kr__guarded): five per LP into r->words, in order. */
static void finish_all(void *arg)
{
    struct kr__run *r = arg;
    const struct kr_model *m = r->model;
    uint64_t *w = r->words;
    for (kr_lp id = r->lo; id < r->hi; id++) {
        struct kr__lp *lp = kr__lp_at(r, id);
        kr__ctx.run = r;
        kr__ctx.lp = lp;
        kr__ctx.id = id;
        kr__ctx.ev = NULL;
        kr__ctx.now = INFINITY;
        kr__ctx.mode = KR_MODE_FINISH;
        kr__ctx.ops = &finish_ops;
        if (m->finish) {
            kr__watch_begin_callback(&kr__watch_callbacks, id, KR_MODE_FINISH);
            m->finish(id, lp->root);
            kr__watch_end(&kr__watch_callbacks);
        }
        kr__ctx.mode = KR_MODE_NONE;
        struct kr__alien al = { 0 };
        *w++ = lp->digest;
        *w++ = lp->committed;
        *w++ = lp->rng;
        *w++ = lp->seq;
        *w++ = kr__arena_hash(&lp->arena, lp->root, &al);
        if (al.found) kr__alien_report(r, id, &al);
    }
}

/* One word of the digest fold from rank `from`. */
static int recv_word(const struct kr__net_ops *o, uint64_t *h, int from)
{
    void *b = NULL;
    size_t len = 0;
    if (o->recv_bytes(&b, &len, from)) return -1;
    int bad = len != sizeof *h;
    if (!bad) memcpy(h, b, sizeof *h);
    free(b);
    return bad ? -1 : 0;
}

/* A rank's fold goes on to the next rank; the last one's comes back to rank 0. */
static int fold_pass(const struct kr__net_ops *o, uint64_t *h, int me, int last)
{
    if (o->send_bytes(h, sizeof *h, me < last ? me + 1 : 0)) return -1;
    return me == 0 ? recv_word(o, h, last) : 0;
}

/* The run digest: the words of every LP in LP order. Across ranks the fold runs on from rank
 * to rank (each has its LPs' words ready), the last one sending the result to rank 0. */
static int fold_digest(struct kr__run *r)
{
    const struct kr__net_ops *o = kr__net.size > 1 ? kr__net.ops : NULL;
    int me = kr__net.rank, last = kr__net.size - 1;
    uint64_t h = kr__mix(0x4B41, r->n);
    if (o && me > 0 && recv_word(o, &h, me - 1)) return -1;
    for (size_t i = 0; i < 5 * (r->hi - r->lo); i++) h = kr__mix(h, r->words[i]);
    if (o && fold_pass(o, &h, me, last)) return -1;
    r->run_digest = h;
    return 0;
}

/* The commit hooks' end first (where they run: one process, or rank 0), then every LP's
 * finish. */
static int finish_hooks(struct kr__run *r)
{
    int st = kr__net.rank == 0 ? kr__commit_end(r) : KR_OK;
    return st ? st : kr__guarded(r, finish_all, r);
}

/* The commit hooks' end and finish, then the run digest. Ranks past 0 print finish's
 * output through rank 0, in rank order. */
static int finish_and_fold(struct kr__run *r)
{
    bool ranks = kr__net.size > 1;
    char *out = NULL;
    size_t outlen = 0;
    if (ranks && kr__net.rank > 0) kr__emit_file = open_memstream(&out, &outlen);
    int st = finish_hooks(r);
    if (kr__emit_file) fclose(kr__emit_file);
    kr__emit_file = NULL;
    /* (every rank takes part, failed or not: the others wait in the collectives) */
    if ((ranks && kr__net_print_gathered(out, outlen)) || fold_digest(r))
        kr__die("MPI failed at the end of the run (finish output, run digest)");
    free(out);
    return st;
}

int kr__run_finish(struct kr__run *r)
{
    kr__addrmap_reset(); /* memory mapped during the run */
    char overrun[640];
    /* Never silently; and the process ends here: the write past the block may have
     * corrupted the C library's heap, which freeing the run would then trip over. */
    if (kr__overrun_find(overrun, sizeof overrun)) kr__die(overrun);
    r->words = malloc(5 * (r->hi - r->lo) * sizeof *r->words + 1);
    if (!r->words) kr__fatal_oom("the run digest", 5 * (r->hi - r->lo) * sizeof *r->words);
    int st = finish_and_fold(r);
    free(r->words);
    r->words = NULL;
    kr__stdout_flush();
    return st;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Sequential --check in mode full: every LP's state in a slice of one region, which the
 * check makes unreachable but for the running LP's (a read of another LP's state through
 * a global pointer then faults, named by fault.c). A machine that cannot reserve the
 * address space (about 2 GiB a LP with the default --arena-max) runs the other checks. */
static int check_slices(struct kr__run *r)
{
    const struct kr__config *cfg = r->cfg;
    r->check_slices = false;
    if (!cfg->check || cfg->engine->restores_state) return KR_OK;
    size_t limit = cfg->arena_max ? cfg->arena_max : (size_t)1 << 30;
    if (kr__region_init(r->n, 2 * limit, kr__state_default())) {
        fprintf(stderr, "kairos: warning: --check cannot reserve address space for %llu LPs' "
                "states apart (%s), so reads of another LP's state are not checked; a "
                "lower --arena-max or fewer --lps lets it\n", (unsigned long long)r->n,
                strerror(errno));
        return KR_OK;
    }
    r->check_slices = true;
    return KR_OK;
}

/* The state mode's region: every LP's slice reserved up front. */
static int region_setup(struct kr__run *r, const struct kr__state_ops *m, struct kr__error *err)
{
    size_t limit = r->cfg->arena_max ? r->cfg->arena_max : (size_t)1 << 30;
    size_t slice = 2 * limit + ((size_t)32 << 20);
    int rc = kr__region_init(r->n, slice, m);
    if (rc == -2)
        return kr__fail(err, KR_ERR_USAGE, "--state %s: the kernel's write tracking is not "
                        "available (%s): it needs Linux 6.7 or later with userfaultfd allowed; "
                        "use --state page", m->name, strerror(errno));
    if (rc)
        return kr__fail(err, KR_ERR_RESOURCE, "--state %s: cannot reserve address space for "
                        "%llu LPs of up to %zu bytes each (%s); lower --arena-max or --lps, or "
                        "use --state full", m->name, (unsigned long long)r->n, slice,
                        strerror(errno));
    if (m->region_ready) m->region_ready();
    return KR_OK;
}

/* --state reverse: the model undoes its events itself, so it needs a reverse handler, and
 * nothing else of the LP may change that the handler cannot see. */
static int reverse_refused(const struct kr__run *r, const struct kr__state_ops *m,
                           struct kr__error *err)
{
    const char *name = r->model->name;
    if (!r->model->reverse)
        return kr__fail(err, KR_ERR_USAGE, "--state %s: model '%s' has no reverse handler "
                        "(struct kr_model.reverse) to undo its events with; use --state full, "
                        "page or buddy, which need no help from the model", m->name, name);
    if (r->bundles || r->model->query)
        return kr__fail(err, KR_ERR_USAGE, "--state %s: model '%s' %s, which reverse "
                        "computation does not cover yet (the engine reads LP states as they "
                        "were before an event there); use --state full, page or buddy",
                        m->name, name, r->bundles ? "runs same-time bundles (KR_MODEL_BUNDLES)"
                        : "answers queries");
    return KR_OK;
}

/* A mode the model cannot be run in: one that needs its writes marked, or reverse
 * handlers it lacks. */
static bool mode_refused(const struct kr__run *r, const struct kr__state_ops *want,
                         struct kr__error *err)
{
    if (want->marks && !(r->model->flags & KR_MODEL_MARKS_WRITES))
        return kr__fail(err, KR_ERR_USAGE, "--state %s: model '%s' does not declare that it "
                        "marks its writes (KR_MODEL_MARKS_WRITES), so incremental checkpoints "
                        "would miss changes; use --state page or buddy, which need no help "
                        "from the model, or --state full", want->name, r->model->name);
    return want->reverse && reverse_refused(r, want, err);
}

/* Whether the run uses the --state mode asked for: on an engine that restores states, or
 * under sequential --check, which verifies the marks in the mode that needs them. */
static bool mode_used(const struct kr__config *cfg, const struct kr__state_ops *want)
{
    return cfg->engine->restores_state || (want->marks && cfg->check);
}

/* Tracked state saving (optimistic engine only: the sequential engine never restores)
 * needs every LP's slice reserved up front: room for twice --arena-max plus slack, since
 * areas are carved in whole pages and never returned. */
static int setup_state(struct kr__run *r, struct kr__error *err)
{
    const struct kr__config *cfg = r->cfg;
    const struct kr__state_ops *want = kr__state_ops(cfg->state_mode);
    if (mode_refused(r, want, err)) return err->status;
    const struct kr__state_ops *m = mode_used(cfg, want) ? want : kr__state_default();
    r->state_mode = m->id;
    r->reverse = m->reverse;
    kr__chunk_marking = m->marks;
    if (!m->region) return check_slices(r);
    if (region_setup(r, m, err)) return err->status;
    /* (sequential --check --state chunk: the slices are there, never protected by the mode) */
    r->check_slices = cfg->check && !cfg->engine->restores_state;
    return KR_OK;
}

/* The engine's thread: the run, then finish on the committed states. */
static void *run_engine(void *arg)
{
    struct kr__run *r = arg;
    kr__fault_thread_init();
    kr__watch_bind(&kr__watch_callbacks);
    double t0 = now_seconds();
    const struct kr__config *cfg = r->cfg;
    r->rc = cfg->engine->run(r);
    r->wall_seconds = now_seconds() - t0;
    kr__set_salvage(NULL, NULL);
    if (!r->rc) r->rc = kr__run_finish(r);
    if (!r->rc && r->out.cut_pending) kr__output_cut(r); /* (a resumed run that printed nothing) */
    if (!r->rc && kr__foreign_msg()) /* (a call no event was left to be blamed for) */
        r->rc = kr__fail(&r->fail, KR_ERR_MODEL, "%s", kr__foreign_msg());
    else kr__stdout_flush(); /* what was committed before the failure */
    kr__fault_thread_fini();
    return NULL;
}

/* The run's structures and everything the engine needs before it starts. */
/* What no engine (or not this one) can run of this model. */
static int model_refused(struct kr__run *r, const struct kr__config *cfg, struct kr__error *err)
{
    if (r->bundles && (r->model->flags & KR_MODEL_TYPE_ORDER))
        return kr__fail(err, KR_ERR_USAGE, "model '%s' declares both KR_MODEL_BUNDLES and "
                        "KR_MODEL_TYPE_ORDER: a bundle's handler sees all of its events at "
                        "once, so order them there (kr_bundle_get) and drop one flag",
                        r->model->name);
    if (r->model->query && (cfg->engine->no_queries || r->nranks > 1))
        return kr__fail(err, KR_ERR_USAGE, "model '%s' answers queries (struct kr_model.query, "
                        "kr_query), which %s: run it with --sync sequential",
                        r->model->name, r->nranks > 1 ? "are not answered across MPI ranks yet"
                        : cfg->engine->no_queries);
    return KR_OK;
}

/* What the model declares: its lookahead, bundles and tie rules. */
static int model_flags(struct kr__run *r, const struct kr__config *cfg, struct kr__error *err)
{
    if (kr__model_lookahead(r->model, &r->lookahead, err)) return err->status;
    /* (0 included: kr_set_lookahead) */
    r->promise.lookahead_declared = r->model->run_lookahead != NULL;
    r->bundles = r->model->flags & KR_MODEL_BUNDLES;
    if (model_refused(r, cfg, err)) return err->status;
    r->tie.dest = r->bundles ? UINT32_MAX : 0;
    r->tie.type = !r->bundles && (r->model->flags & KR_MODEL_TYPE_ORDER) ? UINT32_MAX : 0;
    return KR_OK;
}

/* The model, its parameters, this process's LPs and what the model declares of its run. */
static int model_setup(struct kr__run *r, struct kr__error *err)
{
    const struct kr__config *cfg = r->cfg;
    if (!(r->model = kr__model_load(cfg->model, err))) return err->status;
    if (kr__params_check(cfg, r->model, err)) return err->status;
    r->n = cfg->lps;
    r->nranks = (unsigned)kr__net.size;
    r->lo = kr__block_first((unsigned)kr__net.rank, r->n, (unsigned)kr__net.size);
    r->hi = kr__block_first((unsigned)kr__net.rank + 1, r->n, (unsigned)kr__net.size);
    return model_flags(r, cfg, err);
}

static int lp_stats_setup(struct kr__run *r, struct kr__error *err)
{
    if (!r->cfg->lp_stats_path) return KR_OK;
    size_t n = r->hi - r->lo;
    r->lpstat = malloc((n + 1) * sizeof *r->lpstat);
    if (!r->lpstat)
        return kr__fail(err, KR_ERR_RESOURCE, "out of memory allocating %zu bytes for "
                        "--lp-stats", (n + 1) * sizeof *r->lpstat);
    for (size_t i = 0; i < n; i++) r->lpstat[i] = (struct kr__lpstat){ 0, 0, -1 };
    return KR_OK;
}

/* --snapshot under mpirun with rank 0's output not a file of its own (mpirun passes it on:
 * a pty or a pipe): what mpirun has not written when the job dies is lost, and the file
 * it wrote falls short of what the snapshot counted (docs/cluster.md). */
static void warn_output_passed_on(const struct kr__run *r)
{
    struct stat st;
    if (!r->cfg->snap_dir || r->nranks < 2 || kr__net.rank != 0 ||
        (!fstat(STDOUT_FILENO, &st) && S_ISREG(st.st_mode)))
        return;
    fprintf(stderr, "kairos: warning: --snapshot under mpirun, and rank 0's output goes through "
            "mpirun: if the job dies, output mpirun has not written yet is lost and 'kairos "
            "resume' cannot continue that file; let rank 0 write it itself: mpirun ... sh -c "
            "'exec kairos run ... >> FILE' (docs/cluster.md)\n");
}

/* The ledger's size: ledger_size, or what ledger_bytes says for this run, within bounds. */
static int ledger_sized(struct kr__run *r, struct kr__error *err)
{
    const struct kr_model *m = r->model;
    r->ledger_size = m->ledger_size;
    if (m->ledger_bytes && kr__ledger_bytes(r, &r->ledger_size))
        return kr__fail(err, r->fail.status, "%s", r->fail.msg);
    if (r->ledger_size > KR_LEDGER_MAX)
        return kr__fail(err, KR_ERR_USAGE, "model '%s': ledger_bytes asks for a ledger of %zu "
                        "bytes; at most %u are allowed (it is kept in memory and in every "
                        "snapshot): keep large tables in LP states", m->name, r->ledger_size,
                        KR_LEDGER_MAX);
    return KR_OK;
}

/* Commit hooks: the model's ledger, zeroed (a resumed run's comes from the snapshot), of
 * ledger_size bytes or what ledger_bytes says for this run. */
static int ledger_setup(struct kr__run *r, struct kr__error *err)
{
    const struct kr_model *m = r->model;
    if (!m->commit) return KR_OK;
    if (ledger_sized(r, err)) return err->status;
    if (!(r->ledger = calloc(1, r->ledger_size ? r->ledger_size : 1)))
        return kr__fail(err, KR_ERR_RESOURCE, "out of memory allocating the model's %zu-byte "
                        "ledger", r->ledger_size);
    return KR_OK;
}

/* What a run keeps beside the engine's own: the model's ledger and metrics, --lp-stats
 * rows, the --trace collection. */
static int extras_setup(struct kr__run *r, struct kr__error *err)
{
    r->metrics = kr__metrics_new(r->model->metrics, r->cfg->end);
    kr__trace_start(r->cfg->trace_path ? (size_t)r->cfg->trace_limit : 0,
                    r->cfg->trace_mode == 1);
    return ledger_setup(r, err) || lp_stats_setup(r, err) ? err->status : KR_OK;
}

/* The LP table, the threads' counters and event pools; false if one is short of memory. */
static bool lp_table_alloc(struct kr__run *r)
{
    r->lp_mem = calloc(r->n, r->lp_bytes);
    r->counters = aligned_alloc(64, r->nthreads * sizeof *r->counters);
    r->pools = kr__pools_new(r->nthreads, kr__compact_events(r, r->cfg->engine));
    return r->lp_mem && r->counters && r->pools;
}

/* The LP table, the threads' counters and event pools. */
static int lp_table_setup(struct kr__run *r, struct kr__error *err)
{
    const struct kr__config *cfg = r->cfg;
    r->nthreads = cfg->engine->threads(cfg, r->n);
    /* (calloc: its large blocks start 16 bytes into a page, so records straddle lines; a
     * 64-byte aligned block measured 5% slower at 65 536 LPs, sequential: not taken.) */
    r->lp_bytes = sizeof(struct kr__lp) + cfg->engine->lp_extra;
    if (!lp_table_alloc(r))
        return kr__fail(err, KR_ERR_RESOURCE, "out of memory allocating %zu bytes for the LP "
                        "table; reduce --lps or run on a machine with more memory",
                        (size_t)(r->n * r->lp_bytes));
    memset(r->counters, 0, r->nthreads * sizeof *r->counters);
    kr__timers_start(r->lp_mem, r->lp_bytes, r->lo, r->hi - r->lo);
    if (kr__parallel_note && (r->nthreads > 1 || r->nranks > 1) && kr__net.rank == 0)
        fprintf(stderr, "kairos: note: %s\n", kr__parallel_note);
    return KR_OK;
}

const char *kr__parallel_note;

/* The committed output's start: a resumed run's from its snapshot, a run that writes
 * snapshots with the preamble 'kairos resume' checks. */
static int output_setup(struct kr__run *r, struct kr__error *err)
{
    r->out.hash = KR_OUT_HASH0;
    kr__out_closed = false; /* (a run in a process that ran others: tests, fuzzing) */
    if (r->cfg->resume_dir) return kr__snapshot_open(r, err);
    if (r->cfg->snap_dir) kr__output_preamble(r);
    return KR_OK;
}

int kr__run_setup(struct kr__run *r, const struct kr__config *cfg, struct kr__error *err)
{
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    static int (*const steps[])(struct kr__run *, struct kr__error *) = {
        model_setup, lp_table_setup, extras_setup,
    };
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++)
        if (steps[i](r, err)) return err->status;
    kr__foreign_reset();
    kr__interpose_reset();
    kr__fault_install();
    kr__interrupt_install();
    kr__run_current = r;
    kr__watch_thread_start(r);
    if (output_setup(r, err)) return err->status;
    warn_output_passed_on(r);
    return setup_state(r, err);
}

void kr__run_free(struct kr__run *r)
{
    /* (kr__run_setup started it; a process that runs again - a test - must not leave it
     * polling this run's callbacks after the run is gone: a crash in 1 run of 40 under
     * load, test_engine) */
    kr__watch_thread_stop();
    kr__run_current = NULL;
    for (kr_lp id = r->lo; r->lp_mem && id < r->hi; id++) {
        struct kr__lp *lp = kr__lp_at(r, id);
        kr__arena_destroy(&lp->arena);
        if (lp->out) kr__outvec_free(lp->out);
        free(lp->out);
    }
    kr__region_destroy();
    kr__timers_end();
    if (r->pools) kr__pools_free(r->pools, r->nthreads);
    free(r->series.rows);
    free(r->rank_stats);
    free(r->lpstat);
    free(r->ledger);
    kr__metrics_free(r->metrics);
    kr__trace_free();
    free(r->counters);
    free(r->lp_mem);
    kr__snapshot_close(r);
}

struct kr__run_outcome kr__run_last;

/* A run that succeeded: the summary, --stats and --trace (rank 0). */
static void report_files(struct kr__run *r, struct kr__error *err)
{
    kr__report_summary(r, stderr);
    if (r->cfg->stats_path) kr__report_json(r, r->cfg->stats_path, err);
    if (r->cfg->trace_path && !err->status) kr__report_trace(r, r->cfg->trace_path, err);
}

/* A run that failed (a model error, a crash or a timeout in model code) still writes its
 * --stats, ended_by "error" with the message (across ranks rank 0, which gathered every
 * rank's counters as after a run that succeeded; its message is the rank's own, or says
 * that another rank had the error). Its own failure to write is said, not the run's. */
static void failed_stats(struct kr__run *r)
{
    if (!r->cfg->stats_path || kr__net.rank != 0 || !r->fail.status) return;
    r->peak_rss = kr__peak_rss_bytes();
    struct kr__error serr = { 0 };
    if (kr__report_json(r, r->cfg->stats_path, &serr))
        fprintf(stderr, "kairos: warning: %s\n", serr.msg);
}

/* The run ended well: its outcome and (rank 0: across ranks it has them all, ranks.c) its
 * reports. */
static void run_succeeded(struct kr__run *r, struct kr__error *err)
{
    r->peak_rss = kr__peak_rss_bytes();
    if (kr__net.rank != 0) return;
    struct kr__totals t;
    kr__totals(r->counters, r->nthreads, &t);
    kr__run_last = (struct kr__run_outcome){ r->run_digest, r->out.bytes, r->out.hash,
                                             kr__snapshot_committed(r) + t.committed };
    report_files(r, err);
}

/* The engine or finish failed: the run's error (the engine's, or finish's), its --stats. */
static void run_failed(struct kr__run *r, struct kr__error *err)
{
    failed_stats(r);
    *err = r->fail;
    if (!err->status)
        kr__fail(err, KR_ERR_INTERNAL, "the %s engine stopped with code %d and no message",
                 r->cfg->engine->name, r->rc);
}

/* After the engine: --lp-stats (across ranks every rank sends its rows, whatever happened;
 * a failed run writes none), then the run's report or its failure. */
static void run_report(struct kr__run *r, struct kr__error *err, int *interrupted)
{
    struct kr__error lerr = { 0 };
    bool ok = !err->status && !r->rc;
    if (r->cfg->lp_stats_path) kr__report_lp_stats(r, ok ? r->cfg->lp_stats_path : NULL, &lerr);
    if (!ok) {
        if (!err->status) run_failed(r, err);
        return;
    }
    run_succeeded(r, err);
    if (lerr.status && !err->status) *err = lerr;
    *interrupted = r->interrupted;
}

int kr__run_main(const struct kr__config *cfg, struct kr__error *err, int *interrupted)
{
    struct kr__run r;
    *interrupted = 0;
    err->status = KR_OK;
    int failed = kr__run_setup(&r, cfg, err);
    /* (across ranks a set-up that failed on one rank - its snapshot unreadable there, its
     * output file not the snapshot's - fails it on all: the others would wait in the engine
     * for that rank forever) */
    if (kr__net.size > 1) {
        failed = kr__net_agree(err);
        kr__net.started = true;
    }
    if (failed) {
        kr__watch_thread_stop();
        kr__run_free(&r);
        return err->status;
    }
    /* The engine runs on a thread of its own, so that model code has --stack-kb of stack
     * with the large guard below on every engine (the main thread's stack is whatever the
     * shell's limit says). */
    pthread_t t;
    if (!kr__thread_start(&t, run_engine, &r, cfg->stack_kb, "the engine thread", err))
        pthread_join(t, NULL);
    kr__watch_thread_stop();
    run_report(&r, err, interrupted);
    kr__run_free(&r);
    return err->status;
}
