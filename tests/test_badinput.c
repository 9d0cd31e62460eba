/* Bad input must fail cleanly: a specific result code, a message that names the file and the
   field or tensor at fault, and nothing leaked or read out of bounds (run it under ASan).
   Part 1 builds safetensors images in memory and feeds them to the header validator.
   Part 2 copies the tiny Llama fixture into a temporary folder, breaks one thing at a time and
   opens it with mlstack_model_open; each open runs in a child process so that a crash or a
   sanitizer report fails that case alone, and LeakSanitizer checks each case on its own. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *FIXTURE = "tests/fixtures/models/llama";

/* ---- part 1: in-memory safetensors images ---- */

/* 8-byte little-endian header length, the header, then data_len bytes of data
   (copied from data, or a counting pattern when data is NULL). Caller frees. */
static unsigned char *image(const char *header, const void *data, size_t data_len, size_t *out_len) {
    size_t hl = strlen(header), i;
    unsigned char *b = (unsigned char *)malloc(8 + hl + data_len + 1);
    for (i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, header, hl);
    for (i = 0; i < data_len; i++) b[8 + hl + i] = data ? ((const unsigned char *)data)[i] : (unsigned char)i;
    *out_len = 8 + hl + data_len;
    return b;
}

/* Opens bytes[0..n) (copied to an exact-size buffer so ASan sees overreads) and expects `code`
   with `want` in the message. On MLSTACK_OK the image must open and is closed again. */
static void st_expect_n(int line, const unsigned char *bytes, size_t n, mlstack_result code, const char *want) {
    mlstack__st st;
    mlstack_error err;
    mlstack_result r;
    unsigned char *exact = (unsigned char *)malloc(n ? n : 1);
    if (n) memcpy(exact, bytes, n);
    memset(&err, 0, sizeof err);
    r = mlstack__st_open_memory(&st, exact, n, &err);
    CHECKF(r == code, "line %d: result %d (%s), want %d; message: %s", line, r, mlstack_result_string(r), code,
           err.message);
    if (r == MLSTACK_OK) {
        mlstack__st_close(&st);
    } else {
        CHECKF(err.code == r, "line %d: err.code %d != %d", line, err.code, r);
        CHECKF(strncmp(err.message, "<memory>", 8) == 0, "line %d: message does not name the source: %s", line,
               err.message);
        CHECKF(st.files == NULL && st.tensors == NULL, "line %d: failed open left state", line);
    }
    if (want)
        CHECKF(strstr(err.message, want) != NULL, "line %d: message \"%s\" lacks \"%s\"", line, err.message, want);
    free(exact);
}

/* A header (padded with data_len bytes of data) must give `code` and a message holding `want`. */
static void hdr_expect(int line, const char *header, size_t data_len, mlstack_result code, const char *want) {
    size_t n;
    unsigned char *b = image(header, NULL, data_len, &n);
    st_expect_n(line, b, n, code, want);
    free(b);
}
#define HDR(header, data_len, code, want) hdr_expect(__LINE__, header, data_len, code, want)
#define T(name, dtype, shape, b, e) \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

static void test_st_valid(void) {
    static const char hdr[] = "{\"__metadata__\":{\"format\":\"pt\"}," T("b", "F32", "[2,3]", 8, 32) "," T(
        "a", "BF16", "[4]", 0, 8) "," T("s", "I64", "[]", 32, 40) "," T("z", "F16", "[0,7]", 40, 40) "}    ";
    mlstack__st st;
    mlstack_error err;
    mlstack_tensor v;
    const mlstack__st_tensor *t;
    size_t n;
    unsigned char *b = image(hdr, NULL, 40, &n);
    mlstack_result r = mlstack__st_open_memory(&st, b, n, &err);
    CHECKF(r == MLSTACK_OK, "valid image rejected: %s", err.message);
    if (r == MLSTACK_OK) {
        CHECK(st.n_tensors == 4);
        t = mlstack__st_find(&st, "b");
        CHECK(t && t->dtype == MLSTACK_DTYPE_F32 && t->n_dims == 2 && t->shape[0] == 2 && t->shape[1] == 3);
        if (t) {
            mlstack__st_view(&st, t, &v);
            CHECK(v.data == b + 8 + strlen(hdr) + 8 && v.n_bytes == 24);
            CHECK(v.strides[1] == 4 && v.strides[0] == 12);
        }
        t = mlstack__st_find(&st, "s");
        CHECK(t && t->n_dims == 0 && t->end - t->begin == 8);
        t = mlstack__st_find(&st, "z");
        CHECK(t && t->begin == t->end);
        CHECK(mlstack__st_find(&st, "__metadata__") == NULL);
        CHECK(mlstack__st_find(&st, "c") == NULL);
        mlstack__st_close(&st);
    }
    free(b);
    HDR("{}", 0, MLSTACK_OK, NULL);
    HDR("{}      ", 0, MLSTACK_OK, NULL);
    HDR("{\"__metadata__\":{}}", 0, MLSTACK_OK, NULL);
}

static void test_st_framing(void) {
    unsigned char b[80000];
    size_t i;
    /* shorter than the length field: every size 0..7 */
    memset(b, 0, sizeof b);
    for (i = 0; i < 8; i++) st_expect_n(__LINE__, b, i, MLSTACK_ERR_FORMAT, "shorter than the 8-byte header length");
    /* header length beyond the file, including lengths that would overflow if added to 8 */
    memcpy(b + 8, "{}", 2);
    b[0] = 3; /* 3 > 2 bytes that follow */
    st_expect_n(__LINE__, b, 10, MLSTACK_ERR_FORMAT, "runs past the end of the file");
    memset(b, 0xff, 8); /* 2^64 - 1 */
    st_expect_n(__LINE__, b, 10, MLSTACK_ERR_FORMAT, "runs past the end of the file");
    memset(b, 0, 8);
    b[7] = 0x80; /* 2^63 */
    st_expect_n(__LINE__, b, 10, MLSTACK_ERR_FORMAT, "header length 9223372036854775808");
    memset(b, 0xff, 8);
    b[0] = 0xf8; /* 2^64 - 8: size - 8 + 8 wraps to 0 */
    st_expect_n(__LINE__, b, 10, MLSTACK_ERR_FORMAT, "runs past the end of the file");
    /* too short for any object */
    memset(b, 0, 10);
    st_expect_n(__LINE__, b, 8, MLSTACK_ERR_FORMAT, "cannot hold a JSON object");
    b[0] = 1;
    b[8] = '{';
    st_expect_n(__LINE__, b, 9, MLSTACK_ERR_FORMAT, "cannot hold a JSON object");
    /* beyond the header limit (lowered to 64 KiB in main) */
    memset(b, ' ', sizeof b);
    i = 70000;
    b[0] = (unsigned char)(i & 0xff);
    b[1] = (unsigned char)(i >> 8);
    b[2] = (unsigned char)(i >> 16);
    memset(b + 3, 0, 5);
    b[8] = '{';
    b[9] = '}';
    st_expect_n(__LINE__, b, 8 + i, MLSTACK_ERR_LIMIT, "exceeds the limit of 65536");
    /* not JSON / not an object */
    HDR("{\"a\": nope}", 0, MLSTACK_ERR_FORMAT, "JSON error at line 1, column 7");
    HDR("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4, MLSTACK_ERR_FORMAT,
        "expected ',' or '}'");
    HDR("{\"a\":\"\xff\"}", 0, MLSTACK_ERR_FORMAT, "invalid UTF-8");
    HDR("{}x", 0, MLSTACK_ERR_FORMAT, "trailing");
    HDR("[]", 0, MLSTACK_ERR_FORMAT, "header at offset 8 is not a JSON object");
    HDR("\"tensors\"", 0, MLSTACK_ERR_FORMAT, "not a JSON object");
    HDR("12", 0, MLSTACK_ERR_FORMAT, "not a JSON object");
    HDR("null", 0, MLSTACK_ERR_FORMAT, "not a JSON object");
}

