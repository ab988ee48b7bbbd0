/* Atomic mode: set_atomicity/get_atomicity (nonatomic by default); concurrent writes through
 * strided views in atomic mode, all ranks on the same places, then with each rank's view
 * shifted by half a block so that neighbours overlap: after a barrier and a sync, each writer's
 * data must be whole where it overlaps another's, as if the writes had happened one after the
 * other (MPI 4.0, 14.6.1: in atomic mode conflicting accesses are sequentially consistent). Also
 * visibility: in atomic mode after a barrier alone; in nonatomic mode after sync-barrier-sync.
 *
 * Runs with 1 to 64 processes (with one process the overlaps are empty; 2 and 4 checked,
 * tests/c_programs_io.rs runs 4). argv[1]: the directory to write into (default: the current
 * one). io_atomic.visible.cmp stays for the harness to compare with MPICH's; the atomic-mode file
 * (whose winners vary) is deleted on close. */
#include "io_common.h"

/* Many small blocks per write: a write made of one system call per block, without a lock, shows
 * its mixtures within a few rounds. */
#define NB 512    /* blocks per write */
#define BL 64     /* ints per block */
#define STRIDE 128 /* ints from block to block */
#define ROUNDS 16
#define M 64 /* ints per rank of the visibility checks */


static int value(int round, int r, int j)
{
    return (round * 64 + r) * 65536 + j;
}

/* The index in rank r's stream of file int p when rank r's view starts at int shift * r; -1 if
 * rank r does not write p. */
static int index_of(int r, long p, int shift)
{
    long q = p - (long)shift * r;
    if (q < 0 || q / STRIDE >= NB || q % STRIDE >= BL)
        return -1;
    return (int)(q / STRIDE * BL + q % STRIDE);
}

/* ROUNDS rounds of concurrent writes in atomic mode, views shifted by `shift` ints per rank;
 * rank 0 checks each round's result. */
