/* test_wire.c - events between ranks: records encode and decode to the same event, a
 * damaged buffer is refused, not read past; remote ids match events and antimessages in
 * either order, survive growth and deletion, and committed events are forgotten. */
#include "check.h"
#include "msg/match.h"
#include "msg/wire.h"
#include "state/addrmap.h"

/* An event of `size` payload bytes in storage (sizeof(struct kr__ev) + 24 bytes), zeroed. */
static struct kr__ev *event_at(unsigned char *storage, struct kr__key k, kr_lp dest,
                               uint32_t type, uint32_t size)
{
    struct kr__ev *e = (struct kr__ev *)storage;
    memset(storage, 0, sizeof(struct kr__ev) + 24);
    *e = (struct kr__ev){ .k = k, .dest = dest, .type = type, .size = size };
    return e;
}

static void wire_round_trip(void)
{
    unsigned char storage[sizeof(struct kr__ev) + 24];
    struct kr__ev *e = event_at(storage, (struct kr__key){ 2.5, 3, 0, 17, 41 }, 9, 7, 19);
    e->flags = KR_EVF_SPAN | KR_EVF_CKPT;
    e->dur = 1.25; /* (a span: carried after the payload) */
    for (unsigned i = 0; i < e->size; i++) e->payload[i] = (unsigned char)(i * 13 + 1);
    unsigned char buf[512];
    memset(buf, 0xEE, sizeof buf);
    size_t n = kr__wire_put_event(buf, e, 0x10000000000005ull, 1);
    CHECK(n == kr__wire_event_size(19, KR_EVF_SPAN) && n == 64 + 24 + 8);
    CHECK(buf[64 + 19] == 0 && buf[64 + 23] == 0);          /* padding zeroed */
    struct kr__key ak = { 4.0, 0, 0, 2, 8 };
    n += kr__wire_put_anti(buf + n, &ak, 5, 77, 0);
    const unsigned char *p = buf, *end = buf + n;
    struct kr__wire_item it;
    CHECK(kr__wire_next(&p, end, 10, &it) == KR_WIRE_OK);
    CHECK(it.h.kind == KR_WIRE_EVENT && it.h.dest == 9 && it.h.type == 7 && it.h.size == 19);
    CHECK(kr__key_cmp(&it.h.k, &e->k) == 0 && it.h.rid == 0x10000000000005ull);
    CHECK(it.h.flags == KR_EVF_SPAN);                       /* the sender's own flags stay */
    CHECK(it.h.round == 1);
    CHECK(memcmp(it.payload, e->payload, 19) == 0);
    CHECK(it.dur == 1.25);
    CHECK(kr__wire_next(&p, end, 10, &it) == KR_WIRE_OK);
    CHECK(it.h.kind == KR_WIRE_ANTI && it.h.dest == 5 && it.h.rid == 77 && it.h.size == 0);
    CHECK(it.h.round == 0);
    CHECK(kr__key_cmp(&it.h.k, &ak) == 0);
    CHECK(kr__wire_next(&p, end, 10, &it) == KR_WIRE_END);
    /* damaged buffers stop decoding at the damage */
    p = buf;
    CHECK(kr__wire_next(&p, buf + 64 + 10, 10, &it) == KR_WIRE_TRUNCATED);
    p = buf;
    CHECK(kr__wire_next(&p, buf + 64 + 24, 10, &it) == KR_WIRE_TRUNCATED); /* (no span) */
    p = buf;
    CHECK(kr__wire_next(&p, buf + 30, 10, &it) == KR_WIRE_TRUNCATED);
    p = buf;
    CHECK(kr__wire_next(&p, end, 9, &it) == KR_WIRE_BAD_DEST); /* LP 9 of 9 */
    buf[0] = 5;
    p = buf;
    CHECK(kr__wire_next(&p, end, 10, &it) == KR_WIRE_BAD_KIND);
    buf[0] = KR_WIRE_EVENT;
    buf[0] = KR_WIRE_ANTI;                                   /* an antimessage with payload */
    p = buf;
    CHECK(kr__wire_next(&p, end, 10, &it) == KR_WIRE_BAD_SIZE);
    CHECK(strcmp(kr__wire_strerror(KR_WIRE_TRUNCATED), "no error") != 0);
}

/* An event whose payload points into the program image: the portable form (offsets and a
 * table naming modules) crosses and is turned back into this process's addresses. */
static const char literal[] = "a string literal";

