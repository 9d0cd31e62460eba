/* GGUF reader (>>gguf): images built in memory, valid and hostile; each hostile one must fail
   with a clear message naming the key or tensor, never crash (run it under ASan). The model
   and tokenizer parts read fixtures written by tools/make_gguf_fixtures.py with gguf-py. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include "fixture_eval.h"

#include <math.h>
#include <unistd.h>

/* ---- a tiny GGUF writer for building images ---- */
typedef struct gb {
    unsigned char *p;
    size_t n, cap;
} gb;
static void gb_put(gb *b, const void *s, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = (unsigned char *)realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void gb_u(gb *b, uint64_t v, int n) {
    unsigned char t[8];
    int i;
    for (i = 0; i < n; i++) t[i] = (unsigned char)(v >> (8 * i));
    gb_put(b, t, (size_t)n);
}
static void gb_str(gb *b, const char *s) {
    gb_u(b, strlen(s), 8);
    gb_put(b, s, strlen(s));
}
static void gb_pad(gb *b, size_t align) {
    while (b->n % align) gb_u(b, 0, 1);
}
static void gb_zeros(gb *b, size_t n) {
    while (n--) gb_u(b, 0, 1);
}
static void gb_head(gb *b, uint32_t version, uint64_t nt, uint64_t nkv) {
    gb_put(b, "GGUF", 4);
    gb_u(b, version, 4);
    gb_u(b, nt, 8);
    gb_u(b, nkv, 8);
}
static void kv_u32(gb *b, const char *k, uint32_t v) {
    gb_str(b, k);
    gb_u(b, 4, 4);
    gb_u(b, v, 4);
}
static void kv_str(gb *b, const char *k, const char *v) {
    gb_str(b, k);
    gb_u(b, 8, 4);
    gb_str(b, v);
}
static void tinfo(gb *b, const char *name, int nd, const uint64_t *ne, uint32_t type, uint64_t off) {
    int i;
    gb_str(b, name);
    gb_u(b, (uint64_t)nd, 4);
    for (i = 0; i < nd; i++) gb_u(b, ne[i], 8);
    gb_u(b, type, 4);
    gb_u(b, off, 8);
}

/* A valid image: 3 keys (one string array), two tensors (F32 [4, 2] and Q8_0 [32, 1]). */
static gb valid_image(uint32_t version) {
    gb b = {0, 0, 0};
    uint64_t ne1[2] = {4, 2}, ne2[2] = {32, 1};
    size_t i;
    gb_head(&b, version, 2, 3);
    kv_str(&b, "general.architecture", "llama");
    kv_u32(&b, "llama.block_count", 7);
    gb_str(&b, "tokenizer.ggml.tokens");
    gb_u(&b, 9, 4);
    gb_u(&b, 8, 4);
    gb_u(&b, 2, 8);
    gb_str(&b, "a");
    gb_str(&b, "bc");
    tinfo(&b, "x.weight", 2, ne1, 0, 0);
    tinfo(&b, "q.weight", 2, ne2, 8, 32);
    gb_pad(&b, 32);
    for (i = 0; i < 32 + 34; i++) gb_u(&b, i, 1);
    return b;
}

static void expect_fail(int line, const unsigned char *p, size_t n, mlstack_result want, const char *needle) {
    mlstack__gguf g;
    mlstack_error err;
    unsigned char *copy = (unsigned char *)malloc(n ? n : 1); /* exact size: ASan sees any overread */
    mlstack_result r;
    memcpy(copy, p, n);
    memset(&err, 0, sizeof err);
    r = mlstack__gguf_parse(&g, copy, n, "img", &err);
    CHECKF(r == want, "line %d: result %d, want %d (%s)", line, (int)r, (int)want, err.message);
    CHECKF(r == MLSTACK_OK || strstr(err.message, needle), "line %d: message \"%s\" lacks \"%s\"", line, err.message,
           needle);
    CHECKF(g.kvs == NULL && g.tensors == NULL && g.names == NULL, "line %d: failed parse left allocations", line);
    if (r == MLSTACK_OK) mlstack__gguf_close(&g);
    free(copy);
}

static void test_valid(void) {
    int v;
    for (v = 2; v <= 3; v++) {
        gb b = valid_image((uint32_t)v);
        mlstack__gguf g;
        mlstack_error err;
        int64_t x = 0;
        size_t len = 0;
        const char *s;
        const mlstack__gguf_kv *kv;
        const mlstack__gguf_tensor *t;
        mlstack_result r = mlstack__gguf_parse(&g, b.p, b.n, "img", &err);
        CHECKF(r == MLSTACK_OK, "valid v%d: %s", v, err.message);
        if (r != MLSTACK_OK) continue;
        CHECK(g.version == (uint32_t)v && g.n_kv == 3 && g.n_tensors == 2 && g.alignment == 32);
        s = mlstack__gguf_string(&g, "general.architecture", &len);
        CHECK(s && len == 5 && memcmp(s, "llama", 5) == 0);
        CHECK(mlstack__gguf_int(&g, "llama.block_count", 0, 100, &x, NULL) && x == 7);
        CHECK(!mlstack__gguf_int(&g, "llama.block_count", 0, 5, &x, &err) && strstr(err.message, "llama.block_count"));
        CHECK(!mlstack__gguf_int(&g, "general.architecture", 0, 5, &x, &err) &&
              strstr(err.message, "expected an integer"));
        kv = mlstack__gguf_find(&g, "tokenizer.ggml.tokens");
        CHECK(kv && kv->type == MLSTACK__GGUF_ARRAY && kv->elem_type == MLSTACK__GGUF_STRING && kv->n == 2);
        if (kv) {
            uint64_t pos = kv->off;
            s = mlstack__gguf_next_string(&g, &pos, &len);
            CHECK(len == 1 && s[0] == 'a');
            s = mlstack__gguf_next_string(&g, &pos, &len);
            CHECK(len == 2 && memcmp(s, "bc", 2) == 0);
        }
        t = mlstack__gguf_tensor_find(&g, "q.weight");
        CHECK(t && t->type == MLSTACK__GGML_Q8_0 && t->bytes == 34 && t->ne[0] == 32 && t->ne[1] == 1 &&
              t->offset == 32);
        CHECK(t && g.data + t->offset == b.p + g.data_off + 32 && g.data_off % 32 == 0);
        t = mlstack__gguf_tensor_find(&g, "x.weight");
        CHECK(t && t->bytes == 32 && t->n_dims == 2 && strcmp(t->name, "x.weight") == 0);
        mlstack__gguf_close(&g);
        free(b.p);
    }
}

/* Every prefix of a valid image is rejected (no overread: copies are exact-size). */
static void test_truncated(void) {
    gb b = valid_image(3);
    size_t n;
    int bad = 0;
    for (n = 0; n < b.n; n++) {
        mlstack__gguf g;
        mlstack_error err;
        unsigned char *copy = (unsigned char *)malloc(n ? n : 1);
        memcpy(copy, b.p, n);
        memset(&err, 0, sizeof err);
        if (mlstack__gguf_parse(&g, copy, n, "img", &err) == MLSTACK_OK || !err.message[0]) bad++;
        free(copy);
    }
    CHECKF(bad == 0, "%d truncated images were accepted or failed without a message", bad);
    free(b.p);
}

static void test_hostile(void) {
    gb b = {0, 0, 0};
    uint64_t ne[2] = {32, 2};
    expect_fail(__LINE__, (const unsigned char *)"GGML\3\0\0\0", 8, MLSTACK_ERR_FORMAT, "not a GGUF file");
    expect_fail(__LINE__, (const unsigned char *)"GGUF\0\0\0\1", 8, MLSTACK_ERR_UNSUPPORTED, "big-endian");
    expect_fail(__LINE__, (const unsigned char *)"GGUF\1\0\0\0", 8, MLSTACK_ERR_UNSUPPORTED, "version 1");
    /* counts far beyond the file */
    gb_head(&b, 3, 0, (uint64_t)1 << 60);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "key/value count");
    b.n = 0;
    gb_head(&b, 3, UINT64_MAX, 0);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "tensor count");
    /* a huge string length */
    b.n = 0;
    gb_head(&b, 3, 0, 1);
    gb_u(&b, UINT64_MAX, 8);
    gb_zeros(&b, 16);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT,
                "key at offset 24 is 18446744073709551615 bytes long, past the end");
    b.n = 0;
    gb_head(&b, 3, 0, 1);
    gb_u(&b, 2000, 8);
    gb_zeros(&b, 2100);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_LIMIT, "key at offset 24 is 2000 bytes long (at most 1024");
    b.n = 0;
    gb_head(&b, 3, 0, 1);
    kv_str(&b, "k", "v");
    memset(b.p + b.n - 9, 0xff, 8); /* the value's length */
    b.n -= 1;
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "value of k");
    /* a huge array */
    b.n = 0;
    gb_head(&b, 3, 0, 1);
    gb_str(&b, "arr");
    gb_u(&b, 9, 4);
    gb_u(&b, 6, 4);
    gb_u(&b, (uint64_t)1 << 62, 8);
    gb_u(&b, 0, 8);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "key arr: array of 4611686018427387904 f32");
    b.n = 0;
    gb_head(&b, 3, 0, 1);
    gb_str(&b, "arr");
    gb_u(&b, 9, 4);
    gb_u(&b, 8, 4);
    gb_u(&b, (uint64_t)1 << 40, 8);
    gb_u(&b, 0, 8);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "key arr: array of 1099511627776 strings");
    /* nested arrays, unknown types, bad bools, duplicate keys */
    b.n = 0;
    gb_head(&b, 3, 0, 1);
    gb_str(&b, "arr");
    gb_u(&b, 9, 4);
    gb_u(&b, 9, 4);
    gb_u(&b, 0, 8);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "key arr: array element type 9");
    b.n = 0;
    gb_head(&b, 3, 0, 1);
    gb_str(&b, "weird");
    gb_u(&b, 13, 4);
    gb_u(&b, 0, 8);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "key weird: value type 13");
    b.n = 0;
    gb_head(&b, 3, 0, 1);
    gb_str(&b, "flag");
    gb_u(&b, 7, 4);
    gb_u(&b, 2, 1);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "key flag: bool value 2");
    b.n = 0;
    gb_head(&b, 3, 0, 2);
    kv_u32(&b, "a.b", 1);
    kv_u32(&b, "a.b", 2);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "key a.b appears twice");
    b.n = 0;
    gb_head(&b, 3, 0, 1);
    kv_str(&b, "general.alignment", "x");
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "general.alignment");
    b.n = 0;
    gb_head(&b, 3, 0, 1);
    kv_u32(&b, "general.alignment", 48);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "general.alignment");
    /* tensors: bad type, misaligned offset, beyond the data, overlap, duplicate, bad rows */
#define ONE_TENSOR(name, nd, ne_, type, off, data_bytes) \
    do {                                                 \
        b.n = 0;                                         \
        gb_head(&b, 3, 1, 0);                            \
        tinfo(&b, name, nd, ne_, type, off);             \
        gb_pad(&b, 32);                                  \
        gb_zeros(&b, data_bytes);                        \
    } while (0)
    ONE_TENSOR("t", 2, ne, 4, 0, 64);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_UNSUPPORTED, "tensor t: ggml type 4");
    ONE_TENSOR("t", 2, ne, 1000, 0, 64);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_UNSUPPORTED, "tensor t: ggml type 1000");
    ONE_TENSOR("t", 2, ne, 0, 4, 512);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "tensor t: offset 4 is not a multiple of the alignment 32");
    ONE_TENSOR("t", 2, ne, 0, 0, 255);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "tensor t: 256 bytes at data offset 0 run past the end");
    ONE_TENSOR("t", 2, ne, 0, (uint64_t)-32, 256);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "tensor t: 256 bytes at data offset");
    ONE_TENSOR("t", 0, ne, 0, 0, 256);
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "tensor t: 0 dimensions");
    {
        uint64_t odd[2] = {33, 1}, big[4] = {(uint64_t)1 << 40, (uint64_t)1 << 40, 1, 1};
        ONE_TENSOR("t", 2, odd, 8, 0, 64);
        expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT,
                    "tensor t: row length ne[0] = 33 is not a multiple of Q8_0's block");
        ONE_TENSOR("t", 4, big, 0, 0, 0);
        expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "tensor t: ne[1]");
    }
    b.n = 0;
    gb_head(&b, 3, 2, 0);
    tinfo(&b, "a", 2, ne, 0, 0);
    tinfo(&b, "b", 2, ne, 0, 128);
    gb_pad(&b, 32);
    {
        size_t i;
        for (i = 0; i < 512; i++) gb_u(&b, 0, 1);
    }
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "tensors a [0, +256) and b [128, +256) overlap");
    b.n = 0;
    gb_head(&b, 3, 2, 0);
    tinfo(&b, "a", 2, ne, 0, 0);
    tinfo(&b, "a", 2, ne, 0, 256);
    gb_pad(&b, 32);
    {
        size_t i;
        for (i = 0; i < 512; i++) gb_u(&b, 0, 1);
    }
    expect_fail(__LINE__, b.p, b.n, MLSTACK_ERR_FORMAT, "duplicate tensor name a");
    free(b.p);
    /* many keys: found repeated by sorting, in linear-logarithmic time (200000 keys) */
    {
        gb big = {0, 0, 0};
        int k;
        double t0 = mlstack_clock_seconds();
        char key[32];
        gb_head(&big, 3, 0, 200000);
        for (k = 0; k < 200000; k++) {
            snprintf(key, sizeof key, "k.%06d", k == 199999 ? 7 : k);
            kv_u32(&big, key, (uint32_t)k);
        }
        expect_fail(__LINE__, big.p, big.n, MLSTACK_ERR_FORMAT, "key k.000007 appears twice");
        CHECKF(mlstack_clock_seconds() - t0 < 30, "200000 keys took %.1f s", mlstack_clock_seconds() - t0);
        free(big.p);
    }
}

/* The type table against gguf-py's GGML_QUANT_SIZES (types.txt). gguf-py still lists Q8_1 as
   40 bytes (two f32); ggml's block_q8_1 is two f16 + 32 int8 = 36, which we follow. Q8_1 never
   appears in model files. */
static void test_types(void) {
    FILE *f = fopen("tests/fixtures/gguf/types.txt", "r");
    unsigned id, block, size;
    char name[64];
    int n = 0;
    if (!f) {
        SKIP("tests/fixtures/gguf/types.txt missing");
        return;
    }
    while (fscanf(f, "%u %63s %u %u", &id, name, &block, &size) == 4) {
        n++;
        if (id >= MLSTACK__GGML_NTYPES) {
            CHECKF(0, "gguf-py type %u %s is beyond our table", id, name);
            continue;
        }
        CHECKF(strcmp(mlstack__ggml_types[id].name, name) == 0, "type %u: %s vs gguf-py %s", id,
               mlstack__ggml_types[id].name, name);
        CHECKF(mlstack__ggml_types[id].block == block, "type %s: block %u vs gguf-py %u", name,
               mlstack__ggml_types[id].block, block);
        if (id != MLSTACK__GGML_Q8_1)
            CHECKF(mlstack__ggml_types[id].size == size, "type %s: size %u vs gguf-py %u", name,
                   mlstack__ggml_types[id].size, size);
    }
    fclose(f);
    CHECK(n >= 30);
}

