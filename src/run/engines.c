/* engines.c - the table of engines: the one place that knows them all. The command finds
 * an engine here by its --sync name; the run calls it through its descriptor (core.h). */
#include <string.h>
#include "core/core.h"

/* The first is the default; then the engines added at run time (kr__engine_add). */
static const struct kr__engine *table[KR_ENGINES_MAX] = { &kr__tw_engine, &kr__cons_engine,
                                                          &kr__seq_engine };
static size_t nengines = 3;

int kr__engine_add(const struct kr__engine *e)
{
    if (nengines == KR_ENGINES_MAX || kr__engine_find(e->name)) return -1;
    table[nengines++] = e;
    return 0;
}

const struct kr__engine *kr__engine_find(const char *name)
{
    for (size_t i = 0; i < nengines; i++)
        if (!strcmp(table[i]->name, name)) return table[i];
    return NULL;
}

const struct kr__engine *kr__engine_at(size_t i)
{
    return i < nengines ? table[i] : NULL;
}

const struct kr__engine *kr__engine_default(void)
{
    return table[0];
}

const char *kr__engine_names(void)
{
    static char buf[128];
    buf[0] = 0; /* (rebuilt each time: an engine added since is named too) */
    for (size_t i = 0; i < nengines; i++)
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s",
                 i == 0 ? "" : i + 1 == nengines ? " or " : ", ", table[i]->name);
    return buf;
}

int kr__engine_resolve(struct kr__config *c, struct kr__error *err)
{
    if (!c->engine->resolve) return KR_OK;
    const struct kr_model *m = kr__model_load(c->model, err);
    kr_time la;
    if (!m || kr__params_check(c, m, err) || kr__model_lookahead(m, &la, err))
        return err->status;
    c->engine = c->engine->resolve(c, m, la);
    return KR_OK;
}
