/* tower.c - a ROSS model of two LP types (written against ross.h as ROSS models are): the
 * ROSS layer's test of what phold.c does not use. Airports send planes to one another; each
 * landing is reported to a control tower, the last LP. It places its LPs by a custom
 * mapping (local index i is LP id n-1-i: the tower is local 0), sets types either by
 * tw_lp_settype or by g_tw_lp_typemap over g_tw_lp_types (--typemap=1), uses pre_run, a
 * commit handler, tw_output, a PE type in the older two-argument form, tw_snapshot, and
 * MPI_Reduce of a total after tw_run, as ROSS-Models' models do. --scatter=1 deals the LP
 * ids out to the PEs in turn instead (local i of PE p is i * PEs + p), types set after
 * tw_define_lps; --scatter=2 sets them in the mapping, as ROSS-Models' torus does; 3 sets
 * them there by what only the process itself knows (its own rank, not g_tw_mynode), which
 * Kairos must find out across ranks. */
#include <ross.h>

enum { LANDING, REPORT };

typedef struct {
    long landed;      /* planes landed here */
    long departed;    /* counted by the commit handler */
    long reports;     /* (the tower) reports heard */
    double busiest;   /* (the tower) the latest report's time */
} tower_state;

typedef struct {
    int kind;
    tw_lpid from;
    long plane;
} tower_msg;

static unsigned airports = 31;
static unsigned planes = 3;
static unsigned use_typemap;
static unsigned scatter;
static tw_peid home; /* (--scatter=3: this process's own PE) */
static double flight = 5.0;
static unsigned long pe_finals;

static tw_lpid tower_id(void)
{
    return g_tw_total_lps - 1;
}

static void airport_init(tower_state *s, tw_lp *lp)
{
    (void)s;
    for (unsigned i = 0; i < planes; i++) {
        tw_event *e = tw_event_new(lp->gid, tw_rand_exponential(lp->rng, flight), lp);
        tower_msg *m = tw_event_data(e);
        m->kind = LANDING;
        m->plane = (long)(lp->gid * planes + i);
        tw_event_send(e);
    }
}

static void airport_pre_run(tower_state *s, tw_lp *lp)
{
    (void)lp;
    s->landed = 0;
}

static void airport_event(tower_state *s, tw_bf *bf, tower_msg *m, tw_lp *lp)
{
    tw_snapshot(lp, lp->type->state_sz);
    s->landed++;
    tw_event *r = tw_event_new(tower_id(), 0.5, lp);
    tower_msg *rm = tw_event_data(r);
    rm->kind = REPORT;
    rm->from = lp->gid;
    rm->plane = m->plane;
    tw_event_send(r);
    tw_lpid next = (tw_lpid)tw_rand_integer(lp->rng, 0, (long)airports - 1);
    bf->c0 = next != lp->gid;
    tw_event *e = tw_event_new(next, 1.0 + tw_rand_exponential(lp->rng, flight), lp);
    tower_msg *em = tw_event_data(e);
    em->kind = LANDING;
    em->plane = m->plane;
    tw_event_send(e);
    (void)tw_snapshot_delta(lp, lp->type->state_sz);
}

static void airport_event_rc(tower_state *s, tw_bf *bf, tower_msg *m, tw_lp *lp)
{
    (void)bf;
    (void)m;
    s->landed--;
    tw_rand_reverse_unif(lp->rng);
    tw_rand_reverse_unif(lp->rng);
}

static void airport_commit(tower_state *s, tw_bf *bf, tower_msg *m, tw_lp *lp)
{
    (void)m;
    (void)lp;
    if (bf->c0) s->departed++;
}

static void airport_final(tower_state *s, tw_lp *lp)
{
    if (lp->gid % 8 == 0)
        tw_output(lp, "airport %llu: %ld landed, %ld flew on elsewhere\n",
                  (unsigned long long)lp->gid, s->landed, s->departed);
}

static void tower_event(tower_state *s, tw_bf *bf, tower_msg *m, tw_lp *lp)
{
    (void)bf;
    if (m->kind != REPORT) tw_error(TW_LOC, "the tower got a landing");
    s->reports++;
    s->busiest = tw_now(lp);
}

static void tower_final(tower_state *s, tw_lp *lp)
{
    (void)lp;
    printf("tower: %ld reports, the last at %.6f\n", s->reports, s->busiest);
}

