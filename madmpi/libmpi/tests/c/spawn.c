/* MPI_Comm_spawn: the parents (a job of any size) spawn 2 children, running this program with
 * the argument "child"; each parent sends its rank to each child, which answers with the
 * parent's rank plus 100 times its own, the status naming the remote rank; MPI_Comm_get_parent
 * is MPI_COMM_NULL in the parents and the same intercommunicator each time in the children;
 * both sides merge (parents first), run MPI_Allreduce on the merged communicator, and
 * disconnect. Then MPI_Comm_spawn_multiple starts 1 + 2 children in one world, which report
 * their world size. Error paths (MPI_ERRORS_RETURN): a program that does not exist, maxprocs 0.
 *
 * Without a launcher that can spawn (a singleton here), MPI_Comm_spawn fails with MPI_ERR_SPAWN
 * at every parent: the program checks that and passes ("spawn unsupported"). */
#include "check.h"
#include <unistd.h>

static int rank, size;

static void child(const char *role)
{
    MPI_Comm parent, again;
    MPI_Comm_get_parent(&parent);
    MPI_Comm_get_parent(&again);
    CHECK(parent != MPI_COMM_NULL && parent == again, "child: a parent intercommunicator");
    int nparents = 0, flag = 0;
    MPI_Comm_test_inter(parent, &flag);
    MPI_Comm_remote_size(parent, &nparents);
    CHECK(flag && nparents >= 1, "child: %d parents", nparents);
    if (strcmp(role, "child") == 0) {
        for (int i = 0; i < nparents; i++) {
            int got = -1;
            MPI_Status st;
            MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 5, parent, &st);
            CHECK(got == st.MPI_SOURCE, "child: parent %d said its rank", st.MPI_SOURCE);
            int answer = got + 100 * rank;
            MPI_Send(&answer, 1, MPI_INT, st.MPI_SOURCE, 6, parent);
        }
        MPI_Comm merged;
        MPI_Intercomm_merge(parent, 1, &merged);
        int mrank = -1, msize = 0, sum = -1;
        MPI_Comm_rank(merged, &mrank);
        MPI_Comm_size(merged, &msize);
        MPI_Allreduce(&mrank, &sum, 1, MPI_INT, MPI_SUM, merged);
        CHECK(mrank == nparents + rank && sum == msize * (msize - 1) / 2, "child: merged rank %d of %d",
              mrank, msize);
        MPI_Comm_free(&merged);
    } else {
        /* spawn_multiple: tell the parents' root this world's size and our command. */
        int report[2] = {size, strcmp(role, "first") == 0 ? 1 : 2};
        MPI_Send(report, 2, MPI_INT, 0, 7, parent);
    }
    CHECK(MPI_Comm_disconnect(&parent) == MPI_SUCCESS, "child: disconnected");
    CHECK(1, "all checks passed (child)");
}

static void parent(const char *self)
{
    MPI_Comm parent_none, ic;
    MPI_Comm_get_parent(&parent_none);
    CHECK(parent_none == MPI_COMM_NULL, "no parent");
    char *args[] = {"child", NULL};
    int codes[2] = {-1, -1};
    int rc = MPI_Comm_spawn(self, args, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &ic, codes);
    if (rc != MPI_SUCCESS) {
        CHECK(class_of(rc) == MPI_ERR_SPAWN, "spawn unsupported: MPI_Comm_spawn fails with MPI_ERR_SPAWN");
        return;
    }
    CHECK(codes[0] == MPI_SUCCESS && codes[1] == MPI_SUCCESS, "spawned 2 children");
    int nchildren = 0;
    MPI_Comm_remote_size(ic, &nchildren);
    CHECK(nchildren == 2, "2 children in the remote group");
    for (int c = 0; c < nchildren; c++)
        MPI_Send(&rank, 1, MPI_INT, c, 5, ic);
    for (int c = 0; c < nchildren; c++) {
        int got = -1;
        MPI_Status st;
        MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 6, ic, &st);
        CHECK(got == rank + 100 * st.MPI_SOURCE, "child %d answered", st.MPI_SOURCE);
    }
    MPI_Comm merged;
    MPI_Intercomm_merge(ic, 0, &merged);
    int mrank = -1, msize = 0, sum = -1;
    MPI_Comm_rank(merged, &mrank);
    MPI_Comm_size(merged, &msize);
    MPI_Allreduce(&mrank, &sum, 1, MPI_INT, MPI_SUM, merged);
    CHECK(mrank == rank && msize == size + 2 && sum == msize * (msize - 1) / 2,
          "merged: parents first, rank %d of %d", mrank, msize);
    MPI_Comm_free(&merged);
    CHECK(MPI_Comm_disconnect(&ic) == MPI_SUCCESS && ic == MPI_COMM_NULL, "disconnected");

    /* MPI_Comm_spawn_multiple: 1 "first" and 2 "second" children, one world of 3. */
    char *cmds[2] = {(char *)self, (char *)self};
    char *argv1[] = {"first", NULL}, *argv2[] = {"second", NULL};
    char **argvs[2] = {argv1, argv2};
    int maxprocs[2] = {1, 2}, mcodes[3] = {-1, -1, -1};
    MPI_Info infos[2];
    MPI_Info_create(&infos[0]);
    MPI_Info_set(infos[0], "wdir", "/tmp");
    infos[1] = MPI_INFO_NULL;
    CHECK(MPI_Comm_spawn_multiple(2, cmds, argvs, maxprocs, infos, 0, MPI_COMM_WORLD, &ic, mcodes) ==
              MPI_SUCCESS && mcodes[2] == MPI_SUCCESS,
          "spawn_multiple started 3 children");
    MPI_Info_free(&infos[0]);
    if (rank == 0) {
        int ones = 0, twos = 0;
        for (int c = 0; c < 3; c++) {
            int report[2] = {0, 0};
            MPI_Recv(report, 2, MPI_INT, c, 7, ic, MPI_STATUS_IGNORE);
            CHECK(report[0] == 3, "spawn_multiple: child %d has a world of %d", c, report[0]);
            ones += report[1] == 1;
            twos += report[1] == 2;
        }
        CHECK(ones == 1 && twos == 2, "spawn_multiple: one first, two seconds");
    }
    MPI_Comm_disconnect(&ic);

    /* Errors: nothing is started. */
    MPI_Comm bad = MPI_COMM_NULL;
    CHECK_ERR(MPI_Comm_spawn("/no/such/program", MPI_ARGV_NULL, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &bad,
                             MPI_ERRCODES_IGNORE),
              MPI_ERR_SPAWN, "spawn");
    CHECK(bad == MPI_COMM_NULL, "no intercommunicator after a failed spawn");
    if (rank == 0)
        CHECK_ERR(MPI_Comm_spawn(self, MPI_ARGV_NULL, 0, MPI_INFO_NULL, 0, MPI_COMM_SELF, &bad,
                                 MPI_ERRCODES_IGNORE),
                  MPI_ERR_SPAWN, "maxprocs");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    char self[4096];
    CHECK(realpath(argv[0], self) != NULL, "this program is %s", self);
    if (argc > 1)
        child(argv[1]);
    else
        parent(self);
    if (argc == 1) {
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(1, "all checks passed");
    }
    MPI_Finalize();
    return 0;
}
