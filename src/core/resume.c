/* resume.c - reading a snapshot back (see snapshot.h; the file's format: snapfile.h):
 * its identity and configuration checked, its LPs and pending events indexed and loaded
 * into a run that resumes from it, the committed output cut where it stood. */
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


struct kr__snapshot {
    unsigned char *buf;
    size_t n;
    char *model_path, *model_name;
    uint64_t model_hash, lps, seed, arena_max, out_bytes, out_hash;
    uint64_t committed; /* events committed before it, all LPs */
    double end, at, lookahead;
    bool declared;
    const unsigned char *ledger; /* (in buf) */
    uint64_t ledger_size;
    const unsigned char *metrics; /* (in buf; NULL: a version 2 snapshot has none) */
    uint64_t metrics_size;
    struct kr__kv *params;
    uint32_t nparams, version;
    uint64_t lo, hi;    /* the LPs indexed (a rank's own) */
    size_t *lp_at;      /* offset of each one's record (from lo) */
    size_t *ev_at;      /* offsets of their pending events, grouped by destination... */
    uint64_t *ev_first; /* ...LP id's from ev_first[id - lo] to ev_first[id - lo + 1] */
    bool mapped;        /* buf is the file, mapped (resume), not a copy (fuzzing) */
    size_t dropped;     /* buf's bytes before this handed back to the kernel... */
    size_t ev_dropped;  /* ...and in the events, while LPs are loaded */
};

/* ---- reading ---- */

static double rd_f64(struct kr__cursor *in)
{
    uint64_t v = kr__cursor_get(in, 8);
    double d;
    memcpy(&d, &v, 8);
    return d;
}

static char *rd_str(struct kr__cursor *in)
{
    uint32_t n = (uint32_t)kr__cursor_get(in, 4);
    const unsigned char *p = kr__cursor_take(in, n);
    if (!p) return NULL; /* (damaged: the cursor says so) */
    char *str = strndup((const char *)p, n);
    if (!str) kr__fatal_oom("a snapshot's header", (size_t)n + 1); /* (not damage) */
    return str;
}

static void snap_free(struct kr__snapshot *s)
{
    if (!s) return;
    for (uint32_t i = 0; s->params && i < s->nparams; i++) { /* (none if its count was bad) */
        free((char *)s->params[i].key);
        free((char *)s->params[i].val);
    }
    free(s->params);
    free(s->model_path);
    free(s->model_name);
    free(s->lp_at);
    free(s->ev_at);
    free(s->ev_first);
    if (s->mapped) munmap(s->buf, s->n);
    else free(s->buf);
    free(s);
}

/* A resume maps the file and does not hold it whole: what a pass has read is handed back
 * to the kernel behind it, a window at a time (its pages stay in the page cache, read again
 * if touched again), so that the peak memory of each rank grows by a window and its own
 * LPs, not by the file. */
#define SNAP_WINDOW (8u << 20)

static void drop_to(struct kr__snapshot *s, size_t *mark, const unsigned char *p)
{
    size_t upto = (size_t)(p - s->buf) & ~(size_t)(SNAP_WINDOW - 1);
    if (!s->mapped || upto <= *mark) return;
    madvise(s->buf + *mark, upto - *mark, MADV_DONTNEED);
    *mark = upto;
}

static void drop_behind(struct kr__snapshot *s, const unsigned char *p)
{
    drop_to(s, &s->dropped, p);
}

/* After a pass: all of it back, the next pass starts from the beginning. */
static void drop_all(struct kr__snapshot *s)
{
    if (s->mapped) madvise(s->buf, s->n, MADV_DONTNEED);
    s->dropped = 0;
}

/* The checksum of everything after the head, read a window at a time (kr__mix_bytes's
 * value, in whole words: SNAP_HEAD and SNAP_WINDOW are multiples of 8), each window
 * dropped from memory once summed. */
