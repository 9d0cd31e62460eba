/* Fuzz target for the server's HTTP/1.1 request reader (cli/http.h, the code `mlstack serve`
   runs) and the JSON parse of a completion request's body.
   libFuzzer:  clang -fsanitize=fuzzer,address,undefined -DMLSTACK_LIBFUZZER -I. tests/fuzz/fuzz_http.c
   Replay:     cc -I. tests/fuzz/fuzz_http.c -lpthread -lm && ./a.out FILE_OR_DIR...
   Input: one byte that sets how many bytes each receive returns (0: as many as fit; 1-255:
   at most that many, so a request arrives split at every place), then the bytes a client sends
   on one connection (pipelined requests one after another). The requests are read the way the
   server's connection loop reads them until one is refused or the bytes run out. Every accepted
   request must have its method and path NUL-terminated, its body inside the buffer and within
   the body limit, a Content-Length body equal to the bytes that followed its head, and it must
   consume at least its head and at most what was received. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
/* 1 KB instead of 16: the head, chunk-line and trailer limits (431) within reach of short inputs */
#define HTTP_MAX_HEAD 1024
#include "cli/http.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_MAX_BODY 8192 /* small, so that the 413 paths are reached by short inputs */

static void fz_check(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "fuzz_http: invariant broken: %s\n", what);
        abort();
    }
}

typedef struct fz_src {
    const uint8_t *p;
    size_t n, at, piece;
    size_t stall_at; /* the deadline passes when a receive would start here (once) */
    int stalled, continues, continue_fails;
} fz_src;

static long fz_recv(void *ctx, char *dst, size_t room, double deadline) {
    fz_src *s = (fz_src *)ctx;
    size_t k = s->n - s->at;
    (void)deadline;
    fz_check(room > 0, "a receive with no room");
    if (!s->stalled && s->at >= s->stall_at) {
        s->stalled = 1;
        return -1;
    }
    if (k == 0) return 0; /* the client closed */
    if (k > room) k = room;
    if (s->piece && k > s->piece) k = s->piece;
    if (!s->stalled && s->at < s->stall_at && k > s->stall_at - s->at) k = s->stall_at - s->at;
    memcpy(dst, s->p + s->at, k);
    s->at += k;
    return (long)k;
}

static int fz_send_continue(void *ctx) {
    fz_src *s = (fz_src *)ctx;
    s->continues++;
    return s->continue_fails ? -1 : 0;
}

static volatile unsigned char fz_sink;

/* What the completion endpoints read first: an object with "messages" (roles and contents) or
   "prompt". Only the walk matters here; the checks on values are the server's. */
static void fz_body(const char *body, size_t len) {
    mlstack_json_doc *doc = NULL;
    mlstack_error err;
    const mlstack_json *root, *v, *f;
    memset(&err, 0, sizeof err);
    if (mlstack_json_parse(body, len, "request body", &doc, &err) != MLSTACK_OK) {
        fz_check(doc == NULL && err.message[0] != 0, "rejected body without a message");
        return;
    }
    root = mlstack_json_root(doc);
    for (v = mlstack_json_child(mlstack_json_get(root, "messages")); v; v = mlstack_json_next(v)) {
        size_t n = 0;
        const char *role = mlstack_json_string(mlstack_json_get(v, "role"), &n);
        if (role) fz_check(role[n] == 0, "role not NUL-terminated");
        f = mlstack_json_get(v, "content");
        if (mlstack_json_type_of(f) == MLSTACK_JSON_ARRAY)
            for (f = mlstack_json_child(f); f; f = mlstack_json_next(f)) {
                const char *t = mlstack_json_string(mlstack_json_get(f, "text"), &n);
                if (t && n) fz_sink ^= (unsigned char)t[n - 1];
            }
        else if (mlstack_json_string(f, &n) && n)
            fz_sink ^= (unsigned char)mlstack_json_string(f, NULL)[n - 1];
    }
    mlstack_json_free(doc);
}

/* An independent decoder of a chunked body: raw[0..n) starts right after the head. Returns the
   bytes the body took (size lines, data, trailer, final empty line) with the decoded data in
   out[0..*out_len), or 0 when raw does not hold one whole well-formed chunked body. */
static size_t fz_unchunk(const uint8_t *raw, size_t n, uint8_t *out, size_t *out_len) {
    size_t at = 0, len = 0;
    for (;;) {
        size_t size = 0, i = at, eol;
        const uint8_t *e;
        for (e = NULL; i + 1 < n; i++)
            if (raw[i] == '\r' && raw[i + 1] == '\n') {
                e = raw + i;
                break;
            }
        if (!e) return 0;
        eol = (size_t)(e - raw);
        for (i = at; i < eol && isxdigit(raw[i]); i++) {
            size = size * 16 + (size_t)(raw[i] <= '9' ? raw[i] - '0' : (raw[i] | 32) - 'a' + 10);
            if (size > FZ_MAX_BODY) return 0;
        }
        if (i == at) return 0;
        at = eol + 2;
        if (size == 0) break;
        if (n - at < size + 2) return 0;
        memcpy(out + len, raw + at, size);
        len += size;
        if (len > FZ_MAX_BODY) return 0;
        at += size + 2;
    }
    for (;;) { /* trailer lines up to the empty one */
        size_t i;
        for (i = at; i + 1 < n && !(raw[i] == '\r' && raw[i + 1] == '\n'); i++) {}
        if (i + 1 >= n) return 0;
        if (i == at) break;
        at = i + 2;
    }
    *out_len = len;
    return at + 2;
}

