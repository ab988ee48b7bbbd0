/* Groups: every MPI_Group_ call of the library, results and error paths (MPI_ERRORS_RETURN on
 * MPI_COMM_WORLD, whose handler group errors go to). Run with 4 processes; the expected
 * groups are those MPICH 4.0.2 gives (madmpi/tests/c/group_check.mpich-4.0.2.txt).
 *
 * Differences from MPICH 4.0.2, skipped when running on it: a rank listed twice in
 * MPI_Group_incl / _excl is MPI_ERR_RANK here (MPICH builds a group with a process twice, or a
 * wrong group); null rank arrays are MPI_ERR_ARG here (MPICH crashes; not run there); a handle
 * that was never handed out, or was freed, is MPI_ERR_GROUP here (MPICH reads it as a group). */
#include "check.h"

static int rank;

/* Whether `g` is the group of world ranks `w[0..n)`, in that order. */
static int is_group(MPI_Group g, int n, const int *w)
{
    MPI_Group world;
    int size = -1, i, out[8], in[8];
    if (MPI_Group_size(g, &size) != MPI_SUCCESS || size != n || n > 8)
        return 0;
    for (i = 0; i < n; i++)
        in[i] = i;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_translate_ranks(g, n, in, world, out);
    MPI_Group_free(&world);
    for (i = 0; i < n; i++)
        if (out[i] != w[i])
            return 0;
    return 1;
}

#define GROUP(g, ...)                                                                          \
    is_group((g), sizeof((int[]){__VA_ARGS__}) / sizeof(int), (int[]){__VA_ARGS__})

static void subsets(MPI_Group world)
{
    MPI_Group g = MPI_GROUP_NULL;
    int r31[2] = {3, 1}, r13[2] = {1, 3}, r4[1] = {4}, rneg[1] = {-1}, r11[2] = {1, 1};
    int ranges[2][3] = {{3, 0, -1}, {0, 0, 1}}, zero[1][3] = {{0, 3, 0}}, out_of[1][3] = {{0, 4, 1}};
    int twice[2][3] = {{0, 1, 1}, {1, 2, 1}}, even[1][3] = {{0, 3, 2}};

    CHECK(MPI_Group_incl(world, 2, r31, &g) == MPI_SUCCESS && GROUP(g, 3, 1), "incl [3,1]: [3,1]");
    MPI_Group_free(&g);
    CHECK(MPI_Group_incl(world, 0, NULL, &g) == MPI_SUCCESS && g == MPI_GROUP_EMPTY,
          "incl []: MPI_GROUP_EMPTY");
    CHECK(MPI_Group_excl(world, 2, r13, &g) == MPI_SUCCESS && GROUP(g, 0, 2), "excl [1,3]: [0,2]");
    MPI_Group_free(&g);
    CHECK(MPI_Group_excl(world, 0, NULL, &g) == MPI_SUCCESS && GROUP(g, 0, 1, 2, 3), "excl []: everybody");
    MPI_Group_free(&g);
    CHECK(MPI_Group_range_incl(world, 1, ranges, &g) == MPI_SUCCESS && GROUP(g, 3, 2, 1, 0),
          "range_incl (3,0,-1): [3,2,1,0]");
    MPI_Group_free(&g);
    CHECK(MPI_Group_range_incl(world, 1, even, &g) == MPI_SUCCESS && GROUP(g, 0, 2), "range_incl (0,3,2): [0,2]");
    MPI_Group_free(&g);
    CHECK(MPI_Group_range_excl(world, 1, even, &g) == MPI_SUCCESS && GROUP(g, 1, 3), "range_excl (0,3,2): [1,3]");
    MPI_Group_free(&g);
    CHECK(MPI_Group_range_excl(world, 1, ranges, &g) == MPI_SUCCESS && g == MPI_GROUP_EMPTY,
          "range_excl (3,0,-1): MPI_GROUP_EMPTY");

    CHECK_ERR(MPI_Group_incl(world, 1, r4, &g), MPI_ERR_RANK, "rank 4");
    CHECK_ERR(MPI_Group_incl(world, 1, rneg, &g), MPI_ERR_RANK, "rank -1");
    CHECK_ERR(MPI_Group_incl(world, -1, r31, &g), MPI_ERR_ARG, "negative");
    CHECK_ERR(MPI_Group_incl(world, 2, r31, NULL), MPI_ERR_ARG, "newgroup");
    CHECK_ERR(MPI_Group_excl(world, 1, r4, &g), MPI_ERR_RANK, "rank 4");
    CHECK_ERR(MPI_Group_excl(world, -1, r4, &g), MPI_ERR_ARG, "negative");
    CHECK_ERR(MPI_Group_range_incl(world, 1, zero, &g), MPI_ERR_ARG, "zero stride");
    CHECK_ERR(MPI_Group_range_incl(world, 1, out_of, &g), MPI_ERR_ARG, "out of the group");
    CHECK_ERR(MPI_Group_range_incl(world, 2, twice, &g), MPI_ERR_ARG, "already listed");
    CHECK_ERR(MPI_Group_range_excl(world, 1, zero, &g), MPI_ERR_ARG, "zero stride");
    CHECK_ERR(MPI_Group_range_excl(world, -2, zero, &g), MPI_ERR_ARG, "negative");
    CHECK_ERR(MPI_Group_incl(MPI_GROUP_NULL, 2, r31, &g), MPI_ERR_GROUP, "MPI_GROUP_NULL");
    if (on_madmpi()) {
        CHECK_ERR(MPI_Group_excl((MPI_Group)0x88000123, 0, NULL, &g), MPI_ERR_GROUP, "group");
        CHECK_ERR(MPI_Group_incl(world, 2, r11, &g), MPI_ERR_RANK, "twice");
        CHECK_ERR(MPI_Group_excl(world, 2, r11, &g), MPI_ERR_RANK, "twice");
        CHECK_ERR(MPI_Group_incl(world, 1, NULL, &g), MPI_ERR_ARG, "ranks");
        CHECK_ERR(MPI_Group_range_incl(world, 1, NULL, &g), MPI_ERR_ARG, "ranges");
    }
}

