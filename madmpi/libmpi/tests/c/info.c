/* Info objects: MPI_Info_create, _create_env, _set, _get, _get_string, _get_valuelen, _delete,
 * _get_nkeys, _get_nthkey, _dup, _free, MPI_INFO_ENV, and the communicator hints
 * (MPI_Comm_set_info, _get_info, _dup_with_info, _split_type), with their error paths
 * (MPI_ERRORS_RETURN), the length limits, key order, the truncation rules of MPI_Info_get and
 * MPI_Info_get_string, threads using info objects at once, and info objects used before
 * MPI_Init and after MPI_Finalize (MPI 4.0, table 11.1). Run with 2 processes.
 *
 * Also run on MPICH's own library (mpicc.mpich, mpiexec.hydra, no LD_LIBRARY_PATH). Where
 * MPICH 4.0.2 departs from MPI 4.0, the standard's behaviour is checked on MadMPI only:
 * - MPI_Info_get cuts a value longer than valuelen without error (MPICH: MPI_ERR_INFO_VALUE,
 *   valuelen 0 included);
 * - MPI_Info_get_nthkey returns a key of MPI_MAX_INFO_KEY bytes whole (MPICH cuts a byte);
 * - MPI_Comm_dup keeps the hints (MPICH gives the duplicate the defaults);
 * - MPI_INFO_NULL where an info object is needed is MPI_ERR_INFO (MPICH: MPI_ERR_ARG).
 * Where MPI leaves the choice, MadMPI's (checked here only, MPICH differs):
 * - MPI_INFO_ENV holds command, argv, maxprocs, host, arch, wdir, thread_level (MPICH's is
 *   empty), and cannot be changed or freed (MPICH allows both);
 * - MPI_Info_get_string with *buflen 0 takes a null value (MPICH: MPI_ERR_ARG);
 * - MPI_Comm_set_info(MPI_INFO_NULL) changes nothing (MPICH: MPI_ERR_ARG);
 * - a failed MPI_Comm_dup_with_info gives MPI_COMM_NULL (MPICH leaves newcomm untouched);
 * - a hint with a value other than "true"/"false" is ignored;
 * - a freed handle is MPI_ERR_INFO (MPICH crashes);
 * - threads may change one info object at once (MPICH: not thread-safe). */
#include "check.h"
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#define THREADS 4
#define KEYS 64

static int rank, size;

/* A failure of class `cls` (its message saying `word`) on MadMPI; on MPICH's library just a
 * failure (see the top). */
