/* snapshot.c - writing whole-run snapshots (see snapshot.h; the file's format:
 * snapfile.h; reading them back and resuming: resume.c). */
#define _GNU_SOURCE
#include "core/snapshot.h"
#include "core/snapfile.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "base/clock.h"
#include "base/digest.h"
#include "core/lp.h"
#include "msg/pool.h"
#include "net/net.h"
#include "state/addrmap.h"
#include "state/image.h"


/* ---- writing ---- */

static void put_u32(struct kr__bytes *b, uint32_t v) { kr__bytes_put(b, &v, 4); }
static void put_u64(struct kr__bytes *b, uint64_t v) { kr__bytes_put(b, &v, 8); }
static void put_f64(struct kr__bytes *b, double v) { kr__bytes_put(b, &v, 8); }

static void put_str(struct kr__bytes *b, const char *s)
{
    put_u32(b, (uint32_t)strlen(s));
    kr__bytes_put(b, s, strlen(s));
}

uint64_t kr__file_hash(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f && errno == ENOMEM) /* (not a change of the file) */
        kr__fatal_oom("opening the model's file", BUFSIZ);
    if (!f) return 0;
    uint64_t h = 0xF11E;
    unsigned char buf[65536];
    for (size_t n; (n = fread(buf, 1, sizeof buf, f)) > 0;) h = kr__mix_bytes(h, buf, n);
    fclose(f);
    return h ? h : 1;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const struct kr__kv *)a)->key, ((const struct kr__kv *)b)->key);
}

/* The model's parameters in key order (the order they were given in does not matter). */
static void put_params(struct kr__bytes *b, const struct kr__config *c)
{
    struct kr__kv *kv = malloc((c->nparams + 1) * sizeof *kv);
    if (!kv) kr__fatal_oom("a snapshot's parameters", (c->nparams + 1) * sizeof *kv);
    if (c->nparams) memcpy(kv, c->params, c->nparams * sizeof *kv);
    qsort(kv, c->nparams, sizeof *kv, by_key);
    put_u32(b, (uint32_t)c->nparams);
    for (size_t i = 0; i < c->nparams; i++) {
        put_str(b, kv[i].key);
        put_str(b, kv[i].val);
    }
    free(kv);
}

static void put_identity(struct kr__bytes *b, const struct kr__run *r)
{
    const struct kr__config *c = r->cfg;
    char path[PATH_MAX];
    /* (a program's own model - a layer's - is named as such: its file is the program, which
     * the run's identity already holds; resumed by the program itself) */
    bool file = !c->own_model && realpath(c->model, path) != NULL;
    put_u32(b, SNAP_VERSION);
    put_str(b, file ? path : c->model);
    put_str(b, r->model->name);
    put_u64(b, file ? kr__file_hash(path) : 0);
    put_params(b, c);
    put_u64(b, c->lps);
    put_u64(b, c->seed);
    put_f64(b, c->end);
    put_u64(b, c->arena_max);
}

/* LP id's record; false (with alien) if its state holds a pointer no image can name. */
static bool put_lp(struct kr__bytes *b, const struct kr__run *r, kr_lp id,
                   struct kr__alien *alien)
{
    const struct kr__lp *lp = kr__lp_at(r, id);
    put_u64(b, lp->rng);
    put_u64(b, lp->seq);
    put_u64(b, lp->digest);
    put_u64(b, lp->committed);
    uint8_t done[2] = { lp->done_init, lp->done_seen };
    kr__bytes_put(b, done, 2);
    size_t len_at = b->n;
    put_u64(b, 0);
    size_t start = b->n;
    const void *timers = (const void *)(uintptr_t)kr__timers_word(lp);
    if (!kr__image_save(&lp->arena, lp->root, timers, b, alien)) return false;
    uint64_t len = b->n - start;
    if (!b->oom) memcpy(b->p + len_at, &len, 8);
    return true;
}

/* Pending events go out by destination (then key): a resume loads LPs in order and reads
 * the file front to back, and a rank of many reads one stretch of it. */
static int by_dest(const void *a, const void *b)
{
    const struct kr__ev *x = *(struct kr__ev *const *)a, *y = *(struct kr__ev *const *)b;
    if (x->dest != y->dest) return x->dest < y->dest ? -1 : 1;
    return kr__key_cmp(&x->k, &y->k);
}


