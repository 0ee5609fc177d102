/* rollback.c - undoing speculative work: periodic checkpoints, rollback to a key with
 * restore + silent re-execution (coasting forward), and cancellation of sent events with
 * antimessages: aggressive (at once) or lazy (--cancel lazy: the sends of an undone event
 * wait on it until it runs again, and only those it does not send alike again are
 * cancelled then; a receiver that ran one keeps its work). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "optimistic/tw.h"
#include "optimistic/preempt.h"
#include "optimistic/ranks.h"
#include "base/error.h"

void tw_coast(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *from);

/* One checkpoint in TW_CKPT_SAMPLE is timed: its cost (dt ns) feeds the interval's tuning. */
static void ckpt_timed(struct tw_thread *th, uint64_t dt)
{
    th->cnt->ck.ns += dt;
    th->cnt->ck.timed++;
    tw_cost_add(&th->ck.ck_cost, dt);
}

static inline void ckpt_counted(struct kr__counters *cnt, const struct kr__ckpt *c)
{
    cnt->ck.taken++;
    if (c->full) {
        cnt->ck.full++;
        cnt->ck.full_bytes += c->bytes;
    } else {
        cnt->ck.incr_bytes += c->bytes;
    }
    cnt->ck.bytes += c->bytes;
}

/* Save lp's state as it is now: before event `at`, or as the new base (at == NULL; the
 * caller trims the chain). Full every ckpt_full_every checkpoints, else incremental. */
void tw_take_ckpt(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *at)
{
    struct tw_lp *tl = tw_lp_of(lp);
    uint64_t w[KR_CKPT_WORDS];
    kr__lp_save_words(lp, w);
    /* Full mode keeps no chain: finding the tip reads a cold event and checkpoint, which
     * cost PHOLD-std 10% at 4096 LPs. */
    struct kr__ckpt *tip = th->g->cf.chained ? tw_chain_tip(tl) : NULL;
    bool full = !tip || tl->ckpt_full_next || tip->depth + 1u >= th->g->cf.ckpt_full_every;
    bool timed = (th->cnt->ck.taken & (TW_CKPT_SAMPLE - 1)) == 0;
    uint64_t t0 = timed ? kr__clock_ns() : 0;
    uint64_t s0 = kr__trace_run ? kr__trace_now() : 0;
    struct kr__ckpt *c = kr__ckpt_take(&th->blobs, &lp->arena, w, tip, full);
    if (__builtin_expect(kr__trace_run, 0))
        kr__trace_span(KR_SPAN_CKPT, s0, kr__trace_now() - s0, tl->id, at ? at->k.ts : NAN,
                       (uint32_t)c->bytes);
    if (timed) ckpt_timed(th, kr__clock_ns() - t0);
    tl->ckpt_full_next = false;
    ckpt_counted(th->cnt, c);
    tl->since_ckpt = 0;
    if (at) {
        c->span = at->dur; /* (intact while pending: msg/event.h) */
        at->ckpt = c;
        at->flags |= KR_EVF_CKPT;
        tl->ckpt_ev = at;
    } else {
        tl->base = c;
    }
}

/* Give back the checkpoints older than the newest full one at or before c: no restore can
 * reach past it. */
void tw_trim_chain(struct tw_thread *th, struct kr__ckpt *c)
{
    while (!c->full) c = c->prev;
    struct kr__ckpt *x = c->prev;
    c->prev = NULL;
    while (x) {
        struct kr__ckpt *n = x->prev;
        kr__ckpt_release(&th->blobs, x);
        x = n;
    }
}

static void restore(struct tw_thread *th, struct kr__lp *lp, const struct kr__ckpt *c)
{
    uint64_t w[KR_CKPT_WORDS];
    uint64_t t0 = kr__clock_ns();
    kr__ckpt_restore(&lp->arena, c, w);
    th->cnt->ck.restore_ns += kr__clock_ns() - t0;
    kr__lp_load_words(lp, w);
    th->cnt->ck.restores++;
}

/* Cancel an event this thread sent (the sender side of an antimessage). */
static void cancel_child(struct tw_thread *th, struct kr__ev *c)
{
    unsigned owner = tw_owner(th->g, c->dest);
    th->cnt->antimessages++;
    if (tw_remote(th->g, owner)) { /* (its copy: the event is on another rank; a local
                                    * child's fields but dest and sib are its receiver's) */
        tw_rank_cancel(th, c);
        return;
    }
    if (owner == th->id) {
        tw_work_push(th, c, 1);
        return;
    }
    struct kr__ev *a = kr__pool_get(th->pool, 0);
    a->k = c->k;
    a->dest = c->dest;
    a->flags = KR_EVF_ANTI;
    a->xflags = 0; /* (the slot may have been a sendback request: optimism.c) */
    a->child = c;
    a->size = 0;
    tw_transport_send(th, owner, a);
}

