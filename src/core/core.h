/* core.h - what the engines share: run configuration, the run itself, the per-thread
 * context every model-facing call goes through, and the engine interface. Engines include
 * this, never each other. */
#ifndef KR_CORE_CORE_H
#define KR_CORE_CORE_H

#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include "kairos.h"
#include "base/error.h"
#include "core/lp.h"
#include "base/digest.h"
#include "core/trace.h"
#include "msg/pool.h"
#include "queue/heap.h"
#include "state/addrmap.h"
#include "stats/counters.h"
#include "core/optdef.h"
#include "core/timer.h"
#include "core/metrics.h"

struct kr__kv {
    const char *key;
    const char *val;
};

struct kr__engine;
struct kr__error;

/* The most worker threads of a process (--threads). */
#define KR_THREADS_MAX 1024

/* The run's configuration: what every engine reads, then each engine's own options. */
/* Engines in the table (run/engines.c), and the most bytes of options one may keep. */
#define KR_ENGINES_MAX 8
#define KR_ENGINE_OPTS_BYTES 128

struct kr__config {
    const char *model;          /* built-in name or path to a .so */
    bool own_model;             /* `model` names the program's own (a layer's: run/command.c
                                 * kr__cmd_run_model), which no file holds */
    const struct kr__engine *engine;   /* --sync */
    unsigned threads;
    uint64_t lps;
    double end;
    uint64_t seed;
    const char *stats_path;
    const char *lp_stats_path;  /* --lp-stats: a CSV row per LP (run/report.c) */
    const char *trace_path;     /* --trace: the committed history (core/trace.c) */
    uint64_t trace_limit;       /* --trace-limit: its first this many events */
    int trace_mode;             /* --trace-mode: 0 committed, 1 run */
    int progress;               /* -1 auto (terminal), 0 off, 1 on */
    size_t arena_max;
    size_t memory_max;          /* --memory-max: 0, or the budget of kr__memory_in_use */
    bool check;                 /* verify engine invariants while running (slower) */
    size_t stack_kb;            /* stack for model code (engine threads, event stacks) */
    double event_timeout;       /* seconds an event may run on the committed path; 0: none */
    int state_mode;             /* --state: enum kr__state_mode (state/mode.h), read by
                                 * engines that restore LP state */
    bool state_given;           /* --state was given (kr__options_unread) */
    /* Each engine's options: slot i is the record of engine opt_engine[i] (set by
     * kr__options_defaults from the engine table), written by the engine's rows of the
     * option table and read by the engine through kr__engine_opts. */
    const struct kr__engine *opt_engine[KR_ENGINES_MAX];
    _Alignas(16) unsigned char opt_rec[KR_ENGINES_MAX][KR_ENGINE_OPTS_BYTES];
    const char *opt_given[KR_ENGINES_MAX]; /* the first option of that engine given */
    struct kr__kv *params;
    size_t nparams;
    const char *snap_dir;       /* --snapshot: where snapshots go (NULL: none)... */
    double snap_every;          /* ...each this much virtual time (0: not by time)... */
    double snap_seconds;        /* ...and/or each this many seconds of wall time */
    const char *resume_dir;     /* kairos resume: the snapshot this run starts from... */
    char *owned;                /* ...whose model path and parameter values live here */
};

/* --lp-stats: what an engine counts of one LP beyond its record (the optimistic engine's
 * rollbacks, counted where they happen - off the per-event path) and the thread that
 * owned it at the end (-1: none, the conservative engine hands events to any). */
struct kr__lpstat {
    uint64_t rollbacks, rolled_back;
    int32_t thread;
};

/* The run's results of --balance (optimistic engine). */
struct kr__balance_stats {
    uint64_t migrations, retired, back; /* migration rounds; workers retired, brought back */
    uint64_t trials, undone;          /* its thread-count trials */
    uint64_t shares, shares_kept;     /* its share trials */
};

/* --stats "series": rows of KR_SERIES_COLS, one per ~100 ms of the run. */
struct kr__series {
    double *rows;
    size_t n, cap;
};

/* Committed output written so far, and its hash (snapshots keep both). */
struct kr__outstate {
    uint64_t bytes, hash;
    uint64_t cut_at;                  /* kairos resume: stdout is cut to this many bytes... */
    bool cut_pending;                 /* ...before its first output (resume.c) */
};