static tw_peid tower_map(tw_lpid gid)
{
    (void)gid;
    return 0;
}

static tw_lptype types[] = {
    { (init_f)airport_init, (pre_run_f)airport_pre_run, (event_f)airport_event,
      (revent_f)airport_event_rc, (commit_f)airport_commit, (final_f)airport_final,
      (map_f)tower_map, sizeof(tower_state) },
    { (init_f)NULL, (pre_run_f)NULL, (event_f)tower_event, (revent_f)NULL, (commit_f)NULL,
      (final_f)tower_final, (map_f)tower_map, sizeof(tower_state) },
    { 0 },
};

static tw_lpid type_of(tw_lpid gid)
{
    return gid == tower_id() ? 1 : 0;
}

/* the custom mapping: this process's block of ids, reversed */
static void reversed(void)
{
    for (tw_lpid i = 0; i < g_tw_nlp; i++) {
        tw_lp_onpe(i, g_tw_pe, g_tw_mynode * g_tw_nlp + g_tw_nlp - 1 - i);
        tw_kp_onpe(0, g_tw_pe);
        tw_lp_onkp(g_tw_lp[i], g_tw_kp[0]);
    }
}

/* --scatter: the ids dealt out to the PEs in turn (and with 2, each LP's type set here) */
static void dealt(void)
{
    for (tw_lpid i = 0; i < g_tw_nlp; i++) {
        tw_lp_onpe(i, g_tw_pe, i * tw_nnodes() + g_tw_mynode);
        tw_kp_onpe(0, g_tw_pe);
        tw_lp_onkp(g_tw_lp[i], g_tw_kp[0]);
        tw_lpid gid = g_tw_lp[i]->gid;
        if (scatter == 2) tw_lp_settype(i, &types[type_of(gid)]);
        if (scatter == 3) tw_lp_settype(i, &types[g_tw_mynode == home ? type_of(gid) : 0]);
    }
}

static tw_lp *dealt_lp(tw_lpid gid)
{
    return g_tw_lp[gid / tw_nnodes()];
}

static tw_lp *reversed_lp(tw_lpid gid)
{
    return g_tw_lp[g_tw_nlp - 1 - (gid - g_tw_mynode * g_tw_nlp)];
}

static void pe_final(tw_pe *pe)
{
    (void)pe;
    pe_finals++;
}

static tw_petype pe_types[] = { { NULL, NULL, NULL, (pe_final_f)pe_final, NULL }, { 0 } };

static const tw_optdef app_opt[] = {
    TWOPT_GROUP("Airports and a tower (ROSS style)"),
    TWOPT_UINT("airports", airports, "airports (LPs 0 .. airports-1; the tower is the last)"),
    TWOPT_UINT("planes", planes, "planes each airport starts with"),
    TWOPT_UINT("typemap", use_typemap, "1: LP types by g_tw_lp_typemap, not tw_lp_settype"),
    TWOPT_DOUBLE("flight", flight, "mean flight time"),
    TWOPT_UINT("scatter", scatter, "1: LP ids dealt out to the PEs in turn, 2: and typed in "
               "the mapping, 3: typed there by the process's own rank (a misuse)"),
    TWOPT_END(),
};

int main(int argc, char **argv)
{
    tw_opt_add(app_opt);
    tw_init(&argc, &argv);
    g_tw_mapping = CUSTOM;
    home = g_tw_mynode;
    g_tw_custom_initial_mapping = scatter ? &dealt : &reversed;
    g_tw_custom_lp_global_to_local_map = scatter ? &dealt_lp : &reversed_lp;
    if (use_typemap) {
        g_tw_lp_types = types;
        g_tw_lp_typemap = &type_of;
    }
    tw_define_lps(airports + 1, sizeof(tower_msg));
    for (tw_lpid i = 0; !use_typemap && scatter < 2 && i < g_tw_nlp; i++)
        tw_lp_settype(i, &types[type_of(g_tw_lp[i]->gid)]);
    tw_pe_settype(g_tw_pe, &pe_types[0]);
    tw_run();
    unsigned long total = 0, finals = pe_finals;
    MPI_Reduce(&finals, &total, 1, MPI_UNSIGNED_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (tw_ismaster()) printf("PE finals: %lu\n", total);
    tw_end();
    return 0;
}