static void concurrent_writes(MPI_File fh, int shift, const char *what)
{
    MPI_Datatype ftype;
    MPI_Status st;
    int *v = malloc(sizeof(int) * NB * BL), ok = 1, mixed = 0, *winner = malloc(sizeof(int) * size * size);
    long span = (long)(NB - 1) * STRIDE + BL + (long)shift * (size - 1);
    int *all = malloc(sizeof(int) * span);
    int wins[64] = {0};

    MPI_Type_vector(NB, BL, STRIDE, MPI_INT, &ftype);
    MPI_Type_commit(&ftype);
    for (int round = 0; round < ROUNDS; round++) {
        MPI_File_set_view(fh, (MPI_Offset)shift * rank * 4, MPI_INT, ftype, "native", MPI_INFO_NULL);
        for (int j = 0; j < NB * BL; j++)
            v[j] = value(round, rank, j);
        MPI_Barrier(MPI_COMM_WORLD);
        ok &= MPI_File_write_at(fh, 0, v, NB * BL, MPI_INT, &st) == MPI_SUCCESS;
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_File_sync(fh);
        MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
        if (rank == 0) {
            for (int i = 0; i < size * size; i++)
                winner[i] = -1;
            ok &= MPI_File_read_at(fh, 0, all, (int)span, MPI_INT, &st) == MPI_SUCCESS;
            for (long p = 0; p < span && ok; p++) {
                int w = all[p] / 65536 % 64, j = all[p] % 65536, writers = 0;
                for (int r = 0; r < size; r++)
                    writers += index_of(r, p, shift) >= 0;
                if (writers == 0)
                    continue; /* a hole of every view (MPICH fills them with 0xff bytes) */
                if (index_of(w, p, shift) < 0 || all[p] / 65536 / 64 != round || index_of(w, p, shift) != j) {
                    ok = 0;
                    CHECK(0, "%s, round %d: int %ld is %d (not from a writer of that place)", what, round, p, all[p]);
                }
                if (writers > 1)
                    mixed++;
                /* Every pair of writers of p: the same one wins at all their common places. */
                for (int r = 0; r < size; r++)
                    if (r != w && index_of(r, p, shift) >= 0) {
                        int *win = &winner[(r < w ? r : w) * size + (r < w ? w : r)];
                        if (*win == -1)
                            *win = w;
                        if (*win != w)
                            CHECK(0, "%s, round %d: ranks %d and %d both win where they overlap (int %ld)", what,
                                  round, r, w, p);
                    }
            }
            wins[all[shift] / 65536 % 64]++;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    CHECK(ok, "%s: %d rounds of %d KiB per rank written at once", what, ROUNDS, NB * BL * 4 / 1024);
    if (rank == 0) {
        char line[512];
        int at = 0;
        for (int r = 0; r < size && at < 400; r++)
            at += snprintf(line + at, sizeof line - at, " %d", wins[r]);
        CHECK(size == 1 || mixed > 0, "%s: each overlap whole from one writer (%d places overlapped; rounds won at int "
              "%d, which ranks 0 and 1 write, by rank:%s)", what, mixed / ROUNDS, shift, line);
    }
    MPI_Type_free(&ftype);
    free(v);
    free(all);
    free(winner);
}

static void atomic(void)
{
    MPI_File fh;
    int flag = -1, v[M], w[M], right = (rank + 1) % size;
    MPI_Status st;

    MPI_File_open(MPI_COMM_WORLD, fname("atomic"), MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                  MPI_INFO_NULL, &fh);
    CHECK(MPI_File_get_atomicity(fh, &flag) == MPI_SUCCESS && flag == 0, "nonatomic by default");
    CHECK(MPI_File_set_atomicity(fh, 1) == MPI_SUCCESS && MPI_File_get_atomicity(fh, &flag) == MPI_SUCCESS &&
              flag == 1,
          "set_atomicity(1): atomic");
    concurrent_writes(fh, 0, "same places");
    concurrent_writes(fh, BL / 2, "shifted views");

    /* Atomic mode: a barrier is enough to see another rank's write. */
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    for (int i = 0; i < M; i++)
        v[i] = 7000000 + rank * 1000 + i;
    MPI_File_write_at(fh, (MPI_Offset)rank * M * 4, v, M, MPI_INT, &st);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_File_read_at(fh, (MPI_Offset)right * M * 4, w, M, MPI_INT, &st) == MPI_SUCCESS &&
              w[0] == 7000000 + right * 1000 && w[M - 1] == 7000000 + right * 1000 + M - 1,
          "atomic mode: rank %d's write seen after a barrier", right);
    CHECK(MPI_File_set_atomicity(fh, 0) == MPI_SUCCESS && MPI_File_get_atomicity(fh, &flag) == MPI_SUCCESS &&
              flag == 0,
          "set_atomicity(0): nonatomic again");
    MPI_File_close(&fh);
}

/* Nonatomic mode: sync-barrier-sync makes a write visible to the others. */
static void nonatomic_visibility(void)
{
    MPI_File fh;
    int v[M], w[M], flag = -1, ok = 1;
    MPI_Status st;

    MPI_File_open(MPI_COMM_WORLD, fname("visible.cmp"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(MPI_File_get_atomicity(fh, &flag) == MPI_SUCCESS && flag == 0, "a new open is nonatomic");
    for (int round = 0; round < 3; round++) {
        int from = (rank + 1 + round) % size;
        for (int i = 0; i < M; i++)
            v[i] = round * 100000 + rank * 1000 + i;
        MPI_File_write_at(fh, (MPI_Offset)rank * M * 4, v, M, MPI_INT, &st);
        settle(fh);
        MPI_File_read_at(fh, (MPI_Offset)from * M * 4, w, M, MPI_INT, &st);
        for (int i = 0; i < M; i++)
            ok &= w[i] == round * 100000 + from * 1000 + i;
        CHECK(ok, "round %d: rank %d's new block seen after sync-barrier-sync", round, from);
        MPI_Barrier(MPI_COMM_WORLD); /* everyone read before the next round's writes */
    }
    MPI_File_close(&fh);
}

int main(int argc, char **argv)
{
    io_init(&argc, &argv, "io_atomic");
    CHECK(size <= 64, "at most 64 processes (%d)", size);
    IO_REMOVE_OLD("atomic", "visible.cmp");
    atomic();
    nonatomic_visibility();
    return io_finish();
}
