/* api.c - the public model API, implemented once for every engine. Each call validates its
 * arguments against the current context, then dispatches to the running engine through
 * kr__ctx.ops. KR_API_ENTER/LEAVE mark the single place where a model call enters and
 * leaves platform mode: the hook for time-sharing's check-and-switch. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "core/core.h"
#include "base/error.h"
#include "run/random.h"
#include "state/addrmap.h"
#include "state/arena.h"
#include "ult/ult.h"


/* A chain of events at one timestamp longer than this is reported as a zero-delay loop
 * instead of running forever (the chain length is the tie key's `gen`). */
#define KR_MAX_ZERO_DELAY_HOPS (1u << 22)

/* Every kr_* call brackets its work with these: platform mode inside (a tick returns at
 * once), and check-and-switch on the way out when the call came from model code running
 * on an event stack (time-sharing, src/ult/ult.h). Elsewhere: a thread-local load and
 * store. */
#define KR_API_ENTER() sig_atomic_t kr__was_app_ = kr__ult_enter()
#define KR_API_LEAVE() kr__ult_leave(kr__was_app_)

/* Queries nested deeper than this are reported as an endless cycle. */
#define KR_QUERY_DEPTH_MAX 64

/* A model call from a thread Kairos did not start, or outside any callback: msg says so.
 * From a thread of the model's during a run, the event that started it fails with it
 * (kr__foreign_call ends that thread); otherwise the process ends. */
static _Noreturn void not_a_callback(const char *msg)
{
    if (kr__run_current && !kr__ctx.run && (pid_t)syscall(SYS_gettid) != getpid())
        kr__foreign_call(msg);
    kr__die(msg);
}

/* Calls that need an LP (state, RNG, memory), outside an event handler. */
/* A reverse handler may only change the LP's memory. */
static int in_reverse(const char *fn)
{
    static const char *const may[] = { "kr_malloc", "kr_free", "kr_realloc", "kr_set_state" };
    for (size_t i = 0; i < sizeof may / sizeof may[0]; i++)
        if (!strcmp(fn, may[i])) return 1;
    kr__model_error("%s in a reverse handler: reverse only puts back what its event changed "
                    "in the LP's memory (and may kr_malloc/kr_free); Kairos itself cancels the "
                    "event's sends, drops its output and restores its random stream, send "
                    "count and timers", fn);
    return 1;
}

/* fn in an LP's callback that only reads (done(), a query handler): a model error there;
 * 1 (an LP) either way. */
static int reader_refused(const char *fn)
{
    if (kr__ctx.mode == KR_MODE_DONE)
        kr__model_error("%s in done(): done() only reads the LP's state (it is asked after "
                        "every event, on speculative states too, and must change nothing); "
                        "do this in the event handler", fn);
    else if (kr__ctx.mode == KR_MODE_QUERY)
        kr__model_error("%s in a query handler: a query only reads the LP's state (it "
                        "must change nothing, send and print nothing; the asker gets the "
                        "answer and acts on it); do this in an event handler", fn);
    return 1;
}

static __attribute__((noinline)) int need_lp_checked(const char *fn)
{
    if (kr__ctx.mode == KR_MODE_REVERSE) return in_reverse(fn);
    if (kr__in_lp()) return reader_refused(fn);
    if (kr__ctx.mode == KR_MODE_COMMIT) /* (no LP there: the hook sees none) */
        kr__model_error("%s in the commit hook: the hook reads its record, writes the ledger "
                        "and may kr_printf; it sees no LP state and sends nothing (do this in "
                        "the event handler that calls kr_commit)", fn);
    char msg[512];
    const struct kr__run *r = kr__run_current;
    snprintf(msg, sizeof msg, "model '%s': %s was called outside init, an event, done() or "
             "finish, or from a thread Kairos did not start: model calls are valid only in the "
             "model's callbacks, on the thread that runs them", r ? r->model->name : "?", fn);
    not_a_callback(msg);
}

/* Calls that need an LP. From an event handler - nearly every call - one test: an event
 * runs with its LP in the context, where each call may do what it does. */
