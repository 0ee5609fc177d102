/* ledger.c - a test model for commit hooks (struct kr_model.commit, kr_commit). LPs pass
 * jobs around with random delays, many at equal times (ties), print a line now and then, and
 * hand each event's job to kr_commit, some events twice. The hook folds every record into
 * its ledger - a count, a running hash of (LP, time, record) in the order the hook sees
 * them, a histogram - and prints the running hash every `every` records, so stdout shows
 * the exact commit order: every engine, thread and rank count must print the same.
 *   -P fail_at=T  the hook stops the run (kr_error) at its first record at time >= T
 *   -P misuse=K   1 kr_schedule in the hook, 2 kr_commit in init, 3 a record over
 *                 KR_PAYLOAD_MAX, 4 kr_random in the hook, 5 kr_commit in finish
 *   -P grain=G    timestamps are multiples of G (0: continuous): ties when G is coarse
 *   -P unsafe=1   a job's hop count also counts a static variable's calls: not rollback-
 *                 safe, so the optimistic engine commits other payloads (trace-diff)
 *   -P end_fail=1 commit_end stops the run (kr_error); 2: ledger_bytes does
 * The ledger's size is chosen at run time (ledger_bytes: a record count per LP after the
 * totals), and commit_end reduces it: the busiest LP and a check that the counts add up. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "kairos.h"

struct lp {
    uint64_t jobs, value;
};

struct job {
    uint64_t id, hops;
};

struct ledger {
    uint64_t records, hash, hist[16];
    uint64_t per_lp[];           /* records of each LP: kr_lp_count() of them */
};

static const struct kr_param ledger_params[] = {
    { "every", KR_PARAM_INT, "7", "the hook prints its running hash every this many records",
      1, 1e9 },
    { "jobs", KR_PARAM_INT, "3", "jobs each LP starts", 0, 1000 },
    { "grain", KR_PARAM_DOUBLE, "0.25", "timestamps are multiples of this (0: continuous)", 0,
      1e6 },
    { "fail_at", KR_PARAM_DOUBLE, "inf", "the hook fails at its first record at or after this "
      "time", 0, INFINITY },
    { "misuse", KR_PARAM_INT, "0", "a call that is not allowed (see the file's comment)", 0, 5 },
    { "unsafe", KR_PARAM_INT, "0", "1: a static variable changes the payloads", 0, 1 },
    { "end_fail", KR_PARAM_INT, "0", "1: commit_end stops the run, 2: ledger_bytes does", 0,
      2 },
    { 0 },
};

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static kr_time later(kr_time now)
{
    double g = kr_param_double("grain", 0.25);
    double d = 0.1 + kr_expo(1.0);
    return g > 0 ? (floor(now / g) + 1 + floor(d / g)) * g : now + d;
}

static void ledger_init(kr_lp me)
{
    struct lp *s = kr_calloc(1, sizeof *s);
    kr_set_state(s);
    int64_t n = kr_param_int("jobs", 3);
    for (int64_t i = 0; i < n; i++) {
        struct job j = { me * 1000 + (uint64_t)i, 0 };
        kr_schedule(me, later(0), 0, &j, sizeof j);
    }
    if (kr_param_int("misuse", 0) == 2) kr_commit(&n, sizeof n);
}

