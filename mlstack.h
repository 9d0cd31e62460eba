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
     17. PROFILER          regions, schedule, Chrome trace, summary; random-weight models >>profiler

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



/* ---- Engine ---- */

/* Engine descriptor. Zero means default:
     n_threads         0: number of online CPUs
     kv_mem            0: bytes for min(max_position_embeddings, 4096) tokens of KV
     kv_page_tokens    0: 16 tokens per KV page
     max_seqs          0: 16 concurrent sequences
     max_batch_tokens  0: 512 rows per internal forward chunk
     isa               NULL: the best kernels this CPU runs, capped by the environment variable
                       MLSTACK_ISA if set; "scalar", "avx2" or "avx512": at most that path
     profile           NULL: not profiling; else mlstack_engine_profile_start(engine, profile) at init */
typedef struct mlstack_engine_desc {
    int n_threads;
    uint64_t kv_mem;
    int kv_page_tokens;
    int max_seqs;
    int max_batch_tokens;
    const char *isa;
    const struct mlstack_profile_schedule *profile;
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

/* ---- Profiler (section 17) ---- */

/* When to record, as torch.profiler's schedule counts it; one step is one mlstack_engine_eval
   (which mlstack_generate calls once for the prompt and once per generated token). A step runs
   from the start of its eval to the start of the next, so sampling after an eval belongs to
   that eval's step. Zero means default:
     wait        0: steps ignored before anything is recorded
     warmup      0: steps then recorded and thrown away (first-touch page faults, cold caches)
     active      0: every later step until mlstack_engine_profile_stop; else that many, then stop
     max_events  0: 262144 events (about 20 MiB, allocated by profile_start); later events are
                 dropped and counted */
typedef struct mlstack_profile_schedule {
    int wait;
    int warmup;
    int active;
    int max_events;
} mlstack_profile_schedule;

/* One row of the summary: all recorded regions of one op. `bytes` and `flops` come from a cost
   model of what the op must move and compute (matmul: weight bytes + activations in and out,
   2 * B * n_in * n_out flops); `overhead` is the share of the op's thread time (threads x wall
   time) spent waking, waiting for and joining pool workers instead of in kernel work. */
typedef struct mlstack_profile_op {
    const char *name;       /* "matmul", "attention", ...; phases: "eval", "sample" */
    int is_phase;           /* 1 for eval/sample, which contain or sit between the ops */
    uint64_t calls;
    double total_ms;
    double share;           /* of the recorded eval time, 0..1 (phases: of eval + sample) */
    double gbytes_per_s, gflops_per_s;
    double overhead;        /* 0..1 */
    uint64_t bytes, flops;  /* totals */
} mlstack_profile_op;

/* (Re)starts profiling: drops any earlier recording, allocates the event buffer, and follows
   `schedule` (NULL: record every step from the next eval on).
   Returns MLSTACK_OK, MLSTACK_ERR_INVALID_ARG (negative field), MLSTACK_ERR_NO_MEMORY.
   Thread safety: the thread that drives the engine, between evals. */
MLSTACK_API mlstack_result mlstack_engine_profile_start(mlstack_engine *engine, const mlstack_profile_schedule *schedule);
/* Stops recording and keeps what was recorded for the functions below. No-op when not profiling.
   Thread safety: as profile_start. */
MLSTACK_API void mlstack_engine_profile_stop(mlstack_engine *engine);
/* Steps kept so far (active steps that ran); -1 if profiling was never started. */
MLSTACK_API int mlstack_engine_profile_steps(const mlstack_engine *engine);
/* Writes the recorded events as Chrome trace JSON (Perfetto, chrome://tracing): one "X" event
   per region with ts/dur in microseconds, tid = pool thread (0 is the engine's thread), op
   details in "args". Returns MLSTACK_OK, MLSTACK_ERR_STATE (never started), MLSTACK_ERR_IO.
   Thread safety: as profile_start; may be called while a schedule is still running. */
MLSTACK_API mlstack_result mlstack_engine_profile_write_trace(const mlstack_engine *engine, const char *path);
/* Fills out[0..cap) with the per-op summary, longest total first (phases last); returns the
   number of ops recorded (which may exceed cap). Thread safety: as profile_start. */
MLSTACK_API int mlstack_engine_profile_ops(const mlstack_engine *engine, mlstack_profile_op *out, int cap);
/* Writes the summary as a text table into buf (always NUL-terminated when cap > 0).
   Returns the length the whole text needs, without the NUL (like snprintf): call again with a
   larger buffer if it is >= cap. Thread safety: as profile_start. */
MLSTACK_API size_t mlstack_engine_profile_summary(const mlstack_engine *engine, char *buf, size_t cap);

/* Bytes of weights one decode token reads: every projection and the LM head as the kernels
   see them (after load-time quantization), one embedding row, the norms. The bandwidth roofline
   of generation is memory bandwidth / this. */
MLSTACK_API uint64_t mlstack_model_decode_bytes(const mlstack_model *model);

/* Opens a model of the shape a config.json describes with random weights, without any weight
   file: for benchmarks and tests on real shapes. Weights are drawn from a fast deterministic
   PRNG (approximately normal, std 0.02, biases 0, norm weights 1) into memory the model owns,
   stored as `dtype` (F32, F16 or BF16), then quantized like mlstack_model_open when `quant`
   is MLSTACK_DTYPE_Q8_0 or _Q4_0 (0: none).
   Parameters: config_path (a config.json, or a folder holding one), seed (same seed, same
   weights on any machine and thread count), out, err (optional detail).
   Returns MLSTACK_OK or a failure as mlstack_model_open. Thread safety: any thread. */
MLSTACK_API mlstack_result mlstack_model_open_random(const char *config_path, mlstack_dtype dtype, mlstack_dtype quant,
                                                     uint64_t seed, mlstack_model **out, mlstack_error *err);

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

/* Profiler hooks (section PROFILER). `pool->prof` is non-NULL only while a profile records,
   so when profiling is off every hook costs one predictable branch. */
struct mlstack__prof;
struct mlstack__pool;
static void mlstack__prof_pool_run(struct mlstack__pool *p, mlstack__task_fn fn, void *ctx, int n_tasks);
static void mlstack__prof_begin(struct mlstack__prof *pr, int op);
static void mlstack__prof_end(struct mlstack__prof *pr, int op, int layer, const void *arg, int B);
static void mlstack__prof_step_begin(struct mlstack__prof *pr);
static void mlstack__prof_free(struct mlstack_engine *e);
#if defined(__GNUC__)
#define MLSTACK__UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define MLSTACK__UNLIKELY(x) (x)
#endif
#define MLSTACK__PROF_BEGIN(pool, op) \
    do { if (MLSTACK__UNLIKELY((pool)->prof != NULL)) mlstack__prof_begin((pool)->prof, MLSTACK__OP_##op); } while (0)
#define MLSTACK__PROF_END(pool, op, layer, arg, B) \
    do { if (MLSTACK__UNLIKELY((pool)->prof != NULL)) mlstack__prof_end((pool)->prof, MLSTACK__OP_##op, layer, arg, B); } while (0)
enum { MLSTACK__OP_EVAL, MLSTACK__OP_SAMPLE, MLSTACK__OP_EMBED, MLSTACK__OP_RMSNORM, MLSTACK__OP_MATMUL,
       MLSTACK__OP_ROPE_KV, MLSTACK__OP_ATTENTION, MLSTACK__OP_ADD, MLSTACK__OP_SWIGLU, MLSTACK__OP_COUNT_ };

typedef struct mlstack__pool {
    int n_threads;
    struct mlstack__prof *prof; /* set only while a profile records (section PROFILER) */
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
    if (MLSTACK__UNLIKELY(p->prof != NULL)) { mlstack__prof_pool_run(p, fn, ctx, n_tasks); return; }
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
    if (MLSTACK__UNLIKELY(p->prof != NULL)) { mlstack__prof_pool_run(p, fn, ctx, n_tasks); return; }
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
    MLSTACK__PROF_BEGIN(pool, MATMUL);
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
    MLSTACK__PROF_END(pool, MATMUL, -1, w, B);
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

/* Random-weight models (mlstack_model_open_random): the shape from config.json, weights from a
   counter-based generator so the values depend only on (seed, tensor, element), never on the
   thread count. Each 64-bit draw gives four 16-bit uniforms whose sum (Irwin-Hall, n = 4) is
   close enough to normal for timing and smoke tests. */
typedef struct mlstack__rand_job {
    unsigned char *dst;
    mlstack_dtype dtype;
    size_t n;
    uint64_t key; /* seed mixed with the tensor's number */
} mlstack__rand_job;

#define MLSTACK__RAND_CHUNK ((size_t)1 << 16)

static uint64_t mlstack__mix64(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void mlstack__rand_task(void *ctx, int task, int n_tasks, int thread) {
    const mlstack__rand_job *j = (const mlstack__rand_job *)ctx;
    size_t i = (size_t)task * MLSTACK__RAND_CHUNK, end = i + MLSTACK__RAND_CHUNK;
    uint64_t state = mlstack__mix64(j->key ^ ((uint64_t)task * 0xD1B54A32D192ED03ull));
    const float scale = 0.02f / 37837.23f; /* 0.02 / std of a sum of four uniforms on [0, 65535] */
    (void)n_tasks;
    (void)thread;
    if (end > j->n) end = j->n;
    for (; i < end; i++) {
        uint64_t r = mlstack__mix64(state += 0x9E3779B97F4A7C15ull);
        float v = (float)((int64_t)((r & 0xFFFF) + ((r >> 16) & 0xFFFF) + ((r >> 32) & 0xFFFF) + (r >> 48)) - 131070) * scale;
        if (j->dtype == MLSTACK_DTYPE_F32) {
            memcpy(j->dst + i * 4, &v, 4);
        } else {
            uint16_t h;
            if (j->dtype == MLSTACK_DTYPE_F16) {
                h = mlstack__f32_to_f16(v);
            } else {
                uint32_t x;
                memcpy(&x, &v, 4);
                h = (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16); /* round to nearest even */
            }
            memcpy(j->dst + i * 2, &h, 2);
        }
    }
}

/* n random elements of `dtype` in memory the model owns; NULL when out of memory. */
static void *mlstack__rand_tensor(mlstack_model *m, mlstack__pool *pool, mlstack_dtype dtype, size_t n, uint64_t seed,
                                  uint64_t tensor) {
    mlstack__rand_job j;
    j.dst = (unsigned char *)mlstack__model_own(m, n * (size_t)mlstack__dtype_sizes[dtype]);
    if (!j.dst) return NULL;
    j.dtype = dtype;
    j.n = n;
    j.key = mlstack__mix64(seed ^ mlstack__mix64(tensor + 1));
    mlstack__pool_run(pool, mlstack__rand_task, &j, (int)((n + MLSTACK__RAND_CHUNK - 1) / MLSTACK__RAND_CHUNK));
    m->n_params += n;
    m->weight_bytes += n * (uint64_t)mlstack__dtype_sizes[dtype];
    return j.dst;
}

static int mlstack__rand_linear(mlstack_model *m, mlstack__pool *pool, mlstack_dtype dtype, int n_out, int n_in,
                                const float *bias, uint64_t seed, uint64_t tensor, mlstack__weight *w) {
    w->data = mlstack__rand_tensor(m, pool, dtype, (size_t)n_out * (size_t)n_in, seed, tensor);
    w->wtype = (int)dtype;
    w->n_out = n_out;
    w->n_in = n_in;
    w->row_bytes = mlstack__row_bytes(w->wtype, n_in);
    w->bias = bias;
    return w->data != NULL;
}

MLSTACK_API mlstack_result mlstack_model_open_random(const char *config_path, mlstack_dtype dtype, mlstack_dtype quant,
                                                     uint64_t seed, mlstack_model **out, mlstack_error *err) {
    mlstack_model *m;
    mlstack__json_doc doc;
    mlstack__pool pool;
    mlstack_result r;
    char *path, *text = NULL;
    size_t len;
    if (err) {
        err->code = MLSTACK_OK;
        err->message[0] = 0;
    }
    if (!out) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "mlstack_model_open_random: out is NULL");
    *out = NULL;
    if (!config_path) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "mlstack_model_open_random: config_path is NULL");
    if (dtype != MLSTACK_DTYPE_F32 && dtype != MLSTACK_DTYPE_F16 && dtype != MLSTACK_DTYPE_BF16)
        return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "mlstack_model_open_random: dtype %s (expected F32, F16 or BF16)",
                             mlstack_dtype_name(dtype));
    if (quant != 0 && quant != MLSTACK_DTYPE_Q8_0 && quant != MLSTACK_DTYPE_Q4_0)
        return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "quant = %s is not a load-time format (use Q8_0 or Q4_0)",
                             mlstack_dtype_name(quant));
    path = mlstack__file_exists(config_path) ? mlstack__strndup(config_path, strlen(config_path))
                                             : mlstack__path_join(config_path, "config.json");
    m = (mlstack_model *)mlstack__calloc(1, sizeof *m);
    if (!path || !m) {
        MLSTACK_FREE(path);
        MLSTACK_FREE(m);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    }
    m->path = path;
    r = mlstack__read_file(path, MLSTACK_MAX_JSON_BYTES, &text, &len, err);
    if (r == MLSTACK_OK) {
        r = mlstack__json_parse(&doc, text, len, path, err);
        if (r == MLSTACK_OK) {
            r = mlstack__config_parse(&m->cfg, doc.root, NULL, path, err);
            mlstack__json_free(&doc);
        }
        MLSTACK_FREE(text);
    }
    if (r == MLSTACK_OK && mlstack__pool_init(&pool, mlstack__cpu_count()) != 0) {
        mlstack__pool_free(&pool);
        r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "could not start threads to fill the weights");
    } else if (r == MLSTACK_OK) {
        const mlstack__config *c = &m->cfg;
        int l, qd = c->n_heads * c->head_dim, kvd = c->n_kv_heads * c->head_dim, ok;
        size_t n_ones = (size_t)(c->n_embd > c->head_dim ? c->n_embd : c->head_dim), n_zeros = (size_t)c->n_ff, i;
        float *ones, *zeros;
        if ((size_t)qd > n_zeros) n_zeros = (size_t)qd;
        if ((size_t)c->n_embd > n_zeros) n_zeros = (size_t)c->n_embd;
        ones = (float *)mlstack__model_own(m, n_ones * sizeof(float));
        zeros = (float *)mlstack__model_own(m, n_zeros * sizeof(float));
        m->layers = (mlstack__layer *)mlstack__calloc((size_t)c->n_layers, sizeof *m->layers);
        ok = ones && zeros && m->layers;
        if (ok) {
            for (i = 0; i < n_ones; i++) ones[i] = 1.0f;
            memset(zeros, 0, n_zeros * sizeof(float));
            m->final_norm = ones;
            m->embed_dtype = dtype;
            m->embed = mlstack__rand_tensor(m, &pool, dtype, (size_t)c->n_vocab * (size_t)c->n_embd, seed, 0);
            ok = m->embed != NULL;
        }
        if (ok && c->tied) {
            m->lm_head.data = m->embed;
            m->lm_head.wtype = (int)dtype;
            m->lm_head.n_out = c->n_vocab;
            m->lm_head.n_in = c->n_embd;
            m->lm_head.row_bytes = mlstack__row_bytes((int)dtype, c->n_embd);
        } else if (ok) {
            ok = mlstack__rand_linear(m, &pool, dtype, c->n_vocab, c->n_embd, NULL, seed, 1, &m->lm_head);
        }
        for (l = 0; ok && l < c->n_layers; l++) {
            mlstack__layer *L = &m->layers[l];
            uint64_t t = 2 + (uint64_t)l * 8;
            L->attn_norm = L->ffn_norm = ones;
            if (c->qk_norm) L->q_norm = L->k_norm = ones;
            ok = mlstack__rand_linear(m, &pool, dtype, qd, c->n_embd, c->attn_bias ? zeros : NULL, seed, t, &L->wq) &&
                 mlstack__rand_linear(m, &pool, dtype, kvd, c->n_embd, c->attn_bias ? zeros : NULL, seed, t + 1, &L->wk) &&
                 mlstack__rand_linear(m, &pool, dtype, kvd, c->n_embd, c->attn_bias ? zeros : NULL, seed, t + 2, &L->wv) &&
                 mlstack__rand_linear(m, &pool, dtype, c->n_embd, qd, c->o_bias ? zeros : NULL, seed, t + 3, &L->wo) &&
                 mlstack__rand_linear(m, &pool, dtype, c->n_ff, c->n_embd, c->mlp_bias ? zeros : NULL, seed, t + 4, &L->w_gate) &&
                 mlstack__rand_linear(m, &pool, dtype, c->n_ff, c->n_embd, c->mlp_bias ? zeros : NULL, seed, t + 5, &L->w_up) &&
                 mlstack__rand_linear(m, &pool, dtype, c->n_embd, c->n_ff, c->mlp_bias ? zeros : NULL, seed, t + 6, &L->w_down);
        }
        mlstack__pool_free(&pool);
        if (!ok) r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "%s: no memory for %s random weights", path, mlstack_dtype_name(dtype));
    }
    if (r == MLSTACK_OK && quant != 0) r = mlstack__model_quantize(m, quant, err);
    if (r == MLSTACK_OK) {
        m->inv_freq = (float *)mlstack__calloc((size_t)m->cfg.head_dim / 2, sizeof(float));
        if (!m->inv_freq) r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
        else mlstack__rope_freqs(&m->cfg, m->inv_freq);
    }
    if (r != MLSTACK_OK) {
        mlstack_model_close(m);
        return r;
    }
    *out = m;
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
    struct mlstack__prof *prof; /* NULL until mlstack_engine_profile_start */
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
    MLSTACK__PROF_BEGIN(&e->pool, EMBED);
    for (b = 0; b < B; b++)
        mlstack__to_f32(m->embed_dtype, (const unsigned char *)m->embed + (size_t)rows[b].token * (size_t)D * esize,
                        s->x + (size_t)b * D, (size_t)D);
    MLSTACK__PROF_END(&e->pool, EMBED, -1, rows, B);
    for (l = 0; l < c->n_layers; l++) {
        const mlstack__layer *L = &m->layers[l];
        mlstack__attn_job aj;
        MLSTACK__PROF_BEGIN(&e->pool, RMSNORM);
        for (b = 0; b < B; b++) mlstack__rmsnorm(s->xn + (size_t)b * D, s->x + (size_t)b * D, L->attn_norm, D, c->eps);
        MLSTACK__PROF_END(&e->pool, RMSNORM, l, rows, B);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->wq, s->xn, s->q, B);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->wk, s->xn, s->k, B);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->wv, s->xn, s->v, B);
        MLSTACK__PROF_BEGIN(&e->pool, ROPE_KV);
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
        MLSTACK__PROF_END(&e->pool, ROPE_KV, l, rows, B);
        aj.e = e;
        aj.rows = rows;
        aj.layer = l;
        MLSTACK__PROF_BEGIN(&e->pool, ATTENTION);
        mlstack__pool_run(&e->pool, mlstack__attn_task, &aj, B * H);
        MLSTACK__PROF_END(&e->pool, ATTENTION, l, rows, B);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->wo, s->att, s->xn, B);
        MLSTACK__PROF_BEGIN(&e->pool, ADD);
        for (i = 0; i < B * D; i++) s->x[i] += s->xn[i];
        MLSTACK__PROF_END(&e->pool, ADD, l, rows, B);
        MLSTACK__PROF_BEGIN(&e->pool, RMSNORM);
        for (b = 0; b < B; b++) mlstack__rmsnorm(s->xn + (size_t)b * D, s->x + (size_t)b * D, L->ffn_norm, D, c->eps);
        MLSTACK__PROF_END(&e->pool, RMSNORM, l, rows, B);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->w_gate, s->xn, s->gate, B);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->w_up, s->xn, s->up, B);
        MLSTACK__PROF_BEGIN(&e->pool, SWIGLU);
        for (i = 0; i < B * F; i++) s->gate[i] = mlstack__silu(s->gate[i]) * s->up[i];
        MLSTACK__PROF_END(&e->pool, SWIGLU, l, rows, B);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->w_down, s->gate, s->xn, B);
        MLSTACK__PROF_BEGIN(&e->pool, ADD);
        for (i = 0; i < B * D; i++) s->x[i] += s->xn[i];
        MLSTACK__PROF_END(&e->pool, ADD, l, rows, B);
    }
    /* final norm and LM head, only for rows that keep logits; one row at a time keeps the
       scratch small (the LM head reads the same weights for each) */
    {
        int n = 0;
        MLSTACK__PROF_BEGIN(&e->pool, RMSNORM);
        for (b = 0; b < B; b++)
            if (slot[b] >= 0) mlstack__rmsnorm(s->xn + (size_t)(n++) * D, s->x + (size_t)b * D, m->final_norm, D, c->eps);
        MLSTACK__PROF_END(&e->pool, RMSNORM, -1, NULL, n);
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
    mlstack__prof_free(e);
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
    if (d.profile && (r = mlstack_engine_profile_start(e, d.profile)) != MLSTACK_OK) {
        mlstack_engine_free(e);
        return MLSTACK__FAIL(err, r, "could not start the profiler");
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
    if (MLSTACK__UNLIKELY(e->prof != NULL)) mlstack__prof_step_begin(e->prof);
    for (off = 0; off < n_rows; off += e->max_batch) {
        int B = n_rows - off < e->max_batch ? n_rows - off : e->max_batch;
        mlstack__forward_chunk(e, rows + off, B, e->logits, e->logit_slot + off);
    }
    MLSTACK__PROF_END(&e->pool, EVAL, -1, rows, n_rows);
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
        MLSTACK__PROF_BEGIN(&e->pool, SAMPLE);
        tok = mlstack_sampler_sample(smp, mlstack_engine_logits(e, g->n_generated ? 0 : g->n_prompt - 1));
        MLSTACK__PROF_END(&e->pool, SAMPLE, -1, NULL, 1);
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


/* ==== 17. PROFILER ==== */  /* >>profiler */
/* Named regions around ops and engine phases, recorded into one event buffer allocated by
   mlstack_engine_profile_start; nothing is allocated while recording. Only the engine's thread
   writes events. Pool workers write into their own cache-line slot (first task start, last
   task end, time inside tasks) while a pool run is in flight; after the join the engine's
   thread turns the slots into one "work" event per thread, so workers never contend.
   Event kinds:
     op    a region on the engine's thread (eval, sample, matmul, ...), with its cost model
     pool  one pool run on the engine's thread, fork to join; carries the thread time lost:
           threads x (join - fork) - time inside tasks (wake-up, imbalance, join wait)
     work  one thread's share of a pool run, named after the op that ran it
   Costs (bytes moved, flops) are a model of what each op must touch, not counters: weights
   at their stored or quantized size, activations and KV as f32. Attention counts K and V
   reads per query head (GQA heads sharing a KV head count it once each). */

#define MLSTACK__PROF_DEFAULT_EVENTS 262144
#define MLSTACK__PROF_MAX_DEPTH 8

enum { MLSTACK__PEV_OP = 0, MLSTACK__PEV_POOL = 1, MLSTACK__PEV_WORK = 2 };

static const char *const mlstack__op_names[MLSTACK__OP_COUNT_] = {"eval", "sample",    "embed", "rmsnorm", "matmul",
                                                                  "rope_kv", "attention", "add", "swiglu"};

typedef struct mlstack__prof_ev {
    uint64_t t0, t1;       /* ns since profile_start */
    uint64_t bytes, flops; /* op: cost model; pool: thread ns lost (bytes); work: ns inside tasks (bytes) */
    const void *w;         /* matmul: the weight, named when exported */
    int32_t step, layer, B, n_tasks;
    int16_t kind, op, tid, pad_;
} mlstack__prof_ev;

typedef struct mlstack__prof_slot {
    uint64_t first, last, busy;
    int tasks;
    char pad_[64 - 3 * sizeof(uint64_t) - sizeof(int)];
} mlstack__prof_slot;

struct mlstack__prof {
    mlstack_engine *e;
    mlstack_profile_schedule sched;
    int n_threads;
    int step;  /* steps begun since start */
    int kept;  /* active steps begun */
    int warm;  /* the current step is a warmup step: its events go when the next one begins */
    int done;  /* schedule finished or stopped */
    mlstack__prof_ev *ev;
    size_t n_ev, cap_ev, mark;
    uint64_t dropped, origin;
    uint64_t t_begin[MLSTACK__PROF_MAX_DEPTH];
    int op_begin[MLSTACK__PROF_MAX_DEPTH], depth;
    mlstack__prof_slot *slots;
};

static uint64_t mlstack__prof_ns(void) {
#if defined(CLOCK_MONOTONIC)
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#else
    return (uint64_t)(mlstack__now() * 1e9);
#endif
}

static mlstack__prof_ev *mlstack__prof_push(struct mlstack__prof *pr, int kind, int op, int tid, uint64_t t0, uint64_t t1) {
    mlstack__prof_ev *v;
    if (pr->n_ev == pr->cap_ev) {
        pr->dropped++;
        return NULL;
    }
    v = &pr->ev[pr->n_ev++];
    memset(v, 0, sizeof *v);
    v->t0 = t0 - pr->origin;
    v->t1 = t1 - pr->origin;
    v->kind = (int16_t)kind;
    v->op = (int16_t)op;
    v->tid = (int16_t)tid;
    v->step = pr->step - 1;
    v->layer = -1;
    return v;
}

static void mlstack__prof_begin(struct mlstack__prof *pr, int op) {
    if (pr->depth < MLSTACK__PROF_MAX_DEPTH) {
        pr->op_begin[pr->depth] = op;
        pr->t_begin[pr->depth] = mlstack__prof_ns();
    }
    pr->depth++;
}

/* What an op must move and compute (see the section comment). arg: the weight for matmul,
   the batch rows for attention; B: rows in the batch. */
static void mlstack__prof_cost(const struct mlstack__prof *pr, int op, const void *arg, int B, uint64_t *bytes,
                               uint64_t *flops) {
    const mlstack_model *m = pr->e->model;
    const mlstack__config *c = &m->cfg;
    uint64_t b = (uint64_t)(B > 0 ? B : 0), D = (uint64_t)c->n_embd, F = (uint64_t)c->n_ff, Dh = (uint64_t)c->head_dim;
    uint64_t qd = (uint64_t)c->n_heads * Dh, kvd = (uint64_t)c->n_kv_heads * Dh;
    *bytes = *flops = 0;
    switch (op) {
    case MLSTACK__OP_SAMPLE: *bytes = 4 * (uint64_t)c->n_vocab, *flops = (uint64_t)c->n_vocab; break;
    case MLSTACK__OP_EMBED: *bytes = b * D * ((uint64_t)mlstack__dtype_sizes[m->embed_dtype] + 4); break;
    case MLSTACK__OP_RMSNORM: *bytes = 4 * (2 * b * D + D), *flops = 4 * b * D; break;
    case MLSTACK__OP_ADD: *bytes = 12 * b * D, *flops = b * D; break;
    case MLSTACK__OP_SWIGLU: *bytes = 12 * b * F, *flops = 5 * b * F; break;
    case MLSTACK__OP_ROPE_KV: /* q, k read and written, v read, k and v written to the cache */
        *bytes = 4 * b * (2 * qd + 5 * kvd), *flops = 3 * b * (qd + kvd) + (c->qk_norm ? 4 * b * (qd + kvd) : 0);
        break;
    case MLSTACK__OP_MATMUL: {
        const mlstack__weight *w = (const mlstack__weight *)arg;
        *bytes = (uint64_t)w->n_out * w->row_bytes + 4 * b * ((uint64_t)w->n_in + (uint64_t)w->n_out);
        *flops = 2 * b * (uint64_t)w->n_in * (uint64_t)w->n_out;
        break;
    }
    case MLSTACK__OP_ATTENTION: {
        const mlstack_batch_row *rows = (const mlstack_batch_row *)arg;
        uint64_t n = 0;
        int i;
        for (i = 0; rows && i < B; i++) {
            int32_t t0 = c->sliding_window && rows[i].pos >= c->sliding_window ? rows[i].pos - c->sliding_window + 1 : 0;
            n += (uint64_t)(rows[i].pos - t0 + 1);
        }
        *bytes = (uint64_t)c->n_heads * (8 * n * Dh) + 8 * b * qd;
        *flops = (uint64_t)c->n_heads * (4 * n * Dh + 5 * n);
        break;
    }
    default: break;
    }
}

static void mlstack__prof_end(struct mlstack__prof *pr, int op, int layer, const void *arg, int B) {
    uint64_t t1 = mlstack__prof_ns();
    mlstack__prof_ev *v;
    if (pr->depth <= 0) return;
    if (--pr->depth >= MLSTACK__PROF_MAX_DEPTH || pr->op_begin[pr->depth] != op) return;
    v = mlstack__prof_push(pr, MLSTACK__PEV_OP, op, 0, pr->t_begin[pr->depth], t1);
    if (!v) return;
    v->layer = layer;
    v->B = B;
    if (op == MLSTACK__OP_MATMUL) v->w = arg;
    mlstack__prof_cost(pr, op, arg, B, &v->bytes, &v->flops);
}

typedef struct mlstack__prof_run {
    mlstack__task_fn fn;
    void *ctx;
    mlstack__prof_slot *slots;
} mlstack__prof_run;

static void mlstack__prof_task(void *ctx, int task, int n_tasks, int thread) {
    const mlstack__prof_run *r = (const mlstack__prof_run *)ctx;
    mlstack__prof_slot *sl = &r->slots[thread];
    /* one clock read per task: a thread's tasks run back to back, so its busy time is
       first start to last end (timing each task's start too would double the probe cost
       and show up as overhead on short tasks) */
    if (!sl->tasks) sl->first = mlstack__prof_ns();
    r->fn(r->ctx, task, n_tasks, thread);
    sl->last = mlstack__prof_ns();
    sl->busy = sl->last - sl->first;
    sl->tasks++;
}

static void mlstack__prof_pool_run(struct mlstack__pool *p, mlstack__task_fn fn, void *ctx, int n_tasks) {
    struct mlstack__prof *pr = p->prof;
    mlstack__prof_run run;
    mlstack__prof_ev *v;
    uint64_t t0, t1, busy = 0, span;
    int i, op = pr->depth > 0 && pr->depth <= MLSTACK__PROF_MAX_DEPTH ? pr->op_begin[pr->depth - 1] : MLSTACK__OP_EVAL;
    run.fn = fn;
    run.ctx = ctx;
    run.slots = pr->slots;
    for (i = 0; i < p->n_threads; i++) pr->slots[i].tasks = 0, pr->slots[i].busy = 0;
    p->prof = NULL; /* the run below goes the plain way, through the timing trampoline */
    t0 = mlstack__prof_ns();
    mlstack__pool_run(p, mlstack__prof_task, &run, n_tasks);
    t1 = mlstack__prof_ns();
    p->prof = pr;
    for (i = 0; i < p->n_threads; i++) {
        const mlstack__prof_slot *sl = &pr->slots[i];
        if (!sl->tasks) continue;
        busy += sl->busy;
        if ((v = mlstack__prof_push(pr, MLSTACK__PEV_WORK, op, i, sl->first, sl->last)) != NULL) {
            v->bytes = sl->busy;
            v->n_tasks = sl->tasks;
        }
    }
    span = (t1 - t0) * (uint64_t)p->n_threads;
    if ((v = mlstack__prof_push(pr, MLSTACK__PEV_POOL, op, 0, t0, t1)) != NULL) {
        v->bytes = span > busy ? span - busy : 0;
        v->n_tasks = n_tasks;
    }
}

static void mlstack__prof_step_begin(struct mlstack__prof *pr) {
    const mlstack_profile_schedule *s = &pr->sched;
    int step;
    if (pr->warm) pr->n_ev = pr->mark; /* the warmup step that just ended: thrown away */
    pr->warm = 0;
    pr->depth = 0;
    pr->e->pool.prof = NULL;
    step = pr->step++;
    if (pr->done || step < s->wait) return;
    if (step < s->wait + s->warmup) {
        pr->warm = 1;
    } else if (s->active > 0 && step >= s->wait + s->warmup + s->active) {
        pr->done = 1;
        return;
    } else {
        pr->kept++;
    }
    pr->mark = pr->n_ev;
    pr->e->pool.prof = pr;
    mlstack__prof_begin(pr, MLSTACK__OP_EVAL);
}

static void mlstack__prof_free(struct mlstack_engine *e) {
    if (!e->prof) return;
    e->pool.prof = NULL;
    MLSTACK_FREE(e->prof->ev);
    mlstack__aligned_free(e->prof->slots);
    MLSTACK_FREE(e->prof);
    e->prof = NULL;
}

MLSTACK_API mlstack_result mlstack_engine_profile_start(mlstack_engine *e, const mlstack_profile_schedule *schedule) {
    struct mlstack__prof *pr;
    mlstack_profile_schedule s;
    if (!e) return MLSTACK_ERR_INVALID_ARG;
    memset(&s, 0, sizeof s);
    if (schedule) s = *schedule;
    if (s.wait < 0 || s.warmup < 0 || s.active < 0 || s.max_events < 0)
        return mlstack__engine_fail(e, MLSTACK_ERR_INVALID_ARG, "profile_start: negative field in the schedule");
    if (s.max_events == 0) s.max_events = MLSTACK__PROF_DEFAULT_EVENTS;
    mlstack__prof_free(e);
    pr = (struct mlstack__prof *)mlstack__calloc(1, sizeof *pr);
    if (!pr) return mlstack__engine_fail(e, MLSTACK_ERR_NO_MEMORY, "profile_start: out of memory");
    pr->ev = (mlstack__prof_ev *)mlstack__calloc((size_t)s.max_events, sizeof *pr->ev);
    pr->slots = (mlstack__prof_slot *)mlstack__aligned_alloc(sizeof(mlstack__prof_slot) * (size_t)e->pool.n_threads);
    if (!pr->ev || !pr->slots) {
        MLSTACK_FREE(pr->ev);
        mlstack__aligned_free(pr->slots);
        MLSTACK_FREE(pr);
        return mlstack__engine_fail(e, MLSTACK_ERR_NO_MEMORY, "profile_start: no memory for %d events", s.max_events);
    }
    memset(pr->slots, 0, sizeof(mlstack__prof_slot) * (size_t)e->pool.n_threads);
    pr->e = e;
    pr->sched = s;
    pr->cap_ev = (size_t)s.max_events;
    pr->n_threads = e->pool.n_threads;
    pr->origin = mlstack__prof_ns();
    e->prof = pr;
    return MLSTACK_OK;
}

MLSTACK_API void mlstack_engine_profile_stop(mlstack_engine *e) {
    if (!e || !e->prof) return;
    e->prof->done = 1;
    e->pool.prof = NULL;
}

MLSTACK_API int mlstack_engine_profile_steps(const mlstack_engine *e) {
    return e && e->prof ? e->prof->kept : -1;
}

/* Kept: recorded in an active step (a warmup step whose successor never began is skipped). */
static int mlstack__prof_kept(const struct mlstack__prof *pr, const mlstack__prof_ev *v) {
    return v->step >= pr->sched.wait + pr->sched.warmup;
}

/* The name of a matmul's weight and its layer, found by address among the model's weights. */
static const char *mlstack__prof_weight_name(const mlstack_model *m, const void *w, int *layer) {
    static const char *const names[7] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"};
    int l, i;
    *layer = -1;
    if (w == (const void *)&m->lm_head) return "lm_head";
    for (l = 0; l < m->cfg.n_layers; l++) {
        const mlstack__layer *L = &m->layers[l];
        const mlstack__weight *ws[7];
        ws[0] = &L->wq, ws[1] = &L->wk, ws[2] = &L->wv, ws[3] = &L->wo;
        ws[4] = &L->w_gate, ws[5] = &L->w_up, ws[6] = &L->w_down;
        for (i = 0; i < 7; i++) {
            if (w == (const void *)ws[i]) {
                *layer = l;
                return names[i];
            }
        }
    }
    return "weight";
}

typedef struct mlstack__prof_acc {
    uint64_t calls, ns, bytes, flops, lost;
} mlstack__prof_acc;

/* Sums kept events per op; also the totals the summary's last lines need. */
static void mlstack__prof_accumulate(const struct mlstack__prof *pr, mlstack__prof_acc *acc, uint64_t *pool_ns,
                                     uint64_t *lost_ns) {
    size_t i;
    memset(acc, 0, sizeof(mlstack__prof_acc) * MLSTACK__OP_COUNT_);
    *pool_ns = *lost_ns = 0;
    for (i = 0; i < pr->n_ev; i++) {
        const mlstack__prof_ev *v = &pr->ev[i];
        if (!mlstack__prof_kept(pr, v)) continue;
        if (v->kind == MLSTACK__PEV_OP) {
            acc[v->op].calls++;
            acc[v->op].ns += v->t1 - v->t0;
            acc[v->op].bytes += v->bytes;
            acc[v->op].flops += v->flops;
            if (v->op != MLSTACK__OP_SAMPLE) { /* eval: the sums of the ops it holds */
                acc[MLSTACK__OP_EVAL].bytes += v->bytes;
                acc[MLSTACK__OP_EVAL].flops += v->flops;
            }
        } else if (v->kind == MLSTACK__PEV_POOL) {
            acc[v->op].lost += v->bytes;
            if (v->op != MLSTACK__OP_EVAL) acc[MLSTACK__OP_EVAL].lost += v->bytes;
            *pool_ns += v->t1 - v->t0;
            *lost_ns += v->bytes;
        }
    }
}

static void mlstack__prof_fill_op(const struct mlstack__prof *pr, const mlstack__prof_acc *a, int op, uint64_t eval_ns,
                                  mlstack_profile_op *o) {
    memset(o, 0, sizeof *o);
    o->name = mlstack__op_names[op];
    o->is_phase = op == MLSTACK__OP_EVAL || op == MLSTACK__OP_SAMPLE;
    o->calls = a->calls;
    o->total_ms = (double)a->ns * 1e-6;
    o->share = eval_ns ? (double)a->ns / (double)eval_ns : 0;
    o->gbytes_per_s = a->ns ? (double)a->bytes / (double)a->ns : 0; /* bytes per ns = GB/s */
    o->gflops_per_s = a->ns ? (double)a->flops / (double)a->ns : 0;
    o->overhead = a->ns ? (double)a->lost / ((double)a->ns * (double)pr->n_threads) : 0;
    o->bytes = a->bytes;
    o->flops = a->flops;
}

MLSTACK_API int mlstack_engine_profile_ops(const mlstack_engine *e, mlstack_profile_op *out, int cap) {
    mlstack__prof_acc acc[MLSTACK__OP_COUNT_];
    int order[MLSTACK__OP_COUNT_], n = 0, i, j;
    uint64_t pool_ns, lost_ns;
    if (!e || !e->prof) return 0;
    mlstack__prof_accumulate(e->prof, acc, &pool_ns, &lost_ns);
    for (i = 0; i < MLSTACK__OP_COUNT_; i++)
        if (acc[i].calls && i != MLSTACK__OP_EVAL && i != MLSTACK__OP_SAMPLE) order[n++] = i;
    for (i = 1; i < n; i++) /* longest first; insertion sort of at most a dozen entries */
        for (j = i; j > 0 && acc[order[j]].ns > acc[order[j - 1]].ns; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    if (acc[MLSTACK__OP_EVAL].calls) order[n++] = MLSTACK__OP_EVAL;
    if (acc[MLSTACK__OP_SAMPLE].calls) order[n++] = MLSTACK__OP_SAMPLE;
    for (i = 0; i < n && i < cap && out; i++) mlstack__prof_fill_op(e->prof, &acc[order[i]], order[i], acc[MLSTACK__OP_EVAL].ns, &out[i]);
    return n;
}

/* Appends to a bounded buffer, counting what the whole text needs. */
typedef struct mlstack__sbuf {
    char *buf;
    size_t cap, len;
} mlstack__sbuf;

static MLSTACK__PRINTF(2, 3) void mlstack__sbuf_add(mlstack__sbuf *b, const char *fmt, ...) {
    va_list ap;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(b->len < b->cap ? b->buf + b->len : NULL, b->len < b->cap ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n > 0) b->len += (size_t)n;
}

MLSTACK_API size_t mlstack_engine_profile_summary(const mlstack_engine *e, char *buf, size_t cap) {
    mlstack__sbuf b;
    mlstack_profile_op ops[MLSTACK__OP_COUNT_];
    mlstack__prof_acc acc[MLSTACK__OP_COUNT_];
    const struct mlstack__prof *pr;
    uint64_t pool_ns, lost_ns, eval_ns, ops_ns = 0;
    int n, i;
    b.buf = buf;
    b.cap = buf ? cap : 0;
    b.len = 0;
    if (b.cap) buf[0] = 0;
    if (!e || !e->prof) {
        mlstack__sbuf_add(&b, "profiler: not started\n");
        return b.len;
    }
    pr = e->prof;
    n = mlstack_engine_profile_ops(e, ops, MLSTACK__OP_COUNT_);
    mlstack__prof_accumulate(pr, acc, &pool_ns, &lost_ns);
    eval_ns = acc[MLSTACK__OP_EVAL].ns;
    mlstack__sbuf_add(&b, "profile: %d steps, %d threads, kernels %s, %.3f ms in eval (%.3f ms per step), %llu events%s%llu dropped\n",
                      pr->kept, pr->n_threads, e->k->name, (double)eval_ns * 1e-6,
                      pr->kept ? (double)eval_ns * 1e-6 / pr->kept : 0.0, (unsigned long long)pr->n_ev,
                      pr->dropped ? ", WARNING: " : ", ", (unsigned long long)pr->dropped);
    mlstack__sbuf_add(&b, "%-12s %8s %10s %7s %9s %8s %8s %9s\n", "op", "calls", "total ms", "share", "us/call",
                      "GB/s", "GFLOP/s", "overhead");
    for (i = 0; i < n; i++) {
        const mlstack_profile_op *o = &ops[i];
        if (o->is_phase && o->name == mlstack__op_names[MLSTACK__OP_EVAL]) {
            mlstack__sbuf_add(&b, "%-12s %8s %10.3f %6.1f%%\n", "(untracked)", "",
                              (double)(eval_ns > ops_ns ? eval_ns - ops_ns : 0) * 1e-6,
                              eval_ns ? 100.0 * (double)(eval_ns > ops_ns ? eval_ns - ops_ns : 0) / (double)eval_ns : 0.0);
        }
        if (!o->is_phase) ops_ns += (uint64_t)(o->total_ms * 1e6 + 0.5);
        mlstack__sbuf_add(&b, "%-12s %8llu %10.3f %6.1f%% %9.2f %8.2f %8.2f %8.1f%%\n", o->name,
                          (unsigned long long)o->calls, o->total_ms, 100.0 * o->share,
                          o->calls ? o->total_ms * 1e3 / (double)o->calls : 0.0, o->gbytes_per_s, o->gflops_per_s,
                          100.0 * o->overhead);
        if (!strcmp(o->name, "matmul")) { /* per weight: where the bytes go */
            static const char *const names[8] = {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj", "lm_head"};
            int k;
            for (k = 0; k < 8; k++) {
                uint64_t calls = 0, ns = 0, bytes = 0, flops = 0;
                size_t j;
                for (j = 0; j < pr->n_ev; j++) {
                    const mlstack__prof_ev *v = &pr->ev[j];
                    int layer;
                    if (v->kind != MLSTACK__PEV_OP || v->op != MLSTACK__OP_MATMUL || !mlstack__prof_kept(pr, v)) continue;
                    if (strcmp(mlstack__prof_weight_name(e->model, v->w, &layer), names[k]) != 0) continue;
                    calls++, ns += v->t1 - v->t0, bytes += v->bytes, flops += v->flops;
                }
                if (calls)
                    mlstack__sbuf_add(&b, "  %-10s %8llu %10.3f %6.1f%% %9.2f %8.2f %8.2f\n", names[k],
                                      (unsigned long long)calls, (double)ns * 1e-6,
                                      eval_ns ? 100.0 * (double)ns / (double)eval_ns : 0.0, (double)ns * 1e-3 / (double)calls,
                                      ns ? (double)bytes / (double)ns : 0.0, ns ? (double)flops / (double)ns : 0.0);
            }
        }
    }
    if (eval_ns) {
        double serial = (double)(eval_ns > pool_ns ? eval_ns - pool_ns : 0) / (double)eval_ns;
        mlstack__sbuf_add(&b, "threads: %.1f%% of pool thread time lost to wake-up, imbalance and join; "
                              "%.1f%% of eval time outside pool runs (engine thread only)\n",
                          pool_ns ? 100.0 * (double)lost_ns / ((double)pool_ns * pr->n_threads) : 0.0, 100.0 * serial);
    }
    return b.len;
}

static void mlstack__prof_write_ev(FILE *f, const mlstack_engine *e, const mlstack__prof_ev *v) {
    const char *name = mlstack__op_names[v->op], *cat = v->kind == MLSTACK__PEV_OP ? "op" : v->kind == MLSTACK__PEV_POOL ? "pool" : "work";
    if (v->kind == MLSTACK__PEV_POOL) name = "pool_run";
    fprintf(f, ",\n{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":0,\"tid\":%d,\"args\":{\"step\":%d",
            name, cat, (double)v->t0 * 1e-3, (double)(v->t1 - v->t0) * 1e-3, (int)v->tid, (int)v->step);
    if (v->kind == MLSTACK__PEV_OP) {
        int layer = v->layer;
        if (v->op == MLSTACK__OP_MATMUL) {
            const mlstack__weight *w = (const mlstack__weight *)v->w;
            const char *wn = mlstack__prof_weight_name(e->model, v->w, &layer);
            fprintf(f, ",\"weight\":\"%s\",\"n_out\":%d,\"n_in\":%d,\"wtype\":\"%s\"", wn, w->n_out, w->n_in,
                    mlstack_dtype_name((mlstack_dtype)w->wtype));
        }
        if (layer >= 0) fprintf(f, ",\"layer\":%d", layer);
        fprintf(f, ",\"rows\":%d,\"bytes\":%llu,\"flops\":%llu", (int)v->B, (unsigned long long)v->bytes,
                (unsigned long long)v->flops);
    } else if (v->kind == MLSTACK__PEV_POOL) {
        fprintf(f, ",\"op\":\"%s\",\"tasks\":%d,\"lost_thread_us\":%.3f", mlstack__op_names[v->op], (int)v->n_tasks,
                (double)v->bytes * 1e-3);
    } else {
        fprintf(f, ",\"tasks\":%d,\"busy_us\":%.3f", (int)v->n_tasks, (double)v->bytes * 1e-3);
    }
    fputs("}}", f);
}

MLSTACK_API mlstack_result mlstack_engine_profile_write_trace(const mlstack_engine *e, const char *path) {
    const struct mlstack__prof *pr;
    FILE *f;
    size_t i;
    int t, ok;
    if (!e || !path) return MLSTACK_ERR_INVALID_ARG;
    if (!e->prof) return mlstack__engine_fail((mlstack_engine *)(uintptr_t)e, MLSTACK_ERR_STATE, "write_trace: profiling was never started");
    pr = e->prof;
    f = fopen(path, "wb");
    if (!f)
        return mlstack__engine_fail((mlstack_engine *)(uintptr_t)e, MLSTACK_ERR_IO, "write_trace: %s: cannot open: %s", path,
                                    strerror(errno));
    fputs("{\"traceEvents\":[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,\"args\":{\"name\":\"mlstack\"}}", f);
    for (t = 0; t < pr->n_threads; t++)
        fprintf(f, ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":%d,\"args\":{\"name\":\"%s %d\"}}", t,
                t ? "worker" : "engine thread", t);
    for (i = 0; i < pr->n_ev; i++)
        if (mlstack__prof_kept(pr, &pr->ev[i])) mlstack__prof_write_ev(f, e, &pr->ev[i]);
    fprintf(f, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"threads\":%d,\"kernels\":\"%s\",\"steps\":%d,\"dropped\":%llu}}\n",
            pr->n_threads, e->k->name, pr->kept, (unsigned long long)pr->dropped);
    ok = !ferror(f);
    if (fclose(f) != 0) ok = 0;
    if (!ok) return mlstack__engine_fail((mlstack_engine *)(uintptr_t)e, MLSTACK_ERR_IO, "write_trace: %s: write failed", path);
    return MLSTACK_OK;
}

MLSTACK_API uint64_t mlstack_model_decode_bytes(const mlstack_model *m) {
    const mlstack__config *c;
    uint64_t total;
    int l, i;
    if (!m) return 0;
    c = &m->cfg;
    total = (uint64_t)m->lm_head.n_out * m->lm_head.row_bytes + (uint64_t)c->n_embd * (uint64_t)mlstack__dtype_sizes[m->embed_dtype] +
            4 * (uint64_t)c->n_embd;
    for (l = 0; l < c->n_layers; l++) {
        const mlstack__layer *L = &m->layers[l];
        const mlstack__weight *ws[7];
        ws[0] = &L->wq, ws[1] = &L->wk, ws[2] = &L->wv, ws[3] = &L->wo;
        ws[4] = &L->w_gate, ws[5] = &L->w_up, ws[6] = &L->w_down;
        for (i = 0; i < 7; i++) total += (uint64_t)ws[i]->n_out * ws[i]->row_bytes + (ws[i]->bias ? 4 * (uint64_t)ws[i]->n_out : 0);
        total += 8 * (uint64_t)c->n_embd + (c->qk_norm ? 8 * (uint64_t)c->head_dim : 0);
    }
    return total;
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
