/* Cost of constrained decoding on a real model: for each JSON Schema below, the grammar compile
   time, then a generation from the model's chat template where every token's mask (and the
   matcher's advance) is timed apart from the decode step (one mlstack_engine_eval of one row).
   Prints mean and p99 per token and the mask's share of a decode step, for a cold grammar (its
   first generation builds the automaton and mask cache) and a warm one (the same again), and
   the mask cost on Qwen2.5's 152k vocabulary (random logits, no model) when its tokenizer is in
   ../shared/tokenizers/qwen2.5.
     cc -O2 -I. tools/bench_grammar.c -o build/bench_grammar -lpthread -lm
     build/bench_grammar [-m models/smollm2-135m-instruct] [-t THREADS] [-n TOKENS] [-Q q4_1|q8_0] [-q TOKENIZER_DIR] [-M]
                         [-s tools/grammar_bench_schemas.tsv]
   -q: the folder of the random-logits part (default ../shared/tokenizers/qwen2.5); -M: that part
   only (no model run; for callgrind: -M -q models/smollm2-135m-instruct); -s: more schemas for
   that part, `name<TAB>schema` a line (tools/make_grammar_bench_schemas.py writes the hard ones;
   tools/bench_grammar_llamacpp.cpp times llama.cpp on the same file). That part takes up to
   10 x TOKENS masks per schema.
   Greedy decoding, so runs repeat; the schemas are written to build/bench_grammar_*.json for
   the llama.cpp side (llama-cli --json-schema-file). */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name, *ask, *schema;
} cases[] = {
    {"person", "Describe a fictional person as JSON with name, age, email and city.",
     "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, \"age\": {\"type\": \"integer\", "
     "\"minimum\": 0}, "
     "\"email\": {\"type\": \"string\", \"format\": \"email\"}, \"city\": {\"type\": \"string\"}}, \"required\": "
     "[\"name\", \"age\", \"city\"]}"},
    {"catalog", "List three products of a shop as JSON: each with id, title, price and tags.",
     "{\"type\": \"object\", \"properties\": {\"products\": {\"type\": \"array\", \"items\": {\"type\": \"object\", "
     "\"properties\": {"
     "\"id\": {\"type\": \"integer\"}, \"title\": {\"type\": \"string\"}, \"price\": {\"type\": \"number\"}, \"tags\": "
     "{\"type\": "
     "\"array\", \"items\": {\"type\": \"string\"}, \"maxItems\": 4}}, \"required\": [\"id\", \"title\", \"price\"]}, "
     "\"maxItems\": 5}}, "
     "\"required\": [\"products\"]}"},
    {"event", "Give a calendar event as JSON: title, date, a status and attendees.",
     "{\"type\": \"object\", \"properties\": {\"title\": {\"type\": \"string\", \"maxLength\": 60}, \"date\": "
     "{\"type\": \"string\", "
     "\"format\": \"date\"}, \"status\": {\"enum\": [\"confirmed\", \"tentative\", \"cancelled\"]}, \"attendees\": "
     "{\"type\": \"array\", "
     "\"items\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\": \"object\", \"properties\": {\"name\": {\"type\": "
     "\"string\"}, "
     "\"optional\": {\"type\": \"boolean\"}}, \"required\": [\"name\"]}]}, \"maxItems\": 6}}, \"required\": "
     "[\"title\", \"date\", \"status\"]}"},
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
/* CPU time of this thread: unlike the wall clock, it does not count time the thread waited for
   a core, so masks timed on a busy machine stay comparable (a step with -t 1 too). */
static double cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}
static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double p99(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n ? v[(int)((n - 1) * 0.99 + 0.5)] : 0;
}

