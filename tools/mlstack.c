/* mlstack command-line tool: run, eval, info, bench. One static binary over mlstack.h. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "quality.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *USAGE =
    "usage: mlstack COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  run   -m DIR (-p TEXT | --ids 1,2,3)  generate a continuation, streamed to stdout\n"
    "  eval  -m DIR --ids 1,2,3 [--all]      print logits, one row per position (%.6g, space-separated);\n"
    "                                        only the last position without --all\n"
    "  info  -m DIR                          architecture, sizes, dtypes and memory plan\n"
    "  chat  -m DIR [--system TEXT] [-p TEXT]  a conversation through the model's chat template, one\n"
    "                                        user turn per stdin line; earlier turns' KV is reused\n"
    "  template -m DIR --messages F.json [--add-generation-prompt]\n"
    "                                        the chat template rendered over F.json, raw\n"
    "  kl    -m DIR -f TEXT [--quant TYPE] [--tokens N]   quantized vs stored weights over a text:\n"
    "                                        mean KL divergence, top-1 agreement, perplexities\n"
    "  quantize -m DIR --quant q8_0|q4_1 -o OUT   write a folder whose weights load already quantized\n"
    "  tokenize -m DIR [--ids-only] [--no-special] (TEXT | -f FILE)\n"
    "                                        ids (and pieces) as Hugging Face tokenizers gives them;\n"
    "                                        needs only tokenizer.json (+ tokenizer_config.json)\n"
    "  bench (-m DIR | --shape CONFIG.json)  prompt (pp) and generation (tg) tokens/s, memory\n"
    "                                        bandwidth and the roofline; see mlstack bench --help\n"
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
    "  -t, --threads N          worker threads (default: the physical cores)\n"
    "      --temp F             temperature (default 0 = greedy)\n"
    "      --top-k N            keep the N most likely tokens (default 0 = off)\n"
    "      --top-p F            nucleus sampling threshold (default 1 = off)\n"
    "      --min-p F            drop tokens below F x the top probability (default 0 = off)\n"
    "      --repeat-penalty F   Hugging Face repetition penalty (default 1 = off)\n"
    "      --frequency-penalty F, --presence-penalty F   OpenAI-style penalties (default 0)\n"
    "      --seed N             RNG seed for sampling (default 0)\n"
    "      --ignore-eos         keep generating past end-of-sequence tokens\n"
    "      --json-schema FILE   (run) constrain the output to JSON valid for the schema in FILE\n"
    "      --grammar FILE       (run) constrain the output to the GBNF grammar in FILE\n"
    "      --regex RE           (run) constrain the output to a whole match of RE\n"
    "      --quant TYPE         quantize weights at load: q8_0 or q4_1 (default: as stored)\n"
    "      --bf16-dot           BF16 weights: round activations to bf16 and use AVX512_BF16 dot\n"
    "                           products (faster prefill, less exact; where the CPU has it)\n"
    "      --isa CAP            highest kernel path: scalar, avx2, avx512 or neon (default: best;\n"
    "                           the MLSTACK_ISA environment variable sets the same cap)\n"
    "      --all                (eval) print every position, not only the last\n"
    "      --profile FILE       (run) write a Chrome trace of every eval to FILE (open it in\n"
    "                           Perfetto or chrome://tracing) and print the op summary to stderr\n"
    "  -h, --help               this text\n";

typedef struct opts {
    const char *cmd, *model, *prompt, *ids, *isa, *file, *profile;
    const char *out, *messages, *system;
    int ids_only, no_special, add_gen, n_tokens, bf16_dot;
    mlstack_dtype quant;
    int n_predict, threads, all, ignore_eos;
    mlstack_sampler_desc sd;
    const char *json_schema, *grammar, *regex; /* run: constrained output */
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
    if (strcmp(o->cmd, "-h") == 0 || strcmp(o->cmd, "--help") == 0 || strcmp(o->cmd, "help") == 0) return 1;
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
        else if (FLAG("--json-schema", "--json-schema")) { NEED_V(); o->json_schema = v; }
        else if (FLAG("--grammar", "--grammar")) { NEED_V(); o->grammar = v; }
        else if (FLAG("--regex", "--regex")) { NEED_V(); o->regex = v; }
        else if (FLAG("--bf16-dot", "--bf16-dot")) o->bf16_dot = 1;
        else if (FLAG("--all", "--all")) o->all = 1;
        else if (FLAG("--isa", "--isa")) { NEED_V(); o->isa = v; }
        else if (FLAG("--profile", "--profile")) { NEED_V(); o->profile = v; }
        else if (FLAG("-f", "--file")) { NEED_V(); o->file = v; }
        else if (FLAG("-o", "--out")) { NEED_V(); o->out = v; }
        else if (FLAG("--messages", "--messages")) { NEED_V(); o->messages = v; }
        else if (FLAG("--system", "--system")) { NEED_V(); o->system = v; }
        else if (FLAG("--tokens", "--tokens")) { NUM(2, 1e7); o->n_tokens = (int)x; }
        else if (FLAG("--add-generation-prompt", "--add-generation-prompt")) o->add_gen = 1;
        else if (FLAG("--ids-only", "--ids-only")) o->ids_only = 1;
        else if (FLAG("--no-special", "--no-special")) o->no_special = 1;
        else if (a[0] != '-' && !o->prompt) o->prompt = a;
        else if (FLAG("--quant", "--quant")) {
            NEED_V();
            if (strcmp(v, "q8_0") == 0 || strcmp(v, "Q8_0") == 0) o->quant = MLSTACK_DTYPE_Q8_0;
            else if (strcmp(v, "q4_1") == 0 || strcmp(v, "Q4_1") == 0) o->quant = MLSTACK_DTYPE_Q4_1;
            else if (strcmp(v, "none") == 0) o->quant = MLSTACK_DTYPE_F32;
            else return die("--quant %s: expected q8_0, q4_1 or none", v);
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
        ed.bf16_activations = o->bf16_dot;
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
    mlstack__buf *reply; /* chat: the decoded reply is kept here too */
    int echo;
    int32_t *gen;        /* chat: generated ids */
    int n_gen, cap_gen;
} stream;

static int on_token(void *user, int32_t tok) {
    stream *st = (stream *)user;
    const char *text;
    size_t len;
    if (st->reply) {
        if (st->n_gen == st->cap_gen) {
            int32_t *p = (int32_t *)realloc(st->gen, sizeof(int32_t) * (size_t)(st->cap_gen = st->cap_gen * 2 + 64));
            if (!p) return 1;
            st->gen = p;
        }
        st->gen[st->n_gen++] = tok;
    }
    if (!st->detok) {
        printf(" %d", (int)tok);
    } else if (mlstack_detok_push(st->detok, tok, &text, &len) == MLSTACK_OK && len) {
        fwrite(text, 1, len, stdout);
        if (st->reply) mlstack__buf_put(st->reply, text, len);
    }
    fflush(stdout);
    return 0;
}

