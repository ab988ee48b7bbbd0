/* The tools information interface (MPI_T, MPI 4.0 ch. 15). Run with 2 processes.
 *
 * On any library (MPICH's too): MPI_T before MPI_Init and after MPI_Finalize, reference-counted
 * MPI_T_init_thread/MPI_T_finalize, every control variable, performance variable, category,
 * event type and source listed with its info and found again by name, the string rules of
 * §15.3.3 (length query, truncation), index, name, handle and session errors, sessions and
 * MPI_T_PVAR_ALL_HANDLES.
 * On MadMPI's library only (our variable names): the settings of the stack are there with their
 * scopes, PIOMAN_POLICY written at run time is the policy pioman runs, a collective choice
 * written is what the next collective uses, pioman's and nmad's counters move across a message
 * exchange and stay still while nothing happens, a per-communicator level counts an unexpected
 * message, and events reach a callback (with their elements, timestamp and source) and the free
 * callback runs. */
#include "check.h"
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static int ours;

static int type_size(MPI_Datatype t)
{
    if (t == MPI_INT || t == MPI_UNSIGNED)
        return 4;
    if (t == MPI_UNSIGNED_LONG || t == MPI_UNSIGNED_LONG_LONG || t == MPI_DOUBLE || t == MPI_LONG ||
        t == MPI_LONG_LONG || t == MPI_COUNT || t == MPI_AINT)
        return 8;
    if (t == MPI_CHAR)
        return 1;
    return -1;
}

/* Checks the string rules on a name: a length query, a cut copy, a whole copy. */
static void check_string_rules(const char *what, int idx,
                               int (*get)(int idx, char *name, int *len))
{
    char full[512], cut[4];
    int need = 0, len = 0;
    CHECK(get(idx, NULL, &need) == MPI_SUCCESS && need >= 1, "%s %d: length query gives %d", what, idx, need);
    len = 0;
    CHECK(get(idx, full, &len) == MPI_SUCCESS && len == need, "%s %d: a length of 0 is a query", what, idx);
    len = (int)sizeof full;
    CHECK(get(idx, full, &len) == MPI_SUCCESS && len == need && (int)strlen(full) + 1 == need,
          "%s %d: whole name \"%s\" of %d bytes with its NUL", what, idx, full, len);
    len = (int)sizeof cut;
    memset(cut, 'x', sizeof cut);
    CHECK(get(idx, cut, &len) == MPI_SUCCESS && (int)strlen(cut) == (need < 4 ? need - 1 : 3) &&
              strncmp(cut, full, strlen(cut)) == 0 && len == (int)strlen(cut) + 1,
          "%s %d: cut to \"%s\", length %d", what, idx, cut, len);
    CHECK(get(idx, full, NULL) == MPI_SUCCESS, "%s %d: a null length returns nothing", what, idx);
}

