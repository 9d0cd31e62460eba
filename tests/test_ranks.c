/* Multi-rank sharded execution with thread ranks (section RANKS). For every fixture model in
   tests/fixtures/models/ (all have 2 KV heads, so R = 3 and 4 replicate KV heads), a Q8_0
   quantized one, and the real SmolLM2-135M (9 query / 3 KV heads: uneven splits) when present:
     - the logits of a long prefill and of 64 greedy decode steps (24 on SmolLM2, 4 in its
       defer_quant check) with R = 2, 3,
       4 ranks are memcmp-equal to one rank (also with prefill chunks smaller than the prompt);
     - the ranks' shares cover every head, row and column once (KV heads as their query heads
       need), and each rank's private weight bytes are at most W / R + its replicated K/V rows
       + 2 %;
     - the serving path (8 concurrent requests sharing prompt prefixes, prefix-cache hits)
       generates the same tokens with 2 ranks as with one (reduce mode: the greedy ones);
     - reduce mode (MLSTACK_RANK_REDUCE) with R = 2, 3, 4: logits within tol x max|logit| of
       one rank over the run (the fixtures: 1e-4; SmolLM2 with an f32 KV cache: 1e-4 on every
       row; with the default f16 KV cache, whose rounding turns rounding-sized differences into
       f16 steps, 1e-3; and 1e-5 on every row with its first layer only, which is where a
       wrong partial or a lost column would show), the same greedy tokens, every rank's residual stream bit-equal
       after each step, a second run in other prefill chunks bit-equal to the first (SmolLM2: with
       the default KV cache), the bytes formula of the
       reduce-scatter + all-gather, and the shares as in gather mode; refused where a block of
       quantized weights would be split;
     - the family fixtures (tests/fixtures/families): the families that shard give the same
       logits with R = 2, 3, 4 as one rank (gather: memcmp; reduce: within 1e-4); the others
       (mixtures of experts, LayerNorm families, OLMo 2's q/k norms over all heads, hybrids with
       recurrent layers) refuse two
       ranks with a message naming the reason;
     - a model opened with defer_quant (Q8_0 conversion left to the ranks): in both modes the
       logits are memcmp-equal to the same mode on the model quantized at open; each rank reads
       from the checkpoint at least its share of the stored projection bytes (computed here from
       its ranges) and at most that + 1 MiB, where quantizing at open makes every rank read
       them all;
     - pipeline stages (check_stages): see there. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include <dirent.h>

#define N_PROMPT 40
#define N_DECODE 64 /* decode steps at most, and for the fixtures */

static mlstack_rank_mode rank_mode; /* of the engines run() and serve() make */
static int n_stages; /* of the engines run() and serve() make (0: one stage) */
static int n_decode = N_DECODE; /* decode steps of run() (SmolLM2: fewer, each streams 513 MiB) */
static mlstack_kv_type kv_type; /* of the engines run() makes */
static int reduce_rerun = 1; /* check_reduce's second run in prefill chunks of 16 (SmolLM2: see main) */

typedef struct run_out {
    float *logits; /* (N_PROMPT + N_DECODE, V) */
    int32_t tokens[N_DECODE];
} run_out;

