/* commit.c - what happens below the commit horizon (GVT): events become final (history
 * digest, committed output, done() bookkeeping), and fossil collection frees events and
 * checkpoints that no rollback can reach any more. Only LPs with uncommitted events are
 * visited, so a round costs what was processed, not the number of LPs. */
#include <stdlib.h>
#include "optimistic/tw.h"
#include "optimistic/ranks.h"
#include "base/error.h"

/* Keep at most this many committed events on an LP whose history is all committed; past it
 * the events are freed (page-tracked modes: the current state becomes the base checkpoint;
 * others: the LP's next event takes one). Keeping up to the checkpoint interval (16) was
 * measured too: no faster (airport, PHOLD-std, queueing at 2 threads, 5 interleaved runs). */
#define TW_COMMITTED_TAIL 4

void tw_fail_at_commit(struct tw_global *g, const char *msg, const struct kr__key *k)
{
    pthread_mutex_lock(&g->end.err_mu);
    if (!g->end.err || kr__key_lt(k, &g->end.err_key)) {
        free(g->end.err);
        g->end.err = strdup(msg ? msg : "model error");
        g->end.err_key = *k;
    }
    pthread_mutex_unlock(&g->end.err_mu);
    /* (across ranks, the next GVT round stops every rank: ranks.c) */
    if (!g->net.on) atomic_store_explicit(&g->stop, 1, memory_order_release);
}

static void free_before(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *keep)
{
    struct tw_lp *tl = tw_lp_of(lp);
    struct kr__ev *x = tl->head;
    const bool chained = th->g->cf.chained;
    while (x != keep) { /* (chained checkpoints stay in the chain until trimmed) */
        struct kr__ev *n = x->next;
        if (x->flags & KR_EVF_CKPT) { /* (the flag: the tail's line stays cold) */
            if (!chained) kr__ckpt_release(&th->blobs, x->ckpt);
            x->ckpt = NULL;
        }
        if (x->flags & KR_EVF_RKIDS) tw_rank_forget(th, x); /* (copies sent to ranks) */
        kr__pool_put(th->pool, x);
        th->cnt->fossil_freed++;
        tl->nkept--;
        x = n;
    }
    tl->head = keep;
    if (keep) keep->prev = NULL;
    else tl->tail = NULL;
}

/* Every event of lp is committed, nothing speculative follows: no rollback can reach below
 * its current state, so its history goes. No checkpoint is taken now (the state is cold
 * here, and many LPs get no further event before the next round): the LP's next event
 * takes one before it runs, which is the first restore point any rollback can need. In
 * chained modes the newest checkpoint stays as the base that the next, incremental one
 * builds on (the dirty tracking since it covers the freed events' writes). */
void tw_drop_history(struct tw_thread *th, struct kr__lp *lp)
{
    struct tw_lp *tl = tw_lp_of(lp);
    struct kr__ckpt *tip = tw_chain_tip(tl);
    if (th->g->cf.chained) {
        if (tl->ckpt_ev) tl->ckpt_ev->ckpt = NULL;
        tl->base = tip;
    } else if (tl->base) {
        kr__ckpt_release(&th->blobs, tl->base);
        tl->base = NULL;
    }
    free_before(th, lp, NULL);
    tl->ckpt_ev = NULL;
    tl->since_ckpt = TW_CKPT_NOW;
    if (th->g->cf.chained && tl->base) tw_trim_chain(th, tl->base);
}

/* Free what no rollback can reach: everything before the latest checkpoint that is
 * committed. Uses the LP's latest checkpointed event and committed count rather than a
 * walk, so only the events being freed are touched (a walk over cold committed events was
 * 80% of commit time at 65536 LPs). */
