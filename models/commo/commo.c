/* commo.c - a command-and-control model, the irregular benchmark of the Time Warp Operating
 * System (paper 001, section 8), written for Kairos: a hierarchy of command units over
 * sensors, and targets moving through the area they watch.
 *
 * C units form a tree `levels` deep with `fanout` subordinates each, numbered breadth-first
 * (unit 0, LP 0, is the headquarters); the other LPs are sensors, dealt round-robin to the
 * units of the lowest level. Unit u is LP u * (LPs / C), so the units are spread over the
 * threads and most queries and orders cross between them (-P spread=0: LPs 0 .. C-1).
 * Targets are not LPs: each moves between waypoints drawn from the seed, so anyone can
 * compute where it is at any time.
 *  - A sensor scans at exponential intervals and reports the targets in its range (a
 *    report of 1 to 40 sightings: events of irregular size) to its unit.
 *  - A unit keeps a picture (where and when each target was last seen) and passes what is
 *    new up the chain, one link later.
 *  - Every `cycle`, a commander (a unit above the lowest level) assigns each target seen
 *    lately and not yet assigned: it asks each subordinate's readiness with kr_query - a
 *    unit above the lowest level answers with the mean of its own subordinates', so the
 *    question goes down the tree - and orders the readiest. A middle unit passes an order
 *    down the same way; a unit of the lowest level engages, spending ammunition, and a hit
 *    depends on its readiness (ammunition left, fatigue that decays with time).
 *  - The headquarters prints a line each cycle, and in finish asks the whole tree for its
 *    counts (nested queries from finish) and prints them; with -P print=1 every
 *    engagement is printed too.
 * Every send goes one link (`link`) later: the model's lookahead.
 *
 *   kairos run commo --lps 1000 --end 200   (21 units in 3 levels, 979 sensors) */
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include "kairos.h"

enum { SCAN, REPORT, CYCLE, ORDER };
enum { Q_READY, Q_COUNTS };
#define SIGHTINGS_MAX 40   /* (40 x 24 bytes: a payload of at most KR_PAYLOAD_MAX) */

struct sighting {              /* (no padding: every byte of a payload is set) */
    double t;
    float x, y;
    uint32_t target, zero;
};

/* A unit: its place in the tree, its means, and its picture of the targets. */
struct unit {
    uint32_t level, nsub;
    kr_lp ix;                      /* its unit number */
    kr_lp parent, first;           /* unit numbers: its superior, its first subordinate (the
                                    * others follow it) */
    double ammo, fatigue, fatigue_t;
    uint64_t orders, engagements, hits, reports;
    double *seen;                  /* per target: when last seen (-1: never)... */
    float *sx, *sy;                /* ...where... */
    double *until;                 /* ...and until when it is assigned (commanders) */
};

struct sensor {
    kr_lp parent;
    double x, y;
    uint64_t scans, sightings;
};

struct counts {
    uint64_t engagements, hits, orders, sightings;
};

struct cfg {
    uint32_t fanout, levels, targets;
    kr_lp units, bottom0, nbottom;   /* units; the first of the lowest level, and how many */
    kr_lp n, stride;                 /* LPs; unit u is LP u * stride */
    double area, range, scan, cycle, link, ammo, phit, tau, leg, stale;
    int print;
};

static const struct kr_param commo_params[] = {
    { "fanout", KR_PARAM_INT, "4", "subordinates of each unit above the lowest level", 1, 64 },
    { "levels", KR_PARAM_INT, "3", "levels of units (1: the headquarters alone)", 1, 12 },
    { "targets", KR_PARAM_INT, "64", "moving targets", 1, 4096 },
    { "area", KR_PARAM_DOUBLE, "100", "side of the square area", 1, 1e9 },
    { "range", KR_PARAM_DOUBLE, "15", "sensor range", 0, 1e9 },
    { "scan", KR_PARAM_DOUBLE, "1", "mean time between a sensor's scans", 1e-6, 1e9 },
    { "cycle", KR_PARAM_DOUBLE, "5", "time between a commander's assignments", 1e-3, 1e9 },
    { "link", KR_PARAM_DOUBLE, "0.1", "delay of every message (the lookahead)", 1e-6, 1e9 },
    { "ammo", KR_PARAM_DOUBLE, "40", "engagements a lowest-level unit can fight", 0, 1e9 },
    { "phit", KR_PARAM_DOUBLE, "0.7", "chance of a hit by a fully ready unit", 0, 1 },
    { "tau", KR_PARAM_DOUBLE, "20", "time for fatigue to fall to 1/e", 1e-6, 1e9 },
    { "leg", KR_PARAM_DOUBLE, "10", "time a target takes between two waypoints", 1e-6, 1e9 },
    { "print", KR_PARAM_INT, "0", "1: print every engagement too", 0, 1 },
    { "spread", KR_PARAM_INT, "1", "1: units spread over the LP ids (and threads); 0: LPs "
      "0 .. units-1", 0, 1 },
    { 0 },
};

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A number in [0, 1) fixed by the seed and three words. */
static double unit_draw(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t h = mix(mix(mix(kr_seed() ^ a) ^ b) ^ c);
    return (double)(h >> 11) * 0x1.0p-53;
}

