/* BitNet b1.58 as llama.cpp's "bitnet" GGUF (tests/fixtures/gguf/bitnet/, tools/make_bitnet_gguf.py:
   llama.cpp's own converter on transformers' BitNetForCausalLM with SiLU and a tied head, the
   graph llama.cpp has; <name>.json holds the prompt's ids, transformers' logits and llama.cpp's
   greedy text on the file):
   - bitnet_silu-f32.gguf: logits within 1e-4 of transformers' at every position, greedy text =
     llama.cpp's; the file mlstack writes (sub-norms included) reads back with the same bits;
   - bitnet_wide-tq2_0 / -tq1_0.gguf (every projection ternary): greedy text = llama.cpp's; the
     same logits bits on every kernel path this CPU runs, prefill == decode; close to the same file
     dequantized to f32 (KL); re-quantized to the same type from those f32 weights by mlstack's
     quantizer (llama.cpp's rounding), every ternary tensor comes back byte for byte. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include "fixture_eval.h"
#include "gguf_ref.h"
#include <math.h>
#include <unistd.h>

static const char *DIR_ = "tests/fixtures/gguf/bitnet";

static void test_f32(void) {
    const char *name = "bitnet_silu";
    mlstack_model *m = NULL;
    mlstack_engine *e = NULL;
    ref_case rc;
    float *l;
    if (!load_ref(DIR_, name, &rc)) {
        CHECKF(0, "%s: reference missing", name);
        free(rc.logits);
        return;
    }
    l = ref_eval_file("tests/fixtures/gguf/bitnet/bitnet_silu-f32.gguf", rc.ids, rc.n, rc.n_vocab, rc.n, &m, &e);
    if (l) check_ref(name, m, e, &rc, l);
    else
        CHECKF(0, "%s: evaluation failed", name);
    /* read back token by token: the written file's decode gives the converted file's prefill bits */
    if (m) ref_check_written(name, m, rc.ids, rc.n, rc.n_vocab, 1, l);
    free(l);
    free(rc.logits);
    mlstack_engine_free(e);
    mlstack_model_close(m);
}

/* Mean KL(p || q) over n rows of V logits. */
static double mean_kl(const float *p, const float *q, int n, int V) {
    double kl = 0;
    int i, j;
    for (i = 0; i < n; i++) {
        const float *a = p + (size_t)i * V, *b = q + (size_t)i * V;
        double ma = a[0], mb = b[0], za = 0, zb = 0, k = 0;
        for (j = 0; j < V; j++) ma = a[j] > ma ? a[j] : ma, mb = b[j] > mb ? b[j] : mb;
        for (j = 0; j < V; j++) za += exp(a[j] - ma), zb += exp(b[j] - mb);
        for (j = 0; j < V; j++) {
            double la = a[j] - ma - log(za), lb = b[j] - mb - log(zb);
            k += exp(la) * (la - lb);
        }
        kl += k / n;
    }
    return kl;
}

/* The file dequantized to f32 and quantized back by mlstack to `mix`: every tensor of that type
   the same bytes as the file's. */
static void check_requantize(const char *path, const char *mix, uint32_t type) {
    char tmp[] = "/tmp/mlstack_bitnet_tq_XXXXXX";
    mlstack_model_desc md;
    mlstack_model *m = NULL;
    mlstack_error err;
    mlstack__gguf a, b;
    uint64_t i;
    int n = 0, same = 0;
    memset(&md, 0, sizeof md);
    md.path = path;
    md.quant_mix = mix;
    mlstack__gguf_dequant_all = 1;
    CHECKF(mlstack_model_open(&md, &m, &err) == MLSTACK_OK, "%s as %s: %s", path, mix, err.message);
    mlstack__gguf_dequant_all = 0;
    if (!m || ref_temp_file(tmp) != 0) {
        mlstack_model_close(m);
        return;
    }
    CHECKF(mlstack_model_save_gguf(m, tmp, &err) == MLSTACK_OK, "%s: write %s: %s", path, mix, err.message);
    mlstack_model_close(m);
    if (mlstack__gguf_open(&a, path, &err) == MLSTACK_OK) {
        if (mlstack__gguf_open(&b, tmp, &err) == MLSTACK_OK) {
            for (i = 0; i < a.n_tensors; i++) {
                const mlstack__gguf_tensor *t = &a.tensors[i], *o = mlstack__gguf_tensor_find(&b, t->name);
                if (t->type != type) continue;
                n++;
                same += o && o->type == t->type && o->bytes == t->bytes &&
                        memcmp(a.data + t->offset, b.data + o->offset, (size_t)t->bytes) == 0;
            }
            mlstack__gguf_close(&b);
        }
        mlstack__gguf_close(&a);
    }
    unlink(tmp);
    printf("  %s re-quantized to %s: %d of %d ternary tensors byte-identical\n", path, mix, same, n);
    CHECKF(n == 14 && same == n, "%s: %d of %d %s tensors re-quantized byte for byte", path, same, n, mix);
}

