/* recheck.c - see recheck.h. */
#define _GNU_SOURCE /* dl_iterate_phdr */
#include "sequential/recheck.h"
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include "core/trace.h"
#include "base/grow.h"
#include "base/digest.h"
#include "base/error.h"
#include "state/ckpt.h"
#include "state/mode.h"

/* ---- the model's global memory ---- */

struct find_model {
    uintptr_t fn;                  /* an address in the model's code */
    struct kr__recheck *c;
};

/* The object holds code address fn in one of its executable segments. */
static bool holds_code(const struct dl_phdr_info *info, uintptr_t fn)
{
    bool mine = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        uintptr_t a = info->dlpi_addr + p->p_vaddr;
        mine |= p->p_type == PT_LOAD && (p->p_flags & PF_X) && fn >= a && fn < a + p->p_memsz;
    }
    return mine;
}

/* A writable loaded segment of the model's file (its globals) is one --check watches. */
static void keep_segment(struct kr__recheck *c, ElfW(Addr) base, const ElfW(Phdr) *p)
{
    if (p->p_type != PT_LOAD || !(p->p_flags & PF_W) || !p->p_memsz) return;
    struct kr__recheck_seg *g = &c->glob[c->nglob++];
    g->at = (unsigned char *)(base + p->p_vaddr);
    g->len = p->p_memsz;
    g->copy = malloc(g->len);
    if (!g->copy) kr__fatal_oom("--check's copy of the model's globals", g->len);
}

static int model_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct find_model *f = arg;
    bool mine = holds_code(info, f->fn);
    /* (the first object is the executable: a built-in model's globals are the engine's) */
    if (!mine || !info->dlpi_name || !info->dlpi_name[0]) return mine;
    struct kr__recheck *c = f->c;
    snprintf(c->glob_file, sizeof c->glob_file, "%s", info->dlpi_name);
    c->glob_base = info->dlpi_addr;
    for (int i = 0; i < info->dlpi_phnum && c->nglob < 4; i++)
        keep_segment(c, info->dlpi_addr, &info->dlpi_phdr[i]);
    return 1;
}

/* The segment's bytes are read whole, the redzones AddressSanitizer puts between globals
 * included: by volatile loads it does not instrument here (memcpy it would check). */
__attribute__((no_sanitize_address)) static void seg_copy(unsigned char *to,
                                                          const unsigned char *from, size_t n)
{
    const volatile unsigned char *f = from;
    for (size_t k = 0; k < n; k++) to[k] = f[k];
}

/* The first byte where the segment differs from its copy, or n. */
__attribute__((no_sanitize_address)) static size_t seg_diff(const unsigned char *copy,
                                                           const unsigned char *at, size_t n)
{
    const volatile unsigned char *a = at;
    size_t k = 0;
    while (k < n && copy[k] == a[k]) k++;
    return k;
}

static void globals_keep(struct kr__recheck *c)
{
    for (unsigned i = 0; i < c->nglob; i++) seg_copy(c->glob[i].copy, c->glob[i].at, c->glob[i].len);
}

/* The event changed the model's global memory: name where. */
static void globals_check(const struct kr__recheck *c)
{
    for (unsigned i = 0; i < c->nglob; i++) {
        const struct kr__recheck_seg *g = &c->glob[i];
        size_t k = seg_diff(g->copy, g->at, g->len);
        if (k == g->len) continue;
        unsigned long off = (unsigned long)((uintptr_t)(g->at + k) - c->glob_base);
        kr__model_error("--check: the event wrote to the model's global or static memory (%s, "
                        "offset 0x%lx: nm -n %s names the variable): Time Warp neither saves "
                        "nor rolls back such state, so engines then differ. Keep what events "
                        "change in the LP's state (kr_malloc); globals may only be set in init "
                        "or read", c->glob_file, off, c->glob_file);
    }
}

void kr__recheck_init(struct kr__recheck *c, const struct kr__run *r)
{
    memset(c, 0, sizeof *c);
    kr__blobs_init(&c->blobs);
    c->empty = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c->empty == MAP_FAILED) c->empty = NULL; /* (then empty payloads go unguarded) */
    kr__empty_payload = c->empty;
    struct find_model f = { (uintptr_t)r->model->event, c };
    dl_iterate_phdr(model_segments, &f);
    if (kr__state_ops(r->cfg->state_mode)->reverse) {
        size_t n = r->model->reverse_bytes ? r->model->reverse_bytes : 1;
        if (!(c->area = malloc(n))) kr__fatal_oom("--check's reverse area", n);
    }
}