static inline int need_lp(const char *fn)
{
    if (__builtin_expect(kr__ctx.mode == KR_MODE_EVENT, 1)) return 1;
    return need_lp_checked(fn);
}

void kr_set_state(void *state)
{
    KR_API_ENTER();
    need_lp("kr_set_state");
    if (state && kr__arena_chunk_size(&kr__ctx.lp->arena, state) == 0)
        kr__model_error("kr_set_state(%p): the pointer is not a block from kr_malloc of this LP; "
                        "the state root must be allocated with kr_malloc/kr_calloc", state);
    else
        kr__ctx.lp->root = state;
    KR_API_LEAVE();
}

kr_lp kr_lp_count(void)
{
    KR_API_ENTER();
    kr_lp n = kr__ctx.run ? kr__ctx.run->n : 0;
    KR_API_LEAVE();
    return n;
}

kr_time kr_now(void)
{
    KR_API_ENTER();
    kr_time t = kr__ctx.now;
    KR_API_LEAVE();
    return t;
}

/* Whether mode m runs an event handler (for the first time, or coasting forward). */
static bool in_event(uint8_t m)
{
    return m == KR_MODE_EVENT || m == KR_MODE_COAST;
}

/* fn, which reads the event's bundle, outside the handler: a model error, NULL. */
static const struct kr__ev *not_in_handler(const char *fn)
{
    if (!kr__in_lp()) need_lp(fn); /* (says where it was called from) */
    else kr__model_error("%s outside the event handler: a bundle is the events the "
                         "handler was called for; call it there", fn);
    return NULL;
}

/* The event being run, or its bundle's member k (core/bundle.h); NULL (a model error
 * reported) outside an event handler or past the bundle's end. */
static const struct kr__ev *bundle_member(const char *fn, unsigned k)
{
    if (!kr__ctx.ev || !in_event(kr__ctx.mode)) return not_in_handler(fn);
    unsigned n = kr__ctx.nbundle ? kr__ctx.nbundle : 1;
    if (k >= n) {
        kr__model_error("%s: member %u of a bundle of %u event%s; members are "
                        "0..kr_bundle_count()-1", fn, k, n, n == 1 ? "" : "s");
        return NULL;
    }
    return kr__ctx.nbundle ? kr__ctx.bundle[k] : kr__ctx.ev;
}

unsigned kr_bundle_count(void)
{
    KR_API_ENTER();
    unsigned n = 0;
    if (bundle_member("kr_bundle_count", 0)) n = kr__ctx.nbundle ? kr__ctx.nbundle : 1;
    KR_API_LEAVE();
    return n;
}

void kr_bundle_get(unsigned k, unsigned *type, const void **payload, size_t *size)
{
    KR_API_ENTER();
    const struct kr__ev *e = bundle_member("kr_bundle_get", k);
    if (type) *type = e ? e->type : 0;
    if (payload) *payload = e ? e->payload : NULL;
    if (size) *size = e ? e->size : 0;
    KR_API_LEAVE();
}

kr_time kr_end_time(void)
{
    KR_API_ENTER();
    kr_time t = kr__ctx.run ? kr__ctx.run->cfg->end : 0;
    KR_API_LEAVE();
    return t;
}

uint64_t kr_seed(void)
{
    KR_API_ENTER();
    uint64_t s = kr__ctx.run ? kr__ctx.run->cfg->seed : 0;
    KR_API_LEAVE();
    return s;
}

/* Whether an event at t would be one too many at the same time in a row. */
static bool zero_delay_loop(kr_time t)
{
    return t == kr__ctx.now && kr__ctx.mode == KR_MODE_EVENT &&
           kr__ctx.gen >= KR_MAX_ZERO_DELAY_HOPS;
}

