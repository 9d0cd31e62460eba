/* The hybrid families (recurrent layers beside attention) as GGUF files, both ways, against
   llama.cpp: tests/fixtures/gguf/hybrid/ holds each family's tiny random model as llama.cpp's own
   convert_hf_to_gguf.py writes it (F32), and in <name>.json the prompt's ids, transformers' logits
   at every position and llama.cpp's greedy text on that file (tools/make_hybrid_gguf.py).
   - read: the file's logits within 1e-4 of transformers' at every position, and its greedy text
     (tokens decoded with the file's own vocabulary, stopping at its end token) is llama.cpp's;
   - written: where mlstack writes the family, the file it writes reads back with the same logits
     bits (tools/make_hybrid_gguf.py --check runs llama.cpp on such files);
   - two types in a delta-net's input projections (llama-quantize's Q4_K_M gives the fused
     attn_qkv Q6_K beside a Q4_K attn_gate, ssm_alpha and ssm_beta in some layers): they load as
     two weights. qwen3_5-mixed16.gguf (attn_qkv F32, the other three F16) gives the logits of
     qwen3_5-mixed16-f32.gguf (the same values, all F32) within 1e-6; qwen3_5-mixed.gguf
     (llama-quantize's Q8_0 with those three in Q4_1) loads, and the file mlstack writes from it
     reads back with the same bits;
   - Falcon-H1 written from a folder folds its multipliers into the weights (test_falcon_fold). */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include "fixture_eval.h"
#include "gguf_ref.h"
#include <math.h>
#include <unistd.h>

static const char *DIR_ = "tests/fixtures/gguf/hybrid";

static void test_read(const char *name, int write) {
    char path[256];
    mlstack_model *m = NULL;
    mlstack_engine *e = NULL;
    ref_case rc;
    float *l;
    if (!load_ref(DIR_, name, &rc)) {
        CHECKF(0, "%s: reference missing", name);
        free(rc.logits);
        return;
    }
    snprintf(path, sizeof path, "%s/%s-f32.gguf", DIR_, name);
    l = ref_eval_file(path, rc.ids, rc.n, rc.n_vocab, rc.n, &m, &e);
    if (l) check_ref(name, m, e, &rc, l);
    else
        CHECKF(0, "%s: evaluation failed", name);
    /* read back token by token: the written file's decode gives the converted file's prefill bits */
    if (write && m) ref_check_written(name, m, rc.ids, rc.n, rc.n_vocab, 1, l);
    free(l);
    free(rc.logits);
    mlstack_engine_free(e);
    mlstack_model_close(m);
}

/* Logits of the GGUF at path over rc's prompt (all positions), or NULL; *split: whether a
   delta-net layer holds its input projection in two weights. */
static float *eval_file(const char *path, const ref_case *rc, int *split, char *save_to) {
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_model *m = NULL;
    mlstack_engine *e = NULL;
    mlstack_error err;
    float *l = NULL;
    int i;
    memset(&md, 0, sizeof md);
    memset(&ed, 0, sizeof ed);
    ed.kv_type = MLSTACK_KV_F32;
    md.path = path;
    CHECKF(mlstack_model_open(&md, &m, &err) == MLSTACK_OK, "%s: %s", path, err.message);
    if (m) CHECKF(mlstack_engine_init(m, &ed, &e, &err) == MLSTACK_OK, "%s: %s", path, err.message);
    if (e) l = fx_eval_all(e, rc->ids, rc->n, rc->n_vocab, rc->n);
    for (i = 0, *split = 0; m && i < m->cfg.n_layers; i++) *split |= m->layers[i].w_in2.data != NULL;
    if (m && save_to)
        CHECKF(mlstack_model_save_gguf(m, save_to, &err) == MLSTACK_OK, "%s: write: %s", path, err.message);
    mlstack_engine_free(e);
    mlstack_model_close(m);
    return l;
}

