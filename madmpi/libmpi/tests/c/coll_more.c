/* The gather family and the prefix reductions: MPI_Gather(v), MPI_Scatter(v), MPI_Allgather(v),
 * MPI_Alltoall(v, w), MPI_Reduce_scatter(_block), MPI_Scan, MPI_Exscan, blocking and nonblocking
 * (also several in flight at once), with and without MPI_IN_PLACE, uneven counts with zeros and
 * gaps between the blocks for the v forms, a derived (vector) receive type, and argument errors
 * under MPI_ERRORS_RETURN. Every result is compared with a reference computed locally from what
 * each rank contributes. Runs with any number of processes; built against madmpi's mpi.h and
 * MPICH's by tests/c_programs.rs. */
#include "check.h"

static int rank, size;

static int val(int r, int i) { return r * 1000 + i + 1; }
/* Uneven counts with zeros: 0, 3, 2, 1, 0, ... */
static int vcount(int r) { return (r * 3) % 4; }
/* Blocks in decreasing rank order with a one-element gap after each. */
static int vdispl(int r)
{
    int d = 0;
    for (int q = size - 1; q > r; q--)
        d += vcount(q) + 1;
    return d;
}
static int vtotal(void) { return vdispl(0) + vcount(0) + 1; }

/* Blocking call, or nonblocking one then MPI_Wait. */
#define RUN(nb, blocking, nonblocking, ...)                                                    \
    do {                                                                                       \
        MPI_Request req_ = MPI_REQUEST_NULL;                                                   \
        if (nb) {                                                                              \
            CHECK(nonblocking(__VA_ARGS__, &req_) == MPI_SUCCESS &&                            \
                      MPI_Wait(&req_, MPI_STATUS_IGNORE) == MPI_SUCCESS,                       \
                  #nonblocking " started and waited");                                         \
        } else {                                                                               \
            CHECK(blocking(__VA_ARGS__) == MPI_SUCCESS, #blocking " returns");                 \
        }                                                                                      \
    } while (0)

static const int counts[] = {0, 1, 5, 2000};
#define NCOUNTS ((int)(sizeof counts / sizeof *counts))

/* ---------------------------------------------------------------- gather, scatter */

static void gather_scatter(void)
{
    for (int k = 0; k < NCOUNTS; k++) {
        int c = counts[k];
        int *s = malloc((size * c + 1) * sizeof(int));
        int *r = malloc((size * c + 1) * sizeof(int));
        for (int root = 0; root < size; root++)
            for (int nb = 0; nb < 2; nb++)
                for (int ip = 0; ip < 2; ip++) {
                    int ok = 1;
                    int inplace = ip && rank == root;
                    /* Gather. */
                    for (int i = 0; i < size * c + 1; i++)
                        r[i] = -1;
                    for (int i = 0; i < c; i++)
                        s[i] = val(rank, i);
                    if (inplace)
                        for (int i = 0; i < c; i++)
                            r[root * c + i] = val(root, i);
                    RUN(nb, MPI_Gather, MPI_Igather, inplace ? MPI_IN_PLACE : s, c, MPI_INT, r, c, MPI_INT, root, MPI_COMM_WORLD);
                    if (rank == root)
                        for (int q = 0; q < size; q++)
                            for (int i = 0; i < c; i++)
                                ok &= r[q * c + i] == val(q, i);
                    ok &= r[size * c] == -1;
                    CHECK(ok, "%sgather of %d ints to %d%s", nb ? "i" : "", c, root, inplace ? " in place" : "");
                    /* Scatter. */
                    for (int i = 0; i < size * c; i++)
                        s[i] = rank == root ? val(i / (c ? c : 1), i % (c ? c : 1)) : -7;
                    for (int i = 0; i < size * c + 1; i++)
                        r[i] = -1;
                    RUN(nb, MPI_Scatter, MPI_Iscatter, s, c, MPI_INT, inplace ? MPI_IN_PLACE : r, c, MPI_INT, root, MPI_COMM_WORLD);
                    if (inplace)
                        for (int i = 0; i < size * c; i++)
                            ok &= s[i] == val(i / c, i % c);
                    else
                        for (int i = 0; i < c; i++)
                            ok &= r[i] == val(rank, i);
                    ok &= r[c] == -1;
                    CHECK(ok, "%sscatter of %d ints from %d%s", nb ? "i" : "", c, root, inplace ? " in place" : "");
                }
        free(s);
        free(r);
    }
}

static void gatherv_scatterv(void)
{
    int rc[64], rd[64], n = vtotal();
    int s[8], *r = malloc(n * sizeof(int));
    for (int q = 0; q < size; q++) {
        rc[q] = vcount(q);
        rd[q] = vdispl(q);
    }
    for (int root = 0; root < size; root++)
        for (int nb = 0; nb < 2; nb++)
            for (int ip = 0; ip < 2; ip++) {
                int ok = 1, inplace = ip && rank == root;
                for (int i = 0; i < n; i++)
                    r[i] = -1;
                for (int i = 0; i < vcount(rank); i++)
                    s[i] = val(rank, i);
                if (inplace)
                    for (int i = 0; i < vcount(root); i++)
                        r[rd[root] + i] = val(root, i);
                RUN(nb, MPI_Gatherv, MPI_Igatherv, inplace ? MPI_IN_PLACE : s, vcount(rank), MPI_INT, r, rc, rd, MPI_INT, root,
                    MPI_COMM_WORLD);
                if (rank == root) {
                    int *ref = malloc(n * sizeof(int));
                    for (int i = 0; i < n; i++)
                        ref[i] = -1;
                    for (int q = 0; q < size; q++)
                        for (int i = 0; i < vcount(q); i++)
                            ref[rd[q] + i] = val(q, i);
                    ok = memcmp(ref, r, n * sizeof(int)) == 0;
                    free(ref);
                }
                CHECK(ok, "%sgatherv to %d%s", nb ? "i" : "", root, inplace ? " in place" : "");
                /* Scatterv from r (the root's, laid out by rc and rd). */
                for (int i = 0; i < n; i++)
                    r[i] = -1;
                if (rank == root)
                    for (int q = 0; q < size; q++)
                        for (int i = 0; i < vcount(q); i++)
                            r[rd[q] + i] = val(q, i) + 5;
                for (int i = 0; i < 8; i++)
                    s[i] = -2;
                RUN(nb, MPI_Scatterv, MPI_Iscatterv, r, rc, rd, MPI_INT, inplace ? MPI_IN_PLACE : s, vcount(rank), MPI_INT, root,
                    MPI_COMM_WORLD);
                if (!inplace)
                    for (int i = 0; i < 8; i++)
                        ok &= s[i] == (i < vcount(rank) ? val(rank, i) + 5 : -2);
                CHECK(ok, "%sscatterv from %d%s", nb ? "i" : "", root, inplace ? " in place" : "");
            }
    free(r);
}

/* ---------------------------------------------------------------- allgather, alltoall */

static void allgather_alltoall(void)
{
    for (int k = 0; k < NCOUNTS; k++) {
        int c = counts[k];
        int *s = malloc((size * c + 1) * sizeof(int));
        int *r = malloc((size * c + 1) * sizeof(int));
        for (int nb = 0; nb < 2; nb++)
            for (int ip = 0; ip < 2; ip++) {
                int ok = 1;
                for (int i = 0; i < size * c + 1; i++)
                    r[i] = -1;
                for (int i = 0; i < c; i++)
                    s[i] = val(rank, i);
                if (ip)
                    for (int i = 0; i < c; i++)
                        r[rank * c + i] = val(rank, i);
                RUN(nb, MPI_Allgather, MPI_Iallgather, ip ? MPI_IN_PLACE : s, c, MPI_INT, r, c, MPI_INT, MPI_COMM_WORLD);
                for (int q = 0; q < size; q++)
                    for (int i = 0; i < c; i++)
                        ok &= r[q * c + i] == val(q, i);
                ok &= r[size * c] == -1;
                CHECK(ok, "%sallgather of %d ints%s", nb ? "i" : "", c, ip ? " in place" : "");
                /* Alltoall: element i of block j from rank q is val(q, j * c + i). */
                for (int i = 0; i < size * c; i++)
                    (ip ? r : s)[i] = val(rank, i);
                if (!ip)
                    for (int i = 0; i < size * c + 1; i++)
                        r[i] = -1;
                RUN(nb, MPI_Alltoall, MPI_Ialltoall, ip ? MPI_IN_PLACE : s, c, MPI_INT, r, c, MPI_INT, MPI_COMM_WORLD);
                for (int q = 0; q < size; q++)
                    for (int i = 0; i < c; i++)
                        ok &= r[q * c + i] == val(q, rank * c + i);
                ok &= r[size * c] == -1;
                CHECK(ok, "%salltoall of %d ints%s", nb ? "i" : "", c, ip ? " in place" : "");
            }
        free(s);
        free(r);
    }
}

/* Alltoallv counts: rank i sends (i + 2j) % 3 to j (in place: (i + j) % 3, symmetric). */
static int a2a_count(int from, int to, int ip) { return ip ? (from + to) % 3 : (from + 2 * to) % 3; }

static void allgatherv_alltoallv(void)
{
    int rc[64], rd[64], n = vtotal();
    int s[8], *r = malloc(n * sizeof(int));
    for (int q = 0; q < size; q++) {
        rc[q] = vcount(q);
        rd[q] = vdispl(q);
    }
    for (int nb = 0; nb < 2; nb++)
        for (int ip = 0; ip < 2; ip++) {
            int ok = 1;
            for (int i = 0; i < n; i++)
                r[i] = -1;
            for (int i = 0; i < vcount(rank); i++)
                s[i] = val(rank, i);
            if (ip)
                for (int i = 0; i < vcount(rank); i++)
                    r[rd[rank] + i] = val(rank, i);
            RUN(nb, MPI_Allgatherv, MPI_Iallgatherv, ip ? MPI_IN_PLACE : s, vcount(rank), MPI_INT, r, rc, rd, MPI_INT, MPI_COMM_WORLD);
            for (int q = 0; q < size; q++)
                for (int i = 0; i < vcount(q); i++)
                    ok &= r[rd[q] + i] == val(q, i);
            for (int q = 0; q < size; q++)
                ok &= r[rd[q] + vcount(q)] == -1; /* the gaps */
            CHECK(ok, "%sallgatherv%s", nb ? "i" : "", ip ? " in place" : "");

            /* Alltoallv, blocks in decreasing peer order with gaps on both sides. */
            int sc[64], sd[64], ac[64], ad[64], slen = 0, rlen = 0;
            for (int j = size - 1; j >= 0; j--) {
                sc[j] = a2a_count(rank, j, ip);
                sd[j] = slen;
                slen += sc[j] + 1;
                ac[j] = a2a_count(j, rank, ip);
                ad[j] = rlen;
                rlen += ac[j] + 2;
            }
            int *sb = malloc((slen + 1) * sizeof(int)), *rb = malloc((rlen + 1) * sizeof(int));
            for (int i = 0; i < rlen; i++)
                rb[i] = -1;
            for (int j = 0; j < size; j++)
                for (int i = 0; i < sc[j]; i++)
                    (ip ? rb + ad[j] : sb + sd[j])[i] = val(rank, j * 10 + i);
            RUN(nb, MPI_Alltoallv, MPI_Ialltoallv, ip ? MPI_IN_PLACE : sb, sc, sd, MPI_INT, rb, ac, ad, MPI_INT, MPI_COMM_WORLD);
            for (int j = 0; j < size; j++) {
                for (int i = 0; i < ac[j]; i++)
                    ok &= rb[ad[j] + i] == val(j, rank * 10 + i);
                ok &= rb[ad[j] + ac[j]] == -1 && rb[ad[j] + ac[j] + 1] == -1;
            }
            CHECK(ok, "%salltoallv%s", nb ? "i" : "", ip ? " in place" : "");
            free(sb);
            free(rb);
        }
    free(r);
}

/* A vector receive type: 2 ints every other int (extent 3 ints), against 2 plain ints sent. */
static void derived(void)
{
    MPI_Datatype v;
    CHECK(MPI_Type_vector(2, 1, 2, MPI_INT, &v) == MPI_SUCCESS && MPI_Type_commit(&v) == MPI_SUCCESS,
          "a vector type");
    int *s = malloc(2 * size * sizeof(int)), *r = malloc((3 * size + 1) * sizeof(int));
    for (int nb = 0; nb < 2; nb++) {
        int ok = 1;
        for (int i = 0; i < 2 * size; i++)
            s[i] = val(rank, i);
        for (int i = 0; i < 3 * size + 1; i++)
            r[i] = -1;
        RUN(nb, MPI_Alltoall, MPI_Ialltoall, s, 2, MPI_INT, r, 1, v, MPI_COMM_WORLD);
        for (int q = 0; q < size; q++)
            ok &= r[3 * q] == val(q, 2 * rank) && r[3 * q + 1] == -1 && r[3 * q + 2] == val(q, 2 * rank + 1);
        CHECK(ok, "%salltoall into a vector type", nb ? "i" : "");
        for (int i = 0; i < 3 * size + 1; i++)
            r[i] = -1;
        RUN(nb, MPI_Allgather, MPI_Iallgather, s, 2, MPI_INT, r, 1, v, MPI_COMM_WORLD);
        for (int q = 0; q < size; q++)
            ok &= r[3 * q] == val(q, 0) && r[3 * q + 1] == -1 && r[3 * q + 2] == val(q, 1);
        CHECK(ok, "%sallgather into a vector type", nb ? "i" : "");
        for (int i = 0; i < 3 * size + 1; i++)
            r[i] = -1;
        RUN(nb, MPI_Gather, MPI_Igather, s, 2, MPI_INT, r, 1, v, size - 1, MPI_COMM_WORLD);
        if (rank == size - 1)
            for (int q = 0; q < size; q++)
                ok &= r[3 * q] == val(q, 0) && r[3 * q + 1] == -1 && r[3 * q + 2] == val(q, 1);
        CHECK(ok, "%sgather into a vector type", nb ? "i" : "");
        for (int i = 0; i < 2; i++)
            r[i] = -1;
        int *src = malloc(3 * size * sizeof(int));
        for (int q = 0; q < size; q++) {
            src[3 * q] = val(q, 0);
            src[3 * q + 1] = -5;
            src[3 * q + 2] = val(q, 1);
        }
        RUN(nb, MPI_Scatter, MPI_Iscatter, src, 1, v, r, 2, MPI_INT, 0, MPI_COMM_WORLD);
        CHECK(r[0] == val(rank, 0) && r[1] == val(rank, 1), "%sscatter from a vector type", nb ? "i" : "");
        free(src);
    }
    free(s);
    free(r);
    MPI_Type_free(&v);
}

/* Alltoallw: 2 ints to every peer, sent as plain ints in decreasing peer order, received at
 * byte 12 q as 2 plain ints (even q) or one vector of 2 ints every other int (odd q). In place,
 * the receive layout is the input's too. */
static void alltoallw(void)
{
    MPI_Datatype v, st[64], rt[64];
    int sc[64], sd[64], rc[64], rd[64];
    CHECK(MPI_Type_vector(2, 1, 2, MPI_INT, &v) == MPI_SUCCESS && MPI_Type_commit(&v) == MPI_SUCCESS,
          "a vector type");
    int *s = malloc(2 * size * sizeof(int)), *r = malloc((3 * size + 1) * sizeof(int));
    for (int j = 0; j < size; j++) {
        st[j] = MPI_INT;
        sc[j] = 2;
        sd[j] = (size - 1 - j) * 2 * (int)sizeof(int);
        rt[j] = j % 2 ? v : MPI_INT;
        rc[j] = j % 2 ? 1 : 2;
        rd[j] = j * 3 * (int)sizeof(int);
    }
    for (int nb = 0; nb < 2; nb++)
        for (int ip = 0; ip < 2; ip++) {
            int ok = 1;
            if (nb && ip && !on_madmpi()) /* MPICH 4.0.2 gets MPI_Ialltoallw in place wrong */
                continue;
            for (int i = 0; i < 3 * size + 1; i++)
                r[i] = -1;
            for (int j = 0; j < size; j++) {
                int *to = ip ? r + 3 * j : s + 2 * (size - 1 - j);
                to[0] = val(rank, 2 * j);
                to[j % 2 && ip ? 2 : 1] = val(rank, 2 * j + 1);
            }
            RUN(nb, MPI_Alltoallw, MPI_Ialltoallw, ip ? MPI_IN_PLACE : s, sc, sd, st, r, rc, rd, rt, MPI_COMM_WORLD);
            for (int q = 0; q < size; q++) {
                ok &= r[3 * q] == val(q, 2 * rank);
                ok &= q % 2 ? r[3 * q + 1] == -1 && r[3 * q + 2] == val(q, 2 * rank + 1)
                            : r[3 * q + 1] == val(q, 2 * rank + 1) && r[3 * q + 2] == -1;
            }
            ok &= r[3 * size] == -1;
            CHECK(ok, "%salltoallw%s", nb ? "i" : "", ip ? " in place" : "");
        }
    free(s);
    free(r);
    MPI_Type_free(&v);
}

/* ---------------------------------------------------------------- reductions */

static int sum_upto(int last, int i) /* Σ_{q <= last} val(q, i) */
{
    int a = 0;
    for (int q = 0; q <= last; q++)
        a += val(q, i);
    return a;
}

static void reductions(void)
{
    for (int k = 0; k < NCOUNTS; k++) {
        int c = counts[k];
        int *s = malloc((size * c + 1) * sizeof(int)), *r = malloc((size * c + 1) * sizeof(int));
        for (int nb = 0; nb < 2; nb++)
            for (int ip = 0; ip < 2; ip++) {
                int ok = 1;
                /* Reduce_scatter_block: element i of the vector of rank q is val(q, i). */
                for (int i = 0; i < size * c; i++)
                    (ip ? r : s)[i] = val(rank, i);
                if (!ip)
                    for (int i = 0; i < size * c + 1; i++)
                        r[i] = -1;
                r[size * c] = -1;
                RUN(nb, MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, ip ? MPI_IN_PLACE : s, r, c, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                for (int i = 0; i < c; i++)
                    ok &= r[i] == sum_upto(size - 1, rank * c + i);
                ok &= r[size * c] == -1 && (ip || c == 0 || r[c] == -1);
                CHECK(ok, "%sreduce_scatter_block of %d ints%s", nb ? "i" : "", c, ip ? " in place" : "");
                /* Scan and exscan with MPI_SUM, then scan with MPI_MAX. */
                for (int i = 0; i < c; i++) {
                    (ip ? r : s)[i] = val(rank, i);
                    if (!ip)
                        r[i] = -1;
                }
                r[c] = -1;
                RUN(nb, MPI_Scan, MPI_Iscan, ip ? MPI_IN_PLACE : s, r, c, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                for (int i = 0; i < c; i++)
                    ok &= r[i] == sum_upto(rank, i);
                ok &= r[c] == -1;
                CHECK(ok, "%sscan of %d ints%s", nb ? "i" : "", c, ip ? " in place" : "");
                for (int i = 0; i < c; i++) {
                    (ip ? r : s)[i] = val(rank, i);
                    if (!ip)
                        r[i] = -1;
                }
                RUN(nb, MPI_Exscan, MPI_Iexscan, ip ? MPI_IN_PLACE : s, r, c, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                if (rank > 0)
                    for (int i = 0; i < c; i++)
                        ok &= r[i] == sum_upto(rank - 1, i);
                ok &= r[c] == -1;
                CHECK(ok, "%sexscan of %d ints%s", nb ? "i" : "", c, ip ? " in place" : "");
                for (int i = 0; i < c; i++) {
                    (ip ? r : s)[i] = (rank * 7 + i * 5) % 13;
                    if (!ip)
                        r[i] = -1;
                }
                RUN(nb, MPI_Scan, MPI_Iscan, ip ? MPI_IN_PLACE : s, r, c, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
                for (int i = 0; i < c; i++) {
                    int m = 0;
                    for (int q = 0; q <= rank; q++)
                        m = (q * 7 + i * 5) % 13 > m ? (q * 7 + i * 5) % 13 : m;
                    ok &= r[i] == m;
                }
                CHECK(ok, "%sscan (MPI_MAX) of %d ints%s", nb ? "i" : "", c, ip ? " in place" : "");
            }
        free(s);
        free(r);
    }
    /* Reduce_scatter with uneven counts (zeros among them). */
    int rc[64], total = 0;
    for (int q = 0; q < size; q++) {
        rc[q] = vcount(q) * 2;
        total += rc[q];
    }
    int *s = malloc((total + 1) * sizeof(int)), *r = malloc((total + 1) * sizeof(int));
    int first = 0;
    for (int q = 0; q < rank; q++)
        first += rc[q];
    for (int nb = 0; nb < 2; nb++)
        for (int ip = 0; ip < 2; ip++) {
            int ok = 1;
            for (int i = 0; i < total; i++)
                (ip ? r : s)[i] = val(rank, i);
            if (!ip)
                for (int i = 0; i < total + 1; i++)
                    r[i] = -1;
            r[total] = -1;
            RUN(nb, MPI_Reduce_scatter, MPI_Ireduce_scatter, ip ? MPI_IN_PLACE : s, r, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            for (int i = 0; i < rc[rank]; i++)
                ok &= r[i] == sum_upto(size - 1, first + i);
            ok &= r[total] == -1 && (ip || r[rc[rank]] == -1);
            CHECK(ok, "%sreduce_scatter, uneven counts%s", nb ? "i" : "", ip ? " in place" : "");
        }
    free(s);
    free(r);
}

/* Several nonblocking collectives in flight at once. */
static void overlapped(void)
{
    enum { C = 3 };
    int g[C], ag[64 * C], a2s[64 * C], a2r[64 * C], sc[C], sr[C], ex[C], rsb[64 * C], rsr[C];
    MPI_Request reqs[5];
    for (int i = 0; i < C; i++)
        g[i] = sc[i] = ex[i] = val(rank, i);
    for (int i = 0; i < size * C; i++)
        a2s[i] = rsb[i] = val(rank, i);
    CHECK(MPI_Iallgather(g, C, MPI_INT, ag, C, MPI_INT, MPI_COMM_WORLD, &reqs[0]) == MPI_SUCCESS &&
              MPI_Ialltoall(a2s, C, MPI_INT, a2r, C, MPI_INT, MPI_COMM_WORLD, &reqs[1]) == MPI_SUCCESS &&
              MPI_Iscan(sc, sr, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[2]) == MPI_SUCCESS &&
              MPI_Iexscan(MPI_IN_PLACE, ex, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[3]) == MPI_SUCCESS &&
              MPI_Ireduce_scatter_block(MPI_IN_PLACE, rsb, C, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &reqs[4]) ==
                  MPI_SUCCESS &&
              MPI_Waitall(5, reqs, MPI_STATUSES_IGNORE) == MPI_SUCCESS,
          "five nonblocking collectives in flight, then MPI_Waitall");
    int ok = 1;
    for (int q = 0; q < size; q++)
        for (int i = 0; i < C; i++)
            ok &= ag[q * C + i] == val(q, i) && a2r[q * C + i] == val(q, rank * C + i);
    for (int i = 0; i < C; i++) {
        ok &= sr[i] == sum_upto(rank, i) && (rank == 0 || ex[i] == sum_upto(rank - 1, i));
        rsr[i] = rsb[i];
        ok &= rsr[i] == sum_upto(size - 1, rank * C + i);
    }
    CHECK(ok, "their results");
}

/* ---------------------------------------------------------------- errors */

static void errors(void)
{
    int b[256], c[256], cnt[64], dsp[64];
    for (int q = 0; q < size; q++) {
        cnt[q] = 1;
        dsp[q] = q;
    }
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) == MPI_SUCCESS, "MPI_ERRORS_RETURN");
    CHECK_ERR(MPI_Gather(b, 1, MPI_INT, c, 1, MPI_INT, size, MPI_COMM_WORLD), MPI_ERR_ROOT, "root");
    CHECK_ERR(MPI_Scatter(b, 1, MPI_INT, c, 1, MPI_INT, -1, MPI_COMM_WORLD), MPI_ERR_ROOT, "root");
    CHECK_ERR(MPI_Allgather(b, -1, MPI_INT, c, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Alltoall(b, 1, MPI_DATATYPE_NULL, c, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_TYPE, "datatype");
    CHECK_ERR(MPI_Alltoall(b, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER, "same");
    CHECK_ERR(MPI_Allgather(b, 1, MPI_INT, NULL, 1, MPI_INT, MPI_COMM_WORLD), MPI_ERR_BUFFER, "buffer");
    cnt[size - 1] = -1;
    CHECK_ERR(MPI_Allgatherv(b, 1, MPI_INT, c, cnt, dsp, MPI_INT, MPI_COMM_WORLD), MPI_ERR_COUNT, "count");
    cnt[size - 1] = 1;
    if (on_madmpi()) /* MPICH 4.0 does not check the arrays */
        CHECK_ERR(MPI_Alltoallv(b, cnt, dsp, MPI_INT, c, NULL, dsp, MPI_INT, MPI_COMM_WORLD), MPI_ERR_ARG, "null");
    CHECK_ERR(MPI_Scan(b, c, 1, MPI_INT, MPI_OP_NULL, MPI_COMM_WORLD), MPI_ERR_OP, "operation");
    if (on_madmpi()) /* MPICH 4.0.2 does not check it (it asserts in yaksa) */
        CHECK_ERR(MPI_Exscan(b, c, -2, MPI_INT, MPI_SUM, MPI_COMM_WORLD), MPI_ERR_COUNT, "count");
    CHECK_ERR(MPI_Reduce_scatter_block(b, c, 1, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD), MPI_ERR_OP, "MPI_BAND");
    if (rank != 0 && on_madmpi()) /* in place is for the root only */
        CHECK_ERR(MPI_Gather(MPI_IN_PLACE, 1, MPI_INT, c, 1, MPI_INT, 0, MPI_COMM_WORLD), MPI_ERR_BUFFER,
                  "MPI_IN_PLACE");
    CHECK_ERR(MPI_Igather(b, 1, MPI_INT, c, 1, MPI_INT, 0, MPI_COMM_WORLD, NULL), MPI_ERR_ARG, "request");
    for (int i = 0; i < size; i++)
        b[i] = 1;
    CHECK(MPI_Allgather(b, 1, MPI_INT, c, 1, MPI_INT, MPI_COMM_WORLD) == MPI_SUCCESS && c[size - 1] == 1,
          "collectives work after the errors");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    if (size > 64) {
        printf("FAIL %d: at most 64 processes\n", rank);
        return 1;
    }

    gather_scatter();
    gatherv_scatterv();
    allgather_alltoall();
    allgatherv_alltoallv();
    derived();
    alltoallw();
    reductions();
    overlapped();
    errors();

    MPI_Barrier(MPI_COMM_WORLD);
    printf("OK %d: all checks passed\n", rank);
    MPI_Finalize();
    return 0;
}
