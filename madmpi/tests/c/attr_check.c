/* Attribute caching against MPICH: callback order and error propagation, read by hand into
 * madmpi/src/attr/tests.rs (expected values there come from MPICH 4.0.2).
 *
 *   mpicc.mpich attr_check.c -o /tmp/attr_check && mpiexec.hydra -n 1 /tmp/attr_check */
#include <mpi.h>
#include <stdio.h>
#include <stdint.h>

/* extra_state is the keyval's name; the attribute value is an integer cast to a pointer.
 * A value >= 100 makes the callback fail with (value - 100) as its return code. */
static int copy_fn(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag)
{
    intptr_t v = (intptr_t)in;
    printf("  copy %s value=%ld\n", (char *)extra, (long)v);
    if (v >= 100) return (int)(v - 100);
    *(void **)out = (void *)(v + 10);
    *flag = 1;
    return MPI_SUCCESS;
}

static int nocopy_fn(MPI_Comm c, int k, void *extra, void *in, void *out, int *flag)
{
    printf("  nocopy %s\n", (char *)extra);
    *flag = 0;
    return MPI_SUCCESS;
}

static int delete_fn(MPI_Comm c, int k, void *v, void *extra)
{
    intptr_t val = (intptr_t)v;
    printf("  delete %s value=%ld\n", (char *)extra, (long)val);
    if (val >= 100) return (int)(val - 100);
    return MPI_SUCCESS;
}

static void rc_line(const char *what, int rc)
{
    int cls;
    MPI_Error_class(rc, &cls);
    printf("%s -> rc=%d class=%d\n", what, rc, cls);
}

