/* Prints MPI_Dims_create's answer for 2,900 inputs (1 to 400 nodes in 1 to 5 free
 * dimensions, fixed entries in 3 and 4 dimensions, large highly composite numbers), one line each: tests/c_programs.rs runs
 * it on MPICH's own library and on ours and compares the outputs line by line. */
#include <mpi.h>
#include <stdio.h>

static void show(int n, int nd, int *d, const char *what)
{
    int rc = MPI_Dims_create(n, nd, d);
    printf("%d %d %s:", n, nd, what);
    if (rc != MPI_SUCCESS) {
        int cls;
        MPI_Error_class(rc, &cls);
        printf(" error class %d\n", cls);
        return;
    }
    for (int i = 0; i < nd; i++)
        printf(" %d", d[i]);
    printf("\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (int nd = 1; nd <= 5; nd++)
        for (int n = 1; n <= 400; n++) {
            int d[5] = {0, 0, 0, 0, 0};
            show(n, nd, d, "free");
        }
    for (int n = 1; n <= 300; n++) {
        int a[4] = {0, 2, 0, 0}, b[3] = {3, 0, 0}, c[3] = {0, 0, 5};
        show(n, 4, a, "[_ 2 _ _]");
        show(n, 3, b, "[3 _ _]");
        show(n, 3, c, "[_ _ 5]");
    }
    /* Not INT_MAX (a prime) in 3 dimensions: MPICH 4.0.2 divides by zero there. */
    const int large[][2] = {{735134400, 4}, {735134400, 8}, {1073741824, 10}, {2147483646, 12}, {1965600000, 9},
                            {720720, 20}};
    for (unsigned i = 0; i < sizeof large / sizeof *large; i++) {
        int d[20] = {0};
        show(large[i][0], large[i][1], d, "large");
    }
    MPI_Finalize();
    return 0;
}
