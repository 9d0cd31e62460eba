/* Hybrid models (recurrent layers beside attention: LFM2's short convolutions, Granite 4.0-H and
   Nemotron-H's Mamba2, the gated delta-net of Qwen3.5 / Qwen3.5-MoE / Qwen3-Next; Mamba2 alone) on
   the engine's paths that move the recurrent state: tiny fixtures of tests/fixtures/families (made by
   tools/make_fixtures.py; their logits against transformers are checked by test_families).
   - prefill == decode: the prompt evaluated in one batch, token by token and in chunks of 5 and
     16 gives the same bits (1 and 2 threads);
   - the radix prefix cache: a request sharing 16, 37 (inside a page), 64 or 100 tokens with
     one that ran before, or exactly its last full page, attaches the cached pages up to the
     deepest state snapshot and its logits are bit-identical to a cold engine's;
   - speculative decoding (prompt lookup) rolls the state back on rejection: the same tokens and
     the same logits bits as without it;
   - preemption under a small page pool: every request's tokens as when it runs alone;
   - rewind: to a page end with a snapshot continues with the same bits, elsewhere it fails and
     names the nearest position; rows that do not start at the sequence's end are refused;
   - refusals: more than one rank, a config without layer_types, a convolution wider than 64, a
     layer type the family does not have. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include "fixture_eval.h"

#define MAXP 160
#define NEW 32
#define SPEC_NEW 120 /* long enough for the tiny models' greedy text to repeat itself */

static const char *FIX = "tests/fixtures/families";

/* The ASan+UBSan flavour (TL_SANITIZED) looks for memory errors and undefined behaviour, which a
   path shows once; the plain, clang and no-threads flavours check every fixture on every case.
   There, as test_kernels' TK_KEEP does: fixture i runs the chunk sizes and radix prefixes c with
   i + c a multiple of 3 (each chunk size and prefix still meets six fixtures, every layer kind
   among them); preemption and prompt lookup, the scheduler's paths that move the recurrent state,
   run on the base fixtures only (one of each kind; a variant of one, mamba2_groups of mamba2, is
   named in a skip); prefill == decode, rewind and the random model run on every fixture. */
static int th_thin = TL_SANITIZED;
#define TH_KEEP(sum) TL_KEEP(th_thin, sum)

static int read_ids(const char *name, int32_t *ids, int cap) {
    char path[512];
    size_t len;
    char *text;
    mlstack__json_doc doc;
    mlstack_error err;
    const mlstack__json *v;
    int n = 0;
    snprintf(path, sizeof path, "%s/%s/reference.json", FIX, name);
    text = tl_read(path, &len);
    if (!text || mlstack__json_parse(&doc, text, len, path, &err) != MLSTACK_OK) {
        free(text);
        return 0;
    }
    for (v = mlstack__json_get(doc.root, "ids")->child; v && n < cap; v = v->next) ids[n++] = (int32_t)v->i;
    mlstack__json_free(&doc);
    free(text);
    return n;
}

static mlstack_model *open_model(const char *name) {
    char dir[512];
    mlstack_model_desc md;
    mlstack_model *m = NULL;
    mlstack_error err;
    memset(&md, 0, sizeof md);
    snprintf(dir, sizeof dir, "%s/%s", FIX, name);
    md.path = dir;
    if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: open: %s", name, err.message);
        return NULL;
    }
    return m;
}

static mlstack_engine *new_engine(mlstack_model *m, int threads, uint64_t kv_mem, int spec) {
    mlstack_engine_desc ed;
    mlstack_engine *e = NULL;
    mlstack_error err;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = threads;
    ed.kv_mem = kv_mem;
    ed.max_seqs = 4;
    ed.spec = spec ? MLSTACK_SPEC_NGRAM : MLSTACK_SPEC_NONE;
    ed.spec_ngram = 1; /* a one-token cue: drafts at almost every step, most rejected */
    if (mlstack_engine_init(m, &ed, &e, &err) != MLSTACK_OK) CHECKF(0, "engine: %s", err.message);
    return e;
}