/* Files written by gguf-py: every tensor found with the shape and type the writer was given. */
static void test_files(void) {
    static const char *const types[] = {"Q4_0", "Q4_1", "Q5_0", "Q5_1",   "Q8_0", "Q2_K", "Q3_K",
                                        "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "F16",  "BF16", "MXFP4"};
    mlstack__gguf g;
    mlstack_error err;
    size_t i, len;
    mlstack_result r = mlstack__gguf_open(&g, "tests/fixtures/gguf/quants.gguf", &err);
    CHECKF(r == MLSTACK_OK, "quants.gguf: %s", err.message);
    if (r != MLSTACK_OK) return;
    CHECK(g.n_tensors == 2 * sizeof types / sizeof types[0]);
    CHECK(mlstack__gguf_string(&g, "general.architecture", &len) != NULL && len == 5);
    for (i = 0; i < sizeof types / sizeof types[0]; i++) {
        char ref[32];
        const mlstack__gguf_tensor *t = mlstack__gguf_tensor_find(&g, types[i]), *f;
        snprintf(ref, sizeof ref, "%s.ref", types[i]);
        f = mlstack__gguf_tensor_find(&g, ref);
        CHECKF(t && f, "%s missing", types[i]);
        if (!t || !f) continue;
        CHECKF(strcmp(mlstack__ggml_type_name(t->type), types[i]) == 0, "%s has type %s", types[i],
               mlstack__ggml_type_name(t->type));
        CHECK(t->ne[0] == 256 && t->ne[1] == 2 && f->type == MLSTACK__GGML_F32 && f->ne[0] == 256 && f->ne[1] == 2 &&
              f->bytes == 2048);
        /* dequantized rows bit-identical to gguf.quants.dequantize */
        CHECKF(mlstack__ggml_can_dequant(t->type), "%s cannot be dequantized", types[i]);
        {
            float got[256], want[256];
            int row, k, bad = 0;
            for (row = 0; row < 2; row++) {
                mlstack__ggml_dequant_row(t->type, g.data + t->offset + (size_t)row * (t->bytes / 2), got, 256);
                memcpy(want, g.data + f->offset + (size_t)row * 1024, 1024);
                for (k = 0; k < 256; k++)
                    if (memcmp(&got[k], &want[k], 4) != 0) {
                        if (!bad) printf("%s row %d [%d]: %.9g vs gguf-py %.9g\n", types[i], row, k, got[k], want[k]);
                        bad++;
                    }
            }
            CHECKF(bad == 0, "%s: %d values differ from gguf-py's dequantization", types[i], bad);
        }
    }
    mlstack__gguf_close(&g);
}

/* A quantize fixture's tensor of llama.cpp's blocks for type name: 512 inputs, src's rows. */
static const mlstack__gguf_tensor *quant_fixture_rows(const mlstack__gguf *g, const mlstack__gguf_tensor *src,
                                                      const char *name) {
    const mlstack__gguf_tensor *t = mlstack__gguf_tensor_find(g, name);
    CHECKF(t && strcmp(mlstack__ggml_type_name(t->type), name) == 0 && t->ne[0] == 512 && t->ne[1] == src->ne[1],
           "%s missing or misshapen", name);
    return t;
}

/* Opens a quantizer fixture made by tools/make_quant_fixtures.py: its "src" float rows (512 wide,
   at least min_rows) and its "imatrix" row, copied to qw. 0 (the failure checked) when it cannot. */
static int open_imatrix_fixture(const char *path, uint64_t min_rows, mlstack__gguf *g, const mlstack__gguf_tensor **src,
                                float qw[512]) {
    mlstack_error err;
    const mlstack__gguf_tensor *im;
    if (mlstack__gguf_open(g, path, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: %s", path, err.message);
        return 0;
    }
    *src = mlstack__gguf_tensor_find(g, "src"), im = mlstack__gguf_tensor_find(g, "imatrix");
    CHECK(*src && (*src)->type == MLSTACK__GGML_F32 && (*src)->ne[0] == 512 && (*src)->ne[1] >= min_rows);
    CHECK(im && im->type == MLSTACK__GGML_F32 && im->ne[0] == 512);
    if (!*src || !im) {
        mlstack__gguf_close(g);
        return 0;
    }
    memcpy(qw, g->data + im->offset, 512 * sizeof(float));
    return 1;
}

/* tests/fixtures/gguf/quantize_imatrix.gguf (tools/make_quant_fixtures.py): the same float rows,
   one importance-matrix row (mean squared activations, some zero, some 300x the rest) and, per
   GGML type, the blocks ggml's ggml_quantize_chunk makes with it (llama-quantize --imatrix's
   call; the script checks each differs from the blocks made without): mlstack__ggml_quantize_row_w
   gives the same bytes, row by row. */
static void test_quantize_bytes_imatrix(void) {
    static const char *const types[] = {"Q4_0", "Q4_1", "Q5_0", "Q5_1",   "Q2_K",  "Q3_K",
                                        "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"};
    mlstack__gguf g;
    const mlstack__gguf_tensor *src;
    float qw[512];
    size_t i;
    if (!open_imatrix_fixture("tests/fixtures/gguf/quantize_imatrix.gguf", 8, &g, &src, qw)) return;
    for (i = 0; i < sizeof types / sizeof types[0]; i++) {
        const mlstack__gguf_tensor *t = quant_fixture_rows(&g, src, types[i]);
        size_t rb, k;
        uint64_t r;
        int bad = 0, same_plain = 1;
        unsigned char got[1024], plain[1024];
        if (!t) continue;
        rb = (size_t)(t->bytes / t->ne[1]);
        for (r = 0; r < t->ne[1] && rb <= sizeof got; r++) {
            float x[512];
            const unsigned char *want = g.data + t->offset + r * rb;
            memcpy(x, g.data + src->offset + r * 2048, sizeof x);
            mlstack__ggml_quantize_row_w(t->type, x, got, 512, qw);
            mlstack__ggml_quantize_row(t->type, x, plain, 512);
            if (memcmp(plain, want, rb) != 0) same_plain = 0;
            for (k = 0; k < rb; k++)
                if (got[k] != want[k]) {
                    if (!bad)
                        printf("%s row %d: byte %d (block %d) %02x vs llama.cpp %02x\n", types[i], (int)r, (int)k,
                               (int)(k / mlstack__ggml_types[t->type].size), got[k], want[k]);
                    bad++;
                    break;
                }
        }
        CHECKF(bad == 0, "%s: %d of %d rows differ from llama.cpp's quantizer with an imatrix", types[i], bad,
               (int)t->ne[1]);
        CHECKF(!same_plain, "%s: the fixture's blocks are those made without an imatrix", types[i]);
    }
    mlstack__gguf_close(&g);
}

/* tests/fixtures/gguf/quantize_iq.gguf (tools/make_quant_fixtures.py): 32 float rows, one
   importance-matrix row and, per low-bit i-quant, the blocks ggml_quantize_chunk makes with it
   (and without it, <TYPE>.plain, where ggml allows that) and ggml's dequantization of the
   first rows (<TYPE>.deq): mlstack__ggml_quantize_row_w gives the same bytes, row by row, and
   our reader dequantizes llama.cpp's blocks to ggml's floats exactly. */
static void test_quantize_bytes_iq(void) {
    static const char *const types[] = {"IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ3_S", "IQ2_S", "IQ1_S", "IQ1_M"};
    mlstack__gguf g;
    const mlstack__gguf_tensor *src;
    float qw[512];
    size_t i;
    if (!open_imatrix_fixture("tests/fixtures/gguf/quantize_iq.gguf", 32, &g, &src, qw)) return;
    for (i = 0; i < sizeof types / sizeof types[0]; i++) {
        char nm[32];
        const mlstack__gguf_tensor *t = quant_fixture_rows(&g, src, types[i]), *dq;
        size_t rb;
        uint64_t r;
        int bad = 0, bad_deq = 0, n_deq = 0;
        unsigned char got[1024];
        if (!t) continue;
        CHECK(mlstack__iqs_tables(t->type) != NULL);
        rb = (size_t)(t->bytes / t->ne[1]);
        for (r = 0; r < t->ne[1] && rb <= sizeof got; r++) {
            float x[512];
            const unsigned char *want = g.data + t->offset + r * rb;
            memcpy(x, g.data + src->offset + r * 2048, sizeof x);
            mlstack__ggml_quantize_row_w(t->type, x, got, 512, qw);
            if (memcmp(got, want, rb) != 0) {
                size_t k = 0;
                while (got[k] == want[k]) k++;
                if (!bad)
                    printf("%s row %d: byte %d (block %d) %02x vs llama.cpp %02x\n", types[i], (int)r, (int)k,
                           (int)(k / mlstack__ggml_types[t->type].size), got[k], want[k]);
                bad++;
            }
        }
        CHECKF(bad == 0, "%s: %d of %d rows differ from llama.cpp's quantizer with an imatrix", types[i], bad,
               (int)t->ne[1]);
        snprintf(nm, sizeof nm, "%s.plain", types[i]);
        if ((dq = mlstack__gguf_tensor_find(&g, nm)) != NULL) { /* without an imatrix, where ggml allows it */
            int bad_plain = 0;
            CHECK(dq->type == t->type && dq->bytes == t->bytes);
            for (r = 0; r < t->ne[1] && dq->bytes == t->bytes; r++) {
                float x[512];
                memcpy(x, g.data + src->offset + r * 2048, sizeof x);
                mlstack__ggml_quantize_row_w(t->type, x, got, 512, NULL);
                bad_plain += memcmp(got, g.data + dq->offset + r * rb, rb) != 0;
            }
            CHECKF(bad_plain == 0, "%s: %d of %d rows differ from llama.cpp's quantizer without an imatrix", types[i],
                   bad_plain, (int)t->ne[1]);
            printf("%s: %d rows byte-identical without an imatrix\n", types[i], (int)t->ne[1] - bad_plain);
        }
        snprintf(nm, sizeof nm, "%s.deq", types[i]);
        dq = mlstack__gguf_tensor_find(&g, nm);
        CHECKF(dq && dq->type == MLSTACK__GGML_F32 && dq->ne[0] == 512, "%s missing", nm);
        for (r = 0; dq && r < dq->ne[1]; r++) {
            float y[512], want[512];
            int k;
            mlstack__ggml_dequant_row(t->type, g.data + t->offset + r * rb, y, 512);
            memcpy(want, g.data + dq->offset + r * 2048, sizeof want);
            for (k = 0; k < 512; k++, n_deq++) bad_deq += memcmp(&y[k], &want[k], 4) != 0;
        }
        CHECKF(n_deq > 0 && bad_deq == 0, "%s: %d of %d values dequantized unlike ggml", types[i], bad_deq, n_deq);
        printf("%s: %d rows byte-identical to llama.cpp's quantizer (imatrix), %d values dequantized as ggml\n",
               types[i], (int)t->ne[1] - bad, n_deq - bad_deq);
    }
    mlstack__gguf_close(&g);
}

/* tests/fixtures/gguf/quantize.gguf (tools/make_quant_fixtures.py): float rows (Gaussian, heavy
   tails, zero / constant / tiny blocks, rounding ties, outliers) and, per GGML type, the blocks
   llama.cpp's reference quantizers make of them (gguf-py's gguf.quants.quantize for Q4_0 ..
   Q8_0, ggml's ggml_quantize_chunk without an imatrix -- what llama-quantize calls -- for
   Q2_K .. Q6_K, IQ4_NL and IQ4_XS): mlstack__ggml_quantize_row gives the same bytes, row by row. */
static void test_quantize_bytes(void) {
    static const char *const types[] = {"Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0",   "Q2_K",
                                        "Q3_K", "Q4_K", "Q5_K", "Q6_K", "IQ4_NL", "IQ4_XS"};
    mlstack__gguf g;
    mlstack_error err;
    const mlstack__gguf_tensor *src;
    size_t i;
    if (mlstack__gguf_open(&g, "tests/fixtures/gguf/quantize.gguf", &err) != MLSTACK_OK) {
        CHECKF(0, "quantize.gguf: %s", err.message);
        return;
    }
    src = mlstack__gguf_tensor_find(&g, "src");
    CHECK(src && src->type == MLSTACK__GGML_F32 && src->ne[0] == 512 && src->ne[1] >= 8);
    for (i = 0; src && i < sizeof types / sizeof types[0]; i++) {
        const mlstack__gguf_tensor *t = quant_fixture_rows(&g, src, types[i]);
        size_t rb;
        uint64_t r;
        int bad = 0;
        unsigned char got[1024];
        if (!t) continue;
        rb = (size_t)(t->bytes / t->ne[1]);
        for (r = 0; r < t->ne[1] && rb <= sizeof got; r++) {
            float x[512];
            const unsigned char *want = g.data + t->offset + r * rb;
            size_t k, bs = mlstack__ggml_types[t->type].size;
            memcpy(x, g.data + src->offset + r * 2048, sizeof x);
            mlstack__ggml_quantize_row(t->type, x, got, 512);
            for (k = 0; k < rb; k++)
                if (got[k] != want[k]) {
                    if (!bad)
                        printf("%s row %d: byte %d (block %d) %02x vs llama.cpp %02x\n", types[i], (int)r, (int)k,
                               (int)(k / bs), got[k], want[k]);
                    bad++;
                    break;
                }
        }
        CHECKF(bad == 0, "%s: %d of %d rows differ from llama.cpp's quantizer", types[i], bad, (int)t->ne[1]);
    }
    mlstack__gguf_close(&g);
}

#define SHARED "../shared/"

/* llama.cpp's vocabulary files and the ids Hugging Face gives for their .inp cases (.out): the
   tokenizer is built from the GGUF metadata alone. */
static void test_vocab_vectors(void) {
    static const struct {
        const char *name;
        mlstack_result want; /* what opening the vocabulary gives */
    } sets[] = {
        {"gpt-2", MLSTACK_OK},
        {"llama-spm", MLSTACK_OK},
        {"phi-3", MLSTACK_OK},
        {"falcon", MLSTACK_OK},
        {"mpt", MLSTACK_OK},
        {"starcoder", MLSTACK_OK},
        {"refact", MLSTACK_OK},
        {"deepseek-coder", MLSTACK_OK},
        {"deepseek-llm", MLSTACK_OK},
        {"bert-bge", MLSTACK_ERR_UNSUPPORTED},
        {"gpt-neox", MLSTACK_ERR_UNSUPPORTED},
    };
    size_t si;
    static int32_t ids[1 << 16];
    for (si = 0; si < sizeof sets / sizeof sets[0]; si++) {
        char pg[200], pi[256], po[256];
        tl_vectors vv;
        const char *text;
        size_t cl;
        int n = 0, ok = 0;
        mlstack_tokenizer *t = NULL;
        mlstack_error err;
        mlstack_result r;
        snprintf(pg, sizeof pg, SHARED "tokenizer-vectors/ggml-vocab-%s.gguf", sets[si].name);
        snprintf(pi, sizeof pi, "%s.inp", pg);
        snprintf(po, sizeof po, "%s.out", pg);
        {
            FILE *f = fopen(pg, "rb");
            if (!f) {
                SKIP("%s missing", pg);
                continue;
            }
            fclose(f);
        }
        memset(&err, 0, sizeof err);
        r = mlstack_tokenizer_open(pg, &t, &err);
        CHECKF(r == sets[si].want, "%s: open gives %d (%s), want %d", sets[si].name, (int)r, err.message,
               (int)sets[si].want);
        if (r != MLSTACK_OK) {
            CHECKF(strstr(err.message, "ggml-vocab-") != NULL, "%s: message does not name the file: %s", sets[si].name,
                   err.message);
            if (r == sets[si].want) printf("vocab %-16s refused: %s\n", sets[si].name, err.message);
            continue;
        }
        if (!tl_vectors_open(&vv, pi, po)) {
            SKIP("%s: vector files missing", sets[si].name);
            mlstack_tokenizer_close(t);
            continue;
        }
        while (tl_vectors_next(&vv, &text, &cl)) {
            size_t k = 0;
            int good = mlstack_tokenizer_encode(t, text, cl, 0, ids, sizeof ids / sizeof ids[0], &k) == MLSTACK_OK &&
                       tl_vectors_match(&vv, ids, (long)k);
            n++;
            ok += good;
            if (!good && n - ok <= 3)
                printf("  %s case %d differs: \"%.*s\"\n", sets[si].name, n - 1, (int)(cl > 60 ? 60 : cl), text);
        }
        printf("vocab %-16s %3d/%d\n", sets[si].name, ok, n);
        CHECKF(n >= 40 && ok == n, "%s: %d of %d cases give Hugging Face's ids", sets[si].name, ok, n);
        tl_vectors_close(&vv);
        mlstack_tokenizer_close(t);
    }
}

/* path (a mkstemp template) made the name of a fresh empty file: 0, or -1 after a SKIP. */
static int temp_file(char *path) {
    int fd = mkstemp(path);
    if (fd < 0) {
        SKIP("no temporary file");
        return -1;
    }
    close(fd);
    return 0;
}

/* a written by mlstack_model_save_gguf to path and opened again as stored into *b (NULL when
   either step failed, which is a failed check). */
static void save_reopen(mlstack_model *a, const char *path, mlstack_model **b, const char *what) {
    mlstack_model_desc md;
    mlstack_error err;
    *b = NULL;
    if (!a) return;
    CHECKF(mlstack_model_save_gguf(a, path, &err) == MLSTACK_OK, "%s: %s", what, err.message);
    memset(&md, 0, sizeof md);
    md.path = path;
    CHECKF(mlstack_model_open(&md, b, &err) == MLSTACK_OK, "%s: %s", what, err.message);
}

/* tests/fixtures/gguf/llama-q8_0.gguf is the tiny llama fixture as llama.cpp's converter writes
   it (names mapped, Q/K rows permuted), quantized to Q8_0 by gguf-py. Opened directly it must
   give the logits of the safetensors folder quantized to Q8_0 at load: the same blocks, the
   same kernels. */
static void test_model(void) {
    static const int32_t ids[8] = {1, 5, 100, 200, 7, 42, 300, 11};
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_model *a = NULL, *b = NULL;
    mlstack_engine *ea = NULL, *eb = NULL;
    mlstack_model_info ia, ib;
    mlstack_error err;
    mlstack_tensor tv;
    float *la = NULL, *lb = NULL, *lc = NULL;
    memset(&md, 0, sizeof md);
    memset(&ed, 0, sizeof ed);
    md.path = "tests/fixtures/models/llama";
    md.quant = MLSTACK_DTYPE_Q8_0;
    CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_OK, "%s", err.message);
    md.path = "tests/fixtures/gguf/llama-q8_0.gguf";
    md.quant = 0;
    CHECKF(mlstack_model_open(&md, &b, &err) == MLSTACK_OK, "%s", err.message);
    if (!a || !b) goto done;
    mlstack_model_get_info(a, &ia);
    mlstack_model_get_info(b, &ib);
    CHECK(strcmp(ib.architecture, "LlamaForCausalLM") == 0 && ib.n_layers == ia.n_layers && ib.n_embd == ia.n_embd &&
          ib.n_ff == ia.n_ff && ib.n_heads == ia.n_heads && ib.n_kv_heads == ia.n_kv_heads &&
          ib.head_dim == ia.head_dim && ib.n_vocab == ia.n_vocab && ib.tied_embeddings == 0 &&
          ib.rms_norm_eps == ia.rms_norm_eps && ib.rope_theta == ia.rope_theta &&
          ib.max_position_embeddings == ia.max_position_embeddings);
    CHECKF(ib.weight_dtype == MLSTACK_DTYPE_Q8_0, "weight dtype %s", mlstack_dtype_name(ib.weight_dtype));
    CHECK(mlstack_model_tensor_find(b, "model.layers.1.mlp.down_proj.weight", &tv) == MLSTACK_OK &&
          tv.dtype == MLSTACK_DTYPE_U8);
    CHECK(mlstack_model_tensor_find(b, "model.embed_tokens.weight", &tv) == MLSTACK_OK &&
          tv.dtype == MLSTACK_DTYPE_F32);
    CHECKF(mlstack_engine_init(a, &ed, &ea, &err) == MLSTACK_OK, "%s", err.message);
    CHECKF(mlstack_engine_init(b, &ed, &eb, &err) == MLSTACK_OK, "%s", err.message);
    if (!ea || !eb) goto done;
    la = fx_eval_all(ea, ids, 8, ia.n_vocab, 8);
    lb = fx_eval_all(eb, ids, 8, ib.n_vocab, 8);
    lc = fx_eval_all(eb, ids, 8, ib.n_vocab, 1);
    CHECK(la && lb && lc);
    if (la && lb && lc) {
        CHECK(memcmp(la, lb, sizeof(float) * 8 * (size_t)ia.n_vocab) == 0);
        CHECK(memcmp(lb, lc, sizeof(float) * 8 * (size_t)ia.n_vocab) == 0); /* prefill == decode */
    }
done:
    free(la);
    free(lb);
    free(lc);
    mlstack_engine_free(ea);
    mlstack_engine_free(eb);
    mlstack_model_close(a);
    mlstack_model_close(b);
}

/* Issue 15, one copy of each weight: b is a's GGUF, whose Q and K rows are copies put back in
   Hugging Face order at open. Once an engine's panels hold them (b's logits lb, from the best
   kernels) those rows go back to the system, and come back bit for bit when a path reads rows
   (the scalar kernels) or packs them again (BF16 pair panels, where the CPU has them). */
static void float_rows_back(mlstack_model *a, mlstack_model *b, int V, const int32_t *ids, const float *lb,
                            const char *what) {
    mlstack_engine_desc ed;
    mlstack_engine *e = NULL, *ea = NULL;
    mlstack_error err;
    float *ls, *la2 = NULL, *lb2 = NULL;
    int l, i, pass, n_qk = 0, n_state = 0, n_same = 0;
    for (pass = 0; pass < 3; pass++) { /* 0: after the best engine, 1: with a scalar one, 2: after it */
        n_qk = n_state = n_same = 0;
        for (l = 0; l < b->cfg.n_layers; l++) {
            const mlstack__weight *wb[2], *wa[2];
            wb[0] = &b->layers[l].wq, wb[1] = &b->layers[l].wk, wa[0] = &a->layers[l].wq, wa[1] = &a->layers[l].wk;
            for (i = 0; i < 2; i++) {
                size_t bytes = (size_t)wb[i]->n_out * wb[i]->row_bytes;
                unsigned char *tmp = (unsigned char *)malloc(bytes);
                n_qk++;
                n_state += wb[i]->rows == (pass == 1 ? MLSTACK__ROWS_OWNED : MLSTACK__ROWS_GONE);
                if (pass == 1) n_same += memcmp(wb[i]->data, wa[i]->data, bytes) == 0;
                else if (tmp && wb[i]->packed) {
                    mlstack__p16_unpack(wb[i], tmp);
                    n_same += memcmp(tmp, wa[i]->data, bytes) == 0;
                }
                free(tmp);
            }
        }
        CHECKF(n_qk > 0 && n_state == n_qk && n_same == n_qk,
               "%s, %s: %d of %d Q/K copies in the expected state, %d the folder's rows", what,
               pass == 0   ? "after the best kernels packed them"
               : pass == 1 ? "with a scalar engine (rows)"
                           : "after the scalar engine ended",
               n_state, n_qk, n_same);
        if (pass == 1) mlstack_engine_free(e);
        if (pass != 0) continue;
        memset(&ed, 0, sizeof ed);
        ed.isa = "scalar";
        CHECKF(mlstack_engine_init(b, &ed, &e, &err) == MLSTACK_OK, "%s", err.message);
        if (!e) return;
        ls = fx_eval_all(e, ids, 6, V, 6);
        CHECKF(ls && memcmp(ls, lb, sizeof(float) * 6 * (size_t)V) == 0,
               "%s: scalar logits on the re-derived Q/K rows differ from the panel kernels'", what);
        free(ls);
    }
    if (b->layers[0].wq.wtype != MLSTACK__W_BF16) return;
    /* BF16 pair panels (bf16 activations) packed after the rows went back: the folder's bits */
    memset(&ed, 0, sizeof ed);
    ed.bf16_activations = 1;
    if (mlstack_engine_init(b, &ed, &e, &err) != MLSTACK_OK || !strstr(mlstack_engine_kernels(e), "bf16")) {
        SKIP("pair panels packed from re-derived rows: this CPU has no bf16-dot kernels (AVX512_BF16 or AMX)");
        mlstack_engine_free(e);
        return;
    }
    CHECKF(mlstack_engine_init(a, &ed, &ea, &err) == MLSTACK_OK, "%s", err.message);
    lb2 = fx_eval_all(e, ids, 6, V, 6);
    la2 = ea ? fx_eval_all(ea, ids, 6, V, 6) : NULL;
    CHECKF(la2 && lb2 && memcmp(la2, lb2, sizeof(float) * 6 * (size_t)V) == 0,
           "%s: bf16-dot logits from pair panels of re-derived rows differ from the folder's", what);
    free(la2), free(lb2);
    mlstack_engine_free(ea), mlstack_engine_free(e);
}

/* A BF16 / F16 llama written to GGUF (Q/K rows permuted into llama.cpp's order) and opened
   again: Q and K are put back in their stored type, not widened (one copy of the stored bytes),
   and the logits are the folder's bit for bit. */
static void test_float_permuted(void) {
    static const int32_t ids[6] = {2, 7, 1, 8, 2, 8};
    static const char *const dirs[2] = {"tests/fixtures/models/llama_bf16", "tests/fixtures/models/llama_f16"};
    static const mlstack_dtype types[2] = {MLSTACK_DTYPE_BF16, MLSTACK_DTYPE_F16};
    int d;
    for (d = 0; d < 2; d++) {
        char path[] = "/tmp/mlstack_gguf_p_XXXXXX";
        mlstack_model_desc md;
        mlstack_engine_desc ed;
        mlstack_model *a = NULL, *b = NULL;
        mlstack_engine *ea = NULL, *eb = NULL;
        mlstack_model_info ia;
        mlstack_tensor tq, tk;
        mlstack_error err;
        float *la = NULL, *lb = NULL;
        if (temp_file(path)) return;
        memset(&md, 0, sizeof md);
        memset(&ed, 0, sizeof ed);
        md.path = dirs[d];
        CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_OK, "%s: %s", dirs[d], err.message);
        save_reopen(a, path, &b, dirs[d]);
        if (a && b) {
            mlstack_model_get_info(a, &ia);
            CHECK(mlstack_model_tensor_find(b, "model.layers.0.self_attn.q_proj.weight", &tq) == MLSTACK_OK &&
                  mlstack_model_tensor_find(b, "model.layers.0.self_attn.k_proj.weight", &tk) == MLSTACK_OK);
            CHECKF(tq.dtype == types[d] && tk.dtype == types[d], "%s: Q, K read back as %s, %s", dirs[d],
                   mlstack_dtype_name(tq.dtype), mlstack_dtype_name(tk.dtype));
            CHECKF(mlstack_engine_init(a, &ed, &ea, &err) == MLSTACK_OK, "%s", err.message);
            CHECKF(mlstack_engine_init(b, &ed, &eb, &err) == MLSTACK_OK, "%s", err.message);
            if (ea && eb) {
                la = fx_eval_all(ea, ids, 6, ia.n_vocab, 6);
                lb = fx_eval_all(eb, ids, 6, ia.n_vocab, 6);
                CHECKF(la && lb && memcmp(la, lb, sizeof(float) * 6 * (size_t)ia.n_vocab) == 0,
                       "%s: GGUF logits differ from the folder's", dirs[d]);
                if (lb && strcmp(mlstack_engine_kernels(eb), "scalar") != 0)
                    float_rows_back(a, b, ia.n_vocab, ids, lb, dirs[d]);
                else if (lb)
                    SKIP("Q/K copies given back: this CPU runs only the scalar kernels, which read rows");
            }
        }
        free(la);
        free(lb);
        mlstack_engine_free(ea);
        mlstack_engine_free(eb);
        mlstack_model_close(a);
        mlstack_model_close(b);
        remove(path);
    }
}