/* Virtual time must advance: no endless zero-delay chain, nothing inside the lookahead. */
static int check_progress(const char *fn, kr_lp dest, kr_time t, kr_time la)
{
    if (zero_delay_loop(t)) {
        kr__model_error("%s: %u events in a row at virtual time %.17g, each scheduling "
                        "the next at the same time; virtual time cannot advance (a zero-delay "
                        "loop in the model?)", fn, KR_MAX_ZERO_DELAY_HOPS, t);
        return 0;
    }
    if (la > 0 && dest != kr__ctx.id && kr__ctx.mode != KR_MODE_INIT && t < kr__ctx.now + la) {
        kr__model_error("%s: timestamp %.17g to LP %llu violates the model's declared "
                        "lookahead %g (must be >= now + lookahead = %.17g)", fn, t,
                        (unsigned long long)dest, la, kr__ctx.now + la);
        return 0;
    }
    return 1;
}

static int check_payload(const char *fn, size_t size, const void *payload)
{
    if (size > KR_PAYLOAD_MAX) {
        kr__model_error("%s: payload of %zu bytes is over the limit of %u bytes; send "
                        "a smaller message or keep the data in LP state", fn, size, KR_PAYLOAD_MAX);
        return 0;
    }
    if (size && !payload) {
        kr__model_error("%s: payload is NULL but size is %zu", fn, size);
        return 0;
    }
    return 1;
}

/* kr_query is asked from an event (not init or done()); false (a model error reported) if
 * not. */
static bool query_mode_ok(const struct kr__ctx *c)
{
    uint8_t m = c->mode;
    if (!kr__in_lp()) need_lp("kr_query"); /* (says where it was called from) */
    if (m != KR_MODE_INIT && m != KR_MODE_DONE) return true;
    kr__model_error("kr_query in %s: %s", m == KR_MODE_INIT ? "init" : "done()",
                    m == KR_MODE_INIT ? "init runs before the first event, when there is "
                    "no earlier state to ask about; ask in an event handler" : "done() "
                    "only reads the LP's own state; ask in the event handler");
    return false;
}

/* kr_query's answer buffer, and the depth of queries asked inside queries. */
static bool check_answer(const struct kr__ctx *c, kr_lp dest, const void *ans, size_t cap)
{
    if (cap && !ans) {
        kr__model_error("kr_query: the answer buffer is NULL but its size is %zu", cap);
        return false;
    }
    if (c->qdepth >= KR_QUERY_DEPTH_MAX) {
        kr__model_error("kr_query: %u queries nested at virtual time %.17g (LP %llu asking "
                        "LP %llu): a cycle of queries that never ends? Each handler must "
                        "answer without asking again at some depth", KR_QUERY_DEPTH_MAX,
                        c->now, (unsigned long long)c->id, (unsigned long long)dest);
        return false;
    }
    return true;
}

/* kr_query's context and arguments; false (a model error reported) if it cannot be asked. */
static bool check_query(kr_lp dest, const void *q, size_t size, const void *ans, size_t cap)
{
    const struct kr__ctx *c = &kr__ctx;
    if (!query_mode_ok(c)) return false;
    const struct kr__run *r = c->run;
    if (!r->model->query) {
        kr__model_error("kr_query: model '%s' has no query handler (struct kr_model.query) "
                        "to answer it; add one", r->model->name);
        return false;
    }
    if (dest >= r->n) {
        kr__model_error("kr_query: LP %llu is out of range (this run has %llu LPs, ids "
                        "0..%llu)", (unsigned long long)dest, (unsigned long long)r->n,
                        (unsigned long long)(r->n - 1));
        return false;
    }
    return check_payload("kr_query", size, q) && check_answer(c, dest, ans, cap);
}

size_t kr_query(kr_lp dest, const void *question, size_t size, void *answer, size_t cap)
{
    KR_API_ENTER();
    size_t n = 0, capq = cap < KR_PAYLOAD_MAX ? cap : KR_PAYLOAD_MAX;
    if (check_query(dest, question, size, answer, cap))
        n = kr__ctx.ops->query ? kr__ctx.ops->query(&kr__ctx, dest, question, size, answer, capq)
                               : kr__query_answer(&kr__ctx, dest, question, size, answer, capq);
    if (n > capq) {
        kr__model_error("kr_query: LP %llu's query handler says its answer is %zu bytes, over "
                        "the %zu the asker's buffer holds (answers are at most KR_PAYLOAD_MAX, "
                        "%u): give a bigger buffer, or answer in less", (unsigned long long)dest,
                        n, capq, KR_PAYLOAD_MAX);
        n = 0;
    }
    KR_API_LEAVE();
    return n;
}

