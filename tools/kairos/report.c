/* report.c - `kairos report`: runs the report script (tools/kairos_report.py, installed in
 * share/kairos) with python3, which draws the plots with matplotlib. The script is found
 * beside an installed kairos first, then in the source tree this kairos was built from. */
#include "report.h"
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "run/command.h"
#include "base/error.h"

#ifndef KAIROS_TOOLS_DIR
#error "KAIROS_TOOLS_DIR comes from CMakeLists.txt (the source tree's tools/)"
#endif

#define SCRIPT "kairos_report.py"

static bool find_script(char *buf, size_t cap)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = 0;
        char *slash = strrchr(exe, '/');
        if (slash) *slash = 0;
        if ((size_t)snprintf(buf, cap, "%s/../share/kairos/" SCRIPT, exe) < cap &&
            access(buf, R_OK) == 0)
            return true;
    }
    return (size_t)snprintf(buf, cap, "%s/" SCRIPT, KAIROS_TOOLS_DIR) < cap &&
           access(buf, R_OK) == 0;
}

int kr__report_main(int argc, char **argv)
{
    struct kr__error err = { 0 };
    char script[PATH_MAX + 64];
    if (!find_script(script, sizeof script)) {
        kr__fail(&err, KR_ERR_USAGE, "report: cannot find %s (in share/kairos beside this "
                 "kairos, or in %s): reinstall Kairos", SCRIPT, KAIROS_TOOLS_DIR);
        return kr__cmd_fail_exit(&err);
    }
    char **args = calloc((size_t)argc + 2, sizeof *args);
    if (!args) kr__fatal_oom("report arguments", ((size_t)argc + 2) * sizeof *args);
    args[0] = "python3";
    args[1] = script;
    for (int i = 1; i < argc; i++) args[i + 1] = argv[i];
    fflush(stdout);
    execvp("python3", args);
    kr__fail(&err, KR_ERR_USAGE, "report: cannot run python3 (%s): kairos report needs "
             "Python 3 with matplotlib", strerror(errno));
    free(args);
    return kr__cmd_fail_exit(&err);
}
