/* The profiler and random-weight models, on the tiny Llama fixture:
   - the schedule (wait, warmup, active) keeps exactly the active steps;
   - per-op call counts follow the forward structure (7 matmuls per layer + the LM head, ...);
   - the Chrome trace is valid JSON with "X" events for every op and every pool thread;
   - profiling changes no result: logits bit-identical with it on and off;
   - mlstack_model_open_random: shapes from config.json, forward runs, same seed same logits. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"

static const char *FIX = "tests/fixtures/models/llama";
#define N_PROMPT 5
#define N_DECODE 3

/* A prompt eval then N_DECODE single-token evals (steps 0..N_DECODE); logits of every step's
   last row are copied to out ((N_DECODE + 1) * n_vocab floats). */
static int run_steps(mlstack_engine *e, int n_vocab, float *out) {
    mlstack_batch_row rows[N_PROMPT];
    int32_t seq = -1;
    int i;
    if (mlstack_engine_seq_new(e, &seq) != MLSTACK_OK) return 0;
    for (i = 0; i < N_PROMPT; i++) {
        rows[i].seq = seq;
        rows[i].pos = i;
        rows[i].token = 1 + 37 * i;
        rows[i].want_logits = i == N_PROMPT - 1;
    }
    if (mlstack_engine_eval(e, rows, N_PROMPT) != MLSTACK_OK) return 0;
    memcpy(out, mlstack_engine_logits(e, N_PROMPT - 1), sizeof(float) * (size_t)n_vocab);
    for (i = 0; i < N_DECODE; i++) {
        rows[0].pos = N_PROMPT + i;
        rows[0].token = 3 + 11 * i;
        rows[0].want_logits = 1;
        if (mlstack_engine_eval(e, rows, 1) != MLSTACK_OK) return 0;
        memcpy(out + (size_t)(i + 1) * n_vocab, mlstack_engine_logits(e, 0), sizeof(float) * (size_t)n_vocab);
    }
    mlstack_engine_seq_free(e, seq);
    return 1;
}

static const mlstack_profile_op *find_op(const mlstack_profile_op *ops, int n, const char *name) {
    int i;
    for (i = 0; i < n; i++)
        if (strcmp(ops[i].name, name) == 0) return &ops[i];
    return NULL;
}

static uint64_t calls_of(const mlstack_profile_op *ops, int n, const char *name) {
    const mlstack_profile_op *o = find_op(ops, n, name);
    return o ? o->calls : 0;
}

static void check_trace(const char *path, int n_threads, int first_step, int last_step) {
    static const char *const names[] = {"eval", "embed", "rmsnorm", "matmul", "rope_kv", "attention", "add", "swiglu"};
    size_t len, k;
    char *text = tl_read(path, &len);
    mlstack__json_doc doc;
    mlstack_error err;
    const mlstack__json *evs, *v;
    int seen_op[8] = {0}, bad = 0, n_x = 0;
    int64_t pool_tasks = 0, work_tasks = 0; /* each task of a fork is recorded by one thread */
    CHECKF(text != NULL, "trace %s not written", path);
    if (!text) return;
    CHECKF(mlstack__json_parse(&doc, text, len, path, &err) == MLSTACK_OK, "trace is not valid JSON: %s", err.message);
    evs = mlstack__json_get(doc.root, "traceEvents");
    CHECK(evs && evs->type == MLSTACK__JSON_ARRAY);
    for (v = evs ? evs->child : NULL; v; v = v->next) {
        const mlstack__json *ph = mlstack__json_get(v, "ph"), *name = mlstack__json_get(v, "name"),
                            *tid = mlstack__json_get(v, "tid"), *ts = mlstack__json_get(v, "ts"),
                            *dur = mlstack__json_get(v, "dur"), *args = mlstack__json_get(v, "args"), *step;
        if (!mlstack__json_is_str(ph, "X")) continue;
        n_x++;
        step = mlstack__json_get(args, "step");
        if (!name || name->type != MLSTACK__JSON_STRING || !tid || !tid->is_int || !ts ||
            ts->type != MLSTACK__JSON_NUMBER || !dur || dur->type != MLSTACK__JSON_NUMBER || dur->num < 0 || !step ||
            !step->is_int || step->i < first_step || step->i > last_step || tid->i < 0 || tid->i >= n_threads) {
            bad++;
            continue;
        }
        {
            const mlstack__json *cat = mlstack__json_get(v, "cat"), *tasks = mlstack__json_get(args, "tasks");
            if (tasks && tasks->is_int && mlstack__json_is_str(cat, "pool")) pool_tasks += tasks->i;
            if (tasks && tasks->is_int && mlstack__json_is_str(cat, "work")) work_tasks += tasks->i;
        }
        for (k = 0; k < sizeof names / sizeof names[0]; k++)
            if (mlstack__json_is_str(name, names[k])) seen_op[k] = 1;
    }
    CHECKF(bad == 0, "%d X events lack a field or fall outside steps %d..%d", bad, first_step, last_step);
    CHECKF(n_x > 100, "only %d X events", n_x);
    for (k = 0; k < sizeof names / sizeof names[0]; k++) CHECKF(seen_op[k], "no X event for op %s", names[k]);
    /* (a thread that wakes late may find its share taken by the others: no thread need appear) */
    CHECKF(pool_tasks > 0 && work_tasks == pool_tasks, "the threads' work events hold %lld tasks, the forks %lld",
           (long long)work_tasks, (long long)pool_tasks);
    mlstack__json_free(&doc);
    free(text);
}

