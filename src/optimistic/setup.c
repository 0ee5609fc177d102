/* setup.c - the optimistic engine's run: its shared record and threads set up, init in LP
 * order, the workers started and watched (committed output printed, the progress line,
 * interrupts, event timeouts), the run's failure and its end; one worker alone handed to
 * the sequential engine's core (tw_alone); the engine's descriptor. */
#define _GNU_SOURCE
#include "base/sanitize.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "optimistic/tw.h"
#include "optimistic/clock.h"
#include "optimistic/balance.h"
#include "optimistic/ranks.h"
#include "state/mode.h"
#include "base/error.h"
#include "core/snapshot.h"
#include "core/progress.h"

/* A watcher loop that took this long means the process was stopped (or the machine
 * suspended): the time does not count towards --event-timeout of events on stacks. */
#define TW_PAUSE_NS (500u * 1000 * 1000)

static bool tw_page_tracked(const struct kr__run *r)
{
    return kr__state_ops(r->state_mode)->by_pages;
}

/* The engine's mechanisms, in the order their hooks run: at a new horizon the commit comes
 * first (the window judges the period it ends; a migration and a snapshot need the LPs'
 * histories committed). */
static const struct tw_module *const tw_modules[] = {
    &tw_mod_transport, &tw_mod_clocks, &tw_mod_gvt, &tw_mod_ckpt, &tw_mod_commit,
    &tw_mod_window, &tw_mod_memory, &tw_mod_balance, &tw_mod_queries, &tw_mod_ranks,
    &tw_mod_bundles, &tw_mod_snapshots,
};
#define TW_NMODULES (sizeof tw_modules / sizeof tw_modules[0])
_Static_assert(TW_NMODULES <= TW_HOOKS_MAX, "more modules than hooks");

static bool tw_module_used(const struct tw_global *g, const struct tw_module *m)
{
    return !m->used || m->used(g);
}

/* The per-round hooks of the modules this run uses. */
static void tw_hooks_setup(struct tw_global *g)
{
    struct tw_hooks *h = &g->hk;
    h->nreport = h->ngvt = 0;
    for (size_t i = 0; i < TW_NMODULES; i++) {
        const struct tw_module *m = tw_modules[i];
        if (!tw_module_used(g, m)) continue;
        if (m->on_report) h->report[h->nreport++] = m->on_report;
        if (m->on_gvt) h->gvt[h->ngvt++] = m->on_gvt;
    }
}

/* Thread t's block of the first mapping, owned and targeted; its LP count. */
static kr_lp own_block(const struct kr__run *r, struct tw_global *g, unsigned t)
{
    kr_lp lo = r->lo + kr__block_first(t, r->hi - r->lo, g->n),
          hi = r->lo + kr__block_first(t + 1, r->hi - r->lo, g->n);
    for (kr_lp id = lo; id < hi; id++) {
        g->owner[tw_lidx(g, id)] = g->target[tw_lidx(g, id)] = (uint16_t)t;
        g->lvt[tw_lidx(g, id)] = -INFINITY;
    }
    return hi - lo;
}

/* What the thread's paths test once, from the run's features: alone from the start (one
 * thread, one process), the plain path (no bundles, queries, lazy cancellation or ranks),
 * and whether lone mode may run. */
static void tw_thread_features(struct tw_thread *th, const struct tw_global *g)
{
    th->alone = g->n == 1 && !g->net.on;
    th->bundles = th->r->bundles;
    th->queries = g->cf.queries;
    th->plain = !th->bundles && !g->cf.queries && !g->cf.lazy && !g->net.on;
    th->lone.ok = th->plain && !g->cf.check && !g->cf.open_pages && !kr__trace_run;
}

/* A thread's own record: what it is and owns; then each module's part. */
static void tw_setup_thread(struct kr__run *r, struct tw_global *g, unsigned t)
{
    struct tw_thread *th = &g->th[t];
    memset(th, 0, sizeof *th);
    th->id = t;
    th->r = r;
    th->g = g;
    th->pool = &r->pools[t];
    th->cnt = &r->counters[t];
    th->nlps = own_block(r, g, t);
    tw_thread_features(th, g);
    th->pace.every = 1;
    th->last_ts = -INFINITY;
    kr__run_heap_init(r, &th->heap);
    for (size_t i = 0; i < TW_NMODULES; i++)
        if (tw_modules[i]->init && tw_module_used(g, tw_modules[i])) tw_modules[i]->init(th);
}

