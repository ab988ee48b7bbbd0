/* Every predefined reduction operation on every predefined datatype MPI 4.0 defines it for
 * (§6.9.2 "Predefined Reduction Operations" and §6.9.4 "MINLOC and MAXLOC"), through the C ABI:
 * MPI_Allreduce, MPI_Reduce (root size-1), both in place, and MPI_Reduce_local, on 1, 7 and
 * (for some types) 1000 elements. Each rank's contribution is a function of its rank and the
 * element's index, and every result is compared with a reference computed locally from all the
 * contributions. Values are chosen so that the reference is exact: integer sums and products
 * never overflow a signed type (unsigned ones wrap, as C defines), and floating sums and
 * products are exact in the type (with low-order bits that `double` cannot hold in the `long
 * double` values, so a `long double` computed as a `double` shows). Then the combinations MPI
 * does not define return MPI_ERR_OP under MPI_ERRORS_RETURN and leave the output untouched;
 * MPI_REPLACE and MPI_NO_OP, which MPI defines for one-sided accumulate only, have the result
 * MadMPI defines for them in collectives (see replace_and_no_op()).
 *
 * The groups of §6.9.2 and the operations defined on them:
 *   C integer              MAX MIN SUM PROD  LAND LOR LXOR  BAND BOR BXOR
 *   Multi-language types   MAX MIN SUM PROD                 BAND BOR BXOR  (MPI_AINT, _OFFSET, _COUNT)
 *   Floating point         MAX MIN SUM PROD
 *   Complex                        SUM PROD
 *   Logical                                  LAND LOR LXOR                 (MPI_C_BOOL)
 *   Byte                                                    BAND BOR BXOR  (MPI_BYTE)
 *   pair types (§6.9.4)    MAXLOC MINLOC
 * MPI_CHAR and MPI_WCHAR are in no group (MPICH and MadMPI accept MPI_CHAR as an extension; it
 * is not tested here).
 *
 * Runs with any number of processes; built against madmpi's mpi.h and MPICH's by
 * tests/c_programs.rs, and also passes on MPICH 4.0.2's own library (see MPICH_BUG). */
#include "check.h"
#include <float.h>
#include <stdbool.h>
#include <stdint.h>

static int rank, size, madmpi; /* madmpi: running on MadMPI's library (on_madmpi()) */

/* ---------------------------------------------------------------- operations */

enum { MAX, MIN, SUM, PROD, LAND, LOR, LXOR, BAND, BOR, BXOR, MAXLOC, MINLOC, NOPS };

static const struct {
    MPI_Op op;
    const char *name;
} ops[NOPS] = {{MPI_MAX, "MPI_MAX"},   {MPI_MIN, "MPI_MIN"},       {MPI_SUM, "MPI_SUM"},
               {MPI_PROD, "MPI_PROD"}, {MPI_LAND, "MPI_LAND"},     {MPI_LOR, "MPI_LOR"},
               {MPI_LXOR, "MPI_LXOR"}, {MPI_BAND, "MPI_BAND"},     {MPI_BOR, "MPI_BOR"},
               {MPI_BXOR, "MPI_BXOR"}, {MPI_MAXLOC, "MPI_MAXLOC"}, {MPI_MINLOC, "MPI_MINLOC"}};

/* The operations of each group, as bit sets of the enum above. */
#define ARITH ((1u << MAX) | (1u << MIN) | (1u << SUM) | (1u << PROD))
#define LOGIC ((1u << LAND) | (1u << LOR) | (1u << LXOR))
#define BITS ((1u << BAND) | (1u << BOR) | (1u << BXOR))
#define OPS_INTEGER (ARITH | LOGIC | BITS)
#define OPS_MULTI (ARITH | BITS)
#define OPS_FLOATING ARITH
#define OPS_COMPLEX ((1u << SUM) | (1u << PROD))
#define OPS_LOGICAL LOGIC
#define OPS_BYTE BITS
#define OPS_PAIR ((1u << MAXLOC) | (1u << MINLOC))

/* ---------------------------------------------------------------- contributions */

/* 64 pseudo-random bits of (op, r, i) (splitmix64's finalizer). */
static uint64_t mix(int op, int r, int i)
{
    uint64_t x = (uint64_t)(op + 1) * 0x9E3779B97F4A7C15u ^ (uint64_t)(r + 1) * 0xBF58476D1CE4E5B9u ^
                 (uint64_t)(i + 1) * 0x94D049BB133111EBu;
    x ^= x >> 30;
    x *= 0xBF58476D1CE4E5B9u;
    x ^= x >> 27;
    x *= 0x94D049BB133111EBu;
    return x ^ (x >> 31);
}

