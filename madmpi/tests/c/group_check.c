/* Group operations against MPICH: prints one line per case, read by hand into
 * madmpi/src/group/tests.rs (expected values there come from MPICH 4.0.2).
 *
 *   mpicc.mpich group_check.c -o /tmp/group_check && mpiexec.hydra -n 4 /tmp/group_check
 *
 * Each line: "<case>: class=<MPI error class> group=[world ranks...]" or an array result. */
#include <mpi.h>
#include <stdio.h>

static MPI_Group world;

static void show(const char *name, int rc, MPI_Group g)
{
    int cls = 0;
    MPI_Error_class(rc, &cls);
    printf("%s: class=%d", name, cls);
    if (rc == MPI_SUCCESS) {
        int n, i, in[64], out[64];
        MPI_Group_size(g, &n);
        for (i = 0; i < n; i++) in[i] = i;
        MPI_Group_translate_ranks(g, n, in, world, out);
        printf(" group=[");
        for (i = 0; i < n; i++) printf(i ? ",%d" : "%d", out[i]);
        printf("]%s", g == MPI_GROUP_EMPTY ? " (MPI_GROUP_EMPTY)" : "");
    }
    printf("\n");
}

static MPI_Group incl(int n, int *r) { MPI_Group g; MPI_Group_incl(world, n, r, &g); return g; }

#define INCL(name, ...) do { int r[] = {__VA_ARGS__}; MPI_Group g; \
    int rc = MPI_Group_incl(world, sizeof r / sizeof r[0], r, &g); show(name, rc, g); } while (0)
#define EXCL(name, ...) do { int r[] = {__VA_ARGS__}; MPI_Group g; \
    int rc = MPI_Group_excl(world, sizeof r / sizeof r[0], r, &g); show(name, rc, g); } while (0)
#define RINCL(name, ...) do { int r[][3] = {__VA_ARGS__}; MPI_Group g; \
    int rc = MPI_Group_range_incl(world, sizeof r / sizeof r[0], r, &g); show(name, rc, g); } while (0)
#define REXCL(name, ...) do { int r[][3] = {__VA_ARGS__}; MPI_Group g; \
    int rc = MPI_Group_range_excl(world, sizeof r / sizeof r[0], r, &g); show(name, rc, g); } while (0)

static void translate(const char *name, MPI_Group a, int n, int *r, MPI_Group b)
{
    int out[16], cls = 0, i;
    int rc = MPI_Group_translate_ranks(a, n, r, b, out);
    MPI_Error_class(rc, &cls);
    printf("%s: class=%d", name, cls);
    if (rc == MPI_SUCCESS) {
        printf(" out=[");
        for (i = 0; i < n; i++) {
            if (out[i] == MPI_UNDEFINED) printf(i ? ",UNDEF" : "UNDEF");
            else if (out[i] == MPI_PROC_NULL) printf(i ? ",PROC_NULL" : "PROC_NULL");
            else printf(i ? ",%d" : "%d", out[i]);
        }
        printf("]");
    }
    printf("\n");
}