/* All of lp's history is committed, with more than the tail kept: it goes. */
static void fossil_all(struct tw_thread *th, struct kr__lp *lp)
{
    struct tw_lp *tl = tw_lp_of(lp);
    if (!lp->arena.seg) {
        tw_drop_history(th, lp);
        return;
    }
    /* Page-tracked modes: a checkpoint now closes the LP's pages that are open for
     * writing; left open, every such LP holds mappings of its own (vm.max_map_count:
     * 40000 LPs failed with --state page waiting for 16 committed events). */
    tw_take_ckpt(th, lp, NULL); /* the current state is the committed state */
    free_before(th, lp, NULL);
    tl->ckpt_ev = NULL;
    tw_trim_chain(th, tl->base);
}

/* The latest checkpoint is still speculative: wait for a later round. */
static bool still_speculative(const struct tw_lp *tl, const struct kr__ev *keep)
{
    return tl->first_unc && !kr__key_lt(&keep->k, &tl->first_unc->k) && keep != tl->first_unc;
}

static void fossil_to(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *keep);

/* Whether an LP has nothing uncommitted or frozen, and a long tail of committed events. */
static inline bool all_settled(const struct tw_lp *tl)
{
    return !tl->first_unc && !tw_poisoned(tl) && tl->nkept >= TW_COMMITTED_TAIL;
}

static void fossil(struct tw_thread *th, struct kr__lp *lp)
{
    struct tw_lp *tl = tw_lp_of(lp);
    if (tw_suspended_on(th, lp)) return; /* mid-event (preempted): its state is not an event's */
    if (th->g->cf.reverse) { /* (no restore point to keep: every event reverses) */
        free_before(th, lp, tl->first_unc);
        return;
    }
    if (all_settled(tl)) {
        fossil_all(th, lp);
        return;
    }
    struct kr__ev *keep = tl->ckpt_ev;
    if (keep && keep != tl->head && !still_speculative(tl, keep)) fossil_to(th, lp, keep);
}

/* Free lp's history before `keep`, whose checkpoint becomes the base. */
static void fossil_to(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *keep)
{
    struct tw_lp *tl = tw_lp_of(lp);
    if (!th->g->cf.chained && tl->base) kr__ckpt_release(&th->blobs, tl->base);
    tl->base = keep->ckpt;
    keep->ckpt = NULL;
    keep->flags &= (uint8_t)~KR_EVF_CKPT;
    tl->ckpt_ev = NULL;
    free_before(th, lp, keep);
    if (th->g->cf.chained) tw_trim_chain(th, tl->base);
}

static void done_not_monotone(struct tw_thread *th, const struct kr__ev *x)
{
    char msg[256];
    snprintf(msg, sizeof msg, "model '%s', LP %llu, virtual time %.17g: done() returned "
             "false after it had returned true; done() must be monotone",
             th->r->model->name, (unsigned long long)x->dest, x->k.ts);
    tw_fail_at_commit(th->g, msg, &x->k);
}

/* Committing x of a model with done(): did the LP become done? False if done() went back
 * from true to false (a model error, reported at x). */
static bool commit_done(struct tw_thread *th, struct kr__lp *lp, const struct kr__ev *x)
{
    bool d = x->flags & KR_EVF_DONE_AFTER;
    if (d && !lp->done_seen && !lp->done_init) {
        lp->done_seen = true;
        th->gv.ndone++;
        if (kr__key_lt(&th->gv.max_done_committed, &x->k)) th->gv.max_done_committed = x->k;
    } else if (!d && (lp->done_seen || lp->done_init)) {
        done_not_monotone(th, x);
        return false;
    }
    return true;
}

/* --check: the event about to commit follows its predecessor, and its flag tells whether it
 * holds a checkpoint (fossil collection reads only the flag). */
static void check_committing(const struct kr__ev *x)
{
    if (x->prev && !kr__key_lt(&x->prev->k, &x->k))
        kr__internal_error("LP %llu commits out of order at time %.17g",
                           (unsigned long long)x->dest, x->k.ts);
    if (!x->ckpt != !(x->flags & KR_EVF_CKPT))
        kr__internal_error("LP %llu's event at time %.17g %s a checkpoint and %s its flag",
                           (unsigned long long)x->dest, x->k.ts, x->ckpt ? "has" : "lacks",
                           x->flags & KR_EVF_CKPT ? "has" : "lacks");
}

