/* MPI_THREAD_MULTIPLE: several threads per process communicate at once (nonblocking operations
 * completed by MPI_Wait, MPI_Test and MPI_Waitall, blocking MPI_Sendrecv), each thread with its
 * namesake on the other process, told apart by tag. Run with 2 processes. */
#include "check.h"
#include <pthread.h>
#include <stdint.h>

#define THREADS 4
#define ROUNDS 300
#define LEN 64

static int rank, peer;

static int value(int who, int thread, int round, int i)
{
    return who * 10000000 + thread * 1000000 + round * 1000 + i;
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg, r, i, flag, out[LEN], in[LEN], main_flag = -1;
    MPI_Request reqs[2];
    MPI_Status sts[2];

    CHECK(MPI_Is_thread_main(&main_flag) == MPI_SUCCESS && main_flag == 0,
          "thread %d: MPI_Is_thread_main is 0", t);
    for (r = 0; r < ROUNDS; r++) {
        for (i = 0; i < LEN; i++)
            out[i] = value(rank, t, r, i);
        memset(in, 0, sizeof in);
        if (MPI_Irecv(in, LEN, MPI_INT, peer, t, MPI_COMM_WORLD, &reqs[0]) != MPI_SUCCESS ||
            MPI_Isend(out, LEN, MPI_INT, peer, t, MPI_COMM_WORLD, &reqs[1]) != MPI_SUCCESS)
            CHECK(0, "thread %d round %d: MPI_Irecv/MPI_Isend", t, r);
        if (r % 2 == 0) {
            if (MPI_Waitall(2, reqs, sts) != MPI_SUCCESS || sts[0].MPI_TAG != t || sts[0].MPI_SOURCE != peer)
                CHECK(0, "thread %d round %d: MPI_Waitall", t, r);
        } else {
            flag = 0;
            while (!flag)
                if (MPI_Test(&reqs[1], &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                    CHECK(0, "thread %d round %d: MPI_Test", t, r);
            if (MPI_Wait(&reqs[0], &sts[0]) != MPI_SUCCESS || sts[0].MPI_TAG != t)
                CHECK(0, "thread %d round %d: MPI_Wait", t, r);
        }
        for (i = 0; i < LEN; i++)
            if (in[i] != value(peer, t, r, i))
                CHECK(0, "thread %d round %d: element %d is %d", t, r, i, in[i]);
        if (r % 10 == 0) {
            if (MPI_Sendrecv(out, LEN, MPI_INT, peer, 100 + t, in, LEN, MPI_INT, peer, 100 + t, MPI_COMM_WORLD,
                             &sts[0]) != MPI_SUCCESS ||
                in[LEN - 1] != value(peer, t, r, LEN - 1))
                CHECK(0, "thread %d round %d: MPI_Sendrecv", t, r);
        }
    }
    CHECK(1, "thread %d: %d rounds exchanged", t, ROUNDS);
    return NULL;
}

int main(int argc, char **argv)
{
    int provided = -1, size, t;
    pthread_t threads[THREADS];

    CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS &&
              provided == MPI_THREAD_MULTIPLE,
          "MPI_Init_thread(MPI_THREAD_MULTIPLE)");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    CHECK(size == 2, "2 processes");
    peer = 1 - rank;
    for (t = 0; t < THREADS; t++)
        CHECK(pthread_create(&threads[t], NULL, worker, (void *)(intptr_t)t) == 0, "thread %d started", t);
    for (t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