/* tests/fixtures/gguf/llama-kq.gguf: a random llama whose projections cover every GGML format
   computed natively or repacked (tools/make_gguf_fixtures.py). On every kernel path this CPU
   runs: the same logits as the scalar path (bits), prefill == decode, a row's logits unchanged
   by a batch mate; and close to the same file opened as dequantized f32 weights (the dequantizer
   matches gguf-py bit for bit): mean KL < 2e-3 and the same top-1 token at every position. */
/* A GGUF's Q/K rows of a block type, copied at open into Hugging Face order: once an engine's
   panels hold them the copies go back to the system (state GONE), and a scalar engine, which
   reads rows, gets them back from the file bit for bit (its logits are l0, the first engine's,
   which read the copies before any went back). */
static void block_rows_back(mlstack_model *a, int V, const int32_t *ids, const float *l0, const char *path) {
    mlstack_engine_desc ed;
    mlstack_engine *e = NULL;
    mlstack_error err;
    float *ls = NULL;
    int l, n_qk = 0, n_gone = 0, n_packed = 0;
    for (l = 0; l < a->cfg.n_layers; l++) {
        const mlstack__weight *w[2];
        int i;
        w[0] = &a->layers[l].wq, w[1] = &a->layers[l].wk;
        for (i = 0; i < 2; i++)
            if (MLSTACK__W_IS_GGML(w[i]->wtype)) {
                n_qk++;
                n_packed += w[i]->packed != NULL;
                n_gone += w[i]->rows == MLSTACK__ROWS_GONE;
            }
    }
    if (!n_packed) {
        SKIP("%s: no engine made panels of the block-type Q/K copies (scalar kernels only)", path);
        return;
    }
    CHECKF(n_qk > 0 && n_gone == n_packed, "%s: %d of %d block-type Q/K copies with panels given back", path, n_gone,
           n_packed);
    memset(&ed, 0, sizeof ed);
    ed.isa = "scalar";
    CHECKF(mlstack_engine_init(a, &ed, &e, &err) == MLSTACK_OK, "%s", err.message);
    if (e) ls = fx_eval_all(e, ids, 8, V, 8);
    CHECKF(ls && memcmp(ls, l0, sizeof(float) * 8 * (size_t)V) == 0,
           "%s: scalar logits on the re-derived Q/K rows differ from the first engine's", path);
    free(ls);
    mlstack_engine_free(e);
}