static uint64_t body_hash(struct kr__snapshot *s)
{
    uint64_t h = kr__mix(0x5AA9, s->n - SNAP_HEAD);
    for (size_t off = SNAP_HEAD; off < s->n;) {
        size_t end = (off + SNAP_WINDOW) & ~(size_t)(SNAP_WINDOW - 1);
        if (end > s->n) end = s->n;
        h = kr__mix_words(h, s->buf + off, end - off);
        drop_behind(s, s->buf + end);
        off = end;
    }
    return h;
}

/* Its length and checksum. */
static int check_sum(struct kr__snapshot *s, const char *path, struct kr__error *err)
{
    uint64_t len, sum;
    memcpy(&len, s->buf + 8, 8);
    memcpy(&sum, s->buf + 16, 8);
    if (memcmp(s->buf, SNAP_MAGIC, 8))
        return kr__fail(err, KR_ERR_USAGE, "%s is not a Kairos snapshot (or one of another "
                        "version)", path);
    uint64_t h = len == s->n ? body_hash(s) : 0;
    drop_all(s);
    if (len != s->n || sum != h)
        return kr__fail(err, KR_ERR_USAGE, "the snapshot %s is damaged (%s): it cannot be "
                        "resumed; an earlier copy of the directory, if kept, can", path,
                        len != s->n ? "its length is wrong" : "its checksum does not match");
    return KR_OK;
}

/* The whole file, its length and checksum checked. */
static int read_file(const char *dir, struct kr__snapshot *s, struct kr__error *err)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/snapshot", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return kr__fail(err, KR_ERR_USAGE, "cannot read the snapshot %s: %s (give the "
                        "directory a run wrote with --snapshot)", path, strerror(errno));
    struct stat st;
    void *m = MAP_FAILED;
    if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size >= SNAP_HEAD)
        m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return kr__fail(err, KR_ERR_USAGE, "the snapshot %s is truncated or unreadable", path);
    s->buf = m;
    s->n = (size_t)st.st_size;
    s->mapped = true;
    return check_sum(s, path, err);
}

/* The model metrics' table (version 3 on). */
static void read_metrics(struct kr__snapshot *s, struct kr__cursor *in)
{
    s->metrics_size = kr__cursor_get(in, 8);
    s->metrics = s->metrics_size < s->n ? kr__cursor_take(in, s->metrics_size) : NULL;
    if (!s->metrics) kr__cursor_fail(in, "the metrics");
}

/* The model's ledger and (from version 3) its metrics, left in the buffer. */
static void read_tables(struct kr__snapshot *s, struct kr__cursor *in)
{
    s->ledger_size = kr__cursor_get(in, 8);
    s->ledger = s->ledger_size <= KR_LEDGER_MAX ? kr__cursor_take(in, s->ledger_size) : NULL;
    if (!s->ledger && s->ledger_size) kr__cursor_fail(in, "the ledger");
    if (s->version >= 3) read_metrics(s, in);
}

/* The run's shape and where it stood: LPs, seed, end, time, output, lookahead. */
static void read_shape(struct kr__snapshot *s, struct kr__cursor *in)
{
    s->lps = kr__cursor_get(in, 8);
    s->seed = kr__cursor_get(in, 8);
    s->end = rd_f64(in);
    s->arena_max = kr__cursor_get(in, 8);
    s->at = rd_f64(in);
    s->out_bytes = kr__cursor_get(in, 8);
    s->out_hash = kr__cursor_get(in, 8);
    s->lookahead = rd_f64(in);
    s->declared = kr__cursor_get(in, 1);
}

/* The run's -P parameters; nonzero if their count is beyond reason (a damaged header). */
static int read_params(struct kr__snapshot *s, struct kr__cursor *in)
{
    s->nparams = (uint32_t)kr__cursor_get(in, 4);
    if (in->why || s->nparams > 4096) return 1;
    if (!(s->params = calloc(s->nparams + 1u, sizeof *s->params)))
        kr__fatal_oom("a snapshot's parameters", (s->nparams + 1u) * sizeof *s->params);
    for (uint32_t i = 0; i < s->nparams; i++) {
        s->params[i].key = rd_str(in);
        s->params[i].val = rd_str(in);
    }
    return 0;
}