static void set_operations(MPI_Group world)
{
    MPI_Group a, b, c, g = MPI_GROUP_NULL;
    int ra[3] = {3, 1, 2}, rb[3] = {0, 2, 1}, rc[2] = {3, 1};

    MPI_Group_incl(world, 3, ra, &a);
    MPI_Group_incl(world, 3, rb, &b);
    MPI_Group_incl(world, 2, rc, &c);
    CHECK(MPI_Group_union(a, b, &g) == MPI_SUCCESS && GROUP(g, 3, 1, 2, 0), "union a b: [3,1,2,0]");
    MPI_Group_free(&g);
    CHECK(MPI_Group_union(b, a, &g) == MPI_SUCCESS && GROUP(g, 0, 2, 1, 3), "union b a: [0,2,1,3]");
    MPI_Group_free(&g);
    CHECK(MPI_Group_union(MPI_GROUP_EMPTY, MPI_GROUP_EMPTY, &g) == MPI_SUCCESS && g == MPI_GROUP_EMPTY,
          "union empty empty: MPI_GROUP_EMPTY");
    CHECK(MPI_Group_intersection(a, b, &g) == MPI_SUCCESS && GROUP(g, 1, 2), "intersection a b: [1,2]");
    MPI_Group_free(&g);
    CHECK(MPI_Group_intersection(b, a, &g) == MPI_SUCCESS && GROUP(g, 2, 1), "intersection b a: [2,1]");
    MPI_Group_free(&g);
    CHECK(MPI_Group_intersection(a, MPI_GROUP_EMPTY, &g) == MPI_SUCCESS && g == MPI_GROUP_EMPTY,
          "intersection a empty: MPI_GROUP_EMPTY");
    CHECK(MPI_Group_difference(a, b, &g) == MPI_SUCCESS && GROUP(g, 3), "difference a b: [3]");
    MPI_Group_free(&g);
    CHECK(MPI_Group_difference(a, c, &g) == MPI_SUCCESS && GROUP(g, 2), "difference a c: [2]");
    MPI_Group_free(&g);
    CHECK(MPI_Group_difference(a, a, &g) == MPI_SUCCESS && g == MPI_GROUP_EMPTY, "difference a a: empty");
    CHECK_ERR(MPI_Group_union(a, MPI_GROUP_NULL, &g), MPI_ERR_GROUP, "MPI_GROUP_NULL");
    CHECK_ERR(MPI_Group_intersection(MPI_GROUP_NULL, a, &g), MPI_ERR_GROUP, "MPI_GROUP_NULL");
    CHECK_ERR(MPI_Group_difference(a, b, NULL), MPI_ERR_ARG, "newgroup");
    MPI_Group_free(&a);
    MPI_Group_free(&b);
    MPI_Group_free(&c);
}