int main(int argc, char **argv)
{
    int ka, kb, kc, kn, rc, flag;
    void *val;
    MPI_Comm c, d;
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_create_keyval(copy_fn, delete_fn, &ka, "A");
    MPI_Comm_create_keyval(copy_fn, delete_fn, &kb, "B");
    MPI_Comm_create_keyval(copy_fn, delete_fn, &kc, "C");
    MPI_Comm_create_keyval(nocopy_fn, delete_fn, &kn, "N");

    printf("set A B C N on c, then free c\n");
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_set_attr(c, ka, (void *)1);
    MPI_Comm_set_attr(c, kb, (void *)2);
    MPI_Comm_set_attr(c, kc, (void *)3);
    MPI_Comm_set_attr(c, kn, (void *)4);
    printf("replace B\n");
    MPI_Comm_set_attr(c, kb, (void *)5);
    printf("dup c\n");
    rc = MPI_Comm_dup(c, &d);
    rc_line("dup", rc);
    MPI_Comm_get_attr(d, kn, &val, &flag);
    printf("N on dup: flag=%d\n", flag);
    MPI_Comm_get_attr(d, kb, &val, &flag);
    printf("B on dup: flag=%d value=%ld\n", flag, (long)(intptr_t)val);
    printf("free dup\n");
    MPI_Comm_free(&d);
    printf("free c\n");
    rc = MPI_Comm_free(&c);
    rc_line("free", rc);

    printf("copy failure: A=1 B=107 C=3\n");
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_set_attr(c, ka, (void *)1);
    MPI_Comm_set_attr(c, kb, (void *)107);
    MPI_Comm_set_attr(c, kc, (void *)3);
    d = MPI_COMM_WORLD;
    rc = MPI_Comm_dup(c, &d);
    rc_line("dup", rc);
    printf("newcomm is %s\n", d == MPI_COMM_NULL ? "MPI_COMM_NULL" : "set");
    printf("delete B (value 107 fails with 7)\n");
    rc = MPI_Comm_delete_attr(c, kb);
    rc_line("delete_attr", rc);
    MPI_Comm_get_attr(c, kb, &val, &flag);
    printf("B after failed delete: flag=%d\n", flag);
    printf("replace B (old 107 fails with 7)\n");
    rc = MPI_Comm_set_attr(c, kb, (void *)8);
    rc_line("set_attr", rc);
    MPI_Comm_get_attr(c, kb, &val, &flag);
    printf("B after failed replace: flag=%d value=%ld\n", flag, (long)(intptr_t)val);
    MPI_Comm_set_attr(c, ka, (void *)108);
    printf("free c with A=108 failing\n");
    rc = MPI_Comm_free(&c);
    rc_line("free", rc);
    printf("c is %s\n", c == MPI_COMM_NULL ? "MPI_COMM_NULL" : "still set");
    if (c != MPI_COMM_NULL) {
        MPI_Comm_get_attr(c, kc, &val, &flag);
        printf("C after failed free: flag=%d\n", flag);
        MPI_Comm_get_attr(c, ka, &val, &flag);
        printf("A after failed free: flag=%d\n", flag);
    }

    printf("free keyval A while attached to e\n");
    MPI_Comm e;
    MPI_Comm_dup(MPI_COMM_WORLD, &e);
    MPI_Comm_set_errhandler(e, MPI_ERRORS_RETURN);
    MPI_Comm_set_attr(e, ka, (void *)1);
    int ka_saved = ka;
    rc = MPI_Comm_free_keyval(&ka);
    rc_line("free_keyval", rc);
    printf("ka is %s\n", ka == MPI_KEYVAL_INVALID ? "MPI_KEYVAL_INVALID" : "unchanged");
    rc = MPI_Comm_get_attr(e, ka_saved, &val, &flag);
    rc_line("get_attr with freed keyval", rc);
    printf("flag=%d\n", flag);
    rc = MPI_Comm_set_attr(e, ka_saved, (void *)2);
    rc_line("set_attr with freed keyval", rc);
    printf("dup e\n");
    MPI_Comm f;
    rc = MPI_Comm_dup(e, &f);
    rc_line("dup", rc);
    printf("free e\n");
    MPI_Comm_free(&e);
    printf("free f\n");
    MPI_Comm_free(&f);
    rc = MPI_Comm_free_keyval(&ka_saved);
    rc_line("free_keyval again", rc);

    printf("COMM_SELF: set A B C, finalize\n");
    MPI_Comm_set_attr(MPI_COMM_SELF, kb, (void *)1);
    MPI_Comm_set_attr(MPI_COMM_SELF, kc, (void *)2);
    MPI_Comm_set_attr(MPI_COMM_SELF, kn, (void *)3);
    MPI_Comm_set_attr(MPI_COMM_SELF, kb, (void *)4);
    {
        int *ub;
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
        printf("TAG_UB=%d\n", *ub);
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_WTIME_IS_GLOBAL, &ub, &flag);
        printf("WTIME_IS_GLOBAL flag=%d value=%d\n", flag, flag ? *ub : -1);
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_UNIVERSE_SIZE, &ub, &flag);
        printf("UNIVERSE_SIZE flag=%d value=%d\n", flag, flag ? *ub : -1);
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_APPNUM, &ub, &flag);
        printf("APPNUM flag=%d value=%d\n", flag, flag ? *ub : -1);
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_HOST, &ub, &flag);
        printf("HOST flag=%d value=%d\n", flag, flag ? *ub : -1);
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_IO, &ub, &flag);
        printf("IO flag=%d value=%d\n", flag, flag ? *ub : -1);
        MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_LASTUSEDCODE, &ub, &flag);
        printf("LASTUSEDCODE flag=%d value=%d\n", flag, flag ? *ub : -1);
        rc = MPI_Comm_delete_attr(MPI_COMM_WORLD, MPI_TAG_UB);
        rc_line("delete predefined TAG_UB", rc);
        rc = MPI_Comm_set_attr(MPI_COMM_WORLD, MPI_TAG_UB, (void *)1);
        rc_line("set predefined TAG_UB", rc);
        int kp = MPI_TAG_UB;
        rc = MPI_Comm_free_keyval(&kp);
        rc_line("free predefined TAG_UB keyval", rc);
        MPI_Comm_get_attr(MPI_COMM_SELF, MPI_TAG_UB, &ub, &flag);
        printf("TAG_UB on SELF flag=%d\n", flag);
        MPI_Comm_dup(MPI_COMM_WORLD, &c);
        MPI_Comm_get_attr(c, MPI_TAG_UB, &ub, &flag);
        printf("TAG_UB on dup flag=%d\n", flag);
    }
    MPI_Finalize();
    return 0;
}
