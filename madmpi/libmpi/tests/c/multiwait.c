/* Completion of several requests: MPI_Waitany, MPI_Waitsome, MPI_Testall, MPI_Testany,
 * MPI_Testsome, MPI_Request_get_status, MPI_Cancel, MPI_Test_cancelled, with null requests,
 * MPI_UNDEFINED, MPI_ERR_IN_STATUS and the error paths under MPI_ERRORS_RETURN (MPICH 4.0.2's
 * check order). Run with 2 processes: rank 1 posts receives, rank 0 sends only when told, so
 * what has completed at each step is known. It passes on MPICH itself too; differences are
 * noted below. */
#define _GNU_SOURCE
#include "check.h"
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>

static int rank, size, peer;

/* Rank 1 tells rank 0 to send its next batch. */
static void token(void)
{
    int t = 0;
    if (rank == 1)
        MPI_Send(&t, 1, MPI_INT, 0, 100, MPI_COMM_WORLD);
    else
        MPI_Recv(&t, 1, MPI_INT, 1, 100, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

static void errors(void)
{
    MPI_Request bad = (MPI_Request)0x2c3fff00, null = MPI_REQUEST_NULL, rs[2];
    MPI_Status st, sts[2];
    int idx, flag, out, inds[2];

    CHECK_ERR(MPI_Waitany(-1, rs, &idx, &st), MPI_ERR_COUNT, "MPI_Waitany");
    CHECK_ERR(MPI_Waitany(1, NULL, &idx, &st), MPI_ERR_ARG, "MPI_Waitany");
    CHECK_ERR(MPI_Waitany(1, &bad, NULL, &st), MPI_ERR_REQUEST, "MPI_Waitany");
    CHECK_ERR(MPI_Waitany(1, &null, NULL, &st), MPI_ERR_ARG, "MPI_Waitany");
    CHECK_ERR(MPI_Testany(-1, rs, &idx, &flag, &st), MPI_ERR_COUNT, "MPI_Testany");
    CHECK_ERR(MPI_Testany(1, &bad, &idx, &flag, &st), MPI_ERR_REQUEST, "MPI_Testany");
    CHECK_ERR(MPI_Testany(1, &null, &idx, NULL, &st), MPI_ERR_ARG, "MPI_Testany");
    CHECK_ERR(MPI_Testany(1, &null, &idx, &flag, NULL), MPI_ERR_ARG, "MPI_Testany");
    CHECK_ERR(MPI_Waitsome(-1, rs, &out, inds, sts), MPI_ERR_COUNT, "MPI_Waitsome");
    CHECK_ERR(MPI_Waitsome(1, &bad, NULL, inds, sts), MPI_ERR_REQUEST, "MPI_Waitsome");
    CHECK_ERR(MPI_Waitsome(1, &null, NULL, inds, sts), MPI_ERR_ARG, "MPI_Waitsome");
    CHECK_ERR(MPI_Waitsome(1, &null, &out, NULL, sts), MPI_ERR_ARG, "MPI_Waitsome");
    CHECK_ERR(MPI_Waitsome(1, &null, &out, inds, NULL), MPI_ERR_ARG, "MPI_Waitsome");
    CHECK_ERR(MPI_Testsome(1, NULL, &out, inds, sts), MPI_ERR_ARG, "MPI_Testsome");
    CHECK_ERR(MPI_Testsome(1, &null, &out, NULL, sts), MPI_ERR_ARG, "MPI_Testsome");
    CHECK_ERR(MPI_Testall(-1, rs, &flag, sts), MPI_ERR_COUNT, "MPI_Testall");
    CHECK_ERR(MPI_Testall(1, &bad, &flag, sts), MPI_ERR_REQUEST, "MPI_Testall");
    CHECK_ERR(MPI_Testall(1, &null, NULL, sts), MPI_ERR_ARG, "MPI_Testall");
    CHECK_ERR(MPI_Testall(1, &null, &flag, NULL), MPI_ERR_ARG, "MPI_Testall");
    CHECK_ERR(MPI_Waitall(1, &null, NULL), MPI_ERR_ARG, "MPI_Waitall");
    CHECK_ERR(MPI_Request_get_status(bad, &flag, &st), MPI_ERR_REQUEST, "MPI_Request_get_status");
    CHECK_ERR(MPI_Request_get_status(null, NULL, &st), MPI_ERR_ARG, "MPI_Request_get_status");
    CHECK_ERR(MPI_Cancel(NULL), MPI_ERR_ARG, "MPI_Cancel");
    CHECK_ERR(MPI_Cancel(&null), MPI_ERR_REQUEST, "MPI_Cancel");
    CHECK_ERR(MPI_Cancel(&bad), MPI_ERR_REQUEST, "MPI_Cancel");
    CHECK_ERR(MPI_Test_cancelled(NULL, &flag), MPI_ERR_ARG, "MPI_Test_cancelled");
    CHECK_ERR(MPI_Test_cancelled(&st, NULL), MPI_ERR_ARG, "MPI_Test_cancelled");
    /* MPI_Test_cancelled(MPI_STATUS_IGNORE, ...) is MPI_ERR_ARG here; MPICH crashes on it. */
    if (on_madmpi())
        CHECK_ERR(MPI_Test_cancelled(MPI_STATUS_IGNORE, &flag), MPI_ERR_ARG, "MPI_STATUS_IGNORE");
}

/* Null requests only (and no requests): MPI_UNDEFINED, empty statuses. */
static void nothing_active(void)
{
    MPI_Request rs[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st, sts[3];
    int idx = 5, flag = 0, out = 5, inds[3];

    st.MPI_ERROR = 77;
    CHECK(MPI_Waitany(3, rs, &idx, &st) == MPI_SUCCESS && idx == MPI_UNDEFINED && st.MPI_SOURCE == MPI_ANY_SOURCE &&
              st.MPI_TAG == MPI_ANY_TAG && st.MPI_ERROR == 77,
          "MPI_Waitany of null requests: MPI_UNDEFINED, empty status");
    CHECK(MPI_Waitany(0, NULL, &idx, &st) == MPI_SUCCESS && idx == MPI_UNDEFINED, "MPI_Waitany of none");
    CHECK(MPI_Testany(3, rs, &idx, &flag, &st) == MPI_SUCCESS && idx == MPI_UNDEFINED && flag == 1,
          "MPI_Testany of null requests: flag 1, MPI_UNDEFINED");
    CHECK(MPI_Waitsome(3, rs, &out, inds, sts) == MPI_SUCCESS && out == MPI_UNDEFINED,
          "MPI_Waitsome of null requests: MPI_UNDEFINED");
    out = 5;
    CHECK(MPI_Testsome(3, rs, &out, inds, MPI_STATUSES_IGNORE) == MPI_SUCCESS && out == MPI_UNDEFINED,
          "MPI_Testsome of null requests: MPI_UNDEFINED");
    sts[2].MPI_TAG = 5;
    CHECK(MPI_Testall(3, rs, &flag, sts) == MPI_SUCCESS && flag == 1 && sts[2].MPI_TAG == MPI_ANY_TAG,
          "MPI_Testall of null requests: flag 1, empty statuses");
    CHECK(MPI_Testall(0, NULL, &flag, NULL) == MPI_SUCCESS && flag == 1, "MPI_Testall of none");
}

/* Rank 1: 4 receives (and a null request) complete one batch at a time. */
static void batches(void)
{
    int in[4][4], out[4], i, idx = -1, flag = -1, n = 0, got = 0, inds[5];
    MPI_Request rs[5];
    MPI_Status st, sts[5];

    if (rank == 0) {
        int order[3][2] = {{2, -1}, {3, 0}, {1, -1}};
        for (i = 0; i < 4; i++)
            out[i] = 100 + i;
        for (i = 0; i < 3; i++) {
            token();
            MPI_Send(out, 4, MPI_INT, 1, order[i][0], MPI_COMM_WORLD);
            if (order[i][1] >= 0)
                MPI_Send(out, 4, MPI_INT, 1, order[i][1], MPI_COMM_WORLD);
        }
        return;
    }
    /* rs = {tag 0, null, tag 1, tag 2, tag 3} */
    for (i = 0; i < 5; i++)
        rs[i] = MPI_REQUEST_NULL;
    for (i = 0; i < 4; i++)
        CHECK(MPI_Irecv(in[i], 4, MPI_INT, 0, i, MPI_COMM_WORLD, &rs[i == 0 ? 0 : i + 1]) == MPI_SUCCESS,
              "MPI_Irecv tag %d", i);
    CHECK(MPI_Testany(5, rs, &idx, &flag, &st) == MPI_SUCCESS && flag == 0 && idx == MPI_UNDEFINED,
          "MPI_Testany before anything was sent: flag 0, MPI_UNDEFINED");
    CHECK(MPI_Testsome(5, rs, &n, inds, sts) == MPI_SUCCESS && n == 0, "MPI_Testsome: nothing yet");
    CHECK(MPI_Testall(5, rs, &flag, sts) == MPI_SUCCESS && flag == 0 && rs[0] != MPI_REQUEST_NULL,
          "MPI_Testall: flag 0, requests untouched");
    CHECK(MPI_Request_get_status(rs[3], &flag, &st) == MPI_SUCCESS && flag == 0, "MPI_Request_get_status: not yet");

    token(); /* tag 2 */
    CHECK(MPI_Waitany(5, rs, &idx, &st) == MPI_SUCCESS && idx == 3 && rs[3] == MPI_REQUEST_NULL &&
              st.MPI_TAG == 2 && st.MPI_SOURCE == 0 && in[2][3] == 103,
          "MPI_Waitany: index 3 (tag 2), handle nulled");

    token(); /* tags 3 and 0 */
    while (got < 2) {
        CHECK(MPI_Waitsome(5, rs, &n, inds, sts) == MPI_SUCCESS && n >= 1 && n <= 2 - got, "MPI_Waitsome: %d", n);
        for (i = 0; i < n; i++)
            CHECK((inds[i] == 0 || inds[i] == 4) && rs[inds[i]] == MPI_REQUEST_NULL &&
                      sts[i].MPI_TAG == (inds[i] == 0 ? 0 : 3),
                  "MPI_Waitsome: index %d, tag %d", inds[i], sts[i].MPI_TAG);
        got += n;
    }

    token(); /* tag 1 */
    do {
        CHECK(MPI_Request_get_status(rs[2], &flag, &st) == MPI_SUCCESS, "MPI_Request_get_status (poll)");
    } while (!flag);
    CHECK(rs[2] != MPI_REQUEST_NULL && st.MPI_TAG == 1 && MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == 4,
          "MPI_Request_get_status: complete, status given, the request kept");
    CHECK(MPI_Testany(5, rs, &idx, &flag, &st) == MPI_SUCCESS && flag == 1 && idx == 2 && st.MPI_TAG == 1 &&
              rs[2] == MPI_REQUEST_NULL,
          "MPI_Testany: index 2");
    CHECK(MPI_Waitany(5, rs, &idx, &st) == MPI_SUCCESS && idx == MPI_UNDEFINED, "all done: MPI_UNDEFINED");
}

/* Truncated receives: MPI_ERR_IN_STATUS from the some/all forms, the error itself from any. */
static void failures(void)
{
    int small[2], big[8], x[4] = {1, 2, 3, 4}, flag = 0, n = 0, inds[2], idx = -1, round;
    MPI_Request rs[2];
    MPI_Status st, sts[2];

    for (round = 0; round < 4; round++) {
        if (rank == 0) {
            token();
            MPI_Send(x, 4, MPI_INT, 1, 10, MPI_COMM_WORLD);
            MPI_Send(x, 4, MPI_INT, 1, 11, MPI_COMM_WORLD);
            continue;
        }
        MPI_Irecv(small, 2, MPI_INT, 0, 10, MPI_COMM_WORLD, &rs[0]);
        MPI_Irecv(big, 8, MPI_INT, 0, 11, MPI_COMM_WORLD, &rs[1]);
        token();
        /* Both complete before the call under test: it then sees both. */
        do
            MPI_Request_get_status(rs[1], &flag, MPI_STATUS_IGNORE);
        while (!flag);
        do
            CHECK_ERR(MPI_Request_get_status(rs[0], &flag, &st), MPI_ERR_TRUNCATE, "");
        while (!flag);
        sts[0].MPI_ERROR = sts[1].MPI_ERROR = 55;
        st.MPI_ERROR = 55;
        switch (round) {
        case 0:
            CHECK_ERR(MPI_Testall(2, rs, &flag, sts), MPI_ERR_IN_STATUS, "MPI_ERROR");
            CHECK(flag == 1 && class_of(sts[0].MPI_ERROR) == MPI_ERR_TRUNCATE && sts[1].MPI_ERROR == MPI_SUCCESS &&
                      rs[0] == MPI_REQUEST_NULL && rs[1] == MPI_REQUEST_NULL,
                  "MPI_Testall: MPI_ERR_TRUNCATE and MPI_SUCCESS in the statuses, both freed");
            break;
        case 1:
            CHECK_ERR(MPI_Testsome(2, rs, &n, inds, sts), MPI_ERR_IN_STATUS, "MPI_ERROR");
            CHECK(n == 2 && inds[0] == 0 && inds[1] == 1 && class_of(sts[0].MPI_ERROR) == MPI_ERR_TRUNCATE &&
                      sts[1].MPI_ERROR == MPI_SUCCESS,
                  "MPI_Testsome: both, with their errors");
            break;
        case 2:
            /* MPI_ERR_IN_STATUS even when the statuses are ignored (as MPICH). */
            CHECK_ERR(MPI_Waitsome(2, rs, &n, inds, MPI_STATUSES_IGNORE), MPI_ERR_IN_STATUS, "MPI_ERROR");
            CHECK(n == 2 && rs[0] == MPI_REQUEST_NULL, "MPI_Waitsome: both reported");
            break;
        default:
            CHECK_ERR(MPI_Waitany(2, rs, &idx, &st), MPI_ERR_TRUNCATE, "");
            CHECK(idx == 0 && rs[0] == MPI_REQUEST_NULL && st.MPI_ERROR == 55 && st.MPI_TAG == 10,
                  "MPI_Waitany: the truncated one first, its error returned, MPI_ERROR untouched");
            CHECK(MPI_Waitany(2, rs, &idx, &st) == MPI_SUCCESS && idx == 1 && st.MPI_TAG == 11, "then the other");
        }
    }
    if (rank == 1) {
        MPI_Irecv(small, 2, MPI_INT, 0, 12, MPI_COMM_WORLD, &rs[0]);
        rs[1] = MPI_REQUEST_NULL;
        token();
        sts[1].MPI_ERROR = 55;
        CHECK_ERR(MPI_Waitall(2, rs, MPI_STATUSES_IGNORE), MPI_ERR_IN_STATUS, "MPI_ERROR");
    } else {
        token();
        MPI_Send(x, 4, MPI_INT, 1, 12, MPI_COMM_WORLD);
    }
}

/* Cancelling: a receive nobody matches is cancelled, a send or a completed receive is not. */
static void cancelling(void)
{
    int x[4] = {0}, flag = -1, cancelled = -1;
    MPI_Request r;
    MPI_Status st;

    CHECK(MPI_Irecv(x, 4, MPI_INT, peer, 999, MPI_COMM_WORLD, &r) == MPI_SUCCESS && MPI_Cancel(&r) == MPI_SUCCESS,
          "MPI_Cancel of a receive nobody sends to");
    CHECK(MPI_Request_get_status(r, &flag, &st) == MPI_SUCCESS && flag == 1 &&
              MPI_Test_cancelled(&st, &cancelled) == MPI_SUCCESS && cancelled == 1 && r != MPI_REQUEST_NULL,
          "MPI_Request_get_status: complete, cancelled, kept");
    st.MPI_ERROR = 55;
    CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && r == MPI_REQUEST_NULL && st.MPI_ERROR == 55 &&
              MPI_Test_cancelled(&st, &cancelled) == MPI_SUCCESS && cancelled == 1,
          "MPI_Wait: success, the status says cancelled");

    /* A send: MadMPI never cancels one (MPICH may, for a message still in its queues). The
     * sender tells the receiver whether to expect it. */
    if (rank == 0) {
        CHECK(MPI_Isend(x, 4, MPI_INT, 1, 50, MPI_COMM_WORLD, &r) == MPI_SUCCESS && MPI_Cancel(&r) == MPI_SUCCESS &&
                  MPI_Wait(&r, &st) == MPI_SUCCESS && MPI_Test_cancelled(&st, &cancelled) == MPI_SUCCESS,
              "MPI_Cancel of a send, then MPI_Wait");
        CHECK(!on_madmpi() || cancelled == 0, "the send was not cancelled (%d)", cancelled);
        MPI_Send(&cancelled, 1, MPI_INT, 1, 51, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&cancelled, 1, MPI_INT, 0, 51, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (!cancelled)
            CHECK(MPI_Recv(x, 4, MPI_INT, 0, 50, MPI_COMM_WORLD, &st) == MPI_SUCCESS, "the uncancelled send arrives");
    }
    /* A completed receive: cancelling changes nothing. */
    CHECK(MPI_Irecv(x, 4, MPI_INT, peer, 52, MPI_COMM_WORLD, &r) == MPI_SUCCESS &&
              MPI_Send(x, 4, MPI_INT, peer, 52, MPI_COMM_WORLD) == MPI_SUCCESS,
          "exchange on tag 52");
    do
        MPI_Request_get_status(r, &flag, MPI_STATUS_IGNORE);
    while (!flag);
    CHECK(MPI_Cancel(&r) == MPI_SUCCESS && MPI_Wait(&r, &st) == MPI_SUCCESS &&
              MPI_Test_cancelled(&st, &cancelled) == MPI_SUCCESS && cancelled == 0 && st.MPI_TAG == 52,
          "MPI_Cancel of a completed receive: not cancelled");
}

static double thread_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* Switches MadMPI's progression policy through the MPI_T control variable PIOMAN_POLICY to
 * item `name` of its enumeration; returns the value in force before. */
static int switch_policy(const char *name, int to)
{
    int idx = -1, count = 0, before = -1, items = 0, nl = 0, provided;
    MPI_T_cvar_handle h;
    MPI_T_enum en = MPI_T_ENUM_NULL;
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    CHECK(MPI_T_cvar_get_index("PIOMAN_POLICY", &idx) == MPI_SUCCESS, "cvar PIOMAN_POLICY");
    MPI_T_cvar_get_info(idx, NULL, NULL, NULL, NULL, &en, NULL, NULL, NULL, NULL);
    CHECK(en != MPI_T_ENUM_NULL && MPI_T_enum_get_info(en, &items, NULL, &nl) == MPI_SUCCESS, "an enumeration");
    for (int k = 0; name && k < items; k++) {
        char s[128];
        int v, l = sizeof s;
        MPI_T_enum_get_item(en, k, &v, s, &l);
        if (strcmp(s, name) == 0)
            to = v;
    }
    MPI_T_cvar_handle_alloc(idx, NULL, &h, &count);
    MPI_T_cvar_read(h, &before);
    CHECK(MPI_T_cvar_write(h, &to) == MPI_SUCCESS, "PIOMAN_POLICY := %s (%d)", name ? name : "before", to);
    MPI_T_cvar_handle_free(&h);
    MPI_T_finalize();
    return before;
}

/* A wait on several requests that lasts: rank 0 sends after half a second. MadMPI's default
 * policy spins while nothing else wants the waiter's CPU, as MPICH does; under the `block`
 * policy its wait naps on pioman conditions and sleeps: that CPU time is checked (MPICH's is
 * not). */
static void long_wait(void)
{
    int a = 0, b = 0, idx = -1, n = 0, inds[2];
    MPI_Request rs[2];
    MPI_Status sts[2];
    double t0, c0, wall, cpu;

    if (rank == 0) {
        token();
        usleep(500000);
        MPI_Send(&a, 1, MPI_INT, 1, 61, MPI_COMM_WORLD);
        usleep(300000);
        MPI_Send(&a, 1, MPI_INT, 1, 60, MPI_COMM_WORLD);
        return;
    }
    MPI_Irecv(&a, 1, MPI_INT, 0, 60, MPI_COMM_WORLD, &rs[0]);
    MPI_Irecv(&b, 1, MPI_INT, 0, 61, MPI_COMM_WORLD, &rs[1]);
    int before = on_madmpi() ? switch_policy("block", -1) : -1;
    token();
    t0 = MPI_Wtime();
    c0 = thread_cpu();
    CHECK(MPI_Waitany(2, rs, &idx, &sts[0]) == MPI_SUCCESS && idx == 1, "MPI_Waitany: the second, after a while");
    wall = MPI_Wtime() - t0;
    cpu = thread_cpu() - c0;
    CHECK(!on_madmpi() || cpu < wall / 2, "MPI_Waitany waited %.3f s using %.3f s of CPU", wall, cpu);
    if (on_madmpi())
        switch_policy(NULL, before);
    CHECK(MPI_Waitsome(2, rs, &n, inds, sts) == MPI_SUCCESS && n == 1 && inds[0] == 0, "MPI_Waitsome: the first");
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
    nothing_active();
    batches();
    failures();
    cancelling();
    long_wait();
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
