/* mlstack bench: llama-bench-like prompt and generation throughput, and the serving modes
   (through the scheduler). */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(_WIN32)
#include <windows.h>
#else
#include <pthread.h>
#include <unistd.h>
#endif

static const char *BENCH_USAGE =
    "usage: mlstack bench (-m MODEL | --shape CONFIG.json) [options]\n"
    "\n"
    "  pp<P>: one eval of P prompt tokens into a fresh sequence; tokens/s = P / time.\n"
    "  tg<N>: N single-token evals after a 4-token prompt (not timed); tokens/s = N / time.\n"
    "  Each test runs once untimed, then R times; the table gives median, min, max and the\n"
    "  spread (max - min) / median. tg is also given as a fraction of the bandwidth roofline:\n"
    "  (weight bytes one token reads) / (best read bandwidth measured here, same thread count).\n"
    "\n"
    "  -m, --model MODEL      model folder or .gguf file\n"
    "      --shape FILE       a config.json: random weights of that shape (no download)\n"
    "      --dtype TYPE       (--shape) stored type of the random weights: f32, f16, bf16 (default f32)\n"
    "  -p, --n-prompt LIST    prompt lengths (default 128; 0 skips pp)\n"
    "  -n, --n-gen LIST       generation lengths (default 64; 0 skips tg)\n"
    "  -d, --depth LIST       context already in the sequence before each test, as llama-bench's -d\n"
    "                         (default 0): filled once per depth, untimed; pp and tg then run at\n"
    "                         positions D.. (tg without its 4-token prompt); named ppP@dD, tgN@dD\n"
    "  -t, --threads LIST     thread counts (default 1)\n"
    "      --ranks LIST       rank counts: the threads split into that many thread ranks (1,2 at -t 2:\n"
    "                         one rank of 2 threads, then 2 ranks of 1), with --stages / --rank-mode\n"
    "                         as for any command; under mpirun (mlstack-mpi) the job's ranks. Adds the\n"
    "                         bytes rank 0 exchanged per token (in + out) and its share of time waiting\n"
    "  -r, --repetitions N    timed runs per test (default 5)\n"
    "      --quant LIST       none, q8_0, q4_1 (default none)\n"
    "      --isa LIST         kernel caps: scalar, avx2, avx512, amx (default: the best)\n"
    "      --json             one JSON object per line and configuration instead of the table\n"
    "      --gpu              the forward pass on the GPU (a build with make cuda)\n"
    "      --bf16-dot         BF16 weights: activations rounded to bf16 for AVX512_BF16 dot products\n"
    "                         (AMX-BF16 tiles where the CPU has them)\n"
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
    "      --kv-mem MIB       KV pool for the serving modes (default: the engine's default)\n"
    "      --cache-type-k T, --cache-type-v T   KV cache keys / values: f16 (default), bf16, f32, q8_0,\n"
    "                         q4_0 (llama-bench's -ctk / -ctv)\n";

#define BENCH_MAX 16

typedef struct bench_opts {
    const char *model, *shape, *profile;
    mlstack_dtype dtype;
    int pp[BENCH_MAX], n_pp, tg[BENCH_MAX], n_tg, threads[BENCH_MAX], n_threads, reps;
    int depth[BENCH_MAX], n_depth;
    int quant[BENCH_MAX], n_quant; /* mlstack_dtype; 0 = none */
    const char *isa[BENCH_MAX];
    int n_isa, json, bw_mib, bf16_dot, gpu;
    char isa_buf[256];
    int parallel[BENCH_MAX], n_parallel, shared_prefix, mixed, requests, kv_mib;
    int ranks[BENCH_MAX], n_ranks; /* 0: MLSTACK_RANKS, or the MPI job */
    double rate;
    mlstack_kv_type ctk, ctv; /* --cache-type-k/-v (0: f16) */
} bench_opts;

/* "a,b,c" of integers in [lo, hi] -> out; returns the count or -1. */
/* A bad value's message, with what was expected: "-r 0: expected a whole number from 1 to 1000". */
static int bench_bad(const char *opt, const char *v, const char *what, int lo, int hi) {
    if (lo == hi) fprintf(stderr, "mlstack: %s %s: expected %s %d\n", opt, v, what, lo);
    else
        fprintf(stderr, "mlstack: %s %s: expected %s from %d to %d\n", opt, v, what, lo, hi);
    return 2;
}

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
    b->depth[0] = 0, b->n_depth = 1;
    b->threads[0] = 1, b->n_threads = 1;
    b->n_ranks = 1;
    b->reps = 5;
    b->n_quant = 1;
    b->n_isa = 1;
    b->bw_mib = 1024;
    b->dtype = MLSTACK_DTYPE_F32;
    b->requests = 32;
    b->rate = 4;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define IS(s, l) (strcmp(a, s) == 0 || strcmp(a, l) == 0)
