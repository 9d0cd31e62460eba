/* The serving path (sections KVCACHE and SCHEDULER) on the tiny fixture models:
   - equality with the single-sequence path (eval and mlstack_generate), bit for bit;
   - batch invariance: tokens and logits bit-identical alone vs batched with 1..16 others, for
     step budgets (prefill chunks) 1..64, 1 and 2 threads, prefixes from the cache or computed;
   - pressure: a KV pool of a few pages and 50 requests, all complete as they do alone; one that
     cannot fit alone is rejected;
   - cancellation mid-prefill and mid-decode returns every page; stop strings across tokens;
   - the radix tree under thousands of random operations against a reference model. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"

#include <math.h>

#define MAXN 48
#define GEN 10
static mlstack_model *M;
static int V;

typedef struct ref {
    int32_t prompt[128];
    int n_prompt;
    mlstack_sampler_desc sd;
    int32_t toks[GEN];
    int n_toks;
    float *logits; /* GEN * V */
} ref;
static ref R[MAXN];

typedef struct got {
    int n_logits;
    float *logits;
} got;
static got G[MAXN];

static void on_logits(void *user, uint64_t id, const float *l, int n) {
    got *g = (got *)user;
    (void)id;
    if (g->n_logits < GEN) memcpy(g->logits + (size_t)g->n_logits * n, l, sizeof(float) * (size_t)n);
    g->n_logits++;
}

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(uint32_t n) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

/* An engine over M for these tests (up to 17 sequences); with speculative decoding in `mode` (k draft
   tokens from `draft` for MLSTACK_SPEC_DRAFT), or none. */
static mlstack_engine *spec_engine(mlstack_spec_mode mode, mlstack_model *draft, int k, int step_tokens,
                                   int page_tokens, uint64_t kv_mem, int threads) {
    mlstack_engine_desc ed;
    mlstack_engine *e;
    mlstack_error err;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = threads;
    ed.step_tokens = step_tokens;
    ed.kv_page_tokens = page_tokens;
    ed.kv_mem = kv_mem;
    ed.max_seqs = 17;
    ed.spec = mode;
    ed.spec_draft = draft;
    ed.spec_tokens = k;
    if (mlstack_engine_init(M, &ed, &e, &err) != MLSTACK_OK) {
        printf("engine: %s\n", err.message);
        exit(1);
    }
    return e;
}

static mlstack_engine *engine(int threads, int step_tokens, int page_tokens, uint64_t kv_mem) {
    return spec_engine(MLSTACK_SPEC_NONE, NULL, 0, step_tokens, page_tokens, kv_mem, threads);
}

static mlstack_request_desc desc_of(int i) {
    mlstack_request_desc d;
    memset(&d, 0, sizeof d);
    d.prompt = R[i].prompt;
    d.n_prompt = R[i].n_prompt;
    d.sampler = R[i].sd;
    d.max_tokens = GEN;
    d.ignore_eos = 1;
    d.on_logits = on_logits;
    d.user = &G[i];
    return d;
}

/* Runs requests idx[0..n) together; checks tokens and logits against the references. */
static void run_batch(mlstack_engine *e, const int *idx, int n, const char *what) {
    uint64_t ids[MAXN];
    int k, active = 1, bad = 0;
    for (k = 0; k < n; k++) {
        mlstack_request_desc d = desc_of(idx[k]);
        G[idx[k]].n_logits = 0;
        CHECK(mlstack_engine_submit(e, &d, &ids[k], NULL) == MLSTACK_OK);
    }
    while (active) CHECK(mlstack_engine_step(e, &active) == MLSTACK_OK);
    for (k = 0; k < n; k++) {
        mlstack_request_status st;
        int32_t toks[GEN];
        ref *r = &R[idx[k]];
        CHECK(mlstack_engine_poll(e, ids[k], &st, toks, GEN) == MLSTACK_OK);
        if (st.state != MLSTACK_REQUEST_DONE || st.n_generated != r->n_toks ||
            memcmp(toks, r->toks, sizeof(int32_t) * GEN) || G[idx[k]].n_logits != GEN ||
            memcmp(G[idx[k]].logits, r->logits, sizeof(float) * GEN * (size_t)V))
            bad++;
        mlstack_engine_release(e, ids[k]);
    }
    CHECKF(bad == 0, "%s: %d of %d requests differ from alone", what, bad, n);
}

static void check_pages_back(mlstack_engine *e, const char *what) {
    mlstack_cache_stats st;
    memset(&st, 0, sizeof st);
    mlstack_engine_cache_stats(e, &st);
    CHECKF(st.pages_used == st.pages_cached && st.pages_pinned == 0 && st.n_running == 0,
           "%s: used %d cached %d pinned %d running %d", what, st.pages_used, st.pages_cached, st.pages_pinned,
           st.n_running);
    mlstack_engine_cache_clear(e);
    mlstack_engine_cache_stats(e, &st);
    CHECKF(st.pages_free == st.n_pages, "%s: %d of %d pages free after clearing the cache", what, st.pages_free,
           st.n_pages);
}

static int count;
static int collect(void *user, int32_t t) {
    if (count < GEN) ((int32_t *)user)[count++] = t;
    return 0;
}

