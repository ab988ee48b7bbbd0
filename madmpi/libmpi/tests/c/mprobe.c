/* Matched probes and receives: MPI_Mprobe, MPI_Improbe, MPI_Mrecv, MPI_Imrecv, with
 * MPI_MESSAGE_NO_PROC, truncation, a rendezvous-sized message, the error paths under
 * MPI_ERRORS_RETURN (MPICH 4.0.2's check order), and MPI_THREAD_MULTIPLE: two threads of rank
 * 0 drain rank 1's messages from the same source with matched probes, each receiving exactly
 * what it probed. Run with 2 processes. It passes on MPICH itself too; differences are noted below. */
#include "check.h"
#include <pthread.h>
#include <stdint.h>

#define MSGS 400       /* messages drained by the two threads */
#define BIGLEN 300000 /* ints: a rendezvous message */

static int rank, size, peer;

static void errors(void)
{
    int buf[4] = {0}, flag = -1;
    MPI_Message m = MPI_MESSAGE_NULL, noproc = MPI_MESSAGE_NO_PROC;
    MPI_Request r, req;
    MPI_Status st;

    CHECK_ERR(MPI_Mprobe(size, 0, MPI_COMM_WORLD, &m, &st), MPI_ERR_RANK, "MPI_Mprobe");
    CHECK_ERR(MPI_Mprobe(peer, -5, MPI_COMM_WORLD, NULL, &st), MPI_ERR_TAG, "MPI_Mprobe");
    CHECK_ERR(MPI_Mprobe(peer, 0, MPI_COMM_WORLD, NULL, &st), MPI_ERR_ARG, "MPI_Mprobe");
    CHECK_ERR(MPI_Mprobe(peer, 0, MPI_COMM_NULL, &m, &st), MPI_ERR_COMM, "MPI_Mprobe");
    CHECK_ERR(MPI_Improbe(size, -5, MPI_COMM_WORLD, NULL, NULL, NULL), MPI_ERR_RANK, "MPI_Improbe");
    CHECK_ERR(MPI_Improbe(peer, 0, MPI_COMM_WORLD, NULL, &m, &st), MPI_ERR_ARG, "MPI_Improbe");
    CHECK_ERR(MPI_Improbe(peer, 0, MPI_COMM_WORLD, &flag, NULL, &st), MPI_ERR_ARG, "MPI_Improbe");
    CHECK_ERR(MPI_Mrecv(buf, 1, MPI_INT, NULL, &st), MPI_ERR_ARG, "MPI_Mrecv");
    CHECK_ERR(MPI_Mrecv(buf, -1, MPI_INT, &m, NULL), MPI_ERR_REQUEST, "MPI_Mrecv");
    CHECK_ERR(MPI_Imrecv(buf, 1, MPI_INT, &m, &r), MPI_ERR_REQUEST, "MPI_Imrecv");
    /* A request handle is no message (MPI_ERR_ARG, as MPICH). */
    CHECK(MPI_Recv_init(buf, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, &req) == MPI_SUCCESS, "MPI_Recv_init");
    m = req;
    CHECK_ERR(MPI_Mrecv(buf, 1, MPI_INT, &m, &st), MPI_ERR_ARG, "MPI_Mrecv");
    MPI_Request_free(&req);
    CHECK_ERR(MPI_Mrecv(NULL, -1, MPI_DATATYPE_NULL, &noproc, NULL), MPI_ERR_COUNT, "MPI_Mrecv");
    CHECK_ERR(MPI_Mrecv(NULL, 1, MPI_DATATYPE_NULL, &noproc, NULL), MPI_ERR_TYPE, "MPI_Mrecv");
    CHECK_ERR(MPI_Mrecv(NULL, 1, MPI_INT, &noproc, NULL), MPI_ERR_BUFFER, "MPI_Mrecv");
    CHECK_ERR(MPI_Mrecv(buf, 1, MPI_INT, &noproc, NULL), MPI_ERR_ARG, "MPI_Mrecv");
    CHECK_ERR(MPI_Imrecv(NULL, 1, MPI_INT, &noproc, NULL), MPI_ERR_BUFFER, "MPI_Imrecv");
    CHECK_ERR(MPI_Imrecv(buf, 1, MPI_INT, &noproc, NULL), MPI_ERR_ARG, "MPI_Imrecv");
    CHECK(noproc == MPI_MESSAGE_NO_PROC, "failed calls leave the message handle alone");
}

