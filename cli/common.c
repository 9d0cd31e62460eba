/* mlstack command-line tool: what several command files share (declared in cli.h): the option
   table and its parser, the model and sampling options' help, the mesh options (--ranks, --stages,
   --rank-mode), opening a model and its engine, progress lines, file and id readers, a JSON-quoting
   buffer, and the MPI job's transport in mlstack-mpi. main.c holds main() and the command table;
   nothing here calls a command. */
#include "cli.h"
#if defined(MLSTACK_CUDA) /* make cuda: build/cuda/mlstack, --gpu runs the forward pass on a GPU */
#include "mlstack_cuda.h"
#endif
#if defined(MLSTACK_MPI) /* make mpi: mlstack-mpi, every command's engine spread over the MPI job's ranks */
#include "mlstack_mpi.h"
static mlstack_transport g_mpi;
const mlstack_transport *cli_transport(void) { return &g_mpi; }
/* At exit: MPI_Finalize, or MPI_Abort after a failed exchange (a stopped peer would hold
   MPI_Finalize forever after the failure has been reported). */
static void mpi_end(void) { mlstack_mpi_finalize(&g_mpi, 1); }
int cli_transport_start(int *argc, char ***argv) {
    MPI_Init(argc, argv);
    atexit(mpi_end);
    if (mlstack_mpi_transport(MPI_COMM_WORLD, &g_mpi) != 0) {
        fprintf(stderr, "mlstack: MPI: no transport\n");
        return 2;
    }
    return 0;
}
#else
const mlstack_transport *cli_transport(void) { return NULL; }
int cli_transport_start(int *argc, char ***argv) {
    (void)argc, (void)argv;
    return 0;
}
#endif

#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#if defined(_WIN32)
#include <windows.h>
#include <io.h>
#define isatty _isatty
#else
#include <sched.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#endif

static const char *MODEL_OPTS =
    "  -m, --model MODEL        model folder or .gguf file: a Hugging Face folder as downloaded\n"
    "                           (config.json, *.safetensors, tokenizer files) or a llama.cpp GGUF\n"
    "  -t, --threads N          worker threads (default: the physical cores)\n"
    "  -c, --ctx-size N         KV cache for N tokens, shared by the sequences (default: the model's\n"
    "                           context, at most 4096; --kv-mem MIB gives it in MiB instead)\n"
    "      --quant TYPE         quantize weights at load: q8_0, q4_1, or a llama.cpp file type\n"
    "                           (q4_k_m, q6_k, ...: mlstack --help engine) (default: as stored)\n";

/* Options every command that opens an engine takes, shown by `mlstack --help engine`. */
static const char *ENGINE_OPTS =
    "Engine options (run, chat, serve, eval, info, bench, kl, quantize):\n"
    "      --quant TYPE         quantize weights at load: q8_0, q4_1, or a llama.cpp file type by\n"
    "                           llama-quantize's name and rules: q4_0, q5_0, q5_1, q2_k, q3_k_s,\n"
    "                           q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, iq4_nl,\n"
    "                           iq4_xs, iq3_xxs, iq3_xs, iq3_s, iq3_m, iq2_xxs, iq2_xs, iq2_s,\n"
    "                           iq2_m, iq1_s, iq1_m (most IQ1_*/IQ2_*/IQ3_XXS need --imatrix, as\n"
    "                           in llama-quantize), tq1_0, tq2_0 (q3_k, q4_k, q5_k: the _m ones)\n"
    "                           (default: as stored)\n"
    "      --imatrix FILE       with a llama.cpp --quant type: llama-imatrix's importance matrix\n"
    "                           (GGUF or .dat), used as llama-quantize --imatrix uses it\n"
    "      --head-quant TYPE    with --quant q8_0|q4_1: the LM head (a tied one: its copy) as q8_0 or\n"
    "                           q4_1, or keep it as stored (default: as --quant)\n"
    "      --kv-mem MIB         KV cache budget in MiB (-c gives it in tokens)\n"
    "      --cache-type-k T     the KV cache's keys: f16 (default), bf16, f32, q8_0 (blocks of 32 int8\n"
    "                           and a scale: about half f16's bytes) or q4_0 (about a quarter)\n"
    "      --cache-type-v T     the KV cache's values: the same types (run, chat, serve, bench)\n"
    "      --bf16-dot           BF16 weights: bf16-rounded activations, AVX512_BF16 dot products or\n"
    "                           AMX-BF16 tiles (faster prefill, not exact)\n"
    "      --gpu                the forward pass on the GPU (a build with make cuda; Llama-style models)\n"
    "\n"
    "Kernel paths (ISA):\n"
    "      --isa CAP            highest kernel path: scalar, avx2, avx512, amx or neon (default: best;\n"
    "                           the MLSTACK_ISA environment variable sets the same cap). Every path\n"
    "                           gives the same logits, bit for bit; mlstack --version lists those built in\n"
    "\n"
    "Ranks (one model sharded over thread groups, or MPI processes in mlstack-mpi):\n"
    "      --ranks N            shard the model over N ranks (bit-identical logits)\n"
    "      --stages S           of those ranks, S pipeline stages of N / S ranks, each holding only its\n"
    "                           share of the layers (a 2-D mesh when N / S > 1; bit-identical logits)\n"
    "      --rank-mode MODE     gather (default: finished slices exchanged, bit-identical to one rank)\n"
    "                           or reduce (output/down projections by input columns, partial sums\n"
    "                           added in rank order: 2 exchanges a layer, fewer bytes, rounding off)\n";

