/* Nonblocking and split-collective I/O: iwrite_at/iread_at (MPI_Wait), iwrite/iread (the
 * pointer moves when the call starts; MPI_Waitall), iwrite_all/iread_all and
 * iwrite_at_all/iread_at_all (MPI_Test loops), iwrite_shared/iread_shared (each record once),
 * write_all_begin/end, read_at_all_begin/end, write_at_all_begin/end, read_all_begin/end,
 * write_ordered_begin/end, read_ordered_begin/end; and an iwrite_at of 4 MiB overlapped with
 * 50 ms of computation (correctness checked; the timings are printed for information only).
 *
 * Runs with any number of processes (1, 2 and 4 checked; tests/c_programs_io.rs runs 4).
 * argv[1]: the directory to write into (default: the current one). io_nonblocking.data.cmp stays
 * for the harness to compare with MPICH's; io_nonblocking.shared (order of arrival) stays, not
 * compared; the 4 MiB-per-rank file is deleted on close. */
#define M 32 /* ints per rank and region */
#define IO_BLOCK_INTS M
#define BIG (1 << 20) /* ints per rank of the overlapped write: 4 MiB */
#include "io_common.h"

static int right, left;

/* MPI_Test until done; the number of calls. */
static int test_loop(MPI_Request *req, MPI_Status *st)
{
    int flag = 0, calls = 0, rc = MPI_SUCCESS;
    while (!flag && rc == MPI_SUCCESS) {
        rc = MPI_Test(req, &flag, st);
        calls++;
    }
    CHECK(rc == MPI_SUCCESS && *req == MPI_REQUEST_NULL, "MPI_Test completes the request (%d calls)", calls);
    return calls;
}

static int count_of(MPI_Status *st)
{
    int n = -1;
    MPI_Get_count(st, MPI_INT, &n);
    return n;
}

static void independent(MPI_File fh)
{
    int v[M], w[M];
    MPI_Request req, reqs[2];
    MPI_Status st, sts[2];
    MPI_Offset pos = -1;

    fill(v, 0, rank);
    CHECK(MPI_File_iwrite_at(fh, at(0, rank), v, M, MPI_INT, &req) == MPI_SUCCESS &&
              MPI_Wait(&req, &st) == MPI_SUCCESS && req == MPI_REQUEST_NULL && count_of(&st) == M,
          "iwrite_at, MPI_Wait: %d ints", count_of(&st));
    settle(fh);
    memset(w, 0, sizeof w);
    CHECK(MPI_File_iread_at(fh, at(0, right), w, M, MPI_INT, &req) == MPI_SUCCESS &&
              MPI_Wait(&req, &st) == MPI_SUCCESS && count_of(&st) == M && is(w, 0, right),
          "iread_at rank %d's block, MPI_Wait", right);

    fill(v, 1, rank);
    MPI_File_seek(fh, at(1, rank), MPI_SEEK_SET);
    CHECK(MPI_File_iwrite(fh, v, M / 2, MPI_INT, &reqs[0]) == MPI_SUCCESS &&
              MPI_File_iwrite(fh, v + M / 2, M / 2, MPI_INT, &reqs[1]) == MPI_SUCCESS,
          "two iwrite calls in a row");
    CHECK(MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == at(1, rank) + M * 4,
          "the pointer moved at the start of each: %lld", (long long)pos);
    CHECK(MPI_Waitall(2, reqs, sts) == MPI_SUCCESS && count_of(&sts[0]) == M / 2 && count_of(&sts[1]) == M / 2,
          "MPI_Waitall: %d and %d ints", count_of(&sts[0]), count_of(&sts[1]));
    settle(fh);
    memset(w, 0, sizeof w);
    MPI_File_seek(fh, at(1, left), MPI_SEEK_SET);
    CHECK(MPI_File_iread(fh, w, M / 2, MPI_INT, &reqs[0]) == MPI_SUCCESS &&
              MPI_File_iread(fh, w + M / 2, M / 2, MPI_INT, &reqs[1]) == MPI_SUCCESS &&
              MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS && is(w, 1, left),
          "two iread calls of rank %d's halves, MPI_Waitall", left);
}

