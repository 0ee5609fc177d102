/* clock.c - safe events' bounds (tw.h): each thread's clock - the least time it may still
 * send at - and its quiet record - its lowest pending key while it has sent nothing since -,
 * published from the worker loop and read by the others; what lies below both of every
 * other thread is safe (no rollback can reach it). Also the stop of safe events when the
 * run stops or a snapshot is due, and the clocks' start. */
#include <math.h>
#include "optimistic/tw.h"
#include "optimistic/clock.h"
#include "optimistic/ranks.h"
#include "base/error.h"

/* Before draining: the least of the other threads' clocks. A message drained after this
 * was pushed after its sender published the clock read here, so it lies at or above it. */
void tw_safe_read(struct tw_thread *th)
{
    th->clk.safe_prev = th->clk.safe;
    th->clk.safe = tw_clock_min(th->g, th->id);
}

/* The windows scheme with spans (tw_settings.spans): an event sent with kr_schedule_span
 * sends nothing before its end (checked: kr__span_refused), and any other event nothing to
 * another thread before its time plus the lookahead; what it sends to this thread's own
 * LPs starts no earlier, and so on. So nothing that descends from a pending event e
 * reaches another thread before its end e.ts + max(span, lookahead), and the least end of
 * the pending events bounds what this thread may still send, as the least completion of
 * the events in flight bounds Horizon's (paper 003). The heap is searched from its top
 * down to the nodes at or past the least end found so far (every event below a node is
 * at or after it), at most TW_SPAN_VISITS of them: a node left unvisited counts as its time
 * plus the lookahead, a lower bound of everything below it. Only when the top itself ends
 * past its time plus the lookahead can the floor move, so a model that sends no span pays
 * one test per publish. */
#define TW_SPAN_VISITS 64

static inline kr_time span_end(const struct kr__ev *e, kr_time la)
{
    return e->k.ts + ((e->flags & KR_EVF_SPAN) && e->dur > la ? e->dur : la);
}

/* The earlier of best and the end of e's span (a cancelled event has none). */
static inline kr_time min_end(const struct kr__ev *e, kr_time la, kr_time best)
{
    if (e->st == KR_EV_CANCELLED) return best;
    kr_time end = span_end(e, la);
    return end < best ? end : best;
}

static kr_time span_floor(const struct tw_thread *th, const struct kr__ev *top, kr_time la)
{
    kr_time best = span_end(top, la);
    if (!(best > top->k.ts + la)) return best;
    const struct kr__heap *h = &th->heap;
    size_t stack[TW_SPAN_VISITS + 2], sp = 0;
    unsigned visits = 0;
    stack[sp++] = 1;
    stack[sp++] = 2;
    while (sp) {
        size_t i = stack[--sp];
        if (i >= h->n || kr__heap_ts(h, i) + la >= best) continue;
        if (++visits > TW_SPAN_VISITS || sp + 2 > TW_SPAN_VISITS + 2) {
            best = kr__heap_ts(h, i) + la; /* (unvisited: its time plus the lookahead) */
            continue;
        }
        best = min_end(kr__heap_ev(h, i), la, best);
        stack[sp++] = 2 * i + 1;
        stack[sp++] = 2 * i + 2;
    }
    return best;
}

/* The least (ts, gen) that can reach another thread from what is pending here (top: the
 * least pending event): tw_after(top), or with spans the pending events' least end. */
static struct kr__key send_floor(const struct tw_thread *th, const struct kr__ev *top)
{
    const struct tw_global *g = th->g;
    struct kr__key a = tw_after(g, &top->k);
    if (!g->cf.spans) return a;
    kr_time f = span_floor(th, top, g->cf.lookahead);
    return f > a.ts ? kr__key_at(f) : a;
}

/* With spans, a floor at the top's time may lie later: the least span end over the heap,
 * bounded by the safe time (plus the lookahead) if the thread has LPs. */
static kr_time spans_floor(const struct tw_thread *th, const struct kr__ev *top, kr_time la)
{
    kr_time s = th->nlps ? th->clk.safe + la : INFINITY, e = span_floor(th, top, la);
    return e < s ? e : s;
}

/* The least time this thread may still send at: its floor plus the lookahead (the floor:
 * its least pending event, or its safe time, which what is yet to arrive lies at or
 * above), or with spans the least end of what is pending, if that is lower. */