static void queries(MPI_Group world)
{
    MPI_Group a, b, e, a2;
    int ra[3] = {3, 1, 2}, rb[3] = {0, 2, 1}, re[3] = {1, 2, 3}, in[4] = {0, 1, 2, MPI_PROC_NULL};
    int out[4] = {-9, -9, -9, -9}, bad[1] = {3}, neg[1] = {-2}, undef[1] = {MPI_UNDEFINED};
    int res = -1, n = -1, r = -9;

    MPI_Group_incl(world, 3, ra, &a);
    MPI_Group_incl(world, 3, rb, &b);
    MPI_Group_incl(world, 3, re, &e);
    MPI_Group_incl(world, 3, ra, &a2);
    CHECK(MPI_Group_translate_ranks(a, 4, in, b, out) == MPI_SUCCESS && out[0] == MPI_UNDEFINED && out[1] == 2 &&
              out[2] == 1 && out[3] == MPI_PROC_NULL,
          "translate a [0,1,2,PROC_NULL] b: [UNDEFINED,2,1,PROC_NULL]");
    CHECK(MPI_Group_translate_ranks(MPI_GROUP_EMPTY, 1, in + 3, a, out) == MPI_SUCCESS && out[0] == MPI_PROC_NULL,
          "translate from the empty group: PROC_NULL stays");
    CHECK(MPI_Group_translate_ranks(a, 0, NULL, b, NULL) == MPI_SUCCESS, "translate no ranks");
    CHECK_ERR(MPI_Group_translate_ranks(a, 1, bad, b, out), MPI_ERR_RANK, "rank 3");
    CHECK_ERR(MPI_Group_translate_ranks(a, 1, neg, b, out), MPI_ERR_RANK, "rank -2");
    CHECK_ERR(MPI_Group_translate_ranks(a, 1, undef, b, out), MPI_ERR_RANK, "rank");
    CHECK_ERR(MPI_Group_translate_ranks(a, -1, in, b, out), MPI_ERR_ARG, "negative");
    CHECK_ERR(MPI_Group_translate_ranks(a, 1, in, MPI_GROUP_NULL, out), MPI_ERR_GROUP, "MPI_GROUP_NULL");
    if (on_madmpi()) {
        out[0] = 2;
        CHECK(MPI_Group_translate_ranks(a, 1, out, b, out) == MPI_SUCCESS && out[0] == 1,
              "translate in place (the same array for both; MPI forbids it, MPICH crashes)");
        CHECK_ERR(MPI_Group_translate_ranks(a, 1, NULL, b, out), MPI_ERR_ARG, "ranks1");
        CHECK_ERR(MPI_Group_translate_ranks(a, 1, in, b, NULL), MPI_ERR_ARG, "ranks2");
    }

    CHECK(MPI_Group_compare(a, a, &res) == MPI_SUCCESS && res == MPI_IDENT, "compare a a: MPI_IDENT");
    CHECK(MPI_Group_compare(a, a2, &res) == MPI_SUCCESS && res == MPI_IDENT, "compare a a2: MPI_IDENT");
    CHECK(MPI_Group_compare(a, e, &res) == MPI_SUCCESS && res == MPI_SIMILAR, "compare a e: MPI_SIMILAR");
    CHECK(MPI_Group_compare(a, b, &res) == MPI_SUCCESS && res == MPI_UNEQUAL, "compare a b: MPI_UNEQUAL");
    CHECK(MPI_Group_compare(MPI_GROUP_EMPTY, MPI_GROUP_EMPTY, &res) == MPI_SUCCESS && res == MPI_IDENT,
          "compare empty empty: MPI_IDENT");
    CHECK_ERR(MPI_Group_compare(a, b, NULL), MPI_ERR_ARG, "result");
    CHECK_ERR(MPI_Group_compare(a, MPI_GROUP_NULL, &res), MPI_ERR_GROUP, "MPI_GROUP_NULL");

    CHECK(MPI_Group_size(a, &n) == MPI_SUCCESS && n == 3, "size a: 3");
    CHECK(MPI_Group_size(MPI_GROUP_EMPTY, &n) == MPI_SUCCESS && n == 0, "size empty: 0");
    CHECK(MPI_Group_rank(a, &r) == MPI_SUCCESS && r == (rank == 3 ? 0 : rank == 1 ? 1 : rank == 2 ? 2 : MPI_UNDEFINED),
          "rank in a: %d", r);
    CHECK(MPI_Group_rank(MPI_GROUP_EMPTY, &r) == MPI_SUCCESS && r == MPI_UNDEFINED, "rank in empty: MPI_UNDEFINED");
    CHECK_ERR(MPI_Group_size(MPI_GROUP_NULL, &n), MPI_ERR_GROUP, "MPI_GROUP_NULL");
    CHECK_ERR(MPI_Group_size(a, NULL), MPI_ERR_ARG, "size");
    CHECK_ERR(MPI_Group_rank(a, NULL), MPI_ERR_ARG, "rank");
    MPI_Group_free(&a);
    MPI_Group_free(&b);
    MPI_Group_free(&e);
    MPI_Group_free(&a2);
}

