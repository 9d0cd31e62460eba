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
     10. MODEL             config -> weight map -> forward over a ragged batch          >>model
     11. KVCACHE           fixed-size pages, per-sequence page tables                   >>kvcache
     12. SAMPLING          logit processors and samplers                                >>sampling
     13. ENGINE            public API implementation: open, eval, generate              >>engine

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

#if defined(MLSTACK_STATIC)
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
    MLSTACK_DTYPE_COUNT_ = 7
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
     log       NULL: silent */
typedef struct mlstack_model_desc {
    const char *path;
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
/* A tokenizer interprets a Hugging Face tokenizer.json (BPE models: byte-level and
   SentencePiece-style with byte fallback) and the special-token settings of
   tokenizer_config.json, giving the ids and texts Hugging Face gives.
   Text is UTF-8. Invalid UTF-8 input is encoded as if each maximal invalid subsequence were
   U+FFFD, which is what Python's bytes.decode("utf-8", "replace") hands to Hugging Face.
   Ownership: the tokenizer owns every string it returns; they live until close.
   Thread safety: after open, encode/decode/lookups may run concurrently on one tokenizer;
   only the error text is shared (see mlstack_tokenizer_error). */

#define MLSTACK_ENCODE_ADD_SPECIAL 1     /* add BOS/EOS as add_special_tokens=True does */
#define MLSTACK_ENCODE_SPECIAL_AS_TEXT 2 /* special-token text is plain text (split_special_tokens) */
#define MLSTACK_DECODE_SKIP_SPECIAL 1    /* leave out special tokens (skip_special_tokens=True) */

/* Opens dir/tokenizer.json and, when present, dir/tokenizer_config.json. A folder with only
   vocab.json + merges.txt + tokenizer_config.json is accepted for the Qwen2Tokenizer and
   GPT2Tokenizer classes (built as transformers' conversion builds them).
   Parameters: dir (folder), out (receives the tokenizer), err (optional detail).
   Returns MLSTACK_OK; MLSTACK_ERR_NOT_FOUND/IO when files are missing; MLSTACK_ERR_FORMAT for
   malformed files; MLSTACK_ERR_UNSUPPORTED for models or steps not implemented (Unigram,
   WordPiece, ...). On failure *out is NULL.
   Thread safety: any thread.
   Remarks: BOS/EOS follow transformers 5: when tokenizer_config.json sets add_bos_token or
   add_eos_token explicitly, the post-processor becomes "[bos] $A [eos]" with those flags;
   otherwise tokenizer.json's post-processor is used. */
MLSTACK_API mlstack_result mlstack_tokenizer_open(const char *dir, mlstack_tokenizer **out, mlstack_error *err);
/* Same from memory: json is the tokenizer.json text, config_json (may be NULL) the
   tokenizer_config.json text. The texts are copied; the caller keeps ownership. */
MLSTACK_API mlstack_result mlstack_tokenizer_load(const char *json, size_t len, const char *config_json, size_t config_len,
                                                  mlstack_tokenizer **out, mlstack_error *err);
/* Frees the tokenizer. NULL is ignored. Not while other threads use it. */
MLSTACK_API void mlstack_tokenizer_close(mlstack_tokenizer *tok);
/* Encodes len bytes of text (need not be NUL-terminated).
   Parameters: flags (MLSTACK_ENCODE_*), ids (room for cap ids; may be NULL when cap is 0),
   n_ids (receives the number of ids the text needs).
   Returns MLSTACK_OK; MLSTACK_ERR_LIMIT when cap < *n_ids (nothing is truncated: call again
   with a buffer of *n_ids) or when a regex hit its step limit; MLSTACK_ERR_NO_MEMORY.
   Thread safety: concurrent calls on one tokenizer are fine. */
MLSTACK_API mlstack_result mlstack_tokenizer_encode(mlstack_tokenizer *tok, const char *text, size_t len, int flags,
                                                    int32_t *ids, size_t cap, size_t *n_ids);
/* Decodes n ids to UTF-8 text, NUL-terminated.
   Parameters: flags (MLSTACK_DECODE_SKIP_SPECIAL), out (cap bytes), n_out (receives the text
   length without the NUL).
   Returns MLSTACK_OK, or MLSTACK_ERR_LIMIT when cap < *n_out + 1 (call again with more room).
   Remarks: ids outside the vocabulary are skipped, as Hugging Face skips them. Invalid UTF-8
   produced by byte tokens becomes U+FFFD. Thread safety: concurrent calls are fine. */
MLSTACK_API mlstack_result mlstack_tokenizer_decode(mlstack_tokenizer *tok, const int32_t *ids, size_t n, int flags,
                                                    char *out, size_t cap, size_t *n_out);
/* Size of the id space (largest id + 1, added tokens included). */
MLSTACK_API int32_t mlstack_tokenizer_vocab_size(const mlstack_tokenizer *tok);
/* Id of a token's exact text (added tokens first, then the model vocabulary), or -1. */
MLSTACK_API int32_t mlstack_tokenizer_token_to_id(const mlstack_tokenizer *tok, const char *text, size_t len);
/* Text of a token as stored in the vocabulary (byte-level tokens in GPT-2's alphabet), or NULL
   for an unknown id. *len (optional) receives its length. */
MLSTACK_API const char *mlstack_tokenizer_id_to_token(const mlstack_tokenizer *tok, int32_t id, size_t *len);
/* BOS/EOS ids from tokenizer_config.json's bos_token/eos_token, -1 when unset (as
   transformers' bos_token_id/eos_token_id are None). */
MLSTACK_API int32_t mlstack_tokenizer_bos_id(const mlstack_tokenizer *tok);
MLSTACK_API int32_t mlstack_tokenizer_eos_id(const mlstack_tokenizer *tok);
/* Non-zero when id is an added token flagged special (what skip_special_tokens drops). */
MLSTACK_API int mlstack_tokenizer_is_special(const mlstack_tokenizer *tok, int32_t id);
/* tokenizer_config.json's chat_template (the "default" one of a list), or NULL. */
MLSTACK_API const char *mlstack_tokenizer_chat_template(const mlstack_tokenizer *tok);
/* Text of the most recent encode/decode failure on this tokenizer ("" if none). With several
   threads failing at once it may describe another thread's call. */
MLSTACK_API const char *mlstack_tokenizer_error(const mlstack_tokenizer *tok);

/* Streaming decoder: push ids one at a time, get back only complete UTF-8 text (a character
   split across byte tokens is held until its last byte arrives). The text returned by push or
   flush is owned by the decoder and valid until its next call. The tokenizer must outlive it.
   Thread safety: one decoder per thread; many decoders may share a tokenizer. */
typedef struct mlstack_detok mlstack_detok;
MLSTACK_API mlstack_result mlstack_detok_init(const mlstack_tokenizer *tok, int flags, mlstack_detok **out);
/* Returns the new text in *text/*len (possibly empty). */
MLSTACK_API mlstack_result mlstack_detok_push(mlstack_detok *d, int32_t id, const char **text, size_t *len);
/* Emits whatever is held back (an incomplete character as U+FFFD) and resets the decoder. */
MLSTACK_API mlstack_result mlstack_detok_flush(mlstack_detok *d, const char **text, size_t *len);
MLSTACK_API void mlstack_detok_free(mlstack_detok *d);

/* ---- Chat templates (section 8) ---- */



/* ---- Engine ---- */

/* Engine descriptor. Zero means default:
     n_threads         0: number of online CPUs
     kv_mem            0: bytes for min(max_position_embeddings, 4096) tokens of KV
     kv_page_tokens    0: 16 tokens per KV page
     max_seqs          0: 16 concurrent sequences
     max_batch_tokens  0: 512 rows per internal forward chunk */
typedef struct mlstack_engine_desc {
    int n_threads;
    uint64_t kv_mem;
    int kv_page_tokens;
    int max_seqs;
    int max_batch_tokens;
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

/* Thread pool: a fixed set of workers, fork/join over task indices [0, n_tasks).
   The calling thread takes part, so a pool of 1 runs everything inline. */
typedef void (*mlstack__task_fn)(void *ctx, int task, int n_tasks);

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
        for (t = arg.index; t < p->n_tasks; t += p->n_threads) p->fn(p->ctx, t, p->n_tasks);
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
        for (t = 0; t < n_tasks; t += p->n_threads) fn(ctx, t, n_tasks);
        pthread_mutex_lock(&p->mu);
        while (p->pending > 0) pthread_cond_wait(&p->done, &p->mu);
        pthread_mutex_unlock(&p->mu);
        return;
    }
    for (t = 0; t < n_tasks; t++) fn(ctx, t, n_tasks);
#else
    int t;
    (void)p;
    for (t = 0; t < n_tasks; t++) fn(ctx, t, n_tasks);
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

static const char *const mlstack__dtype_names[MLSTACK_DTYPE_COUNT_] = {"F32", "F16", "BF16", "I8", "U8", "I32", "I64"};
static const int mlstack__dtype_sizes[MLSTACK_DTYPE_COUNT_] = {4, 2, 2, 1, 1, 4, 8};

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
        for (k = 0; k < MLSTACK_DTYPE_COUNT_; k++)
            if (mlstack__json_is_str(dt, mlstack__dtype_names[k])) break;
        if (k == MLSTACK_DTYPE_COUNT_)
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
/* Interprets tokenizer.json as Hugging Face `tokenizers` does, for the subset real models use:
     text -> invalid UTF-8 replaced (U+FFFD per maximal invalid subpart, like Python's
             bytes.decode("utf-8", "replace"), since a Python str cannot hold invalid UTF-8)
          -> added tokens that are not "normalized" matched on the raw text (leftmost, longest)
          -> normalizer on each remaining piece -> "normalized" added tokens matched
          -> pre-tokenizer steps split pieces (and rewrite bytes: Metaspace, ByteLevel)
          -> BPE on each piece (word cache, merges by rank through a binary heap)
          -> post-processor (BOS/EOS templates) when MLSTACK_ENCODE_ADD_SPECIAL.
   Decoding runs the decoder steps over the token strings. Every string the pipeline builds lives
   in one growing pool addressed by offsets, so a step may append without invalidating pieces.
   Unsupported parts of a tokenizer.json fail at load with MLSTACK_ERR_UNSUPPORTED, never
   silently at encode time. */

#ifndef MLSTACK_TOK_MAX_VOCAB
#define MLSTACK_TOK_MAX_VOCAB (1 << 24)
#endif
#define MLSTACK__TOK_CACHE_MAX_WORD 128 /* bytes; longer pieces bypass the word cache */
#define MLSTACK__TOK_CACHE_SLOTS 8192

enum { MLSTACK__N_NFC = 1, MLSTACK__N_NFD, MLSTACK__N_NFKC, MLSTACK__N_NFKD, MLSTACK__N_LOWER, MLSTACK__N_STRIP,
       MLSTACK__N_STRIP_ACCENTS, MLSTACK__N_PREPEND, MLSTACK__N_REPLACE };
enum { MLSTACK__P_SPLIT = 1, MLSTACK__P_BYTELEVEL, MLSTACK__P_METASPACE, MLSTACK__P_DIGITS, MLSTACK__P_PUNCT,
       MLSTACK__P_WHITESPACE, MLSTACK__P_WSSPLIT, MLSTACK__P_BERT };
enum { MLSTACK__B_REMOVED, MLSTACK__B_ISOLATED, MLSTACK__B_PREV, MLSTACK__B_NEXT, MLSTACK__B_CONTIGUOUS };
enum { MLSTACK__D_BYTELEVEL = 1, MLSTACK__D_BYTEFALLBACK, MLSTACK__D_METASPACE, MLSTACK__D_REPLACE, MLSTACK__D_FUSE,
       MLSTACK__D_STRIP, MLSTACK__D_BPE };
enum { MLSTACK__PREPEND_ALWAYS, MLSTACK__PREPEND_FIRST, MLSTACK__PREPEND_NEVER };

/* One step of a normalizer, pre-tokenizer or decoder (Sequence nodes are flattened). */
typedef struct mlstack__tok_step {
    int type;
    const char *a, *b;  /* Prepend text / Replace pattern (a) and content (b) / Metaspace replacement (a) */
    size_t alen, blen;
    mlstack__regex *re; /* Replace or Split with a Regex pattern; ByteLevel's own split */
    int behavior, invert, flag, left, right; /* flag: add_prefix_space, individual_digits, Metaspace split */
    int scheme;         /* Metaspace prepend_scheme */
} mlstack__tok_step;

typedef struct mlstack__tok_added {
    int32_t id;
    const char *s;
    uint32_t len;
    unsigned char special, lstrip, rstrip, single_word, normalized;
} mlstack__tok_added;

struct mlstack_tokenizer {
    mlstack__arena arena;
    int32_t n_vocab;       /* size of the id space: max id + 1 */
    const char **tok_s;    /* token text by id (NULL for holes) */
    uint32_t *tok_len;
    unsigned char *tok_special; /* 1: an added token flagged special */
    uint32_t *vmap;        /* model vocab: open addressing, slot = id + 1 */
    uint32_t vmask;
    uint64_t *mkey;        /* merges: (left id << 32 | right id) + 1, 0 = empty */
    uint32_t *mrank;
    int32_t *mnew;
    uint32_t mmask;
    int byte_fallback, fuse_unk, ignore_merges, byte_level_model;
    int32_t unk_id;
    const char *cont_prefix, *eow_suffix;
    size_t cont_prefix_len, eow_suffix_len;
    int32_t byte_ids[256]; /* <0xNN> ids for byte fallback, -1 if absent */
    mlstack__tok_step *norm, *pre, *dec;
    int n_norm, n_pre, n_dec;
    int32_t *post_pre, *post_suf; /* ids around the sequence for add_special_tokens */
    int n_post_pre, n_post_suf;
    mlstack__tok_added *added;    /* sorted by length, longest first */
    int n_added;
    int32_t bos_id, eos_id;
    const char *chat_template;
    char *err;                    /* last failure text (MLSTACK__TOK_ERR bytes) */
    mlstack__json_doc doc, cfg_doc; /* token strings point into these */
    mlstack__regex **regexes;     /* owned, freed at close */
    int n_regexes, cap_regexes;
#if !defined(MLSTACK_NO_THREADS)
    pthread_mutex_t err_lock;
#endif
};
#define MLSTACK__TOK_ERR 256

/* GPT-2's byte <-> printable code point table. */
static uint16_t mlstack__bl_cp[256];
static unsigned char mlstack__bl_utf8[256][3]; /* [0] = length */
static int16_t mlstack__bl_byte[324];
static void mlstack__bl_init_table(void) {
    int b, n = 0;
    for (b = 0; b < 324; b++) mlstack__bl_byte[b] = -1;
    for (b = 0; b < 256; b++) {
        int printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
        uint32_t cp = printable ? (uint32_t)b : (uint32_t)(256 + n++);
        unsigned char tmp[4];
        size_t l = mlstack__utf8_put(tmp, cp);
        mlstack__bl_cp[b] = (uint16_t)cp;
        mlstack__bl_utf8[b][0] = (unsigned char)l;
        memcpy(&mlstack__bl_utf8[b][1], tmp, l);
        mlstack__bl_byte[cp] = (int16_t)b;
    }
}
#if !defined(MLSTACK_NO_THREADS)
static pthread_once_t mlstack__bl_once = PTHREAD_ONCE_INIT;
static void mlstack__bl_init(void) { pthread_once(&mlstack__bl_once, mlstack__bl_init_table); }
#else
static void mlstack__bl_init(void) {
    if (mlstack__bl_utf8[0][0] == 0) mlstack__bl_init_table();
}
#endif

static const char *const mlstack__gpt2_pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
static const char *const mlstack__qwen2_pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";

/* ---- small growable buffers ---- */
typedef struct mlstack__buf {
    char *p;
    size_t n, cap;
} mlstack__buf;
static int mlstack__buf_reserve(mlstack__buf *b, size_t extra) {
    size_t need, cap;
    char *p;
    if (b->cap - b->n >= extra) return 1;
    if (extra > ((size_t)-1) / 2 - b->n) return 0;
    need = b->n + extra;
    cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    p = (char *)MLSTACK_REALLOC(b->p, cap);
    if (!p) return 0;
    b->p = p;
    b->cap = cap;
    return 1;
}
static int mlstack__buf_put(mlstack__buf *b, const void *s, size_t n) {
    if (!mlstack__buf_reserve(b, n)) return 0;
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    return 1;
}
/* Typed arrays on top of mlstack__buf. */
#define MLSTACK__VEC_PUSH(buf, type, val) \
    (mlstack__buf_reserve((buf), sizeof(type)) ? (*(type *)(void *)((buf)->p + (buf)->n) = (val), (buf)->n += sizeof(type), 1) : 0)

/* Hash of bytes (FNV-1a, 32-bit). */
static uint32_t mlstack__hash(const char *s, size_t n) {
    uint32_t h = 2166136261u;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}
static uint32_t mlstack__hash64(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (uint32_t)k;
}

/* Bytes consumed by the invalid sequence at s: the maximal subpart of a well-formed sequence
   (Unicode 3.9, what Python's "replace" error handler and Rust's from_utf8_lossy do). */
static size_t mlstack__utf8_bad_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    unsigned lo = 0x80, hi = 0xBF;
    size_t need, i;
    if (c >= 0xC2 && c <= 0xDF) need = 1;
    else if (c >= 0xE0 && c <= 0xEF) {
        need = 2;
        if (c == 0xE0) lo = 0xA0;
        if (c == 0xED) hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 3;
        if (c == 0xF0) lo = 0x90;
        if (c == 0xF4) hi = 0x8F;
    } else
        return 1;
    for (i = 1; i <= need && i < n; i++) {
        unsigned d = s[i];
        if (i == 1 ? (d < lo || d > hi) : ((d & 0xC0) != 0x80)) break;
    }
    return i;
}
/* Appends s to b with invalid UTF-8 replaced by U+FFFD. Returns 0 on no memory. */
static int mlstack__utf8_lossy(mlstack__buf *b, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, run = 0;
    if (!mlstack__buf_reserve(b, n)) return 0;
    while (i < n) {
        int l = mlstack__utf8_valid_len(u + i, n - i);
        if (l > 0) {
            i += (size_t)l;
            continue;
        }
        if (!mlstack__buf_put(b, s + run, i - run) || !mlstack__buf_put(b, "\xEF\xBF\xBD", 3)) return 0;
        i += mlstack__utf8_bad_len(u + i, n - i);
        run = i;
    }
    return mlstack__buf_put(b, s + run, n - run);
}
static int mlstack__utf8_all_valid(const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        int l = u[i] < 0x80 ? 1 : mlstack__utf8_valid_len(u + i, n - i);
        if (!l) return 0;
        i += (size_t)l;
    }
    return 1;
}
/* Decodes one code point of valid UTF-8 (the pipeline only holds valid text). */
static int mlstack__tok_cp(const char *s, size_t n, uint32_t *cp) {
    if ((unsigned char)s[0] < 0x80) {
        *cp = (unsigned char)s[0];
        return 1;
    }
    return mlstack__utf8_decode((const unsigned char *)s, n, cp);
}

