/* queueing.c - the queueing network of the TWOS paper: a source A and FIFO servers B, C, D.
 * A's customers go to B; leaving B, 90% go to D and 10% to C; C sends its customers back to
 * B; D's customers leave. Arrivals and services are exponential. A customer moves between
 * stations in zero virtual time, so this model exercises same-timestamp ordering. Each
 * server keeps its waiting line as a linked list in its arena. `--lps` must be a multiple of
 * 4: each group of four LPs is one independent network.
 *
 * spans=1 is the formulation for the conservative engine (expanded events): the sender of a
 * customer draws its service time at the next station, so an arrival knows when the customer
 * will leave (max(arrival, server free) + service) and forwards it at that time; the arrival
 * lasts one service time, and A's GENERATE lasts until the next customer is born. Departures
 * are accounted when the station's next arrival passes them. Statistics follow
 * the same distributions as spans=0 but a different random stream. */
#include <string.h>
#include "kairos.h"

enum { GENERATE, ARRIVAL, END_SERVICE };
enum { STATION_A, STATION_B, STATION_C, STATION_D };

struct customer {
    double born;                 /* when A created it */
    double queued;               /* when it joined this station's line */
    double depart;               /* spans=1: when it leaves this station */
    struct customer *next;
};

struct station {
    struct customer *head, *tail;
    uint64_t len;                /* customers in line, the one in service included */
    double cum_len;              /* time-weighted queue length */
    double last;                 /* time of the previous change */
    uint64_t served;
    double wait_sum;             /* time in this station, summed over served customers */
    double sojourn_sum;          /* D only: time in the whole network */
    double free_at;              /* spans=1: when the last customer in line leaves */
};

struct visit {                   /* spans=1 payload of ARRIVAL */
    double born;
    double service;              /* drawn by the sender */
};

static const struct kr_param queueing_params[] = {
    { "arrival_mean", KR_PARAM_DOUBLE, "1.0", "mean time between customers from A", 0, 0 },
    { "service_mean", KR_PARAM_DOUBLE, "0.5", "mean service time at B, C and D", 0, 0 },
    { "to_d", KR_PARAM_DOUBLE, "0.9", "probability that a customer leaving B goes to D", 0, 1 },
    { "spans", KR_PARAM_INT, "0", "1: expanded events (service times drawn by the sender), "
      "runnable with --sync conservative", 0, 0 },
    { 0 },
};

static kr_lp station_of(kr_lp me) { return me % 4; }

struct queueing_params {
    double arrival_mean, service_mean, to_d;
    bool spans;
};

/* Read once per thread: looking a parameter up costs about as much as a whole event here. */
static const struct queueing_params *params(void)
{
    static __thread struct queueing_params p;
    static __thread bool loaded;
    if (!loaded) {
        p.arrival_mean = kr_param_double("arrival_mean", 1.0);
        p.service_mean = kr_param_double("service_mean", 0.5);
        p.to_d = kr_param_double("to_d", 0.9);
        p.spans = kr_param_int("spans", 0) != 0;
        loaded = true;
    }
    return &p;
}

static bool spans(void) { return params()->spans; }

static void queueing_init(kr_lp me)
{
    if (kr_lp_count() % 4)
        kr_error("--lps %llu is not a multiple of 4 (each network is 4 LPs: A, B, C, D)",
                 (unsigned long long)kr_lp_count());
    struct station *s = kr_malloc(sizeof *s);
    kr_set_state(s);
    if (station_of(me) != STATION_A) return;
    double gap = kr_expo(params()->arrival_mean);
    if (spans()) kr_schedule_span(me, 0, gap, GENERATE, &gap, sizeof gap);
    else kr_schedule(me, gap, GENERATE, NULL, 0);
}

static void account(struct station *s, kr_time now)
{
    s->cum_len += (double)s->len * (now - s->last);
    s->last = now;
}

static void start_service(kr_lp me, kr_time now)
{
    kr_schedule(me, now + kr_expo(params()->service_mean), END_SERVICE, NULL, 0);
}

static void arrive(kr_lp me, kr_time now, struct station *s, double born)
{
    struct customer *c = kr_malloc(sizeof *c);
    c->born = born;
    c->queued = now;
    if (s->tail) KR_WRITE(s->tail->next, c);
    else s->head = c;
    s->tail = c;
    account(s, now);
    if (s->len++ == 0) start_service(me, now);
}

static void depart(kr_lp me, kr_time now, struct station *s)
{
    struct customer *c = s->head;
    s->head = c->next;
    if (!s->head) s->tail = NULL;
    account(s, now);
    s->len--;
    s->served++;
    s->wait_sum += now - c->queued;
    kr_lp net = me - station_of(me);
    double born = c->born;
    switch (station_of(me)) {
    case STATION_B:
        kr_schedule(net + (kr_random() < params()->to_d ? STATION_D : STATION_C),
                    now, ARRIVAL, &born, sizeof born);
        break;
    case STATION_C:
        kr_schedule(net + STATION_B, now, ARRIVAL, &born, sizeof born);
        break;
    default:
        s->sojourn_sum += now - born;
        break;
    }
    kr_free(c);
    if (s->len > 0) start_service(me, now);
}