/* Whether this Kairos reads snapshots of that format version (this one and version 2). */
static bool version_read(uint32_t v)
{
    return v == SNAP_VERSION || v == 2;
}

static int read_identity(struct kr__snapshot *s, struct kr__cursor *in, struct kr__error *err)
{
    s->version = (uint32_t)kr__cursor_get(in, 4);
    if (!version_read(s->version))
        return kr__fail(err, KR_ERR_USAGE, "the snapshot was written by another version of "
                        "Kairos");
    s->model_path = rd_str(in);
    s->model_name = rd_str(in);
    s->model_hash = kr__cursor_get(in, 8);
    if (read_params(s, in))
        return kr__fail(err, KR_ERR_USAGE, "the snapshot is damaged (its header)");
    read_shape(s, in);
    read_tables(s, in);
    if (in->why || !s->model_path || !s->model_name || !s->lps)
        return kr__fail(err, KR_ERR_USAGE, "the snapshot is damaged (its header)");
    return KR_OK;
}

static struct kr__snapshot *snap_read(const char *dir, struct kr__cursor *in, struct kr__error *err)
{
    struct kr__snapshot *s = calloc(1, sizeof *s);
    if (!s) kr__fatal_oom("a snapshot", sizeof *s);
    if (read_file(dir, s, err)) {
        snap_free(s);
        return NULL;
    }
    *in = (struct kr__cursor){ s->buf + SNAP_HEAD, s->buf + s->n, NULL };
    if (read_identity(s, in, err)) {
        snap_free(s);
        return NULL;
    }
    return s;
}

/* A parameter: its key its own copy, its value at o. Past the value. */
static char *copy_param(struct kr__kv *to, const struct kr__kv *from, char *o)
{
    to->key = strdup(from->key);
    if (!to->key) kr__fatal_oom("a snapshot's parameters", strlen(from->key) + 1);
    to->val = strcpy(o, from->val);
    return o + strlen(o) + 1;
}

/* The snapshot's model path and parameters into the configuration, which owns the copies
 * (kr__options_free). */
static void copy_params(struct kr__config *c, const struct kr__snapshot *s)
{
    size_t bytes = strlen(s->model_path) + 1;
    for (uint32_t i = 0; i < s->nparams; i++) bytes += strlen(s->params[i].val) + 1;
    char *o = c->owned = malloc(bytes); /* (the model path and values) */
    c->params = calloc(s->nparams + 1u, sizeof *c->params);
    if (!o || !c->params) kr__fatal_oom("a snapshot's parameters", bytes);
    c->model = strcpy(o, s->model_path);
    o += strlen(o) + 1;
    for (uint32_t i = 0; i < s->nparams; i++) o = copy_param(&c->params[i], &s->params[i], o);
}

int kr__snapshot_config(const char *dir, struct kr__config *c, struct kr__error *err)
{
    struct kr__cursor in;
    struct kr__snapshot *s = snap_read(dir, &in, err);
    if (!s) return err->status;
    copy_params(c, s);
    c->lps = s->lps;
    c->seed = s->seed;
    c->end = s->end;
    c->arena_max = s->arena_max;
    c->nparams = s->nparams;
    c->resume_dir = dir;
    snap_free(s);
    return KR_OK;
}

static bool mine(const struct kr__snapshot *s, uint64_t id)
{
    return id >= s->lo && id < s->hi;
}

/* Past one LP's record, its committed count added up. */
static void skip_lp(struct kr__snapshot *s, struct kr__cursor *in)
{
    kr__cursor_take(in, 24); /* (RNG, send count, history hash) */
    s->committed += kr__cursor_get(in, 8);
    kr__cursor_take(in, 2);
    kr__cursor_take(in, kr__cursor_get(in, 8));
    drop_behind(s, in->p);
}

/* Where each LP's record of lo .. hi starts (the others are read past). */
static void index_lps(struct kr__snapshot *s, struct kr__cursor *in)
{
    uint64_t m = s->hi - s->lo;
    s->lp_at = malloc((m + 1) * sizeof *s->lp_at);
    s->ev_first = calloc(m + 2, sizeof *s->ev_first);
    if (!s->lp_at || !s->ev_first) kr__fatal_oom("a snapshot's index", m * 16);
    for (uint64_t id = 0; id < s->lps && !in->why; id++) {
        if (mine(s, id)) s->lp_at[id - s->lo] = (size_t)(in->p - s->buf);
        skip_lp(s, in);
    }
}

