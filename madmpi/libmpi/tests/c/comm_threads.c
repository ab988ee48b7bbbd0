/* MPI_THREAD_MULTIPLE and the communicator calls: several threads per process each create and
 * free communicators (dup, split), groups, keyvals, attributes and error handlers at once, each
 * thread on its own parent communicator (collective calls on one communicator must not run
 * concurrently; on different ones they may). Run with 2 processes. */
#include "check.h"
#include <pthread.h>
#include <stdint.h>

#define THREADS 4
#define ROUNDS 40

static int rank, size;
static MPI_Comm base[THREADS];
static int deleted[THREADS];

static int count_delete(MPI_Comm c, int k, void *v, void *extra)
{
    (void)c, (void)k, (void)extra;
    deleted[(intptr_t)v]++;
    return MPI_SUCCESS;
}

static void quiet(MPI_Comm *c, int *code, ...)
{
    (void)c, (void)code;
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg, r, k, flag, n, me, x;
    MPI_Comm d, s;
    MPI_Group g, h;
    MPI_Errhandler e;
    void *v;

    for (r = 0; r < ROUNDS; r++) {
        if (MPI_Comm_dup(base[t], &d) != MPI_SUCCESS || MPI_Comm_create_keyval(MPI_COMM_DUP_FN, count_delete, &k, NULL) ||
            MPI_Comm_set_attr(d, k, (void *)(intptr_t)t) || MPI_Comm_get_attr(d, k, &v, &flag) || !flag ||
            (intptr_t)v != t)
            CHECK(0, "thread %d round %d: dup, keyval, attribute", t, r);
        if (MPI_Comm_split(d, rank, -rank, &s) != MPI_SUCCESS || MPI_Comm_size(s, &n) || n != 1 ||
            MPI_Comm_group(d, &g) || MPI_Group_incl(g, 1, &rank, &h) || MPI_Group_rank(h, &me) || me != 0)
            CHECK(0, "thread %d round %d: split, groups", t, r);
        if (MPI_Comm_create_errhandler(quiet, &e) || MPI_Comm_set_errhandler(s, e) || MPI_Errhandler_free(&e) ||
            MPI_Send(&x, 1, MPI_INT, 5, 0, s) == MPI_SUCCESS)
            CHECK(0, "thread %d round %d: error handlers", t, r);
        x = -1; /* an exchange on the duplicate, tagged by thread */
        if (MPI_Sendrecv(&r, 1, MPI_INT, (rank + 1) % size, t, &x, 1, MPI_INT, (rank + size - 1) % size, t, d,
                         MPI_STATUS_IGNORE) != MPI_SUCCESS)
            CHECK(0, "thread %d round %d: exchange", t, r);
        if (x != r || MPI_Group_free(&h) || MPI_Group_free(&g) || MPI_Comm_free(&s) || MPI_Comm_free(&d) ||
            MPI_Comm_free_keyval(&k))
            CHECK(0, "thread %d round %d: frees", t, r);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t th[THREADS];
    int provided = -1, t, ok = 1;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE provided");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    for (t = 0; t < THREADS; t++)
        MPI_Comm_dup(MPI_COMM_WORLD, &base[t]);
    for (t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (t = 0; t < THREADS; t++) {
        ok = ok && deleted[t] == ROUNDS;
        MPI_Comm_free(&base[t]);
    }
    CHECK(ok, "%d threads x %d rounds of dup, split, groups, keyvals, attributes, handlers, frees", THREADS, ROUNDS);
    MPI_Finalize();
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
