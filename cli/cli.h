/* mlstack command-line tool: what the command files share (options, helpers, entry points).
   One binary, one file per command group:
     main.c     main() and the command table (name, entry, help line)
     common.c   the helpers declared here: options, model and engine opening, progress, buffers
     run.c      run, eval, info, tokenize, template, kl, quantize
     chat.c     chat: interactive terminal chat (line editor, history, commands)
     serve.c    serve: OpenAI-compatible HTTP server (POSIX sockets + pthreads; http.h reads requests)
     bench.c    bench
     impl.c     the implementation of mlstack.h (impl_cuda.cu: with the CUDA companion)
   main.c calls the commands, the commands call common.c, and nothing calls main.c. Only public
   mlstack.h calls are used here; nothing reaches into the implementation. */
#ifndef MLSTACK_CLI_H
#define MLSTACK_CLI_H

/* POSIX (barriers, sockets, termios, sigaction, nanosleep), asked for before any libc header. */
#if !defined(_WIN32) && !defined(_POSIX_C_SOURCE) && !defined(_GNU_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "mlstack.h"

#include <stddef.h>
#include <stdio.h>

typedef struct cli_opts {
    const char *cmd, *model, *prompt, *ids, *isa, *file, *profile;
    const char *out, *messages, *system;
    int ids_only, no_special, add_gen, n_tokens, bf16_dot;
    int save_rows; /* quantize --rows: blocks as rows (the folder format of older builds), not panels */
    int gpu;                  /* --gpu: the forward pass on a GPU (a CLI built with `make cuda`) */
    mlstack_dtype quant;
    const char *head_quant;   /* --head-quant q8_0|q4_1|keep: the LM head's format with --quant */
    const char *imatrix;      /* --imatrix FILE: llama-imatrix's importance matrix, with a llama.cpp --quant type */
    int n_predict, threads, all, bits, ignore_eos; /* bits: eval --bits */
    int chat, json;           /* run: --chat (apply the template), --json (machine-readable result) */
    int n_predict_set;        /* -n given */
    unsigned sampling_set;    /* the sampling options given (CLI_SET_TEMP, ...): chat's defaults fill the rest */
    int ctx_tokens;           /* -c/--ctx-size N: KV cache for N tokens (0: --kv-mem, or the engine's default) */
    uint64_t kv_mib;          /* --kv-mem MIB (chat, serve) */
    mlstack_sampler_desc sd;
    const char *json_schema, *grammar, *regex; /* run: constrained output */
    const char *spec;         /* --spec ngram|draft:DIR|self:q4_1|self:q8_0 (run, chat, serve) */
    int spec_tokens;          /* --spec-tokens N (0: the engine's default) */
    const char *files;        /* kl: --files A,B: other models (GGUF files, folders) against -m */
    const char *content_specials; /* --content-specials text|parse (run --chat, chat; NULL: text) */
    const char *cache_type_k, *cache_type_v; /* --cache-type-k/-v f16|bf16|f32|q8_0|q4_0 (NULL: f16) */
} cli_opts;

/* "mlstack 0.2.0 (commit abc1234, gcc 12.2.0; kernels compiled: scalar avx2 avx512 amx)": the
   release, the commit and compiler it was built from and the kernel paths built in (main.c). */
const char *cli_version(void);
enum {
    CLI_SET_TEMP = 1,
    CLI_SET_TOP_K = 2,
    CLI_SET_TOP_P = 4,
    CLI_SET_MIN_P = 8,
    CLI_SET_REPEAT = 16,
    CLI_SET_SEED = 32
};
/* The numeric address of a loopback name (localhost, NAME.localhost, ip6-localhost: RFC 6761),
   else host itself: what getaddrinfo gets, so that a static build (glibc's static getaddrinfo
   needs NSS modules at run time) and a machine without /etc/hosts still resolve localhost. */
const char *cli_host_local(const char *host);
/* A KV cache type by llama.cpp's name (f16, bf16, f32, q8_0, q4_0; NULL: 0, the engine's default)
   into *t; 0, or 2 after a message naming opt. */
