/* mlstack run, eval, info, tokenize, template, kl, quantize. */
#include "cli.h"
#include "../tools/quality.h"

#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <io.h>
#define isatty _isatty
#else
#include <unistd.h>
#endif

/* Streams generated tokens: text through the tokenizer's streaming decoder, ids otherwise;
   with --json everything is collected instead of printed. */
typedef struct run_stream {
    mlstack_detok *detok;
    int json;
    cli_buf text;
    int32_t *gen;
    int n_gen, cap_gen;
} run_stream;

static int run_on_token(void *user, int32_t tok) {
    run_stream *st = (run_stream *)user;
    const char *text;
    size_t len;
    if (st->n_gen == st->cap_gen) {
        int32_t *p = (int32_t *)realloc(st->gen, sizeof(int32_t) * (size_t)(st->cap_gen = st->cap_gen * 2 + 64));
        if (!p) return 1;
        st->gen = p;
    }
    st->gen[st->n_gen++] = tok;
    if (!st->detok) {
        if (!st->json) printf(" %d", (int)tok);
    } else if (mlstack_detok_push(st->detok, tok, &text, &len) == MLSTACK_OK && len) {
        if (st->json) cli_buf_put(&st->text, text, len);
        else
            fwrite(text, 1, len, stdout);
    }
    if (!st->json) fflush(stdout);
    return 0;
}

/* --spec: the request goes through the scheduler, which speculates (mlstack_generate does not). */
static int run_spec_token(void *user, uint64_t request, int32_t tok, const char *text, size_t len) {
    (void)request, (void)text, (void)len;
    return run_on_token(user, tok);
}
static mlstack_result run_spec(mlstack_engine *e, mlstack_generate_desc *g, mlstack_request_status *st,
                               mlstack_error *err) {
    mlstack_request_desc rd;
    mlstack_result r;
    memset(&rd, 0, sizeof rd);
    memset(st, 0, sizeof *st);
    rd.prompt = g->prompt;
    rd.n_prompt = g->n_prompt;
    rd.sampler = *g->sampler;
    rd.max_tokens = g->max_tokens;
    rd.ignore_eos = g->ignore_eos;
    rd.on_token = run_spec_token;
    rd.user = g->user;
    r = mlstack_engine_complete(e, &rd, st, NULL, 0, err);
    g->n_generated = st->n_generated;
    g->prefill_seconds = st->t_first_token;
    g->decode_seconds = st->t_done > st->t_first_token ? st->t_done - st->t_first_token : 0;
    return r;
}

/* The prompt text: -p, else stdin when it is not a terminal (one trailing newline dropped, as
   `echo` adds it). *owned is set when the text was allocated. */
static const char *run_prompt_text(const cli_opts *o, char **owned) {
    size_t len;
    *owned = NULL;
    if (o->prompt) return o->prompt;
    if (isatty(0)) return NULL;
    if (cli_read_file("-", (size_t)64 << 20, owned, &len) != 0) return NULL;
    if (len && (*owned)[len - 1] == '\n') (*owned)[--len] = 0;
    if (len && (*owned)[len - 1] == '\r') (*owned)[--len] = 0;
    return *owned;
}

/* Prompt ids from --ids, or text through the tokenizer: as is (special tokens added as the
   post-processor says), or with --chat as one user message through the chat template. */
static int run_prompt_ids(const cli_opts *o, mlstack_model *m, const char *text, int32_t **ids) {
    mlstack_tokenizer *tok = mlstack_model_tokenizer(m);
    if (o->ids) {
        int k = cli_parse_ids(o->ids, ids);
        if (k <= 0) fprintf(stderr, "mlstack: bad --ids list: %s (expected comma-separated token ids)\n", o->ids);
        return k > 0 ? k : -1;
    }
    if (!tok) {
        fprintf(stderr, "mlstack: %s has no tokenizer.json: give the prompt as --ids 1,2,3\n", o->model);
        return -1;
    }
    if (o->chat) {
        const mlstack_chat_template *tpl = mlstack_model_chat_template(m);
        mlstack_chat_message msgs[2];
        int n = 0;
        if (!tpl) {
            fprintf(stderr, "mlstack: %s has no chat template: run it without --chat\n", o->model);
            return -1;
        }
        if (o->system) msgs[n].role = "system", msgs[n++].content = o->system;
        msgs[n].role = "user", msgs[n++].content = text;
        /* templates carry their own special tokens; the prompt's are text (--content-specials) */
        return cli_chat_encode(tpl, tok, msgs, n, o->content_specials, ids);
    }
    {
        int k = cli_encode(tok, text, strlen(text), o->no_special ? 0 : MLSTACK_ENCODE_ADD_SPECIAL, ids);
        if (k == 0) fprintf(stderr, "mlstack: the prompt encodes to no tokens\n");
        return k > 0 ? k : -1;
    }
}

/* --json-schema / --grammar / --regex: compiles the grammar for the model's vocabulary into
   *g (NULL without one). Returns 0 or an exit code (then *v and *g are NULL: nothing to free). */
