/* ULFM's rule for receives from MPI_ANY_SOURCE in the calls on several requests, at 3
 * processes: rank 2 kills itself once the others have reached it. Rank 0 has posted a receive
 * from any source (`any`, tag 7), a receive from rank 1 (`one`, tag 6: sent only at the end) and
 * a send to rank 1 that completed. MPI_Waitall over the three is woken by the failure: it
 * returns MPI_ERR_IN_STATUS, reports the send (MPI_SUCCESS, handle freed) and leaves the two
 * receives active, `any`'s status MPIX_ERR_PROC_FAILED_PENDING and `one`'s MPI_ERR_PENDING.
 * MPI_Waitany and MPI_Testany return MPIX_ERR_PROC_FAILED_PENDING with `any`'s index;
 * MPI_Waitsome and MPI_Testsome list `any` with that error in its status; MPI_Testall says
 * flag 0 with both statuses as MPI_Waitall's. After MPIX_Comm_failure_ack, MPI_Waitall
 * completes both receives with rank 1's later messages. */
#include "ulfm.h"

#define VICTIM 2

/* The MPI_ERROR classes of a pair of statuses. */
#define CLASSES(st) class_of((st)[0].MPI_ERROR), class_of((st)[1].MPI_ERROR)

int main(int argc, char **argv)
{
    int rank = check_init(&argc, &argv, 3);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int ready = 1, from_any = -1, from_one = -1, sent = 5, flag = -1, index = -1, outcount = -1;
    int indices[3];
    MPI_Request reqs[3] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    MPI_Status st[3];
    if (rank == 0) {
        MPI_Irecv(&from_one, 1, MPI_INT, 1, 6, MPI_COMM_WORLD, &reqs[0]);
        MPI_Irecv(&from_any, 1, MPI_INT, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &reqs[1]);
        MPI_Isend(&sent, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &reqs[2]);
    } else if (rank == 1) {
        /* Received before the victim can die: rank 0's send is complete by then. */
        MPI_Recv(&sent, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    all_ready_for(VICTIM);
    if (rank == VICTIM)
        die(argc, argv);

    if (rank == 0) {
        MPI_Request one = reqs[0], any = reqs[1];
        int rc = MPI_Waitall(3, reqs, st);
        CHECK(class_of(rc) == MPI_ERR_IN_STATUS && reqs[0] == one && reqs[1] == any && reqs[2] == MPI_REQUEST_NULL,
              "MPI_Waitall: MPI_ERR_IN_STATUS, the send reported, both receives still active (class %d)", class_of(rc));
        CHECK(class_of(st[0].MPI_ERROR) == MPI_ERR_PENDING && class_of(st[1].MPI_ERROR) == MPIX_ERR_PROC_FAILED_PENDING
                  && st[2].MPI_ERROR == MPI_SUCCESS,
              "statuses: MPI_ERR_PENDING, MPIX_ERR_PROC_FAILED_PENDING, MPI_SUCCESS (%d %d %d)", CLASSES(st),
              st[2].MPI_ERROR);

        rc = MPI_Waitany(2, reqs, &index, &st[0]);
        CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED_PENDING && index == 1 && reqs[0] == one && reqs[1] == any,
              "MPI_Waitany: MPIX_ERR_PROC_FAILED_PENDING at the index of the receive from any source (class %d, index %d)",
              class_of(rc), index);
        rc = MPI_Testany(2, reqs, &index, &flag, &st[0]);
        CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED_PENDING && index == 1 && flag == 1 && reqs[1] == any,
              "MPI_Testany: the same, flag 1 (class %d, index %d, flag %d)", class_of(rc), index, flag);

        rc = MPI_Waitsome(2, reqs, &outcount, indices, st);
        CHECK(class_of(rc) == MPI_ERR_IN_STATUS && outcount == 1 && indices[0] == 1
                  && class_of(st[0].MPI_ERROR) == MPIX_ERR_PROC_FAILED_PENDING && reqs[0] == one && reqs[1] == any,
              "MPI_Waitsome: lists the receive from any source with MPIX_ERR_PROC_FAILED_PENDING (class %d, %d of them)",
              class_of(rc), outcount);
        rc = MPI_Testsome(2, reqs, &outcount, indices, st);
        CHECK(class_of(rc) == MPI_ERR_IN_STATUS && outcount == 1 && indices[0] == 1
                  && class_of(st[0].MPI_ERROR) == MPIX_ERR_PROC_FAILED_PENDING && reqs[1] == any,
              "MPI_Testsome: the same (class %d, %d of them)", class_of(rc), outcount);

        rc = MPI_Testall(2, reqs, &flag, st);
        CHECK(class_of(rc) == MPI_ERR_IN_STATUS && flag == 0 && class_of(st[0].MPI_ERROR) == MPI_ERR_PENDING
                  && class_of(st[1].MPI_ERROR) == MPIX_ERR_PROC_FAILED_PENDING && reqs[0] == one && reqs[1] == any,
              "MPI_Testall: flag 0, MPI_ERR_IN_STATUS, statuses as MPI_Waitall's (class %d, %d %d)", class_of(rc),
              CLASSES(st));

        CHECK(MPIX_Comm_failure_ack(MPI_COMM_WORLD) == MPI_SUCCESS, "MPIX_Comm_failure_ack");
        MPI_Send(&ready, 1, MPI_INT, 1, 8, MPI_COMM_WORLD);
        rc = MPI_Waitall(2, reqs, st);
        CHECK(rc == MPI_SUCCESS && reqs[0] == MPI_REQUEST_NULL && reqs[1] == MPI_REQUEST_NULL && from_one == 61
                  && from_any == 71 && st[1].MPI_SOURCE == 1,
              "once acknowledged, MPI_Waitall completes both receives with rank 1's messages (%d, %d from %d)",
              from_one, from_any, st[1].MPI_SOURCE);
    } else {
        CHECK(sent == 5, "rank 0's send arrived");
        MPI_Recv(&ready, 1, MPI_INT, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        from_one = 61;
        from_any = 71;
        MPI_Send(&from_one, 1, MPI_INT, 0, 6, MPI_COMM_WORLD);
        MPI_Send(&from_any, 1, MPI_INT, 0, 7, MPI_COMM_WORLD);
    }
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
