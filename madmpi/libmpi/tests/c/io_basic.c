/* MPI-IO basics: opening and closing with every access mode on MPI_COMM_SELF and
 * MPI_COMM_WORLD, the file's amode and group, sizes (set_size, preallocate), sync, delete,
 * explicit offsets, the individual file pointer (seek SET/CUR/END, get_position, reads and
 * writes advancing it), get_byte_offset and get_type_extent, the counts of a status (short
 * reads at the end of the file included), c2f/f2c and the info calls.
 *
 * Runs with any number of processes (1, 2 and 4 checked; tests/c_programs_io.rs runs 4).
 * argv[1]: the directory to write into (default: the current one). Files are named io_basic.*;
 * io_basic.data.cmp stays for the harness, which compares it byte for byte with the one
 * MPICH's library writes; the others are deleted. */
#include "io_common.h"
#include <errno.h>
#include <sys/stat.h>

#define N 16 /* ints per rank in the shared file */


static long long stat_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 || errno != ENOENT;
}

static int group_is(MPI_File fh, MPI_Comm comm)
{
    MPI_Group g = MPI_GROUP_NULL, cg = MPI_GROUP_NULL;
    int res = -1;
    if (MPI_File_get_group(fh, &g) != MPI_SUCCESS)
        return 0;
    MPI_Comm_group(comm, &cg);
    MPI_Group_compare(g, cg, &res);
    MPI_Group_free(&g);
    MPI_Group_free(&cg);
    return res == MPI_IDENT && g == MPI_GROUP_NULL;
}