static int run_grammar(const cli_opts *o, const mlstack_model *m, mlstack_vocab **v, mlstack_grammar **g) {
    mlstack_grammar_desc gd;
    mlstack_error err;
    char *text = NULL;
    const char *file = o->json_schema ? o->json_schema : o->grammar;
    int rc = 0;
    *v = NULL;
    *g = NULL;
    if (!o->json_schema && !o->grammar && !o->regex) return 0;
    if (!!o->json_schema + !!o->grammar + !!o->regex > 1)
        return cli_die("%s", "use one of --json-schema, --grammar, --regex");
    memset(&gd, 0, sizeof gd);
    gd.kind = o->json_schema ? MLSTACK_GRAMMAR_JSON_SCHEMA : o->grammar ? MLSTACK_GRAMMAR_GBNF : MLSTACK_GRAMMAR_REGEX;
    if (file) {
        FILE *f = fopen(file, "rb");
        long n = -1;
        if (f && fseek(f, 0, SEEK_END) == 0) n = ftell(f);
        if (n >= 0 && fseek(f, 0, SEEK_SET) == 0 && (text = (char *)malloc((size_t)n + 1)) != NULL &&
            fread(text, 1, (size_t)n, f) == (size_t)n)
            text[n] = 0, gd.len = (size_t)n;
        else
            free(text), text = NULL;
        if (f) fclose(f);
        if (!text) return cli_die("cannot read %s", file);
    }
    gd.text = text ? text : o->regex;
    if (mlstack_vocab_from_model(m, v, &err) != MLSTACK_OK) rc = cli_die("%s", err.message);
    else {
        gd.vocab = *v;
        if (mlstack_grammar_compile(&gd, g, &err) != MLSTACK_OK) rc = cli_die("%s", err.message);
    }
    free(text);
    if (rc) {
        mlstack_vocab_free(*v);
        *v = NULL;
    }
    return rc;
}

