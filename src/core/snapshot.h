/* snapshot.h - whole-run snapshots and resume (issue 17; docs/guide.md, "Snapshots and
 * resume"). A snapshot holds a run where every event before one point of the event order is
 * committed and none after it: each LP's state (as an address-independent image,
 * state/image.h), random stream, send count, history hash and committed count, the pending
 * events with their whole keys, and how much committed output had been written and its
 * hash; with the model's identity and the options that decide the history. `kairos resume
 * DIR` starts a run from it on any engine, in place of init, and ends with the digest and
 * output of the run that was never stopped. */
#ifndef KR_CORE_SNAPSHOT_H
#define KR_CORE_SNAPSHOT_H

#include "core/core.h"
#include "base/error.h"

/* Across MPI ranks one file is written, by rank 0: each other rank sends it its part (its
 * LPs' records, then its pending events) in pieces, which rank 0 puts in place. The engine
 * carries the pieces (under its network lock); each call blocks until done and ends the
 * job on an MPI error. */
struct kr__snap_link {
    int nranks;
    void (*send)(void *ctx, const void *buf, size_t len);       /* to rank 0 */
    void *(*recv)(void *ctx, int from, size_t *len);            /* rank 0: malloc'd */
    void *ctx;
};

/* Write a snapshot into cfg->snap_dir: the events before those in pending[0..n) (not yet
 * run; any order: sorted here) are committed; `at` is the first pending time (of all ranks). Replaces
 * the last one only once complete (temporary file, fsync, rename). False, with a warning
 * printed, if it could not be written (a state that cannot be saved, the disk): the run
 * goes on, the last one stays. With link (rank 0 of several), the LPs r->lo .. r->hi are
 * this rank's and the other ranks' parts come through it (they call kr__snapshot_send). */
bool kr__snapshot_write(struct kr__run *r, struct kr__ev **pending, size_t n, kr_time at,
                        const struct kr__snap_link *link);
/* A rank but 0: its part of the snapshot rank 0 writes (the same point, pending[0..n) the
 * events of its LPs) sent through link. */
void kr__snapshot_send(struct kr__run *r, struct kr__ev **pending, size_t n,
                       const struct kr__snap_link *link);

/* When the one after a snapshot at `at` (or after the run's start or resume there) is due:
 * *next at the first multiple of --snapshot-every past at (INFINITY: none), *wall on the
 * clock (kr__clock_ns) --snapshot-seconds from now (UINT64_MAX: none). */
void kr__snapshot_next(const struct kr__run *r, kr_time at, kr_time *next, uint64_t *wall);
/* The first one of a run (after the time it resumed at, if resumed); none without
 * --snapshot. */
void kr__snapshot_first(const struct kr__run *r, kr_time *next, uint64_t *wall);

/* kairos resume: the model, its parameters, --lps, --seed and --end from DIR's snapshot. */
int kr__snapshot_config(const char *dir, struct kr__config *c, struct kr__error *err);
/* The run's set-up: read cfg->resume_dir's snapshot for the LPs, check it was taken of this
 * model, and cut stdout, if it is a file, to the output the snapshot had committed. */
int kr__snapshot_open(struct kr__run *r, struct kr__error *err);
/* Cut stdout to the snapshot's output (r->out.cut_pending: kr__snapshot_open checked it):
 * at the resumed run's first output, or its end. A failure counts as a failed write. */
void kr__output_cut(struct kr__run *r);
/* A run that writes snapshots, before its first output: what stdout (a file) holds already
 * - a program's own lines before its run (the ROSS layer's main), a log appended to - is
 * the start of what a resume must find there, so the output's count and hash begin with
 * it. */
void kr__output_preamble(struct kr__run *r);
/* A program that resumes itself (a layer's --resume DIR): the snapshot in dir must be of a
 * run of `lps` LPs to time `end`, what the program's own options gave again; a failure in
 * err naming both (KR_OK also when the snapshot cannot be read: the resume says why). */
int kr__snapshot_same_run(const char *dir, uint64_t lps, double end, struct kr__error *err);
void kr__snapshot_close(struct kr__run *r);
/* In place of LP id's init: its state and bookkeeping, and the pending events addressed to
 * it, sent through the engine as init's would be. */
void kr__snapshot_apply(struct kr__run *r, kr_lp id);
/* Check a snapshot held in memory as resume would, up to loading its LPs (fuzzing). */
int kr__snapshot_parse(const unsigned char *buf, size_t n, struct kr__error *err);
/* The events its LPs had committed before the snapshot the run resumed from. */
uint64_t kr__snapshot_committed(const struct kr__run *r);
/* The virtual time the run resumed at. */
kr_time kr__snapshot_time(const struct kr__run *r);

/* A file's contents hashed (0 if it cannot be read: a built-in model has none). */
uint64_t kr__file_hash(const char *path);

#endif
