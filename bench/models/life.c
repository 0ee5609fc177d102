/* life.c - a benchmark model written the way a user writes one: Conway's Game of Life, one
 * LP per cell of a torus `width` cells wide. At every generation (time 1, 2, ...) a cell
 * tells its eight neighbours whether it lives (at half past), counts what it hears, and
 * steps on the next whole time; it also reports to LP 0, which tallies live cells per
 * generation in a growing heap array and prints a line every `print` generations. So: many
 * ties (every message of a generation has the same timestamp), fan-in of every cell to one
 * LP, and tiny events. No write is marked (--state full, page or buddy).
 *
 * The "Game of Life with a report to LP 0" row of issue 13. */
#include <stdint.h>
#include <string.h>
#include "kairos.h"

enum { STEP, NEIGHBOUR, REPORT };

struct cell {
    uint8_t alive;
    uint8_t pad[3];
    uint32_t width;        /* of the grid, read at init */
    uint32_t heard, live_near;
    uint64_t generation, births, deaths;
    /* LP 0 only: live cells per generation, and how many reports each has */
    uint32_t *tally, *reports;
    uint64_t ngen, printed;
};

struct note {
    uint64_t generation;
    uint32_t alive;
};

static const struct kr_param life_params[] = {
    { "width", KR_PARAM_INT, "0", "grid width (0: the square root of --lps)", 0, 0 },
    { "density", KR_PARAM_DOUBLE, "0.35", "share of cells alive at the start", 0, 0 },
    { "print", KR_PARAM_INT, "10", "LP 0 prints the live count every this many generations", 0, 0 },
    { 0 },
};

static kr_lp width(void)
{
    int64_t w = kr_param_int("width", 0);
    if (w > 0) return (kr_lp)w;
    kr_lp n = kr_lp_count(), s = 1;
    while ((s + 1) * (s + 1) <= n) s++;
    return s;
}

static void tell_neighbours(kr_lp me, kr_time now, const struct cell *c)
{
    kr_lp w = c->width, n = kr_lp_count(), h = n / w;
    kr_lp x = me % w, y = me / w;
    struct note msg;
    memset(&msg, 0, sizeof msg); /* (its padding enters the run digest: see kairos run --check) */
    msg.generation = c->generation;
    msg.alive = c->alive;
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
            if (!dx && !dy) continue;
            kr_lp nx = (x + w + (kr_lp)(int64_t)dx) % w, ny = (y + h + (kr_lp)(int64_t)dy) % h;
            kr_schedule(ny * w + nx, now + 0.5, NEIGHBOUR, &msg, sizeof msg);
        }
    kr_schedule(0, now + 0.25, REPORT, &msg, sizeof msg);
}

static void life_init(kr_lp me)
{
    kr_lp w = width();
    if (kr_lp_count() % w || kr_lp_count() / w < 3 || w < 3)
        kr_error("--lps %llu is not a grid at least 3 x 3 with width %llu (use a square "
                 "number of LPs or -P width=...)", (unsigned long long)kr_lp_count(),
                 (unsigned long long)w);
    struct cell *c = kr_calloc(1, sizeof *c);
    kr_set_state(c);
    c->width = (uint32_t)w;
    c->alive = kr_random() < kr_param_double("density", 0.35);
    tell_neighbours(me, 0, c);
    kr_schedule(me, 1, STEP, NULL, 0);
}

static void tally(struct cell *c, const struct note *m)
{
    if (m->generation >= c->ngen) {
        uint64_t n = c->ngen ? c->ngen * 2 : 64;
        while (n <= m->generation) n *= 2;
        c->tally = kr_realloc(c->tally, n * sizeof *c->tally);
        c->reports = kr_realloc(c->reports, n * sizeof *c->reports);
        for (uint64_t g = c->ngen; g < n; g++) c->tally[g] = c->reports[g] = 0;
        c->ngen = n;
    }
    c->tally[m->generation] += m->alive;
    if (++c->reports[m->generation] < kr_lp_count()) return;
    int64_t every = kr_param_int("print", 10);
    if (every > 0 && m->generation % (uint64_t)every == 0) {
        kr_printf("generation %llu: %u alive\n", (unsigned long long)m->generation,
                  c->tally[m->generation]);
        c->printed++;
    }
}

static void life_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                       void *state)
{
    struct cell *c = state;
    (void)size;
    if (type == NEIGHBOUR) {
        c->heard++;
        c->live_near += ((const struct note *)payload)->alive;
    } else if (type == REPORT) {
        tally(c, payload);
    } else {
        if (c->heard != 8)
            kr_error("cell %llu heard %u neighbours in generation %llu, not 8",
                     (unsigned long long)me, c->heard, (unsigned long long)c->generation);
        uint8_t next = c->live_near == 3 || (c->alive && c->live_near == 2);
        c->births += next && !c->alive;
        c->deaths += c->alive && !next;
        c->alive = next;
        c->heard = c->live_near = 0;
        c->generation++;
        tell_neighbours(me, now, c);
        kr_schedule(me, now + 1, STEP, NULL, 0);
    }
}

static void life_finish(kr_lp me, void *state)
{
    const struct cell *c = state;
    if (me == 0) kr_printf("LP 0 printed %llu tallies\n", (unsigned long long)c->printed);
    if (me % 64 == 0)
        kr_printf("cell %llu: generation %llu, alive %u, births %llu, deaths %llu\n",
                  (unsigned long long)me, (unsigned long long)c->generation, c->alive,
                  (unsigned long long)c->births, (unsigned long long)c->deaths);
}

static const struct kr_model life_model = {
    .name = "life",
    .init = life_init,
    .event = life_event,
    .finish = life_finish,
    .lookahead = 0.25,
    .params = life_params,
};

const struct kr_model *kr_model_entry(void) { return &life_model; }