/* Character classes as Rust's char methods define them. */
static int mlstack__tok_is_ws(uint32_t cp) { return mlstack__uis_whitespace(cp); }
static int mlstack__tok_is_numeric(uint32_t cp) {
    int c = mlstack__ucat(cp);
    return c == MLSTACK__UC_Nd || c == MLSTACK__UC_Nl || c == MLSTACK__UC_No;
}
static int mlstack__tok_is_alnum(uint32_t cp) {
    int c = mlstack__ucat(cp);
    return c == MLSTACK__UC_Lu || c == MLSTACK__UC_Ll || c == MLSTACK__UC_Lt || c == MLSTACK__UC_Lm ||
           c == MLSTACK__UC_Lo || mlstack__tok_is_numeric(cp);
}
static int mlstack__tok_is_punct(uint32_t cp) {
    int c;
    if (cp < 0x80) return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126);
    c = mlstack__ucat(cp);
    return c == MLSTACK__UC_Pc || c == MLSTACK__UC_Pd || c == MLSTACK__UC_Ps || c == MLSTACK__UC_Pe ||
           c == MLSTACK__UC_Pi || c == MLSTACK__UC_Pf || c == MLSTACK__UC_Po;
}
static int mlstack__tok_is_word(uint32_t cp) { return cp == '_' || mlstack__tok_is_alnum(cp) || mlstack__uis_mark(cp); }

/* ---- vocabulary and merges ---- */
static int32_t mlstack__tok_vocab_find(const mlstack_tokenizer *t, const char *s, size_t n) {
    uint32_t h;
    if (!t->vmap) return -1;
    h = mlstack__hash(s, n) & t->vmask;
    for (;;) {
        uint32_t v = t->vmap[h];
        if (!v) return -1;
        if (t->tok_len[v - 1] == n && memcmp(t->tok_s[v - 1], s, n) == 0) return (int32_t)(v - 1);
        h = (h + 1) & t->vmask;
    }
}
static int mlstack__tok_merge_find(const mlstack_tokenizer *t, int32_t a, int32_t b, uint32_t *rank, int32_t *nid) {
    uint64_t key = (((uint64_t)(uint32_t)a << 32) | (uint32_t)b) + 1;
    uint32_t h;
    if (!t->mkey) return 0;
    h = mlstack__hash64(key) & t->mmask;
    for (;;) {
        uint64_t k = t->mkey[h];
        if (!k) return 0;
        if (k == key) {
            *rank = t->mrank[h];
            *nid = t->mnew[h];
            return 1;
        }
        h = (h + 1) & t->mmask;
    }
}

/* ---- per-call encoder state ---- */
typedef struct mlstack__piece {
    size_t off, len; /* bytes in the pool */
    int first;       /* starts at offset 0 of the original text (Metaspace "first") */
    int32_t id;      /* an added token's id, or -1 for text */
} mlstack__piece;

typedef struct mlstack__bpe_sym {
    int32_t id, prev, next;
} mlstack__bpe_sym;
typedef struct mlstack__bpe_cand {
    uint32_t rank;
    int32_t pos, nid;
} mlstack__bpe_cand;

typedef struct mlstack__enc {
    const mlstack_tokenizer *t;
    mlstack__buf pool;    /* text bytes */
    mlstack__buf pa, pb;  /* mlstack__piece arrays */
    mlstack__buf ids;     /* int32_t output */
    mlstack__buf syms, heap, tmp, segs;
    /* word cache: key bytes and ids in cpool */
    uint32_t *cslot;      /* index + 1 into centry */
    mlstack__buf centry;  /* {uint32 koff, klen, ioff, nids} */
    mlstack__buf cpool;
    size_t n_cached;
    char *err;
    mlstack_result code;
} mlstack__enc;

typedef struct mlstack__centry {
    uint32_t koff, klen, ioff, nids;
} mlstack__centry;

static void mlstack__enc_free(mlstack__enc *e) {
    MLSTACK_FREE(e->pool.p);
    MLSTACK_FREE(e->pa.p);
    MLSTACK_FREE(e->pb.p);
    MLSTACK_FREE(e->ids.p);
    MLSTACK_FREE(e->syms.p);
    MLSTACK_FREE(e->heap.p);
    MLSTACK_FREE(e->tmp.p);
    MLSTACK_FREE(e->segs.p);
    MLSTACK_FREE(e->cslot);
    MLSTACK_FREE(e->centry.p);
    MLSTACK_FREE(e->cpool.p);
}

static MLSTACK__PRINTF(3, 4) mlstack_result mlstack__tok_fail(mlstack_tokenizer *t, mlstack_result code, const char *fmt, ...) {
    va_list ap;
    if (!t || !t->err) return code;
#if !defined(MLSTACK_NO_THREADS)
    pthread_mutex_lock(&t->err_lock);
#endif
    va_start(ap, fmt);
    mlstack__vfmt(t->err, MLSTACK__TOK_ERR, fmt, ap);
    va_end(ap);
#if !defined(MLSTACK_NO_THREADS)
    pthread_mutex_unlock(&t->err_lock);
#endif
    return code;
}

static int mlstack__piece_push(mlstack__buf *v, size_t off, size_t len, int first, int32_t id) {
    mlstack__piece p;
    p.off = off;
    p.len = len;
    p.first = first;
    p.id = id;
    return MLSTACK__VEC_PUSH(v, mlstack__piece, p);
}

/* ---- BPE on one piece ---- */
static int mlstack__heap_less(const mlstack__bpe_cand *a, const mlstack__bpe_cand *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}
static int mlstack__heap_push(mlstack__buf *h, mlstack__bpe_cand c) {
    mlstack__bpe_cand *a;
    size_t i;
    if (!MLSTACK__VEC_PUSH(h, mlstack__bpe_cand, c)) return 0;
    a = (mlstack__bpe_cand *)(void *)h->p;
    i = h->n / sizeof c - 1;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!mlstack__heap_less(&a[i], &a[p])) break;
        c = a[i];
        a[i] = a[p];
        a[p] = c;
        i = p;
    }
    return 1;
}
static mlstack__bpe_cand mlstack__heap_pop(mlstack__buf *h) {
    mlstack__bpe_cand *a = (mlstack__bpe_cand *)(void *)h->p, top = a[0], tmp;
    size_t n = h->n / sizeof top - 1, i = 0;
    a[0] = a[n];
    h->n -= sizeof top;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && mlstack__heap_less(&a[l], &a[m])) m = l;
        if (r < n && mlstack__heap_less(&a[r], &a[m])) m = r;
        if (m == i) break;
        tmp = a[i];
        a[i] = a[m];
        a[m] = tmp;
        i = m;
    }
    return top;
}

static int mlstack__bpe_sym_push(mlstack__buf *syms, int32_t id) {
    mlstack__bpe_sym s;
    s.id = id;
    s.prev = (int32_t)(syms->n / sizeof s) - 1;
    s.next = -1;
    return MLSTACK__VEC_PUSH(syms, mlstack__bpe_sym, s);
}
static int mlstack__bpe_cand_add(mlstack__enc *e, const mlstack__bpe_sym *s, int32_t pos) {
    mlstack__bpe_cand c;
    if (s[pos].next < 0) return 1;
    if (!mlstack__tok_merge_find(e->t, s[pos].id, s[s[pos].next].id, &c.rank, &c.nid)) return 1;
    c.pos = pos;
    return mlstack__heap_push(&e->heap, c);
}

/* Appends the ids of one piece (bytes already in the model's alphabet) to e->ids. */
static int mlstack__bpe_word(mlstack__enc *e, const char *w, size_t n) {
    const mlstack_tokenizer *t = e->t;
    mlstack__bpe_sym *s;
    size_t i, ns;
    int32_t id;
    int last_unk = 0;
    if (n == 0) return 1;
    if (t->ignore_merges && (id = mlstack__tok_vocab_find(t, w, n)) >= 0) return MLSTACK__VEC_PUSH(&e->ids, int32_t, id);
    e->syms.n = 0;
    e->heap.n = 0;
    for (i = 0; i < n;) {
        uint32_t cp;
        size_t cl = (size_t)mlstack__tok_cp(w + i, n - i, &cp);
        const char *cs = w + i;
        size_t csl = cl;
        int is_last = i + cl == n;
        if ((i > 0 && t->cont_prefix_len) || (is_last && t->eow_suffix_len)) {
            e->tmp.n = 0;
            if (i > 0 && !mlstack__buf_put(&e->tmp, t->cont_prefix, t->cont_prefix_len)) return 0;
            if (!mlstack__buf_put(&e->tmp, w + i, cl)) return 0;
            if (is_last && !mlstack__buf_put(&e->tmp, t->eow_suffix, t->eow_suffix_len)) return 0;
            cs = e->tmp.p;
            csl = e->tmp.n;
        }
        id = mlstack__tok_vocab_find(t, cs, csl);
        if (id >= 0) {
            if (!mlstack__bpe_sym_push(&e->syms, id)) return 0;
            last_unk = 0;
        } else {
            size_t k;
            int have_bytes = t->byte_fallback;
            for (k = 0; have_bytes && k < cl; k++)
                if (t->byte_ids[(unsigned char)w[i + k]] < 0) have_bytes = 0;
            if (have_bytes) {
                for (k = 0; k < cl; k++)
                    if (!mlstack__bpe_sym_push(&e->syms, t->byte_ids[(unsigned char)w[i + k]])) return 0;
                last_unk = 0;
            } else if (t->unk_id >= 0) {
                if (!(t->fuse_unk && last_unk) && !mlstack__bpe_sym_push(&e->syms, t->unk_id)) return 0;
                last_unk = 1;
            }
        }
        i += cl;
    }
    s = (mlstack__bpe_sym *)(void *)e->syms.p;
    ns = e->syms.n / sizeof *s;
    for (i = 0; i + 1 < ns; i++) s[i].next = (int32_t)i + 1;
    for (i = 0; i + 1 < ns; i++)
        if (!mlstack__bpe_cand_add(e, s, (int32_t)i)) return 0;
    while (e->heap.n) {
        mlstack__bpe_cand c = mlstack__heap_pop(&e->heap);
        uint32_t rank;
        int32_t nid, nx;
        if (s[c.pos].id < 0 || s[c.pos].next < 0) continue;
        nx = s[c.pos].next;
        if (!mlstack__tok_merge_find(t, s[c.pos].id, s[nx].id, &rank, &nid) || nid != c.nid) continue;
        s[c.pos].id = nid;
        s[c.pos].next = s[nx].next;
        if (s[nx].next >= 0) s[s[nx].next].prev = c.pos;
        s[nx].id = -1;
        if (s[c.pos].prev >= 0 && !mlstack__bpe_cand_add(e, s, s[c.pos].prev)) return 0;
        if (!mlstack__bpe_cand_add(e, s, c.pos)) return 0;
    }
    for (i = 0; i < ns; i = (size_t)s[i].next) {
        if (!MLSTACK__VEC_PUSH(&e->ids, int32_t, s[i].id)) return 0;
        if (s[i].next < 0) break;
    }
    return 1;
}

