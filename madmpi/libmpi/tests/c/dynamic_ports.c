/* Dynamic processes between the processes of one job: the even and the odd world ranks form two
 * groups; the evens' root opens a port and publishes it (MPI_Publish_name), the odds' root looks
 * it up, and the groups accept and connect (MPI_Comm_accept, MPI_Comm_connect); they talk
 * across (point-to-point), merge, run a collective on the merged communicator (collectives on
 * the intercommunicator itself are another part of issue 13) and disconnect. World ranks 0 and
 * 1 then join over a TCP socket of their own (MPI_Comm_join).
 * With the error paths (MPI_ERRORS_RETURN): a name never published, a port never opened, a
 * connect to a port its process closed (MPI_ERR_PORT once MADMPI_CONNECT_TIMEOUT, set to 1 s
 * here, has passed without an answer).
 * At least 2 processes.
 *
 * MPICH's own library (Debian's, ch4:ucx) cannot run it: its MPI_Open_port fails with "The
 * function is currently not supported with ucx netmod". */
#include "check.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static int rank, size;

static void talk_across(MPI_Comm ic, int local_rank, const char *what)
{
    int flag = 0, nr = 0, nl = 0;
    MPI_Comm_test_inter(ic, &flag);
    MPI_Comm_remote_size(ic, &nr);
    MPI_Comm_size(ic, &nl);
    int want_remote = rank % 2 == 0 ? size / 2 : (size + 1) / 2;
    CHECK(flag && nr == want_remote, "%s: an intercommunicator with %d remote processes", what, nr);
    MPI_Request reqs[64];
    for (int r = 0; r < nr; r++)
        MPI_Isend(&local_rank, 1, MPI_INT, r, 7, ic, &reqs[r]);
    int ok = 1;
    for (int i = 0; i < nr; i++) {
        int got = -1;
        MPI_Status st;
        MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 7, ic, &st);
        ok = ok && got == st.MPI_SOURCE;
    }
    MPI_Waitall(nr, reqs, MPI_STATUSES_IGNORE);
    CHECK(ok, "%s: a message from every remote process, its source its rank", what);
}

static void ports_and_names(void)
{
    MPI_Comm half, ic, merged;
    int local_rank;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    MPI_Comm_rank(half, &local_rank);
    char port[MPI_MAX_PORT_NAME] = "";
    const char *service = "dynamic_ports_service";
    if (rank == 0) {
        CHECK(MPI_Open_port(MPI_INFO_NULL, port) == MPI_SUCCESS && strlen(port) > 0, "port opened: %s",
              port);
        CHECK(MPI_Publish_name(service, MPI_INFO_NULL, port) == MPI_SUCCESS, "port published");
    }
    MPI_Barrier(MPI_COMM_WORLD); /* published before anyone looks */
    if (rank % 2 == 0) {
        CHECK(MPI_Comm_accept(port, MPI_INFO_NULL, 0, half, &ic) == MPI_SUCCESS, "accepted");
    } else {
        if (rank == 1) {
            CHECK(MPI_Lookup_name(service, MPI_INFO_NULL, port) == MPI_SUCCESS, "found the port: %s", port);
        }
        CHECK(MPI_Comm_connect(port, MPI_INFO_NULL, 0, half, &ic) == MPI_SUCCESS, "connected");
    }
    talk_across(ic, local_rank, "accept/connect");
    MPI_Intercomm_merge(ic, rank % 2, &merged);
    int msize = 0, mrank = -1;
    MPI_Comm_size(merged, &msize);
    MPI_Comm_rank(merged, &mrank);
    /* Evens (high = 0) first, in their order, then the odds. */
    int want = rank % 2 == 0 ? rank / 2 : (size + 1) / 2 + rank / 2;
    CHECK(msize == size && mrank == want, "merged: rank %d of %d", mrank, msize);
    int sum = -1;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, merged);
    CHECK(sum == size * (size - 1) / 2, "merged: allreduce over both groups (%d)", sum);
    MPI_Comm_free(&merged);
    CHECK(MPI_Comm_disconnect(&ic) == MPI_SUCCESS && ic == MPI_COMM_NULL, "disconnected");
    if (rank == 0) {
        CHECK(MPI_Unpublish_name(service, MPI_INFO_NULL, port) == MPI_SUCCESS, "unpublished");
        CHECK(MPI_Close_port(port) == MPI_SUCCESS, "port closed");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    /* Error paths. */
    char none[MPI_MAX_PORT_NAME];
    CHECK_ERR(MPI_Lookup_name(service, MPI_INFO_NULL, none), MPI_ERR_NAME, "service");
    if (rank == 0) {
        CHECK_ERR(MPI_Unpublish_name(service, MPI_INFO_NULL, port), MPI_ERR_SERVICE, "service");
        if (on_madmpi()) {
            CHECK_ERR(MPI_Close_port(port), MPI_ERR_PORT, "port");
            MPI_Comm bad = MPI_COMM_NULL;
            CHECK_ERR(MPI_Comm_accept(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &bad), MPI_ERR_PORT, "port");
            CHECK_ERR(MPI_Comm_connect("no port", MPI_INFO_NULL, 0, MPI_COMM_SELF, &bad), MPI_ERR_PORT,
                      "port");
        }
    }
    if (rank == 1 && on_madmpi()) {
        MPI_Comm bad = MPI_COMM_NULL;
        double t0 = MPI_Wtime();
        CHECK_ERR(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &bad), MPI_ERR_PORT, "no answer");
        double waited = MPI_Wtime() - t0;
        CHECK(bad == MPI_COMM_NULL && waited >= 0.9 && waited < 10, "a connect to a closed port fails after %.1f s",
              waited);
    }
    MPI_Comm_free(&half);
}

/* World ranks 0 and 1 over a loopback TCP connection: 0 listens and sends its port number. */
static void join(void)
{
    if (rank > 1)
        return;
    int fd = -1;
    if (rank == 0) {
        int l = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        CHECK(l >= 0 && bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 1) == 0 &&
                  getsockname(l, (struct sockaddr *)&a, &len) == 0,
              "listening on loopback");
        int p = ntohs(a.sin_port);
        MPI_Send(&p, 1, MPI_INT, 1, 9, MPI_COMM_WORLD);
        fd = accept(l, NULL, NULL);
        close(l);
    } else {
        int p = 0;
        MPI_Recv(&p, 1, MPI_INT, 0, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        struct sockaddr_in a;
        memset(&a, 0, sizeof a);
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons((unsigned short)p);
        fd = socket(AF_INET, SOCK_STREAM, 0);
        CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connected to rank 0");
    }
    CHECK(fd >= 0, "a socket to the other process");
    MPI_Comm ic;
    CHECK(MPI_Comm_join(fd, &ic) == MPI_SUCCESS, "joined");
    int nr = 0, got = -1, mine = 100 + rank;
    MPI_Comm_remote_size(ic, &nr);
    MPI_Sendrecv(&mine, 1, MPI_INT, 0, 3, &got, 1, MPI_INT, 0, 3, ic, MPI_STATUS_IGNORE);
    CHECK(nr == 1 && got == 101 - rank, "joined: talked with the other process (%d)", got);
    CHECK(MPI_Comm_disconnect(&ic) == MPI_SUCCESS, "join disconnected");
    close(fd);
}

int main(int argc, char **argv)
{
    setenv("MADMPI_CONNECT_TIMEOUT", "1", 1); /* the closed-port check waits that long */
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    CHECK(size >= 2 && size <= 64, "%d processes", size);
    ports_and_names();
    join();
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
