/* snapfile.h - the snapshot file's format, which its writer (snapshot.c) and its reader
 * (resume.c) share. Private to those two.
 *
 * DIR/snapshot (native byte order; strings are u32 length + bytes):
 *   "KRSNAP01", u64 file length, u64 checksum of the bytes after it
 *   u32 version; the model: str path, str name, u64 hash of its file (0: built in);
 *   u32 parameters, each str name, str value (sorted by name); u64 LPs, u64 seed, f64 end,
 *   u64 --arena-max; f64 the snapshot's time, u64 output bytes, u64 output hash, f64 the
 *   run's lookahead, u8 whether init declared it (kr_set_lookahead: a resumed run runs no
 *   init); u64 the model's ledger bytes and the ledger (commit hooks: at the snapshot's
 *   time every record before it has reached the hook); u64 bytes and the model's metrics
 *   so far (core/metrics.h: kr__metrics_save; version 3 on)
 *   per LP: u64 RNG, send count, history hash, committed events; u8 done_init, done_seen;
 *           u64 image length, the state image (state/image.h; its second root, where
 *           the LP has one, is the list of its pending timers: core/timer.h)
 *   u64 pending events, each: f64 ts, u32 gen, u32 tie, u64 src, u64 seq, u64 dest,
 *           u32 type, u32 flags, f64 duration, u32 size, payload; with flags' SNAP_EV_PTRS
 *           the payload's pointers into the program image are offsets, and the table
 *           that names their modules follows (state/addrmap.h: kr__addrmap_export);
 *           SNAP_EV_TIMER marks a timer's event (kr_timer_set)
 * The options an engine reads (threads, state mode, ...) are not in it: any may resume. */
#ifndef KR_CORE_SNAPFILE_H
#define KR_CORE_SNAPFILE_H

#define SNAP_MAGIC "KRSNAP01"
#define SNAP_VERSION 3u /* (2, without the metrics, still resumes) */
#define SNAP_HEAD 24 /* magic, length, checksum */
/* (an event record's flags beside KR_EVF_SPAN: a table of payload pointers follows; the
 * event is a timer's, kr_timer_set) */
#define SNAP_EV_PTRS 0x100u
#define SNAP_EV_TIMER 0x200u

#endif
