/* Neighbourhood collectives: MPI_Neighbor_allgather(v) and _alltoall(v, w), each blocking,
 * nonblocking (MPI_Ineighbor_*) and in the large-count forms (_c, both), over a 2-D Cartesian
 * grid (periodic in dimension 0, so edges give MPI_PROC_NULL neighbours in dimension 1), a
 * graph (a ring) and a distributed graph with repeated edges; counts 0, 1 and 3, uneven v
 * counts with gaps, a strided (vector) receive type, byte displacements for w. Every received
 * block is compared with the value its sender put in the block meant for this rank, found
 * from neighbour lists computed here: in a grid the block sent towards +1 in a dimension
 * arrives in the receiver's −1 slot (MPI 4.0 §8.6); in graphs the k-th edge from a to b
 * pairs with b's k-th entry a. Blocks of MPI_PROC_NULL neighbours must stay untouched. Then
 * the argument errors under MPI_ERRORS_RETURN. Built against madmpi's mpi.h and MPICH's by
 * tests/c_programs.rs. */
#include "check.h"

#define MAXN 16
static int rank, size;

/* This rank's neighbours: sources[j] and destinations[k], and for each source j the index of
 * the sender's destination whose block lands in slot j (-1: MPI_PROC_NULL). */
struct nbrs {
    int indeg, outdeg, src[MAXN], dst[MAXN], from_block[MAXN];
};

static int val(int r, int k, int i) { return r * 10000 + k * 100 + i + 1; }

/* Slot j's count in the v forms: equal at both ends of a message (it depends on the block
 * the sender fills, which the receiver knows as from_block). */
static int vcount(int k) { return k % 3 + 1; }

/* Calls MPI_Neighbor_<name> (mode 0), MPI_Ineighbor_<name> + wait (1), or their _c forms (2, 3). */
static int finish(int rc, MPI_Request *rq)
{
    return rc == MPI_SUCCESS ? MPI_Wait(rq, MPI_STATUS_IGNORE) : rc;
}

static int allgather(int mode, int *s, int c, int *r, MPI_Datatype rt, int rc_, MPI_Comm comm)
{
    MPI_Request q;
    switch (mode) {
    case 0: return MPI_Neighbor_allgather(s, c, MPI_INT, r, rc_, rt, comm);
    case 1: return finish(MPI_Ineighbor_allgather(s, c, MPI_INT, r, rc_, rt, comm, &q), &q);
    case 2: return MPI_Neighbor_allgather_c(s, c, MPI_INT, r, rc_, rt, comm);
    default: return finish(MPI_Ineighbor_allgather_c(s, c, MPI_INT, r, rc_, rt, comm, &q), &q);
    }
}

static int alltoall(int mode, int *s, int c, int *r, MPI_Comm comm)
{
    MPI_Request q;
    switch (mode) {
    case 0: return MPI_Neighbor_alltoall(s, c, MPI_INT, r, c, MPI_INT, comm);
    case 1: return finish(MPI_Ineighbor_alltoall(s, c, MPI_INT, r, c, MPI_INT, comm, &q), &q);
    case 2: return MPI_Neighbor_alltoall_c(s, c, MPI_INT, r, c, MPI_INT, comm);
    default: return finish(MPI_Ineighbor_alltoall_c(s, c, MPI_INT, r, c, MPI_INT, comm, &q), &q);
    }
}

static int allgatherv(int mode, int *s, int c, int *r, const int *rc, const int *rd, MPI_Comm comm, int n)
{
    MPI_Request q;
    MPI_Count cc[MAXN];
    MPI_Aint cd[MAXN];
    for (int i = 0; i < n; i++) {
        cc[i] = rc[i];
        cd[i] = rd[i];
    }
    switch (mode) {
    case 0: return MPI_Neighbor_allgatherv(s, c, MPI_INT, r, rc, rd, MPI_INT, comm);
    case 1: return finish(MPI_Ineighbor_allgatherv(s, c, MPI_INT, r, rc, rd, MPI_INT, comm, &q), &q);
    case 2: return MPI_Neighbor_allgatherv_c(s, c, MPI_INT, r, cc, cd, MPI_INT, comm);
    default: return finish(MPI_Ineighbor_allgatherv_c(s, c, MPI_INT, r, cc, cd, MPI_INT, comm, &q), &q);
    }
}

