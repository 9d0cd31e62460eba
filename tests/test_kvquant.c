/* The quantized KV cache (kv_type_k / kv_type_v Q8_0 and Q4_0, llama.cpp's cache types):
   - stored rows: keys and values written by mlstack__kv_store are the bytes gguf-py's quantizer
     makes of the same rows rotated (tests/fixtures/kvquant, tools/make_kvquant_fixture.py: the
     Walsh-Hadamard rotation in numpy float32), for both types and both places, in a page of two
     kv heads;
   - attention on a quantized cache (mlstack__attend, one and several query rows, GQA) against a
     double-precision reference computed from gguf-py's dequantized rows, within 2e-5; and the
     same bits from every kernel path this build and CPU have as from the scalar one;
   - engines (random weights, head size 64: a Llama shape and an LFM2 hybrid's attention layers),
     for Q8_0, Q4_0 and mixed key/value types: prefill == decode (chunks of 1, 5, 16 and the
     whole prompt; a third of them under ASan+UBSan, TL_KEEP), 1 and 2 threads (1 under
     qemu-user: MLSTACK_TEST_QEMU), batch invariance,
     2 ranks, and a radix cache hit (the cached pages used as stored) all give the same bits;
   - page bytes: Q8_0 keys and values take 34/64 of F16's, Q4_0 18/64;
   - refusals with a reason: a head size that is not a multiple of 32, latent attention. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include "fixture_eval.h"

#define D 64
#define FIXDIR "tests/fixtures/kvquant"

static float rows[64 * D], deq8[64 * D], deq4[64 * D];
static unsigned char q8[64 * 68], q4[64 * 36];
static int n_rows;

static int read_bin(const char *name, void *dst, size_t cap) {
    char path[256];
    size_t len = 0;
    char *b;
    snprintf(path, sizeof path, "%s/%s", FIXDIR, name);
    b = tl_read(path, &len);
    if (!b || len > cap) {
        CHECKF(0, "%s: missing or too large (run tools/make_kvquant_fixture.py)", path);
        free(b);
        return 0;
    }
    memcpy(dst, b, len);
    free(b);
    return (int)len;
}

/* A config of one layer with two kv heads of D and a pool of 8 pages of 16 positions. */
static int kv_make(mlstack__kv *kv, mlstack_kv_type kt, mlstack_kv_type vt, int n_pos) {
    mlstack__config c;
    mlstack_error err;
    memset(&c, 0, sizeof c);
    c.n_layers = 1, c.n_kv_layers = 1, c.n_kv_heads = 2, c.head_dim = D;
    if (mlstack__kv_init(kv, &c, (uint64_t)8 * mlstack__kv_token_bytes(&c, kt, vt) * 16, 16, 1, kt, vt, 2, 1, &err) !=
        MLSTACK_OK) {
        CHECKF(0, "kv_init: %s", err.message);
        return 0;
    }
    kv->seqs[0].active = 1;
    if (mlstack__kv_resize(kv, &kv->seqs[0], n_pos) != 0) {
        CHECK(!"kv_resize");
        return 0;
    }
    kv->seqs[0].len = n_pos;
    return 1;
}

static void check_store(mlstack_kv_type t) {
    const unsigned char *ref = t == MLSTACK_KV_Q8_0 ? q8 : q4;
    size_t rb = t == MLSTACK_KV_Q8_0 ? 68 : 36;
    mlstack__kv kv;
    int i, bad = 0;
    if (!kv_make(&kv, t, t, n_rows)) return;
    CHECK(kv.k_bytes == rb && kv.v_bytes == rb && kv.page_bytes == 16 * 2 * 2 * rb);
    for (i = 0; i < n_rows; i++) /* key i: row i in head i % 2; value: row n - 1 - i */
        mlstack__kv_store(&kv, &kv.seqs[0], 0, i % 2, i, rows + (size_t)i * D, rows + (size_t)(n_rows - 1 - i) * D,
                          mlstack__from_f32);
    for (i = 0; i < n_rows; i++) {
        size_t slot = (size_t)(i % 16), b;
        const unsigned char *kb = mlstack__kv_block(&kv, &kv.seqs[0], 0, 0, i % 2, i) + slot,
                            *v = mlstack__kv_block(&kv, &kv.seqs[0], 0, 1, i % 2, i) + slot * rb;
        unsigned char k[68];
        for (b = 0; b < rb; b++) k[b] = kb[b * 16]; /* keys lie transposed, byte by byte */
        if (memcmp(k, ref + (size_t)i * rb, rb) || memcmp(v, ref + (size_t)(n_rows - 1 - i) * rb, rb)) bad++;
    }
    CHECKF(bad == 0, "%s: %d of %d stored rows differ from gguf-py's quantization",
           t == MLSTACK_KV_Q8_0 ? "q8_0" : "q4_0", bad, n_rows);
    mlstack__kv_free(&kv);
}

