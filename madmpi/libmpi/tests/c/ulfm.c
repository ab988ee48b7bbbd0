/* ULFM as MPICH exports it, at 4 processes: rank 2 kills itself (SIGKILL) after a first barrier;
 * the survivors' next barrier fails (MPIX_ERR_PROC_FAILED where it needed rank 2, or
 * MPIX_ERR_REVOKED once a survivor revoked the communicator: a survivor blocked in the barrier
 * learns of the revocation at once), every survivor revokes MPI_COMM_WORLD (later operations
 * on it fail with MPIX_ERR_REVOKED), shrinks it to the 3 survivors, agrees on a flag before and
 * after acknowledging the failure (MPIX_ERR_PROC_FAILED before, the AND of the flags both
 * times), reads the acknowledged group, and finishes an allreduce and a ring on the shrunken
 * communicator. Run with 4 processes under a launcher that lets the others go on
 * (madrun -disable-auto-cleanup, mpiexec.hydra -disable-auto-cleanup). With the argument "exit"
 * the victim exits with status 3 instead of killing itself: Hydra 4.0.2 ends the whole job when
 * a process dies of a signal, -disable-auto-cleanup or not.
 *
 * MPICH 4.0.2's own library (Debian's build) does not pass: its survivors hang in the barrier
 * after the failure (checked under mpiexec.hydra -disable-auto-cleanup with "exit"). */
#include "ulfm.h"

#define VICTIM 2

int main(int argc, char **argv)
{
    int rank = check_init(&argc, &argv, 4);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Barrier(MPI_COMM_WORLD) == MPI_SUCCESS, "a first barrier, before the failure");
    /* Dying during a survivor's barrier would fail it, as ULFM allows but this test does not
     * expect. */
    all_ready_for(VICTIM);
    if (rank == VICTIM)
        die(argc, argv);

    int rc = MPI_Barrier(MPI_COMM_WORLD);
    int cls = class_of(rc);
    CHECK(rc != MPI_SUCCESS && (cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_REVOKED),
          "the barrier after the failure fails (class %d)", cls);
    CHECK(MPIX_Comm_revoke(MPI_COMM_WORLD) == MPI_SUCCESS, "MPIX_Comm_revoke");
    int x = 0;
    CHECK_ERR(MPI_Send(&x, 1, MPI_INT, (rank + 1) % 2, 0, MPI_COMM_WORLD), MPIX_ERR_REVOKED, "revoked");

    MPI_Comm shrunk;
    CHECK(MPIX_Comm_shrink(MPI_COMM_WORLD, &shrunk) == MPI_SUCCESS, "MPIX_Comm_shrink");
    int srank = -1, ssize = 0;
    MPI_Comm_rank(shrunk, &srank);
    MPI_Comm_size(shrunk, &ssize);
    CHECK(ssize == 3 && srank == (rank < VICTIM ? rank : rank - 1), "shrunk to the 3 survivors, in order (%d of %d)",
          srank, ssize);
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);

    /* Agreement on the revoked world: the failure is not acknowledged yet. */
    int flag = rank == 0 ? 0x6 : 0x7;
    rc = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    CHECK(class_of(rc) == MPIX_ERR_PROC_FAILED && flag == 0x6,
          "agree before acknowledging reports the failure, flag %#x", flag);
    CHECK(MPIX_Comm_failure_ack(MPI_COMM_WORLD) == MPI_SUCCESS, "MPIX_Comm_failure_ack");
    MPI_Group failed;
    CHECK(MPIX_Comm_failure_get_acked(MPI_COMM_WORLD, &failed) == MPI_SUCCESS, "MPIX_Comm_failure_get_acked");
    int nfailed = 0, victim_world = VICTIM, victim_in_failed = -1;
    MPI_Group_size(failed, &nfailed);
    MPI_Group world_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_translate_ranks(world_group, 1, &victim_world, failed, &victim_in_failed);
    CHECK(nfailed == 1 && victim_in_failed == 0, "the acknowledged group is rank %d alone", VICTIM);
    MPI_Group_free(&failed);
    MPI_Group_free(&world_group);
    flag = rank == 3 ? 0x3 : 0x7;
    rc = MPIX_Comm_agree(MPI_COMM_WORLD, &flag);
    CHECK(rc == MPI_SUCCESS && flag == 0x3, "agree once acknowledged: flag %#x", flag);
    flag = 1 << srank | 0x10;
    CHECK(MPIX_Comm_agree(shrunk, &flag) == MPI_SUCCESS && flag == 0x10, "agree on the shrunken communicator");

    int sum = 0;
    CHECK(MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, shrunk) == MPI_SUCCESS && sum == 0 + 1 + 3,
          "allreduce on the shrunken communicator (%d)", sum);
    int next = (srank + 1) % ssize, prev = (srank + ssize - 1) % ssize, got = -1;
    CHECK(MPI_Sendrecv(&srank, 1, MPI_INT, next, 5, &got, 1, MPI_INT, prev, 5, shrunk, MPI_STATUS_IGNORE) ==
                  MPI_SUCCESS &&
              got == prev,
          "a ring on the shrunken communicator");
    MPI_Comm_free(&shrunk);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