static int cmd_run(const cli_opts *o) {
    mlstack_model *m;
    mlstack_engine *e;
    mlstack_generate_desc g;
    run_stream st;
    int32_t *ids = NULL, seq;
    int n, rc, i;
    double load_s, pre_tps, dec_tps;
    char *owned = NULL;
    const char *text = NULL;
    mlstack_sampler_desc sd;
    mlstack_vocab *vocab = NULL;
    mlstack_grammar *gram = NULL;
    mlstack_request_status rst;
    memset(&rst, 0, sizeof rst);
    if (!o->ids) {
        text = run_prompt_text(o, &owned);
        if (!text) return cli_die("%s", "run needs a prompt: -p TEXT, --ids 1,2,3, or text on stdin");
    }
    if ((rc = cli_open_model(o, 1, &m, &e, &load_s)) != 0) {
        free(owned);
        return rc;
    }
    n = run_prompt_ids(o, m, text, &ids);
    if (n <= 0) {
        free(ids);
        free(owned);
        mlstack_engine_free(e);
        mlstack_model_close(m);
        return 1;
    }
    memset(&st, 0, sizeof st);
    st.json = o->json;
    if (mlstack_model_tokenizer(m) && !o->ids) {
        mlstack_detok_init(mlstack_model_tokenizer(m), MLSTACK_DECODE_SKIP_SPECIAL, &st.detok);
        if (!o->chat && !o->json) fputs(text, stdout);
    }
    if (!o->spec) mlstack_engine_seq_new(e, &seq); /* --spec: the scheduler takes the one sequence */
    else
        seq = -1;
    memset(&g, 0, sizeof g);
    g.seq = seq;
    g.prompt = ids;
    g.n_prompt = n;
    g.max_tokens = o->n_predict_set || !o->chat ? o->n_predict : 0;
    sd = o->sd;
    if ((rc = run_grammar(o, m, &vocab, &gram)) != 0) {
        mlstack_detok_free(st.detok);
        free(ids);
        free(owned);
        mlstack_engine_free(e);
        mlstack_model_close(m);
        return rc;
    }
    sd.grammar = gram;
    g.sampler = &sd;
    g.ignore_eos = o->ignore_eos;
    g.on_token = run_on_token;
    g.user = &st;
    if (o->profile && mlstack_engine_profile_start(e, NULL) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", mlstack_engine_error(e));
        mlstack_detok_free(st.detok);
        mlstack_engine_free(e);
        mlstack_grammar_free(gram);
        mlstack_vocab_free(vocab);
        mlstack_model_close(m);
        free(ids);
        free(owned);
        return 1;
    }
    if (o->spec) {
        mlstack_error err;
        rc = run_spec(e, &g, &rst, &err) == MLSTACK_OK ? 0 : 1;
        if (rc) fprintf(stderr, "mlstack: %s\n", err.message);
    } else {
        rc = mlstack_generate(e, &g) == MLSTACK_OK ? 0 : 1;
    }
    if (st.detok) {
        const char *tail;
        size_t len;
        if (mlstack_detok_flush(st.detok, &tail, &len) == MLSTACK_OK && len) {
            if (o->json) cli_buf_put(&st.text, tail, len);
            else
                fwrite(tail, 1, len, stdout);
        }
        mlstack_detok_free(st.detok);
    }
    pre_tps = g.prefill_seconds > 0 ? n / g.prefill_seconds : 0.0;
    dec_tps = g.decode_seconds > 0 && g.n_generated > 1 ? (g.n_generated - 1) / g.decode_seconds : 0.0;
    if (o->json) {
        cli_buf out;
        memset(&out, 0, sizeof out);
        cli_buf_puts(&out, "{\"text\":");
        cli_buf_json(&out, st.text.p ? st.text.p : "", st.text.n);
        cli_buf_puts(&out, ",\"ids\":[");
        for (i = 0; i < st.n_gen; i++) cli_buf_printf(&out, i ? ",%d" : "%d", (int)st.gen[i]);
        cli_buf_printf(&out, "],\"finish_reason\":\"%s\",\"prompt_tokens\":%d,\"completion_tokens\":%d,",
                       rc                                              ? "error"
                       : g.max_tokens && g.n_generated >= g.max_tokens ? "length"
                                                                       : "stop",
                       n, g.n_generated);
        cli_buf_printf(
            &out, "\"load_ms\":%.3f,\"prefill_ms\":%.3f,\"decode_ms\":%.3f,\"prefill_tps\":%.3f,\"decode_tps\":%.3f,",
            load_s * 1e3, g.prefill_seconds * 1e3, g.decode_seconds * 1e3, pre_tps, dec_tps);
        if (o->spec)
            cli_buf_printf(&out, "\"spec\":\"%s\",\"spec_drafted\":%d,\"spec_accepted\":%d,", o->spec, rst.n_drafted,
                           rst.n_accepted);
        cli_buf_printf(&out, "\"peak_rss_mib\":%.1f,", cli_peak_rss_mib());
        cli_buf_puts(&out, "\"version\":");
        cli_buf_json(&out, cli_version(), strlen(cli_version()));
        cli_buf_puts(&out, ",\"kernels\":");
        cli_buf_json(&out, mlstack_engine_kernels(e), strlen(mlstack_engine_kernels(e)));
        if (rc) {
            cli_buf_puts(&out, ",\"error\":");
            cli_buf_json(&out, mlstack_engine_error(e), strlen(mlstack_engine_error(e)));
        }
        cli_buf_puts(&out, "}\n");
        if (out.p) fputs(out.p, stdout);
        cli_buf_free(&out);
    } else {
        printf("\n");
    }
    fflush(stdout); /* the text first, then the statistics on stderr */
    if (rc && !o->spec) fprintf(stderr, "mlstack: %s\n", mlstack_engine_error(e));
    if (!o->json && o->spec)
        fprintf(stderr, "spec %s: drafted %d, accepted %d (%.0f%%)\n", o->spec, rst.n_drafted, rst.n_accepted,
                rst.n_drafted ? 100.0 * rst.n_accepted / rst.n_drafted : 0.0);
    if (!o->json) {
        double rss = cli_peak_rss_mib();
        fprintf(stderr,
                "kernels %s | load %.0f ms | prompt %d tokens, %.1f tokens/s | generated %d tokens, %.2f tokens/s",
                mlstack_engine_kernels(e), load_s * 1e3, n, pre_tps, g.n_generated, dec_tps);
        if (rss > 0) fprintf(stderr, " | peak RSS %.0f MiB", rss);
        fputc('\n', stderr);
    }
    if (o->profile && cli_report_profile(e, o->profile) != 0) rc = 1;
    mlstack_engine_free(e);
    mlstack_grammar_free(gram);
    mlstack_vocab_free(vocab);
    mlstack_model_close(m);
    cli_buf_free(&st.text);
    free(st.gen);
    free(ids);
    free(owned);
    return rc;
}

/* template: renders the folder's chat template over --messages F.json, raw to stdout. */
static int cmd_template(const cli_opts *o) {
    mlstack_chat_template *tpl;
    mlstack_template_options to;
    mlstack_error err;
    char *msgs = NULL, *out = NULL;
    size_t n = 0, out_len = 0;
    int rc = 0;
    if (!o->model) return cli_die("%s", "template needs -m MODEL");
    if (!o->messages) return cli_die("%s", "template needs --messages FILE.json (a list of {\"role\", \"content\"})");
    if (cli_read_file(o->messages, (size_t)64 << 20, &msgs, &n) != 0) return 1;
    if (mlstack_chat_template_open(o->model, &tpl, &err) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message[0] ? err.message : "the folder has no chat template");
        free(msgs);
        return 1;
    }
    memset(&to, 0, sizeof to);
    to.add_generation_prompt = o->add_gen;
    if (mlstack_chat_template_apply(tpl, NULL, msgs, n, &to, &out, &out_len, &err) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message);
        rc = 1;
    } else {
        fwrite(out, 1, out_len, stdout);
    }
    mlstack_template_free_output(out);
    mlstack_chat_template_close(tpl);
    free(msgs);
    return rc;
}

/* kl --cache-type-k/-v: the model with a KV cache of those types against the same model with an
   F16 cache, over the text's first n tokens (one sequence), scored on its second half, positions
   n/2 .. n-1 (what llama-perplexity --kl-divergence scores of a chunk of n). */
