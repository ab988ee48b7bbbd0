/* Communicator management: MPI_Comm_dup, _dup_with_info, _split, _split_type, _create,
 * _free, _compare, _set_name, _get_name, _group, with their error paths (MPI_ERRORS_RETURN)
 * and the inheritance of error handlers. Run with 4 processes.
 *
 * Where MPICH 4.0.2 behaves otherwise (checked by building this file with mpicc.mpich and
 * running it on MPICH's own library under mpiexec.hydra -n 4):
 * - a negative color in MPI_Comm_split is MPI_ERR_ARG here at the process that gave it (the
 *   others go on without it); MPICH takes it as a color;
 * - an info handle that is no info object (0x9c000005, of the direct kind) is MPI_ERR_INFO here;
 *   MPICH does not check direct info handles (info objects are tested by info.c);
 * - MPI_Comm_group hands out a new handle each time here, the same one in MPICH (not checked). */
#include "check.h"

static int rank, size;

/* A message on `a` and one on `b` with the same tag from rank 0 to rank 1, received in the
 * other order: each communicator is its own matching space. */
static void separate_spaces(MPI_Comm a, MPI_Comm b, const char *what)
{
    int x = -1, y = -1, one = 1, two = 2;
    if (rank == 0) {
        MPI_Send(&one, 1, MPI_INT, 1, 5, a);
        MPI_Send(&two, 1, MPI_INT, 1, 5, b);
    } else if (rank == 1) {
        MPI_Recv(&y, 1, MPI_INT, 0, 5, b, MPI_STATUS_IGNORE);
        MPI_Recv(&x, 1, MPI_INT, 0, 5, a, MPI_STATUS_IGNORE);
        CHECK(x == 1 && y == 2, "%s: messages stay in their communicator", what);
    }
}

/* A ring exchange over `c`: every rank gets its left neighbour's rank. */
static void ring(MPI_Comm c, const char *what)
{
    int r, n, got = -1;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    CHECK(MPI_Sendrecv(&r, 1, MPI_INT, (r + 1) % n, 9, &got, 1, MPI_INT, (r + n - 1) % n, 9, c,
                       MPI_STATUS_IGNORE) == MPI_SUCCESS &&
              got == (r + n - 1) % n,
          "%s: ring exchange (rank %d of %d got %d)", what, r, n, got);
}

static void duplicates(void)
{
    MPI_Comm d = MPI_COMM_NULL, e = MPI_COMM_WORLD;
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    int n = -1, r = -1, res = -1;

    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &d) == MPI_SUCCESS && d != MPI_COMM_NULL && d != MPI_COMM_WORLD,
          "MPI_Comm_dup(WORLD)");
    CHECK(MPI_Comm_size(d, &n) == MPI_SUCCESS && n == size && MPI_Comm_rank(d, &r) == MPI_SUCCESS && r == rank,
          "the duplicate has the same size and rank");
    CHECK(MPI_Comm_compare(MPI_COMM_WORLD, d, &res) == MPI_SUCCESS && res == MPI_CONGRUENT,
          "MPI_Comm_compare(WORLD, dup): MPI_CONGRUENT");
    CHECK(MPI_Comm_compare(d, d, &res) == MPI_SUCCESS && res == MPI_IDENT, "MPI_Comm_compare(dup, dup): MPI_IDENT");
    CHECK(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, &res) == MPI_SUCCESS && res == MPI_UNEQUAL,
          "MPI_Comm_compare(WORLD, SELF): MPI_UNEQUAL");
    CHECK(MPI_Comm_get_errhandler(d, &eh) == MPI_SUCCESS && eh == MPI_ERRORS_RETURN,
          "the duplicate inherits MPI_ERRORS_RETURN from WORLD");
    MPI_Errhandler_free(&eh);
    CHECK_ERR(MPI_Send(&n, 1, MPI_INT, size, 0, d), MPI_ERR_RANK, "rank");
    separate_spaces(MPI_COMM_WORLD, d, "WORLD and its duplicate");
    ring(d, "dup");

    CHECK(MPI_Comm_dup(d, &e) == MPI_SUCCESS && e != d, "MPI_Comm_dup of a duplicate");
    separate_spaces(d, e, "two duplicates");
    CHECK(MPI_Comm_compare(d, e, &res) == MPI_SUCCESS && res == MPI_CONGRUENT, "dup of dup is congruent");
    CHECK(MPI_Comm_free(&e) == MPI_SUCCESS && e == MPI_COMM_NULL, "MPI_Comm_free sets MPI_COMM_NULL");

    CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &e) == MPI_SUCCESS && e != MPI_COMM_NULL,
          "MPI_Comm_dup_with_info(MPI_INFO_NULL)");
    ring(e, "dup_with_info");
    MPI_Comm_free(&e);
    CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_ENV, &e) == MPI_SUCCESS && e != MPI_COMM_NULL,
          "MPI_Comm_dup_with_info(MPI_INFO_ENV)");
    MPI_Comm_free(&e);
    /* Only rank 1 gives a bad info: it fails, the others have their duplicate. */
    e = MPI_COMM_WORLD;
    if (rank == 1 && !on_madmpi()) {
        MPI_Comm_dup_with_info(MPI_COMM_WORLD, (MPI_Info)0x9c000005, &e); /* MPICH: no check */
        MPI_Comm_free(&e);
    } else if (rank == 1) {
        CHECK_ERR(MPI_Comm_dup_with_info(MPI_COMM_WORLD, (MPI_Info)0x9c000005, &e), MPI_ERR_INFO, "info");
        CHECK(e == MPI_COMM_NULL, "a failed MPI_Comm_dup_with_info gives MPI_COMM_NULL");
    } else {
        CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &e) == MPI_SUCCESS,
              "MPI_Comm_dup_with_info where another process gave a bad info");
        MPI_Comm_free(&e);
    }

    CHECK_ERR(MPI_Comm_dup(MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "newcomm");
    CHECK_ERR(MPI_Comm_dup(MPI_COMM_NULL, &e), MPI_ERR_COMM, "communicator");
    CHECK_ERR(MPI_Comm_dup((MPI_Comm)0x84000123, &e), MPI_ERR_COMM, "communicator");
    MPI_Comm_free(&d);
}

