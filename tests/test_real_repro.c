/* Reproducible logits: the same bits on every kernel path (the canonical arithmetic of
   >>kernels). For every fixture model and the real SmolLM2, every weight type (the stored one,
   F16 and BF16 made from F32, Q8_0, Q4_1) and every KV type, a prompt's logits at every
   position and those of greedy decode steps are hashed (FNV-1a over the float bits) on each
   path this CPU runs: scalar, avx2, avx512 (no VNNI), avx512+vnni on x86-64; scalar, neon,
   neon+dotprod on AArch64. All paths must give one hash per (model, weight type, KV type, run);
   a path the CPU lacks is a SKIP with the reason. A path whose code for float weights is another
   path's (avx512 without VNNI, neon+dotprod: float_twin) runs the quantized types only. The run is also repeated with 2 threads and a
   batch mate (another sequence interleaved in every batch): the same hash.
   Across machines: the x86-64 build of this test writes its hashes to build/repro_hashes.txt
   (the build directory's; MLSTACK_REPRO_HASHES overrides the path); the AArch64 build (run under qemu by make test)
   and the build made with GNU C mode and -ffp-contract=fast (the nothreads flavour, with every
   x86 path compiled in) read that file and must find the same hash for every key they computed,
   SmolLM2's included (every SmolLM2 key they computed must be in the file). No hash is committed.
   Cost (want() below): the fixtures run every combination; SmolLM2 runs an 84-token prompt and
   64 greedy steps on the SIMD paths (default KV type), and a 6-token run (4 prompt tokens, 2
   steps) for every KV type on every path including scalar (there: the default KV type, the
   stored and the quantized weights), whose fma chains are slow where fmaf is a library call.
   About 45 s of CPU on x86-64 (Zen 4). The reading builds run the fixtures and
   SmolLM2's short run only, in its stored F32 weights and in Q8_0, default KV type, on the
   paths smol_short_only names (MLSTACK_REPRO_SMOLLM2=1: everything the x86-64 build runs; 0: no SmolLM2).
   On AArch64 (under qemu) the fixtures' KV types other than the default run on the best path
   only, and under qemu (MLSTACK_TEST_QEMU) for the stored weight type only, as the 2-thread run
   with a batch mate; SmolLM2's Q8_0 run on the best path only (want()). */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include <dirent.h>

#define MAX_PATHS 7
#define MAX_KEYS 4096 /* keys recorded; more is a failure, not a silent drop */

typedef struct repro_path {
    const char *name; /* kernel table name */
    const char *cap;  /* engine isa cap that packs weights as this table reads them */
} repro_path;

static const repro_path all_paths[MAX_PATHS] = {
    {"scalar", "scalar"},       {"avx2", "avx2"}, {"avx512", "avx512"},    {"avx512+vnni", "avx512"},
    {"avx512+vnni+amx", "amx"}, {"neon", "neon"}, {"neon+dotprod", "neon"}};

/* MLSTACK_REPRO_HASHES, else repro_hashes.txt in the build directory: the parent of the
   binary's flavour directory ($(B)/tests/, $(B)/nothreads/, $(B)/aarch64/). */
static char hash_path[1024];
static const char *hash_file(void) {
    const char *p = getenv("MLSTACK_REPRO_HASHES");
    return p && *p ? p : hash_path;
}
static void set_hash_path(const char *argv0) {
    const char *slash = strrchr(argv0, '/');
    int n = slash ? (int)(slash - argv0) : 1;
    snprintf(hash_path, sizeof hash_path, "%.*s/../repro_hashes.txt", n, slash ? argv0 : ".");
}

/* The kernel table of a path if this build has it and this CPU runs it; else NULL and why
   (the build left it out, or the CPU lacks it). */
