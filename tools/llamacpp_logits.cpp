// llama.cpp's logits on a GGUF, the way llama-completion computes its greedy text: the prompt ids as
// one batch, then one token at a time, each the argmax of the last logits (stops at end-of-generation).
// Prints one row of logits per position (the prompt's, then each generated token's input), %.6g and
// space-separated like `mlstack eval --all`, then a last line "ids: ..." with the generated ids.
// tools/explain_roundtrips.py compares the rows with mlstack's on the same file.
//   L=PEER/src/vendor/llama.cpp B=PEER/cmake-build
//   g++ -O2 -std=c++17 -I$L/include -I$L/ggml/include tools/llamacpp_logits.cpp \
//     $B/src/libllama.a $B/ggml/src/libggml.a $B/ggml/src/libggml-cpu.a $B/ggml/src/libggml-base.a \
//     -fopenmp -lpthread -ldl -o build/llamacpp_logits
//   build/llamacpp_logits MODEL.gguf IDS(comma-separated) N_PREDICT [threads] [f16|f32 KV cache]
#include "llama.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

static void quiet(enum ggml_log_level, const char *, void *) {}

static void print_row(const float *lg, int n) {
    for (int i = 0; i < n; i++) printf(i ? " %.6g" : "%.6g", lg[i]);
    printf("\n");
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s MODEL.gguf IDS N_PREDICT [threads] [f16|f32]\n", argv[0]);
        return 2;
    }
    std::vector<llama_token> ids;
    for (const char *p = argv[2]; *p;) {
        char *e;
        ids.push_back((llama_token)strtol(p, &e, 10));
        p = *e == ',' ? e + 1 : e;
        if (e == p && *p) return 2;
    }
    int n_predict = atoi(argv[3]), n_threads = argc > 4 ? atoi(argv[4]) : 2;
    bool kv32 = argc > 5 && !strcmp(argv[5], "f32");
    llama_log_set(quiet, NULL);
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    const llama_vocab *vocab = llama_model_get_vocab(model);
    int n_vocab = llama_vocab_n_tokens(vocab);
    llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)(ids.size() + n_predict + 16);
    cp.n_batch = cp.n_ubatch = (uint32_t)ids.size() > 512 ? (uint32_t)ids.size() : 512;
    cp.n_threads = cp.n_threads_batch = n_threads;
    cp.no_perf = true;
    if (kv32) cp.type_k = cp.type_v = GGML_TYPE_F32;
    llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx) return 1;
    llama_batch b = llama_batch_init((int32_t)ids.size(), 0, 1);
    for (size_t i = 0; i < ids.size(); i++) {
        b.token[i] = ids[i];
        b.pos[i] = (llama_pos)i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = (int32_t)ids.size();
    if (llama_decode(ctx, b)) return 1;
    for (size_t i = 0; i < ids.size(); i++) print_row(llama_get_logits_ith(ctx, (int32_t)i), n_vocab);
    std::string gen;
    int pos = (int)ids.size();
    const float *last = llama_get_logits_ith(ctx, -1);
    for (int t = 0; t < n_predict; t++) {
        llama_token best = 0;
        for (int v = 1; v < n_vocab; v++)
            if (last[v] > last[best]) best = v;
        if (llama_vocab_is_eog(vocab, best)) break;
        gen += (gen.empty() ? "" : " ") + std::to_string(best);
        if (t + 1 == n_predict) break;
        b.n_tokens = 1;
        b.token[0] = best;
        b.pos[0] = pos++;
        b.logits[0] = 1;
        if (llama_decode(ctx, b)) return 1;
        last = llama_get_logits_ith(ctx, -1);
        print_row(last, n_vocab);
    }
    printf("ids: %s\n", gen.c_str());
    llama_batch_free(b);
    llama_free(ctx);
    llama_model_free(model);
    return 0;
}
