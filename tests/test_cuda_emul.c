/* The CUDA companion's kernels and engine, run on the host: mlstack_cuda.h built with
   MLSTACK_CUDA_EMULATE runs every launch as a loop over blocks and, inside a block, each phase
   between barriers as a loop over threads (warp collectives by the same xor butterfly as
   __shfl_xor_sync). Checked against the CPU's scalar kernels (bit for bit where the GPU
   kernels keep the canonical order: quantization, RMSNorm, SwiGLU, RoPE, KV conversion) and
   against double-precision references (matvec, attention), then the whole engine on the
   fixture models against the CPU engine. No GPU is needed; tests/gpu/run.sh repeats this on one. */
#ifndef MLSTACK_CUDA_TEST_ON_DEVICE
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#define MLSTACK_CUDA_EMULATE
#include "mlstack_cuda.h"
#include "testlib.h"
/* Buffers the kernels read and write: the heap here; CUDA managed memory when tests/gpu/test_gpu.cu
   runs these checks on a GPU (it defines MLSTACK_CUDA_TEST_ON_DEVICE, T_ALLOC, T_FREE, T_SYNC). */
#define T_ALLOC(n) calloc(1, (size_t)(n) + 1)
#define T_FREE(p) free(p)
#define T_SYNC() ((void)0)
#endif
#include <dirent.h>

