/* fuzz_model.c - libFuzzer target: a model's behaviour from the fuzzer's bytes. The input
 * sets --lps, --end and --seed and the 64-byte program of the test model "fuzzed"
 * (tests/models/fuzzed.c: heap churn, zero-delay chains, ties, queries, printing, model
 * errors), which runs here, in this process, on the sequential engine and then on the
 * optimistic engine in two layouts. Every engine must commit the same history: the same
 * status and message, and on success the same run digest, committed output (its hash and
 * length) and event count - anything else is a finding, and the input is kept. Then a
 * run on 2 threads writes snapshots, and its last one is resumed on two engines: the same
 * history again. */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/core.h"
#include "base/error.h"
#include "run/options.h"
#include "core/snapshot.h"

#ifndef FUZZ_MODEL_PATH
#error "FUZZ_MODEL_PATH: the path of libfuzzed.so (CMakeLists.txt)"
#endif

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
static void found(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* The folder of this process's snapshots (snapshot_leg). */
static char snap_dir[64];

#define INPUT_BYTES (3 + 64) /* (the header and the program: more is never read) */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    /* -max_len before the caller's flags (libFuzzer reads them after this call), so the
     * fuzzer makes no longer inputs, unless told otherwise */
    static char max_len[] = "-max_len=67";
    _Static_assert(INPUT_BYTES == 67, "the -max_len flag above");
    static char *args[256];
    if (*argc < 255) {
        args[0] = (*argv)[0];
        args[1] = max_len;
        for (int i = 1; i < *argc; i++) args[i + 1] = (*argv)[i];
        args[++*argc] = NULL;
        *argv = args;
    }
    snprintf(snap_dir, sizeof snap_dir, "/tmp/kr-fuzz-model-%d", (int)getpid());
    if (mkdir(snap_dir, 0700) && errno != EEXIST) found("cannot make %s", snap_dir);
    /* (committed output goes to stdout: away with it, its hash is compared) */
    int fd = open("/dev/null", O_WRONLY);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        close(fd);
    }
    return 0;
}

/* A finding: said, then exit - which libFuzzer reports, keeping the input. (Not abort():
 * the run installed Kairos's own handler for SIGABRT, which would call it a Kairos bug.) */
