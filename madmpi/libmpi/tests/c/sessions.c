/* MPI 4.0 sessions without MPI_Init: MPI_Session_init (thread level from the info key
 * thread_level), the psets (mpi://WORLD and mpi://SELF, their names, lengths and mpi_size),
 * MPI_Group_from_session_pset, MPI_Comm_create_from_group (two creations from one group with
 * different tags, and one from mpi://SELF), point-to-point and a collective on the new
 * communicators, session error handlers (set, get, call, and the errors of session calls going
 * to them), two sessions open at once, MPI_Session_finalize. Any number of processes.
 *
 * Checked on MPICH 4.0.2's own library too (mpicc.mpich, mpiexec.hydra, no LD_LIBRARY_PATH):
 * it passes there, the error strings apart and one difference, skipped there: a session
 * provides the thread level it asks for here (every level is supported), while MPICH gives
 * every session the level of the process's first initialization (so the second session,
 * without info, is MPI_THREAD_MULTIPLE there); errors of session calls go to the session's
 * handler here, to the fatal default handler in MPICH 4.0.2 (which ends the job). */
#include "check.h"

static int session_calls;
static MPI_Session called_with;
static int called_code;

static void session_handler(MPI_Session *s, int *code, ...)
{
    session_calls++;
    called_with = *s;
    called_code = *code;
}

/* The index of pset `want` in the session's list, or -1. */
static int find_pset(MPI_Session s, const char *want)
{
    int n = 0;
    MPI_Session_get_num_psets(s, MPI_INFO_NULL, &n);
    for (int i = 0; i < n; i++) {
        int len = 0;
        char name[MPI_MAX_PSET_NAME_LEN];
        if (MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, NULL) != MPI_SUCCESS || len < 1 ||
            len > MPI_MAX_PSET_NAME_LEN)
            return -2;
        if (MPI_Session_get_nth_pset(s, MPI_INFO_NULL, i, &len, name) != MPI_SUCCESS)
            return -2;
        if ((int)strlen(name) + 1 != len)
            return -3;
        if (strcmp(name, want) == 0)
            return i;
    }
    return -1;
}

static int info_value(MPI_Info info, const char *key, char *value, int cap)
{
    int flag = 0;
    MPI_Info_get(info, key, cap - 1, value, &flag);
    return flag;
}

