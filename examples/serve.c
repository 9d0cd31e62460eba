/* Serving several requests at once with the scheduler: each request has its own sampler, stop
   conditions and streaming callback; requests sharing a prompt prefix reuse its KV pages.
   usage: serve MODEL_DIR */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include <stdio.h>
#include <string.h>

static int on_token(void *user, uint64_t id, int32_t token, const char *text, size_t len) {
    (void)user, (void)token;
    if (text && len) printf("[%llu] %.*s\n", (unsigned long long)id, (int)len, text);
    return 0; /* non-zero would finish this request */
}

int main(int argc, char **argv) {
    static const char *questions[] = {"What is 2+2?", "Name a color.", "Say hello in French."};
    const char *stops[] = {"\n\n"};
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_model *model;
    mlstack_engine *eng;
    mlstack_error err;
    mlstack_cache_stats st;
    char text[256];
    int32_t ids[256];
    size_t n;
    int i, active = 1;
    memset(&md, 0, sizeof md);
    md.path = argc > 1 ? argv[1] : "models/smollm2-135m-instruct";
    if (mlstack_model_open(&md, &model, &err) != MLSTACK_OK) return fprintf(stderr, "%s\n", err.message), 1;
    memset(&ed, 0, sizeof ed); /* zero: defaults (all CPUs, KV for 4096 tokens, 16 sequences) */
    if (mlstack_engine_init(model, &ed, &eng, &err) != MLSTACK_OK) return fprintf(stderr, "%s\n", err.message), 1;
    for (i = 0; i < 3; i++) {
        mlstack_request_desc rd;
        uint64_t id;
        /* the same instruction in front of every question: requests that arrive after a prefill
           has finished take its full KV pages from the cache */
        snprintf(text, sizeof text, "You are a terse assistant. Answer in a few words.\nQ: %s\nA:", questions[i]);
        if (mlstack_tokenizer_encode(mlstack_model_tokenizer(model), text, strlen(text), 0, ids, 256, &n) != MLSTACK_OK)
            return 1;
        memset(&rd, 0, sizeof rd);
        rd.prompt = ids;
        rd.n_prompt = (int)n;
        rd.max_tokens = 24;
        rd.sampler.temperature = i == 0 ? 0.0f : 0.7f; /* per-request sampling */
        rd.sampler.seed = (uint64_t)i;
        rd.stop_strings = stops;
        rd.n_stop_strings = 1;
        rd.on_token = on_token;
        if (mlstack_engine_submit(eng, &rd, &id, &err) != MLSTACK_OK) return fprintf(stderr, "%s\n", err.message), 1;
    }
    while (active) /* one forward per step for every running request */
        if (mlstack_engine_step(eng, &active) != MLSTACK_OK)
            return fprintf(stderr, "%s\n", mlstack_engine_error(eng)), 1;
    mlstack_engine_cache_stats(eng, &st);
    printf("prompt tokens from the cache: %llu, computed: %llu; pages used %d of %d (%d cached)\n",
           (unsigned long long)st.hit_tokens, (unsigned long long)st.computed_tokens, st.pages_used, st.n_pages,
           st.pages_cached);
    mlstack_engine_free(eng);
    mlstack_model_close(model);
    return 0;
}
