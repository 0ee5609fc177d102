/* queueing.c - the queueing network of the TWOS paper: a source A and FIFO servers B, C, D.
 * A's customers go to B; leaving B, 90% go to D and 10% to C; C sends its customers back to
 * B; D's customers leave. Arrivals and services are exponential. A customer moves between
 * stations in zero virtual time, so this model exercises same-timestamp ordering. Each
 * server keeps its waiting line as a linked list in its arena. `--lps` must be a multiple of
 * 4: each group of four LPs is one independent network. */
#include <string.h>
#include "kairos.h"

enum { GENERATE, ARRIVAL, END_SERVICE };
enum { STATION_A, STATION_B, STATION_C, STATION_D };

struct customer {
    double born;                 /* when A created it */
    double queued;               /* when it joined this station's line */
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
};

static const struct kr_param queueing_params[] = {
    { "arrival_mean", KR_PARAM_DOUBLE, "1.0", "mean time between customers from A" },
    { "service_mean", KR_PARAM_DOUBLE, "0.5", "mean service time at B, C and D" },
    { "to_d", KR_PARAM_DOUBLE, "0.9", "probability that a customer leaving B goes to D" },
    { NULL, 0, NULL, NULL },
};

static kr_lp station_of(kr_lp me) { return me % 4; }

static void queueing_init(kr_lp me)
{
    if (kr_lp_count() % 4)
        kr_error("--lps %llu is not a multiple of 4 (each network is 4 LPs: A, B, C, D)",
                 (unsigned long long)kr_lp_count());
    struct station *s = kr_malloc(sizeof *s);
    kr_set_state(s);
    if (station_of(me) == STATION_A)
        kr_schedule(me, kr_expo(kr_param_double("arrival_mean", 1.0)), GENERATE, NULL, 0);
}

static void account(struct station *s, kr_time now)
{
    s->cum_len += (double)s->len * (now - s->last);
    s->last = now;
}

static void start_service(kr_lp me, kr_time now)
{
    kr_schedule(me, now + kr_expo(kr_param_double("service_mean", 0.5)), END_SERVICE, NULL, 0);
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
        kr_schedule(net + (kr_random() < kr_param_double("to_d", 0.9) ? STATION_D : STATION_C),
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

static void queueing_event(kr_lp me, kr_time now, unsigned type, const void *payload,
                           size_t size, void *state)
{
    struct station *s = state;
    kr_touch(s, sizeof *s); /* --state chunk: every event updates the station record */
    double born = now;
    if (size == sizeof born) memcpy(&born, payload, sizeof born);
    switch (type) {
    case GENERATE:
        s->served++;
        kr_schedule(me + STATION_B, now, ARRIVAL, &born, sizeof born);
        kr_schedule(me, now + kr_expo(kr_param_double("arrival_mean", 1.0)), GENERATE, NULL, 0);
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

static const struct kr_model queueing_model = {
    .name = "queueing",
    .init = queueing_init,
    .event = queueing_event,
    .finish = queueing_finish,
    .params = queueing_params,
    .flags = KR_MODEL_MARKS_WRITES,
};

KR_MODEL_EXPORT(queueing, queueing_model)