void cli_print_engine_help(void) { fputs(ENGINE_OPTS, stdout); }

static const char *SAMPLING_OPTS =
    "  -n, --n-predict N        tokens to generate (default 64 for run, 0 = until EOS or the context)\n"
    "      --temp F             temperature (default 0 = greedy)\n"
    "      --top-k N            keep the N most likely tokens (default 0 = off)\n"
    "      --top-p F            nucleus sampling threshold (default 1 = off)\n"
    "      --min-p F            drop tokens below F x the top probability (default 0 = off)\n"
    "      --repeat-penalty F   Hugging Face repetition penalty (default 1 = off)\n"
    "      --frequency-penalty F, --presence-penalty F   OpenAI-style penalties (default 0)\n"
    "      --seed N             RNG seed for sampling (default 0)\n"
    "      --spec MODE          speculative decoding (run, chat, serve): ngram (drafts looked up in\n"
    "                           the context), draft:MODEL (a smaller model, same tokenizer), self:q4_1\n"
    "                           or self:q8_0 (this model quantized as its own draft); greedy output\n"
    "                           is unchanged, sampled output keeps its distribution\n"
    "      --spec-tokens N      drafted tokens per step (default 8 for ngram, 4 for a draft model)\n";

/* usage, the description, then the options in groups: the common ones first, the command's own,
   sampling, and where the engine, ISA and rank options are (mlstack --help engine). */
static void print_help(const cli_help *h) {
    const char *own = strchr(h->text, '\n'); /* the command's options: from the first line "   -..." */
    int n_desc;
    while (own && !(own[1] == ' ' && own[1 + strspn(own + 1, " ")] == '-')) own = strchr(own + 1, '\n');
    n_desc = own ? (int)(own - h->text) + 1 : (int)strlen(h->text);
    printf("usage: %s\n\n%.*s", h->synopsis, n_desc, h->text);
    if (h->model_opts) printf("\nCommon options:\n%s", MODEL_OPTS);
    if (own) printf("\nOptions of %.*s:\n%s", (int)strcspn(h->synopsis + 8, " "), h->synopsis + 8, own + 1);
    if (h->sampling_opts) printf("\nSampling:\n%s", SAMPLING_OPTS);
    printf("  -h, --help               this text\n");
    if (h->model_opts)
        printf("\nEngine, rank and ISA options (--ranks, --isa, --head-quant, --bf16-dot, --gpu, ...):\n"
               "mlstack --help engine\n");
}

#if defined(_WIN32)
void cli_yield(void) { SwitchToThread(); }
void cli_sleep(double seconds) { Sleep((DWORD)(seconds * 1000)); }
#else
void cli_yield(void) { sched_yield(); }
void cli_sleep(double seconds) {
    struct timespec ts;
    ts.tv_sec = (time_t)seconds;
    ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
    nanosleep(&ts, NULL);
}
#endif

double cli_peak_rss_mib(void) {
    double kib = 0;
    FILE *f = fopen("/proc/self/status", "r"); /* Linux; elsewhere there is no such file */
    char line[256];
    if (!f) return 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmHWM:", 6) == 0) {
            kib = atof(line + 6);
            break;
        }
    fclose(f);
    return kib / 1024.0;
}

const char *cli_host_local(const char *host) {
    size_t n = host ? strlen(host) : 0, k;
    char low[64];
    if (n == 0 || n >= sizeof low) return host;
    for (k = 0; k <= n; k++) low[k] = (char)(host[k] >= 'A' && host[k] <= 'Z' ? host[k] + 32 : host[k]);
    if (low[n - 1] == '.') low[--n] = 0; /* "localhost." is the same name */
    if (!strcmp(low, "ip6-localhost") || !strcmp(low, "ip6-loopback")) return "::1";
    /* RFC 6761: localhost and every name under it are the loopback address */
    if (!strcmp(low, "localhost") || (n > 10 && !strcmp(low + n - 10, ".localhost"))) return "127.0.0.1";
    return host;
}