static uint64_t rng = 88172645463325252ull;
static float frand(void) { /* uniform in [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 4503599627370496.0 - 1.0);
}
static float *frandv(size_t n, float scale) {
    float *v = (float *)T_ALLOC(sizeof(float) * (n ? n : 1));
    size_t i;
    for (i = 0; i < n; i++) v[i] = frand() * scale;
    return v;
}
static uint16_t to_half(float f, int dt) {
    return dt == MLSTACK_DTYPE_F16 ? (uint16_t)mlstack__f32_to_f16(f) : (uint16_t)(mlc_f_bits(f) >> 16);
}

/* ---- matvec on float weights: against a double reference; rows alone = rows batched ---- */
static void check_matvec_float(int dt, int n_out, int n_in) {
    size_t es = dt == MLSTACK_DTYPE_F32 ? 4 : 2;
    int B = 11, b, o, k, bad = 0, batch_same = 1;
    unsigned char *w = (unsigned char *)T_ALLOC((size_t)n_out * n_in * es);
    float *wf = (float *)T_ALLOC(sizeof(float) * (size_t)n_out * n_in), *x = frandv((size_t)B * (n_in + 8), 1.0f);
    float *bias = frandv((size_t)n_out, 0.5f), *y = (float *)T_ALLOC(((size_t)B * (n_out + 3)) * sizeof(float));
    float *y1 = (float *)T_ALLOC(((size_t)n_out) * sizeof(float));
    mlc_weight mw;
    double worst = 0;
    for (k = 0; k < n_out * n_in; k++) {
        float f = frand();
        if (es == 4) memcpy(w + (size_t)k * 4, &f, 4), wf[k] = f;
        else {
            uint16_t h = to_half(f, dt);
            memcpy(w + (size_t)k * 2, &h, 2);
            wf[k] = dt == MLSTACK_DTYPE_F16 ? mlstack__f16_to_f32(h) : mlc_bf16_f32(h);
        }
    }
    memset(&mw, 0, sizeof mw);
    mw.wt = dt, mw.n_out = n_out, mw.n_in = n_in, mw.w = w, mw.bias = bias;
    mlc_matvec(&mw, x, n_in + 8, NULL, NULL, NULL, y, n_out + 3, B);
    T_SYNC();
    for (b = 0; b < B; b++) {
        for (o = 0; o < n_out; o++) {
            double ref = bias[o], mag = fabs(bias[o]);
            for (k = 0; k < n_in; k++) {
                ref += (double)wf[(size_t)o * n_in + k] * x[(size_t)b * (n_in + 8) + k];
                mag += fabs((double)wf[(size_t)o * n_in + k] * x[(size_t)b * (n_in + 8) + k]);
            }
            if (fabs(y[(size_t)b * (n_out + 3) + o] - ref) > 1e-6 * mag + 1e-30) bad++;
            if (fabs(y[(size_t)b * (n_out + 3) + o] - ref) / (mag + 1e-30) > worst)
                worst = fabs(y[(size_t)b * (n_out + 3) + o] - ref) / (mag + 1e-30);
        }
        mlc_matvec(&mw, x + (size_t)b * (n_in + 8), n_in + 8, NULL, NULL, NULL, y1, n_out, 1);
        T_SYNC();
        if (memcmp(y1, y + (size_t)b * (n_out + 3), sizeof(float) * (size_t)n_out)) batch_same = 0;
    }
    CHECKF(bad == 0, "matvec %s %dx%d: %d outputs off the double reference (worst %.3g relative)",
           mlstack_dtype_name((mlstack_dtype)dt), n_out, n_in, bad, worst);
    CHECKF(batch_same, "matvec %s %dx%d: a row alone differs from the same row in a batch of %d",
           mlstack_dtype_name((mlstack_dtype)dt), n_out, n_in, B);
    T_FREE(w), T_FREE(wf), T_FREE(x), T_FREE(bias), T_FREE(y), T_FREE(y1);
}

/* ---- activation quantization: the bits of mlstack__quantize_rows ---- */
static void check_quantize(void) {
    int B = 3, n = 160, ld = 170, b, i, same = 1;
    float *x = frandv((size_t)B * ld, 3.0f), *d = (float *)T_ALLOC(sizeof(float) * B * 5),
          *s = (float *)T_ALLOC(sizeof(float) * B * 5);
    int8_t *q = (int8_t *)T_ALLOC((size_t)B * n);
    mlstack__q8x ref[15];
    for (i = 0; i < 32; i++) x[32 + i] = 0; /* an all-zero block: d = 0 */
    x[70] = 2.5f * (3.0f / 127.0f);       /* a value at a rounding tie after scaling is unlikely; keep it plain */
    mlc_quantize_rows(x, ld, B, n, q, d, s);
    T_SYNC();
    for (b = 0; b < B; b++) mlstack__quantize_rows(x + (size_t)b * ld, ref + b * 5, 1, n);
    for (b = 0; b < B * 5; b++) {
        if (memcmp(&ref[b].d, &d[b], 4) || memcmp(&ref[b].s, &s[b], 4)) same = 0;
        if (memcmp(ref[b].q, q + (size_t)(b / 5) * n + (size_t)(b % 5) * 32, 32)) same = 0;
    }
    CHECKF(same, "quantize: activation blocks differ from mlstack__quantize_rows");
    T_FREE(x), T_FREE(d), T_FREE(s), T_FREE(q);
}

/* ---- matvec on Q8_0 / Q4_1 blocks against Q8 activations: the same integer dots and scales as
   the CPU rule, in another order: against a double sum of the CPU's per-block terms ---- */
static void check_matvec_quant(int wt, int n_out, int n_in) {
    int nb = n_in / 32, B = 9, b, o, k, i, bad = 0, batch_same = 1;
    size_t bs = wt == MLSTACK_DTYPE_Q8_0 ? 34 : 20, rb = (size_t)nb * bs;
    unsigned char *blocks = (unsigned char *)T_ALLOC((size_t)n_out * rb);
    unsigned char *qp = (unsigned char *)T_ALLOC((size_t)n_out * n_in);
    float *dp = (float *)T_ALLOC(sizeof(float) * n_out * nb), *mp = (float *)T_ALLOC(sizeof(float) * n_out * nb);
    float *x = frandv((size_t)B * n_in, 2.0f), *y = (float *)T_ALLOC(((size_t)B * n_out) * sizeof(float));
    float *y1 = (float *)T_ALLOC(((size_t)n_out) * sizeof(float)), *xd = (float *)T_ALLOC(sizeof(float) * B * nb),
          *xs = (float *)T_ALLOC(sizeof(float) * B * nb);
    int8_t *xq = (int8_t *)T_ALLOC((size_t)B * n_in);
    mlstack__q8x *ref = (mlstack__q8x *)T_ALLOC(sizeof(mlstack__q8x) * (size_t)B * nb);
    mlc_weight mw;
    for (o = 0; o < n_out; o++)
        for (k = 0; k < nb; k++) {
            unsigned char *blk = blocks + (size_t)o * rb + (size_t)k * bs;
            uint16_t dh = mlstack__f32_to_f16(0.01f + 0.02f * (frand() + 1)),
                     mh = mlstack__f32_to_f16(-0.1f * (frand() + 1));
            memcpy(blk, &dh, 2);
            if (wt == MLSTACK_DTYPE_Q8_0)
                for (i = 0; i < 32; i++) blk[2 + i] = (unsigned char)(int8_t)(int)(frand() * 127);
            else {
                memcpy(blk + 2, &mh, 2);
                for (i = 0; i < 16; i++) blk[4 + i] = (unsigned char)(rng >> (i * 3 % 56));
                frand();
            }
        }
    mlc_repack_quant(blocks, rb, wt, n_out, n_in, qp, dp, mp);
    memset(&mw, 0, sizeof mw);
    mw.wt = wt, mw.n_out = n_out, mw.n_in = n_in, mw.w = qp, mw.d = dp, mw.m = wt == MLSTACK_DTYPE_Q4_1 ? mp : NULL;
    mlc_quantize_rows(x, n_in, B, n_in, xq, xd, xs);
    T_SYNC();
    mlc_matvec(&mw, x, n_in, xq, xd, xs, y, n_out, B);
    T_SYNC();
    mlstack__quantize_rows(x, ref, B, n_in);
    for (b = 0; b < B; b++) {
        for (o = 0; o < n_out; o++) {
            double sum = 0, mag = 0;
            for (k = 0; k < nb; k++) { /* the CPU rule's terms, from mlstack's own block layout */
                const unsigned char *blk = blocks + (size_t)o * rb + (size_t)k * bs;
                const mlstack__q8x *a = &ref[(size_t)b * nb + k];
                uint16_t dh, mh;
                int32_t is = 0;
                float dw, t1, t2 = 0;
                memcpy(&dh, blk, 2);
                dw = mlstack__f16_to_f32(dh);
                for (i = 0; i < 32; i++) {
                    int wq = wt == MLSTACK_DTYPE_Q8_0 ? (int)(int8_t)blk[2 + i]
                                                      : (i < 16 ? blk[4 + i] & 15 : blk[4 + i - 16] >> 4);
                    is += wq * a->q[i];
                }
                t1 = (float)is * (dw * a->d);
                if (wt == MLSTACK_DTYPE_Q4_1) {
                    memcpy(&mh, blk + 2, 2);
                    t2 = mlstack__f16_to_f32(mh) * a->s;
                }
                sum += (double)t1 + t2;
                mag += fabs((double)t1) + fabs((double)t2);
            }
            if (fabs(y[(size_t)b * n_out + o] - sum) > 2e-6 * mag + 1e-30) bad++;
        }
        mlc_matvec(&mw, x + (size_t)b * n_in, n_in, xq + (size_t)b * n_in, xd + (size_t)b * nb, xs + (size_t)b * nb, y1,
                   n_out, 1);
        T_SYNC();
        if (memcmp(y1, y + (size_t)b * n_out, sizeof(float) * (size_t)n_out)) batch_same = 0;
    }
    CHECKF(bad == 0, "matvec %s %dx%d: %d outputs off the reference", mlstack_dtype_name((mlstack_dtype)wt), n_out,
           n_in, bad);
    CHECKF(batch_same, "matvec %s %dx%d: a row alone differs from the same row batched",
           mlstack_dtype_name((mlstack_dtype)wt), n_out, n_in);
    T_FREE(blocks), T_FREE(qp), T_FREE(dp), T_FREE(mp), T_FREE(x), T_FREE(y), T_FREE(y1), T_FREE(xd), T_FREE(xs),
        T_FREE(xq), T_FREE(ref);
}

/* ---- RMSNorm (+ residual), SwiGLU: the CPU's bits ---- */
static void check_norm_swiglu(void) {
    int B = 3, n = 200, b, i;
    float *x = frandv((size_t)B * n, 2.0f), *y = frandv((size_t)B * n, 1.0f), *w = frandv((size_t)n, 1.0f);
    float *xr = (float *)T_ALLOC(sizeof(float) * B * n), *xn = (float *)T_ALLOC(sizeof(float) * B * n),
          *ref = (float *)T_ALLOC(sizeof(float) * n), *g = frandv((size_t)B * n, 6.0f),
          *u = frandv((size_t)B * n, 1.0f), *gr = (float *)T_ALLOC(sizeof(float) * B * n);
    int32_t *idx = (int32_t *)T_ALLOC(2 * sizeof(int32_t));
    int same = 1;
    idx[0] = 2, idx[1] = 0;
    for (i = 0; i < B * n; i++) xr[i] = x[i] + y[i];
    mlc_add_rmsnorm_rows(x, y, w, xn, NULL, B, n, 1e-5f);
    T_SYNC();
    for (b = 0; b < B; b++) {
        mlstack__rmsnorm(ref, xr + (size_t)b * n, w, n, 1e-5f);
        if (memcmp(ref, xn + (size_t)b * n, sizeof(float) * n) ||
            memcmp(xr + (size_t)b * n, x + (size_t)b * n, sizeof(float) * n))
            same = 0;
    }
    CHECKF(same, "add_rmsnorm: differs from x + y then mlstack__rmsnorm");
    mlc_add_rmsnorm_rows(x, NULL, w, xn, idx, 2, n, 1e-5f); /* gathered rows 2, 0 */
    mlstack__rmsnorm(ref, x + (size_t)2 * n, w, n, 1e-5f);
    T_SYNC();
    CHECKF(!memcmp(ref, xn, sizeof(float) * n), "rmsnorm: the gathered row differs");
    memcpy(gr, g, sizeof(float) * B * n);
    mlc_swiglu_rows(g, u, B * n);
    T_SYNC();
    mlstack__swiglu_scalar(gr, u, B * n);
    CHECKF(!memcmp(g, gr, sizeof(float) * B * n), "swiglu: differs from mlstack__swiglu_scalar");
    T_FREE(x), T_FREE(y), T_FREE(w), T_FREE(xr), T_FREE(xn), T_FREE(ref), T_FREE(g), T_FREE(u), T_FREE(gr), T_FREE(idx);
}

/* ---- q/k norm + RoPE + KV write: the CPU's bits in the >>kvcache page layout ---- */
static void check_rope_kv(int kv_dt, int rot) {
    int H = 4, Hkv = 2, Dh = 16, P = 4, L = 3, layer = 1, B = 2, b, h, i, same = 1, kv_same = 1;
    size_t es = kv_dt == MLSTACK_DTYPE_F32 ? 4 : 2, page_elems = (size_t)L * 2 * P * Hkv * Dh;
    float *q = frandv((size_t)B * H * Dh, 1.0f), *k = frandv((size_t)B * Hkv * Dh, 1.0f),
          *v = frandv((size_t)B * Hkv * Dh, 1.0f);
    float *qr = (float *)T_ALLOC(sizeof(float) * B * H * Dh), *kr = (float *)T_ALLOC(sizeof(float) * B * Hkv * Dh);
    float *qn = frandv((size_t)Dh, 1.0f), *kn = frandv((size_t)Dh, 1.0f), inv[8],
          *cs = (float *)T_ALLOC(sizeof(float) * 64);
    unsigned char *kv = (unsigned char *)T_ALLOC(6 * page_elems * es);
    int32_t *pt = (int32_t *)T_ALLOC(4 * sizeof(int32_t)), *ri = (int32_t *)T_ALLOC(4 * sizeof(int32_t));
    int pos[2] = {6, 9};
    pt[0] = 5, pt[1] = 2, pt[2] = 0, pt[3] = 3;
    for (i = 0; i < rot / 2; i++) inv[i] = powf(10000.0f, -(float)(2 * i) / (float)rot);
    memcpy(qr, q, sizeof(float) * B * H * Dh);
    memcpy(kr, k, sizeof(float) * B * Hkv * Dh);
    for (b = 0; b < B; b++) {
        mlstack__rope_table(cs + (size_t)b * 2 * Dh, rot, pos[b], inv);
        ri[2 * b] = pos[b], ri[2 * b + 1] = b ? 1 : 0; /* the second row's table starts one page in */
        for (h = 0; h < H; h++) {
            mlstack__rmsnorm(qr + ((size_t)b * H + h) * Dh, qr + ((size_t)b * H + h) * Dh, qn, Dh, 1e-6f);
            mlstack__rope_apply(qr + ((size_t)b * H + h) * Dh, rot, cs + (size_t)b * 2 * Dh);
        }
        for (h = 0; h < Hkv; h++) {
            mlstack__rmsnorm(kr + ((size_t)b * Hkv + h) * Dh, kr + ((size_t)b * Hkv + h) * Dh, kn, Dh, 1e-6f);
            mlstack__rope_apply(kr + ((size_t)b * Hkv + h) * Dh, rot, cs + (size_t)b * 2 * Dh);
        }
    }
    mlc_rope_kv_rows(q, k, v, qn, kn, cs, 0, rot, 1e-6f, H, Hkv, Dh, kv, kv_dt, page_elems, pt, ri, layer, P, B);
    T_SYNC();
    CHECKF(!memcmp(q, qr, sizeof(float) * B * H * Dh) && !memcmp(k, kr, sizeof(float) * B * Hkv * Dh),
           "rope_kv (rot %d): q or k differ from mlstack__rmsnorm + mlstack__rope_apply", rot);
    for (b = 0; b < B; b++) {
        int page = pt[ri[2 * b + 1] + pos[b] / P], slot = pos[b] % P;
        (void)same;
        for (i = 0; i < Hkv * Dh; i++) {
            /* the device's page layout [layer][K, V][head][slot][Dh] (mlc_kv_addr) */
            size_t hd = (size_t)(i / Dh), d = (size_t)(i % Dh),
                   at = (size_t)page * page_elems + (((size_t)(layer * 2) * Hkv + hd) * P + slot) * Dh + d,
                   av = (size_t)page * page_elems + (((size_t)(layer * 2 + 1) * Hkv + hd) * P + slot) * Dh + d;
            float kf = kr[(size_t)b * Hkv * Dh + i], vf = v[(size_t)b * Hkv * Dh + i];
            unsigned char ek[4], ev[4];
            mlstack__from_f32((mlstack_dtype)kv_dt, &kf, ek, 1);
            mlstack__from_f32((mlstack_dtype)kv_dt, &vf, ev, 1);
            if (memcmp(kv + at * es, ek, es) || memcmp(kv + av * es, ev, es)) kv_same = 0;
        }
    }
    CHECKF(kv_same, "rope_kv: the KV slots (%s) differ from mlstack__from_f32 at the page layout's offsets",
           mlstack_dtype_name((mlstack_dtype)kv_dt));
    T_FREE(q), T_FREE(k), T_FREE(v), T_FREE(qr), T_FREE(kr), T_FREE(qn), T_FREE(kn), T_FREE(kv), T_FREE(cs), T_FREE(pt),
        T_FREE(ri);
}

/* ---- paged attention over chunks: against a double softmax; a row alone = batched ---- */
static void check_attention(int kv_dt, int G, int window) {
    int Hkv = 2, H = Hkv * G, Dh = 32, P = 16, L = 2, layer = 1, n_pages = 40, B = 3, b, h, d, t;
    int pos[3] = {300, 5, 129}, nc_max = (n_pages * P + MLC_CH - 1) / MLC_CH, bad = 0, alone_same = 1;
    size_t es = kv_dt == MLSTACK_DTYPE_F32 ? 4 : 2, page_elems = (size_t)L * 2 * P * Hkv * Dh;
    unsigned char *kv = (unsigned char *)T_ALLOC((size_t)n_pages * page_elems * es);
    float *q = frandv((size_t)B * H * Dh, 1.0f), *a = (float *)T_ALLOC(((size_t)B * H * Dh) * sizeof(float));
    float *a1 = (float *)T_ALLOC(((size_t)H * Dh) * sizeof(float));
    float *part = (float *)T_ALLOC(sizeof(float) * (size_t)B * H * nc_max * (Dh + 2));
    int32_t *pt = (int32_t *)T_ALLOC(40 * sizeof(int32_t)), *ri = (int32_t *)T_ALLOC(6 * sizeof(int32_t));
    size_t i;
    for (i = 0; i < (size_t)n_pages * page_elems; i++) mlc_kv_put(kv, kv_dt, (int)i, frand() * 2);
    for (t = 0; t < n_pages; t++) pt[t] = (t * 7 + 3) % n_pages; /* a permutation: pages out of order */
    for (b = 0; b < B; b++) ri[2 * b] = pos[b], ri[2 * b + 1] = 0; /* every row reads the same sequence's table */
    mlc_attention(q, kv, kv_dt, page_elems, pt, ri, layer, P, H, Hkv, Dh, window, 0.17f, part, nc_max,
                  pos[0] / MLC_CH + 1, a, B);
    T_SYNC();
    for (b = 0; b < B; b++) {
        int t0 = window && pos[b] >= window ? pos[b] - window + 1 : 0;
        for (h = 0; h < H; h++) {
            double mx = -1e300, den = 0, out[32] = {0};
            const float *qh = q + ((size_t)b * H + h) * Dh;
            for (t = t0; t <= pos[b]; t++) {
                const unsigned char *kr = mlc_kv_addr(kv, (int)es, page_elems, pt, layer, 0, P, Hkv, Dh, h / G, t);
                double s = 0;
                for (d = 0; d < Dh; d++) s += (double)qh[d] * mlc_kv_get(kr, kv_dt, d);
                s *= 0.17f;
                if (s > mx) mx = s;
            }
            for (t = t0; t <= pos[b]; t++) {
                const unsigned char *kr = mlc_kv_addr(kv, (int)es, page_elems, pt, layer, 0, P, Hkv, Dh, h / G, t);
                const unsigned char *vr = mlc_kv_addr(kv, (int)es, page_elems, pt, layer, 1, P, Hkv, Dh, h / G, t);
                double s = 0, p;
                for (d = 0; d < Dh; d++) s += (double)qh[d] * mlc_kv_get(kr, kv_dt, d);
                p = exp(s * 0.17f - mx);
                den += p;
                for (d = 0; d < Dh; d++) out[d] += p * mlc_kv_get(vr, kv_dt, d);
            }
            for (d = 0; d < Dh; d++)
                if (fabs(a[((size_t)b * H + h) * Dh + d] - out[d] / den) > 2e-5 * 2) bad++;
        }
        /* the row alone */
        mlc_attention(q + (size_t)b * H * Dh, kv, kv_dt, page_elems, pt, ri + 2 * b, layer, P, H, Hkv, Dh, window,
                      0.17f, part, nc_max, pos[b] / MLC_CH + 1, a1, 1);
        T_SYNC();
        if (memcmp(a1, a + (size_t)b * H * Dh, sizeof(float) * (size_t)H * Dh)) alone_same = 0;
    }
    CHECKF(bad == 0, "attention %s G=%d window %d: %d values off the double reference",
           mlstack_dtype_name((mlstack_dtype)kv_dt), G, window, bad);
    CHECKF(alone_same, "attention G=%d: a row alone differs from the row batched", G);
    T_FREE(kv), T_FREE(q), T_FREE(a), T_FREE(a1), T_FREE(part), T_FREE(pt), T_FREE(ri);
}

static void check_argmax(void) {
    int V = 1000, B = 3, i;
    float *x = frandv((size_t)B * V, 1.0f);
    int32_t *out = (int32_t *)T_ALLOC(3 * sizeof(int32_t));
    x[17] = 5, x[900] = 5;           /* row 0: a tie, the lower index wins */
    x[V + 999] = 7;                  /* row 1: the last element */
    for (i = 0; i < V; i++) x[2 * V + i] = -3; /* row 2: all equal */
    mlc_argmax_rows(x, V, out, B);
    T_SYNC();
    CHECKF(out[0] == 17 && out[1] == 999 && out[2] == 0, "argmax: got %d %d %d, expected 17 999 0", (int)out[0],
           (int)out[1], (int)out[2]);
    T_FREE(x), T_FREE(out);
}

/* ---- the engine on a fixture model: logits within 1e-3 x max|logit| of the CPU engine, the
   same greedy continuation, runs repeated and rows batched bit-identical ---- */
static int greedy_n;
static int32_t greedy_ids[2][64];
static int on_tok(void *u, int32_t t) {
    int which = (int)(intptr_t)u;
    if (greedy_n < 64) greedy_ids[which][greedy_n++] = t;
    return 0;
}
/* max_tokens (at most 64) greedy tokens after the prompt into greedy_ids[which]; the count, or -1. */
static int greedy(mlstack_engine *e, const int32_t *ids, int n, int which, int max_tokens) {
    mlstack_generate_desc gd;
    int32_t seq;
    memset(&gd, 0, sizeof gd);
    if (mlstack_engine_seq_new(e, &seq) != MLSTACK_OK) return -1;
    gd.seq = seq, gd.prompt = ids, gd.n_prompt = n, gd.max_tokens = max_tokens, gd.ignore_eos = 1, gd.on_token = on_tok;
    gd.user = (void *)(intptr_t)which;
    greedy_n = 0;
    if (mlstack_generate(e, &gd) != MLSTACK_OK) return -1;
    mlstack_engine_seq_free(e, seq);
    return greedy_n;
}

/* The scheduler's way (mlstack_engine_complete): the same tokens as the CPU engine; asked again,
   the prompt's whole pages come from the radix tree (pages the GPU wrote, by the same ids) and
   the tokens are still the same. */
static void check_complete(mlstack_engine *cpu, mlstack_engine *gpu, const int32_t *ids, int n, const char *dir) {
    mlstack_request_desc rd;
    mlstack_request_status st, st2;
    mlstack_error err;
    int32_t tc[16], tg[16], tg2[16];
    memset(&rd, 0, sizeof rd);
    rd.prompt = ids, rd.n_prompt = n, rd.max_tokens = 12, rd.ignore_eos = 1;
    if (mlstack_engine_complete(cpu, &rd, &st, tc, 16, &err) != MLSTACK_OK ||
        mlstack_engine_complete(gpu, &rd, &st, tg, 16, &err) != MLSTACK_OK ||
        mlstack_engine_complete(gpu, &rd, &st2, tg2, 16, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: complete: %s", dir, err.message);
        return;
    }
    CHECKF(st.n_generated == 12 && !memcmp(tc, tg, sizeof(int32_t) * 12), "%s: complete: tokens differ from the CPU's",
           dir);
    CHECKF(st2.n_cached >= 8 && st2.n_generated == 12 && !memcmp(tg, tg2, sizeof(int32_t) * 12),
           "%s: complete with the cached prefix (%d tokens) gave other tokens", dir, st2.n_cached);
}

static float *logits_of(mlstack_engine *e, const int32_t *ids, int n, int V, int interleave) {
    mlstack_batch_row rows[80];
    float *out = (float *)malloc(sizeof(float) * (size_t)n * V);
    int32_t s1, s2 = -1;
    int i, nr = 0;
    if (mlstack_engine_seq_new(e, &s1) != MLSTACK_OK || (interleave && mlstack_engine_seq_new(e, &s2) != MLSTACK_OK))
        return NULL;
    for (i = 0; i < n; i++) {
        if (interleave)
            rows[nr].seq = s2, rows[nr].pos = i, rows[nr].token = ids[n - 1 - i], rows[nr].want_logits = 1, nr++;
        rows[nr].seq = s1, rows[nr].pos = i, rows[nr].token = ids[i], rows[nr].want_logits = 1, nr++;
    }
    if (mlstack_engine_eval(e, rows, nr) != MLSTACK_OK) {
        printf("eval: %s\n", mlstack_engine_error(e));
        free(out);
        return NULL;
    }
    for (i = 0; i < n; i++)
        memcpy(out + (size_t)i * V, mlstack_engine_logits(e, interleave ? 2 * i + 1 : i), sizeof(float) * V);
    mlstack_engine_seq_free(e, s1);
    if (interleave) mlstack_engine_seq_free(e, s2);
    return out;
}

/* kv_type F32: both engines keep keys and values exact, and only the summation order differs
   (~2e-6 relative here); F16 KV: a last-bit difference can round a key or value the other way
   (and Q8 activations likewise), which later positions amplify: the 1e-3 bound. */
static void check_model(const char *dir, mlstack_dtype quant, mlstack_kv_type kv_type, double tol) {
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_cuda_desc cd;
    mlstack_model *m;
    mlstack_engine *cpu, *gpu;
    mlstack_error err;
    mlstack_result r;
    int32_t ids[40];
    int n = 37, i, V, ng;
    float *lc, *lg, *lg2, *lgb;
    double maxl = 0, maxd = 0;
    memset(&md, 0, sizeof md);
    md.path = dir;
    md.quant = quant;
    if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: open failed: %s", dir, err.message);
        return;
    }
    V = m->cfg.n_vocab;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = 1;
    ed.kv_page_tokens = 8; /* several pages per sequence */
    ed.kv_type = kv_type;
    memset(&cd, 0, sizeof cd);
    cd.chunk_rows = 16; /* evals of 37 and 74 rows run in chunks */
    r = mlstack_cuda_engine_init(m, &ed, &cd, &gpu, &err);
    if (r == MLSTACK_ERR_UNSUPPORTED) { /* the refusal is the behaviour under test here */
        printf("%s: refused (%s)\n", dir, err.message);
        CHECKF(strstr(err.message, "not supported by the GPU kernels") != NULL && gpu == NULL,
               "%s: unsupported model refused without a clear message: %s", dir, err.message);
        mlstack_model_close(m);
        return;
    }
    CHECKF(r == MLSTACK_OK, "%s: mlstack_cuda_engine_init: %s", dir, err.message);
    if (r != MLSTACK_OK) {
        mlstack_model_close(m);
        return;
    }
    CHECK(strcmp(mlstack_engine_kernels(gpu), "cuda") == 0 && mlstack_cuda_engine_device_bytes(gpu) > 0);
    ed.isa = "scalar";
    if (mlstack_engine_init(m, &ed, &cpu, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: cpu engine: %s", dir, err.message);
        mlstack_engine_free(gpu);
        mlstack_model_close(m);
        return;
    }
    for (i = 0; i < n; i++) ids[i] = (int32_t)((i * 7919 + 13) % V);
    lc = logits_of(cpu, ids, n, V, 0);
    lg = logits_of(gpu, ids, n, V, 0);
    /* run twice, the same bits: the plain flavour (and a GPU) checks it, a sanitizer build
       (TL_SANITIZED) would only repeat the first run's memory accesses */
    lg2 = TL_SANITIZED ? NULL : logits_of(gpu, ids, n, V, 0);
    lgb = logits_of(gpu, ids, n, V, 1);
    if (!lc || !lg || (!lg2 && !TL_SANITIZED) || !lgb) {
        CHECKF(0, "%s: eval failed", dir);
    } else {
        for (i = 0; i < n * V; i++) {
            if (fabs(lc[i]) > maxl) maxl = fabs(lc[i]);
            if (fabs(lc[i] - lg[i]) > maxd) maxd = fabs(lc[i] - lg[i]);
        }
        CHECKF(maxd <= tol * maxl, "%s%s, KV %s: GPU logits differ from the CPU engine's by %.3g (max |logit| %.3g)",
               dir, quant ? " (quantized)" : "", kv_type == MLSTACK_KV_F32 ? "F32" : "F16", maxd, maxl);
        if (lg2) CHECKF(!memcmp(lg, lg2, sizeof(float) * (size_t)n * V), "%s: two runs differ", dir);
        CHECKF(!memcmp(lg, lgb, sizeof(float) * (size_t)n * V), "%s: logits change when batched with another sequence",
               dir);
    }
    ng = greedy(cpu, ids, 8, 0, 24);
    CHECKF(ng == 24 && greedy(gpu, ids, 8, 1, 24) == 24 && !memcmp(greedy_ids[0], greedy_ids[1], 24 * sizeof(int32_t)),
           "%s%s: greedy continuation differs from the CPU engine's", dir, quant ? " (quantized)" : "");
    /* (float weights only: with Q8 activations a last-bit difference can round an activation the
       other way, which can flip a close greedy choice of these tiny random models) */
    if (kv_type == MLSTACK_KV_F32 && !quant) check_complete(cpu, gpu, ids, n, dir);
    free(lc), free(lg), free(lg2), free(lgb);
    mlstack_engine_free(cpu);
    mlstack_engine_free(gpu);
    mlstack_model_close(m);
}

/* Under AddressSanitizer (TL_SANITIZED: -O0, every access checked) the emulated engine is ~25
   times slower: the models that cover each path (float, both quantized formats, q/k norms,
   biases, a sliding window, a refusal) and not all of them. */
static int model_wanted(const char *name) {
    return !TL_SANITIZED || !strcmp(name, "llama") || !strcmp(name, "qwen3") || !strcmp(name, "qwen2_window") ||
           !strcmp(name, "gpt_neox");
}

static void check_models(const char *root, int quant_too) {
    DIR *d = opendir(root);
    struct dirent *ent;
    char path[600];
    int n = 0;
    if (!d) {
        SKIP("%s: not found", root);
        return;
    }
    while ((ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.' || strlen(ent->d_name) > 200 || !model_wanted(ent->d_name)) continue;
        snprintf(path, sizeof path, "%s/%s/config.json", root, ent->d_name);
        {
            char *cfg = tl_read(path, NULL);
            if (!cfg) continue;
            free(cfg);
        }
        snprintf(path, sizeof path, "%s/%s", root, ent->d_name);
        check_model(path, (mlstack_dtype)0, MLSTACK_KV_F32, 1e-5);
        check_model(path, (mlstack_dtype)0, MLSTACK_KV_DEFAULT, 1e-3);
        if (quant_too && strcmp(ent->d_name, "llama") == 0) {
            check_model(path, MLSTACK_DTYPE_Q8_0, MLSTACK_KV_F32, 1e-5);
            check_model(path, MLSTACK_DTYPE_Q4_1, MLSTACK_KV_F32, 1e-5);
        }
        n++;
    }
    closedir(d);
    CHECKF(n > 0, "%s: no models", root);
}

static void run_checks(void) {
    int n;
    check_quantize();
    check_matvec_float(MLSTACK_DTYPE_F32, 37, 72);
    check_matvec_float(MLSTACK_DTYPE_BF16, 70, 1032);
    check_matvec_float(MLSTACK_DTYPE_F16, 9, 2048);
    check_matvec_quant(MLSTACK_DTYPE_Q8_0, 21, 96);
    check_matvec_quant(MLSTACK_DTYPE_Q8_0, 6, 2080);
    check_matvec_quant(MLSTACK_DTYPE_Q4_1, 33, 1056);
    check_norm_swiglu();
    check_rope_kv(MLSTACK_DTYPE_F16, 16);
    check_rope_kv(MLSTACK_DTYPE_F32, 12);
    check_rope_kv(MLSTACK_DTYPE_BF16, 16);
    check_attention(MLSTACK_DTYPE_F32, 1, 0);
    check_attention(MLSTACK_DTYPE_F16, 4, 0);
    check_attention(MLSTACK_DTYPE_BF16, 3, 100);
    check_argmax();
    CHECK(mlstack_cuda_device_count(&n, NULL) == MLSTACK_OK && n >= 1);
    check_models("tests/fixtures/models", 1);
    if (getenv("MLSTACK_TEST_QUICK")) /* make check: the fixture models only */
        SKIP("the family fixtures: quick mode (MLSTACK_TEST_QUICK; make test runs them)");
    else
        check_models("tests/fixtures/families", 0);
}

#ifndef MLSTACK_CUDA_TEST_ON_DEVICE
int main(void) {
    run_checks();
    return tl_finish();
}
#endif
