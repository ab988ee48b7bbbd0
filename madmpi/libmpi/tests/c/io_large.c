/* The large-count (`_c`) forms of the I/O calls with small counts: explicit offsets, individual
 * and shared pointers, collective, ordered, nonblocking and split collective, each writing a
 * block per rank of its own region and reading a neighbour's back; MPI_Get_count_c and
 * MPI_Get_elements_c on their statuses; MPI_File_get_type_extent_c.
 *
 * Runs with any number of processes (1, 2 and 4 checked; tests/c_programs_io.rs runs 4).
 * argv[1]: the directory to write into (default: the current one). io_large.data.cmp stays for
 * the harness to compare with MPICH's; io_large.shared is deleted. */
#define M 16 /* ints per rank and region */
#define IO_BLOCK_INTS M
#include "io_common.h"

static int right;

static MPI_Count count_c(MPI_Status *st)
{
    MPI_Count n = -1;
    MPI_Get_count_c(st, MPI_INT, &n);
    return n;
}

/* A blocking call's return code `rc` and status: it succeeded and moved M ints (MPI_Get_count_c). */
static int moved(int rc, MPI_Status *st)
{
    return rc == MPI_SUCCESS && count_c(st) == M;
}

/* A nonblocking call's return code `rc`: it started, and MPI_Wait completed its request. */
static int waited(int rc, MPI_Request *req, MPI_Status *st)
{
    return rc == MPI_SUCCESS && MPI_Wait(req, st) == MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    MPI_File fh;
    MPI_Status st;
    MPI_Request req;
    MPI_Count n = -1, ext = -1;
    int v[13][M], w[M]; /* v[reg]: this rank's block of region reg */

    io_init(&argc, &argv, "io_large");
    right = (rank + 1) % size;
    for (int reg = 0; reg < 13; reg++)
        fill(v[reg], reg, rank);
    IO_REMOVE_OLD("data.cmp");
    CHECK(MPI_File_open(MPI_COMM_WORLD, fname("data.cmp"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) ==
              MPI_SUCCESS,
          "open");

    /* Region 0: write_at_c, read_at_c. */
    CHECK(moved(MPI_File_write_at_c(fh, at(0, rank), v[0], M, MPI_INT, &st), &st),
          "write_at_c: MPI_Get_count_c %lld", (long long)count_c(&st));
    CHECK(MPI_Get_elements_c(&st, MPI_INT, &n) == MPI_SUCCESS && n == M, "MPI_Get_elements_c %lld", (long long)n);
    /* Region 1: write_c, individual pointer. */
    MPI_File_seek(fh, at(1, rank), MPI_SEEK_SET);
    CHECK(moved(MPI_File_write_c(fh, v[1], M, MPI_INT, &st), &st), "write_c");
    /* Region 2: write_at_all_c. */
    CHECK(moved(MPI_File_write_at_all_c(fh, at(2, rank), v[2], M, MPI_INT, &st), &st), "write_at_all_c");
    /* Region 3: write_all_c through a view. */
    MPI_File_set_view(fh, at(3, rank), MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    CHECK(moved(MPI_File_write_all_c(fh, v[3], M, MPI_INT, &st), &st), "write_all_c");
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    /* Region 4: iwrite_at_c. Region 5: iwrite_c. Region 6: iwrite_at_all_c. Region 7: iwrite_all_c. */
    CHECK(waited(MPI_File_iwrite_at_c(fh, at(4, rank), v[4], M, MPI_INT, &req), &req, &st) && count_c(&st) == M,
          "iwrite_at_c");
    MPI_File_seek(fh, at(5, rank), MPI_SEEK_SET);
    CHECK(waited(MPI_File_iwrite_c(fh, v[5], M, MPI_INT, &req), &req, &st) && count_c(&st) == M, "iwrite_c");
    CHECK(waited(MPI_File_iwrite_at_all_c(fh, at(6, rank), v[6], M, MPI_INT, &req), &req, &st) && count_c(&st) == M,
          "iwrite_at_all_c");
    MPI_File_seek(fh, at(7, rank), MPI_SEEK_SET);
    CHECK(waited(MPI_File_iwrite_all_c(fh, v[7], M, MPI_INT, &req), &req, &st) && count_c(&st) == M, "iwrite_all_c");
    /* Region 8: write_ordered_c. Region 9: write_at_all_begin_c/end. Region 10: write_all_begin_c. */
    MPI_File_seek_shared(fh, at(8, 0), MPI_SEEK_SET);
    CHECK(moved(MPI_File_write_ordered_c(fh, v[8], M, MPI_INT, &st), &st), "write_ordered_c");
    CHECK(MPI_File_write_at_all_begin_c(fh, at(9, rank), v[9], M, MPI_INT) == MPI_SUCCESS &&
              moved(MPI_File_write_at_all_end(fh, v[9], &st), &st),
          "write_at_all_begin_c/end");
    MPI_File_seek(fh, at(10, rank), MPI_SEEK_SET);
    CHECK(MPI_File_write_all_begin_c(fh, v[10], M, MPI_INT) == MPI_SUCCESS &&
              moved(MPI_File_write_all_end(fh, v[10], &st), &st),
          "write_all_begin_c/end");
    /* Region 11: write_ordered_begin_c. */
    MPI_Barrier(MPI_COMM_WORLD); /* MPICH's ordered calls return before the last rank moved the pointer */
    MPI_File_seek_shared(fh, at(11, 0), MPI_SEEK_SET);
    CHECK(MPI_File_write_ordered_begin_c(fh, v[11], M, MPI_INT) == MPI_SUCCESS &&
              moved(MPI_File_write_ordered_end(fh, v[11], &st), &st),
          "write_ordered_begin_c/end");
    settle(fh);

    /* Reads of the right neighbour's blocks. */
    memset(w, 0, sizeof w);
    CHECK(moved(MPI_File_read_at_c(fh, at(0, right), w, M, MPI_INT, &st), &st) && is(w, 0, right), "read_at_c");
    memset(w, 0, sizeof w);
    MPI_File_seek(fh, at(1, right), MPI_SEEK_SET);
    CHECK(MPI_File_read_c(fh, w, M, MPI_INT, &st) == MPI_SUCCESS && is(w, 1, right), "read_c");
    memset(w, 0, sizeof w);
    CHECK(moved(MPI_File_read_at_all_c(fh, at(2, right), w, M, MPI_INT, &st), &st) && is(w, 2, right), "read_at_all_c");
    memset(w, 0, sizeof w);
    MPI_File_seek(fh, at(3, right), MPI_SEEK_SET);
    CHECK(MPI_File_read_all_c(fh, w, M, MPI_INT, &st) == MPI_SUCCESS && is(w, 3, right), "read_all_c");
    memset(w, 0, sizeof w);
    CHECK(waited(MPI_File_iread_at_c(fh, at(4, right), w, M, MPI_INT, &req), &req, &st) && is(w, 4, right),
          "iread_at_c");
    memset(w, 0, sizeof w);
    MPI_File_seek(fh, at(5, right), MPI_SEEK_SET);
    CHECK(waited(MPI_File_iread_c(fh, w, M, MPI_INT, &req), &req, &st) && count_c(&st) == M && is(w, 5, right),
          "iread_c");
    memset(w, 0, sizeof w);
    CHECK(waited(MPI_File_iread_at_all_c(fh, at(6, right), w, M, MPI_INT, &req), &req, &st) && is(w, 6, right),
          "iread_at_all_c");
    memset(w, 0, sizeof w);
    MPI_File_seek(fh, at(7, right), MPI_SEEK_SET);
    CHECK(waited(MPI_File_iread_all_c(fh, w, M, MPI_INT, &req), &req, &st) && is(w, 7, right), "iread_all_c");
    memset(w, 0, sizeof w);
    MPI_File_seek_shared(fh, at(8, 0), MPI_SEEK_SET);
    CHECK(moved(MPI_File_read_ordered_c(fh, w, M, MPI_INT, &st), &st) && is(w, 8, rank),
          "read_ordered_c: this rank's block");
    memset(w, 0, sizeof w);
    CHECK(MPI_File_read_at_all_begin_c(fh, at(9, right), w, M, MPI_INT) == MPI_SUCCESS &&
              MPI_File_read_at_all_end(fh, w, &st) == MPI_SUCCESS && is(w, 9, right),
          "read_at_all_begin_c/end");
    memset(w, 0, sizeof w);
    MPI_File_seek(fh, at(10, right), MPI_SEEK_SET);
    CHECK(MPI_File_read_all_begin_c(fh, w, M, MPI_INT) == MPI_SUCCESS &&
              MPI_File_read_all_end(fh, w, &st) == MPI_SUCCESS && is(w, 10, right),
          "read_all_begin_c/end");
    memset(w, 0, sizeof w);
    MPI_Barrier(MPI_COMM_WORLD); /* everyone's read_ordered_c moved the pointer */
    MPI_File_seek_shared(fh, at(11, 0), MPI_SEEK_SET);
    CHECK(MPI_File_read_ordered_begin_c(fh, w, M, MPI_INT) == MPI_SUCCESS &&
              MPI_File_read_ordered_end(fh, w, &st) == MPI_SUCCESS && is(w, 11, rank),
          "read_ordered_begin_c/end: this rank's block");

    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_DOUBLE, &pair);
    MPI_Type_commit(&pair);
    CHECK(MPI_File_get_type_extent_c(fh, pair, &ext) == MPI_SUCCESS && ext == 16, "get_type_extent_c: %lld",
          (long long)ext);
    MPI_Type_free(&pair);
    MPI_Offset sz = -1;
    CHECK(MPI_File_get_size(fh, &sz) == MPI_SUCCESS && sz == at(12, 0), "12 regions: %lld bytes", (long long)sz);
    MPI_File_close(&fh);

    /* Shared pointer, _c, in a file of its own (the order of arrival varies): a block each, read
     * back by whoever comes. */
    MPI_File_open(MPI_COMM_WORLD, fname("shared"), MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                  MPI_INFO_NULL, &fh);
    MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
    CHECK(moved(MPI_File_write_shared_c(fh, v[12], M, MPI_INT, &st), &st), "write_shared_c");
    MPI_File_iwrite_shared_c(fh, v[12], 0, MPI_INT, &req);
    CHECK(MPI_Wait(&req, &st) == MPI_SUCCESS && count_c(&st) == 0, "iwrite_shared_c of nothing");
    settle(fh);
    MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
    memset(w, 0, sizeof w);
    CHECK(moved(MPI_File_read_shared_c(fh, w, M, MPI_INT, &st), &st) && w[0] / 100000 == 12 && w[0] % 1000 == 0,
          "read_shared_c: a block (rank %d's)", w[0] / 1000 % 100);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
    memset(w, 0, sizeof w);
    CHECK(waited(MPI_File_iread_shared_c(fh, w, M, MPI_INT, &req), &req, &st) &&
              count_c(&st) == M && w[0] / 100000 == 12,
          "iread_shared_c: a block (rank %d's)", w[0] / 1000 % 100);
    MPI_File_close(&fh);
    return io_finish();
}