int cli_die(const char *fmt, const char *a) {
    fprintf(stderr, "mlstack: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, "\n");
    return 2;
}

int cli_parse_num(const char *s, double lo, double hi, double *out) {
    char *end;
    double v;
    if (!s || !*s) return 0;
    v = strtod(s, &end);
    if (*end || v != v || v < lo || v > hi) return 0;
    *out = v;
    return 1;
}

int cli_parse_opt(const cli_opt_spec *t, size_t n, void *dst, const char *cmd, int argc, char **argv, int *i) {
    const char *a = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    const cli_opt_spec *sp = NULL;
    char *field;
    double x = 0;
    size_t k;
    for (k = 0; k < n && !sp; k++)
        if (strcmp(a, t[k].s) == 0 || (t[k].l && strcmp(a, t[k].l) == 0)) sp = &t[k];
    if (!sp) return 0;
    field = (char *)dst + sp->off;
    if (sp->kind == 'b') {
        *(int *)(void *)field = 1;
        return 1;
    }
    if (!v) {
        fprintf(stderr, "mlstack: option %s needs a value (see mlstack %s --help)\n", a, cmd);
        return 2;
    }
    ++*i;
    if (sp->kind == 's') {
        *(const char **)(void *)field = v;
        return 1;
    }
    if (sp->kind == 'q') {
        mlstack_dtype *q = (mlstack_dtype *)(void *)field;
        if (strcmp(v, "q8_0") == 0 || strcmp(v, "Q8_0") == 0) *q = MLSTACK_DTYPE_Q8_0;
        else if (strcmp(v, "q4_1") == 0 || strcmp(v, "Q4_1") == 0)
            *q = MLSTACK_DTYPE_Q4_1;
        else if (strcmp(v, "none") == 0)
            *q = MLSTACK_DTYPE_F32;
        else {
            int mi;
            for (mi = 0; cli_quant_mix_names[mi]; mi++) {
                const char *x1 = v, *x2 = cli_quant_mix_names[mi];
                while (*x1 && *x2 && (*x1 >= 'a' && *x1 <= 'z' ? *x1 - 32 : *x1) == *x2) x1++, x2++;
                if (!*x1 && !*x2) break;
            }
            if (!cli_quant_mix_names[mi])
                return cli_die("--quant %s: expected q8_0, q4_1, none or a llama.cpp type: q4_0, q5_0, q5_1, q2_k, "
                               "q3_k_s, q3_k_m, q3_k_l, q4_k_s, q4_k_m, q5_k_s, q5_k_m, q6_k, iq4_nl, iq4_xs, "
                               "iq3_xxs, iq3_xs, iq3_s, iq3_m, iq2_xxs, iq2_xs, iq2_s, iq2_m, iq1_s, iq1_m, tq1_0, "
                               "tq2_0 (q3_k, q4_k, q5_k)",
                               v);
            *q = (mlstack_dtype)(CLI_QUANT_MIX + mi);
        }
        return 1;
    }
    if (!cli_parse_num(v, sp->lo, sp->hi, &x) || (sp->kind != 'f' && floor(x) != x)) {
        fprintf(stderr, "mlstack: %s %s: expected a %s from %.17g to %.17g\n", a, v,
                sp->kind == 'f' ? "number" : "whole number", sp->lo, sp->hi);
        return 2;
    }
    if (sp->kind == 'i') *(int *)(void *)field = (int)x;
    else if (sp->kind == 'f')
        *(float *)(void *)field = (float)x;
    else if (sp->kind == 'z')
        *(size_t *)(void *)field = (size_t)x;
    else
        *(uint64_t *)(void *)field = (uint64_t)x;
    return 1;
}

/* The options every command but serve and bench shares. */
#define OPT(s, l, kind, lo, hi, field) CLI_OPT(s, l, kind, lo, hi, cli_opts, field)
static const cli_opt_spec OPTS[] = {
    OPT("-m", "--model", 's', 0, 0, model),
    OPT("-p", "--prompt", 's', 0, 0, prompt),
    OPT("--ids", NULL, 's', 0, 0, ids),
    OPT("-n", "--n-predict", 'i', 0, 1e9, n_predict),
    OPT("-t", "--threads", 'i', 1, 256, threads),
    OPT("-c", "--ctx-size", 'i', 1, 1 << 24, ctx_tokens),
    OPT("--temp", "--temperature", 'f', 0, 100, sd.temperature),
    OPT("--top-k", NULL, 'i', 0, 1e9, sd.top_k),
    OPT("--top-p", NULL, 'f', 0, 1, sd.top_p),
    OPT("--min-p", NULL, 'f', 0, 1, sd.min_p),
    OPT("--repeat-penalty", NULL, 'f', 0, 100, sd.repeat_penalty),
    OPT("--frequency-penalty", NULL, 'f', -100, 100, sd.frequency_penalty),
    OPT("--presence-penalty", NULL, 'f', -100, 100, sd.presence_penalty),
    OPT("--seed", NULL, 'u', 0, 1.8e19, sd.seed),
    OPT("--kv-mem", NULL, 'u', 1, 1 << 20, kv_mib),
    OPT("--cache-type-k", "-ctk", 's', 0, 0, cache_type_k),
    OPT("--cache-type-v", "-ctv", 's', 0, 0, cache_type_v),
    OPT("--ignore-eos", NULL, 'b', 0, 0, ignore_eos),
    OPT("--spec", NULL, 's', 0, 0, spec),
    OPT("--spec-tokens", NULL, 'i', 1, 64, spec_tokens),
    OPT("--json-schema", NULL, 's', 0, 0, json_schema),
    OPT("--grammar", NULL, 's', 0, 0, grammar),
    OPT("--regex", NULL, 's', 0, 0, regex),
    OPT("--bf16-dot", NULL, 'b', 0, 0, bf16_dot),
    OPT("--gpu", NULL, 'b', 0, 0, gpu),
    OPT("--all", NULL, 'b', 0, 0, all),
    OPT("--bits", NULL, 'b', 0, 0, bits),
    OPT("--chat", NULL, 'b', 0, 0, chat),
    OPT("--json", NULL, 'b', 0, 0, json),
    OPT("--isa", NULL, 's', 0, 0, isa),
    OPT("--quant", NULL, 'q', 0, 0, quant),
    OPT("--head-quant", NULL, 's', 0, 0, head_quant),
    OPT("--imatrix", NULL, 's', 0, 0, imatrix),
    OPT("--profile", NULL, 's', 0, 0, profile),
    OPT("-f", "--file", 's', 0, 0, file),
    OPT("-o", "--out", 's', 0, 0, out),
    OPT("--files", NULL, 's', 0, 0, files),
    OPT("--messages", NULL, 's', 0, 0, messages),
    OPT("--system", NULL, 's', 0, 0, system),
    OPT("--tokens", NULL, 'i', 2, 1e7, n_tokens),
    OPT("--add-generation-prompt", NULL, 'b', 0, 0, add_gen),
    OPT("--ids-only", NULL, 'b', 0, 0, ids_only),
    OPT("--no-special", NULL, 'b', 0, 0, no_special),
    OPT("--rows", NULL, 'b', 0, 0, save_rows),
    OPT("--content-specials", NULL, 's', 0, 0, content_specials),
};
#undef OPT

/* Returns 0 to go on, 1 for --help, 2 on a usage error (already reported). */
static int parse_args(int argc, char **argv, cli_opts *o) {
    int i, r;
    memset(o, 0, sizeof *o);
    o->n_predict = 64;
    o->cmd = argv[0];
    for (i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) return 1;
        if ((r = cli_parse_opt(OPTS, sizeof OPTS / sizeof OPTS[0], o, o->cmd, argc, argv, &i)) == 2) return 2;
        if (r == 1) {
            static const struct {
                const char *name;
                unsigned bit;
            } SET[] = {{"--temp", CLI_SET_TEMP},
                       {"--temperature", CLI_SET_TEMP},
                       {"--top-k", CLI_SET_TOP_K},
                       {"--top-p", CLI_SET_TOP_P},
                       {"--min-p", CLI_SET_MIN_P},
                       {"--seed", CLI_SET_SEED},
                       {"--repeat-penalty", CLI_SET_REPEAT}};
            size_t k;
            if (strcmp(a, "-n") == 0 || strcmp(a, "--n-predict") == 0) o->n_predict_set = 1;
            for (k = 0; k < sizeof SET / sizeof SET[0]; k++)
                if (strcmp(a, SET[k].name) == 0) o->sampling_set |= SET[k].bit;
            continue;
        }
        if (a[0] != '-' && !o->prompt) {
            o->prompt = a;
            continue;
        }
        fprintf(stderr, "mlstack: unknown option %s for %s (see mlstack %s --help)\n", a, o->cmd, o->cmd);
        return 2;
    }
    if (o->content_specials && strcmp(o->content_specials, "text") && strcmp(o->content_specials, "parse"))
        return cli_die("--content-specials %s: expected text or parse", o->content_specials);
    return 0;
}

