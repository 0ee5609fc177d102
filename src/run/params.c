/* params.c - model parameters: `-P name=value` on the command line, the model's typed
 * table with defaults, and kr_param_int/kr_param_double. Values are checked once before
 * the run starts, so a typo is a usage error, not a failure deep inside an event. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "base/error.h"

static const struct kr__config *cur_cfg;
static const struct kr_model *cur_model;

/* The declared parameters' values, parsed once: models read them in init, once per LP (16 M
 * LPs spent a tenth of their init in string compares and strtod). Read-only during the run,
 * so every thread may read them. */
struct param_val {
    bool is_int, is_dbl;
    int64_t i;
    double d;
};
static struct param_val *vals;

/* Decimal only: with base 0, "010" would be 8 and "08" an error, which no modeller means. */
static int parse_int(const char *s, int64_t *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end) return -1;
    *out = v;
    return 0;
}

/* A model usually asks with the very string literal its table holds (the compiler merges
 * equal literals of a file): those names are found by their address in one probe of a small
 * open-addressed table, built before the run and read-only during it. Any other pointer to
 * the same text is found by comparing names. */
#define NAME_SLOTS 256
static struct {
    const char *name;
    const struct kr_param *p;
} slots[NAME_SLOTS];

static size_t slot_of(const char *name)
{
    return (size_t)(((uintptr_t)name * 0x9E3779B97F4A7C15ull) >> 56); /* (top 8 bits) */
}

static void slots_build(const struct kr_model *m)
{
    memset(slots, 0, sizeof slots);
    size_t used = 0;
    for (const struct kr_param *p = m->params; p && p->name && used < NAME_SLOTS / 2; p++) {
        size_t h = slot_of(p->name);
        while (slots[h].name && slots[h].name != p->name) h = (h + 1) % NAME_SLOTS;
        if (!slots[h].name) { /* (a name twice in a table: the first wins) */
            used++;
            slots[h].p = p;
        }
        slots[h].name = p->name;
    }
}

static const struct kr_param *table_find(const struct kr_model *m, const char *name)
{
    for (size_t h = slot_of(name); slots[h].name; h = (h + 1) % NAME_SLOTS)
        if (slots[h].name == name) return slots[h].p;
    for (const struct kr_param *p = m->params; p && p->name; p++)
        if (!strcmp(p->name, name)) return p;
    return NULL;
}

static const char *given(const char *name)
{
    const char *v = NULL;
    for (size_t i = 0; cur_cfg && i < cur_cfg->nparams; i++)
        if (!strcmp(cur_cfg->params[i].key, name)) v = cur_cfg->params[i].val; /* last wins */
    return v;
}

/* The number of parameters model m declares. */
static size_t count_params(const struct kr_model *m)
{
    size_t n = 0;
    while (m->params && m->params[n].name) n++;
    return n;
}

/* Parse every declared parameter's value once (the last -P, else the default). */
static void cache_values(const struct kr_model *m)
{
    free(vals);
    vals = NULL;
    size_t n = count_params(m);
    if (!n || !(vals = calloc(n, sizeof *vals))) return; /* (no cache: parsed per call) */
    for (size_t k = 0; k < n; k++) {
        const char *v = given(m->params[k].name);
        if (!v) v = m->params[k].def;
        if (!v) continue;
        vals[k].is_int = !parse_int(v, &vals[k].i);
        vals[k].is_dbl = !parse_double(v, &vals[k].d);
    }
}

/* Whether value v of p is within its range (one that does not read as a number is left
 * to the parameter's reader). */
static bool in_range(const struct kr_param *p, const char *v)
{
    double d;
    return parse_double(v, &d) || (d >= p->min && d <= p->max);
}

/* A declared range (min < max) holds for the value in effect: the last -P, else the default. */
static int check_range(const struct kr_model *m, const struct kr_param *p, struct kr__error *err)
{
    if (!(p->min < p->max)) return KR_OK;
    const char *v = given(p->name);
    const char *from = v ? "-P" : "its default";
    if (!v) v = p->def;
    if (!v || in_range(p, v)) return KR_OK; /* (no value: the model's fallback) */
    return kr__fail(err, KR_ERR_USAGE, "parameter '%s' of model '%s' must be from %.15g to "
                    "%.15g, got %s (%s)%s", p->name, m->name, p->min, p->max, v, from,
                    v == p->def ? ": the model's table is wrong" : "");
}

/* A value given with -P reads as its parameter's type. */
static int check_type(const struct kr_model *m, const struct kr_param *p,
                      const struct kr__kv *kv, struct kr__error *err)
{
    int64_t iv;
    double dv;
    if (p->type == KR_PARAM_INT && parse_int(kv->val, &iv))
        return kr__fail(err, KR_ERR_USAGE, "parameter '%s' of model '%s' must be an integer, "
                        "got '%s'", kv->key, m->name, kv->val);
    if (p->type == KR_PARAM_DOUBLE && parse_double(kv->val, &dv))
        return kr__fail(err, KR_ERR_USAGE, "parameter '%s' of model '%s' must be a number, got "
                        "'%s'", kv->key, m->name, kv->val);
    return KR_OK;
}