/* prefill == decode, chunked, 1 and 2 threads */
static void check_prefill_decode(const char *name, int fi, mlstack_model *m, const int32_t *ids, int n) {
    mlstack_engine *e1 = new_engine(m, 1, 0, 0), *e2 = new_engine(m, 2, 0, 0);
    int V = m->cfg.n_vocab, chunks[4] = {1, 5, 16, 0}, i;
    float *all = e1 ? fx_eval_all(e1, ids, n, V, n) : NULL;
    CHECKF(all != NULL, "%s: prefill", name);
    for (i = 0; all && i < 4; i++) {
        int ck = chunks[i] ? chunks[i] : n;
        float *a, *b;
        if (!TH_KEEP(fi + i)) continue;
        a = fx_eval_all(e1, ids, n, V, ck), b = e2 ? fx_eval_all(e2, ids, n, V, ck) : NULL;
        CHECKF(a && !memcmp(a, all, sizeof(float) * (size_t)n * V), "%s: chunks of %d differ from one prefill", name,
               ck);
        CHECKF(b && !memcmp(b, all, sizeof(float) * (size_t)n * V), "%s: chunks of %d on 2 threads differ", name, ck);
        free(a);
        free(b);
    }
    free(all);
    mlstack_engine_free(e1);
    mlstack_engine_free(e2);
}

/* ---- the scheduler: requests with their logits rows recorded ---- */
typedef struct rec {
    float *rows; /* cap rows of V */
    int n, V, cap;
} rec;
static void on_logits(void *user, uint64_t id, const float *lg, int V) {
    rec *r = (rec *)user;
    (void)id;
    if (r->n < r->cap) memcpy(r->rows + (size_t)r->n * V, lg, sizeof(float) * (size_t)V);
    r->n++;
}
static void req_init(mlstack_request_desc *d, rec *r, const int32_t *prompt, int n, int V, int max_tokens) {
    memset(d, 0, sizeof *d);
    d->prompt = prompt;
    d->n_prompt = n;
    d->max_tokens = max_tokens;
    d->ignore_eos = 1;
    d->on_logits = on_logits;
    d->user = r;
    r->n = 0;
    r->V = V;
    r->cap = max_tokens;
    r->rows = (float *)calloc((size_t)max_tokens * V, sizeof(float));
}
/* Runs one request of up to `max` new tokens to the end; its tokens into toks, its status into st. */
static int run_n(mlstack_engine *e, const int32_t *prompt, int n, rec *r, int32_t *toks, mlstack_request_status *st,
                 int V, int max) {
    mlstack_request_desc d;
    req_init(&d, r, prompt, n, V, max);
    return mlstack_engine_complete(e, &d, st, toks, max, NULL) == MLSTACK_OK && st->n_generated == max;
}
static int run_one(mlstack_engine *e, const int32_t *prompt, int n, rec *r, int32_t *toks, mlstack_request_status *st,
                   int V) {
    return run_n(e, prompt, n, r, toks, st, V, NEW);
}

/* The deepest page end at or before `share` tokens that carries a snapshot after a prompt of
   a_n tokens ran: every snap_every pages (every page for LFM2 and Granite 4.0-H shapes, every
   4th for Mamba2 alone), and the ladder back from the prompt's last full page e (e, e-1, e-3,
   e-7, ...), in tokens. */
static int snapped_at(const mlstack_engine *e, int share, int a_n) {
    int p, last = a_n / 16;
    for (p = share / 16; p > 0; p--) {
        int gap = last - p;
        if (p % e->kv.snap_every == 0 || (gap >= 0 && ((gap + 1) & gap) == 0)) return p * 16;
    }
    return 0;
}

/* B shares `share` tokens with A (the first a_n ids), then differs; after A ran, B's cached part
   is the deepest page end with a snapshot, and its logits are the cold engine's bits. The last
   case shares exactly A's last full page (7 pages: not a multiple of Mamba2's snapshot spacing
   of 4), which only the snapshot at a prompt's last full page restores. */
