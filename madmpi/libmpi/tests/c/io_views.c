/* File views from derived datatypes: a strided vector resized to tile, subarrays (row blocks and
 * a checkerboard of a 2-D array), a darray (block x cyclic(2)), a struct with holes; the
 * displacement; set_view resetting both pointers; get_view's types (equivalent to those given:
 * same size, extents and type map, the combiner checked through MPI_Type_get_envelope, derived
 * ones freed); reads through other views and with derived memory types; independent (_at and
 * individual pointer) and collective (_all, _at_all) calls.
 *
 * MPICH 4.0.2 (ROMIO), where it differs: a read through a noncontiguous view that reaches the
 * end of the file reports the whole request in its status (MPI: what was read; checked on
 * MadMPI's library only); get_view returns a derived type as MPI_Type_contiguous(1, the type)
 * (an equivalent type: MPI asks no more); a write through a view with holes writes
 * uninitialized bytes (0xff seen) into the holes that lay beyond the end of the file, so the
 * struct file is zeroed first.
 *
 * Runs with 1, 2, 4 or 8 processes (the 8 x 12 array is split among them;
 * tests/c_programs_io.rs runs 4). argv[1]: the directory to write into (default: the current
 * one). io_views.*.cmp stay for the harness (compared byte for byte with MPICH's); the rest is
 * deleted. */
#include "io_common.h"
#include <stddef.h>

#define G 8  /* rows of the 2-D array */
#define C 12 /* columns */
#define B 3  /* ints per block of the vector view */
#define K 4  /* blocks per filetype of the vector view */


/* Whether a and b have the same size, bounds and type map (compared by packing one buffer). */
static int same_type(MPI_Datatype a, MPI_Datatype b)
{
    MPI_Count sa, sb;
    MPI_Aint la, ea, lb, eb, tla, tea, tlb, teb;
    MPI_Type_size_x(a, &sa);
    MPI_Type_size_x(b, &sb);
    MPI_Type_get_extent(a, &la, &ea);
    MPI_Type_get_extent(b, &lb, &eb);
    MPI_Type_get_true_extent(a, &tla, &tea);
    MPI_Type_get_true_extent(b, &tlb, &teb);
    if (sa != sb || la != lb || ea != eb || tla != tlb || tea != teb || tla < 0)
        return 0;
    unsigned char *src = malloc(tla + tea + 1), *pa = malloc(sa + 1), *pb = malloc(sa + 1);
    for (MPI_Aint i = 0; i < tla + tea; i++)
        src[i] = (unsigned char)(i * 7 + 3);
    int posa = 0, posb = 0;
    MPI_Pack(src, 1, a, pa, (int)sa + 1, &posa, MPI_COMM_SELF);
    MPI_Pack(src, 1, b, pb, (int)sb + 1, &posb, MPI_COMM_SELF);
    int same = posa == posb && memcmp(pa, pb, posa) == 0;
    free(src);
    free(pa);
    free(pb);
    return same;
}

/* The combiner of t, looking through MPI_Type_contiguous(1, x) wrappers: MPICH's get_view
 * returns its derived types as such a wrapper of the view's type (a new handle the caller
 * frees; MPI asks only for an equivalent type). */
static int combiner_of(MPI_Datatype t)
{
    int ni, na, nd, comb;
    MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (comb == MPI_COMBINER_CONTIGUOUS && ni == 1 && nd == 1) {
        int one;
        MPI_Datatype inner;
        MPI_Type_get_contents(t, 1, 0, 1, &one, NULL, &inner);
        if (one == 1) {
            int c = combiner_of(inner);
            if (c != MPI_COMBINER_NAMED)
                MPI_Type_free(&inner);
            return c;
        }
        if (combiner_of(inner) != MPI_COMBINER_NAMED)
            MPI_Type_free(&inner);
    }
    return comb;
}