static void test_tq(const char *name, const char *mix, uint32_t type) {
    static const char *caps[] = {"scalar", "avx2", "avx512", "neon"};
    char path[256], text[512];
    const char *seen[4];
    mlstack_model_desc md;
    mlstack_model *m = NULL, *r = NULL;
    mlstack_error err;
    ref_case rc;
    float *l0 = NULL, *lr = NULL;
    int c, n_seen = 0, i;
    double d = 0;
    if (!load_ref(DIR_, name, &rc)) {
        CHECKF(0, "%s: reference missing", name);
        free(rc.logits);
        return;
    }
    snprintf(path, sizeof path, "%s/%s.gguf", DIR_, name);
    memset(&md, 0, sizeof md);
    md.path = path;
    CHECKF(mlstack_model_open(&md, &m, &err) == MLSTACK_OK, "%s: %s", path, err.message);
    mlstack__gguf_dequant_all = 1;
    CHECKF(mlstack_model_open(&md, &r, &err) == MLSTACK_OK, "%s: %s", path, err.message);
    mlstack__gguf_dequant_all = 0;
    if (!m || !r) goto done;
    CHECKF(m->layers[1].w_down.wtype == 16 + (int)type && m->layers[0].wq.wtype == 16 + (int)type,
           "%s: projections not kept as %s", name, mix);
    for (c = 0; c < 4; c++) {
        mlstack_engine_desc ed;
        mlstack_engine *e = NULL;
        float *lp = NULL, *ld = NULL;
        int dup = 0;
        memset(&ed, 0, sizeof ed);
        ed.isa = caps[c];
        if (mlstack_engine_init(m, &ed, &e, &err) != MLSTACK_OK) {
            CHECKF(0, "%s: %s", caps[c], err.message);
            continue;
        }
        for (i = 0; i < n_seen; i++) dup |= strcmp(seen[i], mlstack_engine_kernels(e)) == 0;
        if (dup) {
            SKIP("cap %s: this CPU has no such path", caps[c]);
            mlstack_engine_free(e);
            continue;
        }
        seen[n_seen++] = mlstack_engine_kernels(e);
        lp = fx_eval_all(e, rc.ids, rc.n, rc.n_vocab, rc.n);
        ld = fx_eval_all(e, rc.ids, rc.n, rc.n_vocab, 1);
        CHECKF(lp && ld && !memcmp(lp, ld, sizeof(float) * (size_t)rc.n * (size_t)rc.n_vocab),
               "%s %s: prefill != decode", name, caps[c]);
        if (!l0 && lp) {
            l0 = lp, lp = NULL;
            greedy_text(m, e, &rc, text, sizeof text);
            CHECKF(strcmp(text, rc.text) == 0, "%s: greedy text \"%s\", llama.cpp's \"%s\"", name, text, rc.text);
        } else if (lp) {
            CHECKF(!memcmp(l0, lp, sizeof(float) * (size_t)rc.n * (size_t)rc.n_vocab), "%s: %s differs from %s", name,
                   caps[c], seen[0]);
        }
        free(lp);
        free(ld);
        mlstack_engine_free(e);
    }
    {
        mlstack_engine_desc ed;
        mlstack_engine *e = NULL;
        memset(&ed, 0, sizeof ed);
        if (mlstack_engine_init(r, &ed, &e, &err) == MLSTACK_OK) lr = fx_eval_all(e, rc.ids, rc.n, rc.n_vocab, rc.n);
        mlstack_engine_free(e);
    }
    if (l0 && lr) {
        double kl = mean_kl(lr, l0, rc.n, rc.n_vocab);
        for (i = 0; i < rc.n * rc.n_vocab; i++)
            if (fabs((double)l0[i] - rc.logits[i]) > d) d = fabs((double)l0[i] - rc.logits[i]);
        printf("  %-18s %d positions: greedy text %s; native vs dequantized f32 mean KL %.2e; max |logit - "
               "transformers (f32 model)| %.3g\n",
               name, rc.n, strcmp(text, rc.text) == 0 ? "= llama.cpp's" : "differs", kl, d);
        CHECKF(kl < 5e-3, "%s: native ternary kernels vs dequantized f32: mean KL %.3g", name,
               kl); /* measured 1.9e-3 */
    }
    check_requantize(path, mix, type);
done:
    free(l0);
    free(lr);
    free(rc.logits);
    mlstack_model_close(m);
    mlstack_model_close(r);
}

int main(void) {
    test_f32();
    test_tq("bitnet_wide-tq2_0", "TQ2_0", MLSTACK__GGML_TQ2_0);
    test_tq("bitnet_wide-tq1_0", "TQ1_0", MLSTACK__GGML_TQ1_0);
    return tl_finish();
}