static int alltoallv(int mode, int *s, const int *sc, const int *sd, int *r, const int *rc, const int *rd,
                     MPI_Comm comm, int nout, int nin)
{
    MPI_Request q;
    MPI_Count scc[MAXN], rcc[MAXN];
    MPI_Aint sdc[MAXN], rdc[MAXN];
    for (int i = 0; i < nout; i++) {
        scc[i] = sc[i];
        sdc[i] = sd[i];
    }
    for (int i = 0; i < nin; i++) {
        rcc[i] = rc[i];
        rdc[i] = rd[i];
    }
    switch (mode) {
    case 0: return MPI_Neighbor_alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, comm);
    case 1: return finish(MPI_Ineighbor_alltoallv(s, sc, sd, MPI_INT, r, rc, rd, MPI_INT, comm, &q), &q);
    case 2: return MPI_Neighbor_alltoallv_c(s, scc, sdc, MPI_INT, r, rcc, rdc, MPI_INT, comm);
    default: return finish(MPI_Ineighbor_alltoallv_c(s, scc, sdc, MPI_INT, r, rcc, rdc, MPI_INT, comm, &q), &q);
    }
}

static int alltoallw(int mode, int *s, const int *sc, const MPI_Aint *sd, const MPI_Datatype *st, int *r,
                     const int *rc, const MPI_Aint *rd, const MPI_Datatype *rt, MPI_Comm comm, int nout, int nin)
{
    MPI_Request q;
    MPI_Count scc[MAXN], rcc[MAXN];
    for (int i = 0; i < nout; i++)
        scc[i] = sc[i];
    for (int i = 0; i < nin; i++)
        rcc[i] = rc[i];
    switch (mode) {
    case 0: return MPI_Neighbor_alltoallw(s, sc, sd, st, r, rc, rd, rt, comm);
    case 1: return finish(MPI_Ineighbor_alltoallw(s, sc, sd, st, r, rc, rd, rt, comm, &q), &q);
    case 2: return MPI_Neighbor_alltoallw_c(s, scc, sd, st, r, rcc, rd, rt, comm);
    default: return finish(MPI_Ineighbor_alltoallw_c(s, scc, sd, st, r, rcc, rd, rt, comm, &q), &q);
    }
}

static const char *modes[] = {"blocking", "nonblocking", "blocking _c", "nonblocking _c"};

