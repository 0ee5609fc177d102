/* run.c - the life of a run shared by all engines: LP set-up and init at virtual time -inf,
 * committing an event into an LP's history digest, finish at +inf, and the run digest. */
#include <errno.h>
#include <stdatomic.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>
#include "core.h"
#include "digest.h"
#include "error.h"
#include "watchdog.h"
#include "interrupt.h"
#include "../state/addrmap.h"
#include "../state/mode.h"
#include "../stats/statesave.h"
#include "../stats/progress.h"
#include "report.h"

void kr__lp_setup(struct kr__run *r, kr_lp id)
{
    struct kr__lp *lp = &r->lps[id];
    memset(lp, 0, sizeof *lp);
    struct kr__seg *seg = kr__region_seg(id);
    kr__arena_init(&lp->arena, r->cfg->arena_max, r->state_mode, seg);
    const struct kr__state_ops *m = kr__state_ops(r->state_mode);
    if (m->lp_ready) m->lp_ready(seg);
    lp->rng = kr__mix(kr__mix(0x6b61697273ull, r->cfg->seed), id);
    lp->digest = kr__mix(0xD16E57ull, id);
}

struct kr__outvec *kr__lp_out(struct kr__lp *lp)
{
    if (!lp->out && !(lp->out = calloc(1, sizeof *lp->out)))
        kr__fatal_oom("output buffer", sizeof *lp->out);
    return lp->out;
}

struct kr__lp_fail *kr__lp_fail_of(struct kr__lp *lp)
{
    if (!lp->fail && !(lp->fail = calloc(1, sizeof *lp->fail)))
        kr__fatal_oom("failure record", sizeof *lp->fail);
    return lp->fail;
}

void kr__lp_fail_clear(struct kr__lp *lp)
{
    if (!lp->fail) return;
    free(lp->fail->err);
    free(lp->fail);
    lp->fail = NULL;
}

void kr__lp_run_init(struct kr__run *r, kr_lp id)
{
    struct kr__lp *lp = &r->lps[id];
    kr__ctx.run = r;
    kr__ctx.lp = lp;
    kr__ctx.id = id;
    kr__ctx.ev = NULL;
    kr__ctx.now = -INFINITY;
    kr__ctx.gen = 0;
    kr__ctx.mode = KR_MODE_INIT;
    kr__watch_begin_callback(&kr__watch_callbacks, id, KR_MODE_INIT);
    if (r->model->init) r->model->init(id);
    lp->done_init = kr__run_done(r, lp, id);
    kr__watch_end(&kr__watch_callbacks);
    kr__ctx.mode = KR_MODE_NONE;
}

uint64_t kr__lps_init_all(struct kr__run *r)
{
    uint64_t ndone = 0;
    for (kr_lp id = 0; id < r->n; id++) kr__lp_setup(r, id);
    for (kr_lp id = 0; id < r->n; id++) {
        kr__lp_run_init(r, id);
        r->lps[id].done_seen = r->lps[id].done_init;
        ndone += r->lps[id].done_init;
    }
    return ndone;
}

bool kr__lp_done_step(struct kr__lp *lp, bool done)
{
    if (done && !lp->done_seen) {
        lp->done_seen = true;
        return true;
    }
    if (!done && lp->done_seen)
        kr__model_error("done() returned false after it had returned true; done() must be "
                        "monotone (once done, an LP stays done)");
    return false;
}

void kr__lp_commit_event(struct kr__lp *lp, const struct kr__ev *e)
{
    uint64_t t;
    memcpy(&t, &e->k.ts, sizeof t);
    uint64_t h = kr__mix(lp->digest, t);
    h = kr__mix(h, e->type);
    lp->digest = kr__mix_bytes(h, e->payload, e->size);
    lp->committed++;
}

void kr__emit_direct(struct kr__ctx *c, const char *text, size_t len)
{
    (void)c;
    fwrite(text, 1, len, stdout);
}

void kr__fail_fatal(struct kr__ctx *c, const char *msg)
{
    (void)c;
    kr__die(msg);
}

