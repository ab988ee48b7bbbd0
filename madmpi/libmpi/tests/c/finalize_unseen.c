/* MPI_Finalize after a death nobody saw, at 4 processes under a launcher that lets the others go
 * on (-disable-auto-cleanup): rank 2 exits with status 3 right after MPI_Init, the others never
 * talk to it and finalize. Hydra's fence would wait for the dead forever: the survivors must
 * learn of the death from the launcher (Hydra's SIGUSR1 notice, which must not kill them either)
 * and finalize among themselves, MPI_Finalize returning MPIX_ERR_PROC_FAILED; madrun completes
 * its fence without the dead, and MPI_Finalize may then return MPI_SUCCESS. */
#include "check.h"
#include <unistd.h>

int main(int argc, char **argv)
{
    int rank = check_init(&argc, &argv, 4);
    if (rank == 2) {
        fflush(stdout);
        _exit(3);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Finalize();
    CHECK(rc == MPI_SUCCESS || class_of(rc) == MPIX_ERR_PROC_FAILED,
          "MPI_Finalize returns MPI_SUCCESS or MPIX_ERR_PROC_FAILED (class %d)", class_of(rc));
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