static struct cfg get_cfg(void)
{
    struct cfg c;
    c.fanout = (uint32_t)kr_param_int("fanout", 4);
    c.levels = (uint32_t)kr_param_int("levels", 3);
    c.targets = (uint32_t)kr_param_int("targets", 64);
    kr_lp width = 1;
    c.units = 0;
    for (uint32_t l = 0; l < c.levels; l++) {
        c.bottom0 = c.units;
        c.nbottom = width;
        c.units += width;
        width *= c.fanout;
        if (width > (kr_lp)1 << 40) width = (kr_lp)1 << 40; /* (more than any run's LPs) */
    }
    c.area = kr_param_double("area", 100);
    c.range = kr_param_double("range", 15);
    c.scan = kr_param_double("scan", 1);
    c.cycle = kr_param_double("cycle", 5);
    c.link = kr_param_double("link", 0.1);
    c.ammo = kr_param_double("ammo", 40);
    c.phit = kr_param_double("phit", 0.7);
    c.tau = kr_param_double("tau", 20);
    c.leg = kr_param_double("leg", 10);
    c.stale = 2 * c.cycle;
    c.print = (int)kr_param_int("print", 0);
    c.n = kr_lp_count();
    c.stride = kr_param_int("spread", 1) && c.n / c.units > 1 ? c.n / c.units : 1;
    return c;
}

static kr_lp unit_lp(const struct cfg *c, kr_lp u)
{
    return u * c->stride;
}

static bool is_unit(const struct cfg *c, kr_lp id)
{
    return id % c->stride == 0 && id / c->stride < c->units;
}

/* A sensor's number: its LP less the units' LPs below it. */
static kr_lp sensor_ix(const struct cfg *c, kr_lp id)
{
    kr_lp below = (id + c->stride - 1) / c->stride;
    return id - (below < c->units ? below : c->units);
}

/* Where target i is at time t: between waypoints k and k + 1 of its path. */
static void target_at(const struct cfg *c, uint32_t i, double t, double *x, double *y)
{
    double k = floor(t / c->leg), f = t / c->leg - k;
    uint64_t w = (uint64_t)k;
    double x0 = unit_draw(1, i, w) * c->area, y0 = unit_draw(2, i, w) * c->area;
    double x1 = unit_draw(1, i, w + 1) * c->area, y1 = unit_draw(2, i, w + 1) * c->area;
    *x = x0 + (x1 - x0) * f;
    *y = y0 + (y1 - y0) * f;
}

/* ---- queries ---- */

static double readiness(const struct cfg *c, const struct unit *u, kr_time now)
{
    double f = u->fatigue * exp(-(now - u->fatigue_t) / c->tau);
    return (c->ammo > 0 ? u->ammo / c->ammo : 0) / (1 + f);
}

static double ask_ready(const struct cfg *c, kr_lp unit)
{
    uint32_t q = Q_READY;
    double r = 0;
    kr_query(unit_lp(c, unit), &q, sizeof q, &r, sizeof r);
    return r;
}

static struct counts ask_counts(kr_lp lp)
{
    uint32_t q = Q_COUNTS;
    struct counts k = { 0 };
    kr_query(lp, &q, sizeof q, &k, sizeof k);
    return k;
}

/* A unit's counts: its own, and its subordinates' or (lowest level) its sensors'. */
static void unit_counts(const struct cfg *c, const struct unit *u, struct counts *k)
{
    *k = (struct counts){ u->engagements, u->hits, u->orders, 0 };
    struct counts x;
    for (uint32_t i = 0; i < u->nsub; i++) {
        x = ask_counts(unit_lp(c, u->first + i));
        k->engagements += x.engagements;
        k->hits += x.hits;
        k->orders += x.orders;
        k->sightings += x.sightings;
    }
    if (u->nsub) return;
    for (kr_lp id = 0, s = 0; id < c->n; id++) { /* (its sensors: s = its place, mod) */
        if (is_unit(c, id)) continue;
        if (s++ % c->nbottom == u->ix - c->bottom0) k->sightings += ask_counts(id).sightings;
    }
}

