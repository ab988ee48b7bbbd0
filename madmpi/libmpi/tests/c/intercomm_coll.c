/* Every collective MPI 4.0 defines on an intercommunicator (all but the scans), blocking and
 * nonblocking, against values computed here: the groups are the even and the odd world ranks
 * (uneven for odd sizes), so each result tells which group it came from. Roots are MPI_ROOT,
 * MPI_PROC_NULL and a remote rank. With the error paths of the root argument, MPI_IN_PLACE and
 * the scans. Any number of processes (1: nothing to test but the program runs).
 *
 * Checked on MPICH's own library too (mpicc.mpich, mpiexec.hydra -n 1, 2, 3, 5), where MPICH
 * 4.0.2 behaves otherwise (the check is skipped there): MPI_Ibcast on an intercommunicator from
 * a root other than rank 0 of its group delivers nothing (the other group's buffers keep their
 * contents; MPI_Bcast is right). */
#include "check.h"

static int rank, size, color, lr, nl, nr;
static MPI_Comm ic;
static MPI_Request req;

/* The blocking call, or the nonblocking one waited for. */
#define COLL(B, NB, ...) (nb ? (NB(__VA_ARGS__, &req) || MPI_Wait(&req, MPI_STATUS_IGNORE)) : B(__VA_ARGS__))

/* World rank of remote rank j, of local rank i. */
static int remote_world(int j) { return 2 * j + 1 - color; }
static int local_world(int i) { return 2 * i + color; }

/* The sum of f(w) over the world ranks w of the remote group. */
static int remote_sum(int k) { int s = 0; for (int j = 0; j < nr; j++) s += remote_world(j) + k; return s; }

