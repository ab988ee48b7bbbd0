/* Generalized requests: MPI_Grequest_start / MPI_Grequest_complete with the callbacks called as
 * MPI 4.0 §13.2 says (query at each reported completion, free once, cancel with the complete
 * flag), completed by another thread while this one waits in MPI_Wait, MPI_Waitany,
 * MPI_Waitall and MPI_Waitsome mixed with point-to-point requests; MPICH's MPIX_Grequest_start
 * (poll_fn, wait_fn) and request classes; the error paths. Run with 2 processes (each runs the
 * same checks; the point-to-point requests go to the other rank). It passes on MPICH itself
 * too; differences are noted below. */
#include "check.h"
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static int rank, peer;

/* The extra_state of a request: call counts and what the callbacks do. */
struct greq {
    atomic_int query, free, cancel, cancel_complete, polls, waits;
    int tag;         /* what query puts in MPI_TAG */
    int query_error; /* what query returns */
    int complete_at; /* poll_fn completes the request at this poll (0: never) */
    int wait_completes; /* wait_fn completes the request (else it only counts) */
    MPI_Request req;
};

static int query_fn(void *extra, MPI_Status *st)
{
    struct greq *g = extra;
    atomic_fetch_add(&g->query, 1);
    st->MPI_SOURCE = rank;
    st->MPI_TAG = g->tag;
    MPI_Status_set_elements(st, MPI_INT, g->tag % 10); /* a count: the last digit of the tag */
    MPI_Status_set_cancelled(st, g->cancel > 0);
    return g->query_error;
}

static int free_fn(void *extra)
{
    atomic_fetch_add(&((struct greq *)extra)->free, 1);
    return MPI_SUCCESS;
}

static int cancel_fn(void *extra, int complete)
{
    struct greq *g = extra;
    atomic_fetch_add(&g->cancel, 1);
    atomic_fetch_add(&g->cancel_complete, complete != 0);
    return MPI_SUCCESS;
}

static int poll_fn(void *extra, MPI_Status *st)
{
    struct greq *g = extra;
    (void)st;
    if (atomic_fetch_add(&g->polls, 1) + 1 == g->complete_at)
        return MPI_Grequest_complete(g->req);
    return MPI_SUCCESS;
}

/* Completes the requests it is given if they say so. */
static int wait_fn(int count, void **states, double timeout, MPI_Status *st)
{
    (void)timeout;
    (void)st;
    for (int i = 0; i < count; i++) {
        struct greq *g = states[i];
        atomic_fetch_add(&g->waits, 1);
        if (g->wait_completes)
            MPI_Grequest_complete(g->req);
    }
    return MPI_SUCCESS;
}

static void start(struct greq *g, int tag)
{
    memset(g, 0, sizeof *g);
    g->tag = tag;
    CHECK(MPI_Grequest_start(query_fn, free_fn, cancel_fn, g, &g->req) == MPI_SUCCESS &&
              g->req != MPI_REQUEST_NULL,
          "MPI_Grequest_start (tag %d)", tag);
}

/* Completes the request after a delay, from another thread. */
struct later {
    MPI_Request req;
    int usec;
};

static void *complete_later(void *arg)
{
    struct later *l = arg;
    usleep(l->usec);
    if (MPI_Grequest_complete(l->req) != MPI_SUCCESS)
        abort();
    return NULL;
}

static pthread_t spawn(struct later *l)
{
    pthread_t t;
    if (pthread_create(&t, NULL, complete_later, l) != 0)
        abort();
    return t;
}

