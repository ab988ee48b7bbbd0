/* Partitioned communication: rank 0 sends 8 partitions of 3 ints, started 4 times, each time
 * with 4 threads marking the partitions ready (MPI_Pready, MPI_Pready_list, MPI_Pready_range) in
 * a shuffled order; rank 1 receives them as 3 partitions of 8 ints (a different cut of the same
 * bytes), polling MPI_Parrived and checking each partition as soon as it is there. Then two
 * requests with the same tag match in initialization order, a receive into a vector type takes
 * partitions marked in reverse order, and the error paths. Run with 2
 * processes. It passes on MPICH itself too; differences are noted below. */
#define _GNU_SOURCE
#include "check.h"
#include <pthread.h>
#include <unistd.h>

#define SEND_PARTS 8
#define SEND_COUNT 3
#define THREADS 4
#define ROUNDS 4
#define TOTAL (SEND_PARTS * SEND_COUNT)

static int rank, recv_parts, recv_count;

static int value(int round, int i)
{
    return round * 1000 + i;
}

struct marker {
    MPI_Request req;
    int round, thread;
    const int *order; /* a permutation of the partitions */
};

/* Thread t marks partitions order[2t] and order[2t + 1], one way or another by round. */
static void *mark(void *arg)
{
    struct marker *m = arg;
    int mine[2] = {m->order[2 * m->thread], m->order[2 * m->thread + 1]};
    usleep((unsigned)(m->thread * 700 + m->round * 300) % 2000);
    int rc = MPI_SUCCESS;
    switch (m->round % 3) {
    case 0:
        for (int i = 0; i < 2 && rc == MPI_SUCCESS; i++) {
            rc = MPI_Pready(mine[i], m->req);
            usleep(500);
        }
        break;
    case 1:
        rc = MPI_Pready_list(2, mine, m->req);
        break;
    default: /* a range of two adjacent partitions */
        rc = MPI_Pready_range(2 * m->thread, 2 * m->thread + 1, m->req);
        break;
    }
    if (rc != MPI_SUCCESS)
        abort();
    return NULL;
}

static void shuffle(int *order, int n, unsigned seed)
{
    for (int i = 0; i < n; i++)
        order[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(rand_r(&seed) % (unsigned)(i + 1)), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
}

static void sender(void)
{
    int buf[TOTAL] = {0};
    MPI_Request req;
    CHECK(MPI_Psend_init(buf, SEND_PARTS, SEND_COUNT, MPI_INT, 1, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &req) == MPI_SUCCESS,
          "MPI_Psend_init: %d partitions of %d ints", SEND_PARTS, SEND_COUNT);
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < TOTAL; i++)
            buf[i] = value(round, i);
        int order[SEND_PARTS];
        shuffle(order, SEND_PARTS, (unsigned)round + 1);
        CHECK(MPI_Start(&req) == MPI_SUCCESS, "round %d: MPI_Start", round);
        pthread_t t[THREADS];
        struct marker m[THREADS];
        for (int i = 0; i < THREADS; i++) {
            m[i] = (struct marker){req, round, i, order};
            pthread_create(&t[i], NULL, mark, &m[i]);
        }
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        CHECK(MPI_Pready(order[0], req) == MPI_SUCCESS, "round %d: marking a partition again does nothing", round);
        MPI_Status st;
        CHECK(MPI_Wait(&req, &st) == MPI_SUCCESS && req != MPI_REQUEST_NULL, "round %d: MPI_Wait (the request stays)", round);
    }
    CHECK(MPI_Request_free(&req) == MPI_SUCCESS && req == MPI_REQUEST_NULL, "MPI_Request_free");
}

static void receiver(void)
{
    int buf[TOTAL] = {0};
    MPI_Request req;
    CHECK(MPI_Precv_init(buf, recv_parts, recv_count, MPI_INT, 0, 7, MPI_COMM_WORLD, MPI_INFO_NULL, &req) == MPI_SUCCESS,
          "MPI_Precv_init: %d partitions of %d ints", recv_parts, recv_count);
    int partial = 0;
    for (int round = 0; round < ROUNDS; round++) {
        for (int i = 0; i < TOTAL; i++)
            buf[i] = -1;
        CHECK(MPI_Start(&req) == MPI_SUCCESS, "round %d: MPI_Start", round);
        int seen[SEND_PARTS] = {0}, arrived = 0;
        while (arrived < recv_parts) {
            for (int j = 0; j < recv_parts; j++) {
                int flag = 0;
                if (seen[j])
                    continue;
                if (MPI_Parrived(req, j, &flag) != MPI_SUCCESS)
                    CHECK(0, "MPI_Parrived");
                if (!flag)
                    continue;
                seen[j] = 1;
                arrived++;
                partial += arrived < recv_parts;
                int ok = 1;
                for (int i = j * recv_count; i < (j + 1) * recv_count; i++)
                    ok &= buf[i] == value(round, i);
                CHECK(ok, "round %d: partition %d holds its data as soon as MPI_Parrived says so", round, j);
            }
        }
        MPI_Status st;
        int n = -1;
        CHECK(MPI_Wait(&req, &st) == MPI_SUCCESS && MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == TOTAL &&
                  st.MPI_SOURCE == 0 && st.MPI_TAG == 7,
              "round %d: MPI_Wait: %d ints from %d, tag %d", round, n, st.MPI_SOURCE, st.MPI_TAG);
    }
    /* Partitions go as they are marked (the markers sleep between them): some arrive first. */
    CHECK(partial > 0, "%d partitions seen before the whole message, in %d rounds", partial, ROUNDS);
    CHECK(MPI_Request_free(&req) == MPI_SUCCESS, "MPI_Request_free");
}

