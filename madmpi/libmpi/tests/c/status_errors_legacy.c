/* Calls of issue 13 around statuses, errors and old names: error classes, codes and strings the
 * program adds (MPI_Add_error_class/code/string, MPIX_Delete_error_*, MPI_Error_class and
 * MPI_Error_string on them, the MPI_LASTUSEDCODE attribute, a user code through an error
 * handler); statuses set by hand (MPI_Status_set_elements(_x), MPI_Status_set_cancelled) and
 * converted (MPI_Status_c2f/f2c, the MPI_F_ and MPI_F08_ status sentinels); the MPI-1 names
 * (MPI_Keyval_create/free, MPI_Attr_put/get/delete, MPI_Errhandler_create/set/get, MPI_DUP_FN,
 * MPI_NULL_COPY_FN); MPI_Pcontrol with its variadic tail; MPICH's GPU support queries (no GPU
 * support: all answers 0). Run with 2 processes.
 *
 * Differences from MPICH 4.0.2, skipped when running on it: MPI_LASTUSEDCODE covers the added
 * codes too here, as MPI says (MPICH's follows the classes only); a code added to a predefined
 * class is above MPI_ERR_LASTCODE here, as MPI says (MPICH's is 0x206 for MPI_ERR_RANK);
 * MPI_Add_error_string on a predefined class or with a string of MPI_MAX_ERROR_STRING bytes or
 * more, MPI_Add_error_code on a number that is no class, an unknown device kind for MPIX_GPU_query_support, MPI_STATUS_IGNORE given to
 * MPI_Status_set_elements, deleting a class that still has codes, a deleted code, and a string
 * that was never added are MPI_ERR_ARG here (MPICH accepts them, or answers for a deleted code,
 * or fails with another class). */
#include "check.h"
#include <stdint.h>

static int rank;

/* ---- error classes, codes and strings the program adds */

static int last_used_code(void)
{
    int *p = NULL, flag = 0;
    if (MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &p, &flag) != MPI_SUCCESS || !flag)
        return -1;
    return *p;
}

static int handled_code;
static char handled_string[MPI_MAX_ERROR_STRING];

static void record(MPI_Comm *c, int *code, ...)
{
    int n = 0;
    (void)c;
    handled_code = *code;
    MPI_Error_string(*code, handled_string, &n);
}