int cli_run_with_opts(int argc, char **argv, const cli_help *h, int (*fn)(const cli_opts *o)) {
    cli_opts o;
    int r = parse_args(argc, argv, &o);
    if (r == 1) {
        print_help(h);
        return 0;
    }
    return r ? r : fn(&o);
}

int cli_parse_ids(const char *s, int32_t **out) {
    int n = 0, cap = 16;
    int32_t *ids = (int32_t *)malloc(sizeof(int32_t) * (size_t)cap);
    while (ids && *s) {
        char *end;
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > INT32_MAX || (*end && *end != ',')) {
            free(ids);
            *out = NULL;
            return -1;
        }
        if (n == cap) {
            int32_t *p = (int32_t *)realloc(ids, sizeof(int32_t) * (size_t)(cap *= 2));
            if (!p) {
                free(ids);
                ids = NULL;
                break;
            }
            ids = p;
        }
        ids[n++] = (int32_t)v;
        s = *end ? end + 1 : end;
    }
    *out = ids;
    return ids ? n : -1;
}

int cli_read_file(const char *path, size_t max, char **out, size_t *len) {
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    size_t cap = 1 << 16, n = 0;
    char *p;
    *out = NULL;
    *len = 0;
    if (!f) {
        fprintf(stderr, "mlstack: cannot open %s\n", path);
        return 1;
    }
    p = (char *)malloc(cap + 1);
    while (p) {
        size_t got = fread(p + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        if (cap >= max) {
            fprintf(stderr, "mlstack: %s is larger than %zu bytes\n", path, max);
            free(p);
            p = NULL;
            n = 0;
            break;
        }
        {
            char *q = (char *)realloc(p, (cap *= 2) + 1);
            if (!q) free(p);
            p = q;
        }
    }
    if (f != stdin) fclose(f);
    if (!p) {
        if (n == 0 && cap < max) fprintf(stderr, "mlstack: out of memory reading %s\n", path);
        return 1;
    }
    p[n] = 0;
    *out = p;
    *len = n;
    return 0;
}

int cli_encode(mlstack_tokenizer *tok, const char *text, size_t len, int flags, int32_t **ids) {
    size_t n = 0;
    mlstack_result r = mlstack_tokenizer_encode(tok, text, len, flags, NULL, 0, &n);
    *ids = NULL;
    if (r != MLSTACK_OK && r != MLSTACK_ERR_LIMIT) {
        fprintf(stderr, "mlstack: %s\n", mlstack_tokenizer_error(tok));
        return -1;
    }
    *ids = (int32_t *)malloc(sizeof(int32_t) * (n ? n : 1));
    if (!*ids || mlstack_tokenizer_encode(tok, text, len, flags, *ids, n, &n) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", *ids ? mlstack_tokenizer_error(tok) : "out of memory");
        free(*ids);
        *ids = NULL;
        return -1;
    }
    return (int)n;
}

int cli_chat_encode(const mlstack_chat_template *tpl, mlstack_tokenizer *tok, const mlstack_chat_message *msgs, int n,
                    const char *content_specials, int32_t **ids) {
    cli_buf js;
    mlstack_template_options to;
    mlstack_error err;
    mlstack_result r = MLSTACK_ERR_NO_MEMORY;
    size_t cap = 0, cnt = 0;
    int i;
    *ids = NULL;
    memset(&js, 0, sizeof js);
    cli_buf_puts(&js, "[");
    for (i = 0; i < n; i++) {
        cli_buf_puts(&js, i ? ",{\"role\":" : "{\"role\":");
        cli_buf_json(&js, msgs[i].role, strlen(msgs[i].role));
        cli_buf_puts(&js, ",\"content\":");
        cli_buf_json(&js, msgs[i].content, strlen(msgs[i].content));
        cli_buf_puts(&js, "}");
    }
    cli_buf_puts(&js, "]");
    memset(&to, 0, sizeof to);
    to.add_generation_prompt = 1;
    to.content_specials = content_specials && strcmp(content_specials, "parse") == 0 ? MLSTACK_CONTENT_SPECIALS_PARSE
                                                                                     : MLSTACK_CONTENT_SPECIALS_TEXT;
    strcpy(err.message, "out of memory");
    for (cap = js.n + 64; !js.oom;) { /* a second try when the ids need more room */
        int32_t *p = (int32_t *)realloc(*ids, sizeof(int32_t) * cap);
        if (!p) break;
        *ids = p;
        r = mlstack_chat_template_encode(tpl, NULL, tok, js.p, js.n, &to, *ids, cap, &cnt, &err);
        if (r != MLSTACK_ERR_LIMIT || cnt <= cap) break;
        cap = cnt;
    }
    cli_buf_free(&js);
    if (r != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message);
        free(*ids);
        *ids = NULL;
        return -1;
    }
    return (int)cnt;
}

