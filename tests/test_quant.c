/* Quantized models: saving with mlstack_model_save and reopening gives the same weights
   (bit-identical logits, no requantization, panels mapped in place), for tied and untied heads
   and both formats;
   quantized logits stay near the f32 ones on the reference fixtures. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include <unistd.h>

/* An engine on isa (NULL: the best) with n_ranks ranks, after evaluating ids: *out gets the last
   row's logits (malloc'd); the engine is returned (NULL on failure). */
static mlstack_engine *engine_logits(mlstack_model *m, const char *isa, int n_ranks, const int32_t *ids, int n,
                                     float **out) {
    mlstack_engine_desc ed;
    mlstack_engine *e;
    mlstack_error err;
    mlstack_batch_row rows[16];
    mlstack_model_info info;
    int32_t seq = -1;
    int i;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = n_ranks > 1 ? n_ranks : 1;
    ed.n_ranks = n_ranks;
    ed.isa = isa;
    ed.kv_type = MLSTACK_KV_F32;
    *out = NULL;
    if (mlstack_engine_init(m, &ed, &e, &err) != MLSTACK_OK) {
        printf("engine (%s, %d ranks): %s\n", isa ? isa : "best", n_ranks, err.message);
        return NULL;
    }
    mlstack_model_get_info(m, &info);
    mlstack_engine_seq_new(e, &seq);
    for (i = 0; i < n; i++)
        rows[i].seq = seq, rows[i].pos = i, rows[i].token = ids[i], rows[i].want_logits = i == n - 1;
    if (mlstack_engine_eval(e, rows, n) == MLSTACK_OK) {
        *out = (float *)malloc(sizeof(float) * (size_t)info.n_vocab);
        memcpy(*out, mlstack_engine_logits(e, n - 1), sizeof(float) * (size_t)info.n_vocab);
    }
    return e;
}

/* The last row's logits (malloc'd; NULL on failure) after evaluating ids on the best kernels,
   one rank; *n_vocab gets the vocabulary size. */
static float *logits_of(mlstack_model *m, const int32_t *ids, int n, int *n_vocab) {
    mlstack_model_info info;
    float *out;
    mlstack_engine_free(engine_logits(m, NULL, 1, ids, n, &out));
    mlstack_model_get_info(m, &info);
    *n_vocab = info.n_vocab;
    return out;
}

/* Counts the weights of a quantized at open whose rows are in `state` and, of those with
   panels, the ones whose rows (unpacked from the panels when `unpack`, else as they are now)
   differ from b's (the same model opened the same way, never run, so its rows are intact). */
static void rows_vs(mlstack_model *a, mlstack_model *b, int state, int unpack, int *n_state, int *n_quant,
                    int *n_differ) {
    int l, i;
    *n_state = *n_quant = *n_differ = 0;
    for (l = -1; l < a->cfg.n_layers; l++) {
        mlstack__weight *wa[MLSTACK__MAX_LAYER_WEIGHTS], *wb[MLSTACK__MAX_LAYER_WEIGHTS];
        int n = mlstack__layer_weights(a, l, wa);
        mlstack__layer_weights(b, l, wb);
        for (i = 0; i < n; i++) {
            size_t bytes = (size_t)wa[i]->n_out * wa[i]->row_bytes;
            unsigned char *tmp;
            if (wa[i]->wtype != MLSTACK__W_Q8_0 && wa[i]->wtype != MLSTACK__W_Q4_1) continue;
            (*n_quant)++;
            *n_state += wa[i]->rows == state;
            if (!unpack) {
                *n_differ += memcmp(wa[i]->data, wb[i]->data, bytes) != 0;
                continue;
            }
            if (!wa[i]->packed) {
                (*n_differ)++;
                continue;
            }
            tmp = (unsigned char *)malloc(bytes);
            mlstack__p16_unpack(wa[i], tmp);
            *n_differ += memcmp(tmp, wb[i]->data, bytes) != 0;
            free(tmp);
        }
    }
}