static void kq_model_check(const char *path, const char *format, const int want[2][7], int head) {
    static const int32_t ids[8] = {3, 77, 200, 5, 18, 255, 1, 64}, mate[5] = {9, 8, 7, 6, 5};
    static const char *caps[] = {"scalar", "avx2", "avx512", "amx", "neon"};
    const char *seen[5];
    mlstack_model_desc md;
    mlstack_model *a = NULL, *r = NULL;
    mlstack_model_info ia;
    mlstack_error err;
    mlstack_engine *er = NULL;
    float *lr = NULL, *l0 = NULL;
    int c, n_seen = 0, i, V = 0;
    memset(&md, 0, sizeof md);
    md.path = path;
    CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_OK, "%s", err.message);
    mlstack__gguf_dequant_all = 1;
    CHECKF(mlstack_model_open(&md, &r, &err) == MLSTACK_OK, "%s", err.message);
    mlstack__gguf_dequant_all = 0;
    if (!a || !r) goto done;
    mlstack_model_get_info(a, &ia);
    V = ia.n_vocab;
    CHECKF(strcmp(ia.weight_format, format) == 0 && ia.weight_dtype == MLSTACK_DTYPE_U8, "%s: weight format %s", path,
           ia.weight_format);
    {
        int l, ok = a->lm_head.wtype == head;
        for (l = 0; l < 2; l++) {
            const mlstack__layer *L = &a->layers[l];
            ok &= L->wq.wtype == want[l][0] && L->wk.wtype == want[l][1] && L->wv.wtype == want[l][2] &&
                  L->wo.wtype == want[l][3] && L->w_gate.wtype == want[l][4] && L->w_up.wtype == want[l][5] &&
                  L->w_down.wtype == want[l][6];
        }
        CHECKF(ok, "%s: a projection is not in the format the file stores (or its repacked one)", path);
        ok = r->lm_head.wtype == MLSTACK__W_F32 && r->layers[1].w_down.wtype == MLSTACK__W_F32;
        CHECKF(ok, "%s: mlstack__gguf_dequant_all did not give f32 weights", path);
    }
    {
        mlstack_engine_desc ed;
        memset(&ed, 0, sizeof ed);
        CHECKF(mlstack_engine_init(r, &ed, &er, &err) == MLSTACK_OK, "%s", err.message);
        if (er) lr = fx_eval_all(er, ids, 8, V, 8);
    }
    for (c = 0; c < 5; c++) {
        mlstack_engine_desc ed;
        mlstack_engine *e = NULL;
        const char *name;
        float *lp = NULL, *ld = NULL;
        int dup = 0;
        memset(&ed, 0, sizeof ed);
        ed.isa = caps[c];
        ed.max_seqs = 4;
        if (mlstack_engine_init(a, &ed, &e, &err) != MLSTACK_OK) {
            CHECKF(0, "%s: %s", caps[c], err.message);
            continue;
        }
        name = mlstack_engine_kernels(e);
        for (i = 0; i < n_seen; i++) dup |= strcmp(seen[i], name) == 0;
        if (dup) {
            if (c) SKIP("cap %s: this CPU has no such path (fell back to %s)", caps[c], name);
            mlstack_engine_free(e);
            continue;
        }
        seen[n_seen++] = name;
        lp = fx_eval_all(e, ids, 8, V, 8);
        ld = fx_eval_all(e, ids, 8, V, 1);
        CHECK(lp && ld);
        if (lp && ld) {
            CHECKF(memcmp(lp, ld, sizeof(float) * 8 * (size_t)V) == 0, "%s: prefill != decode", name);
            if (!l0) {
                l0 = lp, lp = NULL;
            } else {
                CHECKF(memcmp(l0, lp, sizeof(float) * 8 * (size_t)V) == 0, "%s: logits differ from %s", name, seen[0]);
            }
        }
        { /* the same 8 rows with a second sequence's 5 rows in the batch */
            mlstack_batch_row rows[13];
            int32_t s0 = -1, s1 = -1;
            int same = 1;
            if (l0 && mlstack_engine_seq_new(e, &s0) == MLSTACK_OK && mlstack_engine_seq_new(e, &s1) == MLSTACK_OK) {
                for (i = 0; i < 8; i++)
                    rows[i].seq = s0, rows[i].pos = i, rows[i].token = ids[i], rows[i].want_logits = 1;
                for (i = 0; i < 5; i++)
                    rows[8 + i].seq = s1, rows[8 + i].pos = i, rows[8 + i].token = mate[i], rows[8 + i].want_logits = 1;
                if (mlstack_engine_eval(e, rows, 13) == MLSTACK_OK) {
                    for (i = 0; i < 8; i++)
                        same &= memcmp(mlstack_engine_logits(e, i), l0 + (size_t)i * V, sizeof(float) * V) == 0;
                    CHECKF(same, "%s: a batch mate changed the logits", name);
                } else {
                    CHECKF(0, "%s: eval: %s", name, mlstack_engine_error(e));
                }
            }
            if (s0 >= 0) mlstack_engine_seq_free(e, s0);
            if (s1 >= 0) mlstack_engine_seq_free(e, s1);
        }
        free(lp);
        free(ld);
        mlstack_engine_free(e);
    }
    if (l0) block_rows_back(a, V, ids, l0, path);
    if (l0 && lr) { /* native kernels vs the dequantized f32 weights */
        double kl = 0;
        int top = 0;
        for (i = 0; i < 8; i++) {
            const float *p = lr + (size_t)i * V, *q = l0 + (size_t)i * V;
            double mp = p[0], mq = q[0], zp = 0, zq = 0, k = 0;
            int j, ap = 0, aq = 0;
            for (j = 0; j < V; j++) {
                if (p[j] > mp) mp = p[j], ap = j;
                if (q[j] > mq) mq = q[j], aq = j;
            }
            for (j = 0; j < V; j++) zp += exp(p[j] - mp), zq += exp(q[j] - mq);
            for (j = 0; j < V; j++) {
                double lp_ = p[j] - mp - log(zp), lq_ = q[j] - mq - log(zq);
                k += exp(lp_) * (lp_ - lq_);
            }
            kl += k / 8;
            top += ap == aq;
        }
        printf("%s native vs dequantized f32: mean KL %.2e, top-1 %d/8\n", path, kl, top);
        CHECKF(kl < 2e-3 && top == 8, "%s: native block kernels vs dequantized f32: mean KL %.3g, top-1 %d/8", path, kl,
               top);
    }
done:
    free(lr);
    free(l0);
    mlstack_engine_free(er);
    mlstack_model_close(a);
    mlstack_model_close(r);
}
static void test_kq_model(void) {
    static const int want[2][7] = {{MLSTACK__W_Q4_K, MLSTACK__W_Q8_0, MLSTACK__W_Q6_K, MLSTACK__W_Q5_K, MLSTACK__W_Q4_1,
                                    MLSTACK__W_Q5_1, MLSTACK__W_Q6_K},
                                   {MLSTACK__W_Q2_K, MLSTACK__W_Q3_K, MLSTACK__W_Q8_0, MLSTACK__W_Q4_K, MLSTACK__W_Q5_K,
                                    MLSTACK__W_Q3_K, MLSTACK__W_Q2_K}};
    kq_model_check("tests/fixtures/gguf/llama-kq.gguf", "Q4_K", want, MLSTACK__W_Q6_K);
}
/* tests/fixtures/gguf/llama-iq.gguf: the same checks with every projection in an i-quant, each
   used as stored (the i-quants' kernels: the decoded groups' integer dots, >>kernels). */
static void test_iq_model(void) {
    static const int want[2][7] = {{MLSTACK__W_IQ4_XS, MLSTACK__W_IQ2_XXS, MLSTACK__W_IQ2_XS, MLSTACK__W_IQ2_S,
                                    MLSTACK__W_IQ3_XXS, MLSTACK__W_IQ3_S, MLSTACK__W_IQ1_S},
                                   {MLSTACK__W_IQ1_M, MLSTACK__W_IQ4_XS, MLSTACK__W_IQ3_S, MLSTACK__W_IQ3_XXS,
                                    MLSTACK__W_IQ2_S, MLSTACK__W_IQ2_XS, MLSTACK__W_IQ4_XS}};
    kq_model_check("tests/fixtures/gguf/llama-iq.gguf", "IQ4_XS", want, MLSTACK__W_IQ4_XS);
}

/* tests/fixtures/gguf/llama-tq.gguf: the same checks with every projection ternary (TQ1_0, TQ2_0:
   decoded trits, integer dots with the Q8 activation blocks), the head Q4_K. */
static void test_tq_model(void) {
    static const int want[2][7] = {{MLSTACK__W_TQ1_0, MLSTACK__W_TQ2_0, MLSTACK__W_TQ1_0, MLSTACK__W_TQ2_0,
                                    MLSTACK__W_TQ1_0, MLSTACK__W_TQ2_0, MLSTACK__W_TQ1_0},
                                   {MLSTACK__W_TQ2_0, MLSTACK__W_TQ1_0, MLSTACK__W_TQ2_0, MLSTACK__W_TQ1_0,
                                    MLSTACK__W_TQ2_0, MLSTACK__W_TQ1_0, MLSTACK__W_TQ2_0}};
    kq_model_check("tests/fixtures/gguf/llama-tq.gguf", "TQ1_0", want, MLSTACK__W_Q4_K);
}

/* A 512-weight row of GGML type `type` at src against gguf-py's dequantization ref (f32 bytes):
   *bad counts values mlstack__ggml_dequant_row gets otherwise, *bad_g values of the kernels'
   decoded groups ((dw * sa or sb) * q); the first differing value is printed. */
static void compare_row(const char *name, int row, int type, const unsigned char *src, const unsigned char *ref,
                        int *bad, int *bad_g) {
    float got[512], want[512];
    mlstack__kqg gr[16];
    int k;
    mlstack__ggml_dequant_row((uint32_t)type, src, got, 512);
    memcpy(want, ref, sizeof want);
    mlstack__kq_decode(16 + type, src, 512, gr);
    for (k = 0; k < 512; k++) {
        const mlstack__kqg *q = &gr[k / 32];
        float v = (q->dw * (float)(k % 32 < 16 ? q->sa : q->sb)) * (float)q->q[k % 32];
        if (memcmp(&got[k], &want[k], 4) != 0) {
            if (!*bad) printf("%s row %d [%d]: %.9g vs gguf-py %.9g\n", name, row, k, got[k], want[k]);
            ++*bad;
        }
        *bad_g += memcmp(&v, &want[k], 4) != 0;
    }
}

/* tests/fixtures/gguf/ternary.gguf (tools/make_gguf_fixtures.py): TQ1_0 and TQ2_0 blocks, made by
   gguf-py's quantizer and random, dequantized bit-identical to gguf.quants.dequantize and decoded
   (the kernels' groups) to the same values; and mlstack__ggml_quantize_row of the source rows
   gives gguf-py's bytes. */
static void test_ternary(void) {
    static const char *const types[] = {"TQ1_0", "TQ2_0"};
    mlstack__gguf g;
    mlstack_error err;
    size_t i;
    int raw;
    if (mlstack__gguf_open(&g, "tests/fixtures/gguf/ternary.gguf", &err) != MLSTACK_OK) {
        CHECKF(0, "ternary.gguf: %s", err.message);
        return;
    }
    for (i = 0; i < 2; i++)
        for (raw = 0; raw < 2; raw++) {
            char name[32], ref[40], srcn[40];
            const mlstack__gguf_tensor *t, *f, *sx;
            unsigned char bytes[256];
            int row, bad = 0, bad_g = 0, bad_q = 0;
            snprintf(name, sizeof name, "%s%s", types[i], raw ? ".raw" : "");
            snprintf(ref, sizeof ref, "%s.ref", name);
            snprintf(srcn, sizeof srcn, "%s.src", types[i]);
            t = mlstack__gguf_tensor_find(&g, name), f = mlstack__gguf_tensor_find(&g, ref);
            sx = mlstack__gguf_tensor_find(&g, srcn);
            CHECKF(t && f && sx, "%s missing", name);
            if (!t || !f || !sx) continue;
            CHECKF(strcmp(mlstack__ggml_type_name(t->type), types[i]) == 0 && t->ne[0] == 512 && t->ne[1] == 2 &&
                       mlstack__gguf_wtype(t->type) == 16 + (int)t->type && mlstack__gguf_in_place(t->type),
                   "%s: type %s, not read as stored", name, mlstack__ggml_type_name(t->type));
            for (row = 0; row < 2; row++) {
                const unsigned char *src = g.data + t->offset + (size_t)row * (t->bytes / 2);
                compare_row(name, row, (int)t->type, src, g.data + f->offset + (size_t)row * 2048, &bad, &bad_g);
                if (!raw) { /* the writer: gguf-py's bytes from the same source row */
                    float x[512];
                    memcpy(x, g.data + sx->offset + (size_t)row * 2048, 2048);
                    mlstack__ggml_quantize_row(t->type, x, bytes, 512);
                    bad_q += memcmp(bytes, src, (size_t)(t->bytes / 2)) != 0;
                }
            }
            CHECKF(bad == 0, "%s: %d values differ from gguf-py's dequantization", name, bad);
            CHECKF(bad_g == 0, "%s: %d decoded group values differ from gguf-py's dequantization", name, bad_g);
            CHECKF(bad_q == 0, "%s: %d rows quantized differ from gguf-py's bytes", name, bad_q);
        }
    mlstack__gguf_close(&g);
}

/* tests/fixtures/gguf/iquants.gguf (tools/make_gguf_fixtures.py): random blocks of every i-quant
   dequantized bit-identical to gguf.quants.dequantize, and decoded (the kernels' groups) to the
   same values: each weight (dw * sa or sb) * q. */
