/* MPI_THREAD_MULTIPLE under load: 2 ranks x 4 threads, each thread exchanging 10,000 messages
 * with its namesake on the other rank in each of two phases, sizes random in 0 B - 64 KiB (about
 * one in eight above the 32 KiB eager limit, so rendezvous transfers run in several threads at
 * once), mixing blocking and nonblocking calls: Isend/Irecv + Waitall, Send/Recv, Sendrecv,
 * Iprobe + Recv.
 *
 * (a) Distinct tags: thread t's message i has tag t*100000+i; the receiver knows its length and
 *     content (a slice of a shared pattern chosen by sender, thread and sequence number) and
 *     checks length, tag, source and bytes.
 * (b) Any tag, on a duplicate of MPI_COMM_WORLD: every thread receives with MPI_ANY_SOURCE and
 *     MPI_ANY_TAG, so any thread of a rank may take any message of the other; each message
 *     carries a header (sender rank, thread, sequence number, length, checksum of its payload).
 *     The receiver checks the header against the envelope, the checksum and the bytes, and marks
 *     the message in a table: after the phase every message was received exactly once.
 *
 * Failures are counted (the first few printed); each thread reports one line per phase. Run
 * with 2 processes. Also passes on MPICH's own library. */
#include "check.h"
#include <pthread.h>
#include <stdint.h>

#define THREADS 4
#define MSGS 10000 /* per thread and phase (at most; argv[1] may ask for fewer) */
#define MAXLEN 65536
#define PATTERN (2 * MAXLEN)
#define BATCH 8 /* messages per block of one kind of call */
#define TAGS 100000
#define HDR 5 /* uint32 words: rank, thread, seq, len, checksum */

static int rank, peer, msgs = MSGS;
static MPI_Comm any_comm;
static unsigned char pattern[PATTERN];
static unsigned char seen[THREADS][MSGS]; /* phase (b): times each message of the peer arrived */
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static int failures;                 /* all threads' (read once they are joined) */
static __thread int thread_failures; /* the calling thread's */
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;

#define FAILED(...)                                                                            \
    do {                                                                                       \
        thread_failures++;                                                                     \
        pthread_mutex_lock(&fail_lock);                                                        \
        if (failures++ < 10) {                                                                 \
            flockfile(stdout);                                                                 \
            printf("FAIL %d: ", rank);                                                         \
            printf(__VA_ARGS__);                                                               \
            printf(" [%s:%d]\n", __FILE__, __LINE__);                                          \
            fflush(stdout);                                                                    \
            funlockfile(stdout);                                                               \
        }                                                                                      \
        pthread_mutex_unlock(&fail_lock);                                                      \
    } while (0)

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static uint64_t seed_of(int who, int t, int i, int phase)
{
    return mix(((uint64_t)phase << 48) ^ ((uint64_t)who << 40) ^ ((uint64_t)t << 32) ^ (uint64_t)i);
}

/* The payload length of a message: mostly small, a quarter mid-sized, one in eight rendezvous. */
static int len_of(uint64_t seed)
{
    int r = (int)(seed % 100);
    uint64_t s = seed >> 8;
    if (r < 62)
        return (int)(s % 512);
    if (r < 88)
        return 512 + (int)(s % (32768 - 512));
    return 32769 + (int)(s % (MAXLEN - 32768));
}

static const unsigned char *payload_of(uint64_t seed)
{
    return pattern + (seed >> 24) % MAXLEN;
}

static uint32_t checksum(const unsigned char *p, int len)
{
    uint64_t h = 0x9e3779b97f4a7c15ULL ^ (uint64_t)len, w;
    int i = 0;
    for (; i + 8 <= len; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
    }
    for (; i < len; i++)
        h = (h ^ p[i]) * 0x100000001b3ULL;
    return (uint32_t)(h ^ (h >> 32));
}

static int count_of(MPI_Status *st)
{
    int n = -1;
    MPI_Get_count(st, MPI_BYTE, &n);
    return n;
}

/* ---------------------------------------------------------------- phase (a): distinct tags */

struct slot {
    unsigned char *in;
    int i;
};

static void check_a(int t, int i, const unsigned char *in, MPI_Status *st)
{
    uint64_t seed = seed_of(peer, t, i, 0);
    int len = len_of(seed);
    if (st->MPI_SOURCE != peer || st->MPI_TAG != t * TAGS + i || count_of(st) != len)
        FAILED("thread %d message %d: source %d tag %d count %d, expected %d %d %d", t, i, st->MPI_SOURCE,
               st->MPI_TAG, count_of(st), peer, t * TAGS + i, len);
    else if (memcmp(in, payload_of(seed), len) != 0)
        FAILED("thread %d message %d: %d bytes differ", t, i, len);
}