/* Issue 15: one copy of each weight. After an engine on panel kernels starts, the rows of
   weights quantized at open are given back (the panels are the only copy); a scalar engine,
   ranks and saving get them back, re-derived from the panels, bit for bit. */
static void test_one_copy(const char *tmp) {
    static const char *names[] = {"llama", "llama_tied"};
    static const mlstack_dtype quants[] = {MLSTACK_DTYPE_Q8_0, MLSTACK_DTYPE_Q4_1};
    const int32_t ids[] = {3, 141, 59, 26, 5, 35};
    int ni, qi;
    for (ni = 0; ni < 2; ni++)
        for (qi = 0; qi < 2; qi++) {
            char src[256], out_a[300], out_b[300], *fa, *fb, cmd[700];
            mlstack_model_desc md;
            mlstack_model *a, *b;
            mlstack_engine *e1, *e2, *e3, *eb;
            mlstack_error err;
            mlstack_model_info info;
            float *l1 = NULL, *l2 = NULL, *l3 = NULL, *lb = NULL;
            size_t la = 0, lb_len = 0;
            int n_state, n_quant, n_differ;
            const char *what = mlstack_dtype_name(quants[qi]);
            snprintf(src, sizeof src, "tests/fixtures/models/%s", names[ni]);
            memset(&md, 0, sizeof md);
            md.path = src;
            md.quant = quants[qi];
            if (mlstack_model_open(&md, &a, &err) != MLSTACK_OK || mlstack_model_open(&md, &b, &err) != MLSTACK_OK) {
                CHECKF(0, "%s: %s", src, err.message);
                return;
            }
            mlstack_model_get_info(a, &info);
            e1 = engine_logits(a, NULL, 1, ids, 6, &l1);
            CHECK(e1 && l1);
            if (!e1 || strcmp(mlstack_engine_kernels(e1), "scalar") == 0) {
                SKIP("one copy of each weight: this CPU runs only the scalar kernels, which read rows (no panels)");
                mlstack_engine_free(e1), free(l1);
                mlstack_model_close(a), mlstack_model_close(b);
                return;
            }
            rows_vs(a, b, MLSTACK__ROWS_GONE, 1, &n_state, &n_quant, &n_differ);
            CHECKF(n_quant > 0 && n_state == n_quant, "%s %s: rows given back for %d of %d quantized weights",
                   names[ni], what, n_state, n_quant);
            CHECKF(n_differ == 0, "%s %s: %d weights' panels do not unpack to their rows", names[ni], what, n_differ);
#if defined(__linux__)
            { /* the pages really went back: the head's rows (the largest weight) read as zeros now */
                const mlstack__weight *h = &a->lm_head;
                const unsigned char *p = (const unsigned char *)h->data;
                size_t bytes = (size_t)h->n_out * h->row_bytes, pg = (size_t)sysconf(_SC_PAGESIZE), off, k, nz = 0;
                off = (pg - (size_t)((uintptr_t)p % pg)) % pg;
                CHECKF(bytes >= off + pg, "%s: head rows span no whole page (%zu bytes)", names[ni], bytes);
                for (k = off; k + 1 <= bytes && k < off + pg; k++) nz += p[k] != 0;
                CHECKF(nz == 0, "%s %s: %zu bytes of a released page of the head's rows are not zero", names[ni], what,
                       nz);
            }
#endif
            /* the scalar kernels read rows: the engine takes them back, bit for bit */
            e2 = engine_logits(a, "scalar", 1, ids, 6, &l2);
            rows_vs(a, b, MLSTACK__ROWS_OWNED, 0, &n_state, &n_quant, &n_differ);
            CHECKF(n_state == n_quant && n_differ == 0, "%s %s: scalar engine: %d of %d rows back, %d differ",
                   names[ni], what, n_state, n_quant, n_differ);
            CHECKF(l1 && l2 && memcmp(l1, l2, sizeof(float) * (size_t)info.n_vocab) == 0,
                   "%s %s: scalar logits on re-derived rows differ from the panel kernels'", names[ni], what);
            eb = engine_logits(b, "scalar", 1, ids, 6, &lb);
            CHECKF(l2 && lb && memcmp(l2, lb, sizeof(float) * (size_t)info.n_vocab) == 0,
                   "%s %s: scalar logits differ from a model whose rows were never released", names[ni], what);
            mlstack_engine_free(eb);
            mlstack_engine_free(e2);
            rows_vs(a, b, MLSTACK__ROWS_GONE, 0, &n_state, &n_quant, &n_differ);
            CHECKF(n_state == n_quant, "%s %s: the last hold given back released %d of %d rows", names[ni], what,
                   n_state, n_quant);
            /* ranks slice rows */
            e3 = engine_logits(a, NULL, 2, ids, 6, &l3);
            CHECKF(l1 && l3 && memcmp(l1, l3, sizeof(float) * (size_t)info.n_vocab) == 0,
                   "%s %s: two ranks' logits differ from one rank's after the rows were released", names[ni], what);
            mlstack_engine_free(e3);
            /* saving reads rows: the same file as from the untouched model */
            snprintf(out_a, sizeof out_a, "%s/onecopy_a", tmp);
            snprintf(out_b, sizeof out_b, "%s/onecopy_b", tmp);
            CHECKF(mlstack_model_save(a, out_a, &err) == MLSTACK_OK, "save: %s", err.message);
            CHECKF(mlstack_model_save(b, out_b, &err) == MLSTACK_OK, "save: %s", err.message);
            snprintf(cmd, sizeof cmd, "%s/model.safetensors", out_a);
            fa = tl_read(cmd, &la);
            snprintf(cmd, sizeof cmd, "%s/model.safetensors", out_b);
            fb = tl_read(cmd, &lb_len);
            CHECKF(fa && fb && la == lb_len && memcmp(fa, fb, la) == 0,
                   "%s %s: saved after the rows were released, the file differs", names[ni], what);
            rows_vs(a, b, MLSTACK__ROWS_GONE, 0, &n_state, &n_quant, &n_differ);
            CHECK(n_state == n_quant);
            free(fa), free(fb);
            snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", out_a, out_b);
            if (system(cmd) != 0) printf("could not remove %s\n", out_a);
            free(l1), free(l2), free(l3), free(lb);
            mlstack_engine_free(e1);
            mlstack_model_close(a);
            mlstack_model_close(b);
        }
}