static void test_profiler(void) {
    mlstack_model *m;
    mlstack_engine *e, *ref;
    mlstack_error err;
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_model_info info;
    mlstack_profile_schedule ps;
    mlstack_profile_op ops[16];
    float *want, *got;
    char path[] = "build/test_profiler_trace_XXXXXX", small[32], *summary;
    size_t need;
    int n, L, fd;
    memset(&md, 0, sizeof md);
    md.path = FIX;
    if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK) {
        CHECKF(0, "open %s: %s", FIX, err.message);
        return;
    }
    mlstack_model_get_info(m, &info);
    L = info.n_layers;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = 2;
    ed.max_seqs = 2;
    CHECK(mlstack_engine_init(m, &ed, &ref, &err) == MLSTACK_OK);
    /* steps: 0 waits, 1 warms up, 2 and 3 are kept, nothing after */
    memset(&ps, 0, sizeof ps);
    ps.wait = 1;
    ps.warmup = 1;
    ps.active = 2;
    ed.profile = &ps;
    CHECK(mlstack_engine_init(m, &ed, &e, &err) == MLSTACK_OK);
    want = (float *)malloc(sizeof(float) * (size_t)(N_DECODE + 1) * (size_t)info.n_vocab);
    got = (float *)malloc(sizeof(float) * (size_t)(N_DECODE + 1) * (size_t)info.n_vocab);
    CHECK(mlstack_engine_profile_steps(ref) == -1);
    CHECK(run_steps(ref, info.n_vocab, want));
    CHECK(ref->prof == NULL && ref->pool.prof == NULL);
    CHECK(mlstack_engine_profile_ops(ref, ops, 16) == 0);
    CHECK(run_steps(e, info.n_vocab, got));
    CHECKF(memcmp(want, got, sizeof(float) * (size_t)(N_DECODE + 1) * (size_t)info.n_vocab) == 0,
           "logits differ with the profiler on");
    CHECKF(mlstack_engine_profile_steps(e) == 2, "kept %d steps, expected 2", mlstack_engine_profile_steps(e));
    n = mlstack_engine_profile_ops(e, ops, 16);
    CHECK(n >= 8 && n <= 16);
    /* each kept step is one chunk of 1 row with logits */
    CHECKF(calls_of(ops, n, "eval") == 2, "eval calls %llu", (unsigned long long)calls_of(ops, n, "eval"));
    CHECKF(calls_of(ops, n, "matmul") == (uint64_t)2 * (7 * L + 1), "matmul calls %llu, expected %d",
           (unsigned long long)calls_of(ops, n, "matmul"), 2 * (7 * L + 1));
    CHECK(calls_of(ops, n, "rmsnorm") == (uint64_t)2 * (2 * L + 1));
    CHECK(calls_of(ops, n, "attention") == (uint64_t)2 * L);
    CHECK(calls_of(ops, n, "rope_kv") == (uint64_t)2 * L);
    CHECK(calls_of(ops, n, "add") == (uint64_t)2 * 2 * L);
    CHECK(calls_of(ops, n, "swiglu") == (uint64_t)2 * L);
    CHECK(calls_of(ops, n, "embed") == 2);
    CHECK(calls_of(ops, n, "sample") == 0); /* no mlstack_generate here */
    {
        const mlstack_profile_op *mm = find_op(ops, n, "matmul"), *ev = find_op(ops, n, "eval");
        uint64_t want_flops = 0;
        int l;
        for (l = 0; l < L; l++) {
            const mlstack__layer *Ly = &m->layers[l];
            want_flops += 2 * ((uint64_t)Ly->wq.n_in * Ly->wq.n_out + (uint64_t)Ly->wk.n_in * Ly->wk.n_out +
                               (uint64_t)Ly->wv.n_in * Ly->wv.n_out + (uint64_t)Ly->wo.n_in * Ly->wo.n_out +
                               (uint64_t)Ly->w_gate.n_in * Ly->w_gate.n_out + (uint64_t)Ly->w_up.n_in * Ly->w_up.n_out +
                               (uint64_t)Ly->w_down.n_in * Ly->w_down.n_out);
        }
        want_flops += 2 * (uint64_t)m->lm_head.n_in * m->lm_head.n_out;
        CHECK(mm && ev && ev->is_phase && !mm->is_phase);
        CHECKF(mm && mm->flops == 2 * want_flops, "matmul flops %llu, expected %llu",
               mm ? (unsigned long long)mm->flops : 0ull, (unsigned long long)(2 * want_flops));
        CHECK(mm && mm->bytes > 2 * (mlstack_model_decode_bytes(m) - (uint64_t)info.n_embd * 4 * (2 * L + 2)));
        CHECK(mm && mm->share > 0 && mm->share < 1 && mm->overhead >= 0 && mm->overhead < 1);
        CHECK(ev && ev->share == 1.0);
    }
    /* trace */
    fd = mkstemp(path);
    CHECK(fd >= 0);
    if (fd >= 0) close(fd);
    CHECK(mlstack_engine_profile_write_trace(e, path) == MLSTACK_OK);
    check_trace(path, 2, 2, 3);
    remove(path);
    CHECK(mlstack_engine_profile_write_trace(ref, path) == MLSTACK_ERR_STATE);
    CHECK(mlstack_engine_profile_write_trace(e, "tests/fixtures/no-such-dir/trace.json") == MLSTACK_ERR_IO);
    /* summary: snprintf-like sizing */
    need = mlstack_engine_profile_summary(e, NULL, 0);
    CHECK(need > 200);
    CHECK(mlstack_engine_profile_summary(e, small, sizeof small) == need && strlen(small) == sizeof small - 1);
    summary = (char *)malloc(need + 1);
    CHECK(summary && mlstack_engine_profile_summary(e, summary, need + 1) == need && strlen(summary) == need);
    if (summary) {
        char line[64];
        snprintf(line, sizeof line, "%-12s %8d", "matmul", 2 * (7 * L + 1));
        CHECKF(strstr(summary, line) != NULL, "summary lacks \"%s\":\n%s", line, summary);
        CHECK(strstr(summary, "lm_head") && strstr(summary, "q_proj") && strstr(summary, "attention"));
    }
    free(summary);
    /* the schedule is over: a later step (and its sampling) records nothing */
    CHECK(run_steps(e, info.n_vocab, got));
    CHECK(e->pool.prof == NULL && mlstack_engine_profile_steps(e) == 2);
    CHECK(calls_of(ops, mlstack_engine_profile_ops(e, ops, 16), "eval") == 2);
    /* restart: record everything until stopped; a step after stop adds nothing */
    CHECK(mlstack_engine_profile_start(e, NULL) == MLSTACK_OK);
    CHECK(run_steps(e, info.n_vocab, got));
    CHECK(mlstack_engine_profile_steps(e) == N_DECODE + 1);
    mlstack_engine_profile_stop(e);
    CHECK(run_steps(e, info.n_vocab, got));
    n = mlstack_engine_profile_ops(e, ops, 16);
    CHECK(calls_of(ops, n, "eval") == N_DECODE + 1);
    CHECK(calls_of(ops, n, "rmsnorm") == (uint64_t)(N_DECODE + 1) * (2 * L + 1));
    CHECKF(memcmp(want, got, sizeof(float) * (size_t)(N_DECODE + 1) * (size_t)info.n_vocab) == 0, "logits changed");
    /* a full buffer drops events and says so, nothing else breaks */
    ps.wait = ps.warmup = ps.active = 0;
    ps.max_events = 10;
    CHECK(mlstack_engine_profile_start(e, &ps) == MLSTACK_OK);
    CHECK(run_steps(e, info.n_vocab, got));
    CHECK(e->prof->n_ev == 10 && e->prof->dropped > 0);
    ps.max_events = -1;
    CHECK(mlstack_engine_profile_start(e, &ps) == MLSTACK_ERR_INVALID_ARG);
    /* generate records sampling between the evals */
    {
        mlstack_generate_desc g;
        int32_t seq, prompt[3] = {1, 2, 3};
        CHECK(mlstack_engine_profile_start(e, NULL) == MLSTACK_OK);
        CHECK(mlstack_engine_seq_new(e, &seq) == MLSTACK_OK);
        memset(&g, 0, sizeof g);
        g.seq = seq;
        g.prompt = prompt;
        g.n_prompt = 3;
        g.max_tokens = 4;
        g.ignore_eos = 1;
        CHECK(mlstack_generate(e, &g) == MLSTACK_OK && g.n_generated == 4);
        n = mlstack_engine_profile_ops(e, ops, 16);
        CHECK(calls_of(ops, n, "eval") == 4 && calls_of(ops, n, "sample") == 4);
    }
    free(want);
    free(got);
    mlstack_engine_free(e);
    mlstack_engine_free(ref);
    mlstack_model_close(m);
}