#define CHECK_ERR_OURS(call, cls, word)                                                        \
    do {                                                                                       \
        int rc_ = (call), ours_ = on_madmpi(), n_ = 0;                                         \
        char s_[MPI_MAX_ERROR_STRING];                                                         \
        s_[0] = 0;                                                                             \
        MPI_Error_string(rc_, s_, &n_);                                                        \
        CHECK(rc_ != MPI_SUCCESS && (!ours_ || (class_of(rc_) == (cls) && strstr(s_, (word)) != NULL)), \
              "%s fails with %s%s: \"%s\"", #call, #cls, ours_ ? "" : " on MadMPI (here another class)", s_); \
    } while (0)

/* A string of `n` copies of `c` (n < 2000). */
static const char *repeat(char c, int n)
{
    static char buf[4][2048];
    static int next;
    char *b = buf[next++ % 4];
    memset(b, c, (size_t)n);
    b[n] = 0;
    return b;
}

/* Whether `key` is set in `info` to exactly `expected` (read with MPI_Info_get_string). */
static int has(MPI_Info info, const char *key, const char *expected)
{
    char v[MPI_MAX_INFO_VAL + 1];
    int len = sizeof v, flag = 0;
    return MPI_Info_get_string(info, key, &len, v, &flag) == MPI_SUCCESS && flag &&
           len == (int)strlen(expected) + 1 && strcmp(v, expected) == 0;
}

/* The keys of `info` joined by commas. */
static const char *keys_of(MPI_Info info)
{
    static char out[4096];
    char k[MPI_MAX_INFO_KEY + 1];
    int n = -1, i;
    out[0] = 0;
    MPI_Info_get_nkeys(info, &n);
    for (i = 0; i < n; i++) {
        MPI_Info_get_nthkey(info, i, k);
        if (i)
            strcat(out, ",");
        strncat(out, k, 64);
    }
    return out;
}

static void create_set_get_delete(void)
{
    MPI_Info info = MPI_INFO_NULL;
    char v[16];
    int n = -1, flag = -1, len = -1;

    CHECK(MPI_Info_create(&info) == MPI_SUCCESS && info != MPI_INFO_NULL, "MPI_Info_create");
    CHECK(MPI_Info_get_nkeys(info, &n) == MPI_SUCCESS && n == 0, "a new info is empty");
    CHECK(MPI_Info_set(info, "c", "3") == MPI_SUCCESS && MPI_Info_set(info, "a", "1") == MPI_SUCCESS &&
              MPI_Info_set(info, "b", "2") == MPI_SUCCESS,
          "MPI_Info_set of three keys");
    CHECK(strcmp(keys_of(info), "c,a,b") == 0, "MPI_Info_get_nthkey in the order of setting: %s", keys_of(info));
    CHECK(MPI_Info_set(info, "a", "one") == MPI_SUCCESS && has(info, "a", "one") &&
              strcmp(keys_of(info), "c,a,b") == 0,
          "replacing a value keeps the key's place: %s", keys_of(info));
    CHECK(!has(info, "A", "one"), "keys are case sensitive");
    CHECK(MPI_Info_set(info, "  spaced key ", " v ") == MPI_SUCCESS && has(info, "  spaced key ", " v "),
          "spaces are kept in C");
    CHECK(MPI_Info_set(info, "empty", "") == MPI_SUCCESS && has(info, "empty", ""), "an empty value");

    strcpy(v, "untouched");
    flag = -1;
    CHECK(MPI_Info_get(info, "b", (int)sizeof v - 1, v, &flag) == MPI_SUCCESS && flag == 1 && strcmp(v, "2") == 0,
          "MPI_Info_get of a key that is set");
    strcpy(v, "untouched");
    CHECK(MPI_Info_get(info, "zz", (int)sizeof v - 1, v, &flag) == MPI_SUCCESS && flag == 0 &&
              strcmp(v, "untouched") == 0,
          "MPI_Info_get of a key that is not set: flag false, value untouched");
    CHECK(MPI_Info_get_valuelen(info, "a", &len, &flag) == MPI_SUCCESS && flag == 1 && len == 3,
          "MPI_Info_get_valuelen (NUL not counted): %d", len);
    len = -7;
    CHECK(MPI_Info_get_valuelen(info, "zz", &len, &flag) == MPI_SUCCESS && flag == 0 && len == -7,
          "MPI_Info_get_valuelen of a key not set: flag false, length untouched");

    CHECK(MPI_Info_delete(info, "c") == MPI_SUCCESS, "MPI_Info_delete");
    CHECK(strcmp(keys_of(info), "a,b,  spaced key ,empty") == 0, "later keys move down: %s", keys_of(info));
    CHECK_ERR(MPI_Info_delete(info, "c"), MPI_ERR_INFO_NOKEY, "not set");
    CHECK(MPI_Info_set(info, "c", "back") == MPI_SUCCESS && strcmp(keys_of(info), "a,b,  spaced key ,empty,c") == 0,
          "a deleted key set again comes last");
    CHECK(MPI_Info_free(&info) == MPI_SUCCESS && info == MPI_INFO_NULL, "MPI_Info_free sets MPI_INFO_NULL");
}

static void limits_and_truncation(void)
{
    MPI_Info info;
    char key[MPI_MAX_INFO_KEY + 1], v[MPI_MAX_INFO_VAL + 1];
    const char *longest_key = repeat('k', MPI_MAX_INFO_KEY), *longest_value = repeat('v', MPI_MAX_INFO_VAL);
    int flag = -1, len = -1, n = -1;

    MPI_Info_create(&info);
    CHECK(MPI_Info_set(info, longest_key, longest_value) == MPI_SUCCESS,
          "a key of MPI_MAX_INFO_KEY and a value of MPI_MAX_INFO_VAL bytes");
    CHECK(has(info, longest_key, longest_value), "read back whole with MPI_Info_get_string");
    CHECK(MPI_Info_get_valuelen(info, longest_key, &len, &flag) == MPI_SUCCESS && flag && len == MPI_MAX_INFO_VAL,
          "MPI_Info_get_valuelen: MPI_MAX_INFO_VAL");
    CHECK(MPI_Info_get(info, longest_key, MPI_MAX_INFO_VAL, v, &flag) == MPI_SUCCESS && flag &&
              strcmp(v, longest_value) == 0,
          "MPI_Info_get with valuelen MPI_MAX_INFO_VAL");
    memset(key, 'x', sizeof key);
    CHECK(MPI_Info_get_nthkey(info, 0, key) == MPI_SUCCESS, "MPI_Info_get_nthkey of the longest key");
    if (on_madmpi())
        CHECK(strcmp(key, longest_key) == 0, "... whole: %d bytes", (int)strlen(key));
    else
        CHECK(strncmp(key, longest_key, strlen(key)) == 0, "... (MPICH cuts it to %d bytes)", (int)strlen(key));

    CHECK_ERR(MPI_Info_set(info, repeat('k', MPI_MAX_INFO_KEY + 1), "v"), MPI_ERR_INFO_KEY, "MPI_MAX_INFO_KEY");
    CHECK_ERR(MPI_Info_set(info, "k", repeat('v', MPI_MAX_INFO_VAL + 1)), MPI_ERR_INFO_VALUE, "MPI_MAX_INFO_VAL");
    CHECK_ERR(MPI_Info_set(info, "", "v"), MPI_ERR_INFO_KEY, "empty key");
    CHECK_ERR(MPI_Info_set(info, NULL, "v"), MPI_ERR_INFO_KEY, "null pointer");
    CHECK_ERR(MPI_Info_set(info, "k", NULL), MPI_ERR_ARG, "null pointer");
    CHECK_ERR(MPI_Info_get(info, repeat('k', 300), 5, v, &flag), MPI_ERR_INFO_KEY, "MPI_MAX_INFO_KEY");
    CHECK_ERR(MPI_Info_get_valuelen(info, repeat('k', 300), &len, &flag), MPI_ERR_INFO_KEY, "MPI_MAX_INFO_KEY");
    CHECK_ERR(MPI_Info_get_string(info, repeat('k', 300), &len, v, &flag), MPI_ERR_INFO_KEY, "MPI_MAX_INFO_KEY");
    CHECK_ERR(MPI_Info_delete(info, repeat('k', 300)), MPI_ERR_INFO_KEY, "MPI_MAX_INFO_KEY");
    CHECK_ERR(MPI_Info_delete(info, NULL), MPI_ERR_INFO_KEY, "null pointer");
    CHECK(MPI_Info_get_nkeys(info, &n) == MPI_SUCCESS && n == 1, "failed calls changed nothing");

    /* MPI_Info_get: at most valuelen bytes and a NUL; a longer value is cut, which is no error. */
    MPI_Info_set(info, "t", "abcdef");
    strcpy(v, "ZZZZZZZZ");
    flag = -1;
    if (on_madmpi())
        CHECK(MPI_Info_get(info, "t", 3, v, &flag) == MPI_SUCCESS, "MPI_Info_get cuts without error");
    else
        MPI_Info_get(info, "t", 3, v, &flag); /* MPICH: MPI_ERR_INFO_VALUE */
    CHECK(flag == 1 && strcmp(v, "abc") == 0, "MPI_Info_get with valuelen 3: \"%s\"", v);
    strcpy(v, "ZZZZZZZZ");
    if (on_madmpi())
        CHECK(MPI_Info_get(info, "t", 0, v, &flag) == MPI_SUCCESS && flag == 1 && v[0] == 0,
              "MPI_Info_get with valuelen 0: the empty string");
    CHECK(MPI_Info_get(info, "t", 6, v, &flag) == MPI_SUCCESS && flag == 1 && strcmp(v, "abcdef") == 0,
          "MPI_Info_get with valuelen equal to the length");
    CHECK_ERR(MPI_Info_get(info, "t", -1, v, &flag), MPI_ERR_ARG, "valuelen");
    CHECK_ERR(MPI_Info_get(info, "t", 5, NULL, &flag), MPI_ERR_ARG, "null pointer");
    CHECK_ERR(MPI_Info_get(info, "t", 5, v, NULL), MPI_ERR_ARG, "null pointer");

    /* MPI_Info_get_string: buflen in (room, NUL included) and out (length + 1). */
    strcpy(v, "ZZZZZZZZ");
    len = 4;
    CHECK(MPI_Info_get_string(info, "t", &len, v, &flag) == MPI_SUCCESS && flag == 1 && strcmp(v, "abc") == 0 &&
              len == 7,
          "MPI_Info_get_string with buflen 4: \"%s\", buflen %d", v, len);
    strcpy(v, "ZZZZZZZZ");
    len = 0;
    CHECK(MPI_Info_get_string(info, "t", &len, v, &flag) == MPI_SUCCESS && flag == 1 &&
              strcmp(v, "ZZZZZZZZ") == 0 && len == 7,
          "MPI_Info_get_string with buflen 0: value untouched, buflen %d", len);
    len = 7;
    CHECK(MPI_Info_get_string(info, "t", &len, v, &flag) == MPI_SUCCESS && strcmp(v, "abcdef") == 0 && len == 7,
          "MPI_Info_get_string with just enough room");
    if (on_madmpi()) {
        len = 0;
        CHECK(MPI_Info_get_string(info, "t", &len, NULL, &flag) == MPI_SUCCESS && len == 7,
              "MPI_Info_get_string(buflen 0, value NULL): the length only");
    }
    strcpy(v, "ZZZZZZZZ");
    len = 5;
    CHECK(MPI_Info_get_string(info, "zz", &len, v, &flag) == MPI_SUCCESS && flag == 0 && len == 5 &&
              strcmp(v, "ZZZZZZZZ") == 0,
          "MPI_Info_get_string of a key not set: flag false, buflen and value untouched");
    len = -1;
    CHECK_ERR(MPI_Info_get_string(info, "t", &len, v, &flag), MPI_ERR_ARG, "buflen");
    len = 5;
    CHECK_ERR(MPI_Info_get_string(info, "t", NULL, v, &flag), MPI_ERR_ARG, "null pointer");
    CHECK_ERR(MPI_Info_get_string(info, "t", &len, NULL, &flag), MPI_ERR_ARG, "null pointer");
    CHECK_ERR(MPI_Info_get_string(info, "t", &len, v, NULL), MPI_ERR_ARG, "null pointer");
    CHECK_ERR(MPI_Info_get_valuelen(info, "t", NULL, &flag), MPI_ERR_ARG, "null pointer");
    CHECK_ERR(MPI_Info_get_valuelen(info, "t", &len, NULL), MPI_ERR_ARG, "null pointer");
    MPI_Info_free(&info);
}

static void nthkey_dup_free_and_handles(void)
{
    MPI_Info a, b, freed, env = MPI_INFO_ENV;
    char key[MPI_MAX_INFO_KEY + 1];
    int n = -1, i, ok = 1;

    MPI_Info_create(&a);
    for (i = 0; i < KEYS; i++) {
        char k[16], v[16];
        sprintf(k, "key%02d", KEYS - 1 - i);
        sprintf(v, "%d", i);
        ok &= MPI_Info_set(a, k, v) == MPI_SUCCESS;
    }
    for (i = 0; i < KEYS; i++) {
        char k[16];
        sprintf(k, "key%02d", KEYS - 1 - i);
        ok &= MPI_Info_get_nthkey(a, i, key) == MPI_SUCCESS && strcmp(key, k) == 0;
    }
    CHECK(ok && MPI_Info_get_nkeys(a, &n) == MPI_SUCCESS && n == KEYS, "%d keys numbered in the order of setting", n);
    CHECK_ERR(MPI_Info_get_nthkey(a, KEYS, key), MPI_ERR_ARG, "no key number");
    CHECK_ERR(MPI_Info_get_nthkey(a, -1, key), MPI_ERR_ARG, "no key number");
    CHECK_ERR(MPI_Info_get_nthkey(a, 0, NULL), MPI_ERR_ARG, "null pointer");
    CHECK_ERR(MPI_Info_get_nkeys(a, NULL), MPI_ERR_ARG, "null pointer");

    CHECK(MPI_Info_dup(a, &b) == MPI_SUCCESS && b != a && b != MPI_INFO_NULL, "MPI_Info_dup");
    CHECK(strcmp(keys_of(a), keys_of(b)) == 0, "the duplicate has the same keys in the same order");
    MPI_Info_set(a, "key00", "changed");
    MPI_Info_delete(a, "key01");
    CHECK(has(b, "key00", "63") && has(b, "key01", "62") && MPI_Info_get_nkeys(b, &n) == MPI_SUCCESS && n == KEYS,
          "the duplicate does not change with the original");
    MPI_Info_free(&a);
    CHECK(has(b, "key00", "63"), "nor when it is freed");
    CHECK_ERR(MPI_Info_dup(b, NULL), MPI_ERR_ARG, "null pointer");
    freed = b;
    MPI_Info_free(&b);

    /* Handles that are no info object. */
    CHECK_ERR(MPI_Info_set((MPI_Info)0x12345, "k", "v"), MPI_ERR_INFO, "invalid info handle");
    CHECK_ERR(MPI_Info_get_nkeys((MPI_Info)0x12345, &n), MPI_ERR_INFO, "invalid info handle");
    CHECK_ERR_OURS(MPI_Info_set(MPI_INFO_NULL, "k", "v"), MPI_ERR_INFO, "MPI_INFO_NULL");
    CHECK_ERR_OURS(MPI_Info_get_nkeys(MPI_INFO_NULL, &n), MPI_ERR_INFO, "MPI_INFO_NULL");
    CHECK_ERR_OURS(MPI_Info_dup(MPI_INFO_NULL, &a), MPI_ERR_INFO, "MPI_INFO_NULL");
    b = MPI_INFO_NULL;
    CHECK_ERR_OURS(MPI_Info_free(&b), MPI_ERR_INFO, "MPI_INFO_NULL");
    CHECK_ERR(MPI_Info_free(NULL), MPI_ERR_ARG, "null pointer");
    CHECK_ERR(MPI_Info_create(NULL), MPI_ERR_ARG, "null pointer");
    if (on_madmpi()) {
        CHECK_ERR(MPI_Info_set(freed, "k", "v"), MPI_ERR_INFO, "invalid info handle");
        CHECK_ERR(MPI_Info_get_nkeys(freed, &n), MPI_ERR_INFO, "invalid info handle");
        CHECK_ERR(MPI_Info_free(&freed), MPI_ERR_INFO, "invalid info handle");
        CHECK_ERR(MPI_Info_set(MPI_INFO_ENV, "k", "v"), MPI_ERR_INFO, "MPI_INFO_ENV");
        CHECK_ERR(MPI_Info_delete(MPI_INFO_ENV, "arch"), MPI_ERR_INFO, "MPI_INFO_ENV");
        CHECK_ERR(MPI_Info_free(&env), MPI_ERR_INFO, "MPI_INFO_ENV");
        CHECK(env == MPI_INFO_ENV, "MPI_INFO_ENV stays");
    }
}

/* MPI_INFO_ENV and MPI_Info_create_env; `before` was made by MPI_Info_create_env before MPI_Init. */
static void environment(int argc, char **argv, MPI_Info before)
{
    MPI_Info env, mine;
    char name[MPI_MAX_PROCESSOR_NAME], cwd[4096], args[4096] = "", sz[16], *fake[] = {"prog", "two words", NULL};
    int n = -1, len, i;

    CHECK(MPI_Info_get_nkeys(MPI_INFO_ENV, &n) == MPI_SUCCESS, "MPI_Info_get_nkeys(MPI_INFO_ENV): %d keys", n);
    CHECK(MPI_Info_dup(MPI_INFO_ENV, &env) == MPI_SUCCESS, "MPI_Info_dup(MPI_INFO_ENV)");
    CHECK(MPI_Info_create_env(argc, argv, &mine) == MPI_SUCCESS, "MPI_Info_create_env(argc, argv)");
    CHECK(strcmp(keys_of(env), keys_of(mine)) == 0, "the same keys as MPI_INFO_ENV: %s", keys_of(env));
    if (!on_madmpi()) {
        MPI_Info_free(&env);
        MPI_Info_free(&mine);
        return; /* MPICH 4.0.2's MPI_INFO_ENV is empty */
    }
    for (i = 1; i < argc; i++) {
        if (i > 1)
            strcat(args, " ");
        strncat(args, argv[i], 256);
    }
    MPI_Get_processor_name(name, &len);
    CHECK(getcwd(cwd, sizeof cwd) != NULL, "getcwd");
    sprintf(sz, "%d", size);
    CHECK(strcmp(keys_of(env), "command,argv,maxprocs,host,arch,wdir,thread_level") == 0, "keys: %s", keys_of(env));
    CHECK(has(env, "command", argv[0]) && has(env, "argv", args), "command and argv: %s", argv[0]);
    CHECK(has(env, "maxprocs", sz) && has(env, "host", name) && has(env, "wdir", cwd), "maxprocs, host, wdir");
    CHECK(has(env, "thread_level", "MPI_THREAD_MULTIPLE") && !has(env, "arch", ""), "thread_level, arch");
    CHECK(has(before, "maxprocs", sz) && has(before, "command", argv[0]),
          "before MPI_Init: maxprocs from the launcher, the command");
    CHECK(MPI_Info_get_nkeys(before, &n) == MPI_SUCCESS && n == 6 && !has(before, "thread_level", "MPI_THREAD_MULTIPLE"),
          "before MPI_Init: no thread_level yet");
    MPI_Info_free(&mine);
    CHECK(MPI_Info_create_env(2, fake, &mine) == MPI_SUCCESS && has(mine, "command", "prog") &&
              has(mine, "argv", "two words") && has(mine, "maxprocs", sz),
          "MPI_Info_create_env with its own command line");
    MPI_Info_free(&mine);
    CHECK_ERR(MPI_Info_create_env(0, NULL, NULL), MPI_ERR_ARG, "null pointer");
    MPI_Info_free(&env);
}

/* A ring exchange over `c`. */
static void ring(MPI_Comm c, const char *what)
{
    int r, n, got = -1;
    MPI_Comm_rank(c, &r);
    MPI_Comm_size(c, &n);
    CHECK(MPI_Sendrecv(&r, 1, MPI_INT, (r + 1) % n, 9, &got, 1, MPI_INT, (r + n - 1) % n, 9, c,
                       MPI_STATUS_IGNORE) == MPI_SUCCESS &&
              got == (r + n - 1) % n,
          "%s: ring exchange", what);
}

/* Whether `c`'s hints are: no_any_tag, no_any_source, exact_length, allow_overtaking. */
static int hints_are(MPI_Comm c, int tag, int source, int exact, int overtaking)
{
    MPI_Info used;
    int ok;
    if (MPI_Comm_get_info(c, &used) != MPI_SUCCESS)
        return 0;
    ok = has(used, "mpi_assert_no_any_tag", tag ? "true" : "false") &&
         has(used, "mpi_assert_no_any_source", source ? "true" : "false") &&
         has(used, "mpi_assert_exact_length", exact ? "true" : "false") &&
         has(used, "mpi_assert_allow_overtaking", overtaking ? "true" : "false") && !has(used, "my_key", "x");
    MPI_Info_free(&used);
    return ok;
}

static void communicator_hints(void)
{
    MPI_Info info, freed;
    MPI_Comm d, e, s;

    CHECK(hints_are(MPI_COMM_WORLD, 0, 0, 0, 0) && hints_are(MPI_COMM_SELF, 0, 0, 0, 0),
          "MPI_Comm_get_info: the four assertions, false by default");
    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_no_any_tag", "true");
    MPI_Info_set(info, "my_key", "x");
    CHECK(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &d) == MPI_SUCCESS, "MPI_Comm_dup_with_info(an info)");
    MPI_Info_free(&info);
    CHECK(hints_are(d, 1, 0, 0, 0), "the duplicate has the hint given, not the unknown key");
    ring(d, "dup_with_info");

    MPI_Info_create(&info);
    MPI_Info_set(info, "mpi_assert_allow_overtaking", "true");
    CHECK(MPI_Comm_set_info(d, info) == MPI_SUCCESS && hints_are(d, 1, 0, 0, 1),
          "MPI_Comm_set_info adds a hint and keeps the others");
    MPI_Info_set(info, "mpi_assert_no_any_tag", "false");
    CHECK(MPI_Comm_set_info(d, info) == MPI_SUCCESS && hints_are(d, 0, 0, 0, 1), "... and sets one back to false");
    if (on_madmpi()) {
        MPI_Info_set(info, "mpi_assert_allow_overtaking", "maybe");
        CHECK(MPI_Comm_set_info(d, info) == MPI_SUCCESS && hints_are(d, 0, 0, 0, 1),
              "a value other than true/false is ignored");
        CHECK(MPI_Comm_set_info(d, MPI_INFO_NULL) == MPI_SUCCESS && hints_are(d, 0, 0, 0, 1),
              "MPI_Comm_set_info(MPI_INFO_NULL) changes nothing");
        CHECK(MPI_Comm_dup(d, &e) == MPI_SUCCESS && hints_are(e, 0, 0, 0, 1), "MPI_Comm_dup keeps the hints");
        ring(e, "dup of a hinted communicator");
        MPI_Comm_free(&e);
    }
    CHECK(MPI_Comm_dup_with_info(d, MPI_INFO_NULL, &e) == MPI_SUCCESS && hints_are(e, 0, 0, 0, 0),
          "MPI_Comm_dup_with_info(MPI_INFO_NULL): the defaults");
    MPI_Comm_free(&e);
    CHECK(MPI_Comm_dup_with_info(d, MPI_INFO_ENV, &e) == MPI_SUCCESS && hints_are(e, 0, 0, 0, 0),
          "MPI_Comm_dup_with_info(MPI_INFO_ENV): the defaults");
    MPI_Comm_free(&e);
    MPI_Info_set(info, "mpi_assert_exact_length", "true");
    MPI_Info_set(info, "mpi_assert_allow_overtaking", "false");
    CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, info, &s) == MPI_SUCCESS &&
              hints_are(s, 0, 0, 1, 0),
          "MPI_Comm_split_type takes its info's hints");
    ring(s, "split_type with info");
    MPI_Comm_free(&s);

    CHECK_ERR(MPI_Comm_set_info(d, (MPI_Info)0x12345), MPI_ERR_INFO, "invalid info handle");
    CHECK_ERR(MPI_Comm_get_info(d, NULL), MPI_ERR_ARG, "null pointer");
    CHECK_ERR(MPI_Comm_get_info(MPI_COMM_NULL, &freed), MPI_ERR_COMM, "communicator");
    CHECK_ERR(MPI_Comm_set_info(MPI_COMM_NULL, info), MPI_ERR_COMM, "communicator");
    e = MPI_COMM_WORLD;
    CHECK_ERR(MPI_Comm_dup_with_info(MPI_COMM_WORLD, (MPI_Info)0x12345, &e), MPI_ERR_INFO, "invalid info handle");
    if (on_madmpi()) /* MPICH leaves it untouched */
        CHECK(e == MPI_COMM_NULL, "a failed MPI_Comm_dup_with_info gives MPI_COMM_NULL");
    if (on_madmpi()) {
        MPI_Info gone;
        MPI_Info_dup(info, &freed);
        gone = freed;
        MPI_Info_free(&gone);
        CHECK_ERR(MPI_Comm_set_info(d, freed), MPI_ERR_INFO, "invalid info handle");
    }
    MPI_Info_free(&info);
    MPI_Comm_free(&d);
}

