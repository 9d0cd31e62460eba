/* Fuzz target for the server's HTTP/1.1 request reader (tools/http.h, the code `mlstack serve`
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
#include "tools/http.h"

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
    int continues;
} fz_src;

static long fz_recv(void *ctx, char *dst, size_t room, double deadline) {
    fz_src *s = (fz_src *)ctx;
    size_t k = s->n - s->at;
    (void)deadline;
    if (k == 0) return 0; /* the client closed */
    if (k > room) k = room;
    if (s->piece && k > s->piece) k = s->piece;
    memcpy(dst, s->p + s->at, k);
    s->at += k;
    return (long)k;
}

static int fz_send_continue(void *ctx) {
    ((fz_src *)ctx)->continues++;
    return 0;
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_src src;
    http_in in;
    int n_req;
    if (size < 1) return 0;
    memset(&src, 0, sizeof src);
    src.p = data + 1;
    src.n = size - 1;
    src.piece = data[0];
    memset(&in, 0, sizeof in);
    in.cap = HTTP_MAX_HEAD + 1;
    in.buf = (char *)malloc(in.cap);
    if (!in.buf) return 0;
    in.max_body = FZ_MAX_BODY;
    in.timeout_s = 1e9; /* the input never stalls: no deadline may fire */
    in.recv = fz_recv;
    in.send_continue = fz_send_continue;
    in.ctx = &src;
    for (n_req = 0; n_req < 1000; n_req++) {
        http_req r;
        size_t used = 0, consumed_before = src.at - in.n; /* input offset of buf[0] */
        int code = http_read_request(&in, &r, &used);
        fz_check(in.n <= in.cap && src.at <= src.n, "buffer accounting");
        if (code == 1) break; /* the bytes ran out */
        fz_check(code != 408, "a deadline fired on input that never stalls");
        if (code) {
            fz_check(code == 400 || code == 411 || code == 413 || code == 431 || code == 500 || code == 501 ||
                         code == 505,
                     "unexpected status");
            break;
        }
        fz_check(memchr(r.method, 0, sizeof r.method) && memchr(r.path, 0, sizeof r.path), "unterminated field");
        fz_check(r.method[0] != 0, "empty method accepted");
        fz_check(used >= 4 && used <= in.n, "request consumed outside the buffer");
        fz_check(r.body_len <= FZ_MAX_BODY, "body over the limit accepted");
        fz_check(r.body >= in.buf && (size_t)(r.body - in.buf) + r.body_len <= used, "body outside the request");
        if (!r.chunked) {
            size_t head = (size_t)(r.body - in.buf);
            fz_check(r.body_len == (size_t)r.content_length, "body length differs from Content-Length");
            fz_check(head + r.body_len == used, "Content-Length body does not end the request");
            fz_check(memcmp(r.body, src.p + consumed_before + head, r.body_len) == 0,
                     "body differs from the bytes after the head");
        }
        if (r.body_len) fz_sink ^= (unsigned char)(r.body[0] ^ r.body[r.body_len - 1]);
        if (r.auth) fz_sink ^= (unsigned char)r.auth[strlen(r.auth) / 2];
        if (strcmp(r.method, "POST") == 0 &&
            (strcmp(r.path, "/v1/chat/completions") == 0 || strcmp(r.path, "/v1/completions") == 0))
            fz_body(r.body, r.body_len);
        memmove(in.buf, in.buf + used, in.n - used); /* as the server keeps pipelined bytes */
        in.n -= used;
        if (!r.keep_alive) break;
    }
    free(in.buf);
    return 0;
}

#define FZ_NAME "fuzz_http"
#include "replay.h"
