/* A session and the world model in one process (MPI 4.0 lets them coexist): a session opened
 * before MPI_Init, a communicator from its world pset used before, during and after the world
 * model, MPI_Finalize while the session stays open (its communicator still works), then
 * MPI_Session_finalize ends the runtime. Any number of processes; passes on MPICH's library
 * too. */
#include "check.h"

int main(int argc, char **argv)
{
    MPI_Session s;
    MPI_Group g;
    MPI_Comm c;
    CHECK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s) == MPI_SUCCESS, "MPI_Session_init");
    MPI_Group_from_session_pset(s, "mpi://WORLD", &g);
    CHECK(MPI_Comm_create_from_group(g, "org.pm2.sessions.world", MPI_INFO_NULL, MPI_ERRORS_RETURN, &c) ==
              MPI_SUCCESS, "a communicator from the session");
    int rank = -1, size = 0, sum = -1, flag = 0;
    MPI_Comm_rank(c, &rank);
    MPI_Comm_size(c, &size);
    check_rank = rank;
    const int want = size * (size - 1) / 2;
    CHECK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c) == MPI_SUCCESS && sum == want, "before MPI_Init");

    CHECK(MPI_Init(&argc, &argv) == MPI_SUCCESS, "MPI_Init with a session open");
    MPI_Initialized(&flag);
    int wrank = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &wrank);
    CHECK(flag && wrank == rank, "the world model runs (rank %d)", wrank);
    sum = -1;
    CHECK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS && sum == want,
          "allreduce on MPI_COMM_WORLD");
    sum = -1;
    CHECK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c) == MPI_SUCCESS && sum == want,
          "allreduce on the session's communicator meanwhile");
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize with the session open");
    MPI_Finalized(&flag);
    CHECK(flag, "the world model is finalized");

    sum = -1;
    CHECK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c) == MPI_SUCCESS && sum == want,
          "the session's communicator still works");
    MPI_Comm_free(&c);
    MPI_Group_free(&g);
    CHECK(MPI_Session_finalize(&s) == MPI_SUCCESS, "MPI_Session_finalize ends the runtime");
    CHECK(1, "all checks passed");
    return 0;
}
