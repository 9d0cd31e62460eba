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