int cli_kv_type(const char *opt, const char *name, mlstack_kv_type *t);
/* Bytes of KV one position takes in a model of `in`'s shape at key/value types k and v (0: f16). */
uint64_t cli_kv_token_bytes(const mlstack_model_info *in, mlstack_kv_type k, mlstack_kv_type v);
/* The last progress line of a GGUF write (quantize), "" if none. */
const char *cli_last_progress(void);
/* Prints the engine, ISA and rank options (`mlstack --help engine`). */
void cli_print_engine_help(void);
/* Prints "mlstack: " + the formatted message to stderr; returns 2 (a usage error's exit code). */
int cli_die(const char *fmt, const char *a);
/* Gives the CPU up for a moment (spin waits) / sleeps for `seconds`: POSIX or Win32. */
void cli_yield(void);
void cli_sleep(double seconds);
/* The process's peak resident memory in MiB so far (Linux: VmHWM), or 0 where unknown. */
double cli_peak_rss_mib(void);
/* Options as a table, one row each: the flag (and its long form, or NULL), the kind of value,
   bounds for numbers, and where the value goes (an offset into the command's options struct).
   Kinds: 's' a string, 'i' int, 'f' float, 'u' uint64, 'z' size_t, 'b' a flag set to 1,
   'q' a --quant name (q8_0, q4_1, none, or a llama.cpp file type by llama-quantize's name: q4_0,
   q5_0, q5_1, q2_k, q3_k_m, q4_k_m, iq4_nl, ...: cli_quant_mix_names) stored as an mlstack_dtype
   (a file type as CLI_QUANT_MIX + its index there). */
#define CLI_QUANT_MIX 1000 /* + i: cli_quant_mix_names[i] (never a real dtype) */
extern const char *const cli_quant_mix_names[];
/* The mix name (for mlstack_model_desc.quant_mix) that the --quant value q stands for, or NULL. */
const char *cli_quant_mix(mlstack_dtype q);
typedef struct cli_opt_spec {
    const char *s, *l;
    char kind;
    double lo, hi;
    size_t off;
} cli_opt_spec;
#define CLI_OPT(s, l, kind, lo, hi, type, field) {s, l, kind, lo, hi, offsetof(type, field)}
/* Reads argv[*i] (and the value after it) by the table t of n rows into the struct at dst; cmd
   names the command in messages. Returns 1 when it matched (*i moved past a value), 0 when the
   option is not in the table, 2 after printing a usage error. */
int cli_parse_opt(const cli_opt_spec *t, size_t n, void *dst, const char *cmd, int argc, char **argv, int *i);
/* Parses a number in [lo, hi]; 1 on success. */
int cli_parse_num(const char *s, double lo, double hi, double *out);
/* "1,2,3" -> ids (malloc'd); returns the count, or -1 on a malformed list. */
int cli_parse_ids(const char *s, int32_t **out);
/* Reads a whole file (or stdin for "-") into a malloc'd, NUL-terminated buffer of at most
   max bytes. Returns 0, or prints why to stderr and returns 1. */
int cli_read_file(const char *path, size_t max, char **out, size_t *len);
/* Encodes text with the model's tokenizer (flags as mlstack_tokenizer_encode); malloc'd ids.
   Returns the count, or -1 after printing why. */
int cli_encode(mlstack_tokenizer *tok, const char *text, size_t len, int flags, int32_t **ids);
/* The chat prompt of n plain messages (add_generation_prompt) as ids in *ids (malloc'd), through
   mlstack_chat_template_encode: special-token text in the messages is text unless
   content_specials is "parse". Returns the count, or -1 after printing the error. */
int cli_chat_encode(const mlstack_chat_template *tpl, mlstack_tokenizer *tok, const mlstack_chat_message *msgs, int n,
                    const char *content_specials, int32_t **ids);