/* Mostly ones (for BAND) or mostly zeros (for BOR), so that neither result is all zeros or ones. */
static uint64_t dense(uint64_t h) { return h | (h >> 7) | (h << 7); }
static uint64_t sparse(uint64_t h) { return h & (h >> 7) & (h << 7); }

/* Whether rank r contributes "false" at index i to a logical operation: every rank at some
 * indices (LOR false), no rank at others when there are few enough ranks (LAND true). */
static int falsy(int r, int i) { return i % 13 == 1 || (r + i) % (i % 11 + 2) == 0; }

/* The one rank whose factor is large (integers) or has low-order bits (floating types) in a
 * product: the others contribute small factors, so the product stays exact. */
static int big_factor(int r, int i) { return r == i % size; }

#define IS_UNSIGNED(T) ((T)-1 > (T)1)

/* MPICH_BUG: MPICH 4.0.2 (Debian) compares every unsigned integer type as signed in MPI_MAX and
 * MPI_MIN (1 MAX UINT_MAX gives 1): on MPICH's library, reduce_all sets `signed_compare` for
 * these two operations, and the unsigned values then keep their top bit clear. */
static int signed_compare;
#define TOP_BIT_CLEAR(T, h) (signed_compare && IS_UNSIGNED(T) ? (h) & (UINT64_MAX >> (65 - 8 * sizeof(T))) : (h))

/* 2^-(precision-1) of a floating type (its epsilon). */
#define EPS(x) _Generic((x), float: FLT_EPSILON, double: DBL_EPSILON, long double: LDBL_EPSILON)

/* A floating value of rank r at index i for SUM, MAX and MIN: an integer in [-500, 500] plus a
 * multiple of 2^-(precision-15), so that the sum of up to 16 of them is exact (a `long double`
 * value is then not a `double`). `x` gives the type. */
#define FLOATING_VALUE(x, h) ((long double)((int)((h) % 1001) - 500) + (long double)(((h) >> 10) % 8) * EPS(x) * 32768)

/* A floating factor of rank r at index i for PROD: ±2^e (e in -1..1), times 3/2 at one rank in
 * three, times 1 + 2^-(precision-7) at the big_factor rank: the product of up to 8 such factors
 * is exact. */
#define FLOATING_FACTOR(x, h, r, i)                                                                 \
    ((((h) & 1) ? -1.0L : 1.0L) * (0.5L * (long double)(1 << ((h) >> 1) % 3)) *                   \
     (((r) + (i)) % 3 == 0 ? 1.5L : 1.0L) * (big_factor(r, i) ? 1.0L + EPS(x) * 64 : 1.0L))

/* ---------------------------------------------------------------- per-type functions
 *
 * DEFINE_<group>(id, T) defines, for the C type T of a datatype:
 *   id##_fill(buf, op, r, n)    the n elements rank r contributes to op;
 *   id##_combine(acc, in, op, n) acc[k] = acc[k] op in[k] (the reference);
 *   id##_diff(a, b, n)         the first index where a and b differ, or -1;
 *   id##_show(s, buf, k)       element k, printed into s. */

#define DEFINE_COMMON(id, T, EQ)                                                                  \
    static void id##_fill(void *buf, int op, int r, int n)                                        \
    {                                                                                             \
        for (int k = 0; k < n; k++)                                                               \
            ((T *)buf)[k] = id##_value(op, r, k);                                                 \
    }                                                                                             \
    static int id##_diff(const void *a_, const void *b_, int n)                                   \
    {                                                                                             \
        const T *a = a_, *b = b_;                                                                 \
        for (int k = 0; k < n; k++)                                                               \
            if (!(EQ(a[k], b[k])))                                                                \
                return k;                                                                         \
        return -1;                                                                                \
    }

#define EQ_PLAIN(a, b) ((a) == (b))
#define EQ_PAIR(a, b) ((a).v == (b).v && (a).i == (b).i)

/* C integers and the multi-language types. Signed sums and products are computed in intmax_t
 * and never overflow (values are at most max/16, factors ±1 but one); unsigned ones in
 * uintmax_t, truncated to T: they wrap. */