/* BPE through the per-call word cache. */
static int mlstack__bpe_cached(mlstack__enc *e, const char *w, size_t n) {
    uint32_t h, slot;
    size_t before, nids;
    mlstack__centry ce, *ents;
    if (n == 0) return 1;
    if (n > MLSTACK__TOK_CACHE_MAX_WORD) return mlstack__bpe_word(e, w, n);
    if (!e->cslot) {
        e->cslot = (uint32_t *)mlstack__calloc(MLSTACK__TOK_CACHE_SLOTS, sizeof(uint32_t));
        if (!e->cslot) return 0;
    }
    h = mlstack__hash(w, n) & (MLSTACK__TOK_CACHE_SLOTS - 1);
    ents = (mlstack__centry *)(void *)e->centry.p;
    for (slot = h;; slot = (slot + 1) & (MLSTACK__TOK_CACHE_SLOTS - 1)) {
        uint32_t v = e->cslot[slot];
        if (!v) break;
        if (ents[v - 1].klen == n && memcmp(e->cpool.p + ents[v - 1].koff, w, n) == 0) {
            ce = ents[v - 1];
            return mlstack__buf_put(&e->ids, e->cpool.p + ce.ioff, (size_t)ce.nids * sizeof(int32_t));
        }
    }
    before = e->ids.n;
    if (!mlstack__bpe_word(e, w, n)) return 0;
    nids = (e->ids.n - before) / sizeof(int32_t);
    if (e->n_cached >= MLSTACK__TOK_CACHE_SLOTS / 2 || e->cpool.n > ((size_t)1 << 30)) return 1;
    ce.koff = (uint32_t)e->cpool.n;
    ce.klen = (uint32_t)n;
    if (!mlstack__buf_put(&e->cpool, w, n)) return 0;
    while (e->cpool.n % 4) e->cpool.p[e->cpool.n++] = 0;
    ce.ioff = (uint32_t)e->cpool.n;
    ce.nids = (uint32_t)nids;
    if (!mlstack__buf_put(&e->cpool, e->ids.p + before, nids * sizeof(int32_t))) return 0;
    if (!MLSTACK__VEC_PUSH(&e->centry, mlstack__centry, ce)) return 0;
    e->cslot[slot] = (uint32_t)(e->centry.n / sizeof ce);
    e->n_cached++;
    return 1;
}

/* ---- normalizers: rewrite pool[off, off+len) into a new pool range ---- */
static int mlstack__find_bytes(const char *s, size_t n, size_t from, const char *pat, size_t pn, size_t *at) {
    size_t i;
    if (pn == 0 || pn > n) return 0;
    for (i = from; i + pn <= n; i++)
        if (s[i] == pat[0] && memcmp(s + i, pat, pn) == 0) {
            *at = i;
            return 1;
        }
    return 0;
}

/* Finds the next match of step's pattern (string or regex) in s[from..n). 1 found, 0 none, <0 error. */
static int mlstack__step_find(const mlstack__tok_step *st, const char *s, size_t n, size_t from, size_t *b, size_t *en) {
    if (st->re) return mlstack__regex_search(st->re, s, n, from, b, en);
    if (!mlstack__find_bytes(s, n, from, st->a, st->alen, b)) return 0;
    *en = *b + st->alen;
    return 1;
}

static mlstack_result mlstack__normalize(mlstack__enc *e, size_t off, size_t len, size_t *out_off, size_t *out_len) {
    const mlstack_tokenizer *t = e->t;
    int k;
    for (k = 0; k < t->n_norm; k++) {
        const mlstack__tok_step *st = &t->norm[k];
        size_t start = e->pool.n, i;
        if (st->type >= MLSTACK__N_NFC && st->type <= MLSTACK__N_NFKD) {
            static const int forms[4] = {MLSTACK__NFC, MLSTACK__NFD, MLSTACK__NFKC, MLSTACK__NFKD};
            char *o = NULL;
            size_t ol = 0;
            mlstack_result r;
            if (len == 0) continue;
            r = mlstack__unorm(forms[st->type - MLSTACK__N_NFC], e->pool.p + off, len, &o, &ol);
            if (r != MLSTACK_OK) return r;
            if (!mlstack__buf_put(&e->pool, o, ol)) {
                MLSTACK_FREE(o);
                return MLSTACK_ERR_NO_MEMORY;
            }
            MLSTACK_FREE(o);
        } else if (st->type == MLSTACK__N_LOWER || st->type == MLSTACK__N_STRIP_ACCENTS) {
            if (!mlstack__buf_reserve(&e->pool, len * 3)) return MLSTACK_ERR_NO_MEMORY;
            for (i = 0; i < len;) {
                uint32_t cp, lo[3];
                int cl = mlstack__tok_cp(e->pool.p + off + i, len - i, &cp), m, j;
                if (st->type == MLSTACK__N_LOWER) {
                    m = mlstack__ulower_full(cp, lo);
                    for (j = 0; j < m; j++) e->pool.n += mlstack__utf8_put((unsigned char *)e->pool.p + e->pool.n, lo[j]);
                } else if (!mlstack__uis_mark(cp)) {
                    memcpy(e->pool.p + e->pool.n, e->pool.p + off + i, (size_t)cl);
                    e->pool.n += (size_t)cl;
                }
                i += (size_t)cl;
            }
        } else if (st->type == MLSTACK__N_STRIP) {
            size_t a = 0, z = len;
            uint32_t cp;
            while (st->left && a < z) {
                int cl = mlstack__tok_cp(e->pool.p + off + a, z - a, &cp);
                if (!mlstack__tok_is_ws(cp)) break;
                a += (size_t)cl;
            }
            while (st->right && z > a) {
                size_t b = z - 1;
                while (b > a && (e->pool.p[off + b] & 0xC0) == 0x80) b--;
                mlstack__tok_cp(e->pool.p + off + b, z - b, &cp);
                if (!mlstack__tok_is_ws(cp)) break;
                z = b;
            }
            off += a;
            len = z - a;
            continue;
        } else if (st->type == MLSTACK__N_PREPEND) {
            if (len == 0) continue;
            if (!mlstack__buf_put(&e->pool, st->a, st->alen) || !mlstack__buf_reserve(&e->pool, len)) return MLSTACK_ERR_NO_MEMORY;
            memcpy(e->pool.p + e->pool.n, e->pool.p + off, len);
            e->pool.n += len;
        } else if (st->type == MLSTACK__N_REPLACE) {
            size_t from = 0, b, en;
            int f;
            while (from <= len && (f = mlstack__step_find(st, e->pool.p + off, len, from, &b, &en)) != 0) {
                if (f < 0) return MLSTACK_ERR_LIMIT;
                if (!mlstack__buf_reserve(&e->pool, (b - from) + st->blen + 4)) return MLSTACK_ERR_NO_MEMORY;
                memcpy(e->pool.p + e->pool.n, e->pool.p + off + from, b - from);
                e->pool.n += b - from;
                memcpy(e->pool.p + e->pool.n, st->b, st->blen);
                e->pool.n += st->blen;
                if (en == b) { /* an empty match: keep the next character and go on after it */
                    uint32_t cp;
                    int cl;
                    if (b >= len) { from = len + 1; break; }
                    cl = mlstack__tok_cp(e->pool.p + off + b, len - b, &cp);
                    memcpy(e->pool.p + e->pool.n, e->pool.p + off + b, (size_t)cl);
                    e->pool.n += (size_t)cl;
                    en = b + (size_t)cl;
                }
                from = en;
            }
            if (from < len) {
                if (!mlstack__buf_reserve(&e->pool, len - from)) return MLSTACK_ERR_NO_MEMORY;
                memcpy(e->pool.p + e->pool.n, e->pool.p + off + from, len - from);
                e->pool.n += len - from;
            }
        }
        off = start;
        len = e->pool.n - start;
    }
    *out_off = off;
    *out_len = len;
    return MLSTACK_OK;
}

/* ---- pre-tokenizers ---- */
typedef struct mlstack__seg {
    size_t b, e;
    int m;
} mlstack__seg;

static int mlstack__seg_push(mlstack__buf *v, size_t b, size_t en, int m) {
    mlstack__seg s;
    s.b = b;
    s.e = en;
    s.m = m;
    return MLSTACK__VEC_PUSH(v, mlstack__seg, s);
}

/* Applies a split behaviour to the segments of piece p and appends the parts to `out`. */
static int mlstack__apply_behavior(mlstack__enc *e, const mlstack__piece *p, int behavior, int invert, mlstack__buf *out) {
    mlstack__seg *sg = (mlstack__seg *)(void *)e->segs.p;
    size_t n = e->segs.n / sizeof *sg, i, k = 0;
    int prev = 0;
    if (invert)
        for (i = 0; i < n; i++) sg[i].m = !sg[i].m;
    /* merge in place into sg[0..k) */
    for (i = 0; i < n; i++) {
        mlstack__seg c = sg[i];
        switch (behavior) {
        case MLSTACK__B_REMOVED:
            if (!c.m) sg[k++] = c;
            break;
        case MLSTACK__B_ISOLATED:
            sg[k++] = c;
            break;
        case MLSTACK__B_PREV:
            if (c.m && !prev && k) sg[k - 1].e = c.e;
            else sg[k++] = c;
            break;
        case MLSTACK__B_CONTIGUOUS:
            if (c.m == prev && k) sg[k - 1].e = c.e;
            else sg[k++] = c;
            break;
        default: /* MergedWithNext: handled below */
            sg[k++] = c;
            break;
        }
        prev = c.m;
    }
    if (behavior == MLSTACK__B_NEXT) { /* walk backwards: a match joins the part after it */
        size_t j = k, w = k;
        prev = 0;
        while (j-- > 0) {
            mlstack__seg c = sg[j];
            if (c.m && !prev && w < k) sg[w].b = c.b;
            else sg[--w] = c;
            prev = c.m;
        }
        memmove(sg, sg + w, (k - w) * sizeof *sg);
        k -= w;
    }
    for (i = 0; i < k; i++)
        if (sg[i].e > sg[i].b && !mlstack__piece_push(out, p->off + sg[i].b, sg[i].e - sg[i].b, p->first && sg[i].b == 0, -1))
            return 0;
    return 1;
}

/* Segments from a predicate on characters: each matching character is its own match. */
static int mlstack__segs_chars(mlstack__enc *e, const char *s, size_t n, int (*pred)(uint32_t)) {
    size_t i = 0, last = 0;
    e->segs.n = 0;
    while (i < n) {
        uint32_t cp;
        int cl = mlstack__tok_cp(s + i, n - i, &cp);
        if (pred(cp)) {
            if (i > last && !mlstack__seg_push(&e->segs, last, i, 0)) return 0;
            if (!mlstack__seg_push(&e->segs, i, i + (size_t)cl, 1)) return 0;
            last = i + (size_t)cl;
        }
        i += (size_t)cl;
    }
    if (n > last && !mlstack__seg_push(&e->segs, last, n, 0)) return 0;
    return 1;
}
/* Segments from a pattern (regex or literal). */
static mlstack_result mlstack__segs_pattern(mlstack__enc *e, const mlstack__tok_step *st, const mlstack__regex *re,
                                            const char *s, size_t n) {
    size_t from = 0, last = 0, b, en;
    int f;
    mlstack__tok_step tmp = *st;
    tmp.re = (mlstack__regex *)re;
    e->segs.n = 0;
    while (from < n && (f = mlstack__step_find(&tmp, s, n, from, &b, &en)) != 0) {
        if (f < 0) return MLSTACK_ERR_LIMIT;
        if (en == b) {
            uint32_t cp;
            from = b + (size_t)mlstack__tok_cp(s + b, n - b, &cp);
            continue;
        }
        if (b > last && !mlstack__seg_push(&e->segs, last, b, 0)) return MLSTACK_ERR_NO_MEMORY;
        if (!mlstack__seg_push(&e->segs, b, en, 1)) return MLSTACK_ERR_NO_MEMORY;
        last = from = en;
    }
    if (n > last && !mlstack__seg_push(&e->segs, last, n, 0)) return MLSTACK_ERR_NO_MEMORY;
    return MLSTACK_OK;
}
static int mlstack__is_not_word_not_ws(uint32_t cp) { return !mlstack__tok_is_word(cp) && !mlstack__tok_is_ws(cp); }