static void user_errors(void)
{
    char s[MPI_MAX_ERROR_STRING], long_string[MPI_MAX_ERROR_STRING + 8];
    int cls = -1, code = -1, rank_code = -1, got = -1, n = -1, before = last_used_code();
    MPI_Errhandler e;
    MPI_Comm d;

    CHECK(before >= MPI_ERR_LASTCODE, "MPI_LASTUSEDCODE starts at least at MPI_ERR_LASTCODE");
    CHECK(MPI_Add_error_class(&cls) == MPI_SUCCESS && cls > MPI_ERR_LASTCODE,
          "MPI_Add_error_class: %d > MPI_ERR_LASTCODE", cls);
    CHECK(last_used_code() >= cls, "MPI_LASTUSEDCODE covers the new class");
    CHECK(MPI_Error_class(cls, &got) == MPI_SUCCESS && got == cls, "a new class is its own class");
    s[0] = 'x';
    CHECK(MPI_Error_string(cls, s, &n) == MPI_SUCCESS && n == 0 && s[0] == 0,
          "a new class has an empty string");

    CHECK(MPI_Add_error_code(cls, &code) == MPI_SUCCESS && code > MPI_ERR_LASTCODE && code != cls,
          "MPI_Add_error_code on the new class");
    if (on_madmpi())
        CHECK(last_used_code() >= code && last_used_code() >= cls, "MPI_LASTUSEDCODE covers the new code");
    CHECK(MPI_Error_class(code, &got) == MPI_SUCCESS && got == cls, "the new code's class");
    CHECK(MPI_Add_error_code(MPI_ERR_RANK, &rank_code) == MPI_SUCCESS &&
              (rank_code > MPI_ERR_LASTCODE || !on_madmpi()) && MPI_Error_class(rank_code, &got) == MPI_SUCCESS &&
              got == MPI_ERR_RANK,
          "MPI_Add_error_code on a predefined class");

    CHECK(MPI_Add_error_string(code, "the frobnicator jammed") == MPI_SUCCESS &&
              MPI_Error_string(code, s, &n) == MPI_SUCCESS && strcmp(s, "the frobnicator jammed") == 0 &&
              n == (int)strlen(s),
          "MPI_Add_error_string on a code: \"%s\"", s);
    CHECK(MPI_Add_error_string(code, "the frobnicator jammed again") == MPI_SUCCESS &&
              MPI_Error_string(code, s, &n) == MPI_SUCCESS && strcmp(s, "the frobnicator jammed again") == 0,
          "MPI_Add_error_string replaces the string");
    CHECK(MPI_Add_error_string(cls, "frobnicator errors") == MPI_SUCCESS &&
              MPI_Error_string(cls, s, &n) == MPI_SUCCESS && strcmp(s, "frobnicator errors") == 0,
          "MPI_Add_error_string on a class");
    CHECK(MPI_Error_string(MPI_ERR_RANK, s, &n) == MPI_SUCCESS && n > 0, "predefined strings stay");

    /* A user code through a handler, as a library would raise its own errors. */
    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &d) == MPI_SUCCESS && MPI_Comm_create_errhandler(record, &e) == MPI_SUCCESS &&
              MPI_Comm_set_errhandler(d, e) == MPI_SUCCESS && MPI_Comm_call_errhandler(d, code) == MPI_SUCCESS,
          "MPI_Comm_call_errhandler with the user code");
    CHECK(handled_code == code && strcmp(handled_string, "the frobnicator jammed again") == 0,
          "the handler gets the user code and its string");
    CHECK(MPI_Errhandler_free(&e) == MPI_SUCCESS && MPI_Comm_free(&d) == MPI_SUCCESS, "freed");

    if (on_madmpi())
        CHECK_ERR(MPI_Add_error_string(MPI_ERR_RANK, "no"), MPI_ERR_ARG, "predefined");
    memset(long_string, 'y', sizeof long_string - 1);
    long_string[sizeof long_string - 1] = 0;
    if (on_madmpi()) {
        CHECK_ERR(MPI_Add_error_code(-1000, &got), MPI_ERR_ARG, "not an error class");
        CHECK_ERR(MPI_Add_error_code(code, &got), MPI_ERR_ARG, "not an error class");
        CHECK_ERR(MPI_Add_error_string(code, long_string), MPI_ERR_ARG, "longer than MPI_MAX_ERROR_STRING");
    }

    /* Strings first: MPICH 4.0.2 frees a deleted code's or class's string twice (in
     * MPI_Finalize) unless it was deleted before. */
    CHECK(MPIX_Delete_error_string(code) == MPI_SUCCESS && MPI_Error_string(code, s, &n) == MPI_SUCCESS &&
              n == 0,
          "MPIX_Delete_error_string: the string is empty again");
    if (on_madmpi()) {
        CHECK_ERR(MPIX_Delete_error_string(code), MPI_ERR_ARG, "no string");
        CHECK_ERR(MPIX_Delete_error_class(cls), MPI_ERR_ARG, "still has 1 error code");
        CHECK_ERR(MPIX_Delete_error_class(MPI_ERR_RANK), MPI_ERR_ARG, "not a user-defined error class");
        CHECK_ERR(MPIX_Delete_error_code(cls), MPI_ERR_ARG, "not a user-defined error code");
    }
    CHECK(MPIX_Delete_error_code(code) == MPI_SUCCESS, "MPIX_Delete_error_code");
    if (on_madmpi())
        CHECK_ERR(MPI_Error_class(code, &got), MPI_ERR_ARG, "not an error code");
    CHECK(MPIX_Delete_error_string(cls) == MPI_SUCCESS && MPIX_Delete_error_class(cls) == MPI_SUCCESS,
          "MPIX_Delete_error_class once its codes are gone");
    CHECK(MPIX_Delete_error_code(rank_code) == MPI_SUCCESS, "MPIX_Delete_error_code on a predefined class's code");
}