static const mlstack__kernels *path_kernels(const repro_path *p, const char *report, const char **why) {
    const mlstack__kernels *best = mlstack__kernels_select(mlstack__isa_parse(p->cap), 0), *k;
    const char *word = strcmp(p->name, "neon+dotprod") == 0 ? "neon+dotprod"
                       : strcmp(p->cap, "avx512") == 0      ? "avx512"
                                                            : p->cap;
    if (strcmp(p->name, "scalar") == 0) return mlstack__kernels_named("scalar");
    if (strcmp(best->name, p->name) == 0) return best;
    k = mlstack__kernels_named(p->name); /* a lower variant the selection passes over (no VNNI, no dotprod) */
    if (k && strncmp(best->name, p->name, strlen(p->name)) == 0) return k;
    *why = !tl_isa_compiled(report, word) ? "not compiled into this build (another architecture's, or left out)"
                                          : "compiled in, but this CPU lacks it";
    return NULL;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ b[i]) * 1099511628211ull;
    return h;
}

/* The computed hashes, by key "model wtype kv run". */
static char keys[MAX_KEYS][96];
static uint64_t hashes[MAX_KEYS];
static int n_keys;

static void record(const char *key, uint64_t h, const char *path) {
    int i;
    for (i = 0; i < n_keys; i++)
        if (strcmp(keys[i], key) == 0) {
            CHECKF(hashes[i] == h, "%s: path %s gives %016llx, an earlier path %016llx", key, path,
                   (unsigned long long)h, (unsigned long long)hashes[i]);
            return;
        }
    if (n_keys == MAX_KEYS) { /* a key dropped here would be missing from the file the other builds check */
        CHECKF(0, "%s: more than MAX_KEYS (%d) hashes; raise it", key, MAX_KEYS);
        return;
    }
    snprintf(keys[n_keys], sizeof keys[0], "%s", key);
    hashes[n_keys++] = h;
}

