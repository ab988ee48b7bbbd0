/* Passive-target progress: the target computes for 300 ms (RMA_PASSIVE_COMPUTE_MS, if set)
 * without calling MPI while every other rank locks its window, puts, gets, accumulates and
 * unlocks. The operations are applied by the target's progression, not by its next MPI call:
 * each origin's epoch ends before the target's computation does (MPICH's and Open MPI's wait
 * for the target). The check compares the two instants on the machine's monotonic clock (every
 * rank runs on this kernel, namespace hosts too), not a duration against a bound, so a loaded
 * machine slows the epochs without failing the test unless it delays them by the whole
 * computation; the epoch's duration is printed. */
#include "check.h"
#include <time.h>

int main(int argc, char **argv)
{
    int size = 0;
    int rank = check_init_multiple(&argc, &argv, &size);
    CHECK(size >= 2, "%d processes", size);
    int *mem;
    MPI_Win win;
    MPI_Win_allocate(64 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    for (int i = 0; i < 64; i++)
        mem[i] = i;
    MPI_Barrier(MPI_COMM_WORLD);
    const int target = 0;
    const char *compute_ms = getenv("RMA_PASSIVE_COMPUTE_MS");
    const double compute = compute_ms && atof(compute_ms) > 0 ? atof(compute_ms) * 1e-3 : 0.3;
    double took = 0, epoch_end = 0, compute_end = 0;
    if (rank == target) {
        MPI_Barrier(MPI_COMM_WORLD);
        double end = check_now() + compute;
        volatile double x = 1;
        while ((compute_end = check_now()) < end)
            x = x * 1.0000001 + 1e-9; /* no MPI call */
    } else {
        MPI_Barrier(MPI_COMM_WORLD);
        struct timespec pause = {0, 20 * 1000 * 1000}; /* the target is computing by then */
        nanosleep(&pause, NULL);
        int v[4] = {100 * rank, 100 * rank + 1, 100 * rank + 2, 100 * rank + 3}, got[4] = {0}, one = 1;
        double t0 = check_now();
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
        MPI_Put(v, 4, MPI_INT, target, 4 * rank, 4, MPI_INT, win);
        MPI_Accumulate(&one, 1, MPI_INT, target, 0, 1, MPI_INT, MPI_SUM, win);
        MPI_Get(got, 4, MPI_INT, target, 4 * rank, 4, MPI_INT, win);
        MPI_Win_unlock(target, win);
        epoch_end = check_now();
        took = epoch_end - t0;
        CHECK(got[0] == 100 * rank && got[3] == 100 * rank + 3, "the get read the put's values back");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(&compute_end, 1, MPI_DOUBLE, target, MPI_COMM_WORLD);
    if (rank != target)
        CHECK(epoch_end < compute_end,
              "lock/put/accumulate/get/unlock took %.3f ms and ended %.1f ms before the target's %.0f ms computation did",
              took * 1e3, (compute_end - epoch_end) * 1e3, compute * 1e3);
    if (rank == target) {
        CHECK(mem[0] == size - 1, "every origin's accumulate landed (%d)", mem[0]);
        int ok = 1;
        for (int r = 1; r < size; r++)
            ok &= mem[4 * r] == 100 * r && mem[4 * r + 3] == 100 * r + 3;
        CHECK(ok, "every origin's put landed");
    }
    MPI_Win_free(&win);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
