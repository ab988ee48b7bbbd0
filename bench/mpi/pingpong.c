/*
 * MPI ping-pong latency and streaming bandwidth between ranks 0 and 1, for comparing MPI
 * libraries: the same source is built against madmpi's libmpi, MPICH and Open MPI
 * (`madbench pingpong` and `madbench bw` conduct it).
 *
 *   latency:   0 B to 4 MiB (powers of 4); one-way time = round trip / 2
 *   bandwidth: 64 KiB to 16 MiB; rank 0 posts a window of 8 MPI_Isend, MPI_Waitall, and rank 1
 *              answers each window with a 4-byte message (as osu_bw does)
 *
 * Each size is measured REPS times (a fixed iteration count per size, the same for every
 * library, after a warm-up); rank 0 prints one line per measurement, in the format of
 * bench/src/record.rs:
 *
 *   m bench=pingpong size=<bytes> median=<ns> min=<ns> max=<ns> unit=ns iterations=<n>
 *   m bench=bw size=<bytes> median=<MB/s> min=<MB/s> max=<MB/s> unit=MB/s iterations=<n>
 *
 * preceded by "# library <MPI_Get_library_version's first line>". Times come from
 * CLOCK_MONOTONIC, not MPI_Wtime, so every library is timed by the same clock. Only
 * point-to-point calls are used (ranks synchronize by a zero-byte exchange).
 *
 *   tail:      8 B, 64 KiB and 1 MiB (not quick): round trips timed one by one after a warm-up
 *              (2,000 up to 64 KiB, 300 at 1 MiB; quick 500), one-way = round trip / 2; two
 *              records per size, the median and the 99th percentile (nearest rank) (madbench
 *              loss: latency tails under packet loss):
 *   m bench=tail50 size=<bytes> median=<p50 ns> min=<ns> max=<ns> unit=ns iterations=<n>
 *   m bench=tail99 size=<bytes> median=<p99 ns> min=<ns> max=<ns> unit=ns iterations=<n>
 *
 * Usage: pingpong [lat|bw|both|tail] [reps] [quick] [lossy] (default: both, 5 repetitions;
 * `quick` measures fewer sizes; `lossy` streams a quarter of the windows per repetition: a
 * lossy network's tcp can be 100x slower). Pinning is the launcher's or a wrapper's business.
 */
#define _GNU_SOURCE
#define BENCH_NAME "pingpong"
#include "common.h"
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_LAT_SIZE (4 << 20)
#define MAX_SIZE (16 << 20)
#define WINDOW 8
#define MAX_REPS 99
#define TAG_DATA 1
#define TAG_ACK 2
#define TAG_SYNC 3

/* Round trips per repetition: enough for a few ms per repetition on shm, few for big sizes. */
static int lat_iters(int size)
{
    if (size <= 1024)
        return 2000;
    if (size <= 16384)
        return 1000;
    if (size <= 262144)
        return 200;
    return 30;
}

/* Windows per repetition. */
static int bw_iters(int size)
{
    if (size <= 16384)
        return 200;
    if (size <= 262144)
        return 40;
    if (size <= 4194304)
        return 6;
    return 3;
}