/* Snapshots written, and the one a run resumes from (snapshot.c, resume.c). */
struct kr__snapstate {
    struct kr__snapshot *resume;      /* kairos resume: LPs start from it */
    uint64_t written, bytes, ns;      /* snapshots written, their bytes, time */
    kr_time time;                     /* the last one's virtual time */
};

struct kr__run {
    const struct kr__config *cfg;
    const struct kr_model *model;
    char *lp_mem;                     /* the LP records, lp_bytes apart (kr__lp_at) */
    size_t lp_bytes;                  /* struct kr__lp + the engine's lp_extra */
    uint64_t n;
    uint64_t lo, hi;                  /* the LPs of this process (all but across MPI ranks:
                                       * kr__net, core/place.h); other LPs' records are
                                       * never touched (their pages are never made) */
    unsigned nthreads;
    struct kr__counters *counters;    /* one per thread */
    struct kr__pool *pools;           /* one per thread (sequential: one) */
    int state_mode;                   /* in effect (sequential: always full) */
    struct kr__ckpt_plan {            /* checkpoints, set by an engine that takes them: */
        bool interval_auto;           /* K tuned at run time (--ckpt-interval auto) */
        unsigned full_every;          /* a full one every this many (0: none taken) */
    } ckpt;
    kr_time lookahead;                /* the model's, lowered by kr_set_lookahead in init */
    struct kr__promises {             /* the model's promises of timing the engine reads: */
        bool lookahead_declared;      /* kr_set_lookahead was called, or the model has
                                       * run_lookahead */
        bool spans;                   /* kr_schedule_span's spans, checked at every send
                                       * (kr__span_refused): the conservative engine's
                                       * windows scheme, with safe events and without
                                       * done(), queries or bundles (Horizon checks every
                                       * event's end itself) */
    } promise;
    bool reverse;                     /* --state reverse in effect: undone events are
                                       * reversed by the model (struct kr_model.reverse) */
    bool alone;                       /* optimistic, one worker: the sequential core ran
                                       * it (optimistic/engine.c tw_alone) */
    bool check_slices;                /* sequential --check: each LP's state in its own
                                       * slice, the others unreachable during its event */
    bool bundles;                     /* KR_MODEL_BUNDLES: an LP's events of one (ts, gen)
                                       * run as one call of the handler (bundle.h) */
    /* What the key's `tie` holds (msg/event.h): the destination (KR_MODEL_BUNDLES), the
     * type (KR_MODEL_TYPE_ORDER) or 0 - (dest & tie.dest) | (type & tie.type), each mask 0
     * or all ones (no branch per send). */
    struct kr__tie_masks {
        uint32_t dest, type;
    } tie;
    /* results */
    double wall_seconds;
    kr_time final_gvt;
    struct kr__balance_stats bal;     /* optimistic --balance */
    bool ended_by_done;
    int interrupted;                  /* SIGINT/SIGTERM stopped the run early; 0 if not */
    int rc;                           /* what the engine returned: KR_OK (the run ended or
                                       * was interrupted), else a status, with... */
    struct kr__error fail;            /* ...the run's failure (kr__guarded) */
    struct kr__key end_key;           /* everything before this key was committed */
    uint64_t run_digest;
    size_t peak_rss;
    uint64_t *words;                  /* at the end: five digest words per LP (run.c) */
    unsigned nranks;                  /* MPI ranks (1: one process); across ranks, rank 0's
                                       * counters hold every rank's, thread by thread, and: */
    struct kr__rank_stats *rank_stats; /* [nranks], rank 0 only */
    _Atomic size_t mem_peak[4];       /* --memory-max: peak bytes in use seen at the checks,
                                       * events, checkpoints, LP states, all together */
    struct kr__series series;         /* --stats "series" */
    struct kr__outstate out;          /* committed output (run.c) */
    struct kr__snapstate snap;        /* snapshots written, and the one resumed from */
    struct kr__lpstat *lpstat;        /* --lp-stats: this rank's LPs (id - lo), else NULL */
    void *ledger;                     /* the model's commit ledger (ledger_size bytes; where
                                       * hooks run: one process, or rank 0)... */
    size_t ledger_size;               /* ...of kr_model.ledger_size or ledger_bytes() */
    struct kr__metrics *metrics;      /* the model's metrics, reduced where hooks run (NULL:
                                       * it declares none) */
};

/* LP id's record (struct kr__lp), followed by lp_extra bytes of the engine's own. */
/* An engine's event heap for run r: its tie packing (queue/heap.c) from the run's LP count
 * and what the key's tie holds, the same on every engine. */
