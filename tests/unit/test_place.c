/* test_place.c - LPs in blocks: every LP in exactly one part, the parts contiguous and in
 * order, sizes within one of each other (so no part is empty when there are enough LPs),
 * and the same answer from kr__block_of as from the blocks' bounds, up to huge counts. */
#include "check.h"
#include "core/place.h"

static void check_split(uint64_t n, unsigned parts)
{
    uint64_t lo = n / parts, hi = (n + parts - 1) / parts;
    for (unsigned p = 0; p < parts; p++) {
        uint64_t a = kr__block_first(p, n, parts), b = kr__block_first(p + 1, n, parts);
        CHECK(a <= b && b - a >= lo && b - a <= hi);
        if (n >= parts) CHECK(b > a);
        if (b > a) CHECK(kr__block_of(a, n, parts) == p && kr__block_of(b - 1, n, parts) == p);
    }
    CHECK(kr__block_first(0, n, parts) == 0 && kr__block_first(parts, n, parts) == n);
}

int main(void)
{
    for (uint64_t n = 1; n <= 300; n++)
        for (unsigned parts = 1; parts <= 17; parts++) {
            check_split(n, parts);
            for (uint64_t id = 0; id < n; id++) { /* every LP, against the bounds */
                unsigned p = kr__block_of(id, n, parts);
                CHECK(p < parts && kr__block_first(p, n, parts) <= id &&
                      id < kr__block_first(p + 1, n, parts));
            }
        }
    CHECK(kr__block_of(8, 9, 4) == 3 && kr__block_first(3, 9, 4) == 6); /* 2, 2, 2, 3 */
    check_split(1ull << 40, 3);
    check_split((1ull << 62) + 12345, 1000);
    return check_done("place");
}
