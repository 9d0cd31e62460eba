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
    l = ref_eval_file(path, rc.ids, rc.n, rc.n_vocab, rc.n, &m, &e);
    if (l) {
        check_ref(name, m, e, &rc, l);
        ref_check_written(name, m, rc.ids, rc.n, rc.n_vocab, rc.n, l);
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
    l = ref_eval_file(path, ids, n, 128, n, &m, &e);
    CHECKF(l != NULL, "%s: evaluation failed", name);
    if (l) ref_check_written(name, m, ids, n, 128, n, l);
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
