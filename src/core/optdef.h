/* optdef.h - one row of the 'kairos run' option table: an option's name, the field it sets,
 * how its value is read and checked, its default, its help and its --stats name. The run's
 * rows are in run/options.c; each engine brings the rows of its own options in its
 * descriptor (struct kr__engine: options, ended by a row without a name), fields of its
 * own record, which the configuration holds without seeing its type (core.h,
 * kr__engine_opts). */
#ifndef KR_CORE_OPTDEF_H
#define KR_CORE_OPTDEF_H

#include <stdbool.h>
#include <stddef.h>

/* How a value is read, and the type of the field it goes to. */
enum kr__opt_kind {           /* (the numeric kinds first) */
    KR_OPT_UINT,    /* unsigned: a whole number in [min, max]; with `autoz`, "auto" is 0 */
    KR_OPT_U64,     /* uint64_t: a whole number in [min, max] */
    KR_OPT_SIZE,    /* size_t: a whole number in [min, max] */
    KR_OPT_BYTES,   /* size_t: a size with a K, M or G suffix */
    KR_OPT_TIME,    /* double: a positive number or inf, in [min, max] */
    KR_OPT_REAL,    /* double: a finite number >= min */
    KR_OPT_CHOICE,  /* int: one of `names`, the value its index (or `values`) */
    KR_OPT_SWITCH,  /* bool: two names, false and true (or as `values` says) */
    KR_OPT_FLAG,    /* bool: no value, set true */
    KR_OPT_STRING,  /* const char *: taken as it is */
    KR_OPT_ENGINE,  /* const struct kr__engine *: by name (run/engines.c) */
    KR_OPT_STATE,   /* int: a state-saving mode by name (state/mode.c); read only by the
                     * engines that roll LP state back (kairos --help says which) */
};

struct kr__opt {
    const char *name;          /* "--threads" */
    const char *arg;           /* what its value looks like in --help ("N"), NULL: a flag */
    enum kr__opt_kind kind;
    size_t off;                /* of its field in its record: struct kr__config for the
                                * run's rows, the engine's own record for an engine's */
    const char *def;           /* default, read like a command-line value; NULL: set in code */
    double min, max;
    const char *const *names;  /* CHOICE, SWITCH: NULL-terminated */
    const int *values;         /* CHOICE, SWITCH: each name's value (NULL: its index) */
    unsigned names_shown;      /* CHOICE: names listed in messages (the rest are for tests) */
    bool autoz;                /* UINT: "auto" is 0 */
    bool json_auto;            /* UINT: 0 is "auto" in --stats */
    bool json_bool;            /* SWITCH: written to --stats as a boolean (on/off) */
    const char *what;          /* REAL: what a value must be; TIME: the unit and why of
                                * its range (for messages) */
    void (*after)(void *rec);  /* after the command line set it, with its record */
    bool local;                /* may differ between MPI ranks (kr__options_identity) */
    bool schemes;              /* chooses its engine's scheme: read by every one of them */
    const char *json;          /* member of --stats "config", NULL: none */
    const char *help;          /* prose, wrapped by kr__options_help; a line that starts
                                * with two spaces is a table row, kept as it is */
};

#endif
