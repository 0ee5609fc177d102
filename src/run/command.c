/* command.c - the run and resume commands (`kairos run MODEL ...`, `kairos resume DIR`):
 * the command line read into a configuration, its files checked, the checks of a run across
 * ranks, the run, and the one place a failure becomes a message and an exit status. In the
 * library, so that a program with a model of its own (kr__cmd_run_model: the ROSS layer's
 * tw_run) runs exactly what the kairos command runs. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/core.h"
#include "base/error.h"
#include "core/interrupt.h"
#include "core/snapshot.h"
#include "net/net.h"
#include "run/options.h"
#include "run/command.h"

#ifndef KAIROS_VERSION
#error "KAIROS_VERSION comes from CMakeLists.txt (project VERSION)"
#endif

/* The directory a file path names its file in ("." for a bare name). */
static void dir_of(const char *path, char *dir, size_t cap)
{
    snprintf(dir, cap, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash == dir) slash[1] = 0;
    else if (slash) *slash = 0;
    else snprintf(dir, cap, ".");
}

/* An output file that exists: the run can write it. */
static int check_writable(const char *opt, const char *path, struct kr__error *err)
{
    if (access(path, W_OK) != 0)
        return kr__fail(err, KR_ERR_USAGE, "%s %s: cannot write it (%s)", opt, path,
                        strerror(errno));
    return KR_OK;
}

/* An output file that does not exist yet: the run can create it in its directory. */
static int check_creatable(const char *opt, const char *path, struct kr__error *err)
{
    char dir[4096];
    dir_of(path, dir, sizeof dir);
    if (access(dir, W_OK | X_OK) != 0)
        return kr__fail(err, KR_ERR_USAGE, "%s %s: cannot create it: directory %s %s", opt,
                        path, dir, errno == ENOENT ? "does not exist" : "is not writable");
    return KR_OK;
}

/* An output file that cannot be written fails now, not after the whole run. */
static int check_output_path(const char *opt, const char *path, struct kr__error *err)
{
    if (!path) return KR_OK;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return kr__fail(err, KR_ERR_USAGE, "%s %s: is a directory; give a file name (%s "
                        "%s/run.json)", opt, path, opt, path);
    if (access(path, F_OK) == 0) return check_writable(opt, path, err);
    return check_creatable(opt, path, err);
}

/* --snapshot DIR: a directory that can be written, or one that can be made (checked before
 * the run: a run that cannot write its snapshots is not the safe run it was asked to be). */
