/* main.c - the `kairos` command line: run a model on an engine, list models, help. */
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
#include "run/options.h"
#include "core/snapshot.h"
#include "net/net.h"
#include "calibrate.h"
#include "new.h"
#include "run/command.h"
#include "report.h"
#include "trace_diff.h"

#ifndef KAIROS_VERSION
#error "KAIROS_VERSION comes from CMakeLists.txt (project VERSION)"
#endif

static void usage(FILE *f)
{
    fputs(
        "Kairos " KAIROS_VERSION " - parallel discrete event simulation (Linux x86-64)\n"
        "\n"
        "Usage:\n"
        "  kairos run MODEL [options] [-P name=value ...]   run a model\n"
        "  kairos run MODEL --help                         list the model's parameters\n"
        "  kairos resume DIR [options]                     continue the run whose snapshot\n"
        "                                                  DIR holds (--snapshot), on any\n"
        "                                                  engine: the same digest and output\n"
        "  kairos models                                   list the built-in models\n"
        "  kairos calibrate [options]                      measure the cost of extra ticks\n"
        "                                                  and pick --tick-us for this machine\n"
        "  kairos new NAME [DIR]                           write a model project that builds\n"
        "                                                  with find_package(Kairos)\n"
        "  kairos trace-diff A B                           the first committed event where\n"
        "                                                  two --trace files differ (exit 1;\n"
        "                                                  0: the same history)\n"
        "  kairos report RUN.json [RUN.json ...] -o F.html one HTML page of plots of the runs'\n"
        "                                                  --stats files (Python 3, matplotlib)\n"
        "  kairos --help | --version\n"
        "  mpirun -np N kairos run MODEL [options]         the optimistic engine across N\n"
        "                                                  processes (docs/cluster.md)\n"
        "\n"
        "MODEL is a built-in model name (see 'kairos models') or the path of a model shared\n"
        "object that exports kr_model_entry(), e.g. ./mymodel.so.\n"
        "\n"
        "Options of 'run' (and of 'resume', but for the model's parameters, --lps, --seed and\n"
        "--end, which a resumed run takes from its snapshot):\n",
        f);
    kr__options_help(f);
    fputs(
        "\n"
        "Every run prints a summary with a run digest: a hash of each LP's committed history and\n"
        "final state. It is the same for every engine, thread and rank count.\n"
        "Exit status: 0 success, 1 model or run-time error (also a failed write to stdout),\n"
        "2 bad command line, 3 internal error (an engine invariant failed: please report it),\n"
        "130/143 interrupted by SIGINT/SIGTERM (committed output, summary and --stats are\n"
        "still written; a second signal quits at once).\n",
        f);
}

static int print_version(void)
{
#if defined(__SANITIZE_THREAD__)
    puts("kairos " KAIROS_VERSION " (ThreadSanitizer build: no time-sharing)");
#elif defined(__SANITIZE_ADDRESS__)
    puts("kairos " KAIROS_VERSION " (AddressSanitizer build)");
#else
    puts("kairos " KAIROS_VERSION);
#endif
#ifdef KR_NET_BUILT
    puts("MPI: " KR_NET_MODULE " built with it (a run started by mpirun loads it)");
#else
    puts("MPI: not built (CMake found no MPI): a run is one process");
#endif
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
        !strcmp(argv[1], "help")) {
        usage(argc < 2 ? stderr : stdout); /* asked for: stdout; a mistake: stderr */
        return argc < 2 ? KR_EXIT_USAGE : 0;
    }
    if (!strcmp(argv[1], "--version")) return print_version();
    if (!strcmp(argv[1], "models")) {
        puts("Built-in models:");
        kr__models_list(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "run")) return kr__cmd_run(argc, argv);
    if (!strcmp(argv[1], "resume")) return kr__cmd_resume(argc, argv);
    if (!strcmp(argv[1], "calibrate")) return kr__calibrate_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "new")) return kr__new_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "trace-diff")) return kr__trace_diff_main(argc - 1, argv + 1);
    if (!strcmp(argv[1], "report")) return kr__report_main(argc - 1, argv + 1);
    struct kr__error err;
    kr__fail(&err, KR_ERR_USAGE, "unknown command '%s'", argv[1]);
    return kr__cmd_fail_exit(&err);
}
