/* Collectives whose output blocks overlap: MPI calls it erroneous, yet MPICH and Open MPI run
 * such programs (a classic slip: MPI_Alltoallw displacements given in elements instead of
 * bytes), so MadMPI runs them too. On MadMPI the result is defined: blocks are copied out in
 * rank order, so where blocks overlap the higher rank's bytes win; on other libraries only
 * completion is checked. */
#include "check.h"

#define MAXN 16

/* What the receive buffer holds on MadMPI: each rank's 4-byte block copied at byte offset i in
 * rank order. */
static void expected(unsigned char *out, int n, int me)
{
    memset(out, 0xee, 4 * MAXN);
    for (int i = 0; i < n; i++) {
        int v = 100 * i + me;
        memcpy(out + i, &v, sizeof v);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int n, me;
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    check_rank = me;
    CHECK(n <= MAXN, "at most %d ranks", MAXN);

    int send[MAXN], scounts[MAXN], rcounts[MAXN], sdispls[MAXN], rdispls[MAXN];
    MPI_Datatype types[MAXN];
    for (int j = 0; j < n; j++) {
        send[j] = 100 * me + j;
        scounts[j] = rcounts[j] = 1;
        sdispls[j] = j * (int)sizeof(int); /* bytes, as MPI_Alltoallw wants */
        rdispls[j] = j;                    /* elements: the blocks overlap */
        types[j] = MPI_INT;
    }
    unsigned char recv[4 * MAXN], want[4 * MAXN];
    expected(want, n, me);

    for (int round = 0; round < 2; round++) {
        memset(recv, 0xee, sizeof recv);
        int rc;
        if (round == 0) {
            rc = MPI_Alltoallw(send, scounts, sdispls, types, recv, rcounts, rdispls, types,
                               MPI_COMM_WORLD);
        } else {
            MPI_Request r;
            rc = MPI_Ialltoallw(send, scounts, sdispls, types, recv, rcounts, rdispls, types,
                                MPI_COMM_WORLD, &r);
            if (rc == MPI_SUCCESS)
                rc = MPI_Wait(&r, MPI_STATUS_IGNORE);
        }
        CHECK(rc == MPI_SUCCESS, "%s with overlapping output blocks runs",
              round ? "MPI_Ialltoallw" : "MPI_Alltoallw");
        if (on_madmpi())
            CHECK(memcmp(recv, want, sizeof recv) == 0, "the higher ranks' bytes win where blocks overlap");
    }

    /* MPI_Alltoallv with displacements that make blocks overlap (in elements of 2 ints). */
    int vsend[2 * MAXN], vrecv[2 * MAXN + 1], vcounts[MAXN], vsd[MAXN], vrd[MAXN];
    for (int j = 0; j < n; j++) {
        vsend[2 * j] = 1000 * me + j;
        vsend[2 * j + 1] = -(1000 * me + j);
        vcounts[j] = 2;
        vsd[j] = 2 * j;
        vrd[j] = j; /* block j covers vrecv[j], vrecv[j + 1] */
    }
    for (int k = 0; k <= 2 * MAXN; k++)
        vrecv[k] = -1;
    int rc = MPI_Alltoallv(vsend, vcounts, vsd, MPI_INT, vrecv, vcounts, vrd, MPI_INT, MPI_COMM_WORLD);
    CHECK(rc == MPI_SUCCESS, "MPI_Alltoallv with overlapping output blocks runs");
    if (on_madmpi()) {
        for (int k = 0; k <= n; k++) {
            /* element k: written last by block min(k, n-1): its element k - i */
            int i = k < n ? k : n - 1;
            int v = (k - i == 0) ? 1000 * i + me : -(1000 * i + me);
            CHECK(vrecv[k] == v, "MPI_Alltoallv: element %d comes from rank %d", k, i);
        }
    }

    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