static void test_iquants(void) {
    static const char *const types[] = {"IQ4_XS", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M"};
    mlstack__gguf g;
    mlstack_error err;
    size_t i;
    if (mlstack__gguf_open(&g, "tests/fixtures/gguf/iquants.gguf", &err) != MLSTACK_OK) {
        CHECKF(0, "iquants.gguf: %s", err.message);
        return;
    }
    CHECK(g.n_tensors == 2 * sizeof types / sizeof types[0]);
    for (i = 0; i < sizeof types / sizeof types[0]; i++) {
        char ref[32];
        const mlstack__gguf_tensor *t = mlstack__gguf_tensor_find(&g, types[i]), *f;
        int row, bad = 0, bad_g = 0;
        snprintf(ref, sizeof ref, "%s.ref", types[i]);
        f = mlstack__gguf_tensor_find(&g, ref);
        CHECKF(t && f, "%s missing", types[i]);
        if (!t || !f) continue;
        CHECKF(strcmp(mlstack__ggml_type_name(t->type), types[i]) == 0 && t->ne[0] == 512 && t->ne[1] == 2,
               "%s has type %s", types[i], mlstack__ggml_type_name(t->type));
        CHECKF(mlstack__ggml_can_dequant(t->type) && mlstack__gguf_wtype(t->type) == 16 + (int)t->type &&
                   mlstack__gguf_in_place(t->type),
               "%s is not read as stored", types[i]);
        for (row = 0; row < 2; row++) {
            const unsigned char *src = g.data + t->offset + (size_t)row * (t->bytes / 2);
            compare_row(types[i], row, (int)t->type, src, g.data + f->offset + (size_t)row * 2048, &bad, &bad_g);
        }
        CHECKF(bad == 0, "%s: %d values differ from gguf-py's dequantization", types[i], bad);
        CHECKF(bad_g == 0, "%s: %d decoded group values differ from gguf-py's dequantization", types[i], bad_g);
    }
    mlstack__gguf_close(&g);
}

/* mlstack_model_save_gguf of the tiny folder quantized to Q8_0 at load: every tensor's bytes
   equal those gguf-py wrote for the same model (names, Q/K row order, Q8_0 blocks), and the file
   opens to the same logits. */
static void test_write(void) {
    static const int32_t ids[6] = {3, 1, 4, 1, 5, 9};
    char path[] = "/tmp/mlstack_gguf_w_XXXXXX";
    mlstack_model_desc md;
    mlstack_model *a = NULL, *b = NULL;
    mlstack_engine *ea = NULL, *eb = NULL;
    mlstack_engine_desc ed;
    mlstack_error err;
    mlstack__gguf ours, ref;
    uint64_t i;
    int same = 0;
    float *la = NULL, *lb = NULL;
    if (temp_file(path)) return;
    memset(&md, 0, sizeof md);
    memset(&ed, 0, sizeof ed);
    md.path = "tests/fixtures/models/llama";
    md.quant = MLSTACK_DTYPE_Q8_0;
    CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_OK, "%s", err.message);
    if (!a) return;
    CHECKF(mlstack_model_save_gguf(a, path, &err) == MLSTACK_OK, "%s", err.message);
    CHECKF(mlstack_model_save_gguf(a, NULL, &err) == MLSTACK_ERR_INVALID_ARG, "NULL path accepted");
    if (mlstack__gguf_open(&ours, path, &err) == MLSTACK_OK) {
        if (mlstack__gguf_open(&ref, "tests/fixtures/gguf/llama-q8_0.gguf", &err) == MLSTACK_OK) {
            CHECK(ours.n_tensors == ref.n_tensors);
            for (i = 0; i < ref.n_tensors; i++) {
                const mlstack__gguf_tensor *r = &ref.tensors[i], *o = mlstack__gguf_tensor_find(&ours, r->name);
                int eq = o && o->type == r->type && o->bytes == r->bytes && o->ne[0] == r->ne[0] &&
                         o->ne[1] == r->ne[1] &&
                         memcmp(ours.data + o->offset, ref.data + r->offset, (size_t)r->bytes) == 0;
                same += eq;
                CHECKF(eq, "written %s differs from gguf-py's", r->name);
            }
            CHECK(same == (int)ref.n_tensors);
            mlstack__gguf_close(&ref);
        }
        mlstack__gguf_close(&ours);
    } else {
        CHECKF(0, "written file: %s", err.message);
    }
    md.path = path;
    md.quant = 0;
    CHECKF(mlstack_model_open(&md, &b, &err) == MLSTACK_OK, "%s", err.message);
    if (b && mlstack_engine_init(a, &ed, &ea, &err) == MLSTACK_OK &&
        mlstack_engine_init(b, &ed, &eb, &err) == MLSTACK_OK) {
        la = fx_eval_all(ea, ids, 6, 512, 6);
        lb = fx_eval_all(eb, ids, 6, 512, 6);
        CHECK(la && lb && memcmp(la, lb, sizeof(float) * 6 * 512) == 0);
    }
    free(la);
    free(lb);
    mlstack_engine_free(ea);
    mlstack_engine_free(eb);
    mlstack_model_close(a);
    mlstack_model_close(b);
    remove(path);
}

/* A legacy (.dat) imatrix for llama-kq.gguf at path: the values of
   tests/fixtures/gguf/imatrix-llama-kq.gguf (entry e, value k: 0.25 (1 + (7 k + e) mod 13)),
   stored times ncall = 4, then spoiled by `how`: 0 none, 1 cut inside entry 3's values, 2 entry
   0 claims 2^30 values, 3 a count of 2^31 - 1 entries, 4 entry 0 holds 100 values (its weight
   has 256 columns), 5 a NaN value, 6 an extra entry blk.7.attn_q.weight, 7 a negative name
   length. Returns 0, or -1 after a SKIP. */
static int write_imatrix_dat(char *path, int how) {
    static const char *const names[7] = {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"};
    FILE *f;
    int32_t n = how == 3 ? 0x7fffffff : how == 6 ? 15 : 14, e, k;
    if (temp_file(path)) return -1;
    f = fopen(path, "wb");
    if (!f) return -1;
    fwrite(&n, 4, 1, f);
    for (e = 0; e < (how == 6 ? 15 : 14); e++) {
        char nm[64];
        int32_t len, ncall = 4, nval = how == 2 && e == 0 ? 1 << 30 : how == 4 && e == 0 ? 100 : 256;
        snprintf(nm, sizeof nm, e == 14 ? "blk.7.attn_q.weight" : "blk.%d.%s.weight", e / 7, names[e % 7]);
        len = how == 7 ? -5 : (int32_t)strlen(nm);
        fwrite(&len, 4, 1, f);
        fwrite(nm, 1, strlen(nm), f);
        fwrite(&ncall, 4, 1, f);
        fwrite(&nval, 4, 1, f);
        for (k = 0; k < (nval < 256 ? nval : 256); k++) {
            float v = 4 * 0.25f * (float)(1 + (7 * k + (e % 14)) % 13);
            if (how == 5 && e == 2 && k == 9) v = NAN;
            if (how == 1 && e == 3 && k == 100) break;
            fwrite(&v, 4, 1, f);
        }
        if (how == 1 && e == 3) break;
    }
    fclose(f);
    return 0;
}

/* llama-kq.gguf's float weights (dequantized) quantized as the IQ4_XS file type with an
   importance matrix: the GGUF fixture and the same values as a legacy .dat give the same bytes,
   which differ from those made without one; layer 1's attn_q rows are the ones
   mlstack__ggml_quantize_row_w makes with entry 7 (so each weight got its own entry); the
   types are llama.cpp's (IQ4_XS; attn_v Q5_K with 4 query heads per KV head; the head Q6_K).
   Hostile files get clear errors: empty, cut short, huge or negative counts, a size that is
   not the weight's, NaN, an entry that matches no weight, a GGUF without imatrix metadata, and
   an imatrix without a file type. */
static void test_imatrix(void) {
    static const struct {
        int how;
        mlstack_result r;
        const char *msg;
    } bad[] = {{1, MLSTACK_ERR_FORMAT, "offset"},
               {2, MLSTACK_ERR_FORMAT, "holds 1073741824 values"},
               {3, MLSTACK_ERR_FORMAT, "2147483647 entries"},
               {4, MLSTACK_ERR_INVALID_ARG, "holds 100 values"},
               {5, MLSTACK_ERR_FORMAT, "non-finite"},
               {6, MLSTACK_ERR_UNSUPPORTED, "blk.7.attn_q.weight"},
               {7, MLSTACK_ERR_FORMAT, "name length"}};
    char path[] = "/tmp/mlstack_imatrix_XXXXXX";
    mlstack_model_desc md;
    mlstack_model *a = NULL, *b = NULL, *c = NULL, *f = NULL;
    mlstack_error err;
    size_t i;
    memset(&md, 0, sizeof md);
    md.path = "tests/fixtures/gguf/llama-kq.gguf";
    mlstack__gguf_dequant_all = 1;
    md.quant_mix = "IQ4_XS";
    md.imatrix = "tests/fixtures/gguf/imatrix-llama-kq.gguf";
    CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_OK, "%s", err.message);
    if (write_imatrix_dat(path, 0) == 0) {
        md.imatrix = path;
        CHECKF(mlstack_model_open(&md, &b, &err) == MLSTACK_OK, "%s", err.message);
    }
    md.imatrix = NULL;
    CHECKF(mlstack_model_open(&md, &c, &err) == MLSTACK_OK, "%s", err.message);
    md.quant_mix = NULL;
    CHECKF(mlstack_model_open(&md, &f, &err) == MLSTACK_OK, "%s", err.message);
    if (a && b && c && f) {
        const mlstack__weight *wa = &a->layers[1].wq, *wc = &c->layers[1].wq;
        size_t bytes = (size_t)wa->n_out * wa->row_bytes;
        unsigned char row[256];
        float qw[256];
        int k, same = 1, l;
        CHECK(a->lm_head.wtype == MLSTACK__W_Q6_K && a->layers[0].wv.wtype == MLSTACK__W_Q5_K &&
              a->layers[0].w_down.wtype == MLSTACK__W_IQ4_XS && wa->wtype == MLSTACK__W_IQ4_XS);
        for (l = 0; l < 2; l++) {
            const mlstack__weight *x[7] = {&a->layers[l].wq,    &a->layers[l].wk,     &a->layers[l].wv,
                                           &a->layers[l].wo,    &a->layers[l].w_gate, &a->layers[l].w_up,
                                           &a->layers[l].w_down},
                                  *y[7] = {&b->layers[l].wq,    &b->layers[l].wk,     &b->layers[l].wv,
                                           &b->layers[l].wo,    &b->layers[l].w_gate, &b->layers[l].w_up,
                                           &b->layers[l].w_down};
            for (k = 0; k < 7; k++)
                same &= x[k]->wtype == y[k]->wtype &&
                        memcmp(x[k]->data, y[k]->data, (size_t)x[k]->n_out * x[k]->row_bytes) == 0;
        }
        CHECKF(same, "%s", "the GGUF imatrix and the same values as .dat gave different bytes");
        CHECK(wc->wtype == wa->wtype && memcmp(wa->data, wc->data, bytes) != 0);
        for (k = 0; k < 256; k++) qw[k] = 0.25f * (float)(1 + (7 * k + 7) % 13);
        same = wa->row_bytes <= sizeof row && f->layers[1].wq.wtype == MLSTACK__W_F32;
        for (k = 0; same && k < wa->n_out; k++) {
            mlstack__ggml_quantize_row_w(MLSTACK__GGML_IQ4_XS, (const float *)f->layers[1].wq.data + (size_t)k * 256,
                                         row, 256, qw);
            same = memcmp(row, (const unsigned char *)wa->data + (size_t)k * wa->row_bytes, wa->row_bytes) == 0;
        }
        CHECKF(same, "%s", "layer 1 attn_q: not the rows its imatrix entry makes");
    }
    mlstack_model_close(a), mlstack_model_close(b), mlstack_model_close(c), mlstack_model_close(f);
    remove(path);
    md.quant_mix = "IQ4_XS";
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char p2[] = "/tmp/mlstack_imatrix_XXXXXX";
        mlstack_result r;
        if (write_imatrix_dat(p2, bad[i].how)) continue;
        md.imatrix = p2;
        a = NULL;
        r = mlstack_model_open(&md, &a, &err);
        CHECKF(r == bad[i].r && strstr(err.message, bad[i].msg), "imatrix spoiled %d: %d %s", bad[i].how, (int)r,
               r ? err.message : "opened");
        mlstack_model_close(a);
        remove(p2);
    }
    {
        char p3[] = "/tmp/mlstack_imatrix_XXXXXX";
        if (temp_file(p3) == 0) { /* empty */
            md.imatrix = p3;
            CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_ERR_FORMAT && strstr(err.message, "empty"), "%s",
                   err.message);
            remove(p3);
        }
    }
    md.imatrix = "tests/fixtures/gguf/quants.gguf"; /* a GGUF file, not an imatrix */
    CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_ERR_FORMAT && strstr(err.message, "imatrix.datasets"), "%s",
           err.message);
    md.quant_mix = NULL;
    md.quant = MLSTACK_DTYPE_Q8_0;
    md.imatrix = "tests/fixtures/gguf/imatrix-llama-kq.gguf";
    CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_ERR_INVALID_ARG && strstr(err.message, "quant_mix"), "%s",
           err.message);
    mlstack__gguf_dequant_all = 0;
}

/* The grid i-quant mixes on llama-kq.gguf's float weights (hidden 256, 2 layers, 4 query heads
   per KV head) with its imatrix: llama.cpp's per-tensor types (llama_tensor_get_type, read off
   llama-quant.cpp for these mixes) and layer 1's attn_q rows as mlstack__ggml_quantize_row_w
   makes them with its entry; without the imatrix the mixes whose projections would be IQ1_*,
   IQ2_* or IQ3_XXS are refused, naming the tensor, as llama-quantize refuses them.
   The ASan+UBSan flavour (TL_SANITIZED) quantizes the model for every third mix (IQ2_XXS, IQ1_S,
   IQ3_XS: 26 of this test's 30 s of CPU there were the eight whole-model quantizations), and every
   mix's refusal without an imatrix; each grid i-quant's row quantizer (IQ2_XS, IQ2_S, IQ1_M and
   the rest) is run there by test_quantize_bytes_iq against llama.cpp's bytes. The plain and clang
   flavours quantize every mix. */
