/* Decode attention at depth against a paged KV cache of each type: one query row of G heads
   over DEPTH cached positions of one kv head (mlstack__attend, as a decode step runs it), in
   thread CPU microseconds per call (the best of the runs: a busy machine slows wall time,
   less so the CPU time a thread is given), with the cache's bytes for those positions.

       cc -std=c99 -O2 -I. -o kvquant_probe tools/kvquant_probe.c -lpthread -lm
       ./kvquant_probe [DEPTH [ISA]]            (default 8192, the best ISA)

   Types: f16 (read in place by the _kv kernels), bf16, f32, q8_0, q4_0 (dequantized a chunk
   at a time, mlstack__kv_chunk_any). 40 layers' worth of kv heads are cycled so the cache is
   read from memory, not from the last level cache, as in a real decode step. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define G 3
#define DH 64
#define LAYERS 40

static double cpu_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    static const char *names[] = {"", "f16", "bf16", "f32", "q8_0", "q4_0"};
    int depth = argc > 1 ? atoi(argv[1]) : 8192, t, l, rep, i;
    const mlstack__kernels *k = mlstack__kernels_select(argc > 2 ? mlstack__isa_parse(argv[2]) : -1, 0);
    float q[G * DH], out[G * DH], *x = (float *)malloc(sizeof(float) * 2 * DH), *scratch;
    mlstack__config c;
    mlstack_error err;
    uint64_t seed = 1;
    if (depth < 32 || depth > 65536) return 2;
    scratch = (float *)malloc(sizeof(float) * mlstack__attend_scratch(G, DH));
    for (i = 0; i < G * DH; i++) q[i] = (float)((i * 37) % 17 - 8) * 0.01f;
    memset(&c, 0, sizeof c);
    c.n_layers = c.n_kv_layers = LAYERS, c.n_kv_heads = 1, c.head_dim = DH;
    printf("%s, depth %d, G %d, Dh %d: us per attend call (thread CPU, best of 5 passes over %d layers)\n", k->name,
           depth, G, DH, LAYERS);
    for (t = MLSTACK_KV_F16; t <= MLSTACK_KV_Q4_0; t++) {
        mlstack__kv kv;
        int32_t pos, t1 = depth - 1;
        double best = 1e30;
        uint64_t tok = mlstack__kv_token_bytes(&c, (mlstack_kv_type)t, (mlstack_kv_type)t);
        if (mlstack__kv_init(&kv, &c, tok * (uint64_t)(depth + 32), 16, 1, (mlstack_kv_type)t, (mlstack_kv_type)t, 1,
                             LAYERS, &err) != MLSTACK_OK ||
            mlstack__kv_resize(&kv, &kv.seqs[0], depth) != 0) {
            printf("%s: %s\n", names[t], err.message);
            return 1;
        }
        for (l = 0; l < LAYERS; l++)
            for (pos = 0; pos < depth; pos++) {
                for (i = 0; i < 2 * DH; i++) {
                    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                    x[i] = (float)((int)(seed >> 40) % 2001 - 1000) * 1e-3f;
                }
                mlstack__kv_store(&kv, &kv.seqs[0], l, 0, pos, x, x + DH, k->from_f32);
            }
        for (rep = 0; rep < 5; rep++) {
            double t0 = cpu_now(), dt;
            for (l = 0; l < LAYERS; l++)
                mlstack__attend(k, out, G * DH, q, G * DH, 1, G, &kv, &kv.seqs[0], l, 0, DH, 0, &t1, 0.125f, 0, NULL,
                                scratch);
            dt = (cpu_now() - t0) / LAYERS * 1e6;
            best = dt < best ? dt : best;
        }
        printf("  %-5s %9.1f us   %7.1f KiB of K+V   (out[0] %.6g)\n", names[t], best,
               (double)tok * depth / LAYERS / 1024, out[0]);
        mlstack__kv_free(&kv);
    }
    free(x);
    free(scratch);
    return 0;
}