/* One pre-tokenizer step over every piece of e->pa, result in e->pa (through e->pb). */
static mlstack_result mlstack__pretok_step(mlstack__enc *e, const mlstack__tok_step *st) {
    size_t i, np = e->pa.n / sizeof(mlstack__piece);
    mlstack_result r;
    e->pb.n = 0;
    for (i = 0; i < np; i++) {
        mlstack__piece p = ((mlstack__piece *)(void *)e->pa.p)[i];
        const char *s;
        size_t j;
        if (p.len == 0) continue;
        switch (st->type) {
        case MLSTACK__P_SPLIT:
            r = mlstack__segs_pattern(e, st, st->re, e->pool.p + p.off, p.len);
            if (r != MLSTACK_OK) return r;
            if (!mlstack__apply_behavior(e, &p, st->behavior, st->invert, &e->pb)) return MLSTACK_ERR_NO_MEMORY;
            break;
        case MLSTACK__P_DIGITS:
        case MLSTACK__P_PUNCT:
        case MLSTACK__P_BERT:
            if (st->type == MLSTACK__P_BERT) { /* whitespace split (removed), then punctuation isolated */
                if (!mlstack__segs_chars(e, e->pool.p + p.off, p.len, mlstack__tok_is_ws)) return MLSTACK_ERR_NO_MEMORY;
                {
                    size_t k0 = e->pb.n;
                    if (!mlstack__apply_behavior(e, &p, MLSTACK__B_REMOVED, 0, &e->pb)) return MLSTACK_ERR_NO_MEMORY;
                    /* re-split the new parts on punctuation */
                    {
                        size_t nn = (e->pb.n - k0) / sizeof(mlstack__piece), q;
                        mlstack__buf parts = {0, 0, 0};
                        if (!mlstack__buf_put(&parts, e->pb.p + k0, e->pb.n - k0)) return MLSTACK_ERR_NO_MEMORY;
                        e->pb.n = k0;
                        for (q = 0; q < nn; q++) {
                            mlstack__piece sp = ((mlstack__piece *)(void *)parts.p)[q];
                            if (!mlstack__segs_chars(e, e->pool.p + sp.off, sp.len, mlstack__tok_is_punct) ||
                                !mlstack__apply_behavior(e, &sp, MLSTACK__B_ISOLATED, 0, &e->pb)) {
                                MLSTACK_FREE(parts.p);
                                return MLSTACK_ERR_NO_MEMORY;
                            }
                        }
                        MLSTACK_FREE(parts.p);
                    }
                }
                break;
            }
            if (!mlstack__segs_chars(e, e->pool.p + p.off, p.len,
                                     st->type == MLSTACK__P_DIGITS ? mlstack__tok_is_numeric : mlstack__tok_is_punct))
                return MLSTACK_ERR_NO_MEMORY;
            if (!mlstack__apply_behavior(e, &p, st->behavior, 0, &e->pb)) return MLSTACK_ERR_NO_MEMORY;
            break;
        case MLSTACK__P_WSSPLIT:
            if (!mlstack__segs_chars(e, e->pool.p + p.off, p.len, mlstack__tok_is_ws) ||
                !mlstack__apply_behavior(e, &p, MLSTACK__B_REMOVED, 0, &e->pb))
                return MLSTACK_ERR_NO_MEMORY;
            break;
        case MLSTACK__P_WHITESPACE: { /* \w+|[^\w\s]+ kept, whitespace dropped */
            size_t a = 0, n = p.len;
            s = e->pool.p + p.off;
            e->segs.n = 0;
            while (a < n) {
                uint32_t cp;
                int cl = mlstack__tok_cp(s + a, n - a, &cp), cls;
                size_t z = a + (size_t)cl;
                cls = mlstack__tok_is_ws(cp) ? 0 : mlstack__tok_is_word(cp) ? 1 : 2;
                while (z < n) {
                    uint32_t c2;
                    int l2 = mlstack__tok_cp(s + z, n - z, &c2);
                    int k2 = mlstack__tok_is_ws(c2) ? 0 : mlstack__tok_is_word(c2) ? 1 : 2;
                    if (k2 != cls || cls == 0) break;
                    z += (size_t)l2;
                }
                if (!mlstack__seg_push(&e->segs, a, z, cls != 0)) return MLSTACK_ERR_NO_MEMORY;
                a = z;
            }
            if (!mlstack__apply_behavior(e, &p, MLSTACK__B_REMOVED, 1, &e->pb)) return MLSTACK_ERR_NO_MEMORY;
            break;
        }
        case MLSTACK__P_METASPACE: {
            size_t start = e->pool.n;
            int prepend;
            s = e->pool.p + p.off;
            /* replace ' ' with the replacement, and prepend it per scheme */
            prepend = st->scheme == MLSTACK__PREPEND_ALWAYS || (st->scheme == MLSTACK__PREPEND_FIRST && p.first);
            if (prepend && p.len >= st->alen && memcmp(e->pool.p + p.off, st->a, st->alen) == 0) prepend = 0;
            if (!mlstack__buf_reserve(&e->pool, st->alen * (p.len + 1) + p.len)) return MLSTACK_ERR_NO_MEMORY;
            s = e->pool.p + p.off;
            if (prepend) {
                memcpy(e->pool.p + e->pool.n, st->a, st->alen);
                e->pool.n += st->alen;
            }
            for (j = 0; j < p.len; j++) {
                if (s[j] == ' ') {
                    memcpy(e->pool.p + e->pool.n, st->a, st->alen);
                    e->pool.n += st->alen;
                } else
                    e->pool.p[e->pool.n++] = s[j];
            }
            p.off = start;
            p.len = e->pool.n - start;
            if (st->flag) { /* split before each replacement (MergedWithNext) */
                mlstack__tok_step lit;
                memset(&lit, 0, sizeof lit);
                lit.a = st->a;
                lit.alen = st->alen;
                r = mlstack__segs_pattern(e, &lit, NULL, e->pool.p + p.off, p.len);
                if (r != MLSTACK_OK) return r;
                if (!mlstack__apply_behavior(e, &p, MLSTACK__B_NEXT, 0, &e->pb)) return MLSTACK_ERR_NO_MEMORY;
            } else if (!mlstack__piece_push(&e->pb, p.off, p.len, p.first, -1))
                return MLSTACK_ERR_NO_MEMORY;
            break;
        }
        case MLSTACK__P_BYTELEVEL: {
            size_t k0 = e->pb.n, q, nn;
            if (st->flag && e->pool.p[p.off] != ' ') {
                size_t start = e->pool.n;
                if (!mlstack__buf_reserve(&e->pool, p.len + 1)) return MLSTACK_ERR_NO_MEMORY;
                e->pool.p[e->pool.n++] = ' ';
                memcpy(e->pool.p + e->pool.n, e->pool.p + p.off, p.len);
                e->pool.n += p.len;
                p.off = start;
                p.len += 1;
            }
            if (st->re) {
                r = mlstack__segs_pattern(e, st, st->re, e->pool.p + p.off, p.len);
                if (r != MLSTACK_OK) return r;
                if (!mlstack__apply_behavior(e, &p, MLSTACK__B_ISOLATED, 0, &e->pb)) return MLSTACK_ERR_NO_MEMORY;
            } else if (!mlstack__piece_push(&e->pb, p.off, p.len, p.first, -1))
                return MLSTACK_ERR_NO_MEMORY;
            /* map the new parts' bytes to GPT-2's printable alphabet */
            nn = (e->pb.n - k0) / sizeof(mlstack__piece);
            for (q = 0; q < nn; q++) {
                mlstack__piece *pp = (mlstack__piece *)(void *)(e->pb.p + k0) + q;
                size_t start = e->pool.n;
                if (!mlstack__buf_reserve(&e->pool, pp->len * 2)) return MLSTACK_ERR_NO_MEMORY;
                pp = (mlstack__piece *)(void *)(e->pb.p + k0) + q;
                for (j = 0; j < pp->len; j++) {
                    const unsigned char *m = mlstack__bl_utf8[(unsigned char)e->pool.p[pp->off + j]];
                    memcpy(e->pool.p + e->pool.n, m + 1, m[0]);
                    e->pool.n += m[0];
                }
                pp->off = start;
                pp->len = e->pool.n - start;
            }
            break;
        }
        default:
            break;
        }
    }
    {
        mlstack__buf tmp = e->pa;
        e->pa = e->pb;
        e->pb = tmp;
    }
    return MLSTACK_OK;
}

/* ---- added tokens ---- */
/* Splits pool[off, off+len) on added tokens whose `normalized` flag equals `normalized`:
   leftmost match, longest first, then lstrip/rstrip/single_word as Hugging Face applies them. */
static int mlstack__added_split(mlstack__enc *e, size_t off, size_t len, int first, int normalized, int special_as_text,
                                mlstack__buf *out) {
    const mlstack_tokenizer *t = e->t;
    size_t i = 0, done = 0;
    int k;
    const char *s = e->pool.p + off;
    out->n = 0;
    while (i < len) {
        const mlstack__tok_added *hit = NULL;
        size_t b, en;
        for (k = 0; k < t->n_added; k++) {
            const mlstack__tok_added *a = &t->added[k];
            if (a->normalized != normalized || a->len == 0 || a->len > len - i || a->s[0] != s[i]) continue;
            if (memcmp(a->s, s + i, a->len) == 0) {
                hit = a;
                break;
            }
        }
        if (!hit) {
            i++;
            continue;
        }
        b = i;
        en = i + hit->len;
        i = en;
        if (special_as_text && hit->special) continue;
        if (hit->single_word) {
            uint32_t cp;
            int ok = 1;
            if (b > 0) {
                size_t q = b - 1;
                while (q > 0 && (s[q] & 0xC0) == 0x80) q--;
                mlstack__tok_cp(s + q, b - q, &cp);
                if (mlstack__tok_is_word(cp)) ok = 0;
            }
            if (en < len) {
                mlstack__tok_cp(s + en, len - en, &cp);
                if (mlstack__tok_is_word(cp)) ok = 0;
            }
            if (!ok) continue;
        }
        if (hit->lstrip) {
            while (b > done) {
                size_t q = b - 1;
                uint32_t cp;
                while (q > done && (s[q] & 0xC0) == 0x80) q--;
                mlstack__tok_cp(s + q, b - q, &cp);
                if (!mlstack__tok_is_ws(cp)) break;
                b = q;
            }
        }
        if (hit->rstrip) {
            while (en < len) {
                uint32_t cp;
                int cl = mlstack__tok_cp(s + en, len - en, &cp);
                if (!mlstack__tok_is_ws(cp)) break;
                en += (size_t)cl;
            }
            i = en;
        }
        if (b > done && !mlstack__piece_push(out, off + done, b - done, first && done == 0, -1)) return 0;
        if (!mlstack__piece_push(out, off + b, en - b, 0, hit->id)) return 0;
        done = en;
    }
    if (len > done && !mlstack__piece_push(out, off + done, len - done, first && done == 0, -1)) return 0;
    return 1;
}

static mlstack_result mlstack__encode(mlstack__enc *e, const char *text, size_t len, int flags) {
    const mlstack_tokenizer *t = e->t;
    mlstack__buf s1 = {0, 0, 0}, s2 = {0, 0, 0};
    mlstack_result r = MLSTACK_OK;
    size_t i, j, n1, n2;
    int k;
    if (!mlstack__utf8_lossy(&e->pool, text, len)) return MLSTACK_ERR_NO_MEMORY;
    if ((flags & MLSTACK_ENCODE_ADD_SPECIAL) && !mlstack__buf_put(&e->ids, t->post_pre, (size_t)t->n_post_pre * sizeof(int32_t)))
        return MLSTACK_ERR_NO_MEMORY;
    if (!mlstack__added_split(e, 0, e->pool.n, 1, 0, flags & MLSTACK_ENCODE_SPECIAL_AS_TEXT, &s1)) r = MLSTACK_ERR_NO_MEMORY;
    n1 = s1.n / sizeof(mlstack__piece);
    for (i = 0; r == MLSTACK_OK && i < n1; i++) {
        mlstack__piece p = ((mlstack__piece *)(void *)s1.p)[i];
        size_t noff, nlen;
        if (p.id >= 0) {
            if (!MLSTACK__VEC_PUSH(&e->ids, int32_t, p.id)) r = MLSTACK_ERR_NO_MEMORY;
            continue;
        }
        r = mlstack__normalize(e, p.off, p.len, &noff, &nlen);
        if (r != MLSTACK_OK) break;
        if (!mlstack__added_split(e, noff, nlen, p.first, 1, flags & MLSTACK_ENCODE_SPECIAL_AS_TEXT, &s2)) {
            r = MLSTACK_ERR_NO_MEMORY;
            break;
        }
        n2 = s2.n / sizeof(mlstack__piece);
        for (j = 0; r == MLSTACK_OK && j < n2; j++) {
            mlstack__piece q = ((mlstack__piece *)(void *)s2.p)[j];
            size_t np, m;
            if (q.id >= 0) {
                if (!MLSTACK__VEC_PUSH(&e->ids, int32_t, q.id)) r = MLSTACK_ERR_NO_MEMORY;
                continue;
            }
            e->pa.n = 0;
            if (!mlstack__piece_push(&e->pa, q.off, q.len, q.first, -1)) {
                r = MLSTACK_ERR_NO_MEMORY;
                break;
            }
            for (k = 0; r == MLSTACK_OK && k < t->n_pre; k++) r = mlstack__pretok_step(e, &t->pre[k]);
            np = e->pa.n / sizeof(mlstack__piece);
            for (m = 0; r == MLSTACK_OK && m < np; m++) {
                mlstack__piece w = ((mlstack__piece *)(void *)e->pa.p)[m];
                if (!mlstack__bpe_cached(e, e->pool.p + w.off, w.len)) r = MLSTACK_ERR_NO_MEMORY;
            }
        }
    }
    MLSTACK_FREE(s1.p);
    MLSTACK_FREE(s2.p);
    if (r == MLSTACK_OK && (flags & MLSTACK_ENCODE_ADD_SPECIAL) &&
        !mlstack__buf_put(&e->ids, t->post_suf, (size_t)t->n_post_suf * sizeof(int32_t)))
        r = MLSTACK_ERR_NO_MEMORY;
    return r;
}