static inline void kr__run_heap_init(const struct kr__run *r, struct kr__heap *h)
{
    kr__heap_init_keys(h, r->n, r->tie.dest, r->tie.type);
}

static inline struct kr__lp *kr__lp_at(const struct kr__run *r, kr_lp id)
{
    return (struct kr__lp *)(r->lp_mem + id * r->lp_bytes);
}

/* Latency hiding for many LPs: the first line of the state of the event at the heap's top,
 * issued before the pop so that its miss overlaps the pop's sift (the LP's hot line, which
 * names the state, was prefetched one event earlier: kr__heap_prefetch_next). (The asm:
 * see kr__heap_prefetch_next.) */
static inline void kr__lp_prefetch_state(const struct kr__run *r, kr_lp id)
{
    __asm__ volatile("");
    __builtin_prefetch(kr__lp_at(r, id)->root, 1);
}

/* Columns of the progress time series (--stats "series"). */
#define KR_SERIES_COLS 9   /* wall_seconds, gvt, committed, processed, rss_bytes, rollbacks,
                            * rolled_back, preempted_at_calls, preempted_by_ticks */

enum kr__mode { KR_MODE_NONE, KR_MODE_INIT, KR_MODE_EVENT, KR_MODE_COAST, KR_MODE_FINISH,
                KR_MODE_DONE, KR_MODE_QUERY, KR_MODE_COMMIT, KR_MODE_REVERSE };

struct kr__ctx;

/* What the engine does for the model-facing calls (api.c validates, then dispatches). */
struct kr__engine_ops {
    /* Deliver an event built by kr_schedule (key, dest, type, payload filled in). */
    void (*send)(struct kr__ctx *c, struct kr__ev *e);
    /* Committed-output text of the current event. */
    void (*emit)(struct kr__ctx *c, const char *text, size_t len);
    /* A model error (message formatted with context) in a speculative context: the engine
     * unwinds the event and defers the error (reported only if the event commits). If it
     * returns, or is NULL, the error is the run's (kr__guarded). Copies msg if it keeps it. */
    void (*fail)(struct kr__ctx *c, const char *msg);
    /* kr_query (checked) of dest, whose state may need the engine's help to be the one
     * at the asking event (the LP running it is mid-event); answers through
     * kr__query_answer. NULL: dest's state in memory is the one (finish). */
    size_t (*query)(struct kr__ctx *c, kr_lp dest, const void *q, size_t size, void *ans,
                    size_t cap);
    /* kr_commit or kr_metric (checked) in the current event: keep the record with the
     * event's output, for where it goes once the event commits (after its text): `tag` is
     * the LP (the model's commit hook) or KR_REC_METRIC (core/metrics.h). */
    void (*record)(struct kr__ctx *c, uint64_t tag, const void *data, size_t size);
};

struct kr__ctx {
    struct kr__run *run;
    struct kr__lp *lp;
    kr_lp id;
    struct kr__ev *ev;          /* event being processed, NULL in init/finish */
    struct kr__ev *const *bundle; /* bundles: ev and the rest of its bundle, in key order */
    unsigned nbundle;           /* (0: ev alone) */
    kr_time now;
    uint32_t gen;
    uint8_t mode;
    bool notail;                /* the engine reads no new event's tail (the sequential
                                 * engine, a lone burst: optimistic/lone.c): a send leaves
                                 * it unset, but for a span's duration */
    const struct kr__engine_ops *ops;
    struct kr__pool *pool;      /* where kr_schedule takes events from */
    void *eng;                  /* the engine's per-thread data */
    jmp_buf *bail;              /* a model error on the committed path unwinds here, the
                                 * run's failure (kr__guarded); NULL: it ends the process */
    bool fatal;                 /* a model error now ends the run at once, never deferred
                                 * (a crash that may have left the C library's locks held) */
    kr_lp asker;                /* KR_MODE_QUERY: the LP whose query is being answered */
    unsigned qdepth;            /* queries nested now (kr_query) */
    /* (last: the fields above keep the offsets the per-event code was measured with) */
    struct kr__ev **bundle_all; /* bundles with timers: every member (`bundle` is then the
                                 * ones that run, kept after them: core/timer.c) */
    unsigned nbundle_all;
    void *rev_area;             /* --state reverse: the running event's reverse area
                                 * (kr_reverse_area), else NULL: scratch */
};

