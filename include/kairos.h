/* kairos.h - the one public model API of the Kairos PDES engine.
 *
 * A model is plain C written against this header. The same model runs unchanged under
 * every engine (sequential, optimistic Time Warp, and later ones), and every engine commits
 * the same history, so the printed run digest is identical. Names here are stable: they are
 * added to, never renamed.
 *
 * Rules a model follows so that speculative engines can roll it back:
 *  - all LP state lives in memory from kr_malloc/kr_calloc/kr_realloc; the root is set with
 *    kr_set_state() in init and handed back to every event handler;
 *  - randomness only through kr_random/kr_random_u64/kr_expo (per-LP streams, rolled back);
 *  - output only through kr_printf (printed when the event commits, in virtual-time order);
 *  - no global mutable variables.
 */
#ifndef KAIROS_H
#define KAIROS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef double kr_time;   /* virtual time; events carry finite timestamps >= 0 */
typedef uint64_t kr_lp;   /* logical process id, 0 .. kr_lp_count()-1 */

/* Largest payload kr_schedule accepts, in bytes. */
#define KR_PAYLOAD_MAX 1024u

/* Kinds of model parameter (struct kr_param.type). */
enum kr_param_type { KR_PARAM_INT, KR_PARAM_DOUBLE };

/* One entry of a model's parameter table; the table ends with an entry whose name is NULL.
 * `def` is the default as text ("1024", "0.5"); `help` is one line for `kairos run M --help`.
 * Optional range: when min < max, a value (given with -P, or the default) outside
 * [min, max] is refused before the run starts, naming the parameter. */
struct kr_param {
    const char *name;
    enum kr_param_type type;
    const char *def;
    const char *help;
    double min, max;
};

/* The layout of this header's structures. A model built against another layout is refused
 * when it is loaded (rebuild it) rather than misread. Every file that includes this header
 * defines the same weak symbol, so each model carries the version it was built with. */
#define KR_ABI_VERSION 8
#ifdef __cplusplus
extern
#endif
__attribute__((weak, visibility("default"))) const unsigned kr_abi_version = KR_ABI_VERSION;