static int argmax(const float *x, int n) {
    int i, b = 0;
    for (i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Prefill the prompt (every row keeps logits), then decode. Decode inputs are `force` when
   given (so a mismatch does not change what the ranks see), else the greedy token. */
static int run(mlstack_model *m, int R, int max_batch, const int32_t *prompt, const int32_t *force, run_out *o,
               mlstack_engine **keep) {
    mlstack_engine_desc d;
    mlstack_engine *e;
    mlstack_error err;
    mlstack_model_info mi;
    mlstack_batch_row rows[N_PROMPT];
    int32_t seq, tok;
    int i, V;
    mlstack_model_get_info(m, &mi);
    V = mi.n_vocab;
    memset(&d, 0, sizeof d);
    d.n_threads = R;
    d.n_ranks = R;
    d.threads_per_rank = 1;
    d.max_batch_tokens = max_batch;
    d.max_seqs = 4;
    d.rank_mode = R > 1 ? rank_mode : MLSTACK_RANK_DEFAULT;
    d.n_stages = R > 1 ? n_stages : 0;
    d.kv_type = kv_type;
    if (mlstack_engine_init(m, &d, &e, &err) != MLSTACK_OK) {
        printf("engine with %d ranks: %s\n", R, err.message);
        return -1;
    }
    o->logits = (float *)malloc(sizeof(float) * (size_t)(N_PROMPT + N_DECODE) * (size_t)V);
    mlstack_engine_seq_new(e, &seq);
    for (i = 0; i < N_PROMPT; i++)
        rows[i].seq = seq, rows[i].pos = i, rows[i].token = prompt[i], rows[i].want_logits = 1;
    if (mlstack_engine_eval(e, rows, N_PROMPT) != MLSTACK_OK) goto fail;
    for (i = 0; i < N_PROMPT; i++)
        memcpy(o->logits + (size_t)i * V, mlstack_engine_logits(e, i), sizeof(float) * (size_t)V);
    tok = force ? force[0] : argmax(o->logits + (size_t)(N_PROMPT - 1) * V, V);
    for (i = 0; i < n_decode; i++) {
        mlstack_batch_row r;
        o->tokens[i] = tok;
        r.seq = seq, r.pos = N_PROMPT + i, r.token = tok, r.want_logits = 1;
        if (mlstack_engine_eval(e, &r, 1) != MLSTACK_OK) goto fail;
        memcpy(o->logits + (size_t)(N_PROMPT + i) * V, mlstack_engine_logits(e, 0), sizeof(float) * (size_t)V);
        tok = force && i + 1 < n_decode ? force[i + 1] : argmax(o->logits + (size_t)(N_PROMPT + i) * V, V);
    }
    if (keep) *keep = e;
    else
        mlstack_engine_free(e);
    return 0;
fail:
    printf("eval with %d ranks: %s\n", R, mlstack_engine_error(e));
    mlstack_engine_free(e);
    return -1;
}

/* The one-rank reference run (the prompt below, greedy decode) that check_model, check_reduce and
   check_stages compare with: computed once per model, layer count, KV type and decode length
   (the caller does not free it; ref_drop() before a model is closed, whose address may come
   back). */
static struct {
    const mlstack_model *m;
    int n_layers, n_decode;
    mlstack_kv_type kv_type;
    run_out out;
} ref;
static void ref_drop(void) {
    free(ref.out.logits);
    memset(&ref, 0, sizeof ref);
}
static int ref_run(mlstack_model *m, const int32_t *prompt, run_out *o) {
    if (ref.m != m || ref.n_layers != m->cfg.n_layers || ref.n_decode != n_decode || ref.kv_type != kv_type) {
        ref_drop();
        if (run(m, 1, 512, prompt, NULL, &ref.out, NULL) != 0) return -1;
        ref.m = m, ref.n_layers = m->cfg.n_layers, ref.n_decode = n_decode, ref.kv_type = kv_type;
    }
    *o = ref.out;
    return 0;
}

/* An engine as run() makes it, not run: its ranks' shares and weights */
static mlstack_engine *engine_of(mlstack_model *m, int R) {
    mlstack_engine_desc d;
    mlstack_engine *e = NULL;
    mlstack_error err;
    memset(&d, 0, sizeof d);
    d.n_threads = R;
    d.n_ranks = R;
    d.threads_per_rank = 1;
    d.max_batch_tokens = 512;
    d.max_seqs = 4;
    d.rank_mode = R > 1 ? rank_mode : MLSTACK_RANK_DEFAULT;
    d.kv_type = kv_type;
    if (mlstack_engine_init(m, &d, &e, &err) != MLSTACK_OK) printf("engine with %d ranks: %s\n", R, err.message);
    return e;
}

/* Shares: every query head, D row, FFN column and vocabulary row exactly once, in rank order;
   KV heads are those the query heads read; private bytes within the bound. */
static void check_shares(const char *name, mlstack_engine *e, const mlstack_model_info *mi, double slack) {
    int R = mlstack_engine_n_ranks(e), r, G = mi->n_heads / mi->n_kv_heads;
    uint64_t W = 0;
    mlstack_rank_info ri[8];
    for (r = 0; r < R; r++) {
        CHECK(mlstack_engine_rank_info(e, r, &ri[r]) == MLSTACK_OK);
        W += ri[r].weight_bytes - ri[r].replicated_bytes;
    }
    for (r = 0; r < R; r++) {
        int first = r == 0;
        CHECKF(ri[r].head0 == (first ? 0 : ri[r - 1].head1) && ri[r].head1 > ri[r].head0,
               "%s R=%d rank %d heads [%d, %d)", name, R, r, ri[r].head0, ri[r].head1);
        CHECK(ri[r].embd0 == (first ? 0 : ri[r - 1].embd1) && ri[r].embd1 > ri[r].embd0);
        CHECK(ri[r].ffn0 == (first ? 0 : ri[r - 1].ffn1) && ri[r].ffn1 >= ri[r].ffn0);
        CHECK(ri[r].vocab0 == (first ? 0 : ri[r - 1].vocab1) && ri[r].vocab1 > ri[r].vocab0);
        CHECK(ri[r].kv_head0 == ri[r].head0 / G && ri[r].kv_head1 == (ri[r].head1 + G - 1) / G);
        CHECK(ri[r].kv_pages > 0 && ri[r].kv_page_bytes > 0);
        /* W counts shared K/V rows once per rank that holds them: close enough for the bound */
        CHECKF((double)(ri[r].weight_bytes - ri[r].replicated_bytes) <= (double)W / R * 1.02 + slack * W + 1.0,
               "%s R=%d rank %d: private %llu bytes of W = %llu", name, R, r,
               (unsigned long long)(ri[r].weight_bytes - ri[r].replicated_bytes), (unsigned long long)W);
    }
    CHECK(ri[R - 1].head1 == mi->n_heads && ri[R - 1].embd1 == mi->n_embd && ri[R - 1].ffn1 == mi->n_ff &&
          ri[R - 1].vocab1 == mi->n_vocab);
    if (R > mi->n_kv_heads) CHECKF(ri[0].replicated_bytes > 0, "%s R=%d: KV rows shared", name, R);
}

/* Bytes the ranks read from each other over `rows` rows that all kept logits: per row and layer
   every rank reads the other ranks' columns of four tensors, (R - 1) (H Dh + 2 D + F) floats in
   all, and rank 0 reads the other ranks' vocabulary columns of the logits. */
static void check_bytes(const char *name, mlstack_engine *e, const mlstack_model_info *mi, int rows) {
    int R = mlstack_engine_n_ranks(e), r;
    uint64_t got = 0, want;
    mlstack_rank_info ri, r0;
    mlstack_engine_rank_info(e, 0, &r0);
    for (r = 0; r < R; r++)
        if (mlstack_engine_rank_info(e, r, &ri) == MLSTACK_OK) got += ri.bytes_in;
    want = 4 * (uint64_t)rows *
           ((uint64_t)mi->n_layers * (uint64_t)(R - 1) *
                ((uint64_t)mi->n_heads * mi->head_dim + 2 * (uint64_t)mi->n_embd + (uint64_t)mi->n_ff) +
            (uint64_t)(mi->n_vocab - (r0.vocab1 - r0.vocab0)));
    CHECKF(got == want, "%s R=%d: %llu bytes exchanged, the formula says %llu", name, R, (unsigned long long)got,
           (unsigned long long)want);
    if (strncmp(name, "smollm2", 7) == 0)
        printf("%s R=%d: %.1f KiB read from other ranks per token (all ranks), %.1f KiB by rank 0; %.3f s in exchanges "
               "on rank 0\n",
               name, R, got / 1024.0 / rows, r0.bytes_in / 1024.0 / rows, r0.wait_seconds);
}

static void check_model(const char *name, mlstack_model *m, int max_r, int small_chunks) {
    mlstack_model_info mi;
    run_out one, other;
    int32_t prompt[N_PROMPT];
    int R, i, V;
    mlstack_model_get_info(m, &mi);
    V = mi.n_vocab;
    for (i = 0; i < N_PROMPT; i++) prompt[i] = (int32_t)((i * 7919 + 13) % V);
    if (ref_run(m, prompt, &one) != 0) {
        CHECKF(0, "%s: one rank failed", name);
        return;
    }
    for (R = 2; R <= max_r && R <= mi.n_heads; R++) {
        mlstack_engine *e = NULL;
        int ok = run(m, R, small_chunks && R == 2 ? 16 : 512, prompt, one.tokens, &other, &e) == 0, bad = -1;
        if (ok) {
            for (i = 0; i < N_PROMPT + n_decode && bad < 0; i++)
                if (memcmp(one.logits + (size_t)i * V, other.logits + (size_t)i * V, sizeof(float) * (size_t)V))
                    bad = i;
            check_shares(name, e, &mi, 0);
            check_bytes(name, e, &mi, N_PROMPT + n_decode);
            mlstack_engine_free(e);
            free(other.logits);
        }
        CHECKF(ok && bad < 0, "%s: %d ranks: logits differ from one rank first at row %d (prefill %d, decode %d)", name,
               R, bad, N_PROMPT, n_decode);
    }
}

/* Reduce mode against one rank (gather runs of one rank are the reference).
   The ASan+UBSan flavour (TL_SANITIZED) looks for memory errors, not rounding: there, as
   test_kernels' TK_KEEP does, the n-th call runs the rank counts R with n + R a multiple of 3
   (and its last R when none of the others ran), so each R still meets a third of the models;
   the plain and clang flavours run every R on every model. */
static int reduce_calls;
static void check_reduce(const char *name, mlstack_model *m, int max_r, double tol, int row_by_row) {
    mlstack_model_info mi;
    run_out one, red, again;
    int32_t prompt[N_PROMPT];
    int R, i, j, V, call = reduce_calls++, kept = 0;
    mlstack_model_get_info(m, &mi);
    V = mi.n_vocab;
    for (i = 0; i < N_PROMPT; i++) prompt[i] = (int32_t)((i * 7919 + 13) % V);
    rank_mode = MLSTACK_RANK_DEFAULT;
    if (ref_run(m, prompt, &one) != 0) {
        CHECKF(0, "%s: one rank failed", name);
        return;
    }
    rank_mode = MLSTACK_RANK_REDUCE;
    for (R = 2; R <= max_r && R <= mi.n_heads; R++) {
        mlstack_engine *e = NULL;
        double worst = 0, gd = 0, gm = 0; /* max over rows of max|diff| / max|logit|; over all rows */
        int bad = -1, same_ranks = 1, nrows = N_PROMPT + n_decode;
        if (TL_SANITIZED && (call + R) % 3 && (kept || (R < max_r && R < mi.n_heads))) continue;
        kept = 1;
        if (run(m, R, 512, prompt, one.tokens, &red, &e) != 0) {
            CHECKF(0, "%s: reduce mode, %d ranks failed", name, R);
            continue;
        }
        for (i = 0; i < nrows; i++) {
            const float *a = one.logits + (size_t)i * V, *b = red.logits + (size_t)i * V;
            double mx = 0, dv = 0;
            for (j = 0; j < V; j++) {
                double d = fabs((double)a[j] - (double)b[j]);
                if (fabs(a[j]) > mx) mx = fabs(a[j]);
                if (d > dv) dv = d;
            }
            if (dv / (mx > 0 ? mx : 1) > worst) worst = dv / (mx > 0 ? mx : 1);
            gd = dv > gd ? dv : gd, gm = mx > gm ? mx : gm;
            if (row_by_row && dv > tol * mx && bad < 0) bad = i; /* else over all rows, below */
        }
        CHECKF(bad < 0, "%s: reduce mode, %d ranks: row %d off one rank by more than %g x max|logit|", name, R, bad,
               tol);
        CHECKF(gd <= tol * gm, "%s: reduce mode, %d ranks: %g off one rank, over %g x max|logit| %g", name, R, gd, tol,
               gm);
        /* every rank ends the last step with the same residual stream, bit for bit */
        for (i = 1; i < R; i++)
            same_ranks &= memcmp(e->ranks[0].s.x, e->ranks[i].s.x, sizeof(float) * (size_t)mi.n_embd) == 0;
        CHECKF(same_ranks, "%s: reduce mode, %d ranks: the ranks' residual streams differ", name, R);
        {
            uint64_t got = 0, want;
            mlstack_rank_info ri, r0;
            int r;
            mlstack_engine_rank_info(e, 0, &r0);
            for (r = 0; r < R; r++)
                if (mlstack_engine_rank_info(e, r, &ri) == MLSTACK_OK) got += ri.bytes_in;
            /* per row and layer: two sums, each (R - 1) D floats scattered and (R - 1) D gathered */
            want = 4 * (uint64_t)nrows *
                   ((uint64_t)mi.n_layers * 4 * (uint64_t)(R - 1) * (uint64_t)mi.n_embd +
                    (uint64_t)(mi.n_vocab - (r0.vocab1 - r0.vocab0)));
            CHECKF(got == want, "%s reduce R=%d: %llu bytes exchanged, the formula says %llu", name, R,
                   (unsigned long long)got, (unsigned long long)want);
            check_shares(name, e, &mi, 32.0 / mi.n_ff);
            if (strncmp(name, "smollm2", 7) == 0)
                printf("%s reduce R=%d: %.1f KiB read from other ranks per token (all ranks); logits within %.2g x "
                       "max|logit| of one rank (row by row), %.2g over all rows (max|diff| %.3g)\n",
                       name, R, got / 1024.0 / nrows, worst, gd / gm, gd);
        }
        mlstack_engine_free(e);
        if (reduce_rerun) { /* other chunks: the same bits */
            int ok = run(m, R, 16, prompt, one.tokens, &again, NULL) == 0;
            CHECKF(ok && memcmp(red.logits, again.logits, sizeof(float) * (size_t)nrows * (size_t)V) == 0,
                   "%s: reduce mode, %d ranks: a second run (prefill chunks of 16) %s", name, R,
                   ok ? "differs" : "failed");
            if (ok) free(again.logits);
        }
        /* greedy on its own: the run above was fed one rank's tokens; where its own argmax is that
           token at every step, a greedy run of R ranks (an engine's run is deterministic) feeds
           the same tokens, computes the same logits and so makes the same tokens */
        for (i = 0, j = -1; i < n_decode && j < 0; i++)
            if (argmax(red.logits + (size_t)(N_PROMPT - 1 + i) * V, V) != one.tokens[i]) j = i;
        CHECKF(j < 0, "%s: reduce mode, %d ranks: greedy tokens differ from one rank at step %d", name, R, j);
        free(red.logits);
    }
    rank_mode = MLSTACK_RANK_DEFAULT;
}

/* Stored bytes of rank ri's projections: its rows (gather) or columns (reduce: Wo, Wdown) of
   each, es bytes an element. */
static uint64_t share_bytes(const mlstack_model_info *mi, const mlstack_rank_info *ri, int reduce, int es) {
    uint64_t D = (uint64_t)mi->n_embd, Dh = (uint64_t)mi->head_dim, q = (uint64_t)(ri->head1 - ri->head0) * Dh,
             kv = (uint64_t)(ri->kv_head1 - ri->kv_head0) * Dh, f = (uint64_t)(ri->ffn1 - ri->ffn0),
             e = (uint64_t)(ri->embd1 - ri->embd0), layer;
    layer = (q + 2 * kv + 2 * f) * D + (reduce ? D * q + D * f : e * (uint64_t)mi->n_heads * Dh + e * mi->n_ff);
    return ((uint64_t)(ri->layer1 - ri->layer0) * layer + (uint64_t)(ri->vocab1 - ri->vocab0) * D) * (uint64_t)es;
}

/* path opened with Q8_0 at open and with defer_quant: the same logits, in both modes, and the
   bytes each rank reads. */
static void check_deferred(const char *name, const char *path, int max_r) {
    mlstack_model *now = NULL, *later = NULL;
    mlstack_model_desc md;
    mlstack_model_info mi;
    mlstack_error err;
    int32_t prompt[N_PROMPT];
    int R, i, mode, es;
    memset(&md, 0, sizeof md);
    md.path = path;
    if (mlstack_model_open(&md, &now, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: %s", name, err.message);
        return;
    }
    mlstack_model_get_info(now, &mi);
    es = mi.weight_dtype == MLSTACK_DTYPE_F32 ? 4 : 2;
    CHECK(mi.weight_dtype == MLSTACK_DTYPE_F32 || mi.weight_dtype == MLSTACK_DTYPE_BF16 ||
          mi.weight_dtype == MLSTACK_DTYPE_F16);
    mlstack_model_close(now);
    md.quant = MLSTACK_DTYPE_Q8_0;
    if (mlstack_model_open(&md, &now, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: %s", name, err.message);
        return;
    }
    md.defer_quant = 1;
    if (mlstack_model_open(&md, &later, &err) != MLSTACK_OK) {
        CHECKF(0, "%s deferred: %s", name, err.message);
        mlstack_model_close(now);
        return;
    }
    {
        mlstack_model_info li;
        mlstack_model_get_info(later, &li);
        CHECK(li.weight_dtype == MLSTACK_DTYPE_Q8_0);
    }
    for (i = 0; i < N_PROMPT; i++) prompt[i] = (int32_t)((i * 7919 + 13) % mi.n_vocab);
    for (mode = 0; mode < 2; mode++)
        for (R = 2; R <= max_r; R++) {
            run_out a, b;
            mlstack_engine *ea = NULL, *eb = NULL;
            int r;
            rank_mode = mode ? MLSTACK_RANK_REDUCE : MLSTACK_RANK_GATHER;
            if (mode) { /* reduce mode: Wo's columns split at every rank's first head, on Q8_0 blocks */
                int cut = 0, G = mi.n_heads / mi.n_kv_heads;
                for (r = 0; r < R; r++)
                    cut |= (R <= mi.n_kv_heads ? mi.n_kv_heads * r / R * G : mi.n_heads * r / R) * mi.head_dim % 32;
                if (cut) continue; /* refused: check_errors */
            }
            if (run(now, R, 512, prompt, NULL, &a, &ea) != 0 || run(later, R, 512, prompt, NULL, &b, &eb) != 0) {
                CHECKF(0, "%s: %d ranks (%s) failed", name, R, mode ? "reduce" : "gather");
                continue;
            }
            CHECKF(memcmp(a.logits, b.logits, sizeof(float) * (size_t)(N_PROMPT + n_decode) * (size_t)mi.n_vocab) == 0,
                   "%s: %d ranks (%s): quantized by the ranks, the logits differ from quantized at open", name, R,
                   mode ? "reduce" : "gather");
            for (r = 0; r < R; r++) {
                mlstack_rank_info ia, ib;
                uint64_t share;
                CHECK(mlstack_engine_rank_info(ea, r, &ia) == MLSTACK_OK &&
                      mlstack_engine_rank_info(eb, r, &ib) == MLSTACK_OK);
                share = share_bytes(&mi, &ib, mode, es);
                CHECKF(ib.checkpoint_bytes >= share && ib.checkpoint_bytes <= share + (1u << 20),
                       "%s R=%d rank %d (%s): read %llu bytes of the checkpoint, its share is %llu", name, R, r,
                       mode ? "reduce" : "gather", (unsigned long long)ib.checkpoint_bytes, (unsigned long long)share);
                CHECKF(ia.checkpoint_bytes >= share * R * 9 / 10,
                       "%s R=%d rank %d: quantized at open, %llu bytes read (the whole model's are ~%llu)", name, R, r,
                       (unsigned long long)ia.checkpoint_bytes, (unsigned long long)(share * R));
                if (strncmp(name, "smollm2", 7) == 0 && r == 0)
                    printf("%s R=%d (%s): rank 0 read %.1f MiB of the checkpoint (share %.1f MiB); quantized at open: "
                           "%.1f MiB\n",
                           name, R, mode ? "reduce" : "gather", ib.checkpoint_bytes / 1048576.0, share / 1048576.0,
                           ia.checkpoint_bytes / 1048576.0);
            }
            mlstack_engine_free(ea);
            mlstack_engine_free(eb);
            free(a.logits);
            free(b.logits);
        }
    rank_mode = MLSTACK_RANK_DEFAULT;
    for (R = 2; R <= max_r && R <= 4; R += 2) { /* 2 stages of R / 2: a rank reads its stage's share only */
        run_out a;
        mlstack_engine *ea = NULL;
        int r;
        if (mi.n_layers < 2) break;
        n_stages = 2;
        if (run(later, R, 512, prompt, NULL, &a, &ea) != 0) {
            n_stages = 0;
            CHECKF(0, "%s: %d ranks in 2 stages, quantized by the ranks, failed", name, R);
            continue;
        }
        n_stages = 0;
        for (r = 0; r < R; r++) {
            mlstack_rank_info ri;
            uint64_t share;
            CHECK(mlstack_engine_rank_info(ea, r, &ri) == MLSTACK_OK && ri.stage == r / (R / 2));
            share = share_bytes(&mi, &ri, 0, es);
            CHECKF(ri.checkpoint_bytes >= share && ri.checkpoint_bytes <= share + (1u << 20),
                   "%s R=%d S=2 rank %d (layers %d-%d): read %llu bytes of the checkpoint, its share is %llu", name, R,
                   r, ri.layer0, ri.layer1 - 1, (unsigned long long)ri.checkpoint_bytes, (unsigned long long)share);
            if (strncmp(name, "smollm2", 7) == 0)
                printf("%s R=%d S=2 rank %d: layers %d-%d, read %.1f MiB of the checkpoint (share %.1f MiB)\n", name, R,
                       r, ri.layer0, ri.layer1 - 1, ri.checkpoint_bytes / 1048576.0, share / 1048576.0);
        }
        mlstack_engine_free(ea);
        free(a.logits);
    }
    mlstack_model_close(now);
    mlstack_model_close(later);
}

/* 8 requests: 4 prompts, each twice, sharing a 32-token prefix; submitted together. */
static void serve(mlstack_model *m, int R, int32_t out[8][16], uint64_t *hits) {
    mlstack_engine_desc d;
    mlstack_engine *e;
    mlstack_error err;
    mlstack_model_info mi;
    mlstack_cache_stats st;
    uint64_t id[8];
    int i, j, n_active = 1;
    mlstack_model_get_info(m, &mi);
    memset(&d, 0, sizeof d);
    d.n_threads = R;
    d.n_ranks = R;
    d.max_seqs = 8;
    d.step_tokens = 24;
    d.rank_mode = R > 1 ? rank_mode : MLSTACK_RANK_DEFAULT;
    d.n_stages = R > 1 ? n_stages : 0;
    if (mlstack_engine_init(m, &d, &e, &err) != MLSTACK_OK) {
        CHECKF(0, "serve with %d ranks: %s", R, err.message);
        return;
    }
    for (i = 0; i < 8; i++) {
        int32_t p[48];
        mlstack_request_desc rd;
        for (j = 0; j < 48; j++)
            p[j] = (int32_t)(j < 32 ? (j * 31 + 5) % mi.n_vocab : ((i / 2) * 97 + j * 13) % mi.n_vocab);
        memset(&rd, 0, sizeof rd);
        rd.prompt = p;
        rd.n_prompt = 40 + (i / 2) * 2;
        rd.max_tokens = 16;
        rd.ignore_eos = 1;
        if (i == 7) rd.sampler.temperature = 0.8f, rd.sampler.seed = 7;
        CHECK(mlstack_engine_submit(e, &rd, &id[i], NULL) == MLSTACK_OK);
        if (i == 3) /* the second half arrives after the first half has prefilled */
            for (j = 0; j < 4; j++) mlstack_engine_step(e, &n_active);
    }
    while (n_active) CHECK(mlstack_engine_step(e, &n_active) == MLSTACK_OK || n_active == 0);
    for (i = 0; i < 8; i++) {
        mlstack_request_status rs;
        CHECK(mlstack_engine_poll(e, id[i], &rs, out[i], 16) == MLSTACK_OK && rs.n_generated == 16);
    }
    mlstack_engine_cache_stats(e, &st);
    *hits = st.hit_tokens;
    mlstack_engine_free(e);
}

static void check_serving(const char *name, mlstack_model *m) {
    int32_t a[8][16], b[8][16];
    uint64_t ha = 0, hb = 0;
    int R;
    memset(a, 0, sizeof a);
    memset(b, 1, sizeof b);
    serve(m, 1, a, &ha);
    serve(m, 2, b, &hb);
    CHECKF(memcmp(a, b, sizeof a) == 0, "%s: 8 requests with 2 ranks generate other tokens than with one", name);
    CHECKF(ha > 0 && ha == hb, "%s: prefix-cache hits %llu (one rank) and %llu (two)", name, (unsigned long long)ha,
           (unsigned long long)hb);
    /* reduce mode: the 7 greedy requests give one rank's tokens (the sampled one may differ by
       a rounding-sized change of its probabilities, so it is not compared) */
    memset(b, 1, sizeof b);
    rank_mode = MLSTACK_RANK_REDUCE;
    serve(m, 2, b, &hb);
    rank_mode = MLSTACK_RANK_DEFAULT;
    CHECKF(memcmp(a, b, sizeof a[0] * 7) == 0,
           "%s: 7 greedy requests with 2 ranks in reduce mode generate other tokens", name);
    CHECKF(ha == hb, "%s: prefix-cache hits %llu (one rank) and %llu (two, reduce mode)", name, (unsigned long long)ha,
           (unsigned long long)hb);
    /* pipeline stages: 2 ranks in 2 stages, and the 2 x 2 mesh: all 8 requests as one rank */
    for (R = 2; R <= 4; R += 2) {
        memset(b, 1, sizeof b);
        n_stages = 2;
        serve(m, R, b, &hb);
        n_stages = 0;
        CHECKF(memcmp(a, b, sizeof a) == 0, "%s: 8 requests with %d ranks in 2 stages generate other tokens", name, R);
        CHECKF(ha == hb, "%s: prefix-cache hits %llu (one rank) and %llu (%d ranks in 2 stages)", name,
               (unsigned long long)ha, (unsigned long long)hb, R);
    }
}

/* Pipeline stages (a layer split), alone and as a 2-D mesh of S stages x T = R / S ranks:
     - the logits of the long prefill (in chunks of 16 for the first layout) and of the 64
       decode steps are memcmp-equal to one rank;
     - rank r is in stage r / T with layers [L s / S, L (s + 1) / S), holds the heads, FFN
       columns and rows of rank r % T of a one-stage engine of T ranks (the vocabulary on the
       first stage only), KV pages of its layers only, and weights of its layers only: over the
       stages the weight bytes add up to that rank's exactly, and every stage after the first
       holds the same bytes per layer (the first adds its LM head rows);
     - the bytes exchanged follow the formula: the stages' tensor exchanges, T (S - 1) D floats
       of residual stream per row from stage to stage and T D back to the first stage per row
       that keeps logits, the vocabulary gather to rank 0;
     - reduce mode inside the stages gives the bits of reduce mode with T ranks and one stage. */
static void check_stages(const char *name, mlstack_model *m, int max_s) {
    static const int mesh[][2] = {{2, 2}, {4, 2}, {3, 3}, {4, 4}, {6, 3}}; /* (ranks, stages) */
    mlstack_model_info mi;
    run_out one, st, flat;
    int32_t prompt[N_PROMPT];
    int k, i, V, rows = N_PROMPT + n_decode;
    mlstack_model_get_info(m, &mi);
    V = mi.n_vocab;
    for (i = 0; i < N_PROMPT; i++) prompt[i] = (int32_t)((i * 7919 + 13) % V);
    n_stages = 0;
    rank_mode = MLSTACK_RANK_DEFAULT;
    if (ref_run(m, prompt, &one) != 0) {
        CHECKF(0, "%s: one rank failed", name);
        return;
    }
    for (k = 0; k < (int)(sizeof mesh / sizeof mesh[0]); k++) {
        int R = mesh[k][0], S = mesh[k][1], T = R / S, bad = -1, r, t, ok;
        mlstack_engine *e = NULL, *fe = NULL;
        uint64_t sum[8], got = 0, want, per_layer[8];
        mlstack_rank_info f0, rs[8];
        if (S > max_s || S > mi.n_layers || T > mi.n_heads) continue;
        n_stages = S;
        ok = run(m, R, k == 0 ? 16 : 512, prompt, one.tokens, &st, &e) == 0;
        n_stages = 0;
        if (!ok) {
            CHECKF(0, "%s: %d ranks in %d stages failed", name, R, S);
            continue;
        }
        for (i = 0; i < rows && bad < 0; i++)
            if (memcmp(one.logits + (size_t)i * V, st.logits + (size_t)i * V, sizeof(float) * (size_t)V)) bad = i;
        CHECKF(bad < 0, "%s: %d ranks in %d stages: logits differ from one rank first at row %d", name, R, S, bad);
        free(st.logits);
        if ((fe = engine_of(m, T)) == NULL) { /* one stage of T ranks: its shares and weights */
            CHECKF(0, "%s: %d ranks failed", name, T);
            mlstack_engine_free(e);
            continue;
        }
        memset(sum, 0, sizeof sum);
        for (r = 0; r < R; r++) {
            mlstack_rank_info ri, fi;
            int s = r / T, nl;
            t = r % T;
            CHECK(mlstack_engine_rank_info(e, r, &ri) == MLSTACK_OK &&
                  mlstack_engine_rank_info(fe, t, &fi) == MLSTACK_OK);
            got += ri.bytes_in;
            nl = ri.layer1 - ri.layer0;
            CHECKF(ri.stage == s && ri.n_stages == S && ri.n_ranks == R && nl > 0 &&
                       ri.layer0 == (s ? rs[r - T].layer1 : 0) && (s < S - 1 || ri.layer1 == mi.n_layers),
                   "%s R=%d S=%d rank %d: stage %d of %d, layers [%d, %d)", name, R, S, r, ri.stage, ri.n_stages,
                   ri.layer0, ri.layer1);
            if (t) CHECK(ri.layer0 == rs[r - t].layer0 && ri.layer1 == rs[r - t].layer1);
            CHECK(ri.head0 == fi.head0 && ri.head1 == fi.head1 && ri.kv_head0 == fi.kv_head0 &&
                  ri.kv_head1 == fi.kv_head1 && ri.ffn0 == fi.ffn0 && ri.ffn1 == fi.ffn1 && ri.embd0 == fi.embd0 &&
                  ri.embd1 == fi.embd1);
            CHECK(s == 0 ? ri.vocab0 == fi.vocab0 && ri.vocab1 == fi.vocab1 : ri.vocab0 == ri.vocab1);
            CHECKF(ri.kv_pages == fi.kv_pages &&
                       ri.kv_page_bytes * (uint64_t)mi.n_layers == fi.kv_page_bytes * (uint64_t)nl,
                   "%s R=%d S=%d rank %d: KV page %llu bytes for %d of %d layers (one stage: %llu)", name, R, S, r,
                   (unsigned long long)ri.kv_page_bytes, nl, mi.n_layers, (unsigned long long)fi.kv_page_bytes);
            sum[t] += ri.weight_bytes;
            rs[r] = ri;
            if (s == 1) per_layer[t] = ri.weight_bytes / (uint64_t)nl;
            if (s >= 1)
                CHECKF(ri.weight_bytes == per_layer[t] * (uint64_t)nl && ri.weight_bytes % (uint64_t)nl == 0,
                       "%s R=%d S=%d rank %d: %llu weight bytes for %d layers, %llu a layer in stage 1", name, R, S, r,
                       (unsigned long long)ri.weight_bytes, nl, (unsigned long long)per_layer[t]);
            if (strncmp(name, "smollm2", 7) == 0)
                printf("%s R=%d S=%d rank %d: layers %d-%d, %.2f MiB of weights (one stage of %d ranks: %.2f MiB), "
                       "%.1f KiB per KV page (%.1f)\n",
                       name, R, S, r, ri.layer0, ri.layer1 - 1, ri.weight_bytes / 1048576.0, T,
                       fi.weight_bytes / 1048576.0, ri.kv_page_bytes / 1024.0, fi.kv_page_bytes / 1024.0);
        }
        { /* the stages' layer ranges make the heaviest stage as light as any split of whole
             layers can (every split tried here; the first stage weighs the LM head too) */
            uint64_t layer = 0, head = 0, heaviest = 0, best = UINT64_MAX;
            int cut[8];
            for (t = 0; t < T; t++)
                layer += per_layer[t],
                    head += rs[t].weight_bytes - per_layer[t] * (uint64_t)(rs[t].layer1 - rs[t].layer0);
            for (i = 0; i < S; i++) {
                uint64_t w = layer * (uint64_t)(rs[i * T].layer1 - rs[i * T].layer0) + (i ? 0 : head);
                if (w > heaviest) heaviest = w;
            }
            for (i = 0; i < S; i++) cut[i] = i; /* first layers of stages 1 .. S-1 in cut[1..] */
            for (;;) {
                uint64_t w = 0;
                int j;
                for (j = 0; j < S; j++) {
                    uint64_t sw =
                        layer * (uint64_t)((j + 1 < S ? cut[j + 1] : mi.n_layers) - (j ? cut[j] : 0)) + (j ? 0 : head);
                    if (sw > w) w = sw;
                }
                if (w < best) best = w;
                for (j = S - 1; j >= 1 && cut[j] == mi.n_layers - (S - j); j--) {}
                if (j < 1) break;
                cut[j]++;
                for (j++; j < S; j++) cut[j] = cut[j - 1] + 1;
            }
            CHECKF(heaviest == best,
                   "%s R=%d S=%d: the heaviest stage holds %llu weight bytes, a split can make it %llu", name, R, S,
                   (unsigned long long)heaviest, (unsigned long long)best);
        }
        for (t = 0; t < T; t++) {
            mlstack_rank_info fi;
            mlstack_engine_rank_info(fe, t, &fi);
            CHECKF(rs[t].weight_bytes > per_layer[t] * (uint64_t)(rs[t].layer1 - rs[t].layer0),
                   "%s R=%d S=%d rank %d: no LM head rows", name, R, S, t);
            CHECKF(sum[t] == fi.weight_bytes, "%s R=%d S=%d: rank %d's stages hold %llu weight bytes, one stage %llu",
                   name, R, S, t, (unsigned long long)sum[t], (unsigned long long)fi.weight_bytes);
        }
        mlstack_engine_rank_info(fe, 0, &f0);
        want = 4 * (uint64_t)rows *
               ((uint64_t)mi.n_layers * (uint64_t)(T - 1) *
                    ((uint64_t)mi.n_heads * mi.head_dim + 2 * (uint64_t)mi.n_embd + (uint64_t)mi.n_ff) +
                (uint64_t)(mi.n_vocab - (f0.vocab1 - f0.vocab0)) + (uint64_t)S * T * (uint64_t)mi.n_embd);
        CHECKF(got == want, "%s R=%d S=%d: %llu bytes exchanged, the formula says %llu", name, R, S,
               (unsigned long long)got, (unsigned long long)want);
        if (strncmp(name, "smollm2", 7) == 0)
            printf("%s R=%d S=%d: %.1f KiB exchanged per token (all ranks)\n", name, R, S, got / 1024.0 / rows);
        mlstack_engine_free(e);
        mlstack_engine_free(fe);
        if (T > 1 && k == 1) { /* reduce mode in the stages of the 2 x 2 mesh */
            rank_mode = MLSTACK_RANK_REDUCE;
            n_stages = S;
            ok = run(m, R, 512, prompt, one.tokens, &st, NULL) == 0;
            n_stages = 0;
            if (ok && run(m, T, 512, prompt, one.tokens, &flat, NULL) == 0) {
                CHECKF(memcmp(st.logits, flat.logits, sizeof(float) * (size_t)rows * (size_t)V) == 0,
                       "%s: reduce mode, %d ranks in %d stages differ from %d ranks in one", name, R, S, T);
                free(flat.logits);
            } else {
                CHECKF(0, "%s: reduce mode with %d stages failed", name, S);
            }
            if (ok) free(st.logits);
            rank_mode = MLSTACK_RANK_DEFAULT;
        }
    }
}

/* A transport whose collectives must never be called: the descriptors below are refused first. */
static int never_bcast(void *u, void *b, size_t n, char *msg, size_t cap) {
    (void)u, (void)b, (void)n;
    snprintf(msg, cap, "called");
    CHECKF(0, "bcast called on a refused engine");
    return -1;
}
static int never_gatherv(void *u, const void *s, size_t n, void *r, const size_t *c, const size_t *d, int all,
                         char *msg, size_t cap) {
    (void)u, (void)s, (void)n, (void)r, (void)c, (void)d, (void)all;
    snprintf(msg, cap, "called");
    CHECKF(0, "gatherv called on a refused engine");
    return -1;
}

static void check_errors(mlstack_model *m) {
    mlstack_engine_desc d;
    mlstack_engine *e = NULL;
    mlstack_error err;
    mlstack_model_info mi;
    mlstack_model_get_info(m, &mi);
    memset(&d, 0, sizeof d);
    d.n_ranks = mi.n_heads + 1;
    CHECK(mlstack_engine_init(m, &d, &e, &err) == MLSTACK_ERR_INVALID_ARG && e == NULL && strstr(err.message, "ranks"));
    d.n_ranks = -1;
    CHECK(mlstack_engine_init(m, &d, &e, &err) == MLSTACK_ERR_INVALID_ARG);
    d.n_ranks = 2;
    d.rank_mode = (mlstack_rank_mode)7;
    CHECK(mlstack_engine_init(m, &d, &e, &err) == MLSTACK_ERR_INVALID_ARG && strstr(err.message, "rank_mode"));
    d.rank_mode = MLSTACK_RANK_DEFAULT;
    d.n_stages = 3; /* does not divide 2 ranks */
    CHECKF(mlstack_engine_init(m, &d, &e, &err) == MLSTACK_ERR_INVALID_ARG && e == NULL &&
               strstr(err.message, "must divide"),
           "3 stages of 2 ranks: %s", err.message);
    d.n_ranks = mi.n_layers + 1, d.n_stages = mi.n_layers + 1;
    CHECKF(mlstack_engine_init(m, &d, &e, &err) == MLSTACK_ERR_INVALID_ARG && e == NULL &&
               strstr(err.message, "one stage per layer"),
           "more stages than layers: %s", err.message);
    d.n_ranks = 2, d.n_stages = 0;
    setenv("MLSTACK_STAGES", "x", 1);
    CHECK(mlstack_engine_init(m, &d, &e, &err) == MLSTACK_ERR_INVALID_ARG && strstr(err.message, "MLSTACK_STAGES"));
    unsetenv("MLSTACK_STAGES");
    setenv("MLSTACK_RANK_MODE", "sum", 1);
    CHECK(mlstack_engine_init(m, &d, &e, &err) == MLSTACK_ERR_INVALID_ARG && strstr(err.message, "gather or reduce"));
    unsetenv("MLSTACK_RANK_MODE");
    {
        mlstack_transport t;
        memset(&t, 0, sizeof t);
        t.rank = 0, t.size = 2, t.bcast = never_bcast, t.gatherv = never_gatherv;
        d.transport = &t;
        d.n_ranks = 3; /* the descriptor and the transport disagree on the rank count */
        CHECKF(mlstack_engine_init(m, &d, &e, &err) == MLSTACK_ERR_INVALID_ARG && e == NULL &&
                   strstr(err.message, "n_ranks 3 but the transport has 2 ranks"),
               "rank count mismatch: %s", err.message);
        d.n_ranks = 0;
        d.n_stages = 2; /* stages without send and recv */
        CHECKF(mlstack_engine_init(m, &d, &e, &err) == MLSTACK_ERR_UNSUPPORTED && e == NULL &&
                   strstr(err.message, "send and recv"),
               "stages without send/recv: %s", err.message);
        d.n_stages = 0;
        d.rank_mode = MLSTACK_RANK_REDUCE; /* reduce mode without alltoallv */
        CHECKF(mlstack_engine_init(m, &d, &e, &err) == MLSTACK_ERR_UNSUPPORTED && e == NULL &&
                   strstr(err.message, "alltoallv"),
               "reduce mode without alltoallv: %s", err.message);
        d.transport = NULL;
        d.rank_mode = MLSTACK_RANK_DEFAULT;
        d.n_ranks = 2;
    }
    CHECK(mlstack_engine_init(m, &d, &e, &err) == MLSTACK_OK);
    CHECK(mlstack_engine_follow(e) == MLSTACK_ERR_STATE);
    CHECK(mlstack_engine_rank(e) == 0 && mlstack_engine_n_ranks(e) == 2);
    mlstack_engine_free(e);
}

/* Family fixtures that refuse more than one rank (MoE, whole-projection q/k norms, LayerNorm
   families, hybrids, latent attention, BitNet's sub-norms) */
static const char *const one_rank_only[] = {
    "gemma4",        "gemma4_keqv",      "gemma4_vl",     "gemma4_hd",    "gemma4_hd_keqv",  "gemma3n",
    "gemma3n_alt",   "gemma3n_vl",       "mixtral",       "olmoe",        "qwen2_moe",       "qwen3_moe",
    "gpt_neox",      "gpt_neox_seq",     "stablelm",      "stablelm_par", "olmo2",           "olmo3",
    "lfm2_moe_top1", "gpt_oss",          "gpt_oss_mxfp4", "qwen3_5_vl",   "deepseek_v2",     "deepseek_v2_group",
    "deepseek_v3",   "deepseek_v3_flat", "bitnet",        "bitnet_silu",  TL_HYBRID_FIXTURES};

int main(void) {
    const char *fix = "tests/fixtures/models";
    DIR *dir = opendir(fix);
    struct dirent *de;
    mlstack_model *m;
    mlstack_model_desc md;
    mlstack_error err;
    char path[512];
    int n = 0, quick = getenv("MLSTACK_TEST_QUICK") != NULL; /* make check: three models of each kind */
    if (!dir) {
        CHECKF(0, "cannot open %s", fix);
        return tl_finish();
    }
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.' || (quick && n >= 3)) continue;
        snprintf(path, sizeof path, "%s/%s", fix, de->d_name);
        memset(&md, 0, sizeof md);
        md.path = path;
        if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK) {
            CHECKF(0, "%s: %s", path, err.message);
            continue;
        }
        check_model(de->d_name, m, 4, n == 0);
        check_reduce(de->d_name, m, 4, 1e-4, 0);
        check_stages(de->d_name, m, 4);
        if (n == 0) {
            check_serving(de->d_name, m);
            check_errors(m);
        }
        ref_drop(); /* its address may come back */
        mlstack_model_close(m);
        n++;
    }
    closedir(dir);
    CHECKF(n >= (quick ? 3 : 10), "only %d fixture models", n);
    n = 0;
    dir = opendir("tests/fixtures/families");
    while (dir && (de = readdir(dir)) != NULL) {
        mlstack_engine_desc d;
        mlstack_engine *e = NULL;
        int k, refuse = 0;
        mlstack_result r;
        if (de->d_name[0] == '.' || (quick && n >= 3)) continue;
        for (k = 0; k < (int)(sizeof one_rank_only / sizeof one_rank_only[0]); k++)
            refuse |= strcmp(de->d_name, one_rank_only[k]) == 0;
        snprintf(path, sizeof path, "tests/fixtures/families/%s", de->d_name);
        memset(&md, 0, sizeof md);
        md.path = path;
        if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK) {
            CHECKF(0, "%s: %s", path, err.message);
            continue;
        }
        memset(&d, 0, sizeof d);
        d.n_ranks = 2;
        r = mlstack_engine_init(m, &d, &e, &err);
        if (refuse) {
            CHECKF(r == MLSTACK_ERR_UNSUPPORTED && e == NULL && strstr(err.message, "one rank only"),
                   "%s: two ranks not refused with a reason (%s)", de->d_name, r ? err.message : "accepted");
        } else {
            CHECKF(r == MLSTACK_OK, "%s: two ranks: %s", de->d_name, r ? err.message : "");
            mlstack_engine_free(e);
            check_model(de->d_name, m, 4, 0);
            check_reduce(de->d_name, m, 4, 1e-4, 0);
            check_stages(de->d_name, m, 4);
        }
        if (r == MLSTACK_OK && refuse) mlstack_engine_free(e);
        ref_drop();
        mlstack_model_close(m);
        n++;
    }
    if (dir) closedir(dir);
    CHECKF(n >= (quick ? 3 : 18), "only %d family fixtures", n);
    if (quick) SKIP("the other fixture models and families: quick mode (MLSTACK_TEST_QUICK; make test runs them)");
    /* quantized weights: rows of Q8_0 blocks split the same way */
    memset(&md, 0, sizeof md);
    md.path = "tests/fixtures/models/llama";
    md.quant = MLSTACK_DTYPE_Q8_0;
    if (mlstack_model_open(&md, &m, &err) == MLSTACK_OK) {
        mlstack_engine_desc d;
        mlstack_engine *e = NULL;
        check_model("llama q8_0", m, 4, 0);
        check_stages("llama q8_0", m, 4);
        check_reduce("llama q8_0", m, 2, 1e-4, 0); /* 4 heads of 16: R = 2 splits Wo on whole blocks of 32 */
        memset(&d, 0, sizeof d);
        d.n_ranks = 4;
        d.rank_mode = MLSTACK_RANK_REDUCE;
        CHECKF(mlstack_engine_init(m, &d, &e, &err) == MLSTACK_ERR_UNSUPPORTED && e == NULL &&
                   strstr(err.message, "inside a block"),
               "Q8_0 reduce with 4 ranks of one 16-wide head: %s", err.message);
        ref_drop();
        mlstack_model_close(m);
    } else {
        CHECKF(0, "llama q8_0: %s", err.message);
    }
    check_deferred("llama q8_0 deferred", "tests/fixtures/models/llama", 4);
    memset(&md, 0, sizeof md);
    md.path = "models/smollm2-135m-instruct";
#if defined(__SANITIZE_ADDRESS__)
    SKIP("SmolLM2-135M with ranks: the plain build runs it (too slow under sanitizers)");
#elif defined(__clang__)
    SKIP("SmolLM2-135M with ranks: the gcc build runs it (the clang build checks the fixture models)");
#else
    if (mlstack_model_open(&md, &m, &err) == MLSTACK_OK) {
        mlstack_model_info mi;
        mlstack_model_get_info(m, &mi);
        /* gather mode, stages and serving split every layer alike, and their logits must be
           memcmp-equal at any depth: the first 12 layers (of 30) show the uneven head splits in
           40% of the time, and stages still balance (the LM head weighs 8 layers); reduce mode
           below runs the whole depth, where its rounding accumulates (the layer count goes back
           before the model is closed) */
        n_decode = 24; /* a decode step streams every weight: 24 of them still cross KV pages */
        m->cfg.n_layers = 12;
        check_model("smollm2-135m", m, 4, 0);
        check_stages("smollm2-135m", m, 4);
        check_serving("smollm2-135m", m);
        m->cfg.n_layers = mi.n_layers;
        /* reduce mode's distance from one rank: one rounding-sized difference per layer in the
           residual stream stays ~1e-5 of max|logit| through the 30 layers while K and V are kept
           in f32; the default f16 KV cache rounds them to 11 bits, so a difference that moves a
           value across an f16 rounding boundary becomes a whole f16 step (~5e-4 of it) in what
           later positions attend to, and the logits drift to a few 1e-4 */
        kv_type = MLSTACK_KV_F32;
        /* the rerun in prefill chunks of 16 (the same bits) with the default cache only, below:
           there a chunk's keys and values are also read back rounded, which f32 cannot show */
        reduce_rerun = 0;
        check_reduce("smollm2-135m, f32 KV", m, 4, 1e-4, 1);
        reduce_rerun = 1;
        kv_type = MLSTACK_KV_DEFAULT;
        check_reduce("smollm2-135m", m, 4, 1e-3, 0);
        m->cfg.n_layers = 1; /* the first layer alone: one layer's rounding, nothing amplified yet */
        check_reduce("smollm2-135m, first layer", m, 4, 1e-5, 1);
        m->cfg.n_layers = mi.n_layers;
        /* defer_quant: the weights the ranks quantize are those quantized at open, or the 40
           prompt rows differ already; 4 decode steps (one row a step) are enough beside them */
        n_decode = 4;
        check_deferred("smollm2-135m q8_0 deferred", md.path, 4);
        ref_drop();
        mlstack_model_close(m);
    } else {
        SKIP("models/smollm2-135m-instruct: %s (make model)", err.message);
    }
#endif
    return tl_finish();
}