/* Past an event's table of payload pointers (for a payload of size bytes). */
static void skip_pointers(struct kr__cursor *in, uint64_t size)
{
    size_t n = kr__addrmap_table_bytes(in->p, (size_t)(in->end - in->p), size);
    if (!n || size > KR_PAYLOAD_MAX)
        kr__cursor_fail(in, "an event's table of payload pointers is damaged");
    else kr__cursor_take(in, n);
}

/* One pending event's record: its destination (s->lps if damaged). */
static uint64_t event_dest(struct kr__snapshot *s, struct kr__cursor *in)
{
    kr__cursor_take(in, 32);
    uint64_t dest = kr__cursor_get(in, 8);
    kr__cursor_take(in, 4);
    uint64_t flags = kr__cursor_get(in, 4);
    kr__cursor_take(in, 8);
    uint64_t size = kr__cursor_get(in, 4);
    kr__cursor_take(in, size);
    if ((flags & SNAP_EV_PTRS) && !in->why) skip_pointers(in, size);
    drop_behind(s, in->p);
    return in->why || dest >= s->lps ? s->lps : dest;
}

/* Where each of the n events addressed to LPs lo .. hi lies, by destination (their counts
 * are in ev_first); in: the first event, all checked already. */
static void index_events(struct kr__snapshot *s, struct kr__cursor in, uint64_t n)
{
    uint64_t m = s->hi - s->lo;
    for (uint64_t k = 0; k < m; k++) s->ev_first[k + 1] += s->ev_first[k];
    s->ev_at = malloc((s->ev_first[m] + 1) * sizeof *s->ev_at);
    uint64_t *fill = calloc(m + 1, sizeof *fill);
    if (!s->ev_at || !fill) kr__fatal_oom("a snapshot's events", s->ev_first[m] * 8);
    for (uint64_t i = 0; i < n; i++) {
        size_t at = (size_t)(in.p - s->buf);
        uint64_t dest = event_dest(s, &in);
        if (mine(s, dest)) s->ev_at[s->ev_first[dest - s->lo] + fill[dest - s->lo]++] = at;
    }
    drop_all(s);
    free(fill);
}

/* The first pass over the n pending events: how many each of this rank's LPs has. */
static void count_events(struct kr__snapshot *s, struct kr__cursor *in, uint64_t n)
{
    s->ev_dropped = (size_t)(in->p - s->buf) & ~(size_t)(SNAP_WINDOW - 1);
    for (uint64_t i = 0; i < n && !in->why; i++) {
        uint64_t dest = event_dest(s, in);
        if (dest == s->lps) kr__cursor_fail(in, "damaged");
        else if (mine(s, dest)) s->ev_first[dest - s->lo + 1]++;
    }
    drop_all(s);
}

/* The pending events, by destination (after the LPs' records). */
static int index_pending(struct kr__snapshot *s, struct kr__cursor *in, struct kr__error *err)
{
    uint64_t n = kr__cursor_get(in, 8);
    if (in->why || n > (uint64_t)(in->end - in->p) / 60)
        return kr__fail(err, KR_ERR_USAGE, "the snapshot is damaged (its LPs)");
    struct kr__cursor first = *in;
    count_events(s, in, n);
    if (in->why || in->p != in->end)
        return kr__fail(err, KR_ERR_USAGE, "the snapshot is damaged (its events)");
    index_events(s, first, n);
    return KR_OK;
}

/* The LP records and the pending events, indexed for the LPs lo .. hi (the events by
 * destination): every record is checked, in two passes over the events (count, place). */