extern __thread struct kr__ctx kr__ctx;

/* Run LP dest's query handler on its state in memory now (the engine has made it the one
 * the query must see), in a read-only context; returns the size the handler says it wrote
 * (kr_query checks it against cap, in the asker's context: api.c). */
size_t kr__query_answer(struct kr__ctx *c, kr_lp dest, const void *q, size_t size, void *ans,
                        size_t cap);

/* Model code is running for an LP (init, an event, coasting or finish). */
static inline bool kr__in_lp(void)
{
    return kr__ctx.lp && kr__ctx.mode != KR_MODE_NONE;
}

/* Point the context at event e of lp (mode: KR_MODE_EVENT or KR_MODE_COAST). */
static inline void kr__ctx_event(struct kr__lp *lp, struct kr__ev *e, int mode)
{
    kr__ctx.lp = lp;
    kr__ctx.id = e->dest;
    kr__ctx.ev = e;
    kr__ctx.nbundle = 0;
    kr__ctx.now = e->k.ts;
    kr__ctx.gen = e->k.gen;
    kr__ctx.mode = (uint8_t)mode;
}

/* An engine: one descriptor each, chosen by name from one table (engines.c). Nothing
 * outside the table and the engine itself branches on which engine runs. */
struct kr__engine {
    const char *name;           /* --sync value; the summary's and --stats' "engine" */
    const char *scheme;         /* which of the engine's schemes this descriptor runs (the
                                 * conservative engine's horizon and windows), or NULL */
    bool ranks;                 /* runs across MPI ranks */
    bool restores_state;        /* rolls LP state back: --state applies (the others run in
                                 * full mode, or chunk mode to verify marks under --check) */
    bool compact_events;        /* uses no event's tail (struct kr__ev): an event without
                                 * payload takes 64 bytes, not 128 */
    const char *no_queries;     /* why it cannot answer kr_query (a model with a query
                                 * handler is refused), or NULL: it can */
    size_t lp_extra;            /* bytes the engine keeps right after each LP's record
                                 * (a multiple of 64: the optimistic engine's struct tw_lp,
                                 * next to the LP's hot line so both come in together) */
    /* --threads when the command line gives none, on a machine of ncpu cores. */
    unsigned (*default_threads)(unsigned ncpu);
    /* Threads of the run (a counters block and an event pool each) for cfg and lps LPs. */
    unsigned (*threads)(const struct kr__config *cfg, uint64_t lps);
    /* KR_ERR_USAGE in err for what this engine cannot do with cfg (NULL: anything goes). */
    int (*validate)(const struct kr__config *cfg, struct kr__error *err);
    /* KR_OK: the run ended (or was interrupted); else its status, the failure in r->fail
     * (a model error on the committed path, as the sequential engine meets it first). */
    int (*run)(struct kr__run *r);
    /* Its lines of the summary after the event counts, and its --stats sections (NULL:
     * none). */
    void (*summary)(const struct kr__run *r, FILE *f);
    void (*json)(const struct kr__run *r, FILE *f);
    /* Its options: rows of the option table (optdef.h), ended by a row without a name,
     * whose fields are in a record of options_size bytes (at most KR_ENGINE_OPTS_BYTES),
     * which options_init completes after the rows' defaults (NULL: nothing to do). */
    const struct kr__opt *options;
    size_t options_size;
    void (*options_init)(void *rec);
    /* The descriptor that runs cfg's model m, whose lookahead before the run is `lookahead`:
     * one of this engine's schemes, chosen by its options and the model once the command
     * line is read (NULL: always this one). */
    const struct kr__engine *(*resolve)(const struct kr__config *cfg, const struct kr_model *m,
                                        kr_time lookahead);
};

/* The record of e's options in cfg (kr__engine.options), or NULL if e has none there. */
static inline const void *kr__engine_opts(const struct kr__config *cfg,
                                          const struct kr__engine *e)
{
    for (unsigned i = 0; i < KR_ENGINES_MAX; i++)
        if (cfg->opt_engine[i] == e) return cfg->opt_rec[i];
    return NULL;
}

extern const struct kr__engine kr__seq_engine, kr__tw_engine, kr__cons_engine;
/* Whether r's event pools may hand e's events out compact (kr__engine.compact_events):
 * not when snapshots are written, which keep every event's duration. */
