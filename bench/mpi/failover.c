/*
 * Rail failover, seen by an application: rank 0 sends to rank 1 while a rail between them is
 * cut (the command in FAILOVER_CUT, run by a thread of rank 0 at CUT_MS after the traffic
 * starts; it acts on rank 0's host: `ip link set rail1 down`, an nftables rule...). Every
 * message is checked byte for byte and numbered: the receiver counts what is lost, duplicated
 * or corrupt.
 *
 *   failover stream SIZE SECONDS CUT_MS KIND   messages of SIZE bytes for SECONDS; prints the
 *       time from the cut to traffic flowing again (`case=resume-KIND`: the end of the longest
 *       pause in arrivals that ends after the cut and begins within 50 ms of it, `pause_ms` its
 *       length), the bandwidth before, during (cut to
 *       resume) and after, and the bandwidth over time around the cut (`case=timeline-KIND`,
 *       20 ms bins, `t_ms` from the cut). CUT_MS < 0: no cut (`case=...-none`).
 *   failover big SIZE REPS CUT_MS KIND         REPS messages of SIZE bytes, one at a time; with
 *       a cut (CUT_MS >= 0) during the first; prints the first transfer's time apart
 *       (`case=big-cut-KIND`) and the others' (`case=big-KIND`).
 *
 * With FAILOVER_RESTORE (a command) and FAILOVER_RESTORE_MS, the same thread undoes the cut
 * then; on our library rank 0 then watches `MPIX_Rail_transitions` and prints the time from the
 * restore to the rail's re-admission and the share of the bytes sent after it that each rail
 * carried (`case=readmit-KIND`).
 *
 * Every row carries `lost`, `duplicates` and `corrupt`. Two ranks; rank 0 sends, rank 1 checks.
 */
#define BENCH_NAME "failover"
#include "common.h"
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

enum { DATA = 1, END = 2, CUT_AT = 3 };

static double cut_ns = -1;     /* when the cut command ran (rank 0), on CLOCK_MONOTONIC */
static volatile double restore_ns = -1; /* when the restore command ran */

struct cutter {
    double at_ns, cut_ms;
};

static void *cut_thread(void *arg)
{
    struct cutter *c = arg;
    double wait = c->at_ns - now_ns();
    if (wait > 0) {
        struct timespec t = {(time_t)(wait / 1e9), (long)((uint64_t)wait % 1000000000ull)};
        nanosleep(&t, NULL);
    }
    const char *cmd = getenv("FAILOVER_CUT");
    cut_ns = now_ns();
    if (cmd && *cmd && system(cmd) != 0)
        fprintf(stderr, "failover: the cut command failed: %s\n", cmd);
    const char *undo = getenv("FAILOVER_RESTORE"), *at = getenv("FAILOVER_RESTORE_MS");
    if (undo && *undo && at) {
        double wait = c->at_ns - cut_ns + (atof(at) - c->cut_ms) * 1e6;
        if (wait > 0) {
            struct timespec t = {(time_t)(wait / 1e9), (long)((uint64_t)wait % 1000000000ull)};
            nanosleep(&t, NULL);
        }
        if (system(undo) != 0)
            fprintf(stderr, "failover: the restore command failed: %s\n", undo);
        restore_ns = now_ns();
    }
    return NULL;
}

#ifdef MPIX_MAX_RAIL_NAME
/* Rank 0, our library: bytes each rail to rank 1 sent so far (at most 8 rails). */
static int rail_bytes(double *bytes, char names[8][MPIX_MAX_RAIL_NAME])
{
    int n = 0;
    MPIX_Rail_count(MPI_COMM_WORLD, 1, &n);
    for (int i = 0; i < n && i < 8; i++) {
        int len = 0, state = 0;
        MPI_Count sent = 0;
        MPIX_Rail_get_info(MPI_COMM_WORLD, 1, i, names[i], &len, &state, &sent);
        bytes[i] = (double)sent;
    }
    return n < 8 ? n : 8;
}
#endif

/* The pattern of message `seq`: 64-bit words that depend on the message and the position. */
static void fill(uint64_t *w, size_t words, uint64_t seq)
{
    for (size_t i = 0; i < words; i++)
        w[i] = (seq + 1) * 0x9E3779B97F4A7C15ull ^ i;
}

static int intact(const uint64_t *w, size_t words, uint64_t seq)
{
    for (size_t i = 0; i < words; i++)
        if (w[i] != ((seq + 1) * 0x9E3779B97F4A7C15ull ^ i))
            return 0;
    return 1;
}

struct tally {
    long received, duplicates, corrupt, lost;
};

