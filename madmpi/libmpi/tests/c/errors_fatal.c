/* The default error handler and MPI_Abort end the job. The mode, argv[1], says how:
 *   before-init  MPI_Send before MPI_Init: MPI_ERR_OTHER, fatal (status 1)
 *   bad-rank     rank 0 sends to a rank outside MPI_COMM_WORLD under MPI_ERRORS_ARE_FATAL:
 *                "MPI error in MPI_Send: MPI_ERR_RANK: ..." and status 1; rank 1 waits in a
 *                receive that never completes, so only the job's end can stop it
 *   abort        rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7) while rank 0 sleeps: status 7 (rank 0
 *                makes no MPI call meanwhile, which could fail on the loss of rank 1 first and
 *                make the job's status 1)
 *   call-errhandler  every rank calls MPI_Comm_call_errhandler(dup, MPI_ERR_TAG) on a duplicate
 *                of MPI_COMM_WORLD, which inherited MPI_ERRORS_ARE_FATAL: status 1 (all ranks end
 *                so by themselves: Hydra then reports 1, not the signal it may kill a rank with)
 * Each mode prints "REACHED" where the program must never get. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    int rank, x = 0;

    if (strcmp(mode, "before-init") == 0) {
        MPI_Send(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
        printf("REACHED after MPI_Send before MPI_Init\n");
        return 0;
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (strcmp(mode, "bad-rank") == 0) {
        if (rank == 0) {
            printf("rank 0 sends to rank 99\n");
            fflush(stdout);
            MPI_Send(&x, 1, MPI_INT, 99, 0, MPI_COMM_WORLD);
            printf("REACHED after a fatal MPI_Send\n");
        } else {
            MPI_Recv(&x, 1, MPI_INT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            printf("REACHED after a receive nobody sends to\n");
        }
    } else if (strcmp(mode, "abort") == 0) {
        if (rank == 1) {
            MPI_Abort(MPI_COMM_WORLD, 7);
            printf("REACHED after MPI_Abort\n");
        } else {
            sleep(60);
            printf("REACHED after a minute of waiting for the job's end\n");
        }
    } else if (strcmp(mode, "call-errhandler") == 0) {
        MPI_Comm d;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        MPI_Comm_call_errhandler(d, MPI_ERR_TAG);
        printf("REACHED after calling a fatal handler\n");
    } else {
        printf("REACHED: unknown mode '%s'\n", mode);
    }
    MPI_Finalize();
    return 0;
}
