/* wire.c - encoding and decoding events between ranks (see wire.h). */
#include "msg/wire.h"
#include <stdbool.h>
#include "state/addrmap.h"

size_t kr__wire_put_event(unsigned char *buf, const struct kr__ev *e, uint64_t rid,
                          unsigned round)
{
    struct kr__wire_hdr h = { .kind = KR_WIRE_EVENT, .flags = e->flags & KR_EVF_SPAN,
                              .round = (uint8_t)round,
                              .type = e->type, .size = e->size, .k = e->k, .dest = e->dest,
                              .rid = rid };
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, e->payload, e->size);
    size_t pad = kr__wire_pad8(e->size) - e->size;
    if (pad) memset(buf + sizeof h + e->size, 0, pad); /* (no stray bytes on the wire) */
    if (h.flags & KR_EVF_SPAN) memcpy(buf + kr__wire_event_bytes(e->size), &e->dur, sizeof e->dur);
    return kr__wire_event_size(e->size, h.flags);
}

size_t kr__wire_put_ptrs(unsigned char *buf, const unsigned char *payload,
                         const unsigned char *table, size_t tlen)
{
    struct kr__wire_hdr h;
    memcpy(&h, buf, sizeof h);
    h.ptrs = 1;
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, payload, h.size);
    memcpy(buf + kr__wire_event_size(h.size, h.flags), table, tlen);
    return tlen;
}

size_t kr__wire_put_anti(unsigned char *buf, const struct kr__key *k, kr_lp dest,
                         uint64_t rid, unsigned round)
{
    struct kr__wire_hdr h = { .kind = KR_WIRE_ANTI, .round = (uint8_t)round, .k = *k,
                              .dest = dest, .rid = rid };
    memcpy(buf, &h, sizeof h);
    return sizeof h;
}

size_t kr__wire_put_text(unsigned char *buf, const struct kr__key *k, uint32_t part,
                         const char *text, size_t len)
{
    struct kr__wire_hdr h = { .kind = KR_WIRE_TEXT, .type = part, .size = (uint32_t)len,
                              .k = *k };
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, text, len);
    size_t pad = kr__wire_pad8(len) - len;
    if (pad) memset(buf + sizeof h + len, 0, pad);
    return kr__wire_event_bytes(len);
}

size_t kr__wire_put_upto(unsigned char *buf, const struct kr__key *k)
{
    struct kr__wire_hdr h = { .kind = KR_WIRE_UPTO, .k = *k };
    memcpy(buf, &h, sizeof h);
    return sizeof h;
}

/* What is wrong with header h of a record (KR_WIRE_OK: nothing). */
static int header_check(const struct kr__wire_hdr *h, uint64_t nlps)
{
    if (h->kind < KR_WIRE_EVENT || h->kind > KR_WIRE_UPTO) return KR_WIRE_BAD_KIND;
    bool bare = h->kind == KR_WIRE_ANTI || h->kind == KR_WIRE_UPTO;
    if (h->size > KR_WIRE_MAX_PAYLOAD || (bare && h->size)) return KR_WIRE_BAD_SIZE;
    return h->dest >= nlps ? KR_WIRE_BAD_DEST : KR_WIRE_OK;
}

/* The record at p (left bytes, *bytes of them before any table): its table of payload
 * pointers, if its header says it has one; false if that is damaged. */
static bool item_table(struct kr__wire_item *it, const unsigned char *p, size_t left,
                       size_t *bytes)
{
    it->table = NULL;
    if (!it->h.ptrs) return true;
    size_t tb = it->h.kind == KR_WIRE_EVENT ?
                    kr__addrmap_table_bytes(p + *bytes, left - *bytes, it->h.size) : 0;
    if (!tb) return false;
    it->table = p + *bytes;
    *bytes += tb;
    return true;
}

int kr__wire_next(const unsigned char **p, const unsigned char *end, uint64_t nlps,
                  struct kr__wire_item *it)
{
    size_t left = (size_t)(end - *p);
    if (!left) return KR_WIRE_END;
    if (left < sizeof it->h) return KR_WIRE_TRUNCATED;
    memcpy(&it->h, *p, sizeof it->h);
    int bad = header_check(&it->h, nlps);
    if (bad) return bad;
    bool span = it->h.kind == KR_WIRE_EVENT && (it->h.flags & KR_EVF_SPAN);
    size_t bytes = kr__wire_event_size(it->h.size, span ? KR_EVF_SPAN : 0);
    if (left < bytes) return KR_WIRE_TRUNCATED;
    it->payload = *p + sizeof it->h;
    it->dur = 0;
    if (span) memcpy(&it->dur, *p + kr__wire_event_bytes(it->h.size), sizeof it->dur);
    if (!item_table(it, *p, left, &bytes)) return KR_WIRE_BAD_TABLE;
    *p += bytes;
    return KR_WIRE_OK;
}

const char *kr__wire_strerror(int code)
{
    static const char *const what[] = {
        [KR_WIRE_OK] = "no error",
        [KR_WIRE_END] = "end of the message",
        [KR_WIRE_TRUNCATED] = "a record runs past the end of its message",
        [KR_WIRE_BAD_KIND] = "a record of no known kind",
        [KR_WIRE_BAD_SIZE] = "a record's payload size is impossible",
        [KR_WIRE_BAD_DEST] = "a record's destination LP does not exist",
        [KR_WIRE_BAD_TABLE] = "an event's table of payload pointers is damaged",
    };
    bool known = code >= 0 && (size_t)code < sizeof what / sizeof what[0];
    return known ? what[code] : "unknown wire error";
}
