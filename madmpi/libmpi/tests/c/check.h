/* Helpers of the C test programs: each check prints "OK <rank>: <what>" or "FAIL <rank>: <what>"
 * and the program exits with status 1 at the first failure (the launcher then ends the job, so
 * a failure never leaves the other ranks waiting). */
#ifndef CHECK_H
#define CHECK_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int check_rank = -1;

/* One line per check, written with one write(2): the ranks' lines never interleave, even where
 * the library leaves stdout unbuffered (MPICH's did, and a line came out as "OK 2: OK 0: ..."). */
static inline void check_emit(char *line, size_t cap, int n)
{
    size_t len = n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
    fflush(stdout);
    while (len > 0) {
        ssize_t w = write(STDOUT_FILENO, line, len);
        if (w <= 0)
            break;
        line += w;
        len -= (size_t)w;
    }
}

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        int ok_ = (cond);                                                                      \
        char line_[8192];                                                                      \
        size_t at_ = 0;                                                                        \
        int n_ = snprintf(line_, sizeof line_, "%s %d: ", ok_ ? "OK" : "FAIL", check_rank);  \
        at_ = n_ > 0 && (size_t)n_ < sizeof line_ ? (size_t)n_ : 0;                            \
        n_ = snprintf(line_ + at_, sizeof line_ - at_, __VA_ARGS__);                           \
        at_ += n_ > 0 && (size_t)n_ < sizeof line_ - at_ ? (size_t)n_ : 0;                     \
        n_ = snprintf(line_ + at_, sizeof line_ - at_, ok_ ? "\n" : " [%s:%d: %s]\n", __FILE__, \
                      __LINE__, #cond);                                                        \
        at_ += n_ > 0 && (size_t)n_ < sizeof line_ - at_ ? (size_t)n_ : 0;                     \
        check_emit(line_, sizeof line_, (int)at_);                                             \
        if (!ok_)                                                                              \
            exit(1);                                                                           \
    } while (0)

/* Seconds on the monotonic clock. */
static inline double check_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The usual start: MPI_Init, this process's rank (returned; CHECK's lines carry it) and the check
 * that the job has `size` processes. */
static inline int check_init(int *argc, char ***argv, int size)
{
    int rank = -1, n = 0;
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    check_rank = rank;
    CHECK(n == size, "%d processes", size);
    return rank;
}

/* check_init for threaded programs: MPI_Init_thread asking MPI_THREAD_MULTIPLE (checked
 * provided), this process's rank (returned) and the job's size in `*size`. */
static inline int check_init_multiple(int *argc, char ***argv, int *size)
{
    int rank = -1, provided = -1;
    MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, size);
    check_rank = rank;
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE provided");
    return rank;
}

/* The class of an error code (MPI_Error_class must work for any code a call returned). */
static inline int class_of(int code)
{
    int cls = -1;
    if (MPI_Error_class(code, &cls) != MPI_SUCCESS)
        return -1;
    return cls;
}

/* Whether the library is MadMPI's: the programs also run on MPICH's own library (to compare),
 * and skip there the few checks of documented differences. */
static inline int on_madmpi(void)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int n = 0;
    return MPI_Get_library_version(v, &n) == MPI_SUCCESS && strstr(v, "MadMPI") != NULL;
}

/* Checks that a call failed with error class `cls` and that MPI_Error_string says `word` (on
 * MadMPI's library: MPICH words its messages otherwise). */
#define CHECK_ERR(call, cls, word)                                                             \
    do {                                                                                       \
        int rc_ = (call);                                                                      \
        char s_[MPI_MAX_ERROR_STRING];                                                         \
        int n_ = 0;                                                                            \
        s_[0] = 0;                                                                             \
        MPI_Error_string(rc_, s_, &n_);                                                        \
        CHECK(rc_ != MPI_SUCCESS && class_of(rc_) == (cls) &&                                  \
                  (strstr(s_, (word)) != NULL || !on_madmpi()) && (int)strlen(s_) == n_,       \
              "%s fails with %s: \"%s\"", #call, #cls, s_);                                    \
    } while (0)

/* A non-commutative user operation (MPI_User_function): products of 2x2 int matrices, each 4
 * ints, `inout = in x inout` element by element. */
static inline void check_matmul(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    int *a = in, *b = inout;
    for (int k = 0; k < *len; k++, a += 4, b += 4) {
        int c[4] = {a[0] * b[0] + a[1] * b[2], a[0] * b[1] + a[1] * b[3], a[2] * b[0] + a[3] * b[2],
                    a[2] * b[1] + a[3] * b[3]};
        memcpy(b, c, sizeof c);
    }
}

#endif