static int check_schedule(const char *fn, kr_lp dest, kr_time t, size_t size, const void *payload)
{
    const struct kr__run *r = kr__ctx.run;
    if (kr__ctx.mode == KR_MODE_FINISH) {
        kr__model_error("%s in finish: the run is over (virtual time +inf), no event "
                        "can be scheduled; move this send into an event handler", fn);
        return 0;
    }
    if (dest >= r->n) {
        kr__model_error("%s: destination LP %llu is out of range (this run has %llu "
                        "LPs, ids 0..%llu); check the destination computation or --lps",
                        fn, (unsigned long long)dest, (unsigned long long)r->n,
                        (unsigned long long)(r->n - 1));
        return 0;
    }
    if (!isfinite(t)) {
        kr__model_error("%s: timestamp %g is not a finite number (destination LP %llu)",
                        fn, t, (unsigned long long)dest);
        return 0;
    }
    if (t < 0 || t < kr__ctx.now) {
        kr__model_error("%s: timestamp %.17g is in the past (now is %.17g; events "
                        "start at time >= 0 and only go forward)", fn, t,
                        kr__ctx.mode == KR_MODE_INIT ? 0.0 : kr__ctx.now);
        return 0;
    }
    if (!check_payload(fn, size, payload)) return 0;
    return check_progress(fn, dest, t, r->lookahead);
}

/* Could a word of the payload be an address? Most payloads - doubles, counts and ids below
 * the lowest mapping, random 64-bit values - answer no without a call. */
static inline bool maybe_pointers(const void *payload, size_t size)
{
    if (__builtin_expect(size < 8, 1)) return false;
    for (size_t i = 0; i + 8 <= size; i += 8) {
        uint64_t w;
        memcpy(&w, (const char *)payload + i, 8);
        if (kr__addr_above_floor(w)) return true;
    }
    return false;
}

/* Once a run: a payload word below 4 GiB in mapped memory, taken as a number (addrmap.h). */
static void low_number_warning(const char *fn, kr_lp dest, unsigned type, const void *payload,
                               size_t size, uint64_t w, const char *where)
{
    size_t at = 0;
    while (at + 8 <= size && memcmp((const char *)payload + at, &w, 8)) at += 8;
    char ctx[320];
    kr__ctx_where(ctx, sizeof ctx);
    fprintf(stderr, "kairos: warning: %s: %s: the payload of a type-%u event to LP %llu holds "
            "at byte %zu a word (0x%llx) that lies in %s, below 4 GiB, where a program built "
            "without -pie (or run under valgrind) keeps its heap and where ids and counts are "
            "common: it is taken as a number. If it is an address, the run digest depends on "
            "where memory lies; build the program with -pie (the default) to have payload "
            "pointers refused\n", ctx, fn, type, (unsigned long long)dest, at,
            (unsigned long long)w, where);
}

/* The pointers in a payload (state/addrmap.h): KR_PAYLOAD_IMAGE or _PLAIN, or -1 after
 * reporting a word that points into memory with no name another run or rank shares. */
static __attribute__((noinline, cold)) int payload_pointers(const char *fn, kr_lp dest,
                                                             unsigned type, const void *payload,
                                                             size_t size)
{
    size_t at = 0;
    char where[96] = "";
    int vals = kr__addrmap_payload(payload, size, &at, where, sizeof where);
    uint64_t w;
    if (vals >= 0 && kr__addrmap_low_taken(&w, where, sizeof where))
        low_number_warning(fn, dest, type, payload, size, w, where);
    if (vals >= 0) return vals;
    memcpy(&w, (const char *)payload + at, 8);
    const void *x = (const void *)(uintptr_t)w;
    if (kr__arena_find(&kr__ctx.lp->arena, x))
        snprintf(where, sizeof where, "the sending LP's own state (kr_malloc)");
    kr__model_error("%s: the payload of a type-%u event to LP %llu holds a pointer at byte "
                    "%zu (0x%llx) into %s: an event carries values, and that memory has no "
                    "name another run, rank or snapshot shares (the run digest would depend "
                    "on addresses; another rank cannot read it); send the values, or an "
                    "index into a table every LP builds alike (a pointer into the program "
                    "image - a string literal, a const table, a function - is allowed)",
                    fn, type, (unsigned long long)dest, at, (unsigned long long)w, where);
    return -1;
}

