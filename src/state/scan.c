/* scan.c - kernel-side write tracking for --state scan (Linux >= 6.7), and its entry of the
 * mode table (mode.h): the whole region is registered with userfaultfd in asynchronous
 * write-protect mode, so the first write to a protected page is resolved inside the kernel
 * (a minor fault: no signal, no mprotect, no split of the mapping), and the PAGEMAP_SCAN
 * ioctl of /proc/self/pagemap returns the pages written since the last scan and
 * write-protects them again, in one call per checkpoint. The same incremental checkpoints
 * as page mode, without its per-page signal + mprotect cost. The interface is declared here
 * because Debian's kernel headers predate it (the layouts are the kernel's stable ABI). */
#include "state/scan.h"
#include "state/mode.h"
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

struct pm_page_region {
    uint64_t start, end, categories;
};

struct pm_scan_arg {
    uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
    uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};

#define KR_PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define KR_PAGE_IS_WRITTEN (1u << 1)
#define KR_PM_SCAN_WP_MATCHING (1u << 0)
#define KR_PM_SCAN_CHECK_WPASYNC (1u << 1)
#define KR_UFFD_FEATURE_WP_UNPOPULATED (1ull << 13)
#define KR_UFFD_FEATURE_WP_ASYNC (1ull << 15)
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static int uffd = -1, pagemap = -1;

int kr__scan_init(void *base, size_t bytes)
{
    uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
    if (uffd < 0) return -1;
    struct uffdio_api api = { .api = UFFD_API,
                              .features =
                                  KR_UFFD_FEATURE_WP_ASYNC | KR_UFFD_FEATURE_WP_UNPOPULATED };
    struct uffdio_register reg = { .range = { (uint64_t)(uintptr_t)base, bytes },
                                   .mode = UFFDIO_REGISTER_MODE_WP };
    if (ioctl(uffd, UFFDIO_API, &api) || ioctl(uffd, UFFDIO_REGISTER, &reg) ||
        (pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC)) < 0) {
        int e = errno;
        kr__scan_fini();
        errno = e;
        return -1;
    }
    return 0;
}

void kr__scan_fini(void)
{
    if (pagemap >= 0) close(pagemap);
    if (uffd >= 0) close(uffd);
    pagemap = uffd = -1;
}

int64_t kr__scan_written(char *base, size_t bytes, void (*mark)(void *, uint32_t, uint32_t),
                         void *arg)
{
    struct pm_page_region vec[32];
    uint64_t start = (uint64_t)(uintptr_t)base, end = start + bytes;
    int64_t pages = 0;
    while (start < end) {
        struct pm_scan_arg a = {
            .size = sizeof a, .flags = KR_PM_SCAN_WP_MATCHING | KR_PM_SCAN_CHECK_WPASYNC,
            .start = start, .end = end, .vec = (uint64_t)(uintptr_t)vec, .vec_len = 32,
            .category_mask = KR_PAGE_IS_WRITTEN, .return_mask = KR_PAGE_IS_WRITTEN,
        };
        long n = ioctl(pagemap, KR_PAGEMAP_SCAN, &a);
        if (n < 0) return -1;
        for (long i = 0; i < n; i++) {
            uint32_t first = (uint32_t)((vec[i].start - (uint64_t)(uintptr_t)base) >> 12);
            uint32_t count = (uint32_t)((vec[i].end - vec[i].start) >> 12);
            mark(arg, first, count);
            pages += count;
        }
        if (a.walk_end <= start) return -1; /* no progress: should not happen */
        start = a.walk_end;
    }
    return pages;
}

/* ---- --state scan ---- */

static void scan_summary(FILE *f, uint64_t faults, uint64_t mprotects)
{
    (void)faults;
    fprintf(f, "  page tracking:    by the kernel, %llu scans\n", (unsigned long long)mprotects);
}

const struct kr__state_ops kr__state_scan = {
    .name = "scan", .id = KR_STATE_SCAN, .region = true, .incremental = true,
    .by_pages = true, .track = &kr__page_track, .region_open = kr__scan_init,
    .region_close = kr__scan_fini, .before_take = kr__seg_collect, .summary = scan_summary,
};
