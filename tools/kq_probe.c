/* One matmul of random weights in a GGML block format, repeated, for instruction counts under
   qemu (tools/neon_insns.sh): y (B, n_out) = x (B, n_in) W^T on a named kernel table, from the
   weight's rows or from its KQ / P16 panels.

       kq_probe TABLE TYPE N_IN N_OUT B REPS PANELS     (TYPE: Q4_K, Q6_K, ..., Q8_0, Q4_1, IQ4_XS,
                                                         or F32, F16, BF16 with PANELS 1)

   Run it with REPS 0 and REPS n: the difference over n is one matmul's cost. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint32_t seed = 12345u;
static float uniform(void) { /* [-1, 1) */
    seed = seed * 1664525u + 1013904223u;
    return (float)(seed >> 8) / 8388608.0f - 1.0f;
}

int main(int argc, char **argv) {
    static const int types[] = {MLSTACK__W_Q5_0, MLSTACK__W_Q5_1, MLSTACK__W_Q2_K,   MLSTACK__W_Q3_K,   MLSTACK__W_Q4_K,
                                MLSTACK__W_Q5_K, MLSTACK__W_Q6_K, MLSTACK__W_Q8_0,   MLSTACK__W_Q4_1,   MLSTACK__W_F32,
                                MLSTACK__W_F16,  MLSTACK__W_BF16, MLSTACK__W_IQ4_XS, MLSTACK__W_IQ2_XXS};
    const mlstack__kernels *k;
    mlstack__weight w;
    mlstack__q8x *xq;
    unsigned char *rows, *panels = NULL;
    float *x, *y, *scratch;
    int wt = -1, i, n_in, n_out, B, reps;
    double t, c;
    size_t rb;
    if (argc != 8) {
        fprintf(stderr, "usage: kq_probe TABLE TYPE N_IN N_OUT B REPS PANELS\n");
        return 2;
    }
    k = mlstack__kernels_named(argv[1]);
    if (!k) { /* the tables reached by an ISA cap (avx2 among them) */
        k = mlstack__kernels_select(mlstack__isa_parse(argv[1]), 0);
        if (strcmp(k->name, argv[1]) != 0) k = NULL;
    }
    for (i = 0; i < (int)(sizeof types / sizeof types[0]); i++)
        if (strcmp(mlstack__wtype_name(types[i]), argv[2]) == 0) wt = types[i];
    n_in = atoi(argv[3]), n_out = atoi(argv[4]), B = atoi(argv[5]), reps = atoi(argv[6]);
    if (!k || wt < 0 || n_in <= 0 || n_in % 256 || n_out <= 0 || B <= 0 || reps < 0) {
        fprintf(stderr, "kq_probe: unknown table or type, or a bad size (N_IN a multiple of 256)\n");
        return 2;
    }
    rb = mlstack__row_bytes(wt, n_in);
    rows = (unsigned char *)malloc(rb * (size_t)n_out);
    x = (float *)malloc(sizeof(float) * (size_t)B * (size_t)n_in);
    y = (float *)malloc(sizeof(float) * (size_t)B * (size_t)n_out);
    scratch = (float *)malloc(sizeof(float) * MLSTACK__MM_SCRATCH(n_in));
    xq = (mlstack__q8x *)malloc(sizeof(mlstack__q8x) * (size_t)B * (size_t)(n_in / 32));
    if (!rows || !x || !y || !scratch || !xq) return 1;
    if (wt == MLSTACK__W_F32 || wt == MLSTACK__W_F16 || wt == MLSTACK__W_BF16) { /* finite values */
        float *f = (float *)malloc(sizeof(float) * (size_t)n_in * (size_t)n_out);
        if (!f) return 1;
        for (i = 0; i < n_in * n_out; i++) f[i] = uniform();
        mlstack__from_f32((mlstack_dtype)wt, f, rows, (size_t)n_in * (size_t)n_out);
        free(f);
    } else
        for (i = 0; i < (int)(rb * (size_t)n_out); i++) rows[i] = (unsigned char)(uniform() * 128 + 128);
    if (wt == MLSTACK__W_IQ4_XS || wt == MLSTACK__W_IQ2_XXS) { /* a finite d (f16 1/64) first in each block */
        size_t bs = mlstack__ggml_types[wt - 16].size, off;
        for (off = 0; off < rb * (size_t)n_out; off += bs) rows[off] = 0, rows[off + 1] = 0x24;
    }
    for (i = 0; i < B * n_in; i++) x[i] = uniform();
    memset(&w, 0, sizeof w);
    w.data = rows, w.wtype = wt, w.n_out = n_out, w.n_in = n_in, w.row_bytes = rb;
    mlstack__quantize_rows(x, xq, B, n_in);
    if (atoi(argv[7])) {
        panels = (unsigned char *)malloc(mlstack__p16_bytes(wt, n_in) * (size_t)mlstack__p16_panels(n_out));
        if (!panels) return 1;
        for (i = 0; i * 64 < n_out; i++) mlstack__p16_pack_group(&w, i, 0, panels);
        w.packed = panels;
    }
    t = mlstack_clock_seconds(), c = (double)clock();
    for (i = 0; i < reps; i++) k->matmul(&w, x, xq, y, B, 0, n_out, scratch);
    t = mlstack_clock_seconds() - t, c = ((double)clock() - c) / CLOCKS_PER_SEC;
    /* CPU time too: on a loaded machine the process waits for a core, and wall time counts it */
    printf("%s %s %dx%d B=%d from %s: %.1f us per matmul (%.1f us CPU)\n", k->name, argv[2], n_in, n_out, B,
           panels ? "panels" : "rows", reps ? t * 1e6 / reps : 0.0, reps ? c * 1e6 / reps : 0.0);
    free(rows), free(x), free(y), free(scratch), free(xq), free(panels);
    return 0;
}