static int index_body(struct kr__snapshot *s, struct kr__cursor *in, uint64_t lo, uint64_t hi,
                      struct kr__error *err)
{
    if (s->lps > (uint64_t)(in->end - in->p) / 42) /* (an LP's record: 42 bytes or more) */
        return kr__fail(err, KR_ERR_USAGE, "the snapshot is damaged (its LP count)");
    s->lo = lo < s->lps ? lo : s->lps;
    s->hi = hi < s->lps ? hi : s->lps;
    index_lps(s, in);
    return index_pending(s, in, err);
}

int kr__snapshot_same_run(const char *dir, uint64_t lps, double end, struct kr__error *err)
{
    struct kr__config c = { 0 };
    struct kr__error e = { 0 };
    if (kr__snapshot_config(dir, &c, &e) == KR_OK && (c.lps != lps || c.end != end))
        kr__fail(err, KR_ERR_USAGE, "--resume %s: the snapshot was taken of a run of %llu LPs "
                 "to time %.17g, and these options give %llu LPs to %.17g: resume with the "
                 "options of the run that took it", dir, (unsigned long long)c.lps, c.end,
                 (unsigned long long)lps, end);
    for (size_t i = 0; i < c.nparams; i++) free((void *)c.params[i].key);
    free(c.params);
    free(c.owned);
    return err->status;
}

/* The output hash of fd's first n bytes into *h (from KR_OUT_HASH0): the bytes read. */
static uint64_t hash_from(int fd, uint64_t n, uint64_t *h)
{
    char buf[65536];
    uint64_t off = 0;
    while (off < n) {
        size_t want = n - off < sizeof buf ? (size_t)(n - off) : sizeof buf;
        ssize_t got = pread(fd, buf, want, (off_t)off);
        if (got <= 0) break;
        *h = kr__out_hash(*h, buf, (size_t)got);
        off += (uint64_t)got;
    }
    return off;
}

/* The hash of stdout's first n bytes, read back; false if they cannot all be read. */
static bool stdout_hash(uint64_t n, uint64_t *h)
{
    *h = KR_OUT_HASH0;
    int fd = open("/proc/self/fd/1", O_RDONLY | O_CLOEXEC); /* (stdout may be write-only) */
    if (fd < 0) return false;
    uint64_t off = hash_from(fd, n, h);
    close(fd);
    return off == n;
}

/* ": " and errno's reason, or nothing if there is none. */
static const char *errno_said(int e)
{
    static __thread char buf[128];
    if (!e) return "";
    snprintf(buf, sizeof buf, ": %s", strerror(e));
    return buf;
}

/* stdout, when it is a file: it must start with the output the snapshot committed (its
 * bytes and hash); it is cut there when the resumed run first appends, or ends - after
 * every check and the engine's start (a refused resume leaves the file as it was). */
static int check_output(struct kr__run *r, const struct kr__snapshot *s, struct kr__error *err)
{
    struct stat st;
    fflush(stdout);
    if (fstat(STDOUT_FILENO, &st) || !S_ISREG(st.st_mode)) return KR_OK;
    if ((uint64_t)st.st_size < s->out_bytes)
        return kr__fail(err, KR_ERR_USAGE, "stdout holds %lld bytes, fewer than the %llu of "
                        "output the snapshot's run had committed: append to that run's output "
                        "file (kairos resume DIR >> FILE)", (long long)st.st_size,
                        (unsigned long long)s->out_bytes);
    uint64_t h;
    if (!stdout_hash(s->out_bytes, &h))
        return kr__fail(err, KR_ERR_USAGE, "stdout cannot be read back%s", errno_said(errno));
    if (h != s->out_hash)
        return kr__fail(err, KR_ERR_USAGE, "stdout does not start with the output of the "
                        "snapshot's run: resume into that run's output file");
    r->out.cut_at = s->out_bytes;
    r->out.cut_pending = true;
    return KR_OK;
}

void kr__output_preamble(struct kr__run *r)
{
    struct stat st;
    fflush(stdout);
    off_t pos = lseek(STDOUT_FILENO, 0, SEEK_CUR);
    uint64_t h;
    if (pos <= 0 || fstat(STDOUT_FILENO, &st) || !S_ISREG(st.st_mode) ||
        !stdout_hash((uint64_t)pos, &h))
        return;
    r->out.hash = h;
    r->out.bytes = (uint64_t)pos;
}

