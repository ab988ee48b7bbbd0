/* Shared windows between processes: every rank stores into its part, a barrier orders the
 * stores (MPI_Win_sync is a later step), every rank loads all the parts through
 * MPI_Win_shared_query; contiguous and noncontiguous layouts; MPI_PROC_NULL queries;
 * MPI_Win_allocate on one node; a shared window over MPI_COMM_SELF. */
#include "check.h"
#include <stdint.h>

static int rank, size;

static void exchange(MPI_Comm node, int noncontig)
{
    int me, n;
    MPI_Comm_rank(node, &me);
    MPI_Comm_size(node, &n);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", noncontig ? "true" : "false");
    /* Rank r exposes r + 1 int64s; rank 1 none, to test the empty part. */
    MPI_Aint count = me == 1 ? 0 : me + 1;
    int64_t *mine = NULL;
    MPI_Win win;
    CHECK(MPI_Win_allocate_shared(count * 8, 8, info, node, &mine, &win) == MPI_SUCCESS, "allocate_shared");
    MPI_Info_free(&info);
    for (MPI_Aint i = 0; i < count; i++)
        ((volatile int64_t *)mine)[i] = 1000 * me + i;
    __sync_synchronize();
    MPI_Barrier(node);
    __sync_synchronize();
    char *prev_end = NULL;
    for (int r = 0; r < n; r++) {
        MPI_Aint bytes;
        int unit;
        int64_t *part;
        MPI_Win_shared_query(win, r, &bytes, &unit, &part);
        MPI_Aint want = r == 1 ? 0 : r + 1;
        CHECK(bytes == want * 8 && unit == 8, "part of %d: %ld bytes", r, (long)bytes);
        int ok = 1;
        for (MPI_Aint i = 0; i < want; i++)
            ok &= ((volatile int64_t *)part)[i] == 1000 * r + i;
        CHECK(ok, "loaded what rank %d stored (noncontig %d)", r, noncontig);
        if (!noncontig && prev_end != NULL && bytes > 0)
            CHECK((char *)part == prev_end, "contiguous: part %d follows part %d", r, r - 1);
        if (bytes > 0 || prev_end == NULL)
            prev_end = (char *)part + bytes;
    }
    /* Everyone stores into the next rank's first element, then reads its own. */
    MPI_Barrier(node);
    int next = (me + 1) % n;
    if (next != 1) {
        MPI_Aint bytes;
        int unit;
        int64_t *part;
        MPI_Win_shared_query(win, next, &bytes, &unit, &part);
        ((volatile int64_t *)part)[0] = -me - 1;
    }
    __sync_synchronize();
    MPI_Barrier(node);
    __sync_synchronize();
    if (me != 1)
        CHECK(((volatile int64_t *)mine)[0] == -((me + n - 1) % n) - 1, "stored by my left neighbour");
    MPI_Aint bytes;
    int unit;
    int64_t *first;
    MPI_Win_shared_query(win, MPI_PROC_NULL, &bytes, &unit, &first);
    CHECK(bytes == 8, "MPI_PROC_NULL gives the first non-empty part (%ld bytes)", (long)bytes);
    MPI_Win_free(&win);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    exchange(node, 0);
    exchange(node, 1);

    /* MPI_Win_allocate: memory each rank can store into (here on one node). */
    int *a;
    MPI_Win win;
    CHECK(MPI_Win_allocate(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &a, &win) == MPI_SUCCESS,
          "allocate");
    for (int i = 0; i < 4; i++)
        a[i] = rank;
    CHECK(a[3] == rank, "allocated memory is usable");
    MPI_Win_free(&win);

    /* A shared window of one process. */
    double *d;
    CHECK(MPI_Win_allocate_shared(sizeof(double), sizeof(double), MPI_INFO_NULL, MPI_COMM_SELF, &d, &win) ==
              MPI_SUCCESS,
          "allocate_shared over MPI_COMM_SELF");
    *d = 2.5;
    MPI_Aint bytes;
    int unit;
    double *q;
    MPI_Win_shared_query(win, 0, &bytes, &unit, &q);
    CHECK(q == d && *q == 2.5 && bytes == 8, "queried over MPI_COMM_SELF");
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    MPI_Finalize();
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
