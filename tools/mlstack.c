/* mlstack command-line tool: run, eval, info. One static binary over mlstack.h. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *USAGE =
    "usage: mlstack COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  run   -m DIR (-p TEXT | --ids 1,2,3)  generate a continuation, streamed to stdout\n"
    "  eval  -m DIR --ids 1,2,3 [--all]      print logits, one row per position (%.6g, space-separated);\n"
    "                                        only the last position without --all\n"
    "  info  -m DIR                          architecture, sizes, dtypes and memory plan\n"
    "  quantize -m DIR --quant q8_0|q4_0 -o OUT   write a folder whose weights load already quantized\n"
    "  tokenize -m DIR [--ids-only] [--no-special] (TEXT | -f FILE)\n"
    "                                        ids (and pieces) as Hugging Face tokenizers gives them;\n"
    "                                        needs only tokenizer.json (+ tokenizer_config.json)\n"
    "\n"
    "options:\n"
    "  -m, --model DIR          Hugging Face model folder (config.json + *.safetensors)\n"
    "  -p, --prompt TEXT        prompt text (needs tokenizer.json in DIR); BOS/EOS added as the\n"
    "                           tokenizer's post-processor says, unless --no-special\n"
    "  -f, --file FILE          (tokenize) read the text from FILE, byte for byte\n"
    "      --ids-only           (tokenize) print only the ids, space-separated on one line\n"
    "      --no-special         encode without adding special tokens (add_special_tokens=False)\n"
    "      --ids LIST           prompt as comma-separated token ids\n"
    "  -n, --n-predict N        tokens to generate (default 64; 0 = until EOS or the context is full)\n"
    "  -t, --threads N          worker threads (default: all online CPUs)\n"
    "      --temp F             temperature (default 0 = greedy)\n"
    "      --top-k N            keep the N most likely tokens (default 0 = off)\n"
    "      --top-p F            nucleus sampling threshold (default 1 = off)\n"
    "      --min-p F            drop tokens below F x the top probability (default 0 = off)\n"
    "      --repeat-penalty F   Hugging Face repetition penalty (default 1 = off)\n"
    "      --frequency-penalty F, --presence-penalty F   OpenAI-style penalties (default 0)\n"
    "      --seed N             RNG seed for sampling (default 0)\n"
    "      --ignore-eos         keep generating past end-of-sequence tokens\n"
    "      --quant TYPE         quantize weights at load: q8_0 or q4_0 (default: as stored)\n"
    "      --isa CAP            highest kernel path: scalar, avx2, avx512 or neon (default: best;\n"
    "                           the MLSTACK_ISA environment variable sets the same cap)\n"
    "      --all                (eval) print every position, not only the last\n"
    "  -h, --help               this text\n";

typedef struct opts {
    const char *cmd, *model, *prompt, *ids, *isa, *file;
    const char *out;
    int ids_only, no_special;
    mlstack_dtype quant;
    int n_predict, threads, all, ignore_eos;
    mlstack_sampler_desc sd;
} opts;

static int die(const char *fmt, const char *a) {
    fprintf(stderr, "mlstack: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    return 2;
}

static int parse_num(const char *s, double lo, double hi, double *out) {
    char *end;
    double v;
    if (!s || !*s) return 0;
    v = strtod(s, &end);
    if (*end || v != v || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

static int parse_args(int argc, char **argv, opts *o) {
    int i;
    memset(o, 0, sizeof *o);
    o->n_predict = 64;
    if (argc < 2) return 1;
    o->cmd = argv[1];
    for (i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
#define FLAG(s, l) (strcmp(a, s) == 0 || strcmp(a, l) == 0)
#define NEED_V()                                                          \
    do {                                                                  \
        if (!v) return die("option %s needs a value", a);                 \
        i++;                                                              \
    } while (0)
#define NUM(lo, hi)                                                        \
    do {                                                                   \
        NEED_V();                                                          \
        if (!parse_num(v, lo, hi, &x)) return die("bad value for %s", a);  \
    } while (0)
        if (FLAG("-h", "--help")) return 1;
        else if (FLAG("-m", "--model")) { NEED_V(); o->model = v; }
        else if (FLAG("-p", "--prompt")) { NEED_V(); o->prompt = v; }
        else if (FLAG("--ids", "--ids")) { NEED_V(); o->ids = v; }
        else if (FLAG("-n", "--n-predict")) { NUM(0, 1e9); o->n_predict = (int)x; }
        else if (FLAG("-t", "--threads")) { NUM(1, 256); o->threads = (int)x; }
        else if (FLAG("--temp", "--temperature")) { NUM(0, 100); o->sd.temperature = (float)x; }
        else if (FLAG("--top-k", "--top-k")) { NUM(0, 1e9); o->sd.top_k = (int)x; }
        else if (FLAG("--top-p", "--top-p")) { NUM(0, 1); o->sd.top_p = (float)x; }
        else if (FLAG("--min-p", "--min-p")) { NUM(0, 1); o->sd.min_p = (float)x; }
        else if (FLAG("--repeat-penalty", "--repeat-penalty")) { NUM(0, 100); o->sd.repeat_penalty = (float)x; }
        else if (FLAG("--frequency-penalty", "--frequency-penalty")) { NUM(-100, 100); o->sd.frequency_penalty = (float)x; }
        else if (FLAG("--presence-penalty", "--presence-penalty")) { NUM(-100, 100); o->sd.presence_penalty = (float)x; }
        else if (FLAG("--seed", "--seed")) { NUM(0, 1.8e19); o->sd.seed = (uint64_t)x; }
        else if (FLAG("--ignore-eos", "--ignore-eos")) o->ignore_eos = 1;
        else if (FLAG("--all", "--all")) o->all = 1;
        else if (FLAG("--isa", "--isa")) { NEED_V(); o->isa = v; }
        else if (FLAG("-f", "--file")) { NEED_V(); o->file = v; }
        else if (FLAG("-o", "--out")) { NEED_V(); o->out = v; }
        else if (FLAG("--ids-only", "--ids-only")) o->ids_only = 1;
        else if (FLAG("--no-special", "--no-special")) o->no_special = 1;
        else if (a[0] != '-' && !o->prompt) o->prompt = a;
        else if (FLAG("--quant", "--quant")) {
            NEED_V();
            if (strcmp(v, "q8_0") == 0 || strcmp(v, "Q8_0") == 0) o->quant = MLSTACK_DTYPE_Q8_0;
            else if (strcmp(v, "q4_0") == 0 || strcmp(v, "Q4_0") == 0) o->quant = MLSTACK_DTYPE_Q4_0;
            else if (strcmp(v, "none") == 0) o->quant = MLSTACK_DTYPE_F32;
            else return die("--quant %s: expected q8_0, q4_0 or none", v);
        }
        else return die("unknown option %s (see mlstack --help)", a);
#undef FLAG
#undef NEED_V
#undef NUM
    }
    return 0;
}

/* "1,2,3" -> ids; returns count or -1 on a malformed list. */
static int parse_ids(const char *s, int32_t **out) {
    int n = 0, cap = 16;
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)cap);
    while (ids && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > INT32_MAX || (*end && *end != ',')) {
            free(ids);
            return -1;
        }
        if (n == cap) {
            int32_t *p = (int32_t *)realloc(ids, sizeof(int32_t) * (size_t)(cap *= 2));
            if (!p) break;
            ids = p;
        }
        ids[n++] = (int32_t)v;
        s = *end ? end + 1 : end;
    }
    *out = ids;
    return ids ? n : -1;
}

