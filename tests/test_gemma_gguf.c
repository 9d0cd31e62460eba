/* Gemma 3n and Gemma 4 (llama.cpp's gemma3n, gemma4) as GGUF files against llama.cpp:
   tests/fixtures/gguf/gemma/ holds each fixture's tiny random model as llama.cpp's own
   convert_hf_to_gguf.py writes it (F32), and in <name>.json the prompt's ids, transformers' logits
   at every position and llama.cpp's greedy text on that file (tools/make_gemma_gguf.py; null for
   gemma3n, whose sizes llama.cpp's graph fixes to E2B/E4B's).
   - read: the file's logits within 1e-4 of transformers' at every position, its greedy text is
     llama.cpp's, prefill and decode give the same bits;
   - written: refused by name (not written yet). */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include "fixture_eval.h"
#include "gguf_ref.h"
#include <math.h>
#include <unistd.h>

static const char *DIR_ = "tests/fixtures/gguf/gemma";

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

/* Writing the model to GGUF is refused, naming the architecture. */
static void check_refused(const char *name, mlstack_model *m) {
    char tmp[] = "/tmp/mlstack_gemma_gguf_XXXXXX";
    mlstack_error err;
    mlstack_result r;
    int fd = mkstemp(tmp);
    if (fd < 0) {
        CHECKF(0, "%s: mkstemp", name);
        return;
    }
    close(fd);
    r = mlstack_model_save_gguf(m, tmp, &err);
    CHECKF(r == MLSTACK_ERR_UNSUPPORTED && strstr(err.message, "read from GGUF but not written yet"),
           "%s: writing GGUF: %d %s", name, (int)r, err.message);
    unlink(tmp);
}

static void test_read(const char *name, int peer) {
    char path[256], text[512];
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
    l = eval_file(path, rc.ids, rc.n, rc.n_vocab, &m, &e);
    if (l) {
        for (i = 0; i < rc.n * rc.n_vocab; i++)
            if (!(fabs((double)l[i] - rc.logits[i]) <= d)) d = fabs((double)l[i] - rc.logits[i]);
        CHECKF(d <= 1e-4, "%s: llama.cpp's GGUF: max |logit - transformers| %.3g", name, d);
        last = fx_eval_all(e, rc.ids, rc.n, rc.n_vocab, 1); /* one token a step */
        CHECKF(last && !memcmp(last, l, sizeof(float) * (size_t)rc.n * (size_t)rc.n_vocab),
               "%s: decode one token at a time differs from prefill", name);
        free(last);
        greedy_text(m, e, &rc, text, sizeof text);
        if (peer) CHECKF(strcmp(text, rc.text) == 0, "%s: greedy text \"%s\", llama.cpp's \"%s\"", name, text, rc.text);
        printf("  %-16s llama.cpp's GGUF, %d positions: max |logit - transformers| = %.2e; greedy text %s\n", name,
               rc.n, d,
               !peer                        ? "(no llama.cpp text: its gemma3n fixes E2B's sizes)"
               : strcmp(text, rc.text) == 0 ? "= llama.cpp's"
                                            : "differs");
        check_refused(name, m);
    } else {
        CHECKF(0, "%s: evaluation failed", name);
    }
    free(l);
    free(rc.logits);
    mlstack_engine_free(e);
    mlstack_model_close(m);
}

int main(void) {
    test_read("gemma3n", 0);
    test_read("gemma4_hd", 1);
    test_read("gemma4_hd_keqv", 1);
    return tl_finish();
}
