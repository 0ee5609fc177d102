/* addrmap.c - see addrmap.h. The program image comes from the dynamic linker (each loaded
 * module's PT_LOAD segments, bss included); other mapped memory from /proc/self/maps. Both
 * are read on first use, under a lock: hashing states is off the event path (the end of a
 * run, and every event only under sequential --check). */
#define _GNU_SOURCE
#include "state/addrmap.h"
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/digest.h"
#include "core/error.h"
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

static void read_maps(void)
{
    maps.n = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f && (errno == ENOMEM || errno == EMFILE || errno == ENFILE))
        kr__die("cannot read /proc/self/maps, which names the pointers in LP states for "
                "the run digest: out of memory or of file descriptors");
    if (!f) return; /* (no /proc: pointers into other memory count as numbers) */
    char line[512];
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char perms[8] = "";
        int name_at = 0;
        if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %n", &lo, &hi, perms, &name_at) < 3) continue;
        /* State pointers point into writable memory of a sane size; a sanitizer's shadow
         * (terabytes) or a reserved, inaccessible range would make every number an address. */
        if (perms[0] != 'r' || perms[1] != 'w' || hi - lo > MAX_MAPPING) continue;
        struct range x = { .lo = lo, .hi = hi };
        char *name = name_at ? line + name_at : line + strlen(line);
        name[strcspn(name, "\n")] = 0;
        snprintf(x.where, sizeof x.where, "%s",
                 *name ? name
                       : "anonymous memory (a thread's C library heap, another LP, a stack)");
        push(&maps, &x);
    }
    fclose(f);
    qsort(maps.r, maps.n, sizeof *maps.r, by_lo);
}

static void load(void)
{
    images.n = 0;
    dl_iterate_phdr(add_module, NULL);
    qsort(images.r, images.n, sizeof *images.r, by_lo);
    read_maps();
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
        r = find(&maps, w);
        if (!r && reloads < MAX_RELOADS) {
            reloads++;
            read_maps();
            r = find(&maps, w);
        }
        if (r) {
            kind = KR_ADDR_FOREIGN;
            if (where && cap) snprintf(where, cap, "%s", r->where);
        }
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
    pthread_mutex_unlock(&mu);
}
