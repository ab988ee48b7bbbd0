/* Errors of the I/O chapter and file error handlers. Files return errors by default
 * (MPI_ERRORS_RETURN on MPI_FILE_NULL), so every failing call is checked for its error class
 * (MPI_Error_class) and a message (MPI_Error_string): opening a missing file, CREATE|EXCL on an
 * existing one, the invalid access modes, writing a read-only file, reading a write-only one,
 * permissions (skipped as root), deleting a missing file, an unknown data representation, a
 * representation registered twice, the invalid handle, offsets, counts, types, communicator,
 * seeking a sequential file. Then file error handlers: create/set/get/call, a user handler
 * called by a failing call with its file and code, and the handler of MPI_FILE_NULL: called by
 * a failing open, inherited by the files opened afterwards.
 *
 * MPICH 4.0.2 (ROMIO), where it differs: MPI_Register_datarep refuses conversion functions
 * (MPI_ERR_CONVERSION) and accepts the predefined names again; MPI_File_get_errhandler returns
 * no new reference (freeing it fails an assertion later): those checks run on MadMPI's library
 * only. A write to a file opened MPI_MODE_RDONLY is MPI_ERR_READ_ONLY on both.
 *
 * Runs with any number of processes (1, 2 and 4 checked; tests/c_programs_io.rs runs 4).
 * argv[1]: the directory to write into (default: the current one); the files made are deleted. */
#include "io_common.h"
#include <sys/stat.h>


static const char *class_name(int cls)
{
    static const struct {
        int cls;
        const char *name;
    } names[] = {{MPI_SUCCESS, "MPI_SUCCESS"}, {MPI_ERR_ACCESS, "MPI_ERR_ACCESS"}, {MPI_ERR_AMODE, "MPI_ERR_AMODE"},
                 {MPI_ERR_BAD_FILE, "MPI_ERR_BAD_FILE"}, {MPI_ERR_DUP_DATAREP, "MPI_ERR_DUP_DATAREP"},
                 {MPI_ERR_FILE_EXISTS, "MPI_ERR_FILE_EXISTS"}, {MPI_ERR_FILE, "MPI_ERR_FILE"},
                 {MPI_ERR_IO, "MPI_ERR_IO"},
                 {MPI_ERR_NO_SUCH_FILE, "MPI_ERR_NO_SUCH_FILE"}, {MPI_ERR_READ_ONLY, "MPI_ERR_READ_ONLY"},
                 {MPI_ERR_UNSUPPORTED_DATAREP, "MPI_ERR_UNSUPPORTED_DATAREP"},
                 {MPI_ERR_UNSUPPORTED_OPERATION, "MPI_ERR_UNSUPPORTED_OPERATION"}, {MPI_ERR_ARG, "MPI_ERR_ARG"},
                 {MPI_ERR_COUNT, "MPI_ERR_COUNT"}, {MPI_ERR_TYPE, "MPI_ERR_TYPE"}, {MPI_ERR_COMM, "MPI_ERR_COMM"},
                 {MPI_ERR_OTHER, "MPI_ERR_OTHER"}, {MPI_ERR_NOT_SAME, "MPI_ERR_NOT_SAME"}};
    for (unsigned i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].cls == cls)
            return names[i].name;
    return "another class";
}

/* A call fails with a code of class cls that MPI_Error_string describes (printed on one line:
 * MPICH's strings hold a stack of lines). */
#define CHECK_CLASS(call, cls)                                                                 \
    do {                                                                                       \
        int rc_ = (call), c_ = class_of(rc_), n_ = -1;                                         \
        char s_[MPI_MAX_ERROR_STRING] = "";                                                    \
        MPI_Error_string(rc_, s_, &n_);                                                        \
        int len_ok_ = n_ > 0 && n_ == (int)strlen(s_);                                         \
        for (char *p_ = s_; *p_; p_++)                                                         \
            if (*p_ == '\n')                                                                   \
                *p_ = ' ';                                                                     \
        CHECK(rc_ != MPI_SUCCESS && c_ == (cls) && len_ok_, "%s: %s (%d): \"%s\"", #call,       \
              class_name(c_), c_, s_);                                                         \
    } while (0)