/* Whole-file equality of DIR/model.safetensors and DIR2/model.safetensors. */
static int same_file(const char *dir, const char *dir2) {
    char pa[400], pb[400], *fa, *fb;
    size_t la = 0, lb = 0;
    int same;
    snprintf(pa, sizeof pa, "%s/model.safetensors", dir);
    snprintf(pb, sizeof pb, "%s/model.safetensors", dir2);
    fa = tl_read(pa, &la);
    fb = tl_read(pb, &lb);
    same = fa && fb && la == lb && memcmp(fa, fb, la) == 0;
    free(fa), free(fb);
    return same;
}

static void rm_rf(const char *dir) {
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
}

/* The metadata of the panel folder dp tells what its bytes are; the row folder dr has no layout tags. */
static void check_panel_tags(const char *dp, const char *dr) {
    char path[400], *hdr;
    snprintf(path, sizeof path, "%s/model.safetensors", dp);
    hdr = tl_read(path, NULL);
    CHECKF(hdr && strstr(hdr + 8, "\"mlstack.layout.model.layers.0.self_attn.q_proj.weight\":\"P16\"") &&
               strstr(hdr + 8, "\"mlstack.p16.version\":\"1\"") &&
               strstr(hdr + 8, "\"mlstack.p16.panel_rows\":\"16\"") && strstr(hdr + 8, "\"mlstack.p16.group\":\"4\""),
           "%s: the panel folder's metadata lacks the layout tags", dp);
    free(hdr);
    snprintf(path, sizeof path, "%s/model.safetensors", dr);
    hdr = tl_read(path, NULL);
    CHECKF(hdr && strstr(hdr + 8, "mlstack.quant.") && !strstr(hdr + 8, "mlstack.layout.") &&
               !strstr(hdr + 8, "mlstack.p16."),
           "%s: the row folder carries layout tags", dr);
    free(hdr);
}

