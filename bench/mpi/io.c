/*
 * MPI-IO bandwidth of a strided pattern, for comparing MPI libraries (`madbench io` conducts it,
 * 4 ranks, one file per pattern in a directory it chooses: tmpfs or a local disk).
 *
 * The data: a 2-D array of R x C doubles in C order, R * C * 8 = the size asked for (C the
 * largest divisor of R * C not above its square root that the decomposition allows: 512 x 256
 * for 1 MiB, 16384 x 8192 for 1 GiB); element (i, j) holds i * C + j + 1.
 *
 *   rowblock      rank r owns rows [r R/4, (r+1) R/4): a subarray filetype (contiguous in the file)
 *   checkerboard  the ranks as a 2 x 2 grid (MPI_Dims_create), each an (R/2) x (C/2) block: a
 *                 subarray filetype whose pieces are C/2 doubles long
 *   strided       rank r owns the column block [r C/4, (r+1) C/4): a vector filetype (R blocks of
 *                 C/4 doubles, stride C) displaced by r C/4 doubles
 *
 * rowblock and checkerboard, per repetition: rank 0 deletes the file and syncs the file system
 * (syncfs: no earlier repetition's dirty pages left to write back), every rank opens it
 * (CREATE | RDWR) and sets the view, then MPI_File_write_all of its block, MPI_File_seek back
 * to the view's start and MPI_File_read_all of the block, each (not the seek) timed between
 * two MPI_Barriers (rank 0's clock); the file is closed and what was read compared with what
 * was written (and the counts with the block). strided, once per size: rank 0 writes the whole array
 * with POSIX write(2) and syncs the file system; per repetition every rank opens it read-only, sets the view and reads its
 * block with one independent MPI_File_read_at (a strided read: each library's data sieving
 * decides how it reaches the file; no hints are given), timed between two barriers, and checks
 * it. Bandwidth = the array's bytes / the time. No MPI_File_sync: these are page-cache
 * bandwidths (on tmpfs and on disk alike), not the disk's.
 *
 * After the repetitions of a size, rank 0 reads the file back with read(2), checks its length
 * and that its checksum (64-bit FNV-1a over the 8-byte words) is the expected array's (the
 * layout in the file is right, not only what the library reads back), and prints it with the
 * figures, so that the conductor can compare the files of the libraries too. Any mismatch ends
 * the job with a message (exit status 1).
 *
 * Rank 0 prints, after "# library <version>", for each size:
 *   m bench=io case=<rowblock|checkerboard>-<write|read> size=<bytes> median=<MB/s> min=.. max=..
 *     unit=MB/s rows=<R> cols=<C> piece=<bytes of a contiguous piece in the file> reps=<n>
 *     checksum=fnv:<16 hex digits>
 *   m bench=io case=strided-read ... (the same keys)
 *
 * Usage: io <reps> <rowblock|checkerboard|strided> <dir> <size in bytes>... (reps 1..99; the
 * file is <dir>/madbench-io-<pattern>.dat, deleted at the end). 4 ranks (any count that divides
 * the array evenly works).
 */
#define _GNU_SOURCE
#define BENCH_NAME "io"
#include "common.h"
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

#define MAX_REPS 99
#define MAX_SIZES 16
/* The chunk rank 0 writes, reads and checksums the file in. */
#define CHUNK (8 << 20)

enum pattern { ROWBLOCK, CHECKERBOARD, STRIDED };
static const char *pattern_name[] = { "rowblock", "checkerboard", "strided" };

static int rank, nprocs;