static void test_mixed(void) {
    char path[256], deq[256], tmp[] = "/tmp/mlstack_hybrid_mixed_XXXXXX";
    ref_case rc;
    float *l = NULL, *ld = NULL, *lq = NULL, *lb = NULL;
    int split = 0, split_d = 0, split_q = 0, split_b = 0, i, wrote = 0;
    double d = 0;
    if (!load_ref(DIR_, "qwen3_5", &rc)) {
        CHECKF(0, "%s", "qwen3_5: reference missing");
        free(rc.logits);
        return;
    }
    snprintf(path, sizeof path, "%s/qwen3_5-mixed16.gguf", DIR_);
    snprintf(deq, sizeof deq, "%s/qwen3_5-mixed16-f32.gguf", DIR_);
    l = eval_file(path, &rc, &split, NULL);
    ld = eval_file(deq, &rc, &split_d, NULL);
    for (i = 0; l && ld && i < rc.n * rc.n_vocab; i++)
        if (!(fabs((double)l[i] - ld[i]) <= d)) d = fabs((double)l[i] - ld[i]);
    CHECKF(split && !split_d, "qwen3_5-mixed16: the delta-net input split %d, all-F32 copy %d", split, split_d);
    CHECKF(l && ld && d <= 1e-6, "qwen3_5-mixed16: max |logit - all-F32 copy's| %.3g", d);
    printf("  qwen3_5-mixed16 (F32 qkv, F16 gate/alpha/beta), %d positions: max |logit - all F32| = %.2e\n", rc.n, d);
    snprintf(path, sizeof path, "%s/qwen3_5-mixed.gguf", DIR_);
    wrote = ref_temp_file(tmp) == 0;
    lq = eval_file(path, &rc, &split_q, wrote ? tmp : NULL);
    if (wrote) lb = eval_file(tmp, &rc, &split_b, NULL);
    CHECKF(split_q && split_b, "qwen3_5-mixed: the delta-net input split %d, read back %d", split_q, split_b);
    CHECKF(lq && lb && !memcmp(lq, lb, sizeof(float) * (size_t)rc.n * (size_t)rc.n_vocab), "%s",
           "qwen3_5-mixed: the GGUF mlstack writes gives other logits");
    if (wrote) unlink(tmp);
    free(l), free(ld), free(lq), free(lb), free(rc.logits);
}

/* Falcon-H1 written from its safetensors folder: its multipliers folded into the weights as
   llama.cpp's converter folds them (tests/fixtures/families/falcon_h1_norm: every kind of
   multiplier != 1, a tied head with a multiplier of its own). The file read back gives
   transformers' logits (logits.bin) within 1e-4 at every position and its greedy ids. What
   llama.cpp's falcon-h1 cannot say is refused by name. */
static void test_falcon_fold(void) {
    static const char *DIR_FAM = "tests/fixtures/families/falcon_h1_norm";
    char path[256], tmp[] = "/tmp/mlstack_falcon_fold_XXXXXX";
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_model *m = NULL, *back = NULL;
    mlstack_engine *e = NULL;
    mlstack_error err;
    mlstack__json_doc doc;
    const mlstack__json *v;
    int32_t ids[128], greedy[32];
    int n = 0, ng = 0, i;
    size_t len = 0, blen = 0;
    char *text, *bin;
    float *l = NULL;
    double d = 0;
    snprintf(path, sizeof path, "%s/reference.json", DIR_FAM);
    text = tl_read(path, &len);
    snprintf(path, sizeof path, "%s/logits.bin", DIR_FAM);
    bin = tl_read(path, &blen);
    CHECKF(text && bin && blen == sizeof(float) * 128 * 128, "%s: reference missing", DIR_FAM);
    if (!text || !bin || blen != sizeof(float) * 128 * 128 || mlstack__json_parse(&doc, text, len, path, &err)) {
        free(text), free(bin);
        return;
    }
    for (v = mlstack__json_get(doc.root, "ids")->child; v && n < 128; v = v->next) ids[n++] = (int32_t)v->i;
    for (v = mlstack__json_get(doc.root, "greedy")->child; v && ng < 32; v = v->next) greedy[ng++] = (int32_t)v->i;
    mlstack__json_free(&doc);
    memset(&md, 0, sizeof md);
    memset(&ed, 0, sizeof ed);
    ed.kv_type = MLSTACK_KV_F32;
    md.path = DIR_FAM;
    CHECKF(mlstack_model_open(&md, &m, &err) == MLSTACK_OK, "%s: %s", DIR_FAM, err.message);
    if (m && ref_temp_file(tmp) == 0) {
        CHECKF(mlstack_model_save_gguf(m, tmp, &err) == MLSTACK_OK, "falcon_h1_norm: write: %s", err.message);
        md.path = tmp;
        CHECKF(mlstack_model_open(&md, &back, &err) == MLSTACK_OK, "falcon_h1_norm: read back: %s", err.message);
        if (back) CHECKF(mlstack_engine_init(back, &ed, &e, &err) == MLSTACK_OK, "falcon_h1_norm: %s", err.message);
        if (e) l = fx_eval_all(e, ids, n, 128, 37);
        for (i = 0; l && i < n * 128; i++) {
            double x = fabs((double)l[i] - (double)((const float *)(const void *)bin)[i]);
            if (!(x <= d)) d = x;
        }
        CHECKF(l && n == 128 && d <= 1e-4, "falcon_h1_norm folded GGUF: max |logit - transformers| %.3g", d);
        CHECK(e && fx_generate(e, ids, n, ng) == MLSTACK_OK && fx_n_greedy == ng &&
              memcmp(fx_greedy, greedy, sizeof(int32_t) * (size_t)ng) == 0);
        printf("  falcon_h1_norm written with its multipliers folded, %d positions: max |logit - transformers| = "
               "%.2e\n",
               n, d);
        unlink(tmp);
    }
    mlstack_engine_free(e);
    mlstack_model_close(back);
    mlstack_model_close(m);
    free(l), free(text), free(bin);
}

