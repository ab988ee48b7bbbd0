/* One-sided operations from several threads at once (MPI_THREAD_MULTIPLE): every rank runs
 * THREADS threads inside one MPI_Win_lock_all epoch; each thread adds 1 to the same int at rank 0
 * OPS times with MPI_Accumulate(SUM) + MPI_Win_flush, then OPS times MPI_Fetch_and_op(SUM) on a
 * second int. The two ints must end at size * THREADS * OPS exactly, and the values fetched by
 * all threads of all ranks must be 0 .. size * THREADS * OPS - 1, each exactly once. */
#include "check.h"
#include <pthread.h>

#define THREADS 4
#define OPS 1000

static MPI_Win win;
static int fetched[THREADS][OPS];
static int failed[THREADS];

static void *worker(void *arg)
{
    int t = (int)(long)arg;
    const int one = 1;
    for (int i = 0; i < OPS; i++) {
        int rc = MPI_Accumulate(&one, 1, MPI_INT, 0, 0, 1, MPI_INT, MPI_SUM, win);
        rc |= MPI_Win_flush(0, win);
        if (rc != MPI_SUCCESS)
            failed[t] = 1;
    }
    for (int i = 0; i < OPS; i++) {
        int rc = MPI_Fetch_and_op(&one, &fetched[t][i], MPI_INT, 0, 1, MPI_SUM, win);
        rc |= MPI_Win_flush(0, win);
        if (rc != MPI_SUCCESS)
            failed[t] = 1;
    }
    return NULL;
}

static int by_value(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int size = 0;
    int rank = check_init_multiple(&argc, &argv, &size);
    int *mem;
    MPI_Win_allocate(2 * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    mem[0] = mem[1] = 0;
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_lock_all(0, win);
    pthread_t threads[THREADS];
    for (long t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)t) == 0, "thread %ld started", t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    MPI_Win_unlock_all(win);
    for (int t = 0; t < THREADS; t++)
        CHECK(!failed[t], "thread %d: every accumulate, fetch_and_op and flush succeeded", t);
    MPI_Barrier(MPI_COMM_WORLD);

    const int total = size * THREADS * OPS;
    int *all = rank == 0 ? malloc(sizeof(int) * total) : NULL;
    MPI_Gather(fetched, THREADS * OPS, MPI_INT, all, THREADS * OPS, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        int sum = mem[0], counter = mem[1];
        MPI_Win_unlock(0, win);
        CHECK(sum == total, "%d accumulates of 1 sum to %d (got %d)", total, total, sum);
        CHECK(counter == total, "%d fetch_and_ops of 1 count to %d (got %d)", total, total, counter);
        qsort(all, total, sizeof(int), by_value);
        int first_wrong = -1;
        for (int i = 0; i < total && first_wrong < 0; i++)
            if (all[i] != i)
                first_wrong = i;
        CHECK(first_wrong < 0, "the fetched values are 0..%d, each once (first wrong at %d)", total - 1,
              first_wrong);
        free(all);
    }
    MPI_Win_free(&win);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