/* Every quantized projection of p: panels in place in the mapping, 64-byte aligned, rows not
   resident. Returns how many quantized weights p has. */
static int check_panels_in_place(mlstack_model *p, const char *name, const char *what) {
    mlstack_model_info ip;
    int l, i, n_panel = 0, n_inplace = 0, n_aligned = 0, n_quant = 0;
    mlstack_model_get_info(p, &ip);
    for (l = -1; l < p->cfg.n_layers; l++) {
        mlstack__weight *ws[MLSTACK__MAX_LAYER_WEIGHTS];
        int n = mlstack__layer_weights(p, l, ws);
        for (i = 0; i < n; i++) {
            mlstack_tensor t;
            if (ws[i]->wtype != MLSTACK__W_Q8_0 && ws[i]->wtype != MLSTACK__W_Q4_1) continue;
            n_quant++;
            n_panel += ws[i]->packed != NULL && ws[i]->rows == MLSTACK__ROWS_GONE &&
                       ws[i]->data != (const void *)ws[i]->packed;
            n_inplace +=
                mlstack_model_tensor_find(p, ws[i]->name, &t) == MLSTACK_OK && t.data == (const void *)ws[i]->packed;
            n_aligned += (uintptr_t)ws[i]->packed % 64 == 0;
        }
    }
    CHECKF(n_quant > 0 && n_panel == n_quant && n_inplace == n_quant && n_aligned == n_quant,
           "%s %s: of %d quantized weights %d opened as panels, %d in place in the mapping, %d aligned", name, what,
           n_quant, n_panel, n_inplace, n_aligned);
    CHECKF(ip.mapped_panel_bytes > 0 && ip.mapped_panel_bytes <= ip.weight_bytes && ip.packed_bytes == 0,
           "%s %s: mapped %llu, packed %llu of %llu bytes", name, what, (unsigned long long)ip.mapped_panel_bytes,
           (unsigned long long)ip.packed_bytes, (unsigned long long)ip.weight_bytes);
    return n_quant;
}

/* The engines packed no quantized weight of the panel folder p, info ip (the counter that does
   count packing on iq, quantized at load, and ir, the row folder); weights left as stored (rows not a
   multiple of 32: the fixtures' intermediate sizes 168 and 136) are packed at start as before. */
static void check_nothing_packed(mlstack_model *p, const mlstack_model_info *ip, const mlstack_model_info *iq,
                                 const mlstack_model_info *ir, const char *name, const char *what) {
    uint64_t fl = 0;
    int l, i;
    for (l = -1; l < p->cfg.n_layers; l++) {
        mlstack__weight *ws[MLSTACK__MAX_LAYER_WEIGHTS];
        int n = mlstack__layer_weights(p, l, ws);
        for (i = 0; i < n; i++)
            if (ws[i]->wtype != MLSTACK__W_Q8_0 && ws[i]->wtype != MLSTACK__W_Q4_1)
                fl += (uint64_t)mlstack__p16_panels(ws[i]->n_out) * mlstack__p16_bytes(ws[i]->wtype, ws[i]->n_in);
    }
    CHECKF(ip->packed_bytes == fl,
           "%s %s: an engine packed %llu bytes of a folder saved with panels (%llu "
           "of float weights)",
           name, what, (unsigned long long)ip->packed_bytes, (unsigned long long)fl);
    CHECKF(iq->packed_bytes > fl && ir->packed_bytes == iq->packed_bytes,
           "%s %s: packing at start not counted (quantized at load %llu, row folder %llu)", name, what,
           (unsigned long long)iq->packed_bytes, (unsigned long long)ir->packed_bytes);
    CHECKF(ip->mapped_panel_bytes + fl == ir->packed_bytes, "%s %s: %llu bytes of panels mapped, %llu packed", name,
           what, (unsigned long long)ip->mapped_panel_bytes, (unsigned long long)ir->packed_bytes);
}