int main(void)
{
    MPI_Info info;
    MPI_Session s = MPI_SESSION_NULL, s2 = MPI_SESSION_NULL;
    MPI_Info_create(&info);
    MPI_Info_set(info, "thread_level", "MPI_THREAD_MULTIPLE");
    int rc = MPI_Session_init(info, MPI_ERRORS_RETURN, &s);
    MPI_Info_free(&info);
    CHECK(rc == MPI_SUCCESS && s != MPI_SESSION_NULL, "MPI_Session_init");
    int flag = 1;
    MPI_Initialized(&flag);
    CHECK(!flag, "a session does not initialize the world model");

    char value[MPI_MAX_INFO_VAL];
    MPI_Info used;
    CHECK(MPI_Session_get_info(s, &used) == MPI_SUCCESS, "MPI_Session_get_info");
    CHECK(info_value(used, "thread_level", value, sizeof value) && strcmp(value, "MPI_THREAD_MULTIPLE") == 0,
          "the session provides the thread level asked (%s)", value);
    MPI_Info_free(&used);

    int world_index = find_pset(s, "mpi://WORLD"), self_index = find_pset(s, "mpi://SELF");
    CHECK(world_index >= 0 && self_index >= 0, "psets mpi://WORLD (%d) and mpi://SELF (%d), names and lengths",
          world_index, self_index);

    MPI_Group wg;
    CHECK(MPI_Group_from_session_pset(s, "mpi://WORLD", &wg) == MPI_SUCCESS, "group of mpi://WORLD");
    int rank = -1, size = 0;
    MPI_Group_rank(wg, &rank);
    MPI_Group_size(wg, &size);
    check_rank = rank;
    CHECK(rank >= 0 && size >= 1, "rank %d of %d in the world pset", rank, size);
    MPI_Info pinfo;
    CHECK(MPI_Session_get_pset_info(s, "mpi://WORLD", &pinfo) == MPI_SUCCESS, "MPI_Session_get_pset_info");
    CHECK(info_value(pinfo, "mpi_size", value, sizeof value) && atoi(value) == size, "mpi_size %s", value);
    MPI_Info_free(&pinfo);

    /* Two communicators from the same group, told apart by their tags. */
    MPI_Comm a, b;
    CHECK(MPI_Comm_create_from_group(wg, "org.pm2.sessions.a", MPI_INFO_NULL, MPI_ERRORS_RETURN, &a) ==
              MPI_SUCCESS, "MPI_Comm_create_from_group (a)");
    CHECK(MPI_Comm_create_from_group(wg, "org.pm2.sessions.b", MPI_INFO_NULL, MPI_ERRORS_RETURN, &b) ==
              MPI_SUCCESS, "MPI_Comm_create_from_group (b)");
    int ra = -1, sa = 0, cmp = -1;
    MPI_Comm_rank(a, &ra);
    MPI_Comm_size(a, &sa);
    MPI_Comm_compare(a, b, &cmp);
    CHECK(ra == rank && sa == size && cmp == MPI_CONGRUENT, "the communicators are the pset's, congruent");
    MPI_Errhandler eh;
    MPI_Comm_get_errhandler(a, &eh);
    CHECK(eh == MPI_ERRORS_RETURN, "the new communicator has the error handler given");
    MPI_Errhandler_free(&eh);

    /* A ring on a, then on b with the same tag: the messages stay in their communicator. */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size, got_a = -1, got_b = -1;
    int mine_a = 1000 + rank, mine_b = 2000 + rank;
    MPI_Request r[4];
    MPI_Irecv(&got_b, 1, MPI_INT, prev, 7, b, &r[0]);
    MPI_Irecv(&got_a, 1, MPI_INT, prev, 7, a, &r[1]);
    MPI_Isend(&mine_b, 1, MPI_INT, next, 7, b, &r[2]);
    MPI_Isend(&mine_a, 1, MPI_INT, next, 7, a, &r[3]);
    CHECK(MPI_Waitall(4, r, MPI_STATUSES_IGNORE) == MPI_SUCCESS && got_a == 1000 + prev && got_b == 2000 + prev,
          "a ring on each communicator (%d, %d)", got_a, got_b);
    int sum = 0;
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, a);
    CHECK(sum == size * (size - 1) / 2, "allreduce on the session's communicator (%d)", sum);

    /* A second session at once, and a communicator of this process alone from it. */
    CHECK(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &s2) == MPI_SUCCESS && s2 != s, "a second session");
    MPI_Group sg;
    MPI_Comm self;
    MPI_Group_from_session_pset(s2, "mpi://SELF", &sg);
    CHECK(MPI_Comm_create_from_group(sg, "org.pm2.sessions.self", MPI_INFO_NULL, MPI_ERRORS_RETURN, &self) ==
              MPI_SUCCESS, "a communicator from mpi://SELF");
    int ss = 0;
    MPI_Comm_size(self, &ss);
    CHECK(ss == 1, "of size 1");
    MPI_Comm_free(&self);
    MPI_Group_free(&sg);
    MPI_Session_get_info(s2, &used);
    CHECK(info_value(used, "thread_level", value, sizeof value) &&
              (strcmp(value, "MPI_THREAD_SINGLE") == 0 || !on_madmpi()),
          "without info a session is MPI_THREAD_SINGLE (%s)", value);
    MPI_Info_free(&used);
    CHECK(MPI_Session_finalize(&s2) == MPI_SUCCESS && s2 == MPI_SESSION_NULL, "the second session ends");

    /* Errors of session calls go to the session's handler (MPICH 4.0.2 sends them to the
     * fatal default handler instead and ends the job: skipped there). */
    if (on_madmpi()) {
        MPI_Group bad;
        CHECK_ERR(MPI_Group_from_session_pset(s, "mpi://NOWHERE", &bad), MPI_ERR_ARG, "not a process set");
        int len = 0;
        CHECK_ERR(MPI_Session_get_nth_pset(s, MPI_INFO_NULL, 99, &len, NULL), MPI_ERR_ARG, "no pset number 99");
        MPI_Errhandler user;
        CHECK(MPI_Session_create_errhandler(session_handler, &user) == MPI_SUCCESS, "MPI_Session_create_errhandler");
        MPI_Session_set_errhandler(s, user);
        MPI_Errhandler back;
        MPI_Session_get_errhandler(s, &back);
        CHECK(back == user, "MPI_Session_get_errhandler gives it back");
        MPI_Errhandler_free(&back);
        MPI_Errhandler_free(&user);
        rc = MPI_Group_from_session_pset(s, "mpi://NOWHERE", &bad);
        CHECK(rc != MPI_SUCCESS && session_calls == 1 && called_with == s && called_code == rc,
              "the session's handler hears of its calls' errors");
        MPI_Session_call_errhandler(s, MPI_ERR_OTHER);
        CHECK(session_calls == 2 && called_code == MPI_ERR_OTHER, "MPI_Session_call_errhandler");
        MPI_Session_set_errhandler(s, MPI_ERRORS_RETURN);
    }

    MPI_Comm_free(&a);
    MPI_Comm_free(&b);
    MPI_Group_free(&wg);
    CHECK(MPI_Session_finalize(&s) == MPI_SUCCESS && s == MPI_SESSION_NULL, "MPI_Session_finalize");
    CHECK(1, "all checks passed");
    return 0;
}