static int open_model(const opts *o, mlstack_model **m, mlstack_engine **e, double *load_s) {
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_error err;
    double t0 = mlstack__now();
    if (!o->model) return die("%s needs -m DIR", o->cmd);
    memset(&md, 0, sizeof md);
    md.path = o->model;
    md.quant = o->quant;
    if (mlstack_model_open(&md, m, &err) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message);
        return 1;
    }
    if (e) {
        memset(&ed, 0, sizeof ed);
        ed.n_threads = o->threads;
        ed.max_seqs = 1;
        ed.isa = o->isa;
        /* eval exists to check logits against references: keep keys and values exact */
        if (strcmp(o->cmd, "eval") == 0) ed.kv_type = MLSTACK_KV_F32;
        if (mlstack_engine_init(*m, &ed, e, &err) != MLSTACK_OK) {
            fprintf(stderr, "mlstack: %s\n", err.message);
            mlstack_model_close(*m);
            return 1;
        }
    }
    if (load_s) *load_s = mlstack__now() - t0;
    return 0;
}

/* Streams generated tokens: text through the tokenizer's streaming decoder, ids otherwise. */
typedef struct stream {
    mlstack_detok *detok;
} stream;

static int on_token(void *user, int32_t tok) {
    stream *st = (stream *)user;
    const char *text;
    size_t len;
    if (!st->detok) {
        printf(" %d", (int)tok);
    } else if (mlstack_detok_push(st->detok, tok, &text, &len) == MLSTACK_OK && len) {
        fwrite(text, 1, len, stdout);
    }
    fflush(stdout);
    return 0;
}

