/* mlstack_cuda.h 0.2.0 - optional CUDA engine for mlstack.h - MIT (see mlstack.h)

   USE
     In exactly one file built by nvcc (flags: --fmad=false, see ARITHMETIC), with the
     implementation of mlstack.h in the same file:
         #define MLSTACK_IMPLEMENTATION
         #include "mlstack.h"
         #define MLSTACK_CUDA_IMPLEMENTATION
         #include "mlstack_cuda.h"
     Everywhere else #include "mlstack_cuda.h" for the declarations. Link with -lcudart.
     Built by a plain C compiler instead of nvcc, the implementation compiles to stubs that
     return MLSTACK_ERR_NO_BACKEND, so a program can always fall back to mlstack_engine_init.
     `make cuda` builds build/cuda/mlstack, the CLI with --gpu (run, chat, bench, serve).

   WHAT IT IS
     One more forward pass behind the same engine: mlstack_cuda_engine_init returns an
     mlstack_engine that mlstack_engine_eval / _submit / _step / _complete / mlstack_generate
     accept as they are. The model, tokenizer, sampler, scheduler, KV page pool (page size and
     page ids) and radix prefix cache are the CPU engine's; only the page data lives on the GPU
     (same layout as >>kvcache), and the forward pass runs there:
       weights    uploaded once at init: F32/F16/BF16 as stored (row-major, 16-byte loads),
                  Q8_0 as an int8 plane (n_out, n_in) + an f32 scale plane (n_out, n_in/32),
                  Q4_1 as a nibble plane (n_out, n_in/2) + f32 scale and offset planes
       decode     one matrix-vector kernel per weight family for 1..8 rows at once (weights read
                  once for the rows; each row's sums in the same order whatever the batch, so a
                  sequence gives the same bits alone or batched); Q8_0/Q4_1 against activations
                  quantized to int8 blocks of 32 (the CPU's Q8 blocks, bit for bit) with dp4a
       norms      RMSNorm fused with the residual add, in the CPU's canonical order (the same
                  bits as mlstack__rmsnorm); q/k norms, RoPE (tables made on the host by the
                  CPU's code, so every rope scaling the CPU knows works) and the KV write in one
                  kernel; SwiGLU with the canonical exp
       attention  paged decode over the page tables: one block per (row, KV head, chunk of 128
                  positions) reads each K/V row once for the G query heads of the group; chunks
                  merged in chunk order (deterministic, independent of the batch); prefill rows
                  use the same kernel, each row alone
       argmax     greedy token per row on the device (mlc_argmax_rows; the engine itself still
                  copies the logits back for the sampler)
     Every device buffer is allocated at init; a step copies only the rows' embeddings, rope
     tables and page tables up and the wanted logits down.

   SUPPORTED MODELS
     Llama-style decoders: RMSNorm, gated SiLU MLP, GQA (query heads per KV head <= 16, head dim
     <= 256 and even), optional q/k/v/o/MLP biases, optional per-head q/k RMSNorm (Qwen3),
     sliding windows, any RoPE table, logit scaling and final soft-capping (on the host). Other
     families (LayerNorm, parallel residual, MoE, GELU, post-norms, attention soft-capping) and
     GGML K-quants are refused at init with MLSTACK_ERR_UNSUPPORTED naming what is missing.

   ARITHMETIC
     Each value is computed by the same IEEE-754 f32 operations in the same order on every run:
     sums in fixed trees, no atomics, no split that depends on the batch. Built with
     --fmad=false, so a * b + c is fused exactly where the source calls fmaf. Results are within
     rounding of the CPU engine's (the matmul and attention reductions are ordered differently),
     not bit-identical to it.

   HOW IT IS TESTED WITHOUT A GPU
     The kernels are written once for both compilers: under nvcc they are CUDA kernels; with
     MLSTACK_CUDA_EMULATE defined, in a C99 build, every launch runs on the host as a loop over
     blocks, and within a block as one loop over threads per phase between barriers (values that
     live across a barrier are per-thread arrays). tests/test_cuda_emul.c runs every kernel so,
     against the CPU's scalar kernels, and the whole engine on the fixture models against the CPU
     engine. tests/gpu/run.sh runs the same checks, the real-model checks and a bandwidth bench on
     a machine with a GPU.

   LIMITS OF THIS RELEASE
     Prefill uses the small-batch matvec in groups of 8 rows (no tensor-core GEMM yet), decode is
     not captured in CUDA graphs, and the CPU engine underneath still allocates its own (unused)
     KV page data. */
#ifndef MLSTACK_CUDA_H
#define MLSTACK_CUDA_H

#include "mlstack.h"

#if defined(MLSTACK_CUDA_EMULATE)
#define MLSTACK_CUDA_API static MLSTACK__UNUSED
#else
#define MLSTACK_CUDA_API MLSTACK_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Device selection and sizes. Zero-initialise for the defaults:
     field       default   meaning
     device      0         CUDA device index (the first visible GPU)
     chunk_rows  64        rows of a forward chunk on the device (a larger eval runs in chunks) */
typedef struct mlstack_cuda_desc {
    int device;
    int chunk_rows;
} mlstack_cuda_desc;

/* Number of usable CUDA devices in *n_devices.
   Returns MLSTACK_OK, or MLSTACK_ERR_NO_BACKEND (no driver, no device, or a build without
   nvcc) with err saying why. Thread safety: any thread. */
MLSTACK_CUDA_API mlstack_result mlstack_cuda_device_count(int *n_devices, mlstack_error *err);

/* An engine whose forward pass runs on a GPU; otherwise exactly as mlstack_engine_init (same
   descriptor, same calls on the result, freed by mlstack_engine_free).
   Parameters: model (shared, must outlive the engine), desc (NULL: defaults), cuda (NULL:
   defaults), out receives the engine.
   Returns MLSTACK_OK; MLSTACK_ERR_NO_BACKEND without a usable GPU; MLSTACK_ERR_UNSUPPORTED
   for a model the kernels do not cover (err names it); MLSTACK_ERR_NO_MEMORY when the weights
   or KV pages do not fit on the device. *out is NULL on failure.
   Remarks: desc->isa is ignored (the CPU kernels only serve the draft model of speculative
   decoding); n_ranks must be 0 or 1. mlstack_engine_kernels names "cuda". */
MLSTACK_CUDA_API mlstack_result mlstack_cuda_engine_init(mlstack_model *model, const mlstack_engine_desc *desc,
                                                         const mlstack_cuda_desc *cuda, mlstack_engine **out,
                                                         mlstack_error *err);

/* Bytes the engine holds on the device (weights, KV pages, activations); 0 for a CPU engine. */
MLSTACK_CUDA_API uint64_t mlstack_cuda_engine_device_bytes(const mlstack_engine *e);

/* The 0.1 name of mlstack_cuda_engine_init. */
MLSTACK_CUDA_API mlstack_result mlstack_engine_init_cuda(mlstack_model *model, const mlstack_engine_desc *desc,
                                                         const mlstack_cuda_desc *cuda, mlstack_engine **out,
                                                         mlstack_error *err);

#ifdef __cplusplus
}
#endif
#endif /* MLSTACK_CUDA_H */

#if (defined(MLSTACK_CUDA_IMPLEMENTATION) || defined(MLSTACK_CUDA_EMULATE)) && \
    !defined(MLSTACK_CUDA_IMPLEMENTATION_INCLUDED)
#define MLSTACK_CUDA_IMPLEMENTATION_INCLUDED
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__CUDACC__) && !defined(MLSTACK_CUDA_EMULATE)
#define MLSTACK_CUDA__DEVICE 1 /* kernels on the GPU */
#include <cuda_runtime.h>
#endif

#if defined(MLSTACK_CUDA__DEVICE) || defined(MLSTACK_CUDA_EMULATE)
/* ---- one kernel source, two compilers ----
   Shapes: B rows, D model dim, F FFN dim, H query heads, Hkv KV heads, G = H / Hkv, Dh head dim,
   V vocab, P page tokens, CH positions per attention chunk.
   A kernel body is a sequence of phases, MLC_THREADS(t) { ... }, separated by MLC_SYNC(). On
   the GPU a phase is the calling thread's code (t = threadIdx.x) and MLC_SYNC is
   __syncthreads(); emulated, the block runs each phase for t = 0 .. blockDim-1 in turn, which is
   what the barrier guarantees. A thread's value that outlives its phase lives in an
   MLC_PRIV(type, name, n) array, reached as MLC_P(name, t)[i] (on the GPU: registers; emulated:
   one row per thread). `continue` leaves the phase for this thread. Warp collectives
   (MLC_WARP_SUM/MAX) sit between phases and combine lanes by the xor butterfly that
   __shfl_xor_sync performs, in the same order, so the emulation gives the GPU's bits. Code
   outside phases must be uniform over the block (an early return for the whole block is fine). */
#define MLC_MAXT 256 /* largest block */
#define MLC_MAXB 8 /* rows of one matvec launch */
#define MLC_MAXG 16 /* query heads per KV head */
#define MLC_MAXDH 256
#define MLC_CH 128 /* attention chunk: positions per block, = its threads */
#define MLC_DT_F32 MLSTACK_DTYPE_F32
#define MLC_DT_F16 MLSTACK_DTYPE_F16
#define MLC_DT_BF16 MLSTACK_DTYPE_BF16
#define MLC_DT_Q8_0 MLSTACK_DTYPE_Q8_0
#define MLC_DT_Q4_1 MLSTACK_DTYPE_Q4_1

