/* mlstack_embed against sentence-transformers: the tiny random Qwen3 embedding models of
   tests/fixtures/embed/ (tools/make_embed_fixture.py: saved as Qwen3-Embedding is, base-model
   weights without "model." prefix, a Pooling module and, for qwen3_last, a Normalize module),
   their tokenizer's ids and SentenceTransformer.encode's vectors. Also: the pooling read from
   modules.json, overrides, the same bits at 1 and 2 threads and 2 thread ranks, and the
   refusals. */
#include "mlstack.h"

#include <math.h>

#include "testlib.h"

static const char *FIX = "tests/fixtures/embed";

static mlstack_engine *open_engine(mlstack_model *m, int threads, int ranks, mlstack_kv_type kv) {
    mlstack_engine_desc d;
    mlstack_engine *e = NULL;
    mlstack_error err;
    memset(&d, 0, sizeof d);
    d.n_threads = threads;
    d.n_ranks = ranks;
    d.kv_mem = (uint64_t)4 << 20;
    d.kv_type = kv;
    if (mlstack_engine_init(m, &d, &e, &err) != MLSTACK_OK) printf("engine: %s\n", err.message);
    return e;
}

/* Every reference text: ids from our tokenizer equal sentence-transformers', the embedding
   within tol of its vector; returns the largest difference. */
static double check_model(const char *name, int want_pooling, int want_norm, double tol, double *maxdiff_f16) {
    char path[512];
    char *text;
    size_t len;
    mlstack_json_doc *doc = NULL;
    mlstack_error err;
    mlstack_model_desc md;
    mlstack_model *m = NULL;
    mlstack_model_info info;
    mlstack_engine *e, *e2, *er, *eh;
    const mlstack_json *texts, *ids, *embs, *t, *iv, *ev;
    double maxdiff = 0;
    snprintf(path, sizeof path, "%s/%s/reference.json", FIX, name);
    text = tl_read(path, &len);
    CHECKF(text != NULL, "%s missing (tools/make_embed_fixture.py)", path);
    if (!text) return 1;
    CHECK(mlstack_json_parse(text, len, path, &doc, &err) == MLSTACK_OK);
    memset(&md, 0, sizeof md);
    snprintf(path, sizeof path, "%s/%s", FIX, name);
    md.path = path;
    CHECKF(mlstack_model_open(&md, &m, &err) == MLSTACK_OK, "%s: %s", path, err.message);
    if (!m || !doc) {
        mlstack_json_free(doc);
        free(text);
        return 1;
    }
    mlstack_model_get_info(m, &info);
    CHECKF(info.pooling == want_pooling && info.normalize == want_norm, "%s: pooling %d normalize %d", name,
           info.pooling, info.normalize);
    e = open_engine(m, 1, 1, MLSTACK_KV_F32); /* exact */
    e2 = open_engine(m, 2, 1, MLSTACK_KV_F32);
    er = open_engine(m, 2, 2, MLSTACK_KV_F32);
    eh = open_engine(m, 1, 1, (mlstack_kv_type)0); /* the default F16 KV: rounded K and V */
    texts = mlstack_json_get(mlstack_json_root(doc), "texts");
    ids = mlstack_json_get(mlstack_json_root(doc), "ids");
    embs = mlstack_json_get(mlstack_json_root(doc), "embeddings");
    CHECK(e && e2 && er && eh && mlstack_json_length(texts) >= 5);
    for (t = mlstack_json_child(texts), iv = mlstack_json_child(ids), ev = mlstack_json_child(embs);
         e && e2 && er && eh && t; t = mlstack_json_next(t), iv = mlstack_json_next(iv), ev = mlstack_json_next(ev)) {
        int32_t got[512], want[512];
        float v[64], v2[64], vr[64], big[80], vh[64];
        size_t n = 0, tl;
        const char *s = mlstack_json_string(t, &tl);
        const mlstack_json *x;
        int k = 0, j, same_ids = 1;
        double d = 0, dh = 0;
        for (x = mlstack_json_child(iv); x && k < 512; x = mlstack_json_next(x)) {
            int64_t id;
            mlstack_json_int(x, &id);
            want[k++] = (int32_t)id;
        }
        CHECK(mlstack_tokenizer_encode(mlstack_model_tokenizer(m), s, tl, MLSTACK_ENCODE_ADD_SPECIAL, got, 512, &n) ==
              MLSTACK_OK);
        for (j = 0; j < k; j++) same_ids &= (size_t)k == n && got[j] == want[j];
        CHECKF(same_ids, "%s: '%s': our ids differ from sentence-transformers' tokenizer", name, s);
        CHECKF(mlstack_embed(e, want, k, NULL, v, 64) == MLSTACK_OK, "%s", mlstack_engine_error(e));
        CHECK(mlstack_embed(e2, want, k, NULL, v2, 64) == MLSTACK_OK);
        CHECK(mlstack_embed(er, want, k, NULL, vr, 64) == MLSTACK_OK);
        CHECK(mlstack_embed(e, want, k, NULL, big, 80) == MLSTACK_OK); /* a larger buffer: the first n_embd */
        CHECK(mlstack_embed(eh, want, k, NULL, vh, 64) == MLSTACK_OK);
        CHECK(memcmp(v, v2, sizeof v) == 0 && memcmp(v, vr, sizeof v) == 0 && memcmp(v, big, sizeof v) == 0);
        for (j = 0, x = mlstack_json_child(ev); j < 64 && x; j++, x = mlstack_json_next(x)) {
            double dd = fabs((double)v[j] - mlstack_json_number(x)), ddh = fabs((double)vh[j] - mlstack_json_number(x));
            if (dd > d) d = dd;
            if (ddh > dh) dh = ddh;
        }
        CHECKF(j == 64 && !x, "%s: the reference has another dimension", name);
        CHECKF(d <= tol, "%s: '%s': max |ours - sentence-transformers| = %.3g > %.3g", name, s, d, tol);
        CHECKF(dh <= 5e-3, "%s: '%s': F16 KV: max difference %.3g", name, s, dh);
        if (d > maxdiff) maxdiff = d;
        if (dh > *maxdiff_f16) *maxdiff_f16 = dh;
    }
    mlstack_engine_free(eh);
    mlstack_engine_free(er);
    mlstack_engine_free(e2);
    mlstack_engine_free(e);
    mlstack_model_close(m);
    mlstack_json_free(doc);
    free(text);
    return maxdiff;
}

