/* plainheap.c - a model written against the plain C library: malloc, calloc, realloc, free,
 * strdup, memcpy, memset and struct copies, no kr_ memory calls. Built twice, with
 * `-include kairos/transparent.h` and with the linker's --wrap flags, to show both ways put
 * the heap in the LP's arena: every engine and page-tracking mode must commit the same
 * history and final state, allocation and release rolled back with the rest. */
#include <stdlib.h>
#include <string.h>
#include "kairos.h"

struct note {
    struct note *next;
    char *text;          /* strdup'ed */
    double when;
    unsigned char blob[40];
};

struct heap_state {
    struct note *notes;
    unsigned count;
    double *history;     /* realloc'ed as it grows */
    unsigned nhistory;
    struct note last;    /* a struct copy target */
};

static void plain_init(kr_lp me)
{
    struct heap_state *s = calloc(1, sizeof *s);
    kr_set_state(s);
    kr_schedule(me, kr_expo(1.0), 0, NULL, 0);
}

static void plain_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                        void *state)
{
    (void)type, (void)payload, (void)size;
    struct heap_state *s = state;
    double r = kr_random();
    if (r < 0.5 || !s->notes) {
        struct note *n = malloc(sizeof *n);
        memset(n, 0, sizeof *n);
        char text[32] = "note from LP ";
        text[13] = (char)('a' + me % 26);
        n->text = strdup(text);
        n->when = now;
        memset(n->blob, (int)(kr_random_u64() & 0xff), sizeof n->blob);
        n->next = s->notes;
        s->notes = n;
        s->count++;
    } else {
        struct note *dead = s->notes;
        s->last = *dead; /* struct copy: the compiler may emit memcpy */
        s->last.next = NULL;
        s->last.text = NULL;
        s->notes = dead->next;
        free(dead->text);
        free(dead);
        s->count--;
    }
    s->history = realloc(s->history, (s->nhistory + 1) * sizeof *s->history);
    s->history[s->nhistory++] = now;
    if (s->nhistory > 64) { /* keep it bounded: drop the oldest half */
        memmove(s->history, s->history + 32, (s->nhistory - 32) * sizeof *s->history);
        s->nhistory -= 32;
    }
    kr_schedule(kr_random_u64() % kr_lp_count(), now + 0.01 + kr_expo(1.0), 0, NULL, 0);
}

static void plain_finish(kr_lp me, void *state)
{
    const struct heap_state *s = state;
    kr_printf("plainheap LP %llu: %u notes, %u history, last blob %u\n", (unsigned long long)me,
              s->count, s->nhistory, s->last.blob[0]);
}

static const struct kr_model plain_model = {
    .name = "plainheap", .init = plain_init, .event = plain_event, .finish = plain_finish,
};

KR_MODEL_EXPORT(plainheap, plain_model)
