/* check.h - the tiny assertion helper of the unit tests: CHECK fails the test with the
 * file, line and expression; the test prints "N passed, 0 failed" at the end. A failed
 * check ends the process with kr__exit_now, not exit(): inside a run (the tests that step
 * engines by hand) exit() is taken for the model's (core/interpose.c) and its message would
 * follow the check's. */
#ifndef KR_TEST_CHECK_H
#define KR_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "base/error.h"

static unsigned check_count;

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        check_count++;                                                                   \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);     \
            fflush(NULL);                                                                \
            kr__exit_now(1);                                                             \
        }                                                                                \
    } while (0)

static inline int check_done(const char *name)
{
    printf("%s: %u checks passed, 0 failed\n", name, check_count);
    return 0;
}

#endif
