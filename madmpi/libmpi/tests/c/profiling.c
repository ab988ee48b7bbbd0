/* The profiling interface: this program interposes MPI_Send, MPI_Isend and MPI_Wait (as a tool
 * would), counts the calls and forwards them to PMPI_Send, PMPI_Isend and PMPI_Wait. The
 * library must route the program's calls to these definitions and never call its own MPI_
 * symbols internally (MPI_Sendrecv must not show up as an MPI_Send). Run with 2 processes. */
#include "check.h"

static int sends, isends, waits;

int MPI_Send(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm)
{
    sends++;
    return PMPI_Send(buf, count, datatype, dest, tag, comm);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype datatype, int dest, int tag, MPI_Comm comm,
              MPI_Request *request)
{
    isends++;
    return PMPI_Isend(buf, count, datatype, dest, tag, comm, request);
}

int MPI_Wait(MPI_Request *request, MPI_Status *status)
{
    waits++;
    return PMPI_Wait(request, status);
}

int main(int argc, char **argv)
{
    int rank, peer, x = 0, y = 0, i;
    MPI_Request r;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check_rank = rank;
    peer = 1 - rank;
    for (i = 0; i < 3; i++) {
        x = 10 * rank + i;
        if (rank == 0) {
            CHECK(MPI_Send(&x, 1, MPI_INT, peer, i, MPI_COMM_WORLD) == MPI_SUCCESS, "interposed MPI_Send %d", i);
            CHECK(MPI_Recv(&y, 1, MPI_INT, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS && y == 10 + i,
                  "reply %d", i);
        } else {
            CHECK(MPI_Recv(&y, 1, MPI_INT, peer, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS && y == i,
                  "message %d", i);
            CHECK(MPI_Isend(&x, 1, MPI_INT, peer, i, MPI_COMM_WORLD, &r) == MPI_SUCCESS &&
                      MPI_Wait(&r, MPI_STATUS_IGNORE) == MPI_SUCCESS,
                  "interposed MPI_Isend and MPI_Wait %d", i);
        }
    }
    CHECK(MPI_Sendrecv(&x, 1, MPI_INT, peer, 9, &y, 1, MPI_INT, peer, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE) ==
              MPI_SUCCESS,
          "MPI_Sendrecv");
    CHECK(PMPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "a direct PMPI_Send");
    if (rank == 0)
        CHECK(sends == 3 && isends == 0 && waits == 0, "the interposed functions saw exactly the program's calls: "
              "%d MPI_Send, %d MPI_Isend, %d MPI_Wait", sends, isends, waits);
    else
        CHECK(sends == 0 && isends == 3 && waits == 3, "the interposed functions saw exactly the program's calls: "
              "%d MPI_Send, %d MPI_Isend, %d MPI_Wait", sends, isends, waits);
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
