/* A GGUF fixture's reference, shared by test_hybrid_gguf and test_moe_gguf: <dir>/<name>.json
   holds the prompt's ids, transformers' logits at every position and llama.cpp's greedy text on
   the converted file (tools/make_hybrid_gguf.py, tools/make_moe_gguf.py). Include after
   mlstack.h (with its implementation), testlib.h and fixture_eval.h. */
#ifndef MLSTACK_GGUF_REF_H
#define MLSTACK_GGUF_REF_H

#define MAXP 64 /* prompt tokens kept */
#define NEW 16  /* greedy tokens compared with llama.cpp's text */

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

#endif