/* Every collective in every mode over `comm` with neighbours `nb`. */
static void exchange_all(MPI_Comm comm, const struct nbrs *nb, const char *topo)
{
    int in = nb->indeg, out = nb->outdeg, s[MAXN * 8], r[MAXN * 8 * 2];
    for (int mode = 0; mode < 4; mode++) {
        const char *m = modes[mode];
        for (int c = 0; c <= 3; c += (c == 1 ? 2 : 1)) {
            /* Allgather, contiguous then into a vector type (every other int). */
            for (int strided = 0; strided < 2; strided++) {
                MPI_Datatype rt = MPI_INT;
                int ok = 1;
                if (strided) {
                    MPI_Type_vector(c, 1, 2, MPI_INT, &rt);
                    MPI_Type_commit(&rt);
                }
                for (int i = 0; i < c; i++)
                    s[i] = val(rank, 0, i);
                for (int i = 0; i < in * c * 2 + 1; i++)
                    r[i] = -1;
                CHECK(allgather(mode, s, c, r, rt, strided ? 1 : c, comm) == MPI_SUCCESS, "%s: allgather %s, %d ints%s",
                      topo, m, c, strided ? " (vector)" : "");
                for (int j = 0; j < in; j++)
                    for (int i = 0; i < c; i++) {
                        /* The vector type's extent is 2c - 1 ints. */
                        int at = strided ? j * (2 * c - 1) + 2 * i : j * c + i;
                        int want = nb->src[j] == MPI_PROC_NULL ? -1 : val(nb->src[j], 0, i);
                        ok = ok && r[at] == want;
                    }
                CHECK(ok, "%s: allgather %s, %d ints: the blocks of the sources", topo, m, c);
                if (strided)
                    MPI_Type_free(&rt);
            }
            /* Alltoall. */
            int ok = 1;
            for (int k = 0; k < out; k++)
                for (int i = 0; i < c; i++)
                    s[k * c + i] = val(rank, k, i);
            for (int i = 0; i < in * c; i++)
                r[i] = -1;
            CHECK(alltoall(mode, s, c, r, comm) == MPI_SUCCESS, "%s: alltoall %s, %d ints", topo, m, c);
            for (int j = 0; j < in; j++)
                for (int i = 0; i < c; i++)
                    ok = ok && r[j * c + i] == (nb->src[j] == MPI_PROC_NULL ? -1 : val(nb->src[j], nb->from_block[j], i));
            CHECK(ok, "%s: alltoall %s, %d ints: each source's block for this rank", topo, m, c);
        }
        /* Allgatherv: every rank sends 2 ints; slots in reverse order with a gap of one. */
        int rc[MAXN], rd[MAXN], sc[MAXN], sd[MAXN], ok = 1, at = 0;
        for (int j = in - 1; j >= 0; j--) {
            rc[j] = 2;
            rd[j] = at;
            at += 3;
        }
        s[0] = val(rank, 0, 0);
        s[1] = val(rank, 0, 1);
        for (int i = 0; i < at + 1; i++)
            r[i] = -1;
        CHECK(allgatherv(mode, s, 2, r, rc, rd, comm, in) == MPI_SUCCESS, "%s: allgatherv %s", topo, m);
        for (int j = 0; j < in; j++)
            for (int i = 0; i < 3; i++)
                ok = ok && r[rd[j] + i] == (i == 2 || nb->src[j] == MPI_PROC_NULL ? -1 : val(nb->src[j], 0, i));
        CHECK(ok, "%s: allgatherv %s: blocks at their displacements, gaps untouched", topo, m);
        /* Alltoallv: block k holds vcount(k) ints at 4k; slot j vcount(from_block[j]) at 5j. */
        for (int k = 0; k < out; k++) {
            sc[k] = vcount(k);
            sd[k] = 4 * k;
            for (int i = 0; i < sc[k]; i++)
                s[sd[k] + i] = val(rank, k, i);
        }
        for (int j = 0; j < in; j++) {
            rc[j] = nb->from_block[j] < 0 ? 0 : vcount(nb->from_block[j]);
            rd[j] = 5 * j;
        }
        for (int i = 0; i < 5 * in; i++)
            r[i] = -1;
        CHECK(alltoallv(mode, s, sc, sd, r, rc, rd, comm, out, in) == MPI_SUCCESS, "%s: alltoallv %s", topo, m);
        for (int j = 0; j < in; j++)
            for (int i = 0; i < 5; i++)
                ok = ok && r[5 * j + i] == (i < rc[j] ? val(nb->src[j], nb->from_block[j], i) : -1);
        CHECK(ok, "%s: alltoallv %s", topo, m);
        /* Alltoallw: as alltoallv, byte displacements; odd slots received through a vector type
         * of vcount ints with stride 2 (count 1). */
        MPI_Aint swd[MAXN], rwd[MAXN];
        MPI_Datatype swt[MAXN], rwt[MAXN], vec[4];
        for (int v = 1; v <= 3; v++) {
            MPI_Type_vector(v, 1, 2, MPI_INT, &vec[v]);
            MPI_Type_commit(&vec[v]);
        }
        for (int k = 0; k < out; k++) {
            swd[k] = sd[k] * (MPI_Aint)sizeof(int);
            swt[k] = MPI_INT;
        }
        int rwc[MAXN];
        for (int j = 0; j < in; j++) {
            int v = rc[j];
            rwd[j] = 8 * j * (MPI_Aint)sizeof(int);
            rwt[j] = (j % 2 && v > 0) ? vec[v] : MPI_INT;
            rwc[j] = (j % 2 && v > 0) ? 1 : v;
        }
        for (int i = 0; i < 8 * in; i++)
            r[i] = -1;
        CHECK(alltoallw(mode, s, sc, swd, swt, r, rwc, rwd, rwt, comm, out, in) == MPI_SUCCESS, "%s: alltoallw %s",
              topo, m);
        for (int j = 0; j < in; j++) {
            int stride = j % 2 ? 2 : 1;
            for (int i = 0; i < rc[j]; i++)
                ok = ok && r[8 * j + stride * i] == val(nb->src[j], nb->from_block[j], i);
            if (stride == 2)
                for (int i = 0; i + 1 < rc[j]; i++)
                    ok = ok && r[8 * j + 2 * i + 1] == -1;
        }
        CHECK(ok, "%s: alltoallw %s", topo, m);
        for (int v = 1; v <= 3; v++)
            MPI_Type_free(&vec[v]);
    }
}

