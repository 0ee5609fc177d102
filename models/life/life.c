/* life.c - Conway's Game of Life on a torus, the regular benchmark of the Time Warp
 * Operating System (paper 001, section 8): each LP owns a square block of cells. At time g
 * every LP computes generation g of its block from generation g - 1 and the edges its eight
 * neighbouring blocks sent it for time g, which arrive as one same-time bundle
 * (KR_MODEL_BUNDLES); then it sends its new edges for time g + 1 and, every `print`
 * generations, its live count to LP 0, which prints the population - or, with -P hook=1,
 * hands the count to the commit hook (kr_commit), which sums each generation in its ledger
 * and prints it once every block's count is in: the same lines, and no LP that every
 * other one sends to. Edges travel one time unit, so the model declares lookahead 1 and
 * runs on every engine.
 *
 *   kairos run life -P width=256 -P height=256 -P block=8 --lps 1024   (the defaults)
 *
 * (bench/models/life.c is the other Life: one cell per LP, written as a new user would,
 * without bundles.) */
#include <stddef.h>
#include <string.h>
#include "kairos.h"

/* Event types: an edge, by where its sender lies seen from the receiver; and a report. */
enum { N, NE, E, SE, S, SW, W, NW, REPORT };

static const int DX[8] = { 0, 1, 1, 1, 0, -1, -1, -1 };
static const int DY[8] = { -1, -1, 0, 1, 1, 1, 0, -1 };

struct block {
    uint32_t b;            /* cells per side */
    uint32_t lx, ly;       /* this block's place in the grid of blocks... */
    uint32_t nx, ny;       /* ...which is nx x ny blocks */
    uint64_t gen, alive;
    uint64_t tallied;      /* LP 0: generations it printed */
    uint8_t *cur;          /* b x b cells of generation `gen`, row by row */
    uint8_t *halo;         /* (b + 2) x (b + 2): the cells and their neighbours' edges */
};

struct report {
    uint64_t gen, alive;
};

/* -P hook=1: the commit hook's sums. A generation's counts come from the events at its
 * time (generation 0's with generation 1's), so a few slots are enough. */
#define SLOTS 4
struct ledger {
    struct {
        uint64_t gen, alive, n;
    } slot[SLOTS];
};

static const struct kr_param life_params[] = {
    { "width", KR_PARAM_INT, "256", "cells across the torus (a multiple of block)", 1, 1e9 },
    { "height", KR_PARAM_INT, "256", "cells down the torus (a multiple of block)", 1, 1e9 },
    { "block", KR_PARAM_INT, "8", "cells per side of an LP's block", 1, KR_PAYLOAD_MAX },
    { "generations", KR_PARAM_INT, "100", "generations to compute", 0, 1e12 },
    { "density", KR_PARAM_DOUBLE, "0.35", "share of cells alive at the start", 0, 1 },
    { "print", KR_PARAM_INT, "1", "LP 0 prints the population every this many generations "
      "(0: never)", 0, 1e12 },
    { "dump", KR_PARAM_INT, "0", "1: every LP prints its cells at the start and the end (tests)",
      0, 1 },
    { "hook", KR_PARAM_INT, "0", "1: the commit hook sums the population (kr_commit), not LP 0 "
      "(messages)", 0, 1 },
    { 0 },
};

static kr_lp neighbour(const struct block *k, int d)
{
    uint32_t x = (k->lx + k->nx + (uint32_t)(int32_t)DX[d]) % k->nx;
    uint32_t y = (k->ly + k->ny + (uint32_t)(int32_t)DY[d]) % k->ny;
    return (kr_lp)y * k->nx + x;
}

/* The cells of k's edge facing direction d (a row, a column or a corner) into out. */
static size_t edge(const struct block *k, int d, uint8_t *out)
{
    uint32_t b = k->b, row = DY[d] < 0 ? 0 : b - 1, col = DX[d] < 0 ? 0 : b - 1;
    if (DX[d] && DY[d]) {
        out[0] = k->cur[row * b + col];
        return 1;
    }
    for (uint32_t i = 0; i < b; i++) out[i] = DY[d] ? k->cur[row * b + i] : k->cur[i * b + col];
    return b;
}

/* After computing generation k->gen at time now: its edges for the next generation, and
 * its live count to LP 0 when that generation is printed. */