static void splits(void)
{
    MPI_Comm h = MPI_COMM_NULL, s = MPI_COMM_NULL;
    MPI_Errhandler eh;
    int n = -1, r = -1, expect;

    /* Even and odd ranks, each half ordered by decreasing world rank. */
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &h) == MPI_SUCCESS && h != MPI_COMM_NULL,
          "MPI_Comm_split by parity");
    MPI_Comm_size(h, &n);
    MPI_Comm_rank(h, &r);
    expect = (size - 1 - rank) / 2;
    CHECK(n == (size + 1 - rank % 2) / 2 && r == expect, "split: size %d, rank %d (expected %d)", n, r, expect);
    ring(h, "split");
    CHECK(MPI_Comm_get_errhandler(h, &eh) == MPI_SUCCESS && eh == MPI_ERRORS_RETURN,
          "the split communicator inherits the handler");
    MPI_Errhandler_free(&eh);
    MPI_Comm_free(&h);

    /* The last rank opts out. */
    h = MPI_COMM_WORLD;
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank == size - 1 ? MPI_UNDEFINED : 0, 0, &h) == MPI_SUCCESS,
          "MPI_Comm_split with MPI_UNDEFINED");
    if (rank == size - 1) {
        CHECK(h == MPI_COMM_NULL, "MPI_UNDEFINED gets MPI_COMM_NULL");
    } else {
        MPI_Comm_size(h, &n);
        CHECK(n == size - 1, "the others: size %d", n);
        ring(h, "split without the last rank");
        MPI_Comm_free(&h);
    }

    /* A negative color at rank 1 only: an error there, the others go on. */
    h = MPI_COMM_WORLD;
    if (!on_madmpi()) {
        /* MPICH: -5 is a color like any other. */
    } else if (rank == 1) {
        CHECK_ERR(MPI_Comm_split(MPI_COMM_WORLD, -5, 0, &h), MPI_ERR_ARG, "color");
        CHECK(h == MPI_COMM_NULL, "a failed split gives MPI_COMM_NULL");
    } else {
        CHECK(MPI_Comm_split(MPI_COMM_WORLD, 3, rank, &h) == MPI_SUCCESS && h != MPI_COMM_NULL,
              "MPI_Comm_split where another process gave a negative color");
        MPI_Comm_size(h, &n);
        CHECK(n == size - 1, "... without that process: size %d", n);
        ring(h, "split without rank 1");
        MPI_Comm_free(&h);
    }
    CHECK_ERR(MPI_Comm_split(MPI_COMM_WORLD, 0, 0, NULL), MPI_ERR_ARG, "newcomm");
    CHECK_ERR(MPI_Comm_split(MPI_COMM_NULL, 0, 0, &h), MPI_ERR_COMM, "communicator");

    /* One node: everybody shares memory. */
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, -rank, MPI_INFO_NULL, &s) == MPI_SUCCESS,
          "MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)");
    MPI_Comm_size(s, &n);
    MPI_Comm_rank(s, &r);
    CHECK(n == size && r == size - 1 - rank, "shared: size %d, rank %d (ordered by key)", n, r);
    ring(s, "split_type shared");
    MPI_Comm_free(&s);
    s = MPI_COMM_WORLD;
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, rank == 0 ? MPI_UNDEFINED : MPI_COMM_TYPE_SHARED, 0,
                              MPI_INFO_NULL, &s) == MPI_SUCCESS,
          "MPI_Comm_split_type with MPI_UNDEFINED at rank 0");
    if (rank == 0) {
        CHECK(s == MPI_COMM_NULL, "MPI_UNDEFINED gets MPI_COMM_NULL");
    } else {
        MPI_Comm_size(s, &n);
        CHECK(n == size - 1, "the others share a node: size %d", n);
        MPI_Comm_free(&s);
    }
    s = MPI_COMM_WORLD;
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_GUIDED, 0, MPI_INFO_NULL, &s) == MPI_SUCCESS &&
              s == MPI_COMM_NULL,
          "MPI_COMM_TYPE_HW_GUIDED without info: MPI_COMM_NULL (as in MPICH)");
    s = MPI_COMM_WORLD;
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_HW_UNGUIDED, 0, MPI_INFO_NULL, &s) == MPI_SUCCESS &&
              s == MPI_COMM_NULL,
          "MPI_COMM_TYPE_HW_UNGUIDED: MPI_COMM_NULL (as in MPICH)");
    CHECK_ERR(MPI_Comm_split_type(MPI_COMM_WORLD, 99, 0, MPI_INFO_NULL, &s), MPI_ERR_ARG, "split type");
    CHECK_ERR(MPI_Comm_split_type(MPI_COMM_WORLD, -3, 0, MPI_INFO_NULL, &s), MPI_ERR_ARG, "split type");
    CHECK_ERR(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, NULL), MPI_ERR_ARG,
              "newcomm");
    if (rank == 2 && on_madmpi()) {
        CHECK_ERR(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, (MPI_Info)0x9c000005, &s),
                  MPI_ERR_INFO, "info");
    } else {
        CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_ENV, &s) == MPI_SUCCESS,
              "MPI_Comm_split_type where another process gave a bad info");
        MPI_Comm_free(&s);
    }
}

