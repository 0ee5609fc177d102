/* scan.h - kernel write tracking (userfaultfd async write-protect + PAGEMAP_SCAN) for
 * --state scan; see scan.c. */
#ifndef KR_STATE_SCAN_H
#define KR_STATE_SCAN_H

#include <stddef.h>
#include <stdint.h>

/* Register [base, base+bytes) for tracking; 0, or -1 with errno (kernel too old, or
 * userfaultfd not allowed). */
int kr__scan_init(void *base, size_t bytes);
void kr__scan_fini(void);
/* Pages of [base, base+bytes) written since the last call, reported as runs
 * mark(arg, first page, count), and write-protected again. Returns the page count, or -1. */
int64_t kr__scan_written(char *base, size_t bytes, void (*mark)(void *, uint32_t, uint32_t),
                         void *arg);

#endif