static void compare(const char *name, MPI_Group a, MPI_Group b)
{
    int res;
    MPI_Group_compare(a, b, &res);
    printf("%s: %s\n", name, res == MPI_IDENT ? "IDENT" : res == MPI_SIMILAR ? "SIMILAR"
           : res == MPI_UNEQUAL ? "UNEQUAL" : "?");
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    if (rank == 0) {
        MPI_Group g;
        int rc;

        INCL("incl [3,1]", 3, 1);
        rc = MPI_Group_incl(world, 0, NULL, &g); show("incl []", rc, g);
        INCL("incl [4]", 4);
        INCL("incl [-1]", -1);
        INCL("incl [1,1]", 1, 1);
        INCL("incl [0,1,2,3,0]", 0, 1, 2, 3, 0);
        { int r[] = {0}; rc = MPI_Group_incl(world, -1, r, &g); show("incl n=-1", rc, g); }
        { int r[] = {0, 1, 2, 3, 1}; rc = MPI_Group_incl(world, 5, r, &g); show("incl n=5 > size", rc, g); }
        INCL("incl [0,1,2,3]", 0, 1, 2, 3);

        EXCL("excl [1,3]", 1, 3);
        EXCL("excl [4]", 4);
        EXCL("excl [-1]", -1);
        EXCL("excl [2,2]", 2, 2);
        EXCL("excl [0,1,2,3]", 0, 1, 2, 3);
        rc = MPI_Group_excl(world, 0, NULL, &g); show("excl []", rc, g);
        { int r[] = {0, 1, 2, 3, 1}; rc = MPI_Group_excl(world, 5, r, &g); show("excl n=5 > size", rc, g); }

        RINCL("rincl (0,3,2)", {0, 3, 2});
        RINCL("rincl (3,0,-1)", {3, 0, -1});
        RINCL("rincl (3,0,-2)", {3, 0, -2});
        RINCL("rincl (0,3,0)", {0, 3, 0});
        RINCL("rincl (0,4,1)", {0, 4, 1});
        RINCL("rincl (-1,2,1)", {-1, 2, 1});
        RINCL("rincl (0,2,-1)", {0, 2, -1});
        RINCL("rincl (2,1,1)", {2, 1, 1});
        RINCL("rincl (0,1,1)(1,2,1)", {0, 1, 1}, {1, 2, 1});
        RINCL("rincl (1,1,1)", {1, 1, 1});
        RINCL("rincl (1,1,-1)", {1, 1, -1});
        RINCL("rincl (0,2,5)", {0, 2, 5});
        RINCL("rincl (3,3,-1)", {3, 3, -1});
        RINCL("rincl (0,3,3)", {0, 3, 3});
        RINCL("rincl (2,5,3)", {2, 5, 3});
        RINCL("rincl (3,-1,-2)", {3, -1, -2});
        RINCL("rincl (1,0,-5)", {1, 0, -5});
        RINCL("rincl (2,3,1)(0,0,1)", {2, 3, 1}, {0, 0, 1});
        RINCL("rincl (0,3,1)(3,3,1)", {0, 3, 1}, {3, 3, 1});
        RINCL("rincl (4,4,1)", {4, 4, 1});
        rc = MPI_Group_range_incl(world, 0, NULL, &g); show("rincl []", rc, g);

        REXCL("rexcl (0,3,2)", {0, 3, 2});
        REXCL("rexcl (3,0,-3)", {3, 0, -3});
        REXCL("rexcl (0,3,0)", {0, 3, 0});
        REXCL("rexcl (0,1,1)(1,2,1)", {0, 1, 1}, {1, 2, 1});
        REXCL("rexcl (0,4,1)", {0, 4, 1});
        REXCL("rexcl (2,1,1)", {2, 1, 1});
        REXCL("rexcl (0,2,-1)", {0, 2, -1});
        REXCL("rexcl (2,5,3)", {2, 5, 3});
        REXCL("rexcl (0,3,1)", {0, 3, 1});
        REXCL("rexcl (1,2,1)(3,3,1)", {1, 2, 1}, {3, 3, 1});
        rc = MPI_Group_range_excl(world, 0, NULL, &g); show("rexcl []", rc, g);

        {
            int ra[] = {3, 1, 2}, rb[] = {0, 2, 1}, rc3[] = {3, 1}, rd[] = {2, 0}, re[] = {1, 2, 3};
            MPI_Group a = incl(3, ra), b = incl(3, rb), c = incl(2, rc3), d = incl(2, rd), a2 = incl(3, ra);
            MPI_Group e = incl(3, re);
            rc = MPI_Group_union(a, b, &g); show("union a b", rc, g);
            rc = MPI_Group_union(b, a, &g); show("union b a", rc, g);
            rc = MPI_Group_union(c, d, &g); show("union c d", rc, g);
            rc = MPI_Group_union(d, c, &g); show("union d c", rc, g);
            rc = MPI_Group_union(MPI_GROUP_EMPTY, a, &g); show("union empty a", rc, g);
            rc = MPI_Group_union(MPI_GROUP_EMPTY, MPI_GROUP_EMPTY, &g); show("union empty empty", rc, g);
            rc = MPI_Group_intersection(a, b, &g); show("inter a b", rc, g);
            rc = MPI_Group_intersection(b, a, &g); show("inter b a", rc, g);
            rc = MPI_Group_intersection(c, d, &g); show("inter c d", rc, g);
            rc = MPI_Group_intersection(a, MPI_GROUP_EMPTY, &g); show("inter a empty", rc, g);
            rc = MPI_Group_difference(a, b, &g); show("diff a b", rc, g);
            rc = MPI_Group_difference(b, a, &g); show("diff b a", rc, g);
            rc = MPI_Group_difference(a, c, &g); show("diff a c", rc, g);
            rc = MPI_Group_difference(a, a, &g); show("diff a a", rc, g);
            rc = MPI_Group_difference(a, MPI_GROUP_EMPTY, &g); show("diff a empty", rc, g);

            { int r[] = {0, 1, 2, MPI_PROC_NULL}; translate("translate a [0,1,2,PROC_NULL] b", a, 4, r, b); }
            { int r[] = {0, 1}; translate("translate a [0,1] c", a, 2, r, c); }
            { int r[] = {3}; translate("translate a [3] b", a, 1, r, b); }
            { int r[] = {-2}; translate("translate a [-2] b", a, 1, r, b); }
            { int r[] = {MPI_UNDEFINED}; translate("translate a [UNDEFINED] b", a, 1, r, b); }
            { int r[] = {0, 1}; translate("translate a [0,1] empty", a, 2, r, MPI_GROUP_EMPTY); }
            { int r[] = {MPI_PROC_NULL}; translate("translate empty [PROC_NULL] a", MPI_GROUP_EMPTY, 1, r, a); }
            { int r[] = {0}; translate("translate empty [0] a", MPI_GROUP_EMPTY, 1, r, a); }
            translate("translate a n=0 b", a, 0, NULL, b);

            compare("compare a a", a, a);
            compare("compare a a2", a, a2);
            compare("compare a b", a, b);
            compare("compare a c", a, c);
            compare("compare a e", a, e);
            compare("compare c d", c, d);
            compare("compare empty empty", MPI_GROUP_EMPTY, MPI_GROUP_EMPTY);
            compare("compare empty a", MPI_GROUP_EMPTY, a);
            compare("compare world incl[0,1,2,3]", world, incl(4, (int[]){0, 1, 2, 3}));
            {
                int r;
                MPI_Group_rank(c, &r);
                printf("rank of world 0 in c: %s\n", r == MPI_UNDEFINED ? "UNDEF" : "defined");
                MPI_Group_rank(a, &r);
                printf("rank of world 0 in a: %s\n", r == MPI_UNDEFINED ? "UNDEF" : "defined");
                MPI_Group_rank(b, &r);
                printf("rank of world 0 in b: %d\n", r);
            }
        }
    }
    MPI_Finalize();
    return 0;
}
