/* Cartesian topologies: MPI_Dims_create (properties, the standard's examples, fixed entries,
 * errors), MPI_Cart_create over a dims_create grid (2-D, periodic in one dimension), over a grid
 * smaller than the job (the ranks beyond get MPI_COMM_NULL) and without dimensions, then
 * MPI_Cart_coords / _rank / _shift / _get / _sub / _map, MPI_Cartdim_get and MPI_Topo_test
 * (also on a duplicate), each compared with coordinates computed here (row-major), and the
 * argument errors under MPI_ERRORS_RETURN. Runs with any number of processes; built against
 * madmpi's mpi.h and MPICH's by tests/c_programs.rs. */
#include "check.h"

static int rank, size;

static void dims(void)
{
    int d2[2] = {0, 0}, d3[3] = {0, 3, 0}, d1[1] = {0};
    /* The standard's examples (MPI 4.0 §8.5.2). */
    CHECK(MPI_Dims_create(6, 2, d2) == MPI_SUCCESS && d2[0] == 3 && d2[1] == 2, "dims_create(6, 2) = 3 x 2");
    int e[2] = {0, 0};
    CHECK(MPI_Dims_create(7, 2, e) == MPI_SUCCESS && e[0] == 7 && e[1] == 1, "dims_create(7, 2) = 7 x 1");
    CHECK(MPI_Dims_create(6, 3, d3) == MPI_SUCCESS && d3[0] == 2 && d3[1] == 3 && d3[2] == 1,
          "dims_create(6, {0, 3, 0}) = 2 x 3 x 1");
    CHECK(MPI_Dims_create(size, 1, d1) == MPI_SUCCESS && d1[0] == size, "dims_create(size, 1)");
    CHECK(MPI_Dims_create(1, 0, d1) == MPI_SUCCESS, "no dimensions");
    /* Properties for many inputs: the product, non-increasing free entries, fixed ones kept. */
    for (int n = 1; n <= 300; n++)
        for (int nd = 1; nd <= 4; nd++) {
            int d[4] = {0, 0, 0, 0}, fixed = (n % 2 == 0 && nd > 1) ? 2 : 0;
            d[nd - 1] = fixed;
            int rc = MPI_Dims_create(n, nd, d), prod = 1, ok = rc == MPI_SUCCESS;
            for (int i = 0; i < nd; i++) {
                prod *= d[i];
                ok = ok && d[i] >= 1;
            }
            for (int i = 0; i + 1 < nd - (fixed != 0); i++)
                ok = ok && d[i] >= d[i + 1];
            ok = ok && prod == n && (!fixed || d[nd - 1] == 2);
            if (!ok)
                CHECK(0, "dims_create(%d, %d) = %d %d %d %d", n, nd, d[0], d[1], d[2], d[3]);
        }
    CHECK(1, "dims_create: products, order and fixed entries for 1,200 inputs");
    int bad[2] = {2, 0};
    CHECK_ERR(MPI_Dims_create(7, 2, bad), MPI_ERR_DIMS, "divide");
    int neg[2] = {-1, 0};
    CHECK_ERR(MPI_Dims_create(6, 2, neg), MPI_ERR_DIMS, "-1");
    CHECK_ERR(MPI_Dims_create(-1, 2, d2), MPI_ERR_ARG, "nodes");
    CHECK_ERR(MPI_Dims_create(6, -1, d2), MPI_ERR_ARG, "negative");
    CHECK_ERR(MPI_Dims_create(6, 1, NULL), MPI_ERR_ARG, "null");
}

/* Row-major coordinates of r in dims. */
static void coords_of(int r, int nd, const int *d, int *c)
{
    for (int i = nd - 1; i >= 0; i--) {
        c[i] = r % d[i];
        r /= d[i];
    }
}