static void collective(MPI_File fh)
{
    int v[M], w[M], calls;
    MPI_Request req;
    MPI_Status st;

    /* iwrite_all / iread_all through views on one block each. */
    fill(v, 2, rank);
    MPI_File_set_view(fh, at(2, rank), MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    CHECK(MPI_File_iwrite_all(fh, v, M, MPI_INT, &req) == MPI_SUCCESS, "iwrite_all started");
    calls = test_loop(&req, &st);
    CHECK(count_of(&st) == M, "iwrite_all done after %d MPI_Test calls: %d ints", calls, count_of(&st));
    settle(fh);
    MPI_File_set_view(fh, at(2, right), MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
    memset(w, 0, sizeof w);
    CHECK(MPI_File_iread_all(fh, w, M, MPI_INT, &req) == MPI_SUCCESS, "iread_all started");
    calls = test_loop(&req, &st);
    CHECK(count_of(&st) == M && is(w, 2, right), "iread_all of rank %d's block (%d MPI_Test calls)", right, calls);
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);

    /* iwrite_at_all / iread_at_all. */
    fill(v, 3, rank);
    CHECK(MPI_File_iwrite_at_all(fh, at(3, rank), v, M, MPI_INT, &req) == MPI_SUCCESS, "iwrite_at_all started");
    calls = test_loop(&req, &st);
    CHECK(count_of(&st) == M, "iwrite_at_all done (%d MPI_Test calls)", calls);
    settle(fh);
    memset(w, 0, sizeof w);
    CHECK(MPI_File_iread_at_all(fh, at(3, left), w, M, MPI_INT, &req) == MPI_SUCCESS, "iread_at_all started");
    calls = test_loop(&req, &st);
    CHECK(count_of(&st) == M && is(w, 3, left), "iread_at_all of rank %d's block (%d MPI_Test calls)", left, calls);

    /* Split collectives. */
    fill(v, 4, rank);
    MPI_File_seek(fh, at(4, rank), MPI_SEEK_SET);
    CHECK(MPI_File_write_all_begin(fh, v, M, MPI_INT) == MPI_SUCCESS &&
              MPI_File_write_all_end(fh, v, &st) == MPI_SUCCESS && count_of(&st) == M,
          "write_all_begin/end");
    fill(v, 5, rank);
    CHECK(MPI_File_write_at_all_begin(fh, at(5, rank), v, M, MPI_INT) == MPI_SUCCESS &&
              MPI_File_write_at_all_end(fh, v, &st) == MPI_SUCCESS && count_of(&st) == M,
          "write_at_all_begin/end");
    settle(fh);
    memset(w, 0, sizeof w);
    CHECK(MPI_File_read_at_all_begin(fh, at(4, right), w, M, MPI_INT) == MPI_SUCCESS &&
              MPI_File_read_at_all_end(fh, w, &st) == MPI_SUCCESS && count_of(&st) == M && is(w, 4, right),
          "read_at_all_begin/end of rank %d's block", right);
    memset(w, 0, sizeof w);
    MPI_File_seek(fh, at(5, left), MPI_SEEK_SET);
    CHECK(MPI_File_read_all_begin(fh, w, M, MPI_INT) == MPI_SUCCESS &&
              MPI_File_read_all_end(fh, w, &st) == MPI_SUCCESS && count_of(&st) == M && is(w, 5, left),
          "read_all_begin/end of rank %d's block", left);

    /* Ordered split collectives at region 6. */
    fill(v, 6, rank);
    MPI_File_seek_shared(fh, at(6, 0), MPI_SEEK_SET);
    CHECK(MPI_File_write_ordered_begin(fh, v, M, MPI_INT) == MPI_SUCCESS &&
              MPI_File_write_ordered_end(fh, v, &st) == MPI_SUCCESS && count_of(&st) == M,
          "write_ordered_begin/end");
    settle(fh);
    memset(w, 0, sizeof w);
    CHECK(MPI_File_read_at(fh, at(6, rank), w, M, MPI_INT, &st) == MPI_SUCCESS && is(w, 6, rank),
          "the ordered block of this rank is at its rank's place");
    MPI_File_seek_shared(fh, at(6, 0), MPI_SEEK_SET);
    memset(w, 0, sizeof w);
    CHECK(MPI_File_read_ordered_begin(fh, w, M, MPI_INT) == MPI_SUCCESS &&
              MPI_File_read_ordered_end(fh, w, &st) == MPI_SUCCESS && count_of(&st) == M && is(w, 6, rank),
          "read_ordered_begin/end gives it back");
}

/* iwrite_shared / iread_shared: every record exactly once. */
static void shared(void)
{
    MPI_File fh;
    MPI_Request reqs[3];
    int v[3][2], w[3][2], *seen = calloc(size * 3, sizeof(int)), *total = calloc(size * 3, sizeof(int)), ok = 1;

    MPI_File_open(MPI_COMM_WORLD, fname("shared"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    for (int k = 0; k < 3; k++) {
        v[k][0] = rank;
        v[k][1] = k;
        CHECK(MPI_File_iwrite_shared(fh, v[k], 2, MPI_INT, &reqs[k]) == MPI_SUCCESS, "iwrite_shared %d", k);
    }
    CHECK(MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall of the three");
    settle(fh);
    MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
    for (int k = 0; k < 3; k++)
        CHECK(MPI_File_iread_shared(fh, w[k], 2, MPI_INT, &reqs[k]) == MPI_SUCCESS, "iread_shared %d", k);
    CHECK(MPI_Waitall(3, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "MPI_Waitall of the three");
    for (int k = 0; k < 3; k++) {
        ok &= w[k][0] >= 0 && w[k][0] < size && w[k][1] >= 0 && w[k][1] < 3;
        if (ok)
            seen[w[k][0] * 3 + w[k][1]]++;
    }
    CHECK(ok, "three valid records read");
    MPI_Allreduce(seen, total, size * 3, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < size * 3; i++)
        ok &= total[i] == 1;
    CHECK(ok, "every record written once and read once");
    MPI_File_close(&fh);
    free(seen);
    free(total);
}

/* 4 MiB written while the process computes for 50 ms without MPI calls. */
static void overlap(void)
{
    MPI_File fh;
    MPI_Request req;
    MPI_Status st;
    int *v = malloc(sizeof(int) * BIG), *w = malloc(sizeof(int) * BIG), ok = 1;
    volatile double x = 1;

    for (int i = 0; i < BIG; i++)
        v[i] = rank * BIG + i;
    MPI_File_open(MPI_COMM_WORLD, fname("big"), MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                  MPI_INFO_NULL, &fh);
    double t0 = check_now();
    CHECK(MPI_File_iwrite_at(fh, (MPI_Offset)rank * BIG * 4, v, BIG, MPI_INT, &req) == MPI_SUCCESS,
          "iwrite_at of 4 MiB started");
    double t1 = check_now();
    while (check_now() - t1 < 0.05)
        x = x * 1.0000001 + 1e-9;
    double t2 = check_now();
    CHECK(MPI_Wait(&req, &st) == MPI_SUCCESS && count_of(&st) == BIG, "MPI_Wait: %d ints", count_of(&st));
    double t3 = check_now();
    CHECK(1, "(information) the start took %.1f ms, 50 ms of computing, then MPI_Wait %.1f ms", (t1 - t0) * 1e3,
          (t3 - t2) * 1e3);
    settle(fh);
    int other = (rank + 1) % size;
    CHECK(MPI_File_read_at(fh, (MPI_Offset)other * BIG * 4, w, BIG, MPI_INT, &st) == MPI_SUCCESS &&
              count_of(&st) == BIG,
          "read_at rank %d's 4 MiB", other);
    for (int i = 0; i < BIG && ok; i++)
        ok = w[i] == other * BIG + i;
    CHECK(ok, "... every int right");
    MPI_File_close(&fh);
    free(v);
    free(w);
}

int main(int argc, char **argv)
{
    MPI_File fh;
    io_init(&argc, &argv, "io_nonblocking");
    right = (rank + 1) % size;
    left = (rank + size - 1) % size;
    IO_REMOVE_OLD("data.cmp", "shared", "big");
    CHECK(MPI_File_open(MPI_COMM_WORLD, fname("data.cmp"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) ==
              MPI_SUCCESS,
          "open");
    independent(fh);
    collective(fh);
    MPI_Offset sz = -1;
    CHECK(MPI_File_get_size(fh, &sz) == MPI_SUCCESS && sz == at(7, 0), "7 regions: %lld bytes", (long long)sz);
    MPI_File_close(&fh);
    shared();
    overlap();
    return io_finish();
}
