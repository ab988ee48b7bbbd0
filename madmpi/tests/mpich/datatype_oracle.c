/* Reference oracle for madmpi's datatype engine: builds each datatype described on stdin with
 * MPICH and prints its attributes, the memory offsets of its packed bytes (for 2 elements) and
 * MPI_Get_elements_x/MPI_Get_count for a few byte counts. Used by tests/datatype_mpich.rs
 * (`cargo test -p madmpi --test datatype_mpich -- --ignored`); run under `mpiexec.hydra -n 1`.
 *
 * One type per line, in prefix form (see tests/common/mod.rs, Spec::line):
 *   MPI_INT | contig N T | vector N BL STRIDE T | hvector N BL STRIDE T
 *   | indexed N BL... D... T | hindexed N BL... D... T | iblock N BL D... T | hiblock N BL D... T
 *   | struct N BL... D... T... (a member "same" is the first member's type)
 *   | resized LB EXTENT T | subarray ND SIZE... SUB... START... C|F T | dup T
 *   | darray SIZE RANK ND GSIZE... B|C|N... DARG... PSIZE... C|F T
 * Output, one line per type:
 *   ok SIZE LB EXTENT TRUE_LB TRUE_EXTENT NI NA ND COMBINER B OFF:LEN... E BYTES:ELEMS:COUNT...
 * (no blocks for types with long doubles, no element counts for types with pair types: see
 * below). MPICH 4.0.2 sometimes divides by zero in MPI_Get_elements_x: the test restarts the
 * oracle after the line that crashed it.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *toks[1 << 14];
static int ntoks, at;
static char *next(void) {
    if (at >= ntoks) { fprintf(stderr, "truncated line\n"); exit(2); }
    return toks[at++];
}
static long num(void) { return strtol(next(), NULL, 10); }
static int pairs_used, long_double_used;
/* Every type built for the current line, freed after it: yaksa misbehaves (packs garbage) once
 * thousands of types are alive. */
static MPI_Datatype built[1 << 12];
/* The answer for the current line, printed whole so that a crash leaves no partial line. */
static char out[1 << 20];
static size_t outlen;
#define OUT(...) (void)(outlen < sizeof out && (outlen += snprintf(out + outlen, sizeof out - outlen, __VA_ARGS__)))
static int nbuilt;