static void phase_a(int t, unsigned char *inbuf)
{
    MPI_Request reqs[2 * BATCH];
    MPI_Status sts[2 * BATCH];
    int i, k, flag;

    for (i = 0; i < msgs;) {
        int n = msgs - i < BATCH ? msgs - i : BATCH, kind = (i / BATCH + t) % 4;
        switch (kind) {
        case 0: /* Irecv/Isend, Waitall */
            for (k = 0; k < n; k++) {
                uint64_t s = seed_of(rank, t, i + k, 0);
                MPI_Irecv(inbuf + k * MAXLEN, MAXLEN, MPI_BYTE, peer, t * TAGS + i + k, MPI_COMM_WORLD, &reqs[k]);
                MPI_Isend(payload_of(s), len_of(s), MPI_BYTE, peer, t * TAGS + i + k, MPI_COMM_WORLD,
                          &reqs[n + k]);
            }
            if (MPI_Waitall(2 * n, reqs, sts) != MPI_SUCCESS)
                FAILED("thread %d: MPI_Waitall at %d", t, i);
            for (k = 0; k < n; k++)
                check_a(t, i + k, inbuf + k * MAXLEN, &sts[k]);
            break;
        case 1: /* Send/Recv, rank 0 sending first */
            for (k = 0; k < n; k++) {
                uint64_t s = seed_of(rank, t, i + k, 0);
                int tag = t * TAGS + i + k;
                if (rank == 0)
                    MPI_Send(payload_of(s), len_of(s), MPI_BYTE, peer, tag, MPI_COMM_WORLD);
                if (MPI_Recv(inbuf, MAXLEN, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &sts[0]) != MPI_SUCCESS)
                    FAILED("thread %d: MPI_Recv %d", t, i + k);
                if (rank == 1)
                    MPI_Send(payload_of(s), len_of(s), MPI_BYTE, peer, tag, MPI_COMM_WORLD);
                check_a(t, i + k, inbuf, &sts[0]);
            }
            break;
        case 2: /* Sendrecv */
            for (k = 0; k < n; k++) {
                uint64_t s = seed_of(rank, t, i + k, 0);
                int tag = t * TAGS + i + k;
                if (MPI_Sendrecv(payload_of(s), len_of(s), MPI_BYTE, peer, tag, inbuf, MAXLEN, MPI_BYTE, peer, tag,
                                 MPI_COMM_WORLD, &sts[0]) != MPI_SUCCESS)
                    FAILED("thread %d: MPI_Sendrecv %d", t, i + k);
                check_a(t, i + k, inbuf, &sts[0]);
            }
            break;
        default: /* Isend, Iprobe until the message is there, Recv, Wait */
            for (k = 0; k < n; k++) {
                uint64_t s = seed_of(rank, t, i + k, 0);
                int tag = t * TAGS + i + k;
                MPI_Isend(payload_of(s), len_of(s), MPI_BYTE, peer, tag, MPI_COMM_WORLD, &reqs[0]);
                flag = 0;
                while (!flag)
                    if (MPI_Iprobe(peer, tag, MPI_COMM_WORLD, &flag, &sts[1]) != MPI_SUCCESS)
                        FAILED("thread %d: MPI_Iprobe %d", t, i + k);
                if (count_of(&sts[1]) != len_of(seed_of(peer, t, i + k, 0)) || sts[1].MPI_TAG != tag)
                    FAILED("thread %d: MPI_Iprobe %d: count %d tag %d", t, i + k, count_of(&sts[1]),
                           sts[1].MPI_TAG);
                MPI_Recv(inbuf, MAXLEN, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &sts[0]);
                MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
                check_a(t, i + k, inbuf, &sts[0]);
            }
            break;
        }
        i += n;
    }
}

/* ---------------------------------------------------------------- phase (b): any tag */

/* Writes message `i` of thread `t` (header + payload) into `out`; its total length. */
static int make_b(int t, int i, unsigned char *out)
{
    uint64_t s = seed_of(rank, t, i, 1);
    uint32_t h[HDR];
    int len = len_of(s) < 4 * HDR ? 4 * HDR : len_of(s);
    int plen = len - 4 * HDR;
    const unsigned char *p = payload_of(s);
    h[0] = (uint32_t)rank;
    h[1] = (uint32_t)t;
    h[2] = (uint32_t)i;
    h[3] = (uint32_t)plen;
    h[4] = checksum(p, plen);
    memcpy(out, h, sizeof h);
    memcpy(out + sizeof h, p, plen);
    return len;
}

