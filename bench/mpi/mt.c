/*
 * Message rate of MPI_THREAD_MULTIPLE between ranks 0 and 1, for comparing MPI libraries: the
 * same source is built against madmpi's libmpi, MPICH and Open MPI.
 *
 * Each rank runs t threads (t = 1, 2, 4), all calling MPI at once. Thread i of rank 0 streams
 * 8-byte messages to thread i of rank 1 with tag i: windows of 64 MPI_Isend (rank 0) /
 * MPI_Irecv (rank 1) completed by MPI_Waitall, each window acknowledged by a 4-byte message
 * from the receiving thread (tag 100 + i), as osu_mbw_mr and osu_bw do. Before every
 * repetition the threads of a rank meet at a pthread barrier, thread 0 of each rank exchanges a
 * zero-byte sync message with its peer, and all meet again, so that all threads of both ranks
 * start together.
 *
 * A sending thread ends its repetition after the window during which ~50 ms have passed (or
 * 100000 windows): every message carries a flag telling whether more windows follow, so its
 * receiving thread stops with it. Rate = messages sent by all threads / the longest thread's
 * time on rank 0 (a sender's time ends with its last window's acknowledgement). Rank 0 prints,
 * after "# library <MPI_Get_library_version's first line>":
 *
 *   m bench=mt size=8 threads=<t> median=<msg/s> min=.. max=.. unit=msg/s
 *
 * Statistics are over REPS repetitions, after one shorter warm-up repetition. Times come from
 * CLOCK_MONOTONIC, not MPI_Wtime, so every library is timed by the same clock. Only
 * point-to-point calls are used. The threads of a rank share whatever CPUs the rank has (one
 * when a wrapper pins each rank to a CPU): the benchmark measures the cost of thread safety
 * (locks, contention, oversubscription), not parallel speed-up.
 *
 * Usage: mt [reps] [quick] (reps 1..99, default 5). "quick" runs t = 1, 2 with ~10 ms
 * repetitions for smoke tests. Pinning is the launcher's or a wrapper's business.
 */
#define _GNU_SOURCE
#define BENCH_NAME "mt"
#include "common.h"
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REPS 99
#define MAX_THREADS 4
#define WINDOW 64
#define MSG_SIZE 8
#define MAX_WINDOWS 100000 /* per thread and repetition */
#define TAG_ACK 100        /* + thread index; data messages use the thread index */
#define TAG_SYNC 1000

static int rank, peer, reps, nthreads;
static double budget;                  /* ns per repetition */
static pthread_barrier_t barrier;
static double elapsed[MAX_THREADS];    /* this repetition, per thread */
static long messages[MAX_THREADS];
static double rate[MAX_REPS];          /* rank 0: msg/s per repetition */