/* A -P that names a declared parameter and reads as its type. */
static int check_given(const struct kr__config *cfg, const struct kr_model *m,
                       const struct kr__kv *kv, struct kr__error *err)
{
    const struct kr_param *p = table_find(m, kv->key);
    if (!count_params(m))
        return kr__fail(err, KR_ERR_USAGE, "model '%s' declares no parameters (-P %s=%s): a "
                        "model lists what it reads in struct kr_model.params", m->name,
                        kv->key, kv->val);
    if (!p)
        return kr__fail(err, KR_ERR_USAGE, "model '%s' has no parameter '%s' (-P %s=%s); "
                        "'kairos run %s --help' lists its parameters", m->name, kv->key,
                        kv->key, kv->val, cfg->model);
    return check_type(m, p, kv, err);
}

int kr__params_check(const struct kr__config *cfg, const struct kr_model *m,
                     struct kr__error *err)
{
    cur_cfg = cfg;
    cur_model = m;
    slots_build(m);
    for (size_t i = 0; i < cfg->nparams; i++)
        if (check_given(cfg, m, &cfg->params[i], err)) return err->status;
    for (const struct kr_param *p = m->params; p && p->name; p++)
        if (check_range(m, p, err)) return err->status;
    cache_values(m);
    return KR_OK;
}

int kr__model_lookahead(const struct kr_model *m, kr_time *la, struct kr__error *err)
{
    *la = m->lookahead;
    if (!m->run_lookahead) return KR_OK;
    kr_time v = m->run_lookahead();
    if (!(v >= 0) || isinf(v))
        return kr__fail(err, KR_ERR_USAGE, "model '%s': run_lookahead returned %g; a lookahead "
                        "is a finite number >= 0", m->name, v);
    *la = v;
    return KR_OK;
}

/* A value given as text, as an integer (or a double that is one). */
static int64_t int_of(const char *name, const char *v, int64_t fallback)
{
    int64_t out;
    double d;
    if (!parse_int(v, &out)) return out;
    if (!parse_double(v, &d) && d == (double)(int64_t)d) return (int64_t)d;
    kr__model_error("kr_param_int(\"%s\"): value '%s' is not an integer", name, v);
    return fallback;
}

/* The model's declaration of `name` (*p, NULL if none) and its value parsed at set-up, if
 * kept (vals). */
static const struct param_val *param_cached(const char *name, const struct kr_param **p)
{
    *p = cur_model ? table_find(cur_model, name) : NULL;
    return *p && vals ? &vals[*p - cur_model->params] : NULL;
}

/* The text of its value: given with -P, else the declared default (NULL: neither). */
static const char *param_text(const char *name, const struct kr_param *p)
{
    const char *v = given(name);
    return v || !p ? v : p->def;
}

int64_t kr_param_int(const char *name, int64_t fallback)
{
    const struct kr_param *p;
    const struct param_val *c = param_cached(name, &p);
    if (c && c->is_int) return c->i;
    if (c && c->is_dbl && c->d == (double)(int64_t)c->d) return (int64_t)c->d;
    const char *v = param_text(name, p);
    return v ? int_of(name, v, fallback) : fallback;
}

double kr_param_double(const char *name, double fallback)
{
    const struct kr_param *p;
    const struct param_val *c = param_cached(name, &p);
    if (c && c->is_dbl) return c->d;
    const char *v = param_text(name, p);
    if (!v) return fallback;
    double out;
    if (!parse_double(v, &out)) return out;
    kr__model_error("kr_param_double(\"%s\"): value '%s' is not a number", name, v);
    return fallback;
}

/* One line of 'kairos run MODEL --help' for parameter p. */
static void param_line(FILE *f, const struct kr_param *p)
{
    fprintf(f, "  %-14s %-6s default %-10s %s", p->name,
            p->type == KR_PARAM_INT ? "int" : "double", p->def ? p->def : "-",
            p->help ? p->help : "");
    if (p->min < p->max) fprintf(f, " (%.15g to %.15g)", p->min, p->max);
    fputc('\n', f);
}

void kr__params_print(FILE *f, const struct kr_model *m)
{
    if (!count_params(m)) {
        fprintf(f, "Model '%s' declares no parameters.\n", m->name);
        return;
    }
    fprintf(f, "Parameters of model '%s' (set with -P name=value):\n", m->name);
    for (const struct kr_param *p = m->params; p->name; p++) param_line(f, p);
    if (m->lookahead > 0) fprintf(f, "Declared lookahead: %g\n", m->lookahead);
}