static void wait_while_another_thread_completes(void)
{
    struct greq a, b, c;
    MPI_Status st;
    int idx, out, inds[3];

    /* MPI_Wait: query fills the status, free runs once, the handle is nulled. */
    start(&a, 11);
    struct later la = {a.req, 100000};
    pthread_t t = spawn(&la);
    MPI_Request r = a.req;
    CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && r == MPI_REQUEST_NULL, "MPI_Wait returns once another thread completed it");
    pthread_join(t, NULL);
    int n = -1, cancelled = -1;
    MPI_Get_count(&st, MPI_INT, &n);
    MPI_Test_cancelled(&st, &cancelled);
    CHECK(st.MPI_TAG == 11 && st.MPI_SOURCE == rank && n == 1 && !cancelled, "its status is query's (tag %d, count %d)", st.MPI_TAG, n);
    CHECK(a.query == 1 && a.free == 1 && a.cancel == 0, "query once, free once (%d, %d)", a.query, a.free);

    /* MPI_Waitany over a receive and two generalized requests: the one completed wins (the
     * peer sends only after both ranks' MPI_Waitany). */
    int in = -1, outv = 40 + rank;
    MPI_Request rs[3];
    MPI_Irecv(&in, 1, MPI_INT, peer, 5, MPI_COMM_WORLD, &rs[0]);
    start(&a, 21);
    start(&b, 22);
    rs[1] = a.req;
    rs[2] = b.req;
    struct later lb = {b.req, 50000};
    t = spawn(&lb);
    CHECK(MPI_Waitany(3, rs, &idx, &st) == MPI_SUCCESS && idx == 2 && rs[2] == MPI_REQUEST_NULL,
          "MPI_Waitany: index %d (the generalized request another thread completed)", idx);
    pthread_join(t, NULL);
    CHECK(st.MPI_TAG == 22 && b.query == 1 && b.free == 1 && a.query == 0 && a.free == 0,
          "only the completed request was queried and freed");

    /* MPI_Waitall: the receive completes when the peer sends, the other request from a thread. */
    MPI_Status sts[3];
    struct later la2 = {a.req, 50000};
    t = spawn(&la2);
    MPI_Barrier(MPI_COMM_WORLD); /* the peer's receive is still waiting: nothing was sent */
    MPI_Send(&outv, 1, MPI_INT, peer, 5, MPI_COMM_WORLD);
    if (on_madmpi()) {
        CHECK(MPI_Waitall(3, rs, sts) == MPI_SUCCESS, "MPI_Waitall over a receive, a request completed by a thread and a null one");
    } else { /* MPICH 4.0.2 asserts in MPI_Waitall over a receive and a generalized request */
        for (int i = 0; i < 3; i++)
            MPI_Wait(&rs[i], &sts[i]);
    }
    pthread_join(t, NULL);
    CHECK(in == 40 + peer && sts[0].MPI_SOURCE == peer && sts[0].MPI_TAG == 5, "the receive got %d", in);
    CHECK(sts[1].MPI_TAG == 21 && a.query == 1 && a.free == 1, "the generalized request's status is query's");
    CHECK(sts[2].MPI_SOURCE == MPI_ANY_SOURCE && sts[2].MPI_TAG == MPI_ANY_TAG, "the null request's status is empty");

    /* MPI_Waitsome: two requests completed by two threads; every one reported once. */
    start(&a, 31);
    start(&b, 32);
    start(&c, 33);
    MPI_Request ss[3] = {a.req, b.req, c.req};
    struct later l1 = {a.req, 30000}, l3 = {c.req, 60000};
    pthread_t t1 = spawn(&l1), t3 = spawn(&l3);
    int reported = 0, seen[3] = {0, 0, 0};
    while (reported < 2) {
        CHECK(MPI_Waitsome(3, ss, &out, inds, sts) == MPI_SUCCESS && out >= 1, "MPI_Waitsome: %d done", out);
        for (int i = 0; i < out; i++)
            seen[inds[i]]++;
        reported += out;
    }
    pthread_join(t1, NULL);
    pthread_join(t3, NULL);
    CHECK(seen[0] == 1 && seen[1] == 0 && seen[2] == 1 && ss[1] == b.req, "the two completed requests, once each");
    CHECK(a.free == 1 && c.free == 1 && b.query == 0, "freed when reported");
    MPI_Grequest_complete(b.req);
    CHECK(MPI_Wait(&ss[1], MPI_STATUS_IGNORE) == MPI_SUCCESS && b.query == 1 && b.free == 1,
          "MPI_STATUS_IGNORE: query still runs (on a status of MPI's)");
}