static void check_radix(const char *name, int fi, mlstack_model *m, const int32_t *ids, int n) {
    static const int shares[5] = {16, 37, 64, 100, 112};
    int V = m->cfg.n_vocab, i, k;
    for (i = 0; i < 5; i++) {
        int32_t b[MAXP], toks_cold[NEW], toks_hot[NEW], toks_a[NEW];
        mlstack_engine *cold, *hot;
        mlstack_request_status st;
        rec rc, rh, ra;
        int share = shares[i], want, a_n = i == 4 ? 119 : n;
        if (!TH_KEEP(fi + i)) continue;
        cold = new_engine(m, 2, 0, 0), hot = new_engine(m, 2, 0, 0);
        if (!cold || !hot) {
            mlstack_engine_free(cold);
            mlstack_engine_free(hot);
            return;
        }
        want = snapped_at(hot, share, a_n);
        CHECKF(i < 4 || want == share, "%s: A's last full page carries no snapshot", name);
        for (k = 0; k < n; k++) b[k] = k < share ? ids[k] : (int32_t)(3 + (ids[k] * 7 + k) % (V - 3));
        CHECKF(run_one(cold, b, n, &rc, toks_cold, &st, V), "%s: cold run", name);
        CHECKF(st.n_cached == 0, "%s: the cold engine had %d tokens cached", name, st.n_cached);
        CHECKF(run_one(hot, ids, a_n, &ra, toks_a, &st, V), "%s: first request", name);
        CHECKF(run_one(hot, b, n, &rh, toks_hot, &st, V), "%s: second request", name);
        CHECKF(st.n_cached == want, "%s: sharing %d tokens, %d came from the cache (want %d)", name, share, st.n_cached,
               want);
        CHECKF(!memcmp(toks_cold, toks_hot, sizeof toks_cold) && rc.n == NEW && rh.n == NEW &&
                   !memcmp(rc.rows, rh.rows, sizeof(float) * (size_t)NEW * V),
               "%s: a cache hit of %d tokens (prefix %d) changes the logits", name, st.n_cached, share);
        free(rc.rows);
        free(rh.rows);
        free(ra.rows);
        mlstack_engine_free(cold);
        mlstack_engine_free(hot);
    }
}

static unsigned long long spec_accepted; /* over the fixtures: some drafts must be accepted */

/* Prompt lookup drafts on a prompt that repeats itself: tokens and logits as without drafts. */
static void check_spec(const char *name, mlstack_model *m, const int32_t *ids, int n) {
    int V = m->cfg.n_vocab;
    int32_t t0[SPEC_NEW], t1[SPEC_NEW];
    mlstack_engine *plain = new_engine(m, 2, 0, 0), *spec = new_engine(m, 2, 0, 1);
    mlstack_request_status st;
    mlstack_cache_stats cs;
    rec r0, r1;
    if (!plain || !spec) goto done;
    CHECKF(run_n(plain, ids, n, &r0, t0, &st, V, SPEC_NEW), "%s: run without drafts", name);
    CHECKF(run_n(spec, ids, n, &r1, t1, &st, V, SPEC_NEW), "%s: run with drafts", name);
    mlstack_engine_cache_stats(spec, &cs);
    printf("  %-8s prompt lookup: %llu drafted, %llu accepted\n", name, (unsigned long long)cs.spec_drafted,
           (unsigned long long)cs.spec_accepted);
    CHECKF(cs.spec_drafted > 0 && cs.spec_accepted < cs.spec_drafted,
           "%s: %llu drafted, %llu accepted (want some rejected)", name, (unsigned long long)cs.spec_drafted,
           (unsigned long long)cs.spec_accepted);
    spec_accepted += cs.spec_accepted;
    CHECKF(!memcmp(t0, t1, sizeof t0) && !memcmp(r0.rows, r1.rows, sizeof(float) * (size_t)SPEC_NEW * V),
           "%s: speculative decoding changes the tokens or logits", name);
    free(r0.rows);
    free(r1.rows);
done:
    mlstack_engine_free(plain);
    mlstack_engine_free(spec);
}

/* Four requests in a pool of 18 pages (each needs 8 for its prompt, 10 by its end, and they
   share less than a page: two are admitted and outgrow the pool whatever the snapshots):
   preemption, recomputed from the cache. */
