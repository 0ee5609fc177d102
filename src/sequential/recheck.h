/* recheck.h - the sequential engine's re-execution check (--check): every event runs twice
 * from the same saved state, and the two runs must leave the same state, send the same
 * events and print the same text; with --state reverse the model's reverse handler runs
 * between the two and must bring the state back to the one before the event. A model that fails it (global variables, rand(), the
 * wall clock, reading memory it does not own) would give wrong results under Time Warp,
 * which re-executes events after a rollback; this finds it in the sequential engine, at the
 * first event that shows it. */
#ifndef KR_SEQUENTIAL_RECHECK_H
#define KR_SEQUENTIAL_RECHECK_H

#include "core/core.h"
#include "state/blob.h"

struct kr__recheck {
    struct kr__blobs blobs;
    struct kr__ev **sent;      /* sends captured during one run */
    size_t nsent, capsent;
    struct kr__ev **sent1;     /* the first run's, kept for the comparison */
    size_t nsent1, capsent1;
    char *out;                 /* output captured during one run */
    size_t nout, capout;
    struct kr__recbuf rec;     /* its kr_commit records */
    /* The model's writable global memory (a shared object's .data and .bss; none for a
     * built-in model, which lives in the engine's own image), copied before each event:
     * an event that changes it keeps state Time Warp neither saves nor rolls back. */
    struct kr__recheck_seg {
        unsigned char *at, *copy;
        size_t len;
    } glob[4];
    unsigned nglob;
    char glob_file[256];       /* the model's file, for the message */
    uintptr_t glob_base;       /* its load address */
    void *empty;               /* a read-only page: the payload of an empty event while it
                                * is checked (a write through it is named: fault.c) */
    unsigned char *area;       /* --state reverse: the first run's reverse area, which the
                                * model's reverse handler then gets (NULL: no reverse run) */
};

/* (r: the run, whose model's writable segments are found) */
void kr__recheck_init(struct kr__recheck *c, const struct kr__run *r);
void kr__recheck_destroy(struct kr__recheck *c);
/* Run event e of lp twice and compare. The second run's sends are returned in c->sent (the
 * caller delivers them) and its output in c->out (the caller prints it). */
void kr__recheck_event(struct kr__recheck *c, struct kr__run *r, struct kr__lp *lp,
                       struct kr__ev *e);
/* The engine's send/emit while a checked event runs. */
/* done() after event e, checked: it must leave the LP's state as it found it. */
bool kr__recheck_done(struct kr__recheck *c, struct kr__run *r, struct kr__lp *lp,
                      struct kr__ev *e);
/* With r->check_slices (run.c): the LP states out of reach while events run, all but those
 * opened - the running LP's for its event and done(), a queried LP's for its answer. Both
 * do nothing without check_slices; kr__recheck_reach returns whether the slice changed
 * (a nested query's LP, open already, stays open for its outer answer). */
void kr__recheck_reach_all(const struct kr__run *r, bool on);
bool kr__recheck_reach(const struct kr__run *r, uint64_t lp, bool on);
void kr__recheck_capture_send(struct kr__recheck *c, struct kr__ev *e);
void kr__recheck_capture_text(struct kr__recheck *c, const char *text, size_t len);

#endif