static void send_refused(struct kr__ctx *c, struct kr__ev *e)
{
    (void)c;
    (void)e; /* unreachable: kr_schedule refuses sends in finish before dispatching */
}

static const struct kr__engine_ops finish_ops = { send_refused, kr__emit_direct, kr__fail_fatal };

bool kr__overrun_lp(kr_lp id, char *buf, size_t cap)
{
    const struct kr__run *r = kr__run_current;
    if (!r || !r->lps || id >= r->n) return false;
    const struct kr__area *ar = kr__arena_overrun(&r->lps[id].arena);
    if (!ar) return false;
    snprintf(buf, cap, "model '%s', LP %llu: its state was written past the end of its "
             "kr_malloc memory (beyond the last %zu-byte block of an area), which corrupted the "
             "heap; run with --sync sequential --check to find the event", r->model->name, (unsigned long long)id, kr__arena_class_bytes(ar->cls));
    return true;
}

bool kr__overrun_find(char *buf, size_t cap)
{
    const struct kr__run *r = kr__run_current;
    for (kr_lp id = 0; r && id < r->n; id++)
        if (kr__overrun_lp(id, buf, cap)) return true;
    return false;
}

void kr__alien_report(const struct kr__run *r, kr_lp id, const struct kr__alien *al)
{
    static _Atomic bool said;
    if (atomic_exchange(&said, true)) return; /* one warning a run */
    char where[256];
    if (kr__ctx.mode == KR_MODE_EVENT) kr__ctx_where(where, sizeof where);
    else snprintf(where, sizeof where, "model '%s', LP %llu", r->model->name, (unsigned long long)id);
    fprintf(stderr, "kairos: warning: %s: its state holds an address (%#llx, byte %zu of a "
            "%zu-byte block) that points outside its kr_malloc memory and the program image, "
            "into %s: the run digest cannot name what it points at, so it may differ from run "
            "to run. Keep pointers to kr_malloc memory, constants and functions in the state; "
            "keep anything else out of it (a number that only looks like an address is "
            "harmless)\n", where, (unsigned long long)al->word, al->offset, al->block, al->where);
}

