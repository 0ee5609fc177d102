/* ross.h - ROSS's model API on Kairos (docs/from-ross-rootsim.md): a model written for ROSS
 * (Carothers, Bauer, Pearce: "ROSS: a high-performance, low-memory, modular Time Warp
 * system") compiles against this header unchanged, links with the kairos-ross library and
 * runs on every Kairos engine: its own main() calls tw_opt_add, tw_init, tw_define_lps,
 * tw_lp_settype, tw_run and tw_end as it does on ROSS, and Kairos runs inside tw_run.
 *
 * Written here from ROSS's documented interface (types, names and meanings), not from its
 * code. What differs, by design:
 * - LP states are rolled back by Kairos's checkpoints, and reverse handlers not called -
 *   unless the run has --state reverse (every LP type needs a reverse handler then): they
 *   undo rolled-back events, with the bit field and message the forward handler left, and
 *   nothing is checkpointed. A commit handler runs right after its event's forward handler
 *   (what it prints with printf or tw_output is committed output, rolled back with the
 *   event; under --state reverse its writes to the LP's state struct are undone too).
 * - An LP's random streams and its state live in the LP's Kairos memory, and tw_calloc
 *   from an LP's init allocates there (rolled back, counted in the digest); its tw_lp
 *   record is the layer's, the same for the whole run.
 * - Ties between events at one time are broken Kairos's way (deterministically on every
 *   engine), not by ROSS's tie-breaking streams.
 * - --synch=1 is the sequential engine, 2 the conservative one, 3 and 5 the optimistic one,
 *   4 and 6 the sequential engine with --check (4 with --state reverse where every type
 *   has a reverse handler: each event, its reverse and the event again). Every kairos run
 *   option may be given beside ROSS's (--threads 2, --stats run.json ...). Under mpirun
 *   each process is a PE, as on ROSS (tw_nnodes(), g_tw_mynode; tw_define_lps's LPs are
 *   each process's): the optimistic engine or the conservative one's windows run across
 *   them.
 * - Older ROSS spellings that ROSS-Models' models use are accepted too: g_tw_npe,
 *   g_tw_nkp, g_tw_memory_nqueues, tw_lp_onpe/tw_kp_onpe/tw_lp_onkp in custom mappings
 *   (their PE argument is not read), tw_pe_settype with or without a PE, tw_snapshot*.
 * - A model's own MPI calls around tw_run (MPI_Reduce of its totals) go through Kairos's
 *   transport: the MPI_* names below are a stand-in for the few that models use.
 */
#ifndef KAIROS_ROSS_H
#define KAIROS_ROSS_H

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef double tw_stime;
typedef uint64_t tw_lpid;
typedef unsigned long tw_peid;
typedef tw_peid tw_kpid;
typedef unsigned int tw_eventid;
typedef unsigned long long tw_stat;
typedef unsigned long long tw_clock;

#define TW_STIME_CRT(x) ((tw_stime)(x))
#define TW_STIME_DBL(x) ((double)(x))
#define TW_STIME_ADD(a, b) ((a) + (b))
#define TW_STIME_CMP(a, b) ((a) < (b) ? -1 : (a) > (b) ? 1 : 0)
#define TW_STIME_MAX DBL_MAX

#define ROSS_MAX(a, b) ((a) > (b) ? (a) : (b))
#define ROSS_MIN(a, b) ((a) < (b) ? (a) : (b))
#define MPI_TYPE_TW_STIME MPI_DOUBLE

#define TW_LOC __FILE__, __LINE__
#define TW_TRUE 1
#define TW_FALSE 0

enum tw_synch_e {
    NO_SYNCH,
    SEQUENTIAL,
    CONSERVATIVE,
    OPTIMISTIC,
    OPTIMISTIC_DEBUG,
    OPTIMISTIC_REALTIME,
    SEQUENTIAL_ROLLBACK_CHECK
};
typedef enum tw_synch_e tw_synch;

enum tw_lp_map { LINEAR, ROUND_ROBIN, CUSTOM };
typedef enum tw_lp_map tw_lp_map;

typedef struct tw_lp tw_lp;
typedef struct tw_lptype tw_lptype;
typedef struct tw_event tw_event;
typedef struct tw_pe tw_pe;
typedef struct tw_kp tw_kp;
typedef struct tw_bf tw_bf;
typedef struct tw_rng_stream tw_rng_stream;

/* The model's bits of an event (saved by the forward handler for its reverse one): zeroed
 * before each event. */