static void grid(void)
{
    int d[2] = {0, 0}, periods[2] = {1, 0}, c[2], t;
    MPI_Dims_create(size, 2, d);
    MPI_Comm cart;
    CHECK(MPI_Cart_create(MPI_COMM_WORLD, 2, d, periods, 1, &cart) == MPI_SUCCESS && cart != MPI_COMM_NULL,
          "cart_create %d x %d", d[0], d[1]);
    int cr, cs;
    MPI_Comm_rank(cart, &cr);
    MPI_Comm_size(cart, &cs);
    CHECK(cs == size && cr == rank, "the grid keeps the ranks (no reordering)");
    CHECK(MPI_Topo_test(cart, &t) == MPI_SUCCESS && t == MPI_CART, "topo_test: MPI_CART");
    CHECK(MPI_Cartdim_get(cart, &t) == MPI_SUCCESS && t == 2, "cartdim_get: 2");
    int gd[3] = {-1, -1, -1}, gp[3] = {-1, -1, -1}, gc[3] = {-1, -1, -1};
    coords_of(rank, 2, d, c);
    CHECK(MPI_Cart_get(cart, 3, gd, gp, gc) == MPI_SUCCESS && gd[0] == d[0] && gd[1] == d[1] && gp[0] == 1 &&
              gp[1] == 0 && gc[0] == c[0] && gc[1] == c[1] && gd[2] == -1,
          "cart_get: (%d, %d) at (%d, %d)", gd[0], gd[1], gc[0], gc[1]);
    for (int r = 0; r < size; r++) {
        int want[2], got[2], back = -1;
        coords_of(r, 2, d, want);
        CHECK(MPI_Cart_coords(cart, r, 2, got) == MPI_SUCCESS && got[0] == want[0] && got[1] == want[1] &&
                  MPI_Cart_rank(cart, got, &back) == MPI_SUCCESS && back == r,
              "cart_coords and cart_rank of %d", r);
    }
    /* Periodic wrap in dimension 0, not in dimension 1. */
    int wrap[2] = {c[0] - d[0], c[1]}, r2 = -1;
    CHECK(MPI_Cart_rank(cart, wrap, &r2) == MPI_SUCCESS && r2 == rank, "cart_rank wraps dimension 0");
    wrap[0] = c[0] + 5 * d[0];
    CHECK(MPI_Cart_rank(cart, wrap, &r2) == MPI_SUCCESS && r2 == rank, "cart_rank wraps far");
    int off[2] = {c[0], d[1]};
    CHECK_ERR(MPI_Cart_rank(cart, off, &r2), MPI_ERR_ARG, "outside");
    /* Shifts, against coordinates computed here. */
    for (int disp = -3; disp <= 3; disp++) {
        int src, dst, ws, wd;
        CHECK(MPI_Cart_shift(cart, 0, disp, &src, &dst) == MPI_SUCCESS, "shift dim 0 by %d", disp);
        int a[2] = {((c[0] - disp) % d[0] + d[0]) % d[0], c[1]}, b[2] = {((c[0] + disp) % d[0] + d[0]) % d[0], c[1]};
        ws = a[0] * d[1] + a[1];
        wd = b[0] * d[1] + b[1];
        CHECK(src == ws && dst == wd, "periodic shift by %d: %d -> %d (want %d, %d)", disp, src, dst, ws, wd);
        CHECK(MPI_Cart_shift(cart, 1, disp, &src, &dst) == MPI_SUCCESS, "shift dim 1 by %d", disp);
        ws = (c[1] - disp >= 0 && c[1] - disp < d[1]) ? c[0] * d[1] + c[1] - disp : MPI_PROC_NULL;
        wd = (c[1] + disp >= 0 && c[1] + disp < d[1]) ? c[0] * d[1] + c[1] + disp : MPI_PROC_NULL;
        CHECK(src == ws && dst == wd, "non-periodic shift by %d: %d -> %d (want %d, %d)", disp, src, dst, ws, wd);
    }
    int src, dst;
    CHECK_ERR(MPI_Cart_shift(cart, 2, 1, &src, &dst), MPI_ERR_ARG, "direction");
    CHECK_ERR(MPI_Cart_coords(cart, size, 2, c), MPI_ERR_RANK, "rank");
    CHECK_ERR(MPI_Cart_coords(cart, 0, 1, c), MPI_ERR_ARG, "maxdims");
    if (on_madmpi()) /* MPICH 4.0.2 writes past arrays of maxdims entries */
        CHECK_ERR(MPI_Cart_get(cart, 1, gd, gp, gc), MPI_ERR_ARG, "maxdims");
    CHECK_ERR(MPI_Graphdims_get(cart, &src, &dst), MPI_ERR_TOPOLOGY, "graph");
    /* Sub-grids: rows (dimension 1 kept) and columns. */
    for (int k = 0; k < 2; k++) {
        int remain[2] = {k == 0, k == 1}, sr, ss, sd = -1, sdims[1], sper[1], sco[1];
        MPI_Comm sub;
        CHECK(MPI_Cart_sub(cart, remain, &sub) == MPI_SUCCESS && sub != MPI_COMM_NULL, "cart_sub keeping %d", k);
        MPI_Comm_rank(sub, &sr);
        MPI_Comm_size(sub, &ss);
        CHECK(ss == d[k] && sr == c[k] && MPI_Cartdim_get(sub, &sd) == MPI_SUCCESS && sd == 1 &&
                  MPI_Cart_get(sub, 1, sdims, sper, sco) == MPI_SUCCESS && sdims[0] == d[k] && sper[0] == (k == 0) &&
                  sco[0] == c[k],
              "sub-grid %d: rank %d of %d", k, sr, ss);
        /* Its members are this rank's row or column: check with an allgather of world ranks. */
        int *w = malloc(ss * sizeof(int)), ok = 1;
        MPI_Allgather(&rank, 1, MPI_INT, w, 1, MPI_INT, sub);
        for (int i = 0; i < ss; i++) {
            int want[2] = {c[0], c[1]};
            want[k] = i;
            ok = ok && w[i] == want[0] * d[1] + want[1];
        }
        CHECK(ok, "sub-grid %d holds this rank's %s", k, k ? "row" : "column");
        free(w);
        MPI_Comm_free(&sub);
    }
    int none[2] = {0, 0}, n0 = -1;
    MPI_Comm point;
    /* MPI 4.0 §8.5.7: every process gets a grid of one point (MPICH 4.0.2 gives some of them
     * MPI_COMM_NULL). */
    if (on_madmpi()) {
        CHECK(MPI_Cart_sub(cart, none, &point) == MPI_SUCCESS && MPI_Comm_size(point, &n0) == MPI_SUCCESS && n0 == 1 &&
                  MPI_Cartdim_get(point, &t) == MPI_SUCCESS && t == 0,
              "cart_sub keeping nothing: one point");
        MPI_Comm_free(&point);
    }
    /* A duplicate keeps the topology. */
    MPI_Comm dup;
    MPI_Comm_dup(cart, &dup);
    CHECK(MPI_Topo_test(dup, &t) == MPI_SUCCESS && t == MPI_CART && MPI_Cart_shift(dup, 1, 1, &src, &dst) == MPI_SUCCESS,
          "a duplicate keeps the grid");
    MPI_Comm_free(&dup);
    MPI_Comm_free(&cart);
}