static void creation_from_groups(void)
{
    MPI_Group world_group, pair;
    MPI_Comm c = MPI_COMM_WORLD, half;
    int picks[2] = {3, 1}, n = -1, r = -1;

    CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world_group) == MPI_SUCCESS, "MPI_Comm_group(WORLD)");
    CHECK(MPI_Group_size(world_group, &n) == MPI_SUCCESS && n == size && MPI_Group_rank(world_group, &r) == MPI_SUCCESS &&
              r == rank,
          "the world group: size %d, rank %d", n, r);
    MPI_Group_incl(world_group, 2, picks, &pair);
    CHECK(MPI_Comm_create(MPI_COMM_WORLD, pair, &c) == MPI_SUCCESS, "MPI_Comm_create from {3, 1}");
    if (rank == 3 || rank == 1) {
        MPI_Comm_rank(c, &r);
        MPI_Comm_size(c, &n);
        CHECK(c != MPI_COMM_NULL && n == 2 && r == (rank == 3 ? 0 : 1), "member: rank %d of %d", r, n);
        ring(c, "created");
        MPI_Comm_free(&c);
    } else {
        CHECK(c == MPI_COMM_NULL, "not a member: MPI_COMM_NULL");
    }
    c = MPI_COMM_WORLD;
    CHECK(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &c) == MPI_SUCCESS && c == MPI_COMM_NULL,
          "MPI_Comm_create(MPI_GROUP_EMPTY): MPI_COMM_NULL");
    CHECK_ERR(MPI_Comm_create(MPI_COMM_WORLD, MPI_GROUP_NULL, &c), MPI_ERR_GROUP, "group");
    CHECK_ERR(MPI_Comm_create(MPI_COMM_WORLD, pair, NULL), MPI_ERR_ARG, "newcomm");
    /* A group that is not a subgroup of the communicator's: an error at every process. */
    MPI_Comm_split(MPI_COMM_WORLD, rank < size / 2, 0, &half);
    CHECK_ERR(MPI_Comm_create(half, world_group, &c), MPI_ERR_GROUP, "not in the communicator");
    MPI_Comm_free(&half);
    MPI_Group_free(&pair);
    MPI_Group_free(&world_group);
}