void kr__recheck_destroy(struct kr__recheck *c)
{
    kr__empty_payload = NULL;
    if (c->empty) munmap(c->empty, 4096);
    for (unsigned i = 0; i < c->nglob; i++) free(c->glob[i].copy);
    kr__blobs_destroy(&c->blobs);
    free(c->sent);
    free(c->sent1);
    free(c->out);
    free(c->rec.b);
    free(c->area);
}

void kr__recheck_capture_send(struct kr__recheck *c, struct kr__ev *e)
{
    if (c->nsent == c->capsent) KR_GROW(c->sent, c->capsent, c->nsent + 1, 16, "check buffer");
    c->sent[c->nsent++] = e;
}

void kr__recheck_capture_text(struct kr__recheck *c, const char *text, size_t len)
{
    if (c->nout + len > c->capout) KR_GROW(c->out, c->capout, c->nout + len, 256, "check buffer");
    memcpy(c->out + c->nout, text, len);
    c->nout += len;
}

/* What one run printed, and the LP's send count; the sends are compared one by one
 * (same_sends). The state is compared apart, byte for byte: both runs start from the same
 * restored arena, so an equal state is an equal image (hashing it word by word cost 50
 * times the event on large states). */
static uint64_t printed(const struct kr__recheck *c, const struct kr__lp *lp)
{
    uint64_t h = kr__mix(0x7AFF1C, lp->seq);
    h = c->rec.n ? kr__mix_bytes(h, c->rec.b, c->rec.n) : kr__mix(h, 1);
    return c->nout ? kr__mix_bytes(h, c->out, c->nout) : kr__mix(h, 0);
}

/* Whether two sends go to the same LP at the same time, of one type and payload size. */
static bool same_header(const struct kr__ev *a, const struct kr__ev *b)
{
    return a->dest == b->dest && a->k.ts == b->k.ts && a->type == b->type && a->size == b->size;
}

/* Do the two runs' sends agree? If only a payload's bytes differ, *byte is the first
 * differing one and *at the send; else *at is SIZE_MAX when they differ. */
static bool same_sends(const struct kr__recheck *c, size_t *at, size_t *byte)
{
    *at = SIZE_MAX;
    if (c->nsent != c->nsent1) return false;
    for (size_t i = 0; i < c->nsent; i++) {
        const struct kr__ev *a = c->sent1[i], *b = c->sent[i];
        if (!same_header(a, b)) return false;
        for (size_t k = 0; k < a->size; k++)
            if (a->payload[k] != b->payload[k]) {
                *at = i;
                *byte = k;
                return false;
            }
    }
    return true;
}

/* Fill the stack below the caller with `byte`, so the two runs start on different stack
 * garbage: a payload that copies uninitialised bytes (struct padding, a field left unset)
 * then shows as a difference. Such bytes enter the run digest, which then differs between
 * engines although the model behaves the same. */
static __attribute__((noinline)) void scribble_stack(int byte)
{
    char junk[32768];
    memset(junk, byte, sizeof junk);
    __asm__ volatile("" : : "r"(junk) : "memory");
}

static bool same_state(const struct kr__ckpt *x, const struct kr__ckpt *y)
{
    return x->bytes == y->bytes && x->nareas == y->nareas &&
           !memcmp(x->words, y->words, sizeof x->words) &&
           !memcmp(x->data, y->data, x->bytes - sizeof *x);
}

_Noreturn static void reach_failed(void)
{
    kr__die("--check: mprotect on the LP states failed (the kernel's limit on mappings, "
            "vm.max_map_count?)");
}

void kr__recheck_reach_all(const struct kr__run *r, bool on)
{
    if (r->check_slices && !kr__region_reach_all(on)) reach_failed();
}

bool kr__recheck_reach(const struct kr__run *r, uint64_t lp, bool on)
{
    bool failed = false;
    if (!r->check_slices) return false;
    bool changed = kr__region_reach(lp, on, &failed);
    if (failed) reach_failed();
    return changed;
}

/* The event wrote past its kr_malloc memory: checked before anything reads the heap the
 * write may have broken, and the process ends here (freeing the run could trip over it). */
static void overran(const struct kr__area *ar)
{
    kr__ctx.fatal = true;
    kr__model_error("--check: the event wrote past the end of its kr_malloc memory (beyond "
                    "the last %zu-byte block of an area): an index or length off by some; "
                    "such a write corrupts the heap, and another run would crash elsewhere",
                    kr__arena_class_bytes(ar->cls));
}

