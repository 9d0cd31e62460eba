/* Every kernel path this CPU runs (and each lower one) against the scalar reference, for every
   weight format, batch sizes 1..9 and row lengths with tails: the same bits (the canonical
   arithmetic of >>kernels; only the opt-in bf16-dot path is compared with a tolerance); and
   within one path, a row's result does not depend on what else is in the batch (bit-identical).
   Also quantization round trips, and the canonical exp and sin/cos against libm.
   Each distinct kernel function is checked once (tk_first below): the tables share functions
   (every AVX-512 table has the same attention ops, AVX2's softmax among them; NEON's rmsnorm is
   the scalar one), and an entry that is the scalar reference itself is not compared with
   itself; the reference's own properties (batch invariance, libm, the stored values) are
   checked once, on the scalar table. A check is one case (a shape, a type), not one element. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd64(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
static float frand(void) { return (float)((rnd64() >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f; }

/* n finite values stored in dtype dt (every third tiny: f16 subnormals among them). */
static void kv_pool_fill(unsigned char *pool, size_t n, mlstack_dtype dt) {
    size_t i;
    for (i = 0; i < n; i++) {
        float f = frand() * (i % 3 ? 1.0f : 1e-6f);
        uint32_t b;
        uint16_t h = mlstack__f32_to_f16(f);
        memcpy(&b, &f, 4);
        if (dt == MLSTACK_DTYPE_F32) memcpy(pool + 4 * i, &f, 4);
        else if (dt == MLSTACK_DTYPE_F16)
            memcpy(pool + 2 * i, &h, 2);
        else
            h = (uint16_t)(b >> 16), memcpy(pool + 2 * i, &h, 2);
    }
}

/* The runs (as mlstack__kv_chunk_runs gives them) of n positions from `slot` of a page, over
   8 pages of page_bytes in pool, out of order in memory (run r in page (5 r + first) mod 8),
   each page a keys block [Dh][P] then a values block [P][Dh] of es-byte values. */
static int kv_runs(unsigned char *pool, size_t page_bytes, int first, int P, int Dh, int slot, int n, size_t es,
                   const void **kp, const void **vp, int *len) {
    int nr = 0;
    for (; n > 0; n -= len[nr++], slot = 0) {
        const unsigned char *pg = pool + (size_t)((nr * 5 + first) % 8) * page_bytes;
        len[nr] = P - slot < n ? P - slot : n;
        kp[nr] = pg + (size_t)slot * es;
        vp[nr] = pg + ((size_t)P * (size_t)Dh + (size_t)slot * (size_t)Dh) * es;
    }
    return nr;
}

/* An f16's value from its fields (sign, 5-bit exponent, 10-bit fraction), by its definition. */
static float f16_value(uint16_t h) {
    int e = (h >> 10) & 31, f = h & 1023;
    double v = e == 0 ? ldexp(f, -24) : e < 31 ? ldexp(1024 + f, e - 25) : f ? NAN : INFINITY;
    return (float)(h & 0x8000 ? -v : v);
}

/* A sanitizer build (TL_SANITIZED: make test's ASan+UBSan flavour, make check), quick mode
   (MLSTACK_TEST_QUICK: make check) and a run under qemu-user (tl_emulated: make test's AArch64,
   armv7 and riscv64 runs) check a representative third of each shape grid below: the
   combinations whose indices add up to a multiple of 3, so that every value of each dimension
   (every type, head count, length, page size, tail) still meets every path, and every path is
   still compared with the reference. Under qemu the third takes every line and branch of the
   NEON and scalar kernels that the whole grid takes (gcov of the AArch64 build, counted
   atomically); the native flavours check the scalar reference over the whole grid. The plain
   build, and every other flavour, checks the whole grid. */
static int tk_thin = TL_SANITIZED;
#define TK_KEEP(sum) TL_KEEP(tk_thin, sum)

/* the opt-in bf16-activation tables (bf16dot, amx+bf16) read BF16 pair panels and round x */
#define BF16_DOT(k) (((k)->packs & MLSTACK__PACK_BF16_PAIRS) != 0)

/* Which (function, check) pairs have run: a kernel function shared by several tables (the same
   pointer) is checked with the first table that has it. tk_ref is the scalar table, the
   reference; the tables' pointers are the library's, so entries compare as functions. */
typedef void (*tk_fn)(void);
enum { TK_PATH, TK_TALL, TK_KQ, TK_ALONE };
static struct {
    tk_fn fn;
    int what;
} tk_done[256];
static int tk_n_done, tk_n_new, tk_n_self, tk_n_repeat;
static const mlstack__kernels *tk_ref;
/* 1 the first time fn is asked about for check `what`, 0 after (counted as a repeat) */
static int tk_first(tk_fn fn, int what) {
    int i;
    for (i = 0; i < tk_n_done; i++)
        if (tk_done[i].fn == fn && tk_done[i].what == what) {
            tk_n_repeat++;
            return 0;
        }
    if (tk_n_done < 256) tk_done[tk_n_done].fn = fn, tk_done[tk_n_done++].what = what;
    return 1;
}
/* whether table k's SLOT is to be compared with the reference: not the reference's own function
   (a self-comparison, counted apart), and not checked already with another table */
#define TK_COMPARE(k, SLOT) tk_compare((tk_fn)(k)->SLOT, (tk_fn)tk_ref->SLOT, (k)->name, #SLOT)
static int tk_compare(tk_fn fn, tk_fn ref, const char *table, const char *slot) {
    int fresh = fn != ref && tk_first(fn, TK_PATH);
    if (getenv("TK_VERBOSE"))
        printf("  %s %s: %s\n", table, slot,
               fn == ref ? "the reference itself"
               : fresh   ? "compared"
                         : "checked before");
    if (fn == ref) tk_n_self++;
    tk_n_new += fresh;
    return fresh;
}
/* k is the reference table: its own properties are checked (once) */
#define TK_IS_REF(k) ((k) == tk_ref)

/* Tall batches, for the AMX tiles (16 rows; int8 steps of 32 blocks) and the float kernels'
   long row loops (300 rows: on AVX2 three runs of 96 rows and one of 12, in blocks of 6; on
   AVX-512 50 blocks of 6, each converting F16 / BF16 as it reads and fetching its share of the
   next step, a short group's panels from a copy converted per step):
   every weight format the table packs against the scalar reference, B = 16, 17, 40 (and 300
   for float weights) and row lengths of 1, 2 and 33 blocks (odd for the bf16 pairs). int8 and
   float: the reference's bits; bf16 pairs: within the rounding of x, and each row alone (a
   decode) gives the bits it gets in the batch. */
static void check_tall(const mlstack__kernels *k) {
    static const int wtypes[] = {MLSTACK__W_F32, MLSTACK__W_F16, MLSTACK__W_BF16, MLSTACK__W_Q8_0, MLSTACK__W_Q4_1};
    static const int n_ins[] = {32, 64, 1056, 47, 1061}, Bs[] = {16, 17, 40, 300};
    int wi, ni, bi, i, b;
    if (!tk_first((tk_fn)k->matmul, TK_TALL)) return;
    for (wi = 0; wi < 5; wi++)
        for (ni = 0; ni < 5; ni++)
            for (bi = 0; bi < 4; bi++) {
                int n_in = n_ins[ni], n_out = 101, wt = wtypes[wi], B = Bs[bi],
                    quant = wt == MLSTACK__W_Q8_0 || wt == MLSTACK__W_Q4_1;
                int pairs = wt == MLSTACK__W_BF16 && (k->packs & MLSTACK__PACK_BF16_PAIRS),
                    exact = !(pairs && BF16_DOT(k));
                size_t rb = wt == MLSTACK__W_F32                            ? (size_t)n_in * 4
                            : wt == MLSTACK__W_BF16 || wt == MLSTACK__W_F16 ? (size_t)n_in * 2
                                                                            : mlstack__row_bytes(wt, n_in);
                size_t pb = pairs ? mlstack__p16_pair_bytes(n_in) : mlstack__p16_bytes(wt, n_in);
                float *wf, *x, *y0, *y1, *y2, *scratch, bias[101];
                unsigned char *wd, *packed;
                mlstack__q8x *xq;
                mlstack__weight w;
                double worst = 0;
                int same = 1;
                if (quant && n_in % 32) continue;
                if (B > 40 && (quant || n_in == 1056)) continue; /* 300 rows: float weights only */
                if (!TK_KEEP(wi + ni + bi)) continue;
                if (!pairs && !(k->packs >> wt & 1u)) continue;
                wf = (float *)malloc(sizeof(float) * n_out * n_in);
                x = (float *)malloc(sizeof(float) * B * n_in);
                y0 = (float *)malloc(sizeof(float) * B * n_out);
                y1 = (float *)malloc(sizeof(float) * B * n_out);
                y2 = (float *)malloc(sizeof(float) * n_out);
                scratch = (float *)malloc(sizeof(float) * MLSTACK__MM_SCRATCH(n_in));
                wd = (unsigned char *)malloc(rb * n_out);
                packed = (unsigned char *)malloc(pb * (size_t)mlstack__p16_panels(n_out));
                xq = (mlstack__q8x *)malloc(sizeof(mlstack__q8x) * B * (n_in / 32 + 1));
                for (i = 0; i < n_out * n_in; i++) wf[i] = frand();
                for (i = 0; i < B * n_in; i++) x[i] = frand() * (i % 11 == 0 ? 40.0f : 1.0f);
                for (i = 0; i < n_out; i++) bias[i] = frand();
                for (i = 0; i < n_out; i++) {
                    if (wt == MLSTACK__W_F32) memcpy(wd + (size_t)i * rb, wf + (size_t)i * n_in, rb);
                    else if (wt == MLSTACK__W_F16)
                        mlstack__from_f32(MLSTACK_DTYPE_F16, wf + (size_t)i * n_in, wd + (size_t)i * rb, (size_t)n_in);
                    else if (wt == MLSTACK__W_BF16) {
                        int j;
                        for (j = 0; j < n_in; j++) {
                            uint32_t u;
                            uint16_t h;
                            memcpy(&u, &wf[(size_t)i * n_in + j], 4);
                            h = (uint16_t)(u >> 16);
                            memcpy(wd + (size_t)i * rb + 2 * (size_t)j, &h, 2);
                        }
                    } else
                        mlstack__quantize_row(wt, wf + (size_t)i * n_in, wd + (size_t)i * rb, n_in);
                }
                memset(&w, 0, sizeof w);
                w.data = wd, w.wtype = wt, w.n_out = n_out, w.n_in = n_in, w.row_bytes = rb,
                w.bias = bi & 1 ? bias : NULL;
                if (quant) mlstack__quantize_rows(x, xq, B, n_in);
                mlstack__matmul_scalar(&w, x, xq, y0, B, 0, n_out, scratch);
                for (i = 0; i * 64 < n_out; i++) mlstack__p16_pack_group(&w, i, pairs, packed);
                if (pairs) w.packed_dp = packed;
                else
                    w.packed = packed;
                k->matmul(&w, x, xq, y1, B, 0, 64, scratch); /* the two output groups as two tasks */
                k->matmul(&w, x, xq, y1, B, 64, n_out, scratch);
                for (b = 0; b < B; b++) { /* exact at 300 rows: the bits checked below imply the rows alone */
                    int o;
                    if (B > 40 && exact) break;
                    k->matmul(&w, x + (size_t)b * n_in, xq + (size_t)b * (n_in / 32), y2, 1, 0, n_out, scratch);
                    if (memcmp(y2, y1 + (size_t)b * n_out, sizeof(float) * n_out)) same = 0;
                    for (o = 0; o < n_out; o++) {
                        double mag = w.bias ? fabs(bias[o]) : 0,
                               d = fabs(y1[(size_t)b * n_out + o] - y0[(size_t)b * n_out + o]);
                        for (i = 0; i < n_in; i++) mag += fabs(wf[(size_t)o * n_in + i] * x[(size_t)b * n_in + i]);
                        if (d / mag > worst) worst = d / mag;
                    }
                }
                CHECKF(!exact || !memcmp(y0, y1, sizeof(float) * B * n_out),
                       "%s wtype %d n_in %d B %d: not the scalar reference's bits", k->name, wt, n_in, B);
                CHECKF(worst < (exact ? 1e-6 : 4e-3), "%s wtype %d n_in %d B %d: max diff vs scalar %.3g of sum |w x|",
                       k->name, wt, n_in, B, worst);
                CHECKF(same, "%s wtype %d n_in %d B %d: a row alone differs from the row in the batch", k->name, wt,
                       n_in, B);
                free(wf), free(x), free(y0), free(y1), free(y2), free(scratch), free(wd), free(packed), free(xq);
            }
}