void tw_setup_threads(struct kr__run *r, struct tw_global *g)
{
    tw_hooks_setup(g);
    for (unsigned t = 0; t < g->n; t++) tw_setup_thread(r, g, t);
}

/* LP id's init, as a part of thread th. Page tracking: its base checkpoint at once, which
 * closes its pages, so they merge into one kernel mapping with the rest instead of every
 * LP's open pages counting against vm.max_map_count until all have run init. Otherwise its
 * first event takes the first checkpoint (when it is not safe): checkpoints taken here
 * would lie between the LPs' states in memory, and states spread over twice the address
 * range missed in cache twice as often (airport, 4096 LPs, 1 thread: stalls on the first
 * state access 4x the sequential engine's). */
static void init_one(struct kr__run *r, struct tw_thread *th, kr_lp id)
{
    kr__lp_run_init(r, id);
    tw_flush_local(th); /* same-thread sends of init */
    struct kr__lp *lp = kr__lp_at(r, id);
    if (tw_page_tracked(r)) tw_take_ckpt(th, lp, NULL);
    else tw_lp_of(lp)->since_ckpt = TW_CKPT_NOW;
    th->gv.ndone += lp->done_init;
}

/* Init sends to other threads went into channels (their backlogs, past a ring's room):
 * moved in now. */
static void init_sends_in(struct tw_global *g)
{
    for (bool left = true; left;) {
        left = false;
        for (unsigned t = 0; t < g->n; t++) left |= tw_post_publish(&g->th[t]) & KR_CHAN_KEPT;
        for (unsigned t = 0; t < g->n; t++) {
            kr__ctx.eng = &g->th[t];
            kr__ctx.pool = g->th[t].pool;
            tw_drain(&g->th[t]);
        }
    }
}

/* init of thread th's LPs, on its context (their sends are its). */
static void init_thread_lps(struct kr__run *r, struct tw_global *g, struct tw_thread *th)
{
    kr__ctx.ops = &tw_ops;
    kr__ctx.eng = th;
    kr__ctx.pool = th->pool;
    for (kr_lp id = r->lo; id < r->hi; id++)
        if (g->owner[tw_lidx(g, id)] == th->id) init_one(r, th, id);
}

/* Init runs on the calling thread in LP order (virtual time -inf is committed at once). */
void tw_init_lps(struct kr__run *r, struct tw_global *g)
{
    for (kr_lp id = r->lo; id < r->hi; id++) {
        kr__lp_setup(r, id);
        tw_lp_of(kr__lp_at(r, id))->id = (uint32_t)id;
    }
    for (unsigned t = 0; t < g->n; t++) init_thread_lps(r, g, &g->th[t]);
    init_sends_in(g);
    for (unsigned t = 0; t < g->n; t++) {
        g->th[t].gv.min_sent = kr__key_at(INFINITY);
        g->th[t].gv.max_done_committed = kr__key_at(-INFINITY);
    }
}

/* The calling thread prints committed output and the progress line while workers run; a
 * thread ending the run on an error prints what is committed too (tw_salvage), hence the
 * lock around the whole of it. */
static void tw_emit_committed(void *arg, const struct kr__outrec *o)
{
    struct tw_global *g = arg;
    struct kr__run *r = g->r;
    if (!(o->part & KR_OUT_RECORD)) {
        kr__emit_direct(&(struct kr__ctx){ .run = r }, o->text, o->len); /* (counted) */
        return;
    }
    /* (a hook's error is the run's at the record's event - the others have committed
     * without one -, and output stops there: kr__out_closed) */
    if (kr__out_closed || kr__record_deliver(r, o->k.ts, o->text, o->len, true)) return;
    tw_fail_at_commit(g, r->fail.msg, &o->k);
    r->fail = (struct kr__error){ 0 };
}

/* Nothing after an error is printed (the failed event's own output, yes). */
static struct kr__key before_error(struct tw_global *g, struct kr__key upto)
{
    pthread_mutex_lock(&g->end.err_mu);
    if (g->end.err) {
        struct kr__key past = g->end.err_key;
        past.seq++;
        if (kr__key_lt(&past, &upto)) upto = past;
    }
    pthread_mutex_unlock(&g->end.err_mu);
    return upto;
}