static void put_event(struct kr__bytes *b, const struct kr__ev *e, kr_time lookahead)
{
    put_f64(b, e->k.ts);
    put_u32(b, e->k.gen);
    put_u32(b, e->k.tie);
    put_u64(b, e->k.src);
    put_u64(b, e->k.seq);
    put_u64(b, e->dest);
    put_u32(b, e->type);
    put_u32(b, (e->flags & KR_EVF_SPAN) | (e->pflags & KR_PAYLOAD_IMAGE ? SNAP_EV_PTRS : 0) |
                   (e->pflags & KR_PAYLOAD_TIMER ? SNAP_EV_TIMER : 0));
    /* (an event not sent as a span lasts the lookahead: its tail may be unset, kr__ctx) */
    put_f64(b, (e->flags & KR_EVF_SPAN) && kr__ev_has_tail(e) ? e->dur : lookahead);
    put_u32(b, e->size);
    if (!(e->pflags & KR_PAYLOAD_IMAGE)) {
        kr__bytes_put(b, e->payload, e->size);
        return;
    }
    unsigned char copy[KR_PAYLOAD_MAX], table[KR_ADDR_TABLE_BYTES(KR_PAYLOAD_MAX)];
    memcpy(copy, e->payload, e->size);
    size_t n = kr__addrmap_export(copy, e->size, table);
    kr__bytes_put(b, copy, e->size);
    kr__bytes_put(b, table, n);
}

/* ---- the file, streamed: records go out in pieces of SNAP_PIECE as they are built (a
 * snapshot of a million LPs is not held in memory whole); the length and checksum, which
 * cover everything after the header, are read back from the file and written last, then
 * it is synced and renamed over the last one (and the directory synced). ---- */

#define SNAP_PIECE (4u << 20)

struct snap_out {
    struct kr__bytes b; /* what is not written yet */
    int fd;
    uint64_t written;
    int err;            /* errno of the first failure (0: none) */
    char tmp[PATH_MAX], path[PATH_MAX];
};