/* What a model exports. Callbacks other than `event` may be NULL. */
struct kr_model {
    const char *name;
    /* Virtual time -inf, once per LP: allocate state with kr_malloc, kr_set_state it, and
     * schedule the first events (timestamps >= 0). */
    void (*init)(kr_lp me);
    /* One event: `payload` is a copy of what the sender passed (valid during the call);
     * `state` is the root set with kr_set_state. */
    void (*event)(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                  void *state);
    /* Optional termination test, asked after each event of `me`. Must be monotone: once it
     * returns true for an LP it must keep returning true. The run ends after the first
     * event (in virtual-time order) after which it holds for every LP. */
    bool (*done)(kr_lp me, const void *state);
    /* Optional, virtual time +inf, once per LP on its final committed state; may kr_printf. */
    void (*finish)(kr_lp me, void *state);
    /* Minimum timestamp increment of any kr_schedule to another LP; 0 if unknown. */
    kr_time lookahead;
    /* Optional parameter table, terminated by {NULL}. */
    const struct kr_param *params;
    /* KR_MODEL_* flags. */
    unsigned flags;
    /* Optional: answer a kr_query asked of LP `me` at virtual time `now` (the asker's), from
     * `state` as it was before every event that orders after the asking one (see kr_query).
     * Reads only: it may not change state, draw random numbers, schedule or print, but may
     * kr_query further LPs. Writes at most `cap` bytes to `answer`; returns their number.
     * (Added in KR_ABI_VERSION 3; a model built against version 2 has none.) */
    size_t (*query)(kr_lp me, kr_time now, const void *question, size_t size,
                    const void *state, void *answer, size_t cap);
    /* Optional commit hook: called once for each record an event handed to kr_commit, when
     * that event commits, in the run's commit order - the events' key order over all LPs,
     * threads and ranks - one call at a time, on every engine alike. `me` and `now` are the
     * event's LP and time; `record` is a copy of what it passed. `ledger` is the model's own
     * `ledger_size` bytes, zeroed at the start and kept in snapshots: the one place a hook
     * may write (totals, per-day counts; no pointers). It may kr_printf (printed after the
     * event's own output) and kr_error; it cannot see or change LP states, schedule or draw
     * random numbers. Per-LP statistics and run-wide summaries without sending messages to
     * one LP. (Added in KR_ABI_VERSION 4; a model built against 2 or 3 has none.) */
    void (*commit)(void *ledger, kr_lp me, kr_time now, const void *record, size_t size);
    size_t ledger_size;
    /* Optional names of the event types, indexed by type and ended by NULL:
     * { "ARRIVAL", "DEPARTURE", NULL }. Error messages, --trace files (and so trace-diff)
     * and --stats name a type by them; a type past the list keeps its number. A name is 1
     * to 63 printable characters without quotes or backslashes. (Added in KR_ABI_VERSION
     * 5; a model built against an older version has none.) */
    const char *const *type_names;
    /* Optional, with `commit`: the ledger's size chosen at run time instead of
     * `ledger_size` (which must then be 0): called once before any init, the same on every
     * rank, where kr_param_int/kr_param_double, kr_lp_count, kr_seed and kr_end_time may be
     * read - a counter per LP, a bin per day up to --end. (Added in KR_ABI_VERSION 5.) */
    size_t (*ledger_bytes)(void);
    /* Optional, with `commit`: called once after the last committed event and its hook
     * calls, before any `finish`, with the ledger - the place to reduce it and kr_printf the
     * run's summary (on every engine alike; across ranks on rank 0, where the hooks run;
     * also at the end of a resumed run). It may kr_error; it sees no LP state. (Added in
     * KR_ABI_VERSION 5.) */
    void (*commit_end)(void *ledger);
    /* Optional names of the model's metrics, ended by NULL: { "wait", "queue", NULL }.
     * kr_metric(name, value) records a value of one of them; the same rules as type_names.
     * (Added in KR_ABI_VERSION 6.) */
    const char *const *metrics;
    /* Optional: the lookahead (as `lookahead`, which must then be 0) when it depends on
     * parameters: called once before the run - before any init, and before the command
     * chooses an engine's scheme (--conservative auto) - where kr_param_int and
     * kr_param_double may be read; returns a finite value >= 0. kr_set_lookahead in init
     * may still lower it. (Added in KR_ABI_VERSION 7.) */
    kr_time (*run_lookahead)(void);
    /* Optional reverse computation (--state reverse): undo event `type` at `now` of LP `me`,
     * the last one it ran that is not undone yet, on `state` as that event left it; events
     * are undone newest first. `saved` is that event's reverse area: `reverse_bytes` bytes,
     * zeroed before the event ran, where its handler kept what it overwrote (kr_reverse_area).
     * It restores what the event changed in the LP's kr_malloc memory, and may kr_malloc and
     * kr_free; it may not send, print, draw kr_random numbers or set timers (Kairos undoes
     * those itself: the event's sends are cancelled, its output dropped, the LP's random
     * stream and send count put back). With --state reverse the optimistic engine undoes
     * events with it instead of restoring checkpoints; other modes never call it. `--check`
     * runs each event, then reverse, then the event again, and names the first event type
     * whose reverse does not restore the state. (Added in KR_ABI_VERSION 8.) */
    void (*reverse)(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                    void *state, void *saved);
    size_t reverse_bytes;
};

/* The model reports every write to its state (kr_touch, KR_WRITE, kr_memcpy/kr_memset/
 * kr_memmove, kairos/transparent.h or the instrumented build), so it may run with
 * --state chunk. Other models run with --state full, page or buddy, which need no help. */