/* Last-position logits of a fixed 4-token prompt; caller frees. */
static float *logits_of(mlstack_model *m, int n_vocab) {
    mlstack_engine *e;
    mlstack_engine_desc ed;
    mlstack_error err;
    mlstack_batch_row rows[4];
    float *out = NULL;
    int32_t seq = -1;
    int i;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = 1;
    if (mlstack_engine_init(m, &ed, &e, &err) != MLSTACK_OK) return NULL;
    mlstack_engine_seq_new(e, &seq);
    for (i = 0; i < 4; i++) {
        rows[i].seq = seq;
        rows[i].pos = i;
        rows[i].token = 5 + 100 * i;
        rows[i].want_logits = i == 3;
    }
    if (mlstack_engine_eval(e, rows, 4) == MLSTACK_OK) {
        out = (float *)malloc(sizeof(float) * (size_t)n_vocab);
        memcpy(out, mlstack_engine_logits(e, 3), sizeof(float) * (size_t)n_vocab);
    }
    mlstack_engine_free(e);
    return out;
}

static void test_random(void) {
    mlstack_model *fix, *a, *b, *c, *q;
    mlstack_model_desc md;
    mlstack_model_info fi, ai, qi;
    mlstack_error err;
    float *la, *lb, *lc;
    double sum = 0, sum2 = 0;
    int i, finite = 1;
    size_t n;
    memset(&md, 0, sizeof md);
    md.path = FIX;
    if (mlstack_model_open(&md, &fix, &err) != MLSTACK_OK) {
        CHECKF(0, "%s", err.message);
        return;
    }
    mlstack_model_get_info(fix, &fi);
    CHECKF(mlstack_model_open_random("tests/fixtures/models/llama/config.json", MLSTACK_DTYPE_F32, 0, 42, &a, &err) ==
               MLSTACK_OK,
           "%s", err.message);
    CHECK(mlstack_model_open_random(FIX, MLSTACK_DTYPE_F32, 0, 42, &b, &err) == MLSTACK_OK); /* folder works too */
    CHECK(mlstack_model_open_random(FIX, MLSTACK_DTYPE_F32, 0, 43, &c, &err) == MLSTACK_OK);
    mlstack_model_get_info(a, &ai);
    CHECK(ai.n_layers == fi.n_layers && ai.n_embd == fi.n_embd && ai.n_ff == fi.n_ff && ai.n_heads == fi.n_heads &&
          ai.n_kv_heads == fi.n_kv_heads && ai.head_dim == fi.head_dim && ai.n_vocab == fi.n_vocab);
    CHECKF(ai.n_params == fi.n_params - (uint64_t)fi.n_embd * (2 * fi.n_layers + 1),
           "random model has %llu weights (norms are shared ones), fixture %llu", (unsigned long long)ai.n_params,
           (unsigned long long)fi.n_params);
    CHECK(ai.weight_dtype == MLSTACK_DTYPE_F32);
    /* the weights look like N(0, 0.02) */
    n = (size_t)a->layers[0].wq.n_out * (size_t)a->layers[0].wq.n_in;
    for (i = 0; i < (int)n; i++) {
        double x = ((const float *)a->layers[0].wq.data)[i];
        sum += x;
        sum2 += x * x;
    }
    CHECKF(fabs(sum / (double)n) < 0.002 && fabs(sqrt(sum2 / (double)n) - 0.02) < 0.002, "mean %g std %g",
           sum / (double)n, sqrt(sum2 / (double)n));
    la = logits_of(a, ai.n_vocab);
    lb = logits_of(b, ai.n_vocab);
    lc = logits_of(c, ai.n_vocab);
    CHECK(la && lb && lc);
    if (la && lb && lc) {
        for (i = 0; i < ai.n_vocab; i++) finite &= la[i] == la[i] && fabsf(la[i]) < 100;
        CHECK(finite);
        CHECK(memcmp(la, lb, sizeof(float) * (size_t)ai.n_vocab) == 0);
        CHECK(memcmp(la, lc, sizeof(float) * (size_t)ai.n_vocab) != 0);
    }
    free(la);
    free(lb);
    free(lc);
    /* stored types and load-time quantization, tied embeddings, Qwen3's q/k norms */
    CHECK(mlstack_model_open_random(FIX, MLSTACK_DTYPE_BF16, MLSTACK_DTYPE_Q4_1, 1, &q, &err) == MLSTACK_OK);
    mlstack_model_get_info(q, &qi);
    CHECK(qi.weight_dtype == MLSTACK_DTYPE_Q4_1 && q->embed_dtype == MLSTACK_DTYPE_BF16);
    CHECK(mlstack_model_decode_bytes(q) < mlstack_model_decode_bytes(a) / 4);
    la = logits_of(q, qi.n_vocab);
    CHECK(la != NULL);
    free(la);
    mlstack_model_close(q);
    CHECK(mlstack_model_open_random("tests/fixtures/models/llama_tied", MLSTACK_DTYPE_F16, MLSTACK_DTYPE_Q8_0, 1, &q,
                                    &err) == MLSTACK_OK);
    CHECK(q->cfg.tied && q->lm_head.wtype == MLSTACK_DTYPE_Q8_0);
    la = logits_of(q, q->cfg.n_vocab);
    CHECK(la != NULL);
    free(la);
    mlstack_model_close(q);
    CHECK(mlstack_model_open_random("tests/fixtures/models/qwen3", MLSTACK_DTYPE_F32, 0, 1, &q, &err) == MLSTACK_OK);
    la = logits_of(q, q->cfg.n_vocab);
    CHECK(la != NULL);
    free(la);
    mlstack_model_close(q);
    /* errors */
    CHECK(mlstack_model_open_random("tests/fixtures/models/nope", MLSTACK_DTYPE_F32, 0, 1, &q, &err) ==
              MLSTACK_ERR_IO &&
          !q);
    CHECK(mlstack_model_open_random(FIX, MLSTACK_DTYPE_Q8_0, 0, 1, &q, &err) == MLSTACK_ERR_INVALID_ARG);
    CHECK(mlstack_model_open_random(FIX, MLSTACK_DTYPE_F32, MLSTACK_DTYPE_I8, 1, &q, &err) == MLSTACK_ERR_UNSUPPORTED);
    mlstack_model_close(a);
    mlstack_model_close(b);
    mlstack_model_close(c);
    mlstack_model_close(fix);
}

int main(void) {
    test_profiler();
    test_random();
    return tl_finish();
}
