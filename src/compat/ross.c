/* ross.c - the ROSS layer (include/kairos/ross/ross.h): a ROSS model's LP types, LPs and
 * events as one Kairos model, run by the kairos command's own code (kr__cmd_run_model)
 * inside the model's tw_run.
 *
 * Each LP's root block, in its Kairos memory, holds its free tw_events, its random streams
 * and then its state of the type's state_sz bytes: Kairos's checkpoints roll all of it back
 * and the run digest covers it. Its tw_lp record, which does not change once made, is kept
 * apart, in a table of this process's LPs: its local id depends on how many processes run
 * (as on ROSS), and the digest must not. Its pointers into the block are made again from
 * the root at every call (a resumed run's memory lies elsewhere). A tw_event is taken from the LP's
 * block (kr_malloc when none is free) and goes back at tw_event_send, whose payload Kairos
 * copies: no per-thread scratch, which a preempted event (--preempt) would share with the
 * events that run while it waits. The handler gets a writable copy of the message on its
 * own stack. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kairos.h"
#include "ross.h"
#include "compat/ross_int.h"
#include "core/core.h"
#include "base/digest.h"
#include "net/net.h"
#include "run/command.h"

/* Where the MPI module is when the program is not beside it (CMakeLists.txt: this build's
 * and the install's) */
#ifndef KR_COMPAT_MPI_MODULES
#define KR_COMPAT_MPI_MODULES ""
#endif

tw_lpid g_tw_nlp, g_tw_total_lps, g_tw_lp_offset;
tw_peid g_tw_mynode, g_tw_masternode;
tw_synch g_tw_synchronization_protocol = NO_SYNCH;
double g_tw_ts_end = 100000.0;
double g_tw_lookahead = 0.005;
size_t g_tw_msg_sz;
tw_lptype *g_tw_lp_types;
tw_typemap_f g_tw_lp_typemap;
tw_lp_map g_tw_mapping = LINEAR;
map_custom_f g_tw_custom_initial_mapping;
map_local_f g_tw_custom_lp_global_to_local_map;
unsigned int g_tw_nRNG_per_lp = 1;
unsigned int g_tw_nRNG_core_per_lp = 1;
unsigned int g_tw_events_per_pe = 8192;
unsigned int g_tw_events_per_pe_extra;
unsigned int g_tw_mblock = 16;
unsigned int g_tw_gvt_interval = 16;
unsigned long long g_tw_clock_rate = 1000000000ull;

/* The one processing element: LP records point at it (in the program image, never written
 * while LPs run: every worker reads it). */
static tw_pe the_pe;
tw_pe *g_tw_pe = &the_pe;
tw_lp **g_tw_lp;
tw_kp **g_tw_kp;
tw_kpid g_tw_nkp = 1;
unsigned int g_tw_npe = 1;
unsigned int g_tw_memory_nqueues;
tw_lpid g_tw_rng_default = 1;

static tw_lptype **types;       /* by gid, from tw_lp_settype or the type map */
static tw_lpid *local_gid;      /* by local index: its gid (a custom mapping's choice) */
static tw_lp *placeholders;     /* what g_tw_lp points at before the run */
static const tw_petype *pe_type;
static bool inited, defined, ran;
static uint32_t seed_lp[4], seed_core[4];
static char name[64] = "ross";
static tw_peid nnodes = 1;      /* processes (PEs) of the run: mpirun's, or 1 */

static tw_lp *records;          /* this process's LPs' tw_lp records, by gid - offset */
/* Each LP's tw_events, by gid - offset. A tw_event lives from tw_event_new to
 * tw_event_send within one handler call, so each handler of the LP starts with all of them
 * free (`used` 0): an event abandoned half-way (time-sharing) loses none, and which buffer
 * a handler gets is no state of the model's, so they live outside its Kairos memory (a
 * reverse handler could not put a list's order back). An LP runs one handler at a time. */
static struct ross_events {
    tw_event **buf;
    unsigned n, used;
} *lp_events;

