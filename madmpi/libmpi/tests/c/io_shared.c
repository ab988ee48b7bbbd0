/* The shared file pointer: write_shared from every rank at once (each record lands exactly once,
 * a rank's own records in its program order), read_shared handing each record to exactly one
 * reader, write_ordered/read_ordered in rank order (with a record etype: positions count
 * records), seek_shared (SET, CUR, END) and get_position_shared, and the individual and shared
 * pointers left alone by each other's calls.
 *
 * MPICH 4.0.2 (ROMIO) returns from write_ordered/read_ordered on a rank before the higher ranks
 * moved the shared pointer: the pointer right after those calls is checked on MadMPI's library
 * only (see shared_after_ordered), after a barrier on both.
 *
 * Runs with any number of processes (1, 2 and 4 checked; tests/c_programs_io.rs runs 4).
 * argv[1]: the directory to write into (default: the current one). io_shared.ordered.cmp (rank
 * order: deterministic) stays for the harness to compare with MPICH's; io_shared.shared (order of
 * arrival) stays too but is not compared; io_shared.mix is deleted. */
#include "io_common.h"

#define R 5           /* records per rank written with write_shared */
#define MAGIC 0x5ead1e


typedef struct {
    int magic, rank, seq, check;
} rec_t;

static rec_t rec(int r, int seq)
{
    return (rec_t){MAGIC, r, seq, r * 1000 + seq};
}

static int valid(const rec_t *x, int n_ranks, int max_seq)
{
    return x->magic == MAGIC && x->rank >= 0 && x->rank < n_ranks && x->seq >= 0 && x->seq < max_seq &&
           x->check == x->rank * 1000 + x->seq;
}

/* The shared pointer after a collective ordered call (in etypes). MPI 4.0 (14.4.4): "When the
 * call returns, the shared file pointer points to the next etype accessible ... after the last
 * etype requested"; MPICH 4.0.2 (ROMIO) passes a token from rank to rank and lets each rank
 * return once it has its own offset, before the higher ranks moved the pointer (rank 2 of 4 read
 * 6 records where the ranks' 10 were done). So the pointer is checked at once on MadMPI's
 * library only, and after a barrier on both; a second barrier keeps the next shared-pointer
 * call of any rank after everyone's check. */
static void shared_after_ordered(MPI_File fh, MPI_Offset expected, const char *what)
{
    MPI_Offset sh = -1;
    if (on_madmpi())
        CHECK(MPI_File_get_position_shared(fh, &sh) == MPI_SUCCESS && sh == expected,
              "%s: when the call returns the shared pointer is at %lld", what, (long long)sh);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_File_get_position_shared(fh, &sh) == MPI_SUCCESS && sh == expected,
          "%s: the shared pointer is at %lld", what, (long long)sh);
    MPI_Barrier(MPI_COMM_WORLD);
}

