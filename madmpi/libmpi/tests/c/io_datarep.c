/* Data representations of file views: "native" (the file holds the memory bytes), "internal"
 * (ints and doubles come back; get_view names it), "external32" (ints and doubles written
 * collectively: the file's bytes, read through a native view, are big-endian, as hand-made and
 * as MPI_Pack_external's; they read back through external32; get_view names it;
 * get_type_extent gives the external32 sizes; padded {char, int, double} structs take 13 bytes
 * each), and a representation registered with MPI_Register_datarep whose conversion functions
 * byte-swap ints (called with their extra state; the file holds the swapped bytes; reads convert
 * back).
 *
 * MPICH 4.0.2 (ROMIO) refuses conversion functions (MPI_Register_datarep fails with
 * MPI_ERR_CONVERSION, "Read and Write datarep conversions are currently not supported") and any
 * registered representation in MPI_File_set_view (MPI_ERR_UNSUPPORTED_DATAREP): MPI requires
 * both, so the user representation is checked on MadMPI's library only; so are the structs in
 * external32 (MPICH dies of an illegal instruction packing a struct type to external32), "internal"
 * as get_view's name (MPICH says "native") and the external32 extent of long (4 bytes; MPICH gives
 * native extents under every representation).
 *
 * Runs with any number of processes (1, 2 and 4 checked; tests/c_programs_io.rs runs 4).
 * argv[1]: the directory to write into (default: the current one). io_datarep.native.cmp and
 * io_datarep.x32.cmp stay for the harness to compare with MPICH's; the others are deleted. */
#include "io_common.h"
#include <stddef.h>
#include <stdint.h>

#define NI 8 /* ints per rank */
#define ND 4 /* doubles per rank */
#define NS 3 /* structs per rank */


struct s {
    char c;
    int i;
    double d;
};

static void data(int *ints, double *dbls, struct s *ss)
{
    for (int k = 0; k < NI; k++)
        ints[k] = (k % 2 ? -1 : 1) * (rank * 0x01020304 + k * 0x1111 + 1);
    for (int k = 0; k < ND; k++)
        dbls[k] = (rank + 1) * 1.5e10 + k / 3.0;
    for (int k = 0; k < NS; k++)
        ss[k] = (struct s){(char)('a' + rank + k), -rank * 100 - k, k - rank * 0.25};
}

