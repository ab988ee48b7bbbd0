/*
 * MPI one-sided latency and bandwidth between ranks 0 (origin) and 1 (target), for comparing
 * MPI libraries (`madbench rma` conducts it). The window comes from MPI_Win_allocate, so that a
 * library may place it in shared memory (Open MPI's `osc sm`).
 *
 *   latency (ns per operation and its synchronization): every operation (put, get, accumulate
 *     and get_accumulate of doubles with MPI_SUM at 8 B to 4 MiB; fetch_and_op and
 *     compare_and_swap of one 8-byte element) under every synchronization: fence (a fence per
 *     operation), pscw (start/complete against post/wait), lock (exclusive lock, the operation,
 *     unlock) and lock_all (one epoch, a flush per operation); and an 8-byte MPI_Send + MPI_Recv
 *     round trip (what one message there and one back costs)
 *   bandwidth: lock_all, 8 puts (gets) then a flush, 64 KiB to 4 MiB
 *   passive target: the target computes 200 ms (a busy loop, no MPI call) while the origin does
 *     lock, put, get, accumulate, unlock: the origin's time and its ratio to the target's compute
 *   overlap map: n epochs of lock + put + unlock (64 KiB to 4 MiB) with c = f x T ns of
 *     computation (f = 0.25 .. 2, T = the epoch alone) on the origin (between the put and the
 *     unlock), on the target (a busy loop without MPI calls while the origin's epochs run), or
 *     both; n doubled until a repetition lasts >= 200 us; total = the longer rank's time / n;
 *     ratio (total - max(T, c)) / min(T, c): 0 when the epoch hides behind the computation, 1
 *     when they are serialized (as overlap.c defines it)
 *
 * Rank 0 prints lines in the format of bench/src/record.rs:
 *   m bench=rma case=<op> size=<bytes> median=<ns> min=<ns> max=<ns> unit=ns iterations=<n>
 *   m bench=rma-rtt case=<lock op> size=8 median=<epoch/round trip> ... unit=x  (each repetition
 *     divided by an 8-byte send+recv round trip timed right after it)
 *   m bench=rma-bw case=<put|get> size=<bytes> median=<MB/s> ... unit=MB/s
 *   m bench=rma-passive case=origin size=<bytes> median=<ns> ... unit=ns
 *   m bench=rma-passive case=ratio size=<bytes> median=<origin/compute> ... unit=x
 *   m bench=rma-overlap-comm size=<bytes> median=<T ns> ... unit=ns
 *   m bench=rma-overlap case=<origin|target|both> size=<bytes> median=<ratio> ... unit=ratio
 *     factor=<f> compute_ns=<c> comm_ns=<T> total_ns=<median total>
 *
 * Usage: rma [reps] [quick] [cas|nocas|overlap] (5 repetitions, at most 3 for the passive-target
 * test when quick; `quick`: 8 B and 64 KiB, bandwidth at 64 KiB and 4 MiB, overlap at 256 KiB and
 * 4 MiB with f = 0.5 and 2; `cas` measures only compare-and-swap, `overlap` only the overlap map,
 * `nocas` everything else: the conductor runs them apart, so a crash in one loses nothing else).
 */
#define _GNU_SOURCE
#define BENCH_NAME "rma"
#include "common.h"
#include <stdint.h>

#define MAX_SIZE (4 << 20)
#define MAX_REPS 99
#define TAG_SYNC 3
#define TAG_TIME 4
#define TAG_RTT 5
#define BW_WINDOW 8
#define COMPUTE_NS 200e6

enum op { PUT, GET, ACC, GET_ACC, FETCH_OP, CAS };
enum sync { FENCE, PSCW, LOCK, LOCK_ALL, RTT };
static const char *op_name[] = {"put", "get", "acc", "get_acc", "fetch_op", "cas"};
static const char *sync_name[] = {"fence", "pscw", "lock", "lock_all", "send+recv"};

static MPI_Win win;
static char *src, *dst;
static MPI_Group peer_group;

static int iters(int size, int quick)
{
    int n = size <= 4096 ? 1000 : size <= 65536 ? 200 : size <= 1048576 ? 30 : 10;
    return quick ? n / 5 + 1 : n;
}