/* Writes the engine's profile as a Chrome trace to path and its summary to stderr. */
static int report_profile(mlstack_engine *e, const char *path) {
    size_t need = mlstack_engine_profile_summary(e, NULL, 0);
    char *text = (char *)malloc(need + 1);
    int rc = 0;
    if (mlstack_engine_profile_write_trace(e, path) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", mlstack_engine_error(e));
        rc = 1;
    } else {
        fprintf(stderr, "profile: trace written to %s\n", path);
    }
    if (text) {
        mlstack_engine_profile_summary(e, text, need + 1);
        fputs(text, stderr);
    }
    free(text);
    return rc;
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

/* --json-schema / --grammar / --regex: compiles the grammar for the model's vocabulary into
   *g (NULL without one). Returns 0 or an exit code. */
static int run_grammar(const opts *o, const mlstack_model *m, mlstack_vocab **v, mlstack_grammar **g) {
    mlstack_grammar_desc gd;
    mlstack_error err;
    char *text = NULL;
    const char *file = o->json_schema ? o->json_schema : o->grammar;
    int rc = 0;
    *v = NULL;
    *g = NULL;
    if (!o->json_schema && !o->grammar && !o->regex) return 0;
    if (!!o->json_schema + !!o->grammar + !!o->regex > 1) return die("%s", "use one of --json-schema, --grammar, --regex");
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
        if (!text) return die("cannot read %s", file);
    }
    gd.text = text ? text : o->regex;
    if (mlstack_vocab_from_model(m, v, &err) != MLSTACK_OK) rc = die("%s", err.message);
    else {
        gd.vocab = *v;
        if (mlstack_grammar_compile(&gd, g, &err) != MLSTACK_OK) rc = die("%s", err.message);
    }
    free(text);
    return rc;
}

static int cmd_run(const opts *o) {
    mlstack_model *m;
    mlstack_engine *e;
    mlstack_generate_desc g;
    stream st;
    int32_t *ids = NULL, seq;
    int n, rc;
    double load_s;
    mlstack_sampler_desc sd;
    mlstack_vocab *vocab = NULL;
    mlstack_grammar *gram = NULL;
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
    sd = o->sd;
    if ((rc = run_grammar(o, m, &vocab, &gram)) != 0) {
        free(ids);
        mlstack_engine_free(e);
        mlstack_model_close(m);
        return rc;
    }
    sd.grammar = gram;
    g.sampler = &sd;
    g.ignore_eos = o->ignore_eos;
    g.on_token = on_token;
    g.user = &st;
    if (o->profile && mlstack_engine_profile_start(e, NULL) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", mlstack_engine_error(e));
        mlstack_engine_free(e);
        mlstack_model_close(m);
        free(ids);
        return 1;
    }
    rc = mlstack_generate(e, &g) == MLSTACK_OK ? 0 : 1;
    if (st.detok) {
        const char *text;
        size_t len;
        if (mlstack_detok_flush(st.detok, &text, &len) == MLSTACK_OK && len) fwrite(text, 1, len, stdout);
        mlstack_detok_free(st.detok);
    }
    printf("\n");
    fflush(stdout); /* the text first, then the statistics on stderr */
    if (rc) fprintf(stderr, "mlstack: %s\n", mlstack_engine_error(e));
    fprintf(stderr, "kernels %s | load %.0f ms | prompt %d tokens, %.1f tokens/s | generated %d tokens, %.2f tokens/s\n",
            mlstack_engine_kernels(e), load_s * 1e3, n, g.prefill_seconds > 0 ? n / g.prefill_seconds : 0.0,
            g.n_generated, g.decode_seconds > 0 && g.n_generated > 1 ? (g.n_generated - 1) / g.decode_seconds : 0.0);
    if (o->profile && report_profile(e, o->profile) != 0) rc = 1;
    mlstack_engine_free(e);
    mlstack_grammar_free(gram);
    mlstack_vocab_free(vocab);
    mlstack_model_close(m);
    free(ids);
    return rc;
}

/* template: renders the folder's chat template over --messages F.json, raw to stdout. */
static int cmd_template(const opts *o) {
    mlstack_chat_template *tpl;
    mlstack_template_options to;
    mlstack_error err;
    char *msgs = NULL, *out = NULL;
    size_t n = 0, out_len = 0;
    int rc = 0;
    if (!o->model) return die("%s", "template needs -m DIR");
    if (!o->messages) return die("%s", "template needs --messages FILE.json (a list of {\"role\", \"content\"})");
    if (mlstack__read_file(o->messages, (size_t)64 << 20, &msgs, &n, &err) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message);
        return 1;
    }
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

/* chat: a conversation on stdin, one user turn per line. Each turn renders the whole
   conversation with the chat template, encodes it, keeps the KV of the longest common prefix
   with what the sequence already holds and computes only the rest. */