static int argmax(const float *x, int n) {
    int i, b = 0;
    for (i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* Hash of the logits of a prompt (every position) and `steps` greedy decode steps, run on its
   own, or (mate) with a second sequence interleaved in every batch. -1 on an engine error. */
static int run_hash(mlstack_engine *e, const int32_t *ids, int n, int steps, int n_vocab, int mate, uint64_t *out) {
    mlstack_batch_row *rows = (mlstack_batch_row *)malloc(sizeof *rows * (size_t)(2 * n + 2));
    int32_t sa = -1, sb = -1, tok_a = 0, tok_b = 0;
    uint64_t h = 1469598103934665603ull;
    int i, nr = 0, s, ok = 1;
    if (!rows || mlstack_engine_seq_new(e, &sa) != MLSTACK_OK ||
        (mate && mlstack_engine_seq_new(e, &sb) != MLSTACK_OK)) {
        free(rows);
        return -1;
    }
    for (i = 0; i < n; i++) {
        if (mate)
            rows[nr].seq = sb, rows[nr].pos = i, rows[nr].token = ids[(i * 7 + 3) % n], rows[nr].want_logits = 1, nr++;
        rows[nr].seq = sa, rows[nr].pos = i, rows[nr].token = ids[i], rows[nr].want_logits = 1, nr++;
    }
    for (s = 0; ok && s <= steps; s++) {
        int ra = -1;
        if (s > 0) { /* one decode row each */
            nr = 0;
            if (mate)
                rows[nr].seq = sb, rows[nr].pos = n + s - 1, rows[nr].token = tok_b, rows[nr].want_logits = 1, nr++;
            rows[nr].seq = sa, rows[nr].pos = n + s - 1, rows[nr].token = tok_a, rows[nr].want_logits = 1, nr++;
        }
        if (mlstack_engine_eval(e, rows, nr) != MLSTACK_OK) {
            printf("eval: %s\n", mlstack_engine_error(e));
            ok = 0;
            break;
        }
        for (i = 0; i < nr; i++) {
            const float *lg = mlstack_engine_logits(e, i);
            if (rows[i].seq == sa) {
                h = fnv(h, lg, sizeof(float) * (size_t)n_vocab);
                ra = i;
            } else {
                tok_b = argmax(lg, n_vocab);
            }
        }
        tok_a = argmax(mlstack_engine_logits(e, ra), n_vocab);
    }
    mlstack_engine_seq_free(e, sa);
    if (mate) mlstack_engine_seq_free(e, sb);
    free(rows);
    *out = h;
    return ok ? 0 : -1;
}

/* Projections converted from F32 to F16 or BF16 (round to nearest even), in buffers of ours:
   the same model with its weights stored in that type. Returns the buffers to free. */
static void **convert_weights(mlstack_model *m, mlstack_dtype dt, int *n_bufs) {
    void **bufs = (void **)calloc((size_t)(m->cfg.n_layers + 1) * MLSTACK__MAX_LAYER_WEIGHTS, sizeof(void *));
    int l, i, n = 0;
    for (l = -1; l < m->cfg.n_layers; l++) {
        mlstack__weight *ws[MLSTACK__MAX_LAYER_WEIGHTS];
        int nw = mlstack__layer_weights(m, l, ws);
        for (i = 0; i < nw; i++) {
            mlstack__weight *w = ws[i];
            size_t cnt = (size_t)w->n_out * (size_t)w->n_in;
            unsigned char *d;
            if (w->wtype != MLSTACK__W_F32 || w->packed) continue;
            d = (unsigned char *)malloc(cnt * 2);
            mlstack__from_f32(dt, (const float *)w->data, d, cnt);
            w->data = d, w->wtype = (int)dt, w->row_bytes = (size_t)w->n_in * 2;
            bufs[n++] = d;
        }
    }
    *n_bufs = n;
    return bufs;
}

static const char *kv_names[] = {"kvF16", "kvBF16", "kvF32"};
static const mlstack_kv_type kv_types[] = {MLSTACK_KV_F16, MLSTACK_KV_BF16, MLSTACK_KV_F32};

typedef struct run_spec {
    const char *name; /* "long", "short", "p24" */
    const int32_t *ids;
    int n, steps;
    int cheap; /* 0: SmolLM2's long run, limited to keep make test short (see want()) */
} run_spec;

/* A path whose table runs, for float weights (F32, F16, BF16), exactly the functions of another
   path in the list: avx512 without VNNI is avx512+vnni's code but for the Q8_0/Q4_1/GGML
   matmul, neon+dotprod is neon's but for the same (mlstack__matmul_avx512_novnni,
   mlstack__matmul_neon_dot). Such a path is not run for float weights: it would hash the same
   calls again. test_kernels checks each table's entries, these two matmuls included, for every
   weight format. */
static int float_twin(const char *path, const repro_path *paths, int n_paths) {
    const char *twin = strcmp(path, "avx512") == 0 ? "avx512+vnni" : strcmp(path, "neon+dotprod") == 0 ? "neon" : NULL;
    int p;
    for (p = 0; twin && p < n_paths; p++)
        if (strcmp(paths[p].name, twin) == 0) return 1;
    return 0;
}

/* Which combinations run. The best path of a weight type is the last one it runs on. Fixtures
   and cheap runs: every path and KV type; the batch mate with 2 threads on the best path.
   SmolLM2's long run: the default KV type, the SIMD paths (scalar, whose fma chains call the C
   library's fmaf on x86-64, does the short run); the batch mate with 2 threads for Q8_0. The
   short SmolLM2 run skips scalar for KV types other than the default (the conversions it adds are
   exact and the fixtures cover them) and for the F16 and BF16 weights made from F32: scalar
   widens each row to f32 (mlstack__to_f32, bit for bit in test_kernels) and runs its F32 dot
   product, which the stored F32 weights' short run checks here, and the fixtures run scalar on
   those types (6.6 s of CPU; the SIMD paths still give those keys). */
/* 1 in the reading builds by default: SmolLM2's short run only (default KV type, no mate), in
   the stored weights and Q8_0 (check_all_types); the F32 weights not, on AArch64, on scalar
   (under qemu, whose fma is a library call, 18 s of the run's 40; the fixtures run the scalar
   float code there) */
static int smol_short_only;
/* Under qemu (tl_emulated: make test's AArch64 run), where every run costs 10 to 50 times its
   native CPU time: the weight types made from the stored one (F16, BF16, Q8_0, Q4_1) run each
   path with the default KV type, alone (keys still compared with x86-64's); the other KV types and
   the 2 threads with a batch mate run for the stored type only (on the best path, as below). Those
   run the same attention, KV conversion and thread-split code whatever the weights' type, and
   max/test_kernels compares every NEON op with the scalar reference's bits over any split of its
   output range and any batch; x86-64 runs every combination. SmolLM2's Q8_0 run takes the best
   path only: the fixtures' Q8_0 copies take the others. in_stored: check_model is running the
   model's stored weight type. */
static int emulated, in_stored;
static int want(const run_spec *r, int smol, const char *path, int is_best, int kv, int mate, const char *wname) {
    int scalar = strcmp(path, "scalar") == 0;
    if (mate && !is_best) return 0;
#if defined(__aarch64__)
    /* under qemu: the KV types other than the default on the best path only (their keys still
       compared with x86-64's); max/test_kernels compares every path's KV conversion and attention
       ops with the scalar reference's bits, in this build's flags */
    if (kv > 0 && !is_best) return 0;
#endif
    if (emulated && !in_stored && (kv > 0 || mate)) return 0;
    if (!smol) return 1;
    if (smol_short_only) {
#if defined(__aarch64__)
        if (wname[0] != 'Q' && scalar) return 0;
#endif
        if (emulated && !is_best) return 0;
        return r->cheap && kv == 0 && !mate;
    }
    if (r->cheap) return !(scalar && (kv > 0 || strcmp(wname, "F16") == 0 || strcmp(wname, "BF16") == 0));
    if (kv > 0 || scalar) return 0;
    return !mate || strcmp(wname, "Q8_0") == 0;
}

/* One model in one weight type: every path x KV type x run, plus 2 threads with a batch mate. */
static void check_model(const char *label, const char *dir, mlstack_dtype quant, mlstack_dtype convert,
                        const char *wname, const run_spec *runs, int n_runs, int n_kv, const repro_path *paths,
                        const mlstack__kernels **ks, int n_paths) {
    mlstack_model_desc md;
    mlstack_model *m = NULL;
    mlstack_error err;
    void **bufs = NULL;
    int n_bufs = 0, p, kv, r, i, n_vocab, best = n_paths - 1;
    memset(&md, 0, sizeof md);
    md.path = dir;
    md.quant = quant;
    if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK) {
        CHECKF(0, "%s %s: open: %s", label, wname, err.message);
        return;
    }
    if (convert != MLSTACK_DTYPE_F32) bufs = convert_weights(m, convert, &n_bufs);
    n_vocab = m->cfg.n_vocab;
    for (p = 0; p < n_paths; p++)
        if (!(wname[0] != 'Q' && float_twin(paths[p].name, paths, n_paths))) best = p;
    for (p = 0; p < n_paths; p++)
        for (kv = 0; kv < n_kv; kv++)
            for (i = 0; i < 2; i++) { /* i = 1: 2 threads and a batch mate */
                mlstack_engine_desc ed;
                mlstack_engine *e = NULL;
                int t, any = 0, smol = strcmp(label, "smollm2") == 0;
                if (i == 1 && kv > 0) continue; /* the default KV type is enough for that */
                if (wname[0] != 'Q' && float_twin(paths[p].name, paths, n_paths)) continue;
                for (r = 0; r < n_runs; r++) any |= want(&runs[r], smol, paths[p].name, p == best, kv, i, wname);
                if (!any) continue;
                memset(&ed, 0, sizeof ed);
                ed.n_threads = i ? 2 : 1;
                ed.kv_type = kv_types[kv];
                ed.isa = paths[p].cap;
                if (mlstack_engine_init(m, &ed, &e, &err) != MLSTACK_OK) {
                    CHECKF(0, "%s %s: engine: %s", label, wname, err.message);
                    continue;
                }
                e->k = ks[p]; /* the exact variant (avx512 without VNNI, neon without dotprod) */
                for (t = 0; t < e->n_local; t++) e->ranks[t].k = ks[p];
                for (r = 0; r < n_runs; r++) {
                    char key[96];
                    uint64_t h;
                    double t0 = mlstack_clock_seconds();
                    if (!want(&runs[r], smol, paths[p].name, p == best, kv, i, wname)) continue;
                    snprintf(key, sizeof key, "%s %s %s %s", label, wname, kv_names[kv], runs[r].name);
                    if (run_hash(e, runs[r].ids, runs[r].n, runs[r].steps, n_vocab, i, &h) != 0) {
                        CHECKF(0, "%s on %s: the run failed", key, paths[p].name);
                        continue;
                    }
                    record(key, h, i ? "2 threads + batch mate" : paths[p].name);
                    if (getenv("REPRO_TIME"))
                        printf("  %-40s %-12s %s %.2f s\n", key, paths[p].name, i ? "t2+mate" : "",
                               mlstack_clock_seconds() - t0);
                    if (getenv("REPRO_VERBOSE"))
                        printf("  %-40s %-12s %s %016llx\n", key, paths[p].name, i ? "t2+mate" : "",
                               (unsigned long long)h);
                }
                mlstack_engine_free(e);
            }
    mlstack_model_close(m);
    for (i = 0; i < n_bufs; i++) free(bufs[i]);
    free(bufs);
}

/* Every weight type of one model: the stored type, F16/BF16 made from F32, Q8_0, Q4_1. */
static void check_all_types(const char *label, const char *dir, const run_spec *runs, int n_runs, int n_kv,
                            const repro_path *paths, const mlstack__kernels **ks, int n_paths) {
    mlstack_model_desc md;
    mlstack_model *m = NULL;
    mlstack_error err;
    int f32, q_ok;
    memset(&md, 0, sizeof md);
    md.path = dir;
    if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: open: %s", label, err.message);
        return;
    }
    f32 = m->layers[0].wq.wtype == MLSTACK__W_F32;
    q_ok = m->cfg.n_embd % 32 == 0;
    {
        const char *stored = mlstack_dtype_name((mlstack_dtype)m->layers[0].wq.wtype);
        char wname[32];
        snprintf(wname, sizeof wname, "%s", stored);
        mlstack_model_close(m);
        in_stored = 1;
        check_model(label, dir, MLSTACK_DTYPE_F32, MLSTACK_DTYPE_F32, wname, runs, n_runs, n_kv, paths, ks, n_paths);
        in_stored = 0;
    }
    if (smol_short_only && strcmp(label, "smollm2") == 0) {
        check_model(label, dir, MLSTACK_DTYPE_Q8_0, MLSTACK_DTYPE_F32, "Q8_0", runs, n_runs, n_kv, paths, ks, n_paths);
        return;
    }
    if (f32) {
        check_model(label, dir, MLSTACK_DTYPE_F32, MLSTACK_DTYPE_F16, "F16", runs, n_runs, n_kv, paths, ks, n_paths);
        check_model(label, dir, MLSTACK_DTYPE_F32, MLSTACK_DTYPE_BF16, "BF16", runs, n_runs, n_kv, paths, ks, n_paths);
    }
    if (q_ok) {
        check_model(label, dir, MLSTACK_DTYPE_Q8_0, MLSTACK_DTYPE_F32, "Q8_0", runs, n_runs, n_kv, paths, ks, n_paths);
        check_model(label, dir, MLSTACK_DTYPE_Q4_1, MLSTACK_DTYPE_F32, "Q4_1", runs, n_runs, n_kv, paths, ks, n_paths);
    }
}

