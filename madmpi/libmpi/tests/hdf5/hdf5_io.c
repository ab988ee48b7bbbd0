/* Parallel HDF5 over MPI-IO: a 2-D dataset of doubles written collectively by every process
 * (a row block each), then read back collectively by the first two processes (one half each)
 * through a second communicator. Built against Debian's libhdf5-mpich (MPICH's ABI); the test
 * harness runs it on MPICH's library and on ours and compares the files.
 *
 * Usage: hdf5_io FILE [ROWS COLS]   (ROWS a multiple of the process count and of 2) */
#include <hdf5.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            printf("FAIL %d: ", rank);                                                         \
            printf(__VA_ARGS__);                                                               \
            printf("\n");                                                                      \
            fflush(stdout);                                                                    \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                      \
        }                                                                                      \
    } while (0)

static int rank;

static double value(hsize_t r, hsize_t c) { return (double)r * 1000.0 + (double)c + 0.25; }

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *path = argc > 1 ? argv[1] : "hdf5_io.h5";
    hsize_t rows = argc > 2 ? strtoull(argv[2], NULL, 10) : 64;
    hsize_t cols = argc > 3 ? strtoull(argv[3], NULL, 10) : 48;
    CHECK(rows % (hsize_t)size == 0 && rows % 2 == 0, "rows %llu", (unsigned long long)rows);

    /* Write: every process a block of rows, collectively. */
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    CHECK(H5Pset_fapl_mpio(fapl, MPI_COMM_WORLD, MPI_INFO_NULL) >= 0, "set_fapl_mpio");
    hid_t file = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
    CHECK(file >= 0, "H5Fcreate %s", path);
    hsize_t dims[2] = {rows, cols};
    hid_t space = H5Screate_simple(2, dims, NULL);
    /* No modification times in the object headers: the file is then the same at every run. */
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(dcpl, 0);
    hid_t dset = H5Dcreate2(file, "matrix", H5T_IEEE_F64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    H5Pclose(dcpl);
    CHECK(dset >= 0, "H5Dcreate2");
    hsize_t mine = rows / (hsize_t)size;
    hsize_t start[2] = {mine * (hsize_t)rank, 0}, count[2] = {mine, cols};
    H5Sselect_hyperslab(space, H5S_SELECT_SET, start, NULL, count, NULL);
    hid_t mem = H5Screate_simple(2, count, NULL);
    double *buf = malloc(mine * cols * sizeof(double));
    for (hsize_t r = 0; r < mine; r++)
        for (hsize_t c = 0; c < cols; c++) buf[r * cols + c] = value(start[0] + r, c);
    hid_t dxpl = H5Pcreate(H5P_DATASET_XFER);
    H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
    CHECK(H5Dwrite(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf) >= 0, "H5Dwrite");
    int attr_value = 42;
    hid_t aspace = H5Screate(H5S_SCALAR);
    hid_t attr = H5Acreate2(dset, "answer", H5T_STD_I32LE, aspace, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, H5T_NATIVE_INT, &attr_value);
    H5Aclose(attr);
    H5Sclose(aspace);
    H5Pclose(dxpl);
    H5Sclose(mem);
    H5Sclose(space);
    H5Dclose(dset);
    H5Pclose(fapl);
    CHECK(H5Fclose(file) >= 0, "H5Fclose");
    free(buf);
    printf("OK %d: wrote rows %llu..%llu\n", rank, (unsigned long long)start[0],
           (unsigned long long)(start[0] + mine));

    /* Read: the first two processes, half the rows each, collectively over their own
     * communicator. */
    MPI_Comm two;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &two);
    if (two != MPI_COMM_NULL) {
        fapl = H5Pcreate(H5P_FILE_ACCESS);
        H5Pset_fapl_mpio(fapl, two, MPI_INFO_NULL);
        file = H5Fopen(path, H5F_ACC_RDONLY, fapl);
        CHECK(file >= 0, "H5Fopen");
        dset = H5Dopen2(file, "matrix", H5P_DEFAULT);
        space = H5Dget_space(dset);
        hsize_t got[2];
        H5Sget_simple_extent_dims(space, got, NULL);
        CHECK(got[0] == rows && got[1] == cols, "dims %llux%llu", (unsigned long long)got[0],
              (unsigned long long)got[1]);
        hsize_t half = rows / 2;
        hsize_t s2[2] = {half * (hsize_t)rank, 0}, c2[2] = {half, cols};
        H5Sselect_hyperslab(space, H5S_SELECT_SET, s2, NULL, c2, NULL);
        mem = H5Screate_simple(2, c2, NULL);
        buf = malloc(half * cols * sizeof(double));
        dxpl = H5Pcreate(H5P_DATASET_XFER);
        H5Pset_dxpl_mpio(dxpl, H5FD_MPIO_COLLECTIVE);
        CHECK(H5Dread(dset, H5T_NATIVE_DOUBLE, mem, space, dxpl, buf) >= 0, "H5Dread");
        for (hsize_t r = 0; r < half; r++)
            for (hsize_t c = 0; c < cols; c++)
                CHECK(buf[r * cols + c] == value(s2[0] + r, c), "value at %llu,%llu",
                      (unsigned long long)(s2[0] + r), (unsigned long long)c);
        attr = H5Aopen(dset, "answer", H5P_DEFAULT);
        attr_value = 0;
        H5Aread(attr, H5T_NATIVE_INT, &attr_value);
        CHECK(attr_value == 42, "attribute %d", attr_value);
        H5Aclose(attr);
        free(buf);
        H5Pclose(dxpl);
        H5Sclose(mem);
        H5Sclose(space);
        H5Dclose(dset);
        H5Pclose(fapl);
        H5Fclose(file);
        MPI_Comm_free(&two);
        printf("OK %d: read back rows %llu..%llu\n", rank, (unsigned long long)s2[0],
               (unsigned long long)(s2[0] + half));
    }
    printf("OK %d: all checks passed\n", rank);
    MPI_Finalize();
    return 0;
}
