/* The express path of the point-to-point calls against the general one, at 2 processes: the same
 * message received with a builtin datatype (MPI_INT: the express receive) and with a committed
 * contiguous derived type of the same type map (the general path) must complete alike — return
 * code, status source, tag, count and cancelled flag — for an exact match, a truncated message,
 * MPI_ANY_SOURCE/MPI_ANY_TAG, MPI_PROC_NULL, an empty message, a message that arrived before the
 * receive, a probe then a receive; a send that leaves at once (the express MPI_Isend, whose
 * request is complete when the call returns) must answer every completion call as a general
 * send's request does (MPI_Test, MPI_Request_get_status, MPI_Wait, MPI_Waitall, MPI_Waitany,
 * MPI_Testsome, MPI_Cancel then MPI_Test_cancelled, MPI_Request_free), and so must a receive
 * request from the express table (MPI_Irecv from a rank: MPI_Request_get_status, MPI_Wait,
 * MPI_Waitall, MPI_Waitany, MPI_Testsome, MPI_Cancel, MPI_Request_free before its message came,
 * a truncated receive in MPI_Waitall beside a receive from any source and a null request,
 * then beside a null request only, then alone in MPI_Wait, MPI_Test); and the arguments the
 * express paths decline (a rank outside the communicator, a negative tag or count, a null
 * status, MPI_COMM_NULL) must still fail with their error classes. Runs on MPICH's library too. */
#include "check.h"

static MPI_Datatype dint; /* MPI_Type_contiguous(1, MPI_INT): the general path */

struct got {
    int rc, source, tag, count, cancelled;
};

static struct got got_of(int rc, MPI_Status *st)
{
    struct got g = {0, 0, 0, 0, 0};
    MPI_Error_class(rc, &g.rc);
    g.source = st->MPI_SOURCE;
    g.tag = st->MPI_TAG;
    MPI_Get_count(st, MPI_BYTE, &g.count);
    MPI_Test_cancelled(st, &g.cancelled);
    return g;
}

static void same(const char *what, struct got a, struct got b)
{
    CHECK(a.rc == b.rc && a.source == b.source && a.tag == b.tag && a.count == b.count &&
              a.cancelled == b.cancelled,
          "%s: express (class %d, source %d, tag %d, %d B, cancelled %d) = general (class %d, "
          "source %d, tag %d, %d B, cancelled %d)",
          what, a.rc, a.source, a.tag, a.count, a.cancelled, b.rc, b.source, b.tag, b.count,
          b.cancelled);
}

/* Rank 0 sends `n` ints with `tag` twice; rank 1 receives `cap` ints from `source` with `rtag`,
 * first with MPI_INT, then with the derived type. `late`: the receives are posted after the
 * messages arrived. */
static void pair(int rank, const char *what, int n, int tag, int cap, int source, int rtag, int late)
{
    int out[16], in[16];
    for (int i = 0; i < 16; i++)
        out[i] = 100 + i;
    if (rank == 0) {
        CHECK(MPI_Send(out, n, MPI_INT, 1, tag, MPI_COMM_WORLD) == MPI_SUCCESS, "%s: send 1", what);
        CHECK(MPI_Send(out, n, MPI_INT, 1, tag, MPI_COMM_WORLD) == MPI_SUCCESS, "%s: send 2", what);
        if (late)
            MPI_Barrier(MPI_COMM_WORLD);
    } else {
        MPI_Status sa, sb;
        if (late) {
            MPI_Barrier(MPI_COMM_WORLD);
            usleep(20000);
        }
        memset(in, 0, sizeof in);
        int ra = MPI_Recv(in, cap, MPI_INT, source, rtag, MPI_COMM_WORLD, &sa);
        int ok = 1;
        for (int i = 0; i < (n < cap ? n : cap); i++)
            ok &= in[i] == 100 + i;
        CHECK(ok, "%s: express receive stored the message", what);
        memset(in, 0, sizeof in);
        int rb = MPI_Recv(in, cap, dint, source, rtag, MPI_COMM_WORLD, &sb);
        same(what, got_of(ra, &sa), got_of(rb, &sb));
    }
}