static void cancel_list(struct tw_thread *th, struct kr__ev *c)
{
    for (struct kr__ev *n; c; c = n) {
        n = c->sib;
        cancel_child(th, c);
    }
}

void tw_cancel_children(struct tw_thread *th, struct kr__ev *e)
{
    cancel_list(th, e->child);
}

/* Lazy: an undone event's sends to other ranks go at once (their copies lead the list);
 * those to this process's threads stay on it (KR_EVX_LAZY) until it runs or is cancelled. */
static void undo_sends(struct tw_thread *th, struct kr__ev *e, struct kr__ev *c)
{
    if (!th->g->cf.lazy || atomic_load_explicit(&th->g->sn.req, memory_order_relaxed)) {
        cancel_list(th, c); /* (a snapshot holds no sends kept on an undone event) */
        return;
    }
    if (e->flags & KR_EVF_RKIDS) {
        for (bool more = true; more; ) {
            struct kr__ev *n = c->sib;
            more = c->flags & KR_EVF_RKIDS;
            cancel_child(th, c);
            c = n;
        }
    }
    e->child = c;
    if (c) e->xflags |= KR_EVX_LAZY;
}

void tw_lazy_start(struct tw_thread *th, struct kr__ev *e)
{
    th->lazy = e->child;
    e->child = NULL;
    e->xflags = 0;
}

/* Whether the kept send c is the one e makes again: destination, key, type, payload. */
static inline bool same_send(const struct kr__ev *c, const struct kr__ev *e)
{
    return c->dest == e->dest && !kr__key_cmp(&c->k, &e->k) && c->type == e->type &&
           c->size == e->size && (!e->size || !memcmp(c->payload, e->payload, e->size));
}

/* Sent again alike (destination, key, type and payload: the key's sequence number comes
 * from the restored state, so it repeats too): the old one stays where it is, possibly run
 * already, and the new one is dropped. A kept event may be another thread's: only fields
 * its receiver never writes are read. */
bool tw_lazy_keep(struct tw_thread *th, struct kr__ev *parent, struct kr__ev *e)
{
    for (struct kr__ev **p = &th->lazy; *p; p = &(*p)->sib) {
        struct kr__ev *c = *p;
        if (!same_send(c, e)) continue;
        *p = c->sib;
        tw_child_link(parent, c);
        kr__pool_put(th->pool, e);
        th->cnt->lazy_kept++;
        return true;
    }
    return false;
}

/* Bundles: a member x of the bundle about to run held kept sends of its own undone run
 * (as the bundle's first member then): the bundle's run may send them alike again. */
void tw_lazy_join(struct tw_thread *th, struct kr__ev *x)
{
    struct kr__ev **p = &th->lazy;
    while (*p) p = &(*p)->sib;
    *p = x->child;
    x->child = NULL;
    x->xflags = 0;
}

void tw_lazy_end(struct tw_thread *th)
{
    struct kr__ev *c = th->lazy;
    th->lazy = NULL;
    cancel_list(th, c);
    tw_flush_local(th); /* (cancellations of its own events) */
}

/* The receiver side: c is owned by this thread. */
void tw_cancel(struct tw_thread *th, struct kr__ev *c)
{
    if (th->g->cf.check && c->st == KR_EV_FREE)
        kr__internal_error("thread %u cancels a freed event (LP %llu, time %.17g): a safe "
                           "event was reached by an antimessage", th->id,
                           (unsigned long long)c->dest, c->k.ts);
    if (c->st == KR_EV_PROCESSED || c->st == KR_EV_SUSPENDED) { /* (suspended: abandoned) */
        struct kr__key k = tw_key_floor(th, &c->k); /* (a bundle runs again without it) */
        tw_rollback(th, kr__lp_at(th->r, c->dest), &k, true);
    }
    if (c->xflags & KR_EVX_LAZY) { /* (its rollback just now, or an earlier one, kept sends) */
        cancel_list(th, c->child);
        c->child = NULL;
        c->xflags = 0;
    }
    c->st = KR_EV_CANCELLED; /* pending or parked: dropped when it surfaces */
}

static void unpark(struct tw_thread *th, struct tw_lp *tl)
{
    struct kr__ev *p = tl->fail->parked;
    tw_fail_clear(tl);
    while (p) {
        struct kr__ev *n = p->next;
        if (p->st == KR_EV_PARKED) p->st = KR_EV_PENDING;
        kr__heap_push(&th->heap, p);
        p = n;
    }
}