/* What is not printable yet goes back to thread 0's sink, to be merged next time. */
static void keep_for_later(struct tw_global *g, struct kr__outvec *v)
{
    struct kr__outsink *s = &g->th[0].cm.sink;
    pthread_mutex_lock(&s->mu);
    struct kr__key last = kr__key_last();
    kr__outvec_move_before(v, &last, &s->v);
    pthread_mutex_unlock(&s->mu);
}

void tw_print_committed(struct tw_global *g, bool all)
{
    if (g->net.on && g->net.rank) return; /* (rank 0 prints: tw_rank_output) */
    pthread_mutex_lock(&g->print_mu);
    struct kr__outvec v = { 0 };
    struct kr__key upto = kr__outsinks_take(&g->th[0].cm.sink, g->n, sizeof g->th[0], &v);
    if (all) upto = kr__key_last();
    if (g->net.on) upto = tw_rank_print_upto(g, &v, upto); /* (the other ranks' output) */
    upto = before_error(g, upto);
    kr__outvec_emit_before(&v, &upto, tw_emit_committed, g);
    if (v.n) keep_for_later(g, &v);
    kr__outvec_free(&v);
    kr__stdout_flush();
    pthread_mutex_unlock(&g->print_mu);
}

/* The run dies (a timeout, exit() or abort() in an event, a crash): print what was
 * committed, as the sequential engine has by then. */
static void tw_salvage(void *arg)
{
    tw_print_committed(arg, false);
}

/* An interrupted run stops at a committed point in time that lies past every safe event run
 * so far (committed at once, they cannot be rolled back): first every worker turns safe
 * events off and reports its latest; a GVT round past them all stops the run (gvt.c). */
static void tw_stop_request(struct tw_global *g)
{
    if (g->net.on) atomic_store(&g->net.want_stop, true); /* (all ranks, by a GVT round) */
    else atomic_store_explicit(&g->end.stopping, 1, memory_order_relaxed);
}

/* The watcher's pause between looks: 10 ms, or until the last worker is out (a plain sleep
 * made every run end up to 10 ms late: 1.5% of a 0.7-s run). */
static void tw_watch_wait(struct tw_global *g)
{
    struct timespec at;
    clock_gettime(CLOCK_MONOTONIC, &at);
    at.tv_nsec += 10 * 1000 * 1000;
    if (at.tv_nsec >= 1000000000) at.tv_sec++, at.tv_nsec -= 1000000000;
    pthread_mutex_lock(&g->end.mu);
    while (atomic_load_explicit(&g->end.running, memory_order_acquire) > 0 &&
           pthread_cond_timedwait(&g->end.cv, &g->end.mu, &at) == 0) {}
    pthread_mutex_unlock(&g->end.mu);
}

/* What an --event-timeout message adds about time-sharing, as the run has it. */
static const char *timeout_hint(const struct kr__run *r)
{
    return tw_options(r->cfg)->preempt == KR_PREEMPT_OFF ?
        " (with --preempt off an event cannot be preempted: if it loops only on a wrong "
        "speculative path, --preempt return or tick breaks the loop)" :
        " (it ran on the worker's stack, where events shorter than 5 us on average run under "
        "--preempt adaptive: --preempt return or tick preempts every event)";
}

/* A 10 ms sleep of the watcher that took far longer: the process stood still (stopped,
 * or the machine was): counted apart. The time now. */
static uint64_t note_pause(struct tw_global *g, uint64_t last)
{
    uint64_t now = kr__clock_ns();
    if (now - last > TW_PAUSE_NS)
        atomic_fetch_add_explicit(&g->end.paused_ns, now - last, memory_order_relaxed);
    return now;
}

/* One look of the watcher: an interrupt passed on, committed output printed (or sent to
 * rank 0), every worker's event timed. */
static void watch_round(struct kr__run *r, struct tw_global *g, bool others, const char *why)
{
    if (kr__interrupted()) tw_stop_request(g);
    if (others) tw_rank_output(g, false);
    else tw_print_committed(g, false);
    for (unsigned t = 0; t < g->n; t++) kr__watch_poll(&g->th[t].watch, r, why);
}