/* get_view gives disp, types equivalent to etype and ftype, "native"; frees the derived ones. */
static void check_view(MPI_File fh, MPI_Offset disp, MPI_Datatype etype, MPI_Datatype ftype, int ftype_combiner,
                       const char *what)
{
    MPI_Offset d = -1;
    MPI_Datatype e = MPI_DATATYPE_NULL, f = MPI_DATATYPE_NULL;
    char rep[MPI_MAX_DATAREP_STRING];
    CHECK(MPI_File_get_view(fh, &d, &e, &f, rep) == MPI_SUCCESS && d == disp && strcmp(rep, "native") == 0,
          "%s: get_view gives displacement %lld, \"%s\"", what, (long long)d, rep);
    CHECK(same_type(e, etype) && same_type(f, ftype), "%s: get_view's types are equivalent to the view's", what);
    CHECK(combiner_of(f) == ftype_combiner, "%s: the filetype's combiner is %d", what, ftype_combiner);
    if (combiner_of(e) == MPI_COMBINER_NAMED)
        CHECK(e == etype, "%s: a predefined etype comes back as itself", what);
    else
        CHECK(MPI_Type_free(&e) == MPI_SUCCESS, "%s: the derived etype is the caller's to free", what);
    if (ftype_combiner != MPI_COMBINER_NAMED)
        CHECK(MPI_Type_free(&f) == MPI_SUCCESS, "%s: the derived filetype is the caller's to free", what);
    else
        CHECK(f == ftype, "%s: a predefined filetype comes back as itself", what);
}

/* Interleaved blocks of B ints: a vector resized to tile, independent individual-pointer writes;
 * read back whole, through another rank's view, and into a strided memory type. */
