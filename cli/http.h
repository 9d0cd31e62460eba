/* The HTTP/1.1 request reader of `mlstack serve` (cli/serve.c), kept apart from sockets so
   that the fuzz target tests/fuzz/fuzz_http.c runs the very code the server runs. Bytes come in
   through http_in.recv (the server: poll + recv on the socket; the fuzz target: the input in
   pieces); the reader frames one request (request line, headers, a Content-Length or chunked
   body) in http_in.buf. Include after mlstack.h (it uses mlstack_clock_seconds for deadlines);
   every function is static. */
#ifndef MLSTACK_TOOLS_HTTP_H
#define MLSTACK_TOOLS_HTTP_H

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#ifndef HTTP_MAX_HEAD /* the fuzz target sets a small one, so that short inputs reach the limit */
#define HTTP_MAX_HEAD 16384 /* request line + headers; also one chunk-size line, and the trailer */
#endif
#define HTTP_MAX_HEADERS 100

typedef struct http_req {
    char method[16];
    char path[1024];
    int http10, keep_alive, expect_continue, chunked;
    long long content_length;
    const char *auth; /* Authorization value, NUL-terminated inside http_in.buf */
    const char *body; /* inside http_in.buf */
    size_t body_len;
} http_req;

/* One connection's receive side. buf (malloc'd, cap bytes, cap >= HTTP_MAX_HEAD + 1 at the
   start) holds the n bytes received and not yet consumed; after a request the caller moves the
   bytes past *used (pipelined requests) down. */
typedef struct http_in {
    char *buf;
    size_t n, cap;
    size_t max_body;  /* the largest body accepted (decoded, for chunked) */
    double timeout_s; /* a request must arrive whole within this, from its first byte */
    /* Receives up to `room` (> 0) bytes into dst, waiting until `deadline`
       (mlstack_clock_seconds). Returns the count (> 0), 0 when the peer has gone (or the server
       stops), -1 when the deadline passed first. */
    long (*recv)(void *ctx, char *dst, size_t room, double deadline);
    /* Sends "HTTP/1.1 100 Continue"; 0 sent, -1 the peer is gone. */
    int (*send_continue)(void *ctx);
    /* Optional (NULL: always allowed). reserve: before buf grows to `cap` bytes (and after it
       shrinks back), so that the caller can hold all connections' buffers to one memory budget;
       0 allowed, or an HTTP status (413, 503) that ends the request. on_head: once a request's
       head is complete and valid, before its body is read; 0 go on, or a status to answer. */
    int (*reserve)(void *ctx, size_t cap);
    int (*on_head)(void *ctx, const struct http_req *r);
    void *ctx;
    /* Optional: when > 0, the request must be whole by this time (mlstack_clock_seconds) however
       it trickles in, idle wait included (a new connection's first request: from its accept);
       else within timeout_s of its first byte, after at most timeout_s of idleness. */
    double deadline;
} http_in;

/* Resizes in->buf to cap bytes, through in->reserve. 0, or an HTTP status. */
static int http_resize(http_in *in, size_t cap) {
    char *p;
    int code;
    if (in->reserve && (code = in->reserve(in->ctx, cap)) != 0) return code;
    p = (char *)realloc(in->buf, cap);
    if (!p) {
        if (in->reserve) in->reserve(in->ctx, in->cap); /* back to what is held */
        return 500;
    }
    in->buf = p;
    in->cap = cap;
    return 0;
}

/* Compares a[0..n) with the NUL-terminated b, ASCII case-insensitively. */
static int http_ieq(const char *a, const char *b, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) {
        char x = a[i], y = b[i];
        if (x >= 'A' && x <= 'Z') x = (char)(x + 32);
        if (y >= 'A' && y <= 'Z') y = (char)(y + 32);
        if (x != y) return 0;
    }
    return b[n] == 0;
}

/* Parses the head in head[0..head_len), which ends in "\r\n\r\n"; the lines are cut in place
   (NUL-terminated). Returns 0 or an HTTP status. */