#if defined(MLSTACK_CUDA__DEVICE)
#define MLC_KERNEL static __global__ void
#define MLC_HD static __host__ __device__ __forceinline__
#define MLC_SHARED __shared__
#define MLC_SYNC() __syncthreads()
#define MLC_BX ((int)blockIdx.x)
#define MLC_BY ((int)blockIdx.y)
#define MLC_BZ ((int)blockIdx.z)
#define MLC_BDIM ((int)blockDim.x)
#define MLC_THREADS(t) for (int t = (int)threadIdx.x, mlc_once_ = 1; mlc_once_; mlc_once_ = 0)
#define MLC_PRIV(type, name, n) type name[1][n]
#define MLC_P(name, t) name[0]
#define MLC_UNROLL _Pragma("unroll")
#define MLC_UNROLL4 _Pragma("unroll 4")
#define MLC_WARP_SUM(a, n)                                                                                           \
    do {                                                                                                             \
        MLC_UNROLL for (int mlc_i = 0; mlc_i < (n); mlc_i++) {                                                       \
            float mlc_v = a[0][mlc_i];                                                                               \
            MLC_UNROLL for (int mlc_o = 16; mlc_o; mlc_o >>= 1) mlc_v += __shfl_xor_sync(0xffffffffu, mlc_v, mlc_o); \
            a[0][mlc_i] = mlc_v;                                                                                     \
        }                                                                                                            \
    } while (0)
#define MLC_WARP_MAX(a, n)                                                \
    do {                                                                  \
        MLC_UNROLL for (int mlc_i = 0; mlc_i < (n); mlc_i++) {            \
            float mlc_v = a[0][mlc_i];                                    \
            MLC_UNROLL for (int mlc_o = 16; mlc_o; mlc_o >>= 1) mlc_v =   \
                fmaxf(mlc_v, __shfl_xor_sync(0xffffffffu, mlc_v, mlc_o)); \
            a[0][mlc_i] = mlc_v;                                          \
        }                                                                 \
    } while (0)
/* (value, index) pairs: the larger value, on ties the lower index */
#define MLC_WARP_ARGMAX(v, ix)                                                                                \
    do {                                                                                                      \
        MLC_UNROLL for (int mlc_o = 16; mlc_o; mlc_o >>= 1) {                                                 \
            float mlc_w = __shfl_xor_sync(0xffffffffu, v[0][0], mlc_o);                                       \
            int mlc_j = __shfl_xor_sync(0xffffffffu, ix[0][0], mlc_o);                                        \
            if (mlc_w > v[0][0] || (mlc_w == v[0][0] && mlc_j < ix[0][0])) v[0][0] = mlc_w, ix[0][0] = mlc_j; \
        }                                                                                                     \
    } while (0)
static __device__ __forceinline__ void mlc_ld16(const void *p, uint32_t w[4]) {
    uint4 v = __ldg((const uint4 *)p);
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
}
static __device__ __forceinline__ int mlc_dp4a(uint32_t a, uint32_t b, int c) { return __dp4a((int)a, (int)b, c); }
#define MLC_LAUNCH(kern, gx, gy, gz, bd, args) \
    kern<<<dim3((unsigned)(gx), (unsigned)(gy), (unsigned)(gz)), (unsigned)(bd)>>> args
#else /* emulated on the host */
static struct {
    int bx, by, bz, bdim;
} mlc_ctx;
#define MLC_KERNEL static void
#define MLC_HD static MLSTACK__UNUSED
#define MLC_SHARED
#define MLC_SYNC() ((void)0)
#define MLC_BX mlc_ctx.bx
#define MLC_BY mlc_ctx.by
#define MLC_BZ mlc_ctx.bz
#define MLC_BDIM mlc_ctx.bdim
#define MLC_THREADS(t) for (int t = 0; t < mlc_ctx.bdim; t++)
#define MLC_PRIV(type, name, n) type name[MLC_MAXT][n]
#define MLC_P(name, t) name[t]
#define MLC_UNROLL
#define MLC_UNROLL4
#define MLC_WARP_SUM(a, n) mlc_warp_op(&a[0][0], (int)(sizeof a[0] / sizeof a[0][0]), (n), 0)
#define MLC_WARP_MAX(a, n) mlc_warp_op(&a[0][0], (int)(sizeof a[0] / sizeof a[0][0]), (n), 1)
#define MLC_WARP_ARGMAX(v, ix) mlc_warp_argmax(&v[0][0], &ix[0][0])
/* lane l of every warp gets op(v[l], v[l ^ o]) for o = 16, 8, 4, 2, 1, as __shfl_xor_sync does */
static MLSTACK__UNUSED void mlc_warp_op(float *a, int stride, int n, int max) {
    int w, i, o, l;
    for (w = 0; w < mlc_ctx.bdim; w += 32)
        for (i = 0; i < n; i++)
            for (o = 16; o; o >>= 1) {
                float t[32];
                for (l = 0; l < 32; l++) {
                    float x = a[(size_t)(w + l) * stride + i], y = a[(size_t)(w + (l ^ o)) * stride + i];
                    t[l] = max ? fmaxf(x, y) : x + y;
                }
                for (l = 0; l < 32; l++) a[(size_t)(w + l) * stride + i] = t[l];
            }
}
static MLSTACK__UNUSED void mlc_warp_argmax(float *v, int *ix) {
    int w, o, l;
    for (w = 0; w < mlc_ctx.bdim; w += 32)
        for (o = 16; o; o >>= 1) {
            float tv[32];
            int ti[32];
            for (l = 0; l < 32; l++) {
                float a = v[w + l], b = v[w + (l ^ o)];
                int ia = ix[w + l], ib = ix[w + (l ^ o)];
                int take = b > a || (b == a && ib < ia);
                tv[l] = take ? b : a;
                ti[l] = take ? ib : ia;
            }
            for (l = 0; l < 32; l++) v[w + l] = tv[l], ix[w + l] = ti[l];
        }
}
static MLSTACK__UNUSED void mlc_ld16(const void *p, uint32_t w[4]) { memcpy(w, p, 16); }
/* __dp4a: the four signed byte products of a and b added to c */
static MLSTACK__UNUSED int mlc_dp4a(uint32_t a, uint32_t b, int c) {
    int i;
    for (i = 0; i < 4; i++) c += (int)(int8_t)(uint8_t)(a >> (8 * i)) * (int)(int8_t)(uint8_t)(b >> (8 * i));
    return c;
}
#define MLC_LAUNCH(kern, gx, gy, gz, bd, args)                                        \
    do {                                                                              \
        mlc_ctx.bdim = (bd);                                                          \
        for (mlc_ctx.bz = 0; mlc_ctx.bz < (int)(gz); mlc_ctx.bz++)                    \
            for (mlc_ctx.by = 0; mlc_ctx.by < (int)(gy); mlc_ctx.by++)                \
                for (mlc_ctx.bx = 0; mlc_ctx.bx < (int)(gx); mlc_ctx.bx++) kern args; \
    } while (0)
#endif

/* ---- scalar helpers, the same code on both sides ---- */
MLC_HD float mlc_bits_f(uint32_t b) {
    float f;
    memcpy(&f, &b, 4);
    return f;
}
MLC_HD uint32_t mlc_f_bits(float f) {
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}
MLC_HD float mlc_bf16_f32(uint32_t h) { return mlc_bits_f((h & 0xFFFFu) << 16); }
/* exact f16 -> f32 (as mlstack__f16_to_f32) */
MLC_HD float mlc_f16_f32(uint32_t h) {
    uint32_t sign = (h & 0x8000u) << 16, e = (h >> 10) & 0x1F, man = h & 0x3FF;
    if (e == 0) {
        if (man == 0) return mlc_bits_f(sign);
        e = 127 - 15 + 1;
        while (!(man & 0x400)) man <<= 1, e--;
        return mlc_bits_f(sign | (e << 23) | ((man & 0x3FF) << 13));
    }
    if (e == 31) return mlc_bits_f(sign | 0x7F800000u | (man << 13));
    return mlc_bits_f(sign | ((e + 127 - 15) << 23) | (man << 13));
}
/* f32 -> f16, round to nearest even (as mlstack__f32_to_f16) */
MLC_HD uint32_t mlc_f32_f16(float f) {
    uint32_t x = mlc_f_bits(f), sign = (x >> 16) & 0x8000, e = (x >> 23) & 0xFF, man = x & 0x7FFFFF;
    if (e == 0xFF) return sign | 0x7C00 | (man ? 0x200 : 0);
    if (e > 127 + 15) return sign | 0x7C00;
    if (e < 127 - 25) return sign;
    if (e < 127 - 14) {
        uint32_t shift = 127 - 14 - e + 13, m = man | 0x800000, r = m >> shift, rem = m & ((1u << shift) - 1),
                 half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return sign | r;
    }
    {
        uint32_t h = sign | ((e - 112) << 10) | (man >> 13), rem = man & 0x1FFF;
        if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
        return h;
    }
}
MLC_HD uint32_t mlc_f32_bf16(float f) {
    uint32_t b = mlc_f_bits(f), h = (b + 0x7FFF + ((b >> 16) & 1)) >> 16;
    if ((b & 0x7F800000) == 0x7F800000 && (b & 0x7FFFFF)) h = (b >> 16) | 0x40;
    return h & 0xFFFF;
}
/* element i of a row of KV dtype dt */
MLC_HD float mlc_kv_get(const unsigned char *row, int dt, int i) {
    if (dt == MLC_DT_F32) {
        float f;
        memcpy(&f, row + 4 * (size_t)i, 4);
        return f;
    }
    {
        uint32_t h = (uint32_t)row[2 * i] | ((uint32_t)row[2 * i + 1] << 8);
        return dt == MLC_DT_F16 ? mlc_f16_f32(h) : mlc_bf16_f32(h);
    }
}
MLC_HD void mlc_kv_put(unsigned char *row, int dt, int i, float v) {
    uint32_t h;
    if (dt == MLC_DT_F32) {
        memcpy(row + 4 * (size_t)i, &v, 4);
        return;
    }
    h = dt == MLC_DT_F16 ? mlc_f32_f16(v) : mlc_f32_bf16(v);
    row[2 * i] = (unsigned char)(h & 0xFF);
    row[2 * i + 1] = (unsigned char)(h >> 8);
}
/* the canonical e^x of mlstack.h (mlstack__exp_canon), operation for operation */
MLC_HD float mlc_exp(float x) {
    float t, n, r, p;
    uint32_t b;
    if (x < -87.0f) return 0.0f;
    x = x < 88.0f ? x : 88.0f;
    t = x * 1.44269504f;
    n = (t + 12582912.0f) - 12582912.0f;
    r = fmaf(-n, 0.693145752f, x);
    r = fmaf(-n, 1.42860677e-6f, r);
    p = 1.0f / 720;
    p = fmaf(p, r, 1.0f / 120);
    p = fmaf(p, r, 1.0f / 24);
    p = fmaf(p, r, 1.0f / 6);
    p = fmaf(p, r, 0.5f);
    p = fmaf(p, r, 1.0f);
    p = fmaf(p, r, 1.0f);
    b = mlc_f_bits(p) + (uint32_t)((int32_t)n * (1 << 23));
    return mlc_bits_f(b);
}
/* the canonical fold of 16 partial sums (mlstack__fold16) */
MLC_HD float mlc_fold16(const float *p) {
    float t[8];
    int i;
    for (i = 0; i < 8; i++) t[i] = p[i] + p[i + 8];
    for (i = 0; i < 4; i++) t[i] = t[i] + t[i + 4];
    for (i = 0; i < 2; i++) t[i] = t[i] + t[i + 2];
    return t[0] + t[1];
}
MLC_HD int mlc_iround(float x) { return (int)(x >= 0 ? x + 0.5f : x - 0.5f); }

