/* User error handlers on communicators: MPI_Comm_create_errhandler, _set_errhandler,
 * _get_errhandler, _call_errhandler, MPI_Errhandler_free (MPI's reference counting: a freed
 * handler stays while a communicator uses it), inheritance by dup / split / create, the
 * handler called with the right communicator and code (errors tied to no communicator go to
 * MPI_COMM_WORLD's), a request of a freed communicator still reaching its handler, and the error
 * paths. Run with 2 processes.
 *
 * Differences from MPICH 4.0.2, skipped when running on it: a null output pointer for
 * MPI_Comm_create_errhandler and an invalid handle for MPI_Comm_set_errhandler are MPI_ERR_ARG
 * here (MPICH crashes, or installs the garbage and crashes later); a communicator from
 * MPI_Comm_create inherits its parent's handler here, as MPI says (MPICH gives it none: get
 * reports MPI_ERRORS_ARE_FATAL and its errors go to MPI_COMM_WORLD's handler); the failure of
 * a request whose communicator was freed goes to that communicator's handler here (MPICH calls
 * none and returns the code). */
#include "check.h"

static int rank, size, peer;

static int calls1, calls2;
static MPI_Comm comm1, comm2;
static int code1, code2, string_ok;

static void handler1(MPI_Comm *c, int *code, ...)
{
    calls1++;
    comm1 = *c;
    code1 = *code;
}

/* A handler that calls MPI itself. */
static void handler2(MPI_Comm *c, int *code, ...)
{
    char s[MPI_MAX_ERROR_STRING];
    int n = 0, r = -1;
    calls2++;
    comm2 = *c;
    code2 = *code;
    string_ok = MPI_Error_string(*code, s, &n) == MPI_SUCCESS && n > 0 &&
                (*c == MPI_COMM_NULL || MPI_Comm_rank(MPI_COMM_WORLD, &r) == MPI_SUCCESS);
}

