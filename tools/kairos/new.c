/* new.c - `kairos new NAME [DIR]`: write a model project that builds against an installed
 * Kairos (find_package(Kairos), docs/guide.md "Building a model") and runs as written: a
 * CMakeLists.txt, a model with init, an event handler, finish and parameters, and a README
 * with the commands. Nothing is ever overwritten: DIR must not exist, or be empty. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/error.h"
#include "run/command.h"
#include "new.h"

static const char cmake_text[] =
    "# The %1$s model: `cmake --build build` makes build/lib%1$s.so, which\n"
    "# `kairos run ./build/lib%1$s.so` loads (README.md).\n"
    "cmake_minimum_required(VERSION 3.25)\n"
    "project(%1$s C)\n"
    "find_package(Kairos 0.1 REQUIRED)\n"
    "kairos_add_model(%1$s SOURCES %1$s.c)\n"
    "\n"
    "# `ctest --test-dir build`: the model runs twice per event from the same state\n"
    "# (--check), and the optimistic engine commits what the sequential one does.\n"
    "enable_testing()\n"
    "add_test(NAME %1$s_check COMMAND ${KAIROS_EXECUTABLE} run $<TARGET_FILE:%1$s> --end 50\n"
    "         --sync sequential --check)\n"
    "# (the run digest and stdout of the sequential engine and of the optimistic engine\n"
    "# on 2 threads must be the same)\n"
    "add_test(NAME %1$s_parallel COMMAND sh -c\n"
    "  \"\\\"$0\\\" run \\\"$1\\\" --end 50 --sync sequential >seq.out 2>seq.err &&\n"
    "   \\\"$0\\\" run \\\"$1\\\" --end 50 --threads 2 >par.out 2>par.err &&\n"
    "   grep 'run digest' seq.err >seq.digest && grep 'run digest' par.err >par.digest &&\n"
    "   cmp seq.digest par.digest && cmp seq.out par.out && cat par.digest\"\n"
    "  ${KAIROS_EXECUTABLE} $<TARGET_FILE:%1$s>)\n";

static const char model_text[] =
    "/* %1$s.c - a Kairos model (docs/guide.md): every LP holds `tokens` tokens and passes\n"
    " * each on to a random LP after a delay of `lookahead` plus an exponential time of mean\n"
    " * `mean`, counting what it received; at the end each of the first LPs prints its count.\n"
    " * Replace the state, the event handler and the parameters with your own. */\n"
    "#include \"kairos.h\"\n"
    "\n"
    "enum { TOKEN };\n"
    "\n"
    "/* The LP's state: everything the handler changes lives here (kr_malloc memory), so the\n"
    " * optimistic engine can roll it back. */\n"
    "struct lp_state {\n"
    "    uint64_t received;\n"
    "};\n"
    "\n"
    "static const struct kr_param params[] = {\n"
    "    { \"tokens\", KR_PARAM_INT, \"2\", \"tokens each LP starts with\", 1, 1000 },\n"
    "    { \"mean\", KR_PARAM_DOUBLE, \"1.0\", \"mean exponential delay of a pass\", 0, 1e9 },\n"
    "    { \"lookahead\", KR_PARAM_DOUBLE, \"0.1\", \"least delay of a pass\", 0, 1e9 },\n"
    "    { 0 },\n"
    "};\n"
    "\n"
    "static void pass_on(kr_time now)\n"
    "{\n"
    "    kr_lp to = kr_random_u64() %% kr_lp_count();\n"
    "    kr_time delay = kr_param_double(\"lookahead\", 0.1) +\n"
    "                    kr_expo(kr_param_double(\"mean\", 1.0));\n"
    "    kr_schedule(to, now + delay, TOKEN, NULL, 0);\n"
    "}\n"
    "\n"
    "static void %1$s_init(kr_lp me)\n"
    "{\n"
    "    (void)me;\n"
    "    struct lp_state *s = kr_calloc(1, sizeof *s);\n"
    "    kr_set_state(s);\n"
    "    kr_set_lookahead(kr_param_double(\"lookahead\", 0.1));\n"
    "    for (int64_t i = 0; i < kr_param_int(\"tokens\", 2); i++) pass_on(0);\n"
    "}\n"
    "\n"
    "static void %1$s_event(kr_lp me, kr_time now, unsigned type, const void *payload,\n"
    "                       size_t size, void *state)\n"
    "{\n"
    "    struct lp_state *s = state;\n"
    "    (void)me, (void)type, (void)payload, (void)size;\n"
    "    s->received++;\n"
    "    pass_on(now);\n"
    "}\n"
    "\n"
    "static void %1$s_finish(kr_lp me, void *state)\n"
    "{\n"
    "    const struct lp_state *s = state;\n"
    "    if (me < 4) kr_printf(\"LP %%llu received %%llu tokens\\n\", (unsigned long long)me,\n"
    "                          (unsigned long long)s->received);\n"
    "}\n"
    "\n"
    "static const struct kr_model %1$s_model = {\n"
    "    .name = \"%1$s\",\n"
    "    .init = %1$s_init,\n"
    "    .event = %1$s_event,\n"
    "    .finish = %1$s_finish,\n"
    "    .params = params,\n"
    "};\n"
    "\n"
    "KR_MODEL_EXPORT(%1$s, %1$s_model)\n";