/* lp's newest processed event, taken off its list (--check: above the committed horizon). */
static struct kr__ev *unlink_tail(const struct tw_thread *th, struct tw_lp *tl)
{
    struct kr__ev *e = tl->tail;
    if (th->g->cf.check && kr__key_lt(&e->k, &th->cm.applied))
        kr__internal_error("thread %u rolls back LP %llu's event at %.17g, below the committed "
                           "horizon %.17g", th->id, (unsigned long long)e->dest, e->k.ts,
                           th->cm.applied.ts);
    tl->tail = e->prev;
    if (tl->tail) tl->tail->next = NULL;
    else tl->head = NULL;
    return e;
}

/* The windows scheme with spans: an undone event, pending again, ends where it did - its
 * checkpoint kept its span, which the processed list's link overwrote - and is checked
 * alike when it runs again (elsewhere nothing reads it). Its flags to keep. */
static uint8_t keep_span(const struct tw_thread *th, struct kr__ev *e)
{
    if (!th->g->cf.spans || !(e->flags & KR_EVF_SPAN) || !e->ckpt) return 0;
    e->dur = e->ckpt->span;
    return KR_EVF_SPAN;
}

/* Undo one processed event (the tail); returns its checkpoint, if it had one. */
static struct kr__ckpt *undo_tail(struct tw_thread *th, struct kr__lp *lp, bool cancel)
{
    struct tw_lp *tl = tw_lp_of(lp);
    struct kr__ev *e = unlink_tail(th, tl);
    uint8_t keep = keep_span(th, e);
    if (th->g->cf.reverse) tw_rev_undo(th, lp, e); /* (and its record goes) */
    struct kr__ev *sent = e->child;
    e->child = NULL;
    if (cancel) undo_sends(th, e, sent); /* (e->child: what lazy cancellation keeps) */
    if (tl->fail && e == tl->fail->poison) unpark(th, tl); /* (and the failure record goes) */
    if (e == tl->first_unc) tl->first_unc = NULL;
    th->uncommitted--;
    struct kr__ckpt *c = th->g->cf.reverse ? NULL : e->ckpt;
    e->ckpt = NULL;
    e->flags = keep;
    e->st = KR_EV_PENDING;
    kr__heap_push(&th->heap, e);
    return c;
}

/* Undo every processed event of lp with key >= k, then rebuild the state just before k.
 * A preempted event of lp (always later than k: see tw_deliver) is abandoned first. */
static void count_rollback(struct tw_thread *th, const struct tw_lp *tl, uint64_t undone,
                           kr_time to)
{
    if (__builtin_expect(kr__trace_run, 0))
        kr__trace_span(KR_SPAN_ROLLBACK, kr__trace_now(), 0, tl->id, to, (uint32_t)undone);
    th->cnt->rollbacks++;
    th->cnt->rolled_back += undone;
    if (__builtin_expect(th->r->lpstat != NULL, 0)) { /* --lp-stats */
        struct kr__lpstat *s = &th->r->lpstat[tl->id - th->r->lo];
        s->rollbacks++;
        s->rolled_back += undone;
    }
}

/* The state from the earliest undone event's own checkpoint, first (released after). */
static void rebuild_at(struct tw_thread *th, struct kr__lp *lp, struct kr__ckpt *first)
{
    struct tw_lp *tl = tw_lp_of(lp);
    restore(th, lp, first);
    if (!kr__ckpt_redirty(&lp->arena, first)) tl->ckpt_full_next = true;
    kr__ckpt_release(&th->blobs, first);
    /* (re-save before the next event, whatever K is by then: the default interval moves
     * between 1 and 16, and with K grown in between the next events took none, and a
     * rollback to them found no restore point) */
    tl->since_ckpt = TW_CKPT_NOW;
}

/* After undoing: lp's state just before the undone events, from `first` (the checkpoint
 * of the earliest of them: no coasting; first leaves the chain) or from the newest
 * checkpoint before them, coasting forward over the events after it. */
static void rebuild(struct tw_thread *th, struct kr__lp *lp, struct kr__ckpt *first)
{
    struct tw_lp *tl = tw_lp_of(lp);
    struct kr__ev *c = tl->tail;
    while (c && !c->ckpt) c = c->prev;
    tl->ckpt_ev = c;
    if (first) {
        rebuild_at(th, lp, first);
        return;
    }
    restore(th, lp, c ? c->ckpt : tl->base);
    uint64_t before = th->cnt->coasted;
    tw_coast(th, lp, c ? c : tl->head);
    tl->since_ckpt = (uint32_t)(th->cnt->coasted - before);
}

/* Undo lp's processed events from key k on, latest first; *first ends as the earliest's
 * checkpoint (the later ones released). The number undone. */
static uint64_t undo_from(struct tw_thread *th, struct kr__lp *lp, const struct kr__key *k,
                          bool cancel, struct kr__ckpt **first)
{
    struct tw_lp *tl = tw_lp_of(lp);
    uint64_t undone = 0;
    while (tl->tail && !kr__key_lt(&tl->tail->k, k)) {
        if (*first) kr__ckpt_release(&th->blobs, *first);
        *first = undo_tail(th, lp, cancel);
        undone++;
    }
    return undone;
}