static void check_preempt(const char *name, mlstack_model *m, const int32_t *ids, int n) {
    int V = m->cfg.n_vocab, i, k, active = 1, ok = 1;
    mlstack_engine *e1 = new_engine(m, 2, 0, 0), *small = NULL;
    mlstack_cache_stats cs;
    int32_t p[4][MAXP], solo[4][NEW], got[4][NEW];
    uint64_t id[4];
    rec r[4];
    mlstack_request_status st;
    if (!e1) return;
    for (i = 0; i < 4; i++) {
        for (k = 0; k < n; k++) p[i][k] = k < 12 ? ids[k] : (int32_t)(3 + (ids[k] * (i + 2) + k) % (V - 3));
        CHECKF(run_one(e1, p[i], n, &r[i], solo[i], &st, V), "%s: solo run %d", name, i);
        free(r[i].rows);
    }
    mlstack_engine_cache_stats(e1, &cs);
    /* 18 pages with their snapshots, and the 4 slots' live and kept states */
    small = new_engine(m, 2, (uint64_t)18 * cs.page_bytes + 2 * 4 * e1->kv.state_floats * 4, 0);
    if (small && small->kv.n_pages < 18) { /* pages smaller than their snapshot share rounds (Mamba2): once more */
        uint64_t pool = (uint64_t)18 * cs.page_bytes * 18 / (uint64_t)small->kv.n_pages;
        mlstack_engine_free(small);
        small = new_engine(m, 2, pool + 2 * 4 * e1->kv.state_floats * 4, 0);
    }
    if (!small) goto done;
    for (i = 0; i < 4; i++) {
        mlstack_request_desc d;
        req_init(&d, &r[i], p[i], n, V, NEW);
        CHECK(mlstack_engine_submit(small, &d, &id[i], NULL) == MLSTACK_OK);
    }
    while (active && ok) ok = mlstack_engine_step(small, &active) == MLSTACK_OK;
    CHECKF(ok, "%s: step: %s", name, mlstack_engine_error(small));
    for (i = 0; i < 4; i++) {
        CHECK(mlstack_engine_poll(small, id[i], &st, got[i], NEW) == MLSTACK_OK);
        CHECKF(st.n_generated == NEW && !memcmp(got[i], solo[i], sizeof got[i]),
               "%s: request %d (preempted %d times) differs from its solo run", name, i, st.n_preempted);
        free(r[i].rows);
    }
    mlstack_engine_cache_stats(small, &cs);
    printf("  %-8s %d pages: %llu preemptions\n", name, cs.n_pages, (unsigned long long)cs.preemptions);
    CHECKF(cs.preemptions > 0, "%s: no preemption in a pool of %d pages", name, cs.n_pages);
done:
    mlstack_engine_free(e1);
    mlstack_engine_free(small);
}

/* Rewind to a page end and continue; a rewind elsewhere and rows behind the end are refused. */
static void check_rewind(const char *name, mlstack_model *m, const int32_t *ids) {
    mlstack_engine *e = new_engine(m, 1, 0, 0);
    int V = m->cfg.n_vocab, i;
    mlstack_batch_row rows[48];
    float *all = e ? fx_eval_all(e, ids, 48, V, 48) : NULL;
    int32_t seq;
    if (!all || mlstack_engine_seq_new(e, &seq) != MLSTACK_OK) goto done;
    for (i = 0; i < 40; i++) rows[i].seq = seq, rows[i].pos = i, rows[i].token = ids[i], rows[i].want_logits = 0;
    CHECK(mlstack_engine_eval(e, rows, 40) == MLSTACK_OK);
    if (2 % e->kv.snap_every) { /* no snapshot at 32 (snapshots every 4 pages: Mamba2 alone): from 0 only */
        CHECK(mlstack_engine_seq_rewind(e, seq, 32) != MLSTACK_OK && strstr(mlstack_engine_error(e), "nearest is 0"));
        goto from_zero;
    }
    CHECK(mlstack_engine_seq_rewind(e, seq, 35) != MLSTACK_OK && strstr(mlstack_engine_error(e), "nearest is 32"));
    CHECKF(mlstack_engine_seq_rewind(e, seq, 32) == MLSTACK_OK, "%s: rewind to 32: %s", name, mlstack_engine_error(e));
    rows[0].pos = 31;
    rows[0].token = ids[31];
    CHECK(mlstack_engine_eval(e, rows, 1) != MLSTACK_OK && strstr(mlstack_engine_error(e), "only moves forward"));
    for (i = 0; i < 16; i++)
        rows[i].seq = seq, rows[i].pos = 32 + i, rows[i].token = ids[32 + i], rows[i].want_logits = 1;
    CHECK(mlstack_engine_eval(e, rows, 16) == MLSTACK_OK);
    for (i = 0; i < 16; i++)
        CHECKF(mlstack_engine_logits(e, i) &&
                   !memcmp(mlstack_engine_logits(e, i), all + (size_t)(32 + i) * V, sizeof(float) * (size_t)V),
               "%s: position %d after a rewind to 32 differs", name, 32 + i);
from_zero:
    CHECK(mlstack_engine_seq_rewind(e, seq, 0) == MLSTACK_OK);
    for (i = 0; i < 8; i++) rows[i].seq = seq, rows[i].pos = i, rows[i].token = ids[i], rows[i].want_logits = 1;
    CHECK(mlstack_engine_eval(e, rows, 8) == MLSTACK_OK);
    CHECKF(mlstack_engine_logits(e, 7) &&
               !memcmp(mlstack_engine_logits(e, 7), all + (size_t)7 * V, sizeof(float) * (size_t)V),
           "%s: a rewind to 0 does not start afresh", name);
done:
    free(all);
    mlstack_engine_free(e);
}