/* Whether x has a later member of its bundle after it (done() was asked after the whole
 * bundle: its answer is on the last). */
static inline bool inside_bundle(const struct tw_thread *th, const struct kr__ev *x)
{
    return th->bundles && x->next && kr__ev_same_bundle(x, x->next);
}

/* Commit x, the LP's first uncommitted event; false if the run ends at it (its error, or
 * done() said so after it). */
static inline bool commit_event(struct tw_thread *th, struct kr__lp *lp, struct tw_lp *tl,
                                struct kr__ev *x, const struct kr_model *m)
{
    if (th->g->cf.check) check_committing(x);
    if (x->flags & KR_EVF_ERROR) {
        tw_fail_at_commit(th->g, tl->fail->err, &x->k); /* (tw_keep_error made it) */
        return false;
    }
    kr__lp_commit_event(lp, x);
    th->cnt->committed++;
    th->uncommitted--;
    tl->nkept++;
    return !(m->done && !inside_bundle(th, x) && !commit_done(th, lp, x));
}

/* The output of what committed: before h, or through the failed event (its own output
 * included, as the sequential engine prints it). */
static void commit_output(struct tw_thread *th, struct kr__lp *lp, const struct kr__key *h,
                          const struct kr__ev *failed)
{
    if (!failed) tw_output_before(th, lp, h);
    else tw_output_through(th, lp, failed);
}

/* Commit lp's events before h. False if one had failed: the LP stops there (the run stops;
 * the lowest failing key over all LPs is the error reported). */
static bool commit_lp(struct tw_thread *th, struct kr__lp *lp, const struct kr__key *h)
{
    struct tw_lp *tl = tw_lp_of(lp);
    const struct kr_model *m = th->r->model;
    struct kr__ev *x = tl->first_unc;
    bool ok = true;
    while (ok && x && kr__key_lt(&x->k, h)) {
        ok = commit_event(th, lp, tl, x, m);
        if (ok) x = x->next;
    }
    tl->first_unc = x;
    if (kr__lp_out_n(lp)) commit_output(th, lp, h, ok ? NULL : x);
    if (ok) fossil(th, lp);
    return ok;
}

/* The LP's metric values below upto: reduced by this thread (exact sums: in any order), or
 * on another rank than 0, records for rank 0 with the output. */
static void values_before(struct tw_thread *th, struct kr__outvec *v, const struct kr__key *upto)
{
    size_t m = 0;
    bool out = !th->cm.metrics;
    if (out) pthread_mutex_lock(&th->cm.sink.mu);
    for (; m < v->nval && kr__key_lt(&v->val[m].k, upto); m++) {
        struct kr__mrec rec = { v->val[m].id, 0, v->val[m].value };
        if (!out) {
            kr__metric_add(th->cm.metrics, v->val[m].k.ts, &rec);
            continue;
        }
        char buf[8 + sizeof rec];
        uint64_t tag = KR_REC_METRIC;
        memcpy(buf, &tag, 8);
        memcpy(buf + 8, &rec, sizeof rec);
        kr__outvec_add_record(&th->cm.sink.v, &v->val[m].k, buf, sizeof buf);
    }
    if (out) pthread_mutex_unlock(&th->cm.sink.mu);
    memmove(v->val, v->val + m, (v->nval - m) * sizeof v->val[0]);
    v->nval -= m;
}

void tw_metrics_drain(struct tw_global *g)
{
    for (unsigned t = 0; t < g->n; t++) kr__metrics_drain(g->r->metrics, g->th[t].cm.metrics);
}

void tw_output_before(struct tw_thread *th, struct kr__lp *lp, const struct kr__key *upto)
{
    if (lp->out->nval) values_before(th, lp->out, upto);
    pthread_mutex_lock(&th->cm.sink.mu);
    kr__outvec_move_before(lp->out, upto, &th->cm.sink.v);
    pthread_mutex_unlock(&th->cm.sink.mu);
}