/* ---- decoding ---- */
static int mlstack__hexval(int c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Replaces every occurrence of a step's pattern in a piece (Replace decoder, BPE suffix). */
static int mlstack__dec_replace(mlstack__buf *pool, mlstack__piece *p, const mlstack__tok_step *st, const char *with, size_t wl) {
    size_t start = pool->n, from = 0, b, en;
    int f;
    while (from < p->len && (f = mlstack__step_find(st, pool->p + p->off, p->len, from, &b, &en)) > 0) {
        if (en == b) break;
        if (!mlstack__buf_reserve(pool, (b - from) + wl)) return 0;
        memcpy(pool->p + pool->n, pool->p + p->off + from, b - from);
        pool->n += b - from;
        memcpy(pool->p + pool->n, with, wl);
        pool->n += wl;
        from = en;
    }
    if (!mlstack__buf_reserve(pool, p->len - from)) return 0;
    memcpy(pool->p + pool->n, pool->p + p->off + from, p->len - from);
    pool->n += p->len - from;
    p->off = start;
    p->len = pool->n - start;
    return 1;
}

static mlstack_result mlstack__decode(const mlstack_tokenizer *t, const int32_t *ids, size_t n, int flags, mlstack__buf *out) {
    mlstack__buf pool = {0, 0, 0}, pa = {0, 0, 0}, pb = {0, 0, 0}, tmp;
    mlstack_result r = MLSTACK_OK;
    size_t i, np;
    int k;
#define MLSTACK__DEC_OOM do { r = MLSTACK_ERR_NO_MEMORY; goto done; } while (0)
    for (i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0 || id >= t->n_vocab || !t->tok_s[id]) continue; /* unknown ids are skipped, as HF does */
        if ((flags & MLSTACK_DECODE_SKIP_SPECIAL) && t->tok_special[id]) continue;
        if (!mlstack__piece_push(&pa, pool.n, t->tok_len[id], 0, id) || !mlstack__buf_put(&pool, t->tok_s[id], t->tok_len[id]))
            MLSTACK__DEC_OOM;
    }
    if (t->n_dec == 0) { /* no decoder: tokens joined by spaces */
        np = pa.n / sizeof(mlstack__piece);
        for (i = 0; i < np; i++) {
            mlstack__piece p = ((mlstack__piece *)(void *)pa.p)[i];
            if ((i && !mlstack__buf_put(out, " ", 1)) || !mlstack__buf_put(out, pool.p + p.off, p.len)) MLSTACK__DEC_OOM;
        }
        goto done;
    }
    for (k = 0; k < t->n_dec; k++) {
        const mlstack__tok_step *st = &t->dec[k];
        mlstack__piece *ps = (mlstack__piece *)(void *)pa.p;
        np = pa.n / sizeof *ps;
        pb.n = 0;
        if (st->type == MLSTACK__D_BYTELEVEL || st->type == MLSTACK__D_FUSE) {
            size_t start;
            mlstack__buf raw = {0, 0, 0};
            for (i = 0; i < np; i++) {
                const char *s = pool.p + ps[i].off;
                size_t j, before = raw.n, len = ps[i].len;
                int ok = 1;
                if (st->type == MLSTACK__D_BYTELEVEL) {
                    for (j = 0; j < len && ok;) {
                        uint32_t cp;
                        j += (size_t)mlstack__tok_cp(s + j, len - j, &cp);
                        if (cp >= 324 || mlstack__bl_byte[cp] < 0) ok = 0;
                        else if (!MLSTACK__VEC_PUSH(&raw, unsigned char, (unsigned char)mlstack__bl_byte[cp])) ok = -1;
                    }
                    if (ok < 0) {
                        MLSTACK_FREE(raw.p);
                        MLSTACK__DEC_OOM;
                    }
                    if (ok) continue;
                    raw.n = before;
                }
                if (!mlstack__buf_put(&raw, s, len)) {
                    MLSTACK_FREE(raw.p);
                    MLSTACK__DEC_OOM;
                }
            }
            start = pool.n;
            if (!mlstack__utf8_lossy(&pool, raw.p ? raw.p : "", raw.n)) {
                MLSTACK_FREE(raw.p);
                MLSTACK__DEC_OOM;
            }
            MLSTACK_FREE(raw.p);
            if (!mlstack__piece_push(&pb, start, pool.n - start, 0, -1)) MLSTACK__DEC_OOM;
        } else if (st->type == MLSTACK__D_BYTEFALLBACK) {
            size_t run_start = 0, run = 0;
            for (i = 0; i <= np; i++) {
                int byte = -1;
                if (i < np && ps[i].len == 6 && memcmp(pool.p + ps[i].off, "<0x", 3) == 0 && pool.p[ps[i].off + 5] == '>') {
                    int h = mlstack__hexval(pool.p[ps[i].off + 3]), l = mlstack__hexval(pool.p[ps[i].off + 4]);
                    if (h >= 0 && l >= 0) byte = h * 16 + l;
                }
                if (byte >= 0) {
                    if (!run) run_start = pool.n;
                    if (!MLSTACK__VEC_PUSH(&pool, unsigned char, (unsigned char)byte)) MLSTACK__DEC_OOM;
                    run++;
                    continue;
                }
                if (run) {
                    size_t rl = pool.n - run_start;
                    if (!mlstack__utf8_all_valid(pool.p + run_start, rl)) {
                        size_t q;
                        pool.n = run_start;
                        for (q = 0; q < run; q++)
                            if (!mlstack__buf_put(&pool, "\xEF\xBF\xBD", 3)) MLSTACK__DEC_OOM;
                    }
                    if (!mlstack__piece_push(&pb, run_start, pool.n - run_start, 0, -1)) MLSTACK__DEC_OOM;
                    run = 0;
                }
                if (i < np && !mlstack__piece_push(&pb, ps[i].off, ps[i].len, 0, -1)) MLSTACK__DEC_OOM;
            }
        } else {
            for (i = 0; i < np; i++) {
                mlstack__piece p = ps[i];
                if (st->type == MLSTACK__D_REPLACE) {
                    if (!mlstack__dec_replace(&pool, &p, st, st->b, st->blen)) MLSTACK__DEC_OOM;
                } else if (st->type == MLSTACK__D_BPE) {
                    if (!mlstack__dec_replace(&pool, &p, st, " ", i + 1 == np ? 0 : 1)) MLSTACK__DEC_OOM;
                } else if (st->type == MLSTACK__D_METASPACE) {
                    mlstack__tok_step lit = *st;
                    lit.re = NULL;
                    if (!mlstack__dec_replace(&pool, &p, &lit, " ", i == 0 && st->scheme != MLSTACK__PREPEND_NEVER ? 0 : 1))
                        MLSTACK__DEC_OOM;
                } else if (st->type == MLSTACK__D_STRIP) {
                    int c;
                    for (c = 0; c < st->left && p.len >= st->alen && memcmp(pool.p + p.off, st->a, st->alen) == 0; c++) {
                        p.off += st->alen;
                        p.len -= st->alen;
                    }
                    for (c = 0; c < st->right && p.len >= st->alen && memcmp(pool.p + p.off + p.len - st->alen, st->a, st->alen) == 0; c++)
                        p.len -= st->alen;
                }
                if (!MLSTACK__VEC_PUSH(&pb, mlstack__piece, p)) MLSTACK__DEC_OOM;
            }
        }
        tmp = pa;
        pa = pb;
        pb = tmp;
    }
    np = pa.n / sizeof(mlstack__piece);
    for (i = 0; i < np; i++) {
        mlstack__piece p = ((mlstack__piece *)(void *)pa.p)[i];
        if (!mlstack__buf_put(out, pool.p + p.off, p.len)) MLSTACK__DEC_OOM;
    }
done:
#undef MLSTACK__DEC_OOM
    MLSTACK_FREE(pool.p);
    MLSTACK_FREE(pa.p);
    MLSTACK_FREE(pb.p);
    return r;
}

/* ---- loading ---- */
static int mlstack__jbool(const mlstack__json *o, const char *key, int def) {
    const mlstack__json *v = mlstack__json_get(o, key);
    if (!v || v->type == MLSTACK__JSON_NULL) return def;
    return v->type == MLSTACK__JSON_TRUE;
}
static const mlstack__json *mlstack__jstr(const mlstack__json *o, const char *key) {
    const mlstack__json *v = mlstack__json_get(o, key);
    return v && v->type == MLSTACK__JSON_STRING ? v : NULL;
}
/* A special-token setting of tokenizer_config.json: a string or {"content": ...}. */
static const mlstack__json *mlstack__jtoken(const mlstack__json *o, const char *key) {
    const mlstack__json *v = mlstack__json_get(o, key);
    if (v && v->type == MLSTACK__JSON_OBJECT) v = mlstack__json_get(v, "content");
    return v && v->type == MLSTACK__JSON_STRING ? v : NULL;
}
static char *mlstack__tok_dup(mlstack_tokenizer *t, const char *s, size_t n) {
    char *p = (char *)mlstack__arena_alloc(&t->arena, n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

static mlstack_result mlstack__tok_regex(mlstack_tokenizer *t, const char *pat, size_t n, mlstack__regex **out, mlstack_error *err) {
    mlstack_result r;
    if (t->n_regexes == t->cap_regexes) {
        int cap = t->cap_regexes ? t->cap_regexes * 2 : 8;
        mlstack__regex **p = (mlstack__regex **)MLSTACK_REALLOC(t->regexes, (size_t)cap * sizeof *p);
        if (!p) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "tokenizer: out of memory");
        t->regexes = p;
        t->cap_regexes = cap;
    }
    r = mlstack__regex_compile(pat, n, out, err);
    if (r != MLSTACK_OK) return r;
    t->regexes[t->n_regexes++] = *out;
    return MLSTACK_OK;
}

/* A Split/Replace "pattern": {"String": s} or {"Regex": r}. */
static mlstack_result mlstack__tok_pattern(mlstack_tokenizer *t, const mlstack__json *pat, mlstack__tok_step *st, const char *what,
                                           mlstack_error *err) {
    const mlstack__json *s = mlstack__jstr(pat, "String"), *re = mlstack__jstr(pat, "Regex");
    if (s) {
        st->a = s->str;
        st->alen = s->len;
        if (s->len == 0) return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "tokenizer: %s with an empty String pattern", what);
        return MLSTACK_OK;
    }
    if (re) {
        mlstack_result r = mlstack__tok_regex(t, re->str, re->len, &st->re, err);
        if (r != MLSTACK_OK && err) {
            char msg[sizeof err->message];
            memcpy(msg, err->message, sizeof msg);
            MLSTACK__FAIL(err, r, "tokenizer: %s regex: %s", what, msg);
        }
        return r;
    }
    return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: %s: \"pattern\" must be {\"String\": ...} or {\"Regex\": ...}", what);
}

static mlstack_result mlstack__tok_push_step(mlstack__tok_step **arr, int *n, mlstack__tok_step **out, mlstack_error *err) {
    mlstack__tok_step *p;
    if (*n >= 64) return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "tokenizer: more than 64 normalizer/pre-tokenizer/decoder steps");
    p = (mlstack__tok_step *)MLSTACK_REALLOC(*arr, (size_t)(*n + 1) * sizeof *p);
    if (!p) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "tokenizer: out of memory");
    *arr = p;
    *out = &p[(*n)++];
    memset(*out, 0, sizeof **out);
    return MLSTACK_OK;
}

static int mlstack__tok_scheme(const mlstack__json *o) {
    const mlstack__json *ps = mlstack__jstr(o, "prepend_scheme");
    if (ps) return mlstack__json_is_str(ps, "first") ? MLSTACK__PREPEND_FIRST
                   : mlstack__json_is_str(ps, "never") ? MLSTACK__PREPEND_NEVER : MLSTACK__PREPEND_ALWAYS;
    return mlstack__jbool(o, "add_prefix_space", 1) ? MLSTACK__PREPEND_ALWAYS : MLSTACK__PREPEND_NEVER;
}
static int mlstack__tok_behavior(const mlstack__json *v, int def) {
    if (!v) return def;
    if (mlstack__json_is_str(v, "Removed")) return MLSTACK__B_REMOVED;
    if (mlstack__json_is_str(v, "Isolated")) return MLSTACK__B_ISOLATED;
    if (mlstack__json_is_str(v, "MergedWithPrevious")) return MLSTACK__B_PREV;
    if (mlstack__json_is_str(v, "MergedWithNext")) return MLSTACK__B_NEXT;
    if (mlstack__json_is_str(v, "Contiguous")) return MLSTACK__B_CONTIGUOUS;
    return -1;
}

