/* Quality of a quantized model against the model as stored, over one token sequence:
   the mean KL divergence KL(P_ref || P_quant) of the next-token distributions, top-1 agreement
   and both perplexities. Used by `mlstack kl` and tests/test_real_quality.c. Needs mlstack.h
   (with the implementation) included first. */
#ifndef MLSTACK_QUALITY_H
#define MLSTACK_QUALITY_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct quality {
    int n;                 /* positions compared (tokens - 1) */
    double mean_kl, max_kl, top1, ppl_ref, ppl_q;
} quality;

/* log-softmax of v (n,) into out. */
static void quality_log_softmax(const float *v, double *out, int n) {
    double mx = v[0], sum = 0;
    int i;
    for (i = 1; i < n; i++)
        if (v[i] > mx) mx = v[i];
    for (i = 0; i < n; i++) sum += exp(v[i] - mx);
    for (i = 0; i < n; i++) out[i] = v[i] - mx - log(sum);
}

static int quality_argmax(const float *v, int n) {
    int i, b = 0;
    for (i = 1; i < n; i++)
        if (v[i] > v[b]) b = i;
    return b;
}

/* Runs ids through the reference engine and each of the nq engines in qe, in chunks of `chunk`
   positions (one fresh sequence each), and fills q[0..nq) from the positions `from` on (the
   earlier ones are computed, not scored). Returns 0, or -1 after an engine error. The
   reference runs once for all of them. */
static int quality_compare_from(mlstack_engine *ref, mlstack_engine **qe, int nq, int n_vocab, const int32_t *ids,
                                int n, int chunk, int from, quality *q) {
    mlstack_batch_row *rows = (mlstack_batch_row *)calloc((size_t)chunk, sizeof *rows);
    double *la = (double *)malloc(sizeof(double) * (size_t)n_vocab),
           *lb = (double *)malloc(sizeof(double) * (size_t)n_vocab);
    double kl_sum[8] = {0}, nll_a = 0, nll_b[8] = {0};
    int32_t sa, sb[8];
    int off, i, k, e, agree[8] = {0}, rc = 0;
    if (nq > 8) nq = 8;
    memset(q, 0, sizeof *q * (size_t)nq);
    if (!rows || !la || !lb || mlstack_engine_seq_new(ref, &sa) != MLSTACK_OK) rc = -1;
    for (e = 0; rc == 0 && e < nq; e++)
        if (mlstack_engine_seq_new(qe[e], &sb[e]) != MLSTACK_OK) rc = -1;
    for (off = 0; off < n && rc == 0; off += chunk) {
        int m = n - off < chunk ? n - off : chunk;
        for (i = 0; i < m; i++) {
            rows[i].seq = sa;
            rows[i].pos = off + i;
            rows[i].token = ids[off + i];
            rows[i].want_logits = 1;
        }
        if (mlstack_engine_eval(ref, rows, m) != MLSTACK_OK) rc = -1;
        for (e = 0; rc == 0 && e < nq; e++) {
            for (i = 0; i < m; i++) rows[i].seq = sb[e];
            if (mlstack_engine_eval(qe[e], rows, m) != MLSTACK_OK) rc = -1;
        }
        for (i = 0; rc == 0 && i < m && off + i + 1 < n; i++) {
            const float *a = mlstack_engine_logits(ref, i);
            int next, top;
            if (off + i < from) continue;
            next = ids[off + i + 1], top = quality_argmax(a, n_vocab);
            quality_log_softmax(a, la, n_vocab);
            nll_a -= la[next];
            for (e = 0; e < nq; e++) {
                const float *b = mlstack_engine_logits(qe[e], i);
                double kl = 0;
                quality_log_softmax(b, lb, n_vocab);
                for (k = 0; k < n_vocab; k++) kl += exp(la[k]) * (la[k] - lb[k]);
                kl_sum[e] += kl;
                if (kl > q[e].max_kl) q[e].max_kl = kl;
                agree[e] += top == quality_argmax(b, n_vocab);
                nll_b[e] -= lb[next];
                q[e].n++;
            }
        }
    }
    for (e = 0; e < nq; e++)
        if (q[e].n) {
            q[e].mean_kl = kl_sum[e] / q[e].n;
            q[e].top1 = (double)agree[e] / q[e].n;
            q[e].ppl_ref = exp(nll_a / q[e].n);
            q[e].ppl_q = exp(nll_b[e] / q[e].n);
        }
    if (rows) {
        mlstack_engine_seq_free(ref, sa);
        for (e = 0; e < nq; e++) mlstack_engine_seq_free(qe[e], sb[e]);
    }
    free(rows), free(la), free(lb);
    return rc;
}
static int quality_compare(mlstack_engine *ref, mlstack_engine **qe, int nq, int n_vocab, const int32_t *ids, int n,
                           int chunk, quality *q) {
    return quality_compare_from(ref, qe, nq, n_vocab, ids, n, chunk, 0, q);
}
#endif
