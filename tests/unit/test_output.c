/* test_output.c - committed output: rollback drops only records at or after the key,
 * records move to the committed buffer below the horizon, and printing orders them by key
 * and by order within one event, kr_commit records after the event's text. */
#include <math.h>
#include <pthread.h>
#include "check.h"
#include "stats/output.h"

/* (a record is written as [its bytes]) */
static void to_file(void *f, const struct kr__outrec *o)
{
    if (o->part & KR_OUT_RECORD) fputc('[', f);
    fwrite(o->text, 1, o->len, f);
    if (o->part & KR_OUT_RECORD) fputc(']', f);
}

static struct kr__key key(double ts, uint64_t src, uint64_t seq)
{
    struct kr__key k = { ts, 0, 0, src, seq };
    return k;
}

/* ---- the printer against workers that leave and come back (kr__outsinks_take) ----
 * Two workers commit one record a key, 0, 1, 2, ... In even rounds worker 0 has left (its
 * mark is +inf: it owns nothing) and worker 1 commits every key; in odd rounds both work,
 * 0 the odd keys and 1 the even ones. Between rounds both meet, as at a migration, where
 * worker 0 leaves (+inf) or comes back at the round's first key. A printer takes from both
 * sinks as fast as it can and prints below the mark: every key must come out once, in
 * order. (A mark read while 0 was away and another read after it came back and committed
 * more let 1's records through ahead of 0's: the ledger's stdout out of order, 2 runs in
 * 400 beside a busy core.) */
#define SIM_ROUNDS 3000
#define SIM_LEN 16
struct sim {
    struct kr__outsink sink[2];
    pthread_barrier_t meet;
    int done;
    uint64_t printed, late;
};

static void sim_commit(struct kr__outsink *s, uint64_t k, uint64_t next)
{
    struct kr__key key = { (double)k, 0, 0, 0, 0 };
    pthread_mutex_lock(&s->mu); /* (the commit moves the text, then marks: two sections) */
    kr__outvec_add(&s->v, &key, "x", 1);
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&s->mu);
    s->upto = (struct kr__key){ (double)next, 0, 0, 0, 0 };
    pthread_mutex_unlock(&s->mu);
}

static void sim_mark(struct kr__outsink *s, double at)
{
    pthread_mutex_lock(&s->mu);
    s->upto = (struct kr__key){ at, 0, 0, 0, 0 };
    pthread_mutex_unlock(&s->mu);
}

struct sim_arg {
    struct sim *m;
    unsigned me;
};

static void *sim_run(void *p)
{
    struct sim_arg *a = p;
    struct sim *m = a->m;
    for (uint64_t r = 0; r < SIM_ROUNDS; r++) {
        uint64_t base = r * SIM_LEN, end = base + SIM_LEN;
        pthread_barrier_wait(&m->meet); /* (the migration: everyone has committed < base) */
        if (a->me == 0) sim_mark(&m->sink[0], r % 2 ? (double)base : INFINITY);
        pthread_barrier_wait(&m->meet);
        if (r % 2 == 0 && a->me == 0) continue;
        unsigned step = r % 2 ? 2 : 1;
        uint64_t k = base + (r % 2 ? (a->me == 0) : 0);
        for (; k < end; k += step) sim_commit(&m->sink[a->me], k, k + step < end ? k + step : end);
    }
    pthread_barrier_wait(&m->meet);
    return NULL;
}

static void sim_emit(void *arg, const struct kr__outrec *o)
{
    struct sim *m = arg;
    if (o->k.ts != (double)m->printed) m->late++;
    m->printed = (uint64_t)o->k.ts + 1;
}

static void sim_print(struct sim *m, bool all)
{
    struct kr__outvec v = { 0 };
    struct kr__key upto = kr__outsinks_take(m->sink, 2, sizeof m->sink[0], &v);
    if (all) upto = kr__key_at(INFINITY);
    kr__outvec_emit_before(&v, &upto, sim_emit, m);
    pthread_mutex_lock(&m->sink[0].mu); /* (what is not printable yet: back, for later) */
    struct kr__key last = kr__key_last();
    kr__outvec_move_before(&v, &last, &m->sink[0].v);
    pthread_mutex_unlock(&m->sink[0].mu);
    kr__outvec_free(&v);
}

static void *sim_printer(void *p)
{
    struct sim *m = p;
    while (!__atomic_load_n(&m->done, __ATOMIC_ACQUIRE)) sim_print(m, false);
    return NULL;
}

static void check_printer_race(void)
{
    static struct sim m;
    for (unsigned t = 0; t < 2; t++) {
        pthread_mutex_init(&m.sink[t].mu, NULL);
        m.sink[t].upto = kr__key_at(-INFINITY);
    }
    pthread_barrier_init(&m.meet, NULL, 2);
    struct sim_arg a[2] = { { &m, 0 }, { &m, 1 } };
    pthread_t w[2], pr;
    pthread_create(&pr, NULL, sim_printer, &m);
    for (unsigned t = 0; t < 2; t++) pthread_create(&w[t], NULL, sim_run, &a[t]);
    for (unsigned t = 0; t < 2; t++) pthread_join(w[t], NULL);
    __atomic_store_n(&m.done, 1, __ATOMIC_RELEASE);
    pthread_join(pr, NULL);
    sim_print(&m, true);
    if (m.late) fprintf(stderr, "output: %llu records printed out of key order\n",
                        (unsigned long long)m.late);
    CHECK(m.late == 0);
    CHECK(m.printed == (uint64_t)SIM_ROUNDS * SIM_LEN);
    for (unsigned t = 0; t < 2; t++) kr__outvec_free(&m.sink[t].v);
}

int main(void)
{
    check_printer_race();
    struct kr__outvec lp = { 0 }, sink = { 0 };
    struct kr__key k1 = key(1, 0, 0), k2 = key(2, 0, 1), k3 = key(3, 0, 2);
    kr__outvec_add(&lp, &k1, "a1\n", 3);
    kr__outvec_add(&lp, &k1, "a2\n", 3);
    kr__outvec_add(&lp, &k2, "b\n", 2);
    kr__outvec_add(&lp, &k3, "c\n", 2);
    CHECK(lp.n == 4 && lp.r[1].part == 1);
    kr__outvec_drop_from(&lp, &k2); /* rollback to before k2 */
    CHECK(lp.n == 2);
    kr__outvec_add(&lp, &k3, "c'\n", 3);
    struct kr__key h = key(2.5, 0, 0);
    kr__outvec_move_before(&lp, &h, &sink);
    CHECK(sink.n == 2 && lp.n == 1);
    struct kr__outvec other = { 0 };
    struct kr__key k0 = key(1, 0, 0);
    k0.ts = 0.5;
    kr__outvec_add(&other, &k0, "z\n", 2);
    kr__outvec_add_record(&other, &k0, "R", 1);  /* (made between two texts of one event) */
    kr__outvec_add(&other, &k0, "y\n", 2);
    kr__outvec_add_record(&other, &k0, "S", 1);
    CHECK(other.r[1].part == (KR_OUT_RECORD | 1) && other.r[2].part == 2);
    kr__outvec_move_before(&other, &h, &sink);
    FILE *f = tmpfile();
    kr__outvec_emit_before(&sink, &h, to_file, f);
    rewind(f);
    char buf[64] = { 0 };
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    CHECK(n == 16);
    CHECK(strcmp(buf, "z\ny\n[R][S]a1\na2\n") == 0);
    CHECK(sink.n == 0);
    kr__outvec_free(&lp);
    kr__outvec_free(&sink);
    kr__outvec_free(&other);
    return check_done("output");
}