static const char readme_text[] =
    "# %1$s: a Kairos model\n"
    "\n"
    "Build it against Kairos (`find_package(Kairos)`: an installed Kairos under its\n"
    "prefix, or a Kairos build directory):\n"
    "\n"
    "```sh\n"
    "cmake -S . -B build %2$s\n"
    "cmake --build build\n"
    "kairos run ./build/lib%1$s.so --end 100                    # optimistic, all cores\n"
    "kairos run ./build/lib%1$s.so --end 100 --sync sequential --check   # safe to roll back?\n"
    "kairos run ./build/lib%1$s.so --help                       # its parameters\n"
    "ctest --test-dir build                                    # both, as tests\n"
    "```\n"
    "\n"
    "Every engine prints the same `run digest` for the same model, parameters and seed.\n"
    "The API is `kairos.h`; the rules a model follows are in Kairos's docs/guide.md.\n";

/* A C identifier: the model's name is also its functions' prefix and its target's name. */
static int check_name(const char *name, struct kr__error *err)
{
    static const char alpha[] = "_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    static const char alnum[] = "_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    size_t n = strlen(name);
    if (n == 0 || n > 64 || !strchr(alpha, name[0]) || strspn(name, alnum) != n)
        return kr__fail(err, KR_ERR_USAGE, "new: '%s' is not a model name: use letters, "
                        "digits and '_', starting with a letter (it names the model's "
                        "functions and library)", name);
    return KR_OK;
}

/* DIR must not exist, or be an empty directory: nothing is overwritten. */
static int make_dir(const char *dir, struct kr__error *err)
{
    if (mkdir(dir, 0777) == 0) return KR_OK;
    if (errno != EEXIST)
        return kr__fail(err, KR_ERR_RESOURCE, "new: cannot create %s: %s", dir,
                        strerror(errno));
    DIR *d = opendir(dir);
    if (!d) return kr__fail(err, KR_ERR_USAGE, "new: %s exists and is not a directory", dir);
    struct dirent *e;
    bool empty = true;
    while (empty && (e = readdir(d)))
        empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
    closedir(d);
    if (!empty)
        return kr__fail(err, KR_ERR_USAGE, "new: %s is not empty; give a new directory "
                        "(nothing is overwritten)", dir);
    return KR_OK;
}

static int write_file(const char *dir, const char *file, const char *fmt, const char *a,
                      const char *b, struct kr__error *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        return kr__fail(err, KR_ERR_RESOURCE, "new: cannot create %s: %s", path,
                        strerror(errno));
    }
    fprintf(f, fmt, a, b);
    if (ferror(f) | fclose(f))
        return kr__fail(err, KR_ERR_RESOURCE, "new: writing %s failed: %s", path,
                        strerror(errno));
    return KR_OK;
}

/* How the project's cmake finds this Kairos: the prefix it is installed in, or its build
 * directory (from where this executable is). */
static void find_hint(char *buf, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    snprintf(buf, cap, "-DCMAKE_PREFIX_PATH=<where Kairos is installed>");
    if (n <= 0) return;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    *slash = 0; /* its directory */
    char probe[PATH_MAX + 64];
    snprintf(probe, sizeof probe, "%s/KairosConfig.cmake", exe);
    if (access(probe, R_OK) == 0) {
        snprintf(buf, cap, "-DKairos_DIR=%s", exe);
        return;
    }
    if ((slash = strrchr(exe, '/'))) *slash = 0; /* bin/.. */
    snprintf(buf, cap, "-DCMAKE_PREFIX_PATH=%s", exe[0] ? exe : "/");
}

int kr__new_main(int argc, char **argv)
{
    struct kr__error err = { 0 };
    if (argc < 2 || argc > 3 || argv[1][0] == '-') {
        kr__fail(&err, KR_ERR_USAGE, "usage: kairos new NAME [DIR] (DIR: ./NAME by default)");
        return kr__cmd_fail_exit(&err);
    }
    const char *name = argv[1], *dir = argc == 3 ? argv[2] : argv[1];
    char hint[PATH_MAX + 64], file[96];
    find_hint(hint, sizeof hint);
    snprintf(file, sizeof file, "%s.c", name);
    if (check_name(name, &err) || make_dir(dir, &err) ||
        write_file(dir, "CMakeLists.txt", cmake_text, name, NULL, &err) ||
        write_file(dir, file, model_text, name, NULL, &err) ||
        write_file(dir, "README.md", readme_text, name, hint, &err))
        return kr__cmd_fail_exit(&err);
    printf("kairos: wrote the %s model in %s (CMakeLists.txt, %s, README.md); build and run it:\n"
           "  cd %s && cmake -S . -B build %s && cmake --build build\n"
           "  kairos run ./build/lib%s.so --end 100\n",
           name, dir, file, dir, hint, name);
    return 0;
}