/* Overrides and refusals on one engine: pooling/normalize from the desc agree with pooling done
   by hand from the per-token states (mean of LAST embeddings of each prefix is not defined, so
   compare MEAN/MAX/FIRST against single-token runs where they must match), bad arguments fail
   with a message, and the engine still generates afterwards. */
static void check_overrides(void) {
    char path[512];
    mlstack_model_desc md;
    mlstack_model *m = NULL;
    mlstack_error err;
    mlstack_engine *e;
    mlstack_embed_desc d;
    int32_t ids[4] = {358, 363, 0, 0}, bad[2] = {1, 100000};
    float a[64], b[64], c[64];
    double nrm = 0;
    int j;
    memset(&md, 0, sizeof md);
    snprintf(path, sizeof path, "%s/qwen3_mean", FIX);
    md.path = path;
    CHECKF(mlstack_model_open(&md, &m, &err) == MLSTACK_OK, "%s", err.message);
    if (!m) return;
    e = open_engine(m, 1, 1, MLSTACK_KV_F32);
    if (!e) {
        mlstack_model_close(m);
        return;
    }
    memset(&d, 0, sizeof d);
    /* FIRST of [x, ...] == LAST of [x]; MEAN of [x] == LAST of [x]; MAX of [x] == it too */
    d.pooling = MLSTACK_POOLING_FIRST;
    CHECK(mlstack_embed(e, ids, 3, &d, a, 64) == MLSTACK_OK);
    d.pooling = MLSTACK_POOLING_LAST;
    CHECK(mlstack_embed(e, ids, 1, &d, b, 64) == MLSTACK_OK);
    d.pooling = MLSTACK_POOLING_MAX;
    CHECK(mlstack_embed(e, ids, 1, &d, c, 64) == MLSTACK_OK);
    CHECK(memcmp(a, b, sizeof a) == 0 && memcmp(a, c, sizeof a) == 0);
    d.normalize = 1; /* this model has no Normalize module: asked for, the vector has norm 1 */
    CHECK(mlstack_embed(e, ids, 3, &d, a, 64) == MLSTACK_OK);
    for (j = 0; j < 64; j++) nrm += (double)a[j] * a[j];
    CHECKF(fabs(sqrt(nrm) - 1) < 1e-5, "norm %.9g", sqrt(nrm));
    d.normalize = -1; /* and MAX >= every single state: >= the last token's own */
    CHECK(mlstack_embed(e, ids, 3, &d, a, 64) == MLSTACK_OK);
    d.pooling = MLSTACK_POOLING_LAST;
    CHECK(mlstack_embed(e, ids, 3, &d, b, 64) == MLSTACK_OK);
    for (j = 0; j < 64 && a[j] >= b[j]; j++) {}
    CHECK(j == 64);
    /* refusals, each with a message */
    CHECK(mlstack_embed(e, ids, 0, NULL, a, 64) == MLSTACK_ERR_INVALID_ARG && mlstack_engine_error(e)[0]);
    CHECK(mlstack_embed(e, bad, 2, NULL, a, 64) == MLSTACK_ERR_INVALID_ARG &&
          strstr(mlstack_engine_error(e), "vocabulary"));
    CHECK(mlstack_embed(e, ids, 2, NULL, a, 63) == MLSTACK_ERR_INVALID_ARG);
    d.pooling = (mlstack_pooling)9;
    CHECK(mlstack_embed(e, ids, 2, &d, a, 64) == MLSTACK_ERR_UNSUPPORTED);
    {
        static int32_t many[300];
        CHECK(mlstack_embed(e, many, 300, NULL, a, 64) == MLSTACK_ERR_LIMIT &&
              strstr(mlstack_engine_error(e), "context"));
    }
    /* the engine still generates, and holds no sequence */
    {
        int32_t seq = -1;
        mlstack_batch_row row;
        CHECK(mlstack_engine_seq_new(e, &seq) == MLSTACK_OK && seq == 0);
        row.seq = seq, row.pos = 0, row.token = 5, row.want_logits = 1;
        CHECK(mlstack_engine_eval(e, &row, 1) == MLSTACK_OK && mlstack_engine_logits(e, 0) != NULL);
    }
    mlstack_engine_free(e);
    mlstack_model_close(m);
}

int main(void) {
    double h1 = 0, h2 = 0, d1 = check_model("qwen3_last", MLSTACK_POOLING_LAST, 1, 2e-6, &h1),
           d2 = check_model("qwen3_mean", MLSTACK_POOLING_MEAN, 0, 2e-5, &h2);
    printf("max |mlstack - sentence-transformers|: lasttoken+normalize %.3g, mean %.3g (F32 KV); "
           "%.3g, %.3g (default F16 KV)\n",
           d1, d2, h1, h2);
    check_overrides();
    return tl_finish();
}
