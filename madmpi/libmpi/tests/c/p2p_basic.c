/* Every function of libmpi's first batch, with its error paths (under MPI_ERRORS_RETURN):
 * environment, error handlers and strings, communicator queries, blocking and nonblocking
 * point-to-point, probes, counts, completion. Run with 2 processes (more: the extra ranks only
 * take part in the ring exchange). Built twice by tests/c_programs.rs: against madmpi's mpi.h
 * and against MPICH's, and run on libmpi both times. */
#include "check.h"

static int rank, size, peer;

static void before_init(void)
{
    int flag = -1, v = 0, sv = -1, len = 0, cls = -1;
    char lib[MPI_MAX_LIBRARY_VERSION_STRING];
    char s[MPI_MAX_ERROR_STRING];

    CHECK(MPI_Initialized(&flag) == MPI_SUCCESS && flag == 0, "MPI_Initialized before MPI_Init: 0");
    CHECK(MPI_Finalized(&flag) == MPI_SUCCESS && flag == 0, "MPI_Finalized before MPI_Init: 0");
    CHECK(MPI_Get_version(&v, &sv) == MPI_SUCCESS && v == MPI_VERSION && sv == MPI_SUBVERSION,
          "MPI_Get_version: %d.%d", v, sv);
    CHECK(MPI_Get_library_version(lib, &len) == MPI_SUCCESS && len == (int)strlen(lib) &&
              strstr(lib, "MadMPI") != NULL,
          "MPI_Get_library_version (running on MadMPI's library): %s", lib);
    CHECK(MPI_Error_class(MPI_ERR_TRUNCATE, &cls) == MPI_SUCCESS && cls == MPI_ERR_TRUNCATE,
          "MPI_Error_class of a class");
    CHECK(MPI_Error_string(MPI_ERR_RANK, s, &len) == MPI_SUCCESS && strstr(s, "rank") && len > 0,
          "MPI_Error_string of a class: %s", s);
    CHECK(MPI_Wtick() > 0 && MPI_Wtick() < 1e-3, "MPI_Wtick: %g", MPI_Wtick());
}

static void environment(void)
{
    int provided = -1, flag = -1, n = -1, len = 0;
    char name[MPI_MAX_PROCESSOR_NAME];
    double t0, t1;

    CHECK(MPI_Initialized(&flag) == MPI_SUCCESS && flag == 1, "MPI_Initialized: 1");
    CHECK(MPI_Finalized(&flag) == MPI_SUCCESS && flag == 0, "MPI_Finalized: 0");
    CHECK(MPI_Query_thread(&provided) == MPI_SUCCESS && provided == MPI_THREAD_MULTIPLE,
          "MPI_Query_thread: MPI_THREAD_MULTIPLE");
    CHECK(MPI_Is_thread_main(&flag) == MPI_SUCCESS && flag == 1, "MPI_Is_thread_main: 1");
    CHECK(MPI_Comm_size(MPI_COMM_SELF, &n) == MPI_SUCCESS && n == 1, "MPI_Comm_size(SELF): 1");
    CHECK(MPI_Comm_rank(MPI_COMM_SELF, &n) == MPI_SUCCESS && n == 0, "MPI_Comm_rank(SELF): 0");
    CHECK(MPI_Get_processor_name(name, &len) == MPI_SUCCESS && len > 0 && len == (int)strlen(name),
          "MPI_Get_processor_name: %s", name);
    t0 = MPI_Wtime();
    t1 = MPI_Wtime();
    CHECK(t1 >= t0 && t0 >= 0, "MPI_Wtime is monotonic: %f <= %f", t0, t1);
}

