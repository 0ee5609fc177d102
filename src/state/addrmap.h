/* addrmap.h - what an address outside every arena names, for state hashing. A state word
 * that points into the program image (a string literal, a const table, a function, a
 * global) is hashed as (module name, offset in the module), which address-space layout
 * randomisation does not change; a word that points into other mapped memory (the C
 * library heap, a stack, another LP's blocks) cannot be named and is reported. Anything
 * else is a number and is hashed as it is: that includes the LP region's slices past their
 * carved areas (seg.h), gigabytes reserved where no block ever was, which numbers in a state
 * hit often enough to matter (the test model chaos's sprinkled bytes, 0x7f0000000000).
 */
#ifndef KR_STATE_ADDRMAP_H
#define KR_STATE_ADDRMAP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum kr__addr_kind { KR_ADDR_NUMBER, KR_ADDR_IMAGE, KR_ADDR_FOREIGN };

/* Below the first 64 KiB and above the x86-64 user half nothing is mapped: most words
 * (small counts, doubles, random 64-bit values) are told from addresses without a look-up. */
#define KR_ADDR_USER_LO 0x10000ull
#define KR_ADDR_USER_HI 0x800000000000ull

static inline bool kr__addr_maybe(uint64_t w)
{
    return w - KR_ADDR_USER_LO < KR_ADDR_USER_HI - KR_ADDR_USER_LO;
}

/* The lowest address mapped when the maps were last read (KR_ADDR_USER_LO until then): a
 * word below it is a number (kr__addrmap_payload says so too), told on the send path
 * without a call. Ids and counts above 64 KiB, such as the airport model's plane ids, cost
 * a call and a look-up at each send otherwise (without them airport ran 1.11x faster). */
extern _Atomic uintptr_t kr__addr_floor;

static inline bool kr__addr_above_floor(uint64_t w)
{
    uintptr_t lo = atomic_load_explicit(&kr__addr_floor, memory_order_relaxed);
    return w - lo < KR_ADDR_USER_HI - lo;
}

/* Canonical value of word w for hashing; *kind says what it was. For KR_ADDR_FOREIGN,
 * `where` (if not NULL) receives the name of the mapping ("[heap]", "[stack]", a path, or
 * "anonymous memory"). Thread-safe; the maps are read lazily and again when a word lies in
 * memory mapped since. */
uint64_t kr__addrmap_canon(uint64_t w, enum kr__addr_kind *kind, char *where, size_t cap);
/* The same look-up, split for state images (image.h): for KR_ADDR_IMAGE, the module's name
 * hash (of its file name, not its directory) and w's offset from its load address. */
enum kr__addr_kind kr__addrmap_split(uint64_t w, uint64_t *name, uint64_t *offset,
                                     char *where, size_t cap);
/* The load address of the module with that name hash here, if it is loaded. */
bool kr__addrmap_module(uint64_t name, uintptr_t *base);
/* Forget what was read (tests; the end of a run). */
void kr__addrmap_reset(void);

/* Event payloads (issue 35). A word at an 8-byte offset of a payload that points into the
 * program image (a string literal, a const table, a function) is named as in states -
 * (module, offset) - in the digest, the trace, between ranks and in snapshots; a word
 * pointing into other mapped memory (the C library heap, an LP's state, a stack) has no
 * name that another run or rank shares and is refused. A number under the lowest mapped
 * address is told apart with two comparisons. */
enum { KR_PAYLOAD_PLAIN = 0, KR_PAYLOAD_IMAGE = 1,
       /* (the same byte holds what the engine knows of a timer's event: core/timer.h) */
       KR_PAYLOAD_TIMER = 2,      /* kr_timer_set's: it runs only if still pending */
       KR_PAYLOAD_CANCELLED = 4,  /* ...and it was not, when it was reached */
       KR_PAYLOAD_TIMERS_IN = 8   /* the first of a bundle with timers among its members */ };
/* KR_PAYLOAD_IMAGE if a word points into the image, else KR_PAYLOAD_PLAIN; -1 if one
 * points into other mapped memory: its byte offset in *at, the mapping's name in where. */
int kr__addrmap_payload(const void *payload, size_t size, size_t *at, char *where, size_t cap);
/* A payload word below 4 GiB that points into mapped memory other than the image (a
 * program built without -pie, or valgrind, maps its heap there; numbers lie there too) is
 * taken as a number: true once a run for the first such word, with what it points into. */
bool kr__addrmap_low_taken(uint64_t *w, char *where, size_t cap);
/* kr__mix_bytes(h, payload, size) with each image pointer word replaced by its name. */
uint64_t kr__addrmap_mix_payload(uint64_t h, const void *payload, size_t size);
/* The portable form: image pointer words of payload (a copy) rewritten as offsets in their
 * module, and the table that names the modules written to `table` (u64 count, then per
 * pointer u64 word index and u64 module name hash; at most KR_ADDR_TABLE_BYTES(size));
 * returns the table's bytes. kr__addrmap_import turns the offsets back into this process's
 * addresses: false if a module is not loaded here (its name hash in *missing). */
#define KR_ADDR_TABLE_BYTES(size) (8 + 16 * ((size) / 8))
size_t kr__addrmap_export(unsigned char *payload, size_t size, unsigned char *table);
bool kr__addrmap_import(unsigned char *payload, size_t size, const unsigned char *table,
                        uint64_t *missing);
/* The bytes of the table at `table` for a payload of `size` bytes (0 if it does not fit in
 * `left`, or names more pointers than the payload has words). */
size_t kr__addrmap_table_bytes(const unsigned char *table, size_t left, size_t size);

#endif