static void test_imatrix_iq(void) {
    static const struct {
        const char *mix;
        int refused; /* without an imatrix */
        int head, wq, wk, wv, wo, gate0, gate1, down0;
    } mixes[] = {{"IQ2_XXS", 1, MLSTACK__W_Q5_K, MLSTACK__W_IQ2_XXS, MLSTACK__W_IQ2_XXS, MLSTACK__W_Q4_K,
                  MLSTACK__W_IQ2_XXS, MLSTACK__W_IQ2_XXS, MLSTACK__W_IQ2_XXS, MLSTACK__W_IQ2_XXS},
                 {"IQ2_XS", 1, MLSTACK__W_Q5_K, MLSTACK__W_IQ2_XS, MLSTACK__W_IQ2_XS, MLSTACK__W_Q4_K,
                  MLSTACK__W_IQ2_XS, MLSTACK__W_IQ2_XS, MLSTACK__W_IQ2_XS, MLSTACK__W_IQ2_XS},
                 {"IQ2_M", 1, MLSTACK__W_Q5_K, MLSTACK__W_IQ2_S, MLSTACK__W_IQ2_S, MLSTACK__W_Q4_K, MLSTACK__W_IQ3_S,
                  MLSTACK__W_IQ2_S, MLSTACK__W_IQ2_S, MLSTACK__W_IQ2_S},
                 {"IQ1_S", 1, MLSTACK__W_Q5_K, MLSTACK__W_IQ1_S, MLSTACK__W_IQ1_S, MLSTACK__W_Q4_K, MLSTACK__W_IQ2_XXS,
                  MLSTACK__W_IQ1_S, MLSTACK__W_IQ1_S, MLSTACK__W_IQ1_S},
                 {"IQ1_M", 1, MLSTACK__W_Q5_K, MLSTACK__W_IQ1_M, MLSTACK__W_IQ1_M, MLSTACK__W_Q4_K, MLSTACK__W_IQ2_XXS,
                  MLSTACK__W_IQ1_M, MLSTACK__W_IQ1_M, MLSTACK__W_IQ1_M},
                 {"IQ3_XXS", 1, MLSTACK__W_Q5_K, MLSTACK__W_IQ2_S, MLSTACK__W_IQ2_S, MLSTACK__W_Q4_K, MLSTACK__W_IQ3_S,
                  MLSTACK__W_IQ3_XXS, MLSTACK__W_IQ3_XXS, MLSTACK__W_IQ3_XXS},
                 {"IQ3_XS", 1, MLSTACK__W_Q6_K, MLSTACK__W_IQ3_XXS, MLSTACK__W_IQ3_XXS, MLSTACK__W_Q4_K,
                  MLSTACK__W_IQ3_S, MLSTACK__W_IQ3_XXS, MLSTACK__W_IQ3_S, MLSTACK__W_IQ3_S},
                 {"IQ3_M", 0, MLSTACK__W_Q6_K, MLSTACK__W_IQ3_S, MLSTACK__W_IQ3_S, MLSTACK__W_Q4_K, MLSTACK__W_Q4_K,
                  MLSTACK__W_IQ3_S, MLSTACK__W_IQ3_S, MLSTACK__W_IQ3_S}};
    mlstack_model_desc md;
    mlstack_model *f = NULL;
    mlstack_error err;
    size_t i;
    memset(&md, 0, sizeof md);
    md.path = "tests/fixtures/gguf/llama-kq.gguf";
    mlstack__gguf_dequant_all = 1;
    CHECKF(mlstack_model_open(&md, &f, &err) == MLSTACK_OK, "%s", err.message);
    for (i = 0; f && i < sizeof mixes / sizeof mixes[0]; i++) {
        mlstack_model *a = NULL;
        mlstack_result r;
        int whole = TL_KEEP(TL_SANITIZED, i);
        if (!whole && !mixes[i].refused) continue;
        md.quant_mix = mixes[i].mix;
        md.imatrix = NULL;
        r = mlstack_model_open(&md, &a, &err);
        CHECKF(mixes[i].refused ? r == MLSTACK_ERR_UNSUPPORTED && strstr(err.message, "needs an importance matrix")
                                : r == MLSTACK_OK,
               "%s without an imatrix: %d %s", mixes[i].mix, (int)r, r ? err.message : "opened");
        mlstack_model_close(a), a = NULL;
        if (!whole) continue;
        md.imatrix = "tests/fixtures/gguf/imatrix-llama-kq.gguf";
        CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_OK, "%s: %s", mixes[i].mix, err.message);
        if (a) {
            const mlstack__weight *wa = &a->layers[1].wq;
            unsigned char row[256];
            float qw[256];
            int k, same;
            CHECKF(a->lm_head.wtype == mixes[i].head && wa->wtype == mixes[i].wq &&
                       a->layers[1].wk.wtype == mixes[i].wk && a->layers[1].wv.wtype == mixes[i].wv &&
                       a->layers[1].wo.wtype == mixes[i].wo && a->layers[0].w_gate.wtype == mixes[i].gate0 &&
                       a->layers[1].w_gate.wtype == mixes[i].gate1 && a->layers[0].w_down.wtype == mixes[i].down0,
                   "%s: tensor types not llama.cpp's", mixes[i].mix);
            for (k = 0; k < 256; k++) qw[k] = 0.25f * (float)(1 + (7 * k + 7) % 13);
            same = wa->row_bytes <= sizeof row && f->layers[1].wq.wtype == MLSTACK__W_F32 && wa->wtype >= 16;
            for (k = 0; same && k < wa->n_out; k++) {
                mlstack__ggml_quantize_row_w((uint32_t)(wa->wtype - 16),
                                             (const float *)f->layers[1].wq.data + (size_t)k * 256, row, 256, qw);
                same = memcmp(row, (const unsigned char *)wa->data + (size_t)k * wa->row_bytes, wa->row_bytes) == 0;
            }
            CHECKF(same, "%s: layer 1 attn_q: not the rows its imatrix entry makes", mixes[i].mix);
        }
        mlstack_model_close(a);
    }
    mlstack_model_close(f);
    mlstack__gguf_dequant_all = 0;
}

/* quant_mix "Q4_K_M" on float weights (llama-kq.gguf opened as its dequantized f32 weights:
   hidden 256, 2 layers): llama.cpp's choice per tensor (Q6_K head; attn_v and ffn_down Q6_K in
   the layers that use more bits, here layer 1; Q4_K elsewhere), the file mlstack_model_save_gguf
   writes reopens with the same types and logits (bits), prefill == decode; an unknown mix name
   is refused. (That these tensors equal llama-quantize's byte for byte is checked on SmolLM2 by
   tools/kl_table.py.) */
static void test_write_mix(void) {
    static const int32_t ids[6] = {3, 1, 4, 1, 5, 9};
    char path[] = "/tmp/mlstack_gguf_mix_XXXXXX";
    int l;
    mlstack_model_desc md;
    mlstack_model *a = NULL, *b = NULL;
    mlstack_engine *ea = NULL, *eb = NULL;
    mlstack_engine_desc ed;
    mlstack_error err;
    float *la = NULL, *lb = NULL, *lc = NULL;
    if (temp_file(path)) return;
    memset(&md, 0, sizeof md);
    memset(&ed, 0, sizeof ed);
    md.path = "tests/fixtures/gguf/llama-kq.gguf";
    md.quant_mix = "Q4_K_X";
    CHECK(mlstack_model_open(&md, &a, &err) == MLSTACK_ERR_INVALID_ARG && strstr(err.message, "Q4_K_X"));
    md.quant_mix = "q4_k_m";
    mlstack__gguf_dequant_all = 1;
    CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_OK, "%s", err.message);
    mlstack__gguf_dequant_all = 0;
    if (!a) return;
    {
        int ok = a->lm_head.wtype == MLSTACK__W_Q6_K;
        for (l = 0; l < 2; l++) {
            const mlstack__layer *L = &a->layers[l];
            int more = l == 1 ? MLSTACK__W_Q6_K : MLSTACK__W_Q4_K;
            ok &= L->wq.wtype == MLSTACK__W_Q4_K && L->wk.wtype == MLSTACK__W_Q4_K && L->wv.wtype == more &&
                  L->wo.wtype == MLSTACK__W_Q4_K && L->w_gate.wtype == MLSTACK__W_Q4_K &&
                  L->w_up.wtype == MLSTACK__W_Q4_K && L->w_down.wtype == more;
        }
        CHECKF(ok, "%s", "Q4_K_M: a tensor's type is not llama.cpp's choice");
    }
    save_reopen(a, path, &b, "Q4_K_M");
    if (b) {
        const mlstack__gguf_tensor *t = mlstack__gguf_tensor_find(&b->gguf, "blk.1.ffn_down.weight");
        CHECK(t && t->type == MLSTACK__GGML_Q6_K && b->layers[0].wq.wtype == MLSTACK__W_Q4_K);
    }
    if (b && mlstack_engine_init(a, &ed, &ea, &err) == MLSTACK_OK &&
        mlstack_engine_init(b, &ed, &eb, &err) == MLSTACK_OK) {
        la = fx_eval_all(ea, ids, 6, 256, 6);
        lb = fx_eval_all(eb, ids, 6, 256, 6);
        lc = fx_eval_all(eb, ids, 6, 256, 1);
        CHECK(la && lb && lc && memcmp(la, lb, sizeof(float) * 6 * 256) == 0);
        CHECK(lb && lc && memcmp(lb, lc, sizeof(float) * 6 * 256) == 0);
    }
    free(la);
    free(lb);
    free(lc);
    mlstack_engine_free(ea);
    mlstack_engine_free(eb);
    mlstack_model_close(a);
    mlstack_model_close(b);
    remove(path);
}

/* The other llama.cpp file types on llama-kq.gguf's dequantized f32 weights (hidden 256, 2
   layers, 4 query heads per KV head, an untied head): each tensor gets the type
   llama_tensor_get_type gives it (the rules in >>model: e.g. Q2_K's attn_v Q4_K at >= 4 query
   heads per KV head, Q3_K_M's attn_v Q5_K in layers 0 and 1), general.file_type is the mix's
   number, Q4_0 and IQ4_NL (held repacked as Q4_1 / Q8_0) are written back as those types, and
   the file reopened gives the same logits (bits) as the model quantized in memory. */
static void test_write_mixes(void) {
    static const int32_t ids[4] = {7, 3, 200, 11};
    static const struct {
        const char *mix;
        int ftype;
        uint32_t head, q, v0, v1, o, down0, down1;
    } cases[] = {
        {"Q4_0", 2, MLSTACK__GGML_Q6_K, MLSTACK__GGML_Q4_0, MLSTACK__GGML_Q4_0, MLSTACK__GGML_Q4_0, MLSTACK__GGML_Q4_0,
         MLSTACK__GGML_Q4_0, MLSTACK__GGML_Q4_0},
        {"q8_0", 7, MLSTACK__GGML_Q8_0, MLSTACK__GGML_Q8_0, MLSTACK__GGML_Q8_0, MLSTACK__GGML_Q8_0, MLSTACK__GGML_Q8_0,
         MLSTACK__GGML_Q8_0, MLSTACK__GGML_Q8_0},
        {"Q2_K", 10, MLSTACK__GGML_Q6_K, MLSTACK__GGML_Q2_K, MLSTACK__GGML_Q4_K, MLSTACK__GGML_Q4_K, MLSTACK__GGML_Q3_K,
         MLSTACK__GGML_Q3_K, MLSTACK__GGML_Q3_K},
        {"Q3_K_M", 12, MLSTACK__GGML_Q6_K, MLSTACK__GGML_Q3_K, MLSTACK__GGML_Q5_K, MLSTACK__GGML_Q5_K,
         MLSTACK__GGML_Q4_K, MLSTACK__GGML_Q4_K, MLSTACK__GGML_Q4_K},
        {"Q3_K_L", 13, MLSTACK__GGML_Q6_K, MLSTACK__GGML_Q3_K, MLSTACK__GGML_Q5_K, MLSTACK__GGML_Q5_K,
         MLSTACK__GGML_Q5_K, MLSTACK__GGML_Q5_K, MLSTACK__GGML_Q5_K},
        {"Q4_K_S", 14, MLSTACK__GGML_Q6_K, MLSTACK__GGML_Q4_K, MLSTACK__GGML_Q5_K, MLSTACK__GGML_Q5_K,
         MLSTACK__GGML_Q4_K, MLSTACK__GGML_Q4_K, MLSTACK__GGML_Q4_K},
        {"Q5_K_M", 17, MLSTACK__GGML_Q6_K, MLSTACK__GGML_Q5_K, MLSTACK__GGML_Q5_K, MLSTACK__GGML_Q6_K,
         MLSTACK__GGML_Q5_K, MLSTACK__GGML_Q5_K, MLSTACK__GGML_Q6_K},
        {"IQ4_NL", 25, MLSTACK__GGML_Q6_K, MLSTACK__GGML_IQ4_NL, MLSTACK__GGML_Q5_K, MLSTACK__GGML_Q5_K,
         MLSTACK__GGML_IQ4_NL, MLSTACK__GGML_IQ4_NL, MLSTACK__GGML_IQ4_NL},
    };
    size_t ci;
    for (ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        char path[] = "/tmp/mlstack_gguf_mixes_XXXXXX";
        int l;
        mlstack_model_desc md;
        mlstack_model *a = NULL, *b = NULL;
        mlstack_engine *ea = NULL, *eb = NULL;
        mlstack_engine_desc ed;
        mlstack_error err;
        float *la = NULL, *lb = NULL;
        if (temp_file(path)) return;
        memset(&md, 0, sizeof md);
        memset(&ed, 0, sizeof ed);
        md.path = "tests/fixtures/gguf/llama-kq.gguf";
        md.quant_mix = cases[ci].mix;
        mlstack__gguf_dequant_all = 1;
        CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_OK, "%s: %s", cases[ci].mix, err.message);
        mlstack__gguf_dequant_all = 0;
        save_reopen(a, path, &b, cases[ci].mix);
        if (b) {
            const mlstack__gguf_kv *ft = mlstack__gguf_find(&b->gguf, "general.file_type");
            const mlstack__gguf_tensor *t;
            int ok = ft && mlstack__le(b->gguf.bytes + ft->off, 4) == (uint64_t)cases[ci].ftype;
            CHECKF(ok, "%s: general.file_type is not %d", cases[ci].mix, cases[ci].ftype);
            for (l = 0; l < 2; l++) {
                static const char *const rest[] = {"attn_q",   "attn_k", "attn_v",  "attn_output",
                                                   "ffn_gate", "ffn_up", "ffn_down"};
                int k;
                for (k = 0; k < 7; k++) {
                    char nm[64];
                    uint32_t want = k == 2   ? (l ? cases[ci].v1 : cases[ci].v0)
                                    : k == 3 ? cases[ci].o
                                    : k == 6 ? (l ? cases[ci].down1 : cases[ci].down0)
                                             : cases[ci].q;
                    snprintf(nm, sizeof nm, "blk.%d.%s.weight", l, rest[k]);
                    t = mlstack__gguf_tensor_find(&b->gguf, nm);
                    CHECKF(t && t->type == want, "%s: %s is %s, llama.cpp's choice is %s", cases[ci].mix, nm,
                           t ? mlstack__ggml_type_name(t->type) : "missing", mlstack__ggml_type_name(want));
                }
            }
            t = mlstack__gguf_tensor_find(&b->gguf, "output.weight");
            CHECKF(t && t->type == cases[ci].head, "%s: output.weight is %s", cases[ci].mix,
                   t ? mlstack__ggml_type_name(t->type) : "missing");
        }
        if (b && mlstack_engine_init(a, &ed, &ea, &err) == MLSTACK_OK &&
            mlstack_engine_init(b, &ed, &eb, &err) == MLSTACK_OK) {
            la = fx_eval_all(ea, ids, 4, 256, 4);
            lb = fx_eval_all(eb, ids, 4, 256, 4);
            CHECKF(la && lb && memcmp(la, lb, sizeof(float) * 4 * 256) == 0, "%s: reopened logits differ",
                   cases[ci].mix);
        }
        free(la);
        free(lb);
        mlstack_engine_free(ea);
        mlstack_engine_free(eb);
        mlstack_model_close(a);
        mlstack_model_close(b);
        remove(path);
    }
}

