/* pcs.c - personal communication system (PCS): each LP is a wireless cell of a hexagonal
 * grid (wrapped into a torus) with `channels` channels. Calls arrive as a Poisson stream,
 * last an exponential time and stay in a cell an exponential residence time; a call that
 * leaves before it ends is handed off to a random neighbour cell, where it is dropped if no
 * channel is free (new calls are blocked likewise). Each active call has a call record and
 * a power record (transmit power, path gain, fading, signal-to-interference ratio); setting
 * up a call reads the whole power list to size the new call's power, and a periodic FADING
 * event per cell redraws every call's fading and re-runs power control over the list - the
 * write-intensive zone of the state. A statistics area keeps counters per period of
 * virtual time. The arrival rate is derived from the target channel utilisation, and cells
 * start at that utilisation: with 1000 channels at 50% a cell's state is about 80 KB.
 * Workload after paper 000 section 3.4 and paper 002 section 4 (time unit: minutes).
 *
 * Writes are marked (kr_touch), so the model runs with every --state mode.
 *
 * spans=1 is the formulation for the conservative engine (expanded events): whatever sets an
 * event's send times is drawn by the event's sender, so each event can last until its first
 * send. An ARRIVAL carries its call's duration and residence and the gap to the next arrival
 * (it lasts the least of the three); a HANDOFF carries the call's residence in the new cell
 * (it lasts until the call ends or leaves); a call's end or departure lasts handoff_delay and
 * a FADING one fading_period. Same distributions as spans=0, a different random stream. */
#include <math.h>
#include <string.h>
#include "kairos.h"

enum { ARRIVAL, COMPLETION, LEAVE, HANDOFF, FADING };

struct power {               /* 64-byte block */
    struct power *prev, *next;
    uint32_t channel, unused;
    double gain;             /* path gain, fixed for the call in this cell */
    double fading;           /* current fading coefficient */
    double power;            /* transmit power (power control) */
    double sir;              /* signal to interference ratio */
};

struct call {                /* 64-byte block */
    struct call *prev, *next;
    struct power *pw;
    uint32_t id, channel;
    double start, end, leave;
};

struct period {              /* statistics of one period of virtual time */
    uint64_t arrivals, completions, handoffs_in, handoffs_out, blocked, dropped, fadings;
    double busy_time;        /* channel-minutes in use */
    double sir_sum;
    uint64_t sir_n;
};

struct cell {
    uint32_t channels, busy;
    uint32_t next_id, nperiods;
    double last;             /* time busy_time was last brought up to date */
    struct call *calls;
    struct power *powers;
    struct call **by_channel;
    uint64_t *in_use;        /* bitmap of busy channels */
    struct period *stats;    /* nperiods entries, cyclic */
    struct period total;
};

struct ends {                /* payload of COMPLETION and LEAVE */
    uint32_t channel, id;
};

struct arrival {             /* spans=1 payload of ARRIVAL, drawn by the previous arrival */
    double gap, call, residence;
};

struct handoff {             /* spans=1 payload of HANDOFF */
    double remaining, residence;
};

struct pcs_params {
    uint32_t channels, periods, width, spans;
    double utilization, call_mean, residence_mean, fading_period, stats_period, delay;
    double arrival_mean;     /* derived */
};

static const struct kr_param pcs_params[] = {
    { "channels", KR_PARAM_INT, "1000", "channels per cell", 1, 1000000 },
    { "utilization", KR_PARAM_DOUBLE, "0.5", "target share of busy channels", 0, 0 },
    { "call_mean", KR_PARAM_DOUBLE, "2.0", "mean call duration, minutes", 0, 0 },
    { "residence_mean", KR_PARAM_DOUBLE, "5.0", "mean residence time in a cell, minutes", 0, 0 },
    { "fading_period", KR_PARAM_DOUBLE, "0.1", "minutes between fading recalculations", 0, 0 },
    { "stats_period", KR_PARAM_DOUBLE, "1.0", "minutes per statistics period", 0, 0 },
    { "periods", KR_PARAM_INT, "64", "statistics periods kept (cyclic)", 1, 100000 },
    { "handoff_delay", KR_PARAM_DOUBLE, "0.001", "handoff signalling delay (the lookahead)", 0, 0 },
    { "width", KR_PARAM_INT, "0", "grid width in cells (0: near-square divisor of --lps)", 0, 0 },
    { "spans", KR_PARAM_INT, "0", "1: expanded events (send times drawn by the sender), "
      "runnable with --sync conservative", 0, 0 },
    { 0 },
};

#define NOISE 0.05
#define SIR_TARGET 4.0
#define POWER_MAX 50.0
#define FADING_MEMORY 0.7
#define COUPLING 0.1         /* share of another call's received power that interferes */