/* A header's value as the reader must give it: no whitespace around it, NUL-terminated inside
   the head. */
static void fz_check_value(const char *v, const http_in *in, size_t head_len) {
    size_t n = strlen(v);
    fz_check(v >= in->buf && (size_t)(v - in->buf) + n < head_len, "header value outside the head");
    fz_check(n == 0 || (v[0] != ' ' && v[0] != '\t' && v[n - 1] != ' ' && v[n - 1] != '\t'),
             "header value not trimmed");
}

/* One connection. stall_at: the input offset at which a receive reports its deadline passed
   (once; past the end: never); continue_fails: the client is gone when "100 Continue" is sent. */
static void fz_connection(const uint8_t *data, size_t size, size_t stall_at, int continue_fails) {
    static uint8_t ref[FZ_MAX_BODY + 1];
    fz_src src;
    http_in in;
    int n_req;
    memset(&src, 0, sizeof src);
    src.p = data + 1;
    src.n = size - 1;
    src.piece = data[0];
    src.stall_at = stall_at;
    src.continue_fails = continue_fails;
    memset(&in, 0, sizeof in);
    in.cap = HTTP_MAX_HEAD + 1;
    in.buf = (char *)malloc(in.cap);
    if (!in.buf) return;
    in.max_body = FZ_MAX_BODY;
    in.timeout_s = 1e9; /* the deadline fires only where stall_at says */
    in.recv = fz_recv;
    in.send_continue = fz_send_continue;
    in.ctx = &src;
    for (n_req = 0; n_req < 1000; n_req++) {
        http_req r;
        size_t used = 0, consumed_before = src.at - in.n; /* input offset of buf[0] */
        int stalled_before = src.stalled, continues_before = src.continues, code;
        code = http_read_request(&in, &r, &used);
        fz_check(in.n <= in.cap && src.at <= src.n, "buffer accounting");
        if (src.continues > continues_before + 1) fz_check(0, "100 Continue sent twice for one request");
        if (code == 1) {
            /* the bytes ran out, the client left at 100 Continue, or an idle connection's
               deadline passed: then nothing of a request had arrived */
            if (src.stalled && !stalled_before && src.continues == continues_before)
                fz_check(in.n == 0, "a started request was dropped at its deadline without a 408");
            break;
        }
        if (code == 408) {
            fz_check(src.stalled && !stalled_before, "a deadline fired on input that never stalls");
            fz_check(in.n > 0, "408 for a request that never started");
            break;
        }
        if (code) {
            fz_check(code == 400 || code == 411 || code == 413 || code == 431 || code == 500 || code == 501 ||
                         code == 505,
                     "unexpected status");
            break;
        }
        fz_check(!continue_fails || src.continues == continues_before, "went on after the client left");
        fz_check(memchr(r.method, 0, sizeof r.method) && memchr(r.path, 0, sizeof r.path), "unterminated field");
        fz_check(r.method[0] != 0, "empty method accepted");
        fz_check(used >= 4 && used <= in.n, "request consumed outside the buffer");
        fz_check(r.body_len <= FZ_MAX_BODY, "body over the limit accepted");
        fz_check(r.body >= in.buf && (size_t)(r.body - in.buf) + r.body_len <= used, "body outside the request");
        {
            size_t head = (size_t)(r.body - in.buf), i;
            const uint8_t *raw = src.p + consumed_before; /* this request as the client sent it */
            fz_check(head >= 4 && head <= HTTP_MAX_HEAD && memcmp(raw + head - 4, "\r\n\r\n", 4) == 0,
                     "head does not end at its first empty line");
            for (i = 0; i + 4 < head; i++)
                fz_check(memcmp(raw + i, "\r\n\r\n", 4) != 0, "head does not end at its first empty line");
            if (r.auth) fz_check_value(r.auth, &in, head);
            if (!r.chunked) {
                fz_check(r.body_len == (size_t)r.content_length, "body length differs from Content-Length");
                fz_check(head + r.body_len == used, "Content-Length body does not end the request");
                fz_check(memcmp(r.body, raw + head, r.body_len) == 0, "body differs from the bytes after the head");
            } else {
                /* the chunks were decoded in place: check them against the raw bytes, which
                   end where the next request starts */
                size_t raw_end = src.at - (in.n - used) - consumed_before, ref_len = 0;
                size_t took = fz_unchunk(raw + head, raw_end - head, ref, &ref_len);
                fz_check(took == raw_end - head, "chunked body does not end where the reader stopped");
                fz_check(ref_len == r.body_len && memcmp(ref, r.body, ref_len) == 0,
                         "chunked body decoded differently");
            }
        }
        if (r.body_len) fz_sink ^= (unsigned char)(r.body[0] ^ r.body[r.body_len - 1]);
        if (strcmp(r.method, "POST") == 0 &&
            (strcmp(r.path, "/v1/chat/completions") == 0 || strcmp(r.path, "/v1/completions") == 0))
            fz_body(r.body, r.body_len);
        memmove(in.buf, in.buf + used, in.n - used); /* as the server keeps pipelined bytes */
        in.n -= used;
        if (!r.keep_alive) break;
    }
    free(in.buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    size_t i, h = 0;
    if (size < 1) return 0;
    fz_connection(data, size, (size_t)-1, 0); /* a client that never stalls */
    /* the same bytes again from a client that stalls once, at an offset taken from the input, and
       leaves when asked to continue */
    for (i = 0; i < size; i++) h = h * 31 + data[i];
    fz_connection(data, size, h % size, 1);
    return 0;
}

#define FZ_NAME "fuzz_http"
#include "replay.h"
