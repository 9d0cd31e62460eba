/* Minimal generation with mlstack: open a model folder, encode a prompt with its tokenizer,
   stream a greedy continuation as text.
   Build: cc -O2 -I. examples/generate.c -o generate -lpthread -lm
   Run:   ./generate models/smollm2-135m-instruct "The three primary colors are" */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include <stdio.h>
#include <string.h>

static int on_token(void *user, int32_t token) {
    const char *text;
    size_t len;
    if (mlstack_detok_push((mlstack_detok *)user, token, &text, &len) == MLSTACK_OK) fwrite(text, 1, len, stdout);
    fflush(stdout);
    return 0; /* non-zero would stop generation */
}

int main(int argc, char **argv) {
    mlstack_model_desc md = {0};   /* zero = defaults: weights as stored */
    mlstack_engine_desc ed = {0};  /* zero = defaults: all CPUs, F16 KV for the model's context */
    mlstack_generate_desc gd = {0};
    mlstack_model *model;
    mlstack_engine *engine;
    mlstack_tokenizer *tok;
    mlstack_detok *detok;
    mlstack_error err;
    int32_t prompt[1024], seq;
    size_t n = 0;
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL_DIR PROMPT\n", argv[0]);
        return 2;
    }
    md.path = argv[1];
    if (mlstack_model_open(&md, &model, &err) != MLSTACK_OK ||
        mlstack_engine_init(model, &ed, &engine, &err) != MLSTACK_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    tok = mlstack_model_tokenizer(model); /* NULL if the folder has no tokenizer.json */
    if (!tok || mlstack_tokenizer_encode(tok, argv[2], strlen(argv[2]), MLSTACK_ENCODE_ADD_SPECIAL, prompt, 1024, &n) !=
                    MLSTACK_OK) {
        fprintf(stderr, "cannot encode the prompt: %s\n", tok ? mlstack_tokenizer_error(tok) : "no tokenizer");
        return 1;
    }
    mlstack_detok_init(tok, MLSTACK_DECODE_SKIP_SPECIAL, &detok);
    mlstack_engine_seq_new(engine, &seq);
    gd.seq = seq;
    gd.prompt = prompt;
    gd.n_prompt = (int)n;
    gd.max_tokens = 48;
    gd.on_token = on_token; /* gd.sampler = NULL: greedy */
    gd.user = detok;
    printf("%s", argv[2]);
    if (mlstack_generate(engine, &gd) != MLSTACK_OK) fprintf(stderr, "\n%s\n", mlstack_engine_error(engine));
    printf("\n[%d tokens, %.1f tokens/s]\n", gd.n_generated, gd.n_generated / (gd.decode_seconds + 1e-9));
    mlstack_detok_free(detok);
    mlstack_engine_free(engine);
    mlstack_model_close(model);
    return 0;
}