static const struct pcs_params *params(void)
{
    static __thread struct pcs_params p;
    static __thread int loaded;
    if (loaded) return &p;
    p.channels = (uint32_t)kr_param_int("channels", 1000);
    p.utilization = kr_param_double("utilization", 0.5);
    p.call_mean = kr_param_double("call_mean", 2.0);
    p.residence_mean = kr_param_double("residence_mean", 5.0);
    p.fading_period = kr_param_double("fading_period", 0.1);
    p.stats_period = kr_param_double("stats_period", 1.0);
    p.periods = (uint32_t)kr_param_int("periods", 64);
    p.delay = kr_param_double("handoff_delay", 0.001);
    p.width = (uint32_t)kr_param_int("width", 0);
    p.spans = kr_param_int("spans", 0) != 0;
    /* (channels and periods: the table's ranges, checked before the run) */
    if (!(p.utilization > 0 && p.utilization < 1)) kr_error("utilization must lie in (0, 1)");
    if (!(p.call_mean > 0 && p.residence_mean > 0 && p.fading_period > 0 &&
          p.stats_period > 0 && p.delay > 0))
        kr_error("call_mean, residence_mean, fading_period, stats_period and handoff_delay "
                 "must be positive");
    if (!p.width)
        for (p.width = (uint32_t)sqrt((double)kr_lp_count()); kr_lp_count() % p.width;) p.width--;
    if (kr_lp_count() % p.width)
        kr_error("width=%u does not divide --lps %llu", p.width, (unsigned long long)kr_lp_count());
    /* Per cell visit a call holds a channel H = 1/(1/call + 1/residence) on average and
     * leaves (hands off) with probability H/residence, so a new call makes 1/(1 - H/res)
     * visits; equal load everywhere gives new-call rate = u C (1 - H/res) / H. */
    double h = 1 / (1 / p.call_mean + 1 / p.residence_mean);
    p.arrival_mean = h / (p.utilization * p.channels * (1 - h / p.residence_mean));
    loaded = 1;
    return &p;
}

static kr_lp neighbour(kr_lp me, const struct pcs_params *p)
{
    static const int dq[2][6] = { { -1, 1, -1, 0, -1, 0 }, { -1, 1, 0, 1, 0, 1 } };
    static const int dr[6] = { 0, 0, -1, -1, 1, 1 };
    int64_t w = p->width, h = (int64_t)(kr_lp_count() / p->width);
    int64_t q = (int64_t)(me % p->width), r = (int64_t)(me / p->width);
    int k = (int)(kr_random_u64() % 6);
    q = ((q + dq[r & 1][k]) % w + w) % w;
    r = ((r + dr[k]) % h + h) % h;
    return (kr_lp)(r * w + q);
}

/* spans=1 sends an expanded event lasting `duration`; spans=0 a plain one. */
static void send(kr_lp dest, kr_time t, double duration, unsigned type, const void *payload,
                 size_t size, const struct pcs_params *p)
{
    if (p->spans) kr_schedule_span(dest, t, duration, type, payload, size);
    else kr_schedule(dest, t, type, payload, size);
}

/* spans=1: the arrival carries what its sends depend on, and lasts until the first. */
static void schedule_arrival(kr_lp me, kr_time t, const struct pcs_params *p)
{
    struct arrival a = { 0, 0, 0 };
    if (p->spans)
        a = (struct arrival){ kr_expo(p->arrival_mean), kr_expo(p->call_mean),
                              kr_expo(p->residence_mean) };
    send(me, t, fmin(a.gap, fmin(a.call, a.residence)), ARRIVAL, &a, p->spans ? sizeof a : 0, p);
}

static struct period *period(struct cell *c, kr_time now, const struct pcs_params *p)
{
    struct period *x = &c->stats[(uint64_t)(now / p->stats_period) % c->nperiods];
    kr_touch(x, sizeof *x);
    return x;
}

/* Channel-minutes in use since the last event go to the current period. */
static void account(struct cell *c, kr_time now, const struct pcs_params *p)
{
    double busy = (double)c->busy * (now - c->last);
    period(c, now, p)->busy_time += busy;
    c->total.busy_time += busy;
    c->last = now;
}

static int64_t free_channel(const struct cell *c)
{
    uint32_t words = (c->channels + 63) / 64, start = (uint32_t)(kr_random_u64() % words);
    for (uint32_t k = 0; k < words; k++) {
        uint32_t w = (start + k) % words;
        uint64_t freebits = ~c->in_use[w];
        if (w == words - 1 && c->channels % 64) freebits &= (1ull << (c->channels % 64)) - 1;
        if (freebits) return (int64_t)w * 64 + __builtin_ctzll(freebits);
    }
    return -1;
}