static int cmd_kl_kv(const cli_opts *o, mlstack_model *m, const mlstack_model_info *info, const int32_t *ids, int n) {
    mlstack_engine *re = NULL, *qe = NULL;
    mlstack_engine_desc ed;
    mlstack_error err;
    quality q;
    int rc = 0;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = o->threads;
    ed.max_seqs = 1;
    ed.isa = o->isa;
    ed.kv_type = MLSTACK_KV_F16;
    ed.kv_mem = (uint64_t)(n + 64) * cli_kv_token_bytes(info, MLSTACK_KV_F32, MLSTACK_KV_F32);
    if (cli_engine_init(m, &ed, 0, &re, &err) != MLSTACK_OK ||
        (cli_kv_type("--cache-type-k", o->cache_type_k, &ed.kv_type_k) ||
         cli_kv_type("--cache-type-v", o->cache_type_v, &ed.kv_type_v)) ||
        cli_engine_init(m, &ed, 0, &qe, &err) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message);
        rc = 1;
    } else if (quality_compare_from(re, &qe, 1, info->n_vocab, ids, n, 256, n / 2, &q) != 0) {
        fprintf(stderr, "mlstack: %s %s\n", mlstack_engine_error(re), mlstack_engine_error(qe));
        rc = 1;
    } else {
        printf("%s: %d tokens, scored %d .. %d; KV cache k %s v %s vs f16\n", o->model, n, n / 2, n - 1,
               o->cache_type_k ? o->cache_type_k : "f16", o->cache_type_v ? o->cache_type_v : "f16");
        printf("| cache k/v | positions | mean KL | max KL | top-1 agree | ppl (f16) | ppl (cache) |\n"
               "|---|---|---|---|---|---|---|\n| %s/%s | %d | %.6f | %.4f | %.2f%% | %.4f | %.4f |\n",
               o->cache_type_k ? o->cache_type_k : "f16", o->cache_type_v ? o->cache_type_v : "f16", q.n, q.mean_kl,
               q.max_kl, 100 * q.top1, q.ppl_ref, q.ppl_q);
    }
    if (qe) mlstack_engine_free(qe);
    if (re) mlstack_engine_free(re);
    return rc;
}

/* kl: quantized vs as-stored weights over a text (-f FILE): mean KL divergence of next-token
   distributions, top-1 agreement and perplexities, per --quant type (--cache-type-k/-v: a
   quantized KV cache against an F16 one instead, cmd_kl_kv). */
static int cmd_kl(const cli_opts *o) {
    static const struct {
        const char *name;
        mlstack_dtype type;
    } types[] = {{"q8_0", MLSTACK_DTYPE_Q8_0}, {"q4_1", MLSTACK_DTYPE_Q4_1}};
    mlstack_model *ref, *qm;
    mlstack_engine *re = NULL, *qe = NULL;
    mlstack_engine_desc ed;
    mlstack_model_desc md;
    mlstack_model_info info;
    mlstack_error err;
    char *text = NULL;
    size_t len = 0, n = 0;
    int32_t *ids = NULL;
    int rc = 0, t;
    cli_opts plain = *o;
    const char *files = o->files, *mix = cli_quant_mix(o->quant);
    if (!o->file) return cli_die("%s", "kl needs -f TEXT_FILE");
    if (cli_read_file(o->file, (size_t)64 << 20, &text, &len) != 0) return 1;
    plain.quant = MLSTACK_DTYPE_F32;
    if ((rc = cli_open_model(&plain, 1, &ref, NULL, NULL)) != 0) {
        free(text);
        return rc;
    }
    mlstack_model_get_info(ref, &info);
    if (!mlstack_model_tokenizer(ref)) {
        fprintf(stderr, "mlstack: %s has no tokenizer\n", o->model);
        rc = 1;
    } else {
        mlstack_tokenizer_encode(mlstack_model_tokenizer(ref), text, len, 0, NULL, 0, &n);
        ids = (int32_t *)malloc(sizeof(int32_t) * (n + 1));
        if (!ids || mlstack_tokenizer_encode(mlstack_model_tokenizer(ref), text, len, 0, ids, n + 1, &n) != MLSTACK_OK)
            rc = 1;
    }
    if (o->n_tokens > 0 && n > (size_t)o->n_tokens) n = (size_t)o->n_tokens;
    if (!rc && (int)n > info.max_position_embeddings) n = (size_t)info.max_position_embeddings;
    if (!rc && (o->cache_type_k || o->cache_type_v)) {
        rc = cmd_kl_kv(o, ref, &info, ids, (int)n);
        mlstack_model_close(ref);
        free(ids);
        free(text);
        return rc;
    }
    memset(&ed, 0, sizeof ed);
    ed.n_threads = o->threads;
    ed.max_seqs = 1;
    ed.isa = o->isa;
    ed.kv_type = MLSTACK_KV_F32; /* only the weights differ between the two runs */
    ed.kv_mem =
        (uint64_t)(n + 64) * (uint64_t)info.n_layers * 2 * (uint64_t)info.n_kv_heads * (uint64_t)info.head_dim * 4;
    if (!rc && cli_engine_init(ref, &ed, 0, &re, &err) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message);
        rc = 1;
    }
    if (!rc) printf("%s: %d tokens of %s; reference weights %s\n", o->model, (int)n, o->file, info.weight_format);
    if (!rc)
        printf("| type | positions | mean KL | max KL | top-1 agree | ppl (stored) | ppl (quant) "
               "|\n|---|---|---|---|---|---|---|\n");
    for (t = 0; !rc && (o->files ? files && *files : t < (mix ? 1 : 2)); t++) {
        quality q;
        char name[512];
        if (o->files) { /* the next file of the list, with its weights as stored */
            const char *e = strchr(files, ',');
            size_t l = e ? (size_t)(e - files) : strlen(files);
            snprintf(name, sizeof name, "%.*s", (int)(l < sizeof name ? l : sizeof name - 1), files);
            files += l + (e ? 1 : 0);
        } else if (mix) { /* a llama.cpp file type, quantized at load */
            snprintf(name, sizeof name, "%s", mix);
        } else if (o->quant && o->quant != types[t].type) {
            continue;
        }
        memset(&md, 0, sizeof md);
        md.path = o->files ? name : o->model;
        md.quant = o->files || mix ? (mlstack_dtype)0 : types[t].type;
        md.quant_mix = o->files ? NULL : mix;
        if (mlstack_model_open(&md, &qm, &err) != MLSTACK_OK || cli_engine_init(qm, &ed, 0, &qe, &err) != MLSTACK_OK) {
            fprintf(stderr, "mlstack: %s\n", err.message);
            rc = 1;
            break;
        }
        if (quality_compare(re, &qe, 1, info.n_vocab, ids, (int)n, 256, &q) != 0) {
            fprintf(stderr, "mlstack: %s %s\n", mlstack_engine_error(re), mlstack_engine_error(qe));
            rc = 1;
        } else {
            printf("| %s | %d | %.5f | %.4f | %.2f%% | %.3f | %.3f |\n", o->files || mix ? name : types[t].name, q.n,
                   q.mean_kl, q.max_kl, 100 * q.top1, q.ppl_ref, q.ppl_q);
        }
        fflush(stdout);
        mlstack_engine_free(qe);
        mlstack_model_close(qm);
    }
    if (re && !rc) mlstack_engine_free(re);
    mlstack_model_close(ref);
    free(ids);
    free(text);
    return rc;
}