/* Opening on MPI_COMM_SELF: CREATE|EXCL|WRONLY, RDONLY, RDWR|DELETE_ON_CLOSE, UNIQUE_OPEN. */
static void self_modes(void)
{
    MPI_File fh = MPI_FILE_NULL;
    int v[N], w[N], amode = -1, n = -1;
    MPI_Status st;
    const char *f = rank_fname("self");

    for (int i = 0; i < N; i++)
        v[i] = rank * 1000 + i;
    CHECK(MPI_File_open(MPI_COMM_SELF, f, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, MPI_INFO_NULL,
                        &fh) == MPI_SUCCESS && fh != MPI_FILE_NULL,
          "open(SELF, CREATE|EXCL|WRONLY) of a new file");
    CHECK(MPI_File_get_amode(fh, &amode) == MPI_SUCCESS &&
              amode == (MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY),
          "get_amode: CREATE|EXCL|WRONLY (%d)", amode);
    CHECK(group_is(fh, MPI_COMM_SELF), "get_group: MPI_COMM_SELF's group (MPI_IDENT), freed");
    CHECK(MPI_File_write_at(fh, 0, v, N, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == N,
          "write_at 16 ints: count %d", n);
    CHECK(MPI_File_close(&fh) == MPI_SUCCESS && fh == MPI_FILE_NULL, "close sets MPI_FILE_NULL");
    CHECK(stat_size(f) == N * 4, "the file has 64 bytes (stat: %lld)", stat_size(f));

    CHECK(MPI_File_open(MPI_COMM_SELF, f, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) == MPI_SUCCESS,
          "open(SELF, RDONLY)");
    CHECK(MPI_File_get_amode(fh, &amode) == MPI_SUCCESS && amode == MPI_MODE_RDONLY, "get_amode: RDONLY");
    memset(w, 0, sizeof w);
    CHECK(MPI_File_read_at(fh, 0, w, N, MPI_INT, &st) == MPI_SUCCESS && memcmp(v, w, sizeof v) == 0,
          "read_at reads the 16 ints back");
    MPI_File_close(&fh);

    CHECK(MPI_File_open(MPI_COMM_SELF, f, MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh) ==
              MPI_SUCCESS,
          "open(SELF, RDWR|DELETE_ON_CLOSE)");
    memset(w, 0, sizeof w);
    CHECK(MPI_File_read_at(fh, 4 * 4, w, 1, MPI_INT, &st) == MPI_SUCCESS && w[0] == v[4], "read_at(16 bytes): %d",
          w[0]);
    CHECK(exists(f), "the file exists until it is closed");
    MPI_File_close(&fh);
    CHECK(!exists(f), "DELETE_ON_CLOSE: the file is gone after close");

    f = rank_fname("unique");
    CHECK(MPI_File_open(MPI_COMM_SELF, f, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_UNIQUE_OPEN, MPI_INFO_NULL,
                        &fh) == MPI_SUCCESS,
          "open(SELF, CREATE|RDWR|UNIQUE_OPEN)");
    CHECK(MPI_File_get_amode(fh, &amode) == MPI_SUCCESS &&
              amode == (MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_UNIQUE_OPEN),
          "get_amode: CREATE|RDWR|UNIQUE_OPEN");
    memset(w, 0, sizeof w);
    CHECK(MPI_File_write_at(fh, 8, v, 3, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_File_read_at(fh, 8, w, 3, MPI_INT, &st) == MPI_SUCCESS && memcmp(v, w, 12) == 0,
          "UNIQUE_OPEN: write_at then read_at");
    MPI_File_close(&fh);
    CHECK(stat_size(f) == 20, "20 bytes (a hole of 8, then 12): %lld", stat_size(f));
    CHECK(MPI_File_delete(f, MPI_INFO_NULL) == MPI_SUCCESS && !exists(f), "MPI_File_delete removes the file");
}

/* Opening on MPI_COMM_WORLD: each rank's block, sync-barrier-sync, APPEND, CREATE|EXCL. */
static void world_modes(void)
{
    MPI_File fh = MPI_FILE_NULL;
    int v[N], w[N], amode = -1, n = -1;
    MPI_Offset pos = -1, sz = -1, end = (MPI_Offset)size * N * 4;
    MPI_Status st;
    const char *f = fname("data.cmp");
    int right = (rank + 1) % size;

    for (int i = 0; i < N; i++)
        v[i] = rank * 1000 + i;
    CHECK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) == MPI_SUCCESS,
          "open(WORLD, CREATE|RDWR)");
    CHECK(MPI_File_get_amode(fh, &amode) == MPI_SUCCESS && amode == (MPI_MODE_CREATE | MPI_MODE_RDWR),
          "get_amode: CREATE|RDWR");
    CHECK(group_is(fh, MPI_COMM_WORLD), "get_group: MPI_COMM_WORLD's group (MPI_IDENT)");
    CHECK(MPI_File_write_at(fh, (MPI_Offset)rank * N * 4, v, N, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == N,
          "write_at this rank's block");
    CHECK(MPI_File_sync(fh) == MPI_SUCCESS, "sync");
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_File_sync(fh) == MPI_SUCCESS, "sync after the barrier");
    memset(w, 0, sizeof w);
    CHECK(MPI_File_read_at(fh, (MPI_Offset)right * N * 4, w, N, MPI_INT, &st) == MPI_SUCCESS &&
              w[0] == right * 1000 && w[N - 1] == right * 1000 + N - 1,
          "sync-barrier-sync: read_at rank %d's block (%d..%d)", right, w[0], w[N - 1]);
    CHECK(MPI_File_get_size(fh, &sz) == MPI_SUCCESS && sz == end, "get_size: %lld", (long long)sz);
    CHECK(MPI_File_close(&fh) == MPI_SUCCESS, "close (collective)");

    /* APPEND: every file pointer starts at the end. Each rank moves past the lower ranks' part of
     * the trailer and writes 4 ints there. */
    CHECK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_WRONLY | MPI_MODE_APPEND, MPI_INFO_NULL, &fh) == MPI_SUCCESS,
          "open(WORLD, WRONLY|APPEND)");
    CHECK(MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == end, "APPEND: individual pointer at %lld",
          (long long)pos);
    CHECK(MPI_File_get_position_shared(fh, &pos) == MPI_SUCCESS && pos == end, "APPEND: shared pointer at %lld",
          (long long)pos);
    for (int i = 0; i < 4; i++)
        v[i] = 5000 + rank * 10 + i;
    CHECK(MPI_File_seek(fh, (MPI_Offset)rank * 16, MPI_SEEK_CUR) == MPI_SUCCESS &&
              MPI_File_write(fh, v, 4, MPI_INT, &st) == MPI_SUCCESS,
          "seek(CUR) past the lower ranks' trailer, write 4 ints");
    CHECK(MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == end + (rank + 1) * 16,
          "the write advanced the pointer to %lld", (long long)pos);
    MPI_File_close(&fh);
    CHECK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) == MPI_SUCCESS, "open(WORLD, RDONLY)");
    CHECK(MPI_File_get_size(fh, &sz) == MPI_SUCCESS && sz == end + size * 16, "size with the trailer: %lld",
          (long long)sz);
    memset(w, 0, sizeof w);
    CHECK(MPI_File_read_at(fh, end + right * 16, w, 4, MPI_INT, &st) == MPI_SUCCESS &&
              w[0] == 5000 + right * 10 && w[3] == 5000 + right * 10 + 3,
          "rank %d's appended ints read back", right);
    MPI_File_close(&fh);

    /* CREATE|EXCL collectively on a new file. */
    f = fname("excl");
    CHECK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) ==
              MPI_SUCCESS,
          "open(WORLD, CREATE|EXCL|RDWR) of a new file");
    MPI_File_close(&fh);
    if (rank == 0)
        CHECK(MPI_File_delete(f, MPI_INFO_NULL) == MPI_SUCCESS, "MPI_File_delete by rank 0 alone");
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!exists(f), "the deleted file is gone for every rank");

    /* DELETE_ON_CLOSE on MPI_COMM_WORLD. */
    f = fname("doc");
    CHECK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL,
                        &fh) == MPI_SUCCESS,
          "open(WORLD, CREATE|RDWR|DELETE_ON_CLOSE)");
    MPI_File_write_at(fh, rank * 4, &rank, 1, MPI_INT, &st);
    MPI_File_close(&fh);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(!exists(f), "DELETE_ON_CLOSE (WORLD): gone after the collective close");
}