static inline bool kr__compact_events(const struct kr__run *r, const struct kr__engine *e)
{
    return e->compact_events && !r->cfg->snap_dir;
}
/* The conservative engine's windows scheme: the optimistic engine's workers running safe
 * events only (kr__cons_engine resolves to it; not in the table). */
extern const struct kr__engine kr__windows_engine;
/* The engine named `name`, or NULL; the default engine is the first of the table. */
const struct kr__engine *kr__engine_find(const char *name);
const struct kr__engine *kr__engine_default(void);
/* The i-th engine of the table, or NULL past its end. */
const struct kr__engine *kr__engine_at(size_t i);
/* Add an engine before options are read (a test's stub engine, tests/unit/test_engine.c):
 * 0, or -1 if the table is full or the name taken. Built-in engines are lines of the
 * table in engines.c instead. */
int kr__engine_add(const struct kr__engine *e);
/* The names, for messages: "optimistic, conservative or sequential". */
const char *kr__engine_names(void);
/* Once the command line is read: c->engine becomes the scheme that runs c's model (its
 * resolve; the model loaded for it). A model that cannot load fails here. */
int kr__engine_resolve(struct kr__config *c, struct kr__error *err);
/* The engine's threads that run LPs' events on one core each: cfg->threads workers, at
 * most one per LP. Shared by the descriptors. */
static inline unsigned kr__engine_workers(const struct kr__config *cfg, uint64_t lps)
{
    return cfg->threads > lps ? (unsigned)lps : cfg->threads;
}

/* The whole run: KR_OK, or the failure in err (set-up, a model error on the committed
 * path, --stats; what still ends the process is listed in error.h). *interrupted: the
 * signal that stopped the run early, else 0. */
int kr__run_main(const struct kr__config *cfg, struct kr__error *err, int *interrupted);
/* What the last run of this process that ended well committed (in one process; on rank 0
 * of several, the digest and output of all), for a caller that runs several and compares
 * them (fuzz/fuzz_model.c). */
struct kr__run_outcome {
    uint64_t digest, out_bytes, out_hash, committed; /* (a resumed run's: in all) */
};
extern struct kr__run_outcome kr__run_last;
/* The run in progress (from any thread, for messages), NULL before and after it. */
extern struct kr__run *_Atomic kr__run_current;
/* Stack beside a callback's --stack-kb, on engine threads and event stacks alike (the
 * engine's own frames, a boot frame), so that both hold about the same before overflowing. */
#define KR_STACK_ENGINE ((size_t)64 << 10)
/* Start an engine thread that runs model callbacks: --stack-kb plus the engine's share,
 * the large guard below it (pin.c). KR_ERR_RESOURCE in err, naming `what` and the likely
 * cause, if the thread cannot be started. */
int kr__thread_start(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack_kb,
                     const char *what, struct kr__error *err);
/* The same inside a run, where a failure still ends the process (error.h). */
void kr__thread_start_or_die(pthread_t *t, void *(*fn)(void *), void *arg, size_t stack_kb,
                             const char *what);
/* The bottom of the calling engine thread's stack, for the fault handler's overflow test. */
extern __thread char *kr__stack_lo;
void kr__stack_note(void);


/* Shared engine helpers (run.c). */
void kr__lp_setup(struct kr__run *r, kr_lp id);
void kr__lp_run_init(struct kr__run *r, kr_lp id);
/* Set up and init every LP in id order on the calling thread; returns how many are done()
 * already (engines whose init runs on one thread: sequential, conservative). */
uint64_t kr__lps_init_all(struct kr__run *r);
/* The digest's fold of e's payload when its pflags say more than bytes: pointers into the
 * program image named, a timer's event marked cancelled - and counted, in the committing
 * thread's counters (lp.c). */
uint64_t kr__lp_mix_flagged(uint64_t h, const struct kr__ev *e);
/* Fold a committed event into its LP's digest (inline: every engine's commit path). */
static inline void kr__lp_commit_event(struct kr__lp *lp, const struct kr__ev *e)
{
    uint64_t t;
    memcpy(&t, &e->k.ts, sizeof t);
    uint64_t h = kr__mix(lp->digest, t);
    h = kr__mix(h, e->type);
    lp->digest = __builtin_expect(e->pflags, 0) ? kr__lp_mix_flagged(h, e)
                                                : kr__mix_bytes(h, e->payload, e->size);
    lp->committed++;
    if (__builtin_expect(kr__trace_on, 0)) kr__trace_commit(e);
}
/* done() after a committed event of lp (the current context): true when the LP has just
 * become done; a done() that turns false again is a model error. */
