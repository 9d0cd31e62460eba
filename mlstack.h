/* mlstack.h 0.1.0 - run Hugging Face language models on a CPU from one C header - MIT (end of file)

   USE
     In exactly one C or C++ file:
         #define MLSTACK_IMPLEMENTATION
         #include "mlstack.h"
     Everywhere else just #include "mlstack.h". Link with -lpthread -lm.

   QUICK START (error checks shortened)
         mlstack_model *model; mlstack_engine *eng; mlstack_error err;
         mlstack_model_desc md = {0};  md.path = "models/smollm2-135m-instruct";
         if (mlstack_model_open(&md, &model, &err) != MLSTACK_OK) { puts(err.message); return 1; }
         mlstack_engine_desc ed = {0}; ed.n_threads = 2;
         mlstack_engine_init(model, &ed, &eng, &err);
         int32_t seq; mlstack_engine_seq_new(eng, &seq);
         int32_t prompt[] = {1, 9690, 314};
         mlstack_sampler_desc sd = {0};                  // zero = greedy
         mlstack_generate_desc gd = {0};
         gd.seq = seq; gd.prompt = prompt; gd.n_prompt = 3; gd.max_tokens = 32;
         gd.sampler = &sd; gd.on_token = print_token;    // int print_token(int32_t id, void *user)
         mlstack_generate(eng, &gd);
         mlstack_engine_free(eng); mlstack_model_close(model);

   TABLE OF CONTENTS (each entry is a banner "==== N. NAME ====" with grep anchor ">>name")
      1. PUBLIC API        declarations: results, model, engine, sampling, generation   >>api
      2. PLATFORM          allocation, results and messages, timers, threads, mmap     >>platform
      3. JSON              one parser for safetensors headers, configs and tokenizers   >>json
      4. SAFETENSORS       mmapped files, header validation, views, sharded index      >>safetensors
      5. UNICODE           UTF-8, category tables, normalization                       >>unicode
      6. REGEX             the regex subset used by tokenizer Split patterns            >>regex
      7. TOKENIZER         tokenizer.json: normalizers, pre-tokenizers, BPE, decoders   >>tokenizer
      8. TEMPLATE          Jinja-subset interpreter for chat templates                  >>template
      9. KERNELS           scalar reference kernels (the oracle for every faster one)  >>kernels
     10. MODEL             config.json -> hyperparameters; safetensors -> weight map   >>model
     11. KVCACHE           page pool, per-sequence page tables, paged attention         >>kvcache
     12. FORWARD           one forward pass over a ragged batch of rows                 >>forward
     13. SAMPLING          logit processors and samplers                                >>sampling
     14. ENGINE            engine objects: threads, KV, eval, generate                  >>engine

   BUILD OPTIONS
     macro                      default     where                    effect
     MLSTACK_IMPLEMENTATION     undefined   one .c file              emit the implementation
     MLSTACK_STATIC             undefined   every file that includes make all public functions static
     MLSTACK_SHARED             undefined   every file               default visibility for a shared lib
     MLSTACK_MALLOC/REALLOC/FREE libc       implementation file      allocator (define all three or none)
     MLSTACK_MAX_JSON_BYTES     512 MiB     implementation file      largest JSON document accepted
     MLSTACK_MAX_JSON_DEPTH     128         implementation file      deepest JSON nesting accepted
     MLSTACK_MAX_HEADER_BYTES   100 MiB     implementation file      largest safetensors header accepted
     MLSTACK_NO_THREADS         undefined   implementation file      no pthreads; everything on the caller

   THREAD SAFETY
     A model is immutable once open and may be shared by any number of engines and threads.
     An engine is driven by one thread at a time. Results and error text are per object.

   SECURITY
     Model files are untrusted input. Every length and offset read from a file is checked
     against the bytes that exist before use; mapped model bytes are never written. Errors are
     returned as mlstack_result with text naming the file, the offset or field, and what was
     expected. The library never prints, exits or aborts on bad data.

   ISA MATRIX
     portable scalar C (reference)   all targets
*/
#ifndef MLSTACK_H
#define MLSTACK_H

/* The implementation uses POSIX (mmap, pthreads, clocks); ask for it before any libc header. */
#if defined(MLSTACK_IMPLEMENTATION) && !defined(_GNU_SOURCE) && !defined(_WIN32)
#define _GNU_SOURCE
#endif

#include <stddef.h>
#include <stdint.h>

/* ==== 1. PUBLIC API ==== */  /* >>api */

#if defined(MLSTACK_STATIC) && defined(__GNUC__)
#define MLSTACK_API static __attribute__((unused))
#elif defined(MLSTACK_STATIC)
#define MLSTACK_API static
#elif defined(MLSTACK_SHARED) && defined(__GNUC__)
#define MLSTACK_API extern __attribute__((visibility("default")))
#else
#define MLSTACK_API extern
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Result codes: 0 is success, every failure is negative. */
#define MLSTACK_RESULT_LIST(X)                                                  \
    X(MLSTACK_OK, 0, "ok")                                                      \
    X(MLSTACK_ERR_INVALID_ARG, -1, "invalid argument")                          \
    X(MLSTACK_ERR_NO_MEMORY, -2, "out of memory")                               \
    X(MLSTACK_ERR_IO, -3, "file could not be read")                             \
    X(MLSTACK_ERR_FORMAT, -4, "malformed file")                                 \
    X(MLSTACK_ERR_UNSUPPORTED, -5, "unsupported model or feature")              \
    X(MLSTACK_ERR_LIMIT, -6, "a size limit was exceeded")                       \
    X(MLSTACK_ERR_NOT_FOUND, -7, "not found")                                   \
    X(MLSTACK_ERR_STATE, -8, "call not valid in the current state")             \
    X(MLSTACK_ERR_NO_BACKEND, -9, "backend not available")                      \
    X(MLSTACK_ERR_CANCELLED, -10, "cancelled")

typedef enum mlstack_result {
#define MLSTACK__X(name, value, text) name = value,
    MLSTACK_RESULT_LIST(MLSTACK__X)
#undef MLSTACK__X
    MLSTACK_RESULT_MIN_ = -11
} mlstack_result;

/* Returns a static string describing a result code. Thread safe. */
MLSTACK_API const char *mlstack_result_string(mlstack_result r);

/* Error detail filled by calls that have no object of their own yet (open, init). */
typedef struct mlstack_error {
    mlstack_result code;
    char message[512];
} mlstack_error;

/* Tensor element types. On-disk/ABI values: only grow at the end. */
typedef enum mlstack_dtype {
    MLSTACK_DTYPE_F32 = 0,
    MLSTACK_DTYPE_F16 = 1,
    MLSTACK_DTYPE_BF16 = 2,
    MLSTACK_DTYPE_I8 = 3,
    MLSTACK_DTYPE_U8 = 4,
    MLSTACK_DTYPE_I32 = 5,
    MLSTACK_DTYPE_I64 = 6,
    MLSTACK_DTYPE_Q8_0 = 7, /* blocks of 32: f16 scale + 32 int8 (made at load) */
    MLSTACK_DTYPE_Q4_0 = 8, /* blocks of 32: f16 scale + 16 bytes of 4-bit values (made at load) */
    MLSTACK_DTYPE_COUNT_ = 9
} mlstack_dtype;

/* A read-only view of one tensor in a mapped file. Row-major:
   element (i0, i1, ..., ik) lives at data + sum_j i_j * strides[j],
   strides[k] = element size, strides[j] = strides[j+1] * shape[j+1]. */
#define MLSTACK_MAX_DIMS 8
typedef struct mlstack_tensor {
    const char *name;
    mlstack_dtype dtype;
    int n_dims;
    int64_t shape[MLSTACK_MAX_DIMS];
    int64_t strides[MLSTACK_MAX_DIMS];
    const void *data;
    uint64_t n_bytes;
} mlstack_tensor;

typedef struct mlstack_model mlstack_model;
typedef struct mlstack_engine mlstack_engine;
typedef struct mlstack_tokenizer mlstack_tokenizer;
typedef struct mlstack_sampler mlstack_sampler;

/* Log callback: level 0 error, 1 warning, 2 info. Never called unless set. */
typedef void (*mlstack_log_fn)(void *user, int level, const char *message);

/* Model descriptor. Zero-initialise, then set path. Defaults:
     path      (required) a Hugging Face model folder
     quant     0: projection weights used as stored (F32/F16/BF16, no copy);
               MLSTACK_DTYPE_Q8_0 / MLSTACK_DTYPE_Q4_0: quantized at load (rows whose length is
               not a multiple of 32 stay as stored); embeddings always stay as stored
     log       NULL: silent */
typedef struct mlstack_model_desc {
    const char *path;
    mlstack_dtype quant;   /* 0 (F32): weights as stored; MLSTACK_DTYPE_Q8_0 or _Q4_0: quantize at load */
    mlstack_log_fn log;
    void *log_user;
} mlstack_model_desc;

#define MLSTACK_MAX_EOS 8
typedef struct mlstack_model_info {
    const char *architecture;        /* "LlamaForCausalLM", ... */
    int n_layers, n_embd, n_ff, n_heads, n_kv_heads, head_dim, n_vocab;
    int max_position_embeddings;
    int tied_embeddings;
    float rms_norm_eps, rope_theta;
    int32_t bos_id;                  /* -1 when the model has none */
    int n_eos;
    int32_t eos_ids[MLSTACK_MAX_EOS];
    mlstack_dtype weight_dtype;      /* dtype of the projection weights */
    uint64_t n_params;
    uint64_t weight_bytes;
} mlstack_model_info;

/* Opens a model folder: config.json, generation_config.json (optional),
   model.safetensors or model.safetensors.index.json + shards. Weights are mapped, not copied.
   Parameters: desc (required), out (receives the model), err (optional detail).
   Returns MLSTACK_OK or a failure; on failure *out is NULL and err says why.
   Thread safety: any thread; the returned model may be shared read-only. */
MLSTACK_API mlstack_result mlstack_model_open(const mlstack_model_desc *desc, mlstack_model **out,
                                              mlstack_error *err);
MLSTACK_API void mlstack_model_close(mlstack_model *model);
MLSTACK_API void mlstack_model_get_info(const mlstack_model *model, mlstack_model_info *out);
/* Tensor views: index 0..count-1, or by name. The views point into the mapped files and live
   as long as the model. */
MLSTACK_API int mlstack_model_tensor_count(const mlstack_model *model);
MLSTACK_API mlstack_result mlstack_model_tensor_at(const mlstack_model *model, int index, mlstack_tensor *out);
MLSTACK_API mlstack_result mlstack_model_tensor_find(const mlstack_model *model, const char *name,
                                                     mlstack_tensor *out);
MLSTACK_API const char *mlstack_dtype_name(mlstack_dtype dtype);

/* ---- Tokenizer (section 7) ---- */



/* ---- Chat templates (section 8) ---- */

/* Chat templates: a Jinja subset that renders what transformers' apply_chat_template renders,
   byte for byte, for the templates real models ship. A construct the interpreter does not know
   is an error naming it and its line and column; it never renders something else silently.
   Errors: MLSTACK_ERR_FORMAT (template syntax, bad JSON), MLSTACK_ERR_UNSUPPORTED (a Jinja
   feature outside the subset), MLSTACK_ERR_INVALID_ARG (a runtime error that jinja2 raises
   too, including raise_exception(msg); the message then starts with "raise_exception: "),
   MLSTACK_ERR_LIMIT (steps, depth, output or memory budget), MLSTACK_ERR_NO_MEMORY. */

typedef struct mlstack_chat_message {
    const char *role;
    const char *content;
} mlstack_chat_message;

/* Render options. Zero-initialise; zero means default:
     add_generation_prompt  0: false
     bos_token, eos_token   NULL: the variable is undefined in the template (chat_template_apply:
                            the value from tokenizer_config.json)
     tools_json             NULL: `tools` is none; otherwise a JSON array of tool schemas
     extra_json             NULL: none; otherwise a JSON object whose members become template
                            variables (unk_token, enable_thinking, date_string, ...); they
                            override the variables above, as transformers' kwargs do
     now_unix               0: the current time; otherwise the time strftime_now() formats
     max_output_bytes       0: MLSTACK_TEMPLATE_MAX_OUTPUT (16 MiB)
     max_steps              0: MLSTACK_TEMPLATE_MAX_STEPS (20 million evaluation steps)
     max_memory             0: MLSTACK_TEMPLATE_MAX_MEMORY (256 MiB for one render's values)
   Python's sandbox limit on range() (100000 items) always applies, as it does in transformers. */
typedef struct mlstack_template_options {
    int add_generation_prompt;
    const char *bos_token;
    const char *eos_token;
    const char *tools_json;
    const char *extra_json;
    int64_t now_unix;
    size_t max_output_bytes;
    uint64_t max_steps;
    size_t max_memory;
} mlstack_template_options;

/* Renders a Jinja chat template.
   Parameters: template_text/template_len (UTF-8, need not be NUL-terminated); messages_json/
     messages_len: a JSON array of message objects (any fields: role, content, tool_calls, ...),
     or NULL to leave `messages` undefined; opt: NULL for defaults; out/out_len receive the text
     (NUL-terminated, MLSTACK_MALLOC'd, free with mlstack_template_free_output); err: optional.
   Returns MLSTACK_OK, or a failure with *out NULL and err->message naming the problem (with
     line and column for template errors).
   Thread safety: reentrant; no shared state.
   Remarks: like transformers, keys whose value is null are dropped from each message, and a
     message's reasoning (reasoning_content/thinking/reasoning) is also given as `thinking` and
     `reasoning_content`. Variables: messages, tools, documents (none), add_generation_prompt,
     bos_token, eos_token, extra_json's members; functions raise_exception, strftime_now,
     range, namespace, dict. */
MLSTACK_API mlstack_result mlstack_template_render(const char *template_text, size_t template_len,
                                                   const char *messages_json, size_t messages_len,
                                                   const mlstack_template_options *opt, char **out,
                                                   size_t *out_len, mlstack_error *err);
/* The same with plain role/content messages. */
MLSTACK_API mlstack_result mlstack_template_render_messages(const char *template_text, size_t template_len,
                                                            const mlstack_chat_message *messages, int n_messages,
                                                            const mlstack_template_options *opt, char **out,
                                                            size_t *out_len, mlstack_error *err);
/* Frees text returned by the render calls. NULL is fine. */
MLSTACK_API void mlstack_template_free_output(char *text);

/* The chat templates and special tokens of a tokenizer folder, loaded as transformers 5 loads
   them: tokenizer_config.json's "chat_template" (a string, or a list of {name, template}); a
   chat_template.jinja file (the "default" template) and additional_chat_templates/NAME.jinja
   files replace it when present; chat_template.json (the processor file) is read only when
   neither exists. Special tokens (bos, eos, unk, pad, sep, cls, mask) are strings or
   AddedToken objects {"content": ...} in tokenizer_config.json. */
typedef struct mlstack_chat_template mlstack_chat_template;

/* Opens dir (see above). Parameters: dir; out receives the object; err optional.
   Returns MLSTACK_OK, MLSTACK_ERR_NOT_FOUND when the folder has no chat template, or another
   failure. Thread safety: any thread; the object is read-only afterwards and may be shared. */
MLSTACK_API mlstack_result mlstack_chat_template_open(const char *dir, mlstack_chat_template **out,
                                                      mlstack_error *err);
/* The same from the text of a tokenizer_config.json (no files are read). */
MLSTACK_API mlstack_result mlstack_chat_template_from_config(const char *config_json, size_t config_len,
                                                             mlstack_chat_template **out, mlstack_error *err);
MLSTACK_API void mlstack_chat_template_close(mlstack_chat_template *tpl);
/* Picks a template as transformers' get_chat_template does: `name` when given; otherwise
   "tool_use" when with_tools and that template exists, else "default" (or the only, unnamed
   template). Returns the NUL-terminated text owned by tpl, or NULL when there is none. */
MLSTACK_API const char *mlstack_chat_template_get(const mlstack_chat_template *tpl, const char *name,
                                                  int with_tools);
/* A special token's text from the config ("bos_token", "eos_token", "unk_token", "pad_token",
   ...), or NULL when the config does not set it. Owned by tpl. */
MLSTACK_API const char *mlstack_chat_template_token(const mlstack_chat_template *tpl, const char *which);
/* apply_chat_template(messages, tokenize=False, ...): picks the template (name may be NULL; see
   mlstack_chat_template_get), passes the config's special tokens (opt's bos/eos override them)
   and renders. An empty conversation is an error, as in transformers. Output as for
   mlstack_template_render. Thread safety: any number of threads may apply one template. */
MLSTACK_API mlstack_result mlstack_chat_template_apply(const mlstack_chat_template *tpl, const char *name,
                                                       const char *messages_json, size_t messages_len,
                                                       const mlstack_template_options *opt, char **out,
                                                       size_t *out_len, mlstack_error *err);


/* ---- Engine ---- */

/* Engine descriptor. Zero means default:
     n_threads         0: number of online CPUs
     kv_mem            0: bytes for min(max_position_embeddings, 4096) tokens of KV
     kv_page_tokens    0: 16 tokens per KV page
     max_seqs          0: 16 concurrent sequences
     max_batch_tokens  0: 512 rows per internal forward chunk
     isa               NULL: the best kernels this CPU runs, capped by the environment variable
                       MLSTACK_ISA if set; "scalar", "avx2" or "avx512": at most that path */
typedef struct mlstack_engine_desc {
    int n_threads;
    uint64_t kv_mem;
    int kv_page_tokens;
    int max_seqs;
    int max_batch_tokens;
    const char *isa;
} mlstack_engine_desc;

/* One row of a batch: token `token` of sequence `seq` at position `pos`. Positions of a
   sequence must follow on from what it already holds (pos <= its current length); a row with
   pos below the length overwrites from there on. want_logits != 0 keeps that row's logits. */
typedef struct mlstack_batch_row {
    int32_t seq;
    int32_t pos;
    int32_t token;
    int32_t want_logits;
} mlstack_batch_row;

MLSTACK_API mlstack_result mlstack_engine_init(mlstack_model *model, const mlstack_engine_desc *desc,
                                               mlstack_engine **out, mlstack_error *err);
MLSTACK_API void mlstack_engine_free(mlstack_engine *engine);
/* Name of the kernel path the engine selected ("scalar", "avx2", "avx512+vnni", ...). */
MLSTACK_API const char *mlstack_engine_kernels(const mlstack_engine *engine);
/* One line: kernel paths compiled in and CPU features found. */
MLSTACK_API void mlstack_cpu_report(char *buf, size_t cap);
/* Text of the engine's most recent failure ("" if none). Lives until the next call. */
MLSTACK_API const char *mlstack_engine_error(const mlstack_engine *engine);
MLSTACK_API mlstack_result mlstack_engine_seq_new(mlstack_engine *engine, int32_t *seq);
MLSTACK_API mlstack_result mlstack_engine_seq_free(mlstack_engine *engine, int32_t seq);
/* Number of positions sequence `seq` holds in the KV cache (-1 if no such sequence). */
MLSTACK_API int32_t mlstack_engine_seq_length(const mlstack_engine *engine, int32_t seq);
/* Runs the model over a ragged batch. Logits of rows with want_logits are kept until the next
   eval and read with mlstack_engine_logits(engine, row_index) (NULL for other rows). */
MLSTACK_API mlstack_result mlstack_engine_eval(mlstack_engine *engine, const mlstack_batch_row *rows,
                                               int n_rows);
MLSTACK_API const float *mlstack_engine_logits(const mlstack_engine *engine, int row);

/* Sampler descriptor. Zero means default:
     temperature        0: greedy (argmax, lowest id on ties)
     top_k              0: off
     top_p              0: off (same as 1)
     min_p              0: off
     repeat_penalty     0: off (same as 1); Hugging Face style divide/multiply
     frequency_penalty  0: off; OpenAI style, subtract count * value
     presence_penalty   0: off; subtract value once a token has appeared
     penalty_last_n     0: 64 most recent tokens; -1: all
     seed               0: seed 0 (deterministic) */
typedef struct mlstack_sampler_desc {
    float temperature;
    int top_k;
    float top_p;
    float min_p;
    float repeat_penalty;
    float frequency_penalty;
    float presence_penalty;
    int penalty_last_n;
    uint64_t seed;
} mlstack_sampler_desc;

MLSTACK_API mlstack_result mlstack_sampler_init(const mlstack_sampler_desc *desc, int n_vocab,
                                                mlstack_sampler **out);
MLSTACK_API void mlstack_sampler_free(mlstack_sampler *sampler);
/* Records a token in the penalty history (prompt tokens and sampled ones). */
MLSTACK_API void mlstack_sampler_accept(mlstack_sampler *sampler, int32_t token);
/* Picks a token from a logits row of n_vocab floats. The row is not modified. */
MLSTACK_API int32_t mlstack_sampler_sample(mlstack_sampler *sampler, const float *logits);

/* Callback per generated token; return non-zero to stop. */
typedef int (*mlstack_token_fn)(void *user, int32_t token);

typedef struct mlstack_generate_desc {
    int32_t seq;                 /* a sequence from mlstack_engine_seq_new */
    const int32_t *prompt;       /* tokens appended to the sequence before generating */
    int n_prompt;
    int max_tokens;              /* 0: until EOS or the context is full */
    const mlstack_sampler_desc *sampler;  /* NULL: greedy */
    int ignore_eos;              /* non-zero: EOS ids do not stop generation */
    mlstack_token_fn on_token;
    void *user;
    int n_generated;             /* out: tokens generated */
    double prefill_seconds;      /* out */
    double decode_seconds;       /* out */
} mlstack_generate_desc;

/* Feeds the prompt, then samples until max_tokens, an EOS id, the callback asks to stop,
   or the sequence reaches max_position_embeddings. */
MLSTACK_API mlstack_result mlstack_generate(mlstack_engine *engine, mlstack_generate_desc *desc);

#ifdef __cplusplus
}
#endif
#endif /* MLSTACK_H */

/* ======================================================================================== */
/*                                      IMPLEMENTATION                                      */
/* ======================================================================================== */
#if defined(MLSTACK_IMPLEMENTATION) && !defined(MLSTACK_IMPLEMENTATION_INCLUDED)
#define MLSTACK_IMPLEMENTATION_INCLUDED

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if !defined(_WIN32)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif
#if !defined(MLSTACK_NO_THREADS)
#include <pthread.h>
#endif

/* ==== 2. PLATFORM ==== */  /* >>platform */

#if defined(MLSTACK_MALLOC) || defined(MLSTACK_REALLOC) || defined(MLSTACK_FREE)
#if !defined(MLSTACK_MALLOC) || !defined(MLSTACK_REALLOC) || !defined(MLSTACK_FREE)
#error "define all of MLSTACK_MALLOC, MLSTACK_REALLOC and MLSTACK_FREE, or none"
#endif
#else
#define MLSTACK_MALLOC(n) malloc(n)
#define MLSTACK_REALLOC(p, n) realloc(p, n)
#define MLSTACK_FREE(p) free(p)
#endif
#ifndef MLSTACK_MAX_JSON_BYTES
#define MLSTACK_MAX_JSON_BYTES ((size_t)512 << 20)
#endif
#ifndef MLSTACK_MAX_JSON_DEPTH
#define MLSTACK_MAX_JSON_DEPTH 128
#endif
#ifndef MLSTACK_MAX_HEADER_BYTES
#define MLSTACK_MAX_HEADER_BYTES ((uint64_t)100 << 20)
#endif

#if defined(__GNUC__)
#define MLSTACK__PRINTF(a, b) __attribute__((format(printf, a, b)))
#define MLSTACK__UNUSED __attribute__((unused))
#else
#define MLSTACK__PRINTF(a, b)
#define MLSTACK__UNUSED
#endif

MLSTACK_API const char *mlstack_result_string(mlstack_result r) {
    switch (r) {
#define MLSTACK__X(name, value, text) \
    case name: return text;
        MLSTACK_RESULT_LIST(MLSTACK__X)
#undef MLSTACK__X
    default: return "unknown result";
    }
}

static void *mlstack__calloc(size_t n, size_t size) {
    void *p;
    if (size && n > SIZE_MAX / size) return NULL;
    p = MLSTACK_MALLOC(n * size > 0 ? n * size : 1);
    if (p) memset(p, 0, n * size);
    return p;
}

/* 64-byte aligned allocation for SIMD buffers (stores the offset before the block). */
static void *mlstack__aligned_alloc(size_t size) {
    unsigned char *raw, *p;
    if (size > SIZE_MAX - 64 - sizeof(void *)) return NULL;
    raw = (unsigned char *)MLSTACK_MALLOC(size + 64 + sizeof(void *));
    if (!raw) return NULL;
    p = raw + sizeof(void *);
    p += (64 - ((uintptr_t)p & 63)) & 63;
    memcpy(p - sizeof(void *), &raw, sizeof(void *));
    return p;
}
static void mlstack__aligned_free(void *p) {
    void *raw;
    if (!p) return;
    memcpy(&raw, (unsigned char *)p - sizeof(void *), sizeof(void *));
    MLSTACK_FREE(raw);
}

static int mlstack__mul_overflows(uint64_t a, uint64_t b, uint64_t *out) {
    if (a && b > UINT64_MAX / a) return 1;
    *out = a * b;
    return 0;
}

static char *mlstack__strndup(const char *s, size_t n) {
    char *d = (char *)MLSTACK_MALLOC(n + 1);
    if (!d) return NULL;
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* Formats into a fixed error buffer, never overflowing it. */
static void mlstack__vfmt(char *buf, size_t cap, const char *fmt, va_list ap) {
    if (!buf || !cap) return;
    vsnprintf(buf, cap, fmt, ap);
}
static MLSTACK__PRINTF(3, 4) mlstack_result mlstack__fail(mlstack_error *err, mlstack_result code,
                                                          const char *fmt, ...) {
    va_list ap;
    if (err) {
        err->code = code;
        va_start(ap, fmt);
        mlstack__vfmt(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}
#define MLSTACK__FAIL mlstack__fail

static double mlstack__now(void) {
#if defined(CLOCK_MONOTONIC)
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
#else /* a strict-ISO build that hid POSIX clocks: coarse but correct */
    return (double)clock() / CLOCKS_PER_SEC;
#endif
}

/* Whole-file reads (small text files: JSON configs). */
static mlstack_result mlstack__read_file(const char *path, size_t limit, char **out, size_t *out_len,
                                         mlstack_error *err) {
    FILE *f;
    long size;
    char *buf;
    *out = NULL;
    *out_len = 0;
    f = fopen(path, "rb");
    if (!f) return MLSTACK__FAIL(err, MLSTACK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return MLSTACK__FAIL(err, MLSTACK_ERR_IO, "%s: cannot determine size", path);
    }
    if ((unsigned long)size > limit) {
        fclose(f);
        return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "%s: %ld bytes, more than the limit of %zu", path, size,
                             limit);
    }
    buf = (char *)MLSTACK_MALLOC((size_t)size + 1);
    if (!buf) {
        fclose(f);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "%s: no memory for %ld bytes", path, size);
    }
    if (size && fread(buf, 1, (size_t)size, f) != (size_t)size) {
        fclose(f);
        MLSTACK_FREE(buf);
        return MLSTACK__FAIL(err, MLSTACK_ERR_IO, "%s: short read", path);
    }
    fclose(f);
    buf[size] = 0;
    *out = buf;
    *out_len = (size_t)size;
    return MLSTACK_OK;
}

static int mlstack__file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Read-only mapping of a whole file. Never written. */
typedef struct mlstack__map {
    const unsigned char *data;
    uint64_t size;
} mlstack__map;

static mlstack_result mlstack__map_open(mlstack__map *m, const char *path, mlstack_error *err) {
    int fd;
    struct stat st;
    void *p;
    m->data = NULL;
    m->size = 0;
    fd = open(path, O_RDONLY);
    if (fd < 0) return MLSTACK__FAIL(err, MLSTACK_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return MLSTACK__FAIL(err, MLSTACK_ERR_IO, "%s: not a regular file", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: empty file (expected an 8-byte header length)", path);
    }
    p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return MLSTACK__FAIL(err, MLSTACK_ERR_IO, "%s: mmap failed: %s", path, strerror(errno));
    m->data = (const unsigned char *)p;
    m->size = (uint64_t)st.st_size;
    return MLSTACK_OK;
}
static void mlstack__map_close(mlstack__map *m) {
    if (m->data) munmap((void *)(uintptr_t)m->data, (size_t)m->size);
    m->data = NULL;
    m->size = 0;
}

static int mlstack__cpu_count(void) {
#if defined(_SC_NPROCESSORS_ONLN)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)(n > 256 ? 256 : n) : 1;
#else
    return 1;
#endif
}

/* CPU features, read once: cpuid for what the chip has, xgetbv for what the OS saves on a
   context switch (AVX needs YMM state, AVX-512 also opmask and ZMM state). */
typedef struct mlstack__cpu {
    int avx2, fma, f16c, avx512f, avx512bw, avx512vl, avx512dq, avx512vnni, avx512bf16, neon, neon_dot;
} mlstack__cpu;

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define MLSTACK__X86 1
#include <cpuid.h>
#include <immintrin.h>
static uint64_t mlstack__xgetbv(void) {
    uint32_t lo, hi;
    __asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}
#endif

static void mlstack__cpu_detect(mlstack__cpu *c) {
    memset(c, 0, sizeof *c);
#if defined(MLSTACK__X86)
    {
        unsigned a, b, cx, d, max = __get_cpuid_max(0, NULL);
        uint64_t xcr0 = 0;
        int os_avx = 0, os_avx512 = 0;
        if (max < 1) return;
        __cpuid_count(1, 0, a, b, cx, d);
        if (cx & (1u << 27)) { /* OSXSAVE: xgetbv is usable */
            xcr0 = mlstack__xgetbv();
            os_avx = (xcr0 & 6) == 6;
            os_avx512 = os_avx && (xcr0 & 0xE0) == 0xE0;
        }
        c->fma = os_avx && (cx & (1u << 12));
        c->f16c = os_avx && (cx & (1u << 29));
        if (max >= 7) {
            __cpuid_count(7, 0, a, b, cx, d);
            c->avx2 = os_avx && (b & (1u << 5));
            c->avx512f = os_avx512 && (b & (1u << 16));
            c->avx512dq = os_avx512 && (b & (1u << 17));
            c->avx512bw = os_avx512 && (b & (1u << 30));
            c->avx512vl = os_avx512 && (b & (1u << 31));
            c->avx512vnni = os_avx512 && (cx & (1u << 11));
            __cpuid_count(7, 1, a, b, cx, d);
            c->avx512bf16 = os_avx512 && (a & (1u << 5));
        }
        (void)d;
    }
#elif defined(__aarch64__)
    c->neon = 1; /* baseline on AArch64 */
#if defined(__linux__)
    {
        /* hwcaps without <sys/auxv.h> dependencies beyond getauxval */
        extern unsigned long getauxval(unsigned long);
        c->neon_dot = (getauxval(16 /* AT_HWCAP */) & (1ul << 20 /* HWCAP_ASIMDDP */)) != 0;
    }
#endif
#endif
}

/* Thread pool: a fixed set of workers, fork/join over task indices [0, n_tasks).
   The calling thread takes part, so a pool of 1 runs everything inline. */
typedef void (*mlstack__task_fn)(void *ctx, int task, int n_tasks, int thread);

typedef struct mlstack__pool {
    int n_threads;
#if !defined(MLSTACK_NO_THREADS)
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint64_t generation;
    int pending;   /* workers still busy with the current generation */
    int quit;
    mlstack__task_fn fn;
    void *ctx;
    int n_tasks;
#endif
} mlstack__pool;

#if !defined(MLSTACK_NO_THREADS)
typedef struct mlstack__worker_arg {
    mlstack__pool *pool;
    int index;
} mlstack__worker_arg;

static void *mlstack__worker(void *arg_) {
    mlstack__worker_arg arg = *(mlstack__worker_arg *)arg_;
    mlstack__pool *p = arg.pool;
    uint64_t seen = 0;
    MLSTACK_FREE(arg_);
    for (;;) {
        int t;
        pthread_mutex_lock(&p->mu);
        while (p->generation == seen && !p->quit) pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        seen = p->generation;
        pthread_mutex_unlock(&p->mu);
        for (t = arg.index; t < p->n_tasks; t += p->n_threads) p->fn(p->ctx, t, p->n_tasks, arg.index);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0) pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->mu);
    }
}
#endif

static int mlstack__pool_init(mlstack__pool *p, int n_threads) {
    memset(p, 0, sizeof *p);
    if (n_threads < 1) n_threads = 1;
#if defined(MLSTACK_NO_THREADS)
    p->n_threads = 1;
    return 0;
#else
    p->n_threads = n_threads;
    if (n_threads == 1) return 0;
    p->threads = (pthread_t *)mlstack__calloc((size_t)n_threads, sizeof(pthread_t));
    if (!p->threads) return -1;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    {
        int i;
        for (i = 1; i < n_threads; i++) {
            mlstack__worker_arg *a = (mlstack__worker_arg *)MLSTACK_MALLOC(sizeof *a);
            if (a) {
                a->pool = p;
                a->index = i;
            }
            if (!a || pthread_create(&p->threads[i], NULL, mlstack__worker, a) != 0) {
                MLSTACK_FREE(a);
                p->n_threads = i; /* only these started; mlstack__pool_free joins them */
                return -1;
            }
        }
    }
    return 0;
#endif
}

/* Runs fn(ctx, t, n_tasks) for every t, spread over the pool; returns when all are done.
   Task t always runs the same work whichever thread takes it, so results never depend on the
   thread count. */
static void mlstack__pool_run(mlstack__pool *p, mlstack__task_fn fn, void *ctx, int n_tasks) {
#if !defined(MLSTACK_NO_THREADS)
    int t;
    if (p->n_threads > 1 && n_tasks > 1) {
        pthread_mutex_lock(&p->mu);
        p->fn = fn;
        p->ctx = ctx;
        p->n_tasks = n_tasks;
        p->pending = p->n_threads - 1;
        p->generation++;
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
        for (t = 0; t < n_tasks; t += p->n_threads) fn(ctx, t, n_tasks, 0);
        pthread_mutex_lock(&p->mu);
        while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
        return;
    }
    for (t = 0; t < n_tasks; t++) fn(ctx, t, n_tasks, 0);
#else
    int t;
    (void)p;
    for (t = 0; t < n_tasks; t++) fn(ctx, t, n_tasks, 0);
#endif
}

static void mlstack__pool_free(mlstack__pool *p) {
#if !defined(MLSTACK_NO_THREADS)
    int i;
    if (p->threads) {
        pthread_mutex_lock(&p->mu);
        p->quit = 1;
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
        for (i = 1; i < p->n_threads; i++) pthread_join(p->threads[i], NULL);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->wake);
        pthread_cond_destroy(&p->done);
        MLSTACK_FREE(p->threads);
    }
#endif
    memset(p, 0, sizeof *p);
}

/* ==== 3. JSON ==== */  /* >>json */
/* A DOM parser (RFC 8259) used for every JSON the engine reads. Strings are decoded (escapes,
   \u surrogate pairs) into NUL-terminated UTF-8; invalid UTF-8, lone surrogates and control
   characters are errors. Depth and size are limited; errors give line, column and byte offset.
   Nodes and strings live in one arena freed with the document. */

typedef enum mlstack__json_type {
    MLSTACK__JSON_NULL,
    MLSTACK__JSON_FALSE,
    MLSTACK__JSON_TRUE,
    MLSTACK__JSON_NUMBER,
    MLSTACK__JSON_STRING,
    MLSTACK__JSON_ARRAY,
    MLSTACK__JSON_OBJECT
} mlstack__json_type;

typedef struct mlstack__json mlstack__json;
struct mlstack__json {
    mlstack__json_type type;
    const char *key;       /* member name when the parent is an object (NUL-terminated) */
    size_t key_len;
    const char *str;       /* STRING: decoded text; NUMBER: the literal as written */
    size_t len;            /* STRING: byte length; ARRAY/OBJECT: number of children */
    double num;            /* NUMBER */
    int is_int;            /* NUMBER written without fraction/exponent and within int64 */
    int64_t i;             /* NUMBER when is_int */
    uint64_t offset;       /* byte offset of the value in the text */
    mlstack__json *child;  /* first child */
    mlstack__json *next;   /* next sibling */
};

typedef struct mlstack__arena_block {
    struct mlstack__arena_block *next;
    size_t used, cap;
    /* data follows, 16-byte aligned */
} mlstack__arena_block;

typedef struct mlstack__arena {
    mlstack__arena_block *head;
} mlstack__arena;

static void *mlstack__arena_alloc(mlstack__arena *a, size_t n) {
    mlstack__arena_block *b = a->head;
    size_t hdr = (sizeof(mlstack__arena_block) + 15) & ~(size_t)15;
    n = (n + 15) & ~(size_t)15;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > ((size_t)1 << 20) ? n : ((size_t)1 << 20);
        b = (mlstack__arena_block *)MLSTACK_MALLOC(hdr + cap);
        if (!b) return NULL;
        b->cap = cap;
        b->used = 0;
        b->next = a->head;
        a->head = b;
    }
    b->used += n;
    return (unsigned char *)b + hdr + b->used - n;
}
static void mlstack__arena_free(mlstack__arena *a) {
    while (a->head) {
        mlstack__arena_block *n = a->head->next;
        MLSTACK_FREE(a->head);
        a->head = n;
    }
}

typedef struct mlstack__json_doc {
    mlstack__json *root;
    mlstack__arena arena;
} mlstack__json_doc;

typedef struct mlstack__json_parser {
    const unsigned char *s;
    size_t n, pos;
    int depth, max_depth;
    mlstack__arena *arena;
    const char *what; /* file name or description for messages */
    mlstack_error *err;
} mlstack__json_parser;

static mlstack_result mlstack__json_error(mlstack__json_parser *p, size_t at, const char *msg) {
    size_t i, line = 1, col = 1;
    for (i = 0; i < at && i < p->n; i++) {
        if (p->s[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    return MLSTACK__FAIL(p->err, MLSTACK_ERR_FORMAT, "%s: JSON error at line %zu, column %zu (byte %zu): %s",
                         p->what, line, col, at, msg);
}

static void mlstack__json_ws(mlstack__json_parser *p) {
    while (p->pos < p->n) {
        unsigned char c = p->s[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
        p->pos++;
    }
}

/* Length of the valid UTF-8 sequence at s (n bytes available), or 0 if invalid.
   Rejects overlong forms, surrogates and code points above U+10FFFF. */
static int mlstack__utf8_valid_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) return (n >= 2 && (s[1] & 0xC0) == 0x80) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (n < 3 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80) return 0;
        if (c == 0xE0 && s[1] < 0xA0) return 0;
        if (c == 0xED && s[1] >= 0xA0) return 0;
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (n < 4 || (s[1] & 0xC0) != 0x80 || (s[2] & 0xC0) != 0x80 || (s[3] & 0xC0) != 0x80) return 0;
        if (c == 0xF0 && s[1] < 0x90) return 0;
        if (c == 0xF4 && s[1] >= 0x90) return 0;
        return 4;
    }
    return 0;
}

static size_t mlstack__utf8_put(unsigned char *o, uint32_t cp) {
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (unsigned char)(0xC0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (unsigned char)(0xE0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (unsigned char)(0xF0 | (cp >> 18));
    o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

static int mlstack__hex4(const unsigned char *s, uint32_t *out) {
    uint32_t v = 0;
    int i;
    for (i = 0; i < 4; i++) {
        unsigned c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= c - '0';
        else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
        else return 0;
    }
    *out = v;
    return 1;
}

/* Parses a string starting at the opening quote; decoded bytes never exceed the raw length. */
static mlstack_result mlstack__json_string(mlstack__json_parser *p, const char **out, size_t *out_len) {
    size_t start = p->pos, i, end;
    unsigned char *o, *w;
    p->pos++; /* opening quote */
    /* find the closing quote to size the output */
    for (end = p->pos; end < p->n && p->s[end] != '"'; end++)
        if (p->s[end] == '\\') end++;
    if (end >= p->n) return mlstack__json_error(p, start, "unterminated string");
    o = (unsigned char *)mlstack__arena_alloc(p->arena, end - p->pos + 1);
    if (!o) return MLSTACK__FAIL(p->err, MLSTACK_ERR_NO_MEMORY, "%s: out of memory parsing JSON", p->what);
    w = o;
    i = p->pos;
    while (i < end) {
        unsigned char c = p->s[i];
        if (c == '\\') {
            unsigned char e = p->s[i + 1];
            i += 2;
            switch (e) {
            case '"': *w++ = '"'; break;
            case '\\': *w++ = '\\'; break;
            case '/': *w++ = '/'; break;
            case 'b': *w++ = '\b'; break;
            case 'f': *w++ = '\f'; break;
            case 'n': *w++ = '\n'; break;
            case 'r': *w++ = '\r'; break;
            case 't': *w++ = '\t'; break;
            case 'u': {
                uint32_t cp, lo;
                if (end - i < 4 || !mlstack__hex4(p->s + i, &cp))
                    return mlstack__json_error(p, i - 2, "bad \\u escape (expected 4 hex digits)");
                i += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    if (end - i < 6 || p->s[i] != '\\' || p->s[i + 1] != 'u' || !mlstack__hex4(p->s + i + 2, &lo) ||
                        lo < 0xDC00 || lo > 0xDFFF)
                        return mlstack__json_error(p, i - 6, "high surrogate not followed by a low surrogate");
                    i += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                    return mlstack__json_error(p, i - 6, "lone low surrogate");
                }
                w += mlstack__utf8_put(w, cp);
                break;
            }
            default: return mlstack__json_error(p, i - 2, "unknown escape");
            }
        } else if (c < 0x20) {
            return mlstack__json_error(p, i, "control character in string (must be escaped)");
        } else if (c < 0x80) {
            *w++ = c;
            i++;
        } else {
            int l = mlstack__utf8_valid_len(p->s + i, end - i);
            if (!l) return mlstack__json_error(p, i, "invalid UTF-8 in string");
            memcpy(w, p->s + i, (size_t)l);
            w += l;
            i += (size_t)l;
        }
    }
    *w = 0;
    *out = (const char *)o;
    *out_len = (size_t)(w - o);
    p->pos = end + 1;
    return MLSTACK_OK;
}

static mlstack_result mlstack__json_number(mlstack__json_parser *p, mlstack__json *v) {
    size_t start = p->pos, i = p->pos;
    int is_int = 1;
    char buf[64], *endp;
    if (i < p->n && p->s[i] == '-') i++;
    if (i >= p->n || !(p->s[i] >= '0' && p->s[i] <= '9')) return mlstack__json_error(p, start, "expected a digit");
    if (p->s[i] == '0') {
        i++;
    } else {
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') i++;
    }
    if (i < p->n && p->s[i] == '.') {
        is_int = 0;
        i++;
        if (i >= p->n || !(p->s[i] >= '0' && p->s[i] <= '9'))
            return mlstack__json_error(p, i, "expected a digit after '.'");
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') i++;
    }
    if (i < p->n && (p->s[i] == 'e' || p->s[i] == 'E')) {
        is_int = 0;
        i++;
        if (i < p->n && (p->s[i] == '+' || p->s[i] == '-')) i++;
        if (i >= p->n || !(p->s[i] >= '0' && p->s[i] <= '9'))
            return mlstack__json_error(p, i, "expected a digit in exponent");
        while (i < p->n && p->s[i] >= '0' && p->s[i] <= '9') i++;
    }
    if (i - start >= sizeof buf) {
        /* very long literals: strtod on an arena copy */
        char *c = (char *)mlstack__arena_alloc(p->arena, i - start + 1);
        if (!c) return MLSTACK__FAIL(p->err, MLSTACK_ERR_NO_MEMORY, "%s: out of memory", p->what);
        memcpy(c, p->s + start, i - start);
        c[i - start] = 0;
        v->num = strtod(c, NULL);
        is_int = 0;
    } else {
        memcpy(buf, p->s + start, i - start);
        buf[i - start] = 0;
        v->num = strtod(buf, &endp);
        if (is_int) {
            long long ll;
            errno = 0;
            ll = strtoll(buf, &endp, 10);
            if (errno == ERANGE) is_int = 0;
            else v->i = (int64_t)ll;
        }
    }
    v->type = MLSTACK__JSON_NUMBER;
    v->is_int = is_int;
    v->str = (const char *)p->s + start;
    v->len = i - start;
    p->pos = i;
    return MLSTACK_OK;
}

static mlstack_result mlstack__json_value(mlstack__json_parser *p, mlstack__json *v) {
    unsigned char c;
    mlstack_result r;
    mlstack__json_ws(p);
    if (p->pos >= p->n) return mlstack__json_error(p, p->pos, "unexpected end of input (expected a value)");
    v->offset = p->pos;
    c = p->s[p->pos];
    if (c == '{' || c == '[') {
        int is_obj = c == '{';
        mlstack__json **tail = &v->child;
        if (++p->depth > p->max_depth) return mlstack__json_error(p, p->pos, "nesting deeper than the limit");
        v->type = is_obj ? MLSTACK__JSON_OBJECT : MLSTACK__JSON_ARRAY;
        p->pos++;
        mlstack__json_ws(p);
        if (p->pos < p->n && p->s[p->pos] == (is_obj ? '}' : ']')) {
            p->pos++;
            p->depth--;
            return MLSTACK_OK;
        }
        for (;;) {
            mlstack__json *child = (mlstack__json *)mlstack__arena_alloc(p->arena, sizeof *child);
            if (!child) return MLSTACK__FAIL(p->err, MLSTACK_ERR_NO_MEMORY, "%s: out of memory", p->what);
            memset(child, 0, sizeof *child);
            if (is_obj) {
                mlstack__json_ws(p);
                if (p->pos >= p->n || p->s[p->pos] != '"')
                    return mlstack__json_error(p, p->pos, "expected a string key");
                if ((r = mlstack__json_string(p, &child->key, &child->key_len)) != MLSTACK_OK) return r;
                mlstack__json_ws(p);
                if (p->pos >= p->n || p->s[p->pos] != ':')
                    return mlstack__json_error(p, p->pos, "expected ':' after key");
                p->pos++;
            }
            if ((r = mlstack__json_value(p, child)) != MLSTACK_OK) return r;
            *tail = child;
            tail = &child->next;
            v->len++;
            mlstack__json_ws(p);
            if (p->pos >= p->n) return mlstack__json_error(p, p->pos, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
            if (p->s[p->pos] == ',') {
                p->pos++;
                continue;
            }
            if (p->s[p->pos] == (is_obj ? '}' : ']')) {
                p->pos++;
                p->depth--;
                return MLSTACK_OK;
            }
            return mlstack__json_error(p, p->pos, is_obj ? "expected ',' or '}'" : "expected ',' or ']'");
        }
    }
    if (c == '"') {
        v->type = MLSTACK__JSON_STRING;
        return mlstack__json_string(p, &v->str, &v->len);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return mlstack__json_number(p, v);
    if (p->n - p->pos >= 4 && memcmp(p->s + p->pos, "true", 4) == 0) {
        v->type = MLSTACK__JSON_TRUE;
        p->pos += 4;
        return MLSTACK_OK;
    }
    if (p->n - p->pos >= 5 && memcmp(p->s + p->pos, "false", 5) == 0) {
        v->type = MLSTACK__JSON_FALSE;
        p->pos += 5;
        return MLSTACK_OK;
    }
    if (p->n - p->pos >= 4 && memcmp(p->s + p->pos, "null", 4) == 0) {
        v->type = MLSTACK__JSON_NULL;
        p->pos += 4;
        return MLSTACK_OK;
    }
    return mlstack__json_error(p, p->pos, "expected a value (object, array, string, number, true, false or null)");
}

/* Parses text[0..n) into doc. `what` names the source in messages. On failure doc is empty. */
static mlstack_result mlstack__json_parse(mlstack__json_doc *doc, const char *text, size_t n, const char *what,
                                          mlstack_error *err) {
    mlstack__json_parser p;
    mlstack_result r;
    memset(doc, 0, sizeof *doc);
    if (n > MLSTACK_MAX_JSON_BYTES)
        return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "%s: JSON of %zu bytes exceeds the limit of %zu", what, n,
                             (size_t)MLSTACK_MAX_JSON_BYTES);
    memset(&p, 0, sizeof p);
    p.s = (const unsigned char *)text;
    p.n = n;
    p.max_depth = MLSTACK_MAX_JSON_DEPTH;
    p.arena = &doc->arena;
    p.what = what ? what : "JSON";
    p.err = err;
    doc->root = (mlstack__json *)mlstack__arena_alloc(&doc->arena, sizeof *doc->root);
    if (!doc->root) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "%s: out of memory", p.what);
    memset(doc->root, 0, sizeof *doc->root);
    r = mlstack__json_value(&p, doc->root);
    if (r == MLSTACK_OK) {
        mlstack__json_ws(&p);
        if (p.pos != p.n) r = mlstack__json_error(&p, p.pos, "trailing characters after the JSON value");
    }
    if (r != MLSTACK_OK) {
        mlstack__arena_free(&doc->arena);
        doc->root = NULL;
    }
    return r;
}

static void mlstack__json_free(mlstack__json_doc *doc) {
    mlstack__arena_free(&doc->arena);
    doc->root = NULL;
}

/* Member of an object by key (first match), or NULL. Works on NULL and non-objects too. */
static const mlstack__json *mlstack__json_get(const mlstack__json *obj, const char *key) {
    const mlstack__json *c;
    size_t kl;
    if (!obj || obj->type != MLSTACK__JSON_OBJECT) return NULL;
    kl = strlen(key);
    for (c = obj->child; c; c = c->next)
        if (c->key_len == kl && memcmp(c->key, key, kl) == 0) return c;
    return NULL;
}

/* i-th element of an array (linear), or NULL. */
static MLSTACK__UNUSED const mlstack__json *mlstack__json_at(const mlstack__json *arr, size_t i) {
    const mlstack__json *c;
    if (!arr || (arr->type != MLSTACK__JSON_ARRAY && arr->type != MLSTACK__JSON_OBJECT)) return NULL;
    for (c = arr->child; c && i; c = c->next) i--;
    return c;
}

static int mlstack__json_is_str(const mlstack__json *v, const char *s) {
    return v && v->type == MLSTACK__JSON_STRING && strlen(s) == v->len && memcmp(v->str, s, v->len) == 0;
}

static int mlstack__json_is_null(const mlstack__json *v) { return !v || v->type == MLSTACK__JSON_NULL; }

/* ==== 4. SAFETENSORS ==== */  /* >>safetensors */
/* File layout: u64 little-endian header length H, H bytes of JSON, then the data area.
   The JSON maps tensor names to {"dtype", "shape", "data_offsets": [begin, end]} with offsets
   relative to the data area; "__metadata__" maps strings to strings. Every field is checked
   before use: lengths against the bytes that exist, shape products for overflow, byte sizes
   against dtype x shape, ranges for overlap. Sharded checkpoints list their files in
   model.safetensors.index.json ("weight_map": tensor -> file). */

typedef struct mlstack__st_tensor {
    const char *name;   /* points into the owning header's JSON arena */
    mlstack_dtype dtype;
    int n_dims;
    int64_t shape[MLSTACK_MAX_DIMS];
    uint64_t begin, end; /* within the data area of its file */
    int file;
} mlstack__st_tensor;

typedef struct mlstack__st_file {
    char *path;
    mlstack__map map;
    const unsigned char *data; /* start of the data area */
    uint64_t data_size;
    mlstack__json_doc header;
} mlstack__st_file;

typedef struct mlstack__st {
    mlstack__st_file *files;
    int n_files;
    mlstack__st_tensor *tensors; /* sorted by name */
    int n_tensors;
} mlstack__st;

/* Names as safetensors writes them; the first MLSTACK__FILE_DTYPES can appear in files. */
#define MLSTACK__FILE_DTYPES 7
static const char *const mlstack__dtype_names[MLSTACK_DTYPE_COUNT_] = {"F32", "F16", "BF16", "I8",  "U8",
                                                                       "I32", "I64", "Q8_0", "Q4_0"};
static const int mlstack__dtype_sizes[MLSTACK__FILE_DTYPES] = {4, 2, 2, 1, 1, 4, 8};

MLSTACK_API const char *mlstack_dtype_name(mlstack_dtype dtype) {
    return (unsigned)dtype < MLSTACK_DTYPE_COUNT_ ? mlstack__dtype_names[dtype] : "?";
}

static int mlstack__st_cmp_name(const void *a, const void *b) {
    return strcmp(((const mlstack__st_tensor *)a)->name, ((const mlstack__st_tensor *)b)->name);
}
static int mlstack__st_cmp_range(const void *a, const void *b) {
    const mlstack__st_tensor *x = *(const mlstack__st_tensor *const *)a, *y = *(const mlstack__st_tensor *const *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return 0;
}

static int mlstack__json_u64(const mlstack__json *v, uint64_t *out) {
    if (!v || v->type != MLSTACK__JSON_NUMBER || !v->is_int || v->i < 0) return 0;
    *out = (uint64_t)v->i;
    return 1;
}

/* Validates one file's header held in bytes[0..size) and appends its tensors to *list.
   `what` names the file in messages. */
static mlstack_result mlstack__st_parse(mlstack__st_file *f, int file_index, const unsigned char *bytes, uint64_t size,
                                        const char *what, mlstack__st_tensor **list, int *n_list, mlstack_error *err) {
    uint64_t hlen = 0, data_size;
    const mlstack__json *root, *t;
    mlstack__st_tensor *out, **order = NULL;
    int n = 0, cap = *n_list, i, first = *n_list;
    mlstack_result r;
    if (size < 8)
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT,
                             "%s: file is %llu bytes, shorter than the 8-byte header length at offset 0", what,
                             (unsigned long long)size);
    for (i = 7; i >= 0; i--) hlen = (hlen << 8) | bytes[i];
    if (hlen > size - 8)
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT,
                             "%s: header length %llu (offset 0) runs past the end of the file (%llu bytes after "
                             "the length field)",
                             what, (unsigned long long)hlen, (unsigned long long)(size - 8));
    if (hlen > MLSTACK_MAX_HEADER_BYTES)
        return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "%s: header length %llu exceeds the limit of %llu bytes", what,
                             (unsigned long long)hlen, (unsigned long long)MLSTACK_MAX_HEADER_BYTES);
    if (hlen < 2) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: header of %llu bytes cannot hold a JSON object", what, (unsigned long long)hlen);
    r = mlstack__json_parse(&f->header, (const char *)bytes + 8, (size_t)hlen, what, err);
    if (r != MLSTACK_OK) return r;
    root = f->header.root;
    if (root->type != MLSTACK__JSON_OBJECT)
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: header at offset 8 is not a JSON object", what);
    data_size = size - 8 - hlen;
    f->data = bytes + 8 + hlen;
    f->data_size = data_size;
    for (t = root->child; t; t = t->next) n++;
    if (n > INT_MAX / 2 - cap)
        return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "%s: too many tensors", what);
    out = (mlstack__st_tensor *)MLSTACK_REALLOC(*list, sizeof(**list) * (size_t)(cap + n + 1));
    if (!out) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "%s: out of memory", what);
    *list = out;
    for (t = root->child; t; t = t->next) {
        const mlstack__json *dt = mlstack__json_get(t, "dtype"), *sh = mlstack__json_get(t, "shape"),
                            *off = mlstack__json_get(t, "data_offsets"), *d;
        mlstack__st_tensor *x = &out[*n_list];
        uint64_t numel = 1, nbytes, b, e;
        int k;
        if (strcmp(t->key, "__metadata__") == 0) {
            if (t->type != MLSTACK__JSON_OBJECT)
                return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: __metadata__ is not an object", what);
            for (d = t->child; d; d = d->next)
                if (d->type != MLSTACK__JSON_STRING)
                    return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: __metadata__ value '%s' is not a string", what, d->key);
            continue;
        }
        if (t->key_len == 0 || strlen(t->key) != t->key_len)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: tensor name at header offset %llu is empty or holds a NUL", what, (unsigned long long)t->offset);
        if (t->type != MLSTACK__JSON_OBJECT)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: tensor %s: entry is not an object", what, t->key);
        memset(x, 0, sizeof *x);
        x->name = t->key;
        x->file = file_index;
        if (!dt || dt->type != MLSTACK__JSON_STRING)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: tensor %s: missing string field \"dtype\"", what, t->key);
        for (k = 0; k < MLSTACK__FILE_DTYPES; k++)
            if (mlstack__json_is_str(dt, mlstack__dtype_names[k])) break;
        if (k == MLSTACK__FILE_DTYPES)
            return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED,
                                 "%s: tensor %s: unknown dtype \"%s\" (expected F32, F16, BF16, I8, U8, I32 or I64)",
                                 what, t->key, dt->str);
        x->dtype = (mlstack_dtype)k;
        if (!sh || sh->type != MLSTACK__JSON_ARRAY)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: tensor %s: missing array field \"shape\"", what, t->key);
        if (sh->len > MLSTACK_MAX_DIMS)
            return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "%s: tensor %s: %zu dimensions (at most %d supported)",
                                 what, t->key, sh->len, MLSTACK_MAX_DIMS);
        for (d = sh->child, k = 0; d; d = d->next, k++) {
            uint64_t dim;
            if (!mlstack__json_u64(d, &dim) || dim > ((uint64_t)1 << 53))
                return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT,
                                     "%s: tensor %s: shape[%d] is %.*s (expected a non-negative integer below 2^53)",
                                     what, t->key, k, (int)(d->len > 40 ? 40 : d->len), d->type == MLSTACK__JSON_NUMBER || d->type == MLSTACK__JSON_STRING ? d->str : "a non-number");
            if (mlstack__mul_overflows(numel, dim, &numel))
                return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: tensor %s: element count overflows 64 bits", what, t->key);
            x->shape[k] = (int64_t)dim;
        }
        x->n_dims = k;
        if (mlstack__mul_overflows(numel, (uint64_t)mlstack__dtype_sizes[x->dtype], &nbytes))
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: tensor %s: byte size overflows 64 bits", what, t->key);
        if (!off || off->type != MLSTACK__JSON_ARRAY || off->len != 2 || !mlstack__json_u64(off->child, &b) ||
            !mlstack__json_u64(off->child->next, &e))
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT,
                                 "%s: tensor %s: \"data_offsets\" must be two non-negative integers", what, t->key);
        if (b > e)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: tensor %s: data_offsets reversed (begin %llu > end %llu)",
                                 what, t->key, (unsigned long long)b, (unsigned long long)e);
        if (e > data_size)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT,
                                 "%s: tensor %s: data_offsets end %llu beyond the data area (%llu bytes, file size %llu)",
                                 what, t->key, (unsigned long long)e, (unsigned long long)data_size,
                                 (unsigned long long)size);
        if (e - b != nbytes)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT,
                                 "%s: tensor %s: data_offsets span %llu bytes but dtype %s x shape needs %llu", what,
                                 t->key, (unsigned long long)(e - b), mlstack__dtype_names[x->dtype],
                                 (unsigned long long)nbytes);
        x->begin = b;
        x->end = e;
        (*n_list)++;
    }
    /* overlap check within this file */
    n = *n_list - first;
    if (n > 1) {
        order = (mlstack__st_tensor **)MLSTACK_MALLOC(sizeof(*order) * (size_t)n);
        if (!order) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "%s: out of memory", what);
        for (i = 0; i < n; i++) order[i] = &out[first + i];
        qsort(order, (size_t)n, sizeof *order, mlstack__st_cmp_range);
        for (i = 1; i < n; i++) {
            if (order[i]->begin < order[i - 1]->end && order[i]->begin < order[i]->end) {
                r = MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT,
                                  "%s: tensors %s [%llu, %llu) and %s [%llu, %llu) overlap in the data area", what,
                                  order[i - 1]->name, (unsigned long long)order[i - 1]->begin,
                                  (unsigned long long)order[i - 1]->end, order[i]->name,
                                  (unsigned long long)order[i]->begin, (unsigned long long)order[i]->end);
                MLSTACK_FREE(order);
                return r;
            }
        }
        MLSTACK_FREE(order);
    }
    return MLSTACK_OK;
}

static void mlstack__st_close(mlstack__st *st) {
    int i;
    for (i = 0; i < st->n_files; i++) {
        mlstack__map_close(&st->files[i].map);
        mlstack__json_free(&st->files[i].header);
        MLSTACK_FREE(st->files[i].path);
    }
    MLSTACK_FREE(st->files);
    MLSTACK_FREE(st->tensors);
    memset(st, 0, sizeof *st);
}

/* Sorts the tensor list by name and rejects duplicates (within or across files). */
static mlstack_result mlstack__st_index(mlstack__st *st, mlstack_error *err) {
    int i;
    if (st->n_tensors > 1) qsort(st->tensors, (size_t)st->n_tensors, sizeof *st->tensors, mlstack__st_cmp_name);
    for (i = 1; i < st->n_tensors; i++)
        if (strcmp(st->tensors[i].name, st->tensors[i - 1].name) == 0)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: duplicate tensor name %s",
                                 st->files[st->tensors[i].file].path, st->tensors[i].name);
    return MLSTACK_OK;
}

/* Validates a safetensors image held in memory (no file). Used by tests and the fuzzer;
   the tensors stay valid while st is open and bytes are alive. */
static MLSTACK__UNUSED mlstack_result mlstack__st_open_memory(mlstack__st *st, const void *bytes, uint64_t size,
                                                              mlstack_error *err) {
    mlstack_result r;
    memset(st, 0, sizeof *st);
    st->files = (mlstack__st_file *)mlstack__calloc(1, sizeof *st->files);
    if (!st->files) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    st->n_files = 1;
    st->files[0].path = mlstack__strndup("<memory>", 8);
    r = mlstack__st_parse(&st->files[0], 0, (const unsigned char *)bytes, size, "<memory>", &st->tensors,
                          &st->n_tensors, err);
    if (r == MLSTACK_OK) r = mlstack__st_index(st, err);
    if (r != MLSTACK_OK) mlstack__st_close(st);
    return r;
}

static mlstack_result mlstack__st_add_file(mlstack__st *st, const char *path, mlstack_error *err) {
    mlstack__st_file *f, *files;
    mlstack_result r;
    files = (mlstack__st_file *)MLSTACK_REALLOC(st->files, sizeof(*files) * (size_t)(st->n_files + 1));
    if (!files) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    st->files = files;
    f = &files[st->n_files];
    memset(f, 0, sizeof *f);
    f->path = mlstack__strndup(path, strlen(path));
    if (!f->path) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    st->n_files++;
    r = mlstack__map_open(&f->map, path, err);
    if (r != MLSTACK_OK) return r;
    return mlstack__st_parse(f, st->n_files - 1, f->map.data, f->map.size, f->path, &st->tensors, &st->n_tensors, err);
}

static char *mlstack__path_join(const char *dir, const char *name) {
    size_t a = strlen(dir), b = strlen(name);
    char *p = (char *)MLSTACK_MALLOC(a + b + 2);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, b + 1);
    return p;
}

static const mlstack__st_tensor *mlstack__st_find(const mlstack__st *st, const char *name) {
    int lo = 0, hi = st->n_tensors - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(st->tensors[mid].name, name);
        if (c == 0) return &st->tensors[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

/* Opens dir/model.safetensors, or the shards named by dir/model.safetensors.index.json. */
static mlstack_result mlstack__st_open_dir(mlstack__st *st, const char *dir, mlstack_error *err) {
    char *index_path = mlstack__path_join(dir, "model.safetensors.index.json"), *path;
    mlstack_result r = MLSTACK_OK;
    memset(st, 0, sizeof *st);
    if (!index_path) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    if (mlstack__file_exists(index_path)) {
        char *text = NULL;
        size_t len;
        mlstack__json_doc doc;
        const mlstack__json *wm, *e;
        memset(&doc, 0, sizeof doc);
        r = mlstack__read_file(index_path, MLSTACK_MAX_JSON_BYTES, &text, &len, err);
        if (r == MLSTACK_OK) r = mlstack__json_parse(&doc, text, len, index_path, err);
        if (r == MLSTACK_OK) {
            wm = mlstack__json_get(doc.root, "weight_map");
            if (!wm || wm->type != MLSTACK__JSON_OBJECT)
                r = MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: missing object \"weight_map\"", index_path);
            for (e = wm ? wm->child : NULL; r == MLSTACK_OK && e; e = e->next) {
                int k, seen = 0;
                if (e->type != MLSTACK__JSON_STRING || e->len == 0 || strlen(e->str) != e->len ||
                    strchr(e->str, '/') || strchr(e->str, '\\') || strcmp(e->str, "..") == 0 || strcmp(e->str, ".") == 0) {
                    r = MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT,
                                      "%s: weight_map[\"%s\"] must be a plain file name in the model folder",
                                      index_path, e->key);
                    break;
                }
                for (k = 0; k < st->n_files && !seen; k++) {
                    const char *base = strrchr(st->files[k].path, '/');
                    seen = strcmp(base ? base + 1 : st->files[k].path, e->str) == 0;
                }
                if (seen) continue;
                path = mlstack__path_join(dir, e->str);
                if (!path) {
                    r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
                    break;
                }
                if (!mlstack__file_exists(path))
                    r = MLSTACK__FAIL(err, MLSTACK_ERR_IO, "%s: shard %s (named for tensor %s) does not exist",
                                      index_path, e->str, e->key);
                else
                    r = mlstack__st_add_file(st, path, err);
                MLSTACK_FREE(path);
            }
            if (r == MLSTACK_OK) r = mlstack__st_index(st, err);
            for (e = wm ? wm->child : NULL; r == MLSTACK_OK && e; e = e->next) {
                const mlstack__st_tensor *t = mlstack__st_find(st, e->key);
                const char *base = t ? strrchr(st->files[t->file].path, '/') : NULL;
                if (!t || strcmp(base ? base + 1 : st->files[t->file].path, e->str) != 0)
                    r = MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: tensor %s is not in shard %s", index_path,
                                      e->key, e->str);
            }
        }
        mlstack__json_free(&doc);
        MLSTACK_FREE(text);
    } else {
        path = mlstack__path_join(dir, "model.safetensors");
        if (!path) r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
        else if (!mlstack__file_exists(path))
            r = MLSTACK__FAIL(err, MLSTACK_ERR_IO,
                              "%s: no model.safetensors or model.safetensors.index.json in this folder", dir);
        else {
            r = mlstack__st_add_file(st, path, err);
            if (r == MLSTACK_OK) r = mlstack__st_index(st, err);
        }
        MLSTACK_FREE(path);
    }
    MLSTACK_FREE(index_path);
    if (r != MLSTACK_OK) mlstack__st_close(st);
    return r;
}

static void mlstack__st_view(const mlstack__st *st, const mlstack__st_tensor *t, mlstack_tensor *v) {
    int k;
    memset(v, 0, sizeof *v);
    v->name = t->name;
    v->dtype = t->dtype;
    v->n_dims = t->n_dims;
    for (k = 0; k < t->n_dims; k++) v->shape[k] = t->shape[k];
    for (k = t->n_dims - 1; k >= 0; k--)
        v->strides[k] = k == t->n_dims - 1 ? mlstack__dtype_sizes[t->dtype] : v->strides[k + 1] * v->shape[k + 1];
    v->data = st->files[t->file].data + t->begin;
    v->n_bytes = t->end - t->begin;
}

/* ==== 5. UNICODE ==== */  /* >>unicode */



/* ==== 6. REGEX ==== */  /* >>regex */



/* ==== 7. TOKENIZER ==== */  /* >>tokenizer */



/* ==== 8. TEMPLATE ==== */  /* >>template */
/* A Jinja subset for chat templates, aiming at what transformers renders: jinja2's
   ImmutableSandboxedEnvironment with trim_blocks and lstrip_blocks, the loopcontrols extension,
   and transformers' own tojson, raise_exception, strftime_now, namespace and dict.
     source --normalise line breaks--> lexer (whitespace control applied to text here)
            --> recursive-descent parser (AST) --> tree-walking evaluator (own value type)
   One render's nodes, values and output live in one arena with a byte budget. Steps, nesting
   depth (expressions, statements and macro calls together) and output size are bounded, so a
   hostile template ends with an error instead of a hang or a stack overflow.
   Semantics follow Python where jinja2 defers to it: str() of floats is Python's repr, `//`
   and `%` floor, strings index and count by code point, undefined prints as "" but errors when
   called, subscripted or given an attribute, generators (selectattr, map, ...) are single-use
   and always true. Case mapping covers ASCII and Latin-1; other cased letters are an error. */

#ifndef MLSTACK_TEMPLATE_MAX_OUTPUT
#define MLSTACK_TEMPLATE_MAX_OUTPUT ((size_t)16 << 20)
#endif
#ifndef MLSTACK_TEMPLATE_MAX_STEPS
#define MLSTACK_TEMPLATE_MAX_STEPS ((uint64_t)20000000)
#endif
#ifndef MLSTACK_TEMPLATE_MAX_MEMORY
#define MLSTACK_TEMPLATE_MAX_MEMORY ((size_t)256 << 20)
#endif
#ifndef MLSTACK_TEMPLATE_MAX_DEPTH
#define MLSTACK_TEMPLATE_MAX_DEPTH 300
#endif
#define MLSTACK__TPL_MAX_RANGE 100000 /* jinja2.sandbox.MAX_RANGE */

#if !defined(_WIN32)
#include <dirent.h>
#endif

/* ---- values ---- */
enum {
    MLSTACK__TV_UNDEF, MLSTACK__TV_NONE, MLSTACK__TV_BOOL, MLSTACK__TV_INT, MLSTACK__TV_FLOAT,
    MLSTACK__TV_STR, MLSTACK__TV_LIST, MLSTACK__TV_DICT, MLSTACK__TV_NS, MLSTACK__TV_MACRO,
    MLSTACK__TV_FUNC, MLSTACK__TV_METHOD, MLSTACK__TV_LOOP
};
/* What a list-valued object really is in Python, for printing, tojson and truthiness. */
enum {
    MLSTACK__TL_LIST, MLSTACK__TL_TUPLE, MLSTACK__TL_GEN, MLSTACK__TL_RANGE, MLSTACK__TL_ITEMS,
    MLSTACK__TL_KEYS, MLSTACK__TL_VALUES
};

typedef struct mlstack__tv mlstack__tv;
typedef struct mlstack__tlist mlstack__tlist;
typedef struct mlstack__tdict mlstack__tdict;
typedef struct mlstack__tn mlstack__tn;
typedef struct mlstack__tscope mlstack__tscope;

struct mlstack__tv {
    int t;
    union {
        int64_t i; /* BOOL, INT, FUNC id */
        double f;
        struct {
            const char *p; /* STR text; UNDEF: why it is undefined (for messages), may be NULL */
            size_t n;
        } s;
        mlstack__tlist *l;
        mlstack__tdict *d;
        struct mlstack__tmacro *m;
        struct mlstack__tmethod *b;
        struct mlstack__tloop *lp;
    } u;
};
struct mlstack__tlist {
    int kind;
    size_t start; /* generators: items before start were consumed */
    size_t n, cap;
    mlstack__tv *v;
};
struct mlstack__tdict {
    size_t n, cap;
    mlstack__tv *k, *v;
};
struct mlstack__tmacro {
    const mlstack__tn *node;
    mlstack__tscope *closure;
};
struct mlstack__tmethod {
    mlstack__tv self;
    const char *name;
};
struct mlstack__tloop {
    const mlstack__tv *items;
    size_t i, n;
};
struct mlstack__tscope {
    mlstack__tscope *parent;
    mlstack__tdict vars;
};

/* ---- AST ---- */
enum {
    /* expressions */
    MLSTACK__N_LIT, MLSTACK__N_NAME, MLSTACK__N_ATTR, MLSTACK__N_ITEM, MLSTACK__N_SLICE, MLSTACK__N_CALL,
    MLSTACK__N_KWARG, MLSTACK__N_FILTER, MLSTACK__N_TEST, MLSTACK__N_BIN, MLSTACK__N_NEG, MLSTACK__N_POS,
    MLSTACK__N_NOT, MLSTACK__N_AND, MLSTACK__N_OR, MLSTACK__N_COND, MLSTACK__N_LIST, MLSTACK__N_TUPLE,
    MLSTACK__N_DICT, MLSTACK__N_PAIR, MLSTACK__N_CMP,
    /* statements */
    MLSTACK__S_TEXT, MLSTACK__S_OUT, MLSTACK__S_IF, MLSTACK__S_FOR, MLSTACK__S_SET, MLSTACK__S_SETBLOCK,
    MLSTACK__S_MACRO, MLSTACK__S_BREAK, MLSTACK__S_CONTINUE, MLSTACK__S_BLOCK, MLSTACK__S_FILTERBLOCK
};
/* Binary operators (N_BIN) and comparisons (N_CMP chain). */
enum {
    MLSTACK__OP_ADD, MLSTACK__OP_SUB, MLSTACK__OP_MUL, MLSTACK__OP_DIV, MLSTACK__OP_FLOORDIV, MLSTACK__OP_MOD,
    MLSTACK__OP_POW, MLSTACK__OP_CONCAT, MLSTACK__OP_EQ, MLSTACK__OP_NE, MLSTACK__OP_LT, MLSTACK__OP_GT,
    MLSTACK__OP_LE, MLSTACK__OP_GE, MLSTACK__OP_IN, MLSTACK__OP_NOTIN
};

struct mlstack__tn {
    int kind, op;
    size_t pos;                        /* byte offset in the (normalised) source */
    const char *s;                     /* name, text */
    size_t n;
    mlstack__tv v;                     /* N_LIT */
    mlstack__tn *a, *b, *c, *d, *e;    /* children; meaning per kind */
    mlstack__tn *next;                 /* next in a list (statements, arguments, items) */
};

/* ---- render context ---- */
typedef struct mlstack__tbuf {
    char *p;
    size_t n, cap;
} mlstack__tbuf;

typedef struct mlstack__tctx {
    mlstack__arena arena;
    size_t mem, max_mem;
    const char *src;
    size_t src_n;
    mlstack_error *err;
    mlstack_result rc;
    uint64_t steps, max_steps;
    int depth;
    size_t max_out;
    mlstack__tbuf *out;
    int64_t now;
} mlstack__tctx;

static void mlstack__tpl_linecol(const mlstack__tctx *c, size_t pos, size_t *line, size_t *col) {
    size_t i;
    *line = 1;
    *col = 1;
    for (i = 0; i < pos && i < c->src_n; i++) {
        if (c->src[i] == '\n') {
            ++*line;
            *col = 1;
        } else if (((unsigned char)c->src[i] & 0xC0) != 0x80) {
            ++*col;
        }
    }
}

/* Records the first error (later ones are consequences) and returns -1. */
static MLSTACK__PRINTF(4, 5) int mlstack__tpl_fail(mlstack__tctx *c, size_t pos, mlstack_result code,
                                                   const char *fmt, ...) {
    va_list ap;
    char msg[400];
    size_t line, col;
    if (c->rc != MLSTACK_OK) return -1;
    c->rc = code;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (c->err) {
        c->err->code = code;
        if (pos == (size_t)-1) {
            snprintf(c->err->message, sizeof c->err->message, "chat template: %s", msg);
        } else {
            mlstack__tpl_linecol(c, pos, &line, &col);
            snprintf(c->err->message, sizeof c->err->message, "chat template line %zu, column %zu: %s", line, col,
                     msg);
        }
    }
    return -1;
}
#define MLSTACK__TNOPOS ((size_t)-1)

static void *mlstack__tpl_alloc(mlstack__tctx *c, size_t n) {
    void *p;
    if (n > c->max_mem || c->mem > c->max_mem - n) {
        mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_LIMIT, "memory budget of %zu bytes exceeded", c->max_mem);
        return NULL;
    }
    p = mlstack__arena_alloc(&c->arena, n ? n : 1);
    if (!p) {
        mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_NO_MEMORY, "out of memory");
        return NULL;
    }
    c->mem += n;
    return p;
}

static char *mlstack__tpl_strdup(mlstack__tctx *c, const char *s, size_t n) {
    char *d = (char *)mlstack__tpl_alloc(c, n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* Growable byte buffer in the arena (old blocks are left to the arena). */
static int mlstack__tbuf_put(mlstack__tctx *c, mlstack__tbuf *b, const char *s, size_t n) {
    if (n > c->max_out || b->n > c->max_out - n)
        return mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_LIMIT, "output larger than the limit of %zu bytes",
                                 c->max_out);
    if (b->cap - b->n < n + 1) {
        size_t cap = b->cap ? b->cap : 64;
        char *np;
        while (cap - b->n < n + 1) cap *= 2;
        np = (char *)mlstack__tpl_alloc(c, cap);
        if (!np) return -1;
        if (b->n) memcpy(np, b->p, b->n);
        b->p = np;
        b->cap = cap;
    }
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return 0;
}
static int mlstack__tbuf_puts(mlstack__tctx *c, mlstack__tbuf *b, const char *s) {
    return mlstack__tbuf_put(c, b, s, strlen(s));
}
static int mlstack__tbuf_cp(mlstack__tctx *c, mlstack__tbuf *b, uint32_t cp) {
    unsigned char tmp[4];
    return mlstack__tbuf_put(c, b, (const char *)tmp, mlstack__utf8_put(tmp, cp));
}

/* value constructors */
static mlstack__tv mlstack__tv_undef(const char *why) {
    mlstack__tv v;
    memset(&v, 0, sizeof v);
    v.t = MLSTACK__TV_UNDEF;
    v.u.s.p = why;
    return v;
}
static mlstack__tv mlstack__tv_none(void) {
    mlstack__tv v;
    memset(&v, 0, sizeof v);
    v.t = MLSTACK__TV_NONE;
    return v;
}
static mlstack__tv mlstack__tv_bool(int b) {
    mlstack__tv v;
    memset(&v, 0, sizeof v);
    v.t = MLSTACK__TV_BOOL;
    v.u.i = b != 0;
    return v;
}
static mlstack__tv mlstack__tv_int(int64_t i) {
    mlstack__tv v;
    memset(&v, 0, sizeof v);
    v.t = MLSTACK__TV_INT;
    v.u.i = i;
    return v;
}
static mlstack__tv mlstack__tv_float(double f) {
    mlstack__tv v;
    memset(&v, 0, sizeof v);
    v.t = MLSTACK__TV_FLOAT;
    v.u.f = f;
    return v;
}
static mlstack__tv mlstack__tv_str(const char *p, size_t n) {
    mlstack__tv v;
    memset(&v, 0, sizeof v);
    v.t = MLSTACK__TV_STR;
    v.u.s.p = p;
    v.u.s.n = n;
    return v;
}
static mlstack__tv mlstack__tv_cstr(const char *p) { return mlstack__tv_str(p, strlen(p)); }

static mlstack__tlist *mlstack__tlist_new(mlstack__tctx *c, int kind, size_t cap) {
    mlstack__tlist *l = (mlstack__tlist *)mlstack__tpl_alloc(c, sizeof *l);
    if (!l) return NULL;
    memset(l, 0, sizeof *l);
    l->kind = kind;
    if (cap) {
        if (cap > c->max_mem / sizeof(mlstack__tv)) {
            mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_LIMIT, "list too large");
            return NULL;
        }
        l->v = (mlstack__tv *)mlstack__tpl_alloc(c, cap * sizeof(mlstack__tv));
        if (!l->v) return NULL;
        l->cap = cap;
    }
    return l;
}
static int mlstack__tlist_push(mlstack__tctx *c, mlstack__tlist *l, mlstack__tv v) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        mlstack__tv *nv;
        if (cap > c->max_mem / sizeof(mlstack__tv))
            return mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_LIMIT, "list too large");
        nv = (mlstack__tv *)mlstack__tpl_alloc(c, cap * sizeof(mlstack__tv));
        if (!nv) return -1;
        if (l->n) memcpy(nv, l->v, l->n * sizeof(mlstack__tv));
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
    return 0;
}
static mlstack__tv mlstack__tv_list(mlstack__tlist *l) {
    mlstack__tv v;
    memset(&v, 0, sizeof v);
    v.t = MLSTACK__TV_LIST;
    v.u.l = l;
    return v;
}
static mlstack__tv mlstack__tv_dict(mlstack__tdict *d, int t) {
    mlstack__tv v;
    memset(&v, 0, sizeof v);
    v.t = t;
    v.u.d = d;
    return v;
}
static mlstack__tdict *mlstack__tdict_new(mlstack__tctx *c) {
    mlstack__tdict *d = (mlstack__tdict *)mlstack__tpl_alloc(c, sizeof *d);
    if (d) memset(d, 0, sizeof *d);
    return d;
}

static int mlstack__tv_is_num(const mlstack__tv *v) {
    return v->t == MLSTACK__TV_INT || v->t == MLSTACK__TV_FLOAT || v->t == MLSTACK__TV_BOOL;
}
static double mlstack__tv_num(const mlstack__tv *v) {
    return v->t == MLSTACK__TV_FLOAT ? v->u.f : (double)v->u.i;
}
/* Python ==. Numbers compare by value across bool/int/float; list != tuple. */
static int mlstack__tv_eq(const mlstack__tv *a, const mlstack__tv *b, int depth) {
    size_t i, j;
    if (depth > 200) return 0;
    if (mlstack__tv_is_num(a) && mlstack__tv_is_num(b)) {
        if (a->t != MLSTACK__TV_FLOAT && b->t != MLSTACK__TV_FLOAT) return a->u.i == b->u.i;
        return mlstack__tv_num(a) == mlstack__tv_num(b);
    }
    if (a->t != b->t) return 0;
    switch (a->t) {
    case MLSTACK__TV_UNDEF:
    case MLSTACK__TV_NONE: return 1;
    case MLSTACK__TV_STR: return a->u.s.n == b->u.s.n && memcmp(a->u.s.p, b->u.s.p, a->u.s.n) == 0;
    case MLSTACK__TV_LIST: {
        const mlstack__tlist *x = a->u.l, *y = b->u.l;
        int kx = x->kind == MLSTACK__TL_TUPLE, ky = y->kind == MLSTACK__TL_TUPLE;
        if (x == y) return 1;
        if (x->kind == MLSTACK__TL_GEN || y->kind == MLSTACK__TL_GEN) return 0;
        if (kx != ky || x->n - x->start != y->n - y->start) return 0;
        for (i = 0; i < x->n - x->start; i++)
            if (!mlstack__tv_eq(&x->v[x->start + i], &y->v[y->start + i], depth + 1)) return 0;
        return 1;
    }
    case MLSTACK__TV_DICT: {
        const mlstack__tdict *x = a->u.d, *y = b->u.d;
        if (x->n != y->n) return 0;
        for (i = 0; i < x->n; i++) {
            for (j = 0; j < y->n; j++)
                if (mlstack__tv_eq(&x->k[i], &y->k[j], depth + 1)) break;
            if (j == y->n || !mlstack__tv_eq(&x->v[i], &y->v[j], depth + 1)) return 0;
        }
        return 1;
    }
    case MLSTACK__TV_NS: return a->u.d == b->u.d;
    case MLSTACK__TV_MACRO: return a->u.m == b->u.m;
    case MLSTACK__TV_FUNC: return a->u.i == b->u.i;
    default: return 0;
    }
}

static mlstack__tv *mlstack__tdict_find(mlstack__tdict *d, const mlstack__tv *k) {
    size_t i;
    for (i = 0; i < d->n; i++)
        if (mlstack__tv_eq(&d->k[i], k, 0)) return &d->v[i];
    return NULL;
}
static mlstack__tv *mlstack__tdict_findn(mlstack__tdict *d, const char *s, size_t n) {
    size_t i;
    for (i = 0; i < d->n; i++)
        if (d->k[i].t == MLSTACK__TV_STR && d->k[i].u.s.n == n && memcmp(d->k[i].u.s.p, s, n) == 0) return &d->v[i];
    return NULL;
}
static int mlstack__tdict_set(mlstack__tctx *c, mlstack__tdict *d, mlstack__tv k, mlstack__tv v) {
    mlstack__tv *slot = mlstack__tdict_find(d, &k);
    if (slot) {
        *slot = v;
        return 0;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 8;
        mlstack__tv *nk, *nv;
        if (cap > c->max_mem / (2 * sizeof(mlstack__tv)))
            return mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_LIMIT, "dict too large");
        nk = (mlstack__tv *)mlstack__tpl_alloc(c, cap * sizeof(mlstack__tv));
        nv = (mlstack__tv *)mlstack__tpl_alloc(c, cap * sizeof(mlstack__tv));
        if (!nk || !nv) return -1;
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof(mlstack__tv));
            memcpy(nv, d->v, d->n * sizeof(mlstack__tv));
        }
        d->k = nk;
        d->v = nv;
        d->cap = cap;
    }
    d->k[d->n] = k;
    d->v[d->n] = v;
    d->n++;
    return 0;
}

/* ---- UTF-8 helpers (template text is validated before use) ---- */
static uint32_t mlstack__tpl_cp(const char *s, size_t n, size_t *len) {
    const unsigned char *u = (const unsigned char *)s;
    int l = mlstack__utf8_valid_len(u, n);
    if (l <= 1) {
        *len = 1;
        return u[0];
    }
    *len = (size_t)l;
    if (l == 2) return ((uint32_t)(u[0] & 0x1F) << 6) | (u[1] & 0x3F);
    if (l == 3) return ((uint32_t)(u[0] & 0x0F) << 12) | ((uint32_t)(u[1] & 0x3F) << 6) | (u[2] & 0x3F);
    return ((uint32_t)(u[0] & 0x07) << 18) | ((uint32_t)(u[1] & 0x3F) << 12) | ((uint32_t)(u[2] & 0x3F) << 6) |
           (u[3] & 0x3F);
}
static size_t mlstack__tpl_cplen(const char *s, size_t n) {
    size_t i, k = 0;
    for (i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) k++;
    return k;
}
/* Byte offset of code point index `cp` (clamped to n). */
static size_t mlstack__tpl_cpoff(const char *s, size_t n, size_t cp) {
    size_t i;
    for (i = 0; i < n && cp; i++)
        if (i + 1 >= n || ((unsigned char)s[i + 1] & 0xC0) != 0x80) cp--;
    return i;
}
/* Python str.isspace() */
static int mlstack__tpl_isspace(uint32_t c) {
    return (c >= 9 && c <= 13) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
           (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
           c == 0x3000;
}
/* Python str.splitlines() boundaries */
static int mlstack__tpl_islinebreak(uint32_t c) {
    return c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D || c == 0x1E ||
           c == 0x85 || c == 0x2028 || c == 0x2029;
}

/* Case mapping. 0 on success; -1 when cp is a cased letter outside the covered ranges
   (ASCII, Latin-1, Latin Extended-A pairs, Greek and Cyrillic basics). */
static int mlstack__tpl_case(uint32_t cp, int upper, uint32_t *out) {
    *out = cp;
    if (cp < 0x80) {
        if (upper && cp >= 'a' && cp <= 'z') *out = cp - 32;
        if (!upper && cp >= 'A' && cp <= 'Z') *out = cp + 32;
        return 0;
    }
    if (cp < 0xC0) return cp == 0xB5 ? -1 : 0;
    if (cp <= 0xFF) {
        if (cp == 0xD7 || cp == 0xF7) return 0;
        if (cp == 0xDF || cp == 0xFF) return upper ? -1 : 0;
        if (upper && cp >= 0xE0) *out = cp - 32;
        if (!upper && cp < 0xE0) *out = cp + 32;
        return 0;
    }
    if (cp >= 0x100 && cp <= 0x17F) {
        if (cp == 0x130 || cp == 0x131 || cp == 0x138 || cp == 0x149 || cp == 0x178 || cp == 0x17F) return -1;
        if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E)) {
            *out = upper ? ((cp & 1) ? cp : cp - 1) : ((cp & 1) ? cp + 1 : cp);
        } else {
            *out = upper ? (cp & ~1u) : (cp | 1u);
        }
        return 0;
    }
    if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) {
        if (!upper) *out = cp + 32;
        return 0;
    }
    if (cp >= 0x3B1 && cp <= 0x3C9) {
        if (cp == 0x3C2) return upper ? -1 : 0;
        if (upper) *out = cp - 32;
        return 0;
    }
    if (cp >= 0x410 && cp <= 0x42F) {
        if (!upper) *out = cp + 32;
        return 0;
    }
    if (cp >= 0x430 && cp <= 0x44F) {
        if (upper) *out = cp - 32;
        return 0;
    }
    if (cp >= 0x400 && cp <= 0x40F) {
        if (!upper) *out = cp + 80;
        return 0;
    }
    if (cp >= 0x450 && cp <= 0x45F) {
        if (upper) *out = cp - 80;
        return 0;
    }
    /* Caseless scripts and symbols commonly seen in chat text. */
    if ((cp >= 0x2000 && cp <= 0x2BFF) || (cp >= 0x3000 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7AF) ||
        (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0xFE00 && cp <= 0xFFEF) || (cp >= 0x1F000 && cp <= 0x1FAFF) ||
        (cp >= 0x20000 && cp <= 0x3FFFF) || (cp >= 0x590 && cp <= 0x109F) || (cp >= 0x300 && cp <= 0x36F))
        return 0;
    return -1;
}
static int mlstack__tpl_iscased_letter(uint32_t cp) {
    uint32_t u, l;
    if (mlstack__tpl_case(cp, 1, &u) != 0 || mlstack__tpl_case(cp, 0, &l) != 0) return 1;
    return u != l;
}

/* ---- lexer ---- */
enum {
    MLSTACK__TK_EOF, MLSTACK__TK_TEXT, MLSTACK__TK_VBEGIN, MLSTACK__TK_VEND, MLSTACK__TK_BBEGIN, MLSTACK__TK_BEND,
    MLSTACK__TK_NAME, MLSTACK__TK_STR, MLSTACK__TK_INT, MLSTACK__TK_FLOAT, MLSTACK__TK_OP
};
typedef struct mlstack__ttok {
    int t;
    size_t pos;
    const char *s; /* NAME, OP: in the source; STR, TEXT: decoded copy */
    size_t n;
    int64_t i;
    double f;
} mlstack__ttok;

typedef struct mlstack__tlex {
    mlstack__tctx *c;
    const char *s;
    size_t n;
    mlstack__ttok *tok;
    size_t ntok, cap;
} mlstack__tlex;

static int mlstack__tlex_push(mlstack__tlex *L, int t, size_t pos, const char *s, size_t n) {
    mlstack__ttok *k;
    if (L->ntok == L->cap) {
        size_t cap = L->cap ? L->cap * 2 : 256;
        mlstack__ttok *nt = (mlstack__ttok *)mlstack__tpl_alloc(L->c, cap * sizeof *nt);
        if (!nt) return -1;
        if (L->ntok) memcpy(nt, L->tok, L->ntok * sizeof *nt);
        L->tok = nt;
        L->cap = cap;
    }
    k = &L->tok[L->ntok++];
    memset(k, 0, sizeof *k);
    k->t = t;
    k->pos = pos;
    k->s = s;
    k->n = n;
    return 0;
}

static int mlstack__tpl_ws(char ch) { return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\f' || ch == '\v'; }

/* A string literal: Python's unicode-escape decoding of the text between the quotes. */
static int mlstack__tlex_string(mlstack__tlex *L, size_t *pp) {
    size_t p = *pp, start = p, i;
    char q = L->s[p];
    mlstack__tbuf b;
    memset(&b, 0, sizeof b);
    p++;
    while (p < L->n && L->s[p] != q) p += (L->s[p] == '\\' && p + 1 < L->n) ? 2 : 1;
    if (p >= L->n) return mlstack__tpl_fail(L->c, start, MLSTACK_ERR_FORMAT, "unterminated string literal");
    if (mlstack__tbuf_put(L->c, &b, "", 0)) return -1;
    for (i = start + 1; i < p;) {
        char ch = L->s[i];
        if (ch != '\\') {
            size_t j = i;
            while (j < p && L->s[j] != '\\') j++;
            if (mlstack__tbuf_put(L->c, &b, L->s + i, j - i)) return -1;
            i = j;
            continue;
        }
        ch = L->s[i + 1];
        i += 2;
        switch (ch) {
        case '\n': break;
        case '\\': mlstack__tbuf_put(L->c, &b, "\\", 1); break;
        case '\'': mlstack__tbuf_put(L->c, &b, "'", 1); break;
        case '"': mlstack__tbuf_put(L->c, &b, "\"", 1); break;
        case 'a': mlstack__tbuf_put(L->c, &b, "\a", 1); break;
        case 'b': mlstack__tbuf_put(L->c, &b, "\b", 1); break;
        case 'f': mlstack__tbuf_put(L->c, &b, "\f", 1); break;
        case 'n': mlstack__tbuf_put(L->c, &b, "\n", 1); break;
        case 'r': mlstack__tbuf_put(L->c, &b, "\r", 1); break;
        case 't': mlstack__tbuf_put(L->c, &b, "\t", 1); break;
        case 'v': mlstack__tbuf_put(L->c, &b, "\v", 1); break;
        case 'x':
        case 'u':
        case 'U': {
            int nd = ch == 'x' ? 2 : ch == 'u' ? 4 : 8, k;
            uint32_t cp = 0;
            for (k = 0; k < nd; k++) {
                char h = i + (size_t)k < p ? L->s[i + (size_t)k] : 0;
                int d = (h >= '0' && h <= '9') ? h - '0' : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                      : (h >= 'A' && h <= 'F') ? h - 'A' + 10 : -1;
                if (d < 0)
                    return mlstack__tpl_fail(L->c, i - 2, MLSTACK_ERR_FORMAT, "truncated \\%c escape in a string literal", ch);
                cp = cp * 16 + (uint32_t)d;
            }
            i += (size_t)nd;
            if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return mlstack__tpl_fail(L->c, i - 2, MLSTACK_ERR_UNSUPPORTED,
                                         "escape \\%c for a surrogate or out-of-range code point", ch);
            mlstack__tbuf_cp(L->c, &b, cp);
            break;
        }
        case 'N': return mlstack__tpl_fail(L->c, i - 2, MLSTACK_ERR_UNSUPPORTED, "\\N{...} escapes are not supported");
        default:
            if (ch >= '0' && ch <= '7') {
                uint32_t cp = (uint32_t)(ch - '0');
                int k;
                for (k = 0; k < 2 && i < p && L->s[i] >= '0' && L->s[i] <= '7'; k++) cp = cp * 8 + (uint32_t)(L->s[i++] - '0');
                mlstack__tbuf_cp(L->c, &b, cp);
            } else { /* unknown escapes stay as written */
                mlstack__tbuf_put(L->c, &b, L->s + i - 2, 2);
            }
        }
        if (L->c->rc) return -1;
    }
    if (mlstack__tlex_push(L, MLSTACK__TK_STR, start, b.p, b.n)) return -1;
    *pp = p + 1;
    return 0;
}

/* Tokens inside a tag, up to its end marker. Returns 0, and at *pp the byte after the marker;
   *strip is '-', '+' or 0 for the end marker's sign. */
static int mlstack__tlex_tag(mlstack__tlex *L, size_t *pp, int kind, int *strip) {
    size_t p = *pp;
    int depth = 0;
    static const char *ops2[] = {"//", "**", "==", "!=", "<=", ">="};
    for (;;) {
        size_t start;
        char ch;
        while (p < L->n && mlstack__tpl_ws(L->s[p])) p++;
        if (p >= L->n) return mlstack__tpl_fail(L->c, *pp, MLSTACK_ERR_FORMAT, "tag not closed before the end of the template");
        start = p;
        ch = L->s[p];
        if (depth == 0) {
            char e = kind == '{' ? '}' : '%';
            char e2 = kind == '{' ? '}' : '}';
            if ((ch == '-' || ch == '+') && p + 2 < L->n + 0 && L->s[p + 1] == e && L->s[p + 2] == e2 &&
                !(kind == '{' && ch == '+')) {
                *strip = ch;
                *pp = p + 3;
                return mlstack__tlex_push(L, kind == '{' ? MLSTACK__TK_VEND : MLSTACK__TK_BEND, p, NULL, 0);
            }
            if (ch == e && p + 1 < L->n && L->s[p + 1] == e2) {
                *strip = 0;
                *pp = p + 2;
                return mlstack__tlex_push(L, kind == '{' ? MLSTACK__TK_VEND : MLSTACK__TK_BEND, p, NULL, 0);
            }
        }
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_') {
            while (p < L->n && ((L->s[p] >= 'a' && L->s[p] <= 'z') || (L->s[p] >= 'A' && L->s[p] <= 'Z') ||
                                (L->s[p] >= '0' && L->s[p] <= '9') || L->s[p] == '_'))
                p++;
            if (mlstack__tlex_push(L, MLSTACK__TK_NAME, start, L->s + start, p - start)) return -1;
            continue;
        }
        if (ch >= '0' && ch <= '9') {
            char buf[128];
            size_t k = 0;
            int is_float = 0;
            while (p < L->n && ((L->s[p] >= '0' && L->s[p] <= '9') || (L->s[p] == '_' && p + 1 < L->n && L->s[p + 1] >= '0' && L->s[p + 1] <= '9'))) {
                if (L->s[p] != '_' && k < sizeof buf - 1) buf[k++] = L->s[p];
                p++;
            }
            /* after '.', an integer only: `a.0.b` is item access */
            if (!(start > 0 && L->s[start - 1] == '.')) {
                if (p + 1 < L->n && L->s[p] == '.' && L->s[p + 1] >= '0' && L->s[p + 1] <= '9') {
                    is_float = 1;
                    buf[k < sizeof buf - 1 ? k++ : k] = '.';
                    p++;
                    while (p < L->n && ((L->s[p] >= '0' && L->s[p] <= '9') || (L->s[p] == '_' && p + 1 < L->n && L->s[p + 1] >= '0' && L->s[p + 1] <= '9'))) {
                        if (L->s[p] != '_' && k < sizeof buf - 1) buf[k++] = L->s[p];
                        p++;
                    }
                }
                if (p < L->n && (L->s[p] == 'e' || L->s[p] == 'E')) {
                    size_t q = p + 1;
                    if (q < L->n && (L->s[q] == '+' || L->s[q] == '-')) q++;
                    if (q < L->n && L->s[q] >= '0' && L->s[q] <= '9') {
                        is_float = 1;
                        if (k < sizeof buf - 1) buf[k++] = 'e';
                        for (p = p + 1; p < q; p++)
                            if (k < sizeof buf - 1) buf[k++] = L->s[p];
                        while (p < L->n && L->s[p] >= '0' && L->s[p] <= '9') {
                            if (k < sizeof buf - 1) buf[k++] = L->s[p];
                            p++;
                        }
                    }
                }
            }
            buf[k] = 0;
            if (k >= sizeof buf - 1) return mlstack__tpl_fail(L->c, start, MLSTACK_ERR_UNSUPPORTED, "number literal too long");
            if (mlstack__tlex_push(L, is_float ? MLSTACK__TK_FLOAT : MLSTACK__TK_INT, start, L->s + start, p - start)) return -1;
            if (is_float) {
                L->tok[L->ntok - 1].f = strtod(buf, NULL);
            } else {
                long long v;
                errno = 0;
                v = strtoll(buf, NULL, 10);
                if (errno == ERANGE)
                    return mlstack__tpl_fail(L->c, start, MLSTACK_ERR_UNSUPPORTED, "integer literal beyond 64 bits");
                L->tok[L->ntok - 1].i = (int64_t)v;
            }
            continue;
        }
        if (ch == '\'' || ch == '"') {
            if (mlstack__tlex_string(L, &p)) return -1;
            continue;
        }
        {
            size_t k, len = 0;
            for (k = 0; k < sizeof ops2 / sizeof ops2[0]; k++)
                if (p + 1 < L->n && L->s[p] == ops2[k][0] && L->s[p + 1] == ops2[k][1]) len = 2;
            if (!len && strchr("+-/*%~[](){}<>=.:|,;", ch) && ch) len = 1;
            if (!len) return mlstack__tpl_fail(L->c, p, MLSTACK_ERR_FORMAT, "unexpected character '%c' in a tag", ch);
            if (ch == '(' || ch == '[' || ch == '{') depth++;
            if ((ch == ')' || ch == ']' || ch == '}') && depth > 0) depth--;
            if (mlstack__tlex_push(L, MLSTACK__TK_OP, p, L->s + p, len)) return -1;
            p += len;
        }
    }
}

/* Whole-template lexing with jinja2's whitespace rules as transformers configures them:
   "{%-"/"-%}" strip all whitespace on that side; trim_blocks drops the first newline after a
   block or comment tag; lstrip_blocks drops spaces and tabs before a block or comment tag that
   starts its line; "+" disables both. */
static int mlstack__tlex_run(mlstack__tlex *L) {
    size_t pos = 0;
    while (pos < L->n) {
        size_t j = pos, tstart, tend, textend;
        int kind, sign = 0, strip = 0;
        while (j + 1 < L->n && !(L->s[j] == '{' && (L->s[j + 1] == '{' || L->s[j + 1] == '%' || L->s[j + 1] == '#'))) j++;
        if (j + 1 >= L->n) {
            if (mlstack__tlex_push(L, MLSTACK__TK_TEXT, pos, L->s + pos, L->n - pos)) return -1;
            break;
        }
        kind = L->s[j + 1];
        tstart = j;
        tend = j + 2;
        if (tend < L->n && (L->s[tend] == '-' || L->s[tend] == '+')) sign = L->s[tend++];
        textend = j;
        if (sign == '-') {
            while (textend > pos && mlstack__tpl_ws(L->s[textend - 1])) textend--;
        } else if (sign != '+' && kind != '{') {
            size_t l = textend;
            while (l > pos && (L->s[l - 1] == ' ' || L->s[l - 1] == '\t')) l--;
            if (l < textend && ((l > pos && L->s[l - 1] == '\n') || (l == pos && (pos == 0 || L->s[pos - 1] == '\n'))))
                textend = l;
        }
        if (textend > pos && mlstack__tlex_push(L, MLSTACK__TK_TEXT, pos, L->s + pos, textend - pos)) return -1;
        if (kind == '#') {
            size_t e = tend;
            while (e + 1 < L->n && !(L->s[e] == '#' && L->s[e + 1] == '}')) e++;
            if (e + 1 >= L->n) return mlstack__tpl_fail(L->c, tstart, MLSTACK_ERR_FORMAT, "comment not closed");
            strip = (e > tend && (L->s[e - 1] == '-' || L->s[e - 1] == '+')) ? L->s[e - 1] : 0;
            pos = e + 2;
        } else if (kind == '%') {
            /* {% raw %} ... {% endraw %}: the text in between is literal */
            size_t q = tend;
            while (q < L->n && mlstack__tpl_ws(L->s[q])) q++;
            if (L->n - q >= 3 && memcmp(L->s + q, "raw", 3) == 0 &&
                (q + 3 >= L->n || mlstack__tpl_ws(L->s[q + 3]) || L->s[q + 3] == '%' || L->s[q + 3] == '-')) {
                size_t r = q + 3, body, e;
                while (r < L->n && mlstack__tpl_ws(L->s[r])) r++;
                if (r < L->n && L->s[r] == '-' && r + 2 < L->n && L->s[r + 1] == '%' && L->s[r + 2] == '}') {
                    r += 3;
                    while (r < L->n && mlstack__tpl_ws(L->s[r])) r++;
                } else if (r + 1 < L->n && L->s[r] == '%' && L->s[r + 1] == '}') {
                    r += 2;
                } else {
                    return mlstack__tpl_fail(L->c, tstart, MLSTACK_ERR_FORMAT, "malformed raw tag");
                }
                body = r;
                for (e = r; e + 1 < L->n; e++) {
                    size_t k = e + 2;
                    int esign = 0;
                    if (!(L->s[e] == '{' && L->s[e + 1] == '%')) continue;
                    if (k < L->n && (L->s[k] == '-' || L->s[k] == '+')) esign = L->s[k++];
                    while (k < L->n && mlstack__tpl_ws(L->s[k])) k++;
                    if (L->n - k < 6 || memcmp(L->s + k, "endraw", 6) != 0) continue;
                    k += 6;
                    while (k < L->n && mlstack__tpl_ws(L->s[k])) k++;
                    {
                        int csign = 0;
                        size_t te = e;
                        if (k < L->n && (L->s[k] == '-' || L->s[k] == '+')) csign = L->s[k++];
                        if (!(k + 1 < L->n && L->s[k] == '%' && L->s[k + 1] == '}')) continue;
                        k += 2;
                        if (esign == '-') {
                            while (te > body && mlstack__tpl_ws(L->s[te - 1])) te--;
                        } else if (esign != '+') {
                            size_t l = te;
                            while (l > body && (L->s[l - 1] == ' ' || L->s[l - 1] == '\t')) l--;
                            if (l < te && l > body && L->s[l - 1] == '\n') te = l;
                        }
                        if (te > body && mlstack__tlex_push(L, MLSTACK__TK_TEXT, body, L->s + body, te - body)) return -1;
                        if (csign == '-') {
                            while (k < L->n && mlstack__tpl_ws(L->s[k])) k++;
                        } else if (csign != '+' && k < L->n && L->s[k] == '\n') {
                            k++;
                        }
                        pos = k;
                        break;
                    }
                }
                if (e + 1 >= L->n) return mlstack__tpl_fail(L->c, tstart, MLSTACK_ERR_FORMAT, "raw block not closed with endraw");
                continue;
            }
            if (mlstack__tlex_push(L, MLSTACK__TK_BBEGIN, tstart, NULL, 0)) return -1;
            pos = tend;
            if (mlstack__tlex_tag(L, &pos, '%', &strip)) return -1;
        } else {
            if (mlstack__tlex_push(L, MLSTACK__TK_VBEGIN, tstart, NULL, 0)) return -1;
            pos = tend;
            if (mlstack__tlex_tag(L, &pos, '{', &strip)) return -1;
            if (strip != '-') continue;
        }
        if (strip == '-') {
            while (pos < L->n && mlstack__tpl_ws(L->s[pos])) pos++;
        } else if (strip != '+' && pos < L->n && L->s[pos] == '\n') {
            pos++;
        }
    }
    return mlstack__tlex_push(L, MLSTACK__TK_EOF, L->n, NULL, 0);
}

/* ---- parser ---- */
typedef struct mlstack__tparse {
    mlstack__tctx *c;
    mlstack__ttok *tok;
    size_t i, n;
    int depth;
    int loops; /* for bodies being parsed (break/continue are valid inside) */
    int macros; /* macro definitions parsed so far */
} mlstack__tparse;

static const char *const mlstack__tpl_filters[] = {
    "abs", "capitalize", "count", "d", "default", "e", "escape", "first", "float", "indent", "int", "items",
    "join", "last", "length", "list", "lower", "map", "reject", "rejectattr", "replace", "reverse", "round",
    "safe", "select", "selectattr", "string", "title", "tojson", "trim", "unique", "upper", NULL};
static const char *const mlstack__tpl_tests[] = {
    "!=", "<", "<=", "==", ">", ">=", "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "even",
    "false", "float", "ge", "greaterthan", "gt", "in", "integer", "iterable", "le", "lessthan", "lower", "lt",
    "mapping", "ne", "none", "number", "odd", "sameas", "sequence", "string", "true", "undefined", "upper", NULL};

static int mlstack__tpl_in_list(const char *const *list, const char *s, size_t n) {
    for (; *list; list++)
        if (strlen(*list) == n && memcmp(*list, s, n) == 0) return 1;
    return 0;
}

static mlstack__ttok *mlstack__tp_cur(mlstack__tparse *P) { return &P->tok[P->i]; }
static int mlstack__tp_isop(mlstack__tparse *P, const char *op) {
    mlstack__ttok *t = mlstack__tp_cur(P);
    return t->t == MLSTACK__TK_OP && t->n == strlen(op) && memcmp(t->s, op, t->n) == 0;
}
static int mlstack__tp_isname(mlstack__tparse *P, const char *name) {
    mlstack__ttok *t = mlstack__tp_cur(P);
    return t->t == MLSTACK__TK_NAME && t->n == strlen(name) && memcmp(t->s, name, t->n) == 0;
}
static const char *mlstack__tp_desc(const mlstack__ttok *t) {
    switch (t->t) {
    case MLSTACK__TK_EOF: return "end of template";
    case MLSTACK__TK_TEXT: return "text";
    case MLSTACK__TK_VBEGIN: return "'{{'";
    case MLSTACK__TK_VEND: return "'}}'";
    case MLSTACK__TK_BBEGIN: return "'{%'";
    case MLSTACK__TK_BEND: return "'%}'";
    case MLSTACK__TK_NAME: return "a name";
    case MLSTACK__TK_STR: return "a string";
    case MLSTACK__TK_INT:
    case MLSTACK__TK_FLOAT: return "a number";
    default: return "an operator";
    }
}
static int mlstack__tp_expect_op(mlstack__tparse *P, const char *op) {
    if (!mlstack__tp_isop(P, op)) {
        mlstack__ttok *t = mlstack__tp_cur(P);
        if (t->t == MLSTACK__TK_OP)
            return mlstack__tpl_fail(P->c, t->pos, MLSTACK_ERR_FORMAT, "expected '%s', found '%.*s'", op, (int)t->n, t->s);
        return mlstack__tpl_fail(P->c, t->pos, MLSTACK_ERR_FORMAT, "expected '%s', found %s", op, mlstack__tp_desc(t));
    }
    P->i++;
    return 0;
}
static int mlstack__tp_expect(mlstack__tparse *P, int type, const char *what) {
    mlstack__ttok *t = mlstack__tp_cur(P);
    if (t->t != type) {
        if (t->t == MLSTACK__TK_OP || t->t == MLSTACK__TK_NAME)
            return mlstack__tpl_fail(P->c, t->pos, MLSTACK_ERR_FORMAT, "expected %s, found '%.*s'", what, (int)t->n, t->s);
        return mlstack__tpl_fail(P->c, t->pos, MLSTACK_ERR_FORMAT, "expected %s, found %s", what, mlstack__tp_desc(t));
    }
    P->i++;
    return 0;
}

static mlstack__tn *mlstack__tp_node(mlstack__tparse *P, int kind, size_t pos) {
    mlstack__tn *n = (mlstack__tn *)mlstack__tpl_alloc(P->c, sizeof *n);
    if (!n) return NULL;
    memset(n, 0, sizeof *n);
    n->kind = kind;
    n->pos = pos;
    return n;
}

static mlstack__tn *mlstack__tp_expr(mlstack__tparse *P, int with_cond);
static mlstack__tn *mlstack__tp_or(mlstack__tparse *P);
static mlstack__tn *mlstack__tp_unary(mlstack__tparse *P, int with_filter);

static int mlstack__tp_enter(mlstack__tparse *P) {
    if (++P->depth > MLSTACK_TEMPLATE_MAX_DEPTH)
        return mlstack__tpl_fail(P->c, mlstack__tp_cur(P)->pos, MLSTACK_ERR_LIMIT, "template nested deeper than %d",
                                 MLSTACK_TEMPLATE_MAX_DEPTH);
    return 0;
}

/* Call/filter/test arguments after '(' : positional, then name=value. */
static int mlstack__tp_args(mlstack__tparse *P, mlstack__tn **out) {
    mlstack__tn **tail = out;
    *out = NULL;
    while (!mlstack__tp_isop(P, ")")) {
        mlstack__tn *a;
        if (*out && mlstack__tp_expect_op(P, ",")) return -1;
        if (mlstack__tp_isop(P, ")")) break;
        if (mlstack__tp_isop(P, "*") || mlstack__tp_isop(P, "**"))
            return mlstack__tpl_fail(P->c, mlstack__tp_cur(P)->pos, MLSTACK_ERR_UNSUPPORTED, "*args and **kwargs in calls are not supported");
        if (mlstack__tp_cur(P)->t == MLSTACK__TK_NAME && P->tok[P->i + 1].t == MLSTACK__TK_OP && P->tok[P->i + 1].n == 1 &&
            P->tok[P->i + 1].s[0] == '=') {
            mlstack__ttok *t = mlstack__tp_cur(P);
            a = mlstack__tp_node(P, MLSTACK__N_KWARG, t->pos);
            if (!a) return -1;
            a->s = t->s;
            a->n = t->n;
            P->i += 2;
            if (!(a->a = mlstack__tp_expr(P, 1))) return -1;
        } else {
            if (!(a = mlstack__tp_expr(P, 1))) return -1;
        }
        *tail = a;
        tail = &a->next;
    }
    P->i++;
    return 0;
}

static mlstack__tn *mlstack__tp_primary(mlstack__tparse *P) {
    mlstack__ttok *t = mlstack__tp_cur(P);
    mlstack__tn *n;
    if (t->t == MLSTACK__TK_NAME) {
        P->i++;
        if ((t->n == 4 && (!memcmp(t->s, "true", 4) || !memcmp(t->s, "True", 4))) ||
            (t->n == 5 && (!memcmp(t->s, "false", 5) || !memcmp(t->s, "False", 5)))) {
            if (!(n = mlstack__tp_node(P, MLSTACK__N_LIT, t->pos))) return NULL;
            n->v = mlstack__tv_bool(t->n == 4);
            return n;
        }
        if (t->n == 4 && (!memcmp(t->s, "none", 4) || !memcmp(t->s, "None", 4))) {
            if (!(n = mlstack__tp_node(P, MLSTACK__N_LIT, t->pos))) return NULL;
            n->v = mlstack__tv_none();
            return n;
        }
        if (!(n = mlstack__tp_node(P, MLSTACK__N_NAME, t->pos))) return NULL;
        n->s = t->s;
        n->n = t->n;
        return n;
    }
    if (t->t == MLSTACK__TK_STR) {
        /* adjacent string literals concatenate */
        mlstack__tbuf b;
        memset(&b, 0, sizeof b);
        if (!(n = mlstack__tp_node(P, MLSTACK__N_LIT, t->pos))) return NULL;
        if (mlstack__tbuf_put(P->c, &b, "", 0)) return NULL;
        while (mlstack__tp_cur(P)->t == MLSTACK__TK_STR) {
            if (mlstack__tbuf_put(P->c, &b, mlstack__tp_cur(P)->s, mlstack__tp_cur(P)->n)) return NULL;
            P->i++;
        }
        n->v = mlstack__tv_str(b.p, b.n);
        return n;
    }
    if (t->t == MLSTACK__TK_INT || t->t == MLSTACK__TK_FLOAT) {
        P->i++;
        if (!(n = mlstack__tp_node(P, MLSTACK__N_LIT, t->pos))) return NULL;
        n->v = t->t == MLSTACK__TK_INT ? mlstack__tv_int(t->i) : mlstack__tv_float(t->f);
        return n;
    }
    if (mlstack__tp_isop(P, "(")) {
        mlstack__tn *first, **tail;
        int is_tuple = 0;
        P->i++;
        if (mlstack__tp_isop(P, ")")) {
            P->i++;
            return mlstack__tp_node(P, MLSTACK__N_TUPLE, t->pos);
        }
        if (!(first = mlstack__tp_expr(P, 1))) return NULL;
        tail = &first->next;
        while (mlstack__tp_isop(P, ",")) {
            is_tuple = 1;
            P->i++;
            if (mlstack__tp_isop(P, ")")) break;
            if (!(*tail = mlstack__tp_expr(P, 1))) return NULL;
            tail = &(*tail)->next;
        }
        if (mlstack__tp_expect_op(P, ")")) return NULL;
        if (!is_tuple) return first;
        if (!(n = mlstack__tp_node(P, MLSTACK__N_TUPLE, t->pos))) return NULL;
        n->b = first;
        return n;
    }
    if (mlstack__tp_isop(P, "[")) {
        mlstack__tn **tail;
        P->i++;
        if (!(n = mlstack__tp_node(P, MLSTACK__N_LIST, t->pos))) return NULL;
        tail = &n->b;
        while (!mlstack__tp_isop(P, "]")) {
            if (n->b && mlstack__tp_expect_op(P, ",")) return NULL;
            if (mlstack__tp_isop(P, "]")) break;
            if (!(*tail = mlstack__tp_expr(P, 1))) return NULL;
            tail = &(*tail)->next;
        }
        P->i++;
        return n;
    }
    if (mlstack__tp_isop(P, "{")) {
        mlstack__tn **tail;
        P->i++;
        if (!(n = mlstack__tp_node(P, MLSTACK__N_DICT, t->pos))) return NULL;
        tail = &n->b;
        while (!mlstack__tp_isop(P, "}")) {
            mlstack__tn *pair;
            if (n->b && mlstack__tp_expect_op(P, ",")) return NULL;
            if (mlstack__tp_isop(P, "}")) break;
            if (!(pair = mlstack__tp_node(P, MLSTACK__N_PAIR, mlstack__tp_cur(P)->pos))) return NULL;
            if (!(pair->a = mlstack__tp_expr(P, 1))) return NULL;
            if (mlstack__tp_expect_op(P, ":")) return NULL;
            if (!(pair->b = mlstack__tp_expr(P, 1))) return NULL;
            *tail = pair;
            tail = &pair->next;
        }
        P->i++;
        return n;
    }
    if (t->t == MLSTACK__TK_OP)
        mlstack__tpl_fail(P->c, t->pos, MLSTACK_ERR_FORMAT, "unexpected '%.*s'", (int)t->n, t->s);
    else
        mlstack__tpl_fail(P->c, t->pos, MLSTACK_ERR_FORMAT, "unexpected %s", mlstack__tp_desc(t));
    return NULL;
}

/* .name, .0, [index], [a:b:c], (args) */
static mlstack__tn *mlstack__tp_postfix(mlstack__tparse *P, mlstack__tn *node) {
    for (;;) {
        mlstack__ttok *t = mlstack__tp_cur(P);
        mlstack__tn *n;
        if (mlstack__tp_isop(P, ".")) {
            mlstack__ttok *k = &P->tok[P->i + 1];
            P->i++;
            if (k->t == MLSTACK__TK_NAME) {
                if (!(n = mlstack__tp_node(P, MLSTACK__N_ATTR, t->pos))) return NULL;
                n->s = k->s;
                n->n = k->n;
            } else if (k->t == MLSTACK__TK_INT) {
                if (!(n = mlstack__tp_node(P, MLSTACK__N_ITEM, t->pos))) return NULL;
                if (!(n->b = mlstack__tp_node(P, MLSTACK__N_LIT, k->pos))) return NULL;
                n->b->v = mlstack__tv_int(k->i);
            } else {
                mlstack__tpl_fail(P->c, k->pos, MLSTACK_ERR_FORMAT, "expected a name after '.'");
                return NULL;
            }
            P->i++;
            n->a = node;
            node = n;
        } else if (mlstack__tp_isop(P, "[")) {
            mlstack__tn *parts[3] = {NULL, NULL, NULL};
            int k = 0, colons = 0;
            P->i++;
            for (;;) {
                if (mlstack__tp_isop(P, ":")) {
                    if (++colons > 2) {
                        mlstack__tpl_fail(P->c, mlstack__tp_cur(P)->pos, MLSTACK_ERR_FORMAT, "too many ':' in a slice");
                        return NULL;
                    }
                    k = colons;
                    P->i++;
                    continue;
                }
                if (mlstack__tp_isop(P, "]")) break;
                if (parts[k]) {
                    if (mlstack__tp_isop(P, ","))
                        mlstack__tpl_fail(P->c, mlstack__tp_cur(P)->pos, MLSTACK_ERR_UNSUPPORTED, "tuple subscripts are not supported");
                    else
                        mlstack__tp_expect_op(P, "]");
                    return NULL;
                }
                if (!(parts[k] = mlstack__tp_expr(P, 1))) return NULL;
            }
            P->i++;
            if (colons) {
                if (!(n = mlstack__tp_node(P, MLSTACK__N_SLICE, t->pos))) return NULL;
                n->b = parts[0];
                n->c = parts[1];
                n->d = parts[2];
            } else {
                if (!parts[0]) {
                    mlstack__tpl_fail(P->c, t->pos, MLSTACK_ERR_FORMAT, "empty subscript");
                    return NULL;
                }
                if (!(n = mlstack__tp_node(P, MLSTACK__N_ITEM, t->pos))) return NULL;
                n->b = parts[0];
            }
            n->a = node;
            node = n;
        } else if (mlstack__tp_isop(P, "(")) {
            P->i++;
            if (!(n = mlstack__tp_node(P, MLSTACK__N_CALL, t->pos))) return NULL;
            n->a = node;
            if (mlstack__tp_args(P, &n->b)) return NULL;
            node = n;
        } else {
            return node;
        }
    }
}

/* One filter application `name[(args)]` after '|' (or after the `filter` keyword). */
static mlstack__tn *mlstack__tp_filter_one(mlstack__tparse *P, mlstack__tn *input) {
    mlstack__ttok *k = mlstack__tp_cur(P);
    mlstack__tn *n;
    if (k->t != MLSTACK__TK_NAME) {
        mlstack__tpl_fail(P->c, k->pos, MLSTACK_ERR_FORMAT, "expected a filter name");
        return NULL;
    }
    if (!mlstack__tpl_in_list(mlstack__tpl_filters, k->s, k->n)) {
        mlstack__tpl_fail(P->c, k->pos, MLSTACK_ERR_UNSUPPORTED, "filter '%.*s' is not supported", (int)k->n, k->s);
        return NULL;
    }
    P->i++;
    if (!(n = mlstack__tp_node(P, MLSTACK__N_FILTER, k->pos))) return NULL;
    n->s = k->s;
    n->n = k->n;
    n->a = input;
    if (mlstack__tp_isop(P, "(")) {
        P->i++;
        if (mlstack__tp_args(P, &n->b)) return NULL;
    }
    return n;
}

/* |filter(args), is [not] test [arg], and calls after them */
static mlstack__tn *mlstack__tp_filters(mlstack__tparse *P, mlstack__tn *node) {
    for (;;) {
        mlstack__ttok *t = mlstack__tp_cur(P);
        mlstack__tn *n;
        if (mlstack__tp_isop(P, "|")) {
            P->i++;
            if (!(node = mlstack__tp_filter_one(P, node))) return NULL;
        } else if (mlstack__tp_isname(P, "is")) {
            mlstack__ttok *k;
            int neg = 0;
            P->i++;
            if (mlstack__tp_isname(P, "not")) {
                neg = 1;
                P->i++;
            }
            k = mlstack__tp_cur(P);
            if (k->t != MLSTACK__TK_NAME) {
                mlstack__tpl_fail(P->c, k->pos, MLSTACK_ERR_FORMAT, "expected a test name after 'is'");
                return NULL;
            }
            if (!mlstack__tpl_in_list(mlstack__tpl_tests, k->s, k->n)) {
                mlstack__tpl_fail(P->c, k->pos, MLSTACK_ERR_UNSUPPORTED, "test '%.*s' is not supported", (int)k->n, k->s);
                return NULL;
            }
            P->i++;
            if (!(n = mlstack__tp_node(P, MLSTACK__N_TEST, k->pos))) return NULL;
            n->s = k->s;
            n->n = k->n;
            n->op = neg;
            n->a = node;
            if (mlstack__tp_isop(P, "(")) {
                P->i++;
                if (mlstack__tp_args(P, &n->b)) return NULL;
            } else {
                mlstack__ttok *a = mlstack__tp_cur(P);
                int arg_start = a->t == MLSTACK__TK_NAME || a->t == MLSTACK__TK_STR || a->t == MLSTACK__TK_INT ||
                                a->t == MLSTACK__TK_FLOAT || mlstack__tp_isop(P, "[") || mlstack__tp_isop(P, "{");
                if (a->t == MLSTACK__TK_NAME && (mlstack__tp_isname(P, "else") || mlstack__tp_isname(P, "or") ||
                                                 mlstack__tp_isname(P, "and")))
                    arg_start = 0;
                if (arg_start) {
                    if (mlstack__tp_isname(P, "is")) {
                        mlstack__tpl_fail(P->c, a->pos, MLSTACK_ERR_FORMAT, "you cannot chain multiple tests with is");
                        return NULL;
                    }
                    if (!(n->b = mlstack__tp_primary(P))) return NULL;
                    if (!(n->b = mlstack__tp_postfix(P, n->b))) return NULL;
                }
            }
            node = n;
        } else if (mlstack__tp_isop(P, "(")) {
            if (!(node = mlstack__tp_postfix(P, node))) return NULL;
        } else {
            (void)t;
            return node;
        }
    }
}

static mlstack__tn *mlstack__tp_unary(mlstack__tparse *P, int with_filter) {
    mlstack__ttok *t = mlstack__tp_cur(P);
    mlstack__tn *n;
    if (mlstack__tp_enter(P)) return NULL;
    if (mlstack__tp_isop(P, "-") || mlstack__tp_isop(P, "+")) {
        P->i++;
        if (!(n = mlstack__tp_node(P, t->s[0] == '-' ? MLSTACK__N_NEG : MLSTACK__N_POS, t->pos))) return NULL;
        if (!(n->a = mlstack__tp_unary(P, 0))) return NULL;
    } else {
        if (!(n = mlstack__tp_primary(P))) return NULL;
    }
    if (!(n = mlstack__tp_postfix(P, n))) return NULL;
    if (with_filter && !(n = mlstack__tp_filters(P, n))) return NULL;
    P->depth--;
    return n;
}

static mlstack__tn *mlstack__tp_binnode(mlstack__tparse *P, int op, size_t pos, mlstack__tn *a, mlstack__tn *b) {
    mlstack__tn *n = mlstack__tp_node(P, MLSTACK__N_BIN, pos);
    if (!n) return NULL;
    n->op = op;
    n->a = a;
    n->b = b;
    return n;
}

static mlstack__tn *mlstack__tp_pow(mlstack__tparse *P) {
    mlstack__tn *l = mlstack__tp_unary(P, 1), *r;
    while (l && mlstack__tp_isop(P, "**")) {
        size_t pos = mlstack__tp_cur(P)->pos;
        P->i++;
        if (!(r = mlstack__tp_unary(P, 1))) return NULL;
        l = mlstack__tp_binnode(P, MLSTACK__OP_POW, pos, l, r);
    }
    return l;
}
static mlstack__tn *mlstack__tp_math2(mlstack__tparse *P) {
    mlstack__tn *l = mlstack__tp_pow(P), *r;
    while (l) {
        int op;
        size_t pos = mlstack__tp_cur(P)->pos;
        if (mlstack__tp_isop(P, "*")) op = MLSTACK__OP_MUL;
        else if (mlstack__tp_isop(P, "/")) op = MLSTACK__OP_DIV;
        else if (mlstack__tp_isop(P, "//")) op = MLSTACK__OP_FLOORDIV;
        else if (mlstack__tp_isop(P, "%")) op = MLSTACK__OP_MOD;
        else break;
        P->i++;
        if (!(r = mlstack__tp_pow(P))) return NULL;
        l = mlstack__tp_binnode(P, op, pos, l, r);
    }
    return l;
}
static mlstack__tn *mlstack__tp_concat(mlstack__tparse *P) {
    mlstack__tn *l = mlstack__tp_math2(P), *r;
    while (l && mlstack__tp_isop(P, "~")) {
        size_t pos = mlstack__tp_cur(P)->pos;
        P->i++;
        if (!(r = mlstack__tp_math2(P))) return NULL;
        l = mlstack__tp_binnode(P, MLSTACK__OP_CONCAT, pos, l, r);
    }
    return l;
}
static mlstack__tn *mlstack__tp_math1(mlstack__tparse *P) {
    mlstack__tn *l = mlstack__tp_concat(P), *r;
    while (l && (mlstack__tp_isop(P, "+") || mlstack__tp_isop(P, "-"))) {
        size_t pos = mlstack__tp_cur(P)->pos;
        int op = mlstack__tp_cur(P)->s[0] == '+' ? MLSTACK__OP_ADD : MLSTACK__OP_SUB;
        P->i++;
        if (!(r = mlstack__tp_concat(P))) return NULL;
        l = mlstack__tp_binnode(P, op, pos, l, r);
    }
    return l;
}
/* a < b <= c ... : N_CMP with the first operand in a and (op, operand) links in b */
static mlstack__tn *mlstack__tp_compare(mlstack__tparse *P) {
    mlstack__tn *l = mlstack__tp_math1(P), *cmp = NULL, **tail = NULL;
    while (l) {
        int op;
        size_t pos = mlstack__tp_cur(P)->pos;
        mlstack__tn *r;
        if (mlstack__tp_isop(P, "==")) op = MLSTACK__OP_EQ;
        else if (mlstack__tp_isop(P, "!=")) op = MLSTACK__OP_NE;
        else if (mlstack__tp_isop(P, "<")) op = MLSTACK__OP_LT;
        else if (mlstack__tp_isop(P, ">")) op = MLSTACK__OP_GT;
        else if (mlstack__tp_isop(P, "<=")) op = MLSTACK__OP_LE;
        else if (mlstack__tp_isop(P, ">=")) op = MLSTACK__OP_GE;
        else if (mlstack__tp_isname(P, "in")) op = MLSTACK__OP_IN;
        else if (mlstack__tp_isname(P, "not") && P->tok[P->i + 1].t == MLSTACK__TK_NAME && P->tok[P->i + 1].n == 2 &&
                 !memcmp(P->tok[P->i + 1].s, "in", 2)) {
            op = MLSTACK__OP_NOTIN;
            P->i++;
        } else break;
        P->i++;
        if (!(r = mlstack__tp_math1(P))) return NULL;
        if (!cmp) {
            if (!(cmp = mlstack__tp_node(P, MLSTACK__N_CMP, pos))) return NULL;
            cmp->a = l;
            tail = &cmp->b;
        }
        if (!(*tail = mlstack__tp_node(P, MLSTACK__N_PAIR, pos))) return NULL;
        (*tail)->op = op;
        (*tail)->a = r;
        tail = &(*tail)->next;
    }
    return cmp ? cmp : l;
}
static mlstack__tn *mlstack__tp_not(mlstack__tparse *P) {
    if (mlstack__tp_isname(P, "not")) {
        mlstack__tn *n = mlstack__tp_node(P, MLSTACK__N_NOT, mlstack__tp_cur(P)->pos);
        if (!n) return NULL;
        P->i++;
        if (mlstack__tp_enter(P)) return NULL;
        if (!(n->a = mlstack__tp_not(P))) return NULL;
        P->depth--;
        return n;
    }
    return mlstack__tp_compare(P);
}
static mlstack__tn *mlstack__tp_and(mlstack__tparse *P) {
    mlstack__tn *l = mlstack__tp_not(P), *n;
    while (l && mlstack__tp_isname(P, "and")) {
        if (!(n = mlstack__tp_node(P, MLSTACK__N_AND, mlstack__tp_cur(P)->pos))) return NULL;
        P->i++;
        n->a = l;
        if (!(n->b = mlstack__tp_not(P))) return NULL;
        l = n;
    }
    return l;
}
static mlstack__tn *mlstack__tp_or(mlstack__tparse *P) {
    mlstack__tn *l = mlstack__tp_and(P), *n;
    while (l && mlstack__tp_isname(P, "or")) {
        if (!(n = mlstack__tp_node(P, MLSTACK__N_OR, mlstack__tp_cur(P)->pos))) return NULL;
        P->i++;
        n->a = l;
        if (!(n->b = mlstack__tp_and(P))) return NULL;
        l = n;
    }
    return l;
}
/* or-expression with optional `a if cond [else b]` */
static mlstack__tn *mlstack__tp_expr(mlstack__tparse *P, int with_cond) {
    mlstack__tn *l, *n;
    if (mlstack__tp_enter(P)) return NULL;
    l = mlstack__tp_or(P);
    while (l && with_cond && mlstack__tp_isname(P, "if")) {
        if (!(n = mlstack__tp_node(P, MLSTACK__N_COND, mlstack__tp_cur(P)->pos))) return NULL;
        P->i++;
        n->a = l;
        if (!(n->b = mlstack__tp_or(P))) return NULL;
        if (mlstack__tp_isname(P, "else")) {
            P->i++;
            if (!(n->c = mlstack__tp_expr(P, 1))) return NULL;
        }
        l = n;
    }
    P->depth--;
    return l;
}
/* expression or bare tuple `a, b` (as in `{{ a, b }}`, `{% set x = 1, 2 %}`) */
static mlstack__tn *mlstack__tp_tuple(mlstack__tparse *P, int with_cond) {
    size_t pos = mlstack__tp_cur(P)->pos;
    mlstack__tn *first = mlstack__tp_expr(P, with_cond), **tail, *n;
    if (!first || !mlstack__tp_isop(P, ",")) return first;
    tail = &first->next;
    while (mlstack__tp_isop(P, ",")) {
        mlstack__ttok *k;
        P->i++;
        k = mlstack__tp_cur(P);
        if (k->t == MLSTACK__TK_VEND || k->t == MLSTACK__TK_BEND || mlstack__tp_isop(P, ")") || mlstack__tp_isname(P, "if")) break;
        if (!(*tail = mlstack__tp_expr(P, with_cond))) return NULL;
        tail = &(*tail)->next;
    }
    if (!(n = mlstack__tp_node(P, MLSTACK__N_TUPLE, pos))) return NULL;
    n->b = first;
    return n;
}
/* assignment targets: name, name.attr (set only), or names separated by commas */
static mlstack__tn *mlstack__tp_target(mlstack__tparse *P, int allow_attr) {
    mlstack__tn *first = NULL, **tail = &first, *n;
    size_t pos = mlstack__tp_cur(P)->pos;
    int count = 0;
    for (;;) {
        mlstack__ttok *t = mlstack__tp_cur(P);
        if (t->t != MLSTACK__TK_NAME) {
            mlstack__tpl_fail(P->c, t->pos, MLSTACK_ERR_FORMAT, "expected a variable name");
            return NULL;
        }
        P->i++;
        if (allow_attr && mlstack__tp_isop(P, ".") && P->tok[P->i + 1].t == MLSTACK__TK_NAME) {
            if (!(n = mlstack__tp_node(P, MLSTACK__N_ATTR, t->pos))) return NULL;
            if (!(n->a = mlstack__tp_node(P, MLSTACK__N_NAME, t->pos))) return NULL;
            n->a->s = t->s;
            n->a->n = t->n;
            n->s = P->tok[P->i + 1].s;
            n->n = P->tok[P->i + 1].n;
            P->i += 2;
        } else {
            if (!(n = mlstack__tp_node(P, MLSTACK__N_NAME, t->pos))) return NULL;
            n->s = t->s;
            n->n = t->n;
        }
        *tail = n;
        tail = &n->next;
        count++;
        if (!mlstack__tp_isop(P, ",")) break;
        P->i++;
    }
    if (count == 1) return first;
    if (!(n = mlstack__tp_node(P, MLSTACK__N_TUPLE, pos))) return NULL;
    n->b = first;
    return n;
}

static mlstack__tn *mlstack__tp_body(mlstack__tparse *P, const char *const *ends, const char *opener, size_t opener_pos);

/* Parses statements until `{% <one of ends>`; leaves P at the end keyword. */
static int mlstack__tp_block_end(mlstack__tparse *P) { return mlstack__tp_expect(P, MLSTACK__TK_BEND, "'%}'"); }

static mlstack__tn *mlstack__tp_stmt(mlstack__tparse *P) {
    mlstack__ttok *kw = mlstack__tp_cur(P);
    mlstack__tn *n;
    size_t pos = kw->pos;
    if (kw->t != MLSTACK__TK_NAME) {
        mlstack__tpl_fail(P->c, kw->pos, MLSTACK_ERR_FORMAT, "expected a statement keyword after '{%%'");
        return NULL;
    }
    P->i++;
#define MLSTACK__KW(w) (kw->n == sizeof(w) - 1 && memcmp(kw->s, w, sizeof(w) - 1) == 0)
    if (MLSTACK__KW("for")) {
        static const char *const e1[] = {"endfor", "else", NULL};
        static const char *const e2[] = {"endfor", NULL};
        if (!(n = mlstack__tp_node(P, MLSTACK__S_FOR, pos))) return NULL;
        if (!(n->a = mlstack__tp_target(P, 0))) return NULL;
        if (!mlstack__tp_isname(P, "in")) {
            mlstack__tpl_fail(P->c, mlstack__tp_cur(P)->pos, MLSTACK_ERR_FORMAT, "expected 'in' in a for loop");
            return NULL;
        }
        P->i++;
        if (!(n->b = mlstack__tp_tuple(P, 0))) return NULL;
        if (mlstack__tp_isname(P, "if")) {
            P->i++;
            if (!(n->e = mlstack__tp_expr(P, 1))) return NULL;
        }
        if (mlstack__tp_isname(P, "recursive")) {
            mlstack__tpl_fail(P->c, mlstack__tp_cur(P)->pos, MLSTACK_ERR_UNSUPPORTED, "recursive for loops are not supported");
            return NULL;
        }
        if (mlstack__tp_block_end(P)) return NULL;
        P->loops++;
        {
            int macros_before = P->macros;
            n->c = mlstack__tp_body(P, e1, "for", pos);
            n->op = P->macros != macros_before; /* a macro in the body keeps its iteration's scope */
        }
        P->loops--;
        if (P->c->rc) return NULL;
        if (mlstack__tp_isname(P, "else")) {
            P->i++;
            if (mlstack__tp_block_end(P)) return NULL;
            n->d = mlstack__tp_body(P, e2, "for", pos);
            if (P->c->rc) return NULL;
        }
        P->i++;
        if (mlstack__tp_block_end(P)) return NULL;
        return n;
    }
    if (MLSTACK__KW("if")) {
        static const char *const e[] = {"endif", "elif", "else", NULL};
        static const char *const e2[] = {"endif", NULL};
        mlstack__tn *top, *cur;
        if (!(top = cur = mlstack__tp_node(P, MLSTACK__S_IF, pos))) return NULL;
        for (;;) {
            if (!(cur->a = mlstack__tp_tuple(P, 0))) return NULL;
            if (mlstack__tp_block_end(P)) return NULL;
            cur->b = mlstack__tp_body(P, e, "if", pos);
            if (P->c->rc) return NULL;
            if (mlstack__tp_isname(P, "elif")) {
                mlstack__tn *nx = mlstack__tp_node(P, MLSTACK__S_IF, mlstack__tp_cur(P)->pos);
                if (!nx) return NULL;
                P->i++;
                cur->c = nx;
                cur = nx;
                continue;
            }
            if (mlstack__tp_isname(P, "else")) {
                P->i++;
                if (mlstack__tp_block_end(P)) return NULL;
                cur->c = mlstack__tp_body(P, e2, "if", pos);
                if (P->c->rc) return NULL;
                /* an empty else body must still not be read as "no else" in a chain */
            }
            P->i++; /* endif */
            if (mlstack__tp_block_end(P)) return NULL;
            return top;
        }
    }
    if (MLSTACK__KW("set")) {
        static const char *const e[] = {"endset", NULL};
        mlstack__tn *target = mlstack__tp_target(P, 1);
        if (!target) return NULL;
        if (mlstack__tp_isop(P, "=")) {
            P->i++;
            if (!(n = mlstack__tp_node(P, MLSTACK__S_SET, pos))) return NULL;
            n->a = target;
            if (!(n->b = mlstack__tp_tuple(P, 1))) return NULL;
            if (mlstack__tp_block_end(P)) return NULL;
            return n;
        }
        if (target->kind != MLSTACK__N_NAME && target->kind != MLSTACK__N_ATTR) {
            mlstack__tpl_fail(P->c, pos, MLSTACK_ERR_FORMAT, "a block set assigns one name");
            return NULL;
        }
        if (mlstack__tp_isop(P, "|")) {
            mlstack__tpl_fail(P->c, mlstack__tp_cur(P)->pos, MLSTACK_ERR_UNSUPPORTED, "filters on a block set are not supported");
            return NULL;
        }
        if (mlstack__tp_block_end(P)) return NULL;
        if (!(n = mlstack__tp_node(P, MLSTACK__S_SETBLOCK, pos))) return NULL;
        n->a = target;
        n->c = mlstack__tp_body(P, e, "set", pos);
        if (P->c->rc) return NULL;
        P->i++;
        if (mlstack__tp_block_end(P)) return NULL;
        return n;
    }
    if (MLSTACK__KW("macro")) {
        static const char *const e[] = {"endmacro", NULL};
        mlstack__ttok *name = mlstack__tp_cur(P);
        mlstack__tn **tail;
        if (mlstack__tp_expect(P, MLSTACK__TK_NAME, "a macro name")) return NULL;
        if (!(n = mlstack__tp_node(P, MLSTACK__S_MACRO, pos))) return NULL;
        P->macros++;
        n->s = name->s;
        n->n = name->n;
        if (mlstack__tp_expect_op(P, "(")) return NULL;
        tail = &n->b;
        while (!mlstack__tp_isop(P, ")")) {
            mlstack__ttok *pn;
            mlstack__tn *param;
            if (n->b && mlstack__tp_expect_op(P, ",")) return NULL;
            if (mlstack__tp_isop(P, ")")) break;
            pn = mlstack__tp_cur(P);
            if (mlstack__tp_expect(P, MLSTACK__TK_NAME, "a parameter name")) return NULL;
            if (!(param = mlstack__tp_node(P, MLSTACK__N_NAME, pn->pos))) return NULL;
            param->s = pn->s;
            param->n = pn->n;
            if (mlstack__tp_isop(P, "=")) {
                P->i++;
                if (!(param->a = mlstack__tp_expr(P, 1))) return NULL;
            }
            *tail = param;
            tail = &param->next;
        }
        P->i++;
        if (mlstack__tp_block_end(P)) return NULL;
        {
            int saved_loops = P->loops;
            P->loops = 0;
            n->c = mlstack__tp_body(P, e, "macro", pos);
            P->loops = saved_loops;
        }
        if (P->c->rc) return NULL;
        P->i++;
        if (mlstack__tp_cur(P)->t == MLSTACK__TK_NAME) P->i++; /* {% endmacro name %} */
        if (mlstack__tp_block_end(P)) return NULL;
        return n;
    }
    if (MLSTACK__KW("break") || MLSTACK__KW("continue")) {
        if (!P->loops) {
            mlstack__tpl_fail(P->c, kw->pos, MLSTACK_ERR_FORMAT, "'%.*s' outside a for loop", (int)kw->n, kw->s);
            return NULL;
        }
        if (!(n = mlstack__tp_node(P, MLSTACK__KW("break") ? MLSTACK__S_BREAK : MLSTACK__S_CONTINUE, pos))) return NULL;
        if (mlstack__tp_block_end(P)) return NULL;
        return n;
    }
    if (MLSTACK__KW("generation")) { /* transformers' assistant-mask marker: renders its body */
        static const char *const e[] = {"endgeneration", NULL};
        if (mlstack__tp_block_end(P)) return NULL;
        if (!(n = mlstack__tp_node(P, MLSTACK__S_BLOCK, pos))) return NULL;
        n->c = mlstack__tp_body(P, e, "generation", pos);
        if (P->c->rc) return NULL;
        P->i++;
        if (mlstack__tp_block_end(P)) return NULL;
        return n;
    }
    if (MLSTACK__KW("filter")) {
        static const char *const e[] = {"endfilter", NULL};
        mlstack__tn *f;
        if (!(n = mlstack__tp_node(P, MLSTACK__S_FILTERBLOCK, pos))) return NULL;
        f = mlstack__tp_filter_one(P, NULL);
        while (f && mlstack__tp_isop(P, "|")) {
            P->i++;
            f = mlstack__tp_filter_one(P, f);
        }
        if (!f) return NULL;
        n->a = f;
        if (mlstack__tp_block_end(P)) return NULL;
        n->c = mlstack__tp_body(P, e, "filter", pos);
        if (P->c->rc) return NULL;
        P->i++;
        if (mlstack__tp_block_end(P)) return NULL;
        return n;
    }
    mlstack__tpl_fail(P->c, kw->pos, MLSTACK_ERR_UNSUPPORTED, "statement '%.*s' is not supported", (int)kw->n, kw->s);
    return NULL;
#undef MLSTACK__KW
}

static mlstack__tn *mlstack__tp_body(mlstack__tparse *P, const char *const *ends, const char *opener, size_t opener_pos) {
    mlstack__tn *first = NULL, **tail = &first, *n;
    if (mlstack__tp_enter(P)) return NULL;
    for (;;) {
        mlstack__ttok *t = mlstack__tp_cur(P);
        if (t->t == MLSTACK__TK_EOF) {
            if (ends) {
                mlstack__tpl_fail(P->c, opener_pos, MLSTACK_ERR_FORMAT, "'%s' block is never closed (expected '%s')", opener, ends[0]);
                return NULL;
            }
            break;
        }
        if (t->t == MLSTACK__TK_TEXT) {
            if (!(n = mlstack__tp_node(P, MLSTACK__S_TEXT, t->pos))) return NULL;
            n->s = t->s;
            n->n = t->n;
            P->i++;
        } else if (t->t == MLSTACK__TK_VBEGIN) {
            P->i++;
            if (!(n = mlstack__tp_node(P, MLSTACK__S_OUT, t->pos))) return NULL;
            if (!(n->a = mlstack__tp_tuple(P, 1))) return NULL;
            if (mlstack__tp_expect(P, MLSTACK__TK_VEND, "'}}'")) return NULL;
        } else if (t->t == MLSTACK__TK_BBEGIN) {
            mlstack__ttok *kw = &P->tok[P->i + 1];
            if (kw->t == MLSTACK__TK_NAME) {
                const char *const *e;
                for (e = ends; e && *e; e++)
                    if (strlen(*e) == kw->n && memcmp(*e, kw->s, kw->n) == 0) {
                        P->i++;
                        P->depth--;
                        return first;
                    }
                if ((kw->n >= 3 && memcmp(kw->s, "end", 3) == 0) || (kw->n == 4 && memcmp(kw->s, "elif", 4) == 0) ||
                    (kw->n == 4 && memcmp(kw->s, "else", 4) == 0)) {
                    mlstack__tpl_fail(P->c, kw->pos, MLSTACK_ERR_FORMAT, "unexpected '%.*s'%s%s%s", (int)kw->n, kw->s,
                                      opener ? " inside '" : "", opener ? opener : "", opener ? "'" : "");
                    return NULL;
                }
            }
            P->i++;
            if (!(n = mlstack__tp_stmt(P))) return NULL;
        } else {
            mlstack__tpl_fail(P->c, t->pos, MLSTACK_ERR_FORMAT, "unexpected %s", mlstack__tp_desc(t));
            return NULL;
        }
        *tail = n;
        tail = &n->next;
    }
    P->depth--;
    return first;
}

/* ---- printing: Python str(), repr() and json.dumps ---- */
static const char *mlstack__tv_typename(const mlstack__tv *v) {
    switch (v->t) {
    case MLSTACK__TV_UNDEF: return "Undefined";
    case MLSTACK__TV_NONE: return "NoneType";
    case MLSTACK__TV_BOOL: return "bool";
    case MLSTACK__TV_INT: return "int";
    case MLSTACK__TV_FLOAT: return "float";
    case MLSTACK__TV_STR: return "str";
    case MLSTACK__TV_LIST:
        switch (v->u.l->kind) {
        case MLSTACK__TL_TUPLE: return "tuple";
        case MLSTACK__TL_GEN: return "generator";
        case MLSTACK__TL_RANGE: return "range";
        case MLSTACK__TL_ITEMS: return "dict_items";
        case MLSTACK__TL_KEYS: return "dict_keys";
        case MLSTACK__TL_VALUES: return "dict_values";
        default: return "list";
        }
    case MLSTACK__TV_DICT: return "dict";
    case MLSTACK__TV_NS: return "Namespace";
    case MLSTACK__TV_MACRO: return "Macro";
    case MLSTACK__TV_LOOP: return "LoopContext";
    default: return "builtin_function_or_method";
    }
}

/* Python repr(float): the shortest digits that read back exactly, fixed notation for
   exponents -4..15, else d.ddde+XX. */
static void mlstack__tpl_fmt_float(double x, char *out, size_t cap) {
    char buf[48], digits[24], *e;
    int prec, exp10, nd = 0, neg = 0, i;
    size_t o = 0;
    if (x != x) {
        snprintf(out, cap, "nan");
        return;
    }
    if (x == HUGE_VAL || x == -HUGE_VAL) {
        snprintf(out, cap, x > 0 ? "inf" : "-inf");
        return;
    }
    if (x == 0) {
        snprintf(out, cap, signbit(x) ? "-0.0" : "0.0");
        return;
    }
    for (prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, x);
        if (strtod(buf, NULL) == x) break;
    }
    e = strchr(buf, 'e');
    exp10 = e ? atoi(e + 1) : 0;
    for (i = 0; buf + i < (e ? e : buf + strlen(buf)); i++) {
        if (buf[i] == '-') neg = 1;
        else if (buf[i] >= '0' && buf[i] <= '9' && nd < 20) digits[nd++] = buf[i];
    }
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    digits[nd] = 0;
#define MLSTACK__PUTC(ch) do { if (o + 1 < cap) out[o++] = (ch); } while (0)
    if (neg) MLSTACK__PUTC('-');
    if (exp10 < -4 || exp10 >= 16) {
        MLSTACK__PUTC(digits[0]);
        if (nd > 1) {
            MLSTACK__PUTC('.');
            for (i = 1; i < nd; i++) MLSTACK__PUTC(digits[i]);
        }
        out[o] = 0;
        snprintf(out + o, cap - o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
        return;
    }
    if (exp10 >= 0) {
        for (i = 0; i <= exp10; i++) MLSTACK__PUTC(i < nd ? digits[i] : '0');
        MLSTACK__PUTC('.');
        if (nd > exp10 + 1)
            for (i = exp10 + 1; i < nd; i++) MLSTACK__PUTC(digits[i]);
        else
            MLSTACK__PUTC('0');
    } else {
        MLSTACK__PUTC('0');
        MLSTACK__PUTC('.');
        for (i = 0; i < -exp10 - 1; i++) MLSTACK__PUTC('0');
        for (i = 0; i < nd; i++) MLSTACK__PUTC(digits[i]);
    }
    out[o] = 0;
#undef MLSTACK__PUTC
}

static int mlstack__tv_repr(mlstack__tctx *c, mlstack__tbuf *b, const mlstack__tv *v, size_t pos, int depth);

/* Python str(v) appended to b. */
static int mlstack__tv_print(mlstack__tctx *c, mlstack__tbuf *b, const mlstack__tv *v, size_t pos) {
    char num[64];
    switch (v->t) {
    case MLSTACK__TV_UNDEF: return 0;
    case MLSTACK__TV_NONE: return mlstack__tbuf_puts(c, b, "None");
    case MLSTACK__TV_BOOL: return mlstack__tbuf_puts(c, b, v->u.i ? "True" : "False");
    case MLSTACK__TV_INT:
        snprintf(num, sizeof num, "%lld", (long long)v->u.i);
        return mlstack__tbuf_puts(c, b, num);
    case MLSTACK__TV_FLOAT:
        mlstack__tpl_fmt_float(v->u.f, num, sizeof num);
        return mlstack__tbuf_puts(c, b, num);
    case MLSTACK__TV_STR: return mlstack__tbuf_put(c, b, v->u.s.p, v->u.s.n);
    default: return mlstack__tv_repr(c, b, v, pos, 0);
    }
}

/* Python repr() of a str. Non-printable characters are escaped as Python does for the
   ranges covered here (C0/C1 controls, DEL, Unicode spaces and format characters). */
static int mlstack__tpl_repr_str(mlstack__tctx *c, mlstack__tbuf *b, const char *s, size_t n) {
    size_t i, l;
    char q = (memchr(s, '\'', n) && !memchr(s, '"', n)) ? '"' : '\'';
    if (mlstack__tbuf_put(c, b, &q, 1)) return -1;
    for (i = 0; i < n; i += l) {
        uint32_t cp = mlstack__tpl_cp(s + i, n - i, &l);
        char esc[16];
        if (cp == (uint32_t)q || cp == '\\') {
            esc[0] = '\\';
            esc[1] = (char)cp;
            if (mlstack__tbuf_put(c, b, esc, 2)) return -1;
        } else if (cp == '\n' || cp == '\r' || cp == '\t') {
            if (mlstack__tbuf_puts(c, b, cp == '\n' ? "\\n" : cp == '\r' ? "\\r" : "\\t")) return -1;
        } else if (cp < 0x20 || (cp >= 0x7F && cp <= 0xA0) || cp == 0xAD) {
            snprintf(esc, sizeof esc, "\\x%02x", cp);
            if (mlstack__tbuf_puts(c, b, esc)) return -1;
        } else if ((cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F) || (cp >= 0x205F && cp <= 0x206F) ||
                   cp == 0x3000 || cp == 0xFEFF || cp == 0x1680 || (cp >= 0xE000 && cp <= 0xF8FF)) {
            snprintf(esc, sizeof esc, "\\u%04x", cp);
            if (mlstack__tbuf_puts(c, b, esc)) return -1;
        } else if (mlstack__tbuf_put(c, b, s + i, l)) {
            return -1;
        }
    }
    return mlstack__tbuf_put(c, b, &q, 1);
}

static int mlstack__tv_repr(mlstack__tctx *c, mlstack__tbuf *b, const mlstack__tv *v, size_t pos, int depth) {
    size_t i;
    if (depth > 100) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_LIMIT, "value nested too deeply to print");
    switch (v->t) {
    case MLSTACK__TV_UNDEF: return mlstack__tbuf_puts(c, b, "Undefined");
    case MLSTACK__TV_STR: return mlstack__tpl_repr_str(c, b, v->u.s.p, v->u.s.n);
    case MLSTACK__TV_LIST: {
        const mlstack__tlist *l = v->u.l;
        const char *open = "[", *close = "]";
        switch (l->kind) {
        case MLSTACK__TL_TUPLE: open = "("; close = l->n == 1 ? ",)" : ")"; break;
        case MLSTACK__TL_ITEMS: open = "dict_items(["; close = "])"; break;
        case MLSTACK__TL_KEYS: open = "dict_keys(["; close = "])"; break;
        case MLSTACK__TL_VALUES: open = "dict_values(["; close = "])"; break;
        case MLSTACK__TL_GEN:
        case MLSTACK__TL_RANGE:
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "printing a %s object is not supported (convert it with |list)",
                                     mlstack__tv_typename(v));
        default: break;
        }
        if (mlstack__tbuf_puts(c, b, open)) return -1;
        for (i = 0; i < l->n; i++) {
            if (i && mlstack__tbuf_puts(c, b, ", ")) return -1;
            if (mlstack__tv_repr(c, b, &l->v[i], pos, depth + 1)) return -1;
        }
        return mlstack__tbuf_puts(c, b, close);
    }
    case MLSTACK__TV_DICT:
    case MLSTACK__TV_NS: {
        const mlstack__tdict *d = v->u.d;
        if (v->t == MLSTACK__TV_NS && mlstack__tbuf_puts(c, b, "<Namespace ")) return -1;
        if (mlstack__tbuf_puts(c, b, "{")) return -1;
        for (i = 0; i < d->n; i++) {
            if (i && mlstack__tbuf_puts(c, b, ", ")) return -1;
            if (mlstack__tv_repr(c, b, &d->k[i], pos, depth + 1) || mlstack__tbuf_puts(c, b, ": ") ||
                mlstack__tv_repr(c, b, &d->v[i], pos, depth + 1))
                return -1;
        }
        if (mlstack__tbuf_puts(c, b, "}")) return -1;
        return v->t == MLSTACK__TV_NS ? mlstack__tbuf_puts(c, b, ">") : 0;
    }
    case MLSTACK__TV_NONE:
    case MLSTACK__TV_BOOL:
    case MLSTACK__TV_INT:
    case MLSTACK__TV_FLOAT: return mlstack__tv_print(c, b, v, pos);
    default:
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "printing a %s object is not supported", mlstack__tv_typename(v));
    }
}

typedef struct mlstack__tjson_opt {
    const char *indent; /* NULL: one line */
    const char *item_sep, *key_sep;
    size_t item_sep_n, key_sep_n, indent_n;
    int sort_keys, ensure_ascii;
} mlstack__tjson_opt;

static int mlstack__tpl_json_str(mlstack__tctx *c, mlstack__tbuf *b, const char *s, size_t n, int ensure_ascii) {
    size_t i, l;
    char esc[16];
    if (mlstack__tbuf_put(c, b, "\"", 1)) return -1;
    for (i = 0; i < n; i += l) {
        uint32_t cp = mlstack__tpl_cp(s + i, n - i, &l);
        const char *e = NULL;
        switch (cp) {
        case '"': e = "\\\""; break;
        case '\\': e = "\\\\"; break;
        case '\n': e = "\\n"; break;
        case '\r': e = "\\r"; break;
        case '\t': e = "\\t"; break;
        case '\b': e = "\\b"; break;
        case '\f': e = "\\f"; break;
        default: break;
        }
        if (e) {
            if (mlstack__tbuf_puts(c, b, e)) return -1;
        } else if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
            if (cp >= 0x10000) {
                uint32_t v = cp - 0x10000;
                snprintf(esc, sizeof esc, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
            } else {
                snprintf(esc, sizeof esc, "\\u%04x", cp);
            }
            if (mlstack__tbuf_puts(c, b, esc)) return -1;
        } else if (mlstack__tbuf_put(c, b, s + i, l)) {
            return -1;
        }
    }
    return mlstack__tbuf_put(c, b, "\"", 1);
}

static int mlstack__tpl_json_newline(mlstack__tctx *c, mlstack__tbuf *b, const mlstack__tjson_opt *o, int level) {
    int k;
    if (mlstack__tbuf_put(c, b, "\n", 1)) return -1;
    for (k = 0; k < level; k++)
        if (mlstack__tbuf_put(c, b, o->indent, o->indent_n)) return -1;
    return 0;
}

static int mlstack__tpl_json(mlstack__tctx *c, mlstack__tbuf *b, const mlstack__tv *v, const mlstack__tjson_opt *o,
                             int level, size_t pos) {
    char num[64];
    size_t i;
    if (level > 100) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_LIMIT, "tojson: value nested too deeply");
    switch (v->t) {
    case MLSTACK__TV_NONE: return mlstack__tbuf_puts(c, b, "null");
    case MLSTACK__TV_BOOL: return mlstack__tbuf_puts(c, b, v->u.i ? "true" : "false");
    case MLSTACK__TV_INT:
        snprintf(num, sizeof num, "%lld", (long long)v->u.i);
        return mlstack__tbuf_puts(c, b, num);
    case MLSTACK__TV_FLOAT:
        if (v->u.f != v->u.f) return mlstack__tbuf_puts(c, b, "NaN");
        if (v->u.f == HUGE_VAL || v->u.f == -HUGE_VAL) return mlstack__tbuf_puts(c, b, v->u.f > 0 ? "Infinity" : "-Infinity");
        mlstack__tpl_fmt_float(v->u.f, num, sizeof num);
        return mlstack__tbuf_puts(c, b, num);
    case MLSTACK__TV_STR: return mlstack__tpl_json_str(c, b, v->u.s.p, v->u.s.n, o->ensure_ascii);
    case MLSTACK__TV_LIST:
        if (v->u.l->kind == MLSTACK__TL_LIST || v->u.l->kind == MLSTACK__TL_TUPLE) {
            const mlstack__tlist *l = v->u.l;
            if (l->n == 0) return mlstack__tbuf_puts(c, b, "[]");
            if (mlstack__tbuf_puts(c, b, "[")) return -1;
            for (i = 0; i < l->n; i++) {
                if (i && mlstack__tbuf_put(c, b, o->item_sep, o->item_sep_n)) return -1;
                if (o->indent && mlstack__tpl_json_newline(c, b, o, level + 1)) return -1;
                if (mlstack__tpl_json(c, b, &l->v[i], o, level + 1, pos)) return -1;
            }
            if (o->indent && mlstack__tpl_json_newline(c, b, o, level)) return -1;
            return mlstack__tbuf_puts(c, b, "]");
        }
        break;
    case MLSTACK__TV_DICT: {
        const mlstack__tdict *d = v->u.d;
        size_t *order;
        if (d->n == 0) return mlstack__tbuf_puts(c, b, "{}");
        order = (size_t *)mlstack__tpl_alloc(c, d->n * sizeof *order);
        if (!order) return -1;
        for (i = 0; i < d->n; i++) order[i] = i;
        if (o->sort_keys) { /* insertion sort, stable; str keys only (Python errors on mixed types) */
            for (i = 0; i < d->n; i++)
                if (d->k[i].t != MLSTACK__TV_STR)
                    return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "tojson(sort_keys=true) with non-string keys");
            for (i = 1; i < d->n; i++) {
                size_t j = i, t = order[i];
                while (j > 0) {
                    const mlstack__tv *x = &d->k[order[j - 1]], *y = &d->k[t];
                    size_t m = x->u.s.n < y->u.s.n ? x->u.s.n : y->u.s.n;
                    int cmpv = memcmp(x->u.s.p, y->u.s.p, m);
                    if (cmpv < 0 || (cmpv == 0 && x->u.s.n <= y->u.s.n)) break;
                    order[j] = order[j - 1];
                    j--;
                }
                order[j] = t;
            }
        }
        if (mlstack__tbuf_puts(c, b, "{")) return -1;
        for (i = 0; i < d->n; i++) {
            const mlstack__tv *k = &d->k[order[i]];
            if (i && mlstack__tbuf_put(c, b, o->item_sep, o->item_sep_n)) return -1;
            if (o->indent && mlstack__tpl_json_newline(c, b, o, level + 1)) return -1;
            if (k->t == MLSTACK__TV_STR) {
                if (mlstack__tpl_json_str(c, b, k->u.s.p, k->u.s.n, o->ensure_ascii)) return -1;
            } else if (k->t == MLSTACK__TV_INT || k->t == MLSTACK__TV_FLOAT || k->t == MLSTACK__TV_BOOL || k->t == MLSTACK__TV_NONE) {
                if (mlstack__tbuf_put(c, b, "\"", 1) || mlstack__tpl_json(c, b, k, o, level + 1, pos) ||
                    mlstack__tbuf_put(c, b, "\"", 1))
                    return -1;
            } else {
                return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "tojson: keys must be str, int, float, bool or None, not %s",
                                         mlstack__tv_typename(k));
            }
            if (mlstack__tbuf_put(c, b, o->key_sep, o->key_sep_n)) return -1;
            if (mlstack__tpl_json(c, b, &d->v[order[i]], o, level + 1, pos)) return -1;
        }
        if (o->indent && mlstack__tpl_json_newline(c, b, o, level)) return -1;
        return mlstack__tbuf_puts(c, b, "}");
    }
    default: break;
    }
    return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "tojson: Object of type %s is not JSON serializable",
                             mlstack__tv_typename(v));
}

/* ---- truthiness, iteration ---- */
static int mlstack__tv_truthy(const mlstack__tv *v) {
    switch (v->t) {
    case MLSTACK__TV_UNDEF:
    case MLSTACK__TV_NONE: return 0;
    case MLSTACK__TV_BOOL:
    case MLSTACK__TV_INT: return v->u.i != 0;
    case MLSTACK__TV_FLOAT: return v->u.f != 0;
    case MLSTACK__TV_STR: return v->u.s.n != 0;
    case MLSTACK__TV_LIST: return v->u.l->kind == MLSTACK__TL_GEN || v->u.l->n > 0;
    case MLSTACK__TV_DICT: return v->u.d->n > 0;
    default: return 1;
    }
}

/* The items a for loop (or list()) sees. Strings give code points, dicts their keys,
   undefined nothing; generators are consumed. Returns 0, or -1 when not iterable. */
static int mlstack__tv_iter(mlstack__tctx *c, const mlstack__tv *v, mlstack__tv **items, size_t *n, size_t pos) {
    size_t i, l, k = 0;
    *items = NULL;
    *n = 0;
    switch (v->t) {
    case MLSTACK__TV_UNDEF: return 0;
    case MLSTACK__TV_LIST: {
        mlstack__tlist *lst = v->u.l;
        *items = lst->v ? lst->v + lst->start : NULL;
        *n = lst->n - lst->start;
        if (lst->kind == MLSTACK__TL_GEN) lst->start = lst->n;
        return 0;
    }
    case MLSTACK__TV_DICT:
        *items = v->u.d->k;
        *n = v->u.d->n;
        return 0;
    case MLSTACK__TV_STR: {
        size_t cps = mlstack__tpl_cplen(v->u.s.p, v->u.s.n);
        mlstack__tv *arr;
        if (!cps) return 0;
        arr = (mlstack__tv *)mlstack__tpl_alloc(c, cps * sizeof *arr);
        if (!arr) return -1;
        for (i = 0; i < v->u.s.n; i += l) {
            mlstack__tpl_cp(v->u.s.p + i, v->u.s.n - i, &l);
            arr[k++] = mlstack__tv_str(v->u.s.p + i, l);
        }
        *items = arr;
        *n = k;
        return 0;
    }
    default:
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "'%s' object is not iterable", mlstack__tv_typename(v));
    }
}

/* ---- arguments ---- */
#define MLSTACK__TARGS_MAX 12
typedef struct mlstack__targs {
    int np, nk;
    mlstack__tv p[MLSTACK__TARGS_MAX];
    const char *kn[MLSTACK__TARGS_MAX];
    size_t kl[MLSTACK__TARGS_MAX];
    mlstack__tv kv[MLSTACK__TARGS_MAX];
    int kused[MLSTACK__TARGS_MAX];
} mlstack__targs;

/* Argument `idx` (positional) or `name` (keyword); 1 if given. */
static int mlstack__targ(mlstack__targs *a, int idx, const char *name, mlstack__tv *out) {
    int k;
    if (idx >= 0 && idx < a->np) {
        *out = a->p[idx];
        return 1;
    }
    if (name)
        for (k = 0; k < a->nk; k++)
            if (strlen(name) == a->kl[k] && memcmp(name, a->kn[k], a->kl[k]) == 0) {
                a->kused[k] = 1;
                *out = a->kv[k];
                return 1;
            }
    return 0;
}
/* After reading arguments: complains about too many positionals or unknown keywords. */
static int mlstack__targs_done(mlstack__tctx *c, mlstack__targs *a, int max_pos, const char *what, size_t pos) {
    int k;
    if (a->np > max_pos)
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s takes at most %d positional argument(s), %d given", what, max_pos,
                                 a->np);
    for (k = 0; k < a->nk; k++)
        if (!a->kused[k])
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s got an unexpected keyword argument '%.*s'", what,
                                     (int)a->kl[k], a->kn[k]);
    return 0;
}

static int mlstack__tpl_eval(mlstack__tctx *c, mlstack__tscope *s, const mlstack__tn *n, mlstack__tv *out);
static int mlstack__tpl_exec(mlstack__tctx *c, mlstack__tscope *s, const mlstack__tn *body);

static int mlstack__tpl_eval_args(mlstack__tctx *c, mlstack__tscope *s, const mlstack__tn *list, mlstack__targs *a,
                                  int first_pos) {
    memset(a, 0, sizeof *a);
    a->np = first_pos;
    for (; list; list = list->next) {
        if (list->kind == MLSTACK__N_KWARG) {
            if (a->nk == MLSTACK__TARGS_MAX) return mlstack__tpl_fail(c, list->pos, MLSTACK_ERR_UNSUPPORTED, "too many arguments");
            a->kn[a->nk] = list->s;
            a->kl[a->nk] = list->n;
            if (mlstack__tpl_eval(c, s, list->a, &a->kv[a->nk])) return -1;
            a->nk++;
        } else {
            if (a->nk) return mlstack__tpl_fail(c, list->pos, MLSTACK_ERR_FORMAT, "positional argument follows keyword argument");
            if (a->np == MLSTACK__TARGS_MAX) return mlstack__tpl_fail(c, list->pos, MLSTACK_ERR_UNSUPPORTED, "too many arguments");
            if (mlstack__tpl_eval(c, s, list, &a->p[a->np])) return -1;
            a->np++;
        }
    }
    return 0;
}

/* ---- scopes ---- */
static mlstack__tv *mlstack__tscope_lookup(mlstack__tscope *s, const char *name, size_t n) {
    for (; s; s = s->parent) {
        mlstack__tv *v = mlstack__tdict_findn(&s->vars, name, n);
        if (v) return v;
    }
    return NULL;
}
static int mlstack__tscope_set(mlstack__tctx *c, mlstack__tscope *s, const char *name, size_t n, mlstack__tv v) {
    return mlstack__tdict_set(c, &s->vars, mlstack__tv_str(name, n), v);
}
static mlstack__tscope *mlstack__tscope_new(mlstack__tctx *c, mlstack__tscope *parent) {
    mlstack__tscope *s = (mlstack__tscope *)mlstack__tpl_alloc(c, sizeof *s);
    if (!s) return NULL;
    memset(s, 0, sizeof *s);
    s->parent = parent;
    return s;
}

/* ---- strings ---- */
static int mlstack__tpl_newstr(mlstack__tctx *c, mlstack__tbuf *b, mlstack__tv *out) {
    if (!b->p && mlstack__tbuf_put(c, b, "", 0)) return -1;
    *out = mlstack__tv_str(b->p, b->n);
    return 0;
}
/* mode 1 upper, 0 lower, 2 capitalize, 3 str.title, 4 jinja's title filter */
static int mlstack__tpl_case_str(mlstack__tctx *c, const mlstack__tv *v, int mode, mlstack__tv *out, size_t pos) {
    mlstack__tbuf b;
    size_t i, l;
    int prev_cased = 0, first = 1;
    memset(&b, 0, sizeof b);
    for (i = 0; i < v->u.s.n; i += l) {
        uint32_t cp = mlstack__tpl_cp(v->u.s.p + i, v->u.s.n - i, &l), m;
        int up;
        if (mode == 0 || mode == 1) up = mode;
        else if (mode == 2) up = first;
        else if (mode == 3) up = !prev_cased;
        else up = first || prev_cased == 2;
        if (cp == 0xDF && up) { /* German sharp s: upper() gives "SS", title() "Ss" */
            if (mlstack__tbuf_put(c, &b, mode == 1 ? "SS" : "Ss", 2)) return -1;
            prev_cased = mode == 4 ? 0 : 1;
            first = 0;
            continue;
        }
        if (mlstack__tpl_case(cp, up, &m) != 0)
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "case mapping of U+%04X is not supported", (unsigned)cp);
        if (mode == 4) /* words begin after runs of whitespace, '-', '(', '{', '[', '<' */
            prev_cased = (mlstack__tpl_isspace(cp) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<') ? 2 : 0;
        else
            prev_cased = mlstack__tpl_iscased_letter(cp);
        first = 0;
        if (mlstack__tbuf_cp(c, &b, m)) return -1;
    }
    return mlstack__tpl_newstr(c, &b, out);
}

static int mlstack__tpl_in_chars(uint32_t cp, const mlstack__tv *chars) {
    size_t i, l;
    if (!chars) return mlstack__tpl_isspace(cp);
    for (i = 0; i < chars->u.s.n; i += l)
        if (mlstack__tpl_cp(chars->u.s.p + i, chars->u.s.n - i, &l) == cp) return 1;
    return 0;
}
/* which: 1 left, 2 right, 3 both */
static mlstack__tv mlstack__tpl_strip(const mlstack__tv *v, const mlstack__tv *chars, int which) {
    const char *p = v->u.s.p;
    size_t a = 0, e = v->u.s.n, l;
    if (which & 1)
        while (a < e && mlstack__tpl_in_chars(mlstack__tpl_cp(p + a, e - a, &l), chars)) a += l;
    if (which & 2)
        while (e > a) {
            size_t k = e - 1;
            while (k > a && ((unsigned char)p[k] & 0xC0) == 0x80) k--;
            if (!mlstack__tpl_in_chars(mlstack__tpl_cp(p + k, e - k, &l), chars)) break;
            e = k;
        }
    return mlstack__tv_str(p + a, e - a);
}

static const char *mlstack__tpl_memmem(const char *h, size_t hn, const char *nd, size_t nn) {
    size_t i;
    if (nn == 0) return h;
    if (nn > hn) return NULL;
    for (i = 0; i + nn <= hn; i++)
        if (h[i] == nd[0] && memcmp(h + i, nd, nn) == 0) return h + i;
    return NULL;
}
static const char *mlstack__tpl_memrmem(const char *h, size_t hn, const char *nd, size_t nn) {
    size_t i;
    if (nn > hn) return NULL;
    for (i = hn - nn + 1; i-- > 0;)
        if (memcmp(h + i, nd, nn) == 0) return h + i;
    return NULL;
}

static int mlstack__tpl_replace(mlstack__tctx *c, const mlstack__tv *s, const mlstack__tv *old, const mlstack__tv *nw,
                                int64_t count, mlstack__tv *out) {
    mlstack__tbuf b;
    size_t i = 0, l;
    int64_t done = 0;
    memset(&b, 0, sizeof b);
    if (old->u.s.n == 0) {
        for (i = 0;; i += l) {
            if (count < 0 || done < count) {
                if (mlstack__tbuf_put(c, &b, nw->u.s.p, nw->u.s.n)) return -1;
                done++;
            }
            if (i >= s->u.s.n) break;
            mlstack__tpl_cp(s->u.s.p + i, s->u.s.n - i, &l);
            if (mlstack__tbuf_put(c, &b, s->u.s.p + i, l)) return -1;
        }
        return mlstack__tpl_newstr(c, &b, out);
    }
    while (i <= s->u.s.n) {
        const char *f = (count < 0 || done < count) ? mlstack__tpl_memmem(s->u.s.p + i, s->u.s.n - i, old->u.s.p, old->u.s.n) : NULL;
        if (!f) {
            if (mlstack__tbuf_put(c, &b, s->u.s.p + i, s->u.s.n - i)) return -1;
            break;
        }
        if (mlstack__tbuf_put(c, &b, s->u.s.p + i, (size_t)(f - (s->u.s.p + i))) || mlstack__tbuf_put(c, &b, nw->u.s.p, nw->u.s.n))
            return -1;
        i = (size_t)(f - s->u.s.p) + old->u.s.n;
        done++;
    }
    return mlstack__tpl_newstr(c, &b, out);
}

/* str.split / str.rsplit */
static int mlstack__tpl_split(mlstack__tctx *c, const mlstack__tv *s, const mlstack__tv *sep, int64_t maxsplit, int right,
                              mlstack__tv *out, size_t pos) {
    mlstack__tlist *l = mlstack__tlist_new(c, MLSTACK__TL_LIST, 0);
    const char *p = s->u.s.p;
    size_t n = s->u.s.n, cl;
    int64_t splits = 0;
    if (!l) return -1;
    if (sep && sep->u.s.n == 0) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "empty separator");
    if (!right) {
        size_t i = 0;
        if (!sep) {
            for (;;) {
                size_t st;
                while (i < n && mlstack__tpl_isspace(mlstack__tpl_cp(p + i, n - i, &cl))) i += cl;
                if (i >= n) break;
                if (maxsplit >= 0 && splits >= maxsplit) {
                    size_t e = n;
                    mlstack__tv t = mlstack__tv_str(p + i, e - i);
                    t = mlstack__tpl_strip(&t, NULL, 2);
                    if (mlstack__tlist_push(c, l, t)) return -1;
                    break;
                }
                st = i;
                while (i < n && !mlstack__tpl_isspace(mlstack__tpl_cp(p + i, n - i, &cl))) i += cl;
                if (mlstack__tlist_push(c, l, mlstack__tv_str(p + st, i - st))) return -1;
                splits++;
            }
        } else {
            for (;;) {
                const char *f = (maxsplit < 0 || splits < maxsplit) ? mlstack__tpl_memmem(p + i, n - i, sep->u.s.p, sep->u.s.n) : NULL;
                if (!f) {
                    if (mlstack__tlist_push(c, l, mlstack__tv_str(p + i, n - i))) return -1;
                    break;
                }
                if (mlstack__tlist_push(c, l, mlstack__tv_str(p + i, (size_t)(f - p) - i))) return -1;
                i = (size_t)(f - p) + sep->u.s.n;
                splits++;
            }
        }
    } else {
        /* collect from the right, then reverse */
        size_t e = n, k;
        if (!sep) {
            for (;;) {
                size_t st;
                while (e > 0) {
                    size_t q = e - 1;
                    while (q > 0 && ((unsigned char)p[q] & 0xC0) == 0x80) q--;
                    if (!mlstack__tpl_isspace(mlstack__tpl_cp(p + q, e - q, &cl))) break;
                    e = q;
                }
                if (e == 0) break;
                if (maxsplit >= 0 && splits >= maxsplit) {
                    mlstack__tv t = mlstack__tv_str(p, e);
                    t = mlstack__tpl_strip(&t, NULL, 1);
                    if (mlstack__tlist_push(c, l, t)) return -1;
                    break;
                }
                st = e;
                while (st > 0) {
                    size_t q = st - 1;
                    while (q > 0 && ((unsigned char)p[q] & 0xC0) == 0x80) q--;
                    if (mlstack__tpl_isspace(mlstack__tpl_cp(p + q, st - q, &cl))) break;
                    st = q;
                }
                if (mlstack__tlist_push(c, l, mlstack__tv_str(p + st, e - st))) return -1;
                e = st;
                splits++;
            }
        } else {
            for (;;) {
                const char *f = (maxsplit < 0 || splits < maxsplit) ? mlstack__tpl_memrmem(p, e, sep->u.s.p, sep->u.s.n) : NULL;
                if (!f) {
                    if (mlstack__tlist_push(c, l, mlstack__tv_str(p, e))) return -1;
                    break;
                }
                if (mlstack__tlist_push(c, l, mlstack__tv_str(f + sep->u.s.n, e - ((size_t)(f - p) + sep->u.s.n)))) return -1;
                e = (size_t)(f - p);
                splits++;
            }
        }
        for (k = 0; k < l->n / 2; k++) {
            mlstack__tv t = l->v[k];
            l->v[k] = l->v[l->n - 1 - k];
            l->v[l->n - 1 - k] = t;
        }
    }
    *out = mlstack__tv_list(l);
    return 0;
}

static int mlstack__tpl_splitlines(mlstack__tctx *c, const mlstack__tv *s, mlstack__tlist *l) {
    size_t i = 0, st = 0, cl;
    const char *p = s->u.s.p;
    while (i < s->u.s.n) {
        uint32_t cp = mlstack__tpl_cp(p + i, s->u.s.n - i, &cl);
        if (mlstack__tpl_islinebreak(cp)) {
            if (mlstack__tlist_push(c, l, mlstack__tv_str(p + st, i - st))) return -1;
            i += cl;
            if (cp == '\r' && i < s->u.s.n && p[i] == '\n') i++;
            st = i;
        } else {
            i += cl;
        }
    }
    if (st < s->u.s.n && mlstack__tlist_push(c, l, mlstack__tv_str(p + st, s->u.s.n - st))) return -1;
    return 0;
}

/* ---- numbers ---- */
static int mlstack__tpl_int_op(mlstack__tctx *c, int op, int64_t a, int64_t b, mlstack__tv *out, size_t pos) {
    int64_t r = 0;
    switch (op) {
    case MLSTACK__OP_ADD:
        if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) goto overflow;
        r = a + b;
        break;
    case MLSTACK__OP_SUB:
        if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) goto overflow;
        r = a - b;
        break;
    case MLSTACK__OP_MUL:
        if (a != 0 && b != 0) {
            if (a == -1 && b == INT64_MIN) goto overflow;
            if (b == -1 && a == INT64_MIN) goto overflow;
            if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a) : (b > 0 ? a < INT64_MIN / b : b < INT64_MAX / a))
                goto overflow;
        }
        r = a * b;
        break;
    case MLSTACK__OP_FLOORDIV:
    case MLSTACK__OP_MOD: {
        int64_t q, m;
        if (b == 0) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "integer division or modulo by zero");
        if (a == INT64_MIN && b == -1) {
            if (op == MLSTACK__OP_MOD) {
                r = 0;
                break;
            }
            goto overflow;
        }
        q = a / b;
        m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) {
            q--;
            m += b;
        }
        r = op == MLSTACK__OP_MOD ? m : q;
        break;
    }
    case MLSTACK__OP_POW: {
        int64_t base = a, e = b;
        if (e < 0) {
            if (a == 0) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "0 cannot be raised to a negative power");
            *out = mlstack__tv_float(pow((double)a, (double)b));
            return 0;
        }
        r = 1;
        while (e > 0) {
            mlstack__tv t;
            if (e & 1) {
                if (mlstack__tpl_int_op(c, MLSTACK__OP_MUL, r, base, &t, pos)) return -1;
                r = t.u.i;
            }
            e >>= 1;
            if (e) {
                if (mlstack__tpl_int_op(c, MLSTACK__OP_MUL, base, base, &t, pos)) return -1;
                base = t.u.i;
            }
        }
        break;
    }
    default: return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "bad integer operation");
    }
    *out = mlstack__tv_int(r);
    return 0;
overflow:
    return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "integer result beyond 64 bits (Python big integers are not supported)");
}

static int mlstack__tpl_float_op(mlstack__tctx *c, int op, double a, double b, mlstack__tv *out, size_t pos) {
    double r;
    switch (op) {
    case MLSTACK__OP_ADD: r = a + b; break;
    case MLSTACK__OP_SUB: r = a - b; break;
    case MLSTACK__OP_MUL: r = a * b; break;
    case MLSTACK__OP_DIV:
        if (b == 0) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "division by zero");
        r = a / b;
        break;
    case MLSTACK__OP_MOD:
    case MLSTACK__OP_FLOORDIV: {
        double mod, div, fd;
        if (b == 0) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "float floor division or modulo by zero");
        mod = fmod(a, b);
        div = (a - mod) / b;
        if (mod != 0) {
            if ((b < 0) != (mod < 0)) {
                mod += b;
                div -= 1.0;
            }
        } else {
            mod = copysign(0.0, b);
        }
        if (div != 0) {
            fd = floor(div);
            if (div - fd > 0.5) fd += 1.0;
        } else {
            fd = copysign(0.0, a / b);
        }
        r = op == MLSTACK__OP_MOD ? mod : fd;
        break;
    }
    case MLSTACK__OP_POW:
        if (a == 0 && b < 0) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "0.0 cannot be raised to a negative power");
        if (a < 0 && b != floor(b)) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "complex results are not supported");
        r = pow(a, b);
        break;
    default: return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "bad float operation");
    }
    *out = mlstack__tv_float(r);
    return 0;
}

static int mlstack__tpl_binop(mlstack__tctx *c, int op, const mlstack__tv *a, const mlstack__tv *b, mlstack__tv *out, size_t pos) {
    static const char *const names[] = {"+", "-", "*", "/", "//", "%", "**"};
    if (mlstack__tv_is_num(a) && mlstack__tv_is_num(b)) {
        if (op == MLSTACK__OP_DIV) return mlstack__tpl_float_op(c, op, mlstack__tv_num(a), mlstack__tv_num(b), out, pos);
        if (a->t != MLSTACK__TV_FLOAT && b->t != MLSTACK__TV_FLOAT) return mlstack__tpl_int_op(c, op, a->u.i, b->u.i, out, pos);
        return mlstack__tpl_float_op(c, op, mlstack__tv_num(a), mlstack__tv_num(b), out, pos);
    }
    if (a->t == MLSTACK__TV_UNDEF || b->t == MLSTACK__TV_UNDEF) {
        const mlstack__tv *u = a->t == MLSTACK__TV_UNDEF ? a : b;
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s", u->u.s.p ? u->u.s.p : "value is undefined");
    }
    if (op == MLSTACK__OP_ADD && a->t == MLSTACK__TV_STR && b->t == MLSTACK__TV_STR) {
        mlstack__tbuf buf;
        memset(&buf, 0, sizeof buf);
        if (mlstack__tbuf_put(c, &buf, a->u.s.p, a->u.s.n) || mlstack__tbuf_put(c, &buf, b->u.s.p, b->u.s.n)) return -1;
        return mlstack__tpl_newstr(c, &buf, out);
    }
    if (op == MLSTACK__OP_ADD && a->t == MLSTACK__TV_LIST && b->t == MLSTACK__TV_LIST &&
        (a->u.l->kind == MLSTACK__TL_LIST || a->u.l->kind == MLSTACK__TL_TUPLE) && a->u.l->kind == b->u.l->kind) {
        mlstack__tlist *l = mlstack__tlist_new(c, a->u.l->kind, a->u.l->n + b->u.l->n);
        if (!l) return -1;
        if (a->u.l->n) memcpy(l->v, a->u.l->v, a->u.l->n * sizeof(mlstack__tv));
        if (b->u.l->n) memcpy(l->v + a->u.l->n, b->u.l->v, b->u.l->n * sizeof(mlstack__tv));
        l->n = a->u.l->n + b->u.l->n;
        *out = mlstack__tv_list(l);
        return 0;
    }
    if (op == MLSTACK__OP_MUL && ((a->t == MLSTACK__TV_STR && (b->t == MLSTACK__TV_INT || b->t == MLSTACK__TV_BOOL)) ||
                                  (b->t == MLSTACK__TV_STR && (a->t == MLSTACK__TV_INT || a->t == MLSTACK__TV_BOOL)))) {
        const mlstack__tv *s = a->t == MLSTACK__TV_STR ? a : b;
        int64_t k = a->t == MLSTACK__TV_STR ? b->u.i : a->u.i, i;
        mlstack__tbuf buf;
        memset(&buf, 0, sizeof buf);
        if (k > 0 && s->u.s.n && (uint64_t)k > (uint64_t)c->max_out / s->u.s.n)
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_LIMIT, "string repetition larger than the output limit");
        for (i = 0; i < k; i++)
            if (mlstack__tbuf_put(c, &buf, s->u.s.p, s->u.s.n)) return -1;
        return mlstack__tpl_newstr(c, &buf, out);
    }
    if (op == MLSTACK__OP_MUL && b->t == MLSTACK__TV_LIST && (a->t == MLSTACK__TV_INT || a->t == MLSTACK__TV_BOOL)) {
        const mlstack__tv *t = a;
        a = b;
        b = t;
    }
    if (op == MLSTACK__OP_MUL && a->t == MLSTACK__TV_LIST && (a->u.l->kind == MLSTACK__TL_LIST || a->u.l->kind == MLSTACK__TL_TUPLE) &&
        (b->t == MLSTACK__TV_INT || b->t == MLSTACK__TV_BOOL)) {
        int64_t k = b->u.i, i;
        mlstack__tlist *l = mlstack__tlist_new(c, a->u.l->kind, 0);
        if (!l) return -1;
        if (k > 0 && a->u.l->n && (uint64_t)k > (uint64_t)(c->max_mem / sizeof(mlstack__tv)) / a->u.l->n)
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_LIMIT, "list repetition too large");
        for (i = 0; i < k; i++) {
            size_t j;
            for (j = 0; j < a->u.l->n; j++)
                if (mlstack__tlist_push(c, l, a->u.l->v[j])) return -1;
        }
        *out = mlstack__tv_list(l);
        return 0;
    }
    if (op == MLSTACK__OP_MOD && a->t == MLSTACK__TV_STR)
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "printf-style string formatting with '%%' is not supported");
    return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "unsupported operand type(s) for %s: '%s' and '%s'",
                             op <= MLSTACK__OP_POW ? names[op] : "?", mlstack__tv_typename(a), mlstack__tv_typename(b));
}

/* Python <, <=, >, >= ; result in *res. */
static int mlstack__tpl_order(mlstack__tctx *c, int op, const mlstack__tv *a, const mlstack__tv *b, int *res, size_t pos) {
    int cmpv;
    static const char *const names[] = {"<", ">", "<=", ">="};
    if (mlstack__tv_is_num(a) && mlstack__tv_is_num(b)) {
        if (a->t != MLSTACK__TV_FLOAT && b->t != MLSTACK__TV_FLOAT)
            cmpv = a->u.i < b->u.i ? -1 : a->u.i > b->u.i;
        else {
            double x = mlstack__tv_num(a), y = mlstack__tv_num(b);
            if (x != x || y != y) {
                *res = 0;
                return 0;
            }
            cmpv = x < y ? -1 : x > y;
        }
    } else if (a->t == MLSTACK__TV_STR && b->t == MLSTACK__TV_STR) {
        size_t m = a->u.s.n < b->u.s.n ? a->u.s.n : b->u.s.n;
        cmpv = memcmp(a->u.s.p, b->u.s.p, m);
        if (cmpv == 0) cmpv = a->u.s.n < b->u.s.n ? -1 : a->u.s.n > b->u.s.n;
    } else if (a->t == MLSTACK__TV_LIST && b->t == MLSTACK__TV_LIST && a->u.l->kind == b->u.l->kind &&
               (a->u.l->kind == MLSTACK__TL_LIST || a->u.l->kind == MLSTACK__TL_TUPLE)) {
        size_t i;
        for (i = 0; i < a->u.l->n && i < b->u.l->n; i++)
            if (!mlstack__tv_eq(&a->u.l->v[i], &b->u.l->v[i], 0))
                return mlstack__tpl_order(c, op, &a->u.l->v[i], &b->u.l->v[i], res, pos);
        cmpv = a->u.l->n < b->u.l->n ? -1 : a->u.l->n > b->u.l->n;
    } else {
        if (a->t == MLSTACK__TV_UNDEF || b->t == MLSTACK__TV_UNDEF) {
            const mlstack__tv *u = a->t == MLSTACK__TV_UNDEF ? a : b;
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s", u->u.s.p ? u->u.s.p : "value is undefined");
        }
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "'%s' not supported between instances of '%s' and '%s'",
                                 names[op - MLSTACK__OP_LT], mlstack__tv_typename(a), mlstack__tv_typename(b));
    }
    switch (op) {
    case MLSTACK__OP_LT: *res = cmpv < 0; break;
    case MLSTACK__OP_GT: *res = cmpv > 0; break;
    case MLSTACK__OP_LE: *res = cmpv <= 0; break;
    default: *res = cmpv >= 0; break;
    }
    return 0;
}

/* Python `a in b`. */
static int mlstack__tpl_contains(mlstack__tctx *c, const mlstack__tv *a, const mlstack__tv *b, int *res, size_t pos) {
    size_t i;
    *res = 0;
    switch (b->t) {
    case MLSTACK__TV_STR:
        if (a->t != MLSTACK__TV_STR)
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "'in <string>' requires string as left operand, not %s",
                                     mlstack__tv_typename(a));
        *res = mlstack__tpl_memmem(b->u.s.p, b->u.s.n, a->u.s.p, a->u.s.n) != NULL;
        return 0;
    case MLSTACK__TV_LIST: {
        mlstack__tv *items;
        size_t n;
        if (mlstack__tv_iter(c, b, &items, &n, pos)) return -1;
        for (i = 0; i < n; i++)
            if (mlstack__tv_eq(a, &items[i], 0)) {
                *res = 1;
                break;
            }
        return 0;
    }
    case MLSTACK__TV_DICT:
        if ((a->t == MLSTACK__TV_LIST && a->u.l->kind != MLSTACK__TL_TUPLE) || a->t == MLSTACK__TV_DICT)
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "unhashable type: '%s'", mlstack__tv_typename(a));
        *res = mlstack__tdict_find(b->u.d, a) != NULL;
        return 0;
    case MLSTACK__TV_UNDEF: return 0;
    default:
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "argument of type '%s' is not iterable", mlstack__tv_typename(b));
    }
}

/* ---- attribute and item access ---- */
static const char *const mlstack__tpl_str_methods[] = {
    "capitalize", "count", "endswith", "find", "index", "isalnum", "isalpha", "isdigit", "islower", "isspace", "isupper",
    "join", "lower", "lstrip", "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rsplit", "rstrip", "split",
    "splitlines", "startswith", "strip", "title", "upper",
    /* known to Python but not implemented here: calling them is an error */
    "casefold", "center", "encode", "expandtabs", "format", "format_map", "isascii", "isdecimal", "isidentifier",
    "isnumeric", "isprintable", "istitle", "ljust", "maketrans", "partition", "rjust", "rpartition", "swapcase",
    "translate", "zfill", NULL};
static const char *const mlstack__tpl_dict_methods[] = {"items", "keys", "values", "get", "copy", "fromkeys", NULL};
static const char *const mlstack__tpl_unsafe_methods[] = {"append", "extend", "insert", "pop", "remove", "clear", "sort",
                                                          "reverse", "popitem", "setdefault", "update", NULL};

static int mlstack__tpl_method(mlstack__tctx *c, const mlstack__tv *self, const char *name, size_t n, mlstack__tv *out) {
    struct mlstack__tmethod *m = (struct mlstack__tmethod *)mlstack__tpl_alloc(c, sizeof *m);
    char *nm = mlstack__tpl_strdup(c, name, n);
    if (!m || !nm) return -1;
    m->self = *self;
    m->name = nm;
    memset(out, 0, sizeof *out);
    out->t = MLSTACK__TV_METHOD;
    out->u.b = m;
    return 0;
}

static int mlstack__tpl_undef_fmt(mlstack__tctx *c, mlstack__tv *out, const char *fmt, const char *a, size_t an) {
    char tmp[256];
    snprintf(tmp, sizeof tmp, fmt, (int)(an > 100 ? 100 : an), a);
    *out = mlstack__tv_undef(mlstack__tpl_strdup(c, tmp, strlen(tmp)));
    return out->u.s.p ? 0 : -1;
}

/* obj.name as jinja2's sandbox resolves it: Python attribute first, then obj[name]. */
static int mlstack__tpl_getattr(mlstack__tctx *c, const mlstack__tv *v, const char *name, size_t n, mlstack__tv *out, size_t pos) {
    mlstack__tv *f;
    switch (v->t) {
    case MLSTACK__TV_UNDEF:
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s", v->u.s.p ? v->u.s.p : "value is undefined");
    case MLSTACK__TV_DICT:
        if (mlstack__tpl_in_list(mlstack__tpl_dict_methods, name, n)) return mlstack__tpl_method(c, v, name, n, out);
        if (mlstack__tpl_in_list(mlstack__tpl_unsafe_methods, name, n))
            return mlstack__tpl_undef_fmt(c, out, "access to attribute '%.*s' of 'dict' object is unsafe.", name, n);
        f = mlstack__tdict_findn(v->u.d, name, n);
        if (f) {
            *out = *f;
            return 0;
        }
        return mlstack__tpl_undef_fmt(c, out, "'dict object' has no attribute '%.*s'", name, n);
    case MLSTACK__TV_NS:
        f = mlstack__tdict_findn(v->u.d, name, n);
        if (f) {
            *out = *f;
            return 0;
        }
        return mlstack__tpl_undef_fmt(c, out, "'jinja2.utils.Namespace object' has no attribute '%.*s'", name, n);
    case MLSTACK__TV_STR:
        if (mlstack__tpl_in_list(mlstack__tpl_str_methods, name, n)) return mlstack__tpl_method(c, v, name, n, out);
        return mlstack__tpl_undef_fmt(c, out, "'str object' has no attribute '%.*s'", name, n);
    case MLSTACK__TV_LIST:
        if (mlstack__tpl_in_list(mlstack__tpl_unsafe_methods, name, n))
            return mlstack__tpl_undef_fmt(c, out, "access to attribute '%.*s' of 'list' object is unsafe.", name, n);
        if ((n == 5 && !memcmp(name, "index", 5)) || (n == 5 && !memcmp(name, "count", 5)) || (n == 4 && !memcmp(name, "copy", 4)))
            return mlstack__tpl_method(c, v, name, n, out);
        return mlstack__tpl_undef_fmt(c, out, "'list object' has no attribute '%.*s'", name, n);
    case MLSTACK__TV_LOOP: {
        const struct mlstack__tloop *lp = v->u.lp;
        int64_t i0 = (int64_t)lp->i, len = (int64_t)lp->n;
#define MLSTACK__NM(w) (n == sizeof(w) - 1 && memcmp(name, w, sizeof(w) - 1) == 0)
        if (MLSTACK__NM("index")) *out = mlstack__tv_int(i0 + 1);
        else if (MLSTACK__NM("index0")) *out = mlstack__tv_int(i0);
        else if (MLSTACK__NM("revindex")) *out = mlstack__tv_int(len - i0);
        else if (MLSTACK__NM("revindex0")) *out = mlstack__tv_int(len - i0 - 1);
        else if (MLSTACK__NM("first")) *out = mlstack__tv_bool(i0 == 0);
        else if (MLSTACK__NM("last")) *out = mlstack__tv_bool(i0 == len - 1);
        else if (MLSTACK__NM("length")) *out = mlstack__tv_int(len);
        else if (MLSTACK__NM("depth")) *out = mlstack__tv_int(1);
        else if (MLSTACK__NM("depth0")) *out = mlstack__tv_int(0);
        else if (MLSTACK__NM("previtem"))
            *out = i0 > 0 ? lp->items[i0 - 1] : mlstack__tv_undef("there is no previous item");
        else if (MLSTACK__NM("nextitem"))
            *out = i0 + 1 < len ? lp->items[i0 + 1] : mlstack__tv_undef("there is no next item");
        else if (MLSTACK__NM("cycle")) return mlstack__tpl_method(c, v, name, n, out);
        else if (MLSTACK__NM("changed"))
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "loop.changed() is not supported");
        else return mlstack__tpl_undef_fmt(c, out, "'LoopContext object' has no attribute '%.*s'", name, n);
#undef MLSTACK__NM
        return 0;
    }
    case MLSTACK__TV_NONE: return mlstack__tpl_undef_fmt(c, out, "'None' has no attribute '%.*s'", name, n);
    default: return mlstack__tpl_undef_fmt(c, out, "object has no attribute '%.*s'", name, n);
    }
}

/* obj[key]: item first, then (for string keys) the attribute. */
static int mlstack__tpl_getitem(mlstack__tctx *c, const mlstack__tv *v, const mlstack__tv *key, mlstack__tv *out, size_t pos) {
    if (v->t == MLSTACK__TV_UNDEF)
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s", v->u.s.p ? v->u.s.p : "value is undefined");
    if (v->t == MLSTACK__TV_DICT) {
        mlstack__tv *f;
        if ((key->t == MLSTACK__TV_LIST && key->u.l->kind != MLSTACK__TL_TUPLE) || key->t == MLSTACK__TV_DICT)
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "unhashable type: '%s'", mlstack__tv_typename(key));
        f = mlstack__tdict_find(v->u.d, key);
        if (f) {
            *out = *f;
            return 0;
        }
    } else if ((v->t == MLSTACK__TV_LIST && v->u.l->kind != MLSTACK__TL_GEN) || v->t == MLSTACK__TV_STR) {
        if (key->t == MLSTACK__TV_INT || key->t == MLSTACK__TV_BOOL) {
            int64_t i = key->u.i;
            if (v->t == MLSTACK__TV_LIST) {
                int64_t len = (int64_t)v->u.l->n;
                if (i < 0) i += len;
                if (i >= 0 && i < len) {
                    *out = v->u.l->v[i];
                    return 0;
                }
            } else {
                int64_t len = (int64_t)mlstack__tpl_cplen(v->u.s.p, v->u.s.n);
                if (i < 0) i += len;
                if (i >= 0 && i < len) {
                    size_t off = mlstack__tpl_cpoff(v->u.s.p, v->u.s.n, (size_t)i), l;
                    mlstack__tpl_cp(v->u.s.p + off, v->u.s.n - off, &l);
                    *out = mlstack__tv_str(v->u.s.p + off, l);
                    return 0;
                }
            }
            *out = mlstack__tv_undef("index out of range");
            return 0;
        }
    }
    if (key->t == MLSTACK__TV_STR && v->t != MLSTACK__TV_DICT) return mlstack__tpl_getattr(c, v, key->u.s.p, key->u.s.n, out, pos);
    if (key->t == MLSTACK__TV_STR) return mlstack__tpl_undef_fmt(c, out, "'dict object' has no attribute '%.*s'", key->u.s.p, key->u.s.n);
    *out = mlstack__tv_undef("no such item");
    return 0;
}

/* Python slicing of lists, tuples and strings (by code point). */
static int mlstack__tpl_slice(mlstack__tctx *c, const mlstack__tv *v, const mlstack__tv *a, const mlstack__tv *b, const mlstack__tv *st,
                              mlstack__tv *out, size_t pos) {
    int64_t len, step = 1, start, stop, i;
    const mlstack__tv *bounds[3];
    int k;
    size_t *offs = NULL;
    bounds[0] = a;
    bounds[1] = b;
    bounds[2] = st;
    for (k = 0; k < 3; k++)
        if (bounds[k] && bounds[k]->t != MLSTACK__TV_NONE && bounds[k]->t != MLSTACK__TV_INT && bounds[k]->t != MLSTACK__TV_BOOL)
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "slice indices must be integers or None");
    if (v->t == MLSTACK__TV_UNDEF)
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s", v->u.s.p ? v->u.s.p : "value is undefined");
    if (v->t == MLSTACK__TV_STR) {
        size_t i2, l, j = 0;
        len = (int64_t)mlstack__tpl_cplen(v->u.s.p, v->u.s.n);
        offs = (size_t *)mlstack__tpl_alloc(c, ((size_t)len + 1) * sizeof *offs);
        if (!offs) return -1;
        for (i2 = 0; i2 < v->u.s.n; i2 += l) {
            mlstack__tpl_cp(v->u.s.p + i2, v->u.s.n - i2, &l);
            offs[j++] = i2;
        }
        offs[j] = v->u.s.n;
    } else if (v->t == MLSTACK__TV_LIST && (v->u.l->kind == MLSTACK__TL_LIST || v->u.l->kind == MLSTACK__TL_TUPLE)) {
        len = (int64_t)v->u.l->n;
    } else { /* jinja2 slices with plain Python: anything else raises */
        if (v->t == MLSTACK__TV_DICT)
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "unhashable type: 'slice'");
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "'%s' object is not subscriptable", mlstack__tv_typename(v));
    }
    if (st && st->t != MLSTACK__TV_NONE) step = st->u.i;
    if (step == 0) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "slice step cannot be zero");
    if (step == INT64_MIN) step = -INT64_MAX;
    if (!a || a->t == MLSTACK__TV_NONE) start = step < 0 ? len - 1 : 0;
    else {
        start = a->u.i;
        if (start < 0) start = start + len < 0 ? (step < 0 ? -1 : 0) : start + len;
        else if (start >= len) start = step < 0 ? len - 1 : len;
    }
    if (!b || b->t == MLSTACK__TV_NONE) stop = step < 0 ? -1 : len;
    else {
        stop = b->u.i;
        if (stop < 0) stop = stop + len < 0 ? (step < 0 ? -1 : 0) : stop + len;
        else if (stop >= len) stop = step < 0 ? len - 1 : len;
    }
    if (v->t == MLSTACK__TV_STR) {
        mlstack__tbuf buf;
        memset(&buf, 0, sizeof buf);
        if (step == 1) {
            if (stop < start) stop = start;
            *out = mlstack__tv_str(v->u.s.p + offs[start], offs[stop] - offs[start]);
            return 0;
        }
        for (i = start; step > 0 ? i < stop : i > stop; i += step)
            if (mlstack__tbuf_put(c, &buf, v->u.s.p + offs[i], offs[i + 1] - offs[i])) return -1;
        return mlstack__tpl_newstr(c, &buf, out);
    } else {
        mlstack__tlist *l = mlstack__tlist_new(c, v->u.l->kind, 0);
        if (!l) return -1;
        for (i = start; step > 0 ? i < stop : i > stop; i += step)
            if (mlstack__tlist_push(c, l, v->u.l->v[i])) return -1;
        *out = mlstack__tv_list(l);
        return 0;
    }
}

/* Jinja's attribute getter for filters: "a.b.0" walks getitem per part. */
static int mlstack__tpl_attrpath(mlstack__tctx *c, const mlstack__tv *item, const mlstack__tv *path, mlstack__tv *out, size_t pos) {
    size_t i = 0, st;
    mlstack__tv cur = *item;
    if (path->t == MLSTACK__TV_INT) return mlstack__tpl_getitem(c, &cur, path, out, pos);
    if (path->t != MLSTACK__TV_STR) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "attribute must be a string");
    for (;;) {
        mlstack__tv key, nx;
        size_t k;
        int digits = 1;
        st = i;
        while (i < path->u.s.n && path->u.s.p[i] != '.') i++;
        for (k = st; k < i; k++)
            if (path->u.s.p[k] < '0' || path->u.s.p[k] > '9') digits = 0;
        if (digits && i > st && i - st < 18) {
            int64_t x = 0;
            for (k = st; k < i; k++) x = x * 10 + (path->u.s.p[k] - '0');
            key = mlstack__tv_int(x);
        } else {
            key = mlstack__tv_str(path->u.s.p + st, i - st);
        }
        if (mlstack__tpl_getitem(c, &cur, &key, &nx, pos)) return -1;
        cur = nx;
        if (i >= path->u.s.n) break;
        i++;
    }
    *out = cur;
    return 0;
}

/* ---- calls ---- */
enum { MLSTACK__TF_RANGE = 1, MLSTACK__TF_NAMESPACE, MLSTACK__TF_DICT, MLSTACK__TF_RAISE, MLSTACK__TF_STRFTIME };

static int mlstack__tpl_want_str(mlstack__tctx *c, const mlstack__tv *v, const char *what, size_t pos) {
    if (v->t != MLSTACK__TV_STR)
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s: expected a string, got %s", what, mlstack__tv_typename(v));
    return 0;
}
static int mlstack__tpl_want_int(mlstack__tctx *c, const mlstack__tv *v, const char *what, size_t pos) {
    if (v->t != MLSTACK__TV_INT && v->t != MLSTACK__TV_BOOL)
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s: expected an integer, got %s", what, mlstack__tv_typename(v));
    return 0;
}

static int mlstack__tpl_str_method(mlstack__tctx *c, const mlstack__tv *s, const char *m, mlstack__targs *a, mlstack__tv *out,
                                   size_t pos) {
    mlstack__tv x, y;
    char what[64];
    snprintf(what, sizeof what, "str.%s()", m);
#define MLSTACK__M(w) (strcmp(m, w) == 0)
    if (MLSTACK__M("startswith") || MLSTACK__M("endswith")) {
        int ends = m[0] == 'e', hit = 0;
        size_t i, cnt = 1;
        const mlstack__tv *cands;
        if (!mlstack__targ(a, 0, NULL, &x)) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s takes a prefix", what);
        if (mlstack__targs_done(c, a, 1, what, pos)) return -1;
        if (x.t == MLSTACK__TV_LIST && x.u.l->kind == MLSTACK__TL_TUPLE) {
            cands = x.u.l->v;
            cnt = x.u.l->n;
        } else {
            if (mlstack__tpl_want_str(c, &x, what, pos)) return -1;
            cands = &x;
        }
        for (i = 0; i < cnt; i++) {
            const mlstack__tv *p = &cands[i];
            if (mlstack__tpl_want_str(c, p, what, pos)) return -1;
            if (p->u.s.n <= s->u.s.n &&
                memcmp(s->u.s.p + (ends ? s->u.s.n - p->u.s.n : 0), p->u.s.p, p->u.s.n) == 0)
                hit = 1;
        }
        *out = mlstack__tv_bool(hit);
        return 0;
    }
    if (MLSTACK__M("strip") || MLSTACK__M("lstrip") || MLSTACK__M("rstrip")) {
        int has = mlstack__targ(a, 0, "chars", &x);
        if (mlstack__targs_done(c, a, 1, what, pos)) return -1;
        if (has && x.t != MLSTACK__TV_NONE && mlstack__tpl_want_str(c, &x, what, pos)) return -1;
        *out = mlstack__tpl_strip(s, has && x.t == MLSTACK__TV_STR ? &x : NULL, m[0] == 'l' ? 1 : m[0] == 'r' ? 2 : 3);
        return 0;
    }
    if (MLSTACK__M("split") || MLSTACK__M("rsplit")) {
        int has_sep = mlstack__targ(a, 0, "sep", &x), has_max = mlstack__targ(a, 1, "maxsplit", &y);
        if (mlstack__targs_done(c, a, 2, what, pos)) return -1;
        if (has_sep && x.t != MLSTACK__TV_NONE && mlstack__tpl_want_str(c, &x, what, pos)) return -1;
        if (has_max && mlstack__tpl_want_int(c, &y, what, pos)) return -1;
        return mlstack__tpl_split(c, s, has_sep && x.t == MLSTACK__TV_STR ? &x : NULL, has_max ? y.u.i : -1, m[0] == 'r', out, pos);
    }
    if (MLSTACK__M("splitlines")) {
        mlstack__tlist *l;
        if (mlstack__targs_done(c, a, 0, what, pos)) return -1;
        if (!(l = mlstack__tlist_new(c, MLSTACK__TL_LIST, 0)) || mlstack__tpl_splitlines(c, s, l)) return -1;
        *out = mlstack__tv_list(l);
        return 0;
    }
    if (MLSTACK__M("upper") || MLSTACK__M("lower") || MLSTACK__M("title") || MLSTACK__M("capitalize")) {
        if (mlstack__targs_done(c, a, 0, what, pos)) return -1;
        return mlstack__tpl_case_str(c, s, MLSTACK__M("upper") ? 1 : MLSTACK__M("lower") ? 0 : MLSTACK__M("capitalize") ? 2 : 3, out, pos);
    }
    if (MLSTACK__M("replace")) {
        mlstack__tv cnt;
        int has_cnt;
        if (!mlstack__targ(a, 0, NULL, &x) || !mlstack__targ(a, 1, NULL, &y))
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s takes old and new", what);
        has_cnt = mlstack__targ(a, 2, "count", &cnt);
        if (mlstack__targs_done(c, a, 3, what, pos) || mlstack__tpl_want_str(c, &x, what, pos) || mlstack__tpl_want_str(c, &y, what, pos))
            return -1;
        if (has_cnt && mlstack__tpl_want_int(c, &cnt, what, pos)) return -1;
        return mlstack__tpl_replace(c, s, &x, &y, has_cnt ? cnt.u.i : -1, out);
    }
    if (MLSTACK__M("count") || MLSTACK__M("find") || MLSTACK__M("rfind") || MLSTACK__M("index") || MLSTACK__M("rindex")) {
        const char *f;
        if (!mlstack__targ(a, 0, NULL, &x)) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s takes a substring", what);
        if (mlstack__targs_done(c, a, 1, what, pos) || mlstack__tpl_want_str(c, &x, what, pos)) return -1;
        if (MLSTACK__M("count")) {
            int64_t k = 0;
            size_t i = 0;
            if (x.u.s.n == 0) {
                *out = mlstack__tv_int((int64_t)mlstack__tpl_cplen(s->u.s.p, s->u.s.n) + 1);
                return 0;
            }
            while ((f = mlstack__tpl_memmem(s->u.s.p + i, s->u.s.n - i, x.u.s.p, x.u.s.n)) != NULL) {
                k++;
                i = (size_t)(f - s->u.s.p) + x.u.s.n;
            }
            *out = mlstack__tv_int(k);
            return 0;
        }
        f = m[0] == 'r' ? mlstack__tpl_memrmem(s->u.s.p, s->u.s.n, x.u.s.p, x.u.s.n) : mlstack__tpl_memmem(s->u.s.p, s->u.s.n, x.u.s.p, x.u.s.n);
        if (!f && (MLSTACK__M("index") || MLSTACK__M("rindex")))
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "substring not found");
        *out = mlstack__tv_int(f ? (int64_t)mlstack__tpl_cplen(s->u.s.p, (size_t)(f - s->u.s.p)) : -1);
        return 0;
    }
    if (MLSTACK__M("removeprefix") || MLSTACK__M("removesuffix")) {
        int pre = m[6] == 'p';
        if (!mlstack__targ(a, 0, NULL, &x)) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s takes an argument", what);
        if (mlstack__targs_done(c, a, 1, what, pos) || mlstack__tpl_want_str(c, &x, what, pos)) return -1;
        *out = *s;
        if (x.u.s.n <= s->u.s.n && memcmp(s->u.s.p + (pre ? 0 : s->u.s.n - x.u.s.n), x.u.s.p, x.u.s.n) == 0)
            *out = mlstack__tv_str(s->u.s.p + (pre ? x.u.s.n : 0), s->u.s.n - x.u.s.n);
        return 0;
    }
    if (MLSTACK__M("join")) {
        mlstack__tv *items;
        size_t n, i;
        mlstack__tbuf b;
        memset(&b, 0, sizeof b);
        if (!mlstack__targ(a, 0, NULL, &x)) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s takes an iterable", what);
        if (mlstack__targs_done(c, a, 1, what, pos) || mlstack__tv_iter(c, &x, &items, &n, pos)) return -1;
        for (i = 0; i < n; i++) {
            if (items[i].t != MLSTACK__TV_STR)
                return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "sequence item %zu: expected str instance, %s found", i,
                                         mlstack__tv_typename(&items[i]));
            if ((i && mlstack__tbuf_put(c, &b, s->u.s.p, s->u.s.n)) || mlstack__tbuf_put(c, &b, items[i].u.s.p, items[i].u.s.n)) return -1;
        }
        return mlstack__tpl_newstr(c, &b, out);
    }
    if (MLSTACK__M("isdigit") || MLSTACK__M("isalpha") || MLSTACK__M("isalnum") || MLSTACK__M("isspace") || MLSTACK__M("islower") ||
        MLSTACK__M("isupper")) {
        size_t i, l;
        int ok = s->u.s.n > 0, cased = 0;
        if (mlstack__targs_done(c, a, 0, what, pos)) return -1;
        for (i = 0; i < s->u.s.n; i += l) {
            uint32_t cp = mlstack__tpl_cp(s->u.s.p + i, s->u.s.n - i, &l), u, lo;
            int dig = cp >= '0' && cp <= '9', alpha = (cp | 32) >= 'a' && (cp | 32) <= 'z';
            if (cp >= 0x80 && !MLSTACK__M("isspace"))
                return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "%s on non-ASCII text is not supported", what);
            if (MLSTACK__M("isdigit")) ok &= dig;
            else if (MLSTACK__M("isalpha")) ok &= alpha;
            else if (MLSTACK__M("isalnum")) ok &= alpha || dig;
            else if (MLSTACK__M("isspace")) ok &= mlstack__tpl_isspace(cp);
            else {
                mlstack__tpl_case(cp, 1, &u);
                mlstack__tpl_case(cp, 0, &lo);
                if (u != lo) {
                    cased = 1;
                    if (MLSTACK__M("islower") ? cp != lo : cp != u) ok = 0;
                }
            }
        }
        if (MLSTACK__M("islower") || MLSTACK__M("isupper")) ok = ok && cased;
        *out = mlstack__tv_bool(ok);
        return 0;
    }
#undef MLSTACK__M
    return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "%s is not supported", what);
}

static int mlstack__tpl_call(mlstack__tctx *c, const mlstack__tv *f, mlstack__targs *a, mlstack__tv *out, size_t pos);

static int mlstack__tpl_call_method(mlstack__tctx *c, const struct mlstack__tmethod *m, mlstack__targs *a, mlstack__tv *out,
                                    size_t pos) {
    const mlstack__tv *self = &m->self;
    mlstack__tv x, y;
    if (self->t == MLSTACK__TV_STR) return mlstack__tpl_str_method(c, self, m->name, a, out, pos);
    if (self->t == MLSTACK__TV_DICT) {
        mlstack__tdict *d = self->u.d;
        if (!strcmp(m->name, "get")) {
            mlstack__tv *f;
            if (!mlstack__targ(a, 0, NULL, &x)) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "dict.get() takes a key");
            if (!mlstack__targ(a, 1, NULL, &y)) y = mlstack__tv_none();
            if (mlstack__targs_done(c, a, 2, "dict.get()", pos)) return -1;
            f = mlstack__tdict_find(d, &x);
            *out = f ? *f : y;
            return 0;
        }
        if (!strcmp(m->name, "items") || !strcmp(m->name, "keys") || !strcmp(m->name, "values")) {
            int kind = m->name[0] == 'i' ? MLSTACK__TL_ITEMS : m->name[0] == 'k' ? MLSTACK__TL_KEYS : MLSTACK__TL_VALUES;
            mlstack__tlist *l = mlstack__tlist_new(c, kind, d->n);
            size_t i;
            if (!l || mlstack__targs_done(c, a, 0, "dict view", pos)) return -1;
            for (i = 0; i < d->n; i++) {
                if (kind == MLSTACK__TL_ITEMS) {
                    mlstack__tlist *pair = mlstack__tlist_new(c, MLSTACK__TL_TUPLE, 2);
                    if (!pair) return -1;
                    pair->v[0] = d->k[i];
                    pair->v[1] = d->v[i];
                    pair->n = 2;
                    l->v[i] = mlstack__tv_list(pair);
                } else {
                    l->v[i] = kind == MLSTACK__TL_KEYS ? d->k[i] : d->v[i];
                }
            }
            l->n = d->n;
            *out = mlstack__tv_list(l);
            return 0;
        }
    }
    if (self->t == MLSTACK__TV_LOOP && !strcmp(m->name, "cycle")) {
        if (a->np == 0) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "no items for cycling given");
        *out = a->p[self->u.lp->i % (size_t)a->np];
        return 0;
    }
    if (self->t == MLSTACK__TV_LIST && (!strcmp(m->name, "index") || !strcmp(m->name, "count"))) {
        size_t i, k = 0;
        if (!mlstack__targ(a, 0, NULL, &x) || mlstack__targs_done(c, a, 1, "list method", pos))
            return c->rc ? -1 : mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "list.%s() takes one argument", m->name);
        for (i = 0; i < self->u.l->n; i++)
            if (mlstack__tv_eq(&self->u.l->v[i], &x, 0)) {
                if (m->name[0] == 'i') {
                    *out = mlstack__tv_int((int64_t)i);
                    return 0;
                }
                k++;
            }
        if (m->name[0] == 'i') return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "value is not in list");
        *out = mlstack__tv_int((int64_t)k);
        return 0;
    }
    return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "%s.%s() is not supported", mlstack__tv_typename(self), m->name);
}

static int mlstack__tpl_call_macro(mlstack__tctx *c, const struct mlstack__tmacro *m, mlstack__targs *a, mlstack__tv *out, size_t pos) {
    const mlstack__tn *node = m->node, *p;
    mlstack__tscope *s = mlstack__tscope_new(c, m->closure);
    mlstack__tbuf buf, *saved;
    int np = 0, k, r;
    if (!s) return -1;
    for (p = node->b; p; p = p->next) np++;
    if (a->np > np)
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "macro '%.*s' takes not more than %d argument(s)", (int)node->n, node->s, np);
    for (k = 0; k < a->nk; k++) {
        int found = 0, idx = 0;
        for (p = node->b; p; p = p->next, idx++)
            if (p->n == a->kl[k] && memcmp(p->s, a->kn[k], p->n) == 0) found = idx >= a->np;
        if (!found)
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "macro '%.*s' takes no keyword argument '%.*s'", (int)node->n, node->s,
                                     (int)a->kl[k], a->kn[k]);
    }
    for (p = node->b, k = 0; p; p = p->next, k++) {
        mlstack__tv v;
        if (!mlstack__targ(a, k, NULL, &v) && !mlstack__targ(a, -1, p->s[0] ? mlstack__tpl_strdup(c, p->s, p->n) : "", &v)) {
            if (p->a) {
                if (mlstack__tpl_eval(c, s, p->a, &v)) return -1;
            } else {
                if (mlstack__tpl_undef_fmt(c, &v, "parameter '%.*s' was not provided", p->s, p->n)) return -1;
            }
        }
        if (mlstack__tscope_set(c, s, p->s, p->n, v)) return -1;
    }
    memset(&buf, 0, sizeof buf);
    saved = c->out;
    c->out = &buf;
    r = mlstack__tpl_exec(c, s, node->c);
    c->out = saved;
    if (r < 0) return -1;
    return mlstack__tpl_newstr(c, &buf, out);
}

static int mlstack__tpl_call(mlstack__tctx *c, const mlstack__tv *f, mlstack__targs *a, mlstack__tv *out, size_t pos) {
    mlstack__tv x, y, z;
    switch (f->t) {
    case MLSTACK__TV_MACRO: return mlstack__tpl_call_macro(c, f->u.m, a, out, pos);
    case MLSTACK__TV_METHOD: return mlstack__tpl_call_method(c, f->u.b, a, out, pos);
    case MLSTACK__TV_UNDEF:
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s", f->u.s.p ? f->u.s.p : "value is undefined");
    case MLSTACK__TV_FUNC: break;
    default: return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "'%s' object is not callable", mlstack__tv_typename(f));
    }
    switch ((int)f->u.i) {
    case MLSTACK__TF_RANGE: {
        int64_t start = 0, stop, step = 1, n, i;
        mlstack__tlist *l;
        if (a->nk) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "range() takes no keyword arguments");
        if (a->np < 1 || a->np > 3) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "range expected 1 to 3 arguments");
        for (i = 0; i < a->np; i++)
            if (mlstack__tpl_want_int(c, &a->p[i], "range()", pos)) return -1;
        if (a->np == 1) stop = a->p[0].u.i;
        else {
            start = a->p[0].u.i;
            stop = a->p[1].u.i;
            if (a->np == 3) step = a->p[2].u.i;
        }
        if (step == 0) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "range() arg 3 must not be zero");
        if (step > 0) n = stop > start ? (int64_t)(((uint64_t)stop - (uint64_t)start - 1) / (uint64_t)step + 1) : 0;
        else n = start > stop ? (int64_t)(((uint64_t)start - (uint64_t)stop - 1) / ((uint64_t)0 - (uint64_t)step) + 1) : 0;
        if (n < 0 || n > MLSTACK__TPL_MAX_RANGE)
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_LIMIT, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (%d).",
                                     MLSTACK__TPL_MAX_RANGE);
        if (!(l = mlstack__tlist_new(c, MLSTACK__TL_RANGE, (size_t)n))) return -1;
        for (i = 0; i < n; i++) l->v[i] = mlstack__tv_int(start + i * step);
        l->n = (size_t)n;
        *out = mlstack__tv_list(l);
        return 0;
    }
    case MLSTACK__TF_NAMESPACE:
    case MLSTACK__TF_DICT: {
        mlstack__tdict *d = mlstack__tdict_new(c);
        int k;
        if (!d) return -1;
        if (a->np > 1) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "expected at most 1 positional argument");
        if (a->np == 1) {
            mlstack__tv *items;
            size_t n, i;
            if (a->p[0].t == MLSTACK__TV_DICT || a->p[0].t == MLSTACK__TV_NS) {
                for (i = 0; i < a->p[0].u.d->n; i++)
                    if (mlstack__tdict_set(c, d, a->p[0].u.d->k[i], a->p[0].u.d->v[i])) return -1;
            } else {
                if (mlstack__tv_iter(c, &a->p[0], &items, &n, pos)) return -1;
                for (i = 0; i < n; i++) {
                    if (items[i].t != MLSTACK__TV_LIST || items[i].u.l->n != 2)
                        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "dictionary update sequence element has wrong length");
                    if (mlstack__tdict_set(c, d, items[i].u.l->v[0], items[i].u.l->v[1])) return -1;
                }
            }
        }
        for (k = 0; k < a->nk; k++) {
            if (f->u.i == MLSTACK__TF_NAMESPACE && a->kl[k] && a->kn[k][0] == '_')
                return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "namespace attributes may not start with '_'");
            if (mlstack__tdict_set(c, d, mlstack__tv_str(a->kn[k], a->kl[k]), a->kv[k])) return -1;
        }
        *out = mlstack__tv_dict(d, f->u.i == MLSTACK__TF_NAMESPACE ? MLSTACK__TV_NS : MLSTACK__TV_DICT);
        return 0;
    }
    case MLSTACK__TF_RAISE: {
        mlstack__tbuf b;
        memset(&b, 0, sizeof b);
        if (!mlstack__targ(a, 0, "message", &x)) x = mlstack__tv_cstr("");
        if (mlstack__tv_print(c, &b, &x, pos) || mlstack__tbuf_put(c, &b, "", 0)) return -1;
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "raise_exception: %s", b.p);
    }
    case MLSTACK__TF_STRFTIME: {
        char fmt[256], res[512];
        time_t t = c->now ? (time_t)c->now : time(NULL);
        struct tm tmv, *tp;
        size_t k;
        if (!mlstack__targ(a, 0, "format", &x) || mlstack__tpl_want_str(c, &x, "strftime_now()", pos)) return c->rc ? -1 : mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "strftime_now() takes a format");
        if (x.u.s.n >= sizeof fmt) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_LIMIT, "strftime_now(): format too long");
        for (k = 0; k < x.u.s.n; k++) /* Python-only directives would silently differ */
            if (x.u.s.p[k] == '%' && k + 1 < x.u.s.n && (x.u.s.p[k + 1] == 'f' || x.u.s.p[k + 1] == '-' || x.u.s.p[k + 1] == ':'))
                return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "strftime_now(): directive %%%c is not supported", x.u.s.p[k + 1]);
            else if (x.u.s.p[k] == '%')
                k++;
        memcpy(fmt, x.u.s.p, x.u.s.n);
        fmt[x.u.s.n] = 0;
#if defined(_WIN32)
        tp = localtime(&t);
        if (tp) tmv = *tp;
#else
        tp = localtime_r(&t, &tmv);
#endif
        if (!tp) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "strftime_now(): no local time");
        k = x.u.s.n ? strftime(res, sizeof res, fmt, &tmv) : 0;
        (void)y;
        (void)z;
        *out = mlstack__tv_str(mlstack__tpl_strdup(c, res, k), k);
        return out->u.s.p ? 0 : -1;
    }
    default: return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "unknown function");
    }
}

/* ---- tests ---- */
static int mlstack__tpl_test(mlstack__tctx *c, const char *name, size_t nlen, const mlstack__tv *v, mlstack__targs *a, int *res,
                             size_t pos) {
    mlstack__tv x;
    char nm[32];
    int has = mlstack__targ(a, 0, NULL, &x);
    if (nlen >= sizeof nm) nlen = sizeof nm - 1;
    memcpy(nm, name, nlen);
    nm[nlen] = 0;
#define MLSTACK__T(w) (strcmp(nm, w) == 0)
    if (MLSTACK__T("defined")) *res = v->t != MLSTACK__TV_UNDEF;
    else if (MLSTACK__T("undefined")) *res = v->t == MLSTACK__TV_UNDEF;
    else if (MLSTACK__T("none")) *res = v->t == MLSTACK__TV_NONE;
    else if (MLSTACK__T("boolean")) *res = v->t == MLSTACK__TV_BOOL;
    else if (MLSTACK__T("true")) *res = v->t == MLSTACK__TV_BOOL && v->u.i;
    else if (MLSTACK__T("false")) *res = v->t == MLSTACK__TV_BOOL && !v->u.i;
    else if (MLSTACK__T("integer")) *res = v->t == MLSTACK__TV_INT;
    else if (MLSTACK__T("float")) *res = v->t == MLSTACK__TV_FLOAT;
    else if (MLSTACK__T("number")) *res = mlstack__tv_is_num(v);
    else if (MLSTACK__T("string")) *res = v->t == MLSTACK__TV_STR;
    else if (MLSTACK__T("mapping")) *res = v->t == MLSTACK__TV_DICT;
    else if (MLSTACK__T("iterable")) *res = v->t == MLSTACK__TV_STR || v->t == MLSTACK__TV_LIST || v->t == MLSTACK__TV_DICT || v->t == MLSTACK__TV_UNDEF;
    else if (MLSTACK__T("sequence"))
        *res = v->t == MLSTACK__TV_STR || (v->t == MLSTACK__TV_LIST && v->u.l->kind != MLSTACK__TL_GEN && v->u.l->kind < MLSTACK__TL_ITEMS) ||
               v->t == MLSTACK__TV_DICT || v->t == MLSTACK__TV_UNDEF;
    else if (MLSTACK__T("callable")) *res = v->t == MLSTACK__TV_MACRO || v->t == MLSTACK__TV_FUNC || v->t == MLSTACK__TV_METHOD;
    else if (MLSTACK__T("lower") || MLSTACK__T("upper")) {
        size_t i, l;
        int cased = 0, ok = 1;
        if (v->t != MLSTACK__TV_STR) {
            mlstack__tbuf b;
            memset(&b, 0, sizeof b);
            if (mlstack__tv_print(c, &b, v, pos) || mlstack__tpl_newstr(c, &b, &x)) return -1;
        } else {
            x = *v;
        }
        for (i = 0; i < x.u.s.n; i += l) {
            uint32_t cp = mlstack__tpl_cp(x.u.s.p + i, x.u.s.n - i, &l), u, lo;
            if (mlstack__tpl_case(cp, 1, &u) || mlstack__tpl_case(cp, 0, &lo))
                return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "case test on U+%04X is not supported", (unsigned)cp);
            if (u != lo) {
                cased = 1;
                if (nm[0] == 'l' ? cp != lo : cp != u) ok = 0;
            }
        }
        *res = ok && cased;
    } else if (MLSTACK__T("odd") || MLSTACK__T("even") || MLSTACK__T("divisibleby")) {
        mlstack__tv r, d = MLSTACK__T("divisibleby") ? x : mlstack__tv_int(2);
        if (MLSTACK__T("divisibleby") && !has) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "divisibleby needs a number");
        if (!mlstack__tv_is_num(v) || !mlstack__tv_is_num(&d))
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "test '%s' needs numbers, got %s", nm, mlstack__tv_typename(v));
        if (mlstack__tpl_binop(c, MLSTACK__OP_MOD, v, &d, &r, pos)) return -1;
        *res = MLSTACK__T("odd") ? mlstack__tv_num(&r) == 1 : mlstack__tv_num(&r) == 0;
    } else if (MLSTACK__T("sameas")) {
        if (!has) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "sameas needs a value");
        if (v->t != x.t) *res = 0;
        else if (v->t == MLSTACK__TV_NONE || v->t == MLSTACK__TV_BOOL) *res = mlstack__tv_eq(v, &x, 0);
        else if (v->t == MLSTACK__TV_INT && v->u.i >= -5 && v->u.i <= 256) *res = v->u.i == x.u.i; /* CPython's cached ints */
        else if (v->t == MLSTACK__TV_LIST) *res = v->u.l == x.u.l;
        else if (v->t == MLSTACK__TV_DICT || v->t == MLSTACK__TV_NS) *res = v->u.d == x.u.d;
        else return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "'sameas' on %s values depends on Python object identity", mlstack__tv_typename(v));
    } else if (MLSTACK__T("in")) {
        if (!has) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "test 'in' needs a container");
        if (mlstack__tpl_contains(c, v, &x, res, pos)) return -1;
    } else {
        int op;
        if (!has) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "test '%s' needs a value to compare with", nm);
        if (MLSTACK__T("==") || MLSTACK__T("eq") || MLSTACK__T("equalto")) op = MLSTACK__OP_EQ;
        else if (MLSTACK__T("!=") || MLSTACK__T("ne")) op = MLSTACK__OP_NE;
        else if (MLSTACK__T("<") || MLSTACK__T("lt") || MLSTACK__T("lessthan")) op = MLSTACK__OP_LT;
        else if (MLSTACK__T("<=") || MLSTACK__T("le")) op = MLSTACK__OP_LE;
        else if (MLSTACK__T(">") || MLSTACK__T("gt") || MLSTACK__T("greaterthan")) op = MLSTACK__OP_GT;
        else if (MLSTACK__T(">=") || MLSTACK__T("ge")) op = MLSTACK__OP_GE;
        else return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "test '%s' is not supported", nm);
        if (op == MLSTACK__OP_EQ || op == MLSTACK__OP_NE) *res = mlstack__tv_eq(v, &x, 0) == (op == MLSTACK__OP_EQ);
        else if (mlstack__tpl_order(c, op, v, &x, res, pos)) return -1;
    }
#undef MLSTACK__T
    return 0;
}

/* ---- filters ---- */
static int mlstack__tpl_to_str(mlstack__tctx *c, const mlstack__tv *v, mlstack__tv *out, size_t pos) {
    mlstack__tbuf b;
    if (v->t == MLSTACK__TV_STR) {
        *out = *v;
        return 0;
    }
    memset(&b, 0, sizeof b);
    if (mlstack__tv_print(c, &b, v, pos)) return -1;
    return mlstack__tpl_newstr(c, &b, out);
}

/* select/reject/selectattr/rejectattr: args from index `first` are (test name, test args...) */
static int mlstack__tpl_select(mlstack__tctx *c, const mlstack__tv *seq, mlstack__targs *a, int by_attr, int keep, mlstack__tv *out,
                               size_t pos) {
    mlstack__tv *items, attr, tname;
    size_t n, i;
    int first = by_attr ? 1 : 0, k;
    mlstack__tlist *l;
    mlstack__targs ta;
    if (by_attr && (a->np < 1 || a->p[0].t != MLSTACK__TV_STR))
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "selectattr/rejectattr need an attribute name");
    if (a->nk) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "keyword arguments to select filters are not supported");
    attr = by_attr ? a->p[0] : mlstack__tv_none();
    tname = mlstack__tv_none();
    if (a->np > first) {
        tname = a->p[first];
        if (tname.t != MLSTACK__TV_STR) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "test name must be a string");
        if (!mlstack__tpl_in_list(mlstack__tpl_tests, tname.u.s.p, tname.u.s.n))
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "test '%.*s' is not supported", (int)tname.u.s.n, tname.u.s.p);
    }
    memset(&ta, 0, sizeof ta);
    for (k = first + 1; k < a->np; k++) ta.p[ta.np++] = a->p[k];
    if (!mlstack__tv_truthy(seq)) { /* jinja2: `if value:` before iterating */
        items = NULL;
        n = 0;
    } else if (mlstack__tv_iter(c, seq, &items, &n, pos)) {
        return -1;
    }
    if (!(l = mlstack__tlist_new(c, MLSTACK__TL_GEN, 0))) return -1;
    for (i = 0; i < n; i++) {
        mlstack__tv val = items[i];
        int r;
        if (by_attr && mlstack__tpl_attrpath(c, &items[i], &attr, &val, pos)) return -1;
        if (a->np > first) {
            if (mlstack__tpl_test(c, tname.u.s.p, tname.u.s.n, &val, &ta, &r, pos)) return -1;
        } else {
            r = mlstack__tv_truthy(&val);
        }
        if ((r != 0) == keep && mlstack__tlist_push(c, l, items[i])) return -1;
    }
    *out = mlstack__tv_list(l);
    return 0;
}

/* Python int(str): optional sign, digits with single underscores, surrounding whitespace. */
static int mlstack__tpl_parse_int(const char *s, size_t n, int64_t *out) {
    size_t i = 0;
    int neg = 0, nd = 0;
    uint64_t v = 0;
    while (i < n && mlstack__tpl_isspace((unsigned char)s[i])) i++;
    while (n > i && mlstack__tpl_isspace((unsigned char)s[n - 1])) n--;
    if (i < n && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    for (; i < n; i++) {
        if (s[i] == '_' && nd && i + 1 < n && s[i + 1] != '_') continue;
        if (s[i] < '0' || s[i] > '9') return -1;
        if (v > (UINT64_MAX - 9) / 10) return -1;
        v = v * 10 + (uint64_t)(s[i] - '0');
        nd++;
    }
    if (!nd || v > (uint64_t)INT64_MAX) return -1;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}
static int mlstack__tpl_parse_float(const char *s, size_t n, double *out) {
    char buf[128], *end;
    size_t i = 0, k = 0;
    while (i < n && mlstack__tpl_isspace((unsigned char)s[i])) i++;
    while (n > i && mlstack__tpl_isspace((unsigned char)s[n - 1])) n--;
    if (n - i == 0 || n - i >= sizeof buf) return -1;
    for (; i < n; i++) {
        if (s[i] == '_') continue;
        if (!strchr("0123456789+-.eEinfatyINFATY", s[i])) return -1;
        buf[k++] = s[i];
    }
    buf[k] = 0;
    *out = strtod(buf, &end);
    return *end ? -1 : 0;
}

static int mlstack__tpl_filter(mlstack__tctx *c, const char *name, size_t nlen, const mlstack__tv *v, mlstack__targs *a, mlstack__tv *out,
                               size_t pos) {
    mlstack__tv x, y, z;
    char nm[32], what[48];
    if (nlen >= sizeof nm) nlen = sizeof nm - 1;
    memcpy(nm, name, nlen);
    nm[nlen] = 0;
    snprintf(what, sizeof what, "filter '%s'", nm);
#define MLSTACK__F(w) (strcmp(nm, w) == 0)
    if (MLSTACK__F("default") || MLSTACK__F("d")) {
        int boolean = 0;
        if (!mlstack__targ(a, 0, "default_value", &x)) x = mlstack__tv_cstr("");
        if (mlstack__targ(a, 1, "boolean", &y)) boolean = mlstack__tv_truthy(&y);
        if (mlstack__targs_done(c, a, 2, what, pos)) return -1;
        *out = (v->t == MLSTACK__TV_UNDEF || (boolean && !mlstack__tv_truthy(v))) ? x : *v;
        return 0;
    }
    if (MLSTACK__F("length") || MLSTACK__F("count")) {
        if (mlstack__targs_done(c, a, 0, what, pos)) return -1;
        switch (v->t) {
        case MLSTACK__TV_STR: *out = mlstack__tv_int((int64_t)mlstack__tpl_cplen(v->u.s.p, v->u.s.n)); return 0;
        case MLSTACK__TV_LIST:
            if (v->u.l->kind == MLSTACK__TL_GEN) break;
            *out = mlstack__tv_int((int64_t)v->u.l->n);
            return 0;
        case MLSTACK__TV_DICT: *out = mlstack__tv_int((int64_t)v->u.d->n); return 0;
        case MLSTACK__TV_UNDEF: *out = mlstack__tv_int(0); return 0;
        default: break;
        }
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "object of type '%s' has no len()", mlstack__tv_typename(v));
    }
    if (MLSTACK__F("tojson")) {
        mlstack__tjson_opt o;
        mlstack__tbuf b;
        char spaces[64];
        memset(&o, 0, sizeof o);
        memset(&b, 0, sizeof b);
        if (mlstack__targ(a, 0, "ensure_ascii", &x)) o.ensure_ascii = mlstack__tv_truthy(&x);
        if (mlstack__targ(a, 1, "indent", &x) && x.t != MLSTACK__TV_NONE) {
            if (x.t == MLSTACK__TV_STR) {
                o.indent = x.u.s.p;
                o.indent_n = x.u.s.n;
            } else if (x.t == MLSTACK__TV_INT || x.t == MLSTACK__TV_BOOL) {
                int64_t k = x.u.i < 0 ? 0 : x.u.i;
                if (k > 63) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "tojson indent above 63");
                memset(spaces, ' ', (size_t)k);
                o.indent = spaces;
                o.indent_n = (size_t)k;
            } else {
                return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "tojson: bad indent");
            }
        }
        o.item_sep = o.indent ? "," : ", ";
        o.key_sep = ": ";
        if (mlstack__targ(a, 2, "separators", &x) && x.t != MLSTACK__TV_NONE) {
            if (x.t != MLSTACK__TV_LIST || x.u.l->n != 2 || x.u.l->v[0].t != MLSTACK__TV_STR || x.u.l->v[1].t != MLSTACK__TV_STR)
                return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "tojson: separators must be two strings");
            o.item_sep = x.u.l->v[0].u.s.p;
            o.item_sep_n = x.u.l->v[0].u.s.n;
            o.key_sep = x.u.l->v[1].u.s.p;
            o.key_sep_n = x.u.l->v[1].u.s.n;
        } else {
            o.item_sep_n = strlen(o.item_sep);
            o.key_sep_n = 2;
        }
        if (mlstack__targ(a, 3, "sort_keys", &x)) o.sort_keys = mlstack__tv_truthy(&x);
        if (mlstack__targs_done(c, a, 4, what, pos)) return -1;
        if (mlstack__tpl_json(c, &b, v, &o, 0, pos)) return -1;
        return mlstack__tpl_newstr(c, &b, out);
    }
    if (MLSTACK__F("trim")) {
        int has = mlstack__targ(a, 0, "chars", &x);
        if (mlstack__targs_done(c, a, 1, what, pos) || mlstack__tpl_to_str(c, v, &y, pos)) return -1;
        if (has && x.t != MLSTACK__TV_NONE && mlstack__tpl_want_str(c, &x, what, pos)) return -1;
        *out = mlstack__tpl_strip(&y, has && x.t == MLSTACK__TV_STR ? &x : NULL, 3);
        return 0;
    }
    if (MLSTACK__F("upper") || MLSTACK__F("lower") || MLSTACK__F("capitalize") || MLSTACK__F("title")) {
        if (mlstack__targs_done(c, a, 0, what, pos) || mlstack__tpl_to_str(c, v, &y, pos)) return -1;
        return mlstack__tpl_case_str(c, &y, MLSTACK__F("upper") ? 1 : MLSTACK__F("lower") ? 0 : MLSTACK__F("capitalize") ? 2 : 4, out, pos);
    }
    if (MLSTACK__F("string") || MLSTACK__F("safe")) {
        if (mlstack__targs_done(c, a, 0, what, pos)) return -1;
        return mlstack__tpl_to_str(c, v, out, pos);
    }
    if (MLSTACK__F("e") || MLSTACK__F("escape")) {
        mlstack__tbuf b;
        size_t i;
        memset(&b, 0, sizeof b);
        if (mlstack__targs_done(c, a, 0, what, pos) || mlstack__tpl_to_str(c, v, &y, pos)) return -1;
        for (i = 0; i < y.u.s.n; i++) {
            const char *r = NULL;
            switch (y.u.s.p[i]) {
            case '&': r = "&amp;"; break;
            case '<': r = "&lt;"; break;
            case '>': r = "&gt;"; break;
            case '"': r = "&#34;"; break;
            case '\'': r = "&#39;"; break;
            default: break;
            }
            if (r ? mlstack__tbuf_puts(c, &b, r) : mlstack__tbuf_put(c, &b, y.u.s.p + i, 1)) return -1;
        }
        return mlstack__tpl_newstr(c, &b, out);
    }
    if (MLSTACK__F("replace")) {
        int has_cnt;
        if (!mlstack__targ(a, 0, "old", &x) || !mlstack__targ(a, 1, "new", &y))
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "replace needs old and new");
        has_cnt = mlstack__targ(a, 2, "count", &z);
        if (mlstack__targs_done(c, a, 3, what, pos)) return -1;
        if (has_cnt && z.t != MLSTACK__TV_NONE && mlstack__tpl_want_int(c, &z, what, pos)) return -1;
        {
            mlstack__tv s, o, nw;
            if (mlstack__tpl_to_str(c, v, &s, pos) || mlstack__tpl_to_str(c, &x, &o, pos) || mlstack__tpl_to_str(c, &y, &nw, pos)) return -1;
            return mlstack__tpl_replace(c, &s, &o, &nw, (has_cnt && z.t != MLSTACK__TV_NONE && z.u.i) ? z.u.i : -1, out);
        }
    }
    if (MLSTACK__F("join")) {
        mlstack__tv *items, sep;
        size_t n, i;
        int has_attr;
        mlstack__tbuf b;
        memset(&b, 0, sizeof b);
        if (!mlstack__targ(a, 0, "d", &sep)) sep = mlstack__tv_cstr("");
        has_attr = mlstack__targ(a, 1, "attribute", &x);
        if (mlstack__targs_done(c, a, 2, what, pos) || mlstack__tpl_to_str(c, &sep, &sep, pos)) return -1;
        if (mlstack__tv_iter(c, v, &items, &n, pos)) return -1;
        if (mlstack__tbuf_put(c, &b, "", 0)) return -1;
        for (i = 0; i < n; i++) {
            mlstack__tv it = items[i];
            if (has_attr && x.t != MLSTACK__TV_NONE && mlstack__tpl_attrpath(c, &items[i], &x, &it, pos)) return -1;
            if ((i && mlstack__tbuf_put(c, &b, sep.u.s.p, sep.u.s.n)) || mlstack__tv_print(c, &b, &it, pos)) return -1;
        }
        return mlstack__tpl_newstr(c, &b, out);
    }
    if (MLSTACK__F("first") || MLSTACK__F("last")) {
        mlstack__tv *items;
        size_t n;
        if (mlstack__targs_done(c, a, 0, what, pos)) return -1;
        if (MLSTACK__F("first") && v->t == MLSTACK__TV_LIST && v->u.l->kind == MLSTACK__TL_GEN) {
            mlstack__tlist *l = v->u.l;
            *out = l->start < l->n ? l->v[l->start++] : mlstack__tv_undef("No first item, sequence was empty.");
            return 0;
        }
        if (MLSTACK__F("last") && (v->t == MLSTACK__TV_UNDEF || (v->t == MLSTACK__TV_LIST && v->u.l->kind == MLSTACK__TL_GEN)))
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "'%s' object is not reversible", mlstack__tv_typename(v));
        if (mlstack__tv_iter(c, v, &items, &n, pos)) return -1;
        *out = n ? items[MLSTACK__F("first") ? 0 : n - 1] : mlstack__tv_undef(MLSTACK__F("first") ? "No first item, sequence was empty." : "No last item, sequence was empty.");
        return 0;
    }
    if (MLSTACK__F("list")) {
        mlstack__tv *items;
        size_t n;
        mlstack__tlist *l;
        if (mlstack__targs_done(c, a, 0, what, pos) || mlstack__tv_iter(c, v, &items, &n, pos)) return -1;
        if (!(l = mlstack__tlist_new(c, MLSTACK__TL_LIST, n))) return -1;
        if (n) memcpy(l->v, items, n * sizeof *items);
        l->n = n;
        *out = mlstack__tv_list(l);
        return 0;
    }
    if (MLSTACK__F("reverse")) {
        mlstack__tv *items;
        size_t n, i;
        mlstack__tlist *l;
        if (mlstack__targs_done(c, a, 0, what, pos)) return -1;
        if (v->t == MLSTACK__TV_STR) {
            mlstack__tv none = mlstack__tv_none(), m1 = mlstack__tv_int(-1);
            return mlstack__tpl_slice(c, v, &none, &none, &m1, out, pos);
        }
        if (mlstack__tv_iter(c, v, &items, &n, pos)) return -1;
        if (!(l = mlstack__tlist_new(c, MLSTACK__TL_GEN, n))) return -1;
        for (i = 0; i < n; i++) l->v[i] = items[n - 1 - i];
        l->n = n;
        *out = mlstack__tv_list(l);
        return 0;
    }
    if (MLSTACK__F("items")) {
        mlstack__tlist *l;
        size_t i;
        if (mlstack__targs_done(c, a, 0, what, pos)) return -1;
        if (!(l = mlstack__tlist_new(c, MLSTACK__TL_GEN, 0))) return -1;
        if (v->t != MLSTACK__TV_UNDEF) {
            if (v->t != MLSTACK__TV_DICT)
                return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "Can only get item pairs from a mapping.");
            for (i = 0; i < v->u.d->n; i++) {
                mlstack__tlist *pair = mlstack__tlist_new(c, MLSTACK__TL_TUPLE, 2);
                if (!pair) return -1;
                pair->v[0] = v->u.d->k[i];
                pair->v[1] = v->u.d->v[i];
                pair->n = 2;
                if (mlstack__tlist_push(c, l, mlstack__tv_list(pair))) return -1;
            }
        }
        *out = mlstack__tv_list(l);
        return 0;
    }
    if (MLSTACK__F("map")) {
        mlstack__tv *items;
        size_t n, i;
        mlstack__tlist *l;
        int has_def;
        if (!(l = mlstack__tlist_new(c, MLSTACK__TL_GEN, 0))) return -1;
        if (!mlstack__tv_truthy(v)) { /* jinja2: `if value:` before iterating */
            *out = mlstack__tv_list(l);
            return 0;
        }
        if (a->np == 0 && mlstack__targ(a, -1, "attribute", &x)) {
            has_def = mlstack__targ(a, -1, "default", &y);
            if (mlstack__targs_done(c, a, 0, what, pos) || mlstack__tv_iter(c, v, &items, &n, pos)) return -1;
            for (i = 0; i < n; i++) {
                mlstack__tv r;
                if (mlstack__tpl_attrpath(c, &items[i], &x, &r, pos)) return -1;
                if (has_def && r.t == MLSTACK__TV_UNDEF) r = y;
                if (mlstack__tlist_push(c, l, r)) return -1;
            }
        } else if (a->np >= 1 && a->p[0].t == MLSTACK__TV_STR) {
            mlstack__targs fa;
            int k;
            memset(&fa, 0, sizeof fa);
            for (k = 1; k < a->np; k++) fa.p[fa.np++] = a->p[k];
            for (k = 0; k < a->nk; k++) {
                fa.kn[fa.nk] = a->kn[k];
                fa.kl[fa.nk] = a->kl[k];
                fa.kv[fa.nk++] = a->kv[k];
            }
            if (!mlstack__tpl_in_list(mlstack__tpl_filters, a->p[0].u.s.p, a->p[0].u.s.n))
                return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "filter '%.*s' is not supported", (int)a->p[0].u.s.n, a->p[0].u.s.p);
            if (mlstack__tv_iter(c, v, &items, &n, pos)) return -1;
            for (i = 0; i < n; i++) {
                mlstack__tv r;
                mlstack__targs copy = fa;
                if (mlstack__tpl_filter(c, a->p[0].u.s.p, a->p[0].u.s.n, &items[i], &copy, &r, pos)) return -1;
                if (mlstack__tlist_push(c, l, r)) return -1;
            }
        } else {
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "map needs attribute= or a filter name");
        }
        *out = mlstack__tv_list(l);
        return 0;
    }
    if (MLSTACK__F("select") || MLSTACK__F("reject") || MLSTACK__F("selectattr") || MLSTACK__F("rejectattr"))
        return mlstack__tpl_select(c, v, a, nm[6] == 'a', nm[0] == 's', out, pos);
    if (MLSTACK__F("unique")) {
        mlstack__tv *items;
        size_t n, i, j;
        int cs = 0, has_attr;
        mlstack__tlist *l, *keys;
        if (mlstack__targ(a, 0, "case_sensitive", &x)) cs = mlstack__tv_truthy(&x);
        has_attr = mlstack__targ(a, 1, "attribute", &y) && y.t != MLSTACK__TV_NONE;
        if (mlstack__targs_done(c, a, 2, what, pos) || mlstack__tv_iter(c, v, &items, &n, pos)) return -1;
        if (!(l = mlstack__tlist_new(c, MLSTACK__TL_GEN, 0)) || !(keys = mlstack__tlist_new(c, MLSTACK__TL_LIST, 0))) return -1;
        for (i = 0; i < n; i++) {
            mlstack__tv k = items[i];
            if (has_attr && mlstack__tpl_attrpath(c, &items[i], &y, &k, pos)) return -1;
            if (!cs && k.t == MLSTACK__TV_STR && mlstack__tpl_case_str(c, &k, 0, &k, pos)) return -1;
            for (j = 0; j < keys->n; j++)
                if (mlstack__tv_eq(&keys->v[j], &k, 0)) break;
            if (j < keys->n) continue;
            if (mlstack__tlist_push(c, keys, k) || mlstack__tlist_push(c, l, items[i])) return -1;
        }
        *out = mlstack__tv_list(l);
        return 0;
    }
    if (MLSTACK__F("int")) {
        int64_t iv;
        double fv;
        if (!mlstack__targ(a, 0, "default", &x)) x = mlstack__tv_int(0);
        if (mlstack__targ(a, 1, "base", &y) && !(y.t == MLSTACK__TV_INT && y.u.i == 10))
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "int filter with a base other than 10");
        if (mlstack__targs_done(c, a, 2, what, pos)) return -1;
        if (v->t == MLSTACK__TV_INT || v->t == MLSTACK__TV_BOOL) *out = mlstack__tv_int(v->u.i);
        else if (v->t == MLSTACK__TV_FLOAT) {
            if (v->u.f != v->u.f || v->u.f >= 9.2e18 || v->u.f <= -9.2e18) *out = x;
            else *out = mlstack__tv_int((int64_t)v->u.f);
        } else if (v->t == MLSTACK__TV_STR) {
            if (mlstack__tpl_parse_int(v->u.s.p, v->u.s.n, &iv) == 0) *out = mlstack__tv_int(iv);
            else if (mlstack__tpl_parse_float(v->u.s.p, v->u.s.n, &fv) == 0 && fv == fv && fv < 9.2e18 && fv > -9.2e18)
                *out = mlstack__tv_int((int64_t)fv);
            else *out = x;
        } else {
            *out = x;
        }
        return 0;
    }
    if (MLSTACK__F("float")) {
        double fv;
        if (!mlstack__targ(a, 0, "default", &x)) x = mlstack__tv_float(0.0);
        if (mlstack__targs_done(c, a, 1, what, pos)) return -1;
        if (mlstack__tv_is_num(v)) *out = mlstack__tv_float(mlstack__tv_num(v));
        else if (v->t == MLSTACK__TV_STR && mlstack__tpl_parse_float(v->u.s.p, v->u.s.n, &fv) == 0) *out = mlstack__tv_float(fv);
        else *out = x;
        return 0;
    }
    if (MLSTACK__F("abs")) {
        if (mlstack__targs_done(c, a, 0, what, pos)) return -1;
        if (v->t == MLSTACK__TV_FLOAT) *out = mlstack__tv_float(fabs(v->u.f));
        else if (v->t == MLSTACK__TV_INT || v->t == MLSTACK__TV_BOOL) {
            if (v->u.i == INT64_MIN) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "integer beyond 64 bits");
            *out = mlstack__tv_int(v->u.i < 0 ? -v->u.i : v->u.i);
        } else return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "bad operand type for abs(): '%s'", mlstack__tv_typename(v));
        return 0;
    }
    if (MLSTACK__F("round")) {
        int64_t prec = 0;
        const char *method = "common";
        double f, scale;
        if (mlstack__targ(a, 0, "precision", &x)) {
            if (mlstack__tpl_want_int(c, &x, what, pos)) return -1;
            prec = x.u.i;
        }
        if (mlstack__targ(a, 1, "method", &y)) {
            if (mlstack__tpl_want_str(c, &y, what, pos)) return -1;
            method = y.u.s.n == 4 && !memcmp(y.u.s.p, "ceil", 4) ? "ceil" : y.u.s.n == 5 && !memcmp(y.u.s.p, "floor", 5) ? "floor" : y.u.s.n == 6 && !memcmp(y.u.s.p, "common", 6) ? "common" : NULL;
            if (!method) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "method must be common, ceil or floor");
        }
        if (mlstack__targs_done(c, a, 2, what, pos)) return -1;
        if (!mlstack__tv_is_num(v)) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "round needs a number, got %s", mlstack__tv_typename(v));
        if (prec < 0 || prec > 15) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "round precision outside 0..15");
        if (method[0] == 'c' && method[1] == 'o') {
            char buf[400];
            if (v->t != MLSTACK__TV_FLOAT) { /* Python round(int, n) keeps the int */
                *out = mlstack__tv_int(v->u.i);
                return 0;
            }
            f = v->u.f;
            if (f != f || f == HUGE_VAL || f == -HUGE_VAL) {
                *out = *v;
                return 0;
            }
            /* correctly rounded, ties to even on the exact binary value, as Python does */
            snprintf(buf, sizeof buf, "%.*f", (int)prec, f);
            *out = mlstack__tv_float(strtod(buf, NULL));
            return 0;
        }
        scale = pow(10.0, (double)prec);
        f = mlstack__tv_num(v) * scale;
        f = method[0] == 'c' ? ceil(f) : floor(f);
        *out = mlstack__tv_float(f / scale);
        return 0;
    }
    if (MLSTACK__F("indent")) {
        mlstack__tv ind, s;
        mlstack__tlist *lines;
        mlstack__tbuf b, sb;
        int first = 0, blank = 0;
        size_t i;
        char spaces[64];
        memset(&b, 0, sizeof b);
        memset(&sb, 0, sizeof sb);
        if (!mlstack__targ(a, 0, "width", &x)) x = mlstack__tv_int(4);
        if (mlstack__targ(a, 1, "first", &y)) first = mlstack__tv_truthy(&y);
        if (mlstack__targ(a, 2, "blank", &z)) blank = mlstack__tv_truthy(&z);
        if (mlstack__targs_done(c, a, 3, what, pos)) return -1;
        if (v->t != MLSTACK__TV_STR) /* jinja2 appends "\n" to the value itself */
            return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "indent needs a string, got %s", mlstack__tv_typename(v));
        s = *v;
        if (x.t == MLSTACK__TV_STR) ind = x;
        else if (x.t == MLSTACK__TV_INT || x.t == MLSTACK__TV_BOOL) {
            int64_t k = x.u.i < 0 ? 0 : x.u.i;
            if (k > 63) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "indent width above 63");
            memset(spaces, ' ', (size_t)k);
            ind = mlstack__tv_str(spaces, (size_t)k);
        } else return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "indent width must be a number or string");
        if (mlstack__tbuf_put(c, &sb, s.u.s.p, s.u.s.n) || mlstack__tbuf_put(c, &sb, "\n", 1)) return -1;
        s = mlstack__tv_str(sb.p, sb.n);
        if (!(lines = mlstack__tlist_new(c, MLSTACK__TL_LIST, 0)) || mlstack__tpl_splitlines(c, &s, lines)) return -1;
        if (first && mlstack__tbuf_put(c, &b, ind.u.s.p, ind.u.s.n)) return -1;
        for (i = 0; i < lines->n; i++) {
            const mlstack__tv *ln = &lines->v[i];
            if (i) {
                if (mlstack__tbuf_put(c, &b, "\n", 1)) return -1;
                if ((blank || ln->u.s.n) && mlstack__tbuf_put(c, &b, ind.u.s.p, ind.u.s.n)) return -1;
            }
            if (mlstack__tbuf_put(c, &b, ln->u.s.p, ln->u.s.n)) return -1;
        }
        return mlstack__tpl_newstr(c, &b, out);
    }
#undef MLSTACK__F
    return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "filter '%s' is not supported", nm);
}

/* ---- evaluator ---- */
static int mlstack__tpl_step(mlstack__tctx *c, size_t pos) {
    if (++c->steps > c->max_steps)
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_LIMIT, "template ran more than %llu steps", (unsigned long long)c->max_steps);
    if (c->depth >= MLSTACK_TEMPLATE_MAX_DEPTH)
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_LIMIT, "template recursion deeper than %d (runaway macro recursion?)",
                                 MLSTACK_TEMPLATE_MAX_DEPTH);
    return 0;
}

static int mlstack__tpl_eval_inner(mlstack__tctx *c, mlstack__tscope *s, const mlstack__tn *n, mlstack__tv *out) {
    mlstack__tv a, b;
    mlstack__targs args;
    const mlstack__tn *k;
    switch (n->kind) {
    case MLSTACK__N_LIT: *out = n->v; return 0;
    case MLSTACK__N_NAME: {
        mlstack__tv *v = mlstack__tscope_lookup(s, n->s, n->n);
        if (v) {
            *out = *v;
            return 0;
        }
        return mlstack__tpl_undef_fmt(c, out, "'%.*s' is undefined", n->s, n->n);
    }
    case MLSTACK__N_ATTR:
        if (mlstack__tpl_eval(c, s, n->a, &a)) return -1;
        return mlstack__tpl_getattr(c, &a, n->s, n->n, out, n->pos);
    case MLSTACK__N_ITEM:
        if (mlstack__tpl_eval(c, s, n->a, &a) || mlstack__tpl_eval(c, s, n->b, &b)) return -1;
        return mlstack__tpl_getitem(c, &a, &b, out, n->pos);
    case MLSTACK__N_SLICE: {
        mlstack__tv x = mlstack__tv_none(), y = mlstack__tv_none(), z = mlstack__tv_none();
        if (mlstack__tpl_eval(c, s, n->a, &a)) return -1;
        if ((n->b && mlstack__tpl_eval(c, s, n->b, &x)) || (n->c && mlstack__tpl_eval(c, s, n->c, &y)) ||
            (n->d && mlstack__tpl_eval(c, s, n->d, &z)))
            return -1;
        return mlstack__tpl_slice(c, &a, &x, &y, &z, out, n->pos);
    }
    case MLSTACK__N_CALL:
        if (mlstack__tpl_eval(c, s, n->a, &a) || mlstack__tpl_eval_args(c, s, n->b, &args, 0)) return -1;
        return mlstack__tpl_call(c, &a, &args, out, n->pos);
    case MLSTACK__N_FILTER:
        if (n->a ? mlstack__tpl_eval(c, s, n->a, &a) : (a = *out, 0)) return -1;
        if (mlstack__tpl_eval_args(c, s, n->b, &args, 0)) return -1;
        return mlstack__tpl_filter(c, n->s, n->n, &a, &args, out, n->pos);
    case MLSTACK__N_TEST: {
        int r;
        if (mlstack__tpl_eval(c, s, n->a, &a) || mlstack__tpl_eval_args(c, s, n->b, &args, 0)) return -1;
        if (mlstack__tpl_test(c, n->s, n->n, &a, &args, &r, n->pos)) return -1;
        *out = mlstack__tv_bool(n->op ? !r : r);
        return 0;
    }
    case MLSTACK__N_BIN:
        if (mlstack__tpl_eval(c, s, n->a, &a) || mlstack__tpl_eval(c, s, n->b, &b)) return -1;
        if (n->op == MLSTACK__OP_CONCAT) {
            mlstack__tbuf buf;
            memset(&buf, 0, sizeof buf);
            if (mlstack__tv_print(c, &buf, &a, n->pos) || mlstack__tv_print(c, &buf, &b, n->pos)) return -1;
            return mlstack__tpl_newstr(c, &buf, out);
        }
        return mlstack__tpl_binop(c, n->op, &a, &b, out, n->pos);
    case MLSTACK__N_CMP: {
        int res = 1;
        if (mlstack__tpl_eval(c, s, n->a, &a)) return -1;
        for (k = n->b; k && res; k = k->next) {
            if (mlstack__tpl_eval(c, s, k->a, &b)) return -1;
            switch (k->op) {
            case MLSTACK__OP_EQ: res = mlstack__tv_eq(&a, &b, 0); break;
            case MLSTACK__OP_NE: res = !mlstack__tv_eq(&a, &b, 0); break;
            case MLSTACK__OP_IN:
            case MLSTACK__OP_NOTIN:
                if (mlstack__tpl_contains(c, &a, &b, &res, k->pos)) return -1;
                if (k->op == MLSTACK__OP_NOTIN) res = !res;
                break;
            default:
                if (mlstack__tpl_order(c, k->op, &a, &b, &res, k->pos)) return -1;
            }
            a = b;
        }
        *out = mlstack__tv_bool(res);
        return 0;
    }
    case MLSTACK__N_NEG:
    case MLSTACK__N_POS:
        if (mlstack__tpl_eval(c, s, n->a, &a)) return -1;
        if (a.t == MLSTACK__TV_FLOAT) *out = mlstack__tv_float(n->kind == MLSTACK__N_NEG ? -a.u.f : a.u.f);
        else if (a.t == MLSTACK__TV_INT || a.t == MLSTACK__TV_BOOL) {
            if (n->kind == MLSTACK__N_NEG && a.u.i == INT64_MIN) return mlstack__tpl_fail(c, n->pos, MLSTACK_ERR_UNSUPPORTED, "integer beyond 64 bits");
            *out = mlstack__tv_int(n->kind == MLSTACK__N_NEG ? -a.u.i : a.u.i);
        } else if (a.t == MLSTACK__TV_UNDEF) {
            return mlstack__tpl_fail(c, n->pos, MLSTACK_ERR_INVALID_ARG, "%s", a.u.s.p ? a.u.s.p : "value is undefined");
        } else {
            return mlstack__tpl_fail(c, n->pos, MLSTACK_ERR_INVALID_ARG, "bad operand type for unary %c: '%s'", n->kind == MLSTACK__N_NEG ? '-' : '+',
                                     mlstack__tv_typename(&a));
        }
        return 0;
    case MLSTACK__N_NOT:
        if (mlstack__tpl_eval(c, s, n->a, &a)) return -1;
        *out = mlstack__tv_bool(!mlstack__tv_truthy(&a));
        return 0;
    case MLSTACK__N_AND:
    case MLSTACK__N_OR:
        if (mlstack__tpl_eval(c, s, n->a, &a)) return -1;
        if (mlstack__tv_truthy(&a) == (n->kind == MLSTACK__N_OR)) {
            *out = a;
            return 0;
        }
        return mlstack__tpl_eval(c, s, n->b, out);
    case MLSTACK__N_COND:
        if (mlstack__tpl_eval(c, s, n->b, &a)) return -1;
        if (mlstack__tv_truthy(&a)) return mlstack__tpl_eval(c, s, n->a, out);
        if (n->c) return mlstack__tpl_eval(c, s, n->c, out);
        *out = mlstack__tv_undef("the inline if-expression evaluated to false and no else section was defined");
        return 0;
    case MLSTACK__N_LIST:
    case MLSTACK__N_TUPLE: {
        mlstack__tlist *l = mlstack__tlist_new(c, n->kind == MLSTACK__N_LIST ? MLSTACK__TL_LIST : MLSTACK__TL_TUPLE, 0);
        if (!l) return -1;
        for (k = n->b; k; k = k->next) {
            if (mlstack__tpl_eval(c, s, k, &a) || mlstack__tlist_push(c, l, a)) return -1;
        }
        *out = mlstack__tv_list(l);
        return 0;
    }
    case MLSTACK__N_DICT: {
        mlstack__tdict *d = mlstack__tdict_new(c);
        if (!d) return -1;
        for (k = n->b; k; k = k->next) {
            if (mlstack__tpl_eval(c, s, k->a, &a) || mlstack__tpl_eval(c, s, k->b, &b)) return -1;
            if ((a.t == MLSTACK__TV_LIST && a.u.l->kind != MLSTACK__TL_TUPLE) || a.t == MLSTACK__TV_DICT || a.t == MLSTACK__TV_UNDEF)
                return mlstack__tpl_fail(c, k->pos, MLSTACK_ERR_INVALID_ARG, "unhashable dict key of type '%s'", mlstack__tv_typename(&a));
            if (mlstack__tdict_set(c, d, a, b)) return -1;
        }
        *out = mlstack__tv_dict(d, MLSTACK__TV_DICT);
        return 0;
    }
    default: return mlstack__tpl_fail(c, n->pos, MLSTACK_ERR_FORMAT, "bad expression node");
    }
}

static int mlstack__tpl_eval(mlstack__tctx *c, mlstack__tscope *s, const mlstack__tn *n, mlstack__tv *out) {
    int r;
    if (mlstack__tpl_step(c, n->pos)) return -1;
    c->depth++;
    r = mlstack__tpl_eval_inner(c, s, n, out);
    c->depth--;
    return r;
}

/* Binds a for/set target (a name or a tuple of names) to v. */
static int mlstack__tpl_assign(mlstack__tctx *c, mlstack__tscope *s, const mlstack__tn *target, const mlstack__tv *v) {
    if (target->kind == MLSTACK__N_NAME) return mlstack__tscope_set(c, s, target->s, target->n, *v);
    if (target->kind == MLSTACK__N_ATTR) {
        mlstack__tv *ns = mlstack__tscope_lookup(s, target->a->s, target->a->n);
        if (!ns || ns->t != MLSTACK__TV_NS)
            return mlstack__tpl_fail(c, target->pos, MLSTACK_ERR_INVALID_ARG, "cannot assign attribute on non-namespace object");
        if (target->n && target->s[0] == '_')
            return mlstack__tpl_fail(c, target->pos, MLSTACK_ERR_INVALID_ARG, "namespace attributes may not start with '_'");
        return mlstack__tdict_set(c, ns->u.d, mlstack__tv_str(target->s, target->n), *v);
    }
    if (target->kind == MLSTACK__N_TUPLE) {
        mlstack__tv *items;
        size_t n, i = 0, want = 0;
        const mlstack__tn *k;
        for (k = target->b; k; k = k->next) want++;
        if (mlstack__tv_iter(c, v, &items, &n, target->pos)) return -1;
        if (n != want)
            return mlstack__tpl_fail(c, target->pos, MLSTACK_ERR_INVALID_ARG, n > want ? "too many values to unpack (expected %zu)" : "not enough values to unpack (expected %zu)", want);
        for (k = target->b; k; k = k->next, i++)
            if (mlstack__tpl_assign(c, s, k, &items[i])) return -1;
        return 0;
    }
    return mlstack__tpl_fail(c, target->pos, MLSTACK_ERR_FORMAT, "bad assignment target");
}

static int mlstack__tpl_exec_for(mlstack__tctx *c, mlstack__tscope *s, const mlstack__tn *n) {
    mlstack__tv it, *items, *kept;
    size_t cnt, nk = 0, i;
    struct mlstack__tloop *lp;
    mlstack__tscope *is = NULL;
    if (mlstack__tpl_eval(c, s, n->b, &it)) return -1;
    if (mlstack__tv_iter(c, &it, &items, &cnt, n->b->pos)) return -1;
    kept = items;
    if (n->e && cnt) { /* `for x in xs if cond`: filter first, so loop.length counts kept items */
        kept = (mlstack__tv *)mlstack__tpl_alloc(c, cnt * sizeof *kept);
        if (!kept) return -1;
        for (i = 0; i < cnt; i++) {
            mlstack__tscope *fs = mlstack__tscope_new(c, s);
            mlstack__tv cond;
            if (!fs || mlstack__tpl_assign(c, fs, n->a, &items[i]) || mlstack__tpl_eval(c, fs, n->e, &cond)) return -1;
            if (mlstack__tv_truthy(&cond)) kept[nk++] = items[i];
        }
    } else {
        nk = cnt;
    }
    if (nk == 0) {
        mlstack__tscope *es = mlstack__tscope_new(c, s);
        if (!es) return -1;
        return n->d ? (mlstack__tpl_exec(c, es, n->d) < 0 ? -1 : 0) : 0;
    }
    lp = (struct mlstack__tloop *)mlstack__tpl_alloc(c, sizeof *lp);
    if (!lp) return -1;
    lp->items = kept;
    lp->n = nk;
    for (i = 0; i < nk; i++) {
        /* each iteration starts from a fresh scope (jinja2 semantics); its storage is reused
           unless a macro defined in the body may have captured it */
        mlstack__tv lv;
        int r;
        if (!is || n->op) {
            if (!(is = mlstack__tscope_new(c, s))) return -1;
        } else {
            is->vars.n = 0;
        }
        if (mlstack__tpl_step(c, n->pos)) return -1;
        lp->i = i;
        memset(&lv, 0, sizeof lv);
        lv.t = MLSTACK__TV_LOOP;
        lv.u.lp = lp;
        if (mlstack__tscope_set(c, is, "loop", 4, lv) || mlstack__tpl_assign(c, is, n->a, &kept[i])) return -1;
        r = mlstack__tpl_exec(c, is, n->c);
        if (r < 0) return -1;
        if (r == 1) break;
    }
    return 0;
}

/* Returns 0, 1 for break, 2 for continue, -1 on error. */
static int mlstack__tpl_exec(mlstack__tctx *c, mlstack__tscope *s, const mlstack__tn *body) {
    const mlstack__tn *n;
    int r = 0;
    c->depth++;
    for (n = body; n && r == 0; n = n->next) {
        mlstack__tv v;
        if (mlstack__tpl_step(c, n->pos)) {
            r = -1;
            break;
        }
        switch (n->kind) {
        case MLSTACK__S_TEXT: r = mlstack__tbuf_put(c, c->out, n->s, n->n); break;
        case MLSTACK__S_OUT:
            r = mlstack__tpl_eval(c, s, n->a, &v);
            if (!r) r = mlstack__tv_print(c, c->out, &v, n->a->pos);
            break;
        case MLSTACK__S_IF:
            r = mlstack__tpl_eval(c, s, n->a, &v);
            if (!r) r = mlstack__tpl_exec(c, s, mlstack__tv_truthy(&v) ? n->b : n->c);
            break;
        case MLSTACK__S_FOR: r = mlstack__tpl_exec_for(c, s, n); break;
        case MLSTACK__S_SET:
            r = mlstack__tpl_eval(c, s, n->b, &v);
            if (!r) r = mlstack__tpl_assign(c, s, n->a, &v);
            break;
        case MLSTACK__S_SETBLOCK:
        case MLSTACK__S_FILTERBLOCK: {
            mlstack__tbuf buf, *saved = c->out;
            memset(&buf, 0, sizeof buf);
            c->out = &buf;
            r = mlstack__tpl_exec(c, s, n->c);
            c->out = saved;
            if (r) {
                r = r < 0 ? -1 : mlstack__tpl_fail(c, n->pos, MLSTACK_ERR_FORMAT, "break/continue outside a loop body");
                break;
            }
            r = mlstack__tpl_newstr(c, &buf, &v);
            if (r) break;
            if (n->kind == MLSTACK__S_SETBLOCK) {
                r = mlstack__tpl_assign(c, s, n->a, &v);
            } else {
                mlstack__tv res = v;
                /* the filter chain was parsed with an empty input; feed the body text in */
                const mlstack__tn *chain[32];
                int depth = 0, k;
                const mlstack__tn *f;
                for (f = n->a; f && depth < 32; f = f->a) chain[depth++] = f;
                for (k = depth - 1; k >= 0 && !r; k--) {
                    mlstack__targs fa;
                    r = mlstack__tpl_eval_args(c, s, chain[k]->b, &fa, 0);
                    if (!r) r = mlstack__tpl_filter(c, chain[k]->s, chain[k]->n, &res, &fa, &res, chain[k]->pos);
                }
                if (!r) r = mlstack__tv_print(c, c->out, &res, n->pos);
            }
            break;
        }
        case MLSTACK__S_MACRO: {
            struct mlstack__tmacro *m = (struct mlstack__tmacro *)mlstack__tpl_alloc(c, sizeof *m);
            if (!m) {
                r = -1;
                break;
            }
            m->node = n;
            m->closure = s;
            memset(&v, 0, sizeof v);
            v.t = MLSTACK__TV_MACRO;
            v.u.m = m;
            r = mlstack__tscope_set(c, s, n->s, n->n, v);
            break;
        }
        case MLSTACK__S_BREAK: r = 1; break;
        case MLSTACK__S_CONTINUE: r = 2; break;
        case MLSTACK__S_BLOCK: r = mlstack__tpl_exec(c, s, n->c); break;
        default: r = mlstack__tpl_fail(c, n->pos, MLSTACK_ERR_FORMAT, "bad statement node");
        }
    }
    c->depth--;
    return r < 0 ? -1 : r;
}

/* ---- JSON data -> values ---- */
static int mlstack__tpl_from_json(mlstack__tctx *c, const mlstack__json *j, mlstack__tv *out) {
    const mlstack__json *k;
    switch (j->type) {
    case MLSTACK__JSON_NULL: *out = mlstack__tv_none(); return 0;
    case MLSTACK__JSON_TRUE: *out = mlstack__tv_bool(1); return 0;
    case MLSTACK__JSON_FALSE: *out = mlstack__tv_bool(0); return 0;
    case MLSTACK__JSON_NUMBER:
        if (!j->is_int) {
            size_t i;
            int plain = 1; /* Python reads big integer literals exactly; we cannot */
            for (i = 0; i < j->len; i++)
                if (j->str[i] == '.' || j->str[i] == 'e' || j->str[i] == 'E') plain = 0;
            if (plain) return mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_UNSUPPORTED, "integer %.*s in the JSON input is beyond 64 bits", (int)(j->len > 40 ? 40 : j->len), j->str);
        }
        *out = j->is_int ? mlstack__tv_int(j->i) : mlstack__tv_float(j->num);
        return 0;
    case MLSTACK__JSON_STRING: *out = mlstack__tv_str(j->str, j->len); return 0;
    case MLSTACK__JSON_ARRAY: {
        mlstack__tlist *l = mlstack__tlist_new(c, MLSTACK__TL_LIST, j->len);
        if (!l) return -1;
        for (k = j->child; k; k = k->next)
            if (mlstack__tpl_from_json(c, k, &l->v[l->n++])) return -1;
        *out = mlstack__tv_list(l);
        return 0;
    }
    case MLSTACK__JSON_OBJECT: {
        mlstack__tdict *d = mlstack__tdict_new(c);
        if (!d) return -1;
        for (k = j->child; k; k = k->next) {
            mlstack__tv v;
            if (mlstack__tpl_from_json(c, k, &v) || mlstack__tdict_set(c, d, mlstack__tv_str(k->key, k->key_len), v)) return -1;
        }
        *out = mlstack__tv_dict(d, MLSTACK__TV_DICT);
        return 0;
    }
    }
    return -1;
}

/* What transformers does to each message before rendering: drop None-valued keys; copy the
   reasoning (reasoning_content, thinking or reasoning) to "thinking" (first) and
   "reasoning_content". */
static int mlstack__tpl_prepare_message(mlstack__tctx *c, mlstack__tv *msg, size_t idx) {
    static const char *const fields[] = {"reasoning_content", "thinking", "reasoning"};
    mlstack__tdict *d, *nd;
    mlstack__tv reasoning;
    size_t i;
    int f, found = 0;
    if (msg->t != MLSTACK__TV_DICT)
        return mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_INVALID_ARG, "message %zu is not a JSON object", idx);
    d = msg->u.d;
    if (!(nd = mlstack__tdict_new(c))) return -1;
    for (i = 0; i < d->n; i++)
        if (d->v[i].t != MLSTACK__TV_NONE && mlstack__tdict_set(c, nd, d->k[i], d->v[i])) return -1;
    for (f = 0; f < 3 && !found; f++) {
        mlstack__tv *r = mlstack__tdict_findn(nd, fields[f], strlen(fields[f]));
        if (r) {
            reasoning = *r;
            found = 1;
        }
    }
    if (found) {
        mlstack__tdict *ad = mlstack__tdict_new(c);
        mlstack__tv *own = mlstack__tdict_findn(nd, "thinking", 8);
        if (!ad || mlstack__tdict_set(c, ad, mlstack__tv_cstr("thinking"), own ? *own : reasoning)) return -1;
        for (i = 0; i < nd->n; i++)
            if (mlstack__tdict_set(c, ad, nd->k[i], nd->v[i])) return -1;
        if (mlstack__tdict_set(c, ad, mlstack__tv_cstr("reasoning_content"), reasoning)) return -1;
        nd = ad;
    }
    msg->u.d = nd;
    return 0;
}

typedef struct mlstack__tpl_input {
    const char *messages_json;
    size_t messages_len;
    const mlstack_chat_message *plain;
    int n_plain;
    const char *const *token_names; /* special tokens from a config, NULL-terminated pairs */
    const char *const *token_values;
    int n_tokens;
    int require_messages;
} mlstack__tpl_input;

static mlstack_result mlstack__tpl_render(const char *text, size_t text_len, const mlstack__tpl_input *in,
                                          const mlstack_template_options *opt, char **out, size_t *out_len, mlstack_error *err) {
    mlstack__tctx ctx, *c = &ctx;
    mlstack__json_doc docs[3];
    mlstack__tlex L;
    mlstack__tparse P;
    mlstack__tn *root = NULL;
    mlstack__tscope *g;
    mlstack__tbuf outbuf;
    mlstack_template_options dflt;
    char *norm;
    size_t i, n;
    int k;
    static const char *const fnames[] = {"range", "namespace", "dict", "raise_exception", "strftime_now"};
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (!out || (!text && text_len)) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "chat template: NULL argument");
    if (!opt) {
        memset(&dflt, 0, sizeof dflt);
        opt = &dflt;
    }
    memset(c, 0, sizeof *c);
    memset(docs, 0, sizeof docs);
    memset(&outbuf, 0, sizeof outbuf);
    c->err = err;
    c->max_mem = opt->max_memory ? opt->max_memory : MLSTACK_TEMPLATE_MAX_MEMORY;
    c->max_steps = opt->max_steps ? opt->max_steps : MLSTACK_TEMPLATE_MAX_STEPS;
    c->max_out = opt->max_output_bytes ? opt->max_output_bytes : MLSTACK_TEMPLATE_MAX_OUTPUT;
    c->now = opt->now_unix;
    c->out = &outbuf;
    /* UTF-8 check, then jinja2's newline handling: every line break (as Python's splitlines
       sees them) becomes "\n", and one trailing line break is dropped. */
    for (i = 0; i < text_len;) {
        int l = mlstack__utf8_valid_len((const unsigned char *)text + i, text_len - i);
        if (!l) {
            mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_FORMAT, "template is not valid UTF-8 (byte %zu)", i);
            goto done;
        }
        i += (size_t)l;
    }
    norm = (char *)mlstack__tpl_alloc(c, text_len + 1);
    if (!norm) goto done;
    for (i = 0, n = 0; i < text_len;) {
        size_t l;
        uint32_t cp = mlstack__tpl_cp(text + i, text_len - i, &l);
        if (mlstack__tpl_islinebreak(cp)) {
            norm[n++] = '\n';
            i += l;
            if (cp == '\r' && i < text_len && text[i] == '\n') i++;
        } else {
            memcpy(norm + n, text + i, l);
            n += l;
            i += l;
        }
    }
    if (n && norm[n - 1] == '\n') n--;
    norm[n] = 0;
    c->src = norm;
    c->src_n = n;

    memset(&L, 0, sizeof L);
    L.c = c;
    L.s = norm;
    L.n = n;
    if (mlstack__tlex_run(&L)) goto done;
    memset(&P, 0, sizeof P);
    P.c = c;
    P.tok = L.tok;
    P.n = L.ntok;
    root = mlstack__tp_body(&P, NULL, NULL, 0);
    if (c->rc) goto done;

    if (!(g = mlstack__tscope_new(c, NULL))) goto done;
    for (k = 0; k < 5; k++) {
        mlstack__tv f;
        memset(&f, 0, sizeof f);
        f.t = MLSTACK__TV_FUNC;
        f.u.i = k + 1;
        if (mlstack__tscope_set(c, g, fnames[k], strlen(fnames[k]), f)) goto done;
    }
    if (in->messages_json) {
        mlstack__tv msgs;
        if (mlstack__json_parse(&docs[0], in->messages_json, in->messages_len, "messages", err) != MLSTACK_OK) {
            c->rc = err ? err->code : MLSTACK_ERR_FORMAT;
            goto done;
        }
        if (mlstack__tpl_from_json(c, docs[0].root, &msgs)) goto done;
        if (msgs.t != MLSTACK__TV_LIST) {
            mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_INVALID_ARG, "messages must be a JSON array of message objects");
            goto done;
        }
        for (i = 0; i < msgs.u.l->n; i++)
            if (mlstack__tpl_prepare_message(c, &msgs.u.l->v[i], i)) goto done;
        if (in->require_messages && msgs.u.l->n == 0) {
            mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_INVALID_ARG, "Cannot apply chat template to an empty conversation");
            goto done;
        }
        if (mlstack__tscope_set(c, g, "messages", 8, msgs)) goto done;
    } else if (in->plain) {
        mlstack__tlist *l = mlstack__tlist_new(c, MLSTACK__TL_LIST, (size_t)in->n_plain);
        if (!l) goto done;
        if (in->require_messages && in->n_plain == 0) {
            mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_INVALID_ARG, "Cannot apply chat template to an empty conversation");
            goto done;
        }
        for (k = 0; k < in->n_plain; k++) {
            mlstack__tdict *d = mlstack__tdict_new(c);
            if (!d) goto done;
            if (in->plain[k].role && mlstack__tdict_set(c, d, mlstack__tv_cstr("role"), mlstack__tv_cstr(in->plain[k].role))) goto done;
            if (in->plain[k].content && mlstack__tdict_set(c, d, mlstack__tv_cstr("content"), mlstack__tv_cstr(in->plain[k].content))) goto done;
            l->v[l->n++] = mlstack__tv_dict(d, MLSTACK__TV_DICT);
        }
        if (mlstack__tscope_set(c, g, "messages", 8, mlstack__tv_list(l))) goto done;
    }
    {
        mlstack__tv tools = mlstack__tv_none();
        if (opt->tools_json) {
            if (mlstack__json_parse(&docs[1], opt->tools_json, strlen(opt->tools_json), "tools_json", err) != MLSTACK_OK) {
                c->rc = err ? err->code : MLSTACK_ERR_FORMAT;
                goto done;
            }
            if (mlstack__tpl_from_json(c, docs[1].root, &tools)) goto done;
        }
        if (mlstack__tscope_set(c, g, "tools", 5, tools) || mlstack__tscope_set(c, g, "documents", 9, mlstack__tv_none()) ||
            mlstack__tscope_set(c, g, "add_generation_prompt", 21, mlstack__tv_bool(opt->add_generation_prompt)))
            goto done;
    }
    for (k = 0; k < in->n_tokens; k++)
        if (in->token_values[k] && mlstack__tscope_set(c, g, in->token_names[k], strlen(in->token_names[k]), mlstack__tv_cstr(in->token_values[k])))
            goto done;
    if (opt->bos_token && mlstack__tscope_set(c, g, "bos_token", 9, mlstack__tv_cstr(opt->bos_token))) goto done;
    if (opt->eos_token && mlstack__tscope_set(c, g, "eos_token", 9, mlstack__tv_cstr(opt->eos_token))) goto done;
    if (opt->extra_json) {
        mlstack__tv extra;
        if (mlstack__json_parse(&docs[2], opt->extra_json, strlen(opt->extra_json), "extra_json", err) != MLSTACK_OK) {
            c->rc = err ? err->code : MLSTACK_ERR_FORMAT;
            goto done;
        }
        if (mlstack__tpl_from_json(c, docs[2].root, &extra)) goto done;
        if (extra.t != MLSTACK__TV_DICT) {
            mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_INVALID_ARG, "extra_json must be a JSON object");
            goto done;
        }
        for (i = 0; i < extra.u.d->n; i++)
            if (mlstack__tdict_set(c, &g->vars, extra.u.d->k[i], extra.u.d->v[i])) goto done;
    }
    if (mlstack__tbuf_put(c, &outbuf, "", 0)) goto done;
    if (mlstack__tpl_exec(c, g, root) < 0) goto done;
    *out = (char *)MLSTACK_MALLOC(outbuf.n + 1);
    if (!*out) {
        mlstack__tpl_fail(c, MLSTACK__TNOPOS, MLSTACK_ERR_NO_MEMORY, "out of memory for %zu bytes of output", outbuf.n);
        goto done;
    }
    memcpy(*out, outbuf.p, outbuf.n + 1);
    if (out_len) *out_len = outbuf.n;
done:
    for (k = 0; k < 3; k++) mlstack__json_free(&docs[k]);
    mlstack__arena_free(&c->arena);
    if (c->rc == MLSTACK_OK && !*out) c->rc = MLSTACK_ERR_INVALID_ARG;
    return c->rc;
}

MLSTACK_API mlstack_result mlstack_template_render(const char *template_text, size_t template_len, const char *messages_json,
                                                   size_t messages_len, const mlstack_template_options *opt, char **out,
                                                   size_t *out_len, mlstack_error *err) {
    mlstack__tpl_input in;
    memset(&in, 0, sizeof in);
    in.messages_json = messages_json;
    in.messages_len = messages_len;
    return mlstack__tpl_render(template_text, template_len, &in, opt, out, out_len, err);
}

MLSTACK_API mlstack_result mlstack_template_render_messages(const char *template_text, size_t template_len,
                                                            const mlstack_chat_message *messages, int n_messages,
                                                            const mlstack_template_options *opt, char **out, size_t *out_len,
                                                            mlstack_error *err) {
    mlstack__tpl_input in;
    static const mlstack_chat_message none_msg = {NULL, NULL};
    if (n_messages < 0 || (n_messages > 0 && !messages))
        return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "chat template: bad message array");
    memset(&in, 0, sizeof in);
    in.plain = messages ? messages : &none_msg;
    in.n_plain = n_messages;
    return mlstack__tpl_render(template_text, template_len, &in, opt, out, out_len, err);
}

MLSTACK_API void mlstack_template_free_output(char *text) { MLSTACK_FREE(text); }

/* ---- chat templates of a tokenizer folder ---- */
#define MLSTACK__TPL_MAX_TEMPLATES 64
static const char *const mlstack__tpl_token_names[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                                       "pad_token", "cls_token", "mask_token"};
struct mlstack_chat_template {
    int n;
    char *names[MLSTACK__TPL_MAX_TEMPLATES]; /* NULL: the single unnamed template */
    char *texts[MLSTACK__TPL_MAX_TEMPLATES];
    char *tokens[7];
};

MLSTACK_API void mlstack_chat_template_close(mlstack_chat_template *t) {
    int k;
    if (!t) return;
    for (k = 0; k < t->n; k++) {
        MLSTACK_FREE(t->names[k]);
        MLSTACK_FREE(t->texts[k]);
    }
    for (k = 0; k < 7; k++) MLSTACK_FREE(t->tokens[k]);
    MLSTACK_FREE(t);
}

static mlstack_result mlstack__tpl_add(mlstack_chat_template *t, const char *name, size_t name_len, const char *text, size_t len,
                                       mlstack_error *err) {
    int k;
    for (k = 0; k < t->n; k++) /* a later file of the same name replaces the earlier one */
        if (name && t->names[k] && strlen(t->names[k]) == name_len && memcmp(t->names[k], name, name_len) == 0) {
            char *nt = mlstack__strndup(text, len);
            if (!nt) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
            MLSTACK_FREE(t->texts[k]);
            t->texts[k] = nt;
            return MLSTACK_OK;
        }
    if (t->n == MLSTACK__TPL_MAX_TEMPLATES) return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "more than %d chat templates", MLSTACK__TPL_MAX_TEMPLATES);
    t->names[t->n] = name ? mlstack__strndup(name, name_len) : NULL;
    t->texts[t->n] = mlstack__strndup(text, len);
    if ((name && !t->names[t->n]) || !t->texts[t->n]) {
        MLSTACK_FREE(t->names[t->n]);
        MLSTACK_FREE(t->texts[t->n]);
        t->names[t->n] = t->texts[t->n] = NULL;
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    }
    t->n++;
    return MLSTACK_OK;
}

static void mlstack__tpl_clear(mlstack_chat_template *t) {
    int k;
    for (k = 0; k < t->n; k++) {
        MLSTACK_FREE(t->names[k]);
        MLSTACK_FREE(t->texts[k]);
        t->names[k] = t->texts[k] = NULL;
    }
    t->n = 0;
}

/* Reads "chat_template" and the special tokens of a tokenizer_config.json (or the
   "chat_template" of a chat_template.json) into t. */
static mlstack_result mlstack__tpl_read_config(mlstack_chat_template *t, const char *json, size_t len, const char *what,
                                               int tokens, mlstack_error *err) {
    mlstack__json_doc doc;
    const mlstack__json *ct, *e;
    mlstack_result r = mlstack__json_parse(&doc, json, len, what, err);
    int k;
    if (r != MLSTACK_OK) return r;
    if (doc.root->type != MLSTACK__JSON_OBJECT) {
        mlstack__json_free(&doc);
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: expected a JSON object", what);
    }
    ct = mlstack__json_get(doc.root, "chat_template");
    if (ct && ct->type == MLSTACK__JSON_STRING) {
        r = mlstack__tpl_add(t, NULL, 0, ct->str, ct->len, err);
    } else if (ct && ct->type == MLSTACK__JSON_ARRAY) {
        for (e = ct->child; e && r == MLSTACK_OK; e = e->next) {
            const mlstack__json *nm = mlstack__json_get(e, "name"), *tx = mlstack__json_get(e, "template");
            if (!nm || nm->type != MLSTACK__JSON_STRING || !tx || tx->type != MLSTACK__JSON_STRING)
                r = MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: chat_template list entries need string \"name\" and \"template\"", what);
            else
                r = mlstack__tpl_add(t, nm->str, nm->len, tx->str, tx->len, err);
        }
    } else if (ct && ct->type != MLSTACK__JSON_NULL) {
        r = MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: chat_template must be a string or a list of {name, template}", what);
    }
    for (k = 0; tokens && k < 7 && r == MLSTACK_OK; k++) {
        const mlstack__json *tok = mlstack__json_get(doc.root, mlstack__tpl_token_names[k]);
        if (tok && tok->type == MLSTACK__JSON_OBJECT) tok = mlstack__json_get(tok, "content");
        if (tok && tok->type == MLSTACK__JSON_STRING) {
            MLSTACK_FREE(t->tokens[k]);
            if (!(t->tokens[k] = mlstack__strndup(tok->str, tok->len))) r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
        }
    }
    mlstack__json_free(&doc);
    return r;
}

MLSTACK_API mlstack_result mlstack_chat_template_from_config(const char *config_json, size_t config_len, mlstack_chat_template **out,
                                                             mlstack_error *err) {
    mlstack_chat_template *t;
    mlstack_result r;
    if (!out || !config_json) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "chat template: NULL argument");
    *out = NULL;
    t = (mlstack_chat_template *)mlstack__calloc(1, sizeof *t);
    if (!t) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    r = mlstack__tpl_read_config(t, config_json, config_len, "tokenizer_config.json", 1, err);
    if (r == MLSTACK_OK && t->n == 0) r = MLSTACK__FAIL(err, MLSTACK_ERR_NOT_FOUND, "tokenizer_config.json has no chat_template");
    if (r != MLSTACK_OK) {
        mlstack_chat_template_close(t);
        return r;
    }
    *out = t;
    return MLSTACK_OK;
}

static mlstack_result mlstack__tpl_read_text(const char *dir, const char *name, char **text, size_t *len, mlstack_error *err) {
    char *path = mlstack__path_join(dir, name);
    mlstack_result r;
    *text = NULL;
    *len = 0;
    if (!path) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    if (!mlstack__file_exists(path)) {
        MLSTACK_FREE(path);
        return MLSTACK_ERR_NOT_FOUND;
    }
    r = mlstack__read_file(path, MLSTACK_MAX_JSON_BYTES, text, len, err);
    MLSTACK_FREE(path);
    return r;
}

MLSTACK_API mlstack_result mlstack_chat_template_open(const char *dir, mlstack_chat_template **out, mlstack_error *err) {
    mlstack_chat_template *t, files;
    mlstack_result r;
    char *text;
    size_t len;
    int k;
    if (!out || !dir) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "chat template: NULL argument");
    *out = NULL;
    t = (mlstack_chat_template *)mlstack__calloc(1, sizeof *t);
    if (!t) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    memset(&files, 0, sizeof files);
    r = mlstack__tpl_read_text(dir, "tokenizer_config.json", &text, &len, err);
    if (r == MLSTACK_OK) {
        r = mlstack__tpl_read_config(t, text, len, "tokenizer_config.json", 1, err);
        MLSTACK_FREE(text);
    } else if (r == MLSTACK_ERR_NOT_FOUND) {
        r = MLSTACK_OK;
    }
    /* transformers 5: chat_template.jinja ("default") and additional_chat_templates/NAME.jinja
       replace the config's templates */
    if (r == MLSTACK_OK) {
        r = mlstack__tpl_read_text(dir, "chat_template.jinja", &text, &len, err);
        if (r == MLSTACK_OK) {
            r = mlstack__tpl_add(&files, "default", 7, text, len, err);
            MLSTACK_FREE(text);
        } else if (r == MLSTACK_ERR_NOT_FOUND) {
            r = MLSTACK_OK;
        }
    }
#if !defined(_WIN32)
    if (r == MLSTACK_OK) {
        char *sub = mlstack__path_join(dir, "additional_chat_templates");
        DIR *d = sub ? opendir(sub) : NULL;
        struct dirent *de;
        while (d && r == MLSTACK_OK && (de = readdir(d)) != NULL) {
            size_t nl = strlen(de->d_name);
            if (nl > 6 && strcmp(de->d_name + nl - 6, ".jinja") == 0) {
                r = mlstack__tpl_read_text(sub, de->d_name, &text, &len, err);
                if (r == MLSTACK_OK) {
                    r = mlstack__tpl_add(&files, de->d_name, nl - 6, text, len, err);
                    MLSTACK_FREE(text);
                } else if (r == MLSTACK_ERR_NOT_FOUND) {
                    r = MLSTACK_OK;
                }
            }
        }
        if (d) closedir(d);
        MLSTACK_FREE(sub);
    }
#endif
    if (r == MLSTACK_OK && files.n) {
        mlstack__tpl_clear(t);
        for (k = 0; k < files.n; k++) {
            t->names[k] = files.names[k];
            t->texts[k] = files.texts[k];
        }
        t->n = files.n;
        files.n = 0;
        if (t->n == 1 && t->names[0] && !strcmp(t->names[0], "default")) {
            MLSTACK_FREE(t->names[0]);
            t->names[0] = NULL;
        }
    }
    mlstack__tpl_clear(&files);
    if (r == MLSTACK_OK && t->n == 0) { /* the processor's legacy file, as AutoProcessor reads it */
        r = mlstack__tpl_read_text(dir, "chat_template.json", &text, &len, err);
        if (r == MLSTACK_OK) {
            r = mlstack__tpl_read_config(t, text, len, "chat_template.json", 0, err);
            MLSTACK_FREE(text);
        } else if (r == MLSTACK_ERR_NOT_FOUND) {
            r = MLSTACK_OK;
        }
    }
    if (r == MLSTACK_OK && t->n == 0) r = MLSTACK__FAIL(err, MLSTACK_ERR_NOT_FOUND, "%s: no chat template found", dir);
    if (r != MLSTACK_OK) {
        mlstack_chat_template_close(t);
        return r;
    }
    *out = t;
    return MLSTACK_OK;
}

MLSTACK_API const char *mlstack_chat_template_get(const mlstack_chat_template *t, const char *name, int with_tools) {
    int k;
    if (!t) return NULL;
    if (name) {
        for (k = 0; k < t->n; k++)
            if (t->names[k] ? !strcmp(t->names[k], name) : !strcmp(name, "default")) return t->texts[k];
        return NULL;
    }
    if (t->n == 1 && !t->names[0]) return t->texts[0];
    if (with_tools)
        for (k = 0; k < t->n; k++)
            if (t->names[k] && !strcmp(t->names[k], "tool_use")) return t->texts[k];
    for (k = 0; k < t->n; k++)
        if (t->names[k] && !strcmp(t->names[k], "default")) return t->texts[k];
    return NULL;
}

MLSTACK_API const char *mlstack_chat_template_token(const mlstack_chat_template *t, const char *which) {
    int k;
    if (!t || !which) return NULL;
    for (k = 0; k < 7; k++)
        if (!strcmp(which, mlstack__tpl_token_names[k])) return t->tokens[k];
    return NULL;
}

MLSTACK_API mlstack_result mlstack_chat_template_apply(const mlstack_chat_template *t, const char *name, const char *messages_json,
                                                       size_t messages_len, const mlstack_template_options *opt, char **out,
                                                       size_t *out_len, mlstack_error *err) {
    mlstack__tpl_input in;
    const char *text;
    if (out) *out = NULL;
    if (!t || !messages_json) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "chat template: NULL argument");
    text = mlstack_chat_template_get(t, name, opt && opt->tools_json);
    if (!text) {
        if (name) return MLSTACK__FAIL(err, MLSTACK_ERR_NOT_FOUND, "no chat template named '%s'", name);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NOT_FOUND,
                             "this model has multiple chat templates with no default; pass the name of one");
    }
    memset(&in, 0, sizeof in);
    in.messages_json = messages_json;
    in.messages_len = messages_len;
    in.token_names = mlstack__tpl_token_names;
    in.token_values = (const char *const *)t->tokens;
    in.n_tokens = 7;
    in.require_messages = 1;
    return mlstack__tpl_render(text, strlen(text), &in, opt, out, out_len, err);
}

/* ==== 9. KERNELS ==== */  /* >>kernels */
/* Shapes: B rows in the batch, D model dim, F feed-forward dim, H heads, Hkv key/value heads,
   Dh head dim, V vocab, T positions attended.
   Scalar reference kernels. Every faster kernel is checked against these. Each output element
   is reduced in one fixed order (8 interleaved partial sums over the reduction index, combined
   pairwise), whatever the batch size or thread count: results are batch invariant. */

static float mlstack__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1F, man = h & 0x3FF, bits;
    float f;
    if (exp == 0) {
        if (man == 0) {
            bits = sign;
        } else { /* subnormal: renormalise */
            exp = 127 - 15 + 1;
            while (!(man & 0x400)) {
                man <<= 1;
                exp--;
            }
            man &= 0x3FF;
            bits = sign | (exp << 23) | (man << 13);
        }
    } else if (exp == 31) {
        bits = sign | 0x7F800000u | (man << 13);
    } else {
        bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
    }
    memcpy(&f, &bits, 4);
    return f;
}

static float mlstack__bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* dst[0..n) = src[0..n) of `dtype` converted to f32. src may be unaligned. */
static void mlstack__to_f32(mlstack_dtype dtype, const void *src, float *dst, size_t n) {
    const unsigned char *b = (const unsigned char *)src;
    size_t i;
    switch (dtype) {
    case MLSTACK_DTYPE_F32: memcpy(dst, src, n * 4); break;
    case MLSTACK_DTYPE_F16:
        for (i = 0; i < n; i++) dst[i] = mlstack__f16_to_f32((uint16_t)(b[2 * i] | (b[2 * i + 1] << 8)));
        break;
    case MLSTACK_DTYPE_BF16:
        for (i = 0; i < n; i++) dst[i] = mlstack__bf16_to_f32((uint16_t)(b[2 * i] | (b[2 * i + 1] << 8)));
        break;
    default:
        for (i = 0; i < n; i++) dst[i] = 0;
        break;
    }
}

/* Weight formats. The first three are file dtypes used as stored; the block formats are made
   at load (section 16) from any of them:
     Q8_0: blocks of 32 weights: f16 scale d, 32 int8 q;        w = d * q
     Q4_0: blocks of 32 weights: f16 scale d, 16 bytes of nibbles; w = d * (nibble - 8),
           element j < 16 in the low nibble of byte j, element j + 16 in its high nibble.
   Activations meet quantized weights as Q8 blocks with an f32 scale (mlstack__q8x), made once
   per matmul by mlstack__quantize_rows. */
typedef enum mlstack__wtype {
    MLSTACK__W_F32 = MLSTACK_DTYPE_F32,
    MLSTACK__W_F16 = MLSTACK_DTYPE_F16,
    MLSTACK__W_BF16 = MLSTACK_DTYPE_BF16,
    MLSTACK__W_Q8_0 = MLSTACK_DTYPE_Q8_0,
    MLSTACK__W_Q4_0 = MLSTACK_DTYPE_Q4_0
} mlstack__wtype;

#define MLSTACK__QK 32
typedef struct mlstack__q8_0 {
    uint16_t d;
    int8_t q[MLSTACK__QK];
} mlstack__q8_0;
typedef struct mlstack__q4_0 {
    uint16_t d;
    uint8_t q[MLSTACK__QK / 2];
} mlstack__q4_0;
typedef struct mlstack__q8x {
    float d;
    int8_t q[MLSTACK__QK];
} mlstack__q8x;

/* Bytes of one row of n_in weights in a format. */
static size_t mlstack__row_bytes(int wtype, int n_in) {
    switch (wtype) {
    case MLSTACK__W_Q8_0: return (size_t)(n_in / MLSTACK__QK) * sizeof(mlstack__q8_0);
    case MLSTACK__W_Q4_0: return (size_t)(n_in / MLSTACK__QK) * sizeof(mlstack__q4_0);
    case MLSTACK__W_F32: return (size_t)n_in * 4;
    default: return (size_t)n_in * 2;
    }
}

static uint16_t mlstack__f32_to_f16(float f) {
    uint32_t x, sign, exp, man;
    memcpy(&x, &f, 4);
    sign = (x >> 16) & 0x8000;
    exp = (x >> 23) & 0xFF;
    man = x & 0x7FFFFF;
    if (exp == 0xFF) return (uint16_t)(sign | 0x7C00 | (man ? 0x200 : 0));
    if (exp > 127 + 15) return (uint16_t)(sign | 0x7C00); /* overflow: infinity */
    if (exp < 127 - 24) return (uint16_t)sign;            /* underflow: zero */
    if (exp < 127 - 14) {                                 /* subnormal half */
        uint32_t shift = 127 - 14 - exp + 13, m = man | 0x800000, r = m >> shift, rem = m & ((1u << shift) - 1),
                 half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return (uint16_t)(sign | r);
    }
    {
        uint32_t h = sign | ((exp - 112) << 10) | (man >> 13), rem = man & 0x1FFF;
        if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++; /* round to nearest even; may carry into exp */
        return (uint16_t)h;
    }
}

/* Round half away from zero, for |x| well inside int range (libm's roundf is a slow call). */
static int mlstack__iround(float x) { return (int)(x >= 0 ? x + 0.5f : x - 0.5f); }

/* One block of 32 floats -> scale and int8 values in [-127, 127] (round half away from zero). */
static float mlstack__quant_block(const float *x, int8_t *q) {
    float amax = 0, d, id;
    int i;
    for (i = 0; i < MLSTACK__QK; i++)
        if (fabsf(x[i]) > amax) amax = fabsf(x[i]);
    d = amax / 127.0f;
    id = d > 0 ? 1.0f / d : 0.0f;
    for (i = 0; i < MLSTACK__QK; i++) q[i] = (int8_t)mlstack__iround(x[i] * id);
    return d;
}

/* x (B, n) -> xq (B, n/32) activation blocks. n must be a multiple of 32. */
static void mlstack__quantize_rows(const float *x, mlstack__q8x *xq, int B, int n) {
    int b, k, nb = n / MLSTACK__QK;
    for (b = 0; b < B; b++)
        for (k = 0; k < nb; k++)
            xq[(size_t)b * nb + k].d =
                mlstack__quant_block(x + (size_t)b * n + (size_t)k * MLSTACK__QK, xq[(size_t)b * nb + k].q);
}

/* A weight matrix: W (n_out, n_in) row-major in `wtype` (row r at data + r * row_bytes), and an
   optional f32 bias (n_out,). */
typedef struct mlstack__weight {
    const void *data;
    int wtype;
    int n_out, n_in;
    size_t row_bytes;
    const float *bias;
} mlstack__weight;

/* The kernel table: one per ISA, chosen once when an engine starts.
   matmul: y[b * n_out + o] = W[o] . x[b] (+ bias[o]) for o in [o0, o1), b in [0, B);
           x (B, n_in) f32; xq its Q8 blocks when W is quantized; scratch: n_in floats.
   dot:    a (n,) . b (n,)         axpy: y (n,) += a * x (n,) */
typedef struct mlstack__kernels {
    const char *name;
    void (*matmul)(const mlstack__weight *w, const float *x, const mlstack__q8x *xq, float *y, int B, int o0, int o1,
                   float *scratch);
    float (*dot)(const float *a, const float *b, int n);
    void (*axpy)(float *y, float a, const float *x, int n);
} mlstack__kernels;

/* a (n,) . b (n,) -> scalar, in the fixed order described above. */
static float mlstack__dot_f32(const float *a, const float *b, int n) {
    float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    int i = 0, j;
    for (; i + 8 <= n; i += 8)
        for (j = 0; j < 8; j++) s[j] += a[i + j] * b[i + j];
    for (j = 0; i < n; i++, j++) s[j] += a[i] * b[i];
    return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

static void mlstack__axpy_scalar(float *y, float a, const float *x, int n) {
    int i;
    for (i = 0; i < n; i++) y[i] += a * x[i];
}

/* Quantized row . activation blocks: sum over blocks of d_w * d_x * (integer dot), in block order. */
static float mlstack__dot_q8_0_scalar(const mlstack__q8_0 *w, const mlstack__q8x *x, int nb) {
    float acc = 0;
    int k, i;
    for (k = 0; k < nb; k++) {
        int32_t s = 0;
        for (i = 0; i < MLSTACK__QK; i++) s += (int32_t)w[k].q[i] * x[k].q[i];
        acc += mlstack__f16_to_f32(w[k].d) * x[k].d * (float)s;
    }
    return acc;
}
static float mlstack__dot_q4_0_scalar(const mlstack__q4_0 *w, const mlstack__q8x *x, int nb) {
    float acc = 0;
    int k, i;
    for (k = 0; k < nb; k++) {
        int32_t s = 0;
        for (i = 0; i < MLSTACK__QK / 2; i++)
            s += ((int32_t)(w[k].q[i] & 15) - 8) * x[k].q[i] + ((int32_t)(w[k].q[i] >> 4) - 8) * x[k].q[i + 16];
        acc += mlstack__f16_to_f32(w[k].d) * x[k].d * (float)s;
    }
    return acc;
}

static void mlstack__matmul_scalar(const mlstack__weight *w, const float *x, const mlstack__q8x *xq, float *y, int B,
                                   int o0, int o1, float *row) {
    int o, b, nb = w->n_in / MLSTACK__QK;
    for (o = o0; o < o1; o++) {
        const unsigned char *src = (const unsigned char *)w->data + (size_t)o * w->row_bytes;
        const float *wr = row;
        if (w->wtype == MLSTACK__W_F32) wr = (const float *)(const void *)src;
        else if (w->wtype == MLSTACK__W_F16 || w->wtype == MLSTACK__W_BF16)
            mlstack__to_f32((mlstack_dtype)w->wtype, src, row, (size_t)w->n_in);
        for (b = 0; b < B; b++) {
            float v;
            if (w->wtype == MLSTACK__W_Q8_0)
                v = mlstack__dot_q8_0_scalar((const mlstack__q8_0 *)(const void *)src, xq + (size_t)b * nb, nb);
            else if (w->wtype == MLSTACK__W_Q4_0)
                v = mlstack__dot_q4_0_scalar((const mlstack__q4_0 *)(const void *)src, xq + (size_t)b * nb, nb);
            else
                v = mlstack__dot_f32(wr, x + (size_t)b * w->n_in, w->n_in);
            if (w->bias) v += w->bias[o];
            y[(size_t)b * w->n_out + o] = v;
        }
    }
}

static const mlstack__kernels mlstack__kernels_scalar = {"scalar", mlstack__matmul_scalar, mlstack__dot_f32,
                                                         mlstack__axpy_scalar};

typedef struct mlstack__matmul_job {
    const mlstack__kernels *k;
    const mlstack__weight *w;
    const float *x;
    const mlstack__q8x *xq;
    float *y;
    int B, rows_per_task;
    float *scratch; /* n_threads * n_in floats */
} mlstack__matmul_job;

static void mlstack__matmul_task(void *ctx, int task, int n_tasks, int thread) {
    const mlstack__matmul_job *j = (const mlstack__matmul_job *)ctx;
    int o0 = task * j->rows_per_task, o1 = o0 + j->rows_per_task;
    (void)n_tasks;
    if (o1 > j->w->n_out) o1 = j->w->n_out;
    j->k->matmul(j->w, j->x, j->xq, j->y, j->B, o0, o1, j->scratch + (size_t)thread * (size_t)j->w->n_in);
}

/* x (B, n_in) @ W^T -> y (B, n_out), + bias. Work split by output rows, in tasks of a fixed
   size, so each element is computed the same way whatever the thread count. xq: room for
   B * n_in / 32 activation blocks (used when W is quantized). */
static void mlstack__matmul(mlstack__pool *pool, const mlstack__kernels *k, float *scratch, mlstack__q8x *xq,
                            const mlstack__weight *w, const float *x, float *y, int B) {
    mlstack__matmul_job j;
    j.k = k;
    j.w = w;
    j.x = x;
    j.xq = xq;
    j.y = y;
    j.B = B;
    j.scratch = scratch;
    j.rows_per_task = 16;
    if (w->wtype == MLSTACK__W_Q8_0 || w->wtype == MLSTACK__W_Q4_0) mlstack__quantize_rows(x, xq, B, w->n_in);
    mlstack__pool_run(pool, mlstack__matmul_task, &j, (w->n_out + j.rows_per_task - 1) / j.rows_per_task);
}

/* RMSNorm of x (n,) with weight w (n,): out = w * x / sqrt(mean(x^2) + eps). */
static void mlstack__rmsnorm(float *out, const float *x, const float *w, int n, float eps) {
    double ss = 0;
    float scale;
    int i;
    for (i = 0; i < n; i++) ss += (double)x[i] * x[i];
    scale = 1.0f / sqrtf((float)(ss / n) + eps);
    for (i = 0; i < n; i++) out[i] = w[i] * (x[i] * scale);
}

/* Rotary embedding, Hugging Face rotate-half layout, on one head vector v (Dh,):
   pairs (i, i + Dh/2) rotate by angle pos * inv_freq[i]. */
static void mlstack__rope(float *v, int Dh, int pos, const float *inv_freq) {
    int half = Dh / 2, i;
    for (i = 0; i < half; i++) {
        float ang = (float)pos * inv_freq[i];
        float c = cosf(ang), s = sinf(ang);
        float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
    }
}

static float mlstack__silu(float x) { return x / (1.0f + expf(-x)); }

/* ==== 10. KERNELS AVX2 ==== */  /* >>avx2 */
/* x86-64 with AVX2 + FMA + F16C, compiled per function with target attributes so one binary
   runs everywhere and picks this path at run time. Same layouts as section 9. Reduction order
   per output element: 8 lanes over the reduction index (lane = index mod 8), tail zero-padded
   into the same lanes, lanes summed in a fixed tree; the B loop never changes it. */
#if defined(MLSTACK__X86) && !defined(MLSTACK_NO_AVX2)
#define MLSTACK__HAVE_AVX2 1
#define MLSTACK__T_AVX2 __attribute__((target("avx2,fma,f16c")))

static MLSTACK__T_AVX2 float mlstack__hsum256(__m256 v) {
    __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
    lo = _mm_add_ps(lo, hi);
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
    return _mm_cvtss_f32(lo);
}

/* 8 weights at element i of a row, as f32 */
static MLSTACK__T_AVX2 __m256 mlstack__ld8_f32(const unsigned char *r, int i) { return _mm256_loadu_ps((const float *)(const void *)r + i); }
static MLSTACK__T_AVX2 __m256 mlstack__ld8_f16(const unsigned char *r, int i) {
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(r + 2 * (size_t)i)));
}
static MLSTACK__T_AVX2 __m256 mlstack__ld8_bf16(const unsigned char *r, int i) {
    __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)(r + 2 * (size_t)i)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
}

/* Float-weight matmul, 4 activation rows per pass over a weight row. */
#define MLSTACK__MM_AVX2(NAME, LOAD, WT)                                                                       \
    static MLSTACK__T_AVX2 void NAME(const mlstack__weight *w, const float *x, float *y, int B, int o0, int o1) { \
        int n = w->n_in, n8 = n & ~7, o, b, i, j;                                                               \
        for (o = o0; o < o1; o++) {                                                                             \
            const unsigned char *row = (const unsigned char *)w->data + (size_t)o * w->row_bytes;               \
            float wt[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                              \
            __m256 wtail;                                                                                       \
            if (n8 < n) mlstack__to_f32(WT, row + (size_t)n8 * (w->row_bytes / (size_t)n), wt, (size_t)(n - n8)); \
            wtail = _mm256_loadu_ps(wt);                                                                        \
            for (b = 0; b < B;) {                                                                               \
                int nr = B - b >= 4 ? 4 : 1;                                                                    \
                __m256 acc[4];                                                                                  \
                for (j = 0; j < nr; j++) acc[j] = _mm256_setzero_ps();                                          \
                for (i = 0; i < n8; i += 8) {                                                                   \
                    __m256 wv = LOAD(row, i);                                                                   \
                    for (j = 0; j < nr; j++)                                                                    \
                        acc[j] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(x + (size_t)(b + j) * n + i), acc[j]);     \
                }                                                                                               \
                for (j = 0; j < nr; j++) {                                                                      \
                    float v;                                                                                    \
                    if (n8 < n) {                                                                               \
                        float xt[8] = {0, 0, 0, 0, 0, 0, 0, 0};                                                  \
                        memcpy(xt, x + (size_t)(b + j) * n + n8, sizeof(float) * (size_t)(n - n8));             \
                        acc[j] = _mm256_fmadd_ps(wtail, _mm256_loadu_ps(xt), acc[j]);                          \
                    }                                                                                           \
                    v = mlstack__hsum256(acc[j]);                                                               \
                    if (w->bias) v += w->bias[o];                                                               \
                    y[(size_t)(b + j) * w->n_out + o] = v;                                                      \
                }                                                                                               \
                b += nr;                                                                                        \
            }                                                                                                   \
        }                                                                                                       \
    }
MLSTACK__MM_AVX2(mlstack__mm_f32_avx2, mlstack__ld8_f32, MLSTACK_DTYPE_F32)
MLSTACK__MM_AVX2(mlstack__mm_f16_avx2, mlstack__ld8_f16, MLSTACK_DTYPE_F16)
MLSTACK__MM_AVX2(mlstack__mm_bf16_avx2, mlstack__ld8_bf16, MLSTACK_DTYPE_BF16)

/* 32 signed bytes . 32 signed bytes -> 8 int32 partial sums (|w| <= 127 so no saturation). */
static MLSTACK__T_AVX2 __m256i mlstack__dot_i8_avx2(__m256i w, __m256i x) {
    __m256i p = _mm256_maddubs_epi16(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
    return _mm256_madd_epi16(p, _mm256_set1_epi16(1));
}
static MLSTACK__T_AVX2 __m256i mlstack__q4_unpack_avx2(const uint8_t *q) {
    __m128i raw = _mm_loadu_si128((const __m128i *)(const void *)q);
    __m256i v = _mm256_set_m128i(_mm_srli_epi16(raw, 4), raw);
    return _mm256_sub_epi8(_mm256_and_si256(v, _mm256_set1_epi8(15)), _mm256_set1_epi8(8));
}

static MLSTACK__T_AVX2 void mlstack__mm_q_avx2(const mlstack__weight *w, const mlstack__q8x *xq, float *y, int B, int o0,
                                               int o1) {
    int nb = w->n_in / MLSTACK__QK, o, b, k;
    for (o = o0; o < o1; o++) {
        const unsigned char *row = (const unsigned char *)w->data + (size_t)o * w->row_bytes;
        for (b = 0; b < B; b++) {
            const mlstack__q8x *xb = xq + (size_t)b * nb;
            __m256 acc = _mm256_setzero_ps();
            float v;
            for (k = 0; k < nb; k++) {
                __m256i qw;
                float d;
                if (w->wtype == MLSTACK__W_Q8_0) {
                    const mlstack__q8_0 *blk = (const mlstack__q8_0 *)(const void *)row + k;
                    qw = _mm256_loadu_si256((const __m256i *)(const void *)blk->q);
                    d = _cvtsh_ss(blk->d);
                } else {
                    const mlstack__q4_0 *blk = (const mlstack__q4_0 *)(const void *)row + k;
                    qw = mlstack__q4_unpack_avx2(blk->q);
                    d = _cvtsh_ss(blk->d);
                }
                acc = _mm256_fmadd_ps(_mm256_set1_ps(d * xb[k].d),
                                      _mm256_cvtepi32_ps(mlstack__dot_i8_avx2(qw, _mm256_loadu_si256((const __m256i *)(const void *)xb[k].q))),
                                      acc);
            }
            v = mlstack__hsum256(acc);
            if (w->bias) v += w->bias[o];
            y[(size_t)b * w->n_out + o] = v;
        }
    }
}

static MLSTACK__T_AVX2 void mlstack__matmul_avx2(const mlstack__weight *w, const float *x, const mlstack__q8x *xq, float *y,
                                                 int B, int o0, int o1, float *scratch) {
    (void)scratch;
    switch (w->wtype) {
    case MLSTACK__W_F32: mlstack__mm_f32_avx2(w, x, y, B, o0, o1); break;
    case MLSTACK__W_F16: mlstack__mm_f16_avx2(w, x, y, B, o0, o1); break;
    case MLSTACK__W_BF16: mlstack__mm_bf16_avx2(w, x, y, B, o0, o1); break;
    default: mlstack__mm_q_avx2(w, xq, y, B, o0, o1); break;
    }
}

static MLSTACK__T_AVX2 float mlstack__dot_avx2(const float *a, const float *b, int n) {
    __m256 acc = _mm256_setzero_ps();
    int i = 0;
    float s;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
    s = mlstack__hsum256(acc);
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}
static MLSTACK__T_AVX2 void mlstack__axpy_avx2(float *y, float a, const float *x, int n) {
    __m256 av = _mm256_set1_ps(a);
    int i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) y[i] += a * x[i];
}

static const mlstack__kernels mlstack__kernels_avx2 = {"avx2", mlstack__matmul_avx2, mlstack__dot_avx2, mlstack__axpy_avx2};
#endif

/* ==== 11. KERNELS AVX512 ==== */  /* >>avx512 */
/* AVX-512 F/BW/VL/DQ (+ VNNI for the int8 dots when present). 16 lanes, tails by masked loads
   into the same lanes; otherwise as section 10. */
#if defined(MLSTACK__X86) && !defined(MLSTACK_NO_AVX512)
#define MLSTACK__HAVE_AVX512 1
#define MLSTACK__T_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define MLSTACK__T_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

static MLSTACK__T_AVX512 __m512 mlstack__ld16_f32(const unsigned char *r, int i, __mmask16 m) {
    return _mm512_maskz_loadu_ps(m, (const float *)(const void *)r + i);
}
static MLSTACK__T_AVX512 __m512 mlstack__ld16_f16(const unsigned char *r, int i, __mmask16 m) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)(const void *)r + i));
}
static MLSTACK__T_AVX512 __m512 mlstack__ld16_bf16(const unsigned char *r, int i, __mmask16 m) {
    __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, (const uint16_t *)(const void *)r + i));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
}

#define MLSTACK__MM_AVX512(NAME, LOAD)                                                                             \
    static MLSTACK__T_AVX512 void NAME(const mlstack__weight *w, const float *x, float *y, int B, int o0, int o1) { \
        int n = w->n_in, n16 = n & ~15, o, b, i, j;                                                                 \
        __mmask16 tail = (__mmask16)((1u << (n & 15)) - 1);                                                         \
        for (o = o0; o < o1; o++) {                                                                                 \
            const unsigned char *row = (const unsigned char *)w->data + (size_t)o * w->row_bytes;                   \
            for (b = 0; b < B;) {                                                                                   \
                int nr = B - b >= 4 ? 4 : 1;                                                                        \
                __m512 acc[4];                                                                                      \
                for (j = 0; j < nr; j++) acc[j] = _mm512_setzero_ps();                                              \
                for (i = 0; i < n16; i += 16) {                                                                     \
                    __m512 wv = LOAD(row, i, (__mmask16)0xFFFF);                                                    \
                    for (j = 0; j < nr; j++)                                                                        \
                        acc[j] = _mm512_fmadd_ps(wv, _mm512_loadu_ps(x + (size_t)(b + j) * n + i), acc[j]);         \
                }                                                                                                   \
                if (tail) {                                                                                         \
                    __m512 wv = LOAD(row, n16, tail);                                                               \
                    for (j = 0; j < nr; j++)                                                                        \
                        acc[j] = _mm512_fmadd_ps(wv, _mm512_maskz_loadu_ps(tail, x + (size_t)(b + j) * n + n16), acc[j]); \
                }                                                                                                   \
                for (j = 0; j < nr; j++) {                                                                          \
                    float v = _mm512_reduce_add_ps(acc[j]);                                                         \
                    if (w->bias) v += w->bias[o];                                                                   \
                    y[(size_t)(b + j) * w->n_out + o] = v;                                                          \
                }                                                                                                   \
                b += nr;                                                                                            \
            }                                                                                                       \
        }                                                                                                           \
    }
MLSTACK__MM_AVX512(mlstack__mm_f32_avx512, mlstack__ld16_f32)
MLSTACK__MM_AVX512(mlstack__mm_f16_avx512, mlstack__ld16_f16)
MLSTACK__MM_AVX512(mlstack__mm_bf16_avx512, mlstack__ld16_bf16)

/* int8 block dots with VNNI: |w| as unsigned times sign-adjusted x, 4 bytes per int32 lane. */
static MLSTACK__T_VNNI void mlstack__mm_q_vnni(const mlstack__weight *w, const mlstack__q8x *xq, float *y, int B, int o0,
                                               int o1) {
    int nb = w->n_in / MLSTACK__QK, o, b, k;
    for (o = o0; o < o1; o++) {
        const unsigned char *row = (const unsigned char *)w->data + (size_t)o * w->row_bytes;
        for (b = 0; b < B; b++) {
            const mlstack__q8x *xb = xq + (size_t)b * nb;
            __m256 acc = _mm256_setzero_ps();
            float v;
            for (k = 0; k < nb; k++) {
                __m256i qw, qx = _mm256_loadu_si256((const __m256i *)(const void *)xb[k].q), s;
                float d;
                if (w->wtype == MLSTACK__W_Q8_0) {
                    const mlstack__q8_0 *blk = (const mlstack__q8_0 *)(const void *)row + k;
                    qw = _mm256_loadu_si256((const __m256i *)(const void *)blk->q);
                    d = _cvtsh_ss(blk->d);
                } else {
                    const mlstack__q4_0 *blk = (const mlstack__q4_0 *)(const void *)row + k;
                    __m128i raw = _mm_loadu_si128((const __m128i *)(const void *)blk->q);
                    qw = _mm256_sub_epi8(_mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(15)),
                                         _mm256_set1_epi8(8));
                    d = _cvtsh_ss(blk->d);
                }
                s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(qw), _mm256_sign_epi8(qx, qw));
                acc = _mm256_fmadd_ps(_mm256_set1_ps(d * xb[k].d), _mm256_cvtepi32_ps(s), acc);
            }
            {
                __m128 lo = _mm_add_ps(_mm256_castps256_ps128(acc), _mm256_extractf128_ps(acc, 1));
                lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
                lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
                v = _mm_cvtss_f32(lo);
            }
            if (w->bias) v += w->bias[o];
            y[(size_t)b * w->n_out + o] = v;
        }
    }
}

static MLSTACK__T_AVX512 float mlstack__dot_avx512(const float *a, const float *b, int n) {
    __m512 acc = _mm512_setzero_ps();
    int i = 0;
    for (; i + 16 <= n; i += 16) acc = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc);
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc);
    }
    return _mm512_reduce_add_ps(acc);
}
static MLSTACK__T_AVX512 void mlstack__axpy_avx512(float *y, float a, const float *x, int n) {
    __m512 av = _mm512_set1_ps(a);
    int i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(y + i, _mm512_fmadd_ps(av, _mm512_loadu_ps(x + i), _mm512_loadu_ps(y + i)));
    if (i < n) {
        __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(y + i, m, _mm512_fmadd_ps(av, _mm512_maskz_loadu_ps(m, x + i), _mm512_maskz_loadu_ps(m, y + i)));
    }
}

static MLSTACK__T_AVX512 void mlstack__matmul_avx512(const mlstack__weight *w, const float *x, const mlstack__q8x *xq,
                                                     float *y, int B, int o0, int o1, float *scratch) {
    (void)scratch;
    switch (w->wtype) {
    case MLSTACK__W_F32: mlstack__mm_f32_avx512(w, x, y, B, o0, o1); break;
    case MLSTACK__W_F16: mlstack__mm_f16_avx512(w, x, y, B, o0, o1); break;
    case MLSTACK__W_BF16: mlstack__mm_bf16_avx512(w, x, y, B, o0, o1); break;
    default: mlstack__mm_q_vnni(w, xq, y, B, o0, o1); break;
    }
}
static MLSTACK__T_AVX512 void mlstack__matmul_avx512_novnni(const mlstack__weight *w, const float *x, const mlstack__q8x *xq,
                                                            float *y, int B, int o0, int o1, float *scratch) {
    if (w->wtype == MLSTACK__W_Q8_0 || w->wtype == MLSTACK__W_Q4_0) mlstack__mm_q_avx2(w, xq, y, B, o0, o1);
    else mlstack__matmul_avx512(w, x, xq, y, B, o0, o1, scratch);
}

static const mlstack__kernels mlstack__kernels_avx512 = {"avx512+vnni", mlstack__matmul_avx512, mlstack__dot_avx512,
                                                         mlstack__axpy_avx512};
static const mlstack__kernels mlstack__kernels_avx512_novnni = {"avx512", mlstack__matmul_avx512_novnni,
                                                                mlstack__dot_avx512, mlstack__axpy_avx512};
#endif

/* ==== 12. KERNEL DISPATCH ==== */  /* >>dispatch */
/* What was compiled in, what this CPU supports, and the best path under a cap. The cap comes
   from the engine descriptor or, when that is empty, the MLSTACK_ISA environment variable
   (scalar | avx2 | avx512); a cap above what the CPU has selects the best the CPU has. */

typedef enum mlstack__isa { MLSTACK__ISA_SCALAR, MLSTACK__ISA_AVX2, MLSTACK__ISA_AVX512 } mlstack__isa;

static int mlstack__isa_parse(const char *s) {
    if (!s || !*s) return -1;
    if (strcmp(s, "scalar") == 0) return MLSTACK__ISA_SCALAR;
    if (strcmp(s, "avx2") == 0) return MLSTACK__ISA_AVX2;
    if (strcmp(s, "avx512") == 0) return MLSTACK__ISA_AVX512;
    return -2;
}

/* Best kernels at or below cap (-1: no cap). */
static const mlstack__kernels *mlstack__kernels_select(int cap) {
    mlstack__cpu c;
    if (cap < 0) cap = MLSTACK__ISA_AVX512;
    mlstack__cpu_detect(&c);
    (void)c;
#if defined(MLSTACK__HAVE_AVX512)
    if (cap >= MLSTACK__ISA_AVX512 && c.avx512f && c.avx512bw && c.avx512vl && c.avx512dq && c.fma && c.f16c && c.avx2)
        return c.avx512vnni ? &mlstack__kernels_avx512 : &mlstack__kernels_avx512_novnni;
#endif
#if defined(MLSTACK__HAVE_AVX2)
    if (cap >= MLSTACK__ISA_AVX2 && c.avx2 && c.fma && c.f16c) return &mlstack__kernels_avx2;
#endif
    return &mlstack__kernels_scalar;
}

/* "compiled: ... | supported: ..." for reports. */
static void mlstack__isa_report(char *buf, size_t cap) {
    mlstack__cpu c;
    mlstack__cpu_detect(&c);
    snprintf(buf, cap, "compiled: scalar%s%s | cpu: %s%s%s%s%s%s%s",
#if defined(MLSTACK__HAVE_AVX2)
             " avx2",
#else
             "",
#endif
#if defined(MLSTACK__HAVE_AVX512)
             " avx512",
#else
             "",
#endif
             c.avx2 ? "avx2 " : "", c.fma ? "fma " : "", c.f16c ? "f16c " : "", c.avx512f ? "avx512f " : "",
             c.avx512bw && c.avx512vl ? "avx512bw/vl " : "", c.avx512vnni ? "avx512vnni " : "",
             c.avx512bf16 ? "avx512bf16" : "");
}

/* ==== 13. QUANT ==== */  /* >>quant */
/* Load-time quantization of a weight matrix W (n_out, n_in) from F32/F16/BF16 into Q8_0 or
   Q4_0 rows (layouts in section 9). n_in must be a multiple of 32.
     Q8_0: d = max|w| / 127, q = round(w / d)
     Q4_0: m = the block value of largest magnitude (with its sign), d = m / -8,
           q = clamp(round(w / d) + 8, 0, 15) so m maps to 0 exactly. */

static void mlstack__quantize_row(int wtype, const float *x, void *dst, int n) {
    int k, i, nb = n / MLSTACK__QK;
    for (k = 0; k < nb; k++) {
        const float *xb = x + (size_t)k * MLSTACK__QK;
        if (wtype == MLSTACK__W_Q8_0) {
            mlstack__q8_0 *b = (mlstack__q8_0 *)dst + k;
            float d = mlstack__quant_block(xb, b->q);
            b->d = mlstack__f32_to_f16(d);
        } else {
            mlstack__q4_0 *b = (mlstack__q4_0 *)dst + k;
            float amax = 0, m = 0, d, id;
            for (i = 0; i < MLSTACK__QK; i++)
                if (fabsf(xb[i]) > amax) {
                    amax = fabsf(xb[i]);
                    m = xb[i];
                }
            d = m / -8.0f;
            id = d != 0 ? 1.0f / d : 0.0f;
            b->d = mlstack__f32_to_f16(d);
            for (i = 0; i < MLSTACK__QK / 2; i++) {
                int lo = mlstack__iround(xb[i] * id) + 8, hi = mlstack__iround(xb[i + 16] * id) + 8;
                lo = lo < 0 ? 0 : lo > 15 ? 15 : lo;
                hi = hi < 0 ? 0 : hi > 15 ? 15 : hi;
                b->q[i] = (uint8_t)(lo | (hi << 4));
            }
        }
    }
}

typedef struct mlstack__quant_job {
    const mlstack__weight *src;
    int wtype;
    unsigned char *dst;
    size_t dst_row;
    float *scratch; /* n_threads * n_in */
} mlstack__quant_job;

static void mlstack__quant_task(void *ctx, int task, int n_tasks, int thread) {
    const mlstack__quant_job *j = (const mlstack__quant_job *)ctx;
    const mlstack__weight *w = j->src;
    float *row = j->scratch + (size_t)thread * (size_t)w->n_in;
    int o, o0 = (int)((int64_t)w->n_out * task / n_tasks), o1 = (int)((int64_t)w->n_out * (task + 1) / n_tasks);
    for (o = o0; o < o1; o++) {
        mlstack__to_f32((mlstack_dtype)w->wtype, (const unsigned char *)w->data + (size_t)o * w->row_bytes, row,
                        (size_t)w->n_in);
        mlstack__quantize_row(j->wtype, row, j->dst + (size_t)o * j->dst_row, w->n_in);
    }
}

/* Quantizes w into dst (n_out * row_bytes(wtype) bytes) on the pool; *w then describes dst. */
static int mlstack__quantize_weight(mlstack__pool *pool, mlstack__weight *w, int wtype, void *dst) {
    mlstack__quant_job j;
    j.src = w;
    j.wtype = wtype;
    j.dst = (unsigned char *)dst;
    j.dst_row = mlstack__row_bytes(wtype, w->n_in);
    j.scratch = (float *)MLSTACK_MALLOC(sizeof(float) * (size_t)w->n_in * (size_t)pool->n_threads);
    if (!j.scratch) return -1;
    mlstack__pool_run(pool, mlstack__quant_task, &j, pool->n_threads * 4);
    MLSTACK_FREE(j.scratch);
    w->data = dst;
    w->wtype = wtype;
    w->row_bytes = j.dst_row;
    return 0;
}

/* ==== 10. MODEL ==== */  /* >>model */
/* config.json (+ generation_config.json) -> hyperparameters; safetensors -> a weight map.
   Supported: LlamaForCausalLM (Llama 2/3.x, TinyLlama, SmolLM), MistralForCausalLM,
   Qwen2ForCausalLM (q/k/v biases), Qwen3ForCausalLM (per-head q/k RMSNorm). */

typedef enum mlstack__arch { MLSTACK__ARCH_LLAMA, MLSTACK__ARCH_MISTRAL, MLSTACK__ARCH_QWEN2, MLSTACK__ARCH_QWEN3 } mlstack__arch;

typedef struct mlstack__config {
    mlstack__arch arch;
    char architecture[64];
    int n_layers, n_embd, n_ff, n_heads, n_kv_heads, head_dim, n_vocab, max_pos;
    int tied, attn_bias, o_bias, mlp_bias, qk_norm;
    int sliding_window; /* 0: none */
    float eps, rope_theta;
    int rope_kind; /* 0 default, 1 linear, 2 llama3 */
    float rope_factor, rope_low, rope_high;
    int rope_orig_max;
    int32_t bos_id;
    int n_eos;
    int32_t eos_ids[MLSTACK_MAX_EOS];
} mlstack__config;

typedef struct mlstack__layer {
    const float *attn_norm, *ffn_norm, *q_norm, *k_norm; /* f32 (copies when stored otherwise) */
    mlstack__weight wq, wk, wv, wo, w_gate, w_up, w_down;
} mlstack__layer;

struct mlstack_model {
    mlstack__config cfg;
    mlstack__st st;
    mlstack__layer *layers;
    const void *embed;          /* (V, D) as stored */
    mlstack_dtype embed_dtype;
    const float *final_norm;
    mlstack__weight lm_head;
    float *inv_freq;            /* (Dh/2,) rotary frequencies after scaling */
    void **owned;               /* f32 copies made at load (norms, biases, realigned data) */
    int n_owned, cap_owned;
    char *path;
    uint64_t n_params, weight_bytes;
};

static int mlstack__json_int(const mlstack__json *v, int64_t *out) {
    if (!v || v->type != MLSTACK__JSON_NUMBER) return 0;
    if (v->is_int) {
        *out = v->i;
        return 1;
    }
    if (v->num == floor(v->num) && fabs(v->num) < 9e15) {
        *out = (int64_t)v->num;
        return 1;
    }
    return 0;
}

/* Reads a positive integer field (required or with default `def` when def > 0). */
static mlstack_result mlstack__cfg_int(const mlstack__json *root, const char *key, int def, int *out, const char *file,
                                       mlstack_error *err) {
    const mlstack__json *v = mlstack__json_get(root, key);
    int64_t x;
    if (mlstack__json_is_null(v)) {
        if (def > 0) {
            *out = def;
            return MLSTACK_OK;
        }
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: missing required field \"%s\"", file, key);
    }
    if (!mlstack__json_int(v, &x) || x <= 0 || x > (1 << 30))
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: field \"%s\" is %.*s (expected a positive integer)", file,
                             key, (int)(v->type == MLSTACK__JSON_NUMBER || v->type == MLSTACK__JSON_STRING ? (v->len > 40 ? 40 : v->len) : 7), v->type == MLSTACK__JSON_NUMBER || v->type == MLSTACK__JSON_STRING ? v->str : "not a number");
    *out = (int)x;
    return MLSTACK_OK;
}

static mlstack_result mlstack__cfg_float(const mlstack__json *root, const char *key, float def, float *out,
                                         const char *file, mlstack_error *err) {
    const mlstack__json *v = mlstack__json_get(root, key);
    if (mlstack__json_is_null(v)) {
        *out = def;
        return MLSTACK_OK;
    }
    if (v->type != MLSTACK__JSON_NUMBER || !(v->num > 0) || v->num > 1e30)
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: field \"%s\" must be a positive number", file, key);
    *out = (float)v->num;
    return MLSTACK_OK;
}

static int mlstack__json_bool(const mlstack__json *v, int def) {
    if (!v || v->type == MLSTACK__JSON_NULL) return def;
    return v->type == MLSTACK__JSON_TRUE;
}

/* Token ids: an int, a list of ints, or null. */
static mlstack_result mlstack__cfg_ids(const mlstack__json *v, int32_t *ids, int *n, int cap, int n_vocab, const char *file,
                                       const char *key, mlstack_error *err) {
    const mlstack__json *e;
    int64_t x;
    *n = 0;
    if (mlstack__json_is_null(v)) return MLSTACK_OK;
    if (v->type == MLSTACK__JSON_NUMBER) {
        if (!mlstack__json_int(v, &x) || x < 0 || x >= n_vocab)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: \"%s\" = %.*s is not a token id below vocab_size %d", file,
                                 key, (int)v->len, v->str, n_vocab);
        ids[(*n)++] = (int32_t)x;
        return MLSTACK_OK;
    }
    if (v->type != MLSTACK__JSON_ARRAY)
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: \"%s\" must be a token id or a list of ids", file, key);
    for (e = v->child; e; e = e->next) {
        if (!mlstack__json_int(e, &x) || x < 0 || x >= n_vocab)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: \"%s\" holds an entry that is not a token id below %d",
                                 file, key, n_vocab);
        if (*n >= cap) return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "%s: \"%s\" lists more than %d ids", file, key, cap);
        ids[(*n)++] = (int32_t)x;
    }
    return MLSTACK_OK;
}

static mlstack_result mlstack__config_parse(mlstack__config *c, const mlstack__json *root, const mlstack__json *gen,
                                            const char *file, mlstack_error *err) {
    static const struct {
        const char *name;
        mlstack__arch arch;
    } archs[] = {{"LlamaForCausalLM", MLSTACK__ARCH_LLAMA},
                 {"MistralForCausalLM", MLSTACK__ARCH_MISTRAL},
                 {"Qwen2ForCausalLM", MLSTACK__ARCH_QWEN2},
                 {"Qwen3ForCausalLM", MLSTACK__ARCH_QWEN3}};
    const mlstack__json *a = mlstack__json_get(root, "architectures"), *v, *rs, *rp;
    mlstack_result r;
    size_t k;
    int found = 0;
    memset(c, 0, sizeof *c);
    if (!root || root->type != MLSTACK__JSON_OBJECT)
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: not a JSON object", file);
    if (!a || a->type != MLSTACK__JSON_ARRAY || !a->child || a->child->type != MLSTACK__JSON_STRING)
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: missing field \"architectures\" (a list of class names)", file);
    for (k = 0; k < sizeof archs / sizeof archs[0]; k++) {
        if (mlstack__json_is_str(a->child, archs[k].name)) {
            c->arch = archs[k].arch;
            found = 1;
        }
    }
    if (!found)
        return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED,
                             "%s: architectures[0] = \"%.60s\" is not supported (supported: LlamaForCausalLM, "
                             "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)",
                             file, a->child->str);
    snprintf(c->architecture, sizeof c->architecture, "%s", a->child->str);
    if ((r = mlstack__cfg_int(root, "hidden_size", 0, &c->n_embd, file, err)) ||
        (r = mlstack__cfg_int(root, "intermediate_size", 0, &c->n_ff, file, err)) ||
        (r = mlstack__cfg_int(root, "num_hidden_layers", 0, &c->n_layers, file, err)) ||
        (r = mlstack__cfg_int(root, "num_attention_heads", 0, &c->n_heads, file, err)) ||
        (r = mlstack__cfg_int(root, "vocab_size", 0, &c->n_vocab, file, err)) ||
        (r = mlstack__cfg_int(root, "num_key_value_heads", c->n_heads, &c->n_kv_heads, file, err)) ||
        (r = mlstack__cfg_int(root, "max_position_embeddings", 2048, &c->max_pos, file, err)))
        return r;
    if (c->n_heads % c->n_kv_heads)
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT,
                             "%s: num_attention_heads %d is not a multiple of num_key_value_heads %d", file, c->n_heads,
                             c->n_kv_heads);
    v = mlstack__json_get(root, "head_dim");
    if (mlstack__json_is_null(v)) {
        if (c->n_embd % c->n_heads)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT,
                                 "%s: hidden_size %d is not a multiple of num_attention_heads %d (and no head_dim)",
                                 file, c->n_embd, c->n_heads);
        c->head_dim = c->n_embd / c->n_heads;
    } else if ((r = mlstack__cfg_int(root, "head_dim", 0, &c->head_dim, file, err)) != MLSTACK_OK) {
        return r;
    }
    if (c->head_dim % 2)
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: head_dim %d must be even for rotary embeddings", file, c->head_dim);
    v = mlstack__json_get(root, "hidden_act");
    if (!mlstack__json_is_null(v) && !mlstack__json_is_str(v, "silu"))
        return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "%s: hidden_act = \"%.40s\" is not supported (expected \"silu\")",
                             file, v->type == MLSTACK__JSON_STRING ? v->str : "?");
    if ((r = mlstack__cfg_float(root, "rms_norm_eps", 1e-6f, &c->eps, file, err)) != MLSTACK_OK) return r;
    /* rope: transformers 4.x writes rope_theta + rope_scaling; 5.x writes rope_parameters */
    rp = mlstack__json_get(root, "rope_parameters");
    rs = mlstack__json_get(root, "rope_scaling");
    if ((r = mlstack__cfg_float(root, "rope_theta", 10000.0f, &c->rope_theta, file, err)) != MLSTACK_OK) return r;
    if (!mlstack__json_is_null(rp)) {
        if (rp->type != MLSTACK__JSON_OBJECT)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: rope_parameters must be an object", file);
        if ((r = mlstack__cfg_float(rp, "rope_theta", c->rope_theta, &c->rope_theta, file, err)) != MLSTACK_OK) return r;
        if (mlstack__json_is_null(rs)) rs = rp;
    }
    if (!mlstack__json_is_null(rs)) {
        const mlstack__json *t = mlstack__json_get(rs, "rope_type");
        if (mlstack__json_is_null(t)) t = mlstack__json_get(rs, "type");
        if (rs->type != MLSTACK__JSON_OBJECT)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: rope_scaling must be an object or null", file);
        if (mlstack__json_is_null(t) || mlstack__json_is_str(t, "default")) {
            c->rope_kind = 0;
        } else if (mlstack__json_is_str(t, "linear")) {
            c->rope_kind = 1;
            if ((r = mlstack__cfg_float(rs, "factor", 0, &c->rope_factor, file, err)) != MLSTACK_OK) return r;
            if (!(c->rope_factor > 0))
                return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: rope_scaling.factor missing for linear scaling", file);
        } else if (mlstack__json_is_str(t, "llama3")) {
            c->rope_kind = 2;
            if ((r = mlstack__cfg_float(rs, "factor", 0, &c->rope_factor, file, err)) ||
                (r = mlstack__cfg_float(rs, "low_freq_factor", 0, &c->rope_low, file, err)) ||
                (r = mlstack__cfg_float(rs, "high_freq_factor", 0, &c->rope_high, file, err)) ||
                (r = mlstack__cfg_int(rs, "original_max_position_embeddings", 0, &c->rope_orig_max, file, err)))
                return r;
            if (!(c->rope_factor > 0) || !(c->rope_low > 0) || !(c->rope_high > c->rope_low))
                return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT,
                                     "%s: llama3 rope_scaling needs factor, low_freq_factor < high_freq_factor", file);
        } else {
            return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED,
                                 "%s: rope_scaling type \"%.40s\" is not supported (supported: default, linear, llama3)",
                                 file, t->type == MLSTACK__JSON_STRING ? t->str : "?");
        }
    }
    c->tied = mlstack__json_bool(mlstack__json_get(root, "tie_word_embeddings"), 0);
    c->attn_bias = c->arch == MLSTACK__ARCH_QWEN2 || mlstack__json_bool(mlstack__json_get(root, "attention_bias"), 0);
    c->o_bias = c->arch != MLSTACK__ARCH_QWEN2 && mlstack__json_bool(mlstack__json_get(root, "attention_bias"), 0);
    c->mlp_bias = mlstack__json_bool(mlstack__json_get(root, "mlp_bias"), 0);
    c->qk_norm = c->arch == MLSTACK__ARCH_QWEN3;
    if (c->arch == MLSTACK__ARCH_QWEN2 || c->arch == MLSTACK__ARCH_QWEN3) {
        if (mlstack__json_bool(mlstack__json_get(root, "use_sliding_window"), 0))
            return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "%s: use_sliding_window = true is not supported", file);
    } else {
        int64_t w;
        v = mlstack__json_get(root, "sliding_window");
        if (!mlstack__json_is_null(v)) {
            if (!mlstack__json_int(v, &w) || w <= 0 || w > INT_MAX)
                return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: sliding_window must be a positive integer or null", file);
            c->sliding_window = (int)w;
        }
    }
    c->bos_id = -1;
    {
        int32_t b[1];
        int nb = 0;
        const mlstack__json *bv = mlstack__json_get(gen, "bos_token_id");
        if (!bv) bv = mlstack__json_get(root, "bos_token_id");
        if (bv && bv->type == MLSTACK__JSON_NUMBER) {
            if ((r = mlstack__cfg_ids(bv, b, &nb, 1, c->n_vocab, file, "bos_token_id", err)) != MLSTACK_OK) return r;
            if (nb) c->bos_id = b[0];
        }
    }
    v = mlstack__json_get(gen, "eos_token_id");
    if (!v) v = mlstack__json_get(root, "eos_token_id");
    return mlstack__cfg_ids(v, c->eos_ids, &c->n_eos, MLSTACK_MAX_EOS, c->n_vocab, file, "eos_token_id", err);
}

/* Rotary inverse frequencies as transformers computes them (float32), then scaled. */
static void mlstack__rope_freqs(const mlstack__config *c, float *inv_freq) {
    int half = c->head_dim / 2, i;
    for (i = 0; i < half; i++) {
        float f = (float)(1.0 / pow((double)c->rope_theta, (double)(float)(2 * i) / (double)c->head_dim));
        if (c->rope_kind == 1) {
            f = f / c->rope_factor;
        } else if (c->rope_kind == 2) {
            double pi = 3.14159265358979323846;
            double low_wl = c->rope_orig_max / c->rope_low, high_wl = c->rope_orig_max / c->rope_high;
            double wl = 2 * pi / f;
            if (wl > low_wl) {
                f = f / c->rope_factor;
            } else if (wl >= high_wl) {
                double smooth = (c->rope_orig_max / wl - c->rope_low) / (c->rope_high - c->rope_low);
                f = (float)((1 - smooth) * f / c->rope_factor + smooth * f);
            }
        }
        inv_freq[i] = f;
    }
}

static void mlstack__model_free_owned(mlstack_model *m) {
    int i;
    for (i = 0; i < m->n_owned; i++) mlstack__aligned_free(m->owned[i]);
    MLSTACK_FREE(m->owned);
    m->owned = NULL;
    m->n_owned = m->cap_owned = 0;
}

static void *mlstack__model_own(mlstack_model *m, size_t bytes) {
    void *p;
    if (m->n_owned == m->cap_owned) {
        int cap = m->cap_owned ? m->cap_owned * 2 : 64;
        void **o = (void **)MLSTACK_REALLOC(m->owned, sizeof(void *) * (size_t)cap);
        if (!o) return NULL;
        m->owned = o;
        m->cap_owned = cap;
    }
    p = mlstack__aligned_alloc(bytes ? bytes : 1);
    if (p) m->owned[m->n_owned++] = p;
    return p;
}

/* Finds a tensor and checks its shape against (d0[, d1]); n_dims 1 or 2. */
static mlstack_result mlstack__model_tensor(mlstack_model *m, const char *name, int n_dims, int64_t d0, int64_t d1,
                                            const mlstack__st_tensor **out, mlstack_error *err) {
    const mlstack__st_tensor *t = mlstack__st_find(&m->st, name);
    *out = NULL;
    if (!t)
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: tensor %s is required by %s but missing", m->path, name,
                             m->cfg.architecture);
    if (t->dtype != MLSTACK_DTYPE_F32 && t->dtype != MLSTACK_DTYPE_F16 && t->dtype != MLSTACK_DTYPE_BF16)
        return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "%s: tensor %s has dtype %s (expected F32, F16 or BF16)",
                             m->path, name, mlstack__dtype_names[t->dtype]);
    if (t->n_dims != n_dims || t->shape[0] != d0 || (n_dims == 2 && t->shape[1] != d1))
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: tensor %s has shape [%lld%s%lld] but config.json implies [%lld%s%lld]",
                             m->path, name, (long long)t->shape[0], t->n_dims > 1 ? ", " : "",
                             (long long)(t->n_dims > 1 ? t->shape[1] : 0), (long long)d0, n_dims == 2 ? ", " : "",
                             (long long)(n_dims == 2 ? d1 : 0));
    m->n_params += (uint64_t)(t->end - t->begin) / (uint64_t)mlstack__dtype_sizes[t->dtype];
    m->weight_bytes += t->end - t->begin;
    *out = t;
    return MLSTACK_OK;
}

/* A vector parameter (norm weight, bias) as f32, copied when stored otherwise or misaligned. */
static mlstack_result mlstack__model_vec(mlstack_model *m, const char *name, int64_t n, const float **out,
                                         mlstack_error *err) {
    const mlstack__st_tensor *t;
    mlstack_result r = mlstack__model_tensor(m, name, 1, n, 0, &t, err);
    const void *src;
    float *dst;
    if (r != MLSTACK_OK) return r;
    src = m->st.files[t->file].data + t->begin;
    if (t->dtype == MLSTACK_DTYPE_F32 && ((uintptr_t)src & 3) == 0) {
        *out = (const float *)src;
        return MLSTACK_OK;
    }
    dst = (float *)mlstack__model_own(m, (size_t)n * sizeof(float));
    if (!dst) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    mlstack__to_f32(t->dtype, src, dst, (size_t)n);
    *out = dst;
    return MLSTACK_OK;
}

/* A projection weight (n_out, n_in) used as stored; realigned by copy only when the file puts
   it at an address unaligned for its element type. Bias (optional) as f32. */
static mlstack_result mlstack__model_linear(mlstack_model *m, const char *prefix, int n_out, int n_in, int has_bias,
                                            mlstack__weight *w, mlstack_error *err) {
    char name[256];
    const mlstack__st_tensor *t;
    mlstack_result r;
    const void *src;
    size_t esize;
    snprintf(name, sizeof name, "%s.weight", prefix);
    if ((r = mlstack__model_tensor(m, name, 2, n_out, n_in, &t, err)) != MLSTACK_OK) return r;
    src = m->st.files[t->file].data + t->begin;
    esize = (size_t)mlstack__dtype_sizes[t->dtype];
    if ((uintptr_t)src % esize) {
        void *copy = mlstack__model_own(m, (size_t)(t->end - t->begin));
        if (!copy) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
        memcpy(copy, src, (size_t)(t->end - t->begin));
        src = copy;
    }
    w->data = src;
    w->wtype = (int)t->dtype;
    w->n_out = n_out;
    w->n_in = n_in;
    w->row_bytes = mlstack__row_bytes(w->wtype, n_in);
    w->bias = NULL;
    if (has_bias) {
        snprintf(name, sizeof name, "%s.bias", prefix);
        if ((r = mlstack__model_vec(m, name, n_out, &w->bias, err)) != MLSTACK_OK) return r;
    }
    return MLSTACK_OK;
}

static mlstack_result mlstack__model_map_weights(mlstack_model *m, mlstack_error *err) {
    const mlstack__config *c = &m->cfg;
    const mlstack__st_tensor *t;
    mlstack_result r;
    char name[256];
    int l, q_dim = c->n_heads * c->head_dim, kv_dim = c->n_kv_heads * c->head_dim;
    if ((r = mlstack__model_tensor(m, "model.embed_tokens.weight", 2, c->n_vocab, c->n_embd, &t, err)) != MLSTACK_OK)
        return r;
    m->embed = m->st.files[t->file].data + t->begin;
    m->embed_dtype = t->dtype;
    if ((r = mlstack__model_vec(m, "model.norm.weight", c->n_embd, &m->final_norm, err)) != MLSTACK_OK) return r;
    if (c->tied) {
        mlstack__weight *w = &m->lm_head;
        w->data = m->embed;
        w->wtype = (int)m->embed_dtype;
        w->n_out = c->n_vocab;
        w->n_in = c->n_embd;
        w->row_bytes = mlstack__row_bytes(w->wtype, c->n_embd);
        w->bias = NULL;
        if ((uintptr_t)w->data % (uintptr_t)mlstack__dtype_sizes[m->embed_dtype]) {
            void *copy = mlstack__model_own(m, (size_t)(t->end - t->begin));
            if (!copy) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
            memcpy(copy, w->data, (size_t)(t->end - t->begin));
            w->data = copy;
        }
    } else if ((r = mlstack__model_linear(m, "lm_head", c->n_vocab, c->n_embd, 0, &m->lm_head, err)) != MLSTACK_OK) {
        return r;
    }
    m->layers = (mlstack__layer *)mlstack__calloc((size_t)c->n_layers, sizeof *m->layers);
    if (!m->layers) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    for (l = 0; l < c->n_layers; l++) {
        mlstack__layer *L = &m->layers[l];
#define MLSTACK__LNAME(suffix) (snprintf(name, sizeof name, "model.layers.%d.%s", l, suffix), name)
        if ((r = mlstack__model_vec(m, MLSTACK__LNAME("input_layernorm.weight"), c->n_embd, &L->attn_norm, err)) ||
            (r = mlstack__model_vec(m, MLSTACK__LNAME("post_attention_layernorm.weight"), c->n_embd, &L->ffn_norm, err)) ||
            (r = mlstack__model_linear(m, MLSTACK__LNAME("self_attn.q_proj"), q_dim, c->n_embd, c->attn_bias, &L->wq, err)) ||
            (r = mlstack__model_linear(m, MLSTACK__LNAME("self_attn.k_proj"), kv_dim, c->n_embd, c->attn_bias, &L->wk, err)) ||
            (r = mlstack__model_linear(m, MLSTACK__LNAME("self_attn.v_proj"), kv_dim, c->n_embd, c->attn_bias, &L->wv, err)) ||
            (r = mlstack__model_linear(m, MLSTACK__LNAME("self_attn.o_proj"), c->n_embd, q_dim, c->o_bias, &L->wo, err)) ||
            (r = mlstack__model_linear(m, MLSTACK__LNAME("mlp.gate_proj"), c->n_ff, c->n_embd, c->mlp_bias, &L->w_gate, err)) ||
            (r = mlstack__model_linear(m, MLSTACK__LNAME("mlp.up_proj"), c->n_ff, c->n_embd, c->mlp_bias, &L->w_up, err)) ||
            (r = mlstack__model_linear(m, MLSTACK__LNAME("mlp.down_proj"), c->n_embd, c->n_ff, c->mlp_bias, &L->w_down, err)))
            return r;
        if (c->qk_norm) {
            if ((r = mlstack__model_vec(m, MLSTACK__LNAME("self_attn.q_norm.weight"), c->head_dim, &L->q_norm, err)) ||
                (r = mlstack__model_vec(m, MLSTACK__LNAME("self_attn.k_norm.weight"), c->head_dim, &L->k_norm, err)))
                return r;
        }
#undef MLSTACK__LNAME
    }
    return MLSTACK_OK;
}

/* Quantizes every projection and the LM head (not the embedding table) to `quant`, using all
   CPUs; weights whose rows are not a multiple of 32 stay as stored. */
static mlstack_result mlstack__model_quantize(mlstack_model *m, mlstack_dtype quant, mlstack_error *err) {
    mlstack__pool pool;
    int l, i;
    if (quant != MLSTACK_DTYPE_Q8_0 && quant != MLSTACK_DTYPE_Q4_0)
        return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "quant = %s is not a load-time format (use Q8_0 or Q4_0)",
                             mlstack_dtype_name(quant));
    if (mlstack__pool_init(&pool, mlstack__cpu_count()) != 0) {
        mlstack__pool_free(&pool);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "could not start threads for quantization");
    }
    for (l = -1; l < m->cfg.n_layers; l++) {
        mlstack__weight *ws[7];
        int n = 0;
        if (l < 0) {
            ws[n++] = &m->lm_head;
        } else {
            mlstack__layer *L = &m->layers[l];
            ws[0] = &L->wq, ws[1] = &L->wk, ws[2] = &L->wv, ws[3] = &L->wo;
            ws[4] = &L->w_gate, ws[5] = &L->w_up, ws[6] = &L->w_down;
            n = 7;
        }
        for (i = 0; i < n; i++) {
            void *dst;
            if (ws[i]->n_in % MLSTACK__QK) continue;
            dst = mlstack__model_own(m, (size_t)ws[i]->n_out * mlstack__row_bytes((int)quant, ws[i]->n_in));
            if (!dst || mlstack__quantize_weight(&pool, ws[i], (int)quant, dst) != 0) {
                mlstack__pool_free(&pool);
                return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory while quantizing");
            }
        }
    }
    mlstack__pool_free(&pool);
    return MLSTACK_OK;
}

/* Reads and parses dir/name into doc; a missing optional file leaves doc empty. */
static mlstack_result mlstack__load_json_file(const char *dir, const char *name, int optional, mlstack__json_doc *doc,
                                              mlstack_error *err) {
    char *path = mlstack__path_join(dir, name), *text = NULL;
    size_t len;
    mlstack_result r;
    memset(doc, 0, sizeof *doc);
    if (!path) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    if (optional && !mlstack__file_exists(path)) {
        MLSTACK_FREE(path);
        return MLSTACK_OK;
    }
    r = mlstack__read_file(path, MLSTACK_MAX_JSON_BYTES, &text, &len, err);
    if (r == MLSTACK_OK) r = mlstack__json_parse(doc, text, len, path, err);
    MLSTACK_FREE(text);
    MLSTACK_FREE(path);
    return r;
}

MLSTACK_API void mlstack_model_close(mlstack_model *m) {
    if (!m) return;
    mlstack__st_close(&m->st);
    mlstack__model_free_owned(m);
    MLSTACK_FREE(m->layers);
    MLSTACK_FREE(m->inv_freq);
    MLSTACK_FREE(m->path);
    MLSTACK_FREE(m);
}

MLSTACK_API mlstack_result mlstack_model_open(const mlstack_model_desc *desc, mlstack_model **out, mlstack_error *err) {
    mlstack_model *m;
    mlstack__json_doc cfg_doc, gen_doc;
    mlstack_result r;
    char cfg_name[600];
    if (err) {
        err->code = MLSTACK_OK;
        err->message[0] = 0;
    }
    if (!out) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "mlstack_model_open: out is NULL");
    *out = NULL;
    if (!desc || !desc->path) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "mlstack_model_open: desc->path is NULL");
    m = (mlstack_model *)mlstack__calloc(1, sizeof *m);
    if (!m) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    m->path = mlstack__strndup(desc->path, strlen(desc->path));
    snprintf(cfg_name, sizeof cfg_name, "%s/config.json", desc->path);
    r = m->path ? mlstack__load_json_file(desc->path, "config.json", 0, &cfg_doc, err)
                : MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    if (r == MLSTACK_OK) {
        r = mlstack__load_json_file(desc->path, "generation_config.json", 1, &gen_doc, err);
        if (r == MLSTACK_OK) {
            r = mlstack__config_parse(&m->cfg, cfg_doc.root, gen_doc.root, cfg_name, err);
            mlstack__json_free(&gen_doc);
        }
        mlstack__json_free(&cfg_doc);
    }
    if (r == MLSTACK_OK) r = mlstack__st_open_dir(&m->st, desc->path, err);
    if (r == MLSTACK_OK) r = mlstack__model_map_weights(m, err);
    if (r == MLSTACK_OK && desc->quant != 0) r = mlstack__model_quantize(m, desc->quant, err);
    if (r == MLSTACK_OK) {
        m->inv_freq = (float *)mlstack__calloc((size_t)m->cfg.head_dim / 2, sizeof(float));
        if (!m->inv_freq) r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
        else mlstack__rope_freqs(&m->cfg, m->inv_freq);
    }
    if (r != MLSTACK_OK) {
        if (desc->log && err) desc->log(desc->log_user, 0, err->message);
        mlstack_model_close(m);
        return r;
    }
    *out = m;
    return MLSTACK_OK;
}

MLSTACK_API void mlstack_model_get_info(const mlstack_model *m, mlstack_model_info *o) {
    const mlstack__config *c = &m->cfg;
    int i;
    memset(o, 0, sizeof *o);
    o->architecture = c->architecture;
    o->n_layers = c->n_layers;
    o->n_embd = c->n_embd;
    o->n_ff = c->n_ff;
    o->n_heads = c->n_heads;
    o->n_kv_heads = c->n_kv_heads;
    o->head_dim = c->head_dim;
    o->n_vocab = c->n_vocab;
    o->max_position_embeddings = c->max_pos;
    o->tied_embeddings = c->tied;
    o->rms_norm_eps = c->eps;
    o->rope_theta = c->rope_theta;
    o->bos_id = c->bos_id;
    o->n_eos = c->n_eos;
    for (i = 0; i < c->n_eos; i++) o->eos_ids[i] = c->eos_ids[i];
    o->weight_dtype = (mlstack_dtype)m->layers[0].wq.wtype;
    o->n_params = m->n_params;
    o->weight_bytes = m->weight_bytes;
}

MLSTACK_API int mlstack_model_tensor_count(const mlstack_model *m) { return m ? m->st.n_tensors : 0; }

MLSTACK_API mlstack_result mlstack_model_tensor_at(const mlstack_model *m, int index, mlstack_tensor *out) {
    if (!m || !out || index < 0 || index >= m->st.n_tensors) return MLSTACK_ERR_INVALID_ARG;
    mlstack__st_view(&m->st, &m->st.tensors[index], out);
    return MLSTACK_OK;
}

MLSTACK_API mlstack_result mlstack_model_tensor_find(const mlstack_model *m, const char *name, mlstack_tensor *out) {
    const mlstack__st_tensor *t;
    if (!m || !name || !out) return MLSTACK_ERR_INVALID_ARG;
    t = mlstack__st_find(&m->st, name);
    if (!t) return MLSTACK_ERR_NOT_FOUND;
    mlstack__st_view(&m->st, t, out);
    return MLSTACK_OK;
}

/* ==== 11. KVCACHE ==== */  /* >>kvcache */
/* One pool of fixed-size pages allocated once under a byte budget. A page holds the keys and
   values of P consecutive positions of one sequence for every layer, so a sequence's cache is
   just its page table (page ids, one per P positions) and pages come and go in O(1) from a free
   stack. Layout of one page (f32):
       [layer][k or v][slot 0..P-1][kv head][Dh]
   i.e. element (l, kv, s, h, d) at ((l * 2 + kv) * P + s) * Hkv * Dh + h * Dh + d. */

typedef struct mlstack__kv_seq {
    int active;
    int32_t len;     /* positions held */
    int32_t *pages;  /* page table */
    int n_pages, cap_pages;
} mlstack__kv_seq;

typedef struct mlstack__kv {
    float *data;          /* n_pages * page_floats */
    int n_pages, page_tokens;
    size_t page_floats, row_floats; /* row: one slot of one layer's K (or V): Hkv * Dh */
    int *free_stack;
    int n_free;
    mlstack__kv_seq *seqs;
    int max_seqs;
} mlstack__kv;

static mlstack_result mlstack__kv_init(mlstack__kv *kv, const mlstack__config *c, uint64_t budget, int page_tokens,
                                       int max_seqs, mlstack_error *err) {
    uint64_t page_bytes;
    int i;
    memset(kv, 0, sizeof *kv);
    kv->page_tokens = page_tokens;
    kv->row_floats = (size_t)c->n_kv_heads * (size_t)c->head_dim;
    kv->page_floats = (size_t)c->n_layers * 2 * (size_t)page_tokens * kv->row_floats;
    page_bytes = (uint64_t)kv->page_floats * sizeof(float);
    if (budget / page_bytes < 1)
        return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "kv_mem %llu bytes is less than one page (%llu bytes)",
                             (unsigned long long)budget, (unsigned long long)page_bytes);
    if (budget / page_bytes > (uint64_t)INT_MAX / 2)
        return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "kv_mem too large");
    kv->n_pages = (int)(budget / page_bytes);
    if ((uint64_t)kv->n_pages * page_bytes > (uint64_t)SIZE_MAX)
        return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "kv_mem too large for this address space");
    kv->data = (float *)mlstack__aligned_alloc((size_t)kv->n_pages * (size_t)page_bytes);
    kv->free_stack = (int *)mlstack__calloc((size_t)kv->n_pages, sizeof(int));
    kv->seqs = (mlstack__kv_seq *)mlstack__calloc((size_t)max_seqs, sizeof *kv->seqs);
    if (!kv->data || !kv->free_stack || !kv->seqs)
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "no memory for a KV cache of %llu bytes",
                             (unsigned long long)((uint64_t)kv->n_pages * page_bytes));
    kv->max_seqs = max_seqs;
    for (i = 0; i < kv->n_pages; i++) kv->free_stack[i] = kv->n_pages - 1 - i;
    kv->n_free = kv->n_pages;
    return MLSTACK_OK;
}

static void mlstack__kv_free(mlstack__kv *kv) {
    int i;
    for (i = 0; i < kv->max_seqs; i++) MLSTACK_FREE(kv->seqs ? kv->seqs[i].pages : NULL);
    MLSTACK_FREE(kv->seqs);
    MLSTACK_FREE(kv->free_stack);
    mlstack__aligned_free(kv->data);
    memset(kv, 0, sizeof *kv);
}

/* Makes the page table of s cover `len` positions, taking or returning pages. 0 or -1 if the
   pool is out of pages (nothing changed then). */
static int mlstack__kv_resize(mlstack__kv *kv, mlstack__kv_seq *s, int32_t len) {
    int need = (int)((len + kv->page_tokens - 1) / kv->page_tokens);
    if (need > s->n_pages) {
        if (need - s->n_pages > kv->n_free) return -1;
        if (need > s->cap_pages) {
            int cap = need * 2;
            int32_t *p = (int32_t *)MLSTACK_REALLOC(s->pages, sizeof(int32_t) * (size_t)cap);
            if (!p) return -1;
            s->pages = p;
            s->cap_pages = cap;
        }
        while (s->n_pages < need) s->pages[s->n_pages++] = kv->free_stack[--kv->n_free];
    }
    while (s->n_pages > need) kv->free_stack[kv->n_free++] = s->pages[--s->n_pages];
    return 0;
}

/* Address of the K (kv = 0) or V (kv = 1) row of `layer` at position pos of sequence s. */
static float *mlstack__kv_row(const mlstack__kv *kv, const mlstack__kv_seq *s, int layer, int kvi, int32_t pos) {
    int page = s->pages[pos / kv->page_tokens], slot = pos % kv->page_tokens;
    return kv->data + (size_t)page * kv->page_floats +
           ((size_t)(layer * 2 + kvi) * (size_t)kv->page_tokens + (size_t)slot) * kv->row_floats;
}

/* Attention of one query head over positions [t0, t1] of a sequence, reading K/V through its
   page table: out (Dh,) = sum_t softmax_t(q . k_t * scale) v_t. scores: (t1 - t0 + 1,) scratch. */
static void mlstack__attend(const mlstack__kernels *kn, float *out, const float *q, const mlstack__kv *kv,
                            const mlstack__kv_seq *s, int layer, int kv_head, int Dh, int32_t t0, int32_t t1, float scale,
                            float *scores) {
    int32_t t;
    float mx = -FLT_MAX;
    double sum = 0;
    int d;
    for (t = t0; t <= t1; t++) {
        const float *k = mlstack__kv_row(kv, s, layer, 0, t) + (size_t)kv_head * (size_t)Dh;
        float sc = kn->dot(q, k, Dh) * scale;
        scores[t - t0] = sc;
        if (sc > mx) mx = sc;
    }
    for (t = t0; t <= t1; t++) {
        float e = expf(scores[t - t0] - mx);
        scores[t - t0] = e;
        sum += e;
    }
    for (d = 0; d < Dh; d++) out[d] = 0;
    for (t = t0; t <= t1; t++)
        kn->axpy(out, (float)(scores[t - t0] / sum), mlstack__kv_row(kv, s, layer, 1, t) + (size_t)kv_head * (size_t)Dh, Dh);
}

/* ==== 12. FORWARD ==== */  /* >>forward */
/* One forward pass over a ragged batch: B rows, each (sequence, position, token). Per layer:
       xn = rmsnorm(x); q, k, v = xn Wq, xn Wk, xn Wv (+ biases; Qwen3: per-head RMSNorm of q, k)
       rope(q, k); k, v -> each row's KV pages; a = attention(q; K, V of positions <= pos)
       x += a Wo; xn = rmsnorm(x); x += (silu(xn Wgate) * xn Wup) Wdown
   then rmsnorm and the LM head for rows that want logits. Rows never mix: every output
   element is computed the same way whatever else is in the batch. */

typedef struct mlstack__scratch {
    float *x, *xn, *q, *k, *v, *att, *gate, *up; /* (B, dim) activations */
    float *mm;                                   /* n_threads * max n_in */
    mlstack__q8x *xq;                            /* (B, max n_in / 32) activation blocks */
    float *scores;                               /* n_threads * max positions */
} mlstack__scratch;

struct mlstack_engine {
    mlstack_model *model;
    const mlstack__kernels *k;
    mlstack__pool pool;
    mlstack__kv kv;
    mlstack__scratch s;
    int max_batch;
    float *logits;        /* (n_logit_rows, V) */
    int *logit_slot;      /* per batch row of the last eval: slot in logits or -1 */
    int n_last_rows, cap_rows, cap_logits;
    int32_t *tmp_len;     /* per sequence, during validation */
    mlstack_error err;
};

typedef struct mlstack__attn_job {
    mlstack_engine *e;
    const mlstack_batch_row *rows;
    int layer;
} mlstack__attn_job;

static void mlstack__attn_task(void *ctx, int task, int n_tasks, int thread) {
    const mlstack__attn_job *j = (const mlstack__attn_job *)ctx;
    const mlstack__config *c = &j->e->model->cfg;
    int H = c->n_heads, Dh = c->head_dim, b = task / H, h = task % H;
    const mlstack_batch_row *row = &j->rows[b];
    const mlstack__kv_seq *s = &j->e->kv.seqs[row->seq];
    int32_t t0 = 0;
    (void)n_tasks;
    if (c->sliding_window && row->pos >= c->sliding_window) t0 = row->pos - c->sliding_window + 1;
    mlstack__attend(j->e->k, j->e->s.att + ((size_t)b * H + h) * Dh, j->e->s.q + ((size_t)b * H + h) * Dh, &j->e->kv, s, j->layer,
                    h / (H / c->n_kv_heads), Dh, t0, row->pos, 1.0f / sqrtf((float)Dh),
                    j->e->s.scores + (size_t)thread * (size_t)c->max_pos);
}

static void mlstack__forward_chunk(mlstack_engine *e, const mlstack_batch_row *rows, int B, float *logits,
                                   const int *slot) {
    const mlstack_model *m = e->model;
    const mlstack__config *c = &m->cfg;
    mlstack__scratch *s = &e->s;
    int D = c->n_embd, Dh = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads, F = c->n_ff;
    int qd = H * Dh, kvd = Hkv * Dh, l, b, h, i;
    size_t esize = (size_t)mlstack__dtype_sizes[m->embed_dtype];
    for (b = 0; b < B; b++)
        mlstack__to_f32(m->embed_dtype, (const unsigned char *)m->embed + (size_t)rows[b].token * (size_t)D * esize,
                        s->x + (size_t)b * D, (size_t)D);
    for (l = 0; l < c->n_layers; l++) {
        const mlstack__layer *L = &m->layers[l];
        mlstack__attn_job aj;
        for (b = 0; b < B; b++) mlstack__rmsnorm(s->xn + (size_t)b * D, s->x + (size_t)b * D, L->attn_norm, D, c->eps);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->wq, s->xn, s->q, B);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->wk, s->xn, s->k, B);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->wv, s->xn, s->v, B);
        for (b = 0; b < B; b++) {
            const mlstack__kv_seq *sq = &e->kv.seqs[rows[b].seq];
            float *q = s->q + (size_t)b * qd, *k = s->k + (size_t)b * kvd;
            for (h = 0; h < H; h++) {
                if (L->q_norm) mlstack__rmsnorm(q + h * Dh, q + h * Dh, L->q_norm, Dh, c->eps);
                mlstack__rope(q + h * Dh, Dh, rows[b].pos, m->inv_freq);
            }
            for (h = 0; h < Hkv; h++) {
                if (L->k_norm) mlstack__rmsnorm(k + h * Dh, k + h * Dh, L->k_norm, Dh, c->eps);
                mlstack__rope(k + h * Dh, Dh, rows[b].pos, m->inv_freq);
            }
            memcpy(mlstack__kv_row(&e->kv, sq, l, 0, rows[b].pos), k, sizeof(float) * (size_t)kvd);
            memcpy(mlstack__kv_row(&e->kv, sq, l, 1, rows[b].pos), s->v + (size_t)b * kvd, sizeof(float) * (size_t)kvd);
        }
        aj.e = e;
        aj.rows = rows;
        aj.layer = l;
        mlstack__pool_run(&e->pool, mlstack__attn_task, &aj, B * H);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->wo, s->att, s->xn, B);
        for (i = 0; i < B * D; i++) s->x[i] += s->xn[i];
        for (b = 0; b < B; b++) mlstack__rmsnorm(s->xn + (size_t)b * D, s->x + (size_t)b * D, L->ffn_norm, D, c->eps);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->w_gate, s->xn, s->gate, B);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->w_up, s->xn, s->up, B);
        for (i = 0; i < B * F; i++) s->gate[i] = mlstack__silu(s->gate[i]) * s->up[i];
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->w_down, s->gate, s->xn, B);
        for (i = 0; i < B * D; i++) s->x[i] += s->xn[i];
    }
    /* final norm and LM head, only for rows that keep logits; one row at a time keeps the
       scratch small (the LM head reads the same weights for each) */
    {
        int n = 0;
        for (b = 0; b < B; b++)
            if (slot[b] >= 0) mlstack__rmsnorm(s->xn + (size_t)(n++) * D, s->x + (size_t)b * D, m->final_norm, D, c->eps);
        if (n) {
            /* logit slots of one chunk are consecutive */
            int first = -1;
            for (b = 0; b < B && first < 0; b++) first = slot[b];
            mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &m->lm_head, s->xn, logits + (size_t)first * (size_t)c->n_vocab, n);
        }
    }
}

/* ==== 13. SAMPLING ==== */  /* >>sampling */
/* Order, as transformers applies its processors: penalties (repetition, then frequency and
   presence), temperature, top-k, top-p, min-p, then a draw from the renormalised distribution.
   Temperature 0 is greedy (argmax, lowest id on ties). The RNG is splitmix64-seeded
   xoshiro256**, so a seed gives the same tokens on every platform. */

struct mlstack_sampler {
    mlstack_sampler_desc d;
    int n_vocab;
    uint64_t rng[4];
    int32_t *history; /* ring of the last penalty_last_n tokens (or all) */
    int n_hist, cap_hist, head_hist;
    int *counts;      /* per token, within the history window */
    float *work;      /* n_vocab */
    int *idx;         /* n_vocab */
};

static uint64_t mlstack__splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static uint64_t mlstack__rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
static uint64_t mlstack__rng_next(uint64_t *s) {
    uint64_t r = mlstack__rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = mlstack__rotl(s[3], 45);
    return r;
}

MLSTACK_API mlstack_result mlstack_sampler_init(const mlstack_sampler_desc *desc, int n_vocab, mlstack_sampler **out) {
    mlstack_sampler *s;
    uint64_t seed;
    if (!out || n_vocab <= 0) return MLSTACK_ERR_INVALID_ARG;
    *out = NULL;
    s = (mlstack_sampler *)mlstack__calloc(1, sizeof *s);
    if (!s) return MLSTACK_ERR_NO_MEMORY;
    if (desc) s->d = *desc;
    if (s->d.temperature < 0 || s->d.top_k < 0 || s->d.top_p < 0 || s->d.top_p > 1 || s->d.min_p < 0 ||
        s->d.min_p > 1 || s->d.repeat_penalty < 0 || s->d.penalty_last_n < -1 || s->d.temperature != s->d.temperature) {
        MLSTACK_FREE(s);
        return MLSTACK_ERR_INVALID_ARG;
    }
    if (s->d.top_p == 0) s->d.top_p = 1;
    if (s->d.repeat_penalty == 0) s->d.repeat_penalty = 1;
    if (s->d.penalty_last_n == 0) s->d.penalty_last_n = 64;
    s->n_vocab = n_vocab;
    seed = s->d.seed;
    s->rng[0] = mlstack__splitmix(&seed);
    s->rng[1] = mlstack__splitmix(&seed);
    s->rng[2] = mlstack__splitmix(&seed);
    s->rng[3] = mlstack__splitmix(&seed);
    s->counts = (int *)mlstack__calloc((size_t)n_vocab, sizeof(int));
    s->work = (float *)mlstack__calloc((size_t)n_vocab, sizeof(float));
    s->idx = (int *)mlstack__calloc((size_t)n_vocab, sizeof(int));
    s->cap_hist = s->d.penalty_last_n > 0 ? s->d.penalty_last_n : 256;
    s->history = (int32_t *)mlstack__calloc((size_t)s->cap_hist, sizeof(int32_t));
    if (!s->counts || !s->work || !s->idx || !s->history) {
        mlstack_sampler_free(s);
        return MLSTACK_ERR_NO_MEMORY;
    }
    *out = s;
    return MLSTACK_OK;
}

MLSTACK_API void mlstack_sampler_free(mlstack_sampler *s) {
    if (!s) return;
    MLSTACK_FREE(s->counts);
    MLSTACK_FREE(s->work);
    MLSTACK_FREE(s->idx);
    MLSTACK_FREE(s->history);
    MLSTACK_FREE(s);
}

MLSTACK_API void mlstack_sampler_accept(mlstack_sampler *s, int32_t tok) {
    if (!s || tok < 0 || tok >= s->n_vocab) return;
    if (s->d.penalty_last_n > 0) {
        if (s->n_hist == s->cap_hist) { /* window full: the oldest leaves */
            s->counts[s->history[s->head_hist]]--;
            s->history[s->head_hist] = tok;
            s->head_hist = (s->head_hist + 1) % s->cap_hist;
        } else {
            s->history[(s->head_hist + s->n_hist++) % s->cap_hist] = tok;
        }
    }
    s->counts[tok]++; /* penalty_last_n == -1: every token counts, no window */
}

/* Sorts idx[0..n) by vals descending, ties by ascending id (a total order: deterministic). */
static void mlstack__sort_desc(int *idx, int n, const float *vals) {
    /* insertion sort for small n, else a bottom-up merge sort */
    int i, j, width;
    int *tmp;
    if (n < 64) {
        for (i = 1; i < n; i++) {
            int v = idx[i];
            for (j = i; j > 0 && (vals[idx[j - 1]] < vals[v] || (vals[idx[j - 1]] == vals[v] && idx[j - 1] > v)); j--)
                idx[j] = idx[j - 1];
            idx[j] = v;
        }
        return;
    }
    tmp = (int *)MLSTACK_MALLOC(sizeof(int) * (size_t)n);
    if (!tmp) { /* fall back to the insertion sort: slow but correct */
        for (i = 1; i < n; i++) {
            int v = idx[i];
            for (j = i; j > 0 && (vals[idx[j - 1]] < vals[v] || (vals[idx[j - 1]] == vals[v] && idx[j - 1] > v)); j--)
                idx[j] = idx[j - 1];
            idx[j] = v;
        }
        return;
    }
    for (width = 1; width < n; width *= 2) {
        for (i = 0; i < n; i += 2 * width) {
            int lo = i, mid = i + width < n ? i + width : n, hi = i + 2 * width < n ? i + 2 * width : n;
            int a = lo, b = mid, k = lo;
            while (a < mid && b < hi) {
                int x = idx[a], y = idx[b];
                if (vals[x] > vals[y] || (vals[x] == vals[y] && x < y)) tmp[k++] = idx[a++];
                else tmp[k++] = idx[b++];
            }
            while (a < mid) tmp[k++] = idx[a++];
            while (b < hi) tmp[k++] = idx[b++];
        }
        memcpy(idx, tmp, sizeof(int) * (size_t)n);
    }
    MLSTACK_FREE(tmp);
}

MLSTACK_API int32_t mlstack_sampler_sample(mlstack_sampler *s, const float *logits) {
    int V = s->n_vocab, i, n, best = 0;
    float *w = s->work, mx;
    double sum, cum, r;
    memcpy(w, logits, sizeof(float) * (size_t)V);
    if (s->d.repeat_penalty != 1 || s->d.frequency_penalty != 0 || s->d.presence_penalty != 0) {
        for (i = 0; i < V; i++) {
            int cnt = s->counts[i];
            if (!cnt) continue;
            if (s->d.repeat_penalty != 1) w[i] = w[i] > 0 ? w[i] / s->d.repeat_penalty : w[i] * s->d.repeat_penalty;
            w[i] -= (float)cnt * s->d.frequency_penalty + s->d.presence_penalty;
        }
    }
    if (s->d.temperature == 0) {
        for (i = 1; i < V; i++)
            if (w[i] > w[best]) best = i;
        return best;
    }
    /* candidates: all ids, or the top k */
    for (i = 0; i < V; i++) {
        s->idx[i] = i;
        w[i] /= s->d.temperature;
    }
    n = V;
    if (s->d.top_k > 0 && s->d.top_k < V) {
        mlstack__sort_desc(s->idx, V, w);
        n = s->d.top_k;
    } else if (s->d.top_p < 1 || s->d.min_p > 0) {
        mlstack__sort_desc(s->idx, V, w);
    }
    mx = -FLT_MAX;
    for (i = 0; i < n; i++)
        if (w[s->idx[i]] > mx) mx = w[s->idx[i]];
    sum = 0;
    for (i = 0; i < n; i++) {
        float p = expf(w[s->idx[i]] - mx);
        w[s->idx[i]] = p;
        sum += p;
    }
    if (s->d.top_p < 1) { /* smallest prefix (by descending probability) reaching top_p */
        cum = 0;
        for (i = 0; i < n; i++) {
            cum += w[s->idx[i]] / sum;
            if (cum >= s->d.top_p) {
                n = i + 1;
                break;
            }
        }
    }
    if (s->d.min_p > 0) { /* drop tokens below min_p * the most likely one */
        float thr = s->d.min_p * w[s->idx[0]];
        for (i = 1; i < n; i++)
            if (w[s->idx[i]] < thr) break;
        n = i;
    }
    sum = 0;
    for (i = 0; i < n; i++) sum += w[s->idx[i]];
    r = (double)(mlstack__rng_next(s->rng) >> 11) * (1.0 / 9007199254740992.0) * sum;
    cum = 0;
    for (i = 0; i < n; i++) {
        cum += w[s->idx[i]];
        if (r < cum) return s->idx[i];
    }
    return s->idx[n - 1];
}

/* ==== 14. ENGINE ==== */  /* >>engine */

static mlstack_result mlstack__engine_fail(mlstack_engine *e, mlstack_result code, const char *fmt, ...)
    MLSTACK__PRINTF(3, 4);
static mlstack_result mlstack__engine_fail(mlstack_engine *e, mlstack_result code, const char *fmt, ...) {
    va_list ap;
    e->err.code = code;
    va_start(ap, fmt);
    mlstack__vfmt(e->err.message, sizeof e->err.message, fmt, ap);
    va_end(ap);
    return code;
}

MLSTACK_API const char *mlstack_engine_error(const mlstack_engine *e) { return e ? e->err.message : ""; }
MLSTACK_API const char *mlstack_engine_kernels(const mlstack_engine *e) { return e ? e->k->name : ""; }
MLSTACK_API void mlstack_cpu_report(char *buf, size_t cap) { mlstack__isa_report(buf, cap); }

MLSTACK_API void mlstack_engine_free(mlstack_engine *e) {
    mlstack__scratch *s;
    if (!e) return;
    s = &e->s;
    mlstack__pool_free(&e->pool);
    mlstack__kv_free(&e->kv);
    mlstack__aligned_free(s->x);
    mlstack__aligned_free(s->xn);
    mlstack__aligned_free(s->q);
    mlstack__aligned_free(s->k);
    mlstack__aligned_free(s->v);
    mlstack__aligned_free(s->att);
    mlstack__aligned_free(s->gate);
    mlstack__aligned_free(s->up);
    mlstack__aligned_free(s->mm);
    mlstack__aligned_free(s->xq);
    mlstack__aligned_free(s->scores);
    MLSTACK_FREE(e->logits);
    MLSTACK_FREE(e->logit_slot);
    MLSTACK_FREE(e->tmp_len);
    MLSTACK_FREE(e);
}

static float *mlstack__falloc(size_t a, size_t b) {
    if (b && a > SIZE_MAX / sizeof(float) / b) return NULL;
    return (float *)mlstack__aligned_alloc(a * b * sizeof(float));
}

MLSTACK_API mlstack_result mlstack_engine_init(mlstack_model *model, const mlstack_engine_desc *desc,
                                               mlstack_engine **out, mlstack_error *err) {
    mlstack_engine_desc d;
    mlstack_engine *e;
    const mlstack__config *c;
    mlstack__scratch *s;
    mlstack_result r;
    size_t B, max_in;
    if (err) {
        err->code = MLSTACK_OK;
        err->message[0] = 0;
    }
    if (!out || !model) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "mlstack_engine_init: model or out is NULL");
    *out = NULL;
    memset(&d, 0, sizeof d);
    if (desc) d = *desc;
    c = &model->cfg;
    if (d.n_threads < 0 || d.kv_page_tokens < 0 || d.max_seqs < 0 || d.max_batch_tokens < 0)
        return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "mlstack_engine_init: negative field in the descriptor");
    if (d.n_threads == 0) d.n_threads = mlstack__cpu_count();
    if (d.kv_page_tokens == 0) d.kv_page_tokens = 16;
    if (d.max_seqs == 0) d.max_seqs = 16;
    if (d.max_batch_tokens == 0) d.max_batch_tokens = 512;
    if (d.kv_mem == 0) {
        uint64_t ctx = (uint64_t)(c->max_pos < 4096 ? c->max_pos : 4096);
        ctx = (ctx + (uint64_t)d.kv_page_tokens - 1) / (uint64_t)d.kv_page_tokens * (uint64_t)d.kv_page_tokens;
        d.kv_mem = ctx * (uint64_t)c->n_layers * 2 * (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim * sizeof(float);
    }
    {
        int cap = mlstack__isa_parse(d.isa);
        if (cap == -1) cap = mlstack__isa_parse(getenv("MLSTACK_ISA"));
        if (cap == -2)
            return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "isa cap \"%s\" unknown (expected scalar, avx2 or avx512)",
                                 d.isa ? d.isa : getenv("MLSTACK_ISA"));
        e = (mlstack_engine *)mlstack__calloc(1, sizeof *e);
        if (!e) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
        e->k = mlstack__kernels_select(cap);
    }
    e->model = model;
    e->max_batch = d.max_batch_tokens;
    if (mlstack__pool_init(&e->pool, d.n_threads) != 0) {
        mlstack_engine_free(e);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "could not start %d threads", d.n_threads);
    }
    r = mlstack__kv_init(&e->kv, c, d.kv_mem, d.kv_page_tokens, d.max_seqs, err);
    if (r != MLSTACK_OK) {
        mlstack_engine_free(e);
        return r;
    }
    s = &e->s;
    B = (size_t)e->max_batch;
    max_in = (size_t)(c->n_ff > c->n_embd ? c->n_ff : c->n_embd);
    if ((size_t)c->n_heads * (size_t)c->head_dim > max_in) max_in = (size_t)c->n_heads * (size_t)c->head_dim;
    s->x = mlstack__falloc(B, (size_t)c->n_embd);
    s->xn = mlstack__falloc(B, (size_t)c->n_embd);
    s->q = mlstack__falloc(B, (size_t)c->n_heads * (size_t)c->head_dim);
    s->att = mlstack__falloc(B, (size_t)c->n_heads * (size_t)c->head_dim);
    s->k = mlstack__falloc(B, (size_t)c->n_kv_heads * (size_t)c->head_dim);
    s->v = mlstack__falloc(B, (size_t)c->n_kv_heads * (size_t)c->head_dim);
    s->gate = mlstack__falloc(B, (size_t)c->n_ff);
    s->up = mlstack__falloc(B, (size_t)c->n_ff);
    s->mm = mlstack__falloc((size_t)e->pool.n_threads, max_in);
    s->xq = (mlstack__q8x *)mlstack__aligned_alloc(B * (max_in / MLSTACK__QK + 1) * sizeof(mlstack__q8x));
    s->scores = mlstack__falloc((size_t)e->pool.n_threads, (size_t)c->max_pos);
    e->tmp_len = (int32_t *)mlstack__calloc((size_t)d.max_seqs, sizeof(int32_t));
    if (!s->x || !s->xn || !s->q || !s->att || !s->k || !s->v || !s->gate || !s->up || !s->mm || !s->xq || !s->scores || !e->tmp_len) {
        mlstack_engine_free(e);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "no memory for activations of %d rows", e->max_batch);
    }
    *out = e;
    return MLSTACK_OK;
}

MLSTACK_API mlstack_result mlstack_engine_seq_new(mlstack_engine *e, int32_t *seq) {
    int i;
    if (!e || !seq) return MLSTACK_ERR_INVALID_ARG;
    for (i = 0; i < e->kv.max_seqs; i++) {
        if (!e->kv.seqs[i].active) {
            e->kv.seqs[i].active = 1;
            e->kv.seqs[i].len = 0;
            *seq = i;
            return MLSTACK_OK;
        }
    }
    return mlstack__engine_fail(e, MLSTACK_ERR_LIMIT, "all %d sequences are in use (engine max_seqs)", e->kv.max_seqs);
}

MLSTACK_API mlstack_result mlstack_engine_seq_free(mlstack_engine *e, int32_t seq) {
    if (!e) return MLSTACK_ERR_INVALID_ARG;
    if (seq < 0 || seq >= e->kv.max_seqs || !e->kv.seqs[seq].active)
        return mlstack__engine_fail(e, MLSTACK_ERR_INVALID_ARG, "sequence %d is not in use", (int)seq);
    mlstack__kv_resize(&e->kv, &e->kv.seqs[seq], 0);
    e->kv.seqs[seq].active = 0;
    e->kv.seqs[seq].len = 0;
    return MLSTACK_OK;
}

MLSTACK_API int32_t mlstack_engine_seq_length(const mlstack_engine *e, int32_t seq) {
    if (!e || seq < 0 || seq >= e->kv.max_seqs || !e->kv.seqs[seq].active) return -1;
    return e->kv.seqs[seq].len;
}

MLSTACK_API mlstack_result mlstack_engine_eval(mlstack_engine *e, const mlstack_batch_row *rows, int n_rows) {
    const mlstack__config *c;
    int i, n_logits = 0, need_pages = 0, off;
    if (!e) return MLSTACK_ERR_INVALID_ARG;
    c = &e->model->cfg;
    e->err.message[0] = 0;
    e->n_last_rows = 0;
    if (n_rows <= 0 || !rows) return mlstack__engine_fail(e, MLSTACK_ERR_INVALID_ARG, "eval: empty batch");
    /* validate everything before touching state */
    for (i = 0; i < e->kv.max_seqs; i++) e->tmp_len[i] = -1;
    for (i = 0; i < n_rows; i++) {
        const mlstack_batch_row *r = &rows[i];
        int32_t cur;
        if (r->seq < 0 || r->seq >= e->kv.max_seqs || !e->kv.seqs[r->seq].active)
            return mlstack__engine_fail(e, MLSTACK_ERR_INVALID_ARG, "eval: row %d: sequence %d is not in use", i, (int)r->seq);
        if (r->token < 0 || r->token >= c->n_vocab)
            return mlstack__engine_fail(e, MLSTACK_ERR_INVALID_ARG, "eval: row %d: token %d outside the vocabulary (0..%d)", i,
                                        (int)r->token, c->n_vocab - 1);
        if (r->pos < 0 || r->pos >= c->max_pos)
            return mlstack__engine_fail(e, MLSTACK_ERR_LIMIT,
                                        "eval: row %d: position %d outside the context (0..%d, max_position_embeddings)", i,
                                        (int)r->pos, c->max_pos - 1);
        cur = e->tmp_len[r->seq];
        if (cur < 0) {
            if (r->pos > e->kv.seqs[r->seq].len)
                return mlstack__engine_fail(e, MLSTACK_ERR_INVALID_ARG,
                                            "eval: row %d: position %d leaves a gap (sequence %d holds %d positions)", i,
                                            (int)r->pos, (int)r->seq, (int)e->kv.seqs[r->seq].len);
        } else if (r->pos != cur) {
            return mlstack__engine_fail(e, MLSTACK_ERR_INVALID_ARG,
                                        "eval: row %d: sequence %d expects position %d next in this batch, got %d", i,
                                        (int)r->seq, (int)cur, (int)r->pos);
        }
        e->tmp_len[r->seq] = r->pos + 1;
        if (r->want_logits) n_logits++;
    }
    for (i = 0; i < e->kv.max_seqs; i++) {
        if (e->tmp_len[i] >= 0) {
            int have = e->kv.seqs[i].n_pages, need = (e->tmp_len[i] + e->kv.page_tokens - 1) / e->kv.page_tokens;
            if (need > have) need_pages += need - have;
        }
    }
    if (need_pages > e->kv.n_free)
        return mlstack__engine_fail(e, MLSTACK_ERR_LIMIT, "eval: KV cache full: batch needs %d more pages, %d of %d free",
                                    need_pages, e->kv.n_free, e->kv.n_pages);
    if (n_rows > e->cap_rows) {
        int *p = (int *)MLSTACK_REALLOC(e->logit_slot, sizeof(int) * (size_t)n_rows);
        if (!p) return mlstack__engine_fail(e, MLSTACK_ERR_NO_MEMORY, "eval: out of memory");
        e->logit_slot = p;
        e->cap_rows = n_rows;
    }
    if (n_logits > e->cap_logits) {
        float *p = (float *)MLSTACK_REALLOC(e->logits, sizeof(float) * (size_t)n_logits * (size_t)c->n_vocab);
        if (!p) return mlstack__engine_fail(e, MLSTACK_ERR_NO_MEMORY, "eval: no memory for %d logit rows", n_logits);
        e->logits = p;
        e->cap_logits = n_logits;
    }
    for (i = 0; i < e->kv.max_seqs; i++) {
        if (e->tmp_len[i] >= 0) {
            mlstack__kv_resize(&e->kv, &e->kv.seqs[i], e->tmp_len[i]); /* cannot fail: pages checked above */
            e->kv.seqs[i].len = e->tmp_len[i];
        }
    }
    for (i = 0, n_logits = 0; i < n_rows; i++) e->logit_slot[i] = rows[i].want_logits ? n_logits++ : -1;
    for (off = 0; off < n_rows; off += e->max_batch) {
        int B = n_rows - off < e->max_batch ? n_rows - off : e->max_batch;
        mlstack__forward_chunk(e, rows + off, B, e->logits, e->logit_slot + off);
    }
    e->n_last_rows = n_rows;
    return MLSTACK_OK;
}

MLSTACK_API const float *mlstack_engine_logits(const mlstack_engine *e, int row) {
    if (!e || row < 0 || row >= e->n_last_rows || e->logit_slot[row] < 0) return NULL;
    return e->logits + (size_t)e->logit_slot[row] * (size_t)e->model->cfg.n_vocab;
}

static int mlstack__is_eos(const mlstack__config *c, int32_t tok) {
    int i;
    for (i = 0; i < c->n_eos; i++)
        if (c->eos_ids[i] == tok) return 1;
    return 0;
}

MLSTACK_API mlstack_result mlstack_generate(mlstack_engine *e, mlstack_generate_desc *g) {
    const mlstack__config *c;
    mlstack_sampler *smp = NULL;
    mlstack_batch_row *rows;
    mlstack_result r;
    int32_t pos, tok;
    int i;
    double t0;
    if (!e || !g) return MLSTACK_ERR_INVALID_ARG;
    c = &e->model->cfg;
    g->n_generated = 0;
    g->prefill_seconds = g->decode_seconds = 0;
    if (g->n_prompt <= 0 || !g->prompt)
        return mlstack__engine_fail(e, MLSTACK_ERR_INVALID_ARG, "generate: the prompt is empty");
    if (g->max_tokens < 0) return mlstack__engine_fail(e, MLSTACK_ERR_INVALID_ARG, "generate: max_tokens is negative");
    pos = mlstack_engine_seq_length(e, g->seq);
    if (pos < 0) return mlstack__engine_fail(e, MLSTACK_ERR_INVALID_ARG, "generate: sequence %d is not in use", (int)g->seq);
    if ((int64_t)pos + g->n_prompt > c->max_pos)
        return mlstack__engine_fail(e, MLSTACK_ERR_LIMIT,
                                    "generate: prompt of %d tokens after %d cached positions exceeds the context of %d",
                                    g->n_prompt, (int)pos, c->max_pos);
    r = mlstack_sampler_init(g->sampler, c->n_vocab, &smp);
    if (r != MLSTACK_OK) return mlstack__engine_fail(e, r, "generate: invalid sampler settings");
    rows = (mlstack_batch_row *)mlstack__calloc((size_t)g->n_prompt, sizeof *rows);
    if (!rows) {
        mlstack_sampler_free(smp);
        return mlstack__engine_fail(e, MLSTACK_ERR_NO_MEMORY, "generate: out of memory");
    }
    for (i = 0; i < g->n_prompt; i++) {
        rows[i].seq = g->seq;
        rows[i].pos = pos + i;
        rows[i].token = g->prompt[i];
        rows[i].want_logits = i == g->n_prompt - 1;
        mlstack_sampler_accept(smp, g->prompt[i]);
    }
    t0 = mlstack__now();
    r = mlstack_engine_eval(e, rows, g->n_prompt);
    g->prefill_seconds = mlstack__now() - t0;
    pos += g->n_prompt;
    t0 = mlstack__now();
    while (r == MLSTACK_OK) {
        mlstack_batch_row row;
        tok = mlstack_sampler_sample(smp, mlstack_engine_logits(e, g->n_generated ? 0 : g->n_prompt - 1));
        mlstack_sampler_accept(smp, tok);
        g->n_generated++;
        if (g->on_token && g->on_token(g->user, tok)) break;
        if (!g->ignore_eos && mlstack__is_eos(c, tok)) break;
        if (g->max_tokens && g->n_generated >= g->max_tokens) break;
        if (pos >= c->max_pos) break;
        row.seq = g->seq;
        row.pos = pos++;
        row.token = tok;
        row.want_logits = 1;
        r = mlstack_engine_eval(e, &row, 1);
    }
    g->decode_seconds = mlstack__now() - t0;
    MLSTACK_FREE(rows);
    mlstack_sampler_free(smp);
    return r;
}


#endif /* MLSTACK_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
LICENSE (MIT)

Copyright (c) 2026 the mlstack authors

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
HISTORY
  0.1.0  first release: safetensors, Llama/Mistral/Qwen2/Qwen3 forward pass, sampling.
*/