static double q41_seen; /* the largest relative rms error of Q4_1 weights */
static double dd_seen; /* the largest error vs the double dot product, as a fraction of its bound */
/* W (n_out, n_in) from f32 in weight type wt (F32, F16, BF16, Q8_0, Q4_1) into wd */
static void tk_store(int wt, const float *wf, unsigned char *wd, int n_out, int n_in) {
    int i, quant = wt == MLSTACK__W_Q8_0 || wt == MLSTACK__W_Q4_1;
    if (wt == MLSTACK__W_F32) memcpy(wd, wf, sizeof(float) * n_out * n_in);
    for (i = 0; wt == MLSTACK__W_F16 && i < n_out * n_in; i++) {
        uint16_t h = mlstack__f32_to_f16(wf[i]);
        memcpy(wd + 2 * i, &h, 2);
    }
    for (i = 0; wt == MLSTACK__W_BF16 && i < n_out * n_in; i++) {
        uint32_t b;
        uint16_t h;
        memcpy(&b, &wf[i], 4);
        h = (uint16_t)(b >> 16);
        memcpy(wd + 2 * i, &h, 2);
    }
    if (quant)
        for (i = 0; i < n_out; i++)
            mlstack__quantize_row(wt, wf + (size_t)i * n_in, wd + (size_t)i * mlstack__row_bytes(wt, n_in), n_in);
}

/* F32/F16/BF16 against a dot product in double of the stored weights: our sum is one f32 fma
   chain in input order (then + bias), whose error is at most (n_in + 1) u sum |w x| (+ u |bias|),
   u = 2^-24 (each rounding is at most u of a partial sum, each bounded by sum |w x|; Higham's
   bound for recursive sums). The worst error over the B rows, in units of that bound. */
static double tk_dd_err(const mlstack__weight *w, const unsigned char *wd, const float *x, const float *y, int B) {
    int b, o, i, n_in = w->n_in, n_out = w->n_out, wt = w->wtype;
    const float *bias = w->bias;
    double dd_worst = 0;
    for (b = 0; b < B; b++)
        for (o = 0; o < n_out; o++) {
            double ref = bias ? bias[o] : 0, mag = bias ? fabs(bias[o]) : 0, e;
            for (i = 0; i < n_in; i++) {
                size_t wi2 = (size_t)o * n_in + i;
                double wv, xv = x[(size_t)b * n_in + i];
                if (wt == MLSTACK__W_F32) {
                    float f;
                    memcpy(&f, wd + 4 * wi2, 4);
                    wv = f;
                } else if (wt == MLSTACK__W_F16) {
                    uint16_t h;
                    memcpy(&h, wd + 2 * wi2, 2);
                    wv = f16_value(h);
                } else {
                    uint16_t h;
                    uint32_t u32;
                    float f;
                    memcpy(&h, wd + 2 * wi2, 2);
                    u32 = (uint32_t)h << 16;
                    memcpy(&f, &u32, 4);
                    wv = f;
                }
                ref += wv * xv;
                mag += fabs(wv * xv);
            }
            e = fabs(y[(size_t)b * n_out + o] - ref) / ((n_in + 2) * ldexp(mag, -24));
            if (e > dd_worst) dd_worst = e;
        }
    return dd_worst;
}

/* one matmul case: k against the scalar reference, the double dot product, batch invariance */
static void check_matmul_case(const mlstack__kernels *k, int pk, int wt, int n_in, int with_bias, int mm_ref) {
    int i, B;
    int n_out = 101, quant = wt == MLSTACK__W_Q8_0 || wt == MLSTACK__W_Q4_1;
    unsigned char *packed = NULL;
    int pairs;
    float *wf, *x, *yref, *y, *y1, *scratch, bias[101];
    unsigned char *wd;
    mlstack__weight w;
    mlstack__q8x *xq;
    double maxrel = 0, dd_worst = 0;
    int same = 1, bits = 1, exact = !(BF16_DOT(k) && wt == MLSTACK__W_BF16 && pk);
    if (quant && n_in % 32) return;
    /* pass 1: the P16 panels where k reads them (BF16 pair panels for the bf16-dot table) */
    pairs = wt == MLSTACK__W_BF16 && (k->packs & MLSTACK__PACK_BF16_PAIRS);
    if (pk && !(k->packs >> wt & 1u) && !pairs) return;
    wf = (float *)malloc(sizeof(float) * n_out * n_in);
    wd = (unsigned char *)malloc((size_t)n_out * n_in * 4 + 64);
    x = (float *)malloc(sizeof(float) * 9 * n_in);
    yref = (float *)malloc(sizeof(float) * 9 * n_out);
    y = (float *)malloc(sizeof(float) * 9 * n_out);
    y1 = (float *)malloc(sizeof(float) * n_out);
    scratch = (float *)malloc(sizeof(float) * MLSTACK__MM_SCRATCH(n_in));
    xq = (mlstack__q8x *)malloc(sizeof(mlstack__q8x) * 9 * (n_in / 32 + 1));
    for (i = 0; i < n_out * n_in; i++) wf[i] = frand();
    for (i = 0; i < 9 * n_in; i++) x[i] = frand();
    for (i = 0; i < n_out; i++) bias[i] = frand();
    memset(&w, 0, sizeof w);
    w.n_out = n_out;
    w.n_in = n_in;
    w.bias = with_bias ? bias : NULL;
    tk_store(wt, wf, wd, n_out, n_in);
    w.data = wd;
    w.wtype = wt;
    w.row_bytes = mlstack__row_bytes(wt, n_in);
    if (pk) {
        size_t pb = pairs ? mlstack__p16_pair_bytes(n_in) : mlstack__p16_bytes(wt, n_in);
        packed = (unsigned char *)malloc(pb * (size_t)mlstack__p16_panels(n_out));
        for (i = 0; i * 64 < n_out; i++) mlstack__p16_pack_group(&w, i, pairs, packed);
        if (pairs) w.packed_dp = packed;
        else
            w.packed = packed;
    }
    for (B = 1; B <= 9; B += B < 6 ? 1 : 3) { /* 1-6, 9: every tile height, 4 = 2 + 2, 5 = 3 + 2, a remainder */
        int b, o;
        if (quant) mlstack__quantize_rows(x, xq, B, n_in);
        mlstack__matmul_scalar(&w, x, xq, yref, B, 0, n_out, scratch);
        k->matmul(&w, x, xq, y, B, 0, n_out, scratch);
        if (memcmp(y, yref, sizeof(float) * (size_t)B * n_out)) bits = 0;
        /* A reordered f32 sum of n terms is off by a few ulps of sum |w_i x_i|, not of the
           result, which cancellation can make tiny: measure against that magnitude. */
        for (b = 0; b < B; b++)
            for (o = 0; o < n_out; o++) {
                double mag = w.bias ? fabs(bias[o]) : 0, rel;
                for (i = 0; i < n_in; i++) mag += fabs(wf[(size_t)o * n_in + i] * x[(size_t)b * n_in + i]);
                rel = fabs(y[(size_t)b * n_out + o] - yref[(size_t)b * n_out + o]) / mag;
                if (rel > maxrel) maxrel = rel;
            }
            /* F32/F16/BF16 against a dot product in double of the stored weights: our sum is one
           f32 fma chain in input order (then + bias), whose error is at most
           (n_in + 1) u sum |w x| (+ u |bias|), u = 2^-24 (each rounding is at most u of
           a partial sum, each bounded by sum |w x|; Higham's bound for recursive sums) */
        if (exact && !quant) {
            double e = tk_dd_err(&w, wd, x, y, B);
            if (e > dd_worst) dd_worst = e;
        }
            /* batch invariance: row b alone gives the same bits */
        for (b = 0; b < B; b++) {
                /* (and split in two output ranges, as threads split it) */
            k->matmul(&w, x + (size_t)b * n_in, xq + (size_t)b * (n_in / 32), y1, 1, 0, 64, scratch);
            k->matmul(&w, x + (size_t)b * n_in, xq + (size_t)b * (n_in / 32), y1, 1, 64, n_out, scratch);
            for (o = 0; o < n_out; o++)
                if (memcmp(&y1[o], &y[(size_t)b * n_out + o], 4)) same = 0;
        }
    }
        /* vs the scalar path: only the f32 summation order differs */
        /* the opt-in bf16-activation path rounds x to 8 mantissa bits: each product is off by
       at most 2^-9 of itself, so the sum by at most ~2e-3 of sum |w x| */
    if (!mm_ref) {
        CHECKF(!exact || bits, "%s%s wtype %d n_in %d: not the scalar reference's bits (max diff %.3g of sum |w x|)",
               k->name, pk ? " p16" : "", wt, n_in, maxrel);
        CHECKF(maxrel < (exact ? 1e-6 : 4e-3), "%s%s wtype %d n_in %d: max diff vs scalar %.3g of sum |w x|", k->name,
               pk ? " p16" : "", wt, n_in, maxrel);
    }
    if (getenv("TK_VERBOSE")) printf("  %s%s wtype %d n_in %d: %.3g\n", k->name, pk ? " p16" : "", wt, n_in, maxrel);
    CHECKF(same, "%s%s wtype %d n_in %d: a row's result depends on the batch", k->name, pk ? " p16" : "", wt, n_in);
    if (exact && !quant)
        CHECKF(dd_worst <= 1.0,
               "%s%s wtype %d n_in %d: off from the double dot product by %.3g of its bound (n_in + 2) u "
               "sum |w x|",
               k->name, pk ? " p16" : "", wt, n_in, dd_worst);
    if (dd_worst > dd_seen) dd_seen = dd_worst;
        /* quantized weights stay close to the f32 matrix they came from. Weights uniform in
           [-1, 1] (rms 1/sqrt(3)): Q8_0 rounds them to steps of max|w|/127, Q4_1 to steps of
           (max - min)/15 ~ 1.88/15 per block of 32, whose rounding error is uniform, rms
           step/sqrt(12): 0.036, 0.063 of the weights' rms, and so of y's (the errors are
           independent of x). The bound, 0.085, allows for the activations' rounding to 8 bits
           and the spread of an estimate from 101 outputs (observed: up to 0.07). A scale of
           range/16.5 instead of range/15 (tests/mutants/51a_q4_1_scale.patch) gives
           ~0.09 to 0.12, which the old bound (0.15) let through. Every other table gives the reference's bits,
           so this runs once, on the reference. */
    if (quant && mm_ref) {
        double err = 0, ref = 0;
        for (i = 0; i < n_out; i++) {
            float r = mlstack__dot_f32(wf + (size_t)i * n_in, x, n_in) + (w.bias ? bias[i] : 0);
            err += (y[i] - r) * (y[i] - r);
            ref += r * r;
        }
        CHECKF(sqrt(err / ref) < (wt == MLSTACK__W_Q8_0 ? 0.02 : 0.085), "%s wtype %d: relative rms error %.3g",
               k->name, wt, sqrt(err / ref));
        if (wt == MLSTACK__W_Q4_1 && sqrt(err / ref) > q41_seen) q41_seen = sqrt(err / ref);
    }
    free(wf), free(wd), free(x), free(yref), free(y), free(y1), free(scratch), free(xq), free(packed);
}

static void check_matmul(const mlstack__kernels *k) {
    static const int wtypes[] = {MLSTACK__W_F32, MLSTACK__W_F16, MLSTACK__W_BF16, MLSTACK__W_Q8_0, MLSTACK__W_Q4_1};
    static const int n_ins[] = {32, 64, 96, 576, 33, 47, 200};
    int wi, ni;
    /* matmul: against the reference (not the reference itself: its batch invariance and its
       error from the f32 product are what it is checked for), unless an earlier table had it */
    int pk, mm_ref = (tk_fn)k->matmul == (tk_fn)tk_ref->matmul, fresh = tk_first((tk_fn)k->matmul, TK_PATH);
    if (fresh) *(mm_ref ? &tk_n_self : &tk_n_new) += 1;
    for (pk = fresh ? 0 : 2; pk < 2; pk++)
        for (wi = 0; wi < 5; wi++)
            for (ni = 0; ni < 7; ni++)
                if (TK_KEEP(pk + wi + ni)) check_matmul_case(k, pk, wtypes[wi], n_ins[ni], ni & 1, mm_ref);
}