/* ---- statuses set by hand and converted */

static void statuses(void)
{
    MPI_Status s, back;
    MPI_Fint f[MPI_F_STATUS_SIZE];
    MPI_Datatype pair;
    MPI_Count big = -1;
    int count = -1, flag = -1, x = 7, peer = 1 - rank;

    CHECK(MPI_Status_set_elements(&s, MPI_INT, 5) == MPI_SUCCESS && MPI_Get_count(&s, MPI_INT, &count) == MPI_SUCCESS &&
              count == 5 && MPI_Get_elements(&s, MPI_INT, &count) == MPI_SUCCESS && count == 5,
          "MPI_Status_set_elements(5 MPI_INT): MPI_Get_count and MPI_Get_elements say 5");
    CHECK(MPI_Get_count(&s, MPI_BYTE, &count) == MPI_SUCCESS && count == 5 * (int)sizeof(int),
          "... that is 20 bytes");
    CHECK(MPI_Status_set_elements_x(&s, MPI_DOUBLE, 3) == MPI_SUCCESS &&
              MPI_Get_elements_x(&s, MPI_DOUBLE, &big) == MPI_SUCCESS && big == 3,
          "MPI_Status_set_elements_x(3 MPI_DOUBLE)");
    CHECK(MPI_Type_contiguous(2, MPI_INT, &pair) == MPI_SUCCESS && MPI_Type_commit(&pair) == MPI_SUCCESS &&
              MPI_Status_set_elements(&s, pair, 3) == MPI_SUCCESS && MPI_Get_count(&s, pair, &count) == MPI_SUCCESS &&
              count == 3,
          "MPI_Status_set_elements on a derived type: MPI_Get_count gives the count back");
    CHECK(MPI_Status_set_cancelled(&s, 1) == MPI_SUCCESS && MPI_Test_cancelled(&s, &flag) == MPI_SUCCESS && flag == 1,
          "MPI_Status_set_cancelled(1)");
    CHECK(MPI_Status_set_elements(&s, MPI_INT, 2) == MPI_SUCCESS && MPI_Test_cancelled(&s, &flag) == MPI_SUCCESS &&
              flag == 1 && MPI_Get_count(&s, MPI_INT, &count) == MPI_SUCCESS && count == 2,
          "the count and the cancelled flag are independent");
    CHECK(MPI_Status_set_cancelled(&s, 0) == MPI_SUCCESS && MPI_Test_cancelled(&s, &flag) == MPI_SUCCESS && flag == 0,
          "MPI_Status_set_cancelled(0)");
    CHECK_ERR(MPI_Status_set_elements(&s, MPI_INT, -1), MPI_ERR_COUNT, "negative count");
    CHECK_ERR(MPI_Status_set_elements(&s, MPI_DATATYPE_NULL, 1), MPI_ERR_TYPE, "null datatype");
    if (on_madmpi())
        CHECK_ERR(MPI_Status_set_elements(MPI_STATUS_IGNORE, MPI_INT, 1), MPI_ERR_ARG, "MPI_STATUS_IGNORE");
    MPI_Type_free(&pair);

    /* A real status, to Fortran and back. */
    CHECK(MPI_Sendrecv(&x, 1, MPI_INT, peer, 40 + rank, &x, 1, MPI_INT, peer, 40 + peer, MPI_COMM_WORLD, &s) ==
              MPI_SUCCESS,
          "a status from MPI_Sendrecv");
    CHECK(MPI_Status_c2f(&s, f) == MPI_SUCCESS && f[MPI_F_SOURCE] == peer && f[MPI_F_TAG] == 40 + peer,
          "MPI_Status_c2f: source %d, tag %d at MPI_F_SOURCE and MPI_F_TAG", f[MPI_F_SOURCE], f[MPI_F_TAG]);
    memset(&back, 0, sizeof back);
    CHECK(MPI_Status_f2c(f, &back) == MPI_SUCCESS && back.MPI_SOURCE == peer && back.MPI_TAG == 40 + peer &&
              MPI_Get_count(&back, MPI_INT, &count) == MPI_SUCCESS && count == 1 &&
              MPI_Test_cancelled(&back, &flag) == MPI_SUCCESS && flag == 0,
          "MPI_Status_f2c gives the status back");
    CHECK(MPI_Status_c2f(MPI_STATUS_IGNORE, f) != MPI_SUCCESS, "MPI_Status_c2f refuses MPI_STATUS_IGNORE");
    CHECK(MPI_Status_f2c(MPI_F_STATUS_IGNORE, &back) != MPI_SUCCESS, "MPI_Status_f2c refuses MPI_F_STATUS_IGNORE");
    CHECK(MPI_F08_STATUS_IGNORE != NULL && MPI_F08_STATUSES_IGNORE != NULL &&
              (void *)MPI_F08_STATUS_IGNORE != (void *)MPI_F08_STATUSES_IGNORE,
          "the MPI_F08_ sentinels are distinct addresses");
}