static void wire_pointers(void)
{
    unsigned char storage[sizeof(struct kr__ev) + 24];
    struct kr__ev *e = event_at(storage, (struct kr__key){ 1.0, 0, 0, 3, 4 }, 2, 0, 24);
    const char *ptr = literal + 2;
    uint64_t num = 123456789;
    memcpy(e->payload, &num, 8);
    memcpy(e->payload + 8, &ptr, 8);
    memcpy(e->payload + 16, &num, 8);
    size_t at = 0;
    CHECK(kr__addrmap_payload(e->payload, 24, &at, NULL, 0) == KR_PAYLOAD_IMAGE);
    unsigned char copy[24], table[KR_ADDR_TABLE_BYTES(24)], buf[512];
    memcpy(copy, e->payload, 24);
    size_t tn = kr__addrmap_export(copy, 24, table);
    CHECK(tn == 8 + 16 && memcmp(copy, e->payload, 8) == 0);
    CHECK(memcmp(copy + 8, e->payload + 8, 8) != 0);         /* an offset, not the address */
    size_t n = kr__wire_put_event(buf, e, 1, 0);
    n += kr__wire_put_ptrs(buf, copy, table, tn);
    const unsigned char *p = buf;
    struct kr__wire_item it;
    CHECK(kr__wire_next(&p, buf + n, 10, &it) == KR_WIRE_OK && p == buf + n);
    CHECK(it.h.ptrs == 1 && it.table == buf + 64 + 24);
    unsigned char got[24];
    memcpy(got, it.payload, 24);
    uint64_t missing = 0;
    CHECK(kr__addrmap_import(got, 24, it.table, &missing));
    CHECK(memcmp(got, e->payload, 24) == 0);
    CHECK(kr__addrmap_mix_payload(7, got, 24) == kr__addrmap_mix_payload(7, e->payload, 24));
    p = buf;                                                  /* the table cut short */
    CHECK(kr__wire_next(&p, buf + n - 1, 10, &it) == KR_WIRE_BAD_TABLE);
    buf[64 + 24] = 9;                                         /* more pointers than words */
    p = buf;
    CHECK(kr__wire_next(&p, buf + n, 10, &it) == KR_WIRE_BAD_TABLE);
    uint64_t bogus[3] = { 1, 1, 0x5eed };                     /* a module not loaded here */
    CHECK(!kr__addrmap_import(got, 24, (const unsigned char *)bogus, &missing));
    CHECK(missing == 0x5eed);
}

static void match_both_orders(void)
{
    struct kr__match m;
    kr__match_init(&m);
    enum { N = 20000 };
    static struct kr__ev ev[N];
    for (unsigned i = 0; i < N; i++) ev[i].k.ts = i;
    /* even ids: the event first; odd ids: the antimessage first */
    for (unsigned i = 0; i < N; i++) {
        uint64_t rid = ((uint64_t)(i % 3 + 1) << 48) | i;     /* three "ranks" */
        if (i % 2 == 0) CHECK(kr__match_event(&m, rid, &ev[i]) == KR_MATCH_KEPT);
        else CHECK(kr__match_anti(&m, rid, ev[i].k.ts) == NULL);
    }
    CHECK(m.n == N && m.waiting == N / 2);
    CHECK(kr__match_event(&m, (1ull << 48) | 0, &ev[0]) == KR_MATCH_DUPLICATE);
    for (unsigned i = 0; i < N; i++) {
        uint64_t rid = ((uint64_t)(i % 3 + 1) << 48) | i;
        if (i % 2 == 0) CHECK(kr__match_anti(&m, rid, ev[i].k.ts) == &ev[i]);
        else CHECK(kr__match_event(&m, rid, &ev[i]) == KR_MATCH_ANNIHILATED);
    }
    CHECK(m.n == 0 && m.waiting == 0);
    /* deletions inside clusters keep every other entry findable */
    for (unsigned i = 0; i < N; i++) CHECK(kr__match_event(&m, i + 1, &ev[i]) == KR_MATCH_KEPT);
    for (unsigned i = 0; i < N; i += 3) CHECK(kr__match_anti(&m, i + 1, 0) == &ev[i]);
    for (unsigned i = 0; i < N; i++)
        if (i % 3) CHECK(kr__match_event(&m, i + 1, &ev[i]) == KR_MATCH_DUPLICATE);
    /* commit: events before time 10000 are forgotten, a waiting antimessage stays */
    CHECK(kr__match_anti(&m, 999999, 5.0) == NULL);
    size_t before = m.n;
    size_t gone = kr__match_fossil(&m, 10000);
    size_t want = 0;
    for (unsigned i = 0; i < 10000; i++) want += i % 3 != 0;
    CHECK(gone == want && m.n == before - want && m.waiting == 1);
    for (unsigned i = 10000; i < N; i++)
        if (i % 3) CHECK(kr__match_anti(&m, i + 1, 0) == &ev[i]);
    CHECK(kr__match_event(&m, 999999, &ev[5]) == KR_MATCH_ANNIHILATED);
    CHECK(m.n == 0 && m.waiting == 0);
    kr__match_destroy(&m);
}

/* The send path's inline test (kr__addr_above_floor) agrees with the look-up: an id above
 * 64 KiB but below the lowest mapping is a number without a call, a heap block and the
 * image are not below the floor, and a reset forgets the floor with the maps. */
static void payload_floor(void)
{
    kr__addrmap_reset();
    uint64_t id = 4096000; /* (airport's plane ids: under a PIE image, nothing is there) */
    CHECK(kr__addr_above_floor(id)); /* (before the maps are read: every canonical word) */
    size_t at = 0;
    CHECK(kr__addrmap_payload(&id, 8, &at, NULL, 0) == KR_PAYLOAD_PLAIN);
    CHECK(!kr__addr_above_floor(id));
    char *block = malloc(64);
    uint64_t words[2] = { (uint64_t)(uintptr_t)block, (uint64_t)(uintptr_t)literal };
    CHECK(kr__addr_above_floor(words[0]) && kr__addr_above_floor(words[1]));
    CHECK(!kr__addr_above_floor(0x100000000000000ull) && !kr__addr_above_floor(7));
    CHECK(kr__addrmap_payload(&words[1], 8, &at, NULL, 0) == KR_PAYLOAD_IMAGE);
    free(block);
    kr__addrmap_reset();
    CHECK(kr__addr_above_floor(id));
}

int main(void)
{
    wire_round_trip();
    wire_pointers();
    payload_floor();
    match_both_orders();
    return check_done("wire");
}