static void check_refusals(mlstack_model *m) {
    mlstack_engine_desc ed;
    mlstack_engine *e = NULL;
    mlstack_error err;
    mlstack__json_doc doc;
    mlstack__config c;
    const char *js = "{\"architectures\": [\"Lfm2ForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64, "
                     "\"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"vocab_size\": 16}";
    memset(&ed, 0, sizeof ed);
    ed.n_threads = 2;
    ed.n_ranks = 2;
    CHECK(mlstack_engine_init(m, &ed, &e, &err) == MLSTACK_ERR_UNSUPPORTED && strstr(err.message, "recurrent layers") &&
          strstr(err.message, "one rank only") && strstr(err.message, "gated short convolution"));
    mlstack_engine_free(e);
    CHECK(mlstack__json_parse(&doc, js, strlen(js), "config.json", &err) == MLSTACK_OK);
    CHECK(mlstack__config_parse(&c, doc.root, NULL, "config.json", &err) != MLSTACK_OK &&
          strstr(err.message, "layer_types is required"));
    mlstack__json_free(&doc);
    js = "{\"architectures\": [\"Lfm2ForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64, "
         "\"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"vocab_size\": 16, \"conv_L_cache\": 100000, "
         "\"layer_types\": [\"conv\", \"full_attention\"]}";
    CHECK(mlstack__json_parse(&doc, js, strlen(js), "config.json", &err) == MLSTACK_OK);
    CHECK(mlstack__config_parse(&c, doc.root, NULL, "config.json", &err) == MLSTACK_ERR_LIMIT &&
          strstr(err.message, "conv_L_cache 100000"));
    mlstack__json_free(&doc);
    js = "{\"architectures\": [\"Lfm2ForCausalLM\"], \"hidden_size\": 32, \"intermediate_size\": 64, "
         "\"num_hidden_layers\": 2, \"num_attention_heads\": 2, \"vocab_size\": 16, "
         "\"layer_types\": [\"conv\", \"mamba\"]}";
    CHECK(mlstack__json_parse(&doc, js, strlen(js), "config.json", &err) == MLSTACK_OK);
    CHECK(mlstack__config_parse(&c, doc.root, NULL, "config.json", &err) == MLSTACK_ERR_UNSUPPORTED &&
          strstr(err.message, "layer_types[1]") && strstr(err.message, "\"conv\""));
    mlstack__json_free(&doc);
}

/* A random model of the fixture's config (mlstack_model_open_random, what `mlstack bench --shape`
   runs) has the loaded model's layers: the same kinds and state layout, the same projection
   weights (shapes and biases) and recurrent parameters; its logits are finite and the same bits
   in one prefill, token by token and on 2 threads. */