/* Power control for a new call: the interference it sees is what every active call
 * transmits, received through its own gain and fading. */
static double interference(const struct cell *c)
{
    double sum = 0;
    for (const struct power *x = c->powers; x; x = x->next) sum += x->power * x->gain * x->fading;
    return COUPLING * sum / (c->busy + 1.0);
}

static void set_power(struct power *x, double interf)
{
    double need = SIR_TARGET * (NOISE + interf) / (x->gain * x->fading);
    x->power = need < POWER_MAX ? need : POWER_MAX;
    x->sir = x->power * x->gain * x->fading / (NOISE + interf);
}

/* A call lasting `remaining` more takes a channel; `residence` < 0: draw it here. */
static bool setup(kr_lp me, struct cell *c, kr_time now, double remaining, double residence,
                  const struct pcs_params *p)
{
    int64_t ch = free_channel(c);
    if (ch < 0) return false;
    struct power *x = kr_malloc(sizeof *x);
    struct call *k = kr_malloc(sizeof *k);
    x->channel = k->channel = (uint32_t)ch;
    x->gain = 0.2 + kr_expo(1.0);
    x->fading = 0.5 + kr_random();
    set_power(x, interference(c));
    k->pw = x;
    k->id = c->next_id++;
    k->start = now;
    k->end = now + remaining;
    k->leave = now + (residence < 0 ? kr_expo(p->residence_mean) : residence);
    if (c->powers) KR_WRITE(c->powers->prev, x);
    x->next = c->powers;
    c->powers = x;
    if (c->calls) KR_WRITE(c->calls->prev, k);
    k->next = c->calls;
    c->calls = k;
    KR_WRITE(c->by_channel[ch], k);
    kr_touch(&c->in_use[ch / 64], sizeof c->in_use[0]);
    c->in_use[ch / 64] |= 1ull << (ch % 64);
    c->busy++;
    struct ends e = { (uint32_t)ch, k->id };
    bool completes = k->end <= k->leave;
    send(me, completes ? k->end : k->leave, p->delay, completes ? COMPLETION : LEAVE, &e,
         sizeof e, p);
    return true;
}

static void unlink_power(struct cell *c, struct power *x)
{
    if (x->prev) KR_WRITE(x->prev->next, x->next);
    else c->powers = x->next;
    if (x->next) KR_WRITE(x->next->prev, x->prev);
    kr_free(x);
}

/* The call on e's channel ends here; returns its end time. */
static double release(struct cell *c, const struct ends *e)
{
    struct call *k = e->channel < c->channels ? c->by_channel[e->channel] : NULL;
    if (!k || k->id != e->id)
        kr_error("no call %u on channel %u: the cell's call table is corrupt", e->id, e->channel);
    double end = k->end;
    if (k->prev) KR_WRITE(k->prev->next, k->next);
    else c->calls = k->next;
    if (k->next) KR_WRITE(k->next->prev, k->prev);
    unlink_power(c, k->pw);
    kr_free(k);
    KR_WRITE(c->by_channel[e->channel], NULL);
    kr_touch(&c->in_use[e->channel / 64], sizeof c->in_use[0]);
    c->in_use[e->channel / 64] &= ~(1ull << (e->channel % 64));
    c->busy--;
    return end;
}

/* New fading for every active call, then power control against the new interference. */
static void fading(struct cell *c, struct period *st)
{
    double total = 0;
    for (struct power *x = c->powers; x; x = x->next) {
        kr_touch(x, sizeof *x);
        x->fading = FADING_MEMORY * x->fading + (1 - FADING_MEMORY) * (0.25 + 1.5 * kr_random());
        total += x->power * x->gain * x->fading;
    }
    for (struct power *x = c->powers; x; x = x->next) {
        double own = x->power * x->gain * x->fading;
        set_power(x, COUPLING * (total - own) / (c->busy + 1.0));
        st->sir_sum += x->sir;
        st->sir_n++;
        c->total.sir_sum += x->sir;
        c->total.sir_n++;
    }
}

static void pcs_init(kr_lp me)
{
    const struct pcs_params *p = params();
    struct cell *c = kr_malloc(sizeof *c);
    kr_set_state(c);
    c->channels = p->channels;
    c->nperiods = p->periods;
    c->by_channel = kr_calloc(p->channels, sizeof *c->by_channel);
    c->in_use = kr_calloc((p->channels + 63) / 64, sizeof *c->in_use);
    c->stats = kr_calloc(p->periods, sizeof *c->stats);
    /* start in steady state: the target share of channels busy (durations are memoryless) */
    uint32_t start = (uint32_t)(p->utilization * p->channels + 0.5);
    for (uint32_t i = 0; i < start; i++) setup(me, c, 0.0, kr_expo(p->call_mean), -1, p);
    schedule_arrival(me, kr_expo(p->arrival_mean), p);
    send(me, p->fading_period * kr_random(), p->fading_period, FADING, NULL, 0, p);
}