/* One operation of `size` bytes on the target's window (no synchronization). */
static void one(enum op o, int size)
{
    int n = size / 8;
    switch (o) {
    case PUT:
        check(MPI_Put(src, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win), "MPI_Put");
        break;
    case GET:
        check(MPI_Get(dst, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win), "MPI_Get");
        break;
    case ACC:
        check(MPI_Accumulate(src, n, MPI_DOUBLE, 1, 0, n, MPI_DOUBLE, MPI_SUM, win), "MPI_Accumulate");
        break;
    case GET_ACC:
        check(MPI_Get_accumulate(src, n, MPI_DOUBLE, dst, n, MPI_DOUBLE, 1, 0, n, MPI_DOUBLE, MPI_SUM,
                                 win),
              "MPI_Get_accumulate");
        break;
    case FETCH_OP:
        check(MPI_Fetch_and_op(src, dst, MPI_INT64_T, 1, 0, MPI_SUM, win), "MPI_Fetch_and_op");
        break;
    case CAS:
        check(MPI_Compare_and_swap(src, src + 8, dst, MPI_INT64_T, 1, 0, win), "MPI_Compare_and_swap");
        break;
    }
}

/* n operations `o` each with synchronization `sy` (or n round trips); rank 0 returns the
 * elapsed ns. Both ranks call it (the target takes part in fence and pscw epochs only). */