#define DEFINE_INTEGER(id, T)                                                                     \
    static T id##_value(int op, int r, int i)                                                     \
    {                                                                                             \
        uint64_t h = mix(op, r, i);                                                               \
        switch (op) {                                                                             \
        case SUM:                                                                                 \
            return IS_UNSIGNED(T) ? (T)h : (T)((T)h / 16);                                        \
        case PROD:                                                                                \
            if (IS_UNSIGNED(T) || big_factor(r, i))                                               \
                return IS_UNSIGNED(T) ? (T)h : (T)((T)h / 16);                                    \
            return (T)(h & 1 ? -1 : 1);                                                           \
        case LAND:                                                                                \
        case LOR:                                                                                 \
        case LXOR: /* true values with their one bit in any byte */                              \
            return falsy(r, i) ? (T)0 : (T)((h | 1) << 8 * ((unsigned)(r + i) % sizeof(T)));     \
        case BAND:                                                                                \
            return (T)dense(h);                                                                   \
        case BOR:                                                                                 \
            return (T)sparse(h);                                                                  \
        default:                                                                                  \
            return (T)TOP_BIT_CLEAR(T, h);                                                        \
        }                                                                                         \
    }                                                                                             \
    static void id##_combine(void *acc_, const void *in_, int op, int n)                          \
    {                                                                                             \
        T *acc = acc_;                                                                            \
        const T *in = in_;                                                                        \
        for (int k = 0; k < n; k++) {                                                             \
            T a = acc[k], b = in[k];                                                              \
            switch (op) {                                                                         \
            case MAX: acc[k] = a > b ? a : b; break;                                              \
            case MIN: acc[k] = a < b ? a : b; break;                                              \
            case SUM:                                                                             \
                acc[k] = IS_UNSIGNED(T) ? (T)((uintmax_t)a + (uintmax_t)b) : (T)((intmax_t)a + (intmax_t)b); \
                break;                                                                            \
            case PROD:                                                                            \
                acc[k] = IS_UNSIGNED(T) ? (T)((uintmax_t)a * (uintmax_t)b) : (T)((intmax_t)a * (intmax_t)b); \
                break;                                                                            \
            case LAND: acc[k] = a && b; break;                                                    \
            case LOR: acc[k] = a || b; break;                                                     \
            case LXOR: acc[k] = !a != !b; break;                                                  \
            case BAND: acc[k] = a & b; break;                                                     \
            case BOR: acc[k] = a | b; break;                                                      \
            case BXOR: acc[k] = a ^ b; break;                                                     \
            default: abort();                                                                     \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    static void id##_show(char *s, const void *buf, int k)                                        \
    {                                                                                             \
        T v = ((const T *)buf)[k];                                                                \
        if (IS_UNSIGNED(T))                                                                       \
            sprintf(s, "%ju (%#jx)", (uintmax_t)v, (uintmax_t)v);                                 \
        else                                                                                      \
            sprintf(s, "%jd", (intmax_t)v);                                                       \
    }                                                                                             \
    DEFINE_COMMON(id, T, EQ_PLAIN)
#define DEFINE_MULTI DEFINE_INTEGER

#define DEFINE_FLOATING(id, T)                                                                    \
    static T id##_value(int op, int r, int i)                                                     \
    {                                                                                             \
        uint64_t h = mix(op, r, i);                                                               \
        return op == PROD ? (T)FLOATING_FACTOR((T)0, h, r, i) : (T)FLOATING_VALUE((T)0, h);       \
    }                                                                                             \
    static void id##_combine(void *acc_, const void *in_, int op, int n)                          \
    {                                                                                             \
        T *acc = acc_;                                                                            \
        const T *in = in_;                                                                        \
        for (int k = 0; k < n; k++) {                                                             \
            T a = acc[k], b = in[k];                                                              \
            acc[k] = op == MAX ? (a > b ? a : b) : op == MIN ? (a < b ? a : b) : op == SUM ? a + b : a * b; \
        }                                                                                         \
    }                                                                                             \
    static void id##_show(char *s, const void *buf, int k)                                        \
    {                                                                                             \
        sprintf(s, "%.21Lg", (long double)((const T *)buf)[k]);                                   \
    }                                                                                             \
    DEFINE_COMMON(id, T, EQ_PLAIN)

/* Complex: SUM of values as FLOATING_VALUE in both parts; PROD of Gaussian integers with parts
 * in [-2, 2] (not both 0), whose products of up to 8 stay exact small integers. */
#define DEFINE_COMPLEX(id, T)                                                                     \
    static T id##_value(int op, int r, int i)                                                     \
    {                                                                                             \
        uint64_t h = mix(op, r, i), g = mix(op + NOPS, r, i);                                     \
        T v;                                                                                      \
        if (op == SUM) {                                                                          \
            __real__ v = FLOATING_VALUE(__real__ v, h);                                           \
            __imag__ v = FLOATING_VALUE(__real__ v, g);                                           \
        } else {                                                                                  \
            int re = (int)(h % 5) - 2, im = (int)(g % 5) - 2;                                     \
            __real__ v = re == 0 && im == 0 ? 1 : re;                                             \
            __imag__ v = im;                                                                      \
        }                                                                                         \
        return v;                                                                                 \
    }                                                                                             \
    static void id##_combine(void *acc_, const void *in_, int op, int n)                          \
    {                                                                                             \
        T *acc = acc_;                                                                            \
        const T *in = in_;                                                                        \
        for (int k = 0; k < n; k++)                                                               \
            acc[k] = op == SUM ? acc[k] + in[k] : acc[k] * in[k];                                 \
    }                                                                                             \
    static void id##_show(char *s, const void *buf, int k)                                        \
    {                                                                                             \
        T v = ((const T *)buf)[k];                                                                \
        sprintf(s, "(%.21Lg, %.21Lg)", (long double)__real__ v, (long double)__imag__ v);         \
    }                                                                                             \
    DEFINE_COMMON(id, T, EQ_PLAIN)

#define DEFINE_LOGICAL(id, T)                                                                     \
    static T id##_value(int op, int r, int i)                                                     \
    {                                                                                             \
        (void)op;                                                                                 \
        return !falsy(r, i);                                                                      \
    }                                                                                             \
    static void id##_combine(void *acc_, const void *in_, int op, int n)                          \
    {                                                                                             \
        T *acc = acc_;                                                                            \
        const T *in = in_;                                                                        \
        for (int k = 0; k < n; k++)                                                               \
            acc[k] = op == LAND ? acc[k] && in[k] : op == LOR ? acc[k] || in[k] : acc[k] != in[k]; \
    }                                                                                             \
    static void id##_show(char *s, const void *buf, int k)                                        \
    {                                                                                             \
        sprintf(s, "%d", (int)((const T *)buf)[k]);                                               \
    }                                                                                             \
    DEFINE_COMMON(id, T, EQ_PLAIN)

#define DEFINE_BYTE(id, T)                                                                        \
    static T id##_value(int op, int r, int i)                                                     \
    {                                                                                             \
        uint64_t h = mix(op, r, i);                                                               \
        return (T)(op == BAND ? dense(h) : op == BOR ? sparse(h) : h);                            \
    }                                                                                             \
    static void id##_combine(void *acc_, const void *in_, int op, int n)                          \
    {                                                                                             \
        T *acc = acc_;                                                                            \
        const T *in = in_;                                                                        \
        for (int k = 0; k < n; k++)                                                               \
            acc[k] = op == BAND ? acc[k] & in[k] : op == BOR ? acc[k] | in[k] : acc[k] ^ in[k];   \
    }                                                                                             \
    static void id##_show(char *s, const void *buf, int k)                                        \
    {                                                                                             \
        sprintf(s, "%#x", (unsigned)((const T *)buf)[k]);                                         \
    }                                                                                             \
    DEFINE_COMMON(id, T, EQ_PLAIN)

/* The pair types' C layouts (value, then the int index). */
typedef struct { float v; int i; } float_int;
typedef struct { double v; int i; } double_int;
typedef struct { long v; int i; } long_int;
typedef struct { int v; int i; } two_int;
typedef struct { short v; int i; } short_int;
typedef struct { long double v; int i; } long_double_int;

/* Pairs: values k × WIDE + f × FINE with k in -1..1 and f in 0..1, so there are ties (which
 * go to the lowest index) and values that differ only in their lowest bits; indices in
 * -3..3, in no order of rank. */
#define PAIR_WIDE(v) _Generic((v), short: 1000, int: 1 << 20, long: 1L << 40, default: 1)
#define PAIR_FINE(v) _Generic((v), float: 2 * FLT_EPSILON, double: 2 * DBL_EPSILON, long double: 2 * LDBL_EPSILON, default: 1)
#define DEFINE_PAIR(id, T)                                                                        \
    static T id##_value(int op, int r, int i)                                                     \
    {                                                                                             \
        uint64_t h = mix(op, r, i);                                                               \
        T p;                                                                                      \
        memset(&p, 0, sizeof p);                                                                  \
        p.v = (__typeof__(p.v))((int)(h % 3) - 1) * PAIR_WIDE(p.v) +                              \
              (__typeof__(p.v))((h >> 8) % 2) * PAIR_FINE(p.v);                                   \
        p.i = (r * 5 + i * 3) % 7 - 3;                                                            \
        return p;                                                                                 \
    }                                                                                             \
    static void id##_combine(void *acc_, const void *in_, int op, int n)                          \
    {                                                                                             \
        T *acc = acc_;                                                                            \
        const T *in = in_;                                                                        \
        for (int k = 0; k < n; k++) {                                                             \
            if (op == MAXLOC ? in[k].v > acc[k].v : in[k].v < acc[k].v)                           \
                acc[k] = in[k];                                                                   \
            else if (in[k].v == acc[k].v && in[k].i < acc[k].i)                                   \
                acc[k].i = in[k].i;                                                               \
        }                                                                                         \
    }                                                                                             \
    static void id##_show(char *s, const void *buf, int k)                                        \
    {                                                                                             \
        const T *p = (const T *)buf + k;                                                          \
        sprintf(s, "(%.21Lg, %d)", (long double)p->v, p->i);                                      \
    }                                                                                             \
    DEFINE_COMMON(id, T, EQ_PAIR)

/* ---------------------------------------------------------------- the table
 *
 * Every predefined datatype of a group of §6.9.2 (and the pair types), with its C type and
 * group; `many` marks the types also reduced on 1000 elements. */
#define TYPES(X)                                                                                  \
    X(MPI_SIGNED_CHAR, signed char, INTEGER, 0)                                                   \
    X(MPI_UNSIGNED_CHAR, unsigned char, INTEGER, 1)                                               \
    X(MPI_SHORT, short, INTEGER, 0)                                                               \
    X(MPI_UNSIGNED_SHORT, unsigned short, INTEGER, 0)                                             \
    X(MPI_INT, int, INTEGER, 1)                                                                   \
    X(MPI_UNSIGNED, unsigned, INTEGER, 0)                                                         \
    X(MPI_LONG, long, INTEGER, 0)                                                                 \
    X(MPI_UNSIGNED_LONG, unsigned long, INTEGER, 1)                                               \
    X(MPI_LONG_LONG_INT, long long, INTEGER, 0)                                                   \
    X(MPI_LONG_LONG, long long, INTEGER, 0)                                                       \
    X(MPI_UNSIGNED_LONG_LONG, unsigned long long, INTEGER, 0)                                     \
    X(MPI_INT8_T, int8_t, INTEGER, 0)                                                             \
    X(MPI_INT16_T, int16_t, INTEGER, 0)                                                           \
    X(MPI_INT32_T, int32_t, INTEGER, 0)                                                           \
    X(MPI_INT64_T, int64_t, INTEGER, 1)                                                           \
    X(MPI_UINT8_T, uint8_t, INTEGER, 0)                                                           \
    X(MPI_UINT16_T, uint16_t, INTEGER, 0)                                                         \
    X(MPI_UINT32_T, uint32_t, INTEGER, 0)                                                         \
    X(MPI_UINT64_T, uint64_t, INTEGER, 0)                                                         \
    X(MPI_AINT, MPI_Aint, MULTI, 0)                                                               \
    X(MPI_OFFSET, MPI_Offset, MULTI, 0)                                                           \
    X(MPI_COUNT, MPI_Count, MULTI, 0)                                                             \
    X(MPI_FLOAT, float, FLOATING, 1)                                                              \
    X(MPI_DOUBLE, double, FLOATING, 1)                                                            \
    X(MPI_LONG_DOUBLE, long double, FLOATING, 1)                                                  \
    X(MPI_C_COMPLEX, float _Complex, COMPLEX, 0)                                                  \
    X(MPI_C_FLOAT_COMPLEX, float _Complex, COMPLEX, 0)                                            \
    X(MPI_C_DOUBLE_COMPLEX, double _Complex, COMPLEX, 1)                                          \
    X(MPI_C_LONG_DOUBLE_COMPLEX, long double _Complex, COMPLEX, 1)                                \
    X(MPI_C_BOOL, _Bool, LOGICAL, 1)                                                              \
    X(MPI_BYTE, unsigned char, BYTE, 1)                                                           \
    X(MPI_FLOAT_INT, float_int, PAIR, 0)                                                          \
    X(MPI_DOUBLE_INT, double_int, PAIR, 1)                                                        \
    X(MPI_LONG_INT, long_int, PAIR, 0)                                                            \
    X(MPI_2INT, two_int, PAIR, 0)                                                                 \
    X(MPI_SHORT_INT, short_int, PAIR, 1)                                                          \
    X(MPI_LONG_DOUBLE_INT, long_double_int, PAIR, 1)

/* The functions are named after the datatype (fn_MPI_INT_fill, ...): pasted here, before the
 * name could expand to the handle's value. */
#define DEFINE(dt, T, group, many) DEFINE_##group(fn_##dt, T)
TYPES(DEFINE)

typedef struct {
    MPI_Datatype dt;
    const char *name;
    unsigned ops; /* the operations MPI defines on it */
    size_t extent;
    int many;
    void (*fill)(void *buf, int op, int r, int n);
    void (*combine)(void *acc, const void *in, int op, int n);
    int (*diff)(const void *a, const void *b, int n);
    void (*show)(char *s, const void *buf, int k);
} Type;

#define ENTRY(dt, T, group, many)                                                                 \
    {dt, #dt, OPS_##group, sizeof(T), many, fn_##dt##_fill, fn_##dt##_combine, fn_##dt##_diff, fn_##dt##_show},
static const Type types[] = {TYPES(ENTRY)};
#define NTYPES ((int)(sizeof types / sizeof *types))

/* ---------------------------------------------------------------- checks */

/* The byte every output buffer starts with: what is outside the result must stay it. */
#define UNTOUCHED 0xA5

static int untouched(const void *buf, size_t len)
{
    for (size_t k = 0; k < len; k++)
        if (((const unsigned char *)buf)[k] != UNTOUCHED)
            return 0;
    return 1;
}

/* Fails unless the n elements of t at got are the reference ref and the element after them is
 * untouched. */
static void expect_named(const Type *t, const char *call, const char *oname, int n, const void *ref,
                         const void *got)
{
    int k = t->diff(ref, got, n);
    if (k >= 0) {
        char want[128], have[128];
        t->show(want, ref, k);
        t->show(have, got, k);
        CHECK(0, "%s %s on %s (%d elements): element %d is %s, expected %s", call, oname, t->name, n,
              k, have, want);
    }
    if (!untouched((const char *)got + n * t->extent, t->extent))
        CHECK(0, "%s %s on %s (%d elements): the element after the result was written", call,
              oname, t->name, n);
}

static void expect(const Type *t, const char *call, int op, int n, const void *ref, const void *got)
{
    expect_named(t, call, ops[op].name, n, ref, got);
}

/* Runs op on n elements of t through every call, against the local reference. */
static void reduce_all(const Type *t, int op, int n, int in_place)
{
    size_t len = (n + 1) * t->extent;
    char *send = malloc(len), *recv = malloc(len), *ref = malloc(len), *tmp = malloc(len);
    MPI_Op o = ops[op].op;
    int root = size - 1;

    signed_compare = !madmpi && (op == MAX || op == MIN);
    memset(ref, UNTOUCHED, len);
    t->fill(ref, op, 0, n);
    for (int r = 1; r < size; r++) {
        t->fill(tmp, op, r, n);
        t->combine(ref, tmp, op, n);
    }
    t->fill(send, op, rank, n);

    memset(recv, UNTOUCHED, len);
    CHECK(MPI_Allreduce(send, recv, n, t->dt, o, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Allreduce");
    expect(t, "MPI_Allreduce", op, n, ref, recv);

    memset(recv, UNTOUCHED, len);
    CHECK(MPI_Reduce(send, recv, n, t->dt, o, root, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Reduce");
    if (rank == root)
        expect(t, "MPI_Reduce", op, n, ref, recv);
    else if (!untouched(recv, len))
        CHECK(0, "MPI_Reduce %s on %s: the receive buffer off the root was written", ops[op].name, t->name);

    if (in_place) {
        memset(recv, UNTOUCHED, len);
        t->fill(recv, op, rank, n);
        CHECK(MPI_Allreduce(MPI_IN_PLACE, recv, n, t->dt, o, MPI_COMM_WORLD) == MPI_SUCCESS,
              "MPI_Allreduce(MPI_IN_PLACE)");
        expect(t, "MPI_Allreduce(MPI_IN_PLACE)", op, n, ref, recv);

        /* MPICH_BUG: MPICH 4.0.2 (Debian, ch4:ucx) crashes on MPI_Reduce(MPI_IN_PLACE) at a
         * root other than 0 (as in coll_basic.c). */
        int ip_root = madmpi ? root : 0;
        memset(recv, UNTOUCHED, len);
        t->fill(recv, op, rank, n);
        if (rank == ip_root) {
            CHECK(MPI_Reduce(MPI_IN_PLACE, recv, n, t->dt, o, ip_root, MPI_COMM_WORLD) == MPI_SUCCESS,
                  "MPI_Reduce(MPI_IN_PLACE)");
            expect(t, "MPI_Reduce(MPI_IN_PLACE)", op, n, ref, recv);
        } else {
            CHECK(MPI_Reduce(recv, NULL, n, t->dt, o, ip_root, MPI_COMM_WORLD) == MPI_SUCCESS,
                  "MPI_Reduce (no receive buffer off the root)");
            memcpy(tmp, recv, len);
            t->fill(recv, op, rank, n);
            if (t->diff(recv, tmp, n) >= 0)
                CHECK(0, "MPI_Reduce %s on %s: the send buffer off the root was written", ops[op].name,
                      t->name);
        }
    }

    /* MPI_Reduce_local: inout = in op inout, with this rank's and the next rank's values. */
    memset(ref, UNTOUCHED, len);
    memset(recv, UNTOUCHED, len);
    t->fill(ref, op, rank, n);
    t->fill(tmp, op, rank + 1, n);
    t->combine(ref, tmp, op, n);
    t->fill(send, op, rank + 1, n);
    t->fill(recv, op, rank, n);
    CHECK(MPI_Reduce_local(send, recv, n, t->dt, o) == MPI_SUCCESS, "MPI_Reduce_local");
    expect(t, "MPI_Reduce_local", op, n, ref, recv);

    free(send);
    free(recv);
    free(ref);
    free(tmp);
}

static void every_operation(void)
{
    static const int counts[] = {1, 7, 1000};
    for (int k = 0; k < NTYPES; k++) {
        const Type *t = &types[k];
        for (int op = 0; op < NOPS; op++) {
            if (!(t->ops & (1u << op)))
                continue;
            int ncounts = t->many ? 3 : 2;
            for (int c = 0; c < ncounts; c++)
                reduce_all(t, op, counts[c], counts[c] == 7);
            CHECK(1, "%s on %s: MPI_Allreduce, MPI_Reduce, in place, MPI_Reduce_local on 1, 7%s elements",
                  ops[op].name, t->name, t->many ? ", 1000" : "");
        }
    }
}

/* ---------------------------------------------------------------- MPI_REPLACE, MPI_NO_OP */

/* MPI defines them for one-sided accumulate only: "not in collective reduction operations such
 * as MPI_REDUCE" (MPI 4.0 §12.3.4), and MPICH 4.0.2 returns MPI_ERR_OP for them in collectives
 * and MPI_Reduce_local (checked in errors()). MadMPI defines them there on every type, combined
 * in rank order (inout = in op inout, the input being the lower ranks' part): a reduction with
 * MPI_REPLACE gives rank 0's contribution, with MPI_NO_OP the last rank's; MPI_Reduce_local
 * copies the input (REPLACE) or leaves inout as it was (NO_OP). */
static void replace_and_no_op(void)
{
    static const int counts[] = {1, 7, 1000};
    for (int k = 0; k < NTYPES; k++) {
        const Type *t = &types[k];
        int fop = __builtin_ctz(t->ops); /* any operation the fill functions know for t */
        for (int which = 0; which < 2; which++) {
            MPI_Op o = which ? MPI_NO_OP : MPI_REPLACE;
            const char *oname = which ? "MPI_NO_OP" : "MPI_REPLACE";
            int from = which ? size - 1 : 0; /* whose contribution the result is */
            for (int c = 0; c < 3; c++) {
                int n = counts[c];
                size_t len = (n + 1) * t->extent;
                char *send = malloc(len), *recv = malloc(len), *ref = malloc(len);
                memset(ref, UNTOUCHED, len);
                t->fill(ref, fop, from, n);
                t->fill(send, fop, rank, n);

                memset(recv, UNTOUCHED, len);
                CHECK(MPI_Allreduce(send, recv, n, t->dt, o, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Allreduce");
                expect_named(t, "MPI_Allreduce", oname, n, ref, recv);

                memset(recv, UNTOUCHED, len);
                CHECK(MPI_Reduce(send, recv, n, t->dt, o, size - 1, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Reduce");
                if (rank == size - 1)
                    expect_named(t, "MPI_Reduce", oname, n, ref, recv);

                memset(recv, UNTOUCHED, len);
                t->fill(recv, fop, rank, n);
                CHECK(MPI_Allreduce(MPI_IN_PLACE, recv, n, t->dt, o, MPI_COMM_WORLD) == MPI_SUCCESS,
                      "MPI_Allreduce(MPI_IN_PLACE)");
                expect_named(t, "MPI_Allreduce(MPI_IN_PLACE)", oname, n, ref, recv);

                /* MPI_Reduce_local(in = rank + 1's values, inout = rank's). */
                memset(ref, UNTOUCHED, len);
                t->fill(ref, fop, which ? rank : rank + 1, n);
                t->fill(send, fop, rank + 1, n);
                memset(recv, UNTOUCHED, len);
                t->fill(recv, fop, rank, n);
                CHECK(MPI_Reduce_local(send, recv, n, t->dt, o) == MPI_SUCCESS, "MPI_Reduce_local");
                expect_named(t, "MPI_Reduce_local", oname, n, ref, recv);
                free(send);
                free(recv);
                free(ref);
            }
            CHECK(1, "%s on %s: MPI_Allreduce, MPI_Reduce, in place, MPI_Reduce_local on 1, 7, 1000 elements",
                  oname, t->name);
        }
    }
}

/* ---------------------------------------------------------------- errors */

/* Fails unless rc is an MPI_ERR_OP error whose message names the operation (on MadMPI's
 * library: MPICH words its messages otherwise). */
static void op_error(int rc, const char *call, const char *dname, const char *oname)
{
    char s[MPI_MAX_ERROR_STRING];
    int n = 0;
    s[0] = 0;
    MPI_Error_string(rc, s, &n);
    CHECK(rc != MPI_SUCCESS && class_of(rc) == MPI_ERR_OP && (strstr(s, oname) != NULL || !madmpi),
          "%s %s on %s fails with MPI_ERR_OP: \"%s\"", call, oname, dname, s);
}

/* An operation MPI does not define on a datatype: MPI_ERR_OP from every call, on every rank,
 * and the output untouched. */
static void undefined(MPI_Datatype dt, const char *dname, MPI_Op op, const char *oname)
{
    enum { LEN = 2 * 32 }; /* 2 elements of the largest type */
    unsigned char in[LEN], out[LEN];
    memset(in, 1, sizeof in);
    memset(out, UNTOUCHED, sizeof out);
    op_error(MPI_Reduce_local(in, out, 2, dt, op), "MPI_Reduce_local", dname, oname);
    op_error(MPI_Allreduce(in, out, 2, dt, op, MPI_COMM_WORLD), "MPI_Allreduce", dname, oname);
    op_error(MPI_Reduce(in, out, 2, dt, op, size - 1, MPI_COMM_WORLD), "MPI_Reduce", dname, oname);
    CHECK(untouched(out, sizeof out), "%s on %s: the output buffer is left untouched", oname, dname);
}

#define UNDEFINED(dt, op) undefined(dt, #dt, op, #op)

static void errors(void)
{
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN) == MPI_SUCCESS &&
              MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN) == MPI_SUCCESS,
          "MPI_ERRORS_RETURN");
    UNDEFINED(MPI_C_BOOL, MPI_SUM);
    UNDEFINED(MPI_C_BOOL, MPI_MAX);
    UNDEFINED(MPI_C_BOOL, MPI_BAND);
    UNDEFINED(MPI_FLOAT, MPI_BAND);
    UNDEFINED(MPI_DOUBLE, MPI_BXOR);
    UNDEFINED(MPI_LONG_DOUBLE, MPI_BOR);
    if (madmpi) /* MPICH_BUG: MPICH 4.0.2 accepts it, then aborts in opland.c */
        UNDEFINED(MPI_FLOAT, MPI_LAND);
    UNDEFINED(MPI_INT, MPI_MAXLOC);
    UNDEFINED(MPI_DOUBLE, MPI_MINLOC);
    UNDEFINED(MPI_2INT, MPI_SUM);
    UNDEFINED(MPI_DOUBLE_INT, MPI_MAX);
    UNDEFINED(MPI_C_DOUBLE_COMPLEX, MPI_MAX);
    UNDEFINED(MPI_C_FLOAT_COMPLEX, MPI_LAND);
    UNDEFINED(MPI_BYTE, MPI_SUM);
    UNDEFINED(MPI_BYTE, MPI_LAND);
    UNDEFINED(MPI_WCHAR, MPI_SUM);
    UNDEFINED(MPI_PACKED, MPI_BXOR);
    if (!madmpi) { /* see replace_and_no_op() */
        UNDEFINED(MPI_INT, MPI_REPLACE);
        UNDEFINED(MPI_INT, MPI_NO_OP);
        UNDEFINED(MPI_DOUBLE, MPI_REPLACE);
        UNDEFINED(MPI_BYTE, MPI_NO_OP);
    }
    {
        int a[2] = {1, 2}, b[2] = {3, 4};
        CHECK(MPI_Allreduce(a, b, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD) == MPI_SUCCESS && b[1] == 2 * size,
              "collectives work after the errors");
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    madmpi = on_madmpi();
    if (rank == 0) {
        char v[MPI_MAX_LIBRARY_VERSION_STRING];
        int n = 0;
        MPI_Get_library_version(v, &n);
        v[strcspn(v, "\n")] = 0;
        CHECK(1, "library: %s", v);
    }

    every_operation();
    if (madmpi)
        replace_and_no_op();
    errors();

    MPI_Barrier(MPI_COMM_WORLD);
    printf("OK %d: all checks passed\n", rank);
    MPI_Finalize();
    return 0;
}