static int http_parse_head(char *head, size_t head_len, http_req *r) {
    char *line = head, *end = head + head_len, *sp1, *sp2, *eol;
    int n_headers = 0;
    memset(r, 0, sizeof *r);
    r->content_length = -1;
    eol = strstr(line, "\r\n");
    if (!eol || eol >= end) return 400;
    *eol = 0;
    sp1 = strchr(line, ' ');
    sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    /* method SP target SP version, neither of the first two empty */
    if (!sp1 || !sp2 || sp1 == line || sp2 == sp1 + 1 || (size_t)(sp1 - line) >= sizeof r->method ||
        (size_t)(sp2 - sp1 - 1) >= sizeof r->path)
        return 400;
    memcpy(r->method, line, (size_t)(sp1 - line));
    memcpy(r->path, sp1 + 1, (size_t)(sp2 - sp1 - 1));
    if (strcmp(sp2 + 1, "HTTP/1.1") == 0) r->keep_alive = 1;
    else if (strcmp(sp2 + 1, "HTTP/1.0") == 0)
        r->http10 = 1;
    else
        return strncmp(sp2 + 1, "HTTP/", 5) == 0 ? 505 : 400;
    {
        char *q = strchr(r->path, '?');
        if (q) *q = 0;
    }
    for (line = eol + 2; line < end && !(line[0] == '\r' && line[1] == '\n'); line = eol + 2) {
        char *colon, *v, *ve;
        eol = strstr(line, "\r\n");
        if (!eol || eol >= end) return 400;
        *eol = 0;
        if (++n_headers > HTTP_MAX_HEADERS) return 431;
        colon = strchr(line, ':');
        if (!colon || colon == line) return 400;
        for (v = colon + 1; *v == ' ' || *v == '\t'; v++) {}
        for (ve = eol; ve > v && (ve[-1] == ' ' || ve[-1] == '\t'); ve--) {}
        *ve = 0;
        if (http_ieq(line, "content-length", (size_t)(colon - line))) {
            char *e;
            long long x;
            if (!*v || *v < '0' || *v > '9') return 400;
            x = strtoll(v, &e, 10);
            if (*e || x < 0 || (r->content_length >= 0 && r->content_length != x)) return 400;
            r->content_length = x;
        } else if (http_ieq(line, "transfer-encoding", (size_t)(colon - line))) {
            /* only "chunked" alone: another coding (gzip, ...) is not understood */
            if (r->chunked || !http_ieq(v, "chunked", strlen(v))) return 501;
            r->chunked = 1;
        } else if (http_ieq(line, "connection", (size_t)(colon - line))) {
            if (strstr(v, "close") || strstr(v, "Close")) r->keep_alive = 0;
            else if (r->http10 && (strstr(v, "keep-alive") || strstr(v, "Keep-Alive")))
                r->keep_alive = 1;
        } else if (http_ieq(line, "authorization", (size_t)(colon - line))) {
            r->auth = v;
        } else if (http_ieq(line, "expect", (size_t)(colon - line))) {
            r->expect_continue = 1;
        }
    }
    return 0;
}

/* Receives until in->buf holds at least `want` bytes, growing it as needed. 0, 1 (peer gone),
   408 (deadline) or 500 (out of memory). */
static int http_recv_until(http_in *in, size_t want, double deadline) {
    while (in->n < want) {
        long got;
        if (want + 1 > in->cap) {
            size_t cap = in->cap * 2 > want + 1 ? in->cap * 2 : want + 1;
            int code;
            if (cap > in->max_body + 2 * HTTP_MAX_HEAD + 8 && want + 1 < cap) /* no doubling past the limit */
                cap = want + 1 > in->max_body + 2 * HTTP_MAX_HEAD + 8 ? want + 1 : in->max_body + 2 * HTTP_MAX_HEAD + 8;
            if ((code = http_resize(in, cap)) != 0) return code;
        }
        got = in->recv(in->ctx, in->buf + in->n, in->cap - 1 - in->n, deadline);
        if (got < 0) return 408;
        if (got == 0) return 1;
        in->n += (size_t)got;
    }
    return 0;
}

/* For http_read_chunked: makes in->buf hold k bytes from *at on. Before receiving, the undecoded
   bytes buf[*at..n) move down to `out` (the end of the decoded body), so the buffer never holds
   more than the body plus one pending line or chunk, and each byte moves at most twice. */
static int http_chunk_need(http_in *in, size_t *at, size_t out, size_t k, double deadline) {
    if (in->n - *at >= k) return 0;
    if (*at > out) {
        memmove(in->buf + out, in->buf + *at, in->n - *at);
        in->n -= *at - out;
        *at = out;
    }
    return http_recv_until(in, *at + k, deadline);
}

/* Finds the "\r\n" that ends the line starting at buf[*at] (*eol: its offset), receiving more
   while the line is incomplete; a line over HTTP_MAX_HEAD bytes is refused. */
static int http_chunk_line(http_in *in, size_t *at, size_t out, size_t *eol, double deadline) {
    size_t i = *at;
    for (;;) {
        int code;
        for (; i + 1 < in->n; i++)
            if (in->buf[i] == '\r' && in->buf[i + 1] == '\n') {
                *eol = i;
                return i - *at > HTTP_MAX_HEAD ? 431 : 0;
            }
        if (in->n - *at > HTTP_MAX_HEAD) return 431;
        i -= *at; /* the scan position survives compaction as an offset */
        if ((code = http_chunk_need(in, at, out, in->n - *at + 1, deadline)) != 0) return code;
        i += *at;
    }
}

/* A body in chunked transfer coding after the head in buf[0..head_len). The chunks are decoded
   in place: their data moves down to buf[head_len..) while raw bytes are read past it. Each size
   line and the trailer are bounded by HTTP_MAX_HEAD, the decoded body by max_body, all of it by
   the request's deadline. */