static size_t round16(size_t n)
{
    return (n + 15) & ~(size_t)15;
}


/* An LP's root block: its streams, then its state, here. */
static size_t state_at(void)
{
    return round16((g_tw_nRNG_per_lp + g_tw_nRNG_core_per_lp) * sizeof(tw_rng_stream));
}

/* --- what main() calls ---------------------------------------------------------------- */

void tw_init(int *argc, char ***argv)
{
    if (inited) ross_die("tw_init is called twice");
    inited = true;
    int rank;
    nnodes = (tw_peid)kr__net_launched(&rank); /* (what mpirun says; MPI starts in tw_run) */
    g_tw_mynode = (tw_peid)rank;
    kr__net_module_hint = KR_COMPAT_MPI_MODULES;
    kr__net_keep = true; /* (the model may reduce its totals after tw_run: tw_end stops it) */
    ross_rand_setup();
    ross_opts_parse(argc, argv);
    const char *prog = strrchr((*argv)[0], '/');
    snprintf(name, sizeof name, "%s", prog ? prog + 1 : (*argv)[0]);
}

/* The LP records the model sees before the run (its mapping and init fill them in). */
static void placeholders_fill(tw_lpid nlp)
{
    for (tw_lpid i = 0; i < nlp; i++) {
        local_gid[i] = g_tw_lp_offset + i;
        placeholders[i] = (tw_lp){ .id = i, .gid = local_gid[i], .pe = &the_pe };
        g_tw_lp[i] = &placeholders[i];
    }
}

/* The types by LP id, and the placeholders of g_tw_lp a mapping and tw_lp_settype see. */
static void lp_tables(void)
{
    tw_lpid nlp = g_tw_nlp;
    types = calloc(g_tw_total_lps, sizeof *types);
    local_gid = malloc(nlp * sizeof *local_gid);
    placeholders = calloc(nlp, sizeof *placeholders);
    lp_events = calloc(nlp, sizeof *lp_events);
    g_tw_lp = malloc(nlp * sizeof *g_tw_lp);
    g_tw_kp = calloc(g_tw_nkp ? g_tw_nkp : 1, sizeof *g_tw_kp);
    if (!types || !local_gid || !placeholders || !lp_events || !g_tw_lp || !g_tw_kp)
        ross_die("out of memory for %llu LPs", (unsigned long long)g_tw_total_lps);
    placeholders_fill(nlp);
}

/* PE p's local LPs as tw_define_lps gives them, before a mapping moves them. */
static void default_gids(tw_peid p)
{
    for (tw_lpid i = 0; i < g_tw_nlp; i++) {
        local_gid[i] = p * g_tw_nlp + i;
        placeholders[i].gid = local_gid[i];
    }
}

/* Mark the LPs PE p's mapping placed (local_gid) in seen[]: each LP on one PE only. */
static void mark_placed(unsigned char *seen, tw_peid p)
{
    for (tw_lpid i = 0; i < g_tw_nlp; i++) {
        if (seen[local_gid[i]])
            ross_die("the model's custom mapping places LP %llu on two PEs (PE %lu's local LP "
                     "%llu is one of them): called as each PE in turn, a mapping must give "
                     "every LP to one PE", (unsigned long long)local_gid[i], (unsigned long)p,
                     (unsigned long long)i);
        seen[local_gid[i]] = 1;
    }
}

/* What the mappings called as every PE gave each LP (ross_identity): a hash of its types
 * by LP id, each named by the order it first appears in (addresses differ between
 * processes). */
static uint64_t mapped_types;

/* t's number among the types met so far (seen, *n of them; one more if new), from 1. */
static uint64_t type_number(const tw_lptype *t, const tw_lptype **seen, unsigned *n)
{
    unsigned k = 0;
    while (k < *n && seen[k] != t) k++;
    if (k == *n && *n < 64) seen[(*n)++] = t;
    return k + 1; /* (past 64 types: the 65th and later alike) */
}