/* ---- kernels ---- */

/* Matvec, float weights: y (B, n_out) [ldy] = x (B, n_in) [ldx] W^T (+ bias), B <= MLC_MAXB.
   W (n_out, n_in) row-major, F32 (wt MLC_DT_F32) or F16/BF16; n_in a multiple of 8 (4 for F32).
   One warp per output row, 4 rows per block of 128: lane l takes the 16-byte pieces l, l + 32,
   ... of the row (a warp reads 512 contiguous bytes per step), one fma chain per row of x, then
   the xor butterfly. */
MLC_KERNEL mlc_matvec_float(const void *w, int wt, const float *bias, const float *x, int ldx, float *y, int ldy,
                            int n_out, int n_in, int B) {
    MLC_PRIV(float, acc, MLC_MAXB);
    MLC_THREADS(t) {
        int o = MLC_BX * 4 + t / 32, lane = t % 32, b, j, c, per = wt == MLC_DT_F32 ? 4 : 8, nc = n_in / per;
        float *a = MLC_P(acc, t);
        const unsigned char *row = (const unsigned char *)w + (size_t)o * (size_t)nc * 16;
        MLC_UNROLL for (b = 0; b < MLC_MAXB; b++) a[b] = 0;
        if (o >= n_out) continue;
        MLC_UNROLL4 for (c = lane; c < nc; c += 32) { /* loads of 4 steps in flight */
            uint32_t u[4];
            float wf[8];
            mlc_ld16(row + (size_t)c * 16, u);
            if (wt == MLC_DT_F32) {
                MLC_UNROLL for (j = 0; j < 4; j++) wf[j] = mlc_bits_f(u[j]), wf[4 + j] = 0;
            } else if (wt == MLC_DT_BF16) {
                for (j = 0; j < 4; j++) wf[2 * j] = mlc_bf16_f32(u[j]), wf[2 * j + 1] = mlc_bf16_f32(u[j] >> 16);
            } else {
                for (j = 0; j < 4; j++) wf[2 * j] = mlc_f16_f32(u[j] & 0xFFFF), wf[2 * j + 1] = mlc_f16_f32(u[j] >> 16);
            }
            MLC_UNROLL for (b = 0; b < MLC_MAXB; b++) {
                const float *xb = x + (size_t)b * ldx + (size_t)c * per;
                if (b >= B) break;
                MLC_UNROLL for (j = 0; j < 8; j++) if (j < per) a[b] = fmaf(wf[j], xb[j], a[b]); /* registers */
            }
        }
    }
    MLC_WARP_SUM(acc, MLC_MAXB);
    MLC_THREADS(t) {
        int o = MLC_BX * 4 + t / 32, b;
        if (o >= n_out || t % 32) continue;
        for (b = 0; b < B; b++) y[(size_t)b * ldy + o] = bias ? MLC_P(acc, t)[b] + bias[o] : MLC_P(acc, t)[b];
    }
}

/* Activations -> Q8 blocks, bit-identical to mlstack__quantize_rows: x (B, n) [ldx] ->
   q (B, n) int8, d and s (B, n/32): d = max|x| / 127, q = round(x / d) half away from zero,
   s = d * sum(q). One warp per block of 32, 4 per block of 128 threads. */
MLC_KERNEL mlc_quantize(const float *x, int ldx, int B, int n, int8_t *q, float *d, float *s) {
    MLC_PRIV(float, v, 1);
    MLC_PRIV(float, am, 1);
    MLC_PRIV(float, sum, 1);
    int nb = n / 32;
    MLC_THREADS(t) {
        int id = MLC_BX * 4 + t / 32, b = id / nb, k = id % nb;
        MLC_P(v, t)[0] = MLC_P(am, t)[0] = 0;
        if (id >= B * nb) continue;
        MLC_P(v, t)[0] = x[(size_t)b * ldx + (size_t)k * 32 + t % 32];
        MLC_P(am, t)[0] = fabsf(MLC_P(v, t)[0]);
    }
    MLC_WARP_MAX(am, 1);
    MLC_THREADS(t) {
        float dd = MLC_P(am, t)[0] / 127.0f, inv = dd > 0 ? 1.0f / dd : 0.0f;
        int qi = mlc_iround(MLC_P(v, t)[0] * inv), id = MLC_BX * 4 + t / 32;
        MLC_P(am, t)[0] = dd;
        MLC_P(sum, t)[0] = (float)qi; /* integer partial sums of <= 32 values: exact in f32 */
        if (id < B * nb) q[(size_t)(id / nb) * n + (size_t)(id % nb) * 32 + t % 32] = (int8_t)qi;
    }
    MLC_WARP_SUM(sum, 1);
    MLC_THREADS(t) {
        int id = MLC_BX * 4 + t / 32;
        if (id >= B * nb || t % 32) continue;
        d[id] = MLC_P(am, t)[0];
        s[id] = MLC_P(am, t)[0] * MLC_P(sum, t)[0];
    }
}

/* Matvec, quantized weights against Q8 activation blocks (xq (B, n_in), xd, xs (B, n_in/32)):
   Q8_0: wq (n_out, n_in) int8, wd (n_out, n_in/32) f32 scales;
   Q4_1: wq (n_out, n_in/2) nibbles (element j < 16 of a block in the low nibble of its byte j,
         j + 16 in the high nibble), wd scales, wm offsets.
   Per block (the >>kernels rule): isum exact by dp4a, acc = fma(isum, dw * dx, acc), Q4_1 also
   acc = fma(m, sx, acc). One warp per output row, lane l takes blocks l, l + 32, ... (a warp
   reads 1 KiB of Q8_0 or 512 bytes of Q4_1 contiguous per step), then the butterfly. */
MLC_KERNEL mlc_matvec_quant(const void *wq, int wt, const float *wd, const float *wm, const float *bias,
                            const int8_t *xq, const float *xd, const float *xs, float *y, int ldy, int n_out, int n_in,
                            int B) {
    MLC_PRIV(float, acc, MLC_MAXB);
    MLC_THREADS(t) {
        int o = MLC_BX * 4 + t / 32, lane = t % 32, b, j, k, nb = n_in / 32;
        float *a = MLC_P(acc, t);
        MLC_UNROLL for (b = 0; b < MLC_MAXB; b++) a[b] = 0;
        if (o >= n_out) continue;
        MLC_UNROLL4 for (k = lane; k < nb; k += 32) {
            uint32_t u[8];
            float dw = wd[(size_t)o * nb + k], mw = wm ? wm[(size_t)o * nb + k] : 0;
            if (wt == MLC_DT_Q8_0) {
                const unsigned char *p = (const unsigned char *)wq + (size_t)o * n_in + (size_t)k * 32;
                mlc_ld16(p, u);
                mlc_ld16(p + 16, u + 4);
            } else {
                uint32_t r[4];
                mlc_ld16((const unsigned char *)wq + (size_t)o * (n_in / 2) + (size_t)k * 16, r);
                for (j = 0; j < 4; j++) u[j] = r[j] & 0x0F0F0F0Fu, u[4 + j] = (r[j] >> 4) & 0x0F0F0F0Fu;
            }
            MLC_UNROLL for (b = 0; b < MLC_MAXB; b++) {
                uint32_t v[8];
                int is = 0;
                const unsigned char *xp = (const unsigned char *)(xq + (size_t)b * n_in + (size_t)k * 32);
                if (b >= B) break;
                mlc_ld16(xp, v);
                mlc_ld16(xp + 16, v + 4);
                MLC_UNROLL for (j = 0; j < 8; j++) is = mlc_dp4a(u[j], v[j], is);
                a[b] = fmaf((float)is, dw * xd[(size_t)b * nb + k], a[b]);
                if (wt == MLC_DT_Q4_1) a[b] = fmaf(mw, xs[(size_t)b * nb + k], a[b]);
            }
        }
    }
    MLC_WARP_SUM(acc, MLC_MAXB);
    MLC_THREADS(t) {
        int o = MLC_BX * 4 + t / 32, b;
        if (o >= n_out || t % 32) continue;
        for (b = 0; b < B; b++) y[(size_t)b * ldy + o] = bias ? MLC_P(acc, t)[b] + bias[o] : MLC_P(acc, t)[b];
    }
}

/* Residual add and RMSNorm, one block (128 threads) per row b: x_r (n,) += y_r (when y), then
   xn_b = w * (x_r * scale), scale = 1 / sqrt(ss / n + eps), ss in the canonical 16 partial sums
   (term i into partial i mod 16, folded): the bits of mlstack__rmsnorm. r = idx[b] (idx NULL:
   r = b): the final norm gathers the rows that keep logits. */
