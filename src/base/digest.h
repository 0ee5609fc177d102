/* digest.h - the 64-bit mixing used by run digests (determinism checks, not cryptography). */
#ifndef KR_BASE_DIGEST_H
#define KR_BASE_DIGEST_H

#include <stdint.h>
#include <string.h>

static inline uint64_t kr__mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 27;
    return h;
}

/* The words of p[0, n) into h (a tail under 8 bytes zero-padded): bytes fed in pieces of
 * whole words give what one call over all of them gives. */
static inline uint64_t kr__mix_words(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, c, 8);
        h = kr__mix(h, w);
        c += 8;
        n -= 8;
    }
    if (n) {
        uint64_t w = 0;
        memcpy(&w, c, n);
        h = kr__mix(h, w);
    }
    return h;
}

static inline uint64_t kr__mix_bytes(uint64_t h, const void *p, size_t n)
{
    return kr__mix_words(kr__mix(h, n), p, n);
}

#endif