static void tw_watch(struct kr__run *r, struct tw_global *g)
{
    struct kr__progress prog;
    kr__progress_start(&prog, r);
    bool others = g->net.on && g->net.rank; /* (rank 0 shows the progress and prints) */
    if (others) prog.on = false;
    uint64_t last = kr__clock_ns();
    const char *why = timeout_hint(r);
    while (atomic_load_explicit(&g->end.running, memory_order_acquire) > 0) {
        tw_watch_wait(g);
        last = note_pause(g, last);
        watch_round(r, g, others, why);
        kr__progress_tick(&prog, tw_gvt(g));
    }
    kr__progress_stop(&prog);
}

/* The checkpoints: their interval (auto, by cost, or given), how often a full one. */
static void ckpt_settings(struct tw_global *g, struct kr__run *r,
                          const struct kr__tw_options *o, const struct kr__state_ops *m)
{
    g->cf.ckpt_auto = o->ckpt_interval == 0;
    g->cf.ckpt_by_cost = !g->cf.ckpt_auto && !o->ckpt_given;
    g->cf.ckpt_interval = o->ckpt_interval;
    g->cf.ckpt_full_every = m->incremental ? o->ckpt_full_every : 1;
    r->ckpt = (struct kr__ckpt_plan){ g->cf.ckpt_auto, g->cf.ckpt_full_every };
    g->cf.chained = m->incremental;
}

/* The run's settings (struct tw_settings) from the model, the options and the state mode. */
static void tw_settings_init(struct tw_global *g, struct kr__run *r)
{
    g->cf.queries = r->model->query != NULL;
    /* (queries: LPs stay where they are - a query finds its LP's thread by the table) */
    const struct kr__tw_options *o = tw_options(r->cfg);
    g->cf.balance = g->cf.queries ? KR_BALANCE_OFF : o->balance;
    /* (--balance storm, a test mode, also fills channels: backlogs in every move) */
    g->cf.chan_slots = g->cf.balance == KR_BALANCE_STORM ? TW_STORM_SLOTS : KR_CHAN_SLOTS;
    g->bl.storm = r->cfg->seed;
    atomic_init(&g->active, g->n);
    g->bl.trial_nact = g->n;
    g->cf.period_ns = (uint64_t)(o->gvt_period_ms * 1e6);
    const struct kr__state_ops *m = kr__state_ops(r->state_mode);
    ckpt_settings(g, r, o, m);
    g->cf.reverse = r->reverse;
    g->cf.lazy = o->cancel == KR_CANCEL_LAZY;
    g->cf.open_pages = m->open_pages;
    g->cf.round_events = TW_ROUND_EVENTS;
    g->cf.check = r->cfg->check;
    g->cf.windows = r->cfg->engine == &kr__windows_engine;
    g->cf.spans = r->promise.spans;
    if (g->cf.spans) { /* (every unsafe event keeps its span in its checkpoint: rollback.c) */
        g->cf.ckpt_auto = g->cf.ckpt_by_cost = false;
        g->cf.ckpt_interval = 1;
    }
}

/* The per-thread arrays, each line-aligned (a thread writes its own entries). */
static void alloc_per_thread(struct tw_global *g)
{
    g->th = aligned_alloc(64, g->n * sizeof *g->th);
    g->chan = aligned_alloc(64, (size_t)g->n * g->n * sizeof *g->chan);
    g->arr = aligned_alloc(64, g->n * sizeof *g->arr);
    g->clock = aligned_alloc(64, g->n * sizeof *g->clock);
    g->mem = aligned_alloc(64, g->n * sizeof *g->mem);
    g->qline = aligned_alloc(64, g->n * sizeof *g->qline);
    if (!g->th || !g->chan || !g->arr || !g->clock || !g->mem || !g->qline)
        kr__fatal_oom("worker threads", (size_t)g->n * g->n * sizeof *g->chan);
}

/* The LP tables: owner, migration target, LVT. */
static void alloc_lp_tables(struct tw_global *g, const struct kr__run *r)
{
    g->lo = r->lo;
    g->nlocal = r->hi - r->lo;
    g->owner = malloc(g->nlocal * sizeof *g->owner);
    g->target = malloc(g->nlocal * sizeof *g->target);
    g->lvt = malloc(g->nlocal * sizeof *g->lvt);
    if (!g->owner || !g->target || !g->lvt)
        kr__fatal_oom("LP tables", g->nlocal * (2 * sizeof *g->owner + sizeof *g->lvt));
}