MLC_KERNEL mlc_add_rmsnorm(float *x, const float *y, const float *w, float *xn, const int32_t *idx, int n, float eps) {
    MLC_SHARED float part[16];
    int r = idx ? idx[MLC_BX] : MLC_BX;
    float *xr = x + (size_t)r * n;
    MLC_THREADS(t) {
        int i;
        if (!y) continue;
        for (i = t; i < n; i += MLC_BDIM) xr[i] += y[(size_t)r * n + i];
    }
    MLC_SYNC();
    MLC_THREADS(t) {
        float p = 0;
        int i;
        if (t >= 16) continue;
        for (i = t; i < n; i += 16) p = fmaf(xr[i], xr[i], p);
        part[t] = p;
    }
    MLC_SYNC();
    MLC_THREADS(t) {
        float scale = 1.0f / sqrtf(mlc_fold16(part) / (float)n + eps);
        int i;
        for (i = t; i < n; i += MLC_BDIM) xn[(size_t)MLC_BX * n + i] = w[i] * (xr[i] * scale);
    }
}

/* g (N,) = silu(g) * u = g / (1 + e^-g) * u, the canonical exp (bits of mlstack__swiglu_scalar) */
MLC_KERNEL mlc_swiglu(float *g, const float *u, int N) {
    MLC_THREADS(t) {
        int i = MLC_BX * MLC_BDIM + t;
        if (i >= N) continue;
        g[i] = g[i] / (1.0f + mlc_exp(-g[i])) * u[i];
    }
}

/* Row info of a step, 2 int32 per row: position, offset of its page table in pt. */
#define MLC_ROW_POS(ri, r) (ri)[2 * (r)]
#define MLC_ROW_PT(ri, r) (ri)[2 * (r) + 1]
/* Address of the K (kvi 0) or V (1) row of head h at position pos. The device's pages keep the
   >>kvcache blocks [layer][K, V][head] but both as rows: element (l, kv, h, s, d) of a page at
   (((l * 2 + kv) * Hkv + h) * P + s) * Dh + d (the host's keys block is transposed for its
   chunk kernels; the two caches never exchange pages). */
MLC_HD unsigned char *mlc_kv_addr(unsigned char *kv, int esize, size_t page_elems, const int32_t *pt, int layer,
                                  int kvi, int P, int Hkv, int Dh, int h, int pos) {
    size_t page = (size_t)pt[pos / P], slot = (size_t)(pos % P);
    return kv + (page * page_elems + (((size_t)(layer * 2 + kvi) * Hkv + (size_t)h) * P + slot) * (size_t)Dh) *
                    (size_t)esize;
}

/* One block (64 threads) per (head hd of H + Hkv, row r): the head's q or k vector gets its
   RMSNorm (qn / kn weights (Dh,), when given; the bits of mlstack__rmsnorm), then the rotary
   embedding on its first rot dims with table cs_r = cs + r * 2 Dh + tab * rot (cos, then sin:
   the bits of mlstack__rope_apply); a k head and its v head then go to the row's KV slot. */
MLC_KERNEL mlc_rope_kv(float *q, float *k, const float *v, const float *qn, const float *kn, const float *cs, int tab,
                       int rot, float eps, int H, int Hkv, int Dh, unsigned char *kv, int kv_dt, size_t page_elems,
                       const int32_t *pt, const int32_t *ri, int layer, int P) {
    MLC_SHARED float part[16];
    int hd = MLC_BX, r = MLC_BY, is_k = hd >= H, h = is_k ? hd - H : hd, esize = kv_dt == MLC_DT_F32 ? 4 : 2;
    float *vec = is_k ? k + ((size_t)r * Hkv + h) * Dh : q + ((size_t)r * H + h) * Dh;
    const float *nw = is_k ? kn : qn, *c = cs + (size_t)r * 2 * Dh + (size_t)tab * rot;
    if (nw) {
        MLC_THREADS(t) {
            float p = 0;
            int i;
            if (t >= 16) continue;
            for (i = t; i < Dh; i += 16) p = fmaf(vec[i], vec[i], p);
            part[t] = p;
        }
        MLC_SYNC();
        MLC_THREADS(t) {
            float scale = 1.0f / sqrtf(mlc_fold16(part) / (float)Dh + eps);
            int i;
            for (i = t; i < Dh; i += MLC_BDIM) vec[i] = nw[i] * (vec[i] * scale);
        }
        MLC_SYNC();
    }
    MLC_THREADS(t) {
        int i, half = rot / 2;
        for (i = t; i < half; i += MLC_BDIM) {
            float a = vec[i], b = vec[i + half], co = c[i], si = c[i + half], bs = b * si, as = a * si;
            vec[i] = fmaf(a, co, -bs);
            vec[i + half] = fmaf(b, co, as);
        }
    }
    MLC_SYNC();
    if (!is_k) return;
    MLC_THREADS(t) {
        const int32_t *tab_r = pt + MLC_ROW_PT(ri, r);
        int pos = MLC_ROW_POS(ri, r), i;
        unsigned char *kr = mlc_kv_addr(kv, esize, page_elems, tab_r, layer, 0, P, Hkv, Dh, h, pos);
        unsigned char *vr = mlc_kv_addr(kv, esize, page_elems, tab_r, layer, 1, P, Hkv, Dh, h, pos);
        const float *vs = v + ((size_t)r * Hkv + h) * Dh;
        for (i = t; i < Dh; i += MLC_BDIM) {
            mlc_kv_put(kr, kv_dt, i, vec[i]);
            mlc_kv_put(vr, kv_dt, i, vs[i]);
        }
    }
}

/* First position row pos attends to with a sliding window (0: none). */
MLC_HD int mlc_window_from(int window, int pos) { return window && pos >= window ? pos - window + 1 : 0; }

/* Paged attention, one chunk: block (chunk c, KV head h, row r) of MLC_CH threads covers
   positions [t0 + c CH, min(pos, t0 + (c + 1) CH - 1)] of the row's sequence, for the G query
   heads h G .. h G + G - 1 (q (rows, H Dh)). Thread j scores position j for every head (one
   fma chain over Dh, times scale: each K row read once for the group), then per head the chunk
   max, p = e^(s - max) and their sum (butterfly, then the 4 warps in order), then thread d sums
   p_j v_j[d] over j in order. part (rows, H, nc_max, Dh + 2): acc, then max and sum. */
MLC_KERNEL mlc_attn_chunk(const float *q, const unsigned char *kv, int kv_dt, size_t page_elems, const int32_t *pt,
                          const int32_t *ri, int layer, int P, int H, int Hkv, int Dh, int window, float scale,
                          float *part, int nc_max) {
    MLC_SHARED float sq[MLC_MAXG * MLC_MAXDH];
    MLC_SHARED float sp[MLC_MAXG * MLC_CH];
    MLC_SHARED float smax[4 * MLC_MAXG], ssum[4 * MLC_MAXG];
    MLC_PRIV(float, sc, MLC_MAXG);
    MLC_PRIV(float, red, MLC_MAXG);
    int c = MLC_BX, h = MLC_BY, r = MLC_BZ, G = H / Hkv, pos = MLC_ROW_POS(ri, r), t0 = mlc_window_from(window, pos);
    int c0 = t0 + c * MLC_CH, n = pos - c0 + 1 < MLC_CH ? pos - c0 + 1 : MLC_CH, esize = kv_dt == MLC_DT_F32 ? 4 : 2;
    const int32_t *tab = pt + MLC_ROW_PT(ri, r);
    if (c0 > pos) return; /* the whole block: this row has fewer chunks */
    MLC_THREADS(t) {
        int i;
        for (i = t; i < G * Dh; i += MLC_BDIM) sq[i] = q[((size_t)r * H + (size_t)h * G) * Dh + i];
    }
    MLC_SYNC();
    MLC_THREADS(t) {
        int g, d;
        float *s = MLC_P(sc, t);
        MLC_UNROLL for (g = 0; g < MLC_MAXG; g++) s[g] = -FLT_MAX;
        if (t < n) {
            const unsigned char *kr =
                mlc_kv_addr((unsigned char *)kv, esize, page_elems, tab, layer, 0, P, Hkv, Dh, h, c0 + t);
            MLC_UNROLL for (g = 0; g < MLC_MAXG; g++) s[g] = 0;
            for (d = 0; d < Dh; d++) {
                float kd = mlc_kv_get(kr, kv_dt, d);
                MLC_UNROLL for (g = 0; g < MLC_MAXG; g++) if (g < G) s[g] = fmaf(sq[g * Dh + d], kd, s[g]);
            }
            MLC_UNROLL for (g = 0; g < MLC_MAXG; g++) s[g] = s[g] * scale;
        }
        MLC_UNROLL for (g = 0; g < MLC_MAXG; g++) MLC_P(red, t)[g] = s[g];
    }
    MLC_WARP_MAX(red, MLC_MAXG);
    MLC_THREADS(t) {
        int g;
        if (t % 32) continue;
        for (g = 0; g < G; g++) smax[(t / 32) * MLC_MAXG + g] = MLC_P(red, t)[g];
    }
    MLC_SYNC();
    MLC_THREADS(t) {
        int g, w;
        MLC_UNROLL for (g = 0; g < MLC_MAXG; g++) {
            float m = smax[g], p;
            if (g >= G) {
                MLC_P(red, t)[g] = 0;
                continue;
            }
            for (w = 1; w < MLC_BDIM / 32; w++) m = fmaxf(m, smax[w * MLC_MAXG + g]);
            p = t < n ? mlc_exp(MLC_P(sc, t)[g] - m) : 0.0f;
            sp[g * MLC_CH + t] = p;
            MLC_P(red, t)[g] = p;
        }
    }
    MLC_WARP_SUM(red, MLC_MAXG);
    MLC_THREADS(t) {
        int g;
        if (t % 32) continue;
        for (g = 0; g < G; g++) ssum[(t / 32) * MLC_MAXG + g] = MLC_P(red, t)[g];
    }
    MLC_SYNC();
    MLC_THREADS(t) {
        int g, d, j, w;
        for (d = t; d < Dh; d += MLC_BDIM)
            for (g = 0; g < G; g++) {
                float acc = 0;
                for (j = 0; j < n; j++) {
                    const unsigned char *vr =
                        mlc_kv_addr((unsigned char *)kv, esize, page_elems, tab, layer, 1, P, Hkv, Dh, h, c0 + j);
                    acc = fmaf(sp[g * MLC_CH + j], mlc_kv_get(vr, kv_dt, d), acc);
                }
                part[(((size_t)r * H + (size_t)h * G + g) * nc_max + c) * (Dh + 2) + d] = acc;
            }
        if (t != 0) continue;
        for (g = 0; g < G; g++) {
            float *pm = part + (((size_t)r * H + (size_t)h * G + g) * nc_max + c) * (Dh + 2) + Dh, m = smax[g],
                  l = ssum[g];
            for (w = 1; w < MLC_BDIM / 32; w++) m = fmaxf(m, smax[w * MLC_MAXG + g]), l = l + ssum[w * MLC_MAXG + g];
            pm[0] = m;
            pm[1] = l;
        }
    }
}