/* quantize: open with --quant, write the folder with mlstack_model_save (panels; --rows: rows), or (-o NAME.gguf) a
   GGUF file with mlstack_model_save_gguf (--quant may then be left out: weights as stored). */
static int cmd_quantize(const cli_opts *o) {
    mlstack_model *m;
    mlstack_error err;
    int rc;
    double t0 = mlstack_clock_seconds();
    size_t ol;
    int gguf;
    if (!o->out) return cli_die("%s", "quantize needs -o OUT_DIR or -o OUT.gguf");
    ol = strlen(o->out);
    gguf = ol > 5 && strcmp(o->out + ol - 5, ".gguf") == 0;
    if (!o->quant && !gguf) return cli_die("%s", "quantize needs --quant TYPE (q8_0, q4_1, q4_k_m, ...)");
    if (gguf && !o->head_quant && (o->quant == MLSTACK_DTYPE_Q8_0 || o->quant == MLSTACK_DTYPE_Q4_1)) {
        /* a GGUF file: llama.cpp's Q8_0 / Q4_1 file types, as llama-quantize makes them */
        cli_opts g = *o;
        int k;
        for (k = 0; cli_quant_mix_names[k]; k++)
            if (!strcmp(cli_quant_mix_names[k], o->quant == MLSTACK_DTYPE_Q8_0 ? "Q8_0" : "Q4_1")) break;
        g.quant = (mlstack_dtype)(CLI_QUANT_MIX + k);
        rc = cli_open_model(&g, 1, &m, NULL, NULL);
    } else {
        rc = cli_open_model(o, 1, &m, NULL, NULL);
    }
    if (rc != 0) return rc;
    fprintf(stderr, "quantized in %.1f s, writing %s\n", mlstack_clock_seconds() - t0, o->out);
    if (gguf && o->save_rows) {
        mlstack_model_close(m);
        return cli_die("%s", "--rows is for a folder (-o DIR); a GGUF file holds rows always");
    }
    if ((gguf ? mlstack_model_save_gguf(m, o->out, &err)
              : mlstack_model_save_flags(m, o->out, o->save_rows ? MLSTACK_SAVE_ROWS : 0, &err)) != MLSTACK_OK) {
        cli_progress_done();
        fprintf(stderr, "mlstack: %s\n", err.message);
        rc = 1;
    } else if (gguf) {
        cli_progress_done();
        fprintf(stderr, "wrote %s: %s\n", o->out, cli_last_progress());
    }
    mlstack_model_close(m);
    return rc;
}

/* tokenize: needs only tokenizer.json (+ tokenizer_config.json) in DIR. Text from -p, -f FILE
   (bytes as they are) or the first free argument. */
