/* Large one-sided transfers (256 KiB per operation, above the size at which MadMPI sends them
 * apart from its active messages) on every window flavour under lock, lock_all + flush, fence
 * and post/start/complete/wait: puts, gets and accumulates in flight together in one epoch,
 * a derived origin type, a derived (strided) target type, the request forms, the ordering of a small accumulate after a large one
 * on the same element, and large transfers a dynamic window's target refuses
 * (MPI_ERR_RMA_RANGE at the synchronization, and the window still works). Every value checked;
 * 2 or more processes. */
#include "check.h"

#define REGION (64 * 1024) /* ints: 256 KiB, one region per origin in each window */

static int rank, size, flavour;
static MPI_Aint *bases;
static const char *names[] = {"create", "allocate", "dynamic"};

static MPI_Aint disp(int t, long idx)
{
    return flavour == 2 ? bases[t] + (MPI_Aint)idx * (MPI_Aint)sizeof(int) : (MPI_Aint)idx;
}

static int pattern(int who, int phase, long i)
{
    return who * 1000003 + phase * 7919 + (int)(i % 100000);
}

static MPI_Win make(int **mem)
{
    MPI_Win win;
    MPI_Aint bytes = (MPI_Aint)REGION * size * (MPI_Aint)sizeof(int);
    if (flavour == 0) {
        *mem = calloc((size_t)REGION * size, sizeof(int));
        MPI_Win_create(*mem, bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    } else if (flavour == 1) {
        MPI_Win_allocate(bytes, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, mem, &win);
        memset(*mem, 0, (size_t)bytes);
    } else {
        *mem = calloc((size_t)REGION * size, sizeof(int));
        MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &win);
        MPI_Win_attach(win, *mem, bytes);
        MPI_Aint mine;
        MPI_Get_address(*mem, &mine);
        MPI_Allgather(&mine, 1, MPI_AINT, bases, 1, MPI_AINT, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return win;
}

static long mismatches(const int *got, int who, int phase, int plus)
{
    long bad = 0;
    for (long i = 0; i < REGION; i++)
        bad += got[i] != pattern(who, phase, i) + plus;
    return bad;
}

/* Exclusive lock on the right neighbour: a put, a get and an accumulate of its regions in one
 * epoch (different regions, so they may overlap in flight), then the values. */
static void lock_epoch(MPI_Win win, int *mem, int *buf, int *got)
{
    int t = (rank + 1) % size, l = (rank + size - 1) % size;
    long mine = (long)rank * REGION, theirs = (long)t * REGION;
    for (long i = 0; i < REGION; i++) {
        mem[mine + i] = pattern(rank, 1, i); /* read by the left neighbour's get */
        buf[i] = pattern(rank, 2, i);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t, 0, win);
    MPI_Get(got, REGION, MPI_INT, t, disp(t, theirs), REGION, MPI_INT, win);
    MPI_Put(buf, REGION, MPI_INT, t, disp(t, mine), REGION, MPI_INT, win);
    MPI_Win_unlock(t, win);
    CHECK(mismatches(got, t, 1, 0) == 0, "%s, lock: a large get of rank %d's region", names[flavour], t);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(mismatches(mem + (long)l * REGION, l, 2, 0) == 0, "%s, lock: rank %d's large put landed", names[flavour],
          l);
    /* Large accumulates from every rank into rank 0's region 0, under shared locks. */
    for (long i = 0; i < REGION; i++)
        buf[i] = rank + 1;
    if (rank == 0)
        memset(mem, 0, REGION * sizeof(int));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, win);
    MPI_Accumulate(buf, REGION, MPI_INT, 0, disp(0, 0), REGION, MPI_INT, MPI_SUM, win);
    MPI_Accumulate(buf, REGION, MPI_INT, 0, disp(0, 0), REGION, MPI_INT, MPI_SUM, win);
    MPI_Win_unlock(0, win);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        long bad = 0;
        for (long i = 0; i < REGION; i++)
            bad += mem[i] != size * (size + 1);
        CHECK(bad == 0, "%s, lock: two large accumulates from each of %d ranks sum exactly", names[flavour], size);
    }
}

/* lock_all + flush: a put with a derived (strided) origin type, read back; a large accumulate
 * then a small REPLACE on its first element (ordered after it), read back. */
