/* mpi_pingpong.c - what a message between two MPI ranks costs on this machine, for the
 * choice of how Kairos's workers reach the network (issue 15, docs/cluster.md):
 *
 *   funneled  the thread that runs events also polls MPI (MPI_Isend, MPI_Test): the round
 *             trip of one message of each size
 *   handoff   a communication thread per rank makes every MPI call (MPI_THREAD_MULTIPLE);
 *             the event thread hands it each message through one shared cache line and
 *             waits for the reply the same way: the round trip with both handoffs
 *   stream    rank 0 sends batches of 64-byte events aggregated into one message of each
 *             size, rank 1 receives: events per second
 *
 *   mpirun -np 2 kr_mpi_pingpong [ROUNDS]       (prints medians and 10th/90th percentiles)
 */
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define BATCH 10
static int rank;
static long rounds = 20000;   /* (the handoff mode runs a hundredth of them) */
static char *buf;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Post a receive and poll it to completion (what a worker's loop turn would do). */
static void poll_recv(int size, int from)
{
    MPI_Request q;
    MPI_Irecv(buf, size, MPI_BYTE, from, 0, MPI_COMM_WORLD, &q);
    int done = 0;
    while (!done) MPI_Test(&q, &done, MPI_STATUS_IGNORE);
}

static void send_one(int size, int to)
{
    MPI_Request q;
    MPI_Isend(buf, size, MPI_BYTE, to, 0, MPI_COMM_WORLD, &q);
    int done = 0;
    while (!done) MPI_Test(&q, &done, MPI_STATUS_IGNORE);
}

static void bounce(int size)
{
    if (rank == 0) {
        send_one(size, 1);
        poll_recv(size, 1);
    } else {
        poll_recv(size, 0);
        send_one(size, 0);
    }
}

/* ---- handoff: a communication thread makes the calls ---- */
static _Alignas(64) _Atomic int req;      /* event thread -> comm thread: size to bounce */
static _Alignas(64) _Atomic int ack;      /* comm thread -> event thread: done */
static _Atomic int quit;

static void *comm_main(void *arg)
{
    (void)arg;
    for (;;) {
        int s;
        while (!(s = atomic_load_explicit(&req, memory_order_acquire)))
            if (atomic_load(&quit)) return NULL;
        atomic_store_explicit(&req, 0, memory_order_relaxed);
        bounce(s);
        atomic_store_explicit(&ack, 1, memory_order_release);
    }
}

static void bounce_handoff(int size)
{
    atomic_store_explicit(&req, size, memory_order_release);
    while (!atomic_load_explicit(&ack, memory_order_acquire)) {}
    atomic_store_explicit(&ack, 0, memory_order_relaxed);
}

static void latency(const char *mode, int size, void (*fn)(int), long rounds)
{
    long nb = rounds / BATCH;
    uint64_t *ns = malloc((size_t)nb * sizeof *ns);
    for (int i = 0; i < BATCH; i++) fn(size); /* warm up */
    for (long b = 0; b < nb; b++) {
        uint64_t t0 = now_ns();
        for (int i = 0; i < BATCH; i++) fn(size);
        ns[b] = (now_ns() - t0) / BATCH;
    }
    qsort(ns, (size_t)nb, sizeof *ns, cmp_u64);
    if (rank == 0)
        printf("| %s | %d | %llu | %llu-%llu |\n", mode, size, (unsigned long long)ns[nb / 2],
               (unsigned long long)ns[nb / 10], (unsigned long long)ns[nb * 9 / 10]);
    free(ns);
}

/* Rank 0 streams `total` 64-byte events in messages of `size` bytes; rank 1 takes them. */
static void stream(int size)
{
    long events = 2000000, per = size / 64, msgs = events / per;
    MPI_Barrier(MPI_COMM_WORLD);
    uint64_t t0 = now_ns();
    for (long m = 0; m < msgs; m++) {
        if (rank == 0) send_one(size, 1);
        else poll_recv(size, 0);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    double s = (double)(now_ns() - t0) / 1e9;
    if (rank == 0)
        printf("| stream | %d (%ld events) | %.2f M events/s | %.0f MB/s |\n", size, per,
               (double)msgs * (double)per / s / 1e6, (double)msgs * size / s / 1e6);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 1) rounds = atol(argv[1]);
    buf = calloc(1, 1 << 20);
    const int sizes[] = { 64, 1024, 16384, 65536 };
    if (rank == 0) {
        printf("| mode | bytes | round trip ns (median) | p10-p90 |\n|---|---|---|---|\n");
    }
    for (int i = 0; i < 4; i++) latency("funneled", sizes[i], bounce, rounds);
    if (provided == MPI_THREAD_MULTIPLE) {
        pthread_t t;
        pthread_create(&t, NULL, comm_main, NULL);
        /* (4 spinning threads on 2 cores took ~10 ms a round trip here: few rounds) */
        for (int i = 0; i < 4; i++) latency("handoff", sizes[i], bounce_handoff, rounds / 100);
        atomic_store(&quit, 1);
        pthread_join(t, NULL);
    } else if (rank == 0) {
        printf("(no MPI_THREAD_MULTIPLE: handoff not measured)\n");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) printf("\n| mode | message bytes | rate | bandwidth |\n|---|---|---|---|\n");
    for (int i = 0; i < 4; i++) stream(sizes[i]);
    free(buf);
    MPI_Finalize();
    return 0;
}