void tw_output_through(struct tw_thread *th, struct kr__lp *lp, const struct kr__ev *e)
{
    struct kr__key past = e->k;
    past.seq++; /* (no event has a key between e's and this) */
    tw_output_before(th, lp, &past);
}

bool tw_commit(struct tw_thread *th, const struct kr__key *hp)
{
    struct kr__key h = *hp;
    size_t keep = 0;
    bool failed = false;
    for (size_t i = 0; i < th->cm.ndirty; i++) { /* every LP: another may fail at a lower key */
        kr_lp id = th->cm.dirty[i];
        struct kr__lp *lp = kr__lp_at(th->r, id);
        struct tw_lp *tl = tw_lp_of(lp);
        failed |= !commit_lp(th, lp, &h);
        if (tl->first_unc) th->cm.dirty[keep++] = id;
        else tl->dirty = false;
    }
    th->cm.ndirty = keep;
    if (failed) return false; /* the run stops with the error */
    th->cm.applied = h;
    if (!th->lone.on) tw_lone_update(th); /* (its LPs' speculative history committed?) */
    if (th->g->net.on) tw_rank_fossil(th, h.ts); /* (no antimessage can come for those) */
    pthread_mutex_lock(&th->cm.sink.mu);
    th->cm.sink.upto = h;
    pthread_mutex_unlock(&th->cm.sink.mu);
    kr__counters_publish(th->cnt);
    return true;
}

/* The run stops at a committed model error. Everything before it is final too (it lies
 * below the horizon being applied), so commit it - its output, and what the failed event
 * printed before it failed, are printed before the error message, as the sequential engine
 * does. This may find an earlier error on this thread;
 * the lowest key wins. */
void tw_commit_before_error(struct tw_thread *th)
{
    struct tw_global *g = th->g;
    pthread_mutex_lock(&g->end.err_mu);
    bool failed = g->end.err != NULL;
    struct kr__key k = g->end.err_key;
    pthread_mutex_unlock(&g->end.err_mu);
    if (!failed || !tw_commit(th, &k)) return;
    /* The failed event's own output, which commit_lp moved to its thread's sink, prints too:
     * no other event has a key between k and this one. */
    k.seq++;
    pthread_mutex_lock(&th->cm.sink.mu);
    th->cm.sink.upto = k;
    pthread_mutex_unlock(&th->cm.sink.mu);
}

/* A chained LP's checkpoints, newest first. */
static void release_chain(struct tw_thread *th, struct tw_lp *tl)
{
    for (struct kr__ckpt *c = tw_chain_tip(tl), *n; c; c = n) {
        n = c->prev;
        kr__ckpt_release(&th->blobs, c);
    }
}

/* At the end: bring every LP back to its committed state (for finish and the digest) and
 * give back checkpoints. Nothing is cancelled: no event will run again. A failed run has
 * no finish and no digest: only a preempted event is abandoned there, nothing rolled back
 * - a safe event that failed sits in the processed list without a checkpoint before it
 * (tw_process_safe), and a horizon below it left no state to restore (a SIGSEGV, exit 3
 * instead of the model's error: kr_commit misuse on 2 threads, 5 runs in 60 beside a busy
 * core). */
/* Every checkpoint (and reverse record) of the LP goes. */
static void release_ckpts(struct tw_thread *th, struct tw_lp *tl)
{
    const bool chained = th->g->cf.chained;
    if (chained) release_chain(th, tl);
    for (struct kr__ev *x = tl->head; x; x = x->next) {
        if (x->ckpt && !chained) kr__ckpt_release(&th->blobs, x->ckpt);
        x->ckpt = NULL;
    }
    if (tl->base && !chained) kr__ckpt_release(&th->blobs, tl->base);
    tl->base = NULL;
    tl->ckpt_ev = NULL;
}