static void lock_all_epoch(MPI_Win win, int *buf, int *got)
{
    int t = (rank + 1) % size;
    long mine = (long)rank * REGION;
    int *strided = malloc(2 * REGION * sizeof(int));
    for (long i = 0; i < REGION; i++) {
        strided[2 * i] = pattern(rank, 3, i);
        strided[2 * i + 1] = -1;
        buf[i] = 1;
    }
    MPI_Datatype every_other;
    MPI_Type_vector(REGION, 1, 2, MPI_INT, &every_other);
    MPI_Type_commit(&every_other);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock_all(0, win);
    MPI_Put(strided, 1, every_other, t, disp(t, mine), REGION, MPI_INT, win);
    MPI_Win_flush(t, win);
    MPI_Get(got, REGION, MPI_INT, t, disp(t, mine), REGION, MPI_INT, win);
    MPI_Win_flush(t, win);
    CHECK(mismatches(got, rank, 3, 0) == 0, "%s, lock_all: a strided origin's large put read back", names[flavour]);
    int replace = -7;
    MPI_Accumulate(buf, REGION, MPI_INT, t, disp(t, mine), REGION, MPI_INT, MPI_SUM, win);
    MPI_Accumulate(&replace, 1, MPI_INT, t, disp(t, mine), 1, MPI_INT, MPI_REPLACE, win);
    MPI_Win_flush(t, win);
    MPI_Request req;
    MPI_Rget(got, REGION, MPI_INT, t, disp(t, mine), REGION, MPI_INT, win, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    CHECK(got[0] == -7, "%s, lock_all: a small accumulate after a large one on its element wins (%d)",
          names[flavour], got[0]);
    long bad = 0;
    for (long i = 1; i < REGION; i++)
        bad += got[i] != pattern(rank, 3, i) + 1;
    CHECK(bad == 0, "%s, lock_all: a large accumulate summed every element", names[flavour]);
    /* The request form: copied at the call, complete at once. */
    for (long i = 0; i < REGION; i++)
        buf[i] = pattern(rank, 4, i);
    MPI_Rput(buf, REGION, MPI_INT, t, disp(t, mine), REGION, MPI_INT, win, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_Win_flush(t, win);
    MPI_Get(got, REGION, MPI_INT, t, disp(t, mine), REGION, MPI_INT, win);
    MPI_Win_unlock_all(win);
    CHECK(mismatches(got, rank, 4, 0) == 0, "%s, lock_all: a large MPI_Rput read back", names[flavour]);
    MPI_Type_free(&every_other);
    free(strided);
}

/* Fence, then post/start/complete/wait: large puts to the right, gets from the right. */
static void active_epochs(MPI_Win win, int *mem, int *buf, int *got)
{
    int t = (rank + 1) % size, l = (rank + size - 1) % size;
    long mine = (long)rank * REGION, theirs = (long)t * REGION;
    for (long i = 0; i < REGION; i++) {
        mem[mine + i] = pattern(rank, 5, i);
        buf[i] = pattern(rank, 6, i);
    }
    MPI_Win_fence(0, win);
    MPI_Put(buf, REGION, MPI_INT, t, disp(t, mine), REGION, MPI_INT, win);
    MPI_Get(got, REGION, MPI_INT, t, disp(t, theirs), REGION, MPI_INT, win);
    MPI_Win_fence(0, win);
    CHECK(mismatches(got, t, 5, 0) == 0, "%s, fence: a large get", names[flavour]);
    CHECK(mismatches(mem + (long)l * REGION, l, 6, 0) == 0, "%s, fence: a large put", names[flavour]);
    MPI_Win_fence(MPI_MODE_NOSUCCEED, win);
    MPI_Group world, left, right;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    MPI_Group_incl(world, 1, &l, &left);
    MPI_Group_incl(world, 1, &t, &right);
    for (long i = 0; i < REGION; i++)
        buf[i] = 2;
    MPI_Win_post(left, 0, win);
    MPI_Win_start(right, 0, win);
    MPI_Accumulate(buf, REGION, MPI_INT, t, disp(t, mine), REGION, MPI_INT, MPI_PROD, win);
    MPI_Win_complete(win);
    MPI_Win_wait(win);
    long bad = 0;
    for (long i = 0; i < REGION; i++)
        bad += mem[(long)l * REGION + i] != 2 * pattern(l, 6, i);
    CHECK(bad == 0, "%s, pscw: a large accumulate (PROD) from the left", names[flavour]);
    MPI_Group_free(&left);
    MPI_Group_free(&right);
    MPI_Group_free(&world);
}

/* A dynamic window's target checks the addresses: large transfers outside the attached memory
 * are refused there, reported at the synchronization, and the window goes on. */
static void refused(MPI_Win win, int *buf, int *got)
{
    if (flavour != 2 || !on_madmpi())
        return; /* MPICH's library does not check a dynamic window's addresses */
    int t = (rank + 1) % size;
    MPI_Aint outside = bases[t] + (MPI_Aint)REGION * size * (MPI_Aint)sizeof(int) + 4096;
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
    int rc = MPI_Get(got, REGION, MPI_INT, t, outside, REGION, MPI_INT, win);
    if (rc == MPI_SUCCESS)
        rc = MPI_Win_flush(t, win);
    CHECK(class_of(rc) == MPI_ERR_RMA_RANGE, "dynamic: a large get outside the attached memory is refused (class %d)",
          class_of(rc));
    rc = MPI_Put(buf, REGION, MPI_INT, t, outside, REGION, MPI_INT, win);
    if (rc == MPI_SUCCESS)
        rc = MPI_Win_flush(t, win);
    CHECK(class_of(rc) == MPI_ERR_RMA_RANGE, "dynamic: a large put outside is refused (class %d)", class_of(rc));
    rc = MPI_Accumulate(buf, REGION, MPI_INT, t, outside, REGION, MPI_INT, MPI_SUM, win);
    if (rc == MPI_SUCCESS)
        rc = MPI_Win_flush(t, win);
    CHECK(class_of(rc) == MPI_ERR_RMA_RANGE, "dynamic: a large accumulate outside is refused (class %d)",
          class_of(rc));
    long mine = (long)rank * REGION;
    for (long i = 0; i < REGION; i++)
        buf[i] = pattern(rank, 8, i);
    MPI_Put(buf, REGION, MPI_INT, t, disp(t, mine), REGION, MPI_INT, win);
    MPI_Get(got, REGION, MPI_INT, t, disp(t, mine), REGION, MPI_INT, win);
    rc = MPI_Win_unlock(t, win);
    CHECK(rc == MPI_SUCCESS, "dynamic: the epoch after the refusals ends well (%d)", rc);
    MPI_Win_set_errhandler(win, MPI_ERRORS_ARE_FATAL);
    MPI_Win_lock(MPI_LOCK_SHARED, t, 0, win);
    MPI_Get(got, REGION, MPI_INT, t, disp(t, mine), REGION, MPI_INT, win);
    MPI_Win_unlock(t, win);
    long first = -1, nbad = 0;
    for (long i = 0; i < REGION; i++)
        if (got[i] != pattern(rank, 8, i)) {
            nbad++;
            if (first < 0)
                first = i;
        }
    CHECK(nbad == 0, "dynamic: a large put after the refusals landed (%ld bad from %ld: %d, want %d; last %d)", nbad,
          first, first >= 0 ? got[first] : 0, first >= 0 ? pattern(rank, 8, first) : 0, got[REGION - 1]);
}

/* A strided (derived) target type on large transfers: every other int of a slice twice the
 * region, so the packed data (256 KiB) is large while the target's blocks are 4 bytes: a put
 * lands in the even ints only, a get reads them back, an accumulate adds to them; the odd ints
 * stay untouched. */
static void derived_target(int *buf, int *got)
{
    int t = (rank + 1) % size;
    long slice = 2L * REGION, mine = (long)rank * slice;
    int *mem = calloc((size_t)slice * size, sizeof(int)), *whole = malloc(slice * sizeof(int));
    MPI_Win win;
    MPI_Win_create(mem, slice * size * (MPI_Aint)sizeof(int), sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);
    MPI_Datatype evens;
    MPI_Type_vector(REGION, 1, 2, MPI_INT, &evens);
    MPI_Type_commit(&evens);
    for (long i = 0; i < REGION; i++)
        buf[i] = pattern(rank, 6, i);
    MPI_Win_lock_all(0, win);
    MPI_Put(buf, REGION, MPI_INT, t, mine, 1, evens, win);
    MPI_Win_flush(t, win);
    MPI_Get(got, REGION, MPI_INT, t, mine, 1, evens, win);
    MPI_Win_flush(t, win);
    CHECK(mismatches(got, rank, 6, 0) == 0, "a large put to a strided target type read back through it");
    for (long i = 0; i < REGION; i++)
        buf[i] = 1;
    MPI_Accumulate(buf, REGION, MPI_INT, t, mine, 1, evens, MPI_SUM, win);
    MPI_Win_flush(t, win);
    MPI_Get(whole, (int)slice, MPI_INT, t, mine, (int)slice, MPI_INT, win);
    MPI_Win_unlock_all(win);
    long bad = 0;
    for (long i = 0; i < REGION; i++)
        bad += whole[2 * i] != pattern(rank, 6, i) + 1 || whole[2 * i + 1] != 0;
    CHECK(bad == 0, "a large accumulate to a strided target type: even ints summed, odd ones untouched");
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Type_free(&evens);
    MPI_Win_free(&win);
    free(mem);
    free(whole);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    CHECK(size >= 2, "at least 2 processes (%d)", size);
    bases = calloc(size, sizeof(MPI_Aint));
    int *buf = malloc(REGION * sizeof(int)), *got = malloc(REGION * sizeof(int));
    for (flavour = 0; flavour < 3; flavour++) {
        int *mem = NULL;
        MPI_Win win = make(&mem);
        lock_epoch(win, mem, buf, got);
        MPI_Barrier(MPI_COMM_WORLD);
        lock_all_epoch(win, buf, got);
        MPI_Barrier(MPI_COMM_WORLD);
        active_epochs(win, mem, buf, got);
        MPI_Barrier(MPI_COMM_WORLD);
        refused(win, buf, got);
        MPI_Barrier(MPI_COMM_WORLD);
        if (flavour == 2)
            MPI_Win_detach(win, mem);
        MPI_Win_free(&win);
        if (flavour != 1)
            free(mem);
    }
    derived_target(buf, got);
    CHECK(1, "all checks passed");
    free(buf);
    free(got);
    MPI_Finalize();
    return 0;
}