static double run(enum sync sy, enum op o, int rank, int size, int n)
{
    double t = now_ns();
    if (sy == RTT) {
        for (int i = 0; i < n; i++) {
            if (rank == 0) {
                check(MPI_Send(src, size, MPI_BYTE, 1, TAG_RTT, MPI_COMM_WORLD), "MPI_Send");
                check(MPI_Recv(dst, size, MPI_BYTE, 1, TAG_RTT, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
            } else {
                check(MPI_Recv(dst, size, MPI_BYTE, 0, TAG_RTT, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
                check(MPI_Send(src, size, MPI_BYTE, 0, TAG_RTT, MPI_COMM_WORLD), "MPI_Send");
            }
        }
    } else if (sy == FENCE) {
        for (int i = 0; i < n; i++) {
            if (rank == 0)
                one(o, size);
            check(MPI_Win_fence(0, win), "MPI_Win_fence");
        }
    } else if (sy == PSCW) {
        for (int i = 0; i < n; i++) {
            if (rank == 0) {
                check(MPI_Win_start(peer_group, 0, win), "MPI_Win_start");
                one(o, size);
                check(MPI_Win_complete(win), "MPI_Win_complete");
            } else {
                check(MPI_Win_post(peer_group, 0, win), "MPI_Win_post");
                check(MPI_Win_wait(win), "MPI_Win_wait");
            }
        }
    } else if (rank == 0 && sy == LOCK_ALL) {
        check(MPI_Win_lock_all(0, win), "MPI_Win_lock_all");
        t = now_ns();
        for (int i = 0; i < n; i++) {
            one(o, size);
            check(MPI_Win_flush(1, win), "MPI_Win_flush");
        }
        double e = now_ns() - t;
        check(MPI_Win_unlock_all(win), "MPI_Win_unlock_all");
        return e;
    } else if (rank == 0) {
        for (int i = 0; i < n; i++) {
            check(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win), "MPI_Win_lock");
            one(o, size);
            check(MPI_Win_unlock(1, win), "MPI_Win_unlock");
        }
    }
    return now_ns() - t;
}

/* n windows of BW_WINDOW puts (gets) and a flush; rank 0 returns the elapsed ns. */
static double stream(enum op o, int rank, int size, int n)
{
    if (rank != 0)
        return 0;
    check(MPI_Win_lock_all(0, win), "MPI_Win_lock_all");
    double t = now_ns();
    for (int i = 0; i < n; i++) {
        for (int w = 0; w < BW_WINDOW; w++)
            one(o, size);
        check(MPI_Win_flush(1, win), "MPI_Win_flush");
    }
    double e = now_ns() - t;
    check(MPI_Win_unlock_all(win), "MPI_Win_unlock_all");
    return e;
}

static void report(const char *bench, const char *c, int size, double *v, int reps, int n, const char *unit)
{
    double m = median(v, reps);
    printf("m bench=%s case=%s size=%d median=%.3f min=%.3f max=%.3f unit=%s iterations=%d\n", bench, c, size,
           m, v[0], v[reps - 1], unit, n);
    fflush(stdout);
}

/* Busy for `ns` without any MPI call; the time it took. */
static double compute(double ns)
{
    volatile uint64_t x = 0;
    double t = now_ns();
    while (now_ns() - t < ns)
        x++;
    return now_ns() - t;
}

static void passive(int rank, int peer, int reps, double *v, double *ratio)
{
    static const int sizes[] = {8, 65536, 1048576};
    for (int k = 0; k < 3; k++) {
        int size = sizes[k], n = size / 8;
        for (int r = 0; r < reps; r++) {
            sync_with(peer, TAG_SYNC);
            if (rank == 1) {
                double c = compute(COMPUTE_NS);
                check(MPI_Send(&c, 1, MPI_DOUBLE, 0, TAG_TIME, MPI_COMM_WORLD), "MPI_Send");
                continue;
            }
            double t = now_ns(), c = 0;
            check(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win), "MPI_Win_lock");
            check(MPI_Put(src, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win), "MPI_Put");
            check(MPI_Get(dst, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win), "MPI_Get");
            check(MPI_Accumulate(src, n, MPI_DOUBLE, 1, 0, n, MPI_DOUBLE, MPI_SUM, win), "MPI_Accumulate");
            check(MPI_Win_unlock(1, win), "MPI_Win_unlock");
            v[r] = now_ns() - t;
            check(MPI_Recv(&c, 1, MPI_DOUBLE, 1, TAG_TIME, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
            ratio[r] = v[r] / c;
        }
        if (rank == 0) {
            report("rma-passive", "origin", size, v, reps, 1, "ns");
            report("rma-passive", "ratio", size, ratio, reps, 1, "x");
        }
    }
}

static double max2(double a, double b) { return a > b ? a : b; }
static double min2(double a, double b) { return a < b ? a : b; }

enum side { NOBODY, ORIGIN, TARGET, BOTH };
static const char *side_name[] = {"none", "origin", "target", "both"};

/* One repetition of the overlap map: after a sync, n epochs of lock + put of `size` + unlock
 * by rank 0, with c ns of computation between the put and the unlock when the origin computes,
 * and n x c ns of computation without MPI calls on rank 1 when the target does. The longer of
 * both ranks' elapsed times divided by n (the same value on both ranks). */
static double epochs(int rank, int peer, int size, int n, enum side s, double c)
{
    sync_with(peer, TAG_SYNC);
    double t = now_ns();
    if (rank == 0) {
        for (int i = 0; i < n; i++) {
            check(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 1, 0, win), "MPI_Win_lock");
            check(MPI_Put(src, size, MPI_BYTE, 1, 0, size, MPI_BYTE, win), "MPI_Put");
            if (s == ORIGIN || s == BOTH)
                compute(c);
            check(MPI_Win_unlock(1, win), "MPI_Win_unlock");
        }
    } else if (s == TARGET || s == BOTH) {
        compute(c * n);
    }
    double mine = now_ns() - t, theirs = 0;
    check(MPI_Sendrecv(&mine, 1, MPI_DOUBLE, peer, TAG_TIME, &theirs, 1, MPI_DOUBLE, peer, TAG_TIME,
                       MPI_COMM_WORLD, MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
    return max2(mine, theirs) / n;
}

/* The overlap map: per size, T (the epoch alone, n epochs per repetition, n doubled until a
 * repetition lasts 200 us), then per computing side and factor f the ratio of c = f x T. */
static void overlap_map(int rank, int peer, int reps, int quick)
{
    /* From 64 KiB: a smaller epoch takes less than a microsecond within a node, where the
     * computation's own clock reads would dominate the ratio. */
    static const int full_sizes[] = {64 << 10, 256 << 10, 1 << 20, 4 << 20};
    static const int quick_sizes[] = {256 << 10, 4 << 20};
    static const double full_f[] = {0.25, 0.5, 1, 1.5, 2};
    static const double quick_f[] = {0.5, 2};
    const int *sizes = quick ? quick_sizes : full_sizes;
    const double *fs = quick ? quick_f : full_f;
    int nsizes = quick ? 2 : 4, nf = quick ? 2 : 5;
    double v[MAX_REPS], tot[MAX_REPS];
    for (int i = 0; i < nsizes; i++) {
        int size = sizes[i], n = 1;
        epochs(rank, peer, size, 2, NOBODY, 0); /* warm-up */
        while (n < 4096 && epochs(rank, peer, size, n, NOBODY, 0) * n < 200e3)
            n *= 2;
        for (int r = 0; r < reps; r++)
            v[r] = epochs(rank, peer, size, n, NOBODY, 0);
        double comm = median(v, reps); /* the same on both ranks: so is c below */
        if (rank == 0)
            report("rma-overlap-comm", "epoch", size, v, reps, n, "ns");
        for (enum side s = ORIGIN; s <= BOTH; s++) {
            for (int j = 0; j < nf; j++) {
                double c = fs[j] * comm;
                for (int r = 0; r < reps; r++) {
                    tot[r] = epochs(rank, peer, size, n, s, c);
                    v[r] = (tot[r] - max2(comm, c)) / min2(comm, c);
                }
                double m = median(v, reps), total = median(tot, reps);
                if (rank == 0) {
                    printf("m bench=rma-overlap case=%s size=%d median=%.3f min=%.3f max=%.3f unit=ratio "
                           "iterations=%d factor=%.3f compute_ns=%.1f comm_ns=%.1f total_ns=%.1f\n",
                           side_name[s], size, m, v[0], v[reps - 1], n, fs[j], c, comm, total);
                    fflush(stdout);
                }
            }
        }
    }
}

int main(int argc, char **argv)
{
    int rank, nprocs, reps = 5, quick = 0, only_cas = 0, no_cas = 0, only_overlap = 0;
    double v[MAX_REPS], ratio[MAX_REPS];
    char *base = NULL;

    check(MPI_Init(&argc, &argv), "MPI_Init");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "quick"))
            quick = 1;
        else if (!strcmp(argv[i], "cas"))
            only_cas = 1;
        else if (!strcmp(argv[i], "nocas"))
            no_cas = 1;
        else if (!strcmp(argv[i], "overlap"))
            only_overlap = 1;
        else
            reps = atoi(argv[i]);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs != 2 || reps < 1 || reps > MAX_REPS) {
        if (rank == 0)
            fprintf(stderr, "usage: run 2 ranks of rma [reps: 1..%d] [quick] [cas|nocas|overlap]\n", MAX_REPS);
        MPI_Finalize();
        return 2;
    }
    check(MPI_Win_allocate(MAX_SIZE, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win), "MPI_Win_allocate");
    memset(base, 0, MAX_SIZE);
    if (posix_memalign((void **)&src, 4096, MAX_SIZE) || posix_memalign((void **)&dst, 4096, MAX_SIZE)) {
        fprintf(stderr, "rma: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* Doubles of 1.0 (accumulate stays finite); the first two int64 are the CAS operands. */
    for (size_t i = 0; i < MAX_SIZE / sizeof(double); i++)
        ((double *)src)[i] = 1.0;
    memset(dst, 0, MAX_SIZE);
    int peer = 1 - rank;
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &peer, &peer_group);
    if (rank == 0)
        print_library();

    /* quick: 8 B and 64 KiB; otherwise 8 B to 256 KiB by factors of 8, then 1 and 4 MiB. */
    static const int full[] = {8, 64, 512, 4096, 32768, 262144, 1048576, 4194304};
    static const int brief[] = {8, 65536};
    const int *sizes = quick ? brief : full;
    int nsizes = quick ? 2 : 8;
    check(MPI_Win_fence(0, win), "MPI_Win_fence");
    if (only_overlap)
        overlap_map(rank, peer, reps, quick);
    for (int sy = FENCE; sy <= RTT && !only_overlap; sy++) {
        for (int o = PUT; o <= (sy == RTT ? PUT : CAS); o++) {
            if ((only_cas && o != CAS) || (no_cas && o == CAS) || (only_cas && sy == RTT))
                continue;
            int single = o == FETCH_OP || o == CAS || sy == RTT;
            char name[64];
            snprintf(name, sizeof name, sy == RTT ? "%s" : sy == LOCK_ALL ? "%s+%s+flush" : "%s+%s",
                     sync_name[sy], op_name[o]);
            for (int k = 0; k < (single ? 1 : nsizes); k++) {
                int size = single ? 8 : sizes[k], n = iters(size, quick);
                run(sy, o, rank, size, n / 10 + 1); /* warm-up */
                /* An 8-byte passive epoch is also timed against a round trip measured right
                 * after each repetition, so that their ratio does not depend on the load's drift. */
                int paired = size == 8 && (sy == LOCK || sy == LOCK_ALL);
                for (int r = 0; r < reps; r++) {
                    sync_with(peer, TAG_SYNC);
                    v[r] = run(sy, o, rank, size, n) / n;
                    if (paired) {
                        sync_with(peer, TAG_SYNC);
                        ratio[r] = v[r] / (run(RTT, PUT, rank, 8, n) / n);
                    }
                }
                sync_with(peer, TAG_SYNC);
                if (rank == 0)
                    report("rma", name, size, v, reps, n, "ns");
                if (rank == 0 && paired)
                    report("rma-rtt", name, size, ratio, reps, n, "x");
            }
        }
    }
    if (!only_cas && !only_overlap) {
        for (int o = PUT; o <= GET; o++) {
            for (int size = 65536; size <= MAX_SIZE; size *= quick ? 64 : 4) {
                int n = size <= 262144 ? 40 : 6;
                stream(o, rank, size, 1);
                for (int r = 0; r < reps; r++) {
                    sync_with(peer, TAG_SYNC);
                    v[r] = (double)size * BW_WINDOW * n / stream(o, rank, size, n) * 1e3;
                }
                sync_with(peer, TAG_SYNC);
                if (rank == 0)
                    report("rma-bw", op_name[o], size, v, reps, n, "MB/s");
            }
        }
        passive(rank, peer, quick && reps > 3 ? 3 : reps, v, ratio);
    }
    check(MPI_Win_fence(0, win), "MPI_Win_fence");
    MPI_Group_free(&peer_group);
    MPI_Group_free(&world);
    check(MPI_Win_free(&win), "MPI_Win_free");
    free(src);
    free(dst);
    MPI_Finalize();
    return 0;
}