/* A send from an event handler that every check of check_schedule passes, in fewer tests
 * (there, now is finite and >= 0, and the mode is known); false: check_schedule says why. */
static inline bool event_send_ok(kr_lp dest, kr_time t, size_t size, const void *payload)
{
    const struct kr__ctx *c = &kr__ctx;
    const struct kr__run *r = c->run;
    kr_time la = r->lookahead;
    return c->mode == KR_MODE_EVENT && dest < r->n && t >= c->now && t < INFINITY &&
           size <= KR_PAYLOAD_MAX && (payload || !size) &&
           (t != c->now || c->gen < KR_MAX_ZERO_DELAY_HOPS) &&
           !(la > 0 && dest != c->id && t < c->now + la);
}

/* How schedule sends: the event's flags (KR_EVF_SPAN: the duration is the model's own), and
 * above them its pflags (KR_PAYLOAD_TIMER: a timer's event). */
#define SCHED_SPAN KR_EVF_SPAN
#define SCHED_TIMER (KR_PAYLOAD_TIMER << 8)

/* kr_schedule, kr_schedule_span and kr_timer_set: False if the send was refused (a model
 * error the engine defers). Inlined in each, `how` a constant there (a call with `how` as
 * a ninth argument, on the stack, cost every send 2 instructions more). */
static inline __attribute__((always_inline)) bool
schedule(const char *fn, kr_lp dest, kr_time t, kr_time dur, unsigned how, unsigned type,
         const void *payload, size_t size)
{
    if (!__builtin_expect(event_send_ok(dest, t, size, payload), 1) &&
        !check_schedule(fn, dest, t, size, payload))
        return false;
    struct kr__lp *lp = kr__ctx.lp;
    uint64_t seq = lp->seq++;
    if (kr__ctx.mode == KR_MODE_COAST) return true; /* re-execution: the event exists already */
    int vals = maybe_pointers(payload, size) ? payload_pointers(fn, dest, type, payload, size)
                                             : KR_PAYLOAD_PLAIN;
    if (vals < 0) return false;
    struct kr__ev *e = kr__pool_get(kr__ctx.pool, size);
    e->k.ts = t;
    e->k.gen = (kr__ctx.mode == KR_MODE_EVENT && t == kr__ctx.now) ? kr__ctx.gen + 1 : 0;
    e->k.tie = ((uint32_t)dest & kr__ctx.run->tie.dest) | (type & kr__ctx.run->tie.type);
    e->k.src = kr__ctx.id;
    e->k.seq = seq;
    e->dest = dest;
    e->type = type;
    e->size = (uint32_t)size;
    e->flags = (uint8_t)how;
    e->xflags = 0;
    e->pflags = (uint8_t)(vals | (how >> 8));
    if ((how & SCHED_SPAN) || !kr__ctx.notail) kr__ev_tail_init(e, dur);
    else kr__ev_tail_unset(e);
    if (size) memcpy(e->payload, payload, size);
    kr__ctx.ops->send(&kr__ctx, e);
    return true;
}

void kr_schedule(kr_lp dest, kr_time t, unsigned type, const void *payload, size_t size)
{
    KR_API_ENTER();
    need_lp("kr_schedule");
    schedule("kr_schedule", dest, t, kr__ctx.run->lookahead, 0, type, payload, size);
    KR_API_LEAVE();
}

void kr_schedule_span(kr_lp dest, kr_time t, kr_time duration, unsigned type,
                      const void *payload, size_t size)
{
    KR_API_ENTER();
    need_lp("kr_schedule_span");
    if (!(duration >= 0) || isinf(duration))
        kr__model_error("kr_schedule_span: duration %g is not a finite number >= 0 "
                        "(destination LP %llu, start %.17g)", duration,
                        (unsigned long long)dest, t);
    else
        schedule("kr_schedule_span", dest, t, duration, SCHED_SPAN, type, payload, size);
    KR_API_LEAVE();
}