static MPI_Datatype named(const char *s) {
    static const struct { const char *n; MPI_Datatype t; } tab[] = {
        {"MPI_CHAR", MPI_CHAR}, {"MPI_SIGNED_CHAR", MPI_SIGNED_CHAR}, {"MPI_UNSIGNED_CHAR", MPI_UNSIGNED_CHAR},
        {"MPI_BYTE", MPI_BYTE}, {"MPI_WCHAR", MPI_WCHAR}, {"MPI_SHORT", MPI_SHORT},
        {"MPI_UNSIGNED_SHORT", MPI_UNSIGNED_SHORT}, {"MPI_INT", MPI_INT}, {"MPI_UNSIGNED", MPI_UNSIGNED},
        {"MPI_LONG", MPI_LONG}, {"MPI_UNSIGNED_LONG", MPI_UNSIGNED_LONG}, {"MPI_LONG_LONG_INT", MPI_LONG_LONG_INT},
        {"MPI_UNSIGNED_LONG_LONG", MPI_UNSIGNED_LONG_LONG}, {"MPI_FLOAT", MPI_FLOAT}, {"MPI_DOUBLE", MPI_DOUBLE},
        {"MPI_LONG_DOUBLE", MPI_LONG_DOUBLE}, {"MPI_INT8_T", MPI_INT8_T}, {"MPI_INT16_T", MPI_INT16_T},
        {"MPI_INT32_T", MPI_INT32_T}, {"MPI_INT64_T", MPI_INT64_T}, {"MPI_UINT8_T", MPI_UINT8_T},
        {"MPI_UINT16_T", MPI_UINT16_T}, {"MPI_UINT32_T", MPI_UINT32_T}, {"MPI_UINT64_T", MPI_UINT64_T},
        {"MPI_C_BOOL", MPI_C_BOOL}, {"MPI_C_COMPLEX", MPI_C_COMPLEX}, {"MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX},
        {"MPI_C_LONG_DOUBLE_COMPLEX", MPI_C_LONG_DOUBLE_COMPLEX}, {"MPI_AINT", MPI_AINT},
        {"MPI_OFFSET", MPI_OFFSET}, {"MPI_COUNT", MPI_COUNT}, {"MPI_PACKED", MPI_PACKED},
        {"MPI_FLOAT_INT", MPI_FLOAT_INT}, {"MPI_DOUBLE_INT", MPI_DOUBLE_INT}, {"MPI_LONG_INT", MPI_LONG_INT},
        {"MPI_2INT", MPI_2INT}, {"MPI_SHORT_INT", MPI_SHORT_INT}, {"MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(s, tab[i].n)) {
            if (i >= 32) pairs_used = 1; /* MPICH 4.0.2 divides by zero in Get_elements of pairs */
            /* yaksa packs long doubles by value: only 10 of their 16 bytes get through */
            if (strstr(s, "LONG_DOUBLE")) long_double_used = 1;
            return tab[i].t;
        }
    fprintf(stderr, "unknown type %s\n", s);
    exit(2);
}

static MPI_Datatype parse(void) {
    char *s = next();
    MPI_Datatype t, old;
    if (!strcmp(s, "contig")) {
        int n = num(); old = parse(); MPI_Type_contiguous(n, old, &t);
    } else if (!strcmp(s, "vector") || !strcmp(s, "hvector")) {
        int n = num(), bl = num(); long st = num(); old = parse();
        if (s[0] == 'v') MPI_Type_vector(n, bl, st, old, &t); else MPI_Type_create_hvector(n, bl, st, old, &t);
    } else if (!strcmp(s, "indexed") || !strcmp(s, "hindexed")) {
        int n = num(); int bl[64], d[64]; MPI_Aint ad[64];
        for (int i = 0; i < n; i++) bl[i] = num();
        for (int i = 0; i < n; i++) ad[i] = d[i] = num();
        old = parse();
        if (s[0] == 'i') MPI_Type_indexed(n, bl, d, old, &t); else MPI_Type_create_hindexed(n, bl, ad, old, &t);
    } else if (!strcmp(s, "iblock") || !strcmp(s, "hiblock")) {
        int n = num(), bl = num(); int d[64]; MPI_Aint ad[64];
        for (int i = 0; i < n; i++) ad[i] = d[i] = num();
        old = parse();
        if (s[0] == 'i') MPI_Type_create_indexed_block(n, bl, d, old, &t);
        else MPI_Type_create_hindexed_block(n, bl, ad, old, &t);
    } else if (!strcmp(s, "struct")) {
        int n = num(); int bl[64]; MPI_Aint d[64]; MPI_Datatype ty[64];
        for (int i = 0; i < n; i++) bl[i] = num();
        for (int i = 0; i < n; i++) d[i] = num();
        for (int i = 0; i < n; i++) {
            if (!strcmp(toks[at], "same")) { at++; ty[i] = ty[0]; } else ty[i] = parse();
        }
        MPI_Type_create_struct(n, bl, d, ty, &t);
    } else if (!strcmp(s, "resized")) {
        long lb = num(), ext = num(); old = parse(); MPI_Type_create_resized(old, lb, ext, &t);
    } else if (!strcmp(s, "subarray")) {
        int nd = num(); int sz[8], sub[8], st[8];
        for (int i = 0; i < nd; i++) sz[i] = num();
        for (int i = 0; i < nd; i++) sub[i] = num();
        for (int i = 0; i < nd; i++) st[i] = num();
        int order = !strcmp(next(), "C") ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
        old = parse();
        MPI_Type_create_subarray(nd, sz, sub, st, order, old, &t);
    } else if (!strcmp(s, "darray")) {
        int size = num(), rank = num(), nd = num(); int g[8], dist[8], darg[8], ps[8];
        for (int i = 0; i < nd; i++) g[i] = num();
        for (int i = 0; i < nd; i++) {
            char *d = next();
            dist[i] = d[0] == 'B' ? MPI_DISTRIBUTE_BLOCK : d[0] == 'C' ? MPI_DISTRIBUTE_CYCLIC : MPI_DISTRIBUTE_NONE;
        }
        for (int i = 0; i < nd; i++) darg[i] = num();
        for (int i = 0; i < nd; i++) ps[i] = num();
        int order = !strcmp(next(), "C") ? MPI_ORDER_C : MPI_ORDER_FORTRAN;
        old = parse();
        MPI_Type_create_darray(size, rank, nd, g, dist, darg, ps, order, old, &t);
    } else if (!strcmp(s, "dup")) {
        old = parse(); MPI_Type_dup(old, &t);
    } else {
        return named(s);
    }
    built[nbuilt++] = t;
    return t;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    static char line[1 << 16];
    FILE *in = argc > 1 ? fopen(argv[1], "r") : stdin;
    if (!in) { perror(argv[1]); return 2; }
    while (fgets(line, sizeof line, in)) {
        char *save;
        ntoks = at = nbuilt = 0;
        outlen = 0;
        for (char *w = strtok_r(line, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) toks[ntoks++] = w;
        if (!ntoks) continue;
        pairs_used = long_double_used = 0;
        MPI_Datatype t = parse();
        MPI_Type_commit(&t);
        MPI_Aint lb, ext, tlb, text; MPI_Count size;
        MPI_Type_get_extent(t, &lb, &ext); MPI_Type_get_true_extent(t, &tlb, &text); MPI_Type_size_x(t, &size);
        int ni, na, nd, comb; MPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
        OUT("ok %lld %ld %ld %ld %ld %d %d %d %d B", (long long)size, (long)lb, (long)ext, (long)tlb, (long)text, ni, na, nd, comb);
        /* memory offsets of the packed bytes of 2 elements, by packing 3 byte planes of the offset */
        MPI_Aint lo = tlb < tlb + ext ? tlb : tlb + ext, hi = tlb + text > tlb + text + ext ? tlb + text : tlb + text + ext;
        long span = hi - lo, n = 2 * (long)size;
        if (!long_double_used && size > 0 && span > 0 && span < (1 << 24)) {
            unsigned char *mem = malloc(span), *packed[3];
            for (int plane = 0; plane < 3; plane++) {
                for (long k = 0; k < span; k++) mem[k] = (unsigned char)(k >> (8 * plane));
                packed[plane] = malloc(n); int pos = 0;
                MPI_Pack(mem - lo, 2, t, packed[plane], (int)n, &pos, MPI_COMM_WORLD);
            }
            long start = 0, len = 0;
            for (long j = 0; j < n; j++) {
                long off = (long)packed[0][j] | (long)packed[1][j] << 8 | (long)packed[2][j] << 16;
                off += lo;
                if (len && off == start + len) len++;
                else { if (len) OUT(" %ld:%ld", start, len); start = off; len = 1; }
            }
            if (len) OUT(" %ld:%ld", start, len);
            for (int plane = 0; plane < 3; plane++) free(packed[plane]);
            free(mem);
        }
        OUT(" E");
        if (!pairs_used && !getenv("ORACLE_NO_ELEMENTS")) {
            MPI_Count s = size, bytes[] = {0, 1, s / 2, s - 1, s, s + 1, s + s / 2, 2 * s - 1, 2 * s};
            for (int k = 0; k < 9; k++) {
                if (bytes[k] < 0) continue;
                MPI_Status st; MPI_Count e; int c;
                MPI_Status_set_elements_x(&st, MPI_BYTE, bytes[k]);
                MPI_Get_elements_x(&st, t, &e); MPI_Get_count(&st, t, &c);
                OUT(" %lld:%lld:%d", (long long)bytes[k], (long long)e, c);
            }
        }
        OUT("\n");
        fputs(out, stdout);
        fflush(stdout);
        while (nbuilt) MPI_Type_free(&built[--nbuilt]);
    }
    MPI_Finalize();
    return 0;
}