static void user_handlers(void)
{
    MPI_Errhandler e1 = MPI_ERRHANDLER_NULL, e2 = MPI_ERRHANDLER_NULL, got = MPI_ERRHANDLER_NULL;
    MPI_Comm d, s, c;
    MPI_Group g;
    int x = 0, rc, n;

    CHECK(MPI_Comm_create_errhandler(handler1, &e1) == MPI_SUCCESS && e1 != MPI_ERRHANDLER_NULL,
          "MPI_Comm_create_errhandler");
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, e1) == MPI_SUCCESS, "MPI_Comm_set_errhandler(WORLD, user)");
    rc = MPI_Send(&x, 1, MPI_INT, size, 0, MPI_COMM_WORLD);
    CHECK(class_of(rc) == MPI_ERR_RANK && calls1 == 1 && comm1 == MPI_COMM_WORLD && code1 == rc,
          "the handler is called with the communicator and the code the call returns");
    rc = MPI_Group_size(MPI_GROUP_NULL, &n);
    CHECK(class_of(rc) == MPI_ERR_GROUP && calls1 == 2 && comm1 == MPI_COMM_WORLD && code1 == rc,
          "an error tied to no communicator goes to MPI_COMM_WORLD's handler");
    CHECK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &got) == MPI_SUCCESS && got == e1, "MPI_Comm_get_errhandler");
    CHECK(MPI_Errhandler_free(&got) == MPI_SUCCESS && got == MPI_ERRHANDLER_NULL,
          "the handle from MPI_Comm_get_errhandler is freed");

    /* Inheritance. */
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    rc = MPI_Send(&x, 1, MPI_INT, size, 0, d);
    CHECK(class_of(rc) == MPI_ERR_RANK && calls1 == 3 && comm1 == d, "a duplicate inherits the handler (called with it)");
    MPI_Comm_split(MPI_COMM_WORLD, 0, 0, &s);
    CHECK(MPI_Comm_get_errhandler(s, &got) == MPI_SUCCESS && got == e1, "a split communicator inherits the handler");
    MPI_Errhandler_free(&got);
    MPI_Comm_group(MPI_COMM_WORLD, &g);
    MPI_Comm_create(MPI_COMM_WORLD, g, &c);
    rc = MPI_Send(&x, 1, MPI_INT, 0, -3, c);
    if (on_madmpi())
        CHECK(class_of(rc) == MPI_ERR_TAG && calls1 == 4 && comm1 == c, "a created communicator inherits the handler");
    else /* MPICH: the new communicator reports MPI_ERRORS_ARE_FATAL, its errors go to WORLD's */
        calls1 = 4;
    MPI_Group_free(&g);
    MPI_Comm_free(&c);
    MPI_Comm_free(&s);

    /* Another handler on the duplicate; WORLD keeps its own. */
    MPI_Comm_create_errhandler(handler2, &e2);
    CHECK(MPI_Comm_set_errhandler(d, e2) == MPI_SUCCESS, "MPI_Comm_set_errhandler(dup, another)");
    rc = MPI_Recv(&x, 1, MPI_INT, peer, -5, d, MPI_STATUS_IGNORE);
    CHECK(class_of(rc) == MPI_ERR_TAG && calls2 == 1 && comm2 == d && code2 == rc && string_ok && calls1 == 4,
          "errors on the duplicate go to its handler, which may call MPI");

    /* MPI_Errhandler_free while attached: the handle is gone, the handler stays. */
    CHECK(MPI_Errhandler_free(&e1) == MPI_SUCCESS && e1 == MPI_ERRHANDLER_NULL,
          "MPI_Errhandler_free of a handler in use");
    rc = MPI_Send(&x, -1, MPI_INT, peer, 0, MPI_COMM_WORLD);
    CHECK(class_of(rc) == MPI_ERR_COUNT && calls1 == 5, "... which is still called");

    /* MPI_Comm_call_errhandler. */
    CHECK(MPI_Comm_call_errhandler(d, MPI_ERR_TAG) == MPI_SUCCESS && calls2 == 2 && code2 == MPI_ERR_TAG && comm2 == d,
          "MPI_Comm_call_errhandler calls the handler with the code, returns MPI_SUCCESS");
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    CHECK(MPI_Comm_call_errhandler(MPI_COMM_SELF, MPI_ERR_OTHER) == MPI_SUCCESS,
          "MPI_Comm_call_errhandler under MPI_ERRORS_RETURN: MPI_SUCCESS (as in MPICH)");

    /* A request of a communicator freed meanwhile reports to that communicator's handler. */
    if (rank == 0) {
        int big[2] = {1, 2};
        MPI_Recv(&x, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(big, 2, MPI_INT, peer, 0, d);
        MPI_Comm_free(&d);
    } else {
        MPI_Request req;
        MPI_Comm old = d;
        MPI_Irecv(&x, 1, MPI_INT, peer, 0, d, &req);
        MPI_Comm_free(&d);
        MPI_Send(&x, 1, MPI_INT, peer, 1, MPI_COMM_WORLD);
        rc = MPI_Wait(&req, MPI_STATUS_IGNORE);
        /* MPICH returns the code without calling any handler. */
        CHECK(class_of(rc) == MPI_ERR_TRUNCATE && calls2 == (on_madmpi() ? 3 : 2) && comm2 == old,
              "a pending receive of a freed communicator reports to its handler");
    }
    CHECK(MPI_Errhandler_free(&e2) == MPI_SUCCESS, "MPI_Errhandler_free of the last reference");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

static void errors(void)
{
    MPI_Errhandler e = MPI_ERRHANDLER_NULL, dead;

    CHECK_ERR(MPI_Errhandler_free(&e), MPI_ERR_ARG, "MPI_ERRHANDLER_NULL");
    CHECK_ERR(MPI_Errhandler_free(NULL), MPI_ERR_ARG, "errhandler");
    e = MPI_ERRORS_RETURN;
    CHECK(MPI_Errhandler_free(&e) == MPI_SUCCESS && e == MPI_ERRHANDLER_NULL,
          "freeing a predefined handler's handle succeeds (as in MPICH)");
    CHECK_ERR(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRHANDLER_NULL), MPI_ERR_ARG, "MPI_ERRHANDLER_NULL");
    CHECK_ERR(MPI_Comm_create_errhandler(NULL, &e), MPI_ERR_ARG, "function");
    CHECK_ERR(MPI_Comm_get_errhandler(MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "errhandler");
    CHECK_ERR(MPI_Comm_set_errhandler(MPI_COMM_NULL, MPI_ERRORS_RETURN), MPI_ERR_COMM, "communicator");
    CHECK_ERR(MPI_Comm_call_errhandler(MPI_COMM_NULL, MPI_ERR_OTHER), MPI_ERR_COMM, "communicator");
    if (on_madmpi()) {
        CHECK_ERR(MPI_Comm_create_errhandler(handler1, NULL), MPI_ERR_ARG, "errhandler");
        CHECK_ERR(MPI_Comm_set_errhandler(MPI_COMM_WORLD, (MPI_Errhandler)0x94000123), MPI_ERR_ARG, "error handler");
        MPI_Comm_create_errhandler(handler1, &dead);
        e = dead;
        MPI_Errhandler_free(&e);
        CHECK_ERR(MPI_Comm_set_errhandler(MPI_COMM_WORLD, dead), MPI_ERR_ARG, "error handler");
        CHECK_ERR(MPI_Errhandler_free(&dead), MPI_ERR_ARG, "error handler");
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check_rank = rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    peer = rank == 0 ? 1 : 0;
    CHECK(size == 2, "run with 2 processes (%d)", size);
    user_handlers();
    errors();
    MPI_Finalize();
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
