/* A token goes around all ranks twice, each adding its rank; rank 0 prints the library version
 * and checks it is MadMPI's. Built with mpicc (ours or MPICH's) by tests/tests/mpicc.rs. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define ROUNDS 2

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(version, &len);
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    long token = 0, expected = 0;
    for (int round = 0; round < ROUNDS; round++) {
        if (rank == 0) {
            MPI_Send(&token, 1, MPI_LONG, next, round, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_LONG, prev, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&token, 1, MPI_LONG, prev, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token += rank;
            MPI_Send(&token, 1, MPI_LONG, next, round, MPI_COMM_WORLD);
        }
        expected += (long)size * (size - 1) / 2;
    }
    int ok = 1;
    if (rank == 0) {
        ok = token == expected && strncmp(version, "MadMPI ", 7) == 0;
        printf("library: %s\n", version);
        printf("ring of %d ranks: token %ld, expected %ld: %s\n", size, token, expected, ok ? "OK" : "FAIL");
    } else {
        printf("rank %d of %d passed the token on\n", rank, size);
    }
    MPI_Finalize();
    return ok ? 0 : 1;
}
