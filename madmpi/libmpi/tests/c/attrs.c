/* Attribute caching on communicators: keyvals, set/get/delete, copy callbacks on MPI_Comm_dup
 * (MPI_COMM_DUP_FN, MPI_COMM_NULL_COPY_FN, user ones), delete callbacks (replace, delete, free,
 * MPI_Finalize for MPI_COMM_SELF then MPI_COMM_WORLD), callback failures returning their code,
 * predefined attributes, error paths. Callback orders are MPICH 4.0.2's
 * (madmpi/tests/c/attr_check.mpich-4.0.2.txt). Run with 2 processes.
 *
 * Differences from MPICH 4.0.2, skipped when running on it: when a copy callback fails, the
 * copies already made are deleted here (MPICH leaves them); when a delete callback fails while a
 * communicator is freed, the attributes not yet deleted stay here (MPICH deletes them all);
 * a freed keyval's handle is invalid at once here (MPICH accepts it while attributes use it);
 * a callback using its own communicator's attributes gets MPI_ERR_OTHER here (MPICH allows it);
 * MPI_APPNUM is absent here (MPICH: 0). */
#include "check.h"
#include <stdarg.h>
#include <stdint.h>

static int rank;
static char trace[2048];
static int failures_on = 1;       /* values >= 100 make callbacks fail with value - 100 */
static MPI_Comm last_comm;        /* what the last callback was given */
static int last_keyval;

static void note(const char *fmt, ...)
{
    va_list ap;
    size_t n = strlen(trace);
    va_start(ap, fmt);
    vsnprintf(trace + n, sizeof trace - n, fmt, ap);
    va_end(ap);
}

/* The trace so far, then cleared. */
static const char *taken(void)
{
    static char copy[sizeof trace];
    strcpy(copy, trace);
    trace[0] = 0;
    return copy;
}

static int copy_fn(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag)
{
    intptr_t v = (intptr_t)in;
    last_comm = c;
    last_keyval = k;
    note("copy %s %ld;", (char *)extra, (long)v);
    if (v >= 100 && failures_on)
        return (int)(v - 100);
    *(void **)out = (void *)(v + 10);
    *flag = 1;
    return MPI_SUCCESS;
}

static int nocopy_fn(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag)
{
    (void)c, (void)k, (void)in, (void)out;
    note("nocopy %s;", (char *)extra);
    *flag = 0;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm c, int k, void *v, void *extra)
{
    intptr_t val = (intptr_t)v;
    last_comm = c;
    last_keyval = k;
    note("delete %s %ld;", (char *)extra, (long)val);
    if (val >= 100 && failures_on)
        return (int)(val - 100);
    return MPI_SUCCESS;
}

static int ka, kb, kc, kn, kd, kz;

/* The value of `k` on `c`, or -1 if not set. */
static long value(MPI_Comm c, int k)
{
    void *v = NULL;
    int flag = -1;
    if (MPI_Comm_get_attr(c, k, &v, &flag) != MPI_SUCCESS || flag < 0)
        return -2;
    return flag ? (long)(intptr_t)v : -1;
}