static uint64_t types_hash(void)
{
    const tw_lptype *seen[64];
    unsigned n = 0;
    uint64_t h = 0;
    for (tw_lpid id = 0; id < g_tw_total_lps; id++)
        h = kr__mix(h, types[id] ? type_number(types[id], seen, &n) : 0);
    return h;
}

static void ross_identity(FILE *f)
{
    fprintf(f, "ross-custom-mapping LP types %016llx (the mapping, called by Kairos as each "
            "PE, may read nothing of the process but g_tw_mynode)\n",
            (unsigned long long)mapped_types);
}

/* A custom mapping across processes. Kairos runs LP `gid` on the process whose block of ids
 * holds it, which need not be where the model's mapping put it (ROSS-Models' torus puts a
 * PE's network nodes in one range of ids and its MPI processes in another), and the
 * mapping is where most models set their LPs' types. So the mapping is called once more as
 * each other PE (g_tw_mynode and g_tw_lp_offset set to it), which gives every LP's type on
 * every process; this process's own placement is then put back. That the processes learnt
 * the same types is checked before the run (ross_identity: a mapping that depends on more
 * than g_tw_mynode is found there). */
static void map_other_pes(void)
{
    tw_peid me = g_tw_mynode;
    tw_lpid off = g_tw_lp_offset, *mine = malloc(g_tw_nlp * sizeof *mine);
    unsigned char *seen = calloc(g_tw_total_lps, 1);
    if (!mine || !seen) ross_die("out of memory for %llu LPs", (unsigned long long)g_tw_total_lps);
    memcpy(mine, local_gid, g_tw_nlp * sizeof *mine);
    mark_placed(seen, me);
    for (tw_peid p = 0; p < nnodes; p++) {
        if (p == me) continue;
        g_tw_mynode = p;
        g_tw_lp_offset = p * g_tw_nlp;
        default_gids(p);
        g_tw_custom_initial_mapping();
        mark_placed(seen, p);
    }
    g_tw_mynode = me;
    g_tw_lp_offset = off;
    for (tw_lpid i = 0; i < g_tw_nlp; i++) {
        local_gid[i] = mine[i];
        placeholders[i].gid = mine[i];
    }
    free(mine);
    free(seen);
    mapped_types = types_hash();
    kr__identity_extra = ross_identity;
}

static void define_check(tw_lpid nlp, size_t msg_sz)
{
    if (!inited) ross_die("tw_define_lps before tw_init");
    if (defined) ross_die("tw_define_lps is called twice");
    if (nlp == 0) ross_die("tw_define_lps: no LPs (nlp is 0)");
    if (msg_sz > KR_PAYLOAD_MAX)
        ross_die("tw_define_lps: messages of %zu bytes; Kairos carries at most %u bytes an "
                 "event: keep large data in LP states", msg_sz, KR_PAYLOAD_MAX);
}

void tw_define_lps(tw_lpid nlp, size_t msg_sz)
{
    define_check(nlp, msg_sz);
    defined = true;
    g_tw_nlp = nlp;
    g_tw_total_lps = nlp * tw_nnodes();
    g_tw_lp_offset = g_tw_mynode * nlp;
    g_tw_msg_sz = msg_sz;
    lp_tables();
    if (g_tw_mapping == CUSTOM && g_tw_custom_initial_mapping) {
        g_tw_custom_initial_mapping();
        if (nnodes > 1) map_other_pes();
    }
}

void ross_lp_onpe(tw_lpid index, tw_lpid gid)
{
    if (!defined || index >= g_tw_nlp || gid >= g_tw_total_lps)
        ross_die("tw_lp_onpe(%llu, pe, %llu): a mapping places local LPs 0 to %llu on LP ids "
                 "0 to %llu, from tw_define_lps", (unsigned long long)index,
                 (unsigned long long)gid, (unsigned long long)g_tw_nlp - 1,
                 (unsigned long long)g_tw_total_lps - 1);
    local_gid[index] = gid;
    placeholders[index].gid = gid;
}