/* An LP at the end: rolled back to h (a preempted event is abandoned too), its
 * checkpoints and failure released. */
static void release_lp(struct tw_thread *th, struct kr__lp *lp, const struct kr__key *h)
{
    struct tw_lp *tl = tw_lp_of(lp);
    if ((tl->tail && !kr__key_lt(&tl->tail->k, h)) || lp->ult) tw_rollback(th, lp, h, false);
    release_ckpts(th, tl);
    tw_fail_clear(tl);
}

void tw_release_all(struct tw_thread *th)
{
    pthread_mutex_lock(&th->g->end.err_mu);
    struct kr__key h = th->g->end.err ? kr__key_at(INFINITY) : th->g->horizon;
    pthread_mutex_unlock(&th->g->end.err_mu);
    for (kr_lp id = th->g->lo; id < th->g->lo + th->g->nlocal; id++) {
        if (th->g->owner[tw_lidx(th->g, id)] != th->id) continue;
        release_lp(th, kr__lp_at(th->r, id), &h);
    }
}

/* Page and buddy modes: a safe event takes no checkpoint, so the pages it wrote stay open
 * (writable), and every run of open pages is a kernel mapping of its own, which the kernel
 * limits (vm.max_map_count). The LPs left with open pages are listed, and once the threads
 * together have TW_OPEN_MAX of them, each is closed by a checkpoint as its new base. (Closing
 * them at every commit cost airport in page mode half its rate: a checkpoint for nearly
 * every event. Scan mode protects nothing by hand.) */
#define TW_OPEN_MAX 8192
void tw_close_pages(struct tw_thread *th)
{
    for (size_t i = 0; i < th->cm.nopen; i++) {
        struct kr__lp *lp = kr__lp_at(th->r, th->cm.open[i]);
        struct tw_lp *tl = tw_lp_of(lp);
        tl->pages_open = false;
        /* With history, its own next checkpoint closes them; mid-event, the state is not
         * an event's. */
        if (tl->head || tw_suspended_on(th, lp) || !lp->arena.seg->ndirty) continue;
        tw_take_ckpt(th, lp, NULL); /* its state is all committed: the new base */
        tw_trim_chain(th, tl->base);
    }
    th->cm.nopen = 0;
}

void tw_keep_open(struct tw_thread *th, struct kr__lp *lp, kr_lp id)
{
    struct tw_lp *tl = tw_lp_of(lp);
    if (!lp->arena.seg->ndirty || tl->pages_open) return;
    if (th->cm.nopen == th->cm.capopen)
        KR_GROW(th->cm.open, th->cm.capopen, th->cm.nopen + 1, 256, "list of LPs with open pages");
    tl->pages_open = true;
    th->cm.open[th->cm.nopen++] = id;
    if (th->cm.nopen >= TW_OPEN_MAX / th->g->n) tw_close_pages(th);
}

/* Where its committed output goes until printed, and how far it has committed. */
static void commit_init(struct tw_thread *th)
{
    pthread_mutex_init(&th->cm.sink.mu, NULL);
    th->cm.sink.upto = kr__key_at(-INFINITY);
    th->cm.applied = kr__key_at(-INFINITY);
    if (!th->g->net.on || th->g->net.rank == 0)
        th->cm.metrics = kr__metrics_new(th->r->model->metrics, th->r->cfg->end);
}

/* A new horizon: commit what lies below it. */
static void commit_on_gvt(struct tw_thread *th)
{
    tw_commit(th, &th->g->horizon);
}

static void commit_end(struct tw_thread *th)
{
    kr__outvec_free(&th->cm.sink.v);
    kr__metrics_free(th->cm.metrics);
    th->cm.metrics = NULL;
    free(th->cm.dirty);
    free(th->cm.open);
}

const struct tw_module tw_mod_commit = {
    .name = "commit", .init = commit_init, .on_gvt = commit_on_gvt, .end = commit_end,
};