#define VALUE()                                               \
    do {                                                      \
        if (!v) return cli_die("option %s needs a value", a); \
        i++;                                                  \
    } while (0)
        if (IS("-h", "--help")) return 1;
        else if (IS("-m", "--model")) {
            VALUE();
            b->model = v;
        } else if (IS("--shape", "--shape")) {
            VALUE();
            b->shape = v;
        } else if (IS("--profile", "--profile")) {
            VALUE();
            b->profile = v;
        } else if (IS("--json", "--json"))
            b->json = 1;
        else if (IS("--bf16-dot", "--bf16-dot"))
            b->bf16_dot = 1;
        else if (IS("-p", "--n-prompt")) {
            VALUE();
            if ((b->n_pp = parse_int_list(v, 0, 65536, b->pp)) < 0)
                return bench_bad(a, v, "a list of whole numbers", 0, 65536);
        } else if (IS("-n", "--n-gen")) {
            VALUE();
            if ((b->n_tg = parse_int_list(v, 0, 65536, b->tg)) < 0)
                return bench_bad(a, v, "a list of whole numbers", 0, 65536);
        } else if (IS("-d", "--depth")) {
            VALUE();
            if ((b->n_depth = parse_int_list(v, 0, 1 << 20, b->depth)) < 0)
                return bench_bad(a, v, "a list of whole numbers", 0, 1 << 20);
        } else if (IS("--ranks", "--ranks")) {
            VALUE();
            if ((b->n_ranks = parse_int_list(v, 1, 256, b->ranks)) < 0)
                return bench_bad(a, v, "a list of whole numbers", 1, 256);
        } else if (IS("-t", "--threads")) {
            VALUE();
            if ((b->n_threads = parse_int_list(v, 1, 256, b->threads)) < 0)
                return bench_bad(a, v, "a list of whole numbers", 1, 256);
        } else if (IS("-r", "--repetitions")) {
            int r[BENCH_MAX];
            VALUE();
            if (parse_int_list(v, 1, 1000, r) != 1) return bench_bad(a, v, "a whole number", 1, 1000);
            b->reps = r[0];
        } else if (IS("--parallel", "--parallel")) {
            VALUE();
            if ((b->n_parallel = parse_int_list(v, 1, 256, b->parallel)) < 0)
                return bench_bad(a, v, "a list of whole numbers", 1, 256);
        } else if (IS("--shared-prefix", "--shared-prefix")) {
            int r[BENCH_MAX];
            VALUE();
            if (parse_int_list(v, 1, 65536, r) != 1) return bench_bad(a, v, "a whole number", 1, 65536);
            b->shared_prefix = r[0];
        } else if (IS("--requests", "--requests")) {
            int r[BENCH_MAX];
            VALUE();
            if (parse_int_list(v, 1, 100000, r) != 1) return bench_bad(a, v, "a whole number", 1, 100000);
            b->requests = r[0];
        } else if (IS("--kv-mem", "--kv-mem")) {
            int r[BENCH_MAX];
            VALUE();
            if (parse_int_list(v, 1, 1 << 20, r) != 1) return bench_bad(a, v, "a whole number", 1, 1 << 20);
            b->kv_mib = r[0];
        } else if (IS("--cache-type-k", "-ctk")) {
            VALUE();
            if (cli_kv_type(a, v, &b->ctk)) return 2;
        } else if (IS("--cache-type-v", "-ctv")) {
            VALUE();
            if (cli_kv_type(a, v, &b->ctv)) return 2;
        } else if (IS("--rate", "--rate")) {
            VALUE();
            b->rate = atof(v);
            if (!(b->rate > 0)) return bench_bad(a, v, "a number above", 0, 0);
        } else if (IS("--workload", "--workload")) {
            VALUE();
            if (strcmp(v, "mixed") != 0) return cli_die("--workload %s: only mixed is known", v);
            b->mixed = 1;
        } else if (IS("--bw-mib", "--bw-mib")) {
            int r[BENCH_MAX];
            VALUE();
            if (parse_int_list(v, 0, 1 << 20, r) != 1) return bench_bad(a, v, "a whole number", 0, 1 << 20);
            b->bw_mib = r[0];
        } else if (IS("--dtype", "--dtype")) {
            VALUE();
            if (strcmp(v, "f32") == 0) b->dtype = MLSTACK_DTYPE_F32;
            else if (strcmp(v, "f16") == 0)
                b->dtype = MLSTACK_DTYPE_F16;
            else if (strcmp(v, "bf16") == 0)
                b->dtype = MLSTACK_DTYPE_BF16;
            else
                return cli_die("--dtype %s: expected f32, f16 or bf16", v);
        } else if (IS("--quant", "--quant")) {
            const char *s;
            VALUE();
            b->n_quant = 0;
            for (s = v; *s;) {
                size_t len = strcspn(s, ",");
                int q;
                if (len == 4 && strncmp(s, "none", 4) == 0) q = 0;
                else if (len == 4 && strncmp(s, "q8_0", 4) == 0)
                    q = MLSTACK_DTYPE_Q8_0;
                else if (len == 4 && strncmp(s, "q4_1", 4) == 0)
                    q = MLSTACK_DTYPE_Q4_1;
                else
                    return cli_die("--quant %s: expected a list of none, q8_0, q4_1", v);
                if (b->n_quant == BENCH_MAX) return cli_die("%s", "--quant: too many types");
                b->quant[b->n_quant++] = q;
                s += len + (s[len] == ',');
            }
            if (!b->n_quant) return cli_die("%s", "--quant: empty list");
        } else if (IS("--gpu", "--gpu")) {
            b->gpu = 1;
        } else if (IS("--isa", "--isa")) {
            char *s;
            VALUE();
            snprintf(b->isa_buf, sizeof b->isa_buf, "%s", v);
            b->n_isa = 0;
            for (s = strtok(b->isa_buf, ","); s && b->n_isa < BENCH_MAX; s = strtok(NULL, ",")) b->isa[b->n_isa++] = s;
            if (!b->n_isa) return cli_die("%s", "--isa: empty list");
        } else
            return cli_die("unknown bench option %s (see mlstack bench --help)", a);
#undef IS
#undef VALUE
    }
    if (!b->model == !b->shape) return cli_die("%s", "bench needs exactly one of -m MODEL and --shape CONFIG.json");
    return 0;
}

/* Read bandwidth, measured the way decode reads weights: every thread streams its own slice of
   one buffer much larger than the last-level cache, with the widest loads the CPU has (AVX-512
   or AVX2 where present: the matmul kernels' loads) into eight independent accumulators, so
   that enough loads are in flight for memory, not the core, to set the pace. Best of 5 passes.
   The roofline divides by the best of this over the bench's thread counts and all online CPUs:
   the machine's bandwidth, which no decode can exceed while its weights come from memory. */
typedef uint64_t bw_vec __attribute__((vector_size(16)));
typedef struct bw_arg {
    const unsigned char *p;
    size_t bytes;
    int *arrived, n_threads; /* start line: every thread spins until all have arrived */
    double t0, t1;
    uint64_t sink;
    int width; /* bytes per load: 16, 32 or 64 */
} bw_arg;

#define BW_LOOP(VT)                                                         \
    do {                                                                    \
        const VT *q = (const VT *)(const void *)a->p;                       \
        size_t n = a->bytes / sizeof(VT), i;                                \
        VT s0, s1, s2, s3, s4, s5, s6, s7;                                  \
        memset(&s0, 0, sizeof s0);                                          \
        s1 = s2 = s3 = s4 = s5 = s6 = s7 = s0;                              \
        for (i = 0; i + 8 <= n; i += 8) {                                   \
            s0 += q[i], s1 += q[i + 1], s2 += q[i + 2], s3 += q[i + 3];     \
            s4 += q[i + 4], s5 += q[i + 5], s6 += q[i + 6], s7 += q[i + 7]; \
        }                                                                   \
        s0 += s1 + s2 + s3 + s4 + s5 + s6 + s7;                             \
        a->sink = s0[0] + s0[1];                                            \
    } while (0)