/* set_size, get_size, preallocate, sync on a shared file. */
static void sizes(void)
{
    MPI_File fh;
    MPI_Offset sz = -1;
    const char *f = fname("sizes");

    CHECK(MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh) == MPI_SUCCESS,
          "open the sizes file");
    CHECK(MPI_File_get_size(fh, &sz) == MPI_SUCCESS && sz == 0, "a new file's size is 0");
    CHECK(MPI_File_set_size(fh, 1000) == MPI_SUCCESS && MPI_File_get_size(fh, &sz) == MPI_SUCCESS && sz == 1000,
          "set_size(1000): %lld", (long long)sz);
    CHECK(stat_size(f) == 1000, "stat agrees: 1000");
    CHECK(MPI_File_set_size(fh, 10) == MPI_SUCCESS && MPI_File_get_size(fh, &sz) == MPI_SUCCESS && sz == 10,
          "set_size(10) truncates: %lld", (long long)sz);
    CHECK(MPI_File_preallocate(fh, 4096) == MPI_SUCCESS && MPI_File_get_size(fh, &sz) == MPI_SUCCESS && sz == 4096,
          "preallocate(4096) grows the file: %lld", (long long)sz);
    CHECK(MPI_File_preallocate(fh, 100) == MPI_SUCCESS && MPI_File_get_size(fh, &sz) == MPI_SUCCESS && sz == 4096,
          "preallocate(100) does not shrink it: %lld", (long long)sz);
    CHECK(MPI_File_sync(fh) == MPI_SUCCESS, "sync");
    MPI_File_close(&fh);
    CHECK(stat_size(f) == 4096, "4096 bytes after close");
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        MPI_File_delete(f, MPI_INFO_NULL);
}

