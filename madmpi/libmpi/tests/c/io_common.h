/* Helpers of the MPI-IO test programs (io_*.c), beside check.h's: the program's rank and size,
 * the directory its files go into (argv[1], default: the current one) and their names, the
 * usual start and end, and the sync-barrier-sync that makes every rank's writes visible.
 *
 * A program that writes regions of blocks of ints (a block per rank and region) defines
 * IO_BLOCK_INTS, the ints of a block, before including this header: it then gets at, fill and
 * is. */
#ifndef IO_COMMON_H
#define IO_COMMON_H

#include "check.h"

static int rank, size;
static const char *dir = ".";
static const char *io_name = "io"; /* the program's name: its files are dir/<io_name>.* */

/* dir/<program>.<suffix> (four buffers in rotation). */
static inline const char *fname(const char *suffix)
{
    static char bufs[4][4096];
    static int next;
    char *b = bufs[next++ % 4];
    snprintf(b, sizeof bufs[0], "%s/%s.%s", dir, io_name, suffix);
    return b;
}

/* This rank's private file: dir/<program>.<what><rank>. */
static inline const char *rank_fname(const char *what)
{
    char s[64];
    snprintf(s, sizeof s, "%s%d", what, rank);
    return fname(s);
}

/* The usual start of program `name` (files named dir/<name>.*): MPI_Init, rank and size (CHECK's
 * lines carry the rank), the directory from argv[1]. */
static inline void io_init(int *argc, char ***argv, const char *name)
{
    MPI_Init(argc, argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    io_name = name;
    if (*argc > 1)
        dir = (*argv)[1];
}

/* Rank 0 deletes the files dir/<program>.<suffix> an earlier run left (`suffixes` ends with
 * NULL); every rank waits for it. */
static inline void io_remove_old(const char *const *suffixes)
{
    if (rank == 0)
        for (; *suffixes != NULL; suffixes++)
            unlink(fname(*suffixes));
    MPI_Barrier(MPI_COMM_WORLD);
}

/* io_remove_old of the suffixes listed. */
#define IO_REMOVE_OLD(...) io_remove_old((const char *const[]){__VA_ARGS__, NULL})

/* The usual end, once every rank is done: "all checks passed", MPI_Finalize; main's status. */
static inline int io_finish(void)
{
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}

/* Every rank's writes to fh made visible to every rank (MPI 4.0, 14.6.1: sync-barrier-sync). */
static inline void settle(MPI_File fh)
{
    MPI_File_sync(fh);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_File_sync(fh);
}

/* settle, then the plain view of the whole file: `etype`s from byte 0, "native". */
static inline void settle_plain(MPI_File fh, MPI_Datatype etype)
{
    settle(fh);
    MPI_File_set_view(fh, 0, etype, etype, "native", MPI_INFO_NULL);
}

/* Reads the whole file as ints (every rank, collectively) into a new array of *n ints. */
static inline int *whole(MPI_File fh, int *n)
{
    MPI_Offset sz;
    MPI_Status st;
    settle_plain(fh, MPI_INT);
    MPI_File_get_size(fh, &sz);
    *n = (int)(sz / 4);
    int *all = calloc(*n + 1, sizeof(int));
    MPI_File_read_at_all(fh, 0, all, *n, MPI_INT, &st);
    return all;
}

#ifdef IO_BLOCK_INTS
/* Byte offset of rank r's block in region reg. */
static inline MPI_Offset at(int reg, int r)
{
    return ((MPI_Offset)reg * size + r) * IO_BLOCK_INTS * 4;
}

/* Rank r's block of region reg. */
static inline void fill(int *v, int reg, int r)
{
    for (int i = 0; i < IO_BLOCK_INTS; i++)
        v[i] = reg * 100000 + r * 1000 + i;
}

/* Whether v is rank r's block of region reg. */
static inline int is(const int *v, int reg, int r)
{
    for (int i = 0; i < IO_BLOCK_INTS; i++)
        if (v[i] != reg * 100000 + r * 1000 + i)
            return 0;
    return 1;
}
#endif

#endif