/* Prompt ids from --ids, or -p text through the model's tokenizer (special tokens added as
   the tokenizer's post-processor says). Returns the count, or -1 after printing why. */
static int prompt_ids(const opts *o, mlstack_model *m, int32_t **ids) {
    mlstack_tokenizer *tok = mlstack_model_tokenizer(m);
    size_t n = 0, len;
    mlstack_result r;
    if (o->ids) {
        int k = parse_ids(o->ids, ids);
        if (k <= 0) fprintf(stderr, "mlstack: bad --ids list: %s\n", o->ids);
        return k > 0 ? k : -1;
    }
    if (!o->prompt) {
        fprintf(stderr, "mlstack: %s needs a prompt: -p TEXT or --ids 1,2,3\n", o->cmd);
        return -1;
    }
    if (!tok) {
        fprintf(stderr, "mlstack: %s has no tokenizer.json: give the prompt as --ids\n", o->model);
        return -1;
    }
    len = strlen(o->prompt);
    r = mlstack_tokenizer_encode(tok, o->prompt, len, o->no_special ? 0 : MLSTACK_ENCODE_ADD_SPECIAL, NULL, 0, &n);
    if (r != MLSTACK_OK && r != MLSTACK_ERR_LIMIT) {
        fprintf(stderr, "mlstack: %s\n", mlstack_tokenizer_error(tok));
        return -1;
    }
    *ids = (int32_t *)malloc(sizeof(int32_t) * (n ? n : 1));
    if (!*ids || mlstack_tokenizer_encode(tok, o->prompt, len, o->no_special ? 0 : MLSTACK_ENCODE_ADD_SPECIAL, *ids, n, &n) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", *ids ? mlstack_tokenizer_error(tok) : "out of memory");
        return -1;
    }
    if (n == 0) fprintf(stderr, "mlstack: the prompt encodes to no tokens\n");
    return n ? (int)n : -1;
}

static int cmd_run(const opts *o) {
    mlstack_model *m;
    mlstack_engine *e;
    mlstack_generate_desc g;
    stream st;
    int32_t *ids = NULL, seq;
    int n, rc;
    double load_s;
    if (!o->ids && !o->prompt) return die("%s", "run needs a prompt: -p TEXT or --ids 1,2,3");
    if ((rc = open_model(o, &m, &e, &load_s)) != 0) return rc;
    n = prompt_ids(o, m, &ids);
    if (n <= 0) {
        free(ids);
        mlstack_engine_free(e);
        mlstack_model_close(m);
        return 1;
    }
    memset(&st, 0, sizeof st);
    if (mlstack_model_tokenizer(m) && !o->ids) {
        mlstack_detok_init(mlstack_model_tokenizer(m), MLSTACK_DECODE_SKIP_SPECIAL, &st.detok);
        fputs(o->prompt, stdout);
    }
    mlstack_engine_seq_new(e, &seq);
    memset(&g, 0, sizeof g);
    g.seq = seq;
    g.prompt = ids;
    g.n_prompt = n;
    g.max_tokens = o->n_predict;
    g.sampler = &o->sd;
    g.ignore_eos = o->ignore_eos;
    g.on_token = on_token;
    g.user = &st;
    rc = mlstack_generate(e, &g) == MLSTACK_OK ? 0 : 1;
    if (st.detok) {
        const char *text;
        size_t len;
        if (mlstack_detok_flush(st.detok, &text, &len) == MLSTACK_OK && len) fwrite(text, 1, len, stdout);
        mlstack_detok_free(st.detok);
    }
    printf("\n");
    if (rc) fprintf(stderr, "mlstack: %s\n", mlstack_engine_error(e));
    fprintf(stderr, "kernels %s | load %.0f ms | prompt %d tokens, %.1f tokens/s | generated %d tokens, %.2f tokens/s\n",
            mlstack_engine_kernels(e), load_s * 1e3, n, g.prefill_seconds > 0 ? n / g.prefill_seconds : 0.0,
            g.n_generated, g.decode_seconds > 0 && g.n_generated > 1 ? (g.n_generated - 1) / g.decode_seconds : 0.0);
    mlstack_engine_free(e);
    mlstack_model_close(m);
    free(ids);
    return rc;
}