void ross_pe_settype(const tw_petype *type)
{
    pe_type = type;
}

tw_pe *tw_getpe(tw_peid id)
{
    (void)id;
    return &the_pe;
}

void tw_lp_settype(tw_lpid lp, tw_lptype *type)
{
    if (!defined) ross_die("tw_lp_settype(%llu) before tw_define_lps", (unsigned long long)lp);
    if (lp >= g_tw_nlp)
        ross_die("tw_lp_settype(%llu): LPs of this process are 0 to %llu", (unsigned long long)lp,
                 (unsigned long long)g_tw_nlp - 1);
    if (!type || !type->event)
        ross_die("tw_lp_settype(%llu): a type with an event handler is needed",
                 (unsigned long long)lp);
    types[local_gid[lp]] = type;
}

tw_peid tw_nnodes(void)
{
    return nnodes;
}

int tw_ismaster(void)
{
    return g_tw_mynode == g_tw_masternode;
}

tw_lp *tw_getlp(tw_lpid id)
{
    ross_die("tw_getlp(%llu): on Kairos an LP's record and state are reachable only from "
             "its own handlers (their tw_lp argument)", (unsigned long long)id);
}

tw_lp *tw_getlocal_lp(tw_lpid gid)
{
    return tw_getlp(gid);
}

void st_model_settype(tw_lpid lpid, st_model_types *t)
{
    (void)lpid;
    (void)t;
}

void crv_add_custom_state_checkpoint(crv_checkpointer *c)
{
    (void)c;
}

void tw_end(void)
{
    fflush(stdout);
    kr__net_stop();
}

/* --- the model Kairos runs ------------------------------------------------------------ */

/* LP me's record, pointing into its block at root (written only when that moved: the table
 * is shared by the threads, and an LP's line stays read-only in steady state). */
static tw_lp *record(kr_lp me, char *root)
{
    tw_lp *lp = &records[me - g_tw_lp_offset];
    if (lp->cur_state != root + state_at()) {
        lp->cur_state = root + state_at();
        lp->rng = (tw_rng_stream *)root;
        lp->core_rng = g_tw_nRNG_core_per_lp ? lp->rng + g_tw_nRNG_per_lp : NULL;
    }
    return lp;
}

static void seed_streams(tw_lp *lp)
{
    uint64_t n = g_tw_nRNG_per_lp, c = g_tw_nRNG_core_per_lp;
    for (uint64_t i = 0; i < n; i++) ross_rand_seed(&lp->rng[i], seed_lp, lp->gid * n + i);
    /* (core streams after every LP's streams, as ROSS numbers them) */
    for (uint64_t j = 0; j < c; j++)
        ross_rand_seed(&lp->core_rng[j], seed_core, n * g_tw_total_lps + lp->gid * c + j);
}

void tw_rand_init_streams(tw_lp *lp, unsigned int nstreams, unsigned int n_core_streams)
{
    if (nstreams > g_tw_nRNG_per_lp || n_core_streams > g_tw_nRNG_core_per_lp)
        tw_error(TW_LOC, "LP %llu asks for %u and %u streams; g_tw_nRNG_per_lp and "
                 "g_tw_nRNG_core_per_lp allow %u and %u", (unsigned long long)lp->gid, nstreams,
                 n_core_streams, g_tw_nRNG_per_lp, g_tw_nRNG_core_per_lp);
    seed_streams(lp);
}

static void ross_init(kr_lp me)
{
    tw_lptype *t = types[me];
    lp_events[me - g_tw_lp_offset].used = 0;
    char *b = kr_calloc(1, state_at() + (t->state_sz ? t->state_sz : 1));
    kr_set_state(b);
    tw_lp *lp = record(me, b); /* (made by resolve_types) */
    seed_streams(lp);
    if (t->init) t->init(lp->cur_state, lp);
    /* (ROSS runs every init, then every pre_run: an LP sees only itself either way) */
    if (t->pre_run) t->pre_run(lp->cur_state, lp);
}