static void references(void) {
    mlstack_engine *e = engine(1, 0, 16, 0);
    int i, j, t;
    int32_t shared[64];
    for (i = 0; i < 64; i++) shared[i] = (int32_t)rnd((uint32_t)V);
    for (i = 0; i < MAXN; i++) {
        ref *r = &R[i];
        mlstack_batch_row rows[128];
        mlstack_generate_desc gd;
        int32_t seq, gen[GEN];
        int pre = i % 3 == 0 ? 0 : (i % 3 == 1 ? 13 : 40); /* shared prefixes of several lengths */
        r->n_prompt = pre + 2 + (int)rnd(30);
        for (j = 0; j < r->n_prompt; j++) r->prompt[j] = j < pre ? shared[j] : (int32_t)rnd((uint32_t)V);
        memset(&r->sd, 0, sizeof r->sd);
        if (i % 2) {
            r->sd.temperature = 0.9f;
            r->sd.top_k = 40;
            r->sd.seed = (uint64_t)i * 7 + 1;
            r->sd.repeat_penalty = 1.1f;
        }
        r->logits = (float *)malloc(sizeof(float) * GEN * (size_t)V);
        G[i].logits = (float *)malloc(sizeof(float) * GEN * (size_t)V);
        /* the single-sequence path: mlstack_generate for tokens, eval for logits */
        memset(&gd, 0, sizeof gd);
        CHECK(mlstack_engine_seq_new(e, &seq) == MLSTACK_OK);
        gd.seq = seq;
        gd.prompt = r->prompt;
        gd.n_prompt = r->n_prompt;
        gd.max_tokens = GEN;
        gd.sampler = &r->sd;
        gd.ignore_eos = 1;
        count = 0;
        gd.on_token = collect;
        gd.user = gen;
        CHECK(mlstack_generate(e, &gd) == MLSTACK_OK && gd.n_generated == GEN);
        mlstack_engine_seq_free(e, seq);
        memcpy(r->toks, gen, sizeof gen);
        r->n_toks = GEN;
        CHECK(mlstack_engine_seq_new(e, &seq) == MLSTACK_OK);
        for (j = 0; j < r->n_prompt; j++) {
            rows[j].seq = seq, rows[j].pos = j, rows[j].token = r->prompt[j],
            rows[j].want_logits = j == r->n_prompt - 1;
        }
        CHECK(mlstack_engine_eval(e, rows, r->n_prompt) == MLSTACK_OK);
        memcpy(r->logits, mlstack_engine_logits(e, r->n_prompt - 1), sizeof(float) * (size_t)V);
        for (t = 1; t < GEN; t++) {
            rows[0].pos = r->n_prompt + t - 1, rows[0].token = gen[t - 1], rows[0].want_logits = 1;
            CHECK(mlstack_engine_eval(e, rows, 1) == MLSTACK_OK);
            memcpy(r->logits + (size_t)t * V, mlstack_engine_logits(e, 0), sizeof(float) * (size_t)V);
        }
        mlstack_engine_seq_free(e, seq);
    }
    mlstack_engine_free(e);
}

/* Alone (one request per engine) and batched in every configuration. */
static void test_invariance(void) {
    int idx[MAXN], i, k, threads, sti;
    static const int steps[] = {1, 5, 16, 64};
    char what[128];
    if (TL_TSAN)
        SKIP("ThreadSanitizer: the one-thread invariance runs (no races to find; the other flavours run them)");
    for (threads = 1 + TL_TSAN; threads <= 2; threads++) {
        mlstack_engine *e = engine(threads, 0, 4, 0);
        for (i = 0; i < MAXN; i++) {
            snprintf(what, sizeof what, "alone %d, %d threads", i, threads);
            mlstack_engine_cache_clear(e);
            run_batch(e, &i, 1, what);
        }
        mlstack_engine_free(e);
    }
    for (sti = 0; sti < 4; sti++) {
        for (threads = 1 + TL_TSAN; threads <= 2; threads++) {
            mlstack_engine *e = engine(threads, steps[sti], sti % 2 ? 4 : 16, 0);
            mlstack_cache_stats st;
            memset(&st, 0, sizeof st);
            for (k = 2; k <= 17; k += (threads == 1 ? 3 : 5)) {
                for (i = 0; i < k; i++) { /* distinct requests: each has its own logits buffer */
                    int j;
                    do {
                        idx[i] = (int)rnd(MAXN);
                        for (j = 0; j < i && idx[j] != idx[i]; j++) {}
                    } while (j < i);
                }
                snprintf(what, sizeof what, "%d together, step %d, %d threads", k, steps[sti], threads);
                run_batch(e, idx, k, what); /* later rounds find earlier prefixes in the cache */
            }
            mlstack_engine_cache_stats(e, &st);
            CHECKF(st.hit_tokens > 0, "step %d: no cache hits (%llu)", steps[sti], (unsigned long long)st.hit_tokens);
            check_pages_back(e, what);
            mlstack_engine_free(e);
        }
    }
}

/* A pool of a few pages: 50 requests that each fit alone all complete as alone, with
   eviction and preemption; one that cannot fit alone is rejected with a clear error. */
static void test_pressure(void) {
    mlstack_engine *e;
    mlstack_engine_desc ed;
    mlstack_error err;
    mlstack_request_desc d;
    mlstack_cache_stats st = {0};
    uint64_t ids[50], id;
    int32_t big[200];
    int idx[50], i, active = 1, bad = 0, page_bytes;
    const mlstack__config *c = &M->cfg;
    page_bytes = c->n_layers * 2 * 4 * c->n_kv_heads * c->head_dim * 2; /* 4 tokens, f16 */
    memset(&ed, 0, sizeof ed);
    ed.n_threads = 1;
    ed.kv_page_tokens = 4;
    ed.kv_mem = (uint64_t)page_bytes * 20; /* 20 pages: 80 positions */
    ed.max_seqs = 8;
    ed.step_tokens = 24;
    CHECK(mlstack_engine_init(M, &ed, &e, &err) == MLSTACK_OK);
    for (i = 0; i < 50; i++) {
        do idx[i] = (int)rnd(MAXN);
        while (R[idx[i]].n_prompt + GEN - 1 > 80);
        d = desc_of(idx[i]);
        G[idx[i]].n_logits = 0;
        CHECK(mlstack_engine_submit(e, &d, &ids[i], NULL) == MLSTACK_OK);
    }
    for (i = 0; i < 200; i++) big[i] = i % V;
    memset(&d, 0, sizeof d);
    d.prompt = big;
    d.n_prompt = 90;
    CHECK(mlstack_engine_submit(e, &d, &id, &err) == MLSTACK_ERR_LIMIT);
    CHECKF(strstr(err.message, "KV pages") != NULL, "rejection message: %s", err.message);
    d.n_prompt = 60;
    d.max_tokens = 30;
    CHECK(mlstack_engine_submit(e, &d, &id, &err) == MLSTACK_ERR_LIMIT);
    while (active) CHECK(mlstack_engine_step(e, &active) == MLSTACK_OK);
    for (i = 0; i < 50; i++) {
        mlstack_request_status s;
        int32_t toks[GEN];
        CHECK(mlstack_engine_poll(e, ids[i], &s, toks, GEN) == MLSTACK_OK);
        if (s.state != MLSTACK_REQUEST_DONE || s.result != MLSTACK_OK || s.n_generated != GEN ||
            memcmp(toks, R[idx[i]].toks, sizeof toks))
            bad++;
        mlstack_engine_release(e, ids[i]);
    }
    CHECKF(bad == 0, "pressure: %d of 50 requests differ from alone", bad);
    mlstack_engine_cache_stats(e, &st);
    CHECKF(st.preemptions > 0 && st.pages_evicted > 0 && st.rejected == 2,
           "pressure: preemptions %llu evicted %llu rejected %llu", (unsigned long long)st.preemptions,
           (unsigned long long)st.pages_evicted, (unsigned long long)st.rejected);
    check_pages_back(e, "pressure");
    mlstack_engine_free(e);
}