/* Model-level errors in metadata name the key. */
static void test_model_errors(void) {
    static const struct {
        const char *arch;
        int with_blocks;
        mlstack_result want;
        const char *needle;
    } cases[] = {{"mamba", 1, MLSTACK_ERR_UNSUPPORTED, "general.architecture = \"mamba\" is not supported"},
                 {"llama", 0, MLSTACK_ERR_FORMAT, "missing required key llama.block_count"}};
    size_t i;
    /* a complete header with odd tensors: a name "blk.0" without a second part, a norm of the
       wrong length */
    {
        char path[] = "/tmp/mlstack_gguf_XXXXXX";
        int fd = mkstemp(path);
        FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
        gb b = {0, 0, 0};
        uint64_t ne_e[2] = {32, 8}, ne_n[1] = {31}, ne_b[1] = {32};
        mlstack_model_desc md;
        mlstack_model *m = NULL;
        mlstack_error err;
        mlstack_result r;
        gb_head(&b, 3, 3, 6);
        kv_str(&b, "general.architecture", "llama");
        kv_u32(&b, "llama.block_count", 1);
        kv_u32(&b, "llama.embedding_length", 32);
        kv_u32(&b, "llama.feed_forward_length", 64);
        kv_u32(&b, "llama.attention.head_count", 2);
        kv_u32(&b, "llama.attention.head_count_kv", 2);
        tinfo(&b, "token_embd.weight", 2, ne_e, 0, 0);
        tinfo(&b, "blk.0", 1, ne_b, 0, 1024);
        tinfo(&b, "output_norm.weight", 1, ne_n, 0, 1152);
        gb_pad(&b, 32);
        gb_zeros(&b, 1152 + 124);
        if (f) {
            fwrite(b.p, 1, b.n, f);
            fclose(f);
            memset(&md, 0, sizeof md);
            md.path = path;
            r = mlstack_model_open(&md, &m, &err);
            CHECKF(r == MLSTACK_ERR_FORMAT && strstr(err.message, "model.norm.weight has shape [31]"), "%d %s", (int)r,
                   err.message);
            mlstack_model_close(m);
            remove(path);
        }
        free(b.p);
    }
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char path[] = "/tmp/mlstack_gguf_XXXXXX";
        int fd = mkstemp(path);
        FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
        gb b = {0, 0, 0};
        mlstack_model_desc md;
        mlstack_model *m = NULL;
        mlstack_error err;
        mlstack_result r;
        gb_head(&b, 3, 0, cases[i].with_blocks ? 2 : 1);
        kv_str(&b, "general.architecture", cases[i].arch);
        if (cases[i].with_blocks) kv_u32(&b, "mamba.block_count", 2);
        if (!f) {
            SKIP("cannot create a temporary file");
            free(b.p);
            continue;
        }
        fwrite(b.p, 1, b.n, f);
        fclose(f);
        memset(&md, 0, sizeof md);
        md.path = path;
        r = mlstack_model_open(&md, &m, &err);
        CHECKF(r == cases[i].want && strstr(err.message, cases[i].needle), "%s: %d %s", cases[i].arch, (int)r,
               err.message);
        mlstack_model_close(m);
        remove(path);
        free(b.p);
    }
}

/* The tokenizer.ggml.pre name written for a folder's tokenizer.json: the shared families. */
static void test_pre_names(void) {
    static const struct {
        const char *family, *want;
    } cases[] = {{"gpt2", "gpt-2"},    {"smollm2", "smollm"},      {"falcon-7b", "falcon"}, {"mpt-7b", "mpt"},
                 {"qwen2.5", "qwen2"}, {"llama2-tinyllama", NULL}, {"phi3-mini-4k", NULL}};
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[128], name[64];
        mlstack_tokenizer *t = NULL;
        mlstack_error err;
        const char *got;
        snprintf(dir, sizeof dir, SHARED "tokenizers/%s", cases[i].family);
        if (mlstack_tokenizer_open(dir, &t, &err) != MLSTACK_OK) {
            SKIP("%s: %s", dir, err.message);
            continue;
        }
        got = mlstack__gguf_pre_name(mlstack__json_get(t->doc.root, "normalizer"),
                                     mlstack__json_get(t->doc.root, "pre_tokenizer"), name, sizeof name);
        CHECKF(cases[i].want ? got && strcmp(got, cases[i].want) == 0 : got == NULL, "%s: pre name %s, want %s",
               cases[i].family, got ? got : "(none)", cases[i].want ? cases[i].want : "(none)");
        mlstack_tokenizer_close(t);
    }
}

/* A tied head quantized to Q8_0 is written as the GGUF's token_embd blocks (as llama.cpp keeps
   it); opened again, the embedding stays those blocks in the mapping (no f32 copy), each row
   looked up is d * q of its block (llama.cpp's dequantize_row_q8_0, computed here from the
   source model's head), and a folder saved from it keeps the blocks (marked Q8_0 in its
   metadata) and gives the same logits. */
static void test_block_embedding(void) {
    static const int32_t ids[6] = {3, 1, 4, 1, 5, 9};
    char path[] = "/tmp/mlstack_gguf_e_XXXXXX", dir[] = "/tmp/mlstack_gguf_ed_XXXXXX", cmd[200];
    int fd = mkstemp(path), t, i, bad = 0;
    mlstack_model_desc md;
    mlstack_model *a = NULL, *b = NULL, *c = NULL;
    mlstack_engine *eb = NULL, *ec = NULL;
    mlstack_engine_desc ed;
    mlstack_error err;
    float *lb = NULL, *lc = NULL, x[1024];
    if (fd < 0 || !mkdtemp(dir)) {
        SKIP("no temporary file");
        return;
    }
    close(fd);
    memset(&md, 0, sizeof md);
    memset(&ed, 0, sizeof ed);
    md.path = "tests/fixtures/models/llama_tied";
    md.quant = MLSTACK_DTYPE_Q8_0;
    CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_OK, "%s", err.message);
    if (!a) return;
    CHECKF(mlstack_model_save_gguf(a, path, &err) == MLSTACK_OK, "%s", err.message);
    md.path = path;
    md.quant = 0;
    CHECKF(mlstack_model_open(&md, &b, &err) == MLSTACK_OK, "%s", err.message);
    if (b) {
        int D = b->cfg.n_embd, nb = D / 32;
        CHECK(b->embed_dtype == MLSTACK_DTYPE_Q8_0 && D <= 1024);
        CHECKF((const unsigned char *)b->embed >= b->gguf.data &&
                   (const unsigned char *)b->embed < b->gguf.data + b->gguf.data_size,
               "the Q8_0 embedding is not read in place from the mapped file");
        for (t = 0; t < b->cfg.n_vocab && D <= 1024; t++) {
            const mlstack__q8_0 *blk = (const mlstack__q8_0 *)(const void *)((const unsigned char *)a->lm_head.data +
                                                                             (size_t)t * a->lm_head.row_bytes);
            mlstack__embed_row(b, t, x);
            for (i = 0; i < D && i / 32 < nb; i++)
                bad += x[i] != mlstack__f16_to_f32(blk[i / 32].d) * (float)blk[i / 32].q[i % 32];
        }
        CHECKF(bad == 0, "%d embedding values differ from d * q of the head's blocks", bad);
        CHECKF(mlstack_model_save(b, dir, &err) == MLSTACK_OK, "save: %s", err.message);
        /* a GGUF has no config.json to copy beside the weights: the folder's (the same model) */
        snprintf(cmd, sizeof cmd, "cp tests/fixtures/models/llama_tied/config.json '%s'/", dir);
        CHECK(system(cmd) == 0);
        md.path = dir;
        CHECKF(mlstack_model_open(&md, &c, &err) == MLSTACK_OK, "reopen: %s", err.message);
        CHECK(c && c->embed_dtype == MLSTACK_DTYPE_Q8_0);
        if (c && mlstack_engine_init(b, &ed, &eb, &err) == MLSTACK_OK &&
            mlstack_engine_init(c, &ed, &ec, &err) == MLSTACK_OK) {
            lb = fx_eval_all(eb, ids, 6, b->cfg.n_vocab, 6);
            lc = fx_eval_all(ec, ids, 6, b->cfg.n_vocab, 6);
            CHECKF(lb && lc && memcmp(lb, lc, sizeof(float) * 6 * (size_t)b->cfg.n_vocab) == 0,
                   "the folder saved with block embeddings gives other logits than the GGUF");
        }
        { /* blocks that do not fit the config: a clear error naming the tensor */
            mlstack_model *d = NULL;
            snprintf(cmd, sizeof cmd, "sed -i 's/\"vocab_size\": 517/\"vocab_size\": 516/' '%s'/config.json", dir);
            CHECK(system(cmd) == 0);
            CHECKF(mlstack_model_open(&md, &d, &err) == MLSTACK_ERR_FORMAT && strstr(err.message, "embed_tokens") &&
                       strstr(err.message, "wrong shape"),
                   "a Q8_0 embedding of 517 rows for vocab_size 516 opened (or: %s)", d ? "opened" : err.message);
            mlstack_model_close(d);
        }
    }
    free(lb);
    free(lc);
    mlstack_engine_free(eb);
    mlstack_engine_free(ec);
    mlstack_model_close(a);
    mlstack_model_close(b);
    mlstack_model_close(c);
    remove(path);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
}

/* b (opened as stored) holds its embedding table of `type` in the mapped file, c (the same file
   opened with mlstack__gguf_dequant_all) as f32 rows expanded at load: every row b looks up has
   the bits of c's. */
static void raw_embed_rows(mlstack_model *b, mlstack_model *c, uint32_t type, const char *what) {
    int t, i, bad = 0, D;
    float x[1024], y[1024];
    if (!b || !c) return;
    D = b->cfg.n_embd;
    CHECKF(b->embed_gtype == type && b->embed_dtype == MLSTACK_DTYPE_U8, "%s: the table is held as %s", what,
           b->embed_gtype ? mlstack__ggml_type_name(b->embed_gtype) : mlstack_dtype_name(b->embed_dtype));
    CHECKF((const unsigned char *)b->embed >= b->gguf.data &&
               (const unsigned char *)b->embed < b->gguf.data + b->gguf.data_size,
           "%s: the table is not read in place from the mapped file", what);
    CHECKF(c->embed_gtype == 0 && c->embed_dtype == MLSTACK_DTYPE_F32, "%s: the reference is not f32 rows", what);
    for (t = 0; t < b->cfg.n_vocab && D <= 1024 && b->embed_gtype == type; t++) {
        mlstack__embed_row(b, t, x);
        mlstack__embed_row(c, t, y);
        for (i = 0; i < D; i++) bad += memcmp(&x[i], &y[i], sizeof x[i]) != 0;
    }
    CHECKF(bad == 0, "%s: %d looked-up values differ from the f32 table's", what, bad);
}

/* x opened as stored (*b) and with every block type dequantized at load (*c). */
static void open_both(const char *path, mlstack_model **b, mlstack_model **c, const char *what) {
    mlstack_model_desc md;
    mlstack_error err;
    memset(&md, 0, sizeof md);
    md.path = path;
    CHECKF(mlstack_model_open(&md, b, &err) == MLSTACK_OK, "%s: %s", what, err.message);
    mlstack__gguf_dequant_all = 1;
    CHECKF(mlstack_model_open(&md, c, &err) == MLSTACK_OK, "%s (f32): %s", what, err.message);
    mlstack__gguf_dequant_all = 0;
}

/* An embedding table of a block type other than Q8_0 / Q4_1 (K-quants, i-quants, Q5_0 ...)
   stays those blocks in the mapped file, as llama.cpp keeps it, rather than an f32 copy of the
   whole table: the looked-up rows have the f32 copy's bits, so an untied model of f32 layers
   gives the same logits either way; a tied head of such a table reads its blocks (Q5_0 repacked
   as Q8_0), and mlstack_model_save (safetensors) refuses a table it cannot carry. */
static void test_raw_block_embedding(void) {
    static const int32_t ids[5] = {7, 3, 200, 11, 255};
    static const uint32_t types[3] = {MLSTACK__GGML_Q4_K, MLSTACK__GGML_Q5_0, MLSTACK__GGML_IQ4_XS};
    char path[] = "/tmp/mlstack_gguf_raw_XXXXXX", dir[] = "/tmp/mlstack_gguf_rawd_XXXXXX", cmd[160];
    mlstack_model_desc md;
    mlstack_model *a = NULL, *b = NULL, *c = NULL;
    mlstack_engine *eb = NULL, *ec = NULL;
    mlstack_engine_desc ed;
    mlstack_error err;
    size_t k, rb, r;
    int t;
    if (temp_file(path) || !mkdtemp(dir)) return;
    memset(&md, 0, sizeof md);
    memset(&ed, 0, sizeof ed);
    md.path = "tests/fixtures/gguf/llama-kq.gguf"; /* D 256, untied: every layer as f32 */
    mlstack__gguf_dequant_all = 1;
    CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_OK, "%s", err.message);
    mlstack__gguf_dequant_all = 0;
    for (k = 0; a && k < sizeof types / sizeof types[0]; k++) {
        const void *e0 = a->embed;
        mlstack_dtype d0 = a->embed_dtype;
        int D = a->cfg.n_embd, V = a->cfg.n_vocab;
        unsigned char *tab;
        float *la = NULL, *lc = NULL;
        rb = (size_t)(D / mlstack__ggml_types[types[k]].block) * mlstack__ggml_types[types[k]].size;
        tab = (unsigned char *)malloc(rb * (size_t)V);
        if (!tab) continue;
        for (t = 0; t < V; t++) {
            if (types[k] == MLSTACK__GGML_IQ4_XS) { /* no quantizer here: any bytes, with d 1/64 */
                for (r = 0; r < rb; r++) tab[(size_t)t * rb + r] = (unsigned char)(r * 131u + (size_t)t * 17u);
                tab[(size_t)t * rb] = 0x00, tab[(size_t)t * rb + 1] = 0x24;
            } else {
                mlstack__quantize_row(16 + (int)types[k], (const float *)e0 + (size_t)t * (size_t)D,
                                      tab + (size_t)t * rb, D);
            }
        }
        a->embed = tab, a->embed_dtype = MLSTACK_DTYPE_U8, a->embed_gtype = types[k];
        CHECKF(mlstack_model_save_gguf(a, path, &err) == MLSTACK_OK, "%s", err.message);
        a->embed = e0, a->embed_dtype = d0, a->embed_gtype = 0;
        open_both(path, &b, &c, mlstack__ggml_type_name(types[k]));
        raw_embed_rows(b, c, types[k], mlstack__ggml_type_name(types[k]));
        if (b && c && mlstack_engine_init(b, &ed, &eb, &err) == MLSTACK_OK &&
            mlstack_engine_init(c, &ed, &ec, &err) == MLSTACK_OK) {
            la = fx_eval_all(eb, ids, 5, V, 5);
            lc = fx_eval_all(ec, ids, 5, V, 5);
            CHECKF(la && lc && memcmp(la, lc, sizeof(float) * 5 * (size_t)V) == 0,
                   "%s: logits differ from those of the f32 table", mlstack__ggml_type_name(types[k]));
        }
        if (b && k == 0) {
            CHECKF(mlstack_model_save(b, dir, &err) == MLSTACK_ERR_UNSUPPORTED && strstr(err.message, "Q4_K"),
                   "safetensors output of a Q4_K embedding table: %s", err.message);
        }
        free(la), free(lc), free(tab);
        mlstack_engine_free(eb), mlstack_engine_free(ec), eb = ec = NULL;
        mlstack_model_close(b), mlstack_model_close(c), b = c = NULL;
    }
    mlstack_model_close(a), a = NULL;
    { /* tied (D 64): the head of Q5_0 blocks is written as token_embd, read back as the table */
        mlstack__weight h0;
        unsigned char *tab;
        md.path = "tests/fixtures/models/llama_tied";
        CHECKF(mlstack_model_open(&md, &a, &err) == MLSTACK_OK, "%s", err.message);
        if (a && a->embed_dtype == MLSTACK_DTYPE_F32) {
            rb = (size_t)(a->cfg.n_embd / 32) * 22;
            tab = (unsigned char *)malloc(rb * (size_t)a->cfg.n_vocab);
            for (t = 0; tab && t < a->cfg.n_vocab; t++)
                mlstack__quantize_row(MLSTACK__W_Q5_0, (const float *)a->embed + (size_t)t * (size_t)a->cfg.n_embd,
                                      tab + (size_t)t * rb, a->cfg.n_embd);
            h0 = a->lm_head;
            a->lm_head.data = tab, a->lm_head.wtype = MLSTACK__W_Q5_0, a->lm_head.row_bytes = rb;
            CHECKF(tab && mlstack_model_save_gguf(a, path, &err) == MLSTACK_OK, "tied: %s", err.message);
            a->lm_head = h0;
            free(tab);
            open_both(path, &b, &c, "tied Q5_0");
            raw_embed_rows(b, c, MLSTACK__GGML_Q5_0, "tied Q5_0");
            CHECKF(b && b->lm_head.wtype == MLSTACK__W_Q8_0 && b->lm_head.data != b->embed,
                   "tied Q5_0: the head is not the table's blocks repacked as Q8_0");
            if (b && mlstack_engine_init(b, &ed, &eb, &err) == MLSTACK_OK) {
                float *lb = fx_eval_all(eb, ids, 4, b->cfg.n_vocab, 4);
                CHECKF(lb != NULL, "tied Q5_0: no logits");
                free(lb);
            }
            mlstack_engine_free(eb);
            mlstack_model_close(b), mlstack_model_close(c);
        }
        mlstack_model_close(a);
    }
    remove(path);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) printf("could not remove %s\n", dir);
}