static void callbacks_and_life(void)
{
    struct greq a;
    MPI_Status st;
    int flag;

    /* Tests do not query an incomplete request; MPI_Request_get_status queries, not frees. */
    start(&a, 41);
    MPI_Request r = a.req;
    CHECK(MPI_Test(&r, &flag, &st) == MPI_SUCCESS && !flag && a.query == 0, "MPI_Test of a running request");
    CHECK(MPI_Request_get_status(r, &flag, &st) == MPI_SUCCESS && !flag && a.query == 0, "MPI_Request_get_status of a running request");
    CHECK(MPI_Cancel(&r) == MPI_SUCCESS && a.cancel == 1 && a.cancel_complete == 0, "MPI_Cancel before completion: complete = 0");
    MPI_Grequest_complete(r);
    CHECK(MPI_Cancel(&r) == MPI_SUCCESS && a.cancel == 2 && a.cancel_complete == 1, "MPI_Cancel after completion: complete = 1");
    st.MPI_TAG = -5;
    CHECK(MPI_Request_get_status(r, &flag, &st) == MPI_SUCCESS && flag && st.MPI_TAG == 41 && a.query == 1 && a.free == 0,
          "MPI_Request_get_status of a completed request: query, no free");
    CHECK(MPI_Test(&r, &flag, &st) == MPI_SUCCESS && flag && r == MPI_REQUEST_NULL && a.query == 2 && a.free == 1,
          "MPI_Test completes it: query again, then free");
    int cancelled = 0, n = -1;
    MPI_Test_cancelled(&st, &cancelled);
    MPI_Get_count(&st, MPI_INT, &n);
    CHECK(cancelled && n == 1, "query said cancelled, and the count (%d)", n);

    /* Freed before completion: free runs at MPI_Grequest_complete; after: at MPI_Request_free. */
    start(&a, 42);
    r = a.req;
    /* MPICH 4.0.2 calls free_fn here already (MPI says: at the later of the two calls). */
    CHECK(MPI_Request_free(&r) == MPI_SUCCESS && r == MPI_REQUEST_NULL && (a.free == 0 || !on_madmpi()),
          "MPI_Request_free of a running request");
    CHECK(MPI_Grequest_complete(a.req) == MPI_SUCCESS && a.free == 1 && a.query == 0, "its completion frees it, unqueried");
    start(&a, 43);
    r = a.req;
    MPI_Grequest_complete(r);
    CHECK(MPI_Request_free(&r) == MPI_SUCCESS && a.free == 1 && a.query == 0, "MPI_Request_free of a completed request frees it");

    /* query's error is the request's: MPI_Wait returns it, MPI_Waitall puts it in the status. */
    start(&a, 44);
    a.query_error = MPI_ERR_TAG;
    r = a.req;
    MPI_Grequest_complete(r);
    int rc = MPI_Wait(&r, &st);
    CHECK(class_of(rc) == MPI_ERR_TAG && r == MPI_REQUEST_NULL && st.MPI_TAG == 44 && a.free == 1,
          "MPI_Wait returns query's error (class %d), with query's status, and frees", class_of(rc));
    MPI_Request two[2];
    MPI_Status sts[2];
    start(&a, 45);
    a.query_error = MPI_ERR_TAG;
    two[0] = a.req;
    two[1] = MPI_REQUEST_NULL;
    MPI_Grequest_complete(a.req);
    rc = MPI_Waitall(2, two, sts);
    /* MPICH 4.0.2 puts an MPI_ERR_OTHER code there (MPI_Wait returns query's code itself). */
    int expected = on_madmpi() ? MPI_ERR_TAG : MPI_ERR_OTHER;
    CHECK(class_of(rc) == MPI_ERR_IN_STATUS && class_of(sts[0].MPI_ERROR) == expected && sts[1].MPI_ERROR == MPI_SUCCESS,
          "MPI_Waitall: MPI_ERR_IN_STATUS with query's error in its status");

    /* Completing twice is not checked by MPICH: it does nothing more here. */
    start(&a, 46);
    MPI_Grequest_complete(a.req);
    if (on_madmpi())
        CHECK(MPI_Grequest_complete(a.req) == MPI_SUCCESS, "a second MPI_Grequest_complete does nothing");
    r = a.req;
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    CHECK(a.query == 1 && a.free == 1, "queried and freed once");
}

