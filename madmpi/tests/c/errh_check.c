/* Error handlers and error codes against MPICH (expected values in madmpi/src/error/ tests come
 * from MPICH 4.0.2):
 *
 *   mpicc.mpich errh_check.c -o /tmp/errh_check && mpiexec.hydra -n 1 /tmp/errh_check */
#include <mpi.h>
#include <stdio.h>

static void handler(MPI_Comm *c, int *code, ...)
{
    int cls;
    MPI_Error_class(*code, &cls);
    printf("  user handler called, class=%d\n", cls);
}

static void rc_line(const char *what, int rc)
{
    int cls = -1, len;
    char s[MPI_MAX_ERROR_STRING] = "";
    int rc2 = MPI_Error_class(rc, &cls);
    MPI_Error_string(rc, s, &len);
    printf("%s -> rc=%d class=%d (Error_class rc=%d) string=\"%s\"\n", what, rc, cls, rc2, s);
}

int main(int argc, char **argv)
{
    MPI_Comm c;
    MPI_Errhandler eh, got, pre = MPI_ERRORS_RETURN;
    int rc, k, flag;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_create_errhandler(handler, &eh);
    MPI_Comm_set_errhandler(c, eh);
    rc = MPI_Errhandler_free(&eh);
    rc_line("free user handler while attached", rc);
    printf("handle is %s\n", eh == MPI_ERRHANDLER_NULL ? "MPI_ERRHANDLER_NULL" : "set");
    printf("send to rank 7 on c (size 1)\n");
    MPI_Send(NULL, 0, MPI_INT, 7, 0, c);
    MPI_Comm_get_errhandler(c, &got);
    rc = MPI_Errhandler_free(&got);
    rc_line("free handle from get_errhandler", rc);
    printf("send again\n");
    MPI_Send(NULL, 0, MPI_INT, 7, 0, c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    rc = MPI_Errhandler_free(&pre);
    rc_line("free MPI_ERRORS_RETURN", rc);
    rc = MPI_Send(NULL, 0, MPI_INT, 7, 0, c);
    rc_line("send rank 7", rc);
    rc = MPI_Send(NULL, -1, MPI_INT, 0, 0, c);
    rc_line("send count -1", rc);
    MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &k, NULL);
    rc = MPI_Comm_delete_attr(c, k);
    rc_line("delete unset attribute", rc);
    rc_line("class 14", 14);
    rc_line("code 0x3fffffff", 0x3fffffff);
    rc_line("code 12345", 12345);
    rc_line("code 54", 54);
    {
        int newclass, newcode, *last;
        MPI_Add_error_class(&newclass);
        MPI_Add_error_code(newclass, &newcode);
        MPI_Add_error_string(newcode, "my code");
        printf("added class=%d code=%d\n", newclass, newcode);
        rc_line("added code", newcode);
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &last, &flag);
        printf("LASTUSEDCODE=%d\n", *last);
    }
    MPI_Comm_free(&c);
    MPI_Finalize();
    return 0;
}