/* write_shared from all ranks, then read back: each record once, each rank's in its order. */
static void shared_writes_and_reads(MPI_Datatype rtype)
{
    MPI_File fh;
    MPI_Offset pos = -1, sh = -1;
    MPI_Status st;
    rec_t r, all[R * 64];
    int n = -1, ok = 1, *seen = calloc(size * R, sizeof(int)), *total = calloc(size * R, sizeof(int));

    MPI_File_open(MPI_COMM_WORLD, fname("shared"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(MPI_File_get_position_shared(fh, &sh) == MPI_SUCCESS && sh == 0, "the shared pointer starts at 0");
    MPI_Barrier(MPI_COMM_WORLD); /* everyone saw 0 before anyone writes */
    MPI_File_seek(fh, 16 * rank, MPI_SEEK_SET);
    for (int s = 0; s < R; s++) {
        r = rec(rank, s);
        ok &= MPI_File_write_shared(fh, &r, 1, rtype, &st) == MPI_SUCCESS &&
              MPI_Get_count(&st, rtype, &n) == MPI_SUCCESS && n == 1;
    }
    CHECK(ok, "%d write_shared calls of one record each", R);
    CHECK(MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == 16 * rank,
          "the individual pointer did not move: %lld", (long long)pos);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_File_get_position_shared(fh, &sh) == MPI_SUCCESS && sh == 16 * R * size,
          "after everyone's writes the shared pointer is at %lld bytes", (long long)sh);
    settle(fh);

    CHECK(size * R <= (int)(sizeof all / sizeof *all), "%d records fit", size * R);
    CHECK(MPI_File_read_at(fh, 0, all, size * R, rtype, &st) == MPI_SUCCESS &&
              MPI_Get_count(&st, rtype, &n) == MPI_SUCCESS && n == size * R,
          "read_at the %d records", n);
    int last[64];
    for (int o = 0; o < size && o < 64; o++)
        last[o] = -1;
    for (int i = 0; i < size * R; i++) {
        ok &= valid(&all[i], size, R) && all[i].rank < 64;
        if (!ok)
            break;
        seen[all[i].rank * R + all[i].seq]++;
        ok &= all[i].seq > last[all[i].rank];
        last[all[i].rank] = all[i].seq;
    }
    for (int i = 0; i < size * R; i++)
        ok &= seen[i] == 1;
    CHECK(ok, "every record present exactly once, each rank's in its order");

    /* read_shared: each record goes to exactly one reader. */
    MPI_File_seek_shared(fh, 0, MPI_SEEK_SET);
    memset(seen, 0, sizeof(int) * size * R);
    int mine = 0;
    for (;;) {
        CHECK(MPI_File_read_shared(fh, &r, 1, rtype, &st) == MPI_SUCCESS &&
                  MPI_Get_count(&st, rtype, &n) == MPI_SUCCESS && (n == 0 || n == 1),
              "read_shared: %d record", n);
        if (n == 0)
            break;
        CHECK(valid(&r, size, R), "a valid record from rank %d", r.rank);
        seen[r.rank * R + r.seq]++;
        mine++;
    }
    MPI_Allreduce(seen, total, size * R, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ok = 1;
    for (int i = 0; i < size * R; i++)
        ok &= total[i] == 1;
    CHECK(ok, "read_shared: this rank read %d records, every record was read exactly once", mine);
    CHECK(MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == 16 * rank, "the individual pointer still at %lld",
          (long long)pos);
    MPI_File_close(&fh);
    free(seen);
    free(total);
}

/* write_ordered / read_ordered with a record etype; seek_shared SET, CUR, END. */
static void ordered(MPI_Datatype rtype)
{
    MPI_File fh;
    MPI_Offset sh = -1;
    MPI_Status st;
    int nrec = size * (size + 1) / 2, n = -1, ok = 1;
    rec_t mine[64], back[64], *all = malloc(sizeof(rec_t) * nrec);

    MPI_File_open(MPI_COMM_WORLD, fname("ordered.cmp"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(MPI_File_set_view(fh, 0, rtype, rtype, "native", MPI_INFO_NULL) == MPI_SUCCESS, "a view of records");
    for (int s = 0; s <= rank; s++)
        mine[s] = rec(rank, s);
    CHECK(MPI_File_write_ordered(fh, mine, rank + 1, rtype, &st) == MPI_SUCCESS &&
              MPI_Get_count(&st, rtype, &n) == MPI_SUCCESS && n == rank + 1,
          "write_ordered of %d records", rank + 1);
    shared_after_ordered(fh, nrec, "write_ordered");
    settle(fh);
    CHECK(MPI_File_read_at(fh, 0, all, nrec, rtype, &st) == MPI_SUCCESS, "read_at all %d records", nrec);
    for (int o = 0, i = 0; o < size; o++)
        for (int s = 0; s <= o; s++, i++)
            ok &= valid(&all[i], size, size) && all[i].rank == o && all[i].seq == s;
    CHECK(ok, "the records are in rank order");

    CHECK(MPI_File_seek_shared(fh, 0, MPI_SEEK_SET) == MPI_SUCCESS, "seek_shared(0, SET)");
    memset(back, 0, sizeof back);
    CHECK(MPI_File_read_ordered(fh, back, rank + 1, rtype, &st) == MPI_SUCCESS &&
              MPI_Get_count(&st, rtype, &n) == MPI_SUCCESS && n == rank + 1 &&
              memcmp(back, mine, sizeof(rec_t) * (rank + 1)) == 0,
          "read_ordered of %d records gives this rank's own", rank + 1);
    shared_after_ordered(fh, nrec, "read_ordered");

    /* Overwrite the last `size` records in rank order, one each. */
    CHECK(MPI_File_seek_shared(fh, -size, MPI_SEEK_END) == MPI_SUCCESS &&
              MPI_File_get_position_shared(fh, &sh) == MPI_SUCCESS && sh == nrec - size,
          "seek_shared(-%d, END): %lld", size, (long long)sh);
    MPI_Barrier(MPI_COMM_WORLD); /* everyone read it before anyone moves it */
    mine[0] = rec(rank, 50 + rank);
    CHECK(MPI_File_write_ordered(fh, mine, 1, rtype, &st) == MPI_SUCCESS, "write_ordered one record each");
    shared_after_ordered(fh, nrec, "write_ordered again");
    CHECK(MPI_File_seek_shared(fh, -1, MPI_SEEK_CUR) == MPI_SUCCESS &&
              MPI_File_get_position_shared(fh, &sh) == MPI_SUCCESS && sh == nrec - 1,
          "seek_shared(-1, CUR): %lld", (long long)sh);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_File_read_ordered(fh, back, rank == 0, rtype, &st) == MPI_SUCCESS &&
              MPI_Get_count(&st, rtype, &n) == MPI_SUCCESS && n == (rank == 0) &&
              (rank != 0 || (back[0].rank == size - 1 && back[0].seq == 50 + size - 1)),
          "read_ordered: rank 0 reads the last record (rank %d's), the others nothing", size - 1);
    settle(fh);
    MPI_File_read_at(fh, 0, all, nrec, rtype, &st);
    ok = 1;
    for (int o = 0; o < size; o++)
        ok &= all[nrec - size + o].rank == o && all[nrec - size + o].seq == 50 + o;
    CHECK(ok, "the last %d records are the ranks' new ones, in rank order", size);
    MPI_File_close(&fh);
    free(all);
}

/* Individual writes leave the shared pointer; shared writes leave the individual one. */
static void mixed(MPI_Datatype rtype)
{
    MPI_File fh;
    MPI_Offset pos = -1, sh = -1;
    MPI_Status st;
    rec_t r = rec(rank, 0), back;
    const char *f = fname("mix");

    MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
    MPI_File_set_view(fh, 0, rtype, rtype, "native", MPI_INFO_NULL);
    CHECK(MPI_File_seek(fh, size + rank, MPI_SEEK_SET) == MPI_SUCCESS &&
              MPI_File_write(fh, &r, 1, rtype, &st) == MPI_SUCCESS &&
              MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == size + rank + 1,
          "individual write at record %d", size + rank);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_File_get_position_shared(fh, &sh) == MPI_SUCCESS && sh == 0, "the shared pointer is still 0");
    MPI_Barrier(MPI_COMM_WORLD);
    r.seq = 1;
    r.check = rank * 1000 + 1;
    CHECK(MPI_File_write_shared(fh, &r, 1, rtype, &st) == MPI_SUCCESS &&
              MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == size + rank + 1,
          "write_shared leaves the individual pointer at %lld", (long long)pos);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_File_get_position_shared(fh, &sh) == MPI_SUCCESS && sh == size, "the shared pointer at %lld",
          (long long)sh);
    settle(fh);
    CHECK(MPI_File_read_at(fh, size + rank, &back, 1, rtype, &st) == MPI_SUCCESS && back.rank == rank &&
              back.seq == 0,
          "the individual write is intact");
    CHECK(MPI_File_seek(fh, 0, MPI_SEEK_SET) == MPI_SUCCESS && MPI_File_read(fh, &back, 1, rtype, &st) == MPI_SUCCESS &&
              valid(&back, size, 2) && back.seq == 1 && MPI_File_get_position_shared(fh, &sh) == MPI_SUCCESS &&
              sh == size,
          "an individual read leaves the shared pointer");
    MPI_File_close(&fh);
}

int main(int argc, char **argv)
{
    MPI_Datatype rtype;
    io_init(&argc, &argv, "io_shared");
    CHECK(size <= 63, "at most 63 processes (%d)", size);
    IO_REMOVE_OLD("shared", "ordered.cmp", "mix");
    MPI_Type_contiguous(4, MPI_INT, &rtype);
    MPI_Type_commit(&rtype);
    shared_writes_and_reads(rtype);
    ordered(rtype);
    mixed(rtype);
    MPI_Type_free(&rtype);
    return io_finish();
}