/* The end's mutexes and its condition (on the monotonic clock: tw_run waits on it). */
static void init_sync(struct tw_global *g)
{
    pthread_mutex_init(&g->end.err_mu, NULL);
    pthread_mutex_init(&g->print_mu, NULL);
    pthread_mutex_init(&g->end.mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&g->end.cv, &ca);
    pthread_condattr_destroy(&ca);
}

struct tw_global *tw_global_new(struct kr__run *r)
{
    struct tw_global *g = calloc(1, sizeof *g);
    if (!g) kr__fatal_oom("engine", sizeof *g);
    g->r = r;
    g->n = r->nthreads;
    g->gvt_ops = &tw_gvt_local; /* (across ranks: tw_rank_setup) */
    alloc_per_thread(g);
    alloc_lp_tables(g, r);
    tw_settings_init(g, r);
    g->horizon = kr__key_at(-INFINITY);
    g->gvt = kr__key_at(-INFINITY);
    atomic_init(&g->gvt_bits, kr__time_bits(-INFINITY));
    init_sync(g);
    atomic_init(&g->last_round_ns, kr__clock_ns());
    g->bl.start_ns = kr__clock_ns();
    kr__snapshot_first(r, &g->sn.at, &g->sn.wall);
    return g;
}

/* After the run: what the summary needs, then everything freed. */
void tw_global_end(struct kr__run *r, struct tw_global *g)
{
    r->end_key = g->horizon;
    /* (interrupted: the last horizon is a time, gvt.c stop_point) */
    kr__run_ended(r, g->end.by_done, g->horizon.ts);
    r->final_gvt = tw_gvt(g);
    r->bal.migrations = g->th[0].cnt->migrations;
    r->bal.retired = g->bl.cnt_retired;
    r->bal.back = g->bl.cnt_back;
    r->bal.trials = g->bl.cnt_trials;
    r->bal.undone = g->bl.cnt_undone;
    r->bal.shares = g->bl.cnt_part;
    r->bal.shares_kept = g->bl.cnt_part_kept;
    for (unsigned t = 0; t < g->n; t++) {
        struct tw_thread *th = &g->th[t];
        th->cnt->pool_bytes = th->pool->bytes;
        kr__heap_destroy(&th->heap);
        free(th->loc.work);
        for (size_t i = 0; i < TW_NMODULES; i++)
            if (tw_modules[i]->end && tw_module_used(g, tw_modules[i])) tw_modules[i]->end(th);
    }
    tw_rank_free(g); /* (the threads' remote-id maps) */
    free(g->th);
    free(g->chan);
    free(g->arr);
    free(g->clock);
    free(g->mem);
    free(g->qline);
    free(g->owner);
    free(g->target);
    free(g->lvt);
    free(g->bl.moves);
    free(g->end.err);
    pthread_cond_destroy(&g->end.cv);
    free(g);
}

struct tw_init_arg {
    struct kr__run *r;
    struct tw_global *g;
};

static void tw_init_body(void *arg)
{
    struct tw_init_arg *a = arg;
    tw_init_lps(a->r, a->g);
    if (a->r->cfg->memory_max) tw_memory_init(a->g);
}

/* Whether the run's earliest model error is another rank's (the ranks agreed on it). */
static bool error_elsewhere(const struct tw_global *g)
{
    return g->net.on && !isinf(g->net.err.ts) &&
           (!g->end.err || kr__key_cmp(&g->end.err_key, &g->net.err) != 0);
}

/* The run's failure, if a committed event failed: the lowest key's error (across ranks,
 * the rank that has it reports it; the others fail quietly: kr__net.defer). */
static int tw_failure(struct kr__run *r, const struct tw_global *g)
{
    if (error_elsewhere(g)) {
        kr__net.defer = true;
        return kr__fail(&r->fail, KR_ERR_MODEL, "a model error on another rank, which "
                        "printed it");
    }
    if (!g->end.err) return KR_OK;
    return kr__fail(&r->fail, KR_ERR_MODEL, "%s", g->end.err);
}