/* An event's reverse area (kr_reverse_area): its bit field, the handler's own copy of the
 * message (ROSS models write saved values into it), and under --state reverse the LP's
 * state as the forward handler left it, where its type has a commit handler: the commit
 * handler runs right after it, and its writes are undone by putting that copy back. */
#define AREA_MSG 8
_Static_assert(sizeof(tw_bf) <= AREA_MSG, "the bit field fits before the message");
static size_t commit_sz;        /* the largest state of a type with a commit handler */
static tw_lpid no_revent = UINT64_MAX; /* the first LP whose type has no reverse handler */
static struct kr_model model;   /* (below) */

static void ross_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                       void *state)
{
    (void)now;
    (void)type;
    tw_lp *lp = record(me, state);
    tw_lptype *t = lp->type;
    lp_events[me - g_tw_lp_offset].used = 0;
    /* (the event's reverse area under --state reverse, else the stack: nothing undoes the
     * event there with what the handler kept) */
    max_align_t own[(AREA_MSG + g_tw_msg_sz) / sizeof(max_align_t) + 1];
    unsigned char *area = kr__ctx.rev_area ? kr__ctx.rev_area : memset(own, 0, AREA_MSG);
    tw_bf *bf = (tw_bf *)area;
    void *msg = area + AREA_MSG;
    if (size) memcpy(msg, payload, size);
    t->event(lp->cur_state, bf, msg, lp);
    if (!t->commit) return;
    if (kr__ctx.rev_area) memcpy(area + AREA_MSG + g_tw_msg_sz, lp->cur_state, t->state_sz);
    t->commit(lp->cur_state, bf, msg, lp);
}

static void ross_reverse(kr_lp me, kr_time now, unsigned type, const void *payload,
                         size_t size, void *state, void *saved)
{
    (void)now;
    (void)type;
    (void)payload;
    (void)size;
    tw_lp *lp = record(me, state);
    tw_lptype *t = lp->type;
    unsigned char *area = saved;
    if (t->commit) memcpy(lp->cur_state, area + AREA_MSG + g_tw_msg_sz, t->state_sz);
    t->revent(lp->cur_state, (tw_bf *)area, area + AREA_MSG, lp);
}

static void ross_finish(kr_lp me, void *state)
{
    tw_lp *lp = record(me, state);
    if (lp->type->final) lp->type->final(lp->cur_state, lp);
}

static struct kr_model model = {
    .init = ross_init,
    .event = ross_event,
    .finish = ross_finish,
};

/* --check's words for byte `off` of an LP's root block: a stream, or the model's state. */
static void root_describe(size_t off, char *buf, size_t cap)
{
    size_t per = sizeof(tw_rng_stream);
    if (off < state_at())
        snprintf(buf, cap, "the LP's random stream %zu: its reverse handler calls "
                 "tw_rand_reverse_unif fewer or more times than the event drew numbers",
                 off / per);
    else
        snprintf(buf, cap, "byte %zu of the LP's state struct", off - state_at());
}

/* The first LP without a reverse handler, and the largest state with a commit handler. */
static void scan_types(void)
{
    commit_sz = 0;
    for (tw_lpid id = g_tw_lp_offset; id < g_tw_lp_offset + g_tw_nlp; id++) {
        const tw_lptype *t = types[id];
        if (!t->revent && no_revent == UINT64_MAX) no_revent = id;
        if (t->commit && t->state_sz > commit_sz) commit_sz = t->state_sz;
    }
}

/* Reverse computation when every type of the run's LPs has a reverse handler. */
static void reverse_setup(void)
{
    scan_types();
    bool all = no_revent == UINT64_MAX;
    model.reverse = all ? ross_reverse : NULL;
    kr__root_describe = root_describe;
    model.reverse_bytes = all ? AREA_MSG + g_tw_msg_sz + commit_sz : 0;
}

