/* fuzz_json.c - libFuzzer target: the strings the --stats writer puts in its JSON (model
 * paths and names, parameter names and values, host and CPU names: kr__json_str). For any
 * bytes (up to the first NUL) the output must be one JSON string: quoted, UTF-8, no raw
 * control character, every escape one JSON knows; and reading the escapes back (\u00XX as
 * the byte XX) must give the input (see fuzz/README.md). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "run/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hex(int c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Well-formed UTF-8 at s[0, n)? (The same rules as RFC 3629.) */
static int utf8_ok(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t k = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 :
                   c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        if (!k || i + k > n) return 0;
        for (size_t j = 1; j < k; j++)
            if ((s[i + j] & 0xC0) != 0x80) return 0;
        if ((c == 0xE0 && s[i + 1] < 0xA0) || (c == 0xED && s[i + 1] > 0x9F) ||
            (c == 0xF0 && s[i + 1] < 0x90) || (c == 0xF4 && s[i + 1] > 0x8F))
            return 0;
        i += k;
    }
    return 1;
}

/* out[0, n) as a JSON string read back into dec (escapes undone; \u00XX as the byte XX,
 * which is what the writer makes of a byte that is not UTF-8, and of a control byte);
 * returns the decoded length, aborting on anything JSON does not allow or the writer does
 * not write. */
static size_t read_back(const unsigned char *out, size_t n, unsigned char *dec)
{
    if (n < 2 || out[0] != '"' || out[n - 1] != '"' || !utf8_ok(out, n)) abort();
    size_t m = 0;
    for (size_t i = 1; i < n - 1; i++) {
        unsigned char c = out[i];
        if (c < 0x20 || c == '"') abort();
        if (c != '\\') {
            dec[m++] = c;
            continue;
        }
        if (++i >= n - 1) abort();
        if (out[i] == '"' || out[i] == '\\' || out[i] == '/') {
            dec[m++] = out[i];
        } else if (out[i] == 'u' && i + 4 < n - 1) {
            int v = 0;
            for (int k = 1; k <= 4; k++) {
                int h = hex(out[i + k]);
                if (h < 0) abort();
                v = v * 16 + h;
            }
            if (v > 0xFF) abort(); /* (the writer escapes single bytes only) */
            dec[m++] = (unsigned char)v;
            i += 4;
        } else {
            abort(); /* (\b \f \n \r \t: JSON's, but the writer uses \u00XX for them) */
        }
    }
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *in = malloc(size + 1);
    if (!in) return 0;
    memcpy(in, data, size);
    in[size] = 0;
    char *out = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&out, &n);
    if (!f) {
        free(in);
        return 0;
    }
    kr__json_str(f, in);
    fclose(f);
    unsigned char *dec = malloc(n + 1);
    if (dec) {
        size_t m = read_back((const unsigned char *)out, n, dec), len = strlen(in);
        if (m != len || memcmp(dec, in, len)) abort(); /* (nothing lost or changed) */
        free(dec);
    }
    free(out);
    free(in);
    return 0;
}