static void test_st_fields(void) {
    /* data_offsets outside the data area, reversed, overlapping */
    HDR("{" T("w", "F32", "[4]", 0, 16) "}", 12, MLSTACK_ERR_FORMAT,
        "tensor w: data_offsets end 16 beyond the data area (12 bytes");
    HDR("{" T("w", "U8", "[4]", 100, 104) "}", 12, MLSTACK_ERR_FORMAT, "tensor w: data_offsets end 104 beyond");
    HDR("{" T("w", "U8", "[1]", 18446744073709551615, 0) "}", 8, MLSTACK_ERR_FORMAT, "data_offsets");
    HDR("{" T("w", "U8", "[0]", 8, 4) "}", 8, MLSTACK_ERR_FORMAT, "tensor w: data_offsets reversed (begin 8 > end 4)");
    HDR("{" T("a", "U8", "[8]", 0, 8) "," T("b", "U8", "[4]", 4, 8) "}", 8, MLSTACK_ERR_FORMAT, "overlap");
    HDR("{" T("a", "U8", "[8]", 0, 8) "," T("b", "U8", "[8]", 0, 8) "}", 8, MLSTACK_ERR_FORMAT, "overlap");
    HDR("{" T("a", "U8", "[4]", 0, 4) "," T("b", "U8", "[4]", 4, 8) "," T("c", "U8", "[2]", 3, 5) "}", 8,
        MLSTACK_ERR_FORMAT, "overlap");
    /* an empty tensor inside another one's range must not hide an overlap with a third */
    HDR("{" T("big", "U8", "[8]", 0, 8) "," T("empty", "U8", "[0]", 2, 2) "," T("inner", "U8", "[2]", 4, 6) "}", 8,
        MLSTACK_ERR_FORMAT, "overlap");
    /* empty tensors may share an offset with anything */
    HDR("{" T("a", "U8", "[8]", 0, 8) "," T("e1", "U8", "[0]", 4, 4) "," T("e2", "F32", "[0,3]", 4, 4) "}", 8,
        MLSTACK_OK, NULL);
    /* byte size against dtype x shape */
    HDR("{" T("w", "F32", "[2,2]", 0, 12) "}", 16, MLSTACK_ERR_FORMAT,
        "tensor w: data_offsets span 12 bytes but dtype F32 x shape needs 16");
    HDR("{" T("w", "BF16", "[3]", 0, 8) "}", 8, MLSTACK_ERR_FORMAT, "needs 6");
    HDR("{" T("w", "I64", "[]", 0, 4) "}", 8, MLSTACK_ERR_FORMAT, "needs 8");
    /* dimensions: negative, fractional, not numbers, too large, too many, overflowing */
    HDR("{" T("w", "F32", "[-1,4]", 0, 16) "}", 16, MLSTACK_ERR_FORMAT, "tensor w: shape[0] is -1");
    HDR("{" T("w", "F32", "[4,-4]", 0, 16) "}", 16, MLSTACK_ERR_FORMAT, "shape[1] is -4");
    HDR("{" T("w", "F32", "[2.5]", 0, 16) "}", 16, MLSTACK_ERR_FORMAT, "shape[0] is 2.5");
    HDR("{" T("w", "F32", "[4e0]", 0, 16) "}", 16, MLSTACK_ERR_FORMAT, "shape[0] is 4e0");
    HDR("{" T("w", "F32", "[9007199254740993]", 0, 16) "}", 16, MLSTACK_ERR_FORMAT, "below 2^53");
    HDR("{" T("w", "F32", "[99999999999999999999]", 0, 16) "}", 16, MLSTACK_ERR_FORMAT, "shape[0]");
    HDR("{" T("w", "F32", "[4294967296,4294967296,4294967296]", 0, 16) "}", 16, MLSTACK_ERR_FORMAT,
        "tensor w: element count overflows 64 bits");
    HDR("{" T("w", "F32", "[9007199254740992,1024]", 0, 16) "}", 16, MLSTACK_ERR_FORMAT,
        "tensor w: byte size overflows 64 bits");
    HDR("{" T("w", "F32", "[0,4294967296,4294967296,4294967296]", 0, 0) "}", 0, MLSTACK_OK, NULL);
    HDR("{" T("w", "U8", "[1,1,1,1,1,1,1,1,1]", 0, 1) "}", 1, MLSTACK_ERR_UNSUPPORTED,
        "tensor w: 9 dimensions (at most 8");
    /* a dimension that is not a number must not be printed as if it were one */
    HDR("{" T("w", "F32", "[\"4\"]", 0, 16) "}", 16, MLSTACK_ERR_FORMAT, "shape[0] is not a number");
    HDR("{" T("w", "F32", "[true]", 0, 16) "}", 16, MLSTACK_ERR_FORMAT, "shape[0] is not a number");
    HDR("{" T("w", "F32", "[[4]]", 0, 16) "}", 16, MLSTACK_ERR_FORMAT, "shape[0] is not a number");
    HDR("{\"w\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,16]}}", 16, MLSTACK_ERR_FORMAT,
        "tensor w: missing array field \"shape\"");
    HDR("{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,16]}}", 16, MLSTACK_ERR_FORMAT, "missing array field \"shape\"");
    /* dtypes */
    HDR("{" T("w", "F64", "[1]", 0, 8) "}", 8, MLSTACK_ERR_UNSUPPORTED, "tensor w: unknown dtype \"F64\"");
    HDR("{" T("w", "f32", "[1]", 0, 4) "}", 4, MLSTACK_ERR_UNSUPPORTED, "unknown dtype \"f32\"");
    HDR("{" T("w", "BOOL", "[1]", 0, 1) "}", 1, MLSTACK_ERR_UNSUPPORTED, "unknown dtype \"BOOL\"");
    HDR("{" T("w", "", "[1]", 0, 1) "}", 1, MLSTACK_ERR_UNSUPPORTED, "unknown dtype \"\"");
    HDR("{\"w\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4, MLSTACK_ERR_FORMAT,
        "tensor w: missing string field \"dtype\"");
    HDR("{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, MLSTACK_ERR_FORMAT, "missing string field \"dtype\"");
    /* duplicate names: the JSON has the key twice */
    HDR("{" T("w", "U8", "[2]", 0, 2) "," T("w", "U8", "[2]", 2, 4) "}", 4, MLSTACK_ERR_FORMAT,
        "duplicate tensor name w");
    HDR("{" T("a", "U8", "[1]", 0, 1) "," T("dup", "U8", "[1]", 1, 2) "," T("b", "U8", "[1]", 2,
                                                                            3) "," T("dup", "U8", "[1]", 3, 4) "}",
        4, MLSTACK_ERR_FORMAT, "duplicate tensor name dup");
    /* __metadata__: an object of strings */
    HDR("{\"__metadata__\":{\"format\":\"pt\",\"n\":3}}", 0, MLSTACK_ERR_FORMAT,
        "__metadata__ value 'n' is not a string");
    HDR("{\"__metadata__\":{\"x\":null}}", 0, MLSTACK_ERR_FORMAT, "__metadata__ value 'x' is not a string");
    HDR("{\"__metadata__\":{\"x\":{\"y\":\"z\"}}}", 0, MLSTACK_ERR_FORMAT, "__metadata__ value 'x'");
    HDR("{\"__metadata__\":[\"pt\"]}", 0, MLSTACK_ERR_FORMAT, "__metadata__ is not an object");
    HDR("{\"__metadata__\":\"pt\"}", 0, MLSTACK_ERR_FORMAT, "__metadata__ is not an object");
    /* data_offsets: exactly two non-negative integers */
    HDR("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0]}}", 4, MLSTACK_ERR_FORMAT,
        "tensor w: \"data_offsets\" must be two non-negative integers");
    HDR("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4,8]}}", 8, MLSTACK_ERR_FORMAT, "\"data_offsets\"");
    HDR("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[]}}", 4, MLSTACK_ERR_FORMAT, "\"data_offsets\"");
    HDR("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4.0]}}", 4, MLSTACK_ERR_FORMAT, "\"data_offsets\"");
    HDR("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[\"0\",\"4\"]}}", 4, MLSTACK_ERR_FORMAT,
        "\"data_offsets\"");
    HDR("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[-4,0]}}", 4, MLSTACK_ERR_FORMAT, "\"data_offsets\"");
    HDR("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":{\"a\":0,\"b\":4}}}", 4, MLSTACK_ERR_FORMAT,
        "\"data_offsets\"");
    HDR("{\"w\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,18446744073709551620]}}", 4, MLSTACK_ERR_FORMAT,
        "\"data_offsets\"");
    HDR("{\"w\":{\"dtype\":\"U8\",\"shape\":[4]}}", 4, MLSTACK_ERR_FORMAT, "\"data_offsets\"");
    /* entries and names */
    HDR("{\"w\":5}", 0, MLSTACK_ERR_FORMAT, "tensor w: entry is not an object");
    HDR("{\"w\":[]}", 0, MLSTACK_ERR_FORMAT, "tensor w: entry is not an object");
    HDR("{" T("", "U8", "[1]", 0, 1) "}", 1, MLSTACK_ERR_FORMAT, "is empty or holds a NUL");
    HDR("{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1, MLSTACK_ERR_FORMAT,
        "holds a NUL");
}

/* ---- part 2: model folders ---- */

static char base_dir[64];
static int case_no;

static void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    CHECKF(f != NULL, "cannot create %s", path);
    if (!f) return;
    CHECKF(fwrite(data, 1, n, f) == n, "short write to %s", path);
    fclose(f);
}
static void write_text(const char *dir, const char *name, const char *text) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    write_bytes(path, text, strlen(text));
}