static void check_to_f32(const mlstack__kernels *k) {
    int i;
    /* to_f32 (weight rows to f32): every F16 and BF16 bit pattern, and F32, with tails */
    if (TK_COMPARE(k, to_f32)) {
        static const mlstack_dtype dts[] = {MLSTACK_DTYPE_F32, MLSTACK_DTYPE_F16, MLSTACK_DTYPE_BF16};
        unsigned char *src = (unsigned char *)malloc(65536 * 4);
        float *f0 = (float *)malloc(sizeof(float) * 65536), *f1 = (float *)malloc(sizeof(float) * 65536);
        int di, ni2;
        for (i = 0; i < 65536; i++) {
            float f = frand() * 1000.0f;
            src[2 * i] = (unsigned char)i, src[2 * i + 1] = (unsigned char)(i >> 8);
            if (i < 32768) memcpy(src + 131072 + 4 * i, &f, 4); /* the F32 case reads 4 bytes a value */
        }
        for (di = 0; di < 3; di++)
            for (ni2 = 0; ni2 < 3; ni2++) {
                size_t n = dts[di] == MLSTACK_DTYPE_F32 ? (size_t)32768 - (size_t)ni2 : (size_t)65536 - (size_t)ni2;
                const unsigned char *s0 = dts[di] == MLSTACK_DTYPE_F32 ? src + 131072 : src;
                int bad = -1;
                mlstack__to_f32(dts[di], s0, f0, n);
                k->to_f32(dts[di], s0, f1, n);
                for (i = 0; i < (int)n && bad < 0; i++)
                    if (memcmp(&f0[i], &f1[i], 4) && !(f0[i] != f0[i] && f1[i] != f1[i])) bad = i;
                CHECKF(bad < 0, "%s to_f32 dtype %d n %d: [%d] %.9g, the reference %.9g", k->name, (int)dts[di], (int)n,
                       bad, bad < 0 ? 0.0 : f1[bad], bad < 0 ? 0.0 : f0[bad]);
            }
        free(src), free(f0), free(f1);
    }
}

/* rmsnorm and swiglu: the reference's bits (the vector exp is a polynomial) */
static void check_norm_act(const mlstack__kernels *k) {
    int i;
    float a[77], b[77];
    int n, do_rms = TK_COMPARE(k, rmsnorm), do_sw = TK_COMPARE(k, swiglu);
    for (i = 0; i < 77; i++) a[i] = frand(), b[i] = frand();
        /* rmsnorm and swiglu (the vector exp is a polynomial: relative error ~1e-6) */
    for (n = 1; n <= 77 && (do_rms || do_sw); n += 19) {
        float r0[77], r1[77], g0[77], g1[77];
        int k2, bad_r = -1, bad_g = -1;
        mlstack__rmsnorm(r0, a, b, n, 1e-5f);
        k->rmsnorm(r1, a, b, n, 1e-5f);
        for (i = 0; i < n; i++) g0[i] = g1[i] = a[i] * 12.0f; /* arguments of e^x up to |12| */
        mlstack__swiglu_scalar(g0, b, n);
        k->swiglu(g1, b, n);
        for (k2 = n - 1; k2 >= 0; k2--) {
            if (memcmp(&r0[k2], &r1[k2], 4)) bad_r = k2;
            if (memcmp(&g0[k2], &g1[k2], 4)) bad_g = k2;
        }
        if (do_rms)
            CHECKF(bad_r < 0, "%s rmsnorm n=%d [%d]: %.9g vs %.9g", k->name, n, bad_r, r1[bad_r < 0 ? 0 : bad_r],
                   r0[bad_r < 0 ? 0 : bad_r]);
        if (do_sw)
            CHECKF(bad_g < 0, "%s swiglu n=%d [%d]: %.9g vs %.9g", k->name, n, bad_g, g1[bad_g < 0 ? 0 : bad_g],
                   g0[bad_g < 0 ? 0 : bad_g]);
    }
}

/* gelu_tanh (with and without u) and softcap: the scalar rule's bits, over arguments that reach
   tanh's saturation (|v| > 9), zeros of both signs, and lengths with every tail */
static void check_gelu_softcap(const mlstack__kernels *k) {
    enum { N = 301 };
    static float x[N], u[N], g0[N], g1[N], h0[N], h1[N], s0[N], s1[N];
    int i, n, do_g = TK_COMPARE(k, gelu_tanh), do_s = TK_COMPARE(k, softcap);
    for (i = 0; i < N; i++) x[i] = frand() * (i % 3 == 0 ? 12.0f : i % 3 == 1 ? 3.0f : 60.0f), u[i] = frand();
    x[0] = 0.0f, x[1] = -0.0f, x[2] = 9.5f, x[3] = -9.5f, x[4] = 1e-30f;
    for (n = 1; n <= N && (do_g || do_s); n += n < 20 ? 1 : 37) {
        int bad_g = -1, bad_h = -1, bad_s = -1;
        memcpy(g0, x, sizeof x), memcpy(g1, x, sizeof x), memcpy(h0, x, sizeof x), memcpy(h1, x, sizeof x);
        memcpy(s0, x, sizeof x), memcpy(s1, x, sizeof x);
        mlstack__gelu_tanh_scalar(g0, u, n), k->gelu_tanh(g1, u, n);
        mlstack__gelu_tanh_scalar(h0, NULL, n), k->gelu_tanh(h1, NULL, n);
        mlstack__softcap_scalar(s0, (size_t)n, 30.0f), k->softcap(s1, (size_t)n, 30.0f);
        for (i = N - 1; i >= 0; i--) { /* past n: untouched */
            if (memcmp(&g0[i], &g1[i], 4)) bad_g = i;
            if (memcmp(&h0[i], &h1[i], 4)) bad_h = i;
            if (memcmp(&s0[i], &s1[i], 4)) bad_s = i;
        }
        if (do_g)
            CHECKF(bad_g < 0 && bad_h < 0, "%s gelu_tanh n=%d [%d, %d]: %.9g vs %.9g", k->name, n, bad_g, bad_h,
                   g1[bad_g < 0 ? 0 : bad_g], g0[bad_g < 0 ? 0 : bad_g]);
        if (do_s)
            CHECKF(bad_s < 0, "%s softcap n=%d [%d]: %.9g vs %.9g", k->name, n, bad_s, s1[bad_s < 0 ? 0 : bad_s],
                   s0[bad_s < 0 ? 0 : bad_s]);
    }
}

/* Whether G heads' n scores (rows of 32) have the same bits in a and b. */
static int same_score_rows(const float *a, const float *b, int G, int n) {
    int g, same = 1;
    for (g = 0; g < G; g++) same &= !memcmp(a + g * 32, b + g * 32, sizeof(float) * (size_t)n);
    return same;
}

/* AltUp's route, prediction and correction: the scalar rule's bits (n streams, D with tails) */
static void check_altup(const mlstack__kernels *k) {
    enum { NS = 5, DM = 45 };
    static float X[NS * DM], c[NS * NS], x[DM], w[NS * DM], sc[NS], y0[NS * DM], y1[NS * DM];
    float r0[NS], r1[NS];
    int i, n, D, do_r = TK_COMPARE(k, altup_route), do_p = TK_COMPARE(k, altup_pred), do_c = TK_COMPARE(k, altup_corr);
    for (i = 0; i < NS * DM; i++) X[i] = frand() * 4.0f, w[i] = frand();
    for (i = 0; i < NS * NS; i++) c[i] = frand();
    for (i = 0; i < DM; i++) x[i] = frand() * 3.0f;
    for (i = 0; i < NS; i++) sc[i] = frand() + 1.0f;
    for (n = 1; n <= NS && (do_r || do_p || do_c); n += 2)
        for (D = 1; D <= DM; D += 11) {
            mlstack__altup_route_scalar(x, w, n, D, 1.0f / D, r0), k->altup_route(x, w, n, D, 1.0f / D, r1);
            if (do_r) CHECKF(!memcmp(r0, r1, sizeof(float) * n), "%s altup_route n=%d D=%d", k->name, n, D);
            memset(y0, 0, sizeof y0), memset(y1, 0, sizeof y1);
            mlstack__altup_pred_scalar(X, DM, n, c, y0, D), k->altup_pred(X, DM, n, c, y1, D);
            if (do_p) CHECKF(!memcmp(y0, y1, sizeof y0), "%s altup_pred n=%d D=%d", k->name, n, D);
            memset(y0, 0, sizeof y0), memset(y1, 0, sizeof y1);
            mlstack__altup_corr_scalar(x, X, DM, n, n / 2, sc, y0, D), k->altup_corr(x, X, DM, n, n / 2, sc, y1, D);
            if (do_c) CHECKF(!memcmp(y0, y1, sizeof y0), "%s altup_corr n=%d D=%d", k->name, n, D);
        }
}

static void check_rope_ops(const mlstack__kernels *k) {
    int i;
    /* rotary embedding: table and rotation, the reference's bits (head dims with tails) */
    {
        static const int Dhs3[] = {64, 128, 12, 80};
        static const int poss[] = {0, 1, 17, 4095, 131071};
        float inv[64], c0[128], c1[128], v0[128], v1[128];
        int di, pi, do_tab = TK_COMPARE(k, rope_table), do_app = TK_COMPARE(k, rope_apply);
        for (di = 0; di < 4 && (do_tab || do_app); di++) {
            int Dh = Dhs3[di];
            for (i = 0; i < Dh / 2; i++) inv[i] = (float)pow(10000.0, -2.0 * i / Dh);
            for (pi = 0; pi < 5; pi++) {
                mlstack__rope_table(c0, Dh, poss[pi], inv);
                k->rope_table(c1, Dh, poss[pi], inv);
                if (do_tab)
                    CHECKF(!memcmp(c0, c1, sizeof(float) * (size_t)Dh),
                           "%s rope_table Dh %d pos %d differs from the reference", k->name, Dh, poss[pi]);
                for (i = 0; i < Dh; i++) v0[i] = v1[i] = frand();
                mlstack__rope_apply(v0, Dh, c0);
                k->rope_apply(v1, Dh, c0);
                if (do_app)
                    CHECKF(!memcmp(v0, v1, sizeof(float) * (size_t)Dh),
                           "%s rope_apply Dh %d differs from the reference", k->name, Dh);
            }
        }
    }
}

static void check_quantize_rows(const mlstack__kernels *k) {
    int i;
    /* activation quantization: the same bits as the scalar reference */
    if (TK_COMPARE(k, quantize_rows)) {
        float xr[3 * 96];
        mlstack__q8x q0[9], q1[9];
        int bad = -1;
        for (i = 0; i < 3 * 96; i++) xr[i] = frand() * (i % 7 == 0 ? 100.0f : 1.0f);
        for (i = 0; i < 32; i++) xr[96 + i] = 0; /* an all-zero block */
        xr[192] = 127.0f, xr[193] = 2.5f, xr[194] = -2.5f, xr[195] = 0.5f; /* scale 1: exact ties */
        mlstack__quantize_rows(xr, q0, 3, 96);
        k->quantize_rows(xr, q1, 3, 96);
        for (i = 8; i >= 0; i--)
            if (!(q0[i].d == q1[i].d && q0[i].s == q1[i].s && q0[i].sum == q1[i].sum && !memcmp(q0[i].q, q1[i].q, 32)))
                bad = i;
        CHECKF(bad < 0, "%s quantize_rows block %d differs from the scalar reference", k->name, bad);
    }
}