/* Writer (x86-64 plain build): all hashes to the file. Readers: every key found there must
   match; keys the file lacks are counted. */
static void cross_check(int writer) {
    const char *path = hash_file();
    int i;
    if (writer) {
        FILE *f = fopen(path, "w");
        CHECKF(f != NULL, "cannot write %s", path);
        if (!f) return;
        for (i = 0; i < n_keys; i++) fprintf(f, "%s %016llx\n", keys[i], (unsigned long long)hashes[i]);
        fclose(f);
        printf("wrote %d hashes to %s\n", n_keys, path);
    } else {
        char *txt = tl_read(path, NULL);
        int found = 0, smol = 0, smol_found = 0;
        if (!txt) {
            SKIP("no x86-64 hashes in %s to compare with (the plain x86-64 test_real_repro writes them)", path);
            return;
        }
        for (i = 0; i < n_keys; i++) {
            char *at = strstr(txt, keys[i]);
            unsigned long long h;
            int is_smol = strncmp(keys[i], "smollm2 ", 8) == 0;
            smol += is_smol;
            while (at && (at > txt && at[-1] != '\n')) at = strstr(at + 1, keys[i]);
            if (!at || sscanf(at + strlen(keys[i]), " %llx", &h) != 1) {
                /* SmolLM2's keys are all among the x86-64 build's: a missing one is a failure */
                CHECKF(!is_smol, "%s: computed here, but not in %s", keys[i], path);
                continue;
            }
            found++;
            smol_found += is_smol;
            CHECKF(h == hashes[i], "%s: %016llx here, %016llx on x86-64 (%s)", keys[i], (unsigned long long)hashes[i],
                   h, path);
        }
        printf("compared %d of %d hashes with %s (SmolLM2: %d of %d)\n", found, n_keys, path, smol_found, smol);
        CHECKF(found > 0, "no key in common with %s", path);
        free(txt);
    }
}

