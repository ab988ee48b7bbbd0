/* Helpers of the datatype test programs (types_ctor.c, types_query.c, pack.c).
 *
 * The expected values in these programs were checked by running them on MPICH 4.0.2 itself
 * (mpicc.mpich, mpiexec.hydra). Where MadMPI deliberately differs (it returns an error where
 * MPICH 4.0.2 accepts an erroneous call or crashes), the check runs only on MadMPI's library:
 * see ON_MADMPI. */
#ifndef TYPES_H
#define TYPES_H

#include "check.h" /* on_madmpi() */

/* A check of a deliberate difference from MPICH 4.0.2: run on MadMPI's library only. */
#define ON_MADMPI(...)                                                                         \
    do {                                                                                       \
        if (on_madmpi()) {                                                                     \
            __VA_ARGS__;                                                                       \
        }                                                                                      \
    } while (0)

/* The bounds and size of a type, checked at once. */
#define CHECK_BOUNDS(t, size_, lb_, extent_, tlb_, textent_)                                   \
    do {                                                                                       \
        int s_ = -1;                                                                           \
        MPI_Aint lb__ = -1, ex__ = -1, tlb__ = -1, tex__ = -1;                                 \
        MPI_Type_size((t), &s_);                                                               \
        MPI_Type_get_extent((t), &lb__, &ex__);                                                \
        MPI_Type_get_true_extent((t), &tlb__, &tex__);                                         \
        CHECK(s_ == (size_) && lb__ == (lb_) && ex__ == (extent_) && tlb__ == (tlb_) &&       \
                  tex__ == (textent_),                                                         \
              "%s: size %d lb %ld extent %ld true lb %ld true extent %ld", #t, s_, (long)lb__, \
              (long)ex__, (long)tlb__, (long)tex__);                                           \
    } while (0)

/* A block of a type map: `len` bytes at byte `off` from the buffer. */
struct blk {
    long off;
    int len;
};

#define MARGIN 512
#define SPAN (4 * MARGIN)
#define UNTOUCHED 0xEE

/* The byte of the send pattern of `rank` at index `i` of its buffer (never UNTOUCHED). */
static inline unsigned char pat(int rank, long i)
{
    return (unsigned char)((i * 7 + rank * 101) % 229);
}

/* Exchanges `count` elements of `t` with the peer both ways, against `flat_count` elements of
 * `flat` (a type of the same signature whose data is contiguous):
 * 1. we send through `t`, the peer receives contiguously: it must see the bytes of blocks `b`
 *    (the type map of the `count` elements, in order) of our pattern;
 * 2. we send contiguous data, the peer receives through `t` into a buffer of UNTOUCHED bytes:
 *    the blocks get our data in order, every other byte stays UNTOUCHED.
 * Then MPI_Get_count(t) must be `count` (0 for a type of size 0, as MPICH) and
 * MPI_Get_elements(t) `elements`. */
static inline void exchange(const char *what, MPI_Datatype t, int count, MPI_Datatype flat, int flat_count,
                     const struct blk *b, int nb, int elements)
{
    static unsigned char src[SPAN], dst[SPAN], packed[SPAN], got[SPAN];
    int rank, peer, i, k, total = 0, n = -1;
    long j, pos;
    MPI_Status st;

    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    peer = 1 - rank;
    for (i = 0; i < nb; i++)
        total += b[i].len;
    for (j = 0; j < SPAN; j++)
        src[j] = pat(rank, j);
    memset(got, UNTOUCHED, sizeof got);
    CHECK(MPI_Sendrecv(src + MARGIN, count, t, peer, 7, got, flat_count, flat, peer, 7, MPI_COMM_WORLD, &st) ==
              MPI_SUCCESS,
          "%s: %d element(s) sent through the type, received contiguously", what, count);
    pos = 0;
    for (i = 0; i < nb; i++)
        for (k = 0; k < b[i].len; k++, pos++)
            if (got[pos] != pat(peer, MARGIN + b[i].off + k))
                CHECK(0, "%s: contiguous byte %ld is byte %ld of the peer's buffer", what, pos, b[i].off + k);
    for (j = total; j < SPAN; j++)
        if (got[j] != UNTOUCHED)
            CHECK(0, "%s: contiguous byte %ld beyond the %d sent was written", what, j, total);
    CHECK(1, "%s: the %d contiguous bytes are the type map's, in order", what, total);
    CHECK(MPI_Get_count(&st, flat, &n) == MPI_SUCCESS && n == flat_count, "%s: %d contiguous elements", what, n);

    for (j = 0; j < total; j++)
        packed[j] = pat(rank, 3 * j + 1);
    memset(dst, UNTOUCHED, sizeof dst);
    CHECK(MPI_Sendrecv(packed, flat_count, flat, peer, 8, dst + MARGIN, count, t, peer, 8, MPI_COMM_WORLD, &st) ==
              MPI_SUCCESS,
          "%s: contiguous data received through the type", what);
    pos = 0;
    for (i = 0; i < nb; i++)
        for (k = 0; k < b[i].len; k++, pos++) {
            long at = MARGIN + b[i].off + k;
            if (dst[at] != pat(peer, 3 * pos + 1))
                CHECK(0, "%s: byte %ld of the type map (buffer byte %ld) holds %d, not %d", what, pos,
                      b[i].off + k, dst[at], pat(peer, 3 * pos + 1));
            dst[at] = UNTOUCHED;
        }
    for (j = 0; j < SPAN; j++)
        if (dst[j] != UNTOUCHED)
            CHECK(0, "%s: byte %ld outside the type map was written", what, j - MARGIN);
    CHECK(1, "%s: %d bytes placed by the type map, nothing else written", what, total);
    CHECK(MPI_Get_count(&st, t, &n) == MPI_SUCCESS && n == (total ? count : 0), "%s: MPI_Get_count %d", what, n);
    CHECK(MPI_Get_elements(&st, t, &n) == MPI_SUCCESS && n == elements, "%s: MPI_Get_elements %d", what, n);
}

#endif