static int check_snapshot_dir(const char *dir, struct kr__error *err)
{
    struct stat st;
    if (!dir) return KR_OK;
    if (stat(dir, &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            return kr__fail(err, KR_ERR_USAGE, "--snapshot %s: not a directory; give a "
                            "directory for the snapshots (it is made if missing)", dir);
        if (access(dir, W_OK | X_OK) != 0)
            return kr__fail(err, KR_ERR_USAGE, "--snapshot %s: cannot write into it (%s)",
                            dir, strerror(errno));
        return KR_OK;
    }
    return check_output_path("--snapshot", dir, err);
}

/* The exit status of a failure (README, kairos --help): the one place statuses become
 * exit codes. */
int kr__cmd_fail_exit(const struct kr__error *err)
{
    int code = err->status == KR_ERR_USAGE ? KR_EXIT_USAGE
               : err->status == KR_ERR_INTERNAL ? KR_EXIT_INTERNAL : KR_EXIT_MODEL;
    if (kr__net.mute) return code; /* (another rank prints the run's failure) */
    fprintf(stderr, "kairos: %s%s\n", err->status == KR_ERR_INTERNAL
            ? "internal error (engine invariant violated, please report): " : "error: ",
            err->msg);
    if (err->status == KR_ERR_USAGE) fputs("(see 'kairos --help')\n", stderr);
    return code;
}

/* kairos run MODEL --help: the model's parameters. */
static int model_help(const char *model, struct kr__error *err)
{
    const struct kr_model *m = kr__model_load(model, err);
    if (!m) return err->status;
    kr__params_print(stdout, m);
    return KR_OK;
}

/* An option given that the run's engine does not read: said once, by rank 0. */
static void note_unread(const struct kr__config *c)
{
    char note[256];
    if (kr__net.rank == 0 && kr__options_unread(c, note, sizeof note))
        fprintf(stderr, "kairos: note: %s\n", note);
}

/* The configuration from the command line. */
/* Every file and directory the run will write, before it starts. */
static int check_paths(const struct kr__config *c, struct kr__error *err)
{
    if (check_output_path("--stats", c->stats_path, err) ||
        check_output_path("--lp-stats", c->lp_stats_path, err) ||
        check_output_path("--trace", c->trace_path, err) ||
        check_snapshot_dir(c->snap_dir, err))
        return err->status;
    return KR_OK;
}

/* After the command line: the defaults that depend on it (threads by the cores this rank
 * gets), the notes, the paths the run will write. */
static int configure_finish(struct kr__config *c, long ncpu, struct kr__error *err)
{
    unsigned lr, ls; /* (by default, the ranks on this machine share its cores) */
    kr__local_ranks(&lr, &ls);
    unsigned cores = ncpu > 0 ? (unsigned)ncpu : 1;
    if (kr__options_finish(c, cores / ls ? cores / ls : 1, err)) return err->status;
    note_unread(c);
    return check_paths(c, err);
}

/* The command line's options after MODEL (or DIR). */
static int parse_all(struct kr__config *c, int argc, char **argv, struct kr__error *err)
{
    for (int i = 3; i < argc; i++)
        if (kr__option_parse(c, argc, argv, &i, err)) return err->status;
    return KR_OK;
}

static int configure(struct kr__config *c, int argc, char **argv, struct kr__error *err)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (kr__options_defaults(c, err)) return err->status;
    if (c->resume_dir && kr__snapshot_config(c->resume_dir, c, err)) return err->status;
    c->own_model = kr__model_own && c->model && !strcmp(c->model, kr__model_own->name);
    if (parse_all(c, argc, argv, err)) return err->status;
    if (kr__engine_resolve(c, err)) return err->status;
    return configure_finish(c, ncpu, err);
}

/* Every worker thread of every rank needs an LP of its own. */
static int lps_short(const struct kr__config *c, int n, struct kr__error *err)
{
    unsigned t = c->threads;
    if (c->lps < (uint64_t)n * t)
        return kr__fail(err, KR_ERR_USAGE, "--lps %llu is fewer than %d ranks x %u threads: "
                        "every worker thread needs an LP of its own; give --lps %llu or more, "
                        "or fewer ranks or --threads", (unsigned long long)c->lps, n, t,
                        (unsigned long long)n * t);
    return KR_OK;
}

/* More than one rank: what only a run across ranks can get wrong, found on each rank (the
 * model's path can differ between hosts); kr__net_agree then picks the report. */
static int cluster_check(const struct kr__config *c, struct kr__error *err)
{
    int n = kr__net.size;
    if (!c->engine->ranks)
        return kr__fail(err, KR_ERR_USAGE, "--sync %s%s%s runs in one process, and mpirun "
                        "started %d: run it without mpirun (or with -np 1); across ranks run "
                        "the optimistic engine (--sync optimistic, the default) or the "
                        "conservative engine's windows scheme (--conservative windows)",
                        c->engine->name, c->engine->scheme ? " --conservative " : "",
                        c->engine->scheme ? c->engine->scheme : "", n);
    if (c->trace_path)
        return kr__fail(err, KR_ERR_USAGE, "--trace across MPI ranks is not available yet: "
                        "trace the run in one process (its committed history is the same)");
    if (lps_short(c, n, err)) return err->status;
    return kr__model_load(c->model, err) ? KR_OK : err->status;
}

