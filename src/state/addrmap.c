/* addrmap.c - see addrmap.h. The program image comes from the dynamic linker (each loaded
 * module's PT_LOAD segments, bss included); other mapped memory from /proc/self/maps. Both
 * are read on first use, under a lock: hashing states is off the event path (the end of a
 * run, and every event only under sequential --check). Payloads are on it: they read a
 * published copy of the image table without the lock. */
#define _GNU_SOURCE
#include "state/addrmap.h"
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "base/digest.h"
#include "base/error.h"
#include "base/sanitize.h"
#include "state/seg.h"

#define MAX_RELOADS 64   /* re-reads of the maps after a miss (memory mapped since) */
#define MAX_MAPPING (64ul << 30)

struct range {
    uintptr_t lo, hi;    /* [lo, hi) */
    uintptr_t base;      /* image: the module's load address */
    uint64_t name;       /* image: hash of the module's file name (not its directory) */
    char where[80];      /* other mappings: what /proc/self/maps calls it */
};

struct table {
    struct range *r;
    size_t n, cap;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct table images, maps;
static bool loaded;
static unsigned reloads;

/* Payloads are classified on the event path, on every thread: a copy of both tables
 * published whole (never changed after, so read without the lock), with the lowest address
 * mapped when it was made - most numbers lie below it and need no look-up. A word in
 * neither table is asked of the kernel (mincore: is its page mapped?) and the tables are
 * read again only if it is (memory mapped since). Copies replaced by a reload stay until
 * kr__addrmap_reset (a reader may hold one). */
struct published {
    struct published *older;
    uintptr_t floor;
    size_t nimages, nmaps;
    struct range r[];   /* the images, then the maps */
};
static _Atomic(struct published *) pub;
_Atomic uintptr_t kr__addr_floor = KR_ADDR_USER_LO;

/* Below 4 GiB a PIE program (x86-64 Linux's default) has nothing mapped; a program built
 * without -pie keeps its image and C heap there, and valgrind the whole process. Ids,
 * counts and sums lie there too, and which of them the heap covers moves with its
 * randomised start: a payload word there that points into other mapped memory is taken
 * as a number (a refusal would strike a correct model now and then) and the first is kept
 * for one warning (kr__addrmap_low_taken). Words into the image stay named. */
#define LOW_NUMBERS 0x100000000ull

static struct {
    _Atomic int state; /* 0 none seen, 1 being written, 2 kept, 3 taken */
    uint64_t word;
    char where[80];
} low;

static void push(struct table *t, const struct range *x)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 64;
        struct range *r = realloc(t->r, cap * sizeof *r);
        /* (a shorter table would name pointers as numbers: the digest would depend on
         * addresses) */
        if (!r) kr__fatal_oom("the process's address map", cap * sizeof *r);
        t->r = r;
        t->cap = cap;
    }
    t->r[t->n++] = *x;
}

static int by_lo(const void *a, const void *b)
{
    const struct range *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int add_module(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size, (void)arg;
    const char *path = info->dlpi_name ? info->dlpi_name : "";
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    struct range x = { 0 };
    x.base = info->dlpi_addr;
    x.name = kr__mix_bytes(0x1A6E, base, strlen(base));
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *p = &info->dlpi_phdr[i];
        if (p->p_type != PT_LOAD) continue;
        x.lo = info->dlpi_addr + p->p_vaddr;
        x.hi = x.lo + p->p_memsz;
        push(&images, &x);
    }
    return 0;
}

/* A line of /proc/self/maps as a range state pointers may point into: false if it is not
 * one - state pointers point into writable memory of a sane size; a sanitizer's shadow
 * (terabytes) or a reserved, inaccessible range would make every number an address. */
static bool map_line(char *line, struct range *x)
{
    unsigned long lo, hi;
    char perms[8] = "";
    int name_at = 0;
    if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &name_at) < 3) return false;
    if (perms[0] != 'r' || perms[1] != 'w' || hi - lo > MAX_MAPPING) return false;
    *x = (struct range){ .lo = lo, .hi = hi };
    char *name = name_at ? line + name_at : line + strlen(line);
    name[strcspn(name, "\n")] = 0;
    snprintf(x->where, sizeof x->where, "%s",
             *name ? name : "anonymous memory (a thread's C library heap, another LP, a stack)");
    return true;
}

/* /proc/self/maps, or NULL if there is none; short of memory or descriptors to read it,
 * the run stops (the digest depends on it). */
static FILE *maps_open(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f && (errno == ENOMEM || errno == EMFILE || errno == ENFILE))
        kr__die("cannot read /proc/self/maps, which names the pointers in LP states for "
                "the run digest: out of memory or of file descriptors");
    return f;
}

