/* ULFM's rule for receives from MPI_ANY_SOURCE, at 3 processes: rank 2 kills itself once the
 * others have reached it (so their links to it exist and break when it dies).
 * Rank 0 waits on a receive from any source posted before the death: MPI_Wait returns
 * MPIX_ERR_PROC_FAILED_PENDING once the failure is detected (woken by it, not by a message) and
 * the request stays active; MPI_Test says the same with flag 0; a pending receive can be
 * cancelled; after MPIX_Comm_failure_ack the first one waits normally and takes rank 1's later
 * message. Rank 1's blocking MPI_Recv from any source (nobody sends it) returns
 * MPIX_ERR_PROC_FAILED; once acknowledged, a receive from any source is plainly incomplete. */
#include "ulfm.h"

#define VICTIM 2

int main(int argc, char **argv)
{
    int rank = check_init(&argc, &argv, 3);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int ready = 1, value = -1, flag = -1;
    MPI_Request first = MPI_REQUEST_NULL, second = MPI_REQUEST_NULL;
    MPI_Status st;
    if (rank == 0) {
        MPI_Irecv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &first);
        MPI_Irecv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 10, MPI_COMM_WORLD, &second);
    }
    all_ready_for(VICTIM);
    if (rank == VICTIM)
        die(argc, argv);

    if (rank == 0) {
        int rc = MPI_Wait(&first, &st);
        CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED_PENDING && first != MPI_REQUEST_NULL,
              "MPI_Wait on a receive from any source: MPIX_ERR_PROC_FAILED_PENDING, still active (class %d)",
              class_of(rc));
        rc = MPI_Test(&second, &flag, &st);
        CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED_PENDING && flag == 0 && second != MPI_REQUEST_NULL,
              "MPI_Test: MPIX_ERR_PROC_FAILED_PENDING, flag %d", flag);
        CHECK(MPI_Cancel(&second) == MPI_SUCCESS && MPI_Wait(&second, &st) == MPI_SUCCESS, "a pending receive is cancelled");
        MPI_Test_cancelled(&st, &flag);
        CHECK(flag == 1 && second == MPI_REQUEST_NULL, "and reported cancelled");
        rc = MPI_Wait(&first, &st);
        CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED_PENDING, "still pending until acknowledged");
        CHECK(MPIX_Comm_failure_ack(MPI_COMM_WORLD) == MPI_SUCCESS, "MPIX_Comm_failure_ack");
        MPI_Send(&ready, 1, MPI_INT, 1, 8, MPI_COMM_WORLD);
        rc = MPI_Wait(&first, &st);
        CHECK(rc == MPI_SUCCESS && first == MPI_REQUEST_NULL && st.MPI_SOURCE == 1 && value == 41,
              "once acknowledged, the same receive takes rank 1's message (%d from %d)", value, st.MPI_SOURCE);
    } else {
        int rc = MPI_Recv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &st);
        CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED, "a blocking MPI_Recv from any source: MPIX_ERR_PROC_FAILED (class %d)",
              class_of(rc));
        CHECK(MPIX_Comm_failure_ack(MPI_COMM_WORLD) == MPI_SUCCESS, "MPIX_Comm_failure_ack");
        rc = MPI_Irecv(&value, 1, MPI_INT, MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &second);
        CHECK(rc == MPI_SUCCESS && MPI_Test(&second, &flag, &st) == MPI_SUCCESS && flag == 0,
              "once acknowledged, a receive from any source is just incomplete");
        MPI_Cancel(&second);
        MPI_Wait(&second, MPI_STATUS_IGNORE);
        MPI_Recv(&ready, 1, MPI_INT, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        value = 41;
        MPI_Send(&value, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
    }
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