/* quantize: open with --quant, write the folder with mlstack_model_save. */
static int cmd_quantize(const opts *o) {
    mlstack_model *m;
    mlstack_error err;
    int rc;
    double t0 = mlstack__now();
    if (!o->out) return die("%s", "quantize needs -o OUT_DIR");
    if (!o->quant) return die("%s", "quantize needs --quant q8_0 or q4_0");
    if ((rc = open_model(o, &m, NULL, NULL)) != 0) return rc;
    fprintf(stderr, "quantized in %.1f s, writing %s\n", mlstack__now() - t0, o->out);
    if (mlstack_model_save(m, o->out, &err) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message);
        rc = 1;
    }
    mlstack_model_close(m);
    return rc;
}

/* tokenize: needs only tokenizer.json (+ tokenizer_config.json) in DIR. Text from -p, -f FILE
   (bytes as they are) or the first free argument. */
static int cmd_tokenize(const opts *o) {
    mlstack_tokenizer *tok;
    mlstack_error err;
    char *text = NULL;
    size_t len = 0, n = 0, i;
    int32_t *ids = NULL;
    int rc = 0, flags = o->no_special ? 0 : MLSTACK_ENCODE_ADD_SPECIAL;
    if (!o->model) return die("%s", "tokenize needs -m DIR");
    if (o->file) {
        FILE *f = fopen(o->file, "rb");
        size_t cap = 1 << 16;
        if (!f) return die("cannot open %s", o->file);
        text = (char *)malloc(cap);
        while (text) {
            size_t got = fread(text + len, 1, cap - len, f);
            len += got;
            if (len < cap) break;
            text = (char *)realloc(text, cap *= 2);
        }
        fclose(f);
        if (!text) return die("%s", "out of memory");
    } else if (o->prompt) {
        len = strlen(o->prompt);
        text = (char *)malloc(len + 1);
        if (!text) return die("%s", "out of memory");
        memcpy(text, o->prompt, len);
    } else {
        return die("%s", "tokenize needs TEXT, -p TEXT or -f FILE");
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

static int cmd_eval(const opts *o) {
    mlstack_model *m;
    mlstack_engine *e;
    mlstack_model_info info;
    mlstack_batch_row *rows;
    int32_t *ids = NULL, seq;
    int n, i, k, rc;
    if (!o->ids) return die("%s", "eval needs --ids 1,2,3");
    n = parse_ids(o->ids, &ids);
    if (n <= 0) {
        free(ids);
        return die("bad --ids list: %s", o->ids);
    }
    if ((rc = open_model(o, &m, &e, NULL)) != 0) {
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
            for (k = 0; k < info.n_vocab; k++) printf(k ? " %.6g" : "%.6g", l[k]);
            printf("\n");
        }
    }
    free(rows);
    mlstack_engine_free(e);
    mlstack_model_close(m);
    free(ids);
    return rc;
}

static int cmd_info(const opts *o) {
    mlstack_model *m;
    mlstack_model_info in;
    mlstack_engine *e;
    int rc, i, counts[MLSTACK_DTYPE_COUNT_] = {0};
    uint64_t kv_per_token;
    char cpu[256];
    if ((rc = open_model(o, &m, &e, NULL)) != 0) return rc;
    mlstack_model_get_info(m, &in);
    for (i = 0; i < mlstack_model_tensor_count(m); i++) {
        mlstack_tensor t;
        if (mlstack_model_tensor_at(m, i, &t) == MLSTACK_OK) counts[t.dtype]++;
    }
    kv_per_token = (uint64_t)in.n_layers * 2 * (uint64_t)in.n_kv_heads * (uint64_t)in.head_dim * 2;
    printf("model          %s\n", o->model);
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
    printf("weights        projections %s%s\n", mlstack_dtype_name(in.weight_dtype),
           o->quant ? " (quantized at load)" : " (used as stored)");
    mlstack_engine_free(e);
    mlstack_model_close(m);
    return 0;
}

int main(int argc, char **argv) {
    opts o;
    int r = parse_args(argc, argv, &o);
    if (r == 1) {
        fputs(USAGE, r == 1 && argc >= 2 ? stdout : stderr);
        return argc >= 2 ? 0 : 2;
    }
    if (r) return r;
    if (strcmp(o.cmd, "run") == 0) return cmd_run(&o);
    if (strcmp(o.cmd, "tokenize") == 0) return cmd_tokenize(&o);
    if (strcmp(o.cmd, "quantize") == 0) return cmd_quantize(&o);
    if (strcmp(o.cmd, "eval") == 0) return cmd_eval(&o);
    if (strcmp(o.cmd, "info") == 0) return cmd_info(&o);
    return die("unknown command '%s' (see mlstack --help)", o.cmd);
}