int main(int argc, char **argv) {
    repro_path paths[MAX_PATHS];
    const mlstack__kernels *ks[MAX_PATHS];
    int n_paths = 0, i, n_simd = 0;
    int32_t fix_ids[24], smol_long[128], smol_short[4];
    char report[256];
    DIR *dir;
    struct dirent *de;
    const char *names[128];
    int n_names = 0, writer;
#if defined(__aarch64__) || defined(MLSTACK_NO_THREADS)
    writer = 0;
#else
    writer = 1;
#endif
    set_hash_path(argc > 0 ? argv[0] : "./x");
    emulated = tl_emulated();
    if (emulated)
        SKIP("under qemu-user (MLSTACK_TEST_QEMU): the other KV types and the 2-thread batch mate for the "
             "stored weight type only, SmolLM2's Q8_0 on the best path only (x86-64 runs them all)");
    mlstack__isa_report(report, sizeof report);
    printf("%s\n", report);
    for (i = 0; i < MAX_PATHS; i++) {
        const char *why = "";
        const mlstack__kernels *k = path_kernels(&all_paths[i], report, &why);
        if (!k) {
            SKIP("path %s: %s", all_paths[i].name, why);
            continue;
        }
        paths[n_paths] = all_paths[i];
        ks[n_paths++] = k;
        n_simd += strcmp(k->name, "scalar") != 0;
        printf("path %s\n", k->name);
    }
    for (i = 0; i < 24; i++) fix_ids[i] = (int32_t)((i * 37 + 11) % 97);
    /* the fixtures: every model folder (the Llama-like ones and the other families), 24 prompt
       tokens and 8 steps on every path */
    {
        static const char *const roots[2] = {"tests/fixtures/models", "tests/fixtures/families"};
        int ri;
        for (ri = 0; ri < 2; ri++) {
            dir = opendir(roots[ri]);
            CHECKF(dir != NULL, "%s missing", roots[ri]);
            while (dir && (de = readdir(dir)) != NULL && n_names < 128)
                if (de->d_name[0] != '.') {
                    char rel[300];
                    snprintf(rel, sizeof rel, "%s/%s", ri ? "families" : "models", de->d_name);
                    names[n_names++] = strdup(rel);
                }
            if (dir) closedir(dir);
        }
    }
    for (i = 0; i < n_names; i++) { /* readdir order is arbitrary: sort for a stable report */
        int j;
        for (j = i + 1; j < n_names; j++)
            if (strcmp(names[j], names[i]) < 0) {
                const char *t = names[i];
                names[i] = names[j], names[j] = t;
            }
    }
    for (i = 0; i < n_names; i++) {
        char path[512];
        run_spec run = {"p24", fix_ids, 24, 8, 1};
        snprintf(path, sizeof path, "tests/fixtures/%s", names[i]);
        check_all_types(names[i], path, &run, 1, 3, paths, ks, n_paths);
        free((void *)names[i]);
    }
    /* SmolLM2: a long prompt on the SIMD paths, a short run on all */
    {
        const char *smol = "models/smollm2-135m-instruct";
        char cfg[512];
        FILE *f;
        const char *env = getenv("MLSTACK_REPRO_SMOLLM2");
        /* 0: none; 1: the short run (the reading builds' default); 2: everything (the writer's) */
        int want = env && *env ? (atoi(env) > 0 ? 2 : 0) : writer ? 2 : 1;
        smol_short_only = want == 1;
        snprintf(cfg, sizeof cfg, "%s/model.safetensors", smol);
        f = fopen(cfg, "rb");
        if (!f) {
            SKIP("SmolLM2 not found in %s (make model)", smol);
        } else if (!want) {
            fclose(f);
            SKIP("SmolLM2: not run (MLSTACK_REPRO_SMOLLM2=0)");
        } else {
            static const char text[] =
                "The history of the printing press begins in the fifteenth century, when Johannes Gutenberg combined "
                "movable metal type, oil-based ink and a wooden press adapted from winemaking. Within fifty years, "
                "printers in more than two hundred cities had produced millions of books, and the cost of copying a "
                "text "
                "fell so far that pamphlets, calendars and newspapers became part of daily life. Explain in a few "
                "sentences why this mattered for science.";
            mlstack_tokenizer *tok = NULL;
            size_t n_long = 0;
            run_spec runs[2];
            fclose(f);
            CHECK(mlstack_tokenizer_open(smol, &tok, NULL) == MLSTACK_OK);
            if (tok) {
                mlstack_tokenizer_encode(tok, text, strlen(text), 0, smol_long, 128, &n_long);
                mlstack_tokenizer_close(tok);
            }
            CHECKF(n_long >= 64, "SmolLM2 prompt: %d tokens", (int)n_long);
            for (i = 0; i < 4; i++) smol_short[i] = smol_long[i];
            runs[0].name = "long", runs[0].ids = smol_long, runs[0].n = (int)n_long, runs[0].steps = 64,
            runs[0].cheap = 0;
            runs[1].name = "short", runs[1].ids = smol_short, runs[1].n = 4, runs[1].steps = 2, runs[1].cheap = 1;
            if (n_long >= 64 && smol_short_only) {
                double t0 = mlstack_clock_seconds();
                printf("SmolLM2: 4 prompt tokens + 2 steps on %d paths, F32 and Q8_0\n", n_paths);
                check_all_types("smollm2", smol, runs, 2, 3, paths, ks, n_paths);
                printf("SmolLM2: %.1f s\n", mlstack_clock_seconds() - t0);
            } else if (n_long >= 64) {
                printf("SmolLM2: %d prompt tokens + 64 steps on %d SIMD paths, 4 + 2 on all\n", (int)n_long, n_simd);
                check_all_types("smollm2", smol, runs, 2, 3, paths, ks, n_paths);
            }
        }
    }
    cross_check(writer);
    if (getenv("REPRO_TABLE"))
        for (i = 0; i < n_keys; i++) printf("%-44s %016llx\n", keys[i], (unsigned long long)hashes[i]);
    return tl_finish();
}