static int cvar_name(int i, char *n, int *l)
{
    return MPI_T_cvar_get_info(i, n, l, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
}
static int pvar_name(int i, char *n, int *l)
{
    return MPI_T_pvar_get_info(i, n, l, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
}
static int cat_name(int i, char *n, int *l)
{
    return MPI_T_category_get_info(i, n, l, NULL, NULL, NULL, NULL, NULL);
}
static int event_name(int i, char *n, int *l)
{
    return MPI_T_event_get_info(i, n, l, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
}
static int source_name(int i, char *n, int *l)
{
    return MPI_T_source_get_info(i, n, l, NULL, NULL, NULL, NULL, NULL, NULL);
}

static void list_cvars(int verbose)
{
    int num = -1;
    CHECK(MPI_T_cvar_get_num(&num) == MPI_SUCCESS && num >= 0, "%d control variables", num);
    for (int i = 0; i < num; i++) {
        char name[256], desc[1024];
        int nl = sizeof name, dl = sizeof desc, verb, bind, scope, idx = -1;
        MPI_Datatype dt;
        MPI_T_enum en;
        CHECK(MPI_T_cvar_get_info(i, name, &nl, &verb, &dt, &en, desc, &dl, &bind, &scope) == MPI_SUCCESS,
              "cvar %d info", i);
        CHECK(type_size(dt) > 0 && verb >= MPI_T_VERBOSITY_USER_BASIC && verb <= MPI_T_VERBOSITY_MPIDEV_ALL &&
                  scope >= MPI_T_SCOPE_CONSTANT && scope <= MPI_T_SCOPE_ALL_EQ && bind >= MPI_T_BIND_NO_OBJECT &&
                  bind <= MPI_T_BIND_MPI_INFO,
              "cvar %s: a known type, verbosity, scope, binding", name);
        CHECK(MPI_T_cvar_get_index(name, &idx) == MPI_SUCCESS && idx == i, "cvar %s found by name", name);
        if (en != MPI_T_ENUM_NULL) {
            int items = -1, el = 0;
            char ename[128], iname[128];
            CHECK(MPI_T_enum_get_info(en, &items, NULL, &el) == MPI_SUCCESS && items > 0 && el > 1,
                  "cvar %s: enumeration of %d items", name, items);
            el = sizeof ename;
            MPI_T_enum_get_info(en, &items, ename, &el);
            for (int k = 0; k < items; k++) {
                int v, il = sizeof iname;
                CHECK(MPI_T_enum_get_item(en, k, &v, iname, &il) == MPI_SUCCESS && il == (int)strlen(iname) + 1,
                      "enum %s item %d: %s = %d", ename, k, iname, v);
            }
            int v, il = sizeof iname;
            CHECK(MPI_T_enum_get_item(en, items, &v, iname, &il) == MPI_T_ERR_INVALID_INDEX,
                  "enum %s: item %d is out of range", ename, items);
        }
        if (verbose)
            printf("cvar %s (scope %d): %s\n", name, scope - MPI_T_SCOPE_CONSTANT, desc);
    }
    if (num > 0)
        check_string_rules("cvar", num - 1, cvar_name);
    CHECK(MPI_T_cvar_get_info(num, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) == MPI_T_ERR_INVALID_INDEX,
          "cvar %d is out of range", num);
    int idx;
    CHECK(MPI_T_cvar_get_index("no such variable", &idx) == MPI_T_ERR_INVALID_NAME, "unknown cvar name");
}

static void list_pvars(int verbose)
{
    int num = -1;
    CHECK(MPI_T_pvar_get_num(&num) == MPI_SUCCESS && num >= 0, "%d performance variables", num);
    for (int i = 0; i < num; i++) {
        char name[256], desc[1024];
        int nl = sizeof name, dl = sizeof desc, verb, cls, bind, ro, cont, atomic, idx = -1;
        MPI_Datatype dt;
        MPI_T_enum en;
        CHECK(MPI_T_pvar_get_info(i, name, &nl, &verb, &cls, &dt, &en, desc, &dl, &bind, &ro, &cont, &atomic) ==
                  MPI_SUCCESS,
              "pvar %d info", i);
        CHECK(type_size(dt) > 0 && cls >= MPI_T_PVAR_CLASS_STATE && cls <= MPI_T_PVAR_CLASS_GENERIC,
              "pvar %s: a known type and class", name);
        CHECK(MPI_T_pvar_get_index(name, cls, &idx) == MPI_SUCCESS && idx == i, "pvar %s found by name and class",
              name);
        if (verbose)
            printf("pvar %s (class %d, readonly %d, continuous %d): %s\n", name, cls - MPI_T_PVAR_CLASS_STATE, ro,
                   cont, desc);
    }
    if (num > 0)
        check_string_rules("pvar", num - 1, pvar_name);
    int idx;
    CHECK(MPI_T_pvar_get_index("no such variable", MPI_T_PVAR_CLASS_COUNTER, &idx) == MPI_T_ERR_INVALID_NAME,
          "unknown pvar name");
    if (on_madmpi()) /* MPICH 4.0.2 (without performance variables) crashes here */
        CHECK(MPI_T_pvar_get_info(num, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) ==
                  MPI_T_ERR_INVALID_INDEX,
              "pvar %d is out of range", num);
}

static void list_categories(int verbose)
{
    int num = -1, cvars, pvars, cats, events = 0, upd = -1;
    CHECK(MPI_T_category_get_num(&num) == MPI_SUCCESS && num >= 0, "%d categories", num);
    int ncv, npv, nev;
    MPI_T_cvar_get_num(&ncv);
    MPI_T_pvar_get_num(&npv);
    MPI_T_event_get_num(&nev);
    for (int i = 0; i < num; i++) {
        char name[256];
        int nl = sizeof name, idx = -1;
        CHECK(MPI_T_category_get_info(i, name, &nl, NULL, NULL, &cvars, &pvars, &cats) == MPI_SUCCESS,
              "category %d info", i);
        CHECK(MPI_T_category_get_num_events(i, &events) == MPI_SUCCESS, "category %s: %d events", name, events);
        CHECK(MPI_T_category_get_index(name, &idx) == MPI_SUCCESS && idx == i, "category %s found by name", name);
        int list[512];
        CHECK(cvars <= 512 && pvars <= 512 && cats <= 512 && events <= 512, "category %s fits the test", name);
        MPI_T_category_get_cvars(i, cvars, list);
        for (int k = 0; k < cvars; k++)
            CHECK(list[k] >= 0 && list[k] < ncv, "category %s: cvar %d", name, list[k]);
        MPI_T_category_get_pvars(i, pvars, list);
        for (int k = 0; k < pvars; k++)
            CHECK(list[k] >= 0 && list[k] < npv, "category %s: pvar %d", name, list[k]);
        MPI_T_category_get_categories(i, cats, list);
        for (int k = 0; k < cats; k++)
            CHECK(list[k] >= 0 && list[k] < num && list[k] != i, "category %s: subcategory %d", name, list[k]);
        MPI_T_category_get_events(i, events, list);
        for (int k = 0; k < events; k++)
            CHECK(list[k] >= 0 && list[k] < nev, "category %s: event %d", name, list[k]);
        if (verbose)
            printf("category %s: %d cvars, %d pvars, %d subcategories, %d events\n", name, cvars, pvars, cats, events);
    }
    if (num > 0)
        check_string_rules("category", num - 1, cat_name);
    CHECK(MPI_T_category_changed(&upd) == MPI_SUCCESS, "category update number %d", upd);
    CHECK(MPI_T_category_get_cvars(num, 0, NULL) == MPI_T_ERR_INVALID_INDEX, "category %d is out of range", num);
}

static void list_events(int verbose)
{
    int num = -1, nsrc = -1;
    CHECK(MPI_T_event_get_num(&num) == MPI_SUCCESS && num >= 0, "%d event types", num);
    for (int i = 0; i < num; i++) {
        char name[256];
        int nl = sizeof name, verb, n = 8, bind, idx = -1;
        MPI_Datatype types[8];
        MPI_Aint displs[8];
        MPI_T_enum en;
        MPI_Info info = MPI_INFO_NULL;
        CHECK(MPI_T_event_get_info(i, name, &nl, &verb, types, displs, &n, &en, &info, NULL, NULL, &bind) ==
                  MPI_SUCCESS,
              "event %d info", i);
        for (int k = 0; k < n && k < 8; k++)
            CHECK(type_size(types[k]) > 0 && displs[k] >= 0, "event %s element %d", name, k);
        CHECK(MPI_T_event_get_index(name, &idx) == MPI_SUCCESS && idx == i, "event %s found by name", name);
        if (info != MPI_INFO_NULL)
            MPI_Info_free(&info);
        if (verbose)
            printf("event %s: %d elements\n", name, n);
    }
    if (num > 0)
        check_string_rules("event", num - 1, event_name);
    CHECK(MPI_T_source_get_num(&nsrc) == MPI_SUCCESS && nsrc >= 0, "%d event sources", nsrc);
    for (int i = 0; i < nsrc; i++) {
        MPI_T_source_order order;
        MPI_Count tps = 0, max = 0, t1 = 0, t2 = 0;
        CHECK(MPI_T_source_get_info(i, NULL, NULL, NULL, NULL, &order, &tps, &max, NULL) == MPI_SUCCESS && tps > 0 &&
                  max > 0,
              "source %d: %lld ticks per second", i, (long long)tps);
        CHECK(MPI_T_source_get_timestamp(i, &t1) == MPI_SUCCESS && MPI_T_source_get_timestamp(i, &t2) == MPI_SUCCESS &&
                  t2 >= t1,
              "source %d: time goes forward", i);
        check_string_rules("source", i, source_name);
    }
}

static void list_everything(int verbose)
{
    list_cvars(verbose);
    list_pvars(verbose);
    list_categories(verbose);
    list_events(verbose);
}

/* ---------------------------------------------------------------- MadMPI's variables */

static int cvar_index(const char *name)
{
    int i = -1;
    CHECK(MPI_T_cvar_get_index(name, &i) == MPI_SUCCESS, "cvar %s exists", name);
    return i;
}

static int cvar_read_int(const char *name)
{
    MPI_T_cvar_handle h;
    int count = 0, v = -1;
    CHECK(MPI_T_cvar_handle_alloc(cvar_index(name), NULL, &h, &count) == MPI_SUCCESS && count == 1,
          "handle of %s", name);
    CHECK(MPI_T_cvar_read(h, &v) == MPI_SUCCESS, "read %s = %d", name, v);
    CHECK(MPI_T_cvar_handle_free(&h) == MPI_SUCCESS && h == MPI_T_CVAR_HANDLE_NULL, "free %s's handle", name);
    return v;
}

static int cvar_write_int(const char *name, int v)
{
    MPI_T_cvar_handle h;
    int count = 0;
    MPI_T_cvar_handle_alloc(cvar_index(name), NULL, &h, &count);
    int rc = MPI_T_cvar_write(h, &v);
    MPI_T_cvar_handle_free(&h);
    return rc;
}

/* The value of item `item` of the enumeration of cvar `name`. */
static int enum_value(const char *name, const char *item)
{
    MPI_T_enum en;
    int items = 0, nl = 0;
    MPI_T_cvar_get_info(cvar_index(name), NULL, NULL, NULL, NULL, &en, NULL, NULL, NULL, NULL);
    CHECK(en != MPI_T_ENUM_NULL && MPI_T_enum_get_info(en, &items, NULL, &nl) == MPI_SUCCESS, "%s is an enumeration",
          name);
    for (int k = 0; k < items; k++) {
        char s[128];
        int v, l = sizeof s;
        MPI_T_enum_get_item(en, k, &v, s, &l);
        if (strcmp(s, item) == 0)
            return v;
    }
    CHECK(0, "%s has no item %s", name, item);
    return -1;
}

static void check_settings(void)
{
    const char *vars[] = {"MARCEL_LWPS", "MARCEL_STACK_SIZE", "PIOMAN_POLICY", "PIOMAN_TICK_US", "PIOMAN_SPIN_US",
                          "PIOMAN_THREADS", "NMAD_DRIVERS", "NMAD_STRATEGY", "NMAD_EAGER_LIMIT",
                          "NMAD_UNEXPECTED_BUDGET", "NMAD_RDV_SLOTS", "NMAD_SHM_RING", "MADMPI_COLL_BCAST",
                          "MADMPI_COLL_HIERARCHICAL", "MADMPI_COLL_TRACE"};
    for (unsigned k = 0; k < sizeof vars / sizeof *vars; k++)
        cvar_index(vars[k]);
    int scope;
    MPI_T_cvar_get_info(cvar_index("PIOMAN_TICK_US"), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &scope);
    CHECK(scope == MPI_T_SCOPE_READONLY, "PIOMAN_TICK_US is read-only");
    CHECK(cvar_write_int("PIOMAN_TICK_US", 500) == MPI_T_ERR_CVAR_SET_NEVER, "PIOMAN_TICK_US cannot be written");
    MPI_T_cvar_get_info(cvar_index("MADMPI_COLL_BCAST"), NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, &scope);
    CHECK(scope == MPI_T_SCOPE_ALL_EQ, "a collective choice has the same value on every process");
    const char *tick = getenv("PIOMAN_TICK_US");
    CHECK(cvar_read_int("PIOMAN_TICK_US") == (tick ? atoi(tick) : 1000), "PIOMAN_TICK_US: the value in force");
}

/* The state variable pioman_policy, read through a handle of its own session. */
static int policy_state(void)
{
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    int idx = -1, count = 0, v = -2;
    CHECK(MPI_T_pvar_get_index("pioman_policy", MPI_T_PVAR_CLASS_STATE, &idx) == MPI_SUCCESS, "pvar pioman_policy");
    MPI_T_pvar_session_create(&s);
    MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &count);
    CHECK(MPI_T_pvar_read(s, h, &v) == MPI_SUCCESS, "pioman_policy = %d", v);
    MPI_T_pvar_session_free(&s);
    return v;
}

static void check_policy_switch(void)
{
    int before = cvar_read_int("PIOMAN_POLICY");
    int block = enum_value("PIOMAN_POLICY", "block");
    int poll = enum_value("PIOMAN_POLICY", "poll");
    int other = before == block ? poll : block;
    CHECK(cvar_write_int("PIOMAN_POLICY", other) == MPI_SUCCESS, "PIOMAN_POLICY written");
    CHECK(cvar_read_int("PIOMAN_POLICY") == other && policy_state() == other, "pioman runs the policy written");
    int x = check_rank, y = -1;
    MPI_Allreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    CHECK(y == 1, "communication goes on under the new policy");
    CHECK(cvar_write_int("PIOMAN_POLICY", 1000) == MPI_T_ERR_INVALID, "a value outside the enumeration");
    CHECK(cvar_write_int("PIOMAN_POLICY", before) == MPI_SUCCESS && cvar_read_int("PIOMAN_POLICY") == before,
          "policy restored");
}

static void check_coll_choice(void)
{
    int ring = enum_value("MADMPI_COLL_BCAST", "scatter_ring");
    int before = cvar_read_int("MADMPI_COLL_BCAST");
    CHECK(cvar_write_int("MADMPI_COLL_BCAST", ring) == MPI_SUCCESS, "every rank forces scatter_ring");
    CHECK(cvar_read_int("MADMPI_COLL_BCAST") == ring, "the choice in force is scatter_ring");
    int buf[1000];
    for (int k = 0; k < 1000; k++)
        buf[k] = check_rank == 0 ? k * 7 : -1;
    MPI_Bcast(buf, 1000, MPI_INT, 0, MPI_COMM_WORLD);
    int ok = 1;
    for (int k = 0; k < 1000; k++)
        ok &= buf[k] == k * 7;
    CHECK(ok, "a bcast with the forced algorithm delivers the data");
    CHECK(cvar_write_int("MADMPI_COLL_BCAST", enum_value("MADMPI_COLL_BCAST", "auto")) == MPI_SUCCESS &&
              cvar_read_int("MADMPI_COLL_BCAST") == 0,
          "auto (item 0): chosen by size again");
    CHECK(cvar_write_int("MADMPI_COLL_BCAST", before) == MPI_SUCCESS, "the environment's choice restored");
}

struct pv {
    const char *name;
    int cls;
    MPI_T_pvar_handle h;
    int is_double;
};

static double pv_read(MPI_T_pvar_session s, struct pv *p)
{
    if (p->is_double) {
        double d = -1;
        CHECK(MPI_T_pvar_read(s, p->h, &d) == MPI_SUCCESS, "read %s", p->name);
        return d;
    }
    unsigned long long v = 0;
    CHECK(MPI_T_pvar_read(s, p->h, &v) == MPI_SUCCESS, "read %s", p->name);
    return (double)v;
}

static void pv_alloc(MPI_T_pvar_session s, struct pv *p, void *obj)
{
    int idx = -1, count = 0;
    MPI_Datatype dt;
    CHECK(MPI_T_pvar_get_index(p->name, p->cls, &idx) == MPI_SUCCESS, "pvar %s exists", p->name);
    MPI_T_pvar_get_info(idx, NULL, NULL, NULL, NULL, &dt, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
    p->is_double = dt == MPI_DOUBLE;
    CHECK(MPI_T_pvar_handle_alloc(s, idx, obj, &p->h, &count) == MPI_SUCCESS && count == 1, "handle of %s", p->name);
}

enum { POLLS, USEFUL, EAGER, RDV, UNEXP, DRV_IN_SHM, DRV_IN_TCP, DRV_IN_UDP, PACKETS, COMM_LEVEL, NPV };

static void check_counters(void)
{
    MPI_T_pvar_session s;
    CHECK(MPI_T_pvar_session_create(&s) == MPI_SUCCESS, "session");
    struct pv p[NPV] = {
        {"pioman_polls", MPI_T_PVAR_CLASS_COUNTER, 0, 0},
        {"pioman_useful_polls", MPI_T_PVAR_CLASS_COUNTER, 0, 0},
        {"nmad_eager_sent", MPI_T_PVAR_CLASS_COUNTER, 0, 0},
        {"nmad_rendezvous_sent", MPI_T_PVAR_CLASS_COUNTER, 0, 0},
        {"nmad_unexpected_messages", MPI_T_PVAR_CLASS_COUNTER, 0, 0},
        {"nmad_shm_bytes_received", MPI_T_PVAR_CLASS_COUNTER, 0, 0},
        {"nmad_tcp_bytes_received", MPI_T_PVAR_CLASS_COUNTER, 0, 0},
        {"nmad_udp_bytes_received", MPI_T_PVAR_CLASS_COUNTER, 0, 0},
        {"nmad_packets_sent", MPI_T_PVAR_CLASS_COUNTER, 0, 0},
        {"madmpi_comm_unexpected_messages", MPI_T_PVAR_CLASS_LEVEL, 0, 0},
    };
    MPI_Comm world = MPI_COMM_WORLD;
    for (int k = 0; k < NPV; k++)
        pv_alloc(s, &p[k], k == COMM_LEVEL ? (void *)&world : NULL);
    CHECK(MPI_T_pvar_start(s, p[COMM_LEVEL].h) == MPI_T_ERR_PVAR_NO_STARTSTOP, "a level is continuous");
    CHECK(pv_read(s, &p[EAGER]) == 0, "a counter handle reads 0 before it starts");
    CHECK(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS, "start every handle of the session");
    MPI_Barrier(MPI_COMM_WORLD);

    /* Nothing sent: the send counters stand still. */
    double e0 = pv_read(s, &p[EAGER]), k0 = pv_read(s, &p[PACKETS]);
    usleep(50000);
    CHECK(pv_read(s, &p[EAGER]) == e0 && pv_read(s, &p[PACKETS]) == k0,
          "no message sent in 50 ms: eager sends and packets stay at %.0f and %.0f", e0, k0);

    /* An exchange: 10 small messages and one of 1 MiB each way. */
    static char big[1 << 20];
    int peer = 1 - check_rank, r = 0;
    for (int k = 0; k < 10; k++)
        MPI_Sendrecv(&k, 1, MPI_INT, peer, 1, &r, 1, MPI_INT, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Sendrecv_replace(big, sizeof big, MPI_CHAR, peer, 2, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double eager = pv_read(s, &p[EAGER]), rdv = pv_read(s, &p[RDV]);
    double bytes = pv_read(s, &p[DRV_IN_SHM]) + pv_read(s, &p[DRV_IN_TCP]) + pv_read(s, &p[DRV_IN_UDP]);
    CHECK(eager >= 10, "eager sends counted: %.0f", eager);
    CHECK(rdv >= 1, "the 1 MiB message went by rendezvous: %.0f", rdv);
    CHECK(bytes >= (double)sizeof big, "the drivers brought in %.0f bytes", bytes);
    CHECK(pv_read(s, &p[POLLS]) > 0 && pv_read(s, &p[USEFUL]) > 0, "pioman polled, usefully");

    /* readreset and stop. */
    unsigned long long v = 99;
    CHECK(MPI_T_pvar_readreset(s, p[EAGER].h, &v) == MPI_SUCCESS && (double)v == eager, "readreset gives %llu", v);
    CHECK(pv_read(s, &p[EAGER]) == 0, "and the handle starts again from 0");
    CHECK(MPI_T_pvar_stop(s, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS, "stop every handle");
    double stopped = pv_read(s, &p[PACKETS]);
    MPI_Sendrecv(&r, 1, MPI_INT, peer, 3, &r, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    CHECK(pv_read(s, &p[PACKETS]) == stopped, "a stopped handle keeps its value while packets go");
    unsigned long long w = 5;
    CHECK(MPI_T_pvar_write(s, p[PACKETS].h, &w) == MPI_SUCCESS && pv_read(s, &p[PACKETS]) == 5, "written 5");
    CHECK(MPI_T_pvar_write(s, p[COMM_LEVEL].h, &w) == MPI_T_ERR_PVAR_NO_WRITE, "a level cannot be written");

    /* An unexpected message: rank 1 sends before rank 0 receives. */
    MPI_T_pvar_start(s, p[UNEXP].h);
    MPI_T_pvar_reset(s, p[UNEXP].h);
    int msg = 42, flag = 0;
    /* Rank 1 sends once rank 0 has read the counter: nothing else comes in meanwhile. */
    double u0 = pv_read(s, &p[UNEXP]);
    if (check_rank == 1) {
        MPI_Recv(&msg, 1, MPI_INT, 0, 8, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&msg, 1, MPI_INT, 0, 9, MPI_COMM_WORLD);
    }
    if (check_rank == 0) {
        MPI_Send(&msg, 1, MPI_INT, 1, 8, MPI_COMM_WORLD);
        while (!flag)
            MPI_Iprobe(1, 9, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        double level = pv_read(s, &p[COMM_LEVEL]);
        CHECK(level == 1, "one message waits unmatched on MPI_COMM_WORLD: %.0f", level);
        double u1 = pv_read(s, &p[UNEXP]);
        CHECK(u1 == u0 + 1, "nmad counted it as unexpected: %.0f then %.0f", u0, u1);
        MPI_Recv(&msg, 1, MPI_INT, 1, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        CHECK(pv_read(s, &p[COMM_LEVEL]) == 0, "none once received");
        MPI_Send(&msg, 1, MPI_INT, 1, 11, MPI_COMM_WORLD);
    } else {
        /* Nothing more leaves rank 1 (a collective's message would wait unmatched too) until
         * rank 0 has looked. */
        MPI_Recv(&msg, 1, MPI_INT, 0, 11, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    for (int k = 0; k < NPV; k++)
        CHECK(MPI_T_pvar_handle_free(s, &p[k].h) == MPI_SUCCESS && p[k].h == MPI_T_PVAR_HANDLE_NULL, "free %s",
              p[k].name);
    CHECK(MPI_T_pvar_session_free(&s) == MPI_SUCCESS && s == MPI_T_PVAR_SESSION_NULL, "session freed");
}

/* ---------------------------------------------------------------- events */

static volatile int seen, freed, bad;
static volatile int seen_ours; /* the 100-byte message of check_events */

static void on_event(MPI_T_event_instance inst, MPI_T_event_registration reg, MPI_T_cb_safety level, void *user)
{
    (void)reg;
    unsigned long long bytes = 0;
    MPI_Count t = 0;
    int src = -1;
    unsigned char copy[64];
    if (user != (void *)&seen || level != MPI_T_CB_REQUIRE_THREAD_SAFE ||
        MPI_T_event_read(inst, 3, &bytes) != MPI_SUCCESS || MPI_T_event_get_timestamp(inst, &t) != MPI_SUCCESS ||
        MPI_T_event_get_source(inst, &src) != MPI_SUCCESS || MPI_T_event_copy(inst, copy) != MPI_SUCCESS ||
        memcmp(copy + 16, &bytes, 8) != 0 || t <= 0 || MPI_T_event_read(inst, 4, &bytes) != MPI_T_ERR_INVALID_INDEX)
        bad++;
    unsigned from = 99;
    MPI_T_event_read(inst, 1, &from);
    /* Collective messages arrive unexpected too (with no payload): look for ours. */
    if (bytes == 100 && from == 1)
        seen_ours = 1;
    seen++;
}

static void on_free(MPI_T_event_registration reg, MPI_T_cb_safety level, void *user)
{
    (void)reg;
    (void)level;
    if (user == (void *)&freed)
        freed++;
}

static void check_events(void)
{
    int idx = -1;
    MPI_T_event_registration reg;
    CHECK(MPI_T_event_get_index("nmad_unexpected_message", &idx) == MPI_SUCCESS, "event nmad_unexpected_message");
    CHECK(MPI_T_event_handle_alloc(idx, NULL, MPI_INFO_NULL, &reg) == MPI_SUCCESS, "registration");
    CHECK(MPI_T_event_register_callback(reg, MPI_T_CB_REQUIRE_THREAD_SAFE, MPI_INFO_NULL, (void *)&seen, on_event) ==
              MPI_SUCCESS,
          "callback registered");
    MPI_Info used;
    CHECK(MPI_T_event_handle_get_info(reg, &used) == MPI_SUCCESS && used != MPI_INFO_NULL, "info used");
    MPI_Info_free(&used);
    MPI_T_event_instance none = (MPI_T_event_instance)&idx;
    MPI_Count t;
    CHECK(MPI_T_event_get_timestamp(none, &t) == MPI_T_ERR_INVALID_HANDLE, "no instance outside a callback");
    MPI_Barrier(MPI_COMM_WORLD);
    char msg[100] = {0};
    if (check_rank == 1)
        MPI_Send(msg, 100, MPI_CHAR, 0, 10, MPI_COMM_WORLD);
    MPI_Barrier(MPI_COMM_WORLD);
    if (check_rank == 0) {
        /* Delivery runs from pioman's polls: a thread waiting in MPI drives it. */
        for (int k = 0; k < 5000 && !seen_ours; k++) {
            int flag;
            MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            usleep(1000);
        }
        CHECK(seen >= 1 && !bad, "the callback got the event with its elements, timestamp and source (%d)", seen);
        CHECK(seen_ours, "an event says 100 bytes arrived from rank 1");
        MPI_Recv(msg, 100, MPI_CHAR, 1, 10, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    CHECK(MPI_T_event_handle_free(reg, (void *)&freed, on_free) == MPI_SUCCESS, "registration freed");
    for (int k = 0; k < 1000 && !freed; k++)
        usleep(1000);
    CHECK(freed == 1, "the free callback ran once");
    CHECK(MPI_T_event_handle_free(reg, NULL, NULL) == MPI_T_ERR_INVALID_HANDLE, "a freed registration is invalid");
    MPI_Barrier(MPI_COMM_WORLD);
}

static volatile int woke_events;

static void on_wait_end(MPI_T_event_instance inst, MPI_T_event_registration reg, MPI_T_cb_safety level, void *user)
{
    (void)reg;
    (void)level;
    (void)user;
    unsigned long long slept = 0;
    if (MPI_T_event_read(inst, 2, &slept) == MPI_SUCCESS)
        woke_events++;
}

/* Under the block policy a receive waiting for a late message sleeps in pioman's blocking wait:
 * the blocking-wait pvar moves and the wait's end reaches a callback. */
static void check_blocking_waits(void)
{
    int idx = -1, count = 0, before = cvar_read_int("PIOMAN_POLICY"), msg = 0;
    MPI_T_event_registration reg;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    unsigned long long waits = 0;
    CHECK(MPI_T_event_get_index("pioman_blocking_wait_end", &idx) == MPI_SUCCESS, "event pioman_blocking_wait_end");
    MPI_T_event_handle_alloc(idx, NULL, MPI_INFO_NULL, &reg);
    MPI_T_event_register_callback(reg, MPI_T_CB_REQUIRE_ASYNC_SIGNAL_SAFE, MPI_INFO_NULL, NULL, on_wait_end);
    MPI_T_pvar_session_create(&s);
    MPI_T_pvar_get_index("pioman_blocking_waits", MPI_T_PVAR_CLASS_COUNTER, &idx);
    MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &count);
    MPI_T_pvar_start(s, h);
    CHECK(cvar_write_int("PIOMAN_POLICY", enum_value("PIOMAN_POLICY", "block")) == MPI_SUCCESS, "policy block");
    MPI_Barrier(MPI_COMM_WORLD);
    if (check_rank == 1) {
        usleep(100000);
        MPI_Send(&msg, 1, MPI_INT, 0, 20, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&msg, 1, MPI_INT, 1, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_T_pvar_read(s, h, &waits);
        CHECK(waits >= 1, "the receive slept in %llu blocking waits", waits);
        for (int k = 0; k < 5000 && !woke_events; k++) {
            int flag;
            MPI_Iprobe(MPI_ANY_SOURCE, 12345, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
            usleep(1000);
        }
        CHECK(woke_events >= 1, "the ends of the waits reached an async-signal-safe callback (%d)", woke_events);
    }
    CHECK(cvar_write_int("PIOMAN_POLICY", before) == MPI_SUCCESS, "policy restored");
    MPI_T_pvar_handle_free(s, &h);
    MPI_T_pvar_session_free(&s);
    CHECK(MPI_T_event_handle_free(reg, NULL, NULL) == MPI_SUCCESS, "registration freed");
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    int provided = -1, num;
    CHECK(MPI_T_cvar_get_num(&num) == MPI_T_ERR_NOT_INITIALIZED, "MPI_T needs MPI_T_init_thread");
    CHECK(MPI_T_init_thread(MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS && provided >= MPI_THREAD_SINGLE,
          "MPI_T_init_thread before MPI_Init");
    CHECK(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS, "MPI_T_init_thread again");
    CHECK(MPI_T_finalize() == MPI_SUCCESS && MPI_T_cvar_get_num(&num) == MPI_SUCCESS,
          "one MPI_T_finalize of two leaves MPI_T usable");
    list_everything(0);

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &check_rank);
    ours = on_madmpi();
    list_everything(check_rank == 0 && ours);
    MPI_T_pvar_session s, bad_session = MPI_T_PVAR_SESSION_NULL;
    CHECK(MPI_T_pvar_session_create(&s) == MPI_SUCCESS, "a session");
    CHECK(MPI_T_pvar_start(s, MPI_T_PVAR_ALL_HANDLES) == MPI_SUCCESS, "starting all handles of an empty session");
    CHECK(MPI_T_pvar_session_free(&s) == MPI_SUCCESS && s == MPI_T_PVAR_SESSION_NULL, "session freed");
    CHECK(MPI_T_pvar_session_free(&bad_session) != MPI_SUCCESS, "the null session cannot be freed");
    if (ours) {
        check_settings();
        check_policy_switch();
        check_coll_choice();
        check_counters();
        check_events();
        check_blocking_waits();
    }
    MPI_Finalize();

    list_everything(0);
    if (ours) {
        char drivers[256];
        MPI_T_cvar_handle h;
        int count = 0;
        MPI_T_cvar_handle_alloc(cvar_index("NMAD_DRIVERS"), NULL, &h, &count);
        CHECK(count >= 2 && MPI_T_cvar_read(h, drivers) == MPI_SUCCESS, "NMAD_DRIVERS after MPI_Finalize: \"%s\"",
              drivers);
        MPI_T_cvar_handle_free(&h);
        CHECK(cvar_write_int("PIOMAN_POLICY", 0) == MPI_T_ERR_CVAR_SET_NOT_NOW, "no policy to switch once pioman is gone");
    }
    CHECK(MPI_T_finalize() == MPI_SUCCESS, "MPI_T_finalize after MPI_Finalize");
    CHECK(MPI_T_finalize() == MPI_T_ERR_NOT_INITIALIZED, "one MPI_T_finalize too many");
    CHECK(1, "all checks passed");
    return 0;
}