kr_timer kr_timer_set(kr_time t, unsigned type, const void *payload, size_t size)
{
    KR_API_ENTER();
    need_lp("kr_timer_set");
    if (kr__ctx.run->reverse)
        kr__model_error("kr_timer_set under --state reverse: an LP's pending timers are kept "
                        "in its state, which the reverse handler would have to put back; run "
                        "a model with timers with --state full, page or buddy");
    kr_timer tm = { 0, 0 };
    uint64_t id = kr__ctx.lp->seq + 1; /* (kr__timer_id of the event's key) */
    if (schedule("kr_timer_set", kr__ctx.id, t, kr__ctx.run->lookahead, SCHED_TIMER, type,
                 payload, size)) {
        kr__timer_add(id);
        tm = (kr_timer){ id, t };
    }
    KR_API_LEAVE();
    return tm;
}

void *kr_reverse_area(void)
{
    KR_API_ENTER();
    need_lp("kr_reverse_area");
    size_t n = kr__ctx.run->model->reverse_bytes;
    void *p = !n ? NULL : kr__ctx.rev_area ? kr__ctx.rev_area : kr__reverse_scratch(n);
    KR_API_LEAVE();
    return p;
}

bool kr_timer_cancel(kr_timer *timer)
{
    KR_API_ENTER();
    need_lp("kr_timer_cancel");
    if (!timer) kr__model_error("kr_timer_cancel(NULL): pass the address of the kr_timer");
    bool was = timer->id && kr__timer_take(timer->id);
    kr_touch(timer, sizeof *timer); /* (it lies in the LP's state: --state chunk) */
    *timer = (kr_timer){ 0, 0 };
    KR_API_LEAVE();
    return was;
}

bool kr_timer_pending(const kr_timer *timer)
{
    KR_API_ENTER();
    if (!kr__in_lp()) need_lp("kr_timer_pending"); /* (a read: done() and queries may) */
    if (!timer) kr__model_error("kr_timer_pending(NULL): pass the address of the kr_timer");
    bool is = timer->id && kr__timer_has(timer->id);
    KR_API_LEAVE();
    return is;
}

/* The run's lookahead from kr_set_lookahead: the first one given, or a smaller later one
 * (every LP's init may give its own: the least holds). */
static void lookahead_lower(struct kr__run *r, kr_time lookahead)
{
    if ((!r->promise.lookahead_declared && r->lookahead == 0) || lookahead < r->lookahead)
        r->lookahead = lookahead;
}

void kr_set_lookahead(kr_time lookahead)
{
    KR_API_ENTER();
    need_lp("kr_set_lookahead");
    struct kr__run *r = kr__ctx.run;
    if (kr__ctx.mode != KR_MODE_INIT)
        kr__model_error("kr_set_lookahead is only valid in init (the engines plan with the "
                        "lookahead before the first event)");
    else if (!(lookahead >= 0) || isinf(lookahead))
        kr__model_error("kr_set_lookahead(%g): the lookahead must be a finite number >= 0",
                        lookahead);
    else
        lookahead_lower(r, lookahead);
    r->promise.lookahead_declared = true;
    KR_API_LEAVE();
}

