/* mpi.c - the MPI module (kairos-mpi.so): the only code that calls MPI, loaded by net.c
 * when mpirun started several ranks. It links libmpi; the kairos executable does not.
 *
 * Threads: the main thread initialises MPI and makes every call so far (MPI_THREAD_FUNNELED).
 * How the engine's workers will reach the network - a communication thread, or workers
 * taking turns - is to be chosen from measurements with the transport. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include "net/net.h"

static void mpi_error(int rc, char *err, size_t cap)
{
    char s[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS) snprintf(s, sizeof s, "code %d", rc);
    snprintf(err, cap, "%s", s);
}

static int mpi_init(int *rank, int *size, char *lib, size_t libcap, char *err, size_t errcap)
{
    int provided = 0;
    int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
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
    if (provided < MPI_THREAD_FUNNELED) {
        snprintf(err, errcap, "%s provides no thread support (MPI_THREAD_FUNNELED), which "
                 "kairos's worker threads need", lib);
        MPI_Finalize();
        return -1;
    }
    return 0;
}

static void mpi_finalize(void)
{
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
};

const struct kr__net_ops *kr_net_mpi_entry(void);
const struct kr__net_ops *kr_net_mpi_entry(void)
{
    return &ops;
}