/* The completion calls on a send request, as `isend` makes it (express when `type` is MPI_INT). */
static struct got completions(MPI_Datatype type, int *out)
{
    MPI_Request r[3];
    MPI_Status st;
    int flag = 0, idx = -1, outcount = 0, indices[3];
    struct got g = {0, 0, 0, 0, 0};
    MPI_Isend(out, 1, type, 1, 30, MPI_COMM_WORLD, &r[0]);
    MPI_Request_get_status(r[0], &flag, &st);
    g.rc |= flag ? 0 : 1;
    g.rc |= r[0] != MPI_REQUEST_NULL ? 0 : 2; /* get_status keeps the handle */
    MPI_Test(&r[0], &flag, &st);
    g.rc |= flag && r[0] == MPI_REQUEST_NULL ? 0 : 4;
    for (int i = 0; i < 3; i++)
        MPI_Isend(out, 1, type, 1, 31, MPI_COMM_WORLD, &r[i]);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    g.rc |= r[0] == MPI_REQUEST_NULL && r[1] == MPI_REQUEST_NULL && r[2] == MPI_REQUEST_NULL ? 0 : 8;
    for (int i = 0; i < 3; i++)
        MPI_Isend(out, 1, type, 1, 32, MPI_COMM_WORLD, &r[i]);
    MPI_Waitany(3, r, &idx, &st);
    g.rc |= idx >= 0 && idx < 3 && r[idx] == MPI_REQUEST_NULL ? 0 : 16;
    MPI_Testsome(3, r, &outcount, indices, MPI_STATUSES_IGNORE);
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    MPI_Isend(out, 1, type, 1, 33, MPI_COMM_WORLD, &r[0]);
    MPI_Cancel(&r[0]);
    MPI_Wait(&r[0], &st);
    MPI_Test_cancelled(&st, &g.cancelled);
    MPI_Isend(out, 1, type, 1, 34, MPI_COMM_WORLD, &r[0]);
    g.rc |= MPI_Request_free(&r[0]) == MPI_SUCCESS && r[0] == MPI_REQUEST_NULL ? 0 : 32;
    return g;
}