/* ---- MPI-1 names */

static int copies, deletes;

static int copy_fn(MPI_Comm c, int kv, void *extra, void *in, void *out, int *flag)
{
    (void)c;
    (void)kv;
    copies++;
    *(void **)out = (char *)in + (intptr_t)extra;
    *flag = 1;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm c, int kv, void *value, void *extra)
{
    (void)c;
    (void)kv;
    (void)value;
    (void)extra;
    deletes++;
    return MPI_SUCCESS;
}

static int handler_calls;

static void handler(MPI_Comm *c, int *code, ...)
{
    (void)c;
    (void)code;
    handler_calls++;
}

static void mpi1_names(void)
{
    int kv = MPI_KEYVAL_INVALID, kdup = MPI_KEYVAL_INVALID, knull = MPI_KEYVAL_INVALID, flag = -1, x = 0, rc;
    void *v = NULL;
    int *tag_ub = NULL;
    MPI_Comm a, b;
    MPI_Errhandler e = MPI_ERRHANDLER_NULL, got = MPI_ERRHANDLER_NULL;

    CHECK(MPI_Keyval_create(copy_fn, delete_fn, &kv, (void *)(intptr_t)1) == MPI_SUCCESS && kv != MPI_KEYVAL_INVALID,
          "MPI_Keyval_create");
    CHECK(MPI_Keyval_create(MPI_DUP_FN, MPI_NULL_DELETE_FN, &kdup, NULL) == MPI_SUCCESS &&
              MPI_Keyval_create(MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN, &knull, NULL) == MPI_SUCCESS,
          "MPI_Keyval_create with MPI_DUP_FN, MPI_NULL_COPY_FN, MPI_NULL_DELETE_FN");
    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &a) == MPI_SUCCESS && MPI_Attr_put(a, kv, (void *)100) == MPI_SUCCESS &&
              MPI_Attr_put(a, kdup, (void *)200) == MPI_SUCCESS && MPI_Attr_put(a, knull, (void *)300) == MPI_SUCCESS,
          "MPI_Attr_put");
    CHECK(MPI_Attr_get(a, kv, &v, &flag) == MPI_SUCCESS && flag == 1 && v == (void *)100, "MPI_Attr_get");
    CHECK(MPI_Comm_dup(a, &b) == MPI_SUCCESS && copies == 1, "MPI_Comm_dup calls the MPI-1 copy function");
    CHECK(MPI_Attr_get(b, kv, &v, &flag) == MPI_SUCCESS && flag == 1 && v == (void *)101, "... whose copy is in the duplicate");
    CHECK(MPI_Attr_get(b, kdup, &v, &flag) == MPI_SUCCESS && flag == 1 && v == (void *)200, "MPI_DUP_FN copies the value");
    CHECK(MPI_Attr_get(b, knull, &v, &flag) == MPI_SUCCESS && flag == 0, "MPI_NULL_COPY_FN does not copy");
    CHECK(MPI_Attr_delete(a, kv) == MPI_SUCCESS && deletes == 1 && MPI_Attr_get(a, kv, &v, &flag) == MPI_SUCCESS &&
              flag == 0,
          "MPI_Attr_delete calls the MPI-1 delete function");
    CHECK(MPI_Comm_free(&b) == MPI_SUCCESS && deletes == 2, "freeing the duplicate deletes its copy");
    CHECK(MPI_Attr_get(a, MPI_TAG_UB, &tag_ub, &flag) == MPI_SUCCESS && flag == 1 && *tag_ub >= 32767,
          "MPI_Attr_get(MPI_TAG_UB)");
    CHECK_ERR(MPI_Attr_put(a, MPI_TAG_UB, NULL), MPI_ERR_KEYVAL, "MPI_TAG_UB");
    CHECK(MPI_Keyval_free(&kv) == MPI_SUCCESS && kv == MPI_KEYVAL_INVALID, "MPI_Keyval_free sets MPI_KEYVAL_INVALID");
    CHECK(MPI_Keyval_free(&kdup) == MPI_SUCCESS && MPI_Keyval_free(&knull) == MPI_SUCCESS, "the others freed");

    CHECK(MPI_Errhandler_create(handler, &e) == MPI_SUCCESS && e != MPI_ERRHANDLER_NULL, "MPI_Errhandler_create");
    CHECK(MPI_Errhandler_set(a, e) == MPI_SUCCESS && MPI_Errhandler_get(a, &got) == MPI_SUCCESS && got == e,
          "MPI_Errhandler_set, MPI_Errhandler_get");
    rc = MPI_Send(&x, 1, MPI_INT, 99, 0, a);
    CHECK(class_of(rc) == MPI_ERR_RANK && handler_calls == 1, "the MPI-1 handler is called");
    CHECK(MPI_Errhandler_free(&got) == MPI_SUCCESS && MPI_Errhandler_free(&e) == MPI_SUCCESS &&
              MPI_Comm_free(&a) == MPI_SUCCESS,
          "freed");
    CHECK_ERR(MPI_Errhandler_set(MPI_COMM_NULL, MPI_ERRORS_RETURN), MPI_ERR_COMM, "communicator");
}

