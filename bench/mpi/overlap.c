/*
 * Overlap of communication and computation between ranks 0 and 1, for comparing MPI libraries:
 * the same source is built against madmpi's libmpi, MPICH and Open MPI.
 *
 * overlap: for each size (1 KiB to 16 MiB, powers of 4), first T = the time of one transfer
 *   without computation: after a sync, rank 0 does MPI_Isend + MPI_Wait while rank 1 does
 *   MPI_Irecv + MPI_Wait; a transfer lasts the longer of the two ranks' elapsed times (they
 *   exchange them after the repetition). Small sizes run n transfers back to back per
 *   repetition, n doubled until a repetition lasts >= 200 us (the same n on both ranks, since
 *   both decide from the same exchanged times), and the time is divided by n.
 *   Then for c = f x T (f = 0.25, 0.5, 1, 1.5, 2) the computing side(s) (sender = rank 0,
 *   receiver = rank 1, or both) post the request, compute for c ns (a busy loop reading
 *   CLOCK_MONOTONIC, no MPI call), then MPI_Wait; total = the longer rank's elapsed time / n.
 *   The overlap ratio of a repetition is (total - max(T, c)) / min(T, c): 0 when communication
 *   is fully hidden behind computation, 1 when they are serialized, more when worse. Nothing is
 *   clamped: noise may give small negative ratios.
 *
 * overlap-paper (the PIOMan paper's test): for sizes 8 B to 8 MiB (powers of 8), rank 1 posts
 *   MPI_Irecv, computes 50 ms, then MPI_Wait, while rank 0 times a blocking MPI_Send started
 *   after the sync. Without background progress the receiver answers a rendezvous only in
 *   MPI_Wait, and the sender is held for the whole computation.
 *
 * Rank 0 prints, after "# library <MPI_Get_library_version's first line>":
 *
 *   m bench=overlap-comm size=<n> median=<T ns> min=.. max=.. unit=ns
 *   m bench=overlap case=<sender|receiver|both> size=<n> median=<ratio> min=.. max=.. unit=ratio
 *     factor=<f> compute_ns=<c> comm_ns=<T> total_ns=<median total>
 *   m bench=overlap-paper size=<n> median=<send ns> min=.. max=.. unit=ns compute_ns=<c>
 *
 * Statistics are over REPS repetitions (min(REPS, 5) for the paper's test, whose repetitions
 * last 50 ms each). Times come from CLOCK_MONOTONIC, not MPI_Wtime, so every library is timed by
 * the same clock. Only point-to-point calls are used (ranks synchronize by a zero-byte
 * exchange).
 *
 * Usage: overlap [reps] [quick] (reps 1..99, default 5). "quick" runs a smaller sweep for smoke
 * tests (sizes 1 KiB, 64 KiB, 1 MiB; f = 0.5, 2; paper's test: 8 B, 32 KiB, 2 MiB, 20 ms, 2
 * repetitions). Pinning is the launcher's or a wrapper's business.
 */
#define _GNU_SOURCE
#define BENCH_NAME "overlap"
#include "common.h"
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SIZE (16 << 20)
#define MAX_REPS 99
#define MAX_BATCH 4096      /* transfers per repetition, at most */
#define MIN_REP_NS 200e3    /* a repetition of the no-computation transfer lasts at least this */
#define PAPER_REPS 5
#define TAG_DATA 1
#define TAG_TIME 2
#define TAG_SYNC 3

enum side { NONE, SENDER, RECEIVER, BOTH };
static const char *side_name[] = { "none", "sender", "receiver", "both" };

static int rank, peer;

static double max2(double a, double b) { return a > b ? a : b; }
static double min2(double a, double b) { return a < b ? a : b; }

/* The computation: a busy loop on the clock for `ns` nanoseconds, calling no MPI function. */
static void compute(double ns)
{
    double end = now_ns() + ns;
    while (now_ns() < end)
        ;
}

/* Does this rank compute when `s` computes? */
static int computes(enum side s)
{
    return s == BOTH || (s == SENDER && rank == 0) || (s == RECEIVER && rank == 1);
}

/*
 * One repetition: after a sync, n transfers of `size` bytes from rank 0 to rank 1, each posted,
 * overlapped with c ns of computation on the side(s) `s`, then waited for. Returns the longer
 * of both ranks' elapsed times divided by n (the same value on both ranks).
 */