static int cmd_tokenize(const cli_opts *o) {
    mlstack_tokenizer *tok;
    mlstack_error err;
    char *text = NULL;
    size_t len = 0, n = 0, i;
    int32_t *ids = NULL;
    int rc = 0, flags = o->no_special ? 0 : MLSTACK_ENCODE_ADD_SPECIAL;
    if (!o->model) return cli_die("%s", "tokenize needs -m MODEL");
    if (o->file) {
        if (cli_read_file(o->file, (size_t)1 << 30, &text, &len) != 0) return 1;
    } else if (o->prompt) {
        len = strlen(o->prompt);
        text = (char *)malloc(len + 1);
        if (!text) return cli_die("%s", "out of memory");
        memcpy(text, o->prompt, len);
    } else {
        return cli_die("%s", "tokenize needs TEXT, -p TEXT or -f FILE");
    }
    if (mlstack_tokenizer_open(o->model, &tok, &err) != MLSTACK_OK) {
        free(text);
        fprintf(stderr, "mlstack: %s\n", err.message);
        return 1;
    }
    if (mlstack_tokenizer_encode(tok, text, len, flags, NULL, 0, &n) != MLSTACK_ERR_LIMIT && n) rc = 1;
    ids = (int32_t *)malloc(sizeof(int32_t) * (n ? n : 1));
    if (rc || !ids || mlstack_tokenizer_encode(tok, text, len, flags, ids, n, &n) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", ids ? mlstack_tokenizer_error(tok) : "out of memory");
        rc = 1;
    } else if (o->ids_only) {
        for (i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)ids[i]);
        printf("\n");
    } else {
        for (i = 0; i < n; i++) {
            size_t pl = 0;
            const char *piece = mlstack_tokenizer_id_to_token(tok, ids[i], &pl);
            printf("%6d  %.*s\n", (int)ids[i], (int)pl, piece ? piece : "");
        }
    }
    free(ids);
    free(text);
    mlstack_tokenizer_close(tok);
    return rc;
}

static int cmd_eval(const cli_opts *o) {
    mlstack_model *m;
    mlstack_engine *e;
    mlstack_model_info info;
    mlstack_batch_row *rows;
    int32_t *ids = NULL, seq;
    int n, i, k, rc;
    if (!o->ids) return cli_die("%s", "eval needs --ids 1,2,3");
    n = cli_parse_ids(o->ids, &ids);
    if (n <= 0) {
        free(ids);
        return cli_die("bad --ids list: %s", o->ids);
    }
    if ((rc = cli_open_model(o, 1, &m, &e, NULL)) != 0) {
        free(ids);
        return rc;
    }
    mlstack_model_get_info(m, &info);
    mlstack_engine_seq_new(e, &seq);
    rows = (mlstack_batch_row *)calloc((size_t)n, sizeof *rows);
    for (i = 0; rows && i < n; i++) {
        rows[i].seq = seq;
        rows[i].pos = i;
        rows[i].token = ids[i];
        rows[i].want_logits = o->all || i == n - 1;
    }
    if (!rows || mlstack_engine_eval(e, rows, n) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", rows ? mlstack_engine_error(e) : "out of memory");
        rc = 1;
    } else {
        for (i = o->all ? 0 : n - 1; i < n; i++) {
            const float *l = mlstack_engine_logits(e, i);
            for (k = 0; k < info.n_vocab; k++) {
                uint32_t u;
                memcpy(&u, &l[k], 4);
                if (o->bits) printf(k ? " %08lx" : "%08lx", (unsigned long)u);
                else
                    printf(k ? " %.6g" : "%.6g", l[k]);
            }
            printf("\n");
        }
    }
    free(rows);
    mlstack_engine_free(e);
    mlstack_model_close(m);
    free(ids);
    return rc;
}

