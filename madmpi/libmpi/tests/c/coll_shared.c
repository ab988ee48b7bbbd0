/* The node-local collectives (blocking barrier, broadcast, reduce and allreduce of at most 1 KiB
 * per rank through a segment the ranks of a node share, once a communicator started a few
 * collectives) against local references, in one job: thousands of back-to-back calls that
 * cycle through the segment's buffers (a root broadcasting again and again runs ahead of the
 * others), every root, sizes around the 1 KiB limit (the message path takes over above it),
 * ranks passing a predefined type beside ranks passing a vector (a scattered derived type of
 * the same type map: the general path, which must take the same road), in place, a
 * non-commutative user operation (combined in rank order), a reduction whose result must be the
 * same bits at every rank, nonblocking collectives in flight between blocking ones, a
 * duplicated and a split communicator, communicators made and freed. Any number of processes; runs on MPICH's library too. */
#include "check.h"

static int rank, size;

/* Many back-to-back calls: barrier, broadcast from a moving root, allreduce, reduce. */
static void many(MPI_Comm comm, int calls, const char *what)
{
    int me, p;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &p);
    long bad = 0;
    for (int i = 0; i < calls; i++) {
        int root = i % p;
        if (MPI_Barrier(comm) != MPI_SUCCESS)
            bad++;
        long b[6];
        for (int k = 0; k < 6; k++)
            b[k] = me == root ? (long)i * 100 + k : -1;
        MPI_Bcast(b, 6, MPI_LONG, root, comm);
        for (int k = 0; k < 6; k++)
            bad += b[k] != (long)i * 100 + k;
        if (i % 7 == 0) /* a root broadcasting several times in a row */
            for (int k = 0; k < 20; k++) {
                int v = me == root ? i + k : -1;
                MPI_Bcast(&v, 1, MPI_INT, root, comm);
                bad += v != i + k;
            }
        double x = me + i * 0.5, s = -1;
        MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, comm);
        bad += s != p * i * 0.5 + p * (p - 1) / 2.0;
        int r = me + 1, prod = -1;
        MPI_Reduce(&r, &prod, 1, MPI_INT, MPI_PROD, root, comm);
        if (me == root) {
            int w = 1;
            for (int k = 1; k <= p; k++)
                w *= k;
            bad += prod != w;
        }
    }
    CHECK(bad == 0, "%s: %d rounds of barrier, bcast, allreduce, reduce (%ld wrong)", what, calls, bad);
}

/* Allreduce and broadcast of `n` ints, even ranks with MPI_INT (contiguous), odd ranks with a
 * vector over every other int of a 2n buffer. */