/* One greedy generation; fills per-token mask and step times. Returns tokens generated. */
static int generate(mlstack_engine *e, const mlstack_grammar *g, const mlstack_vocab *v, const int32_t *prompt,
                    int n_prompt, int max_tokens, double *mask_ms, double *step_ms, double *mask_cpu, double *step_cpu,
                    int verbose) {
    int V = mlstack_vocab_size(v), n = 0, i;
    uint32_t *bits = (uint32_t *)calloc((size_t)(V + 31) / 32, sizeof(uint32_t));
    mlstack_matcher *m;
    mlstack_batch_row *rows = (mlstack_batch_row *)calloc((size_t)n_prompt, sizeof *rows);
    int32_t seq, pos;
    mlstack_engine_seq_new(e, &seq);
    for (i = 0; i < n_prompt; i++) {
        rows[i].seq = seq;
        rows[i].pos = i;
        rows[i].token = prompt[i];
        rows[i].want_logits = i == n_prompt - 1;
    }
    mlstack_engine_eval(e, rows, n_prompt);
    pos = n_prompt;
    if (mlstack_matcher_init(g, &m) != MLSTACK_OK) return 0;
    while (n < max_tokens) {
        const float *lg = mlstack_engine_logits(e, n ? 0 : n_prompt - 1);
        double t0 = now_s(), t1, t2, c0 = cpu_s(), c1, c2;
        int32_t best = -1;
        mlstack_batch_row row;
        if (mlstack_matcher_mask(m, bits) <= 0) break;
        t1 = now_s();
        c1 = cpu_s();
        for (i = 0; i < V; i++)
            if (((bits[i >> 5] >> (i & 31)) & 1) && (best < 0 || lg[i] > lg[best])) best = i;
        t2 = now_s();
        c2 = cpu_s();
        if (mlstack_matcher_accept(m, best) != MLSTACK_OK) break;
        mask_ms[n] = (t1 - t0 + now_s() - t2) * 1e3;
        mask_cpu[n] = (c1 - c0 + cpu_s() - c2) * 1e3;
        if (verbose) {
            size_t l;
            const char *b = mlstack_vocab_token_text(v, best, &l);
            fwrite(b, 1, l, stdout);
        }
        if (mlstack_matcher_status(m) & (MLSTACK_MATCHER_MUST_END | MLSTACK_MATCHER_FINISHED)) {
            step_cpu[n] = 0;
            step_ms[n++] = 0;
            break;
        }
        row.seq = seq;
        row.pos = pos++;
        row.token = best;
        row.want_logits = 1;
        t0 = now_s();
        c0 = cpu_s();
        mlstack_engine_eval(e, &row, 1);
        step_cpu[n] = (cpu_s() - c0) * 1e3;
        step_ms[n++] = (now_s() - t0) * 1e3;
    }
    if (verbose) printf("\n");
    mlstack_matcher_free(m);
    mlstack_engine_seq_free(e, seq);
    free(bits);
    free(rows);
    return n;
}

static double pct(double *v, int n, double q) {
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n ? v[(int)((n - 1) * q + 0.5)] : 0;
}

/* One schema on vocabulary qv: compile time (p50 and p99 of 10 compiles), then one cold
   generation with random logits (temperature 1), every mask timed; in CPU time of this thread,
   so that time waiting for a core on a loaded machine is not counted. Returns 1 when it does not
   compile. */
static int bench_one(const char *qdir, mlstack_vocab *qv, const char *name, const char *schema, int max_masks) {
    mlstack_grammar_desc gd;
    mlstack_grammar *g = NULL;
    mlstack_sampler_desc sd;
    mlstack_sampler *s;
    mlstack_error err;
    int V = mlstack_vocab_size(qv), n = 0, k;
    float *lg = (float *)malloc(sizeof(float) * (size_t)V);
    uint32_t *bits = (uint32_t *)calloc((size_t)(V + 31) / 32, sizeof(uint32_t));
    double t0, cms[10], tot = 0, *ms = (double *)calloc((size_t)max_masks + 1, sizeof(double));
    uint64_t x = 88172645463325252ull;
    memset(&gd, 0, sizeof gd);
    gd.kind = MLSTACK_GRAMMAR_JSON_SCHEMA;
    gd.text = schema;
    gd.vocab = qv;
    for (k = 0; k < 10; k++) {
        mlstack_grammar_free(g);
        t0 = cpu_s();
        if (mlstack_grammar_compile(&gd, &g, &err) != MLSTACK_OK) return printf("%s: %s\n", name, err.message), 1;
        cms[k] = (cpu_s() - t0) * 1e3;
    }
    memset(&sd, 0, sizeof sd);
    sd.temperature = 1.0f;
    sd.top_k = 0; /* a full sort of the vocabulary per token would hide the mask */
    sd.grammar = g;
    mlstack_sampler_init(&sd, V, &s);
    while (n < max_masks) {
        int32_t t;
        for (k = 0; k < V; k++) x ^= x << 13, x ^= x >> 7, x ^= x << 17, lg[k] = (float)(x >> 40) * 1e-6f;
        t0 = cpu_s();
        mlstack_matcher_mask(mlstack_sampler_matcher(s), bits);
        ms[n] = (cpu_s() - t0) * 1e3;
        tot += ms[n++];
        t = mlstack_sampler_sample(s, lg);
        if (t < 0 || (mlstack_matcher_status(mlstack_sampler_matcher(s)) & MLSTACK_MATCHER_MUST_END)) break;
    }
    printf("%s: %d-token vocabulary, %-9s (random logits, cold, thread CPU time): compile p50 %.2f ms, p99 %.2f ms, %d "
           "tokens, mask "
           "mean %.3f ms, p50 %.3f ms, p99 %.3f ms\n",
           qdir, V, name, pct(cms, 10, 0.5), pct(cms, 10, 0.99), n, tot / n, pct(ms, n, 0.5), pct(ms, n, 0.99));
    printf("    %d DFA states, %llu masks computed (%llu of them plain tokens by length), %llu from the cache\n",
           g->n_states, (unsigned long long)g->n_walks, (unsigned long long)g->n_plain_masks,
           (unsigned long long)g->n_mask_hits);
    mlstack_sampler_free(s);
    mlstack_grammar_free(g);
    free(lg);
    free(bits);
    free(ms);
    return 0;
}