/* What rank 1 receives of `completions`: 1 + 3 + 3 + 1 + 1 messages. */
static void drain_completions(void)
{
    int in;
    const int tags[] = {30, 31, 31, 31, 32, 32, 32, 33, 34};
    for (int i = 0; i < 9; i++)
        CHECK(MPI_Recv(&in, 1, MPI_INT, 0, tags[i], MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS,
              "the completion test's message %d", i);
}

/* Rank 0's messages for one run of `receive_completions`. */
static void send_for_receives(void)
{
    int two[2] = {7, 8};
    const int tags[] = {40, 41, 41, 41, 42, 42, 42, 44, 47, 49};
    for (int i = 0; i < 10; i++)
        MPI_Send(two, 1, MPI_INT, 1, tags[i], MPI_COMM_WORLD);
    MPI_Send(two, 2, MPI_INT, 1, 45, MPI_COMM_WORLD);
    MPI_Send(two, 2, MPI_INT, 1, 46, MPI_COMM_WORLD);
    MPI_Send(two, 2, MPI_INT, 1, 48, MPI_COMM_WORLD);
}

/* The completion calls on receive requests (express when `type` is MPI_INT: posted from rank 0
 * on the communicator just used), each outcome in `g`; `keep` is the buffer of the request freed
 * before its message came, valid until the end. */
static void receive_completions(MPI_Datatype type, struct got g[13], int *keep)
{
    MPI_Request r[3];
    MPI_Status st[3];
    int in[3][2], flag = 0, idx = -1, outcount = 0, indices[3], rc;
    memset(st, 0, sizeof st);
    MPI_Irecv(in[0], 2, type, 0, 40, MPI_COMM_WORLD, &r[0]);
    do
        MPI_Request_get_status(r[0], &flag, &st[0]);
    while (!flag);
    g[0] = got_of(r[0] != MPI_REQUEST_NULL ? MPI_SUCCESS : MPI_ERR_OTHER, &st[0]);
    g[1] = got_of(MPI_Wait(&r[0], &st[0]), &st[0]);
    for (int i = 0; i < 3; i++)
        MPI_Irecv(in[i], 2, type, 0, 41, MPI_COMM_WORLD, &r[i]);
    rc = MPI_Waitall(3, r, st);
    g[2] = got_of(rc, &st[2]);
    g[2].cancelled |= (r[0] != MPI_REQUEST_NULL) << 1 | (st[0].MPI_TAG != 41) << 2;
    for (int i = 0; i < 3; i++)
        MPI_Irecv(in[i], 2, type, 0, 42, MPI_COMM_WORLD, &r[i]);
    MPI_Waitany(3, r, &idx, &st[0]);
    g[3] = got_of(MPI_SUCCESS, &st[0]);
    for (int left = 2; left > 0; left -= outcount)
        MPI_Testsome(3, r, &outcount, indices, st);
    g[4] = got_of(MPI_SUCCESS, &st[0]);
    g[4].cancelled |= (r[0] != MPI_REQUEST_NULL || r[1] != MPI_REQUEST_NULL || r[2] != MPI_REQUEST_NULL) << 1;
    MPI_Irecv(in[0], 2, type, 0, 43, MPI_COMM_WORLD, &r[0]); /* never sent */
    MPI_Cancel(&r[0]);
    g[5] = got_of(MPI_Wait(&r[0], &st[0]), &st[0]);
    MPI_Irecv(keep, 2, type, 0, 44, MPI_COMM_WORLD, &r[0]);
    g[6].rc = MPI_Request_free(&r[0]);
    g[6].source = r[0] == MPI_REQUEST_NULL;
    /* A truncated receive beside a receive from any source and a null request. */
    MPI_Irecv(in[0], 1, type, 0, 45, MPI_COMM_WORLD, &r[0]);
    MPI_Irecv(in[1], 2, MPI_INT, MPI_ANY_SOURCE, 47, MPI_COMM_WORLD, &r[1]);
    r[2] = MPI_REQUEST_NULL;
    for (int i = 0; i < 3; i++)
        st[i].MPI_ERROR = -1;
    rc = MPI_Waitall(3, r, st);
    g[7] = got_of(rc, &st[0]);
    MPI_Error_class(st[0].MPI_ERROR, &g[7].cancelled);
    g[8] = got_of(st[1].MPI_ERROR, &st[1]);
    g[8].cancelled = st[2].MPI_ERROR;
    /* Truncated beside a null request only (the express path reports it), then alone. */
    MPI_Irecv(in[0], 1, type, 0, 46, MPI_COMM_WORLD, &r[0]);
    r[1] = MPI_REQUEST_NULL;
    st[0].MPI_ERROR = st[1].MPI_ERROR = -1;
    rc = MPI_Waitall(2, r, st);
    g[9] = got_of(rc, &st[0]);
    MPI_Error_class(st[0].MPI_ERROR, &g[9].cancelled);
    g[9].cancelled |= st[1].MPI_ERROR << 8;
    MPI_Irecv(in[0], 1, type, 0, 48, MPI_COMM_WORLD, &r[0]);
    g[10] = got_of(MPI_Wait(&r[0], &st[0]), &st[0]);
    MPI_Irecv(in[0], 2, type, 0, 49, MPI_COMM_WORLD, &r[0]);
    do
        MPI_Test(&r[0], &flag, &st[0]);
    while (!flag);
    g[12] = got_of(r[0] == MPI_REQUEST_NULL ? MPI_SUCCESS : MPI_ERR_OTHER, &st[0]);
    MPI_Recv(in[0], 2, type, 0, 44, MPI_COMM_WORLD, MPI_STATUS_IGNORE); /* the freed one's twin */
    g[11].rc = in[0][0];
}

static void declined_arguments(int size)
{
    int x = 0, cls = 0;
    MPI_Request r;
    MPI_Error_class(MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD), &cls);
    CHECK(cls == MPI_ERR_RANK, "MPI_Send to rank %d (size %d): MPI_ERR_RANK (%d)", size, size, cls);
    MPI_Error_class(MPI_Send(&x, 1, MPI_INT, 1, -5, MPI_COMM_WORLD), &cls);
    CHECK(cls == MPI_ERR_TAG, "MPI_Send with tag -5: MPI_ERR_TAG (%d)", cls);
    MPI_Error_class(MPI_Send(&x, -1, MPI_INT, 1, 0, MPI_COMM_WORLD), &cls);
    CHECK(cls == MPI_ERR_COUNT, "MPI_Send of -1 elements: MPI_ERR_COUNT (%d)", cls);
    MPI_Error_class(MPI_Send(&x, 1, MPI_INT, 1, 0, MPI_COMM_NULL), &cls);
    CHECK(cls == MPI_ERR_COMM, "MPI_Send on MPI_COMM_NULL: MPI_ERR_COMM (%d)", cls);
    MPI_Error_class(MPI_Isend(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD, &r), &cls);
    CHECK(cls == MPI_ERR_RANK, "MPI_Isend to rank %d: MPI_ERR_RANK (%d)", size, cls);
    MPI_Error_class(MPI_Recv(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), &cls);
    CHECK(cls == MPI_ERR_RANK, "MPI_Recv from rank %d: MPI_ERR_RANK (%d)", size, cls);
    MPI_Error_class(MPI_Recv(&x, 1, MPI_INT, 0, -7, MPI_COMM_WORLD, MPI_STATUS_IGNORE), &cls);
    CHECK(cls == MPI_ERR_TAG, "MPI_Recv with tag -7: MPI_ERR_TAG (%d)", cls);
    MPI_Error_class(MPI_Recv(&x, -2, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), &cls);
    CHECK(cls == MPI_ERR_COUNT, "MPI_Recv of -2 elements: MPI_ERR_COUNT (%d)", cls);
    MPI_Error_class(MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, NULL), &cls);
    CHECK(cls != MPI_SUCCESS, "MPI_Recv with a null status fails (%d)", cls);
}

