/* datastore.c - a distributed in-memory key/value data store (paper 000, section 3.3). Each LP
 * is a node holding one partition of `keys` records. A node receives batches of `batch`
 * transactions at exponential intervals (self-scheduled BATCH events); each transaction makes
 * `ops` accesses, to the local partition with probability `locality`, else to a random other
 * node's. The batch is simulated round-robin, as a multi-threaded store shares its CPUs: round
 * r runs access r of every transaction, so a batch event is long (about batch x ops x
 * locality x op_us of busy work: ~300 us at batch=10, ~600 us at batch=20 by default). The
 * metadata of every access is a heap block (kr_calloc), allocated as the round-robin reaches
 * it - or all at the start of the batch with clustered=1, the paper's variant (same history,
 * the model's calls into the engine bunched at the start of the event).
 *
 * Remote accesses of a batch travel in one REQUEST per destination node (the set of requests
 * as payload); the node applies them and answers with one RESPONSE. A write takes a lock on
 * its record for `lock_hold` virtual time; an access to a record another transaction holds
 * aborts the transaction (its later accesses are skipped). A transaction ends - committed or
 * aborted - when its last answer arrives; the node then frees its metadata. finish() prints
 * per node: transactions committed and aborted, mean latency, accesses served.
 *
 *   kairos run datastore --lps 64 --end 200 -P batch=10      (lightweight; heavy: batch=20) */
#include <string.h>
#include "kairos.h"
#include "../common/spin.h"

enum { BATCH, REQUEST, RESPONSE };

struct record {
    uint64_t value, version;
    uint64_t owner;          /* transaction holding the write lock */
    kr_time lock_until;
};

struct access {              /* metadata of one access (heap) */
    struct access *next;
    uint32_t node, key;
    uint8_t write, unused[7];
    uint64_t seen;           /* value read or written */
};

struct txn {                 /* metadata of one transaction (heap) */
    struct txn *next;        /* open list of the node */
    uint64_t id;
    kr_time start;
    uint32_t pending;        /* remote accesses not yet answered */
    uint32_t aborted;
    struct access *first, *last;
};

struct node {
    struct record *part;
    struct txn *open;        /* transactions waiting for answers */
    uint64_t next_txn;
    uint64_t batches, committed, aborted, local_ops, served_ops;
    double latency_sum;      /* of finished transactions */
};

struct wire_req {            /* one remote access in a REQUEST payload */
    uint64_t txn;
    uint32_t key;
    uint32_t write;
};

struct wire_ans {            /* one answer in a RESPONSE payload */
    uint64_t txn;
    uint64_t ok;
};

#define REQ_MAX (KR_PAYLOAD_MAX / sizeof(struct wire_req))
#define ANS_MAX (KR_PAYLOAD_MAX / sizeof(struct wire_ans))
#define BATCH_MAX 1024

struct ds_params {
    uint32_t batch, ops, keys, clustered;
    double locality, write_ratio, batch_mean, net_delay, net_mean, op_us, lock_hold;
};

static const struct kr_param ds_params[] = {
    { "batch", KR_PARAM_INT, "10",
      "transactions per batch (batching factor; paper: 10, 20)", 1, BATCH_MAX },
    { "ops", KR_PARAM_INT, "8", "accesses per transaction", 1, 1000 },
    { "keys", KR_PARAM_INT, "4096", "records per node partition", 1, 16777216 },
    { "locality", KR_PARAM_DOUBLE, "0.75",
      "probability that an access is to the local partition", 0, 1 },
    { "write_ratio", KR_PARAM_DOUBLE, "0.5", "probability that an access is a write", 0, 1 },
    { "batch_mean", KR_PARAM_DOUBLE, "1.0", "mean virtual time between a node's batches", 0, 0 },
    { "net_delay", KR_PARAM_DOUBLE, "0.02", "fixed network delay (the lookahead)", 0, 0 },
    { "net_mean", KR_PARAM_DOUBLE, "0.05", "mean of the exponential part of the delay", 0, 0 },
    { "op_us", KR_PARAM_DOUBLE, "4", "busy work per access, microseconds", 0, 0 },
    { "lock_hold", KR_PARAM_DOUBLE, "0.2", "virtual time a write keeps its record locked", 0, 0 },
    { "clustered", KR_PARAM_INT, "0", "1: allocate a batch's metadata at its start, not in "
      "round-robin order", 0, 1 },
    { 0 },
};