/* Removes every file in dir, then dir itself. */
static void remove_dir(const char *dir) {
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[512];
    if (!d) return;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    CHECKF(rmdir(dir) == 0, "cannot remove %s", dir);
}

/* The fixture's safetensors, read once and opened in memory, as the source for rewritten files. */
static unsigned char *fx_bytes;
static size_t fx_len;
static mlstack__st fx_st;
static char *fx_config;

/* Called per tensor while writing; return 0 to leave the tensor out. May change dtype and shape
   (the data is copied unchanged, so dtype size x shape must keep the byte count). */
typedef int (*edit_fn)(const char *name, mlstack_dtype *dtype, int *n_dims, int64_t *shape, void *user);

/* Writes dir/file as a safetensors file holding the fixture's tensors, passed through edit. */
static void write_st(const char *dir, const char *file, edit_fn edit, void *user) {
    size_t cap = 1 << 16, hl = 0, total = 0, off = 0, i;
    char *h = (char *)malloc(cap), path[512];
    unsigned char *out;
    int k;
    h[hl++] = '{';
    for (i = 0; i < (size_t)fx_st.n_tensors; i++) {
        const mlstack__st_tensor *t = &fx_st.tensors[i];
        mlstack_dtype dt = t->dtype;
        int nd = t->n_dims;
        int64_t shape[MLSTACK_MAX_DIMS];
        memcpy(shape, t->shape, sizeof shape);
        if (edit && !edit(t->name, &dt, &nd, shape, user)) continue;
        hl += (size_t)snprintf(h + hl, cap - hl, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", hl > 1 ? "," : "", t->name,
                               mlstack_dtype_name(dt));
        for (k = 0; k < nd; k++) hl += (size_t)snprintf(h + hl, cap - hl, "%s%lld", k ? "," : "", (long long)shape[k]);
        hl += (size_t)snprintf(h + hl, cap - hl, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)total,
                               (unsigned long long)(total + (t->end - t->begin)));
        total += t->end - t->begin;
    }
    h[hl++] = '}';
    while ((8 + hl) % 8) h[hl++] = ' ';
    CHECK(hl < cap);
    out = (unsigned char *)malloc(8 + hl + total);
    for (k = 0; k < 8; k++) out[k] = (unsigned char)((uint64_t)hl >> (8 * k));
    memcpy(out + 8, h, hl);
    /* second pass: the data in the same order */
    for (i = 0; i < (size_t)fx_st.n_tensors; i++) {
        const mlstack__st_tensor *t = &fx_st.tensors[i];
        mlstack_dtype dt = t->dtype;
        int nd = t->n_dims;
        int64_t shape[MLSTACK_MAX_DIMS];
        memcpy(shape, t->shape, sizeof shape);
        if (edit && !edit(t->name, &dt, &nd, shape, user)) continue;
        memcpy(out + 8 + hl + off, fx_st.files[0].data + t->begin, (size_t)(t->end - t->begin));
        off += t->end - t->begin;
    }
    snprintf(path, sizeof path, "%s/%s", dir, file);
    write_bytes(path, out, 8 + hl + total);
    free(out);
    free(h);
}