/* x (64,) times the orthonormal Hadamard matrix, in double (the reference's rotation). */
static void hd(double *x) {
    int h, i, j;
    for (h = 1; h < 64; h *= 2)
        for (i = 0; i < 64; i += 2 * h)
            for (j = i; j < i + h; j++) {
                double a = x[j], b = x[j + h];
                x[j] = a + b, x[j + h] = a - b;
            }
    for (i = 0; i < 64; i++) x[i] *= 0.125;
}
#define QUANT(t) ((t) == MLSTACK_KV_Q8_0 || (t) == MLSTACK_KV_Q4_0)

/* What row i of type t holds once stored: gguf-py's dequantization (of the rotated row), or the
   f16/bf16 rounding. */
static float stored(mlstack_kv_type t, int i, int d) {
    float x = rows[(size_t)i * D + d];
    if (t == MLSTACK_KV_Q8_0) return deq8[(size_t)i * D + d];
    if (t == MLSTACK_KV_Q4_0) return deq4[(size_t)i * D + d];
    if (t == MLSTACK_KV_F16) return mlstack__f16_to_f32(mlstack__f32_to_f16(x));
    if (t == MLSTACK_KV_BF16) {
        float y;
        mlstack__from_f32(MLSTACK_DTYPE_BF16, &x, &y, 1);
        mlstack__to_f32(MLSTACK_DTYPE_BF16, &y, &y, 1);
        return y;
    }
    return x;
}

#define G 2
#define NQ 3
/* Keys: row j (positions 0 .. n-1), values: row (j + 7) % n, in kv head 1; NQ query rows of G
   heads, row r attending to positions 0 .. n - 1 - 4 r; every kernel path this CPU runs. */