static void check_random(const char *name, mlstack_model *m, const int32_t *ids) {
    char path[512];
    mlstack_model *r = NULL;
    mlstack_error err;
    mlstack__weight *wm[MLSTACK__MAX_LAYER_WEIGHTS], *wr[MLSTACK__MAX_LAYER_WEIGHTS];
    int l, i, n = 40, V = m->cfg.n_vocab, finite = 1;
    snprintf(path, sizeof path, "%s/%s/config.json", FIX, name);
    if (mlstack_model_open_random(path, MLSTACK_DTYPE_F32, 0, 7, &r, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: random model: %s", name, err.message);
        return;
    }
    for (l = -1; l < m->cfg.n_layers; l++) {
        const mlstack__layer *a = l >= 0 ? &m->layers[l] : NULL, *b = l >= 0 ? &r->layers[l] : NULL;
        int na = mlstack__layer_weights(m, l, wm), nb = mlstack__layer_weights(r, l, wr), same = na == nb;
        for (i = 0; same && i < na; i++)
            same = wm[i]->n_out == wr[i]->n_out && wm[i]->n_in == wr[i]->n_in && !wm[i]->bias == !wr[i]->bias;
        CHECKF(same, "%s: layer %d: random weights differ from the loaded ones (%d vs %d)", name, l, nb, na);
        if (!a) continue;
        CHECKF(a->kind == b->kind && a->state_off == b->state_off && a->kv_layer == b->kv_layer && a->moe == b->moe &&
                   !a->conv_w == !b->conv_w && !a->conv_b == !b->conv_b && !a->ssm_norm == !b->ssm_norm &&
                   !a->ssm_a == !b->ssm_a && !a->attn_norm == !b->attn_norm && !a->ffn_norm == !b->ffn_norm &&
                   !a->expert_bias == !b->expert_bias,
               "%s: layer %d of the random model is not the loaded one's shape", name, l);
    }
    {
        mlstack_engine *e1 = new_engine(r, 1, 0, 0), *e2 = new_engine(r, 2, 0, 0);
        float *all = e1 ? fx_eval_all(e1, ids, n, V, n) : NULL, *one = e1 ? fx_eval_all(e1, ids, n, V, 1) : NULL;
        float *two = e2 ? fx_eval_all(e2, ids, n, V, n) : NULL;
        for (i = 0; all && i < n * V; i++) finite &= isfinite(all[i]) != 0;
        CHECKF(all && one && two && finite && !memcmp(all, one, sizeof(float) * (size_t)n * V) &&
                   !memcmp(all, two, sizeof(float) * (size_t)n * V),
               "%s: the random model's logits are not finite, or differ token by token or on 2 threads", name);
        free(all), free(one), free(two);
        mlstack_engine_free(e1);
        mlstack_engine_free(e2);
    }
    mlstack_model_close(r);
}

/* Quick mode (make check, MLSTACK_TEST_QUICK): a fixture that is a variant of another one listed
   (its name is that one's, "_", and a suffix: mamba2_groups of mamba2) is left out, with a skip
   naming it; make test checks every fixture (the ASan flavour leaves preemption and prompt lookup
   out on the variants, see th_thin). */
static int quick_variant(const char *const *names, int n, const char *name) {
    int i;
    for (i = 0; i < n; i++) {
        size_t k = strlen(names[i]);
        if (strncmp(name, names[i], k) == 0 && name[k] == '_') return 1;
    }
    return 0;
}
int main(void) {
    static const char *const names[] = {TL_HYBRID_FIXTURES};
    int i, n_names = (int)(sizeof names / sizeof names[0]), n_variants = 0;
    for (i = 0; i < n_names; i++) {
        int32_t ids[MAXP];
        int n;
        mlstack_model *m;
        if (getenv("MLSTACK_TEST_QUICK") && quick_variant(names, n_names, names[i])) {
            SKIP("%s: a variant of a fixture checked here, quick mode (MLSTACK_TEST_QUICK; make test checks it)",
                 names[i]);
            continue;
        }
        n = read_ids(names[i], ids, MAXP);
        m = open_model(names[i]);
        CHECKF(n >= 120, "%s: %d prompt ids", names[i], n);
        if (!m || n < 120) continue;
        check_prefill_decode(names[i], i, m, ids, n);
        check_radix(names[i], i, m, ids, n);
        if (th_thin && quick_variant(names, n_names, names[i])) {
            n_variants++;
        } else {
            check_spec(names[i], m, ids, n);
            check_preempt(names[i], m, ids, n);
        }
        check_rewind(names[i], m, ids);
        check_random(names[i], m, ids);
        if (i == 0) check_refusals(m);
        mlstack_model_close(m);
    }
    if (n_variants)
        SKIP("preemption and prompt lookup on the %d variant fixtures: ASan build (the plain flavour runs them)",
             n_variants);
    CHECKF(spec_accepted > 0, "no draft was ever accepted: the roll back after a partial acceptance went untested");
    return tl_finish();
}