static void check_b(int t, const unsigned char *in, MPI_Status *st)
{
    uint32_t h[HDR];
    int n = count_of(st), plen, first;
    if (n < 4 * HDR) {
        FAILED("thread %d: a message of %d bytes", t, n);
        return;
    }
    memcpy(h, in, sizeof h);
    plen = n - 4 * HDR;
    if (st->MPI_SOURCE != peer || h[0] != (uint32_t)peer || h[1] >= THREADS || h[2] >= (uint32_t)msgs ||
        st->MPI_TAG != (int)(h[1] * TAGS + h[2]) || h[3] != (uint32_t)plen) {
        FAILED("thread %d: envelope (source %d tag %d, %d bytes) and header (%u %u %u %u) disagree", t,
               st->MPI_SOURCE, st->MPI_TAG, n, h[0], h[1], h[2], h[3]);
        return;
    }
    if (checksum(in + sizeof h, plen) != h[4])
        FAILED("thread %d: message %u of thread %u: bad checksum", t, h[2], h[1]);
    else if (memcmp(in + sizeof h, payload_of(seed_of(peer, (int)h[1], (int)h[2], 1)), plen) != 0)
        FAILED("thread %d: message %u of thread %u: the checksum agrees but the bytes differ", t, h[2], h[1]);
    pthread_mutex_lock(&seen_lock);
    first = seen[h[1]][h[2]]++ == 0;
    pthread_mutex_unlock(&seen_lock);
    if (!first)
        FAILED("thread %d: message %u of thread %u received twice", t, h[2], h[1]);
}

static void phase_b(int t, unsigned char *inbuf, unsigned char *outbuf)
{
    MPI_Request reqs[2 * BATCH];
    MPI_Status sts[2 * BATCH];
    int i, k, flag, len;

    for (i = 0; i < msgs;) {
        int n = msgs - i < BATCH ? msgs - i : BATCH, kind = (i / BATCH + t) % 5;
        switch (kind) {
        case 0: /* Irecv/Isend, Waitall */
            for (k = 0; k < n; k++) {
                len = make_b(t, i + k, outbuf + k * MAXLEN);
                MPI_Irecv(inbuf + k * MAXLEN, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, any_comm, &reqs[k]);
                MPI_Isend(outbuf + k * MAXLEN, len, MPI_BYTE, peer, t * TAGS + i + k, any_comm, &reqs[n + k]);
            }
            if (MPI_Waitall(2 * n, reqs, sts) != MPI_SUCCESS)
                FAILED("thread %d: MPI_Waitall at %d", t, i);
            for (k = 0; k < n; k++)
                check_b(t, inbuf + k * MAXLEN, &sts[k]);
            break;
        case 1: /* Send/Recv: rank 0 sends first, rank 1 receives first (never both sending) */
            for (k = 0; k < n; k++) {
                len = make_b(t, i + k, outbuf);
                if (rank == 0)
                    MPI_Send(outbuf, len, MPI_BYTE, peer, t * TAGS + i + k, any_comm);
                if (MPI_Recv(inbuf, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, any_comm, &sts[0]) !=
                    MPI_SUCCESS)
                    FAILED("thread %d: MPI_Recv", t);
                if (rank == 1)
                    MPI_Send(outbuf, len, MPI_BYTE, peer, t * TAGS + i + k, any_comm);
                check_b(t, inbuf, &sts[0]);
            }
            break;
        case 2: /* Sendrecv */
            for (k = 0; k < n; k++) {
                len = make_b(t, i + k, outbuf);
                if (MPI_Sendrecv(outbuf, len, MPI_BYTE, peer, t * TAGS + i + k, inbuf, MAXLEN, MPI_BYTE,
                                 MPI_ANY_SOURCE, MPI_ANY_TAG, any_comm, &sts[0]) != MPI_SUCCESS)
                    FAILED("thread %d: MPI_Sendrecv", t);
                check_b(t, inbuf, &sts[0]);
            }
            break;
        case 3: /* a receive posted, a blocking Send, Wait */
            for (k = 0; k < n; k++) {
                len = make_b(t, i + k, outbuf);
                MPI_Irecv(inbuf, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, any_comm, &reqs[0]);
                MPI_Send(outbuf, len, MPI_BYTE, peer, t * TAGS + i + k, any_comm);
                MPI_Wait(&reqs[0], &sts[0]);
                check_b(t, inbuf, &sts[0]);
            }
            break;
        default:
            /* Isend, Iprobe until some message is there, Recv. Another thread may take the probed
             * message first: receive whatever comes (with any source and tag), never the probed
             * envelope, which could be gone. */
            for (k = 0; k < n; k++) {
                len = make_b(t, i + k, outbuf);
                MPI_Isend(outbuf, len, MPI_BYTE, peer, t * TAGS + i + k, any_comm, &reqs[0]);
                flag = 0;
                while (!flag)
                    if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, any_comm, &flag, &sts[1]) != MPI_SUCCESS)
                        FAILED("thread %d: MPI_Iprobe", t);
                if (sts[1].MPI_SOURCE != peer || count_of(&sts[1]) < 4 * HDR)
                    FAILED("thread %d: MPI_Iprobe: source %d count %d", t, sts[1].MPI_SOURCE, count_of(&sts[1]));
                MPI_Recv(inbuf, MAXLEN, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, any_comm, &sts[0]);
                MPI_Wait(&reqs[0], MPI_STATUS_IGNORE);
                check_b(t, inbuf, &sts[0]);
            }
            break;
        }
        i += n;
    }
}

