/* models.c - finding a model: built-in models by name, outside models as shared objects
 * that export kr_model_entry(). */
#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include "core/core.h"
#include "base/error.h"

const struct kr_model *kr_builtin_phold(void);
const struct kr_model *kr_builtin_queueing(void);
const struct kr_model *kr_builtin_membench(void);
const struct kr_model *kr_builtin_pcs(void);
const struct kr_model *kr_builtin_datastore(void);
const struct kr_model *kr_builtin_null(void);
const struct kr_model *kr_builtin_life(void);
const struct kr_model *kr_builtin_commo(void);

static const struct {
    const char *name;
    const struct kr_model *(*entry)(void);
    const char *what;
} builtins[] = {
    { "phold", kr_builtin_phold, "PHOLD synthetic benchmark (defaults: PHOLD-std)" },
    { "queueing", kr_builtin_queueing, "TWOS queueing network: source A, FIFO servers B, C, D" },
    { "membench", kr_builtin_membench, "ROOT-Sim memory benchmark: lists of buffers migrating "
      "between LPs, read/write span" },
    { "pcs", kr_builtin_pcs, "personal communication system: hexagonal cells, channels, calls, "
      "handoffs, fading" },
    { "datastore", kr_builtin_datastore, "distributed key/value store: nodes, batches of "
      "transactions in round-robin, remote partitions by message" },
    { "null", kr_builtin_null, "the null model of Horizon: modules running events of no work "
      "that last a while (expanded events), to measure an engine's cost per event" },
    { "life", kr_builtin_life, "TWOS Game of Life: LPs own blocks of a torus, edges exchanged "
      "each generation as same-time bundles" },
    { "commo", kr_builtin_commo, "TWOS command and control: sensors report moving targets up "
      "a chain of command, commanders ask readiness with queries and order engagements" },
};

void kr__models_list(FILE *f)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        fprintf(f, "  %-10s %s\n", builtins[i].name, builtins[i].what);
}

/* A name's characters are printable, and neither quotes nor backslashes (they go into JSON
 * and CSV as they are). */
static bool name_char(char c)
{
    return c >= 0x20 && c < 0x7f && !strchr("\"\\", c);
}

/* type_names and metrics: each 1 to 63 printable characters without quotes or
 * backslashes (they go into JSON and messages as they are), at most `max` of them (a list
 * without its NULL would be read past its end); metrics' names also differ. */
/* 1 to 63 printable characters without quotes or backslashes. */
static bool name_ok(const char *s)
{
    size_t n = strlen(s);
    bool ok = n >= 1 && n <= 63;
    for (size_t k = 0; ok && k < n; k++) ok = name_char(s[k]);
    return ok;
}

/* list[i] is the name of an earlier entry: the error that says which. */
static int same_name(const struct kr_model *m, const char *const *list, const char *what,
                     unsigned i, struct kr__error *err)
{
    for (unsigned j = 0; j < i; j++)
        if (!strcmp(list[j], list[i]))
            return kr__fail(err, KR_ERR_USAGE, "model '%s': %s[%u] and [%u] are both "
                            "\"%s\": each metric needs a name of its own", m->name, what,
                            j, i, list[i]);
    return KR_OK;
}

static int bad_names(const struct kr_model *m, const char *const *list, const char *what,
                     unsigned max, bool distinct, struct kr__error *err)
{
    for (unsigned i = 0; list && list[i]; i++) {
        const char *s = list[i];
        if (i >= max || !name_ok(s))
            return kr__fail(err, KR_ERR_USAGE, "model '%s': %s[%u] is not a name of 1 to 63 "
                            "printable characters without quotes or backslashes (or the list "
                            "lacks its NULL end within %u names)", m->name, what, i, max);
        if (distinct && same_name(m, list, what, i, err)) return err->status;
    }
    return KR_OK;
}

static int bad_lists(const struct kr_model *m, struct kr__error *err)
{
    if (bad_names(m, m->type_names, "type_names", KR_TYPE_NAMES_MAX, false, err))
        return err->status;
    return bad_names(m, m->metrics, "metrics", KR_METRICS_MAX, true, err);
}

static bool declares_ledger(const struct kr_model *m)
{
    return m->ledger_size || m->ledger_bytes || m->commit_end;
}

