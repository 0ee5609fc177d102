/* statesave.c - see statesave.h. */
#include "core/statesave.h"
#include <string.h>
#include "state/buddy.h"
#include "state/mode.h"
#include "state/seg.h"

/* An LP's page-protection counts (page and buddy modes), and buddy's plans. */
static void add_seg(struct kr__state_totals *t, const struct kr__seg *s)
{
    t->faults += s->faults;
    t->mprotects += s->mprotects;
    if (s->bud) {
        t->partitions += s->bud->partitions;
        t->plans += s->bud->plans;
    }
}

void kr__state_totals(const struct kr__run *r, struct kr__state_totals *t)
{
    memset(t, 0, sizeof *t);
    for (unsigned i = 0; i < r->nthreads; i++) {
        const struct kr__counters *c = &r->counters[i];
        t->checkpoints += c->ck.taken;
        t->full += c->ck.full;
        t->full_bytes += c->ck.full_bytes;
        t->incr_bytes += c->ck.incr_bytes;
        t->ckpt_ns += c->ck.ns;
        t->ckpt_timed += c->ck.timed;
        t->restores += c->ck.restores;
        t->restore_ns += c->ck.restore_ns;
        t->events_timed += c->events_timed;
        t->event_ns += c->event_ns_sampled;
        t->interval_mean += (double)c->ckpt_interval_final / r->nthreads;
    }
    double used = 0;
    for (kr_lp id = 0; id < r->n; id++) {
        used += (double)kr__lp_at(r, id)->arena.used;
        const struct kr__seg *s = kr__region_seg(id);
        if (s) add_seg(t, s);
    }
    t->state_bytes_mean = r->n ? used / (double)r->n : 0;
}

static double per(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0; }

void kr__state_summary(const struct kr__run *r, FILE *f)
{
    const struct kr__state_ops *m = kr__state_ops(r->state_mode);
    struct kr__state_totals t;
    kr__state_totals(r, &t);
    uint64_t incr = t.checkpoints - t.full;
    fprintf(f, "  state saving:     %s, K %s%.0f, %llu full (mean %.1f KiB), %llu incremental "
            "(mean %.1f KiB), checkpoint %.2f us, restore %.2f us, event %.2f us\n",
            m->name, r->ckpt.interval_auto ? "auto ~" : "",
            t.interval_mean, (unsigned long long)t.full, per(t.full_bytes, t.full) / 1024,
            (unsigned long long)incr, per(t.incr_bytes, incr) / 1024,
            per(t.ckpt_ns, t.ckpt_timed) / 1e3, per(t.restore_ns, t.restores) / 1e3,
            per(t.event_ns, t.events_timed) / 1e3);
    if (m->summary) m->summary(f, t.faults, t.mprotects);
}

void kr__state_json(const struct kr__run *r, FILE *f)
{
    const struct kr__state_ops *m = kr__state_ops(r->state_mode);
    struct kr__state_totals t;
    kr__state_totals(r, &t);
    uint64_t incr = t.checkpoints - t.full;
    fprintf(f,
            "  \"state_saving\": {\"mode\": \"%s\", \"ckpt_interval_auto\": %s, "
            "\"ckpt_interval_mean\": %.2f, \"full_every\": %u, \"checkpoints_full\": %llu, "
            "\"checkpoints_incremental\": %llu, \"full_bytes\": %llu, \"incremental_bytes\": %llu, "
            "\"mean_full_bytes\": %.1f, \"mean_incremental_bytes\": %.1f, \"checkpoint_ns\": %llu, "
            "\"mean_checkpoint_ns\": %.1f, \"checkpoints_timed\": %llu, \"restores\": %llu, "
            "\"restore_ns\": %llu, "
            "\"mean_restore_ns\": %.1f, \"events_timed\": %llu, \"mean_event_ns\": %.1f, "
            "\"write_faults\": %llu, \"mprotect_calls\": %llu, \"partitions\": %llu, "
            "\"plans\": %llu, \"mean_state_bytes\": %.1f",
            m->name, r->ckpt.interval_auto ? "true" : "false", t.interval_mean,
            r->ckpt.full_every ? r->ckpt.full_every : 1u, (unsigned long long)t.full,
            (unsigned long long)incr, (unsigned long long)t.full_bytes,
            (unsigned long long)t.incr_bytes, per(t.full_bytes, t.full), per(t.incr_bytes, incr),
            (unsigned long long)(per(t.ckpt_ns, t.ckpt_timed) * (double)t.checkpoints),
            per(t.ckpt_ns, t.ckpt_timed), (unsigned long long)t.ckpt_timed,
            (unsigned long long)t.restores, (unsigned long long)t.restore_ns,
            per(t.restore_ns, t.restores), (unsigned long long)t.events_timed,
            per(t.event_ns, t.events_timed), (unsigned long long)t.faults,
            (unsigned long long)t.mprotects, (unsigned long long)t.partitions,
            (unsigned long long)t.plans, t.state_bytes_mean);
    if (m->json) m->json(f);
    fputs("},\n", f);
}