/* ---- MPI_Pcontrol and the GPU queries */

static void pcontrol_and_gpu(void)
{
    int supported = -1;
    CHECK(MPI_Pcontrol(0) == MPI_SUCCESS && MPI_Pcontrol(1) == MPI_SUCCESS &&
              MPI_Pcontrol(2, "phase", 3.5, 7L) == MPI_SUCCESS,
          "MPI_Pcontrol, with and without a variadic tail");
    CHECK(MPIX_Query_cuda_support() == 0 && MPIX_Query_hip_support() == 0 && MPIX_Query_ze_support() == 0,
          "no CUDA, HIP nor Level Zero support");
    CHECK(MPIX_GPU_query_support(MPIX_GPU_SUPPORT_CUDA, &supported) == MPI_SUCCESS && supported == 0,
          "MPIX_GPU_query_support(CUDA)");
    supported = -1;
    CHECK(MPIX_GPU_query_support(MPIX_GPU_SUPPORT_HIP, &supported) == MPI_SUCCESS && supported == 0,
          "MPIX_GPU_query_support(HIP)");
    supported = -1;
    CHECK(MPIX_GPU_query_support(MPIX_GPU_SUPPORT_ZE, &supported) == MPI_SUCCESS && supported == 0,
          "MPIX_GPU_query_support(ZE)");
    if (on_madmpi())
        CHECK_ERR(MPIX_GPU_query_support(99, &supported), MPI_ERR_ARG, "device kind");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    check_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    user_errors();
    statuses();
    mpi1_names();
    pcontrol_and_gpu();
    MPI_Barrier(MPI_COMM_WORLD);
    CHECK(1, "all checks passed");
    MPI_Finalize();
    return 0;
}
