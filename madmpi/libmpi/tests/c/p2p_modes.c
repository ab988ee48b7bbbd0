/* Send modes and the buffered-send buffer: MPI_Rsend, MPI_Irsend, MPI_Bsend, MPI_Ibsend,
 * MPI_Buffer_attach, MPI_Buffer_detach, MPI_Sendrecv_replace (contiguous and derived
 * datatypes, truncation, MPI_PROC_NULL), with their error paths under MPI_ERRORS_RETURN, in
 * MPICH 4.0.2's check order. Run with 2 processes. It passes on MPICH itself too (built with
 * mpicc.mpich, run with mpiexec.hydra and MPICH's library); differences are noted below. */
#include "check.h"

#define BIG 40000 /* ints: a rendezvous message, in flight until its receive is posted */

static int rank, size, peer;

static void errors(void)
{
    int buf[4] = {0}, sz = 0;
    char space[100];
    void *p = NULL;
    MPI_Request r;
    MPI_Status st;

    CHECK_ERR(MPI_Rsend(buf, -1, MPI_INT, peer, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Rsend");
    CHECK_ERR(MPI_Rsend(NULL, 1, MPI_INT, size, -1, MPI_COMM_WORLD), MPI_ERR_BUFFER, "MPI_Rsend");
    CHECK_ERR(MPI_Rsend(buf, 1, MPI_INT, size, -1, MPI_COMM_WORLD), MPI_ERR_RANK, "MPI_Rsend");
    CHECK_ERR(MPI_Rsend(buf, 1, MPI_INT, peer, -1, MPI_COMM_WORLD), MPI_ERR_TAG, "MPI_Rsend");
    CHECK_ERR(MPI_Rsend(buf, 1, MPI_INT, peer, 0, MPI_COMM_NULL), MPI_ERR_COMM, "MPI_Rsend");
    CHECK_ERR(MPI_Irsend(buf, 1, MPI_DATATYPE_NULL, peer, 0, MPI_COMM_WORLD, &r), MPI_ERR_TYPE, "MPI_Irsend");
    CHECK_ERR(MPI_Irsend(buf, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "MPI_Irsend");

    /* The buffer: arguments, none attached, too small, attached twice. */
    CHECK_ERR(MPI_Buffer_detach(NULL, &sz), MPI_ERR_ARG, "MPI_Buffer_detach");
    CHECK_ERR(MPI_Buffer_detach(&p, NULL), MPI_ERR_ARG, "MPI_Buffer_detach");
    p = buf;
    sz = -1;
    CHECK(MPI_Buffer_detach(&p, &sz) == MPI_SUCCESS && p == NULL && sz == 0,
          "MPI_Buffer_detach with no buffer attached: NULL and 0");
    CHECK_ERR(MPI_Bsend(buf, 1, MPI_INT, peer, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER, "MPI_Bsend");
    CHECK_ERR(MPI_Ibsend(buf, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, &r), MPI_ERR_BUFFER, "MPI_Ibsend");
    CHECK(MPI_Bsend(buf, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD) == MPI_SUCCESS,
          "MPI_Bsend to MPI_PROC_NULL needs no buffer");
    CHECK_ERR(MPI_Buffer_attach(NULL, 100), MPI_ERR_ARG, "MPI_Buffer_attach");
    CHECK_ERR(MPI_Buffer_attach(space, -1), MPI_ERR_ARG, "MPI_Buffer_attach");
    CHECK_ERR(MPI_Buffer_attach(space, MPI_BSEND_OVERHEAD - 1), MPI_ERR_BUFFER, "MPI_Buffer_attach");
    CHECK(MPI_Buffer_attach(space, sizeof space) == MPI_SUCCESS, "MPI_Buffer_attach of 100 bytes");
    CHECK_ERR(MPI_Buffer_attach(space, sizeof space), MPI_ERR_BUFFER, "MPI_Buffer_attach");
    CHECK_ERR(MPI_Bsend(buf, -1, MPI_INT, peer, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "MPI_Bsend");
    CHECK_ERR(MPI_Bsend(NULL, 1, MPI_INT, size, -1, MPI_COMM_WORLD), MPI_ERR_BUFFER, "MPI_Bsend");
    CHECK_ERR(MPI_Bsend(buf, 1, MPI_INT, size, -1, MPI_COMM_WORLD), MPI_ERR_RANK, "MPI_Bsend");
    CHECK_ERR(MPI_Bsend(buf, 1, MPI_INT, peer, -1, MPI_COMM_WORLD), MPI_ERR_TAG, "MPI_Bsend");
    CHECK_ERR(MPI_Ibsend(buf, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "MPI_Ibsend");
    CHECK(MPI_Buffer_detach(&p, &sz) == MPI_SUCCESS && p == space && sz == (int)sizeof space,
          "MPI_Buffer_detach gives the buffer back");

    CHECK_ERR(MPI_Sendrecv_replace(buf, 1, MPI_INT, peer, 0, peer, 0, MPI_COMM_NULL, &st), MPI_ERR_COMM,
              "MPI_Sendrecv_replace");
    CHECK_ERR(MPI_Sendrecv_replace(NULL, -1, MPI_DATATYPE_NULL, size, -1, size, -2, MPI_COMM_WORLD, NULL),
              MPI_ERR_COUNT, "MPI_Sendrecv_replace");
    CHECK_ERR(MPI_Sendrecv_replace(NULL, 1, MPI_DATATYPE_NULL, size, -1, size, -2, MPI_COMM_WORLD, NULL),
              MPI_ERR_TYPE, "MPI_Sendrecv_replace");
    /* MPICH's order: count, datatype, buffer, dest, sendtag, source, recvtag, status. */
    CHECK_ERR(MPI_Sendrecv_replace(NULL, 1, MPI_INT, size, -1, size, -2, MPI_COMM_WORLD, NULL), MPI_ERR_BUFFER,
              "MPI_Sendrecv_replace");
    CHECK_ERR(MPI_Sendrecv_replace(buf, 1, MPI_INT, size, -1, size, -2, MPI_COMM_WORLD, NULL), MPI_ERR_RANK,
              "MPI_Sendrecv_replace");
    CHECK_ERR(MPI_Sendrecv_replace(buf, 1, MPI_INT, peer, -1, size, -2, MPI_COMM_WORLD, NULL), MPI_ERR_TAG,
              "MPI_Sendrecv_replace");
    CHECK_ERR(MPI_Sendrecv_replace(buf, 1, MPI_INT, peer, 0, size, -2, MPI_COMM_WORLD, NULL), MPI_ERR_RANK,
              "MPI_Sendrecv_replace");
    CHECK_ERR(MPI_Sendrecv_replace(buf, 1, MPI_INT, peer, 0, peer, -2, MPI_COMM_WORLD, NULL), MPI_ERR_TAG,
              "MPI_Sendrecv_replace");
    CHECK_ERR(MPI_Sendrecv_replace(buf, 1, MPI_INT, peer, 0, peer, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG,
              "MPI_Sendrecv_replace");
}

/* Ready sends: the receive is posted before the sender is told to go. */
static void ready(void)
{
    int x[8], i, go = 0;
    MPI_Request r;
    MPI_Status st;

    if (rank == 1) {
        CHECK(MPI_Irecv(x, 8, MPI_INT, 0, 1, MPI_COMM_WORLD, &r) == MPI_SUCCESS, "MPI_Irecv for the ready send");
        CHECK(MPI_Send(&go, 1, MPI_INT, 0, 99, MPI_COMM_WORLD) == MPI_SUCCESS, "go");
        CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && st.MPI_TAG == 1 && x[7] == 7, "MPI_Rsend arrived");
        CHECK(MPI_Irecv(x, 8, MPI_INT, 0, 2, MPI_COMM_WORLD, &r) == MPI_SUCCESS, "MPI_Irecv for MPI_Irsend");
        CHECK(MPI_Send(&go, 1, MPI_INT, 0, 99, MPI_COMM_WORLD) == MPI_SUCCESS, "go");
        CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && st.MPI_TAG == 2 && x[7] == 14, "MPI_Irsend arrived");
    } else {
        for (i = 0; i < 8; i++)
            x[i] = i;
        CHECK(MPI_Recv(&go, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS, "go");
        CHECK(MPI_Rsend(x, 8, MPI_INT, 1, 1, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Rsend");
        for (i = 0; i < 8; i++)
            x[i] = 2 * i;
        CHECK(MPI_Recv(&go, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS, "go");
        CHECK(MPI_Irsend(x, 8, MPI_INT, 1, 2, MPI_COMM_WORLD, &r) == MPI_SUCCESS && MPI_Wait(&r, &st) == MPI_SUCCESS,
              "MPI_Irsend");
    }
}

/* Buffered sends return before the receiver posts anything; detach waits for delivery. */
static void buffered(void)
{
    static int big1[BIG], big2[BIG], in[BIG];
    int small[8], got[4], i, flag = 0, sz = 0, bytes = 0, go = 1;
    char *space;
    void *p = NULL;
    MPI_Datatype evens;
    MPI_Request r;
    MPI_Status st;

    MPI_Type_vector(4, 1, 2, MPI_INT, &evens);
    MPI_Type_commit(&evens);
    if (rank == 0) {
        bytes = 2 * (BIG * (int)sizeof(int) + MPI_BSEND_OVERHEAD) + 4 * (int)sizeof(int) + MPI_BSEND_OVERHEAD;
        space = malloc(bytes);
        for (i = 0; i < BIG; i++) {
            big1[i] = i;
            big2[i] = -i;
        }
        for (i = 0; i < 8; i++)
            small[i] = 100 + i;
        CHECK(MPI_Buffer_attach(space, bytes) == MPI_SUCCESS, "MPI_Buffer_attach of %d bytes", bytes);
        CHECK(MPI_Bsend(big1, BIG, MPI_INT, 1, 1, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Bsend of %d ints", BIG);
        CHECK(MPI_Ibsend(big2, BIG, MPI_INT, 1, 2, MPI_COMM_WORLD, &r) == MPI_SUCCESS, "MPI_Ibsend");
        /* The message is in the buffer: the user's is free again, and the request complete. */
        big2[0] = 12345;
        CHECK(MPI_Test(&r, &flag, &st) == MPI_SUCCESS && flag == 1 && r == MPI_REQUEST_NULL,
              "the MPI_Ibsend request is complete at once");
        CHECK(MPI_Bsend(small, 1, evens, 1, 3, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Bsend of a vector type");
        CHECK_ERR(MPI_Bsend(small, 100, MPI_INT, 1, 4, MPI_COMM_WORLD), MPI_ERR_BUFFER, "MPI_Bsend");
        CHECK(MPI_Send(&go, 1, MPI_INT, 1, 99, MPI_COMM_WORLD) == MPI_SUCCESS, "the receiver may go");
        CHECK(MPI_Buffer_detach(&p, &sz) == MPI_SUCCESS && p == space && sz == bytes,
              "MPI_Buffer_detach waits for the messages and gives the buffer back");
        /* Nested use: detach, attach another, restore. */
        CHECK(MPI_Buffer_attach(p, sz) == MPI_SUCCESS && MPI_Buffer_detach(&p, &sz) == MPI_SUCCESS && p == space,
              "attach again, detach again");
        free(space);
    } else {
        CHECK(MPI_Recv(&go, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS, "go");
        CHECK(MPI_Recv(in, BIG, MPI_INT, 0, 1, MPI_COMM_WORLD, &st) == MPI_SUCCESS && in[BIG - 1] == BIG - 1,
              "the MPI_Bsend message");
        CHECK(MPI_Recv(in, BIG, MPI_INT, 0, 2, MPI_COMM_WORLD, &st) == MPI_SUCCESS && in[0] == 0 &&
                  in[BIG - 1] == 1 - BIG,
              "the MPI_Ibsend message (as it was at the call)");
        CHECK(MPI_Recv(got, 4, MPI_INT, 0, 3, MPI_COMM_WORLD, &st) == MPI_SUCCESS && got[0] == 100 && got[1] == 102 &&
                  got[3] == 106,
              "the vector: every other int");
    }
    MPI_Type_free(&evens);
}

/* MPI_Sendrecv_replace: exchange in place, a derived type, truncation, MPI_PROC_NULL. */
static void replace(void)
{
    int x[100], y[18], i, n = -1, ok = 1;
    MPI_Datatype vec;
    MPI_Status st;

    for (i = 0; i < 100; i++)
        x[i] = rank * 1000 + i;
    CHECK(MPI_Sendrecv_replace(x, 100, MPI_INT, peer, 5, peer, 5, MPI_COMM_WORLD, &st) == MPI_SUCCESS &&
              st.MPI_SOURCE == peer && st.MPI_TAG == 5 && MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS &&
              n == 100 && x[0] == peer * 1000 && x[99] == peer * 1000 + 99,
          "MPI_Sendrecv_replace of 100 ints");
    /* 5 blocks of 2 ints every 4: the gaps keep their values. */
    MPI_Type_vector(5, 2, 4, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    for (i = 0; i < 18; i++)
        y[i] = rank * 100 + i;
    CHECK(MPI_Sendrecv_replace(y, 1, vec, peer, 6, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st) ==
                  MPI_SUCCESS &&
              st.MPI_SOURCE == peer && st.MPI_TAG == 6 && MPI_Get_count(&st, vec, &n) == MPI_SUCCESS && n == 1,
          "MPI_Sendrecv_replace of a vector type");
    for (i = 0; i < 18; i++)
        ok &= y[i] == ((i % 4) < 2 ? peer : rank) * 100 + i;
    CHECK(ok, "the blocks came from the peer, the gaps are untouched");
    MPI_Type_free(&vec);
    /* Rank 0 sends 4 ints and takes 4; rank 1 sends 2 and takes 2: a truncation at rank 1. */
    for (i = 0; i < 4; i++)
        x[i] = rank * 10 + i;
    x[2 + rank] = -1;
    if (rank == 0) {
        CHECK(MPI_Sendrecv_replace(x, 4, MPI_INT, 1, 7, 1, 7, MPI_COMM_WORLD, &st) == MPI_SUCCESS &&
                  MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == 2 && x[0] == 10 && x[1] == 11 && x[2] == -1,
              "MPI_Sendrecv_replace: 2 ints into room for 4");
    } else {
        CHECK_ERR(MPI_Sendrecv_replace(x, 2, MPI_INT, 0, 7, 0, 7, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE, "");
        /* MPI leaves the buffer undefined on error. MadMPI stores the first 2 ints and gives
         * their status, as MPI_Recv does; MPICH leaves the buffer and the status as they were. */
        if (on_madmpi())
            CHECK(MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == 2 && x[0] == 0 && x[1] == 1 && x[3] == -1,
                  "a truncated MPI_Sendrecv_replace keeps the first 2 ints and their status");
    }
    x[0] = 42;
    CHECK(MPI_Sendrecv_replace(x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st) ==
                  MPI_SUCCESS &&
              st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG && x[0] == 42,
          "MPI_Sendrecv_replace with MPI_PROC_NULL moves nothing");
}

int main(int argc, char **argv)
{
    CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS, "MPI_Init");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    CHECK(size == 2, "2 processes");
    peer = 1 - rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    errors();
    ready();
    buffered();
    replace();
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
