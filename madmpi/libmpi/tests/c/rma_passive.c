/* Passive-target progress: the target computes for 300 ms without calling MPI while every
 * other rank locks its window, puts, gets, accumulates and unlocks. The operations are applied
 * by the target's progression, not by its next MPI call: each origin's epoch ends within 5 ms
 * per origin, long before the target's computation does (MPICH's and Open MPI's wait for the
 * target). RMA_PASSIVE_BOUND_MS, if set, is the bound for the whole epoch instead (for jobs
 * whose ranks oversubscribe the machine: a progression thread's wake-up then waits for the
 * scheduler), and RMA_PASSIVE_COMPUTE_MS the target's computation (a bound that stays well
 * under it still tells progress by the target's library from progress at its next call). */
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
    double took = 0;
    if (rank == target) {
        MPI_Barrier(MPI_COMM_WORLD);
        double end = check_now() + compute;
        volatile double x = 1;
        while (check_now() < end)
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
        took = check_now() - t0;
        CHECK(got[0] == 100 * rank && got[3] == 100 * rank + 3, "the get read the put's values back");
        /* The origins' exclusive epochs follow one another: 5 ms each is a wide margin over
         * the tenths of a millisecond they take, and 60 times under the computation even with
         * 7 origins. */
        double bound = 5e-3 * (size - 1);
        const char *forced = getenv("RMA_PASSIVE_BOUND_MS");
        if (forced && atof(forced) > 0)
            bound = atof(forced) * 1e-3;
        CHECK(took < bound, "lock/put/accumulate/get/unlock took %.3f ms (bound %.0f ms) while the target computed %.0f ms",
              took * 1e3, bound * 1e3, compute * 1e3);
    }
    MPI_Barrier(MPI_COMM_WORLD);
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