/* LP id has no type here: say what to do. */
static _Noreturn void untyped(tw_lpid id)
{
    if (g_tw_mapping == CUSTOM && nnodes > 1)
        ross_die("LP %llu has no type on process %llu, which Kairos gives LPs %llu to %llu "
                 "across %lu processes: the model's custom mapping placed it on another PE, "
                 "and its type was set outside the mapping function (tw_lp_settype after "
                 "tw_define_lps), which Kairos calls as each PE to learn every LP's type; set "
                 "the types in the mapping, or by g_tw_lp_typemap, or run it in one process "
                 "(--threads for parallelism)", (unsigned long long)id,
                 (unsigned long long)g_tw_mynode, (unsigned long long)g_tw_lp_offset,
                 (unsigned long long)(g_tw_lp_offset + g_tw_nlp - 1), (unsigned long)nnodes);
    ross_die("LP %llu has no type: call tw_lp_settype for every LP (or set g_tw_lp_typemap "
             "and g_tw_lp_types) before tw_run", (unsigned long long)id);
}

/* LP id's type: the one set for it, or the type map's; one without an event handler is
 * an error. */
static void type_of_lp(tw_lpid id)
{
    if (!types[id] && g_tw_lp_typemap && g_tw_lp_types)
        types[id] = &g_tw_lp_types[g_tw_lp_typemap(id)];
    if (!types[id] || !types[id]->event) untyped(id);
}

/* Every LP of this process has a type: tw_lp_settype's, or the type map's over
 * g_tw_lp_types. (Kairos gives each rank the block of LP ids ROSS's linear mapping gives
 * its PE: nlp a process, in rank order.) */
static void resolve_types(void)
{
    records = calloc(g_tw_nlp, sizeof *records);
    if (!records) ross_die("out of memory for %llu LPs", (unsigned long long)g_tw_nlp);
    for (tw_lpid id = g_tw_lp_offset; id < g_tw_lp_offset + g_tw_nlp; id++) {
        type_of_lp(id);
        /* (here, not in init: a resumed run calls no init) */
        records[id - g_tw_lp_offset] = (tw_lp){ .id = id - g_tw_lp_offset, .gid = id,
                                                .pe = &the_pe, .type = types[id] };
    }
}

/* The arguments of ROSS's rollback check: the sequential engine's --check, under the
 * reverse handlers if the model has them. */
static int check_args(const char **out)
{
    out[0] = "--sync", out[1] = "sequential", out[2] = "--check";
    if (!model.reverse) return 3;
    out[3] = "--state", out[4] = "reverse";
    return 5;
}

/* ROSS's --synch as Kairos's engine options. */
static int synch_args(const char **out)
{
    switch (g_tw_synchronization_protocol) {
    case NO_SYNCH: return 0;
    case SEQUENTIAL: out[0] = "--sync", out[1] = "sequential"; return 2;
    case CONSERVATIVE: out[0] = "--sync", out[1] = "conservative"; return 2;
    case OPTIMISTIC:
    case OPTIMISTIC_REALTIME: out[0] = "--sync", out[1] = "optimistic"; return 2;
    case OPTIMISTIC_DEBUG: /* (ROSS's check of the reverse handlers: --check runs the
                            * event, its reverse and the event again) */
    case SEQUENTIAL_ROLLBACK_CHECK: return check_args(out);
    }
    ross_die("--synch=%u: ROSS's protocols are 1 to 6", (unsigned)g_tw_synchronization_protocol);
}

/* --state reverse: every LP type of the run needs a reverse handler. */
static void reverse_missing(void)
{
    if (!model.reverse)
        ross_die("--state reverse: LP %llu's type has no reverse handler (revent_f in its "
                 "tw_lptype), and reverse computation needs one for every LP type; give it "
                 "one, or run with another --state (full, the default, needs none)",
                 (unsigned long long)no_revent);
}