/* An engine on m: the CPU's (mlstack_engine_init), or with gpu the CUDA companion's
   (mlstack_cuda_engine_init, in a CLI built with MLSTACK_CUDA by `make cuda`; elsewhere it fails
   saying how to get one). ed as given, plus the mesh options (cli_mesh_options). */
mlstack_result cli_engine_init(mlstack_model *m, const mlstack_engine_desc *ed, int gpu, mlstack_engine **e,
                               mlstack_error *err);
/* Opens -m (and an engine with max_seqs seqs when e is given), printing progress on a tty. */
int cli_open_model(const cli_opts *o, int max_seqs, mlstack_model **m, mlstack_engine **e, double *load_s);
/* --spec MODE for an engine on the model at model_path: fills ed's spec fields, opening the
   draft model (draft:DIR, or self:q4_1 / self:q8_0: this model quantized at load), which stays
   open until the process exits. Returns 0, or an exit code after printing why. */
int cli_spec_setup(const char *spec, int spec_tokens, const char *model_path, mlstack_engine_desc *ed);
/* Writes the engine's profile as a Chrome trace to path and its summary to stderr. */
int cli_report_profile(mlstack_engine *e, const char *path);
/* Whether stderr is a terminal (progress lines only then). */
int cli_stderr_tty(void);
/* "loading ..." on a terminal: a line that the next call (or cli_progress_done) overwrites. */
void cli_progress(const char *fmt, const char *a);
void cli_progress_done(void);

/* Growable text buffer with JSON string quoting; functions return 0 when out of memory. */
typedef struct cli_buf {
    char *p;
    size_t n, cap;
    int oom;
} cli_buf;
int cli_buf_put(cli_buf *b, const char *s, size_t n);
int cli_buf_puts(cli_buf *b, const char *s);
int cli_buf_printf(cli_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends s (n bytes) as a JSON string literal, quotes included. */
int cli_buf_json(cli_buf *b, const char *s, size_t n);
void cli_buf_free(cli_buf *b);

/* A command's help for cli_run_with_opts: `usage: SYNOPSIS`, the text, then the model and the
   sampling options' lists where asked for. */
typedef struct cli_help {
    const char *synopsis, *text;
    int model_opts, sampling_opts;
} cli_help;
/* Parses argv (argv[0]: the command's name) by the options that every command but serve and bench
   shares and runs fn on them; -h or --help prints h instead. Returns fn's exit code, 0 after the
   help, 2 after a usage error (reported). */
int cli_run_with_opts(int argc, char **argv, const cli_help *h, int (*fn)(const cli_opts *o));

/* Command entry points, one signature (main.c's table): argc/argv start at the command name
   (argv[0] = "run", ...); the return value is the exit code. */
typedef int (*cli_cmd_fn)(int argc, char **argv);
int cli_cmd_run(int argc, char **argv);
int cli_cmd_eval(int argc, char **argv);
int cli_cmd_info(int argc, char **argv);
int cli_cmd_tokenize(int argc, char **argv);
int cli_cmd_template(int argc, char **argv);
int cli_cmd_kl(int argc, char **argv);
int cli_cmd_quantize(int argc, char **argv);
int cli_cmd_chat(int argc, char **argv);
int cli_cmd_bench(int argc, char **argv);
int cli_cmd_serve(int argc, char **argv);

/* --ranks N, --stages S, --rank-mode gather|reduce, which any command takes anywhere on its line
   (bench reads its own --ranks, a list): takes them out of argv (argv[0] stays) and keeps them for
   cli_engine_init, which puts them into the descriptor of every engine it starts (the fields
   n_ranks, n_stages, rank_mode, where the caller left them 0). Returns 0, or 2 after reporting a
   bad value. */
int cli_mesh_options(int *argc, char **argv);
/* mlstack-mpi (make mpi): MPI_Init and the job's transport (finalized at exit); elsewhere nothing.
   Returns 0, or 2 after reporting why. */
int cli_transport_start(int *argc, char ***argv);
/* The MPI job's transport in mlstack-mpi, else NULL. */
const mlstack_transport *cli_transport(void);

#endif
