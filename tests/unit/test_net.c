/* test_net.c - the ranks' collective steps through the MPI module. Alone (no launcher in the
 * environment) it checks that nothing of MPI starts; under mpirun (tests/e2e/cluster.py runs
 * it on 3 ranks) every rank brings its part of a GVT round and every rank must get the same
 * combination: keys by their minimum (ties broken by the whole key) or maximum, counts
 * summed. */
#include <math.h>
#include "check.h"
#include "net/net.h"

static struct kr__net_gvt part_of(int rank)
{
    struct kr__key inf = kr__key_at(INFINITY);
    struct kr__net_gvt g = { .min = { 10.0 + rank, 0, 0, (uint64_t)rank, 1 }, .err = inf,
                             .safe_hi = kr__key_at(-INFINITY), .lookahead = INFINITY,
                             .in_flight = rank == 0 ? 5 : -2,
                             .done = (uint64_t)rank + 1 };
    if (rank == 1) g.min = (struct kr__key){ 5.0, 2, 0, 7, 1 };
    if (rank == 2) g.min = (struct kr__key){ 5.0, 1, 0, 9, 4 }; /* same time, lower gen */
    if (rank == 0) g.safe_hi = (struct kr__key){ 7.0, 0, 0, 1, 1 };
    if (rank == 2) g.safe_hi = (struct kr__key){ 7.0, 0, 0, 0, 1 }; /* (lower: not the max) */
    if (rank == 1) g.lookahead = 0.5;
    if (rank == 2) g.lookahead = 0.25;
    if (rank == 2) g.err = (struct kr__key){ 9.0, 0, 0, 3, 1 };
    return g;
}

int main(void)
{
    struct kr__error err = { 0 };
    CHECK(kr__net_start(&err) == KR_OK);
    if (kr__net.size == 1) {
        CHECK(kr__net.ops == NULL && kr__net.rank == 0);
        CHECK(kr__net_agree(&err) == KR_OK);
        return check_done("net (one process: nothing of MPI started)");
    }
    int n = kr__net.size;
    CHECK(n >= 3);
    struct kr__net_gvt in = part_of(kr__net.rank), out;
    void *req;
    for (int round = 0; round < 50; round++) { /* (the same operation, again and again) */
        memset(&out, 0xA5, sizeof out);
        CHECK(kr__net.ops->gvt_start(&in, &out, &req) == 0);
        int done;
        while ((done = kr__net.ops->test(req)) == 0) {}
        CHECK(done == 1);
        struct kr__key want_min = { 5.0, 1, 0, 9, 4 }, want_sent = { 7.0, 0, 0, 1, 1 };
        struct kr__key want_err = { 9.0, 0, 0, 3, 1 };
        CHECK(kr__key_cmp(&out.min, &want_min) == 0);
        CHECK(kr__key_cmp(&out.safe_hi, &want_sent) == 0);
        CHECK(out.lookahead == 0.25);
        CHECK(kr__key_cmp(&out.err, &want_err) == 0);
        CHECK(out.in_flight == 5 - 2 * (n - 1));
        CHECK(out.done == (uint64_t)n * (n + 1) / 2);
    }
    CHECK(kr__net_agree(&err) == KR_OK);
    kr__net_stop();
    return check_done("net");
}