/* A unit's readiness, or its subordinates' mean; a unit's counts with its subordinates' and
 * (lowest level) its sensors', a sensor's own. */
static size_t commo_query(kr_lp me, kr_time now, const void *question, size_t size,
                          const void *state, void *answer, size_t cap)
{
    struct cfg c = get_cfg();
    uint32_t q;
    if (size != sizeof q) return 0;
    memcpy(&q, question, sizeof q);
    bool unit = is_unit(&c, me);
    if (q == Q_READY && unit && cap >= sizeof(double)) {
        const struct unit *u = state;
        double r = 0;
        if (u->nsub == 0) r = readiness(&c, u, now);
        else {
            for (uint32_t i = 0; i < u->nsub; i++) r += ask_ready(&c, u->first + i);
            r /= u->nsub;
        }
        memcpy(answer, &r, sizeof r);
        return sizeof r;
    }
    if (q != Q_COUNTS || cap < sizeof(struct counts)) return 0;
    struct counts k = { 0 };
    if (!unit) k.sightings = ((const struct sensor *)state)->sightings;
    else unit_counts(&c, state, &k);
    memcpy(answer, &k, sizeof k);
    return sizeof k;
}

/* ---- units ---- */

static void unit_init(kr_lp me, const struct cfg *c)
{
    struct unit *u = kr_calloc(1, sizeof *u);
    kr_lp ix = me / c->stride, lo = 0, width = 1;
    while (ix >= lo + width) {
        lo += width;
        width *= c->fanout;
        u->level++;
    }
    u->ix = ix;
    u->parent = u->level ? (lo - width / c->fanout) + (ix - lo) / c->fanout : 0;
    u->first = lo + width + (ix - lo) * c->fanout;
    u->nsub = u->level + 1 < c->levels ? c->fanout : 0;
    u->ammo = c->ammo;
    u->seen = kr_malloc(c->targets * sizeof *u->seen);
    u->sx = kr_malloc(c->targets * sizeof *u->sx);
    u->sy = kr_malloc(c->targets * sizeof *u->sy);
    u->until = kr_calloc(c->targets, sizeof *u->until);
    for (uint32_t i = 0; i < c->targets; i++) u->seen[i] = -1;
    kr_set_state(u);
    if (u->nsub) kr_schedule(me, c->cycle, CYCLE, NULL, 0);
}

/* New sightings into the picture; those that were news go up the chain. */
static void unit_report(kr_lp me, kr_time now, const struct cfg *c, struct unit *u,
                        const struct sighting *s, size_t n)
{
    struct sighting fresh[SIGHTINGS_MAX];
    size_t nf = 0;
    u->reports++;
    for (size_t i = 0; i < n; i++) {
        uint32_t t = s[i].target;
        if (t >= c->targets || s[i].t <= u->seen[t]) continue;
        u->seen[t] = s[i].t;
        u->sx[t] = s[i].x;
        u->sy[t] = s[i].y;
        fresh[nf++] = s[i];
    }
    if (nf && me != 0)
        kr_schedule(unit_lp(c, u->parent), now + c->link, REPORT, fresh, nf * sizeof *fresh);
}

/* Each subordinate's readiness, asked. */
static void ask_subordinates(const struct cfg *c, const struct unit *u, double *r)
{
    for (uint32_t i = 0; i < u->nsub; i++) r[i] = ask_ready(c, u->first + i);
}

/* The readiest subordinate by r; it counts as less ready for the next choice. */
static kr_lp readiest(const struct cfg *c, const struct unit *u, double *r)
{
    uint32_t best = 0;
    for (uint32_t i = 1; i < u->nsub; i++)
        if (r[i] > r[best]) best = i;
    r[best] *= 0.8;
    return unit_lp(c, u->first + best);
}