static void run_once(struct kr__recheck *c, struct kr__run *r, struct kr__lp *lp, struct kr__ev *e)
{
    c->nsent = 0;
    c->nout = 0;
    c->rec.n = 0;
    if (e->size || !c->empty || kr__trace_run || e->pflags) {
        kr__run_event(r, lp, e);
    } else { /* (an empty payload is a read-only page: a write through it is named) */
        r->model->event(e->dest, e->k.ts, e->type, c->empty, 0, lp->root);
        if (atomic_load_explicit(&kr__foreign_inbox, memory_order_relaxed)) kr__foreign_raise();
    }
    const struct kr__area *ar = kr__arena_overrun(&lp->arena);
    if (ar) overran(ar);
}

/* --state chunk: every changed chunk must have been marked, or incremental checkpoints
 * would miss it and a rollback would restore a wrong state. */
static void check_marks(const struct kr__lp *lp, const struct kr__ckpt *before)
{
    size_t off, size;
    void *p = kr__ckpt_first_change(&lp->arena, before, true, &off, &size);
    if (p)
        kr__model_error("--check: the event wrote byte %zu of the %zu-byte block at %p without "
                        "marking it (--state chunk saves only marked blocks): mark the write "
                        "with kr_touch or KR_WRITE, write through kr_memcpy/kr_memset, or use "
                        "the instrumented build (docs/guide.md)", off, size, p);
}

bool kr__recheck_done(struct kr__recheck *c, struct kr__run *r, struct kr__lp *lp,
                      struct kr__ev *e)
{
    if (!r->model->done) return false;
    struct kr__ckpt *before = kr__lp_snapshot(&c->blobs, lp);
    bool d = kr__run_done(r, lp, e->dest);
    struct kr__ckpt *after = kr__lp_snapshot(&c->blobs, lp);
    bool same = same_state(before, after);
    kr__ckpt_release(&c->blobs, after);
    kr__ckpt_release(&c->blobs, before);
    if (!same) {
        kr__ctx.mode = KR_MODE_DONE;
        kr__model_error("--check: done() changed the LP's state; done() only reads it (it is "
                        "asked after every event, on speculative states too)");
    }
    return d;
}

/* The first run's sends are kept (sent1) and compared with the second's. */
static void keep_first_sends(struct kr__recheck *c)
{
    struct kr__ev **t = c->sent1;
    size_t cap = c->capsent1;
    c->sent1 = c->sent;
    c->capsent1 = c->capsent;
    c->nsent1 = c->nsent;
    c->sent = t;
    c->capsent = cap;
    c->nsent = 0;
}

/* A send whose payload byte differs between two runs from one state. */
static void uninitialised(const struct kr__ev *e, size_t byte)
{
    kr__model_error("--check: the event sent an event of type %u to LP %llu at time %.17g "
                    "whose payload byte %zu (of %u) differs between two runs from the "
                    "same state: the payload copies uninitialised memory, such as the "
                    "padding of a struct or a field left unset. Those bytes enter the run "
                    "digest, which then differs between engines and runs. Clear the "
                    "payload first (memset, or = {0} and then set the fields)",
                    e->type, (unsigned long long)e->dest, e->k.ts, byte, e->size);
}

static void not_reexecutable(const struct kr__recheck *c, bool same, size_t nout1, size_t at,
                             size_t byte)
{
    if (same && at != SIZE_MAX) uninitialised(c->sent[at], byte);
    const char *what = !same ? "left a different state"
                       : c->nsent1 != c->nsent ? "sent a different number of events"
                       : nout1 != c->nout ? "printed different output"
                       : "sent different events or printed different text";
    kr__model_error("--check: the event is not re-executable: run twice from the same state, it "
                    "%s. Time Warp re-executes events after rollbacks, so this model would "
                    "give wrong results there. Usual causes: global or static variables, "
                    "rand() or the clock instead of kr_random, memory not from kr_malloc", what);
}

/* Where the state after the reverse handler first differs from `before`: a byte of the
 * state root (described by the layer the model is written for, if it says: ross.c) or of
 * another block, else that the blocks themselves differ. */
static void reverse_diff(const struct kr__lp *lp, const struct kr__ckpt *before, size_t bytes,
                         char *buf, size_t cap)
{
    size_t off = 0, csz = 0;
    const void *at = bytes == before->bytes
                     ? kr__ckpt_first_change(&lp->arena, before, false, &off, &csz) : NULL;
    if (!at)
        snprintf(buf, cap, "%s", bytes != before->bytes ? "its blocks differ in number or size"
                                                        : "the same blocks, other bytes");
    else if (at == lp->root && kr__root_describe)
        kr__root_describe(off, buf, cap);
    else if (at == lp->root)
        snprintf(buf, cap, "byte %zu of the state root, the block kr_set_state names", off);
    else
        snprintf(buf, cap, "byte %zu of a %zu-byte block the LP allocated", off, csz);
}