/* The fixture's config.json with the first `from` replaced by `to` (which must be found). */
static char *config_with(int line, const char *from, const char *to) {
    const char *at = strstr(fx_config, from);
    size_t a, fl = strlen(from), tl = strlen(to), n = strlen(fx_config);
    char *s = (char *)malloc(n + tl + 1);
    CHECKF(at != NULL, "line %d: fixture config.json has no %s", line, from);
    if (!at) {
        memcpy(s, fx_config, n + 1);
        return s;
    }
    a = (size_t)(at - fx_config);
    memcpy(s, fx_config, a);
    memcpy(s + a, to, tl);
    memcpy(s + a + tl, at + fl, n - a - fl + 1);
    return s;
}

/* A fresh case folder holding config (NULL: none) and, when with_weights, the fixture's
   model.safetensors as written by write_st with `edit`. */
static void new_case(char *dir, size_t cap, const char *config, int with_weights, edit_fn edit, void *user) {
    snprintf(dir, cap, "%s/case%d", base_dir, ++case_no);
    CHECKF(mkdir(dir, 0700) == 0, "cannot create %s", dir);
    if (config) write_text(dir, "config.json", config);
    if (with_weights) write_st(dir, "model.safetensors", edit, user);
}

/* Opens dir in a child process. The child sends back its error record and exits through exit()
   so that LeakSanitizer checks it; *clean is 0 if it crashed, a sanitizer fired or it leaked. */
static mlstack_result open_in_child(const char *dir, mlstack_error *err, int *clean) {
    int fds[2], status = 0;
    pid_t pid;
    ssize_t got;
    memset(err, 0, sizeof *err);
    err->code = MLSTACK_RESULT_MIN_;
    *clean = 0;
    if (pipe(fds) != 0) return MLSTACK_RESULT_MIN_;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return MLSTACK_RESULT_MIN_;
    }
    if (pid == 0) {
        mlstack_model_desc md;
        mlstack_model *m = NULL;
        mlstack_error e;
        mlstack_model_info info;
        close(fds[0]);
        memset(&md, 0, sizeof md);
        md.path = dir;
        memset(&e, 0, sizeof e);
        e.code = mlstack_model_open(&md, &m, &e);
        if (e.code == MLSTACK_OK) {
            mlstack_model_get_info(m, &info);
            mlstack_model_close(m);
        } else if (m != NULL) {
            e.code = MLSTACK_RESULT_MIN_; /* failure must leave *out NULL */
        }
        if (write(fds[1], &e, sizeof e) != (ssize_t)sizeof e) _exit(3);
        close(fds[1]);
        free(fx_bytes); /* what the parent had is not a leak of the child's */
        mlstack__st_close(&fx_st);
        free(fx_config);
        exit(0);
    }
    close(fds[1]);
    got = read(fds[0], err, sizeof *err);
    close(fds[0]);
    waitpid(pid, &status, 0);
    *clean = got == (ssize_t)sizeof *err && WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return got == (ssize_t)sizeof *err ? err->code : MLSTACK_RESULT_MIN_;
}

/* Opens dir and expects `code`, a message holding want1 and want2 (when not NULL), and a clean exit. */
static void open_expect(int line, const char *dir, mlstack_result code, const char *want1, const char *want2) {
    mlstack_error err;
    int clean;
    mlstack_result r = open_in_child(dir, &err, &clean);
    CHECKF(clean, "line %d: opening %s crashed, tripped a sanitizer or leaked (see above)", line, dir);
    CHECKF(r == code, "line %d: result %d (%s), want %d (%s); message: %s", line, r, mlstack_result_string(r), code,
           mlstack_result_string(code), err.message);
    if (want1) CHECKF(strstr(err.message, want1) != NULL, "line %d: \"%s\" lacks \"%s\"", line, err.message, want1);
    if (want2) CHECKF(strstr(err.message, want2) != NULL, "line %d: \"%s\" lacks \"%s\"", line, err.message, want2);
}

/* Runs one config.json variant against the unchanged weights. */
static void config_case(int line, const char *config, mlstack_result code, const char *want1, const char *want2) {
    char dir[128];
    new_case(dir, sizeof dir, config, 1, NULL, NULL);
    open_expect(line, dir, code, want1, want2);
    remove_dir(dir);
}
#define CONFIG_CASE(from, to, code, want1, want2)        \
    do {                                                 \
        char *cfg_ = config_with(__LINE__, from, to);    \
        config_case(__LINE__, cfg_, code, want1, want2); \
        free(cfg_);                                      \
    } while (0)

static int drop_named(const char *name, mlstack_dtype *dt, int *nd, int64_t *shape, void *user) {
    (void)dt, (void)nd, (void)shape;
    return strcmp(name, (const char *)user) != 0;
}
static int transpose_named(const char *name, mlstack_dtype *dt, int *nd, int64_t *shape, void *user) {
    (void)dt;
    if (strcmp(name, (const char *)user) == 0 && *nd == 2) {
        int64_t t = shape[0];
        shape[0] = shape[1];
        shape[1] = t;
    }
    return 1;
}
static int flatten_named(const char *name, mlstack_dtype *dt, int *nd, int64_t *shape, void *user) {
    (void)dt;
    if (strcmp(name, (const char *)user) == 0 && *nd == 2) {
        shape[0] *= shape[1];
        *nd = 1;
    }
    return 1;
}
static int as_8x8_named(const char *name, mlstack_dtype *dt, int *nd, int64_t *shape, void *user) {
    (void)dt;
    if (strcmp(name, (const char *)user) == 0 && *nd == 1 && shape[0] == 64) {
        shape[0] = shape[1] = 8;
        *nd = 2;
    }
    return 1;
}
static int as_i32_named(const char *name, mlstack_dtype *dt, int *nd, int64_t *shape, void *user) {
    (void)nd, (void)shape;
    if (strcmp(name, (const char *)user) == 0) *dt = MLSTACK_DTYPE_I32;
    return 1;
}
/* user: "0" keeps names before "model.layers.1", "1" keeps the rest. */
static int shard_half(const char *name, mlstack_dtype *dt, int *nd, int64_t *shape, void *user) {
    (void)dt, (void)nd, (void)shape;
    return (strcmp(name, "model.layers.1") < 0) == (*(const char *)user == '0');
}