static void read_maps(void)
{
    maps.n = 0;
    FILE *f = maps_open();
    if (!f) return; /* (no /proc: pointers into other memory count as numbers) */
    char line[512];
    struct range x;
    while (fgets(line, sizeof line, f))
        if (map_line(line, &x)) push(&maps, &x);
    fclose(f);
    qsort(maps.r, maps.n, sizeof *maps.r, by_lo);
}

/* (under the lock) */
static void publish(void)
{
    size_t n = images.n + maps.n;
    struct published *p = malloc(sizeof *p + n * sizeof *p->r);
    if (!p) kr__fatal_oom("the process's address map", sizeof *p + n * sizeof *p->r);
    p->older = atomic_load_explicit(&pub, memory_order_relaxed);
    p->nimages = images.n;
    p->nmaps = maps.n;
    memcpy(p->r, images.r, images.n * sizeof *p->r);
    memcpy(p->r + images.n, maps.r, maps.n * sizeof *p->r);
    p->floor = KR_ADDR_USER_HI;
    if (images.n) p->floor = images.r[0].lo;
    if (maps.n && maps.r[0].lo < p->floor) p->floor = maps.r[0].lo;
    atomic_store_explicit(&pub, p, memory_order_release);
    atomic_store_explicit(&kr__addr_floor, p->floor > KR_ADDR_USER_LO ? p->floor : KR_ADDR_USER_LO,
                          memory_order_relaxed);
}

static void load(void)
{
    images.n = 0;
    dl_iterate_phdr(add_module, NULL);
    qsort(images.r, images.n, sizeof *images.r, by_lo);
    read_maps();
    publish();
    loaded = true;
}

static const struct range *find(const struct table *t, uintptr_t w)
{
    size_t lo = 0, hi = t->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w < t->r[mid].lo) hi = mid;
        else if (w >= t->r[mid].hi) lo = mid + 1;
        else return &t->r[mid];
    }
    return NULL;
}

/* The mapping holding w, the process's maps read again (a few times a run at most) when
 * none does: it may have been mapped since. Under mu. */
static const struct range *find_mapped(uint64_t w)
{
    const struct range *r = find(&maps, w);
    if (!r && reloads < MAX_RELOADS) {
        reloads++;
        read_maps();
        r = find(&maps, w);
    }
    return r;
}

/* w, in no module and not in the LP region's unused part: foreign if it lies in another
 * mapping (which is named into where), else a number. */
static enum kr__addr_kind foreign(uint64_t w, char *where, size_t cap)
{
    const struct range *r = find_mapped(w);
    if (!r) return KR_ADDR_NUMBER;
    if (where && cap) snprintf(where, cap, "%s", r->where);
    return KR_ADDR_FOREIGN;
}

enum kr__addr_kind kr__addrmap_split(uint64_t w, uint64_t *name, uint64_t *offset,
                                     char *where, size_t cap)
{
    enum kr__addr_kind kind = KR_ADDR_NUMBER;
    if (!kr__addr_maybe(w)) return kind;
    pthread_mutex_lock(&mu);
    if (!loaded) load();
    const struct range *r = find(&images, w);
    if (r) {
        kind = KR_ADDR_IMAGE;
        *name = r->name;
        *offset = w - r->base;
    } else if (!kr__region_unused(w)) {
        kind = foreign(w, where, cap);
    }
    pthread_mutex_unlock(&mu);
    return kind;
}

static bool module_base(uint64_t name, uintptr_t *base)
{
    for (size_t i = 0; i < images.n; i++) {
        if (images.r[i].name != name) continue;
        *base = images.r[i].base;
        return true;
    }
    return false;
}

bool kr__addrmap_module(uint64_t name, uintptr_t *base)
{
    pthread_mutex_lock(&mu);
    if (!loaded) load();
    bool found = module_base(name, base);
    if (!found) { /* (a module loaded since the tables were read) */
        load();
        found = module_base(name, base);
    }
    pthread_mutex_unlock(&mu);
    return found;
}

uint64_t kr__addrmap_canon(uint64_t w, enum kr__addr_kind *kind, char *where, size_t cap)
{
    uint64_t name = 0, offset = 0;
    *kind = kr__addrmap_split(w, &name, &offset, where, cap);
    return *kind == KR_ADDR_IMAGE ? kr__mix(name, offset) : w;
}

void kr__addrmap_reset(void)
{
    pthread_mutex_lock(&mu);
    loaded = false;
    reloads = 0;
    atomic_store(&low.state, 0);
    struct published *p = atomic_exchange(&pub, NULL);
    atomic_store(&kr__addr_floor, KR_ADDR_USER_LO);
    while (p) {
        struct published *o = p->older;
        free(p);
        p = o;
    }
    pthread_mutex_unlock(&mu);
}