static void mixed(int n)
{
    MPI_Datatype vec;
    MPI_Type_vector(n, 1, 2, MPI_INT, &vec);
    MPI_Type_commit(&vec);
    int *in = malloc(sizeof(int) * 2 * n), *out = malloc(sizeof(int) * 2 * n);
    int odd = rank % 2;
    for (int i = 0; i < n; i++) {
        in[odd ? 2 * i : i] = rank * 1000 + i;
        if (odd)
            in[2 * i + 1] = -7;
    }
    for (int i = 0; i < 2 * n; i++)
        out[i] = -9;
    CHECK(MPI_Allreduce(in, out, odd ? 1 : n, odd ? vec : MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS,
          "allreduce of %d ints", n);
    int ok = 1;
    for (int i = 0; i < n; i++)
        ok &= out[odd ? 2 * i : i] == 1000 * (size * (size - 1) / 2) + size * i;
    for (int i = 0; odd && i < n; i++)
        ok &= out[2 * i + 1] == -9; /* the holes of the vector stay untouched */
    CHECK(ok, "allreduce of %d ints (%d B), %s type", n, n * 4, odd ? "vector" : "predefined");
    for (int root = 0; root < size; root++) {
        for (int i = 0; i < 2 * n; i++)
            out[i] = rank == root ? root * 77 + i : -1;
        MPI_Bcast(out, odd ? 1 : n, odd ? vec : MPI_INT, root, MPI_COMM_WORLD);
        ok = 1;
        for (int i = 0; i < n; i++) {
            int at = odd ? 2 * i : i;
            int from = root % 2 ? 2 * i : i; /* where the root's type takes element i */
            ok &= out[at] == root * 77 + from;
        }
        CHECK(ok, "bcast of %d ints from %d, %s type", n, root, odd ? "vector" : "predefined");
    }
    int red = -1;
    int mine = rank + n;
    MPI_Reduce(&mine, &red, 1, MPI_INT, MPI_MAX, size - 1, MPI_COMM_WORLD);
    CHECK(rank != size - 1 || red == size - 1 + n, "reduce max at the last rank");
    free(in);
    free(out);
    MPI_Type_free(&vec);
}

/* The same bits everywhere: a sum of doubles that depends on the order of the additions. */
static void same_bits(void)
{
    double x = rank % 2 ? 1e16 : 1.0 + rank, s = 0, all[64];
    MPI_Allreduce(&x, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allgather(&s, 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
    int ok = 1;
    for (int r = 0; r < size && r < 64; r++)
        ok &= !memcmp(&all[r], &s, sizeof s);
    CHECK(ok, "allreduce of doubles: the same bits at every rank");
}

static void noncommutative(void)
{
    MPI_Op op;
    MPI_Datatype int4;
    MPI_Type_contiguous(4, MPI_INT, &int4);
    MPI_Type_commit(&int4);
    CHECK(MPI_Op_create(check_matmul, 0, &op) == MPI_SUCCESS, "MPI_Op_create (non-commutative)");
    int want[4] = {1, 0, 0, 1};
    for (int r = size - 1; r >= 0; r--) { /* want = A_0 A_1 ... A_{size-1} */
        int a[4] = {r + 2, 1, 0, 1}, n = 1;
        check_matmul(a, want, &n, NULL);
    }
    for (int i = 0; i < 50; i++) {
        int m[4] = {rank + 2, 1, 0, 1}, out[4] = {0};
        CHECK(MPI_Allreduce(m, out, 1, int4, op, MPI_COMM_WORLD) == MPI_SUCCESS, "allreduce matmul");
        CHECK(!memcmp(out, want, sizeof want), "non-commutative allreduce %d in rank order", i);
        int root = i % size;
        memset(out, 0, sizeof out);
        MPI_Reduce(m, out, 1, int4, op, root, MPI_COMM_WORLD);
        CHECK(rank != root || !memcmp(out, want, sizeof want), "non-commutative reduce %d at %d", i, root);
        memcpy(out, m, sizeof m);
        MPI_Allreduce(MPI_IN_PLACE, out, 1, int4, op, MPI_COMM_WORLD);
        CHECK(!memcmp(out, want, sizeof want), "non-commutative allreduce in place %d", i);
    }
    MPI_Op_free(&op);
    MPI_Type_free(&int4);
}

/* Nonblocking collectives left in flight across blocking ones. */
static void interleaved(void)
{
    int a = rank, sa = -1, b[4] = {0};
    MPI_Request r[2];
    MPI_Iallreduce(&a, &sa, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r[0]);
    for (int i = 0; i < 10; i++) {
        int x = 1, s = 0;
        MPI_Allreduce(&x, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        CHECK(s == size, "blocking allreduce %d beside a nonblocking one", i);
    }
    if (rank == 0)
        b[0] = 42, b[3] = 43;
    MPI_Ibcast(b, 4, MPI_INT, 0, MPI_COMM_WORLD, &r[1]);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Waitall(2, r, MPI_STATUSES_IGNORE);
    CHECK(sa == size * (size - 1) / 2 && b[0] == 42 && b[3] == 43, "nonblocking collectives completed");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;

    many(MPI_COMM_WORLD, 3000, "world");
    for (int n = 1; n <= 128; n *= 2)
        mixed(n);
    for (int n = 250; n <= 262; n += 2) /* 1000 B to 1048 B: across the 1 KiB limit */
        mixed(n);
    mixed(512);
    same_bits();
    noncommutative();
    interleaved();

    MPI_Comm dup, half;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    many(dup, 500, "dup");
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half);
    many(half, 500, "split");
    MPI_Comm_free(&half);
    MPI_Comm_free(&dup);
    for (int k = 0; k < 3; k++) { /* communicators made and freed: each its own segment */
        MPI_Comm c;
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        many(c, 20, "short-lived dup");
        MPI_Comm_free(&c);
    }
    many(MPI_COMM_WORLD, 100, "world again");
    MPI_Finalize();
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