static void wait_barrier(void)
{
    int rc = pthread_barrier_wait(&barrier);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) {
        fprintf(stderr, "mt: pthread_barrier_wait failed (%s)\n", strerror(rc));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* One repetition of thread `id`: windows until `limit` ns have passed. Returns the windows. */
static long stream(int id, uint64_t *slots, double limit)
{
    MPI_Request reqs[WINDOW];
    int32_t ack = 0;
    long windows = 0;
    double t = now_ns();
    if (rank == 0) {
        int last;
        do {
            last = windows + 1 >= MAX_WINDOWS || now_ns() - t >= limit;
            for (int w = 0; w < WINDOW; w++) {
                slots[w] = !last; /* 1: more windows follow */
                check(MPI_Isend(&slots[w], MSG_SIZE, MPI_BYTE, 1, id, MPI_COMM_WORLD, &reqs[w]),
                      "MPI_Isend");
            }
            check(MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
            check(MPI_Recv(&ack, 4, MPI_BYTE, 1, TAG_ACK + id, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
            windows++;
        } while (!last);
    } else {
        int more;
        do {
            for (int w = 0; w < WINDOW; w++)
                check(MPI_Irecv(&slots[w], MSG_SIZE, MPI_BYTE, 0, id, MPI_COMM_WORLD, &reqs[w]),
                      "MPI_Irecv");
            check(MPI_Waitall(WINDOW, reqs, MPI_STATUSES_IGNORE), "MPI_Waitall");
            more = slots[WINDOW - 1] != 0;
            check(MPI_Send(&ack, 4, MPI_BYTE, 0, TAG_ACK + id, MPI_COMM_WORLD), "MPI_Send");
            windows++;
        } while (more);
    }
    elapsed[id] = now_ns() - t;
    return windows;
}

static void *worker(void *arg)
{
    int id = (int)(intptr_t)arg;
    uint64_t *slots = NULL;
    /* Page-aligned and touched: each thread has its own page. */
    if (posix_memalign((void **)&slots, 4096, 4096) != 0) {
        fprintf(stderr, "mt: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(slots, 0, 4096);
    for (int r = -1; r < reps; r++) { /* r = -1: warm-up */
        wait_barrier();
        if (id == 0)
            sync_with(peer, TAG_SYNC);
        wait_barrier();
        messages[id] = stream(id, slots, r < 0 ? budget / 5 : budget) * WINDOW;
        wait_barrier();
        if (id == 0 && rank == 0 && r >= 0) {
            double longest = 0, total = 0;
            for (int i = 0; i < nthreads; i++) {
                if (elapsed[i] > longest)
                    longest = elapsed[i];
                total += (double)messages[i];
            }
            rate[r] = total / longest * 1e9;
        }
    }
    free(slots);
    return NULL;
}

int main(int argc, char **argv)
{
    static const int ts[] = { 1, 2, 4 };
    pthread_t threads[MAX_THREADS];
    int nprocs, provided = MPI_THREAD_SINGLE, quick = 0, bad = 0;

    reps = 5;
    check(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &nprocs), "MPI_Comm_size");
    if (provided < MPI_THREAD_MULTIPLE) {
        fprintf(stderr, "mt: rank %d: the library does not provide MPI_THREAD_MULTIPLE (provided %d)\n",
                rank, provided);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 1; i < argc; i++) {
        char *end;
        long x = strtol(argv[i], &end, 10);
        if (strcmp(argv[i], "quick") == 0)
            quick = 1;
        else if (*argv[i] && !*end && x >= 1 && x <= MAX_REPS)
            reps = (int)x;
        else
            bad = 1;
    }
    if (nprocs != 2 || bad) {
        if (rank == 0)
            fprintf(stderr, "usage: run 2 ranks of mt [reps: 1..%d] [quick]\n", MAX_REPS);
        MPI_Finalize();
        return 2;
    }
    budget = quick ? 10e6 : 50e6;
    if (rank == 0) {
        print_library();
    }
    peer = 1 - rank;

    for (int i = 0; i < (quick ? 2 : 3); i++) {
        nthreads = ts[i];
        int rc = pthread_barrier_init(&barrier, NULL, (unsigned)nthreads);
        if (rc != 0) {
            fprintf(stderr, "mt: pthread_barrier_init failed (%s)\n", strerror(rc));
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int t = 0; t < nthreads; t++) {
            rc = pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t);
            if (rc != 0) {
                fprintf(stderr, "mt: pthread_create failed (%s)\n", strerror(rc));
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        for (int t = 0; t < nthreads; t++)
            pthread_join(threads[t], NULL);
        pthread_barrier_destroy(&barrier);
        if (rank == 0) {
            double m = median(rate, reps);
            printf("m bench=mt size=8 threads=%d median=%.1f min=%.1f max=%.1f unit=msg/s\n", nthreads,
                   m, rate[0], rate[reps - 1]);
            fflush(stdout);
        }
    }
    check(MPI_Finalize(), "MPI_Finalize");
    return 0;
}