/* What must be the same on every rank into f (closed): the binary, the model, the options;
 * non-zero if it could not be written. */
static int identity(FILE *f, const struct kr__config *c, struct kr__error *err)
{
    const struct kr_model *m = kr__model_load(c->model, err);
    fprintf(f, "kairos " KAIROS_VERSION " %016llx\n",
            (unsigned long long)kr__file_hash("/proc/self/exe"));
    fprintf(f, "model %s %016llx\n", m ? m->name : "?",
            (unsigned long long)kr__file_hash(c->model));
    kr__options_identity(f, c);
    if (kr__identity_extra) kr__identity_extra(f);
    return fclose(f);
}

/* Collective, more than one rank: every rank runs the same kairos, model file, parameters
 * and options, or rank 0 fails naming the first difference (kr__net_same). A rank that
 * failed already takes part with nothing to compare. */
static int cluster_same(const struct kr__config *c, struct kr__error *err)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = err->status ? NULL : open_memstream(&text, &len);
    if (f && identity(f, c, err)) len = 0;
    kr__net_same(text ? text : "", len, err);
    free(text);
    return err->status;
}

/* A run across ranks that passed every check: each rank runs its share; the lowest rank
 * whose run failed on its own reports (kr__net_agree). */
static int cluster_run(const struct kr__config *c, struct kr__error *err, int *interrupted)
{
    kr__run_main(c, err, interrupted); /* (which agrees on its set-up first) */
    return kr__net_agree(err);
}

/* The exit status of a run interrupted by signal `sig` (0: not interrupted): 128 + it -
 * across ranks on rank 0 only, the others 0: a rank's non-zero exit makes mpirun abort
 * the job, and it could cut rank 0's report short. */
static int interrupted_exit(int sig)
{
    if (!sig || (kr__net.size > 1 && kr__net.rank)) return 0;
    return 128 + sig;
}

/* The end of run and resume: the exit status (the report before MPI_Finalize: mpirun kills
 * the other ranks once one has left with a failure, and the reporter may not be the first
 * to leave), then MPI and the options go. */
static int cmd_end(struct kr__config *c, struct kr__error *err, int interrupted)
{
    int rc = err->status ? kr__cmd_fail_exit(err) : interrupted_exit(interrupted);
    kr__interrupt_done();
    if (!kr__net_keep) kr__net_stop(); /* (else the program stops it: kr__net_keep) */
    kr__options_free(c);
    return rc;
}

/* Run and resume alike, once the command line is read into c (or failed in err). */
static int run_configured(struct kr__config *c, struct kr__error *err)
{
    int interrupted = 0;
    if (!err->status && kr__net.size > 1) cluster_check(c, err);
    if (kr__net.size > 1) cluster_same(c, err);
    if (!kr__net_agree(err)) {
        if (kr__net.size == 1) kr__run_main(c, err, &interrupted);
        else cluster_run(c, err, &interrupted);
    }
    return cmd_end(c, err, interrupted);
}