/* Saving the panel folder p again gives the same files: panels as mapped (dp2 as dp), rows as
   derived (dr2 as dr), and its GGUF (ga) is the row folder rw's (gb). */
static void check_resaves(mlstack_model *p, mlstack_model *rw, const char *dp, const char *dr, const char *dp2,
                          const char *dr2, const char *ga, const char *gb, const char *name, const char *what) {
    mlstack_error err;
    CHECKF(mlstack_model_save(p, dp2, &err) == MLSTACK_OK, "re-save: %s", err.message);
    CHECKF(mlstack_model_save_flags(p, dr2, MLSTACK_SAVE_ROWS, &err) == MLSTACK_OK, "re-save: %s", err.message);
    CHECKF(same_file(dp, dp2), "%s %s: the panel folder saved again differs", name, what);
    CHECKF(same_file(dr, dr2), "%s %s: rows derived from the panels saved differ from the row folder", name, what);
    CHECKF(mlstack_model_save_gguf(p, ga, &err) == MLSTACK_OK, "gguf: %s", err.message);
    CHECKF(mlstack_model_save_gguf(rw, gb, &err) == MLSTACK_OK, "gguf: %s", err.message);
    {
        size_t la = 0, lb = 0;
        char *fa = tl_read(ga, &la), *fb = tl_read(gb, &lb);
        CHECKF(fa && fb && la == lb && memcmp(fa, fb, la) == 0,
               "%s %s: the GGUF of the panel folder differs from the row folder's", name, what);
        free(fa), free(fb);
    }
}

/* Issue 15: a folder saved with its P16 panels opens with the panels mapped in place (no
   packing, no copy; rows only when a path reads rows, derived exactly), and gives the logits of
   the model quantized at load and of the folder saved as rows, bit for bit: on the panel
   kernels, the scalar kernels and two ranks. Its rows, its GGUF and its re-saves are those of
   the row folder. */