static int bad_ledger(const struct kr_model *m, struct kr__error *err)
{
    if (declares_ledger(m) && !m->commit)
        return kr__fail(err, KR_ERR_USAGE, "model '%s' declares a ledger (ledger_size, "
                        "ledger_bytes or commit_end) and no commit hook, the one place a "
                        "ledger is written: set .commit, or drop the ledger", m->name);
    if (m->ledger_size && m->ledger_bytes)
        return kr__fail(err, KR_ERR_USAGE, "model '%s' declares both ledger_size and "
                        "ledger_bytes: give the size one way (ledger_bytes when it depends on "
                        "parameters)", m->name);
    if (m->ledger_size > KR_LEDGER_MAX)
        return kr__fail(err, KR_ERR_USAGE, "model '%s' declares a ledger_size of %zu bytes; at "
                        "most %u are allowed (it is kept in memory and in every snapshot): keep "
                        "large tables in LP states", m->name, m->ledger_size, KR_LEDGER_MAX);
    return KR_OK;
}

/* Reverse computation's fields (struct kr_model.reverse). */
static int bad_reverse(const struct kr_model *m, struct kr__error *err)
{
    if (m->reverse_bytes && !m->reverse)
        return kr__fail(err, KR_ERR_USAGE, "model '%s' declares reverse_bytes but no reverse "
                        "handler: the reverse area is for struct kr_model.reverse", m->name);
    if (m->reverse_bytes > KR_REVERSE_MAX)
        return kr__fail(err, KR_ERR_USAGE, "model '%s' declares reverse_bytes of %zu; at most "
                        "%u are allowed (one area per processed event): keep larger saved "
                        "values in the LP's state", m->name, m->reverse_bytes,
                        (unsigned)KR_REVERSE_MAX);
    return KR_OK;
}

/* A lookahead the model cannot have; KR_OK: none wrong. */
static int bad_lookahead(const struct kr_model *m, struct kr__error *err)
{
    if (m->lookahead < 0 || m->lookahead != m->lookahead)
        return kr__fail(err, KR_ERR_USAGE, "model '%s' declares a negative or NaN lookahead",
                        m->name);
    if (m->lookahead && m->run_lookahead)
        return kr__fail(err, KR_ERR_USAGE, "model '%s' declares both lookahead and "
                        "run_lookahead: give it one way (run_lookahead when it depends on "
                        "parameters)", m->name);
    return KR_OK;
}

/* Flags this Kairos does not know; KR_OK: none. */
static int bad_flags(const struct kr_model *m, struct kr__error *err)
{
    unsigned known = KR_MODEL_MARKS_WRITES | KR_MODEL_BUNDLES | KR_MODEL_TYPE_ORDER;
    if (!(m->flags & ~known)) return KR_OK;
    return kr__fail(err, KR_ERR_USAGE, "model '%s' declares flags 0x%x that this Kairos does not "
                    "know (KR_MODEL_MARKS_WRITES, KR_MODEL_BUNDLES, KR_MODEL_TYPE_ORDER are "
                    "0x7): a model built for a newer Kairos, or a typo", m->name,
                    m->flags & ~known);
}

/* The model's declarations, each checked (the first error stops them). */
static int bad_model(const struct kr_model *m, struct kr__error *err)
{
    static int (*const bad[])(const struct kr_model *, struct kr__error *) = {
        bad_lookahead, bad_flags, bad_reverse, bad_ledger, bad_lists,
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (bad[i](m, err)) return err->status;
    return KR_OK;
}

static const struct kr_model *check(const struct kr_model *m, const char *from,
                                   struct kr__error *err)
{
    if (!m) kr__fail(err, KR_ERR_USAGE, "%s returned no model (kr_model_entry() gave NULL)", from);
    else if (!m->name || !m->event)
        kr__fail(err, KR_ERR_USAGE, "model from %s is incomplete: struct kr_model needs a name "
                 "and an event handler", from);
    else if (!bad_model(m, err))
        return m;
    return NULL;
}

static const struct kr_model *builtin(const char *name, struct kr__error *err)
{
    char names[256] = "";
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
        if (!strcmp(builtins[i].name, name)) return check(builtins[i].entry(), name, err);
        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", i ? ", " : "",
                 builtins[i].name);
    }
    kr__fail(err, KR_ERR_USAGE, "unknown model '%s'; the built-in models are %s ('kairos "
             "models' says what they are), or give the path of a model shared object, e.g. "
             "./mymodel.so", name, names);
    return NULL;
}

/* A model built against an older KR_ABI_VERSION: struct kr_model ended before `query`
 * (2), before `commit` (3), before `type_names` (4), before `metrics` (5), before
 * `run_lookahead` (6) or before `reverse` (7); read with its own layout, the fields after
 * are zero. */
static struct kr_model old_model;
static size_t old_size; /* (0: this version's layout) */