static void proc_null(void)
{
    int buf[2] = {7, 7}, flag = 0, n = -1;
    MPI_Message m = MPI_MESSAGE_NULL;
    MPI_Request r;
    MPI_Status st;

    CHECK(MPI_Mprobe(MPI_PROC_NULL, 3, MPI_COMM_WORLD, &m, &st) == MPI_SUCCESS && m == MPI_MESSAGE_NO_PROC &&
              st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG &&
              MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == 0,
          "MPI_Mprobe(MPI_PROC_NULL): MPI_MESSAGE_NO_PROC");
    st.MPI_TAG = 5;
    CHECK(MPI_Mrecv(buf, 2, MPI_INT, &m, &st) == MPI_SUCCESS && m == MPI_MESSAGE_NULL &&
              st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && buf[0] == 7,
          "MPI_Mrecv(MPI_MESSAGE_NO_PROC): the status of MPI_PROC_NULL, message nulled");
    CHECK(MPI_Improbe(MPI_PROC_NULL, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m, &st) == MPI_SUCCESS && flag == 1 &&
              m == MPI_MESSAGE_NO_PROC,
          "MPI_Improbe(MPI_PROC_NULL): flag 1, MPI_MESSAGE_NO_PROC");
    CHECK(MPI_Imrecv(buf, 2, MPI_INT, &m, &r) == MPI_SUCCESS && m == MPI_MESSAGE_NULL &&
              MPI_Wait(&r, &st) == MPI_SUCCESS && st.MPI_SOURCE == MPI_PROC_NULL,
          "MPI_Imrecv(MPI_MESSAGE_NO_PROC): completes with the status of MPI_PROC_NULL");
}

/* Rank 1 sends, rank 0 takes with matched probes. */
static void basics(void)
{
    static int big[BIGLEN];
    int x[8], y[8] = {0}, i, n = -1, flag = 0, go = 0;
    MPI_Message m;
    MPI_Request r;
    MPI_Status st, st2;

    if (rank == 1) {
        for (i = 0; i < 8; i++)
            x[i] = 10 + i;
        MPI_Send(x, 8, MPI_INT, 0, 1, MPI_COMM_WORLD);
        MPI_Send(x, 3, MPI_INT, 0, 2, MPI_COMM_WORLD);
        MPI_Send(x, 8, MPI_INT, 0, 3, MPI_COMM_WORLD);
        for (i = 0; i < BIGLEN; i++)
            big[i] = i;
        MPI_Send(big, BIGLEN, MPI_INT, 0, 4, MPI_COMM_WORLD);
        MPI_Recv(&go, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return;
    }
    CHECK(MPI_Mprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &m, &st) == MPI_SUCCESS && m != MPI_MESSAGE_NULL &&
              st.MPI_SOURCE == 1 && st.MPI_TAG == 1 && MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == 8,
          "MPI_Mprobe: 8 ints with tag 1");
    /* The matched message left matching: a probe does not see it any more. */
    CHECK(MPI_Iprobe(1, 1, MPI_COMM_WORLD, &flag, &st2) == MPI_SUCCESS && flag == 0,
          "MPI_Iprobe no longer sees the matched message");
    CHECK(MPI_Mrecv(y, 8, MPI_INT, &m, &st) == MPI_SUCCESS && m == MPI_MESSAGE_NULL && st.MPI_TAG == 1 &&
              y[7] == 17,
          "MPI_Mrecv: the message, handle nulled");
    CHECK_ERR(MPI_Mrecv(y, 8, MPI_INT, &m, &st), MPI_ERR_REQUEST, "MPI_Mrecv");
    do
        CHECK(MPI_Improbe(1, 2, MPI_COMM_WORLD, &flag, &m, &st) == MPI_SUCCESS, "MPI_Improbe (poll)");
    while (!flag);
    CHECK(st.MPI_TAG == 2 && MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == 3, "MPI_Improbe: 3 ints, tag 2");
    memset(y, 0, sizeof y);
    CHECK(MPI_Imrecv(y, 8, MPI_INT, &m, &r) == MPI_SUCCESS && m == MPI_MESSAGE_NULL, "MPI_Imrecv");
    CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && st.MPI_TAG == 2 && MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS &&
              n == 3 && y[2] == 12 && y[3] == 0,
          "MPI_Wait of the MPI_Imrecv: 3 ints");
    CHECK(MPI_Mprobe(1, 3, MPI_COMM_WORLD, &m, &st) == MPI_SUCCESS, "MPI_Mprobe tag 3");
    CHECK_ERR(MPI_Mrecv(y, 4, MPI_INT, &m, &st), MPI_ERR_TRUNCATE, "");
    /* The message is received either way; MadMPI nulls the handle, MPICH 4.0.2 leaves the
     * stale handle when the receive fails. */
    CHECK(m == MPI_MESSAGE_NULL || !on_madmpi(), "a truncated MPI_Mrecv consumed the message");
    CHECK(MPI_Mprobe(1, 4, MPI_COMM_WORLD, &m, &st) == MPI_SUCCESS && MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS &&
              n == BIGLEN,
          "MPI_Mprobe of a %d-int message", BIGLEN);
    CHECK(MPI_Imrecv(big, BIGLEN, MPI_INT, &m, &r) == MPI_SUCCESS && MPI_Wait(&r, &st) == MPI_SUCCESS &&
              big[BIGLEN - 1] == BIGLEN - 1 && big[1] == 1,
          "its MPI_Imrecv");
    MPI_Send(&go, 1, MPI_INT, 1, 99, MPI_COMM_WORLD);
}