/* "native": the file holds the memory bytes. */
static void native(void)
{
    MPI_File fh;
    MPI_Status st;
    int ints[NI], back[NI];
    double dbls[ND];
    struct s ss[NS];

    data(ints, dbls, ss);
    MPI_File_open(MPI_COMM_WORLD, fname("native.cmp"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(MPI_File_set_view(fh, (MPI_Offset)rank * NI * 4, MPI_INT, MPI_INT, "native", MPI_INFO_NULL) == MPI_SUCCESS &&
              MPI_File_write_all(fh, ints, NI, MPI_INT, &st) == MPI_SUCCESS,
          "native: write_all %d ints", NI);
    settle_plain(fh, MPI_BYTE);
    CHECK(MPI_File_read_at(fh, (MPI_Offset)rank * NI * 4, back, NI * 4, MPI_BYTE, &st) == MPI_SUCCESS &&
              memcmp(back, ints, sizeof ints) == 0,
          "native: the file holds the memory bytes");
    MPI_File_close(&fh);
}

/* "internal": values come back (the bytes are the implementation's). */
static void internal(void)
{
    MPI_File fh;
    MPI_Status st;
    int ints[NI], ib[NI];
    double dbls[ND], db[ND];
    struct s ss[NS];

    data(ints, dbls, ss);
    const char *f = rank_fname("internal");
    unlink(f);
    MPI_File_open(MPI_COMM_SELF, f, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
    CHECK(MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "internal", MPI_INFO_NULL) == MPI_SUCCESS,
          "set_view(\"internal\")");
    CHECK(MPI_File_write(fh, ints, NI, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_File_write(fh, dbls, ND, MPI_DOUBLE, &st) == MPI_SUCCESS,
          "internal: write ints and doubles");
    MPI_File_seek(fh, 0, MPI_SEEK_SET);
    CHECK(MPI_File_read(fh, ib, NI, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_File_read(fh, db, ND, MPI_DOUBLE, &st) == MPI_SUCCESS && memcmp(ib, ints, sizeof ib) == 0 &&
              memcmp(db, dbls, sizeof db) == 0,
          "internal: they read back");
    char rep[MPI_MAX_DATAREP_STRING];
    MPI_Offset d;
    MPI_Datatype e, ft;
    /* MPICH 4.0.2 names "internal" "native" (its internal representation is native): not the
     * name set, checked on MadMPI's library only. */
    CHECK(MPI_File_get_view(fh, &d, &e, &ft, rep) == MPI_SUCCESS &&
              (strcmp(rep, "internal") == 0 || (!on_madmpi() && strcmp(rep, "native") == 0)),
          "get_view: \"%s\"", rep);
    MPI_File_close(&fh);
}

/* Big-endian bytes of the low n bytes of v. */
static unsigned char *put_be(unsigned char *at, uint64_t v, int n)
{
    for (int k = 0; k < n; k++)
        at[k] = (unsigned char)(v >> (8 * (n - 1 - k)));
    return at + n;
}

/* external32: a region per rank of NI ints and ND doubles, written collectively, compared with
 * hand-made big-endian bytes and with MPI_Pack_external's; NS padded structs (13 bytes each in
 * external32) in another file. */
static void external32(void)
{
    MPI_File fh;
    MPI_Status st;
    int ints[NI], ib[NI];
    double dbls[ND], db[ND];
    struct s ss[NS], sb[NS];
    MPI_Aint ext = -1, xs = 0, region = NI * 4 + ND * 8;
    MPI_Count extc = -1;
    unsigned char want[NI * 4 + ND * 8], packed[NI * 4 + ND * 8], raw[NI * 4 + ND * 8 + NS * 13], *p = want;

    data(ints, dbls, ss);
    for (int k = 0; k < NI; k++)
        p = put_be(p, (uint32_t)ints[k], 4);
    for (int k = 0; k < ND; k++) {
        uint64_t b;
        memcpy(&b, &dbls[k], 8);
        p = put_be(p, b, 8);
    }
    MPI_Pack_external("external32", ints, NI, MPI_INT, packed, region, &xs);
    MPI_Pack_external("external32", dbls, ND, MPI_DOUBLE, packed, region, &xs);
    CHECK(xs == region && memcmp(want, packed, region) == 0, "MPI_Pack_external gives the big-endian bytes");

    MPI_File_open(MPI_COMM_WORLD, fname("x32.cmp"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(MPI_File_set_view(fh, rank * region, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL) == MPI_SUCCESS,
          "set_view(\"external32\")");
    {
        char rep[MPI_MAX_DATAREP_STRING];
        MPI_Offset d = -1;
        MPI_Datatype e, ft;
        CHECK(MPI_File_get_view(fh, &d, &e, &ft, rep) == MPI_SUCCESS && strcmp(rep, "external32") == 0 &&
                  d == rank * region && e == MPI_BYTE && ft == MPI_BYTE,
              "get_view: \"%s\"", rep);
    }
    CHECK(MPI_File_get_type_extent(fh, MPI_INT, &ext) == MPI_SUCCESS && ext == 4, "external32 extent INT: %ld",
          (long)ext);
    CHECK(MPI_File_get_type_extent(fh, MPI_DOUBLE, &ext) == MPI_SUCCESS && ext == 8, "external32 extent DOUBLE: %ld",
          (long)ext);
    CHECK(MPI_File_get_type_extent(fh, MPI_SHORT, &ext) == MPI_SUCCESS && ext == 2, "external32 extent SHORT: %ld",
          (long)ext);
    /* external32's long is 4 bytes (MPI 4.0, table 14.2); MPICH 4.0.2 gives the native extent
     * of every type (ROMIO: "FIXME: handle other file data representations"), 8 here. */
    CHECK(MPI_File_get_type_extent(fh, MPI_LONG, &ext) == MPI_SUCCESS && (ext == 4 || (!on_madmpi() && ext == 8)),
          "external32 extent LONG: %ld", (long)ext);
    CHECK(MPI_File_get_type_extent(fh, MPI_UNSIGNED_LONG, &ext) == MPI_SUCCESS &&
              (ext == 4 || (!on_madmpi() && ext == 8)),
          "external32 extent UNSIGNED_LONG: %ld", (long)ext);
    CHECK(MPI_File_get_type_extent(fh, MPI_LONG_LONG, &ext) == MPI_SUCCESS && ext == 8,
          "external32 extent LONG_LONG: %ld", (long)ext);
    CHECK(MPI_File_get_type_extent(fh, MPI_LONG_DOUBLE, &ext) == MPI_SUCCESS && ext == 16,
          "external32 extent LONG_DOUBLE: %ld", (long)ext);
    CHECK(MPI_File_get_type_extent_c(fh, MPI_DOUBLE, &extc) == MPI_SUCCESS && extc == 8,
          "external32 extent DOUBLE (_c): %lld", (long long)extc);

    CHECK(MPI_File_write_at_all(fh, 0, ints, NI, MPI_INT, &st) == MPI_SUCCESS, "write_at_all %d ints", NI);
    CHECK(MPI_File_write_at_all(fh, NI * 4, dbls, ND, MPI_DOUBLE, &st) == MPI_SUCCESS, "write_at_all %d doubles", ND);
    memset(ib, 0, sizeof ib);
    memset(db, 0, sizeof db);
    CHECK(MPI_File_read_at_all(fh, 0, ib, NI, MPI_INT, &st) == MPI_SUCCESS && memcmp(ib, ints, sizeof ib) == 0,
          "the ints read back through external32");
    CHECK(MPI_File_read_at_all(fh, NI * 4, db, ND, MPI_DOUBLE, &st) == MPI_SUCCESS && memcmp(db, dbls, sizeof db) == 0,
          "the doubles read back");
    settle_plain(fh, MPI_BYTE);
    MPI_Offset fsz = -1;
    CHECK(MPI_File_get_size(fh, &fsz) == MPI_SUCCESS && fsz == size * region, "%d regions of %ld bytes", size,
          (long)region);
    CHECK(MPI_File_read_at(fh, rank * region, raw, (int)region, MPI_BYTE, &st) == MPI_SUCCESS &&
              memcmp(raw, want, region) == 0,
          "read raw through a native view: big-endian ints and IEEE doubles");
    MPI_File_close(&fh);

    /* Structs: MPICH 4.0.2 dies of an illegal instruction in MPI_Pack_external_size of a struct
     * type (see external32.c), which its external32 views use: MadMPI's library only. */
    if (!on_madmpi())
        return;
    MPI_Datatype stype;
    int bl[3] = {1, 1, 1};
    MPI_Aint disps[3] = {offsetof(struct s, c), offsetof(struct s, i), offsetof(struct s, d)};
    MPI_Datatype types[3] = {MPI_CHAR, MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(3, bl, disps, types, &stype);
    MPI_Type_commit(&stype);
    p = want;
    for (int k = 0; k < NS; k++) {
        uint64_t b;
        memcpy(&b, &ss[k].d, 8);
        p = put_be(put_be(put_be(p, (unsigned char)ss[k].c, 1), (uint32_t)ss[k].i, 4), b, 8);
    }
    MPI_File_open(MPI_COMM_SELF, rank_fname("x32struct"), MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                  MPI_INFO_NULL, &fh);
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "external32", MPI_INFO_NULL);
    CHECK(MPI_File_write(fh, ss, NS, stype, &st) == MPI_SUCCESS, "write %d {char, int, double} structs", NS);
    memset(sb, 0, sizeof sb);
    int ok = MPI_File_read_at(fh, 0, sb, NS, stype, &st) == MPI_SUCCESS;
    for (int k = 0; k < NS; k++)
        ok &= sb[k].c == ss[k].c && sb[k].i == ss[k].i && sb[k].d == ss[k].d;
    CHECK(ok, "the structs read back");
    MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
    CHECK(MPI_File_get_size(fh, &fsz) == MPI_SUCCESS && fsz == NS * 13 &&
              MPI_File_read_at(fh, 0, raw, NS * 13, MPI_BYTE, &st) == MPI_SUCCESS && memcmp(raw, want, NS * 13) == 0,
          "the file holds them packed, 13 big-endian bytes each");
    MPI_File_close(&fh);
    MPI_Type_free(&stype);
}

static int conversions, last_extra;

static int32_t swap32(int32_t v)
{
    uint32_t u = (uint32_t)v;
    return (int32_t)((u >> 24) | ((u >> 8) & 0xff00) | ((u << 8) & 0xff0000) | (u << 24));
}

/* A conversion of count ints of type t from `from` to `to`, byte-swapped; counted, with its extra
 * state kept. */
static int swap_ints(MPI_Datatype t, void *to, const void *from, int count, void *extra)
{
    if (t != MPI_INT)
        return MPI_ERR_TYPE;
    conversions++;
    last_extra = *(int *)extra;
    for (int i = 0; i < count; i++) {
        int32_t v;
        memcpy(&v, (const char *)from + 4 * i, 4);
        v = swap32(v);
        memcpy((char *)to + 4 * i, &v, 4);
    }
    return MPI_SUCCESS;
}

/* File to memory: count ints at userbuf[position...]. */
static int swap_read(void *userbuf, MPI_Datatype t, int count, void *filebuf, MPI_Offset position, void *extra)
{
    return swap_ints(t, (char *)userbuf + 4 * position, filebuf, count, extra);
}

/* Memory to file. */
static int swap_write(void *userbuf, MPI_Datatype t, int count, void *filebuf, MPI_Offset position, void *extra)
{
    return swap_ints(t, filebuf, (char *)userbuf + 4 * position, count, extra);
}

static int swap_extent(MPI_Datatype t, MPI_Aint *extent, void *extra)
{
    MPI_Aint lb;
    (void)extra;
    return MPI_Type_get_extent(t, &lb, extent);
}

/* A user representation storing ints byte-swapped. */
static void user_datarep(void)
{
    static int extra = 4242;
    MPI_File fh;
    MPI_Status st;
    int ints[NI], ib[NI], n = -1;
    double dbls[ND];
    struct s ss[NS];
    unsigned char raw[NI * 4], want[NI * 4];
    MPI_Aint ext = -1, xs = 0;

    data(ints, dbls, ss);
    MPI_Pack_external("external32", ints, NI, MPI_INT, want, sizeof want, &xs);
    CHECK(MPI_Register_datarep("io_swap", swap_read, swap_write, swap_extent, &extra) == MPI_SUCCESS,
          "MPI_Register_datarep(\"io_swap\") with conversion functions");
    MPI_File_open(MPI_COMM_WORLD, fname("swap"), MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                  MPI_INFO_NULL, &fh);
    CHECK(MPI_File_set_view(fh, (MPI_Offset)rank * NI * 4, MPI_INT, MPI_INT, "io_swap", MPI_INFO_NULL) == MPI_SUCCESS,
          "set_view(\"io_swap\")");
    CHECK(MPI_File_get_type_extent(fh, MPI_INT, &ext) == MPI_SUCCESS && ext == 4,
          "get_type_extent through the extent function: %ld", (long)ext);
    CHECK(MPI_File_write_all(fh, ints, NI, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_Get_count(&st, MPI_INT, &n) == MPI_SUCCESS && n == NI,
          "write_all %d ints", n);
    CHECK(conversions > 0 && last_extra == 4242, "the write conversion was called (%d calls) with the extra state",
          conversions);
    MPI_File_seek(fh, 0, MPI_SEEK_SET);
    int before = conversions;
    CHECK(MPI_File_read_all(fh, ib, NI, MPI_INT, &st) == MPI_SUCCESS && memcmp(ib, ints, sizeof ib) == 0,
          "read_all converts them back");
    CHECK(conversions > before, "the read conversion was called");
    settle_plain(fh, MPI_BYTE);
    CHECK(MPI_File_read_at(fh, (MPI_Offset)rank * NI * 4, raw, NI * 4, MPI_BYTE, &st) == MPI_SUCCESS &&
              memcmp(raw, want, sizeof raw) == 0,
          "the file holds the ints byte-swapped (big-endian here)");
    MPI_File_close(&fh);
}

int main(int argc, char **argv)
{
    io_init(&argc, &argv, "io_datarep");
    IO_REMOVE_OLD("native.cmp", "x32.cmp", "swap");
    native();
    internal();
    external32();
    if (on_madmpi())
        user_datarep();
    else
        CHECK(1, "MPICH's library: the user representation is not checked (it refuses conversion functions)");
    return io_finish();
}
