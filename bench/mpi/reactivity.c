/*
 * Reactivity of an MPI library whose receiving process is busy computing, for comparing MPI
 * libraries: the same source is built against madmpi's libmpi, MPICH and Open MPI.
 *
 * Rank 0 ping-pongs 4-byte messages with rank 1 while rank 1 runs k compute threads per core
 * (k = 0, 1, 2, 4; rank 1's cores are those sched_getaffinity gives it, one when a wrapper
 * pins each rank to a CPU). A compute thread spins on a volatile counter until an atomic stop
 * flag is set; it makes no MPI call. The threads are started once per k, before that k's
 * repetitions (then the ranks synchronize), and stopped and joined after them. Rank 1's main
 * thread answers every ping; how fast it gets the CPU back from the compute threads, and how
 * its library waits (polling, blocking, a progress thread), decide the latency.
 *
 * A repetition lasts ~100 ms: rank 0 sends a ping, times the round trip, then waits a
 * pseudo-random 200-1000 us (the same sequence for every library) before the next one, so that
 * pings land at random points of rank 1's schedule, as messages do in an application (back-to-
 * back round trips would mostly run inside the time slice rank 1's polling thread already has,
 * and hide the wait for the CPU). Every ping carries a flag telling rank 1 whether it is the
 * repetition's last. A repetition's figure is the MEAN one-way latency (round trip / 2) of its
 * pings: the expected reaction time. Rank 0 prints, after
 * "# library <MPI_Get_library_version's first line>":
 *
 *   m bench=reactivity case=os size=4 threads=<k> median=<ns> min=.. max=.. unit=ns
 *     roundtrips=<round trips over all repetitions>
 *
 * (case=os: the compute threads are the operating system's threads.) Statistics are over REPS
 * repetitions. Times come from CLOCK_MONOTONIC, not MPI_Wtime, so every library is timed by the
 * same clock. Only point-to-point calls are used (ranks synchronize by a zero-byte exchange);
 * MPI_THREAD_FUNNELED is enough, since only the main threads call MPI.
 *
 * Usage: reactivity [reps] [quick] (reps 1..99, default 5). "quick" bounds repetitions at
 * ~30 ms for smoke tests. Pinning is the launcher's or a wrapper's business.
 */
#define _GNU_SOURCE
#define BENCH_NAME "reactivity"
#include "common.h"
#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_REPS 99
#define GAP_MIN_NS 200000.0 /* between pings */
#define GAP_SPAN_NS 800000.0
#define MAX_THREADS 1024
#define TAG_PING 1
#define TAG_SYNC 3

static int rank, peer;
static atomic_int stop;

/* A compute thread: spins until told to stop, calling no MPI function. */
static void *spin(void *arg)
{
    volatile uint64_t counter = 0;
    (void)arg;
    while (!atomic_load_explicit(&stop, memory_order_relaxed))
        counter++;
    return NULL;
}

/* The gaps between pings: a fixed pseudo-random sequence (the same for every library). */
static uint64_t gap_state = 88172645463325252ull;

static double next_gap_ns(void)
{
    gap_state ^= gap_state << 13;
    gap_state ^= gap_state >> 7;
    gap_state ^= gap_state << 17;
    return GAP_MIN_NS + (double)(gap_state % 1000000) / 1e6 * GAP_SPAN_NS;
}

/*
 * One repetition. Rank 0 pings (4 bytes holding 1, or 0 for the last ping) with random gaps
 * until `budget` ns have passed, and returns the mean one-way latency and the count; rank 1
 * echoes every ping until the last.
 */
static double series(int32_t *buf, double budget, int *count)
{
    int n = 0;
    double sum = 0, t = now_ns();
    if (rank == 0) {
        int last;
        do {
            last = now_ns() - t >= budget;
            buf[0] = !last;
            double t0 = now_ns();
            check(MPI_Send(buf, 4, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD), "MPI_Send");
            check(MPI_Recv(buf, 4, MPI_BYTE, 1, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
            sum += (now_ns() - t0) / 2.0;
            n++;
            /* Rank 0 is alone on its core: waiting by spinning costs nobody anything. */
            double until = now_ns() + next_gap_ns();
            while (!last && now_ns() < until)
                ;
        } while (!last);
    } else {
        do {
            check(MPI_Recv(buf, 4, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                  "MPI_Recv");
            check(MPI_Send(buf, 4, MPI_BYTE, 0, TAG_PING, MPI_COMM_WORLD), "MPI_Send");
            n++;
        } while (buf[0]);
    }
    *count = n;
    return n ? sum / n : 0;
}

int main(int argc, char **argv)
{
    static const int ks[] = { 0, 1, 2, 4 };
    static pthread_t threads[MAX_THREADS];
    int nprocs, provided = MPI_THREAD_SINGLE, reps = 5, quick = 0, bad = 0, cores = 1;
    int32_t *buf = NULL;
    double v[MAX_REPS];

    check(MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(MPI_COMM_WORLD, &nprocs), "MPI_Comm_size");
    if (provided < MPI_THREAD_FUNNELED) {
        fprintf(stderr, "reactivity: rank %d: MPI_THREAD_FUNNELED not provided (provided %d)\n",
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
            fprintf(stderr, "usage: run 2 ranks of reactivity [reps: 1..%d] [quick]\n", MAX_REPS);
        MPI_Finalize();
        return 2;
    }
    double budget = quick ? 30e6 : 100e6;
    if (rank == 1) {
        cpu_set_t set;
        CPU_ZERO(&set);
        if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
            cores = CPU_COUNT(&set);
        if (cores * ks[3] > MAX_THREADS)
            cores = MAX_THREADS / ks[3];
    }
    /* Page-aligned and touched. */
    if (posix_memalign((void **)&buf, 4096, 4096) != 0) {
        fprintf(stderr, "reactivity: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    memset(buf, 0, 4096);
    if (rank == 0) {
        print_library();
    }
    peer = 1 - rank;

    int warm;
    sync_with(peer, TAG_SYNC);
    series(buf, 5e6, &warm); /* warm-up: connections, caches */
    for (int i = 0; i < 4; i++) {
        int k = ks[i], nthreads = rank == 1 ? k * cores : 0, total = 0;
        atomic_store(&stop, 0);
        for (int t = 0; t < nthreads; t++) {
            int rc = pthread_create(&threads[t], NULL, spin, NULL);
            if (rc != 0) {
                fprintf(stderr, "reactivity: pthread_create failed (%s)\n", strerror(rc));
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
        }
        for (int r = 0; r < reps; r++) {
            int n;
            sync_with(peer, TAG_SYNC);
            v[r] = series(buf, budget, &n);
            total += n;
        }
        atomic_store(&stop, 1);
        for (int t = 0; t < nthreads; t++)
            pthread_join(threads[t], NULL);
        if (rank == 0) {
            double m = median(v, reps);
            printf("m bench=reactivity case=os size=4 threads=%d median=%.1f min=%.1f max=%.1f unit=ns "
                   "roundtrips=%d\n",
                   k, m, v[0], v[reps - 1], total);
            fflush(stdout);
        }
    }
    free(buf);
    check(MPI_Finalize(), "MPI_Finalize");
    return 0;
}