static void bw_sum16(bw_arg *a) { BW_LOOP(bw_vec); }
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
typedef uint64_t bw_vec32 __attribute__((vector_size(32)));
typedef uint64_t bw_vec64 __attribute__((vector_size(64)));
__attribute__((target("avx2"))) static void bw_sum32(bw_arg *a) { BW_LOOP(bw_vec32); }
__attribute__((target("avx512f"))) static void bw_sum64(bw_arg *a) { BW_LOOP(bw_vec64); }
static int bw_width(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") ? 64 : __builtin_cpu_supports("avx2") ? 32 : 16;
}
#else
static int bw_width(void) { return 16; }
#endif

static void *bw_thread(void *arg_) {
    bw_arg *a = (bw_arg *)arg_;
    __atomic_add_fetch(a->arrived, 1, __ATOMIC_ACQ_REL);
    while (__atomic_load_n(a->arrived, __ATOMIC_ACQUIRE) < a->n_threads) cli_yield();
    a->t0 = mlstack_clock_seconds();
#if (defined(__x86_64__) || defined(_M_X64)) && defined(__GNUC__)
    if (a->width == 64) bw_sum64(a);
    else if (a->width == 32)
        bw_sum32(a);
    else
#endif
        bw_sum16(a);
    a->t1 = mlstack_clock_seconds();
    return NULL;
}

/* The probe's threads: POSIX or Win32. */
#if defined(_WIN32)
typedef HANDLE bw_handle;
static DWORD WINAPI bw_thread_win(LPVOID a) {
    bw_thread(a);
    return 0;
}
static int bw_spawn(bw_handle *h, bw_arg *a) {
    return (*h = CreateThread(NULL, 0, bw_thread_win, a, 0, NULL)) ? 0 : -1;
}
static void bw_join(bw_handle h) {
    WaitForSingleObject(h, INFINITE);
    CloseHandle(h);
}
#else
typedef pthread_t bw_handle;
static int bw_spawn(bw_handle *h, bw_arg *a) { return pthread_create(h, NULL, bw_thread, a); }
static void bw_join(bw_handle h) { pthread_join(h, NULL); }
#endif

/* GB/s, or 0 when the test could not run. */
static double measure_bandwidth(const unsigned char *buf, size_t bytes, int n_threads) {
    bw_handle th[256];
    bw_arg args[256];
    double best = 0;
    size_t per = bytes / (size_t)n_threads / 512 * 512;
    int run, t, width = bw_width();
    for (run = 0; run < 5; run++) {
        double t0 = 1e300, t1 = 0;
        int started = 0, arrived = 0;
        for (t = 0; t < n_threads; t++) {
            args[t].p = buf + (size_t)t * per;
            args[t].bytes = per;
            args[t].arrived = &arrived;
            args[t].n_threads = n_threads;
            args[t].width = width;
            if (t && bw_spawn(&th[t], &args[t]) != 0) break;
            started++;
        }
        if (started < n_threads) { /* the start line would never open: release the others, give up */
            __atomic_store_n(&arrived, 1 << 30, __ATOMIC_RELEASE);
            for (t = 1; t < started; t++) bw_join(th[t]);
            return 0;
        }
        bw_thread(&args[0]);
        for (t = 1; t < n_threads; t++) bw_join(th[t]);
        for (t = 0; t < n_threads; t++) {
            if (args[t].t0 < t0) t0 = args[t].t0;
            if (args[t].t1 > t1) t1 = args[t].t1;
        }
        if (t1 > t0 && (double)per * n_threads / (t1 - t0) / 1e9 > best)
            best = (double)per * n_threads / (t1 - t0) / 1e9;
    }
    return best;
}

/* Online CPUs (at most 256), 1 where unknown. */
static int bw_cpus(void) {
#if defined(_SC_NPROCESSORS_ONLN)
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 256 ? 256 : (int)n;
#else
    return 1;
#endif
}