/* Merges a row's chunks in chunk order: block (query head qh, row r), thread d:
   M = max m_c, w_c = e^(m_c - M), out (rows, H Dh)[r, qh Dh + d] = sum_c w_c acc_c[d] / sum_c w_c l_c. */
MLC_KERNEL mlc_attn_merge(const float *part, const int32_t *ri, int H, int Dh, int window, int nc_max, float *out) {
    int qh = MLC_BX, r = MLC_BY, pos = MLC_ROW_POS(ri, r), nc = (pos - mlc_window_from(window, pos)) / MLC_CH + 1;
    const float *pr = part + ((size_t)r * H + qh) * nc_max * (Dh + 2);
    MLC_THREADS(t) {
        int c, d;
        float M = pr[Dh];
        for (c = 1; c < nc; c++) M = fmaxf(M, pr[(size_t)c * (Dh + 2) + Dh]);
        for (d = t; d < Dh; d += MLC_BDIM) {
            float L = 0, acc = 0;
            for (c = 0; c < nc; c++) {
                const float *pc = pr + (size_t)c * (Dh + 2);
                float w = mlc_exp(pc[Dh] - M);
                L = fmaf(pc[Dh + 1], w, L);
                acc = fmaf(pc[d], w, acc);
            }
            out[((size_t)r * H + qh) * Dh + d] = acc / L;
        }
    }
}

/* Greedy token of each row: out[b] = argmax_i x (B, V)[b, i], the lowest index on ties. One
   block of 256 threads per row. */
MLC_KERNEL mlc_argmax(const float *x, int V, int32_t *out) {
    MLC_SHARED float bv[8];
    MLC_SHARED int bi[8];
    MLC_PRIV(float, v, 1);
    MLC_PRIV(int, ix, 1);
    const float *row = x + (size_t)MLC_BX * V;
    MLC_THREADS(t) {
        int i;
        MLC_P(v, t)[0] = -FLT_MAX;
        MLC_P(ix, t)[0] = V;
        for (i = t; i < V; i += MLC_BDIM)
            if (row[i] > MLC_P(v, t)[0] || MLC_P(ix, t)[0] == V) MLC_P(v, t)[0] = row[i], MLC_P(ix, t)[0] = i;
    }
    MLC_WARP_ARGMAX(v, ix);
    MLC_THREADS(t) {
        if (t % 32) continue;
        bv[t / 32] = MLC_P(v, t)[0];
        bi[t / 32] = MLC_P(ix, t)[0];
    }
    MLC_SYNC();
    MLC_THREADS(t) {
        int w, best = 0;
        if (t) continue;
        for (w = 1; w < MLC_BDIM / 32; w++)
            if (bv[w] > bv[best] || (bv[w] == bv[best] && bi[w] < bi[best])) best = w;
        out[MLC_BX] = bi[best];
    }
}

/* ---- launches (the same calls drive the GPU and the emulation) ---- */

/* A weight on the device: float weights as stored (w), or the quantized planes (w, d, m). */
typedef struct mlc_weight {
    int wt, n_out, n_in;
    void *w;
    float *d, *m, *bias;
} mlc_weight;

/* y (B, n_out) [ldy] = x W^T: float weights read x (B, n_in) [ldx]; quantized ones its blocks
   (xq, xd, xs from mlc_quantize_rows). Groups of MLC_MAXB rows, each row the same sums. */
static MLSTACK__UNUSED void mlc_matvec(const mlc_weight *w, const float *x, int ldx, const int8_t *xq, const float *xd,
                                       const float *xs, float *y, int ldy, int B) {
    int b0, nblk = (w->n_out + 3) / 4, nb = w->n_in / 32;
    for (b0 = 0; b0 < B; b0 += MLC_MAXB) {
        int nr = B - b0 < MLC_MAXB ? B - b0 : MLC_MAXB;
        if (w->wt == MLC_DT_Q8_0 || w->wt == MLC_DT_Q4_1)
            MLC_LAUNCH(mlc_matvec_quant, nblk, 1, 1, 128,
                       (w->w, w->wt, w->d, w->m, w->bias, xq + (size_t)b0 * w->n_in, xd + (size_t)b0 * nb,
                        xs + (size_t)b0 * nb, y + (size_t)b0 * ldy, ldy, w->n_out, w->n_in, nr));
        else
            MLC_LAUNCH(
                mlc_matvec_float, nblk, 1, 1, 128,
                (w->w, w->wt, w->bias, x + (size_t)b0 * ldx, ldx, y + (size_t)b0 * ldy, ldy, w->n_out, w->n_in, nr));
    }
}
static MLSTACK__UNUSED void mlc_quantize_rows(const float *x, int ldx, int B, int n, int8_t *q, float *d, float *s) {
    MLC_LAUNCH(mlc_quantize, (B * (n / 32) + 3) / 4, 1, 1, 128, (x, ldx, B, n, q, d, s));
}
static MLSTACK__UNUSED void mlc_add_rmsnorm_rows(float *x, const float *y, const float *w, float *xn,
                                                 const int32_t *idx, int B, int n, float eps) {
    MLC_LAUNCH(mlc_add_rmsnorm, B, 1, 1, 128, (x, y, w, xn, idx, n, eps));
}
static MLSTACK__UNUSED void mlc_swiglu_rows(float *g, const float *u, int N) {
    MLC_LAUNCH(mlc_swiglu, (N + 255) / 256, 1, 1, 256, (g, u, N));
}
static MLSTACK__UNUSED void mlc_rope_kv_rows(float *q, float *k, const float *v, const float *qn, const float *kn,
                                             const float *cs, int tab, int rot, float eps, int H, int Hkv, int Dh,
                                             unsigned char *kv, int kv_dt, size_t page_elems, const int32_t *pt,
                                             const int32_t *ri, int layer, int P, int B) {
    MLC_LAUNCH(mlc_rope_kv, H + Hkv, B, 1, 64,
               (q, k, v, qn, kn, cs, tab, rot, eps, H, Hkv, Dh, kv, kv_dt, page_elems, pt, ri, layer, P));
}
/* a (B, H Dh) = attention of q (B, H Dh) over the rows' pages; nc_max >= chunks of any row,
   part room for (B, H, nc_max, Dh + 2) floats. */
static MLSTACK__UNUSED void mlc_attention(const float *q, const unsigned char *kv, int kv_dt, size_t page_elems,
                                          const int32_t *pt, const int32_t *ri, int layer, int P, int H, int Hkv,
                                          int Dh, int window, float scale, float *part, int nc_max, int nc_grid,
                                          float *a, int B) {
    MLC_LAUNCH(mlc_attn_chunk, nc_grid, Hkv, B, MLC_CH,
               (q, kv, kv_dt, page_elems, pt, ri, layer, P, H, Hkv, Dh, window, scale, part, nc_max));
    MLC_LAUNCH(mlc_attn_merge, H, B, 1, 128, (part, ri, H, Dh, window, nc_max, a));
}
static MLSTACK__UNUSED void mlc_argmax_rows(const float *x, int V, int32_t *out, int B) {
    MLC_LAUNCH(mlc_argmax, B, 1, 1, 256, (x, V, out));
}

/* Host side: a weight in mlstack's layout (>>kernels: rows of Q8_0 / Q4_1 blocks) -> the device
   planes, into host buffers q (n_out * n_in bytes for Q8_0, half for Q4_1), d and m
   (n_out * n_in / 32 floats; m only for Q4_1). */
static MLSTACK__UNUSED void mlc_repack_quant(const void *data, size_t row_bytes, int wt, int n_out, int n_in,
                                             unsigned char *q, float *d, float *m) {
    int o, k, nb = n_in / 32;
    for (o = 0; o < n_out; o++) {
        const unsigned char *row = (const unsigned char *)data + (size_t)o * row_bytes;
        for (k = 0; k < nb; k++) {
            size_t at = (size_t)o * nb + k;
            if (wt == MLC_DT_Q8_0) { /* f16 d, 32 int8 */
                const unsigned char *blk = row + (size_t)k * 34;
                d[at] = mlc_f16_f32((uint32_t)blk[0] | ((uint32_t)blk[1] << 8));
                memcpy(q + (size_t)o * n_in + (size_t)k * 32, blk + 2, 32);
            } else { /* f16 d, f16 m, 16 bytes of nibbles */
                const unsigned char *blk = row + (size_t)k * 20;
                d[at] = mlc_f16_f32((uint32_t)blk[0] | ((uint32_t)blk[1] << 8));
                m[at] = mlc_f16_f32((uint32_t)blk[2] | ((uint32_t)blk[3] << 8));
                memcpy(q + (size_t)o * (n_in / 2) + (size_t)k * 16, blk + 4, 16);
            }
        }
    }
}
#endif /* kernels */

/* ==== the engine backend ==== */
#if defined(MLSTACK_CUDA__DEVICE) || defined(MLSTACK_CUDA_EMULATE)
#if !defined(MLSTACK_IMPLEMENTATION) && !defined(MLSTACK__IMPORT_INTERNALS)
#error "mlstack_cuda.h: the implementation needs mlstack.h's implementation in the same file (MLSTACK_IMPLEMENTATION)"
#endif