static void check_attend(mlstack_kv_type kt, mlstack_kv_type vt) {
    static const char *caps[] = {"scalar", "avx2", "avx512", "neon"};
    mlstack__kv kv;
    float q[NQ * G * D], out[NQ * G * D], first[NQ * G * D], *scratch;
    int32_t t1[NQ];
    int n = n_rows, i, j, g, d, c, r;
    double worst = 0, top;
    if (!kv_make(&kv, kt, vt, n)) return;
    for (j = 0; j < n; j++)
        mlstack__kv_store(&kv, &kv.seqs[0], 0, 1, j, rows + (size_t)j * D, rows + (size_t)((j + 7) % n) * D,
                          mlstack__from_f32);
    for (i = 0; i < NQ * G * D; i++) q[i] = 4e-4f * rows[(size_t)(3 + i / D) * D + i % D] / (1 + (float)(i % 7));
    for (r = 0; r < NQ; r++) t1[r] = n - 1 - 4 * r;
    scratch = (float *)malloc(sizeof(float) * mlstack__attend_scratch(G, D));
    for (c = 0; c < 4; c++) {
        const mlstack__kernels *k = mlstack__kernels_select(mlstack__isa_parse(caps[c]), 0);
        if (c && k == mlstack__kernels_select(mlstack__isa_parse("scalar"), 0)) continue; /* not here */
        for (r = 0; r < NQ; r++) /* each row alone (decode), then all rows together */
            mlstack__attend(k, out + (size_t)r * G * D, G * D, q + (size_t)r * G * D, G * D, 1, G, &kv, &kv.seqs[0], 0,
                            1, D, 0, t1 + r, 0.125f, 0, NULL, scratch);
        if (c == 0) memcpy(first, out, sizeof out);
        CHECKF(!memcmp(first, out, sizeof out), "k %d v %d: kernels %s give other bits than scalar (one row)", kt, vt,
               k->name);
        mlstack__attend(k, out, G * D, q, G * D, NQ, G, &kv, &kv.seqs[0], 0, 1, D, 0, t1, 0.125f, 0, NULL, scratch);
        CHECKF(!memcmp(first, out, sizeof out), "k %d v %d: kernels %s, %d rows at once: other bits than one at a time",
               kt, vt, k->name, NQ);
    }
    for (r = 0; r < NQ; r++) /* the reference, in double, from the stored (dequantized) values */
        for (g = 0; g < G; g++) {
            double s[64], mx = -1e300, den = 0, o, qv[D];
            for (d = 0; d < D; d++) qv[d] = q[((size_t)r * G + g) * D + d];
            if (QUANT(kt)) hd(qv); /* quantized keys are stored rotated: q . k = Hq . Hk */
            for (j = 0; j <= t1[r]; j++) {
                double a = 0;
                for (d = 0; d < D; d++) a += qv[d] * stored(kt, j, d);
                s[j] = a * 0.125;
                mx = s[j] > mx ? s[j] : mx;
            }
            double ref[D];
            for (j = 0; j <= t1[r]; j++) den += exp(s[j] - mx);
            for (d = 0; d < D; d++) {
                for (o = 0, j = 0; j <= t1[r]; j++) o += exp(s[j] - mx) / den * stored(vt, (j + 7) % n, d);
                ref[d] = o;
            }
            if (QUANT(vt)) hd(ref); /* values stored rotated: the output rotated back */
            for (top = 0, d = 0; d < D; d++) top = fabs(ref[d]) > top ? fabs(ref[d]) : top;
            for (d = 0; d < D; d++) { /* off by a share of the head's largest output */
                double e = fabs(ref[d] - first[((size_t)r * G + g) * D + d]) / top;
                worst = e <= worst ? worst : e; /* NaN stays */
            }
        }
    printf("k %d v %d: attention vs the double reference: %.3g of the largest output\n", kt, vt, worst);
    CHECKF(worst < 1e-5, "k %d v %d: attention off the reference by %.3g of the largest output", kt, vt, worst);
    free(scratch);
    mlstack__kv_free(&kv);
}

static mlstack_model *open_random(const char *cfg) {
    mlstack_model *m = NULL;
    mlstack_error err;
    char path[256];
    snprintf(path, sizeof path, "%s/%s", FIXDIR, cfg);
    if (mlstack_model_open_random(path, MLSTACK_DTYPE_F32, (mlstack_dtype)0, 7, &m, &err) != MLSTACK_OK)
        CHECKF(0, "%s: %s", path, err.message);
    return m;
}

static mlstack_engine *new_engine(mlstack_model *m, mlstack_kv_type kt, mlstack_kv_type vt, int threads, int ranks) {
    mlstack_engine_desc ed;
    mlstack_engine *e = NULL;
    mlstack_error err;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = threads, ed.n_ranks = ranks, ed.n_stages = 1, ed.max_seqs = 4;
    ed.kv_type_k = kt, ed.kv_type_v = vt;
    if (mlstack_engine_init(m, &ed, &e, &err) != MLSTACK_OK) CHECKF(0, "engine k %d v %d: %s", kt, vt, err.message);
    return e;
}