static void found(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("fuzz_model: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

struct outcome {
    int status;
    char msg[sizeof ((struct kr__error *)0)->msg];
    struct kr__run_outcome run;
};

static struct outcome run_config(struct kr__config *c, struct kr__error *err)
{
    int interrupted = 0, quiet = open("/dev/null", O_WRONLY), saved = dup(STDERR_FILENO);
    struct outcome o = { 0 };
    if (quiet >= 0 && saved >= 0) dup2(quiet, STDERR_FILENO); /* (each run's summary) */
    o.status = kr__run_main(c, err, &interrupted);
    if (quiet >= 0 && saved >= 0) dup2(saved, STDERR_FILENO);
    if (quiet >= 0) close(quiet);
    if (saved >= 0) close(saved);
    snprintf(o.msg, sizeof o.msg, "%s", o.status ? err->msg : "");
    if (!o.status) o.run = kr__run_last;
    kr__options_free(c);
    return o;
}

/* Resume this process's snapshot with these options. */
static struct outcome resume(const char *const *engine)
{
    char *argv[16];
    int argc = 0;
    for (; *engine; engine++) argv[argc++] = (char *)*engine;
    struct kr__config c = { .resume_dir = snap_dir };
    struct kr__error err = { 0 };
    int rc = kr__options_defaults(&c, &err);
    if (!rc) rc = kr__snapshot_config(snap_dir, &c, &err);
    for (int i = 0; !rc && i < argc; i++) rc = kr__option_parse(&c, argc, argv, &i, &err);
    if (!rc) rc = kr__options_finish(&c, 1, &err);
    if (rc) found("resuming the snapshot was refused: %s", err.msg);
    return run_config(&c, &err);
}

static struct outcome run_once(const uint8_t *d, size_t n, const char *const *engine)
{
    char num[3][24], words[8][40];
    snprintf(num[0], sizeof num[0], "%u", 3u + (n > 0 ? d[0] % 14u : 0)); /* --lps */
    snprintf(num[1], sizeof num[1], "%u", 2u + (n > 1 ? d[1] % 14u : 0)); /* --end */
    snprintf(num[2], sizeof num[2], "%u", n > 2 ? d[2] : 1u);             /* --seed */
    char *argv[40] = { "--progress", "off", "--lps", num[0], "--end", num[1], "--seed", num[2] };
    int argc = 8;
    for (int w = 0; w < 8; w++) { /* (three bytes of header, then the program) */
        uint64_t x = 0;
        for (int b = 7; b >= 0; b--) {
            size_t at = 3 + 8 * (size_t)w + (size_t)b;
            x = x << 8 | (at < n ? d[at] : 0);
        }
        if (!x) continue;
        snprintf(words[w], sizeof words[w], "p%d=%lld", w, (long long)x);
        argv[argc++] = "-P";
        argv[argc++] = words[w];
    }
    for (; *engine; engine++) argv[argc++] = (char *)*engine;
    struct kr__config c = { .model = FUZZ_MODEL_PATH };
    struct kr__error err = { 0 };
    int rc = kr__options_defaults(&c, &err);
    for (int i = 0; !rc && i < argc; i++) rc = kr__option_parse(&c, argc, argv, &i, &err);
    if (!rc) rc = kr__options_finish(&c, 1, &err);
    if (rc) found("the target's command line was refused: %s", err.msg);
    return run_config(&c, &err);
}

static void same(const struct outcome *a, const struct outcome *b, const char *what)
{
    if (a->status == b->status && !strcmp(a->msg, b->msg) &&
        !memcmp(&a->run, &b->run, sizeof a->run))
        return;
    fprintf(stderr, "fuzz_model: %s differs from the sequential engine:\n"
            "  sequential: status %d, digest %016llx, output %llu bytes (%016llx), %llu events"
            "%s%s\n  %s: status %d, digest %016llx, output %llu bytes (%016llx), %llu events"
            "%s%s\n", what, a->status, (unsigned long long)a->run.digest,
            (unsigned long long)a->run.out_bytes, (unsigned long long)a->run.out_hash,
            (unsigned long long)a->run.committed, a->status ? ": " : "", a->msg, what,
            b->status, (unsigned long long)b->run.digest, (unsigned long long)b->run.out_bytes,
            (unsigned long long)b->run.out_hash, (unsigned long long)b->run.committed,
            b->status ? ": " : "", b->msg);
    found("%s", "the engines disagree");
}

/* A run on 2 threads writing snapshots (each 1/3 or so of --end, taken amid rollbacks),
 * its last one resumed on the sequential engine and on 3 threads: the history of the run
 * that never stopped. (A state holding a number that equals a foreign address skips its
 * snapshots with a warning: then there may be none to resume.) */
static void snapshot_leg(const uint8_t *d, size_t n, const struct outcome *a)
{
    static const char *const rs[] = { "--sync", "sequential", "--progress", "off", NULL };
    static const char *const r3[] = { "--threads", "3", "--progress", "off", NULL };
    char every[24], path[96];
    snprintf(every, sizeof every, "%u", 1u + (n > 1 ? d[1] % 14u : 0) / 3u);
    const char *const writer[] = { "--threads", "2", "--snapshot", snap_dir,
                                   "--snapshot-every", every, NULL };
    snprintf(path, sizeof path, "%s/snapshot", snap_dir);
    unlink(path);
    struct outcome w = run_once(d, n, writer);
    same(a, &w, "optimistic, 2 threads, writing snapshots");
    if (access(path, R_OK)) return;
    struct outcome b = resume(rs);
    same(a, &b, "the snapshot resumed on the sequential engine");
    struct outcome c = resume(r3);
    same(a, &c, "the snapshot resumed on 3 threads");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const seq[] = { "--sync", "sequential", NULL };
    static const char *const opt2[] = { "--threads", "2", "--check", NULL };
    static const char *const opt3[] = { "--threads", "3", "--state", "page", "--cancel", "lazy",
                                        NULL };
    struct outcome a = run_once(data, size, seq);
    if (a.status && a.status != KR_ERR_MODEL) /* (only the model may fail) */
        found("the sequential run failed with status %d: %s", a.status, a.msg);
    struct outcome b = run_once(data, size, opt2);
    same(&a, &b, "optimistic, 2 threads, --check");
    struct outcome c = run_once(data, size, opt3);
    same(&a, &c, "optimistic, 3 threads, --state page, --cancel lazy");
    if (!a.status) snapshot_leg(data, size, &a);
    return 0;
}