static int cmd_info(const cli_opts *o) {
    mlstack_model *m;
    mlstack_model_info in;
    mlstack_engine *e;
    int rc, i, counts[MLSTACK_DTYPE_COUNT_] = {0};
    uint64_t kv_per_token, wbytes = 0;
    char cpu[256];
    if ((rc = cli_open_model(o, 1, &m, &e, NULL)) != 0) return rc;
    mlstack_model_get_info(m, &in);
    for (i = 0; i < mlstack_model_tensor_count(m); i++) {
        mlstack_tensor t;
        if (mlstack_model_tensor_at(m, i, &t) == MLSTACK_OK) counts[t.dtype]++;
    }
    kv_per_token = in.kv_elems_per_token * 2; /* the attention layers' keys and values (MLA: latents) */
    printf("model          %s\n", o->model);
    printf("mlstack        %s\n", cli_version() + 8); /* after "mlstack " */
    printf("architecture   %s\n", in.architecture);
    printf("layers         %d\n", in.n_layers);
    printf("hidden         %d (ffn %d)\n", in.n_embd, in.n_ff);
    printf("heads          %d query, %d key/value, head_dim %d\n", in.n_heads, in.n_kv_heads, in.head_dim);
    printf("vocab          %d%s\n", in.n_vocab, in.tied_embeddings ? " (embeddings tied to the LM head)" : "");
    printf("context        %d positions, rope theta %g, rms eps %g\n", in.max_position_embeddings, in.rope_theta,
           in.rms_norm_eps);
    printf("bos / eos      %d /", (int)in.bos_id);
    for (i = 0; i < in.n_eos; i++) printf(" %d", (int)in.eos_ids[i]);
    printf("\n");
    printf("parameters     %.1f M, %.1f MiB of weights mapped (%d tensors:", in.n_params / 1e6,
           in.weight_bytes / 1048576.0, mlstack_model_tensor_count(m));
    for (i = 0; i < MLSTACK_DTYPE_COUNT_; i++)
        if (counts[i]) printf(" %d %s", counts[i], mlstack_dtype_name((mlstack_dtype)i));
    printf(")\n");
    printf("KV cache       %.1f KiB per token (f16); %.1f MiB for the default %d positions\n", kv_per_token / 1024.0,
           kv_per_token * (double)(in.max_position_embeddings < 4096 ? in.max_position_embeddings : 4096) / 1048576.0,
           in.max_position_embeddings < 4096 ? in.max_position_embeddings : 4096);
    mlstack_cpu_report(cpu, sizeof cpu);
    printf("kernels        %s | selected: %s\n", cpu, mlstack_engine_kernels(e));
    printf("weights        projections %s%s\n", in.weight_format,
           o->quant ? " (quantized at load)" : " (used as stored)");
    mlstack_model_get_info(m, &in); /* after the engine started: what it packed */
    printf("panels         %.1f MiB mapped in place from the folder, %.1f MiB packed from rows at start\n",
           in.mapped_panel_bytes / 1048576.0, in.packed_bytes / 1048576.0);
    for (i = 0; i < mlstack_engine_n_ranks(e); i++) { /* --ranks N: what each rank holds */
        mlstack_rank_info ri;
        if (mlstack_engine_rank_info(e, i, &ri) != MLSTACK_OK) continue;
        char vocab[48] = "none";
        if (ri.vocab1 > ri.vocab0) snprintf(vocab, sizeof vocab, "%d-%d", ri.vocab0, ri.vocab1 - 1);
        printf("rank %-3d       stage %d of %d: layers %d-%d%s%s; heads %d-%d (kv %d-%d), ffn %d-%d, rows %d-%d, "
               "vocab %s: %.1f MiB of weights (%.1f MiB shared, %.1f MiB read from the checkpoint), %.1f KiB per KV "
               "page, %d threads\n",
               i, ri.stage, ri.n_stages, ri.layer0, ri.layer1 - 1, ri.stage == 0 ? " + embedding" : "",
               ri.stage == 0 ? ", final norm and LM head" : "", ri.head0, ri.head1 - 1, ri.kv_head0, ri.kv_head1 - 1,
               ri.ffn0, ri.ffn1 - 1, ri.embd0, ri.embd1 - 1, vocab, ri.weight_bytes / 1048576.0,
               ri.replicated_bytes / 1048576.0, ri.checkpoint_bytes / 1048576.0, ri.kv_page_bytes / 1024.0,
               ri.n_threads);
        wbytes += ri.weight_bytes;
    }
    /* an untied embedding table stays mapped as stored: only the rows of tokens looked up are read */
    printf("memory         %.1f MiB of weights the kernels read + KV %.1f MiB at most; peak RSS after loading %.0f "
           "MiB\n",
           wbytes / 1048576.0,
           kv_per_token * (double)(in.max_position_embeddings < 4096 ? in.max_position_embeddings : 4096) / 1048576.0,
           cli_peak_rss_mib());
    mlstack_engine_free(e);
    mlstack_model_close(m);
    return 0;
}

/* ---- entry points (main.c's table) and their help ---- */

static const cli_help HELP_RUN = {
    "mlstack run -m MODEL [-p TEXT | --ids 1,2,3 | < FILE] [options]",
    "Generates a continuation, streamed to stdout; timings go to stderr. Without -p or --ids the\n"
    "prompt is read from stdin.\n"
    "  -p, --prompt TEXT        prompt text; BOS/EOS added as the tokenizer says unless --no-special\n"
    "      --ids LIST           prompt as comma-separated token ids\n"
    "      --chat               the prompt is one user message: apply the chat template (with\n"
    "                           --system TEXT as the system message) and stop at end of turn\n"
    "      --system TEXT        (--chat) system message\n"
    "      --content-specials M (--chat) text (default): special-token text in the prompt (say\n"
    "                           \"<|im_end|>\") is encoded as plain text; parse: as special tokens,\n"
    "                           as transformers' apply_chat_template(tokenize=True)\n"
    "      --json               print one JSON object (text, ids, token counts, timings) instead\n"
    "      --no-special         encode without adding special tokens\n"
    "      --ignore-eos         keep generating past end-of-sequence tokens\n"
    "      --json-schema FILE   (run) constrain the output to JSON valid for the schema in FILE\n"
    "      --grammar FILE       (run) constrain the output to the GBNF grammar in FILE\n"
    "      --regex RE           (run) constrain the output to a whole match of RE\n"
    "      --profile FILE       write a Chrome trace of every eval to FILE and an op summary to stderr\n",
    1, 1};
int cli_cmd_run(int argc, char **argv) { return cli_run_with_opts(argc, argv, &HELP_RUN, cmd_run); }

static const cli_help HELP_EVAL = {
    "mlstack eval -m MODEL --ids 1,2,3 [--all] [--bits]",
    "Prints logits as text, space-separated %.6g, one row per position (only the last position\n"
    "without --all). Keys and values are kept in f32.\n"
    "      --ids LIST           comma-separated token ids\n"
    "      --all                every position\n"
    "      --bits               each logit as the 8 hex digits of its IEEE-754 bits (exact: for\n"
    "                           comparing builds, kernel paths and machines)\n",
    1, 0};
