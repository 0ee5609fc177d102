/* lp.c - the life of an LP that every engine shares (declared in core.h): set-up and init
 * at virtual time -inf, committing an event into its history digest, done() steps, its
 * output and failure records, and the reports that name an LP (a state written past its
 * memory, an address the digest cannot name), the calling thread's context (kr__ctx), the
 * strings that say where it is, the errors that need them (kr__model_error, kr__guarded;
 * error.c is the leaf below), and answering a query in its read-only context
 * (kr__query_answer). Below the engines: they call it. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "base/digest.h"
#include "base/error.h"
#include "core/interrupt.h"
#include "core/snapshot.h"
#include "core/trace.h"
#include "ult/ult.h"
#include "core/watchdog.h"
#include "state/addrmap.h"
#include "state/mode.h"

struct kr__run *_Atomic kr__run_current;
__thread struct kr__ctx kr__ctx;
const char *volatile kr__model_loading; /* (models.c sets it; fault.c, interpose.c read it) */

static const char *mode_name(int mode)
{
    switch (mode) {
    case KR_MODE_INIT: return "init";
    case KR_MODE_FINISH: return "finish";
    case KR_MODE_DONE: return "done()";
    case KR_MODE_NONE: return "no LP context";
    default: return "an event";
    }
}

/* kr__ctx_where for a context with no event of its own (commit hooks, queries, done()
 * after init, init and finish). */
static void where_apart(const struct kr__ctx *c, const char *model, char *buf, size_t cap)
{
    unsigned long long id = (unsigned long long)c->id;
    if (c->mode == KR_MODE_COMMIT && isinf(c->now))
        snprintf(buf, cap, "model '%s', in %s", model, c->now > 0 ?
                 "commit_end, after the last commit" : "ledger_bytes, before init");
    else if (c->mode == KR_MODE_COMMIT)
        snprintf(buf, cap, "model '%s', LP %llu, virtual time %.17g, in its commit hook", model,
                 id, c->now);
    else if (c->mode == KR_MODE_QUERY)
        snprintf(buf, cap, "model '%s', LP %llu, virtual time %.17g, in its query handler "
                 "(asked by LP %llu)", model, id, c->now, (unsigned long long)c->asker);
    else if (c->mode == KR_MODE_DONE)
        snprintf(buf, cap, "model '%s', LP %llu, in done() after init", model, id);
    else
        snprintf(buf, cap, "model '%s', LP %llu, in %s", model, id, mode_name(c->mode));
}

/* Where done() after an event, or its reverse handler, runs: the event and which. */
static void after_event_where(const struct kr__ctx *c, char *buf, size_t cap)
{
    char ev[320];
    kr__event_where(ev, sizeof ev, c->run, c->ev);
    snprintf(buf, cap, "%s, %s", ev, c->mode == KR_MODE_DONE ? "in done() after the event"
                                                            : "in its reverse handler");
}

void kr__ctx_where(char *buf, size_t cap)
{
    const struct kr__ctx *c = &kr__ctx;
    const char *model = c->run && c->run->model ? c->run->model->name : "?";
    if ((c->mode == KR_MODE_EVENT || c->mode == KR_MODE_COAST) && c->ev) {
        kr__event_where(buf, cap, c->run, c->ev);
    } else if ((c->mode == KR_MODE_REVERSE || c->mode == KR_MODE_DONE) && c->ev) {
        after_event_where(c, buf, cap);
    } else {
        where_apart(c, model, buf, cap);
    }
}

const char *kr__type_name(const struct kr_model *m, unsigned type)
{
    if (!m || !m->type_names) return NULL;
    for (unsigned i = 0; m->type_names[i]; i++)
        if (i == type) return m->type_names[i];
    return NULL;
}

void kr__event_where(char *buf, size_t cap, const struct kr__run *r, const struct kr__ev *e)
{
    const char *name = kr__type_name(r ? r->model : NULL, e->type);
    char named[80] = "";
    if (name) snprintf(named, sizeof named, " (%s)", name);
    snprintf(buf, cap, "model '%s', LP %llu, virtual time %.17g, event type %u%s",
             r && r->model ? r->model->name : "?", (unsigned long long)e->dest, e->k.ts, e->type,
             named);
}