uint64_t kr__random_u64(const char *fn)
{
    KR_API_ENTER();
    need_lp(fn);
    uint64_t z = (kr__ctx.lp->rng += 0x9e3779b97f4a7c15ull); /* SplitMix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    KR_API_LEAVE();
    return z ^ (z >> 31);
}

uint64_t kr_random_u64(void)
{
    return kr__random_u64("kr_random_u64");
}

double kr_random(void)
{
    return (double)(kr__random_u64("kr_random") >> 11) * 0x1.0p-53;
}

double kr_expo(double mean)
{
    if (!(mean > 0) || isinf(mean)) {
        kr__model_error("kr_expo(%g): the mean must be a positive finite number", mean);
        return 0;
    }
    return -mean * log1p(-kr_random());
}

static const char *arena_why(int err)
{
    switch (err) {
    case KR_ARENA_EXHAUSTED: return "the LP's arena is exhausted";
    case KR_ARENA_TOO_BIG: return "the request is larger than the biggest arena block (64 MiB)";
    default: return "the machine is out of memory";
    }
}

/* kr_malloc(size) would fit in what is left but for the rounding to a power of two: the
 * model error that says so (it returns if that is not why). */
static void rounded_over(const struct kr__arena *a, size_t size)
{
    size_t block = 16;
    while (block < size && block < ((size_t)1 << 62)) block <<= 1;
    if (a->used <= a->limit && size <= a->limit - a->used && block > a->limit - a->used)
        kr__model_error("kr_malloc(%zu): the LP's arena is exhausted for it: the arena holds "
                        "blocks of powers of two, and this one takes %zu bytes, more than the "
                        "%zu left of --arena-max %zu (%zu in use); raise --arena-max, or "
                        "allocate smaller blocks", size, block,
                        a->limit - a->used, a->limit, a->used);
}

/* kr_malloc could not allocate: the model error saying why and what to change. */
_Noreturn __attribute__((cold, noinline)) static void alloc_failed(const struct kr__arena *a,
                                                                    size_t size, int err)
{
    if (err == KR_ARENA_MAPS)
        kr__model_error("kr_malloc(%zu): the kernel refused another memory mapping (its limit, "
                        "vm.max_map_count, is reached): --state page and buddy protect each "
                        "LP's state pages apart, and every run of open pages is a mapping; use "
                        "--state chunk or scan, fewer LPs, or raise the limit (sysctl -w "
                        "vm.max_map_count=...)", size);
    if (err == KR_ARENA_EXHAUSTED) rounded_over(a, size);
    kr__model_error("kr_malloc(%zu): %s (limit %zu bytes, %zu in use); raise the limit "
                    "with --arena-max or reduce the LP's state", size, arena_why(err),
                    a->limit, a->used);
}

void *kr_malloc(size_t size)
{
    KR_API_ENTER();
    need_lp("kr_malloc");
    int err = 0;
    struct kr__arena *a = &kr__ctx.lp->arena;
    void *p = kr__arena_alloc(a, size, &err);
    if (__builtin_expect(!p, 0)) alloc_failed(a, size, err);
    KR_API_LEAVE();
    return p;
}

void *kr_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) {
        kr__model_error("kr_calloc(%zu, %zu): the size overflows", n, size);
        return NULL;
    }
    return kr_malloc(n * size); /* arena memory is always zero-filled */
}

void kr_free(void *ptr)
{
    if (!ptr) return;
    KR_API_ENTER();
    need_lp("kr_free");
    if (kr__arena_free(&kr__ctx.lp->arena, ptr) != KR_ARENA_OK)
        kr__model_error("kr_free(%p): not a live block from kr_malloc of this LP (double free, "
                        "or memory of another LP)", ptr);
    KR_API_LEAVE();
}

/* kr_realloc's new block of size bytes, with what fits of the old one's (old bytes). */
static void *moved(void *ptr, size_t old, size_t size)
{
    void *n = kr_malloc(size);
    if (!n) return NULL;
    memcpy(n, ptr, size < old ? size : old);
    kr_free(ptr);
    return n;
}

void *kr_realloc(void *ptr, size_t size)
{
    if (!ptr) return kr_malloc(size);
    if (size == 0) {
        kr_free(ptr);
        return NULL;
    }
    need_lp("kr_realloc");
    size_t old = kr__arena_chunk_size(&kr__ctx.lp->arena, ptr);
    if (!old) {
        kr__model_error("kr_realloc(%p, %zu): not a live block from kr_malloc of this LP", ptr,
                        size);
        return NULL;
    }
    if (size <= old && size > old / 2) return ptr;
    return moved(ptr, old, size);
}

/* kr_printf's text that did not fit its buffer (len bytes), formatted again on the heap. */
static void emit_long(const char *fmt, va_list ap, int len)
{
    char *text = malloc((size_t)len + 1);
    if (!text) kr__fatal_oom("kr_printf text", (size_t)len + 1);
    vsnprintf(text, (size_t)len + 1, fmt, ap);
    kr__ctx.ops->emit(&kr__ctx, text, (size_t)len);
    free(text);
}

