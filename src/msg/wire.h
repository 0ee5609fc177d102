/* wire.h - events between ranks: an event or an antimessage encoded into a byte buffer, and
 * decoded back, checked, into the receiver's terms (docs/cluster.md).
 *
 * A record is a 64-byte header (kind, the event's full key, destination, type, payload size,
 * and the remote id that names the event to its antimessage) and, for an event, its payload
 * padded to 8 bytes. Ranks run the same build on the same architecture (x86-64), so fields
 * go in the machine's byte order. A buffer is decoded record by record; a record that does
 * not fit in what is left, or names a kind or size no sender writes, stops decoding with an
 * error rather than being read past.
 */
#ifndef KR_MSG_WIRE_H
#define KR_MSG_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include "msg/event.h"

/* Kinds: an event, an antimessage; committed output on its way to rank 0 (the event's key,
 * `type` its part within the event, the text as payload) and a rank's mark that all of its
 * output before key k has been sent (kr__wire_put_text / _upto). */
enum { KR_WIRE_EVENT = 1, KR_WIRE_ANTI = 2, KR_WIRE_TEXT = 3, KR_WIRE_UPTO = 4 };

struct kr__wire_hdr {
    uint8_t kind;             /* KR_WIRE_* */
    uint8_t flags;            /* the event's KR_EVF_SPAN (the rest are the receiver's) */
    uint8_t ptrs;             /* an event: 1 if its payload's pointers into the program
                               * image are offsets, named by the table that follows the
                               * padded payload (state/addrmap.h: u64 count, then per
                               * pointer u64 word index, u64 module name hash) */
    uint8_t round;            /* the sender's GVT round count when it sent the record, low 8
                               * bits: its lowest bit is the record's colour, and a later
                               * round tells the receiver to start one */
    uint32_t type;
    uint32_t size;            /* payload bytes (0 for an antimessage) */
    uint32_t pad2_;
    struct kr__key k;
    uint64_t dest;
    uint64_t rid;             /* remote id: the sending rank's name for this event */
};
_Static_assert(sizeof(struct kr__wire_hdr) == 64, "a wire header is one cache line");

/* The largest payload a record may carry (kr_schedule's own limit is far below). */
#define KR_WIRE_MAX_PAYLOAD (1u << 30)

static inline size_t kr__wire_pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Bytes an event with `size` bytes of payload takes on the wire. */
static inline size_t kr__wire_event_bytes(size_t size)
{
    return sizeof(struct kr__wire_hdr) + kr__wire_pad8(size);
}

/* Bytes of an event record with `size` bytes of payload and flags `flags` (the header's):
 * one sent with a span carries it in a word after the padded payload (the windows scheme
 * reads it there: optimistic/clock.c). */
static inline size_t kr__wire_event_size(size_t size, unsigned flags)
{
    return kr__wire_event_bytes(size) + (flags & KR_EVF_SPAN ? sizeof(double) : 0);
}

/* Encode e as sent (key, destination, type, payload) with remote id rid and the sender's
 * GVT round count at buf, which has kr__wire_event_bytes(e->size) bytes; returns them. */
size_t kr__wire_put_event(unsigned char *buf, const struct kr__ev *e, uint64_t rid,
                          unsigned round);
/* After kr__wire_put_event at buf: its payload replaced by `payload` (the portable form,
 * kr__addrmap_export) and the table of tlen bytes appended; returns the bytes added. */
size_t kr__wire_put_ptrs(unsigned char *buf, const unsigned char *payload,
                         const unsigned char *table, size_t tlen);
/* Encode the antimessage of the event named rid (key k, for dest); returns the bytes. */
size_t kr__wire_put_anti(unsigned char *buf, const struct kr__key *k, kr_lp dest,
                         uint64_t rid, unsigned round);

/* Committed output text (len bytes, part `part` of the event with key k); its bytes are
 * kr__wire_event_bytes(len). And the mark "all output before k was sent". */
size_t kr__wire_put_text(unsigned char *buf, const struct kr__key *k, uint32_t part,
                         const char *text, size_t len);
size_t kr__wire_put_upto(unsigned char *buf, const struct kr__key *k);

/* One decoded record: its header, and for an event its payload (inside the buffer). */
struct kr__wire_item {
    struct kr__wire_hdr h;
    const unsigned char *payload;
    const unsigned char *table;   /* h.ptrs: the payload's table of pointers, else NULL */
    double dur;                   /* an event with KR_EVF_SPAN: its span, else 0 */
};

enum { KR_WIRE_OK = 0, KR_WIRE_END, KR_WIRE_TRUNCATED, KR_WIRE_BAD_KIND, KR_WIRE_BAD_SIZE,
       KR_WIRE_BAD_DEST, KR_WIRE_BAD_TABLE };

/* Decode the record at *p (before end) into it and advance *p past it: KR_WIRE_OK, or
 * KR_WIRE_END at the end of the buffer, or the first thing wrong (a destination must be
 * below nlps). */
int kr__wire_next(const unsigned char **p, const unsigned char *end, uint64_t nlps,
                  struct kr__wire_item *it);
/* What a KR_WIRE_* code means, for an internal error's message. */
const char *kr__wire_strerror(int code);

#endif