static int cmd_chat(const opts *o) {
    mlstack_model *m;
    mlstack_engine *e;
    mlstack_tokenizer *tok;
    const mlstack_chat_template *tpl;
    mlstack__buf conv;  /* the messages JSON, without its closing bracket */
    int32_t *held = NULL, seq;
    size_t n_held = 0, cap_held = 0;
    char line[65536];
    int rc, turn = 0;
    if ((rc = open_model(o, &m, &e, NULL)) != 0) return rc;
    tok = mlstack_model_tokenizer(m);
    tpl = mlstack_model_chat_template(m);
    if (!tok || !tpl) {
        fprintf(stderr, "mlstack: %s has no %s\n", o->model, !tok ? "tokenizer.json" : "chat template");
        mlstack_engine_free(e);
        mlstack_model_close(m);
        return 1;
    }
    memset(&conv, 0, sizeof conv);
    mlstack__buf_puts(&conv, "[");
    if (o->system) {
        mlstack__buf_puts(&conv, "{\"role\":\"system\",\"content\":");
        mlstack__json_quote(&conv, o->system, strlen(o->system));
        mlstack__buf_puts(&conv, "}");
    }
    mlstack_engine_seq_new(e, &seq);
    for (;;) {
        mlstack_template_options to;
        mlstack_error err;
        mlstack_generate_desc g;
        stream st;
        mlstack__buf reply;
        char *text = NULL;
        size_t text_len = 0, n = 0, common = 0, len;
        int32_t *ids = NULL;
        if (o->prompt && turn == 0) {
            snprintf(line, sizeof line, "%s", o->prompt);
        } else if (o->prompt) {
            break;
        } else {
            if (isatty(0)) fprintf(stderr, "> ");
            if (!fgets(line, sizeof line, stdin)) break;
        }
        len = strcspn(line, "\r\n");
        line[len] = 0;
        if (!len) continue;
        if (conv.n > 1) mlstack__buf_puts(&conv, ",");
        mlstack__buf_puts(&conv, "{\"role\":\"user\",\"content\":");
        mlstack__json_quote(&conv, line, len);
        mlstack__buf_puts(&conv, "}");
        mlstack__buf_puts(&conv, "]");
        memset(&to, 0, sizeof to);
        to.add_generation_prompt = 1;
        rc = mlstack_chat_template_apply(tpl, NULL, conv.p, conv.n, &to, &text, &text_len, &err) != MLSTACK_OK;
        conv.n--; /* drop the closing bracket again */
        if (rc) {
            fprintf(stderr, "mlstack: %s\n", err.message);
            break;
        }
        /* templates carry their own special tokens: encode as apply_chat_template(tokenize=True) */
        mlstack_tokenizer_encode(tok, text, text_len, 0, NULL, 0, &n);
        ids = (int32_t *)malloc(sizeof(int32_t) * (n + 1));
        if (!ids || mlstack_tokenizer_encode(tok, text, text_len, 0, ids, n + 1, &n) != MLSTACK_OK || !n) {
            fprintf(stderr, "mlstack: %s\n", ids ? mlstack_tokenizer_error(tok) : "out of memory");
            mlstack_template_free_output(text);
            free(ids);
            rc = 1;
            break;
        }
        mlstack_template_free_output(text);
        while (common < n_held && common < n - 1 && held[common] == ids[common]) common++;
        /* rewind to the common prefix: the next eval starts there */
        memset(&g, 0, sizeof g);
        g.seq = seq;
        g.prompt = ids + common;
        g.n_prompt = (int)(n - common);
        g.max_tokens = o->n_predict;
        g.sampler = &o->sd;
        g.on_token = on_token;
        g.user = &st;
        memset(&st, 0, sizeof st);
        mlstack_detok_init(tok, MLSTACK_DECODE_SKIP_SPECIAL, &st.detok);
        memset(&reply, 0, sizeof reply);
        st.reply = &reply;
        st.echo = 1;
        if (mlstack_engine_seq_rewind(e, seq, (int32_t)common) != MLSTACK_OK || mlstack_generate(e, &g) != MLSTACK_OK) {
            fprintf(stderr, "\nmlstack: %s\n", mlstack_engine_error(e));
            rc = 1;
        }
        {
            const char *tail;
            size_t tl;
            if (mlstack_detok_flush(st.detok, &tail, &tl) == MLSTACK_OK && tl) {
                fwrite(tail, 1, tl, stdout);
                mlstack__buf_put(&reply, tail, tl);
            }
        }
        mlstack_detok_free(st.detok);
        printf("\n");
        fflush(stdout);
        fprintf(stderr, "[%d prompt tokens, %d reused from the cache, %d generated, %.1f tokens/s]\n", (int)n, (int)common,
                g.n_generated, g.decode_seconds > 0 && g.n_generated > 1 ? (g.n_generated - 1) / g.decode_seconds : 0.0);
        /* what the sequence now holds: the prompt and every generated token but the last */
        if (n_held + n + (size_t)g.n_generated > cap_held) {
            cap_held = (n + (size_t)g.n_generated) * 2 + 64;
            held = (int32_t *)realloc(held, sizeof(int32_t) * cap_held);
        }
        memcpy(held, ids, sizeof(int32_t) * n);
        n_held = n;
        if (st.n_gen > 1) {
            memcpy(held + n_held, st.gen, sizeof(int32_t) * (size_t)(st.n_gen - 1));
            n_held += (size_t)(st.n_gen - 1);
        }
        free(st.gen);
        free(ids);
        mlstack__buf_puts(&conv, ",{\"role\":\"assistant\",\"content\":");
        mlstack__json_quote(&conv, reply.p ? reply.p : "", reply.n);
        mlstack__buf_puts(&conv, "}");
        free(reply.p);
        turn++;
        if (rc) break;
    }
    free(conv.p);
    free(held);
    mlstack_engine_free(e);
    mlstack_model_close(m);
    return rc;
}

/* kl: quantized vs as-stored weights over a text (-f FILE): mean KL divergence of next-token
   distributions, top-1 agreement and perplexities, per --quant type. */
