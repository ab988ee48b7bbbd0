/* Lock fairness: a writer is not starved by a stream of readers. Every rank but the writer
 * (rank 1) locks rank 0's window shared, reads a flag and unlocks, over and over, so that their
 * shared locks overlap; 50 ms later the writer locks it exclusive, sets the flag and unlocks.
 * Each reader holds its lock 1 ms, so that where locks are taken at once the readers' holds
 * always overlap. Once a writer waits, later readers queue behind it (FIFO): it gets the lock
 * as soon as the readers holding it leave, and the readers see the flag and stop. A
 * reader-preferring lock would keep the writer waiting while the readers overlap: they give up
 * after 10 s and the checks fail. Both lock implementations: `MPI_Win_allocate` (a ticket lock in shared memory
 * within a node) and `MPI_Win_create` (the target's lock queue, driven by messages). */
#include "check.h"
#include <stdlib.h>
#include <time.h>

static void round_on(const char *flavour, MPI_Win win, int rank)
{
    const int target = 0, writer = 1;
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == writer) {
        struct timespec pause = {0, 50 * 1000 * 1000}; /* the readers stream by then */
        nanosleep(&pause, NULL);
        int one = 1;
        double t0 = check_now();
        MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
        MPI_Put(&one, 1, MPI_INT, target, 0, 1, MPI_INT, win);
        MPI_Win_unlock(target, win);
        double took = check_now() - t0;
        CHECK(took < 5.0, "%s: the writer's exclusive epoch took %.3f ms among streaming readers", flavour,
              took * 1e3);
    } else {
        double give_up = check_now() + 10.0;
        long epochs = 0;
        int flag = 0;
        struct timespec hold = {0, 1000 * 1000};
        while (!flag && check_now() < give_up) {
            MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win);
            MPI_Get(&flag, 1, MPI_INT, target, 0, 1, MPI_INT, win);
            nanosleep(&hold, NULL);
            MPI_Win_unlock(target, win);
            epochs++;
        }
        CHECK(flag == 1, "%s: the reader saw the writer's flag after %ld shared epochs", flavour, epochs);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int size = 0;
    int rank = check_init_multiple(&argc, &argv, &size);
    CHECK(size >= 3, "%d processes (a writer and at least two readers)", size);

    int *mem;
    MPI_Win win;
    MPI_Win_allocate(sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    *mem = 0;
    round_on("allocate", win, rank);
    MPI_Win_free(&win);

    int *own = calloc(1, sizeof(int));
    MPI_Win_create(own, sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    round_on("create", win, rank);
    MPI_Win_free(&win);
    free(own);

    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
