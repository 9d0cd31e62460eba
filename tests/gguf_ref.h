/* A GGUF fixture's reference, shared by the tests of llama.cpp-converted files (test_hybrid_gguf,
   test_moe_gguf, test_gemma_gguf, test_bitnet_gguf): <dir>/<name>.json holds the prompt's ids,
   transformers' logits at every position and llama.cpp's greedy text on the converted file
   (tools/make_*_gguf.py). Include after mlstack.h (with its implementation), testlib.h and
   fixture_eval.h. */
#ifndef MLSTACK_GGUF_REF_H
#define MLSTACK_GGUF_REF_H
#include <unistd.h>

#define MAXP 64 /* prompt tokens kept */
#define NEW 16 /* greedy tokens compared with llama.cpp's text */

typedef struct ref_case {
    int32_t ids[MAXP];
    int n;
    float *logits; /* [n, n_vocab] */
    int n_vocab;
    char text[512]; /* llama.cpp's continuation */
} ref_case;

static int load_ref(const char *dir, const char *name, ref_case *rc) {
    char path[256];
    size_t len;
    char *text;
    mlstack__json_doc doc;
    mlstack_error err;
    const mlstack__json *v, *row, *x;
    int i = 0;
    memset(rc, 0, sizeof *rc);
    snprintf(path, sizeof path, "%s/%s.json", dir, name);
    text = tl_read(path, &len);
    if (!text || mlstack__json_parse(&doc, text, len, path, &err) != MLSTACK_OK) {
        free(text);
        return 0;
    }
    for (v = mlstack__json_get(doc.root, "prompt_ids")->child; v && rc->n < MAXP; v = v->next)
        rc->ids[rc->n++] = (int32_t)v->i;
    row = mlstack__json_get(doc.root, "logits")->child;
    rc->n_vocab = (int)row->len;
    rc->logits = (float *)malloc(sizeof(float) * (size_t)rc->n * (size_t)rc->n_vocab);
    for (; row && rc->logits && i < rc->n * rc->n_vocab; row = row->next)
        for (x = row->child; x && i < rc->n * rc->n_vocab; x = x->next) rc->logits[i++] = (float)x->num;
    v = mlstack__json_get(doc.root, "llamacpp_text");
    snprintf(rc->text, sizeof rc->text, "%.*s", v ? (int)v->len : 0, v ? v->str : "");
    mlstack__json_free(&doc);
    free(text);
    return rc->logits && i == rc->n * rc->n_vocab;
}

/* Greedy continuation of the prompt (up to NEW tokens, stopping after an end token) decoded. */
static void greedy_text(mlstack_model *m, mlstack_engine *e, const ref_case *rc, char *out, size_t cap) {
    mlstack_generate_desc g;
    int32_t seq = -1;
    size_t n = 0;
    out[0] = 0;
    fx_n_greedy = 0;
    if (mlstack_engine_seq_new(e, &seq) != MLSTACK_OK) return;
    memset(&g, 0, sizeof g);
    g.seq = seq, g.prompt = rc->ids, g.n_prompt = rc->n, g.max_tokens = NEW, g.on_token = fx_on_token;
    if (mlstack_generate(e, &g) != MLSTACK_OK) printf("generate: %s\n", mlstack_engine_error(e));
    mlstack_engine_seq_free(e, seq);
    if (mlstack_tokenizer_decode(mlstack_model_tokenizer(m), fx_greedy, (size_t)fx_n_greedy,
                                 MLSTACK_DECODE_SKIP_SPECIAL, out, cap - 1, &n) != MLSTACK_OK)
        n = 0;
    out[n < cap ? n : cap - 1] = 0;
}

/* The checks every converted file gets: logits l (all of rc's positions) within 1e-4 of
   transformers', and the greedy continuation equal to llama.cpp's text. */
static void check_ref(const char *name, mlstack_model *m, mlstack_engine *e, const ref_case *rc, const float *l) {
    char text[512];
    double d = 0;
    int i;
    for (i = 0; i < rc->n * rc->n_vocab; i++)
        if (!(fabs((double)l[i] - rc->logits[i]) <= d)) d = fabs((double)l[i] - rc->logits[i]);
    CHECKF(d <= 1e-4, "%s: llama.cpp's GGUF: max |logit - transformers| %.3g", name, d);
    greedy_text(m, e, rc, text, sizeof text);
    CHECKF(strcmp(text, rc->text) == 0, "%s: greedy text \"%s\", llama.cpp's \"%s\"", name, text, rc->text);
    printf("  %-16s llama.cpp's GGUF, %d positions: max |logit - transformers| = %.2e; greedy text %s\n", name, rc->n,
           d, strcmp(text, rc->text) == 0 ? "= llama.cpp's" : "differs");
}

/* The logits of the GGUF at path (F32 KV cache) at n positions of ids, fed step positions per
   forward (n: one prefill, 1: token by token); NULL on failure, the caller frees. */
MLSTACK__UNUSED static float *ref_eval_file(const char *path, const int32_t *ids, int n, int n_vocab, int step,
                                            mlstack_model **mo, mlstack_engine **eo) {
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
    return *eo ? fx_eval_all(*eo, ids, n, n_vocab, step) : NULL;
}

/* An empty file made from the template path (its XXXXXX replaced); 0, or -1 on failure. */
MLSTACK__UNUSED static int ref_temp_file(char *path) {
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    close(fd);
    return 0;
}

/* The GGUF mlstack writes of model m reads back with logits l's bits at n positions of ids (fed
   step positions per forward, as ref_eval_file). */
MLSTACK__UNUSED static void ref_check_written(const char *name, mlstack_model *m, const int32_t *ids, int n,
                                              int n_vocab, int step, const float *l) {
    char tmp[] = "/tmp/mlstack_gguf_ref_XXXXXX";
    mlstack_model *back = NULL;
    mlstack_engine *eb = NULL;
    mlstack_error err;
    float *lb = NULL;
    int same;
    if (ref_temp_file(tmp) != 0) {
        CHECKF(0, "%s: mkstemp", name);
        return;
    }
    CHECKF(mlstack_model_save_gguf(m, tmp, &err) == MLSTACK_OK, "%s: write: %s", name, err.message);
    lb = ref_eval_file(tmp, ids, n, n_vocab, step, &back, &eb);
    same = l && lb && !memcmp(l, lb, sizeof(float) * (size_t)n * (size_t)n_vocab);
    CHECKF(same, "%s: the GGUF mlstack writes gives other logits", name);
    printf("  %-22s written GGUF read back: logits %s\n", name, same ? "bit-identical" : "DIFFER");
    unlink(tmp);
    free(lb);
    mlstack_engine_free(eb);
    mlstack_model_close(back);
}

#endif