struct tw_bf {
    unsigned int c0 : 1, c1 : 1, c2 : 1, c3 : 1, c4 : 1, c5 : 1, c6 : 1, c7 : 1;
    unsigned int c8 : 1, c9 : 1, c10 : 1, c11 : 1, c12 : 1, c13 : 1, c14 : 1, c15 : 1;
    unsigned int c16 : 1, c17 : 1, c18 : 1, c19 : 1, c20 : 1, c21 : 1, c22 : 1, c23 : 1;
    unsigned int c24 : 1, c25 : 1, c26 : 1, c27 : 1, c28 : 1, c29 : 1, c30 : 1, c31 : 1;
};

/* A stream of L'Ecuyer and Andres's combined generator CLCG4: initial, segment and current
 * seeds of its four components, and the pair of uniforms behind every second normal draw
 * (ROSS's RAND_NORMAL build, its default). */
struct tw_rng_stream {
    unsigned long count;
    int32_t Ig[4];
    int32_t Lg[4];
    int32_t Cg[4];
    double tw_normal_u1;
    double tw_normal_u2;
    int tw_normal_flipflop;
};

typedef void (*init_f)(void *sv, tw_lp *me);
typedef void (*pre_run_f)(void *sv, tw_lp *me);
typedef void (*event_f)(void *sv, tw_bf *cv, void *msg, tw_lp *me);
typedef void (*revent_f)(void *sv, tw_bf *cv, void *msg, tw_lp *me);
typedef void (*commit_f)(void *sv, tw_bf *cv, void *msg, tw_lp *me);
typedef void (*final_f)(void *sv, tw_lp *me);
typedef tw_peid (*map_f)(tw_lpid gid);
typedef tw_lp *(*map_local_f)(tw_lpid gid);
typedef void (*map_custom_f)(void);
typedef tw_lpid (*tw_typemap_f)(tw_lpid gid);

struct tw_lptype {
    init_f init;
    pre_run_f pre_run;
    event_f event;
    revent_f revent;
    commit_f commit;
    final_f final;
    map_f map;
    size_t state_sz;
};

struct tw_pe {
    tw_peid id;
    tw_event *cur_event;
};

/* The PE's own callbacks (tw_pe_settype): pre_lp_init and post_lp_init run before the run,
 * final after it (outside any LP: what they print is printed at once); gvt is not called. */
typedef void (*pe_init_f)(tw_pe *pe);
typedef void (*pe_gvt_f)(tw_pe *pe);
typedef void (*pe_final_f)(tw_pe *pe);
typedef void (*pe_periodic_f)(tw_pe *pe, int32_t a);
typedef struct tw_petype {
    pe_init_f pre_lp_init;
    pe_init_f post_lp_init;
    pe_gvt_f gvt;
    pe_final_f final;
    pe_periodic_f periodic;
} tw_petype;

struct tw_lp {
    tw_lpid id;   /* local id: the same as gid in one process */
    tw_lpid gid;
    tw_pe *pe;
    tw_kp *kp;
    void *cur_state;
    tw_lptype *type;
    tw_rng_stream *rng;
    tw_rng_stream *core_rng;
    unsigned int critical_path;
};

struct tw_event {
    tw_lpid dest_lpid;
    tw_lpid send_lp;
    tw_peid send_pe;
    tw_stime recv_ts;
    tw_stime send_ts;
    tw_bf cv;
    void *data;          /* (the layer's: tw_event_data) */
};

/* Option tables: --name=value (--name alone for a flag). */
enum tw_opttype {
    TWOPTTYPE_GROUP = 1,
    TWOPTTYPE_ULONG,
    TWOPTTYPE_ULONGLONG,
    TWOPTTYPE_UINT,
    TWOPTTYPE_STIME,
    TWOPTTYPE_DOUBLE,
    TWOPTTYPE_CHAR,
    TWOPTTYPE_FLAG,
    TWOPTTYPE_ARGSFILE,
    TWOPTTYPE_SHOWHELP
};
typedef enum tw_opttype tw_opttype;
typedef struct tw_optdef {
    tw_opttype type;
    const char *name;
    const char *help;
    void *value;
} tw_optdef;

#define TWOPT_GROUP(h) { TWOPTTYPE_GROUP, NULL, (h), NULL }
#define TWOPT_ULONG(n, v, h) { TWOPTTYPE_ULONG, (n), (h), &(v) }
#define TWOPT_ULONGLONG(n, v, h) { TWOPTTYPE_ULONGLONG, (n), (h), &(v) }
#define TWOPT_UINT(n, v, h) { TWOPTTYPE_UINT, (n), (h), &(v) }
#define TWOPT_STIME(n, v, h) { TWOPTTYPE_STIME, (n), (h), &(v) }
#define TWOPT_DOUBLE(n, v, h) { TWOPTTYPE_DOUBLE, (n), (h), &(v) }
#define TWOPT_CHAR(n, v, h) { TWOPTTYPE_CHAR, (n), (h), &(v) }
#define TWOPT_ARGSFILE(n, v, h) { TWOPTTYPE_ARGSFILE, (n), (h), &(v) }
#define TWOPT_FLAG(n, v, h) { TWOPTTYPE_FLAG, (n), (h), &(v) }
#define TWOPT_END() { (tw_opttype)0, NULL, NULL, NULL }