/* --state MODE on a ROSS model: reverse needs its reverse handlers. */
static void state_given(const char *mode)
{
    if (!strcmp(mode, "reverse")) reverse_missing();
}

/* Kairos's options that ROSS's own say: given both ways they would disagree. */
static void refuse_own(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--end"))
            ross_die("the end time is ROSS's option here: --end=T");
        if (!strcmp(argv[i], "--lps"))
            ross_die("--lps: the LPs are what the model gives tw_define_lps");
        if (!strcmp(argv[i], "--state") && i + 1 < argc) state_given(argv[i + 1]);
    }
}

/* The kairos command line of the run: the LPs and end time ROSS's, --synch as Kairos's
 * engine options, then the options ROSS's parser left (--resume DIR among them makes it a
 * resume: kr__cmd_run_model). */
static const char **kairos_argv(int *argc)
{
    static char lps[32], end[64];
    char **rest;
    int nrest = ross_opts_rest(&rest);
    refuse_own(nrest, rest);
    snprintf(lps, sizeof lps, "%llu", (unsigned long long)g_tw_total_lps);
    snprintf(end, sizeof end, "%.17g", g_tw_ts_end);
    const char **argv = calloc((size_t)nrest + 12, sizeof *argv);
    if (!argv) ross_die("out of memory");
    int n = 0;
    argv[n++] = rest[0];
    argv[n++] = "run";
    argv[n++] = name;
    argv[n++] = "--lps", argv[n++] = lps, argv[n++] = "--end", argv[n++] = end;
    n += synch_args(argv + n);
    for (int i = 1; i < nrest; i++) argv[n++] = rest[i];
    *argc = n;
    return argv;
}

/* The model as Kairos runs it, from what main() set up. */
static void model_setup(void)
{
    resolve_types();
    reverse_setup();
    ross_opts_seeds(seed_lp, seed_core);
    if (!(g_tw_ts_end > 0)) ross_die("--end=%g: the end time must be above 0", g_tw_ts_end);
    model.name = name;
    kr__stdout_committed = true; /* (ROSS models print with printf) */
    kr__parallel_note = "the model's global variables are shared by this run's threads and "
                        "not rolled back: statistics a ROSS model keeps in globals (updated "
                        "by forward and reverse handlers) are right only on one thread (or "
                        "--synch=1); keep them in LP state (docs/from-ross-rootsim.md)";
    /* ROSS holds a model to its lookahead only when it runs conservatively: so does this */
    model.lookahead = g_tw_synchronization_protocol == CONSERVATIVE ? g_tw_lookahead : 0;
    if (g_tw_mapping == CUSTOM)
        fprintf(stderr, "kairos: note: %s: the model's custom mapping chose its LPs' ids; "
                "Kairos places LPs on threads and ranks itself\n", name);
    if (pe_type && pe_type->gvt)
        fprintf(stderr, "kairos: note: %s: the PE type's gvt callback is not called on "
                "Kairos\n", name);
}

/* After the run: a failure ends the program with the run's status (a ROSS main goes on to
 * tw_end and returns 0); else the PE type's final. */
static void run_ended(int rc)
{
    fflush(stdout);
    if (rc) {
        kr__net_stop();
        exit(rc);
    }
    if (pe_type && pe_type->final) pe_type->final(&the_pe);
}

/* The PE type's hooks around LP init (the LPs' own init runs in the engine). */
static void pe_hooks(void)
{
    if (!pe_type) return;
    if (pe_type->pre_lp_init) pe_type->pre_lp_init(&the_pe);
    if (pe_type->post_lp_init) pe_type->post_lp_init(&the_pe);
}

void tw_run(void)
{
    if (!defined) ross_die("tw_run before tw_define_lps");
    if (ran) ross_die("tw_run is called twice");
    ran = true;
    model_setup();
    pe_hooks();
    int argc;
    const char **argv = kairos_argv(&argc);
    int rc = kr__cmd_run_model(&model, argc, (char **)argv);
    free(argv);
    run_ended(rc);
}