/* Any MPI error ends the job with the call's name and the library's message. */
static void check_io(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        char msg[MPI_MAX_ERROR_STRING] = "";
        int len = 0;
        MPI_Error_string(rc, msg, &len);
        fprintf(stderr, "io: rank %d: %s failed (%d): %s\n", rank, what, rc, msg);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void fail(const char *fmt, const char *detail)
{
    fprintf(stderr, "io: rank %d: ", rank);
    fprintf(stderr, fmt, detail);
    fprintf(stderr, "\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static inline double value(uint64_t i, uint64_t j, uint64_t cols)
{
    return (double)(i * cols + j + 1);
}

static inline uint64_t fnv_word(uint64_t h, const void *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return (h ^ w) * 0x100000001b3ull;
}

#define FNV_START 0xcbf29ce484222325ull

/* The array's shape: C the largest divisor of n (doubles) not above sqrt(n) with R and C each a
 * multiple of the grid's side along them; 0 if there is none. */
static uint64_t shape_cols(uint64_t n, int dr, int dc)
{
    uint64_t c = 1;
    while ((c + 1) * (c + 1) <= n)
        c++;
    for (; c >= 1; c--)
        if (n % c == 0 && c % (uint64_t)dc == 0 && (n / c) % (uint64_t)dr == 0)
            return c;
    return 0;
}

/* One pass over the file with read(2): its checksum, its length in *len. */
static uint64_t file_checksum(const char *path, char *chunk, uint64_t *len)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        fail("cannot open the file to check it: %s", strerror(errno));
    uint64_t h = FNV_START, total = 0;
    size_t carry = 0; /* bytes of a word split between two reads, at the chunk's start */
    for (;;) {
        ssize_t got = read(fd, chunk + carry, CHUNK - carry);
        if (got < 0)
            fail("reading the file back: %s", strerror(errno));
        if (got == 0)
            break;
        total += (uint64_t)got;
        size_t have = carry + (size_t)got, w = have / 8 * 8;
        for (size_t k = 0; k < w; k += 8)
            h = fnv_word(h, chunk + k);
        carry = have - w;
        memmove(chunk, chunk + w, carry);
    }
    close(fd);
    *len = total;
    return h;
}

/* The checksum the file must have. */
static uint64_t expected_checksum(uint64_t rows, uint64_t cols)
{
    uint64_t h = FNV_START;
    for (uint64_t i = 0; i < rows; i++)
        for (uint64_t j = 0; j < cols; j++) {
            double v = value(i, j, cols);
            h = fnv_word(h, &v);
        }
    return h;
}

/* Rank 0 writes the whole array to `path` with write(2) (the strided read's input). */
static void posix_write_array(const char *path, uint64_t rows, uint64_t cols, char *chunk)
{
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0)
        fail("cannot create the file: %s", strerror(errno));
    uint64_t n = rows * cols, per = CHUNK / 8;
    double *d = (double *)chunk;
    for (uint64_t k = 0; k < n; k += per) {
        uint64_t m = n - k < per ? n - k : per;
        for (uint64_t x = 0; x < m; x++)
            d[x] = (double)(k + x + 1); /* = value(i, j) for k + x = i * cols + j */
        size_t off = 0, bytes = m * 8;
        while (off < bytes) {
            ssize_t w = write(fd, chunk + off, bytes - off);
            if (w < 0)
                fail("writing the file: %s", strerror(errno));
            off += (size_t)w;
        }
    }
    close(fd);
}

static void report(const char *pattern, const char *op, uint64_t size, double *v, int reps, uint64_t rows,
                   uint64_t cols, uint64_t piece, uint64_t sum)
{
    double lo = v[0], hi = v[0];
    for (int r = 1; r < reps; r++) {
        lo = v[r] < lo ? v[r] : lo;
        hi = v[r] > hi ? v[r] : hi;
    }
    double med = median(v, reps);
    printf("m bench=io case=%s-%s size=%llu median=%.1f min=%.1f max=%.1f unit=MB/s rows=%llu cols=%llu "
           "piece=%llu reps=%d checksum=fnv:%016llx\n",
           pattern, op, (unsigned long long)size, med, lo, hi, (unsigned long long)rows,
           (unsigned long long)cols, (unsigned long long)piece, reps, (unsigned long long)sum);
    fflush(stdout);
}

/* Whether every rank's check passed (each rank's `ok`). */
static int all_ok(int ok)
{
    int all = 0;
    check_io(MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "MPI_Allreduce");
    return all;
}

/* Writes back whatever the file system of `dir` holds dirty (a no-op on tmpfs), so that every
 * repetition starts from the same state: no earlier repetition's pages still being written back,
 * no writer throttled for them. */
static void settle(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0 || syncfs(fd) != 0)
        fail("cannot sync the directory's file system: %s", strerror(errno));
    close(fd);
}

