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
         gd.sampler = &sd; gd.on_token = print_token;    // int print_token(void *user, int32_t id)
         mlstack_generate(eng, &gd);
         mlstack_engine_free(eng); mlstack_model_close(model);

   TABLE OF CONTENTS (each entry is a banner "==== N. NAME ====" with grep anchor ">>name")
     1. PUBLIC API        declarations: results, model, engine, sampling, generation  >>api
     2. PLATFORM          allocation, results and messages, timers, threads, mmap     >>platform
     3. JSON              one parser for safetensors headers, configs and tokenizers  >>json
     4. SAFETENSORS       mmapped files, header validation, views, sharded index      >>safetensors
     5. UNICODE           UTF-8, category tables, normalization                       >>unicode
     6. REGEX             the regex subset used by tokenizer Split patterns           >>regex
     7. TOKENIZER         tokenizer.json: normalizers, pre-tokenizers, BPE, decoders  >>tokenizer
     8. TEMPLATE          Jinja-subset interpreter for chat templates                 >>template
     9. KERNELS           scalar reference kernels (the oracle for every faster one)  >>kernels
    10. KERNELS AVX2      x86-64 AVX2 + FMA + F16C kernels                            >>avx2
    11. KERNELS AVX512    x86-64 AVX-512 kernels, VNNI int8 dots                      >>avx512
    12. KERNELS NEON      AArch64 NEON kernels, SDOT int8 dots                        >>neon
    13. KERNEL DISPATCH   CPU features, ISA caps, kernel table selection, report      >>dispatch
    14. QUANT             load-time quantization of weights to Q8_0 / Q4_1            >>quant
    15. MODEL             config.json -> hyperparameters; safetensors -> weight map   >>model
    16. KVCACHE           page pool, per-sequence page tables, paged attention        >>kvcache
    17. FORWARD           one forward pass over a ragged batch of rows                >>forward
    18. SAMPLING          logit processors and samplers                               >>sampling
    19. ENGINE            engine objects: threads, KV, eval, generate                 >>engine
    20. SCHEDULER         requests, continuous batching, chunked prefill, prefix reuse >>scheduler
    21. PROFILER          regions, schedule, Chrome trace, summary; random-weight models >>profiler

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
     MLSTACK_OPENMP             undefined   implementation file      fork/join through OpenMP (-fopenmp)
                                                                     instead of the built-in pool
     MLSTACK_NO_NEON            undefined   implementation file      leave the AArch64 NEON kernels out
     MLSTACK_NO_AVX2/_NO_AVX512 undefined   implementation file      leave those x86 kernels out

   THREAD SAFETY
     A model is immutable once open and may be shared by any number of engines and threads.
     An engine is driven by one thread at a time. Results and error text are per object.

   SECURITY
     Model files are untrusted input. Every length and offset read from a file is checked
     against the bytes that exist before use; mapped model bytes are never written. Errors are
     returned as mlstack_result with text naming the file, the offset or field, and what was
     expected. The library never prints, exits or aborts on bad data.

   ISA MATRIX (one binary holds every path its target allows; the best the CPU runs is chosen
   at run time, at most the cap given by the engine's isa field or MLSTACK_ISA)
     path           cap      target    the CPU needs                        int8 dots  opt-out
     scalar         scalar   all       nothing (portable C, the reference)  C          -
     avx2           avx2     x86-64    AVX2, FMA, F16C, OS YMM state        maddubs    MLSTACK_NO_AVX2
     avx512         avx512   x86-64    AVX-512 F/BW/VL/DQ, OS ZMM state     maddubs    MLSTACK_NO_AVX512
     avx512+vnni    avx512   x86-64    as avx512, plus AVX512_VNNI          vpdpbusd   MLSTACK_NO_AVX512
     ...+bf16dot    avx512   x86-64    as avx512+vnni, plus AVX512_BF16;    vpdpbusd   MLSTACK_NO_AVX512
                                       only with the engine's bf16_activations (BF16 weights x bf16-rounded
                                       activations by vdpbf16ps: faster prefill, not exact)
     neon           neon     AArch64   nothing (NEON is baseline)           smull      MLSTACK_NO_NEON
     neon+dotprod   neon     AArch64   dotprod (hwcap ASIMDDP), GCC or a    sdot       MLSTACK_NO_NEON
                                       build with -march=...+dotprod
   Every path takes F32, F16 and BF16 weights as stored and Q8_0/Q4_1 blocks. A cap naming the
   other architecture's path selects scalar. neon and neon+dotprod give identical bits.
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
    MLSTACK_DTYPE_Q4_1 = 8, /* blocks of 32: f16 scale and offset + 16 bytes of 4-bit values (made at load) */
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
typedef struct mlstack_chat_template mlstack_chat_template;
typedef struct mlstack_sampler mlstack_sampler;

/* Log callback: level 0 error, 1 warning, 2 info. Never called unless set. */
typedef void (*mlstack_log_fn)(void *user, int level, const char *message);

/* Model descriptor. Zero-initialise, then set path. Defaults:
     path      (required) a Hugging Face model folder
     quant     0: projection weights used as stored (F32/F16/BF16, no copy);
               MLSTACK_DTYPE_Q8_0 / MLSTACK_DTYPE_Q4_1: quantized at load (rows whose length is
               not a multiple of 32 stay as stored); embeddings always stay as stored
     log       NULL: silent */
typedef struct mlstack_model_desc {
    const char *path;
    mlstack_dtype quant;   /* 0 (F32): weights as stored; MLSTACK_DTYPE_Q8_0 or _Q4_1: quantize at load */
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
   model.safetensors or model.safetensors.index.json + shards, and the tokenizer when the folder
   has one (a tokenizer that fails to load fails the open). Weights are mapped, not copied.
   Parameters: desc (required), out (receives the model), err (optional detail).
   Returns MLSTACK_OK or a failure; on failure *out is NULL and err says why.
   Thread safety: any thread; the returned model may be shared read-only. */
MLSTACK_API mlstack_result mlstack_model_open(const mlstack_model_desc *desc, mlstack_model **out,
                                              mlstack_error *err);
MLSTACK_API void mlstack_model_close(mlstack_model *model);
MLSTACK_API void mlstack_model_get_info(const mlstack_model *model, mlstack_model_info *out);
/* The model folder's tokenizer (tokenizer.json, or vocab.json + merges.txt), loaded by
   mlstack_model_open; NULL when the folder has none. Owned by the model. */
MLSTACK_API mlstack_tokenizer *mlstack_model_tokenizer(const mlstack_model *model);
/* The model folder's chat templates (see mlstack_chat_template_open), loaded by
   mlstack_model_open; NULL when the folder has none. Owned by the model. */
MLSTACK_API const mlstack_chat_template *mlstack_model_chat_template(const mlstack_model *model);
/* Writes the model as loaded (quantized weights included) to folder `dir` (created if needed):
   model.safetensors plus copies of the source folder's config, tokenizer and template files.
   mlstack_model_open on `dir` then loads the quantized weights directly, without requantizing.
   Thread safety: any thread; the model is only read. */
MLSTACK_API mlstack_result mlstack_model_save(mlstack_model *model, const char *dir, mlstack_error *err);
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
/* Returns the new text in *text and *len (possibly empty). */
MLSTACK_API mlstack_result mlstack_detok_push(mlstack_detok *d, int32_t id, const char **text, size_t *len);
/* Emits whatever is held back (an incomplete character as U+FFFD) and resets the decoder. */
MLSTACK_API mlstack_result mlstack_detok_flush(mlstack_detok *d, const char **text, size_t *len);
MLSTACK_API void mlstack_detok_free(mlstack_detok *d);

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
   AddedToken objects {"content": ...} in tokenizer_config.json. (mlstack_chat_template is
   declared with the other handles above.) */

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
     n_threads         0: number of physical cores (online CPUs where the topology is unknown)
     kv_mem            0: bytes for min(max_position_embeddings, 4096) tokens of KV
     kv_type           0: F16 keys and values; MLSTACK_KV_BF16, MLSTACK_KV_F32 (exact, twice the memory)
     kv_page_tokens    0: 16 tokens per KV page
     max_seqs          0: 16 concurrent sequences
     max_batch_tokens  0: 512 rows per internal forward chunk
     isa               NULL: the best kernels this CPU runs, capped by the environment variable
                       MLSTACK_ISA if set; "scalar", "avx2", "avx512" or "neon": at most that
                       path (see ISA MATRIX)
     profile           NULL: not profiling; else mlstack_engine_profile_start(engine, profile) at init
     step_tokens       0: 128 (at most max_batch_tokens); the token budget of one
                       mlstack_engine_step (decode rows plus prefill chunks): long prompts are
                       prefilled this many rows at a time, so running decodes wait at most one
                       such chunk (larger: better prefill throughput, longer decode stalls)
     bf16_activations  0: exact. Non-zero, where the CPU has AVX512_BF16: BF16 weights are
                       multiplied with activations rounded to bf16 by vdpbf16ps (about 1.7x the
                       BF16 prefill speed; logits move by ~0.5% of their range). Other weight
                       types are unaffected. */
typedef enum mlstack_kv_type { MLSTACK_KV_DEFAULT = 0, MLSTACK_KV_F16 = 1, MLSTACK_KV_BF16 = 2, MLSTACK_KV_F32 = 3 } mlstack_kv_type;

typedef struct mlstack_engine_desc {
    int n_threads;
    uint64_t kv_mem;
    mlstack_kv_type kv_type;
    int kv_page_tokens;
    int max_seqs;
    int max_batch_tokens;
    const char *isa;
    const struct mlstack_profile_schedule *profile;
    int step_tokens;
    int bf16_activations; /* see above */
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
/* Keeps only the first `len` positions of `seq` (len <= its length), returning the pages past
   them; the next eval continues at position len. Used to reuse a common prompt prefix. */
MLSTACK_API mlstack_result mlstack_engine_seq_rewind(mlstack_engine *engine, int32_t seq, int32_t len);
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

/* ---- Serving many requests (sections KVCACHE and SCHEDULER) ----
   Requests are queued with mlstack_engine_submit and advanced by mlstack_engine_step, which
   forms one batch from the next token of every running request plus prefill chunks of waiting
   ones (up to step_tokens rows), runs one forward over it, samples each request with its own
   sampler, streams the new text, and retires finished requests. A radix tree keyed by token ids
   keeps the KV pages of finished (and preempted) requests; a new request attaches the pages of
   its longest cached prefix (whole pages) and computes only the rest. Cached pages are evicted
   least recently used when the pool runs short; pages attached by running requests are pinned.
   When pages run out, the cache is evicted first, then the most recently admitted running
   request is preempted (its pages are cached and freed, and it is recomputed later, mostly from
   the cache). A request whose worst case fits the KV budget alone always completes.
   Determinism: a request's logits and tokens are bit-identical whatever else runs with it, the
   step budget, the thread count, and whether its prefix came from the cache.
   Sequences from mlstack_engine_seq_new share the engine's sequence slots and page pool with
   requests; the two APIs may be used together (from the one driving thread). */

typedef enum mlstack_request_state {
    MLSTACK_REQUEST_QUEUED = 0,   /* waiting for admission (or preempted, waiting again) */
    MLSTACK_REQUEST_RUNNING = 1,  /* holds a sequence: prefilling or generating */
    MLSTACK_REQUEST_DONE = 2      /* finished; see finish and result */
} mlstack_request_state;

typedef enum mlstack_finish_reason {
    MLSTACK_FINISH_NONE = 0,      /* not finished */
    MLSTACK_FINISH_EOS = 1,       /* an EOS id of the model or one of stop_ids */
    MLSTACK_FINISH_STOP = 2,      /* a stop string appeared in the decoded text */
    MLSTACK_FINISH_LENGTH = 3,    /* max_tokens generated */
    MLSTACK_FINISH_CONTEXT = 4,   /* the sequence reached max_position_embeddings */
    MLSTACK_FINISH_CALLBACK = 5,  /* on_token returned non-zero */
    MLSTACK_FINISH_CANCELLED = 6, /* mlstack_engine_cancel */
    MLSTACK_FINISH_ERROR = 7      /* see result and message */
} mlstack_finish_reason;

/* Streaming callback, called by the thread inside mlstack_engine_step for every generated token.
   text/len: decoded text that became final with this token (UTF-8, possibly empty: characters
   split over byte tokens, and text that might be the start of a stop string, are held back
   until settled; a matched stop string and what follows it are never emitted; the final call of
   a request may release held-back text). Special tokens have no text. NULL text when the model
   has no tokenizer. Return non-zero to finish the request (MLSTACK_FINISH_CALLBACK). */
typedef int (*mlstack_stream_fn)(void *user, uint64_t request, int32_t token, const char *text, size_t len);
/* Optional: sees each logits row (n_vocab floats) before the request samples from it. */
typedef void (*mlstack_logits_fn)(void *user, uint64_t request, const float *logits, int n_vocab);

/* Request descriptor. Zero means default:
     prompt, n_prompt   (required) token ids, copied at submit
     sampler            zero: greedy; each request samples with its own seeded sampler
     max_tokens         0: until a stop condition or the context (max_position_embeddings) ends
     ignore_eos         0: the model's EOS ids finish the request; non-zero: they do not
     stop_ids           extra ids that finish the request (the id is generated and reported)
     stop_strings       NUL-terminated strings matched on the decoded text across token
                        boundaries; the match and anything after it are not emitted.
                        Needs a model with a tokenizer. Copied at submit.
     on_token, on_logits, user   callbacks (see above), NULL: none */
typedef struct mlstack_request_desc {
    const int32_t *prompt;
    int n_prompt;
    mlstack_sampler_desc sampler;
    int max_tokens;
    int ignore_eos;
    const int32_t *stop_ids;
    int n_stop_ids;
    const char *const *stop_strings;
    int n_stop_strings;
    mlstack_stream_fn on_token;
    mlstack_logits_fn on_logits;
    void *user;
} mlstack_request_desc;

/* What mlstack_engine_poll reports. Times are seconds since submit (0 while unknown). */
typedef struct mlstack_request_status {
    mlstack_request_state state;
    mlstack_finish_reason finish;
    mlstack_result result;      /* MLSTACK_OK unless finish is ERROR (or CANCELLED: ERR_CANCELLED) */
    char message[160];          /* detail for a failure, "" otherwise */
    int n_prompt;
    int n_generated;
    int n_cached;               /* prompt tokens whose KV came from the cache (last admission) */
    int n_preempted;            /* times the request was preempted and recomputed */
    double t_first_token, t_done;
} mlstack_request_status;

/* Cache and scheduler accounting. Pages: a page holds page_tokens positions of every layer. */
typedef struct mlstack_cache_stats {
    int n_pages;                /* pages in the pool (the kv_mem budget / page_bytes) */
    int page_tokens;
    uint64_t page_bytes;
    int pages_used;             /* referenced by a sequence or the tree */
    int pages_free;
    int pages_cached;           /* owned by the radix tree */
    int pages_pinned;           /* cached pages attached by running requests */
    int tree_nodes;
    uint64_t pages_evicted;     /* ever dropped from the tree */
    uint64_t hit_tokens;        /* prompt tokens taken from the cache, ever */
    uint64_t computed_tokens;   /* prompt (and recomputed) tokens run through the model, ever */
    uint64_t generated_tokens;  /* tokens sampled, ever */
    uint64_t steps, preemptions, rejected;
    int n_queued, n_running;
} mlstack_cache_stats;

/* Queues a request.
   Parameters: engine; desc (copied: prompt, stop ids and stop strings may be freed on return);
     id (receives the request's id, unique in this engine, never 0); err (optional detail).
   Returns MLSTACK_OK; MLSTACK_ERR_INVALID_ARG (empty prompt, token outside the vocabulary, bad
     sampler settings, stop strings without a tokenizer); MLSTACK_ERR_LIMIT when the request
     cannot fit alone: the prompt (plus max_tokens, when set) is longer than the context, or its
     KV pages exceed the whole pool; MLSTACK_ERR_NO_MEMORY. Nothing is queued on failure.
   Thread safety: any thread, also while another thread is inside mlstack_engine_step.
   Remarks: with max_tokens 0 a request also finishes (FINISH_CONTEXT) when it alone would
     fill the KV pool. */
MLSTACK_API mlstack_result mlstack_engine_submit(mlstack_engine *engine, const mlstack_request_desc *desc, uint64_t *id,
                                                 mlstack_error *err);
/* Runs one scheduling step: admits, prefills, decodes, samples, streams, retires.
   Parameters: engine; n_active (optional): receives the number of requests queued or running
     after the step (0: nothing left to do).
   Returns MLSTACK_OK (also when there was nothing to do), or a failure of the forward pass; a
     failed request is finished with FINISH_ERROR, the others carry on.
   Thread safety: one thread at a time (the driving thread); callbacks run on it. Callbacks may
     call mlstack_engine_submit, _cancel and _poll, but not _step. */
MLSTACK_API mlstack_result mlstack_engine_step(mlstack_engine *engine, int *n_active);
/* Asks for a request to finish (FINISH_CANCELLED) at the start of the next step; its pages
   return to the pool (the prefix it computed stays in the cache).
   Returns MLSTACK_OK, MLSTACK_ERR_NOT_FOUND (unknown or released id), MLSTACK_ERR_STATE (already done).
   Thread safety: any thread. */
MLSTACK_API mlstack_result mlstack_engine_cancel(mlstack_engine *engine, uint64_t id);
/* Reports a request's state; copies up to cap generated tokens into tokens (may be NULL).
   Returns MLSTACK_OK or MLSTACK_ERR_NOT_FOUND. Thread safety: any thread. */
MLSTACK_API mlstack_result mlstack_engine_poll(mlstack_engine *engine, uint64_t id, mlstack_request_status *status,
                                               int32_t *tokens, int cap);
/* Forgets a request: a finished one is freed now, an unfinished one is cancelled and freed when
   it finishes. The id is invalid afterwards. Returns MLSTACK_OK or MLSTACK_ERR_NOT_FOUND.
   Thread safety: any thread. Remarks: finished requests are kept until released. */
MLSTACK_API mlstack_result mlstack_engine_release(mlstack_engine *engine, uint64_t id);
/* Blocking convenience: submits, steps until this request is done (advancing any others too),
   reports it (as poll) and releases it. Returns the submit failure, a step failure, or the
   request's result. Thread safety: as mlstack_engine_step. */
MLSTACK_API mlstack_result mlstack_engine_complete(mlstack_engine *engine, const mlstack_request_desc *desc,
                                                   mlstack_request_status *status, int32_t *tokens, int cap,
                                                   mlstack_error *err);
/* Fills the accounting above. Thread safety: any thread (a consistent snapshot between steps). */
MLSTACK_API void mlstack_engine_cache_stats(mlstack_engine *engine, mlstack_cache_stats *out);
/* Drops every unpinned cached page (for cold-start measurements). Returns pages freed.
   Thread safety: the driving thread, between steps. */
MLSTACK_API int mlstack_engine_cache_clear(mlstack_engine *engine);

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
   is MLSTACK_DTYPE_Q8_0 or _Q4_1 (0: none).
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
#include <locale.h>
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
#if defined(MLSTACK_OPENMP)
#include <omp.h>
#elif !defined(MLSTACK_NO_THREADS)
#define MLSTACK__POOL_PTHREADS 1 /* the built-in pool's workers */
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

/* Growable byte buffer (text building, typed arrays). Functions return 0 when out of memory. */
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
static int mlstack__buf_puts(mlstack__buf *b, const char *s) { return mlstack__buf_put(b, s, strlen(s)); }
/* Typed arrays on top of mlstack__buf. */
#define MLSTACK__VEC_PUSH(buf, type, val) \
    (mlstack__buf_reserve((buf), sizeof(type)) ? (*(type *)(void *)((buf)->p + (buf)->n) = (val), (buf)->n += sizeof(type), 1) : 0)


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

/* Physical cores (hyper-threads share one core's FMA units, so they rarely help matmul):
   distinct (package, core) pairs among the online CPUs in Linux sysfs; the online CPU count
   where that is not readable. */
static int mlstack__core_count(void) {
    int n = mlstack__cpu_count(), i, j, n_cores = 0;
    long ids[256][2];
    for (i = 0; i < n; i++) {
        char path[96];
        long v[2] = {-1, -1};
        int k;
        FILE *f;
        for (k = 0; k < 2; k++) {
            snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/%s", i,
                     k ? "core_id" : "physical_package_id");
            f = fopen(path, "r");
            if (!f || fscanf(f, "%ld", &v[k]) != 1) {
                if (f) fclose(f);
                return n;
            }
            fclose(f);
        }
        for (j = 0; j < n_cores && (ids[j][0] != v[0] || ids[j][1] != v[1]); j++) {
        }
        if (j == n_cores) {
            ids[n_cores][0] = v[0];
            ids[n_cores][1] = v[1];
            n_cores++;
        }
    }
    return n_cores > 0 ? n_cores : n;
}

/* CPU features: on x86, cpuid for what the chip has and xgetbv for what the OS saves on a
   context switch (AVX needs YMM state, AVX-512 also opmask and ZMM state); on AArch64, NEON is
   baseline and the kernel's hwcaps say whether the int8 dot product (dotprod) is there. */
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
#if defined(__aarch64__)
#include <arm_neon.h>
#if defined(__linux__)
#include <sys/auxv.h>
#endif
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
#if defined(__ARM_FEATURE_DOTPROD)
    c->neon_dot = 1; /* the compiler was told every target CPU has it */
#elif defined(__linux__)
    /* The kernel's hwcaps: what the CPU has and the kernel enables (Android's bionic too). */
#if !defined(HWCAP_ASIMDDP)
#define HWCAP_ASIMDDP (1 << 20)
#endif
    c->neon_dot = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
#endif
#endif
}

/* Thread pool: a fixed set of workers, fork/join over task indices [0, n_tasks). The calling
   thread takes part, so a pool of 1 runs everything inline. Waiting spins briefly (a forward
   pass forks dozens of times per token, far too often to pay a futex sleep and wake-up each
   time), then sleeps on a condition variable so idle engines cost nothing. */
typedef void (*mlstack__task_fn)(void *ctx, int task, int n_tasks, int thread);

#define MLSTACK__SPIN 4000

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
#if defined(MLSTACK__POOL_PTHREADS)
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    uint64_t generation; /* atomic: bumped once per fork */
    int pending;         /* atomic: workers still busy with the current generation */
    int quit;            /* atomic */
    mlstack__task_fn fn;
    void *ctx;
    int n_tasks;
#endif
} mlstack__pool;

#if defined(MLSTACK__POOL_PTHREADS)
static void mlstack__cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __asm__ __volatile__("pause");
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

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
        int t, i;
        for (i = 0; i < MLSTACK__SPIN && __atomic_load_n(&p->generation, __ATOMIC_ACQUIRE) == seen &&
                    !__atomic_load_n(&p->quit, __ATOMIC_ACQUIRE);
             i++)
            mlstack__cpu_relax();
        if (__atomic_load_n(&p->generation, __ATOMIC_ACQUIRE) == seen) {
            pthread_mutex_lock(&p->mu);
            while (__atomic_load_n(&p->generation, __ATOMIC_ACQUIRE) == seen && !__atomic_load_n(&p->quit, __ATOMIC_ACQUIRE))
                pthread_cond_wait(&p->wake, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (__atomic_load_n(&p->quit, __ATOMIC_ACQUIRE)) return NULL;
        seen = __atomic_load_n(&p->generation, __ATOMIC_ACQUIRE);
        /* a contiguous share of the tasks: neighbouring weight rows stream from memory together */
        for (t = (int)((int64_t)p->n_tasks * arg.index / p->n_threads);
             t < (int)((int64_t)p->n_tasks * (arg.index + 1) / p->n_threads); t++)
            p->fn(p->ctx, t, p->n_tasks, arg.index);
        if (__atomic_sub_fetch(&p->pending, 1, __ATOMIC_ACQ_REL) == 0) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
}
#endif

static int mlstack__pool_init(mlstack__pool *p, int n_threads) {
    memset(p, 0, sizeof *p);
    if (n_threads < 1) n_threads = 1;
#if defined(MLSTACK_NO_THREADS)
    p->n_threads = 1;
    return 0;
#elif defined(MLSTACK_OPENMP)
    p->n_threads = n_threads; /* OpenMP's own team runs the tasks */
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

/* Runs fn(ctx, t, n_tasks, thread) for every t, spread over the pool; returns when all are done.
   Task t always does the same work whichever thread takes it, so results never depend on the
   thread count. Called from one thread at a time. */
static void mlstack__pool_run(mlstack__pool *p, mlstack__task_fn fn, void *ctx, int n_tasks) {
    int t;
    if (MLSTACK__UNLIKELY(p->prof != NULL)) { mlstack__prof_pool_run(p, fn, ctx, n_tasks); return; }
#if defined(MLSTACK_OPENMP)
    if (p->n_threads > 1 && n_tasks > 1) {
#pragma omp parallel for num_threads(p->n_threads) schedule(static)
        for (t = 0; t < n_tasks; t++) fn(ctx, t, n_tasks, omp_get_thread_num());
        return;
    }
#elif defined(MLSTACK__POOL_PTHREADS)
    if (p->n_threads > 1 && n_tasks > 1) {
        int i;
        p->fn = fn;
        p->ctx = ctx;
        p->n_tasks = n_tasks;
        __atomic_store_n(&p->pending, p->n_threads - 1, __ATOMIC_RELEASE);
        pthread_mutex_lock(&p->mu);
        __atomic_add_fetch(&p->generation, 1, __ATOMIC_ACQ_REL);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
        for (t = 0; t < (int)((int64_t)n_tasks / p->n_threads); t++) fn(ctx, t, n_tasks, 0);
        for (i = 0; i < MLSTACK__SPIN && __atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) > 0; i++) mlstack__cpu_relax();
        if (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) > 0) {
            pthread_mutex_lock(&p->mu);
            while (__atomic_load_n(&p->pending, __ATOMIC_ACQUIRE) > 0) pthread_cond_wait(&p->done, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        return;
    }
#endif
    (void)p;
    for (t = 0; t < n_tasks; t++) fn(ctx, t, n_tasks, 0);
}

static void mlstack__pool_free(mlstack__pool *p) {
#if defined(MLSTACK__POOL_PTHREADS)
    int i;
    if (p->threads) {
        pthread_mutex_lock(&p->mu);
        __atomic_store_n(&p->quit, 1, __ATOMIC_RELEASE);
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

/* strtod on a JSON number literal (NUL-terminated, writable) whatever LC_NUMERIC the program set:
   the '.' is swapped for the locale's decimal point first. */
static double mlstack__json_strtod(char *s) {
    const char *dp = localeconv()->decimal_point;
    char *dot = strchr(s, '.');
    if (dot && dp && dp[0] && dp[0] != '.' && !dp[1]) *dot = dp[0];
    return strtod(s, NULL);
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
        v->num = mlstack__json_strtod(c);
        is_int = 0;
    } else {
        memcpy(buf, p->s + start, i - start);
        buf[i - start] = 0;
        v->num = mlstack__json_strtod(buf);
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
                                                                       "I32", "I64", "Q8_0", "Q4_1"};
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
                                     what, t->key, k, d->type == MLSTACK__JSON_NUMBER ? (int)(d->len > 40 ? 40 : d->len) : 12,
                                     d->type == MLSTACK__JSON_NUMBER ? d->str : "not a number");
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
        {
            /* sorted by begin: a range overlaps an earlier one iff it starts before the furthest
               end seen so far; empty tensors occupy no bytes and may sit anywhere */
            const mlstack__st_tensor *reach = NULL;
            for (i = 0; i < n; i++) {
                const mlstack__st_tensor *cur = order[i];
                if (cur->begin == cur->end) continue;
                if (reach && cur->begin < reach->end) {
                    r = MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT,
                                      "%s: tensors %s [%llu, %llu) and %s [%llu, %llu) overlap in the data area", what,
                                      reach->name, (unsigned long long)reach->begin, (unsigned long long)reach->end,
                                      cur->name, (unsigned long long)cur->begin, (unsigned long long)cur->end);
                    MLSTACK_FREE(order);
                    return r;
                }
                if (!reach || cur->end > reach->end) reach = cur;
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

/* Code points, properties and normalization.
   Layouts: text is UTF-8 bytes (s, n); code points are uint32_t. The tables below are generated
   by tools/gen_unicode.py (rerun it to regenerate them in place).
   Unicode versions, and why they differ:
   - categories, White_Space, Alphabetic, case mapping and folding: UCD 15.0 (Debian unicode-data).
     Oniguruma in tokenizers 0.23 knows Unicode 16.0: the ~5,200 code points first assigned in
     16.0 (Garay, Todhri, new symbols...) are Cn here but letters/symbols to onig, so a Split on
     text in those scripts can differ. Python 3.11's unicodedata is 14.0.
   - normalization (decompositions, combining classes, compositions) and the StripAccents mark
     set: cut at Unicode 9.0, because tokenizers normalizes with unicode-normalization-alignments,
     whose tables are 9.0; characters assigned later pass through unchanged there, and here. */

enum {
    MLSTACK__UC_Lu, MLSTACK__UC_Ll, MLSTACK__UC_Lt, MLSTACK__UC_Lm, MLSTACK__UC_Lo,
    MLSTACK__UC_Mn, MLSTACK__UC_Mc, MLSTACK__UC_Me,
    MLSTACK__UC_Nd, MLSTACK__UC_Nl, MLSTACK__UC_No,
    MLSTACK__UC_Pc, MLSTACK__UC_Pd, MLSTACK__UC_Ps, MLSTACK__UC_Pe, MLSTACK__UC_Pi, MLSTACK__UC_Pf, MLSTACK__UC_Po,
    MLSTACK__UC_Sm, MLSTACK__UC_Sc, MLSTACK__UC_Sk, MLSTACK__UC_So,
    MLSTACK__UC_Zs, MLSTACK__UC_Zl, MLSTACK__UC_Zp,
    MLSTACK__UC_Cc, MLSTACK__UC_Cf, MLSTACK__UC_Cs, MLSTACK__UC_Co, MLSTACK__UC_Cn,
    MLSTACK__UC_COUNT
};
/* Masks of whole major categories, bit i = category i. */
#define MLSTACK__UCM_L 0x0000001Fu
#define MLSTACK__UCM_M 0x000000E0u
#define MLSTACK__UCM_N 0x00000700u
#define MLSTACK__UCM_P 0x0003F800u
#define MLSTACK__UCM_S 0x003C0000u
#define MLSTACK__UCM_Z 0x01C00000u
#define MLSTACK__UCM_C 0x3E000000u

enum { MLSTACK__NFC, MLSTACK__NFD, MLSTACK__NFKC, MLSTACK__NFKD };

/* BEGIN GENERATED unicode tables */
/* Generated by tools/gen_unicode.py from the Unicode 15.0.0 Character Database (normalization data cut at Unicode 9.0). 122290 bytes: properties 41216, case 7008, normalization 68054. */
#define MLSTACK__UPROP_SHIFT 7
static const uint8_t mlstack__uprop1[8704] = {
    0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,
    32,33,34,34,35,36,37,38,39,34,34,34,40,41,42,43,44,45,46,47,48,49,50,51,52,53,54,55,56,57,58,59,
    60,61,62,63,64,64,65,66,67,68,69,70,71,69,72,73,69,69,64,74,64,64,75,76,77,78,79,80,81,82,69,83,
    84,85,86,87,88,89,69,69,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,90,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    91,34,34,34,34,34,34,34,34,92,34,34,93,94,95,96,97,98,99,100,101,102,103,104,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,105,106,106,106,106,106,106,106,106,106,106,106,106,106,106,106,106,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,34,34,108,109,110,111,34,34,112,113,114,115,116,117,
    118,119,120,121,122,123,124,125,126,127,128,129,34,34,130,131,132,133,134,135,136,137,138,139,140,141,142,122,143,144,145,146,
    147,148,149,150,151,152,153,122,154,155,122,156,157,158,159,122,160,161,162,163,164,165,166,122,167,168,169,170,122,171,172,173,
    34,34,34,34,34,34,34,174,175,34,176,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,177,
    34,34,34,34,34,34,34,34,178,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,34,34,34,34,179,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,34,34,34,34,180,181,182,183,122,122,122,122,184,185,186,187,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,188,34,34,34,34,34,34,34,34,34,189,190,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,191,
    34,34,192,34,34,193,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,194,195,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,196,197,
    69,198,199,200,201,202,203,122,204,205,206,207,208,209,210,211,69,69,69,69,212,213,122,122,122,122,122,122,122,122,214,122,
    215,216,217,122,122,218,122,122,122,219,122,122,122,122,122,220,34,221,222,122,122,122,122,122,223,224,225,122,226,227,122,122,
    228,229,230,231,232,122,69,233,69,69,69,69,69,234,235,236,237,238,69,69,239,240,69,241,122,122,122,122,122,122,122,122,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,242,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,243,34,244,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,245,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,246,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,34,34,34,34,247,122,122,122,122,122,122,122,122,122,122,122,
    34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,248,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,34,
    34,34,34,34,34,34,34,249,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    250,122,251,252,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,122,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,253,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,
    107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,107,253,
};
static const uint8_t mlstack__uprop2[32512] = {
    25,25,25,25,25,25,25,25,25,57,57,57,57,57,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,
    54,17,17,17,19,17,17,17,13,14,17,18,17,12,17,17,8,8,8,8,8,8,8,8,8,8,17,17,18,18,18,17,
    17,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,13,17,14,20,11,
    20,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,13,18,14,18,25,
    25,25,25,25,25,57,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,25,
    54,17,19,19,19,19,21,17,20,21,68,15,18,26,21,20,21,18,10,10,20,65,17,17,20,10,68,16,10,10,10,17,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,18,64,64,64,64,64,64,64,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,18,65,65,65,65,65,65,65,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,65,64,65,64,65,64,65,64,
    65,64,65,64,65,64,65,64,65,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,64,65,64,65,64,65,65,
    65,64,64,65,64,65,64,64,65,64,64,64,65,65,64,64,64,64,65,64,64,65,64,64,64,65,65,65,64,64,65,64,
    64,65,64,65,64,65,64,64,65,64,65,65,64,65,64,64,65,64,64,64,65,64,65,64,64,65,65,68,64,65,65,65,
    68,68,68,68,64,66,65,64,66,65,64,66,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,65,64,66,65,64,65,64,64,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,65,65,65,65,65,65,64,64,65,64,64,65,
    65,64,65,64,64,64,64,65,64,65,64,65,64,65,64,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,68,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,
    67,67,20,20,20,20,67,67,67,67,67,67,67,67,67,67,67,67,20,20,20,20,20,20,20,20,20,20,20,20,20,20,
    67,67,67,67,67,20,20,20,20,20,20,20,67,20,67,20,20,20,20,20,20,20,20,20,20,20,20,20,20,20,20,20,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,69,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,64,65,64,65,67,20,64,65,29,29,67,65,65,65,17,64,
    29,29,29,29,20,20,64,17,64,64,64,29,64,29,64,64,65,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,29,64,64,64,64,64,64,64,64,64,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,64,65,65,64,64,64,65,65,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,65,65,65,65,64,65,18,64,65,64,64,65,65,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,21,5,5,5,5,5,7,7,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,64,65,64,65,64,65,64,65,64,65,64,65,64,65,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,29,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,29,29,67,17,17,17,17,17,17,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,17,12,29,29,21,21,19,29,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,69,69,69,69,69,69,69,69,69,69,69,69,69,69,12,69,
    17,69,69,17,69,69,17,69,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,68,68,68,68,17,17,29,29,29,29,29,29,29,29,29,29,29,
    26,26,26,26,26,26,18,18,18,17,17,19,17,17,21,21,69,69,69,69,69,69,69,69,69,69,69,17,26,17,17,17,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    67,68,68,68,68,68,68,68,68,68,68,69,69,69,69,69,69,69,69,69,69,69,69,69,5,69,69,69,69,69,69,69,
    8,8,8,8,8,8,8,8,8,8,17,17,17,17,68,68,69,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,17,68,69,69,69,69,69,69,69,26,21,5,
    5,69,69,69,69,67,67,69,69,21,5,5,5,69,68,68,8,8,8,8,8,8,8,8,8,8,68,68,68,21,21,68,
    17,17,17,17,17,17,17,17,17,17,17,17,17,17,29,26,68,69,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,
    5,5,5,5,5,5,5,5,5,5,5,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,69,69,69,69,69,69,69,69,69,69,69,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    8,8,8,8,8,8,8,8,8,8,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,5,5,5,5,5,5,5,5,5,67,67,21,17,17,17,67,29,29,5,19,19,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,69,5,5,67,69,69,69,69,69,
    69,69,69,69,67,69,69,69,67,69,69,69,69,5,29,29,17,17,17,17,17,17,17,17,17,17,17,17,17,17,17,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,5,5,5,29,29,17,29,
    68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,20,68,68,68,68,68,68,29,26,26,29,29,29,29,29,29,5,5,5,5,5,5,5,5,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,67,5,5,5,5,5,5,5,5,5,5,69,69,69,69,69,69,69,69,69,69,69,69,
    5,5,26,69,69,69,69,69,69,69,5,5,5,5,5,5,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,
    69,69,69,70,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,70,5,68,70,70,
    70,69,69,69,69,69,69,69,69,70,70,70,70,5,70,70,68,5,5,5,5,69,69,69,68,68,68,68,68,68,68,68,
    68,68,69,69,17,17,8,8,8,8,8,8,8,8,8,8,17,67,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,69,70,70,29,68,68,68,68,68,68,68,68,29,29,68,68,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,29,68,29,29,29,68,68,68,68,29,29,5,68,70,70,
    70,69,69,69,69,29,29,70,70,29,29,70,70,5,68,29,29,29,29,29,29,29,29,70,29,29,29,29,68,68,29,68,
    68,68,69,69,29,29,8,8,8,8,8,8,8,8,8,8,68,68,19,19,10,10,10,10,10,10,21,19,68,17,5,29,
    29,69,69,70,29,68,68,68,68,68,68,29,29,29,29,68,68,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,29,68,68,29,68,68,29,68,68,29,29,5,29,70,70,
    70,69,69,29,29,29,29,69,69,29,29,69,69,5,29,29,29,69,29,29,29,29,29,29,29,68,68,68,68,29,68,29,
    29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,69,69,68,68,68,69,17,29,29,29,29,29,29,29,29,29,
    29,69,69,70,29,68,68,68,68,68,68,68,68,68,29,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,29,68,68,29,68,68,68,68,68,29,29,5,68,70,70,
    70,69,69,69,69,69,29,69,69,70,29,70,70,5,29,29,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,69,69,29,29,8,8,8,8,8,8,8,8,8,8,17,19,29,29,29,29,29,29,29,68,69,69,69,5,5,5,
    29,69,70,70,29,68,68,68,68,68,68,68,68,29,29,68,68,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,29,68,68,29,68,68,68,68,68,29,29,5,68,70,69,
    70,69,69,69,69,29,29,70,70,29,29,70,70,5,29,29,29,29,29,29,29,5,69,70,29,29,29,29,68,68,29,68,
    68,68,69,69,29,29,8,8,8,8,8,8,8,8,8,8,21,68,10,10,10,10,10,10,29,29,29,29,29,29,29,29,
    29,29,69,68,29,68,68,68,68,68,68,29,29,29,68,68,68,29,68,68,68,68,29,29,29,68,68,29,68,29,68,68,
    29,29,29,68,68,29,29,29,68,68,68,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,70,70,
    69,70,70,29,29,29,70,70,70,29,70,70,70,5,29,29,68,29,29,29,29,29,29,70,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,10,10,10,21,21,21,21,21,21,19,21,29,29,29,29,29,
    69,70,70,70,69,68,68,68,68,68,68,68,68,29,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,5,68,69,69,
    69,70,70,70,70,29,69,69,69,29,69,69,69,5,29,29,29,29,29,29,29,69,69,29,68,68,68,29,29,68,29,29,
    68,68,69,69,29,29,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,29,17,10,10,10,10,10,10,10,21,
    68,69,70,70,17,68,68,68,68,68,68,68,68,29,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,29,29,5,68,70,69,
    70,70,70,70,70,29,69,70,70,29,70,70,69,5,29,29,29,29,29,29,29,70,70,29,29,29,29,29,29,68,68,29,
    68,68,69,69,29,29,8,8,8,8,8,8,8,8,8,8,29,68,68,70,29,29,29,29,29,29,29,29,29,29,29,29,
    69,69,70,70,68,68,68,68,68,68,68,68,68,29,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,5,5,68,70,70,
    70,69,69,69,69,29,70,70,70,29,70,70,70,5,68,21,29,29,29,29,68,68,68,70,10,10,10,10,10,10,10,68,
    68,68,69,69,29,29,8,8,8,8,8,8,8,8,8,8,10,10,10,10,10,10,10,10,10,21,68,68,68,68,68,68,
    29,69,70,70,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,29,68,29,29,
    68,68,68,68,68,68,68,29,29,29,5,29,29,29,29,70,70,70,69,69,69,29,69,29,70,70,70,70,70,70,70,70,
    29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,29,29,70,70,17,29,29,29,29,29,29,29,29,29,29,29,
    29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,68,68,69,69,69,69,69,69,69,29,29,29,29,19,
    68,68,68,68,68,68,67,5,5,5,5,5,5,69,5,17,8,8,8,8,8,8,8,8,8,8,17,17,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,68,68,29,68,29,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,29,68,29,68,68,68,68,68,68,68,68,68,68,69,68,68,69,69,69,69,69,69,5,69,69,68,29,29,
    68,68,68,68,68,29,67,29,5,5,5,5,5,69,5,29,8,8,8,8,8,8,8,8,8,8,29,29,68,68,68,68,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,21,21,21,17,17,17,17,17,17,17,17,17,17,17,17,17,17,17,21,17,21,21,21,5,5,21,21,21,21,21,21,
    8,8,8,8,8,8,8,8,8,8,10,10,10,10,10,10,10,10,10,10,21,5,21,5,21,5,13,14,13,14,6,6,
    68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,69,69,69,69,69,69,69,69,69,69,69,69,69,69,70,
    69,69,69,69,5,17,5,5,68,68,68,68,68,69,69,69,69,69,69,69,69,69,69,69,29,69,69,69,69,69,69,69,
    69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,29,21,21,
    21,21,21,21,21,21,5,21,21,21,21,21,21,29,21,21,17,17,17,17,17,21,21,21,21,17,17,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,70,70,69,69,69,69,70,69,69,69,69,69,5,70,5,5,70,70,69,69,68,
    8,8,8,8,8,8,8,8,8,8,17,17,17,17,17,17,68,68,68,68,68,68,70,70,69,69,68,68,68,68,69,69,
    69,68,70,70,70,68,68,70,70,70,70,70,70,70,68,68,68,69,69,69,69,68,68,68,68,68,68,68,68,68,68,68,
    68,68,69,70,70,69,69,70,70,70,70,70,70,69,68,70,8,8,8,8,8,8,8,8,8,8,70,70,70,69,21,21,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,29,64,29,29,29,29,29,64,29,29,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,17,67,65,65,65,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,29,68,68,68,68,29,29,68,68,68,68,68,68,68,29,68,29,68,68,68,68,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,29,68,68,68,68,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,68,68,68,68,29,29,68,68,68,68,68,68,68,29,
    68,29,68,68,68,68,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,68,68,68,68,29,29,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,5,5,5,
    17,17,17,17,17,17,17,17,17,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,29,29,65,65,65,65,65,65,29,29,
    12,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,21,17,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    54,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,13,14,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,17,17,17,73,73,73,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,69,5,6,29,29,29,29,29,29,29,29,29,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,69,6,17,17,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,69,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,29,68,68,68,29,69,69,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,5,5,70,69,69,69,69,69,69,69,70,70,
    70,70,70,70,70,70,69,70,70,5,5,5,5,5,5,5,5,5,5,5,17,17,17,67,17,17,17,19,68,5,29,29,
    8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,10,10,10,10,10,10,10,10,10,10,29,29,29,29,29,29,
    17,17,17,17,17,17,12,17,17,17,17,5,5,5,26,5,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,67,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,
    68,68,68,68,68,69,69,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,69,68,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,
    69,69,69,70,70,70,70,69,69,70,70,70,29,29,29,29,70,70,69,70,70,70,70,70,70,5,5,5,29,29,29,29,
    21,29,29,29,17,17,8,8,8,8,8,8,8,8,8,8,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,68,68,68,68,68,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,10,29,29,29,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,69,70,70,69,29,29,17,17,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,70,69,70,69,69,69,69,69,69,69,29,
    5,70,69,70,70,69,69,69,69,69,69,69,69,70,70,70,70,70,70,69,69,5,5,5,5,5,5,5,5,29,29,5,
    8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    17,17,17,17,17,17,17,67,17,17,17,17,17,17,29,29,5,5,5,5,5,5,5,5,5,5,5,5,5,5,7,69,
    69,5,5,5,5,5,5,5,5,5,5,5,69,69,69,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    69,69,69,69,70,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,5,70,69,69,69,69,69,70,69,70,70,70,
    70,70,69,70,6,68,68,68,68,68,68,68,68,29,29,29,8,8,8,8,8,8,8,8,8,8,17,17,17,17,17,17,
    17,21,21,21,21,21,21,21,21,21,21,5,5,5,5,5,5,5,5,5,21,21,21,21,21,21,21,21,21,17,17,29,
    69,69,70,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,70,69,69,69,69,70,70,69,69,6,5,69,69,68,68,8,8,8,8,8,8,8,8,8,8,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,5,70,69,69,70,70,70,69,70,69,69,69,6,6,29,29,29,29,29,29,29,29,17,17,17,17,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,70,70,70,70,70,70,70,70,69,69,69,69,69,69,69,69,70,70,69,5,29,29,29,17,17,17,17,17,
    8,8,8,8,8,8,8,8,8,8,29,29,29,68,68,68,8,8,8,8,8,8,8,8,8,8,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,67,67,67,67,67,67,17,17,
    65,65,65,65,65,65,65,65,65,29,29,29,29,29,29,29,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,29,29,64,64,64,
    17,17,17,17,17,17,17,17,29,29,29,29,29,29,29,29,5,5,5,17,5,5,5,5,5,5,5,5,5,5,5,5,
    5,6,5,5,5,5,5,5,5,68,68,68,68,5,68,68,68,68,68,68,5,68,68,6,5,5,68,29,29,29,29,29,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,
    67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,
    67,67,67,67,67,67,67,67,67,67,67,65,65,65,65,65,65,65,65,65,65,65,65,65,67,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,67,67,67,67,67,
    67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,69,69,69,69,69,69,69,69,69,69,69,69,69,69,5,5,5,5,5,5,5,5,5,5,5,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,65,65,65,65,65,65,65,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    65,65,65,65,65,65,65,65,64,64,64,64,64,64,64,64,65,65,65,65,65,65,29,29,64,64,64,64,64,64,29,29,
    65,65,65,65,65,65,65,65,64,64,64,64,64,64,64,64,65,65,65,65,65,65,65,65,64,64,64,64,64,64,64,64,
    65,65,65,65,65,65,29,29,64,64,64,64,64,64,29,29,65,65,65,65,65,65,65,65,29,64,29,64,29,64,29,64,
    65,65,65,65,65,65,65,65,64,64,64,64,64,64,64,64,65,65,65,65,65,65,65,65,65,65,65,65,65,65,29,29,
    65,65,65,65,65,65,65,65,66,66,66,66,66,66,66,66,65,65,65,65,65,65,65,65,66,66,66,66,66,66,66,66,
    65,65,65,65,65,65,65,65,66,66,66,66,66,66,66,66,65,65,65,65,65,29,65,65,64,64,64,64,66,20,65,20,
    20,20,65,65,65,29,65,65,64,64,64,64,66,20,20,20,65,65,65,65,29,29,65,65,64,64,64,64,29,20,20,20,
    65,65,65,65,65,65,65,65,64,64,64,64,64,20,20,20,29,29,65,65,65,29,65,65,64,64,64,64,66,20,20,29,
    54,54,54,54,54,54,54,54,54,54,54,26,26,26,26,26,12,12,12,12,12,12,17,17,15,16,13,15,15,16,13,15,
    17,17,17,17,17,17,17,17,55,56,26,26,26,26,26,54,17,17,17,17,17,17,17,17,17,15,16,17,17,17,17,11,
    11,17,17,17,18,13,14,17,17,17,17,17,17,17,17,17,17,17,18,17,11,17,17,17,17,17,17,17,17,17,17,54,
    26,26,26,26,26,29,26,26,26,26,26,26,26,26,26,26,10,67,29,29,10,10,10,10,10,10,18,18,18,13,14,67,
    10,10,10,10,10,10,10,10,10,10,18,18,18,13,14,29,67,67,67,67,67,67,67,67,67,67,67,67,67,29,29,29,
    19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,19,
    19,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,5,5,5,5,5,5,5,5,5,5,5,5,5,7,7,7,
    7,5,7,7,7,5,5,5,5,5,5,5,5,5,5,5,5,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,64,21,21,21,21,64,21,21,65,64,64,64,65,65,64,64,64,65,21,64,21,21,18,64,64,64,64,64,21,21,
    21,21,21,21,64,21,64,21,64,21,64,64,64,64,21,65,64,64,64,64,65,68,68,68,68,65,21,21,65,65,64,64,
    18,18,18,18,18,64,65,65,65,65,21,18,21,21,65,21,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,
    73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,
    73,73,73,64,65,73,73,73,73,10,21,21,29,29,29,29,18,18,18,18,18,21,21,21,21,21,18,18,21,21,21,21,
    18,21,21,18,21,21,18,21,21,21,21,21,21,21,18,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,18,18,21,21,18,21,18,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,18,18,18,18,18,18,18,18,18,18,18,18,
    18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,
    18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,
    18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,
    18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,
    21,21,21,21,21,21,21,21,13,14,13,14,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    18,18,21,21,21,21,21,21,21,13,14,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,18,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,18,18,18,18,18,
    18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,18,18,18,18,
    18,18,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,85,85,85,85,85,85,85,85,85,85,
    85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,
    85,85,85,85,85,85,85,85,85,85,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,18,21,21,21,21,21,21,21,21,
    21,18,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,18,18,18,18,18,18,18,18,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,18,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,13,14,13,14,13,14,13,14,13,14,13,14,13,14,10,10,10,10,10,10,10,10,10,10,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    18,18,18,18,18,13,14,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,
    18,18,18,18,18,18,13,14,13,14,13,14,13,14,13,14,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,
    18,18,18,13,14,13,14,13,14,13,14,13,14,13,14,13,14,13,14,13,14,13,14,13,14,18,18,18,18,18,18,18,
    18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,
    18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,13,14,13,14,18,18,18,18,
    18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,13,14,18,18,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,18,
    18,18,18,18,18,21,21,18,18,18,18,18,18,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    64,65,64,64,64,65,65,64,65,64,65,64,65,64,64,64,64,65,64,65,65,64,65,65,65,65,65,65,67,67,64,64,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,65,21,21,21,21,21,21,64,65,64,65,5,5,5,64,65,29,29,29,29,29,17,17,17,17,10,17,17,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,29,65,29,29,29,29,29,65,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,67,17,29,29,29,29,29,29,29,29,29,29,29,29,29,29,5,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,29,
    68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,29,
    69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,
    17,17,15,16,15,16,17,17,17,15,16,17,15,16,17,17,17,17,17,17,17,17,17,12,17,17,12,17,15,16,17,17,
    15,16,13,14,13,14,13,14,13,14,17,17,17,17,17,67,17,17,17,17,17,17,17,17,17,17,12,12,17,17,17,17,
    12,17,13,17,17,17,17,17,17,17,17,17,17,17,17,17,21,21,17,17,17,13,14,13,14,13,14,13,14,12,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,
    54,17,17,17,21,67,68,73,13,14,13,14,13,14,13,14,13,14,21,21,13,14,13,14,13,14,13,14,12,13,14,14,
    21,73,73,73,73,73,73,73,73,73,5,5,5,5,6,6,12,67,67,67,67,67,21,21,73,73,73,67,68,17,21,21,
    29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,5,5,20,20,67,67,68,
    12,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,17,67,67,67,68,
    29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,21,21,10,10,10,10,21,21,21,21,21,21,21,21,21,21,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,29,29,29,29,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,
    10,10,10,10,10,10,10,10,10,10,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,10,10,10,10,10,10,10,10,21,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    10,10,10,10,10,10,10,10,10,10,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,67,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,67,67,67,67,67,67,17,17,
    68,68,68,68,68,68,68,68,68,68,68,68,67,17,17,17,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    8,8,8,8,8,8,8,8,8,8,68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,68,5,7,7,7,17,69,69,69,69,69,69,69,69,5,5,17,67,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,67,67,69,69,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,73,73,73,73,73,73,73,73,73,73,5,5,17,17,17,17,17,17,29,29,29,29,29,29,29,29,
    20,20,20,20,20,20,20,20,20,20,20,20,20,20,20,20,20,20,20,20,20,20,20,67,67,67,67,67,67,67,67,67,
    20,20,64,65,64,65,64,65,64,65,64,65,64,65,64,65,65,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,65,64,65,64,65,67,65,65,65,65,65,65,65,65,64,65,64,65,64,64,65,
    64,65,64,65,64,65,64,65,67,20,20,64,65,64,65,68,64,65,64,65,65,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,65,64,65,64,65,64,64,64,64,64,65,64,64,64,64,64,65,64,65,64,65,64,65,64,65,64,65,
    64,65,64,65,64,64,64,64,65,64,65,29,29,29,29,29,64,65,29,65,29,65,64,65,64,65,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,67,67,67,64,65,68,67,67,65,68,68,68,68,68,
    68,68,69,68,68,68,5,68,68,68,68,69,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,70,70,69,69,70,21,21,21,21,5,29,29,29,10,10,10,10,10,10,21,21,19,21,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,17,17,17,17,29,29,29,29,29,29,29,29,
    70,70,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,70,70,70,70,70,70,70,70,70,70,70,70,
    70,70,70,70,5,69,29,29,29,29,29,29,29,29,17,17,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,68,68,68,68,68,68,17,17,17,68,17,68,68,69,
    8,8,8,8,8,8,8,8,8,8,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,69,69,69,69,69,5,5,5,17,17,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,69,69,69,69,69,69,69,69,69,69,69,70,6,29,29,29,29,29,29,29,29,29,29,29,17,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,
    69,69,69,70,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,5,70,70,69,69,69,69,70,70,69,69,70,70,
    6,17,17,17,17,17,17,17,17,17,17,17,17,17,29,67,8,8,8,8,8,8,8,8,8,8,29,29,29,29,17,17,
    68,68,68,68,68,69,67,68,68,68,68,68,68,68,68,68,8,8,8,8,8,8,8,8,8,8,68,68,68,68,68,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,69,69,69,69,69,69,70,70,69,69,70,70,69,69,29,29,29,29,29,29,29,29,29,
    68,68,68,69,68,68,68,68,68,68,68,68,69,70,29,29,8,8,8,8,8,8,8,8,8,8,29,29,17,17,17,17,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,67,68,68,68,68,68,68,21,21,21,68,70,69,70,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,68,69,69,69,68,68,69,69,68,68,68,68,68,69,5,
    68,5,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,68,68,67,17,17,
    68,68,68,68,68,68,68,68,68,68,68,70,69,69,70,70,17,17,68,67,67,70,5,29,29,29,29,29,29,29,29,29,
    29,68,68,68,68,68,68,29,29,68,68,68,68,68,68,29,29,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,29,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,20,67,67,67,67,
    65,65,65,65,65,65,65,65,65,67,20,20,29,29,29,29,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,70,70,69,70,70,69,70,70,17,6,5,29,29,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,29,29,29,29,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,
    27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,
    27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,
    27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,
    27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,27,
    28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,
    28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,
    28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,
    28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    65,65,65,65,65,65,65,29,29,29,29,29,29,29,29,29,29,29,29,65,65,65,65,65,29,29,29,29,29,68,69,68,
    68,68,68,68,68,68,68,68,68,18,68,68,68,68,68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,29,68,29,
    68,68,29,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,20,20,20,20,20,20,20,20,20,20,20,20,20,20,
    20,20,20,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,14,13,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,19,21,21,21,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,17,17,17,17,17,17,17,13,14,17,29,29,29,29,29,29,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,17,12,12,11,11,13,14,13,14,13,14,13,14,13,14,13,
    14,13,14,13,14,17,17,13,14,17,17,17,17,11,11,11,17,17,17,29,17,17,17,17,12,13,14,13,14,13,14,17,
    17,17,18,12,18,18,18,29,17,19,17,17,29,29,29,29,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,26,
    29,17,17,17,19,17,17,17,13,14,17,18,17,12,17,17,8,8,8,8,8,8,8,8,8,8,17,17,18,18,18,17,
    17,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,13,17,14,20,11,
    20,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,13,18,14,18,13,
    14,17,13,14,17,17,68,68,68,68,68,68,68,68,68,68,67,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,67,67,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,
    29,29,68,68,68,68,68,68,29,29,68,68,68,68,68,68,29,29,68,68,68,68,68,68,29,29,68,68,68,29,29,29,
    19,19,18,20,21,19,19,29,21,18,18,18,18,21,21,29,29,29,29,29,29,29,29,29,29,26,26,26,21,21,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,68,68,29,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,
    17,17,17,29,29,29,29,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,29,29,29,21,21,21,21,21,21,21,21,21,
    73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,
    73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,10,10,10,10,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,10,10,21,21,21,29,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,
    21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,5,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    5,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    10,10,10,10,29,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,73,68,68,68,68,68,68,68,68,73,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,69,69,69,69,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,17,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,29,29,29,29,68,68,68,68,68,68,68,68,17,73,73,73,73,73,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,
    8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,29,29,29,29,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,29,29,29,29,29,29,29,29,29,29,29,17,64,64,64,64,64,64,64,64,64,64,64,29,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,29,64,64,64,64,64,64,64,29,64,64,29,65,65,65,65,65,65,65,65,65,
    65,65,29,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,29,65,65,65,65,65,65,65,29,65,65,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    67,67,67,67,67,67,29,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,
    67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,29,67,67,67,67,67,67,67,67,67,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,29,29,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,68,68,29,29,29,68,29,29,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,17,10,10,10,10,10,10,10,10,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,21,21,10,10,10,10,10,10,10,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,
    29,29,29,29,29,29,29,10,10,10,10,10,10,10,10,10,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,68,68,29,29,29,29,29,10,10,10,10,10,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,10,10,10,10,10,10,29,29,29,17,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,17,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,10,10,68,68,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,29,29,10,10,10,10,10,10,10,10,10,10,10,10,10,10,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,
    68,69,69,69,29,69,69,29,29,29,29,29,69,69,69,69,68,68,68,68,29,68,68,68,29,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,5,5,5,29,29,29,29,5,
    10,10,10,10,10,10,10,10,10,29,29,29,29,29,29,29,17,17,17,17,17,17,17,17,17,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,10,10,17,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,10,10,10,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,21,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,5,5,29,29,29,29,10,10,10,10,10,17,17,17,17,17,17,17,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,17,17,17,17,17,17,17,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,10,10,10,10,10,10,10,10,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,10,10,10,10,10,10,10,10,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,17,17,17,17,29,29,29,
    29,29,29,29,29,29,29,29,29,10,10,10,10,10,10,10,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,29,29,29,29,29,29,29,29,29,29,29,29,29,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,29,29,29,29,29,29,29,10,10,10,10,10,10,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,69,69,69,69,29,29,29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,29,69,69,12,29,29,68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,5,5,5,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,10,10,10,
    10,10,10,10,10,10,10,68,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,5,5,5,5,5,5,5,5,5,5,5,10,10,10,10,17,17,17,17,17,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,5,5,5,5,17,17,17,17,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,10,10,10,10,10,10,10,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,
    70,69,70,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,69,69,69,69,69,69,69,
    69,69,69,69,69,69,5,17,17,17,17,17,17,17,29,29,29,29,10,10,10,10,10,10,10,10,10,10,10,10,10,10,
    10,10,10,10,10,10,8,8,8,8,8,8,8,8,8,8,5,68,68,69,69,68,29,29,29,29,29,29,29,29,29,5,
    69,69,70,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,70,70,70,69,69,69,69,70,70,5,5,17,17,26,17,17,
    17,17,69,29,29,29,29,29,29,29,29,29,29,26,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    69,69,69,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,69,69,69,69,69,70,69,69,69,69,69,69,5,5,29,8,8,8,8,8,8,8,8,8,8,
    17,17,17,17,68,70,70,68,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,5,17,17,68,29,29,29,29,29,29,29,29,29,
    69,69,70,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,70,70,70,69,69,69,69,69,69,69,69,69,70,
    6,68,68,68,68,17,17,17,17,5,5,5,5,17,70,69,8,8,8,8,8,8,8,8,8,8,68,17,68,17,17,17,
    29,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,70,70,70,69,69,69,70,70,69,6,5,69,17,17,17,17,17,17,69,68,
    68,69,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,29,68,29,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,68,
    68,68,68,68,68,68,68,68,68,17,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,
    70,70,70,69,69,69,69,69,69,5,5,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    69,69,70,70,29,68,68,68,68,68,68,68,68,29,29,68,68,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,29,68,68,29,68,68,68,68,68,29,5,5,68,70,70,
    69,70,70,70,70,29,29,70,70,29,29,70,70,6,29,29,68,29,29,29,29,29,29,70,29,29,29,29,29,68,68,68,
    68,68,70,70,29,29,5,5,5,5,5,5,5,29,29,29,5,5,5,5,5,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,70,70,70,69,69,69,69,69,69,69,69,
    70,70,5,69,69,70,5,68,68,68,68,17,17,17,17,17,8,8,8,8,8,8,8,8,8,8,17,17,29,17,5,68,
    68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,70,70,70,69,69,69,69,69,69,70,69,70,70,70,70,69,
    69,70,5,5,68,68,17,68,29,29,29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,70,70,70,69,69,69,69,29,29,70,70,70,70,69,69,70,5,
    5,17,17,17,17,17,17,17,17,17,17,17,17,17,17,17,17,17,17,17,17,17,17,17,68,68,68,68,69,69,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,70,70,70,69,69,69,69,69,69,69,69,70,70,69,70,5,
    69,17,17,17,68,29,29,29,29,29,29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    17,17,17,17,17,17,17,17,17,17,17,17,17,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,69,70,69,70,70,69,69,69,69,69,69,6,5,68,17,29,29,29,29,29,29,
    8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,69,69,69,
    70,70,69,69,69,69,70,69,69,69,69,5,29,29,29,29,8,8,8,8,8,8,8,8,8,8,10,10,17,17,17,21,
    68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,70,70,70,69,69,69,69,69,69,69,69,69,70,5,5,17,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    8,8,8,8,8,8,8,8,8,8,10,10,10,10,10,10,10,10,10,29,29,29,29,29,29,29,29,29,29,29,29,68,
    68,68,68,68,68,68,68,29,29,68,29,29,68,68,68,68,68,68,68,68,29,68,68,29,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,70,70,70,70,70,70,29,70,70,29,29,69,69,6,5,68,
    70,68,70,5,17,17,17,29,29,29,29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,70,70,70,69,69,69,69,29,29,69,69,70,70,70,70,
    5,68,17,68,70,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,69,69,69,69,69,69,69,69,69,69,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,5,5,69,69,69,69,70,68,69,69,69,69,17,
    17,17,17,17,17,17,17,5,29,29,29,29,29,29,29,29,68,69,69,69,69,69,69,70,70,69,69,69,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,69,69,69,69,69,69,69,69,69,69,69,69,69,70,5,5,17,17,17,68,17,17,
    17,17,17,29,29,29,29,29,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,
    17,17,17,17,17,17,17,17,17,17,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,70,69,69,69,69,69,69,69,29,69,69,69,69,69,69,70,5,
    68,17,17,17,17,17,29,29,29,29,29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,10,10,10,10,10,10,
    10,10,10,10,10,10,10,10,10,10,10,10,10,29,29,29,17,17,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,69,69,69,69,69,69,69,69,69,69,69,69,69,69,
    69,69,69,69,69,69,69,69,29,70,69,69,69,69,69,69,69,70,69,69,70,69,69,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,29,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,69,69,69,69,69,29,29,29,69,29,69,69,29,69,
    69,69,5,69,5,5,68,69,29,29,29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    68,68,68,68,68,68,29,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,70,70,70,70,70,29,69,69,29,70,70,69,70,5,68,29,29,29,29,29,29,29,
    8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,69,69,70,70,17,17,29,29,29,29,29,29,29,
    69,69,68,70,68,68,68,68,68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,70,70,69,69,69,69,69,29,29,29,70,70,
    69,6,5,17,17,17,17,17,17,17,17,17,17,17,17,17,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,21,21,21,21,21,21,21,21,19,19,19,
    19,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,29,29,29,29,17,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,
    73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,
    73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,
    73,73,73,73,73,73,73,73,73,73,73,73,73,73,73,29,17,17,17,17,17,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,17,17,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,
    5,68,68,68,68,68,68,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,
    8,8,8,8,8,8,8,8,8,8,29,29,29,29,17,17,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,
    8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,5,5,5,5,5,17,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,5,5,5,5,5,5,5,17,17,17,17,17,21,21,21,21,
    67,67,67,67,17,21,29,29,29,29,29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,29,10,10,10,10,10,
    10,10,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,17,17,17,17,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,69,68,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,
    70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,70,
    70,70,70,70,70,70,70,70,29,29,29,29,29,29,29,69,69,69,69,67,67,67,67,67,67,67,67,67,67,67,67,67,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    67,67,17,67,5,29,29,29,29,29,29,29,29,29,29,29,70,70,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,67,67,67,67,29,67,67,67,67,67,67,67,29,67,67,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,68,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,68,68,68,29,29,68,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,68,68,68,68,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,
    68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,29,29,21,5,69,17,
    26,26,26,26,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,29,29,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,29,29,29,29,29,29,29,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,6,6,5,5,5,21,21,21,6,6,6,6,6,6,26,26,26,26,26,26,26,26,5,5,5,5,5,
    5,5,5,21,21,5,5,5,5,5,5,5,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,5,5,5,5,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,5,5,5,21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,29,29,29,29,29,29,29,29,29,29,29,29,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,29,29,29,29,29,29,29,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,65,65,65,65,65,65,65,29,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,64,29,64,64,
    29,29,64,29,29,64,64,29,29,64,64,64,64,29,64,64,64,64,64,64,64,64,65,65,65,65,29,65,29,65,65,65,
    65,65,65,65,29,65,65,65,65,65,65,65,65,65,65,65,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,64,64,29,64,64,64,64,29,29,64,64,64,64,64,64,64,64,29,64,64,64,64,64,64,64,29,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,64,64,29,64,64,64,64,29,
    64,64,64,64,64,29,64,29,29,29,64,64,64,64,64,64,64,29,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,29,29,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,18,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,18,65,65,65,65,
    65,65,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,18,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,18,65,65,65,65,65,65,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,18,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,18,65,65,65,65,65,65,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,18,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,65,65,65,65,65,18,65,65,65,65,65,65,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,64,64,64,64,64,64,64,18,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,18,65,65,65,65,65,65,64,65,29,29,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,
    8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,8,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,21,21,21,21,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,21,21,21,21,21,21,21,21,5,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,5,21,21,17,17,17,17,17,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,5,5,5,5,5,
    29,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    65,65,65,65,65,65,65,65,65,65,68,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,29,
    29,29,29,29,29,65,65,65,65,65,65,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    69,69,69,69,69,69,69,29,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,69,29,29,69,69,69,69,69,
    69,69,29,69,69,29,69,69,69,69,69,29,29,29,29,29,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,
    67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,67,
    67,67,67,67,67,67,67,67,67,67,67,67,67,67,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,69,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,5,5,5,5,5,5,5,67,67,67,67,67,67,67,29,29,
    8,8,8,8,8,8,8,8,8,8,29,29,29,29,68,21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,5,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,5,5,5,5,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,19,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,67,5,5,5,5,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,29,68,68,68,68,29,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,29,29,10,10,10,10,10,10,10,10,10,5,5,5,5,5,5,5,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,64,
    64,64,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,65,
    65,65,65,65,5,5,5,69,5,5,5,67,29,29,29,29,8,8,8,8,8,8,8,8,8,8,29,29,29,29,17,17,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,
    10,10,10,10,10,10,10,10,10,10,10,10,21,10,10,10,19,10,10,10,10,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,
    10,10,10,10,10,10,10,10,10,10,10,10,10,10,21,10,10,10,10,10,10,10,10,10,10,10,10,10,10,10,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    29,68,68,29,68,29,29,68,29,68,68,68,68,68,68,68,68,68,68,29,68,68,68,68,29,68,29,68,29,29,29,29,
    29,29,68,29,29,29,29,68,29,68,29,68,29,68,68,68,29,68,68,29,68,29,29,68,29,68,29,68,29,68,29,68,
    29,68,68,29,68,29,29,68,68,68,68,29,68,68,68,68,68,68,68,29,68,68,68,68,29,68,68,68,68,29,68,29,
    68,68,68,68,68,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,
    29,68,68,68,29,68,68,68,68,68,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,18,18,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,29,
    10,10,10,10,10,10,10,10,10,10,10,10,10,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,
    85,85,85,85,85,85,85,85,85,85,21,21,21,21,21,21,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,
    85,85,85,85,85,85,85,85,85,85,21,21,21,21,21,21,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,85,
    85,85,85,85,85,85,85,85,85,85,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,29,29,29,29,29,29,29,29,29,29,29,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,
    21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,21,21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,20,20,20,20,20,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,21,21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,
    21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,21,
    21,21,21,21,21,21,29,29,29,29,29,29,29,29,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,
    21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,29,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,21,
    21,21,21,21,21,21,21,21,21,21,21,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,8,8,8,8,8,8,8,8,8,8,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,
    68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,68,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    29,26,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,
    26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,
    26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,26,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,29,
    28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,
    28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,
    28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,
    28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,28,29,29,
};
/* mlstack__ulower_runs: 182 runs of {first code point, count | (step-1) << 15, delta} */
static const int32_t mlstack__ulower_runs[546] = {
    65,26,32,192,23,32,216,7,32,256,32792,1,
    304,1,-199,306,32771,1,313,32776,1,330,32791,1,
    376,1,-121,377,32771,1,385,1,210,386,32770,1,
    390,1,206,391,1,1,393,2,205,395,1,1,
    398,1,79,399,1,202,400,1,203,401,1,1,
    403,1,205,404,1,207,406,1,211,407,1,209,
    408,1,1,412,1,211,413,1,213,415,1,214,
    416,32771,1,422,1,218,423,1,1,425,1,218,
    428,1,1,430,1,218,431,1,1,433,2,217,
    435,32770,1,439,1,219,440,1,1,444,1,1,
    452,1,2,453,1,1,455,1,2,456,1,1,
    458,1,2,459,32777,1,478,32777,1,497,1,2,
    498,32770,1,502,1,-97,503,1,-56,504,32788,1,
    544,1,-130,546,32777,1,570,1,10795,571,1,1,
    573,1,-163,574,1,10792,577,1,1,579,1,-195,
    580,1,69,581,1,71,582,32773,1,880,32770,1,
    886,1,1,895,1,116,902,1,38,904,3,37,
    908,1,64,910,2,63,913,17,32,931,9,32,
    975,1,8,984,32780,1,1012,1,-60,1015,1,1,
    1017,1,-7,1018,1,1,1021,3,-130,1024,16,80,
    1040,32,32,1120,32785,1,1162,32795,1,1216,1,15,
    1217,32775,1,1232,32816,1,1329,38,48,4256,38,7264,
    4295,1,7264,4301,1,7264,5024,80,38864,5104,6,8,
    7312,43,-3008,7357,3,-3008,7680,32843,1,7838,1,-7615,
    7840,32816,1,7944,8,-8,7960,6,-8,7976,8,-8,
    7992,8,-8,8008,6,-8,8025,32772,-8,8040,8,-8,
    8072,8,-8,8088,8,-8,8104,8,-8,8120,2,-8,
    8122,2,-74,8124,1,-9,8136,4,-86,8140,1,-9,
    8152,2,-8,8154,2,-100,8168,2,-8,8170,2,-112,
    8172,1,-7,8184,2,-128,8186,2,-126,8188,1,-9,
    8486,1,-7517,8490,1,-8383,8491,1,-8262,8498,1,28,
    8544,16,16,8579,1,1,9398,26,26,11264,48,48,
    11360,1,1,11362,1,-10743,11363,1,-3814,11364,1,-10727,
    11367,32771,1,11373,1,-10780,11374,1,-10749,11375,1,-10783,
    11376,1,-10782,11378,1,1,11381,1,1,11390,2,-10815,
    11392,32818,1,11499,32770,1,11506,1,1,42560,32791,1,
    42624,32782,1,42786,32775,1,42802,32799,1,42873,32770,1,
    42877,1,-35332,42878,32773,1,42891,1,1,42893,1,-42280,
    42896,32770,1,42902,32778,1,42922,1,-42308,42923,1,-42319,
    42924,1,-42315,42925,1,-42305,42926,1,-42308,42928,1,-42258,
    42929,1,-42282,42930,1,-42261,42931,1,928,42932,32776,1,
    42948,1,-48,42949,1,-42307,42950,1,-35384,42951,32770,1,
    42960,1,1,42966,32770,1,42997,1,1,65313,26,32,
    66560,40,40,66736,36,40,66928,11,39,66940,15,39,
    66956,7,39,66964,2,39,68736,51,64,71840,32,32,
    93760,32,32,125184,34,34,
};
/* mlstack__uupper_runs: 200 runs of {first code point, count | (step-1) << 15, delta} */
static const int32_t mlstack__uupper_runs[600] = {
    97,26,-32,181,1,743,224,23,-32,248,7,-32,
    255,1,121,257,32792,-1,305,1,-232,307,32771,-1,
    314,32776,-1,331,32791,-1,378,32771,-1,383,1,-300,
    384,1,195,387,32770,-1,392,1,-1,396,1,-1,
    402,1,-1,405,1,97,409,1,-1,410,1,163,
    414,1,130,417,32771,-1,424,1,-1,429,1,-1,
    432,1,-1,436,32770,-1,441,1,-1,445,1,-1,
    447,1,56,453,1,-1,454,1,-2,456,1,-1,
    457,1,-2,459,1,-1,460,1,-2,462,32776,-1,
    477,1,-79,479,32777,-1,498,1,-1,499,1,-2,
    501,1,-1,505,32788,-1,547,32777,-1,572,1,-1,
    575,2,10815,578,1,-1,583,32773,-1,592,1,10783,
    593,1,10780,594,1,10782,595,1,-210,596,1,-206,
    598,2,-205,601,1,-202,603,1,-203,604,1,42319,
    608,1,-205,609,1,42315,611,1,-207,613,1,42280,
    614,1,42308,616,1,-209,617,1,-211,618,1,42308,
    619,1,10743,620,1,42305,623,1,-211,625,1,10749,
    626,1,-213,629,1,-214,637,1,10727,640,1,-218,
    642,1,42307,643,1,-218,647,1,42282,648,1,-218,
    649,1,-69,650,2,-217,652,1,-71,658,1,-219,
    669,1,42261,670,1,42258,837,1,84,881,32770,-1,
    887,1,-1,891,3,130,940,1,-38,941,3,-37,
    945,17,-32,962,1,-31,963,9,-32,972,1,-64,
    973,2,-63,976,1,-62,977,1,-57,981,1,-47,
    982,1,-54,983,1,-8,985,32780,-1,1008,1,-86,
    1009,1,-80,1010,1,7,1011,1,-116,1013,1,-96,
    1016,1,-1,1019,1,-1,1072,32,-32,1104,16,-80,
    1121,32785,-1,1163,32795,-1,1218,32775,-1,1231,1,-15,
    1233,32816,-1,1377,38,-48,4304,43,3008,4349,3,3008,
    5112,6,-8,7296,1,-6254,7297,1,-6253,7298,1,-6244,
    7299,2,-6242,7301,1,-6243,7302,1,-6236,7303,1,-6181,
    7304,1,35266,7545,1,35332,7549,1,3814,7566,1,35384,
    7681,32843,-1,7835,1,-59,7841,32816,-1,7936,8,8,
    7952,6,8,7968,8,8,7984,8,8,8000,6,8,
    8017,32772,8,8032,8,8,8048,2,74,8050,4,86,
    8054,2,100,8056,2,128,8058,2,112,8060,2,126,
    8064,8,8,8080,8,8,8096,8,8,8112,2,8,
    8115,1,9,8126,1,-7205,8131,1,9,8144,2,8,
    8160,2,8,8165,1,7,8179,1,9,8526,1,-28,
    8560,16,-16,8580,1,-1,9424,26,-26,11312,48,-48,
    11361,1,-1,11365,1,-10795,11366,1,-10792,11368,32771,-1,
    11379,1,-1,11382,1,-1,11393,32818,-1,11500,32770,-1,
    11507,1,-1,11520,38,-7264,11559,1,-7264,11565,1,-7264,
    42561,32791,-1,42625,32782,-1,42787,32775,-1,42803,32799,-1,
    42874,32770,-1,42879,32773,-1,42892,1,-1,42897,32770,-1,
    42900,1,48,42903,32778,-1,42933,32776,-1,42952,32770,-1,
    42961,1,-1,42967,32770,-1,42998,1,-1,43859,1,-928,
    43888,80,-38864,65345,26,-32,66600,40,-40,66776,36,-40,
    66967,11,-39,66979,15,-39,66995,7,-39,67003,2,-39,
    68800,51,-64,71872,32,-32,93792,32,-32,125218,34,-34,
};
/* mlstack__ufold_runs: 202 runs of {first code point, count | (step-1) << 15, delta} */
static const int32_t mlstack__ufold_runs[606] = {
    65,26,32,181,1,775,192,23,32,216,7,32,
    256,32792,1,306,32771,1,313,32776,1,330,32791,1,
    376,1,-121,377,32771,1,383,1,-268,385,1,210,
    386,32770,1,390,1,206,391,1,1,393,2,205,
    395,1,1,398,1,79,399,1,202,400,1,203,
    401,1,1,403,1,205,404,1,207,406,1,211,
    407,1,209,408,1,1,412,1,211,413,1,213,
    415,1,214,416,32771,1,422,1,218,423,1,1,
    425,1,218,428,1,1,430,1,218,431,1,1,
    433,2,217,435,32770,1,439,1,219,440,1,1,
    444,1,1,452,1,2,453,1,1,455,1,2,
    456,1,1,458,1,2,459,32777,1,478,32777,1,
    497,1,2,498,32770,1,502,1,-97,503,1,-56,
    504,32788,1,544,1,-130,546,32777,1,570,1,10795,
    571,1,1,573,1,-163,574,1,10792,577,1,1,
    579,1,-195,580,1,69,581,1,71,582,32773,1,
    837,1,116,880,32770,1,886,1,1,895,1,116,
    902,1,38,904,3,37,908,1,64,910,2,63,
    913,17,32,931,9,32,962,1,1,975,1,8,
    976,1,-30,977,1,-25,981,1,-15,982,1,-22,
    984,32780,1,1008,1,-54,1009,1,-48,1012,1,-60,
    1013,1,-64,1015,1,1,1017,1,-7,1018,1,1,
    1021,3,-130,1024,16,80,1040,32,32,1120,32785,1,
    1162,32795,1,1216,1,15,1217,32775,1,1232,32816,1,
    1329,38,48,4256,38,7264,4295,1,7264,4301,1,7264,
    5112,6,-8,7296,1,-6222,7297,1,-6221,7298,1,-6212,
    7299,2,-6210,7301,1,-6211,7302,1,-6204,7303,1,-6180,
    7304,1,35267,7312,43,-3008,7357,3,-3008,7680,32843,1,
    7835,1,-58,7838,1,-7615,7840,32816,1,7944,8,-8,
    7960,6,-8,7976,8,-8,7992,8,-8,8008,6,-8,
    8025,32772,-8,8040,8,-8,8072,8,-8,8088,8,-8,
    8104,8,-8,8120,2,-8,8122,2,-74,8124,1,-9,
    8126,1,-7173,8136,4,-86,8140,1,-9,8152,2,-8,
    8154,2,-100,8168,2,-8,8170,2,-112,8172,1,-7,
    8184,2,-128,8186,2,-126,8188,1,-9,8486,1,-7517,
    8490,1,-8383,8491,1,-8262,8498,1,28,8544,16,16,
    8579,1,1,9398,26,26,11264,48,48,11360,1,1,
    11362,1,-10743,11363,1,-3814,11364,1,-10727,11367,32771,1,
    11373,1,-10780,11374,1,-10749,11375,1,-10783,11376,1,-10782,
    11378,1,1,11381,1,1,11390,2,-10815,11392,32818,1,
    11499,32770,1,11506,1,1,42560,32791,1,42624,32782,1,
    42786,32775,1,42802,32799,1,42873,32770,1,42877,1,-35332,
    42878,32773,1,42891,1,1,42893,1,-42280,42896,32770,1,
    42902,32778,1,42922,1,-42308,42923,1,-42319,42924,1,-42315,
    42925,1,-42305,42926,1,-42308,42928,1,-42258,42929,1,-42282,
    42930,1,-42261,42931,1,928,42932,32776,1,42948,1,-48,
    42949,1,-42307,42950,1,-35384,42951,32770,1,42960,1,1,
    42966,32770,1,42997,1,1,43888,80,-38864,65313,26,32,
    66560,40,40,66736,36,40,66928,11,39,66940,15,39,
    66956,7,39,66964,2,39,68736,51,64,71840,32,32,
    93760,32,32,125184,34,34,
};
static const uint32_t mlstack__ulower_special[4] = {
    304,105,775,0,
};
static const uint32_t mlstack__umark_ranges[500] = {
    768,879,1155,1161,1425,1469,1471,1471,1473,1474,1476,1477,
    1479,1479,1552,1562,1611,1631,1648,1648,1750,1756,1759,1764,
    1767,1768,1770,1773,1809,1809,1840,1866,1958,1968,2027,2035,
    2070,2073,2075,2083,2085,2087,2089,2093,2137,2139,2260,2273,
    2275,2307,2362,2364,2366,2383,2385,2391,2402,2403,2433,2435,
    2492,2492,2494,2500,2503,2504,2507,2509,2519,2519,2530,2531,
    2561,2563,2620,2620,2622,2626,2631,2632,2635,2637,2641,2641,
    2672,2673,2677,2677,2689,2691,2748,2748,2750,2757,2759,2761,
    2763,2765,2786,2787,2817,2819,2876,2876,2878,2884,2887,2888,
    2891,2893,2902,2903,2914,2915,2946,2946,3006,3010,3014,3016,
    3018,3021,3031,3031,3072,3075,3134,3140,3142,3144,3146,3149,
    3157,3158,3170,3171,3201,3203,3260,3260,3262,3268,3270,3272,
    3274,3277,3285,3286,3298,3299,3329,3331,3390,3396,3398,3400,
    3402,3405,3415,3415,3426,3427,3458,3459,3530,3530,3535,3540,
    3542,3542,3544,3551,3570,3571,3633,3633,3636,3642,3655,3662,
    3761,3761,3764,3769,3771,3772,3784,3789,3864,3865,3893,3893,
    3895,3895,3897,3897,3902,3903,3953,3972,3974,3975,3981,3991,
    3993,4028,4038,4038,4139,4158,4182,4185,4190,4192,4194,4196,
    4199,4205,4209,4212,4226,4237,4239,4239,4250,4253,4957,4959,
    5906,5908,5938,5940,5970,5971,6002,6003,6068,6099,6109,6109,
    6155,6157,6277,6278,6313,6313,6432,6443,6448,6459,6679,6683,
    6741,6750,6752,6780,6783,6783,6832,6846,6912,6916,6964,6980,
    7019,7027,7040,7042,7073,7085,7142,7155,7204,7223,7376,7378,
    7380,7400,7405,7405,7412,7412,7416,7417,7616,7669,7675,7679,
    8400,8432,11503,11505,11647,11647,11744,11775,12330,12335,12441,12442,
    42607,42610,42612,42621,42654,42655,42736,42737,43010,43010,43014,43014,
    43019,43019,43043,43047,43136,43137,43188,43205,43232,43249,43302,43309,
    43335,43347,43392,43395,43443,43456,43493,43493,43561,43574,43587,43587,
    43596,43597,43643,43645,43696,43696,43698,43700,43703,43704,43710,43711,
    43713,43713,43755,43759,43765,43766,44003,44010,44012,44013,64286,64286,
    65024,65039,65056,65071,66045,66045,66272,66272,66422,66426,68097,68099,
    68101,68102,68108,68111,68152,68154,68159,68159,68325,68326,69632,69634,
    69688,69702,69759,69762,69808,69818,69888,69890,69927,69940,70003,70003,
    70016,70018,70067,70080,70089,70092,70188,70199,70206,70206,70367,70378,
    70400,70403,70460,70460,70462,70468,70471,70472,70475,70477,70487,70487,
    70498,70499,70502,70508,70512,70516,70709,70726,70832,70851,71087,71093,
    71096,71104,71132,71133,71216,71232,71339,71351,71453,71467,72751,72758,
    72760,72767,72850,72871,72873,72886,92912,92916,92976,92982,94033,94078,
    94095,94098,113821,113822,119141,119145,119149,119154,119163,119170,119173,119179,
    119210,119213,119362,119364,121344,121398,121403,121452,121461,121461,121476,121476,
    121499,121503,121505,121519,122880,122886,122888,122904,122907,122913,122915,122916,
    122918,122922,125136,125142,125252,125258,917760,917999,
};
static const uint32_t mlstack__uccc_ranges[999] = {
    768,788,230,789,789,232,790,793,220,794,794,232,
    795,795,216,796,800,220,801,802,202,803,806,220,
    807,808,202,809,819,220,820,824,1,825,828,220,
    829,836,230,837,837,240,838,838,230,839,841,220,
    842,844,230,845,846,220,848,850,230,851,854,220,
    855,855,230,856,856,232,857,858,220,859,859,230,
    860,860,233,861,862,234,863,863,233,864,865,234,
    866,866,233,867,879,230,1155,1159,230,1425,1425,220,
    1426,1429,230,1430,1430,220,1431,1433,230,1434,1434,222,
    1435,1435,220,1436,1441,230,1442,1447,220,1448,1449,230,
    1450,1450,220,1451,1452,230,1453,1453,222,1454,1454,228,
    1455,1455,230,1456,1456,10,1457,1457,11,1458,1458,12,
    1459,1459,13,1460,1460,14,1461,1461,15,1462,1462,16,
    1463,1463,17,1464,1464,18,1465,1466,19,1467,1467,20,
    1468,1468,21,1469,1469,22,1471,1471,23,1473,1473,24,
    1474,1474,25,1476,1476,230,1477,1477,220,1479,1479,18,
    1552,1559,230,1560,1560,30,1561,1561,31,1562,1562,32,
    1611,1611,27,1612,1612,28,1613,1613,29,1614,1614,30,
    1615,1615,31,1616,1616,32,1617,1617,33,1618,1618,34,
    1619,1620,230,1621,1622,220,1623,1627,230,1628,1628,220,
    1629,1630,230,1631,1631,220,1648,1648,35,1750,1756,230,
    1759,1762,230,1763,1763,220,1764,1764,230,1767,1768,230,
    1770,1770,220,1771,1772,230,1773,1773,220,1809,1809,36,
    1840,1840,230,1841,1841,220,1842,1843,230,1844,1844,220,
    1845,1846,230,1847,1849,220,1850,1850,230,1851,1852,220,
    1853,1853,230,1854,1854,220,1855,1857,230,1858,1858,220,
    1859,1859,230,1860,1860,220,1861,1861,230,1862,1862,220,
    1863,1863,230,1864,1864,220,1865,1866,230,2027,2033,230,
    2034,2034,220,2035,2035,230,2070,2073,230,2075,2083,230,
    2085,2087,230,2089,2093,230,2137,2139,220,2260,2273,230,
    2275,2275,220,2276,2277,230,2278,2278,220,2279,2280,230,
    2281,2281,220,2282,2284,230,2285,2287,220,2288,2288,27,
    2289,2289,28,2290,2290,29,2291,2293,230,2294,2294,220,
    2295,2296,230,2297,2298,220,2299,2303,230,2364,2364,7,
    2381,2381,9,2385,2385,230,2386,2386,220,2387,2388,230,
    2492,2492,7,2509,2509,9,2620,2620,7,2637,2637,9,
    2748,2748,7,2765,2765,9,2876,2876,7,2893,2893,9,
    3021,3021,9,3149,3149,9,3157,3157,84,3158,3158,91,
    3260,3260,7,3277,3277,9,3405,3405,9,3530,3530,9,
    3640,3641,103,3642,3642,9,3656,3659,107,3768,3769,118,
    3784,3787,122,3864,3865,220,3893,3893,220,3895,3895,220,
    3897,3897,216,3953,3953,129,3954,3954,130,3956,3956,132,
    3962,3965,130,3968,3968,130,3970,3971,230,3972,3972,9,
    3974,3975,230,4038,4038,220,4151,4151,7,4153,4154,9,
    4237,4237,220,4957,4959,230,5908,5908,9,5940,5940,9,
    6098,6098,9,6109,6109,230,6313,6313,228,6457,6457,222,
    6458,6458,230,6459,6459,220,6679,6679,230,6680,6680,220,
    6752,6752,9,6773,6780,230,6783,6783,220,6832,6836,230,
    6837,6842,220,6843,6844,230,6845,6845,220,6964,6964,7,
    6980,6980,9,7019,7019,230,7020,7020,220,7021,7027,230,
    7082,7083,9,7142,7142,7,7154,7155,9,7223,7223,7,
    7376,7378,230,7380,7380,1,7381,7385,220,7386,7387,230,
    7388,7391,220,7392,7392,230,7394,7400,1,7405,7405,220,
    7412,7412,230,7416,7417,230,7616,7617,230,7618,7618,220,
    7619,7625,230,7626,7626,220,7627,7628,230,7629,7629,234,
    7630,7630,214,7631,7631,220,7632,7632,202,7633,7669,230,
    7675,7675,230,7676,7676,233,7677,7677,220,7678,7678,230,
    7679,7679,220,8400,8401,230,8402,8403,1,8404,8407,230,
    8408,8410,1,8411,8412,230,8417,8417,230,8421,8422,1,
    8423,8423,230,8424,8424,220,8425,8425,230,8426,8427,1,
    8428,8431,220,8432,8432,230,11503,11505,230,11647,11647,9,
    11744,11775,230,12330,12330,218,12331,12331,228,12332,12332,232,
    12333,12333,222,12334,12335,224,12441,12442,8,42607,42607,230,
    42612,42621,230,42654,42655,230,42736,42737,230,43014,43014,9,
    43204,43204,9,43232,43249,230,43307,43309,220,43347,43347,9,
    43443,43443,7,43456,43456,9,43696,43696,230,43698,43699,230,
    43700,43700,220,43703,43704,230,43710,43711,230,43713,43713,230,
    43766,43766,9,44013,44013,9,64286,64286,26,65056,65062,230,
    65063,65069,220,65070,65071,230,66045,66045,220,66272,66272,220,
    66422,66426,230,68109,68109,220,68111,68111,230,68152,68152,230,
    68153,68153,1,68154,68154,220,68159,68159,9,68325,68325,230,
    68326,68326,220,69702,69702,9,69759,69759,9,69817,69817,9,
    69818,69818,7,69888,69890,230,69939,69940,9,70003,70003,7,
    70080,70080,9,70090,70090,7,70197,70197,9,70198,70198,7,
    70377,70377,7,70378,70378,9,70460,70460,7,70477,70477,9,
    70502,70508,230,70512,70516,230,70722,70722,9,70726,70726,7,
    70850,70850,9,70851,70851,7,71103,71103,9,71104,71104,7,
    71231,71231,9,71350,71350,9,71351,71351,7,71467,71467,9,
    72767,72767,9,92912,92916,1,92976,92982,230,113822,113822,1,
    119141,119142,216,119143,119145,1,119149,119149,226,119150,119154,216,
    119163,119170,220,119173,119177,230,119178,119179,220,119210,119213,230,
    119362,119364,230,122880,122886,230,122888,122904,230,122907,122913,230,
    122915,122916,230,122918,122922,230,125136,125142,220,125252,125257,230,
    125258,125258,7,
};
/* decompositions: 5738 entries */
static const uint32_t mlstack__udecomp_keys[5738] = {
    321,337,341,351,357,359,361,363,369,371,373,377,
    379,381,384,386,388,390,392,394,398,400,402,404,
    406,408,410,412,414,418,420,422,424,426,428,434,
    436,438,440,442,448,450,452,454,456,458,462,464,
    466,468,470,472,474,476,478,482,484,486,488,490,
    492,498,500,502,504,506,510,512,514,516,518,520,
    522,524,526,528,530,532,534,536,538,540,542,548,
    550,552,554,556,558,560,562,564,566,568,570,572,
    574,576,578,580,582,584,586,592,594,596,598,600,
    602,604,606,608,613,615,616,618,620,622,626,628,
    630,632,634,636,639,641,646,648,650,652,654,656,
    659,664,666,668,670,672,674,680,682,684,686,688,
    690,692,694,696,698,700,702,704,706,708,710,712,
    714,720,722,724,726,728,730,732,734,736,738,740,
    742,744,746,748,750,752,754,756,758,760,762,764,
    767,832,834,862,864,905,907,909,911,913,915,917,
    919,921,922,924,926,928,930,932,934,936,938,940,
    942,944,946,948,950,952,956,958,960,962,964,966,
    972,974,976,978,980,982,984,986,988,990,992,995,
    997,999,1000,1002,1008,1010,1012,1014,1016,1018,1020,1022,
    1024,1026,1028,1030,1032,1034,1036,1038,1040,1042,1044,1046,
    1048,1050,1052,1054,1056,1058,1060,1062,1064,1066,1068,1070,
    1072,1074,1076,1078,1084,1086,1100,1102,1104,1106,1108,1110,
    1112,1114,1116,1118,1120,1122,1124,1126,1377,1379,1381,1383,
    1385,1387,1389,1391,1393,1457,1459,1461,1463,1465,1467,1473,
    1475,1477,1479,1481,1664,1666,1670,1672,1768,1781,1788,1801,
    1802,1803,1804,1806,1808,1810,1812,1816,1820,1822,1824,1876,
    1878,1880,1882,1884,1886,1888,1940,1942,1944,1946,1948,1953,
    1955,1957,1958,1959,1960,1961,1963,1965,2017,2019,2021,2025,
    2027,2035,2048,2050,2054,2062,2072,2074,2076,2098,2162,2208,
    2210,2214,2222,2232,2234,2236,2284,2286,2434,2436,2464,2466,
    2468,2470,2476,2478,2484,2486,2488,2490,2492,2494,2500,2502,
    2504,2506,2508,2510,2516,2518,2520,2522,2524,2526,2528,2530,
    2532,2534,2536,2538,2544,2546,2831,3140,3142,3144,3146,3148,
    3307,3309,3311,3313,3456,3460,3494,4690,4706,4712,4784,4786,
    4788,4790,4792,4794,4796,4798,5014,5016,5048,5050,5054,5222,
    5228,5298,5300,5302,5308,5776,5782,5784,5816,5818,5928,6036,
    6038,6040,6288,6528,6542,6544,6548,6550,6804,6806,6808,7092,
    7096,7098,7100,7271,7527,7609,7611,7705,7814,7834,7844,7854,
    7864,7890,7910,7914,7916,7919,7920,7923,7938,7974,7994,8004,
    8014,8024,8050,8268,8697,13836,13840,13844,13848,13852,13860,13942,
    13946,13952,13954,13958,14937,14939,14941,14945,14947,14949,14951,14953,
    14955,14957,14959,14961,14963,14965,14969,14971,14973,14975,14977,14979,
    14981,14983,14985,14987,14989,14991,14993,14995,14997,14999,15001,15003,
    15007,15009,15011,15013,15015,15017,15019,15021,15023,15025,15027,15029,
    15031,15033,15035,15037,15039,15041,15043,15045,15047,15049,15051,15053,
    15055,15057,15059,15061,15089,15159,15161,15163,15165,15167,15169,15171,
    15173,15175,15177,15179,15181,15183,15185,15187,15189,15191,15193,15195,
    15197,15199,15201,15203,15205,15207,15209,15211,15213,15215,15217,15219,
    15221,15223,15225,15227,15229,15231,15360,15362,15364,15366,15368,15370,
    15372,15374,15376,15378,15380,15382,15384,15386,15388,15390,15392,15394,
    15396,15398,15400,15402,15404,15406,15408,15410,15412,15414,15416,15418,
    15420,15422,15424,15426,15428,15430,15432,15434,15436,15438,15440,15442,
    15444,15446,15448,15450,15452,15454,15456,15458,15460,15462,15464,15466,
    15468,15470,15472,15474,15476,15478,15480,15482,15484,15486,15488,15490,
    15492,15494,15496,15498,15500,15502,15504,15506,15508,15510,15512,15514,
    15516,15518,15520,15522,15524,15526,15528,15530,15532,15534,15536,15538,
    15540,15542,15544,15546,15548,15550,15552,15554,15556,15558,15560,15562,
    15564,15566,15568,15570,15572,15574,15576,15578,15580,15582,15584,15586,
    15588,15590,15592,15594,15596,15598,15600,15602,15604,15606,15608,15610,
    15612,15614,15616,15618,15620,15622,15624,15626,15628,15630,15632,15634,
    15636,15638,15640,15642,15644,15646,15648,15650,15652,15654,15656,15658,
    15660,15662,15664,15666,15669,15670,15671,15680,15682,15684,15686,15688,
    15690,15692,15694,15696,15698,15700,15702,15704,15706,15708,15710,15712,
    15714,15716,15718,15720,15722,15724,15726,15728,15730,15732,15734,15736,
    15738,15740,15742,15744,15746,15748,15750,15752,15754,15756,15758,15760,
    15762,15764,15766,15768,15770,15772,15774,15776,15778,15780,15782,15784,
    15786,15788,15790,15792,15794,15796,15798,15800,15802,15804,15806,15808,
    15810,15812,15814,15816,15818,15820,15822,15824,15826,15828,15830,15832,
    15834,15836,15838,15840,15842,15844,15846,15848,15850,15852,15854,15856,
    15858,15872,15874,15876,15878,15880,15882,15884,15886,15888,15890,15892,
    15894,15896,15898,15900,15902,15904,15906,15908,15910,15912,15914,15920,
    15922,15924,15926,15928,15930,15936,15938,15940,15942,15944,15946,15948,
    15950,15952,15954,15956,15958,15960,15962,15964,15966,15968,15970,15972,
    15974,15976,15978,15980,15982,15984,15986,15988,15990,15992,15994,15996,
    15998,16000,16002,16004,16006,16008,16010,16016,16018,16020,16022,16024,
    16026,16032,16034,16036,16038,16040,16042,16044,16046,16050,16054,16058,
    16062,16064,16066,16068,16070,16072,16074,16076,16078,16080,16082,16084,
    16086,16088,16090,16092,16094,16096,16098,16100,16102,16104,16106,16108,
    16110,16112,16114,16116,16118,16120,16122,16128,16130,16132,16134,16136,
    16138,16140,16142,16144,16146,16148,16150,16152,16154,16156,16158,16160,
    16162,16164,16166,16168,16170,16172,16174,16176,16178,16180,16182,16184,
    16186,16188,16190,16192,16194,16196,16198,16200,16202,16204,16206,16208,
    16210,16212,16214,16216,16218,16220,16222,16224,16226,16228,16230,16232,
    16236,16238,16240,16242,16244,16246,16248,16251,16252,16255,16257,16258,
    16259,16260,16262,16264,16268,16270,16272,16274,16276,16278,16280,16282,
    16283,16284,16285,16286,16287,16288,16290,16292,16294,16300,16302,16304,
    16306,16308,16310,16314,16315,16316,16317,16318,16319,16320,16322,16324,
    16326,16328,16330,16332,16334,16336,16338,16340,16342,16344,16346,16347,
    16348,16349,16350,16356,16358,16360,16364,16366,16368,16370,16372,16374,
    16376,16378,16379,16381,16384,16385,16386,16387,16389,16391,16393,16395,
    16397,16399,16401,16403,16405,16419,16431,16457,16459,16461,16479,16487,
    16489,16493,16495,16505,16509,16527,16529,16531,16559,16575,16609,16611,
    16617,16619,16621,16623,16625,16627,16629,16631,16633,16635,16637,16639,
    16641,16643,16645,16647,16649,16651,16653,16655,16657,16659,16661,16663,
    16665,16667,16669,16673,16675,16677,16679,16681,16683,16685,16687,16689,
    16691,16693,16695,16697,16721,16897,16899,16901,16903,16907,16909,16911,
    16915,16917,16919,16921,16923,16925,16927,16929,16931,16933,16935,16939,
    16941,16947,16949,16951,16953,16955,16961,16963,16965,16969,16972,16977,
    16980,16982,16985,16987,16991,16993,16995,16999,17001,17003,17005,17007,
    17009,17011,17015,17017,17019,17021,17023,17025,17035,17037,17039,17041,
    17043,17057,17059,17061,17063,17065,17067,17069,17071,17073,17075,17077,
    17079,17081,17083,17085,17087,17089,17091,17093,17095,17097,17099,17101,
    17103,17105,17107,17109,17111,17113,17115,17117,17119,17121,17123,17125,
    17127,17129,17131,17133,17135,17137,17139,17141,17143,17145,17147,17149,
    17151,17171,17204,17206,17244,17306,17308,17310,17416,17426,17432,17480,
    17484,17497,17499,17503,17505,17538,17544,17550,17554,17600,17604,17626,
    17628,17630,17632,17634,17640,17642,17648,17650,17664,17666,17672,17674,
    17680,17682,17752,17754,17756,17758,17856,17858,17860,17862,17876,17878,
    17880,17882,18002,18004,18625,18627,18629,18631,18633,18635,18637,18639,
    18641,18643,18645,18647,18649,18651,18653,18655,18657,18659,18661,18663,
    18665,18667,18669,18671,18673,18675,18677,18679,18681,18683,18685,18687,
    18689,18691,18693,18695,18697,18699,18701,18703,18705,18707,18709,18711,
    18713,18715,18717,18719,18721,18723,18725,18727,18729,18731,18733,18735,
    18737,18739,18741,18743,18745,18747,18749,18751,18753,18755,18757,18759,
    18761,18763,18765,18767,18769,18771,18773,18775,18777,18779,18781,18783,
    18785,18787,18789,18791,18793,18795,18797,18799,18801,18803,18805,18807,
    18809,18811,18813,18815,18817,18819,18821,18823,18825,18827,18829,18831,
    18833,18835,18837,18839,18841,18843,18845,18847,18849,18851,18853,18855,
    18857,18859,18861,18863,18865,18867,18869,18871,18873,18875,18877,18879,
    18881,18883,18885,18887,18889,18891,18893,18895,18897,18899,18901,21529,
    21737,21739,21741,21944,22777,22779,23263,23871,24039,24065,24067,24069,
    24071,24073,24075,24077,24079,24081,24083,24085,24087,24089,24091,24093,
    24095,24097,24099,24101,24103,24105,24107,24109,24111,24113,24115,24117,
    24119,24121,24123,24125,24127,24129,24131,24133,24135,24137,24139,24141,
    24143,24145,24147,24149,24151,24153,24155,24157,24159,24161,24163,24165,
    24167,24169,24171,24173,24175,24177,24179,24181,24183,24185,24187,24189,
    24191,24193,24195,24197,24199,24201,24203,24205,24207,24209,24211,24213,
    24215,24217,24219,24221,24223,24225,24227,24229,24231,24233,24235,24237,
    24239,24241,24243,24245,24247,24249,24251,24253,24255,24257,24259,24261,
    24263,24265,24267,24269,24271,24273,24275,24277,24279,24281,24283,24285,
    24287,24289,24291,24293,24295,24297,24299,24301,24303,24305,24307,24309,
    24311,24313,24315,24317,24319,24321,24323,24325,24327,24329,24331,24333,
    24335,24337,24339,24341,24343,24345,24347,24349,24351,24353,24355,24357,
    24359,24361,24363,24365,24367,24369,24371,24373,24375,24377,24379,24381,
    24383,24385,24387,24389,24391,24393,24395,24397,24399,24401,24403,24405,
    24407,24409,24411,24413,24415,24417,24419,24421,24423,24425,24427,24429,
    24431,24433,24435,24437,24439,24441,24443,24445,24447,24449,24451,24453,
    24455,24457,24459,24461,24463,24465,24467,24469,24471,24473,24475,24477,
    24479,24481,24483,24485,24487,24489,24491,24577,24685,24689,24691,24693,
    24728,24732,24736,24740,24744,24748,24752,24756,24760,24764,24768,24772,
    24778,24782,24786,24800,24802,24806,24808,24812,24814,24818,24820,24824,
    24826,24872,24887,24889,24892,24895,24920,24924,24928,24932,24936,24940,
    24944,24948,24952,24956,24960,24964,24970,24974,24978,24992,24994,24998,
    25000,25004,25006,25010,25012,25016,25018,25064,25070,25072,25074,25076,
    25084,25087,25187,25189,25191,25193,25195,25197,25199,25201,25203,25205,
    25207,25209,25211,25213,25215,25217,25219,25221,25223,25225,25227,25229,
    25231,25233,25235,25237,25239,25241,25243,25245,25247,25249,25251,25253,
    25255,25257,25259,25261,25263,25265,25267,25269,25271,25273,25275,25277,
    25279,25281,25283,25285,25287,25289,25291,25293,25295,25297,25299,25301,
    25303,25305,25307,25309,25311,25313,25315,25317,25319,25321,25323,25325,
    25327,25329,25331,25333,25335,25337,25339,25341,25343,25345,25347,25349,
    25351,25353,25355,25357,25359,25361,25363,25365,25367,25369,25371,25373,
    25381,25383,25385,25387,25389,25391,25393,25395,25397,25399,25401,25403,
    25405,25407,25601,25603,25605,25607,25609,25611,25613,25615,25617,25619,
    25621,25623,25625,25627,25629,25631,25633,25635,25637,25639,25641,25643,
    25645,25647,25649,25651,25653,25655,25657,25659,25661,25665,25667,25669,
    25671,25673,25675,25677,25679,25681,25683,25685,25687,25689,25691,25693,
    25695,25697,25699,25701,25703,25705,25707,25709,25711,25713,25715,25717,
    25719,25721,25723,25725,25727,25729,25731,25733,25735,25737,25739,25741,
    25743,25761,25763,25765,25767,25769,25771,25773,25775,25777,25779,25781,
    25783,25785,25787,25789,25791,25793,25795,25797,25799,25801,25803,25805,
    25807,25809,25811,25813,25815,25817,25819,25821,25823,25825,25827,25829,
    25831,25833,25835,25837,25839,25841,25843,25845,25847,25849,25851,25853,
    25857,25859,25861,25863,25865,25867,25869,25871,25873,25875,25877,25879,
    25881,25883,25885,25887,25889,25891,25893,25895,25897,25899,25901,25903,
    25905,25907,25909,25911,25913,25915,25917,25919,25921,25923,25925,25927,
    25929,25931,25933,25935,25937,25939,25941,25943,25945,25947,25949,25951,
    25953,25955,25957,25959,25961,25963,25965,25967,25969,25971,25973,25975,
    25977,25979,25981,25983,25985,25987,25989,25991,25993,25995,25997,25999,
    26001,26003,26005,26007,26009,26011,26013,26015,26017,26019,26021,26023,
    26025,26027,26029,26031,26033,26035,26037,26039,26041,26043,26045,26047,
    26049,26051,26053,26055,26057,26059,26061,26063,26065,26067,26069,26071,
    26073,26075,26077,26079,26081,26083,26085,26087,26089,26091,26093,26095,
    26097,26099,26101,26103,26105,26107,26109,26113,26115,26117,26119,26121,
    26123,26125,26127,26129,26131,26133,26135,26137,26139,26141,26143,26145,
    26147,26149,26151,26153,26155,26157,26159,26161,26163,26165,26167,26169,
    26171,26173,26175,26177,26179,26181,26183,26185,26187,26189,26191,26193,
    26195,26197,26199,26201,26203,26205,26207,26209,26211,26213,26215,26217,
    26219,26221,26223,26225,26227,26229,26231,26233,26235,26237,26239,26241,
    26243,26245,26247,26249,26251,26253,26255,26257,26259,26261,26263,26265,
    26267,26269,26271,26273,26275,26277,26279,26281,26283,26285,26287,26289,
    26291,26293,26295,26297,26299,26301,26303,26305,26307,26309,26311,26313,
    26315,26317,26319,26321,26323,26325,26327,26329,26331,26333,26335,26337,
    26339,26341,26343,26345,26347,26349,26351,26353,26355,26357,26359,26361,
    26363,26365,26367,26369,26371,26373,26375,26377,26379,26381,26383,26385,
    26387,26389,26391,26393,26395,26397,26399,26401,26403,26405,26407,26409,
    26411,26413,26415,26417,26419,26421,26423,26425,26427,26429,26431,26433,
    26435,26437,26439,26441,26443,26445,26447,26449,26451,26453,26455,26457,
    26459,26461,26463,26465,26467,26469,26471,26473,26475,26477,26479,26481,
    26483,26485,26487,26489,26491,26493,26495,26497,26499,26501,26503,26505,
    26507,26509,26511,26513,26515,26517,26519,26521,26523,26525,26527,26529,
    26531,26533,26535,26537,26539,26541,26543,26545,26547,26549,26551,26553,
    26555,26557,26559,26561,26563,26565,26567,26569,26571,26573,26575,26577,
    26579,26581,26583,26585,26587,26589,26591,26593,26595,26597,26599,26601,
    26603,26605,26607,26609,26611,26613,26615,26617,26619,26621,26623,85305,
    85307,85729,86001,86003,87737,87739,87741,87743,127488,127490,127492,127494,
    127496,127498,127500,127502,127504,127506,127508,127510,127512,127514,127516,127518,
    127520,127522,127524,127526,127528,127530,127532,127534,127536,127538,127540,127542,
    127544,127546,127548,127550,127552,127554,127556,127558,127560,127562,127564,127566,
    127568,127570,127572,127574,127576,127578,127580,127582,127584,127586,127588,127590,
    127592,127594,127596,127598,127600,127602,127604,127606,127608,127610,127612,127614,
    127616,127618,127620,127622,127624,127626,127628,127630,127632,127634,127636,127638,
    127640,127642,127644,127646,127648,127650,127652,127654,127656,127658,127660,127662,
    127664,127666,127668,127670,127672,127674,127676,127678,127680,127682,127684,127686,
    127688,127690,127692,127694,127696,127698,127700,127702,127704,127706,127708,127710,
    127712,127714,127716,127718,127720,127722,127724,127726,127728,127730,127732,127734,
    127736,127738,127740,127742,127744,127746,127748,127750,127752,127754,127756,127758,
    127760,127762,127764,127766,127768,127770,127772,127774,127776,127778,127780,127782,
    127784,127786,127788,127790,127792,127794,127796,127798,127800,127802,127804,127806,
    127808,127810,127812,127814,127816,127818,127820,127822,127824,127826,127828,127830,
    127832,127834,127836,127838,127840,127842,127844,127846,127848,127850,127852,127854,
    127856,127858,127860,127862,127864,127866,127868,127870,127872,127874,127876,127878,
    127880,127882,127884,127886,127888,127890,127892,127894,127896,127898,127900,127902,
    127904,127906,127908,127910,127912,127914,127916,127918,127920,127922,127924,127926,
    127928,127930,127932,127934,127936,127938,127940,127942,127944,127946,127948,127950,
    127952,127954,127956,127958,127960,127962,127964,127966,127968,127970,127972,127974,
    127976,127978,127980,127982,127984,127986,127988,127990,127992,127994,127996,127998,
    128000,128002,128004,128006,128008,128010,128012,128014,128016,128018,128020,128022,
    128024,128026,128032,128036,128042,128044,128046,128048,128050,128052,128054,128056,
    128058,128060,128064,128068,128074,128076,128084,128086,128088,128090,128092,128094,
    128096,128098,128100,128102,128104,128106,128108,128110,128112,128114,128116,128118,
    128120,128122,128124,128126,128128,128130,128132,128134,128136,128138,128140,128142,
    128144,128146,128148,128150,128152,128154,128156,128158,128160,128162,128164,128166,
    128168,128170,128172,128174,128176,128178,128180,128182,128184,128186,128188,128190,
    128192,128194,128196,128198,128200,128202,128204,128206,128208,128210,128212,128214,
    128216,128218,128224,128226,128228,128230,128232,128234,128236,128238,128240,128242,
    128244,128246,128248,128250,128252,128254,128256,128258,128260,128262,128264,128266,
    128268,128270,128272,128274,128276,128278,128280,128282,128284,128286,128288,128290,
    128292,128294,128296,128298,128300,128302,128304,128306,128308,128310,128312,128314,
    128316,128318,128320,128322,128324,128326,128328,128330,128332,128334,128336,128338,
    128340,128342,128344,128346,128348,128350,128352,128354,128356,128358,128360,128362,
    128364,128366,128368,128370,128372,128374,128376,128378,128380,128382,128384,128386,
    128388,128390,128392,128394,128396,128398,128400,128402,128404,128406,128408,128410,
    128412,128414,128416,128418,128420,128422,128424,128426,128428,128430,128432,128434,
    128513,128515,128517,128519,128521,128523,128525,128551,128553,128555,128557,128559,
    128570,128574,128577,128579,128581,128583,128585,128587,128589,128591,128593,128595,
    128596,128598,128600,128602,128604,128606,128608,128610,128612,128614,128616,128618,
    128620,128624,128626,128628,128630,128632,128636,128640,128642,128646,128648,128652,
    128654,128656,128658,128660,128662,128664,128666,128668,128671,128673,128675,128677,
    128679,128681,128683,128685,128687,128689,128691,128693,128695,128697,128699,128701,
    128703,128705,128707,128709,128711,128713,128715,128717,128719,128721,128723,128725,
    128727,128729,128731,128733,128735,128737,128739,128741,128743,128745,128747,128749,
    128751,128753,128755,128757,128759,128761,128763,128765,128767,128769,128771,128773,
    128775,128777,128779,128781,128783,128785,128787,128789,128791,128793,128795,128797,
    128799,128801,128803,128805,128807,128809,128811,128813,128815,128817,128819,128821,
    128823,128825,128827,128829,128831,128833,128835,128837,128839,128841,128843,128845,
    128847,128849,128851,128853,128855,128857,128859,128861,128863,128865,128867,128935,
    128937,128939,128941,128943,128945,128947,128949,128951,128953,128955,128957,128959,
    128961,128963,128965,128967,128969,128971,128973,128975,128977,128979,128981,128983,
    128985,128987,128989,128991,128993,128995,128997,128999,129001,129003,129005,129007,
    129009,129011,129013,129015,129017,129019,129021,129023,129025,129027,129029,129031,
    129033,129035,129037,129039,129041,129043,129045,129047,129049,129051,129053,129055,
    129057,129059,129061,129063,129065,129067,129069,129071,129073,129075,129077,129079,
    129081,129083,129085,129087,129089,129091,129093,129095,129097,129099,129101,129103,
    129105,129107,129109,129111,129113,129115,129117,129119,129121,129123,129125,129127,
    129129,129131,129133,129135,129137,129139,129141,129143,129145,129147,129149,129151,
    129153,129155,129157,129159,129161,129163,129165,129167,129169,129171,129173,129175,
    129177,129179,129181,129183,129185,129187,129189,129191,129193,129195,129197,129199,
    129201,129203,129205,129207,129209,129211,129213,129215,129217,129219,129221,129223,
    129225,129227,129229,129231,129233,129235,129237,129239,129241,129243,129245,129247,
    129249,129251,129253,129255,129257,129259,129261,129263,129265,129267,129269,129271,
    129273,129275,129277,129279,129281,129283,129285,129287,129289,129291,129293,129295,
    129297,129299,129301,129303,129305,129307,129309,129311,129313,129315,129317,129319,
    129321,129323,129325,129327,129329,129331,129333,129335,129337,129339,129341,129343,
    129345,129347,129349,129351,129353,129355,129357,129359,129361,129363,129365,129367,
    129369,129371,129373,129375,129377,129379,129381,129383,129385,129387,129389,129391,
    129393,129395,129397,129399,129401,129403,129405,129407,129409,129411,129413,129415,
    129417,129419,129421,129423,129425,129427,129429,129431,129433,129435,129437,129439,
    129441,129443,129445,129447,129449,129451,129453,129455,129457,129459,129461,129463,
    129465,129467,129469,129471,129473,129475,129477,129479,129481,129483,129485,129487,
    129489,129491,129493,129495,129497,129499,129501,129503,129505,129507,129509,129511,
    129513,129515,129517,129519,129521,129523,129525,129527,129529,129531,129533,129535,
    129537,129539,129541,129543,129545,129547,129549,129551,129553,129555,129557,129559,
    129561,129563,129565,129567,129569,129571,129573,129575,129577,129579,129581,129583,
    129585,129587,129589,129591,129593,129595,129597,129599,129601,129603,129605,129607,
    129609,129611,129613,129615,129617,129619,129621,129623,129625,129627,129629,129631,
    129633,129635,129637,129639,129641,129643,129645,129647,129649,129651,129653,129655,
    129657,129659,129697,129699,129701,129703,129705,129707,129709,129711,129713,129715,
    129717,129719,129721,129723,129725,129727,129729,129731,129733,129735,129737,129739,
    129741,129743,129745,129747,129749,129751,129753,129755,129757,129759,129761,129763,
    129765,129767,129769,129771,129773,129775,129777,129779,129781,129783,129785,129787,
    129789,129791,129793,129795,129797,129799,129801,129803,129805,129807,129809,129811,
    129813,129815,129817,129819,129821,129823,129829,129831,129833,129835,129837,129839,
    129841,129843,129845,129847,129849,129851,129853,129855,129857,129859,129861,129863,
    129865,129867,129869,129871,129873,129875,129877,129879,129881,129883,129885,129887,
    129889,129891,129893,129895,129897,129899,129901,129903,129905,129907,129909,129911,
    129913,129915,129917,129919,129921,129923,129925,129927,129929,129931,129933,129935,
    130017,130019,130021,130023,130025,130027,130029,130031,130033,130035,130037,130039,
    130041,130081,130083,130085,130087,130089,130091,130093,130095,130097,130099,130145,
    130147,130149,130151,130153,130155,130157,130159,130161,130163,130165,130167,130169,
    130171,130173,130175,130177,130179,130181,130183,130185,130191,130193,130195,130197,
    130199,130201,130203,130205,130207,130209,130211,130213,130217,130219,130221,130223,
    130225,130227,130229,130231,130233,130235,130237,130239,130241,130243,130245,130247,
    130249,130251,130253,130257,130259,130261,130263,130273,130275,130277,130281,130285,
    130287,130289,130291,130293,130295,130297,130299,130301,130303,130305,130307,130309,
    130311,130313,130315,130317,130319,130321,130323,130325,130327,130329,130331,130333,
    130335,130337,130339,130341,130343,130345,130347,130349,130351,130353,130355,130357,
    130359,130361,130363,130365,130367,130369,130371,130373,130375,130377,130379,130381,
    130383,130385,130387,130389,130391,130393,130395,130397,130399,130401,130403,130405,
    130407,130409,130411,130413,130415,130417,130419,130421,130423,130425,130427,130429,
    130431,130433,130435,130437,130439,130441,130443,130445,130447,130449,130451,130453,
    130455,130457,130459,130461,130463,130465,130467,130469,130471,130473,130475,130477,
    130479,130481,130483,130485,130487,130489,130491,130493,130495,130497,130499,130501,
    130503,130505,130507,130509,130511,130513,130515,130517,130519,130521,130523,130525,
    130527,130529,130531,130533,130535,130537,130539,130541,130543,130545,130547,130549,
    130551,130553,130563,130565,130567,130569,130571,130573,130575,130577,130579,130581,
    130583,130585,130587,130589,130591,130593,130595,130597,130599,130601,130603,130605,
    130607,130609,130611,130613,130615,130617,130619,130621,130623,130625,130627,130629,
    130631,130633,130635,130637,130639,130641,130643,130645,130647,130649,130651,130653,
    130655,130657,130659,130661,130663,130665,130667,130669,130671,130673,130675,130677,
    130679,130681,130683,130685,130687,130689,130691,130693,130695,130697,130699,130701,
    130703,130705,130707,130709,130711,130713,130715,130717,130719,130721,130723,130725,
    130727,130729,130731,130733,130735,130737,130739,130741,130743,130745,130747,130749,
    130751,130753,130755,130757,130759,130761,130763,130765,130767,130769,130771,130773,
    130775,130777,130779,130781,130783,130785,130787,130789,130791,130793,130795,130797,
    130799,130801,130803,130805,130807,130809,130811,130813,130815,130817,130819,130821,
    130823,130825,130827,130829,130831,130833,130835,130837,130839,130841,130843,130845,
    130847,130849,130851,130853,130855,130857,130859,130861,130863,130865,130867,130869,
    130871,130873,130875,130877,130879,130881,130883,130885,130887,130889,130891,130893,
    130895,130897,130899,130901,130903,130905,130907,130909,130911,130913,130915,130917,
    130919,130921,130923,130925,130927,130929,130931,130933,130935,130937,130939,130941,
    130949,130951,130953,130955,130957,130959,130965,130967,130969,130971,130973,130975,
    130981,130983,130985,130987,130989,130991,130997,130999,131001,131009,131011,131013,
    131015,131017,131019,131021,131025,131027,131029,131031,131033,131035,131037,139572,
    139576,139606,139868,139870,140950,140952,141686,141688,141692,142196,142198,238268,
    238270,238272,238274,238276,238278,238280,238454,238456,238458,238460,238462,238464,
    239617,239619,239621,239623,239625,239627,239629,239631,239633,239635,239637,239639,
    239641,239643,239645,239647,239649,239651,239653,239655,239657,239659,239661,239663,
    239665,239667,239669,239671,239673,239675,239677,239679,239681,239683,239685,239687,
    239689,239691,239693,239695,239697,239699,239701,239703,239705,239707,239709,239711,
    239713,239715,239717,239719,239721,239723,239725,239727,239729,239731,239733,239735,
    239737,239739,239741,239743,239745,239747,239749,239751,239753,239755,239757,239759,
    239761,239763,239765,239767,239769,239771,239773,239775,239777,239779,239781,239783,
    239785,239789,239791,239793,239795,239797,239799,239801,239803,239805,239807,239809,
    239811,239813,239815,239817,239819,239821,239823,239825,239827,239829,239831,239833,
    239835,239837,239839,239841,239843,239845,239847,239849,239851,239853,239855,239857,
    239859,239861,239863,239865,239867,239869,239871,239873,239875,239877,239879,239881,
    239883,239885,239887,239889,239891,239893,239895,239897,239899,239901,239903,239905,
    239907,239909,239911,239913,239915,239917,239919,239921,239923,239925,239927,239929,
    239933,239935,239941,239947,239949,239955,239957,239959,239961,239965,239967,239969,
    239971,239973,239975,239977,239979,239981,239983,239985,239987,239991,239995,239997,
    239999,240001,240003,240005,240007,240011,240013,240015,240017,240019,240021,240023,
    240025,240027,240029,240031,240033,240035,240037,240039,240041,240043,240045,240047,
    240049,240051,240053,240055,240057,240059,240061,240063,240065,240067,240069,240071,
    240073,240075,240077,240079,240081,240083,240085,240087,240089,240091,240093,240095,
    240097,240099,240101,240103,240105,240107,240109,240111,240113,240115,240117,240119,
    240121,240123,240125,240127,240129,240131,240133,240135,240137,240139,240143,240145,
    240147,240149,240155,240157,240159,240161,240163,240165,240167,240169,240173,240175,
    240177,240179,240181,240183,240185,240189,240191,240193,240195,240197,240199,240201,
    240203,240205,240207,240209,240211,240213,240215,240217,240219,240221,240223,240225,
    240227,240229,240231,240233,240235,240237,240239,240241,240243,240247,240249,240251,
    240253,240257,240259,240261,240263,240265,240269,240277,240279,240281,240283,240285,
    240287,240289,240293,240295,240297,240299,240301,240303,240305,240307,240309,240311,
    240313,240315,240317,240319,240321,240323,240325,240327,240329,240331,240333,240335,
    240337,240339,240341,240343,240345,240347,240349,240351,240353,240355,240357,240359,
    240361,240363,240365,240367,240369,240371,240373,240375,240377,240379,240381,240383,
    240385,240387,240389,240391,240393,240395,240397,240399,240401,240403,240405,240407,
    240409,240411,240413,240415,240417,240419,240421,240423,240425,240427,240429,240431,
    240433,240435,240437,240439,240441,240443,240445,240447,240449,240451,240453,240455,
    240457,240459,240461,240463,240465,240467,240469,240471,240473,240475,240477,240479,
    240481,240483,240485,240487,240489,240491,240493,240495,240497,240499,240501,240503,
    240505,240507,240509,240511,240513,240515,240517,240519,240521,240523,240525,240527,
    240529,240531,240533,240535,240537,240539,240541,240543,240545,240547,240549,240551,
    240553,240555,240557,240559,240561,240563,240565,240567,240569,240571,240573,240575,
    240577,240579,240581,240583,240585,240587,240589,240591,240593,240595,240597,240599,
    240601,240603,240605,240607,240609,240611,240613,240615,240617,240619,240621,240623,
    240625,240627,240629,240631,240633,240635,240637,240639,240641,240643,240645,240647,
    240649,240651,240653,240655,240657,240659,240661,240663,240665,240667,240669,240671,
    240673,240675,240677,240679,240681,240683,240685,240687,240689,240691,240693,240695,
    240697,240699,240701,240703,240705,240707,240709,240711,240713,240715,240717,240719,
    240721,240723,240725,240727,240729,240731,240733,240735,240737,240739,240741,240743,
    240745,240747,240749,240751,240753,240755,240757,240759,240761,240763,240765,240767,
    240769,240771,240773,240775,240777,240779,240781,240783,240785,240787,240789,240791,
    240793,240795,240797,240799,240801,240803,240805,240807,240809,240811,240813,240815,
    240817,240819,240821,240823,240825,240827,240829,240831,240833,240835,240837,240839,
    240841,240843,240845,240847,240849,240851,240853,240855,240857,240859,240861,240863,
    240865,240867,240869,240871,240873,240875,240877,240879,240881,240883,240885,240887,
    240889,240891,240893,240895,240897,240899,240901,240903,240905,240907,240909,240911,
    240913,240915,240917,240919,240921,240923,240925,240927,240929,240931,240933,240935,
    240937,240939,240941,240943,240945,240947,240949,240951,240953,240955,240957,240959,
    240961,240963,240965,240967,240969,240971,240977,240979,240981,240983,240985,240987,
    240989,240991,240993,240995,240997,240999,241001,241003,241005,241007,241009,241011,
    241013,241015,241017,241019,241021,241023,241025,241027,241029,241031,241033,241035,
    241037,241039,241041,241043,241045,241047,241049,241051,241053,241055,241057,241059,
    241061,241063,241065,241067,241069,241071,241073,241075,241077,241079,241081,241083,
    241085,241087,241089,241091,241093,241095,241097,241099,241101,241103,241105,241107,
    241109,241111,241113,241115,241117,241119,241121,241123,241125,241127,241129,241131,
    241133,241135,241137,241139,241141,241143,241145,241147,241149,241151,241153,241155,
    241157,241159,241161,241163,241165,241167,241169,241171,241173,241175,241177,241179,
    241181,241183,241185,241187,241189,241191,241193,241195,241197,241199,241201,241203,
    241205,241207,241209,241211,241213,241215,241217,241219,241221,241223,241225,241227,
    241229,241231,241233,241235,241237,241239,241241,241243,241245,241247,241249,241251,
    241253,241255,241257,241259,241261,241263,241265,241267,241269,241271,241273,241275,
    241277,241279,241281,241283,241285,241287,241289,241291,241293,241295,241297,241299,
    241301,241303,241305,241307,241309,241311,241313,241315,241317,241319,241321,241323,
    241325,241327,241329,241331,241333,241335,241337,241339,241341,241343,241345,241347,
    241349,241351,241353,241355,241357,241359,241361,241363,241365,241367,241369,241371,
    241373,241375,241377,241379,241381,241383,241385,241387,241389,241391,241393,241395,
    241397,241399,241401,241403,241405,241407,241409,241411,241413,241415,241417,241419,
    241421,241423,241425,241427,241429,241431,241433,241435,241437,241439,241441,241443,
    241445,241447,241449,241451,241453,241455,241457,241459,241461,241463,241465,241467,
    241469,241471,241473,241475,241477,241479,241481,241483,241485,241487,241489,241491,
    241493,241495,241497,241499,241501,241503,241505,241507,241509,241511,241513,241515,
    241517,241519,241521,241523,241525,241527,241529,241531,241533,241535,241537,241539,
    241541,241543,241545,241547,241549,241551,241553,241555,241557,241559,241565,241567,
    241569,241571,241573,241575,241577,241579,241581,241583,241585,241587,241589,241591,
    241593,241595,241597,241599,241601,241603,241605,241607,241609,241611,241613,241615,
    241617,241619,241621,241623,241625,241627,241629,241631,241633,241635,241637,241639,
    241641,241643,241645,241647,241649,241651,241653,241655,241657,241659,241661,241663,
    252929,252931,252933,252935,252939,252941,252943,252945,252947,252949,252951,252953,
    252955,252957,252959,252961,252963,252965,252967,252969,252971,252973,252975,252977,
    252979,252981,252983,252985,252987,252989,252991,252995,252997,253001,253007,253011,
    253013,253015,253017,253019,253021,253023,253025,253027,253029,253033,253035,253037,
    253039,253043,253047,253061,253071,253075,253079,253083,253085,253087,253091,253093,
    253097,253103,253107,253111,253115,253119,253123,253125,253129,253135,253137,253139,
    253141,253145,253147,253149,253151,253153,253155,253157,253161,253163,253165,253167,
    253171,253173,253175,253177,253181,253185,253187,253189,253191,253193,253195,253197,
    253199,253201,253203,253207,253209,253211,253213,253215,253217,253219,253221,253223,
    253225,253227,253229,253231,253233,253235,253237,253239,253251,253253,253255,253259,
    253261,253263,253265,253267,253271,253273,253275,253277,253279,253281,253283,253285,
    253287,253289,253291,253293,253295,253297,253299,253301,253303,254465,254467,254469,
    254471,254473,254475,254477,254479,254481,254483,254485,254497,254499,254501,254503,
    254505,254507,254509,254511,254513,254515,254517,254519,254521,254523,254525,254527,
    254529,254531,254533,254535,254537,254539,254541,254543,254545,254547,254549,254551,
    254553,254555,254557,254561,254563,254565,254567,254569,254571,254573,254575,254577,
    254579,254581,254583,254585,254587,254589,254591,254593,254595,254597,254599,254601,
    254603,254605,254607,254609,254611,254613,254615,254617,254619,254621,254623,254677,
    254679,254753,254977,254979,254981,255009,255011,255013,255015,255017,255019,255021,
    255023,255025,255027,255029,255031,255033,255035,255037,255039,255041,255043,255045,
    255047,255049,255051,255053,255055,255057,255059,255061,255063,255065,255067,255069,
    255071,255073,255075,255077,255079,255081,255083,255085,255087,255089,255091,255093,
    255095,255105,255107,255109,255111,255113,255115,255117,255119,255121,255137,255139,
    389120,389122,389124,389126,389128,389130,389132,389134,389136,389138,389140,389142,
    389144,389146,389148,389150,389152,389154,389156,389158,389160,389162,389164,389166,
    389168,389170,389172,389174,389176,389178,389180,389182,389184,389186,389188,389190,
    389192,389194,389196,389198,389200,389202,389204,389206,389208,389210,389212,389214,
    389216,389218,389220,389222,389224,389226,389228,389230,389232,389234,389236,389238,
    389240,389242,389244,389246,389248,389250,389252,389254,389256,389258,389260,389262,
    389264,389266,389268,389270,389272,389274,389276,389278,389280,389282,389284,389286,
    389288,389290,389292,389294,389296,389298,389300,389302,389304,389306,389308,389310,
    389312,389314,389316,389318,389320,389322,389324,389326,389328,389330,389332,389334,
    389336,389338,389340,389342,389344,389346,389348,389350,389352,389354,389356,389358,
    389360,389362,389364,389366,389368,389370,389372,389374,389376,389378,389380,389382,
    389384,389386,389388,389390,389392,389394,389396,389398,389400,389402,389404,389406,
    389408,389410,389412,389414,389416,389418,389420,389422,389424,389426,389428,389430,
    389432,389434,389436,389438,389440,389442,389444,389446,389448,389450,389452,389454,
    389456,389458,389460,389462,389464,389466,389468,389470,389472,389474,389476,389478,
    389480,389482,389484,389486,389488,389490,389492,389494,389496,389498,389500,389502,
    389504,389506,389508,389510,389512,389514,389516,389518,389520,389522,389524,389526,
    389528,389530,389532,389534,389536,389538,389540,389542,389544,389546,389548,389550,
    389552,389554,389556,389558,389560,389562,389564,389566,389568,389570,389572,389574,
    389576,389578,389580,389582,389584,389586,389588,389590,389592,389594,389596,389598,
    389600,389602,389604,389606,389608,389610,389612,389614,389616,389618,389620,389622,
    389624,389626,389628,389630,389632,389634,389636,389638,389640,389642,389644,389646,
    389648,389650,389652,389654,389656,389658,389660,389662,389664,389666,389668,389670,
    389672,389674,389676,389678,389680,389682,389684,389686,389688,389690,389692,389694,
    389696,389698,389700,389702,389704,389706,389708,389710,389712,389714,389716,389718,
    389720,389722,389724,389726,389728,389730,389732,389734,389736,389738,389740,389742,
    389744,389746,389748,389750,389752,389754,389756,389758,389760,389762,389764,389766,
    389768,389770,389772,389774,389776,389778,389780,389782,389784,389786,389788,389790,
    389792,389794,389796,389798,389800,389802,389804,389806,389808,389810,389812,389814,
    389816,389818,389820,389822,389824,389826,389828,389830,389832,389834,389836,389838,
    389840,389842,389844,389846,389848,389850,389852,389854,389856,389858,389860,389862,
    389864,389866,389868,389870,389872,389874,389876,389878,389880,389882,389884,389886,
    389888,389890,389892,389894,389896,389898,389900,389902,389904,389906,389908,389910,
    389912,389914,389916,389918,389920,389922,389924,389926,389928,389930,389932,389934,
    389936,389938,389940,389942,389944,389946,389948,389950,389952,389954,389956,389958,
    389960,389962,389964,389966,389968,389970,389972,389974,389976,389978,389980,389982,
    389984,389986,389988,389990,389992,389994,389996,389998,390000,390002,390004,390006,
    390008,390010,390012,390014,390016,390018,390020,390022,390024,390026,390028,390030,
    390032,390034,390036,390038,390040,390042,390044,390046,390048,390050,390052,390054,
    390056,390058,390060,390062,390064,390066,390068,390070,390072,390074,390076,390078,
    390080,390082,390084,390086,390088,390090,390092,390094,390096,390098,390100,390102,
    390104,390106,390108,390110,390112,390114,390116,390118,390120,390122,390124,390126,
    390128,390130,390132,390134,390136,390138,390140,390142,390144,390146,390148,390150,
    390152,390154,390156,390158,390160,390162,390164,390166,390168,390170,390172,390174,
    390176,390178,390180,390182,390184,390186,390188,390190,390192,390194,390196,390198,
    390200,390202,
};
static const uint16_t mlstack__udecomp_off[5739] = {
    0,1,3,4,6,7,8,10,11,13,14,15,18,21,24,26,
    28,30,32,34,36,38,40,42,44,46,48,50,52,54,56,58,
    60,62,64,66,68,70,72,74,76,78,80,82,84,86,88,90,
    92,94,96,98,100,102,104,106,108,110,112,114,116,118,120,122,
    124,126,128,130,132,134,136,138,140,142,144,146,148,150,152,154,
    156,158,160,162,164,166,168,170,172,174,176,178,180,182,184,186,
    188,190,192,194,196,198,200,202,204,206,208,210,212,214,216,218,
    220,222,224,226,228,230,232,234,236,238,240,242,244,246,248,250,
    252,254,256,258,260,262,264,266,268,270,272,274,276,278,280,282,
    284,286,288,290,292,294,296,298,300,302,304,306,308,310,312,314,
    316,318,320,322,324,326,328,330,332,334,336,338,340,342,344,346,
    348,350,352,354,356,357,359,361,363,365,368,371,374,376,378,380,
    382,384,386,388,390,392,394,396,398,400,402,405,408,411,414,417,
    420,423,426,429,432,435,438,440,442,444,446,448,450,452,454,457,
    460,462,464,466,468,470,472,474,476,478,480,483,486,488,490,492,
    494,496,498,500,502,504,506,508,510,512,514,516,518,520,522,524,
    526,528,530,532,534,536,538,540,542,544,546,548,550,552,554,556,
    558,560,562,565,568,571,574,576,578,581,584,586,588,589,590,591,
    592,593,594,595,596,597,599,601,603,605,607,609,610,611,612,613,
    614,615,616,617,619,620,622,623,625,627,630,632,633,635,637,639,
    641,643,645,648,650,652,654,656,658,660,663,665,667,669,671,673,
    674,675,676,678,680,682,684,685,686,687,688,689,690,691,692,694,
    696,698,700,702,704,706,708,710,712,714,716,718,720,722,724,726,
    728,730,732,734,736,738,740,742,744,746,748,750,752,754,756,758,
    760,762,764,766,768,770,772,774,776,778,780,782,784,786,788,790,
    792,794,796,798,800,802,804,806,808,810,812,814,816,818,820,822,
    824,826,828,830,832,834,836,838,840,842,844,846,848,850,852,854,
    856,858,860,862,864,866,868,870,872,874,876,878,880,882,884,886,
    888,890,892,894,897,899,901,903,905,907,910,912,914,916,918,920,
    921,923,925,927,929,931,933,935,937,939,942,944,947,949,951,953,
    955,957,959,961,963,964,966,968,970,972,974,976,978,980,982,984,
    986,987,988,989,990,991,992,993,994,995,996,997,998,999,1000,1001,
    1002,1003,1004,1005,1006,1007,1008,1009,1010,1011,1012,1013,1014,1015,1016,1017,
    1018,1019,1020,1021,1022,1023,1024,1025,1026,1027,1028,1029,1030,1031,1032,1033,
    1034,1035,1036,1037,1038,1039,1040,1041,1042,1043,1044,1045,1046,1047,1048,1049,
    1050,1051,1052,1053,1054,1055,1056,1057,1058,1059,1060,1061,1062,1063,1064,1065,
    1066,1067,1068,1069,1070,1071,1072,1073,1074,1075,1076,1077,1078,1079,1080,1081,
    1082,1083,1084,1086,1088,1090,1092,1094,1096,1098,1100,1103,1106,1108,1110,1112,
    1114,1116,1118,1120,1122,1124,1126,1129,1132,1135,1138,1140,1142,1144,1146,1149,
    1152,1154,1156,1158,1160,1162,1164,1166,1168,1170,1172,1174,1176,1178,1180,1182,
    1184,1187,1190,1192,1194,1196,1198,1200,1202,1204,1206,1209,1212,1214,1216,1218,
    1220,1222,1224,1226,1228,1230,1232,1234,1236,1238,1240,1242,1244,1246,1248,1251,
    1254,1257,1260,1263,1266,1269,1272,1274,1276,1278,1280,1282,1284,1286,1288,1291,
    1294,1296,1298,1300,1302,1304,1306,1309,1312,1315,1318,1321,1324,1326,1328,1330,
    1332,1334,1336,1338,1340,1342,1344,1346,1348,1350,1352,1355,1358,1361,1364,1366,
    1368,1370,1372,1374,1376,1378,1380,1382,1384,1386,1388,1390,1392,1394,1396,1398,
    1400,1402,1404,1406,1408,1410,1412,1414,1416,1418,1420,1422,1424,1426,1428,1430,
    1432,1434,1436,1438,1441,1444,1447,1450,1453,1456,1459,1462,1465,1468,1471,1474,
    1477,1480,1483,1486,1489,1492,1495,1498,1500,1502,1504,1506,1508,1510,1513,1516,
    1519,1522,1525,1528,1531,1534,1537,1540,1542,1544,1546,1548,1550,1552,1554,1556,
    1559,1562,1565,1568,1571,1574,1577,1580,1583,1586,1589,1592,1595,1598,1601,1604,
    1607,1610,1613,1616,1618,1620,1622,1624,1627,1630,1633,1636,1639,1642,1645,1648,
    1651,1654,1656,1658,1660,1662,1664,1666,1668,1670,1672,1674,1677,1680,1683,1686,
    1689,1692,1694,1696,1699,1702,1705,1708,1711,1714,1716,1718,1721,1724,1727,1730,
    1732,1734,1737,1740,1743,1746,1748,1750,1753,1756,1759,1762,1765,1768,1770,1772,
    1775,1778,1781,1784,1787,1790,1792,1794,1797,1800,1803,1806,1809,1812,1814,1816,
    1819,1822,1825,1828,1831,1834,1836,1838,1841,1844,1847,1850,1852,1854,1857,1860,
    1863,1866,1868,1870,1873,1876,1879,1882,1885,1888,1890,1893,1896,1899,1901,1903,
    1906,1909,1912,1915,1918,1921,1923,1925,1928,1931,1934,1937,1940,1943,1945,1947,
    1949,1951,1953,1955,1957,1959,1961,1963,1965,1967,1969,1971,1974,1977,1981,1985,
    1989,1993,1997,2001,2004,2007,2011,2015,2019,2023,2027,2031,2034,2037,2041,2045,
    2049,2053,2057,2061,2064,2067,2071,2075,2079,2083,2087,2091,2094,2097,2101,2105,
    2109,2113,2117,2121,2124,2127,2131,2135,2139,2143,2147,2151,2153,2155,2158,2160,
    2163,2165,2168,2170,2172,2174,2176,2178,2180,2181,2183,2185,2187,2190,2193,2195,
    2198,2200,2203,2205,2207,2209,2211,2213,2215,2218,2220,2223,2225,2228,2230,2232,
    2235,2238,2240,2243,2245,2247,2249,2251,2253,2256,2258,2261,2263,2266,2268,2270,
    2273,2276,2278,2280,2282,2285,2287,2289,2291,2293,2295,2297,2300,2302,2305,2306,
    2309,2311,2314,2316,2319,2321,2323,2325,2327,2329,2330,2332,2334,2335,2336,2337,
    2338,2339,2340,2341,2342,2343,2344,2345,2346,2347,2348,2350,2351,2353,2356,2357,
    2359,2362,2364,2367,2369,2371,2373,2375,2377,2381,2382,2383,2384,2385,2386,2387,
    2388,2389,2390,2391,2392,2393,2394,2395,2396,2397,2398,2399,2400,2401,2402,2403,
    2404,2405,2406,2407,2408,2409,2410,2411,2412,2413,2414,2415,2416,2417,2418,2419,
    2420,2421,2422,2423,2424,2426,2429,2432,2433,2435,2438,2441,2442,2444,2445,2446,
    2447,2448,2449,2450,2451,2452,2453,2454,2455,2457,2458,2459,2460,2461,2462,2464,
    2467,2469,2470,2471,2472,2473,2475,2476,2477,2478,2479,2480,2481,2482,2483,2484,
    2485,2486,2487,2490,2491,2492,2493,2494,2495,2496,2497,2498,2499,2500,2503,2506,
    2510,2513,2516,2519,2522,2525,2528,2531,2534,2537,2540,2543,2546,2548,2549,2551,
    2554,2556,2557,2559,2562,2566,2568,2569,2571,2574,2575,2576,2577,2578,2579,2581,
    2584,2586,2587,2589,2592,2596,2598,2599,2601,2604,2605,2606,2607,2608,2611,2613,
    2615,2617,2619,2621,2623,2625,2627,2629,2631,2633,2635,2638,2640,2643,2645,2647,
    2649,2651,2653,2655,2657,2659,2661,2663,2665,2667,2669,2671,2673,2675,2677,2679,
    2681,2683,2685,2687,2689,2691,2693,2695,2697,2699,2701,2703,2705,2707,2709,2710,
    2711,2712,2713,2714,2715,2716,2717,2718,2719,2720,2722,2724,2726,2728,2730,2732,
    2734,2736,2738,2740,2742,2745,2748,2751,2754,2757,2760,2763,2766,2769,2773,2777,
    2781,2785,2789,2793,2797,2801,2805,2809,2813,2815,2817,2819,2821,2823,2825,2827,
    2829,2831,2834,2837,2840,2843,2846,2849,2852,2855,2858,2861,2864,2867,2870,2873,
    2876,2879,2882,2885,2888,2891,2894,2897,2900,2903,2906,2909,2912,2915,2918,2921,
    2924,2927,2930,2933,2936,2939,2942,2943,2944,2945,2946,2947,2948,2949,2950,2951,
    2952,2953,2954,2955,2956,2957,2958,2959,2960,2961,2962,2963,2964,2965,2966,2967,
    2968,2969,2970,2971,2972,2973,2974,2975,2976,2977,2978,2979,2980,2981,2982,2983,
    2984,2985,2986,2987,2988,2989,2990,2991,2992,2993,2994,2995,2999,3002,3004,3007,
    3009,3010,3011,3012,3013,3014,3015,3016,3017,3018,3019,3020,3021,3022,3023,3024,
    3025,3026,3027,3028,3029,3030,3031,3032,3033,3034,3035,3036,3037,3038,3039,3040,
    3041,3042,3043,3044,3045,3046,3047,3048,3049,3050,3051,3052,3053,3054,3055,3056,
    3057,3058,3059,3060,3061,3062,3063,3064,3065,3066,3067,3068,3069,3070,3071,3072,
    3073,3074,3075,3076,3077,3078,3079,3080,3081,3082,3083,3084,3085,3086,3087,3088,
    3089,3090,3091,3092,3093,3094,3095,3096,3097,3098,3099,3100,3101,3102,3103,3104,
    3105,3106,3107,3108,3109,3110,3111,3112,3113,3114,3115,3116,3117,3118,3119,3120,
    3121,3122,3123,3124,3125,3126,3127,3128,3129,3130,3131,3132,3133,3134,3135,3136,
    3137,3138,3139,3140,3141,3142,3143,3144,3145,3146,3147,3148,3149,3150,3151,3152,
    3153,3154,3155,3156,3157,3158,3159,3160,3161,3162,3163,3164,3165,3166,3167,3168,
    3169,3170,3171,3172,3173,3174,3175,3176,3177,3178,3179,3180,3181,3182,3183,3184,
    3185,3186,3187,3188,3189,3190,3191,3192,3193,3194,3195,3196,3197,3198,3199,3200,
    3201,3202,3203,3204,3205,3206,3207,3208,3209,3210,3211,3212,3213,3214,3215,3216,
    3217,3218,3219,3220,3221,3222,3223,3224,3225,3226,3227,3228,3229,3230,3231,3232,
    3233,3235,3237,3239,3241,3243,3245,3247,3249,3251,3253,3255,3257,3259,3261,3263,
    3265,3267,3269,3271,3273,3275,3277,3279,3281,3283,3285,3287,3289,3291,3293,3295,
    3297,3299,3301,3303,3305,3307,3309,3311,3313,3315,3317,3319,3321,3323,3325,3327,
    3329,3331,3333,3335,3337,3339,3341,3343,3345,3347,3349,3351,3353,3355,3357,3358,
    3359,3360,3361,3362,3363,3364,3365,3366,3367,3368,3369,3370,3371,3372,3373,3374,
    3375,3376,3377,3378,3379,3380,3381,3382,3383,3384,3385,3386,3387,3388,3389,3390,
    3391,3392,3393,3394,3395,3396,3397,3398,3399,3400,3401,3402,3403,3404,3405,3406,
    3407,3408,3409,3410,3411,3412,3413,3414,3415,3416,3417,3418,3419,3420,3421,3422,
    3423,3424,3425,3426,3427,3428,3429,3430,3431,3432,3433,3434,3435,3436,3437,3438,
    3439,3440,3441,3442,3443,3444,3445,3446,3447,3448,3449,3450,3451,3452,3453,3454,
    3455,3456,3457,3458,3459,3460,3461,3462,3463,3464,3465,3468,3471,3474,3477,3480,
    3483,3486,3489,3492,3495,3498,3501,3504,3507,3511,3515,3519,3523,3527,3531,3535,
    3539,3543,3547,3551,3555,3559,3563,3567,3574,3580,3583,3586,3589,3592,3595,3598,
    3601,3604,3607,3610,3613,3616,3619,3622,3625,3628,3631,3634,3637,3640,3643,3646,
    3649,3652,3655,3658,3661,3664,3667,3670,3673,3676,3679,3682,3685,3688,3689,3690,
    3691,3692,3695,3697,3699,3701,3703,3705,3707,3709,3711,3713,3715,3717,3719,3721,
    3723,3725,3726,3727,3728,3729,3730,3731,3732,3733,3734,3735,3736,3737,3738,3739,
    3741,3743,3745,3747,3749,3751,3753,3755,3757,3759,3761,3763,3765,3767,3772,3776,
    3778,3779,3780,3781,3782,3783,3784,3785,3786,3787,3788,3789,3790,3791,3792,3793,
    3794,3795,3796,3797,3798,3799,3800,3801,3802,3803,3804,3805,3806,3807,3808,3809,
    3810,3811,3812,3813,3814,3815,3816,3817,3818,3819,3820,3821,3822,3823,3824,3825,
    3826,3827,3829,3831,3833,3835,3837,3839,3841,3843,3845,3847,3849,3851,3853,3855,
    3857,3859,3861,3863,3865,3867,3869,3871,3873,3875,3878,3881,3884,3886,3889,3891,
    3894,3895,3896,3897,3898,3899,3900,3901,3902,3903,3904,3905,3906,3907,3908,3909,
    3910,3911,3912,3913,3914,3915,3916,3917,3918,3919,3920,3921,3922,3923,3924,3925,
    3926,3927,3928,3929,3930,3931,3932,3933,3934,3935,3936,3937,3938,3939,3940,3941,
    3946,3950,3955,3958,3963,3966,3969,3975,3979,3982,3985,3988,3992,3996,4000,4004,
    4008,4012,4016,4022,4024,4030,4036,4041,4045,4051,4057,4061,4064,4067,4071,4075,
    4080,4085,4088,4091,4095,4098,4101,4103,4105,4108,4111,4117,4121,4126,4132,4136,
    4139,4142,4148,4152,4158,4161,4166,4169,4173,4176,4180,4185,4189,4194,4198,4200,
    4205,4208,4211,4215,4218,4221,4224,4229,4233,4235,4241,4244,4249,4253,4257,4260,
    4263,4267,4269,4273,4278,4280,4286,4289,4291,4293,4295,4297,4299,4301,4303,4305,
    4307,4309,4312,4315,4318,4321,4324,4327,4330,4333,4336,4339,4342,4345,4348,4351,
    4354,4357,4359,4361,4364,4366,4368,4370,4373,4376,4378,4380,4382,4384,4386,4390,
    4392,4394,4396,4398,4400,4402,4404,4406,4409,4413,4415,4417,4419,4421,4423,4425,
    4427,4430,4433,4436,4439,4441,4443,4445,4447,4449,4451,4453,4455,4457,4459,4462,
    4465,4467,4470,4473,4476,4478,4481,4484,4488,4490,4493,4496,4499,4502,4507,4513,
    4515,4517,4519,4521,4523,4525,4527,4529,4531,4533,4535,4537,4539,4541,4543,4545,
    4547,4549,4553,4555,4557,4559,4563,4566,4568,4570,4572,4574,4576,4578,4580,4582,
    4584,4586,4589,4591,4593,4596,4599,4601,4605,4608,4610,4612,4614,4616,4619,4622,
    4624,4626,4628,4630,4632,4634,4636,4638,4640,4643,4646,4649,4652,4655,4658,4661,
    4664,4667,4670,4673,4676,4679,4682,4685,4688,4691,4694,4697,4700,4703,4706,4709,
    4710,4711,4712,4713,4714,4715,4716,4717,4718,4719,4720,4721,4722,4723,4724,4725,
    4726,4727,4728,4729,4730,4731,4732,4733,4734,4735,4736,4737,4738,4739,4740,4741,
    4742,4743,4744,4745,4746,4747,4748,4749,4750,4751,4752,4753,4754,4755,4756,4757,
    4758,4759,4760,4761,4762,4763,4764,4765,4766,4767,4768,4769,4770,4771,4772,4773,
    4774,4775,4776,4777,4778,4779,4780,4781,4782,4783,4784,4785,4786,4787,4788,4789,
    4790,4791,4792,4793,4794,4795,4796,4797,4798,4799,4800,4801,4802,4803,4804,4805,
    4806,4807,4808,4809,4810,4811,4812,4813,4814,4815,4816,4817,4818,4819,4820,4821,
    4822,4823,4824,4825,4826,4827,4828,4829,4830,4831,4832,4833,4834,4835,4836,4837,
    4838,4839,4840,4841,4842,4843,4844,4845,4846,4847,4848,4849,4850,4851,4852,4853,
    4854,4855,4856,4857,4858,4859,4860,4861,4862,4863,4864,4865,4866,4867,4868,4869,
    4870,4871,4872,4873,4874,4875,4876,4877,4878,4879,4880,4881,4882,4883,4884,4885,
    4886,4887,4888,4889,4890,4891,4892,4893,4894,4895,4896,4897,4898,4899,4900,4901,
    4902,4903,4904,4905,4906,4907,4908,4909,4910,4911,4912,4913,4914,4915,4916,4917,
    4918,4919,4920,4921,4922,4923,4924,4925,4926,4927,4928,4929,4930,4931,4932,4933,
    4934,4935,4936,4937,4938,4939,4940,4941,4942,4943,4944,4945,4946,4947,4948,4949,
    4950,4951,4952,4953,4954,4955,4956,4957,4958,4959,4960,4961,4962,4963,4964,4965,
    4966,4967,4968,4969,4970,4971,4972,4973,4974,4975,4976,4977,4978,4979,4980,4981,
    4982,4983,4984,4985,4986,4987,4988,4989,4990,4991,4992,4993,4994,4995,4996,4997,
    4998,4999,5000,5001,5002,5003,5004,5005,5006,5007,5008,5009,5010,5011,5012,5013,
    5014,5015,5016,5017,5018,5019,5020,5021,5022,5023,5024,5025,5026,5027,5028,5029,
    5030,5031,5032,5033,5034,5035,5036,5037,5038,5039,5040,5041,5042,5043,5044,5045,
    5046,5047,5048,5049,5050,5051,5052,5053,5054,5055,5056,5057,5058,5059,5060,5061,
    5062,5063,5064,5065,5066,5067,5068,5069,5070,5072,5073,5074,5075,5076,5077,5078,
    5079,5080,5081,5082,5083,5084,5085,5086,5087,5088,5089,5090,5091,5092,5093,5094,
    5095,5096,5097,5098,5099,5100,5101,5102,5103,5104,5105,5106,5107,5108,5109,5110,
    5111,5112,5113,5114,5115,5116,5117,5118,5119,5120,5121,5122,5123,5124,5125,5126,
    5127,5128,5129,5130,5131,5132,5133,5134,5135,5136,5137,5138,5139,5140,5141,5142,
    5143,5144,5145,5146,5147,5148,5149,5150,5151,5152,5153,5154,5155,5156,5157,5158,
    5159,5160,5161,5162,5163,5164,5165,5166,5167,5168,5170,5172,5174,5175,5176,5177,
    5179,5181,5183,5184,5185,5187,5189,5191,5194,5197,5199,5201,5203,5205,5207,5209,
    5211,5213,5215,5216,5217,5218,5219,5220,5221,5222,5223,5224,5225,5227,5229,5232,
    5235,5237,5239,5241,5243,5245,5247,5249,5251,5253,5255,5257,5259,5261,5263,5265,
    5267,5269,5271,5273,5275,5277,5279,5281,5283,5285,5287,5289,5291,5293,5294,5295,
    5296,5297,5298,5299,5300,5301,5302,5303,5304,5305,5306,5307,5308,5309,5310,5311,
    5312,5313,5314,5315,5316,5317,5318,5319,5320,5321,5322,5323,5324,5325,5326,5327,
    5328,5329,5330,5331,5332,5333,5334,5335,5336,5337,5338,5339,5340,5341,5342,5343,
    5344,5345,5346,5347,5348,5349,5350,5351,5352,5353,5354,5355,5356,5357,5358,5359,
    5360,5361,5362,5363,5364,5365,5366,5367,5368,5369,5370,5371,5372,5373,5374,5375,
    5376,5377,5379,5381,5382,5383,5384,5385,5386,5387,5388,5389,5390,5391,5393,5395,
    5396,5397,5398,5399,5400,5401,5402,5403,5404,5405,5407,5408,5409,5410,5411,5412,
    5413,5414,5415,5416,5417,5418,5419,5422,5425,5428,5431,5434,5437,5440,5443,5446,
    5449,5452,5455,5458,5461,5464,5467,5470,5473,5474,5475,5476,5477,5480,5483,5486,
    5489,5492,5494,5496,5498,5500,5502,5504,5506,5508,5510,5512,5514,5516,5518,5520,
    5522,5524,5526,5528,5530,5532,5534,5536,5538,5540,5542,5544,5546,5548,5550,5552,
    5554,5556,5558,5560,5562,5564,5566,5568,5570,5572,5574,5576,5578,5580,5582,5584,
    5586,5588,5590,5592,5594,5596,5598,5600,5602,5604,5606,5608,5610,5612,5614,5616,
    5618,5620,5622,5624,5626,5628,5630,5632,5634,5636,5638,5640,5642,5644,5646,5648,
    5650,5652,5654,5656,5658,5660,5662,5664,5666,5668,5670,5673,5676,5679,5682,5685,
    5688,5691,5694,5697,5700,5703,5706,5708,5710,5712,5714,5716,5718,5720,5722,5724,
    5726,5728,5730,5732,5734,5736,5738,5740,5742,5744,5746,5748,5750,5752,5754,5756,
    5758,5760,5762,5764,5766,5768,5770,5772,5774,5776,5778,5780,5782,5784,5786,5788,
    5790,5792,5794,5796,5799,5802,5805,5808,5811,5813,5815,5817,5819,5821,5823,5825,
    5827,5829,5831,5833,5835,5837,5839,5841,5843,5845,5847,5849,5851,5853,5855,5857,
    5859,5861,5863,5865,5867,5869,5871,5873,5875,5877,5879,5881,5883,5885,5887,5889,
    5891,5893,5895,5897,5899,5901,5903,5905,5907,5909,5911,5913,5915,5917,5919,5921,
    5923,5925,5927,5929,5931,5933,5935,5937,5939,5941,5943,5945,5948,5951,5953,5955,
    5957,5959,5961,5963,5965,5967,5969,5971,5973,5975,5977,5979,5981,5983,5985,5988,
    5991,5994,5996,5998,6000,6002,6004,6006,6008,6010,6012,6014,6016,6018,6020,6022,
    6024,6026,6028,6030,6032,6034,6036,6038,6040,6042,6044,6046,6048,6050,6052,6054,
    6056,6058,6060,6062,6064,6066,6068,6070,6072,6074,6076,6078,6080,6082,6084,6086,
    6088,6090,6092,6094,6096,6098,6100,6102,6104,6106,6108,6110,6112,6114,6116,6118,
    6120,6122,6124,6126,6128,6130,6132,6134,6136,6138,6140,6143,6146,6149,6152,6155,
    6158,6161,6164,6167,6170,6173,6176,6179,6182,6185,6188,6191,6194,6197,6200,6203,
    6206,6209,6212,6215,6218,6221,6224,6227,6230,6233,6236,6239,6242,6245,6248,6251,
    6254,6257,6260,6263,6266,6269,6272,6275,6278,6281,6284,6287,6290,6293,6296,6299,
    6302,6305,6308,6311,6314,6317,6320,6323,6326,6329,6332,6335,6338,6341,6344,6347,
    6350,6353,6356,6359,6362,6365,6368,6371,6374,6377,6380,6383,6386,6389,6392,6395,
    6398,6401,6404,6407,6410,6413,6416,6419,6422,6425,6428,6431,6434,6437,6440,6443,
    6446,6449,6452,6455,6458,6461,6464,6467,6470,6473,6476,6479,6482,6485,6488,6491,
    6494,6497,6500,6504,6508,6512,6516,6520,6524,6528,6531,6549,6557,6561,6562,6563,
    6564,6565,6566,6567,6568,6569,6570,6573,6575,6576,6577,6578,6579,6580,6581,6582,
    6583,6584,6585,6586,6587,6588,6589,6590,6591,6592,6593,6594,6595,6596,6597,6599,
    6601,6603,6605,6606,6607,6608,6609,6610,6611,6612,6613,6614,6615,6616,6617,6618,
    6619,6620,6621,6622,6623,6624,6625,6626,6627,6628,6629,6630,6631,6632,6633,6634,
    6636,6638,6640,6642,6644,6646,6648,6650,6652,6654,6656,6658,6660,6662,6663,6665,
    6667,6669,6671,6673,6675,6677,6679,6681,6683,6685,6687,6688,6689,6690,6691,6692,
    6693,6694,6695,6696,6697,6698,6699,6700,6701,6702,6703,6704,6705,6706,6707,6708,
    6709,6710,6711,6712,6713,6714,6715,6716,6717,6718,6719,6720,6721,6722,6723,6724,
    6725,6726,6727,6728,6729,6730,6731,6732,6733,6734,6735,6736,6737,6738,6739,6740,
    6741,6742,6743,6744,6745,6746,6747,6748,6749,6750,6751,6752,6753,6754,6755,6756,
    6757,6758,6759,6760,6761,6762,6763,6764,6765,6766,6767,6768,6769,6770,6771,6772,
    6773,6774,6775,6776,6777,6778,6779,6780,6781,6782,6783,6784,6785,6786,6787,6788,
    6789,6790,6791,6794,6797,6800,6803,6806,6809,6811,6813,6814,6815,6816,6817,6818,
    6819,6820,6821,6822,6823,6824,6825,6826,6827,6828,6829,6830,6831,6832,6833,6834,
    6835,6836,6837,6838,6839,6840,6841,6842,6843,6844,6845,6846,6847,6848,6849,6850,
    6851,6852,6853,6854,6855,6856,6857,6858,6859,6860,6861,6862,6863,6864,6865,6866,
    6867,6868,6869,6870,6871,6872,6873,6874,6875,6876,6877,6878,6879,6880,6881,6882,
    6883,6884,6885,6886,6887,6888,6889,6890,6891,6892,6893,6894,6895,6896,6897,6898,
    6899,6900,6901,6902,6903,6904,6905,6906,6907,6908,6909,6910,6911,6912,6913,6914,
    6915,6916,6917,6918,6919,6920,6921,6922,6923,6924,6925,6926,6927,6928,6929,6930,
    6931,6932,6933,6934,6935,6936,6937,6938,6939,6940,6941,6942,6943,6944,6945,6946,
    6947,6948,6949,6950,6951,6952,6953,6954,6955,6956,6957,6958,6959,6960,6961,6962,
    6963,6964,6965,6966,6967,6968,6969,6970,6971,6972,6973,6974,6975,6976,6977,6978,
    6979,6980,6981,6982,6983,6984,6985,6986,6987,6988,6989,6990,6991,6992,6993,6994,
    6995,6996,6997,6998,6999,7000,7001,7002,7003,7004,7005,7006,7007,7008,7009,7010,
    7011,7012,7013,7014,7015,7016,7017,7018,7019,7020,7021,7022,7023,7024,7025,7026,
    7027,7029,7030,7031,7032,7033,7034,7035,7036,7037,7038,7039,7043,7047,7051,7055,
    7059,7063,7067,7071,7075,7079,7083,7087,7091,7095,7101,7107,7113,7119,7125,7129,
    7133,7139,7145,7151,7157,7158,7159,7160,7161,7162,7163,7164,7165,7166,7167,7168,
    7169,7170,7171,7172,7173,7174,7175,7176,7177,7178,7179,7180,7181,7182,7183,7184,
    7185,7186,7187,7188,7189,7190,7191,7192,7193,7194,7195,7196,7197,7198,7199,7200,
    7201,7202,7203,7204,7205,7206,7207,7208,7209,7210,7211,7212,7213,7214,7215,7216,
    7217,7218,7219,7220,7221,7222,7223,7224,7225,7226,7227,7228,7229,7230,7231,7232,
    7233,7234,7235,7236,7237,7238,7239,7240,7241,7242,7243,7244,7245,7246,7247,7248,
    7249,7250,7251,7252,7253,7254,7255,7256,7257,7258,7259,7260,7261,7262,7263,7264,
    7265,7266,7267,7268,7269,7270,7271,7272,7273,7274,7275,7276,7277,7278,7279,7280,
    7281,7282,7283,7284,7285,7286,7287,7288,7289,7290,7291,7292,7293,7294,7295,7296,
    7297,7298,7299,7300,7301,7302,7303,7304,7305,7306,7307,7308,7309,7310,7311,7312,
    7313,7314,7315,7316,7317,7318,7319,7320,7321,7322,7323,7324,7325,7326,7327,7328,
    7329,7330,7331,7332,7333,7334,7335,7336,7337,7338,7339,7340,7341,7342,7343,7344,
    7345,7346,7347,7348,7349,7350,7351,7352,7353,7354,7355,7356,7357,7358,7359,7360,
    7361,7362,7363,7364,7365,7366,7367,7368,7369,7370,7371,7372,7373,7374,7375,7376,
    7377,7378,7379,7380,7381,7382,7383,7384,7385,7386,7387,7388,7389,7390,7391,7392,
    7393,7394,7395,7396,7397,7398,7399,7400,7401,7402,7403,7404,7405,7406,7407,7408,
    7409,7410,7411,7412,7413,7414,7415,7416,7417,7418,7419,7420,7421,7422,7423,7424,
    7425,7426,7427,7428,7429,7430,7431,7432,7433,7434,7435,7436,7437,7438,7439,7440,
    7441,7442,7443,7444,7445,7446,7447,7448,7449,7450,7451,7452,7453,7454,7455,7456,
    7457,7458,7459,7460,7461,7462,7463,7464,7465,7466,7467,7468,7469,7470,7471,7472,
    7473,7474,7475,7476,7477,7478,7479,7480,7481,7482,7483,7484,7485,7486,7487,7488,
    7489,7490,7491,7492,7493,7494,7495,7496,7497,7498,7499,7500,7501,7502,7503,7504,
    7505,7506,7507,7508,7509,7510,7511,7512,7513,7514,7515,7516,7517,7518,7519,7520,
    7521,7522,7523,7524,7525,7526,7527,7528,7529,7530,7531,7532,7533,7534,7535,7536,
    7537,7538,7539,7540,7541,7542,7543,7544,7545,7546,7547,7548,7549,7550,7551,7552,
    7553,7554,7555,7556,7557,7558,7559,7560,7561,7562,7563,7564,7565,7566,7567,7568,
    7569,7570,7571,7572,7573,7574,7575,7576,7577,7578,7579,7580,7581,7582,7583,7584,
    7585,7586,7587,7588,7589,7590,7591,7592,7593,7594,7595,7596,7597,7598,7599,7600,
    7601,7602,7603,7604,7605,7606,7607,7608,7609,7610,7611,7612,7613,7614,7615,7616,
    7617,7618,7619,7620,7621,7622,7623,7624,7625,7626,7627,7628,7629,7630,7631,7632,
    7633,7634,7635,7636,7637,7638,7639,7640,7641,7642,7643,7644,7645,7646,7647,7648,
    7649,7650,7651,7652,7653,7654,7655,7656,7657,7658,7659,7660,7661,7662,7663,7664,
    7665,7666,7667,7668,7669,7670,7671,7672,7673,7674,7675,7676,7677,7678,7679,7680,
    7681,7682,7683,7684,7685,7686,7687,7688,7689,7690,7691,7692,7693,7694,7695,7696,
    7697,7698,7699,7700,7701,7702,7703,7704,7705,7706,7707,7708,7709,7710,7711,7712,
    7713,7714,7715,7716,7717,7718,7719,7720,7721,7722,7723,7724,7725,7726,7727,7728,
    7729,7730,7731,7732,7733,7734,7735,7736,7737,7738,7739,7740,7741,7742,7743,7744,
    7745,7746,7747,7748,7749,7750,7751,7752,7753,7754,7755,7756,7757,7758,7759,7760,
    7761,7762,7763,7764,7765,7766,7767,7768,7769,7770,7771,7772,7773,7774,7775,7776,
    7777,7778,7779,7780,7781,7782,7783,7784,7785,7786,7787,7788,7789,7790,7791,7792,
    7793,7794,7795,7796,7797,7798,7799,7800,7801,7802,7803,7804,7805,7806,7807,7808,
    7809,7810,7811,7812,7813,7814,7815,7816,7817,7818,7819,7820,7821,7822,7823,7824,
    7825,7826,7827,7828,7829,7830,7831,7832,7833,7834,7835,7836,7837,7838,7839,7840,
    7841,7842,7843,7844,7845,7846,7847,7848,7849,7850,7851,7852,7853,7854,7855,7856,
    7857,7858,7859,7860,7861,7862,7863,7864,7865,7866,7867,7868,7869,7870,7871,7872,
    7873,7874,7875,7876,7877,7878,7879,7880,7881,7882,7883,7884,7885,7886,7887,7888,
    7889,7890,7891,7892,7893,7894,7895,7896,7897,7898,7899,7900,7901,7902,7903,7904,
    7905,7906,7907,7908,7909,7910,7911,7912,7913,7914,7915,7916,7917,7918,7919,7920,
    7921,7922,7923,7924,7925,7926,7927,7928,7929,7930,7931,7932,7933,7934,7935,7936,
    7937,7938,7939,7940,7941,7942,7943,7944,7945,7946,7947,7948,7949,7950,7951,7952,
    7953,7954,7955,7956,7957,7958,7959,7960,7961,7962,7963,7964,7965,7966,7967,7968,
    7969,7970,7971,7972,7973,7974,7975,7976,7977,7978,7979,7980,7981,7982,7983,7984,
    7985,7986,7987,7988,7989,7990,7991,7992,7993,7994,7995,7996,7997,7998,7999,8000,
    8001,8002,8003,8004,8005,8006,8007,8008,8009,8010,8011,8012,8013,8014,8015,8016,
    8017,8018,8019,8020,8021,8022,8023,8024,8025,8026,8027,8028,8029,8030,8031,8032,
    8033,8034,8035,8036,8037,8038,8039,8040,8041,8042,8043,8044,8045,8046,8047,8048,
    8049,8050,8051,8052,8053,8054,8055,8056,8057,8058,8059,8060,8061,8062,8063,8064,
    8065,8066,8067,8068,8069,8070,8071,8072,8073,8074,8075,8076,8077,8078,8079,8080,
    8081,8082,8083,8084,8085,8086,8087,8088,8089,8090,8091,8092,8093,8094,8095,8096,
    8097,8098,8099,8100,8101,8102,8103,8104,8105,8106,8107,8108,8109,8110,8111,8112,
    8113,8114,8115,8116,8117,8118,8119,8120,8121,8122,8123,8124,8125,8126,8127,8128,
    8129,8130,8131,8132,8133,8134,8135,8136,8137,8138,8139,8140,8141,8142,8143,8144,
    8145,8146,8147,8148,8149,8150,8151,8152,8153,8154,8155,8156,8157,8158,8159,8160,
    8161,8162,8163,8164,8165,8166,8167,8168,8169,8170,8171,8172,8173,8174,8175,8176,
    8177,8178,8179,8180,8181,8182,8183,8184,8185,8186,8187,8188,8189,8190,8191,8192,
    8193,8194,8195,8196,8197,8198,8199,8200,8201,8202,8203,8204,8205,8206,8207,8208,
    8209,8210,8211,8212,8213,8214,8215,8216,8217,8218,8219,8220,8221,8222,8223,8224,
    8225,8226,8227,8228,8229,8230,8231,8232,8233,8234,8235,8236,8237,8238,8239,8240,
    8241,8242,8243,8244,8245,8246,8247,8248,8249,8250,8251,8252,8253,8254,8255,8256,
    8257,8258,8259,8260,8261,8262,8263,8264,8265,8266,8267,8268,8269,8270,8271,8272,
    8273,8274,8275,8276,8277,8278,8279,8280,8281,8282,8283,8284,8285,8286,8287,8288,
    8289,8290,8291,8292,8293,8294,8296,8298,8300,8302,8304,8306,8308,8310,8312,8314,
    8316,8319,8322,8325,8328,8331,8334,8337,8340,8343,8346,8349,8352,8355,8358,8361,
    8364,8367,8370,8373,8376,8379,8382,8385,8388,8391,8394,8397,8398,8399,8401,8403,
    8404,8405,8406,8407,8408,8409,8410,8411,8412,8413,8414,8415,8416,8417,8418,8419,
    8420,8421,8422,8423,8424,8425,8426,8427,8428,8429,8431,8433,8435,8437,8440,8442,
    8444,8446,8448,8450,8452,8453,8454,8455,8456,8458,8459,8460,8461,8462,8463,8464,
    8465,8466,8467,8468,8469,8470,8471,8472,8473,8474,8475,8476,8477,8478,8479,8480,
    8481,8482,8483,8484,8485,8486,8487,8488,8489,8490,8491,8492,8493,8494,8495,8496,
    8497,8498,8501,8504,8507,8510,8513,8516,8519,8522,8525,8526,8527,8528,8529,8530,
    8532,8533,8534,8535,8536,8537,8538,8539,8540,8541,8543,8544,8545,8546,8547,8549,
    8550,8551,8552,8554,8555,8556,8557,8558,8559,8561,8562,8563,8564,8565,8566,8567,
    8568,8569,8570,8571,8572,8573,8574,8575,8576,8577,8578,8579,8580,8581,8582,8583,
    8584,8586,8587,8588,8589,8591,8592,8593,8594,8595,8596,8597,8598,8599,8600,8601,
    8602,8603,8604,8605,8606,8607,8608,8609,8610,8611,8612,8613,8614,8615,8616,8617,
    8618,8619,8620,8621,8622,8623,8625,8626,8627,8628,8629,8630,8631,8633,8635,8636,
    8637,8638,8639,8640,8641,8642,8643,8644,8645,8647,8648,8649,8650,8651,8653,8654,
    8655,8656,8657,8658,8659,8660,8661,8662,8664,8665,8667,8668,8669,8670,8671,8672,
    8673,8674,8675,8676,8677,8678,8680,8681,8682,8683,8684,8685,8687,8688,8690,8692,
    8693,8694,8695,8696,8698,8700,8701,8702,8703,8704,8705,8706,8707,8708,8709,8710,
    8711,8713,8714,8715,8716,8717,8718,8719,8720,8721,8722,8723,8724,8725,8726,8727,
    8728,8729,8730,8731,8732,8734,8735,8736,8737,8738,8739,8741,8742,8743,8744,8745,
    8746,8747,8748,8749,8750,8751,8752,8754,8755,8756,8757,8758,8759,8760,8761,8762,
    8763,8764,8765,8766,8767,8768,8769,8770,8771,8772,8774,8775,8776,8777,8778,8779,
    8781,8782,8783,8784,8785,8786,8787,8788,8789,8791,8792,8793,8794,8796,8797,8798,
    8799,8800,8801,8802,8804,8806,8808,8809,8811,8812,8813,8814,8815,8816,8817,8818,
    8819,8820,8821,8823,8824,8825,8826,8827,8828,8829,8831,8832,8833,8835,8837,8838,
    8839,8840,8841,8842,8843,8844,8845,8846,8848,8849,8851,8852,8854,8855,8856,8857,
    8859,8860,8861,8863,8865,8866,8867,8868,8869,8870,8871,8872,8873,8874,8875,8876,
    8877,8878,8880,8881,8883,8884,8886,8887,8889,8891,8893,8894,8895,8896,8898,8900,
    8902,8904,8905,8906,8907,8908,8909,8910,8911,8912,8914,8915,8916,8917,8918,8920,
    8921,8923,8925,8926,8927,8928,8929,8930,8931,8933,8935,8937,8938,8939,8941,8942,
    8943,8944,8946,8947,8948,8949,8950,8951,8953,8954,8955,8956,8957,8958,8959,8961,
    8963,8964,8966,8967,8969,8970,8971,8972,8974,8976,8977,8979,8980,8982,8983,8984,
    8985,8986,8987,8988,8990,8992,8994,8996,8997,8998,8999,9000,9001,9002,9003,9004,
    9005,9006,9007,9008,9010,9011,9012,9013,9014,9015,9016,9017,9018,9019,9020,9021,
    9022,9024,9026,9028,9029,9030,9031,9032,9034,9035,9037,9038,9039,9041,9043,9044,
    9045,9046,9047,9048,9049,9050,9051,9052,9053,9054,9055,9056,9057,9058,9059,9060,
    9061,9062,9064,9065,9066,9067,9068,9069,9071,9073,9074,9075,9076,9077,9078,9079,
    9081,9082,9083,9084,9085,9087,9089,9090,9091,9092,9094,9095,9096,9098,9100,9101,
    9102,9103,9105,9106,9107,9108,9109,9110,9111,9112,9114,9115,9116,9117,9119,9120,
    9121,9122,9123,9125,9127,9128,9129,9130,9132,9133,9135,9136,9137,9138,9140,9141,
    9142,9143,9144,9145,9146,9147,9149,9150,9151,9152,9153,9154,9155,9157,9158,9160,
    9162,9164,9165,9166,9167,9168,9169,9170,9171,9172,9174,
};
static const uint16_t mlstack__udecomp_pool[9174] = {
    32,32,776,97,32,772,50,51,32,769,956,32,807,49,111,49,
    8260,52,49,8260,50,51,8260,52,65,768,65,769,65,770,65,771,
    65,776,65,778,67,807,69,768,69,769,69,770,69,776,73,768,
    73,769,73,770,73,776,78,771,79,768,79,769,79,770,79,771,
    79,776,85,768,85,769,85,770,85,776,89,769,97,768,97,769,
    97,770,97,771,97,776,97,778,99,807,101,768,101,769,101,770,
    101,776,105,768,105,769,105,770,105,776,110,771,111,768,111,769,
    111,770,111,771,111,776,117,768,117,769,117,770,117,776,121,769,
    121,776,65,772,97,772,65,774,97,774,65,808,97,808,67,769,
    99,769,67,770,99,770,67,775,99,775,67,780,99,780,68,780,
    100,780,69,772,101,772,69,774,101,774,69,775,101,775,69,808,
    101,808,69,780,101,780,71,770,103,770,71,774,103,774,71,775,
    103,775,71,807,103,807,72,770,104,770,73,771,105,771,73,772,
    105,772,73,774,105,774,73,808,105,808,73,775,73,74,105,106,
    74,770,106,770,75,807,107,807,76,769,108,769,76,807,108,807,
    76,780,108,780,76,183,108,183,78,769,110,769,78,807,110,807,
    78,780,110,780,700,110,79,772,111,772,79,774,111,774,79,779,
    111,779,82,769,114,769,82,807,114,807,82,780,114,780,83,769,
    115,769,83,770,115,770,83,807,115,807,83,780,115,780,84,807,
    116,807,84,780,116,780,85,771,117,771,85,772,117,772,85,774,
    117,774,85,778,117,778,85,779,117,779,85,808,117,808,87,770,
    119,770,89,770,121,770,89,776,90,769,122,769,90,775,122,775,
    90,780,122,780,115,79,795,111,795,85,795,117,795,68,90,780,
    68,122,780,100,122,780,76,74,76,106,108,106,78,74,78,106,
    110,106,65,780,97,780,73,780,105,780,79,780,111,780,85,780,
    117,780,85,776,772,117,776,772,85,776,769,117,776,769,85,776,
    780,117,776,780,85,776,768,117,776,768,65,776,772,97,776,772,
    65,775,772,97,775,772,198,772,230,772,71,780,103,780,75,780,
    107,780,79,808,111,808,79,808,772,111,808,772,439,780,658,780,
    106,780,68,90,68,122,100,122,71,769,103,769,78,768,110,768,
    65,778,769,97,778,769,198,769,230,769,216,769,248,769,65,783,
    97,783,65,785,97,785,69,783,101,783,69,785,101,785,73,783,
    105,783,73,785,105,785,79,783,111,783,79,785,111,785,82,783,
    114,783,82,785,114,785,85,783,117,783,85,785,117,785,83,806,
    115,806,84,806,116,806,72,780,104,780,65,775,97,775,69,807,
    101,807,79,776,772,111,776,772,79,771,772,111,771,772,79,775,
    111,775,79,775,772,111,775,772,89,772,121,772,104,614,106,114,
    633,635,641,119,121,32,774,32,775,32,778,32,808,32,771,32,
    779,611,108,115,120,661,768,769,787,776,769,697,32,837,59,32,
    769,168,769,32,776,769,913,769,183,917,769,919,769,921,769,927,
    769,933,769,937,769,953,776,769,921,776,933,776,945,769,949,769,
    951,769,953,769,965,776,769,953,776,965,776,959,769,965,769,969,
    769,946,952,933,978,769,933,769,978,776,933,776,966,960,954,961,
    962,920,949,931,1045,768,1045,776,1043,769,1030,776,1050,769,1048,768,
    1059,774,1048,774,1080,774,1077,768,1077,776,1075,769,1110,776,1082,769,
    1080,768,1091,774,1140,783,1141,783,1046,774,1078,774,1040,774,1072,774,
    1040,776,1072,776,1045,774,1077,774,1240,776,1241,776,1046,776,1078,776,
    1047,776,1079,776,1048,772,1080,772,1048,776,1080,776,1054,776,1086,776,
    1256,776,1257,776,1069,776,1101,776,1059,772,1091,772,1059,776,1091,776,
    1059,779,1091,779,1063,776,1095,776,1067,776,1099,776,1381,1410,1575,1619,
    1575,1620,1608,1620,1575,1621,1610,1620,1575,1652,1608,1652,1735,1652,1610,1652,
    1749,1620,1729,1620,1746,1620,2344,2364,2352,2364,2355,2364,2325,2364,2326,2364,
    2327,2364,2332,2364,2337,2364,2338,2364,2347,2364,2351,2364,2503,2494,2503,2519,
    2465,2492,2466,2492,2479,2492,2610,2620,2616,2620,2582,2620,2583,2620,2588,2620,
    2603,2620,2887,2902,2887,2878,2887,2903,2849,2876,2850,2876,2962,3031,3014,3006,
    3015,3006,3014,3031,3142,3158,3263,3285,3270,3285,3270,3286,3270,3266,3270,3266,
    3285,3398,3390,3399,3390,3398,3415,3545,3530,3545,3535,3545,3535,3530,3545,3551,
    3661,3634,3789,3762,3755,3737,3755,3745,3851,3906,4023,3916,4023,3921,4023,3926,
    4023,3931,4023,3904,4021,3953,3954,3953,3956,4018,3968,4018,3953,3968,4019,3968,
    4019,3953,3968,3953,3968,3986,4023,3996,4023,4001,4023,4006,4023,4011,4023,3984,
    4021,4133,4142,4316,6917,6965,6919,6965,6921,6965,6923,6965,6925,6965,6929,6965,
    6970,6965,6972,6965,6974,6965,6975,6965,6978,6965,65,198,66,68,69,398,
    71,72,73,74,75,76,77,78,79,546,80,82,84,85,87,97,
    592,593,7426,98,100,101,601,603,604,103,107,109,331,111,596,7446,
    7447,112,116,117,7453,623,118,7461,946,947,948,966,967,105,114,117,
    118,946,947,961,966,967,1085,594,99,597,240,604,102,607,609,613,
    616,617,618,7547,669,621,7557,671,625,624,626,627,628,629,632,642,
    643,427,649,650,7452,651,652,122,656,657,658,952,65,805,97,805,
    66,775,98,775,66,803,98,803,66,817,98,817,67,807,769,99,
    807,769,68,775,100,775,68,803,100,803,68,817,100,817,68,807,
    100,807,68,813,100,813,69,772,768,101,772,768,69,772,769,101,
    772,769,69,813,101,813,69,816,101,816,69,807,774,101,807,774,
    70,775,102,775,71,772,103,772,72,775,104,775,72,803,104,803,
    72,776,104,776,72,807,104,807,72,814,104,814,73,816,105,816,
    73,776,769,105,776,769,75,769,107,769,75,803,107,803,75,817,
    107,817,76,803,108,803,76,803,772,108,803,772,76,817,108,817,
    76,813,108,813,77,769,109,769,77,775,109,775,77,803,109,803,
    78,775,110,775,78,803,110,803,78,817,110,817,78,813,110,813,
    79,771,769,111,771,769,79,771,776,111,771,776,79,772,768,111,
    772,768,79,772,769,111,772,769,80,769,112,769,80,775,112,775,
    82,775,114,775,82,803,114,803,82,803,772,114,803,772,82,817,
    114,817,83,775,115,775,83,803,115,803,83,769,775,115,769,775,
    83,780,775,115,780,775,83,803,775,115,803,775,84,775,116,775,
    84,803,116,803,84,817,116,817,84,813,116,813,85,804,117,804,
    85,816,117,816,85,813,117,813,85,771,769,117,771,769,85,772,
    776,117,772,776,86,771,118,771,86,803,118,803,87,768,119,768,
    87,769,119,769,87,776,119,776,87,775,119,775,87,803,119,803,
    88,775,120,775,88,776,120,776,89,775,121,775,90,770,122,770,
    90,803,122,803,90,817,122,817,104,817,116,776,119,778,121,778,
    97,702,383,775,115,775,65,803,97,803,65,777,97,777,65,770,
    769,97,770,769,65,770,768,97,770,768,65,770,777,97,770,777,
    65,770,771,97,770,771,65,803,770,97,803,770,65,774,769,97,
    774,769,65,774,768,97,774,768,65,774,777,97,774,777,65,774,
    771,97,774,771,65,803,774,97,803,774,69,803,101,803,69,777,
    101,777,69,771,101,771,69,770,769,101,770,769,69,770,768,101,
    770,768,69,770,777,101,770,777,69,770,771,101,770,771,69,803,
    770,101,803,770,73,777,105,777,73,803,105,803,79,803,111,803,
    79,777,111,777,79,770,769,111,770,769,79,770,768,111,770,768,
    79,770,777,111,770,777,79,770,771,111,770,771,79,803,770,111,
    803,770,79,795,769,111,795,769,79,795,768,111,795,768,79,795,
    777,111,795,777,79,795,771,111,795,771,79,795,803,111,795,803,
    85,803,117,803,85,777,117,777,85,795,769,117,795,769,85,795,
    768,117,795,768,85,795,777,117,795,777,85,795,771,117,795,771,
    85,795,803,117,795,803,89,768,121,768,89,803,121,803,89,777,
    121,777,89,771,121,771,945,787,945,788,945,787,768,945,788,768,
    945,787,769,945,788,769,945,787,834,945,788,834,913,787,913,788,
    913,787,768,913,788,768,913,787,769,913,788,769,913,787,834,913,
    788,834,949,787,949,788,949,787,768,949,788,768,949,787,769,949,
    788,769,917,787,917,788,917,787,768,917,788,768,917,787,769,917,
    788,769,951,787,951,788,951,787,768,951,788,768,951,787,769,951,
    788,769,951,787,834,951,788,834,919,787,919,788,919,787,768,919,
    788,768,919,787,769,919,788,769,919,787,834,919,788,834,953,787,
    953,788,953,787,768,953,788,768,953,787,769,953,788,769,953,787,
    834,953,788,834,921,787,921,788,921,787,768,921,788,768,921,787,
    769,921,788,769,921,787,834,921,788,834,959,787,959,788,959,787,
    768,959,788,768,959,787,769,959,788,769,927,787,927,788,927,787,
    768,927,788,768,927,787,769,927,788,769,965,787,965,788,965,787,
    768,965,788,768,965,787,769,965,788,769,965,787,834,965,788,834,
    933,788,933,788,768,933,788,769,933,788,834,969,787,969,788,969,
    787,768,969,788,768,969,787,769,969,788,769,969,787,834,969,788,
    834,937,787,937,788,937,787,768,937,788,768,937,787,769,937,788,
    769,937,787,834,937,788,834,945,768,945,769,949,768,949,769,951,
    768,951,769,953,768,953,769,959,768,959,769,965,768,965,769,969,
    768,969,769,945,787,837,945,788,837,945,787,768,837,945,788,768,
    837,945,787,769,837,945,788,769,837,945,787,834,837,945,788,834,
    837,913,787,837,913,788,837,913,787,768,837,913,788,768,837,913,
    787,769,837,913,788,769,837,913,787,834,837,913,788,834,837,951,
    787,837,951,788,837,951,787,768,837,951,788,768,837,951,787,769,
    837,951,788,769,837,951,787,834,837,951,788,834,837,919,787,837,
    919,788,837,919,787,768,837,919,788,768,837,919,787,769,837,919,
    788,769,837,919,787,834,837,919,788,834,837,969,787,837,969,788,
    837,969,787,768,837,969,788,768,837,969,787,769,837,969,788,769,
    837,969,787,834,837,969,788,834,837,937,787,837,937,788,837,937,
    787,768,837,937,788,768,837,937,787,769,837,937,788,769,837,937,
    787,834,837,937,788,834,837,945,774,945,772,945,768,837,945,837,
    945,769,837,945,834,945,834,837,913,774,913,772,913,768,913,769,
    913,837,32,787,953,32,787,32,834,168,834,32,776,834,951,768,
    837,951,837,951,769,837,951,834,951,834,837,917,768,917,769,919,
    768,919,769,919,837,8127,768,32,787,768,8127,769,32,787,769,8127,
    834,32,787,834,953,774,953,772,953,776,768,953,776,769,953,834,
    953,776,834,921,774,921,772,921,768,921,769,8190,768,32,788,768,
    8190,769,32,788,769,8190,834,32,788,834,965,774,965,772,965,776,
    768,965,776,769,961,787,961,788,965,834,965,776,834,933,774,933,
    772,933,768,933,769,929,788,168,768,32,776,768,168,769,32,776,
    769,96,969,768,837,969,837,969,769,837,969,834,969,834,837,927,
    768,927,769,937,768,937,769,937,837,180,32,769,32,788,8194,32,
    8195,32,32,32,32,32,32,32,32,32,32,8208,32,819,46,46,
    46,46,46,46,32,8242,8242,8242,8242,8242,8245,8245,8245,8245,8245,33,
    33,32,773,63,63,63,33,33,63,8242,8242,8242,8242,32,48,105,
    52,53,54,55,56,57,43,8722,61,40,41,110,48,49,50,51,
    52,53,54,55,56,57,43,8722,61,40,41,97,101,111,120,601,
    104,107,108,109,110,112,115,116,82,115,97,47,99,97,47,115,
    67,176,67,99,47,111,99,47,117,400,176,70,103,72,72,72,
    104,295,73,73,76,108,78,78,111,80,81,82,82,82,83,77,
    84,69,76,84,77,90,937,90,75,65,778,66,67,101,69,70,
    77,111,1488,1489,1490,1491,105,70,65,88,960,947,915,928,8721,68,
    100,101,105,106,49,8260,55,49,8260,57,49,8260,49,48,49,8260,
    51,50,8260,51,49,8260,53,50,8260,53,51,8260,53,52,8260,53,
    49,8260,54,53,8260,54,49,8260,56,51,8260,56,53,8260,56,55,
    8260,56,49,8260,73,73,73,73,73,73,73,86,86,86,73,86,
    73,73,86,73,73,73,73,88,88,88,73,88,73,73,76,67,
    68,77,105,105,105,105,105,105,105,118,118,118,105,118,105,105,
    118,105,105,105,105,120,120,120,105,120,105,105,108,99,100,109,
    48,8260,51,8592,824,8594,824,8596,824,8656,824,8660,824,8658,824,8707,
    824,8712,824,8715,824,8739,824,8741,824,8747,8747,8747,8747,8747,8750,8750,
    8750,8750,8750,8764,824,8771,824,8773,824,8776,824,61,824,8801,824,8781,
    824,60,824,62,824,8804,824,8805,824,8818,824,8819,824,8822,824,8823,
    824,8826,824,8827,824,8834,824,8835,824,8838,824,8839,824,8866,824,8872,
    824,8873,824,8875,824,8828,824,8829,824,8849,824,8850,824,8882,824,8883,
    824,8884,824,8885,824,12296,12297,49,50,51,52,53,54,55,56,57,
    49,48,49,49,49,50,49,51,49,52,49,53,49,54,49,55,
    49,56,49,57,50,48,40,49,41,40,50,41,40,51,41,40,
    52,41,40,53,41,40,54,41,40,55,41,40,56,41,40,57,
    41,40,49,48,41,40,49,49,41,40,49,50,41,40,49,51,
    41,40,49,52,41,40,49,53,41,40,49,54,41,40,49,55,
    41,40,49,56,41,40,49,57,41,40,50,48,41,49,46,50,
    46,51,46,52,46,53,46,54,46,55,46,56,46,57,46,49,
    48,46,49,49,46,49,50,46,49,51,46,49,52,46,49,53,
    46,49,54,46,49,55,46,49,56,46,49,57,46,50,48,46,
    40,97,41,40,98,41,40,99,41,40,100,41,40,101,41,40,
    102,41,40,103,41,40,104,41,40,105,41,40,106,41,40,107,
    41,40,108,41,40,109,41,40,110,41,40,111,41,40,112,41,
    40,113,41,40,114,41,40,115,41,40,116,41,40,117,41,40,
    118,41,40,119,41,40,120,41,40,121,41,40,122,41,65,66,
    67,68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,
    83,84,85,86,87,88,89,90,97,98,99,100,101,102,103,104,
    105,106,107,108,109,110,111,112,113,114,115,116,117,118,119,120,
    121,122,48,8747,8747,8747,8747,58,58,61,61,61,61,61,61,10973,
    824,106,86,11617,27597,40863,19968,20008,20022,20031,20057,20101,20108,20128,20154,20799,
    20837,20843,20866,20886,20907,20960,20981,20992,21147,21241,21269,21274,21304,21313,21340,21353,
    21378,21430,21448,21475,22231,22303,22763,22786,22794,22805,22823,22899,23376,23424,23544,23567,
    23586,23608,23662,23665,24027,24037,24049,24062,24178,24186,24191,24308,24318,24331,24339,24400,
    24417,24435,24515,25096,25142,25163,25903,25908,25991,26007,26020,26041,26080,26085,26352,26376,
    26408,27424,27490,27513,27571,27595,27604,27611,27663,27668,27700,28779,29226,29238,29243,29247,
    29255,29273,29275,29356,29572,29577,29916,29926,29976,29983,29992,30000,30091,30098,30326,30333,
    30382,30399,30446,30683,30690,30707,31034,31160,31166,31348,31435,31481,31859,31992,32566,32593,
    32650,32701,32769,32780,32786,32819,32895,32905,33251,33258,33267,33276,33292,33307,33311,33390,
    33394,33400,34381,34411,34880,34892,34915,35198,35211,35282,35328,35895,35910,35925,35960,35997,
    36196,36208,36275,36523,36554,36763,36784,36789,37009,37193,37318,37324,37329,38263,38272,38428,
    38582,38585,38632,38737,38750,38754,38761,38859,38893,38899,38913,39080,39131,39135,39318,39321,
    39340,39592,39640,39647,39717,39727,39730,39740,39770,40165,40565,40575,40613,40635,40643,40653,
    40657,40697,40701,40718,40723,40736,40763,40778,40786,40845,40860,40864,32,12306,21313,21316,
    21317,12363,12441,12365,12441,12367,12441,12369,12441,12371,12441,12373,12441,12375,12441,12377,
    12441,12379,12441,12381,12441,12383,12441,12385,12441,12388,12441,12390,12441,12392,12441,12399,
    12441,12399,12442,12402,12441,12402,12442,12405,12441,12405,12442,12408,12441,12408,12442,12411,
    12441,12411,12442,12358,12441,32,12441,32,12442,12445,12441,12424,12426,12459,12441,12461,
    12441,12463,12441,12465,12441,12467,12441,12469,12441,12471,12441,12473,12441,12475,12441,12477,
    12441,12479,12441,12481,12441,12484,12441,12486,12441,12488,12441,12495,12441,12495,12442,12498,
    12441,12498,12442,12501,12441,12501,12442,12504,12441,12504,12442,12507,12441,12507,12442,12454,
    12441,12527,12441,12528,12441,12529,12441,12530,12441,12541,12441,12467,12488,4352,4353,4522,
    4354,4524,4525,4355,4356,4357,4528,4529,4530,4531,4532,4533,4378,4358,4359,4360,
    4385,4361,4362,4363,4364,4365,4366,4367,4368,4369,4370,4449,4450,4451,4452,4453,
    4454,4455,4456,4457,4458,4459,4460,4461,4462,4463,4464,4465,4466,4467,4468,4469,
    4448,4372,4373,4551,4552,4556,4558,4563,4567,4569,4380,4573,4575,4381,4382,4384,
    4386,4387,4391,4393,4395,4396,4397,4398,4399,4402,4406,4416,4423,4428,4593,4594,
    4439,4440,4441,4484,4485,4488,4497,4498,4500,4510,4513,19968,20108,19977,22235,19978,
    20013,19979,30002,20057,19993,19969,22825,22320,20154,40,4352,41,40,4354,41,40,
    4355,41,40,4357,41,40,4358,41,40,4359,41,40,4361,41,40,4363,
    41,40,4364,41,40,4366,41,40,4367,41,40,4368,41,40,4369,41,
    40,4370,41,40,4352,4449,41,40,4354,4449,41,40,4355,4449,41,40,
    4357,4449,41,40,4358,4449,41,40,4359,4449,41,40,4361,4449,41,40,
    4363,4449,41,40,4364,4449,41,40,4366,4449,41,40,4367,4449,41,40,
    4368,4449,41,40,4369,4449,41,40,4370,4449,41,40,4364,4462,41,40,
    4363,4457,4364,4453,4523,41,40,4363,4457,4370,4462,41,40,19968,41,40,
    20108,41,40,19977,41,40,22235,41,40,20116,41,40,20845,41,40,19971,
    41,40,20843,41,40,20061,41,40,21313,41,40,26376,41,40,28779,41,
    40,27700,41,40,26408,41,40,37329,41,40,22303,41,40,26085,41,40,
    26666,41,40,26377,41,40,31038,41,40,21517,41,40,29305,41,40,36001,
    41,40,31069,41,40,21172,41,40,20195,41,40,21628,41,40,23398,41,
    40,30435,41,40,20225,41,40,36039,41,40,21332,41,40,31085,41,40,
    20241,41,40,33258,41,40,33267,41,21839,24188,25991,31631,80,84,69,50,
    49,50,50,50,51,50,52,50,53,50,54,50,55,50,56,50,
    57,51,48,51,49,51,50,51,51,51,52,51,53,4352,4354,4355,
    4357,4358,4359,4361,4363,4364,4366,4367,4368,4369,4370,4352,4449,4354,4449,4355,
    4449,4357,4449,4358,4449,4359,4449,4361,4449,4363,4449,4364,4449,4366,4449,4367,
    4449,4368,4449,4369,4449,4370,4449,4366,4449,4535,4352,4457,4364,4462,4363,4468,
    4363,4462,19968,20108,19977,22235,20116,20845,19971,20843,20061,21313,26376,28779,27700,26408,
    37329,22303,26085,26666,26377,31038,21517,29305,36001,31069,21172,31192,30007,22899,36969,20778,
    21360,27880,38917,20241,20889,27491,19978,20013,19979,24038,21491,21307,23447,23398,30435,20225,
    36039,21332,22812,51,54,51,55,51,56,51,57,52,48,52,49,52,
    50,52,51,52,52,52,53,52,54,52,55,52,56,52,57,53,
    48,49,26376,50,26376,51,26376,52,26376,53,26376,54,26376,55,26376,56,
    26376,57,26376,49,48,26376,49,49,26376,49,50,26376,72,103,101,114,
    103,101,86,76,84,68,12450,12452,12454,12456,12458,12459,12461,12463,12465,12467,
    12469,12471,12473,12475,12477,12479,12481,12484,12486,12488,12490,12491,12492,12493,12494,12495,
    12498,12501,12504,12507,12510,12511,12512,12513,12514,12516,12518,12520,12521,12522,12523,12524,
    12525,12527,12528,12529,12530,12450,12495,12442,12540,12488,12450,12523,12501,12449,12450,12531,
    12504,12442,12450,12450,12540,12523,12452,12491,12531,12463,12441,12452,12531,12481,12454,12457,
    12531,12456,12473,12463,12540,12488,12441,12456,12540,12459,12540,12458,12531,12473,12458,12540,
    12512,12459,12452,12522,12459,12521,12483,12488,12459,12525,12522,12540,12459,12441,12525,12531,
    12459,12441,12531,12510,12461,12441,12459,12441,12461,12441,12491,12540,12461,12517,12522,12540,
    12461,12441,12523,12479,12441,12540,12461,12525,12461,12525,12463,12441,12521,12512,12461,12525,
    12513,12540,12488,12523,12461,12525,12527,12483,12488,12463,12441,12521,12512,12463,12441,12521,
    12512,12488,12531,12463,12523,12475,12441,12452,12525,12463,12525,12540,12493,12465,12540,12473,
    12467,12523,12490,12467,12540,12507,12442,12469,12452,12463,12523,12469,12531,12481,12540,12512,
    12471,12522,12531,12463,12441,12475,12531,12481,12475,12531,12488,12479,12441,12540,12473,12486,
    12441,12471,12488,12441,12523,12488,12531,12490,12494,12494,12483,12488,12495,12452,12484,12495,
    12442,12540,12475,12531,12488,12495,12442,12540,12484,12495,12441,12540,12524,12523,12498,12442,
    12450,12473,12488,12523,12498,12442,12463,12523,12498,12442,12467,12498,12441,12523,12501,12449,
    12521,12483,12488,12441,12501,12451,12540,12488,12501,12441,12483,12471,12455,12523,12501,12521,
    12531,12504,12463,12479,12540,12523,12504,12442,12477,12504,12442,12491,12498,12504,12523,12484,
    12504,12442,12531,12473,12504,12442,12540,12471,12441,12504,12441,12540,12479,12507,12442,12452,
    12531,12488,12507,12441,12523,12488,12507,12531,12507,12442,12531,12488,12441,12507,12540,12523,
    12507,12540,12531,12510,12452,12463,12525,12510,12452,12523,12510,12483,12495,12510,12523,12463,
    12510,12531,12471,12519,12531,12511,12463,12525,12531,12511,12522,12511,12522,12495,12441,12540,
    12523,12513,12459,12441,12513,12459,12441,12488,12531,12513,12540,12488,12523,12516,12540,12488,
    12441,12516,12540,12523,12518,12450,12531,12522,12483,12488,12523,12522,12521,12523,12498,12442,
    12540,12523,12540,12501,12441,12523,12524,12512,12524,12531,12488,12465,12441,12531,12527,12483,
    12488,48,28857,49,28857,50,28857,51,28857,52,28857,53,28857,54,28857,55,
    28857,56,28857,57,28857,49,48,28857,49,49,28857,49,50,28857,49,51,
    28857,49,52,28857,49,53,28857,49,54,28857,49,55,28857,49,56,28857,
    49,57,28857,50,48,28857,50,49,28857,50,50,28857,50,51,28857,50,
    52,28857,104,80,97,100,97,65,85,98,97,114,111,86,112,99,
    100,109,100,109,50,100,109,51,73,85,24179,25104,26157,21644,22823,27491,
    26126,27835,26666,24335,20250,31038,112,65,110,65,956,65,109,65,107,65,
    75,66,77,66,71,66,99,97,108,107,99,97,108,112,70,110,
    70,956,70,956,103,109,103,107,103,72,122,107,72,122,77,72,
    122,71,72,122,84,72,122,956,108,109,108,100,108,107,108,102,
    109,110,109,956,109,109,109,99,109,107,109,109,109,50,99,109,
    50,109,50,107,109,50,109,109,51,99,109,51,109,51,107,109,
    51,109,8725,115,109,8725,115,50,80,97,107,80,97,77,80,97,
    71,80,97,114,97,100,114,97,100,8725,115,114,97,100,8725,115,
    50,112,115,110,115,956,115,109,115,112,86,110,86,956,86,109,
    86,107,86,77,86,112,87,110,87,956,87,109,87,107,87,77,
    87,107,937,77,937,97,46,109,46,66,113,99,99,99,100,67,
    8725,107,103,67,111,46,100,66,71,121,104,97,72,80,105,110,
    75,75,75,77,107,116,108,109,108,110,108,111,103,108,120,109,
    98,109,105,108,109,111,108,80,72,112,46,109,46,80,80,77,
    80,82,115,114,83,118,87,98,86,8725,109,65,8725,109,49,26085,
    50,26085,51,26085,52,26085,53,26085,54,26085,55,26085,56,26085,57,26085,
    49,48,26085,49,49,26085,49,50,26085,49,51,26085,49,52,26085,49,
    53,26085,49,54,26085,49,55,26085,49,56,26085,49,57,26085,50,48,
    26085,50,49,26085,50,50,26085,50,51,26085,50,52,26085,50,53,26085,
    50,54,26085,50,55,26085,50,56,26085,50,57,26085,51,48,26085,51,
    49,26085,103,97,108,1098,1100,42863,294,339,42791,43831,619,43858,35912,26356,
    36554,36040,28369,20018,21477,40860,40860,22865,37329,21895,22856,25078,30313,32645,34367,34746,
    35064,37007,27138,27931,28889,29662,33853,37226,39409,20098,21365,27396,29211,34349,40478,23888,
    28651,34253,35172,25289,33240,34847,24266,26391,28010,29436,37070,20358,20919,21214,25796,27347,
    29200,30439,32769,34310,34396,36335,38706,39791,40442,30860,31103,32160,33737,37636,40575,35542,
    22751,24324,31840,32894,29282,30922,36034,38647,22744,23650,27155,28122,28431,32047,32311,38475,
    21202,32907,20956,20940,31260,32190,33777,38517,35712,25295,27138,35582,20025,23527,24594,29575,
    30064,21271,30971,20415,24489,19981,27852,25976,32034,21443,22622,30465,33865,35498,27578,36784,
    27784,25342,33509,25504,30053,20142,20841,20937,26753,31975,33391,35538,37327,21237,21570,22899,
    24300,26053,28670,31018,38317,39530,40599,40654,21147,26310,27511,36706,24180,24976,25088,25754,
    28451,29001,29833,31178,32244,32879,36646,34030,36899,37706,21015,21155,21693,28872,35010,35498,
    24265,24565,25467,27566,31806,29557,20196,22265,23527,23994,24604,29618,29801,32666,32838,37428,
    38646,38728,38936,20363,31150,37300,38584,24801,20102,20698,23534,23615,26009,27138,29134,30274,
    34044,36988,40845,26248,38446,21129,26491,26611,27969,28316,29705,30041,30827,32016,39006,20845,
    25134,38520,20523,23833,28138,36650,24459,24900,26647,29575,38534,21033,21519,23653,26131,26446,
    26792,27877,29702,30178,32633,35023,35041,37324,38626,21311,28346,21533,29136,29848,34298,38563,
    40023,40607,26519,28107,33256,31435,31520,31890,29376,28825,35672,20160,33590,21050,20999,24230,
    25299,31958,23429,27934,26292,36667,34892,38477,35211,24275,20800,21952,22618,26228,20958,29482,
    30410,31036,31070,31077,31119,38742,31934,32701,34322,35576,36920,37117,39151,39164,39208,40372,
    37086,38583,20398,20711,20813,21193,21220,21329,21917,22022,22120,22592,22696,23652,23662,24724,
    24936,24974,25074,25935,26082,26257,26757,28023,28186,28450,29038,29227,29730,30865,31038,31049,
    31048,31056,31062,31069,31117,31118,31296,31361,31680,32244,32265,32321,32626,32773,33261,33401,
    33401,33879,35088,35222,35585,35641,36051,36104,36790,36920,38627,38911,38971,24693,55376,57070,
    33304,20006,20917,20840,20352,20805,20864,21191,21242,21917,21845,21913,21986,22618,22707,22852,
    22868,23138,23336,24274,24281,24425,24493,24792,24910,24840,24974,24928,25074,25140,25540,25628,
    25682,25942,26228,26391,26395,26454,27513,27578,27969,28379,28363,28450,28702,29038,30631,29237,
    29359,29482,29809,29958,30011,30237,30239,30410,30427,30452,30538,30528,30924,31409,31680,31867,
    32091,32244,32574,32773,33618,33775,34681,35137,35206,35222,35519,35576,35531,35585,35582,35565,
    35641,35722,36104,36664,36978,37273,37494,38524,38627,38742,38875,38911,38923,38971,39698,40860,
    55370,56394,55370,56388,55372,57301,15261,16408,16441,55380,56905,55383,56528,55391,57043,40771,
    40846,102,102,102,105,102,108,102,102,105,102,102,108,115,116,115,
    116,1396,1398,1396,1381,1396,1387,1406,1398,1396,1389,1497,1460,1522,1463,1506,
    1488,1491,1492,1499,1500,1501,1512,1514,43,1513,1473,1513,1474,1513,1468,1473,
    1513,1468,1474,1488,1463,1488,1464,1488,1468,1489,1468,1490,1468,1491,1468,1492,
    1468,1493,1468,1494,1468,1496,1468,1497,1468,1498,1468,1499,1468,1500,1468,1502,
    1468,1504,1468,1505,1468,1507,1468,1508,1468,1510,1468,1511,1468,1512,1468,1513,
    1468,1514,1468,1493,1465,1489,1471,1499,1471,1508,1471,1488,1500,1649,1649,1659,
    1659,1659,1659,1662,1662,1662,1662,1664,1664,1664,1664,1658,1658,1658,1658,1663,
    1663,1663,1663,1657,1657,1657,1657,1700,1700,1700,1700,1702,1702,1702,1702,1668,
    1668,1668,1668,1667,1667,1667,1667,1670,1670,1670,1670,1671,1671,1671,1671,1677,
    1677,1676,1676,1678,1678,1672,1672,1688,1688,1681,1681,1705,1705,1705,1705,1711,
    1711,1711,1711,1715,1715,1715,1715,1713,1713,1713,1713,1722,1722,1723,1723,1723,
    1723,1749,1620,1749,1620,1729,1729,1729,1729,1726,1726,1726,1726,1746,1746,1746,
    1620,1746,1620,1709,1709,1709,1709,1735,1735,1734,1734,1736,1736,1735,1652,1739,
    1739,1733,1733,1737,1737,1744,1744,1744,1744,1609,1609,1610,1620,1575,1610,1620,
    1575,1610,1620,1749,1610,1620,1749,1610,1620,1608,1610,1620,1608,1610,1620,1735,
    1610,1620,1735,1610,1620,1734,1610,1620,1734,1610,1620,1736,1610,1620,1736,1610,
    1620,1744,1610,1620,1744,1610,1620,1744,1610,1620,1609,1610,1620,1609,1610,1620,
    1609,1740,1740,1740,1740,1610,1620,1580,1610,1620,1581,1610,1620,1605,1610,1620,
    1609,1610,1620,1610,1576,1580,1576,1581,1576,1582,1576,1605,1576,1609,1576,1610,
    1578,1580,1578,1581,1578,1582,1578,1605,1578,1609,1578,1610,1579,1580,1579,1605,
    1579,1609,1579,1610,1580,1581,1580,1605,1581,1580,1581,1605,1582,1580,1582,1581,
    1582,1605,1587,1580,1587,1581,1587,1582,1587,1605,1589,1581,1589,1605,1590,1580,
    1590,1581,1590,1582,1590,1605,1591,1581,1591,1605,1592,1605,1593,1580,1593,1605,
    1594,1580,1594,1605,1601,1580,1601,1581,1601,1582,1601,1605,1601,1609,1601,1610,
    1602,1581,1602,1605,1602,1609,1602,1610,1603,1575,1603,1580,1603,1581,1603,1582,
    1603,1604,1603,1605,1603,1609,1603,1610,1604,1580,1604,1581,1604,1582,1604,1605,
    1604,1609,1604,1610,1605,1580,1605,1581,1605,1582,1605,1605,1605,1609,1605,1610,
    1606,1580,1606,1581,1606,1582,1606,1605,1606,1609,1606,1610,1607,1580,1607,1605,
    1607,1609,1607,1610,1610,1580,1610,1581,1610,1582,1610,1605,1610,1609,1610,1610,
    1584,1648,1585,1648,1609,1648,32,1612,1617,32,1613,1617,32,1614,1617,32,
    1615,1617,32,1616,1617,32,1617,1648,1610,1620,1585,1610,1620,1586,1610,1620,
    1605,1610,1620,1606,1610,1620,1609,1610,1620,1610,1576,1585,1576,1586,1576,1605,
    1576,1606,1576,1609,1576,1610,1578,1585,1578,1586,1578,1605,1578,1606,1578,1609,
    1578,1610,1579,1585,1579,1586,1579,1605,1579,1606,1579,1609,1579,1610,1601,1609,
    1601,1610,1602,1609,1602,1610,1603,1575,1603,1604,1603,1605,1603,1609,1603,1610,
    1604,1605,1604,1609,1604,1610,1605,1575,1605,1605,1606,1585,1606,1586,1606,1605,
    1606,1606,1606,1609,1606,1610,1609,1648,1610,1585,1610,1586,1610,1605,1610,1606,
    1610,1609,1610,1610,1610,1620,1580,1610,1620,1581,1610,1620,1582,1610,1620,1605,
    1610,1620,1607,1576,1580,1576,1581,1576,1582,1576,1605,1576,1607,1578,1580,1578,
    1581,1578,1582,1578,1605,1578,1607,1579,1605,1580,1581,1580,1605,1581,1580,1581,
    1605,1582,1580,1582,1605,1587,1580,1587,1581,1587,1582,1587,1605,1589,1581,1589,
    1582,1589,1605,1590,1580,1590,1581,1590,1582,1590,1605,1591,1581,1592,1605,1593,
    1580,1593,1605,1594,1580,1594,1605,1601,1580,1601,1581,1601,1582,1601,1605,1602,
    1581,1602,1605,1603,1580,1603,1581,1603,1582,1603,1604,1603,1605,1604,1580,1604,
    1581,1604,1582,1604,1605,1604,1607,1605,1580,1605,1581,1605,1582,1605,1605,1606,
    1580,1606,1581,1606,1582,1606,1605,1606,1607,1607,1580,1607,1605,1607,1648,1610,
    1580,1610,1581,1610,1582,1610,1605,1610,1607,1610,1620,1605,1610,1620,1607,1576,
    1605,1576,1607,1578,1605,1578,1607,1579,1605,1579,1607,1587,1605,1587,1607,1588,
    1605,1588,1607,1603,1604,1603,1605,1604,1605,1606,1605,1606,1607,1610,1605,1610,
    1607,1600,1614,1617,1600,1615,1617,1600,1616,1617,1591,1609,1591,1610,1593,1609,
    1593,1610,1594,1609,1594,1610,1587,1609,1587,1610,1588,1609,1588,1610,1581,1609,
    1581,1610,1580,1609,1580,1610,1582,1609,1582,1610,1589,1609,1589,1610,1590,1609,
    1590,1610,1588,1580,1588,1581,1588,1582,1588,1605,1588,1585,1587,1585,1589,1585,
    1590,1585,1591,1609,1591,1610,1593,1609,1593,1610,1594,1609,1594,1610,1587,1609,
    1587,1610,1588,1609,1588,1610,1581,1609,1581,1610,1580,1609,1580,1610,1582,1609,
    1582,1610,1589,1609,1589,1610,1590,1609,1590,1610,1588,1580,1588,1581,1588,1582,
    1588,1605,1588,1585,1587,1585,1589,1585,1590,1585,1588,1580,1588,1581,1588,1582,
    1588,1605,1587,1607,1588,1607,1591,1605,1587,1580,1587,1581,1587,1582,1588,1580,
    1588,1581,1588,1582,1591,1605,1592,1605,1575,1611,1575,1611,1578,1580,1605,1578,
    1581,1580,1578,1581,1580,1578,1581,1605,1578,1582,1605,1578,1605,1580,1578,1605,
    1581,1578,1605,1582,1580,1605,1581,1580,1605,1581,1581,1605,1610,1581,1605,1609,
    1587,1581,1580,1587,1580,1581,1587,1580,1609,1587,1605,1581,1587,1605,1581,1587,
    1605,1580,1587,1605,1605,1587,1605,1605,1589,1581,1581,1589,1581,1581,1589,1605,
    1605,1588,1581,1605,1588,1581,1605,1588,1580,1610,1588,1605,1582,1588,1605,1582,
    1588,1605,1605,1588,1605,1605,1590,1581,1609,1590,1582,1605,1590,1582,1605,1591,
    1605,1581,1591,1605,1581,1591,1605,1605,1591,1605,1610,1593,1580,1605,1593,1605,
    1605,1593,1605,1605,1593,1605,1609,1594,1605,1605,1594,1605,1610,1594,1605,1609,
    1601,1582,1605,1601,1582,1605,1602,1605,1581,1602,1605,1605,1604,1581,1605,1604,
    1581,1610,1604,1581,1609,1604,1580,1580,1604,1580,1580,1604,1582,1605,1604,1582,
    1605,1604,1605,1581,1604,1605,1581,1605,1581,1580,1605,1581,1605,1605,1581,1610,
    1605,1580,1581,1605,1580,1605,1605,1582,1580,1605,1582,1605,1605,1580,1582,1607,
    1605,1580,1607,1605,1605,1606,1581,1605,1606,1581,1609,1606,1580,1605,1606,1580,
    1605,1606,1580,1609,1606,1605,1610,1606,1605,1609,1610,1605,1605,1610,1605,1605,
    1576,1582,1610,1578,1580,1610,1578,1580,1609,1578,1582,1610,1578,1582,1609,1578,
    1605,1610,1578,1605,1609,1580,1605,1610,1580,1581,1609,1580,1605,1609,1587,1582,
    1609,1589,1581,1610,1588,1581,1610,1590,1581,1610,1604,1580,1610,1604,1605,1610,
    1610,1581,1610,1610,1580,1610,1610,1605,1610,1605,1605,1610,1602,1605,1610,1606,
    1581,1610,1602,1605,1581,1604,1581,1605,1593,1605,1610,1603,1605,1610,1606,1580,
    1581,1605,1582,1610,1604,1580,1605,1603,1605,1605,1604,1580,1605,1606,1580,1581,
    1580,1581,1610,1581,1580,1610,1605,1580,1610,1601,1605,1610,1576,1581,1610,1603,
    1605,1605,1593,1580,1605,1589,1605,1605,1587,1582,1610,1606,1580,1610,1589,1604,
    1746,1602,1604,1746,1575,1604,1604,1607,1575,1603,1576,1585,1605,1581,1605,1583,
    1589,1604,1593,1605,1585,1587,1608,1604,1593,1604,1610,1607,1608,1587,1604,1605,
    1589,1604,1609,1589,1604,1609,32,1575,1604,1604,1607,32,1593,1604,1610,1607,
    32,1608,1587,1604,1605,1580,1604,32,1580,1604,1575,1604,1607,1585,1740,1575,
    1604,44,12289,12290,58,59,33,63,12310,12311,46,46,46,46,46,8212,
    8211,95,95,40,41,123,125,12308,12309,12304,12305,12298,12299,12296,12297,12300,
    12301,12302,12303,91,93,32,773,32,773,32,773,32,773,95,95,95,
    44,12289,46,59,58,63,33,8212,40,41,123,125,12308,12309,35,38,
    42,43,45,60,62,61,92,36,37,64,32,1611,1600,1611,32,1612,
    32,1613,32,1614,1600,1614,32,1615,1600,1615,32,1616,1600,1616,32,1617,
    1600,1617,32,1618,1600,1618,1569,1575,1619,1575,1619,1575,1620,1575,1620,1608,
    1620,1608,1620,1575,1621,1575,1621,1610,1620,1610,1620,1610,1620,1610,1620,1575,
    1575,1576,1576,1576,1576,1577,1577,1578,1578,1578,1578,1579,1579,1579,1579,1580,
    1580,1580,1580,1581,1581,1581,1581,1582,1582,1582,1582,1583,1583,1584,1584,1585,
    1585,1586,1586,1587,1587,1587,1587,1588,1588,1588,1588,1589,1589,1589,1589,1590,
    1590,1590,1590,1591,1591,1591,1591,1592,1592,1592,1592,1593,1593,1593,1593,1594,
    1594,1594,1594,1601,1601,1601,1601,1602,1602,1602,1602,1603,1603,1603,1603,1604,
    1604,1604,1604,1605,1605,1605,1605,1606,1606,1606,1606,1607,1607,1607,1607,1608,
    1608,1609,1609,1610,1610,1610,1610,1604,1575,1619,1604,1575,1619,1604,1575,1620,
    1604,1575,1620,1604,1575,1621,1604,1575,1621,1604,1575,1604,1575,33,34,35,
    36,37,38,39,40,41,42,43,44,45,46,47,48,49,50,51,
    52,53,54,55,56,57,58,59,60,61,62,63,64,65,66,67,
    68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,
    84,85,86,87,88,89,90,91,92,93,94,95,96,97,98,99,
    100,101,102,103,104,105,106,107,108,109,110,111,112,113,114,115,
    116,117,118,119,120,121,122,123,124,125,126,10629,10630,12290,12300,12301,
    12289,12539,12530,12449,12451,12453,12455,12457,12515,12517,12519,12483,12540,12450,12452,12454,
    12456,12458,12459,12461,12463,12465,12467,12469,12471,12473,12475,12477,12479,12481,12484,12486,
    12488,12490,12491,12492,12493,12494,12495,12498,12501,12504,12507,12510,12511,12512,12513,12514,
    12516,12518,12520,12521,12522,12523,12524,12525,12527,12531,12441,12442,4448,4352,4353,4522,
    4354,4524,4525,4355,4356,4357,4528,4529,4530,4531,4532,4533,4378,4358,4359,4360,
    4385,4361,4362,4363,4364,4365,4366,4367,4368,4369,4370,4449,4450,4451,4452,4453,
    4454,4455,4456,4457,4458,4459,4460,4461,4462,4463,4464,4465,4466,4467,4468,4469,
    162,163,172,32,772,166,165,8361,9474,8592,8593,8594,8595,9632,9675,55300,
    56473,55300,56506,55300,56475,55300,56506,55300,56485,55300,56506,55300,56625,55300,56615,55300,
    56626,55300,56615,55300,57159,55300,57150,55300,57159,55300,57175,55301,56505,55301,56506,55301,
    56505,55301,56496,55301,56505,55301,56509,55301,56760,55301,56751,55301,56761,55301,56751,55348,
    56663,55348,56677,55348,56664,55348,56677,55348,56664,55348,56677,55348,56686,55348,56664,55348,
    56677,55348,56687,55348,56664,55348,56677,55348,56688,55348,56664,55348,56677,55348,56689,55348,
    56664,55348,56677,55348,56690,55348,56761,55348,56677,55348,56762,55348,56677,55348,56761,55348,
    56677,55348,56686,55348,56762,55348,56677,55348,56686,55348,56761,55348,56677,55348,56687,55348,
    56762,55348,56677,55348,56687,65,66,67,68,69,70,71,72,73,74,75,
    76,77,78,79,80,81,82,83,84,85,86,87,88,89,90,97,
    98,99,100,101,102,103,104,105,106,107,108,109,110,111,112,113,
    114,115,116,117,118,119,120,121,122,65,66,67,68,69,70,71,
    72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,
    88,89,90,97,98,99,100,101,102,103,105,106,107,108,109,110,
    111,112,113,114,115,116,117,118,119,120,121,122,65,66,67,68,
    69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,84,
    85,86,87,88,89,90,97,98,99,100,101,102,103,104,105,106,
    107,108,109,110,111,112,113,114,115,116,117,118,119,120,121,122,
    65,67,68,71,74,75,78,79,80,81,83,84,85,86,87,88,
    89,90,97,98,99,100,102,104,105,106,107,108,109,110,112,113,
    114,115,116,117,118,119,120,121,122,65,66,67,68,69,70,71,
    72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,
    88,89,90,97,98,99,100,101,102,103,104,105,106,107,108,109,
    110,111,112,113,114,115,116,117,118,119,120,121,122,65,66,68,
    69,70,71,74,75,76,77,78,79,80,81,83,84,85,86,87,
    88,89,97,98,99,100,101,102,103,104,105,106,107,108,109,110,
    111,112,113,114,115,116,117,118,119,120,121,122,65,66,68,69,
    70,71,73,74,75,76,77,79,83,84,85,86,87,88,89,97,
    98,99,100,101,102,103,104,105,106,107,108,109,110,111,112,113,
    114,115,116,117,118,119,120,121,122,65,66,67,68,69,70,71,
    72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,
    88,89,90,97,98,99,100,101,102,103,104,105,106,107,108,109,
    110,111,112,113,114,115,116,117,118,119,120,121,122,65,66,67,
    68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,
    84,85,86,87,88,89,90,97,98,99,100,101,102,103,104,105,
    106,107,108,109,110,111,112,113,114,115,116,117,118,119,120,121,
    122,65,66,67,68,69,70,71,72,73,74,75,76,77,78,79,
    80,81,82,83,84,85,86,87,88,89,90,97,98,99,100,101,
    102,103,104,105,106,107,108,109,110,111,112,113,114,115,116,117,
    118,119,120,121,122,65,66,67,68,69,70,71,72,73,74,75,
    76,77,78,79,80,81,82,83,84,85,86,87,88,89,90,97,
    98,99,100,101,102,103,104,105,106,107,108,109,110,111,112,113,
    114,115,116,117,118,119,120,121,122,65,66,67,68,69,70,71,
    72,73,74,75,76,77,78,79,80,81,82,83,84,85,86,87,
    88,89,90,97,98,99,100,101,102,103,104,105,106,107,108,109,
    110,111,112,113,114,115,116,117,118,119,120,121,122,65,66,67,
    68,69,70,71,72,73,74,75,76,77,78,79,80,81,82,83,
    84,85,86,87,88,89,90,97,98,99,100,101,102,103,104,105,
    106,107,108,109,110,111,112,113,114,115,116,117,118,119,120,121,
    122,305,567,913,914,915,916,917,918,919,920,921,922,923,924,925,
    926,927,928,929,920,931,932,933,934,935,936,937,8711,945,946,947,
    948,949,950,951,952,953,954,955,956,957,958,959,960,961,962,963,
    964,965,966,967,968,969,8706,949,952,954,966,961,960,913,914,915,
    916,917,918,919,920,921,922,923,924,925,926,927,928,929,920,931,
    932,933,934,935,936,937,8711,945,946,947,948,949,950,951,952,953,
    954,955,956,957,958,959,960,961,962,963,964,965,966,967,968,969,
    8706,949,952,954,966,961,960,913,914,915,916,917,918,919,920,921,
    922,923,924,925,926,927,928,929,920,931,932,933,934,935,936,937,
    8711,945,946,947,948,949,950,951,952,953,954,955,956,957,958,959,
    960,961,962,963,964,965,966,967,968,969,8706,949,952,954,966,961,
    960,913,914,915,916,917,918,919,920,921,922,923,924,925,926,927,
    928,929,920,931,932,933,934,935,936,937,8711,945,946,947,948,949,
    950,951,952,953,954,955,956,957,958,959,960,961,962,963,964,965,
    966,967,968,969,8706,949,952,954,966,961,960,913,914,915,916,917,
    918,919,920,921,922,923,924,925,926,927,928,929,920,931,932,933,
    934,935,936,937,8711,945,946,947,948,949,950,951,952,953,954,955,
    956,957,958,959,960,961,962,963,964,965,966,967,968,969,8706,949,
    952,954,966,961,960,988,989,48,49,50,51,52,53,54,55,56,
    57,48,49,50,51,52,53,54,55,56,57,48,49,50,51,52,
    53,54,55,56,57,48,49,50,51,52,53,54,55,56,57,48,
    49,50,51,52,53,54,55,56,57,1575,1576,1580,1583,1608,1586,1581,
    1591,1610,1603,1604,1605,1606,1587,1593,1601,1589,1602,1585,1588,1578,1579,1582,
    1584,1590,1592,1594,1646,1722,1697,1647,1576,1580,1607,1581,1610,1603,1604,1605,
    1606,1587,1593,1601,1589,1602,1588,1578,1579,1582,1590,1594,1580,1581,1610,1604,
    1606,1587,1593,1589,1602,1588,1582,1590,1594,1722,1647,1576,1580,1607,1581,1591,
    1610,1603,1605,1606,1587,1593,1601,1589,1602,1588,1578,1579,1582,1590,1592,1594,
    1646,1697,1575,1576,1580,1583,1607,1608,1586,1581,1591,1610,1604,1605,1606,1587,
    1593,1601,1589,1602,1585,1588,1578,1579,1582,1584,1590,1592,1594,1576,1580,1583,
    1608,1586,1581,1591,1610,1604,1605,1606,1587,1593,1601,1589,1602,1585,1588,1578,
    1579,1582,1584,1590,1592,1594,48,46,48,44,49,44,50,44,51,44,
    52,44,53,44,54,44,55,44,56,44,57,44,40,65,41,40,
    66,41,40,67,41,40,68,41,40,69,41,40,70,41,40,71,
    41,40,72,41,40,73,41,40,74,41,40,75,41,40,76,41,
    40,77,41,40,78,41,40,79,41,40,80,41,40,81,41,40,
    82,41,40,83,41,40,84,41,40,85,41,40,86,41,40,87,
    41,40,88,41,40,89,41,40,90,41,12308,83,12309,67,82,67,
    68,87,90,65,66,67,68,69,70,71,72,73,74,75,76,77,
    78,79,80,81,82,83,84,85,86,87,88,89,90,72,86,77,
    86,83,68,83,83,80,80,86,87,67,77,67,77,68,68,74,
    12411,12363,12467,12467,12469,25163,23383,21452,12486,12441,20108,22810,35299,22825,20132,26144,
    28961,26009,21069,24460,20877,26032,21021,32066,29983,36009,22768,21561,28436,25237,25429,19968,
    19977,36938,24038,20013,21491,25351,36208,25171,31105,31354,21512,28288,26377,26376,30003,21106,
    21942,37197,12308,26412,12309,12308,19977,12309,12308,20108,12309,12308,23433,12309,12308,28857,
    12309,12308,25171,12309,12308,30423,12309,12308,21213,12309,12308,25943,12309,24471,21487,20029,
    20024,20033,55360,56610,20320,20398,20411,20482,20602,20633,20711,20687,13470,55361,56890,20813,
    20820,20836,20855,55361,56604,13497,20839,20877,55361,56651,20887,20900,20172,20908,20917,55396,
    56799,20981,20995,13535,21051,21062,21106,21111,13589,21191,21193,21220,21242,21253,21254,21271,
    21321,21329,21338,21363,21373,21375,21375,21375,55362,56876,28784,21450,21471,55362,57187,21483,
    21489,21510,21662,21560,21576,21608,21666,21750,21776,21843,21859,21892,21892,21913,21931,21939,
    21954,22294,22022,22295,22097,22132,20999,22766,22478,22516,22541,22411,22578,22577,22700,55365,
    56548,22770,22775,22790,22810,22818,22882,55365,57000,55365,57066,23020,23067,23079,23000,23142,
    14062,14076,23304,23358,23358,55366,56776,23491,23512,23527,23539,55366,57112,23551,23558,24403,
    23586,14209,23648,23662,23744,23693,55367,56804,23875,55367,56806,23918,23915,23932,24033,24034,
    14383,24061,24104,24125,24169,14434,55368,56707,14460,24240,24243,24246,24266,55400,57234,24318,
    55368,57137,55368,57137,33281,24354,24354,14535,55372,57016,55384,56794,24418,24427,14563,24474,
    24525,24535,24569,24705,14650,14620,24724,55369,57044,24775,24904,24908,24910,24908,24954,24974,
    25010,24996,25007,25054,25074,25078,25104,25115,25181,25265,25300,25424,55370,57100,25405,25340,
    25448,25475,25572,55370,57329,25634,25541,25513,14894,25705,25726,25757,25719,14956,25935,25964,
    55372,56330,26083,26360,26185,15129,26257,15112,15076,20882,20885,26368,26268,32941,17369,26391,
    26395,26401,26462,26451,55372,57283,15177,26618,26501,26706,26757,55373,56429,26766,26655,26900,
    15261,26946,27043,27114,27304,55373,56995,27355,15384,27425,55374,56487,27476,15438,27506,27551,
    27578,27579,55374,56973,55367,56587,55374,57082,27726,55375,56508,27839,27853,27751,27926,27966,
    28023,27969,28009,28024,28037,55375,56606,27956,28207,28270,15667,28363,28359,55375,57041,28153,
    28526,55375,57182,55375,57230,28614,28729,28702,28699,15766,28746,28797,28791,28845,55361,56613,
    28997,55376,56931,29084,55376,57259,29224,29237,29264,55377,56840,29312,29333,55377,57141,55378,
    56340,29562,29579,16044,29605,16056,16056,29767,29788,29809,29829,29898,16155,29988,55379,56374,
    30014,55379,56466,30064,55368,56735,30224,55379,57249,55379,57272,55380,56388,16380,16392,30452,
    55380,56563,55380,56562,55380,56601,55380,56627,30494,30495,30495,30538,16441,30603,16454,16534,
    55381,56349,30798,30860,30924,16611,55381,56870,31062,55381,56986,55381,57029,31119,31211,16687,
    31296,31306,31311,55382,56700,55382,56999,55382,56999,31470,16898,55382,57259,31686,31689,16935,
    55383,56448,31954,17056,31976,31971,32000,55383,57222,32099,17153,32199,32258,32325,17204,55384,
    56872,55384,56903,17241,55384,57049,32634,55384,57150,32661,32762,32773,55385,56538,55385,56611,
    32864,55385,56744,32880,55372,57183,17365,32946,33027,17419,33086,23221,55385,57255,55385,57269,
    55372,57235,55372,57244,33281,33284,36766,17515,33425,33419,33437,21171,33457,33459,33469,33510,
    55386,57148,33509,33565,33635,33709,33571,33725,33767,33879,33619,33738,33740,33756,55387,56374,
    55387,56683,55387,56533,17707,34033,34035,34070,55388,57290,34148,55387,57132,17757,17761,55387,
    57265,55388,56530,17771,34384,34396,34407,34409,34473,34440,34574,34530,34681,34600,34667,34694,
    17879,34785,34817,17913,34912,34915,55389,56935,35031,35038,17973,35066,13499,55390,56494,55390,
    56678,18110,18119,35488,35565,35722,35925,55391,56488,36011,36033,36123,36215,55391,57135,55362,
    56324,36299,36284,36336,55362,56542,36564,36664,55393,56786,55393,56813,37012,37105,37137,55393,
    57134,37147,37432,37591,37592,37500,37881,37909,55394,57338,38283,18837,38327,55395,56695,18918,
    38595,23986,38691,55396,56645,55396,56858,19054,19062,38880,55397,56330,19122,55397,56470,38923,
    38923,38953,55397,56758,39138,19251,39209,39335,39362,39422,19406,55398,57136,39698,40000,40189,
    19662,19693,40295,55400,56526,19704,55400,56581,55400,56846,55400,56977,40635,19798,40697,40702,
    40709,40719,40726,40763,55401,56832,
};
static const uint32_t mlstack__ucomp[2820] = {
    60,824,8814,61,824,8800,62,824,8815,65,768,192,
    65,769,193,65,770,194,65,771,195,65,772,256,
    65,774,258,65,775,550,65,776,196,65,777,7842,
    65,778,197,65,780,461,65,783,512,65,785,514,
    65,803,7840,65,805,7680,65,808,260,66,775,7682,
    66,803,7684,66,817,7686,67,769,262,67,770,264,
    67,775,266,67,780,268,67,807,199,68,775,7690,
    68,780,270,68,803,7692,68,807,7696,68,813,7698,
    68,817,7694,69,768,200,69,769,201,69,770,202,
    69,771,7868,69,772,274,69,774,276,69,775,278,
    69,776,203,69,777,7866,69,780,282,69,783,516,
    69,785,518,69,803,7864,69,807,552,69,808,280,
    69,813,7704,69,816,7706,70,775,7710,71,769,500,
    71,770,284,71,772,7712,71,774,286,71,775,288,
    71,780,486,71,807,290,72,770,292,72,775,7714,
    72,776,7718,72,780,542,72,803,7716,72,807,7720,
    72,814,7722,73,768,204,73,769,205,73,770,206,
    73,771,296,73,772,298,73,774,300,73,775,304,
    73,776,207,73,777,7880,73,780,463,73,783,520,
    73,785,522,73,803,7882,73,808,302,73,816,7724,
    74,770,308,75,769,7728,75,780,488,75,803,7730,
    75,807,310,75,817,7732,76,769,313,76,780,317,
    76,803,7734,76,807,315,76,813,7740,76,817,7738,
    77,769,7742,77,775,7744,77,803,7746,78,768,504,
    78,769,323,78,771,209,78,775,7748,78,780,327,
    78,803,7750,78,807,325,78,813,7754,78,817,7752,
    79,768,210,79,769,211,79,770,212,79,771,213,
    79,772,332,79,774,334,79,775,558,79,776,214,
    79,777,7886,79,779,336,79,780,465,79,783,524,
    79,785,526,79,795,416,79,803,7884,79,808,490,
    80,769,7764,80,775,7766,82,769,340,82,775,7768,
    82,780,344,82,783,528,82,785,530,82,803,7770,
    82,807,342,82,817,7774,83,769,346,83,770,348,
    83,775,7776,83,780,352,83,803,7778,83,806,536,
    83,807,350,84,775,7786,84,780,356,84,803,7788,
    84,806,538,84,807,354,84,813,7792,84,817,7790,
    85,768,217,85,769,218,85,770,219,85,771,360,
    85,772,362,85,774,364,85,776,220,85,777,7910,
    85,778,366,85,779,368,85,780,467,85,783,532,
    85,785,534,85,795,431,85,803,7908,85,804,7794,
    85,808,370,85,813,7798,85,816,7796,86,771,7804,
    86,803,7806,87,768,7808,87,769,7810,87,770,372,
    87,775,7814,87,776,7812,87,803,7816,88,775,7818,
    88,776,7820,89,768,7922,89,769,221,89,770,374,
    89,771,7928,89,772,562,89,775,7822,89,776,376,
    89,777,7926,89,803,7924,90,769,377,90,770,7824,
    90,775,379,90,780,381,90,803,7826,90,817,7828,
    97,768,224,97,769,225,97,770,226,97,771,227,
    97,772,257,97,774,259,97,775,551,97,776,228,
    97,777,7843,97,778,229,97,780,462,97,783,513,
    97,785,515,97,803,7841,97,805,7681,97,808,261,
    98,775,7683,98,803,7685,98,817,7687,99,769,263,
    99,770,265,99,775,267,99,780,269,99,807,231,
    100,775,7691,100,780,271,100,803,7693,100,807,7697,
    100,813,7699,100,817,7695,101,768,232,101,769,233,
    101,770,234,101,771,7869,101,772,275,101,774,277,
    101,775,279,101,776,235,101,777,7867,101,780,283,
    101,783,517,101,785,519,101,803,7865,101,807,553,
    101,808,281,101,813,7705,101,816,7707,102,775,7711,
    103,769,501,103,770,285,103,772,7713,103,774,287,
    103,775,289,103,780,487,103,807,291,104,770,293,
    104,775,7715,104,776,7719,104,780,543,104,803,7717,
    104,807,7721,104,814,7723,104,817,7830,105,768,236,
    105,769,237,105,770,238,105,771,297,105,772,299,
    105,774,301,105,776,239,105,777,7881,105,780,464,
    105,783,521,105,785,523,105,803,7883,105,808,303,
    105,816,7725,106,770,309,106,780,496,107,769,7729,
    107,780,489,107,803,7731,107,807,311,107,817,7733,
    108,769,314,108,780,318,108,803,7735,108,807,316,
    108,813,7741,108,817,7739,109,769,7743,109,775,7745,
    109,803,7747,110,768,505,110,769,324,110,771,241,
    110,775,7749,110,780,328,110,803,7751,110,807,326,
    110,813,7755,110,817,7753,111,768,242,111,769,243,
    111,770,244,111,771,245,111,772,333,111,774,335,
    111,775,559,111,776,246,111,777,7887,111,779,337,
    111,780,466,111,783,525,111,785,527,111,795,417,
    111,803,7885,111,808,491,112,769,7765,112,775,7767,
    114,769,341,114,775,7769,114,780,345,114,783,529,
    114,785,531,114,803,7771,114,807,343,114,817,7775,
    115,769,347,115,770,349,115,775,7777,115,780,353,
    115,803,7779,115,806,537,115,807,351,116,775,7787,
    116,776,7831,116,780,357,116,803,7789,116,806,539,
    116,807,355,116,813,7793,116,817,7791,117,768,249,
    117,769,250,117,770,251,117,771,361,117,772,363,
    117,774,365,117,776,252,117,777,7911,117,778,367,
    117,779,369,117,780,468,117,783,533,117,785,535,
    117,795,432,117,803,7909,117,804,7795,117,808,371,
    117,813,7799,117,816,7797,118,771,7805,118,803,7807,
    119,768,7809,119,769,7811,119,770,373,119,775,7815,
    119,776,7813,119,778,7832,119,803,7817,120,775,7819,
    120,776,7821,121,768,7923,121,769,253,121,770,375,
    121,771,7929,121,772,563,121,775,7823,121,776,255,
    121,777,7927,121,778,7833,121,803,7925,122,769,378,
    122,770,7825,122,775,380,122,780,382,122,803,7827,
    122,817,7829,168,768,8173,168,769,901,168,834,8129,
    194,768,7846,194,769,7844,194,771,7850,194,777,7848,
    196,772,478,197,769,506,198,769,508,198,772,482,
    199,769,7688,202,768,7872,202,769,7870,202,771,7876,
    202,777,7874,207,769,7726,212,768,7890,212,769,7888,
    212,771,7894,212,777,7892,213,769,7756,213,772,556,
    213,776,7758,214,772,554,216,769,510,220,768,475,
    220,769,471,220,772,469,220,780,473,226,768,7847,
    226,769,7845,226,771,7851,226,777,7849,228,772,479,
    229,769,507,230,769,509,230,772,483,231,769,7689,
    234,768,7873,234,769,7871,234,771,7877,234,777,7875,
    239,769,7727,244,768,7891,244,769,7889,244,771,7895,
    244,777,7893,245,769,7757,245,772,557,245,776,7759,
    246,772,555,248,769,511,252,768,476,252,769,472,
    252,772,470,252,780,474,258,768,7856,258,769,7854,
    258,771,7860,258,777,7858,259,768,7857,259,769,7855,
    259,771,7861,259,777,7859,274,768,7700,274,769,7702,
    275,768,7701,275,769,7703,332,768,7760,332,769,7762,
    333,768,7761,333,769,7763,346,775,7780,347,775,7781,
    352,775,7782,353,775,7783,360,769,7800,361,769,7801,
    362,776,7802,363,776,7803,383,775,7835,416,768,7900,
    416,769,7898,416,771,7904,416,777,7902,416,803,7906,
    417,768,7901,417,769,7899,417,771,7905,417,777,7903,
    417,803,7907,431,768,7914,431,769,7912,431,771,7918,
    431,777,7916,431,803,7920,432,768,7915,432,769,7913,
    432,771,7919,432,777,7917,432,803,7921,439,780,494,
    490,772,492,491,772,493,550,772,480,551,772,481,
    552,774,7708,553,774,7709,558,772,560,559,772,561,
    658,780,495,913,768,8122,913,769,902,913,772,8121,
    913,774,8120,913,787,7944,913,788,7945,913,837,8124,
    917,768,8136,917,769,904,917,787,7960,917,788,7961,
    919,768,8138,919,769,905,919,787,7976,919,788,7977,
    919,837,8140,921,768,8154,921,769,906,921,772,8153,
    921,774,8152,921,776,938,921,787,7992,921,788,7993,
    927,768,8184,927,769,908,927,787,8008,927,788,8009,
    929,788,8172,933,768,8170,933,769,910,933,772,8169,
    933,774,8168,933,776,939,933,788,8025,937,768,8186,
    937,769,911,937,787,8040,937,788,8041,937,837,8188,
    940,837,8116,942,837,8132,945,768,8048,945,769,940,
    945,772,8113,945,774,8112,945,787,7936,945,788,7937,
    945,834,8118,945,837,8115,949,768,8050,949,769,941,
    949,787,7952,949,788,7953,951,768,8052,951,769,942,
    951,787,7968,951,788,7969,951,834,8134,951,837,8131,
    953,768,8054,953,769,943,953,772,8145,953,774,8144,
    953,776,970,953,787,7984,953,788,7985,953,834,8150,
    959,768,8056,959,769,972,959,787,8000,959,788,8001,
    961,787,8164,961,788,8165,965,768,8058,965,769,973,
    965,772,8161,965,774,8160,965,776,971,965,787,8016,
    965,788,8017,965,834,8166,969,768,8060,969,769,974,
    969,787,8032,969,788,8033,969,834,8182,969,837,8179,
    970,768,8146,970,769,912,970,834,8151,971,768,8162,
    971,769,944,971,834,8167,974,837,8180,978,769,979,
    978,776,980,1030,776,1031,1040,774,1232,1040,776,1234,
    1043,769,1027,1045,768,1024,1045,774,1238,1045,776,1025,
    1046,774,1217,1046,776,1244,1047,776,1246,1048,768,1037,
    1048,772,1250,1048,774,1049,1048,776,1252,1050,769,1036,
    1054,776,1254,1059,772,1262,1059,774,1038,1059,776,1264,
    1059,779,1266,1063,776,1268,1067,776,1272,1069,776,1260,
    1072,774,1233,1072,776,1235,1075,769,1107,1077,768,1104,
    1077,774,1239,1077,776,1105,1078,774,1218,1078,776,1245,
    1079,776,1247,1080,768,1117,1080,772,1251,1080,774,1081,
    1080,776,1253,1082,769,1116,1086,776,1255,1091,772,1263,
    1091,774,1118,1091,776,1265,1091,779,1267,1095,776,1269,
    1099,776,1273,1101,776,1261,1110,776,1111,1140,783,1142,
    1141,783,1143,1240,776,1242,1241,776,1243,1256,776,1258,
    1257,776,1259,1575,1619,1570,1575,1620,1571,1575,1621,1573,
    1608,1620,1572,1610,1620,1574,1729,1620,1730,1746,1620,1747,
    1749,1620,1728,2344,2364,2345,2352,2364,2353,2355,2364,2356,
    2503,2494,2507,2503,2519,2508,2887,2878,2891,2887,2902,2888,
    2887,2903,2892,2962,3031,2964,3014,3006,3018,3014,3031,3020,
    3015,3006,3019,3142,3158,3144,3263,3285,3264,3270,3266,3274,
    3270,3285,3271,3270,3286,3272,3274,3285,3275,3398,3390,3402,
    3398,3415,3404,3399,3390,3403,3545,3530,3546,3545,3535,3548,
    3545,3551,3550,3548,3530,3549,4133,4142,4134,6917,6965,6918,
    6919,6965,6920,6921,6965,6922,6923,6965,6924,6925,6965,6926,
    6929,6965,6930,6970,6965,6971,6972,6965,6973,6974,6965,6976,
    6975,6965,6977,6978,6965,6979,7734,772,7736,7735,772,7737,
    7770,772,7772,7771,772,7773,7778,775,7784,7779,775,7785,
    7840,770,7852,7840,774,7862,7841,770,7853,7841,774,7863,
    7864,770,7878,7865,770,7879,7884,770,7896,7885,770,7897,
    7936,768,7938,7936,769,7940,7936,834,7942,7936,837,8064,
    7937,768,7939,7937,769,7941,7937,834,7943,7937,837,8065,
    7938,837,8066,7939,837,8067,7940,837,8068,7941,837,8069,
    7942,837,8070,7943,837,8071,7944,768,7946,7944,769,7948,
    7944,834,7950,7944,837,8072,7945,768,7947,7945,769,7949,
    7945,834,7951,7945,837,8073,7946,837,8074,7947,837,8075,
    7948,837,8076,7949,837,8077,7950,837,8078,7951,837,8079,
    7952,768,7954,7952,769,7956,7953,768,7955,7953,769,7957,
    7960,768,7962,7960,769,7964,7961,768,7963,7961,769,7965,
    7968,768,7970,7968,769,7972,7968,834,7974,7968,837,8080,
    7969,768,7971,7969,769,7973,7969,834,7975,7969,837,8081,
    7970,837,8082,7971,837,8083,7972,837,8084,7973,837,8085,
    7974,837,8086,7975,837,8087,7976,768,7978,7976,769,7980,
    7976,834,7982,7976,837,8088,7977,768,7979,7977,769,7981,
    7977,834,7983,7977,837,8089,7978,837,8090,7979,837,8091,
    7980,837,8092,7981,837,8093,7982,837,8094,7983,837,8095,
    7984,768,7986,7984,769,7988,7984,834,7990,7985,768,7987,
    7985,769,7989,7985,834,7991,7992,768,7994,7992,769,7996,
    7992,834,7998,7993,768,7995,7993,769,7997,7993,834,7999,
    8000,768,8002,8000,769,8004,8001,768,8003,8001,769,8005,
    8008,768,8010,8008,769,8012,8009,768,8011,8009,769,8013,
    8016,768,8018,8016,769,8020,8016,834,8022,8017,768,8019,
    8017,769,8021,8017,834,8023,8025,768,8027,8025,769,8029,
    8025,834,8031,8032,768,8034,8032,769,8036,8032,834,8038,
    8032,837,8096,8033,768,8035,8033,769,8037,8033,834,8039,
    8033,837,8097,8034,837,8098,8035,837,8099,8036,837,8100,
    8037,837,8101,8038,837,8102,8039,837,8103,8040,768,8042,
    8040,769,8044,8040,834,8046,8040,837,8104,8041,768,8043,
    8041,769,8045,8041,834,8047,8041,837,8105,8042,837,8106,
    8043,837,8107,8044,837,8108,8045,837,8109,8046,837,8110,
    8047,837,8111,8048,837,8114,8052,837,8130,8060,837,8178,
    8118,837,8119,8127,768,8141,8127,769,8142,8127,834,8143,
    8134,837,8135,8182,837,8183,8190,768,8157,8190,769,8158,
    8190,834,8159,8592,824,8602,8594,824,8603,8596,824,8622,
    8656,824,8653,8658,824,8655,8660,824,8654,8707,824,8708,
    8712,824,8713,8715,824,8716,8739,824,8740,8741,824,8742,
    8764,824,8769,8771,824,8772,8773,824,8775,8776,824,8777,
    8781,824,8813,8801,824,8802,8804,824,8816,8805,824,8817,
    8818,824,8820,8819,824,8821,8822,824,8824,8823,824,8825,
    8826,824,8832,8827,824,8833,8828,824,8928,8829,824,8929,
    8834,824,8836,8835,824,8837,8838,824,8840,8839,824,8841,
    8849,824,8930,8850,824,8931,8866,824,8876,8872,824,8877,
    8873,824,8878,8875,824,8879,8882,824,8938,8883,824,8939,
    8884,824,8940,8885,824,8941,12358,12441,12436,12363,12441,12364,
    12365,12441,12366,12367,12441,12368,12369,12441,12370,12371,12441,12372,
    12373,12441,12374,12375,12441,12376,12377,12441,12378,12379,12441,12380,
    12381,12441,12382,12383,12441,12384,12385,12441,12386,12388,12441,12389,
    12390,12441,12391,12392,12441,12393,12399,12441,12400,12399,12442,12401,
    12402,12441,12403,12402,12442,12404,12405,12441,12406,12405,12442,12407,
    12408,12441,12409,12408,12442,12410,12411,12441,12412,12411,12442,12413,
    12445,12441,12446,12454,12441,12532,12459,12441,12460,12461,12441,12462,
    12463,12441,12464,12465,12441,12466,12467,12441,12468,12469,12441,12470,
    12471,12441,12472,12473,12441,12474,12475,12441,12476,12477,12441,12478,
    12479,12441,12480,12481,12441,12482,12484,12441,12485,12486,12441,12487,
    12488,12441,12489,12495,12441,12496,12495,12442,12497,12498,12441,12499,
    12498,12442,12500,12501,12441,12502,12501,12442,12503,12504,12441,12505,
    12504,12442,12506,12507,12441,12508,12507,12442,12509,12527,12441,12535,
    12528,12441,12536,12529,12441,12537,12530,12441,12538,12541,12441,12542,
    69785,69818,69786,69787,69818,69788,69797,69818,69803,69937,69927,69934,
    69938,69927,69935,70471,70462,70475,70471,70487,70476,70841,70832,70844,
    70841,70842,70843,70841,70845,70846,71096,71087,71098,71097,71087,71099,
};
/* END GENERATED unicode tables */

/* Property byte: general category (bits 0-4), White_Space (0x20), Alphabetic (0x40). */
static unsigned mlstack__uprop(uint32_t cp) {
    if (cp >= 0x110000) return MLSTACK__UC_Cn;
    return mlstack__uprop2[((unsigned)mlstack__uprop1[cp >> MLSTACK__UPROP_SHIFT] << MLSTACK__UPROP_SHIFT) |
                           (cp & ((1u << MLSTACK__UPROP_SHIFT) - 1))];
}
static MLSTACK__UNUSED int mlstack__ucat(uint32_t cp) { return (int)(mlstack__uprop(cp) & 31); }
static MLSTACK__UNUSED int mlstack__uis_whitespace(uint32_t cp) { return (mlstack__uprop(cp) & 0x20) != 0; }
/* Oniguruma's Unicode \w: Alphabetic, marks, decimal digits and connector punctuation. */
static MLSTACK__UNUSED int mlstack__uis_word(uint32_t cp) {
    unsigned p = mlstack__uprop(cp);
    return (p & 0x40) || (((1u << (p & 31)) & (MLSTACK__UCM_M | (1u << MLSTACK__UC_Nd) | (1u << MLSTACK__UC_Pc))) != 0);
}

/* Decodes one code point. Invalid or truncated UTF-8 yields U+FFFD for one byte; never reads past n
   (n must be at least 1). */
static int mlstack__utf8_decode(const unsigned char *s, size_t n, uint32_t *cp) {
    int len;
    if (s[0] < 0x80) {
        *cp = s[0];
        return 1;
    }
    len = mlstack__utf8_valid_len(s, n);
    switch (len) {
    case 2: *cp = ((uint32_t)(s[0] & 0x1F) << 6) | (s[1] & 0x3F); return 2;
    case 3: *cp = ((uint32_t)(s[0] & 0x0F) << 12) | ((uint32_t)(s[1] & 0x3F) << 6) | (s[2] & 0x3F); return 3;
    case 4:
        *cp = ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3F) << 12) | ((uint32_t)(s[2] & 0x3F) << 6) |
              (s[3] & 0x3F);
        return 4;
    default: *cp = 0xFFFD; return 1;
    }
}

/* Case runs {first, count | (step-1) << 15, delta}: binary search for the last run starting at or
   before cp. */
static uint32_t mlstack__ucase_map(const int32_t *runs, size_t n_runs, uint32_t cp) {
    size_t lo = 0, hi = n_runs;
    uint32_t first, count, step;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if ((uint32_t)runs[mid * 3] <= cp) lo = mid; else hi = mid;
    }
    if (n_runs == 0 || (uint32_t)runs[lo * 3] > cp) return cp;
    first = (uint32_t)runs[lo * 3];
    count = (uint32_t)runs[lo * 3 + 1] & 0x7FFF;
    step = ((uint32_t)runs[lo * 3 + 1] >> 15) + 1;
    if (cp - first >= count * step || (cp - first) % step) return cp;
    return (uint32_t)((int32_t)cp + runs[lo * 3 + 2]);
}
#define MLSTACK__NRUNS(a) (sizeof(a) / sizeof(a[0]) / 3)
static MLSTACK__UNUSED uint32_t mlstack__ulower(uint32_t cp) {
    if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    return mlstack__ucase_map(mlstack__ulower_runs, MLSTACK__NRUNS(mlstack__ulower_runs), cp);
}
static MLSTACK__UNUSED uint32_t mlstack__uupper(uint32_t cp) {
    if (cp < 0x80) return (cp >= 'a' && cp <= 'z') ? cp - 32 : cp;
    return mlstack__ucase_map(mlstack__uupper_runs, MLSTACK__NRUNS(mlstack__uupper_runs), cp);
}
/* Simple case folding (CaseFolding.txt statuses C and S), as the regex's (?i) uses it. */
static MLSTACK__UNUSED uint32_t mlstack__ufold(uint32_t cp) {
    if (cp < 0x80) return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp;
    return mlstack__ucase_map(mlstack__ufold_runs, MLSTACK__NRUNS(mlstack__ufold_runs), cp);
}
/* Full lowercase mapping without context (Rust's char::to_lowercase): at most 3 code points. */
static MLSTACK__UNUSED size_t mlstack__ulower_full(uint32_t cp, uint32_t out[3]) {
    size_t i, k;
    for (i = 0; i < sizeof mlstack__ulower_special / sizeof mlstack__ulower_special[0]; i += 4) {
        if (mlstack__ulower_special[i] != cp) continue;
        for (k = 0; k < 3 && mlstack__ulower_special[i + 1 + k]; k++) out[k] = mlstack__ulower_special[i + 1 + k];
        return k;
    }
    out[0] = mlstack__ulower(cp);
    return 1;
}

/* Binary search in sorted {lo, hi, ...} records of `width` words; returns the record or NULL. */
static const uint32_t *mlstack__urange_find(const uint32_t *t, size_t n_words, size_t width, uint32_t cp) {
    size_t lo = 0, hi = n_words / width;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const uint32_t *r = t + mid * width;
        if (cp < r[0]) hi = mid;
        else if (cp > r[1]) lo = mid + 1;
        else return r;
    }
    return NULL;
}
/* Combining marks (Mn, Mc, Me) as known to the normalization version: what StripAccents removes. */
static MLSTACK__UNUSED int mlstack__uis_mark(uint32_t cp) {
    if (cp < 0x300) return 0;
    return mlstack__urange_find(mlstack__umark_ranges, sizeof mlstack__umark_ranges / 4, 2, cp) != NULL;
}
static unsigned mlstack__uccc(uint32_t cp) {
    const uint32_t *r;
    if (cp < 0x300) return 0;
    r = mlstack__urange_find(mlstack__uccc_ranges, sizeof mlstack__uccc_ranges / 4, 3, cp);
    return r ? r[2] : 0;
}

#define MLSTACK__HANGUL_S 0xAC00u
#define MLSTACK__HANGUL_L 0x1100u
#define MLSTACK__HANGUL_V 0x1161u
#define MLSTACK__HANGUL_T 0x11A7u
#define MLSTACK__HANGUL_NS 11172u

/* Growable code point buffer for normalization. */
typedef struct {
    uint32_t *v;
    size_t n, cap;
    int oom;
} mlstack__ubuf;
static void mlstack__ubuf_push(mlstack__ubuf *b, uint32_t cp) {
    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 64;
        uint32_t *v = (b->oom || cap > SIZE_MAX / 8) ? NULL : (uint32_t *)MLSTACK_REALLOC(b->v, cap * sizeof(uint32_t));
        if (!v) {
            b->oom = 1;
            return;
        }
        b->v = v;
        b->cap = cap;
    }
    b->v[b->n++] = cp;
}

/* Appends the full decomposition of cp (canonical, or compatibility when compat). */
static void mlstack__udecompose(mlstack__ubuf *b, uint32_t cp, int compat) {
    size_t lo, hi, i, key_n = sizeof mlstack__udecomp_keys / sizeof mlstack__udecomp_keys[0];
    int pass;
    if (cp < 0xA0) {
        mlstack__ubuf_push(b, cp);
        return;
    }
    if (cp - MLSTACK__HANGUL_S < MLSTACK__HANGUL_NS) {
        uint32_t si = cp - MLSTACK__HANGUL_S;
        mlstack__ubuf_push(b, MLSTACK__HANGUL_L + si / 588);
        mlstack__ubuf_push(b, MLSTACK__HANGUL_V + (si % 588) / 28);
        if (si % 28) mlstack__ubuf_push(b, MLSTACK__HANGUL_T + si % 28);
        return;
    }
    for (pass = compat ? 1 : 0; pass >= 0; pass--) {
        uint32_t key = (cp << 1) | (uint32_t)pass;
        lo = 0;
        hi = key_n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (mlstack__udecomp_keys[mid] < key) lo = mid + 1; else hi = mid;
        }
        if (lo < key_n && mlstack__udecomp_keys[lo] == key) {
            for (i = mlstack__udecomp_off[lo]; i < mlstack__udecomp_off[lo + 1]; i++) {
                uint32_t u = mlstack__udecomp_pool[i];
                if (u >= 0xD800 && u < 0xDC00) {
                    u = 0x10000 + ((u - 0xD800) << 10) + (mlstack__udecomp_pool[i + 1] - 0xDC00);
                    i++;
                }
                mlstack__ubuf_push(b, u);
            }
            return;
        }
    }
    mlstack__ubuf_push(b, cp);
}

static uint32_t mlstack__ucompose(uint32_t a, uint32_t b) {
    size_t lo = 0, hi = sizeof mlstack__ucomp / sizeof mlstack__ucomp[0] / 3;
    if (a - MLSTACK__HANGUL_L < 19 && b - MLSTACK__HANGUL_V < 21)
        return MLSTACK__HANGUL_S + ((a - MLSTACK__HANGUL_L) * 21 + (b - MLSTACK__HANGUL_V)) * 28;
    if (a - MLSTACK__HANGUL_S < MLSTACK__HANGUL_NS && (a - MLSTACK__HANGUL_S) % 28 == 0 && b - MLSTACK__HANGUL_T - 1 < 27)
        return a + (b - MLSTACK__HANGUL_T);
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const uint32_t *r = mlstack__ucomp + mid * 3;
        if (r[0] < a || (r[0] == a && r[1] < b)) lo = mid + 1;
        else if (r[0] == a && r[1] == b) return r[2];
        else hi = mid;
    }
    return 0;
}

/* Stable sort of a run of non-starters by combining class. Short runs by insertion; long ones
   (hostile input) by counting sort so the cost stays linear. */
static int mlstack__usort_marks(uint32_t *v, size_t n) {
    size_t i, j;
    if (n <= 32) {
        for (i = 1; i < n; i++) {
            uint32_t x = v[i];
            unsigned c = mlstack__uccc(x);
            for (j = i; j > 0 && mlstack__uccc(v[j - 1]) > c; j--) v[j] = v[j - 1];
            v[j] = x;
        }
        return 0;
    } else {
        size_t count[257];
        uint32_t *tmp = (uint32_t *)MLSTACK_MALLOC(n * sizeof(uint32_t));
        if (!tmp) return -1;
        memset(count, 0, sizeof count);
        for (i = 0; i < n; i++) count[mlstack__uccc(v[i]) + 1]++;
        for (i = 1; i < 257; i++) count[i] += count[i - 1];
        for (i = 0; i < n; i++) tmp[count[mlstack__uccc(v[i])]++] = v[i];
        memcpy(v, tmp, n * sizeof(uint32_t));
        MLSTACK_FREE(tmp);
        return 0;
    }
}

/* Normalizes UTF-8 text to NFC, NFD, NFKC or NFKD. *out is allocated with MLSTACK_MALLOC (the
   caller frees it) and NUL-terminated; invalid UTF-8 bytes become U+FFFD. */
static MLSTACK__UNUSED mlstack_result mlstack__unorm(int form, const char *s, size_t n, char **out, size_t *out_len) {
    const unsigned char *u = (const unsigned char *)s;
    unsigned char *o, *w;
    mlstack__ubuf b = {NULL, 0, 0, 0};
    size_t i, start;
    int compat = (form == MLSTACK__NFKC || form == MLSTACK__NFKD);
    int compose = (form == MLSTACK__NFC || form == MLSTACK__NFKC);
    uint32_t limit = compose ? (compat ? 0xA0 : 0x300) : (compat ? 0xA0 : 0xC0);
    *out = NULL;
    *out_len = 0;
    if (form < MLSTACK__NFC || form > MLSTACK__NFKD || (!s && n)) return MLSTACK_ERR_INVALID_ARG;
    /* Quick check: text made only of code points below `limit` (no decomposition, class 0) is
       already in every form. */
    for (i = 0; i < n; i++)
        if (u[i] >= 0x80) {
            uint32_t cp;
            size_t l = (size_t)mlstack__utf8_decode(u + i, n - i, &cp);
            if (cp >= limit) break; /* also catches invalid bytes (U+FFFD) */
            i += l - 1;
        }
    if (i >= n) {
        *out = mlstack__strndup(s ? s : "", n);
        if (!*out) return MLSTACK_ERR_NO_MEMORY;
        *out_len = n;
        return MLSTACK_OK;
    }
    for (i = 0; i < n;) {
        uint32_t cp;
        i += (size_t)mlstack__utf8_decode(u + i, n - i, &cp);
        mlstack__udecompose(&b, cp, compat);
    }
    if (b.oom) goto oom;
    for (i = 0; i < b.n;) {
        if (mlstack__uccc(b.v[i]) == 0) {
            i++;
            continue;
        }
        start = i;
        while (i < b.n && mlstack__uccc(b.v[i]) != 0) i++;
        if (i - start > 1 && mlstack__usort_marks(b.v + start, i - start)) goto oom;
    }
    if (compose && b.n) {
        size_t wn = 0, starter = (size_t)-1;
        unsigned last_cc = 0;
        for (i = 0; i < b.n; i++) {
            uint32_t c = b.v[i], comp;
            unsigned cc = mlstack__uccc(c);
            if (starter != (size_t)-1 && (wn == starter + 1 || (last_cc != 0 && last_cc < cc)) &&
                (comp = mlstack__ucompose(b.v[starter], c)) != 0) {
                b.v[starter] = comp;
                continue;
            }
            if (cc == 0) starter = wn;
            last_cc = cc;
            b.v[wn++] = c;
        }
        b.n = wn;
    }
    if (b.n > (SIZE_MAX - 1) / 4) goto oom;
    o = (unsigned char *)MLSTACK_MALLOC(b.n * 4 + 1);
    if (!o) goto oom;
    for (w = o, i = 0; i < b.n; i++) w += mlstack__utf8_put(w, b.v[i]);
    *w = 0;
    *out = (char *)o;
    *out_len = (size_t)(w - o);
    MLSTACK_FREE(b.v);
    return MLSTACK_OK;
oom:
    MLSTACK_FREE(b.v);
    return MLSTACK_ERR_NO_MEMORY;
}


/* ==== 6. REGEX ==== */  /* >>regex */

/* A backtracking regex engine for tokenizer Split patterns, with Oniguruma's (Ruby syntax) meaning:
   leftmost match, ordered alternation, greedy/lazy/possessive quantifiers, Unicode-aware \s \d \w
   (White_Space; Nd; Alphabetic+M+Nd+Pc), `.` not matching \n, ^ and $ at line boundaries.
   Unsupported: backreferences, lookbehind, scripts (\p{Han}), class intersection (&&), POSIX
   brackets, multi-character case folds (so (?i:ss) does not match U+00DF).
   The pattern compiles to a program of instructions with relative jumps; search runs it with a
   backtrack stack on the caller's stack (heap only past 256 entries) and a step budget, so one
   compiled regex can be searched from many threads at once. */

#ifndef MLSTACK_REGEX_STEP_BASE
#define MLSTACK_REGEX_STEP_BASE 10000000u /* steps allowed per search, plus 32 per input byte */
#endif
#define MLSTACK__RE_MAX_INST 65536
#define MLSTACK__RE_MAX_DEPTH 64
#define MLSTACK__RE_MAX_REGS 64
#define MLSTACK__RE_MAX_NEG 8
#define MLSTACK__RE_INF 0x7FFFFFFF

enum {
    MLSTACK__RE_CHAR, MLSTACK__RE_ANY, MLSTACK__RE_CLASS, /* consume one code point */
    MLSTACK__RE_REP,      /* a single-code-point matcher repeated: mop/a as above, min, max, mode */
    MLSTACK__RE_SPLIT,    /* try pc+a, on failure pc+b */
    MLSTACK__RE_JMP,      /* pc += a */
    MLSTACK__RE_MARK,     /* reg[a] = pos (undone on backtrack) */
    MLSTACK__RE_CHECK,    /* if pos == reg[a]: pc += b (leave a loop whose body matched empty) */
    MLSTACK__RE_LOOK,     /* sub-program of a instructions follows; mode: lookahead, negative, atomic */
    MLSTACK__RE_SUCCEED,  /* end of a sub-program */
    MLSTACK__RE_BOL, MLSTACK__RE_EOL, MLSTACK__RE_BOS, MLSTACK__RE_EOS, MLSTACK__RE_EOSNL,
    MLSTACK__RE_WORDB, MLSTACK__RE_NWORDB,
    MLSTACK__RE_MATCH
};
enum { MLSTACK__RE_GREEDY, MLSTACK__RE_LAZY, MLSTACK__RE_POSSESSIVE };
enum { MLSTACK__RE_AHEAD, MLSTACK__RE_NAHEAD, MLSTACK__RE_ATOMIC };
#define MLSTACK__RE_P_SPACE 1u /* \s */
#define MLSTACK__RE_P_WORD 2u  /* \w */
#define MLSTACK__RE_P_ALL 4u   /* every code point */

typedef struct {
    uint8_t op, mop, mode, pad;
    int32_t a, min, max;
} mlstack__re_inst;

/* A class item set: categories (bit per MLSTACK__UC_*) and property bits. */
typedef struct {
    uint32_t cats, props;
} mlstack__re_set;

typedef struct {
    uint32_t ascii[4];                         /* final answer for code points below 128 */
    mlstack__re_set pos;                       /* matches if in any of these ... */
    mlstack__re_set neg[MLSTACK__RE_MAX_NEG];  /* ... or outside any of these */
    int n_neg, negated;
    uint32_t r_off, n_r;                       /* sorted, merged ranges in regex->ranges */
} mlstack__re_class;

typedef struct mlstack__regex mlstack__regex;
struct mlstack__regex {
    mlstack__re_inst *prog;
    int n_prog;
    mlstack__re_class *cls;
    int n_cls;
    uint32_t *ranges; /* pairs lo, hi */
    int n_regs;
    int nullable;      /* may match the empty string: every position is a candidate */
    uint32_t first[8]; /* bytes that can start a match */
};

static int mlstack__re_set_has(const mlstack__re_set *s, uint32_t cp) {
    if (s->props & MLSTACK__RE_P_ALL) return 1;
    if (s->cats && ((s->cats >> mlstack__ucat(cp)) & 1)) return 1;
    if ((s->props & MLSTACK__RE_P_SPACE) && mlstack__uis_whitespace(cp)) return 1;
    if ((s->props & MLSTACK__RE_P_WORD) && mlstack__uis_word(cp)) return 1;
    return 0;
}
/* Membership ignoring the ASCII bitmap (used to build it, and for code points >= 128). */
static int mlstack__re_class_slow(const mlstack__regex *re, const mlstack__re_class *c, uint32_t cp) {
    int in = mlstack__re_set_has(&c->pos, cp), i;
    for (i = 0; !in && i < c->n_neg; i++) in = !mlstack__re_set_has(&c->neg[i], cp);
    if (!in && c->n_r) {
        const uint32_t *r = re->ranges + 2 * c->r_off;
        size_t lo = 0, hi = c->n_r;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (cp < r[2 * mid]) hi = mid;
            else if (cp > r[2 * mid + 1]) lo = mid + 1;
            else { in = 1; break; }
        }
    }
    return in != c->negated;
}
static int mlstack__re_test(const mlstack__regex *re, int mop, int32_t a, uint32_t cp) {
    if (mop == MLSTACK__RE_CHAR) return cp == (uint32_t)a;
    if (mop == MLSTACK__RE_ANY) return cp != '\n';
    {
        const mlstack__re_class *c = &re->cls[a];
        if (cp < 128) return (c->ascii[cp >> 5] >> (cp & 31)) & 1;
        return mlstack__re_class_slow(re, c, cp);
    }
}

/* ---- compiler ---- */

typedef struct {
    const unsigned char *p;
    size_t n, i;
    mlstack__regex *re;
    int cap_prog, cap_cls, n_ranges, cap_ranges;
    int depth;
    mlstack_error *err;
    mlstack_result rc;
} mlstack__re_comp;

static int mlstack__re_fail(mlstack__re_comp *c, mlstack_result code, const char *fmt, const char *what, size_t at) {
    if (c->rc == MLSTACK_OK) {
        c->rc = code;
        if (c->err) {
            char msg[160];
            snprintf(msg, sizeof msg, fmt, what);
            MLSTACK__FAIL(c->err, code, "regex: %s at offset %zu", msg, at);
        }
    }
    return -1;
}
#define MLSTACK__RE_OOM(c) mlstack__re_fail(c, MLSTACK_ERR_NO_MEMORY, "%s", "out of memory", (c)->i)

static int mlstack__re_emit(mlstack__re_comp *c, int op, int mop, int32_t a, int32_t mn, int32_t mx, int mode) {
    mlstack__regex *re = c->re;
    mlstack__re_inst *ins;
    if (re->n_prog >= MLSTACK__RE_MAX_INST)
        return mlstack__re_fail(c, MLSTACK_ERR_LIMIT, "%s", "pattern too large", c->i);
    if (re->n_prog == c->cap_prog) {
        int cap = c->cap_prog ? c->cap_prog * 2 : 64;
        mlstack__re_inst *np = (mlstack__re_inst *)MLSTACK_REALLOC(re->prog, (size_t)cap * sizeof *np);
        if (!np) return MLSTACK__RE_OOM(c);
        re->prog = np;
        c->cap_prog = cap;
    }
    ins = &re->prog[re->n_prog];
    ins->op = (uint8_t)op;
    ins->mop = (uint8_t)mop;
    ins->mode = (uint8_t)mode;
    ins->pad = 0;
    ins->a = a;
    ins->min = mn;
    ins->max = mx;
    return re->n_prog++;
}
/* Opens a gap of k instructions at position at (the block after it moves as a whole: its relative
   jumps stay valid). */
static int mlstack__re_insert(mlstack__re_comp *c, int at, int k) {
    int i;
    for (i = 0; i < k; i++)
        if (mlstack__re_emit(c, MLSTACK__RE_JMP, 0, 0, 0, 0, 0) < 0) return -1;
    memmove(c->re->prog + at + k, c->re->prog + at, (size_t)(c->re->n_prog - k - at) * sizeof(mlstack__re_inst));
    return 0;
}
static void mlstack__re_set_inst(mlstack__re_comp *c, int at, int op, int32_t a, int32_t b) {
    mlstack__re_inst *ins = &c->re->prog[at];
    memset(ins, 0, sizeof *ins);
    ins->op = (uint8_t)op;
    ins->a = a;
    ins->min = b;
}

static int mlstack__re_add_range(mlstack__re_comp *c, uint32_t lo, uint32_t hi) {
    if (c->n_ranges == c->cap_ranges) {
        int cap = c->cap_ranges ? c->cap_ranges * 2 : 64;
        uint32_t *nr;
        if (cap > (1 << 22)) return mlstack__re_fail(c, MLSTACK_ERR_LIMIT, "%s", "character classes too large", c->i);
        nr = (uint32_t *)MLSTACK_REALLOC(c->re->ranges, (size_t)cap * 2 * sizeof(uint32_t));
        if (!nr) return MLSTACK__RE_OOM(c);
        c->re->ranges = nr;
        c->cap_ranges = cap;
    }
    c->re->ranges[2 * c->n_ranges] = lo;
    c->re->ranges[2 * c->n_ranges + 1] = hi;
    c->n_ranges++;
    return 0;
}

/* Adds to the ranges from index `from` every code point that case-folds like one already there
   (two passes over the fold table reach the whole equivalence class). */
static int mlstack__re_fold_close(mlstack__re_comp *c, int from) {
    size_t k, nr = MLSTACK__NRUNS(mlstack__ufold_runs);
    int pass, i, end;
    uint32_t ch;
    for (ch = 'A'; ch <= 'z'; ch++) { /* ASCII letters are not in the run table */
        uint32_t f = mlstack__ufold(ch), g = (ch >= 'a' && ch <= 'z') ? ch - 32 : ch;
        if (!((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z'))) continue;
        end = c->n_ranges;
        for (i = from; i < end; i++) {
            const uint32_t *r = c->re->ranges + 2 * i;
            if (r[0] <= ch && ch <= r[1]) {
                if (mlstack__re_add_range(c, f, f) || mlstack__re_add_range(c, g, g)) return -1;
                break;
            }
        }
    }
    for (pass = 0; pass < 2; pass++) {
        for (k = 0; k < nr; k++) {
            uint32_t first = (uint32_t)mlstack__ufold_runs[k * 3];
            uint32_t count = (uint32_t)mlstack__ufold_runs[k * 3 + 1] & 0x7FFF;
            uint32_t step = ((uint32_t)mlstack__ufold_runs[k * 3 + 1] >> 15) + 1, j;
            int32_t delta = mlstack__ufold_runs[k * 3 + 2];
            for (j = 0; j < count; j++) {
                uint32_t src = first + j * step, dst = (uint32_t)((int32_t)src + delta);
                int hit_src = 0, hit_dst = 0;
                end = c->n_ranges;
                for (i = from; i < end; i++) {
                    const uint32_t *r = c->re->ranges + 2 * i;
                    if (r[0] <= src && src <= r[1]) hit_src = 1;
                    if (r[0] <= dst && dst <= r[1]) hit_dst = 1;
                }
                if (hit_src && !hit_dst && mlstack__re_add_range(c, dst, dst)) return -1;
                if (hit_dst && !hit_src && mlstack__re_add_range(c, src, src)) return -1;
            }
        }
    }
    return 0;
}

static int mlstack__re_range_cmp(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Finishes a class whose ranges start at index from: sort, merge, ASCII bitmap. */
static int mlstack__re_class_finish(mlstack__re_comp *c, mlstack__re_class *k, int from, int fold) {
    int i, w;
    uint32_t cp, *r;
    if (fold && mlstack__re_fold_close(c, from)) return -1;
    r = c->n_ranges > from ? c->re->ranges + 2 * from : NULL;
    if (r) qsort(r, (size_t)(c->n_ranges - from), 2 * sizeof(uint32_t), mlstack__re_range_cmp);
    for (w = 0, i = 0; r && i < c->n_ranges - from; i++) {
        if (w && r[2 * i] <= r[2 * (w - 1) + 1] + 1) {
            if (r[2 * i + 1] > r[2 * (w - 1) + 1]) r[2 * (w - 1) + 1] = r[2 * i + 1];
        } else {
            r[2 * w] = r[2 * i];
            r[2 * w + 1] = r[2 * i + 1];
            w++;
        }
    }
    c->n_ranges = from + w;
    k->r_off = (uint32_t)from;
    k->n_r = (uint32_t)w;
    memset(k->ascii, 0, sizeof k->ascii);
    for (cp = 0; cp < 128; cp++)
        if (mlstack__re_class_slow(c->re, k, cp)) k->ascii[cp >> 5] |= 1u << (cp & 31);
    return 0;
}

static int mlstack__re_new_class(mlstack__re_comp *c, const mlstack__re_class *k) {
    mlstack__regex *re = c->re;
    if (re->n_cls == c->cap_cls) {
        int cap = c->cap_cls ? c->cap_cls * 2 : 16;
        mlstack__re_class *nc;
        if (cap > MLSTACK__RE_MAX_INST) return mlstack__re_fail(c, MLSTACK_ERR_LIMIT, "%s", "pattern too large", c->i);
        nc = (mlstack__re_class *)MLSTACK_REALLOC(re->cls, (size_t)cap * sizeof *nc);
        if (!nc) return MLSTACK__RE_OOM(c);
        re->cls = nc;
        c->cap_cls = cap;
    }
    re->cls[re->n_cls] = *k;
    return re->n_cls++;
}

static int mlstack__re_hex(mlstack__re_comp *c, int maxd, int braces, uint32_t *out) {
    uint32_t v = 0;
    int d = 0;
    size_t at = c->i;
    while (c->i < c->n && d < maxd) {
        int ch = c->p[c->i], x;
        if (ch >= '0' && ch <= '9') x = ch - '0';
        else if (ch >= 'a' && ch <= 'f') x = ch - 'a' + 10;
        else if (ch >= 'A' && ch <= 'F') x = ch - 'A' + 10;
        else break;
        v = v * 16 + (uint32_t)x;
        c->i++;
        d++;
    }
    if (braces) {
        if (c->i >= c->n || c->p[c->i] != '}') d = 0;
        else c->i++;
    }
    if (!d || v > 0x10FFFF) return mlstack__re_fail(c, MLSTACK_ERR_FORMAT, "%s", "bad hexadecimal escape", at);
    *out = v;
    return 0;
}

/* Property name inside \p{...}: a category or major category; fills s. */
static int mlstack__re_prop(mlstack__re_comp *c, mlstack__re_set *s, int *neg) {
    static const char *const names[] = {"Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd", "Nl", "No", "Pc", "Pd", "Ps", "Pe",
                                        "Pi", "Pf", "Po", "Sm", "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co", "Cn"};
    static const struct { const char *name; uint32_t mask; } majors[] = {
        {"L", MLSTACK__UCM_L}, {"M", MLSTACK__UCM_M}, {"N", MLSTACK__UCM_N}, {"P", MLSTACK__UCM_P},
        {"S", MLSTACK__UCM_S}, {"Z", MLSTACK__UCM_Z}, {"C", MLSTACK__UCM_C}, {"Letter", MLSTACK__UCM_L},
        {"Mark", MLSTACK__UCM_M}, {"Number", MLSTACK__UCM_N}, {"Punctuation", MLSTACK__UCM_P},
        {"Symbol", MLSTACK__UCM_S}, {"Separator", MLSTACK__UCM_Z}, {"Other", MLSTACK__UCM_C},
        {"Any", 0}};
    size_t at = c->i - 2, b, len;
    unsigned k;
    char name[32];
    if (c->i >= c->n || c->p[c->i] != '{')
        return mlstack__re_fail(c, MLSTACK_ERR_UNSUPPORTED, "unsupported construct '%s' (use \\p{...})", "\\p", at);
    b = ++c->i;
    if (c->i < c->n && c->p[c->i] == '^') {
        *neg = !*neg;
        b = ++c->i;
    }
    while (c->i < c->n && c->p[c->i] != '}') c->i++;
    if (c->i >= c->n) return mlstack__re_fail(c, MLSTACK_ERR_FORMAT, "%s", "unterminated \\p{", at);
    len = c->i - b;
    c->i++;
    if (len >= sizeof name) len = sizeof name - 1;
    memcpy(name, c->p + b, len);
    name[len] = 0;
    s->cats = s->props = 0;
    for (k = 0; k < sizeof names / sizeof names[0]; k++)
        if (!strcmp(name, names[k])) {
            s->cats = 1u << k;
            return 0;
        }
    for (k = 0; k < sizeof majors / sizeof majors[0]; k++)
        if (!strcmp(name, majors[k].name)) {
            s->cats = majors[k].mask;
            if (!majors[k].mask) s->props = MLSTACK__RE_P_ALL;
            return 0;
        }
    return mlstack__re_fail(c, MLSTACK_ERR_UNSUPPORTED, "unsupported property '%s'", name, at);
}

/* Parses an escape after the backslash. Returns 1 for a single code point (*cp), 2 for a set
   (*s, *neg), 3 for an anchor (*cp = opcode), -1 on error. in_class limits what is allowed. */
static int mlstack__re_escape(mlstack__re_comp *c, int in_class, uint32_t *cp, mlstack__re_set *s, int *neg) {
    size_t at = c->i - 1;
    int ch;
    char what[8];
    if (c->i >= c->n) return mlstack__re_fail(c, MLSTACK_ERR_FORMAT, "%s", "pattern ends with a backslash", at);
    ch = c->p[c->i++];
    s->cats = s->props = 0;
    *neg = 0;
    switch (ch) {
    case 't': *cp = '\t'; return 1;
    case 'n': *cp = '\n'; return 1;
    case 'r': *cp = '\r'; return 1;
    case 'f': *cp = '\f'; return 1;
    case 'v': *cp = '\v'; return 1;
    case 'a': *cp = 7; return 1;
    case 'e': *cp = 27; return 1;
    case 'x':
        if (c->i < c->n && c->p[c->i] == '{') {
            c->i++;
            return mlstack__re_hex(c, 8, 1, cp) ? -1 : 1;
        }
        return mlstack__re_hex(c, 2, 0, cp) ? -1 : 1;
    case 'u': return mlstack__re_hex(c, 4, 0, cp) ? -1 : 1;
    case 's': case 'S': s->props = MLSTACK__RE_P_SPACE; *neg = ch == 'S'; return 2;
    case 'w': case 'W': s->props = MLSTACK__RE_P_WORD; *neg = ch == 'W'; return 2;
    case 'd': case 'D': s->cats = 1u << MLSTACK__UC_Nd; *neg = ch == 'D'; return 2;
    case 'p': case 'P': *neg = ch == 'P'; return mlstack__re_prop(c, s, neg) ? -1 : 2;
    default: break;
    }
    if (!in_class) {
        switch (ch) {
        case 'A': *cp = MLSTACK__RE_BOS; return 3;
        case 'z': *cp = MLSTACK__RE_EOS; return 3;
        case 'Z': *cp = MLSTACK__RE_EOSNL; return 3;
        case 'b': *cp = MLSTACK__RE_WORDB; return 3;
        case 'B': *cp = MLSTACK__RE_NWORDB; return 3;
        default: break;
        }
    }
    if (ch >= 0x80 || !((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'))) {
        if (ch >= 0x80) {
            c->i--;
            c->i += (size_t)mlstack__utf8_decode(c->p + c->i, c->n - c->i, cp);
        } else {
            *cp = (uint32_t)ch;
        }
        return 1;
    }
    what[0] = '\\';
    what[1] = (char)ch;
    what[2] = 0;
    return mlstack__re_fail(c, MLSTACK_ERR_UNSUPPORTED, "unsupported construct '%s'", what, at);
}

/* One code point of pattern text (the pattern is UTF-8). */
static int mlstack__re_literal(mlstack__re_comp *c, uint32_t *cp) {
    size_t at = c->i;
    int l = mlstack__utf8_valid_len(c->p + c->i, c->n - c->i);
    if (!l) return mlstack__re_fail(c, MLSTACK_ERR_FORMAT, "%s", "invalid UTF-8 in pattern", at);
    c->i += (size_t)mlstack__utf8_decode(c->p + c->i, c->n - c->i, cp);
    return 0;
}

/* Adds set s (negated if neg) to class k. */
static int mlstack__re_class_add_set(mlstack__re_comp *c, mlstack__re_class *k, const mlstack__re_set *s, int neg, size_t at) {
    if (!neg) {
        k->pos.cats |= s->cats;
        k->pos.props |= s->props;
        return 0;
    }
    if (k->n_neg == MLSTACK__RE_MAX_NEG) return mlstack__re_fail(c, MLSTACK_ERR_LIMIT, "%s", "too many negated items in a class", at);
    k->neg[k->n_neg++] = *s;
    return 0;
}

/* Parses the body of [...] after '[' into k (ranges appended from c->n_ranges). */
static int mlstack__re_class_body(mlstack__re_comp *c, mlstack__re_class *k, size_t open_at) {
    int first = 1;
    if (++c->depth > MLSTACK__RE_MAX_DEPTH) return mlstack__re_fail(c, MLSTACK_ERR_LIMIT, "%s", "classes nested too deeply", open_at);
    for (;;) {
        uint32_t lo, hi;
        mlstack__re_set s;
        int neg, r;
        size_t at = c->i;
        if (c->i >= c->n) return mlstack__re_fail(c, MLSTACK_ERR_FORMAT, "%s", "missing ']' for class", open_at);
        if (c->p[c->i] == ']' && !first) {
            c->i++;
            break;
        }
        first = 0;
        if (c->p[c->i] == '[') {
            mlstack__re_class inner;
            if (c->i + 1 < c->n && c->p[c->i + 1] == ':')
                return mlstack__re_fail(c, MLSTACK_ERR_UNSUPPORTED, "unsupported construct '%s'", "[:", at);
            if (c->i + 1 < c->n && c->p[c->i + 1] == '^')
                return mlstack__re_fail(c, MLSTACK_ERR_UNSUPPORTED, "unsupported construct '%s' (negated nested class)", "[^", at);
            c->i++;
            memset(&inner, 0, sizeof inner);
            if (mlstack__re_class_body(c, &inner, at)) return -1;
            k->pos.cats |= inner.pos.cats;
            k->pos.props |= inner.pos.props;
            for (r = 0; r < inner.n_neg; r++)
                if (mlstack__re_class_add_set(c, k, &inner.neg[r], 1, at)) return -1;
            continue;
        }
        if (c->p[c->i] == '&' && c->i + 1 < c->n && c->p[c->i + 1] == '&')
            return mlstack__re_fail(c, MLSTACK_ERR_UNSUPPORTED, "unsupported construct '%s'", "&&", at);
        if (c->p[c->i] == '\\') {
            c->i++;
            r = mlstack__re_escape(c, 1, &lo, &s, &neg);
            if (r < 0) return -1;
            if (r == 2) {
                if (mlstack__re_class_add_set(c, k, &s, neg, at)) return -1;
                continue;
            }
        } else if (mlstack__re_literal(c, &lo)) {
            return -1;
        }
        hi = lo;
        if (c->i + 1 < c->n && c->p[c->i] == '-' && c->p[c->i + 1] != ']') {
            size_t at2 = c->i;
            c->i++;
            if (c->p[c->i] == '\\') {
                c->i++;
                r = mlstack__re_escape(c, 1, &hi, &s, &neg);
                if (r < 0) return -1;
                if (r != 1) return mlstack__re_fail(c, MLSTACK_ERR_FORMAT, "%s", "class range ends in a set", at2);
            } else if (c->p[c->i] == '[') {
                return mlstack__re_fail(c, MLSTACK_ERR_UNSUPPORTED, "unsupported construct '%s'", "-[", at2);
            } else if (mlstack__re_literal(c, &hi)) {
                return -1;
            }
            if (hi < lo) return mlstack__re_fail(c, MLSTACK_ERR_FORMAT, "%s", "class range out of order", at);
        }
        if (mlstack__re_add_range(c, lo, hi)) return -1;
    }
    c->depth--;
    return 0;
}

static int mlstack__re_alt(mlstack__re_comp *c, int fold, int *nullable);

/* Parses one atom; emits it and reports whether it can match empty and whether it is a single
   code point matcher (then *single = instruction index). Returns 0, 1 if nothing was parsed
   (end of sequence), -1 on error. */
static int mlstack__re_atom(mlstack__re_comp *c, int *fold, int *nullable, int *single) {
    size_t at = c->i;
    int ch = c->p[c->i], r;
    uint32_t cp;
    mlstack__re_set s;
    int neg;
    *nullable = 0;
    *single = -1;
    switch (ch) {
    case '|': case ')': return 1;
    case '*': case '+': case '?':
        return mlstack__re_fail(c, MLSTACK_ERR_FORMAT, "nothing to repeat before '%c'", ch == '*' ? "*" : ch == '+' ? "+" : "?", at);
    case '^': c->i++; *nullable = 1; return mlstack__re_emit(c, MLSTACK__RE_BOL, 0, 0, 0, 0, 0) < 0 ? -1 : 0;
    case '$': c->i++; *nullable = 1; return mlstack__re_emit(c, MLSTACK__RE_EOL, 0, 0, 0, 0, 0) < 0 ? -1 : 0;
    case '.':
        c->i++;
        *single = mlstack__re_emit(c, MLSTACK__RE_ANY, MLSTACK__RE_ANY, 0, 0, 0, 0);
        return *single < 0 ? -1 : 0;
    case '[': {
        mlstack__re_class k;
        int from = c->n_ranges, idx;
        memset(&k, 0, sizeof k);
        c->i++;
        if (c->i < c->n && c->p[c->i] == '^') {
            k.negated = 1;
            c->i++;
        }
        if (mlstack__re_class_body(c, &k, at) || mlstack__re_class_finish(c, &k, from, *fold)) return -1;
        if ((idx = mlstack__re_new_class(c, &k)) < 0) return -1;
        *single = mlstack__re_emit(c, MLSTACK__RE_CLASS, MLSTACK__RE_CLASS, idx, 0, 0, 0);
        return *single < 0 ? -1 : 0;
    }
    case '(': {
        int mode = -1, inner_fold = *fold, start, look;
        c->i++;
        if (c->i < c->n && c->p[c->i] == '?') {
            size_t q = c->i + 1;
            int ch2 = q < c->n ? c->p[q] : 0;
            if (ch2 == ':') c->i = q + 1;
            else if (ch2 == '=') { mode = MLSTACK__RE_AHEAD; c->i = q + 1; }
            else if (ch2 == '!') { mode = MLSTACK__RE_NAHEAD; c->i = q + 1; }
            else if (ch2 == '>') { mode = MLSTACK__RE_ATOMIC; c->i = q + 1; }
            else if (ch2 == 'i' || ch2 == '-') {
                int on = 1;
                while (q < c->n && (c->p[q] == 'i' || c->p[q] == '-')) {
                    if (c->p[q] == '-') on = 0; else inner_fold = on;
                    q++;
                }
                if (q < c->n && c->p[q] == ')') { /* (?i) applies to the rest of the group */
                    c->i = q + 1;
                    *fold = inner_fold;
                    *nullable = 1;
                    return 0;
                }
                if (q >= c->n || c->p[q] != ':')
                    return mlstack__re_fail(c, MLSTACK_ERR_UNSUPPORTED, "unsupported construct '%s'", "(?flags", at);
                c->i = q + 1;
            } else if (ch2 == '<' && q + 1 < c->n && (c->p[q + 1] == '=' || c->p[q + 1] == '!')) {
                return mlstack__re_fail(c, MLSTACK_ERR_UNSUPPORTED, "unsupported construct '%s'", c->p[q + 1] == '=' ? "(?<=" : "(?<!", at);
            } else if (ch2 == '<' || ch2 == 'P' || ch2 == '\'') {
                return mlstack__re_fail(c, MLSTACK_ERR_UNSUPPORTED, "unsupported construct '%s'", "(?<name>", at);
            } else {
                return mlstack__re_fail(c, MLSTACK_ERR_UNSUPPORTED, "unsupported construct '%s'", "(?", at);
            }
        }
        if (++c->depth > MLSTACK__RE_MAX_DEPTH) return mlstack__re_fail(c, MLSTACK_ERR_LIMIT, "%s", "groups nested too deeply", at);
        start = c->re->n_prog;
        if (mode >= 0 && mlstack__re_emit(c, MLSTACK__RE_LOOK, 0, 0, 0, 0, mode) < 0) return -1;
        if (mlstack__re_alt(c, inner_fold, nullable)) return -1;
        if (c->i >= c->n || c->p[c->i] != ')') return mlstack__re_fail(c, MLSTACK_ERR_FORMAT, "%s", "missing ')' for group opened here", at);
        c->i++;
        c->depth--;
        if (mode >= 0) {
            if (mlstack__re_emit(c, MLSTACK__RE_SUCCEED, 0, 0, 0, 0, 0) < 0) return -1;
            look = start;
            c->re->prog[look].a = c->re->n_prog - look - 1;
            if (mode != MLSTACK__RE_ATOMIC) *nullable = 1;
        }
        return 0;
    }
    case '\\':
        c->i++;
        r = mlstack__re_escape(c, 0, &cp, &s, &neg);
        if (r < 0) return -1;
        if (r == 3) {
            *nullable = 1;
            return mlstack__re_emit(c, (int)cp, 0, 0, 0, 0, 0) < 0 ? -1 : 0;
        }
        if (r == 2) {
            mlstack__re_class k;
            int idx;
            memset(&k, 0, sizeof k);
            k.pos = s;
            k.negated = neg;
            if (mlstack__re_class_finish(c, &k, c->n_ranges, 0) || (idx = mlstack__re_new_class(c, &k)) < 0) return -1;
            *single = mlstack__re_emit(c, MLSTACK__RE_CLASS, MLSTACK__RE_CLASS, idx, 0, 0, 0);
            return *single < 0 ? -1 : 0;
        }
        break;
    default:
        if (mlstack__re_literal(c, &cp)) return -1;
        break;
    }
    if (*fold) {
        mlstack__re_class k;
        int from = c->n_ranges, idx;
        memset(&k, 0, sizeof k);
        if (mlstack__re_add_range(c, cp, cp) || mlstack__re_class_finish(c, &k, from, 1)) return -1;
        if (k.n_r > 1 || c->re->ranges[2 * from] != c->re->ranges[2 * from + 1]) {
            if ((idx = mlstack__re_new_class(c, &k)) < 0) return -1;
            *single = mlstack__re_emit(c, MLSTACK__RE_CLASS, MLSTACK__RE_CLASS, idx, 0, 0, 0);
            return *single < 0 ? -1 : 0;
        }
        c->n_ranges = from;
    }
    *single = mlstack__re_emit(c, MLSTACK__RE_CHAR, MLSTACK__RE_CHAR, (int32_t)cp, 0, 0, 0);
    return *single < 0 ? -1 : 0;
}

/* Appends the saved body (relative jumps keep a moved copy valid). */
static int mlstack__re_put_body(mlstack__re_comp *c, const mlstack__re_inst *body, int blen) {
    int i;
    for (i = 0; i < blen; i++)
        if (mlstack__re_emit(c, body[i].op, body[i].mop, body[i].a, body[i].min, body[i].max, body[i].mode) < 0) return -1;
    return 0;
}

/* Emits body* (plus: body+) as a loop. A body that can match empty gets MARK/CHECK so the loop
   stops instead of spinning. */
static int mlstack__re_loop(mlstack__re_comp *c, const mlstack__re_inst *body, int blen, int lazy, int nullable, int plus) {
    int reg = -1, top = c->re->n_prog, split = -1, check = -1, end;
    if (nullable) {
        if (c->re->n_regs >= MLSTACK__RE_MAX_REGS)
            return mlstack__re_fail(c, MLSTACK_ERR_LIMIT, "%s", "too many loops that can match empty", c->i);
        reg = c->re->n_regs++;
    }
    if (!plus && (split = mlstack__re_emit(c, MLSTACK__RE_SPLIT, 0, 0, 0, 0, 0)) < 0) return -1;
    if (nullable && mlstack__re_emit(c, MLSTACK__RE_MARK, 0, reg, 0, 0, 0) < 0) return -1;
    if (mlstack__re_put_body(c, body, blen)) return -1;
    if (nullable && (check = mlstack__re_emit(c, MLSTACK__RE_CHECK, 0, reg, 0, 0, 0)) < 0) return -1;
    if (!plus) {
        if (mlstack__re_emit(c, MLSTACK__RE_JMP, 0, 0, 0, 0, 0) < 0) return -1;
        end = c->re->n_prog;
        c->re->prog[end - 1].a = top - (end - 1);
        mlstack__re_set_inst(c, split, MLSTACK__RE_SPLIT, lazy ? end - split : 1, lazy ? 1 : end - split);
    } else {
        if ((split = mlstack__re_emit(c, MLSTACK__RE_SPLIT, 0, 0, 0, 0, 0)) < 0) return -1;
        end = c->re->n_prog;
        mlstack__re_set_inst(c, split, MLSTACK__RE_SPLIT, lazy ? 1 : top - split, lazy ? top - split : 1);
    }
    if (check >= 0) c->re->prog[check].min = end - check;
    return 0;
}

/* Rewrites the block [start, end of program) as block{mn,mx} with the given mode. */
static int mlstack__re_quantify(mlstack__re_comp *c, int start, int32_t mn, int32_t mx, int mode, int nullable, size_t at) {
    int blen = c->re->n_prog - start, look = -1, j, lazy = mode == MLSTACK__RE_LAZY, rc = -1;
    int64_t total = (int64_t)blen * ((int64_t)mn + (mx == MLSTACK__RE_INF ? 1 : (int64_t)mx - mn) + 1) + 4;
    mlstack__re_inst *body;
    if (total > MLSTACK__RE_MAX_INST - c->re->n_prog) return mlstack__re_fail(c, MLSTACK_ERR_LIMIT, "%s", "pattern too large after expanding repeats", at);
    body = (mlstack__re_inst *)MLSTACK_MALLOC((size_t)(blen ? blen : 1) * sizeof *body);
    if (!body) return MLSTACK__RE_OOM(c);
    if (blen) memcpy(body, c->re->prog + start, (size_t)blen * sizeof *body);
    c->re->n_prog = start;
    if (mode == MLSTACK__RE_POSSESSIVE && (look = mlstack__re_emit(c, MLSTACK__RE_LOOK, 0, 0, 0, 0, MLSTACK__RE_ATOMIC)) < 0) goto done;
    if (mx == MLSTACK__RE_INF) {
        for (j = 0; j + 1 < mn; j++)
            if (mlstack__re_put_body(c, body, blen)) goto done;
        if (mlstack__re_loop(c, body, blen, lazy, nullable, mn >= 1)) goto done;
    } else {
        int opt0;
        for (j = 0; j < mn; j++)
            if (mlstack__re_put_body(c, body, blen)) goto done;
        opt0 = c->re->n_prog;
        for (j = 0; j < mx - mn; j++) {
            if (mlstack__re_emit(c, MLSTACK__RE_SPLIT, 0, 0, 0, 0, 0) < 0 || mlstack__re_put_body(c, body, blen)) goto done;
        }
        for (j = 0; j < mx - mn; j++) {
            int s = opt0 + j * (blen + 1), end = c->re->n_prog;
            mlstack__re_set_inst(c, s, MLSTACK__RE_SPLIT, lazy ? end - s : 1, lazy ? 1 : end - s);
        }
    }
    if (look >= 0) {
        if (mlstack__re_emit(c, MLSTACK__RE_SUCCEED, 0, 0, 0, 0, 0) < 0) goto done;
        c->re->prog[look].a = c->re->n_prog - look - 1;
    }
    rc = 0;
done:
    MLSTACK_FREE(body);
    return rc;
}

/* Parses {n}, {n,}, {,m}, {n,m}; returns 0 and leaves c->i unchanged when the text is not an
   interval (then '{' is a literal, as in Oniguruma). */
static int mlstack__re_interval(mlstack__re_comp *c, int32_t *mn, int32_t *mx) {
    size_t i = c->i + 1;
    int32_t a = 0, b;
    int da = 0, db = 0;
    while (i < c->n && c->p[i] >= '0' && c->p[i] <= '9') {
        a = a * 10 + (c->p[i++] - '0');
        if (a > 100000) return -1; /* Oniguruma's limit too */
        da++;
    }
    b = a;
    if (i < c->n && c->p[i] == ',') {
        i++;
        b = MLSTACK__RE_INF;
        if (i < c->n && c->p[i] >= '0' && c->p[i] <= '9') {
            b = 0;
            while (i < c->n && c->p[i] >= '0' && c->p[i] <= '9') {
                b = b * 10 + (c->p[i++] - '0');
                if (b > 100000) return -1;
                db++;
            }
        }
        if (!da && !db) return 0;
    } else if (!da) {
        return 0;
    }
    if (i >= c->n || c->p[i] != '}') return 0;
    c->i = i + 1;
    *mn = a;
    *mx = b;
    return 1;
}

/* Parses a sequence of quantified atoms up to '|' or ')'. */
static int mlstack__re_seq(mlstack__re_comp *c, int fold, int *nullable) {
    *nullable = 1;
    while (c->i < c->n) {
        int start = c->re->n_prog, anull, single, r;
        r = mlstack__re_atom(c, &fold, &anull, &single);
        if (r < 0) return -1;
        if (r == 1) break;
        for (;;) { /* quantifiers; Ruby syntax lets them stack, e.g. a{1,2}+ is (a{1,2})+ */
            int32_t mn, mx;
            int mode = MLSTACK__RE_GREEDY, k;
            size_t qat = c->i;
            if (c->i >= c->n) break;
            if (c->p[c->i] == '*') { mn = 0; mx = MLSTACK__RE_INF; c->i++; }
            else if (c->p[c->i] == '+') { mn = 1; mx = MLSTACK__RE_INF; c->i++; }
            else if (c->p[c->i] == '?') { mn = 0; mx = 1; c->i++; }
            else if (c->p[c->i] == '{') {
                k = mlstack__re_interval(c, &mn, &mx);
                if (k < 0) return mlstack__re_fail(c, MLSTACK_ERR_LIMIT, "%s", "repeat count too large", qat);
                if (!k) break;
                if (mn > mx) return mlstack__re_fail(c, MLSTACK_ERR_FORMAT, "%s", "repeat interval out of order", qat);
            } else break;
            if (c->i < c->n && c->p[c->i] == '?') { mode = MLSTACK__RE_LAZY; c->i++; }
            else if (c->i < c->n && c->p[c->i] == '+' && c->p[qat] != '{') { mode = MLSTACK__RE_POSSESSIVE; c->i++; }
            if (single == start && c->re->n_prog == start + 1) {
                mlstack__re_inst *ins = &c->re->prog[start];
                ins->op = MLSTACK__RE_REP;
                ins->min = mn;
                ins->max = mx;
                ins->mode = (uint8_t)mode;
            } else if (mlstack__re_quantify(c, start, mn, mx, mode, anull, qat)) {
                return -1;
            }
            single = -1;
            anull = anull || mn == 0;
        }
        if (!anull) *nullable = 0;
    }
    return 0;
}

/* Parses alternatives: SPLIT b1, rest; b1; JMP end; rest: SPLIT b2, rest2; ... */
static int mlstack__re_alt(mlstack__re_comp *c, int fold, int *nullable) {
    int branch = c->re->n_prog, anull;
    int32_t prev_jmp = -1;
    *nullable = 0;
    for (;;) {
        if (mlstack__re_seq(c, fold, &anull)) return -1;
        if (anull) *nullable = 1;
        if (c->i >= c->n || c->p[c->i] != '|') break;
        c->i++;
        /* SPLIT before this branch, JMP after it chained through .a to the previous JMP */
        if (mlstack__re_insert(c, branch, 1)) return -1;
        {
            int j = mlstack__re_emit(c, MLSTACK__RE_JMP, 0, 0, 0, 0, 0);
            if (j < 0) return -1;
            c->re->prog[j].min = prev_jmp; /* pending jumps form a list through .min */
            prev_jmp = j;
            mlstack__re_set_inst(c, branch, MLSTACK__RE_SPLIT, 1, c->re->n_prog - branch);
        }
        branch = c->re->n_prog;
    }
    while (prev_jmp >= 0) {
        int next = c->re->prog[prev_jmp].min;
        c->re->prog[prev_jmp].a = c->re->n_prog - prev_jmp;
        c->re->prog[prev_jmp].min = 0;
        prev_jmp = next;
    }
    return 0;
}

/* Marks in first[] every byte that can begin a match starting at pc; returns 1 if the program can
   reach MATCH without consuming (then any position may match). Lookarounds are transparent. */
static int mlstack__re_first(const mlstack__regex *re, int pc, uint32_t *first, unsigned char *seen) {
    for (;;) {
        const mlstack__re_inst *ins;
        if (pc < 0 || pc >= re->n_prog) return 1;
        if (seen[pc]) return 0;
        seen[pc] = 1;
        ins = &re->prog[pc];
        switch (ins->op) {
        case MLSTACK__RE_REP: case MLSTACK__RE_CHAR: case MLSTACK__RE_ANY: case MLSTACK__RE_CLASS: {
            int mop = ins->op == MLSTACK__RE_REP ? ins->mop : ins->op;
            /* an optional repeat may be skipped: what follows it can start the match too */
            if (ins->op == MLSTACK__RE_REP && ins->min == 0 && mlstack__re_first(re, pc + 1, first, seen)) return 1;
            if (mop == MLSTACK__RE_CHAR && ins->a != 0xFFFD) {
                unsigned char b[4];
                mlstack__utf8_put(b, (uint32_t)ins->a);
                first[b[0] >> 5] |= 1u << (b[0] & 31);
            } else {
                uint32_t cp;
                for (cp = 0; cp < 128; cp++)
                    if (mlstack__re_test(re, mop, ins->a, cp)) first[cp >> 5] |= 1u << (cp & 31);
                first[4] = first[5] = first[6] = first[7] = 0xFFFFFFFFu; /* any non-ASCII lead or stray byte */
            }
            return 0;
        }
        case MLSTACK__RE_SPLIT:
            if (mlstack__re_first(re, pc + ins->a, first, seen)) return 1;
            pc += ins->min;
            break;
        case MLSTACK__RE_JMP: pc += ins->a; break;
        case MLSTACK__RE_CHECK:
            if (mlstack__re_first(re, pc + ins->min, first, seen)) return 1;
            pc++;
            break;
        case MLSTACK__RE_LOOK:
            if (ins->mode == MLSTACK__RE_ATOMIC) {
                if (mlstack__re_first(re, pc + 1, first, seen) == 0) return 0;
            }
            pc += 1 + ins->a;
            break;
        case MLSTACK__RE_MATCH: case MLSTACK__RE_SUCCEED: return 1;
        default: pc++; break;
        }
    }
}

static MLSTACK__UNUSED void mlstack__regex_free(mlstack__regex *re) {
    if (!re) return;
    MLSTACK_FREE(re->prog);
    MLSTACK_FREE(re->cls);
    MLSTACK_FREE(re->ranges);
    MLSTACK_FREE(re);
}

/* Compiles a pattern (UTF-8, len bytes). On failure *out is NULL and err (if given) names the
   construct and its byte offset. The compiled regex is immutable: searches may run concurrently. */
static MLSTACK__UNUSED mlstack_result mlstack__regex_compile(const char *pattern, size_t len, mlstack__regex **out, mlstack_error *err) {
    mlstack__re_comp c;
    int nullable;
    unsigned char *seen;
    *out = NULL;
    if (!pattern && len) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "regex: NULL pattern");
    if (len > (1u << 20)) return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "regex: pattern of %zu bytes is too long", len);
    memset(&c, 0, sizeof c);
    c.p = (const unsigned char *)(pattern ? pattern : "");
    c.n = len;
    c.err = err;
    c.re = (mlstack__regex *)mlstack__calloc(1, sizeof(mlstack__regex));
    if (!c.re) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "regex: out of memory");
    if (mlstack__re_alt(&c, 0, &nullable) == 0 && c.i < c.n)
        mlstack__re_fail(&c, MLSTACK_ERR_FORMAT, "%s", "unmatched ')'", c.i);
    if (c.rc == MLSTACK_OK) mlstack__re_emit(&c, MLSTACK__RE_MATCH, 0, 0, 0, 0, 0);
    if (c.rc != MLSTACK_OK) {
        mlstack__regex_free(c.re);
        return c.rc;
    }
    seen = (unsigned char *)mlstack__calloc((size_t)c.re->n_prog, 1);
    if (!seen) {
        mlstack__regex_free(c.re);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "regex: out of memory");
    }
    c.re->nullable = mlstack__re_first(c.re, 0, c.re->first, seen);
    MLSTACK_FREE(seen);
    *out = c.re;
    return MLSTACK_OK;
}

/* ---- matcher ---- */

enum { MLSTACK__RE_BT_PC, MLSTACK__RE_BT_REG, MLSTACK__RE_BT_GREEDY, MLSTACK__RE_BT_LAZY };
typedef struct {
    int32_t kind, pc, count;
    size_t pos;
} mlstack__re_bt;

typedef struct {
    const mlstack__regex *re;
    const unsigned char *s;
    size_t n;
    mlstack__re_bt *stack, *heap;
    size_t top, cap;
    uint64_t steps, limit;
    size_t regs[MLSTACK__RE_MAX_REGS];
} mlstack__re_run;

static int mlstack__re_push(mlstack__re_run *r, int kind, int pc, int count, size_t pos) {
    if (r->top == r->cap) {
        size_t cap = r->cap * 2;
        mlstack__re_bt *nb;
        if (cap > ((size_t)1 << 26)) return -1;
        nb = (mlstack__re_bt *)MLSTACK_MALLOC(cap * sizeof *nb);
        if (!nb) return -1;
        memcpy(nb, r->stack, r->top * sizeof *nb);
        MLSTACK_FREE(r->heap);
        r->stack = r->heap = nb;
        r->cap = cap;
    }
    r->stack[r->top].kind = kind;
    r->stack[r->top].pc = pc;
    r->stack[r->top].count = count;
    r->stack[r->top].pos = pos;
    r->top++;
    return 0;
}

/* Start of the code point that ends at pos (pos > 0 is a code point boundary). */
static size_t mlstack__re_prev(const unsigned char *s, size_t pos) {
    size_t k;
    for (k = 2; k <= 4 && k <= pos; k++) {
        if ((s[pos - k] & 0xC0) == 0x80) continue;
        if (mlstack__utf8_valid_len(s + pos - k, k) == (int)k) return pos - k;
        break;
    }
    return pos - 1;
}

static int mlstack__re_isword_at(const mlstack__re_run *r, size_t pos, int before) {
    uint32_t cp;
    if (before) {
        size_t p;
        if (pos == 0) return 0;
        p = mlstack__re_prev(r->s, pos);
        mlstack__utf8_decode(r->s + p, r->n - p, &cp);
    } else {
        if (pos >= r->n) return 0;
        mlstack__utf8_decode(r->s + pos, r->n - pos, &cp);
    }
    return mlstack__uis_word(cp);
}

/* Matches one code point at *pos with matcher (mop, a); advances *pos. */
static int mlstack__re_one(const mlstack__re_run *r, int mop, int32_t a, size_t *pos) {
    uint32_t cp;
    int len;
    if (*pos >= r->n) return 0;
    if (r->s[*pos] < 0x80) {
        cp = r->s[*pos];
        len = 1;
    } else {
        len = mlstack__utf8_decode(r->s + *pos, r->n - *pos, &cp);
    }
    if (!mlstack__re_test(r->re, mop, a, cp)) return 0;
    *pos += (size_t)len;
    return 1;
}

/* Runs the program from pc at pos. 1: matched (*end set), 0: no match, -1: step budget spent,
   -2: out of memory. Backtrack entries above the entry depth are dropped on return. */
static int mlstack__re_exec(mlstack__re_run *r, int pc, size_t pos, size_t *end) {
    const mlstack__re_inst *prog = r->re->prog;
    size_t base = r->top;
    for (;;) {
        const mlstack__re_inst *ins = &prog[pc];
        if (++r->steps > r->limit) goto budget;
        switch (ins->op) {
        case MLSTACK__RE_CHAR: case MLSTACK__RE_ANY: case MLSTACK__RE_CLASS:
            if (!mlstack__re_one(r, ins->op, ins->a, &pos)) goto fail;
            pc++;
            continue;
        case MLSTACK__RE_REP: {
            int32_t k = 0;
            if (ins->mode == MLSTACK__RE_LAZY) {
                while (k < ins->min && mlstack__re_one(r, ins->mop, ins->a, &pos)) k++;
                if (k < ins->min) goto fail;
                if (k < ins->max && mlstack__re_push(r, MLSTACK__RE_BT_LAZY, pc, k, pos)) goto oom;
            } else {
                size_t start = pos;
                while (k < ins->max && mlstack__re_one(r, ins->mop, ins->a, &pos)) k++;
                r->steps += (uint64_t)(pos - start) / 4;
                if (k < ins->min) goto fail;
                if (ins->mode == MLSTACK__RE_GREEDY && k > ins->min && mlstack__re_push(r, MLSTACK__RE_BT_GREEDY, pc, k, pos)) goto oom;
            }
            pc++;
            continue;
        }
        case MLSTACK__RE_SPLIT:
            if (mlstack__re_push(r, MLSTACK__RE_BT_PC, pc + ins->min, 0, pos)) goto oom;
            pc += ins->a;
            continue;
        case MLSTACK__RE_JMP: pc += ins->a; continue;
        case MLSTACK__RE_MARK:
            if (mlstack__re_push(r, MLSTACK__RE_BT_REG, 0, ins->a, r->regs[ins->a])) goto oom;
            r->regs[ins->a] = pos;
            pc++;
            continue;
        case MLSTACK__RE_CHECK:
            pc += r->regs[ins->a] == pos ? ins->min : 1;
            continue;
        case MLSTACK__RE_LOOK: {
            size_t e;
            int m = mlstack__re_exec(r, pc + 1, pos, &e);
            if (m < 0) return m;
            if (ins->mode == MLSTACK__RE_NAHEAD ? m : !m) goto fail;
            if (ins->mode == MLSTACK__RE_ATOMIC) pos = e;
            pc += 1 + ins->a;
            continue;
        }
        case MLSTACK__RE_BOL:
            if (pos != 0 && r->s[pos - 1] != '\n') goto fail;
            pc++;
            continue;
        case MLSTACK__RE_EOL:
            if (pos != r->n && r->s[pos] != '\n') goto fail;
            pc++;
            continue;
        case MLSTACK__RE_BOS:
            if (pos != 0) goto fail;
            pc++;
            continue;
        case MLSTACK__RE_EOS:
            if (pos != r->n) goto fail;
            pc++;
            continue;
        case MLSTACK__RE_EOSNL:
            if (pos != r->n && !(pos + 1 == r->n && r->s[pos] == '\n')) goto fail;
            pc++;
            continue;
        case MLSTACK__RE_WORDB: case MLSTACK__RE_NWORDB:
            if ((mlstack__re_isword_at(r, pos, 1) != mlstack__re_isword_at(r, pos, 0)) != (ins->op == MLSTACK__RE_WORDB)) goto fail;
            pc++;
            continue;
        default: /* MATCH, SUCCEED */
            *end = pos;
            while (r->top > base) { /* undo register changes of this run */
                mlstack__re_bt *b = &r->stack[--r->top];
                if (b->kind == MLSTACK__RE_BT_REG) r->regs[b->count] = b->pos;
            }
            return 1;
        }
    fail:
        for (;;) {
            mlstack__re_bt *b;
            if (r->top == base) return 0;
            if (++r->steps > r->limit) goto budget;
            b = &r->stack[--r->top];
            if (b->kind == MLSTACK__RE_BT_REG) {
                r->regs[b->count] = b->pos;
                continue;
            }
            pc = b->pc;
            pos = b->pos;
            if (b->kind == MLSTACK__RE_BT_GREEDY) {
                int32_t k = b->count - 1;
                pos = mlstack__re_prev(r->s, pos);
                if (k > prog[pc].min) { /* entry still in place: update it */
                    b->count = k;
                    b->pos = pos;
                    r->top++;
                }
                pc++;
            } else if (b->kind == MLSTACK__RE_BT_LAZY) {
                int32_t k = b->count + 1;
                if (!mlstack__re_one(r, prog[pc].mop, prog[pc].a, &pos)) continue;
                if (k < prog[pc].max) {
                    b->count = k;
                    b->pos = pos;
                    r->top++;
                }
                pc++;
            }
            break;
        }
    }
budget:
    r->top = base;
    return -1;
oom:
    r->top = base;
    return -2;
}

/* Finds the leftmost match at or after byte `start` (a code point boundary). Returns 1 and the
   match [*mbeg, *mend) (possibly empty), 0 if none, -1 if the step budget
   (MLSTACK_REGEX_STEP_BASE + 32 per byte) ran out, -2 if out of memory. Thread-safe. */
static MLSTACK__UNUSED int mlstack__regex_search(const mlstack__regex *re, const char *s, size_t n, size_t start, size_t *mbeg,
                                                 size_t *mend) {
    mlstack__re_bt local[256];
    mlstack__re_run r;
    size_t pos;
    int m = 0;
    if (!re || (!s && n) || start > n) return 0;
    memset(&r, 0, sizeof r);
    r.re = re;
    r.s = (const unsigned char *)(s ? s : "");
    r.n = n;
    r.stack = local;
    r.heap = NULL;
    r.top = 0;
    r.cap = sizeof local / sizeof local[0];
    r.steps = 0;
    r.limit = (uint64_t)MLSTACK_REGEX_STEP_BASE + (uint64_t)(n - start) * 32;
    memset(r.regs, 0, sizeof r.regs);
    for (pos = start;; ) {
        if (pos < n) {
            unsigned b = r.s[pos];
            if (!re->nullable && !((re->first[b >> 5] >> (b & 31)) & 1)) {
                uint32_t cp;
                pos += b < 0x80 ? 1 : (size_t)mlstack__utf8_decode(r.s + pos, n - pos, &cp);
                continue;
            }
        } else if (!re->nullable) {
            break;
        }
        m = mlstack__re_exec(&r, 0, pos, mend);
        if (m) break;
        if (pos >= n) break;
        {
            uint32_t cp;
            pos += r.s[pos] < 0x80 ? 1 : (size_t)mlstack__utf8_decode(r.s + pos, n - pos, &cp);
        }
    }
    MLSTACK_FREE(r.heap);
    if (m == 1) *mbeg = pos;
    return m;
}



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
            /* HF tests "starts with the replacement" after replacing spaces */
            if (prepend && (e->pool.p[p.off] == ' ' || (p.len >= st->alen && memcmp(e->pool.p + p.off, st->a, st->alen) == 0)))
                prepend = 0;
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
        size_t noff = 0, nlen = 0;
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
    mlstack__tok_step *st = NULL;
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
        if ((r = mlstack__tok_addpost(t, &pre, &npre, (int32_t)cls->i, err)) != MLSTACK_OK) {
            MLSTACK_FREE(pre);
            return r;
        }
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
                if (seen_a) {
                    MLSTACK_FREE(pre);
                    return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "tokenizer: TemplateProcessing repeats the sequence");
                }
                seen_a = 1;
                for (q = 0; q < t->n_post_pre && r == MLSTACK_OK; q++) r = mlstack__tok_addpost(t, &pre, &npre, t->post_pre[q], err);
                if (r != MLSTACK_OK) {
                    MLSTACK_FREE(pre);
                    return r;
                }
                continue;
            }
            if (!tk || tk->type != MLSTACK__JSON_STRING || !(ids = mlstack__json_get(mlstack__json_get(sp, tk->str), "ids")) ||
                ids->type != MLSTACK__JSON_ARRAY) {
                MLSTACK_FREE(pre);
                return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: TemplateProcessing item is not a SpecialToken with ids, nor the Sequence");
            }
            for (x = ids->child; x; x = x->next) {
                if (!x->is_int) {
                    MLSTACK_FREE(pre);
                    return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "tokenizer: TemplateProcessing ids must be integers");
                }
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
    if (!mlstack__buf_puts(out, "{\"model\":{\"type\":\"BPE\",\"vocab\":") || !mlstack__buf_put(out, vocab, vl) ||
        !mlstack__buf_puts(out, ",\"merges\":["))
        goto oom;
    for (i = 0; i < ml;) {
        size_t e = i;
        while (e < ml && merges[e] != '\n') e++;
        if (e > i && merges[e - 1] == '\r') e--; /* tolerate CRLF files */
        if (e > i && !(i == 0 && e - i >= 8 && memcmp(merges, "#version", 8) == 0)) {
            if ((!first && !mlstack__buf_puts(out, ",")) || !mlstack__json_quote(out, merges + i, e - i)) goto oom;
            first = 0;
        }
        while (e < ml && merges[e] != '\n') e++;
        i = e + 1;
    }
    if (!mlstack__buf_puts(out, "]},\"added_tokens\":[")) goto oom;
    atd = mlstack__json_get(cd.root, "added_tokens_decoder");
    first = 1;
    for (c = atd ? atd->child : NULL; c; c = c->next) {
        const mlstack__json *content = mlstack__jstr(c, "content");
        static const char *const flags[5] = {"special", "lstrip", "rstrip", "single_word", "normalized"};
        int f;
        char num[32];
        if (!content) continue;
        if ((!first && !mlstack__buf_puts(out, ",")) || !mlstack__buf_puts(out, "{\"id\":") ||
            !mlstack__buf_put(out, c->key, c->key_len) || !mlstack__buf_puts(out, ",\"content\":") ||
            !mlstack__json_quote(out, content->str, content->len))
            goto oom;
        for (f = 0; f < 5; f++) {
            snprintf(num, sizeof num, ",\"%s\":%s", flags[f], mlstack__jbool(c, flags[f], f == 4 ? !mlstack__jbool(c, "special", 0) : 0) ? "true" : "false");
            if (!mlstack__buf_put(out, num, strlen(num))) goto oom;
        }
        if (!mlstack__buf_puts(out, "}")) goto oom;
        first = 0;
    }
    if (!mlstack__buf_puts(out, "],")) goto oom;
    if (qwen) {
        if (!mlstack__buf_puts(out, "\"normalizer\":{\"type\":\"NFC\"},\"pre_tokenizer\":{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"Split\",\"pattern\":{\"Regex\":") ||
            !mlstack__json_quote(out, mlstack__qwen2_pattern, strlen(mlstack__qwen2_pattern)) ||
            !mlstack__buf_puts(out, "},\"behavior\":\"Isolated\",\"invert\":false},{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"use_regex\":false}]},"))
            goto oom;
    } else {
        const char *pre = mlstack__jbool(cd.root, "add_prefix_space", 0) ? "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":true}," : "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},";
        if (!mlstack__buf_put(out, pre, strlen(pre))) goto oom;
    }
    if (!mlstack__buf_puts(out, "\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\"}}")) goto oom;
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
        if ((all.n > d->ctx_len && !mlstack__buf_put(&d->text, all.p + d->ctx_len, all.n - d->ctx_len)) ||
            !mlstack__buf_put(&d->text, "", 1))
            r = MLSTACK_ERR_NO_MEMORY;
        /* the ids just emitted become the context for the next ones */
        if (d->n > d->n_ctx) memmove(d->ids, d->ids + d->n_ctx, (d->n - d->n_ctx) * sizeof *d->ids);
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
    MLSTACK__JOP_ADD, MLSTACK__JOP_SUB, MLSTACK__JOP_MUL, MLSTACK__JOP_DIV, MLSTACK__JOP_FLOORDIV, MLSTACK__JOP_MOD,
    MLSTACK__JOP_POW, MLSTACK__JOP_CONCAT, MLSTACK__JOP_EQ, MLSTACK__JOP_NE, MLSTACK__JOP_LT, MLSTACK__JOP_GT,
    MLSTACK__JOP_LE, MLSTACK__JOP_GE, MLSTACK__JOP_IN, MLSTACK__JOP_NOTIN
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
        l = mlstack__tp_binnode(P, MLSTACK__JOP_POW, pos, l, r);
    }
    return l;
}
static mlstack__tn *mlstack__tp_math2(mlstack__tparse *P) {
    mlstack__tn *l = mlstack__tp_pow(P), *r;
    while (l) {
        int op;
        size_t pos = mlstack__tp_cur(P)->pos;
        if (mlstack__tp_isop(P, "*")) op = MLSTACK__JOP_MUL;
        else if (mlstack__tp_isop(P, "/")) op = MLSTACK__JOP_DIV;
        else if (mlstack__tp_isop(P, "//")) op = MLSTACK__JOP_FLOORDIV;
        else if (mlstack__tp_isop(P, "%")) op = MLSTACK__JOP_MOD;
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
        l = mlstack__tp_binnode(P, MLSTACK__JOP_CONCAT, pos, l, r);
    }
    return l;
}
static mlstack__tn *mlstack__tp_math1(mlstack__tparse *P) {
    mlstack__tn *l = mlstack__tp_concat(P), *r;
    while (l && (mlstack__tp_isop(P, "+") || mlstack__tp_isop(P, "-"))) {
        size_t pos = mlstack__tp_cur(P)->pos;
        int op = mlstack__tp_cur(P)->s[0] == '+' ? MLSTACK__JOP_ADD : MLSTACK__JOP_SUB;
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
        if (mlstack__tp_isop(P, "==")) op = MLSTACK__JOP_EQ;
        else if (mlstack__tp_isop(P, "!=")) op = MLSTACK__JOP_NE;
        else if (mlstack__tp_isop(P, "<")) op = MLSTACK__JOP_LT;
        else if (mlstack__tp_isop(P, ">")) op = MLSTACK__JOP_GT;
        else if (mlstack__tp_isop(P, "<=")) op = MLSTACK__JOP_LE;
        else if (mlstack__tp_isop(P, ">=")) op = MLSTACK__JOP_GE;
        else if (mlstack__tp_isname(P, "in")) op = MLSTACK__JOP_IN;
        else if (mlstack__tp_isname(P, "not") && P->tok[P->i + 1].t == MLSTACK__TK_NAME && P->tok[P->i + 1].n == 2 &&
                 !memcmp(P->tok[P->i + 1].s, "in", 2)) {
            op = MLSTACK__JOP_NOTIN;
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
    case MLSTACK__JOP_ADD:
        if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) goto overflow;
        r = a + b;
        break;
    case MLSTACK__JOP_SUB:
        if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) goto overflow;
        r = a - b;
        break;
    case MLSTACK__JOP_MUL:
        if (a != 0 && b != 0) {
            if (a == -1 && b == INT64_MIN) goto overflow;
            if (b == -1 && a == INT64_MIN) goto overflow;
            if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a) : (b > 0 ? a < INT64_MIN / b : b < INT64_MAX / a))
                goto overflow;
        }
        r = a * b;
        break;
    case MLSTACK__JOP_FLOORDIV:
    case MLSTACK__JOP_MOD: {
        int64_t q, m;
        if (b == 0) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "integer division or modulo by zero");
        if (a == INT64_MIN && b == -1) {
            if (op == MLSTACK__JOP_MOD) {
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
        r = op == MLSTACK__JOP_MOD ? m : q;
        break;
    }
    case MLSTACK__JOP_POW: {
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
                if (mlstack__tpl_int_op(c, MLSTACK__JOP_MUL, r, base, &t, pos)) return -1;
                r = t.u.i;
            }
            e >>= 1;
            if (e) {
                if (mlstack__tpl_int_op(c, MLSTACK__JOP_MUL, base, base, &t, pos)) return -1;
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
    case MLSTACK__JOP_ADD: r = a + b; break;
    case MLSTACK__JOP_SUB: r = a - b; break;
    case MLSTACK__JOP_MUL: r = a * b; break;
    case MLSTACK__JOP_DIV:
        if (b == 0) return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "division by zero");
        r = a / b;
        break;
    case MLSTACK__JOP_MOD:
    case MLSTACK__JOP_FLOORDIV: {
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
        r = op == MLSTACK__JOP_MOD ? mod : fd;
        break;
    }
    case MLSTACK__JOP_POW:
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
        if (op == MLSTACK__JOP_DIV) return mlstack__tpl_float_op(c, op, mlstack__tv_num(a), mlstack__tv_num(b), out, pos);
        if (a->t != MLSTACK__TV_FLOAT && b->t != MLSTACK__TV_FLOAT) return mlstack__tpl_int_op(c, op, a->u.i, b->u.i, out, pos);
        return mlstack__tpl_float_op(c, op, mlstack__tv_num(a), mlstack__tv_num(b), out, pos);
    }
    if (a->t == MLSTACK__TV_UNDEF || b->t == MLSTACK__TV_UNDEF) {
        const mlstack__tv *u = a->t == MLSTACK__TV_UNDEF ? a : b;
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "%s", u->u.s.p ? u->u.s.p : "value is undefined");
    }
    if (op == MLSTACK__JOP_ADD && a->t == MLSTACK__TV_STR && b->t == MLSTACK__TV_STR) {
        mlstack__tbuf buf;
        memset(&buf, 0, sizeof buf);
        if (mlstack__tbuf_put(c, &buf, a->u.s.p, a->u.s.n) || mlstack__tbuf_put(c, &buf, b->u.s.p, b->u.s.n)) return -1;
        return mlstack__tpl_newstr(c, &buf, out);
    }
    if (op == MLSTACK__JOP_ADD && a->t == MLSTACK__TV_LIST && b->t == MLSTACK__TV_LIST &&
        (a->u.l->kind == MLSTACK__TL_LIST || a->u.l->kind == MLSTACK__TL_TUPLE) && a->u.l->kind == b->u.l->kind) {
        mlstack__tlist *l = mlstack__tlist_new(c, a->u.l->kind, a->u.l->n + b->u.l->n);
        if (!l) return -1;
        if (a->u.l->n) memcpy(l->v, a->u.l->v, a->u.l->n * sizeof(mlstack__tv));
        if (b->u.l->n) memcpy(l->v + a->u.l->n, b->u.l->v, b->u.l->n * sizeof(mlstack__tv));
        l->n = a->u.l->n + b->u.l->n;
        *out = mlstack__tv_list(l);
        return 0;
    }
    if (op == MLSTACK__JOP_MUL && ((a->t == MLSTACK__TV_STR && (b->t == MLSTACK__TV_INT || b->t == MLSTACK__TV_BOOL)) ||
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
    if (op == MLSTACK__JOP_MUL && b->t == MLSTACK__TV_LIST && (a->t == MLSTACK__TV_INT || a->t == MLSTACK__TV_BOOL)) {
        const mlstack__tv *t = a;
        a = b;
        b = t;
    }
    if (op == MLSTACK__JOP_MUL && a->t == MLSTACK__TV_LIST && (a->u.l->kind == MLSTACK__TL_LIST || a->u.l->kind == MLSTACK__TL_TUPLE) &&
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
    if (op == MLSTACK__JOP_MOD && a->t == MLSTACK__TV_STR)
        return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "printf-style string formatting with '%%' is not supported");
    return mlstack__tpl_fail(c, pos, MLSTACK_ERR_INVALID_ARG, "unsupported operand type(s) for %s: '%s' and '%s'",
                             op <= MLSTACK__JOP_POW ? names[op] : "?", mlstack__tv_typename(a), mlstack__tv_typename(b));
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
                                 names[op - MLSTACK__JOP_LT], mlstack__tv_typename(a), mlstack__tv_typename(b));
    }
    switch (op) {
    case MLSTACK__JOP_LT: *res = cmpv < 0; break;
    case MLSTACK__JOP_GT: *res = cmpv > 0; break;
    case MLSTACK__JOP_LE: *res = cmpv <= 0; break;
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
#if defined(_POSIX_C_SOURCE) && !defined(_WIN32)
        tp = localtime_r(&t, &tmv);
#else /* POSIX hidden (strict ISO build with libc headers included first) or Windows */
        tp = localtime(&t);
        if (tp) tmv = *tp;
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
        if (mlstack__tpl_binop(c, MLSTACK__JOP_MOD, v, &d, &r, pos)) return -1;
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
        if (MLSTACK__T("==") || MLSTACK__T("eq") || MLSTACK__T("equalto")) op = MLSTACK__JOP_EQ;
        else if (MLSTACK__T("!=") || MLSTACK__T("ne")) op = MLSTACK__JOP_NE;
        else if (MLSTACK__T("<") || MLSTACK__T("lt") || MLSTACK__T("lessthan")) op = MLSTACK__JOP_LT;
        else if (MLSTACK__T("<=") || MLSTACK__T("le")) op = MLSTACK__JOP_LE;
        else if (MLSTACK__T(">") || MLSTACK__T("gt") || MLSTACK__T("greaterthan")) op = MLSTACK__JOP_GT;
        else if (MLSTACK__T(">=") || MLSTACK__T("ge")) op = MLSTACK__JOP_GE;
        else return mlstack__tpl_fail(c, pos, MLSTACK_ERR_UNSUPPORTED, "test '%s' is not supported", nm);
        if (op == MLSTACK__JOP_EQ || op == MLSTACK__JOP_NE) *res = mlstack__tv_eq(v, &x, 0) == (op == MLSTACK__JOP_EQ);
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
        if (n->op == MLSTACK__JOP_CONCAT) {
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
            case MLSTACK__JOP_EQ: res = mlstack__tv_eq(&a, &b, 0); break;
            case MLSTACK__JOP_NE: res = !mlstack__tv_eq(&a, &b, 0); break;
            case MLSTACK__JOP_IN:
            case MLSTACK__JOP_NOTIN:
                if (mlstack__tpl_contains(c, &a, &b, &res, k->pos)) return -1;
                if (k->op == MLSTACK__JOP_NOTIN) res = !res;
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
   at load (section 14) from any of them:
     Q8_0: blocks of 32 weights: f16 scale d, 32 int8 q;        w = d * q
     Q4_1: blocks of 32 weights: f16 scale d, f16 offset m, 16 bytes of nibbles; w = d * q + m
           with q = the nibble (0..15), element j < 16 in the low nibble of byte j, element
           j + 16 in its high nibble. (The offset lets a block use all 16 levels between its
           own min and max: on SmolLM2 it cut the KL divergence of a symmetric 4-bit format
           from 0.74 to the Q8_0 level.)
   Activations meet quantized weights as Q8 blocks with an f32 scale and the block's scaled sum
   s = d * sum(q) (mlstack__q8x, for the Q4_1 offset term), made once per matmul by
   mlstack__quantize_rows. */
typedef enum mlstack__wtype {
    MLSTACK__W_F32 = MLSTACK_DTYPE_F32,
    MLSTACK__W_F16 = MLSTACK_DTYPE_F16,
    MLSTACK__W_BF16 = MLSTACK_DTYPE_BF16,
    MLSTACK__W_Q8_0 = MLSTACK_DTYPE_Q8_0,
    MLSTACK__W_Q4_1 = MLSTACK_DTYPE_Q4_1
} mlstack__wtype;

#define MLSTACK__QK 32
typedef struct mlstack__q8_0 {
    uint16_t d;
    int8_t q[MLSTACK__QK];
} mlstack__q8_0;
typedef struct mlstack__q4_1 {
    uint16_t d, m;
    uint8_t q[MLSTACK__QK / 2];
} mlstack__q4_1;
typedef struct mlstack__q8x {
    float d, s;
    int32_t sum; /* sum(q), for kernels that offset the weights (packed Q8_0) */
    int8_t q[MLSTACK__QK];
} mlstack__q8x;

/* Bytes of one row of n_in weights in a format. */
static size_t mlstack__row_bytes(int wtype, int n_in) {
    switch (wtype) {
    case MLSTACK__W_Q8_0: return (size_t)(n_in / MLSTACK__QK) * sizeof(mlstack__q8_0);
    case MLSTACK__W_Q4_1: return (size_t)(n_in / MLSTACK__QK) * sizeof(mlstack__q4_1);
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
        for (k = 0; k < nb; k++) {
            mlstack__q8x *blk = &xq[(size_t)b * nb + k];
            int i, sum = 0;
            blk->d = mlstack__quant_block(x + (size_t)b * n + (size_t)k * MLSTACK__QK, blk->q);
            for (i = 0; i < MLSTACK__QK; i++) sum += blk->q[i];
            blk->sum = sum;
            blk->s = blk->d * (float)sum;
        }
}

/* A weight matrix: W (n_out, n_in) row-major in `wtype` (row r at data + r * row_bytes), and an
   optional f32 bias (n_out,). */
typedef struct mlstack__weight {
    const char *name; /* tensor name, for saving */
    const void *data;
    int wtype;
    int n_out, n_in;
    size_t row_bytes;
    const float *bias;
    const unsigned char *packed; /* the same weights as P16 panels (below), or NULL */
} mlstack__weight;

/* P16 panels: a copy of W made once, for kernels that multiply one broadcast activation by 16
   outputs at a time (the kernel table's `packs` says for which types). Outputs go in panels of
   16 (the last padded with zeros) and panels in groups of 4 (64 outputs; the last group may
   hold fewer), each group one contiguous stream over the reduction index. In a group of gp
   panels, with value (k, r, l) = W[64 * group + 16r + l][k] and nb = n_in / 32 blocks:
     F32/F16/BF16: per input k, gp x 16 values as stored
     Q8_0: per block j: 8 x gp runs of 64 bytes, byte 4l + t of run (g, r) = q[32j + 4g + t] + 128
           (offset to unsigned for vpdpbusd; the activation block's sum takes it back out
           exactly), then gp x 16 f16 scales
     Q4_1: per block j: 4 x gp runs of 64 bytes, byte 4l + t of run (g, r) = row byte 4g + t of
           the block (low nibble input 4g + t, high nibble 16 + 4g + t), then gp x 16 f16
           scales, then gp x 16 f16 offsets
   Every output element is still reduced in one order that no tile shape changes. */
#define MLSTACK__P16 16
#define MLSTACK__P16_GROUP 4
static size_t mlstack__p16_bytes(int wtype, int n_in) { /* one panel */
    size_t nb = (size_t)(n_in / MLSTACK__QK);
    switch (wtype) {
    case MLSTACK__W_F32: return (size_t)n_in * 64;
    case MLSTACK__W_Q8_0: return nb * (512 + 32);
    case MLSTACK__W_Q4_1: return nb * (256 + 64);
    default: return (size_t)n_in * 32;
    }
}
static int mlstack__p16_panels(int n_out) { return (n_out + MLSTACK__P16 - 1) / MLSTACK__P16; }

/* Group `grp` of w's panels into dst, the start of the whole packed copy. */
static void mlstack__p16_pack_group(const mlstack__weight *w, int grp, unsigned char *dst) {
    size_t pb = mlstack__p16_bytes(w->wtype, w->n_in), es = w->wtype == MLSTACK__W_F32 ? 4 : 2;
    int np = mlstack__p16_panels(w->n_out), p0 = grp * MLSTACK__P16_GROUP, r, l, k, g, t, nb = w->n_in / MLSTACK__QK;
    int gp = np - p0 < MLSTACK__P16_GROUP ? np - p0 : MLSTACK__P16_GROUP;
    int q8 = w->wtype == MLSTACK__W_Q8_0, quant = q8 || w->wtype == MLSTACK__W_Q4_1;
    size_t qb = q8 ? 512 : 256, bs = quant ? (size_t)gp * (qb + (q8 ? 32 : 64)) : 0;
    unsigned char *d = dst + (size_t)p0 * pb;
    memset(d, 0, (size_t)gp * pb);
    for (r = 0; r < gp; r++)
        for (l = 0; l < MLSTACK__P16 && 16 * (p0 + r) + l < w->n_out; l++) {
            const unsigned char *row = (const unsigned char *)w->data + (size_t)(16 * (p0 + r) + l) * w->row_bytes;
            if (!quant) {
                if (es == 4)
                    for (k = 0; k < w->n_in; k++) memcpy(d + (((size_t)k * gp + r) * 16 + l) * 4, row + (size_t)k * 4, 4);
                else
                    for (k = 0; k < w->n_in; k++) memcpy(d + (((size_t)k * gp + r) * 16 + l) * 2, row + (size_t)k * 2, 2);
                continue;
            }
            for (k = 0; k < nb; k++) {
                unsigned char *blk = d + (size_t)k * bs, *q = blk + (size_t)r * 64, *sc = blk + (size_t)gp * qb;
                if (q8) {
                    const mlstack__q8_0 *b = (const mlstack__q8_0 *)(const void *)row + k;
                    for (g = 0; g < 8; g++)
                        for (t = 0; t < 4; t++) q[(size_t)64 * gp * g + 4 * l + t] = (unsigned char)(b->q[4 * g + t] + 128);
                    memcpy(sc + (size_t)r * 32 + 2 * l, &b->d, 2);
                } else {
                    const mlstack__q4_1 *b = (const mlstack__q4_1 *)(const void *)row + k;
                    for (g = 0; g < 4; g++)
                        for (t = 0; t < 4; t++) q[(size_t)64 * gp * g + 4 * l + t] = b->q[4 * g + t];
                    memcpy(sc + (size_t)r * 32 + 2 * l, &b->d, 2);
                    memcpy(sc + (size_t)(gp + r) * 32 + 2 * l, &b->m, 2);
                }
            }
        }
}

/* The kernel table: one per ISA, chosen once when an engine starts.
   matmul: y[b * n_out + o] = W[o] . x[b] (+ bias[o]) for o in [o0, o1), b in [0, B);
           x (B, n_in) f32; xq its Q8 blocks when W is quantized; scratch: n_in floats.
   dot:    a (n,) . b (n,)         axpy: y (n,) += a * x (n,)        to_f32: dst (n,) = src (n,)
   rmsnorm: out (n,) = w * x / sqrt(mean(x^2) + eps)         swiglu: g (n,) = g / (1 + e^-g) * u */
typedef struct mlstack__kernels {
    const char *name;
    void (*matmul)(const mlstack__weight *w, const float *x, const mlstack__q8x *xq, float *y, int B, int o0, int o1,
                   float *scratch);
    float (*dot)(const float *a, const float *b, int n);
    void (*axpy)(float *y, float a, const float *x, int n);
    void (*to_f32)(mlstack_dtype dtype, const void *src, float *dst, size_t n); /* F32/F16/BF16 -> f32 */
    void (*rmsnorm)(float *out, const float *x, const float *w, int n, float eps);
    void (*swiglu)(float *g, const float *u, int n); /* g (n,) = silu(g) * u */
    /* attention over a chunk of up to 32 keys (section 16): s (G, 32) = scale * q (G, Dh) . kt,
       kt the keys transposed (Dh, 32); exp_shift: s[i] = e^(s[i] - m), returns their sum;
       pv: acc (G, Dh) += p (G, 32) . v (32, Dh), in key order */
    void (*attn_scores)(const float *q, int G, int Dh, const float *kt, int n, float scale, float *s);
    float (*exp_shift)(float *s, int n, float m);
    void (*attn_pv)(float *acc, int G, int Dh, const float *p, const float *v, int n);
    /* x (B, n) -> Q8 activation blocks, bit-identical to mlstack__quantize_rows (finite x) */
    void (*quantize_rows)(const float *x, mlstack__q8x *xq, int B, int n);
    unsigned packs; /* bit 1 << wtype: matmul reads P16 panels of weights of that type when present */
} mlstack__kernels;
#define MLSTACK__PACKS_FLOAT ((1u << MLSTACK__W_F32) | (1u << MLSTACK__W_F16) | (1u << MLSTACK__W_BF16))
#define MLSTACK__PACKS_ALL (MLSTACK__PACKS_FLOAT | (1u << MLSTACK__W_Q8_0) | (1u << MLSTACK__W_Q4_1))

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
static float mlstack__dot_q4_1_scalar(const mlstack__q4_1 *w, const mlstack__q8x *x, int nb) {
    float acc = 0;
    int k, i;
    for (k = 0; k < nb; k++) {
        int32_t s = 0;
        for (i = 0; i < MLSTACK__QK / 2; i++) s += (int32_t)(w[k].q[i] & 15) * x[k].q[i] + (int32_t)(w[k].q[i] >> 4) * x[k].q[i + 16];
        acc += mlstack__f16_to_f32(w[k].d) * x[k].d * (float)s + mlstack__f16_to_f32(w[k].m) * x[k].s;
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
            else if (w->wtype == MLSTACK__W_Q4_1)
                v = mlstack__dot_q4_1_scalar((const mlstack__q4_1 *)(const void *)src, xq + (size_t)b * nb, nb);
            else
                v = mlstack__dot_f32(wr, x + (size_t)b * w->n_in, w->n_in);
            if (w->bias) v += w->bias[o];
            y[(size_t)b * w->n_out + o] = v;
        }
    }
}

static void mlstack__attn_scores_scalar(const float *q, int G, int Dh, const float *kt, int n, float scale, float *s) {
    int g, j, d;
    for (g = 0; g < G; g++)
        for (j = 0; j < n; j++) {
            float a = 0;
            for (d = 0; d < Dh; d++) a += q[(size_t)g * Dh + d] * kt[(size_t)d * 32 + j];
            s[g * 32 + j] = a * scale;
        }
}
static float mlstack__exp_shift_scalar(float *s, int n, float m) {
    float sum = 0;
    int i;
    for (i = 0; i < n; i++) sum += s[i] = expf(s[i] - m);
    return sum;
}
static void mlstack__attn_pv_scalar(float *acc, int G, int Dh, const float *p, const float *v, int n) {
    int g, j, d;
    for (g = 0; g < G; g++)
        for (d = 0; d < Dh; d++) {
            float a = acc[(size_t)g * Dh + d];
            for (j = 0; j < n; j++) a += p[g * 32 + j] * v[(size_t)j * Dh + d];
            acc[(size_t)g * Dh + d] = a;
        }
}
#define MLSTACK__ATTN_SCALAR mlstack__attn_scores_scalar, mlstack__exp_shift_scalar, mlstack__attn_pv_scalar, mlstack__quantize_rows

static void mlstack__rmsnorm(float *out, const float *x, const float *w, int n, float eps);
static void mlstack__swiglu_scalar(float *g, const float *u, int n);
static const mlstack__kernels mlstack__kernels_scalar = {"scalar", mlstack__matmul_scalar, mlstack__dot_f32,
                                                         mlstack__axpy_scalar, mlstack__to_f32, mlstack__rmsnorm,
                                                         mlstack__swiglu_scalar, MLSTACK__ATTN_SCALAR, 0};

/* Up to three projections of the same input (q/k/v, gate/up) run as one fork/join. */
#define MLSTACK__MM_MAX 3
typedef struct mlstack__matmul_job {
    const mlstack__kernels *k;
    const mlstack__weight *w[MLSTACK__MM_MAX];
    float *y[MLSTACK__MM_MAX];
    int rows_per_task[MLSTACK__MM_MAX], first_task[MLSTACK__MM_MAX + 1], n;
    const float *x;
    mlstack__q8x *xq;
    int B, n_in;
    float *scratch; /* n_threads * MLSTACK__MM_SCRATCH(n_in) floats */
} mlstack__matmul_job;

/* Matmul scratch floats per thread: a row of n_in, or 4 panels x MLSTACK__MM_KC steps of
   converted weights. */
#define MLSTACK__MM_KC 128
#define MLSTACK__MM_SCRATCH(n_in) ((size_t)(n_in) > 4 * 16 * MLSTACK__MM_KC ? (size_t)(n_in) : 4 * 16 * MLSTACK__MM_KC)
/* Whether k multiplies w from its P16 panels. */
#define MLSTACK__USES_P16(k, w) ((w)->packed && ((k)->packs >> (w)->wtype & 1u))

static void mlstack__matmul_task(void *ctx, int task, int n_tasks, int thread) {
    const mlstack__matmul_job *j = (const mlstack__matmul_job *)ctx;
    int i = 0, o0, o1;
    (void)n_tasks;
    while (task >= j->first_task[i + 1]) i++;
    o0 = (task - j->first_task[i]) * j->rows_per_task[i];
    o1 = o0 + j->rows_per_task[i] < j->w[i]->n_out ? o0 + j->rows_per_task[i] : j->w[i]->n_out;
    j->k->matmul(j->w[i], j->x, j->xq, j->y[i], j->B, o0, o1, j->scratch + (size_t)thread * MLSTACK__MM_SCRATCH(j->n_in));
}

static void mlstack__quantize_task(void *ctx, int task, int n_tasks, int thread) {
    const mlstack__matmul_job *j = (const mlstack__matmul_job *)ctx;
    size_t nb = (size_t)(j->n_in / MLSTACK__QK);
    (void)n_tasks;
    (void)thread;
    j->k->quantize_rows(j->x + (size_t)task * (size_t)j->n_in, j->xq + (size_t)task * nb, 1, j->n_in);
}

/* x (B, n_in) @ W_i^T -> y_i (B, n_out_i), + bias, for n <= 3 weights with the same n_in, in one
   fork/join (x quantized once when a weight needs it). Work is split by output rows, in tasks
   of a fixed size, so each element is computed the same way whatever the thread count or the
   company. xq: room for B * n_in / 32 activation blocks. While a profile records, the weights
   run one by one so each gets its own entry. */
static void mlstack__matmul_n(mlstack__pool *pool, const mlstack__kernels *k, float *scratch, mlstack__q8x *xq, int n,
                              const mlstack__weight *const *w, float *const *y, const float *x, int B) {
    mlstack__matmul_job j;
    int i, quant = 0;
    if (pool->prof && n > 1) {
        for (i = 0; i < n; i++) mlstack__matmul_n(pool, k, scratch, xq, 1, &w[i], &y[i], x, B);
        return;
    }
    MLSTACK__PROF_BEGIN(pool, MATMUL);
    j.k = k;
    j.n = n;
    j.x = x;
    j.xq = xq;
    j.B = B;
    j.n_in = w[0]->n_in;
    j.scratch = scratch;
    j.first_task[0] = 0;
    for (i = 0; i < n; i++) {
        j.w[i] = w[i];
        j.y[i] = y[i];
        j.rows_per_task[i] = MLSTACK__USES_P16(k, w[i]) ? MLSTACK__P16_GROUP * MLSTACK__P16 : 16;
        j.first_task[i + 1] = j.first_task[i] + (w[i]->n_out + j.rows_per_task[i] - 1) / j.rows_per_task[i];
        quant |= w[i]->wtype == MLSTACK__W_Q8_0 || w[i]->wtype == MLSTACK__W_Q4_1;
    }
    if (quant) {
        if (B > 1) mlstack__pool_run(pool, mlstack__quantize_task, &j, B); /* one task per row */
        else k->quantize_rows(x, xq, 1, j.n_in);
    }
    mlstack__pool_run(pool, mlstack__matmul_task, &j, j.first_task[n]);
    MLSTACK__PROF_END(pool, MATMUL, -1, w[0], B);
}
static void mlstack__matmul(mlstack__pool *pool, const mlstack__kernels *k, float *scratch, mlstack__q8x *xq,
                            const mlstack__weight *w, const float *x, float *y, int B) {
    mlstack__matmul_n(pool, k, scratch, xq, 1, &w, &y, x, B);
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

/* Rotary embedding, Hugging Face rotate-half layout: pairs (i, i + Dh/2) of a head vector
   rotate by angle pos * inv_freq[i] (tables below). */

static void mlstack__swiglu_scalar(float *g, const float *u, int n) {
    int i;
    for (i = 0; i < n; i++) g[i] = g[i] / (1.0f + expf(-g[i])) * u[i];
}

/* cos and sin of pos * inv_freq[i] for the Dh/2 rotary pairs: cs (Dh,) = cos..., sin...
   Made once per row and used by every head of every layer. */
static void mlstack__rope_table(float *cs, int Dh, int pos, const float *inv_freq) {
    int half = Dh / 2, i;
    for (i = 0; i < half; i++) {
        float ang = (float)pos * inv_freq[i];
        cs[i] = cosf(ang);
        cs[i + half] = sinf(ang);
    }
}

/* Rotary embedding on one head vector v (Dh,) with a table from mlstack__rope_table. */
static void mlstack__rope_apply(float *v, int Dh, const float *cs) {
    int half = Dh / 2, i;
    for (i = 0; i < half; i++) {
        float a = v[i], b = v[i + half], c = cs[i], s = cs[i + half];
        v[i] = a * c - b * s;
        v[i + half] = b * c + a * s;
    }
}

/* gcc 12 in C++ mode warns inside its own AVX-512 intrinsics (self-initialised "undefined"
   vectors, GCC bug 105593); the x86 kernel sections are compiled with that warning off. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__cplusplus)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

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
/* 32 unsigned 4-bit values . 32 signed bytes -> 8 int32 partial sums (15 * 127 * 2 fits int16). */
static MLSTACK__T_AVX2 __m256i mlstack__dot_u4_avx2(__m256i w, __m256i x) {
    return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
}
/* Q4_1 nibbles as 32 bytes 0..15: elements 0..15 (low nibbles) then 16..31 (high nibbles). */
static MLSTACK__T_AVX2 __m256i mlstack__q4_unpack_avx2(const uint8_t *q) {
    __m128i raw = _mm_loadu_si128((const __m128i *)(const void *)q);
    return _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(raw, 4), raw), _mm256_set1_epi8(15));
}

static MLSTACK__T_AVX2 void mlstack__mm_q_avx2(const mlstack__weight *w, const mlstack__q8x *xq, float *y, int B, int o0,
                                               int o1) {
    int nb = w->n_in / MLSTACK__QK, o, b, k;
    for (o = o0; o < o1; o++) {
        const unsigned char *row = (const unsigned char *)w->data + (size_t)o * w->row_bytes;
        for (b = 0; b < B; b++) {
            const mlstack__q8x *xb = xq + (size_t)b * nb;
            __m256 acc = _mm256_setzero_ps();
            float v, off = 0;
            for (k = 0; k < nb; k++) {
                __m256i qx = _mm256_loadu_si256((const __m256i *)(const void *)xb[k].q), s;
                float d;
                if (w->wtype == MLSTACK__W_Q8_0) {
                    const mlstack__q8_0 *blk = (const mlstack__q8_0 *)(const void *)row + k;
                    s = mlstack__dot_i8_avx2(_mm256_loadu_si256((const __m256i *)(const void *)blk->q), qx);
                    d = _cvtsh_ss(blk->d);
                } else {
                    const mlstack__q4_1 *blk = (const mlstack__q4_1 *)(const void *)row + k;
                    s = mlstack__dot_u4_avx2(mlstack__q4_unpack_avx2(blk->q), qx);
                    d = _cvtsh_ss(blk->d);
                    off += _cvtsh_ss(blk->m) * xb[k].s;
                }
                acc = _mm256_fmadd_ps(_mm256_set1_ps(d * xb[k].d), _mm256_cvtepi32_ps(s), acc);
            }
            v = mlstack__hsum256(acc) + off;
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

static MLSTACK__T_AVX2 void mlstack__to_f32_avx2(mlstack_dtype dtype, const void *src, float *dst, size_t n) {
    const unsigned char *b = (const unsigned char *)src;
    size_t i = 0;
    if (dtype == MLSTACK_DTYPE_F16)
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, mlstack__ld8_f16(b, (int)i));
    else if (dtype == MLSTACK_DTYPE_BF16)
        for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, mlstack__ld8_bf16(b, (int)i));
    if (i < n) mlstack__to_f32(dtype, b + i * (dtype == MLSTACK_DTYPE_F32 ? 4 : 2), dst + i, n - i);
}

/* e^x for x in float range: x = n ln2 + r, |r| <= ln2/2, e^r by a degree-6 polynomial (relative
   error ~2e-7), times 2^n built in the exponent bits. Inputs are clamped to [-87, 88]. */
static MLSTACK__T_AVX2 __m256 mlstack__exp256(__m256 x) {
    __m256 n, r, p;
    __m256i e;
    x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(88.0f)), _mm256_set1_ps(-87.0f));
    n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145752f), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860677e-6f), r);
    p = _mm256_set1_ps(1.0f / 720);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    return _mm256_mul_ps(p, _mm256_castsi256_ps(e));
}

static MLSTACK__T_AVX2 void mlstack__swiglu_avx2(float *g, const float *u, int n) {
    int i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 x = _mm256_loadu_ps(g + i);
        __m256 den = _mm256_add_ps(_mm256_set1_ps(1.0f), mlstack__exp256(_mm256_sub_ps(_mm256_setzero_ps(), x)));
        _mm256_storeu_ps(g + i, _mm256_mul_ps(_mm256_div_ps(x, den), _mm256_loadu_ps(u + i)));
    }
    if (i < n) mlstack__swiglu_scalar(g + i, u + i, n - i);
}

static MLSTACK__T_AVX2 void mlstack__rmsnorm_avx2(float *out, const float *x, const float *w, int n, float eps) {
    __m256 acc = _mm256_setzero_ps(), sc;
    float ss;
    int i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(x + i), acc);
    ss = mlstack__hsum256(acc);
    for (; i < n; i++) ss += x[i] * x[i];
    sc = _mm256_set1_ps(1.0f / sqrtf(ss / (float)n + eps));
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_loadu_ps(w + i), _mm256_mul_ps(_mm256_loadu_ps(x + i), sc)));
    for (; i < n; i++) out[i] = w[i] * (x[i] * _mm256_cvtss_f32(sc));
}

static const mlstack__kernels mlstack__kernels_avx2 = {"avx2", mlstack__matmul_avx2, mlstack__dot_avx2, mlstack__axpy_avx2,
                                                       mlstack__to_f32_avx2, mlstack__rmsnorm_avx2, mlstack__swiglu_avx2, MLSTACK__ATTN_SCALAR, 0};
#endif

/* ==== 11. KERNELS AVX512 ==== */  /* >>avx512 */
/* AVX-512 F/BW/VL/DQ (+ VNNI for the int8 dots when present). 16 lanes, tails by masked loads
   into the same lanes. Projections are multiplied from their P16 panels (section 9), made when
   the first engine on this path starts; the attention chunk ops and activation quantization
   are vectorized here too. */
#if defined(MLSTACK__X86) && !defined(MLSTACK_NO_AVX512)
#define MLSTACK__HAVE_AVX512 1
#define MLSTACK__T_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")))
#define MLSTACK__T_VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512vnni,avx2,fma,f16c")))

/* Horizontal sum in a fixed tree (gcc 12's _mm512_reduce_add_ps trips -Wuninitialized in C++). */
static MLSTACK__T_AVX512 float mlstack__hsum512(__m512 v) {
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 lo = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
    return _mm_cvtss_f32(lo);
}

static MLSTACK__T_AVX512 float mlstack__hmax512(__m512 v) {
    __m256 h = _mm256_max_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
    __m128 lo = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    lo = _mm_max_ps(lo, _mm_movehl_ps(lo, lo));
    lo = _mm_max_ss(lo, _mm_movehdup_ps(lo));
    return _mm_cvtss_f32(lo);
}
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

/* Row kernels, for weights without P16 panels (BF16 under the bf16-dot table; tests).
   Register tile: RO weight rows x RB activation rows, 16 lanes each. Every accumulator sums
   its element in the same order whatever tile it sits in, so tiling never changes results. */
#if defined(__GNUC__) && !defined(__CUDACC__) /* nvcc's front end warns on GCC loop pragmas */
#define MLSTACK__UNROLL _Pragma("GCC unroll 8")
#else
#define MLSTACK__UNROLL
#endif
#define MLSTACK__TILE_AVX512(NAME, LOAD, RO, RB)                                                              \
    static MLSTACK__T_AVX512 void NAME(const unsigned char *row, size_t rb, const float *x, int n, float *y,   \
                                       size_t ldy, const float *bias) {                                       \
        __m512 acc[RO][RB], xv[RB];                                                                           \
        int r, j, i, n16 = n & ~15;                                                                           \
        __mmask16 tail = (__mmask16)((1u << (n & 15)) - 1);                                                   \
        MLSTACK__UNROLL for (r = 0; r < RO; r++)                                                              \
            MLSTACK__UNROLL for (j = 0; j < RB; j++) acc[r][j] = _mm512_setzero_ps();                         \
        for (i = 0; i < n16; i += 16) {                                                                       \
            MLSTACK__UNROLL for (j = 0; j < RB; j++) xv[j] = _mm512_loadu_ps(x + (size_t)j * n + i);          \
            MLSTACK__UNROLL for (r = 0; r < RO; r++) {                                                        \
                __m512 wv = LOAD(row + (size_t)r * rb, i, (__mmask16)0xFFFF);                                 \
                MLSTACK__UNROLL for (j = 0; j < RB; j++) acc[r][j] = _mm512_fmadd_ps(wv, xv[j], acc[r][j]);   \
            }                                                                                                 \
        }                                                                                                     \
        if (tail) {                                                                                           \
            MLSTACK__UNROLL for (j = 0; j < RB; j++) xv[j] = _mm512_maskz_loadu_ps(tail, x + (size_t)j * n + n16); \
            MLSTACK__UNROLL for (r = 0; r < RO; r++) {                                                        \
                __m512 wv = LOAD(row + (size_t)r * rb, n16, tail);                                            \
                MLSTACK__UNROLL for (j = 0; j < RB; j++) acc[r][j] = _mm512_fmadd_ps(wv, xv[j], acc[r][j]);   \
            }                                                                                                 \
        }                                                                                                     \
        for (r = 0; r < RO; r++)                                                                              \
            for (j = 0; j < RB; j++) y[(size_t)j * ldy + r] = mlstack__hsum512(acc[r][j]) + (bias ? bias[r] : 0.0f); \
    }
/* Float-weight matmul from 4x4 tiles (edges: 4x1, 1x4, 1x1). */
#define MLSTACK__MM_AVX512(NAME, LOAD)                                                                        \
    MLSTACK__TILE_AVX512(NAME##_44, LOAD, 4, 4)                                                               \
    MLSTACK__TILE_AVX512(NAME##_41, LOAD, 4, 1)                                                               \
    MLSTACK__TILE_AVX512(NAME##_14, LOAD, 1, 4)                                                               \
    MLSTACK__TILE_AVX512(NAME##_11, LOAD, 1, 1)                                                               \
    static MLSTACK__T_AVX512 void NAME(const mlstack__weight *w, const float *x, float *y, int B, int o0, int o1) { \
        int n = w->n_in, o, b;                                                                                \
        size_t rb = w->row_bytes, ldy = (size_t)w->n_out;                                                     \
        for (o = o0; o < o1;) {                                                                               \
            const unsigned char *row = (const unsigned char *)w->data + (size_t)o * rb;                       \
            const float *bias = w->bias ? w->bias + o : NULL;                                                 \
            if (o1 - o >= 4 && B >= 4) {                                                                      \
                for (b = 0; b + 4 <= B; b += 4) NAME##_44(row, rb, x + (size_t)b * n, n, y + b * ldy + o, ldy, bias); \
                for (; b < B; b++) NAME##_41(row, rb, x + (size_t)b * n, n, y + b * ldy + o, ldy, bias);     \
                o += 4;                                                                                       \
            } else {                                                                                          \
                for (b = 0; b + 4 <= B; b += 4) NAME##_14(row, rb, x + (size_t)b * n, n, y + b * ldy + o, ldy, bias); \
                for (; b < B; b++) NAME##_11(row, rb, x + (size_t)b * n, n, y + b * ldy + o, ldy, bias);     \
                o += 1;                                                                                       \
            }                                                                                                 \
        }                                                                                                     \
    }
MLSTACK__MM_AVX512(mlstack__mm_f32_avx512, mlstack__ld16_f32)
MLSTACK__MM_AVX512(mlstack__mm_f16_avx512, mlstack__ld16_f16)
MLSTACK__MM_AVX512(mlstack__mm_bf16_avx512, mlstack__ld16_bf16)

/* P16 kernels (layout in section 9). One broadcast activation times 16 outputs per FMA, so
   each output element is a plain sum in input order (f32: one FMA per input; int8: one scaled
   block at a time), whatever the tile: tiles of RB activation rows x RO panels only decide which
   elements are computed together. Float weights go in steps of MLSTACK__MM_KC inputs, the partial
   sums parked in y between steps (exactly resumable), F16/BF16 panels converted to f32 once per
   step for all activation rows. */
#define MLSTACK__ALWAYS_INLINE inline __attribute__((always_inline))
static MLSTACK__ALWAYS_INLINE MLSTACK__T_AVX512 __mmask16 mlstack__mask16(int n) {
    return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}
/* WT: how wp holds the values: MLSTACK__W_F32 (f32, as packed or converted), F16 or BF16 (read
   straight from the panels, for a single activation row). */
static MLSTACK__ALWAYS_INLINE MLSTACK__T_AVX512 __m512 mlstack__p16f_load(const void *wp, size_t i, const int WT) {
    if (WT == MLSTACK__W_F16) return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)((const uint16_t *)wp + i)));
    if (WT == MLSTACK__W_BF16)
        return _mm512_castsi512_ps(_mm512_slli_epi32(
            _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(const void *)((const uint16_t *)wp + i))), 16));
    return _mm512_loadu_ps((const float *)wp + i);
}
static MLSTACK__ALWAYS_INLINE MLSTACK__T_AVX512 void mlstack__p16f_tile(const void *wp, const float *x, size_t ldx,
                                                                       float *y, size_t ldy, int kn, int resume,
                                                                       const float *bias, int nv, const int RB, const int RO,
                                                                       const int WT) {
    __m512 acc[6][4];
    int b, p, k;
    MLSTACK__UNROLL for (b = 0; b < RB; b++)
        MLSTACK__UNROLL for (p = 0; p < RO; p++)
            acc[b][p] = resume ? _mm512_maskz_loadu_ps(mlstack__mask16(nv - 16 * p), y + (size_t)b * ldy + 16 * p)
                               : _mm512_setzero_ps();
    for (k = 0; k < kn; k++) {
        __m512 wv[4];
        MLSTACK__UNROLL for (p = 0; p < RO; p++) wv[p] = mlstack__p16f_load(wp, ((size_t)k * RO + p) * 16, WT);
        MLSTACK__UNROLL for (b = 0; b < RB; b++) {
            __m512 xv = _mm512_set1_ps(x[(size_t)b * ldx + (size_t)k]);
            MLSTACK__UNROLL for (p = 0; p < RO; p++) acc[b][p] = _mm512_fmadd_ps(wv[p], xv, acc[b][p]);
        }
    }
    MLSTACK__UNROLL for (b = 0; b < RB; b++)
        MLSTACK__UNROLL for (p = 0; p < RO; p++) {
            __mmask16 m = mlstack__mask16(nv - 16 * p);
            __m512 v = acc[b][p];
            if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + 16 * p));
            _mm512_mask_storeu_ps(y + (size_t)b * ldy + 16 * p, m, v);
        }
}

static MLSTACK__T_AVX512 void mlstack__mm_p16f_avx512(const mlstack__weight *w, const float *x, float *y, int B, int o0,
                                                      int o1, float *scratch) {
    int n = w->n_in, p, k0, b, i;
    size_t pb = mlstack__p16_bytes(w->wtype, n), ldy = (size_t)w->n_out;
    for (p = o0 / 16; p * 16 < o1; p += 4) {
        int ro = (o1 - p * 16 + 15) / 16, nv = o1 - p * 16;
        if (ro > 4) ro = 4;
        for (k0 = 0; k0 < n; k0 += MLSTACK__MM_KC) {
            int kn = n - k0 < MLSTACK__MM_KC ? n - k0 : MLSTACK__MM_KC, resume = k0 > 0;
            const float *bias = k0 + kn == n && w->bias ? w->bias + p * 16 : NULL, *wp;
            if (B == 1 && w->wtype != MLSTACK__W_F32) { /* one row: convert as it multiplies */
                const unsigned char *src = w->packed + (size_t)p * pb + (size_t)k0 * ro * 32;
                float *yb = y + (size_t)p * 16;
#define MLSTACK__P16F_CASE1(WT_, RO_)                                                                           \
    case (WT_) * 8 + (RO_): mlstack__p16f_tile(src, x + k0, (size_t)n, yb, ldy, kn, resume, bias, nv, 1, RO_, WT_); break;
                switch (w->wtype * 8 + ro) {
                    MLSTACK__P16F_CASE1(MLSTACK__W_F16, 1) MLSTACK__P16F_CASE1(MLSTACK__W_F16, 2)
                    MLSTACK__P16F_CASE1(MLSTACK__W_F16, 3) MLSTACK__P16F_CASE1(MLSTACK__W_F16, 4)
                    MLSTACK__P16F_CASE1(MLSTACK__W_BF16, 1) MLSTACK__P16F_CASE1(MLSTACK__W_BF16, 2)
                    MLSTACK__P16F_CASE1(MLSTACK__W_BF16, 3) MLSTACK__P16F_CASE1(MLSTACK__W_BF16, 4)
                default: break;
                }
#undef MLSTACK__P16F_CASE1
                continue;
            }
            if (w->wtype == MLSTACK__W_F32) {
                wp = (const float *)(const void *)(w->packed + (size_t)p * pb) + (size_t)k0 * ro * 16;
            } else { /* the step's values, converted once for all activation rows */
                const unsigned char *src = w->packed + (size_t)p * pb + (size_t)k0 * ro * 32;
                if (w->wtype == MLSTACK__W_F16)
                    for (i = 0; i < kn * ro; i++) _mm512_storeu_ps(scratch + 16 * i, mlstack__ld16_f16(src, 16 * i, (__mmask16)0xFFFF));
                else
                    for (i = 0; i < kn * ro; i++) _mm512_storeu_ps(scratch + 16 * i, mlstack__ld16_bf16(src, 16 * i, (__mmask16)0xFFFF));
                wp = scratch;
            }
            for (b = 0; b < B; b += 6) {
                int rb = B - b < 6 ? B - b : 6;
                const float *xb = x + (size_t)b * n + k0;
                float *yb = y + (size_t)b * ldy + (size_t)p * 16;
#define MLSTACK__P16F_CASE(RB_, RO_)                                                                          \
    case (RB_) * 8 + (RO_): mlstack__p16f_tile(wp, xb, (size_t)n, yb, ldy, kn, resume, bias, nv, RB_, RO_, MLSTACK__W_F32); break;
#define MLSTACK__P16F_ROW(RB_) MLSTACK__P16F_CASE(RB_, 1) MLSTACK__P16F_CASE(RB_, 2) MLSTACK__P16F_CASE(RB_, 3) MLSTACK__P16F_CASE(RB_, 4)
                switch (rb * 8 + ro) {
                    MLSTACK__P16F_ROW(1) MLSTACK__P16F_ROW(2) MLSTACK__P16F_ROW(3)
                    MLSTACK__P16F_ROW(4) MLSTACK__P16F_ROW(5) MLSTACK__P16F_ROW(6)
                default: break;
                }
#undef MLSTACK__P16F_ROW
#undef MLSTACK__P16F_CASE
            }
        }
    }
}

/* int8 P16 tile, RB <= 3 activation rows x RO <= 4 panels: per block, int32 sums by vpdpbusd
   (unsigned weights x signed activations; Q8_0's +128 offset removed by starting each sum at
   -128 * sum(x)), then acc += float(sum) * (d_w * d_x), and for Q4_1 acc += m_w * s_x. */
static MLSTACK__ALWAYS_INLINE MLSTACK__T_VNNI void mlstack__p16q_tile(int q8, const unsigned char *wp, const mlstack__q8x *xq, size_t ldx, int nb, float *y,
                                                                     size_t ldy, const float *bias, int nv, const int RB,
                                                                     const int RO) {
    __m512 acc[3][4];
    __m512i ia[3][4];
    const size_t qb = q8 ? 512 : 256, bs = (size_t)RO * (qb + (q8 ? 32 : 64));
    int b, p, g, k;
    MLSTACK__UNROLL for (b = 0; b < RB; b++) MLSTACK__UNROLL for (p = 0; p < RO; p++) acc[b][p] = _mm512_setzero_ps();
    for (k = 0; k < nb; k++) {
        const unsigned char *blk = wp + (size_t)k * bs, *sc = blk + (size_t)RO * qb;
        MLSTACK__UNROLL for (b = 0; b < RB; b++) {
            __m512i init = _mm512_set1_epi32(q8 ? -128 * xq[(size_t)b * ldx + k].sum : 0);
            MLSTACK__UNROLL for (p = 0; p < RO; p++) ia[b][p] = init;
        }
        if (q8) {
            MLSTACK__UNROLL for (g = 0; g < 8; g++) {
                __m512i wv[4];
                MLSTACK__UNROLL for (p = 0; p < RO; p++) wv[p] = _mm512_loadu_si512((const void *)(blk + (size_t)(g * RO + p) * 64));
                if (RB == 1) /* decode streams weights from memory: run ahead of the hardware prefetcher */
                    MLSTACK__UNROLL for (p = 0; p < RO; p++) _mm_prefetch((const char *)(blk + (size_t)(g * RO + p) * 64 + 1024), _MM_HINT_T0);
                MLSTACK__UNROLL for (b = 0; b < RB; b++) {
                    int32_t x4;
                    __m512i xv;
                    memcpy(&x4, xq[(size_t)b * ldx + k].q + 4 * g, 4);
                    xv = _mm512_set1_epi32(x4);
                    MLSTACK__UNROLL for (p = 0; p < RO; p++) ia[b][p] = _mm512_dpbusd_epi32(ia[b][p], wv[p], xv);
                }
            }
        } else {
            MLSTACK__UNROLL for (g = 0; g < 4; g++) {
                __m512i raw[4], lo[4];
                MLSTACK__UNROLL for (p = 0; p < RO; p++) {
                    raw[p] = _mm512_loadu_si512((const void *)(blk + (size_t)(g * RO + p) * 64));
                    if (RB == 1) _mm_prefetch((const char *)(blk + (size_t)(g * RO + p) * 64 + 1024), _MM_HINT_T0);
                    lo[p] = _mm512_and_si512(raw[p], _mm512_set1_epi8(15));
                }
                MLSTACK__UNROLL for (b = 0; b < RB; b++) {
                    int32_t x4;
                    __m512i xv;
                    memcpy(&x4, xq[(size_t)b * ldx + k].q + 4 * g, 4);
                    xv = _mm512_set1_epi32(x4);
                    MLSTACK__UNROLL for (p = 0; p < RO; p++) ia[b][p] = _mm512_dpbusd_epi32(ia[b][p], lo[p], xv);
                }
                MLSTACK__UNROLL for (p = 0; p < RO; p++) lo[p] = _mm512_and_si512(_mm512_srli_epi16(raw[p], 4), _mm512_set1_epi8(15));
                MLSTACK__UNROLL for (b = 0; b < RB; b++) {
                    int32_t x4;
                    __m512i xv;
                    memcpy(&x4, xq[(size_t)b * ldx + k].q + 16 + 4 * g, 4);
                    xv = _mm512_set1_epi32(x4);
                    MLSTACK__UNROLL for (p = 0; p < RO; p++) ia[b][p] = _mm512_dpbusd_epi32(ia[b][p], lo[p], xv);
                }
            }
        }
        MLSTACK__UNROLL for (p = 0; p < RO; p++) {
            __m512 d = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(sc + (size_t)p * 32)));
            MLSTACK__UNROLL for (b = 0; b < RB; b++) {
                const mlstack__q8x *xb = xq + (size_t)b * ldx + k;
                acc[b][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(ia[b][p]), _mm512_mul_ps(d, _mm512_set1_ps(xb->d)), acc[b][p]);
            }
            if (!q8) {
                __m512 m = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(const void *)(sc + (size_t)(RO + p) * 32)));
                MLSTACK__UNROLL for (b = 0; b < RB; b++)
                    acc[b][p] = _mm512_fmadd_ps(m, _mm512_set1_ps(xq[(size_t)b * ldx + k].s), acc[b][p]);
            }
        }
    }
    MLSTACK__UNROLL for (b = 0; b < RB; b++)
        MLSTACK__UNROLL for (p = 0; p < RO; p++) {
            __mmask16 m = mlstack__mask16(nv - 16 * p);
            __m512 v = acc[b][p];
            if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + 16 * p));
            _mm512_mask_storeu_ps(y + (size_t)b * ldy + 16 * p, m, v);
        }
}

static MLSTACK__T_VNNI void mlstack__mm_p16q_vnni(const mlstack__weight *w, const mlstack__q8x *xq, float *y, int B, int o0,
                                                  int o1) {
    int nb = w->n_in / MLSTACK__QK, q8 = w->wtype == MLSTACK__W_Q8_0, p, b;
    size_t pb = mlstack__p16_bytes(w->wtype, w->n_in), ldy = (size_t)w->n_out;
    for (p = o0 / 16; p * 16 < o1; p += 4) {
        int ro = (o1 - p * 16 + 15) / 16, nv = o1 - p * 16;
        const unsigned char *wp = w->packed + (size_t)p * pb;
        const float *bias = w->bias ? w->bias + p * 16 : NULL;
        if (ro > 4) ro = 4;
        for (b = 0; b < B; b += 3) {
            int rb = B - b < 3 ? B - b : 3;
            const mlstack__q8x *xb = xq + (size_t)b * nb;
            float *yb = y + (size_t)b * ldy + (size_t)p * 16;
#define MLSTACK__P16Q_CASE(Q, RB_, RO_)                                                                       \
    case (Q) * 64 + (RB_) * 8 + (RO_): mlstack__p16q_tile(Q, wp, xb, (size_t)nb, nb, yb, ldy, bias, nv, RB_, RO_); break;
#define MLSTACK__P16Q_ROW(Q, RB_) MLSTACK__P16Q_CASE(Q, RB_, 1) MLSTACK__P16Q_CASE(Q, RB_, 2) MLSTACK__P16Q_CASE(Q, RB_, 3) MLSTACK__P16Q_CASE(Q, RB_, 4)
            switch (q8 * 64 + rb * 8 + ro) {
                MLSTACK__P16Q_ROW(0, 1) MLSTACK__P16Q_ROW(0, 2) MLSTACK__P16Q_ROW(0, 3)
                MLSTACK__P16Q_ROW(1, 1) MLSTACK__P16Q_ROW(1, 2) MLSTACK__P16Q_ROW(1, 3)
            default: break;
            }
#undef MLSTACK__P16Q_ROW
#undef MLSTACK__P16Q_CASE
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
    return mlstack__hsum512(acc);
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
    if (w->packed) {
        if (w->wtype == MLSTACK__W_Q8_0 || w->wtype == MLSTACK__W_Q4_1) mlstack__mm_p16q_vnni(w, xq, y, B, o0, o1);
        else mlstack__mm_p16f_avx512(w, x, y, B, o0, o1, scratch);
        return;
    }
    switch (w->wtype) { /* weights without panels (BF16 under the bf16-dot table, tests) */
    case MLSTACK__W_F32: mlstack__mm_f32_avx512(w, x, y, B, o0, o1); break;
    case MLSTACK__W_F16: mlstack__mm_f16_avx512(w, x, y, B, o0, o1); break;
    case MLSTACK__W_BF16: mlstack__mm_bf16_avx512(w, x, y, B, o0, o1); break;
    default: mlstack__mm_q_avx2(w, xq, y, B, o0, o1); break;
    }
}
static MLSTACK__T_AVX512 void mlstack__matmul_avx512_novnni(const mlstack__weight *w, const float *x, const mlstack__q8x *xq,
                                                            float *y, int B, int o0, int o1, float *scratch) {
    if (w->wtype == MLSTACK__W_Q8_0 || w->wtype == MLSTACK__W_Q4_1) mlstack__mm_q_avx2(w, xq, y, B, o0, o1);
    else mlstack__matmul_avx512(w, x, xq, y, B, o0, o1, scratch);
}

static MLSTACK__T_AVX512 void mlstack__to_f32_avx512(mlstack_dtype dtype, const void *src, float *dst, size_t n) {
    const unsigned char *b = (const unsigned char *)src;
    size_t i = 0;
    if (dtype == MLSTACK_DTYPE_F16)
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, mlstack__ld16_f16(b, (int)i, (__mmask16)0xFFFF));
    else if (dtype == MLSTACK_DTYPE_BF16)
        for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, mlstack__ld16_bf16(b, (int)i, (__mmask16)0xFFFF));
    if (i < n) mlstack__to_f32(dtype, b + i * (dtype == MLSTACK_DTYPE_F32 ? 4 : 2), dst + i, n - i);
}

/* e^x as mlstack__exp256, 16 lanes, 2^n applied with scalef. */
static MLSTACK__T_AVX512 __m512 mlstack__exp512(__m512 x) {
    __m512 n, r, p;
    x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(88.0f)), _mm512_set1_ps(-87.0f));
    n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145752f), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.42860677e-6f), r);
    p = _mm512_set1_ps(1.0f / 720);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

static MLSTACK__T_AVX512 void mlstack__swiglu_avx512(float *g, const float *u, int n) {
    int i = 0;
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 x = _mm512_maskz_loadu_ps(m, g + i);
        __m512 den = _mm512_add_ps(_mm512_set1_ps(1.0f), mlstack__exp512(_mm512_sub_ps(_mm512_setzero_ps(), x)));
        _mm512_mask_storeu_ps(g + i, m, _mm512_mul_ps(_mm512_div_ps(x, den), _mm512_maskz_loadu_ps(m, u + i)));
    }
}

static MLSTACK__T_AVX512 void mlstack__rmsnorm_avx512(float *out, const float *x, const float *w, int n, float eps) {
    __m512 acc = _mm512_setzero_ps(), sc;
    int i;
    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        __m512 v = _mm512_maskz_loadu_ps(m, x + i);
        acc = _mm512_fmadd_ps(v, v, acc);
    }
    sc = _mm512_set1_ps(1.0f / sqrtf(mlstack__hsum512(acc) / (float)n + eps));
    for (i = 0; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1);
        _mm512_mask_storeu_ps(out + i, m,
                              _mm512_mul_ps(_mm512_maskz_loadu_ps(m, w + i), _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), sc)));
    }
}

static MLSTACK__T_AVX512 void mlstack__attn_scores_avx512(const float *q, int G, int Dh, const float *kt, int n, float scale,
                                                          float *s) {
    __mmask16 m0 = mlstack__mask16(n), m1 = mlstack__mask16(n - 16);
    int g, d;
    for (g = 0; g + 2 <= G; g += 2) { /* two heads at once: four independent sums */
        const float *q0 = q + (size_t)g * Dh, *q1 = q0 + Dh;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, b0 = a0, b1 = a0;
        for (d = 0; d < Dh; d++) {
            __m512 k0 = _mm512_loadu_ps(kt + (size_t)d * 32), k1 = _mm512_loadu_ps(kt + (size_t)d * 32 + 16);
            __m512 x0 = _mm512_set1_ps(q0[d]), x1 = _mm512_set1_ps(q1[d]);
            a0 = _mm512_fmadd_ps(x0, k0, a0), a1 = _mm512_fmadd_ps(x0, k1, a1);
            b0 = _mm512_fmadd_ps(x1, k0, b0), b1 = _mm512_fmadd_ps(x1, k1, b1);
        }
        _mm512_mask_storeu_ps(s + g * 32, m0, _mm512_mul_ps(a0, _mm512_set1_ps(scale)));
        _mm512_mask_storeu_ps(s + g * 32 + 16, m1, _mm512_mul_ps(a1, _mm512_set1_ps(scale)));
        _mm512_mask_storeu_ps(s + g * 32 + 32, m0, _mm512_mul_ps(b0, _mm512_set1_ps(scale)));
        _mm512_mask_storeu_ps(s + g * 32 + 48, m1, _mm512_mul_ps(b1, _mm512_set1_ps(scale)));
    }
    for (; g < G; g++) {
        const float *q0 = q + (size_t)g * Dh;
        __m512 a0 = _mm512_setzero_ps(), a1 = a0;
        for (d = 0; d < Dh; d++) {
            __m512 x0 = _mm512_set1_ps(q0[d]);
            a0 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(kt + (size_t)d * 32), a0);
            a1 = _mm512_fmadd_ps(x0, _mm512_loadu_ps(kt + (size_t)d * 32 + 16), a1);
        }
        _mm512_mask_storeu_ps(s + g * 32, m0, _mm512_mul_ps(a0, _mm512_set1_ps(scale)));
        _mm512_mask_storeu_ps(s + g * 32 + 16, m1, _mm512_mul_ps(a1, _mm512_set1_ps(scale)));
    }
}
static MLSTACK__T_AVX512 float mlstack__exp_shift_avx512(float *s, int n, float m) {
    __m512 sum = _mm512_setzero_ps();
    int i;
    for (i = 0; i < n; i += 16) {
        __mmask16 k = mlstack__mask16(n - i);
        __m512 v = mlstack__exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, s + i), _mm512_set1_ps(m)));
        _mm512_mask_storeu_ps(s + i, k, v);
        sum = _mm512_add_ps(sum, _mm512_maskz_mov_ps(k, v));
    }
    return mlstack__hsum512(sum);
}
static MLSTACK__T_AVX512 void mlstack__attn_pv_avx512(float *acc, int G, int Dh, const float *p, const float *v, int n) {
    int g, d, j, i;
    for (g = 0; g < G; g++)
        for (d = 0; d < Dh; d += 64) { /* up to four vectors of the head at once */
            __m512 a[4];
            __mmask16 k[4];
            MLSTACK__UNROLL for (i = 0; i < 4; i++) {
                k[i] = mlstack__mask16(Dh - d - 16 * i);
                a[i] = _mm512_maskz_loadu_ps(k[i], acc + (size_t)g * Dh + d + 16 * i);
            }
            for (j = 0; j < n; j++) {
                __m512 pj = _mm512_set1_ps(p[g * 32 + j]);
                const float *vj = v + (size_t)j * Dh + d;
                MLSTACK__UNROLL for (i = 0; i < 4; i++) a[i] = _mm512_fmadd_ps(pj, _mm512_maskz_loadu_ps(k[i], vj + 16 * i), a[i]);
            }
            MLSTACK__UNROLL for (i = 0; i < 4; i++) _mm512_mask_storeu_ps(acc + (size_t)g * Dh + d + 16 * i, k[i], a[i]);
        }
}
/* mlstack__quantize_rows with the same float operations, 16 lanes at a time. */
static MLSTACK__T_AVX512 void mlstack__quantize_rows_avx512(const float *x, mlstack__q8x *xq, int B, int n) {
    int b, k, nb = n / MLSTACK__QK;
    const __m512 sign = _mm512_castsi512_ps(_mm512_set1_epi32((int)0x80000000u)), half = _mm512_set1_ps(0.5f);
    for (b = 0; b < B; b++)
        for (k = 0; k < nb; k++) {
            const float *xb = x + (size_t)b * n + (size_t)k * MLSTACK__QK;
            mlstack__q8x *blk = &xq[(size_t)b * nb + k];
            __m512 v0 = _mm512_loadu_ps(xb), v1 = _mm512_loadu_ps(xb + 16), id;
            __m512i q0, q1;
            float amax = mlstack__hmax512(_mm512_max_ps(_mm512_andnot_ps(sign, v0), _mm512_andnot_ps(sign, v1))), d = amax / 127.0f;
            id = _mm512_set1_ps(d > 0 ? 1.0f / d : 0.0f);
            v0 = _mm512_mul_ps(v0, id), v1 = _mm512_mul_ps(v1, id);
            /* round half away from zero: add 0.5 with the value's sign, truncate */
            q0 = _mm512_cvttps_epi32(_mm512_add_ps(v0, _mm512_or_ps(half, _mm512_and_ps(sign, v0))));
            q1 = _mm512_cvttps_epi32(_mm512_add_ps(v1, _mm512_or_ps(half, _mm512_and_ps(sign, v1))));
            _mm_storeu_si128((__m128i *)(void *)blk->q, _mm512_cvtepi32_epi8(q0));
            _mm_storeu_si128((__m128i *)(void *)(blk->q + 16), _mm512_cvtepi32_epi8(q1));
            blk->d = d;
            {
                __m512i t = _mm512_add_epi32(q0, q1);
                __m256i h = _mm256_add_epi32(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));
                __m128i l = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
                l = _mm_add_epi32(l, _mm_shuffle_epi32(l, 0x4E));
                l = _mm_add_epi32(l, _mm_shuffle_epi32(l, 0xB1));
                blk->sum = _mm_cvtsi128_si32(l);
            }
            blk->s = d * (float)blk->sum;
        }
}
#define MLSTACK__ATTN_AVX512 mlstack__attn_scores_avx512, mlstack__exp_shift_avx512, mlstack__attn_pv_avx512, \
                             mlstack__quantize_rows_avx512

static const mlstack__kernels mlstack__kernels_avx512 = {"avx512+vnni", mlstack__matmul_avx512, mlstack__dot_avx512,
                                                         mlstack__axpy_avx512, mlstack__to_f32_avx512,
                                                         mlstack__rmsnorm_avx512, mlstack__swiglu_avx512, MLSTACK__ATTN_AVX512, MLSTACK__PACKS_ALL};
/* AVX512_BF16, opt-in (engine descriptor bf16_activations): BF16 weights times activations
   rounded to bf16, two products per lane per vdpbf16ps, f32 accumulation. About 3x the BF16
   prefill throughput of widening the weights, at the price of rounding activations to 8
   mantissa bits (llama.cpp's BF16 path does the same). Activation rows are converted two at a
   time into the thread's scratch (n_in floats hold two bf16 rows); each output element sums
   the pairs of its row in one fixed order, so results stay batch invariant. */
#define MLSTACK__T_BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16,avx2,fma,f16c")))
static MLSTACK__T_BF16 void mlstack__bf16_row(const float *x, uint16_t *dst, int n) {
    int i;
    for (i = 0; i < n; i += 32) {
        int left = n - i;
        __mmask16 m0 = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
        __mmask16 m1 = left >= 32 ? (__mmask16)0xFFFF : left > 16 ? (__mmask16)((1u << (left - 16)) - 1) : (__mmask16)0;
        __m512bh v = _mm512_cvtne2ps_pbh(_mm512_maskz_loadu_ps(m1, x + i + 16), _mm512_maskz_loadu_ps(m0, x + i));
        _mm512_storeu_si512((void *)(dst + i), (__m512i)v);
    }
}
static MLSTACK__T_BF16 void mlstack__mm_bf16dp(const mlstack__weight *w, const float *x, float *y, int B, int o0, int o1,
                                               float *scratch) {
    int n = w->n_in, n32 = (n + 31) & ~31, o, b, j, i, fit = n >= n32 ? 2 : 1;
    uint16_t *xb = (uint16_t *)(void *)scratch; /* n floats of scratch: two rows of n32 bf16 values
                                                   when n is a multiple of 32, else one */
    if (n32 > 2 * n) { /* tiny rows: not even one padded bf16 row fits in n floats */
        mlstack__matmul_avx512(w, x, NULL, y, B, o0, o1, scratch);
        return;
    }
    for (b = 0; b < B; b += fit) {
        int nb = B - b >= fit ? fit : 1;
        for (j = 0; j < nb; j++) mlstack__bf16_row(x + (size_t)(b + j) * n, xb + (size_t)j * n32, n);
        for (o = o0; o < o1; o++) {
            const uint16_t *wr = (const uint16_t *)(const void *)((const unsigned char *)w->data + (size_t)o * w->row_bytes);
            __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
            for (i = 0; i < n; i += 32) {
                int left = n - i;
                __mmask32 m = left >= 32 ? (__mmask32)0xFFFFFFFFu : (__mmask32)((1u << left) - 1);
                __m512i wv = _mm512_maskz_loadu_epi16(m, wr + i);
                acc0 = _mm512_dpbf16_ps(acc0, (__m512bh)wv, (__m512bh)_mm512_loadu_si512((const void *)(xb + i)));
                if (nb == 2) acc1 = _mm512_dpbf16_ps(acc1, (__m512bh)wv, (__m512bh)_mm512_loadu_si512((const void *)(xb + n32 + i)));
            }
            y[(size_t)b * w->n_out + o] = mlstack__hsum512(acc0) + (w->bias ? w->bias[o] : 0.0f);
            if (nb == 2) y[(size_t)(b + 1) * w->n_out + o] = mlstack__hsum512(acc1) + (w->bias ? w->bias[o] : 0.0f);
        }
    }
}
static MLSTACK__T_BF16 void mlstack__matmul_avx512_bf16(const mlstack__weight *w, const float *x, const mlstack__q8x *xq,
                                                       float *y, int B, int o0, int o1, float *scratch) {
    if (w->wtype == MLSTACK__W_BF16) mlstack__mm_bf16dp(w, x, y, B, o0, o1, scratch);
    else mlstack__matmul_avx512(w, x, xq, y, B, o0, o1, scratch);
}
static const mlstack__kernels mlstack__kernels_avx512_bf16 = {"avx512+vnni+bf16dot", mlstack__matmul_avx512_bf16,
                                                              mlstack__dot_avx512, mlstack__axpy_avx512,
                                                              mlstack__to_f32_avx512, mlstack__rmsnorm_avx512,
                                                              mlstack__swiglu_avx512,
                                                              MLSTACK__ATTN_AVX512, MLSTACK__PACKS_ALL & ~(1u << MLSTACK__W_BF16)};
static const mlstack__kernels mlstack__kernels_avx512_novnni = {"avx512", mlstack__matmul_avx512_novnni,
                                                                mlstack__dot_avx512, mlstack__axpy_avx512,
                                                                mlstack__to_f32_avx512, mlstack__rmsnorm_avx512,
                                                                mlstack__swiglu_avx512, MLSTACK__ATTN_AVX512, MLSTACK__PACKS_FLOAT};
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__cplusplus)
#pragma GCC diagnostic pop
#endif

/* ==== 12. KERNELS NEON ==== */  /* >>neon */
/* AArch64 Advanced SIMD. NEON and the f16 <-> f32 conversions are baseline on every AArch64
   CPU, so these kernels need no target attribute; only the int8 dot product (SDOT, "dotprod",
   optional from Armv8.2) is compiled per function and chosen when the kernel's hwcaps report it.
   Same layouts as section 9; data is read as little-endian bytes.
   Reduction order per output element, whatever B is:
     float weights: 16 lanes (lane = index mod 16) in four 4-lane accumulators, the tail
       zero-padded into the same lanes, combined as (a0 + a1) + (a2 + a3), then across lanes;
     Q8_0/Q4_1: per block, lane l of an int32x4 holds the exact sum of products 4l..4l+3 of
       each 16-element half; it is scaled by d_w * d_x into one f32 accumulator in block order,
       then summed across lanes. Integer sums are exact, so the SDOT and the plain path give the
       same lanes and therefore the same bits. */
#if defined(__aarch64__) && !defined(MLSTACK_NO_NEON)
#define MLSTACK__HAVE_NEON 1

/* 4 weights at element i of a row, as f32 (byte loads: rows need no alignment) */
static float32x4_t mlstack__ld4_f32(const unsigned char *r, int i) {
    return vreinterpretq_f32_u8(vld1q_u8(r + 4 * (size_t)i));
}
static float32x4_t mlstack__ld4_f16(const unsigned char *r, int i) {
    return vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(r + 2 * (size_t)i)));
}
static float32x4_t mlstack__ld4_bf16(const unsigned char *r, int i) {
    return vreinterpretq_f32_u32(vshll_n_u16(vreinterpret_u16_u8(vld1_u8(r + 2 * (size_t)i)), 16));
}

/* Finishes one output element: the m < 16 tail elements (weights wt, already padded with zeros;
   activations xt) into the same lanes, the fixed combine, the bias.
   Accumulators pass by value so that the callers' stay in registers. */
static float mlstack__neon_finish(float32x4_t a0, float32x4_t a1, float32x4_t a2, float32x4_t a3, const float32x4_t *wt,
                                  const float *xt, int m, const float *bias) {
    float v;
    if (m > 0) {
        float pad[16];
        memset(pad, 0, sizeof pad);
        memcpy(pad, xt, sizeof(float) * (size_t)m);
        a0 = vfmaq_f32(a0, wt[0], vld1q_f32(pad));
        a1 = vfmaq_f32(a1, wt[1], vld1q_f32(pad + 4));
        a2 = vfmaq_f32(a2, wt[2], vld1q_f32(pad + 8));
        a3 = vfmaq_f32(a3, wt[3], vld1q_f32(pad + 12));
    }
    v = vaddvq_f32(vaddq_f32(vaddq_f32(a0, a1), vaddq_f32(a2, a3)));
    return bias ? v + *bias : v;
}
#define MLSTACK__NEON_FINISH(A, XT) mlstack__neon_finish((A)[0], (A)[1], (A)[2], (A)[3], wtail, (XT), n - n16, bias)

/* 16 weights w0..w3 times 16 activations at XP into the accumulators A[0..3] */
#define MLSTACK__NEON_FMA16(A, XP)                                \
    do {                                                          \
        (A)[0] = vfmaq_f32((A)[0], w0, vld1q_f32((XP)));          \
        (A)[1] = vfmaq_f32((A)[1], w1, vld1q_f32((XP) + 4));      \
        (A)[2] = vfmaq_f32((A)[2], w2, vld1q_f32((XP) + 8));      \
        (A)[3] = vfmaq_f32((A)[3], w3, vld1q_f32((XP) + 12));     \
    } while (0)

/* Float-weight matmul: W row o (element size ESZ, converted by LOAD) against 4 activation rows
   per pass, or 1 for the last B mod 4; both do the same operations per element. */
#define MLSTACK__MM_NEON(NAME, LOAD, WT, ESZ)                                                                   \
    static void NAME(const mlstack__weight *w, const float *x, float *y, int B, int o0, int o1) {               \
        int n = w->n_in, n16 = n & ~15, o, b, i, l;                                                             \
        for (o = o0; o < o1; o++) {                                                                             \
            const unsigned char *row = (const unsigned char *)w->data + (size_t)o * w->row_bytes;               \
            const float *bias = w->bias ? w->bias + o : NULL;                                                   \
            float wt[16];                                                                                       \
            float32x4_t wtail[4];                                                                               \
            memset(wt, 0, sizeof wt);                                                                           \
            if (n16 < n) mlstack__to_f32(WT, row + (size_t)n16 * (ESZ), wt, (size_t)(n - n16));                 \
            for (l = 0; l < 4; l++) wtail[l] = vld1q_f32(wt + 4 * l);                                           \
            for (b = 0; b < B;) {                                                                               \
                const float *x0 = x + (size_t)b * n, *x1 = x0 + n, *x2 = x1 + n, *x3 = x2 + n;                  \
                float *yb = y + (size_t)b * w->n_out + o;                                                       \
                float32x4_t a0[4], a1[4], a2[4], a3[4];                                                         \
                a0[0] = a0[1] = a0[2] = a0[3] = a1[0] = a1[1] = a1[2] = a1[3] = vdupq_n_f32(0.0f);              \
                a2[0] = a2[1] = a2[2] = a2[3] = a3[0] = a3[1] = a3[2] = a3[3] = a0[0];                          \
                if (B - b >= 4) {                                                                               \
                    for (i = 0; i < n16; i += 16) {                                                             \
                        float32x4_t w0 = LOAD(row, i), w1 = LOAD(row, i + 4), w2 = LOAD(row, i + 8),            \
                                    w3 = LOAD(row, i + 12);                                                     \
                        MLSTACK__NEON_FMA16(a0, x0 + i);                                                        \
                        MLSTACK__NEON_FMA16(a1, x1 + i);                                                        \
                        MLSTACK__NEON_FMA16(a2, x2 + i);                                                        \
                        MLSTACK__NEON_FMA16(a3, x3 + i);                                                        \
                    }                                                                                           \
                    yb[0] = MLSTACK__NEON_FINISH(a0, x0 + n16);                                                 \
                    yb[(size_t)w->n_out] = MLSTACK__NEON_FINISH(a1, x1 + n16);                                  \
                    yb[2 * (size_t)w->n_out] = MLSTACK__NEON_FINISH(a2, x2 + n16);                              \
                    yb[3 * (size_t)w->n_out] = MLSTACK__NEON_FINISH(a3, x3 + n16);                              \
                    b += 4;                                                                                     \
                } else {                                                                                        \
                    for (i = 0; i < n16; i += 16) {                                                             \
                        float32x4_t w0 = LOAD(row, i), w1 = LOAD(row, i + 4), w2 = LOAD(row, i + 8),            \
                                    w3 = LOAD(row, i + 12);                                                     \
                        MLSTACK__NEON_FMA16(a0, x0 + i);                                                        \
                    }                                                                                           \
                    yb[0] = MLSTACK__NEON_FINISH(a0, x0 + n16);                                                 \
                    b += 1;                                                                                     \
                }                                                                                               \
            }                                                                                                   \
        }                                                                                                       \
    }
MLSTACK__MM_NEON(mlstack__mm_f32_neon, mlstack__ld4_f32, MLSTACK_DTYPE_F32, 4)
MLSTACK__MM_NEON(mlstack__mm_f16_neon, mlstack__ld4_f16, MLSTACK_DTYPE_F16, 2)
MLSTACK__MM_NEON(mlstack__mm_bf16_neon, mlstack__ld4_bf16, MLSTACK_DTYPE_BF16, 2)

/* Block k of a quantized row as two signed halves (elements 0..15 and 16..31) and its scale
   in every lane. */
static void mlstack__ldq8_neon(const unsigned char *row, int k, int8x16_t *lo, int8x16_t *hi, float32x4_t *d, float *m) {
    const mlstack__q8_0 *blk = (const mlstack__q8_0 *)(const void *)row + k;
    *lo = vld1q_s8(blk->q);
    *hi = vld1q_s8(blk->q + 16);
    *d = vcvt_f32_f16(vreinterpret_f16_u16(vld1_dup_u16(&blk->d)));
    *m = 0.0f;
}
/* Q4_1: nibbles 0..15 are valid signed bytes; the offset m is added per block by the caller. */
static void mlstack__ldq4_neon(const unsigned char *row, int k, int8x16_t *lo, int8x16_t *hi, float32x4_t *d, float *m) {
    const mlstack__q4_1 *blk = (const mlstack__q4_1 *)(const void *)row + k;
    uint8x16_t raw = vld1q_u8(blk->q);
    *lo = vreinterpretq_s8_u8(vandq_u8(raw, vdupq_n_u8(15)));
    *hi = vreinterpretq_s8_u8(vshrq_n_u8(raw, 4));
    *d = vcvt_f32_f16(vreinterpret_f16_u16(vld1_dup_u16(&blk->d)));
    *m = mlstack__f16_to_f32(blk->m);
}

/* 32 int8 weights (lo, hi) . 32 int8 activations q -> lane l: products 4l..4l+3 of both halves.
   Plain NEON: widening products, pairs added in int16 (each |product| <= 127 * 128, since
   activations stay in [-127, 127], so a pair fits), then into int32 lanes. */
static int32x4_t mlstack__dot_i8_neon(int8x16_t lo, int8x16_t hi, const int8_t *q) {
    int8x16_t x0 = vld1q_s8(q), x1 = vld1q_s8(q + 16);
    int16x8_t p0 = vpaddq_s16(vmull_s8(vget_low_s8(lo), vget_low_s8(x0)), vmull_high_s8(lo, x0));
    int16x8_t p1 = vpaddq_s16(vmull_s8(vget_low_s8(hi), vget_low_s8(x1)), vmull_high_s8(hi, x1));
    return vpadalq_s16(vpaddlq_s16(p0), p1);
}

/* Quantized matmul: each weight block is loaded (Q4: unpacked) once for 4 activation rows. */
#define MLSTACK__MMQ_NEON(NAME, ATTR, LOADQ, DOT)                                                              \
    static ATTR void NAME(const mlstack__weight *w, const mlstack__q8x *xq, float *y, int B, int o0, int o1) { \
        int nb = w->n_in / MLSTACK__QK, o, b, k;                                                                \
        for (o = o0; o < o1; o++) {                                                                             \
            const unsigned char *row = (const unsigned char *)w->data + (size_t)o * w->row_bytes;               \
            float bias = w->bias ? w->bias[o] : 0.0f, *yb;                                                      \
            for (b = 0; b < B;) {                                                                               \
                const mlstack__q8x *x0 = xq + (size_t)b * nb, *x1 = x0 + nb, *x2 = x1 + nb, *x3 = x2 + nb;      \
                float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, a2 = a0, a3 = a0;                                  \
                float f0 = 0, f1 = 0, f2 = 0, f3 = 0, m;                                                        \
                yb = y + (size_t)b * w->n_out + o;                                                              \
                if (B - b >= 4) {                                                                               \
                    for (k = 0; k < nb; k++) {                                                                  \
                        int8x16_t lo, hi;                                                                       \
                        float32x4_t d;                                                                          \
                        LOADQ(row, k, &lo, &hi, &d, &m);                                                        \
                        a0 = vfmaq_f32(a0, vcvtq_f32_s32(DOT(lo, hi, x0[k].q)), vmulq_n_f32(d, x0[k].d));       \
                        a1 = vfmaq_f32(a1, vcvtq_f32_s32(DOT(lo, hi, x1[k].q)), vmulq_n_f32(d, x1[k].d));       \
                        a2 = vfmaq_f32(a2, vcvtq_f32_s32(DOT(lo, hi, x2[k].q)), vmulq_n_f32(d, x2[k].d));       \
                        a3 = vfmaq_f32(a3, vcvtq_f32_s32(DOT(lo, hi, x3[k].q)), vmulq_n_f32(d, x3[k].d));       \
                        f0 += m * x0[k].s, f1 += m * x1[k].s, f2 += m * x2[k].s, f3 += m * x3[k].s;             \
                    }                                                                                           \
                    yb[(size_t)w->n_out] = vaddvq_f32(a1) + f1 + bias;                                          \
                    yb[2 * (size_t)w->n_out] = vaddvq_f32(a2) + f2 + bias;                                      \
                    yb[3 * (size_t)w->n_out] = vaddvq_f32(a3) + f3 + bias;                                      \
                    b += 4;                                                                                     \
                } else {                                                                                        \
                    for (k = 0; k < nb; k++) {                                                                  \
                        int8x16_t lo, hi;                                                                       \
                        float32x4_t d;                                                                          \
                        LOADQ(row, k, &lo, &hi, &d, &m);                                                        \
                        a0 = vfmaq_f32(a0, vcvtq_f32_s32(DOT(lo, hi, x0[k].q)), vmulq_n_f32(d, x0[k].d));       \
                        f0 += m * x0[k].s;                                                                      \
                    }                                                                                           \
                    b += 1;                                                                                     \
                }                                                                                               \
                yb[0] = vaddvq_f32(a0) + f0 + bias;                                                             \
            }                                                                                                   \
        }                                                                                                       \
    }
MLSTACK__MMQ_NEON(mlstack__mm_q8_neon, , mlstack__ldq8_neon, mlstack__dot_i8_neon)
MLSTACK__MMQ_NEON(mlstack__mm_q4_neon, , mlstack__ldq4_neon, mlstack__dot_i8_neon)

static float mlstack__dot_neon(const float *a, const float *b, int n) {
    float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
    int i = 0;
    float s;
    for (; i + 16 <= n; i += 16) {
        s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
        s1 = vfmaq_f32(s1, vld1q_f32(a + i + 4), vld1q_f32(b + i + 4));
        s2 = vfmaq_f32(s2, vld1q_f32(a + i + 8), vld1q_f32(b + i + 8));
        s3 = vfmaq_f32(s3, vld1q_f32(a + i + 12), vld1q_f32(b + i + 12));
    }
    for (; i + 4 <= n; i += 4) s0 = vfmaq_f32(s0, vld1q_f32(a + i), vld1q_f32(b + i));
    s = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
    for (; i < n; i++) s += a[i] * b[i];
    return s;
}
static void mlstack__axpy_neon(float *y, float a, const float *x, int n) {
    int i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_n_f32(vld1q_f32(y + i), vld1q_f32(x + i), a));
    for (; i < n; i++) y[i] += a * x[i];
}

static void mlstack__matmul_neon(const mlstack__weight *w, const float *x, const mlstack__q8x *xq, float *y, int B,
                                 int o0, int o1, float *scratch) {
    (void)scratch;
    switch (w->wtype) {
    case MLSTACK__W_F32: mlstack__mm_f32_neon(w, x, y, B, o0, o1); break;
    case MLSTACK__W_F16: mlstack__mm_f16_neon(w, x, y, B, o0, o1); break;
    case MLSTACK__W_BF16: mlstack__mm_bf16_neon(w, x, y, B, o0, o1); break;
    case MLSTACK__W_Q8_0: mlstack__mm_q8_neon(w, xq, y, B, o0, o1); break;
    default: mlstack__mm_q4_neon(w, xq, y, B, o0, o1); break;
    }
}

/* F16/BF16 rows (the KV cache) to f32, 4 at a time; bytes loaded as bytes, no alignment needed. */
static void mlstack__to_f32_neon(mlstack_dtype dtype, const void *src, float *dst, size_t n) {
    const unsigned char *b = (const unsigned char *)src;
    size_t i = 0;
    if (dtype == MLSTACK_DTYPE_F16)
        for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vcvt_f32_f16(vreinterpret_f16_u8(vld1_u8(b + 2 * i))));
    else if (dtype == MLSTACK_DTYPE_BF16)
        for (; i + 4 <= n; i += 4) vst1q_f32(dst + i, vreinterpretq_f32_u32(vshll_n_u16(vreinterpret_u16_u8(vld1_u8(b + 2 * i)), 16)));
    if (i < n) mlstack__to_f32(dtype, b + i * (dtype == MLSTACK_DTYPE_F32 ? 4 : 2), dst + i, n - i);
}

static const mlstack__kernels mlstack__kernels_neon = {"neon", mlstack__matmul_neon, mlstack__dot_neon,
                                                       mlstack__axpy_neon, mlstack__to_f32_neon, mlstack__rmsnorm,
                                                       mlstack__swiglu_scalar, MLSTACK__ATTN_SCALAR, 0};

/* SDOT path. GCC (8 and later) declares the intrinsic always, under the target
   "arch=armv8.2-a+dotprod", and inlines it only into functions whose target includes all of
   that ("+dotprod" alone on the armv8-a baseline is refused). That is no loss: dotprod exists
   only from Armv8.2 on, so a CPU that reports it runs Armv8.2 code. Clang before 16 declares
   the intrinsic only when the whole translation unit is built for dotprod
   (-march=armv8.2-a+dotprod), and then no attribute is needed. */
#if defined(__ARM_FEATURE_DOTPROD)
#define MLSTACK__HAVE_NEON_DOT 1
#define MLSTACK__T_DOTPROD
#elif defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 8
#define MLSTACK__HAVE_NEON_DOT 1
#define MLSTACK__T_DOTPROD __attribute__((target("arch=armv8.2-a+dotprod")))
#endif

#if defined(MLSTACK__HAVE_NEON_DOT)
static MLSTACK__T_DOTPROD int32x4_t mlstack__dot_i8_sdot(int8x16_t lo, int8x16_t hi, const int8_t *q) {
    return vdotq_s32(vdotq_s32(vdupq_n_s32(0), lo, vld1q_s8(q)), hi, vld1q_s8(q + 16));
}
MLSTACK__MMQ_NEON(mlstack__mm_q8_sdot, MLSTACK__T_DOTPROD, mlstack__ldq8_neon, mlstack__dot_i8_sdot)
MLSTACK__MMQ_NEON(mlstack__mm_q4_sdot, MLSTACK__T_DOTPROD, mlstack__ldq4_neon, mlstack__dot_i8_sdot)

static void mlstack__matmul_neon_dot(const mlstack__weight *w, const float *x, const mlstack__q8x *xq, float *y, int B,
                                     int o0, int o1, float *scratch) {
    if (w->wtype == MLSTACK__W_Q8_0) mlstack__mm_q8_sdot(w, xq, y, B, o0, o1);
    else if (w->wtype == MLSTACK__W_Q4_1) mlstack__mm_q4_sdot(w, xq, y, B, o0, o1);
    else mlstack__matmul_neon(w, x, xq, y, B, o0, o1, scratch);
}

static const mlstack__kernels mlstack__kernels_neon_dot = {"neon+dotprod", mlstack__matmul_neon_dot, mlstack__dot_neon,
                                                           mlstack__axpy_neon, mlstack__to_f32_neon, mlstack__rmsnorm,
                                                           mlstack__swiglu_scalar, MLSTACK__ATTN_SCALAR, 0};
#endif
#endif

/* ==== 13. KERNEL DISPATCH ==== */  /* >>dispatch */
/* What was compiled in, what this CPU supports, and the best path under a cap. The cap comes
   from the engine descriptor or, when that is empty, the MLSTACK_ISA environment variable
   (scalar | avx2 | avx512 | neon). Caps rank paths within one architecture: a cap above what the
   CPU has selects the best the CPU has, and a cap naming another architecture's path leaves the
   scalar path, the only one all targets share. "neon" takes SDOT when the CPU has it. */

typedef enum mlstack__isa { MLSTACK__ISA_SCALAR, MLSTACK__ISA_AVX2, MLSTACK__ISA_AVX512, MLSTACK__ISA_NEON } mlstack__isa;

static int mlstack__isa_parse(const char *s) {
    if (!s || !*s) return -1;
    if (strcmp(s, "scalar") == 0) return MLSTACK__ISA_SCALAR;
    if (strcmp(s, "avx2") == 0) return MLSTACK__ISA_AVX2;
    if (strcmp(s, "avx512") == 0) return MLSTACK__ISA_AVX512;
    if (strcmp(s, "neon") == 0) return MLSTACK__ISA_NEON;
    return -2;
}

/* Best kernels at or below cap (-1: no cap). */
static const mlstack__kernels *mlstack__kernels_select(int cap, int bf16_activations) {
    mlstack__cpu c;
    int x86 = cap < 0 ? MLSTACK__ISA_AVX512 : cap <= MLSTACK__ISA_AVX512 ? cap : MLSTACK__ISA_SCALAR;
    int arm = cap < 0 || cap == MLSTACK__ISA_NEON;
    mlstack__cpu_detect(&c);
    (void)c;
    (void)x86;
    (void)arm;
    (void)bf16_activations;
#if defined(MLSTACK__HAVE_AVX512)
    if (x86 >= MLSTACK__ISA_AVX512 && c.avx512f && c.avx512bw && c.avx512vl && c.avx512dq && c.fma && c.f16c && c.avx2)
    {
        if (bf16_activations && c.avx512bf16 && c.avx512vnni) return &mlstack__kernels_avx512_bf16;
        return c.avx512vnni ? &mlstack__kernels_avx512 : &mlstack__kernels_avx512_novnni;
    }
#endif
#if defined(MLSTACK__HAVE_AVX2)
    if (x86 >= MLSTACK__ISA_AVX2 && c.avx2 && c.fma && c.f16c) return &mlstack__kernels_avx2;
#endif
#if defined(MLSTACK__HAVE_NEON)
    if (arm && c.neon) {
#if defined(MLSTACK__HAVE_NEON_DOT)
        if (c.neon_dot) return &mlstack__kernels_neon_dot;
#endif
        return &mlstack__kernels_neon;
    }
#endif
    return &mlstack__kernels_scalar;
}

/* "compiled: ... | cpu: ..." for reports. */
static void mlstack__isa_report(char *buf, size_t cap) {
    mlstack__cpu c;
    mlstack__cpu_detect(&c);
    snprintf(buf, cap, "compiled: scalar%s%s%s%s | cpu: %s%s%s%s%s%s%s%s%s",
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
#if defined(MLSTACK__HAVE_NEON)
             " neon",
#else
             "",
#endif
#if defined(MLSTACK__HAVE_NEON_DOT)
             " neon+dotprod",
#else
             "",
#endif
             c.avx2 ? "avx2 " : "", c.fma ? "fma " : "", c.f16c ? "f16c " : "", c.avx512f ? "avx512f " : "",
             c.avx512bw && c.avx512vl ? "avx512bw/vl " : "", c.avx512vnni ? "avx512vnni " : "",
             c.avx512bf16 ? "avx512bf16 " : "", c.neon ? "neon " : "", c.neon_dot ? "dotprod " : "");
    {
        size_t n = strlen(buf);
        while (n > 0 && buf[n - 1] == ' ') buf[--n] = 0;
    }
}

/* ==== 14. QUANT ==== */  /* >>quant */
/* Load-time quantization of a weight matrix W (n_out, n_in) from F32/F16/BF16 into Q8_0 or
   Q4_1 rows (layouts in section 9). n_in must be a multiple of 32.
     Q8_0: d = max|w| / 127, q = round(w / d)
     Q4_1: d = (max - min) / 15 and m = min (both rounded to f16 first),
           q = clamp(round((w - m) / d), 0, 15) */

static void mlstack__quantize_row(int wtype, const float *x, void *dst, int n) {
    int k, i, nb = n / MLSTACK__QK;
    for (k = 0; k < nb; k++) {
        const float *xb = x + (size_t)k * MLSTACK__QK;
        if (wtype == MLSTACK__W_Q8_0) {
            mlstack__q8_0 *b = (mlstack__q8_0 *)dst + k;
            float d = mlstack__quant_block(xb, b->q);
            b->d = mlstack__f32_to_f16(d);
        } else {
            mlstack__q4_1 *b = (mlstack__q4_1 *)dst + k;
            float lo = xb[0], hi = xb[0], d, id;
            for (i = 1; i < MLSTACK__QK; i++) {
                if (xb[i] < lo) lo = xb[i];
                if (xb[i] > hi) hi = xb[i];
            }
            b->d = mlstack__f32_to_f16((hi - lo) / 15.0f);
            b->m = mlstack__f32_to_f16(lo);
            /* quantize against the stored (f16-rounded) scale and offset */
            d = mlstack__f16_to_f32(b->d);
            lo = mlstack__f16_to_f32(b->m);
            id = d > 0 ? 1.0f / d : 0.0f;
            for (i = 0; i < MLSTACK__QK / 2; i++) {
                int q0 = mlstack__iround((xb[i] - lo) * id), q1 = mlstack__iround((xb[i + 16] - lo) * id);
                q0 = q0 < 0 ? 0 : q0 > 15 ? 15 : q0;
                q1 = q1 < 0 ? 0 : q1 > 15 ? 15 : q1;
                b->q[i] = (uint8_t)(q0 | (q1 << 4));
            }
        }
    }
}

typedef struct mlstack__quant_job {
    const mlstack__weight *src;
    const mlstack__kernels *k; /* the CPU's best: its conversions give the same bits, faster */
    int wtype;
    unsigned char *dst;
    size_t dst_row;
    float *scratch; /* n_threads * (n_in floats + n_in / 32 activation blocks) */
} mlstack__quant_job;

static void mlstack__quant_task(void *ctx, int task, int n_tasks, int thread) {
    const mlstack__quant_job *j = (const mlstack__quant_job *)ctx;
    const mlstack__weight *w = j->src;
    int o, o0 = (int)((int64_t)w->n_out * task / n_tasks), o1 = (int)((int64_t)w->n_out * (task + 1) / n_tasks);
    int k, nb = w->n_in / MLSTACK__QK;
    float *row = j->scratch + (size_t)thread * ((size_t)w->n_in + (size_t)nb * sizeof(mlstack__q8x) / sizeof(float));
    mlstack__q8x *xq = (mlstack__q8x *)(void *)(row + w->n_in);
    for (o = o0; o < o1; o++) {
        mlstack__q8_0 *q = (mlstack__q8_0 *)(void *)(j->dst + (size_t)o * j->dst_row);
        j->k->to_f32((mlstack_dtype)w->wtype, (const unsigned char *)w->data + (size_t)o * w->row_bytes, row, (size_t)w->n_in);
        if (j->wtype != MLSTACK__W_Q8_0) {
            mlstack__quantize_row(j->wtype, row, q, w->n_in);
            continue;
        }
        /* Q8_0 blocks are activation blocks with the scale stored as f16 */
        j->k->quantize_rows(row, xq, 1, w->n_in);
        for (k = 0; k < nb; k++) {
            q[k].d = mlstack__f32_to_f16(xq[k].d);
            memcpy(q[k].q, xq[k].q, MLSTACK__QK);
        }
    }
}

/* Quantizes w into dst (n_out * row_bytes(wtype) bytes) on the pool; *w then describes dst. */
static int mlstack__quantize_weight(mlstack__pool *pool, mlstack__weight *w, int wtype, void *dst) {
    mlstack__quant_job j;
    j.src = w;
    j.wtype = wtype;
    j.dst = (unsigned char *)dst;
    j.dst_row = mlstack__row_bytes(wtype, w->n_in);
    j.k = mlstack__kernels_select(-1, 0);
    j.scratch = (float *)MLSTACK_MALLOC(((size_t)w->n_in * sizeof(float) + (size_t)(w->n_in / MLSTACK__QK) * sizeof(mlstack__q8x)) *
                                        (size_t)pool->n_threads);
    if (!j.scratch) return -1;
    mlstack__pool_run(pool, mlstack__quant_task, &j, pool->n_threads * 4);
    MLSTACK_FREE(j.scratch);
    w->data = dst;
    w->wtype = wtype;
    w->row_bytes = j.dst_row;
    return 0;
}

/* ==== 15. MODEL ==== */  /* >>model */
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
    mlstack_tokenizer *tok;     /* NULL when the folder has no tokenizer */
    mlstack_chat_template *tpl; /* NULL when the folder has no chat template */
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
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: field \"%s\" is %.*s (expected a positive integer up to 2^30)",
                             file, key, v->type == MLSTACK__JSON_NUMBER ? (int)(v->len > 40 ? 40 : v->len) : 12,
                             v->type == MLSTACK__JSON_NUMBER ? v->str : "not a number");
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
    /* q/k/v widths are ints everywhere after this (n_kv_heads <= n_heads: it divides it) */
    if ((int64_t)c->n_heads * c->head_dim > (1 << 30))
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: num_attention_heads %d x head_dim %d is above 2^30", file,
                             c->n_heads, c->head_dim);
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

/* "[a, b, ...]" into buf, for messages. */
static const char *mlstack__shape_str(char *buf, size_t cap, int n_dims, const int64_t *shape) {
    size_t n = (size_t)snprintf(buf, cap, "[");
    int k;
    for (k = 0; k < n_dims && n < cap; k++) n += (size_t)snprintf(buf + n, cap - n, k ? ", %lld" : "%lld", (long long)shape[k]);
    if (n < cap) snprintf(buf + n, cap - n, "]");
    return buf;
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
    if (t->n_dims != n_dims || t->shape[0] != d0 || (n_dims == 2 && t->shape[1] != d1)) {
        char have[200], want[64];
        int64_t w[2];
        w[0] = d0;
        w[1] = d1;
        return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: tensor %s has shape %s but config.json implies %s", m->path,
                             name, mlstack__shape_str(have, sizeof have, t->n_dims, t->shape),
                             mlstack__shape_str(want, sizeof want, n_dims, w));
    }
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

/* The format a quantized tensor was saved in (file metadata "mlstack.quant.<name>"), or 0. */
static int mlstack__st_quant_of(const mlstack__st *st, const mlstack__st_tensor *t) {
    const mlstack__json *meta = mlstack__json_get(st->files[t->file].header.root, "__metadata__"), *v;
    char key[300];
    if (t->dtype != MLSTACK_DTYPE_U8 || !meta) return 0;
    snprintf(key, sizeof key, "mlstack.quant.%s", t->name);
    v = mlstack__json_get(meta, key);
    if (mlstack__json_is_str(v, "Q8_0")) return MLSTACK__W_Q8_0;
    if (mlstack__json_is_str(v, "Q4_1")) return MLSTACK__W_Q4_1;
    return 0;
}

/* A projection weight (n_out, n_in) used as stored: F32/F16/BF16, or Q8_0/Q4_1 rows saved by
   mlstack_model_save (U8 [n_out, row bytes] marked in the metadata). Realigned by copy only
   when the file puts it at an address unaligned for its element type. Bias (optional) as f32. */
static mlstack_result mlstack__model_linear(mlstack_model *m, const char *prefix, int n_out, int n_in, int has_bias,
                                            mlstack__weight *w, mlstack_error *err) {
    char name[256];
    const mlstack__st_tensor *t;
    mlstack_result r;
    const void *src;
    int q;
    snprintf(name, sizeof name, "%s.weight", prefix);
    t = mlstack__st_find(&m->st, name);
    q = t ? mlstack__st_quant_of(&m->st, t) : 0;
    if (q) {
        if (n_in % MLSTACK__QK || t->n_dims != 2 || t->shape[0] != n_out ||
            (uint64_t)t->shape[1] != (uint64_t)mlstack__row_bytes(q, n_in))
            return MLSTACK__FAIL(err, MLSTACK_ERR_FORMAT, "%s: quantized tensor %s has the wrong shape for [%d, %d] in %s",
                                 m->path, name, n_out, n_in, mlstack__dtype_names[q]);
        m->n_params += (uint64_t)n_out * (uint64_t)n_in;
        m->weight_bytes += t->end - t->begin;
    } else if ((r = mlstack__model_tensor(m, name, 2, n_out, n_in, &t, err)) != MLSTACK_OK) {
        return r;
    }
    src = m->st.files[t->file].data + t->begin;
    if ((uintptr_t)src % (q ? 2u : (uintptr_t)mlstack__dtype_sizes[t->dtype])) {
        void *copy = mlstack__model_own(m, (size_t)(t->end - t->begin));
        if (!copy) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
        memcpy(copy, src, (size_t)(t->end - t->begin));
        src = copy;
    }
    w->name = t->name;
    w->data = src;
    w->wtype = q ? q : (int)t->dtype;
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
    if (c->tied && mlstack__st_find(&m->st, "lm_head.weight") && mlstack__st_quant_of(&m->st, mlstack__st_find(&m->st, "lm_head.weight"))) {
        /* a quantized copy of the tied head saved by mlstack_model_save */
        if ((r = mlstack__model_linear(m, "lm_head", c->n_vocab, c->n_embd, 0, &m->lm_head, err)) != MLSTACK_OK) return r;
    } else if (c->tied) {
        mlstack__weight *w = &m->lm_head;
        w->name = "lm_head.weight";
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
    if (quant != MLSTACK_DTYPE_Q8_0 && quant != MLSTACK_DTYPE_Q4_1)
        return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "quant = %s is not a load-time format (use Q8_0 or Q4_1)",
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

/* The projection weights of layer l (l = -1: the LM head) into ws; returns how many. */
static int mlstack__layer_weights(mlstack_model *m, int l, mlstack__weight **ws) {
    mlstack__layer *L;
    if (l < 0) {
        ws[0] = &m->lm_head;
        return 1;
    }
    L = &m->layers[l];
    ws[0] = &L->wq, ws[1] = &L->wk, ws[2] = &L->wv, ws[3] = &L->wo;
    ws[4] = &L->w_gate, ws[5] = &L->w_up, ws[6] = &L->w_down;
    return 7;
}

typedef struct mlstack__pack_job {
    const mlstack__weight *w;
    unsigned char *dst;
} mlstack__pack_job;
static void mlstack__pack_task(void *ctx, int task, int n_tasks, int thread) {
    const mlstack__pack_job *j = (const mlstack__pack_job *)ctx;
    (void)n_tasks;
    (void)thread;
    mlstack__p16_pack_group(j->w, task, j->dst);
}

/* Makes the P16 panels (section 9) of every projection whose type is in `packs`, once per
   model, on the engine's pool: the first engine whose kernels read panels pays the copy. */
#if !defined(MLSTACK_NO_THREADS)
static pthread_mutex_t mlstack__pack_lock = PTHREAD_MUTEX_INITIALIZER;
#endif
static mlstack_result mlstack__model_pack(mlstack_model *m, mlstack__pool *pool, unsigned packs, mlstack_error *err) {
    mlstack_result r = MLSTACK_OK;
    int l, i;
#if !defined(MLSTACK_NO_THREADS)
    pthread_mutex_lock(&mlstack__pack_lock);
#endif
    for (l = -1; l < m->cfg.n_layers && r == MLSTACK_OK; l++) {
        mlstack__weight *ws[7];
        int n = mlstack__layer_weights(m, l, ws);
        for (i = 0; i < n; i++) {
            mlstack__weight *w = ws[i];
            mlstack__pack_job j;
            size_t np = (size_t)mlstack__p16_panels(w->n_out);
            if (w->packed || !(packs >> w->wtype & 1u)) continue;
            j.w = w;
            j.dst = (unsigned char *)mlstack__model_own(m, np * mlstack__p16_bytes(w->wtype, w->n_in));
            if (!j.dst) {
                r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory for the packed copy of %s", w->name);
                break;
            }
            mlstack__pool_run(pool, mlstack__pack_task, &j, (int)((np + MLSTACK__P16_GROUP - 1) / MLSTACK__P16_GROUP));
            w->packed = j.dst;
        }
    }
#if !defined(MLSTACK_NO_THREADS)
    pthread_mutex_unlock(&mlstack__pack_lock);
#endif
    return r;
}

/* Writes dir/model.safetensors with every tensor the model uses, quantized projections as U8
   [n_out, row bytes] marked "mlstack.quant.<name>" in the metadata, and copies the folder's
   other files (config, generation config, tokenizer, chat template) beside it. Tensors are
   laid out 4-byte types first, then 2-byte, then quantized rows, so each stays aligned. */
static mlstack__weight *mlstack__model_weight_named(mlstack_model *m, const char *name) {
    int l;
    if (m->lm_head.name && strcmp(m->lm_head.name, name) == 0) return &m->lm_head;
    for (l = 0; l < m->cfg.n_layers; l++) {
        mlstack__layer *L = &m->layers[l];
        mlstack__weight *ws[7];
        int i;
        ws[0] = &L->wq, ws[1] = &L->wk, ws[2] = &L->wv, ws[3] = &L->wo, ws[4] = &L->w_gate, ws[5] = &L->w_up, ws[6] = &L->w_down;
        for (i = 0; i < 7; i++)
            if (ws[i]->name && strcmp(ws[i]->name, name) == 0) return ws[i];
    }
    return NULL;
}

typedef struct mlstack__save_item {
    const char *name;
    const char *dtype;
    int n_dims;
    int64_t shape[MLSTACK_MAX_DIMS];
    const void *data;
    uint64_t bytes;
    int rank; /* layout order: 0 for 4-byte types, 1 for 2-byte, 2 for quantized */
} mlstack__save_item;

static int mlstack__save_cmp(const void *a, const void *b) {
    const mlstack__save_item *x = (const mlstack__save_item *)a, *y = (const mlstack__save_item *)b;
    if (x->rank != y->rank) return x->rank - y->rank;
    return strcmp(x->name, y->name);
}

static mlstack_result mlstack__copy_file(const char *from, const char *to, mlstack_error *err) {
    char *buf = NULL;
    size_t len;
    FILE *f;
    mlstack_result r = mlstack__read_file(from, (size_t)1 << 30, &buf, &len, err);
    if (r != MLSTACK_OK) return r;
    f = fopen(to, "wb");
    if (!f || fwrite(buf, 1, len, f) != len) r = MLSTACK__FAIL(err, MLSTACK_ERR_IO, "%s: cannot write", to);
    if (f && fclose(f) != 0 && r == MLSTACK_OK) r = MLSTACK__FAIL(err, MLSTACK_ERR_IO, "%s: cannot write", to);
    MLSTACK_FREE(buf);
    return r;
}

MLSTACK_API mlstack_result mlstack_model_save(mlstack_model *m, const char *dir, mlstack_error *err) {
    static const char *const side[] = {"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                                       "special_tokens_map.json", "chat_template.jinja", "vocab.json", "merges.txt"};
    mlstack__save_item *items;
    mlstack__buf hdr;
    int ok = 1;
    mlstack_result r = MLSTACK_OK;
    char *path = NULL;
    FILE *f = NULL;
    int n = 0, i, k, extra_head;
    uint64_t off = 0;
    size_t s;
    if (!m || !dir) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "mlstack_model_save: model or dir is NULL");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return MLSTACK__FAIL(err, MLSTACK_ERR_IO, "%s: cannot create: %s", dir, strerror(errno));
    /* a quantized copy of a tied head has no tensor of its own in the source */
    extra_head = m->cfg.tied && m->lm_head.wtype != (int)m->embed_dtype;
    items = (mlstack__save_item *)mlstack__calloc((size_t)m->st.n_tensors + 1, sizeof *items);
    if (!items) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    for (i = 0; i < m->st.n_tensors + extra_head; i++) {
        const mlstack__st_tensor *t = i < m->st.n_tensors ? &m->st.tensors[i] : NULL;
        const mlstack__weight *w = mlstack__model_weight_named(m, t ? t->name : "lm_head.weight");
        mlstack__save_item *it = &items[n];
        if (t && m->cfg.tied && strcmp(t->name, "lm_head.weight") == 0 && extra_head) continue;
        it->name = t ? t->name : "lm_head.weight";
        if (w && (w->wtype == MLSTACK__W_Q8_0 || w->wtype == MLSTACK__W_Q4_1)) {
            it->dtype = "U8";
            it->n_dims = 2;
            it->shape[0] = w->n_out;
            it->shape[1] = (int64_t)w->row_bytes;
            it->data = w->data;
            it->bytes = (uint64_t)w->n_out * w->row_bytes;
            it->rank = 2;
        } else {
            it->dtype = mlstack__dtype_names[t->dtype];
            it->n_dims = t->n_dims;
            for (k = 0; k < t->n_dims; k++) it->shape[k] = t->shape[k];
            it->data = m->st.files[t->file].data + t->begin;
            it->bytes = t->end - t->begin;
            it->rank = mlstack__dtype_sizes[t->dtype] >= 4 ? 0 : mlstack__dtype_sizes[t->dtype] == 2 ? 1 : 2;
        }
        n++;
    }
    qsort(items, (size_t)n, sizeof *items, mlstack__save_cmp);
    memset(&hdr, 0, sizeof hdr);
    ok &= mlstack__buf_puts(&hdr, "{\"__metadata__\":{\"format\":\"pt\",\"mlstack.version\":\"1\"");
    for (i = 0; i < n; i++) {
        const mlstack__weight *w = items[i].rank == 2 ? mlstack__model_weight_named(m, items[i].name) : NULL;
        if (!w) continue;
        ok &= mlstack__buf_puts(&hdr, ",\"mlstack.quant.");
        ok &= mlstack__buf_puts(&hdr, items[i].name);
        ok &= mlstack__buf_puts(&hdr, w->wtype == MLSTACK__W_Q8_0 ? "\":\"Q8_0\"" : "\":\"Q4_1\"");
    }
    ok &= mlstack__buf_puts(&hdr, "}");
    for (i = 0; i < n; i++) {
        char tmp[64];
        ok &= mlstack__buf_puts(&hdr, ",\"");
        ok &= mlstack__buf_puts(&hdr, items[i].name);
        ok &= mlstack__buf_puts(&hdr, "\":{\"dtype\":\"");
        ok &= mlstack__buf_puts(&hdr, items[i].dtype);
        ok &= mlstack__buf_puts(&hdr, "\",\"shape\":[");
        for (k = 0; k < items[i].n_dims; k++) {
            snprintf(tmp, sizeof tmp, k ? ",%lld" : "%lld", (long long)items[i].shape[k]);
            ok &= mlstack__buf_puts(&hdr, tmp);
        }
        snprintf(tmp, sizeof tmp, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)off,
                 (unsigned long long)(off + items[i].bytes));
        ok &= mlstack__buf_puts(&hdr, tmp);
        off += items[i].bytes;
    }
    ok &= mlstack__buf_puts(&hdr, "}");
    while (ok && hdr.n % 8) ok &= mlstack__buf_puts(&hdr, " ");
    if (!ok) r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
    path = mlstack__path_join(dir, "model.safetensors");
    if (r == MLSTACK_OK && (!path || !(f = fopen(path, "wb"))))
        r = MLSTACK__FAIL(err, MLSTACK_ERR_IO, "%s: cannot create: %s", path ? path : dir, strerror(errno));
    if (r == MLSTACK_OK) {
        unsigned char le[8];
        uint64_t hl = hdr.n;
        for (k = 0; k < 8; k++) le[k] = (unsigned char)(hl >> (8 * k));
        if (fwrite(le, 1, 8, f) != 8 || fwrite(hdr.p, 1, hdr.n, f) != hdr.n) r = MLSTACK_ERR_IO;
        for (i = 0; r == MLSTACK_OK && i < n; i++)
            if (fwrite(items[i].data, 1, (size_t)items[i].bytes, f) != items[i].bytes) r = MLSTACK_ERR_IO;
        if (fclose(f) != 0) r = MLSTACK_ERR_IO;
        if (r != MLSTACK_OK) r = MLSTACK__FAIL(err, MLSTACK_ERR_IO, "%s: write failed: %s", path, strerror(errno));
    }
    MLSTACK_FREE(path);
    MLSTACK_FREE(hdr.p);
    MLSTACK_FREE(items);
    for (s = 0; r == MLSTACK_OK && s < sizeof side / sizeof side[0]; s++) {
        char *from = mlstack__path_join(m->path, side[s]), *to = mlstack__path_join(dir, side[s]);
        if (!from || !to) r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
        else if (mlstack__file_exists(from) && strcmp(from, to) != 0) r = mlstack__copy_file(from, to, err);
        MLSTACK_FREE(from);
        MLSTACK_FREE(to);
    }
    return r;
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
    mlstack_tokenizer_close(m->tok);
    mlstack_chat_template_close(m->tpl);
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
        char *tj = mlstack__path_join(desc->path, "tokenizer.json"), *vj = mlstack__path_join(desc->path, "vocab.json");
        if (!tj || !vj) r = MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
        else if (mlstack__file_exists(tj) || mlstack__file_exists(vj)) r = mlstack_tokenizer_open(desc->path, &m->tok, err);
        MLSTACK_FREE(tj);
        MLSTACK_FREE(vj);
        if (r == MLSTACK_OK) {
            r = mlstack_chat_template_open(desc->path, &m->tpl, err);
            if (r == MLSTACK_ERR_NOT_FOUND) {
                r = MLSTACK_OK;
                if (err) err->message[0] = 0;
            }
        }
    }
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
MLSTACK_API mlstack_tokenizer *mlstack_model_tokenizer(const mlstack_model *m) { return m ? m->tok : NULL; }
MLSTACK_API const mlstack_chat_template *mlstack_model_chat_template(const mlstack_model *m) { return m ? m->tpl : NULL; }

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
    if (quant != 0 && quant != MLSTACK_DTYPE_Q8_0 && quant != MLSTACK_DTYPE_Q4_1)
        return MLSTACK__FAIL(err, MLSTACK_ERR_UNSUPPORTED, "quant = %s is not a load-time format (use Q8_0 or Q4_1)",
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

/* ==== 16. KVCACHE ==== */  /* >>kvcache */
/* One pool of fixed-size pages allocated once under a byte budget. A page holds the keys and
   values of P consecutive positions of one sequence for every layer, so a sequence's cache is
   just its page table (page ids, one per P positions) and pages come and go in O(1) from a free
   stack. Elements are F16 (default), BF16 or F32. Layout of one page:
       [layer][k or v][slot 0..P-1][kv head][Dh]
   i.e. element (l, kv, s, h, d) at ((l * 2 + kv) * P + s) * Hkv * Dh + h * Dh + d.

   Pages are shared. Each page has a reference count: one per sequence page table that lists it,
   plus one when a radix-tree node owns it. A page returns to the free stack when its count
   reaches zero. Sharing is page-aligned: only full pages enter the radix tree, and a sequence
   that attaches cached pages only ever writes positions past them, into pages of its own. So
   a shared page is never written, and no copy-on-write is needed. The cost is that up to P-1
   tokens of a matched prefix (the tail of its last, partial page) are recomputed; with P = 16
   that is cheap next to the rows the cache saves, and it keeps every cached page immutable. */

typedef struct mlstack__kv_seq {
    int active;
    int sched;       /* owned by the scheduler: the low-level eval API may not touch it */
    int32_t len;     /* positions held */
    int32_t *pages;  /* page table */
    int n_pages, cap_pages;
} mlstack__kv_seq;

/* A radix-tree node: the edge from its parent is n_pages full pages of tokens; the node owns
   (holds one reference to) each of those pages. `lock` counts running sequences whose attached
   prefix ends at this node or below it; a locked node is pinned (never evicted). */
typedef struct mlstack__rnode {
    struct mlstack__rnode *parent, *child, *next; /* first child, next sibling */
    int32_t *tokens;                              /* n_pages * P tokens */
    int32_t *pages;                               /* n_pages page ids */
    int n_pages;
    int lock;
    uint64_t tick;                                /* last match or insert, for LRU eviction */
} mlstack__rnode;

typedef struct mlstack__radix {
    mlstack__rnode root;   /* empty edge, never evicted */
    int n_nodes;           /* without the root */
    int n_cached;          /* pages owned by nodes */
    int n_pinned;          /* pages owned by locked nodes */
    uint64_t tick;
    uint64_t n_evicted;    /* pages dropped from the tree, ever */
} mlstack__radix;

typedef struct mlstack__kv {
    unsigned char *data;  /* n_pages * page_bytes */
    mlstack_dtype dtype;
    size_t esize;
    int n_pages, page_tokens;
    size_t page_elems, row_elems; /* row: one slot of one layer's K (or V): Hkv * Dh */
    int *free_stack;
    int n_free;
    int32_t *ref;         /* per page: references (0 = on the free stack) */
    mlstack__kv_seq *seqs;
    int max_seqs;
    mlstack__radix radix;
} mlstack__kv;

static mlstack_result mlstack__kv_init(mlstack__kv *kv, const mlstack__config *c, uint64_t budget, int page_tokens,
                                       int max_seqs, mlstack_dtype dtype, mlstack_error *err) {
    uint64_t page_bytes;
    int i;
    memset(kv, 0, sizeof *kv);
    if (dtype != MLSTACK_DTYPE_F32 && dtype != MLSTACK_DTYPE_F16 && dtype != MLSTACK_DTYPE_BF16)
        return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "kv_dtype %s not supported (F16, BF16 or F32)",
                             mlstack_dtype_name(dtype));
    kv->dtype = dtype;
    kv->esize = (size_t)mlstack__dtype_sizes[dtype];
    kv->page_tokens = page_tokens;
    kv->row_elems = (size_t)c->n_kv_heads * (size_t)c->head_dim;
    kv->page_elems = (size_t)c->n_layers * 2 * (size_t)page_tokens * kv->row_elems;
    page_bytes = (uint64_t)kv->page_elems * kv->esize;
    if (budget / page_bytes < 1)
        return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "kv_mem %llu bytes is less than one page (%llu bytes)",
                             (unsigned long long)budget, (unsigned long long)page_bytes);
    if (budget / page_bytes > (uint64_t)INT_MAX / 2) return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "kv_mem too large");
    kv->n_pages = (int)(budget / page_bytes);
    if ((uint64_t)kv->n_pages * page_bytes > (uint64_t)SIZE_MAX / 2)
        return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "kv_mem too large for this address space");
    kv->data = (unsigned char *)mlstack__aligned_alloc((size_t)kv->n_pages * (size_t)page_bytes);
    kv->free_stack = (int *)mlstack__calloc((size_t)kv->n_pages, sizeof(int));
    kv->ref = (int32_t *)mlstack__calloc((size_t)kv->n_pages, sizeof(int32_t));
    kv->seqs = (mlstack__kv_seq *)mlstack__calloc((size_t)max_seqs, sizeof *kv->seqs);
    if (!kv->data || !kv->free_stack || !kv->ref || !kv->seqs)
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "no memory for a KV cache of %llu bytes",
                             (unsigned long long)((uint64_t)kv->n_pages * page_bytes));
    kv->max_seqs = max_seqs;
    for (i = 0; i < kv->n_pages; i++) kv->free_stack[i] = kv->n_pages - 1 - i;
    kv->n_free = kv->n_pages;
    return MLSTACK_OK;
}

static void mlstack__radix_free_all(mlstack__kv *kv);

static void mlstack__kv_free(mlstack__kv *kv) {
    int i;
    if (kv->ref) mlstack__radix_free_all(kv);
    for (i = 0; i < kv->max_seqs; i++) MLSTACK_FREE(kv->seqs ? kv->seqs[i].pages : NULL);
    MLSTACK_FREE(kv->seqs);
    MLSTACK_FREE(kv->free_stack);
    MLSTACK_FREE(kv->ref);
    mlstack__aligned_free(kv->data);
    memset(kv, 0, sizeof *kv);
}

/* Takes a free page (count 1); -1 when none is free. */
static int32_t mlstack__kv_page_take(mlstack__kv *kv) {
    int32_t p;
    if (kv->n_free == 0) return -1;
    p = kv->free_stack[--kv->n_free];
    kv->ref[p] = 1;
    return p;
}
/* Drops one reference; the page is free again when none is left. */
static void mlstack__kv_page_put(mlstack__kv *kv, int32_t p) {
    if (--kv->ref[p] == 0) kv->free_stack[kv->n_free++] = p;
}

/* Makes room in s's page table for `need` entries. 0, or -1 out of memory. */
static int mlstack__kv_table_reserve(mlstack__kv_seq *s, int need) {
    if (need > s->cap_pages) {
        int cap = need * 2;
        int32_t *p = (int32_t *)MLSTACK_REALLOC(s->pages, sizeof(int32_t) * (size_t)cap);
        if (!p) return -1;
        s->pages = p;
        s->cap_pages = cap;
    }
    return 0;
}

/* Makes the page table of s cover `len` positions, taking or releasing pages. 0, or -1 if the
   pool is out of pages (nothing changed then). */
static int mlstack__kv_resize(mlstack__kv *kv, mlstack__kv_seq *s, int32_t len) {
    int need = (int)((len + kv->page_tokens - 1) / kv->page_tokens);
    if (need > s->n_pages) {
        if (need - s->n_pages > kv->n_free) return -1;
        if (mlstack__kv_table_reserve(s, need) != 0) return -1;
        while (s->n_pages < need) s->pages[s->n_pages++] = mlstack__kv_page_take(kv);
    }
    while (s->n_pages > need) mlstack__kv_page_put(kv, s->pages[--s->n_pages]);
    return 0;
}

/* ---- radix prefix cache ----
   Keys are token ids in whole pages: every edge holds a multiple of P tokens, and siblings differ
   in their first page. Splits happen only at page boundaries, so a node's pages split with it. */

static int mlstack__radix_page_eq(const int32_t *a, const int32_t *b, int P) {
    return memcmp(a, b, sizeof(int32_t) * (size_t)P) == 0;
}

static mlstack__rnode *mlstack__radix_child(mlstack__rnode *n, const int32_t *page_tokens, int P) {
    mlstack__rnode *c;
    for (c = n->child; c; c = c->next)
        if (mlstack__radix_page_eq(c->tokens, page_tokens, P)) return c;
    return NULL;
}

/* Splits n after its first k pages (0 < k < n->n_pages): a new node takes those k pages and
   becomes n's parent. Returns the new node, or NULL out of memory (n unchanged). */
static mlstack__rnode *mlstack__radix_split(mlstack__kv *kv, mlstack__rnode *n, int k) {
    int P = kv->page_tokens, rest = n->n_pages - k;
    mlstack__rnode *m = (mlstack__rnode *)mlstack__calloc(1, sizeof *m), **link;
    int32_t *mt = (int32_t *)MLSTACK_MALLOC(sizeof(int32_t) * (size_t)k * (size_t)P);
    int32_t *mp = (int32_t *)MLSTACK_MALLOC(sizeof(int32_t) * (size_t)k);
    if (!m || !mt || !mp) {
        MLSTACK_FREE(m);
        MLSTACK_FREE(mt);
        MLSTACK_FREE(mp);
        return NULL;
    }
    memcpy(mt, n->tokens, sizeof(int32_t) * (size_t)k * (size_t)P);
    memcpy(mp, n->pages, sizeof(int32_t) * (size_t)k);
    memmove(n->tokens, n->tokens + (size_t)k * P, sizeof(int32_t) * (size_t)rest * (size_t)P);
    memmove(n->pages, n->pages + k, sizeof(int32_t) * (size_t)rest);
    m->tokens = mt;
    m->pages = mp;
    m->n_pages = k;
    m->lock = n->lock;
    m->tick = n->tick;
    m->parent = n->parent;
    for (link = &n->parent->child; *link != n; link = &(*link)->next) {}
    *link = m;
    m->next = n->next;
    m->child = n;
    n->next = NULL;
    n->parent = m;
    n->n_pages = rest;
    kv->radix.n_nodes++;
    return m;
}

/* Longest cached prefix of tokens[0 .. max_pages * P): returns the number of whole pages matched
   and in *out the node where the match ends (the root when nothing matched), splitting an edge
   when the match ends inside it so that the prefix is exactly a root-to-node path. Marks the
   path as used. When the split fails for lack of memory, the match stops before that edge. */
static int mlstack__radix_match(mlstack__kv *kv, const int32_t *tokens, int max_pages, mlstack__rnode **out) {
    mlstack__radix *rx = &kv->radix;
    mlstack__rnode *n = &rx->root;
    int P = kv->page_tokens, got = 0;
    uint64_t tick = ++rx->tick;
    while (got < max_pages) {
        mlstack__rnode *c = mlstack__radix_child(n, tokens + (size_t)got * P, P);
        int j = 1;
        if (!c) break;
        while (j < c->n_pages && got + j < max_pages &&
               mlstack__radix_page_eq(c->tokens + (size_t)j * P, tokens + (size_t)(got + j) * P, P))
            j++;
        if (j < c->n_pages) {
            mlstack__rnode *m = mlstack__radix_split(kv, c, j);
            if (!m) break;
            c = m;
        }
        c->tick = tick;
        n = c;
        got += j;
    }
    *out = n;
    return got;
}

/* The same without changing the tree: pages a match would find. */
static int mlstack__radix_peek(const mlstack__kv *kv, const int32_t *tokens, int max_pages) {
    const mlstack__rnode *n = &kv->radix.root;
    int P = kv->page_tokens, got = 0;
    while (got < max_pages) {
        const mlstack__rnode *c;
        int j = 0;
        for (c = n->child; c; c = c->next)
            if (mlstack__radix_page_eq(c->tokens, tokens + (size_t)got * P, P)) break;
        if (!c) break;
        while (j < c->n_pages && got + j < max_pages &&
               mlstack__radix_page_eq(c->tokens + (size_t)j * P, tokens + (size_t)(got + j) * P, P))
            j++;
        got += j;
        if (j < c->n_pages) break;
        n = c;
    }
    return got;
}

/* The page ids of the path root..n, in order, into out (room for the path's pages). */
static int mlstack__radix_path_pages(const mlstack__rnode *n, int32_t *out) {
    int total = 0, at;
    const mlstack__rnode *x;
    for (x = n; x->parent; x = x->parent) total += x->n_pages;
    at = total;
    for (x = n; x->parent; x = x->parent) {
        at -= x->n_pages;
        memcpy(out + at, x->pages, sizeof(int32_t) * (size_t)x->n_pages);
    }
    return total;
}

/* Pins (delta +1) or unpins (-1) the path root..n for one running sequence. */
static void mlstack__radix_lock(mlstack__kv *kv, mlstack__rnode *n, int delta) {
    for (; n && n->parent; n = n->parent) {
        if (delta > 0 && n->lock++ == 0) kv->radix.n_pinned += n->n_pages;
        if (delta < 0 && --n->lock == 0) kv->radix.n_pinned -= n->n_pages;
    }
}

/* Inserts the first n_pages pages of a sequence (tokens, and the pages holding their KV). Pages
   whose tokens the tree already holds are left alone (the caller still releases its own
   references); the rest become a new leaf that takes a reference to each. 0, or -1 out of
   memory (the tree is then unchanged past what it already held). */
static int mlstack__radix_insert(mlstack__kv *kv, const int32_t *tokens, const int32_t *pages, int n_pages) {
    mlstack__rnode *n, *leaf;
    int P = kv->page_tokens, got = mlstack__radix_match(kv, tokens, n_pages, &n), i, rest = n_pages - got;
    if (rest <= 0) return 0;
    /* the match stopped at a node boundary unless a split failed; then tokens[got] may still
       start an existing child, and a second child with the same first page is not allowed */
    if (mlstack__radix_child(n, tokens + (size_t)got * P, P)) return -1;
    leaf = (mlstack__rnode *)mlstack__calloc(1, sizeof *leaf);
    if (leaf) {
        leaf->tokens = (int32_t *)MLSTACK_MALLOC(sizeof(int32_t) * (size_t)rest * (size_t)P);
        leaf->pages = (int32_t *)MLSTACK_MALLOC(sizeof(int32_t) * (size_t)rest);
    }
    if (!leaf || !leaf->tokens || !leaf->pages) {
        if (leaf) {
            MLSTACK_FREE(leaf->tokens);
            MLSTACK_FREE(leaf->pages);
        }
        MLSTACK_FREE(leaf);
        return -1;
    }
    memcpy(leaf->tokens, tokens + (size_t)got * P, sizeof(int32_t) * (size_t)rest * (size_t)P);
    memcpy(leaf->pages, pages + got, sizeof(int32_t) * (size_t)rest);
    for (i = 0; i < rest; i++) kv->ref[leaf->pages[i]]++;
    leaf->n_pages = rest;
    leaf->tick = kv->radix.tick;
    leaf->parent = n;
    leaf->next = n->child;
    n->child = leaf;
    kv->radix.n_nodes++;
    kv->radix.n_cached += rest;
    return 0;
}

static void mlstack__radix_remove_leaf(mlstack__kv *kv, mlstack__rnode *n) {
    mlstack__rnode **link;
    int i;
    for (link = &n->parent->child; *link != n; link = &(*link)->next) {}
    *link = n->next;
    for (i = 0; i < n->n_pages; i++) mlstack__kv_page_put(kv, n->pages[i]);
    kv->radix.n_cached -= n->n_pages;
    kv->radix.n_nodes--;
    MLSTACK_FREE(n->tokens);
    MLSTACK_FREE(n->pages);
    MLSTACK_FREE(n);
}

/* Least recently used unpinned leaf under n (depth-first), or NULL. */
static mlstack__rnode *mlstack__radix_lru_leaf(mlstack__rnode *n, mlstack__rnode *best) {
    mlstack__rnode *c;
    for (c = n->child; c; c = c->next) {
        if (!c->child) {
            if (!c->lock && (!best || c->tick < best->tick)) best = c;
        } else { /* a pinned node pins what is above it, not what is below */
            best = mlstack__radix_lru_leaf(c, best);
        }
    }
    return best;
}

/* Evicts unpinned leaves, least recently used first, until `want` pages are free or nothing more
   can go. Returns the number of free pages then. One eviction walks the tree (O(nodes)); the
   trees here hold at most a few thousand pages. */
static int mlstack__radix_evict(mlstack__kv *kv, int want) {
    while (kv->n_free < want) {
        mlstack__rnode *v = mlstack__radix_lru_leaf(&kv->radix.root, NULL);
        if (!v) break;
        kv->radix.n_evicted += (uint64_t)v->n_pages;
        mlstack__radix_remove_leaf(kv, v);
    }
    return kv->n_free;
}

/* Pages that evicting every unpinned node would free. */
static int mlstack__radix_evictable(const mlstack__kv *kv) { return kv->radix.n_cached - kv->radix.n_pinned; }

static void mlstack__radix_free_subtree(mlstack__kv *kv, mlstack__rnode *n) {
    while (n->child) {
        mlstack__rnode *c = n->child;
        mlstack__radix_free_subtree(kv, c);
        mlstack__radix_remove_leaf(kv, c);
    }
}
static void mlstack__radix_free_all(mlstack__kv *kv) { mlstack__radix_free_subtree(kv, &kv->radix.root); }

/* Address of the K (kvi = 0) or V (kvi = 1) row of `layer` at position pos of sequence s. */
static void *mlstack__kv_row(const mlstack__kv *kv, const mlstack__kv_seq *s, int layer, int kvi, int32_t pos) {
    int page = s->pages[pos / kv->page_tokens], slot = pos % kv->page_tokens;
    return kv->data + ((size_t)page * kv->page_elems +
                       ((size_t)(layer * 2 + kvi) * (size_t)kv->page_tokens + (size_t)slot) * kv->row_elems) *
                          kv->esize;
}

/* Stores one f32 row (Hkv * Dh) into the cache's dtype (round to nearest even). */
static void mlstack__kv_store(const mlstack__kv *kv, void *dst, const float *src) {
    size_t i;
    if (kv->dtype == MLSTACK_DTYPE_F32) {
        memcpy(dst, src, kv->row_elems * 4);
        return;
    }
    for (i = 0; i < kv->row_elems; i++) {
        uint16_t h;
        if (kv->dtype == MLSTACK_DTYPE_F16) {
            h = mlstack__f32_to_f16(src[i]);
        } else {
            uint32_t b;
            memcpy(&b, &src[i], 4);
            h = (uint16_t)((b + 0x7FFF + ((b >> 16) & 1)) >> 16);
            if ((b & 0x7F800000) == 0x7F800000 && (b & 0x7FFFFF)) h = (uint16_t)((b >> 16) | 0x40); /* NaN stays NaN */
        }
        memcpy((unsigned char *)dst + 2 * i, &h, 2);
    }
}

#define MLSTACK__ATT_CHUNK 32
#define MLSTACK__ATT_ROWS 16 /* query rows of one sequence that share each converted K/V chunk */
/* Scratch floats one attention task needs: K (transposed) and V of a chunk, a row to convert
   through, scores of G heads, and the running state (G x Dh sums, maxima, denominators) of
   MLSTACK__ATT_ROWS rows. */
static size_t mlstack__attend_scratch(int G, int Dh) {
    return (size_t)2 * MLSTACK__ATT_CHUNK * (size_t)Dh + (size_t)Dh + (size_t)G * MLSTACK__ATT_CHUNK +
           (size_t)MLSTACK__ATT_ROWS * (size_t)G * ((size_t)Dh + 2);
}

/* Fused attention for R query rows of one sequence and the G query heads that share one KV
   head (GQA): row r attends to positions [t0, t1[r]], read through the page table in chunks of
   32 positions with an online softmax:
       out_g (Dh,) = sum_t softmax_t(q_g . k_t * scale) v_t,   q, out: row r at + r * ld, (G, Dh)
   Each K/V chunk is converted to f32 once for all R rows and G heads. Every row sees the same
   chunks (starting at t0) and the same kernel calls as it would alone, so its result does not
   depend on the other rows, the batch or the thread count. */
static void mlstack__attend(const mlstack__kernels *kn, float *out, const float *q, size_t ld, int R, int G,
                            const mlstack__kv *kv, const mlstack__kv_seq *s, int layer, int kv_head, int Dh, int32_t t0,
                            const int32_t *t1, float scale, float *scratch) {
    float *kt = scratch, *vf = kt + MLSTACK__ATT_CHUNK * Dh, *tmp = vf + MLSTACK__ATT_CHUNK * Dh, *sc = tmp + Dh,
          *acc = sc + (size_t)G * MLSTACK__ATT_CHUNK, *mx = acc + (size_t)R * G * Dh, *den = mx + R * G;
    int32_t t, tmax = t1[R - 1];
    int r, g, j, d;
    size_t hoff = (size_t)kv_head * Dh * kv->esize;
    for (r = 0; r < R; r++) tmax = t1[r] > tmax ? t1[r] : tmax;
    for (g = 0; g < R * G; g++) {
        mx[g] = -FLT_MAX;
        den[g] = 0;
        for (d = 0; d < Dh; d++) acc[(size_t)g * Dh + d] = 0;
    }
    for (t = t0; t <= tmax; t += MLSTACK__ATT_CHUNK) {
        int n = tmax - t + 1 < MLSTACK__ATT_CHUNK ? tmax - t + 1 : MLSTACK__ATT_CHUNK;
        for (j = 0; j < MLSTACK__ATT_CHUNK; j++) {
            if (j < n) {
                kn->to_f32(kv->dtype, (const unsigned char *)mlstack__kv_row(kv, s, layer, 0, t + j) + hoff, tmp, (size_t)Dh);
                kn->to_f32(kv->dtype, (const unsigned char *)mlstack__kv_row(kv, s, layer, 1, t + j) + hoff,
                           vf + (size_t)j * Dh, (size_t)Dh);
            }
            for (d = 0; d < Dh; d++) kt[(size_t)d * MLSTACK__ATT_CHUNK + j] = j < n ? tmp[d] : 0.0f;
        }
        for (r = 0; r < R; r++) {
            int nr = t1[r] - t + 1 < n ? t1[r] - t + 1 : n;
            float *ar = acc + (size_t)r * G * Dh;
            if (nr <= 0) continue;
            kn->attn_scores(q + (size_t)r * ld, G, Dh, kt, nr, scale, sc);
            for (g = 0; g < G; g++) {
                float *sg = sc + (size_t)g * MLSTACK__ATT_CHUNK, cmax = -FLT_MAX, m_new, corr, *m = &mx[r * G + g];
                for (j = 0; j < nr; j++) cmax = sg[j] > cmax ? sg[j] : cmax;
                m_new = cmax > *m ? cmax : *m;
                corr = expf(*m - m_new);
                if (corr != 1.0f) {
                    den[r * G + g] *= corr;
                    for (d = 0; d < Dh; d++) ar[(size_t)g * Dh + d] *= corr;
                }
                den[r * G + g] += kn->exp_shift(sg, nr, m_new);
                *m = m_new;
            }
            kn->attn_pv(ar, G, Dh, sc, vf, nr);
        }
    }
    for (r = 0; r < R; r++)
        for (g = 0; g < G; g++) {
            float inv = 1.0f / den[r * G + g];
            for (d = 0; d < Dh; d++) out[(size_t)r * ld + (size_t)g * Dh + d] = acc[((size_t)r * G + g) * Dh + d] * inv;
        }
}

/* ==== 17. FORWARD ==== */  /* >>forward */
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
    float *rope;                                 /* (B, Dh): cos and sin of each row's position */
    float *scores;                               /* n_threads * attention scratch */
    int *att_blk;                                /* (B + 1,) attention row blocks */
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
    struct mlstack__sched *sched; /* requests, queues and accounting (section SCHEDULER) */
    int step_tokens;
};

typedef struct mlstack__attn_job {
    mlstack_engine *e;
    const mlstack_batch_row *rows;
    const int *blk; /* row blocks: block i is rows [blk[i], blk[i + 1]) */
    int layer;
} mlstack__attn_job;

static int32_t mlstack__window_start(const mlstack__config *c, int32_t pos) {
    return c->sliding_window && pos >= c->sliding_window ? pos - c->sliding_window + 1 : 0;
}

/* One task per (row block, KV head): the block's rows (one sequence, consecutive positions) and
   the G = H / Hkv query heads of that group. */
static void mlstack__attn_task(void *ctx, int task, int n_tasks, int thread) {
    const mlstack__attn_job *j = (const mlstack__attn_job *)ctx;
    const mlstack__config *c = &j->e->model->cfg;
    int Hkv = c->n_kv_heads, G = c->n_heads / Hkv, Dh = c->head_dim, i = task / Hkv, h = task % Hkv;
    int b0 = j->blk[i], R = j->blk[i + 1] - b0, r;
    const mlstack_batch_row *row = &j->rows[b0];
    size_t ld = (size_t)c->n_heads * Dh, off = (size_t)b0 * ld + (size_t)h * G * Dh;
    int32_t t1[MLSTACK__ATT_ROWS];
    (void)n_tasks;
    for (r = 0; r < R; r++) t1[r] = row[r].pos;
    mlstack__attend(j->e->k, j->e->s.att + off, j->e->s.q + off, ld, R, G, &j->e->kv, &j->e->kv.seqs[row->seq], j->layer, h,
                    Dh, mlstack__window_start(c, row->pos), t1, 1.0f / sqrtf((float)Dh),
                    j->e->s.scores + (size_t)thread * mlstack__attend_scratch(G, Dh));
}

/* Splits a batch into attention blocks: runs of up to MLSTACK__ATT_ROWS rows of one sequence at
   consecutive positions with the same window start. blk gets B + 1 entries at most; returns the
   number of blocks. */
static int mlstack__attn_blocks(const mlstack__config *c, const mlstack_batch_row *rows, int B, int *blk) {
    int b = 0, n = 0;
    while (b < B) {
        int r = 1;
        while (b + r < B && r < MLSTACK__ATT_ROWS && rows[b + r].seq == rows[b].seq && rows[b + r].pos == rows[b].pos + r &&
               mlstack__window_start(c, rows[b + r].pos) == mlstack__window_start(c, rows[b].pos))
            r++;
        blk[n++] = b;
        b += r;
    }
    blk[n] = B;
    return n;
}

static void mlstack__forward_chunk(mlstack_engine *e, const mlstack_batch_row *rows, int B, float *logits,
                                   const int *slot) {
    const mlstack_model *m = e->model;
    const mlstack__config *c = &m->cfg;
    mlstack__scratch *s = &e->s;
    int D = c->n_embd, Dh = c->head_dim, H = c->n_heads, Hkv = c->n_kv_heads, F = c->n_ff;
    int qd = H * Dh, kvd = Hkv * Dh, l, b, h, i, n_blk;
    size_t esize = (size_t)mlstack__dtype_sizes[m->embed_dtype];
    MLSTACK__PROF_BEGIN(&e->pool, EMBED);
    for (b = 0; b < B; b++)
        mlstack__to_f32(m->embed_dtype, (const unsigned char *)m->embed + (size_t)rows[b].token * (size_t)D * esize,
                        s->x + (size_t)b * D, (size_t)D);
    for (b = 0; b < B; b++) mlstack__rope_table(s->rope + (size_t)b * Dh, Dh, rows[b].pos, m->inv_freq);
    n_blk = mlstack__attn_blocks(c, rows, B, s->att_blk);
    MLSTACK__PROF_END(&e->pool, EMBED, -1, rows, B);
    for (l = 0; l < c->n_layers; l++) {
        const mlstack__layer *L = &m->layers[l];
        mlstack__attn_job aj;
        MLSTACK__PROF_BEGIN(&e->pool, RMSNORM);
        for (b = 0; b < B; b++) e->k->rmsnorm(s->xn + (size_t)b * D, s->x + (size_t)b * D, L->attn_norm, D, c->eps);
        MLSTACK__PROF_END(&e->pool, RMSNORM, l, rows, B);
        {
            const mlstack__weight *ws[3];
            float *ys[3];
            ws[0] = &L->wq, ws[1] = &L->wk, ws[2] = &L->wv, ys[0] = s->q, ys[1] = s->k, ys[2] = s->v;
            mlstack__matmul_n(&e->pool, e->k, s->mm, s->xq, 3, ws, ys, s->xn, B);
        }
        MLSTACK__PROF_BEGIN(&e->pool, ROPE_KV);
        for (b = 0; b < B; b++) {
            const mlstack__kv_seq *sq = &e->kv.seqs[rows[b].seq];
            float *q = s->q + (size_t)b * qd, *k = s->k + (size_t)b * kvd;
            for (h = 0; h < H; h++) {
                if (L->q_norm) e->k->rmsnorm(q + h * Dh, q + h * Dh, L->q_norm, Dh, c->eps);
                mlstack__rope_apply(q + h * Dh, Dh, s->rope + (size_t)b * Dh);
            }
            for (h = 0; h < Hkv; h++) {
                if (L->k_norm) e->k->rmsnorm(k + h * Dh, k + h * Dh, L->k_norm, Dh, c->eps);
                mlstack__rope_apply(k + h * Dh, Dh, s->rope + (size_t)b * Dh);
            }
            mlstack__kv_store(&e->kv, mlstack__kv_row(&e->kv, sq, l, 0, rows[b].pos), k);
            mlstack__kv_store(&e->kv, mlstack__kv_row(&e->kv, sq, l, 1, rows[b].pos), s->v + (size_t)b * kvd);
        }
        MLSTACK__PROF_END(&e->pool, ROPE_KV, l, rows, B);
        aj.e = e;
        aj.rows = rows;
        aj.blk = s->att_blk;
        aj.layer = l;
        MLSTACK__PROF_BEGIN(&e->pool, ATTENTION);
        mlstack__pool_run(&e->pool, mlstack__attn_task, &aj, n_blk * Hkv);
        MLSTACK__PROF_END(&e->pool, ATTENTION, l, rows, B);
        mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &L->wo, s->att, s->xn, B);
        MLSTACK__PROF_BEGIN(&e->pool, ADD);
        for (i = 0; i < B * D; i++) s->x[i] += s->xn[i];
        MLSTACK__PROF_END(&e->pool, ADD, l, rows, B);
        MLSTACK__PROF_BEGIN(&e->pool, RMSNORM);
        for (b = 0; b < B; b++) e->k->rmsnorm(s->xn + (size_t)b * D, s->x + (size_t)b * D, L->ffn_norm, D, c->eps);
        MLSTACK__PROF_END(&e->pool, RMSNORM, l, rows, B);
        {
            const mlstack__weight *ws[2];
            float *ys[2];
            ws[0] = &L->w_gate, ws[1] = &L->w_up, ys[0] = s->gate, ys[1] = s->up;
            mlstack__matmul_n(&e->pool, e->k, s->mm, s->xq, 2, ws, ys, s->xn, B);
        }
        MLSTACK__PROF_BEGIN(&e->pool, SWIGLU);
        e->k->swiglu(s->gate, s->up, B * F);
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
            if (slot[b] >= 0) e->k->rmsnorm(s->xn + (size_t)(n++) * D, s->x + (size_t)b * D, m->final_norm, D, c->eps);
        MLSTACK__PROF_END(&e->pool, RMSNORM, -1, NULL, n);
        if (n) {
            /* logit slots of one chunk are consecutive */
            int first = -1;
            for (b = 0; b < B && first < 0; b++) first = slot[b];
            mlstack__matmul(&e->pool, e->k, s->mm, s->xq, &m->lm_head, s->xn, logits + (size_t)first * (size_t)c->n_vocab, n);
        }
    }
}

/* ==== 18. SAMPLING ==== */  /* >>sampling */
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
    /* insertion sort for small n (or when no scratch memory is free), else a bottom-up merge sort */
    int i, j, width;
    int *tmp = n >= 64 ? (int *)MLSTACK_MALLOC(sizeof(int) * (size_t)n) : NULL;
    if (!tmp) {
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

/* ==== 19. ENGINE ==== */  /* >>engine */

static void mlstack__sched_free(mlstack_engine *e);
static mlstack_result mlstack__sched_init(mlstack_engine *e);

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
    mlstack__sched_free(e);
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
    mlstack__aligned_free(s->rope);
    mlstack__aligned_free(s->scores);
    MLSTACK_FREE(s->att_blk);
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
    mlstack_dtype kv_dtype;
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
    if (d.n_threads == 0) d.n_threads = mlstack__core_count();
    if (d.kv_page_tokens == 0) d.kv_page_tokens = 16;
    if (d.max_seqs == 0) d.max_seqs = 16;
    if (d.max_batch_tokens == 0) d.max_batch_tokens = 512;
    switch (d.kv_type) {
    case MLSTACK_KV_DEFAULT:
    case MLSTACK_KV_F16: kv_dtype = MLSTACK_DTYPE_F16; break;
    case MLSTACK_KV_BF16: kv_dtype = MLSTACK_DTYPE_BF16; break;
    case MLSTACK_KV_F32: kv_dtype = MLSTACK_DTYPE_F32; break;
    default: return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "mlstack_engine_init: unknown kv_type %d", (int)d.kv_type);
    }
    if (d.kv_mem == 0) {
        uint64_t ctx = (uint64_t)(c->max_pos < 4096 ? c->max_pos : 4096);
        ctx = (ctx + (uint64_t)d.kv_page_tokens - 1) / (uint64_t)d.kv_page_tokens * (uint64_t)d.kv_page_tokens;
        d.kv_mem = ctx * (uint64_t)c->n_layers * 2 * (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim *
                   (uint64_t)mlstack__dtype_sizes[kv_dtype];
    }
    {
        int cap = mlstack__isa_parse(d.isa);
        if (cap == -1) cap = mlstack__isa_parse(getenv("MLSTACK_ISA"));
        if (cap == -2)
            return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "isa cap \"%s\" unknown (expected scalar, avx2, avx512 or neon)",
                                 d.isa ? d.isa : getenv("MLSTACK_ISA"));
        e = (mlstack_engine *)mlstack__calloc(1, sizeof *e);
        if (!e) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "out of memory");
        e->k = mlstack__kernels_select(cap, d.bf16_activations);
    }
    e->model = model;
    e->max_batch = d.max_batch_tokens;
    if (d.step_tokens < 0) {
        mlstack_engine_free(e);
        return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "mlstack_engine_init: negative step_tokens");
    }
    e->step_tokens = d.step_tokens ? d.step_tokens : (d.max_batch_tokens < 128 ? d.max_batch_tokens : 128);
    if (mlstack__pool_init(&e->pool, d.n_threads) != 0) {
        mlstack_engine_free(e);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "could not start %d threads", d.n_threads);
    }
    if (e->k->packs && (r = mlstack__model_pack(model, &e->pool, e->k->packs, err)) != MLSTACK_OK) {
        mlstack_engine_free(e);
        return r;
    }
    r = mlstack__kv_init(&e->kv, c, d.kv_mem, d.kv_page_tokens, d.max_seqs, kv_dtype, err);
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
    s->mm = mlstack__falloc((size_t)e->pool.n_threads, MLSTACK__MM_SCRATCH(max_in));
    s->rope = mlstack__falloc(B, (size_t)c->head_dim);
    s->xq = (mlstack__q8x *)mlstack__aligned_alloc(B * (max_in / MLSTACK__QK + 1) * sizeof(mlstack__q8x));
    s->scores = mlstack__falloc((size_t)e->pool.n_threads, mlstack__attend_scratch(c->n_heads / c->n_kv_heads, c->head_dim));
    e->tmp_len = (int32_t *)mlstack__calloc((size_t)d.max_seqs, sizeof(int32_t));
    s->att_blk = (int *)mlstack__calloc(B + 1, sizeof(int));
    if (!s->att_blk || !s->x || !s->xn || !s->q || !s->att || !s->k || !s->v || !s->gate || !s->up || !s->mm || !s->xq || !s->rope || !s->scores || !e->tmp_len) {
        mlstack_engine_free(e);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "no memory for activations of %d rows", e->max_batch);
    }
    if (mlstack__sched_init(e) != MLSTACK_OK) {
        mlstack_engine_free(e);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "no memory for the scheduler");
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
    if (seq < 0 || seq >= e->kv.max_seqs || !e->kv.seqs[seq].active || e->kv.seqs[seq].sched)
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

MLSTACK_API mlstack_result mlstack_engine_seq_rewind(mlstack_engine *e, int32_t seq, int32_t len) {
    int32_t have = mlstack_engine_seq_length(e, seq);
    if (have >= 0 && e->kv.seqs[seq].sched) have = -1; /* the scheduler's own sequences */
    if (have < 0) return e ? mlstack__engine_fail(e, MLSTACK_ERR_INVALID_ARG, "sequence %d is not in use", (int)seq) : MLSTACK_ERR_INVALID_ARG;
    if (len < 0 || len > have)
        return mlstack__engine_fail(e, MLSTACK_ERR_INVALID_ARG, "rewind of sequence %d to %d: it holds %d positions", (int)seq,
                                    (int)len, (int)have);
    mlstack__kv_resize(&e->kv, &e->kv.seqs[seq], len);
    e->kv.seqs[seq].len = len;
    return MLSTACK_OK;
}

/* Runs rows; `sched` lets them name the scheduler's sequences (which the public call may not). */
static mlstack_result mlstack__eval(mlstack_engine *e, const mlstack_batch_row *rows, int n_rows, int sched) {
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
        if (r->seq < 0 || r->seq >= e->kv.max_seqs || !e->kv.seqs[r->seq].active || e->kv.seqs[r->seq].sched != sched)
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
    if (need_pages > e->kv.n_free && mlstack__radix_evict(&e->kv, need_pages) < need_pages)
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

MLSTACK_API mlstack_result mlstack_engine_eval(mlstack_engine *e, const mlstack_batch_row *rows, int n_rows) {
    return mlstack__eval(e, rows, n_rows, 0);
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


/* ==== 20. SCHEDULER ==== */  /* >>scheduler */
/* Continuous batching over the paged KV cache. A request is its token list (prompt, then the
   tokens it generated) and n_computed, the positions whose KV its sequence holds. Every step
   gives each running request the rows [n_computed, n_computed + chunk): a decode is the case
   of one row left, a prefill chunk any larger case, and a preempted request that comes back
   simply has more rows left (mostly found in the cache again). The row of the last token asks
   for logits, and the request samples its next token from them.
   A step: (1) under the lock, take new submissions and cancellations; (2) every running request
   gets its rows, decodes first in the budget (step_tokens), prefill chunks after them, then
   waiting requests are admitted, longest cached prefix first (SGLang's policy) unless one has
   waited MLSTACK__SCHED_AGE_STEPS steps, which then goes first; (3) one forward over the ragged
   batch; (4) sample, stream, retire; (5) under the lock, publish status and accounting.
   Pages: a request is admitted only when its whole remaining prompt fits in free plus
   evictable pages. When a running request needs a page and none is free, cached pages are
   evicted (LRU, unpinned leaves), then the most recently admitted running request is preempted;
   as requests run oldest first, the oldest always progresses, so any request that fits alone
   completes. Retired and preempted requests put their full pages into the radix tree. */

#ifndef MLSTACK__SCHED_AGE_STEPS
#define MLSTACK__SCHED_AGE_STEPS 64
#endif

#if defined(MLSTACK_NO_THREADS)
typedef int mlstack__mutex;
#define mlstack__mutex_init(m) (*(m) = 0)
#define mlstack__mutex_destroy(m) ((void)(m))
#define mlstack__lock(m) ((void)(m))
#define mlstack__unlock(m) ((void)(m))
#else
typedef pthread_mutex_t mlstack__mutex;
#define mlstack__mutex_init(m) pthread_mutex_init(m, NULL)
#define mlstack__mutex_destroy(m) pthread_mutex_destroy(m)
#define mlstack__lock(m) pthread_mutex_lock(m)
#define mlstack__unlock(m) pthread_mutex_unlock(m)
#endif

typedef struct mlstack__req {
    struct mlstack__req *next_all; /* every request of the engine (under the lock) */
    struct mlstack__req *next_in;  /* submitted, not yet seen by step (under the lock) */
    uint64_t id, arrival_step;
    /* under the lock: */
    mlstack_request_status st;     /* what poll reports */
    int cancel, released, seen;    /* seen: taken into the scheduler's lists by a step */
    /* the stepping thread only: */
    int kill, prefill_rows;
    int32_t *toks;                 /* prompt then generated; cap_toks is never exceeded */
    int n_toks, cap_toks, n_prompt, n_computed, max_tokens, ignore_eos;
    int32_t *stop_ids;
    int n_stop_ids;
    char **stops;
    int n_stops;
    size_t max_stop;
    mlstack_stream_fn on_token;
    mlstack_logits_fn on_logits;
    void *user;
    mlstack_sampler *smp;
    mlstack_detok *dt;
    char *text;                    /* decoded text generated so far */
    size_t text_len, text_cap, emitted;
    int32_t seq;                   /* sequence slot while running, else -1 */
    mlstack__rnode *pin;           /* deepest cached node attached while running */
    int state, finish, n_cached, n_preempted;
    mlstack_result result;
    char message[160];
    double t_submit, t_first, t_done;
    int row_first, n_rows;         /* this step's rows */
} mlstack__req;

typedef struct mlstack__sched {
    mlstack__mutex mu;
    mlstack__req *all, *in_head, *in_tail;
    uint64_t next_id;
    mlstack_cache_stats snap;      /* published after each step (under the lock) */
    /* the stepping thread only: */
    mlstack__req **wait, **run;
    int n_wait, cap_wait, n_run;
    mlstack_batch_row *rows;
    int cap_rows;
    uint64_t steps, hit, computed, generated, preemptions, rejected;
} mlstack__sched;

static mlstack_result mlstack__sched_init(mlstack_engine *e) {
    mlstack__sched *S = (mlstack__sched *)mlstack__calloc(1, sizeof *S);
    if (!S) return MLSTACK_ERR_NO_MEMORY;
    S->run = (mlstack__req **)mlstack__calloc((size_t)e->kv.max_seqs, sizeof *S->run);
    S->cap_rows = e->kv.max_seqs + e->step_tokens;
    S->rows = (mlstack_batch_row *)mlstack__calloc((size_t)S->cap_rows, sizeof *S->rows);
    if (!S->run || !S->rows) {
        MLSTACK_FREE(S->run);
        MLSTACK_FREE(S->rows);
        MLSTACK_FREE(S);
        return MLSTACK_ERR_NO_MEMORY;
    }
    mlstack__mutex_init(&S->mu);
    S->next_id = 1;
    e->sched = S;
    return MLSTACK_OK;
}

static void mlstack__req_free(mlstack__req *r) {
    int i;
    if (!r) return;
    for (i = 0; i < r->n_stops; i++) MLSTACK_FREE(r->stops[i]);
    MLSTACK_FREE(r->stops);
    MLSTACK_FREE(r->stop_ids);
    MLSTACK_FREE(r->toks);
    MLSTACK_FREE(r->text);
    mlstack_sampler_free(r->smp);
    mlstack_detok_free(r->dt);
    MLSTACK_FREE(r);
}

static void mlstack__sched_free(mlstack_engine *e) {
    mlstack__sched *S = e->sched;
    if (!S) return;
    while (S->all) {
        mlstack__req *r = S->all;
        S->all = r->next_all;
        mlstack__req_free(r);
    }
    mlstack__mutex_destroy(&S->mu);
    MLSTACK_FREE(S->wait);
    MLSTACK_FREE(S->run);
    MLSTACK_FREE(S->rows);
    MLSTACK_FREE(S);
    e->sched = NULL;
}

static int mlstack__pages_for(const mlstack__kv *kv, int64_t positions) {
    return (int)((positions + kv->page_tokens - 1) / kv->page_tokens);
}

MLSTACK_API mlstack_result mlstack_engine_submit(mlstack_engine *e, const mlstack_request_desc *d, uint64_t *id,
                                                 mlstack_error *err) {
    const mlstack__config *c;
    mlstack__sched *S;
    mlstack__req *r;
    mlstack_result res;
    int i, n_pages;
    int64_t cap;
    if (err) {
        err->code = MLSTACK_OK;
        err->message[0] = 0;
    }
    if (!e || !d || !id) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "submit: engine, desc or id is NULL");
    *id = 0;
    c = &e->model->cfg;
    S = e->sched;
    n_pages = e->kv.n_pages;
    if (d->n_prompt <= 0 || !d->prompt) return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "submit: the prompt is empty");
    if (d->max_tokens < 0 || d->n_stop_ids < 0 || d->n_stop_strings < 0 || (d->n_stop_ids && !d->stop_ids) ||
        (d->n_stop_strings && !d->stop_strings))
        return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "submit: negative count or NULL list in the descriptor");
    for (i = 0; i < d->n_prompt; i++)
        if (d->prompt[i] < 0 || d->prompt[i] >= c->n_vocab)
            return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "submit: prompt token %d is %d, outside the vocabulary (0..%d)", i,
                                 (int)d->prompt[i], c->n_vocab - 1);
    if (d->n_stop_strings && !e->model->tok)
        return MLSTACK__FAIL(err, MLSTACK_ERR_INVALID_ARG, "submit: stop strings need a model with a tokenizer");
    if (d->n_prompt > c->max_pos) {
        mlstack__lock(&S->mu);
        S->rejected++;
        mlstack__unlock(&S->mu);
        return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT, "submit: prompt of %d tokens is longer than the context (%d positions)",
                             d->n_prompt, c->max_pos);
    }
    /* the KV a request needs at most: every token but the last generated one */
    cap = d->max_tokens ? (int64_t)d->n_prompt + d->max_tokens - 1 : d->n_prompt;
    if (cap > c->max_pos) cap = c->max_pos;
    if (mlstack__pages_for(&e->kv, cap) > n_pages) {
        mlstack__lock(&S->mu);
        S->rejected++;
        mlstack__unlock(&S->mu);
        return MLSTACK__FAIL(err, MLSTACK_ERR_LIMIT,
                             "submit: request needs %d KV pages of %d tokens for %lld positions alone, the pool has %d (kv_mem)",
                             mlstack__pages_for(&e->kv, cap), e->kv.page_tokens, (long long)cap, n_pages);
    }
    r = (mlstack__req *)mlstack__calloc(1, sizeof *r);
    if (!r) return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "submit: out of memory");
    /* tokens: at most one past the last position the context and the pool allow */
    cap = c->max_pos < (int64_t)n_pages * e->kv.page_tokens ? c->max_pos : (int64_t)n_pages * e->kv.page_tokens;
    cap += 1;
    if (d->max_tokens && (int64_t)d->n_prompt + d->max_tokens < cap) cap = (int64_t)d->n_prompt + d->max_tokens;
    if (cap < d->n_prompt + 1) cap = d->n_prompt + 1;
    r->cap_toks = (int)cap;
    r->toks = (int32_t *)mlstack__calloc((size_t)cap, sizeof(int32_t));
    res = mlstack_sampler_init(&d->sampler, c->n_vocab, &r->smp);
    if (res != MLSTACK_OK || !r->toks) {
        mlstack__req_free(r);
        return MLSTACK__FAIL(err, res != MLSTACK_OK ? res : MLSTACK_ERR_NO_MEMORY,
                             res != MLSTACK_OK ? "submit: invalid sampler settings" : "submit: out of memory");
    }
    memcpy(r->toks, d->prompt, sizeof(int32_t) * (size_t)d->n_prompt);
    for (i = 0; i < d->n_prompt; i++) mlstack_sampler_accept(r->smp, d->prompt[i]); /* as mlstack_generate does */
    r->n_toks = r->n_prompt = d->n_prompt;
    r->max_tokens = d->max_tokens;
    r->ignore_eos = d->ignore_eos;
    r->on_token = d->on_token;
    r->on_logits = d->on_logits;
    r->user = d->user;
    r->seq = -1;
    if (d->n_stop_ids) {
        r->stop_ids = (int32_t *)mlstack__calloc((size_t)d->n_stop_ids, sizeof(int32_t));
        if (r->stop_ids) memcpy(r->stop_ids, d->stop_ids, sizeof(int32_t) * (size_t)d->n_stop_ids);
        r->n_stop_ids = r->stop_ids ? d->n_stop_ids : 0;
    }
    if (d->n_stop_strings) {
        r->stops = (char **)mlstack__calloc((size_t)d->n_stop_strings, sizeof(char *));
        for (i = 0; r->stops && i < d->n_stop_strings; i++) {
            size_t len = d->stop_strings[i] ? strlen(d->stop_strings[i]) : 0;
            if (!len) continue; /* an empty stop string would match everywhere: ignored */
            if (!(r->stops[r->n_stops] = mlstack__strndup(d->stop_strings[i], len))) break;
            r->n_stops++;
            if (len > r->max_stop) r->max_stop = len;
        }
    }
    if (e->model->tok && mlstack_detok_init(e->model->tok, MLSTACK_DECODE_SKIP_SPECIAL, &r->dt) != MLSTACK_OK) r->dt = NULL;
    if ((d->n_stop_ids && !r->stop_ids) || (d->n_stop_strings && (!r->stops || i < d->n_stop_strings)) ||
        (e->model->tok && !r->dt)) {
        mlstack__req_free(r);
        return MLSTACK__FAIL(err, MLSTACK_ERR_NO_MEMORY, "submit: out of memory");
    }
    r->t_submit = mlstack__now();
    r->st.state = MLSTACK_REQUEST_QUEUED;
    r->st.n_prompt = d->n_prompt;
    mlstack__lock(&S->mu);
    r->id = S->next_id++;
    r->arrival_step = S->steps;
    r->next_all = S->all;
    S->all = r;
    if (S->in_tail) S->in_tail->next_in = r;
    else S->in_head = r;
    S->in_tail = r;
    S->snap.n_queued++;
    mlstack__unlock(&S->mu);
    *id = r->id;
    return MLSTACK_OK;
}

static mlstack__req *mlstack__sched_find(mlstack__sched *S, uint64_t id) {
    mlstack__req *r;
    for (r = S->all; r; r = r->next_all)
        if (r->id == id && !r->released) return r;
    return NULL;
}

MLSTACK_API mlstack_result mlstack_engine_cancel(mlstack_engine *e, uint64_t id) {
    mlstack__req *r;
    mlstack_result res = MLSTACK_OK;
    if (!e) return MLSTACK_ERR_INVALID_ARG;
    mlstack__lock(&e->sched->mu);
    r = mlstack__sched_find(e->sched, id);
    if (!r) res = MLSTACK_ERR_NOT_FOUND;
    else if (r->st.state == MLSTACK_REQUEST_DONE) res = MLSTACK_ERR_STATE;
    else r->cancel = 1;
    mlstack__unlock(&e->sched->mu);
    return res;
}

MLSTACK_API mlstack_result mlstack_engine_poll(mlstack_engine *e, uint64_t id, mlstack_request_status *status,
                                               int32_t *tokens, int cap) {
    mlstack__req *r;
    if (!e) return MLSTACK_ERR_INVALID_ARG;
    mlstack__lock(&e->sched->mu);
    r = mlstack__sched_find(e->sched, id);
    if (r) {
        if (status) *status = r->st;
        if (tokens && cap > 0) /* published tokens were written before the publishing step took the lock */
            memcpy(tokens, r->toks + r->n_prompt, sizeof(int32_t) * (size_t)(cap < r->st.n_generated ? cap : r->st.n_generated));
    }
    mlstack__unlock(&e->sched->mu);
    return r ? MLSTACK_OK : MLSTACK_ERR_NOT_FOUND;
}

/* Unlinks and frees released requests that are done (under the lock). */
static void mlstack__sched_reap(mlstack__sched *S) {
    mlstack__req **link = &S->all;
    while (*link) {
        mlstack__req *r = *link;
        if (r->released && r->st.state == MLSTACK_REQUEST_DONE) {
            *link = r->next_all;
            mlstack__req_free(r);
        } else {
            link = &r->next_all;
        }
    }
}

MLSTACK_API mlstack_result mlstack_engine_release(mlstack_engine *e, uint64_t id) {
    mlstack__req *r;
    if (!e) return MLSTACK_ERR_INVALID_ARG;
    mlstack__lock(&e->sched->mu);
    r = mlstack__sched_find(e->sched, id);
    if (r) {
        r->released = 1;
        if (r->st.state != MLSTACK_REQUEST_DONE) r->cancel = 1;
        else mlstack__sched_reap(e->sched);
    }
    mlstack__unlock(&e->sched->mu);
    return r ? MLSTACK_OK : MLSTACK_ERR_NOT_FOUND;
}

/* Gives the request's sequence back: its full computed pages go into the tree first (so a later
   request, or this one after preemption, finds them), then the pin and the page references are
   dropped. */
static void mlstack__req_detach(mlstack_engine *e, mlstack__req *r) {
    mlstack__kv_seq *s;
    if (r->seq < 0) return;
    s = &e->kv.seqs[r->seq];
    /* out of memory here only means less is cached */
    (void)mlstack__radix_insert(&e->kv, r->toks, s->pages, r->n_computed / e->kv.page_tokens);
    if (r->pin) mlstack__radix_lock(&e->kv, r->pin, -1);
    r->pin = NULL;
    mlstack__kv_resize(&e->kv, s, 0);
    s->active = s->sched = 0;
    s->len = 0;
    r->seq = -1;
    r->n_computed = 0;
}

/* Once a prefill completes, its full pages go into the tree right away, so requests arriving
   while this one still runs share them; the running request pins the longer path instead. */
static void mlstack__req_share(mlstack_engine *e, mlstack__req *r) {
    mlstack__kv *kv = &e->kv;
    mlstack__rnode *node;
    int full = r->n_computed / kv->page_tokens;
    if (full == 0 || mlstack__radix_insert(kv, r->toks, kv->seqs[r->seq].pages, full) != 0) return;
    if (mlstack__radix_match(kv, r->toks, full, &node) != full) return;
    mlstack__radix_lock(kv, node, +1);
    if (r->pin) mlstack__radix_lock(kv, r->pin, -1);
    r->pin = node;
}

static void mlstack__list_remove(mlstack__req **list, int *n, mlstack__req *r) {
    int i;
    for (i = 0; i < *n; i++) {
        if (list[i] == r) {
            memmove(list + i, list + i + 1, sizeof *list * (size_t)(*n - i - 1));
            (*n)--;
            return;
        }
    }
}

static int mlstack__wait_push(mlstack__sched *S, mlstack__req *r) {
    if (S->n_wait == S->cap_wait) {
        int cap = S->cap_wait ? S->cap_wait * 2 : 16;
        mlstack__req **p = (mlstack__req **)MLSTACK_REALLOC(S->wait, sizeof *p * (size_t)cap);
        if (!p) return -1;
        S->wait = p;
        S->cap_wait = cap;
    }
    S->wait[S->n_wait++] = r;
    return 0;
}

static void mlstack__req_finish(mlstack_engine *e, mlstack__req *r, int finish, mlstack_result res, const char *msg) {
    mlstack__sched *S = e->sched;
    mlstack__req_detach(e, r);
    if (r->state == MLSTACK_REQUEST_RUNNING) mlstack__list_remove(S->run, &S->n_run, r);
    else mlstack__list_remove(S->wait, &S->n_wait, r);
    r->state = MLSTACK_REQUEST_DONE;
    r->finish = finish;
    r->result = res;
    if (msg) snprintf(r->message, sizeof r->message, "%s", msg);
    r->t_done = mlstack__now();
}

static void mlstack__req_preempt(mlstack_engine *e, mlstack__req *r) {
    mlstack__sched *S = e->sched;
    mlstack__req_detach(e, r);
    mlstack__list_remove(S->run, &S->n_run, r);
    r->state = MLSTACK_REQUEST_QUEUED;
    r->n_preempted++;
    S->preemptions++;
    if (mlstack__wait_push(S, r) != 0) mlstack__req_finish(e, r, MLSTACK_FINISH_ERROR, MLSTACK_ERR_NO_MEMORY, "out of memory");
}

/* Makes r's page table cover `len` positions: evicts cached pages, then (may_preempt) preempts
   the most recently admitted running request, which may be r itself. 1 when r has the pages,
   0 when r was preempted or (without may_preempt) there was no room, -1 out of memory. */
static int mlstack__req_reserve(mlstack_engine *e, mlstack__req *r, int32_t len, int may_preempt) {
    mlstack__sched *S = e->sched;
    mlstack__kv_seq *s = &e->kv.seqs[r->seq];
    for (;;) {
        int need = mlstack__pages_for(&e->kv, len) - s->n_pages;
        if (need <= e->kv.n_free || mlstack__radix_evict(&e->kv, need) >= need) break;
        if (!may_preempt || S->n_run == 0) return 0;
        if (S->run[S->n_run - 1] == r) {
            mlstack__req_preempt(e, r);
            return 0;
        }
        mlstack__req_preempt(e, S->run[S->n_run - 1]);
    }
    if (mlstack__kv_resize(&e->kv, s, len) != 0) return -1;
    return 1;
}

static void mlstack__add_rows(mlstack__sched *S, int *n_rows, mlstack__req *r, int chunk) {
    int i;
    r->row_first = *n_rows;
    r->n_rows = chunk;
    for (i = 0; i < chunk; i++) {
        mlstack_batch_row *row = &S->rows[(*n_rows)++];
        row->seq = r->seq;
        row->pos = r->n_computed + i;
        row->token = r->toks[r->n_computed + i];
        row->want_logits = r->n_computed + i == r->n_toks - 1;
    }
}

/* The waiting request to admit next: one that has waited MLSTACK__SCHED_AGE_STEPS steps (the
   oldest such), else the longest cached prefix (the earliest on ties). */
static int mlstack__pick_waiting(mlstack_engine *e) {
    mlstack__sched *S = e->sched;
    int i, best = -1, best_pages = -1, best_aged = 0;
    for (i = 0; i < S->n_wait; i++) {
        mlstack__req *r = S->wait[i];
        if (S->steps - r->arrival_step >= MLSTACK__SCHED_AGE_STEPS) {
            if (!best_aged || r->id < S->wait[best]->id) best = i;
            best_aged = 1;
        } else if (!best_aged) {
            int pages = mlstack__radix_peek(&e->kv, r->toks, (r->n_toks - 1) / e->kv.page_tokens);
            if (best < 0 || pages > best_pages || (pages == best_pages && r->id < S->wait[best]->id)) {
                best = i;
                best_pages = pages;
            }
        }
    }
    return best;
}

/* Admits S->wait[w]: attaches its cached prefix (pinned) and a sequence slot. 1 admitted, 0 not
   now (no slot or no room), -1 out of memory. */
static int mlstack__admit(mlstack_engine *e, int w) {
    mlstack__sched *S = e->sched;
    mlstack__req *r = S->wait[w];
    mlstack__kv *kv = &e->kv;
    mlstack__rnode *node;
    mlstack__kv_seq *s;
    int slot, m, need;
    for (slot = 0; slot < kv->max_seqs && kv->seqs[slot].active; slot++) {}
    if (slot == kv->max_seqs) return 0;
    m = mlstack__radix_match(kv, r->toks, (r->n_toks - 1) / kv->page_tokens, &node);
    mlstack__radix_lock(kv, node, +1);
    need = mlstack__pages_for(kv, r->n_toks) - m;
    if (need > kv->n_free + mlstack__radix_evictable(kv)) {
        mlstack__radix_lock(kv, node, -1);
        return 0;
    }
    s = &kv->seqs[slot];
    if (mlstack__kv_table_reserve(s, mlstack__pages_for(kv, r->n_toks)) != 0) {
        mlstack__radix_lock(kv, node, -1);
        return -1;
    }
    s->active = s->sched = 1;
    s->n_pages = mlstack__radix_path_pages(node, s->pages);
    for (m = 0; m < s->n_pages; m++) kv->ref[s->pages[m]]++;
    s->len = r->n_computed = s->n_pages * kv->page_tokens;
    r->seq = slot;
    r->pin = node;
    r->n_cached = r->n_computed;
    S->hit += (uint64_t)r->n_computed;
    r->state = MLSTACK_REQUEST_RUNNING;
    memmove(S->wait + w, S->wait + w + 1, sizeof *S->wait * (size_t)(S->n_wait - w - 1));
    S->n_wait--;
    S->run[S->n_run++] = r;
    return 1;
}

static int mlstack__text_append(mlstack__req *r, const char *t, size_t n) {
    if (!n) return 0;
    if (r->text_len + n + 1 > r->text_cap) {
        size_t cap = (r->text_len + n + 1) * 2;
        char *p = (char *)MLSTACK_REALLOC(r->text, cap);
        if (!p) return -1;
        r->text = p;
        r->text_cap = cap;
    }
    memcpy(r->text + r->text_len, t, n);
    r->text_len += n;
    r->text[r->text_len] = 0;
    return 0;
}

/* Checks the decoded text for stop strings. Returns the offset of the earliest match (the text
   up to there is final), or -1 with *safe set to how much of the text is final (the rest could
   still become the start of a stop string). */
static int64_t mlstack__stop_scan(const mlstack__req *r, size_t *safe) {
    size_t from = r->emitted > r->max_stop ? r->emitted - r->max_stop : 0, i, hold = 0;
    int k;
    int64_t hit = -1;
    for (k = 0; k < r->n_stops; k++) {
        size_t n = strlen(r->stops[k]), j;
        for (j = from; j + n <= r->text_len; j++) {
            if (hit >= 0 && (int64_t)j >= hit) break;
            if (memcmp(r->text + j, r->stops[k], n) == 0) {
                hit = (int64_t)j;
                break;
            }
        }
        /* longest tail of the text that is a proper prefix of this stop string */
        for (i = n - 1 < r->text_len ? n - 1 : r->text_len; i > hold; i--)
            if (memcmp(r->text + r->text_len - i, r->stops[k], i) == 0) {
                hold = i;
                break;
            }
    }
    *safe = r->text_len - hold;
    if (*safe < r->emitted) *safe = r->emitted;
    return hit;
}

/* Samples r's next token from its logits row and applies the stop conditions. */
static void mlstack__req_sample(mlstack_engine *e, mlstack__req *r, const float *logits) {
    const mlstack__config *c = &e->model->cfg;
    int32_t tok;
    int finish = MLSTACK_FINISH_NONE, i;
    size_t from = r->emitted, upto;
    const char *piece = NULL;
    if (r->on_logits) r->on_logits(r->user, r->id, logits, c->n_vocab);
    tok = mlstack_sampler_sample(r->smp, logits);
    mlstack_sampler_accept(r->smp, tok);
    r->toks[r->n_toks++] = tok;
    e->sched->generated++;
    if (!r->t_first) r->t_first = mlstack__now();
    if (!r->ignore_eos && mlstack__is_eos(c, tok)) finish = MLSTACK_FINISH_EOS;
    for (i = 0; i < r->n_stop_ids; i++)
        if (r->stop_ids[i] == tok) finish = MLSTACK_FINISH_EOS;
    upto = r->emitted;
    if (r->dt) {
        const char *t;
        size_t n;
        if (mlstack_detok_push(r->dt, tok, &t, &n) == MLSTACK_OK && mlstack__text_append(r, t, n) != 0) {
            mlstack__req_finish(e, r, MLSTACK_FINISH_ERROR, MLSTACK_ERR_NO_MEMORY, "out of memory for the decoded text");
            return;
        }
        upto = r->text_len;
        if (r->n_stops) {
            int64_t hit = mlstack__stop_scan(r, &upto);
            if (hit >= 0 && finish == MLSTACK_FINISH_NONE) {
                finish = MLSTACK_FINISH_STOP;
                upto = (size_t)hit > r->emitted ? (size_t)hit : r->emitted;
            }
        }
    }
    if (finish == MLSTACK_FINISH_NONE) {
        if (r->max_tokens && r->n_toks - r->n_prompt >= r->max_tokens) finish = MLSTACK_FINISH_LENGTH;
        else if (r->n_toks > c->max_pos || r->n_toks >= r->cap_toks ||
                 mlstack__pages_for(&e->kv, r->n_toks) > e->kv.n_pages)
            finish = MLSTACK_FINISH_CONTEXT;
    }
    if (finish != MLSTACK_FINISH_NONE && finish != MLSTACK_FINISH_STOP && r->dt) { /* release what was held back */
        const char *t;
        size_t n;
        if (mlstack_detok_flush(r->dt, &t, &n) == MLSTACK_OK) (void)mlstack__text_append(r, t, n);
        upto = r->text_len;
    }
    if (r->dt) piece = r->text ? r->text + from : "";
    r->emitted = upto;
    if (r->on_token && r->on_token(r->user, r->id, tok, piece, piece ? upto - from : 0) && finish == MLSTACK_FINISH_NONE)
        finish = MLSTACK_FINISH_CALLBACK;
    if (finish != MLSTACK_FINISH_NONE) mlstack__req_finish(e, r, finish, MLSTACK_OK, NULL);
}

/* Publishes every request's status and the accounting (under the lock). */
static void mlstack__sched_publish(mlstack_engine *e) {
    mlstack__sched *S = e->sched;
    mlstack__kv *kv = &e->kv;
    mlstack_cache_stats *st = &S->snap;
    mlstack__req *r;
    st->n_queued = st->n_running = 0;
    for (r = S->all; r; r = r->next_all) {
        if (!r->seen) {
            st->n_queued++;
            continue;
        }
        r->st.state = (mlstack_request_state)r->state;
        r->st.finish = (mlstack_finish_reason)r->finish;
        r->st.result = r->result;
        snprintf(r->st.message, sizeof r->st.message, "%s", r->message);
        r->st.n_generated = r->n_toks - r->n_prompt;
        r->st.n_cached = r->n_cached;
        r->st.n_preempted = r->n_preempted;
        r->st.t_first_token = r->t_first ? r->t_first - r->t_submit : 0;
        r->st.t_done = r->t_done ? r->t_done - r->t_submit : 0;
        if (r->state == MLSTACK_REQUEST_QUEUED) st->n_queued++;
        if (r->state == MLSTACK_REQUEST_RUNNING) st->n_running++;
    }
    st->n_pages = kv->n_pages;
    st->page_tokens = kv->page_tokens;
    st->page_bytes = (uint64_t)kv->page_elems * kv->esize;
    st->pages_free = kv->n_free;
    st->pages_used = kv->n_pages - kv->n_free;
    st->pages_cached = kv->radix.n_cached;
    st->pages_pinned = kv->radix.n_pinned;
    st->tree_nodes = kv->radix.n_nodes;
    st->pages_evicted = kv->radix.n_evicted;
    st->hit_tokens = S->hit;
    st->computed_tokens = S->computed;
    st->generated_tokens = S->generated;
    st->steps = S->steps;
    st->preemptions = S->preemptions;
    mlstack__sched_reap(S);
}

MLSTACK_API mlstack_result mlstack_engine_step(mlstack_engine *e, int *n_active) {
    mlstack__sched *S;
    mlstack__req *r;
    mlstack_result res = MLSTACK_OK;
    int i, n_rows = 0, n_dec = 0, budget;
    uint64_t preempted = e->sched->preemptions;
    if (n_active) *n_active = 0;
    if (!e) return MLSTACK_ERR_INVALID_ARG;
    S = e->sched;
    e->err.message[0] = 0;
    /* (1) new requests and cancellations */
    mlstack__lock(&S->mu);
    while ((r = S->in_head) != NULL) {
        S->in_head = r->next_in;
        r->next_in = NULL;
        if (mlstack__wait_push(S, r) != 0) {
            r->next_in = S->in_head; /* keep it queued for the next step */
            S->in_head = r;
            break;
        }
        r->state = MLSTACK_REQUEST_QUEUED;
        r->seen = 1;
    }
    if (!S->in_head) S->in_tail = NULL;
    for (r = S->all; r; r = r->next_all)
        if (r->cancel && r->seen && r->state != MLSTACK_REQUEST_DONE) r->kill = 1;
    mlstack__unlock(&S->mu);
    for (i = 0; i < S->n_run + S->n_wait;) {
        r = i < S->n_run ? S->run[i] : S->wait[i - S->n_run];
        if (r->kill) {
            r->kill = 0;
            mlstack__req_finish(e, r, MLSTACK_FINISH_CANCELLED, MLSTACK_ERR_CANCELLED, "cancelled");
        } else {
            i++;
        }
    }
    /* (2) the batch: running requests oldest first, decodes ahead of prefill in the budget */
    for (i = 0; i < S->n_run; i++)
        if (S->run[i]->n_toks - S->run[i]->n_computed == 1) n_dec++;
    budget = e->step_tokens - n_dec;
    for (i = 0; i < S->n_run; i++) {
        int left, chunk, got;
        r = S->run[i];
        r->n_rows = 0;
        left = r->n_toks - r->n_computed;
        chunk = left == 1 ? 1 : (left < budget ? left : budget);
        if (chunk <= 0) continue;
        got = mlstack__req_reserve(e, r, r->n_computed + chunk, 1);
        if (got < 0) {
            mlstack__req_finish(e, r, MLSTACK_FINISH_ERROR, MLSTACK_ERR_NO_MEMORY, "out of memory for a page table");
            i--;
            continue;
        }
        if (got == 0) break; /* r itself was preempted: it was the last running request */
        mlstack__add_rows(S, &n_rows, r, chunk);
        r->prefill_rows = left > 1 || r->n_computed < r->n_prompt ? chunk : 0;
        if (left > 1) budget -= chunk;
    }
    /* no admissions in a step that had to preempt: the room is not there */
    while (budget > 0 && S->n_wait > 0 && S->n_run < e->kv.max_seqs && S->preemptions == preempted) {
        int w = mlstack__pick_waiting(e), got, chunk;
        r = S->wait[w];
        got = mlstack__admit(e, w);
        if (got < 0) {
            mlstack__req_finish(e, r, MLSTACK_FINISH_ERROR, MLSTACK_ERR_NO_MEMORY, "out of memory for a page table");
            continue;
        }
        if (got == 0) {
            if (S->n_run == 0) /* nothing will free pages: the low-level API holds them */
                mlstack__req_finish(e, r, MLSTACK_FINISH_ERROR, MLSTACK_ERR_LIMIT,
                                    "KV pages are held by sequences of the low-level API; the request cannot be admitted");
            break;
        }
        chunk = r->n_toks - r->n_computed < budget ? r->n_toks - r->n_computed : budget;
        if (mlstack__req_reserve(e, r, r->n_computed + chunk, 0) != 1) { /* cannot happen: admit checked the room */
            mlstack__req_finish(e, r, MLSTACK_FINISH_ERROR, MLSTACK_ERR_NO_MEMORY, "no KV pages after admission");
            continue;
        }
        mlstack__add_rows(S, &n_rows, r, chunk);
        r->prefill_rows = chunk;
        budget -= chunk;
    }
    /* (3) one forward over the ragged batch */
    if (n_rows > 0) {
        for (i = 0; i < S->n_run; i++) {
            r = S->run[i];
            if (r->n_rows) e->kv.seqs[r->seq].len = r->n_computed; /* eval appends from here */
        }
        res = mlstack__eval(e, S->rows, n_rows, 1);
        S->steps++;
    }
    /* (4) sample, stream, retire */
    if (n_rows > 0 && res == MLSTACK_OK) {
        mlstack__req **batch = S->run;
        int n_batch = S->n_run;
        /* finishing removes requests from S->run: walk a copy of the list's order backwards */
        for (i = n_batch - 1; i >= 0; i--) {
            r = batch[i];
            if (!r->n_rows) continue;
            S->computed += (uint64_t)r->prefill_rows;
            r->n_computed += r->n_rows;
            if (r->prefill_rows && r->n_computed == r->n_toks) mlstack__req_share(e, r);
            if (r->n_computed == r->n_toks) mlstack__req_sample(e, r, mlstack_engine_logits(e, r->row_first + r->n_rows - 1));
            r->n_rows = 0;
        }
    } else if (n_rows > 0) {
        char msg[160];
        size_t n = strlen(e->err.message) < sizeof msg - 1 ? strlen(e->err.message) : sizeof msg - 1;
        memcpy(msg, e->err.message, n);
        msg[n] = 0;
        while (S->n_run > 0) mlstack__req_finish(e, S->run[S->n_run - 1], MLSTACK_FINISH_ERROR, res, msg);
    }
    /* (5) publish */
    mlstack__lock(&S->mu);
    mlstack__sched_publish(e);
    if (n_active) *n_active = S->snap.n_queued + S->snap.n_running;
    mlstack__unlock(&S->mu);
    return res;
}

MLSTACK_API mlstack_result mlstack_engine_complete(mlstack_engine *e, const mlstack_request_desc *d,
                                                   mlstack_request_status *status, int32_t *tokens, int cap,
                                                   mlstack_error *err) {
    uint64_t id;
    mlstack_request_status st;
    mlstack_result res = mlstack_engine_submit(e, d, &id, err);
    if (res != MLSTACK_OK) return res;
    for (;;) {
        res = mlstack_engine_step(e, NULL);
        if (mlstack_engine_poll(e, id, &st, tokens, cap) != MLSTACK_OK) break;
        if (st.state == MLSTACK_REQUEST_DONE) break;
        if (res != MLSTACK_OK) break;
    }
    if (status) *status = st;
    mlstack_engine_release(e, id);
    if (res == MLSTACK_OK) res = st.result;
    if (res != MLSTACK_OK) MLSTACK__FAIL(err, res, "%s", st.message[0] ? st.message : mlstack_engine_error(e));
    return res;
}

MLSTACK_API void mlstack_engine_cache_stats(mlstack_engine *e, mlstack_cache_stats *out) {
    if (!e || !out) return;
    mlstack__lock(&e->sched->mu);
    *out = e->sched->snap;
    out->rejected = e->sched->rejected;
    mlstack__unlock(&e->sched->mu);
}

MLSTACK_API int mlstack_engine_cache_clear(mlstack_engine *e) {
    int before;
    if (!e) return 0;
    before = e->kv.n_free;
    mlstack__radix_evict(&e->kv, e->kv.n_pages);
    mlstack__lock(&e->sched->mu);
    mlstack__sched_publish(e);
    mlstack__unlock(&e->sched->mu);
    return e->kv.n_free - before;
}

/* ==== 21. PROFILER ==== */  /* >>profiler */
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
            int32_t t0 = mlstack__window_start(c, rows[i].pos);
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