static int stop_after_text(void *user, uint64_t id, int32_t tok, const char *text, size_t len) {
    char *out = (char *)user;
    (void)id, (void)tok;
    strncat(out, text, len);
    return 0;
}

/* Cancellation mid-prefill and mid-decode; stop strings across token boundaries. */
static void test_cancel_and_stop(void) {
    mlstack_engine *e = engine(2, 8, 4, 0);
    mlstack_request_desc d;
    mlstack_request_status st;
    uint64_t a, b;
    int32_t long_prompt[120], toks[GEN];
    int i, active;
    char buf[40000], out[4096] = "", stop[16];
    mlstack_tokenizer *tok;
    mlstack_error err;
    size_t n = 0;
    for (i = 0; i < 120; i++) long_prompt[i] = (int32_t)rnd((uint32_t)V);
    memset(&d, 0, sizeof d);
    d.prompt = long_prompt;
    d.n_prompt = 120;
    d.max_tokens = 50;
    d.ignore_eos = 1;
    d.n_prompt = 9;
    CHECK(mlstack_engine_submit(e, &d, &b, NULL) == MLSTACK_OK);
    for (i = 0; i < 3; i++) CHECK(mlstack_engine_step(e, NULL) == MLSTACK_OK);
    d.n_prompt = 120;
    CHECK(mlstack_engine_submit(e, &d, &a, NULL) == MLSTACK_OK);
    for (i = 0; i < 4; i++) CHECK(mlstack_engine_step(e, NULL) == MLSTACK_OK);
    CHECK(mlstack_engine_poll(e, a, &st, NULL, 0) == MLSTACK_OK && st.state == MLSTACK_REQUEST_RUNNING &&
          st.n_generated == 0);
    CHECK(mlstack_engine_poll(e, b, &st, NULL, 0) == MLSTACK_OK && st.n_generated > 3); /* b decodes while a prefills */
    CHECK(mlstack_engine_cancel(e, a) == MLSTACK_OK); /* mid-prefill */
    CHECK(mlstack_engine_step(e, NULL) == MLSTACK_OK);
    CHECK(mlstack_engine_cancel(e, b) == MLSTACK_OK); /* mid-decode */
    CHECK(mlstack_engine_step(e, &active) == MLSTACK_OK && active == 0);
    CHECK(mlstack_engine_poll(e, a, &st, NULL, 0) == MLSTACK_OK && st.finish == MLSTACK_FINISH_CANCELLED);
    CHECK(mlstack_engine_poll(e, b, &st, NULL, 0) == MLSTACK_OK && st.finish == MLSTACK_FINISH_CANCELLED &&
          st.result == MLSTACK_ERR_CANCELLED && st.n_generated > 0 && st.n_generated < 50);
    CHECK(mlstack_engine_cancel(e, b) == MLSTACK_ERR_STATE);
    CHECK(mlstack_engine_release(e, a) == MLSTACK_OK && mlstack_engine_release(e, b) == MLSTACK_OK);
    CHECK(mlstack_engine_poll(e, a, &st, NULL, 0) == MLSTACK_ERR_NOT_FOUND);
    check_pages_back(e, "cancel");
    /* released while running: cancelled and freed by the engine */
    CHECK(mlstack_engine_submit(e, &d, &a, NULL) == MLSTACK_OK);
    CHECK(mlstack_engine_step(e, NULL) == MLSTACK_OK);
    CHECK(mlstack_engine_release(e, a) == MLSTACK_OK);
    do CHECK(mlstack_engine_step(e, &active) == MLSTACK_OK);
    while (active);
    check_pages_back(e, "release");

    /* stop strings: a tokenizer whose token i reads "x%03x", joined by spaces */
    n += (size_t)sprintf(buf + n, "{\"model\":{\"type\":\"BPE\",\"vocab\":{");
    for (i = 0; i < V; i++) n += (size_t)sprintf(buf + n, "%s\"x%03x\":%d", i ? "," : "", i, i);
    n += (size_t)sprintf(buf + n, "},\"merges\":[]}}");
    CHECK(mlstack_tokenizer_load(buf, n, NULL, 0, &tok, &err) == MLSTACK_OK);
    M->tok = tok;
    {
        const char *stops[1];
        d = desc_of(0);
        d.on_logits = NULL;
        d.on_token = stop_after_text;
        d.user = out;
        CHECK(mlstack_engine_complete(e, &d, &st, toks, GEN, NULL) == MLSTACK_OK && st.n_generated == GEN);
        CHECK(memcmp(toks, R[0].toks, sizeof toks) == 0);
        /* last two characters of token 3 and the first two of token 4 */
        snprintf(stop, sizeof stop, "%02x x%c", (unsigned)R[0].toks[3] & 0xFF,
                 "0123456789abcdef"[(R[0].toks[4] >> 8) & 0xF]);
        {
            char expect[4096] = "", *hit;
            strcpy(expect, out);
            hit = strstr(expect, stop);
            CHECKF(hit != NULL, "stop %s not in %s", stop, out);
            if (hit) *hit = 0;
            out[0] = 0;
            stops[0] = stop;
            d.stop_strings = stops;
            d.n_stop_strings = 1;
            CHECK(mlstack_engine_complete(e, &d, &st, toks, GEN, NULL) == MLSTACK_OK);
            CHECKF(st.finish == MLSTACK_FINISH_STOP && strcmp(out, expect) == 0,
                   "stop string: finish %d, text [%s] expected [%s]", (int)st.finish, out, expect);
            CHECKF(st.n_generated <= 5, "stop string: %d tokens", st.n_generated);
        }
    }
    M->tok = NULL;
    mlstack_tokenizer_close(tok);
    check_pages_back(e, "stop");
    mlstack_engine_free(e);
}