typedef struct rec {
    float *rows;
    int n, V, cap;
} rec;
static void on_logits(void *user, uint64_t id, const float *lg, int V) {
    rec *r = (rec *)user;
    (void)id;
    if (r->n < r->cap) memcpy(r->rows + (size_t)r->n * V, lg, sizeof(float) * (size_t)V);
    r->n++;
}
/* A request of prompt p (n tokens) generating 8; its logits into r (allocated), cached tokens. */
static int run_req(mlstack_engine *e, const int32_t *p, int n, int V, rec *r) {
    mlstack_request_desc d;
    mlstack_request_status st;
    int32_t toks[8];
    memset(&d, 0, sizeof d);
    d.prompt = p, d.n_prompt = n, d.max_tokens = 8, d.ignore_eos = 1, d.on_logits = on_logits, d.user = r;
    r->n = 0, r->V = V, r->cap = 8;
    r->rows = (float *)calloc((size_t)8 * V, sizeof(float));
    if (mlstack_engine_complete(e, &d, &st, toks, 8, NULL) != MLSTACK_OK || r->n != 8) return -1;
    return st.n_cached;
}

/* A second request sharing 40 tokens with a first: 32 (two pages) come from the cache, and its
   logits are a cold engine's bits. */
static void check_radix(const char *name, mlstack_model *m, mlstack_kv_type kt, mlstack_kv_type vt, const int32_t *ids,
                        int n) {
    int32_t b[96];
    int V = m->cfg.n_vocab, k, cached;
    mlstack_engine *cold = new_engine(m, kt, vt, 1, 1), *hot = new_engine(m, kt, vt, 1, 1);
    rec rc, ra, rh;
    rc.rows = ra.rows = rh.rows = NULL;
    if (cold && hot) {
        for (k = 0; k < n; k++) b[k] = k < 40 ? ids[k] : (int32_t)(3 + (ids[k] * 7 + k) % (V - 3));
        CHECKF(run_req(cold, b, n, V, &rc) == 0, "%s k %d v %d: cold run", name, kt, vt);
        CHECKF(run_req(hot, ids, n, V, &ra) == 0, "%s k %d v %d: first run", name, kt, vt);
        cached = run_req(hot, b, n, V, &rh);
        CHECKF(cached == 32, "%s k %d v %d: %d tokens from the cache (want 32)", name, kt, vt, cached);
        CHECKF(rc.rows && rh.rows && !memcmp(rc.rows, rh.rows, sizeof(float) * 8 * (size_t)V),
               "%s k %d v %d: a radix cache hit changes the logits", name, kt, vt);
    }
    free(rc.rows), free(ra.rows), free(rh.rows);
    mlstack_engine_free(cold);
    mlstack_engine_free(hot);
}

/* Under qemu-user (MLSTACK_TEST_QEMU, make test's AArch64 run), where emulated threads are dear:
   the chunked prefills on one thread only. Two threads split the same NEON ops over heads and
   rows, and max/test_kernels checks that every such op gives the reference's bits over any split
   of its output range; the native flavours run the 2-thread prefills for every pair. */
static int two_threads = 1;

/* The ASan+UBSan flavour (TL_SANITIZED) looks for memory errors, which a path shows once: there
   the n-th engine check runs the chunked prefills (chunk index c, 1 or 2 threads: t = 0, 1)
   with n + c + t a multiple of 3 (TL_KEEP), so every chunk size meets both thread counts and
   several cache type pairs; every other flavour runs all of them for every pair. */
static int engine_calls, n_thinned;