/* A family fixture written from its folder (nemotron_h_moe_latent: 2 expert groups, the best 1
   kept, latent experts) reads back with the folder's logits bits at every position. */
static void test_folder_written(const char *name) {
    char path[256], tmp[] = "/tmp/mlstack_hybrid_folder_XXXXXX";
    int32_t ids[32];
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_model *m = NULL, *back = NULL;
    mlstack_engine *e = NULL, *eb = NULL;
    mlstack_error err;
    float *l = NULL, *lb = NULL;
    int i;
    for (i = 0; i < 32; i++) ids[i] = (int32_t)((i * 37 + 5) % 128);
    memset(&md, 0, sizeof md);
    memset(&ed, 0, sizeof ed);
    ed.kv_type = MLSTACK_KV_F32;
    snprintf(path, sizeof path, "tests/fixtures/families/%s", name);
    md.path = path;
    CHECKF(mlstack_model_open(&md, &m, &err) == MLSTACK_OK, "%s: %s", path, err.message);
    if (m && ref_temp_file(tmp) == 0) {
        CHECKF(mlstack_model_save_gguf(m, tmp, &err) == MLSTACK_OK, "%s: write: %s", name, err.message);
        md.path = tmp;
        CHECKF(mlstack_model_open(&md, &back, &err) == MLSTACK_OK, "%s: read back: %s", name, err.message);
        if (back && mlstack_engine_init(back, &ed, &eb, &err) == MLSTACK_OK) lb = fx_eval_all(eb, ids, 32, 128, 1);
        if (mlstack_engine_init(m, &ed, &e, &err) == MLSTACK_OK) l = fx_eval_all(e, ids, 32, 128, 1);
        CHECKF(l && lb && !memcmp(l, lb, sizeof(float) * 32 * 128),
               "%s: the GGUF written from the folder gives other "
               "logits",
               name);
        unlink(tmp);
    }
    free(l), free(lb);
    mlstack_engine_free(eb);
    mlstack_engine_free(e);
    mlstack_model_close(back);
    mlstack_model_close(m);
}

/* What llama.cpp's graphs have no place for is refused by name, not written wrong. */
static void test_refused(const char *name, const char *what) {
    char path[256];
    mlstack_model_desc md;
    mlstack_model *m = NULL;
    mlstack_error err;
    memset(&md, 0, sizeof md);
    snprintf(path, sizeof path, "tests/fixtures/families/%s", name);
    md.path = path;
    CHECKF(mlstack_model_open(&md, &m, &err) == MLSTACK_OK, "%s: %s", path, err.message);
    if (m)
        CHECKF(mlstack_model_save_gguf(m, "build/tmp_falcon_refused.gguf", &err) == MLSTACK_ERR_UNSUPPORTED &&
                   strstr(err.message, what),
               "%s: write: %s", name, err.message);
    mlstack_model_close(m);
}

int main(void) {
    static const struct {
        const char *name;
        int write; /* mlstack writes this family to GGUF */
    } cases[] = {{"lfm2", 1},
                 {"lfm2_moe", 1},
                 {"qwen3_5", 1},
                 {"qwen3_5_moe", 1},
                 {"qwen3_next", 1},
                 {"mamba2", 1},
                 {"granite_hybrid", 1},
                 {"nemotron_h", 1},
                 {"falcon_h1", 1},
                 {"nemotron_h_moe", 1},
                 {"nemotron_h_moe_latent", 1},
                 {"granite_hybrid_moe", 1}};
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) test_read(cases[i].name, cases[i].write);
    test_mixed();
    test_falcon_fold();
    test_refused("falcon_h1", "projection biases");
    test_refused("falcon_h1_prenorm", "before the gate");
    test_refused("nemotron_h_moe", "MLP beside MoE blocks"); /* nemotron_h_moe: every FFN block is MoE */
    test_folder_written("nemotron_h_moe_latent");
    test_folder_written("granite_hybrid_top1"); /* experts as Granite's one input_linear: written as llama.cpp's */
    return tl_finish();
}
