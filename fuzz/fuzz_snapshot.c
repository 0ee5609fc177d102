/* fuzz_snapshot.c - libFuzzer target: a snapshot file whose body is the fuzzer's bytes
 * (behind a valid magic, length and checksum, so that the parser, not the checksum, meets
 * them) is read as kairos resume reads it, up to loading the LPs: accepted or refused with
 * a message, never a crash, an overrun or a leak (see fuzz/README.md). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "base/digest.h"
#include "core/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned char *buf = malloc(size + 24);
    if (!buf) return 0;
    uint64_t len = size + 24, sum = kr__mix_bytes(0x5AA9, data, size);
    memcpy(buf, "KRSNAP01", 8);
    memcpy(buf + 8, &len, 8);
    memcpy(buf + 16, &sum, 8);
    if (size) memcpy(buf + 24, data, size);
    struct kr__error err = { 0 };
    if (kr__snapshot_parse(buf, len, &err) && !err.msg[0]) abort(); /* (a refusal says why) */
    free(buf);
    return 0;
}