int main(int argc, char **argv)
{
    int rank = check_init(&argc, &argv, 2);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Type_contiguous(1, MPI_INT, &dint);
    MPI_Type_commit(&dint);

    pair(rank, "exact", 4, 7, 4, 0, 7, 0);
    pair(rank, "truncated", 8, 7, 4, 0, 7, 0);
    pair(rank, "any source, any tag", 3, 9, 8, MPI_ANY_SOURCE, MPI_ANY_TAG, 0);
    pair(rank, "empty", 0, 11, 4, 0, 11, 0);
    pair(rank, "arrived first", 5, 12, 8, 0, 12, 1);
    pair(rank, "arrived first, truncated", 5, 13, 2, MPI_ANY_SOURCE, 13, 1);
    if (rank == 1) {
        int x[4];
        MPI_Status sa, sb;
        int ra = MPI_Recv(x, 4, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &sa);
        int rb = MPI_Recv(x, 4, dint, MPI_PROC_NULL, 0, MPI_COMM_WORLD, &sb);
        same("MPI_PROC_NULL", got_of(ra, &sa), got_of(rb, &sb));
    }
    /* A probe, then each receive of what it found. */
    if (rank == 0) {
        int out[2] = {1, 2};
        MPI_Send(out, 2, MPI_INT, 1, 20, MPI_COMM_WORLD);
        MPI_Send(out, 2, MPI_INT, 1, 20, MPI_COMM_WORLD);
    } else {
        int in[2];
        MPI_Status p, sa, sb;
        MPI_Probe(0, 20, MPI_COMM_WORLD, &p);
        int ra = MPI_Recv(in, 2, MPI_INT, p.MPI_SOURCE, p.MPI_TAG, MPI_COMM_WORLD, &sa);
        MPI_Probe(0, 20, MPI_COMM_WORLD, &p);
        int rb = MPI_Recv(in, 2, dint, p.MPI_SOURCE, p.MPI_TAG, MPI_COMM_WORLD, &sb);
        same("probe then receive", got_of(ra, &sa), got_of(rb, &sb));
    }

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        int out = 5;
        struct got a = completions(MPI_INT, &out);
        struct got b = completions(dint, &out);
        CHECK(a.rc == 0, "an express send's request answers every completion call (%#x)", a.rc);
        same("completion calls on send requests", a, b);
    } else {
        drain_completions();
        drain_completions();
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        for (int run = 0; run < 2; run++) {
            send_for_receives();
            int two[2] = {7, 8};
            MPI_Send(two, 2, MPI_INT, 1, 44, MPI_COMM_WORLD); /* the freed receive's twin */
        }
    } else {
        static int keep[2][2];
        struct got a[13], b[13];
        memset(a, 0, sizeof a);
        memset(b, 0, sizeof b);
        receive_completions(MPI_INT, a, keep[0]);
        receive_completions(dint, b, keep[1]);
        const char *what[13] = {"get_status", "wait", "waitall", "waitany", "testsome", "cancel",
                                "request_free", "waitall truncated", "waitall beside",
                                "waitall truncated alone", "wait truncated", "freed receive's message",
                                "test"};
        for (int i = 0; i < 13; i++)
            same(what[i], a[i], b[i]);
        CHECK(a[1].source == 0 && a[1].tag == 40 && a[1].count == 4, "express wait's status");
        CHECK(a[2].rc == MPI_SUCCESS && a[2].cancelled == 0, "express waitall");
        CHECK(a[12].rc == MPI_SUCCESS && a[12].tag == 49 && a[12].count == 4, "express test");
        CHECK(a[5].cancelled == 1, "a cancelled express receive");
        CHECK(a[7].rc == MPI_ERR_IN_STATUS && a[7].cancelled == MPI_ERR_TRUNCATE && a[8].rc == MPI_SUCCESS &&
                  a[8].cancelled == MPI_SUCCESS,
              "a truncated express receive in MPI_Waitall: MPI_ERR_IN_STATUS (%d), its MPI_ERROR "
              "MPI_ERR_TRUNCATE (%d), the others' MPI_SUCCESS (%d, %d)",
              a[7].rc, a[7].cancelled, a[8].rc, a[8].cancelled);
        CHECK(a[9].rc == MPI_ERR_IN_STATUS && a[9].cancelled == MPI_ERR_TRUNCATE && a[9].count == 4,
              "a truncated express receive beside a null request in MPI_Waitall (%d, %#x)", a[9].rc,
              a[9].cancelled);
        CHECK(a[10].rc == MPI_ERR_TRUNCATE && a[10].count == 4 && a[10].tag == 48,
              "a truncated express receive in MPI_Wait (%d)", a[10].rc);
        CHECK(a[6].rc == MPI_SUCCESS && a[6].source == 1, "MPI_Request_free of a pending express receive");
        CHECK(keep[0][0] == 7 && keep[1][0] == 7, "the freed receives stored their messages");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        declined_arguments(2);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Type_free(&dint);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