static void check_kv_from_f32(const mlstack__kernels *k) {
    int i;
    /* f32 -> KV dtype: the reference's bits (ties, subnormals, overflow; NaN only for BF16,
       whose payload rule both share) */
    if (TK_IS_REF(k) || TK_COMPARE(k, from_f32)) {
        static const mlstack_dtype dts[] = {MLSTACK_DTYPE_F32, MLSTACK_DTYPE_F16, MLSTACK_DTYPE_BF16};
        float src[203];
        unsigned char d0[203 * 4], d1[203 * 4];
        int di;
        for (i = 0; i < 203; i++) src[i] = frand() * (i % 4 == 0 ? 1e-6f : i % 4 == 1 ? 70000.0f : 1.0f);
        src[3] = 1.0f + 1.0f / 2048.0f; /* an f16 tie */
        src[5] = -(1.0f + 3.0f / 2048.0f);
        src[6] = 1.0f + 1.0f / 256.0f; /* a bf16 tie */
        /* just above half the smallest f16 subnormal (2^-25) rounds up to it; at or below, to zero */
        if (TK_IS_REF(k)) {
            CHECK(mlstack__f32_to_f16(3.0e-8f) == 1 && mlstack__f32_to_f16(-3.0e-8f) == 0x8001);
            CHECK(mlstack__f32_to_f16(2.9802322e-8f) == 0 && mlstack__f32_to_f16(2.9e-8f) == 0);
        }
        for (di = 0; di < 3 && !TK_IS_REF(k); di++) {
            size_t es = dts[di] == MLSTACK_DTYPE_F32 ? 4 : 2;
            if (dts[di] == MLSTACK_DTYPE_BF16) src[7] = NAN;
            mlstack__from_f32(dts[di], src, d0, 203);
            k->from_f32(dts[di], src, d1, 203);
            CHECKF(!memcmp(d0, d1, 203 * es), "%s from_f32 dtype %d differs from the reference", k->name, (int)dts[di]);
        }
    }
}

static void check_kv_chunk(const mlstack__kernels *k) {
    /* K/V chunk conversion: a chunk's positions in runs over pages of P slots (a page's keys
       block transposed, [Dh][P]; its values block [P][Dh]), starting anywhere in a page; kt and vf
       checked against the values as stored (each f32 as the test wrote it, each f16 / bf16 by
       its own formula), and every table against the reference */
    if (TK_IS_REF(k) || TK_COMPARE(k, kv_chunk)) {
        static const mlstack_dtype dts[] = {MLSTACK_DTYPE_F32, MLSTACK_DTYPE_F16, MLSTACK_DTYPE_BF16};
        static const int Dhs2[] = {64, 80, 7}, ns2[] = {1, 17, 32}, Ps[] = {16, 5, 64}, t0s[] = {0, 3, 15};
        enum { NPG = 8, MAXP = 64, MAXD = 80 };
        /* NPG pages of 2 blocks (K, V) of MAXP x MAXD, and room for a load past the last block */
        size_t pool_elems = (size_t)NPG * 2 * MAXP * MAXD + 64;
        unsigned char *pool = (unsigned char *)malloc(pool_elems * 4);
        float *kt0 = (float *)malloc(sizeof(float) * MAXD * 32), *kt1 = (float *)malloc(sizeof(float) * MAXD * 32);
        float *vf0 = (float *)malloc(sizeof(float) * 32 * MAXD), *vf1 = (float *)malloc(sizeof(float) * 32 * MAXD);
        const void *kp[33], *vp[33];
        int len[33], di, dd, nn2, pi, ti, j, d;
        for (di = 0; di < 3; di++) {
            size_t es = dts[di] == MLSTACK_DTYPE_F32 ? 4 : 2;
            kv_pool_fill(pool, pool_elems, dts[di]);
            for (dd = 0; dd < 3; dd++)
                for (nn2 = 0; nn2 < 3; nn2++)
                    for (pi = 0; pi < 3; pi++)
                        for (ti = 0; ti < 3; ti++) {
                            int Dh = Dhs2[dd], n = ns2[nn2], P = Ps[pi], t0 = t0s[ti] % P, slot, ok = 1, nr;
                            if (!TK_KEEP(di + dd + nn2 + pi + ti)) continue;
                            nr = kv_runs(pool, (size_t)2 * MAXP * MAXD * es, 0, P, Dh, t0, n, es, kp, vp, len);
                            memset(kt1, 0xFF, sizeof(float) * MAXD * 32);
                            mlstack__kv_chunk_scalar(dts[di], kp, vp, len, nr, (size_t)P, Dh, kt0, vf0);
                            k->kv_chunk(dts[di], kp, vp, len, nr, (size_t)P, Dh, kt1, vf1);
                            if (!TK_IS_REF(k))
                                CHECKF(!memcmp(kt0, kt1, sizeof(float) * (size_t)Dh * 32) &&
                                           !memcmp(vf0, vf1, sizeof(float) * (size_t)n * Dh),
                                       "%s kv_chunk dtype %d Dh %d n %d P %d from slot %d differs from the reference",
                                       k->name, (int)dts[di], Dh, n, P, t0);
                            if (!TK_IS_REF(k)) continue;
                            for (j = 0, slot = 0, nr = 0; j < 32; j++) { /* the reference against the stored values */
                                for (d = 0; d < Dh; d++) {
                                    float want = 0, wv = 0;
                                    if (j < n) {
                                        const unsigned char *kb = (const unsigned char *)kp[nr] +
                                                                  ((size_t)d * P + slot) * es,
                                                            *vb = (const unsigned char *)vp[nr] +
                                                                  ((size_t)slot * Dh + d) * es;
                                        uint16_t hk, hv;
                                        memcpy(&hk, kb, 2), memcpy(&hv, vb, 2);
                                        if (es == 4) memcpy(&want, kb, 4), memcpy(&wv, vb, 4);
                                        else if (dts[di] == MLSTACK_DTYPE_F16)
                                            want = f16_value(hk), wv = f16_value(hv);
                                        else {
                                            uint32_t bk = (uint32_t)hk << 16, bv = (uint32_t)hv << 16;
                                            memcpy(&want, &bk, 4), memcpy(&wv, &bv, 4);
                                        }
                                        if (memcmp(&vf0[(size_t)j * Dh + d], &wv, 4)) ok = 0;
                                    }
                                    if (memcmp(&kt0[(size_t)d * 32 + j], &want, 4)) ok = 0;
                                }
                                if (j < n && ++slot == len[nr]) slot = 0, nr++;
                            }
                            CHECKF(ok, "scalar kv_chunk dtype %d Dh %d n %d P %d from slot %d: not the stored values",
                                   (int)dts[di], Dh, n, P, t0);
                        }
        }
        free(pool), free(kt0), free(kt1), free(vf0), free(vf1);
    }
}

static void check_attn_from_cache(const mlstack__kernels *k) {
    int i;
    /* the scores and pv ops straight from the cache (a chunk one query row reads): the same bits
       as the ops on the chunk's f32 copy, for runs over pages of 8, 16 and 64 slots from a slot
       that is a multiple of 8, short last runs, and 1-8 heads */
    if (k->attn_scores_kv && k->attn_pv_kv) {
        static const mlstack_dtype dts[] = {MLSTACK_DTYPE_F32, MLSTACK_DTYPE_F16, MLSTACK_DTYPE_BF16};
        static const int Gs[] = {1, 2, 3, 4, 5, 8}, Dhs[] = {16, 56, 64, 128}, ns[] = {1, 8, 17, 32},
                         Ps[] = {8, 16, 64}; /* Dh 56: tiles of 4 + 2 + 1 vectors */
        int do_s = TK_COMPARE(k, attn_scores_kv), do_p = TK_COMPARE(k, attn_pv_kv);
        enum { NPG = 8, MAXP = 64, MAXD = 128 };
        size_t pool_elems = (size_t)NPG * 2 * MAXP * MAXD;
        unsigned char *pool = (unsigned char *)malloc(pool_elems * 4);
        float *kt = (float *)malloc(sizeof(float) * MAXD * 32), *vf = (float *)malloc(sizeof(float) * 32 * MAXD);
        static float q[8 * 128], s0[8 * 32], s1[8 * 32], a0[8 * 128], a1[8 * 128];
        const void *kp[33], *vp[33];
        int len[33], di, gi, dd, nn, pi, t0;
        mlstack__fetch fe;
        for (i = 0; i < 8 * 128; i++) q[i] = frand();
        for (di = 0; di < 3 && (do_s || do_p); di++) {
            size_t es = dts[di] == MLSTACK_DTYPE_F32 ? 4 : 2;
            kv_pool_fill(pool, pool_elems, dts[di]);
            for (gi = 0; gi < 6; gi++)
                for (dd = 0; dd < 4; dd++)
                    for (nn = 0; nn < 4; nn++)
                        for (pi = 0; pi < 3; pi++)
                            for (t0 = 0; t0 < 16; t0 += 8) {
                                int G = Gs[gi], Dh = Dhs[dd], n = ns[nn], P = Ps[pi], same_s, same_a, nr;
                                if (!TK_KEEP(di + gi + dd + nn + pi + t0 / 8)) continue;
                                nr = kv_runs(pool, (size_t)2 * MAXP * MAXD * es, 3, P, Dh, t0 % P, n, es, kp, vp, len);
                                mlstack__kv_chunk_scalar(dts[di], kp, vp, len, nr, (size_t)P, Dh, kt, vf);
                                mlstack__attn_scores_scalar(q, G, Dh, kt, n, 0.125f, s0);
                                fe.i = 0, fe.n = 1, fe.at = fe.end = NULL; /* lines asked for on the way: no effect */
                                fe.lo[0] = pool, fe.hi[0] = pool + 4096 + 32;
                                k->attn_scores_kv(q, G, Dh, dts[di], kp, len, nr, (size_t)P, 0.125f, s1, &fe);
                                same_s = same_score_rows(s0, s1, G, n);
                                if (do_s)
                                    CHECKF(
                                        same_s,
                                        "%s scores from the cache, dtype %d G%d Dh%d n%d P%d slot %d: not the copy's",
                                        k->name, (int)dts[di], G, Dh, n, P, t0 % P);
                                for (i = 0; i < G * Dh; i++) a0[i] = a1[i] = frand();
                                mlstack__attn_pv_scalar(a0, G, Dh, s0, vf, n);
                                k->attn_pv_kv(a1, G, Dh, s0, dts[di], vp, len, nr, &fe);
                                same_a = !memcmp(a0, a1, sizeof(float) * (size_t)(G * Dh));
                                if (do_p)
                                    CHECKF(same_a,
                                           "%s pv from the cache, dtype %d G%d Dh%d n%d P%d slot %d: not the copy's",
                                           k->name, (int)dts[di], G, Dh, n, P, t0 % P);
                            }
        }
        free(pool), free(kt), free(vf);
    }
}

/* The scores and pv ops straight from a quantized cache (Q8_0 and Q4_0 keys and values, each
   type with each): the same bits as the reference's dequantized copy (mlstack__kv_deq_keys,
   mlstack__kv_deq_block) through the scalar chunk ops, for pages of 8, 16 and 64 slots, short
   last runs, head sizes of 1-4 blocks and 1-8 heads; every byte of the pages random but the
   scales (f16 of about 2^-8 .. 1, of either sign). */
