/* The hot one-sided calls (lock, put, get, compare_and_swap, flush, unlock on an allocated
 * window, which on one node lives in shared memory) against the general path's rules, with
 * MPI_THREAD_MULTIPLE, at 2 or more processes:
 *  1. exclusive locks exclude across processes and threads: thread t of every rank locks rank
 *     (rank + t) % size exclusively ROUNDS times (one thread per target: a process may not lock
 *     a target twice), reads a counter there and writes it back plus
 *     one; every counter ends at size * ROUNDS exactly;
 *  2. compare_and_swap loops (hot) and fetch_and_op (general path) increment one counter at
 *     rank 0 from every thread of every rank inside lock_all: the sum is exact;
 *  3. a window freed while a thread's last call used it: that thread's next call with the old
 *     handle fails with MPI_ERR_WIN (or, if a new window took the handle, reaches the new one);
 *  4. synchronization errors met on the hot path's ground: a lock inside lock_all, an unlock or
 *     a flush of an unlocked rank, a put to a rank not locked, a lock twice, an unknown lock type
 *     (MPI_ERR_LOCKTYPE; MPI_ERR_ARG on MPICH's library), an out-of-range put; a lock right after a fence, and NOCHECK locks. */
#include "check.h"
#include <pthread.h>
#include <stdint.h>

#define THREADS 3
#define ROUNDS 300
#define CAS_ROUNDS 200

static MPI_Win win;
static int size, rank;
static int failed[THREADS];

static void *exclusive_increments(void *arg)
{
    int t = (int)(long)arg;
    int target = (rank + t) % size;
    for (int i = 0; i < ROUNDS; i++) {
        int64_t v = -1;
        int rc = MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, win);
        rc |= MPI_Get(&v, 1, MPI_INT64_T, target, 0, 1, MPI_INT64_T, win);
        rc |= MPI_Win_flush(target, win);
        v += 1;
        rc |= MPI_Put(&v, 1, MPI_INT64_T, target, 0, 1, MPI_INT64_T, win);
        rc |= MPI_Win_unlock(target, win);
        if (rc != MPI_SUCCESS)
            failed[t] = 1;
    }
    return NULL;
}

static void *counting(void *arg)
{
    int t = (int)(long)arg;
    const int64_t one = 1;
    for (int i = 0; i < CAS_ROUNDS; i++) {
        int64_t seen = 0, old = -1, want;
        int rc = MPI_SUCCESS;
        /* compare_and_swap until it wins. */
        do {
            want = seen + 1;
            rc |= MPI_Compare_and_swap(&want, &seen, &old, MPI_INT64_T, 0, 1, win);
            rc |= MPI_Win_flush(0, win);
            if (old == seen)
                break;
            seen = old;
        } while (rc == MPI_SUCCESS);
        rc |= MPI_Fetch_and_op(&one, &old, MPI_INT64_T, 0, 1, MPI_SUM, win);
        rc |= MPI_Win_flush(0, win);
        if (rc != MPI_SUCCESS)
            failed[t] = 1;
    }
    return NULL;
}

static void run_threads(void *(*f)(void *), int n, const char *what)
{
    pthread_t threads[THREADS];
    for (long t = 0; t < n; t++) {
        failed[t] = 0;
        CHECK(pthread_create(&threads[t], NULL, f, (void *)t) == 0, "%s: thread %ld started", what, t);
    }
    for (int t = 0; t < n; t++)
        pthread_join(threads[t], NULL);
    for (int t = 0; t < n; t++)
        CHECK(!failed[t], "%s: thread %d's calls all succeeded", what, t);
}

/* Part 3: a worker thread keeps the freed window as its last one. */
static pthread_barrier_t step;
static MPI_Win old_handle;
static int64_t *new_mem;
static int worker_rc[2];

static void *stale_user(void *arg)
{
    (void)arg;
    int64_t v = 7;
    int peer = (rank + 1) % size;
    worker_rc[0] = MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, old_handle);
    worker_rc[0] |= MPI_Put(&v, 1, MPI_INT64_T, peer, 0, 1, MPI_INT64_T, old_handle);
    worker_rc[0] |= MPI_Win_unlock(peer, old_handle);
    pthread_barrier_wait(&step); /* main frees the window */
    pthread_barrier_wait(&step);
    worker_rc[1] = MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, old_handle);
    return NULL;
}