static void test_model_weights(void) {
    char dir[128];
    /* the unchanged copy opens: the cases below differ from it in one thing only */
    new_case(dir, sizeof dir, fx_config, 1, NULL, NULL);
    open_expect(__LINE__, dir, MLSTACK_OK, NULL, NULL);
    remove_dir(dir);
    /* a tensor the architecture needs is missing */
    new_case(dir, sizeof dir, fx_config, 1, drop_named, (void *)"model.layers.1.mlp.up_proj.weight");
    open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "tensor model.layers.1.mlp.up_proj.weight is required by",
                "LlamaForCausalLM");
    remove_dir(dir);
    new_case(dir, sizeof dir, fx_config, 1, drop_named, (void *)"lm_head.weight"); /* untied: lm_head needed */
    open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "lm_head.weight", "missing");
    remove_dir(dir);
    new_case(dir, sizeof dir, fx_config, 1, drop_named, (void *)"model.norm.weight");
    open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "model.norm.weight", "missing");
    remove_dir(dir);
    /* wrong shapes and dtypes */
    new_case(dir, sizeof dir, fx_config, 1, transpose_named, (void *)"model.layers.0.mlp.up_proj.weight");
    open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT,
                "tensor model.layers.0.mlp.up_proj.weight has shape [64, 160] but config.json implies [160, 64]", NULL);
    remove_dir(dir);
    new_case(dir, sizeof dir, fx_config, 1, flatten_named, (void *)"model.embed_tokens.weight");
    open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "model.embed_tokens.weight has shape [32768]", "[512, 64]");
    remove_dir(dir);
    new_case(dir, sizeof dir, fx_config, 1, as_8x8_named, (void *)"model.norm.weight");
    open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT,
                "tensor model.norm.weight has shape [8, 8] but config.json implies [64]", NULL);
    remove_dir(dir);
    new_case(dir, sizeof dir, fx_config, 1, as_i32_named, (void *)"model.layers.1.self_attn.k_proj.weight");
    open_expect(__LINE__, dir, MLSTACK_ERR_UNSUPPORTED, "model.layers.1.self_attn.k_proj.weight has dtype I32", NULL);
    remove_dir(dir);
    /* no weights at all; an empty, a truncated and a directory model.safetensors */
    new_case(dir, sizeof dir, fx_config, 0, NULL, NULL);
    open_expect(__LINE__, dir, MLSTACK_ERR_IO, "no model.safetensors or model.safetensors.index.json", NULL);
    remove_dir(dir);
    new_case(dir, sizeof dir, fx_config, 0, NULL, NULL);
    write_text(dir, "model.safetensors", "");
    open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "model.safetensors: empty file", NULL);
    remove_dir(dir);
    new_case(dir, sizeof dir, fx_config, 0, NULL, NULL);
    {
        char path[256];
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        write_bytes(path, fx_bytes, 1000); /* cut inside the header */
        open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "model.safetensors: header length", "runs past the end");
        write_bytes(path, fx_bytes, fx_len - 100); /* cut inside the data */
        open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "model.safetensors: tensor model.norm.weight: data_offsets end",
                    "beyond the data area");
    }
    remove_dir(dir);
}

static void test_model_shards(void) {
    char dir[128];
    static const char *idx_head = "{\"metadata\":{\"total_size\":1},\"weight_map\":{";
    char idx[8192];
    size_t n;
    int i;
    /* a valid two-shard copy opens */
    new_case(dir, sizeof dir, fx_config, 0, NULL, NULL);
    write_st(dir, "model-00001-of-00002.safetensors", shard_half, (void *)"0");
    write_st(dir, "model-00002-of-00002.safetensors", shard_half, (void *)"1");
    n = (size_t)snprintf(idx, sizeof idx, "%s", idx_head);
    for (i = 0; i < fx_st.n_tensors; i++)
        n += (size_t)snprintf(idx + n, sizeof idx - n, "%s\"%s\":\"model-0000%d-of-00002.safetensors\"", i ? "," : "",
                              fx_st.tensors[i].name, strcmp(fx_st.tensors[i].name, "model.layers.1") < 0 ? 1 : 2);
    snprintf(idx + n, sizeof idx - n, "}}");
    write_text(dir, "model.safetensors.index.json", idx);
    open_expect(__LINE__, dir, MLSTACK_OK, NULL, NULL);
    remove_dir(dir);
    /* the index names a shard that does not exist */
    new_case(dir, sizeof dir, fx_config, 0, NULL, NULL);
    write_st(dir, "model-00001-of-00002.safetensors", shard_half, (void *)"0");
    write_text(dir, "model.safetensors.index.json",
               "{\"weight_map\":{\"lm_head.weight\":\"model-00001-of-00002.safetensors\","
               "\"model.layers.1.mlp.up_proj.weight\":\"model-00002-of-00002.safetensors\"}}");
    open_expect(__LINE__, dir, MLSTACK_ERR_IO,
                "shard model-00002-of-00002.safetensors (named for tensor "
                "model.layers.1.mlp.up_proj.weight) does not exist",
                "model.safetensors.index.json");
    remove_dir(dir);
    /* shard names that leave the folder */
    {
        static const char *const escapes[] = {
            "../x", "../model.safetensors", "/etc/passwd", "..", ".", "a/b", "..\\\\x", ""};
        for (i = 0; i < (int)(sizeof escapes / sizeof escapes[0]); i++) {
            new_case(dir, sizeof dir, fx_config, 1, NULL, NULL); /* a valid model.safetensors is beside it */
            snprintf(idx, sizeof idx, "{\"weight_map\":{\"lm_head.weight\":\"%s\"}}", escapes[i]);
            write_text(dir, "model.safetensors.index.json", idx);
            open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "weight_map[\"lm_head.weight\"] must be a plain file name",
                        NULL);
            remove_dir(dir);
        }
    }
    /* the index is not an index */
    new_case(dir, sizeof dir, fx_config, 1, NULL, NULL);
    write_text(dir, "model.safetensors.index.json", "{\"weight_map\":[]}");
    open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "model.safetensors.index.json: missing object \"weight_map\"", NULL);
    write_text(dir, "model.safetensors.index.json", "{\"weight_map\":{\"lm_head.weight\":7}}");
    open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "plain file name", NULL);
    write_text(dir, "model.safetensors.index.json", "{\"weight_map\":{");
    open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "model.safetensors.index.json: JSON error at line 1", NULL);
    /* a tensor listed for a shard that does not hold it */
    write_st(dir, "second.safetensors", drop_named, (void *)"nothing");
    write_text(dir, "model.safetensors.index.json",
               "{\"weight_map\":{\"lm_head.weight\":\"model.safetensors\",\"model.norm.weight\":\"model.safetensors\","
               "\"model.layers.0.input_layernorm.weight\":\"model.safetensors\"}}");
    open_expect(__LINE__, dir, MLSTACK_OK, NULL, NULL); /* every tensor is in model.safetensors */
    write_text(dir, "model.safetensors.index.json", "{\"weight_map\":{\"no.such.tensor\":\"model.safetensors\"}}");
    open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "tensor no.such.tensor is not in shard model.safetensors", NULL);
    /* the same tensor in two shards */
    write_text(
        dir, "model.safetensors.index.json",
        "{\"weight_map\":{\"lm_head.weight\":\"model.safetensors\",\"model.norm.weight\":\"second.safetensors\"}}");
    open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "duplicate tensor name", NULL);
    remove_dir(dir);
}

