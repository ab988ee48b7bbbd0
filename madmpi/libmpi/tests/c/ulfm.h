/* What the ULFM test programs share: a victim that dies once every other process is ready. */
#ifndef ULFM_H
#define ULFM_H

#include "check.h"
#include <signal.h>
#include <unistd.h>

/* Every process but `victim` tells it (tag 99) it is ready; the victim returns once all did.
 * Their links to it then exist (and break when it dies), and none of them is still in an
 * earlier call that the victim's death or revocation would fail (its own barrier may complete
 * while its last message is still queued: a send completes once buffered). */
static inline void all_ready_for(int victim)
{
    int rank, size, ready = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank != victim) {
        MPI_Send(&ready, 1, MPI_INT, victim, 99, MPI_COMM_WORLD);
        return;
    }
    for (int i = 0; i < size - 1; i++)
        MPI_Recv(&ready, 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

/* The victim dies: with the program argument "exit" it exits with status 3 (Hydra 4.0.2 ends the
 * whole job when a process dies of a signal, -disable-auto-cleanup or not), else SIGKILL. */
static inline void die(int argc, char **argv)
{
    fflush(stdout);
    if (argc > 1 && strcmp(argv[1], "exit") == 0)
        _exit(3);
    raise(SIGKILL);
}

#endif