static const struct ds_params *params(void)
{
    static __thread struct ds_params p;
    static __thread int loaded;
    if (loaded) return &p;
    int64_t batch = kr_param_int("batch", 10), ops = kr_param_int("ops", 8);
    int64_t keys = kr_param_int("keys", 4096), clustered = kr_param_int("clustered", 0);
    /* (the ranges of batch, ops, keys, clustered, locality and write_ratio are the table's,
     * checked before the run) */
    p.batch = (uint32_t)batch;
    p.ops = (uint32_t)ops;
    p.keys = (uint32_t)keys;
    p.clustered = (uint32_t)clustered;
    p.locality = kr_param_double("locality", 0.75);
    p.write_ratio = kr_param_double("write_ratio", 0.5);
    p.batch_mean = kr_param_double("batch_mean", 1.0);
    p.net_delay = kr_param_double("net_delay", 0.02);
    p.net_mean = kr_param_double("net_mean", 0.05);
    p.op_us = kr_param_double("op_us", 4);
    p.lock_hold = kr_param_double("lock_hold", 0.2);
    if (!(p.batch_mean > 0 && p.net_delay > 0 && p.net_mean >= 0 && p.op_us >= 0 &&
          p.lock_hold >= 0))
        kr_error("batch_mean and net_delay must be positive; net_mean, op_us and lock_hold "
                 "not negative");
    if (kr_lp_count() < 2 && p.locality < 1)
        kr_error("remote accesses need at least 2 nodes (--lps), or locality=1");
    loaded = 1;
    return &p;
}

/* Apply one access of transaction `txn` to a record of this node: false if another
 * transaction holds the record's lock (the transaction aborts). */
static bool apply(struct node *n, kr_time now, uint64_t txn, uint32_t key, bool write,
                  uint64_t *seen)
{
    const struct ds_params *p = params();
    models_spin_us(p->op_us); /* the store's work on the request */
    struct record *r = &n->part[key];
    if (r->lock_until > now && r->owner != txn) return false;
    if (write) {
        kr_touch(r, sizeof *r);
        r->value = r->value * 6364136223846793005ull + txn;
        r->version++;
        r->owner = txn;
        r->lock_until = now + p->lock_hold;
    }
    *seen = r->value;
    return true;
}

static kr_time net_delay(const struct ds_params *p)
{
    return p->net_delay + (p->net_mean > 0 ? kr_expo(p->net_mean) : 0);
}

/* The target of an access, drawn when the round-robin reaches it (in both variants, so
 * clustered=1 simulates exactly the same history). */
static void draw(kr_lp me, struct access *a, const struct ds_params *p)
{
    kr_touch(a, sizeof *a);
    a->node = (uint32_t)me;
    if (kr_random() >= p->locality) { /* a random other node */
        a->node = (uint32_t)(kr_random_u64() % (kr_lp_count() - 1));
        a->node += a->node >= me;
    }
    a->key = (uint32_t)(kr_random_u64() % p->keys);
    a->write = kr_random() < p->write_ratio;
}

/* A new access block at the end of `t`'s list. */
static struct access *new_access(struct txn *t)
{
    struct access *a = kr_calloc(1, sizeof *a);
    if (t->last) {
        kr_touch(&t->last->next, sizeof t->last->next);
        t->last->next = a;
    } else {
        kr_touch(&t->first, sizeof t->first);
        t->first = a;
    }
    kr_touch(&t->last, sizeof t->last);
    t->last = a;
    return a;
}