void kr__lp_setup(struct kr__run *r, kr_lp id)
{
    struct kr__lp *lp = kr__lp_at(r, id);
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

void kr__lp_run_init(struct kr__run *r, kr_lp id)
{
    struct kr__lp *lp = kr__lp_at(r, id);
    kr__ctx.run = r;
    kr__ctx.lp = lp;
    kr__ctx.id = id;
    kr__ctx.ev = NULL;
    kr__ctx.now = -INFINITY;
    kr__ctx.gen = 0;
    kr__ctx.mode = KR_MODE_INIT;
    kr__watch_begin_callback(&kr__watch_callbacks, id, KR_MODE_INIT);
    if (r->snap.resume) kr__snapshot_apply(r, id); /* (kairos resume: the snapshot's LP) */
    else if (r->model->init) r->model->init(id);
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
        struct kr__lp *lp = kr__lp_at(r, id);
        lp->done_seen = lp->done_init;
        ndone += lp->done_init;
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

void *volatile kr__empty_payload;

/* The message of the first API call from a thread the model started (NULL: none). */
static _Atomic(const char *) foreign;
static atomic_flag foreign_taken = ATOMIC_FLAG_INIT;

void kr__foreign_call(const char *msg)
{
    static char first[512];
    if (!atomic_flag_test_and_set(&foreign_taken)) {
        snprintf(first, sizeof first, "%s", msg);
        atomic_store(&foreign, first);
    }
    if (kr__foreign_parent) atomic_store(kr__foreign_parent, true); /* (interpose.c) */
    pthread_exit(NULL); /* (the model's thread ends; the event that waits for it goes on) */
}

const char *kr__foreign_msg(void)
{
    return atomic_load(&foreign);
}

_Noreturn void kr__foreign_raise(void)
{
    atomic_store_explicit(&kr__foreign_inbox, false, memory_order_relaxed);
    kr__model_error("%s", kr__foreign_msg());
}

void kr__foreign_reset(void)
{
    atomic_store(&foreign, NULL);
    atomic_flag_clear(&foreign_taken);
}

void (*kr__root_describe)(size_t off, char *buf, size_t cap);
void (*kr__identity_extra)(FILE *f);

/* kr_reverse_area outside --state reverse: the thread's scratch (freed with the thread),
 * or under time-sharing the running stack's own - another event of the thread may run
 * while this one is suspended. */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

struct kr__scratch {
    size_t n;
    unsigned char bytes[];
};

static void scratch_key_make(void)
{
    if (pthread_key_create(&scratch_key, free)) kr__die("kairos: cannot create a thread key");
}

static void *scratch_grow(void *p, size_t n)
{
    free(p);
    if (!(p = malloc(n))) kr__fatal_oom("the reverse area's scratch", n);
    return p;
}

void *kr__reverse_scratch(size_t n)
{
    struct kr__ult *u = kr__ult_self.cur;
    if (u) {
        if (u->scratch_n < n) {
            u->scratch = scratch_grow(u->scratch, n);
            u->scratch_n = n;
        }
        return memset(u->scratch, 0, n);
    }
    pthread_once(&scratch_once, scratch_key_make);
    struct kr__scratch *s = pthread_getspecific(scratch_key);
    if (!s || s->n < n) {
        s = scratch_grow(s, sizeof *s + n);
        s->n = n;
        pthread_setspecific(scratch_key, s);
    }
    return memset(s->bytes, 0, n);
}

void kr__run_event_timers(const struct kr__run *r, struct kr__lp *lp, struct kr__ev *e)
{
    struct kr__ev *x = kr__timer_dispatch(lp, e);
    if (!x) return;
    r->model->event(x->dest, x->k.ts, x->type, x->payload, x->size, lp->root);
    if (atomic_load_explicit(&kr__foreign_inbox, memory_order_relaxed)) kr__foreign_raise();
}

void kr__run_event_traced(const struct kr__run *r, struct kr__lp *lp, struct kr__ev *e)
{
    if ((e->pflags & (KR_PAYLOAD_TIMER | KR_PAYLOAD_TIMERS_IN)) && !(e = kr__timer_dispatch(lp, e)))
        return;
    unsigned kind = kr__ctx.mode == KR_MODE_COAST ? KR_SPAN_COAST : KR_SPAN_EVENT;
    uint64_t t0 = kr__trace_now();
    r->model->event(e->dest, e->k.ts, e->type, e->payload, e->size, lp->root);
    /* (in platform mode: on an event stack a tick may switch away from model code, and a
     * switch inside the span buffer's realloc let another event of the thread realloc it
     * too - a double free under ASan with --preempt tick) */
    sig_atomic_t app = kr__ult_enter();
    kr__trace_span(kind, t0, kr__trace_now() - t0, e->dest, e->k.ts, e->type);
    atomic_signal_fence(memory_order_seq_cst);
    kr__ult_self.app = app;
    if (atomic_load_explicit(&kr__foreign_inbox, memory_order_relaxed)) kr__foreign_raise();
}

uint64_t kr__lp_mix_flagged(uint64_t h, const struct kr__ev *e)
{
    h = e->pflags & KR_PAYLOAD_IMAGE ? kr__addrmap_mix_payload(h, e->payload, e->size)
                                     : kr__mix_bytes(h, e->payload, e->size);
    if (!(e->pflags & KR_PAYLOAD_CANCELLED)) return h;
    struct kr__run *r = kr__ctx.run; /* (each thread commits with its own pool in context) */
    r->counters[kr__ctx.pool - r->pools].timers_cancelled++;
    return kr__mix(h, 0xCA4CE1ull);
}

FILE *kr__emit_file;

/* kairos resume: stdout is cut to the snapshot's output before the first text; false if
 * that failed (reported as a failed write). */
static bool cut_first(struct kr__ctx *c)
{
    if (!c || !c->run || !c->run->out.cut_pending) return true;
    kr__output_cut(c->run);
    return !kr__out_errno;
}

/* Text that reached the run's stdout, in its hash and byte count (what a snapshot and a
 * resume check). */
static void out_counted(const struct kr__ctx *c, const char *text, size_t len)
{
    if (!c || !c->run) return;
    struct kr__run *r = c->run;
    r->out.hash = kr__out_hash(r->out.hash, text, len);
    r->out.bytes += len;
}

/* Whether committed output may go to stdout now: no write failed, it is not closed, and
 * what a resumed run's snapshot says was out already is cut (cut_first). */
static inline bool stdout_takes(struct kr__ctx *c)
{
    return !kr__out_errno && !kr__out_closed && cut_first(c);
}

/* (Committed output to stdout is counted and hashed byte by byte - FNV-1a, so that
 * however it was cut into writes - for snapshots: resume checks the file it appends to.) */
void kr__emit_direct(struct kr__ctx *c, const char *text, size_t len)
{
    /* (after a write failed nothing more goes out: what is written stays a prefix of the
     * committed output, without a hole; the next flush reports the first failure) */
    FILE *f = kr__emit_file ? kr__emit_file : stdout;
    if (f == stdout && !stdout_takes(c)) return;
    if (fwrite(text, 1, len, f) < len && f == stdout) {
        kr__out_errno = errno ? errno : EIO; /* (not counted: a snapshot says what is out) */
        return;
    }
    if (!kr__emit_file) out_counted(c, text, len);
}

uint64_t kr__out_hash(uint64_t h, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h;
}

void kr__run_ended(struct kr__run *r, bool by_done, kr_time next)
{
    r->ended_by_done = by_done;
    r->interrupted = by_done || !(next < r->cfg->end) ? 0 : kr__interrupted();
    if (r->interrupted) r->end_key = kr__key_at(next);
    else if (!by_done) r->end_key = kr__key_at(r->cfg->end);
}

static void peak(_Atomic size_t *p, size_t v)
{
    size_t cur = atomic_load_explicit(p, memory_order_relaxed);
    while (v > cur && !atomic_compare_exchange_weak_explicit(p, &cur, v, memory_order_relaxed,
                                                             memory_order_relaxed)) {
    }
}

bool kr__memory_check(struct kr__run *r, const struct kr__mem *m)
{
    size_t all = m->events + m->ckpts + m->states;
    peak(&r->mem_peak[0], m->events);
    peak(&r->mem_peak[1], m->ckpts);
    peak(&r->mem_peak[2], m->states);
    peak(&r->mem_peak[3], all);
    return r->cfg->memory_max && all > r->cfg->memory_max;
}

/* n bytes as "812 bytes", "12.5 KiB", "3.0 MiB" or "1.2 GiB" into buf (32 bytes). */
static const char *bytes_text(char *buf, size_t n)
{
    static const char *unit[] = { "KiB", "MiB", "GiB", "TiB" };
    if (n < 1024) {
        snprintf(buf, 32, "%zu bytes", n);
        return buf;
    }
    double v = (double)n / 1024.0;
    unsigned u = 0;
    for (; v >= 1024.0 && u < 3; u++) v /= 1024.0;
    snprintf(buf, 32, "%.1f %s", v, unit[u]);
    return buf;
}

void kr__memory_msg(const struct kr__run *r, const struct kr__mem *m, kr_time at, char *buf,
                    size_t cap)
{
    char b[4][32];
    snprintf(buf, cap, "--memory-max %s is below what this run needs at virtual time %.17g: "
             "%s (pending events %s, LP states %s), which every engine holds; raise "
             "--memory-max", bytes_text(b[0], r->cfg->memory_max), at,
             bytes_text(b[1], m->pending + m->states), bytes_text(b[2], m->pending),
             bytes_text(b[3], m->states));
}

void kr__memory_need(struct kr__run *r, const struct kr__mem *m, kr_time at)
{
    kr__memory_check(r, m);
    if (!kr__memory_need_over(r, m)) return;
    char msg[512];
    kr__memory_msg(r, m, at, msg, sizeof msg);
    kr__fail(&r->fail, KR_ERR_RESOURCE, "%s", msg);
    longjmp(*kr__ctx.bail, 1); /* (kr__guarded: the run's failure) */
}

int kr__guarded(struct kr__run *r, void (*fn)(void *), void *arg)
{
    jmp_buf bail;
    jmp_buf *volatile outer = kr__ctx.bail;
    if (setjmp(bail)) {
        kr__ctx.bail = outer;
        kr__ctx.mode = KR_MODE_NONE;
        kr__watch_settle(&kr__watch_callbacks); /* (init, finish: a callback left running) */
        return r->fail.status;
    }
    kr__ctx.bail = &bail;
    fn(arg);
    kr__ctx.bail = outer;
    return KR_OK;
}

/* A model error no engine defers: the run's failure, if this thread has a bail point. The
 * message is copied (it may live in the failing thread's buffer); this may be a signal
 * handler, which the jump leaves (the handlers run with SA_NODEFER: nothing stays blocked). */
static void bail_out(const char *msg)
{
    jmp_buf *b = kr__ctx.bail;
    struct kr__run *r = kr__ctx.run;
    if (!b || !r) return;
    kr__ctx.bail = NULL;
    kr__fail(&r->fail, KR_ERR_MODEL, "%s", msg);
    longjmp(*b, 1);
}

bool kr__overrun_lp(kr_lp id, char *buf, size_t cap)
{
    const struct kr__run *r = kr__run_current;
    if (!r || !r->lp_mem || id >= r->n) return false;
    const struct kr__area *ar = kr__arena_overrun(&kr__lp_at(r, id)->arena);
    if (!ar) return false;
    snprintf(buf, cap,
             "model '%s', LP %llu: its state was written past the end of its "
             "kr_malloc memory (beyond the last %zu-byte block of an area), which corrupted the "
             "heap; run with --sync sequential --check to find the event",
             r->model->name, (unsigned long long)id, kr__arena_class_bytes(ar->cls));
    return true;
}

bool kr__overrun_find(char *buf, size_t cap)
{
    const struct kr__run *r = kr__run_current;
    for (kr_lp id = r ? r->lo : 0; r && id < r->hi; id++)
        if (kr__overrun_lp(id, buf, cap)) return true;
    return false;
}

void kr__alien_report(const struct kr__run *r, kr_lp id, const struct kr__alien *al)
{
    static _Atomic bool said;
    if (atomic_exchange(&said, true)) return; /* one warning a run */
    char where[320];
    if (kr__ctx.mode == KR_MODE_EVENT) kr__ctx_where(where, sizeof where);
    else
        snprintf(where, sizeof where, "model '%s', LP %llu", r->model->name,
                 (unsigned long long)id);
    fprintf(stderr, "kairos: warning: %s: its state holds an address (%#llx, byte %zu of a "
            "%zu-byte block) that points outside its kr_malloc memory and the program image, "
            "into %s: the run digest cannot name what it points at, so it may differ from run "
            "to run. Keep pointers to kr_malloc memory, constants and functions in the state; "
            "keep anything else out of it (a number that only looks like an address is "
            "harmless)\n", where, (unsigned long long)al->word, al->offset, al->block, al->where);
}

size_t kr__query_answer(struct kr__ctx *c, kr_lp dest, const void *q, size_t size, void *ans,
                        size_t cap)
{
    struct kr__ctx was = *c;
    c->asker = c->id;
    c->lp = kr__lp_at(c->run, dest);
    c->id = dest;
    c->mode = KR_MODE_QUERY;
    c->bundle = NULL;
    c->nbundle = 0;
    c->qdepth++;
    /* (--check: the handler must leave the state as it found it - a write through the const
     * pointer would change only the engines that answer from the state in memory) */
    struct kr__alien al = { 0 };
    bool check = c->run->cfg->check;
    uint64_t h = check ? kr__arena_hash(&c->lp->arena, c->lp->root, &al) : 0;
    size_t n = c->run->model->query(dest, c->now, q, size, c->lp->root, ans, cap);
    if (check && kr__arena_hash(&c->lp->arena, c->lp->root, &al) != h)
        kr__model_error("--check: the query handler changed the LP's state (a write through "
                        "the const state pointer?); a query must only read it");
    c->asker = was.asker;
    c->lp = was.lp;
    c->id = was.id;
    c->mode = was.mode;
    c->bundle = was.bundle;
    c->nbundle = was.nbundle;
    c->qdepth = was.qdepth;
    return n;
}

/* The message is formatted into a per-thread buffer, not the heap: a model crash inside
 * malloc leaves its lock held. Engines that keep the message copy it. */
_Noreturn void kr__model_error(const char *fmt, ...)
{
    static __thread char where[320], what[1024], msg[1376];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    kr__ctx_where(where, sizeof where);
    snprintf(msg, sizeof msg, "%s: %s", where, what);
    if (kr__ctx.mode == KR_MODE_COMMIT) kr__output_close(); /* (see kr__commit_deliver) */
    if (!kr__ctx.fatal) {
        if (kr__ctx.ops && kr__ctx.ops->fail) kr__ctx.ops->fail(&kr__ctx, msg);
        bail_out(msg);
    }
    kr__die(msg); /* (a crash that may have left locks held, or a thread without a bail) */
}

bool kr__span_refused(struct kr__ctx *c, struct kr__ev *e)
{
    const struct kr__ev *ev = c->ev;
    if (!ev || !(ev->flags & KR_EVF_SPAN) || e->k.ts >= ev->k.ts + ev->dur) return false;
    kr_time t = e->k.ts, end = ev->k.ts + ev->dur, dur = ev->dur;
    kr_lp d = e->dest;
    kr__pool_put(c->pool, e);
    kr__model_error("event to LP %llu at %.17g starts before this event ends at %.17g (start + "
                    "span %g, from kr_schedule_span): under --sync conservative an event may "
                    "only schedule events at or after its own end; shorten its span or use "
                    "--sync optimistic", (unsigned long long)d, t, end, dur);
    return true;
}