/* Row-major coordinates. */
static int rank_at(const int *d, int c0, int c1) { return c0 * d[1] + c1; }

static void cartesian(void)
{
    int d[2] = {0, 0}, per[2] = {1, 0};
    MPI_Dims_create(size, 2, d);
    MPI_Comm cart;
    MPI_Cart_create(MPI_COMM_WORLD, 2, d, per, 0, &cart);
    MPI_Comm_set_errhandler(cart, MPI_ERRORS_RETURN);
    int c[2] = {rank / d[1], rank % d[1]};
    struct nbrs nb;
    nb.indeg = nb.outdeg = 4;
    nb.src[0] = rank_at(d, (c[0] + d[0] - 1) % d[0], c[1]);
    nb.src[1] = rank_at(d, (c[0] + 1) % d[0], c[1]);
    nb.src[2] = c[1] > 0 ? rank_at(d, c[0], c[1] - 1) : MPI_PROC_NULL;
    nb.src[3] = c[1] + 1 < d[1] ? rank_at(d, c[0], c[1] + 1) : MPI_PROC_NULL;
    for (int j = 0; j < 4; j++) {
        nb.dst[j] = nb.src[j];
        nb.from_block[j] = nb.src[j] == MPI_PROC_NULL ? -1 : j ^ 1;
    }
    /* With a periodic dimension of extent 1 or 2, both neighbours of a dimension are the same
     * rank: MPICH 4.0.2 pairs such messages by direction in alltoall but not in its v form
     * (blocks of unequal length then fail): compared on MadMPI only. */
    if (on_madmpi() || d[0] > 2)
        exchange_all(cart, &nb, "cart");
    MPI_Comm_free(&cart);
}

/* The distributed graph: r -> r+1 twice, r -> r+2 once (mod size). */
static int dg_dests(int r, int *dst)
{
    dst[0] = dst[1] = (r + 1) % size;
    dst[2] = (r + 2) % size;
    return 3;
}

/* Sources of `me` (senders in order: me-1 twice, me-2), and for each the index of the
 * sender's destination paired with it: the t-th entry `p` among the sources pairs with the
 * t-th occurrence of `me` among p's destinations. */
static void pair_sources(struct nbrs *nb, int (*dests)(int, int *))
{
    for (int j = 0; j < nb->indeg; j++) {
        int p = nb->src[j], t = 0, pd[MAXN], n = dests(p, pd);
        for (int i = 0; i < j; i++)
            t += nb->src[i] == p;
        nb->from_block[j] = -1;
        for (int k = 0; k < n; k++)
            if (pd[k] == rank && t-- == 0) {
                nb->from_block[j] = k;
                break;
            }
    }
}

static int ring_dests(int r, int *dst)
{
    dst[0] = (r + size - 1) % size;
    dst[1] = (r + 1) % size;
    return 2;
}