#define KR_MODEL_MARKS_WRITES 1u
/* Same-time bundles: the handler runs once per LP and bundle - all of the LP's events with
 * one timestamp and one zero-delay generation (those sent at an earlier time are
 * generation 0; one sent by an event at its own time is that event's generation + 1) -
 * called with the bundle's first event; kr_bundle_count / kr_bundle_get read them all, in
 * the deterministic tie order. Every engine runs the same bundles (docs/guide.md). */
#define KR_MODEL_BUNDLES 2u
/* Type order: an LP's events with one timestamp and one zero-delay generation run in
 * ascending type (then by sender and send count, as always), e.g. every neighbour's message
 * (type 0) before the step that needs them (type 1). A zero-delay event still runs after
 * the event that sent it. Not with KR_MODEL_BUNDLES (a bundle sees all its events anyway). */
#define KR_MODEL_TYPE_ORDER 4u

/* An outside model compiled as a shared object defines this; `kairos run ./model.so`. */
const struct kr_model *kr_model_entry(void);

/* Set the root of the calling LP's state (must point into its kr_malloc memory, or NULL).
 * Where: init, an event, finish. Cost: a lookup of the block in the LP's arena. */
void kr_set_state(void *state);
/* Number of LPs in the run. Where: any callback. Cost: a load. */
kr_lp kr_lp_count(void);
/* Virtual time of the event being processed (-inf in init, +inf in finish).
 * Where: any callback. Cost: a load. */
kr_time kr_now(void);
/* The run's settings, the same on every engine: its end time (--end; +inf for inf) and its
 * seed (--seed), e.g. to size a table or name an output. Where: any callback. Cost: a
 * load. */
kr_time kr_end_time(void);
uint64_t kr_seed(void);

/* Send an event to `dest` at virtual time `t` >= kr_now(). The payload (at most
 * KR_PAYLOAD_MAX bytes) is copied. Events at the same timestamp are processed in a
 * deterministic order derived from the sender, never from timing.
 * Where: init, an event (not done(), a query handler or finish). Cost: the payload copied
 * into a pooled event and a heap insert; optimistic: the event also joins its parent's list
 * for cancellation (not when the parent is safe), and to another thread it goes through
 * that thread's channel, to another rank into a message of ~4 KiB. */
void kr_schedule(kr_lp dest, kr_time t, unsigned type, const void *payload, size_t size);

/* Ask LP `dest` a question about its state at the caller's time, side-effect free (TWOS
 * queries): dest's query handler (struct kr_model.query) answers from its state after all
 * of its events that order before the caller's event - so a query to oneself sees the state
 * before the current event began - and the caller gets the answer at once, at the same
 * virtual time. Question and answer are at most KR_PAYLOAD_MAX bytes; returns the answer's
 * size (at most `cap`). In an event handler, a query handler (nested queries; a cycle back
 * to the asker is allowed, an endless one is an error) and finish (the final states; finish
 * runs in LP order, so LPs before the caller have had theirs). Not in init or done().
 * Where: an event, a query handler, finish. Cost: sequential engine, a call of the handler;
 * optimistic engine, the asking event runs when it is the run's least event (it may be
 * undone once and run again; the answer may roll the destination back); the conservative
 * engine and runs across MPI ranks refuse such models at the start. */
size_t kr_query(kr_lp dest, const void *question, size_t size, void *answer, size_t cap);

/* In an event handler: the events it was called for (1 without KR_MODEL_BUNDLES), and the
 * type, payload (valid during the call) and size of member k < kr_bundle_count(); member 0
 * is the event passed to the handler. Any out pointer may be NULL.
 * Where: an event. Cost: a load. */
unsigned kr_bundle_count(void);
void kr_bundle_get(unsigned k, unsigned *type, const void **payload, size_t *size);

