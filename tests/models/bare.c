/* bare.c - a test model as a newcomer might write it: no parameter table, and an init that
 * forgets kr_set_state. KAIROS_TEST_LOAD makes its constructor misbehave while the model is
 * loaded ("exit": exit(0), "crash": a NULL write) or its kr_model_entry() crash ("entry"). */
#include <stdlib.h>
#include <string.h>
#include "kairos.h"

struct st {
    long events;
};

static volatile int *nowhere;

/* (sanitizer builds must not trap these first: the tests check what Kairos reports) */
__attribute__((noinline, no_sanitize("undefined"))) static void poke(volatile int *p, int v)
{
    *p = v;
}

__attribute__((noinline, no_sanitize("undefined"))) static void count(struct st *s)
{
    s->events++;
}

__attribute__((constructor)) static void on_load(void)
{
    const char *what = getenv("KAIROS_TEST_LOAD");
    if (what && !strcmp(what, "exit")) exit(0);
    if (what && !strcmp(what, "crash")) poke(nowhere, 1);
}

static void bare_init(kr_lp me)
{
    struct st *s = kr_malloc(sizeof *s); /* ...and no kr_set_state(s) */
    (void)s;
    kr_schedule(me, 1.0, 0, NULL, 0);
}

static void bare_event(kr_lp me, kr_time now, unsigned type, const void *p, size_t n, void *state)
{
    (void)type, (void)p, (void)n;
    count(state);
    kr_schedule(me, now + 1.0, 0, NULL, 0);
}

#ifndef BARE_FLAGS
#define BARE_FLAGS 0
#endif
static const struct kr_model bare_model = { .name = "bare", .init = bare_init, .event = bare_event,
                                            .flags = BARE_FLAGS };

const struct kr_model *kr_model_entry(void)
{
    const char *what = getenv("KAIROS_TEST_LOAD");
    if (what && !strcmp(what, "entry")) poke(nowhere, 2);
    return &bare_model;
}
