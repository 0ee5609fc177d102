/* error.c - see error.h. */
#include "error.h"
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "core.h"

_Noreturn void kr__fatal_oom(const char *what, size_t bytes)
{
    fprintf(stderr, "kairos: error: out of memory allocating %zu bytes for %s; reduce --lps or "
            "the model's state, or run on a machine with more memory\n", bytes, what);
    fflush(stdout);
    _exit(KR_EXIT_MODEL);
}

_Noreturn void kr__usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("kairos: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputs("\n(see 'kairos --help')\n", stderr);
    va_end(ap);
    exit(KR_EXIT_USAGE);
}

void kr__model_error(const char *fmt, ...)
{
    char where[256], what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    kr__ctx_where(where, sizeof where);
    size_t need = strlen(where) + strlen(what) + 32;
    char *msg = malloc(need);
    if (!msg) kr__fatal_oom("error message", need);
    snprintf(msg, need, "%s: %s", where, what);
    if (kr__ctx.ops && kr__ctx.ops->fail) kr__ctx.ops->fail(&kr__ctx, msg);
    kr__die(msg);
}

_Noreturn void kr__internal_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fflush(stdout);
    fputs("kairos: internal error (engine invariant violated, please report): ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    _exit(KR_EXIT_INTERNAL);
}

static _Noreturn void output_failed(int err)
{
    fprintf(stderr, "kairos: error: writing the committed output to stdout failed (%s): the "
            "output is incomplete\n", strerror(err));
    fflush(stderr);
    _exit(KR_EXIT_MODEL);
}

void kr__stdout_flush(void)
{
    errno = 0;
    if (fflush(stdout) == EOF) output_failed(errno ? errno : EIO);
    if (ferror(stdout)) output_failed(EIO);
}

_Noreturn void kr__die(const char *msg)
{
    fflush(stdout);
    fprintf(stderr, "kairos: error: %s\n", msg);
    fflush(stderr);
    _exit(KR_EXIT_MODEL);
}