/* Device memory: cudaMalloc and friends, or the host heap when emulated. 0 ok, -1 failed. */
#if defined(MLSTACK_CUDA__DEVICE)
static int mlc_alloc(void **p, size_t n) { return cudaMalloc(p, n ? n : 16) == cudaSuccess ? 0 : -1; }
static void mlc_free(void *p) {
    if (p) cudaFree(p);
}
static int mlc_h2d(void *dst, const void *src, size_t n) {
    return n == 0 || cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice) == cudaSuccess ? 0 : -1;
}
static int mlc_d2h(void *dst, const void *src, size_t n) {
    return n == 0 || cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost) == cudaSuccess ? 0 : -1;
}
static int mlc_zero(void *p, size_t n) { return cudaMemset(p, 0, n) == cudaSuccess ? 0 : -1; }
static const char *mlc_last_error(void) {
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? NULL : cudaGetErrorString(e);
}
#else
static int mlc_alloc(void **p, size_t n) {
    *p = calloc(1, n ? n : 16);
    return *p ? 0 : -1;
}
static void mlc_free(void *p) { free(p); }
static int mlc_h2d(void *dst, const void *src, size_t n) {
    if (n) memcpy(dst, src, n);
    return 0;
}
static int mlc_d2h(void *dst, const void *src, size_t n) {
    if (n) memcpy(dst, src, n);
    return 0;
}
static int mlc_zero(void *p, size_t n) {
    memset(p, 0, n);
    return 0;
}
static const char *mlc_last_error(void) { return NULL; }
#endif

typedef struct mlc_layer {
    mlc_weight wq, wk, wv, wo, wg, wu, wd;
    float *attn_norm, *ffn_norm, *q_norm, *k_norm;
    int window, rope;
} mlc_layer;

/* Everything the backend holds: device weights, KV page data, activations for chunk_rows rows,
   and host staging for a chunk's inputs. */
typedef struct mlc_engine {
    mlc_layer *L;
    mlc_weight lm;
    float *final_norm;
    unsigned char *kv;
    size_t page_elems;
    int kv_dt, P, BC, nc_max, max_in, pt_cap;
    float *x, *xn, *q, *k, *v, *att, *o, *g, *u, *logits, *part, *cs;
    int8_t *xq;
    float *xd, *xs;
    int32_t *ri, *pt, *idx, *argmax;
    /* host staging */
    float *h_x, *h_cs;
    int32_t *h_ri, *h_pt, *h_idx;
    void **owned; /* every device allocation, freed at the end */
    int n_owned, cap_owned;
    uint64_t bytes;
} mlc_engine;

static void *mlc_dev(mlc_engine *g, size_t n) {
    void *p = NULL;
    if (g->n_owned == g->cap_owned) {
        int cap = g->cap_owned ? 2 * g->cap_owned : 64;
        void **q = (void **)realloc(g->owned, sizeof(void *) * (size_t)cap);
        if (!q) return NULL;
        g->owned = q;
        g->cap_owned = cap;
    }
    if (mlc_alloc(&p, n)) return NULL;
    g->owned[g->n_owned++] = p;
    g->bytes += n;
    return p;
}
static void *mlc_dev_copy(mlc_engine *g, const void *src, size_t n) {
    void *p = mlc_dev(g, n);
    if (p && mlc_h2d(p, src, n)) return NULL;
    return p;
}

static void mlc_engine_release(mlc_engine *g) {
    int i;
    if (!g) return;
    for (i = 0; i < g->n_owned; i++) mlc_free(g->owned[i]);
    free(g->owned);
    free(g->L);
    free(g->h_x);
    free(g->h_cs);
    free(g->h_ri);
    free(g->h_pt);
    free(g->h_idx);
    free(g);
}

/* Uploads one weight (NULL data: leaves it empty). 0, or -1 out of memory. */
static int mlc_upload_weight(mlc_engine *g, const mlstack__weight *w, mlc_weight *out) {
    memset(out, 0, sizeof *out);
    if (!w->data) return 0;
    out->wt = w->wtype;
    out->n_out = w->n_out;
    out->n_in = w->n_in;
    if (w->bias && !(out->bias = (float *)mlc_dev_copy(g, w->bias, sizeof(float) * (size_t)w->n_out))) return -1;
    if (w->wtype == MLC_DT_Q8_0 || w->wtype == MLC_DT_Q4_1) {
        size_t qb = (size_t)w->n_out * (size_t)w->n_in / (w->wtype == MLC_DT_Q8_0 ? 1 : 2),
               nd = (size_t)w->n_out * (size_t)(w->n_in / 32);
        unsigned char *q = (unsigned char *)malloc(qb);
        float *d = (float *)malloc(sizeof(float) * nd), *m = (float *)malloc(sizeof(float) * nd);
        int ok = q && d && m;
        if (ok) {
            mlc_repack_quant(w->data, w->row_bytes, w->wtype, w->n_out, w->n_in, q, d, m);
            out->w = mlc_dev_copy(g, q, qb);
            out->d = (float *)mlc_dev_copy(g, d, sizeof(float) * nd);
            if (w->wtype == MLC_DT_Q4_1) out->m = (float *)mlc_dev_copy(g, m, sizeof(float) * nd);
            ok = out->w && out->d && (w->wtype != MLC_DT_Q4_1 || out->m);
        }
        free(q);
        free(d);
        free(m);
        return ok ? 0 : -1;
    }
    out->w = mlc_dev_copy(g, w->data, (size_t)w->n_out * w->row_bytes);
    return out->w ? 0 : -1;
}

/* Why the kernels cannot run this model, or NULL. */
static const char *mlc_unsupported(const mlstack_model *m, char *buf, size_t cap) {
    const mlstack__config *c = &m->cfg;
    int l;
    if (c->layernorm) return "LayerNorm families";
    if (c->parallel != MLSTACK__RESID_SEQUENTIAL) return "parallel residual blocks";
    if (c->n_experts) return "mixture-of-experts layers";
    if (c->n_recurrent) return "recurrent layers (hybrid models)";
    if (c->mla_rank) return "multi-head latent attention (DeepSeek)";
    if (c->fam->flags & MLSTACK__F_SUB_NORMS) return "norms before Wo and Wdown (BitNet)";
    if (c->act != MLSTACK__ACT_SILU) return "activations other than SiLU";
    if (c->qk_norm != MLSTACK__QK_NORM_NONE && c->qk_norm != MLSTACK__QK_NORM_HEAD)
        return "q/k norms other than per-head RMSNorm";
    if (c->residual_scale != 1.0f) return "residual scaling";
    if (c->attn_softcap > 0) return "attention soft-capping";
    if (c->q_pos_beta > 0) return "position-scaled queries (llama_4_scaling_beta)";
    if (c->n_heads % c->n_kv_heads || c->n_heads / c->n_kv_heads > MLC_MAXG)
        return "more than 16 query heads per KV head";
    if (c->head_dim > MLC_MAXDH || c->head_dim % 2 || c->rot_dim > c->head_dim) return "head dims over 256 or odd";
    for (l = 0; l < c->n_layers; l++) {
        const mlstack__layer *L = &m->layers[l];
        const mlstack__weight *ws[7];
        int i;
        if (!L->attn_norm || !L->ffn_norm || L->post_attn_norm || L->post_ffn_norm || !L->w_up.data || L->moe)
            return "layers without both pre-norms, with post-norms, MoE or ungated MLPs";
        if (L->nope) return "layers without RoPE (NoPE)";
        ws[0] = &L->wq, ws[1] = &L->wk, ws[2] = &L->wv, ws[3] = &L->wo, ws[4] = &L->w_gate, ws[5] = &L->w_up,
        ws[6] = &L->w_down;
        for (i = 0; i < 7; i++) {
            int wt = ws[i]->wtype;
            if (wt != MLC_DT_F32 && wt != MLC_DT_F16 && wt != MLC_DT_BF16 && wt != MLC_DT_Q8_0 && wt != MLC_DT_Q4_1) {
                snprintf(buf, cap, "weight type %s of %s (F32, F16, BF16, Q8_0 and Q4_1 are)", mlstack__wtype_name(wt),
                         ws[i]->name ? ws[i]->name : "a projection");
                return buf;
            }
            if (ws[i]->n_in % (wt == MLC_DT_F32 ? 4 : wt == MLC_DT_Q8_0 || wt == MLC_DT_Q4_1 ? 32 : 8))
                return "projection inputs that are not a multiple of 8 (of 32 for Q8_0 / Q4_1)";
        }
    }
    if (m->lm_head.wtype != MLC_DT_F32 && m->lm_head.wtype != MLC_DT_F16 && m->lm_head.wtype != MLC_DT_BF16 &&
        m->lm_head.wtype != MLC_DT_Q8_0 && m->lm_head.wtype != MLC_DT_Q4_1) {
        snprintf(buf, cap, "LM head of %s (F32, F16, BF16, Q8_0 and Q4_1 are)", mlstack__wtype_name(m->lm_head.wtype));
        return buf;
    }
    if (m->lm_head.n_in % 32 &&
        (m->lm_head.n_in % 8 || m->lm_head.wtype == MLC_DT_Q8_0 || m->lm_head.wtype == MLC_DT_Q4_1))
        return "a model width that is not a multiple of 8 (of 32 for a quantized LM head)";
    return NULL;
}

static mlstack_result mlc_backend_eval(mlstack_engine *e, const mlstack_batch_row *rows, int n_rows);
static void mlc_backend_free(mlstack_engine *e) {
    mlc_engine_release((mlc_engine *)e->backend_ctx);
    e->backend_ctx = NULL;
    e->backend = NULL;
}
static const mlstack__backend mlc_backend = {"cuda", mlc_backend_eval, mlc_backend_free};

