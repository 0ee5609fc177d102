/* seir.c - a benchmark model written the way a user writes one from docs/guide.md: an
 * SEIRS epidemic on a contact network. Each LP is a town; its people live in a heap array,
 * its contact list (other towns, random, `degree` of them) in a heap-allocated linked list,
 * and no write is marked (it runs with --state full, page or buddy). An infectious person
 * meets a random person of its own town or of a neighbour town every `contact_mean`; a
 * susceptible person met becomes exposed, infectious after `latent_mean`, recovered after
 * `infectious_mean`, susceptible again after `immune_mean` (so the epidemic never dies
 * out). Each town prints its totals at the end.
 *
 * Events carry a person index; what they cost varies: a contact walks the neighbour list.
 * This is the "SEIR with heap neighbour lists" row of issue 13. */
#include <stdint.h>
#include "kairos.h"

enum { CONTACT, EXPOSE, INFECTIOUS, RECOVER, SUSCEPTIBLE };
enum { S, E, I, R };

struct neighbour {
    kr_lp town;
    struct neighbour *next;
};

struct person {
    uint8_t status;
    uint8_t pad[3];
    uint32_t infections;   /* how often this person was infected */
    double since;          /* when the status last changed */
};

struct town {
    uint32_t people, ndeg;
    struct person *folk;
    struct neighbour *contacts;
    uint64_t count[4];     /* people by status */
    uint64_t exposures, meetings, imported;
    double last;
    double contact, latent, infectious, immune, travel;   /* parameters, read at init */
};

static const struct kr_param seir_params[] = {
    { "people", KR_PARAM_INT, "100", "people per town", 0, 0 },
    { "degree", KR_PARAM_INT, "6", "neighbour towns per town", 0, 0 },
    { "contact_mean", KR_PARAM_DOUBLE, "1.0",
      "mean time between contacts of an infectious person", 0, 0 },
    { "latent_mean", KR_PARAM_DOUBLE, "3.0", "mean time exposed", 0, 0 },
    { "infectious_mean", KR_PARAM_DOUBLE, "5.0", "mean time infectious", 0, 0 },
    { "immune_mean", KR_PARAM_DOUBLE, "20.0", "mean time recovered", 0, 0 },
    { "travel", KR_PARAM_DOUBLE, "0.3", "share of contacts in a neighbour town", 0, 0 },
    { 0 },
};

static void seir_init(kr_lp me)
{
    struct town *t = kr_calloc(1, sizeof *t);
    kr_set_state(t);
    t->people = (uint32_t)kr_param_int("people", 100);
    t->ndeg = (uint32_t)kr_param_int("degree", 6);
    t->contact = kr_param_double("contact_mean", 1.0);
    t->latent = kr_param_double("latent_mean", 3.0);
    t->infectious = kr_param_double("infectious_mean", 5.0);
    t->immune = kr_param_double("immune_mean", 20.0);
    t->travel = kr_param_double("travel", 0.3);
    if (t->people < 1) kr_error("people must be at least 1");
    t->folk = kr_calloc(t->people, sizeof *t->folk);
    kr_lp n = kr_lp_count();
    for (uint32_t d = 0; d < t->ndeg; d++) {
        struct neighbour *nb = kr_malloc(sizeof *nb);
        nb->town = (me + 1 + kr_random_u64() % (n > 1 ? n - 1 : 1)) % n;
        nb->next = t->contacts;
        t->contacts = nb;
    }
    t->count[S] = t->people;
    /* a few infectious people in every tenth town start it */
    if (me % 10 == 0)
        for (uint32_t k = 0; k < 3 && k < t->people; k++) {
            uint32_t p = (uint32_t)(kr_random_u64() % t->people);
            kr_schedule(me, kr_expo(1.0), EXPOSE, &p, sizeof p);
        }
}

static kr_lp pick_town(kr_lp me, const struct town *t)
{
    if (kr_random() >= t->travel || !t->ndeg) return me;
    uint32_t k = (uint32_t)(kr_random_u64() % t->ndeg);
    const struct neighbour *nb = t->contacts;
    while (k--) nb = nb->next;
    return nb->town;
}

static void set_status(struct town *t, struct person *p, int status, kr_time now)
{
    t->count[p->status]--;
    t->count[status]++;
    p->status = (uint8_t)status;
    p->since = now;
}

static void seir_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                       void *state)
{
    struct town *t = state;
    uint32_t who = *(const uint32_t *)payload;
    struct person *p = &t->folk[who];
    (void)size;
    t->last = now;
    switch (type) {
    case CONTACT: /* an infectious person of this town meets someone */
        if (p->status != I) break;
        t->meetings++;
        uint32_t other = (uint32_t)(kr_random_u64() % t->people);
        kr_schedule(pick_town(me, t), now + 0.01 + kr_expo(0.01), EXPOSE, &other, sizeof other);
        kr_schedule(me, now + kr_expo(t->contact), CONTACT, &who, sizeof who);
        break;
    case EXPOSE:
        t->exposures++;
        if (p->status != S) break;
        set_status(t, p, E, now);
        kr_schedule(me, now + kr_expo(t->latent), INFECTIOUS, &who, sizeof who);
        break;
    case INFECTIOUS:
        set_status(t, p, I, now);
        p->infections++;
        kr_schedule(me, now + kr_expo(t->infectious), RECOVER, &who, sizeof who);
        kr_schedule(me, now + kr_expo(t->contact), CONTACT, &who, sizeof who);
        break;
    case RECOVER:
        set_status(t, p, R, now);
        kr_schedule(me, now + kr_expo(t->immune), SUSCEPTIBLE, &who, sizeof who);
        break;
    case SUSCEPTIBLE:
        set_status(t, p, S, now);
        /* now and then someone brings it back from outside */
        if (kr_random() < 0.01) {
            t->imported++;
            kr_schedule(me, now + 1.0, EXPOSE, &who, sizeof who);
        }
        break;
    }
}

static void seir_finish(kr_lp me, void *state)
{
    struct town *t = state;
    uint64_t infections = 0;
    for (uint32_t k = 0; k < t->people; k++) infections += t->folk[k].infections;
    kr_printf("town %llu: S %llu E %llu I %llu R %llu, infections %llu, meetings %llu, "
              "exposures %llu\n", (unsigned long long)me, (unsigned long long)t->count[S],
              (unsigned long long)t->count[E], (unsigned long long)t->count[I],
              (unsigned long long)t->count[R], (unsigned long long)infections,
              (unsigned long long)t->meetings, (unsigned long long)t->exposures);
}

static const struct kr_model seir_model = {
    .name = "seir",
    .init = seir_init,
    .event = seir_event,
    .finish = seir_finish,
    .lookahead = 0.01,
    .params = seir_params,
};

const struct kr_model *kr_model_entry(void) { return &seir_model; }
