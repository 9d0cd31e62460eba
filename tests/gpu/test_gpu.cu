// The CUDA companion on a real GPU (tests/gpu/run.sh builds and runs this):
//   1. every check of tests/test_cuda_emul.c, with its buffers in managed memory and its launches
//      on the device: kernels against the CPU's scalar kernels (bit for bit where the kernels keep
//      the canonical order) and double references; the fixture models against the CPU engine
//      (1e-5 x max|logit| with F32 KV, 1e-3 with F16 KV), runs repeated and rows batched
//      bit-identical, greedy continuations equal
//   2. SmolLM2-135M (models/smollm2-135m-instruct, when present): top-1 agreement with the CPU
//      engine over 512 teacher-forced tokens (>= 99 %), the greedy continuation equal, two runs
//      bit-identical
//   3. bench (reported, not pass/fail): matvec 4096 x 4096 (BF16, Q8_0, Q4_1) and batch-1 decode
//      of random-weight 1B and 8B Llama shapes (tests/gpu/shapes), as bytes read per token x
//      tokens/s against the device's memory bandwidth (nominal, and a measured device copy)
// Last line: "N passed, N failed, N skipped"; exit status 1 when a check failed.
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#define MLSTACK_CUDA_IMPLEMENTATION
#include "mlstack_cuda.h"
#include "testlib.h"
#include <cuda_runtime.h>

static void *t_alloc(size_t n) {
    void *p = NULL;
    if (cudaMallocManaged(&p, n + 16) != cudaSuccess) {
        printf("FAIL: cudaMallocManaged(%zu) failed\n", n);
        exit(1);
    }
    memset(p, 0, n + 16);
    return p;
}
static void t_sync(void) {
    cudaError_t e = cudaDeviceSynchronize();
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess) {
        printf("FAIL: a kernel failed: %s\n", cudaGetErrorString(e));
        exit(1);
    }
}
#define T_ALLOC(n) t_alloc((size_t)(n))
#define T_FREE(p) cudaFree(p)
#define T_SYNC() t_sync()
#define MLSTACK_CUDA_TEST_ON_DEVICE
#include "test_cuda_emul.c"

/* ---- 2. SmolLM2 ---- */
static const char *SMOL = "models/smollm2-135m-instruct";