static void freeing(MPI_Group world)
{
    MPI_Group g, stale, empty = MPI_GROUP_EMPTY, null = MPI_GROUP_NULL;
    int n;

    MPI_Group_union(world, world, &g);
    stale = g;
    CHECK(MPI_Group_free(&g) == MPI_SUCCESS && g == MPI_GROUP_NULL, "MPI_Group_free sets MPI_GROUP_NULL");
    CHECK(MPI_Group_size(world, &n) == MPI_SUCCESS && n == 4, "other handles to the same group stay valid");
    if (on_madmpi()) { /* MPICH does not notice a freed handle */
        CHECK_ERR(MPI_Group_size(stale, &n), MPI_ERR_GROUP, "group");
        CHECK_ERR(MPI_Group_free(&stale), MPI_ERR_GROUP, "group");
    }
    CHECK(MPI_Group_free(&empty) == MPI_SUCCESS && empty == MPI_GROUP_NULL,
          "MPI_GROUP_EMPTY may be freed (as in MPICH)");
    CHECK(MPI_Group_size(MPI_GROUP_EMPTY, &n) == MPI_SUCCESS && n == 0, "... and stays valid");
    CHECK_ERR(MPI_Group_free(&null), MPI_ERR_GROUP, "MPI_GROUP_NULL");
    CHECK_ERR(MPI_Group_free(NULL), MPI_ERR_ARG, "group");
}

int main(int argc, char **argv)
{
    MPI_Group world;
    int size;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check_rank = rank;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK(size == 4, "run with 4 processes (%d)", size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world) == MPI_SUCCESS && GROUP(world, 0, 1, 2, 3), "the world group");
    subsets(world);
    set_operations(world);
    queries(world);
    freeing(world);
    MPI_Group_free(&world);
    MPI_Finalize();
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
