/*
 * Collective operation latency, for comparing MPI libraries: the same source is built against
 * madmpi's libmpi, MPICH and Open MPI (`madbench coll` conducts it, at 2, 4 and 8 ranks).
 *
 *   barrier
 *   bcast      8 B, 64 KiB, 1 MiB (root 0)
 *   allreduce  8 B, 64 KiB, 1 MiB of doubles, MPI_SUM
 *   alltoall   1 KiB per peer
 *
 * A repetition times a batch of back-to-back calls on every rank (the batch is sized after a
 * warm-up so that it lasts ~20 ms, ~5 ms with `quick`, and is the same on every rank); a
 * repetition's figure is the slowest rank's time per call (MPI_MAX over the ranks). Rank 0
 * prints, after "# library <version>":
 *
 *   m bench=coll case=<op> size=<bytes> median=<ns> min=.. max=.. unit=ns ranks=<n> calls=<per rep>
 *
 * Usage: coll [reps] [quick] [sweep=OP] (reps 1..99, default 5). `sweep=OP` measures only OP
 * (bcast, allreduce, allgather or alltoall) at 64 B, 1 KiB, 8 KiB, 64 KiB, 256 KiB and 1 MiB (per
 * peer for allgather and alltoall; `madbench coll-algos` runs it once per forced algorithm).
 * Pinning is the launcher's or a wrapper's business.
 */
#define _GNU_SOURCE
#define BENCH_NAME "coll"
#include "common.h"
#include <stdint.h>

#define MAX_REPS 99
#define MAX_BYTES (1 << 20)

enum coll { BARRIER, BCAST, ALLREDUCE, ALLTOALL, ALLGATHER, NCOLL };
static const char *coll_name[] = { "barrier", "bcast", "allreduce", "alltoall", "allgather" };

static int rank, nprocs;
static char *sbuf, *rbuf;

/* One call of `c` on `bytes` bytes (per peer for alltoall). */
static void call(enum coll c, int bytes)
{
    switch (c) {
    case BARRIER:
        check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        break;
    case BCAST:
        check(MPI_Bcast(sbuf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
        break;
    case ALLREDUCE:
        check(MPI_Allreduce(sbuf, rbuf, bytes / 8, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
        break;
    case ALLTOALL:
        check(MPI_Alltoall(sbuf, bytes, MPI_BYTE, rbuf, bytes, MPI_BYTE, MPI_COMM_WORLD), "MPI_Alltoall");
        break;
    case ALLGATHER:
        check(MPI_Allgather(sbuf, bytes, MPI_BYTE, rbuf, bytes, MPI_BYTE, MPI_COMM_WORLD), "MPI_Allgather");
        break;
    case NCOLL:
        break;
    }
}

/* The slowest rank's ns per call over `n` calls. */
static double timed(enum coll c, int bytes, int n)
{
    check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    double t = now_ns();
    for (int i = 0; i < n; i++)
        call(c, bytes);
    double mine = (now_ns() - t) / n, slowest = 0;
    check(MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
    return slowest;
}

static void measure(enum coll c, int bytes, int reps, double target_ns)
{
    double v[MAX_REPS];
    /* Warm-up, then a batch size every rank agrees on (from the slowest rank's time). */
    double one = timed(c, bytes, 5);
    int n = (int)(target_ns / (one > 1 ? one : 1));
    if (n < 1)
        n = 1;
    if (n > 100000)
        n = 100000;
    for (int r = 0; r < reps; r++)
        v[r] = timed(c, bytes, n);
    if (rank == 0) {
        double m = median(v, reps);
        printf("m bench=coll case=%s size=%d median=%.1f min=%.1f max=%.1f unit=ns ranks=%d calls=%d\n",
               coll_name[c], c == BARRIER ? 0 : bytes, m, v[0], v[reps - 1], nprocs, n);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    int reps = 5, quick = 0, sweep = -1;
    check(MPI_Init(&argc, &argv), "MPI_Init");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "quick"))
            quick = 1;
        else if (!strncmp(argv[i], "sweep=", 6)) {
            for (int c = BCAST; c < NCOLL; c++)
                if (!strcmp(argv[i] + 6, coll_name[c]))
                    sweep = c;
            if (sweep < 0)
                reps = 0; /* usage */
        } else
            reps = atoi(argv[i]);
    }
    if (reps < 1 || reps > MAX_REPS) {
        if (rank == 0)
            fprintf(stderr, "usage: coll [reps: 1..%d] [quick] [sweep=bcast|allreduce|allgather|alltoall]\n",
                    MAX_REPS);
        MPI_Finalize();
        return 2;
    }
    size_t total = (size_t)MAX_BYTES * (nprocs > 1024 ? 1024 : nprocs);
    sbuf = NULL;
    rbuf = NULL;
    if (posix_memalign((void **)&sbuf, 4096, total) != 0 || posix_memalign((void **)&rbuf, 4096, total) != 0) {
        fprintf(stderr, "coll: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(sbuf, 1, total);
    memset(rbuf, 0, total);
    if (rank == 0)
        print_library();
    double target = quick ? 5e6 : 20e6;
    if (sweep >= 0) {
        static const int sweep_sizes[] = { 64, 1024, 8192, 65536, 262144, 1 << 20 };
        for (int i = 0; i < 6; i++)
            measure(sweep, sweep_sizes[i], reps, target);
        free(sbuf);
        free(rbuf);
        MPI_Finalize();
        return 0;
    }
    static const int sizes[] = { 8, 65536, 1 << 20 };
    measure(BARRIER, 0, reps, target);
    for (int i = 0; i < 3; i++)
        measure(BCAST, sizes[i], reps, target);
    for (int i = 0; i < 3; i++)
        measure(ALLREDUCE, sizes[i], reps, target);
    measure(ALLTOALL, 1024, reps, target);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