static void send_out(struct block *k, kr_time now)
{
    uint8_t buf[KR_PAYLOAD_MAX];
    if (k->gen < (uint64_t)kr_param_int("generations", 100))
        for (int d = 0; d < 8; d++) { /* (the receiver sees this block at d + 4) */
            size_t n = edge(k, d, buf);
            kr_schedule(neighbour(k, d), now + 1, (unsigned)((d + 4) % 8), buf, n);
        }
    int64_t every = kr_param_int("print", 1);
    if (every > 0 && k->gen % (uint64_t)every == 0) {
        struct report r = { k->gen, k->alive };
        if (!kr_param_int("hook", 0)) kr_schedule(0, now + 1, REPORT, &r, sizeof r);
        else if (k->gen) kr_commit(&r, sizeof r); /* (generation 0's: life_event) */
    }
}

/* -P hook=1: the count of a generation from each block; printed with the last. */
static void life_commit(void *book, kr_lp me, kr_time now, const void *record, size_t size)
{
    struct ledger *l = book;
    struct report r;
    (void)me, (void)now;
    if (size != sizeof r) kr_error("a record of %zu bytes, want %zu", size, sizeof r);
    memcpy(&r, record, sizeof r);
    unsigned i = (unsigned)(r.gen % SLOTS);
    if (l->slot[i].n && l->slot[i].gen != r.gen)
        kr_error("counts of generations %llu and %llu mixed", (unsigned long long)r.gen,
                 (unsigned long long)l->slot[i].gen);
    l->slot[i].gen = r.gen;
    l->slot[i].alive += r.alive;
    if (++l->slot[i].n < kr_lp_count()) return;
    kr_printf("generation %llu: %llu alive\n", (unsigned long long)r.gen,
              (unsigned long long)l->slot[i].alive);
    l->slot[i].n = l->slot[i].alive = 0;
}

/* -P dump=1: the block's cells, a row of 0/1 a line. */
static void dump(const struct block *k, const char *when)
{
    if (!kr_param_int("dump", 0)) return;
    char row[KR_PAYLOAD_MAX + 1];
    for (uint32_t y = 0; y < k->b; y++) {
        for (uint32_t x = 0; x < k->b; x++) row[x] = (char)('0' + k->cur[y * k->b + x]);
        row[k->b] = 0;
        kr_printf("%s %u %u %u %s\n", when, k->lx, k->ly, y, row);
    }
}

static void life_init(kr_lp me)
{
    int64_t w = kr_param_int("width", 256), h = kr_param_int("height", 256);
    int64_t b = kr_param_int("block", 8);
    if (w % b || h % b || (kr_lp)(w / b) * (kr_lp)(h / b) != kr_lp_count())
        kr_error("a %lld x %lld torus of %lld x %lld blocks needs width and height multiples "
                 "of block and --lps %lld (one LP per block); got --lps %llu", (long long)w,
                 (long long)h, (long long)b, (long long)b,
                 (long long)(w % b || h % b ? 0 : (w / b) * (h / b)),
                 (unsigned long long)kr_lp_count());
    struct block *k = kr_calloc(1, sizeof *k);
    kr_set_state(k);
    k->b = (uint32_t)b;
    k->nx = (uint32_t)(w / b);
    k->ny = (uint32_t)(h / b);
    k->lx = (uint32_t)(me % k->nx);
    k->ly = (uint32_t)(me / k->nx);
    k->cur = kr_malloc((size_t)b * (size_t)b);
    k->halo = kr_calloc((size_t)(b + 2) * (size_t)(b + 2), 1);
    double density = kr_param_double("density", 0.35);
    for (int64_t i = 0; i < b * b; i++) {
        k->cur[i] = kr_random() < density;
        k->alive += k->cur[i];
    }
    dump(k, "start");
    send_out(k, 0);
}

/* Put the edge from direction d (a payload of the bundle) around the block in the halo. */
static void place(struct block *k, int d, const uint8_t *p, size_t size)
{
    uint32_t b = k->b, s = b + 2;
    if (size != ((DX[d] && DY[d]) ? 1u : b))
        kr_error("edge from direction %d has %zu cells, want %u", d, size,
                 (DX[d] && DY[d]) ? 1u : b);
    uint32_t row = DY[d] < 0 ? 0 : DY[d] > 0 ? b + 1 : 1;
    uint32_t col = DX[d] < 0 ? 0 : DX[d] > 0 ? b + 1 : 1;
    for (uint32_t i = 0; i < size; i++)
        k->halo[(row + (DY[d] ? 0 : i)) * s + col + (DX[d] ? 0 : i)] = p[i];
}