static void ledger_event(kr_lp me, kr_time now, unsigned type, const void *payload,
                         size_t size, void *state)
{
    struct lp *s = state;
    struct job j;
    (void)type;
    if (size != sizeof j) kr_error("a job of %zu bytes", size);
    memcpy(&j, payload, sizeof j);
    s->jobs++;
    s->value = mix(s->value, j.id);
    j.hops++;
    if (kr_param_int("unsafe", 0)) {
        static __thread uint64_t calls; /* (what the checkpoints do not hold; one a thread,
                                          * so that ThreadSanitizer sees no race) */
        j.hops += ++calls % 2;
    }
    if (j.hops % 5 == 0) kr_printf("lp %llu job %llu hop %llu at %.17g\n",
                                   (unsigned long long)me, (unsigned long long)j.id,
                                   (unsigned long long)j.hops, now);
    kr_commit(&j, sizeof j);
    if (j.id % 3 == 0) { /* (two records of one event, and text after the first) */
        uint64_t v = s->value;
        kr_printf("lp %llu value %llx\n", (unsigned long long)me, (unsigned long long)v);
        kr_commit(&v, sizeof v);
    }
    if (kr_param_int("misuse", 0) == 3) {
        static char big[KR_PAYLOAD_MAX + 1];
        kr_commit(big, sizeof big);
    }
    kr_schedule((kr_lp)(kr_random_u64() % kr_lp_count()), later(now), 0, &j, sizeof j);
}

static void ledger_commit(void *book, kr_lp me, kr_time now, const void *record, size_t size)
{
    struct ledger *l = book;
    if (now >= kr_param_double("fail_at", INFINITY))
        kr_error("the ledger refuses a record at %.17g (-P fail_at)", now);
    int64_t misuse = kr_param_int("misuse", 0);
    if (misuse == 1) kr_schedule(me, now + 1, 0, NULL, 0);
    if (misuse == 4) (void)kr_random();
    uint64_t t;
    memcpy(&t, &now, sizeof t);
    uint64_t h = mix(mix(l->hash, me), t);
    const unsigned char *p = record;
    for (size_t i = 0; i < size; i++) h = mix(h, p[i]);
    l->hash = h;
    l->hist[size % 16]++;
    l->per_lp[me]++;
    if (++l->records % (uint64_t)kr_param_int("every", 7) == 0)
        kr_printf("ledger %llu records, hash %016llx, at %.17g (LP %llu, %zu bytes)\n",
                  (unsigned long long)l->records, (unsigned long long)l->hash, now,
                  (unsigned long long)me, size);
}

static size_t ledger_bytes(void)
{
    if (kr_param_int("end_fail", 0) == 2)
        kr_error("no ledger for %llu LPs (-P end_fail=2)", (unsigned long long)kr_lp_count());
    return sizeof(struct ledger) + kr_lp_count() * sizeof(uint64_t);
}

static void ledger_end(void *book)
{
    const struct ledger *l = book;
    if (kr_param_int("end_fail", 0) == 1)
        kr_error("commit_end refuses to sum up (-P end_fail)");
    uint64_t sum = 0, most = 0;
    kr_lp busiest = 0;
    for (kr_lp i = 0; i < kr_lp_count(); i++) {
        sum += l->per_lp[i];
        if (l->per_lp[i] > most) {
            most = l->per_lp[i];
            busiest = i;
        }
    }
    kr_printf("commit_end: %llu records (%s), hash %016llx, busiest LP %llu with %llu\n",
              (unsigned long long)l->records, sum == l->records ? "per LP adds up" : "LOST",
              (unsigned long long)l->hash, (unsigned long long)busiest,
              (unsigned long long)most);
}

static void ledger_finish(kr_lp me, void *state)
{
    const struct lp *s = state;
    if (kr_param_int("misuse", 0) == 5) kr_commit(NULL, 0);
    kr_printf("lp %llu: %llu jobs, value %llx\n", (unsigned long long)me,
              (unsigned long long)s->jobs, (unsigned long long)s->value);
}

static const struct kr_model ledger_model = {
    .name = "ledger",
    .init = ledger_init,
    .event = ledger_event,
    .finish = ledger_finish,
    .lookahead = 0.1,
    .params = ledger_params,
    .commit = ledger_commit,
    .ledger_bytes = ledger_bytes,
    .commit_end = ledger_end,
#ifdef BOTH_SIZES /* (built so once: a size given two ways, which the loader refuses) */
    .ledger_size = 64,
#endif
};

KR_MODEL_EXPORT(ledger, ledger_model)
