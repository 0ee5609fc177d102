/* rootsim.c - the ROOT-Sim 3 layer (include/kairos/rootsim/ROOT-Sim.h): a ROOT-Sim model's
 * dispatcher as one Kairos model (LP_INIT as init, its events, LP_FINI as finish, the
 * `committed` test as done()), run by the kairos command's own code (kr__cmd_run_model)
 * inside RootsimRun, with the configuration's values as options and the program's own
 * command line after them (ROOT-Sim 3 models' main() takes none: it is read from
 * /proc/self/cmdline). Its calls are Kairos's model API under ROOT-Sim's names. */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kairos.h"
#include "ROOT-Sim.h"
#include "core/core.h"
#include "net/net.h"
#include "run/command.h"

/* Where the MPI module is when the program is not beside it (CMakeLists.txt) */
#ifndef KR_COMPAT_MPI_MODULES
#define KR_COMPAT_MPI_MODULES ""
#endif

static struct simulation_configuration conf;
static bool inited;
static char name[64] = "rootsim";
static _Atomic bool running;

int RootsimInit(const struct simulation_configuration *c)
{
    if (!c || !c->dispatcher) {
        fprintf(stderr, "kairos: error: RootsimInit: a configuration with a dispatcher is "
                "needed\n");
        return -1;
    }
    conf = *c;
    inited = true;
    return 0;
}

void ScheduleNewEvent(lp_id_t receiver, simtime_t timestamp, unsigned event_type,
                      const void *event_content, unsigned event_size)
{
    if (event_type >= LP_INIT)
        kr_error("ScheduleNewEvent: event type %u is the dispatcher's own (LP_INIT %u, "
                 "LP_FINI %u): use a type below %u", event_type, LP_INIT, LP_FINI, LP_INIT);
    kr_schedule(receiver, timestamp, event_type, event_content, event_size);
}

void SetState(void *new_state)
{
    kr_set_state(new_state);
}

void *rs_malloc(size_t req_size)
{
    return kr_malloc(req_size);
}

void *rs_calloc(size_t nmemb, size_t size)
{
    return kr_calloc(nmemb, size);
}

void rs_free(void *ptr)
{
    kr_free(ptr);
}

void *rs_realloc(void *ptr, size_t req_size)
{
    return kr_realloc(ptr, req_size);
}

void RootsimStop(void)
{
    if (running) raise(SIGTERM); /* (Kairos stops at a committed point, as interrupted) */
}

/* --- the model Kairos runs ------------------------------------------------------------ */

static void rs_init(kr_lp me)
{
    conf.dispatcher(me, 0.0, LP_INIT, NULL, 0, NULL);
}

static void rs_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                     void *state)
{
    conf.dispatcher(me, now, type, payload, (unsigned)size, state);
}

static void rs_finish(kr_lp me, void *state)
{
    conf.dispatcher(me, SIMTIME_MAX, LP_FINI, NULL, 0, state);
}

static bool rs_done(kr_lp me, const void *state)
{
    return conf.committed(me, state);
}

static struct kr_model model = { .init = rs_init, .event = rs_event, .finish = rs_finish };

/* The program's own arguments (argv[0] first), from the kernel: ROOT-Sim 3's main() has
 * none to pass. */
static int own_args(char ***out)
{
    static char buf[65536];
    static char *args[512];
    FILE *f = fopen("/proc/self/cmdline", "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = 0;
    int argc = 0;
    for (size_t i = 0; i < n && argc < 511; i += strlen(buf + i) + 1) args[argc++] = buf + i;
    if (!argc) args[argc++] = "rootsim";
    args[argc] = NULL;
    *out = args;
    return argc;
}

/* The optimistic engine's arguments from the configuration: threads, checkpoint period. */
static int parallel_args(const char **argv)
{
    static char threads[16], ckpt[16];
    int n = 0;
    snprintf(threads, sizeof threads, "%u", conf.n_threads);
    if (conf.n_threads) argv[n++] = "--threads", argv[n++] = threads;
    snprintf(ckpt, sizeof ckpt, "%u", conf.ckpt_interval);
    if (conf.ckpt_interval) argv[n++] = "--ckpt-interval", argv[n++] = ckpt;
    return n;
}

/* The configuration's engine settings as kairos options (at most 8 words): how many. */
static int engine_args(const char **argv)
{
    int n = 0;
    if (conf.serial) argv[n++] = "--sync", argv[n++] = "sequential";
    else n = parallel_args(argv);
    /* (gvt_period is not passed on: a period tuned for ROOT-Sim's GVT is not Kairos's) */
    if (conf.log_level == LOG_SILENT) argv[n++] = "--progress", argv[n++] = "off";
    return n;
}

/* The configuration as kairos run options, then the command line's (--resume DIR among
 * them makes it a resume: kr__cmd_run_model). */
static int kairos_argv(const char **argv, char **own, int nown)
{
    static char lps[32], end[64];
    int n = 0;
    argv[n++] = own[0];
    argv[n++] = "run";
    argv[n++] = name;
    snprintf(lps, sizeof lps, "%llu", (unsigned long long)conf.lps);
    argv[n++] = "--lps", argv[n++] = lps;
    snprintf(end, sizeof end, "%.17g", conf.termination_time);
    argv[n++] = "--end", argv[n++] = conf.termination_time > 0 ? end : "inf";
    n += engine_args(argv + n);
    for (int i = 1; i < nown; i++) argv[n++] = own[i];
    return n;
}

/* --lps on the command line, refused (with a message): the configuration sets them. */
static bool lps_given(char **own, int nown)
{
    for (int i = 1; i < nown; i++)
        if (!strcmp(own[i], "--lps")) {
            fprintf(stderr, "kairos: error: --lps: the LPs are the configuration's `lps` "
                    "(%llu), which the model's code counts on\n", (unsigned long long)conf.lps);
            return true;
        }
    return false;
}

int RootsimRun(void)
{
    if (!inited) {
        fprintf(stderr, "kairos: error: RootsimRun before RootsimInit\n");
        return KR_EXIT_USAGE;
    }
    char **own;
    int nown = own_args(&own);
    if (lps_given(own, nown)) return KR_EXIT_USAGE;
    const char *slash = strrchr(own[0], '/');
    snprintf(name, sizeof name, "%s", slash ? slash + 1 : own[0]);
    model.name = name;
    model.done = conf.committed ? rs_done : NULL;
    kr__stdout_committed = true; /* (ROOT-Sim models print with printf) */
    /* (under mpirun every process runs the model's main, as on ROOT-Sim's distributed
     * runtime: Kairos gives each its block of the configuration's LPs) */
    kr__net_module_hint = KR_COMPAT_MPI_MODULES;
    const char **argv = calloc((size_t)nown + 24, sizeof *argv);
    if (!argv) return KR_EXIT_MODEL;
    int argc = kairos_argv(argv, own, nown);
    running = true;
    int rc = kr__cmd_run_model(&model, argc, (char **)argv);
    running = false;
    free(argv);
    fflush(stdout);
    return rc;
}