static void test_saved_panels(const char *tmp) {
    static const char *names[] = {"llama", "llama_tied", "qwen2"};
    static const mlstack_dtype quants[] = {MLSTACK_DTYPE_Q8_0, MLSTACK_DTYPE_Q4_1};
    const int32_t ids[] = {4, 77, 12, 250, 9, 31, 2};
    int ni, qi;
    for (ni = 0; ni < 3; ni++)
        for (qi = 0; qi < 2; qi++) {
            char src[256], dp[300], dr[300], dp2[300], dr2[300], ga[300], gb[300];
            const char *what = mlstack_dtype_name(quants[qi]);
            mlstack_model_desc md;
            mlstack_model *q = NULL, *p = NULL, *rw = NULL;
            mlstack_model_info ip, iq, ir;
            mlstack_error err;
            mlstack_engine *e;
            float *lq = NULL, *lp = NULL, *lr = NULL, *lps = NULL, *lqs = NULL, *lp2 = NULL;
            int V = 0, l, i, n_rows_same = 0, n_quant = 0, scalar_only;
            snprintf(src, sizeof src, "tests/fixtures/models/%s", names[ni]);
            snprintf(dp, sizeof dp, "%s/panels_%s_%d", tmp, names[ni], qi);
            snprintf(dr, sizeof dr, "%s/rows_%s_%d", tmp, names[ni], qi);
            snprintf(dp2, sizeof dp2, "%s/panels2_%s_%d", tmp, names[ni], qi);
            snprintf(dr2, sizeof dr2, "%s/rows2_%s_%d", tmp, names[ni], qi);
            snprintf(ga, sizeof ga, "%s/a_%s_%d.gguf", tmp, names[ni], qi);
            snprintf(gb, sizeof gb, "%s/b_%s_%d.gguf", tmp, names[ni], qi);
            memset(&md, 0, sizeof md);
            md.path = src;
            md.quant = quants[qi];
            if (mlstack_model_open(&md, &q, &err) != MLSTACK_OK) {
                CHECKF(0, "%s: %s", src, err.message);
                continue;
            }
            CHECKF(mlstack_model_save(q, dp, &err) == MLSTACK_OK, "save: %s", err.message);
            CHECKF(mlstack_model_save_flags(q, dr, MLSTACK_SAVE_ROWS, &err) == MLSTACK_OK, "save rows: %s",
                   err.message);
            CHECK(mlstack_model_save_flags(q, dr2, 2, &err) == MLSTACK_ERR_INVALID_ARG);
            check_panel_tags(dp, dr);
            md.quant = 0;
            md.path = dp;
            CHECKF(mlstack_model_open(&md, &p, &err) == MLSTACK_OK, "open %s: %s", dp, err.message);
            md.path = dr;
            CHECKF(mlstack_model_open(&md, &rw, &err) == MLSTACK_OK, "open %s: %s", dr, err.message);
            if (!p || !rw) goto next;
            mlstack_model_get_info(p, &ip);
            CHECKF(ip.weight_dtype == quants[qi], "%s: weights are %s", dp, mlstack_dtype_name(ip.weight_dtype));
            n_quant = check_panels_in_place(p, names[ni], what);
            lq = logits_of(q, ids, 7, &V);
            lp = logits_of(p, ids, 7, &V);
            lr = logits_of(rw, ids, 7, &V);
            mlstack_model_get_info(p, &ip);
            mlstack_model_get_info(q, &iq);
            mlstack_model_get_info(rw, &ir);
            e = engine_logits(p, NULL, 1, ids, 1, &lp2);
            scalar_only = !e || strcmp(mlstack_engine_kernels(e), "scalar") == 0;
            mlstack_engine_free(e);
            free(lp2), lp2 = NULL;
            if (scalar_only) {
                SKIP("saved panels: this CPU runs only the scalar kernels, which read rows (no panels to map)");
            } else {
                check_nothing_packed(p, &ip, &iq, &ir, names[ni], what);
            }
            CHECKF(lq && lp && lr && memcmp(lq, lp, sizeof(float) * (size_t)V) == 0 &&
                       memcmp(lr, lp, sizeof(float) * (size_t)V) == 0,
                   "%s %s: panel folder logits differ from quantized at load / the row folder", names[ni], what);
            /* the scalar kernels read rows: derived from the mapped panels, the row folder's bytes */
            mlstack_engine_free(engine_logits(p, "scalar", 1, ids, 7, &lps));
            mlstack_engine_free(engine_logits(q, "scalar", 1, ids, 7, &lqs));
            CHECKF(lps && lqs && memcmp(lps, lqs, sizeof(float) * (size_t)V) == 0 && lq &&
                       memcmp(lps, lq, sizeof(float) * (size_t)V) == 0,
                   "%s %s: scalar logits on the panel folder differ", names[ni], what);
            for (l = -1; l < p->cfg.n_layers; l++) {
                mlstack__weight *ws[MLSTACK__MAX_LAYER_WEIGHTS], *wr[MLSTACK__MAX_LAYER_WEIGHTS];
                int n = mlstack__layer_weights(p, l, ws);
                mlstack__layer_weights(rw, l, wr);
                for (i = 0; i < n; i++)
                    if (ws[i]->wtype == MLSTACK__W_Q8_0 || ws[i]->wtype == MLSTACK__W_Q4_1)
                        n_rows_same += ws[i]->rows == MLSTACK__ROWS_GONE && ws[i]->data != (const void *)ws[i]->packed;
            }
            CHECKF(scalar_only || n_rows_same == n_quant,
                   "%s %s: after the scalar engine %d of %d weights hold released rows of their own", names[ni], what,
                   n_rows_same, n_quant);
            /* two ranks slice rows */
            mlstack_engine_free(engine_logits(p, NULL, 2, ids, 7, &lp2));
            CHECKF(lp2 && lp && memcmp(lp2, lp, sizeof(float) * (size_t)V) == 0,
                   "%s %s: two ranks on the panel folder differ from one", names[ni], what);
            check_resaves(p, rw, dp, dr, dp2, dr2, ga, gb, names[ni], what);
        next:
            free(lq), free(lp), free(lr), free(lps), free(lqs), free(lp2);
            mlstack_model_close(q);
            mlstack_model_close(p);
            mlstack_model_close(rw);
            rm_rf(dp), rm_rf(dr), rm_rf(dp2), rm_rf(dr2);
            remove(ga), remove(gb);
        }
}