/* ---- radix tree fuzz against a reference model ---- */
#define FP 2 /* page tokens */
#define FSEQ 6
#define FLEN 24
typedef struct fseq {
    int live;
    int32_t toks[FLEN];
    int n_toks;
    int32_t pages[FLEN / FP];
    int n_pages;
    mlstack__rnode *pin;
} fseq;
static fseq F[FSEQ];
static uint64_t refset[4096]; /* hashes of cached page-prefixes */
static int n_refset;

static uint64_t prefix_hash(const int32_t *t, int n_pages) {
    uint64_t h = 1469598103934665603ull;
    int i;
    for (i = 0; i < n_pages * FP; i++) h = (h ^ (uint64_t)(t[i] + 1)) * 1099511628211ull;
    return h ^ (uint64_t)n_pages;
}
static int in_refset(uint64_t h) {
    int i;
    for (i = 0; i < n_refset; i++)
        if (refset[i] == h) return 1;
    return 0;
}

static int tree_fail;
/* Walks the tree: checks structure, counts references per page, collects prefix hashes. */
static void walk(mlstack__kv *kv, mlstack__rnode *n, int32_t *path, int depth, int *refs, uint64_t *hs, int *nh,
                 int *nodes, int *cached, int *pinned) {
    mlstack__rnode *c, *d;
    int i;
    for (c = n->child; c; c = c->next) {
        int locks = 0, j;
        if (c->parent != n || c->n_pages < 1) tree_fail++;
        for (d = c->next; d; d = d->next)
            if (!memcmp(d->tokens, c->tokens, sizeof(int32_t) * FP))
                tree_fail++; /* siblings differ in their first page */
        (*nodes)++;
        *cached += c->n_pages;
        if (c->lock) *pinned += c->n_pages;
        if (c->lock < 0) tree_fail++;
        for (i = 0; i < c->n_pages; i++) {
            memcpy(path + (depth + i) * FP, c->tokens + i * FP, sizeof(int32_t) * FP);
            refs[c->pages[i]]++;
            hs[(*nh)++] = prefix_hash(path, depth + i + 1);
            /* the page still holds what was computed for this prefix */
            if (memcmp(kv->data + (size_t)c->pages[i] * kv->page_elems * kv->esize, &hs[*nh - 1], 8)) tree_fail++;
        }
        /* lock = running sequences pinned at or below this node */
        for (j = 0; j < FSEQ; j++) {
            for (d = F[j].live ? F[j].pin : NULL; d && d != n; d = d->parent)
                if (d == c) locks++;
        }
        if (locks != c->lock) tree_fail++;
        walk(kv, c, path, depth + c->n_pages, refs, hs, nh, nodes, cached, pinned);
    }
}

static int check_all(mlstack__kv *kv, uint64_t *hs, int *nh) {
    static int refs[1024], onfree[1024];
    int32_t path[FLEN * 64];
    int i, j, nodes = 0, cached = 0, pinned = 0, bad = 0;
    memset(refs, 0, sizeof refs);
    memset(onfree, 0, sizeof onfree);
    *nh = 0;
    tree_fail = 0;
    walk(kv, &kv->radix.root, path, 0, refs, hs, nh, &nodes, &cached, &pinned);
    for (i = 0; i < FSEQ; i++)
        for (j = 0; F[i].live && j < F[i].n_pages; j++) refs[F[i].pages[j]]++;
    for (i = 0; i < kv->n_free; i++) onfree[kv->free_stack[i]]++;
    for (i = 0; i < kv->n_pages; i++) {
        if (refs[i] != kv->ref[i] || kv->ref[i] < 0) bad++; /* counts match owners, never negative */
        if ((kv->ref[i] == 0) != (onfree[i] == 1) || onfree[i] > 1) bad++; /* free exactly when unowned, once */
    }
    if (nodes != kv->radix.n_nodes || cached != kv->radix.n_cached || pinned != kv->radix.n_pinned) bad++;
    if (kv->n_pages - kv->n_free > kv->n_pages) bad++;
    for (i = 0; i < *nh; i++)
        if (!in_refset(hs[i])) bad++; /* nothing cached that was never inserted */
    return bad + tree_fail;
}