/* Bytes of the last-level cache, 0 where unknown. */
static uint64_t llc_bytes(void) {
#if defined(_SC_LEVEL3_CACHE_SIZE)
    long n = sysconf(_SC_LEVEL3_CACHE_SIZE);
    if (n > 0) return (uint64_t)n;
#endif
#if defined(_SC_LEVEL2_CACHE_SIZE)
    {
        long n2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
        if (n2 > 0) return (uint64_t)n2;
    }
#endif
    return 0;
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
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Fills sequence seq with `depth` tokens (untimed context for the tests at that depth), in
   evals of at most cap rows. 0, or -1 on failure. */
static int bench_fill(mlstack_engine *e, int32_t seq, int n_vocab, int depth, int cap, mlstack_batch_row *rows) {
    int i, p0, n;
    for (p0 = 0; p0 < depth; p0 += n) {
        n = depth - p0 < cap ? depth - p0 : cap;
        for (i = 0; i < n; i++) {
            rows[i].seq = seq;
            rows[i].pos = p0 + i;
            rows[i].token = (int32_t)((5 + 6007u * (unsigned)(p0 + i)) % (unsigned)n_vocab);
            rows[i].want_logits = 0;
        }
        if (mlstack_engine_eval(e, rows, n) != MLSTACK_OK) return -1;
    }
    return 0;
}

/* Rank 0's exchanges during the timed parts of bench_once: bytes in + out, seconds waiting. */
static uint64_t x_bytes;
static double x_wait;

static void x_count(mlstack_engine *e, int sign) {
    mlstack_rank_info ri;
    if (mlstack_engine_rank_info(e, 0, &ri) != MLSTACK_OK) return;
    x_bytes += (uint64_t)sign * (ri.bytes_in + ri.bytes_out);
    x_wait += sign * ri.wait_seconds;
}

/* One timed run: pp (n_prompt tokens in one eval) or tg (n_gen single-token evals after a
   4-token prompt). With depth > 0 the run continues sequence dseq (which holds `depth` tokens)
   from position depth, overwriting what an earlier run wrote there, and tg has no prompt of its
   own. Returns seconds, or -1 on failure. */
static double bench_once(mlstack_engine *e, int n_vocab, int n_prompt, int n_gen, mlstack_batch_row *rows, int32_t dseq,
                         int depth) {
    int32_t seq = dseq;
    int i, n = n_gen ? (depth ? 0 : 4) : n_prompt;
    double t0, t = 0;
    if (!depth && mlstack_engine_seq_new(e, &seq) != MLSTACK_OK) return -1;
    if (!n_gen) x_count(e, -1);
    for (i = 0; i < n; i++) {
        rows[i].seq = seq;
        rows[i].pos = depth + i;
        rows[i].token = (int32_t)((1 + 7919u * (unsigned)i) % (unsigned)n_vocab);
        rows[i].want_logits = i == n - 1;
    }
    t0 = mlstack_clock_seconds();
    if (n && mlstack_engine_eval(e, rows, n) != MLSTACK_OK) return -1;
    t = mlstack_clock_seconds() - t0;
    if (!n_gen) x_count(e, 1);
    if (n_gen) {
        rows[0].seq = seq;
        x_count(e, -1);
        t0 = mlstack_clock_seconds();
        for (i = 0; i < n_gen; i++) {
            rows[0].pos = depth + n + i;
            rows[0].token = (int32_t)((3 + 104729u * (unsigned)i) % (unsigned)n_vocab);
            rows[0].want_logits = 1; /* generation needs every token's logits (the LM head) */
            if (mlstack_engine_eval(e, rows, 1) != MLSTACK_OK) return -1;
        }
        t = mlstack_clock_seconds() - t0;
        x_count(e, 1);
    }
    if (!depth) mlstack_engine_seq_free(e, seq);
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
    double t = mlstack_clock_seconds();
    (void)id, (void)tok, (void)text, (void)len;
    if (!r->t_first) r->t_first = t;
    else if (r->n_gaps < r->cap_gaps)
        r->gaps[r->n_gaps++] = t - r->t_last;
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

static int serve_engine(const bench_opts *b, mlstack_model *m, int threads, const char *isa, int max_seqs,
                        mlstack_engine **e) {
    mlstack_engine_desc ed;
    mlstack_error err;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = threads;
    ed.isa = isa;
    ed.max_seqs = max_seqs;
    ed.kv_mem = (uint64_t)b->kv_mib << 20;
    ed.kv_type_k = b->ctk, ed.kv_type_v = b->ctv;
    if (cli_engine_init(m, &ed, b->gpu, e, &err) != MLSTACK_OK) {
        fprintf(stderr, "mlstack: %s\n", err.message);
        return 1;
    }
    return 0;
}

/* --parallel: aggregate decode throughput of n sequences decoding together, each n of the list. */
static int serve_parallel(const bench_opts *b, mlstack_model *m, const mlstack_model_info *info, int threads,
                          const char *isa_cap, const char *type, int32_t *toks, uint64_t *seed) {
    mlstack_engine *e;
    mlstack_error err;
    int n_gen = b->n_tg && b->tg[0] > 0 ? b->tg[0] : 32, k, i;
    double one_tps = 0; /* --parallel 1's aggregate rate, when the list has 1 before the others */
    const char *isa;
    for (k = 0; k < b->n_parallel; k++) {
        int n = b->parallel[k], active = 1, all_started;
        uint64_t id, g0;
        double t0, t;
        mlstack_cache_stats st;
        if (serve_engine(b, m, threads, isa_cap, n, &e)) return 1;
        isa = mlstack_engine_kernels(e);
        for (i = 0; i < n; i++) {
            mlstack_request_desc d;
            int j;
            memset(&d, 0, sizeof d);
            for (j = 0; j < 32; j++) toks[j] = (int32_t)(bench_rng(seed) % (uint32_t)info->n_vocab);
            d.prompt = toks;
            d.n_prompt = 32;
            d.max_tokens = n_gen + 1;
            d.ignore_eos = 1;
            if (mlstack_engine_submit(e, &d, &id, &err) != MLSTACK_OK) return cli_die("%s", err.message);
        }
        do { /* prefill everyone and sample the first token: not timed */
            if (mlstack_engine_step(e, &active) != MLSTACK_OK) return cli_die("%s", mlstack_engine_error(e));
            mlstack_engine_cache_stats(e, &st);
            all_started = st.generated_tokens >= (uint64_t)n;
        } while (!all_started);
        g0 = st.generated_tokens;
        if (b->profile && mlstack_engine_profile_start(e, NULL) != MLSTACK_OK)
            return cli_die("%s", "could not start the profiler");
        t0 = mlstack_clock_seconds();
        while (active)
            if (mlstack_engine_step(e, &active) != MLSTACK_OK) return cli_die("%s", mlstack_engine_error(e));
        t = mlstack_clock_seconds() - t0;
        if (b->profile) {
            char path[1024];
            snprintf(path, sizeof path, "%s-parallel%d.json", b->profile, n);
            if (cli_report_profile(e, path) != 0) return 1;
            mlstack_engine_profile_stop(e);
        }
        mlstack_engine_cache_stats(e, &st);
        if (n == 1) one_tps = (double)(st.generated_tokens - g0) / t;
        if (b->json) {
            serve_head(b, type, isa, threads, "parallel");
            printf(",\"parallel\":%d,\"n_gen\":%d,\"decode_tps\":%.3f,\"per_seq_tps\":%.3f,\"steps\":%llu", n, n_gen,
                   (double)(st.generated_tokens - g0) / t, (double)(st.generated_tokens - g0) / t / n,
                   (unsigned long long)st.steps);
            if (one_tps > 0 && n > 1) printf(",\"vs_one\":%.3f", (double)(st.generated_tokens - g0) / t / one_tps);
            printf("}\n");
        } else {
            printf("| %-6s | %-12s | %7d | parallel %-3d | aggregate decode %9.2f t/s | per sequence %8.2f t/s |", type,
                   isa, threads, n, (double)(st.generated_tokens - g0) / t, (double)(st.generated_tokens - g0) / t / n);
            if (one_tps > 0 && n > 1) printf(" %.2fx one sequence |", (double)(st.generated_tokens - g0) / t / one_tps);
            printf("\n");
        }
        fflush(stdout);
        mlstack_engine_free(e);
    }
    return 0;
}

/* --shared-prefix: time to first token behind a shared system prompt, cold vs cached. */
static int serve_shared_prefix(const bench_opts *b, mlstack_model *m, const mlstack_model_info *info, int threads,
                               const char *isa_cap, const char *type, int32_t *toks, uint64_t *seed) {
    mlstack_engine *e;
    mlstack_error err;
    const char *isa;
    int L = b->shared_prefix, rep, i;
    double cold[1000], warm[1000];
    mlstack_cache_stats st;
    if (serve_engine(b, m, threads, isa_cap, 4, &e)) return 1;
    isa = mlstack_engine_kernels(e);
    for (i = 0; i < L; i++) toks[i] = (int32_t)(bench_rng(seed) % (uint32_t)info->n_vocab);
    for (rep = 0; rep <= b->reps; rep++) { /* rep 0 warms up, untimed */
        int pass;
        for (pass = 0; pass < 2; pass++) {
            mlstack_request_desc d;
            mlstack_request_status rs;
            int j;
            if (pass == 0) mlstack_engine_cache_clear(e);
            for (j = 0; j < 16; j++) toks[L + j] = (int32_t)(bench_rng(seed) % (uint32_t)info->n_vocab);
            memset(&d, 0, sizeof d);
            d.prompt = toks;
            d.n_prompt = L + 16;
            d.max_tokens = 1;
            d.ignore_eos = 1;
            if (mlstack_engine_complete(e, &d, &rs, NULL, 0, &err) != MLSTACK_OK) return cli_die("%s", err.message);
            if (rep) (pass ? warm : cold)[rep - 1] = rs.t_first_token;
        }
    }
    mlstack_engine_cache_stats(e, &st);
    {
        double c = pct(cold, b->reps, 0.5), w = pct(warm, b->reps, 0.5);
        if (b->json) {
            serve_head(b, type, isa, threads, "shared_prefix");
            printf(",\"prefix\":%d,\"suffix\":16,\"reps\":%d,\"ttft_cold_ms\":%.3f,\"ttft_cached_ms\":%.3f,"
                   "\"speedup\":%.2f,"
                   "\"hit_tokens\":%llu,\"computed_tokens\":%llu}\n",
                   L, b->reps, 1e3 * c, 1e3 * w, w > 0 ? c / w : 0.0, (unsigned long long)st.hit_tokens,
                   (unsigned long long)st.computed_tokens);
        } else {
            printf("| %-6s | %-12s | %7d | shared prefix %d + 16 | TTFT cold %9.2f ms | cached %8.2f ms | %.1fx |\n",
                   type, isa, threads, L, 1e3 * c, 1e3 * w, w > 0 ? c / w : 0.0);
        }
    }
    fflush(stdout);
    mlstack_engine_free(e);
    return 0;
}

/* --mixed: random (Poisson) arrivals, shared prefixes, varied lengths; TTFT, ITL and cache hits. */
static int serve_mixed(const bench_opts *b, mlstack_model *m, const mlstack_model_info *info, int threads,
                       const char *isa_cap, const char *type, uint64_t *seed) {
    mlstack_engine *e;
    mlstack_error err;
    const char *isa;
    int n = b->requests, next = 0, active = 0, n_ttft = 0, n_itl = 0, sys_len = 200, i;
    serve_req *rq = (serve_req *)calloc((size_t)n, sizeof *rq);
    double *arrive = (double *)calloc((size_t)n, sizeof(double)), *ttft = (double *)calloc((size_t)n, sizeof(double)),
           *itl, t0, t;
    int32_t *sys = (int32_t *)calloc(4 * (size_t)sys_len, sizeof(int32_t)), prompt[512];
    uint64_t *ids = (uint64_t *)calloc((size_t)n, sizeof(uint64_t));
    mlstack_cache_stats st;
    long total_gaps = 0;
    if (!rq || !arrive || !ttft || !sys || !ids) return cli_die("%s", "out of memory");
    for (i = 0; i < 4 * sys_len; i++) sys[i] = (int32_t)(bench_rng(seed) % (uint32_t)info->n_vocab);
    for (i = 0, t = 0; i < n; i++) { /* exponential gaps: a Poisson process */
        t += -log(1.0 - (bench_rng(seed) % 1000000) / 1e6) / b->rate;
        arrive[i] = t;
        rq[i].cap_gaps = 128;
        rq[i].gaps = (double *)calloc(128, sizeof(double));
        total_gaps += 128;
    }
    itl = (double *)calloc((size_t)total_gaps, sizeof(double));
    if (serve_engine(b, m, threads, isa_cap, 16, &e)) return 1;
    isa = mlstack_engine_kernels(e);
    t0 = mlstack_clock_seconds();
    while (next < n || active) {
        double now = mlstack_clock_seconds() - t0;
        while (next < n && arrive[next] <= now) {
            mlstack_request_desc d;
            int s = (int)(bench_rng(seed) % 5), pre = s < 4 ? sys_len : 0, user = 16 + (int)(bench_rng(seed) % 49), j;
            for (j = 0; j < pre; j++) prompt[j] = sys[s * sys_len + j];
            for (j = 0; j < user; j++) prompt[pre + j] = (int32_t)(bench_rng(seed) % (uint32_t)info->n_vocab);
            memset(&d, 0, sizeof d);
            d.prompt = prompt;
            d.n_prompt = pre + user;
            d.max_tokens = 16 + (int)(bench_rng(seed) % 49);
            d.ignore_eos = 1;
            d.on_token = serve_on_token;
            d.user = &rq[next];
            rq[next].t_submit = mlstack_clock_seconds();
            if (mlstack_engine_submit(e, &d, &ids[next], &err) != MLSTACK_OK) return cli_die("%s", err.message);
            next++;
        }
        if (mlstack_engine_step(e, &active) != MLSTACK_OK) return cli_die("%s", mlstack_engine_error(e));
        if (!active && next < n) { /* idle until the next arrival */
            double wait = arrive[next] - (mlstack_clock_seconds() - t0);
            if (wait > 0) cli_sleep(wait);
        }
    }
    t = mlstack_clock_seconds() - t0;
    mlstack_engine_cache_stats(e, &st);
    for (i = 0; i < n; i++) {
        int j;
        if (rq[i].t_first) ttft[n_ttft++] = rq[i].t_first - rq[i].t_submit;
        for (j = 0; j < rq[i].n_gaps; j++) itl[n_itl++] = rq[i].gaps[j];
    }
    {
        double hit = st.hit_tokens + st.computed_tokens
                         ? (double)st.hit_tokens / (double)(st.hit_tokens + st.computed_tokens)
                         : 0;
        double tps = (double)st.generated_tokens / t, t50 = pct(ttft, n_ttft, .5), t90 = pct(ttft, n_ttft, .9),
               t99 = pct(ttft, n_ttft, .99), i50 = pct(itl, n_itl, .5), i90 = pct(itl, n_itl, .9),
               i99 = pct(itl, n_itl, .99);
        if (b->json) {
            serve_head(b, type, isa, threads, "mixed");
            printf(",\"requests\":%d,\"rate\":%.3f,\"seconds\":%.3f,\"generated\":%llu,\"gen_tps\":%.3f,"
                   "\"ttft_ms_p50\":%.3f,\"ttft_ms_p90\":%.3f,\"ttft_ms_p99\":%.3f,\"itl_ms_p50\":%.3f,\"itl_ms_"
                   "p90\":%.3f,"
                   "\"itl_ms_p99\":%.3f,\"hit_tokens\":%llu,\"computed_tokens\":%llu,\"hit_rate\":%.4f,"
                   "\"preemptions\":%llu,"
                   "\"pages_evicted\":%llu}\n",
                   n, b->rate, t, (unsigned long long)st.generated_tokens, tps, 1e3 * t50, 1e3 * t90, 1e3 * t99,
                   1e3 * i50, 1e3 * i90, 1e3 * i99, (unsigned long long)st.hit_tokens,
                   (unsigned long long)st.computed_tokens, hit, (unsigned long long)st.preemptions,
                   (unsigned long long)st.pages_evicted);
        } else {
            printf("| %-6s | %-12s | %7d | mixed: %d requests at %.1f/s in %.1f s: %.1f generated t/s | TTFT ms p50 "
                   "%.1f p90 %.1f "
                   "p99 %.1f | ITL ms p50 %.1f p90 %.1f p99 %.1f | cache hit %.1f%% (%llu of %llu prompt tokens) |\n",
                   type, isa, threads, n, b->rate, t, tps, 1e3 * t50, 1e3 * t90, 1e3 * t99, 1e3 * i50, 1e3 * i90,
                   1e3 * i99, 100 * hit, (unsigned long long)st.hit_tokens,
                   (unsigned long long)(st.hit_tokens + st.computed_tokens));
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
    return 0;
}

/* The serving benchmarks asked for, in turn, on one engine each. */
static int bench_serve(const bench_opts *b, mlstack_model *m, const mlstack_model_info *info, int threads,
                       const char *isa_cap, const char *type) {
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    int rc = 0;
    int32_t *toks = (int32_t *)calloc(65536 + 256, sizeof(int32_t));
    if (!toks) return cli_die("%s", "out of memory");
    if (b->n_parallel) rc = serve_parallel(b, m, info, threads, isa_cap, type, toks, &seed);
    if (!rc && b->shared_prefix) rc = serve_shared_prefix(b, m, info, threads, isa_cap, type, toks, &seed);
    if (!rc && b->mixed) rc = serve_mixed(b, m, info, threads, isa_cap, type, &seed);
    free(toks);
    return rc;
}

/* Measures the read bandwidth for each thread count and all CPUs (for the roofline) when
   --bw-mib asks; prints the CPU and those rates unless the output is JSON. Returns 0, or the
   error when the buffer cannot be had. */
static int bench_bandwidth(const bench_opts *b, const char *cpu, int n_cpus, double *bw, double *bw_all,
                           double *bw_ref) {
    int ti;
    if (b->bw_mib > 0) {
        size_t bytes = (size_t)b->bw_mib << 20;
        unsigned char *buf = (unsigned char *)malloc(bytes);
        if (!buf) return cli_die("%s", "no memory for the bandwidth buffer (try --bw-mib 256)");
        memset(buf, 1, bytes); /* touch every page before timing */
        for (ti = 0; ti < b->n_threads; ti++) bw[ti] = measure_bandwidth(buf, bytes, b->threads[ti]);
        *bw_all = measure_bandwidth(buf, bytes, n_cpus);
        free(buf);
        for (ti = 0, *bw_ref = *bw_all; ti < b->n_threads; ti++)
            if (bw[ti] > *bw_ref) *bw_ref = bw[ti];
    }
    if (!b->json) {
        printf("cpu: %s\n", cpu);
        for (ti = 0; ti < b->n_threads && b->bw_mib > 0; ti++)
            printf("read bandwidth, %d thread%s: %.1f GB/s (best of 5 passes over %d MiB, %d-byte loads)\n",
                   b->threads[ti], b->threads[ti] > 1 ? "s" : "", bw[ti], b->bw_mib, bw_width());
        if (b->bw_mib > 0)
            printf(
                "read bandwidth, all %d CPUs: %.1f GB/s; the roofline divides by the best, %.1f GB/s (the machine's)\n",
                n_cpus, *bw_all, *bw_ref);
    }
    return 0;
}

/* Each prompt (pp) and generation (tg) test at one depth on engine e: a warm-up, b->reps timed
   runs and a line of results (and a profiled run with --profile). Returns 1 when a run failed. */
static int bench_tests(const bench_opts *b, mlstack_engine *e, const mlstack_model_info *info, const char *type,
                       const char *ranks_s, const mlstack_rank_info *r0, int n_threads, int ii, int n_configs,
                       mlstack_batch_row *rows, int depth, int32_t dseq, uint64_t tok_bytes, double bw_ref,
                       uint64_t llc, int *over) {
    int test, rc = 0;
    for (test = 0; test < b->n_pp + b->n_tg; test++) {
        int is_tg = test >= b->n_pp, n_prompt = is_tg ? 0 : b->pp[test], n_gen = is_tg ? b->tg[test - b->n_pp] : 0;
        int n_tok = is_tg ? n_gen : n_prompt, rep;
        double tps[1000], med, roof = 0, t_all = 0, kib = 0, wait = 0;
        char name[48];
        if (n_tok == 0) continue;
        snprintf(name, sizeof name, "%s%d", is_tg ? "tg" : "pp", n_tok);
        if (depth) snprintf(name + strlen(name), sizeof name - strlen(name), "@d%d", depth);
        if (bench_once(e, info->n_vocab, n_prompt, n_gen, rows, dseq, depth) < 0) { /* warm-up */
            fprintf(stderr, "mlstack: %s\n", mlstack_engine_error(e));
            rc = 1;
            break;
        }
        x_bytes = 0, x_wait = 0;
        for (rep = 0; rep < b->reps; rep++) {
            double t = bench_once(e, info->n_vocab, n_prompt, n_gen, rows, dseq, depth);
            tps[rep] = t > 0 ? n_tok / t : 0;
            t_all += t > 0 ? t : 0;
        }
        kib = (double)x_bytes / 1024.0 / ((double)b->reps * n_tok); /* over the timed parts */
        wait = t_all > 0 ? x_wait / t_all : 0;
        qsort(tps, (size_t)b->reps, sizeof tps[0], cmp_double);
        med = b->reps % 2 ? tps[b->reps / 2] : 0.5 * (tps[b->reps / 2 - 1] + tps[b->reps / 2]);
        /* (at a depth, decode reads the KV too: no weight roofline) */
        if (is_tg && !depth && bw_ref > 0 && tok_bytes) roof = med / (bw_ref * 1e9 / (double)tok_bytes);
        if (b->json) {
            printf("{%s", b->shape ? "\"shape\":" : "\"model\":");
            json_str(stdout, b->shape ? b->shape : b->model);
            printf(",\"ranks\":%d,\"threads_per_rank\":%d,\"stages\":%d,"
                   "\"exchanged_kib_per_token\":%.3f,\"wait_fraction\":%.4f",
                   mlstack_engine_n_ranks(e), r0->n_threads, r0->n_stages, kib, wait);
            printf(",\"type\":\"%s\",\"isa\":\"%s\",\"threads\":%d,\"n_prompt\":%d,\"n_gen\":%d,\"test\":"
                   "\"%s\","
                   "\"depth\":%d,\"reps\":%d,\"tps_median\":%.3f,\"tps_min\":%.3f,\"tps_max\":%.3f,"
                   "\"spread\":%.4f,\"weight_bytes_per_token\":%llu,\"bandwidth_gbs\":%.2f",
                   type, mlstack_engine_kernels(e), n_threads, n_prompt, n_gen, name, depth, b->reps, med, tps[0],
                   tps[b->reps - 1], med > 0 ? (tps[b->reps - 1] - tps[0]) / med : 0.0, (unsigned long long)tok_bytes,
                   bw_ref);
            if (is_tg && roof > 0)
                printf(",\"roofline_tps\":%.3f,\"roofline_fraction\":%.4f", bw_ref * 1e9 / (double)tok_bytes, roof);
            if (is_tg && roof > 1)
                printf(",\"roofline_note\":\"%s\"", llc && tok_bytes <= llc ? "weights fit in the last-level cache"
                                                                            : "faster than the bandwidth measured");
            printf("}\n");
        } else {
            char roof_s[16] = "";
            if (roof > 0) snprintf(roof_s, sizeof roof_s, roof > 1 ? "%.1f%%*" : "%.1f%%", 100 * roof);
            if (roof > 1) *over = 1;
            printf("| %-6s | %-12s | %7d | %-8s | %-6s | %10.2f | %10.2f | %10.2f | %5.1f%% | %9.1f | "
                   "%5.1f%% | %8s |\n",
                   type, mlstack_engine_kernels(e), n_threads, ranks_s, name, med, tps[0], tps[b->reps - 1],
                   med > 0 ? 100 * (tps[b->reps - 1] - tps[0]) / med : 0.0, kib, 100 * wait, roof_s);
        }
        fflush(stdout);
        if (b->profile) { /* one more run, profiled, not counted */
            char path[1024];
            if (n_configs == 1) snprintf(path, sizeof path, "%s", b->profile);
            else
                snprintf(path, sizeof path, "%s-%s-t%d-%s%s%s.json", b->profile, type, n_threads, name,
                         b->n_isa > 1 ? "-" : "", b->n_isa > 1 ? b->isa[ii] : "");
            fprintf(stderr, "\n== %s, %d thread%s, %s ==\n", type, n_threads, n_threads > 1 ? "s" : "", name);
            if (mlstack_engine_profile_start(e, NULL) != MLSTACK_OK ||
                bench_once(e, info->n_vocab, n_prompt, n_gen, rows, dseq, depth) < 0 ||
                cli_report_profile(e, path) != 0)
                rc = 1;
            mlstack_engine_profile_stop(e);
        }
    }
    return rc;
}

/* Why a decode rate above the memory roofline is possible: the weights fit in the last-level
   cache, or the bandwidth test under-measured. */
static void bench_over_note(uint64_t tok_bytes, uint64_t llc) {
    printf("* above 100%% of the memory roofline: ");
    if (llc && tok_bytes <= llc)
        printf("the %.1f MiB one token reads fit in the %.0f MiB last-level cache, so decode reads them from "
               "the cache, "
               "not from memory\n",
               tok_bytes / 1048576.0, llc / 1048576.0);
    else
        printf("decode read its %.1f MiB faster than the bandwidth test streamed (a noisy or throttled "
               "bandwidth run, or "
               "cache reuse the test does not see)\n",
               tok_bytes / 1048576.0);
}

int cli_cmd_bench(int argc, char **argv) {
    bench_opts b;
    double bw[BENCH_MAX] = {0}, bw_all = 0, bw_ref = 0;
    int n_cpus = bw_cpus(), over = 0;
    uint64_t llc = llc_bytes();
    int r = parse_bench(argc, argv, &b), qi, ii, ti, k, rc = 0, max_p = 4, n_configs, header = 0, max_d = 0, max_g = 0;
    const mlstack_transport *tp = cli_transport();
    char cpu[256];
    if (r == 1) {
        fputs(BENCH_USAGE, stdout);
        return 0;
    }
    if (r) return r;
    if (tp) { /* mlstack-mpi: every rank runs the same engines; rank 0 reports */
        b.n_ranks = 1, b.ranks[0] = 0;
        b.bw_mib = 0; /* ranks measuring at once would measure each other */
        if (tp->rank != 0 && !freopen("/dev/null", "w", stdout)) return 1;
    }
    for (k = 0; k < b.n_pp; k++) max_p = b.pp[k] > max_p ? b.pp[k] : max_p;
    for (k = 0; k < b.n_tg; k++) max_g = b.tg[k] > max_g ? b.tg[k] : max_g;
    for (k = 0; k < b.n_depth; k++) max_d = b.depth[k] > max_d ? b.depth[k] : max_d;
    if (max_d && max_p < 512) max_p = max_d < 512 ? max_d : 512; /* the depth is filled in evals of max_p rows */
    n_configs = b.n_quant * b.n_isa * b.n_threads * b.n_ranks * (b.n_pp + b.n_tg) * b.n_depth;
    mlstack_cpu_report(cpu, sizeof cpu);
    if (b.n_parallel || b.shared_prefix || b.mixed) b.bw_mib = 0; /* the serving modes do not use it */
    if ((r = bench_bandwidth(&b, cpu, n_cpus, bw, &bw_all, &bw_ref)) != 0) return r;
    for (qi = 0; qi < b.n_quant; qi++) {
        mlstack_model *m;
        mlstack_model_info info;
        mlstack_error err;
        uint64_t tok_bytes;
        char type[16];
        double t_load = mlstack_clock_seconds();
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
        t_load = mlstack_clock_seconds() - t_load;
        mlstack_model_get_info(m, &info);
        lower(type, info.weight_format, sizeof type);
        tok_bytes = mlstack_model_decode_bytes(m);
        if (!b.json) {
            if (!header++)
                printf("%s %s: %s, %d layers, hidden %d, %.1f M parameters\n", b.shape ? "shape" : "model",
                       b.shape ? b.shape : b.model, info.architecture, info.n_layers, info.n_embd, info.n_params / 1e6);
            printf("type %s: %.1f MiB of weights read per generated token (loaded in %.1f s)\n", type,
                   tok_bytes / 1048576.0, t_load);
        }
        for (ii = 0; ii < b.n_isa; ii++) {
            for (ti = 0; ti < b.n_threads * b.n_ranks; ti++) {
                mlstack_engine *e;
                mlstack_rank_info r0;
                char ranks_s[32];
                int rk_n = b.ranks[ti % b.n_ranks];
                if (b.n_parallel || b.shared_prefix || b.mixed) {
                    if (ti % b.n_ranks == 0 &&
                        bench_serve(&b, m, &info, b.threads[ti / b.n_ranks], b.isa[ii], type) != 0)
                        rc = 1;
                    continue;
                }
                mlstack_engine_desc ed;
                mlstack_batch_row *rows = (mlstack_batch_row *)calloc((size_t)max_p, sizeof *rows);
                int di, ctx = max_d + (max_p > max_g + 4 ? max_p : max_g + 4);
                memset(&ed, 0, sizeof ed);
                ed.n_threads = b.threads[ti / b.n_ranks];
                ed.n_ranks = rk_n;
                if (rk_n == 1) ed.n_stages = 1; /* not MLSTACK_STAGES: one rank is one stage */
                ed.transport = tp;
                ed.max_seqs = 1;
                ed.max_batch_tokens = max_p;
                if (ctx > 4096) /* past the default pool (4096 tokens): room for the deepest test, f32 KV at most */
                    ed.kv_mem = (uint64_t)(ctx + 256) * (uint64_t)info.n_layers * 2u * (uint64_t)info.n_kv_heads *
                                (uint64_t)info.head_dim * 4u;
                ed.isa = b.isa[ii];
                ed.bf16_activations = b.bf16_dot;
                ed.kv_type_k = b.ctk, ed.kv_type_v = b.ctv;
                if (!rows || cli_engine_init(m, &ed, b.gpu, &e, &err) != MLSTACK_OK) {
                    fprintf(stderr, "mlstack: %s\n", rows ? err.message : "out of memory");
                    free(rows);
                    mlstack_model_close(m);
                    return 1;
                }
                if (tp && mlstack_engine_rank(e) != 0) { /* serve rank 0's steps until it frees its engine */
                    if (mlstack_engine_follow(e) != MLSTACK_OK) {
                        fprintf(stderr, "mlstack: %s\n", mlstack_engine_error(e));
                        rc = 1;
                    }
                    mlstack_engine_free(e);
                    free(rows);
                    continue;
                }
                if (mlstack_model_decode_bytes(m) != tok_bytes) { /* the engine packed KQ panels */
                    tok_bytes = mlstack_model_decode_bytes(m);
                    if (!b.json)
                        printf(
                            "type %s: %.1f MiB of weights read per generated token from the panels packed at start\n",
                            type, tok_bytes / 1048576.0);
                }
                mlstack_engine_rank_info(e, 0, &r0);
                snprintf(ranks_s, sizeof ranks_s, "%dx%d", mlstack_engine_n_ranks(e), r0.n_threads);
                if (r0.n_stages > 1)
                    snprintf(ranks_s + strlen(ranks_s), sizeof ranks_s - strlen(ranks_s), " %dst", r0.n_stages);
                if (!b.json && ii + ti + qi == 0) {
                    printf("\n| %-6s | %-12s | %7s | %-8s | %-6s | %10s | %10s | %10s | %6s | %9s | %6s | %8s |\n",
                           "type", "kernels", "threads", "ranks", "test", "t/s median", "min", "max", "spread",
                           "KiB/token", "wait", "roofline");
                    printf(
                        "|--------|--------------|---------|----------|--------|------------|------------|-----------"
                        "-|--------|-----------|--------|----------|\n");
                }
                for (di = 0; di < b.n_depth; di++) {
                    int depth = b.depth[di];
                    int32_t dseq = -1;
                    if (depth && (mlstack_engine_seq_new(e, &dseq) != MLSTACK_OK ||
                                  bench_fill(e, dseq, info.n_vocab, depth, max_p, rows) != 0)) {
                        fprintf(stderr, "mlstack: filling %d tokens of context: %s\n", depth, mlstack_engine_error(e));
                        rc = 1;
                        break;
                    }
                    if (bench_tests(&b, e, &info, type, ranks_s, &r0, ed.n_threads, ii, n_configs, rows, depth, dseq,
                                    tok_bytes, bw_ref, llc, &over))
                        rc = 1;
                    if (depth) mlstack_engine_seq_free(e, dseq);
                }
                mlstack_engine_free(e);
                free(rows);
            }
        }
        mlstack_model_close(m);
        if (over && !b.json) bench_over_note(tok_bytes, llc), over = 0; /* a share above 100% says why */
    }
    return rc;
}