/* The mask cost alone (random logits), on the vocabulary of the tokenizer in qdir (Qwen2.5's 152k
   by default), for the cases above and the `name<TAB>schema` lines of file sfile (-s, may be
   NULL). Returns 1 when a schema does not compile. */
static int bench_masks(const char *qdir, int max_tokens, const char *sfile) {
    mlstack_error err;
    mlstack_tokenizer *tok;
    mlstack_vocab *qv;
    int32_t eos;
    int c, bad = 0;
    char line[65536];
    FILE *f;
    if (mlstack_tokenizer_open(qdir, &tok, &err) != MLSTACK_OK) {
        printf("%s: %s (random-logits part skipped)\n", qdir, err.message);
        return 0;
    }
    eos = mlstack_tokenizer_eos_id(tok);
    if (mlstack_vocab_from_tokenizer(tok, 0, &eos, 1, &qv, &err) == MLSTACK_OK) {
        for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
            bad |= bench_one(qdir, qv, cases[c].name, cases[c].schema, max_tokens * 10);
        if (sfile && (f = fopen(sfile, "r")) != NULL) {
            while (fgets(line, sizeof line, f)) {
                char *tab = strchr(line, '\t');
                if (!tab) continue;
                *tab = 0;
                tab[strcspn(tab + 1, "\n") + 1] = 0;
                bad |= bench_one(qdir, qv, line, tab + 1, max_tokens * 10);
            }
            fclose(f);
        }
        mlstack_vocab_free(qv);
    }
    mlstack_tokenizer_close(tok);
    return bad;
}