static void check_engine(const char *name, mlstack_model *m, mlstack_kv_type kt, mlstack_kv_type vt, int ranks) {
    int32_t ids[80];
    int n = 80, V = m->cfg.n_vocab, i, chunks[3] = {1, 5, 16}, call = engine_calls++;
    mlstack_engine *e1 = new_engine(m, kt, vt, 1, 1), *e2 = two_threads ? new_engine(m, kt, vt, 2, 1) : NULL,
                   *er = ranks ? new_engine(m, kt, vt, 2, 2) : NULL;
    float *all;
    for (i = 0; i < n; i++) ids[i] = (int32_t)(1 + (i * 37 + 11) % (V - 1));
    all = e1 ? fx_eval_all(e1, ids, n, V, n) : NULL;
    CHECKF(all != NULL, "%s k %d v %d: prefill", name, kt, vt);
    for (i = 0; all && i < 4; i++) {
        int ck = i < 3 ? chunks[i] : n, one = TL_KEEP(TL_SANITIZED, call + i),
            two = e2 && TL_KEEP(TL_SANITIZED, call + i + 1);
        float *a = one ? fx_eval_all(e1, ids, n, V, ck) : NULL, *b = two ? fx_eval_all(e2, ids, n, V, ck) : NULL;
        if (one)
            CHECKF(a && !memcmp(a, all, sizeof(float) * (size_t)n * V), "%s k %d v %d: chunks of %d != one prefill",
                   name, kt, vt, ck);
        if (two)
            CHECKF(b && !memcmp(b, all, sizeof(float) * (size_t)n * V),
                   "%s k %d v %d: chunks of %d on 2 threads differ", name, kt, vt, ck);
        n_thinned += !one + (e2 && !two);
        free(a), free(b);
    }
    if (all) CHECKF(fx_same_when_batched(e1, ids, n, all, V), "%s k %d v %d: batched != alone", name, kt, vt);
    if (all) { /* near the f32 cache's logits, and not equal to them (the rounding of the type shows) */
        mlstack_engine *ef = new_engine(m, MLSTACK_KV_F32, MLSTACK_KV_F32, 1, 1);
        float *f = ef ? fx_eval_all(ef, ids, n, V, n) : NULL;
        double dmax = 0, fmax = 0;
        for (i = 0; f && i < n * V; i++) {
            double dd = fabs((double)all[i] - f[i]);
            dmax = dd > dmax ? dd : dmax;
            fmax = fabs(f[i]) > fmax ? fabs(f[i]) : fmax;
        }
        printf("%s k %d v %d: max |logit - f32 cache's| %.3g of max |logit| %.3g\n", name, kt, vt, dmax, fmax);
        CHECKF(f && dmax > 0 && dmax < (kt == MLSTACK_KV_Q4_0 || vt == MLSTACK_KV_Q4_0 ? 0.2 : 0.02) * fmax,
               "%s k %d v %d: logits %.3g off the f32 cache's (max %.3g)", name, kt, vt, dmax, fmax);
        free(f);
        mlstack_engine_free(ef);
    }
    if (all && er) {
        float *a = fx_eval_all(er, ids, n, V, 16);
        CHECKF(a && !memcmp(a, all, sizeof(float) * (size_t)n * V), "%s k %d v %d: 2 ranks differ from 1", name, kt,
               vt);
        free(a);
    }
    free(all);
    mlstack_engine_free(e1);
    mlstack_engine_free(e2);
    mlstack_engine_free(er);
    check_radix(name, m, kt, vt, ids, n);
}

/* Page bytes of each type, as the rank reports them and as the cache statistics count them. */
static void check_bytes(mlstack_model *m) {
    uint64_t pb[6] = {0};
    int32_t p[20];
    int t, i;
    for (i = 0; i < 20; i++) p[i] = 5 + i;
    for (t = MLSTACK_KV_F16; t <= MLSTACK_KV_Q4_0; t++) {
        mlstack_engine *e = new_engine(m, (mlstack_kv_type)t, (mlstack_kv_type)t, 1, 1);
        mlstack_cache_stats cs;
        mlstack_rank_info ri;
        rec r;
        if (!e) continue;
        CHECK(run_req(e, p, 20, m->cfg.n_vocab, &r) == 0);
        free(r.rows);
        mlstack_engine_cache_stats(e, &cs);
        CHECK(mlstack_engine_rank_info(e, 0, &ri) == MLSTACK_OK);
        pb[t] = ri.kv_page_bytes;
        CHECKF(cs.page_bytes == pb[t], "type %d: the cache statistics count %llu bytes a page, the rank %llu", t,
               (unsigned long long)cs.page_bytes, (unsigned long long)pb[t]);
        mlstack_engine_free(e);
    }
    printf("page bytes: f16 %llu, q8_0 %llu, q4_0 %llu\n", (unsigned long long)pb[1], (unsigned long long)pb[4],
           (unsigned long long)pb[5]);
    CHECK(pb[MLSTACK_KV_F16] && pb[MLSTACK_KV_Q8_0] * 64 == pb[MLSTACK_KV_F16] * 34 &&
          pb[MLSTACK_KV_Q4_0] * 64 == pb[MLSTACK_KV_F16] * 18 && pb[MLSTACK_KV_F32] == 2 * pb[MLSTACK_KV_F16]);
}