void tw_opt_add(const tw_optdef *options);
void tw_opt_print(void);
void tw_opt_settings(FILE *f);

/* The run. */
void tw_init(int *argc, char ***argv);
void tw_define_lps(tw_lpid nlp, size_t msg_sz);
void tw_lp_settype(tw_lpid lp, tw_lptype *type);
void tw_run(void);
void tw_end(void);
tw_peid tw_nnodes(void);
int tw_ismaster(void);
tw_lp *tw_getlp(tw_lpid id);
tw_lp *tw_getlocal_lp(tw_lpid gid);
tw_pe *tw_getpe(tw_peid id);

/* Custom mappings (g_tw_mapping = CUSTOM, g_tw_custom_initial_mapping): tw_define_lps calls
 * the model's mapping, whose tw_lp_onpe(index, pe, gid) says which LP id the type set by
 * tw_lp_settype(index, ...) is for. Kairos places LPs on threads itself (said once). */
void ross_lp_onpe(tw_lpid index, tw_lpid gid);
#define tw_lp_onpe(index, pe, gid) ross_lp_onpe((index), (gid))
#define tw_kp_onpe(kp, pe) ((void)(kp))
#define tw_lp_onkp(lp, kp) ((void)(lp))
/* tw_pe_settype(type), or the older tw_pe_settype(pe, type) */
void ross_pe_settype(const tw_petype *type);
#define ROSS_LAST_(a, b, ...) b
#define tw_pe_settype(...) ross_pe_settype(ROSS_LAST_(__VA_ARGS__, __VA_ARGS__, 0))
/* ROSS's delta encoding of states: Kairos's checkpoints do its work */
#define tw_snapshot(lp, size) ((void)(lp), (void)(size))
#define tw_snapshot_delta(lp, size) ((void)(lp), (size_t)(size))
#define tw_snapshot_restore(lp, size) ((void)(lp), (void)(size))

/* Events: offsets are relative to the sender's now; one at or past the end time is
 * dropped, as ROSS drops it. */
tw_event *tw_event_new(tw_lpid dest_gid, tw_stime offset_ts, tw_lp *sender);
tw_event *tw_event_new_user_prio(tw_lpid dest_gid, tw_stime offset_ts, tw_lp *sender,
                                 tw_stime prio);
void tw_event_send(tw_event *event);
void *tw_event_data(tw_event *event);
tw_stime tw_now(const tw_lp *lp);

