/* Times the attention chunk ops of a kernel table on one chunk of 32 keys held in cache: the
   scores of G query heads, their softmax step, and P.V, each repeated, in ns per chunk.

       cc -std=c99 -O2 -I. -o attn_probe tools/attn_probe.c -lpthread -lm
       ./attn_probe [ISA [G [DH]]]        (ISA: scalar, avx2, avx512, ...; default avx2 3 64)

   The data sits in L1, so this is the arithmetic alone; a decode step deep in a context adds
   the reads of its K/V pages. Run it a few times: the best of the runs is the kernel's cost. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    const mlstack__kernels *k = mlstack__kernels_select(mlstack__isa_parse(argc > 1 ? argv[1] : "avx2"), 0);
    int G = argc > 2 ? atoi(argv[2]) : 3, Dh = argc > 3 ? atoi(argv[3]) : 64, n = 32, i, g;
    const int reps = 200000;
    static float q[8 * 256], kt[256 * 32], vf[32 * 256], s[8 * 32], acc[8 * 256];
    float sink = 0;
    double t0, t1, t2, t3, t4;
    if (G < 1 || G > 8 || Dh < 1 || Dh > 256) {
        fprintf(stderr, "attn_probe: G must be 1..8 and DH 1..256\n");
        return 2;
    }
    for (i = 0; i < 8 * 256; i++) q[i] = 0.01f * (float)(i % 97), acc[i] = 0;
    for (i = 0; i < 256 * 32; i++) kt[i] = 0.001f * (float)(i % 89), vf[i] = 0.002f * (float)(i % 83);
    t0 = now();
    for (i = 0; i < reps; i++) {
        k->attn_scores(q, G, Dh, kt, n, 0.125f, s);
        sink += s[i % n];
    }
    t1 = now();
    for (i = 0; i < reps; i++) { /* from a fresh max each time: the max moves, the correction's exp runs */
        float m[8], den[8], corr[8];
        for (g = 0; g < G; g++) m[g] = -FLT_MAX, den[g] = 0;
        k->softmax(s, G, n, m, den, corr);
        sink += den[0];
    }
    t4 = now();
    for (i = 0; i < reps; i++) { /* a max above the chunk's: it stays (a long context's usual step) */
        float m[8], den[8], corr[8];
        for (g = 0; g < G; g++) m[g] = 100.0f, den[g] = 1;
        k->softmax(s, G, n, m, den, corr);
        sink += den[0];
    }
    t2 = now();
    for (i = 0; i < reps; i++) k->attn_pv(acc, G, Dh, s, vf, n);
    t3 = now();
    printf("%s G=%d Dh=%d, per 32-key chunk: scores %.1f ns, softmax %.1f ns (max moving) / %.1f ns (max kept), "
           "P.V %.1f ns (%g)\n",
           k->name, G, Dh, (t1 - t0) / reps * 1e9, (t4 - t1) / reps * 1e9, (t2 - t4) / reps * 1e9,
           (t3 - t2) / reps * 1e9, (double)(sink + acc[1]));
    return 0;
}
