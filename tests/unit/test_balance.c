/* test_balance.c - the optimistic engine's load balancer (`--balance auto`, migrate.c)
 * planning on a clock and CPU shares the test sets, moves applied to the owner table by
 * hand (the moves themselves are tested by the storm runs of tests/e2e/migration.py):
 *  - a worker on a shared core is retired at once (every LP to the other);
 *  - after a window, the share trial gives it LPs in proportion to its CPU share there,
 *    as one contiguous block (0.5 beside a whole core: a third);
 *  - a trial that commits far less is undone at the next decision, and the question is
 *    asked again only after the backoff;
 *  - a share that commits more stays; asked again, "out" that commits far less is undone;
 *  - a try that is not clearly worse or better goes on for a second window, judged alone;
 *  - once its core is free (by its CPU share and its run queue), the first mapping comes
 *    back;
 *  - a share too small to gain from is not tried, until a probe finds a larger one;
 *  - nor is one when the run ends too soon for a try to pay;
 *  - a run started on one worker (tw_balance_home) waits for the others' probes and the
 *    home's first window, then gets the first mapping if every core is free, keeps a
 *    worker found shared out (its share trial to come), moves every LP off a home found
 *    shared when another core is free, and decides at TW_START_WAIT_NS without them. */
#include "check.h"
#include "core/core.h"
#include "run/options.h"
#include "core/place.h"
#include "run/run.h"
#include "optimistic/balance.h"

#define LPS 64
#define MS (1000ull * 1000)

static void configure(struct kr__config *c, int argc, char **argv)
{
    struct kr__error err = { 0 };
    *c = (struct kr__config){ .model = "phold" };
    CHECK(kr__options_defaults(c, &err) == KR_OK);
    for (int i = 0; i < argc; i++) CHECK(kr__option_parse(c, argc, argv, &i, &err) == KR_OK);
    CHECK(kr__options_finish(c, 1, &err) == KR_OK);
}

/* What tw_migrate leaves in the tables the planner reads: owners, LP counts, who is out. */
static void apply(struct tw_global *g)
{
    for (size_t i = 0; i < g->bl.nmoves; i++) g->owner[g->bl.moves[i].lp] = g->bl.moves[i].to;
    unsigned active = 0;
    for (unsigned t = 0; t < g->n; t++) {
        struct tw_thread *th = &g->th[t];
        th->nlps = 0;
        for (kr_lp lp = 0; lp < LPS; lp++) th->nlps += g->owner[lp] == t;
        th->retired = th->nlps == 0;
        active += !th->retired;
    }
    atomic_store(&g->active, active);
    g->bl.nmoves = 0;
    atomic_store(&g->mig_req, 0);
}

/* Plan at `now` with `done` more events committed since the last call (thread 0's count). */
static bool plan(struct tw_global *g, uint64_t now, uint64_t done)
{
    g->th[0].bal.rep_committed += done;
    bool moved = tw_balance_plan_at(g, now);
    if (moved) apply(g);
    return moved;
}

/* Worker 1's LPs: how many, and that they are the block at the end. */
static kr_lp owned_by_1(const struct tw_global *g)
{
    kr_lp n = 0;
    for (kr_lp lp = 0; lp < LPS; lp++) n += g->owner[lp] == 1;
    for (kr_lp lp = LPS - n; lp < LPS; lp++) CHECK(g->owner[lp] == 1);
    return n;
}

