/* Intercommunicators: MPI_Intercomm_create, _create_from_groups, _merge, MPI_Comm_test_inter,
 * _remote_size, _remote_group; point-to-point across; MPI_Comm_dup, _idup, _compare, _split,
 * _split_type, _create and _free on an intercommunicator; MPI_Comm_create_group, MPI_Comm_idup(_with_info). With
 * their error paths (MPI_ERRORS_RETURN). Any number of processes (1: only what needs no
 * second group); the groups are the even and the odd world ranks, uneven for odd sizes.
 *
 * Checked on MPICH's own library too (mpicc.mpich, mpiexec.hydra -n 1, 2, 3, 5), where MPICH
 * 4.0.2 behaves otherwise (those checks are skipped there):
 * - MPI_Comm_remote_size and _remote_group of an intracommunicator give its own size and group
 *   in MPICH; MPI_ERR_COMM here, as in Open MPI (MPI defines them on intercommunicators only);
 * - MPI_Intercomm_merge of an intracommunicator fails an assertion inside MPICH (the job
 *   aborts); MPI_ERR_COMM here. */
#include "check.h"

static int rank, size;

/* The world ranks of `c`'s remote group, in its order. */
static void remote_world_ranks(MPI_Comm c, int *out, int n)
{
    MPI_Group remote, world;
    int ranks[64];
    MPI_Comm_remote_group(c, &remote);
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int i = 0; i < n; i++)
        ranks[i] = i;
    MPI_Group_translate_ranks(remote, n, ranks, world, out);
    MPI_Group_free(&remote);
    MPI_Group_free(&world);
}

/* Every process sends its world rank to every remote rank and hears from each of them once,
 * the status naming the remote rank. */
static void all_across(MPI_Comm c, const char *what)
{
    int nr = 0, world[64], seen[64] = {0}, ok = 1;
    MPI_Comm_remote_size(c, &nr);
    remote_world_ranks(c, world, nr);
    MPI_Request reqs[64];
    for (int r = 0; r < nr; r++)
        MPI_Isend(&rank, 1, MPI_INT, r, 11, c, &reqs[r]);
    for (int i = 0; i < nr; i++) {
        int got = -1;
        MPI_Status st;
        MPI_Recv(&got, 1, MPI_INT, MPI_ANY_SOURCE, 11, c, &st);
        ok = ok && st.MPI_SOURCE >= 0 && st.MPI_SOURCE < nr && world[st.MPI_SOURCE] == got &&
             !seen[st.MPI_SOURCE];
        if (st.MPI_SOURCE >= 0 && st.MPI_SOURCE < nr)
            seen[st.MPI_SOURCE] = 1;
    }
    MPI_Waitall(nr, reqs, MPI_STATUSES_IGNORE);
    CHECK(ok, "%s: a message from and to each of the %d remote processes", what, nr);
}

