/* airport.c - a benchmark model written the way a user writes one: the airport model of the
 * ROSS tutorials. Each LP is an airport with `runways` runways; a plane arrives, waits for a
 * free runway, lands, taxis and is serviced on the ground, takes off and flies to another
 * airport (a nearby one mostly: airports sit on a ring, and most flights are short). Each
 * airport keeps per-destination flight counts and a histogram of waiting times in a heap
 * array (about 1.2 KiB of state), and the planes waiting for a runway in a linked list. No
 * write is marked (--state full, page or buddy). Prints each airport's totals at the end.
 *
 * The "ROSS-style airports" row of issue 13. */
#include <stdint.h>
#include "kairos.h"

enum { ARRIVE, LAND_DONE, DEPART };

#define HIST 64
#define ROUTES 64

struct plane {
    uint64_t id;
    double queued;         /* when it began to wait for a runway */
    struct plane *next;
};

struct airport {
    uint32_t runways, busy;
    struct plane *wait_head, *wait_tail;
    uint32_t waiting, max_waiting;
    uint64_t landed, departed;
    double wait_sum;
    uint32_t *routes;      /* flights sent, by destination offset on the ring */
    uint32_t *hist;        /* landing waits, in 0.05 h bins */
    double land_mean, ground_mean, flight_mean;
};

struct flight {
    uint64_t plane;
};

static const struct kr_param airport_params[] = {
    { "planes", KR_PARAM_INT, "4", "planes starting at each airport", 0, 0 },
    { "runways", KR_PARAM_INT, "1", "runways per airport", 0, 0 },
    { "land_mean", KR_PARAM_DOUBLE, "0.2", "mean runway occupation, hours", 0, 0 },
    { "ground_mean", KR_PARAM_DOUBLE, "1.0", "mean time on the ground, hours", 0, 0 },
    { "flight_mean", KR_PARAM_DOUBLE, "2.0", "mean flight time, hours", 0, 0 },
    { 0 },
};

static void airport_init(kr_lp me)
{
    struct airport *a = kr_calloc(1, sizeof *a);
    kr_set_state(a);
    a->runways = (uint32_t)kr_param_int("runways", 1);
    a->land_mean = kr_param_double("land_mean", 0.2);
    a->ground_mean = kr_param_double("ground_mean", 1.0);
    a->flight_mean = kr_param_double("flight_mean", 2.0);
    a->routes = kr_calloc(ROUTES, sizeof *a->routes);
    a->hist = kr_calloc(HIST * 3, sizeof *a->hist);
    int64_t planes = kr_param_int("planes", 4);
    for (int64_t k = 0; k < planes; k++) {
        struct flight f = { me * 1000 + (uint64_t)k };
        kr_schedule(me, kr_expo(a->ground_mean), DEPART, &f, sizeof f);
    }
}

/* Mostly short hops: a geometric number of steps along the ring, either way. */
static kr_lp destination(kr_lp me, uint32_t *step)
{
    kr_lp n = kr_lp_count();
    uint32_t s = 1;
    while (s < ROUTES / 2 && kr_random() < 0.7) s++;
    *step = s;
    return kr_random() < 0.5 ? (me + s) % n : (me + n - s % n) % n;
}

static void start_landing(struct airport *a, kr_lp me, kr_time now, uint64_t plane, double queued)
{
    a->busy++;
    double w = now - queued;
    a->wait_sum += w;
    uint32_t bin = (uint32_t)(w / 0.05);
    a->hist[bin < HIST ? bin : HIST - 1]++;
    struct flight f = { plane };
    kr_schedule(me, now + kr_expo(a->land_mean), LAND_DONE, &f, sizeof f);
}

static void airport_event(kr_lp me, kr_time now, unsigned type, const void *payload,
                          size_t size, void *state)
{
    struct airport *a = state;
    const struct flight *f = payload;
    (void)size;
    if (type == ARRIVE) {
        if (a->busy < a->runways) {
            start_landing(a, me, now, f->plane, now);
            return;
        }
        struct plane *p = kr_malloc(sizeof *p);
        p->id = f->plane;
        p->queued = now;
        p->next = NULL;
        if (a->wait_tail) a->wait_tail->next = p;
        else a->wait_head = p;
        a->wait_tail = p;
        if (++a->waiting > a->max_waiting) a->max_waiting = a->waiting;
    } else if (type == LAND_DONE) {
        a->busy--;
        a->landed++;
        kr_schedule(me, now + kr_expo(a->ground_mean), DEPART, f, sizeof *f);
        struct plane *p = a->wait_head;
        if (p) {
            a->wait_head = p->next;
            if (!a->wait_head) a->wait_tail = NULL;
            a->waiting--;
            start_landing(a, me, now, p->id, p->queued);
            kr_free(p);
        }
    } else {
        uint32_t step;
        kr_lp to = destination(me, &step);
        a->routes[step]++;
        a->departed++;
        kr_schedule(to, now + 0.05 + kr_expo(a->flight_mean * step / 4.0), ARRIVE, f, sizeof *f);
    }
}

static void airport_finish(kr_lp me, void *state)
{
    struct airport *a = state;
    uint64_t short_hops = 0;
    for (int s = 0; s < 4; s++) short_hops += a->routes[s];
    kr_printf("airport %llu: landed %llu, departed %llu, mean wait %.4f h, max queue %u, "
              "short hops %llu\n", (unsigned long long)me, (unsigned long long)a->landed,
              (unsigned long long)a->departed, a->landed ? a->wait_sum / a->landed : 0.0,
              a->max_waiting, (unsigned long long)short_hops);
}

static const struct kr_model airport_model = {
    .name = "airport",
    .init = airport_init,
    .event = airport_event,
    .finish = airport_finish,
    .lookahead = 0.05,
    .params = airport_params,
};

const struct kr_model *kr_model_entry(void) { return &airport_model; }