static void step(struct block *k)
{
    uint32_t b = k->b, s = b + 2;
    for (uint32_t y = 0; y < b; y++)
        memcpy(k->halo + (y + 1) * s + 1, k->cur + y * b, b);
    k->alive = 0;
    const ptrdiff_t r = s; /* (signed: the row above is at -r) */
    for (uint32_t y = 1; y <= b; y++)
        for (uint32_t x = 1; x <= b; x++) {
            const uint8_t *c = k->halo + y * s + x;
            unsigned n = c[-r - 1] + c[-r] + c[-r + 1] + c[-1] + c[1] + c[r - 1] + c[r] +
                         c[r + 1];
            uint8_t live = n == 3 || (*c && n == 2);
            k->cur[(y - 1) * b + x - 1] = live;
            k->alive += live;
        }
    k->gen++;
}

/* LP 0: the reports in its bundle are every block's count of one generation. */
static void tally(struct block *k, uint64_t gen, uint64_t alive, unsigned nreports)
{
    k->tallied++;
    if (nreports != kr_lp_count())
        kr_error("%u reports of generation %llu, want one per LP", nreports,
                 (unsigned long long)gen);
    kr_printf("generation %llu: %llu alive\n", (unsigned long long)gen,
              (unsigned long long)alive);
}

static void life_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                       void *state)
{
    struct block *k = state;
    unsigned n = kr_bundle_count(), edges = 0, nrep = 0, seen = 0;
    uint64_t gen = 0, alive = 0;
    (void)me, (void)type, (void)payload, (void)size;
    for (unsigned i = 0; i < n; i++) {
        unsigned t;
        const void *p;
        size_t sz;
        kr_bundle_get(i, &t, &p, &sz);
        if (t == REPORT) {
            struct report r;
            memcpy(&r, p, sizeof r);
            if (nrep++ && r.gen != gen) kr_error("reports of generations %llu and %llu at "
                                                 "time %g", (unsigned long long)gen,
                                                 (unsigned long long)r.gen, now);
            gen = r.gen;
            alive += r.alive;
            continue;
        }
        if (seen & (1u << t)) kr_error("two edges from direction %u at time %g", t, now);
        seen |= 1u << t;
        place(k, (int)t, p, sz);
        edges++;
    }
    if (nrep) tally(k, gen, alive, nrep);
    if (!edges) return; /* (the last reports) */
    if (edges != 8) kr_error("%u edges at time %g, want 8", edges, now);
    if (k->gen == 0 && kr_param_int("hook", 0) && kr_param_int("print", 1) > 0) {
        struct report r = { 0, k->alive }; /* (init cannot kr_commit: it has no event) */
        kr_commit(&r, sizeof r);
    }
    step(k);
    send_out(k, now);
}

/* Done once the last generation is computed and, on LP 0, every population printed. */
static bool life_done(kr_lp me, const void *state)
{
    const struct block *k = state;
    uint64_t g = (uint64_t)kr_param_int("generations", 100);
    int64_t every = kr_param_int("print", 1);
    return k->gen >= g &&
           (me || every <= 0 || kr_param_int("hook", 0) || k->tallied > g / (uint64_t)every);
}

static void life_finish(kr_lp me, void *state)
{
    const struct block *k = state;
    dump(k, "end");
    if (me == 0)
        kr_printf("life: %u x %u blocks of %u x %u cells, %llu generations\n", k->nx, k->ny,
                  k->b, k->b, (unsigned long long)k->gen);
}

static const struct kr_model life_model = {
    .name = "life",
    .flags = KR_MODEL_BUNDLES,
    .lookahead = 1,
    .init = life_init,
    .event = life_event,
    .done = life_done,
    .finish = life_finish,
    .params = life_params,
    .commit = life_commit,
    .ledger_size = sizeof(struct ledger),
};

const struct kr_model *kr_builtin_life(void)
{
    return &life_model;
}
