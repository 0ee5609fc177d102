/* grow.h - the one way an engine's array grows: its capacity at least doubles, the byte
 * count is checked for overflow, and running out of memory ends the run naming what was
 * being grown (kr__fatal_oom). A leaf of the base layer: anything above may use it. */
#ifndef KR_BASE_GROW_H
#define KR_BASE_GROW_H

#include <stddef.h>

/* Room for at least `need` elements of `elem` bytes in p (capacity *cap elements, which
 * grows from `first`); returns the (possibly moved) array. Call it only when full, so that
 * the check stays off the per-event path. */
void *kr__grow(void *p, size_t *cap, size_t need, size_t elem, size_t first, const char *what);

/* The same for an array variable and its size_t capacity. */
#define KR_GROW(arr, cap, need, first, what) \
    ((arr) = kr__grow((arr), &(cap), (need), sizeof *(arr), (first), (what)))

#endif
