/* MPI_Finalize after a peer died, at 2 processes under a launcher that lets the survivor go on
 * (madrun -disable-auto-cleanup): rank 1 kills itself (SIGKILL) once it received rank 0's
 * message; rank 0 waits a second (its link to rank 1 breaks meanwhile) and finalizes. MPI_Finalize
 * must not wait for the dead: with the argument "return" (MPI_COMM_WORLD's handler is
 * MPI_ERRORS_RETURN) it returns an error of class MPIX_ERR_PROC_FAILED and rank 0 says OK; with
 * "fatal" (the default handler, MPI_ERRORS_ARE_FATAL) the job ends with a report naming
 * MPI_Finalize, and rank 0 never prints its last line. */
#include "check.h"
#include <signal.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    CHECK(size == 2, "2 processes");
    int fatal = argc > 1 && strcmp(argv[1], "fatal") == 0;
    if (!fatal)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = 42;
    if (rank == 1) {
        CHECK(MPI_Recv(&x, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS && x == 42,
              "received rank 0's message");
        fflush(stdout);
        raise(SIGKILL);
    }
    CHECK(MPI_Send(&x, 1, MPI_INT, 1, 1, MPI_COMM_WORLD) == MPI_SUCCESS, "sent to rank 1");
    sleep(1);
    int rc = MPI_Finalize();
    CHECK(!fatal, "MPI_Finalize returns, under MPI_ERRORS_RETURN only (rc %d)", rc);
    /* After MPI_Finalize, MPI_Error_class is one of the calls still allowed. */
    CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED, "MPI_Finalize fails with MPIX_ERR_PROC_FAILED (class %d)",
          class_of(rc));
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