static float *eval_rows(mlstack_engine *e, const int32_t *ids, int n, int V) {
    mlstack_batch_row *rows = (mlstack_batch_row *)calloc((size_t)n, sizeof *rows);
    float *out = (float *)malloc(sizeof(float) * (size_t)n * V);
    int32_t seq;
    int i;
    if (!rows || !out || mlstack_engine_seq_new(e, &seq) != MLSTACK_OK) return NULL;
    for (i = 0; i < n; i++) rows[i].seq = seq, rows[i].pos = i, rows[i].token = ids[i], rows[i].want_logits = 1;
    if (mlstack_engine_eval(e, rows, n) != MLSTACK_OK) {
        printf("eval: %s\n", mlstack_engine_error(e));
        return NULL;
    }
    for (i = 0; i < n; i++) memcpy(out + (size_t)i * V, mlstack_engine_logits(e, i), sizeof(float) * V);
    mlstack_engine_seq_free(e, seq);
    free(rows);
    return out;
}
static int argmax_row(const float *x, int V) {
    int i, b = 0;
    for (i = 1; i < V; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static void check_smollm2(mlstack_kv_type kv, mlstack_dtype quant) {
    char path[256];
    char *cfg, *text;
    size_t len;
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_model *m;
    mlstack_engine *cpu, *gpu;
    mlstack_error err;
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * 8192);
    size_t n_ids = 0;
    int N = 512, V, i, agree = 0;
    float *lc, *lg, *lg2;
    double maxl = 0, maxd = 0;
    snprintf(path, sizeof path, "%s/config.json", SMOL);
    if (!(cfg = tl_read(path, NULL))) {
        SKIP("%s: not on this machine (make model fetches it)", SMOL);
        free(ids);
        return;
    }
    free(cfg);
    memset(&md, 0, sizeof md);
    md.path = SMOL;
    md.quant = quant;
    if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: %s", SMOL, err.message);
        free(ids);
        return;
    }
    V = m->cfg.n_vocab;
    text = tl_read("README.md", &len); /* some English and code to teacher-force */
    if (text) mlstack_tokenizer_encode(mlstack_model_tokenizer(m), text, len, 0, ids, 8192, &n_ids);
    free(text);
    if (n_ids < (size_t)N) {
        SKIP("README.md gives %zu tokens, fewer than %d", n_ids, N);
        mlstack_model_close(m);
        free(ids);
        return;
    }
    memset(&ed, 0, sizeof ed);
    ed.kv_type = kv;
    if (mlstack_engine_init(m, &ed, &cpu, &err) != MLSTACK_OK ||
        mlstack_cuda_engine_init(m, &ed, NULL, &gpu, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: engines: %s", SMOL, err.message);
        mlstack_model_close(m);
        free(ids);
        return;
    }
    lc = eval_rows(cpu, ids, N, V);
    lg = eval_rows(gpu, ids, N, V);
    lg2 = eval_rows(gpu, ids, N, V);
    if (lc && lg && lg2) {
        for (i = 0; i < N; i++) agree += argmax_row(lc + (size_t)i * V, V) == argmax_row(lg + (size_t)i * V, V);
        for (i = 0; i < N * V; i++) {
            if (fabs(lc[i]) > maxl) maxl = fabs(lc[i]);
            if (fabs(lc[i] - lg[i]) > maxd) maxd = fabs(lc[i] - lg[i]);
        }
        printf("smollm2 %s, KV %s: top-1 agreement %d/%d (%.2f %%), max |logit diff| %.3g (max |logit| %.3g)\n",
               quant ? mlstack_dtype_name(quant) : "as stored", kv == MLSTACK_KV_F32 ? "F32" : "F16", agree, N,
               100.0 * agree / N, maxd, maxl);
        CHECKF(agree >= N * 99 / 100, "smollm2: top-1 agreement %d of %d is under 99 %%", agree, N);
        CHECKF(!memcmp(lg, lg2, sizeof(float) * (size_t)N * V), "smollm2: two GPU runs differ");
    } else {
        CHECKF(0, "smollm2: eval failed");
    }
    if (!quant) {
        int a = greedy(cpu, ids, 24, 0, 64), b = greedy(gpu, ids, 24, 1, 64), same = a == 64 && b == 64;
        for (i = 0; same && i < 64; i++) same = greedy_ids[0][i] == greedy_ids[1][i];
        CHECKF(same, "smollm2 KV %s: the 64-token greedy continuation differs from the CPU engine's",
               kv == MLSTACK_KV_F32 ? "F32" : "F16");
    }
    free(lc), free(lg), free(lg2), free(ids);
    mlstack_engine_free(cpu);
    mlstack_engine_free(gpu);
    mlstack_model_close(m);
}

/* ---- 3. bench ---- */
static double g_peak, g_copy; /* GB/s: nominal, and a measured device-to-device copy */

static void bandwidth(void) {
    int clk = 0, bus = 0;
    size_t n = (size_t)1 << 30;
    void *a = NULL, *b = NULL;
    cudaEvent_t e0, e1;
    float ms = 0;
    int i;
    cudaDeviceProp p;
    cudaGetDeviceProperties(&p, 0);
    cudaDeviceGetAttribute(&clk, cudaDevAttrMemoryClockRate, 0);
    cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, 0);
    g_peak = 2.0 * clk * 1e3 * (bus / 8) / 1e9;
    cudaMalloc(&a, n), cudaMalloc(&b, n);
    cudaEventCreate(&e0), cudaEventCreate(&e1);
    cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e0);
    for (i = 0; i < 10; i++) cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms, e0, e1);
    g_copy = 2.0 * 10 * n / (ms * 1e-3) / 1e9; /* read + write */
    printf("bench: %s, %d SMs; memory bandwidth nominal %.0f GB/s, device copy %.0f GB/s\n", p.name,
           p.multiProcessorCount, g_peak, g_copy);
    cudaFree(a), cudaFree(b);
}