static void check_attn_from_quant_cache(const mlstack__kernels *k) {
    static const uint32_t qts[] = {MLSTACK__GGML_Q8_0, MLSTACK__GGML_Q4_0};
    static const int Gs[] = {1, 2, 3, 4, 8}, Dhs[] = {32, 64, 96, 128}, ns[] = {1, 8, 17, 32}, Ps[] = {8, 16, 64};
    enum { NPG = 8, MAXP = 64, MAXB = 4 * 34 };
    static unsigned char pool[NPG * MAXP * 2 * MAXB];
    static float q[8 * 128], kt[128 * 32], vf[32 * 128], s0[8 * 32], s1[8 * 32], a0[8 * 128], a1[8 * 128];
    const void *kp[33], *vp[33];
    int do_s, do_p, ki, vi, gi, dd, nn, pi, t0, i, j, d;
    mlstack__fetch fe;
    if (!k->attn_scores_kq || !k->attn_pv_kq) return;
    do_s = TK_COMPARE(k, attn_scores_kq), do_p = TK_COMPARE(k, attn_pv_kq);
    for (i = 0; i < 8 * 128; i++) q[i] = frand();
    for (ki = 0; ki < 2 && (do_s || do_p); ki++)
        for (vi = 0; vi < 2; vi++)
            for (dd = 0; dd < 4; dd++)
                for (pi = 0; pi < 3; pi++) {
                    int Dh = Dhs[dd], P = Ps[pi], nb = Dh / 32;
                    size_t kbs = qts[ki] == MLSTACK__GGML_Q8_0 ? 34 : 18, vbs = qts[vi] == MLSTACK__GGML_Q8_0 ? 34 : 18,
                           kb = kbs * (size_t)nb, vb = vbs * (size_t)nb, pg = (size_t)P * (kb + vb);
                    for (i = 0; i < (int)sizeof pool; i++) pool[i] = (unsigned char)(frand() * 128 + 128);
                    for (i = 0; i < NPG;
                         i++) { /* the scales: keys' rows 0 and 1 of each block, values' first 2 bytes */
                        unsigned char *page = pool + (size_t)i * pg;
                        int b;
                        for (b = 0; b < nb; b++)
                            for (j = 0; j < P; j++) {
                                uint16_t h = mlstack__f32_to_f16(frand() * (j % 5 ? 1.0f : 1.0f / 256));
                                page[b * kbs * (size_t)P + (size_t)j] = (unsigned char)(h & 255);
                                page[(b * kbs + 1) * (size_t)P + (size_t)j] = (unsigned char)(h >> 8);
                                h = mlstack__f32_to_f16(frand() * (j % 3 ? 1.0f : 1.0f / 256));
                                memcpy(page + (size_t)P * kb + (size_t)j * vb + b * vbs, &h, 2);
                            }
                    }
                    for (gi = 0; gi < 5; gi++)
                        for (nn = 0; nn < 4; nn++)
                            for (t0 = 0; t0 < 16 && t0 < P; t0 += 8) {
                                int G = Gs[gi], n = ns[nn], nr = 0, slot = t0, m = n, same_s, same_a;
                                int len[33];
                                if (!TK_KEEP(ki + vi + dd + pi + gi + nn + t0 / 8)) continue;
                                for (; m > 0; m -= len[nr++], slot = 0) { /* runs over pages out of order */
                                    const unsigned char *page = pool + (size_t)((nr * 5 + 3) % NPG) * pg;
                                    len[nr] = P - slot < m ? P - slot : m;
                                    kp[nr] = page + slot, vp[nr] = page + (size_t)P * kb + (size_t)slot * vb;
                                }
                                for (j = 0, i = 0; i < nr; j += len[i++]) {
                                    mlstack__kv_deq_keys(qts[ki], (const unsigned char *)kp[i], (size_t)P, len[i],
                                                         (size_t)Dh, kt, j);
                                    for (m = 0; m < len[i]; m++)
                                        for (d = 0; d < Dh; d += 32)
                                            mlstack__kv_deq_block(qts[vi],
                                                                  (const unsigned char *)vp[i] + (size_t)m * vb +
                                                                      (size_t)d / 32 * vbs,
                                                                  vf + (size_t)(j + m) * Dh + d);
                                }
                                mlstack__kt_zero(kt, n, Dh);
                                mlstack__attn_scores_scalar(q, G, Dh, kt, n, 0.125f, s0);
                                fe.i = 0, fe.n = 1, fe.at = fe.end = NULL; /* lines asked for on the way: no effect */
                                fe.lo[0] = pool, fe.hi[0] = pool + 4096 + 32;
                                k->attn_scores_kq(q, G, Dh, qts[ki], kp, len, nr, (size_t)P, 0.125f, s1, &fe);
                                same_s = same_score_rows(s0, s1, G, n);
                                if (do_s && vi == 0)
                                    CHECKF(same_s,
                                           "%s scores from the quantized cache, type %u G%d Dh%d n%d P%d slot %d: not "
                                           "the copy's",
                                           k->name, (unsigned)qts[ki], G, Dh, n, P, t0);
                                for (i = 0; i < G * Dh; i++) a0[i] = a1[i] = frand();
                                mlstack__attn_pv_scalar(a0, G, Dh, s0, vf, n);
                                k->attn_pv_kq(a1, G, Dh, s0, qts[vi], vp, len, nr, &fe);
                                same_a = !memcmp(a0, a1, sizeof(float) * (size_t)(G * Dh));
                                if (do_p && ki == 0)
                                    CHECKF(same_a,
                                           "%s pv from the quantized cache, type %u G%d Dh%d n%d P%d slot %d: not the "
                                           "copy's",
                                           k->name, (unsigned)qts[vi], G, Dh, n, P, t0);
                            }
                }
}

static void check_attn_chunk(const mlstack__kernels *k) {
    int i;
    /* attention chunk ops: scores, softmax and pv, for head dims with tails and short chunks (every
       length mod 4, so a 4-lane tail of 1, 2 and 3); one check per shape (the first differing
       element is reported) */
    {
        static const int Gs[] = {1, 2, 3, 4, 5, 8}, Dhs[] = {16, 64, 80, 7, 128, 56}, ns[] = {1, 16, 19, 30};
        static float q[8 * 128], kt[128 * 32], v[32 * 128], s0[8 * 32], s1[8 * 32], a0[8 * 128], a1[8 * 128];
        int gi, di, nn, j, ref = TK_IS_REF(k), do_sc = TK_COMPARE(k, attn_scores), do_sm = TK_COMPARE(k, softmax),
                           do_pv = TK_COMPARE(k, attn_pv), alone = tk_first((tk_fn)k->attn_scores, TK_ALONE);
        for (i = 0; i < 128 * 32; i++) kt[i] = frand(), v[i] = frand();
        for (i = 0; i < 8 * 128; i++) q[i] = frand(), a0[i] = a1[i] = frand();
        for (gi = 0; gi < 6 && (ref || do_sc || do_sm || do_pv || alone); gi++)
            for (di = 0; di < 6; di++)
                for (nn = 0; nn < 4; nn++) {
                    int G = Gs[gi], Dh = Dhs[di], n = ns[nn], g, mi, bad = -1;
                    float e0m[8], e0d[8], e0c[8];
                    if (!TK_KEEP(gi + di + nn)) continue;
                    mlstack__attn_scores_scalar(q, G, Dh, kt, n, 0.125f, s0);
                    k->attn_scores(q, G, Dh, kt, n, 0.125f, s1);
                    for (g = G - 1; g >= 0; g--)
                        for (j = n - 1; j >= 0; j--)
                            if (memcmp(&s0[g * 32 + j], &s1[g * 32 + j], 4)) bad = g * 32 + j;
                    if (do_sc)
                        CHECKF(bad < 0, "%s scores G%d Dh%d n%d [%d][%d]: %g vs %g", k->name, G, Dh, n, bad / 32,
                               bad % 32, s1[bad < 0 ? 0 : bad], s0[bad < 0 ? 0 : bad]);
                    for (g = 0, bad = -1; g < G && alone; g++) { /* a head's scores do not depend on the heads
                                                                    computed with it */
                        float s2[32];
                        k->attn_scores(q + g * Dh, 1, Dh, kt, n, 0.125f, s2);
                        if (bad < 0 && memcmp(s2, s1 + g * 32, sizeof(float) * (size_t)n)) bad = g;
                    }
                    if (alone) CHECKF(bad < 0, "%s scores G%d Dh%d n%d: head %d alone differs", k->name, G, Dh, n, bad);
                    for (mi = 0; mi < 5 && (ref || do_sm); mi++) { /* the step from a fresh max, a lower one, a
                                                                      higher one, odd scores, a max 100 below with
                                                                      scores 100 apart (e^x = 0 below -87) */
                        float m0[8], m1[8], d0[8], d1[8], c0[8], c1[8], t0[8 * 32], t1[8 * 32];
                        int bad_h = -1;
                        memcpy(t0, s0, sizeof t0), memcpy(t1, s0, sizeof t1);
                        if (mi == 3) /* a NaN score (ignored by the max), equal maxima and both zeros */
                            for (g = 0; g < G; g++) {
                                t0[g * 32] = t1[g * 32] = NAN;
                                if (n > 2)
                                    t0[g * 32 + 1] = t1[g * 32 + 1] = -0.0f, t0[g * 32 + 2] = t1[g * 32 + 2] = 0.0f;
                                if (n > 16) t0[g * 32 + 16] = t1[g * 32 + 16] = t0[g * 32 + n - 1];
                            }
                        if (mi == 4) /* corr and every other weight below e^-87: exactly 0 on every path */
                            for (g = 0; g < G; g++)
                                for (j = 1; j < n; j += 2) t0[g * 32 + j] = t1[g * 32 + j] = s0[g * 32 + j] - 100.0f;
                        for (g = 0; g < G; g++) {
                            m0[g] = m1[g] = mi == 0 || mi == 3 ? -FLT_MAX
                                            : mi == 1          ? -0.3f + 0.1f * (float)g
                                            : mi == 4          ? -100.0f
                                                               : 64.0f;
                            d0[g] = d1[g] = mi == 0 || mi == 3 ? 0.0f : 1.5f + (float)g;
                        }
                        mlstack__softmax_scalar(t0, G, n, m0, d0, c0);
                        k->softmax(t1, G, n, m1, d1, c1);
                        for (g = G - 1, bad = -1; g >= 0; g--) {
                            if (memcmp(&m0[g], &m1[g], 4) || memcmp(&d0[g], &d1[g], 4) || memcmp(&c0[g], &c1[g], 4))
                                bad_h = g;
                            for (j = n - 1; j >= 0; j--)
                                if (memcmp(&t0[g * 32 + j], &t1[g * 32 + j], 4)) bad = g * 32 + j;
                        }
                        if (do_sm) {
                            g = bad_h < 0 ? 0 : bad_h;
                            CHECKF(bad_h < 0 && bad < 0,
                                   "%s softmax G%d n%d case %d: head %d max %.9g den %.9g corr %.9g vs %.9g %.9g %.9g; "
                                   "[%d][%d] %.9g vs %.9g",
                                   k->name, G, n, mi, bad_h, m1[g], d1[g], c1[g], m0[g], d0[g], c0[g], bad / 32,
                                   bad % 32, t1[bad < 0 ? 0 : bad], t0[bad < 0 ? 0 : bad]);
                        }
                        if (!ref) continue;
                        CHECKF(mi != 2 || c0[0] == 1.0f, "softmax: a max above every score must stay (corr %g)", c0[0]);
                        CHECKF(mi != 4 || (c0[0] == 0.0f && t0[1] == 0.0f) || n < 2,
                               "softmax: a max 100 up rescales by exactly 0 (corr %g, p %g)", c0[0], t0[1]);
                        if (mi < 3) { /* the C rule against libm: e^(s - m) of the float difference, the sum and
                                         the correction in double */
                            int ok = 1;
                            char why[200] = "";
                            for (g = 0; g < G; g++) {
                                float mo = mi == 0 ? -FLT_MAX : mi == 1 ? -0.3f + 0.1f * (float)g : 64.0f, mx = mo;
                                double d_old = mi == 0 ? 0.0 : 1.5 + g, sum = 0, c, want;
                                for (j = 0; j < n; j++) mx = s0[g * 32 + j] > mx ? s0[g * 32 + j] : mx;
                                c = mi == 0 ? 0.0 : exp((double)(mo - mx));
                                for (j = 0; j < n; j++) {
                                    double e = exp((double)(s0[g * 32 + j] - mx));
                                    sum += e;
                                    if (ok && !(fabs(t0[g * 32 + j] - e) <= 1e-6 * e))
                                        ok = 0,
                                        snprintf(why, sizeof why, "[%d][%d]: %.9g, libm %.9g", g, j, t0[g * 32 + j], e);
                                }
                                want = d_old * c + sum;
                                if (ok && !(mx == m0[g] && fabs(d0[g] - want) <= 4e-6 * want &&
                                            (mi == 0 || fabs(c0[g] - c) <= 1e-6 * c + 1e-30)))
                                    ok = 0, snprintf(why, sizeof why,
                                                     "head %d: max %.9g den %.9g corr %.9g, libm %.9g %.9g %.9g", g,
                                                     m0[g], d0[g], c0[g], mx, want, c);
                            }
                            CHECKF(ok, "softmax G%d n%d case %d %s", G, n, mi, why);
                        }
                    }
                    for (g = 0; g < G; g++) e0m[g] = -FLT_MAX, e0d[g] = 0;
                    mlstack__softmax_scalar(s0, G, n, e0m, e0d, e0c); /* P.V below takes probabilities */
                    if (!do_pv) continue;
                    mlstack__attn_pv_scalar(a0, G, Dh, s0, v, n);
                    k->attn_pv(a1, G, Dh, s0, v, n);
                    for (i = G * Dh - 1, bad = -1; i >= 0; i--)
                        if (memcmp(&a0[i], &a1[i], 4)) bad = i;
                    CHECKF(bad < 0, "%s pv G%d Dh%d n%d [%d]: %g vs %g", k->name, G, Dh, n, bad, a1[bad < 0 ? 0 : bad],
                           a0[bad < 0 ? 0 : bad]);
                    memcpy(a1, a0, sizeof(float) * (size_t)G * Dh);
                }
    }
}