bool kr__lp_done_step(struct kr__lp *lp, bool done);
/* Where the run reads spans (struct kr__promises.spans): an engine's send of e from the
 * running event, refused (a model error; e given back to the pool) if the running event
 * was sent with kr_schedule_span and e starts before its end. The event's KR_EVF_SPAN and
 * `dur` must be intact while it runs (lp.c). */
bool kr__span_refused(struct kr__ctx *c, struct kr__ev *e);
/* Bind the calling thread, number `id` of `nthreads`, to a core of its own (pin.c); left to
 * the OS where threads outnumber cores, and a worker alone on the machine. */
void kr__pin_thread(unsigned id, unsigned nthreads);
/* The worker (of `nthreads`) that kr__pin_thread binds to the core the calling thread runs
 * on now, or -1 (none: oversubscribed, or a core outside the workers'). */
int kr__pin_worker_here(unsigned nthreads);
/* The home of a run that starts on one worker (optimistic/migrate.c), or -1 when no other
 * process has a task runnable on any worker's core now (the run starts spread): that
 * worker, unless another process runs on its core and not on another worker's - then that
 * one. Beside a busy loop the run's thread was on the busy core in 7 of 10 runs. */
int kr__pin_worker_home(unsigned nthreads);
/* This process's place among the MPI ranks on this machine, from the launcher's
 * environment (0 of 1 when there is none). */
void kr__local_ranks(unsigned *rank, unsigned *size);
/* finish on the committed states, and the run digest: KR_OK, or a model error in r->fail. */
int kr__run_finish(struct kr__run *r);
/* Call fn(arg) on the calling thread with a bail point: a model error on the committed path
 * inside it (one no engine defers) unwinds to here, its message in r->fail. Returns KR_OK,
 * or that failure's status; the caller frees what fn left. kr__watch_callbacks and the
 * context are left settled. */
int kr__guarded(struct kr__run *r, void (*fn)(void *), void *arg);
/* How a run that did not fail ended, on every engine: done() held (the engine set end_key
 * to just past the last event), the end time was reached, or a signal interrupted it - then
 * the engine committed every event before `next`, its least pending time, and none after
 * (what `--end next` commits: an interrupted run never splits events tied at one time). A
 * signal that comes when nothing before the end time is left does not interrupt. */
void kr__run_ended(struct kr__run *r, bool by_done, kr_time next);
/* --memory-max (lp.c): bytes the run holds - events, checkpoints, LP states - at a check,
 * and `pending`, its pending events at KR_POOL_SMALL_EVENT bytes each. What a run needs,
 * on every engine alike, is its pending events and its LP states: no engine can hold less.
 * kr__memory_check records the peaks and returns true while what it holds is past the
 * budget (the optimistic engine then gives speculation back); kr__memory_need_over: what
 * it needs is past the budget (the run fails); kr__memory_msg words that failure at
 * virtual time `at`. */
struct kr__mem {
    size_t events, ckpts, states, pending;
};
bool kr__memory_check(struct kr__run *r, const struct kr__mem *m);
static inline bool kr__memory_need_over(const struct kr__run *r, const struct kr__mem *m)
{
    return m->pending + m->states > r->cfg->memory_max;
}
void kr__memory_msg(const struct kr__run *r, const struct kr__mem *m, kr_time at, char *buf,
                    size_t cap);
/* Where what the run holds is all it needs (the sequential engine; any engine after init):
 * record the peaks and, past the budget, fail the run (longjmp to kr__guarded). */
void kr__memory_need(struct kr__run *r, const struct kr__mem *m, kr_time at);
/* After a crash in engine code: an LP whose state was written past its last block (full
 * mode's area canaries, state/arena.h)? Fills buf with the model error. Reads only. */
bool kr__overrun_find(char *buf, size_t cap);
bool kr__overrun_lp(kr_lp id, char *buf, size_t cap);   /* the same for one LP */
/* A state word of LP id that no hash can name (state/arena.h): a warning, once a run (in an
 * event under --check, naming it). Not an error: a number can look like an address. */