static void test_model_config(void) {
    char dir[128];
    /* config.json missing (the error says what the folder holds), not JSON, not an object */
    new_case(dir, sizeof dir, NULL, 1, NULL, NULL);
    open_expect(__LINE__, dir, MLSTACK_ERR_IO, "a folder without config.json and without a .gguf file",
                "(it holds model.safetensors)");
    remove_dir(dir);
    /* a file that is not a GGUF (nor a folder): its first bytes, against the magic */
    new_case(dir, sizeof dir, NULL, 0, NULL, NULL);
    write_text(dir, "weights.zip", "PK\x03\x04 zipped");
    {
        char file[160];
        snprintf(file, sizeof file, "%s/weights.zip", dir);
        open_expect(__LINE__, file, MLSTACK_ERR_FORMAT, "weights.zip: not a GGUF file: offset 0: expected the magic",
                    "\"GGUF\" (47 47 55 46), got 50 4b 03 04 (\"PK..\")");
        write_text(dir, "weights.zip", "GG");
        open_expect(__LINE__, file, MLSTACK_ERR_FORMAT, "not a GGUF file: 2 bytes long", NULL);
    }
    remove_dir(dir);
    config_case(__LINE__, "{\"architectures\": [\"LlamaForCausalLM\"],\n  \"hidden_size\": 64,,}", MLSTACK_ERR_FORMAT,
                "config.json: JSON error at line 2, column 21", NULL);
    config_case(__LINE__, "", MLSTACK_ERR_FORMAT, "config.json: JSON error at line 1, column 1", NULL);
    config_case(__LINE__, "[{\"architectures\": [\"LlamaForCausalLM\"]}]", MLSTACK_ERR_FORMAT,
                "config.json: not a JSON object", NULL);
    /* architectures */
    CONFIG_CASE("\"LlamaForCausalLM\"", "\"GPT2LMHeadModel\"", MLSTACK_ERR_UNSUPPORTED,
                "architectures[0] = \"GPT2LMHeadModel\" is not supported", "LlamaForCausalLM");
    CONFIG_CASE("\"architectures\"", "\"architecture\"", MLSTACK_ERR_FORMAT, "missing field \"architectures\"", NULL);
    CONFIG_CASE("[\n    \"LlamaForCausalLM\"\n  ]", "[]", MLSTACK_ERR_FORMAT, "\"architectures\"", NULL);
    CONFIG_CASE("[\n    \"LlamaForCausalLM\"\n  ]", "\"LlamaForCausalLM\"", MLSTACK_ERR_FORMAT, "\"architectures\"",
                NULL);
    /* required integers: missing, zero, negative, fractional, not a number */
    CONFIG_CASE("\"hidden_size\": 64,", "", MLSTACK_ERR_FORMAT, "config.json: missing required field \"hidden_size\"",
                NULL);
    CONFIG_CASE("\"intermediate_size\": 160,", "", MLSTACK_ERR_FORMAT, "missing required field \"intermediate_size\"",
                NULL);
    CONFIG_CASE("\"num_hidden_layers\": 2,", "", MLSTACK_ERR_FORMAT, "missing required field \"num_hidden_layers\"",
                NULL);
    CONFIG_CASE("\"vocab_size\": 512", "\"vocab_size\": null", MLSTACK_ERR_FORMAT,
                "missing required field \"vocab_size\"", NULL);
    CONFIG_CASE("\"num_hidden_layers\": 2", "\"num_hidden_layers\": 0", MLSTACK_ERR_FORMAT,
                "field \"num_hidden_layers\" is 0 (expected a positive integer", NULL);
    CONFIG_CASE("\"num_attention_heads\": 4", "\"num_attention_heads\": -4", MLSTACK_ERR_FORMAT,
                "field \"num_attention_heads\" is -4", NULL);
    CONFIG_CASE("\"hidden_size\": 64", "\"hidden_size\": 64.5", MLSTACK_ERR_FORMAT, "field \"hidden_size\" is 64.5",
                NULL);
    CONFIG_CASE("\"hidden_size\": 64", "\"hidden_size\": 4294967296", MLSTACK_ERR_FORMAT,
                "field \"hidden_size\" is 4294967296", NULL);
    CONFIG_CASE("\"hidden_size\": 64", "\"hidden_size\": true", MLSTACK_ERR_FORMAT,
                "field \"hidden_size\" is not a number", NULL);
    CONFIG_CASE("\"hidden_size\": 64", "\"hidden_size\": \"64\"", MLSTACK_ERR_FORMAT,
                "field \"hidden_size\" is not a number", NULL);
    CONFIG_CASE("\"max_position_embeddings\": 256", "\"max_position_embeddings\": 0", MLSTACK_ERR_FORMAT,
                "\"max_position_embeddings\"", NULL);
    /* consistency between fields */
    CONFIG_CASE("\"num_key_value_heads\": 2", "\"num_key_value_heads\": 3", MLSTACK_ERR_FORMAT,
                "num_attention_heads 4 is not a multiple of num_key_value_heads 3", NULL);
    CONFIG_CASE("\"head_dim\": 16", "\"head_dim\": 15", MLSTACK_ERR_FORMAT, "head_dim 15 must be even", NULL);
    CONFIG_CASE("\"head_dim\": 16,", "\"hidden_size_unused\": 0,", MLSTACK_OK, NULL, NULL); /* 64 / 4 = 16 */
    CONFIG_CASE("\"num_attention_heads\": 4", "\"num_attention_heads\": 6", MLSTACK_ERR_FORMAT,
                "self_attn.q_proj.weight has shape [64, 64] but config.json implies [96, 64]", NULL);
    /* heads x head_dim beyond int: must be refused from config.json, before any arithmetic on it */
    {
        char *a = config_with(__LINE__, "\"num_attention_heads\": 4", "\"num_attention_heads\": 65536");
        char *b = (char *)malloc(strlen(a) + 64), *at = strstr(a, "\"num_key_value_heads\": 2");
        char *c;
        if (at) {
            memcpy(b, a, (size_t)(at - a));
            strcpy(b + (at - a), "\"num_key_value_heads\": 65536");
            strcat(b, at + strlen("\"num_key_value_heads\": 2"));
        } else {
            strcpy(b, a);
        }
        at = strstr(b, "\"head_dim\": 16");
        c = (char *)malloc(strlen(b) + 64);
        if (at) {
            memcpy(c, b, (size_t)(at - b));
            strcpy(c + (at - b), "\"head_dim\": 65536");
            strcat(c, at + strlen("\"head_dim\": 16"));
        } else {
            strcpy(c, b);
        }
        config_case(__LINE__, c, MLSTACK_ERR_FORMAT, "config.json", "head_dim");
        free(a);
        free(b);
        free(c);
    }
    /* activations and rope */
    CONFIG_CASE("\"silu\"", "\"relu\"", MLSTACK_ERR_UNSUPPORTED, "hidden_act = \"relu\" is not supported", NULL);
    CONFIG_CASE("\"rope_parameters\"",
                "\"rope_scaling\": {\"rope_type\": \"su\", \"factor\": 4.0},\n  \"rope_parameters\"",
                MLSTACK_ERR_UNSUPPORTED, "rope_scaling type \"su\" is not supported",
                "default, linear, llama3, yarn, longrope");
    CONFIG_CASE("\"rope_type\": \"default\"", "\"rope_type\": \"dynamic\"", MLSTACK_ERR_FORMAT,
                "rope_scaling.factor missing for dynamic scaling", NULL);
    CONFIG_CASE("\"rope_parameters\"", "\"rope_scaling\": {\"type\": \"longrope\"},\n  \"rope_parameters\"",
                MLSTACK_ERR_FORMAT, "longrope needs a short_factor list", NULL);
    CONFIG_CASE("\"rope_parameters\"", "\"rope_scaling\": {\"rope_type\": \"linear\"},\n  \"rope_parameters\"",
                MLSTACK_ERR_FORMAT, "rope_scaling.factor", NULL);
    CONFIG_CASE("\"rope_parameters\"",
                "\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0},\n  \"rope_parameters\"",
                MLSTACK_ERR_FORMAT, "missing required field \"original_max_position_embeddings\"", NULL);
    CONFIG_CASE("\"rope_parameters\"", "\"rope_scaling\": \"linear\",\n  \"rope_parameters\"", MLSTACK_ERR_FORMAT,
                "rope_scaling must be an object", NULL);
    CONFIG_CASE("\"rope_theta\": 10000.0", "\"rope_theta\": -1", MLSTACK_ERR_FORMAT,
                "field \"rope_theta\" must be a positive number", NULL);
    CONFIG_CASE("\"rms_norm_eps\": 1e-05", "\"rms_norm_eps\": 0", MLSTACK_ERR_FORMAT, "\"rms_norm_eps\"", NULL);
    /* token ids */
    {
        char *cfg = config_with(__LINE__, "\"eos_token_id\": 2", "\"eos_token_id\": 512");
        new_case(dir, sizeof dir, cfg, 1, NULL, NULL);
        open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "\"eos_token_id\" = 512 is not a token id below vocab_size 512",
                    NULL);
        write_text(dir, "generation_config.json", "{\"eos_token_id\": 2}"); /* generation_config.json wins */
        open_expect(__LINE__, dir, MLSTACK_OK, NULL, NULL);
        write_text(dir, "generation_config.json", "{\"eos_token_id\": [1, 2, 3, 4, 5, 6, 7, 8, 9]}");
        open_expect(__LINE__, dir, MLSTACK_ERR_LIMIT, "\"eos_token_id\" lists more than 8 ids", NULL);
        write_text(dir, "generation_config.json", "{\"eos_token_id\": [1, -2]}");
        open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "\"eos_token_id\" holds an entry that is not a token id", NULL);
        write_text(dir, "generation_config.json", "{\"eos_token_id\": 1,}");
        open_expect(__LINE__, dir, MLSTACK_ERR_FORMAT, "generation_config.json: JSON error at line 1", NULL);
        remove_dir(dir);
        free(cfg);
    }
}