int kr_printf(const char *fmt, ...)
{
    KR_API_ENTER();
    if (kr__ctx.mode != KR_MODE_COMMIT) need_lp("kr_printf");
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (len < 0 || kr__ctx.mode == KR_MODE_COAST) {
        KR_API_LEAVE();
        return len;
    }
    if ((size_t)len < sizeof small) {
        kr__ctx.ops->emit(&kr__ctx, small, (size_t)len);
    } else {
        va_start(ap, fmt);
        emit_long(fmt, ap, len);
        va_end(ap);
    }
    KR_API_LEAVE();
    return len;
}

/* What the model's callback in mode m is called, for a message. */
static const char *callback_name(uint8_t m)
{
    return m == KR_MODE_INIT ? "init" : m == KR_MODE_FINISH ? "finish" : "this callback";
}

void kr_commit(const void *record, size_t size)
{
    KR_API_ENTER();
    need_lp("kr_commit");
    uint8_t m = kr__ctx.mode;
    const struct kr__run *r = kr__ctx.run;
    if (!in_event(m))
        kr__model_error("kr_commit in %s: a record belongs to an event, and reaches the commit "
                        "hook when that event commits; call it in the event handler (init and "
                        "finish may kr_printf)", callback_name(m));
    else if (!r->model->commit)
        kr__model_error("kr_commit: model '%s' has no commit hook to take the record (set "
                        "struct kr_model .commit)", r->model->name);
    else if (size > KR_PAYLOAD_MAX || (size && !record))
        kr__model_error("kr_commit(%p, %zu): a record is at most %u bytes, and not NULL if it "
                        "has any", record, size, KR_PAYLOAD_MAX);
    else if (m == KR_MODE_EVENT) /* (coasting re-runs an event whose records are kept) */
        kr__ctx.ops->record(&kr__ctx, kr__ctx.id, record, size);
    KR_API_LEAVE();
}

/* (a name the model did not declare: the message lists the ones it did) */
static __attribute__((noinline)) void metric_unknown(const struct kr_model *m, const char *name)
{
    char list[512] = "";
    for (unsigned i = 0; m->metrics && m->metrics[i]; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s\"%s\"", i ? ", " : "",
                 m->metrics[i]);
    kr__model_error("kr_metric(\"%.63s\"): not one of model '%s''s metrics (%s); declare it "
                    "in struct kr_model .metrics", name ? name : "(null)", m->name,
                    list[0] ? list : "it declares none");
}

void kr_metric(const char *name, double value)
{
    KR_API_ENTER();
    need_lp("kr_metric");
    uint8_t m = kr__ctx.mode;
    const struct kr__run *r = kr__ctx.run;
    int id = name ? kr__metric_id(r->metrics, name) : -1;
    if (!in_event(m))
        kr__model_error("kr_metric in %s: a value is recorded at its event's time when that "
                        "event commits; call it in the event handler", callback_name(m));
    else if (id < 0)
        metric_unknown(r->model, name);
    else if (!isfinite(value))
        kr__model_error("kr_metric(\"%s\", %g): the value must be a finite number", name,
                        value);
    else if (m == KR_MODE_EVENT) { /* (coasting re-runs an event whose records are kept) */
        struct kr__mrec rec = { (uint32_t)id, 0, value };
        kr__ctx.ops->record(&kr__ctx, KR_REC_METRIC, &rec, sizeof rec);
    }
    KR_API_LEAVE();
}

void kr_error(const char *fmt, ...)
{
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const struct kr__run *r = kr__run_current;
    if (!kr__ctx.run && r) { /* (a thread Kairos did not start: no LP, time or event to name) */
        char msg[1400];
        snprintf(msg, sizeof msg, "model '%s': kr_error(\"%.1024s\") was called from a thread "
                 "Kairos did not start: model calls are valid only in the model's callbacks, "
                 "on the thread that runs them", r->model->name, what);
        not_a_callback(msg);
    }
    kr__model_error("%s", what);
}
