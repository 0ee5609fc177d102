/* mpi.c - the MPI module (kairos-mpi.so): the only code that calls MPI, loaded by net.c
 * when mpirun started several ranks. It links libmpi; the kairos executable does not.
 *
 * Threads: the workers will make the calls themselves, one at a time (the rank's network
 * turn: MPI_THREAD_SERIALIZED). A communication thread was measured and ruled out: spinning
 * beside spinning workers, a message handed to it took 10-12 ms a round trip on 2 cores
 * against 0.42 us (bench/RESULTS.md, "Kairos on a cluster"). */
#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net/net.h"

static void mpi_error(int rc, char *err, size_t cap)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "code %d", rc);
    snprintf(err, cap, "%s", s);
}

/* ---- GVT rounds: a reduction over struct kr__net_gvt ---- */
static MPI_Datatype gvt_type = MPI_DATATYPE_NULL;
static MPI_Op gvt_op = MPI_OP_NULL;

static void key_min(struct kr__key *into, const struct kr__key *k)
{
    if (kr__key_lt(k, into)) *into = *k;
}

static void gvt_combine(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    const struct kr__net_gvt *a = in;
    struct kr__net_gvt *b = inout;
    for (int i = 0; i < *len; i++) {
        key_min(&b[i].min, &a[i].min);
        if (kr__key_lt(&b[i].safe_hi, &a[i].safe_hi)) b[i].safe_hi = a[i].safe_hi;
        if (a[i].lookahead < b[i].lookahead) b[i].lookahead = a[i].lookahead;
        key_min(&b[i].err, &a[i].err);
        b[i].in_flight += a[i].in_flight;
        b[i].done += a[i].done;
        if (kr__key_lt(&b[i].max_done, &a[i].max_done)) b[i].max_done = a[i].max_done;
        b[i].flags |= a[i].flags;
    }
}

static int gvt_types(void)
{
    if (MPI_Type_contiguous((int)sizeof(struct kr__net_gvt), MPI_BYTE, &gvt_type) ||
        MPI_Type_commit(&gvt_type) || MPI_Op_create(gvt_combine, 1, &gvt_op))
        return -1;
    return 0;
}

/* A non-blocking operation's request lives on the heap (its size is the library's), handed
 * out as *req once the call that starts it succeeded; kr__net_ops.test frees it. */
static int started(MPI_Request *q, int rc, void **req)
{
    if (rc != MPI_SUCCESS) {
        free(q);
        return -1;
    }
    *req = q;
    return 0;
}

static int mpi_gvt_start(const struct kr__net_gvt *in, struct kr__net_gvt *out, void **req)
{
    MPI_Request *q = malloc(sizeof *q);
    if (!q) return -1;
    return started(q, MPI_Iallreduce(in, out, 1, gvt_type, gvt_op, MPI_COMM_WORLD, q), req);
}

static int mpi_test(void *req)
{
    int done = 0;
    if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return -1;
    if (done) free(req);
    return done;
}

/* ---- events between ranks: one tag, any source ---- */
#define TAG_EVENTS 1

static int mpi_isend(const void *buf, size_t len, int to, void **req)
{
    if (len > (size_t)INT_MAX) return -1;
    MPI_Request *q = malloc(sizeof *q);
    if (!q) return -1;
    return started(q, MPI_Isend(buf, (int)len, MPI_BYTE, to, TAG_EVENTS, MPI_COMM_WORLD, q),
                   req);
}

static int mpi_recv(void *buf, size_t cap, size_t *len, int *from)
{
    int flag = 0, n = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_EVENTS, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS)
        return -1;
    if (!flag) return 0;
    if (MPI_Get_count(&st, MPI_BYTE, &n) != MPI_SUCCESS) return -1;
    *len = (size_t)n;
    *from = st.MPI_SOURCE;
    if ((size_t)n > cap) return -2;
    /* (the probed message: from that source with that tag, none can overtake it) */
    return MPI_Recv(buf, n, MPI_BYTE, st.MPI_SOURCE, TAG_EVENTS, MPI_COMM_WORLD,
                    MPI_STATUS_IGNORE) == MPI_SUCCESS ? 1 : -1;
}

/* ---- the run's start and end: blocking, tag 2 ---- */
#define TAG_BYTES 2

static int mpi_send_bytes(const void *buf, size_t len, int to)
{
    if (len > (size_t)INT_MAX) return -1;
    return MPI_Send(buf, (int)len, MPI_BYTE, to, TAG_BYTES, MPI_COMM_WORLD) == MPI_SUCCESS ? 0
                                                                                       : -1;
}