/* spans=1: send a customer to `dest` at `t`, drawing its service time there; its arrival
 * event lasts that service time (the customer leaves no earlier). */
static void forward(kr_lp dest, kr_time t, double born)
{
    struct visit v = { born, kr_expo(params()->service_mean) };
    kr_schedule_span(dest, t, v.service, ARRIVAL, &v, sizeof v);
}

/* spans=1: customers whose departure is at or before `now` leave the line. */
static void drain(kr_lp me, struct station *s, kr_time now)
{
    while (s->head && s->head->depart <= now) {
        struct customer *c = s->head;
        s->head = c->next;
        if (!s->head) s->tail = NULL;
        account(s, c->depart);
        s->len--;
        s->served++;
        s->wait_sum += c->depart - c->queued;
        if (station_of(me) == STATION_D) s->sojourn_sum += c->depart - c->born;
        kr_free(c);
    }
}

/* spans=1: a customer joins the line; its departure is known now, so it is forwarded now. */
static void arrive_span(kr_lp me, kr_time now, struct station *s, const struct visit *v)
{
    drain(me, s, now);
    struct customer *c = kr_malloc(sizeof *c);
    c->born = v->born;
    c->queued = now;
    c->next = NULL;
    c->depart = (s->free_at > now ? s->free_at : now) + v->service;
    s->free_at = c->depart;
    if (s->tail) KR_WRITE(s->tail->next, c);
    else s->head = c;
    s->tail = c;
    account(s, now);
    s->len++;
    kr_lp net = me - station_of(me);
    if (station_of(me) == STATION_B)
        forward(net + (kr_random() < params()->to_d ? STATION_D : STATION_C),
                c->depart, c->born);
    else if (station_of(me) == STATION_C)
        forward(net + STATION_B, c->depart, c->born);
}

/* spans=1: A's GENERATE lasts `gap`; the next customer is born at its end. */
static void generate_span(kr_lp me, kr_time now, struct station *s, double gap)
{
    kr_time born = now + gap;
    s->served++;
    forward(me + STATION_B, born, born);
    double next = kr_expo(params()->arrival_mean);
    kr_schedule_span(me, born, next, GENERATE, &next, sizeof next);
}

static void event_span(kr_lp me, kr_time now, unsigned type, const void *payload,
                       size_t size, struct station *s)
{
    if (type == GENERATE && size == sizeof(double)) {
        double gap;
        memcpy(&gap, payload, sizeof gap);
        generate_span(me, now, s, gap);
    } else if (type == ARRIVAL && size == sizeof(struct visit)) {
        struct visit v;
        memcpy(&v, payload, sizeof v);
        arrive_span(me, now, s, &v);
    } else {
        kr_error("event type %u with a %zu-byte payload is not part of spans=1", type, size);
    }
}

static void queueing_event(kr_lp me, kr_time now, unsigned type, const void *payload,
                           size_t size, void *state)
{
    struct station *s = state;
    kr_touch(s, sizeof *s); /* --state chunk: every event updates the station record */
    if (spans()) {
        event_span(me, now, type, payload, size, s);
        return;
    }
    double born = now;
    if (size == sizeof born) memcpy(&born, payload, sizeof born);
    switch (type) {
    case GENERATE:
        s->served++;
        kr_schedule(me + STATION_B, now, ARRIVAL, &born, sizeof born);
        kr_schedule(me, now + kr_expo(params()->arrival_mean), GENERATE, NULL, 0);
        break;
    case ARRIVAL:
        arrive(me, now, s, born);
        break;
    case END_SERVICE:
        depart(me, now, s);
        break;
    }
}

static void queueing_finish(kr_lp me, void *state)
{
    struct station *s = state;
    static const char names[] = "ABCD";
    kr_lp st = station_of(me);
    if (st == STATION_A) {
        kr_printf("network %llu: A generated %llu customers\n", (unsigned long long)(me / 4),
                  (unsigned long long)s->served);
        return;
    }
    kr_printf("network %llu: %c mean queue length %.6f, served %llu, mean time in station %.6f",
              (unsigned long long)(me / 4), names[st], s->last > 0 ? s->cum_len / s->last : 0.0,
              (unsigned long long)s->served, s->served ? s->wait_sum / (double)s->served : 0.0);
    if (st == STATION_D)
        kr_printf(", mean time in network %.6f",
                  s->served ? s->sojourn_sum / (double)s->served : 0.0);
    kr_printf("\n");
}

static const char *const queueing_types[] = { "GENERATE", "ARRIVAL", "END_SERVICE", NULL };

static const struct kr_model queueing_model = {
    .name = "queueing",
    .type_names = queueing_types,
    .init = queueing_init,
    .event = queueing_event,
    .finish = queueing_finish,
    .params = queueing_params,
    .flags = KR_MODEL_MARKS_WRITES,
};

KR_MODEL_EXPORT(queueing, queueing_model)