static void test_radix_fuzz(void) {
    mlstack_engine *e;
    mlstack__kv *kv;
    static uint64_t hs[4096];
    int nh, op, fails = 0, matches = 0, evictions = 0;
    const mlstack__config *c = &M->cfg;
    uint64_t page_bytes = (uint64_t)c->n_layers * 2 * FP * c->n_kv_heads * c->head_dim * 2;
    e = engine(1, 0, FP, page_bytes * 40);
    kv = &e->kv;
    for (op = 0; op < 6000; op++) {
        int s = (int)rnd(FSEQ), what = (int)rnd(10), i, j;
        fseq *f = &F[s];
        if (!f->live && what < 6) { /* start: match, pin, attach, then take pages for the rest */
            int src = (int)rnd(FSEQ), keep, m, expect = 0;
            mlstack__rnode *node;
            keep = F[src].n_toks ? (int)rnd((uint32_t)F[src].n_toks + 1) : 0;
            memcpy(f->toks, F[src].toks, sizeof(int32_t) * (size_t)keep); /* often a shared prefix */
            f->n_toks = keep + 1 + (int)rnd(FLEN - 1);
            if (f->n_toks > FLEN) f->n_toks = FLEN;
            for (i = keep; i < f->n_toks; i++) f->toks[i] = (int32_t)rnd(3);
            for (i = 1; i <= (f->n_toks - 1) / FP; i++)
                if (in_refset(prefix_hash(f->toks, i))) expect = i;
                else
                    break;
            m = mlstack__radix_match(kv, f->toks, 0, (f->n_toks - 1) / FP, &node);
            if (m != expect) fails++;
            matches++;
            mlstack__radix_lock(kv, node, +1);
            f->n_pages = mlstack__radix_path_pages(node, f->pages);
            for (i = 0; i < f->n_pages; i++) kv->ref[f->pages[i]]++;
            f->pin = node;
            f->live = 1;
            j = (f->n_toks + FP - 1) / FP;
            if (mlstack__radix_evict(kv, j - f->n_pages) < j - f->n_pages) { /* no room: give up (cancel) */
                evictions++;
                for (i = 0; i < f->n_pages; i++) mlstack__kv_page_put(kv, f->pages[i]);
                mlstack__radix_lock(kv, node, -1);
                f->live = 0;
            } else {
                while (f->n_pages < j) {
                    int32_t p = mlstack__kv_page_take(kv);
                    uint64_t h = prefix_hash(f->toks, f->n_pages + 1);
                    memcpy(kv->data + (size_t)p * kv->page_elems * kv->esize, &h, 8); /* "compute" the page */
                    f->pages[f->n_pages++] = p;
                }
            }
        } else if (f->live && what < 8) { /* finish: insert full pages, unpin, release */
            int full = f->n_toks / FP;
            CHECK(mlstack__radix_insert(kv, f->toks, 0, f->pages, full) == 0);
            for (i = 1; i <= full; i++)
                if (!in_refset(prefix_hash(f->toks, i))) refset[n_refset++] = prefix_hash(f->toks, i);
            for (i = 0; i < f->n_pages; i++) mlstack__kv_page_put(kv, f->pages[i]);
            mlstack__radix_lock(kv, f->pin, -1);
            f->live = 0;
        } else if (f->live) { /* cancel: release without inserting */
            for (i = 0; i < f->n_pages; i++) mlstack__kv_page_put(kv, f->pages[i]);
            mlstack__radix_lock(kv, f->pin, -1);
            f->live = 0;
        } else { /* evict some */
            mlstack__radix_evict(kv, kv->n_free + 1 + (int)rnd(6));
            evictions++;
        }
        if (check_all(kv, hs, &nh)) fails++;
        /* what running sequences attached is pinned: still cached, whatever was evicted */
        for (i = 0; i < FSEQ; i++) {
            int32_t tmp[FLEN];
            int d = F[i].live ? mlstack__radix_path_pages(F[i].pin, tmp) : 0;
            if (F[i].live &&
                (mlstack__radix_peek(kv, F[i].toks, 0, d) != d || memcmp(tmp, F[i].pages, sizeof(int32_t) * (size_t)d)))
                fails++;
        }
        /* evictions remove entries: the reference follows the tree (which check_all showed to be a subset) */
        memcpy(refset, hs, sizeof(uint64_t) * (size_t)nh);
        n_refset = nh;
        if (fails) break;
    }
    CHECKF(fails == 0, "radix fuzz: first failure at operation %d", op);
    CHECKF(matches > 1000 && evictions > 100 && kv->radix.n_evicted > 0, "radix fuzz: %d matches, %d evictions",
           matches, evictions);
    for (op = 0; op < FSEQ; op++)
        if (F[op].live) {
            int i;
            for (i = 0; i < F[op].n_pages; i++) mlstack__kv_page_put(kv, F[op].pages[i]);
            mlstack__radix_lock(kv, F[op].pin, -1);
            F[op].live = 0;
        }
    mlstack__radix_evict(kv, kv->n_pages);
    CHECK(kv->n_free == kv->n_pages && kv->radix.n_nodes == 0);
    mlstack_engine_free(e);
}

/* ---- speculative decoding ---- */

/* Greedy requests with drafts (prompt lookup, the model itself as its draft: every draft
   accepted, a Q4_1 copy, another model of the same vocabulary): tokens and every logits row
   bit-identical to decoding alone without drafts, alone and batched, with cache hits, small
   pages and budgets; every page comes back. Sampled requests run beside them to completion. */