/* ---- payloads ---- */

static const struct published *published(void)
{
    const struct published *p = atomic_load_explicit(&pub, memory_order_acquire);
    if (p) return p;
    pthread_mutex_lock(&mu);
    if (!loaded) load();
    pthread_mutex_unlock(&mu);
    return atomic_load_explicit(&pub, memory_order_acquire);
}

/* The range holding w among n sorted ranges, or NULL. */
static const struct range *range_of(const struct range *r, size_t n, uintptr_t w)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (w < r[mid].lo) hi = mid;
        else if (w >= r[mid].hi) lo = mid + 1;
        else return &r[mid];
    }
    return NULL;
}

static const struct range *image_of(const struct published *p, uintptr_t w)
{
    return kr__addr_maybe(w) && w >= p->floor ? range_of(p->r, p->nimages, w) : NULL;
}

/* A word in neither published table whose page the kernel says is mapped: memory mapped
 * since they were made. Read both again (a bounded number of times) and look once more. */
static enum kr__addr_kind classify_again(const struct published **pp, uint64_t w,
                                         const struct range **m)
{
    pthread_mutex_lock(&mu);
    if (reloads < MAX_RELOADS) {
        reloads++;
        load();
    }
    pthread_mutex_unlock(&mu);
    const struct published *p = *pp = published();
    if (range_of(p->r, p->nimages, w)) return KR_ADDR_IMAGE;
    *m = range_of(p->r + p->nimages, p->nmaps, w);
    return *m ? KR_ADDR_FOREIGN : KR_ADDR_NUMBER; /* (not writable memory: as in states) */
}

/* A sanitizer's shadow (AddressSanitizer's from 2 GiB up; ThreadSanitizer's and its meta
 * memory): writable anonymous memory that no model points into, where numbers fall. */
static bool sanitizer_shadow(uint64_t w)
{
#if defined(KR_ASAN)
    return w >= 0x7fff8000ull && w < 0x10007fff8000ull;
#elif defined(KR_TSAN)
    return (w >= 0x010000000000ull && w < 0x100000000000ull) ||
           (w >= 0x300000000000ull && w < 0x400000000000ull);
#else
    (void)w;
    return false;
#endif
}

/* w in the LP region: a number past the carved areas, else an LP's state (its pages may
 * be write-protected: not in the writable maps); KR_ADDR_IMAGE (as "not decided") outside
 * the region. */
static enum kr__addr_kind in_region(uint64_t w, char *where, size_t cap)
{
    uint64_t lp;
    if (!kr__region_find((const void *)(uintptr_t)w, &lp)) return KR_ADDR_IMAGE;
    if (kr__region_unused(w)) return KR_ADDR_NUMBER;
    if (where && cap) snprintf(where, cap, "LP %llu's state (kr_malloc)", (unsigned long long)lp);
    return KR_ADDR_FOREIGN;
}

static void low_seen(uint64_t w, const char *where)
{
    int none = 0;
    if (!atomic_compare_exchange_strong(&low.state, &none, 1)) return;
    low.word = w;
    snprintf(low.where, sizeof low.where, "%s", where);
    atomic_store_explicit(&low.state, 2, memory_order_release);
}

bool kr__addrmap_low_taken(uint64_t *w, char *where, size_t cap)
{
    int kept = 2;
    if (atomic_load_explicit(&low.state, memory_order_acquire) != 2 ||
        !atomic_compare_exchange_strong(&low.state, &kept, 3))
        return false;
    *w = low.word;
    if (cap) snprintf(where, cap, "%s", low.where);
    return true;
}

/* w cannot be an address: not canonical, below the lowest mapping, or the sanitizer's. */
static bool never_address(const struct published *p, uint64_t w)
{
    return !kr__addr_maybe(w) || w < p->floor || sanitizer_shadow(w);
}

/* No page is mapped at w (the kernel says so): a number. */
static bool unmapped(uint64_t w)
{
    unsigned char in;
    return mincore((void *)(uintptr_t)(w & ~(uint64_t)4095), 1, &in) && errno == ENOMEM;
}

/* w lies in no mapping of the published list: a number if nothing is mapped there now,
 * else classified against the maps read again (named into where if foreign). */
static enum kr__addr_kind classify_unlisted(const struct published **pp, uint64_t w,
                                            char *where, size_t cap)
{
    if (unmapped(w)) return KR_ADDR_NUMBER;
    const struct range *m;
    enum kr__addr_kind k = classify_again(pp, w, &m);
    if (k != KR_ADDR_FOREIGN) return k;
    if (where && cap) snprintf(where, cap, "%s", m->where);
    return KR_ADDR_FOREIGN;
}