/* The backend for engine e (its KV pool sized and its page tables in place). */
static mlstack_result mlc_engine_build(mlstack_engine *e, const mlstack_cuda_desc *cd, mlstack_error *err) {
    const mlstack_model *m = e->model;
    const mlstack__config *c = &m->cfg;
    int D = c->n_embd, H = c->n_heads, Hkv = c->n_kv_heads, Dh = c->head_dim, F = c->n_ff, V = c->n_vocab;
    int l, BC, ctx_pos;
    char why[160];
    const char *no = mlc_unsupported(m, why, sizeof why);
    mlc_engine *g;
    size_t part_per_row;
    if (no) return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "cuda: %s: not supported by the GPU kernels yet", no);
    if (e->kv.mixed)
        return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED,
                             "cuda: a quantized KV cache, or keys and values of different types, is not supported by "
                             "the GPU kernels yet (use one of f16, bf16, f32 for both)");
    g = (mlc_engine *)calloc(1, sizeof *g);
    if (!g) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "cuda: out of memory");
    g->kv_dt = e->kv.dtype;
    g->P = e->kv.page_tokens;
    g->page_elems = e->kv.page_elems;
    ctx_pos = e->kv.n_pages * e->kv.page_tokens; /* no row attends to more */
    if (ctx_pos > c->max_pos) ctx_pos = c->max_pos;
    g->nc_max = (ctx_pos + MLC_CH - 1) / MLC_CH;
    part_per_row = (size_t)H * (size_t)g->nc_max * (size_t)(Dh + 2) * sizeof(float);
    BC = cd && cd->chunk_rows > 0 ? cd->chunk_rows : 64;
    if (BC > e->max_batch) BC = e->max_batch;
    while (BC > 1 && (size_t)BC * part_per_row > ((size_t)256 << 20)) BC /= 2; /* attention partials <= 256 MiB */
    g->BC = BC;
    g->max_in = D > F ? D : F;
    if (H * Dh > g->max_in) g->max_in = H * Dh;
    g->pt_cap = (BC < e->kv.max_seqs ? BC : e->kv.max_seqs) * e->kv.n_pages;
    g->L = (mlc_layer *)calloc((size_t)c->n_layers, sizeof *g->L);
    g->h_x = (float *)malloc(sizeof(float) * (size_t)BC * D);
    g->h_cs = (float *)malloc(sizeof(float) * (size_t)BC * 2 * Dh);
    g->h_ri = (int32_t *)malloc(sizeof(int32_t) * (size_t)BC * 2);
    g->h_pt = (int32_t *)malloc(sizeof(int32_t) * (size_t)g->pt_cap);
    g->h_idx = (int32_t *)malloc(sizeof(int32_t) * (size_t)BC);
    if (!g->L || !g->h_x || !g->h_cs || !g->h_ri || !g->h_pt || !g->h_idx) {
        mlc_engine_release(g);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "cuda: out of memory");
    }
    for (l = 0; l < c->n_layers; l++) {
        const mlstack__layer *L = &m->layers[l];
        mlc_layer *G = &g->L[l];
        G->window = L->window;
        G->rope = L->rope;
        if (mlc_upload_weight(g, &L->wq, &G->wq) || mlc_upload_weight(g, &L->wk, &G->wk) ||
            mlc_upload_weight(g, &L->wv, &G->wv) || mlc_upload_weight(g, &L->wo, &G->wo) ||
            mlc_upload_weight(g, &L->w_gate, &G->wg) || mlc_upload_weight(g, &L->w_up, &G->wu) ||
            mlc_upload_weight(g, &L->w_down, &G->wd) ||
            !(G->attn_norm = (float *)mlc_dev_copy(g, L->attn_norm, sizeof(float) * (size_t)D)) ||
            !(G->ffn_norm = (float *)mlc_dev_copy(g, L->ffn_norm, sizeof(float) * (size_t)D)) ||
            (L->q_norm && !(G->q_norm = (float *)mlc_dev_copy(g, L->q_norm, sizeof(float) * (size_t)Dh))) ||
            (L->k_norm && !(G->k_norm = (float *)mlc_dev_copy(g, L->k_norm, sizeof(float) * (size_t)Dh)))) {
            mlc_engine_release(g);
            return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "cuda: no device memory for the weights of layer %d", l);
        }
    }
    if (mlc_upload_weight(g, &m->lm_head, &g->lm) ||
        !(g->final_norm = (float *)mlc_dev_copy(g, m->final_norm, sizeof(float) * (size_t)D)) ||
        !(g->kv = (unsigned char *)mlc_dev(g, (size_t)e->kv.n_pages * e->kv.page_elems * e->kv.esize)) ||
        !(g->x = (float *)mlc_dev(g, sizeof(float) * (size_t)BC * D)) ||
        !(g->xn = (float *)mlc_dev(g, sizeof(float) * (size_t)BC * D)) ||
        !(g->q = (float *)mlc_dev(g, sizeof(float) * (size_t)BC * H * Dh)) ||
        !(g->k = (float *)mlc_dev(g, sizeof(float) * (size_t)BC * Hkv * Dh)) ||
        !(g->v = (float *)mlc_dev(g, sizeof(float) * (size_t)BC * Hkv * Dh)) ||
        !(g->att = (float *)mlc_dev(g, sizeof(float) * (size_t)BC * H * Dh)) ||
        !(g->o = (float *)mlc_dev(g, sizeof(float) * (size_t)BC * D)) ||
        !(g->g = (float *)mlc_dev(g, sizeof(float) * (size_t)BC * F)) ||
        !(g->u = (float *)mlc_dev(g, sizeof(float) * (size_t)BC * F)) ||
        !(g->logits = (float *)mlc_dev(g, sizeof(float) * (size_t)BC * V)) ||
        !(g->part = (float *)mlc_dev(g, (size_t)BC * part_per_row)) ||
        !(g->cs = (float *)mlc_dev(g, sizeof(float) * (size_t)BC * 2 * Dh)) ||
        !(g->xq = (int8_t *)mlc_dev(g, (size_t)BC * g->max_in)) ||
        !(g->xd = (float *)mlc_dev(g, sizeof(float) * (size_t)BC * (g->max_in / 32))) ||
        !(g->xs = (float *)mlc_dev(g, sizeof(float) * (size_t)BC * (g->max_in / 32))) ||
        !(g->ri = (int32_t *)mlc_dev(g, sizeof(int32_t) * (size_t)BC * 2)) ||
        !(g->pt = (int32_t *)mlc_dev(g, sizeof(int32_t) * (size_t)g->pt_cap)) ||
        !(g->idx = (int32_t *)mlc_dev(g, sizeof(int32_t) * (size_t)BC)) ||
        !(g->argmax = (int32_t *)mlc_dev(g, sizeof(int32_t) * (size_t)BC)) ||
        mlc_zero(g->kv, (size_t)e->kv.n_pages * e->kv.page_elems * e->kv.esize)) {
        mlc_engine_release(g);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY,
                             "cuda: no device memory for the weights, KV pages (%llu bytes) "
                             "or activations",
                             (unsigned long long)((uint64_t)e->kv.n_pages * e->kv.page_elems * e->kv.esize));
    }
    e->backend_ctx = g;
    e->backend = &mlc_backend;
    return MLSTACK_OK;
}

/* Host inputs of rows [0, B): embeddings (times embed_scale) and rotary tables exactly as the
   CPU's mlstack__embed makes them, and the row info and page tables (one copy per sequence). */
static int mlc_stage(mlstack_engine *e, mlc_engine *g, const mlstack_batch_row *rows, int B) {
    const mlstack_model *m = e->model;
    const mlstack__config *c = &m->cfg;
    int D = c->n_embd, Dh = c->head_dim, rd = c->rot_dim, n_tab = c->fam->flags & MLSTACK__F_LAYER_ROPE ? 2 : 1;
    int b, t, i, n_pt = 0;
    float dyn[MLSTACK__MAX_ROPE_PAIRS];
    for (b = 0; b < B; b++) {
        float *x = g->h_x + (size_t)b * D;
        const mlstack__kv_seq *s = &e->kv.seqs[rows[b].seq];
        int prev = -1;
        mlstack__embed_row(m, rows[b].token, x);
        if (c->embed_scale != 1.0f)
            for (i = 0; i < D; i++) x[i] *= c->embed_scale;
        for (t = 0; t < n_tab; t++) {
            float *cs = g->h_cs + (size_t)b * 2 * Dh + (size_t)t * rd;
            const float *inv = m->inv_freq + (size_t)t * (rd / 2);
            if (c->rope[t].kind == MLSTACK__ROPE_LONGROPE && (rows[b].pos >= c->rope[t].orig_max || s->rope_long))
                inv = m->inv_freq_long + (size_t)t * (rd / 2);
            if (c->rope[t].kind == MLSTACK__ROPE_DYNAMIC && rows[b].pos + 1 > c->rope[t].orig_max) {
                mlstack__rope_dynamic(&c->rope[t], rd, rows[b].pos + 1, dyn);
                inv = dyn;
            }
            mlstack__rope_table(cs, rd, rows[b].pos, inv);
            if (m->rope_mul[t] != 1.0f)
                for (i = 0; i < rd; i++) cs[i] *= m->rope_mul[t];
        }
        for (i = 0; i < b; i++)
            if (rows[i].seq == rows[b].seq) prev = i;
        MLC_ROW_POS(g->h_ri, b) = rows[b].pos;
        if (prev >= 0) {
            MLC_ROW_PT(g->h_ri, b) = MLC_ROW_PT(g->h_ri, prev);
        } else {
            if (n_pt + s->n_pages > g->pt_cap) return -1;
            memcpy(g->h_pt + n_pt, s->pages, sizeof(int32_t) * (size_t)s->n_pages);
            MLC_ROW_PT(g->h_ri, b) = n_pt;
            n_pt += s->n_pages;
        }
    }
    if (mlc_h2d(g->x, g->h_x, sizeof(float) * (size_t)B * D) ||
        mlc_h2d(g->cs, g->h_cs, sizeof(float) * (size_t)B * 2 * Dh) ||
        mlc_h2d(g->ri, g->h_ri, sizeof(int32_t) * (size_t)B * 2) ||
        mlc_h2d(g->pt, g->h_pt, sizeof(int32_t) * (size_t)n_pt))
        return -1;
    return 0;
}

