/* models.c - finding a model: built-in models by name, outside models as shared objects
 * that export kr_model_entry(). */
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>
#include "core.h"
#include "error.h"

const struct kr_model *kr_builtin_phold(void);
const struct kr_model *kr_builtin_queueing(void);
const struct kr_model *kr_builtin_membench(void);
const struct kr_model *kr_builtin_pcs(void);
const struct kr_model *kr_builtin_datastore(void);
const struct kr_model *kr_builtin_null(void);

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
};

void kr__models_list(FILE *f)
{
    for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
        fprintf(f, "  %-10s %s\n", builtins[i].name, builtins[i].what);
}

static const struct kr_model *check(const struct kr_model *m, const char *from)
{
    if (!m) kr__usage_error("%s returned no model (kr_model_entry() gave NULL)", from);
    if (!m->name || !m->event)
        kr__usage_error("model from %s is incomplete: struct kr_model needs a name and an event "
                        "handler", from);
    if (m->lookahead < 0 || m->lookahead != m->lookahead)
        kr__usage_error("model '%s' declares a negative or NaN lookahead", m->name);
    return m;
}

const char *volatile kr__model_loading;

const struct kr_model *kr__model_load(const char *name)
{
    if (!strchr(name, '/') && !strstr(name, ".so")) {
        for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
            if (!strcmp(builtins[i].name, name)) return check(builtins[i].entry(), name);
        fprintf(stderr, "kairos: error: unknown model '%s'. Built-in models:\n", name);
        kr__models_list(stderr);
        kr__usage_error("or give the path of a model shared object, e.g. ./mymodel.so");
    }
    /* dlopen searches the library path for a name without a slash, never the current
     * directory: "x.so" means the file here, as it would for any other command. */
    char path[4096];
    if (!strchr(name, '/') && access(name, F_OK) == 0) {
        snprintf(path, sizeof path, "./%s", name);
        name = path;
    }
    kr__fault_install(); /* a crash in the model's constructor or entry is the model's */
    kr__model_loading = name;
    void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        kr__model_loading = NULL;
        kr__usage_error("cannot load model '%s': %s", name, dlerror());
    }
    dlerror();
    const struct kr_model *(*entry)(void);
    *(void **)&entry = dlsym(h, "kr_model_entry");
    if (!entry) {
        kr__model_loading = NULL;
        kr__usage_error("model '%s' does not export kr_model_entry(); an outside model defines "
                        "it (KR_MODEL_EXPORT with KR_OUTSIDE_MODEL defined)", name);
    }
    const unsigned *abi = dlsym(h, "kr_abi_version");
    if (!abi || *abi != KR_ABI_VERSION) {
        kr__model_loading = NULL;
        char built[64] = "an older kairos.h (before KR_ABI_VERSION)";
        if (abi) snprintf(built, sizeof built, "kairos.h of KR_ABI_VERSION %u", *abi);
        kr__usage_error("model '%s' was built against %s, and this kairos reads KR_ABI_VERSION "
                        "%u: its tables would be misread; rebuild it against this kairos's "
                        "include/kairos.h", name, built, (unsigned)KR_ABI_VERSION);
    }
    const struct kr_model *m = entry();
    kr__model_loading = NULL;
    return check(m, name);
}
