/* fuzz_options.c - libFuzzer target: the command line of 'kairos run' (options.c), the
 * fuzzer's bytes cut at NUL bytes into arguments: every option and -P value is read or
 * refused with a message, never a crash, an overrun or a leak, and what is read prints as
 * the --stats "config" object (see fuzz/README.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "run/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    char *argv[64];
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0;
    int argc = 0;
    for (char *p = text; p <= text + size && argc < 64; p += strlen(p) + 1) argv[argc++] = p;
    struct kr__config c = { .model = "phold" };
    struct kr__error err = { 0 };
    int rc = kr__options_defaults(&c, &err);
    for (int i = 0; !rc && i < argc; i++) rc = kr__option_parse(&c, argc, argv, &i, &err);
    if (!rc) rc = kr__options_finish(&c, 2, &err);
    if (rc && !err.msg[0]) abort(); /* (a refusal says why) */
    if (!rc) {
        FILE *f = fopen("/dev/null", "w");
        if (f) {
            kr__options_json(f, &c);
            fclose(f);
        }
    }
    kr__options_free(&c);
    free(text);
    return 0;
}