/* Mamba2's SSD step: the reference's bits (state and read) on head shapes with channel tails
   (P = 64, 80, 13, 4, 1) and state sizes 128, 16, 3, 1, over three tokens. */
static void check_ssd_step(const mlstack__kernels *k) {
    static const int Ps[] = {64, 80, 13, 4, 1}, Ns[] = {128, 16, 3, 1, 16};
    static float S0[128 * 80], S1[128 * 80];
    float x[80], B[128], C[128], y0[80], y1[80];
    int hi, i, t;
    if (!TK_COMPARE(k, ssd_step)) return;
    for (hi = 0; hi < 5; hi++) {
        int P = Ps[hi], N = Ns[hi];
        for (i = 0; i < N * P; i++) S0[i] = S1[i] = frand();
        for (t = 0; t < 3; t++) {
            float dt = 0.01f + 0.5f * frand() * frand(), dA = 0.5f + 0.5f * frand() * frand(), D = frand();
            for (i = 0; i < 128; i++) B[i] = frand(), C[i] = frand();
            for (i = 0; i < 80; i++) x[i] = frand() * 2.0f;
            mlstack__ssd_step_scalar(S0, x, B, C, dt, dA, D, N, P, y0);
            k->ssd_step(S1, x, B, C, dt, dA, D, N, P, y1);
            CHECKF(!memcmp(y0, y1, sizeof(float) * (size_t)P) && !memcmp(S0, S1, sizeof(float) * (size_t)N * P),
                   "%s ssd_step N %d P %d token %d differs from the reference", k->name, N, P, t);
        }
    }
}

/* The recurrent mixers' steps: the reference's bits for conv widths 1 to 5 over channel counts
   with vector tails (with and without bias and silu; the window moved on the same), and the
   delta rule on head shapes with column tails (the state, the read), over three tokens. */
static void check_mixer_steps(const mlstack__kernels *k) {
    static const int ns[] = {1, 7, 8, 13, 37, 64}, dks[] = {128, 16, 8, 3}, dvs[] = {128, 40, 13, 68};
    float w[5 * 64], b[64], x[64], win0[4 * 70], win1[4 * 70], o0[64], o1[64];
    float S0[128 * 128], S1[128 * 128], q[128], kk[128], v[128], y0[128], y1[128];
    int K, ni, i, t, hi, do_c = TK_COMPARE(k, conv_step), do_d = TK_COMPARE(k, dn_rule);
    for (K = 1; K <= 5 && do_c; K++)
        for (ni = 0; ni < 12; ni++) {
            int n = ns[ni % 6], mode = ni / 6; /* 0: bias and silu, 1: neither */
            for (i = 0; i < 5 * 64; i++) w[i] = frand();
            for (i = 0; i < 4 * 70; i++) win0[i] = win1[i] = frand() * 3.0f;
            for (t = 0; t < 3; t++) {
                for (i = 0; i < 64; i++) x[i] = frand() * 3.0f, b[i] = frand();
                mlstack__conv_step_scalar(w, mode ? NULL : b, K, win0, 70, x, o0, n, !mode);
                k->conv_step(w, mode ? NULL : b, K, win1, 70, x, o1, n, !mode);
                CHECKF(!memcmp(o0, o1, sizeof(float) * (size_t)n) && !memcmp(win0, win1, sizeof(win0)),
                       "%s conv_step K %d n %d mode %d token %d differs from the reference", k->name, K, n, mode, t);
            }
        }
    for (hi = 0; hi < 4 && do_d; hi++) {
        int dk = dks[hi], dv = dvs[hi];
        for (i = 0; i < dk * dv; i++) S0[i] = S1[i] = frand();
        for (t = 0; t < 3; t++) {
            float decay = 0.5f + 0.5f * frand() * frand(), beta = 0.5f + 0.5f * frand();
            for (i = 0; i < 128; i++) q[i] = frand(), kk[i] = frand() * 0.1f, v[i] = frand();
            mlstack__dn_rule_scalar(S0, kk, q, v, decay, beta, dk, dv, y0);
            k->dn_rule(S1, kk, q, v, decay, beta, dk, dv, y1);
            CHECKF(!memcmp(y0, y1, sizeof(float) * (size_t)dv) && !memcmp(S0, S1, sizeof(float) * (size_t)dk * dv),
                   "%s dn_rule dk %d dv %d token %d differs from the reference", k->name, dk, dv, t);
        }
    }
    check_ssd_step(k);
}

static void check_path(const mlstack__kernels *k) {
    check_matmul(k);
    check_to_f32(k);
    check_norm_act(k);
    check_gelu_softcap(k);
    check_altup(k);
    check_rope_ops(k);
    check_quantize_rows(k);
    check_kv_from_f32(k);
    check_kv_chunk(k);
    check_attn_from_cache(k);
    check_attn_from_quant_cache(k);
    check_attn_chunk(k);
    check_mixer_steps(k);
}

#if defined(MLSTACK__HAVE_NEON_DOT)
/* The SDOT and plain NEON int8 paths compute the same exact int32 lanes: identical bits, from
   rows and from P16 panels (two groups, the last panel partial). */
static void check_neon_dot_same(void) {
    static const int wtypes[] = {MLSTACK__W_Q8_0, MLSTACK__W_Q4_1};
    int wi, i, n_in = 576, n_out = 83, B = 7;
    for (wi = 0; wi < 4; wi++) {
        int wt = wtypes[wi & 1], pk = wi >> 1;
        size_t rb = mlstack__row_bytes(wt, n_in);
        float *wf = (float *)malloc(sizeof(float) * n_out * n_in), *x = (float *)malloc(sizeof(float) * B * n_in);
        float *y0 = (float *)malloc(sizeof(float) * B * n_out), *y1 = (float *)malloc(sizeof(float) * B * n_out);
        unsigned char *wd = (unsigned char *)malloc(rb * n_out), *packed = NULL;
        mlstack__q8x *xq = (mlstack__q8x *)malloc(sizeof(mlstack__q8x) * B * (n_in / 32));
        mlstack__weight w;
        for (i = 0; i < n_out * n_in; i++) wf[i] = frand();
        for (i = 0; i < B * n_in; i++) x[i] = frand();
        for (i = 0; i < n_out; i++) mlstack__quantize_row(wt, wf + (size_t)i * n_in, wd + (size_t)i * rb, n_in);
        mlstack__quantize_rows(x, xq, B, n_in);
        memset(&w, 0, sizeof w);
        w.data = wd, w.wtype = wt, w.n_out = n_out, w.n_in = n_in, w.row_bytes = rb;
        if (pk) {
            packed = (unsigned char *)malloc(mlstack__p16_bytes(wt, n_in) * (size_t)mlstack__p16_panels(n_out));
            for (i = 0; i * 64 < n_out; i++) mlstack__p16_pack_group(&w, i, 0, packed);
            w.packed = packed;
        }
        mlstack__kernels_named("neon")->matmul(&w, x, xq, y0, B, 0, n_out, NULL);
        mlstack__kernels_named("neon+dotprod")->matmul(&w, x, xq, y1, B, 0, n_out, NULL);
        CHECKF(memcmp(y0, y1, sizeof(float) * B * n_out) == 0, "wtype %d%s: neon and neon+dotprod differ", wt,
               pk ? " p16" : "");
        free(wf), free(x), free(y0), free(y1), free(wd), free(xq), free(packed);
    }
}
#endif

/* Load-time quantization on the pool (fast conversions) gives the bytes of the reference rows. */
static void check_quantize_weight(void) {
    static const int wtypes[] = {MLSTACK__W_Q8_0, MLSTACK__W_Q4_1};
    int wi, i, n_in = 96, n_out = 23;
    for (wi = 0; wi < 2; wi++) {
        int wt = wtypes[wi];
        size_t rb = mlstack__row_bytes(wt, n_in);
        float *wf = (float *)malloc(sizeof(float) * n_out * n_in);
        unsigned char *ref = (unsigned char *)malloc(rb * n_out), *got = (unsigned char *)malloc(rb * n_out);
        mlstack__weight w;
        mlstack__pool pool;
        for (i = 0; i < n_out * n_in; i++) wf[i] = frand() * (i % 5 == 0 ? 30.0f : 1.0f);
        wf[7] = 0.5f, wf[8] = -0.5f; /* ties */
        for (i = 0; i < n_out; i++) mlstack__quantize_row(wt, wf + (size_t)i * n_in, ref + (size_t)i * rb, n_in);
        memset(&w, 0, sizeof w);
        w.data = wf, w.wtype = MLSTACK__W_F32, w.n_out = n_out, w.n_in = n_in, w.row_bytes = (size_t)n_in * 4;
        CHECK(mlstack__pool_init(&pool, 2) == 0);
        CHECK(mlstack__quantize_weight(&pool, &w, wt, got) == 0);
        mlstack__pool_free(&pool);
        CHECKF(memcmp(ref, got, rb * n_out) == 0,
               "wtype %d: pooled load-time quantization differs from the reference rows", wt);
        free(wf), free(ref), free(got);
    }
}

/* Native GGML formats (>>kernels: Q5_0, Q5_1, Q2_K .. Q6_K, MXFP4, the i-quants, TQ1_0, TQ2_0) on path k: rows of random block
   bytes with modest f16 scales (both signs), n_out 37, 83 and 128 (short groups of panels, a
   partial panel, whole groups), B 1..9 and 17 (MXFP4 also n_in 224); from the rows and, where k packs the type, from
   its KQ panels, whole and in two ranges of rows (a split across tasks). The same bits as the
   scalar reference, each row alone the bits it gets in a batch, and every result within the
   error that rounding the activations to int8 allows of the f32 dot with the dequantized
   weights (the dequantizer matches gguf-py bit for bit, tests/test_gguf.c): |y - w.x| <=
   sum_k |w_k| d_x(k) / 2 plus f32 rounding. */