int cli_stderr_tty(void) {
    static int tty = -1;
    if (tty < 0) tty = isatty(2) ? 1 : 0;
    return tty;
}

void cli_progress(const char *fmt, const char *a) {
    char line[512];
    size_t n, cols = 80, k, c;
#if !defined(_WIN32)
    struct winsize ws;
    if (ioctl(2, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1) cols = ws.ws_col;
#endif
    if (!cli_stderr_tty()) return;
    snprintf(line, sizeof line, fmt, a);
    /* one row, or the next \r cannot take it back: cut to the terminal's width less one column */
    for (n = 0, c = 0; line[n] && c < cols - 1; n++)
        if (((unsigned char)line[n] & 0xC0) != 0x80) c++;
    for (k = n; line[k] && ((unsigned char)line[k] & 0xC0) == 0x80; k++) {}
    line[k] = 0;
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
}

void cli_progress_done(void) {
    if (cli_stderr_tty()) fprintf(stderr, "\r\033[K");
}

static mlstack_model *g_draft; /* --spec's draft model: closed at exit, after every engine */
static void cli_close_draft(void) {
    mlstack_model_close(g_draft);
    g_draft = NULL;
}
int cli_spec_setup(const char *spec, int spec_tokens, const char *model_path, mlstack_engine_desc *ed) {
    mlstack_model_desc md;
    mlstack_error err;
    ed->spec_tokens = spec_tokens;
    if (!spec || !*spec || strcmp(spec, "none") == 0) return 0;
    if (strcmp(spec, "ngram") == 0) {
        ed->spec = MLSTACK_SPEC_NGRAM;
        return 0;
    }
    memset(&md, 0, sizeof md);
    if (strncmp(spec, "draft:", 6) == 0 && spec[6]) {
        md.path = spec + 6;
    } else if (strcmp(spec, "self:q4_1") == 0 || strcmp(spec, "self:q8_0") == 0) {
        md.path = model_path;
        md.quant = spec[6] == '4' ? MLSTACK_DTYPE_Q4_1 : MLSTACK_DTYPE_Q8_0;
    } else {
        return cli_die("--spec %s: expected ngram, draft:DIR, self:q4_1 or self:q8_0", spec);
    }
    if (!g_draft) {
        cli_progress(md.quant ? "loading %s as the (quantized) draft model..." : "loading the draft model %s...",
                     md.path);
        if (mlstack_model_open(&md, &g_draft, &err) != MLSTACK_OK) {
            cli_progress_done();
            fprintf(stderr, "mlstack: --spec %s: %s\n", spec, err.message);
            return 1;
        }
        atexit(cli_close_draft);
    }
    ed->spec = MLSTACK_SPEC_DRAFT;
    ed->spec_draft = g_draft;
    return 0;
}

/* --ranks, --stages, --rank-mode as cli_mesh_options found them (0: not given). */
static struct {
    int n_ranks, n_stages;
    mlstack_rank_mode rank_mode;
} g_mesh;

int cli_mesh_options(int *argc, char **argv) {
    int i, j;
    for (i = j = 1; i < *argc; i++) {
        if (strcmp(argv[i], "--ranks") == 0 && i + 1 < *argc && *argc > 1 && strcmp(argv[1], "bench") == 0) {
            argv[j++] = argv[i];
        } else if ((strcmp(argv[i], "--stages") == 0 || strcmp(argv[i], "--ranks") == 0) && i + 1 < *argc) {
            /* the engine's limit, checked here so that the message names the option given */
            char *end;
            long v = strtol(argv[i + 1], &end, 10);
            if (end == argv[i + 1] || *end || v < 1 || v > 4096) {
                fprintf(stderr, "mlstack: %s %s: expected a %s count from 1 to 4096\n", argv[i], argv[i + 1],
                        strcmp(argv[i], "--ranks") == 0 ? "rank" : "stage");
                return 2;
            }
            if (strcmp(argv[i], "--ranks") == 0) g_mesh.n_ranks = (int)v;
            else
                g_mesh.n_stages = (int)v;
            i++;
        } else if (strcmp(argv[i], "--rank-mode") == 0 && i + 1 < *argc) {
            if (strcmp(argv[i + 1], "gather") != 0 && strcmp(argv[i + 1], "reduce") != 0) {
                fprintf(stderr, "mlstack: --rank-mode %s: expected gather or reduce\n", argv[i + 1]);
                return 2;
            }
            g_mesh.rank_mode = strcmp(argv[++i], "gather") == 0 ? MLSTACK_RANK_GATHER : MLSTACK_RANK_REDUCE;
        } else {
            argv[j++] = argv[i];
        }
    }
    *argc = j;
    return 0;
}

mlstack_result cli_engine_init(mlstack_model *m, const mlstack_engine_desc *ed, int gpu, mlstack_engine **e,
                               mlstack_error *err) {
    mlstack_engine_desc d = *ed;
    /* the mesh options fill the fields the caller left at their defaults (where the engine would
       read MLSTACK_RANKS, MLSTACK_STAGES, MLSTACK_RANK_MODE); an MPI job's ranks are its
       processes, and a GPU engine is one rank */
    if (!d.n_ranks && !d.transport && !gpu) d.n_ranks = g_mesh.n_ranks;
    if (!d.n_stages) d.n_stages = g_mesh.n_stages;
    if (d.rank_mode == MLSTACK_RANK_DEFAULT) d.rank_mode = g_mesh.rank_mode;
    if (!gpu) return mlstack_engine_init(m, &d, e, err);
#if defined(MLSTACK_CUDA)
    return mlstack_cuda_engine_init(m, &d, NULL, e, err);
#else
    *e = NULL;
    err->code = MLSTACK_ERR_NO_BACKEND;
    snprintf(err->message, sizeof err->message, "--gpu: this mlstack was built without CUDA (build it with make cuda)");
    return MLSTACK_ERR_NO_BACKEND;
#endif
}

/* llama-quantize's names of the file types mlstack's quantizer makes (Q8_0 and Q4_1 are
   mlstack's own load-time formats unless a GGUF file is written: cli_cmd_quantize). */
const char *const cli_quant_mix_names[] = {
    "Q4_K_M", "Q5_K_M", "Q6_K",   "Q4_K",    "Q5_K",   "Q4_0",  "Q5_0",  "Q5_1",  "Q2_K",  "Q3_K_S", "Q3_K_M",
    "Q3_K",   "Q3_K_L", "Q4_K_S", "Q5_K_S",  "IQ4_NL", "Q8_0",  "Q4_1",  "TQ1_0", "TQ2_0", "IQ4_XS", "IQ3_XXS",
    "IQ3_XS", "IQ3_S",  "IQ3_M",  "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ1_S", "IQ1_M", NULL};
const char *cli_quant_mix(mlstack_dtype q) {
    int i = (int)q - CLI_QUANT_MIX, n = 0;
    while (cli_quant_mix_names[n]) n++;
    return i >= 0 && i < n ? cli_quant_mix_names[i] : NULL;
}

/* quantize's progress: the library's level-2 lines ("tensor 12 of 272 (NAME, TYPE), 10.5 MiB written")
   as a line that overwrites itself on a terminal; the last one is kept for the summary. */
static char g_last_progress[200];
static void cli_log_progress(void *user, int level, const char *msg) {
    (void)user;
    if (level != 2) return; /* errors come back through err as well */
    snprintf(g_last_progress, sizeof g_last_progress, "%s", msg);
    cli_progress("writing: %s", msg);
}
const char *cli_last_progress(void) { return g_last_progress; }

int cli_kv_type(const char *opt, const char *name, mlstack_kv_type *t) {
    static const char *const names[] = {"f16", "bf16", "f32", "q8_0", "q4_0"};
    int i;
    *t = (mlstack_kv_type)0;
    if (!name) return 0;
    for (i = 0; i < 5; i++)
        if (strcmp(name, names[i]) == 0) {
            *t = (mlstack_kv_type)(MLSTACK_KV_F16 + i);
            return 0;
        }
    fprintf(stderr, "mlstack: %s %s: expected f16, bf16, f32, q8_0 or q4_0\n", opt, name);
    return 2;
}

static uint64_t cli_kv_row_bytes(mlstack_kv_type t, uint64_t n) {
    return t == MLSTACK_KV_Q8_0   ? n / 32 * 34
           : t == MLSTACK_KV_Q4_0 ? n / 32 * 18
           : t == MLSTACK_KV_F32  ? n * 4
                                  : n * 2;
}
uint64_t cli_kv_token_bytes(const mlstack_model_info *in, mlstack_kv_type k, mlstack_kv_type v) {
    return (uint64_t)in->n_layers * (uint64_t)in->n_kv_heads *
           (cli_kv_row_bytes(k, (uint64_t)in->head_dim) + cli_kv_row_bytes(v, (uint64_t)in->head_dim));
}

int cli_open_model(const cli_opts *o, int max_seqs, mlstack_model **m, mlstack_engine **e, double *load_s) {
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_error err;
    mlstack_kv_type ctk, ctv;
    double t0 = mlstack_clock_seconds();
    if (!o->model) {
        fprintf(stderr, "mlstack: %s needs -m MODEL (a model folder or .gguf file)\n", o->cmd);
        return 2;
    }
    if (cli_kv_type("--cache-type-k", o->cache_type_k, &ctk) || cli_kv_type("--cache-type-v", o->cache_type_v, &ctv))
        return 2;
    memset(&md, 0, sizeof md);
    md.path = o->model;
    md.quant = cli_quant_mix(o->quant) ? MLSTACK_DTYPE_F32 : o->quant;
    md.quant_mix = cli_quant_mix(o->quant);
    md.imatrix = o->imatrix;
    if (strcmp(o->cmd, "quantize") == 0) md.log = cli_log_progress;
    if (o->head_quant) {
        if (strcmp(o->head_quant, "q8_0") == 0) md.head_quant = MLSTACK_DTYPE_Q8_0;
        else if (strcmp(o->head_quant, "q4_1") == 0)
            md.head_quant = MLSTACK_DTYPE_Q4_1;
        else if (strcmp(o->head_quant, "keep") == 0)
            md.keep_head = 1;
        else
            return cli_die("--head-quant %s: expected q8_0, q4_1 or keep", o->head_quant);
    }
    /* sharded (--ranks N; without it MLSTACK_RANKS, which the engine reads then; or an MPI job):
       each rank quantizes only its own rows */
#if defined(MLSTACK_MPI)
    md.defer_quant = 1;
#else
    md.defer_quant = g_mesh.n_ranks ? g_mesh.n_ranks > 1 : getenv("MLSTACK_RANKS") && atoi(getenv("MLSTACK_RANKS")) > 1;
#endif
    cli_progress(o->quant ? "loading %s and quantizing its weights..." : "loading %s...", o->model);
    if (mlstack_model_open(&md, m, &err) != MLSTACK_OK) {
        cli_progress_done();
        fprintf(stderr, "mlstack: %s\n", err.message);
        return 1;
    }
    if (e) {
        cli_progress("%s: starting the engine (repacking weights for the kernels)...", o->model);
        memset(&ed, 0, sizeof ed);
        ed.n_threads = o->threads;
        ed.max_seqs = max_seqs;
        ed.isa = o->isa;
        ed.bf16_activations = o->bf16_dot;
        ed.kv_mem = o->kv_mib << 20;
        /* eval exists to check logits against references: keep keys and values exact (unless
           --cache-type-k/-v ask for another type) */
        if (strcmp(o->cmd, "eval") == 0) ed.kv_type = MLSTACK_KV_F32;
        ed.kv_type_k = ctk, ed.kv_type_v = ctv;
        if (o->ctx_tokens > 0) { /* -c N: N tokens of KV at the engine's types (f16; eval's f32) */
            mlstack_model_info in;
            mlstack_kv_type d = ed.kv_type ? ed.kv_type : MLSTACK_KV_F16;
            mlstack_model_get_info(*m, &in);
            ed.kv_mem = (uint64_t)o->ctx_tokens * cli_kv_token_bytes(&in, ctk ? ctk : d, ctv ? ctv : d);
        }
        if (o->spec) {
            int rc = cli_spec_setup(o->spec, o->spec_tokens, o->model, &ed);
            if (rc) {
                cli_progress_done();
                mlstack_model_close(*m);
                *m = NULL;
                return rc;
            }
        }
#if defined(MLSTACK_MPI)
        ed.transport = &g_mpi;
#endif
        if (cli_engine_init(*m, &ed, o->gpu, e, &err) != MLSTACK_OK) {
            cli_progress_done();
            fprintf(stderr, "mlstack: %s\n", err.message);
            mlstack_model_close(*m);
            *m = NULL;
            return 1;
        }
#if defined(MLSTACK_MPI)
        if (mlstack_engine_rank(*e) != 0) { /* ranks other than 0 serve rank 0's steps, then end */
            if (mlstack_engine_follow(*e) != MLSTACK_OK) g_mpi.abort(g_mpi.user, mlstack_engine_error(*e));
            mlstack_engine_free(*e);
            mlstack_model_close(*m);
            exit(0); /* mpi_end finalizes */
        }
#endif
    }
    cli_progress_done();
    if (load_s) *load_s = mlstack_clock_seconds() - t0;
    return 0;
}

int cli_report_profile(mlstack_engine *e, const char *path) {
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

/* ---- text buffer ---- */

int cli_buf_put(cli_buf *b, const char *s, size_t n) {
    if (b->oom) return 0;
    if (b->cap - b->n < n + 1) {
        size_t cap = b->cap ? b->cap : 256;
        char *p;
        while (cap - b->n < n + 1) cap *= 2;
        p = (char *)realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return 0;
        }
        b->p = p;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 1;
}

int cli_buf_puts(cli_buf *b, const char *s) { return cli_buf_put(b, s, strlen(s)); }

int cli_buf_printf(cli_buf *b, const char *fmt, ...) {
    char tmp[512];
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return 0;
    if ((size_t)n < sizeof tmp) return cli_buf_put(b, tmp, (size_t)n);
    if (!cli_buf_put(b, "", (size_t)n)) return 0; /* room for n bytes (+ NUL) */
    b->n -= (size_t)n;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)n;
    return 1;
}

int cli_buf_json(cli_buf *b, const char *s, size_t n) {
    size_t i, run = 0;
    if (!cli_buf_put(b, "\"", 1)) return 0;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        cli_buf_put(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"': cli_buf_put(b, "\\\"", 2); break;
        case '\\': cli_buf_put(b, "\\\\", 2); break;
        case '\n': cli_buf_put(b, "\\n", 2); break;
        case '\r': cli_buf_put(b, "\\r", 2); break;
        case '\t': cli_buf_put(b, "\\t", 2); break;
        default: cli_buf_printf(b, "\\u%04x", c); break;
        }
    }
    cli_buf_put(b, s + run, n - run);
    return cli_buf_put(b, "\"", 1);
}

void cli_buf_free(cli_buf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}