static MPI_Info shared_info;

/* Each thread fills, reads, duplicates and frees infos of its own, and on MadMPI also sets its
 * own keys in one shared info. */
static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg, r, i, n, ok = 1;
    char k[32], v[32], got[32];
    MPI_Info mine, copy;

    for (r = 0; r < 20; r++) {
        ok &= MPI_Info_create(&mine) == MPI_SUCCESS;
        for (i = 0; i < KEYS; i++) {
            sprintf(k, "t%d.%d", t, i);
            sprintf(v, "%d.%d", r, i);
            ok &= MPI_Info_set(mine, k, v) == MPI_SUCCESS;
            if (on_madmpi() && r == 0)
                ok &= MPI_Info_set(shared_info, k, v) == MPI_SUCCESS;
        }
        ok &= MPI_Info_dup(mine, &copy) == MPI_SUCCESS && MPI_Info_free(&mine) == MPI_SUCCESS;
        for (i = 0; i < KEYS; i++) {
            sprintf(k, "t%d.%d", t, i);
            sprintf(v, "%d.%d", r, i);
            ok &= MPI_Info_get_nthkey(copy, i, got) == MPI_SUCCESS && strcmp(got, k) == 0 && has(copy, k, v);
        }
        ok &= MPI_Info_get_nkeys(copy, &n) == MPI_SUCCESS && n == KEYS && MPI_Info_free(&copy) == MPI_SUCCESS;
    }
    return (void *)(intptr_t)ok;
}