struct kr__alien;
void kr__alien_report(const struct kr__run *r, kr_lp id, const struct kr__alien *al);
/* Engine ops for committed contexts: output straight to stdout. */
void kr__emit_direct(struct kr__ctx *c, const char *text, size_t len);
/* The hash of committed output (kr__run.out_hash): from KR_OUT_HASH0, byte by byte. */
#define KR_OUT_HASH0 0xcbf29ce484222325ull
uint64_t kr__out_hash(uint64_t h, const char *p, size_t n);
/* The name of event type `type` (struct kr_model.type_names), or NULL: none given. At most
 * KR_TYPE_NAMES_MAX names (run/models.c checks them when the model is loaded). */
#define KR_TYPE_NAMES_MAX 4096u
const char *kr__type_name(const struct kr_model *m, unsigned type);
/* Reverse computation (struct kr_model.reverse): the most reverse_bytes a model may
 * declare (one area per processed event under --state reverse). */
#define KR_REVERSE_MAX (64u << 10)
/* kr_reverse_area where no event record holds one: n bytes of scratch, zeroed (lp.c). */
void *kr__reverse_scratch(size_t n);
/* What byte `off` of an LP's state root is, for --check's message on a reverse handler that
 * leaves it changed: set by a layer whose root holds more than the model's struct (the
 * ROSS layer: random streams, then the model's state); NULL: the byte is named as such. */
extern void (*kr__root_describe)(size_t off, char *buf, size_t cap);
/* Across ranks: what else every rank must have alike, written into the run's identity that
 * the ranks compare before they start (run/command.c): set by a layer that learnt part of
 * the run's layout from the model's own code (the ROSS layer: every LP's type). NULL: none. */
extern void (*kr__identity_extra)(FILE *f);
/* Commit hooks (ledger.c). The most a model's ledger may hold. */
#define KR_LEDGER_MAX (256u << 20)
/* Call the model's commit hook for one record of LP lp's event at now that has committed,
 * in commit order, in a context of its own (KR_MODE_COMMIT; its kr_printf goes straight
 * out). A kr_error there closes the output (nothing later is printed, kr__out_closed) and
 * ends the process (kr__die) - or, with catch, returns false, the message in r->fail, for
 * the engine to end the run (across ranks, all of them). */
bool kr__commit_deliver(struct kr__run *r, kr_lp lp, kr_time now, const void *data,
                        size_t size, bool catch);
/* The model's commit_end, if it has one, with the ledger, in the hooks' context (virtual
 * time +inf): KR_OK, or the status of its failure (the message in r->fail). */
int kr__commit_end(struct kr__run *r);
/* The model's ledger_bytes() in the same context (time -inf, before init): KR_OK with
 * *bytes, or the status of its failure (the message in r->fail). */
int kr__ledger_bytes(struct kr__run *r, size_t *bytes);
/* Records of one event held until it commits (the sequential engine's, a conservative
 * job's): each u32 size, u64 LP, the bytes. */
struct kr__recbuf {
    unsigned char *b;
    size_t n, cap;
};
void kr__recbuf_add(struct kr__recbuf *b, uint64_t tag, const void *data, size_t size);
/* Deliver (kr__commit_deliver) and forget every record held, the event's time now. */
void kr__recbuf_deliver(struct kr__run *r, struct kr__recbuf *b, kr_time now);
/* A record in a committed-output buffer (stats/output.h, KR_OUT_RECORD) is a u64 tag (the
 * LP, or KR_REC_METRIC) and the bytes: deliver it, its event's time now. */
bool kr__record_deliver(struct kr__run *r, kr_time now, const char *rec, size_t len,
                        bool catch);
/* Where kr__emit_direct writes (NULL: stdout): a buffer while a rank other than 0 runs
 * init or finish, whose output rank 0 prints in rank order. */
extern FILE *kr__emit_file;
/* Set on an engine thread when a thread its event started called the API; in such a
 * thread, its creator's flag (interpose.c: pthread_create from an event). */
extern _Thread_local _Atomic bool kr__foreign_inbox
    __attribute__((tls_model("local-exec"))); /* (one load per event: kairos is an executable) */
extern _Thread_local _Atomic bool *kr__foreign_parent;
/* A thread the model started called the API during a run: remember the message (the first
 * call's), flag the event that started the thread (it fails with it after it returns; a
 * run that would succeed fails at its end) and end that thread - the event waiting for
 * it goes on. */