static void arrival(kr_lp me, struct cell *c, kr_time now, struct period *st,
                    const void *payload, size_t size, const struct pcs_params *p)
{
    struct arrival a = { 0, 0, -1 };
    st->arrivals++, c->total.arrivals++;
    if (p->spans) {
        if (size != sizeof a) kr_error("ARRIVAL event with a %zu-byte payload", size);
        memcpy(&a, payload, sizeof a);
    } else {
        a.call = kr_expo(p->call_mean);
    }
    if (!setup(me, c, now, a.call, a.residence, p)) st->blocked++, c->total.blocked++;
    schedule_arrival(me, now + (p->spans ? a.gap : kr_expo(p->arrival_mean)), p);
}

/* The call on e's channel leaves for a neighbour, which takes it after handoff_delay. */
static void hand_off(kr_lp me, struct cell *c, kr_time now, double remaining, struct period *st,
                     const struct pcs_params *p)
{
    st->handoffs_out++, c->total.handoffs_out++;
    kr_lp to = neighbour(me, p);
    struct handoff h = { remaining, p->spans ? kr_expo(p->residence_mean) : 0 };
    send(to, now + p->delay, fmin(h.remaining, h.residence), HANDOFF, &h,
         p->spans ? sizeof h : sizeof h.remaining, p);
}

static void handoff_in(kr_lp me, struct cell *c, kr_time now, struct period *st,
                       const void *payload, size_t size, const struct pcs_params *p)
{
    struct handoff h = { 0, -1 };
    size_t want = p->spans ? sizeof h : sizeof h.remaining;
    if (size != want) kr_error("HANDOFF event with a %zu-byte payload", size);
    memcpy(&h, payload, want);
    st->handoffs_in++, c->total.handoffs_in++;
    if (!setup(me, c, now, h.remaining, h.residence, p)) st->dropped++, c->total.dropped++;
}

static void pcs_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                      void *state)
{
    const struct pcs_params *p = params();
    struct cell *c = state;
    kr_touch(c, sizeof *c);
    account(c, now, p);
    struct period *st = period(c, now, p);
    struct ends e;
    double remaining;
    switch (type) {
    case ARRIVAL:
        arrival(me, c, now, st, payload, size, p);
        break;
    case COMPLETION:
    case LEAVE:
        if (size != sizeof e) kr_error("call-end event with a %zu-byte payload", size);
        memcpy(&e, payload, sizeof e);
        remaining = release(c, &e) - now;
        if (type == COMPLETION) st->completions++, c->total.completions++;
        else hand_off(me, c, now, remaining, st, p);
        break;
    case HANDOFF:
        handoff_in(me, c, now, st, payload, size, p);
        break;
    case FADING:
        st->fadings++, c->total.fadings++;
        fading(c, st);
        send(me, now + p->fading_period, p->fading_period, FADING, NULL, 0, p);
        break;
    default:
        kr_error("unknown event type %u", type);
    }
}

static void pcs_finish(kr_lp me, void *state)
{
    const struct cell *c = state;
    const struct period *t = &c->total;
    double util = c->last > 0 ? t->busy_time / (c->last * c->channels) : 0;
    kr_printf("pcs cell %llu: active %u, arrivals %llu, completed %llu, handoffs in %llu out "
              "%llu, blocked %llu, dropped %llu, utilization %.4f, mean SIR %.4f\n",
              (unsigned long long)me, c->busy, (unsigned long long)t->arrivals,
              (unsigned long long)t->completions, (unsigned long long)t->handoffs_in,
              (unsigned long long)t->handoffs_out, (unsigned long long)t->blocked,
              (unsigned long long)t->dropped, util, t->sir_n ? t->sir_sum / (double)t->sir_n : 0);
}

static const char *const pcs_types[] = { "ARRIVAL", "COMPLETION", "LEAVE", "HANDOFF", "FADING",
                                          NULL };

static const struct kr_model pcs_model = {
    .name = "pcs",
    .type_names = pcs_types,
    .init = pcs_init,
    .event = pcs_event,
    .finish = pcs_finish,
    .params = pcs_params,
    .lookahead = 0, /* handoff_delay is a parameter; spans=1 gives every event its duration */
    .flags = KR_MODEL_MARKS_WRITES,
};

KR_MODEL_EXPORT(pcs, pcs_model)