/* ---- saved P16 panels (mlstack_model_save's folder): the fixture quantized to Q8_0 and saved,
   then its header edited one thing at a time ---- */
static char *pn_header; /* the saved file's header text (NUL-terminated) */
static unsigned char *pn_data;
static size_t pn_hl, pn_data_len;

/* A case folder with the fixture's config and the saved file whose header has the first `from`
   replaced by `to` (both NULL: as saved); its data cut to keep_data bytes when that is less. */
static void panel_case(int line, char *dir, size_t cap, const char *from, const char *to, size_t keep_data) {
    const char *at = from ? strstr(pn_header, from) : NULL;
    size_t a = at ? (size_t)(at - pn_header) : pn_hl, fl = at ? strlen(from) : 0, tl = at ? strlen(to) : 0;
    size_t hl = pn_hl - fl + tl, dl = keep_data < pn_data_len ? keep_data : pn_data_len, k;
    unsigned char *out = (unsigned char *)malloc(8 + hl + dl);
    char path[512];
    CHECKF(!from || at, "line %d: the saved header has no %s", line, from);
    new_case(dir, cap, fx_config, 0, NULL, NULL);
    for (k = 0; k < 8; k++) out[k] = (unsigned char)((uint64_t)hl >> (8 * k));
    memcpy(out + 8, pn_header, a);
    if (at) memcpy(out + 8 + a, to, tl);
    memcpy(out + 8 + a + tl, pn_header + a + fl, pn_hl - a - fl);
    memcpy(out + 8 + hl, pn_data, dl);
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    write_bytes(path, out, 8 + hl + dl);
    free(out);
}
#define PANEL_CASE(from, to, keep, code, want1, want2)           \
    do {                                                         \
        char dir_[128];                                          \
        panel_case(__LINE__, dir_, sizeof dir_, from, to, keep); \
        open_expect(__LINE__, dir_, code, want1, want2);         \
        remove_dir(dir_);                                        \
    } while (0)