static struct txn *new_txn(kr_lp me, struct node *n, kr_time now)
{
    struct txn *t = kr_calloc(1, sizeof *t);
    kr_touch(&n->next_txn, sizeof n->next_txn);
    t->id = (uint64_t)me << 40 | n->next_txn++;
    t->start = now;
    return t;
}

/* The transaction is over: count it and free its metadata. */
static void finish_txn(struct node *n, struct txn *t, kr_time now)
{
    kr_touch(n, sizeof *n);
    if (t->aborted) n->aborted++;
    else n->committed++;
    n->latency_sum += now - t->start;
    for (struct access *a = t->first, *next; a; a = next) {
        next = a->next;
        kr_free(a);
    }
    kr_free(t);
}

/* Round `r` of the batch: access r of every live transaction; remote ones only counted
 * here (sent after the last round). */
static void round_robin(kr_lp me, struct node *n, kr_time now, struct txn **txns, uint32_t r,
                        const struct ds_params *p)
{
    for (uint32_t i = 0; i < p->batch; i++) {
        struct txn *t = txns[i];
        struct access *a;
        if (!p->clustered) {
            if (r == 0) t = txns[i] = new_txn(me, n, now);
            a = new_access(t);
        } else { /* the r-th access, allocated at the start */
            a = t->first;
            for (uint32_t k = 0; k < r; k++) a = a->next;
        }
        draw(me, a, p);
        if (t->aborted) continue;
        if (a->node != me) {
            kr_touch(&t->pending, sizeof t->pending);
            t->pending++;
            continue;
        }
        kr_touch(&n->local_ops, sizeof n->local_ops);
        n->local_ops++;
        if (!apply(n, now, t->id, a->key, a->write, &a->seen)) {
            kr_touch(&t->aborted, sizeof t->aborted);
            t->aborted = 1;
        }
    }
}

/* One REQUEST per node (more if a payload fills up) with the batch's accesses to it. */
static void send_requests(kr_lp me, kr_time now, struct txn **txns, const struct ds_params *p)
{
    struct wire_req buf[REQ_MAX]; /* not static: under time-sharing another LP's event may
                                   * run on this thread between two kr_schedule calls */
    for (kr_lp d = 0; d < kr_lp_count(); d++) {
        if (d == me) continue;
        size_t k = 0;
        for (uint32_t i = 0; i < p->batch; i++)
            for (struct access *a = txns[i]->first; a; a = a->next) {
                if (a->node != d || txns[i]->aborted) continue;
                buf[k++] = (struct wire_req){ txns[i]->id, a->key, a->write };
                if (k == REQ_MAX) {
                    kr_schedule(d, now + net_delay(p), REQUEST, buf, k * sizeof *buf);
                    k = 0;
                }
            }
        if (k) kr_schedule(d, now + net_delay(p), REQUEST, buf, k * sizeof *buf);
    }
}

static void on_batch(kr_lp me, struct node *n, kr_time now, const struct ds_params *p)
{
    struct txn *txns[BATCH_MAX];
    kr_touch(&n->batches, sizeof n->batches);
    n->batches++;
    if (p->clustered) /* every transaction and access first, then the rounds */
        for (uint32_t i = 0; i < p->batch; i++) {
            txns[i] = new_txn(me, n, now);
            for (uint32_t r = 0; r < p->ops; r++) new_access(txns[i]);
        }
    for (uint32_t r = 0; r < p->ops; r++) round_robin(me, n, now, txns, r, p);
    send_requests(me, now, txns, p);
    for (uint32_t i = 0; i < p->batch; i++) {
        struct txn *t = txns[i];
        if (t->aborted) { /* its remote accesses were not sent */
            kr_touch(&t->pending, sizeof t->pending);
            t->pending = 0;
        }
        if (!t->pending) {
            finish_txn(n, t, now);
            continue;
        }
        kr_touch(&t->next, sizeof t->next);
        t->next = n->open;
        kr_touch(&n->open, sizeof n->open);
        n->open = t;
    }
    kr_schedule(me, now + kr_expo(p->batch_mean), BATCH, NULL, 0);
}