/* One thread's share of a phase; (a) when `phase` is 0, else (b). */
static void *worker(int t, int phase)
{
    unsigned char *in = malloc((size_t)BATCH * MAXLEN), *out = malloc((size_t)BATCH * MAXLEN);

    if (!in || !out) {
        FAILED("thread %d: no memory for its buffers", t);
        return NULL;
    }
    if (phase == 0)
        phase_a(t, in);
    else
        phase_b(t, in, out);
    flockfile(stdout); /* CHECK prints a line in several calls */
    CHECK(thread_failures == 0, "thread %d: phase (%c): %d messages sent and %d received, each checked", t,
          phase == 0 ? 'a' : 'b', msgs, msgs);
    funlockfile(stdout);
    free(in);
    free(out);
    return NULL;
}

static void *worker_a(void *arg)
{
    return worker((int)(intptr_t)arg, 0);
}

static void *worker_b(void *arg)
{
    return worker((int)(intptr_t)arg, 1);
}

static void run_threads(void *(*f)(void *))
{
    pthread_t threads[THREADS];
    int t;
    for (t = 0; t < THREADS; t++)
        if (pthread_create(&threads[t], NULL, f, (void *)(intptr_t)t) != 0)
            CHECK(0, "starting thread %d", t);
    for (t = 0; t < THREADS; t++)
        pthread_join(threads[t], NULL);
}

int main(int argc, char **argv)
{
    int provided = -1, size, t, i, missing = 0, twice = 0;
    double start;

    CHECK(MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided) == MPI_SUCCESS &&
              provided == MPI_THREAD_MULTIPLE,
          "MPI_Init_thread(MPI_THREAD_MULTIPLE) provides MPI_THREAD_MULTIPLE");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    check_rank = rank;
    CHECK(size == 2, "2 processes");
    peer = 1 - rank;
    if (argc > 1 && atoi(argv[1]) > 0 && atoi(argv[1]) < MSGS)
        msgs = atoi(argv[1]);
    for (i = 0; i < PATTERN; i++)
        pattern[i] = (unsigned char)(mix((uint64_t)i) >> 7);

    start = MPI_Wtime();
    run_threads(worker_a);
    CHECK(failures == 0, "phase (a): %d threads x %d messages with distinct tags in %.1f s", THREADS, msgs,
          MPI_Wtime() - start);

    CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &any_comm) == MPI_SUCCESS, "MPI_Comm_dup");
    start = MPI_Wtime();
    run_threads(worker_b);
    for (t = 0; t < THREADS; t++)
        for (i = 0; i < msgs; i++) {
            missing += seen[t][i] == 0;
            twice += seen[t][i] > 1;
        }
    CHECK(failures == 0 && missing == 0 && twice == 0,
          "phase (b): every one of the %d messages received exactly once (%d missing, %d twice) in %.1f s",
          THREADS * msgs, missing, twice, MPI_Wtime() - start);
    CHECK(MPI_Comm_free(&any_comm) == MPI_SUCCESS, "MPI_Comm_free");
    CHECK(MPI_Finalize() == MPI_SUCCESS, "MPI_Finalize");
    printf("OK %d: all checks passed\n", rank);
    return 0;
}