int main(int argc, char **argv)
{
    rank = check_init_multiple(&argc, &argv, &size);
    CHECK(size >= 2, "at least 2 processes");
    int64_t *mem;

    /* 1. Exclusive increments. */
    MPI_Win_allocate(2 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &mem, &win);
    mem[0] = mem[1] = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    int lockers = size < THREADS ? size : THREADS;
    run_threads(exclusive_increments, lockers, "exclusive increments");
    MPI_Barrier(MPI_COMM_WORLD);
    int64_t expect = 0;
    for (int r = 0; r < size; r++)
        for (int t = 0; t < lockers; t++)
            expect += (r + t) % size == rank ? ROUNDS : 0;
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    CHECK(mem[0] == expect, "every exclusive increment landed (%lld of %lld)", (long long)mem[0],
          (long long)expect);
    MPI_Win_unlock(rank, win);

    /* 2. compare_and_swap and fetch_and_op on one counter. */
    MPI_Win_lock_all(0, win);
    run_threads(counting, THREADS, "compare_and_swap + fetch_and_op");
    MPI_Win_unlock_all(win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
        long long want = 2LL * size * THREADS * CAS_ROUNDS;
        CHECK(mem[1] == want, "compare_and_swap and fetch_and_op counted %lld of %lld", (long long)mem[1], want);
        MPI_Win_unlock(0, win);
    }

    /* 4. Synchronization errors and transitions. */
    int peer = (rank + 1) % size;
    int64_t v = 1;
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock_all(0, win);
    CHECK_ERR(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win), MPI_ERR_RMA_SYNC, "epoch");
    CHECK_ERR(MPI_Win_unlock(peer, win), MPI_ERR_RMA_SYNC, "MPI_Win_lock");
    CHECK(MPI_Win_flush(peer, win) == MPI_SUCCESS, "a flush inside lock_all");
    MPI_Win_unlock_all(win);
    CHECK_ERR(MPI_Win_flush(peer, win), MPI_ERR_RMA_SYNC, "passive");
    /* MPI's class; MPICH's library says MPI_ERR_ARG. */
    int bad_type = MPI_Win_lock(12345, peer, 0, win);
    CHECK(class_of(bad_type) == (on_madmpi() ? MPI_ERR_LOCKTYPE : MPI_ERR_ARG), "an unknown lock type is MPI_ERR_LOCKTYPE");
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, peer, 0, win);
    CHECK_ERR(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win), MPI_ERR_RMA_SYNC, "locked");
    CHECK_ERR(MPI_Win_lock_all(0, win), MPI_ERR_RMA_SYNC, "epoch");
    /* MPICH's library does not check the target of a put against the locked ones. */
    if (size > 2 && on_madmpi())
        CHECK_ERR(MPI_Put(&v, 1, MPI_INT64_T, (rank + 2) % size, 0, 1, MPI_INT64_T, win), MPI_ERR_RMA_SYNC,
                  "epoch");
    if (on_madmpi())
        CHECK_ERR(MPI_Put(&v, 1, MPI_INT64_T, peer, 2, 1, MPI_INT64_T, win), MPI_ERR_RMA_RANGE, "outside");
    CHECK_ERR(MPI_Put(&v, 1, MPI_INT64_T, size, 0, 1, MPI_INT64_T, win), MPI_ERR_RANK, "rank");
    CHECK(MPI_Win_unlock(peer, win) == MPI_SUCCESS, "the lock outlived the errors");
    CHECK_ERR(MPI_Win_unlock(peer, win), MPI_ERR_RMA_SYNC, "MPI_Win_lock");
    MPI_Barrier(MPI_COMM_WORLD);
    /* A lock right after a fence that opened no operation, and a NOCHECK lock. */
    MPI_Win_fence(0, win);
    CHECK(MPI_Win_lock(MPI_LOCK_SHARED, peer, MPI_MODE_NOCHECK, win) == MPI_SUCCESS, "a NOCHECK lock after a fence");
    v = 100 + rank;
    CHECK(MPI_Put(&v, 1, MPI_INT64_T, peer, 1, 1, MPI_INT64_T, win) == MPI_SUCCESS, "a put under NOCHECK");
    CHECK(MPI_Win_unlock(peer, win) == MPI_SUCCESS, "its unlock");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, rank, 0, win);
    int from = (rank + size - 1) % size;
    CHECK(mem[1] == 100 + from, "the NOCHECK put landed (%lld)", (long long)mem[1]);
    MPI_Win_unlock(rank, win);
    MPI_Barrier(MPI_COMM_WORLD);

    /* 3. A window freed under a thread's last call. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    old_handle = win;
    pthread_barrier_init(&step, NULL, 2);
    pthread_t worker;
    CHECK(pthread_create(&worker, NULL, stale_user, NULL) == 0, "the worker started");
    pthread_barrier_wait(&step);
    CHECK(worker_rc[0] == MPI_SUCCESS, "the worker used the window");
    MPI_Win_free(&win);
    /* Our own last call used it too. (MPICH's library does not recognize a freed window's
     * handle: it reuses the object; the checks of the freed handle are ours only.) */
    if (on_madmpi()) {
        CHECK_ERR(MPI_Put(&v, 1, MPI_INT64_T, peer, 0, 1, MPI_INT64_T, old_handle), MPI_ERR_WIN, "window");
        CHECK_ERR(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, old_handle), MPI_ERR_WIN, "window");
    }
    MPI_Win new_win;
    MPI_Win_allocate(sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL, MPI_COMM_WORLD, &new_mem, &new_win);
    pthread_barrier_wait(&step);
    pthread_join(worker, NULL);
    if (new_win == old_handle) {
        CHECK(worker_rc[1] == MPI_SUCCESS, "the handle now names the new window, which the worker locked");
        CHECK(MPI_Win_unlock(peer, new_win) == MPI_SUCCESS, "and unlocked (from another thread: same process)");
    } else if (on_madmpi()) {
        CHECK(class_of(worker_rc[1]) == MPI_ERR_WIN, "the freed window's handle is MPI_ERR_WIN for the worker");
    }
    MPI_Win_free(&new_win);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