static void on_request(struct node *n, kr_time now, const void *payload, size_t size,
                       const struct ds_params *p)
{
    if (size % sizeof(struct wire_req) || !size)
        kr_error("REQUEST payload of %zu bytes is not a whole number of requests", size);
    struct wire_req req[REQ_MAX];
    struct wire_ans ans[REQ_MAX];
    size_t k = size / sizeof *req;
    memcpy(req, payload, size);
    kr_touch(&n->served_ops, sizeof n->served_ops);
    n->served_ops += k;
    for (size_t i = 0; i < k; i++) {
        uint64_t seen;
        if (req[i].key >= p->keys) kr_error("REQUEST for key %u of %u", req[i].key, p->keys);
        ans[i] = (struct wire_ans){ req[i].txn, apply(n, now, req[i].txn, req[i].key,
                                                      req[i].write, &seen) };
    }
    kr_lp origin = (kr_lp)(req[0].txn >> 40);
    kr_schedule(origin, now + net_delay(p), RESPONSE, ans, k * sizeof *ans);
}

static void on_response(struct node *n, kr_time now, const void *payload, size_t size)
{
    if (size % sizeof(struct wire_ans) || !size)
        kr_error("RESPONSE payload of %zu bytes is not a whole number of answers", size);
    struct wire_ans ans[ANS_MAX];
    memcpy(ans, payload, size);
    for (size_t i = 0; i < size / sizeof *ans; i++) {
        struct txn **link = &n->open;
        while (*link && (*link)->id != ans[i].txn) link = &(*link)->next;
        struct txn *t = *link;
        if (!t) kr_error("answer for transaction %llx, which is not open",
                         (unsigned long long)ans[i].txn);
        kr_touch(t, sizeof *t);
        t->aborted |= !ans[i].ok;
        if (--t->pending) continue;
        kr_touch(link, sizeof *link);
        *link = t->next;
        finish_txn(n, t, now);
    }
}

static void ds_init(kr_lp me)
{
    const struct ds_params *p = params();
    struct node *n = kr_calloc(1, sizeof *n);
    n->part = kr_calloc(p->keys, sizeof *n->part);
    for (uint32_t k = 0; k < p->keys; k++) n->part[k].value = (uint64_t)me << 32 | k;
    kr_set_state(n);
    kr_schedule(me, kr_expo(p->batch_mean), BATCH, NULL, 0);
}

static void ds_event(kr_lp me, kr_time now, unsigned type, const void *payload, size_t size,
                     void *state)
{
    const struct ds_params *p = params();
    struct node *n = state;
    switch (type) {
    case BATCH: on_batch(me, n, now, p); break;
    case REQUEST: on_request(n, now, payload, size, p); break;
    case RESPONSE: on_response(n, now, payload, size); break;
    default: kr_error("unknown event type %u", type);
    }
}

static void ds_finish(kr_lp me, void *state)
{
    struct node *n = state;
    uint64_t done = n->committed + n->aborted, open = 0;
    for (struct txn *t = n->open; t; t = t->next) open++;
    kr_printf("node %llu: %llu batches, %llu committed, %llu aborted, %llu open, mean latency "
              "%.4f, %llu local and %llu remote accesses served\n", (unsigned long long)me,
              (unsigned long long)n->batches, (unsigned long long)n->committed,
              (unsigned long long)n->aborted, (unsigned long long)open,
              done ? n->latency_sum / (double)done : 0.0, (unsigned long long)n->local_ops,
              (unsigned long long)n->served_ops);
}

/* Every request and response crosses the network: at least net_delay to another node (a
 * node's own accesses need none, and the lookahead is only about other LPs). */
static kr_time ds_lookahead(void)
{
    return kr_param_double("net_delay", 0.02);
}

static const struct kr_model ds_model = {
    .name = "datastore",
    .flags = KR_MODEL_MARKS_WRITES,
    .init = ds_init,
    .event = ds_event,
    .finish = ds_finish,
    .params = ds_params,
    .run_lookahead = ds_lookahead,
};

KR_MODEL_EXPORT(datastore, ds_model)