/* The value of element i of message `tag` (the message has `len_of(tag)` ints). */
static int len_of(int tag) { return 1 + (tag * 37) % 300; }
static int value(int tag, int i) { return tag * 1000 + i; }

static void *drain(void *arg)
{
    int t = (int)(intptr_t)arg, k, n, i, flag, *buf = malloc(300 * sizeof(int));
    long mine = 0;
    MPI_Message m;
    MPI_Request r;
    MPI_Status st;

    for (k = 0; k < MSGS / 2; k++) {
        if (t == 0) {
            if (MPI_Mprobe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &m, &st) != MPI_SUCCESS)
                CHECK(0, "thread 0: MPI_Mprobe");
        } else {
            do
                if (MPI_Improbe(1, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m, &st) != MPI_SUCCESS)
                    CHECK(0, "thread 1: MPI_Improbe");
            while (!flag);
        }
        MPI_Get_count(&st, MPI_INT, &n);
        if (n != len_of(st.MPI_TAG))
            CHECK(0, "thread %d: message %d has %d ints", t, st.MPI_TAG, n);
        if (t == 0) {
            if (MPI_Mrecv(buf, n, MPI_INT, &m, &st) != MPI_SUCCESS)
                CHECK(0, "thread 0: MPI_Mrecv");
        } else if (MPI_Imrecv(buf, n, MPI_INT, &m, &r) != MPI_SUCCESS || MPI_Wait(&r, &st) != MPI_SUCCESS) {
            CHECK(0, "thread 1: MPI_Imrecv");
        }
        for (i = 0; i < n; i++)
            if (buf[i] != value(st.MPI_TAG, i))
                CHECK(0, "thread %d: message %d element %d is %d", t, st.MPI_TAG, i, buf[i]);
        mine += st.MPI_TAG;
    }
    free(buf);
    CHECK(1, "thread %d received %d messages whole", t, MSGS / 2);
    return (void *)(intptr_t)mine;
}

static void threads(void)
{
    int tag, i, buf[300];
    pthread_t th[2];
    void *sum[2];

    if (rank == 1) {
        for (tag = 0; tag < MSGS; tag++) {
            for (i = 0; i < len_of(tag); i++)
                buf[i] = value(tag, i);
            MPI_Send(buf, len_of(tag), MPI_INT, 0, tag, MPI_COMM_WORLD);
        }
        MPI_Recv(&tag, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        return;
    }
    for (i = 0; i < 2; i++)
        CHECK(pthread_create(&th[i], NULL, drain, (void *)(intptr_t)i) == 0, "thread %d started", i);
    for (i = 0; i < 2; i++)
        pthread_join(th[i], &sum[i]);
    CHECK((intptr_t)sum[0] + (intptr_t)sum[1] == (intptr_t)MSGS * (MSGS - 1) / 2,
          "every message was received exactly once (tag sums %ld + %ld)", (long)(intptr_t)sum[0],
          (long)(intptr_t)sum[1]);
    MPI_Send(&tag, 1, MPI_INT, 1, 99, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int provided = -1;

    CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS &&
              provided == MPI_THREAD_MULTIPLE,
          "MPI_Init_thread(MPI_THREAD_MULTIPLE)");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    CHECK(size == 2, "2 processes");
    peer = 1 - rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    errors();
    proc_null();
    basics();
    threads();
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