/* --- what handlers call --------------------------------------------------------------- */

tw_stime tw_now(const tw_lp *lp)
{
    (void)lp;
    kr_time t = kr_now();
    /* (Kairos runs init at -inf and finish at +inf; ROSS's init sees 0, its final a time
     * near the end) */
    return isinf(t) ? (t < 0 ? 0.0 : g_tw_ts_end) : t;
}

/* The LP's next free tw_event, made on first use. */
static tw_event *event_buffer(struct ross_events *l)
{
    if (l->used == l->n) {
        tw_event **b = realloc(l->buf, (l->n + 1) * sizeof *b);
        size_t n = round16(sizeof(tw_event)) + (g_tw_msg_sz ? g_tw_msg_sz : 1);
        tw_event *e = malloc(n);
        if (!b || !e) tw_error(TW_LOC, "tw_event_new: out of memory (%zu bytes)", n);
        e->data = (char *)e + round16(sizeof *e);
        l->buf = b;
        l->buf[l->n++] = e;
    }
    return l->buf[l->used++];
}

tw_event *tw_event_new_user_prio(tw_lpid dest_gid, tw_stime offset_ts, tw_lp *sender,
                                 tw_stime prio)
{
    (void)prio; /* (ties are broken Kairos's way) */
    if (!sender) tw_error(TW_LOC, "tw_event_new: no sender LP");
    if (!(offset_ts >= 0))
        tw_error(TW_LOC, "tw_event_new: offset %g into the past (to LP %llu)", offset_ts,
                 (unsigned long long)dest_gid);
    if (dest_gid >= g_tw_total_lps)
        tw_error(TW_LOC, "tw_event_new: LP %llu does not exist (%llu LPs)",
                 (unsigned long long)dest_gid, (unsigned long long)g_tw_total_lps);
    tw_event *e = event_buffer(&lp_events[sender->gid - g_tw_lp_offset]);
    e->dest_lpid = dest_gid;
    e->send_lp = sender->gid;
    e->send_pe = 0;
    e->send_ts = tw_now(sender);
    e->recv_ts = e->send_ts + offset_ts;
    memset(&e->cv, 0, sizeof e->cv);
    memset(e->data, 0, g_tw_msg_sz); /* (what a model leaves unset is sent as zeros) */
    return e;
}

tw_event *tw_event_new(tw_lpid dest_gid, tw_stime offset_ts, tw_lp *sender)
{
    return tw_event_new_user_prio(dest_gid, offset_ts, sender, 1);
}

void *tw_event_data(tw_event *event)
{
    return event->data;
}

void tw_event_send(tw_event *e)
{
    /* an event at or past the end time is dropped, as ROSS drops it */
    if (e->recv_ts < g_tw_ts_end) kr_schedule(e->dest_lpid, e->recv_ts, 0, e->data, g_tw_msg_sz);
}

void tw_error(const char *file, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n') msg[--n] = 0;
    if (kr__in_lp()) kr_error("tw_error at %s:%d: %s", file, line, msg);
    ross_die("tw_error at %s:%d: %s", file, line, msg);
}

int tw_output(tw_lp *lp, const char *fmt, ...)
{
    (void)lp;
    va_list ap;
    va_start(ap, fmt);
    int n = vprintf(fmt, ap); /* (committed output in a handler: core/interpose.c) */
    va_end(ap);
    return n;
}

void *tw_calloc(const char *file, int line, const char *for_who, size_t e_sz, size_t n)
{
    size_t count = n ? n : 1, size = e_sz ? e_sz : 1;
    if (kr__in_lp()) return kr_calloc(count, size); /* (rolled back) */
    void *p = calloc(count, size);
    if (!p) ross_die("tw_calloc at %s:%d: out of memory for %s (%zu x %zu bytes)", file, line,
                     for_who ? for_who : "?", n, e_sz);
    return p;
}