static void shared_core(struct tw_global *g)
{
    uint64_t t = g->bl.start_ns + 1000 * MS;
    atomic_store(&g->th[0].bal.cpu_share, 1.0);
    atomic_store(&g->th[1].bal.cpu_share, 0.5);
    CHECK(plan(g, t, 0)); /* shared: out at once */
    CHECK(owned_by_1(g) == 0 && g->th[1].retired && g->bl.cnt_retired == 1);
    CHECK(g->bl.part == TW_PART_WAIT && !g->bl.part_on); /* (the moves settle first) */
    CHECK(!plan(g, t += 40 * MS, 500)); /* the window "out" begins */
    CHECK(g->bl.part == TW_PART_BASE && !g->bl.part_on);
    CHECK(plan(g, t += TW_PART_NS, 1000)); /* a third of the LPs: [42, 64) */
    CHECK(owned_by_1(g) == LPS - LPS * 1000 / 1500 && !g->th[1].retired);
    CHECK(g->bl.part == TW_PART_TRY && g->bl.part_on);
    CHECK(plan(g, t += 40 * MS, 100)); /* far less committed: out again at once */
    CHECK(owned_by_1(g) == 0 && g->bl.part == TW_PART_WAIT && !g->bl.part_on);
    CHECK(g->bl.cnt_part == 1 && g->bl.cnt_part_kept == 0);
    CHECK(!plan(g, t += TW_TRIAL_BACKOFF_NS / 2, 9000)); /* backoff */
    CHECK(!plan(g, t += TW_TRIAL_BACKOFF_NS / 2, 9000)); /* a new window as it is */
    CHECK(g->bl.part == TW_PART_BASE);
    CHECK(plan(g, t += TW_PART_NS, 1000));
    CHECK(owned_by_1(g) == LPS - LPS * 1000 / 1500 && g->bl.part == TW_PART_TRY);
    atomic_store(&g->th[1].bal.cpu_share, -1.0); /* (not measured since it came back) */
    CHECK(!plan(g, t += 40 * MS, 520)); /* (as much so far: the window goes on) */
    CHECK(!plan(g, t += 40 * MS, 580)); /* 10% more: kept */
    CHECK(g->bl.part == TW_PART_WAIT && g->bl.part_on && g->bl.cnt_part == 2 &&
          g->bl.cnt_part_kept == 1);
    atomic_store(&g->th[1].bal.cpu_share, 0.5);
    CHECK(!plan(g, t += 2 * TW_TRIAL_BACKOFF_NS, 1000)); /* (the backoff doubled) */
    CHECK(g->bl.part == TW_PART_BASE);
    CHECK(plan(g, t += TW_PART_NS, 1000)); /* asked again: out for a window */
    CHECK(owned_by_1(g) == 0 && g->bl.part == TW_PART_TRY && !g->bl.part_on);
    CHECK(plan(g, t += 40 * MS, 200)); /* far less: the share comes back at once */
    CHECK(owned_by_1(g) == LPS - LPS * 1000 / 1500 && g->bl.part_on);
    CHECK(g->bl.cnt_part == 3 && g->bl.cnt_part_kept == 2);
    atomic_store(&g->th[1].bal.cpu_share, 0.95);
    atomic_store(&g->th[1].bal.rq_shared, 1);
    CHECK(!plan(g, t += TW_PART_NS, 1000)); /* (but its run queue says shared) */
    atomic_store(&g->th[1].bal.rq_shared, 0);
    CHECK(plan(g, t += TW_PART_NS, 1000)); /* its core is free: the first mapping */
    for (kr_lp lp = 0; lp < LPS; lp++) CHECK(g->owner[lp] == kr__block_of(lp, LPS, 2));
    CHECK(g->bl.part == TW_PART_NONE && g->bl.cnt_back == 1 && !g->th[1].bal.part);
    CHECK(g->th[0].bal.weight == TW_WEIGHT_FULL && g->th[1].bal.weight == TW_WEIGHT_FULL);
}

/* From "out" (1000 in a window) to a third of the LPs on the shared core: a try. */
static uint64_t share_tried(struct tw_global *g)
{
    uint64_t t = g->bl.start_ns + 1000 * MS;
    atomic_store(&g->th[0].bal.cpu_share, 1.0);
    atomic_store(&g->th[1].bal.cpu_share, 0.5);
    CHECK(plan(g, t, 0) && g->bl.part == TW_PART_WAIT);
    CHECK(!plan(g, t += 40 * MS, 0) && g->bl.part == TW_PART_BASE);
    CHECK(plan(g, t += TW_PART_NS, 1000));
    CHECK(owned_by_1(g) == LPS - LPS * 1000 / 1500 && g->bl.part == TW_PART_TRY);
    return t;
}

/* A try that ends between TW_PART_UNSURE and TW_TRIAL_MORE of "out" goes on for another
 * window, judged alone (the first one's start undercounts: work run after the switch
 * commits at a later GVT round); one under TW_PART_UNSURE is undone at once, and an
 * extension is judged as a try is. */
static void unsure_try(struct tw_global *g)
{
    uint64_t t = share_tried(g);
    CHECK(!plan(g, t += TW_PART_NS, 950)); /* 0.95: not sure */
    CHECK(owned_by_1(g) == LPS - LPS * 1000 / 1500 && g->bl.part == TW_PART_LONGER);
    CHECK(g->bl.cnt_part == 0 && g->bl.part_on);
    CHECK(!plan(g, t += TW_PART_NS, 1100)); /* 1.10 alone: kept */
    CHECK(g->bl.part == TW_PART_WAIT && g->bl.part_on && g->bl.cnt_part == 1 &&
          g->bl.cnt_part_kept == 1);
}

