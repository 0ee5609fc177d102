/* options.h - the options of 'kairos run' in one table (options.c): each binds its name, its
 * field of struct kr__config, how its value is read and checked, its default, the engines it
 * is for, its help text and its name in the --stats "config" object. Parsing, defaults,
 * --help and that object are all made from the table, so an option is written once. */
#ifndef KR_RUN_OPTIONS_H
#define KR_RUN_OPTIONS_H

#include <stdio.h>
#include "core/core.h"
#include "base/error.h"

/* Each returns KR_OK or fills err (error.h). */

/* Defaults of every option (the engine's thread count is left 0: kr__options_finish). */
int kr__options_defaults(struct kr__config *c, struct kr__error *err);
/* Read the option at argv[*i] (and its value, moving *i past it); KR_ERR_USAGE if it is not
 * one or its value is bad. */
int kr__option_parse(struct kr__config *c, int argc, char **argv, int *i,
                     struct kr__error *err);
/* After parsing: the engine's checks and its default thread count (ncpu cores). */
int kr__options_finish(struct kr__config *c, unsigned ncpu, struct kr__error *err);
/* After kr__options_finish: a note (written into buf) naming an option given that the
 * run's engine does not read, or NULL. */
const char *kr__options_unread(const struct kr__config *c, char *buf, size_t cap);
/* Free what parsing allocated (the -P list). */
void kr__options_free(struct kr__config *c);
/* The "Options of 'run':" part of kairos --help. */
void kr__options_help(FILE *f);
/* One line per option that decides what a run computes or how its ranks work together
 * ("--seed 1"), then the -P values sorted by name: what every MPI rank must share. */
void kr__options_identity(FILE *f, const struct kr__config *c);
/* The members of --stats "config" (after its opening brace; no trailing comma). */
void kr__options_json(FILE *f, const struct kr__config *c);

#endif