static int mpi_recv_bytes(void **buf, size_t *len, int from)
{
    MPI_Status st;
    int n = 0;
    if (MPI_Probe(from, TAG_BYTES, MPI_COMM_WORLD, &st) != MPI_SUCCESS ||
        MPI_Get_count(&st, MPI_BYTE, &n) != MPI_SUCCESS)
        return -1;
    *buf = malloc(n ? (size_t)n : 1);
    *len = (size_t)n;
    if (!*buf) return -1;
    if (MPI_Recv(*buf, n, MPI_BYTE, from, TAG_BYTES, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
        MPI_SUCCESS)
        return 0;
    free(*buf);
    *buf = NULL;
    return -1;
}

/* Where each rank's part starts (at[i]), from their lengths; the sum of those. */
static long long offsets(const int *counts, int *at, int size)
{
    long long sum = 0;
    for (int i = 0; i < size; i++) {
        at[i] = (int)sum;
        sum += counts[i];
    }
    return sum;
}

/* Every rank's count of bytes into counts (rank 0), their offsets into at, then the bytes
 * into a buffer of *sum (*out, rank 0). An MPI status. */
static int gather_counted(const void *buf, int n, int rank, int size, int *counts, int *at,
                          long long *sum, char **out)
{
    int rc = MPI_Gather(&n, 1, MPI_INT, counts, 1, MPI_INT, 0, MPI_COMM_WORLD);
    *sum = rank == 0 ? offsets(counts, at, size) : 0;
    if (rc == MPI_SUCCESS && rank == 0 && (*sum > INT_MAX || !(*out = malloc(*sum ? *sum : 1))))
        rc = MPI_ERR_NO_MEM;
    if (rc == MPI_SUCCESS)
        rc = MPI_Gatherv(buf, n, MPI_BYTE, *out, counts, at, MPI_BYTE, 0, MPI_COMM_WORLD);
    return rc;
}

/* The counts first, then the bytes (at most INT_MAX in all: finish output and statistics). */
static int mpi_gather_bytes(const void *buf, size_t len, void **all, size_t *total)
{
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    *all = NULL;
    *total = 0;
    if (len > (size_t)INT_MAX) return -1;
    int n = (int)len, *counts = NULL, *at = NULL;
    if (rank == 0 && (!(counts = calloc((size_t)size, sizeof *counts)) ||
                      !(at = calloc((size_t)size, sizeof *at)))) {
        free(counts);
        return -1; /* (the others block in the gather: the caller aborts the job) */
    }
    long long sum = 0;
    char *out = NULL;
    int rc = gather_counted(buf, n, rank, size, counts, at, &sum, &out);
    free(counts);
    free(at);
    if (rc != MPI_SUCCESS) {
        free(out);
        return -1;
    }
    *all = out;
    *total = (size_t)sum;
    return 0;
}

static void mpi_abort(int code)
{
    MPI_Abort(MPI_COMM_WORLD, code);
}

static int mpi_init(int *rank, int *size, char *lib, size_t libcap, char *err, size_t errcap)
{
    int provided = 0;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided);
    if (rc != MPI_SUCCESS) {
        mpi_error(rc, err, errcap);
        return -1;
    }
    /* errors come back as codes, so that each is reported with what the run was doing */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    v[strcspn(v, ",\n")] = 0; /* ("Open MPI v4.1.4, package: ...": the name and version) */
    snprintf(lib, libcap, "%s", v);
    if (provided < MPI_THREAD_SERIALIZED || gvt_types()) {
        snprintf(err, errcap, "%s provides %s", lib, provided < MPI_THREAD_SERIALIZED ?
                 "no MPI_THREAD_SERIALIZED, which kairos's worker threads need" :
                 "no user-defined reduction for GVT rounds");
        MPI_Finalize();
        return -1;
    }
    return 0;
}

static void mpi_finalize(void)
{
    if (gvt_op != MPI_OP_NULL) MPI_Op_free(&gvt_op);
    if (gvt_type != MPI_DATATYPE_NULL) MPI_Type_free(&gvt_type);
    MPI_Finalize();
}

static int mpi_allgather_int(int v, int *all)
{
    return MPI_Allgather(&v, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS ? 0
                                                                                         : -1;
}

static const struct kr__net_ops ops = {
    .abi = KR_NET_ABI,
    .init = mpi_init,
    .finalize = mpi_finalize,
    .allgather_int = mpi_allgather_int,
    .gvt_start = mpi_gvt_start,
    .isend = mpi_isend,
    .test = mpi_test,
    .recv = mpi_recv,
    .send_bytes = mpi_send_bytes,
    .recv_bytes = mpi_recv_bytes,
    .gather_bytes = mpi_gather_bytes,
    .abort = mpi_abort,
};

const struct kr__net_ops *kr_net_mpi_entry(void);
const struct kr__net_ops *kr_net_mpi_entry(void)
{
    return &ops;
}