/* --state reverse: the first run's event undone by the model's reverse handler (with the
 * words the engine restores itself) must leave the state it started from, `before`. */
static void check_reverse(struct kr__recheck *c, struct kr__run *r, struct kr__lp *lp,
                          struct kr__ev *e, const struct kr__ckpt *before)
{
    struct kr__ctx keep = kr__ctx;
    kr__ctx_event(lp, e, KR_MODE_REVERSE);
    r->model->reverse(e->dest, e->k.ts, e->type, e->payload, e->size, lp->root, c->area);
    kr__lp_load_words(lp, before->words);
    struct kr__ckpt *back = kr__lp_snapshot(&c->blobs, lp);
    bool same = same_state(before, back);
    size_t bytes = back->bytes;
    kr__ckpt_release(&c->blobs, back);
    if (!same) { /* (in the reverse handler's context: the message names it) */
        char what[256];
        reverse_diff(lp, before, bytes, what, sizeof what);
        kr__model_error("--check: run from the state before the event, the event and then "
                        "its reverse handler leave the LP's kr_malloc memory different (%s): "
                        "the reverse handler does not undo everything the event changed, so "
                        "a rollback under --state reverse would continue from a wrong state. "
                        "Put back every field the event writes (keep old values in "
                        "kr_reverse_area), and free what it allocates", what);
    }
    kr__ctx = keep;
}

/* The event run again from the restored state, on a stack scribbled otherwise: true if it
 * left the state the first run did (first is released). */
static bool second_run_same(struct kr__recheck *c, struct kr__run *r, struct kr__lp *lp,
                            struct kr__ev *e, struct kr__ckpt *first)
{
    scribble_stack(0xA5);
    run_once(c, r, lp, e);
    struct kr__ckpt *second = kr__lp_snapshot(&c->blobs, lp);
    bool same = same_state(first, second);
    kr__ckpt_release(&c->blobs, second);
    kr__ckpt_release(&c->blobs, first);
    return same;
}

/* What the first run alone can show: globals written, writes left unmarked (--state
 * chunk), pointers into another LP's memory. */
static void first_run_checks(struct kr__recheck *c, const struct kr__lp *lp,
                             const struct kr__ckpt *saved)
{
    globals_check(c);
    if (kr__arena_marks(&lp->arena)) check_marks(lp, saved);
    struct kr__alien al = { 0 };
    kr__arena_find_alien(&lp->arena, &al);
    if (al.found) kr__alien_report(kr__ctx.run, kr__ctx.id, &al);
}

/* The second run from the state saved before the first, compared with it. */
static void recheck_second(struct kr__recheck *c, struct kr__run *r, struct kr__lp *lp,
                           struct kr__ev *e, struct kr__ckpt *saved, uint64_t *w)
{
    struct kr__ckpt *first = kr__lp_snapshot(&c->blobs, lp);
    uint64_t out1 = printed(c, lp);
    size_t nout1 = c->nout;
    keep_first_sends(c);
    if (c->area) check_reverse(c, r, lp, e, saved);
    kr__ckpt_restore(&lp->arena, saved, w);
    kr__lp_load_words(lp, w);
    kr__ckpt_release(&c->blobs, saved);
    bool same = second_run_same(c, r, lp, e, first);
    size_t at, byte = 0;
    bool sends = same_sends(c, &at, &byte);
    for (size_t i = 0; i < c->nsent1; i++) kr__pool_put(kr__ctx.pool, c->sent1[i]);
    if (same && sends && printed(c, lp) == out1) return;
    not_reexecutable(c, same, nout1, at, byte);
}

void kr__recheck_event(struct kr__recheck *c, struct kr__run *r, struct kr__lp *lp,
                       struct kr__ev *e)
{
    uint64_t w[KR_CKPT_WORDS];
    kr__lp_save_words(lp, w);
    struct kr__ckpt *saved = kr__ckpt_take(&c->blobs, &lp->arena, w, NULL, true);
    scribble_stack(0x5A);
    globals_keep(c);
    if (c->area) memset(c->area, 0, r->model->reverse_bytes ? r->model->reverse_bytes : 1);
    kr__ctx.rev_area = r->model->reverse_bytes ? c->area : NULL;
    run_once(c, r, lp, e);
    kr__ctx.rev_area = NULL;
    first_run_checks(c, lp, saved);
    recheck_second(c, r, lp, e, saved, w);
}
