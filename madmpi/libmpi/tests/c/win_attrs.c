/* Keyvals on windows: delete callbacks run on replacement, on MPI_Win_delete_attr and on
 * MPI_Win_free (with the window, the value and extra_state), a failing delete callback's code
 * is returned; freed keyvals keep their attributes; predefined attributes are read-only.
 * Error handlers on windows: fatal by default (not inherited from the communicator), user
 * handlers called with the window and the code, by failing calls and MPI_Win_call_errhandler. */
#include "check.h"
#include <stdint.h>

static int rank;
static int deleted, last_value, copied;
static MPI_Win deleted_on;

static int count_delete(MPI_Win win, int keyval, void *value, void *extra)
{
    (void)keyval;
    deleted += *(int *)extra;
    last_value = (int)(intptr_t)value;
    deleted_on = win;
    return MPI_SUCCESS;
}

static int failing_delete(MPI_Win win, int keyval, void *value, void *extra)
{
    (void)win, (void)keyval, (void)value, (void)extra;
    return MPI_ERR_OTHER;
}

static int never_copy(MPI_Win win, int keyval, void *extra, void *in, void *out, int *flag)
{
    (void)win, (void)keyval, (void)extra, (void)in, (void)out, (void)flag;
    copied++;
    return MPI_SUCCESS;
}

static int handled, handled_code;
static MPI_Win handled_win;

static void on_error(MPI_Win *win, int *code, ...)
{
    handled++;
    handled_code = *code;
    handled_win = *win;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check_rank = rank;
    int buf[4];
    MPI_Win win;
    MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win);

    /* Keyvals and their callbacks. */
    int weight = 10, key, dupkey, failkey;
    CHECK(MPI_Win_create_keyval(never_copy, count_delete, &key, &weight) == MPI_SUCCESS, "create_keyval");
    MPI_Win_create_keyval(MPI_WIN_DUP_FN, MPI_WIN_NULL_DELETE_FN, &dupkey, NULL);
    MPI_Win_create_keyval(MPI_WIN_NULL_COPY_FN, failing_delete, &failkey, NULL);
    MPI_Win_set_attr(win, key, (void *)(intptr_t)7);
    MPI_Win_set_attr(win, dupkey, (void *)(intptr_t)9);
    void *v = NULL;
    int flag = 0;
    MPI_Win_get_attr(win, key, &v, &flag);
    CHECK(flag && (intptr_t)v == 7, "get_attr gives the value set");
    MPI_Win_set_attr(win, key, (void *)(intptr_t)8);
    CHECK(deleted == 10 && last_value == 7 && deleted_on == win, "replacing runs delete on the old value");
    MPI_Win_delete_attr(win, key);
    CHECK(deleted == 20 && last_value == 8, "delete_attr runs delete");
    MPI_Win_get_attr(win, key, &v, &flag);
    CHECK(!flag, "deleted: flag 0");
    MPI_Win_set_attr(win, key, (void *)(intptr_t)5);
    CHECK(MPI_Win_free_keyval(&key) == MPI_SUCCESS && key == MPI_KEYVAL_INVALID, "free_keyval");

    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    CHECK_ERR(MPI_Win_set_attr(win, MPI_WIN_BASE, NULL), MPI_ERR_KEYVAL, "predefined");
    CHECK_ERR(MPI_Win_delete_attr(win, MPI_WIN_SIZE), MPI_ERR_KEYVAL, "predefined");
    if (on_madmpi()) {
        CHECK_ERR(MPI_Win_get_attr(win, MPI_TAG_UB, &v, &flag), MPI_ERR_KEYVAL, "Comm");
        /* On a window of its own: the attribute stays, so that window cannot be freed. */
        MPI_Win stuck;
        MPI_Win_create(buf, sizeof buf, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &stuck);
        MPI_Win_set_errhandler(stuck, MPI_ERRORS_RETURN);
        MPI_Win_set_attr(stuck, failkey, (void *)(intptr_t)1);
        int rc = MPI_Win_delete_attr(stuck, failkey);
        CHECK(rc == MPI_ERR_OTHER, "a failing delete callback's code is returned (%d)", rc);
        rc = MPI_Win_free(&stuck);
        CHECK(rc == MPI_ERR_OTHER && stuck != MPI_WIN_NULL, "free stops at a failing delete callback");
    }
    MPI_Win_free_keyval(&failkey);

    /* Error handlers: the default is fatal; a user handler sees the window and the code. */
    MPI_Win other;
    MPI_Win_create(buf, sizeof buf, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &other);
    MPI_Errhandler eh, got;
    MPI_Win_get_errhandler(other, &got);
    CHECK(got == MPI_ERRORS_ARE_FATAL, "a new window's handler is MPI_ERRORS_ARE_FATAL");
    MPI_Errhandler_free(&got);
    CHECK(MPI_Win_create_errhandler(on_error, &eh) == MPI_SUCCESS, "create_errhandler");
    MPI_Win_set_errhandler(other, eh);
    MPI_Win_get_errhandler(other, &got);
    CHECK(got == eh, "get_errhandler gives it back");
    MPI_Errhandler_free(&got);
    MPI_Errhandler_free(&eh);
    int rc = MPI_Win_attach(other, buf, 4);
    CHECK(handled == 1 && handled_win == other && class_of(handled_code) == MPI_ERR_RMA_FLAVOR &&
              rc == handled_code,
          "a failing call goes to the window's handler (class %d)", class_of(handled_code));
    MPI_Win_call_errhandler(other, MPI_ERR_RMA_SYNC);
    CHECK(handled == 2 && handled_code == MPI_ERR_RMA_SYNC, "call_errhandler calls it");
    MPI_Win_free(&other);

    /* Freeing the window deletes the attributes left (one set with a freed keyval). */
    deleted = 0;
    int frc = MPI_Win_free(&win);
    CHECK(frc == MPI_SUCCESS && win == MPI_WIN_NULL && deleted == 10 && last_value == 5,
          "free deletes the attributes, with the keyval freed");
    CHECK(copied == 0, "windows are never copied: copy callbacks never ran");
    MPI_Win_free_keyval(&dupkey);
    MPI_Finalize();
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
