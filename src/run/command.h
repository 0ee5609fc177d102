/* command.h - the run and resume commands (command.c), for the kairos command and for a
 * program that brings its own model (the ROSS layer). */
#ifndef KR_RUN_COMMAND_H
#define KR_RUN_COMMAND_H

#include "base/error.h"

struct kr_model;

/* kairos run MODEL [options] and kairos resume DIR [options], argv as the command has it
 * (argv[1] the command, argv[2] its MODEL or DIR): the exit status. */
int kr__cmd_run(int argc, char **argv);
int kr__cmd_resume(int argc, char **argv);
/* kr__cmd_run with a model the program holds: MODEL (argv[2]) names it, by its name. */
int kr__cmd_run_model(const struct kr_model *m, int argc, char **argv);
/* Print err ("kairos: error: ..." and, for usage errors, where to find help) and return the
 * documented exit status for it. */
int kr__cmd_fail_exit(const struct kr__error *err);

#endif