/* Send an expanded event: one that lasts `duration` (>= 0) of virtual time from `t`, e.g. the
 * time to transmit a packet or serve a job. The conservative engine's horizon scheme (--sync
 * conservative --conservative horizon) runs events whose intervals overlap in parallel, and
 * so requires that an event schedules nothing that starts before its own end (t +
 * duration). kr_schedule gives an event the run's lookahead as its duration. The windows
 * scheme counts on the same promise of an event sent with a span (its workers' clocks are
 * their pending events' ends) and refuses a send before the end too, for models without
 * done(), queries or bundles. The other engines check the arguments and
 * otherwise ignore the duration. Where and cost: as kr_schedule. */
void kr_schedule_span(kr_lp dest, kr_time t, kr_time duration, unsigned type,
                      const void *payload, size_t size);

/* Timers: an event the calling LP schedules for itself and may cancel before it runs (a time-out,
 * a retry, a shift's end). kr_timer_set sends it as kr_schedule to the calling LP would (at t >=
 * kr_now()) and returns a plain value to keep in the LP's state (copy it freely; a zeroed kr_timer
 * is no timer). kr_timer_cancel(&t) cancels it if it is still pending and returns true; false if
 * it already ran, was cancelled, or t is zeroed. It zeroes t either way. kr_timer_pending says
 * whether it is still to run. The LP's pending timers are part of its state: rolled back, kept by
 * snapshots, the same on every engine. A cancelled timer's event still reaches its time (it is
 * counted and hashed in the history, and shown as cancelled in a trace) but the handler never sees
 * it. With KR_MODEL_BUNDLES a bundle holds its timers that were not cancelled when it starts (a
 * timer of the bundle its handler cancels has run: false). Where: init or an event
 * (kr_timer_pending also in finish). Cost: a send; the set and each cancel or firing keep a sorted
 * list of the LP's pending timers in its arena (a search and a move of the later ones), none in a
 * model that sets none; a cancelled timer's event still passes through the queue, about what an
 * event costs (bench/RESULTS.md). */
typedef struct {
    uint64_t id;                  /* the engine's (0: none) */
    kr_time at;                   /* when it runs (if it still does) */
} kr_timer;
kr_timer kr_timer_set(kr_time t, unsigned type, const void *payload, size_t size);
bool kr_timer_cancel(kr_timer *timer);
bool kr_timer_pending(const kr_timer *timer);

/* Only in init: every event this LP sends to another LP will be at least `lookahead` after
 * kr_now() (a run-time alternative to struct kr_model.lookahead, e.g. one that differs
 * between LPs; one that only a parameter decides is better given by run_lookahead, known
 * before any init). The run's lookahead is the smallest value declared (with the model's, if
 * not 0). Declaring 0 says sends may be immediate: under --sync conservative events then
 * last 0 and run one at a time (struct kr_model.lookahead 0 means "unknown", which Horizon
 * refuses).
 * Where: init only. Cost: none after init. */
void kr_set_lookahead(kr_time lookahead);

/* Per-LP pseudo-random numbers, rolled back with the LP. Where: init, an event, finish.
 * Cost: a few arithmetic operations on the LP's stream (kr_expo adds a log). */
double kr_random(void);          /* uniform in [0, 1) */
uint64_t kr_random_u64(void);    /* uniform 64-bit */
double kr_expo(double mean);     /* exponential with the given mean */

/* Distributions on the LP's stream: rolled back with the LP and the same on every engine,
 * thread and rank count (the stream, not a generator of their own; the values depend only
 * on the LP, the seed and the draws before). Each follows one published method: inversion
 * (kr_uniform, kr_weibull, kr_geometric, kr_discrete: one draw); the polar method of
 * Marsaglia and Bray (1964) for normals (kr_normal, kr_lognormal: two draws or more, the
 * pair's second normal discarded); Marsaglia and Tsang (2000) for gamma (kr_gamma,
 * kr_erlang); for Poisson the product of uniforms (Knuth) below a mean of 10, else
 * Hörmann's PTRS (1993); for binomial inversion (Kachitvichyanukul and Schmeiser's BINV,
 * 1988) while n min(p, 1 - p) < 10, else Hörmann's BTRS (1993). Bad arguments are a model
 * error naming the call and its values. Where: init, an event, finish. Cost: a few draws
 * and a logarithm or two (kr_discrete: n steps). */