void kr__run_finish(struct kr__run *r)
{
    const struct kr_model *m = r->model;
    uint64_t h = kr__mix(0x4B41, r->n);
    kr__addrmap_reset(); /* memory mapped during the run */
    char overrun[640];
    if (kr__overrun_find(overrun, sizeof overrun)) kr__die(overrun); /* never silently */
    for (kr_lp id = 0; id < r->n; id++) {
        struct kr__lp *lp = &r->lps[id];
        kr__ctx.run = r;
        kr__ctx.lp = lp;
        kr__ctx.id = id;
        kr__ctx.ev = NULL;
        kr__ctx.now = INFINITY;
        kr__ctx.mode = KR_MODE_FINISH;
        kr__ctx.ops = &finish_ops;
        kr__ctx.jmp = NULL;
        if (m->finish) {
            kr__watch_begin_callback(&kr__watch_callbacks, id, KR_MODE_FINISH);
            m->finish(id, lp->root);
            kr__watch_end(&kr__watch_callbacks);
        }
        kr__ctx.mode = KR_MODE_NONE;
        h = kr__mix(h, lp->digest);
        h = kr__mix(h, lp->committed);
        h = kr__mix(h, lp->rng);
        h = kr__mix(h, lp->seq);
        struct kr__alien al = { 0 };
        h = kr__mix(h, kr__arena_hash(&lp->arena, lp->root, &al));
        if (al.found) kr__alien_report(r, id, &al);
    }
    kr__stdout_flush();
    r->run_digest = h;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Tracked state saving (optimistic engine only: the sequential engine never restores)
 * needs every LP's slice reserved up front: room for twice --arena-max plus slack, since
 * areas are carved in whole pages and never returned. */
static int setup_state(struct kr__run *r, struct kr__error *err)
{
    const struct kr__config *cfg = r->cfg;
    const struct kr__state_ops *want = kr__state_ops(cfg->tw.state_mode);
    if (want->marks && !(r->model->flags & KR_MODEL_MARKS_WRITES))
        return kr__fail(err, KR_ERR_USAGE, "--state %s: model '%s' does not declare that it "
                        "marks its writes (KR_MODEL_MARKS_WRITES), so incremental checkpoints "
                        "would miss changes; use --state page or buddy, which need no help "
                        "from the model, or --state full", want->name, r->model->name);
    /* (sequential --check verifies the marks in the mode that needs them) */
    bool used = cfg->engine->restores_state || (want->marks && cfg->check);
    const struct kr__state_ops *m = kr__state_ops(used ? want->id : KR_STATE_FULL);
    r->state_mode = m->id;
    kr__chunk_marking = m->marks;
    if (!m->region) return KR_OK;
    size_t limit = cfg->arena_max ? cfg->arena_max : (size_t)1 << 30;
    size_t slice = 2 * limit + ((size_t)32 << 20);
    int rc = kr__region_init(r->n, slice, m->id);
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

struct kr__run *_Atomic kr__run_current;

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
    if (!r->rc) kr__run_finish(r);
    kr__fault_thread_fini();
    return NULL;
}

/* The run's structures and everything the engine needs before it starts. */
static int run_setup(struct kr__run *r, const struct kr__config *cfg, struct kr__error *err)
{
    memset(r, 0, sizeof *r);
    r->cfg = cfg;
    if (!(r->model = kr__model_load(cfg->model, err))) return err->status;
    if (kr__params_check(cfg, r->model, err)) return err->status;
    r->n = cfg->lps;
    r->lookahead = r->model->lookahead;
    r->nthreads = cfg->engine->threads(cfg, r->n);
    r->lps = calloc(r->n, sizeof *r->lps);
    r->counters = aligned_alloc(64, r->nthreads * sizeof *r->counters);
    r->pools = kr__pools_new(r->nthreads);
    if (!r->lps || !r->counters || !r->pools)
        return kr__fail(err, KR_ERR_RESOURCE, "out of memory allocating %zu bytes for the LP "
                        "table; reduce --lps or run on a machine with more memory",
                        (size_t)r->n * sizeof *r->lps);
    memset(r->counters, 0, r->nthreads * sizeof *r->counters);
    kr__fault_install();
    kr__interrupt_install();
    kr__run_current = r;
    kr__watch_thread_start(r);
    return setup_state(r, err);
}

static void run_free(struct kr__run *r)
{
    kr__run_current = NULL;
    for (kr_lp id = 0; r->lps && id < r->n; id++) {
        kr__arena_destroy(&r->lps[id].arena);
        if (r->lps[id].out) kr__outvec_free(r->lps[id].out);
        free(r->lps[id].out);
        kr__lp_fail_clear(&r->lps[id]);
    }
    kr__region_destroy();
    if (r->pools) kr__pools_free(r->pools, r->nthreads);
    free(r->series);
    free(r->counters);
    free(r->lps);
}

int kr__run_main(const struct kr__config *cfg, struct kr__error *err, int *interrupted)
{
    struct kr__run r;
    *interrupted = 0;
    err->status = KR_OK;
    if (run_setup(&r, cfg, err)) {
        kr__watch_thread_stop();
        run_free(&r);
        return err->status;
    }
    /* The engine runs on a thread of its own, so that model code has --stack-kb of stack
     * with the large guard below on every engine (the main thread's stack is whatever the
     * shell's limit says). */
    pthread_t t;
    if (!kr__thread_start(&t, run_engine, &r, cfg->stack_kb, "the engine thread", err))
        pthread_join(t, NULL);
    kr__watch_thread_stop();
    if (!err->status && !r.rc) {
        r.peak_rss = kr__peak_rss_bytes();
        kr__report_summary(&r, stderr);
        if (cfg->stats_path) kr__report_json(&r, cfg->stats_path, err);
        *interrupted = r.interrupted;
    } else if (!err->status) {
        kr__fail(err, KR_ERR_INTERNAL, "the %s engine stopped with code %d", cfg->engine->name,
                 r.rc);
    }
    run_free(&r);
    return err->status;
}