/* init runs here, in LP order, on this thread: a model error in it is the run's (no
 * worker has started; what the threads were given is freed). Across ranks, ranks but 0
 * keep init's output for rank 0 to print in rank order, and all agree whether to go on. */
static int tw_init_all(struct kr__run *r, struct tw_global *g)
{
    char *out = NULL;
    size_t len = 0;
    if (g->net.on && g->net.rank) kr__emit_file = open_memstream(&out, &len);
    int st = kr__guarded(r, tw_init_body, &(struct tw_init_arg){ r, g });
    if (kr__emit_file) fclose(kr__emit_file);
    kr__emit_file = NULL;
    if (g->net.on) st = tw_rank_started(r, out, len, st);
    free(out);
    return st;
}

/* Whether the tests asked for the optimistic engine's general path on one thread. */
static bool test_time_warp(void)
{
    const char *keep = getenv("KAIROS_TEST_TIME_WARP");
    return keep && !strcmp(keep, "1");
}

/* One worker in one process has no straggler to fear - nothing can arrive below its LPs'
 * times - so it needs no checkpoint, history, antimessage or GVT: it runs the sequential
 * engine's core, which commits the same history, at the sequential engine's cost (issue
 * 36, 2). Not under --safe off or --check, which ask for the optimistic machinery itself,
 * nor in a tracked state mode, whose region is laid out for its checkpoints; nor with
 * KAIROS_TEST_TIME_WARP=1, which keeps the Time Warp path (its lone bursts) for the tests
 * and benchmarks of that path - production reaches it when the balancer leaves one worker
 * with every LP. */
static bool tw_alone(const struct kr__run *r)
{
    const struct kr__config *cfg = r->cfg;
    return r->nthreads == 1 && kr__net.size <= 1 && tw_options(cfg)->safe_events && !cfg->check &&
           !kr__state_ops(r->state_mode)->region && !test_time_warp();
}

static int tw_run_alone(struct kr__run *r)
{
    /* (its events as the sequential engine's: one without payload in one line, not two;
     * none is allocated yet. PHOLD at 65 536 LPs: peak memory 30.2 -> 26.1 MiB, where the
     * sequential engine takes 22.1 and the rest is the LPs' Time Warp lines) */
    r->pools[0].compact = kr__compact_events(r, &kr__seq_engine);
    int st = kr__seq_engine.run(r);
    r->counters[0].safe = r->counters[0].committed; /* (each committed as it ran) */
    r->alone = true;
    return st;
}

/* The windows scheme reads the spans of kr_schedule_span (clock.c) where its safe events
 * run: with safe events on, and no done(), queries or bundles (the sequential core checks
 * them too when it runs a lone worker's run: tw_alone; across ranks the wire carries them). */
static bool tw_reads_spans(const struct kr__run *r)
{
    return r->cfg->engine == &kr__windows_engine && tw_options(r->cfg)->safe_events &&
           !r->model->done && !r->model->query && !r->bundles;
}

/* The workers started, watched from this thread (progress, output, interrupts and event
 * timeouts: tw_watch) and joined; a crash meanwhile salvages the committed output. */
static void tw_run_workers(struct kr__run *r, struct tw_global *g)
{
    kr__set_salvage(tw_salvage, g);
    g->end.fast_threads = g->th[0].fast ? g->n : 0;
    tw_clock_start(g);
    tw_balance_home_out(g);
    atomic_store(&g->end.running, g->n);
    g->bl.start_ns = kr__clock_ns(); /* (the workers' start: their first shares awaited) */
    for (unsigned t = 0; t < g->n; t++)
        kr__thread_start_or_die(&g->th[t].tid, tw_worker, &g->th[t], r->cfg->stack_kb,
                                "a worker");
    tw_watch(r, g);
    for (unsigned t = 0; t < g->n; t++) pthread_join(g->th[t].tid, NULL);
    kr__set_salvage(NULL, NULL);
}

/* --lp-stats: the thread that owned each LP at the end. */
static void lpstat_threads(struct kr__run *r, const struct tw_global *g)
{
    for (kr_lp id = g->lo; id < g->lo + g->nlocal; id++)
        r->lpstat[id - r->lo].thread = g->owner[tw_lidx(g, id)];
}

