/*
 * Helpers shared by the benchmark programs of bench/mpi/ (madbench embeds this header with them).
 * A program defines BENCH_NAME (its name, for error messages) before including it.
 *
 * Times come from CLOCK_MONOTONIC, not MPI_Wtime, so that every library is timed by the same
 * clock; ranks synchronize by point-to-point messages only (collectives are not part of every
 * library under test).
 */
#ifndef MADBENCH_COMMON_H
#define MADBENCH_COMMON_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts v and returns its median. */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Any MPI error ends the job with the call's name. */
static inline void check(int rc, const char *what)
{
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "%s: %s failed (%d)\n", BENCH_NAME, what, rc);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Both ranks leave together: a zero-byte exchange with `peer`. */
static inline void sync_with(int peer, int tag)
{
    check(MPI_Sendrecv(NULL, 0, MPI_BYTE, peer, tag, NULL, 0, MPI_BYTE, peer, tag, MPI_COMM_WORLD,
                       MPI_STATUS_IGNORE),
          "MPI_Sendrecv");
}

/* Prints "# library <MPI_Get_library_version's first line>": the conductor checks that the
 * intended library ran. */
static inline void print_library(void)
{
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    check(MPI_Get_library_version(version, &len), "MPI_Get_library_version");
    version[strcspn(version, "\n")] = 0;
    printf("# library %s\n", version);
    fflush(stdout);
}

#endif