/* What word w of a payload is (KR_ADDR_*), by the published tables; a word in neither
 * is a number unless the kernel says its page is mapped. */
static enum kr__addr_kind classify_mapped(const struct published **pp, uint64_t w,
                                          char *where, size_t cap)
{
    const struct published *p = *pp;
    if (never_address(p, w)) return KR_ADDR_NUMBER;
    if (range_of(p->r, p->nimages, w)) return KR_ADDR_IMAGE;
    enum kr__addr_kind k = in_region(w, where, cap);
    if (k != KR_ADDR_IMAGE) return k;
    const struct range *m = range_of(p->r + p->nimages, p->nmaps, w);
    if (!m) return classify_unlisted(pp, w, where, cap);
    if (where && cap) snprintf(where, cap, "%s", m->where);
    return KR_ADDR_FOREIGN;
}

/* ...and below 4 GiB a word in other mapped memory is a number (LOW_NUMBERS). */
static enum kr__addr_kind classify(const struct published **pp, uint64_t w, char *where,
                                   size_t cap)
{
    char named[80];
    enum kr__addr_kind k = classify_mapped(pp, w, named, sizeof named);
    if (k != KR_ADDR_FOREIGN) return k;
    if (w < LOW_NUMBERS) {
        low_seen(w, named);
        return KR_ADDR_NUMBER;
    }
    if (where && cap) snprintf(where, cap, "%s", named);
    return k;
}

static uint64_t word_at(const void *p, size_t i)
{
    uint64_t w;
    memcpy(&w, (const unsigned char *)p + 8 * i, 8);
    return w;
}

int kr__addrmap_payload(const void *payload, size_t size, size_t *at, char *where, size_t cap)
{
    const struct published *p = NULL;
    int found = KR_PAYLOAD_PLAIN;
    for (size_t i = 0; i < size / 8; i++) {
        uint64_t w = word_at(payload, i);
        if (!kr__addr_maybe(w)) continue;
        if (!p) p = published();
        enum kr__addr_kind k = classify(&p, w, where, cap);
        if (k == KR_ADDR_IMAGE) found = KR_PAYLOAD_IMAGE;
        if (k != KR_ADDR_FOREIGN) continue;
        *at = 8 * i;
        return -1;
    }
    return found;
}

uint64_t kr__addrmap_mix_payload(uint64_t h, const void *payload, size_t size)
{
    const struct published *p = published();
    h = kr__mix(h, size);
    size_t i = 0;
    for (; i < size / 8; i++) {
        uint64_t w = word_at(payload, i);
        const struct range *r = image_of(p, w);
        h = kr__mix(h, r ? kr__mix(r->name, w - r->base) : w);
    }
    if (size % 8) {
        uint64_t w = 0;
        memcpy(&w, (const unsigned char *)payload + 8 * i, size % 8);
        h = kr__mix(h, w);
    }
    return h;
}

size_t kr__addrmap_export(unsigned char *payload, size_t size, unsigned char *table)
{
    const struct published *p = published();
    uint64_t n = 0;
    for (size_t i = 0; i < size / 8; i++) {
        uint64_t w = word_at(payload, i);
        const struct range *r = image_of(p, w);
        if (!r) continue;
        uint64_t off = w - r->base, pair[2] = { i, r->name };
        memcpy(payload + 8 * i, &off, 8);
        memcpy(table + 8 + 16 * n++, pair, 16);
    }
    memcpy(table, &n, 8);
    return 8 + 16 * n;
}

size_t kr__addrmap_table_bytes(const unsigned char *table, size_t left, size_t size)
{
    uint64_t n;
    if (left < 8) return 0;
    memcpy(&n, table, 8);
    if (n > size / 8 || 8 + 16 * n > left) return 0;
    return 8 + 16 * n;
}

bool kr__addrmap_import(unsigned char *payload, size_t size, const unsigned char *table,
                        uint64_t *missing)
{
    uint64_t n;
    memcpy(&n, table, 8);
    for (uint64_t k = 0; k < n; k++) {
        uint64_t pair[2], off;
        uintptr_t base;
        memcpy(pair, table + 8 + 16 * k, 16);
        if (pair[0] >= size / 8 || !kr__addrmap_module(pair[1], &base)) {
            *missing = pair[1];
            return false;
        }
        memcpy(&off, payload + 8 * pair[0], 8);
        off += base;
        memcpy(payload + 8 * pair[0], &off, 8);
    }
    return true;
}