static void graphs(void)
{
    struct nbrs nb;
    nb.outdeg = dg_dests(rank, nb.dst);
    nb.indeg = 3;
    nb.src[0] = nb.src[1] = (rank + size - 1) % size;
    nb.src[2] = (rank + 2 * size - 2) % size;
    pair_sources(&nb, dg_dests);
    MPI_Comm g;
    CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, nb.indeg, nb.src, MPI_UNWEIGHTED, nb.outdeg, nb.dst,
                                         MPI_UNWEIGHTED, MPI_INFO_NULL, 0, &g) == MPI_SUCCESS,
          "a distributed graph with repeated edges");
    MPI_Comm_set_errhandler(g, MPI_ERRORS_RETURN);
    /* MPICH 4.0.2 pairs repeated edges in reverse order (the second message from a to b in
     * b's first slot for a): compared on MadMPI only. */
    if (on_madmpi())
        exchange_all(g, &nb, "dist_graph");
    MPI_Comm_free(&g);

    int index[64], edges[128];
    for (int r = 0; r < size; r++) {
        ring_dests(r, edges + 2 * r);
        index[r] = 2 * r + 2;
    }
    CHECK(MPI_Graph_create(MPI_COMM_WORLD, size, index, edges, 0, &g) == MPI_SUCCESS, "a ring graph");
    MPI_Comm_set_errhandler(g, MPI_ERRORS_RETURN);
    nb.indeg = nb.outdeg = ring_dests(rank, nb.src);
    ring_dests(rank, nb.dst);
    pair_sources(&nb, ring_dests);
    if (on_madmpi() || size > 2) /* rings of 1 or 2 repeat their edges */
        exchange_all(g, &nb, "graph");
    MPI_Comm_free(&g);
}

static void errors(void)
{
    int s[4] = {0}, r[64];
    CHECK_ERR(MPI_Neighbor_allgather(s, 1, MPI_INT, r, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_TOPOLOGY, "topology");
    MPI_Request q;
    CHECK_ERR(MPI_Ineighbor_alltoall(s, 1, MPI_INT, r, 1, MPI_INT, MPI_COMM_WORLD, &q), MPI_ERR_TOPOLOGY, "topology");
    int d[1] = {size}, p[1] = {1};
    MPI_Comm ring;
    MPI_Cart_create(MPI_COMM_WORLD, 1, d, p, 0, &ring);
    MPI_Comm_set_errhandler(ring, MPI_ERRORS_RETURN);
    CHECK_ERR(MPI_Neighbor_allgather(s, -1, MPI_INT, r, 1, MPI_INT, ring), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Neighbor_alltoall_c(s, 1, MPI_INT, r, -1, MPI_INT, ring), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Neighbor_alltoall(s, 1, MPI_DATATYPE_NULL, r, 1, MPI_INT, ring), MPI_ERR_TYPE, "datatype");
    if (on_madmpi()) { /* MPICH 4.0.2 does not check these (null arrays crash it) */
        CHECK_ERR(MPI_Neighbor_allgatherv(s, 1, MPI_INT, r, NULL, NULL, MPI_INT, ring), MPI_ERR_ARG, "counts");
        CHECK_ERR(MPI_Neighbor_allgather(MPI_IN_PLACE, 1, MPI_INT, r, 1, MPI_INT, ring), MPI_ERR_BUFFER,
                  "MPI_IN_PLACE");
    }
    CHECK(MPI_Neighbor_allgather(s, 1, MPI_INT, r, 1, MPI_INT, ring) == MPI_SUCCESS, "collectives work after the errors");
    MPI_Comm_free(&ring);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    if (size > 32) {
        printf("FAIL %d: at most 32 processes\n", rank);
        return 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    cartesian();
    graphs();
    errors();
    MPI_Barrier(MPI_COMM_WORLD);
    printf("OK %d: all checks passed\n", rank);
    MPI_Finalize();
    return 0;
}
