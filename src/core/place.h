/* place.h - where an LP runs: LPs in contiguous blocks over ranks, then over a rank's
 * threads (docs/cluster.md), by one rule at both levels. Part p of `parts` owns
 * [p n / parts, (p + 1) n / parts): block sizes differ by at most one, so every part has an
 * LP when n >= parts. (Blocks of ceil(n / parts) left the last threads with none: 9 LPs on
 * 4 threads made 3, 3, 3, 0.) The optimistic engine's first mapping and its return to it
 * (migrate.c) use this; moves are a table on top (tw.h, owner).
 */
#ifndef KR_CORE_PLACE_H
#define KR_CORE_PLACE_H

#include <stdint.h>

/* The first LP of part p (p == parts: n). */
static inline uint64_t kr__block_first(unsigned p, uint64_t n, unsigned parts)
{
    return (uint64_t)((unsigned __int128)p * n / parts);
}

/* The part that owns LP id (id < n). */
static inline unsigned kr__block_of(uint64_t id, uint64_t n, unsigned parts)
{
    return (unsigned)(((unsigned __int128)(id + 1) * parts - 1) / n);
}

#endif