static void set_copy_delete(void)
{
    MPI_Comm c, d, dh;
    int rc;

    MPI_Comm_create_keyval(copy_fn, delete_fn, &ka, "A");
    MPI_Comm_create_keyval(copy_fn, delete_fn, &kb, "B");
    MPI_Comm_create_keyval(copy_fn, delete_fn, &kc, "C");
    MPI_Comm_create_keyval(nocopy_fn, delete_fn, &kn, "N");
    MPI_Comm_create_keyval(MPI_COMM_DUP_FN, MPI_COMM_NULL_DELETE_FN, &kd, NULL);
    CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &kz, NULL) == MPI_SUCCESS &&
              kz != MPI_KEYVAL_INVALID && ka != kb,
          "MPI_Comm_create_keyval");

    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_attr(c, ka, (void *)1);
    MPI_Comm_set_attr(c, kb, (void *)2);
    MPI_Comm_set_attr(c, kc, (void *)3);
    MPI_Comm_set_attr(c, kn, (void *)4);
    MPI_Comm_set_attr(c, kd, (void *)5);
    CHECK(MPI_Comm_set_attr(c, kz, (void *)6) == MPI_SUCCESS && trace[0] == 0, "MPI_Comm_set_attr: no callback");
    CHECK(value(c, ka) == 1 && value(c, kz) == 6 && value(MPI_COMM_WORLD, ka) == -1,
          "MPI_Comm_get_attr: set on c only");
    CHECK(MPI_Comm_set_attr(c, kb, (void *)5) == MPI_SUCCESS && strcmp(taken(), "delete B 2;") == 0 &&
              last_comm == c && last_keyval == kb && value(c, kb) == 5,
          "replacing a value deletes the old one (with the communicator and keyval)");

    CHECK(MPI_Comm_dup(c, &d) == MPI_SUCCESS, "MPI_Comm_dup with attributes");
    CHECK(strcmp(taken(), "nocopy N;copy C 3;copy B 5;copy A 1;") == 0 && last_comm == c && last_keyval == ka,
          "copy callbacks in reverse order of setting, given the old communicator");
    CHECK(value(d, ka) == 11 && value(d, kb) == 15 && value(d, kc) == 13 && value(d, kn) == -1 &&
              value(d, kd) == 5 && value(d, kz) == -1,
          "copied: A B C by their callbacks, MPI_COMM_DUP_FN's value, not N nor NULL_COPY_FN's");
    dh = d;
    CHECK(MPI_Comm_free(&d) == MPI_SUCCESS && d == MPI_COMM_NULL, "MPI_Comm_free with attributes");
    CHECK(strcmp(taken(), "delete C 13;delete B 15;delete A 11;") == 0 && last_comm == dh,
          "delete callbacks in reverse order of setting, given the freed communicator");

    CHECK(MPI_Comm_delete_attr(c, ka) == MPI_SUCCESS && strcmp(taken(), "delete A 1;") == 0 && value(c, ka) == -1,
          "MPI_Comm_delete_attr");
    CHECK(MPI_Comm_delete_attr(c, ka) == MPI_SUCCESS && trace[0] == 0, "deleting an unset attribute succeeds");

    /* A copy callback failing with 7: the dup returns 7, MPI_COMM_NULL, and the copies made
     * are deleted. */
    MPI_Comm_set_attr(c, kb, (void *)107);
    taken();
    d = MPI_COMM_WORLD;
    rc = MPI_Comm_dup(c, &d);
    CHECK(rc == 7 && d == MPI_COMM_NULL, "a failing copy callback: MPI_Comm_dup returns its code (%d)", rc);
    /* MPICH 4.0.2 does not delete the copies made ("nocopy N;copy C 3;copy B 107;"). */
    CHECK(strcmp(taken(), on_madmpi() ? "nocopy N;copy C 3;copy B 107;delete C 13;" : "nocopy N;copy C 3;copy B 107;") == 0,
          "... and the copies made are deleted");
    CHECK(MPI_Comm_delete_attr(c, kb) == 7 && value(c, kb) == 107, "a failing delete callback: the attribute stays");
    CHECK(MPI_Comm_set_attr(c, kb, (void *)8) == 7 && value(c, kb) == 107, "a failing replace: the old value stays");
    taken();
    if (on_madmpi()) {
        CHECK(MPI_Comm_free(&c) == 7 && c != MPI_COMM_NULL, "a failing delete callback: MPI_Comm_free fails");
        CHECK(strcmp(taken(), "delete N 4;delete C 3;delete B 107;") == 0 && value(c, kc) == -1 && value(c, kb) == 107,
              "... after deleting the later attributes; B and the earlier ones stay");
    }
    failures_on = 0;
    CHECK(MPI_Comm_free(&c) == MPI_SUCCESS && c == MPI_COMM_NULL, "MPI_Comm_free once the callback succeeds");
    failures_on = 1;
    taken();
}

static void freed_keyvals(void)
{
    MPI_Comm e, f;
    int saved, k;
    void *v;

    MPI_Comm_dup(MPI_COMM_WORLD, &e);
    MPI_Comm_set_attr(e, ka, (void *)1);
    saved = ka;
    CHECK(MPI_Comm_free_keyval(&ka) == MPI_SUCCESS && ka == MPI_KEYVAL_INVALID,
          "MPI_Comm_free_keyval sets MPI_KEYVAL_INVALID");
    if (on_madmpi()) {
        CHECK_ERR(MPI_Comm_get_attr(e, saved, &v, &k), MPI_ERR_KEYVAL, "keyval");
        CHECK_ERR(MPI_Comm_free_keyval(&saved), MPI_ERR_KEYVAL, "keyval");
    }
    CHECK(MPI_Comm_dup(e, &f) == MPI_SUCCESS && strcmp(taken(), "copy A 1;") == 0,
          "an attribute of a freed keyval is still copied");
    MPI_Comm_free(&e);
    MPI_Comm_free(&f);
    CHECK(strcmp(taken(), "delete A 1;delete A 11;") == 0, "... and deleted");
}