static void extensions(void)
{
    struct greq a, b;
    MPI_Status st;
    int flag;

    /* poll_fn: MPI_Test polls; the request completes itself at the 3rd poll. */
    memset(&a, 0, sizeof a);
    a.tag = 51;
    a.complete_at = 3;
    CHECK(MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, &a, &a.req) == MPI_SUCCESS, "MPIX_Grequest_start");
    MPI_Request r = a.req;
    int tests = 0;
    do {
        CHECK(MPI_Test(&r, &flag, &st) == MPI_SUCCESS, "MPI_Test %d", tests);
        tests++;
    } while (!flag && tests < 100);
    CHECK(flag && tests == 3 && a.polls == 3 && st.MPI_TAG == 51 && a.free == 1, "done after %d tests, %d polls", tests, a.polls);

    /* MPI_Wait polls until the request completes itself (MadMPI calls wait_fn first, which
     * here does not complete it; MPICH's MPI_Wait only polls). */
    memset(&a, 0, sizeof a);
    a.tag = 55;
    a.complete_at = 20;
    MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, &a, &a.req);
    r = a.req;
    CHECK(MPI_Wait(&r, &st) == MPI_SUCCESS && a.polls == 20 && st.MPI_TAG == 55 && a.free == 1, "MPI_Wait polled %d times", a.polls);

    /* wait_fn: MPI_Waitall calls it (it completes the request). */
    memset(&b, 0, sizeof b);
    b.tag = 52;
    b.wait_completes = 1;
    CHECK(MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, &b, &b.req) == MPI_SUCCESS, "MPIX_Grequest_start");
    r = b.req;
    CHECK(MPI_Waitall(1, &r, &st) == MPI_SUCCESS && b.waits == 1 && st.MPI_TAG == 52 && b.free == 1, "MPI_Waitall called wait_fn (%d)", b.waits);

    /* A class: requests allocated from it use its functions. */
    MPIX_Grequest_class cls;
    CHECK(MPIX_Grequest_class_create(query_fn, free_fn, cancel_fn, poll_fn, wait_fn, &cls) == MPI_SUCCESS, "MPIX_Grequest_class_create");
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    a.tag = 53;
    b.tag = 54;
    a.complete_at = b.complete_at = 2;
    CHECK(MPIX_Grequest_class_allocate(cls, &a, &a.req) == MPI_SUCCESS && MPIX_Grequest_class_allocate(cls, &b, &b.req) == MPI_SUCCESS,
          "MPIX_Grequest_class_allocate twice");
    MPI_Request two[2] = {a.req, b.req};
    MPI_Status sts[2];
    int all = 0;
    for (int i = 0; i < 100 && !all; i++)
        MPI_Testall(2, two, &all, sts);
    CHECK(all && a.polls >= 2 && b.polls >= 2 && sts[0].MPI_TAG == 53 && sts[1].MPI_TAG == 54 && a.free == 1 && b.free == 1,
          "MPI_Testall polls both until they complete themselves");
}

static void errors(void)
{
    MPI_Request r, x;
    struct greq a;
    int buf;

    CHECK_ERR(MPI_Grequest_start(NULL, free_fn, cancel_fn, &a, &r), MPI_ERR_ARG, "query_fn");
    CHECK_ERR(MPI_Grequest_start(query_fn, NULL, cancel_fn, &a, &r), MPI_ERR_ARG, "free_fn");
    CHECK_ERR(MPI_Grequest_start(query_fn, free_fn, NULL, &a, &r), MPI_ERR_ARG, "cancel_fn");
    CHECK_ERR(MPIX_Grequest_start(query_fn, free_fn, cancel_fn, NULL, wait_fn, &a, &r), MPI_ERR_ARG, "poll_fn");
    CHECK_ERR(MPIX_Grequest_start(query_fn, free_fn, cancel_fn, poll_fn, NULL, &a, &r), MPI_ERR_ARG, "wait_fn");
    MPIX_Grequest_class cls;
    CHECK_ERR(MPIX_Grequest_class_create(query_fn, free_fn, cancel_fn, NULL, NULL, &cls), MPI_ERR_ARG, "poll_fn");
    if (on_madmpi()) /* MPICH crashes */
        CHECK_ERR(MPIX_Grequest_class_allocate(12345, &a, &r), MPI_ERR_ARG, "class");
    CHECK_ERR(MPI_Grequest_complete(MPI_REQUEST_NULL), MPI_ERR_REQUEST, "generalized");
    MPI_Irecv(&buf, 1, MPI_INT, peer, 99, MPI_COMM_WORLD, &x);
    CHECK_ERR(MPI_Grequest_complete(x), MPI_ERR_REQUEST, "generalized");
    MPI_Cancel(&x);
    MPI_Wait(&x, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check_rank = rank;
    peer = 1 - rank;
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    wait_while_another_thread_completes();
    callbacks_and_life();
    extensions();
    errors();
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