_Noreturn void kr__foreign_call(const char *msg);
const char *kr__foreign_msg(void);
/* The event that started such a thread fails with its call (a model error). */
_Noreturn void kr__foreign_raise(void);
/* At a run's set-up: no call yet. */
void kr__foreign_reset(void);
/* Sequential --check: the read-only page an empty event's payload points at (NULL: none). */
extern void *volatile kr__empty_payload;
/* interpose.c: look up the C library's printf family and write once (before any event),
 * and at a run's set-up forget the warning about output straight to stdout. */
void kr__interpose_init(void);
void kr__interpose_reset(void);
/* Call the model's event handler for e on lp (the single place an event runs: the seam
 * where time-sharing later switches to the LP's own stack) - unless e is a timer that was
 * cancelled (core/timer.h). */
void kr__run_event_traced(const struct kr__run *r, struct kr__lp *lp, struct kr__ev *e);
/* ...for a timer's event, or a bundle with timers (off the common path: its code apart). */
void kr__run_event_timers(const struct kr__run *r, struct kr__lp *lp, struct kr__ev *e);
/* ...for a loop chosen where no --trace-mode run trace is taken. */
static inline void kr__run_event_untraced(const struct kr__run *r, struct kr__lp *lp,
                                          struct kr__ev *e)
{
    if (__builtin_expect(e->pflags & (KR_PAYLOAD_TIMER | KR_PAYLOAD_TIMERS_IN), 0)) {
        kr__run_event_timers(r, lp, e);
        return;
    }
    r->model->event(e->dest, e->k.ts, e->type, e->payload, e->size, lp->root);
    if (__builtin_expect(atomic_load_explicit(&kr__foreign_inbox, memory_order_relaxed), 0))
        kr__foreign_raise();
}
static inline void kr__run_event(const struct kr__run *r, struct kr__lp *lp, struct kr__ev *e)
{
    if (__builtin_expect(kr__trace_run, 0)) { /* --trace-mode run (lp.c) */
        kr__run_event_traced(r, lp, e);
        return;
    }
    kr__run_event_untraced(r, lp, e);
}

/* The model's done() for LP id, after init or an event, on every engine inside the same
 * protection as the event (its errors and crashes deferred like the event's, the event
 * timeout still running) and in a read-only mode: calls that change state are refused. */
static inline bool kr__run_done(const struct kr__run *r, struct kr__lp *lp, kr_lp id)
{
    if (!r->model->done) return false;
    uint8_t mode = kr__ctx.mode;
    kr__ctx.mode = KR_MODE_DONE;
    bool d = r->model->done(id, lp->root);
    kr__ctx.mode = mode;
    return d;
}

/* Params and models. */
/* Both return the failure in err (KR_ERR_USAGE): a model that cannot be loaded or is
 * incomplete, a -P the model does not declare, a value of the wrong type or range. */
/* The model's lookahead before the run: `lookahead`, or what run_lookahead makes of the
 * run's parameters (read by kr__params_check first). */
int kr__model_lookahead(const struct kr_model *m, kr_time *la, struct kr__error *err);
int kr__params_check(const struct kr__config *cfg, const struct kr_model *m,
                     struct kr__error *err);
const struct kr_model *kr__model_load(const char *name, struct kr__error *err);
/* A model the program holds itself (kr__cmd_run_model), which MODEL names by its name. */
extern const struct kr_model *kr__model_own;
/* True in a program whose model prints with printf (the ROSS layer): what a model callback
 * writes to stdout is then its committed output (core/interpose.c). */
extern bool kr__stdout_committed;
/* Said once (rank 0) before a run on more than one thread or rank, if set: what the model's
 * program knows such a run changes for it (the ROSS layer: models' globals). */
extern const char *kr__parallel_note;
/* The path of the outside model being loaded (its constructors and kr_model_entry() run),
 * else NULL: a crash or exit() then is the model's (fault.c, interpose.c). */
extern const char *volatile kr__model_loading;
void kr__models_list(FILE *f);
void kr__params_print(FILE *f, const struct kr_model *m);

/* Write marking (marks.c) is on: the run saves state in chunk mode. */
extern bool kr__chunk_marking;

/* Signals (fault.c): dirty-tracking faults and model crashes. */
void kr__fault_install(void);
void kr__fault_thread_init(void);
void kr__fault_thread_fini(void);

/* Context strings for messages, e.g. "model 'phold', LP 3, virtual time 1.5, event type 2":
 * of the current context, or of event e (from any thread). */
void kr__ctx_where(char *buf, size_t cap);
void kr__event_where(char *buf, size_t cap, const struct kr__run *r, const struct kr__ev *e);

#endif