static void unsure_undone(struct tw_global *g)
{
    uint64_t t = share_tried(g);
    CHECK(!plan(g, t += TW_PART_NS, 900) && g->bl.part == TW_PART_LONGER);
    CHECK(plan(g, t += TW_PART_NS, 1000)); /* 1.00: undone */
    CHECK(owned_by_1(g) == 0 && g->bl.part == TW_PART_WAIT && !g->bl.part_on);
    CHECK(g->bl.cnt_part == 1 && g->bl.cnt_part_kept == 0);
}

static void short_try(struct tw_global *g)
{
    uint64_t t = share_tried(g);
    CHECK(plan(g, t += TW_PART_NS, 800)); /* 0.80: undone, no second window */
    CHECK(owned_by_1(g) == 0 && g->bl.part == TW_PART_WAIT && g->bl.cnt_part == 1);
}

/* A share under TW_PART_MIN is not tried: out, the question is asked again after the
 * backoff with the share the retired worker's latest probe found, and tried then. (Shares
 * of 0.10-0.24 beside a busy loop here: every such try failed, each costing 26-29 ms.) */
static void small_share(struct tw_global *g)
{
    uint64_t t = g->bl.start_ns + 1000 * MS;
    atomic_store(&g->th[0].bal.cpu_share, 1.0);
    atomic_store(&g->th[1].bal.cpu_share, 0.2);
    CHECK(plan(g, t, 0) && owned_by_1(g) == 0 && g->bl.part == TW_PART_WAIT);
    CHECK(!plan(g, t += 40 * MS, 0) && g->bl.part == TW_PART_BASE);
    CHECK(!plan(g, t += TW_PART_NS, 1000)); /* (0.2: no try) */
    CHECK(owned_by_1(g) == 0 && g->bl.part == TW_PART_WAIT && g->bl.cnt_part == 0);
    atomic_store(&g->th[1].bal.probe, 0.25);
    CHECK(!plan(g, t += TW_TRIAL_BACKOFF_NS, 1000) && g->bl.part == TW_PART_BASE);
    CHECK(!plan(g, t += TW_PART_NS, 1000) && g->bl.part == TW_PART_WAIT);
    atomic_store(&g->th[1].bal.probe, 0.5);
    CHECK(!plan(g, t += 2 * TW_TRIAL_BACKOFF_NS, 1000) && g->bl.part == TW_PART_BASE);
    CHECK(plan(g, t += TW_PART_NS, 1000)); /* a third, as the probe's 0.5 gives */
    CHECK(owned_by_1(g) == LPS - LPS * 1000 / 1500 && g->bl.part == TW_PART_TRY);
}

/* No try when the run ends too soon for one to pay (TW_PART_WORTH_NS), judged by how far
 * GVT went in the window "out": the question is asked again after the backoff. (Tries
 * 90 ms into runs of 0.2-0.5 s beside a busy core cost them 5-9%.) --end is 40 here. */
static void ends_soon(struct tw_global *g)
{
    uint64_t t = g->bl.start_ns + 1000 * MS;
    atomic_store(&g->th[0].bal.cpu_share, 1.0);
    atomic_store(&g->th[1].bal.cpu_share, 0.5);
    CHECK(plan(g, t, 0) && g->bl.part == TW_PART_WAIT);
    g->gvt.ts = 10;
    CHECK(!plan(g, t += 40 * MS, 0) && g->bl.part == TW_PART_BASE);
    g->gvt.ts = 30; /* (20 in 80 ms: the last 10 in 40 ms) */
    CHECK(!plan(g, t += TW_PART_NS, 1000));
    CHECK(owned_by_1(g) == 0 && g->bl.part == TW_PART_WAIT && g->bl.cnt_part == 0);
    g->gvt.ts = 31; /* (the next window at a slower pace...) */
    CHECK(!plan(g, t += TW_TRIAL_BACKOFF_NS, 1000) && g->bl.part == TW_PART_BASE);
    g->gvt.ts = 32; /* (...1 in 80 ms: the last 8 in 640 ms) */
    CHECK(plan(g, t += TW_PART_NS, 1000)); /* time enough: a third */
    CHECK(owned_by_1(g) == LPS - LPS * 1000 / 1500 && g->bl.part == TW_PART_TRY);
}

/* As tw_balance_home leaves a run: every LP on worker 0, worker 1 out, not probed yet. */
static uint64_t start_home(struct tw_global *g)
{
    for (kr_lp lp = 0; lp < LPS; lp++) g->owner[lp] = g->target[lp] = 0;
    apply(g);
    CHECK(g->th[1].retired && atomic_load(&g->active) == 1);
    g->bl.starting = true;
    g->bl.home = 0;
    return g->bl.start_ns;
}

static void probed(struct tw_global *g, unsigned t, double share, bool free_core)
{
    atomic_store(&g->th[t].bal.wants_back, free_core);
    atomic_store(&g->th[t].bal.probe, share);
}