void tw_rollback(struct tw_thread *th, struct kr__lp *lp, const struct kr__key *k, bool cancel)
{
    struct tw_lp *tl = tw_lp_of(lp);
    struct kr__ckpt *first = NULL; /* checkpoint of the earliest undone event, if any */
    bool abandoned = tw_suspended_on(th, lp);
    if (abandoned) first = tw_ts_abandon(th, lp, cancel);
    uint64_t undone = undo_from(th, lp, k, cancel, &first);
    if (!undone && !abandoned) return;
    tw_set_lvt(th, lp);
    if (undone) count_rollback(th, tl, undone, k->ts);
    kr__lp_out_drop_from(lp, k);
    if (!th->g->cf.reverse) rebuild(th, lp, first); /* (reverse: undo_tail reversed each) */
}

/* The median of the samples in c (at least half of TW_COST_SAMPLES), or 0 if fewer. */
static uint64_t cost_median(const struct tw_costs *c)
{
    unsigned n = c->n < TW_COST_SAMPLES ? c->n : TW_COST_SAMPLES;
    if (n < TW_COST_SAMPLES / 2) return 0;
    uint32_t v[TW_COST_SAMPLES];
    for (unsigned i = 0; i < n; i++) { /* (insertion sort: 16 at most) */
        unsigned j = i;
        for (; j > 0 && v[j - 1] > c->ns[i]; j--) v[j] = v[j - 1];
        v[j] = c->ns[i];
    }
    return v[n / 2];
}

/* The default interval: 1 while an event costs at least TW_CKPT_CHEAP checkpoints (tw.h),
 * else the configured one; from the medians of recent samples. */
void tw_ckpt_by_cost(struct tw_thread *th)
{
    uint64_t cs = cost_median(&th->ck.ck_cost), ce = cost_median(&th->ck.ev_cost);
    if (!cs || !ce) return;
    th->ck.interval = ce >= TW_CKPT_CHEAP * cs ? 1 : th->g->cf.ckpt_interval;
}

/* --ckpt-interval auto. Per event, checkpointing every K events costs C_s / K, and each
 * rollback coasts forward over about K / 2 events of cost C_e; with r rollbacks per event
 * the sum C_s / K + r K C_e / 2 is least at K = sqrt(2 C_s / (r C_e)) (the classic
 * checkpoint-interval trade-off of Lin et al. and Preiss et al.). C_s and C_e are the
 * medians of the thread's recent timings (tw_costs: means since the previous step were
 * moved by cold starts and descheduled samples), r is counted since the previous step;
 * K moves at most 2x per step to damp noise. */
static double clamp(double x, double lo, double hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

/* Whether enough events ran since the last tuning, with new samples of both costs. */
static bool tune_due(const struct kr__counters *c, const struct tw_tune *t, uint64_t events)
{
    return events >= 65536 && c->ck.timed != t->checkpoints && c->events_timed != t->timed;
}

void tw_tune_ckpt(struct tw_thread *th)
{
    struct kr__counters *c = th->cnt;
    struct tw_tune *t = &th->ck.tune;
    uint64_t events = c->processed - t->processed;
    if (!tune_due(c, t, events)) return;
    double cs = (double)cost_median(&th->ck.ck_cost), ce = (double)cost_median(&th->ck.ev_cost);
    if (!cs || !ce) return;
    double r = (double)(c->rollbacks - t->rollbacks) / (double)events;
    double k = r > 0 ? sqrt(2 * cs / (r * ce)) : 2.0 * th->ck.interval;
    th->ck.interval = (unsigned)(clamp(clamp(k, th->ck.interval / 2.0, th->ck.interval * 2.0),
                                       1, TW_CKPT_AUTO_MAX) + 0.5);
    *t = (struct tw_tune){ c->processed, c->ck.timed, c->rollbacks, c->events_timed };
}

/* Its checkpoint interval at the start, and where its checkpoints' blocks come from. */
static void ckpt_init(struct tw_thread *th)
{
    th->ck.interval = th->g->cf.ckpt_auto ? TW_CKPT_AUTO_START : th->g->cf.ckpt_interval;
    kr__blobs_init(&th->blobs);
}

static void ckpt_end(struct tw_thread *th)
{
    th->cnt->ckpt_peak_bytes = th->blobs.peak;
    th->cnt->ckpt_interval_final = th->ck.interval;
    kr__blobs_destroy(&th->blobs);
}

const struct tw_module tw_mod_ckpt = { .name = "checkpoints", .init = ckpt_init, .end = ckpt_end };