/* Across ranks, after the run: the other ranks' output to rank 0, the end, the counts. */
static void ranks_end(struct kr__run *r, struct tw_global *g)
{
    if (g->net.rank) tw_rank_output(g, true);
    tw_rank_end(r, g);
    tw_rank_stats(r, g);
}

/* After the workers: the rest of the output, the statistics, the run's outcome. */
static int tw_run_end(struct kr__run *r, struct tw_global *g)
{
    tw_metrics_drain(g);
    if (g->net.on) ranks_end(r, g);
    tw_print_committed(g, g->end.err == NULL);
    if (r->lpstat) lpstat_threads(r, g);
    int st = tw_failure(r, g);
    tw_global_end(r, g);
    return st;
}

static int tw_run(struct kr__run *r)
{
    r->promise.spans = tw_reads_spans(r);
    if (tw_alone(r)) return tw_run_alone(r);
    struct tw_global *g = tw_global_new(r);
    if (tw_options(r->cfg)->preempt != KR_PREEMPT_OFF && !r->reverse)
        kr__tick_install((const void *)r->model->event);
    tw_rank_setup(g);
    tw_setup_threads(r, g);
    tw_balance_home(g);
    int st = tw_init_all(r, g);
    if (st) {
        tw_global_end(r, g);
        return st;
    }
    tw_run_workers(r, g);
    return tw_run_end(r, g);
}

static unsigned tw_default_threads(unsigned ncpu)
{
    return ncpu;
}

/* ThreadSanitizer delivers asynchronous signals only at its own interception points and
 * does not follow a stack switch made inside a signal handler: time-sharing cannot run in a
 * ThreadSanitizer build (AddressSanitizer builds run it). */
static int tw_validate(const struct kr__config *cfg, struct kr__error *err)
{
    /* (adaptive, the default, stays off there: preempt.c) */
    int p = tw_options(cfg)->preempt;
    if (kr__state_ops(cfg->state_mode)->reverse && p != KR_PREEMPT_OFF && p != KR_PREEMPT_ADAPTIVE)
        return kr__fail(err, KR_ERR_USAGE, "--state reverse with --preempt %s: an event "
                        "preempted half-way cannot be reversed by its handler; use --preempt "
                        "off or adaptive (which then stays off), or another --state",
                        kr__preempt_name(p));
#if defined(KR_TSAN)
    if (tw_options(cfg)->preempt != KR_PREEMPT_OFF)
        return kr__fail(err, KR_ERR_USAGE, "--preempt %s is not available in a ThreadSanitizer "
                        "build (it defers signals); use --preempt off, or a normal build",
                        kr__preempt_name(tw_options(cfg)->preempt));
#endif
    return KR_OK;
}

/* What the optimistic engine and the conservative engine's windows scheme, which is this
 * engine's run, share: one list, so the two cannot drift apart. */
#define TW_DESCRIPTOR_COMMON                                                                   \
    .lp_extra = sizeof(struct tw_lp), .restores_state = true, .ranks = true,                  \
    .default_threads = tw_default_threads, .threads = kr__engine_workers,                      \
    .validate = tw_validate, .run = tw_run, .summary = tw_summary, .json = tw_json

const struct kr__engine kr__tw_engine = {
    TW_DESCRIPTOR_COMMON,
    .name = "optimistic",
    .options = tw_option_rows,
    .options_size = sizeof(struct kr__tw_options),
    .options_init = tw_options_init,
};

/* The conservative engine's windows scheme (issue 39): this engine with a speculation
 * window of 0 - a worker runs an event only once nothing another one may still send can
 * reach it (below every other worker's clock: its next event plus the lookahead; the
 * safe events of clock.c), so nothing is checkpointed or rolled back, and no scheduler
 * thread is needed. Two exceptions keep runs going: without a lookahead the event at GVT
 * runs with a checkpoint when nothing is safe (tw_may_run), and a model with done()
 * speculates a little (optimism.c). So it restores state, in the --state mode given (under
 * --check too: the sequential engine's state slices are not for it). Its other options
 * are this engine's defaults. */
const struct kr__engine kr__windows_engine = {
    TW_DESCRIPTOR_COMMON,
    .name = "conservative",
    .scheme = "windows",
};
