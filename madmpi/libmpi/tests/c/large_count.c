/* Counts above 2^31 elements through the large-count (`_c`) forms: 2^31 + 7 chars sent with
 * MPI_Send_c and received with MPI_Irecv_c (MPI_Get_count_c gives the exact count, MPI_Get_count
 * MPI_UNDEFINED), then broadcast back with MPI_Bcast_c, the data checked at both ends each
 * time; then on rank 0 MPI_Reduce_local_c of 2^31 + 7 chars with a user function of MPI_Op_create
 * (an `int` length): it must be called on INT_MAX elements at most at a time and cover every
 * element once, in place. Needs about 2 GiB per process, 4 GiB on rank 0. Run with 2
 * processes. Passes on MPICH's library, where the reduce-local part is skipped (see there). */
#include "check.h"
#include <stdint.h>

#define BIG (((MPI_Count)1 << 31) + 7)

/* Rank r's message: block b of BLOCK bytes (the last one shorter) holds the byte (7b + r) mod
 * 251 (a prime, so that neighbouring blocks and the two ranks' messages differ), written and
 * compared with memset and memcmp: the checks stay fast in an unoptimized build. */
#define BLOCK 4096

static unsigned char block_byte(MPI_Count b, int r) { return (unsigned char)((7 * b + r) % 251); }

static void fill(unsigned char *buf, int r)
{
    for (MPI_Count at = 0; at < BIG; at += BLOCK)
        memset(buf + at, block_byte(at / BLOCK, r), (size_t)(BIG - at < BLOCK ? BIG - at : BLOCK));
}

/* The first block where `buf` differs from rank r's message, or -1. */
static MPI_Count first_wrong(const unsigned char *buf, int r)
{
    unsigned char ref[BLOCK];
    for (MPI_Count at = 0; at < BIG; at += BLOCK) {
        size_t n = (size_t)(BIG - at < BLOCK ? BIG - at : BLOCK);
        memset(ref, block_byte(at / BLOCK, r), n);
        if (memcmp(buf + at, ref, n) != 0)
            return at / BLOCK;
    }
    return -1;
}

/* What the user function saw: calls, the longest length, the total. */
static long long calls, longest, seen;

/* inout = in, by blocks of *len chars. */
static void copy_in(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)type;
    calls++;
    if (*len > longest)
        longest = *len;
    seen += *len;
    memcpy(inout, in, (size_t)*len);
}

int main(int argc, char **argv)
{
    int rank, size, small = 0;
    MPI_Count count = -1;
    MPI_Status st;
    MPI_Request r;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    CHECK(size == 2, "2 processes");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    unsigned char *buf = malloc((size_t)BIG);
    CHECK(buf != NULL, "2^31 + 7 bytes allocated");

    if (rank == 0) {
        fill(buf, 0);
        CHECK(MPI_Send_c(buf, BIG, MPI_CHAR, 1, 1, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Send_c of 2^31 + 7 chars");
    } else {
        memset(buf, 0, (size_t)BIG);
        CHECK(MPI_Irecv_c(buf, BIG, MPI_CHAR, 0, 1, MPI_COMM_WORLD, &r) == MPI_SUCCESS &&
                  MPI_Wait(&r, &st) == MPI_SUCCESS,
              "MPI_Irecv_c of 2^31 + 7 chars");
        CHECK(MPI_Get_count_c(&st, MPI_CHAR, &count) == MPI_SUCCESS && count == BIG,
              "MPI_Get_count_c: %lld", (long long)count);
        CHECK(MPI_Get_count(&st, MPI_CHAR, &small) == MPI_SUCCESS && small == MPI_UNDEFINED,
              "MPI_Get_count: MPI_UNDEFINED");
        MPI_Count at = first_wrong(buf, 0);
        CHECK(at == -1, "every byte received (first wrong block: %lld)", (long long)at);
        /* Rank 1 rewrites the buffer with its own pattern and broadcasts it. */
        fill(buf, 1);
    }
    CHECK(MPI_Bcast_c(buf, BIG, MPI_CHAR, 1, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Bcast_c of 2^31 + 7 chars");
    MPI_Count at = first_wrong(buf, 1);
    CHECK(at == -1, "every byte of the broadcast (first wrong block: %lld)", (long long)at);
    /* MPICH 4.0.2 aborts there (an assertion count <= INT_MAX in its reduce_local.c): run on
     * MadMPI's library only. */
    if (rank == 0 && on_madmpi()) {
        unsigned char *into = calloc(1, (size_t)BIG);
        MPI_Op op;
        CHECK(into != NULL, "a second 2^31 + 7 bytes allocated");
        CHECK(MPI_Op_create(copy_in, 1, &op) == MPI_SUCCESS, "MPI_Op_create with an int length");
        CHECK(MPI_Reduce_local_c(buf, into, BIG, MPI_CHAR, op) == MPI_SUCCESS, "MPI_Reduce_local_c of 2^31 + 7");
        CHECK(calls >= 2 && longest <= 2147483647LL && seen == BIG,
              "the function called %lld times, on %lld elements at most, %lld in all", calls, longest, seen);
        MPI_Count at = first_wrong(into, 1);
        CHECK(at == -1, "every element reduced in place (first wrong block: %lld)", (long long)at);
        MPI_Op_free(&op);
        free(into);
    }
    free(buf);
    MPI_Finalize();
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