static void names(void)
{
    char name[MPI_MAX_OBJECT_NAME], longname[300];
    int len = -1;
    MPI_Comm d;

    CHECK(MPI_Comm_get_name(MPI_COMM_WORLD, name, &len) == MPI_SUCCESS && strcmp(name, "MPI_COMM_WORLD") == 0 &&
              len == 14,
          "MPI_COMM_WORLD is named so");
    CHECK(MPI_Comm_get_name(MPI_COMM_SELF, name, &len) == MPI_SUCCESS && strcmp(name, "MPI_COMM_SELF") == 0,
          "MPI_COMM_SELF is named so");
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    CHECK(MPI_Comm_get_name(d, name, &len) == MPI_SUCCESS && name[0] == 0 && len == 0,
          "a new communicator has an empty name (as in MPICH)");
    CHECK(MPI_Comm_set_name(d, "solver comm") == MPI_SUCCESS && MPI_Comm_get_name(d, name, &len) == MPI_SUCCESS &&
              strcmp(name, "solver comm") == 0 && len == 11,
          "MPI_Comm_set_name / get_name: \"%s\"", name);
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    CHECK(MPI_Comm_set_name(d, longname) == MPI_SUCCESS && MPI_Comm_get_name(d, name, &len) == MPI_SUCCESS &&
              len == MPI_MAX_OBJECT_NAME - 1 && (int)strlen(name) == len,
          "a long name is cut to MPI_MAX_OBJECT_NAME - 1 bytes (as in MPICH)");
    CHECK(MPI_Comm_set_name(MPI_COMM_WORLD, "everybody") == MPI_SUCCESS &&
              MPI_Comm_get_name(MPI_COMM_WORLD, name, &len) == MPI_SUCCESS && strcmp(name, "everybody") == 0,
          "MPI_COMM_WORLD can be renamed");
    MPI_Comm_set_name(MPI_COMM_WORLD, "MPI_COMM_WORLD");
    CHECK_ERR(MPI_Comm_set_name(d, NULL), MPI_ERR_ARG, "name");
    CHECK_ERR(MPI_Comm_get_name(d, NULL, &len), MPI_ERR_ARG, "comm_name");
    CHECK_ERR(MPI_Comm_get_name(d, name, NULL), MPI_ERR_ARG, "length");
    CHECK_ERR(MPI_Comm_get_name(MPI_COMM_NULL, name, &len), MPI_ERR_COMM, "communicator");
    MPI_Comm_free(&d);
}

static void freeing(void)
{
    MPI_Comm c = MPI_COMM_WORLD, d, stale;
    MPI_Request req;
    int x = -1, y = 77, res;

    CHECK_ERR(MPI_Comm_free(&c), MPI_ERR_COMM, "MPI_COMM_WORLD");
    CHECK(c == MPI_COMM_WORLD, "MPI_COMM_WORLD is still there");
    c = MPI_COMM_SELF;
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN); /* the error is raised on SELF */
    CHECK_ERR(MPI_Comm_free(&c), MPI_ERR_COMM, "MPI_COMM_SELF");
    c = MPI_COMM_NULL;
    CHECK_ERR(MPI_Comm_free(&c), MPI_ERR_COMM, "MPI_COMM_NULL");
    CHECK_ERR(MPI_Comm_free(NULL), MPI_ERR_ARG, "comm");
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    stale = d;
    MPI_Comm_free(&d);
    CHECK_ERR(MPI_Comm_free(&stale), MPI_ERR_COMM, "communicator");
    CHECK_ERR(MPI_Comm_compare(MPI_COMM_WORLD, stale, &res), MPI_ERR_COMM, "communicator");
    CHECK_ERR(MPI_Comm_compare(MPI_COMM_WORLD, MPI_COMM_SELF, NULL), MPI_ERR_ARG, "result");

    /* A receive posted on a communicator freed before the message comes still completes. */
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    if (rank == 0) {
        MPI_Irecv(&x, 1, MPI_INT, 1, 0, d, &req);
        CHECK(MPI_Comm_free(&d) == MPI_SUCCESS, "MPI_Comm_free with a receive pending");
        MPI_Send(&y, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
        CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS && x == 77,
              "the pending receive completes on the freed communicator");
    } else if (rank == 1) {
        MPI_Recv(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&y, 1, MPI_INT, 0, 0, d);
        MPI_Comm_free(&d);
    } else {
        MPI_Comm_free(&d);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check_rank = rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 4, "run with 4 processes (%d)", size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    duplicates();
    splits();
    creation_from_groups();
    names();
    freeing();
    MPI_Finalize();
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
