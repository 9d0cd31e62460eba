/* Quantized models: saving with mlstack_model_save and reopening gives the same weights
   (bit-identical logits, no requantization), for tied and untied heads and both formats;
   quantized logits stay near the f32 ones on the reference fixtures. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include <unistd.h>

static float *logits_of(mlstack_model *m, const int32_t *ids, int n, int *n_vocab) {
    mlstack_engine_desc ed;
    mlstack_engine *e;
    mlstack_error err;
    mlstack_batch_row rows[16];
    mlstack_model_info info;
    int32_t seq = -1;
    int i;
    float *out;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = 1;
    ed.kv_type = MLSTACK_KV_F32;
    if (mlstack_engine_init(m, &ed, &e, &err) != MLSTACK_OK) return NULL;
    mlstack_model_get_info(m, &info);
    *n_vocab = info.n_vocab;
    mlstack_engine_seq_new(e, &seq);
    for (i = 0; i < n; i++) {
        rows[i].seq = seq;
        rows[i].pos = i;
        rows[i].token = ids[i];
        rows[i].want_logits = i == n - 1;
    }
    out = (float *)malloc(sizeof(float) * (size_t)info.n_vocab);
    if (mlstack_engine_eval(e, rows, n) == MLSTACK_OK)
        memcpy(out, mlstack_engine_logits(e, n - 1), sizeof(float) * info.n_vocab);
    else
        free(out), out = NULL;
    mlstack_engine_free(e);
    return out;
}

int main(void) {
    static const char *names[] = {"llama", "llama_tied", "qwen2"};
    static const mlstack_dtype quants[] = {MLSTACK_DTYPE_Q8_0, MLSTACK_DTYPE_Q4_1};
    const int32_t ids[] = {1, 17, 42, 99, 7, 300, 5};
    char tmpl[] = "/tmp/mlstack_quant_XXXXXX", *tmp = mkdtemp(tmpl);
    int ni, qi;
    CHECK(tmp != NULL);
    for (ni = 0; tmp && ni < 3; ni++) {
        char src[256];
        mlstack_model_desc md;
        mlstack_model *ref;
        mlstack_error err;
        float *lref;
        int V = 0;
        snprintf(src, sizeof src, "tests/fixtures/models/%s", names[ni]);
        memset(&md, 0, sizeof md);
        md.path = src;
        if (mlstack_model_open(&md, &ref, &err) != MLSTACK_OK) {
            CHECKF(0, "%s: %s", src, err.message);
            continue;
        }
        lref = logits_of(ref, ids, 7, &V);
        for (qi = 0; qi < 2; qi++) {
            char out[300];
            mlstack_model *q, *re;
            mlstack_model_info info;
            float *lq, *lre;
            double maxd = 0, big = 0;
            int k;
            snprintf(out, sizeof out, "%s/%s_%d", tmp, names[ni], qi);
            md.path = src;
            md.quant = quants[qi];
            CHECK(mlstack_model_open(&md, &q, &err) == MLSTACK_OK);
            CHECKF(mlstack_model_save(q, out, &err) == MLSTACK_OK, "save: %s", err.message);
            md.path = out;
            md.quant = 0;
            CHECKF(mlstack_model_open(&md, &re, &err) == MLSTACK_OK, "reopen: %s", err.message);
            mlstack_model_get_info(re, &info);
            CHECKF(info.weight_dtype == quants[qi], "%s: reopened weights are %s", out,
                   mlstack_dtype_name(info.weight_dtype));
            lq = logits_of(q, ids, 7, &V);
            lre = logits_of(re, ids, 7, &V);
            CHECKF(lq && lre && memcmp(lq, lre, sizeof(float) * V) == 0,
                   "%s %s: reopened logits differ from the in-memory ones", names[ni], mlstack_dtype_name(quants[qi]));
            for (k = 0; lq && lref && k < V; k++) {
                if (fabs(lq[k] - lref[k]) > maxd) maxd = fabs(lq[k] - lref[k]);
                if (fabs(lref[k]) > big) big = fabs(lref[k]);
            }
            /* these random models use weights of std ~0.15: Q8_0 keeps ~7 bits per weight,
               Q4_1 ~3; the bounds are loose but an indexing or scale bug is off by O(big) */
            CHECKF(maxd < (qi == 0 ? 0.05 : 0.5) * big, "%s %s: max |logit - f32| %.3g (largest %.3g)", names[ni],
                   mlstack_dtype_name(quants[qi]), maxd, big);
            printf("  %-10s %s: max |logit - f32 logit| = %.3g (largest logit %.3g)\n", names[ni],
                   mlstack_dtype_name(quants[qi]), maxd, big);
            free(lq), free(lre);
            mlstack_model_close(q);
            mlstack_model_close(re);
            {
                char cmd[400];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
                if (system(cmd) != 0) printf("could not remove %s\n", out);
            }
        }
        free(lref);
        mlstack_model_close(ref);
    }
    if (tmp) rmdir(tmp);
    return tl_finish();
}