/* Two requests with the same source, tag and communicator match in initialization order, whatever
 * the order they are started in. */
static void init_order(void)
{
    int a[4] = {0}, b[3] = {0};
    MPI_Request ra, rb;
    if (rank == 0) {
        for (int i = 0; i < 4; i++)
            a[i] = 100 + i;
        for (int i = 0; i < 3; i++)
            b[i] = 200 + i;
        MPI_Psend_init(a, 2, 2, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &ra);
        MPI_Psend_init(b, 1, 3, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &rb);
        MPI_Start(&rb);
        MPI_Pready(0, rb);
        MPI_Wait(&rb, MPI_STATUS_IGNORE);
        MPI_Start(&ra);
        MPI_Pready_range(0, 1, ra);
        MPI_Wait(&ra, MPI_STATUS_IGNORE);
    } else {
        MPI_Precv_init(a, 1, 4, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &ra);
        MPI_Precv_init(b, 3, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_INFO_NULL, &rb);
        MPI_Request both[2] = {ra, rb};
        MPI_Startall(2, both);
        MPI_Waitall(2, both, MPI_STATUSES_IGNORE);
        CHECK(a[0] == 100 && a[3] == 103 && b[0] == 200 && b[2] == 202, "the first init got the first init's data");
    }
    MPI_Request_free(&ra);
    MPI_Request_free(&rb);
}

/* A derived receive type: 4 partitions of 2 ints arrive as 2 partitions of one vector of 2
 * blocks of 2 ints, 3 apart (holes at 2 and 7 stay untouched). */