static void error_handling(void)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    int buf[4] = {0}, n, cls;
    MPI_Request req = (MPI_Request)0x2c3fff00; /* request-typed, never handed out */
    MPI_Request null = MPI_REQUEST_NULL;
    MPI_Status st;
    char s[MPI_MAX_ERROR_STRING];

    CHECK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh) == MPI_SUCCESS && eh == MPI_ERRORS_ARE_FATAL,
          "MPI_COMM_WORLD starts with MPI_ERRORS_ARE_FATAL");
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) == MPI_SUCCESS,
          "MPI_Comm_set_errhandler(WORLD, MPI_ERRORS_RETURN)");
    CHECK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh) == MPI_SUCCESS && eh == MPI_ERRORS_RETURN,
          "MPI_Comm_get_errhandler: MPI_ERRORS_RETURN");

    CHECK_ERR(MPI_Send(buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "MPI_Send");
    CHECK_ERR(MPI_Send(buf, 1, MPI_INT, -7, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "rank");
    CHECK_ERR(MPI_Send(buf, 1, MPI_INT, peer, -5, MPI_COMM_WORLD), MPI_ERR_TAG, "tag -5");
    CHECK_ERR(MPI_Send(buf, -1, MPI_INT, peer, 0, MPI_COMM_WORLD), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Send(buf, 1, MPI_DATATYPE_NULL, peer, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "datatype");
    CHECK_ERR(MPI_Send(buf, 1, (MPI_Datatype)0x4c0001ff, peer, 0, MPI_COMM_WORLD), MPI_ERR_TYPE, "datatype");
    CHECK_ERR(MPI_Send(NULL, 3, MPI_INT, peer, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER, "null buffer");
    CHECK_ERR(MPI_Send(buf, 1, MPI_INT, peer, 0, MPI_COMM_NULL), MPI_ERR_COMM, "communicator");
    CHECK_ERR(MPI_Send(buf, 1, MPI_INT, peer, 0, (MPI_Comm)0x84000123), MPI_ERR_COMM, "communicator");
    /* MPICH's order (4.0.2, observed): communicator, count, datatype, buffer, rank, tag. */
    CHECK_ERR(MPI_Send(NULL, -1, MPI_DATATYPE_NULL, size, -1, MPI_COMM_WORLD), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Send(NULL, 1, MPI_DATATYPE_NULL, size, -1, MPI_COMM_WORLD), MPI_ERR_TYPE, "datatype");
    CHECK_ERR(MPI_Send(NULL, 1, MPI_INT, size, -1, MPI_COMM_WORLD), MPI_ERR_BUFFER, "null buffer");
    CHECK_ERR(MPI_Send(buf, 1, MPI_INT, size, -1, MPI_COMM_WORLD), MPI_ERR_RANK, "rank");
    CHECK_ERR(MPI_Send(buf, 1, MPI_INT, peer, -1, MPI_COMM_WORLD), MPI_ERR_TAG, "tag");
    CHECK_ERR(MPI_Recv(NULL, 1, MPI_INT, size, -1, MPI_COMM_WORLD, NULL), MPI_ERR_BUFFER, "null buffer");
    CHECK_ERR(MPI_Ssend(buf, 1, MPI_INT, size + 3, 0, MPI_COMM_WORLD), MPI_ERR_RANK, "MPI_Ssend");
    CHECK_ERR(MPI_Recv(buf, 1, MPI_INT, size + 1, 0, MPI_COMM_WORLD, &st), MPI_ERR_RANK, "MPI_Recv");
    CHECK_ERR(MPI_Recv(buf, 1, MPI_INT, -3, 0, MPI_COMM_WORLD, &st), MPI_ERR_RANK, "rank -3");
    CHECK_ERR(MPI_Recv(buf, 1, MPI_INT, peer, -7, MPI_COMM_WORLD, &st), MPI_ERR_TAG, "tag -7");
    CHECK_ERR(MPI_Recv(buf, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "status");
    CHECK_ERR(MPI_Irecv(buf, 1, MPI_INT, peer, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "request");
    CHECK_ERR(MPI_Isend(buf, 1, MPI_INT, peer, -2, MPI_COMM_WORLD, &req), MPI_ERR_TAG, "MPI_Isend");
    CHECK_ERR(MPI_Issend(buf, 1, MPI_INT, 99, 0, MPI_COMM_WORLD, &req), MPI_ERR_RANK, "MPI_Issend");
    CHECK_ERR(MPI_Probe(size, 0, MPI_COMM_WORLD, &st), MPI_ERR_RANK, "MPI_Probe");
    CHECK_ERR(MPI_Iprobe(peer, -4, MPI_COMM_WORLD, &n, &st), MPI_ERR_TAG, "MPI_Iprobe");
    CHECK_ERR(MPI_Sendrecv(buf, 1, MPI_INT, peer, 0, buf, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &st),
              MPI_ERR_RANK, "MPI_Sendrecv");
    CHECK_ERR(MPI_Comm_size(MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "null pointer");
    CHECK_ERR(MPI_Comm_rank(MPI_COMM_NULL, &n), MPI_ERR_COMM, "MPI_Comm_rank");
    CHECK_ERR(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRHANDLER_NULL), MPI_ERR_ARG, "error handler");
    CHECK_ERR(MPI_Wait(&req, &st), MPI_ERR_REQUEST, "MPI_Wait");
    CHECK_ERR(MPI_Test(&req, &n, &st), MPI_ERR_REQUEST, "request");
    CHECK_ERR(MPI_Request_free(&null), MPI_ERR_REQUEST, "MPI_REQUEST_NULL");
    CHECK_ERR(MPI_Waitall(1, &req, &st), MPI_ERR_REQUEST, "MPI_Waitall");
    CHECK_ERR(MPI_Waitall(-1, &req, &st), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Get_count(MPI_STATUS_IGNORE, MPI_INT, &n), MPI_ERR_ARG, "MPI_STATUS_IGNORE");
    CHECK_ERR(MPI_Get_count(&st, MPI_DATATYPE_NULL, &n), MPI_ERR_TYPE, "MPI_Get_count");
    CHECK_ERR(MPI_Error_class(12345, &cls), MPI_ERR_ARG, "12345");
    CHECK_ERR(MPI_Error_string(-5, s, &n), MPI_ERR_ARG, "-5");
    CHECK_ERR(MPI_Init(NULL, NULL), MPI_ERR_OTHER, "already initialized");
}

/* Rank 0 sends, rank 1 receives: statuses, counts, truncation, probes, PROC_NULL. */
static void blocking(void)
{
    int ints[10], i, n = -1, flag = -1;
    double d[6];
    char c[5];
    MPI_Status st;

    if (rank == 0) {
        for (i = 0; i < 10; i++)
            ints[i] = 100 + i;
        for (i = 0; i < 6; i++)
            d[i] = 0.5 * i;
        CHECK(MPI_Send(ints, 10, MPI_INT, 1, 1, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Send 10 ints");
        CHECK(MPI_Ssend(d, 6, MPI_DOUBLE, 1, 2, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Ssend 6 doubles");
        CHECK(MPI_Send(ints, 8, MPI_INT, 1, 3, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Send 8 ints");
        CHECK(MPI_Send("hello", 5, MPI_CHAR, 1, 7, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Send 5 chars");
    } else if (rank == 1) {
        st.MPI_ERROR = 12345;
        CHECK(MPI_Recv(ints, 10, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st) == MPI_SUCCESS &&
                  ints[0] == 100 && ints[9] == 109,
              "MPI_Recv 10 ints from any source, any tag");
        CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 1 && st.MPI_ERROR == 12345,
              "status: source 0, tag 1, MPI_ERROR untouched");
        CHECK(MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == 10, "MPI_Get_count(INT): %d", n);
        CHECK(MPI_Get_count(&st, MPI_SHORT, &n) == MPI_SUCCESS && n == 20, "MPI_Get_count(SHORT): %d", n);
        CHECK(MPI_Get_count(&st, MPI_LONG_DOUBLE, &n) == MPI_SUCCESS && n == MPI_UNDEFINED,
              "MPI_Get_count(LONG_DOUBLE): MPI_UNDEFINED (40 bytes)");
        CHECK(MPI_Recv(d, 6, MPI_DOUBLE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS && d[5] == 2.5,
              "MPI_Recv of the MPI_Ssend, MPI_STATUS_IGNORE");
        memset(ints, 0, sizeof ints);
        CHECK_ERR(MPI_Recv(ints, 4, MPI_INT, 0, 3, MPI_COMM_WORLD, &st), MPI_ERR_TRUNCATE, "MPI_Recv");
        CHECK(st.MPI_SOURCE == 0 && st.MPI_TAG == 3 && MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS &&
                  n == 4 && ints[3] == 103 && ints[4] == 0,
              "a truncated receive keeps its status and the first 4 ints");
        CHECK(MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st) == MPI_SUCCESS && st.MPI_SOURCE == 0 &&
                  st.MPI_TAG == 7 && MPI_Get_count(&st, MPI_CHAR, &n) == MPI_SUCCESS && n == 5,
              "MPI_Probe: 5 chars from 0 with tag 7");
        CHECK(MPI_Iprobe(0, 7, MPI_COMM_WORLD, &flag, &st) == MPI_SUCCESS && flag == 1 && st.MPI_TAG == 7,
              "MPI_Iprobe finds it too");
        CHECK(MPI_Recv(c, 5, MPI_CHAR, 0, 7, MPI_COMM_WORLD, &st) == MPI_SUCCESS && memcmp(c, "hello", 5) == 0,
              "MPI_Recv of the probed message");
        CHECK(MPI_Iprobe(MPI_ANY_SOURCE, 999, MPI_COMM_WORLD, &flag, &st) == MPI_SUCCESS && flag == 0,
              "MPI_Iprobe: nothing with tag 999");
    }
    CHECK(MPI_Send(ints, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Send to PROC_NULL");
    CHECK(MPI_Recv(ints, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &st) == MPI_SUCCESS &&
              st.MPI_SOURCE == MPI_PROC_NULL && st.MPI_TAG == MPI_ANY_TAG &&
              MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == 0,
          "MPI_Recv from PROC_NULL: empty status");
}

/* Nonblocking operations between ranks 0 and 1, and their completion calls. */
static void nonblocking(void)
{
    int out[3][64], in[3][64], small[2], i, j, flag = 0, polls = 0;
    MPI_Request reqs[3], r;
    MPI_Status sts[3], st;

    if (rank > 1)
        return;
    for (i = 0; i < 3; i++)
        for (j = 0; j < 64; j++)
            out[i][j] = 1000 * rank + 100 * i + j;
    /* Receives posted first, in tag order; sends in reverse order: matching is by tag. */
    for (i = 0; i < 3; i++)
        CHECK(MPI_Irecv(in[i], 64, MPI_INT, peer, 10 + i, MPI_COMM_WORLD, &reqs[i]) == MPI_SUCCESS &&
                  reqs[i] != MPI_REQUEST_NULL,
              "MPI_Irecv tag %d", 10 + i);
    CHECK(MPI_Waitall(0, NULL, NULL) == MPI_SUCCESS, "MPI_Waitall of nothing");
    {
        MPI_Request sreqs[3];
        CHECK(MPI_Isend(out[2], 64, MPI_INT, peer, 12, MPI_COMM_WORLD, &sreqs[0]) == MPI_SUCCESS, "MPI_Isend");
        CHECK(MPI_Issend(out[1], 64, MPI_INT, peer, 11, MPI_COMM_WORLD, &sreqs[1]) == MPI_SUCCESS, "MPI_Issend");
        CHECK(MPI_Isend(out[0], 64, MPI_INT, peer, 10, MPI_COMM_WORLD, &sreqs[2]) == MPI_SUCCESS, "MPI_Isend");
        do {
            CHECK(MPI_Test(&reqs[0], &flag, &st) == MPI_SUCCESS, "MPI_Test (poll %d)", polls);
            polls++;
        } while (!flag);
        CHECK(reqs[0] == MPI_REQUEST_NULL && st.MPI_SOURCE == peer && st.MPI_TAG == 10 && in[0][63] == 1000 * peer + 63,
              "MPI_Test completed the receive of tag 10 and nulled its handle");
        CHECK(MPI_Wait(&sreqs[1], &st) == MPI_SUCCESS && sreqs[1] == MPI_REQUEST_NULL, "MPI_Wait on the MPI_Issend");
        CHECK(MPI_Waitall(3, sreqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall of sends (one null)");
    }
    for (i = 0; i < 3; i++)
        sts[i].MPI_ERROR = -77;
    CHECK(MPI_Waitall(3, reqs, sts) == MPI_SUCCESS && reqs[1] == MPI_REQUEST_NULL && reqs[2] == MPI_REQUEST_NULL,
          "MPI_Waitall of the receives");
    CHECK(sts[0].MPI_SOURCE == MPI_ANY_SOURCE && sts[0].MPI_TAG == MPI_ANY_TAG && sts[1].MPI_TAG == 11 &&
              sts[2].MPI_TAG == 12 && sts[2].MPI_SOURCE == peer && sts[1].MPI_ERROR == -77,
          "statuses: empty for the null request, MPI_ERROR untouched on success");
    for (i = 0; i < 3; i++)
        for (j = 0; j < 64; j++)
            if (in[i][j] != 1000 * peer + 100 * i + j)
                CHECK(0, "message %d element %d", i, j);
    CHECK(1, "the three messages arrived whole");

    /* Waitall with a truncated receive: MPI_ERR_IN_STATUS and each status's MPI_ERROR. */
    CHECK(MPI_Irecv(in[0], 64, MPI_INT, peer, 20, MPI_COMM_WORLD, &reqs[0]) == MPI_SUCCESS, "MPI_Irecv tag 20");
    CHECK(MPI_Irecv(small, 2, MPI_INT, peer, 21, MPI_COMM_WORLD, &reqs[1]) == MPI_SUCCESS, "MPI_Irecv tag 21 (2 ints)");
    CHECK(MPI_Send(out[0], 4, MPI_INT, peer, 20, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Send 4 ints, tag 20");
    CHECK(MPI_Send(out[0], 4, MPI_INT, peer, 21, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Send 4 ints, tag 21");
    CHECK_ERR(MPI_Waitall(2, reqs, sts), MPI_ERR_IN_STATUS, "MPI_Waitall");
    CHECK(sts[0].MPI_ERROR == MPI_SUCCESS && class_of(sts[1].MPI_ERROR) == MPI_ERR_TRUNCATE &&
              reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL,
          "MPI_ERROR: success, then MPI_ERR_TRUNCATE; both requests freed");

    /* A freed send still delivers; waiting on a null request gives the empty status. */
    CHECK(MPI_Isend(out[1], 64, MPI_INT, peer, 30, MPI_COMM_WORLD, &r) == MPI_SUCCESS, "MPI_Isend tag 30");
    CHECK(MPI_Request_free(&r) == MPI_SUCCESS && r == MPI_REQUEST_NULL, "MPI_Request_free of a running send");
    CHECK(MPI_Recv(in[1], 64, MPI_INT, peer, 30, MPI_COMM_WORLD, &st) == MPI_SUCCESS && in[1][5] == 1000 * peer + 105,
          "the freed send arrives");
    CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && st.MPI_SOURCE == MPI_ANY_SOURCE && st.MPI_TAG == MPI_ANY_TAG,
          "MPI_Wait(MPI_REQUEST_NULL): empty status");
    CHECK(MPI_Test(&r, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag == 1, "MPI_Test(MPI_REQUEST_NULL): done");
    CHECK(MPI_Irecv(in[2], 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &r) == MPI_SUCCESS &&
              MPI_Wait(&r, &st) == MPI_SUCCESS && st.MPI_SOURCE == MPI_PROC_NULL,
          "MPI_Irecv from PROC_NULL completes at once");
}

/* A ring exchange with MPI_Sendrecv over every rank. */
static void ring(void)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, out[100], in[100], i, n;
    MPI_Status st;

    for (i = 0; i < 100; i++)
        out[i] = rank * 1000 + i;
    CHECK(MPI_Sendrecv(out, 100, MPI_INT, next, 5, in, 100, MPI_INT, prev, 5, MPI_COMM_WORLD, &st) == MPI_SUCCESS &&
              st.MPI_SOURCE == prev && st.MPI_TAG == 5 && MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS &&
              n == 100 && in[99] == prev * 1000 + 99,
          "MPI_Sendrecv around the ring");
    CHECK_ERR(MPI_Sendrecv(out, 100, MPI_INT, next, 6, in, 10, MPI_INT, prev, 6, MPI_COMM_WORLD, &st),
              MPI_ERR_TRUNCATE, "MPI_Sendrecv");
}

int main(int argc, char **argv)
{
    int provided = -1, flag = -1, n;
    char s[MPI_MAX_ERROR_STRING];

    before_init();
    CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS &&
              provided == MPI_THREAD_MULTIPLE,
          "MPI_Init_thread(MPI_THREAD_MULTIPLE)");
    CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS, "MPI_Comm_rank");
    check_rank = rank;
    CHECK(MPI_Comm_size(MPI_COMM_WORLD, &size) == MPI_SUCCESS && size >= 2, "MPI_Comm_size: %d", size);
    peer = rank == 0 ? 1 : 0;
    environment();
    error_handling();
    blocking();
    nonblocking();
    ring();
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    CHECK(MPI_Finalized(&flag) == MPI_SUCCESS && flag == 1, "MPI_Finalized: 1");
    CHECK(MPI_Initialized(&flag) == MPI_SUCCESS && flag == 1, "MPI_Initialized after MPI_Finalize: 1");
    /* MPI_COMM_WORLD's handler (MPI_ERRORS_RETURN) still applies to calls after finalize. */
    CHECK_ERR(MPI_Comm_size(MPI_COMM_WORLD, &n), MPI_ERR_OTHER, "finalized");
    CHECK(MPI_Error_string(MPI_ERR_OTHER, s, &n) == MPI_SUCCESS, "MPI_Error_string after MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
