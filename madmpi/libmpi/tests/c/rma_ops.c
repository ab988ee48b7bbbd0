/* One-sided operations on every window flavour (create, allocate, dynamic) under every
 * synchronization (fence, post/start/complete/wait, lock/unlock, lock_all + flush), at any
 * process count: put, get, accumulate (SUM, REPLACE), get_accumulate (SUM, NO_OP),
 * fetch_and_op, compare_and_swap, the request forms, derived datatypes on both sides, and the
 * error classes of wrong synchronization and out-of-range accesses. Every value is checked. */
#include "check.h"

#define SLOT 16 /* ints per origin in each window */

static int rank, size, flavour;
static MPI_Aint *bases; /* dynamic windows: each rank's attached address */

/* The displacement of int `idx` of rank t's window. */
static MPI_Aint disp(int t, int idx)
{
    return flavour == 2 ? bases[t] + (MPI_Aint)idx * (MPI_Aint)sizeof(int) : idx;
}

static const char *names[] = {"create", "allocate", "dynamic"};

static MPI_Win make(int **mem)
{
    MPI_Win win;
    int n = SLOT * size;
    if (flavour == 0) {
        *mem = calloc(n, sizeof(int));
        MPI_Win_create(*mem, n * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else if (flavour == 1) {
        MPI_Win_allocate(n * sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, mem, &win);
        memset(*mem, 0, n * sizeof(int));
    } else {
        *mem = calloc(n, sizeof(int));
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_attach(win, *mem, n * sizeof(int));
        MPI_Aint mine;
        MPI_Get_address(*mem, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return win;
}

static void fence_ops(MPI_Win win, int *mem)
{
    int vals[4], got[4], one = rank + 1;
    for (int i = 0; i < 4; i++)
        vals[i] = rank * 100 + i;
    MPI_Win_fence(MPI_MODE_NOPRECEDE, win);
    for (int t = 0; t < size; t++) {
        MPI_Put(vals, 4, MPI_INT, t, disp(t, rank * SLOT), 4, MPI_INT, win);
        for (int k = 0; k < 10; k++)
            MPI_Accumulate(&one, 1, MPI_INT, t, disp(t, 8), 1, MPI_INT, MPI_SUM, win);
    }
    MPI_Win_fence(0, win);
    int ok = 1;
    for (int o = 0; o < size; o++)
        for (int i = 0; i < 4; i++)
            ok &= mem[o * SLOT + i] == o * 100 + i;
    CHECK(ok, "%s, fence: every rank's put landed", names[flavour]);
    CHECK(mem[8] == 10 * size * (size + 1) / 2, "%s, fence: accumulated sum %d", names[flavour], mem[8]);
    int t = (rank + 1) % size;
    MPI_Get(got, 4, MPI_INT, t, disp(t, rank * SLOT), 4, MPI_INT, win);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    CHECK(got[0] == rank * 100 && got[3] == rank * 100 + 3, "%s, fence: get from rank %d", names[flavour], t);
}

static void pscw_ops(MPI_Win win, int *mem)
{
    MPI_Group world, left, right;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    int l = (rank + size - 1) % size, r = (rank + 1) % size, v = 1000 + rank;
    MPI_Group_incl(world, 1, &l, &left);
    MPI_Group_incl(world, 1, &r, &right);
    MPI_Win_post(left, 0, win);
    MPI_Win_start(right, 0, win);
    MPI_Put(&v, 1, MPI_INT, r, disp(r, 11), 1, MPI_INT, win);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    CHECK(mem[11] == 1000 + l, "%s, pscw: the left neighbour's put (%d)", names[flavour], mem[11]);
    /* MPI_Win_test until done. */
    int flag = 0;
    MPI_Win_post(left, 0, win);
    MPI_Win_start(right, 0, win);
    v = 2000 + rank;
    MPI_Accumulate(&v, 1, MPI_INT, r, disp(r, 11), 1, MPI_INT, MPI_REPLACE, win);
    MPI_Win_complete(win);
    while (!flag)
        MPI_Win_test(win, &flag);
    CHECK(mem[11] == 2000 + l, "%s, pscw: MPI_Win_test, then the replaced value (%d)", names[flavour], mem[11]);
    MPI_Group_free(&left);
    MPI_Group_free(&right);
    MPI_Group_free(&world);
}

static void lock_ops(MPI_Win win, int *mem)
{
    /* A counter at rank 0 incremented 20 times by everyone with fetch-and-op: every fetched
     * value is distinct, the final value 20 * size. */
    int one = 1, fetched[20], zero = 0, mine = rank + 1, old = -1;
    MPI_Win_lock_all(0, win);
    for (int k = 0; k < 20; k++) {
        MPI_Fetch_and_op(&one, &fetched[k], MPI_INT, 0, disp(0, 9), MPI_SUM, win);
        MPI_Win_flush(0, win);
    }
    MPI_Win_unlock_all(win);
    int ok = 1;
    for (int k = 1; k < 20; k++)
        ok &= fetched[k] > fetched[k - 1];
    CHECK(ok, "%s, lock_all: fetch-and-op values increase (%d .. %d)", names[flavour], fetched[0], fetched[19]);
    /* Compare-and-swap 0 -> rank + 1 at rank 0: exactly one rank wins. */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win);
    MPI_Compare_and_swap(&mine, &zero, &old, MPI_INT, 0, disp(0, 10), win);
    MPI_Win_unlock(0, win);
    int won = old == 0, winners = 0;
    MPI_Allreduce(&won, &winners, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(winners == 1, "%s, lock: one compare-and-swap won (%d)", names[flavour], winners);
    if (rank == 0) {
        CHECK(mem[9] == 20 * size, "%s: the counter is %d", names[flavour], mem[9]);
        CHECK(mem[10] >= 1 && mem[10] <= size, "%s: the swapped value is a rank's (%d)", names[flavour], mem[10]);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* Get_accumulate with SUM then NO_OP, request forms, under a shared lock. */
    int t = (rank + 1) % size, add = 5, before = -1, now = -1, back = -1;
    MPI_Request req;
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
    MPI_Get_accumulate(&add, 1, MPI_INT, &before, 1, MPI_INT, t, disp(t, rank * SLOT + 12), 1, MPI_INT, MPI_SUM, win);
    MPI_Win_flush(t, win);
    MPI_Rget_accumulate(NULL, 0, MPI_INT, &now, 1, MPI_INT, t, disp(t, rank * SLOT + 12), 1, MPI_INT, MPI_NO_OP, win, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    int seven = 7;
    MPI_Rput(&seven, 1, MPI_INT, t, disp(t, rank * SLOT + 13), 1, MPI_INT, win, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Win_flush(t, win);
    MPI_Rget(&back, 1, MPI_INT, t, disp(t, rank * SLOT + 13), 1, MPI_INT, win, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Win_unlock(t, win);
    CHECK(before == 0 && now == 5 && back == 7, "%s, lock: get_accumulate %d then %d, rput/rget %d", names[flavour],
          before, now, back);
}

static void derived_ops(MPI_Win win, int *mem)
{
    /* Origin: every other int of 8 (a vector); target: a vector with stride 3 at slot+0. */
    MPI_Datatype every_other, every_third;
    MPI_Type_vector(4, 1, 2, MPI_INT, &every_other);
    MPI_Type_vector(4, 1, 3, MPI_INT, &every_third);
    MPI_Type_commit(&every_other);
    MPI_Type_commit(&every_third);
    int src[8];
    for (int i = 0; i < 8; i++)
        src[i] = i % 2 ? -1 : 50 + i;
    int t = (rank + 1) % size, l = (rank + size - 1) % size;
    memset(mem + l * SLOT, 0, SLOT * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
    MPI_Put(src, 1, every_other, t, disp(t, rank * SLOT), 1, every_third, win);
    MPI_Accumulate(src, 1, every_other, t, disp(t, rank * SLOT + 1), 1, every_third, MPI_SUM, win);
    MPI_Win_unlock(t, win);
    MPI_Barrier(MPI_COMM_WORLD);
    int *s = mem + l * SLOT, ok = 1;
    for (int i = 0; i < 4; i++)
        ok &= s[3 * i] == 50 + 2 * i && s[3 * i + 1] == 50 + 2 * i && s[3 * i + 2] == 0;
    CHECK(ok, "%s, derived types on both sides: put and accumulate of vectors", names[flavour]);
    int back[8] = {0};
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
    MPI_Get(back, 1, every_other, t, disp(t, rank * SLOT), 1, every_third, win);
    MPI_Win_unlock(t, win);
    CHECK(back[0] == 50 && back[2] == 52 && back[6] == 56 && back[1] == 0, "%s, derived types: get of a vector",
          names[flavour]);
    MPI_Type_free(&every_other);
    MPI_Type_free(&every_third);
}

static void errors(MPI_Win win)
{
    int v = 1;
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK(class_of(MPI_Put(&v, 1, MPI_INT, 0, disp(0, 0), 1, MPI_INT, win)) == MPI_ERR_RMA_SYNC,
          "%s: a put outside any epoch is MPI_ERR_RMA_SYNC", names[flavour]);
    CHECK(class_of(MPI_Win_unlock(0, win)) == MPI_ERR_RMA_SYNC, "%s: unlock without lock is MPI_ERR_RMA_SYNC",
          names[flavour]);
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    CHECK(class_of(MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win)) == MPI_ERR_RMA_SYNC,
          "%s: locking a rank twice is MPI_ERR_RMA_SYNC", names[flavour]);
    /* Checked at the origin, or by the target for a dynamic window (MPICH's library checks
     * neither: its put past the end succeeds). */
    if (on_madmpi()) {
        int rc = MPI_Put(&v, 1, MPI_INT, 0, disp(0, SLOT * size), 1, MPI_INT, win);
        if (rc == MPI_SUCCESS)
            rc = MPI_Win_flush(0, win);
        CHECK(class_of(rc) == MPI_ERR_RMA_RANGE, "%s: a put past the window's end is MPI_ERR_RMA_RANGE (class %d)",
              names[flavour], class_of(rc));
    }
    MPI_Win_unlock(0, win);
    MPI_Win_set_errhandler(win, MPI_ERRORS_ARE_FATAL);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    bases = calloc(size, sizeof(MPI_Aint));
    for (flavour = 0; flavour < 3; flavour++) {
        int *mem = NULL;
        MPI_Win win = make(&mem);
        fence_ops(win, mem);
        MPI_Barrier(MPI_COMM_WORLD);
        pscw_ops(win, mem);
        MPI_Barrier(MPI_COMM_WORLD);
        lock_ops(win, mem);
        MPI_Barrier(MPI_COMM_WORLD);
        derived_ops(win, mem);
        MPI_Barrier(MPI_COMM_WORLD);
        errors(win);
        MPI_Barrier(MPI_COMM_WORLD);
        if (flavour == 2)
            MPI_Win_detach(win, mem);
        MPI_Win_free(&win);
        if (flavour != 1)
            free(mem);
    }
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