static void check_refusals(void) {
    static const struct {
        const char *dir, *want;
    } cases[] = {{"tests/fixtures/families/lfm2", "multiple of 32"},
                 {"tests/fixtures/families/deepseek_v2", "latent attention"}};
    int i;
    for (i = 0; i < 2; i++) {
        mlstack_model_desc md;
        mlstack_model *m = NULL;
        mlstack_engine *e = NULL;
        mlstack_engine_desc ed;
        mlstack_error err;
        memset(&md, 0, sizeof md);
        md.path = cases[i].dir;
        if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK) {
            CHECKF(0, "%s: %s", cases[i].dir, err.message);
            continue;
        }
        memset(&ed, 0, sizeof ed);
        ed.kv_type = MLSTACK_KV_Q8_0;
        CHECKF(mlstack_engine_init(m, &ed, &e, &err) == MLSTACK_ERR_UNSUPPORTED && strstr(err.message, cases[i].want),
               "%s: q8_0 cache: %s (want a refusal naming \"%s\")", cases[i].dir, e ? "accepted" : err.message,
               cases[i].want);
        mlstack_engine_free(e);
        mlstack_model_close(m);
    }
}

int main(void) {
    static const mlstack_kv_type pairs[][2] = {{MLSTACK_KV_Q8_0, MLSTACK_KV_Q8_0},
                                               {MLSTACK_KV_Q4_0, MLSTACK_KV_Q4_0},
                                               {MLSTACK_KV_Q8_0, MLSTACK_KV_F16},
                                               {MLSTACK_KV_BF16, MLSTACK_KV_Q4_0},
                                               {MLSTACK_KV_F16, MLSTACK_KV_BF16}};
    mlstack_model *llama, *lfm2;
    /* quick mode (make check, MLSTACK_TEST_QUICK): the engine checks for the first three pairs on
       Llama (both quantized types, one mixed) and the first on LFM2; make test runs them all */
    int i, quick = getenv("MLSTACK_TEST_QUICK") != NULL, n_llama = quick ? 3 : 5, n_lfm2 = quick ? 1 : 2;
    two_threads = !tl_emulated();
    n_rows = read_bin("rows.f32", rows, sizeof rows) / (int)(D * sizeof(float));
    CHECK(n_rows >= 20 && read_bin("q8_0.bin", q8, sizeof q8) == n_rows * 68 &&
          read_bin("q4_0.bin", q4, sizeof q4) == n_rows * 36 &&
          read_bin("q8_0.f32", deq8, sizeof deq8) == n_rows * D * 4 &&
          read_bin("q4_0.f32", deq4, sizeof deq4) == n_rows * D * 4);
    if (n_rows < 20) return tl_finish();
    check_store(MLSTACK_KV_Q8_0);
    check_store(MLSTACK_KV_Q4_0);
    for (i = 0; i < 5; i++) check_attend(pairs[i][0], pairs[i][1]);
    llama = open_random("llama.json");
    lfm2 = open_random("lfm2.json");
    for (i = 0; llama && i < n_llama; i++) check_engine("llama", llama, pairs[i][0], pairs[i][1], i < 2);
    for (i = 0; lfm2 && i < n_lfm2; i++) check_engine("lfm2", lfm2, pairs[i][0], pairs[i][1], 0);
    if (quick)
        SKIP("the engine checks of the other cache type pairs: quick mode (MLSTACK_TEST_QUICK; make test runs them)");
    if (!two_threads)
        SKIP("the chunked prefills on 2 threads: under qemu-user (MLSTACK_TEST_QEMU; the native flavours run them)");
    if (n_thinned)
        SKIP("ASan+UBSan flavour: %d chunked prefills of the engine checks left out (a third run, TL_KEEP; the plain "
             "flavour runs them all)",
             n_thinned);
    if (llama) check_bytes(llama);
    check_refusals();
    mlstack_model_close(llama);
    mlstack_model_close(lfm2);
    return tl_finish();
}