/* n round trips of `size` bytes; rank 0 returns the elapsed ns. */
static double pingpong(int rank, char *buf, int size, int n)
{
    double t = now_ns();
    for (int i = 0; i < n; i++) {
        if (rank == 0) {
            check(MPI_Send(buf, size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD), "MPI_Send");
            check(MPI_Recv(buf, size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
        } else {
            check(MPI_Recv(buf, size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
            check(MPI_Send(buf, size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD), "MPI_Send");
        }
    }
    return now_ns() - t;
}

/* n windows of WINDOW messages of `size` bytes, each acknowledged; rank 0 returns the ns. */
static double stream(int rank, char *buf, int size, int n)
{
    MPI_Request reqs[WINDOW];
    int ack = 0;
    double t = now_ns();
    for (int i = 0; i < n; i++) {
        for (int w = 0; w < WINDOW; w++) {
            if (rank == 0)
                check(MPI_Isend(buf, size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &reqs[w]), "MPI_Isend");
            else
                check(MPI_Irecv(buf, size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &reqs[w]), "MPI_Irecv");
        }
        check(MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
        if (rank == 0)
            check(MPI_Recv(&ack, 1, MPI_INT, 1, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        else
            check(MPI_Send(&ack, 1, MPI_INT, 0, TAG_ACK, MPI_COMM_WORLD), "MPI_Send");
    }
    return now_ns() - t;
}

/* Round trips of `size` bytes timed one by one: rank 0 prints their one-way median and 99th
 * percentile. */
static void tail(int rank, char *buf, int size, int n)
{
    double *v = malloc(sizeof(double) * n);
    if (!v) {
        fprintf(stderr, "pingpong: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    pingpong(rank, buf, size, n / 10 + 1);
    for (int i = 0; i < n; i++)
        v[i] = pingpong(rank, buf, size, 1) / 2.0;
    if (rank == 0) {
        qsort(v, n, sizeof(double), cmp_double);
        printf("m bench=tail50 size=%d median=%.1f min=%.1f max=%.1f unit=ns iterations=%d\n", size, v[n / 2],
               v[0], v[n - 1], n);
        /* Nearest rank: the smallest value at least 99 % of the samples do not exceed. */
        printf("m bench=tail99 size=%d median=%.1f min=%.1f max=%.1f unit=ns iterations=%d\n", size,
               v[(n * 99 + 99) / 100 - 1], v[0], v[n - 1], n);
        fflush(stdout);
    }
    free(v);
}

/* Prints "<kind> <size> <median> <min> <max> <iters> <reps>" from per-repetition values. */
static void report(const char *bench, int size, double *v, int reps, int iters, const char *unit)
{
    double m = median(v, reps);
    printf("m bench=%s size=%d median=%.1f min=%.1f max=%.1f unit=%s iterations=%d\n", bench, size, m, v[0],
           v[reps - 1], unit, iters);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    int rank, nprocs, reps = 5, quick = 0, lossy = 0, do_lat = 1, do_bw = 1, do_tail = 0;
    double v[MAX_REPS];
    char *buf = NULL;

    check(MPI_Init(&argc, &argv), "MPI_Init");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "lat"))
            do_bw = 0;
        else if (!strcmp(argv[i], "bw"))
            do_lat = 0;
        else if (!strcmp(argv[i], "tail"))
            do_tail = 1, do_lat = do_bw = 0;
        else if (!strcmp(argv[i], "quick"))
            quick = 1;
        else if (!strcmp(argv[i], "lossy"))
            lossy = 1;
        else if (strcmp(argv[i], "both"))
            reps = atoi(argv[i]);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs != 2 || reps < 1 || reps > MAX_REPS) {
        if (rank == 0)
            fprintf(stderr, "usage: run 2 ranks of pingpong [lat|bw|both|tail] [reps: 1..%d] [quick] [lossy]\n",
                    MAX_REPS);
        MPI_Finalize();
        return 2;
    }
    /* Page-aligned and touched, so that no size pays first-touch faults. */
    if (posix_memalign((void **)&buf, 4096, MAX_SIZE) != 0) {
        fprintf(stderr, "pingpong: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, rank + 1, MAX_SIZE);
    if (rank == 0) {
        print_library();
    }
    int peer = 1 - rank;

    /* quick: every fourth latency size (0, 64 B, 4 KiB, 256 KiB), bandwidth at 64 KiB and 4 MiB. */
    int lat_step = quick ? 64 : 4, bw_step = quick ? 64 : 4;
    for (int size = 0; do_lat && size <= MAX_LAT_SIZE; size = size ? size * lat_step : 1) {
        if (quick && size == 1)
            size = 64;
        int n = lat_iters(size);
        pingpong(rank, buf, size, n / 10 + 1); /* warm-up: connections, caches, pinned pages */
        for (int r = 0; r < reps; r++) {
            sync_with(peer, TAG_SYNC);
            v[r] = pingpong(rank, buf, size, n) / (2.0 * n);
        }
        if (rank == 0)
            report("pingpong", size, v, reps, n, "ns");
    }
    for (int size = 65536; do_bw && size <= MAX_SIZE; size *= bw_step) {
        int n = bw_iters(size);
        if (lossy)
            n = (n + 3) / 4;
        stream(rank, buf, size, 1);
        for (int r = 0; r < reps; r++) {
            sync_with(peer, TAG_SYNC);
            double ns = stream(rank, buf, size, n);
            v[r] = (double)size * WINDOW * n / ns * 1e3; /* bytes per ns * 1e3 = MB/s */
        }
        if (rank == 0)
            report("bw", size, v, reps, n, "MB/s");
    }
    if (do_tail) {
        /* The 99th percentile stands on 5 (quick) or 20 samples; more would cost the kernel's
         * TCP at 5 % loss many minutes of timeouts per library and round. */
        tail(rank, buf, 8, quick ? 500 : 2000);
        tail(rank, buf, 65536, quick ? 500 : 2000);
        if (!quick)
            tail(rank, buf, 1 << 20, 300);
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