static void check_kq(const mlstack__kernels *k) {
    static const int wtypes[] = {MLSTACK__W_Q5_1,    MLSTACK__W_Q2_K,    MLSTACK__W_Q3_K,   MLSTACK__W_Q4_K,
                                 MLSTACK__W_Q5_K,    MLSTACK__W_Q6_K,    MLSTACK__W_Q5_0,   MLSTACK__W_MXFP4,
                                 MLSTACK__W_IQ4_XS,  MLSTACK__W_IQ2_XXS, MLSTACK__W_IQ2_XS, MLSTACK__W_IQ2_S,
                                 MLSTACK__W_IQ3_XXS, MLSTACK__W_IQ3_S,   MLSTACK__W_IQ1_S,  MLSTACK__W_IQ1_M,
                                 MLSTACK__W_TQ1_0,   MLSTACK__W_TQ2_0};
    /* f16 scale fields of each block: byte offset, count (MXFP4: its E8M0 byte; IQ1_M: the top
       nibbles of its scale words; both below) */
    static const int sc_off[] = {0, 80, 108, 0, 0, 208, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 52, 64},
                     sc_n[] = {2, 2, 1, 2, 2, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1};
    static const int n_ins[] = {256, 512, 1280}, n_outs[] = {37, 83, 128}, Bs[] = {1, 2, 3, 5, 9, 17};
    int wi, ni, no, bi, i, b, o, pk, mm_ref = (tk_fn)k->matmul == (tk_fn)tk_ref->matmul;
    /* the reference: its batch invariance and its bound against the dequantized product; every
       other table: the reference's bits (which imply that bound) and its own batch invariance */
    if (!tk_first((tk_fn)k->matmul, TK_KQ)) return;
    for (wi = 0; wi < (int)(sizeof wtypes / sizeof wtypes[0]); wi++)
        for (ni = 0; ni < 3; ni++)
            for (no = 0; no < 3; no++)
                if (TK_KEEP(wi + ni + no)) {
                    /* MXFP4's x86 kernels step 64 inputs at a time: 224 ends on a half step */
                    int wt = wtypes[wi], n_in = wt == MLSTACK__W_MXFP4 && ni == 0 ? 224 : n_ins[ni], n_out = n_outs[no],
                        gt = wt - 16, nblk, bs, j;
                    size_t rb = mlstack__row_bytes(wt, n_in);
                    unsigned char *wd = (unsigned char *)malloc(rb * n_out), *packed = NULL;
                    float *wf = (float *)malloc(sizeof(float) * n_out * n_in),
                          *x = (float *)malloc(sizeof(float) * 17 * n_in);
                    float *y = (float *)malloc(sizeof(float) * 17 * n_out),
                          *yr = (float *)malloc(sizeof(float) * 17 * n_out);
                    float *y1 = (float *)malloc(sizeof(float) * n_out),
                          *y2 = (float *)malloc(sizeof(float) * 17 * n_out), *scratch;
                    mlstack__q8x *xq = (mlstack__q8x *)malloc(sizeof(mlstack__q8x) * 17 * (n_in / 32));
                    mlstack__weight w;
                    int packs = (int)MLSTACK__PACKS_HAS(k->packs, wt);
                    scratch = (float *)malloc(sizeof(float) * MLSTACK__MM_SCRATCH(n_in));
                    bs = mlstack__ggml_types[gt].size;
                    nblk = (int)(rb * n_out / (size_t)bs);
                    for (i = 0; i < (int)(rb * n_out); i++) wd[i] = (unsigned char)(frand() * 128 + 128);
                    for (i = 0; i < nblk; i++)
                        for (j = 0; j < sc_n[wi]; j++) {
                            uint16_t h = mlstack__f32_to_f16(frand() * (wt <= MLSTACK__W_Q5_1 ? 0.05f : 0.003f));
                            memcpy(wd + (size_t)i * bs + sc_off[wi] + 2 * j, &h, 2);
                        }
                    if (wt == MLSTACK__W_MXFP4) /* exponents 2^-10 .. 2^-4, and in every 7th block the
                                               extremes: 2^-128 and 2^-127 (subnormal dw), 2^-126, 2^100 */
                        for (i = 0; i < nblk; i++) {
                            static const unsigned char ext[] = {0, 1, 2, 228};
                            wd[(size_t)i * bs] = i % 7 == 3 ? ext[(i / 7) % 4] : (unsigned char)(118 + (i * 5) % 7);
                        }
                    if (wt == MLSTACK__W_IQ1_M) /* d's four nibbles atop the four scale words */
                        for (i = 0; i < nblk; i++) {
                            uint16_t h = mlstack__f32_to_f16(frand() * 0.003f);
                            for (j = 0; j < 4; j++)
                                wd[(size_t)i * bs + 49 + 2 * j] =
                                    (unsigned char)((wd[(size_t)i * bs + 49 + 2 * j] & 15) | ((h >> (4 * j)) & 15)
                                                                                                 << 4);
                        }
                    for (o = 0; o < n_out; o++)
                        mlstack__ggml_dequant_row((uint32_t)gt, wd + o * rb, wf + (size_t)o * n_in, n_in);
                    for (i = 0; i < 17 * n_in; i++) x[i] = frand() * (i % 13 == 0 ? 20.0f : 1.0f);
                    memset(&w, 0, sizeof w);
                    w.data = wd, w.wtype = wt, w.n_out = n_out, w.n_in = n_in, w.row_bytes = rb;
                    mlstack__quantize_rows(x, xq, 17, n_in);
                    if (packs) {
                        packed =
                            (unsigned char *)malloc(mlstack__p16_bytes(wt, n_in) * (size_t)mlstack__p16_panels(n_out));
                        for (i = 0; i * 64 < n_out; i++) mlstack__p16_pack_group(&w, i, 0, packed);
                    }
                    for (pk = 0; pk <= packs; pk++) {
                        int same = 1, alone = 1, within = 1, split = 1;
                        double worst = 0;
                        w.packed = pk ? packed : NULL;
                        for (bi = 0; bi < 6; bi++) {
                            int B = Bs[bi];
                            w.packed = NULL;
                            mlstack__matmul_scalar(&w, x, xq, yr, B, 0, n_out, scratch);
                            w.packed = pk ? packed : NULL;
                            k->matmul(&w, x, xq, y, B, 0, n_out, scratch);
                            same &= memcmp(y, yr, sizeof(float) * B * n_out) == 0;
                            if (n_out > 64) { /* rows [0, 64) and [64, n_out), as two tasks */
                                k->matmul(&w, x, xq, y2, B, 0, 64, scratch);
                                k->matmul(&w, x, xq, y2, B, 64, n_out, scratch);
                                split &= memcmp(y, y2, sizeof(float) * B * n_out) == 0;
                            }
                            for (b = 0; b < B; b++) {
                                k->matmul(&w, x + (size_t)b * n_in, xq + (size_t)b * (n_in / 32), y1, 1, 0, n_out,
                                          scratch);
                                alone &= memcmp(y1, y + (size_t)b * n_out, sizeof(float) * n_out) == 0;
                                for (o = 0; o < n_out && mm_ref; o++) {
                                    double ref = 0, bound = 0, mag = 0;
                                    for (i = 0; i < n_in; i++) {
                                        double wv = wf[(size_t)o * n_in + i], xv = x[(size_t)b * n_in + i];
                                        ref += wv * xv;
                                        bound += fabs(wv) * xq[(size_t)b * (n_in / 32) + i / 32].d * 0.5;
                                        mag += fabs(wv * xv);
                                    }
                                    bound = bound * 1.0001 + 1e-5 * mag + 1e-30;
                                    if (fabs(y[(size_t)b * n_out + o] - ref) > bound) within = 0;
                                    if (fabs(y[(size_t)b * n_out + o] - ref) / bound > worst)
                                        worst = fabs(y[(size_t)b * n_out + o] - ref) / bound;
                                }
                            }
                        }
                        if (!mm_ref)
                            CHECKF(same, "%s %s%s n_in %d n_out %d: differs from the scalar reference", k->name,
                                   mlstack__wtype_name(wt), pk ? " panels" : "", n_in, n_out);
                        CHECKF(alone, "%s %s%s n_in %d n_out %d: a row alone differs from the same row in a batch",
                               k->name, mlstack__wtype_name(wt), pk ? " panels" : "", n_in, n_out);
                        CHECKF(split, "%s %s%s n_in %d n_out %d: rows split in two ranges differ", k->name,
                               mlstack__wtype_name(wt), pk ? " panels" : "", n_in, n_out);
                        if (mm_ref)
                            CHECKF(
                                within,
                                "%s %s n_in %d: off the dequantized f32 dot by %.3f of the activation-rounding bound",
                                k->name, mlstack__wtype_name(wt), n_in, worst);
                    }
                    free(wd), free(wf), free(x), free(y), free(yr), free(y1), free(y2), free(xq), free(scratch),
                        free(packed);
                }
}

/* The GGML formats the quantizer writes (>>quant), on llama.cpp's own quantization test
   (tests/test-quantize-fns.cpp): 4096 values 0.1 + 2 cos(i), quantized and dequantized (our
   dequantizer, bit-exact with gguf-py), sqrt(sum of squared errors) / n below its threshold
   0.002; and on Gaussian rows with outliers the round trip stays within 12% (4-bit), 6% (5-bit;
   10% for the symmetric Q5_0, whose scale an outlier sets) or 3% (6-bit) relative RMS error. */
static void check_kq_quantize(void) {
    static const int wtypes[] = {MLSTACK__W_Q5_0, MLSTACK__W_Q5_1, MLSTACK__W_Q4_K, MLSTACK__W_Q5_K, MLSTACK__W_Q6_K};
    static const double rel_max[] = {0.10, 0.06, 0.12, 0.06, 0.03};
    int wi, i, n = 4096;
    float *x = (float *)malloc(sizeof(float) * n), *y = (float *)malloc(sizeof(float) * n);
    unsigned char *q = (unsigned char *)malloc((size_t)n * 2);
    for (wi = 0; wi < 5; wi++) {
        int wt = wtypes[wi], pass;
        for (pass = 0; pass < 2; pass++) {
            double se = 0, ss = 0;
            for (i = 0; i < n; i++) {
                if (pass == 0) x[i] = 0.1f + 2 * cosf((float)i);
                else { /* roughly Gaussian (sum of 4 uniforms), every 97th value 8 times larger */
                    x[i] = (frand() + frand() + frand() + frand()) * 0.8f * (i % 97 == 0 ? 8.0f : 1.0f);
                }
            }
            mlstack__quantize_row(wt, x, q, n);
            mlstack__ggml_dequant_row((uint32_t)(wt - 16), q, y, n);
            for (i = 0; i < n; i++) se += (double)(y[i] - x[i]) * (y[i] - x[i]), ss += (double)x[i] * x[i];
            if (pass) printf("  %s round trip: relative RMS error %.4f\n", mlstack__wtype_name(wt), sqrt(se / ss));
            if (pass == 0)
                CHECKF(sqrt(se) / n < 0.002, "%s: llama.cpp's quantization test error %.5f >= 0.002",
                       mlstack__wtype_name(wt), sqrt(se) / n);
            else
                CHECKF(sqrt(se / ss) < rel_max[wi], "%s: relative RMS error %.4f on Gaussian rows (bound %.2f)",
                       mlstack__wtype_name(wt), sqrt(se / ss), rel_max[wi]);
        }
    }
    free(x), free(y), free(q);
}

/* The repacked GGML formats (Q4_0 -> Q4_1, Q5_0 and IQ4_NL -> Q8_0): every weight the new
   blocks stand for equals gguf-py's dequantized value (our dequantizer) exactly (a zero's sign
   aside). */
static void check_repack(void) {
    static const uint32_t types[] = {MLSTACK__GGML_Q4_0, MLSTACK__GGML_Q5_0, MLSTACK__GGML_IQ4_NL};
    int ti, i, j, n = 256;
    for (ti = 0; ti < 3; ti++) {
        uint32_t t = types[ti];
        int wt = mlstack__gguf_wtype(t), bs = mlstack__ggml_types[t].size, bad = 0;
        unsigned char src[8 * 22], dst[8 * 34];
        float ref[256], got[256];
        for (i = 0; i < 8 * bs; i++) src[i] = (unsigned char)(frand() * 128 + 128);
        for (i = 0; i < 8; i++) {
            uint16_t h = mlstack__f32_to_f16(frand() * (i == 3 ? 5000.0f : 0.02f));
            memcpy(src + i * bs, &h, 2);
        }
        mlstack__ggml_dequant_row(t, src, ref, n);
        mlstack__gguf_repack_row(t, src, dst, n);
        CHECK(!mlstack__gguf_in_place(t) && wt == (t == MLSTACK__GGML_Q4_0 ? MLSTACK__W_Q4_1 : MLSTACK__W_Q8_0));
        for (i = 0; i < 8; i++)
            for (j = 0; j < 32; j++) {
                if (wt == MLSTACK__W_Q4_1) {
                    const mlstack__q4_1 *q = (const mlstack__q4_1 *)(const void *)dst + i;
                    int v = j < 16 ? q->q[j] & 15 : q->q[j - 16] >> 4;
                    got[32 * i + j] = mlstack__f16_to_f32(q->d) * (float)v + mlstack__f16_to_f32(q->m);
                } else {
                    const mlstack__q8_0 *q = (const mlstack__q8_0 *)(const void *)dst + i;
                    got[32 * i + j] = mlstack__f16_to_f32(q->d) * (float)q->q[j];
                }
            }
        for (i = 0; i < n; i++) bad += ref[i] != got[i]; /* as values: d (q - 8) = -0 is d q - 8 d = +0 */
        CHECKF(bad == 0, "%s repacked: %d of %d weights differ from the dequantized values",
               mlstack__ggml_types[t].name, bad, n);
    }
}