static void smaller_grids(void)
{
    int d[1] = {size > 1 ? size - 1 : 1}, p[1] = {0}, nr = -2, t;
    MPI_Comm cart;
    CHECK(MPI_Cart_create(MPI_COMM_WORLD, 1, d, p, 0, &cart) == MPI_SUCCESS, "cart_create of %d points", d[0]);
    CHECK((rank < d[0]) == (cart != MPI_COMM_NULL), "ranks beyond the grid get MPI_COMM_NULL");
    if (cart != MPI_COMM_NULL)
        MPI_Comm_free(&cart);
    CHECK(MPI_Cart_map(MPI_COMM_WORLD, 1, d, p, &nr) == MPI_SUCCESS && nr == (rank < d[0] ? rank : MPI_UNDEFINED),
          "cart_map: %d", nr);
    CHECK(MPI_Cart_create(MPI_COMM_WORLD, 0, d, p, 0, &cart) == MPI_SUCCESS, "cart_create without dimensions");
    CHECK((rank == 0) == (cart != MPI_COMM_NULL), "one point: rank 0 only");
    if (cart != MPI_COMM_NULL) {
        int r = -1, s = -1;
        CHECK(MPI_Comm_size(cart, &s) == MPI_SUCCESS && s == 1 && MPI_Cartdim_get(cart, &t) == MPI_SUCCESS && t == 0 &&
                  MPI_Cart_rank(cart, NULL, &r) == MPI_SUCCESS && r == 0,
              "the grid of no dimension");
        CHECK_ERR(MPI_Cart_shift(cart, 0, 1, &r, &s), MPI_ERR_TOPOLOGY, "dimensions");
        MPI_Comm_free(&cart);
    }
    int big[1] = {size + 1};
    CHECK_ERR(MPI_Cart_create(MPI_COMM_WORLD, 1, big, p, 0, &cart), MPI_ERR_ARG, "grid");
    CHECK_ERR(MPI_Cart_map(MPI_COMM_WORLD, 1, big, p, &nr), MPI_ERR_DIMS, "grid");
    CHECK_ERR(MPI_Cart_create(MPI_COMM_WORLD, -1, d, p, 0, &cart), MPI_ERR_ARG, "ndims");
    if (on_madmpi()) { /* MPICH 4.0.2 accepts negative extents */
        int negd[1] = {-1};
        CHECK_ERR(MPI_Cart_create(MPI_COMM_WORLD, 1, negd, p, 0, &cart), MPI_ERR_DIMS, "extent");
    }
    CHECK(MPI_Topo_test(MPI_COMM_WORLD, &t) == MPI_SUCCESS && t == MPI_UNDEFINED, "no topology: MPI_UNDEFINED");
    CHECK_ERR(MPI_Cartdim_get(MPI_COMM_WORLD, &t), MPI_ERR_TOPOLOGY, "Cartesian");
    int c[1];
    CHECK_ERR(MPI_Cart_coords(MPI_COMM_WORLD, 0, 1, c), MPI_ERR_TOPOLOGY, "Cartesian");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    dims();
    grid();
    smaller_grids();
    MPI_Barrier(MPI_COMM_WORLD);
    printf("OK %d: all checks passed\n", rank);
    MPI_Finalize();
    return 0;
}
