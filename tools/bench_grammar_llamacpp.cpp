// llama.cpp's grammar engine on the schemas of tools/bench_grammar.c, measured the way
// bench_grammar -M measures mlstack: compile time (json_schema_to_grammar + llama_sampler_init_grammar),
// then per token the mask (llama_sampler_apply of the grammar sampler over every token of the
// vocabulary, random logits) and the advance, sampling at temperature 1 among the allowed tokens,
// cold (a fresh grammar per schema), one thread. Prints mean and p99 like bench_grammar -M.
//   L=PEER/src/vendor/llama.cpp B=PEER/cmake-build
//   g++ -O2 -std=c++17 -I$L/include -I$L/common -I$L/ggml/include tools/bench_grammar_llamacpp.cpp \
//     $B/common/libllama-common.a $B/common/libllama-common-base.a $B/src/libllama.a \
//     $B/ggml/src/libggml.a $B/ggml/src/libggml-cpu.a $B/ggml/src/libggml-base.a -fopenmp -lpthread -ldl \
//     -o build/bench_grammar_llamacpp
//   build/bench_grammar_llamacpp $L/models/ggml-vocab-qwen2.gguf [max_tokens] [tools/grammar_bench_schemas.tsv]
//   (a vocabulary-only GGUF, 151k tokens; the file adds `name<TAB>schema` lines, as bench_grammar -M -s;
//   compile is timed 10 times per schema: p50 and p99)
#include "json-schema-to-grammar.h"
#include "llama.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

static const char *const names[] = {"person", "catalog", "event"};
static const char *const schemas[] = {
    // the same text as tools/bench_grammar.c's cases
    "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"age\": {\"type\": \"integer\", "
    "\"minimum\": 0}, \"email\": {\"type\": \"string\", \"format\": \"email\"}, \"city\": {\"type\": \"string\"}}, "
    "\"required\": [\"name\", \"age\", \"city\"]}",
    "{\"type\": \"object\", \"properties\": {\"products\": {\"type\": \"array\", \"items\": {\"type\": \"object\", "
    "\"properties\": {\"id\": {\"type\": \"integer\"}, \"title\": {\"type\": \"string\"}, \"price\": {\"type\": "
    "\"number\"}, \"tags\": {\"type\": \"array\", \"items\": {\"type\": \"string\"}, \"maxItems\": 4}}, \"required\": "
    "[\"id\", \"title\", \"price\"]}, \"maxItems\": 5}}, \"required\": [\"products\"]}",
    "{\"type\": \"object\", \"properties\": {\"title\": {\"type\": \"string\", \"maxLength\": 60}, \"date\": {\"type\": "
    "\"string\", \"format\": \"date\"}, \"status\": {\"enum\": [\"confirmed\", \"tentative\", \"cancelled\"]}, "
    "\"attendees\": {\"type\": \"array\", \"items\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"object\", "
    "\"properties\": {\"name\": {\"type\": \"string\"}, \"optional\": {\"type\": \"boolean\"}}, \"required\": "
    "[\"name\"]}]}, \"maxItems\": 6}}, \"required\": [\"title\", \"date\", \"status\"]}",
};

// CPU time of this thread, as bench_grammar -M measures: time waiting for a core is not counted
static double now_ms() {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec * 1e-6;
}

static double pct(std::vector<double> v, double q) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0 : v[(size_t)((v.size() - 1) * q + 0.5)];
}

static int bench_one(const llama_vocab *vocab, const std::string &name, const std::string &schema, int max_tokens) {
    int V = llama_vocab_n_tokens(vocab);
    std::vector<llama_token_data> cand(V);
    uint64_t x = 88172645463325252ull;
    std::vector<double> cms, ms;
    llama_sampler *g = nullptr;
    for (int k = 0; k < 10; k++) {
        if (g) llama_sampler_free(g);
        double t0 = now_ms();
        try {
            std::string gbnf = json_schema_to_grammar(common_json::parse(schema));
            g = llama_sampler_init_grammar(vocab, gbnf.c_str(), "root");
        } catch (const std::exception &e) {
            return fprintf(stderr, "%s: %s\n", name.c_str(), e.what()), 1;
        }
        cms.push_back(now_ms() - t0);
        if (!g) return fprintf(stderr, "%s: grammar did not compile\n", name.c_str()), 1;
    }
    while ((int)ms.size() < max_tokens) {
        for (int k = 0; k < V; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            cand[k] = {k, (float)(x >> 40) * 1e-6f, 0.0f};
        }
        llama_token_data_array arr = {cand.data(), (size_t)V, -1, false};
        double t1 = now_ms();
        llama_sampler_apply(g, &arr);
        ms.push_back(now_ms() - t1);
        double sum = 0; /* temperature 1 among the allowed */
        for (size_t k = 0; k < arr.size; k++)
            if (std::isfinite(arr.data[k].logit)) sum += std::exp(arr.data[k].logit);
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double r = (double)(x >> 11) / 9007199254740992.0 * sum;
        llama_token tok = -1;
        for (size_t k = 0; k < arr.size && tok < 0; k++)
            if (std::isfinite(arr.data[k].logit) && (r -= std::exp(arr.data[k].logit)) <= 0) tok = arr.data[k].id;
        if (tok < 0 || llama_vocab_is_eog(vocab, tok)) break;
        llama_sampler_accept(g, tok);
    }
    double tot = 0;
    for (double v : ms) tot += v;
    printf("llama.cpp: %d-token vocabulary, %-9s (random logits, cold, thread CPU time): compile p50 %.2f ms, p99 %.2f ms, %zu tokens, "
           "mask mean %.3f ms, p50 %.3f ms, p99 %.3f ms\n",
           V, name.c_str(), pct(cms, 0.5), pct(cms, 0.99), ms.size(), tot / ms.size(), pct(ms, 0.5), pct(ms, 0.99));
    llama_sampler_free(g);
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: %s VOCAB.gguf [max_tokens] [schemas.tsv]\n", argv[0]), 2;
    int max_tokens = argc > 2 ? atoi(argv[2]) : 1600, bad = 0;
    llama_backend_init();
    llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model) return fprintf(stderr, "cannot load %s\n", argv[1]), 1;
    const llama_vocab *vocab = llama_model_get_vocab(model);
    for (int c = 0; c < 3; c++) bad |= bench_one(vocab, names[c], schemas[c], max_tokens);
    if (argc > 3) {
        std::ifstream f(argv[3]);
        std::string line;
        while (std::getline(f, line)) {
            size_t tab = line.find('\t');
            if (tab != std::string::npos) bad |= bench_one(vocab, line.substr(0, tab), line.substr(tab + 1), max_tokens);
        }
    }
    llama_model_free(model);
    llama_backend_free();
    return bad;
}
