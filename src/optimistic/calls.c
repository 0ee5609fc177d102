/* calls.c - what a model's calls do on the optimistic engine where they do not send
 * (kr_emit, kr_commit/kr_metric records, kr_fail: the rest of tw_ops is engine.c's), and the
 * record a failed event leaves on its LP until it commits or is rolled back. */
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include "optimistic/tw.h"
#include "base/error.h"

void tw_emit(struct kr__ctx *c, const char *text, size_t len)
{
    if (!c->ev) { /* init: virtual time -inf is committed, and runs in LP order on one thread */
        kr__emit_direct(c, text, len);
        return;
    }
    kr__outvec_add(kr__lp_out(c->lp), &c->ev->k, text, len);
}

/* A kr_commit or kr_metric record joins the event's output (a u64 tag, the bytes): rolled
 * back, moved at commit, sent to rank 0 and printed - that is, given to the hook or the
 * metrics - in key order with it. */
void tw_record(struct kr__ctx *c, uint64_t tag, const void *data, size_t size)
{
    if (tag == KR_REC_METRIC) { /* (a value: kept apart, reduced by the committing thread) */
        struct kr__mrec m;
        memcpy(&m, data, sizeof m);
        kr__outvec_add_value(kr__lp_out(c->lp), &c->ev->k, m.id, m.value);
        return;
    }
    char rec[8 + KR_PAYLOAD_MAX];
    memcpy(rec, &tag, 8);
    if (size) memcpy(rec + 8, data, size);
    kr__outvec_add_record(kr__lp_out(c->lp), &c->ev->k, rec, 8 + size);
}

void tw_fail(struct kr__ctx *c, const char *msg)
{
    struct tw_thread *th = c->eng;
    if (!th || !th->err.armed ||
        (c->mode != KR_MODE_EVENT && c->mode != KR_MODE_COAST && c->mode != KR_MODE_DONE &&
         c->mode != KR_MODE_QUERY))
        return;
    th->err.msg = msg; /* copied after the longjmp (tw_keep_error): this may be a signal handler */
    th->err.armed = false;
    longjmp(*th->err.cur, 1); /* the event is marked failed; reported only if it commits */
}

void tw_keep_error(struct tw_thread *th, struct kr__lp *lp, struct kr__ev *e)
{
    if (th->g->cf.check && kr__ult_self.app) /* (a tick here could suspend it half-recorded) */
        kr__internal_error("thread %u records LP %llu's failed event at %.17g in application "
                           "mode", th->id, (unsigned long long)e->dest, e->k.ts);
    e->flags |= KR_EVF_ERROR;
    struct tw_fail *f = tw_fail_of(tw_lp_of(lp));
    free(f->err);
    f->err = strdup(th->err.msg);
    if (!f->err) kr__die(th->err.msg);
}

struct tw_fail *tw_fail_of(struct tw_lp *tl)
{
    if (!tl->fail && !(tl->fail = calloc(1, sizeof *tl->fail)))
        kr__fatal_oom("failure record", sizeof *tl->fail);
    return tl->fail;
}

void tw_fail_clear(struct tw_lp *tl)
{
    if (!tl->fail) return;
    free(tl->fail->err);
    free(tl->fail);
    tl->fail = NULL;
}