/* Whether 'kairos run MODEL ...' asks for the model's help. */
static bool asks_help(int argc, char **argv)
{
    for (int i = 3; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return true;
    return false;
}

int kr__cmd_run(int argc, char **argv)
{
    struct kr__error err = { 0 };
    if (argc < 3 || argv[2][0] == '-')
        return kr__cmd_fail_exit(&(struct kr__error){ KR_ERR_USAGE, "'kairos run' needs a "
                                                      "MODEL first (see 'kairos models')" });
    if (asks_help(argc, argv)) return model_help(argv[2], &err) ? kr__cmd_fail_exit(&err) : 0;
    struct kr__config c = { .model = argv[2] };
    if (kr__net_start(&err)) return kr__cmd_fail_exit(&err);
    configure(&c, argc, argv, &err);
    return run_configured(&c, &err);
}

/* Whether a is an option of what a run is (the model's parameters, --lps, --seed, --end),
 * which a resumed run takes from its snapshot. */
static bool shape_option(const char *a)
{
    return !strcmp(a, "--lps") || !strcmp(a, "--seed") || !strcmp(a, "--end") ||
           !strncmp(a, "-P", 2);
}

/* kairos resume DIR [options]: the model, its parameters, --lps, --seed and --end come from
 * the snapshot (snapshot.c); engine options and --snapshot may be given. */
int kr__cmd_resume(int argc, char **argv)
{
    struct kr__error err = { 0 };
    if (argc < 3 || argv[2][0] == '-')
        return kr__cmd_fail_exit(&(struct kr__error){ KR_ERR_USAGE, "'kairos resume' needs DIR, "
                                              "a directory a run wrote with --snapshot" });
    for (int i = 3; i < argc; i++)
        if (shape_option(argv[i]))
            return kr__cmd_fail_exit(&(struct kr__error){ KR_ERR_USAGE, "kairos resume takes the "
                "model, its parameters, --lps, --seed and --end from the snapshot: give only "
                "the options of how to run it (--sync, --threads, --state, --snapshot ...)" });
    struct kr__config c = { .resume_dir = argv[2] };
    if (kr__net_start(&err)) return kr__cmd_fail_exit(&err);
    configure(&c, argc, argv, &err);
    return run_configured(&c, &err);
}

/* The argument after PROG run MODEL that is --resume (0: none). */
static int resume_at(int argc, char **argv)
{
    for (int i = 3; i < argc; i++)
        if (!strcmp(argv[i], "--resume")) return i;
    return 0;
}

static void take_shape(const char *v, bool lp, bool en, uint64_t *lps, double *end)
{
    if (lp) *lps = strtoull(v, NULL, 10);
    if (en) *end = strtod(v, NULL);
}

/* argv without --resume DIR, --lps N and --end T, whose values go to *lps and *end (the
 * last --end wins, as in a run); the new argc. */
static int drop_run_shape(int argc, char **argv, int at, uint64_t *lps, double *end)
{
    int n = 3;
    for (int i = 3; i < argc; i++) {
        bool lp = !strcmp(argv[i], "--lps"), en = !strcmp(argv[i], "--end");
        if (i + 1 >= argc || !(lp || en || i == at)) {
            argv[n++] = argv[i];
            continue;
        }
        take_shape(argv[i + 1], lp, en, lps, end);
        i++;
    }
    return n;
}

/* A program with a model of its own resumes itself: `--resume DIR` among the options of its
 * run (`PROG run MODEL --lps N --end T ...`) makes it kairos's resume of the snapshot in DIR,
 * which holds the LPs and the end - the program's own options, given again, must say the
 * same (the model's code built its LPs from them). The run's argv rewritten in place:
 * `PROG resume DIR` and the other options; false (err) if it cannot be. */
static bool own_resume(int *argc, char **argv, struct kr__error *err)
{
    int at = resume_at(*argc, argv);
    if (!at) return true;
    if (at + 1 >= *argc)
        return !kr__fail(err, KR_ERR_USAGE, "--resume needs DIR, a directory a run wrote with "
                         "--snapshot");
    char *dir = argv[at + 1];
    uint64_t lps = 0;
    double end = INFINITY;
    int n = drop_run_shape(*argc, argv, at, &lps, &end);
    if (kr__snapshot_same_run(dir, lps, end, err)) return false;
    argv[1] = (char *)"resume";
    argv[2] = dir;
    *argc = n;
    return true;
}

int kr__cmd_run_model(const struct kr_model *m, int argc, char **argv)
{
    kr__model_own = m;
    struct kr__error err = { 0 };
    if (!own_resume(&argc, argv, &err)) return kr__cmd_fail_exit(&err);
    return !strcmp(argv[1], "resume") ? kr__cmd_resume(argc, argv) : kr__cmd_run(argc, argv);
}