/* The LM head's own format: Q4_1 projections with a Q8_0 head hold the very head of a Q8_0
   model (the same blocks) and the Q4_1 model's projections; keep_head leaves it as stored (the
   tied embedding, read in place); another head_quant is refused. */
static void test_head_quant(void) {
    mlstack_model_desc md;
    mlstack_model *q8 = NULL, *q4 = NULL, *mix = NULL, *keep = NULL, *bad = NULL;
    mlstack_error err;
    int l, i, same_proj = 1;
    memset(&md, 0, sizeof md);
    md.path = "tests/fixtures/models/llama_tied";
    md.quant = MLSTACK_DTYPE_Q8_0;
    CHECK(mlstack_model_open(&md, &q8, &err) == MLSTACK_OK);
    md.quant = MLSTACK_DTYPE_Q4_1;
    CHECK(mlstack_model_open(&md, &q4, &err) == MLSTACK_OK);
    md.head_quant = MLSTACK_DTYPE_Q8_0;
    CHECK(mlstack_model_open(&md, &mix, &err) == MLSTACK_OK);
    md.head_quant = 0;
    md.keep_head = 1;
    CHECK(mlstack_model_open(&md, &keep, &err) == MLSTACK_OK);
    md.keep_head = 0;
    md.head_quant = MLSTACK_DTYPE_BF16;
    CHECKF(mlstack_model_open(&md, &bad, &err) == MLSTACK_ERR_UNSUPPORTED && strstr(err.message, "head_quant"),
           "head_quant BF16 accepted");
    if (!q8 || !q4 || !mix || !keep) goto done;
    CHECK(mix->lm_head.wtype == MLSTACK__W_Q8_0 && q8->lm_head.wtype == MLSTACK__W_Q8_0);
    CHECK(memcmp(mix->lm_head.data, q8->lm_head.data, (size_t)mix->lm_head.n_out * mix->lm_head.row_bytes) == 0);
    for (l = 0; l < mix->cfg.n_layers; l++) {
        mlstack__weight *wa[MLSTACK__MAX_LAYER_WEIGHTS], *wb[MLSTACK__MAX_LAYER_WEIGHTS];
        int n = mlstack__layer_weights(mix, l, wa);
        mlstack__layer_weights(q4, l, wb);
        for (i = 0; i < n; i++)
            same_proj &= wa[i]->wtype == wb[i]->wtype && wa[i]->row_bytes == wb[i]->row_bytes &&
                         memcmp(wa[i]->data, wb[i]->data, (size_t)wa[i]->n_out * wa[i]->row_bytes) == 0;
    }
    CHECKF(same_proj, "Q4_1 projections with a Q8_0 head differ from the Q4_1 model's");
    CHECK(mix->layers[0].wq.wtype == MLSTACK__W_Q4_1);
    CHECK(keep->lm_head.wtype == MLSTACK__W_F32 && keep->lm_head.data == keep->embed);
    {
        mlstack_model_info info;
        mlstack_model_get_info(keep, &info);
        CHECK(info.weight_dtype == MLSTACK_DTYPE_Q4_1);
    }
done:
    mlstack_model_close(q8);
    mlstack_model_close(q4);
    mlstack_model_close(mix);
    mlstack_model_close(keep);
    mlstack_model_close(bad);
}