void kr__output_cut(struct kr__run *r)
{
    r->out.cut_pending = false;
    fflush(stdout);
    if (ftruncate(STDOUT_FILENO, (off_t)r->out.cut_at)) {
        if (!kr__out_errno) kr__out_errno = errno; /* (reported as a failed write) */
        return;
    }
    lseek(STDOUT_FILENO, 0, SEEK_END);
}

/* The model metrics' state, loaded from the snapshot. */
static int same_metrics(struct kr__run *r, const struct kr__snapshot *s, struct kr__error *err)
{
    struct kr__cursor mc = { s->metrics, s->metrics + s->metrics_size, NULL };
    if (s->metrics && !kr__metrics_load(r->metrics, &mc))
        return kr__fail(err, KR_ERR_USAGE, "the snapshot's model metrics cannot be read (%s): "
                        "resume with the model it was taken of", mc.why);
    return KR_OK;
}

/* The snapshot is of this run's model, with the same ledger and metrics: taken in. */
static int same_model(struct kr__run *r, const struct kr__snapshot *s, struct kr__error *err)
{
    uint64_t h = s->model_hash ? kr__file_hash(s->model_path) : 0;
    if (strcmp(s->model_name, r->model->name) || h != s->model_hash)
        return kr__fail(err, KR_ERR_USAGE, "the snapshot was taken of model '%s' (%s), and "
                        "%s has changed since: resume with the model it was taken of",
                        s->model_name, s->model_path, s->model_path);
    size_t ledger = r->ledger ? r->ledger_size : 0;
    if (s->ledger_size != ledger)
        return kr__fail(err, KR_ERR_USAGE, "the snapshot holds a commit ledger of %llu bytes, "
                        "and model '%s' asks for %zu (ledger_size or ledger_bytes): resume with "
                        "the model and parameters it was taken of",
                        (unsigned long long)s->ledger_size, r->model->name, ledger);
    if (ledger) memcpy(r->ledger, s->ledger, ledger); /* (before index_body hands it back) */
    return same_metrics(r, s, err);
}

int kr__snapshot_open(struct kr__run *r, struct kr__error *err)
{
    struct kr__cursor in;
    struct kr__snapshot *s = snap_read(r->cfg->resume_dir, &in, err);
    if (!s) return err->status;
    r->snap.resume = s;
    if (same_model(r, s, err) || index_body(s, &in, r->lo, r->hi, err)) return err->status;
    r->out.bytes = s->out_bytes;
    r->out.hash = s->out_hash;
    r->lookahead = s->lookahead;
    r->promise.lookahead_declared = s->declared;
    /* (across ranks every rank reads the whole file and loads its own LPs; committed
     * output goes out through rank 0 alone) */
    return kr__net.rank == 0 ? check_output(r, s, err) : KR_OK;
}

void kr__snapshot_close(struct kr__run *r)
{
    snap_free(r->snap.resume);
    r->snap.resume = NULL;
}

int kr__snapshot_parse(const unsigned char *buf, size_t n, struct kr__error *err)
{
    struct kr__snapshot *s = calloc(1, sizeof *s);
    if (!s || n < SNAP_HEAD || !(s->buf = malloc(n))) {
        free(s);
        return kr__fail(err, KR_ERR_USAGE, "the snapshot is truncated");
    }
    memcpy(s->buf, buf, n);
    s->n = n;
    struct kr__cursor in = { s->buf + SNAP_HEAD, s->buf + n, NULL };
    int rc = check_sum(s, "(memory)", err);
    if (!rc) rc = read_identity(s, &in, err);
    if (!rc) rc = index_body(s, &in, 0, UINT64_MAX, err);
    snap_free(s);
    return rc;
}

uint64_t kr__snapshot_committed(const struct kr__run *r)
{
    return r->snap.resume ? r->snap.resume->committed : 0;
}

kr_time kr__snapshot_time(const struct kr__run *r)
{
    return r->snap.resume ? r->snap.resume->at : -INFINITY;
}