static int cmd_kl(const opts *o) {
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
    opts plain = *o;
    if (!o->file) return die("%s", "kl needs -f TEXT_FILE");
    if (mlstack__read_file(o->file, (size_t)64 << 20, &text, &len, &err) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message);
        return 1;
    }
    plain.quant = MLSTACK_DTYPE_F32;
    if ((rc = open_model(&plain, &ref, NULL, NULL)) != 0) {
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
        if (!ids || mlstack_tokenizer_encode(mlstack_model_tokenizer(ref), text, len, 0, ids, n + 1, &n) != MLSTACK_OK) rc = 1;
    }
    if (o->n_tokens > 0 && n > (size_t)o->n_tokens) n = (size_t)o->n_tokens;
    if (!rc && (int)n > info.max_position_embeddings) n = (size_t)info.max_position_embeddings;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = o->threads;
    ed.max_seqs = 1;
    ed.isa = o->isa;
    ed.kv_type = MLSTACK_KV_F32; /* only the weights differ between the two runs */
    ed.kv_mem = (uint64_t)(n + 64) * (uint64_t)info.n_layers * 2 * (uint64_t)info.n_kv_heads * (uint64_t)info.head_dim * 4;
    if (!rc && mlstack_engine_init(ref, &ed, &re, &err) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message);
        rc = 1;
    }
    if (!rc) printf("%s: %d tokens of %s; reference weights %s\n", o->model, (int)n, o->file, mlstack_dtype_name(info.weight_dtype));
    if (!rc) printf("| type | positions | mean KL | max KL | top-1 agree | ppl (stored) | ppl (quant) |\n|---|---|---|---|---|---|---|\n");
    for (t = 0; !rc && t < 2; t++) {
        quality q;
        if (o->quant && o->quant != types[t].type) continue;
        memset(&md, 0, sizeof md);
        md.path = o->model;
        md.quant = types[t].type;
        if (mlstack_model_open(&md, &qm, &err) != MLSTACK_OK || mlstack_engine_init(qm, &ed, &qe, &err) != MLSTACK_OK) {
            fprintf(stderr, "mlstack: %s\n", err.message);
            rc = 1;
            break;
        }
        if (quality_compare(re, &qe, 1, info.n_vocab, ids, (int)n, 256, &q) != 0) {
            fprintf(stderr, "mlstack: %s %s\n", mlstack_engine_error(re), mlstack_engine_error(qe));
            rc = 1;
        } else {
            printf("| %s | %d | %.5f | %.4f | %.2f%% | %.3f | %.3f |\n", types[t].name, q.n, q.mean_kl, q.max_kl,
                   100 * q.top1, q.ppl_ref, q.ppl_q);
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

/* quantize: open with --quant, write the folder with mlstack_model_save. */
static int cmd_quantize(const opts *o) {
    mlstack_model *m;
    mlstack_error err;
    int rc;
    double t0 = mlstack__now();
    if (!o->out) return die("%s", "quantize needs -o OUT_DIR");
    if (!o->quant) return die("%s", "quantize needs --quant q8_0 or q4_1");
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

/* ---- bench: llama-bench-like prompt and generation throughput ---- */

static const char *BENCH_USAGE =
    "usage: mlstack bench (-m DIR | --shape CONFIG.json) [options]\n"
    "\n"
    "  pp<P>: one eval of P prompt tokens into a fresh sequence; tokens/s = P / time.\n"
    "  tg<N>: N single-token evals after a 4-token prompt (not timed); tokens/s = N / time.\n"
    "  Each test runs once untimed, then R times; the table gives median, min, max and the\n"
    "  spread (max - min) / median. tg is also given as a fraction of the bandwidth roofline:\n"
    "  (weight bytes one token reads) / (best read bandwidth measured here, same thread count).\n"
    "\n"
    "  -m, --model DIR        Hugging Face model folder\n"
    "      --shape FILE       a config.json: random weights of that shape (no download)\n"
    "      --dtype TYPE       (--shape) stored type of the random weights: f32, f16, bf16 (default f32)\n"
    "  -p, --n-prompt LIST    prompt lengths (default 128; 0 skips pp)\n"
    "  -n, --n-gen LIST       generation lengths (default 64; 0 skips tg)\n"
    "  -t, --threads LIST     thread counts (default 1)\n"
    "  -r, --repetitions N    timed runs per test (default 5)\n"
    "      --quant LIST       none, q8_0, q4_1 (default none)\n"
    "      --isa LIST         kernel caps: scalar, avx2, avx512 (default: the best)\n"
    "      --json             one JSON object per line and configuration instead of the table\n"
    "      --bf16-dot         BF16 weights: activations rounded to bf16 for AVX512_BF16 dot products\n"
    "      --bw-mib N         buffer for the bandwidth test (default 1024; 0 skips it)\n"
    "      --profile FILE     profile one extra run of each test (not counted): Chrome trace to FILE\n"
    "                         (FILE-TYPE-tT-TEST.json when there are several) and summary to stderr;\n"
    "                         with --parallel, the timed decode steps themselves (FILE-parallelN.json)\n"
    "\n"
    "  Serving modes (through the scheduler: mlstack_engine_submit/step; replace pp/tg):\n"
    "      --parallel LIST    aggregate decode tokens/s with that many concurrent requests (32-token\n"
    "                         prompts, -n tokens each; timed from when all have their first token)\n"
    "      --shared-prefix N  time to first token of a request behind an N-token shared system prompt:\n"
    "                         cold (cache cleared) vs cached (prefix in the radix cache), median of -r\n"
    "      --workload mixed   --requests requests (default 32) arriving at random (--rate per second,\n"
    "                         default 4), sharing 4 system prompts of 200 tokens, prompts and outputs\n"
    "                         of varied length: throughput, TTFT and inter-token latency percentiles,\n"
    "                         cache hit rate\n"
    "      --kv-mem MIB       KV pool for the serving modes (default: the engine's default)\n";

#define BENCH_MAX 16

typedef struct bench_opts {
    const char *model, *shape, *profile;
    mlstack_dtype dtype;
    int pp[BENCH_MAX], n_pp, tg[BENCH_MAX], n_tg, threads[BENCH_MAX], n_threads, reps;
    int quant[BENCH_MAX], n_quant; /* mlstack_dtype; 0 = none */
    const char *isa[BENCH_MAX];
    int n_isa, json, bw_mib, bf16_dot;
    char isa_buf[256];
    int parallel[BENCH_MAX], n_parallel, shared_prefix, mixed, requests, kv_mib;
    double rate;
} bench_opts;

/* "a,b,c" of integers in [lo, hi] -> out; returns the count or -1. */
static int parse_int_list(const char *s, int lo, int hi, int *out) {
    int n = 0;
    while (*s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < lo || v > hi || (*end && *end != ',') || n == BENCH_MAX) return -1;
        out[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return n ? n : -1;
}

static int parse_bench(int argc, char **argv, bench_opts *b) {
    int i;
    memset(b, 0, sizeof *b);
    b->pp[0] = 128, b->n_pp = 1;
    b->tg[0] = 64, b->n_tg = 1;
    b->threads[0] = 1, b->n_threads = 1;
    b->reps = 5;
    b->n_quant = 1;
    b->n_isa = 1;
    b->bw_mib = 1024;
    b->dtype = MLSTACK_DTYPE_F32;
    b->requests = 32;
    b->rate = 4;
    for (i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define IS(s, l) (strcmp(a, s) == 0 || strcmp(a, l) == 0)
#define VALUE()                                              \
    do {                                                     \
        if (!v) return die("option %s needs a value", a);    \
        i++;                                                 \
    } while (0)
        if (IS("-h", "--help")) return 1;
        else if (IS("-m", "--model")) { VALUE(); b->model = v; }
        else if (IS("--shape", "--shape")) { VALUE(); b->shape = v; }
        else if (IS("--profile", "--profile")) { VALUE(); b->profile = v; }
        else if (IS("--json", "--json")) b->json = 1;
        else if (IS("--bf16-dot", "--bf16-dot")) b->bf16_dot = 1;
        else if (IS("-p", "--n-prompt")) { VALUE(); if ((b->n_pp = parse_int_list(v, 0, 65536, b->pp)) < 0) return die("bad list for %s", a); }
        else if (IS("-n", "--n-gen")) { VALUE(); if ((b->n_tg = parse_int_list(v, 0, 65536, b->tg)) < 0) return die("bad list for %s", a); }
        else if (IS("-t", "--threads")) { VALUE(); if ((b->n_threads = parse_int_list(v, 1, 256, b->threads)) < 0) return die("bad list for %s", a); }
        else if (IS("-r", "--repetitions")) { int r[BENCH_MAX]; VALUE(); if (parse_int_list(v, 1, 1000, r) != 1) return die("bad value for %s", a); b->reps = r[0]; }
        else if (IS("--parallel", "--parallel")) { VALUE(); if ((b->n_parallel = parse_int_list(v, 1, 256, b->parallel)) < 0) return die("bad list for %s", a); }
        else if (IS("--shared-prefix", "--shared-prefix")) { int r[BENCH_MAX]; VALUE(); if (parse_int_list(v, 1, 65536, r) != 1) return die("bad value for %s", a); b->shared_prefix = r[0]; }
        else if (IS("--requests", "--requests")) { int r[BENCH_MAX]; VALUE(); if (parse_int_list(v, 1, 100000, r) != 1) return die("bad value for %s", a); b->requests = r[0]; }
        else if (IS("--kv-mem", "--kv-mem")) { int r[BENCH_MAX]; VALUE(); if (parse_int_list(v, 1, 1 << 20, r) != 1) return die("bad value for %s", a); b->kv_mib = r[0]; }
        else if (IS("--rate", "--rate")) { VALUE(); b->rate = atof(v); if (!(b->rate > 0)) return die("bad value for %s", a); }
        else if (IS("--workload", "--workload")) { VALUE(); if (strcmp(v, "mixed") != 0) return die("--workload %s: only mixed is known", v); b->mixed = 1; }
        else if (IS("--bw-mib", "--bw-mib")) { int r[BENCH_MAX]; VALUE(); if (parse_int_list(v, 0, 1 << 20, r) != 1) return die("bad value for %s", a); b->bw_mib = r[0]; }
        else if (IS("--dtype", "--dtype")) {
            VALUE();
            if (strcmp(v, "f32") == 0) b->dtype = MLSTACK_DTYPE_F32;
            else if (strcmp(v, "f16") == 0) b->dtype = MLSTACK_DTYPE_F16;
            else if (strcmp(v, "bf16") == 0) b->dtype = MLSTACK_DTYPE_BF16;
            else return die("--dtype %s: expected f32, f16 or bf16", v);
        } else if (IS("--quant", "--quant")) {
            const char *s;
            VALUE();
            b->n_quant = 0;
            for (s = v; *s;) {
                size_t len = strcspn(s, ",");
                int q;
                if (len == 4 && strncmp(s, "none", 4) == 0) q = 0;
                else if (len == 4 && strncmp(s, "q8_0", 4) == 0) q = MLSTACK_DTYPE_Q8_0;
                else if (len == 4 && strncmp(s, "q4_1", 4) == 0) q = MLSTACK_DTYPE_Q4_1;
                else return die("--quant %s: expected a list of none, q8_0, q4_1", v);
                if (b->n_quant == BENCH_MAX) return die("%s", "--quant: too many types");
                b->quant[b->n_quant++] = q;
                s += len + (s[len] == ',');
            }
            if (!b->n_quant) return die("%s", "--quant: empty list");
        } else if (IS("--isa", "--isa")) {
            char *s;
            VALUE();
            snprintf(b->isa_buf, sizeof b->isa_buf, "%s", v);
            b->n_isa = 0;
            for (s = strtok(b->isa_buf, ","); s && b->n_isa < BENCH_MAX; s = strtok(NULL, ",")) b->isa[b->n_isa++] = s;
            if (!b->n_isa) return die("%s", "--isa: empty list");
        } else return die("unknown bench option %s (see mlstack bench --help)", a);
#undef IS
#undef VALUE
    }
    if (!b->model == !b->shape) return die("%s", "bench needs exactly one of -m DIR and --shape CONFIG.json");
    return 0;
}

/* Read bandwidth: threads stream disjoint slices of one buffer much larger than the last-level
   cache, summing 16-byte vectors into four accumulators (enough independent loads in flight
   to be limited by memory, not by the core). Best of a few runs. */
typedef uint64_t bw_vec __attribute__((vector_size(16)));
typedef struct bw_arg {
    const bw_vec *p;
    size_t n; /* vectors */
    pthread_barrier_t *start;
    double t0, t1;
    uint64_t sink;
} bw_arg;

static void *bw_thread(void *arg_) {
    bw_arg *a = (bw_arg *)arg_;
    bw_vec s0 = {0, 0}, s1 = {0, 0}, s2 = {0, 0}, s3 = {0, 0};
    size_t i;
    pthread_barrier_wait(a->start);
    a->t0 = mlstack__now();
    for (i = 0; i + 4 <= a->n; i += 4) {
        s0 += a->p[i];
        s1 += a->p[i + 1];
        s2 += a->p[i + 2];
        s3 += a->p[i + 3];
    }
    s0 += s1 + s2 + s3;
    a->t1 = mlstack__now();
    a->sink = s0[0] + s0[1];
    return NULL;
}

/* GB/s, or 0 when the test could not run. */
static double measure_bandwidth(const unsigned char *buf, size_t bytes, int n_threads) {
    pthread_t th[256];
    bw_arg args[256];
    pthread_barrier_t start;
    double best = 0;
    size_t per = bytes / 16 / (size_t)n_threads / 4 * 4;
    int run, t;
    for (run = 0; run < 5; run++) {
        double t0 = 1e300, t1 = 0;
        int started = 0;
        if (pthread_barrier_init(&start, NULL, (unsigned)n_threads) != 0) return 0;
        for (t = 0; t < n_threads; t++) {
            args[t].p = (const bw_vec *)(const void *)buf + (size_t)t * per;
            args[t].n = per;
            args[t].start = &start;
            if (t && pthread_create(&th[t], NULL, bw_thread, &args[t]) != 0) break;
            started++;
        }
        if (started < n_threads) { /* the barrier would never open: give up on this count */
            pthread_barrier_destroy(&start);
            return 0;
        }
        bw_thread(&args[0]);
        for (t = 1; t < n_threads; t++) pthread_join(th[t], NULL);
        pthread_barrier_destroy(&start);
        for (t = 0; t < n_threads; t++) {
            if (args[t].t0 < t0) t0 = args[t].t0;
            if (args[t].t1 > t1) t1 = args[t].t1;
        }
        if (t1 > t0 && (double)per * 16 * n_threads / (t1 - t0) / 1e9 > best) best = (double)per * 16 * n_threads / (t1 - t0) / 1e9;
    }
    return best;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

/* One timed run: pp (n_prompt tokens in one eval) or tg (n_gen single-token evals after a
   4-token prompt). Returns seconds, or -1 on failure. */
static double bench_once(mlstack_engine *e, int n_vocab, int n_prompt, int n_gen, mlstack_batch_row *rows) {
    int32_t seq;
    int i, n = n_gen ? 4 : n_prompt;
    double t0, t;
    if (mlstack_engine_seq_new(e, &seq) != MLSTACK_OK) return -1;
    for (i = 0; i < n; i++) {
        rows[i].seq = seq;
        rows[i].pos = i;
        rows[i].token = (int32_t)((1 + 7919u * (unsigned)i) % (unsigned)n_vocab);
        rows[i].want_logits = i == n - 1;
    }
    t0 = mlstack__now();
    if (mlstack_engine_eval(e, rows, n) != MLSTACK_OK) return -1;
    t = mlstack__now() - t0;
    if (n_gen) {
        t0 = mlstack__now();
        for (i = 0; i < n_gen; i++) {
            rows[0].pos = n + i;
            rows[0].token = (int32_t)((3 + 104729u * (unsigned)i) % (unsigned)n_vocab);
            rows[0].want_logits = 1; /* generation needs every token's logits (the LM head) */
            if (mlstack_engine_eval(e, rows, 1) != MLSTACK_OK) return -1;
        }
        t = mlstack__now() - t0;
    }
    mlstack_engine_seq_free(e, seq);
    return t;
}

static void lower(char *dst, const char *src, size_t cap) {
    size_t i;
    for (i = 0; i + 1 < cap && src[i]; i++) dst[i] = (char)(src[i] >= 'A' && src[i] <= 'Z' ? src[i] + 32 : src[i]);
    dst[i] = 0;
}

/* ---- bench: serving modes through the scheduler ---- */

typedef struct serve_req {
    double t_submit, t_first, t_last;
    double *gaps; /* inter-token latencies */
    int n_gaps, cap_gaps, done;
} serve_req;

static int serve_on_token(void *user, uint64_t id, int32_t tok, const char *text, size_t len) {
    serve_req *r = (serve_req *)user;
    double t = mlstack__now();
    (void)id, (void)tok, (void)text, (void)len;
    if (!r->t_first) r->t_first = t;
    else if (r->n_gaps < r->cap_gaps) r->gaps[r->n_gaps++] = t - r->t_last;
    r->t_last = t;
    return 0;
}

static double pct(double *v, int n, double p) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[(int)(p * (n - 1) + 0.5)];
}

static uint32_t bench_rng(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return (uint32_t)(*s >> 11);
}

static void serve_head(const bench_opts *b, const char *type, const char *isa, int threads, const char *test) {
    printf("{%s", b->shape ? "\"shape\":" : "\"model\":");
    json_str(stdout, b->shape ? b->shape : b->model);
    printf(",\"type\":\"%s\",\"isa\":\"%s\",\"threads\":%d,\"test\":\"%s\"", type, isa, threads, test);
}

static int serve_engine(const bench_opts *b, mlstack_model *m, int threads, const char *isa, int max_seqs, mlstack_engine **e) {
    mlstack_engine_desc ed;
    mlstack_error err;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = threads;
    ed.isa = isa;
    ed.max_seqs = max_seqs;
    ed.kv_mem = (uint64_t)b->kv_mib << 20;
    if (mlstack_engine_init(m, &ed, e, &err) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message);
        return 1;
    }
    return 0;
}

static int bench_serve(const bench_opts *b, mlstack_model *m, const mlstack_model_info *info, int threads, const char *isa_cap,
                       const char *type) {
    mlstack_engine *e;
    mlstack_error err;
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    int n_gen = b->n_tg && b->tg[0] > 0 ? b->tg[0] : 32, k, i;
    const char *isa;
    int32_t *toks = (int32_t *)calloc(65536 + 256, sizeof(int32_t));
    if (!toks) return die("%s", "out of memory");
    for (k = 0; k < b->n_parallel; k++) { /* ---- aggregate decode throughput ---- */
        int n = b->parallel[k], active = 1, all_started;
        uint64_t id, g0;
        double t0, t;
        mlstack_cache_stats st;
        if (serve_engine(b, m, threads, isa_cap, n, &e)) return free(toks), 1;
        isa = mlstack_engine_kernels(e);
        for (i = 0; i < n; i++) {
            mlstack_request_desc d;
            int j;
            memset(&d, 0, sizeof d);
            for (j = 0; j < 32; j++) toks[j] = (int32_t)(bench_rng(&seed) % (uint32_t)info->n_vocab);
            d.prompt = toks;
            d.n_prompt = 32;
            d.max_tokens = n_gen + 1;
            d.ignore_eos = 1;
            if (mlstack_engine_submit(e, &d, &id, &err) != MLSTACK_OK) return free(toks), die("%s", err.message);
        }
        do { /* prefill everyone and sample the first token: not timed */
            if (mlstack_engine_step(e, &active) != MLSTACK_OK) return free(toks), die("%s", mlstack_engine_error(e));
            mlstack_engine_cache_stats(e, &st);
            all_started = st.generated_tokens >= (uint64_t)n;
        } while (!all_started);
        g0 = st.generated_tokens;
        if (b->profile && mlstack_engine_profile_start(e, NULL) != MLSTACK_OK) return free(toks), die("%s", "could not start the profiler");
        t0 = mlstack__now();
        while (active)
            if (mlstack_engine_step(e, &active) != MLSTACK_OK) return free(toks), die("%s", mlstack_engine_error(e));
        t = mlstack__now() - t0;
        if (b->profile) {
            char path[1024];
            snprintf(path, sizeof path, "%s-parallel%d.json", b->profile, n);
            if (report_profile(e, path) != 0) return free(toks), 1;
            mlstack_engine_profile_stop(e);
        }
        mlstack_engine_cache_stats(e, &st);
        if (b->json) {
            serve_head(b, type, isa, threads, "parallel");
            printf(",\"parallel\":%d,\"n_gen\":%d,\"decode_tps\":%.3f,\"per_seq_tps\":%.3f,\"steps\":%llu}\n", n, n_gen,
                   (double)(st.generated_tokens - g0) / t, (double)(st.generated_tokens - g0) / t / n, (unsigned long long)st.steps);
        } else {
            printf("| %-6s | %-12s | %7d | parallel %-3d | aggregate decode %9.2f t/s | per sequence %8.2f t/s |\n", type, isa,
                   threads, n, (double)(st.generated_tokens - g0) / t, (double)(st.generated_tokens - g0) / t / n);
        }
        fflush(stdout);
        mlstack_engine_free(e);
    }
    if (b->shared_prefix) { /* ---- TTFT behind a shared system prompt, cold vs cached ---- */
        int L = b->shared_prefix, rep;
        double cold[1000], warm[1000];
        mlstack_cache_stats st;
        if (serve_engine(b, m, threads, isa_cap, 4, &e)) return free(toks), 1;
        isa = mlstack_engine_kernels(e);
        for (i = 0; i < L; i++) toks[i] = (int32_t)(bench_rng(&seed) % (uint32_t)info->n_vocab);
        for (rep = 0; rep <= b->reps; rep++) { /* rep 0 warms up, untimed */
            int pass;
            for (pass = 0; pass < 2; pass++) {
                mlstack_request_desc d;
                mlstack_request_status rs;
                int j;
                if (pass == 0) mlstack_engine_cache_clear(e);
                for (j = 0; j < 16; j++) toks[L + j] = (int32_t)(bench_rng(&seed) % (uint32_t)info->n_vocab);
                memset(&d, 0, sizeof d);
                d.prompt = toks;
                d.n_prompt = L + 16;
                d.max_tokens = 1;
                d.ignore_eos = 1;
                if (mlstack_engine_complete(e, &d, &rs, NULL, 0, &err) != MLSTACK_OK) return free(toks), die("%s", err.message);
                if (rep) (pass ? warm : cold)[rep - 1] = rs.t_first_token;
            }
        }
        mlstack_engine_cache_stats(e, &st);
        {
            double c = pct(cold, b->reps, 0.5), w = pct(warm, b->reps, 0.5);
            if (b->json) {
                serve_head(b, type, isa, threads, "shared_prefix");
                printf(",\"prefix\":%d,\"suffix\":16,\"reps\":%d,\"ttft_cold_ms\":%.3f,\"ttft_cached_ms\":%.3f,\"speedup\":%.2f,"
                       "\"hit_tokens\":%llu,\"computed_tokens\":%llu}\n",
                       L, b->reps, 1e3 * c, 1e3 * w, w > 0 ? c / w : 0.0, (unsigned long long)st.hit_tokens,
                       (unsigned long long)st.computed_tokens);
            } else {
                printf("| %-6s | %-12s | %7d | shared prefix %d + 16 | TTFT cold %9.2f ms | cached %8.2f ms | %.1fx |\n", type, isa,
                       threads, L, 1e3 * c, 1e3 * w, w > 0 ? c / w : 0.0);
            }
        }
        fflush(stdout);
        mlstack_engine_free(e);
    }
    if (b->mixed) { /* ---- random arrivals, shared prefixes, varied lengths ---- */
        int n = b->requests, next = 0, active = 0, n_ttft = 0, n_itl = 0, sys_len = 200;
        serve_req *rq = (serve_req *)calloc((size_t)n, sizeof *rq);
        double *arrive = (double *)calloc((size_t)n, sizeof(double)), *ttft = (double *)calloc((size_t)n, sizeof(double)), *itl, t0, t;
        int32_t *sys = (int32_t *)calloc(4 * (size_t)sys_len, sizeof(int32_t)), prompt[512];
        uint64_t *ids = (uint64_t *)calloc((size_t)n, sizeof(uint64_t));
        mlstack_cache_stats st;
        long total_gaps = 0;
        if (!rq || !arrive || !ttft || !sys || !ids) return free(toks), die("%s", "out of memory");
        for (i = 0; i < 4 * sys_len; i++) sys[i] = (int32_t)(bench_rng(&seed) % (uint32_t)info->n_vocab);
        for (i = 0, t = 0; i < n; i++) { /* exponential gaps: a Poisson process */
            t += -log(1.0 - (bench_rng(&seed) % 1000000) / 1e6) / b->rate;
            arrive[i] = t;
            rq[i].cap_gaps = 128;
            rq[i].gaps = (double *)calloc(128, sizeof(double));
            total_gaps += 128;
        }
        itl = (double *)calloc((size_t)total_gaps, sizeof(double));
        if (serve_engine(b, m, threads, isa_cap, 16, &e)) return free(toks), 1;
        isa = mlstack_engine_kernels(e);
        t0 = mlstack__now();
        while (next < n || active) {
            double now = mlstack__now() - t0;
            while (next < n && arrive[next] <= now) {
                mlstack_request_desc d;
                int s = (int)(bench_rng(&seed) % 5), pre = s < 4 ? sys_len : 0, user = 16 + (int)(bench_rng(&seed) % 49), j;
                for (j = 0; j < pre; j++) prompt[j] = sys[s * sys_len + j];
                for (j = 0; j < user; j++) prompt[pre + j] = (int32_t)(bench_rng(&seed) % (uint32_t)info->n_vocab);
                memset(&d, 0, sizeof d);
                d.prompt = prompt;
                d.n_prompt = pre + user;
                d.max_tokens = 16 + (int)(bench_rng(&seed) % 49);
                d.ignore_eos = 1;
                d.on_token = serve_on_token;
                d.user = &rq[next];
                rq[next].t_submit = mlstack__now();
                if (mlstack_engine_submit(e, &d, &ids[next], &err) != MLSTACK_OK) return free(toks), die("%s", err.message);
                next++;
            }
            if (mlstack_engine_step(e, &active) != MLSTACK_OK) return free(toks), die("%s", mlstack_engine_error(e));
            if (!active && next < n) { /* idle until the next arrival */
                double wait = arrive[next] - (mlstack__now() - t0);
                if (wait > 0) {
                    struct timespec ts;
                    ts.tv_sec = (time_t)wait;
                    ts.tv_nsec = (long)((wait - (double)ts.tv_sec) * 1e9);
                    nanosleep(&ts, NULL);
                }
            }
        }
        t = mlstack__now() - t0;
        mlstack_engine_cache_stats(e, &st);
        for (i = 0; i < n; i++) {
            int j;
            if (rq[i].t_first) ttft[n_ttft++] = rq[i].t_first - rq[i].t_submit;
            for (j = 0; j < rq[i].n_gaps; j++) itl[n_itl++] = rq[i].gaps[j];
        }
        {
            double hit = st.hit_tokens + st.computed_tokens ? (double)st.hit_tokens / (double)(st.hit_tokens + st.computed_tokens) : 0;
            double tps = (double)st.generated_tokens / t, t50 = pct(ttft, n_ttft, .5), t90 = pct(ttft, n_ttft, .9),
                   t99 = pct(ttft, n_ttft, .99), i50 = pct(itl, n_itl, .5), i90 = pct(itl, n_itl, .9), i99 = pct(itl, n_itl, .99);
            if (b->json) {
                serve_head(b, type, isa, threads, "mixed");
                printf(",\"requests\":%d,\"rate\":%.3f,\"seconds\":%.3f,\"generated\":%llu,\"gen_tps\":%.3f,"
                       "\"ttft_ms_p50\":%.3f,\"ttft_ms_p90\":%.3f,\"ttft_ms_p99\":%.3f,\"itl_ms_p50\":%.3f,\"itl_ms_p90\":%.3f,"
                       "\"itl_ms_p99\":%.3f,\"hit_tokens\":%llu,\"computed_tokens\":%llu,\"hit_rate\":%.4f,\"preemptions\":%llu,"
                       "\"pages_evicted\":%llu}\n",
                       n, b->rate, t, (unsigned long long)st.generated_tokens, tps, 1e3 * t50, 1e3 * t90, 1e3 * t99, 1e3 * i50,
                       1e3 * i90, 1e3 * i99, (unsigned long long)st.hit_tokens, (unsigned long long)st.computed_tokens, hit,
                       (unsigned long long)st.preemptions, (unsigned long long)st.pages_evicted);
            } else {
                printf("| %-6s | %-12s | %7d | mixed: %d requests at %.1f/s in %.1f s: %.1f generated t/s | TTFT ms p50 %.1f p90 %.1f "
                       "p99 %.1f | ITL ms p50 %.1f p90 %.1f p99 %.1f | cache hit %.1f%% (%llu of %llu prompt tokens) |\n",
                       type, isa, threads, n, b->rate, t, tps, 1e3 * t50, 1e3 * t90, 1e3 * t99, 1e3 * i50, 1e3 * i90, 1e3 * i99,
                       100 * hit, (unsigned long long)st.hit_tokens, (unsigned long long)(st.hit_tokens + st.computed_tokens));
            }
        }
        fflush(stdout);
        mlstack_engine_free(e);
        for (i = 0; i < n; i++) free(rq[i].gaps);
        free(rq);
        free(arrive);
        free(ttft);
        free(itl);
        free(sys);
        free(ids);
    }
    free(toks);
    return 0;
}

static int cmd_bench(int argc, char **argv) {
    bench_opts b;
    double bw[BENCH_MAX] = {0};
    int r = parse_bench(argc, argv, &b), qi, ii, ti, k, rc = 0, max_p = 4, n_configs, header = 0;
    char cpu[256];
    if (r == 1) {
        fputs(BENCH_USAGE, stdout);
        return 0;
    }
    if (r) return r;
    for (k = 0; k < b.n_pp; k++) max_p = b.pp[k] > max_p ? b.pp[k] : max_p;
    n_configs = b.n_quant * b.n_isa * b.n_threads * (b.n_pp + b.n_tg);
    mlstack_cpu_report(cpu, sizeof cpu);
    if (b.n_parallel || b.shared_prefix || b.mixed) b.bw_mib = 0; /* the serving modes do not use it */
    if (b.bw_mib > 0) {
        size_t bytes = (size_t)b.bw_mib << 20;
        unsigned char *buf = (unsigned char *)malloc(bytes);
        if (!buf) return die("%s", "no memory for the bandwidth buffer (try --bw-mib 256)");
        memset(buf, 1, bytes); /* touch every page before timing */
        for (ti = 0; ti < b.n_threads; ti++) bw[ti] = measure_bandwidth(buf, bytes, b.threads[ti]);
        free(buf);
    }
    if (!b.json) {
        printf("cpu: %s\n", cpu);
        for (ti = 0; ti < b.n_threads; ti++)
            printf("read bandwidth, %d thread%s: %.1f GB/s (best of 5 passes over %d MiB)\n", b.threads[ti],
                   b.threads[ti] > 1 ? "s" : "", bw[ti], b.bw_mib);
    }
    for (qi = 0; qi < b.n_quant; qi++) {
        mlstack_model *m;
        mlstack_model_info info;
        mlstack_error err;
        uint64_t tok_bytes;
        char type[16];
        double t_load = mlstack__now();
        if (b.shape) {
            r = mlstack_model_open_random(b.shape, b.dtype, (mlstack_dtype)b.quant[qi], 1, &m, &err);
        } else {
            mlstack_model_desc md;
            memset(&md, 0, sizeof md);
            md.path = b.model;
            md.quant = (mlstack_dtype)b.quant[qi];
            r = mlstack_model_open(&md, &m, &err);
        }
        if (r != MLSTACK_OK) {
            fprintf(stderr, "mlstack: %s\n", err.message);
            return 1;
        }
        t_load = mlstack__now() - t_load;
        mlstack_model_get_info(m, &info);
        lower(type, mlstack_dtype_name(info.weight_dtype), sizeof type);
        tok_bytes = mlstack_model_decode_bytes(m);
        if (!b.json) {
            if (!header++)
                printf("%s %s: %s, %d layers, hidden %d, %.1f M parameters\n", b.shape ? "shape" : "model",
                       b.shape ? b.shape : b.model, info.architecture, info.n_layers, info.n_embd, info.n_params / 1e6);
            printf("type %s: %.1f MiB of weights read per generated token (loaded in %.1f s)\n", type, tok_bytes / 1048576.0,
                   t_load);
        }
        for (ii = 0; ii < b.n_isa; ii++) {
            for (ti = 0; ti < b.n_threads; ti++) {
                mlstack_engine *e;
                if (b.n_parallel || b.shared_prefix || b.mixed) {
                    if (bench_serve(&b, m, &info, b.threads[ti], b.isa[ii], type) != 0) rc = 1;
                    continue;
                }
                mlstack_engine_desc ed;
                mlstack_batch_row *rows = (mlstack_batch_row *)calloc((size_t)max_p, sizeof *rows);
                int test;
                memset(&ed, 0, sizeof ed);
                ed.n_threads = b.threads[ti];
                ed.max_seqs = 1;
                ed.max_batch_tokens = max_p;
                ed.isa = b.isa[ii];
                ed.bf16_activations = b.bf16_dot;
                if (!rows || mlstack_engine_init(m, &ed, &e, &err) != MLSTACK_OK) {
                    fprintf(stderr, "mlstack: %s\n", rows ? err.message : "out of memory");
                    free(rows);
                    mlstack_model_close(m);
                    return 1;
                }
                if (!b.json && ii + ti + qi == 0) {
                    printf("\n| %-6s | %-12s | %7s | %-6s | %10s | %10s | %10s | %6s | %8s |\n", "type", "kernels", "threads",
                           "test", "t/s median", "min", "max", "spread", "roofline");
                    printf("|--------|--------------|---------|--------|------------|------------|------------|--------|----------|\n");
                }
                for (test = 0; test < b.n_pp + b.n_tg; test++) {
                    int is_tg = test >= b.n_pp, n_prompt = is_tg ? 0 : b.pp[test], n_gen = is_tg ? b.tg[test - b.n_pp] : 0;
                    int n_tok = is_tg ? n_gen : n_prompt, rep;
                    double tps[1000], med, roof = 0;
                    char name[32];
                    if (n_tok == 0) continue;
                    snprintf(name, sizeof name, "%s%d", is_tg ? "tg" : "pp", n_tok);
                    if (bench_once(e, info.n_vocab, n_prompt, n_gen, rows) < 0) { /* warm-up, untimed */
                        fprintf(stderr, "mlstack: %s\n", mlstack_engine_error(e));
                        rc = 1;
                        break;
                    }
                    for (rep = 0; rep < b.reps; rep++) {
                        double t = bench_once(e, info.n_vocab, n_prompt, n_gen, rows);
                        tps[rep] = t > 0 ? n_tok / t : 0;
                    }
                    qsort(tps, (size_t)b.reps, sizeof tps[0], cmp_double);
                    med = b.reps % 2 ? tps[b.reps / 2] : 0.5 * (tps[b.reps / 2 - 1] + tps[b.reps / 2]);
                    if (is_tg && bw[ti] > 0 && tok_bytes) roof = med / (bw[ti] * 1e9 / (double)tok_bytes);
                    if (b.json) {
                        printf("{%s", b.shape ? "\"shape\":" : "\"model\":");
                        json_str(stdout, b.shape ? b.shape : b.model);
                        printf(",\"type\":\"%s\",\"isa\":\"%s\",\"threads\":%d,\"n_prompt\":%d,\"n_gen\":%d,\"test\":\"%s\","
                               "\"reps\":%d,\"tps_median\":%.3f,\"tps_min\":%.3f,\"tps_max\":%.3f,\"spread\":%.4f,"
                               "\"weight_bytes_per_token\":%llu,\"bandwidth_gbs\":%.2f",
                               type, mlstack_engine_kernels(e), b.threads[ti], n_prompt, n_gen, name, b.reps, med, tps[0],
                               tps[b.reps - 1], med > 0 ? (tps[b.reps - 1] - tps[0]) / med : 0.0,
                               (unsigned long long)tok_bytes, bw[ti]);
                        if (is_tg && roof > 0) printf(",\"roofline_tps\":%.3f,\"roofline_fraction\":%.4f", bw[ti] * 1e9 / (double)tok_bytes, roof);
                        printf("}\n");
                    } else {
                        char roof_s[16] = "";
                        if (roof > 0) snprintf(roof_s, sizeof roof_s, "%.1f%%", 100 * roof);
                        printf("| %-6s | %-12s | %7d | %-6s | %10.2f | %10.2f | %10.2f | %5.1f%% | %8s |\n", type,
                               mlstack_engine_kernels(e), b.threads[ti], name, med, tps[0], tps[b.reps - 1],
                               med > 0 ? 100 * (tps[b.reps - 1] - tps[0]) / med : 0.0, roof_s);
                    }
                    fflush(stdout);
                    if (b.profile) { /* one more run, profiled, not counted */
                        char path[1024];
                        if (n_configs == 1) snprintf(path, sizeof path, "%s", b.profile);
                        else snprintf(path, sizeof path, "%s-%s-t%d-%s%s%s.json", b.profile, type, b.threads[ti], name,
                                      b.n_isa > 1 ? "-" : "", b.n_isa > 1 ? b.isa[ii] : "");
                        fprintf(stderr, "\n== %s, %d thread%s, %s ==\n", type, b.threads[ti], b.threads[ti] > 1 ? "s" : "", name);
                        if (mlstack_engine_profile_start(e, NULL) != MLSTACK_OK ||
                            bench_once(e, info.n_vocab, n_prompt, n_gen, rows) < 0 || report_profile(e, path) != 0)
                            rc = 1;
                        mlstack_engine_profile_stop(e);
                    }
                }
                mlstack_engine_free(e);
                free(rows);
            }
        }
        mlstack_model_close(m);
    }
    return rc;
}

int main(int argc, char **argv) {
    opts o;
    int r;
    if (argc >= 2 && strcmp(argv[1], "bench") == 0) return cmd_bench(argc, argv);
    r = parse_args(argc, argv, &o);
    if (r == 1) {
        fputs(USAGE, r == 1 && argc >= 2 ? stdout : stderr);
        return argc >= 2 ? 0 : 2;
    }
    if (r) return r;
    if (strcmp(o.cmd, "run") == 0) return cmd_run(&o);
    if (strcmp(o.cmd, "tokenize") == 0) return cmd_tokenize(&o);
    if (strcmp(o.cmd, "quantize") == 0) return cmd_quantize(&o);
    if (strcmp(o.cmd, "template") == 0) return cmd_template(&o);
    if (strcmp(o.cmd, "chat") == 0) return cmd_chat(&o);
    if (strcmp(o.cmd, "kl") == 0) return cmd_kl(&o);
    if (strcmp(o.cmd, "eval") == 0) return cmd_eval(&o);
    if (strcmp(o.cmd, "info") == 0) return cmd_info(&o);
    return die("unknown command '%s' (see mlstack --help)", o.cmd);
}
