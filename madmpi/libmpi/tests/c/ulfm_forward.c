/* ULFM revocation notices are forwarded, at 4 processes: rank 3 revokes MPI_COMM_WORLD but, by
 * the library's test hook MADMPI_TEST_REVOKER_DIES_AFTER=1 (set by the test), sends its notice to
 * rank 0 only and then kills itself. Ranks 1 and 2 learn of the revocation from rank 0, which
 * forwards the notice: every survivor's blocked receive (from another survivor, that never
 * sends) fails with MPIX_ERR_REVOKED; they then shrink the world to the 3 of them and finish an
 * allreduce on it. */
#include "ulfm.h"

#define REVOKER 3

int main(int argc, char **argv)
{
    int rank = check_init(&argc, &argv, 4);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS, "a first barrier");
    /* The revoker revokes once every survivor is out of the barrier (told by a message): a
     * notice arriving during a survivor's barrier would fail it. */
    all_ready_for(REVOKER);
    if (rank == REVOKER) {
        fflush(stdout);
        MPIX_Comm_revoke(MPI_COMM_WORLD);
        CHECK(0, "the revoker is still alive (is MADMPI_TEST_REVOKER_DIES_AFTER set?)");
    }
    int x = 0;
    CHECK_ERR(MPI_Recv(&x, 1, MPI_INT, (rank + 1) % REVOKER, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE), MPIX_ERR_REVOKED,
              "revoked");
    CHECK_ERR(MPI_Send(&x, 1, MPI_INT, (rank + 1) % REVOKER, 6, MPI_COMM_WORLD), MPIX_ERR_REVOKED, "revoked");
    MPI_Comm shrunk;
    CHECK(MPIX_Comm_shrink(MPI_COMM_WORLD, &shrunk) == MPI_SUCCESS, "MPIX_Comm_shrink");
    int ssize = 0, sum = 0;
    MPI_Comm_size(shrunk, &ssize);
    CHECK(ssize == 3, "shrunk to the 3 survivors");
    CHECK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, shrunk) == MPI_SUCCESS && sum == 0 + 1 + 2,
          "allreduce on the shrunken communicator (%d)", sum);
    MPI_Comm_free(&shrunk);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
