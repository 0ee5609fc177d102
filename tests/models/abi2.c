/* abi2.c - a model as built against kairos.h of KR_ABI_VERSION 2, whose struct kr_model
 * ended at `flags` (version 3 added `query`). It must still load and run, with no query
 * handler (query.py), rather than have a field past its table read. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef double kr_time;
typedef uint64_t kr_lp;
void kr_schedule(kr_lp dest, kr_time t, unsigned type, const void *payload, size_t size);
int kr_printf(const char *fmt, ...);

struct kr_model_v2 {
    const char *name;
    void (*init)(kr_lp me);
    void (*event)(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                  void *state);
    bool (*done)(kr_lp me, const void *state);
    void (*finish)(kr_lp me, void *state);
    kr_time lookahead;
    const void *params;
    unsigned flags;
};

__attribute__((visibility("default"))) const unsigned kr_abi_version = 2;

static void init(kr_lp me)
{
    kr_schedule(me, 1, 0, NULL, 0);
}

static void event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                  void *state)
{
    (void)type, (void)payload, (void)size, (void)state;
    if (me == 0) kr_printf("tick %g\n", now);
    kr_schedule(me, now + 1, 0, NULL, 0);
}

/* The table, then bytes that would be taken for a query handler if read as version 3. */
static const struct {
    struct kr_model_v2 m;
    uintptr_t after;
} table = { { "abi2", init, event, NULL, NULL, 1.0, NULL, 0 }, (uintptr_t)0xdead };

const void *kr_model_entry(void)
{
    return &table.m;
}