static void derived(void)
{
    int buf[10];
    MPI_Request req;
    if (rank == 0) {
        for (int i = 0; i < 8; i++)
            buf[i] = i;
        MPI_Psend_init(buf, 4, 2, MPI_INT, 1, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        for (int k = 3; k >= 0; k--)
            MPI_Pready(k, req);
        MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
        MPI_Datatype vec;
        MPI_Type_vector(2, 2, 3, MPI_INT, &vec);
        MPI_Type_commit(&vec);
        for (int i = 0; i < 10; i++)
            buf[i] = -1;
        MPI_Precv_init(buf, 2, 1, vec, 0, 11, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        MPI_Start(&req);
        MPI_Status st;
        int n = -1;
        CHECK(MPI_Wait(&req, &st) == MPI_SUCCESS && MPI_Get_count(&st, vec, &n) == MPI_SUCCESS && n == 2,
              "a partitioned receive into a vector type: %d vectors", n);
        int want[10] = {0, 1, -1, 2, 3, 4, 5, -1, 6, 7}, ok = 1;
        for (int i = 0; i < 10; i++)
            ok &= buf[i] == want[i];
        CHECK(ok, "each partition's bytes went to its blocks");
        MPI_Type_free(&vec);
    }
    MPI_Request_free(&req);
}

/* MPI_PROC_NULL: a peer that moves nothing (MPICH 4.0.2 crashes in MPI_Psend_init). */
static void proc_null(void)
{
    int buf[4] = {0}, flag = 0;
    MPI_Request s, r;
    MPI_Status st;
    MPI_Psend_init(buf, 2, 2, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &s);
    MPI_Precv_init(buf, 4, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &r);
    for (int round = 0; round < 2; round++) {
        MPI_Start(&s);
        MPI_Start(&r);
        CHECK(MPI_Parrived(r, 3, &flag) == MPI_SUCCESS && flag, "MPI_PROC_NULL: every partition has arrived");
        MPI_Test(&s, &flag, MPI_STATUS_IGNORE);
        CHECK(!flag, "MPI_PROC_NULL: the send waits for its partitions");
        MPI_Pready_range(0, 1, s);
        CHECK(MPI_Wait(&s, MPI_STATUS_IGNORE) == MPI_SUCCESS && MPI_Wait(&r, &st) == MPI_SUCCESS && st.MPI_SOURCE == MPI_PROC_NULL &&
                  st.MPI_TAG == MPI_ANY_TAG,
              "MPI_PROC_NULL: both complete, the receive with the empty status");
    }
    MPI_Request_free(&s);
    MPI_Request_free(&r);
}

static void errors(void)
{
    int buf[8] = {0}, flag;
    MPI_Request req;
    for (int i = 0; i < 8; i++)
        buf[i] = rank == 0 ? i : -1;
    CHECK_ERR(MPI_Psend_init(buf, 0, 2, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req), MPI_ERR_ARG, "partitions");
    CHECK_ERR(MPI_Psend_init(buf, 4, -1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Psend_init(buf, 4, 2, MPI_INT, 1, -1, MPI_COMM_WORLD, MPI_INFO_NULL, &req), MPI_ERR_TAG, "tag");
    CHECK_ERR(MPI_Psend_init(buf, 4, 2, MPI_INT, 5, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req), MPI_ERR_RANK, "rank");
    CHECK_ERR(MPI_Precv_init(buf, 4, 2, MPI_INT, MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &req), MPI_ERR_RANK, "rank");
    CHECK_ERR(MPI_Precv_init(buf, 4, 2, MPI_INT, 1 - rank, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_INFO_NULL, &req), MPI_ERR_TAG, "tag");
    CHECK_ERR(MPI_Pready(0, MPI_REQUEST_NULL), MPI_ERR_REQUEST, "partitioned");
    if (rank == 0) {
        MPI_Psend_init(buf, 4, 2, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        CHECK_ERR(MPI_Pready(0, req), MPI_ERR_REQUEST, "active");
        CHECK_ERR(MPI_Parrived(req, 0, &flag), MPI_ERR_REQUEST, "partitioned");
        MPI_Start(&req);
        CHECK_ERR(MPI_Pready(4, req), MPI_ERR_OTHER, "partition");
        CHECK_ERR(MPI_Pready(-1, req), MPI_ERR_OTHER, "partition");
        CHECK_ERR(MPI_Pready_range(2, 1, req), MPI_ERR_OTHER, "range");
        CHECK_ERR(MPI_Pready_range(3, 4, req), MPI_ERR_OTHER, "partition");
        int list[2] = {1, 9};
        CHECK_ERR(MPI_Pready_list(2, list, req), MPI_ERR_OTHER, "partition");
        CHECK_ERR(MPI_Parrived(req, 0, &flag), MPI_ERR_REQUEST, "partitioned");
        if (on_madmpi()) { /* MPICH says MPI_ERR_INTERN, or frees it */
            CHECK_ERR(MPI_Cancel(&req), MPI_ERR_REQUEST, "cancel");
            CHECK_ERR(MPI_Request_free(&req), MPI_ERR_REQUEST, "freed");
        }
        CHECK(MPI_Pready_range(0, 3, req) == MPI_SUCCESS && MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS,
              "nothing was sent by the failed calls: the range sends all 4");
    } else {
        MPI_Precv_init(buf, 2, 4, MPI_INT, 0, 3, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        if (on_madmpi()) { /* MPI 4.1's rule; MPICH 4.0.2 says MPI_ERR_REQUEST, or crashes on null */
            flag = 0;
            CHECK(MPI_Parrived(req, 0, &flag) == MPI_SUCCESS && flag, "MPI_Parrived of an inactive request: true");
            flag = 0;
            CHECK(MPI_Parrived(MPI_REQUEST_NULL, 0, &flag) == MPI_SUCCESS && flag, "MPI_Parrived of MPI_REQUEST_NULL: true");
        }
        MPI_Start(&req);
        CHECK_ERR(MPI_Pready(0, req), MPI_ERR_REQUEST, "partitioned");
        CHECK_ERR(MPI_Parrived(req, 2, &flag), MPI_ERR_OTHER, "partition");
        MPI_Wait(&req, MPI_STATUS_IGNORE);
        CHECK(buf[0] == 0 && buf[7] == 7, "the range's partitions arrived");
    }
    MPI_Request_free(&req);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check_rank = rank;
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE");
    recv_parts = 3;
    recv_count = TOTAL / recv_parts;
    /* MPICH 4.0.2 asserts (mpidig_part_callbacks.c:136, part_rreq) in these rounds, even with
     * both sides cut alike, the receiver started first and one thread marking partitions. */
    if (rank == 0 && on_madmpi())
        sender();
    else if (on_madmpi())
        receiver();
    init_order();
    derived();
    if (on_madmpi())
        proc_null();
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    errors();
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