static void start_free(struct tw_global *g)
{
    uint64_t t = start_home(g);
    CHECK(!plan(g, t += MS, 0) && g->bl.starting); /* (nothing known) */
    probed(g, 1, 1.0, true);
    CHECK(!plan(g, t += 5 * MS, 0) && g->bl.starting); /* (the home's window not yet) */
    atomic_store(&g->th[0].bal.cpu_share, 1.0);
    CHECK(plan(g, t += MS, 0) && !g->bl.starting); /* the first mapping */
    CHECK(owned_by_1(g) == LPS / 2 && !g->th[1].retired && g->bl.cnt_retired == 0);
    CHECK(g->bl.part == TW_PART_NONE);
}

/* Worker 1's core shared: nothing moves, and it is out as if retired from there. */
static void start_other_shared(struct tw_global *g)
{
    uint64_t t = start_home(g);
    atomic_store(&g->th[0].bal.cpu_share, 1.0);
    probed(g, 1, 0.5, false);
    CHECK(!plan(g, t += 22 * MS, 0) && !g->bl.starting);
    CHECK(owned_by_1(g) == 0 && g->bl.cnt_retired == 1 && g->bl.part == TW_PART_WAIT);
    CHECK(g->th[1].bal.part == 500);
    CHECK(!plan(g, t += 40 * MS, 500) && g->bl.part == TW_PART_BASE);
    CHECK(plan(g, t += TW_PART_NS, 1000)); /* its share trial: a third */
    CHECK(owned_by_1(g) == LPS - LPS * 1000 / 1500 && g->bl.part == TW_PART_TRY);
}

/* The run's thread was on the busy core: the home's core is shared, worker 1's free -
 * every LP moves to worker 1 and the home is out. */
static void start_home_shared(struct tw_global *g)
{
    uint64_t t = start_home(g);
    probed(g, 1, 1.0, true);
    atomic_store(&g->th[0].bal.rq_shared, 1);
    atomic_store(&g->th[0].bal.cpu_share, 0.45);
    CHECK(plan(g, t += 12 * MS, 0) && !g->bl.starting);
    CHECK(owned_by_1(g) == LPS && g->th[0].retired && g->bl.cnt_retired == 1);
    CHECK(g->th[0].bal.part == 450 && g->bl.part == TW_PART_WAIT);
}

/* Both cores shared: the LPs stay with the home, worker 1 out. */
static void start_both_shared(struct tw_global *g)
{
    uint64_t t = start_home(g);
    probed(g, 1, 0.5, false);
    atomic_store(&g->th[0].bal.rq_shared, 1);
    atomic_store(&g->th[0].bal.cpu_share, 0.5);
    CHECK(!plan(g, t += 22 * MS, 0) && !g->bl.starting);
    CHECK(owned_by_1(g) == 0 && g->bl.cnt_retired == 1 && g->th[0].bal.part == 0);
}

/* No probe and no window by TW_START_WAIT_NS: worker 1 counts as shared (it did not even
 * get its core), the home as free. */
static void start_late(struct tw_global *g)
{
    uint64_t t = start_home(g);
    CHECK(!plan(g, t + TW_START_WAIT_NS - MS, 0) && g->bl.starting);
    CHECK(!plan(g, t + TW_START_WAIT_NS, 0) && !g->bl.starting);
    CHECK(owned_by_1(g) == 0 && g->bl.cnt_retired == 1 && g->bl.part == TW_PART_WAIT);
}

static void with_two_workers(void (*test)(struct tw_global *))
{
    char *args[] = { "--threads", "2", "--lps", "64", "--end", "40", "--preempt", "off",
                     "--event-timeout", "0", "--balance", "auto", "--progress", "off" };
    struct kr__config c;
    configure(&c, (int)(sizeof args / sizeof args[0]), args);
    struct kr__run r;
    struct kr__error err = { 0 };
    CHECK(kr__run_setup(&r, &c, &err) == KR_OK);
    struct tw_global *g = tw_test_start(&r, 0);
    CHECK(g->n == 2 && g->cf.balance == KR_BALANCE_AUTO);
    test(g);
    tw_test_end(&r, g);
    kr__run_finish(&r);
    kr__run_free(&r);
    kr__options_free(&c);
}

int main(void)
{
    with_two_workers(shared_core);
    with_two_workers(unsure_try);
    with_two_workers(unsure_undone);
    with_two_workers(short_try);
    with_two_workers(small_share);
    with_two_workers(ends_soon);
    with_two_workers(start_free);
    with_two_workers(start_other_shared);
    with_two_workers(start_home_shared);
    with_two_workers(start_both_shared);
    with_two_workers(start_late);
    return check_done("balance");
}