static bool out_open(struct snap_out *o, const char *dir)
{
    snprintf(o->tmp, sizeof o->tmp, "%s/snapshot.tmp", dir);
    snprintf(o->path, sizeof o->path, "%s/snapshot", dir);
    o->fd = -1;
    if (mkdir(dir, 0777) && errno != EEXIST) return o->err = errno, false;
    o->fd = open(o->tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (o->fd < 0) return o->err = errno, false;
    kr__unlink_on_death(o->tmp); /* (building it may meet a fatal error) */
    return true;
}

static void out_write(struct snap_out *o, const void *p, size_t n, uint64_t at)
{
    for (size_t done = 0; done < n && !o->err;) {
        ssize_t w = pwrite(o->fd, (const char *)p + done, n - done, (off_t)(at + done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) o->err = w < 0 ? errno : ENOSPC;
        else done += (size_t)w;
    }
}

/* Out with what is built, once there is a piece of it (or `all`). */
static void out_flush(struct snap_out *o, bool all)
{
    if (o->b.oom && !o->err) o->err = ENOMEM;
    if (o->err || (!all && o->b.n < SNAP_PIECE)) return;
    out_write(o, o->b.p, o->b.n, o->written);
    o->written += o->b.n;
    o->b.n = 0;
}

/* want bytes of the file at off into buf: false if interrupted (try again) or failed
 * (o->err set). */
static bool read_back(struct snap_out *o, unsigned char *buf, size_t want, uint64_t off)
{
    ssize_t got = pread(o->fd, buf, want, (off_t)off);
    if (got == (ssize_t)want) return true;
    if (got >= 0 || errno != EINTR) o->err = got < 0 ? errno : EIO;
    return false;
}

/* The checksum of the file after its header, read back (kr__mix_bytes over it, the length
 * first: the same as over the bytes held in memory). */
static uint64_t out_sum(struct snap_out *o)
{
    uint64_t n = o->written - SNAP_HEAD, h = kr__mix(0x5AA9, n);
    static const size_t piece = 1u << 20; /* (a multiple of 8: words do not straddle) */
    unsigned char *buf = malloc(piece);
    if (!buf) return o->err = ENOMEM, 0;
    for (uint64_t off = 0; off < n && !o->err;) {
        size_t want = n - off < piece ? (size_t)(n - off) : piece;
        if (!read_back(o, buf, want, SNAP_HEAD + off)) continue;
        h = kr__mix_words(h, buf, want); /* (only the last piece has a tail) */
        off += want;
    }
    free(buf);
    return h;
}

/* The rename made durable: the directory's entry synced. */
static void sync_dir(const char *dir)
{
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) return;
    fsync(dfd);
    close(dfd);
}

/* The file on disk and under its name: synced, closed, renamed over the last one (the
 * first error stays). */
static void out_durable(struct snap_out *o)
{
    if (!o->err && fsync(o->fd)) o->err = errno;
    if (o->fd >= 0 && close(o->fd) && !o->err) o->err = errno;
    if (!o->err && rename(o->tmp, o->path)) o->err = errno;
}

/* The file's tail (its length and sum), on disk, closed and renamed to its name; the first
 * error kept in o->err. */
static void out_finish(struct snap_out *o)
{
    out_flush(o, true);
    if (!o->err) {
        uint64_t head[2] = { o->written, out_sum(o) };
        out_write(o, head, sizeof head, 8);
    }
    out_durable(o);
}

/* The header's length and checksum, synced, renamed; false (o->err) if anything failed -
 * then the temporary file goes and the last snapshot stays. */
static bool out_close(struct snap_out *o, const char *dir)
{
    out_finish(o);
    kr__unlink_on_death(NULL);
    kr__bytes_free(&o->b);
    if (o->err) {
        if (o->fd >= 0) unlink(o->tmp);
        return false;
    }
    sync_dir(dir);
    return true;
}

static void snap_warn(kr_time at, const char *why)
{
    fprintf(stderr, "kairos: warning: the snapshot at virtual time %.17g was not written (%s); "
            "the last one stays, the run goes on\n", at, why);
}

static void alien_why(char *why, size_t cap, kr_lp id, const struct kr__alien *al)
{
    snprintf(why, cap, "LP %llu's state holds a pointer to %s, which a snapshot cannot save: "
             "keep the LP's data in its own kr_malloc blocks", (unsigned long long)id, al->where);
}

/* This rank's LP records (all of them in one process); false (with why) if the state of
 * one cannot be saved. */
static bool put_lps(struct snap_out *o, struct kr__run *r, char *why, size_t cap)
{
    for (kr_lp id = r->lo; id < r->hi && !o->err; id++) {
        struct kr__alien al = { 0 };
        if (!put_lp(&o->b, r, id, &al) && al.found) { /* (else out of memory: o->err) */
            alien_why(why, cap, id, &al);
            return false;
        }
        out_flush(o, false);
    }
    return true;
}

/* ---- across ranks (struct kr__snap_link): each piece of a rank's part starts with a byte
 * saying what it is. A part is its LP records (data pieces, then an end, or a failure with
 * its reason), its count of pending events, and their records (data, then an end). ---- */

enum { PART_DATA = 'D', PART_END = 'E', PART_FAILED = 'F', PART_COUNT = 'N' };

/* Bytes that go into the file as they are, after what is buffered. */
static void out_raw(struct snap_out *o, const void *p, size_t n)
{
    out_flush(o, true);
    if (o->err) return;
    out_write(o, p, n, o->written);
    o->written += n;
}

/* A rank could not send its part: its reason (the first one), and the file is dropped. */
static void part_failed(struct snap_out *o, const unsigned char *p, size_t len, char *why,
                        size_t cap)
{
    if (!why[0]) snprintf(why, cap, "%.*s", (int)(len - 1), (const char *)p + 1);
    if (!o->err) o->err = EINVAL;
}

/* Rank 0: one section of rank `from`'s part into the file (taken in and dropped once the
 * file failed); the first failure's reason into why. */
static void take_section(struct snap_out *o, const struct kr__snap_link *l, int from,
                         char *why, size_t cap)
{
    for (unsigned char kind = PART_DATA; kind == PART_DATA;) {
        size_t len = 0;
        unsigned char *p = l->recv(l->ctx, from, &len);
        kind = len ? p[0] : PART_END;
        if (kind == PART_DATA) out_raw(o, p + 1, len - 1);
        if (kind == PART_FAILED) part_failed(o, p, len, why, cap);
        free(p);
    }
}

static uint64_t take_count(const struct kr__snap_link *l, int from)
{
    size_t len = 0;
    unsigned char *p = l->recv(l->ctx, from, &len);
    uint64_t n = 0;
    if (len != 9 || p[0] != PART_COUNT)
        kr__internal_error("snapshot: rank %d sent %zu bytes where its count of events goes",
                           from, len);
    memcpy(&n, p + 1, 8);
    free(p);
    return n;
}

/* The run's output so far, lookahead, commit ledger and model metrics. */
static void put_run_tail(struct kr__bytes *b, const struct kr__run *r)
{
    put_u64(b, r->out.bytes);
    put_u64(b, r->out.hash);
    put_f64(b, r->lookahead);
    uint8_t declared = r->promise.lookahead_declared;
    kr__bytes_put(b, &declared, 1);
    size_t ledger = r->ledger ? r->ledger_size : 0;
    put_u64(b, ledger);
    if (ledger) kr__bytes_put(b, r->ledger, ledger);
    size_t mlen_at = b->n;
    put_u64(b, 0);
    kr__metrics_save(r->metrics, b);
    uint64_t mlen = b->n - mlen_at - 8;
    if (!b->oom) memcpy(b->p + mlen_at, &mlen, 8);
}

/* This process's pending events, flushed to the file as the buffer fills. */
static void put_pending(struct snap_out *o, struct kr__ev *const *pending, size_t n,
                        kr_time lookahead)
{
    for (size_t i = 0; i < n && !o->err; i++) {
        put_event(&o->b, pending[i], lookahead);
        out_flush(o, false);
    }
}

/* The records after the header (rank 0 of several: the other ranks' parts in theirs);
 * false (with why) if the state of an LP cannot be saved. */
static bool put_body(struct snap_out *o, struct kr__run *r, struct kr__ev *const *pending,
                     size_t n, const struct kr__snap_link *l, char *why, size_t cap)
{
    struct kr__bytes *b = &o->b;
    put_run_tail(b, r);
    if (!put_lps(o, r, why, cap) && !o->err) o->err = EINVAL; /* (the rest is dropped) */
    int others = l ? l->nranks : 1;
    uint64_t total = n;
    for (int k = 1; k < others; k++) take_section(o, l, k, why, cap);
    for (int k = 1; k < others; k++) total += take_count(l, k);
    put_u64(b, total);
    put_pending(o, pending, n, r->lookahead);
    for (int k = 1; k < others; k++) take_section(o, l, k, why, cap);
    return !why[0];
}

/* The file opened, unless the output it must match could not be written (what the count
 * says is written must be in the file; the other ranks' parts are taken in whatever
 * happens here). */
static void out_begin(struct snap_out *o, const char *dir, char *why, size_t cap)
{
    if (kr__out_closed) { /* (a commit hook failed in the printing just before: the run
                           * ends with its error, and the ledger is half-way; no file) */
        o->err = ECANCELED;
    } else if (fflush(stdout) || kr__out_errno) {
        snprintf(why, cap, "the committed output could not be written to stdout");
        o->err = EIO;
    } else {
        out_open(o, dir);
    }
}

/* A snapshot that could not be written: the warning that says why (the run goes on). */
static void snap_failed(const struct kr__run *r, const struct snap_out *o, kr_time at,
                        char *why, size_t cap)
{
    if (!why[0]) snprintf(why, cap, "%s: %s", r->cfg->snap_dir, strerror(o->err));
    snap_warn(at, why);
}

bool kr__snapshot_write(struct kr__run *r, struct kr__ev **pending, size_t n, kr_time at,
                        const struct kr__snap_link *link)
{
    qsort(pending, n, sizeof *pending, by_dest);
    uint64_t t0 = kr__clock_ns();
    char why[PATH_MAX + 256] = "";
    struct snap_out o = { .fd = -1 };
    out_begin(&o, r->cfg->snap_dir, why, sizeof why);
    kr__bytes_put(&o.b, SNAP_MAGIC, 8);
    put_u64(&o.b, 0); /* (length and checksum: out_close) */
    put_u64(&o.b, 0);
    put_identity(&o.b, r);
    put_f64(&o.b, at);
    bool ok = put_body(&o, r, pending, n, link, why, sizeof why);
    if (!ok && !o.err) o.err = EINVAL; /* (the file goes) */
    ok = out_close(&o, r->cfg->snap_dir) && ok;
    if (ok) {
        r->snap.written++;
        r->snap.bytes += o.written;
        r->snap.time = at;
    } else if (!kr__out_closed) {
        snap_failed(r, &o, at, why, sizeof why);
    }
    r->snap.ns += kr__clock_ns() - t0;
    return ok;
}

static void part_send(const struct kr__snap_link *l, struct kr__bytes *b)
{
    l->send(l->ctx, b->p, b->n);
    b->n = 1; /* (the kind stays) */
}

static void mark_send(const struct kr__snap_link *l, unsigned char kind, const void *p,
                      size_t n)
{
    unsigned char m[512];
    if (n > sizeof m - 1) n = sizeof m - 1;
    m[0] = kind;
    if (n) memcpy(m + 1, p, n);
    l->send(l->ctx, m, n + 1);
}

/* The end of a rank's part: what is left of it, or why it failed (true). */
static bool part_end(const struct kr__snap_link *l, struct kr__bytes *b, const char *why)
{
    if (why[0]) {
        mark_send(l, PART_FAILED, why, strlen(why));
        return true;
    }
    if (b->n > 1) part_send(l, b);
    mark_send(l, PART_END, NULL, 0);
    return false;
}

/* The LP records of this rank in pieces, then their end, or a failure with its reason
 * (true then). b holds the data kind at its start. */
static bool send_lps(struct kr__run *r, struct kr__bytes *b, const struct kr__snap_link *l)
{
    char why[300] = "";
    for (kr_lp id = r->lo; id < r->hi && !why[0]; id++) {
        struct kr__alien al = { 0 };
        if (!put_lp(b, r, id, &al) && al.found) alien_why(why, sizeof why, id, &al);
        else if (b->oom) snprintf(why, sizeof why, "out of memory on rank %d", kr__net.rank);
        else if (b->n >= SNAP_PIECE) part_send(l, b);
    }
    return part_end(l, b, why);
}

void kr__snapshot_send(struct kr__run *r, struct kr__ev **pending, size_t n,
                       const struct kr__snap_link *l)
{
    qsort(pending, n, sizeof *pending, by_dest);
    struct kr__bytes b = { 0 };
    unsigned char kind = PART_DATA;
    kr__bytes_put(&b, &kind, 1);
    uint64_t count = send_lps(r, &b, l) ? 0 : n; /* (failed: rank 0 drops the rest) */
    mark_send(l, PART_COUNT, &count, 8);
    b.n = 1;
    b.oom = false;
    for (size_t i = 0; i < count; i++) {
        put_event(&b, pending[i], r->lookahead);
        if (b.oom) kr__fatal_oom("a snapshot's events", b.cap);
        if (b.n >= SNAP_PIECE) part_send(l, &b);
    }
    if (b.n > 1) part_send(l, &b);
    mark_send(l, PART_END, NULL, 0);
    kr__bytes_free(&b);
}

void kr__snapshot_first(const struct kr__run *r, kr_time *next, uint64_t *wall)
{
    *next = INFINITY;
    *wall = UINT64_MAX;
    if (r->cfg->snap_dir)
        kr__snapshot_next(r, r->snap.resume ? kr__snapshot_time(r) : 0, next, wall);
}

void kr__snapshot_next(const struct kr__run *r, kr_time at, kr_time *next, uint64_t *wall)
{
    double every = r->cfg->snap_every, secs = r->cfg->snap_seconds;
    *next = every > 0 ? (floor(at / every) + 1) * every : INFINITY;
    *wall = secs > 0 ? kr__clock_ns() + (uint64_t)(secs * 1e9) : UINT64_MAX;
}