static void predefined(void)
{
    int *p = NULL, flag = -1, k = MPI_TAG_UB;
    MPI_Comm d;

    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &p, &flag) == MPI_SUCCESS && flag == 1 && *p >= 32767,
          "MPI_TAG_UB: %d", flag ? *p : -1);
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &p, &flag) == MPI_SUCCESS && flag == 1 && *p == MPI_PROC_NULL,
          "MPI_HOST: MPI_PROC_NULL");
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &p, &flag) == MPI_SUCCESS && flag == 1 && *p == MPI_ANY_SOURCE,
          "MPI_IO: MPI_ANY_SOURCE (every process)");
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &p, &flag) == MPI_SUCCESS && flag == 1 && *p == 0,
          "MPI_WTIME_IS_GLOBAL: 0");
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &p, &flag) == MPI_SUCCESS && flag == 1 &&
              *p >= MPI_ERR_LASTCODE,
          "MPI_LASTUSEDCODE: %d", *p);
    CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &p, &flag) == MPI_SUCCESS && flag == 0,
          "MPI_UNIVERSE_SIZE: not known");
    if (on_madmpi())
        CHECK(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &p, &flag) == MPI_SUCCESS && flag == 0,
              "MPI_APPNUM: not known");
    MPI_Comm_dup(MPI_COMM_WORLD, &d);
    CHECK(MPI_Comm_get_attr(MPI_COMM_SELF, MPI_TAG_UB, &p, &flag) == MPI_SUCCESS && flag == 1 &&
              MPI_Comm_get_attr(d, MPI_TAG_UB, &p, &flag) == MPI_SUCCESS && flag == 1,
          "MPI_TAG_UB on MPI_COMM_SELF and a duplicate too");
    CHECK_ERR(MPI_Comm_set_attr(d, MPI_TAG_UB, p), MPI_ERR_KEYVAL, "MPI_TAG_UB");
    CHECK_ERR(MPI_Comm_delete_attr(d, MPI_TAG_UB), MPI_ERR_KEYVAL, "MPI_TAG_UB");
    CHECK_ERR(MPI_Comm_free_keyval(&k), MPI_ERR_KEYVAL, "MPI_TAG_UB");
    MPI_Comm_free(&d);
}

static void errors(void)
{
    int k = MPI_KEYVAL_INVALID, flag;
    void *v;

    CHECK_ERR(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, &v, &flag), MPI_ERR_KEYVAL, "MPI_KEYVAL_INVALID");
    CHECK_ERR(MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID, v), MPI_ERR_KEYVAL, "MPI_KEYVAL_INVALID");
    CHECK_ERR(MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_KEYVAL_INVALID), MPI_ERR_KEYVAL, "MPI_KEYVAL_INVALID");
    CHECK_ERR(MPI_Comm_free_keyval(&k), MPI_ERR_KEYVAL, "MPI_KEYVAL_INVALID");
    CHECK_ERR(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_GROUP_EMPTY, &v, &flag), MPI_ERR_KEYVAL, "keyval");
    CHECK_ERR(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, NULL, &flag), MPI_ERR_ARG, "attribute_val");
    CHECK_ERR(MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &v, NULL), MPI_ERR_ARG, "flag");
    CHECK_ERR(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, NULL, NULL), MPI_ERR_ARG,
              "comm_keyval");
    CHECK_ERR(MPI_Comm_free_keyval(NULL), MPI_ERR_ARG, "comm_keyval");
    CHECK_ERR(MPI_Comm_set_attr(MPI_COMM_NULL, kb, v), MPI_ERR_COMM, "communicator");
}

/* A delete callback that calls MPI: on other communicators, and on its own. */
static int inner_rc = -1, outer_size = -1;
static long outer_value = -9;
static int calling_delete_fn(MPI_Comm c, int k, void *v, void *extra)
{
    void *x;
    int flag;
    (void)k, (void)v, (void)extra;
    MPI_Comm_size(c, &outer_size);
    outer_value = value(MPI_COMM_WORLD, kc);
    inner_rc = MPI_Comm_get_attr(c, kc, &x, &flag);
    return MPI_SUCCESS;
}

static void callbacks_calling_mpi(void)
{
    MPI_Comm c;
    int kr, size;

    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, calling_delete_fn, &kr, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, kc, (void *)42);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_set_attr(c, kr, NULL);
    CHECK(MPI_Comm_free(&c) == MPI_SUCCESS && outer_size == size && outer_value == 42,
          "a delete callback calls MPI on its communicator and on another one's attributes");
    if (on_madmpi())
        CHECK(class_of(inner_rc) == MPI_ERR_OTHER, "... but not on its own communicator's attributes here");
    MPI_Comm_delete_attr(MPI_COMM_WORLD, kc);
    taken();
    MPI_Comm_free_keyval(&kr);
}

/* At MPI_Finalize: MPI_COMM_SELF's attributes (reverse order of setting), then WORLD's. */
static int finalize_fn(MPI_Comm c, int k, void *v, void *extra)
{
    (void)k, (void)extra;
    note("%s%ld;", c == MPI_COMM_SELF ? "S" : c == MPI_COMM_WORLD ? "W" : "?", (long)(intptr_t)v);
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    int kf;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    set_copy_delete();
    freed_keyvals();
    predefined();
    errors();
    callbacks_calling_mpi();
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_fn, &kf, NULL);
    MPI_Comm_set_attr(MPI_COMM_WORLD, kf, (void *)3);
    MPI_Comm_set_attr(MPI_COMM_SELF, kf, (void *)1);
    MPI_Comm_set_attr(MPI_COMM_SELF, kb, (void *)2);
    taken();
    MPI_Finalize();
    CHECK(strcmp(trace, "delete B 2;S1;W3;") == 0,
          "MPI_Finalize deletes SELF's attributes in reverse order, then WORLD's (%s)", trace);
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