/* Errors, output and memory. */
void tw_error(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));
int tw_output(tw_lp *lp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void *tw_calloc(const char *file, int line, const char *for_who, size_t e_sz, size_t n);

/* Random numbers: CLCG4 streams, one per LP by default (g_tw_nRNG_per_lp), seeded as ROSS
 * seeds them, so a model draws the numbers it draws on ROSS. */
void tw_rand_init_streams(tw_lp *lp, unsigned int nstreams, unsigned int n_core_streams);
double tw_rand_unif(tw_rng_stream *g);
double tw_rand_reverse_unif(tw_rng_stream *g);
long tw_rand_integer(tw_rng_stream *g, long low, long high);
unsigned long tw_rand_ulong(tw_rng_stream *g, unsigned long low, unsigned long high);
long tw_rand_binomial(tw_rng_stream *g, long n, double p);
double tw_rand_exponential(tw_rng_stream *g, double mean);
double tw_rand_pareto(tw_rng_stream *g, double shape, double scale);
double tw_rand_gamma(tw_rng_stream *g, double shape, double scale);
long tw_rand_geometric(tw_rng_stream *g, double p);
double tw_rand_normal01(tw_rng_stream *g, unsigned int *rng_calls);
double tw_rand_normal_sd(tw_rng_stream *g, double mu, double sd, unsigned int *rng_calls);
long tw_rand_poisson(tw_rng_stream *g, double lambda);
double tw_rand_lognormal(tw_rng_stream *g, double mean, double sd, unsigned int *rng_calls);
double tw_rand_weibull(tw_rng_stream *g, double mean, double shape);

/* The globals a model reads or sets before tw_run. */
extern tw_lpid g_tw_nlp;
extern tw_lpid g_tw_total_lps;
extern tw_lpid g_tw_lp_offset;
extern tw_peid g_tw_mynode;
extern tw_peid g_tw_masternode;
extern tw_synch g_tw_synchronization_protocol;
extern double g_tw_ts_end;
extern double g_tw_lookahead;
extern size_t g_tw_msg_sz;
extern tw_lptype *g_tw_lp_types;
extern tw_typemap_f g_tw_lp_typemap;
extern tw_lp_map g_tw_mapping;
extern map_custom_f g_tw_custom_initial_mapping;
extern map_local_f g_tw_custom_lp_global_to_local_map;
extern unsigned int g_tw_nRNG_per_lp;
extern unsigned int g_tw_nRNG_core_per_lp;
extern unsigned int g_tw_events_per_pe;
extern unsigned int g_tw_events_per_pe_extra;
extern unsigned int g_tw_mblock;
extern unsigned int g_tw_gvt_interval;
extern unsigned long long g_tw_clock_rate;
extern tw_pe *g_tw_pe;
extern tw_lp **g_tw_lp; /* (before tw_run only: placeholders with id and gid) */
extern tw_kp **g_tw_kp;
extern tw_kpid g_tw_nkp;
extern unsigned int g_tw_npe;
extern unsigned int g_tw_memory_nqueues;
extern tw_lpid g_tw_rng_default;

/* ROSS's instrumentation (st_*) and its reverse-handler checker (crv_*): accepted and
 * ignored (Kairos's --stats, --lp-stats, --trace and --check do these jobs). */
typedef void (*ev_trace_f)(void *msg, tw_lp *lp, char *buffer, int *collect_flag);
typedef void (*model_stat_f)(void *sv, tw_lp *lp, char *buffer);
typedef void (*sample_event_f)(void *state, tw_bf *b, tw_lp *lp, void *sample);
typedef void (*sample_revent_f)(void *state, tw_bf *b, tw_lp *lp, void *sample);
typedef struct st_model_types {
    ev_trace_f ev_trace;
    size_t ev_sz;
    model_stat_f model_stat_fn;
    size_t mstat_sz;
    sample_event_f sample_event_fn;
    sample_revent_f sample_revent_fn;
    size_t sample_struct_sz;
} st_model_types;
void st_model_settype(tw_lpid lpid, st_model_types *types);

typedef void (*save_checkpoint_state_f)(void *into, void const *from);
typedef void (*clean_checkpoint_state_f)(void *state);
typedef bool (*check_states_f)(void *current_state, void const *before_state);
typedef void (*print_lpstate_f)(FILE *f, char const *prefix, void *state);
typedef void (*print_checkpoint_state_f)(FILE *f, char const *prefix, void *state);
typedef void (*print_event_f)(FILE *f, char const *prefix, void *lp_state, void *event_msg);
typedef struct crv_checkpointer {
    tw_lptype *lptype;
    size_t sz_storage;
    save_checkpoint_state_f save_lp;
    clean_checkpoint_state_f clean_lp;
    check_states_f check_lps;
    print_lpstate_f print_lp;
    print_checkpoint_state_f print_checkpoint;
    print_event_f print_event;
} crv_checkpointer;
void crv_add_custom_state_checkpoint(crv_checkpointer *checkpointer);

/* A stand-in for the MPI calls models make around tw_run, over Kairos's transport between
 * the processes (one process: a copy). KAIROS_ROSS_NO_MPI_SHIM leaves the names alone, for
 * a model that includes <mpi.h> itself. */
#ifndef KAIROS_ROSS_NO_MPI_SHIM
typedef int MPI_Datatype;
typedef int MPI_Op;
typedef int MPI_Comm;
enum {
    MPI_CHAR = 1, MPI_BYTE, MPI_INT, MPI_UNSIGNED, MPI_FLOAT, MPI_LONG, MPI_UNSIGNED_LONG,
    MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_DOUBLE, MPI_LONG_DOUBLE
};
#define MPI_LONG_LONG_INT MPI_LONG_LONG
enum { MPI_SUM = 1, MPI_MAX, MPI_MIN, MPI_PROD };
enum { MPI_COMM_WORLD, MPI_SUCCESS = 0 };
int ross_mpi_reduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                    int root, bool all);
int ross_mpi_barrier(void);
#define MPI_Reduce(in, out, n, type, op, root, comm)                                         \
    ross_mpi_reduce((in), (out), (n), (type), (op), (root), false)
#define MPI_Allreduce(in, out, n, type, op, comm)                                            \
    ross_mpi_reduce((in), (out), (n), (type), (op), 0, true)
#define MPI_Barrier(comm) ross_mpi_barrier()
#define MPI_Comm_rank(comm, r) (*(r) = (int)g_tw_mynode, MPI_SUCCESS)
#define MPI_Comm_size(comm, n) (*(n) = (int)tw_nnodes(), MPI_SUCCESS)
#define MPI_Abort(comm, code) (exit(code), MPI_SUCCESS)
#endif

#ifdef __cplusplus
}
#endif

#endif