static int http_read_chunked(http_in *in, http_req *r, size_t head_len, double deadline, size_t *used) {
    size_t at = head_len, out = head_len, eol, trailer = 0, max_body = in->max_body;
    int code;
    for (;;) {
        unsigned long long size = 0;
        size_t i;
        if ((code = http_chunk_line(in, &at, out, &eol, deadline)) != 0) return code;
        for (i = at; i < eol && isxdigit((unsigned char)in->buf[i]); i++) {
            int d = in->buf[i] <= '9' ? in->buf[i] - '0' : (in->buf[i] | 32) - 'a' + 10;
            size = size * 16 + (unsigned long long)d;
            if (size > max_body) return 413;
        }
        if (i == at) return 400; /* no size */
        while (i < eol && (in->buf[i] == ' ' || in->buf[i] == '\t')) i++;
        if (i < eol && in->buf[i] != ';') return 400; /* only extensions (ignored) may follow */
        at = eol + 2;
        if (size == 0) break;
        if (out - head_len + size > max_body) return 413;
        if ((code = http_chunk_need(in, &at, out, (size_t)size + 2, deadline)) != 0) return code;
        memmove(in->buf + out, in->buf + at, (size_t)size);
        out += (size_t)size;
        at += (size_t)size;
        if (in->buf[at] != '\r' || in->buf[at + 1] != '\n') return 400; /* data longer than its size */
        at += 2;
    }
    for (;;) { /* trailer fields (ignored) up to an empty line */
        if ((code = http_chunk_line(in, &at, out, &eol, deadline)) != 0) return code;
        trailer += eol + 2 - at;
        if (trailer > HTTP_MAX_HEAD) return 431;
        if (eol == at) {
            at += 2;
            break;
        }
        at = eol + 2;
    }
    r->body = in->buf + head_len;
    r->body_len = out - head_len;
    *used = at;
    return 0;
}

/* Reads one request into in->buf. Returns 0 with *r filled, 1 when the connection is done
   (closed, idle timeout, shutdown), or an HTTP status to answer before closing. *used receives
   the bytes the request took (head + body). */
static int http_read_request(http_in *in, http_req *r, size_t *used) {
    size_t head_len = 0, scan = 0;
    double deadline = in->deadline > 0 ? in->deadline : mlstack_clock_seconds() + in->timeout_s;
    int started = in->n > 0, code;
    for (;;) {
        char *e = NULL;
        long got;
        if (in->n >= 4) {
            size_t i;
            for (i = scan; i + 4 <= in->n; i++)
                if (in->buf[i] == '\r' && in->buf[i + 1] == '\n' && in->buf[i + 2] == '\r' && in->buf[i + 3] == '\n') {
                    e = in->buf + i;
                    break;
                }
            scan = in->n >= 3 ? in->n - 3 : 0;
        }
        if (e) {
            head_len = (size_t)(e - in->buf) + 4;
            /* the reads stop at HTTP_MAX_HEAD + 1 bytes, and pipelined bytes may hold more */
            if (head_len > HTTP_MAX_HEAD) return 431;
            break;
        }
        if (in->n >= HTTP_MAX_HEAD) return 431;
        got = in->recv(in->ctx, in->buf + in->n, HTTP_MAX_HEAD + 1 - in->n, deadline);
        if (got < 0) return started ? 408 : 1; /* an idle keep-alive connection just closes */
        if (got == 0) return 1;
        if (!started && in->deadline <= 0)
            deadline = mlstack_clock_seconds() + in->timeout_s; /* from the first byte on */
        started = 1;
        in->n += (size_t)got;
    }
    code = http_parse_head(in->buf, head_len, r); /* cuts the lines in place */
    if (code) return code;
    if (in->on_head && (code = in->on_head(in->ctx, r)) != 0) return code;
    if (r->chunked) {
        if (r->content_length >= 0) return 400; /* both framings: ambiguous, refused (RFC 9112 6.3) */
        if (r->expect_continue && in->n == head_len && in->send_continue(in->ctx) != 0) return 1;
        return http_read_chunked(in, r, head_len, deadline, used);
    }
    if (r->content_length < 0) {
        if (strcmp(r->method, "POST") == 0) return 411;
        r->content_length = 0;
    }
    if ((unsigned long long)r->content_length > in->max_body) return 413;
    if (r->expect_continue && r->content_length > 0 && in->n == head_len && in->send_continue(in->ctx) != 0) return 1;
    {
        size_t need = head_len + (size_t)r->content_length;
        if (need + 1 > in->cap && (code = http_resize(in, need + 1)) != 0) return code;
        while (in->n < need) { /* no further: what follows belongs to the next request */
            long got = in->recv(in->ctx, in->buf + in->n, need - in->n, deadline);
            if (got < 0) return 408;
            if (got == 0) return 1;
            in->n += (size_t)got;
        }
        r->body = in->buf + head_len;
        r->body_len = (size_t)r->content_length;
        *used = need;
    }
    return 0;
}

#endif