static mlstack_result mlstack__tok_steps(mlstack_tokenizer *t, const mlstack__json *node, int kind, int depth, mlstack_error *err) {
    static const char *const seq_key[3] = {"normalizers", "pretokenizers", "decoders"};
    static const char *const what[3] = {"normalizer", "pre_tokenizer", "decoder"};
    mlstack__tok_step **arr = kind == 0 ? &t->norm : kind == 1 ? &t->pre : &t->dec;
    int *n = kind == 0 ? &t->n_norm : kind == 1 ? &t->n_pre : &t->n_dec;
    const mlstack__json *ty;
    mlstack__tok_step *st;
    mlstack_result r;
    if (mlstack__json_is_null(node)) return MLSTACK_OK;
    if (node->type != MLSTACK__JSON_OBJECT || !(ty = mlstack__jstr(node, "type")))
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: %s must be null or an object with a \"type\"", what[kind]);
    if (mlstack__json_is_str(ty, "Sequence")) {
        const mlstack__json *list = mlstack__json_get(node, seq_key[kind]), *c;
        if (depth > 8) return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "tokenizer: %s Sequence nested too deep", what[kind]);
        if (!list || list->type != MLSTACK__JSON_ARRAY)
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: %s Sequence without a \"%s\" array", what[kind], seq_key[kind]);
        for (c = list->child; c; c = c->next)
            if ((r = mlstack__tok_steps(t, c, kind, depth + 1, err)) != MLSTACK_OK) return r;
        return MLSTACK_OK;
    }
    if ((r = mlstack__tok_push_step(arr, n, &st, err)) != MLSTACK_OK) return r;
    if (kind == 0) {
        static const char *const names[] = {"NFC", "NFD", "NFKC", "NFKD", "Lowercase", "Strip", "StripAccents", "Prepend", "Replace"};
        int i;
        for (i = 0; i < 9; i++)
            if (mlstack__json_is_str(ty, names[i])) st->type = i + 1;
        if (st->type == MLSTACK__N_STRIP) {
            st->left = mlstack__jbool(node, "strip_left", 1);
            st->right = mlstack__jbool(node, "strip_right", 1);
        } else if (st->type == MLSTACK__N_PREPEND) {
            const mlstack__json *p = mlstack__jstr(node, "prepend");
            if (!p) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: Prepend normalizer without a \"prepend\" string");
            st->a = p->str;
            st->alen = p->len;
        } else if (st->type == MLSTACK__N_REPLACE) {
            const mlstack__json *c = mlstack__jstr(node, "content");
            if (!c) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: Replace normalizer without a \"content\" string");
            st->b = c->str;
            st->blen = c->len;
            if ((r = mlstack__tok_pattern(t, mlstack__json_get(node, "pattern"), st, "Replace normalizer", err)) != MLSTACK_OK) return r;
        }
    } else if (kind == 1) {
        if (mlstack__json_is_str(ty, "Split")) {
            st->type = MLSTACK__P_SPLIT;
            st->behavior = mlstack__tok_behavior(mlstack__jstr(node, "behavior"), -1);
            st->invert = mlstack__jbool(node, "invert", 0);
            if (st->behavior < 0) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: Split pre-tokenizer with a missing or unknown \"behavior\"");
            if ((r = mlstack__tok_pattern(t, mlstack__json_get(node, "pattern"), st, "Split pre-tokenizer", err)) != MLSTACK_OK) return r;
        } else if (mlstack__json_is_str(ty, "ByteLevel")) {
            st->type = MLSTACK__P_BYTELEVEL;
            st->flag = mlstack__jbool(node, "add_prefix_space", 1);
            if (mlstack__jbool(node, "use_regex", 1) &&
                (r = mlstack__tok_regex(t, mlstack__gpt2_pattern, strlen(mlstack__gpt2_pattern), &st->re, err)) != MLSTACK_OK)
                return r;
        } else if (mlstack__json_is_str(ty, "Metaspace")) {
            const mlstack__json *rep = mlstack__jstr(node, "replacement");
            st->type = MLSTACK__P_METASPACE;
            st->a = rep ? rep->str : "\xE2\x96\x81";
            st->alen = rep ? rep->len : 3;
            st->scheme = mlstack__tok_scheme(node);
            st->flag = mlstack__jbool(node, "split", 1);
            if (st->alen == 0) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: Metaspace with an empty replacement");
        } else if (mlstack__json_is_str(ty, "Digits")) {
            st->type = MLSTACK__P_DIGITS;
            st->behavior = mlstack__jbool(node, "individual_digits", 0) ? MLSTACK__B_ISOLATED : MLSTACK__B_CONTIGUOUS;
        } else if (mlstack__json_is_str(ty, "Punctuation")) {
            st->type = MLSTACK__P_PUNCT;
            st->behavior = mlstack__tok_behavior(mlstack__jstr(node, "behavior"), MLSTACK__B_ISOLATED);
            if (st->behavior < 0) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: Punctuation pre-tokenizer with an unknown \"behavior\"");
        } else if (mlstack__json_is_str(ty, "Whitespace")) {
            st->type = MLSTACK__P_WHITESPACE;
        } else if (mlstack__json_is_str(ty, "WhitespaceSplit")) {
            st->type = MLSTACK__P_WSSPLIT;
        } else if (mlstack__json_is_str(ty, "BertPreTokenizer")) {
            st->type = MLSTACK__P_BERT;
        }
    } else {
        if (mlstack__json_is_str(ty, "ByteLevel")) st->type = MLSTACK__D_BYTELEVEL;
        else if (mlstack__json_is_str(ty, "ByteFallback")) st->type = MLSTACK__D_BYTEFALLBACK;
        else if (mlstack__json_is_str(ty, "Fuse")) st->type = MLSTACK__D_FUSE;
        else if (mlstack__json_is_str(ty, "Metaspace")) {
            const mlstack__json *rep = mlstack__jstr(node, "replacement");
            st->type = MLSTACK__D_METASPACE;
            st->a = rep ? rep->str : "\xE2\x96\x81";
            st->alen = rep ? rep->len : 3;
            st->scheme = mlstack__tok_scheme(node);
            if (st->alen == 0) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: Metaspace with an empty replacement");
        } else if (mlstack__json_is_str(ty, "Replace")) {
            const mlstack__json *c = mlstack__jstr(node, "content");
            st->type = MLSTACK__D_REPLACE;
            if (!c) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: Replace decoder without a \"content\" string");
            st->b = c->str;
            st->blen = c->len;
            if ((r = mlstack__tok_pattern(t, mlstack__json_get(node, "pattern"), st, "Replace decoder", err)) != MLSTACK_OK) return r;
        } else if (mlstack__json_is_str(ty, "Strip")) {
            const mlstack__json *c = mlstack__jstr(node, "content"), *a = mlstack__json_get(node, "start"),
                                *b = mlstack__json_get(node, "stop");
            st->type = MLSTACK__D_STRIP;
            if (!c || !c->len || !a || !a->is_int || !b || !b->is_int || a->i < 0 || b->i < 0 || a->i > 1000 || b->i > 1000)
                return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: Strip decoder needs \"content\", \"start\" and \"stop\"");
            st->a = c->str;
            st->alen = c->len;
            st->left = (int)a->i;
            st->right = (int)b->i;
        } else if (mlstack__json_is_str(ty, "BPEDecoder")) {
            const mlstack__json *s = mlstack__jstr(node, "suffix");
            st->type = MLSTACK__D_BPE;
            st->a = s ? s->str : "</w>";
            st->alen = s ? s->len : 4;
        }
    }
    if (!st->type)
        return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "tokenizer: unsupported %s type \"%s\"", what[kind], ty->str);
    return MLSTACK_OK;
}

/* Post-processor: ids before and after the sequence for add_special_tokens. */
static mlstack_result mlstack__tok_addpost(mlstack_tokenizer *t, int32_t **arr, int *n, int32_t id, mlstack_error *err) {
    int32_t *p;
    if (id < 0 || id >= t->n_vocab) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: post_processor names id %ld outside the vocabulary", (long)id);
    if (*n >= 64) return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "tokenizer: post_processor adds more than 64 tokens");
    p = (int32_t *)MLSTACK_REALLOC(*arr, (size_t)(*n + 1) * sizeof *p);
    if (!p) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "tokenizer: out of memory");
    p[(*n)++] = id;
    *arr = p;
    return MLSTACK_OK;
}
static mlstack_result mlstack__tok_post(mlstack_tokenizer *t, const mlstack__json *node, int depth, mlstack_error *err) {
    const mlstack__json *ty, *c;
    mlstack_result r;
    if (mlstack__json_is_null(node)) return MLSTACK_OK;
    if (node->type != MLSTACK__JSON_OBJECT || !(ty = mlstack__jstr(node, "type")) || depth > 8)
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: post_processor must be null or an object with a \"type\"");
    if (mlstack__json_is_str(ty, "ByteLevel")) return MLSTACK_OK;
    if (mlstack__json_is_str(ty, "Sequence")) {
        const mlstack__json *list = mlstack__json_get(node, "processors");
        if (!list || list->type != MLSTACK__JSON_ARRAY) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: Sequence post_processor without \"processors\"");
        for (c = list->child; c; c = c->next)
            if ((r = mlstack__tok_post(t, c, depth + 1, err)) != MLSTACK_OK) return r;
        return MLSTACK_OK;
    }
    if (mlstack__json_is_str(ty, "RobertaProcessing") || mlstack__json_is_str(ty, "BertProcessing")) {
        const mlstack__json *cls = mlstack__json_at(mlstack__json_get(node, "cls"), 1), *sep = mlstack__json_at(mlstack__json_get(node, "sep"), 1);
        int32_t *pre = NULL;
        int npre = 0;
        if (!cls || !cls->is_int || !sep || !sep->is_int) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: %s needs cls and sep [token, id] pairs", ty->str);
        if ((r = mlstack__tok_addpost(t, &pre, &npre, (int32_t)cls->i, err)) != MLSTACK_OK) return r;
        while (t->n_post_pre > 0 && npre < 64 && r == MLSTACK_OK) { /* earlier processors' prefix goes after ours */
            r = mlstack__tok_addpost(t, &pre, &npre, t->post_pre[0], err);
            memmove(t->post_pre, t->post_pre + 1, (size_t)--t->n_post_pre * sizeof(int32_t));
        }
        MLSTACK_FREE(t->post_pre);
        t->post_pre = pre;
        t->n_post_pre = npre;
        if (r != MLSTACK_OK) return r;
        return mlstack__tok_addpost(t, &t->post_suf, &t->n_post_suf, (int32_t)sep->i, err);
    }
    if (mlstack__json_is_str(ty, "TemplateProcessing")) {
        const mlstack__json *single = mlstack__json_get(node, "single"), *sp = mlstack__json_get(node, "special_tokens");
        int32_t *pre = NULL;
        int npre = 0, seen_a = 0, q;
        if (!single || single->type != MLSTACK__JSON_ARRAY) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: TemplateProcessing without a \"single\" array");
        for (c = single->child; c; c = c->next) {
            const mlstack__json *tk = mlstack__json_get(mlstack__json_get(c, "SpecialToken"), "id"), *ids, *x;
            if (mlstack__json_get(c, "Sequence")) {
                if (seen_a) return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "tokenizer: TemplateProcessing repeats the sequence");
                seen_a = 1;
                for (q = 0; q < t->n_post_pre && r == MLSTACK_OK; q++) r = mlstack__tok_addpost(t, &pre, &npre, t->post_pre[q], err);
                if (r != MLSTACK_OK) return r;
                continue;
            }
            if (!tk || tk->type != MLSTACK__JSON_STRING) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: TemplateProcessing item is neither SpecialToken nor Sequence");
            ids = mlstack__json_get(mlstack__json_get(sp, tk->str), "ids");
            if (!ids || ids->type != MLSTACK__JSON_ARRAY) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: TemplateProcessing special token \"%s\" has no ids", tk->str);
            for (x = ids->child; x; x = x->next) {
                if (!x->is_int) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: TemplateProcessing ids must be integers");
                if (seen_a) r = mlstack__tok_addpost(t, &t->post_suf, &t->n_post_suf, (int32_t)x->i, err);
                else r = mlstack__tok_addpost(t, &pre, &npre, (int32_t)x->i, err);
                if (r != MLSTACK_OK) {
                    MLSTACK_FREE(pre);
                    return r;
                }
            }
        }
        if (!seen_a) {
            MLSTACK_FREE(pre);
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: TemplateProcessing \"single\" lacks the sequence $A");
        }
        MLSTACK_FREE(t->post_pre);
        t->post_pre = pre;
        t->n_post_pre = npre;
        return MLSTACK_OK;
    }
    return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "tokenizer: unsupported post_processor type \"%s\"", ty->str);
}

