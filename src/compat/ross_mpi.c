/* ross_mpi.c - the ROSS layer's stand-in for the MPI calls ROSS models make around tw_run
 * (ross.h: MPI_Reduce, MPI_Allreduce, MPI_Barrier): reductions of a few typed values over
 * Kairos's transport between the processes (net/net.h), which the layer keeps open until
 * tw_end (kr__net_keep). One process: a copy. Every rank gathers its values to rank 0,
 * which reduces them in rank order (the same result on every run) and, for an allreduce or
 * another root, sends the result on. Values are combined as long doubles, which hold every
 * 64-bit integer and every double exactly. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ross.h"
#include "compat/ross_int.h"
#include "net/net.h"

#define ROSS_LOADER(name, T)                                                               \
    static long double load_##name(const void *p)                                          \
    {                                                                                      \
        T x;                                                                               \
        memcpy(&x, p, sizeof x);                                                           \
        return (long double)x;                                                             \
    }                                                                                      \
    static void store_##name(void *p, long double v)                                       \
    {                                                                                      \
        T x = (T)v;                                                                        \
        memcpy(p, &x, sizeof x);                                                           \
    }
ROSS_LOADER(u8, uint8_t)
ROSS_LOADER(i32, int32_t)
ROSS_LOADER(u32, uint32_t)
ROSS_LOADER(f32, float)
ROSS_LOADER(i64, int64_t)
ROSS_LOADER(u64, uint64_t)
ROSS_LOADER(f64, double)
ROSS_LOADER(f80, long double)

static const struct mpi_type {
    size_t size;
    long double (*load)(const void *);
    void (*store)(void *, long double);
} mpi_types[] = {
    [MPI_CHAR] = { 1, load_u8, store_u8 },           [MPI_BYTE] = { 1, load_u8, store_u8 },
    [MPI_INT] = { 4, load_i32, store_i32 },          [MPI_UNSIGNED] = { 4, load_u32, store_u32 },
    [MPI_FLOAT] = { 4, load_f32, store_f32 },        [MPI_LONG] = { 8, load_i64, store_i64 },
    [MPI_UNSIGNED_LONG] = { 8, load_u64, store_u64 }, [MPI_LONG_LONG] = { 8, load_i64, store_i64 },
    [MPI_UNSIGNED_LONG_LONG] = { 8, load_u64, store_u64 },
    [MPI_DOUBLE] = { 8, load_f64, store_f64 },
    [MPI_LONG_DOUBLE] = { sizeof(long double), load_f80, store_f80 },
};

static const struct mpi_type *type_of(MPI_Datatype t)
{
    if (t < 1 || (size_t)t >= sizeof mpi_types / sizeof mpi_types[0])
        ross_die("MPI_Reduce: datatype %d is not one the stand-in knows (MPI_INT, MPI_LONG, "
                 "MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_DOUBLE ...)", t);
    return &mpi_types[t];
}

static long double apply(long double a, long double b, MPI_Op op)
{
    switch (op) {
    case MPI_SUM: return a + b;
    case MPI_PROD: return a * b;
    case MPI_MAX: return b > a ? b : a;
    case MPI_MIN: return b < a ? b : a;
    }
    ross_die("MPI_Reduce: op %d is not MPI_SUM, MPI_MAX, MPI_MIN or MPI_PROD", op);
}

/* At rank 0: every rank's `count` values (len bytes each, in rank order) reduced into acc. */
static void reduce_all(char *acc, const char *every, size_t len, int count,
                       const struct mpi_type *t, MPI_Op op)
{
    memcpy(acc, every, len);
    for (int r = 1; r < kr__net.size; r++)
        for (int i = 0; i < count; i++) {
            char *a = acc + (size_t)i * t->size;
            t->store(a, apply(t->load(a), t->load(every + (size_t)r * len +
                                                  (size_t)i * t->size), op));
        }
}

/* Rank 0 sends the result to the ranks that want it (root, or every rank). */
static void send_result(const void *out, size_t len, int root, bool all)
{
    for (int r = 1; r < kr__net.size; r++)
        if ((all || r == root) && kr__net.ops->send_bytes(out, len, r))
            ross_die("MPI_Reduce: sending the result to rank %d failed", r);
}

static void take_result(void *out, size_t len)
{
    void *b = NULL;
    size_t n = 0;
    if (kr__net.ops->recv_bytes(&b, &n, 0) || n != len)
        ross_die("MPI_Reduce: the result from rank 0 did not arrive");
    memcpy(out, b, len);
    free(b);
}

/* Rank 0: the result, its own if it wants it, and sent to the ranks that do. */
static void at_root(void *out, const char *every, size_t len, int count,
                    const struct mpi_type *t, MPI_Op op, int root, bool all)
{
    char *acc = malloc(len ? len : 1);
    if (!acc) ross_die("MPI_Reduce: out of memory");
    reduce_all(acc, every, len, count, t, op);
    if (all || root == 0) memcpy(out, acc, len);
    send_result(acc, len, root, all);
    free(acc);
}

/* A reduction over one rank: its own values. */
static int reduce_alone(const void *in, void *out, size_t len)
{
    if (len && in != out) memmove(out, in, len);
    return MPI_SUCCESS;
}

int ross_mpi_reduce(const void *in, void *out, int count, MPI_Datatype type, MPI_Op op,
                    int root, bool all)
{
    const struct mpi_type *t = type_of(type);
    size_t len = (size_t)(count > 0 ? count : 0) * t->size;
    if (!kr__net.ops || kr__net.size < 2) return reduce_alone(in, out, len);
    void *every = NULL;
    size_t total = 0;
    if (kr__net.ops->gather_bytes(in, len, &every, &total))
        ross_die("MPI_Reduce: gathering the ranks' values failed");
    if (kr__net.rank == 0) at_root(out, every, len, count, t, op, root, all);
    else if (all || kr__net.rank == root) take_result(out, len);
    free(every);
    return MPI_SUCCESS;
}

int ross_mpi_barrier(void)
{
    int x = 0, y = 0;
    return ross_mpi_reduce(&x, &y, 1, MPI_INT, MPI_SUM, 0, true);
}