static void threads(void)
{
    pthread_t th[THREADS];
    int t, ok = 1, n = -1;
    void *res;

    MPI_Info_create(&shared_info);
    for (t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (t = 0; t < THREADS; t++) {
        pthread_join(th[t], &res);
        ok &= (int)(intptr_t)res;
    }
    CHECK(ok, "%d threads create, fill, read, duplicate and free info objects at once", THREADS);
    if (on_madmpi())
        CHECK(MPI_Info_get_nkeys(shared_info, &n) == MPI_SUCCESS && n == THREADS * KEYS && has(shared_info, "t3.63", "0.63"),
              "... and fill one shared info: %d keys", n);
    MPI_Info_free(&shared_info);
}

int main(int argc, char **argv)
{
    MPI_Info early, env_before, after;
    int provided, early_ok, n = -1;

    /* Before MPI_Init (MPI 4.0): create, set, read; the error handlers are not set yet. */
    early_ok = MPI_Info_create(&early) == MPI_SUCCESS && MPI_Info_set(early, "phase", "before") == MPI_SUCCESS &&
               has(early, "phase", "before") && MPI_Info_create_env(0, NULL, &env_before) == MPI_SUCCESS;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
    CHECK(provided == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE");
    CHECK(early_ok && has(early, "phase", "before"), "info objects made before MPI_Init work after it");

    create_set_get_delete();
    limits_and_truncation();
    nthkey_dup_free_and_handles();
    environment(argc, argv, env_before);
    communicator_hints();
    threads();
    MPI_Info_set(early, "phase", "during");
    MPI_Info_free(&env_before);

    MPI_Finalize();
    /* After MPI_Finalize (MPI 4.0): still usable, and new ones can be made. */
    CHECK(has(early, "phase", "during") && MPI_Info_set(early, "phase", "after") == MPI_SUCCESS &&
              has(early, "phase", "after") && MPI_Info_free(&early) == MPI_SUCCESS,
          "an info object outlives MPI_Finalize");
    CHECK(MPI_Info_create(&after) == MPI_SUCCESS && MPI_Info_set(after, "k", "v") == MPI_SUCCESS &&
              MPI_Info_get_nkeys(after, &n) == MPI_SUCCESS && n == 1 && MPI_Info_free(&after) == MPI_SUCCESS,
          "info objects made after MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