static void bench_matvec(int wt) {
    int n = 4096, i, reps = 200;
    size_t wbytes = wt == MLSTACK_DTYPE_BF16   ? (size_t)n * n * 2
                    : wt == MLSTACK_DTYPE_Q8_0 ? (size_t)n * n
                                               : (size_t)n * n / 2;
    size_t sbytes = wt == MLSTACK_DTYPE_BF16 ? 0 : (size_t)n * (n / 32) * 4 * (wt == MLSTACK_DTYPE_Q4_1 ? 2 : 1);
    mlc_weight w;
    float *x, *y, *xd, *xs;
    int8_t *xq;
    cudaEvent_t e0, e1;
    float ms = 0;
    double gbs;
    memset(&w, 0, sizeof w);
    w.wt = wt, w.n_out = n, w.n_in = n;
    cudaMalloc(&w.w, wbytes);
    cudaMemset(w.w, 0x11, wbytes);
    if (sbytes) {
        cudaMalloc((void **)&w.d, sbytes / (wt == MLSTACK_DTYPE_Q4_1 ? 2 : 1));
        cudaMemset(w.d, 0, sbytes / (wt == MLSTACK_DTYPE_Q4_1 ? 2 : 1));
        if (wt == MLSTACK_DTYPE_Q4_1) cudaMalloc((void **)&w.m, sbytes / 2), cudaMemset(w.m, 0, sbytes / 2);
    }
    cudaMalloc((void **)&x, sizeof(float) * n), cudaMemset(x, 0, sizeof(float) * n);
    cudaMalloc((void **)&y, sizeof(float) * n);
    cudaMalloc((void **)&xq, n), cudaMemset(xq, 0, n);
    cudaMalloc((void **)&xd, sizeof(float) * n / 32), cudaMemset(xd, 0, sizeof(float) * n / 32);
    cudaMalloc((void **)&xs, sizeof(float) * n / 32), cudaMemset(xs, 0, sizeof(float) * n / 32);
    cudaEventCreate(&e0), cudaEventCreate(&e1);
    for (i = 0; i < 10; i++) mlc_matvec(&w, x, n, xq, xd, xs, y, n, 1);
    cudaEventRecord(e0);
    for (i = 0; i < reps; i++) mlc_matvec(&w, x, n, xq, xd, xs, y, n, 1);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    cudaEventElapsedTime(&ms, e0, e1);
    gbs = (double)(wbytes + sbytes) * reps / (ms * 1e-3) / 1e9;
    printf("bench: matvec %s 4096x4096, batch 1: %.1f us, %.0f GB/s = %.1f %% of nominal, %.1f %% of the copy%s\n",
           mlstack_dtype_name((mlstack_dtype)wt), 1e3 * ms / reps, gbs, 100 * gbs / g_peak, 100 * gbs / g_copy,
           wt == MLSTACK_DTYPE_BF16
               ? (100 * gbs / g_peak >= 75 ? " (target >= 75 %: met)" : " (target >= 75 %: MISSED)")
               : "");
    t_sync();
    cudaFree(w.w), cudaFree(w.d), cudaFree(w.m), cudaFree(x), cudaFree(y), cudaFree(xq), cudaFree(xd), cudaFree(xs);
}

static void bench_decode(const char *shape, const char *label, double target) {
    mlstack_model *m;
    mlstack_engine *e;
    mlstack_engine_desc ed;
    mlstack_error err;
    mlstack_generate_desc gd;
    int32_t ids[16], seq;
    double t0 = mlstack_clock_seconds(), tps, gbs;
    int i;
    if (mlstack_model_open_random(shape, MLSTACK_DTYPE_BF16, (mlstack_dtype)0, 1, &m, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: %s", shape, err.message);
        return;
    }
    memset(&ed, 0, sizeof ed);
    if (mlstack_cuda_engine_init(m, &ed, NULL, &e, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: %s", shape, err.message);
        mlstack_model_close(m);
        return;
    }
    printf("bench: %s: random BF16 weights made and uploaded in %.1f s (%.2f GB on the device)\n", label,
           mlstack_clock_seconds() - t0, mlstack_cuda_engine_device_bytes(e) / 1e9);
    for (i = 0; i < 16; i++) ids[i] = 100 + i;
    memset(&gd, 0, sizeof gd);
    CHECK(mlstack_engine_seq_new(e, &seq) == MLSTACK_OK);
    gd.seq = seq, gd.prompt = ids, gd.n_prompt = 16, gd.max_tokens = 128, gd.ignore_eos = 1;
    CHECKF(mlstack_generate(e, &gd) == MLSTACK_OK, "%s: generate: %s", label, mlstack_engine_error(e));
    tps = gd.n_generated > 1 ? (gd.n_generated - 1) / gd.decode_seconds : 0;
    gbs = (double)mlstack_model_decode_bytes(m) * tps / 1e9;
    printf("bench: %s decode, batch 1: %.1f tokens/s x %.2f GB read per token = %.0f GB/s = %.1f %% of nominal, "
           "%.1f %% of the copy (target >= %.0f %%: %s)\n",
           label, tps, mlstack_model_decode_bytes(m) / 1e9, gbs, 100 * gbs / g_peak, 100 * gbs / g_copy, target,
           100 * gbs / g_peak >= target ? "met" : "MISSED");
    mlstack_engine_free(e);
    mlstack_model_close(m);
}

int main(int argc, char **argv) {
    int n = 0, bench = 1, i;
    for (i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--no-bench")) bench = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("no CUDA device: nothing to test here\n0 passed, 0 failed, 1 skipped\n");
        return 1;
    }
    run_checks();
    check_smollm2(MLSTACK_KV_DEFAULT, (mlstack_dtype)0);
    check_smollm2(MLSTACK_KV_F32, (mlstack_dtype)0);
    check_smollm2(MLSTACK_KV_DEFAULT, MLSTACK_DTYPE_Q8_0);
    if (bench) {
        bandwidth();
        bench_matvec(MLSTACK_DTYPE_BF16);
        bench_matvec(MLSTACK_DTYPE_Q8_0);
        bench_matvec(MLSTACK_DTYPE_Q4_1);
        bench_decode("tests/gpu/shapes/llama-1b.json", "Llama 1B shape", 35);
        bench_decode("tests/gpu/shapes/llama-8b.json", "Llama 8B shape", 60);
    }
    return tl_finish();
}