int cli_cmd_eval(int argc, char **argv) { return cli_run_with_opts(argc, argv, &HELP_EVAL, cmd_eval); }

static const cli_help HELP_INFO = {"mlstack info -m MODEL",
                                   "Architecture, sizes, dtypes, kernels and the KV memory plan.\n", 1, 0};
int cli_cmd_info(int argc, char **argv) { return cli_run_with_opts(argc, argv, &HELP_INFO, cmd_info); }

static const cli_help HELP_TOKENIZE = {
    "mlstack tokenize -m MODEL [--ids-only] [--no-special] (TEXT | -p TEXT | -f FILE)",
    "Ids (and pieces) as Hugging Face tokenizers gives them; needs only tokenizer.json\n"
    "(+ tokenizer_config.json) in MODEL.\n"
    "  -m, --model MODEL        model folder or .gguf file (only its tokenizer is read)\n"
    "  -f, --file FILE          read the text from FILE, byte for byte\n"
    "      --ids-only           print only the ids, space-separated on one line\n"
    "      --no-special         add_special_tokens=False (no BOS/EOS added)\n",
    0, 0};
int cli_cmd_tokenize(int argc, char **argv) { return cli_run_with_opts(argc, argv, &HELP_TOKENIZE, cmd_tokenize); }

static const cli_help HELP_TEMPLATE = {
    "mlstack template -m MODEL --messages F.json [--add-generation-prompt]",
    "Renders the model's chat template over F.json (a list of {\"role\", \"content\"}), raw to\n"
    "stdout; needs only the tokenizer files.\n"
    "  -m, --model MODEL        model folder or .gguf file (only its template is read)\n"
    "      --messages F.json    the conversation\n"
    "      --add-generation-prompt  end with the assistant's turn opened\n",
    0, 0};
int cli_cmd_template(int argc, char **argv) { return cli_run_with_opts(argc, argv, &HELP_TEMPLATE, cmd_template); }

static const cli_help HELP_KL = {
    "mlstack kl -m MODEL -f TEXT [--quant TYPE | --files A.gguf,B.gguf] [--tokens N]",
    "Quantized vs stored weights over a text: mean KL divergence of the next-token distributions,\n"
    "top-1 agreement and perplexities.\n"
    "  -f, --file FILE          the text\n"
    "      --files A,B          compare these models (GGUF files or folders, weights as stored)\n"
    "                           with -m instead of -m quantized at load\n"
    "      --tokens N           at most N tokens of it\n"
    "      --cache-type-k T, --cache-type-v T   instead: a KV cache of those types (q8_0, q4_0, ...)\n"
    "                           against an f16 one, the weights as stored, scored on the second half\n",
    1, 0};
int cli_cmd_kl(int argc, char **argv) { return cli_run_with_opts(argc, argv, &HELP_KL, cmd_kl); }

static const cli_help HELP_QUANTIZE = {
    "mlstack quantize -m MODEL [--quant TYPE] [--imatrix FILE] -o OUT|OUT.gguf [--rows]",
    "Writes a folder whose weights load already quantized (config, tokenizer and template copied),\n"
    "or, when OUT ends in .gguf, a GGUF file llama.cpp loads (without --quant: weights as stored).\n"
    "TYPE: q8_0 or q4_1 (mlstack's formats; into a GGUF file llama.cpp's Q8_0 / Q4_1 file types,\n"
    "made as llama-quantize makes them), or a llama.cpp file type (see --quant): the same tensor\n"
    "types and, from the same float weights, the same bytes as llama-quantize (with --imatrix as\n"
    "llama-quantize --imatrix). Written, byte-identical: Q4_0 .. Q8_0, the K-quant mixes, IQ4_NL,\n"
    "IQ4_XS, IQ3_XXS/XS/S/M, IQ2_XXS/XS/S/M, IQ1_S/M (IQ1_*, IQ2_*, IQ3_XXS need --imatrix, as in\n"
    "llama-quantize), TQ1_0/TQ2_0.\n"
    "The folder's model.safetensors holds each Q8_0/Q4_1 projection as the P16 panels the SIMD\n"
    "kernels read (U8 tensors marked \"mlstack.layout.NAME\": \"P16\" in its metadata): opening it\n"
    "maps them in place, with no copy and no packing at start (the scalar kernels, --ranks and\n"
    "saving derive the rows from them exactly).\n"
    "  -o, --out DIR|FILE.gguf  the new folder or GGUF file\n"
    "      --imatrix FILE       with a llama.cpp TYPE: llama-imatrix's importance matrix (GGUF or the\n"
    "                           legacy .dat) for the attention and MLP projections and the head\n"
    "      --rows               the folder with the blocks as rows (the format of builds before\n"
    "                           panels were saved; every engine packs them at start)\n",
    1, 0};
int cli_cmd_quantize(int argc, char **argv) { return cli_run_with_opts(argc, argv, &HELP_QUANTIZE, cmd_quantize); }
