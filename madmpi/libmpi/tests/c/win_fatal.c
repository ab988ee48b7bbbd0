/* A window's error handler is MPI_ERRORS_ARE_FATAL until set, whatever its communicator's:
 * with MPI_COMM_WORLD under MPI_ERRORS_RETURN, attaching memory to a window that is not dynamic
 * ends the job with "MPI error in MPI_Win_attach: MPI_ERR_RMA_FLAVOR: ..." and status 1.
 * "REACHED" is printed where the program must never get. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int buf[2];
    MPI_Win win;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Win_attach(win, buf, sizeof buf);
    printf("REACHED after MPI_Win_attach\n");
    MPI_Win_free(&win);
    MPI_Finalize();
    return 0;
}