/* The individual pointer, views' byte offsets, type extents, status counts, c2f/f2c, info. */
static void pointers_and_counts(void)
{
    MPI_File fh;
    int v[N], w[N], n = -1;
    MPI_Offset pos = -1, off = -1;
    MPI_Status st;
    MPI_Aint ext = -1, lb, mext;
    MPI_Datatype tri, strided, s2;
    const char *f = rank_fname("ptr");

    for (int i = 0; i < N; i++)
        v[i] = i;
    CHECK(MPI_File_open(MPI_COMM_SELF, f, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL,
                        &fh) == MPI_SUCCESS,
          "open a private file");
    CHECK(MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == 0, "the pointer starts at 0");
    CHECK(MPI_File_write(fh, v, 10, MPI_INT, &st) == MPI_SUCCESS && MPI_File_get_position(fh, &pos) == MPI_SUCCESS &&
              pos == 40,
          "write 10 ints: pointer at 40");
    CHECK(MPI_File_write(fh, v + 10, 6, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == 64,
          "write 6 more: pointer at 64");
    CHECK(MPI_File_seek(fh, 0, MPI_SEEK_SET) == MPI_SUCCESS && MPI_File_read(fh, w, 4, MPI_INT, &st) == MPI_SUCCESS &&
              w[0] == 0 && w[3] == 3 && MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == 16,
          "seek(0, SET), read 4: pointer at 16");
    CHECK(MPI_File_seek(fh, 8, MPI_SEEK_CUR) == MPI_SUCCESS && MPI_File_get_position(fh, &pos) == MPI_SUCCESS &&
              pos == 24 && MPI_File_read(fh, w, 1, MPI_INT, &st) == MPI_SUCCESS && w[0] == 6,
          "seek(8, CUR): 24, reads int 6");
    CHECK(MPI_File_seek(fh, -8, MPI_SEEK_END) == MPI_SUCCESS && MPI_File_get_position(fh, &pos) == MPI_SUCCESS &&
              pos == 56 && MPI_File_read(fh, w, 2, MPI_INT, &st) == MPI_SUCCESS && w[0] == 14 && w[1] == 15,
          "seek(-8, END): 56, reads 14 and 15");
    CHECK(MPI_File_seek(fh, -4, MPI_SEEK_CUR) == MPI_SUCCESS && MPI_File_get_position(fh, &pos) == MPI_SUCCESS &&
              pos == 60,
          "seek(-4, CUR): 60");
    CHECK(MPI_File_seek(fh, 100, MPI_SEEK_SET) == MPI_SUCCESS && MPI_File_read(fh, w, 3, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == 0,
          "seek beyond the end, read: count 0");
    CHECK(MPI_File_get_byte_offset(fh, 7, &off) == MPI_SUCCESS && off == 7, "byte view: get_byte_offset(7) = 7");

    /* Status counts: full, short (end of file), none, and a derived type cut in the middle. */
    CHECK(MPI_File_read_at(fh, 0, w, 10, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == 10,
          "read_at 10 ints: count 10");
    CHECK(MPI_Get_elements(&st, MPI_INT, &n) == MPI_SUCCESS && n == 10, "elements 10");
    CHECK(MPI_Get_count(&st, MPI_BYTE, &n) == MPI_SUCCESS && n == 40, "count(MPI_BYTE) 40");
    CHECK(MPI_File_read_at(fh, 48, w, 10, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == 4 && w[0] == 12 && w[3] == 15,
          "short read_at at the end: count %d of 10", n);
    CHECK(MPI_Get_elements(&st, MPI_INT, &n) == MPI_SUCCESS && n == 4, "short read: elements 4");
    CHECK(MPI_File_read_at(fh, 64, w, 10, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == 0,
          "read_at at the end: count 0");
    MPI_Type_contiguous(3, MPI_INT, &tri);
    MPI_Type_commit(&tri);
    CHECK(MPI_File_read_at(fh, 40, w, 2, tri, &st) == MPI_SUCCESS && MPI_Get_count(&st, tri, &n) == MPI_SUCCESS &&
              n == 2,
          "read_at 2 triples of the last 6 ints: count 2");
    CHECK(MPI_File_read_at(fh, 44, w, 2, tri, &st) == MPI_SUCCESS && MPI_Get_count(&st, tri, &n) == MPI_SUCCESS &&
              n == MPI_UNDEFINED,
          "read_at 2 triples of the last 5 ints: count MPI_UNDEFINED");
    CHECK(MPI_Get_elements(&st, tri, &n) == MPI_SUCCESS && n == 5 && w[4] == 15, "... elements 5");
    CHECK(MPI_File_write_at(fh, 64, v, 1, tri, &st) == MPI_SUCCESS && MPI_Get_count(&st, tri, &n) == MPI_SUCCESS &&
              n == 1 && MPI_Get_elements(&st, tri, &n) == MPI_SUCCESS && n == 3,
          "write_at a triple: count 1, elements 3");

    /* A view with a displacement: positions and seeks count etypes, offsets are in the view. */
    CHECK(MPI_File_set_view(fh, 8, MPI_INT, MPI_INT, "native", MPI_INFO_NULL) == MPI_SUCCESS, "set_view(8, INT, INT)");
    CHECK(MPI_File_get_byte_offset(fh, 3, &off) == MPI_SUCCESS && off == 20, "get_byte_offset(3) = 8 + 12: %lld",
          (long long)off);
    CHECK(MPI_File_read(fh, w, 2, MPI_INT, &st) == MPI_SUCCESS && w[0] == 2 && w[1] == 3 &&
              MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == 2,
          "read 2 through the view: ints 2 and 3, position 2 (etypes)");
    CHECK(MPI_File_seek(fh, -1, MPI_SEEK_END) == MPI_SUCCESS && MPI_File_get_position(fh, &pos) == MPI_SUCCESS &&
              pos == 16 && MPI_File_read(fh, w, 1, MPI_INT, &st) == MPI_SUCCESS && w[0] == 2,
          "seek(-1, END) in a 76-byte file: etype 16 (byte 72, the triple's last int)");
    CHECK(MPI_File_read_at(fh, 13, w, 1, MPI_INT, &st) == MPI_SUCCESS && w[0] == 15, "read_at(13): int 15");

    /* A strided filetype: ints at 0 and 8 of every 12 bytes. */
    MPI_Type_vector(2, 1, 2, MPI_INT, &strided);
    MPI_Type_commit(&strided);
    CHECK(MPI_File_set_view(fh, 0, MPI_INT, strided, "native", MPI_INFO_NULL) == MPI_SUCCESS, "strided view");
    CHECK(MPI_File_get_byte_offset(fh, 3, &off) == MPI_SUCCESS && off == 20, "strided: byte offset of etype 3 = %lld",
          (long long)off);
    CHECK(MPI_File_get_byte_offset(fh, 4, &off) == MPI_SUCCESS && off == 24, "strided: byte offset of etype 4 = %lld",
          (long long)off);
    CHECK(MPI_File_read_at(fh, 0, w, 4, MPI_INT, &st) == MPI_SUCCESS && w[0] == 0 && w[1] == 2 && w[2] == 3 &&
              w[3] == 5,
          "strided read: ints 0, 2, 3, 5");

    CHECK(MPI_File_get_type_extent(fh, MPI_INT, &ext) == MPI_SUCCESS && ext == sizeof(int), "type extent INT: %ld",
          (long)ext);
    CHECK(MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext) == MPI_SUCCESS && ext == 8, "type extent DOUBLE: %ld",
          (long)ext);
    MPI_Type_get_extent(strided, &lb, &mext);
    CHECK(MPI_File_get_type_extent(fh, strided, &ext) == MPI_SUCCESS && ext == mext && ext == 12,
          "type extent of the strided type: %ld", (long)ext);
    {
        int bl[2] = {1, 1};
        MPI_Aint d[2] = {0, 8};
        MPI_Datatype t[2] = {MPI_INT, MPI_DOUBLE};
        MPI_Type_create_struct(2, bl, d, t, &s2);
        MPI_Type_commit(&s2);
        MPI_Type_get_extent(s2, &lb, &mext);
        CHECK(MPI_File_get_type_extent(fh, s2, &ext) == MPI_SUCCESS && ext == mext && ext == 16,
              "type extent of {int, double}: %ld", (long)ext);
        MPI_Type_free(&s2);
    }
    MPI_Type_free(&strided);
    MPI_Type_free(&tri);

    /* Fortran handles. */
    MPI_Fint ff = MPI_File_c2f(fh);
    CHECK(MPI_File_f2c(ff) == fh, "MPI_File_f2c(MPI_File_c2f(fh)) == fh");
    CHECK(MPI_File_f2c(MPI_File_c2f(MPI_FILE_NULL)) == MPI_FILE_NULL, "c2f/f2c of MPI_FILE_NULL");

    /* Info: get_info gives a valid info object, set_info takes hints. */
    MPI_Info info = MPI_INFO_NULL, hints;
    int nkeys = -1, ok = 1;
    CHECK(MPI_File_get_info(fh, &info) == MPI_SUCCESS && info != MPI_INFO_NULL, "get_info gives an info object");
    CHECK(MPI_Info_get_nkeys(info, &nkeys) == MPI_SUCCESS && nkeys >= 0, "... with %d keys", nkeys);
    for (int k = 0; k < nkeys; k++) {
        char key[MPI_MAX_INFO_KEY + 1], val[256];
        int len = sizeof val, flag = 0;
        ok &= MPI_Info_get_nthkey(info, k, key) == MPI_SUCCESS &&
              MPI_Info_get_string(info, key, &len, val, &flag) == MPI_SUCCESS && flag;
    }
    CHECK(ok, "every key has a value");
    CHECK(MPI_Info_free(&info) == MPI_SUCCESS && info == MPI_INFO_NULL, "the info object is the caller's: freed");
    MPI_Info_create(&hints);
    MPI_Info_set(hints, "access_style", "read_mostly,sequential");
    CHECK(MPI_File_set_info(fh, hints) == MPI_SUCCESS, "set_info(access_style)");
    MPI_Info_free(&hints);
    CHECK(MPI_File_get_info(fh, &info) == MPI_SUCCESS && info != MPI_INFO_NULL && MPI_Info_free(&info) == MPI_SUCCESS,
          "get_info after set_info");
    CHECK(MPI_File_close(&fh) == MPI_SUCCESS && !exists(f), "close (DELETE_ON_CLOSE)");

    /* Hints at open. */
    MPI_Info_create(&hints);
    MPI_Info_set(hints, "access_style", "write_once");
    MPI_Info_set(hints, "collective_buffering", "true");
    CHECK(MPI_File_open(MPI_COMM_WORLD, fname("hinted"), MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE,
                        hints, &fh) == MPI_SUCCESS,
          "open with hints");
    MPI_Info_free(&hints);
    CHECK(MPI_File_get_info(fh, &info) == MPI_SUCCESS && MPI_Info_free(&info) == MPI_SUCCESS, "get_info, free");
    MPI_File_close(&fh);
}

int main(int argc, char **argv)
{
    io_init(&argc, &argv, "io_basic");
    /* Files of an earlier run. */
    unlink(rank_fname("self"));
    unlink(rank_fname("unique"));
    unlink(rank_fname("ptr"));
    IO_REMOVE_OLD("data.cmp", "excl", "doc", "sizes", "hinted");

    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    CHECK(MPI_File_get_errhandler(MPI_FILE_NULL, &eh) == MPI_SUCCESS && eh == MPI_ERRORS_RETURN,
          "files return errors by default");
    self_modes();
    world_modes();
    sizes();
    pointers_and_counts();
    return io_finish();
}
