/* share.c - the share trial of `--balance auto` (migrate.c plans it): a worker whose core
 * is shared was retired at once; after a window without it, it gets LPs in proportion to
 * the CPU share it had there, and keeps them only if that commits more (balance.h: the
 * TW_PART_* constants and what they were measured on). Runs on the thread that closes a
 * GVT round, as every plan does. */
#include <math.h>
#include "optimistic/tw.h"
#include "optimistic/balance.h"

static uint64_t committed_sum(const struct tw_global *g)
{
    uint64_t c = 0;
    for (unsigned t = 0; t < g->n; t++) c += g->th[t].bal.rep_committed;
    return c;
}

static void part_window(struct tw_global *g, int state, uint64_t now)
{
    g->bl.part = state;
    g->bl.part_t0 = now;
    g->bl.part_c0 = committed_sum(g);
    g->bl.part_v0 = g->gvt.ts;
}

/* Every worker found on a shared core gets its share (on) or none; then the map. */
static void part_switch(struct tw_global *g, bool on)
{
    g->bl.part_on = on;
    for (unsigned t = 0; t < g->n; t++)
        if (g->th[t].bal.part) g->th[t].bal.weight = on ? g->th[t].bal.part : 0;
    tw_map_by_weight(g);
}

/* The weight a worker of a shared core gets in a share trial, from its CPU share there
 * (never 0: 0 means not found on a shared core; a share not measured, -1, gives 1). */
unsigned tw_share_weight(double share)
{
    unsigned part = share > 0 ? (unsigned)(share * TW_WEIGHT_FULL) : 0;
    return part ? part : 1;
}

/* Each retired worker of a shared core takes the share its latest probe found (if it has
 * probed since it left); true if one of them is worth a try (TW_PART_MIN). */
static bool part_worth_trying(struct tw_global *g)
{
    bool worth = false;
    for (unsigned t = 0; t < g->n; t++) {
        struct tw_bal *b = &g->th[t].bal;
        if (!b->part) continue;
        double s = atomic_load_explicit(&b->probe, memory_order_relaxed);
        if (s >= 0) b->part = tw_share_weight(s);
        worth |= b->part >= TW_PART_MIN * TW_WEIGHT_FULL;
    }
    return worth;
}

/* A try (or its second window) runs. */
bool tw_share_trying(const struct tw_global *g)
{
    return g->bl.part == TW_PART_TRY || g->bl.part == TW_PART_LONGER;
}

/* The next question after the backoff. */
static void part_wait(struct tw_global *g, uint64_t now)
{
    g->bl.part_next_ns = now + tw_backoff_step(&g->bl.part_backoff_ns);
    g->bl.part = TW_PART_WAIT;
}

/* Time enough left in the run for a try to pay (TW_PART_WORTH_NS), judged by how far GVT
 * went in the window of `span` ns just ended; a run without a finite end has. */
static bool part_time_left(const struct tw_global *g, uint64_t span)
{
    kr_time end = g->r->cfg->end, dv = g->gvt.ts - g->bl.part_v0;
    if (!isfinite(end) || !(dv > 0)) return true;
    return (end - g->gvt.ts) / dv * (double)span >= (double)TW_PART_WORTH_NS;
}

/* The window as it is ended at `rate`: the other way next, unless a share too small to
 * gain from would be tried, or the run ends too soon for a try to pay. */
static void part_base_done(struct tw_global *g, double rate, uint64_t now)
{
    g->bl.part_rate = rate;
    if (!g->bl.part_on && (!part_worth_trying(g) || !part_time_left(g, now - g->bl.part_t0))) {
        part_wait(g, now);
        return;
    }
    part_switch(g, !g->bl.part_on);
    part_window(g, TW_PART_TRY, now);
}

/* The try ended at `rate`: the share stays (or comes back) only if it committed
 * TW_TRIAL_MORE of "out"; then the wait for the next question. A share that is not
 * clearly worse (TW_PART_UNSURE) gets a second window first. */
static void part_try_done(struct tw_global *g, double rate, uint64_t now)
{
    double on = g->bl.part_on ? rate : g->bl.part_rate;
    double off = g->bl.part_on ? g->bl.part_rate : rate;
    bool share = on >= off * TW_TRIAL_MORE;
    if (g->bl.part == TW_PART_TRY && g->bl.part_on && !share && on >= off * TW_PART_UNSURE) {
        part_window(g, TW_PART_LONGER, now); /* (not sure: a second window, alone) */
        return;
    }
    if (share != g->bl.part_on) part_switch(g, share);
    g->bl.cnt_part++;
    g->bl.cnt_part_kept += share;
    part_wait(g, now);
}

/* The share trial (balance.h): a window the way it is (the shared workers out, or with
 * their shares), one the other way; a share stays only if it commits TW_TRIAL_MORE of what
 * "out" does, and the question is asked again after a backoff. A try that commits under
 * TW_PART_ABORT of the window before ends at the next decision. */
void tw_share_plan(struct tw_global *g, uint64_t now)
{
    if (g->bl.part == TW_PART_WAIT) {
        if (now >= g->bl.part_next_ns) part_window(g, TW_PART_BASE, now);
        return;
    }
    uint64_t span = now - g->bl.part_t0;
    double rate = (double)(committed_sum(g) - g->bl.part_c0) * 1e9 / (double)span;
    bool bad = tw_share_trying(g) && rate < g->bl.part_rate * TW_PART_ABORT;
    if (span < TW_PART_NS && !bad) return;
    if (g->bl.part == TW_PART_BASE) part_base_done(g, rate, now);
    else part_try_done(g, rate, now);
}

/* The workers with a share noted (bal.part) are out of shared cores, `k` of them new. */
void tw_share_out(struct tw_global *g, unsigned k, uint64_t now)
{
    part_switch(g, false);
    g->bl.cnt_retired += k;
    g->bl.part_backoff_ns = 0; /* (a new question: the first wait again) */
    g->bl.part = TW_PART_WAIT; /* (the window "out" begins once the moves have settled) */
    g->bl.part_next_ns = now + TW_PART_SETTLE_NS;
}

/* Worker w's core is shared: out at once, with the share it would get there noted. */
void tw_share_retire(struct tw_global *g, unsigned w, double share, uint64_t now)
{
    g->th[w].bal.part = tw_share_weight(share);
    tw_share_out(g, 1, now);
}