static void open_errors(void)
{
    MPI_File fh = MPI_FILE_NULL;
    int buf[4] = {1, 2, 3, 4};
    MPI_Status st;
    const char *exists = fname("exists"), *missing = fname("missing");

    CHECK_CLASS(MPI_File_open(MPI_COMM_SELF, missing, MPI_MODE_RDWR, MPI_INFO_NULL, &fh), MPI_ERR_NO_SUCH_FILE);
    CHECK(fh == MPI_FILE_NULL, "a failed open leaves MPI_FILE_NULL");
    CHECK_CLASS(MPI_File_open(MPI_COMM_WORLD, missing, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_NO_SUCH_FILE);
    CHECK_CLASS(MPI_File_delete(missing, MPI_INFO_NULL), MPI_ERR_NO_SUCH_FILE);

    CHECK(MPI_File_open(MPI_COMM_WORLD, exists, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) == MPI_SUCCESS,
          "create a file");
    MPI_File_write_at(fh, rank * 16, buf, 4, MPI_INT, &st);
    MPI_File_close(&fh);
    CHECK_CLASS(MPI_File_open(MPI_COMM_WORLD, exists, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_RDWR, MPI_INFO_NULL,
                              &fh),
                MPI_ERR_FILE_EXISTS);
    CHECK_CLASS(MPI_File_open(MPI_COMM_SELF, exists, MPI_MODE_CREATE | MPI_MODE_EXCL | MPI_MODE_WRONLY, MPI_INFO_NULL,
                              &fh),
                MPI_ERR_FILE_EXISTS);

    /* Access modes MPI forbids: exactly one of RDONLY, RDWR, WRONLY; RDONLY without CREATE or
     * EXCL; RDWR without SEQUENTIAL. */
    CHECK_CLASS(MPI_File_open(MPI_COMM_SELF, exists, MPI_MODE_RDONLY | MPI_MODE_CREATE, MPI_INFO_NULL, &fh),
                MPI_ERR_AMODE);
    CHECK_CLASS(MPI_File_open(MPI_COMM_SELF, exists, MPI_MODE_RDONLY | MPI_MODE_EXCL, MPI_INFO_NULL, &fh),
                MPI_ERR_AMODE);
    CHECK_CLASS(MPI_File_open(MPI_COMM_WORLD, exists, MPI_MODE_RDWR | MPI_MODE_SEQUENTIAL, MPI_INFO_NULL, &fh),
                MPI_ERR_AMODE);
    CHECK_CLASS(MPI_File_open(MPI_COMM_SELF, exists, MPI_MODE_RDONLY | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh),
                MPI_ERR_AMODE);
    CHECK_CLASS(MPI_File_open(MPI_COMM_SELF, exists, MPI_MODE_RDWR | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh),
                MPI_ERR_AMODE);
    CHECK_CLASS(MPI_File_open(MPI_COMM_SELF, exists, MPI_MODE_CREATE, MPI_INFO_NULL, &fh), MPI_ERR_AMODE);
    CHECK(fh == MPI_FILE_NULL, "still MPI_FILE_NULL");

    CHECK_CLASS(MPI_File_open(MPI_COMM_NULL, exists, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), MPI_ERR_COMM);

    /* Reading and writing against the access mode. MPI 4.0 (14.7) describes MPI_ERR_READ_ONLY
     * as "file is read only" and MPI_ERR_ACCESS as "permission denied"; MPICH 4.0.2 returns
     * MPI_ERR_READ_ONLY for a write to a file opened MPI_MODE_RDONLY: required of ours too. */
    CHECK(MPI_File_open(MPI_COMM_WORLD, exists, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh) == MPI_SUCCESS, "open RDONLY");
    CHECK_CLASS(MPI_File_write_at(fh, 0, buf, 4, MPI_INT, &st), MPI_ERR_READ_ONLY);
    CHECK_CLASS(MPI_File_write(fh, buf, 4, MPI_INT, &st), MPI_ERR_READ_ONLY);
    CHECK(MPI_File_read_at(fh, 0, buf, 4, MPI_INT, &st) == MPI_SUCCESS && buf[0] == 1, "reading it works");
    MPI_File_close(&fh);
    CHECK(MPI_File_open(MPI_COMM_WORLD, exists, MPI_MODE_WRONLY, MPI_INFO_NULL, &fh) == MPI_SUCCESS, "open WRONLY");
    CHECK_CLASS(MPI_File_read_at(fh, 0, buf, 4, MPI_INT, &st), MPI_ERR_ACCESS);
    CHECK_CLASS(MPI_File_read(fh, buf, 4, MPI_INT, &st), MPI_ERR_ACCESS);
    CHECK(MPI_File_write_at(fh, rank * 16, buf, 4, MPI_INT, &st) == MPI_SUCCESS, "writing it works");
    MPI_File_close(&fh);

    /* Permissions: root passes them, so they are checked only for other users. */
    if (geteuid() == 0) {
        CHECK(1, "running as root: the permission checks are skipped");
    } else {
        const char *locked = fname("locked"), *ro = fname("ro");
        char inside[4200];
        snprintf(inside, sizeof inside, "%s/f", locked);
        if (rank == 0) {
            mkdir(locked, 0);
            FILE *f = fopen(ro, "w");
            if (f)
                fclose(f);
            chmod(ro, 0444);
        }
        MPI_Barrier(MPI_COMM_WORLD);
        CHECK_CLASS(MPI_File_open(MPI_COMM_WORLD, inside, MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &fh),
                    MPI_ERR_ACCESS);
        CHECK_CLASS(MPI_File_open(MPI_COMM_SELF, ro, MPI_MODE_RDWR, MPI_INFO_NULL, &fh), MPI_ERR_ACCESS);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
            rmdir(locked);
            unlink(ro);
        }
    }
}

