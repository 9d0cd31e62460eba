/* Minimal generation with mlstack: open a model folder, feed token ids, print greedy tokens.
   Build: cc -O2 -I. examples/generate.c -o generate -lpthread -lm
   Run:   ./generate models/smollm2-135m-instruct 1 504 3251 2017 */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include <stdio.h>
#include <stdlib.h>

static int on_token(void *user, int32_t token) {
    (void)user;
    printf("%d ", (int)token);
    fflush(stdout);
    return 0; /* non-zero would stop generation */
}

int main(int argc, char **argv) {
    mlstack_model_desc md = {0};
    mlstack_engine_desc ed = {0};   /* zero = defaults: all CPUs, KV for the model's context */
    mlstack_sampler_desc sd = {0};  /* zero = greedy */
    mlstack_generate_desc gd = {0};
    mlstack_model *model;
    mlstack_engine *engine;
    mlstack_error err;
    int32_t prompt[256], seq;
    int i, n = 0;
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL_DIR TOKEN_ID...\n", argv[0]);
        return 2;
    }
    for (i = 2; i < argc && n < 256; i++) prompt[n++] = (int32_t)atoi(argv[i]);
    md.path = argv[1];
    if (mlstack_model_open(&md, &model, &err) != MLSTACK_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    if (mlstack_engine_init(model, &ed, &engine, &err) != MLSTACK_OK) {
        fprintf(stderr, "%s\n", err.message);
        mlstack_model_close(model);
        return 1;
    }
    mlstack_engine_seq_new(engine, &seq);
    gd.seq = seq;
    gd.prompt = prompt;
    gd.n_prompt = n;
    gd.max_tokens = 32;
    gd.sampler = &sd;
    gd.on_token = on_token;
    if (mlstack_generate(engine, &gd) != MLSTACK_OK) fprintf(stderr, "\n%s\n", mlstack_engine_error(engine));
    printf("\n%d tokens, %.1f tokens/s\n", gd.n_generated, gd.n_generated / (gd.decode_seconds + 1e-9));
    mlstack_engine_free(engine);
    mlstack_model_close(model);
    return 0;
}