/* mlstack__fmaf_soft, the scalar reference's fmaf where the C library's is not correctly rounded
   (MinGW without -mfma): bit for bit against a correctly rounded fmaf over products and addends
   that cancel, overflow, underflow to subnormals and zero, and the special values. */
static float fma_operand(int lo, int hi) { /* a random float of binary exponent in [lo, hi] */
    float m = 1.0f + (frand() + 1.0f) * 0.5f;
    uint64_t r = rnd64();
    return ldexpf(r & 1 ? -m : m, lo + (int)((r >> 8) % (uint64_t)(hi - lo + 1)));
}
static void check_fmaf_soft(void) {
#if defined(MLSTACK__FMAF_LIB)
    static const float sp[] = {0.0f,     -0.0f,   INFINITY, -INFINITY, NAN, FLT_MAX,
                               -FLT_MAX, FLT_MIN, 1e-45f,   -1e-45f,   1.0f};
    int i, j, k, bad = 0, n = 0;
    for (i = 0; i < 11; i++)
        for (j = 0; j < 11; j++)
            for (k = 0; k < 11; k++, n++) {
                float r = fmaf(sp[i], sp[j], sp[k]), t = mlstack__fmaf_soft(sp[i], sp[j], sp[k]);
                if (r != r ? t == t : memcmp(&r, &t, 4) != 0) bad++;
            }
    for (i = 0; i < 400000; i++, n++) {
        int kind = i % 4;
        float a = fma_operand(kind == 3 ? -75 : -40, kind == 2 ? 64 : 40), b = fma_operand(-40, kind == 2 ? 64 : 40), c,
              r, t;
        c = kind == 0   ? fma_operand(-80, 80)
            : kind == 1 ? -a * b * (1.0f + frand() * 1e-6f) /* cancels to a few bits */
                        : fma_operand(-149, 127);
        r = fmaf(a, b, c);
        t = mlstack__fmaf_soft(a, b, c);
        if (memcmp(&r, &t, 4) != 0 && !(r != r && t != t)) {
            if (bad++ < 3) printf("fmaf_soft(%a, %a, %a) = %a, fmaf %a\n", a, b, c, t, r);
        }
    }
    for (i = 1; i < 4096; i += 2, n++) { /* a * b a float midpoint, c below double's reach: one rounding
                                             decides, where two (double, then float) would tie to even */
        float a = ldexpf((float)(4096 + i), -12),
              b = ldexpf((float)(4097 + (int)(frand() * 2040.0f + 2040.0f) * 2), -12), c = i & 2 ? 0x1p-62f : -0x1p-62f,
              r = fmaf(a, b, c), t = mlstack__fmaf_soft(a, b, c);
        if (memcmp(&r, &t, 4) != 0 && bad++ < 3) printf("fmaf_soft(%a, %a, %a) = %a, fmaf %a\n", a, b, c, t, r);
    }
    CHECKF(bad == 0, "fmaf_soft differs from fmaf in %d of %d cases", bad, n);
#else
    SKIP("fmaf_soft: this C library's fmaf is no reference (not correctly rounded)");
#endif
}

/* The canonical exp and sin/cos (the same bits on every path and libm) stay close to libm's. */
static void check_canon_math(void) {
    double worst_e = 0, worst_s = 0;
    int i;
    for (i = -87000; i <= 88000; i += 7) {
        float x = (float)i / 1000.0f + frand() * 1e-3f, e = mlstack__exp_canon(x);
        double r = exp((double)x), rel = fabs(e - r) / r;
        if (rel > worst_e) worst_e = rel;
    }
    CHECKF(worst_e < 4e-7, "exp_canon: relative error %.3g vs exp()", worst_e);
    CHECK(mlstack__exp_canon(0.0f) == 1.0f && mlstack__exp_canon(-87.0f) >= FLT_MIN &&
          mlstack__exp_canon(-87.0001f) == 0.0f && mlstack__exp_canon(-1000.0f) == 0.0f &&
          mlstack__exp_canon(1000.0f) < INFINITY && mlstack__exp_canon(NAN) == mlstack__exp_canon(88.0f));
    for (i = 0; i < 200000; i++) { /* rotary angles: positions up to 128k times frequencies up to 1 */
        float x = (float)(i % 131072) * (i & 1 ? 1.0f : frand()), s, c;
        double ds = sin((double)x), dc = cos((double)x), e;
        mlstack__sincos_canon(x, &s, &c);
        e = fabs(s - ds) > fabs(c - dc) ? fabs(s - ds) : fabs(c - dc);
        if (e > worst_s) worst_s = e;
        /* correctly rounded (to the float next to the exact value) in all but rare cases */
    }
    CHECKF(worst_s < 6e-8, "sincos_canon: absolute error %.3g vs sin/cos in double", worst_s);
}

/* The rotary table, once (every kernel table holds the same mlstack__rope_table), against an
   independent reference: transformers' angle, pos * inv_freq in f32 (its inv_freq @ position_ids
   is an f32 product), then cos and sin in double by the C library. The table's cos and sin are
   the float nearest those but in rare cases (sincos_canon: error ~1e-16 before its rounding), so
   within half a float ulp of 1 (2^-24 ~ 6e-8) and at most a few elements off by a full ulp.
   Positions up to 128k and past 2^16, two RoPE bases, head dims with tails. */
static void check_rope_table(void) {
    static const int Dhs[] = {64, 128, 12, 80};
    static const double thetas[] = {10000.0, 500000.0};
    int di, ti, pi, i, n = 0, mismatched = 0;
    uint32_t lcg = 12345; /* its own positions: frand's sequence stays the other checks' */
    double worst = 0;
    for (di = 0; di < 4; di++)
        for (ti = 0; ti < 2; ti++) {
            int Dh = Dhs[di], half = Dh / 2;
            float inv[64], cs[128];
            for (i = 0; i < half; i++) inv[i] = (float)pow(thetas[ti], -2.0 * i / Dh);
            for (pi = 0; pi < 40; pi++) {
                static const int fixed[] = {0, 1, 2, 17, 255, 4095, 8191, 32767, 65535, 65536, 65537, 131071};
                int pos = pi < 12 ? fixed[pi] : (int)((lcg = lcg * 1664525u + 1013904223u) >> 15);
                mlstack__rope_table(cs, Dh, pos, inv);
                for (i = 0; i < half; i++) {
                    float x = (float)pos * inv[i];
                    double ec = fabs(cs[i] - cos((double)x)), es = fabs(cs[half + i] - sin((double)x));
                    double e = ec > es ? ec : es;
                    if (e > worst) worst = e;
                    if (cs[i] != (float)cos((double)x) || cs[half + i] != (float)sin((double)x)) mismatched++;
                    n++;
                }
            }
        }
    CHECKF(worst <= 6e-8, "rope_table: cos/sin off by %.3g from the double reference (bound 6e-8)", worst);
    CHECKF(mismatched * 1000 <= n, "rope_table: %d of %d pairs not the nearest floats to cos/sin", mismatched, n);
    printf("rope_table: %d pairs, largest error %.3g, %d not the nearest float\n", n, worst, mismatched);
}

int main(void) {
    /* caps that this build leaves out (another architecture's, or an opt-out like
       MLSTACK_NO_AVX512), or that it has but this CPU lacks, are skipped with which it is */
    const char *caps[] = {"scalar", "avx2", "avx512", "amx", "neon"};
    const mlstack__kernels *seen[5], *bf16_kernels, *best = mlstack__kernels_select(-1, 0);
    int n_seen = 0, i, j, quick = getenv("MLSTACK_TEST_QUICK") != NULL; /* make check: scalar and the best path */
    char report[256];
    tk_thin |= quick || tl_emulated();
    if (tk_thin && !TL_SANITIZED && !quick)
        SKIP("two thirds of the shape grids: under qemu-user (MLSTACK_TEST_QEMU; "
             "the native flavours check them whole)");
    mlstack__isa_report(report, sizeof report);
    printf("%s\n", report);
    tk_ref = mlstack__kernels_named("scalar");
    check_quantize_weight();
    check_canon_math();
    check_fmaf_soft();
    check_rope_table();
    for (i = 0; i < 5; i++) {
        const mlstack__kernels *k = mlstack__kernels_select(mlstack__isa_parse(caps[i]), 0);
        int dup = 0;
        for (j = 0; j < n_seen; j++) dup |= seen[j] == k;
        if (dup) {
            if (i && !tl_isa_compiled(report, caps[i]))
                SKIP("cap %s: not compiled into this build (another architecture's, or left out)", caps[i]);
            else if (i)
                SKIP("cap %s: compiled in, but this CPU lacks it (fell back to %s)", caps[i], k->name);
            continue;
        }
        seen[n_seen++] = k;
        if (quick && i && k != best) {
            SKIP("cap %s: quick mode (MLSTACK_TEST_QUICK) checks scalar and %s only", caps[i], best->name);
            continue;
        }
        printf("checking %s\n", k->name);
        check_path(k);
        check_tall(k);
        check_kq(k);
    }
    check_repack();
    check_kq_quantize();
    printf("float matmul vs the double dot product: largest error %.3g of the bound\n", dd_seen);
    printf("Q4_1 weights: largest relative rms error of a matmul %.3g\n", q41_seen);
#if defined(MLSTACK__HAVE_AVX512)
    /* AVX-512 without VNNI (int8 through the AVX2 kernels), which a VNNI CPU never selects */
    if (!quick && mlstack__kernels_select(mlstack__isa_parse("avx512"), 0) !=
                      mlstack__kernels_select(mlstack__isa_parse("avx2"), 0)) {
        printf("checking avx512 (no VNNI)\n");
        check_path(mlstack__kernels_named("avx512"));
        check_kq(mlstack__kernels_named("avx512"));
    }
#endif
    /* the opt-in bf16-activation path, where the CPU has AVX512_BF16 */
    bf16_kernels = mlstack__kernels_select(-1, 1);
    if (quick) {
        SKIP("bf16 dot path: quick mode (MLSTACK_TEST_QUICK)");
    } else if (bf16_kernels != mlstack__kernels_select(-1, 0)) {
        printf("checking %s\n", bf16_kernels->name);
        check_path(bf16_kernels);
        check_tall(bf16_kernels);
    } else {
#if defined(MLSTACK__HAVE_AVX512_BF16)
        SKIP("bf16 dot path: compiled in, but this CPU has no AVX512_BF16");
#else
        SKIP("bf16 dot path: not compiled into this build (no AVX512_BF16 kernels for this target)");
#endif
    }
#if defined(MLSTACK__HAVE_AVX512_BF16)
    /* vdpbf16ps, which an AMX-BF16 CPU passes over for the tiles */
    if (bf16_kernels != mlstack__kernels_named("avx512+vnni+bf16dot") &&
        mlstack__kernels_select(mlstack__isa_parse("avx512"), 1) == mlstack__kernels_named("avx512+vnni+bf16dot")) {
        printf("checking avx512+vnni+bf16dot\n");
        check_path(mlstack__kernels_named("avx512+vnni+bf16dot"));
    }
#endif

#if defined(MLSTACK__HAVE_NEON_DOT)
    /* the plain int8 fallback, which the CPU selection passes over when it has SDOT (so this run
       covers it, and `make test` runs this test on a dotprod CPU model only) */
    if (mlstack__kernels_select(mlstack__isa_parse("neon"), 0) == mlstack__kernels_named("neon+dotprod")) {
        printf("checking neon\n");
        check_path(mlstack__kernels_named("neon"));
        check_tall(mlstack__kernels_named("neon"));
        check_kq(mlstack__kernels_named("neon"));
        check_neon_dot_same();
    }
#endif
    /* f16 conversion round trip on every half value */
    {
        int bad = 0;
        uint32_t h;
        for (h = 0; h < 65536; h++) {
            float f = mlstack__f16_to_f32((uint16_t)h);
            if (f == f && mlstack__f32_to_f16(f) != h) bad++;
        }
        CHECKF(bad == 0, "%d half values do not round-trip", bad);
    }
    printf("compared %d distinct kernel functions with the reference; not again: %d table entries that are the "
           "reference itself, %d met in an earlier table\n",
           tk_n_new, tk_n_self, tk_n_repeat);
    return tl_finish();
}