static kr_time clock_floor(const struct tw_thread *th, const struct kr__ev *top)
{
    kr_time la = th->g->cf.lookahead;
    kr_time f = top ? top->k.ts : INFINITY;
    if (th->clk.safe < f && th->nlps) f = th->clk.safe; /* (without LPs nothing can reach it) */
    f += la;
    if (!th->g->cf.spans || !top || f != top->k.ts + la) return f;
    return spans_floor(th, top, la);
}

/* The clock moved to f: published, unless a backlog the receiver has no room for yet holds
 * it where it is (a message put before the clock moves must be visible by the time it has). */
static void clock_send(struct tw_thread *th, kr_time f)
{
    struct tw_global *g = th->g;
    if (th->out.n && (tw_post_publish(th) & KR_CHAN_KEPT)) return;
    if (g->cf.check && f < th->clk.sent)
        kr__internal_error("thread %u's clock went back from %.17g to %.17g", th->id,
                           th->clk.sent, f);
    th->clk.sent = f;
    atomic_store_explicit(&g->clock[th->id].bits, kr__time_bits(f), memory_order_release);
}

/* After draining: publish floor + lookahead, where the floor bounds every event this
 * thread may still run (pending ones, and re-executions after stragglers, which arrive at
 * or above `safe`). Written only when it moved, and at most every TW_CLOCK_TURNS turns
 * unless `now` or `clock_eager` (tw.h); the quiet record, which every send voids, only then:
 * with no lookahead the clocks stand still and the records are all there is, and writing
 * one each turn cost queueing 7%. */
void tw_clock_publish(struct tw_thread *th, const struct kr__ev *top, bool now)
{
    bool turn = now || !(++th->clk.turn & (TW_CLOCK_TURNS - 1));
    if (!turn && !th->clk.eager) return;
    if (turn) tw_quiet_publish(th, top);
    struct tw_global *g = th->g;
    kr_time f = clock_floor(th, top);
    if (g->net.on) tw_rank_clock_publish(th, f); /* (its stamp's part: records to ranks) */
    if (f != th->clk.sent) clock_send(th, f);
}

/* Queries: whether line l already names the rest of key k (its owner's own line). */
static bool tw_qline_same(const struct tw_qline *l, const struct kr__key *k)
{
    return atomic_load_explicit(&l->tie, memory_order_relaxed) == k->tie &&
           atomic_load_explicit(&l->src, memory_order_relaxed) == k->src &&
           atomic_load_explicit(&l->seq, memory_order_relaxed) == k->seq;
}

/* Whether th's valid record already says what it would write now (key k). (With queries
 * the whole key counts: a new top of the same time and generation from another sender,
 * left unwritten, once let another thread's asker wait for an event that had already run,
 * while this thread's asker waited for it: found by fuzz_model.) */
static bool quiet_same(const struct tw_thread *th, const struct tw_clock *c,
                       const struct kr__key *k)
{
    return atomic_load_explicit(&c->top_bits, memory_order_relaxed) == kr__time_bits(k->ts) &&
           atomic_load_explicit(&c->top_gen, memory_order_relaxed) == k->gen &&
           atomic_load_explicit(&c->taken, memory_order_relaxed) == th->clk.qtaken &&
           (!th->g->cf.queries || tw_qline_same(&th->g->qline[th->id], k));
}

/* What the record names: the least pending key, or with spans the send floor itself
 * (tw_quiet_try). */
static struct kr__key quiet_key(const struct tw_thread *th, const struct kr__ev *top)
{
    if (!top) return kr__key_at(INFINITY);
    return th->g->cf.spans ? send_floor(th, top) : top->k;
}

static void qline_write(struct tw_thread *th, const struct kr__key *k)
{
    struct tw_qline *l = &th->g->qline[th->id];
    atomic_store_explicit(&l->tie, k->tie, memory_order_relaxed);
    atomic_store_explicit(&l->src, k->src, memory_order_relaxed);
    atomic_store_explicit(&l->seq, k->seq, memory_order_relaxed);
}

/* The latest time a quiet record named (spans: the latest whose undoing keeps the floor
 * named). */
static inline void note_named(struct tw_thread *th, const struct kr__key *k)
{
    kr_time named = th->g->cf.spans ? k->ts - th->g->cf.lookahead : k->ts;
    if (named > th->clk.top_max) th->clk.top_max = named;
}