static void test_model_panels(void) {
    static const char Q[] = "model.layers.0.self_attn.q_proj.weight";
    mlstack_model_desc md;
    mlstack_model *m = NULL;
    mlstack_error err;
    char saved[128], path[512], from[256], to[256], *file;
    size_t len = 0, np, pb;
    unsigned long long b = 0, e = 0;
    const char *at;
    memset(&md, 0, sizeof md);
    md.path = FIXTURE;
    md.quant = MLSTACK_DTYPE_Q8_0;
    snprintf(saved, sizeof saved, "%s/panels", base_dir);
    if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK || mlstack_model_save(m, saved, &err) != MLSTACK_OK) {
        CHECKF(0, "saving the fixture with panels: %s", err.message);
        mlstack_model_close(m);
        return;
    }
    np = (size_t)mlstack__p16_panels(m->layers[0].wq.n_out);
    pb = mlstack__p16_bytes(MLSTACK__W_Q8_0, m->layers[0].wq.n_in);
    mlstack_model_close(m);
    snprintf(path, sizeof path, "%s/model.safetensors", saved);
    file = tl_read(path, &len);
    CHECK(file && len > 8);
    if (!file || len <= 8) return;
    for (pn_hl = 0, b = 0; b < 8; b++) pn_hl |= (size_t)(unsigned char)file[b] << (8 * b);
    CHECK(pn_hl < len - 8);
    pn_header = (char *)malloc(pn_hl + 1);
    memcpy(pn_header, file + 8, pn_hl);
    pn_header[pn_hl] = 0;
    pn_data_len = len - 8 - pn_hl;
    pn_data = (unsigned char *)malloc(pn_data_len);
    memcpy(pn_data, file + 8 + pn_hl, pn_data_len);
    free(file);

    PANEL_CASE(NULL, NULL, (size_t)-1, MLSTACK_OK, NULL, NULL); /* as saved it opens */
    /* a layout, version or geometry this build does not pack */
    snprintf(from, sizeof from, "\"mlstack.layout.%s\":\"P16\"", Q);
    snprintf(to, sizeof to, "\"mlstack.layout.%s\":\"P32\"", Q);
    PANEL_CASE(from, to, (size_t)-1, MLSTACK_ERR_UNSUPPORTED, Q, "weight layout P32");
    PANEL_CASE("\"mlstack.p16.version\":\"1\"", "\"mlstack.p16.version\":\"2\"", (size_t)-1, MLSTACK_ERR_UNSUPPORTED,
               "\"mlstack.p16.version\" is 2", "holds P16 panels");
    PANEL_CASE("\"mlstack.p16.panel_rows\":\"16\"", "\"mlstack.p16.panel_rows\":\"8\"", (size_t)-1,
               MLSTACK_ERR_UNSUPPORTED, "\"mlstack.p16.panel_rows\" is 8, not \"16\"", NULL);
    PANEL_CASE("\"mlstack.p16.group\":", "\"mlstack.p16.gruop\":", (size_t)-1, MLSTACK_ERR_UNSUPPORTED,
               "\"mlstack.p16.group\" is missing", NULL);
    /* panels whose blocks are not Q8_0 / Q4_1 */
    snprintf(from, sizeof from, "\"mlstack.quant.%s\":\"Q8_0\"", Q);
    snprintf(to, sizeof to, "\"mlstack.quant.%s\":\"Q9_9\"", Q);
    PANEL_CASE(from, to, (size_t)-1, MLSTACK_ERR_UNSUPPORTED, Q, "marked as P16 panels but holds U8");
    /* the panels' geometry: the same bytes as [2 np, pb / 2], and one panel short */
    snprintf(from, sizeof from, "\"%s\":{\"dtype\":\"U8\",\"shape\":[%zu,%zu]", Q, np, pb);
    snprintf(to, sizeof to, "\"%s\":{\"dtype\":\"U8\",\"shape\":[%zu,%zu]", Q, 2 * np, pb / 2);
    {
        char want[128];
        snprintf(want, sizeof want, "are [%zu, %zu]", np, pb);
        PANEL_CASE(from, to, (size_t)-1, MLSTACK_ERR_FORMAT, Q, want);
        at = strstr(pn_header, from);
        CHECK(at && sscanf(at + strlen(from), ",\"data_offsets\":[%llu,%llu]", &b, &e) == 2);
        snprintf(from + strlen(from), sizeof from - strlen(from), ",\"data_offsets\":[%llu,%llu]", b, e);
        snprintf(to, sizeof to, "\"%s\":{\"dtype\":\"U8\",\"shape\":[%zu,%zu],\"data_offsets\":[%llu,%llu]", Q, np - 1,
                 pb, b, e - pb);
        PANEL_CASE(from, to, (size_t)-1, MLSTACK_ERR_FORMAT, "panel tensor", want);
    }
    /* the file cut inside the panels (they come first): the first one's data runs past the end */
    PANEL_CASE(NULL, NULL, 100, MLSTACK_ERR_FORMAT, "beyond the data area", "lm_head.weight");
    free(pn_header), free(pn_data);
    pn_header = NULL, pn_data = NULL;
    remove_dir(saved);
}

static void test_open_args(void) {
    mlstack_model_desc md;
    mlstack_model *m = (mlstack_model *)&md;
    mlstack_error err;
    memset(&md, 0, sizeof md);
    CHECK(mlstack_model_open(&md, &m, &err) == MLSTACK_ERR_INVALID_ARG && m == NULL &&
          strstr(err.message, "desc->path"));
    CHECK(mlstack_model_open(NULL, &m, &err) == MLSTACK_ERR_INVALID_ARG);
    md.path = FIXTURE;
    CHECK(mlstack_model_open(&md, NULL, &err) == MLSTACK_ERR_INVALID_ARG && strstr(err.message, "out is NULL"));
    md.path = "tests/fixtures/models/no-such-model";
    CHECK(mlstack_model_open(&md, &m, NULL) == MLSTACK_ERR_IO && m == NULL);
    CHECK(mlstack_model_open(&md, &m, &err) == MLSTACK_ERR_IO && err.code == MLSTACK_ERR_IO &&
          strstr(err.message, "no-such-model: no such file or folder"));
}

int main(void) {
    char path[256];
    /* MLSTACK_MAX_HEADER_BYTES as the library reads it, lowered so that the header limit can be reached */
    mlstack__limits.max_header_bytes = (uint64_t)1 << 16;
    test_st_valid();
    test_st_framing();
    test_st_fields();
    test_open_args();

    snprintf(path, sizeof path, "%s/config.json", FIXTURE);
    fx_config = tl_read(path, NULL);
    snprintf(path, sizeof path, "%s/model.safetensors", FIXTURE);
    fx_bytes = (unsigned char *)tl_read(path, &fx_len);
    if (!fx_config || !fx_bytes || mlstack__st_open_memory(&fx_st, fx_bytes, fx_len, NULL) != MLSTACK_OK) {
        SKIP("model folder cases: %s missing or unreadable (run from the repository root)", FIXTURE);
    } else {
        snprintf(base_dir, sizeof base_dir, "/tmp/mlstack-badinput-XXXXXX");
        if (!mkdtemp(base_dir)) {
            SKIP("model folder cases: mkdtemp failed");
        } else {
            test_model_weights();
            test_model_shards();
            test_model_config();
            test_model_panels();
            remove_dir(base_dir);
        }
        mlstack__st_close(&fx_st);
    }
    free(fx_bytes);
    free(fx_config);
    return tl_finish();
}