/* One pending event of the snapshot, into an event of this run's pool; *table is its
 * payload's pointer table, or NULL if it has none. */
static struct kr__ev *read_pending(struct kr__cursor *in, const unsigned char **table)
{
    double ts = rd_f64(in);
    uint32_t gen = (uint32_t)kr__cursor_get(in, 4), tie = (uint32_t)kr__cursor_get(in, 4);
    uint64_t src = kr__cursor_get(in, 8), seq = kr__cursor_get(in, 8);
    uint64_t dest = kr__cursor_get(in, 8);
    uint32_t type = (uint32_t)kr__cursor_get(in, 4), flags = (uint32_t)kr__cursor_get(in, 4);
    double dur = rd_f64(in);
    uint32_t size = (uint32_t)kr__cursor_get(in, 4);
    const unsigned char *payload = kr__cursor_take(in, size);
    *table = flags & SNAP_EV_PTRS ? in->p : NULL;
    struct kr__ev *e = kr__pool_get(kr__ctx.pool, size);
    e->k = (struct kr__key){ .ts = ts, .gen = gen, .tie = tie, .src = src, .seq = seq };
    e->dest = dest;
    e->type = type;
    e->size = size;
    e->flags = (uint8_t)(flags & KR_EVF_SPAN);
    e->xflags = 0;
    e->pflags = (uint8_t)((*table ? KR_PAYLOAD_IMAGE : KR_PAYLOAD_PLAIN) |
                          (flags & SNAP_EV_TIMER ? KR_PAYLOAD_TIMER : 0));
    kr__ev_tail_init(e, dur);
    if (size) memcpy(e->payload, payload, size);
    return e;
}

static void send_pending(struct kr__run *r, const struct kr__snapshot *s, kr_lp id)
{
    for (uint64_t i = s->ev_first[id - s->lo]; i < s->ev_first[id - s->lo + 1]; i++) {
        struct kr__cursor in = { s->buf + s->ev_at[i], s->buf + s->n, NULL };
        const unsigned char *table;
        struct kr__ev *e = read_pending(&in, &table);
        uint64_t missing = 0;
        if (table && !kr__addrmap_import(e->payload, e->size, table, &missing))
            kr__model_error("resuming: a pending event of LP %llu (type %u) points into a "
                            "module (name hash %016llx) this process has not loaded: resume "
                            "with the model the snapshot was written with",
                            (unsigned long long)e->dest, e->type, (unsigned long long)missing);
        kr__ctx.ops->send(&kr__ctx, e);
    }
    (void)r;
}

void kr__snapshot_apply(struct kr__run *r, kr_lp id)
{
    struct kr__snapshot *s = r->snap.resume;
    struct kr__lp *lp = kr__lp_at(r, id);
    struct kr__cursor in = { s->buf + s->lp_at[id - s->lo], s->buf + s->n, NULL };
    lp->rng = kr__cursor_get(&in, 8);
    lp->seq = kr__cursor_get(&in, 8);
    lp->digest = kr__cursor_get(&in, 8);
    lp->committed = kr__cursor_get(&in, 8);
    lp->done_init = (bool)kr__cursor_get(&in, 1);
    lp->done_seen = (bool)kr__cursor_get(&in, 1);
    uint64_t len = kr__cursor_get(&in, 8);
    const char *why = NULL;
    void *root = NULL, *timers = NULL;
    if (!kr__image_load(&lp->arena, in.p, len, &root, &timers, &why))
        kr__model_error("resuming: LP %llu's state cannot be loaded: %s",
                        (unsigned long long)id, why);
    lp->root = root;
    kr__timers_set_word(lp, (uint64_t)(uintptr_t)timers);
    send_pending(r, s, id);
    /* (LPs load in order, and their events lie in order: what lies before is done with) */
    drop_behind(s, s->buf + s->lp_at[id - s->lo]);
    if (s->ev_first[id - s->lo] < s->ev_first[id - s->lo + 1])
        drop_to(s, &s->ev_dropped, s->buf + s->ev_at[s->ev_first[id - s->lo]]);
}
