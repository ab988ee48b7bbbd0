/* Spawned processes spawn in turn: the parents spawn 2 children and keep them; the children's
 * world spawns 1 grandchild, which answers each child; then, the children still connected, the
 * parents spawn 1 more ("late") child, which answers each parent, and the parents talk to the
 * first children again. The late child's ids come after the grandchild's, which processes other
 * than the parents took (under Hydra, from the chain of claims in its name service). */
#include "check.h"

static int rank, size;

/* Each process of `ic`'s remote group sends its rank (tag 5); we answer rank + 100 * ours. */
static void answer_each(MPI_Comm ic)
{
    int n = 0;
    MPI_Comm_remote_size(ic, &n);
    for (int i = 0; i < n; i++) {
        int got = -1;
        MPI_Status st;
        MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 5, ic, &st);
        CHECK(got == st.MPI_SOURCE, "remote %d said its rank", st.MPI_SOURCE);
        int answer = got + 100 * rank;
        MPI_Send(&answer, 1, MPI_INT, st.MPI_SOURCE, 6, ic);
    }
}

/* Sends our rank to each remote process of `ic` and checks its answer. */
static void ask_each(MPI_Comm ic, const char *whom)
{
    int n = 0;
    MPI_Comm_remote_size(ic, &n);
    for (int c = 0; c < n; c++)
        MPI_Send(&rank, 1, MPI_INT, c, 5, ic);
    for (int c = 0; c < n; c++) {
        int got = -1;
        MPI_Status st;
        MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 6, ic, &st);
        CHECK(got == rank + 100 * st.MPI_SOURCE, "%s %d answered", whom, st.MPI_SOURCE);
    }
}

static void child(const char *self)
{
    MPI_Comm parent, grand;
    MPI_Comm_get_parent(&parent);
    CHECK(parent != MPI_COMM_NULL, "child: a parent intercommunicator");
    char *args[] = {"grandchild", NULL};
    CHECK(MPI_Comm_spawn(self, args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &grand, MPI_ERRCODES_IGNORE) ==
              MPI_SUCCESS,
          "child: spawned a grandchild");
    ask_each(grand, "grandchild");
    CHECK(MPI_Comm_disconnect(&grand) == MPI_SUCCESS, "child: disconnected from the grandchild");
    int done = 1;
    MPI_Send(&done, 1, MPI_INT, 0, 7, parent); /* to the parents' root: ready for the late one */
    answer_each(parent);
    CHECK(MPI_Comm_disconnect(&parent) == MPI_SUCCESS, "child: disconnected");
    CHECK(1, "all checks passed (child)");
}

static void leaf(const char *role)
{
    MPI_Comm parent;
    MPI_Comm_get_parent(&parent);
    CHECK(parent != MPI_COMM_NULL, "%s: a parent intercommunicator", role);
    answer_each(parent);
    CHECK(MPI_Comm_disconnect(&parent) == MPI_SUCCESS, "%s: disconnected", role);
    CHECK(1, "all checks passed (%s)", role);
}

static void parent(const char *self)
{
    MPI_Comm children, late;
    char *cargs[] = {"child", NULL}, *largs[] = {"late", NULL};
    CHECK(MPI_Comm_spawn(self, cargs, 2, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &children,
                         MPI_ERRCODES_IGNORE) == MPI_SUCCESS,
          "spawned 2 children");
    if (rank == 0)
        for (int c = 0; c < 2; c++) {
            int done = 0;
            MPI_Recv(&done, 1, MPI_INT, c, 7, children, MPI_STATUS_IGNORE);
            CHECK(done == 1, "child %d spawned its grandchild and talked with it", c);
        }
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(MPI_Comm_spawn(self, largs, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &late, MPI_ERRCODES_IGNORE) ==
              MPI_SUCCESS,
          "spawned a late child");
    ask_each(late, "late child");
    ask_each(children, "child");
    CHECK(MPI_Comm_disconnect(&late) == MPI_SUCCESS, "disconnected from the late child");
    CHECK(MPI_Comm_disconnect(&children) == MPI_SUCCESS, "disconnected from the children");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    char self[4096];
    CHECK(realpath(argv[0], self) != NULL, "this program is %s", self);
    if (argc == 1) {
        parent(self);
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK(1, "all checks passed");
    } else if (strcmp(argv[1], "child") == 0) {
        child(self);
    } else {
        leaf(argv[1]);
    }
    MPI_Finalize();
    return 0;
}