double kr_uniform(double a, double b);           /* uniform on [a, b), a <= b */
double kr_normal(double mean, double sd);        /* normal (Gaussian), sd >= 0 */
double kr_lognormal(double mu, double sigma);    /* exp of a normal(mu, sigma) */
double kr_gamma(double shape, double scale);     /* gamma: mean shape x scale */
double kr_weibull(double shape, double scale);   /* Weibull: P(X > x) = exp(-(x/scale)^shape) */
double kr_erlang(unsigned k, double mean);       /* sum of k exponentials, total mean `mean` */
uint64_t kr_poisson(double mean);                /* Poisson count, mean from 0 to 2^53 */
uint64_t kr_binomial(uint64_t n, double p);      /* successes in n trials of probability p */
uint64_t kr_geometric(double p);                 /* trials up to the first success: 1, 2, ...
                                                  * (mean 1/p), 0 < p <= 1 */
unsigned kr_discrete(const double *weights, unsigned n); /* index i with probability
                                                  * weights[i] / their sum (weights >= 0) */

/* Memory of the calling LP's arena (checkpointed and restored by the engine). Fresh memory
 * is zero-filled so that runs are reproducible byte for byte. Where: init, an event,
 * finish. Cost: a size-class allocation in the LP's arena; what the engine pays later is
 * the state's size at each checkpoint (--state full) or its written pages or chunks. */
void *kr_malloc(size_t size);
void *kr_calloc(size_t n, size_t size);
void *kr_realloc(void *ptr, size_t size);
void kr_free(void *ptr);

/* Write marking, for --state chunk (elsewhere these cost a test and do nothing extra):
 * kr_touch declares that [p, p + n) of the LP's state is written by this event (before or
 * after the write, within the event); the others write and mark in one call.
 * Where: init, an event. Cost: --state chunk, the chunks' dirty bits set; else a test. */
void kr_touch(void *p, size_t n);
#define KR_WRITE(lvalue, value) (kr_touch(&(lvalue), sizeof(lvalue)), (lvalue) = (value))
void *kr_memcpy(void *dst, const void *src, size_t n);
void *kr_memmove(void *dst, const void *src, size_t n);
void *kr_memset(void *dst, int c, size_t n);
/* A copy of s in the LP's state (kr_malloc memory). Where and cost: as kr_malloc. */
char *kr_strdup(const char *s);

/* Reverse computation (struct kr_model.reverse): the running event's reverse area, the
 * model's `reverse_bytes` bytes, zeroed when the event started, where the handler keeps what
 * it overwrites (an old value, which branch it took) for `reverse` to put back. Under
 * --state reverse each processed event has its own, kept until the event commits or is
 * undone; elsewhere it is scratch reused by the next event (the handler need not know which
 * mode runs). Call it once per event: outside --state reverse each call zeroes it again.
 * NULL for a model without reverse_bytes. Where: an event. Cost: none under --state reverse
 * (the engine zeroed it with the event's record); elsewhere zeroing reverse_bytes bytes. */
void *kr_reverse_area(void);

/* Committed output: printed to stdout only when the calling event commits, in virtual-time
 * order across all LPs. Returns the number of characters formatted. Where: init, an event,
 * finish. Cost: the formatting, and on the parallel engines a copy of the text kept with
 * the event's key until it commits (across ranks, sent to rank 0). */
int kr_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Hand `record` (copied; at most KR_PAYLOAD_MAX bytes) to the model's commit hook, which
 * gets it when the calling event commits - never if the event is rolled back. A model
 * without a hook gets an error. Where: an event (not init, done(), a query handler, finish
 * or the hook itself). Cost: a copy kept with the event's key until it commits, like
 * kr_printf's text (across ranks, sent to rank 0), and the hook's call there. */
void kr_commit(const void *record, size_t size);

