/* Running a fixture model, shared by the tests that compare one with its reference (test_models,
   test_families, test_gguf): a prompt's logits at every position, the check that they do not
   change when another sequence shares the batch, and the capture of a greedy continuation.
   Include after mlstack.h. */
#ifndef MLSTACK_FIXTURE_EVAL_H
#define MLSTACK_FIXTURE_EVAL_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Logits of ids[0..n) at every position, [n, n_vocab] (the caller frees them), one new sequence
   evaluated in chunks of `chunk` rows; NULL on failure (the engine's error printed). */
static __attribute__((unused)) float *fx_eval_all(mlstack_engine *e, const int32_t *ids, int n, int n_vocab,
                                                  int chunk) {
    mlstack_batch_row *rows = (mlstack_batch_row *)malloc(sizeof *rows * (size_t)(chunk > 0 ? chunk : 1));
    float *out = (float *)malloc(sizeof(float) * (size_t)n * (size_t)n_vocab);
    int32_t seq = -1;
    int i, at;
    if (!rows || !out || mlstack_engine_seq_new(e, &seq) != MLSTACK_OK) {
        free(rows);
        free(out);
        return NULL;
    }
    for (at = 0; at < n; at += chunk) {
        int m = n - at < chunk ? n - at : chunk;
        for (i = 0; i < m; i++) {
            rows[i].seq = seq;
            rows[i].pos = at + i;
            rows[i].token = ids[at + i];
            rows[i].want_logits = 1;
        }
        if (mlstack_engine_eval(e, rows, m) != MLSTACK_OK) {
            printf("eval: %s\n", mlstack_engine_error(e));
            free(rows);
            free(out);
            mlstack_engine_seq_free(e, seq);
            return NULL;
        }
        for (i = 0; i < m; i++)
            memcpy(out + (size_t)(at + i) * n_vocab, mlstack_engine_logits(e, i), sizeof(float) * (size_t)n_vocab);
    }
    free(rows);
    mlstack_engine_seq_free(e, seq);
    return out;
}

/* Whether the prompt's logits are bit-identical to ref when it runs interleaved with another
   sequence (the reversed prompt) in one batch. */
static __attribute__((unused)) int fx_same_when_batched(mlstack_engine *e, const int32_t *ids, int n, const float *ref,
                                                        int n_vocab) {
    mlstack_batch_row *rows = (mlstack_batch_row *)malloc(sizeof *rows * 2 * (size_t)n);
    int32_t sa = -1, sb = -1;
    int i, nr = 0, same = 1;
    if (!rows || mlstack_engine_seq_new(e, &sa) != MLSTACK_OK || mlstack_engine_seq_new(e, &sb) != MLSTACK_OK) {
        free(rows);
        return 0;
    }
    for (i = 0; i < n; i++) {
        rows[nr].seq = sb, rows[nr].pos = i, rows[nr].token = ids[n - 1 - i], rows[nr].want_logits = 1, nr++;
        rows[nr].seq = sa, rows[nr].pos = i, rows[nr].token = ids[i], rows[nr].want_logits = 1, nr++;
    }
    if (mlstack_engine_eval(e, rows, nr) != MLSTACK_OK) {
        printf("batched eval: %s\n", mlstack_engine_error(e));
        same = 0;
    }
    for (i = 0; same && i < n; i++)
        if (memcmp(mlstack_engine_logits(e, 2 * i + 1), ref + (size_t)i * n_vocab, sizeof(float) * (size_t)n_vocab))
            same = 0;
    free(rows);
    mlstack_engine_seq_free(e, sa);
    mlstack_engine_seq_free(e, sb);
    return same;
}

/* A greedy continuation's tokens, as mlstack_generate's on_token hands them over (the first 64). */
static __attribute__((unused)) int fx_n_greedy;
static __attribute__((unused)) int32_t fx_greedy[64];
static __attribute__((unused)) int fx_on_token(void *user, int32_t t) {
    (void)user;
    if (fx_n_greedy < 64) fx_greedy[fx_n_greedy++] = t;
    return 0;
}

/* The greedy continuation of ids[0..n) by mlstack_generate in a new sequence (freed after),
   max_tokens (up to 64) tokens whatever the end-of-sequence token, into fx_greedy / fx_n_greedy;
   the generate call's result (a sequence not made is that call's). */
static __attribute__((unused)) mlstack_result fx_generate(mlstack_engine *e, const int32_t *ids, int n,
                                                          int max_tokens) {
    mlstack_generate_desc g;
    int32_t seq = -1;
    mlstack_result r = mlstack_engine_seq_new(e, &seq);
    fx_n_greedy = 0;
    if (r != MLSTACK_OK) return r;
    memset(&g, 0, sizeof g);
    g.seq = seq, g.prompt = ids, g.n_prompt = n, g.max_tokens = max_tokens, g.ignore_eos = 1, g.on_token = fx_on_token;
    r = mlstack_generate(e, &g);
    mlstack_engine_seq_free(e, seq);
    return r;
}
#endif