static int mlstack__cmp_added(const void *a, const void *b) {
    const mlstack__tok_added *x = (const mlstack__tok_added *)a, *y = (const mlstack__tok_added *)b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static mlstack_result mlstack__tok_build(mlstack_tokenizer *t, const mlstack__json *root, const mlstack__json *cfg, mlstack_error *err) {
    const mlstack__json *model, *vocab, *merges, *added, *ty, *c, *v;
    int64_t max_id = -1;
    size_t n_vocab_entries = 0, slots, i;
    mlstack_result r;
    uint32_t rank = 0;
    if (!root || root->type != MLSTACK__JSON_OBJECT) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer.json: the top level is not an object");
    model = mlstack__json_get(root, "model");
    if (!model || model->type != MLSTACK__JSON_OBJECT) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer.json: no \"model\" object");
    ty = mlstack__json_get(model, "type");
    vocab = mlstack__json_get(model, "vocab");
    merges = mlstack__json_get(model, "merges");
    if (ty && !mlstack__json_is_str(ty, "BPE"))
        return MLSTACK__FAIL(err, ty->type == MLSTACK__JSON_STRING ? MLSTACK_ERR_UNSUPPORTED : MLSTACK_ERR_FORMAT,
                             "tokenizer.json: unsupported tokenizer model \"%s\" (only BPE is implemented)", ty->type == MLSTACK__JSON_STRING ? ty->str : "?");
    if (!ty && !merges) return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "tokenizer.json: unsupported tokenizer model (no \"type\" and no \"merges\")");
    if (!vocab || vocab->type != MLSTACK__JSON_OBJECT) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer.json: model.vocab must be an object");
    if (!merges || merges->type != MLSTACK__JSON_ARRAY) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer.json: model.merges must be an array");
    v = mlstack__json_get(model, "dropout");
    if (v && v->type == MLSTACK__JSON_NUMBER && v->num > 0)
        return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "tokenizer.json: BPE dropout %g is not supported (inference needs null)", v->num);
    added = mlstack__json_get(root, "added_tokens");
    if (added && added->type != MLSTACK__JSON_ARRAY && added->type != MLSTACK__JSON_NULL)
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer.json: added_tokens must be an array");
    for (c = vocab->child; c; c = c->next) {
        if (c->type != MLSTACK__JSON_NUMBER || !c->is_int || c->i < 0 || c->i >= MLSTACK_TOK_MAX_VOCAB)
            return MLSTACK__FAIL(err, c->type == MLSTACK__JSON_NUMBER && c->is_int && c->i >= 0 ? MLSTACK_ERR_LIMIT : MLSTACK_ERR_FORMAT,
                                 "tokenizer.json: vocab entry \"%.64s\" has an invalid id (integers 0..%d)", c->key, MLSTACK_TOK_MAX_VOCAB - 1);
        if (c->i > max_id) max_id = c->i;
        n_vocab_entries++;
    }
    for (c = added ? added->child : NULL; c; c = c->next) {
        v = mlstack__json_get(c, "id");
        if (!v || !v->is_int || v->i < 0 || v->i >= MLSTACK_TOK_MAX_VOCAB || !mlstack__jstr(c, "content"))
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer.json: an added token needs an integer \"id\" (0..%d) and a \"content\" string", MLSTACK_TOK_MAX_VOCAB - 1);
        if (v->i > max_id) max_id = v->i;
        t->n_added++;
    }
    t->n_vocab = (int32_t)(max_id + 1);
    t->tok_s = (const char **)mlstack__calloc((size_t)t->n_vocab + 1, sizeof *t->tok_s);
    t->tok_len = (uint32_t *)mlstack__calloc((size_t)t->n_vocab + 1, sizeof *t->tok_len);
    t->tok_special = (unsigned char *)mlstack__calloc((size_t)t->n_vocab + 1, 1);
    for (slots = 16; slots < n_vocab_entries * 2; slots *= 2) {}
    t->vmap = (uint32_t *)mlstack__calloc(slots, sizeof *t->vmap);
    t->vmask = (uint32_t)(slots - 1);
    if (!t->tok_s || !t->tok_len || !t->tok_special || !t->vmap) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "tokenizer: out of memory");
    for (c = vocab->child; c; c = c->next) {
        uint32_t h = mlstack__hash(c->key, c->key_len) & t->vmask;
        if (mlstack__tok_vocab_find(t, c->key, c->key_len) >= 0) continue; /* the JSON repeats a key: first wins */
        if (t->tok_s[c->i]) return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer.json: vocab id %ld is used twice", (long)c->i);
        t->tok_s[c->i] = c->key;
        t->tok_len[c->i] = (uint32_t)c->key_len;
        while (t->vmap[h]) h = (h + 1) & t->vmask;
        t->vmap[h] = (uint32_t)c->i + 1;
    }
    /* model options */
    t->byte_fallback = mlstack__jbool(model, "byte_fallback", 0);
    t->fuse_unk = mlstack__jbool(model, "fuse_unk", 0);
    t->ignore_merges = mlstack__jbool(model, "ignore_merges", 0);
    t->unk_id = -1;
    if ((v = mlstack__jstr(model, "unk_token")) != NULL) t->unk_id = mlstack__tok_vocab_find(t, v->str, v->len);
    if ((v = mlstack__jstr(model, "continuing_subword_prefix")) != NULL) {
        t->cont_prefix = v->str;
        t->cont_prefix_len = v->len;
    }
    if ((v = mlstack__jstr(model, "end_of_word_suffix")) != NULL) {
        t->eow_suffix = v->str;
        t->eow_suffix_len = v->len;
    }
    for (i = 0; i < 256; i++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", (unsigned)i);
        t->byte_ids[i] = mlstack__tok_vocab_find(t, name, 6);
    }
    /* merges */
    for (slots = 16; slots < merges->len * 2; slots *= 2) {}
    t->mkey = (uint64_t *)mlstack__calloc(slots, sizeof *t->mkey);
    t->mrank = (uint32_t *)mlstack__calloc(slots, sizeof *t->mrank);
    t->mnew = (int32_t *)mlstack__calloc(slots, sizeof *t->mnew);
    t->mmask = (uint32_t)(slots - 1);
    if (!t->mkey || !t->mrank || !t->mnew) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "tokenizer: out of memory");
    {
        mlstack__buf cat = {0, 0, 0};
        for (c = merges->child; c; c = c->next, rank++) {
            const char *a, *b;
            size_t al, bl;
            int32_t ia, ib, in;
            uint64_t key;
            uint32_t h;
            if (c->type == MLSTACK__JSON_STRING) {
                const char *sp = (const char *)memchr(c->str, ' ', c->len);
                if (!sp || memchr(sp + 1, ' ', c->len - (size_t)(sp + 1 - c->str))) {
                    MLSTACK_FREE(cat.p);
                    return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer.json: merge %u \"%.64s\" is not two tokens separated by one space", rank, c->str);
                }
                a = c->str;
                al = (size_t)(sp - c->str);
                b = sp + 1;
                bl = c->len - al - 1;
            } else if (c->type == MLSTACK__JSON_ARRAY && c->len == 2 && c->child->type == MLSTACK__JSON_STRING &&
                       c->child->next->type == MLSTACK__JSON_STRING) {
                a = c->child->str;
                al = c->child->len;
                b = c->child->next->str;
                bl = c->child->next->len;
            } else {
                MLSTACK_FREE(cat.p);
                return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer.json: merge %u is neither \"a b\" nor [\"a\", \"b\"]", rank);
            }
            ia = mlstack__tok_vocab_find(t, a, al);
            ib = mlstack__tok_vocab_find(t, b, bl);
            cat.n = 0;
            if (t->cont_prefix_len && bl >= t->cont_prefix_len && memcmp(b, t->cont_prefix, t->cont_prefix_len) == 0) {
                b += t->cont_prefix_len;
                bl -= t->cont_prefix_len;
            }
            if (!mlstack__buf_put(&cat, a, al) || !mlstack__buf_put(&cat, b, bl)) {
                MLSTACK_FREE(cat.p);
                return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "tokenizer: out of memory");
            }
            in = mlstack__tok_vocab_find(t, cat.p, cat.n);
            if (ia < 0 || ib < 0 || in < 0) {
                MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer.json: merge %u refers to \"%.*s\", which is not in the vocabulary", rank,
                              (int)(ia < 0 ? (al > 64 ? 64 : al) : ib < 0 ? (bl > 64 ? 64 : bl) : (cat.n > 64 ? 64 : cat.n)),
                              ia < 0 ? a : ib < 0 ? b : cat.p);
                MLSTACK_FREE(cat.p);
                return MLSTACK_ERR_FORMAT;
            }
            key = (((uint64_t)(uint32_t)ia << 32) | (uint32_t)ib) + 1;
            for (h = mlstack__hash64(key) & t->mmask; t->mkey[h] && t->mkey[h] != key; h = (h + 1) & t->mmask) {}
            t->mkey[h] = key; /* a repeated pair keeps the later rank, as HF's map does */
            t->mrank[h] = rank;
            t->mnew[h] = in;
        }
        MLSTACK_FREE(cat.p);
    }
    /* added tokens */
    if (t->n_added) {
        int k = 0;
        t->added = (mlstack__tok_added *)mlstack__calloc((size_t)t->n_added, sizeof *t->added);
        if (!t->added) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "tokenizer: out of memory");
        for (c = added->child; c; c = c->next, k++) {
            mlstack__tok_added *a = &t->added[k];
            const mlstack__json *s = mlstack__jstr(c, "content");
            a->id = (int32_t)mlstack__json_get(c, "id")->i;
            a->s = s->str;
            a->len = (uint32_t)s->len;
            a->special = (unsigned char)mlstack__jbool(c, "special", 0);
            a->lstrip = (unsigned char)mlstack__jbool(c, "lstrip", 0);
            a->rstrip = (unsigned char)mlstack__jbool(c, "rstrip", 0);
            a->single_word = (unsigned char)mlstack__jbool(c, "single_word", 0);
            a->normalized = (unsigned char)mlstack__jbool(c, "normalized", !a->special);
            t->tok_s[a->id] = a->s;
            t->tok_len[a->id] = a->len;
            t->tok_special[a->id] = a->special;
        }
        qsort(t->added, (size_t)t->n_added, sizeof *t->added, mlstack__cmp_added);
    }
    if ((r = mlstack__tok_steps(t, mlstack__json_get(root, "normalizer"), 0, 0, err)) != MLSTACK_OK) return r;
    if ((r = mlstack__tok_steps(t, mlstack__json_get(root, "pre_tokenizer"), 1, 0, err)) != MLSTACK_OK) return r;
    if ((r = mlstack__tok_steps(t, mlstack__json_get(root, "decoder"), 2, 0, err)) != MLSTACK_OK) return r;
    for (i = 0; i < (size_t)t->n_pre; i++)
        if (t->pre[i].type == MLSTACK__P_BYTELEVEL) t->byte_level_model = 1;
    /* Special tokens as transformers 5 decides them: an explicit add_bos_token/add_eos_token in
       tokenizer_config.json (or a tokenizer.json without post-processor) replaces the
       post-processor by "[bos] $A [eos]"; a missing flag then counts as false. */
    t->bos_id = t->eos_id = -1;
    if (cfg && cfg->type == MLSTACK__JSON_OBJECT) {
        const mlstack__json *bos = mlstack__jtoken(cfg, "bos_token"), *eos = mlstack__jtoken(cfg, "eos_token");
        const mlstack__json *ct = mlstack__json_get(cfg, "chat_template");
        if (bos) t->bos_id = mlstack_tokenizer_token_to_id(t, bos->str, bos->len);
        if (eos) t->eos_id = mlstack_tokenizer_token_to_id(t, eos->str, eos->len);
        if (ct && ct->type == MLSTACK__JSON_STRING) t->chat_template = ct->str;
        else if (ct && ct->type == MLSTACK__JSON_ARRAY)
            for (c = ct->child; c; c = c->next)
                if (mlstack__json_is_str(mlstack__json_get(c, "name"), "default") && mlstack__jstr(c, "template"))
                    t->chat_template = mlstack__jstr(c, "template")->str;
    }
    {
        const mlstack__json *pp = mlstack__json_get(root, "post_processor");
        int explicit_flags = mlstack__json_get(cfg, "add_bos_token") || mlstack__json_get(cfg, "add_eos_token");
        if (explicit_flags || mlstack__json_is_null(pp)) {
            if (mlstack__jbool(cfg, "add_bos_token", 0) && t->bos_id >= 0 &&
                (r = mlstack__tok_addpost(t, &t->post_pre, &t->n_post_pre, t->bos_id, err)) != MLSTACK_OK)
                return r;
            if (mlstack__jbool(cfg, "add_eos_token", 0) && t->eos_id >= 0 &&
                (r = mlstack__tok_addpost(t, &t->post_suf, &t->n_post_suf, t->eos_id, err)) != MLSTACK_OK)
                return r;
        } else if ((r = mlstack__tok_post(t, pp, 0, err)) != MLSTACK_OK)
            return r;
    }
    return MLSTACK_OK;
}

/* ---- public API ---- */
MLSTACK_API void mlstack_tokenizer_close(mlstack_tokenizer *t) {
    int i;
    if (!t) return;
    for (i = 0; i < t->n_regexes; i++) mlstack__regex_free(t->regexes[i]);
    MLSTACK_FREE(t->regexes);
    MLSTACK_FREE(t->tok_s);
    MLSTACK_FREE(t->tok_len);
    MLSTACK_FREE(t->tok_special);
    MLSTACK_FREE(t->vmap);
    MLSTACK_FREE(t->mkey);
    MLSTACK_FREE(t->mrank);
    MLSTACK_FREE(t->mnew);
    MLSTACK_FREE(t->norm);
    MLSTACK_FREE(t->pre);
    MLSTACK_FREE(t->dec);
    MLSTACK_FREE(t->post_pre);
    MLSTACK_FREE(t->post_suf);
    MLSTACK_FREE(t->added);
    mlstack__json_free(&t->doc);
    mlstack__json_free(&t->cfg_doc);
    mlstack__arena_free(&t->arena);
#if !defined(MLSTACK_NO_THREADS)
    pthread_mutex_destroy(&t->err_lock);
#endif
    MLSTACK_FREE(t);
}

MLSTACK_API mlstack_result mlstack_tokenizer_load(const char *json, size_t len, const char *config_json, size_t config_len,
                                                  mlstack_tokenizer **out, mlstack_error *err) {
    mlstack_tokenizer *t;
    mlstack_result r;
    if (!out) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "tokenizer: out is NULL");
    *out = NULL;
    if (!json) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "tokenizer: json is NULL");
    mlstack__bl_init();
    t = (mlstack_tokenizer *)mlstack__calloc(1, sizeof *t);
    if (!t) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "tokenizer: out of memory");
#if !defined(MLSTACK_NO_THREADS)
    pthread_mutex_init(&t->err_lock, NULL);
#endif
    t->err = (char *)mlstack__arena_alloc(&t->arena, MLSTACK__TOK_ERR);
    if (!t->err) {
        mlstack_tokenizer_close(t);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "tokenizer: out of memory");
    }
    t->err[0] = 0;
    r = mlstack__json_parse(&t->doc, json, len, "tokenizer.json", err);
    if (r == MLSTACK_OK && config_json) r = mlstack__json_parse(&t->cfg_doc, config_json, config_len, "tokenizer_config.json", err);
    if (r == MLSTACK_OK) r = mlstack__tok_build(t, t->doc.root, t->cfg_doc.root, err);
    if (r != MLSTACK_OK) {
        mlstack_tokenizer_close(t);
        return r;
    }
    *out = t;
    return MLSTACK_OK;
}

/* JSON string literal of s into b. */
static int mlstack__json_quote(mlstack__buf *b, const char *s, size_t n) {
    size_t i;
    if (!mlstack__buf_put(b, "\"", 1)) return 0;
    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            if (!mlstack__buf_put(b, esc, 2)) return 0;
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            if (!mlstack__buf_put(b, esc, 6)) return 0;
        } else if (!mlstack__buf_put(b, s + i, 1))
            return 0;
    }
    return mlstack__buf_put(b, "\"", 1);
}

/* The older layout vocab.json + merges.txt: assembles the tokenizer.json that transformers'
   conversion would build for the tokenizer class named in tokenizer_config.json. */