/* Model metrics over virtual time: record `value` of the metric `name` (one of struct
 * kr_model.metrics) at the event's time, when the event commits. The run reduces each
 * metric into bins of virtual time - count, sum (kept exactly), min, max, and the 50th,
 * 90th and 99th percentiles from a mergeable log-bucket sketch (within 1% of the value) -
 * none of which depends on the order of the values, so the results are the same bits on
 * every engine, thread and rank count and after a resume; the summary prints each metric's
 * totals, --stats its bins (model_metrics) and kairos report draws one plot per metric. A
 * bin is the end time / 100 wide (with --end inf: 1, doubled as time passes so that at
 * most 100 are kept). A NaN or infinite value, or a name not declared, is a model error.
 * Where: an event. Cost: a name lookup, the value kept with the event until it commits
 * (the sequential engine: not kept), and its reduction then - a logarithm and a few
 * dozen operations (about 400 instructions in all, bench/RESULTS.md). */
void kr_metric(const char *name, double value);

/* Statistics a model keeps in its LP state (zero-initialised, plain values: rolled back with it;
 * each call marks its writes for --state chunk). A tally: count, mean, variance (Welford's
 * update), min, max. A histogram: `bins` equal bins over [lo, hi), and the values below and above
 * (kr_histogram_init sets it up; KR_HISTOGRAM_BINS at most). A time average: the time-weighted
 * mean of a level (a queue length, busy servers) that kr_timeavg_set changes at `now`, from the
 * first set on (a set in init counts from time 0; kr_timeavg_mean at an infinite time, as in
 * finish, means up to the last change). Where: anywhere model code runs. Cost: a few arithmetic
 * operations (a histogram's quantile: a walk over its bins). */
#define KR_HISTOGRAM_BINS 64
struct kr_tally {
    uint64_t n;
    double mean, m2, min, max;
};
void kr_tally_add(struct kr_tally *t, double x);
double kr_tally_var(const struct kr_tally *t);   /* sample variance (0 below 2 values) */
struct kr_histogram {
    double lo, hi;
    unsigned bins;
    uint64_t n, below, above, count[KR_HISTOGRAM_BINS];
};
void kr_histogram_init(struct kr_histogram *h, double lo, double hi, unsigned bins);
void kr_histogram_add(struct kr_histogram *h, double x);
double kr_histogram_quantile(const struct kr_histogram *h, double q); /* interpolated in
                                                  * its bin; lo or hi for values outside */
struct kr_timeavg {
    kr_time start, last;
    double level, area;
    bool started;
};
void kr_timeavg_set(struct kr_timeavg *a, kr_time now, double level);
double kr_timeavg_mean(const struct kr_timeavg *a, kr_time now); /* up to now */

/* Stop the run with a model error: the message gets the model, LP, virtual time and event
 * type prefixed; the exit status is 1. In a speculative event it takes effect only if that
 * event commits (a rolled-back wrong path cannot fail the run). Where: any callback.
 * Cost: the event's end (a longjmp out of the handler). */
void kr_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* Model parameters from `-P name=value` (or the table default, else `fallback`).
 * Where: any callback. Cost: a search of the parameter table by name (parsed once before
 * the run): read them in init and keep what an event needs in the state. */
int64_t kr_param_int(const char *name, int64_t fallback);
double kr_param_double(const char *name, double fallback);

/* Export a built-in or outside model. In an outside shared object (KR_OUTSIDE_MODEL
 * defined, as the example CMake does) this defines kr_model_entry(); built into the
 * `kairos` binary it defines kr_builtin_<id>(). */
#ifdef KR_OUTSIDE_MODEL
#define KR_MODEL_EXPORT(id, model) \
    const struct kr_model *kr_model_entry(void) { return &(model); }
#else
#define KR_MODEL_EXPORT(id, model) \
    const struct kr_model *kr_builtin_##id(void) { return &(model); }
#endif

#ifdef __cplusplus
}
#endif
#endif /* KAIROS_H */