static double transfer(char *buf, int size, int n, enum side s, double c)
{
    MPI_Request req;
    int busy = computes(s);
    sync_with(peer, TAG_SYNC);
    double t = now_ns();
    for (int i = 0; i < n; i++) {
        if (rank == 0)
            check(MPI_Isend(buf, size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD, &req), "MPI_Isend");
        else
            check(MPI_Irecv(buf, size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &req), "MPI_Irecv");
        if (busy)
            compute(c);
        check(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
    }
    double mine = now_ns() - t, theirs = 0;
    check(MPI_Sendrecv(&mine, 1, MPI_DOUBLE, peer, TAG_TIME, &theirs, 1, MPI_DOUBLE, peer, TAG_TIME,
                       MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
    return max2(mine, theirs) / n;
}

/* Transfers per repetition of `size`: doubled until a repetition lasts >= MIN_REP_NS. */
static int batch(char *buf, int size)
{
    int n = 1;
    transfer(buf, size, 2, NONE, 0); /* warm-up: connections, caches, registered pages */
    while (n < MAX_BATCH && transfer(buf, size, n, NONE, 0) * n < MIN_REP_NS)
        n *= 2;
    return n;
}

static void overlap(char *buf, int reps, int quick)
{
    static const int full_sizes[] = { 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10,
                                      1 << 20, 4 << 20, 16 << 20 };
    static const int quick_sizes[] = { 1 << 10, 64 << 10, 1 << 20 };
    static const double full_f[] = { 0.25, 0.5, 1, 1.5, 2 };
    static const double quick_f[] = { 0.5, 2 };
    static const enum side sides[] = { SENDER, RECEIVER, BOTH };
    const int *sizes = quick ? quick_sizes : full_sizes;
    int nsizes = quick ? 3 : 8;
    const double *fs = quick ? quick_f : full_f;
    int nf = quick ? 2 : 5;
    double v[MAX_REPS], tot[MAX_REPS];

    for (int i = 0; i < nsizes; i++) {
        int size = sizes[i], n = batch(buf, size);
        for (int r = 0; r < reps; r++)
            v[r] = transfer(buf, size, n, NONE, 0);
        double comm = median(v, reps); /* identical on both ranks: c below is too */
        if (rank == 0) {
            printf("m bench=overlap-comm size=%d median=%.1f min=%.1f max=%.1f unit=ns\n", size,
                   comm, v[0], v[reps - 1]);
            fflush(stdout);
        }
        for (int s = 0; s < 3; s++) {
            for (int j = 0; j < nf; j++) {
                double c = fs[j] * comm;
                for (int r = 0; r < reps; r++) {
                    tot[r] = transfer(buf, size, n, sides[s], c);
                    v[r] = (tot[r] - max2(comm, c)) / min2(comm, c);
                }
                double m = median(v, reps), total = median(tot, reps);
                if (rank == 0) {
                    printf("m bench=overlap case=%s size=%d median=%.3f min=%.3f max=%.3f unit=ratio "
                           "factor=%.3f compute_ns=%.1f comm_ns=%.1f total_ns=%.1f\n",
                           side_name[sides[s]], size, m, v[0], v[reps - 1], fs[j], c, comm, total);
                    fflush(stdout);
                }
            }
        }
    }
}

/* The PIOMan paper's test: how long a blocking send lasts while the receiver computes. */
static void overlap_paper(char *buf, int reps, int quick)
{
    static const int full_sizes[] = { 8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 2 << 20, 8 << 20 };
    static const int quick_sizes[] = { 8, 32 << 10, 2 << 20 };
    const int *sizes = quick ? quick_sizes : full_sizes;
    int nsizes = quick ? 3 : 8;
    double c = quick ? 20e6 : 50e6, v[MAX_REPS];
    if (quick)
        reps = 2;
    else if (reps > PAPER_REPS)
        reps = PAPER_REPS;

    for (int i = 0; i < nsizes; i++) {
        int size = sizes[i];
        sync_with(peer, TAG_SYNC); /* warm-up, without computation */
        if (rank == 0)
            check(MPI_Send(buf, size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD), "MPI_Send");
        else
            check(MPI_Recv(buf, size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
        for (int r = 0; r < reps; r++) {
            sync_with(peer, TAG_SYNC);
            if (rank == 0) {
                double t = now_ns();
                check(MPI_Send(buf, size, MPI_BYTE, 1, TAG_DATA, MPI_COMM_WORLD), "MPI_Send");
                v[r] = now_ns() - t;
            } else {
                MPI_Request req;
                check(MPI_Irecv(buf, size, MPI_BYTE, 0, TAG_DATA, MPI_COMM_WORLD, &req), "MPI_Irecv");
                compute(c);
                check(MPI_Wait(&req, MPI_STATUS_IGNORE), "MPI_Wait");
            }
        }
        if (rank == 0) {
            double m = median(v, reps);
            printf("m bench=overlap-paper size=%d median=%.1f min=%.1f max=%.1f unit=ns compute_ns=%.1f\n",
                   size, m, v[0], v[reps - 1], c);
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv)
{
    int nprocs, reps = 5, quick = 0, bad = 0;
    char *buf = NULL;

    check(MPI_Init(&argc, &argv), "MPI_Init");
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &nprocs), "MPI_Comm_size");
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
            fprintf(stderr, "usage: run 2 ranks of overlap [reps: 1..%d] [quick]\n", MAX_REPS);
        MPI_Finalize();
        return 2;
    }
    /* Page-aligned and touched, so that no size pays first-touch faults. */
    if (posix_memalign((void **)&buf, 4096, MAX_SIZE) != 0) {
        fprintf(stderr, "overlap: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, rank + 1, MAX_SIZE);
    if (rank == 0) {
        print_library();
    }
    peer = 1 - rank;

    overlap(buf, reps, quick);
    overlap_paper(buf, reps, quick);

    free(buf);
    check(MPI_Finalize(), "MPI_Finalize");
    return 0;
}