static int dummy_conv(void *userbuf, MPI_Datatype t, int count, void *filebuf, MPI_Offset position, void *extra)
{
    (void)userbuf, (void)t, (void)count, (void)filebuf, (void)position, (void)extra;
    return MPI_SUCCESS;
}

static int dummy_extent(MPI_Datatype t, MPI_Aint *extent, void *extra)
{
    (void)extra;
    MPI_Aint lb;
    return MPI_Type_get_extent(t, &lb, extent);
}

static void argument_errors(void)
{
    MPI_File fh = MPI_FILE_NULL, null = MPI_FILE_NULL;
    int buf[4] = {0};
    MPI_Status st;

    CHECK_CLASS(MPI_File_read_at(MPI_FILE_NULL, 0, buf, 1, MPI_INT, &st), MPI_ERR_FILE);
    CHECK_CLASS(MPI_File_close(&null), MPI_ERR_FILE);
    CHECK(MPI_File_open(MPI_COMM_WORLD, fname("exists"), MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL,
                        &fh) == MPI_SUCCESS,
          "open RDWR|DELETE_ON_CLOSE");
    CHECK_CLASS(MPI_File_write_at(fh, -4, buf, 1, MPI_INT, &st), MPI_ERR_ARG);
    CHECK_CLASS(MPI_File_read_at(fh, 0, buf, -1, MPI_INT, &st), MPI_ERR_COUNT);
    CHECK_CLASS(MPI_File_write_at(fh, 0, buf, 1, MPI_DATATYPE_NULL, &st), MPI_ERR_TYPE);
    CHECK_CLASS(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "no-such-representation", MPI_INFO_NULL),
                MPI_ERR_UNSUPPORTED_DATAREP);
    CHECK(MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL) == MPI_SUCCESS,
          "the file is usable after the failed set_view");
    MPI_File_close(&fh);

    /* Null conversion functions: MPICH 4.0.2 refuses any other (MPI_ERR_CONVERSION, "Read and
     * Write datarep conversions are currently not supported"); io_datarep.c uses real ones. */
    CHECK(MPI_Register_datarep("io_errors_rep", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, dummy_extent,
                               NULL) == MPI_SUCCESS,
          "MPI_Register_datarep(\"io_errors_rep\")");
    CHECK_CLASS(MPI_Register_datarep("io_errors_rep", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, dummy_extent,
                                     NULL),
                MPI_ERR_DUP_DATAREP);
    /* With conversion functions, and the predefined names ("an attempt to register a name that
     * is already defined", MPI 4.0, 14.5.3): MPICH 4.0.2 registers "native" and "external32"
     * again without an error, so these are checked on MadMPI's library only. */
    if (on_madmpi()) {
        CHECK_CLASS(MPI_Register_datarep("io_errors_rep", dummy_conv, dummy_conv, dummy_extent, NULL),
                    MPI_ERR_DUP_DATAREP);
        CHECK_CLASS(MPI_Register_datarep("native", MPI_CONVERSION_FN_NULL, MPI_CONVERSION_FN_NULL, dummy_extent,
                                         NULL),
                    MPI_ERR_DUP_DATAREP);
        CHECK_CLASS(MPI_Register_datarep("external32", dummy_conv, dummy_conv, dummy_extent, NULL),
                    MPI_ERR_DUP_DATAREP);
    }

    /* A sequential file: seeking is the standard's example of MPI_ERR_UNSUPPORTED_OPERATION. */
    CHECK(MPI_File_open(MPI_COMM_WORLD, fname("seq"),
                        MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_SEQUENTIAL | MPI_MODE_DELETE_ON_CLOSE,
                        MPI_INFO_NULL, &fh) == MPI_SUCCESS,
          "open CREATE|WRONLY|SEQUENTIAL");
    CHECK_CLASS(MPI_File_seek(fh, 0, MPI_SEEK_SET), MPI_ERR_UNSUPPORTED_OPERATION);
    CHECK(MPI_File_write_shared(fh, buf, 1, MPI_INT, &st) == MPI_SUCCESS, "write_shared works on it");
    MPI_File_close(&fh);
}