static void one_size(enum pattern pat, uint64_t size, int reps, const char *dir, const char *path, char *chunk)
{
    int dims[2] = { 0, 0 };
    if (pat == ROWBLOCK)
        dims[0] = nprocs, dims[1] = 1;
    else if (pat == STRIDED)
        dims[0] = 1, dims[1] = nprocs;
    else
        check_io(MPI_Dims_create(nprocs, 2, dims), "MPI_Dims_create");
    uint64_t n = size / 8;
    uint64_t cols = size % 8 ? 0 : shape_cols(n, dims[0], dims[1]);
    if (cols == 0) {
        char s[32];
        snprintf(s, sizeof s, "%llu", (unsigned long long)size);
        fail("a size of %s bytes cannot be split evenly into the ranks' blocks of doubles", s);
    }
    uint64_t rows = n / cols, brows = rows / (uint64_t)dims[0], bcols = cols / (uint64_t)dims[1];
    uint64_t local = brows * bcols;
    if (local > (uint64_t)INT32_MAX)
        fail("%s: a rank's block is more than 2^31 doubles", pattern_name[pat]);
    int pr = rank / dims[1], pc = rank % dims[1];
    double *wbuf = NULL, *rbuf = NULL;
    if (posix_memalign((void **)&wbuf, 4096, local * 8) || posix_memalign((void **)&rbuf, 4096, local * 8))
        fail("out of memory for %s", pattern_name[pat]);
    for (uint64_t i = 0; i < brows; i++)
        for (uint64_t j = 0; j < bcols; j++)
            wbuf[i * bcols + j] = value((uint64_t)pr * brows + i, (uint64_t)pc * bcols + j, cols);

    MPI_Datatype ftype;
    MPI_Offset disp = 0;
    if (pat == STRIDED) {
        check_io(MPI_Type_vector((int)rows, (int)bcols, (int)cols, MPI_DOUBLE, &ftype), "MPI_Type_vector");
        disp = (MPI_Offset)((uint64_t)pc * bcols * 8);
    } else {
        int sizes[2] = { (int)rows, (int)cols }, sub[2] = { (int)brows, (int)bcols };
        int starts[2] = { pr * (int)brows, pc * (int)bcols };
        check_io(MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &ftype),
                 "MPI_Type_create_subarray");
    }
    check_io(MPI_Type_commit(&ftype), "MPI_Type_commit");
    /* The contiguous pieces of a rank's part of the file. */
    uint64_t piece = (pat == ROWBLOCK ? local : bcols) * 8;

    double wv[MAX_REPS], rv[MAX_REPS];
    MPI_Status st;
    int count = 0;
    if (pat == STRIDED) {
        if (rank == 0) {
            posix_write_array(path, rows, cols, chunk);
            settle(dir);
        }
        check_io(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    }
    for (int r = 0; r < reps; r++) {
        MPI_File fh;
        memset(rbuf, 0, local * 8);
        if (pat != STRIDED) {
            if (rank == 0 && unlink(path) != 0 && errno != ENOENT)
                fail("cannot delete the old file: %s", strerror(errno));
            if (rank == 0)
                settle(dir);
            check_io(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            check_io(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh),
                     "MPI_File_open");
            check_io(MPI_File_set_view(fh, 0, MPI_DOUBLE, ftype, "native", MPI_INFO_NULL), "MPI_File_set_view");
            check_io(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            double t = now_ns();
            check_io(MPI_File_write_all(fh, wbuf, (int)local, MPI_DOUBLE, &st), "MPI_File_write_all");
            check_io(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            wv[r] = (double)size / (now_ns() - t) * 1e3; /* bytes per ns * 1e3 = MB/s */
            check_io(MPI_Get_count(&st, MPI_DOUBLE, &count), "MPI_Get_count");
            if (!all_ok((uint64_t)count == local) && rank == 0)
                fail("MPI_File_write_all wrote fewer doubles than asked (%s)", pattern_name[pat]);
            /* Back to the view's start: the write advanced the individual file pointer. */
            check_io(MPI_File_seek(fh, 0, MPI_SEEK_SET), "MPI_File_seek");
            check_io(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            t = now_ns();
            check_io(MPI_File_read_all(fh, rbuf, (int)local, MPI_DOUBLE, &st), "MPI_File_read_all");
            check_io(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            rv[r] = (double)size / (now_ns() - t) * 1e3;
        } else {
            check_io(MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), "MPI_File_open");
            check_io(MPI_File_set_view(fh, disp, MPI_DOUBLE, ftype, "native", MPI_INFO_NULL), "MPI_File_set_view");
            check_io(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            double t = now_ns();
            check_io(MPI_File_read_at(fh, 0, rbuf, (int)local, MPI_DOUBLE, &st), "MPI_File_read_at");
            check_io(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
            rv[r] = (double)size / (now_ns() - t) * 1e3;
        }
        check_io(MPI_Get_count(&st, MPI_DOUBLE, &count), "MPI_Get_count");
        check_io(MPI_File_close(&fh), "MPI_File_close");
        int ok = (uint64_t)count == local && memcmp(rbuf, wbuf, local * 8) == 0;
        if (!all_ok(ok)) {
            if (!ok)
                fail("the data read back differ from the data written (%s)", pattern_name[pat]);
            check_io(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); /* the failing rank aborts */
        }
    }
    /* The file itself: its length and checksum, against the array's. */
    uint64_t sum = 0;
    int ok = 1;
    if (rank == 0) {
        uint64_t len = 0;
        sum = file_checksum(path, chunk, &len);
        if (len != size) {
            char s[64];
            snprintf(s, sizeof s, "%llu bytes, not %llu", (unsigned long long)len, (unsigned long long)size);
            fail("the file has %s", s);
        }
        ok = sum == expected_checksum(rows, cols);
        if (!ok)
            fail("the file's content is not the array (%s): wrong layout", pattern_name[pat]);
        if (pat != STRIDED)
            report(pattern_name[pat], "write", size, wv, reps, rows, cols, piece, sum);
        report(pattern_name[pat], "read", size, rv, reps, rows, cols, piece, sum);
    }
    check_io(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    MPI_Type_free(&ftype);
    free(wbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    check_io(MPI_Init(&argc, &argv), "MPI_Init");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    int reps = argc > 1 ? atoi(argv[1]) : 0, pat = -1, nsizes = 0;
    uint64_t sizes[MAX_SIZES];
    for (int p = 0; argc > 2 && p < 3; p++)
        if (!strcmp(argv[2], pattern_name[p]))
            pat = p;
    for (int i = 4; i < argc && nsizes < MAX_SIZES; i++)
        sizes[nsizes++] = strtoull(argv[i], NULL, 10);
    if (reps < 1 || reps > MAX_REPS || pat < 0 || nsizes == 0 || argc - 4 > MAX_SIZES) {
        if (rank == 0)
            fprintf(stderr,
                    "usage: io <reps: 1..%d> <rowblock|checkerboard|strided> <dir> <size in bytes>... "
                    "(at most %d sizes)\n",
                    MAX_REPS, MAX_SIZES);
        MPI_Finalize();
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/madbench-io-%s.dat", argv[3], pattern_name[pat]);
    char *chunk = NULL;
    if (rank == 0 && posix_memalign((void **)&chunk, 4096, CHUNK))
        fail("%s", "out of memory");
    if (rank == 0)
        print_library();
    for (int s = 0; s < nsizes; s++)
        one_size((enum pattern)pat, sizes[s], reps, argv[3], path, chunk);
    if (rank == 0) {
        unlink(path);
        free(chunk);
    }
    MPI_Finalize();
    return 0;
}
