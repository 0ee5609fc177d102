/* net.c - several ranks of one run: the launch recognised from the environment, the MPI
 * module found and opened, errors agreed across ranks (see net.h). */
#include "net/net.h"
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct kr__net kr__net = { .rank = 0, .size = 1 };

/* The variables the common launchers set in every rank's environment (`with`: only if that
 * one is set too). */
static const struct {
    const char *size, *rank, *with;
} launchers[] = {
    { "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", NULL }, /* Open MPI's mpirun */
    { "PMI_SIZE", "PMI_RANK", NULL },                         /* MPICH's, Intel MPI's hydra */
    { "PMIX_SIZE", "PMIX_RANK", NULL },                       /* a PMIx launcher (prun) */
    /* Slurm's srun starting an MPI job itself (--mpi=pmix sets PMIX_RANK but no size); a
     * plain srun of many tasks, a sweep of independent runs, sets no PMIx variable */
    { "SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "PMIX_RANK" },
};

static int env_int(const char *name)
{
    const char *v = getenv(name);
    if (!v || !*v) return -1;
    char *end;
    long x = strtol(v, &end, 10);
    return *end || x < 0 || x > INT_MAX ? -1 : (int)x;
}

/* The number of ranks launcher i says there are, or -1 if it did not start this process. */
static int launched_by(size_t i)
{
    if (launchers[i].with && !getenv(launchers[i].with)) return -1;
    return env_int(launchers[i].size);
}

int kr__net_launched(int *rank)
{
    *rank = 0;
    const char *off = getenv("KAIROS_MPI"); /* (each rank a run of its own: a sweep) */
    if (off && !strcmp(off, "off")) return 1;
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
        int n = launched_by(i);
        if (n < 1) continue;
        int r = env_int(launchers[i].rank);
        *rank = r >= 0 && r < n ? r : 0;
        return n;
    }
    return 1;
}

const char *kr__net_module_hint;
bool kr__net_keep;

/* The directory of the running executable into dir; false if /proc cannot say. */
static bool exe_dir(char *dir, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", dir, cap - 1);
    if (n <= 0) return false;
    dir[n] = 0;
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    return true;
}

/* Open the module: KAIROS_MPI_MODULE if set (tests, a module elsewhere), else next to the
 * executable (a build directory), else the install's library directory, else where a
 * program that links the engine says (kr__net_module_hint: the ROSS layer's build and
 * install directories, colon-separated). */
static void *open_beside(char *tried, size_t cap);

static void *hinted(char *tried, size_t cap)
{
    char list[2 * PATH_MAX + 2];
    snprintf(list, sizeof list, "%s", kr__net_module_hint ? kr__net_module_hint : "");
    void *h = NULL;
    for (char *save, *p = strtok_r(list, ":", &save); p && !h; p = strtok_r(NULL, ":", &save)) {
        size_t used = strlen(tried);
        if (used < cap) snprintf(tried + used, cap - used, ", %s", p);
        h = dlopen(p, RTLD_NOW | RTLD_GLOBAL);
    }
    return h;
}

static void *open_module(char *tried, size_t cap)
{
    void *h = open_beside(tried, cap);
    return h ? h : hinted(tried, cap);
}

static void *open_beside(char *tried, size_t cap)
{
    const char *env = getenv("KAIROS_MPI_MODULE");
    if (env) {
        snprintf(tried, cap, "%s", env);
        return dlopen(env, RTLD_NOW | RTLD_GLOBAL);
    }
    char exe[PATH_MAX];
    if (!exe_dir(exe, sizeof exe)) {
        snprintf(tried, cap, "(the executable's directory: /proc/self/exe unreadable)");
        return NULL;
    }
    /* (RTLD_GLOBAL: Open MPI opens components of its own that need libmpi's symbols) */
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/" KR_NET_MODULE, exe);
    void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
    int used = snprintf(tried, cap, "%s", path);
    if (h) return h;
    snprintf(path, sizeof path, "%s/" KR_NET_INSTALL_DIR "/" KR_NET_MODULE, exe);
    if (used > 0 && (size_t)used < cap) snprintf(tried + used, cap - (size_t)used, ", %s", path);
    return dlopen(path, RTLD_NOW | RTLD_GLOBAL);
}