static void unit_cycle(kr_lp me, kr_time now, const struct cfg *c, struct unit *u)
{
    uint32_t known = 0, assigned = 0;
    double r[64];
    bool asked = false;
    for (uint32_t t = 0; t < c->targets; t++) {
        if (u->seen[t] < 0 || now - u->seen[t] > c->stale) continue;
        known++;
        if (u->until[t] > now) continue;
        if (!asked) ask_subordinates(c, u, r); /* (once a cycle, and only if needed) */
        asked = true;
        uint32_t target = t;
        kr_schedule(readiest(c, u, r), now + c->link, ORDER, &target, sizeof target);
        u->until[t] = now + 2 * c->cycle;
        u->orders++;
        assigned++;
    }
    if (me == 0)
        kr_printf("t=%g hq: %u targets in view, %u assigned\n", now, known, assigned);
    kr_schedule(me, now + c->cycle, CYCLE, NULL, 0);
}

static void unit_order(kr_lp me, kr_time now, const struct cfg *c, struct unit *u,
                       uint32_t target)
{
    if (u->nsub) {
        double r[64];
        ask_subordinates(c, u, r);
        u->orders++;
        kr_schedule(readiest(c, u, r), now + c->link, ORDER, &target, sizeof target);
        return;
    }
    if (u->ammo < 1) return;
    double r = readiness(c, u, now);
    u->fatigue = u->fatigue * exp(-(now - u->fatigue_t) / c->tau) + 1;
    u->fatigue_t = now;
    u->ammo -= 1;
    u->engagements++;
    bool hit = kr_random() < c->phit * r;
    u->hits += hit;
    if (c->print)
        kr_printf("t=%.6f unit %llu engages target %u: %s\n", now, (unsigned long long)me,
                  target, hit ? "hit" : "miss");
}

/* ---- sensors ---- */

static void sensor_init(kr_lp me, const struct cfg *c)
{
    struct sensor *s = kr_calloc(1, sizeof *s);
    s->parent = unit_lp(c, c->bottom0 + sensor_ix(c, me) % c->nbottom);
    s->x = unit_draw(3, me, 0) * c->area;
    s->y = unit_draw(4, me, 0) * c->area;
    kr_set_state(s);
    kr_schedule(me, kr_expo(c->scan), SCAN, NULL, 0);
}

static void sensor_scan(kr_lp me, kr_time now, const struct cfg *c, struct sensor *s)
{
    struct sighting seen[SIGHTINGS_MAX];
    size_t n = 0;
    for (uint32_t i = 0; i < c->targets && n < SIGHTINGS_MAX; i++) {
        double x, y;
        target_at(c, i, now, &x, &y);
        if ((x - s->x) * (x - s->x) + (y - s->y) * (y - s->y) > c->range * c->range) continue;
        seen[n++] = (struct sighting){ now, (float)x, (float)y, i, 0 };
    }
    s->scans++;
    s->sightings += n;
    if (n) kr_schedule(s->parent, now + c->link, REPORT, seen, n * sizeof *seen);
    kr_schedule(me, now + kr_expo(c->scan), SCAN, NULL, 0);
}

/* ---- the model ---- */

static void commo_init(kr_lp me)
{
    struct cfg c = get_cfg();
    if (me == 0 && kr_lp_count() <= c.units)
        kr_error("commo needs more LPs than its %llu units (fanout %u, %u levels), for the "
                 "sensors: raise --lps", (unsigned long long)c.units, c.fanout, c.levels);
    kr_set_lookahead(c.link);
    if (is_unit(&c, me)) unit_init(me, &c);
    else sensor_init(me, &c);
}

static void commo_event(kr_lp me, kr_time now, unsigned type, const void *payload,
                        size_t size, void *state)
{
    struct cfg c = get_cfg();
    switch (type) {
    case SCAN: sensor_scan(me, now, &c, state); break;
    case REPORT:
        unit_report(me, now, &c, state, payload, size / sizeof(struct sighting));
        break;
    case CYCLE: unit_cycle(me, now, &c, state); break;
    default: {
        uint32_t target;
        memcpy(&target, payload, sizeof target);
        unit_order(me, now, &c, state, target);
    }
    }
}

static void commo_finish(kr_lp me, void *state)
{
    (void)state;
    if (me != 0) return;
    struct counts k = ask_counts(0);
    kr_printf("commo: %llu sightings, %llu orders, %llu engagements, %llu hits\n",
              (unsigned long long)k.sightings, (unsigned long long)k.orders,
              (unsigned long long)k.engagements, (unsigned long long)k.hits);
}

static const struct kr_model commo = {
    .name = "commo",
    .init = commo_init,
    .event = commo_event,
    .finish = commo_finish,
    .params = commo_params,
    .query = commo_query,
};

KR_MODEL_EXPORT(commo, commo)