static void test_spec(void) {
    mlstack_model *self_q = NULL, *other = NULL;
    mlstack_model_desc md;
    mlstack_error err;
    int mode, i, greedy[MAXN], n_greedy = 0, idx[MAXN];
    char what[160];
    memset(&md, 0, sizeof md);
    md.path = "tests/fixtures/models/llama";
    md.quant = MLSTACK_DTYPE_Q4_1;
    CHECK(mlstack_model_open(&md, &self_q, &err) == MLSTACK_OK);
    memset(&md, 0, sizeof md);
    md.path = "tests/fixtures/models/llama_linear_rope";
    CHECK(mlstack_model_open(&md, &other, &err) == MLSTACK_OK);
    for (i = 0; i < MAXN; i++)
        if (R[i].sd.temperature == 0) greedy[n_greedy++] = i;
    for (mode = 0; mode < 4; mode++) {
        static const char *names[] = {"ngram", "draft=itself", "draft=q4_1", "draft=other"};
        mlstack_model *dm = mode == 1 ? M : mode == 2 ? self_q : mode == 3 ? other : NULL;
        mlstack_spec_mode sm = mode ? MLSTACK_SPEC_DRAFT : MLSTACK_SPEC_NGRAM;
        int cfg;
        for (cfg = 0; cfg < (mode == 0 || mode == 2 ? 3 : 1); cfg++) { /* every configuration for ngram and q4_1 */
            int k = cfg == 0 ? 4 : cfg == 1 ? 1 : 7, step = cfg == 2 ? 9 : 0, pt = cfg == 1 ? 16 : 4;
            mlstack_engine *e;
            mlstack_cache_stats st;
            if (TL_TSAN && cfg == 1) { /* the one-thread configuration */
                SKIP("ThreadSanitizer: spec %s k 1 on one thread (the other flavours run it)", names[mode]);
                continue;
            }
            e = spec_engine(sm, dm, k, step, pt, 0, cfg == 1 ? 1 : 2);
            for (i = cfg; i < n_greedy; i += 6) {
                snprintf(what, sizeof what, "spec %s k %d alone %d", names[mode], k, greedy[i]);
                run_batch(e, &greedy[i], 1, what);
            }
            snprintf(what, sizeof what, "spec %s k %d, %d together", names[mode], k, n_greedy < 17 ? n_greedy : 17);
            run_batch(e, greedy, n_greedy < 17 ? n_greedy : 17, what);
            { /* distinct requests in another order, mostly from the cache now */
                int n = 0, j, q;
                for (j = 0; j < 12; j++) {
                    int c = greedy[(j * 5 + 3) % n_greedy];
                    for (q = 0; q < n && idx[q] != c; q++) {}
                    if (q == n) idx[n++] = c;
                }
                i = n;
            }
            snprintf(what, sizeof what, "spec %s k %d, again", names[mode], k);
            run_batch(e, idx, i, what);
            memset(&st, 0, sizeof st);
            mlstack_engine_cache_stats(e, &st);
            CHECKF(st.hit_tokens > 0, "%s: no cache hits", what);
            CHECKF(st.spec_drafted > 0 && (mode == 0 || mode == 3 || st.spec_accepted > 0),
                   "%s: drafted %llu accepted %llu", what, (unsigned long long)st.spec_drafted,
                   (unsigned long long)st.spec_accepted);
            if (mode == 1) /* the model drafting for itself: every draft is the model's own token */
                CHECKF(st.spec_accepted == st.spec_drafted, "%s: drafted %llu accepted %llu", what,
                       (unsigned long long)st.spec_drafted, (unsigned long long)st.spec_accepted);
            if (cfg == 0)
                printf("spec %-13s k %d: drafted %llu, accepted %llu (%.0f%%), %llu steps\n", names[mode], k,
                       (unsigned long long)st.spec_drafted, (unsigned long long)st.spec_accepted,
                       st.spec_drafted ? 100.0 * (double)st.spec_accepted / (double)st.spec_drafted : 0.0,
                       (unsigned long long)st.steps);
            { /* sampled requests beside greedy ones: they complete (their tokens follow p, see test_spec_dist) */
                uint64_t ids[8];
                int active = 1, n = 0;
                for (i = 0; i < MAXN && n < 8; i++) {
                    mlstack_request_desc d = desc_of(i);
                    d.on_logits = NULL;
                    if (mlstack_engine_submit(e, &d, &ids[n], NULL) == MLSTACK_OK) n++;
                }
                while (active) CHECK(mlstack_engine_step(e, &active) == MLSTACK_OK);
                for (i = 0; i < n; i++) {
                    mlstack_request_status rs;
                    CHECK(mlstack_engine_poll(e, ids[i], &rs, NULL, 0) == MLSTACK_OK);
                    CHECKF(rs.state == MLSTACK_REQUEST_DONE && rs.finish == MLSTACK_FINISH_LENGTH &&
                               rs.n_generated == GEN,
                           "%s: sampled request %d: finish %d, %d tokens", what, i, (int)rs.finish, rs.n_generated);
                    mlstack_engine_release(e, ids[i]);
                }
            }
            check_pages_back(e, what);
            mlstack_engine_free(e);
        }
    }
    { /* a pool of a few pages: preemption and eviction with drafts in flight */
        const mlstack__config *c = &M->cfg;
        uint64_t page_bytes = (uint64_t)c->n_layers * 2 * 4 * (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim * 2;
        mlstack_engine *e = spec_engine(MLSTACK_SPEC_DRAFT, self_q, 4, 24, 4, page_bytes * 20, 1);
        for (i = 0; i < 30; i++) {
            do idx[i] = greedy[rnd((uint32_t)n_greedy)];
            while (R[idx[i]].n_prompt + GEN - 1 > 80);
        }
        for (i = 0; i < 30; i++) { /* run_batch needs distinct requests: rounds of 6 */
            int j, n = 0, b[6];
            for (j = i; j < 30 && n < 6; j++) {
                int q;
                for (q = 0; q < n && b[q] != idx[j]; q++) {}
                if (q == n) b[n++] = idx[j];
            }
            run_batch(e, b, n, "spec under page pressure");
            i += 5;
        }
        check_pages_back(e, "spec under page pressure");
        mlstack_engine_free(e);
    }
    { /* bad descriptors */
        mlstack_engine_desc ed;
        mlstack_engine *e = NULL;
        memset(&ed, 0, sizeof ed);
        ed.spec = MLSTACK_SPEC_DRAFT;
        CHECK(mlstack_engine_init(M, &ed, &e, &err) == MLSTACK_ERR_INVALID_ARG && e == NULL);
        memset(&md, 0, sizeof md);
        ed.spec_draft = NULL;
        ed.spec = (mlstack_spec_mode)7;
        CHECK(mlstack_engine_init(M, &ed, &e, &err) == MLSTACK_ERR_INVALID_ARG);
        ed.spec = MLSTACK_SPEC_NGRAM;
        ed.spec_tokens = 65;
        CHECK(mlstack_engine_init(M, &ed, &e, &err) == MLSTACK_ERR_INVALID_ARG);
        {
            mlstack_model *q3;
            md.path = "tests/fixtures/models/qwen3"; /* 520 tokens, not 512 */
            CHECK(mlstack_model_open(&md, &q3, &err) == MLSTACK_OK);
            ed.spec = MLSTACK_SPEC_DRAFT;
            ed.spec_tokens = 0;
            ed.spec_draft = q3;
            CHECK(mlstack_engine_init(M, &ed, &e, &err) == MLSTACK_ERR_INVALID_ARG);
            CHECKF(strstr(err.message, "vocabulary") != NULL, "%s", err.message);
            mlstack_model_close(q3);
        }
    }
    mlstack_model_close(self_q);
    mlstack_model_close(other);
}

static void test_spec_ngram(void) {
    int32_t t[] = {5, 6, 7, 8, 9, 5, 6, 7, 1, 2, 5, 6, 7}, out[8];
    int n = mlstack__spec_ngram(t, 13, 3, 8, out);
    /* the latest earlier "5 6 7" is at 5: followed by 1 2 5 6 7 */
    CHECKF(n == 5 && out[0] == 1 && out[1] == 2 && out[4] == 7, "ngram: %d (%d %d)", n, (int)out[0], (int)out[1]);
    CHECK(mlstack__spec_ngram(t, 13, 3, 2, out) == 2 && out[0] == 1 && out[1] == 2);
    { /* no 3- or 2-gram match: no draft, unless the longest n-gram is 1 (then the last token alone) */
        int32_t u[] = {1, 2, 3, 4, 2, 9, 4};
        CHECK(mlstack__spec_ngram(u, 7, 3, 4, out) == 0);
        CHECK(mlstack__spec_ngram(u, 7, 1, 4, out) == 3 && out[0] == 2 && out[1] == 9 && out[2] == 4);
        CHECK(mlstack__spec_ngram(u, 3, 3, 4, out) == 0);
        CHECK(mlstack__spec_ngram(u, 1, 3, 4, out) == 0);
    }
}

/* The emitted token's distribution under rejection sampling, on a vocabulary of 6, against
   p computed here in double from the logits (softmax of logits / T, top-k): Pearson's
   chi-square over N draws must stay below a bound that a correct sampler exceeds with
   probability < 1e-6 (5 degrees of freedom: 35.9), while the draft distribution q itself, the
   answer of a sampler that accepted every draft, scores far above it (checked too, so the test
   can fail). The acceptance rate must match sum_x min(p(x), q(x)) (deterministic drafts:
   sum_x q(x) p(x)) within 6 standard errors. */
static void test_spec_dist(void) {
    static const float logits[6] = {1.0f, 0.2f, -0.5f, 2.0f, 0.0f, 1.4f};
    static const float qs[3][6] = {{0.05f, 0.3f, 0.3f, 0.05f, 0.2f, 0.1f}, /* far from p */
                                   {0.0f, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f}, /* a point mass on the likeliest */
                                   {0.2f, 0.1f, 0.0f, 0.3f, 0.0f, 0.4f}}; /* zero where p is not */
    int qi, topk;
    for (topk = 0; topk <= 4; topk += 4) {
        for (qi = 0; qi < 4; qi++) { /* qi 3: deterministic drafts (draft_probs NULL), draft cycles over ids */
            mlstack_sampler_desc sd;
            mlstack_sampler *s;
            double p[6], sum = 0, chi = 0, chi_q = 0, min_sum = 0, acc_rate, se;
            long cnt[6] = {0}, n_acc = 0, N = 30000, t;
            float q[6];
            int i;
            memset(&sd, 0, sizeof sd);
            sd.temperature = 0.8f;
            sd.top_k = topk;
            sd.seed = 1234 + (uint64_t)qi;
            CHECK(mlstack_sampler_init(&sd, 6, &s) == MLSTACK_OK);
            for (i = 0; i < 6; i++) p[i] = exp((double)logits[i] / 0.8);
            if (topk) { /* keep the 4 largest: drop ids 2 (-0.5) and 4 (0.0) */
                p[2] = p[4] = 0;
            }
            for (i = 0; i < 6; i++) sum += p[i];
            for (i = 0; i < 6; i++) p[i] /= sum;
            for (i = 0; i < 6; i++) q[i] = qi < 3 ? qs[qi][i] : 1.0f / 6;
            /* acceptance: sum min(p, q); a deterministic draft x is accepted with p(x) */
            for (i = 0; i < 6; i++) min_sum += qi < 3 ? (p[i] < q[i] ? p[i] : q[i]) : q[i] * p[i];
            for (t = 0; t < N; t++) {
                int ok = 0, x;
                double u = (double)rnd(1u << 30) / (double)(1u << 30), c = 0;
                int32_t tok;
                for (x = 0; x < 5; x++) { /* the draft: a draw from q (by this test's generator) */
                    c += q[x];
                    if (u < c) break;
                }
                tok = mlstack_sampler_verify(s, logits, x, qi < 3 ? q : NULL, &ok);
                if (tok < 0 || tok >= 6) {
                    CHECKF(0, "verify returned %d", (int)tok);
                    break;
                }
                cnt[tok]++;
                n_acc += ok;
            }
            for (i = 0; i < 6; i++) {
                if (p[i] == 0) {
                    CHECKF(cnt[i] == 0, "top_k %d q %d: token %d outside top-k emitted %ld times", topk, qi, i, cnt[i]);
                    continue;
                }
                chi += ((double)cnt[i] - N * p[i]) * ((double)cnt[i] - N * p[i]) / (N * p[i]);
                chi_q += (N * (double)q[i] - N * p[i]) * (N * (double)q[i] - N * p[i]) / (N * p[i]);
            }
            acc_rate = (double)n_acc / (double)N;
            se = sqrt(min_sum * (1 - min_sum) / (double)N) + 1e-9;
            CHECKF(chi < 35.9, "top_k %d q %d: chi-square %.1f (bound 35.9)", topk, qi, chi);
            CHECKF(chi_q > 35.9 * 10, "top_k %d q %d: control: q scores only %.1f", topk, qi, chi_q);
            CHECKF(fabs(acc_rate - min_sum) < 6 * se || (min_sum == 0 && n_acc == 0),
                   "top_k %d q %d: accepted %.4f, expected %.4f", topk, qi, acc_rate, min_sum);
            mlstack_sampler_free(s);
        }
    }
    { /* mlstack_sampler_probs against the same p; greedy verify is the argmax */
        mlstack_sampler_desc sd;
        mlstack_sampler *s;
        float pr[6];
        int ok = 0;
        memset(&sd, 0, sizeof sd);
        sd.temperature = 0.8f;
        CHECK(mlstack_sampler_init(&sd, 6, &s) == MLSTACK_OK);
        CHECK(mlstack_sampler_probs(s, logits, pr) == MLSTACK_OK);
        CHECKF(fabs(pr[3] - exp(2.0 / 0.8) / (exp(1.0 / 0.8) + exp(0.2 / 0.8) + exp(-0.5 / 0.8) + exp(2.0 / 0.8) + 1 +
                                              exp(1.4 / 0.8))) < 1e-6,
               "probs[3] %g", (double)pr[3]);
        mlstack_sampler_free(s);
        sd.temperature = 0;
        CHECK(mlstack_sampler_init(&sd, 6, &s) == MLSTACK_OK);
        CHECK(mlstack_sampler_verify(s, logits, 3, NULL, &ok) == 3 && ok == 1);
        CHECK(mlstack_sampler_verify(s, logits, 5, NULL, &ok) == 3 && ok == 0);
        CHECK(mlstack_sampler_verify(s, logits, 6, NULL, &ok) == -1);
        mlstack_sampler_free(s);
    }
}

/* logit_bias through submit: the sampler sees logits + bias (greedy: the argmax of the biased
   row, checked against the request's own logits), -INFINITY bans a token, the bias arrays are
   copied at submit (freed before the step here), and bad ids or NaN are refused. */
static void test_logit_bias(void) {
    mlstack_engine *e = engine(1, 0, 16, 0);
    int32_t prompt[6] = {1, 5, 9, 13, 17, 21}, toks[GEN], banned = -1, forced = 7;
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * 2);
    float *vals = (float *)malloc(sizeof(float) * 2), nan_v = NAN;
    mlstack_request_desc d;
    mlstack_request_status st;
    uint64_t id;
    int active = 1, k, ok = 1;
    got g;
    memset(&g, 0, sizeof g);
    g.logits = (float *)malloc(sizeof(float) * GEN * (size_t)V);
    memset(&d, 0, sizeof d);
    d.prompt = prompt, d.n_prompt = 6, d.max_tokens = GEN, d.ignore_eos = 1;
    /* unbiased greedy: its first token gets banned below */
    CHECK(mlstack_engine_submit(e, &d, &id, NULL) == MLSTACK_OK);
    while (active) CHECK(mlstack_engine_step(e, &active) == MLSTACK_OK);
    CHECK(mlstack_engine_poll(e, id, &st, toks, GEN) == MLSTACK_OK && st.n_generated == GEN);
    mlstack_engine_release(e, id);
    banned = toks[0];
    ids[0] = banned, vals[0] = -INFINITY;
    ids[1] = forced, vals[1] = 3.5f;
    d.sampler.bias_ids = ids, d.sampler.bias_values = vals, d.sampler.n_bias = 2;
    d.on_logits = on_logits, d.user = &g;
    CHECK(mlstack_engine_submit(e, &d, &id, NULL) == MLSTACK_OK);
    free(ids), free(vals); /* copied at submit */
    active = 1;
    while (active) CHECK(mlstack_engine_step(e, &active) == MLSTACK_OK);
    CHECK(mlstack_engine_poll(e, id, &st, toks, GEN) == MLSTACK_OK && st.n_generated == GEN && g.n_logits == GEN);
    for (k = 0; k < GEN && k < g.n_logits; k++) { /* each token is the argmax of its biased row */
        const float *l = g.logits + (size_t)k * (size_t)V;
        int j, best = -1;
        float bv = -INFINITY;
        for (j = 0; j < V; j++) {
            float x = j == banned ? -INFINITY : j == forced ? l[j] + 3.5f : l[j];
            if (x > bv) bv = x, best = j;
        }
        ok &= toks[k] == best && toks[k] != banned;
    }
    CHECKF(ok, "logit_bias: every token is the argmax of logits + bias, the banned one never");
    mlstack_engine_release(e, id);
    {
        int32_t bad_id = V;
        float one = 1.0f;
        d.sampler.bias_ids = &bad_id, d.sampler.bias_values = &one, d.sampler.n_bias = 1;
        CHECK(mlstack_engine_submit(e, &d, &id, NULL) == MLSTACK_ERR_INVALID_ARG); /* an id outside */
        bad_id = 3, d.sampler.bias_values = &nan_v;
        CHECK(mlstack_engine_submit(e, &d, &id, NULL) == MLSTACK_ERR_INVALID_ARG); /* NaN */
        d.sampler.n_bias = -1;
        CHECK(mlstack_engine_submit(e, &d, &id, NULL) == MLSTACK_ERR_INVALID_ARG);
    }
    free(g.logits);
    mlstack_engine_free(e);
}

int main(void) {
    mlstack_model_desc md;
    mlstack_error err;
    mlstack_model_info info;
    int i;
    memset(&md, 0, sizeof md);
    md.path = "tests/fixtures/models/llama";
    if (mlstack_model_open(&md, &M, &err) != MLSTACK_OK) {
        printf("open: %s\n", err.message);
        return 1;
    }
    mlstack_model_get_info(M, &info);
    V = info.n_vocab;
    references();
    test_invariance();
    test_pressure();
    test_cancel_and_stop();
    test_radix_fuzz();
    test_spec_ngram();
    test_spec_dist();
    test_spec();
    test_logit_bias();
    for (i = 0; i < MAXN; i++) {
        free(R[i].logits);
        free(G[i].logits);
    }
    mlstack_model_close(M);
    return tl_finish();
}