static int no_module(struct kr__error *err, int size, const char *tried, const char *why)
{
    return kr__fail(err, KR_ERR_USAGE,
                    "started by mpirun as one of %d ranks, but this kairos cannot join them: "
                    "%s (looked for %s). Install Open MPI's development files "
                    "(libopenmpi-dev) and rebuild: CMake then builds " KR_NET_MODULE " next to "
                    "kairos; or run a single process without mpirun (KAIROS_MPI=off runs "
                    "each rank as a run of its own)", size, why, tried);
}

/* The MPI module's operations, or NULL if h is not this kairos's module. */
static const struct kr__net_ops *module_ops(void *h)
{
    const struct kr__net_ops *(*entry)(void) =
        (const struct kr__net_ops *(*)(void))dlsym(h, KR_NET_ENTRY);
    const struct kr__net_ops *ops = entry ? entry() : NULL;
    return ops && ops->abi == KR_NET_ABI ? ops : NULL;
}

int kr__net_start(struct kr__error *err)
{
    int rank, size = kr__net_launched(&rank);
    kr__net.rank = rank;
    kr__net.size = 1;
    if (size == 1) return KR_OK;
    /* (no other rank can be told: every rank prints, the first only) */
    kr__net.mute = rank != 0;
    char tried[2 * PATH_MAX + 160];
    void *h = open_module(tried, sizeof tried);
    if (!h) return no_module(err, size, tried, dlerror());
    const struct kr__net_ops *ops = module_ops(h);
    if (!ops)
        return no_module(err, size, tried, "the module is not this kairos's (rebuild both)");
    char why[512];
    if (ops->init(&kr__net.rank, &kr__net.size, kr__net.lib, sizeof kr__net.lib, why,
                  sizeof why))
        return kr__fail(err, KR_ERR_RESOURCE, "rank %d of %d: MPI did not start: %s", rank,
                        size, why);
    kr__net.ops = ops;
    kr__net.mute = false;
    return KR_OK;
}

/* Whether a rank's start-up status (status * 2 + 1 if it failed because another did) is a
 * failure of its own. */
static bool failed_alone(int status)
{
    return status != 0 && !(status & 1);
}

/* The rank that reports, of every rank's status * 2 + defer: the lowest that failed on its
 * own, else the lowest that failed (-1: none); *alone counts those that failed on their own. */
static int reporter(const int *all, int size, int *alone)
{
    *alone = 0;
    for (int r = 0; r < size; r++) *alone += failed_alone(all[r]);
    for (int r = 0; r < size; r++) /* one that failed on its own first, then any */
        if (failed_alone(all[r])) return r;
    for (int r = 0; r < size; r++)
        if (all[r]) return r;
    return -1;
}

/* Every rank's start-up status in `all`: the lowest failed rank reports; the others take
 * its status and stay quiet. */
static void agreed(const int *all, struct kr__error *err)
{
    int failed, first = reporter(all, kr__net.size, &failed);
    if (first >= 0 && first != kr__net.rank) {
        err->status = all[first] / 2;
        kr__net.mute = true;
        kr__net.defer = true; /* (at the next agreement too) */
    } else if (first == kr__net.rank && failed < kr__net.size && !kr__net.started) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        snprintf(err->msg, sizeof err->msg, "rank %d of %d (%d of the ranks failed, the "
                 "lowest reports): %.1400s", kr__net.rank, kr__net.size, failed, msg);
    }
}

/* Whether this run is one process (no MPI module, or one rank). */
static bool one_process(void)
{
    return !kr__net.ops || kr__net.size < 2;
}

int kr__net_agree(struct kr__error *err)
{
    if (one_process()) return err->status;
    int *all = calloc((size_t)kr__net.size, sizeof *all);
    /* (a rank that failed because another did says so: the others report first) */
    int mine = err->status ? err->status * 2 + (kr__net.defer ? 1 : 0) : 0;
    if (!all || kr__net.ops->allgather_int(mine, all)) {
        free(all);
        if (!err->status)
            kr__fail(err, KR_ERR_RESOURCE, "rank %d: the ranks could not exchange their "
                     "start-up status (MPI_Allgather failed)", kr__net.rank);
        return err->status;
    }
    agreed(all, err);
    free(all);
    return err->status;
}

/* The first line where a and b differ (a NUL-free text each), as "NAME is A on rank 0
 * and B on rank r" into out; false if none does. */
static size_t line_len(const char *a, size_t n, size_t i)
{
    if (i >= n) return 0;
    const char *e = memchr(a + i, '\n', n - i);
    return e ? (size_t)(e - a) - i : n - i;
}