/* Rank 1 after the END message: anything more that arrives within 200 ms is a duplicate. */
static void count_late(struct tally *t, size_t size, void *buf)
{
    double until = now_ns() + 200e6;
    while (now_ns() < until) {
        int flag = 0;
        MPI_Status st;
        check(MPI_Iprobe(0, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st), "MPI_Iprobe");
        if (flag) {
            check(MPI_Recv(buf, (int)size, MPI_BYTE, 0, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
            t->duplicates++;
        }
    }
}

static void start_cutter(pthread_t *th, struct cutter *c, double t0, double cut_ms)
{
    c->at_ns = t0 + cut_ms * 1e6;
    c->cut_ms = cut_ms;
    if (pthread_create(th, NULL, cut_thread, c) != 0) {
        fprintf(stderr, "failover: pthread_create failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void stream(int rank, size_t size, double seconds, double cut_ms, const char *kind)
{
    size_t words = size / 8;
    uint64_t *buf = malloc(words * 8 + 8);
    long cap = (long)(seconds * 200000) + 16, n = 0;
    double *arrived = rank == 1 ? malloc(sizeof(double) * (size_t)cap) : NULL;
    struct tally t = {0};
    pthread_t th;
    struct cutter c;
    sync_with(1 - rank, 9);
    double t0 = now_ns();
    if (rank == 0) {
        if (cut_ms >= 0)
            start_cutter(&th, &c, t0, cut_ms);
        long seq = 0;
#ifdef MPIX_MAX_RAIL_NAME
        int ups0 = -1, downs = 0, ups = 0, nrails = 0;
        double back_ns = -1, at_back[8] = {0}, at_end[8] = {0};
        char names[8][MPIX_MAX_RAIL_NAME];
#endif
        while (now_ns() - t0 < seconds * 1e9 && seq < cap - 8) {
            fill(buf, words, (uint64_t)seq);
            check(MPI_Send(buf, (int)size, MPI_BYTE, 1, DATA, MPI_COMM_WORLD), "MPI_Send");
            seq++;
#ifdef MPIX_MAX_RAIL_NAME
            if (restore_ns >= 0 && back_ns < 0) {
                MPIX_Rail_transitions(&downs, &ups);
                if (ups0 < 0)
                    ups0 = ups;
                if (ups > ups0) {
                    back_ns = now_ns();
                    nrails = rail_bytes(at_back, names);
                }
            }
#endif
        }
        if (cut_ms >= 0)
            pthread_join(th, NULL);
#ifdef MPIX_MAX_RAIL_NAME
        if (restore_ns >= 0) {
            rail_bytes(at_end, names);
            double total = 0, ms = back_ns >= 0 ? (back_ns - restore_ns) / 1e6 : -1;
            for (int i = 0; i < nrails; i++)
                total += at_end[i] - at_back[i];
            printf("m bench=failover case=readmit-%s size=%zu median=%.1f min=%.1f max=%.1f unit=ms", kind, size, ms, ms,
                   ms);
            for (int i = 0; i < nrails; i++)
                printf(" share_%s=%.3f", names[i], total > 0 ? (at_end[i] - at_back[i]) / total : 0);
            printf("\n");
            fflush(stdout);
        }
#endif
        double info[2] = {(double)seq, cut_ns};
        check(MPI_Send(info, 2, MPI_DOUBLE, 1, END, MPI_COMM_WORLD), "MPI_Send");
    } else {
        double info[2] = {0, -1};
        for (;;) {
            MPI_Status st;
            check(MPI_Recv(buf, (int)size, MPI_BYTE, 0, MPI_ANY_TAG, MPI_COMM_WORLD, &st), "MPI_Recv");
            if (st.MPI_TAG == END) {
                memcpy(info, buf, sizeof info);
                break;
            }
            if (!intact(buf, words, (uint64_t)n))
                t.corrupt++;
            if (n < cap)
                arrived[n] = now_ns();
            n++;
        }
        t.received = n;
        t.lost = (long)info[0] > n ? (long)info[0] - n : 0;
        t.duplicates = n > (long)info[0] ? n - (long)info[0] : 0;
        count_late(&t, size, buf);
        double cut = info[1] >= 0 ? info[1] : -1, end = n ? arrived[n - 1] : t0;
        char tail[160];
        snprintf(tail, sizeof tail, "lost=%ld duplicates=%ld corrupt=%ld messages=%ld", t.lost, t.duplicates,
                 t.corrupt, n);
        if (cut < 0) {
            double mbps = n > 1 ? (double)size * (double)(n - 1) / ((end - arrived[0]) / 1e3) : 0;
            printf("m bench=failover case=bw-none size=%zu median=%.1f min=%.1f max=%.1f unit=MB/s %s\n", size, mbps,
                   mbps, mbps, tail);
        } else {
            /* The longest pause in arrivals that ends after the cut and begins within 50 ms of
             * it: a failure stalls the stream at once (every message has a piece on each rail);
             * a pause that begins later is the machine's noise, not the failure's. */
            double gap = 0, resume = cut;
            for (long i = 1; i < n && i < cap; i++) {
                if (arrived[i] > cut && arrived[i - 1] < cut + 50e6 && arrived[i] - arrived[i - 1] > gap) {
                    gap = arrived[i] - arrived[i - 1];
                    resume = arrived[i];
                }
            }
            double ms = (resume - cut) / 1e6;
            printf("m bench=failover case=resume-%s size=%zu median=%.2f min=%.2f max=%.2f unit=ms pause_ms=%.2f %s\n",
                   kind, size, ms, ms, ms, gap / 1e6, tail);
            double lo[3] = {t0, cut, resume}, hi[3] = {cut, resume, end};
            const char *phase[3] = {"before", "during", "after"};
            for (int p = 0; p < 3; p++) {
                long k = 0;
                for (long i = 0; i < n; i++)
                    k += arrived[i] > lo[p] && arrived[i] <= hi[p];
                double span = (hi[p] - lo[p]) / 1e3, mbps = span > 0 ? (double)size * (double)k / span : 0;
                printf("m bench=failover case=bw-%s-%s size=%zu median=%.1f min=%.1f max=%.1f unit=MB/s %s\n", phase[p],
                       kind, size, mbps, mbps, mbps, tail);
            }
            for (double b = -200; b < 1000; b += 20) {
                long k = 0;
                for (long i = 0; i < n; i++)
                    k += arrived[i] > cut + b * 1e6 && arrived[i] <= cut + (b + 20) * 1e6;
                double mbps = (double)size * (double)k / 20e3;
                printf("m bench=failover case=timeline-%s size=%zu t_ms=%.0f median=%.1f min=%.1f max=%.1f unit=MB/s "
                       "%s\n",
                       kind, size, b, mbps, mbps, mbps, tail);
            }
        }
    }
    free(buf);
    free(arrived);
}

static void big(int rank, size_t size, int reps, double cut_ms, const char *kind)
{
    size_t words = size / 8;
    uint64_t *buf = malloc(words * 8 + 8);
    double *times = malloc(sizeof(double) * (size_t)reps);
    struct tally t = {0};
    for (int r = 0; r < reps; r++) {
        if (rank == 0)
            fill(buf, words, (uint64_t)r);
        else
            memset(buf, 0, words * 8);
        sync_with(1 - rank, 9);
        double t0 = now_ns();
        pthread_t th;
        struct cutter c;
        if (rank == 0) {
            if (r == 0 && cut_ms >= 0)
                start_cutter(&th, &c, t0, cut_ms);
            check(MPI_Send(buf, (int)size, MPI_BYTE, 1, DATA, MPI_COMM_WORLD), "MPI_Send");
            /* The buffer is ours again: a send completed before the receiver had everything
             * (and asked for a part again) would show as corrupt data there. */
            memset(buf, 0xAB, words * 8);
            if (r == 0 && cut_ms >= 0)
                pthread_join(th, NULL);
        } else {
            check(MPI_Recv(buf, (int)size, MPI_BYTE, 0, DATA, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
            times[r] = (now_ns() - t0) / 1e6;
            t.received++;
            if (!intact(buf, words, (uint64_t)r))
                t.corrupt++;
        }
    }
    if (rank == 0) {
        check(MPI_Send(NULL, 0, MPI_BYTE, 1, END, MPI_COMM_WORLD), "MPI_Send");
    } else {
        check(MPI_Recv(NULL, 0, MPI_BYTE, 0, END, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
        count_late(&t, size, buf);
        char tail[120];
        snprintf(tail, sizeof tail, "lost=%ld duplicates=%ld corrupt=%ld", reps - t.received, t.duplicates, t.corrupt);
        /* With a cut, the first transfer (the one cut) apart from the others. */
        int cut = cut_ms >= 0, rest = reps - cut;
        if (cut)
            printf("m bench=failover case=big-cut-%s size=%zu median=%.2f min=%.2f max=%.2f unit=ms %s\n", kind, size,
                   times[0], times[0], times[0], tail);
        if (rest > 0) {
            double med = median(times + cut, rest);
            printf("m bench=failover case=big-%s size=%zu median=%.2f min=%.2f max=%.2f unit=ms %s\n", kind, size, med,
                   times[cut], times[reps - 1], tail);
        }
    }
    free(buf);
    free(times);
}

int main(int argc, char **argv)
{
    int provided = 0, rank = 0, size = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || argc < 6) {
        if (rank == 0)
            fprintf(stderr, "usage: failover stream SIZE SECONDS CUT_MS KIND | big SIZE REPS CUT_MS KIND (2 ranks)\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (rank == 1)
        print_library();
    size_t bytes = (size_t)strtoull(argv[2], NULL, 10) / 8 * 8;
    if (strcmp(argv[1], "stream") == 0)
        stream(rank, bytes, atof(argv[3]), atof(argv[4]), argv[5]);
    else
        big(rank, bytes, atoi(argv[3]), atof(argv[4]), argv[5]);
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