static mlstack_result mlstack__tok_from_vocab_merges(const char *dir, const char *cfg, size_t cfg_len, mlstack__buf *out, mlstack_error *err) {
    mlstack__json_doc cd;
    const mlstack__json *cls, *atd, *c;
    char *vpath = mlstack__path_join(dir, "vocab.json"), *mpath = mlstack__path_join(dir, "merges.txt");
    char *vocab = NULL, *merges = NULL;
    size_t vl = 0, ml = 0, i, first = 1;
    mlstack_result r;
    int qwen = 0;
    memset(&cd, 0, sizeof cd);
    if (!vpath || !mpath) {
        r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "tokenizer: out of memory");
        goto done;
    }
    if (!cfg) {
        r = MLSTACK__FAIL(err, MLSTACK_ERR_NOT_FOUND, "%s: no tokenizer.json, and vocab.json + merges.txt need tokenizer_config.json", dir);
        goto done;
    }
    if ((r = mlstack__json_parse(&cd, cfg, cfg_len, "tokenizer_config.json", err)) != MLSTACK_OK) goto done;
    cls = mlstack__jstr(cd.root, "tokenizer_class");
    if (cls && (mlstack__json_is_str(cls, "Qwen2Tokenizer") || mlstack__json_is_str(cls, "Qwen2TokenizerFast"))) qwen = 1;
    else if (!cls || !(mlstack__json_is_str(cls, "GPT2Tokenizer") || mlstack__json_is_str(cls, "GPT2TokenizerFast"))) {
        r = MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "%s: no tokenizer.json; vocab.json + merges.txt are supported for Qwen2Tokenizer and GPT2Tokenizer, not \"%s\"",
                          dir, cls ? cls->str : "(no tokenizer_class)");
        goto done;
    }
    if ((r = mlstack__read_file(vpath, MLSTACK_MAX_JSON_BYTES, &vocab, &vl, err)) != MLSTACK_OK) goto done;
    if ((r = mlstack__read_file(mpath, MLSTACK_MAX_JSON_BYTES, &merges, &ml, err)) != MLSTACK_OK) goto done;
    r = MLSTACK_ERR_NO_MEMORY;
    if (!mlstack__buf_put(out, "{\"model\":{\"type\":\"BPE\",\"vocab\":", 31) || !mlstack__buf_put(out, vocab, vl) ||
        !mlstack__buf_put(out, ",\"merges\":[", 11))
        goto oom;
    for (i = 0; i < ml;) {
        size_t e = i;
        while (e < ml && merges[e] != '\n') e++;
        if (e > i && merges[e - 1] == '\r') e--; /* tolerate CRLF files */
        if (e > i && !(i == 0 && e - i >= 8 && memcmp(merges, "#version", 8) == 0)) {
            if ((!first && !mlstack__buf_put(out, ",", 1)) || !mlstack__json_quote(out, merges + i, e - i)) goto oom;
            first = 0;
        }
        while (e < ml && merges[e] != '\n') e++;
        i = e + 1;
    }
    if (!mlstack__buf_put(out, "]},\"added_tokens\":[", 19)) goto oom;
    atd = mlstack__json_get(cd.root, "added_tokens_decoder");
    first = 1;
    for (c = atd ? atd->child : NULL; c; c = c->next) {
        const mlstack__json *content = mlstack__jstr(c, "content");
        static const char *const flags[5] = {"special", "lstrip", "rstrip", "single_word", "normalized"};
        int f;
        char num[32];
        if (!content) continue;
        if ((!first && !mlstack__buf_put(out, ",", 1)) || !mlstack__buf_put(out, "{\"id\":", 6) ||
            !mlstack__buf_put(out, c->key, c->key_len) || !mlstack__buf_put(out, ",\"content\":", 11) ||
            !mlstack__json_quote(out, content->str, content->len))
            goto oom;
        for (f = 0; f < 5; f++) {
            snprintf(num, sizeof num, ",\"%s\":%s", flags[f], mlstack__jbool(c, flags[f], f == 4 ? !mlstack__jbool(c, "special", 0) : 0) ? "true" : "false");
            if (!mlstack__buf_put(out, num, strlen(num))) goto oom;
        }
        if (!mlstack__buf_put(out, "}", 1)) goto oom;
        first = 0;
    }
    if (!mlstack__buf_put(out, "],", 2)) goto oom;
    if (qwen) {
        if (!mlstack__buf_put(out, "\"normalizer\":{\"type\":\"NFC\"},\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":", 112) ||
            !mlstack__json_quote(out, mlstack__qwen2_pattern, strlen(mlstack__qwen2_pattern)) ||
            !mlstack__buf_put(out, "},\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}]},", 105))
            goto oom;
    } else {
        const char *pre = mlstack__jbool(cd.root, "add_prefix_space", 0) ? "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":true}," : "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},";
        if (!mlstack__buf_put(out, pre, strlen(pre))) goto oom;
    }
    if (!mlstack__buf_put(out, "\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\"}}", 53)) goto oom;
    r = MLSTACK_OK;
    goto done;
oom:
    r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "tokenizer: out of memory");
done:
    mlstack__json_free(&cd);
    MLSTACK_FREE(vocab);
    MLSTACK_FREE(merges);
    MLSTACK_FREE(vpath);
    MLSTACK_FREE(mpath);
    return r;
}

MLSTACK_API mlstack_result mlstack_tokenizer_open(const char *dir, mlstack_tokenizer **out, mlstack_error *err) {
    char *tpath, *cpath, *json = NULL, *cfg = NULL;
    size_t jl = 0, cl = 0;
    mlstack_result r = MLSTACK_OK;
    mlstack__buf built = {0, 0, 0};
    if (!out) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "tokenizer: out is NULL");
    *out = NULL;
    if (!dir) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "tokenizer: dir is NULL");
    tpath = mlstack__path_join(dir, "tokenizer.json");
    cpath = mlstack__path_join(dir, "tokenizer_config.json");
    if (!tpath || !cpath) r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "tokenizer: out of memory");
    if (r == MLSTACK_OK && mlstack__file_exists(cpath)) r = mlstack__read_file(cpath, MLSTACK_MAX_JSON_BYTES, &cfg, &cl, err);
    if (r == MLSTACK_OK) {
        if (mlstack__file_exists(tpath)) r = mlstack__read_file(tpath, MLSTACK_MAX_JSON_BYTES, &json, &jl, err);
        else {
            char *vp = mlstack__path_join(dir, "vocab.json"), *mp = mlstack__path_join(dir, "merges.txt");
            if (vp && mp && mlstack__file_exists(vp) && mlstack__file_exists(mp)) r = mlstack__tok_from_vocab_merges(dir, cfg, cl, &built, err);
            else r = MLSTACK__FAIL(err, MLSTACK_ERR_NOT_FOUND, "%s: no tokenizer.json (nor vocab.json + merges.txt)", dir);
            MLSTACK_FREE(vp);
            MLSTACK_FREE(mp);
        }
    }
    if (r == MLSTACK_OK) r = json ? mlstack_tokenizer_load(json, jl, cfg, cl, out, err) : mlstack_tokenizer_load(built.p, built.n, cfg, cl, out, err);
    MLSTACK_FREE(json);
    MLSTACK_FREE(cfg);
    MLSTACK_FREE(built.p);
    MLSTACK_FREE(tpath);
    MLSTACK_FREE(cpath);
    return r;
}

MLSTACK_API mlstack_result mlstack_tokenizer_encode(mlstack_tokenizer *t, const char *text, size_t len, int flags, int32_t *ids,
                                                    size_t cap, size_t *n_ids) {
    mlstack__enc e;
    mlstack_result r;
    size_t n;
    if (n_ids) *n_ids = 0;
    if (!t) return MLSTACK_ERR_INVALID_ARG;
    if ((!text && len) || (!ids && cap) || !n_ids) return mlstack__tok_fail(t, MLSTACK_ERR_INVALID_ARG, "encode: NULL text, ids or n_ids");
    memset(&e, 0, sizeof e);
    e.t = t;
    r = mlstack__encode(&e, text ? text : "", len, flags);
    n = e.ids.n / sizeof(int32_t);
    if (r == MLSTACK_OK) {
        *n_ids = n;
        if (n > cap) r = mlstack__tok_fail(t, MLSTACK_ERR_LIMIT, "encode: %zu ids do not fit in a buffer of %zu", n, cap);
        else if (n) memcpy(ids, e.ids.p, n * sizeof(int32_t));
    } else if (r == MLSTACK_ERR_LIMIT)
        mlstack__tok_fail(t, r, "encode: the regex step limit was reached");
    else
        mlstack__tok_fail(t, r, "encode: out of memory");
    mlstack__enc_free(&e);
    return r;
}

MLSTACK_API mlstack_result mlstack_tokenizer_decode(mlstack_tokenizer *t, const int32_t *ids, size_t n, int flags, char *out, size_t cap,
                                                    size_t *n_out) {
    mlstack__buf b = {0, 0, 0};
    mlstack_result r;
    if (n_out) *n_out = 0;
    if (!t) return MLSTACK_ERR_INVALID_ARG;
    if ((!ids && n) || (!out && cap) || !n_out) return mlstack__tok_fail(t, MLSTACK_ERR_INVALID_ARG, "decode: NULL ids, out or n_out");
    r = mlstack__decode(t, ids, n, flags, &b);
    if (r == MLSTACK_OK) {
        *n_out = b.n;
        if (b.n + 1 > cap) r = mlstack__tok_fail(t, MLSTACK_ERR_LIMIT, "decode: %zu bytes (+1 for the NUL) do not fit in %zu", b.n, cap);
        else {
            if (b.n) memcpy(out, b.p, b.n);
            out[b.n] = 0;
        }
    } else
        mlstack__tok_fail(t, r, "decode: out of memory");
    MLSTACK_FREE(b.p);
    return r;
}

MLSTACK_API int32_t mlstack_tokenizer_vocab_size(const mlstack_tokenizer *t) { return t ? t->n_vocab : 0; }

MLSTACK_API int32_t mlstack_tokenizer_token_to_id(const mlstack_tokenizer *t, const char *text, size_t len) {
    int k;
    if (!t || (!text && len)) return -1;
    for (k = 0; k < t->n_added; k++)
        if (t->added[k].len == len && memcmp(t->added[k].s, text, len) == 0) return t->added[k].id;
    return mlstack__tok_vocab_find(t, text ? text : "", len);
}

MLSTACK_API const char *mlstack_tokenizer_id_to_token(const mlstack_tokenizer *t, int32_t id, size_t *len) {
    if (len) *len = 0;
    if (!t || id < 0 || id >= t->n_vocab || !t->tok_s[id]) return NULL;
    if (len) *len = t->tok_len[id];
    return t->tok_s[id];
}

MLSTACK_API int32_t mlstack_tokenizer_bos_id(const mlstack_tokenizer *t) { return t ? t->bos_id : -1; }
MLSTACK_API int32_t mlstack_tokenizer_eos_id(const mlstack_tokenizer *t) { return t ? t->eos_id : -1; }
MLSTACK_API int mlstack_tokenizer_is_special(const mlstack_tokenizer *t, int32_t id) {
    return t && id >= 0 && id < t->n_vocab && t->tok_special[id];
}
MLSTACK_API const char *mlstack_tokenizer_chat_template(const mlstack_tokenizer *t) { return t ? t->chat_template : NULL; }
MLSTACK_API const char *mlstack_tokenizer_error(const mlstack_tokenizer *t) { return t && t->err ? t->err : ""; }

/* ---- streaming decoder ---- */
struct mlstack_detok {
    const mlstack_tokenizer *t;
    int flags;
    int32_t *ids;      /* window: context ids, then not yet emitted ids */
    size_t n, cap, n_ctx;
    size_t ctx_len;    /* bytes of decode(ids[0..n_ctx]) */
    mlstack__buf text; /* last emitted text */
};

MLSTACK_API mlstack_result mlstack_detok_init(const mlstack_tokenizer *t, int flags, mlstack_detok **out) {
    mlstack_detok *d;
    if (!out) return MLSTACK_ERR_INVALID_ARG;
    *out = NULL;
    if (!t) return MLSTACK_ERR_INVALID_ARG;
    d = (mlstack_detok *)mlstack__calloc(1, sizeof *d);
    if (!d) return MLSTACK_ERR_NO_MEMORY;
    d->t = t;
    d->flags = flags;
    *out = d;
    return MLSTACK_OK;
}

static mlstack_result mlstack__detok_step(mlstack_detok *d, int flush, const char **text, size_t *len) {
    mlstack__buf all = {0, 0, 0};
    mlstack_result r = mlstack__decode(d->t, d->ids, d->n, d->flags, &all);
    *text = "";
    *len = 0;
    if (r != MLSTACK_OK) {
        MLSTACK_FREE(all.p);
        return r;
    }
    /* Emit once the new text is complete: it must not end in U+FFFD, which is what a UTF-8
       sequence cut between tokens decodes to (byte-level and byte-fallback alike). */
    if (all.n >= d->ctx_len && (all.n > d->ctx_len || flush) &&
        (flush || all.n < 3 || memcmp(all.p + all.n - 3, "\xEF\xBF\xBD", 3) != 0)) {
        mlstack__buf ctx = {0, 0, 0};
        d->text.n = 0;
        if (!mlstack__buf_put(&d->text, all.p + d->ctx_len, all.n - d->ctx_len) || !mlstack__buf_put(&d->text, "", 1)) r = MLSTACK_ERR_NO_MEMORY;
        /* the ids just emitted become the context for the next ones */
        memmove(d->ids, d->ids + d->n_ctx, (d->n - d->n_ctx) * sizeof *d->ids);
        d->n -= d->n_ctx;
        d->n_ctx = d->n;
        if (r == MLSTACK_OK) r = mlstack__decode(d->t, d->ids, d->n, d->flags, &ctx);
        d->ctx_len = ctx.n;
        MLSTACK_FREE(ctx.p);
        if (r == MLSTACK_OK) {
            *text = d->text.p;
            *len = d->text.n - 1;
        }
        if (flush == 1) {
            d->n = d->n_ctx = d->ctx_len = 0;
        }
    }
    MLSTACK_FREE(all.p);
    return r;
}

MLSTACK_API mlstack_result mlstack_detok_push(mlstack_detok *d, int32_t id, const char **text, size_t *len) {
    if (!d || !text || !len) return MLSTACK_ERR_INVALID_ARG;
    *text = "";
    *len = 0;
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 16;
        int32_t *p = (int32_t *)MLSTACK_REALLOC(d->ids, cap * sizeof *p);
        if (!p) return MLSTACK_ERR_NO_MEMORY;
        d->ids = p;
        d->cap = cap;
    }
    d->ids[d->n++] = id;
    /* a run of undecodable bytes is emitted (as U+FFFD) after 64 ids rather than held forever */
    return mlstack__detok_step(d, d->n - d->n_ctx >= 64 ? 2 : 0, text, len);
}

MLSTACK_API mlstack_result mlstack_detok_flush(mlstack_detok *d, const char **text, size_t *len) {
    if (!d || !text || !len) return MLSTACK_ERR_INVALID_ARG;
    return mlstack__detok_step(d, 1, text, len);
}

MLSTACK_API void mlstack_detok_free(mlstack_detok *d) {
    if (!d) return;
    MLSTACK_FREE(d->ids);
    MLSTACK_FREE(d->text.p);
    MLSTACK_FREE(d);
}

/* ==== 8. TEMPLATE ==== */  /* >>template */



/* ==== 9. KERNELS ==== */  /* >>kernels */

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
