/* ULFM: operations that wait for an answer are interrupted by a revocation, at 3 processes.
 * Rank 0 starts a rendezvous send (4 MiB, above any eager limit) to rank 1, and rank 1 a
 * synchronous send to rank 0, that nobody receives, plus a large receive nobody sends to.
 * Rank 2 then kills itself; rank 0 revokes the world once its barrier fails. Rank 1 drops the
 * unmatched rendezvous (its session revoked) and tells rank 0, whose send completes with
 * MPIX_ERR_REVOKED instead of waiting for an answer that will never come; likewise rank 1's
 * synchronous send; rank 1's posted receive completes with MPIX_ERR_REVOKED. The survivors
 * then shrink the world and finish an allreduce on it. */
#include "ulfm.h"

#define VICTIM 2
#define BIG (4 << 20)

int main(int argc, char **argv)
{
    int rank = check_init(&argc, &argv, 3);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    char *big = calloc(BIG, 1);
    CHECK(big != NULL, "memory");
    int small = 7;
    MPI_Request send = MPI_REQUEST_NULL, recv = MPI_REQUEST_NULL;
    if (rank == 0)
        MPI_Isend(big, BIG, MPI_CHAR, 1, 1, MPI_COMM_WORLD, &send);
    if (rank == 1) {
        MPI_Issend(&small, 1, MPI_INT, 0, 3, MPI_COMM_WORLD, &send);
        MPI_Irecv(big, BIG, MPI_CHAR, 0, 2, MPI_COMM_WORLD, &recv);
    }
    all_ready_for(VICTIM);
    if (rank == VICTIM)
        die(argc, argv);

    if (rank == 0) {
        int rc = MPI_Barrier(MPI_COMM_WORLD);
        CHECK(rc != MPI_SUCCESS, "the barrier after the failure fails (class %d)", class_of(rc));
        CHECK(MPIX_Comm_revoke(MPI_COMM_WORLD) == MPI_SUCCESS, "MPIX_Comm_revoke");
        CHECK_ERR(MPI_Wait(&send, MPI_STATUS_IGNORE), MPIX_ERR_REVOKED, "revoked");
    } else {
        CHECK_ERR(MPI_Wait(&recv, MPI_STATUS_IGNORE), MPIX_ERR_REVOKED, "revoked");
        CHECK_ERR(MPI_Wait(&send, MPI_STATUS_IGNORE), MPIX_ERR_REVOKED, "revoked");
    }
    MPI_Comm shrunk;
    CHECK(MPIX_Comm_shrink(MPI_COMM_WORLD, &shrunk) == MPI_SUCCESS, "MPIX_Comm_shrink");
    int sum = 0;
    CHECK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, shrunk) == MPI_SUCCESS && sum == 1,
          "allreduce on the shrunken communicator (%d)", sum);
    MPI_Comm_free(&shrunk);
    free(big);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