static int calls, last_code;
static MPI_File last_file;

static void handler(MPI_File *fh, int *code, ...)
{
    calls++;
    last_code = *code;
    last_file = *fh;
}

/* Frees a handle from MPI_File_get_errhandler, a new reference as those of
 * MPI_Comm_get_errhandler and MPI_Win_get_errhandler are in MadMPI's library and MPICH's. MPICH
 * 4.0.2's MPI_File_get_errhandler (ROMIO's) takes no reference: freeing it there fails an
 * assertion on the count later (in MPI_Errhandler_free of the handler), so not on MPICH. */
static int free_got(MPI_Errhandler *got)
{
    return !on_madmpi() || (MPI_Errhandler_free(got) == MPI_SUCCESS && *got == MPI_ERRHANDLER_NULL);
}

static void handlers(void)
{
    MPI_File fh = MPI_FILE_NULL, fh2 = MPI_FILE_NULL;
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL, got = MPI_ERRHANDLER_NULL;
    MPI_Status st;
    int buf[4] = {0};

    CHECK(MPI_File_create_errhandler(handler, &eh) == MPI_SUCCESS && eh != MPI_ERRHANDLER_NULL,
          "MPI_File_create_errhandler");
    CHECK(MPI_File_open(MPI_COMM_WORLD, fname("eh"), MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE,
                        MPI_INFO_NULL, &fh) == MPI_SUCCESS,
          "open a file (WRONLY)");
    CHECK(MPI_File_get_errhandler(fh, &got) == MPI_SUCCESS && got == MPI_ERRORS_RETURN,
          "it returns errors, as MPI_FILE_NULL's handler says");
    CHECK(MPI_File_set_errhandler(fh, eh) == MPI_SUCCESS, "MPI_File_set_errhandler(user handler)");
    CHECK(MPI_File_get_errhandler(fh, &got) == MPI_SUCCESS && got == eh && free_got(&got),
          "MPI_File_get_errhandler gives it (a reference, freed)");
    CHECK(MPI_File_call_errhandler(fh, MPI_ERR_OTHER) == MPI_SUCCESS && calls == 1 && last_code == MPI_ERR_OTHER &&
              last_file == fh,
          "MPI_File_call_errhandler calls it with the file and the code");
    int rc = MPI_File_read_at(fh, 0, buf, 1, MPI_INT, &st);
    CHECK(rc != MPI_SUCCESS && class_of(rc) == MPI_ERR_ACCESS && calls == 2 && last_code == rc && last_file == fh,
          "a failing read_at calls it with the file and its code (%s), and returns the code", class_name(class_of(rc)));
    CHECK(MPI_File_set_errhandler(fh, MPI_ERRORS_RETURN) == MPI_SUCCESS &&
              MPI_File_call_errhandler(fh, MPI_ERR_IO) == MPI_SUCCESS && calls == 2,
          "MPI_ERRORS_RETURN: MPI_File_call_errhandler returns, no call");
    CHECK(MPI_File_close(&fh) == MPI_SUCCESS, "close");

    /* The handler of MPI_FILE_NULL: failing opens, and the files opened afterwards. */
    CHECK(MPI_File_set_errhandler(MPI_FILE_NULL, eh) == MPI_SUCCESS, "set_errhandler(MPI_FILE_NULL, user handler)");
    CHECK(MPI_File_get_errhandler(MPI_FILE_NULL, &got) == MPI_SUCCESS && got == eh && free_got(&got),
          "get_errhandler(MPI_FILE_NULL) gives it");
    rc = MPI_File_open(MPI_COMM_SELF, fname("missing"), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh);
    CHECK(rc != MPI_SUCCESS && class_of(rc) == MPI_ERR_NO_SUCH_FILE && calls == 3 && last_code == rc &&
              last_file == MPI_FILE_NULL,
          "a failing open calls it with MPI_FILE_NULL");
    CHECK(MPI_File_open(MPI_COMM_WORLD, fname("eh"), MPI_MODE_CREATE | MPI_MODE_WRONLY | MPI_MODE_DELETE_ON_CLOSE,
                        MPI_INFO_NULL, &fh2) == MPI_SUCCESS,
          "open another file");
    CHECK(MPI_File_get_errhandler(fh2, &got) == MPI_SUCCESS && got == eh && free_got(&got),
          "the new file has the user handler");
    rc = MPI_File_read(fh2, buf, 1, MPI_INT, &st);
    CHECK(rc != MPI_SUCCESS && calls == 4 && last_file == fh2 && last_code == rc, "its failing read calls it");
    CHECK(MPI_File_set_errhandler(MPI_FILE_NULL, MPI_ERRORS_RETURN) == MPI_SUCCESS,
          "MPI_FILE_NULL returns errors again");
    rc = MPI_File_read(fh2, buf, 1, MPI_INT, &st);
    CHECK(rc != MPI_SUCCESS && calls == 5, "the open file keeps its handler");
    MPI_File_close(&fh2);
    CHECK(MPI_Errhandler_free(&eh) == MPI_SUCCESS && eh == MPI_ERRHANDLER_NULL, "MPI_Errhandler_free");
    CHECK_CLASS(MPI_File_open(MPI_COMM_SELF, fname("missing"), MPI_MODE_RDONLY, MPI_INFO_NULL, &fh),
                MPI_ERR_NO_SUCH_FILE);
    CHECK(calls == 5, "no more calls");
}

int main(int argc, char **argv)
{
    MPI_Errhandler eh = MPI_ERRHANDLER_NULL;
    io_init(&argc, &argv, "io_errors");
    IO_REMOVE_OLD("exists", "missing", "seq", "eh");
    CHECK(MPI_File_get_errhandler(MPI_FILE_NULL, &eh) == MPI_SUCCESS && eh == MPI_ERRORS_RETURN,
          "MPI_FILE_NULL's handler is MPI_ERRORS_RETURN");
    open_errors();
    argument_errors();
    handlers();
    return io_finish();
}
