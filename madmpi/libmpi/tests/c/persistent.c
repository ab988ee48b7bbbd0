/* Persistent requests: MPI_Send_init, MPI_Ssend_init, MPI_Recv_init, MPI_Start, MPI_Startall,
 * with completion calls on active and inactive requests, cancellation, MPI_Request_free, and
 * the error paths under MPI_ERRORS_RETURN (MPICH 4.0.2's check order). Run with 2 processes.
 * It passes on MPICH itself too; differences are noted below. */
#include "check.h"

static int rank, size, peer;

static void errors(void)
{
    int buf[4] = {0}, flag = -1;
    MPI_Request r, null = MPI_REQUEST_NULL, bad = (MPI_Request)0x2c3fff00, rs[2];
    MPI_Status st;

    CHECK_ERR(MPI_Send_init(buf, -1, MPI_INT, peer, 0, MPI_COMM_WORLD, &r), MPI_ERR_COUNT, "MPI_Send_init");
    CHECK_ERR(MPI_Send_init(NULL, 1, MPI_INT, size, -1, MPI_COMM_WORLD, &r), MPI_ERR_BUFFER, "MPI_Send_init");
    CHECK_ERR(MPI_Send_init(buf, 1, MPI_INT, size, -1, MPI_COMM_WORLD, &r), MPI_ERR_RANK, "MPI_Send_init");
    CHECK_ERR(MPI_Send_init(buf, 1, MPI_INT, peer, -1, MPI_COMM_WORLD, &r), MPI_ERR_TAG, "MPI_Send_init");
    CHECK_ERR(MPI_Send_init(buf, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "MPI_Send_init");
    CHECK_ERR(MPI_Send_init(buf, 1, MPI_INT, peer, 0, MPI_COMM_NULL, &r), MPI_ERR_COMM, "MPI_Send_init");
    CHECK_ERR(MPI_Ssend_init(buf, 1, MPI_DATATYPE_NULL, peer, 0, MPI_COMM_WORLD, &r), MPI_ERR_TYPE,
              "MPI_Ssend_init");
    CHECK_ERR(MPI_Recv_init(NULL, 1, MPI_INT, size, -7, MPI_COMM_WORLD, &r), MPI_ERR_BUFFER, "MPI_Recv_init");
    CHECK_ERR(MPI_Recv_init(buf, 1, MPI_INT, size, -7, MPI_COMM_WORLD, NULL), MPI_ERR_RANK, "MPI_Recv_init");
    CHECK_ERR(MPI_Recv_init(buf, 1, MPI_INT, peer, -7, MPI_COMM_WORLD, &r), MPI_ERR_TAG, "MPI_Recv_init");
    CHECK_ERR(MPI_Recv_init(buf, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "MPI_Recv_init");
    CHECK_ERR(MPI_Start(NULL), MPI_ERR_ARG, "MPI_Start");
    CHECK_ERR(MPI_Start(&null), MPI_ERR_REQUEST, "MPI_Start");
    CHECK_ERR(MPI_Start(&bad), MPI_ERR_REQUEST, "MPI_Start");
    CHECK_ERR(MPI_Startall(-1, rs), MPI_ERR_COUNT, "MPI_Startall");
    CHECK_ERR(MPI_Startall(1, NULL), MPI_ERR_ARG, "MPI_Startall");
    CHECK_ERR(MPI_Startall(1, &null), MPI_ERR_REQUEST, "MPI_Startall");
    CHECK(MPI_Startall(0, NULL) == MPI_SUCCESS, "MPI_Startall of nothing");
    /* A request that is not persistent cannot be started. */
    CHECK(MPI_Irecv(buf, 1, MPI_INT, peer, 77, MPI_COMM_WORLD, &r) == MPI_SUCCESS, "MPI_Irecv");
    CHECK_ERR(MPI_Start(&r), MPI_ERR_REQUEST, "MPI_Start");
    CHECK(MPI_Cancel(&r) == MPI_SUCCESS && MPI_Wait(&r, &st) == MPI_SUCCESS && MPI_Test_cancelled(&st, &flag) == 0 &&
              flag == 1,
          "MPI_Irecv cancelled");
    /* Started twice; cancelling an inactive one (MPI_ERR_REQUEST, as MPICH). */
    CHECK(MPI_Recv_init(buf, 1, MPI_INT, peer, 78, MPI_COMM_WORLD, &r) == MPI_SUCCESS, "MPI_Recv_init");
    CHECK_ERR(MPI_Cancel(&r), MPI_ERR_REQUEST, "MPI_Cancel");
    CHECK(MPI_Start(&r) == MPI_SUCCESS, "MPI_Start");
    CHECK_ERR(MPI_Start(&r), MPI_ERR_REQUEST, "MPI_Start");
    rs[0] = null;
    rs[1] = r;
    CHECK_ERR(MPI_Startall(2, rs), MPI_ERR_REQUEST, "MPI_Startall");
    /* An active persistent receive is cancelled; it becomes inactive, the handle stays. */
    CHECK(MPI_Cancel(&r) == MPI_SUCCESS && MPI_Wait(&r, &st) == MPI_SUCCESS && r != MPI_REQUEST_NULL &&
              MPI_Test_cancelled(&st, &flag) == MPI_SUCCESS && flag == 1,
          "a started MPI_Recv_init cancelled: inactive, handle kept");
    CHECK(MPI_Request_free(&r) == MPI_SUCCESS && r == MPI_REQUEST_NULL, "MPI_Request_free of an inactive request");
}

/* Ten rounds of the same pair of requests; the data is read at each start. */
static void rounds(void)
{
    int out[16], in[16], i, k, idx = -1, flag = -1, n = -1, ok = 1;
    MPI_Request rs[2];
    MPI_Status sts[2], st;

    CHECK(MPI_Recv_init(in, 16, MPI_INT, peer, 1, MPI_COMM_WORLD, &rs[0]) == MPI_SUCCESS &&
              MPI_Send_init(out, 16, MPI_INT, peer, 1, MPI_COMM_WORLD, &rs[1]) == MPI_SUCCESS,
          "MPI_Recv_init and MPI_Send_init");
    /* Inactive: completion calls return at once, with the empty status, and keep the handles. */
    st.MPI_TAG = 5;
    CHECK(MPI_Wait(&rs[0], &st) == MPI_SUCCESS && rs[0] != MPI_REQUEST_NULL && st.MPI_TAG == MPI_ANY_TAG &&
              st.MPI_SOURCE == MPI_ANY_SOURCE,
          "MPI_Wait on an inactive request: at once, empty status, handle kept");
    CHECK(MPI_Test(&rs[1], &flag, &st) == MPI_SUCCESS && flag == 1 && rs[1] != MPI_REQUEST_NULL,
          "MPI_Test on an inactive request: flag 1");
    CHECK(MPI_Request_get_status(rs[0], &flag, &st) == MPI_SUCCESS && flag == 1 && st.MPI_TAG == MPI_ANY_TAG,
          "MPI_Request_get_status on an inactive request: flag 1, empty status");
    CHECK(MPI_Waitany(2, rs, &idx, &st) == MPI_SUCCESS && idx == MPI_UNDEFINED,
          "MPI_Waitany on inactive requests: MPI_UNDEFINED");
    CHECK(MPI_Testsome(2, rs, &n, &idx, sts) == MPI_SUCCESS && n == MPI_UNDEFINED,
          "MPI_Testsome on inactive requests: MPI_UNDEFINED");
    for (k = 0; k < 10; k++) {
        for (i = 0; i < 16; i++)
            out[i] = 1000 * rank + 100 * k + i;
        CHECK(MPI_Startall(2, rs) == MPI_SUCCESS, "round %d: MPI_Startall", k);
        if (k % 2 == 0) {
            CHECK(MPI_Waitall(2, rs, sts) == MPI_SUCCESS && rs[0] != MPI_REQUEST_NULL && rs[1] != MPI_REQUEST_NULL &&
                      sts[0].MPI_SOURCE == peer && sts[0].MPI_TAG == 1,
                  "round %d: MPI_Waitall, handles kept", k);
        } else {
            int done = 0, inds[2];
            while (done < 2) {
                CHECK(MPI_Waitsome(2, rs, &n, inds, sts) == MPI_SUCCESS && n != MPI_UNDEFINED, "round %d: MPI_Waitsome",
                      k);
                done += n;
            }
            CHECK(MPI_Waitsome(2, rs, &n, inds, sts) == MPI_SUCCESS && n == MPI_UNDEFINED,
                  "round %d: both inactive again", k);
        }
        for (i = 0; i < 16; i++)
            ok &= in[i] == 1000 * peer + 100 * k + i;
        CHECK(ok, "round %d: the data of this round", k);
    }
    CHECK(MPI_Request_free(&rs[0]) == MPI_SUCCESS && MPI_Request_free(&rs[1]) == MPI_SUCCESS &&
              rs[0] == MPI_REQUEST_NULL && rs[1] == MPI_REQUEST_NULL,
          "MPI_Request_free of both");
}

/* A synchronous persistent send completes only once matched; a derived type; PROC_NULL; a
 * persistent request freed while active still delivers. */
static void others(void)
{
    int x[8], y[4] = {0}, i, flag = 1, polls, go = 0;
    MPI_Datatype evens;
    MPI_Request r;
    MPI_Status st;

    MPI_Type_vector(4, 1, 2, MPI_INT, &evens);
    MPI_Type_commit(&evens);
    for (i = 0; i < 8; i++)
        x[i] = 10 * rank + i;
    if (rank == 0) {
        CHECK(MPI_Ssend_init(x, 1, evens, 1, 2, MPI_COMM_WORLD, &r) == MPI_SUCCESS, "MPI_Ssend_init of a vector");
        MPI_Type_free(&evens); /* the request keeps what it needs */
        CHECK(MPI_Start(&r) == MPI_SUCCESS, "MPI_Start");
        for (polls = 0; polls < 1000 && flag; polls++)
            CHECK(MPI_Request_get_status(r, &flag, &st) == MPI_SUCCESS && flag == 0, "not matched yet (poll %d)",
                  polls);
        CHECK(MPI_Send(&go, 1, MPI_INT, 1, 99, MPI_COMM_WORLD) == MPI_SUCCESS, "the receiver may go");
        CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && r != MPI_REQUEST_NULL, "the synchronous send completed");
        CHECK(MPI_Request_free(&r) == MPI_SUCCESS, "MPI_Request_free");
        CHECK(MPI_Send_init(x, 8, MPI_INT, 1, 3, MPI_COMM_WORLD, &r) == MPI_SUCCESS && MPI_Start(&r) == MPI_SUCCESS &&
                  MPI_Request_free(&r) == MPI_SUCCESS && r == MPI_REQUEST_NULL,
              "an active persistent send freed");
    } else {
        MPI_Type_free(&evens);
        CHECK(MPI_Recv(&go, 1, MPI_INT, 0, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS, "go");
        CHECK(MPI_Recv(y, 4, MPI_INT, 0, 2, MPI_COMM_WORLD, &st) == MPI_SUCCESS && y[0] == 0 && y[1] == 2 && y[3] == 6,
              "the vector of the synchronous send");
        CHECK(MPI_Recv(x, 8, MPI_INT, 0, 3, MPI_COMM_WORLD, &st) == MPI_SUCCESS && x[7] == 7,
              "the freed persistent send arrived");
    }
    /* MPI: the status of a receive from MPI_PROC_NULL has source MPI_PROC_NULL; MPICH 4.0.2
     * gives a persistent one the empty status (source MPI_ANY_SOURCE). */
    CHECK(MPI_Recv_init(y, 4, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r) == MPI_SUCCESS &&
              MPI_Start(&r) == MPI_SUCCESS && MPI_Wait(&r, &st) == MPI_SUCCESS &&
              (st.MPI_SOURCE == MPI_PROC_NULL || !on_madmpi()) && st.MPI_TAG == MPI_ANY_TAG &&
              MPI_Request_free(&r) == MPI_SUCCESS,
          "MPI_Recv_init from MPI_PROC_NULL: completes at once (source %d)", st.MPI_SOURCE);
    CHECK(MPI_Send_init(y, 4, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r) == MPI_SUCCESS &&
              MPI_Start(&r) == MPI_SUCCESS && MPI_Wait(&r, &st) == MPI_SUCCESS && MPI_Request_free(&r) == MPI_SUCCESS,
          "MPI_Send_init to MPI_PROC_NULL");
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
    rounds();
    others();
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
