/* trace_diff.c - `kairos trace-diff A B`: the first committed event where two --trace files
 * differ. Both list the committed history one event a line in key order (run/report.c),
 * so the first line that differs is the first event the two runs did not commit alike -
 * where to look when two engines' digests differ (a model that is not rollback-safe). A
 * file that is not a regular file, or that holds fewer events than its header says or lacks
 * its end (a run that died while writing it), is refused rather than taken for a shorter
 * history. */
#include "trace_diff.h"
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "run/command.h"
#include "base/error.h"

struct trace_file {
    const char *path;
    FILE *f;
    char *line;
    size_t cap;
    char *head;          /* its first line: the model, LPs, seed, event count */
    unsigned long long n; /* events read */
    unsigned long long want; /* events its header says it holds */
    bool ended;          /* its closing line was read */
};

/* The next event line, without the separator a writer puts in front (" " or ","): NULL at
 * the end of the events. */
static const char *next_event(struct trace_file *t)
{
    ssize_t len = getline(&t->line, &t->cap, t->f);
    if (len > 0 && t->line[0] == ']') t->ended = true;
    if (len <= 0 || (t->line[0] != ' ' && t->line[0] != ',')) return NULL;
    if (t->line[len - 1] == '\n') t->line[len - 1] = 0;
    t->n++;
    return t->line + 1;
}

static int open_trace(struct trace_file *t, const char *path, struct kr__error *err)
{
    t->path = path;
    if (!(t->f = fopen(path, "r")))
        return kr__fail(err, KR_ERR_USAGE, "cannot read '%s': %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(t->f), &st) || !S_ISREG(st.st_mode)) /* (/dev/zero has no first line) */
        return kr__fail(err, KR_ERR_USAGE, "'%s' is not a regular file; give two files "
                        "written by kairos run --trace", path);
    char *second = NULL;
    size_t cap = 0, cap2 = 0;
    bool head = getline(&t->head, &cap, t->f) > 0;
    if (head && strstr(t->head, "\"kairos\":\"run\""))
        return kr__fail(err, KR_ERR_USAGE, "'%s' is a --trace-mode run trace (wall-clock "
                        "spans, different on every run); trace-diff compares the committed "
                        "history: write it with --trace-mode committed, the default", path);
    if (!head || !strstr(t->head, "\"committed history\"") ||
        getline(&second, &cap2, t->f) <= 0 || strncmp(second, "\"traceEvents\":[", 15)) {
        free(second);
        return kr__fail(err, KR_ERR_USAGE, "'%s' is not a trace written by kairos run --trace",
                        path);
    }
    free(second);
    const char *n = strstr(t->head, "\"events\":");
    t->want = n ? strtoull(n + 9, NULL, 10) : 0;
    return KR_OK;
}

/* A file that ended before its last event (its header's count, its closing line): a usage
 * error in err, else KR_OK. */
static int cut_short(const struct trace_file *t, struct kr__error *err)
{
    if (t->ended && t->n == t->want) return KR_OK;
    return kr__fail(err, KR_ERR_USAGE, "'%s' is cut short: its header says %llu events and "
                    "it holds %llu%s (a run that died while writing it, or a copy cut off?); "
                    "write it again with kairos run --trace", t->path, t->want, t->n,
                    t->ended ? "" : " and no end");
}

static void close_trace(struct trace_file *t)
{
    if (t->f) fclose(t->f);
    free(t->line);
    free(t->head);
}

/* (the virtual time of an event line, for the message) */
static const char *time_of(const char *ev, char *buf, size_t cap)
{
    const char *p = strstr(ev, "\"args\":{\"t\":");
    size_t n = p ? strcspn(p + 12, ",}") : 0;
    snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), p ? p + 12 : "?");
    return buf;
}

/* Two event lines differ (x, y; NULL: that file has no more): say where. */
static void first_difference(const struct trace_file *a, const struct trace_file *b,
                             const char *x, const char *y)
{
    char t[64];
    printf("kairos: the first difference is committed event %llu (virtual time %s):\n"
           "  %s: %s\n  %s: %s\n", x ? a->n : b->n, time_of(x ? x : y, t, sizeof t),
           a->path, x ? x : "(no more events)", b->path, y ? y : "(no more events)");
}

static int compare(struct trace_file *a, struct trace_file *b, struct kr__error *err)
{
    if (strcmp(a->head, b->head))
        printf("kairos: the runs differ in model, LPs, seed or event count:\n  %s  %s",
               a->head, b->head);
    for (;;) {
        const char *x = next_event(a);
        char *xs = x ? strdup(x) : NULL;
        const char *y = next_event(b);
        if (x && !xs) kr__fatal_oom("a trace line", strlen(x) + 1);
        if ((!x && cut_short(a, err)) || (!y && cut_short(b, err))) {
            free(xs);
            return kr__cmd_fail_exit(err);
        }
        if (!x && !y) {
            free(xs);
            printf("kairos: the same committed history: %llu events\n", a->n);
            return 0;
        }
        if (!x || !y || strcmp(xs, y)) {
            first_difference(a, b, xs, y);
            free(xs);
            return 1;
        }
        free(xs);
    }
}

int kr__trace_diff_main(int argc, char **argv)
{
    struct kr__error err = { 0 };
    if (argc != 3) {
        kr__fail(&err, KR_ERR_USAGE, "usage: kairos trace-diff A B (two files written by "
                 "kairos run --trace)");
        return kr__cmd_fail_exit(&err);
    }
    struct trace_file a = { 0 }, b = { 0 };
    int rc = open_trace(&a, argv[1], &err) || open_trace(&b, argv[2], &err)
                 ? kr__cmd_fail_exit(&err) : compare(&a, &b, &err);
    close_trace(&a);
    close_trace(&b);
    return rc;
}
