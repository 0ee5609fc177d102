/* test_pool.c - event pools: classes by payload size, LIFO reuse (the event just freed is the
 * next one handed out: it is hot in cache), no overlap between live events, growth by slabs. */
#include "check.h"
#include "msg/pool.h"

int main(void)
{
    struct kr__pool p;
    kr__pool_init(&p);
    CHECK(kr__pool_class(0) == 0);
    CHECK(kr__pool_class(KR_POOL_SMALL_PAYLOAD) == 0);
    CHECK(kr__pool_class(KR_POOL_SMALL_PAYLOAD + 1) == 1);
    struct kr__ev *mid = kr__pool_get(&p, KR_POOL_SMALL_PAYLOAD + 1);
    CHECK(mid->cls == 1);
    kr__pool_put(&p, mid);
    CHECK(kr__pool_class(KR_PAYLOAD_MAX) == 3);
    struct kr__ev *a = kr__pool_get(&p, 8);
    CHECK(a->cls == 0);
    kr__pool_put(&p, a);
    CHECK(kr__pool_get(&p, 8) == a);
    enum { N = 5000 };
    static struct kr__ev *live[N];
    for (int i = 0; i < N; i++) {
        size_t payload = (size_t)(i % 4) * 300;
        live[i] = kr__pool_get(&p, payload);
        CHECK(live[i]->cls == kr__pool_class(payload));
        memset(live[i]->payload, i & 0xff, payload);
        live[i]->size = (uint32_t)payload;
    }
    for (int i = 0; i < N; i++)
        for (uint32_t j = 0; j < live[i]->size; j++) CHECK(live[i]->payload[j] == (unsigned char)(i & 0xff));
    CHECK(p.live == N + 1);
    for (int i = 0; i < N; i++) kr__pool_put(&p, live[i]);
    kr__pool_put(&p, a);
    CHECK(p.live == 0);
    size_t bytes = p.bytes;
    for (int i = 0; i < N; i++) live[i] = kr__pool_get(&p, (size_t)(i % 4) * 300);
    CHECK(p.bytes == bytes); /* reuse, no growth */
    kr__pool_destroy(&p);
    return check_done("pool");
}