int main(int argc, char **argv) {
    const char *dir = "models/smollm2-135m-instruct", *qdir = "../shared/tokenizers/qwen2.5", *sfile = NULL;
    int threads = 2, max_tokens = 160, i, c, masks_only = 0;
    mlstack_dtype quant = (mlstack_dtype)0;
    mlstack_model *model;
    mlstack_engine *e;
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_error err;
    mlstack_vocab *v;
    for (i = 1; i < argc && !strcmp(argv[i], "-M"); i++) masks_only = 1;
    for (; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-m")) dir = argv[i + 1];
        else if (!strcmp(argv[i], "-q"))
            qdir = argv[i + 1];
        else if (!strcmp(argv[i], "-Q"))
            quant = !strcmp(argv[i + 1], "q4_1") ? MLSTACK_DTYPE_Q4_1 : MLSTACK_DTYPE_Q8_0;
        else if (!strcmp(argv[i], "-t"))
            threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-n"))
            max_tokens = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-s"))
            sfile = argv[i + 1];
    }
    if (masks_only) return bench_masks(qdir, max_tokens, sfile);
    memset(&md, 0, sizeof md);
    md.path = dir;
    md.quant = quant;
    if (mlstack_model_open(&md, &model, &err) != MLSTACK_OK) return printf("%s\n", err.message), 1;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = threads;
    if (mlstack_engine_init(model, &ed, &e, &err) != MLSTACK_OK) return printf("%s\n", err.message), 1;
    if (mlstack_vocab_from_model(model, &v, &err) != MLSTACK_OK) return printf("%s\n", err.message), 1;
    printf("model %s, vocabulary %d, %d threads, kernels %s\n", dir, mlstack_vocab_size(v), threads,
           mlstack_engine_kernels(e));
    printf("%-8s %9s | %-5s %6s | %9s %9s | %9s %9s | %7s\n", "schema", "compile", "run", "tokens", "mask mean",
           "mask p99", "step mean", "step p99", "share");
    for (c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        mlstack_grammar_desc gd;
        mlstack_grammar *g;
        double t0, compile_ms, *mask_ms = (double *)calloc((size_t)max_tokens, sizeof(double)),
                               *step_ms = (double *)calloc((size_t)max_tokens, sizeof(double)),
                               *mask_cpu = (double *)calloc((size_t)max_tokens, sizeof(double)),
                               *step_cpu = (double *)calloc((size_t)max_tokens, sizeof(double));
        char msgs[1024], *prompt_text = NULL, path[256];
        size_t plen;
        size_t n_ids;
        int32_t ids[2048];
        int run;
        FILE *f;
        snprintf(path, sizeof path, "build/bench_grammar_%s.json", cases[c].name);
        if ((f = fopen(path, "w")) != NULL) fputs(cases[c].schema, f), fclose(f);
        snprintf(msgs, sizeof msgs, "[{\"role\": \"user\", \"content\": \"%s\"}]", cases[c].ask);
        {
            mlstack_template_options to;
            memset(&to, 0, sizeof to);
            to.add_generation_prompt = 1;
            if (mlstack_chat_template_apply(mlstack_model_chat_template(model), NULL, msgs, strlen(msgs), &to,
                                            &prompt_text, &plen, &err) != MLSTACK_OK)
                return printf("%s\n", err.message), 1;
        }
        if (mlstack_tokenizer_encode(mlstack_model_tokenizer(model), prompt_text, plen, 0, ids, 2048, &n_ids) !=
            MLSTACK_OK)
            return 1;
        mlstack_template_free_output(prompt_text);
        memset(&gd, 0, sizeof gd);
        gd.kind = MLSTACK_GRAMMAR_JSON_SCHEMA;
        gd.text = cases[c].schema;
        gd.vocab = v;
        t0 = now_s();
        if (mlstack_grammar_compile(&gd, &g, &err) != MLSTACK_OK) return printf("%s\n", err.message), 1;
        compile_ms = (now_s() - t0) * 1e3;
        for (run = 0; run < 2; run++) {
            int n = generate(e, g, v, ids, (int)n_ids, max_tokens, mask_ms, step_ms, mask_cpu, step_cpu, run == 0), k,
                n_steps = 0;
            double ms = 0, ss = 0, mp, sp, mc = 0, sc = 0, mcp, scm;
            for (k = 0; k < n; k++) ms += mask_ms[k], mc += mask_cpu[k];
            for (k = 0; k < n; k++)
                if (step_ms[k] > 0) ss += step_ms[k], sc += step_cpu[k], n_steps++;
            ms /= n ? n : 1;
            mc /= n ? n : 1;
            ss /= n_steps ? n_steps : 1;
            sc /= n_steps ? n_steps : 1;
            mp = p99(mask_ms, n);
            sp = p99(step_ms, n);
            mcp = p99(mask_cpu, n);
            qsort(step_cpu, (size_t)n, sizeof *step_cpu, cmp_d); /* the median step's CPU time (zeros first) */
            scm = n_steps ? step_cpu[n - n_steps + n_steps / 2] : 0;
            printf("%-8s %7.2f ms | %-5s %6d | %6.3f ms %6.3f ms | %6.2f ms %6.2f ms | %6.2f%%\n", cases[c].name,
                   compile_ms, run ? "warm" : "cold", n, ms, mp, ss, sp, ss > 0 ? 100 * ms / ss : 0);
            printf("%-8s %10s | %-5s %6s | cpu: mask mean %.3f ms, p99 %.3f ms; step mean %.2f ms, median %.2f ms; "
                   "mask p99 / median step %.2f%%\n",
                   "", "", "", "", mc, mcp, sc, scm, scm > 0 ? 100 * mcp / scm : 0);
        }
        mlstack_grammar_free(g);
        free(mask_ms);
        free(step_ms);
        free(mask_cpu);
        free(step_cpu);
    }
    mlstack_vocab_free(v);
    mlstack_engine_free(e);
    mlstack_model_close(model);
    return bench_masks(qdir, max_tokens, sfile);
}