static int mlc_is_quant(const mlc_weight *w) { return w->wt == MLC_DT_Q8_0 || w->wt == MLC_DT_Q4_1; }

/* The forward pass of rows [0, B) (B <= BC); logits of rows with slot[b] >= 0 into e->logits. */
static int mlc_forward(mlstack_engine *e, mlc_engine *g, const mlstack_batch_row *rows, int B, const int *slot) {
    const mlstack__config *c = &e->model->cfg;
    int D = c->n_embd, H = c->n_heads, Hkv = c->n_kv_heads, Dh = c->head_dim, F = c->n_ff, V = c->n_vocab;
    int l, b, nc_grid = 1, n_log = 0, first = -1;
    size_t esz = e->kv.esize;
    if (mlc_stage(e, g, rows, B)) return -1;
    for (b = 0; b < B; b++)
        if (rows[b].pos / MLC_CH + 1 > nc_grid) nc_grid = rows[b].pos / MLC_CH + 1;
    (void)esz;
    for (l = 0; l < c->n_layers; l++) {
        mlc_layer *L = &g->L[l];
        /* x += (previous layer's FFN output); xn = rmsnorm(x); q, k, v = xn Wq, xn Wk, xn Wv */
        mlc_add_rmsnorm_rows(g->x, l ? g->o : NULL, L->attn_norm, g->xn, NULL, B, D, c->eps);
        if (mlc_is_quant(&L->wq) || mlc_is_quant(&L->wk) || mlc_is_quant(&L->wv))
            mlc_quantize_rows(g->xn, D, B, D, g->xq, g->xd, g->xs);
        mlc_matvec(&L->wq, g->xn, D, g->xq, g->xd, g->xs, g->q, H * Dh, B);
        mlc_matvec(&L->wk, g->xn, D, g->xq, g->xd, g->xs, g->k, Hkv * Dh, B);
        mlc_matvec(&L->wv, g->xn, D, g->xq, g->xd, g->xs, g->v, Hkv * Dh, B);
        /* q/k norms, rope; k, v -> pages; a = attention */
        mlc_rope_kv_rows(g->q, g->k, g->v, L->q_norm, L->k_norm, g->cs, L->rope, c->rot_dim, c->eps, H, Hkv, Dh, g->kv,
                         g->kv_dt, g->page_elems, g->pt, g->ri, l, g->P, B);
        mlc_attention(g->q, g->kv, g->kv_dt, g->page_elems, g->pt, g->ri, l, g->P, H, Hkv, Dh, L->window, c->attn_scale,
                      g->part, g->nc_max, nc_grid, g->att, B);
        /* x += a Wo; xn = rmsnorm(x) */
        if (mlc_is_quant(&L->wo)) mlc_quantize_rows(g->att, H * Dh, B, H * Dh, g->xq, g->xd, g->xs);
        mlc_matvec(&L->wo, g->att, H * Dh, g->xq, g->xd, g->xs, g->o, D, B);
        mlc_add_rmsnorm_rows(g->x, g->o, L->ffn_norm, g->xn, NULL, B, D, c->eps);
        /* o = (silu(xn Wg) * xn Wu) Wd, added at the next norm */
        if (mlc_is_quant(&L->wg) || mlc_is_quant(&L->wu)) mlc_quantize_rows(g->xn, D, B, D, g->xq, g->xd, g->xs);
        mlc_matvec(&L->wg, g->xn, D, g->xq, g->xd, g->xs, g->g, F, B);
        mlc_matvec(&L->wu, g->xn, D, g->xq, g->xd, g->xs, g->u, F, B);
        mlc_swiglu_rows(g->g, g->u, B * F);
        if (mlc_is_quant(&L->wd)) mlc_quantize_rows(g->g, F, B, F, g->xq, g->xd, g->xs);
        mlc_matvec(&L->wd, g->g, F, g->xq, g->xd, g->xs, g->o, D, B);
    }
    for (b = 0; b < B; b++)
        if (slot[b] >= 0) {
            if (first < 0) first = slot[b];
            g->h_idx[n_log++] = b;
        }
    if (n_log) { /* final norm of the rows that keep logits (gathered), LM head */
        float *dst = e->logits + (size_t)first * V;
        if (mlc_h2d(g->idx, g->h_idx, sizeof(int32_t) * (size_t)n_log)) return -1;
        mlc_add_rmsnorm_rows(g->x, g->o, g->final_norm, g->xn, g->idx, n_log, D, c->eps);
        if (mlc_is_quant(&g->lm)) mlc_quantize_rows(g->xn, D, n_log, D, g->xq, g->xd, g->xs);
        mlc_matvec(&g->lm, g->xn, D, g->xq, g->xd, g->xs, g->logits, V, n_log);
        if (mlc_d2h(dst, g->logits, sizeof(float) * (size_t)n_log * V)) return -1;
        if (c->logits_div != 1.0f) {
            size_t i, nl = (size_t)n_log * (size_t)V;
            for (i = 0; i < nl; i++) dst[i] /= c->logits_div;
        }
        if (c->final_softcap > 0) mlstack__softcap_scalar(dst, (size_t)n_log * (size_t)V, c->final_softcap);
    }
    return mlc_last_error() ? -1 : 0;
}

static mlstack_result mlc_backend_eval(mlstack_engine *e, const mlstack_batch_row *rows, int n_rows) {
    mlc_engine *g = (mlc_engine *)e->backend_ctx;
    int off;
    for (off = 0; off < n_rows; off += g->BC) {
        int B = n_rows - off < g->BC ? n_rows - off : g->BC;
        if (mlc_forward(e, g, rows + off, B, e->logit_slot + off)) {
            const char *why = mlc_last_error();
            return mlstack__engine_fail(e, MLSTACK_ERR_NO_BACKEND, "cuda: forward pass failed: %s",
                                        why ? why : "a device copy failed");
        }
    }
    return MLSTACK_OK;
}
#endif /* engine */

#ifdef __cplusplus
extern "C" {
#endif
#if defined(MLSTACK_CUDA__DEVICE) || defined(MLSTACK_CUDA_EMULATE)
MLSTACK_CUDA_API mlstack_result mlstack_cuda_device_count(int *n_devices, mlstack_error *err) {
#if defined(MLSTACK_CUDA__DEVICE)
    int n = 0;
    cudaError_t r = cudaGetDeviceCount(&n);
    if (n_devices) *n_devices = r == cudaSuccess ? n : 0;
    if (r != cudaSuccess || n == 0)
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_BACKEND, "cuda: no usable device (%s)",
                             r != cudaSuccess ? cudaGetErrorString(r) : "none visible");
#else
    if (n_devices) *n_devices = 1; /* the emulation */
    (void)err;
#endif
    return MLSTACK_OK;
}

MLSTACK_CUDA_API mlstack_result mlstack_cuda_engine_init(mlstack_model *model, const mlstack_engine_desc *desc,
                                                         const mlstack_cuda_desc *cuda, mlstack_engine **out,
                                                         mlstack_error *err) {
    mlstack_engine_desc d;
    mlstack_result r;
    int n = 0;
    if (out) *out = NULL;
    if (!model || !out)
        return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "mlstack_cuda_engine_init: model or out is NULL");
    if ((r = mlstack_cuda_device_count(&n, err)) != MLSTACK_OK) return r;
#if defined(MLSTACK_CUDA__DEVICE)
    if (cuda && (cuda->device < 0 || cuda->device >= n))
        return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "cuda: device %d of %d", cuda->device, n);
    if (cudaSetDevice(cuda ? cuda->device : 0) != cudaSuccess)
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_BACKEND, "cuda: cannot use device %d", cuda ? cuda->device : 0);
#endif
    if (desc && desc->n_ranks > 1)
        return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "mlstack_cuda_engine_init: n_ranks %d (one GPU is one rank)",
                             desc->n_ranks);
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    d.n_ranks = 1;
    d.isa = "scalar"; /* the CPU kernels do not run: no repacked panels */
    if (d.n_threads == 0) d.n_threads = 1;
    if ((r = mlstack_engine_init(model, &d, out, err)) != MLSTACK_OK) return r;
    if ((r = mlc_engine_build(*out, cuda, err)) != MLSTACK_OK) {
        mlstack_engine_free(*out);
        *out = NULL;
    }
    return r;
}

MLSTACK_CUDA_API uint64_t mlstack_cuda_engine_device_bytes(const mlstack_engine *e) {
    return e && e->backend == &mlc_backend ? ((const mlc_engine *)e->backend_ctx)->bytes : 0;
}
#else /* a build without nvcc: the entry points link and say so */
static mlstack_result mlstack_cuda__none(mlstack_error *err) {
    if (err) {
        err->code = MLSTACK_ERR_NO_BACKEND;
        snprintf(err->message, sizeof err->message, "no CUDA backend in this build (compile it with nvcc)");
    }
    return MLSTACK_ERR_NO_BACKEND;
}
MLSTACK_CUDA_API mlstack_result mlstack_cuda_device_count(int *n_devices, mlstack_error *err) {
    if (n_devices) *n_devices = 0;
    return mlstack_cuda__none(err);
}
MLSTACK_CUDA_API mlstack_result mlstack_cuda_engine_init(mlstack_model *model, const mlstack_engine_desc *desc,
                                                         const mlstack_cuda_desc *cuda, mlstack_engine **out,
                                                         mlstack_error *err) {
    (void)model, (void)desc, (void)cuda;
    if (out) *out = NULL;
    return mlstack_cuda__none(err);
}
MLSTACK_CUDA_API uint64_t mlstack_cuda_engine_device_bytes(const mlstack_engine *e) {
    (void)e;
    return 0;
}
#endif
MLSTACK_CUDA_API mlstack_result mlstack_engine_init_cuda(mlstack_model *model, const mlstack_engine_desc *desc,
                                                         const mlstack_cuda_desc *cuda, mlstack_engine **out,
                                                         mlstack_error *err) {
    return mlstack_cuda_engine_init(model, desc, cuda, out, err);
}
#ifdef __cplusplus
}
#endif
#endif /* MLSTACK_CUDA_IMPLEMENTATION */