/* An intracommunicator's ring exchange and a sum of world ranks. */
static void use_intra(MPI_Comm c, int expect_size, const char *what)
{
    int r, n, got = -1, sum = 0;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    MPI_Sendrecv(&r, 1, MPI_INT, (r + 1) % n, 9, &got, 1, MPI_INT, (r + n - 1) % n, 9, c,
                 MPI_STATUS_IGNORE);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, c);
    CHECK(n == expect_size && got == (r + n - 1) % n, "%s: size %d, ring exchange", what, n);
    (void)sum;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int flag = -1, n = 0;

    /* Errors that need no second group. */
    CHECK(MPI_Comm_test_inter(MPI_COMM_WORLD, &flag) == MPI_SUCCESS && flag == 0,
          "MPI_COMM_WORLD is no intercommunicator");
    MPI_Comm bad;
    if (on_madmpi()) {
        MPI_Group g;
        CHECK_ERR(MPI_Comm_remote_size(MPI_COMM_WORLD, &n), MPI_ERR_COMM, "intercommunicator");
        CHECK_ERR(MPI_Comm_remote_group(MPI_COMM_WORLD, &g), MPI_ERR_COMM, "intercommunicator");
        CHECK_ERR(MPI_Intercomm_merge(MPI_COMM_WORLD, 0, &bad), MPI_ERR_COMM, "intercommunicator");
    }
    CHECK_ERR(MPI_Comm_test_inter(MPI_COMM_NULL, &flag), MPI_ERR_COMM, "null");

    /* MPI_Comm_create_group over the odd ranks only (tag 7), and over this process alone. */
    MPI_Group world_group, odd_group, even_group, me_group;
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    int odds[64], evens[64], ne = 0, no = 0;
    for (int r = 0; r < size; r++) {
        if (r % 2)
            odds[no++] = r;
        else
            evens[ne++] = r;
    }
    MPI_Group_incl(world_group, no, odds, &odd_group);
    MPI_Group_incl(world_group, ne, evens, &even_group);
    MPI_Group_incl(world_group, 1, &rank, &me_group);
    CHECK_ERR(MPI_Comm_create_group(MPI_COMM_WORLD, me_group, -1, &bad), MPI_ERR_TAG, "tag");
    MPI_Comm alone;
    CHECK(MPI_Comm_create_group(MPI_COMM_WORLD, me_group, 3, &alone) == MPI_SUCCESS, "create_group alone");
    use_intra(alone, 1, "create_group of one process");
    MPI_Comm_free(&alone);
    if (rank % 2) {
        MPI_Comm odd;
        CHECK(MPI_Comm_create_group(MPI_COMM_WORLD, odd_group, 7, &odd) == MPI_SUCCESS,
              "create_group over the odd ranks");
        use_intra(odd, no, "create_group of the odd ranks");
        MPI_Comm_free(&odd);
    }

    /* MPI_Comm_idup and _idup_with_info: the handles are usable once the requests complete. */
    MPI_Comm d1, d2;
    MPI_Request r2[2];
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    CHECK(MPI_Comm_idup(MPI_COMM_WORLD, &d1, &r2[0]) == MPI_SUCCESS &&
              MPI_Comm_idup_with_info(MPI_COMM_WORLD, info, &d2, &r2[1]) == MPI_SUCCESS,
          "two duplications started");
    MPI_Info_free(&info);
    CHECK(MPI_Waitall(2, r2, MPI_STATUSES_IGNORE) == MPI_SUCCESS, "both complete");
    int cmp = -1;
    MPI_Comm_compare(d1, MPI_COMM_WORLD, &cmp);
    CHECK(cmp == MPI_CONGRUENT && d1 != d2, "MPI_Comm_idup gives a congruent communicator");
    use_intra(d1, size, "idup");
    use_intra(d2, size, "idup_with_info");
    MPI_Info used;
    char value[64] = "";
    int found = 0;
    MPI_Comm_get_info(d2, &used);
    MPI_Info_get(used, "mpi_assert_no_any_tag", sizeof value - 1, value, &found);
    MPI_Info_free(&used);
    CHECK(found && strcmp(value, "true") == 0, "idup_with_info takes the info's hints");
    MPI_Comm_free(&d1);
    MPI_Comm_free(&d2);

    if (size >= 2) {
        int color = rank % 2, nl = color ? no : ne, nr = color ? ne : no;
        MPI_Comm local, ic;
        MPI_Comm_split(MPI_COMM_WORLD, color, rank, &local);
        /* Leaders: world ranks 0 (evens) and 1 (odds); tag 42 on MPI_COMM_WORLD. */
        CHECK_ERR(MPI_Intercomm_create(local, -1, MPI_COMM_WORLD, 1 - color, 42, &bad), MPI_ERR_RANK,
                  "leader");
        CHECK(MPI_Intercomm_create(local, 0, MPI_COMM_WORLD, 1 - color, 42, &ic) == MPI_SUCCESS,
              "MPI_Intercomm_create");
        int lr = -1, ls = -1;
        MPI_Comm_test_inter(ic, &flag);
        MPI_Comm_remote_size(ic, &n);
        MPI_Comm_rank(ic, &lr);
        MPI_Comm_size(ic, &ls);
        CHECK(flag == 1 && n == nr && ls == nl && lr == rank / 2,
              "an intercommunicator: local %d of %d, remote size %d", lr, ls, n);
        int world[64], ok = 1;
        remote_world_ranks(ic, world, nr);
        for (int i = 0; i < nr; i++)
            ok = ok && world[i] == 2 * i + 1 - color;
        MPI_Group lg;
        MPI_Comm_group(ic, &lg);
        MPI_Group_compare(lg, color ? odd_group : even_group, &cmp);
        MPI_Group_free(&lg);
        CHECK(ok && cmp == MPI_IDENT, "MPI_Comm_group is the local group, remote_group the other");
        MPI_Comm_group(ic, &lg);
        CHECK_ERR(MPI_Comm_create_group(ic, lg, 1, &bad), MPI_ERR_COMM, "intercommunicator");
        MPI_Group_free(&lg);
        all_across(ic, "MPI_Intercomm_create");

        /* Merge: the odd ranks say high, so evens come first; then both low: the group of
         * the lower leader (world rank 0's) first, as MPICH orders it. */
        MPI_Comm merged;
        CHECK(MPI_Intercomm_merge(ic, color, &merged) == MPI_SUCCESS, "merge");
        int mr = -1;
        MPI_Comm_rank(merged, &mr);
        MPI_Comm_test_inter(merged, &flag);
        CHECK(flag == 0 && mr == (color ? ne + rank / 2 : rank / 2), "merged rank %d", mr);
        use_intra(merged, size, "merged");
        MPI_Comm_free(&merged);
        CHECK(MPI_Intercomm_merge(ic, !color, &merged) == MPI_SUCCESS, "merge, odds low");
        MPI_Comm_rank(merged, &mr);
        CHECK(mr == (color ? rank / 2 : no + rank / 2), "merged rank %d with the odds first", mr);
        MPI_Comm_free(&merged);

        /* Dup and compare. */
        MPI_Comm dup;
        CHECK(MPI_Comm_dup(ic, &dup) == MPI_SUCCESS, "MPI_Comm_dup of an intercommunicator");
        MPI_Comm_test_inter(dup, &flag);
        MPI_Comm_compare(ic, dup, &cmp);
        int cmp2 = -1, cmp3 = -1;
        MPI_Comm_compare(ic, ic, &cmp2);
        MPI_Comm_compare(ic, local, &cmp3);
        CHECK(flag == 1 && cmp == MPI_CONGRUENT && cmp2 == MPI_IDENT && cmp3 == MPI_UNEQUAL,
              "compare: congruent duplicate, identical self, unequal to an intracommunicator");
        all_across(dup, "dup");
        MPI_Request idr;
        MPI_Comm idup;
        MPI_Comm_idup(ic, &idup, &idr);
        MPI_Wait(&idr, MPI_STATUS_IGNORE);
        all_across(idup, "idup of an intercommunicator");
        MPI_Comm_free(&idup);
        MPI_Comm_free(&dup);

        /* Split by local rank parity: color c meets the remote processes of color c. */
        MPI_Comm sp;
        CHECK(MPI_Comm_split(ic, lr % 2, -lr, &sp) == MPI_SUCCESS, "MPI_Comm_split of an intercommunicator");
        int remote_same = (nr + 1 - lr % 2) / 2; /* remote ranks of the same parity */
        int local_same = (nl + 1 - lr % 2) / 2;
        if (remote_same == 0) {
            CHECK(sp == MPI_COMM_NULL, "split: no remote process of color %d, no communicator", lr % 2);
        } else {
            int sr = -1, ss = -1, srs = -1;
            MPI_Comm_rank(sp, &sr);
            MPI_Comm_size(sp, &ss);
            MPI_Comm_remote_size(sp, &srs);
            CHECK(ss == local_same && srs == remote_same && sr == local_same - 1 - lr / 2,
                  "split: %d local (key reverses, rank %d), %d remote", ss, sr, srs);
            all_across(sp, "split");
            MPI_Comm_free(&sp);
        }
        MPI_Comm_split(ic, MPI_UNDEFINED, 0, &sp);
        CHECK(sp == MPI_COMM_NULL, "split with MPI_UNDEFINED");

        /* Split by node (one node here): the same groups in a new intercommunicator. */
        MPI_Comm shared;
        CHECK(MPI_Comm_split_type(ic, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared) == MPI_SUCCESS,
              "MPI_Comm_split_type of an intercommunicator");
        int ss = -1;
        MPI_Comm_test_inter(shared, &flag);
        MPI_Comm_remote_size(shared, &n);
        MPI_Comm_size(shared, &ss);
        CHECK(flag && ss == nl && n == nr, "split_type: an intercommunicator of the same groups");
        all_across(shared, "split_type");
        MPI_Comm_free(&shared);

        /* Create: the local leaders alone, a 1 x 1 intercommunicator. */
        MPI_Group leader;
        int zero = 0;
        MPI_Comm_group(ic, &lg);
        MPI_Group_incl(lg, 1, &zero, &leader);
        MPI_Comm cr;
        CHECK(MPI_Comm_create(ic, leader, &cr) == MPI_SUCCESS, "MPI_Comm_create of an intercommunicator");
        if (lr == 0) {
            MPI_Comm_remote_size(cr, &n);
            CHECK(cr != MPI_COMM_NULL && n == 1, "create: the leaders' intercommunicator");
            all_across(cr, "create");
            MPI_Comm_free(&cr);
        } else {
            CHECK(cr == MPI_COMM_NULL, "create: outside the group, no communicator");
        }
        MPI_Group_free(&leader);
        MPI_Group_free(&lg);

        /* From groups: no parent communicator; leaders rank 0 of each group. */
        MPI_Comm fg;
        CHECK(MPI_Intercomm_create_from_groups(color ? odd_group : even_group, 0,
                                               color ? even_group : odd_group, 0, "org.pm2.intercomm",
                                               MPI_INFO_NULL, MPI_ERRORS_RETURN, &fg) == MPI_SUCCESS,
              "MPI_Intercomm_create_from_groups");
        MPI_Comm_remote_size(fg, &n);
        CHECK(n == nr, "from groups: remote size %d", n);
        all_across(fg, "from groups");
        MPI_Comm_free(&fg);

        CHECK(MPI_Comm_free(&ic) == MPI_SUCCESS && ic == MPI_COMM_NULL, "MPI_Comm_free of an intercommunicator");
        MPI_Comm_free(&local);
    }
    MPI_Group_free(&me_group);
    MPI_Group_free(&odd_group);
    MPI_Group_free(&even_group);
    MPI_Group_free(&world_group);
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
