/* fuzz_image.c - libFuzzer target: whatever bytes reach the state-image loader
 * (state/image.h) are loaded or refused with a reason, never a crash, an overrun or a leak
 * (built with AddressSanitizer; see fuzz/README.md). */
#include <stdint.h>
#include <stdlib.h>
#include "state/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kr__arena a;
    kr__arena_init(&a, 0, KR_STATE_FULL, NULL);
    void *root = NULL, *aux = NULL;
    const char *why = NULL;
    size_t used = kr__image_load(&a, data, size, &root, &aux, &why);
    if (!used && !why) abort(); /* (a refusal always says why) */
    if (used) { /* a loaded image saves again, and that loads into the same state */
        struct kr__bytes out = { 0 };
        struct kr__alien al = { 0 };
        if (kr__image_save(&a, root, aux, &out, &al)) {
            struct kr__arena b;
            kr__arena_init(&b, 0, KR_STATE_FULL, NULL);
            void *rb = NULL, *xb = NULL;
            if (kr__image_load(&b, out.p, out.n, &rb, &xb, &why) != out.n ||
                kr__arena_hash(&a, root, NULL) != kr__arena_hash(&b, rb, NULL) ||
                kr__arena_hash(&a, aux, NULL) != kr__arena_hash(&b, xb, NULL))
                abort();
            kr__arena_destroy(&b);
        }
        kr__bytes_free(&out);
    }
    kr__arena_destroy(&a);
    return 0;
}