void tw_quiet_publish(struct tw_thread *th, const struct kr__ev *top)
{
    if (th->clk.talked) {
        th->clk.talked = false;
        return;
    }
    struct tw_clock *c = &th->g->clock[th->id];
    struct kr__key k = quiet_key(th, top);
    uint64_t bits = kr__time_bits(k.ts);
    if (!(th->clk.seq & 1)) {
        if (quiet_same(th, c, &k)) return; /* (unchanged: no write) */
        tw_quiet_void(th);
    }
    atomic_thread_fence(memory_order_release); /* (the fields after the odd sequence) */
    atomic_store_explicit(&c->top_bits, bits, memory_order_relaxed);
    atomic_store_explicit(&c->top_gen, k.gen, memory_order_relaxed);
    if (th->g->cf.queries) qline_write(th, &k); /* (the rest of the key, same sequence) */
    note_named(th, &k);
    atomic_store_explicit(&c->sent, th->clk.qsent, memory_order_relaxed);
    atomic_store_explicit(&c->taken, th->clk.qtaken, memory_order_relaxed);
    atomic_store_explicit(&c->seq, ++th->clk.seq, memory_order_seq_cst);
}

/* Queries: the whole key of a quiet record's top k, the least so far in *whole. */
static void tw_quiet_whole(const struct tw_qline *l, struct kr__key *k, struct kr__key *whole)
{
    k->tie = atomic_load_explicit(&l->tie, memory_order_relaxed);
    k->src = atomic_load_explicit(&l->src, memory_order_relaxed);
    k->seq = atomic_load_explicit(&l->seq, memory_order_relaxed);
    if (kr__key_lt(k, whole)) *whole = *k;
}

/* Thread i's quiet record into the sums and least tops of tw_quiet_try; false if void. */
static bool tw_quiet_read(const struct tw_global *g, unsigned i, uint64_t *seqs, uint64_t *sent,
                          uint64_t *taken, struct kr__key *lo, struct kr__key *whole)
{
    struct tw_clock *c = &g->clock[i];
    uint32_t q = atomic_load_explicit(&c->seq, memory_order_seq_cst);
    if (q & 1) return false;
    *seqs += q;
    *sent += atomic_load_explicit(&c->sent, memory_order_relaxed);
    *taken += atomic_load_explicit(&c->taken, memory_order_relaxed);
    struct kr__key k = kr__key_at(tw_time_of(atomic_load_explicit(&c->top_bits,
                                                                  memory_order_relaxed)));
    k.gen = atomic_load_explicit(&c->top_gen, memory_order_relaxed);
    if (tw_hop_lt(&k, lo)) *lo = k;
    if (g->cf.queries) tw_quiet_whole(&g->qline[i], &k, whole);
    return true;
}

/* Raise qbound from the other threads' quiet records (tw.h): each valid, all unchanged
 * between two reads (so at one moment in between they all held), and every message put was
 * taken. Sequences only grow, so equal sums mean each is unchanged; a try that would see
 * what the last failed one saw is skipped, and so is one while a record is void (threads
 * that talk: their lines are read each turn for the clocks anyway). */
/* What a try would see: the sum of the other records' sequences and this thread's
 * counts; false while a record is void (odd: being written). */
static bool quiet_mark(const struct tw_thread *th, uint64_t *mark)
{
    const struct tw_global *g = th->g;
    *mark = th->clk.qsent + th->clk.qtaken;
    for (unsigned i = 0; i < g->n; i++) {
        if (i == th->id) continue;
        uint32_t q = atomic_load_explicit(&g->clock[i].seq, memory_order_relaxed);
        if (q & 1) return false;
        *mark += q;
    }
    return true;
}

/* Read every other record twice: true if all were valid and unchanged in between, with
 * nothing in flight; then their least key in *lo (queries: the least whole key in *whole). */
static bool quiet_all(const struct tw_thread *th, struct kr__key *lo, struct kr__key *whole)
{
    const struct tw_global *g = th->g;
    uint64_t seqs = 0, sent = th->clk.qsent, taken = th->clk.qtaken;
    for (unsigned i = 0; i < g->n; i++)
        if (i != th->id && !tw_quiet_read(g, i, &seqs, &sent, &taken, lo, whole)) return false;
    atomic_thread_fence(memory_order_acquire);
    for (unsigned i = 0; i < g->n; i++)
        if (i != th->id) seqs -= atomic_load_explicit(&g->clock[i].seq, memory_order_seq_cst);
    return !seqs && sent == taken;
}

/* Every other thread is quiet, its least key lo (whole: the whole key, for queries): what
 * this thread may run safely rises to it. */