static void rooted(int nb)
{
    const char *how = nb ? "nonblocking" : "blocking";
    int buf[8], ok = 1;
    /* Bcast from local rank 0 of the evens, then from the last odd rank. */
    for (int from = 0; from < 2; from++) {
        int root_lr = from == 0 ? 0 : (size / 2) - 1;
        int root = color == from ? (lr == root_lr ? MPI_ROOT : MPI_PROC_NULL) : root_lr;
        for (int i = 0; i < 8; i++)
            buf[i] = root == MPI_ROOT ? 100 * from + i : -1;
        CHECK(COLL(MPI_Bcast, MPI_Ibcast, buf, 8, MPI_INT, root, ic) == MPI_SUCCESS, "%s bcast from group %d", how, from);
        ok = 1;
        for (int i = 0; i < 8; i++)
            ok = ok && buf[i] == (root == MPI_PROC_NULL ? -1 : 100 * from + i);
        if (on_madmpi() || !nb || root_lr == 0)
            CHECK(ok, "%s bcast from group %d: the other group has the root's data, its group is untouched", how,
                  from);
    }
    /* Bcast of a strided type: every other int. */
    MPI_Datatype every_other;
    MPI_Type_vector(4, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    int root = color == 0 ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    for (int i = 0; i < 8; i++)
        buf[i] = root == MPI_ROOT ? i : -1;
    COLL(MPI_Bcast, MPI_Ibcast, buf, 1, every_other, root, ic);
    ok = 1;
    for (int i = 0; i < 8; i++)
        ok = ok && buf[i] == (root == MPI_ROOT ? i : color == 1 && i % 2 == 0 ? i : -1);
    CHECK(ok, "%s bcast of a strided datatype", how);
    MPI_Type_free(&every_other);

    /* Reduce to local rank 0 of the odds: the sum over the evens. */
    root = color == 1 ? (lr == 0 ? MPI_ROOT : MPI_PROC_NULL) : 0;
    int in[3] = {rank, rank + 1, rank + 2}, out[3] = {-1, -1, -1};
    CHECK(COLL(MPI_Reduce, MPI_Ireduce, in, out, 3, MPI_INT, MPI_SUM, root, ic) == MPI_SUCCESS, "%s reduce", how);
    if (root == MPI_ROOT)
        CHECK(out[0] == remote_sum(0) && out[1] == remote_sum(1) && out[2] == remote_sum(2),
              "%s reduce: the root has the other group's sum (%d)", how, out[0]);

    /* Gather to the last even rank, scatter back from it: 2 ints per odd rank. */
    int root_lr = (size + 1) / 2 - 1;
    root = color == 0 ? (lr == root_lr ? MPI_ROOT : MPI_PROC_NULL) : root_lr;
    int mine[2] = {rank, 10 * rank}, all[64];
    for (int i = 0; i < 64; i++)
        all[i] = -1;
    CHECK(COLL(MPI_Gather, MPI_Igather, mine, 2, MPI_INT, all, 2, MPI_INT, root, ic) == MPI_SUCCESS, "%s gather", how);
    if (root == MPI_ROOT) {
        ok = 1;
        for (int j = 0; j < nr; j++)
            ok = ok && all[2 * j] == remote_world(j) && all[2 * j + 1] == 10 * remote_world(j);
        CHECK(ok, "%s gather: the root has every remote process's block", how);
    }
    /* Gatherv: remote rank j sends j + 1 ints, placed from the end. */
    int counts[32], displs[32], at = 0, v[8];
    for (int j = nr - 1; j >= 0; j--) {
        counts[j] = j + 1;
        displs[j] = at;
        at += j + 1;
    }
    for (int i = 0; i < 8; i++)
        v[i] = rank * 100 + i;
    for (int i = 0; i < 64; i++)
        all[i] = -1;
    CHECK(COLL(MPI_Gatherv, MPI_Igatherv, v, color == 1 ? lr + 1 : 0, MPI_INT, all, counts, displs, MPI_INT, root, ic) == MPI_SUCCESS,
          "%s gatherv", how);
    if (root == MPI_ROOT) {
        ok = 1;
        for (int j = 0; j < nr; j++)
            for (int k = 0; k < counts[j]; k++)
                ok = ok && all[displs[j] + k] == remote_world(j) * 100 + k;
        CHECK(ok, "%s gatherv: blocks of remote sizes in their places", how);
    }
    /* Scatter: block j is {j, 2j}; scatterv: block j holds j + 1 ints. */
    for (int j = 0; j < 32; j++) {
        all[2 * j] = j;
        all[2 * j + 1] = 2 * j;
    }
    int got[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    CHECK(COLL(MPI_Scatter, MPI_Iscatter, all, 2, MPI_INT, got, 2, MPI_INT, root, ic) == MPI_SUCCESS, "%s scatter", how);
    if (color == 1)
        CHECK(got[0] == lr && got[1] == 2 * lr, "%s scatter: block %d", how, lr);
    for (int i = 0; i < 64; i++)
        all[i] = i;
    for (int i = 0; i < 8; i++)
        got[i] = -1;
    CHECK(COLL(MPI_Scatterv, MPI_Iscatterv, all, counts, displs, MPI_INT, got, color == 1 ? lr + 1 : 0, MPI_INT, root, ic) == MPI_SUCCESS,
          "%s scatterv", how);
    if (color == 1) {
        /* Where the root (whose remote group is this one) put this process's block. */
        int from = 0;
        for (int j = lr + 1; j < nl; j++)
            from += j + 1;
        ok = 1;
        for (int k = 0; k < lr + 1; k++)
            ok = ok && got[k] == from + k;
        CHECK(ok && got[lr + 1] == -1, "%s scatterv: %d ints", how, lr + 1);
    }
}

static void everywhere(int nb)
{
    const char *how = nb ? "nonblocking" : "blocking";
    int ok = 1;
    CHECK((nb ? (MPI_Ibarrier(ic, &req) || MPI_Wait(&req, MPI_STATUS_IGNORE)) : MPI_Barrier(ic)) == MPI_SUCCESS,
          "%s barrier", how);

    int in[2] = {rank, rank + 1}, out[2] = {-1, -1};
    CHECK(COLL(MPI_Allreduce, MPI_Iallreduce, in, out, 2, MPI_INT, MPI_SUM, ic) == MPI_SUCCESS, "%s allreduce", how);
    CHECK(out[0] == remote_sum(0) && out[1] == remote_sum(1), "%s allreduce: the other group's sum %d", how, out[0]);

    int all[64], blocks[64], rc[32], rd[32], sc[32], sd[32];
    for (int i = 0; i < 64; i++)
        all[i] = -1;
    CHECK(COLL(MPI_Allgather, MPI_Iallgather, &rank, 1, MPI_INT, all, 1, MPI_INT, ic) == MPI_SUCCESS, "%s allgather", how);
    for (int j = 0; j < nr; j++)
        ok = ok && all[j] == remote_world(j);
    CHECK(ok, "%s allgather: the remote world ranks in order", how);
    /* Allgatherv: a process of local rank i sends i + 1 copies of its world rank. */
    int mine[16];
    for (int k = 0; k < 16; k++)
        mine[k] = rank;
    int at = 0;
    for (int j = 0; j < nr; j++) {
        rc[j] = j + 1;
        rd[j] = at;
        at += j + 2; /* a hole after each block */
    }
    for (int i = 0; i < 64; i++)
        all[i] = -1;
    CHECK(COLL(MPI_Allgatherv, MPI_Iallgatherv, mine, lr + 1, MPI_INT, all, rc, rd, MPI_INT, ic) == MPI_SUCCESS, "%s allgatherv", how);
    ok = 1;
    for (int j = 0; j < nr; j++) {
        for (int k = 0; k < rc[j]; k++)
            ok = ok && all[rd[j] + k] == remote_world(j);
        ok = ok && all[rd[j] + rc[j]] == -1;
    }
    CHECK(ok, "%s allgatherv: blocks and holes", how);

    /* Alltoall: the block for remote rank j is rank * 100 + j. */
    for (int j = 0; j < nr; j++)
        blocks[j] = rank * 100 + j;
    for (int i = 0; i < 64; i++)
        all[i] = -1;
    CHECK(COLL(MPI_Alltoall, MPI_Ialltoall, blocks, 1, MPI_INT, all, 1, MPI_INT, ic) == MPI_SUCCESS, "%s alltoall", how);
    ok = 1;
    for (int j = 0; j < nr; j++)
        ok = ok && all[j] == remote_world(j) * 100 + lr;
    CHECK(ok, "%s alltoall: block %d of every remote process", how, lr);
    /* Alltoallv: 1 + (i + j) % 2 ints between local rank i and remote rank j (the same both
     * ways), values rank * 100 + j. */
    int sat = 0, rat = 0;
    for (int j = 0; j < nr; j++) {
        sc[j] = rc[j] = 1 + (lr + j) % 2;
        sd[j] = sat;
        rd[j] = rat;
        for (int k = 0; k < sc[j]; k++)
            blocks[sat + k] = rank * 100 + j;
        sat += sc[j];
        rat += rc[j] + 1;
    }
    for (int i = 0; i < 64; i++)
        all[i] = -1;
    CHECK(COLL(MPI_Alltoallv, MPI_Ialltoallv, blocks, sc, sd, MPI_INT, all, rc, rd, MPI_INT, ic) == MPI_SUCCESS, "%s alltoallv", how);
    ok = 1;
    for (int j = 0; j < nr; j++)
        for (int k = 0; k < rc[j]; k++)
            ok = ok && all[rd[j] + k] == remote_world(j) * 100 + lr;
    CHECK(ok, "%s alltoallv", how);
    /* Alltoallw: the alltoall above, byte displacements, a type per block. */
    MPI_Datatype types[32];
    for (int j = 0; j < nr; j++) {
        blocks[j] = rank * 100 + j;
        sc[j] = rc[j] = 1;
        sd[j] = j * (int)sizeof(int);
        rd[j] = (nr - 1 - j) * (int)sizeof(int);
        types[j] = MPI_INT;
    }
    for (int i = 0; i < 64; i++)
        all[i] = -1;
    CHECK(COLL(MPI_Alltoallw, MPI_Ialltoallw, blocks, sc, sd, types, all, rc, rd, types, ic) == MPI_SUCCESS, "%s alltoallw", how);
    ok = 1;
    for (int j = 0; j < nr; j++)
        ok = ok && all[nr - 1 - j] == remote_world(j) * 100 + lr;
    CHECK(ok, "%s alltoallw, blocks reversed", how);

    /* Reduce_scatter: 6 ints, spread over the local group; element k of the vector of the
     * process of world rank w is w + k. */
    int vec[64], rcounts[32], base = 0;
    for (int k = 0; k < 6; k++)
        vec[k] = rank + k;
    for (int i = 0; i < nl; i++)
        rcounts[i] = 6 / nl + (i < 6 % nl);
    for (int i = 0; i < lr; i++)
        base += rcounts[i];
    int res[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
    CHECK(COLL(MPI_Reduce_scatter, MPI_Ireduce_scatter, vec, res, rcounts, MPI_INT, MPI_SUM, ic) == MPI_SUCCESS,
          "%s reduce_scatter", how);
    ok = 1;
    for (int k = 0; k < rcounts[lr]; k++)
        ok = ok && res[k] == remote_sum(base + k);
    CHECK(ok, "%s reduce_scatter: %d elements from %d", how, rcounts[lr], base);
    /* Reduce_scatter_block: nl * nr elements in both groups, nr per local process. */
    for (int k = 0; k < nl * nr; k++)
        vec[k] = rank + k;
    for (int i = 0; i < 8; i++)
        res[i] = -1;
    CHECK(COLL(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, vec, res, nr, MPI_INT, MPI_SUM, ic) == MPI_SUCCESS,
          "%s reduce_scatter_block", how);
    ok = 1;
    for (int k = 0; k < nr; k++)
        ok = ok && res[k] == remote_sum(lr * nr + k);
    CHECK(ok, "%s reduce_scatter_block", how);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    if (size >= 2) {
        MPI_Comm local;
        color = rank % 2;
        MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
        MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 7, &ic);
        MPI_Comm_free(&local);
        MPI_Comm_set_errhandler(ic, MPI_ERRORS_RETURN);
        MPI_Comm_rank(ic, &lr);
        MPI_Comm_size(ic, &nl);
        MPI_Comm_remote_size(ic, &nr);
        CHECK(local_world(lr) == rank, "local rank %d of %d, %d remote", lr, nl, nr);
        for (int nb = 0; nb < 2; nb++) {
            rooted(nb);
            everywhere(nb);
        }
        int x = 0, y = 0;
        CHECK_ERR(MPI_Bcast(&x, 1, MPI_INT, nr, ic), MPI_ERR_ROOT, "root");
        CHECK_ERR(MPI_Bcast(&x, 1, MPI_INT, -7, ic), MPI_ERR_ROOT, "root");
        CHECK_ERR(MPI_Allreduce(MPI_IN_PLACE, &y, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_BUFFER, "MPI_IN_PLACE");
        CHECK_ERR(MPI_Scan(&x, &y, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM, "intercommunicator");
        CHECK_ERR(MPI_Exscan(&x, &y, 1, MPI_INT, MPI_SUM, ic), MPI_ERR_COMM, "intercommunicator");
        MPI_Barrier(ic);
        MPI_Comm_free(&ic);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