static void vector_view(void)
{
    MPI_File fh;
    MPI_Datatype vec, ftype, memtype;
    MPI_Offset pos = -1;
    MPI_Status st;
    int v[2 * K * B], w[4 * K * B], n, ok = 1, cnt = -1;

    MPI_Type_vector(K, B, B * size, MPI_INT, &vec);
    MPI_Type_create_resized(vec, 0, (MPI_Aint)K * B * size * 4, &ftype);
    MPI_Type_commit(&ftype);
    for (int i = 0; i < 2 * K * B; i++)
        v[i] = rank * 10000 + i;
    MPI_File_open(MPI_COMM_WORLD, fname("vector.cmp"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    check_view(fh, 0, MPI_BYTE, MPI_BYTE, MPI_COMBINER_NAMED, "default view");
    CHECK(MPI_File_set_view(fh, (MPI_Offset)rank * B * 4, MPI_INT, ftype, "native", MPI_INFO_NULL) == MPI_SUCCESS,
          "set_view(rank * 12, INT, resized vector)");
    check_view(fh, (MPI_Offset)rank * B * 4, MPI_INT, ftype, MPI_COMBINER_RESIZED, "vector view");
    CHECK(MPI_File_write(fh, v, K * B, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_File_write(fh, v + K * B, K * B, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == 2 * K * B,
          "two writes of 12 ints through the view: position %lld etypes", (long long)pos);

    int *all = whole(fh, &n);
    CHECK(n == 2 * K * B * size, "the file holds %d ints", n);
    for (int g = 0; g < n; g++) {
        int b = g / B, owner = b % size, i = (b / size) * B + g % B;
        ok &= all[g] == owner * 10000 + i;
    }
    CHECK(ok, "every block is its owner's, in order");
    free(all);

    int next = (rank + 1) % size;
    MPI_File_set_view(fh, (MPI_Offset)next * B * 4, MPI_INT, ftype, "native", MPI_INFO_NULL);
    memset(w, 0, sizeof w);
    CHECK(MPI_File_read_at(fh, 0, w, 4 * K * B, MPI_INT, &st) == MPI_SUCCESS &&
              MPI_Get_count(&st, MPI_INT, &cnt) == MPI_SUCCESS,
          "read_at through rank %d's view: %d ints", next, cnt);
    /* MPICH 4.0.2 (ROMIO's strided read with data sieving) reports the whole request, 48
     * ints, where the file ends after 24: MPI says the status counts what was read, so the
     * count is checked on MadMPI's library only. */
    ok = cnt == 2 * K * B || (!on_madmpi() && cnt == 4 * K * B);
    for (int i = 0; i < 2 * K * B; i++)
        ok &= w[i] == next * 10000 + i;
    CHECK(ok, "... rank %d's ints: %d of them (a short read: the file ends there)", next, cnt);

    /* Memory side: every other int of w. */
    MPI_Type_vector(2 * K * B, 1, 2, MPI_INT, &memtype);
    MPI_Type_commit(&memtype);
    MPI_File_set_view(fh, (MPI_Offset)rank * B * 4, MPI_INT, ftype, "native", MPI_INFO_NULL);
    for (int i = 0; i < 4 * K * B; i++)
        w[i] = -1;
    CHECK(MPI_File_read_at_all(fh, 0, w, 1, memtype, &st) == MPI_SUCCESS, "read_at_all into a strided memory type");
    ok = 1;
    for (int i = 0; i < 4 * K * B; i++)
        ok &= w[i] == (i % 2 ? -1 : rank * 10000 + i / 2);
    CHECK(ok, "... this rank's ints at the even places, the odd ones untouched");
    MPI_File_close(&fh);
    MPI_Type_free(&memtype);
    MPI_Type_free(&vec);
    MPI_Type_free(&ftype);
}

/* Row blocks (write_all from a padded memory subarray) and a checkerboard (write_at_all). */
static void subarray_views(void)
{
    MPI_File fh;
    MPI_Datatype rows, mem, tile;
    MPI_Status st;
    int nr = G / size, n, ok = 1, dims[2] = {0, 0};
    int gs[2] = {G, C}, ls[2] = {nr, C}, starts[2] = {rank * nr, 0};
    int *buf = malloc(sizeof(int) * nr * (C + 2)), *all;

    MPI_Type_create_subarray(2, gs, ls, starts, MPI_ORDER_C, MPI_INT, &rows);
    MPI_Type_commit(&rows);
    {
        int ms[2] = {nr, C + 2}, mstarts[2] = {0, 1};
        MPI_Type_create_subarray(2, ms, ls, mstarts, MPI_ORDER_C, MPI_INT, &mem);
        MPI_Type_commit(&mem);
    }
    for (int i = 0; i < nr; i++)
        for (int j = 0; j < C + 2; j++)
            buf[i * (C + 2) + j] = j == 0 || j == C + 1 ? -7 : (rank + 1) * 1000 + (rank * nr + i) * C + j - 1;
    MPI_File_open(MPI_COMM_WORLD, fname("rows.cmp"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    CHECK(MPI_File_set_view(fh, 0, MPI_INT, rows, "native", MPI_INFO_NULL) == MPI_SUCCESS, "row-block subarray view");
    check_view(fh, 0, MPI_INT, rows, MPI_COMBINER_SUBARRAY, "row blocks");
    CHECK(MPI_File_write_all(fh, buf, 1, mem, &st) == MPI_SUCCESS &&
              MPI_Get_elements(&st, MPI_INT, &n) == MPI_SUCCESS && n == nr * C,
          "write_all of a padded memory subarray: %d ints", n);
    all = whole(fh, &n);
    CHECK(n == G * C, "%d ints", n);
    for (int g = 0; g < G * C; g++)
        ok &= all[g] == (g / C / nr + 1) * 1000 + g;
    CHECK(ok, "every row block is its owner's");
    free(all);
    MPI_File_close(&fh);

    /* Checkerboard on a dims[0] x dims[1] process grid. */
    MPI_Dims_create(size, 2, dims);
    int tr = G / dims[0], tc = C / dims[1], r0 = rank / dims[1] * tr, c0 = rank % dims[1] * tc;
    int ts[2] = {tr, tc}, tst[2] = {r0, c0};
    MPI_Type_create_subarray(2, gs, ts, tst, MPI_ORDER_C, MPI_INT, &tile);
    MPI_Type_commit(&tile);
    for (int i = 0; i < tr; i++)
        for (int j = 0; j < tc; j++)
            buf[i * tc + j] = (rank + 1) * 1000 + (r0 + i) * C + c0 + j;
    MPI_File_open(MPI_COMM_WORLD, fname("checker.cmp"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_set_view(fh, 0, MPI_INT, tile, "native", MPI_INFO_NULL);
    CHECK(MPI_File_write_at_all(fh, 0, buf, tr * tc, MPI_INT, &st) == MPI_SUCCESS,
          "write_at_all of a %dx%d tile at (%d, %d)", tr, tc, r0, c0);
    all = whole(fh, &n);
    ok = n == G * C;
    for (int g = 0; g < G * C && ok; g++) {
        int owner = (g / C) / tr * dims[1] + (g % C) / tc;
        ok &= all[g] == (owner + 1) * 1000 + g;
    }
    CHECK(ok, "every tile is its owner's");
    free(all);
    /* The checkerboard read back through the row-block view, collectively. */
    MPI_File_set_view(fh, 0, MPI_INT, rows, "native", MPI_INFO_NULL);
    memset(buf, 0, sizeof(int) * nr * C);
    CHECK(MPI_File_read_all(fh, buf, nr * C, MPI_INT, &st) == MPI_SUCCESS, "read_all through the row-block view");
    ok = 1;
    for (int k = 0; k < nr * C; k++) {
        int g = rank * nr * C + k, owner = (g / C) / tr * dims[1] + (g % C) / tc;
        ok &= buf[k] == (owner + 1) * 1000 + g;
    }
    CHECK(ok, "... the rows of the checkerboard");
    MPI_File_close(&fh);
    MPI_Type_free(&tile);
    MPI_Type_free(&mem);
    MPI_Type_free(&rows);
    free(buf);
}

/* A darray, block rows x cyclic(2) columns, written and read collectively. */
static void darray_view(void)
{
    MPI_File fh;
    MPI_Datatype da;
    MPI_Status st;
    int gs[2] = {G, C}, distribs[2] = {MPI_DISTRIBUTE_BLOCK, MPI_DISTRIBUTE_CYCLIC};
    int dargs[2] = {MPI_DISTRIBUTE_DFLT_DARG, 2}, ps[2] = {0, 0}, tsize, n, ok = 1;

    MPI_Dims_create(size, 2, ps);
    MPI_Type_create_darray(size, rank, 2, gs, distribs, dargs, ps, MPI_ORDER_C, MPI_INT, &da);
    MPI_Type_commit(&da);
    MPI_Type_size(da, &tsize);
    int nl = tsize / 4, *mine = malloc(sizeof(int) * nl), *back = calloc(nl, sizeof(int)), *all;
    for (int k = 0; k < nl; k++)
        mine[k] = rank * 100000 + k;
    MPI_File_open(MPI_COMM_WORLD, fname("darray.cmp"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    MPI_File_set_view(fh, 0, MPI_INT, da, "native", MPI_INFO_NULL);
    check_view(fh, 0, MPI_INT, da, MPI_COMBINER_DARRAY, "darray");
    CHECK(MPI_File_write_all(fh, mine, nl, MPI_INT, &st) == MPI_SUCCESS, "write_all of %d ints through a darray", nl);
    MPI_File_seek(fh, 0, MPI_SEEK_SET);
    CHECK(MPI_File_read_all(fh, back, nl, MPI_INT, &st) == MPI_SUCCESS && memcmp(mine, back, sizeof(int) * nl) == 0,
          "read_all through the same view gives them back");
    all = whole(fh, &n);
    ok = n == G * C;
    for (int g = 0; g < G * C && ok; g++) {
        int i = g / C, j = g % C, blk = (G + ps[0] - 1) / ps[0], rc = i / blk, cc = (j / 2) % ps[1];
        int lc = 0;
        for (int jj = 0; jj < C; jj++)
            lc += (jj / 2) % ps[1] == cc;
        int li = i - rc * blk, lj = (j / (2 * ps[1])) * 2 + j % 2;
        ok &= all[g] == (rc * ps[1] + cc) * 100000 + li * lc + lj;
    }
    CHECK(ok, "each element is where block x cyclic(2) on a %dx%d grid puts it", ps[0], ps[1]);
    free(all);
    MPI_File_close(&fh);
    MPI_Type_free(&da);
    free(mine);
    free(back);
}

struct rec {
    int a, b;
    double d;
};

/* A struct filetype with holes (etype MPI_BYTE), written with write_at from a struct memory
 * type, read back raw and through the view into contiguous bytes. */
static void struct_view(void)
{
    MPI_File fh;
    MPI_Datatype ft0, ftype, mt;
    MPI_Status st;
    struct rec r[3];
    int bl[2] = {2, 1}, n, ok = 1;
    MPI_Aint fd[2] = {0, 16}, md[2] = {offsetof(struct rec, a), offsetof(struct rec, d)};
    MPI_Datatype t[2] = {MPI_INT, MPI_DOUBLE};
    unsigned char raw[48];

    MPI_Type_create_struct(2, bl, fd, t, &ft0);
    MPI_Type_create_resized(ft0, 0, 32, &ftype);
    MPI_Type_commit(&ftype);
    MPI_Type_create_struct(2, bl, md, t, &mt);
    MPI_Type_commit(&mt);
    for (int k = 0; k < 3; k++)
        r[k] = (struct rec){rank * 100 + k, -(rank * 100 + k), rank + k / 4.0};
    MPI_File_open(MPI_COMM_WORLD, fname("struct.cmp"), MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    /* Zeros first where the records go: MPICH's writes through a view with holes read, patch
     * and write back whole stretches of the file (data sieving), and beyond the end of the file
     * they write the holes uninitialized (0xff bytes were seen). */
    memset(raw, 0, sizeof raw);
    MPI_File_write_at(fh, (MPI_Offset)rank * 96, raw, 48, MPI_BYTE, &st);
    MPI_File_write_at(fh, (MPI_Offset)rank * 96 + 48, raw, 40, MPI_BYTE, &st);
    MPI_File_set_view(fh, (MPI_Offset)rank * 96, MPI_BYTE, ftype, "native", MPI_INFO_NULL);
    check_view(fh, (MPI_Offset)rank * 96, MPI_BYTE, ftype, MPI_COMBINER_RESIZED, "struct with holes");
    CHECK(MPI_File_write_at(fh, 0, r, 3, mt, &st) == MPI_SUCCESS && MPI_Get_count(&st, mt, &n) == MPI_SUCCESS && n == 3,
          "write_at 3 records through the struct view");
    MPI_File_seek(fh, 0, MPI_SEEK_SET);
    CHECK(MPI_File_read(fh, raw, 48, MPI_BYTE, &st) == MPI_SUCCESS && MPI_Get_count(&st, MPI_BYTE, &n) == MPI_SUCCESS &&
              n == 48,
          "read 48 bytes through the view (the holes skipped): %d", n);
    for (int k = 0; k < 3; k++) {
        int ab[2];
        double d;
        memcpy(ab, raw + 16 * k, 8);
        memcpy(&d, raw + 16 * k + 8, 8);
        ok &= ab[0] == r[k].a && ab[1] == r[k].b && d == r[k].d;
    }
    CHECK(ok, "... the records packed");
    int *all = whole(fh, &n);
    CHECK(n == (size * 96 - 8) / 4, "the file ends after the last double: %d ints", n);
    ok = 1;
    for (int o = 0; o < size; o++)
        for (int k = 0; k < 3; k++) {
            int *p = all + (o * 96 + k * 32) / 4;
            double d;
            memcpy(&d, p + 4, 8);
            ok &= p[0] == o * 100 + k && p[1] == -(o * 100 + k) && p[2] == 0 && p[3] == 0 && d == o + k / 4.0 &&
                  (o * 96 + k * 32 + 24 >= n * 4 || (p[6] == 0 && p[7] == 0));
        }
    CHECK(ok, "raw: records at 32-byte strides, holes zero");
    free(all);
    MPI_File_close(&fh);
    MPI_Type_free(&ft0);
    MPI_Type_free(&ftype);
    MPI_Type_free(&mt);
}

/* set_view resets the individual and shared pointers; predefined types come back as such. */
static void view_resets_pointers(void)
{
    MPI_File fh;
    MPI_Offset pos = -1, sh = -1;
    const char *f = fname("reset");
    MPI_File_open(MPI_COMM_WORLD, f, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
    MPI_File_seek(fh, 5 + rank, MPI_SEEK_SET);
    MPI_File_seek_shared(fh, 7, MPI_SEEK_SET);
    CHECK(MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == 5 + rank &&
              MPI_File_get_position_shared(fh, &sh) == MPI_SUCCESS && sh == 7,
          "pointers at %lld and %lld", (long long)pos, (long long)sh);
    CHECK(MPI_File_set_view(fh, 4, MPI_INT, MPI_INT, "native", MPI_INFO_NULL) == MPI_SUCCESS &&
              MPI_File_get_position(fh, &pos) == MPI_SUCCESS && pos == 0 &&
              MPI_File_get_position_shared(fh, &sh) == MPI_SUCCESS && sh == 0,
          "set_view resets both pointers to 0");
    check_view(fh, 4, MPI_INT, MPI_INT, MPI_COMBINER_NAMED, "(4, INT, INT)");
    MPI_File_close(&fh);
}

int main(int argc, char **argv)
{
    io_init(&argc, &argv, "io_views");
    CHECK(G % size == 0, "%d processes split the %d rows", size, G);
    IO_REMOVE_OLD("vector.cmp", "rows.cmp", "checker.cmp", "darray.cmp", "struct.cmp", "reset");
    vector_view();
    subarray_views();
    darray_view();
    struct_view();
    view_resets_pointers();
    return io_finish();
}