int main(void) {
    static const char *names[] = {"llama", "llama_tied", "qwen2"};
    static const mlstack_dtype quants[] = {MLSTACK_DTYPE_Q8_0, MLSTACK_DTYPE_Q4_1};
    const int32_t ids[] = {1, 17, 42, 99, 7, 300, 5};
    char tmpl[] = "/tmp/mlstack_quant_XXXXXX", *tmp = mkdtemp(tmpl);
    int ni, qi;
    CHECK(tmp != NULL);
    for (ni = 0; tmp && ni < 3; ni++) {
        char src[256];
        mlstack_model_desc md;
        mlstack_model *ref;
        mlstack_error err;
        float *lref;
        int V = 0;
        snprintf(src, sizeof src, "tests/fixtures/models/%s", names[ni]);
        memset(&md, 0, sizeof md);
        md.path = src;
        if (mlstack_model_open(&md, &ref, &err) != MLSTACK_OK) {
            CHECKF(0, "%s: %s", src, err.message);
            continue;
        }
        lref = logits_of(ref, ids, 7, &V);
        for (qi = 0; qi < 2; qi++) {
            char out[300];
            mlstack_model *q, *re;
            mlstack_model_info info;
            float *lq, *lre;
            double maxd = 0, big = 0;
            int k;
            snprintf(out, sizeof out, "%s/%s_%d", tmp, names[ni], qi);
            md.path = src;
            md.quant = quants[qi];
            CHECK(mlstack_model_open(&md, &q, &err) == MLSTACK_OK);
            CHECKF(mlstack_model_save(q, out, &err) == MLSTACK_OK, "save: %s", err.message);
            md.path = out;
            md.quant = 0;
            CHECKF(mlstack_model_open(&md, &re, &err) == MLSTACK_OK, "reopen: %s", err.message);
            mlstack_model_get_info(re, &info);
            CHECKF(info.weight_dtype == quants[qi], "%s: reopened weights are %s", out,
                   mlstack_dtype_name(info.weight_dtype));
            lq = logits_of(q, ids, 7, &V);
            lre = logits_of(re, ids, 7, &V);
            CHECKF(lq && lre && memcmp(lq, lre, sizeof(float) * V) == 0,
                   "%s %s: reopened logits differ from the in-memory ones", names[ni], mlstack_dtype_name(quants[qi]));
            for (k = 0; lq && lref && k < V; k++) {
                if (fabs(lq[k] - lref[k]) > maxd) maxd = fabs(lq[k] - lref[k]);
                if (fabs(lref[k]) > big) big = fabs(lref[k]);
            }
            /* these random models use weights of std ~0.15: Q8_0 keeps ~7 bits per weight,
               Q4_1 ~3. Observed: Q8_0 moves logits by 0.021 to 0.031 of the largest, Q4_1 by 0.20
               to 0.23; Q4_1's bound is 1.3 times that (it was 0.5, which let through a scale of
               range/16.5 instead of range/15: tests/mutants/51a_q4_1_scale.patch) */
            CHECKF(maxd < (qi == 0 ? 0.05 : 0.3) * big, "%s %s: max |logit - f32| %.3g (largest %.3g)", names[ni],
                   mlstack_dtype_name(quants[qi]), maxd, big);
            printf("  %-10s %s: max |logit - f32 logit| = %.3g (largest logit %.3g)\n", names[ni],
                   mlstack_dtype_name(quants[qi]), maxd, big);
            free(lq), free(lre);
            mlstack_model_close(q);
            mlstack_model_close(re);
            {
                char cmd[400];
                snprintf(cmd, sizeof cmd, "rm -rf '%s'", out);
                if (system(cmd) != 0) printf("could not remove %s\n", out);
            }
        }
        free(lref);
        mlstack_model_close(ref);
    }
    if (tmp) test_one_copy(tmp);
    if (tmp) test_saved_panels(tmp);
    test_head_quant();
    if (tmp) rmdir(tmp);
    return tl_finish();
}