/* The 2026 families as llama.cpp writes them (tests/fixtures/gguf/<name>-f32.gguf, written by
   tools/make_gguf_fixtures.py from tests/fixtures/families/<name>): read, every position of the
   family's prompt within 1e-4 of transformers' logits (logits.bin) and bit-identical to the
   safetensors folder; written by mlstack_model_save_gguf and read back, bit-identical again, with
   the same tensor names and types and the same architecture keys as llama.cpp's file. */
static void family_keys_match(const char *name, const char *ref_path, const char *ours_path) {
    mlstack__gguf g1, g2;
    mlstack_error err;
    uint64_t k;
    int same = 1;
    memset(&g1, 0, sizeof g1), memset(&g2, 0, sizeof g2);
    if (mlstack__gguf_open(&g1, ref_path, &err) != MLSTACK_OK ||
        mlstack__gguf_open(&g2, ours_path, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: %s", name, err.message);
        mlstack__gguf_close(&g1);
        return;
    }
    for (k = 0; k < g1.n_tensors; k++) { /* every tensor of llama.cpp's file, of the same type and shape */
        const mlstack__gguf_tensor *a = &g1.tensors[k], *b = mlstack__gguf_tensor_find(&g2, a->name);
        if (!b || b->type != a->type || b->ne[0] != a->ne[0] || b->ne[1] != a->ne[1]) {
            CHECKF(0, "%s: tensor %s missing or different in our GGUF", name, a->name);
            same = 0;
        }
    }
    CHECKF(g1.n_tensors == g2.n_tensors, "%s: %d tensors in llama.cpp's file, %d in ours", name, (int)g1.n_tensors,
           (int)g2.n_tensors);
    for (k = 0; k < g1.n_kv; k++) { /* the model keys (not general.* / tokenizer.*) of the same type */
        const mlstack__gguf_kv *a = &g1.kvs[k], *b;
        if (strncmp(a->key, "general.", 8) == 0 || strncmp(a->key, "tokenizer.", 10) == 0) continue;
        b = mlstack__gguf_find(&g2, a->key);
        if (!b || b->type != a->type || b->n != a->n || b->bytes != a->bytes ||
            (a->type != MLSTACK__GGUF_F32 && memcmp(g1.bytes + a->off, g2.bytes + b->off, (size_t)a->bytes))) {
            CHECKF(0, "%s: key %s missing or different in our GGUF", name, a->key);
            same = 0;
        }
    }
    if (same) printf("  %-10s our GGUF has llama.cpp's %d tensors and model keys\n", name, (int)g1.n_tensors);
    mlstack__gguf_close(&g1);
    mlstack__gguf_close(&g2);
}

static void test_family(const char *name) {
    char dir[256], path[320], tmp[] = "/tmp/mlstack_fam_gguf_XXXXXX";
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_model *m[3] = {NULL, NULL, NULL};
    mlstack_engine *e[3] = {NULL, NULL, NULL};
    mlstack_error err;
    mlstack__json_doc doc;
    const mlstack__json *v;
    float *ref = NULL, *l[3] = {NULL, NULL, NULL};
    int32_t ids[160];
    int n = 0, i, V = 0;
    size_t len, blen;
    char *text;
    double d = 0;
    snprintf(dir, sizeof dir, "tests/fixtures/families/%s", name);
    snprintf(path, sizeof path, "%s/reference.json", dir);
    text = tl_read(path, &len);
    snprintf(path, sizeof path, "%s/logits.bin", dir);
    ref = (float *)tl_read(path, &blen);
    if (!text || !ref || mlstack__json_parse(&doc, text, len, path, &err) != MLSTACK_OK) {
        CHECKF(0, "%s: reference missing", name);
        free(text);
        free(ref);
        return;
    }
    for (v = mlstack__json_get(doc.root, "ids")->child; v && n < 160; v = v->next) ids[n++] = (int32_t)v->i;
    memset(&md, 0, sizeof md);
    memset(&ed, 0, sizeof ed);
    ed.kv_type = MLSTACK_KV_F32;
    md.path = dir;
    CHECKF(mlstack_model_open(&md, &m[0], &err) == MLSTACK_OK, "%s: %s", name, err.message);
    snprintf(path, sizeof path, "tests/fixtures/gguf/%s-f32.gguf", name);
    md.path = path;
    CHECKF(mlstack_model_open(&md, &m[1], &err) == MLSTACK_OK, "%s: %s", path, err.message);
    if (temp_file(tmp) == 0) save_reopen(m[0], tmp, &m[2], name);
    for (i = 0; i < 3; i++) {
        mlstack_model_info mi;
        if (!m[i]) continue;
        mlstack_model_get_info(m[i], &mi);
        V = mi.n_vocab;
        CHECKF(mlstack_engine_init(m[i], &ed, &e[i], &err) == MLSTACK_OK, "%s: %s", name, err.message);
        if (e[i]) l[i] = fx_eval_all(e[i], ids, n, V, i == 2 ? 1 : n); /* ours read back: decoded row by row */
    }
    if (l[0] && l[1] && l[2] && blen == sizeof(float) * (size_t)n * (size_t)V) {
        for (i = 0; i < n * V; i++)
            if (!(fabs((double)l[1][i] - ref[i]) <= d)) d = fabs((double)l[1][i] - ref[i]);
        CHECKF(d <= 1e-4, "%s: llama.cpp's GGUF: max |logit - transformers| %.3g", name, d);
        CHECKF(!memcmp(l[0], l[1], sizeof(float) * (size_t)n * (size_t)V),
               "%s: llama.cpp's GGUF gives other logits than the safetensors folder", name);
        CHECKF(!memcmp(l[0], l[2], sizeof(float) * (size_t)n * (size_t)V),
               "%s: our GGUF, read back, gives other logits than the safetensors folder", name);
        printf("  %-10s GGUF %d positions: max |logit - transformers| = %.2e, = folder's bit for bit (both ways)\n",
               name, n, d);
        family_keys_match(name, path, tmp);
    } else {
        CHECKF(0, "%s: GGUF evaluation failed (%d logits bytes)", name, (int)blen);
    }
    for (i = 0; i < 3; i++) {
        free(l[i]);
        mlstack_engine_free(e[i]);
        mlstack_model_close(m[i]);
    }
    unlink(tmp);
    mlstack__json_free(&doc);
    free(text);
    free(ref);
}

static void test_families(void) {
    static const char *const names[4] = {"smollm3", "exaone4", "seed_oss", "apertus"};
    int i;
    for (i = 0; i < 4; i++) test_family(names[i]);
}

/* gpt-oss as llama.cpp's converter writes it (tools/make_gguf_fixtures.py, from the family
   fixture gpt_oss_mxfp4): MXFP4 experts used in place (mapped, no copy), sinks, yarn, sliding
   window, expert biases. Logits within 1e-4 of transformers' (the family fixture's reference)
   at every position, and bit-identical with the same weights opened from the Hugging Face
   folder; the greedy continuation is transformers'. */
static void test_gpt_oss(void) {
    const char *dir = "tests/fixtures/families/gpt_oss_mxfp4";
    char path[256];
    size_t len, blen;
    char *text, *bin;
    mlstack__json_doc doc;
    mlstack_model *mg = NULL, *mh = NULL;
    mlstack_engine *eg = NULL, *eh = NULL;
    mlstack_model_desc md;
    mlstack_engine_desc ed;
    mlstack_error err;
    int32_t ids[160], greedy[64];
    int n = 0, ng = 0, k, same = 1;
    const mlstack__json *v;
    float *lg = NULL, *lh = NULL;
    double maxdiff = 0;
    snprintf(path, sizeof path, "%s/reference.json", dir);
    text = tl_read(path, &len);
    snprintf(path, sizeof path, "%s/logits.bin", dir);
    bin = tl_read(path, &blen);
    CHECKF(text && bin, "%s: reference missing", dir);
    if (!text || !bin || mlstack__json_parse(&doc, text, len, path, &err) != MLSTACK_OK) goto done;
    for (v = mlstack__json_get(doc.root, "ids")->child; v && n < 160; v = v->next) ids[n++] = (int32_t)v->i;
    for (v = mlstack__json_get(doc.root, "greedy")->child; v && ng < 64; v = v->next) greedy[ng++] = (int32_t)v->i;
    mlstack__json_free(&doc);
    memset(&md, 0, sizeof md);
    memset(&ed, 0, sizeof ed);
    ed.n_threads = 2, ed.kv_type = MLSTACK_KV_F32;
    md.path = "tests/fixtures/gguf/gpt-oss-mxfp4.gguf";
    CHECKF(mlstack_model_open(&md, &mg, &err) == MLSTACK_OK, "gpt-oss GGUF: %s", err.message);
    md.path = dir;
    CHECKF(mlstack_model_open(&md, &mh, &err) == MLSTACK_OK, "gpt-oss folder: %s", err.message);
    if (!mg || !mh || mlstack_engine_init(mg, &ed, &eg, &err) || mlstack_engine_init(mh, &ed, &eh, &err)) goto done;
    /* it is written back (test_moe_gguf reads such files back bit for bit) */
    CHECKF(mlstack_model_save_gguf(mg, "build/tmp_gpt_oss_out.gguf", &err) == MLSTACK_OK, "gpt-oss GGUF write: %s",
           err.message);
    remove("build/tmp_gpt_oss_out.gguf");
    CHECK(blen == sizeof(float) * 128 * (size_t)n);
    lg = fx_eval_all(eg, ids, n, 128, n);
    lh = fx_eval_all(eh, ids, n, 128, 37);
    if (!lg || !lh || blen != sizeof(float) * 128 * (size_t)n) goto done;
    for (k = 0; k < n * 128; k++) {
        double d = fabs((double)lg[k] - (double)((const float *)(const void *)bin)[k]);
        if (!(d <= maxdiff)) maxdiff = d;
    }
    printf("gpt-oss GGUF (MXFP4 experts): max |logit - transformers| = %.2e over %d positions\n", maxdiff, n);
    CHECKF(maxdiff <= 1e-4, "gpt-oss GGUF: max logit difference %.3g", maxdiff);
    CHECKF(memcmp(lg, lh, sizeof(float) * 128 * (size_t)n) == 0, "gpt-oss GGUF: logits differ from the folder's");
    CHECKF(fx_generate(eg, ids, n, 32) == MLSTACK_OK, "gpt-oss GGUF generate: %s", mlstack_engine_error(eg));
    for (k = 0; k < ng; k++) same &= k < fx_n_greedy && fx_greedy[k] == greedy[k];
    CHECKF(same && ng == 32, "gpt-oss GGUF: greedy continuation differs from transformers'");
done:
    free(lg), free(lh), free(text), free(bin);
    mlstack_engine_free(eg), mlstack_engine_free(eh);
    mlstack_model_close(mg), mlstack_model_close(mh);
}

/* Quick mode (MLSTACK_TEST_QUICK: make check, and the AArch64 run under qemu): the whole-model
   quantizations that compare the quantizer with itself and with llama.cpp's per-tensor type rules
   are left out (the same C on every target; the native flavours run them). The row-by-row byte
   checks against llama.cpp's quantizer still run: a build that contracts multiply-adds could
   change those bytes. */
static void full_only(int quick, void (*fn)(void), const char *what) {
    if (!quick) {
        fn();
        return;
    }
    SKIP("%s: quick mode (MLSTACK_TEST_QUICK; make test runs it natively)", what);
}

int main(void) {
    int quick = getenv("MLSTACK_TEST_QUICK") != NULL;
    test_families();
    test_gpt_oss();
    test_pre_names();
    test_model();
    test_float_permuted();
    test_kq_model();
    test_iq_model();
    test_tq_model();
    test_model_errors();
    test_write();
    test_block_embedding();
    test_raw_block_embedding();
    test_write_mix();
    full_only(quick, test_imatrix, "llama-kq.gguf quantized as IQ4_XS with an imatrix, and the hostile imatrix files");
    full_only(quick, test_write_mixes, "llama-kq.gguf written as each other llama.cpp file type");
    test_vocab_vectors();
    test_types();
    test_files();
    test_iquants();
    test_ternary();
    test_quantize_bytes();
    test_quantize_bytes_imatrix();
    test_quantize_bytes_iq();
    full_only(quick, test_imatrix_iq, "llama-kq.gguf quantized as each grid i-quant mix");
    test_valid();
    test_truncated();
    test_hostile();
    return tl_finish();
}
