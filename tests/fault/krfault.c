/* krfault.c - fault injection for the tests (tests/e2e/faults.py, issue 17), preloaded
 * into the kairos command (LD_PRELOAD), as SQLite's tests fail its N-th allocation:
 *
 *   KR_FAULT=alloc:N   the N-th allocation of the process fails (malloc, calloc, realloc,
 *                      aligned_alloc, posix_memalign, mmap of anonymous memory; the C
 *                      library's own calls to malloc count too: strdup, fopen, ...)
 *   KR_FAULT=write:N   the N-th write that is not to stderr fails with ENOSPC (write(),
 *                      pwrite(), or fwrite(), which leaves its stream's error flag set as a
 *                      real failure does)
 *   KR_FAULT=count     nothing fails; at exit "krfault: A allocations, W writes" on stderr
 *
 * Only the N-th fails (the next succeed again): the failure must end in a clear error or
 * be absorbed, never in a crash, a hang or silent damage. Until dlsym has found the real
 * functions, allocations come from a small static buffer (dlsym itself allocates), which
 * free() recognises. Calls from any thread count, so runs on one thread fail at a
 * reproducible site. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static void *(*real_malloc)(size_t);
static void *(*real_calloc)(size_t, size_t);
static void *(*real_realloc)(void *, size_t);
static void (*real_free)(void *);
static void *(*real_aligned_alloc)(size_t, size_t);
static int (*real_posix_memalign)(void **, size_t, size_t);
static void *(*real_mmap)(void *, size_t, int, int, int, off_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static size_t (*real_fwrite)(const void *, size_t, size_t, FILE *);

enum { OFF, ALLOC, WRITE, COUNT };
static int mode = OFF;
static uint64_t target;
static _Atomic uint64_t nalloc, nwrite;
static _Atomic int ready; /* 0: not yet, 1: finding the real functions, 2: found */

static _Alignas(16) char boot[65536];
static _Atomic size_t boot_used;

static void *boot_alloc(size_t n)
{
    size_t at = atomic_fetch_add(&boot_used, (n + 15) & ~(size_t)15);
    return at + n <= sizeof boot ? boot + at : NULL;
}

static int in_boot(const void *p)
{
    return (const char *)p >= boot && (const char *)p < boot + sizeof boot;
}

static void report(void)
{
    char line[96];
    int n = snprintf(line, sizeof line, "krfault: %llu allocations, %llu writes\n",
                     (unsigned long long)atomic_load(&nalloc),
                     (unsigned long long)atomic_load(&nwrite));
    if (real_write && n > 0) real_write(2, line, (size_t)n);
}

static void setup(void)
{
    int expect = 0;
    if (!atomic_compare_exchange_strong(&ready, &expect, 1)) {
        while (atomic_load(&ready) != 2) {
        }
        return;
    }
    real_malloc = dlsym(RTLD_NEXT, "malloc");
    real_calloc = dlsym(RTLD_NEXT, "calloc");
    real_realloc = dlsym(RTLD_NEXT, "realloc");
    real_free = dlsym(RTLD_NEXT, "free");
    real_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
    real_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
    real_mmap = dlsym(RTLD_NEXT, "mmap");
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_fwrite = dlsym(RTLD_NEXT, "fwrite");
    atomic_store(&ready, 2);
}

/* KR_FAULT, read at the first call once the environment is there (a sanitizer's runtime
 * allocates before the C library has set it up); calls before count all the same. */
static _Atomic int parsed;
extern char **environ;

static void parse(void)
{
    int expect = 0;
    if (atomic_load(&parsed) == 2 || !environ || !atomic_compare_exchange_strong(&parsed,
                                                                                 &expect, 1))
        return;
    const char *f = getenv("KR_FAULT");
    if (f && !strncmp(f, "alloc:", 6)) target = strtoull(f + 6, NULL, 10), mode = ALLOC;
    else if (f && !strncmp(f, "write:", 6)) target = strtoull(f + 6, NULL, 10), mode = WRITE;
    else if (f && !strcmp(f, "count")) mode = COUNT;
    if (mode == COUNT) atexit(report);
    atomic_store(&parsed, 2);
}

static int booting(void)
{
    if (atomic_load(&ready) == 2) return 0;
    if (atomic_load(&ready) == 1) return 1; /* (dlsym, from setup, allocating) */
    setup();
    return 0;
}

static int mode_now(void)
{
    if (atomic_load(&parsed) != 2) parse();
    return atomic_load(&parsed) == 2 ? mode : OFF;
}

/* Does this allocation fail? */
static int fail_alloc(void)
{
    uint64_t n = atomic_fetch_add(&nalloc, 1) + 1;
    if (mode_now() != ALLOC || n != target) return 0;
    errno = ENOMEM;
    return 1;
}

static int fail_write(void)
{
    uint64_t n = atomic_fetch_add(&nwrite, 1) + 1;
    if (mode_now() != WRITE || n != target) return 0;
    errno = ENOSPC;
    return 1;
}

void *malloc(size_t n)
{
    if (booting()) return boot_alloc(n);
    return fail_alloc() ? NULL : real_malloc(n);
}

void *calloc(size_t n, size_t size)
{
    if (booting()) return boot_alloc(n * size); /* (zeroed: static) */
    return fail_alloc() ? NULL : real_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
    if (booting() || in_boot(p)) {
        void *q = booting() ? boot_alloc(n) : real_malloc(n);
        size_t left = p ? (size_t)(boot + sizeof boot - (char *)p) : 0; /* (its size is not */
        if (q && p) memcpy(q, p, n < left ? n : left);                  /* kept: at most) */
        return q;
    }
    if (n && fail_alloc()) return NULL;
    return real_realloc(p, n);
}

void free(void *p)
{
    if (!p || in_boot(p)) return;
    if (booting()) return;
    real_free(p);
}

void *aligned_alloc(size_t align, size_t n)
{
    if (booting()) return NULL;
    return fail_alloc() ? NULL : real_aligned_alloc(align, n);
}

int posix_memalign(void **p, size_t align, size_t n)
{
    if (booting()) return ENOMEM;
    return fail_alloc() ? ENOMEM : real_posix_memalign(p, align, n);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    if (booting()) return MAP_FAILED;
    if ((flags & MAP_ANONYMOUS) && fail_alloc()) return MAP_FAILED;
    return real_mmap(addr, len, prot, flags, fd, off);
}

ssize_t write(int fd, const void *buf, size_t n)
{
    if (booting()) return -1;
    if (fd != 2 && fail_write()) return -1;
    return real_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
    if (booting()) return -1;
    if (fd != 2 && fail_write()) return -1;
    return real_pwrite(fd, buf, n, off);
}

size_t fwrite(const void *buf, size_t size, size_t n, FILE *f)
{
    if (booting()) return 0;
    if (f != stderr && size && n && fail_write()) {
        f->_flags |= _IO_ERR_SEEN; /* (as the C library leaves a stream a write failed on) */
        return 0;
    }
    return real_fwrite(buf, size, n, f);
}
