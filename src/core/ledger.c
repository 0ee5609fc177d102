/* ledger.c - commit hooks: the records events hand to kr_commit reach the model's hook when
 * their event commits, in commit order, with the model's ledger (struct kr_model.commit);
 * kr_metric's records, tagged KR_REC_METRIC, reach the metrics' reduction (metrics.c).
 * Engines keep records with the event's output (a record buffer here, or the committed-
 * output buffers of stats/output.h) and deliver them where that output is printed, after
 * the event's text: so the hook's calls, and what it prints, are in the same order on every
 * engine, thread and rank count. */
#include <math.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include "core/core.h"
#include "base/error.h"
#include "base/grow.h"

/* In the hook, kr_printf goes straight out: the hook runs where committed output is printed. */
static void send_refused(struct kr__ctx *c, struct kr__ev *e)
{
    (void)c, (void)e;
    kr__model_error("kr_schedule in the commit hook"); /* (api.c refuses it first) */
}

static const struct kr__engine_ops commit_ops = { send_refused, kr__emit_direct, NULL, NULL,
                                                  NULL };

/* The hooks' context for LP lp at now (commit_end: +inf, ledger_bytes: -inf), replacing the
 * caller's, which it returns: kr_printf straight out, no LP; a model error unwinds to bail
 * (NULL: it ends the process). */
static struct kr__ctx hooks_enter(struct kr__run *r, kr_lp lp, kr_time now, jmp_buf *bail)
{
    struct kr__ctx was = kr__ctx;
    kr__ctx = (struct kr__ctx){ .run = r, .id = lp, .now = now, .mode = KR_MODE_COMMIT,
                                .ops = &commit_ops, .pool = was.pool, .fatal = !bail,
                                .bail = bail };
    return was;
}

bool kr__commit_deliver(struct kr__run *r, kr_lp lp, kr_time now, const void *data,
                        size_t size, bool catch)
{
    jmp_buf bail;
    struct kr__ctx was = hooks_enter(r, lp, now, catch ? &bail : NULL);
    if (catch && setjmp(bail)) {
        kr__ctx = was;
        return false;
    }
    r->model->commit(r->ledger, lp, now, data, size);
    kr__ctx = was;
    return true;
}

int kr__commit_end(struct kr__run *r)
{
    if (!r->model->commit_end || !r->ledger) return KR_OK;
    jmp_buf bail;
    struct kr__ctx was = hooks_enter(r, 0, INFINITY, &bail);
    if (setjmp(bail)) {
        kr__ctx = was;
        return r->fail.status;
    }
    r->model->commit_end(r->ledger);
    kr__ctx = was;
    return KR_OK;
}

int kr__ledger_bytes(struct kr__run *r, size_t *bytes)
{
    jmp_buf bail;
    struct kr__ctx was = hooks_enter(r, 0, -INFINITY, &bail);
    if (setjmp(bail)) {
        kr__ctx = was;
        return r->fail.status;
    }
    *bytes = r->model->ledger_bytes();
    kr__ctx = was;
    return KR_OK;
}

/* kr_metric's record: reduced where commit hooks run, in the same order. */
static void metric_deliver(struct kr__run *r, kr_time now, const void *rec, size_t len)
{
    struct kr__mrec m;
    if (len != sizeof m) kr__internal_error("a metric record of %zu bytes", len);
    memcpy(&m, rec, sizeof m);
    kr__metric_add(r->metrics, now, &m);
}

void kr__recbuf_add(struct kr__recbuf *b, uint64_t tag, const void *data, size_t size)
{
    size_t need = b->n + 4 + 8 + size;
    if (need > b->cap) KR_GROW(b->b, b->cap, need, 256, "kr_commit records");
    uint32_t n = (uint32_t)size;
    uint64_t id = tag;
    memcpy(b->b + b->n, &n, 4);
    memcpy(b->b + b->n + 4, &id, 8);
    if (size) memcpy(b->b + b->n + 12, data, size);
    b->n = need;
}

void kr__recbuf_deliver(struct kr__run *r, struct kr__recbuf *b, kr_time now)
{
    size_t at = 0, end = b->n;
    b->n = 0; /* (first: a hook's error ends the run inside the loop) */
    while (at < end) {
        uint32_t n;
        uint64_t id;
        memcpy(&n, b->b + at, 4);
        memcpy(&id, b->b + at + 4, 8);
        if (id == KR_REC_METRIC) metric_deliver(r, now, b->b + at + 12, n);
        else kr__commit_deliver(r, (kr_lp)id, now, b->b + at + 12, n, false);
        at += 12 + (size_t)n;
    }
}

bool kr__record_deliver(struct kr__run *r, kr_time now, const char *rec, size_t len,
                        bool catch)
{
    uint64_t id;
    if (len < 8) kr__internal_error("a kr_commit record of %zu bytes", len);
    memcpy(&id, rec, 8);
    if (id == KR_REC_METRIC) {
        metric_deliver(r, now, rec + 8, len - 8);
        return true;
    }
    return kr__commit_deliver(r, (kr_lp)id, now, rec + 8, len - 8, catch);
}
