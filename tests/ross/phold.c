/* phold.c - PHOLD written as a ROSS model (against ross.h, unchanged on ROSS): the ROSS
 * layer's test model. Each LP starts a few events; an event goes to a random LP with
 * probability --remote, else to itself, an exponential time plus the lookahead later. The
 * forward handler keeps its choice in the bitfield and the message (for the reverse handler
 * ROSS would call), the commit handler counts remote events, final prints what some LPs
 * saw. */
#include <ross.h>

typedef struct {
    long received;   /* events this LP processed */
    long remote;     /* of them, sent on to another LP (counted by commit) */
    double last;     /* time of the last one */
    long *hops;      /* events by chain length modulo 4 (tw_calloc'd in init) */
} phold_state;

typedef struct {
    tw_lpid from;
    long hops;       /* events in this chain so far */
    double saved_last; /* (written by the handler: ROSS models save values in messages) */
} phold_msg;

static unsigned nlp = 64;
static unsigned start_events = 2;
static double remote = 0.25;
static double mean = 0.9;
static double lookahead = 0.1;
static unsigned print_every = 16;
static double fail_at = -1; /* (tests: tw_error in the first event past this time) */
static unsigned bad_reverse; /* (tests: the reverse handler forgets a draw: --check names it) */

static void send_one(tw_lp *lp, long hops, tw_bf *bf)
{
    tw_lpid dest = lp->gid;
    if (tw_rand_unif(lp->rng) <= remote) {
        if (bf) bf->c1 = 1;
        dest = (tw_lpid)tw_rand_integer(lp->rng, 0, (long)g_tw_total_lps - 1);
    }
    tw_event *e = tw_event_new(dest, tw_rand_exponential(lp->rng, mean) + lookahead, lp);
    phold_msg *m = tw_event_data(e);
    m->from = lp->gid;
    m->hops = hops;
    tw_event_send(e);
}

/* LPs in blocks of g_tw_nlp a process (ROSS calls it; Kairos places LPs itself) */
static tw_peid phold_map(tw_lpid gid)
{
    return (tw_peid)(gid / g_tw_nlp);
}

static void phold_init(phold_state *s, tw_lp *lp)
{
    s->received = 0;
    s->hops = tw_calloc(TW_LOC, "hops", sizeof *s->hops, 4);
    for (unsigned i = 0; i < start_events; i++) send_one(lp, 0, NULL);
}

static void phold_event(phold_state *s, tw_bf *bf, phold_msg *m, tw_lp *lp)
{
    if (fail_at >= 0 && tw_now(lp) > fail_at)
        tw_error(TW_LOC, "LP %llu fails at %g as asked", (unsigned long long)lp->gid, tw_now(lp));
    s->received++;
    s->hops[m->hops % 4]++;
    m->saved_last = s->last; /* (what the reverse handler restores) */
    s->last = tw_now(lp);
    send_one(lp, m->hops + 1, bf);
}

static void phold_event_rc(phold_state *s, tw_bf *bf, phold_msg *m, tw_lp *lp)
{
    s->received--;
    s->hops[m->hops % 4]--;
    tw_rand_reverse_unif(lp->rng);
    tw_rand_reverse_unif(lp->rng);
    if (bf->c1 && !bad_reverse) tw_rand_reverse_unif(lp->rng);
    s->last = m->saved_last;
}

static void phold_commit(phold_state *s, tw_bf *bf, phold_msg *m, tw_lp *lp)
{
    (void)m;
    (void)lp;
    if (bf->c1) s->remote++;
}

static void phold_final(phold_state *s, tw_lp *lp)
{
    if (lp->gid % print_every == 0)
        printf("LP %llu: %ld events, %ld sent on to others, last at %.6f, chains %ld %ld %ld "
               "%ld\n", (unsigned long long)lp->gid, s->received, s->remote, s->last,
               s->hops[0], s->hops[1], s->hops[2], s->hops[3]);
}

static tw_lptype phold_types[] = {
    { (init_f)phold_init, (pre_run_f)NULL, (event_f)phold_event, (revent_f)phold_event_rc,
      (commit_f)phold_commit, (final_f)phold_final, (map_f)phold_map, sizeof(phold_state) },
    { 0 },
};

static const tw_optdef app_opt[] = {
    TWOPT_GROUP("PHOLD (ROSS style)"),
    TWOPT_UINT("nlp", nlp, "LPs"),
    TWOPT_UINT("start-events", start_events, "events each LP starts with"),
    TWOPT_DOUBLE("remote", remote, "probability that an event goes to another LP"),
    TWOPT_DOUBLE("mean", mean, "mean of the exponential part of a delay"),
    TWOPT_DOUBLE("lookahead", lookahead, "least delay of an event"),
    TWOPT_UINT("print-every", print_every, "final prints every N-th LP"),
    TWOPT_DOUBLE("fail-at", fail_at, "tw_error in the first event past this time"),
    TWOPT_UINT("bad-reverse", bad_reverse, "the reverse handler forgets a remote event's draw"),
    TWOPT_END(),
};

int main(int argc, char **argv)
{
    tw_opt_add(app_opt);
    tw_init(&argc, &argv);
    g_tw_lookahead = lookahead;
    g_tw_events_per_pe = 2 * nlp * start_events + 4096; /* (ROSS sizes its event memory) */
    tw_define_lps(nlp, sizeof(phold_msg));
    for (tw_lpid i = 0; i < g_tw_nlp; i++) tw_lp_settype(i, &phold_types[0]);
    if (g_tw_mynode == 0)
        printf("PHOLD: %u LPs, %u start events each, remote %g, mean %g, lookahead %g\n", nlp,
               start_events, remote, mean, lookahead);
    tw_run();
    tw_end();
    return 0;
}
