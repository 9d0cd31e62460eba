/* DeepSeek V2 / V3 (llama.cpp's deepseek2: multi-head latent attention) and gpt-oss as GGUF files,
   both ways, against llama.cpp: tests/fixtures/gguf/moe/ holds each fixture's tiny random model as
   llama.cpp's own convert_hf_to_gguf.py writes it (F32), and in <name>.json the prompt's ids,
   transformers' logits at every position and llama.cpp's greedy text on that file
   (tools/make_moe_gguf.py).
   - read: the file's logits within 1e-4 of transformers' at every position, and its greedy text is
     llama.cpp's;
   - written: the file mlstack writes reads back with the same logits bits (tools/make_moe_gguf.py
     --check runs llama.cpp on such files), from the converted file and from the safetensors
     fixtures (tests/fixtures/families/deepseek_v2: V2 without q LoRA) and gpt-oss with MXFP4 experts. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include "fixture_eval.h"
#include "gguf_ref.h"
#include <math.h>
#include <unistd.h>

static const char *DIR_ = "tests/fixtures/gguf/moe";

/* path's logits at n positions of ids (NULL on failure; the caller frees). */
static float *eval_file(const char *path, const int32_t *ids, int n, int n_vocab, mlstack_model **mo,
                        mlstack_engine **eo) {
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_error err;
    memset(&md, 0, sizeof md);
    memset(&ed, 0, sizeof ed);
    ed.kv_type = MLSTACK_KV_F32;
    md.path = path;
    *mo = NULL, *eo = NULL;
    CHECKF(mlstack_model_open(&md, mo, &err) == MLSTACK_OK, "%s: %s", path, err.message);
    if (*mo) CHECKF(mlstack_engine_init(*mo, &ed, eo, &err) == MLSTACK_OK, "%s: %s", path, err.message);
    return *eo ? fx_eval_all(*eo, ids, n, n_vocab, n) : NULL;
}

/* The GGUF mlstack writes of model m reads back with logits l's bits at n positions of ids. */
static void check_written(const char *name, mlstack_model *m, const int32_t *ids, int n, int n_vocab, const float *l) {
    char tmp[] = "/tmp/mlstack_moe_gguf_XXXXXX";
    mlstack_model *back = NULL;
    mlstack_engine *eb = NULL;
    mlstack_error err;
    float *lb = NULL;
    int fd = mkstemp(tmp);
    if (fd < 0) {
        CHECKF(0, "%s: mkstemp", name);
        return;
    }
    close(fd);
    CHECKF(mlstack_model_save_gguf(m, tmp, &err) == MLSTACK_OK, "%s: write: %s", name, err.message);
    lb = eval_file(tmp, ids, n, n_vocab, &back, &eb);
    CHECKF(l && lb && !memcmp(l, lb, sizeof(float) * (size_t)n * (size_t)n_vocab),
           "%s: the GGUF mlstack writes gives other logits", name);
    printf("  %-16s written GGUF read back: logits %s\n", name,
           l && lb && !memcmp(l, lb, sizeof(float) * (size_t)n * (size_t)n_vocab) ? "bit-identical" : "DIFFER");
    unlink(tmp);
    free(lb);
    mlstack_engine_free(eb);
    mlstack_model_close(back);
}

static void test_read(const char *name) {
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
    l = eval_file(path, rc.ids, rc.n, rc.n_vocab, &m, &e);
    if (l) {
        check_ref(name, m, e, &rc, l);
        check_written(name, m, rc.ids, rc.n, rc.n_vocab, l);
    } else {
        CHECKF(0, "%s: evaluation failed", name);
    }
    free(l);
    free(rc.logits);
    mlstack_engine_free(e);
    mlstack_model_close(m);
}

/* A fixture (tests/fixtures/NAME: a safetensors folder, or a GGUF file of MXFP4 experts) written as
   GGUF reads back with its bits. */
static void test_folder(const char *name) {
    static const int32_t ids[] = {5, 17, 3, 99, 42, 7, 64, 1, 23, 88, 12, 50};
    const int n = (int)(sizeof ids / sizeof ids[0]);
    char path[256];
    mlstack_model *m = NULL;
    mlstack_engine *e = NULL;
    float *l;
    snprintf(path, sizeof path, "tests/fixtures/%s", name);
    l = eval_file(path, ids, n, 128, &m, &e);
    CHECKF(l != NULL, "%s: evaluation failed", name);
    if (l) check_written(name, m, ids, n, 128, l);
    free(l);
    mlstack_engine_free(e);
    mlstack_model_close(m);
}

int main(void) {
    static const char *const read[] = {"deepseek_v2", "deepseek_v3", "gpt_oss"};
    static const char *const folders[] = {"families/deepseek_v2", "gguf/gpt-oss-mxfp4.gguf"};
    size_t i;
    for (i = 0; i < sizeof read / sizeof read[0]; i++) test_read(read[i]);
    for (i = 0; i < sizeof folders / sizeof folders[0]; i++) test_folder(folders[i]);
    return tl_finish();
}
