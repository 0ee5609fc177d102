/* test_output.c - committed output: rollback drops only records at or after the key,
 * records move to the committed buffer below the horizon, and printing orders them by key
 * and by order within one event, kr_commit records after the event's text. */
#include "check.h"
#include "stats/output.h"

/* (a record is written as [its bytes]) */
static void to_file(void *f, const struct kr__outrec *o)
{
    if (o->part & KR_OUT_RECORD) fputc('[', f);
    fwrite(o->text, 1, o->len, f);
    if (o->part & KR_OUT_RECORD) fputc(']', f);
}

static struct kr__key key(double ts, uint64_t src, uint64_t seq)
{
    struct kr__key k = { ts, 0, 0, src, seq };
    return k;
}

int main(void)
{
    struct kr__outvec lp = { 0 }, sink = { 0 };
    struct kr__key k1 = key(1, 0, 0), k2 = key(2, 0, 1), k3 = key(3, 0, 2);
    kr__outvec_add(&lp, &k1, "a1\n", 3);
    kr__outvec_add(&lp, &k1, "a2\n", 3);
    kr__outvec_add(&lp, &k2, "b\n", 2);
    kr__outvec_add(&lp, &k3, "c\n", 2);
    CHECK(lp.n == 4 && lp.r[1].part == 1);
    kr__outvec_drop_from(&lp, &k2); /* rollback to before k2 */
    CHECK(lp.n == 2);
    kr__outvec_add(&lp, &k3, "c'\n", 3);
    struct kr__key h = key(2.5, 0, 0);
    kr__outvec_move_before(&lp, &h, &sink);
    CHECK(sink.n == 2 && lp.n == 1);
    struct kr__outvec other = { 0 };
    struct kr__key k0 = key(1, 0, 0);
    k0.ts = 0.5;
    kr__outvec_add(&other, &k0, "z\n", 2);
    kr__outvec_add_record(&other, &k0, "R", 1);  /* (made between two texts of one event) */
    kr__outvec_add(&other, &k0, "y\n", 2);
    kr__outvec_add_record(&other, &k0, "S", 1);
    CHECK(other.r[1].part == (KR_OUT_RECORD | 1) && other.r[2].part == 2);
    kr__outvec_move_before(&other, &h, &sink);
    FILE *f = tmpfile();
    kr__outvec_emit_before(&sink, &h, to_file, f);
    rewind(f);
    char buf[64] = { 0 };
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    CHECK(n == 16);
    CHECK(strcmp(buf, "z\ny\n[R][S]a1\na2\n") == 0);
    CHECK(sink.n == 0);
    kr__outvec_free(&lp);
    kr__outvec_free(&sink);
    kr__outvec_free(&other);
    return check_done("output");
}