/* The loaded object's layout version (kairos.h): another one would be misread. */
static bool same_layout(void *h, const char *name, struct kr__error *err)
{
    /* (an older ABI's struct kr_model: the fields before the first one it lacked) */
    static const size_t older[KR_ABI_VERSION] = {
        [2] = offsetof(struct kr_model, query),      [3] = offsetof(struct kr_model, commit),
        [4] = offsetof(struct kr_model, type_names), [5] = offsetof(struct kr_model, metrics),
        [6] = offsetof(struct kr_model, run_lookahead), [7] = offsetof(struct kr_model, reverse),
    };
    const unsigned *abi = dlsym(h, "kr_abi_version");
    old_size = abi && *abi < KR_ABI_VERSION ? older[*abi] : 0;
    if (abi && (*abi == KR_ABI_VERSION || old_size)) return true;
    char built[64] = "an older kairos.h (before KR_ABI_VERSION)";
    if (abi) snprintf(built, sizeof built, "kairos.h of KR_ABI_VERSION %u", *abi);
    kr__fail(err, KR_ERR_USAGE, "model '%s' was built against %s, and this kairos reads "
             "KR_ABI_VERSION %u: its tables would be misread; rebuild it against this "
             "kairos's include/kairos.h", name, built, (unsigned)KR_ABI_VERSION);
    return false;
}

/* Whether the loader says the model's file is missing while it is there (what glibc's
 * loader says when it runs out of memory opening it). */
static bool said_missing(const char *msg, const char *name)
{
    size_t n = strlen(name);
    return !strncmp(msg, name, n) && access(name, R_OK) == 0 &&
           strstr(msg + n, ": cannot open shared object file: No such");
}

/* dlopen failed. The loader says the model's file is missing when it could not allocate
 * while opening it: if the file is there to read, that is the machine's fault, not the
 * command line's (found by fault injection: tests/e2e/faults.py). A library the model needs
 * that is missing is named as itself, and stays a usage error. */
static void load_failed(const char *name, struct kr__error *err)
{
    const char *why = dlerror();
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", why ? why : "unknown error");
    bool lost = said_missing(msg, name);
    if (lost || strstr(msg, "Cannot allocate memory") || strstr(msg, "out of memory")) {
        kr__fail(err, KR_ERR_RESOURCE, "cannot load model '%s': the dynamic loader ran out of "
                 "memory%s (%s)", name, lost ? " (it says the file is missing, but it is "
                 "there)" : "", msg);
        return;
    }
    kr__fail(err, KR_ERR_USAGE, "cannot load model '%s': %s", name, msg);
}

/* A model the program holds (kr__cmd_run_model): found by its name before any other. */
const struct kr_model *kr__model_own;

/* The entry point of the model object `name`, opened; NULL (err says why) if it cannot be
 * opened, exports none, or was built for another layout. */
static const struct kr_model *(*model_entry(const char *name, struct kr__error *err))(void)
{
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    const struct kr_model *(*entry)(void) = NULL;
    if (!h) {
        load_failed(name, err);
        return NULL;
    }
    dlerror();
    *(void **)&entry = dlsym(h, "kr_model_entry");
    if (!entry)
        kr__fail(err, KR_ERR_USAGE, "model '%s' does not export kr_model_entry(); an outside "
                 "model defines it (KR_MODEL_EXPORT with KR_OUTSIDE_MODEL defined)", name);
    else if (!same_layout(h, name, err))
        entry = NULL;
    return entry;
}

/* The model of the library at path `name`, checked (NULL: err says why). */
static const struct kr_model *from_file(const char *name, struct kr__error *err)
{
    kr__fault_install(); /* a crash in the model's constructor or entry is the model's */
    kr__model_loading = name;
    const struct kr_model *(*entry)(void) = model_entry(name, err);
    const struct kr_model *m = entry ? entry() : NULL;
    kr__model_loading = NULL;
    if (m && old_size) { /* (an older ABI's shorter struct, padded) */
        memset(&old_model, 0, sizeof old_model);
        memcpy(&old_model, m, old_size);
        m = &old_model;
    }
    return entry ? check(m, name, err) : NULL;
}

/* Whether name is the model a program built with Kairos carries itself (kr__model_own). */
static bool own_model(const char *name)
{
    return kr__model_own && kr__model_own->name && !strcmp(name, kr__model_own->name);
}

const struct kr_model *kr__model_load(const char *name, struct kr__error *err)
{
    if (own_model(name)) return check(kr__model_own, name, err);
    if (!strchr(name, '/') && !strstr(name, ".so")) return builtin(name, err);
    /* dlopen searches the library path for a name without a slash, never the current
     * directory: "x.so" means the file here, as it would for any other command. */
    char path[4096];
    if (!strchr(name, '/') && access(name, F_OK) == 0) {
        snprintf(path, sizeof path, "./%s", name);
        name = path;
    }
    return from_file(name, err);
}
