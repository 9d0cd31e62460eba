/* Gemma 3n and Gemma 4 (llama.cpp's gemma3n, gemma4) as GGUF files against llama.cpp:
   tests/fixtures/gguf/gemma/ holds each fixture's tiny random model as llama.cpp's own
   convert_hf_to_gguf.py writes it (F32), and in <name>.json the prompt's ids, transformers' logits
   at every position and llama.cpp's greedy text on that file (tools/make_gemma_gguf.py; null for
   gemma3n, whose sizes llama.cpp's graph fixes to E2B/E4B's).
   - read: the file's logits within 1e-4 of transformers' at every position, its greedy text is
     llama.cpp's, prefill and decode give the same bits;
   - written: mlstack_model_save_gguf's file (from the converted file and from the safetensors
     fixtures) reads back with the same logits bits (tools/make_gemma_gguf.py --check runs llama.cpp
     on such files); what llama.cpp's format cannot say is refused by name. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include "fixture_eval.h"
#include "gguf_ref.h"
#include <math.h>
#include <unistd.h>

static const char *DIR_ = "tests/fixtures/gguf/gemma";

static void test_read(const char *name, int peer) {
    char path[256];
    mlstack_model *m = NULL;
    mlstack_engine *e = NULL;
    ref_case rc;
    float *l, *last;
    double d = 0;
    int i;
    if (!load_ref(DIR_, name, &rc)) {
        CHECKF(0, "%s: reference missing", name);
        free(rc.logits);
        return;
    }
    snprintf(path, sizeof path, "%s/%s-f32.gguf", DIR_, name);
    l = ref_eval_file(path, rc.ids, rc.n, rc.n_vocab, rc.n, &m, &e);
    if (l) {
        if (peer) {
            check_ref(name, m, e, &rc, l);
        } else { /* the logits only */
            for (i = 0; i < rc.n * rc.n_vocab; i++)
                if (!(fabs((double)l[i] - rc.logits[i]) <= d)) d = fabs((double)l[i] - rc.logits[i]);
            CHECKF(d <= 1e-4, "%s: llama.cpp's GGUF: max |logit - transformers| %.3g", name, d);
            printf("  %-16s llama.cpp's GGUF, %d positions: max |logit - transformers| = %.2e (no llama.cpp text: "
                   "its gemma3n graph fixes E2B's sizes)\n",
                   name, rc.n, d);
        }
        last = fx_eval_all(e, rc.ids, rc.n, rc.n_vocab, 1); /* one token a step */
        CHECKF(last && !memcmp(last, l, sizeof(float) * (size_t)rc.n * (size_t)rc.n_vocab),
               "%s: decode one token at a time differs from prefill", name);
        free(last);
        ref_check_written(name, m, rc.ids, rc.n, rc.n_vocab, rc.n, l);
    } else {
        CHECKF(0, "%s: evaluation failed", name);
    }
    free(l);
    free(rc.logits);
    mlstack_engine_free(e);
    mlstack_model_close(m);
}

/* A safetensors fixture (tests/fixtures/families/NAME) written as GGUF reads back with its bits. */
static void test_folder(const char *name) {
    static const int32_t ids[] = {5, 17, 3, 99, 42, 7, 64, 1, 23, 88, 12, 50};
    const int n = (int)(sizeof ids / sizeof ids[0]);
    char path[256];
    mlstack_model *m = NULL;
    mlstack_engine *e = NULL;
    float *l;
    snprintf(path, sizeof path, "tests/fixtures/families/%s", name);
    l = ref_eval_file(path, ids, n, 128, n, &m, &e);
    CHECKF(l != NULL, "%s: evaluation failed", name);
    if (l) ref_check_written(path + 15, m, ids, n, 128, n, l);
    free(l);
    mlstack_engine_free(e);
    mlstack_model_close(m);
}

/* What llama.cpp's format cannot say is refused by name: a proportional RoPE with a factor
   (gemma4_keqv: factor 2), per-layer input rows for only part of the vocabulary (gemma3n_alt). */
static void test_refused(const char *name, const char *why) {
    mlstack_model_desc md;
    mlstack_model *m = NULL;
    mlstack_error err;
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/families/%s", name);
    memset(&md, 0, sizeof md);
    md.path = path;
    CHECKF(mlstack_model_open(&md, &m, &err) == MLSTACK_OK, "%s: %s", name, err.message);
    if (!m) return;
    CHECKF(mlstack_model_save_gguf(m, "build/tmp_gemma_refused.gguf", &err) == MLSTACK_ERR_UNSUPPORTED &&
               strstr(err.message, why),
           "%s written, or refused for another reason: %s", name, err.message);
    printf("  %-22s refused: %s\n", name, err.message);
    mlstack_model_close(m);
}

int main(void) {
    static const char *const folders[] = {"gemma3n", "gemma4", "gemma4_hd", "gemma4_hd_keqv"};
    size_t i;
    test_read("gemma3n", 0);
    test_read("gemma4_hd", 1);
    test_read("gemma4_hd_keqv", 1);
    for (i = 0; i < sizeof folders / sizeof folders[0]; i++) test_folder(folders[i]);
    test_refused("gemma4_keqv", "proportional RoPE without a factor");
    test_refused("gemma3n_alt", "vocab_size_per_layer_input 96 below vocab_size 128");
    return tl_finish();
}