/* Whether line l (n bytes) is "name value". */
static bool line_named(const char *l, size_t n, const char *name, int nlen)
{
    return n > (size_t)nlen && !memcmp(l, name, (size_t)nlen) && l[nlen] == ' ';
}

/* What follows the name (and its space) on a line that starts with it, else the line. */
static void value_of(const char *l, size_t n, const char *name, int nlen, int *vlen,
                     const char **v)
{
    bool named = line_named(l, n, name, nlen);
    *v = named ? l + nlen + 1 : n ? l : "(nothing)";
    *vlen = named ? (int)n - nlen - 1 : n ? (int)n : 9;
}

/* The first differing lines, a (la bytes) on rank 0 and b (lb) on rank r, either NULL
 * where that rank's text had ended, said as "name is 'x' on rank 0 and 'y' on rank r". */
static void describe_difference(const char *a, size_t la, const char *b, size_t lb, int r,
                                char *out, size_t cap)
{
    const char *l = a ? a : b, *va, *vb; /* (named by the line there is) */
    size_t ll = a ? la : lb;
    const char *sp = memchr(l, ' ', ll);
    int name = sp ? (int)(sp - l) : (int)ll, lva, lvb;
    value_of(a ? a : "", a ? la : 0, l, name, &lva, &va);
    value_of(b ? b : "", b ? lb : 0, l, name, &lvb, &vb);
    snprintf(out, cap, "%.*s is '%.*s' on rank 0 and '%.*s' on rank %d", name, l, lva, va, lvb,
             vb, r);
}

static bool same_line(const char *a, size_t la, const char *b, size_t lb)
{
    return la == lb && !memcmp(a, b, la);
}

static bool first_difference(const char *a, size_t na, const char *b, size_t nb, int r,
                             char *out, size_t cap)
{
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
        size_t la = line_len(a, na, i), lb = line_len(b, nb, j);
        if (i < na && j < nb && same_line(a + i, la, b + j, lb)) {
            i += la + 1;
            j += lb + 1;
            continue;
        }
        describe_difference(i < na ? a + i : NULL, la, j < nb ? b + j : NULL, lb, r, out, cap);
        return true;
    }
    return false;
}

static void not_same(struct kr__error *err, const char *diff)
{
    kr__fail(err, KR_ERR_USAGE, "the ranks do not run the same thing: %s; every rank must run "
             "the same kairos, model file, parameters and options (a stale copy of a file on "
             "one node, or another command line in an MPMD launch, would give an answer of "
             "neither run)", diff);
}

/* Rank 0: each rank's text in `all` (a length, then the bytes) against its own. */
static void compare_gathered(const char *text, size_t len, const char *all, size_t total,
                             struct kr__error *err)
{
    const char *p = all;
    char diff[512];
    uint64_t l;
    for (int r = 0; r < kr__net.size && (size_t)(p - all) + 8 <= total; r++) {
        memcpy(&l, p, sizeof l);
        p += sizeof l;
        bool cmp = r > 0 && l && len && !err->status;
        if (cmp && first_difference(text, len, p, l, r, diff, sizeof diff)) not_same(err, diff);
        p += l;
    }
}

int kr__net_same(const char *text, size_t len, struct kr__error *err)
{
    if (one_process()) return err->status;
    size_t n = sizeof(uint64_t) + len;
    char *mine = malloc(n);
    if (!mine) kr__fatal_oom("the ranks' comparison", n);
    uint64_t l = len;
    memcpy(mine, &l, sizeof l);
    memcpy(mine + sizeof l, text, len);
    void *all = NULL;
    size_t total = 0;
    int rc = kr__net.ops->gather_bytes(mine, n, &all, &total);
    free(mine);
    if (rc) {
        free(all);
        if (!err->status)
            kr__fail(err, KR_ERR_RESOURCE, "rank %d: the ranks could not compare what they "
                     "run (MPI_Gather failed)", kr__net.rank);
        return err->status;
    }
    if (all) compare_gathered(text, len, all, total, err);
    free(all);
    return err->status;
}

int kr__net_print_gathered(const char *buf, size_t len)
{
    void *all = NULL;
    size_t total = 0;
    if (kr__net.ops->gather_bytes(buf, kr__net.rank ? len : 0, &all, &total)) return -1;
    if (all) fwrite(all, 1, total, stdout);
    free(all);
    return 0;
}

void kr__net_stop(void)
{
    if (kr__net.ops) kr__net.ops->finalize();
    kr__net.ops = NULL;
}