static void quiet_bound(struct tw_thread *th, const struct kr__key *lo,
                        const struct kr__key *whole)
{
    struct tw_global *g = th->g;
    struct kr__key b = g->cf.spans ? *lo : tw_after(g, lo); /* (spans: floors, send_floor) */
    if (tw_hop_lt(&th->clk.qbound, &b)) th->clk.qbound = b;
    if (kr__key_lt(&th->q.full, whole)) th->q.full = *whole;
}

void tw_quiet_try(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    if (g->net.on) return; /* (other ranks have no quiet records: only their stamps) */
    uint64_t mark;
    if (!quiet_mark(th, &mark) || mark == th->clk.last) return;
    th->clk.last = mark;
    struct kr__key lo = kr__key_at(INFINITY), whole = lo;
    if (quiet_all(th, &lo, &whole)) quiet_bound(th, &lo, &whole);
}

void tw_safe_stop(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    th->fast = false;
    tw_lone_leave(th);
    tw_window_unsafe(th); /* (a window of 0 relied on safe events) */
    uint64_t b = th->fast_hi >= 0 ? kr__time_bits(th->fast_hi) + 1 : 0; /* (0: none) */
    uint64_t cur = atomic_load_explicit(&g->end.safe_hi, memory_order_relaxed);
    while (b > cur && !atomic_compare_exchange_weak_explicit(&g->end.safe_hi, &cur, b,
                                                             memory_order_relaxed,
                                                             memory_order_relaxed)) {
    }
    atomic_fetch_add_explicit(&g->end.stop_acks, 1, memory_order_release);
    if (!th->retired) tw_gvt_maybe_start(th, true); /* (the round past them all is what
                                                      * is waited for) */
}

/* The least time of any thread's first event (inf: none). */
static kr_time lowest_top(struct tw_global *g)
{
    kr_time lo = INFINITY;
    for (unsigned t = 0; t < g->n; t++) {
        struct kr__ev *top = tw_top(&g->th[t]);
        if (top && top->k.ts < lo) lo = top->k.ts;
    }
    return lo;
}

/* Before the workers start (init done, its sends drained): no message can be sent below
 * the lowest pending event plus the lookahead, so that starts every clock. (Starting from
 * -inf, each thread's floor would wait for the other's forever.) */
void tw_clock_start(struct tw_global *g)
{
    kr_time lo = lowest_top(g);
    /* (across ranks: the least of all ranks, init's events between them included) */
    if (g->net.on) lo = tw_rank_begin(g, lo);
    /* (init may have set it; across ranks, any rank's. Queries: a query is asked at its
     * event's time, so the clocks cannot count on the lookahead) */
    g->cf.lookahead = g->cf.queries ? 0 : g->r->lookahead;
    for (unsigned t = 0; t < g->n; t++) {
        g->th[t].clk.sent = lo + g->cf.lookahead;
        atomic_store_explicit(&g->clock[t].bits, kr__time_bits(lo + g->cf.lookahead),
                              memory_order_relaxed);
        atomic_store_explicit(&g->clock[t].rbits, kr__time_bits(lo + g->cf.lookahead),
                              memory_order_relaxed);
    }
}

/* Safe events on or off, and its clock and quiet record at their start. */
static void clocks_init(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    const struct kr__run *r = th->r;
    unsigned t = th->id;
    /* (done() decides the end only later; queries need the bounds, and run no safe
     * event: tw_is_safe) */
    th->fast = (tw_options(r->cfg)->safe_events && !r->model->done) || g->cf.queries;
    th->clk.safe = th->clk.safe_prev = th->clk.sent = th->fast_hi = -INFINITY;
    th->clk.qbound = kr__key_at(-INFINITY);
    th->clk.seq = 1; /* (void until first written) */
    th->clk.top_max = -INFINITY;
    th->clk.last = UINT64_MAX;
    th->clk.turn = TW_CLOCK_TURNS - 1; /* the first turn publishes */
    atomic_init(&g->clock[t].bits, kr__time_bits(-INFINITY));
    atomic_init(&g->clock[t].now_bits, kr__time_bits(-INFINITY));
    atomic_init(&g->clock[t].seq, 1);
    atomic_init(&g->clock[t].top_gen, 0);
    atomic_init(&g->clock[t].top_bits, kr__time_bits(-INFINITY));
    atomic_init(&g->clock[t].sent, 0);
    atomic_init(&g->clock[t].taken, 0);
    atomic_init(&g->clock[t].rbits, kr__time_bits(-INFINITY));
}

const struct tw_module tw_mod_clocks = { .name = "clocks", .init = clocks_init };
