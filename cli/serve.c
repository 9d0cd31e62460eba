/* mlstack serve: an OpenAI-compatible HTTP server over the engine's scheduler.

   Threads:
     main        accepts connections (at most --max-conns, --max-conns-per-peer from one address;
                 at the limit the connection waiting longest for a request head makes room) and
                 starts one thread each
     connection  reads requests (HTTP/1.1, keep-alive, bounded head and body, --timeout for slow
                 clients, body memory held to --body-mem), answers small endpoints itself, and for
                 completions renders the chat template, encodes, submits the request to the engine
                 and streams what it produces
     engine      the one thread that calls mlstack_engine_step: every request of every connection
                 shares its batches and the radix prefix cache
   A completion's state (srv_req) is shared by its connection and the engine thread under srv.mu;
   the engine's callbacks append text and tokens to it and signal the connection, which writes
   them to the socket (so a slow client never stalls the batch). A client that goes away has its
   request cancelled; its pages return to the pool. On SIGTERM the main thread stops accepting,
   the connections cancel their requests and close, and after --shutdown-timeout it exits anyway.

   POSIX only (sockets, poll, pthreads, signals); lock order: srv.mu, then the engine's own. */
#include "cli.h"

#if defined(_WIN32)
int cli_cmd_serve(int argc, char **argv) {
    (void)argc, (void)argv;
    fprintf(stderr, "mlstack: serve needs POSIX sockets and is not built for Windows\n");
    return 1;
}
#else

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "http.h"

#if defined(__GLIBC__)
#include <malloc.h> /* malloc_trim */
#endif

#define SRV_MAX_STOPS 16
#define SRV_MAX_TOP_LOGPROBS 20
#define SRV_MAX_N 16          /* choices of one request (n) */
#define SRV_MAX_BIAS 1024     /* logit_bias entries */
#define SRV_MAX_EMBED_INPUTS 256 /* inputs of one /v1/embeddings request */
#define SRV_MAX_EMBED_TOKENS 32768 /* tokens of one /v1/embeddings request (it runs between decode steps) */
#define SRV_MAX_CHOICES 64    /* guided_choice / structured_outputs.choice entries */
#define SRV_GRAMMARS 8        /* compiled grammars kept (their automata and masks stay warm) */
#define SRV_GRAMMAR_MEMORY ((size_t)64 << 20) /* automaton + mask cache budget of each */

static const char *SERVE_USAGE =
    "usage: mlstack serve -m MODEL [--host 127.0.0.1] [--port 8080] [--api-key K] [--parallel N] [options]\n"
    "\n"
    "An OpenAI-compatible HTTP server: POST /v1/chat/completions, POST /v1/completions (streamed\n"
    "as Server-Sent Events with \"stream\": true), POST /v1/responses (text), POST /v1/embeddings,\n"
    "POST /tokenize and /detokenize, GET /v1/models, GET /health, GET /metrics (Prometheus), and a\n"
    "chat page at GET / (open http://HOST:PORT/ in a browser). One model is served: a request's\n"
    "\"model\" may name it or anything else (the answers name the served id). Every request goes\n"
    "through the engine's continuous-batching scheduler and its prefix cache. Ctrl-C (SIGINT) or SIGTERM stops it: no "
    "new connections, running requests are\n"
    "cancelled (a stream ends with an error event and [DONE], a waiting client gets 503), and after\n"
    "--shutdown-timeout seconds it exits whatever is still running; a second signal exits at once.\n"
    "\n"
    "  -m, --model DIR          Hugging Face model folder (with tokenizer and chat template)\n"
    "      --host ADDR          address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)\n"
    "      --port N             TCP port (default 8080; 0 picks a free one, printed at start)\n"
    "      --api-key KEY        require \"Authorization: Bearer KEY\" (else 401); /health and / stay\n"
    "                           open. Without it, the environment variable MLSTACK_API_KEY\n"
    "      --api-key-file F     the key is F's first line (kept off the command line)\n"
    "      --alias NAME         model id reported (default: the folder's or .gguf file's name)\n"
    "      --kv-type T          KV cache: f16 (default), bf16 or f32 (exact embeddings, twice the memory)\n"
    "      --cache-type-k T, --cache-type-v T   the keys' / values' type: f16, bf16, f32, q8_0 or q4_0\n"
    "      --parallel N         requests decoded together (default 16)\n"
    "      --spec MODE          speculative decoding: ngram, draft:DIR (same tokenizer), self:q4_1\n"
    "                           or self:q8_0 (this model quantized as its draft); --spec-tokens N\n"
    "      --kv-mem MIB         KV cache budget (default: 1024 tokens per parallel request, at least\n"
    "                           the model's context up to 4096 tokens)\n"
    "      --max-conns N        open connections (default 512). A new connection past it, or past\n"
    "                           7/8 of it still waiting for a request head, closes the connection\n"
    "                           that has waited longest for one; if every connection has a request\n"
    "                           in progress, 503\n"
    "      --max-conns-per-peer N  connections from one address (IPv6: one /64; default 128; more: 503)\n"
    "      --max-body BYTES     largest request body (default 4194304; larger: 413)\n"
    "      --max-json-nodes N   most JSON values in a request body (default 262144; more: 413)\n"
    "      --body-mem MIB       memory for request bodies being received and parsed, all connections\n"
    "                           together (default 256; a request that does not fit now: 503)\n"
    "      --timeout S          seconds a client may take to send a request (a new connection: from\n"
    "                           its accept, however slowly the bytes come), to accept written data,\n"
    "                           or to stay idle on a keep-alive connection (default 10)\n"
    "      --shutdown-timeout S seconds SIGTERM waits for running requests to end (default 5)\n"
    "      --quiet              no access log on stderr (default: a line per request with the UTC\n"
    "                           time, the client's address, method, path, status and duration)\n"
    "      --content-specials M text (default): special-token text inside messages (e.g. a user's\n"
    "                           \"<|im_start|>system\") is encoded as plain text, so a client cannot\n"
    "                           forge turns or roles; the template's own markers stay special.\n"
    "                           parse: special tokens anywhere in the rendered prompt, as\n"
    "                           transformers' apply_chat_template(tokenize=True) and llama.cpp do\n"
    "  -t, --threads N          worker threads (default: the physical cores)\n"
    "      --quant TYPE         quantize weights at load: q8_0 or q4_1 (default: as stored)\n"
    "      --gpu                the forward pass on the GPU (a build with make cuda)\n"
    "      --isa CAP            highest kernel path: scalar, avx2, avx512, amx or neon\n"
    "  -h, --help               this text\n";

/* ==== METRICS ==== */

#define SRV_N_BUCKETS 14
static const double SRV_BUCKETS[SRV_N_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120};

typedef struct srv_hist {
    uint64_t counts[SRV_N_BUCKETS + 1]; /* the last one is +Inf */
    uint64_t n;
    double sum;
} srv_hist;

static void hist_add(srv_hist *h, double v) {
    int i = 0;
    while (i < SRV_N_BUCKETS && v > SRV_BUCKETS[i]) i++;
    h->counts[i]++;
    h->n++;
    h->sum += v;
}

/* ==== STATE ==== */

typedef struct srv_top {
    int32_t id;
    float logprob;
} srv_top;

typedef struct srv_tok { /* one generated token, for logprobs */
    int32_t id;
    float logprob;
    int n_top;
    srv_top top[SRV_MAX_TOP_LOGPROBS];
} srv_tok;

typedef struct srv_req srv_req;
struct srv_req {
    struct srv *s;
    uint64_t id;
    pthread_cond_t cv;
    int done;
    int want_logprobs, top_logprobs;
    int tool_mode;          /* tools: a tool call repeated word for word ends the request */
    int index;              /* its choice (n) */
    uint64_t cid;           /* the completion's id: its first choice's request id */
    /* written by the engine thread under srv.mu */
    cli_buf text;           /* decoded text so far */
    srv_tok *toks;          /* generated tokens (ids; logprobs when asked) */
    int n_toks, cap_toks;
    double lse;             /* log-sum-exp of the latest logits row */
    const float *logits;    /* that row, valid until the token callback */
    srv_top pending_top[SRV_MAX_TOP_LOGPROBS];
    int n_pending_top;
    double t_submit, t_last;
    int got_first;
    mlstack_request_status st;
    srv_req *next;          /* in srv.live */
};

/* A compiled grammar, shared by the requests that use the same response_format / tools. */
typedef struct srv_gram {
    int kind;
    char *text;
    size_t len;
    mlstack_grammar *g;
    int refs;         /* requests using it; the cache's own slot does not count */
    int cached;       /* in srv.grams (else freed when refs drops to 0) */
    uint64_t used;
} srv_gram;

typedef struct srv_opts {
    cli_opts base;
    const char *host, *api_key, *api_key_file, *alias, *content_specials, *kv_type;
    int port, parallel, max_conns, max_conns_per_peer, timeout_s, shutdown_timeout_s, quiet;
    size_t max_body, max_json_nodes, body_mem_mib;
} srv_opts;

typedef struct srv {
    srv_opts o;
    mlstack_model *m;
    mlstack_engine *e;
    mlstack_tokenizer *tok;
    const mlstack_chat_template *tpl;
    mlstack_vocab *vocab;    /* byte view of the vocabulary for grammars (NULL: none could be made) */
    srv_gram *grams[SRV_GRAMMARS]; /* under mu */
    uint64_t gram_clock;
    mlstack_model_info info;
    char model_id[256];
    int listen_fd;
    pthread_mutex_t mu;
    pthread_cond_t wake;     /* the engine thread: new work or stop */
    pthread_cond_t conns_cv; /* shutdown: the last connection has gone */
    srv_req *live;           /* submitted, not yet finished */
    struct srv_embed_job *embeds; /* /v1/embeddings work for the engine thread (between steps) */
    pthread_cond_t embed_cv; /* an embedding job is done */
    struct conn *conns;      /* every open connection (under mu) */
    int stop_engine, n_conns, n_waiting; /* n_waiting: connections without a complete request head */
    size_t body_mem, body_mem_max;       /* request bodies and their parsed JSON, held against --body-mem */
    uint64_t next_id;
    double t_start;
    /* metrics (under mu) */
    uint64_t http_codes[600];
    uint64_t conns_total, conns_rejected, conns_evicted, peer_rejected, body_rejected, completions[2], prompt_tokens,
        cached_tokens, completion_tokens, cancelled, failed;
    srv_hist ttft, itl, e2e;
} srv;

static volatile sig_atomic_t srv_stop;

/* The first signal starts a shutdown; a second one ends the process at once. */
static void srv_on_signal(int sig) {
    static const char msg[] = "mlstack serve: second signal, exiting now\n";
    (void)sig;
    if (srv_stop) {
        (void)!write(2, msg, sizeof msg - 1);
        _exit(1);
    }
    srv_stop = 1;
}

/* ==== HTTP ==== */

typedef struct conn {
    srv *s;
    int fd;
    http_in in; /* buf: the bytes received and not yet consumed */
    int closed;           /* the peer went away or a write failed */
    int peer_eof;         /* the peer closed its sending side: no more requests, but it may still read */
    int last_code;        /* status of the latest response, for the access log */
    /* under srv.mu */
    unsigned char peer[17]; /* address family, then the IPv4 address or the IPv6 /64 prefix */
    char client[64];        /* the peer's address as text, for the access log */
    int waiting;          /* no complete request head yet (new, idle keep-alive or trickling in) */
    int evicted;          /* closed to make room for a new connection */
    double wait_since;    /* when it began waiting (its eviction order) */
    size_t held;          /* bytes of s->body_mem this connection holds (buffer growth, parsed body) */
    size_t used;          /* the bytes of buf the current request takes (0: consumed) */
    struct conn *prev, *next; /* in s->conns */
} conn;

static const char *status_text(int code) {
    switch (code) {
    case 100: return "Continue";
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

static double now_s(void) { return mlstack_clock_seconds(); }

/* Waits on cv (mu held) until it is signalled or ms milliseconds have passed (wall clock, as
   pthread_cond_timedwait counts). */
static void cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, long ms) {
    struct timespec ts;
    struct timeval tv;
    gettimeofday(&tv, NULL);
    ts.tv_sec = tv.tv_sec + ms / 1000;
    ts.tv_nsec = (long)tv.tv_usec * 1000 + (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    pthread_cond_timedwait(cv, mu, &ts);
}

/* Waits until fd is ready for `events` or the deadline passes (checking for shutdown).
   Returns 1 ready, 0 timed out, -1 shutdown or error. */
static int wait_fd(int fd, short events, double deadline) {
    for (;;) {
        struct pollfd p;
        double left = deadline - now_s();
        int ms, r;
        if (srv_stop) return -1;
        if (left <= 0) return 0;
        ms = left > 0.2 ? 200 : (int)(left * 1000) + 1;
        p.fd = fd;
        p.events = events;
        p.revents = 0;
        r = poll(&p, 1, ms);
        if (r < 0 && errno != EINTR) return -1;
        if (r > 0) return 1;
    }
}

static int send_all(conn *c, const char *p, size_t n) {
    double deadline = now_s() + c->s->o.timeout_s;
    while (n > 0 && !c->closed) {
        ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) && wait_fd(c->fd, POLLOUT, deadline) == 1) continue;
        c->closed = 1; /* error, timeout or shutdown */
    }
    return c->closed ? -1 : 0;
}

/* Has the peer gone (a reset, a failed write)? An orderly end of its sending side after a whole
   request only means "no more requests": a client may half-close and still read the answer, so
   that sets peer_eof, and a peer that is really gone shows itself when a write fails.
   (Pipelined bytes waiting are not a close.) */
static int peer_gone(conn *c) {
    char b;
    ssize_t r;
    if (c->closed) return 1;
    if (c->peer_eof) return 0;
    r = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0) c->peer_eof = 1;
    else if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        c->closed = 1;
    return c->closed;
}

/* ---- the memory budget for request bodies (--body-mem) ----
   A connection's receive buffer beyond its first HTTP_MAX_HEAD + 1 bytes, and the memory its
   parsed JSON may take, are held against s->body_mem_max; what does not fit now is a 503, what
   could never fit a 413. Idle connections give their buffer back (conn_consume). */

/* Makes c hold `want` bytes of the budget (more or fewer). 0, 413 or 503. Under no lock. */
static int conn_hold(conn *c, size_t want) {
    srv *s = c->s;
    int code = 0;
    pthread_mutex_lock(&s->mu);
    if (want > c->held && want - c->held > s->body_mem_max - s->body_mem) {
        code = want > s->body_mem_max ? 413 : 503;
        s->body_rejected++;
    } else {
        s->body_mem = s->body_mem - c->held + want;
        c->held = want;
    }
    pthread_mutex_unlock(&s->mu);
    return code;
}

/* http_in.reserve: the receive buffer is about to be `cap` bytes. */
static int conn_reserve(void *ctx, size_t cap) {
    conn *c = (conn *)ctx;
    return conn_hold(c, cap > HTTP_MAX_HEAD + 1 ? cap - (HTTP_MAX_HEAD + 1) : 0);
}

/* http_in.on_head: the connection has a request in progress; it is no longer evictable. */
static int conn_on_head(void *ctx, const http_req *r) {
    conn *c = (conn *)ctx;
    srv *s = c->s;
    int evicted;
    (void)r;
    pthread_mutex_lock(&s->mu);
    evicted = c->evicted;
    if (c->waiting && !evicted) c->waiting = 0, s->n_waiting--;
    pthread_mutex_unlock(&s->mu);
    return evicted ? 503 : 0;
}

/* After a request: its bytes leave the buffer (pipelined ones move down), the buffer shrinks
   back to its first size when what is left fits, and the budget gets the difference back. */
static void conn_consume(conn *c) {
    size_t base = HTTP_MAX_HEAD + 1, held = c->held;
    if (c->used) {
        memmove(c->in.buf, c->in.buf + c->used, c->in.n - c->used);
        c->in.n -= c->used;
        c->used = 0;
    }
    if (c->in.cap > base && c->in.n < base) {
        char *p = (char *)realloc(c->in.buf, base);
        if (p) c->in.buf = p, c->in.cap = base;
    }
    conn_hold(c, c->in.cap > base ? c->in.cap - base : 0);
#if defined(__GLIBC__)
    /* glibc keeps big freed blocks in its per-thread arenas (its mmap threshold rises after the
       first big free): hand them back, or every thread's largest body stays resident */
    if (held >= ((size_t)1 << 20)) malloc_trim(0);
#else
    (void)held;
#endif
}

/* The most memory the parse of body[0..n) may take: a value is a node of under 100 bytes with at
   most a key and a string, each rounded up by under 16 bytes, and their text is no longer decoded
   than raw, so 128 bytes a value plus n. The values are counted by a scan outside strings: each one
   is the root, or is followed by ',' or closes a container, so there are at most 1 + commas +
   containers (at most --max-json-nodes, where the parse stops). One pass, no allocation. */
static size_t parse_mem(const srv *s, const char *body, size_t n) {
    size_t i, nodes = 1;
    int in_str = 0;
    for (i = 0; i < n && nodes <= s->o.max_json_nodes; i++) {
        char ch = body[i];
        if (in_str) {
            if (ch == '\\') i++;
            else if (ch == '"')
                in_str = 0;
        } else if (ch == '"') {
            in_str = 1;
        } else if (ch == ',' || ch == '[' || ch == '{') {
            nodes++;
        }
    }
    if (nodes > s->o.max_json_nodes) nodes = s->o.max_json_nodes;
    return nodes * 128 + n + 4096;
}

static void count_code(srv *s, int code) {
    pthread_mutex_lock(&s->mu);
    if (code >= 0 && code < 600) s->http_codes[code]++;
    pthread_mutex_unlock(&s->mu);
}

static int send_response(conn *c, int code, const char *type, const char *body, size_t len, int keep_alive,
                         const char *extra) {
    char head[512];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nConnection: %s\r\n%s\r\n", code,
                     status_text(code), type, len, keep_alive ? "keep-alive" : "close", extra ? extra : "");
    count_code(c->s, code);
    c->last_code = code;
    if (send_all(c, head, (size_t)n) != 0) return -1;
    return len ? send_all(c, body, len) : 0;
}

/* An OpenAI error object. type: invalid_request_error, authentication_error, server_error, ... */
static int send_error(conn *c, int code, const char *type, const char *param, const char *err_code, const char *msg,
                      int keep_alive) {
    cli_buf b;
    int r;
    memset(&b, 0, sizeof b);
    cli_buf_puts(&b, "{\"error\":{\"message\":");
    cli_buf_json(&b, msg, strlen(msg));
    cli_buf_printf(&b, ",\"type\":\"%s\",\"param\":", type);
    if (param) cli_buf_json(&b, param, strlen(param));
    else
        cli_buf_puts(&b, "null");
    cli_buf_puts(&b, ",\"code\":");
    if (err_code) cli_buf_json(&b, err_code, strlen(err_code));
    else
        cli_buf_puts(&b, "null");
    cli_buf_puts(&b, "}}\n");
    r = b.oom ? -1
              : send_response(c, code, "application/json", b.p, b.n, keep_alive,
                              code == 401   ? "WWW-Authenticate: Bearer\r\n"
                              : code == 503 ? "Retry-After: 1\r\n"
                                            : NULL);
    cli_buf_free(&b);
    return r;
}

/* After answering a request whose body was not read: stop writing, drain what the client still
   sends for a moment so that it sees the answer instead of a reset, then close. */
static void linger_close(conn *c) {
    char tmp[4096];
    double deadline = now_s() + 2;
    size_t drained = 0;
    shutdown(c->fd, SHUT_WR);
    while (drained < ((size_t)64 << 20) && wait_fd(c->fd, POLLIN, deadline) == 1) {
        ssize_t r = recv(c->fd, tmp, sizeof tmp, 0);
        if (r <= 0) break;
        drained += (size_t)r;
    }
    c->closed = 1;
}

/* The request reader (http.h) receives through these: the socket, under the deadline and
   the shutdown flag. */
static long conn_recv(void *ctx, char *dst, size_t room, double deadline) {
    conn *c = (conn *)ctx;
    for (;;) {
        int w = wait_fd(c->fd, POLLIN, deadline);
        ssize_t got;
        if (w < 0) return 0;
        if (w == 0) return -1;
        got = recv(c->fd, dst, room, 0);
        if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        return got > 0 ? (long)got : 0;
    }
}

static int conn_send_continue(void *ctx) {
    static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
    return send_all((conn *)ctx, cont, sizeof cont - 1);
}

/* ==== ENGINE THREAD ==== */

/* Log-sum-exp of the row and its top entries, kept until the token callback names the choice. */
static void srv_on_logits(void *user, uint64_t id, const float *logits, int n_vocab) {
    srv_req *r = (srv_req *)user;
    float mx = -INFINITY;
    double sum = 0;
    int i, k, n = 0;
    (void)id;
    for (i = 0; i < n_vocab; i++)
        if (logits[i] > mx) mx = logits[i];
    for (i = 0; i < n_vocab; i++) sum += exp((double)logits[i] - mx);
    r->lse = (double)mx + log(sum);
    r->logits = logits;
    for (i = 0; i < n_vocab && r->top_logprobs > 0; i++) { /* insertion into a short sorted list */
        float v = logits[i];
        if (n == r->top_logprobs && v <= r->pending_top[n - 1].logprob) continue;
        k = n < r->top_logprobs ? n++ : n - 1;
        while (k > 0 && r->pending_top[k - 1].logprob < v) {
            r->pending_top[k] = r->pending_top[k - 1];
            k--;
        }
        r->pending_top[k].id = i;
        r->pending_top[k].logprob = v;
    }
    for (k = 0; k < n; k++) r->pending_top[k].logprob = (float)((double)r->pending_top[k].logprob - r->lse);
    r->n_pending_top = n;
}

/* Does text end with a <tool_call> block that an earlier block already wrote byte for byte? A
   small model under the tool-call grammar, which allows up to 8 calls, tends to repeat its call
   instead of ending: the repeat ends the request (and is dropped), so tool_choice "required"
   gives the calls the model means. */
static int tool_call_repeats(const char *t, size_t n) {
    static const char open_tag[] = "<tool_call>", close_tag[] = "</tool_call>";
    size_t last = n, i, j, blen;
    if (n < 23 || memcmp(t + n - 12, close_tag, 12) != 0) return 0;
    for (i = n - 12; i-- > 0;)
        if (memcmp(t + i, open_tag, 11) == 0) {
            last = i;
            break;
        }
    if (last == n) return 0;
    blen = n - last;
    for (i = 0; i + blen <= last; i++) {
        if (memcmp(t + i, open_tag, 11) != 0) continue;
        for (j = i + 11; j + 12 <= last && memcmp(t + j, close_tag, 12) != 0; j++) {}
        if (j + 12 - i == blen && memcmp(t + i, t + last, blen) == 0) return 1;
    }
    return 0;
}

static int srv_on_token(void *user, uint64_t id, int32_t token, const char *text, size_t len) {
    srv_req *r = (srv_req *)user;
    srv *s = r->s;
    double t = now_s();
    int stop;
    (void)id;
    pthread_mutex_lock(&s->mu);
    if (!r->got_first) hist_add(&s->ttft, t - r->t_submit);
    else
        hist_add(&s->itl, t - r->t_last);
    r->got_first = 1;
    r->t_last = t;
    if (text && len) cli_buf_put(&r->text, text, len);
    if (r->n_toks == r->cap_toks) {
        int cap = r->cap_toks * 2 + 16;
        srv_tok *p = (srv_tok *)realloc(r->toks, sizeof *p * (size_t)cap);
        if (p) r->toks = p, r->cap_toks = cap;
    }
    if (r->n_toks < r->cap_toks) {
        srv_tok *k = &r->toks[r->n_toks++];
        k->id = token;
        k->logprob = r->logits ? (float)((double)r->logits[token] - r->lse) : 0.0f;
        if (!(k->logprob > -1e30f)) k->logprob = -9999.0f;
        k->n_top = r->n_pending_top;
        if (k->n_top) memcpy(k->top, r->pending_top, sizeof(srv_top) * (size_t)k->n_top);
    }
    r->logits = NULL;
    stop = r->tool_mode && len && tool_call_repeats(r->text.p, r->text.n);
    pthread_cond_signal(&r->cv);
    pthread_mutex_unlock(&s->mu);
    return stop;
}

/* Marks finished requests done (under mu): their status is final and their id released. */
static void srv_reap(srv *s) {
    srv_req **pp = &s->live, *r;
    while ((r = *pp) != NULL) {
        mlstack_request_status st;
        memset(&st, 0, sizeof st);
        st.finish = MLSTACK_FINISH_ERROR;
        snprintf(st.message, sizeof st.message, "the request was lost by the engine");
        if (mlstack_engine_poll(s->e, r->id, &st, NULL, 0) != MLSTACK_OK || st.state == MLSTACK_REQUEST_DONE) {
            r->st = st;
            r->done = 1;
            mlstack_engine_release(s->e, r->id);
            *pp = r->next;
            s->prompt_tokens += (uint64_t)st.n_prompt;
            s->cached_tokens += (uint64_t)st.n_cached;
            s->completion_tokens += (uint64_t)st.n_generated;
            if (st.finish == MLSTACK_FINISH_CANCELLED) s->cancelled++;
            if (st.finish == MLSTACK_FINISH_ERROR) s->failed++;
            hist_add(&s->e2e, now_s() - r->t_submit);
            pthread_cond_signal(&r->cv);
        } else {
            pp = &r->next;
        }
    }
}

/* An embeddings request for the engine thread: n inputs (ids of input i at ids[off[i]..off[i+1])),
   their vectors into out (n x n_embd). */
typedef struct srv_embed_job {
    const int32_t *ids;
    const size_t *off;
    int n, done;
    float *out;
    mlstack_result res;
    char msg[200];
    struct srv_embed_job *next;
} srv_embed_job;

/* Runs the embedding jobs queued (under mu; the lock is let go while each runs). */
static void srv_run_embeds(srv *s) {
    while (s->embeds) {
        srv_embed_job *j = s->embeds;
        int i, D = s->info.n_embd;
        s->embeds = j->next;
        pthread_mutex_unlock(&s->mu);
        j->res = MLSTACK_OK;
        for (i = 0; i < j->n && j->res == MLSTACK_OK; i++)
            j->res = mlstack_embed(s->e, j->ids + j->off[i], (int)(j->off[i + 1] - j->off[i]), NULL,
                                   j->out + (size_t)i * (size_t)D, D);
        if (j->res != MLSTACK_OK) snprintf(j->msg, sizeof j->msg, "%s", mlstack_engine_error(s->e));
        pthread_mutex_lock(&s->mu);
        j->done = 1;
        pthread_cond_broadcast(&s->embed_cv);
    }
}

static void *srv_engine_main(void *arg) {
    srv *s = (srv *)arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        int active = 0;
        if (s->stop_engine) break;
        if (s->embeds) srv_run_embeds(s);
        if (!s->live) {
            pthread_cond_wait(&s->wake, &s->mu);
            continue;
        }
        pthread_mutex_unlock(&s->mu);
        if (mlstack_engine_step(s->e, &active) != MLSTACK_OK && !s->o.quiet)
            fprintf(stderr, "mlstack serve: step failed: %s\n", mlstack_engine_error(s->e));
        pthread_mutex_lock(&s->mu);
        srv_reap(s);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ==== REQUESTS: OpenAI JSON in ==== */

typedef struct oai_req {
    int chat, resp;         /* chat: a chat template prompt (chat completions, responses); resp: /v1/responses */
    int n;                  /* choices (n) */
    int32_t *bias_ids;      /* logit_bias */
    float *bias_values;
    mlstack_request_desc d;
    int32_t *prompt;
    const char *stops[SRV_MAX_STOPS + 1]; /* + "</tool_call>" for parallel_tool_calls false */
    int stream, include_usage, logprobs, top_logprobs;
    int tool_mode;          /* 0: no tools or tool_choice "none"; 1: "auto"; 2: "required" or one named */
    int gkind;              /* mlstack_grammar_kind of response_format / tools, -1: none */
    const char *gparam;     /* the request field the grammar comes from */
    cli_buf gtext;          /* its text (schema or tools list) */
    cli_buf tools_json;     /* `tools` for the chat template */
    srv_gram *gram;
    conn *c;                /* the client: a grammar compile stops when it goes (gram_cancel) */
    char err[600];
    const char *err_param, *err_code;
    int err_status;
} oai_req;

static int bad(oai_req *q, int status, const char *param, const char *code, const char *msg) {
    q->err_status = status;
    q->err_param = param;
    q->err_code = code;
    snprintf(q->err, sizeof q->err, "%s", msg);
    return -1;
}

static int bad_type(oai_req *q, const char *param, const char *want) {
    char msg[200];
    snprintf(msg, sizeof msg, "'%s' must be %s", param, want);
    return bad(q, 400, param, "invalid_type", msg);
}

/* An optional number field in [lo, hi]. Returns 1 set, 0 absent (or null), -1 wrong. */
static int num_field(oai_req *q, const mlstack_json *root, const char *key, double lo, double hi, double *out) {
    const mlstack_json *v = mlstack_json_get(root, key);
    char msg[200];
    if (!v || mlstack_json_type_of(v) == MLSTACK_JSON_NULL) return 0;
    if (mlstack_json_type_of(v) != MLSTACK_JSON_NUMBER) return bad_type(q, key, "a number");
    *out = mlstack_json_number(v);
    if (!(*out >= lo && *out <= hi)) {
        snprintf(msg, sizeof msg, "'%s' must be between %g and %g", key, lo, hi);
        return bad(q, 400, key, "invalid_value", msg);
    }
    return 1;
}

static int int_field(oai_req *q, const mlstack_json *root, const char *key, int64_t lo, int64_t hi, int64_t *out) {
    const mlstack_json *v = mlstack_json_get(root, key);
    char msg[200];
    if (!v || mlstack_json_type_of(v) == MLSTACK_JSON_NULL) return 0;
    if (!mlstack_json_int(v, out)) return bad_type(q, key, "an integer");
    if (*out < lo || *out > hi) {
        snprintf(msg, sizeof msg, "'%s' must be between %lld and %lld", key, (long long)lo, (long long)hi);
        return bad(q, 400, key, "invalid_value", msg);
    }
    return 1;
}

static int bool_field(oai_req *q, const mlstack_json *root, const char *key, int *out) {
    const mlstack_json *v = mlstack_json_get(root, key);
    mlstack_json_type t = mlstack_json_type_of(v);
    if (!v || t == MLSTACK_JSON_NULL) return 0;
    if (t != MLSTACK_JSON_TRUE && t != MLSTACK_JSON_FALSE) return bad_type(q, key, "a boolean");
    *out = t == MLSTACK_JSON_TRUE;
    return 1;
}

/* logit_bias: {"<token id>": bias from -100 to 100, ...}; -100 bans the token, as OpenAI says. */
static int parse_logit_bias(srv *s, oai_req *q, const mlstack_json *root) {
    const mlstack_json *v = mlstack_json_get(root, "logit_bias"), *e;
    size_t n, k = 0;
    char msg[200];
    if (mlstack_json_type_of(v) == MLSTACK_JSON_NULL) return 0;
    if (mlstack_json_type_of(v) != MLSTACK_JSON_OBJECT)
        return bad_type(q, "logit_bias", "an object mapping token ids (as strings) to numbers from -100 to 100");
    if ((n = mlstack_json_length(v)) > SRV_MAX_BIAS) {
        snprintf(msg, sizeof msg, "logit_bias has %zu entries; at most %d", n, SRV_MAX_BIAS);
        return bad(q, 400, "logit_bias", "invalid_value", msg);
    }
    if (!n) return 0;
    q->bias_ids = (int32_t *)malloc(sizeof(int32_t) * n);
    q->bias_values = (float *)malloc(sizeof(float) * n);
    if (!q->bias_ids || !q->bias_values) return bad(q, 500, NULL, NULL, "out of memory");
    for (e = mlstack_json_child(v); e; e = mlstack_json_next(e), k++) {
        const char *key = mlstack_json_key(e);
        char *end = NULL;
        long id = key[0] >= '0' && key[0] <= '9' && strlen(key) <= 9 ? strtol(key, &end, 10) : -1;
        double b = mlstack_json_number(e);
        if (id < 0 || !end || *end || id >= s->info.n_vocab) {
            snprintf(msg, sizeof msg, "logit_bias: '%.40s' is not a token id of this model (0 to %d)", key,
                     s->info.n_vocab - 1);
            return bad(q, 400, "logit_bias", "invalid_value", msg);
        }
        if (mlstack_json_type_of(e) != MLSTACK_JSON_NUMBER || !(b >= -100 && b <= 100))
            return bad(q, 400, "logit_bias", "invalid_value", "logit_bias values must be numbers from -100 to 100");
        q->bias_ids[k] = (int32_t)id;
        q->bias_values[k] = b <= -100 ? -INFINITY : (float)b;
    }
    q->d.sampler.bias_ids = q->bias_ids;
    q->d.sampler.bias_values = q->bias_values;
    q->d.sampler.n_bias = (int)k;
    return 0;
}

/* ==== STRUCTURED OUTPUT: response_format, tools ==== */

/* v as compact JSON (the parser has bounded its nesting). */
static void json_write(cli_buf *b, const mlstack_json *v) {
    const mlstack_json *c;
    const char *str;
    size_t n;
    int64_t iv;
    switch (mlstack_json_type_of(v)) {
    case MLSTACK_JSON_OBJECT:
    case MLSTACK_JSON_ARRAY:
        cli_buf_puts(b, mlstack_json_type_of(v) == MLSTACK_JSON_OBJECT ? "{" : "[");
        for (c = mlstack_json_child(v); c; c = mlstack_json_next(c)) {
            if (c != mlstack_json_child(v)) cli_buf_puts(b, ",");
            if (mlstack_json_type_of(v) == MLSTACK_JSON_OBJECT) {
                str = mlstack_json_key(c);
                cli_buf_json(b, str, strlen(str));
                cli_buf_puts(b, ":");
            }
            json_write(b, c);
        }
        cli_buf_puts(b, mlstack_json_type_of(v) == MLSTACK_JSON_OBJECT ? "}" : "]");
        break;
    case MLSTACK_JSON_STRING:
        str = mlstack_json_string(v, &n);
        cli_buf_json(b, str, n);
        break;
    case MLSTACK_JSON_NUMBER:
        if (mlstack_json_int(v, &iv)) cli_buf_printf(b, "%lld", (long long)iv);
        else
            cli_buf_printf(b, "%.17g", mlstack_json_number(v));
        break;
    case MLSTACK_JSON_TRUE: cli_buf_puts(b, "true"); break;
    case MLSTACK_JSON_FALSE: cli_buf_puts(b, "false"); break;
    default: cli_buf_puts(b, "null"); break;
    }
}

static void gram_free(srv_gram *e) {
    if (!e) return;
    mlstack_grammar_free(e->g);
    free(e->text);
    free(e);
}

/* Polled by a grammar compile (about every 64K units of work): a client that has gone, or a
   shutdown, abandons the compile (MLSTACK_ERR_CANCELLED). */
static int gram_cancel(void *user) { return srv_stop || (user && peer_gone((conn *)user)); }

/* The compiled grammar for (kind, text), from the cache or compiled now (outside the lock: a
   schema may take milliseconds) and cached in place of the least recently used idle one. c: the
   client, whose going away cancels the compile (NULL: none). */
static srv_gram *gram_get(srv *s, int kind, const char *text, size_t len, conn *c, mlstack_error *err) {
    srv_gram *e = NULL, *old = NULL;
    mlstack_grammar_desc d;
    int i, slot = -1;
    pthread_mutex_lock(&s->mu);
    for (i = 0; i < SRV_GRAMMARS && !e; i++)
        if (s->grams[i] && s->grams[i]->kind == kind && s->grams[i]->len == len &&
            !memcmp(s->grams[i]->text, text, len))
            e = s->grams[i], e->refs++, e->used = ++s->gram_clock;
    pthread_mutex_unlock(&s->mu);
    if (e) return e;
    e = (srv_gram *)calloc(1, sizeof *e);
    if (e) e->text = (char *)malloc(len + 1);
    if (!e || !e->text) {
        if (e) free(e);
        snprintf(err->message, sizeof err->message, "out of memory");
        err->code = MLSTACK_ERR_NO_MEMORY;
        return NULL;
    }
    memcpy(e->text, text, len);
    e->text[len] = 0;
    e->kind = kind;
    e->len = len;
    e->refs = 1;
    memset(&d, 0, sizeof d);
    d.kind = (mlstack_grammar_kind)kind;
    d.text = e->text;
    d.len = len;
    d.vocab = s->vocab;
    d.max_memory = SRV_GRAMMAR_MEMORY;
    d.cancel = gram_cancel;
    d.cancel_user = c;
    if (mlstack_grammar_compile(&d, &e->g, err) != MLSTACK_OK) {
        gram_free(e);
        return NULL;
    }
    pthread_mutex_lock(&s->mu);
    e->used = ++s->gram_clock;
    for (i = 0; i < SRV_GRAMMARS && slot < 0; i++)
        if (!s->grams[i]) slot = i;
    for (i = 0; i < SRV_GRAMMARS && slot < 0; i++) /* none free: the least recently used idle one */
        if (s->grams[i]->refs == 0 && (slot < 0 || s->grams[i]->used < s->grams[slot]->used)) slot = i;
    if (slot >= 0) {
        old = s->grams[slot];
        s->grams[slot] = e;
        e->cached = 1;
    }
    pthread_mutex_unlock(&s->mu);
    gram_free(old);
    return e;
}

static void gram_put(srv *s, srv_gram *e) {
    int drop;
    if (!e) return;
    pthread_mutex_lock(&s->mu);
    drop = --e->refs == 0 && !e->cached;
    pthread_mutex_unlock(&s->mu);
    if (drop) gram_free(e);
}

static int tool_name_ok(const char *p, size_t n) {
    size_t i;
    if (!p || n == 0 || n > 64) return 0;
    for (i = 0; i < n; i++)
        if (!isalnum((unsigned char)p[i]) && p[i] != '_' && p[i] != '-') return 0;
    return 1;
}

/* A GBNF grammar whose output is exactly one of the strings in the list v (guided_choice). */
static int choice_gbnf(oai_req *q, const char *param, const mlstack_json *v) {
    const mlstack_json *e;
    size_t n = mlstack_json_length(v), i, len;
    if (mlstack_json_type_of(v) != MLSTACK_JSON_ARRAY || n == 0)
        return bad_type(q, param, "a non-empty list of strings");
    if (n > SRV_MAX_CHOICES) return bad(q, 400, param, "invalid_value", "at most 64 choices");
    cli_buf_puts(&q->gtext, "root ::= ");
    for (e = mlstack_json_child(v); e; e = mlstack_json_next(e)) {
        const char *c = mlstack_json_string(e, &len);
        if (!c || len == 0) return bad_type(q, param, "a list of non-empty strings");
        cli_buf_puts(&q->gtext, e == mlstack_json_child(v) ? "\"" : " | \"");
        for (i = 0; i < len; i++) {
            unsigned char ch = (unsigned char)c[i];
            if (ch == '"' || ch == '\\') cli_buf_printf(&q->gtext, "\\%c", ch);
            else if (ch < 0x20 || ch == 0x7f)
                cli_buf_printf(&q->gtext, "\\x%02X", ch);
            else
                cli_buf_put(&q->gtext, (const char *)&ch, 1);
        }
        cli_buf_puts(&q->gtext, "\"");
    }
    q->gkind = MLSTACK_GRAMMAR_GBNF;
    return 0;
}

/* The other servers' constrained-decoding fields: llama-server's grammar (GBNF); vLLM's
   guided_grammar, guided_regex, guided_choice, guided_json and structured_outputs {grammar,
   regex, choice, json}. At most one of them (and not response_format). */
static int parse_guided(oai_req *q, const mlstack_json *root) {
    static const char *const keys[5] = {"grammar", "guided_grammar", "guided_regex", "guided_choice", "guided_json"};
    static const char *const sub[4] = {"grammar", "regex", "choice", "json"};
    static const int kinds[5] = {MLSTACK_GRAMMAR_GBNF, MLSTACK_GRAMMAR_GBNF, MLSTACK_GRAMMAR_REGEX, -2,
                                 MLSTACK_GRAMMAR_JSON_SCHEMA};
    const mlstack_json *v = NULL, *so = mlstack_json_get(root, "structured_outputs");
    const char *param = NULL, *str;
    int i, kind = -1, found = 0;
    size_t len;
    for (i = 0; i < 5; i++)
        if (mlstack_json_type_of(mlstack_json_get(root, keys[i])) != MLSTACK_JSON_NULL)
            v = mlstack_json_get(root, keys[i]), param = keys[i], kind = kinds[i], found++;
    if (mlstack_json_type_of(so) != MLSTACK_JSON_NULL) {
        if (mlstack_json_type_of(so) != MLSTACK_JSON_OBJECT)
            return bad_type(q, "structured_outputs", "an object with one of grammar, regex, choice or json");
        for (v = mlstack_json_child(so); v; v = mlstack_json_next(v)) {
            for (i = 0; i < 4 && strcmp(mlstack_json_key(v), sub[i]); i++) {}
            if (i == 4)
                return bad(q, 400, "structured_outputs", "unsupported_value",
                           "structured_outputs takes one of grammar, regex, choice or json");
            if (mlstack_json_type_of(v) != MLSTACK_JSON_NULL) break;
        }
        if (!v) return 0;
        param = "structured_outputs", kind = kinds[i + 1], found++;
    }
    if (!found) return 0;
    if (found > 1 || q->gkind >= 0)
        return bad(q, 400, param, "invalid_value",
                   "give one of response_format, grammar, guided_grammar, guided_regex, guided_choice, guided_json "
                   "and structured_outputs");
    q->gparam = param;
    if (kind == -2) return choice_gbnf(q, param, v);
    if (kind == MLSTACK_GRAMMAR_JSON_SCHEMA && mlstack_json_type_of(v) == MLSTACK_JSON_OBJECT) {
        json_write(&q->gtext, v);
    } else if ((str = mlstack_json_string(v, &len)) != NULL && len > 0) {
        cli_buf_put(&q->gtext, str, len);
    } else {
        return bad_type(q, param,
                        kind == MLSTACK_GRAMMAR_JSON_SCHEMA ? "a JSON Schema (an object or its text)"
                                                            : "a non-empty string");
    }
    q->gkind = kind;
    return 0;
}

/* response_format, tools and tool_choice -> q's grammar (compiled here, so that a bad schema is a
   400 naming its keyword and path) and q->tools_json for the chat template.
   tool_choice "auto" uses MLSTACK_GRAMMAR_TOOL_CALLS_AUTO: free text that never contains the
   <tool_call> tag, optionally followed by calls whose arguments follow their schema. One grammar
   covers both, so the model keeps its choice (text or a call) at every token and a call it
   starts can only be valid; no second pass, no trigger to detect. */
static int parse_structured(srv *s, oai_req *q, const mlstack_json *root) {
    const mlstack_json *v = mlstack_json_get(root, "response_format"), *tools = mlstack_json_get(root, "tools"), *t,
                       *named = NULL;
    const char *type;
    mlstack_error err;
    char msg[sizeof q->err];
    int n_tools = 0, parallel = 1;
    q->gkind = -1;
    if (mlstack_json_type_of(v) != MLSTACK_JSON_NULL) {
        if (mlstack_json_type_of(v) != MLSTACK_JSON_OBJECT) return bad_type(q, "response_format", "an object");
        type = mlstack_json_string(mlstack_json_get(v, "type"), NULL);
        if (!type) return bad(q, 400, "response_format", "invalid_value", "response_format needs a string 'type'");
        if (strcmp(type, "json_object") == 0) {
            q->gkind = MLSTACK_GRAMMAR_JSON;
        } else if (strcmp(type, "json_schema") == 0) {
            const mlstack_json *js = mlstack_json_get(v, "json_schema"), *sc = mlstack_json_get(js, "schema");
            int strict;
            if (mlstack_json_type_of(js) != MLSTACK_JSON_OBJECT)
                return bad_type(q, "response_format",
                                "{\"type\": \"json_schema\", \"json_schema\": {\"name\": ..., \"schema\": {...}}}");
            if (!mlstack_json_string(mlstack_json_get(js, "name"), NULL))
                return bad(q, 400, "response_format", "missing_required_parameter",
                           "response_format.json_schema needs a string 'name'");
            if (bool_field(q, js, "strict", &strict) < 0) return -1; /* the output always follows the schema */
            if (mlstack_json_type_of(sc) == MLSTACK_JSON_NULL) {
                q->gkind = MLSTACK_GRAMMAR_JSON;
            } else if (mlstack_json_type_of(sc) != MLSTACK_JSON_OBJECT) {
                return bad_type(q, "response_format", "a json_schema whose 'schema' is an object");
            } else {
                q->gkind = MLSTACK_GRAMMAR_JSON_SCHEMA;
                json_write(&q->gtext, sc);
            }
        } else if (strcmp(type, "text") != 0) {
            return bad(q, 400, "response_format", "unsupported_value",
                       "response_format's type must be text, json_object or json_schema");
        }
        q->gparam = q->gkind == MLSTACK_GRAMMAR_JSON_SCHEMA ? "response_format.json_schema.schema" : "response_format";
    }
    if (parse_guided(q, root) != 0) return -1;
    if (mlstack_json_type_of(tools) != MLSTACK_JSON_NULL) {
        if (!q->chat) return bad(q, 400, "tools", "unsupported_value", "tools are for /v1/chat/completions");
        if (mlstack_json_type_of(tools) != MLSTACK_JSON_ARRAY) return bad_type(q, "tools", "a list of tools");
        for (t = mlstack_json_child(tools); t; t = mlstack_json_next(t), n_tools++) {
            const mlstack_json *fn = mlstack_json_get(t, "function"), *pa = mlstack_json_get(fn, "parameters");
            const char *tt = mlstack_json_string(mlstack_json_get(t, "type"), NULL), *name;
            size_t nl = 0;
            if (!tt || strcmp(tt, "function") != 0 || mlstack_json_type_of(fn) != MLSTACK_JSON_OBJECT)
                return bad_type(
                    q, "tools",
                    "a list of {\"type\": \"function\", \"function\": {\"name\": ..., \"parameters\": {...}}}");
            name = mlstack_json_string(mlstack_json_get(fn, "name"), &nl);
            if (!tool_name_ok(name, nl))
                return bad(q, 400, "tools", "invalid_value",
                           "a function's 'name' must be 1 to 64 letters, digits, '_' or '-'");
            if (mlstack_json_type_of(pa) != MLSTACK_JSON_NULL && mlstack_json_type_of(pa) != MLSTACK_JSON_OBJECT)
                return bad_type(q, "tools", "functions whose 'parameters' is a JSON Schema object");
        }
        if (n_tools) {
            json_write(&q->tools_json, tools);
            cli_buf_put(&q->tools_json, "", 0);
            q->tool_mode = 1;
        }
    }
    v = mlstack_json_get(root, "tool_choice");
    if (mlstack_json_type_of(v) != MLSTACK_JSON_NULL) {
        const char *c = mlstack_json_string(v, NULL), *want;
        if (c && strcmp(c, "none") == 0) {
            q->tool_mode = 0;
        } else if (c && strcmp(c, "auto") == 0) {
        } else if (c && strcmp(c, "required") == 0) {
            if (!n_tools) return bad(q, 400, "tool_choice", "invalid_value", "tool_choice 'required' needs tools");
            q->tool_mode = 2;
        } else if ((want = mlstack_json_string(mlstack_json_get(mlstack_json_get(v, "function"), "name"), NULL)) !=
                   NULL) {
            for (t = n_tools ? mlstack_json_child(tools) : NULL; t && !named; t = mlstack_json_next(t)) {
                const char *name = mlstack_json_string(mlstack_json_get(mlstack_json_get(t, "function"), "name"), NULL);
                if (strcmp(name, want) == 0) named = t;
            }
            if (!named) {
                snprintf(msg, sizeof msg, "tool_choice names the function '%.64s', which is not in tools", want);
                return bad(q, 400, "tool_choice", "invalid_value", msg);
            }
            q->tool_mode = 2;
        } else {
            return bad_type(
                q, "tool_choice",
                "\"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
        }
    }
    if (bool_field(q, root, "parallel_tool_calls", &parallel) < 0) return -1;
    if (q->tool_mode && !parallel) /* one call: stop at its end tag (the parser takes the open block) */
        q->stops[q->d.n_stop_strings++] = "</tool_call>";
    if (q->tool_mode && q->gkind >= 0)
        return bad(q, 400, q->gparam, "unsupported_value",
                   "response_format json_object / json_schema, grammars and tools cannot be combined (unless "
                   "tool_choice is \"none\")");
    if (q->tool_mode) {
        q->gparam = "tools";
        q->gkind = q->tool_mode == 1 ? MLSTACK_GRAMMAR_TOOL_CALLS_AUTO : MLSTACK_GRAMMAR_TOOL_CALLS;
        if (named) {
            cli_buf_puts(&q->gtext, "[");
            json_write(&q->gtext, named);
            cli_buf_puts(&q->gtext, "]");
        } else {
            json_write(&q->gtext, tools);
        }
    }
    if (q->gkind < 0) return 0;
    cli_buf_put(&q->gtext, "", 0);
    if (q->gtext.oom || q->tools_json.oom) return bad(q, 500, NULL, NULL, "out of memory");
    if (!s->vocab)
        return bad(q, 400, q->gparam, "unsupported_value",
                   "this server has no constrained decoding (no vocabulary view)");
    memset(&err, 0, sizeof err);
    q->gram = gram_get(s, q->gkind, q->gtext.p, q->gtext.n, q->c, &err);
    if (!q->gram) {
        snprintf(msg, sizeof msg, "%s: %s", q->gparam, err.message);
        return bad(q, err.code == MLSTACK_ERR_NO_MEMORY ? 500 : 400, q->gparam, "invalid_schema", msg);
    }
    q->d.sampler.grammar = q->gram->g;
    return 0;
}

/* A message's content: a string, or a list of {"type": "text", "text": ...} parts joined. */
static int content_text(oai_req *q, const mlstack_json *v, cli_buf *out) {
    const mlstack_json *p;
    mlstack_json_type t = mlstack_json_type_of(v);
    size_t len;
    const char *s;
    if (t == MLSTACK_JSON_NULL) return 0;
    if (t == MLSTACK_JSON_STRING) {
        s = mlstack_json_string(v, &len);
        if (memchr(s, 0, len))
            return bad(q, 400, "messages", "invalid_value", "message content contains a NUL character");
        cli_buf_put(out, s, len);
        return 0;
    }
    if (t != MLSTACK_JSON_ARRAY)
        return bad_type(q, "messages", "a list whose contents are strings or lists of text parts");
    for (p = mlstack_json_child(v); p; p = mlstack_json_next(p)) {
        const char *type = mlstack_json_string(mlstack_json_get(p, "type"), NULL);
        const mlstack_json *tx = mlstack_json_get(p, "text");
        if (!type || strcmp(type, "text") != 0)
            return bad(q, 400, "messages", "unsupported_content", "only content parts of type 'text' are supported");
        if (mlstack_json_type_of(tx) != MLSTACK_JSON_STRING)
            return bad_type(q, "messages", "text parts with a string 'text'");
        s = mlstack_json_string(tx, &len);
        if (memchr(s, 0, len))
            return bad(q, 400, "messages", "invalid_value", "message content contains a NUL character");
        cli_buf_put(out, s, len);
    }
    return 0;
}

/* An assistant message's tool_calls for the template: arguments given as a JSON string (as the
   openai client sends them) become the object they encode, as chat templates expect. */
static int write_tool_calls(oai_req *q, cli_buf *b, const mlstack_json *calls) {
    const mlstack_json *c;
    if (mlstack_json_type_of(calls) != MLSTACK_JSON_ARRAY)
        return bad_type(q, "messages", "messages whose 'tool_calls' is a list");
    cli_buf_puts(b, ",\"tool_calls\":[");
    for (c = mlstack_json_child(calls); c; c = mlstack_json_next(c)) {
        const mlstack_json *fn = mlstack_json_get(c, "function"), *args = mlstack_json_get(fn, "arguments"), *id;
        const char *name = mlstack_json_string(mlstack_json_get(fn, "name"), NULL);
        mlstack_json_doc *doc = NULL;
        mlstack_error err;
        size_t n;
        const char *a;
        if (!name) return bad_type(q, "messages", "tool calls with a function 'name'");
        if (c != mlstack_json_child(calls)) cli_buf_puts(b, ",");
        cli_buf_puts(b, "{");
        if ((id = mlstack_json_get(c, "id")) != NULL && mlstack_json_type_of(id) == MLSTACK_JSON_STRING) {
            cli_buf_puts(b, "\"id\":");
            json_write(b, id);
            cli_buf_puts(b, ",");
        }
        cli_buf_puts(b, "\"type\":\"function\",\"function\":{\"name\":");
        json_write(b, mlstack_json_get(fn, "name"));
        cli_buf_puts(b, ",\"arguments\":");
        a = mlstack_json_string(args, &n);
        if (a && mlstack_json_parse(a, n, "tool call arguments", &doc, &err) == MLSTACK_OK)
            json_write(b, mlstack_json_root(doc));
        else if (mlstack_json_type_of(args) == MLSTACK_JSON_NULL)
            cli_buf_puts(b, "{}");
        else
            json_write(b, args);
        mlstack_json_free(doc);
        cli_buf_puts(b, "}}");
    }
    cli_buf_puts(b, "]");
    return 0;
}

/* messages -> the chat template (with q's tools) -> ids. */
static int chat_prompt(srv *s, oai_req *q, const mlstack_json *msgs) {
    size_t n = mlstack_json_length(msgs);
    cli_buf js, text;
    const mlstack_json *v;
    mlstack_template_options to;
    mlstack_error err;
    int rc = 0;
    if (mlstack_json_type_of(msgs) != MLSTACK_JSON_ARRAY) return bad_type(q, "messages", "a list of messages");
    if (n == 0) return bad(q, 400, "messages", "invalid_value", "'messages' must contain at least one message");
    if (!s->tpl)
        return bad(q, 400, "messages", "no_chat_template", "this model has no chat template: use /v1/completions");
    memset(&js, 0, sizeof js);
    memset(&text, 0, sizeof text);
    cli_buf_puts(&js, "[");
    for (v = mlstack_json_child(msgs); !rc && v; v = mlstack_json_next(v)) {
        const char *role = mlstack_json_string(mlstack_json_get(v, "role"), NULL);
        const mlstack_json *f;
        if (mlstack_json_type_of(v) != MLSTACK_JSON_OBJECT || !role) {
            rc = bad_type(q, "messages", "a list of objects with a string 'role'");
            break;
        }
        if (strcmp(role, "system") && strcmp(role, "user") && strcmp(role, "assistant") && strcmp(role, "developer") &&
            strcmp(role, "tool")) {
            rc = bad(q, 400, "messages", "invalid_value",
                     "a message's role must be system, developer, user, assistant or tool");
            break;
        }
        text.n = 0;
        if (content_text(q, mlstack_json_get(v, "content"), &text) != 0) {
            rc = -1;
            break;
        }
        if (v != mlstack_json_child(msgs)) cli_buf_puts(&js, ",");
        cli_buf_puts(&js, "{\"role\":");
        cli_buf_json(&js, strcmp(role, "developer") == 0 ? "system" : role,
                     strlen(strcmp(role, "developer") == 0 ? "system" : role));
        cli_buf_puts(&js, ",\"content\":");
        cli_buf_json(&js, text.p ? text.p : "", text.n);
        if (mlstack_json_type_of(f = mlstack_json_get(v, "tool_calls")) != MLSTACK_JSON_NULL &&
            write_tool_calls(q, &js, f) != 0) {
            rc = -1;
            break;
        }
        if (mlstack_json_type_of(f = mlstack_json_get(v, "tool_call_id")) == MLSTACK_JSON_STRING) {
            cli_buf_puts(&js, ",\"tool_call_id\":");
            json_write(&js, f);
        }
        if (mlstack_json_type_of(f = mlstack_json_get(v, "name")) == MLSTACK_JSON_STRING) {
            cli_buf_puts(&js, ",\"name\":");
            json_write(&js, f);
        }
        cli_buf_puts(&js, "}");
    }
    cli_buf_puts(&js, "]");
    if (!rc && (js.oom || text.oom)) rc = bad(q, 500, NULL, NULL, "out of memory");
    if (!rc) { /* templates carry their own special tokens; the messages' are text (--content-specials) */
        size_t cnt = 0, cap = js.n + q->tools_json.n + 256; /* enough ids for most prompts; else a second render */
        mlstack_result r;
        memset(&to, 0, sizeof to);
        to.add_generation_prompt = 1;
        to.tools_json = q->tools_json.n ? q->tools_json.p : NULL;
        to.content_specials = s->o.content_specials && strcmp(s->o.content_specials, "parse") == 0
                                  ? MLSTACK_CONTENT_SPECIALS_PARSE
                                  : MLSTACK_CONTENT_SPECIALS_TEXT;
        q->prompt = (int32_t *)malloc(sizeof(int32_t) * cap);
        r = q->prompt ? mlstack_chat_template_encode(s->tpl, NULL, s->tok, js.p, js.n, &to, q->prompt, cap, &cnt, &err)
                      : MLSTACK_ERR_NO_MEMORY;
        if (r == MLSTACK_ERR_LIMIT && cnt > cap) {
            int32_t *p = (int32_t *)realloc(q->prompt, sizeof(int32_t) * cnt);
            if (p) q->prompt = p;
            r = p ? mlstack_chat_template_encode(s->tpl, NULL, s->tok, js.p, js.n, &to, q->prompt, cnt, &cnt, &err)
                  : MLSTACK_ERR_NO_MEMORY;
        }
        if (r == MLSTACK_ERR_NO_MEMORY) rc = bad(q, 500, NULL, NULL, "out of memory");
        else if (r != MLSTACK_OK)
            rc = bad(q, 400, "messages", "template_error", err.message);
        q->d.n_prompt = (int)cnt;
    }
    cli_buf_free(&js);
    cli_buf_free(&text);
    return rc;
}

/* /v1/responses: instructions (a system message) and input (a string: one user message; or a
   list of messages {"role", "content": a string or parts of type input_text / output_text}) as
   chat messages for the template. */
static int responses_prompt(srv *s, oai_req *q, const mlstack_json *root) {
    const mlstack_json *in = mlstack_json_get(root, "input"), *ins = mlstack_json_get(root, "instructions"), *it, *p;
    cli_buf js;
    mlstack_json_doc *doc = NULL;
    mlstack_error err;
    size_t len;
    const char *str;
    int rc = 0, first = 1;
    memset(&js, 0, sizeof js);
    if (!in) return bad(q, 400, "input", "missing_required_parameter", "you must provide an input");
    if (mlstack_json_type_of(ins) != MLSTACK_JSON_NULL && mlstack_json_type_of(ins) != MLSTACK_JSON_STRING)
        return bad_type(q, "instructions", "a string");
    if (mlstack_json_type_of(in) != MLSTACK_JSON_STRING && mlstack_json_type_of(in) != MLSTACK_JSON_ARRAY)
        return bad_type(q, "input", "a string or a list of messages");
    p = mlstack_json_get(mlstack_json_get(root, "text"), "format");
    if (mlstack_json_type_of(p) != MLSTACK_JSON_NULL &&
        (!(str = mlstack_json_string(mlstack_json_get(p, "type"), NULL)) || strcmp(str, "text") != 0))
        return bad(
            q, 400, "text", "unsupported_value",
            "text.format: only {\"type\": \"text\"} (for JSON output use /v1/chat/completions' response_format)");
    cli_buf_puts(&js, "[");
    if ((str = mlstack_json_string(ins, &len)) != NULL) {
        cli_buf_puts(&js, "{\"role\":\"system\",\"content\":");
        cli_buf_json(&js, str, len);
        cli_buf_puts(&js, "}");
        first = 0;
    }
    if ((str = mlstack_json_string(in, &len)) != NULL) {
        cli_buf_puts(&js, first ? "{\"role\":\"user\",\"content\":" : ",{\"role\":\"user\",\"content\":");
        cli_buf_json(&js, str, len);
        cli_buf_puts(&js, "}");
    }
    for (it = mlstack_json_type_of(in) == MLSTACK_JSON_ARRAY ? mlstack_json_child(in) : NULL; it && !rc;
         it = mlstack_json_next(it), first = 0) {
        const char *role = mlstack_json_string(mlstack_json_get(it, "role"), NULL),
                   *type = mlstack_json_string(mlstack_json_get(it, "type"), NULL);
        const mlstack_json *c = mlstack_json_get(it, "content");
        if (!role || (type && strcmp(type, "message") != 0)) {
            rc = bad(q, 400, "input", "unsupported_value",
                     "input items must be messages {\"role\", \"content\"} (the text subset of /v1/responses)");
            break;
        }
        cli_buf_puts(&js, first ? "{\"role\":" : ",{\"role\":");
        cli_buf_json(&js, role, strlen(role));
        cli_buf_puts(&js, ",\"content\":");
        if ((str = mlstack_json_string(c, &len)) != NULL) {
            cli_buf_json(&js, str, len);
        } else if (mlstack_json_type_of(c) == MLSTACK_JSON_ARRAY) {
            cli_buf_puts(&js, "[");
            for (p = mlstack_json_child(c); p && !rc; p = mlstack_json_next(p)) {
                const char *pt = mlstack_json_string(mlstack_json_get(p, "type"), NULL);
                const char *tx = mlstack_json_string(mlstack_json_get(p, "text"), &len);
                if (!pt || !tx || (strcmp(pt, "input_text") && strcmp(pt, "output_text") && strcmp(pt, "text")))
                    rc = bad(q, 400, "input", "unsupported_content",
                             "only content parts of type input_text / output_text are supported");
                if (p != mlstack_json_child(c)) cli_buf_puts(&js, ",");
                cli_buf_puts(&js, "{\"type\":\"text\",\"text\":");
                if (tx) cli_buf_json(&js, tx, len);
                cli_buf_puts(&js, "}");
            }
            cli_buf_puts(&js, "]");
        } else {
            rc = bad_type(q, "input", "messages whose content is a string or a list of text parts");
        }
        cli_buf_puts(&js, "}");
    }
    cli_buf_puts(&js, "]");
    if (!rc && js.oom) rc = bad(q, 500, NULL, NULL, "out of memory");
    if (!rc && mlstack_json_parse(js.p, js.n, "input", &doc, &err) != MLSTACK_OK)
        rc = bad(q, 400, "input", "invalid_value", err.message);
    if (!rc) {
        rc = chat_prompt(s, q, mlstack_json_root(doc));
        if (rc && q->err_param && strcmp(q->err_param, "messages") == 0) q->err_param = "input";
    }
    mlstack_json_free(doc);
    cli_buf_free(&js);
    return rc;
}

/* prompt: a string, a list of one string, or a list of token ids. */
static int text_prompt(srv *s, oai_req *q, const mlstack_json *p) {
    mlstack_json_type t = mlstack_json_type_of(p);
    const mlstack_json *v;
    size_t len, cnt = 0, n;
    const char *text;
    if (t == MLSTACK_JSON_ARRAY && mlstack_json_length(p) == 1 &&
        mlstack_json_type_of(mlstack_json_child(p)) == MLSTACK_JSON_STRING)
        p = mlstack_json_child(p), t = MLSTACK_JSON_STRING;
    if (t == MLSTACK_JSON_ARRAY) {
        n = mlstack_json_length(p);
        if (n == 0) return bad(q, 400, "prompt", "invalid_value", "'prompt' must not be empty");
        q->prompt = (int32_t *)malloc(sizeof(int32_t) * n);
        if (!q->prompt) return bad(q, 500, NULL, NULL, "out of memory");
        for (v = mlstack_json_child(p); v; v = mlstack_json_next(v)) {
            int64_t x;
            if (!mlstack_json_int(v, &x) || x < 0 || x >= s->info.n_vocab)
                return bad(q, 400, "prompt", "invalid_value",
                           "'prompt' must be a string or a list of token ids in the vocabulary");
            q->prompt[cnt++] = (int32_t)x;
        }
        q->d.n_prompt = (int)cnt;
        return 0;
    }
    if (t != MLSTACK_JSON_STRING) return bad_type(q, "prompt", "a string or a list of token ids");
    text = mlstack_json_string(p, &len);
    mlstack_tokenizer_encode(s->tok, text, len, MLSTACK_ENCODE_ADD_SPECIAL, NULL, 0, &cnt);
    q->prompt = (int32_t *)malloc(sizeof(int32_t) * (cnt ? cnt : 1));
    if (!q->prompt ||
        mlstack_tokenizer_encode(s->tok, text, len, MLSTACK_ENCODE_ADD_SPECIAL, q->prompt, cnt, &cnt) != MLSTACK_OK)
        return bad(q, 500, NULL, NULL, q->prompt ? mlstack_tokenizer_error(s->tok) : "out of memory");
    if (cnt == 0) return bad(q, 400, "prompt", "invalid_value", "'prompt' must not be empty");
    q->d.n_prompt = (int)cnt;
    return 0;
}

static uint64_t srv_random_seed(void) {
    struct timeval tv;
    static uint64_t ctr;
    gettimeofday(&tv, NULL);
    return ((uint64_t)tv.tv_sec * 1000003u) ^ ((uint64_t)tv.tv_usec << 20) ^ (++ctr * 0x9E3779B97F4A7C15ull);
}

/* ---- the request fields: every one is known, or a 400 ----
   Endpoint bits: chat completions, completions, responses. `how`: 0 read (or an annotation
   taken and ignored: user, metadata, service_tier, ...); 1 refused unless null; 2 refused unless
   null or false; 3 refused unless null or 1; 4 refused unless null or ["text"]. `why` says why. */
#define EP_CHAT 1
#define EP_TEXT 2
#define EP_RESP 4
typedef struct srv_field {
    const char *name;
    int where, how;
    const char *why;
} srv_field;

static const srv_field SRV_FIELDS[] = {
    {"model", 7, 0, NULL},
    {"messages", EP_CHAT, 0, NULL},
    {"prompt", EP_TEXT, 0, NULL},
    {"input", EP_RESP, 0, NULL},
    {"instructions", EP_RESP, 0, NULL},
    {"max_tokens", 3, 0, NULL},
    {"max_completion_tokens", EP_CHAT, 0, NULL},
    {"max_output_tokens", EP_RESP, 0, NULL},
    {"temperature", 7, 0, NULL},
    {"top_p", 7, 0, NULL},
    {"top_k", 7, 0, NULL},
    {"min_p", 7, 0, NULL},
    {"presence_penalty", 3, 0, NULL},
    {"frequency_penalty", 3, 0, NULL},
    {"repetition_penalty", 3, 0, NULL},
    {"logit_bias", 3, 0, NULL},
    {"seed", 7, 0, NULL},
    {"stop", 3, 0, NULL},
    {"n", 3, 0, NULL},
    {"stream", 7, 0, NULL},
    {"stream_options", 3, 0, NULL},
    {"logprobs", 3, 0, NULL},
    {"top_logprobs", EP_CHAT, 0, NULL},
    {"echo", EP_TEXT, 0, NULL},
    {"ignore_eos", 3, 0, NULL},
    {"response_format", 3, 0, NULL},
    {"tools", 3, 0, NULL},
    {"tools", EP_RESP, 1, "function tools are not supported on /v1/responses: use /v1/chat/completions"},
    {"tool_choice", 7, 0, NULL},
    {"parallel_tool_calls", 7, 0, NULL},
    {"grammar", 3, 0, NULL},
    {"guided_grammar", 3, 0, NULL},
    {"guided_regex", 3, 0, NULL},
    {"guided_choice", 3, 0, NULL},
    {"guided_json", 3, 0, NULL},
    {"structured_outputs", 3, 0, NULL},
    {"text", EP_RESP, 0, NULL},
    {"user", 7, 0, NULL},
    {"metadata", 7, 0, NULL},
    {"service_tier", 7, 0, NULL},
    {"safety_identifier", 7, 0, NULL},
    {"prompt_cache_key", 7, 0, NULL},
    {"truncation", EP_RESP, 0, NULL},
    {"store", 3, 2, "this server stores no completions"},
    {"store", EP_RESP, 0, NULL}, /* the client's default is true: nothing is kept, nothing to refuse */
    {"modalities", EP_CHAT, 4, "only text output is supported"},
    {"suffix", EP_TEXT, 1, "suffix (fill-in-the-middle) is not supported"},
    {"best_of", EP_TEXT, 3, "best_of is not supported: use n"},
    {"audio", EP_CHAT, 1, "audio output is not supported"},
    {"prediction", EP_CHAT, 1, "predicted outputs are not supported"},
    {"functions", EP_CHAT, 1, "the deprecated functions field is not supported: use tools"},
    {"function_call", EP_CHAT, 1, "the deprecated function_call field is not supported: use tool_choice"},
    {"web_search_options", EP_CHAT, 1, "web search is not supported"},
    {"reasoning_effort", EP_CHAT, 1, "reasoning_effort is not supported"},
    {"reasoning", EP_RESP, 1, "reasoning settings are not supported"},
    {"previous_response_id", EP_RESP, 1, "responses are not stored: send the whole conversation as input"},
    {"conversation", EP_RESP, 1, "responses are not stored: send the whole conversation as input"},
    {"include", EP_RESP, 1, "include is not supported"},
    {"background", EP_RESP, 2, "background responses are not supported"},
    {"top_logprobs", EP_RESP, 1, "log-probabilities are not supported on /v1/responses"},
    {"prompt", EP_RESP, 1, "prompt templates are not supported"},
};

/* Every field of the body is known for this endpoint, and those refused are absent. */
static int check_fields(oai_req *q, const mlstack_json *root) {
    const mlstack_json *v;
    int ep = q->resp ? EP_RESP : q->chat ? EP_CHAT : EP_TEXT;
    char msg[300];
    for (v = mlstack_json_child(root); v; v = mlstack_json_next(v)) {
        const char *k = mlstack_json_key(v);
        mlstack_json_type t = mlstack_json_type_of(v);
        const srv_field *f = NULL;
        size_t i;
        int refuse;
        for (i = 0; i < sizeof SRV_FIELDS / sizeof SRV_FIELDS[0] && !f; i++)
            if ((SRV_FIELDS[i].where & ep) && strcmp(SRV_FIELDS[i].name, k) == 0) f = &SRV_FIELDS[i];
        if (!f) {
            snprintf(msg, sizeof msg, "Unrecognized request argument supplied: %.100s", k);
            return bad(q, 400, k, "unsupported_parameter", msg);
        }
        refuse = f->how == 1   ? t != MLSTACK_JSON_NULL
                 : f->how == 2 ? t != MLSTACK_JSON_NULL && t != MLSTACK_JSON_FALSE
                 : f->how == 3 ? t != MLSTACK_JSON_NULL && !(t == MLSTACK_JSON_NUMBER && mlstack_json_number(v) == 1)
                 : f->how == 4
                     ? t != MLSTACK_JSON_NULL &&
                           !(mlstack_json_length(v) == 1 && mlstack_json_string(mlstack_json_child(v), NULL) &&
                             strcmp(mlstack_json_string(mlstack_json_child(v), NULL), "text") == 0)
                     : 0;
        if (refuse) {
            snprintf(msg, sizeof msg, "'%s': %s", k, f->why);
            return bad(q, 400, k, "unsupported_parameter", msg);
        }
    }
    return 0;
}

/* The request body -> q. Returns 0, or -1 with q's error set. */
static int parse_request(srv *s, oai_req *q, const mlstack_json *root) {
    const mlstack_json *v;
    const char *model;
    double x;
    int64_t i;
    int r;
    if (mlstack_json_type_of(root) != MLSTACK_JSON_OBJECT)
        return bad(q, 400, NULL, "invalid_json", "the body must be a JSON object");
    /* one model is served: any name (or none) selects it, as llama-server does; the answers
       name the served id */
    v = mlstack_json_get(root, "model");
    model = mlstack_json_string(v, NULL);
    if (v && mlstack_json_type_of(v) != MLSTACK_JSON_NULL && !model) return bad_type(q, "model", "a string");
    if (check_fields(q, root) != 0) return -1;
    q->n = 1;
    if ((r = int_field(q, root, "n", 1, SRV_MAX_N, &i)) < 0) return -1;
    if (r) q->n = (int)i;
    if (parse_logit_bias(s, q, root) != 0) return -1;
    if (parse_structured(s, q, root) != 0) return -1; /* before the prompt: tools go to the template */
    if (q->resp) {
        if (responses_prompt(s, q, root) != 0) return -1;
    } else if (q->chat) {
        if (chat_prompt(s, q, mlstack_json_get(root, "messages")) != 0) return -1;
    } else {
        v = mlstack_json_get(root, "prompt");
        if (!v) return bad(q, 400, "prompt", "missing_required_parameter", "you must provide a prompt");
        if (text_prompt(s, q, v) != 0) return -1;
    }
    q->d.prompt = q->prompt;
    if ((r = int_field(q, root, q->resp ? "max_output_tokens" : "max_completion_tokens", 1, 1 << 30, &i)) < 0)
        return -1;
    if (r) q->d.max_tokens = (int)i;
    else if ((r = int_field(q, root, "max_tokens", 1, 1 << 30, &i)) < 0)
        return -1;
    else if (r)
        q->d.max_tokens = (int)i;
    q->d.sampler.temperature = 1.0f; /* OpenAI's default */
    if ((r = num_field(q, root, "temperature", 0, 2, &x)) < 0) return -1;
    if (r) q->d.sampler.temperature = (float)x;
    if ((r = num_field(q, root, "top_p", 0, 1, &x)) < 0) return -1;
    if (r) q->d.sampler.top_p = (float)x;
    if ((r = int_field(q, root, "top_k", 0, 1 << 30, &i)) < 0) return -1;
    if (r) q->d.sampler.top_k = (int)i;
    if ((r = num_field(q, root, "min_p", 0, 1, &x)) < 0) return -1;
    if (r) q->d.sampler.min_p = (float)x;
    if ((r = num_field(q, root, "presence_penalty", -2, 2, &x)) < 0) return -1;
    if (r) q->d.sampler.presence_penalty = (float)x;
    if ((r = num_field(q, root, "frequency_penalty", -2, 2, &x)) < 0) return -1;
    if (r) q->d.sampler.frequency_penalty = (float)x;
    if ((r = num_field(q, root, "repetition_penalty", 0.01, 100, &x)) < 0) return -1;
    if (r) q->d.sampler.repeat_penalty = (float)x;
    v = mlstack_json_get(root, "seed");
    if (v && mlstack_json_type_of(v) != MLSTACK_JSON_NULL) {
        if (!mlstack_json_int(v, &i)) return bad_type(q, "seed", "an integer");
        q->d.sampler.seed = (uint64_t)i;
    } else {
        q->d.sampler.seed = srv_random_seed();
    }
    v = mlstack_json_get(root, "stop");
    if (mlstack_json_type_of(v) == MLSTACK_JSON_STRING) {
        q->stops[q->d.n_stop_strings++] = mlstack_json_string(v, NULL);
    } else if (mlstack_json_type_of(v) == MLSTACK_JSON_ARRAY) {
        const mlstack_json *e;
        if (mlstack_json_length(v) > SRV_MAX_STOPS)
            return bad(q, 400, "stop", "invalid_value", "at most 16 stop strings");
        for (e = mlstack_json_child(v); e; e = mlstack_json_next(e)) {
            const char *t = mlstack_json_string(e, NULL);
            if (!t) return bad_type(q, "stop", "a string or a list of strings");
            if (*t) q->stops[q->d.n_stop_strings++] = t;
        }
    } else if (v && mlstack_json_type_of(v) != MLSTACK_JSON_NULL) {
        return bad_type(q, "stop", "a string or a list of strings");
    }
    q->d.stop_strings = q->stops;
    if (bool_field(q, root, "ignore_eos", &q->d.ignore_eos) < 0) return -1; /* as llama-server and vLLM take it */
    if (bool_field(q, root, "stream", &q->stream) < 0) return -1;
    if (q->stream && q->resp)
        return bad(q, 400, "stream", "unsupported_value",
                   "/v1/responses answers whole responses: stream is not supported");
    v = mlstack_json_get(root, "stream_options");
    if (v && mlstack_json_type_of(v) != MLSTACK_JSON_NULL) {
        if (mlstack_json_type_of(v) != MLSTACK_JSON_OBJECT) return bad_type(q, "stream_options", "an object");
        if (bool_field(q, v, "include_usage", &q->include_usage) < 0) return -1;
    }
    if (q->chat) {
        if (bool_field(q, root, "logprobs", &q->logprobs) < 0) return -1;
        if ((r = int_field(q, root, "top_logprobs", 0, SRV_MAX_TOP_LOGPROBS, &i)) < 0) return -1;
        if (r && !q->logprobs && i > 0)
            return bad(q, 400, "top_logprobs", "invalid_value", "top_logprobs needs logprobs: true");
        if (r) q->top_logprobs = (int)i;
    } else { /* the legacy form: logprobs is the number of top entries */
        if ((r = int_field(q, root, "logprobs", 0, 5, &i)) < 0) return -1;
        if (r) q->logprobs = 1, q->top_logprobs = (int)i;
        if (bool_field(q, root, "echo", &r) < 0) return -1;
        if (mlstack_json_type_of(mlstack_json_get(root, "echo")) == MLSTACK_JSON_TRUE)
            return bad(q, 400, "echo", "unsupported_value", "echo is not supported");
    }
    return 0;
}

/* ==== RESPONSES: OpenAI JSON out ==== */

static void json_token_text(srv *s, cli_buf *b, int32_t id, int with_bytes) {
    char text[256];
    size_t n = 0, i;
    if (mlstack_tokenizer_decode(s->tok, &id, 1, 0, text, sizeof text, &n) != MLSTACK_OK) n = 0;
    cli_buf_json(b, text, n);
    if (with_bytes) {
        cli_buf_puts(b, ",\"bytes\":[");
        for (i = 0; i < n; i++) cli_buf_printf(b, i ? ",%u" : "%u", (unsigned)(unsigned char)text[i]);
        cli_buf_puts(b, "]");
    }
}

/* Chat logprobs {"content": [...]} for toks[from..to). */
static void json_chat_logprobs(srv *s, cli_buf *b, const srv_tok *toks, int from, int to) {
    int i, k;
    cli_buf_puts(b, "{\"content\":[");
    for (i = from; i < to; i++) {
        cli_buf_puts(b, i > from ? ",{\"token\":" : "{\"token\":");
        json_token_text(s, b, toks[i].id, 1);
        cli_buf_printf(b, ",\"logprob\":%.6g,\"top_logprobs\":[", (double)toks[i].logprob);
        for (k = 0; k < toks[i].n_top; k++) {
            cli_buf_puts(b, k ? ",{\"token\":" : "{\"token\":");
            json_token_text(s, b, toks[i].top[k].id, 1);
            cli_buf_printf(b, ",\"logprob\":%.6g}", (double)toks[i].top[k].logprob);
        }
        cli_buf_puts(b, "]}");
    }
    cli_buf_puts(b, "]}");
}

/* Legacy completions logprobs {"tokens", "token_logprobs", "top_logprobs", "text_offset"}. */
static void json_text_logprobs(srv *s, cli_buf *b, const srv_tok *toks, int from, int to, size_t offset0) {
    int i, k;
    size_t off = offset0;
    cli_buf_puts(b, "{\"tokens\":[");
    for (i = from; i < to; i++) {
        if (i > from) cli_buf_puts(b, ",");
        json_token_text(s, b, toks[i].id, 0);
    }
    cli_buf_puts(b, "],\"token_logprobs\":[");
    for (i = from; i < to; i++) cli_buf_printf(b, i > from ? ",%.6g" : "%.6g", (double)toks[i].logprob);
    cli_buf_puts(b, "],\"top_logprobs\":[");
    for (i = from; i < to; i++) {
        cli_buf_puts(b, i > from ? ",{" : "{");
        for (k = 0; k < toks[i].n_top; k++) {
            if (k) cli_buf_puts(b, ",");
            json_token_text(s, b, toks[i].top[k].id, 0);
            cli_buf_printf(b, ":%.6g", (double)toks[i].top[k].logprob);
        }
        cli_buf_puts(b, "}");
    }
    cli_buf_puts(b, "],\"text_offset\":[");
    for (i = from; i < to; i++) {
        char text[256];
        size_t n = 0;
        cli_buf_printf(b, i > from ? ",%zu" : "%zu", off);
        if (mlstack_tokenizer_decode(s->tok, &toks[i].id, 1, 0, text, sizeof text, &n) == MLSTACK_OK) off += n;
    }
    cli_buf_puts(b, "]}");
}

static const char *finish_reason(mlstack_finish_reason f) {
    return f == MLSTACK_FINISH_LENGTH || f == MLSTACK_FINISH_CONTEXT ? "length" : "stop";
}

static void json_usage(cli_buf *b, const mlstack_request_status *st) {
    cli_buf_printf(b,
                   "\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d,"
                   "\"prompt_tokens_details\":{\"cached_tokens\":%d}}",
                   st->n_prompt, st->n_generated, st->n_prompt + st->n_generated, st->n_cached);
}

static void json_head(srv *s, cli_buf *b, int chat, int chunk, uint64_t id, long created) {
    cli_buf_printf(b, "{\"id\":\"%s-%llu\",\"object\":\"%s\",\"created\":%ld,\"model\":", chat ? "chatcmpl" : "cmpl",
                   (unsigned long long)id,
                   chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion", created);
    cli_buf_json(b, s->model_id, strlen(s->model_id));
    cli_buf_puts(b, ",\"system_fingerprint\":\"mlstack-" MLSTACK_VERSION_STRING "\",");
}

/* One SSE event as one HTTP chunk. */
static int send_event(conn *c, const char *data, size_t n) {
    cli_buf b;
    int r;
    memset(&b, 0, sizeof b);
    cli_buf_printf(&b, "%zx\r\ndata: ", n + 8);
    cli_buf_put(&b, data, n);
    cli_buf_puts(&b, "\n\n\r\n");
    r = b.oom ? -1 : send_all(c, b.p, b.n);
    cli_buf_free(&b);
    return r;
}

/* A streamed piece: text[from_text..to_text), tokens [from..to). */
static int send_delta(conn *c, srv *s, const oai_req *q, const srv_req *req, long created, const char *text, size_t n,
                      const srv_tok *toks, int from, int to, size_t text_offset, const char *finish) {
    cli_buf b;
    int r;
    memset(&b, 0, sizeof b);
    json_head(s, &b, q->chat, 1, req->cid, created);
    cli_buf_printf(&b, "\"choices\":[{\"index\":%d,", req->index);
    if (q->chat) {
        cli_buf_puts(&b, "\"delta\":{");
        if (text && n == 0 && to == from) cli_buf_puts(&b, "\"role\":\"assistant\",");
        if (text) {
            cli_buf_puts(&b, "\"content\":");
            cli_buf_json(&b, text, n);
        }
        cli_buf_puts(&b, "},\"logprobs\":");
        if (q->logprobs && to > from) json_chat_logprobs(s, &b, toks, from, to);
        else
            cli_buf_puts(&b, "null");
    } else {
        cli_buf_puts(&b, "\"text\":");
        cli_buf_json(&b, text ? text : "", text ? n : 0);
        cli_buf_puts(&b, ",\"logprobs\":");
        if (q->logprobs && to > from) json_text_logprobs(s, &b, toks, from, to, text_offset);
        else
            cli_buf_puts(&b, "null");
    }
    cli_buf_puts(&b, ",\"finish_reason\":");
    if (finish) cli_buf_printf(&b, "\"%s\"", finish);
    else
        cli_buf_puts(&b, "null");
    cli_buf_puts(&b, "}]}");
    r = b.oom ? -1 : send_event(c, b.p, b.n);
    cli_buf_free(&b);
    return r;
}

/* ==== COMPLETIONS ==== */

static void req_free(srv_req *r) {
    pthread_cond_destroy(&r->cv);
    cli_buf_free(&r->text);
    free(r->toks);
    free(r);
}

/* Length of the valid UTF-8 sequence at p (n bytes left), or 0: no overlong forms, surrogates or
   code points past U+10FFFF. */
static int utf8_len(const unsigned char *p, size_t n) {
    int l = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : 2, k;
    unsigned cp;
    if (p[0] < 0xC2 || p[0] > 0xF4 || (size_t)l > n) return 0;
    cp = p[0] & (0x3Fu >> (l - 1));
    for (k = 1; k < l; k++) {
        if ((p[k] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[k] & 0x3Fu);
    }
    if ((l == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (l == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return l;
}

/* src as printable text for the access log: control bytes, DEL, backslash, non-ASCII bytes
   that are not valid UTF-8, and any byte that would overflow out, written as \xNN, so a request
   line cannot move the terminal's cursor, fake a log line or hide in invalid UTF-8. */
static const char *log_escape(char *out, size_t cap, const char *src) {
    const unsigned char *p = (const unsigned char *)src;
    size_t o = 0, n = strlen(src), i = 0;
    while (i < n && o + 5 < cap) {
        int l = p[i] >= 0x80 ? utf8_len(p + i, n - i) : 1;
        if (p[i] >= 0x80 && l > 1 && o + (size_t)l < cap) {
            memcpy(out + o, p + i, (size_t)l);
            o += (size_t)l, i += (size_t)l;
        } else if (p[i] < 0x20 || p[i] >= 0x7f || p[i] == '\\') {
            snprintf(out + o, cap - o, "\\x%02x", p[i]);
            o += 4, i++;
        } else {
            out[o++] = (char)p[i++];
        }
    }
    if (i < n && o + 3 < cap) memcpy(out + o, "...", 3), o += 3;
    out[o] = 0;
    return out;
}

/* The access log's time stamp: UTC, ISO 8601 with milliseconds. */
static void log_time(char *out, size_t cap) {
    struct timeval tv;
    struct tm tm;
    time_t t;
    size_t k;
    gettimeofday(&tv, NULL);
    t = (time_t)tv.tv_sec;
    gmtime_r(&t, &tm);
    k = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    if (k + 6 <= cap) {
        unsigned ms = (unsigned)(tv.tv_usec / 1000) % 1000u;
        out[k] = '.', out[k + 1] = (char)('0' + ms / 100), out[k + 2] = (char)('0' + ms / 10 % 10);
        out[k + 3] = (char)('0' + ms % 10), out[k + 4] = 'Z', out[k + 5] = 0;
    }
}

/* One access-log line per request on stderr: time (UTC), client address, method, path, status,
   duration, and for completions the tokens. */
static void log_request(conn *c, const http_req *hr, int code, double t0, const mlstack_request_status *st) {
    char method[4 * sizeof hr->method + 8], path[4 * sizeof hr->path + 8], when[40];
    if (c->s->o.quiet) return;
    log_escape(method, sizeof method, hr->method);
    log_escape(path, sizeof path, hr->path);
    log_time(when, sizeof when);
    if (st)
        fprintf(stderr, "%s %s %s %s %d %.0f ms | prompt %d tokens (%d cached) | %d generated\n", when, c->client,
                method, path, code, (now_s() - t0) * 1e3, st->n_prompt, st->n_cached, st->n_generated);
    else
        fprintf(stderr, "%s %s %s %s %d %.0f ms\n", when, c->client, method, path, code, (now_s() - t0) * 1e3);
}

static void q_free(srv *s, oai_req *q) {
    free(q->prompt);
    q->prompt = NULL;
    free(q->bias_ids);
    free(q->bias_values);
    q->bias_ids = NULL, q->bias_values = NULL;
    cli_buf_free(&q->gtext);
    cli_buf_free(&q->tools_json);
    gram_put(s, q->gram);
    q->gram = NULL;
}

/* Did r end at max_tokens or the context (so that its text may stop inside a tool call tag)? */
static int req_cut(const srv_req *r) {
    return r->st.finish == MLSTACK_FINISH_LENGTH || r->st.finish == MLSTACK_FINISH_CONTEXT;
}

/* With tools, how much of the text may be streamed as content now: not a <tool_call> block or
   what may start one (a tail that is a prefix of the tag), nor the whitespace before it, which
   the non-streamed answer drops too. final: the generation is over. */
static size_t tool_text_ready(const char *t, size_t n, int final) {
    static const char tag[] = "<tool_call>";
    size_t i, k, end = n;
    for (i = 0; i < n; i++) {
        for (k = 0; i + k < n && k < sizeof tag - 1 && t[i + k] == tag[k]; k++) {}
        if (k == sizeof tag - 1 || (i + k == n && !final)) {
            end = i;
            break;
        }
    }
    if (end == n && final) return n; /* no block: the whole text is content */
    while (end > 0 && (t[end - 1] == ' ' || t[end - 1] == '\n' || t[end - 1] == '\t' || t[end - 1] == '\r')) end--;
    return end;
}

/* The end of the text that a stream may send now (under mu). */
static size_t ready_text(const oai_req *q, const srv_req *r, int done) {
    return q->tool_mode ? tool_text_ready(r->text.p, r->text.n, done && !req_cut(r)) : r->text.n;
}

/* "tool_calls":[...] of the calls, each {"id", "type", "function": {"name", "arguments"}}, with an
   "index" per call when streamed. */
static void json_tool_calls(cli_buf *b, uint64_t id, const mlstack_tool_call *calls, int n, int streamed) {
    int k;
    cli_buf_puts(b, "\"tool_calls\":[");
    for (k = 0; k < n; k++) {
        cli_buf_puts(b, k ? ",{" : "{");
        if (streamed) cli_buf_printf(b, "\"index\":%d,", k);
        cli_buf_printf(
            b, "\"id\":\"call_%llu_%d\",\"type\":\"function\",\"function\":{\"name\":", (unsigned long long)id, k);
        cli_buf_json(b, calls[k].name, strlen(calls[k].name));
        cli_buf_puts(b, ",\"arguments\":");
        cli_buf_json(b, calls[k].arguments, strlen(calls[k].arguments));
        cli_buf_puts(b, "}}");
    }
    cli_buf_puts(b, "]");
}

/* Waits for request r to finish; with q->stream, streams its text (and log-probabilities) as it
   comes. Cancels r when the client goes away or the server stops. *sent_text: the bytes sent. */
static void completion_wait(conn *c, const oai_req *q, srv_req *r, int chat, long created, size_t *sent_text) {
    srv *s = c->s;
    int sent_toks = 0, cancelled = 0;
    for (;;) {
        char *piece = NULL;
        size_t piece_n = 0, off = *sent_text;
        srv_tok *toks = NULL;
        int from = sent_toks, to, done;
        pthread_mutex_lock(&s->mu);
        if (!r->done && (!q->stream || (ready_text(q, r, 0) <= *sent_text && r->n_toks == sent_toks)))
            cond_wait_ms(&r->cv, &s->mu, 200);
        done = r->done;
        to = r->n_toks;
        if (q->stream && !c->closed && (ready_text(q, r, done) > *sent_text || to > sent_toks)) {
            piece_n = ready_text(q, r, done) > *sent_text ? ready_text(q, r, done) - *sent_text : 0;
            piece = (char *)malloc(piece_n + 1);
            toks = q->logprobs && to > from ? (srv_tok *)malloc(sizeof *toks * (size_t)(to - from)) : NULL;
            if (piece && piece_n) memcpy(piece, r->text.p + *sent_text, piece_n);
            if (toks) memcpy(toks, r->toks + from, sizeof *toks * (size_t)(to - from));
            *sent_text += piece_n;
            sent_toks = to;
        }
        pthread_mutex_unlock(&s->mu);
        if (piece) {
            int n_new = toks ? to - from : 0;
            if (piece_n || n_new) /* a token whose text is held back (UTF-8, stop string) may come without text */
                send_delta(c, s, q, r, created, piece_n || !chat ? piece : NULL, piece_n, toks, 0, n_new, off, NULL);
        }
        free(piece);
        free(toks);
        if (done) break;
        if (!cancelled && (srv_stop || peer_gone(c))) {
            mlstack_engine_cancel(s->e, r->id);
            cancelled = 1;
        }
    }
}

/* The tool calls in r's text (tool mode), each distinct call once. A call cut short
   (max_tokens): the complete ones before it count. *content_len: the text before the first
   <tool_call> tag (trailing whitespace dropped), so that no markup, complete or cut, is ever
   content. */
static void completion_tool_calls(const srv_req *r, mlstack_tool_call **calls, int *n_calls, size_t *content_len) {
    mlstack_error err;
    size_t end = r->text.n;
    int i, j, k;
    *content_len = tool_text_ready(r->text.p, r->text.n, !req_cut(r)); /* cut: a tail "<tool_c" is no content */
    if (mlstack_tool_calls_parse(r->text.p, r->text.n, calls, n_calls, NULL, &err) != MLSTACK_OK) {
        *calls = NULL;
        *n_calls = 0;
        while (end >= 12 && memcmp(r->text.p + end - 12, "</tool_call>", 12) != 0) end--;
        if (end < 12 || mlstack_tool_calls_parse(r->text.p, end, calls, n_calls, NULL, &err) != MLSTACK_OK)
            *calls = NULL, *n_calls = 0;
    }
    for (i = k = 0; i < *n_calls; i++) { /* a call repeated word for word is the same call */
        mlstack_tool_call *c = &(*calls)[i];
        for (j = 0; j < k; j++)
            if (!strcmp((*calls)[j].name, c->name) && !strcmp((*calls)[j].arguments, c->arguments)) break;
        if (j < k) {
            free(c->name), free(c->arguments);
            c->name = c->arguments = NULL;
            continue;
        }
        (*calls)[k++] = *c;
    }
    for (i = k; i < *n_calls; i++) (*calls)[i].name = (*calls)[i].arguments = NULL;
    *n_calls = k;
}

static const char *choice_finish(const srv_req *r, int n_calls) {
    return n_calls && !strcmp(finish_reason(r->st.finish), "stop") ? "tool_calls" : finish_reason(r->st.finish);
}

/* The end of a streamed choice: the held-back content and tool calls, then its finish reason. */
static void completion_choice_end(conn *c, const oai_req *q, const srv_req *r, long created, size_t sent_text) {
    srv *s = c->s;
    mlstack_tool_call *calls = NULL;
    int n_calls = 0;
    size_t content_len = r->text.n;
    if (q->tool_mode && r->text.n) completion_tool_calls(r, &calls, &n_calls, &content_len);
    if (!c->closed && q->tool_mode) { /* the held-back rest: content, then the calls */
        if (content_len > sent_text)
            send_delta(c, s, q, r, created, r->text.p + sent_text, content_len - sent_text, NULL, 0, 0, 0, NULL);
        if (n_calls) {
            cli_buf b;
            memset(&b, 0, sizeof b);
            json_head(s, &b, 1, 1, r->cid, created);
            cli_buf_printf(&b, "\"choices\":[{\"index\":%d,\"delta\":{", r->index);
            json_tool_calls(&b, r->id, calls, n_calls, 1);
            cli_buf_puts(&b, "},\"logprobs\":null,\"finish_reason\":null}]}");
            if (!b.oom) send_event(c, b.p, b.n);
            cli_buf_free(&b);
        }
    }
    if (!c->closed) send_delta(c, s, q, r, created, NULL, 0, NULL, 0, 0, 0, choice_finish(r, n_calls));
    mlstack_tool_calls_free(calls, n_calls);
}

/* The end of a stream: the usage when asked (the prompt once, the tokens of every choice), then
   [DONE] and the closing chunk. */
static void completion_stream_end(conn *c, const oai_req *q, srv_req *const *rs, long created) {
    srv *s = c->s;
    mlstack_request_status u = rs[0]->st;
    int i;
    if (c->closed) return;
    for (i = 1; i < q->n; i++) u.n_generated += rs[i]->st.n_generated;
    if (q->include_usage) {
        cli_buf b;
        memset(&b, 0, sizeof b);
        json_head(s, &b, q->chat, 1, rs[0]->cid, created);
        cli_buf_puts(&b, "\"choices\":[],");
        json_usage(&b, &u);
        cli_buf_puts(&b, "}");
        if (!b.oom) send_event(c, b.p, b.n);
        cli_buf_free(&b);
    }
    send_event(c, "[DONE]", 6);
    send_all(c, "0\r\n\r\n", 5);
}

/* One choice of a whole answer: its text or message (with tool calls), log probabilities and
   finish reason. */
static void json_choice(srv *s, cli_buf *b, const oai_req *q, const srv_req *r, int index) {
    mlstack_tool_call *calls = NULL;
    int n_calls = 0;
    size_t content_len = r->text.n;
    if (q->tool_mode && r->text.n) completion_tool_calls(r, &calls, &n_calls, &content_len);
    cli_buf_printf(b, "%s{\"index\":%d,", index ? "," : "", index);
    if (q->chat) {
        cli_buf_puts(b, "\"message\":{\"role\":\"assistant\",\"content\":");
        if (n_calls && !content_len) cli_buf_puts(b, "null");
        else
            cli_buf_json(b, r->text.p ? r->text.p : "", content_len);
        if (n_calls) {
            cli_buf_puts(b, ",");
            json_tool_calls(b, r->id, calls, n_calls, 0);
        }
        cli_buf_puts(b, "},\"logprobs\":");
        if (q->logprobs) json_chat_logprobs(s, b, r->toks, 0, r->n_toks);
        else
            cli_buf_puts(b, "null");
    } else {
        cli_buf_puts(b, "\"text\":");
        cli_buf_json(b, r->text.p ? r->text.p : "", r->text.n);
        cli_buf_puts(b, ",\"logprobs\":");
        if (q->logprobs) json_text_logprobs(s, b, r->toks, 0, r->n_toks, 0);
        else
            cli_buf_puts(b, "null");
    }
    cli_buf_printf(b, ",\"finish_reason\":\"%s\"}", choice_finish(r, n_calls));
    mlstack_tool_calls_free(calls, n_calls);
}

/* /v1/responses: the answer as a Response object with one output message. */
static void json_response_object(srv *s, cli_buf *b, const srv_req *r, long created) {
    const mlstack_request_status *st = &r->st;
    int cut = st->finish == MLSTACK_FINISH_LENGTH || st->finish == MLSTACK_FINISH_CONTEXT;
    cli_buf_printf(b, "{\"id\":\"resp_%llu\",\"object\":\"response\",\"created_at\":%ld,\"status\":\"%s\",",
                   (unsigned long long)r->id, created, cut ? "incomplete" : "completed");
    cli_buf_puts(b,
                 cut ? "\"incomplete_details\":{\"reason\":\"max_output_tokens\"}," : "\"incomplete_details\":null,");
    cli_buf_puts(b, "\"error\":null,\"model\":");
    cli_buf_json(b, s->model_id, strlen(s->model_id));
    cli_buf_printf(b,
                   ",\"output\":[{\"type\":\"message\",\"id\":\"msg_%llu\",\"status\":\"%s\",\"role\":\"assistant\","
                   "\"content\":[{\"type\":\"output_text\",\"text\":",
                   (unsigned long long)r->id, cut ? "incomplete" : "completed");
    cli_buf_json(b, r->text.p ? r->text.p : "", r->text.n);
    cli_buf_printf(
        b,
        ",\"annotations\":[]}]}],\"parallel_tool_calls\":true,\"tool_choice\":\"auto\",\"tools\":[],"
        "\"usage\":{\"input_tokens\":%d,\"input_tokens_details\":{\"cached_tokens\":%d},\"output_tokens\":%d,"
        "\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":%d}}\n",
        st->n_prompt, st->n_cached, st->n_generated, st->n_prompt + st->n_generated);
}

/* The whole answer of a request that was not streamed: its n choices (rs), the usage (the
   prompt counted once, the completions of every choice). */
static void completion_send_body(conn *c, const oai_req *q, srv_req *const *rs, long created, int keep) {
    srv *s = c->s;
    mlstack_request_status u = rs[0]->st;
    cli_buf b;
    int i;
    memset(&b, 0, sizeof b);
    for (i = 1; i < q->n; i++) u.n_generated += rs[i]->st.n_generated;
    if (q->resp) {
        json_response_object(s, &b, rs[0], created);
    } else {
        json_head(s, &b, q->chat, 0, rs[0]->id, created);
        cli_buf_puts(&b, "\"choices\":[");
        for (i = 0; i < q->n; i++) json_choice(s, &b, q, rs[i], i);
        cli_buf_puts(&b, "],");
        json_usage(&b, &u);
        cli_buf_puts(&b, "}\n");
    }
    if (b.oom) send_error(c, 500, "server_error", NULL, NULL, "out of memory", 0);
    else
        send_response(c, 200, "application/json", b.p, b.n, keep, NULL);
    cli_buf_free(&b);
}

/* A new request state for q (callbacks set, not yet submitted); NULL: out of memory. */
static srv_req *req_new(srv *s, oai_req *q) {
    srv_req *r = (srv_req *)calloc(1, sizeof *r);
    if (!r || pthread_cond_init(&r->cv, NULL) != 0) {
        free(r);
        return NULL;
    }
    r->s = s;
    r->want_logprobs = q->logprobs;
    r->top_logprobs = q->top_logprobs;
    r->tool_mode = q->tool_mode;
    return r;
}

/* Submits r with q's descriptor and links it into the live list. */
static mlstack_result req_submit(srv *s, oai_req *q, srv_req *r, mlstack_error *err) {
    mlstack_result res;
    q->d.on_token = srv_on_token;
    q->d.on_logits = q->logprobs ? srv_on_logits : NULL;
    q->d.user = r;
    pthread_mutex_lock(&s->mu);
    r->t_submit = now_s();
    if (srv_stop) { /* a shutdown began while the request was prepared (a grammar compile, say) */
        res = MLSTACK_ERR_CANCELLED;
        snprintf(err->message, sizeof err->message, "the server is shutting down");
    } else {
        res = mlstack_engine_submit(s->e, &q->d, &r->id, err);
    }
    if (res == MLSTACK_OK) {
        r->next = s->live;
        s->live = r;
        s->completions[q->chat ? 0 : 1]++;
        pthread_cond_signal(&s->wake);
    }
    pthread_mutex_unlock(&s->mu);
    return res;
}

/* Submits q's n choices into rs. The first goes alone until its prompt is computed (its first
   token, or its end): its pages are then in the prefix cache, and the other choices attach
   them instead of computing the prompt again. Each choice has its own seed (the request's +
   its index). On failure, the choices already submitted are cancelled and waited for. */
static mlstack_result submit_choices(conn *c, oai_req *q, srv_req **rs, mlstack_error *err) {
    srv *s = c->s;
    uint64_t seed0 = q->d.sampler.seed;
    mlstack_result res = MLSTACK_OK;
    int i, j;
    for (i = 0; i < q->n && res == MLSTACK_OK; i++) {
        if (!(rs[i] = req_new(s, q))) {
            snprintf(err->message, sizeof err->message, "out of memory");
            res = MLSTACK_ERR_NO_MEMORY;
            break;
        }
        q->d.sampler.seed = seed0 + (uint64_t)i;
        rs[i]->index = i;
        if ((res = req_submit(s, q, rs[i], err)) != MLSTACK_OK) break;
        rs[i]->cid = rs[0]->id;
        if (i == 0 && q->n > 1) {
            pthread_mutex_lock(&s->mu);
            while (!rs[0]->got_first && !rs[0]->done && !srv_stop && !c->closed) {
                cond_wait_ms(&rs[0]->cv, &s->mu, 200);
                if (!rs[0]->got_first && !rs[0]->done) {
                    pthread_mutex_unlock(&s->mu);
                    peer_gone(c);
                    pthread_mutex_lock(&s->mu);
                }
            }
            pthread_mutex_unlock(&s->mu);
        }
    }
    if (res != MLSTACK_OK) {
        size_t ignored = 0;
        oai_req quiet = *q; /* waited for, not streamed: nothing has been sent yet */
        quiet.stream = 0;
        for (j = 0; j < i; j++) mlstack_engine_cancel(s->e, rs[j]->id);
        for (j = 0; j < i; j++) completion_wait(c, &quiet, rs[j], q->chat, 0, &ignored);
        for (j = 0; j <= i && j < q->n; j++)
            if (rs[j]) req_free(rs[j]), rs[j] = NULL;
    }
    return res;
}

/* A request that failed in the engine (or was cancelled by a shutdown): an error object, or in a
   stream already begun an error event and [DONE]. */
static void completion_failed(conn *c, const http_req *hr, const oai_req *q, const srv_req *r, int header_sent,
                              int *keep, double t0) {
    const char *msg = srv_stop           ? "the server is shutting down"
                      : r->st.message[0] ? r->st.message
                                         : "the request failed";
    /* a grammar over a budget (max_stacks at its first token, say) is the schema's fault */
    int code =
        srv_stop ? 503
        : !header_sent && r->st.finish == MLSTACK_FINISH_ERROR && r->st.result == MLSTACK_ERR_LIMIT && q->gkind >= 0
            ? 400
            : 500;
    if (srv_stop) *keep = 0;
    if (header_sent) {
        cli_buf b;
        memset(&b, 0, sizeof b);
        cli_buf_puts(&b, "{\"error\":{\"message\":");
        cli_buf_json(&b, msg, strlen(msg));
        cli_buf_puts(&b, ",\"type\":\"server_error\",\"param\":null,\"code\":null}}");
        if (!b.oom) send_event(c, b.p, b.n);
        cli_buf_free(&b);
        send_event(c, "[DONE]", 6);
        send_all(c, "0\r\n\r\n", 5);
    } else if (code == 400) {
        send_error(c, 400, "invalid_request_error", q->gparam, "invalid_schema", msg, *keep);
    } else {
        send_error(c, code, "server_error", NULL, NULL, msg, *keep);
    }
    log_request(c, hr, code, t0, &r->st);
}

/* The body's JSON parsed under the --body-mem budget into *doc; on failure the error is sent.
   Returns 0, or the status sent. */
static int parse_body(conn *c, const http_req *hr, int keep, double t0, mlstack_json_doc **doc) {
    srv *s = c->s;
    mlstack_json_options jo;
    mlstack_error err;
    mlstack_result res;
    int rc;
    /* the parse's memory is held against --body-mem until the document is freed (conn_consume) */
    memset(&jo, 0, sizeof jo);
    jo.max_nodes = s->o.max_json_nodes;
    jo.max_memory = parse_mem(s, hr->body, hr->body_len);
    if ((rc = conn_hold(c, c->held + jo.max_memory)) != 0) {
        const char *msg = rc == 413 ? "the request body would take more memory to parse than the server allows"
                                    : "the server is busy with other request bodies: retry";
        send_error(c, rc, rc == 413 ? "invalid_request_error" : "server_error", NULL,
                   rc == 413 ? "request_too_large" : NULL, msg, keep);
        log_request(c, hr, rc, t0, NULL);
        return rc;
    }
    if ((res = mlstack_json_parse_opts(hr->body, hr->body_len, "request body", &jo, doc, &err)) != MLSTACK_OK) {
        int code = res == MLSTACK_ERR_LIMIT ? 413 : res == MLSTACK_ERR_NO_MEMORY ? 500 : 400;
        send_error(c, code, code == 500 ? "server_error" : "invalid_request_error", NULL,
                   code == 413   ? "request_too_large"
                   : code == 400 ? "invalid_json"
                                 : NULL,
                   err.message, keep);
        log_request(c, hr, code, t0, NULL);
        return code;
    }
    return 0;
}

/* Returns 0 to keep the connection, -1 to close it. mode: EP_CHAT, EP_TEXT or EP_RESP. */
static int handle_completion(conn *c, const http_req *hr, int mode, double t0) {
    srv *s = c->s;
    oai_req q;
    mlstack_json_doc *doc = NULL;
    mlstack_error err;
    srv_req *rs[SRV_MAX_N];
    long created = (long)time(NULL);
    int keep = hr->keep_alive, rc = 0, header_sent = 0, i, failed = -1;
    mlstack_result res;
    memset(&q, 0, sizeof q);
    memset(rs, 0, sizeof rs);
    q.chat = mode != EP_TEXT;
    q.resp = mode == EP_RESP;
    q.c = c;
    q.gkind = -1;
    if (c->peer_eof) keep = 0;
    if (parse_body(c, hr, keep, t0, &doc) != 0) return c->closed || !keep ? -1 : 0;
    if (parse_request(s, &q, mlstack_json_root(doc)) != 0) {
        rc = send_error(c, q.err_status, q.err_status >= 500 ? "server_error" : "invalid_request_error", q.err_param,
                        q.err_code, q.err, keep);
        log_request(c, hr, q.err_status, t0, NULL);
        q_free(s, &q);
        mlstack_json_free(doc);
        return rc || !keep ? -1 : 0; /* "Connection: close" is honoured after an error too */
    }
    res = submit_choices(c, &q, rs, &err);
    free(q.prompt); /* copied at submit; stop strings too (the grammar is kept until the end) */
    q.prompt = NULL;
    if (res != MLSTACK_OK) {
        int code = res == MLSTACK_ERR_CANCELLED ? 503 : res == MLSTACK_ERR_NO_MEMORY ? 500 : 400;
        if (code == 503) keep = 0;
        rc = send_error(c, code, code == 400 ? "invalid_request_error" : "server_error", NULL,
                        res == MLSTACK_ERR_LIMIT ? "context_length_exceeded" : NULL, err.message, keep);
        log_request(c, hr, code, t0, NULL);
        q_free(s, &q);
        mlstack_json_free(doc);
        return rc || !keep ? -1 : 0;
    }
    mlstack_json_free(doc); /* nothing below reads the body: its buffer and budget go back now */
    conn_consume(c);
    if (q.stream) {
        static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                                   "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n";
        count_code(s, 200);
        header_sent = 1;
        send_all(c, head, sizeof head - 1);
    }
    /* wait for the engine: stream what arrives (choice by choice, each delta with its index;
       all of them run at once); cancel when the client goes away */
    for (i = 0; i < q.n; i++) {
        size_t sent_text = 0;
        if (q.stream && q.chat && failed < 0 && !c->closed) /* the role comes first, as OpenAI sends it */
            send_delta(c, s, &q, rs[i], created, "", 0, NULL, 0, 0, 0, NULL);
        completion_wait(c, &q, rs[i], q.chat, created, &sent_text);
        if (failed < 0 &&
            (rs[i]->st.finish == MLSTACK_FINISH_ERROR || (rs[i]->st.finish == MLSTACK_FINISH_CANCELLED && !c->closed)))
            failed = i;
        if (q.stream && failed < 0) completion_choice_end(c, &q, rs[i], created, sent_text);
    }
    if (failed >= 0) {
        completion_failed(c, hr, &q, rs[failed], header_sent, &keep, t0);
    } else if (q.stream) {
        completion_stream_end(c, &q, rs, created);
        log_request(c, hr, c->closed ? 499 : 200, t0, &rs[0]->st);
    } else if (!c->closed) {
        completion_send_body(c, &q, rs, created, keep);
        log_request(c, hr, 200, t0, &rs[0]->st);
    } else {
        log_request(c, hr, 499, t0, &rs[0]->st);
    }
    for (i = 0; i < q.n; i++) req_free(rs[i]);
    q_free(s, &q); /* the requests are released: their samplers no longer use the grammar */
    return c->closed || !keep ? -1 : 0;
}

/* ==== SMALL ENDPOINTS ==== */

/* The chat page (cli/web/chat.html) is assembled into the binary as it is: the assembler's
   .incbin reads the file (paths are relative to the build's directory, the repository's root),
   so the page stays one plain HTML file with no generated C source. */
#if defined(__APPLE__)
#define SRV_ASM_SYM(x) "_" x
#define SRV_ASM_PUSH ".const_data\n"
#define SRV_ASM_POP ".text\n"
#else
#define SRV_ASM_SYM(x) x
#define SRV_ASM_PUSH ".pushsection .rodata\n"
#define SRV_ASM_POP ".popsection\n"
#endif
__asm__(SRV_ASM_PUSH ".balign 16\n" SRV_ASM_SYM("srv_chat_html") ":\n"
                                                                 ".incbin \"cli/web/chat.html\"\n" SRV_ASM_SYM(
                                                                     "srv_chat_html_end") ":\n"
                                                                                          ".byte 0\n" SRV_ASM_POP);
extern const char srv_chat_html[], srv_chat_html_end[];
static size_t srv_chat_html_len(void) { return (size_t)(srv_chat_html_end - srv_chat_html); }

static void metric(cli_buf *b, const char *name, const char *type, const char *help, double v) {
    cli_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", name, help, name, type, name, v);
}

static void metric_hist(cli_buf *b, const char *name, const char *help, const srv_hist *h) {
    uint64_t cum = 0;
    int i;
    cli_buf_printf(b, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    for (i = 0; i < SRV_N_BUCKETS; i++) {
        cum += h->counts[i];
        cli_buf_printf(b, "%s_bucket{le=\"%g\"} %llu\n", name, SRV_BUCKETS[i], (unsigned long long)cum);
    }
    cli_buf_printf(b, "%s_bucket{le=\"+Inf\"} %llu\n%s_sum %.9g\n%s_count %llu\n", name, (unsigned long long)h->n, name,
                   h->sum, name, (unsigned long long)h->n);
}

static int handle_metrics(conn *c, int keep) {
    srv *s = c->s;
    mlstack_cache_stats cs;
    cli_buf b;
    int i, r, first = 1;
    memset(&b, 0, sizeof b);
    mlstack_engine_cache_stats(s->e, &cs);
    pthread_mutex_lock(&s->mu);
    cli_buf_puts(&b, "# HELP mlstack_http_requests_total HTTP responses sent, by status code.\n"
                     "# TYPE mlstack_http_requests_total counter\n");
    for (i = 100; i < 600; i++)
        if (s->http_codes[i]) {
            cli_buf_printf(&b, "mlstack_http_requests_total{code=\"%d\"} %llu\n", i,
                           (unsigned long long)s->http_codes[i]);
            first = 0;
        }
    if (first) cli_buf_puts(&b, "mlstack_http_requests_total{code=\"200\"} 0\n");
    cli_buf_printf(&b,
                   "# HELP mlstack_completion_requests_total Completion requests submitted to the engine.\n"
                   "# TYPE mlstack_completion_requests_total counter\n"
                   "mlstack_completion_requests_total{endpoint=\"chat\"} %llu\n"
                   "mlstack_completion_requests_total{endpoint=\"completions\"} %llu\n",
                   (unsigned long long)s->completions[0], (unsigned long long)s->completions[1]);
    metric(&b, "mlstack_requests_cancelled_total", "counter", "Requests cancelled (client gone or shutdown).",
           (double)s->cancelled);
    metric(&b, "mlstack_requests_failed_total", "counter", "Requests finished with an engine error.",
           (double)s->failed);
    metric(&b, "mlstack_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
           (double)s->prompt_tokens);
    metric(&b, "mlstack_prompt_tokens_cached_total", "counter", "Prompt tokens served from the prefix cache.",
           (double)s->cached_tokens);
    metric(&b, "mlstack_completion_tokens_total", "counter", "Tokens generated for finished requests.",
           (double)s->completion_tokens);
    metric(&b, "mlstack_connections_open", "gauge", "Open client connections.", (double)s->n_conns);
    metric(&b, "mlstack_connections_total", "counter", "Connections accepted.", (double)s->conns_total);
    metric(&b, "mlstack_connections_rejected_total", "counter",
           "Connections refused with 503 (over --max-conns-per-peer, or every slot busy).", (double)s->conns_rejected);
    metric(&b, "mlstack_connections_peer_rejected_total", "counter",
           "Connections refused because their address held --max-conns-per-peer.", (double)s->peer_rejected);
    metric(&b, "mlstack_connections_evicted_total", "counter",
           "Connections waiting longest for a request head, closed to admit new ones.", (double)s->conns_evicted);
    metric(&b, "mlstack_connections_waiting", "gauge", "Open connections without a complete request head.",
           (double)s->n_waiting);
    metric(&b, "mlstack_body_memory_bytes", "gauge",
           "Memory held for request bodies being received or parsed (against --body-mem).", (double)s->body_mem);
    metric(&b, "mlstack_body_memory_rejected_total", "counter", "Requests refused for want of --body-mem (413/503).",
           (double)s->body_rejected);
    metric_hist(&b, "mlstack_time_to_first_token_seconds", "Time from submit to the first generated token.", &s->ttft);
    metric_hist(&b, "mlstack_inter_token_seconds", "Time between consecutive tokens of a request.", &s->itl);
    metric_hist(&b, "mlstack_request_duration_seconds", "Time from submit to the end of a request.", &s->e2e);
    pthread_mutex_unlock(&s->mu);
    metric(&b, "mlstack_requests_queued", "gauge", "Requests waiting for admission.", (double)cs.n_queued);
    metric(&b, "mlstack_requests_running", "gauge", "Requests prefilling or decoding.", (double)cs.n_running);
    metric(&b, "mlstack_kv_pages_total", "gauge", "KV pages in the pool.", (double)cs.n_pages);
    metric(&b, "mlstack_kv_pages_used", "gauge", "KV pages referenced by a sequence or the prefix cache.",
           (double)cs.pages_used);
    metric(&b, "mlstack_kv_pages_cached", "gauge", "KV pages owned by the prefix cache.", (double)cs.pages_cached);
    metric(&b, "mlstack_kv_pages_pinned", "gauge", "Cached KV pages attached to running requests.",
           (double)cs.pages_pinned);
    metric(&b, "mlstack_kv_pages_evicted_total", "counter", "KV pages evicted from the prefix cache.",
           (double)cs.pages_evicted);
    metric(&b, "mlstack_cache_hit_tokens_total", "counter", "Prompt tokens whose KV came from the cache.",
           (double)cs.hit_tokens);
    metric(&b, "mlstack_computed_tokens_total", "counter", "Prompt tokens run through the model.",
           (double)cs.computed_tokens);
    metric(&b, "mlstack_generated_tokens_total", "counter", "Tokens sampled.", (double)cs.generated_tokens);
    metric(&b, "mlstack_scheduler_steps_total", "counter", "Scheduler steps run.", (double)cs.steps);
    metric(&b, "mlstack_preemptions_total", "counter", "Requests preempted for lack of KV pages.",
           (double)cs.preemptions);
    r = b.oom ? send_error(c, 500, "server_error", NULL, NULL, "out of memory", 0)
              : send_response(c, 200, "text/plain; version=0.0.4", b.p, b.n, keep, NULL);
    cli_buf_free(&b);
    return r;
}

static int handle_models(conn *c, const char *path, int keep) {
    srv *s = c->s;
    cli_buf b;
    int r, one = strncmp(path, "/v1/models/", 11) == 0;
    if (one && strcmp(path + 11, s->model_id) != 0)
        return send_error(c, 404, "invalid_request_error", "model", "model_not_found", "no such model", keep);
    memset(&b, 0, sizeof b);
    if (!one) cli_buf_puts(&b, "{\"object\":\"list\",\"data\":[");
    cli_buf_puts(&b, "{\"id\":");
    cli_buf_json(&b, s->model_id, strlen(s->model_id));
    cli_buf_printf(&b, ",\"object\":\"model\",\"created\":%ld,\"owned_by\":\"mlstack\",\"context_length\":%d}",
                   (long)s->t_start, s->info.max_position_embeddings);
    cli_buf_puts(&b, one ? "\n" : "]}\n");
    r = b.oom ? -1 : send_response(c, 200, "application/json", b.p, b.n, keep, NULL);
    cli_buf_free(&b);
    return r;
}

/* ---- /v1/embeddings, /tokenize, /detokenize ---- */

/* Standard base64 of n bytes. */
static void base64_put(cli_buf *b, const unsigned char *p, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i;
    for (i = 0; i + 2 < n; i += 3) {
        unsigned v = (unsigned)p[i] << 16 | (unsigned)p[i + 1] << 8 | p[i + 2];
        char o[4] = {tab[v >> 18], tab[(v >> 12) & 63], tab[(v >> 6) & 63], tab[v & 63]};
        cli_buf_put(b, o, 4);
    }
    if (i < n) {
        unsigned v = (unsigned)p[i] << 16 | (i + 1 < n ? (unsigned)p[i + 1] << 8 : 0);
        char o[4] = {tab[v >> 18], tab[(v >> 12) & 63], i + 1 < n ? tab[(v >> 6) & 63] : '=', '='};
        cli_buf_put(b, o, 4);
    }
}

/* An embeddings input as ids appended to *ids (with its end in off[k + 1]): a string (encoded
   with the special tokens the tokenizer adds, as sentence-transformers does) or a list of ids. */
static int embed_input(srv *s, oai_req *q, const mlstack_json *v, int32_t **ids, size_t *cap, size_t *off, int k) {
    size_t n = 0, len, at = off[k];
    const char *text = mlstack_json_string(v, &len);
    char msg[200];
    if (text) {
        if (len == 0) return bad(q, 400, "input", "invalid_value", "an input must not be an empty string");
        mlstack_tokenizer_encode(s->tok, text, len, MLSTACK_ENCODE_ADD_SPECIAL, NULL, 0, &n);
    } else if (mlstack_json_type_of(v) == MLSTACK_JSON_ARRAY && mlstack_json_length(v) > 0) {
        n = mlstack_json_length(v);
    } else {
        return bad_type(q, "input", "a string, a list of strings, a list of token ids or a list of such lists");
    }
    if (n > (size_t)s->info.max_position_embeddings) {
        snprintf(msg, sizeof msg, "input %d has %zu tokens; the model's context holds %d", k, n,
                 s->info.max_position_embeddings);
        return bad(q, 400, "input", "context_length_exceeded", msg);
    }
    if (at + n > SRV_MAX_EMBED_TOKENS) {
        snprintf(msg, sizeof msg, "the inputs have more than %d tokens together: send fewer at once",
                 SRV_MAX_EMBED_TOKENS);
        return bad(q, 400, "input", "invalid_value", msg);
    }
    if (at + n > *cap) {
        size_t nc = (at + n) * 2;
        int32_t *p = (int32_t *)realloc(*ids, sizeof(int32_t) * nc);
        if (!p) return bad(q, 500, NULL, NULL, "out of memory");
        *ids = p, *cap = nc;
    }
    if (text) {
        if (mlstack_tokenizer_encode(s->tok, text, len, MLSTACK_ENCODE_ADD_SPECIAL, *ids + at, n, &n) != MLSTACK_OK)
            return bad(q, 500, NULL, NULL, mlstack_tokenizer_error(s->tok));
    } else {
        const mlstack_json *e;
        size_t i = 0;
        for (e = mlstack_json_child(v); e; e = mlstack_json_next(e)) {
            int64_t x;
            if (!mlstack_json_int(e, &x) || x < 0 || x >= s->info.n_vocab)
                return bad(q, 400, "input", "invalid_value", "token ids must be integers in the vocabulary");
            (*ids)[at + i++] = (int32_t)x;
        }
    }
    off[k + 1] = at + n;
    return 0;
}

/* The body of /v1/embeddings -> ids of each input (q->err on failure). */
static int embed_parse(srv *s, oai_req *q, const mlstack_json *root, int32_t **ids, size_t *off, int *n_in, int *b64,
                       int *dims) {
    const mlstack_json *in = mlstack_json_get(root, "input"), *v, *e;
    const char *fmt;
    size_t cap = 0;
    int64_t d;
    int r, k = 0, nested;
    if (mlstack_json_type_of(root) != MLSTACK_JSON_OBJECT)
        return bad(q, 400, NULL, "invalid_json", "the body must be a JSON object");
    for (v = mlstack_json_child(root); v; v = mlstack_json_next(v)) {
        const char *key = mlstack_json_key(v);
        char msg[200];
        if (strcmp(key, "input") && strcmp(key, "model") && strcmp(key, "encoding_format") &&
            strcmp(key, "dimensions") && strcmp(key, "user")) {
            snprintf(msg, sizeof msg, "Unrecognized request argument supplied: %.100s", key);
            return bad(q, 400, key, "unsupported_parameter", msg);
        }
    }
    v = mlstack_json_get(root, "model");
    if (v && mlstack_json_type_of(v) != MLSTACK_JSON_NULL && !mlstack_json_string(v, NULL))
        return bad_type(q, "model", "a string");
    fmt = mlstack_json_string(mlstack_json_get(root, "encoding_format"), NULL);
    if (mlstack_json_type_of(mlstack_json_get(root, "encoding_format")) != MLSTACK_JSON_NULL &&
        (!fmt || (strcmp(fmt, "float") && strcmp(fmt, "base64"))))
        return bad(q, 400, "encoding_format", "invalid_value", "encoding_format must be float or base64");
    *b64 = fmt && !strcmp(fmt, "base64");
    *dims = s->info.n_embd;
    if ((r = int_field(q, root, "dimensions", 1, s->info.n_embd, &d)) < 0) return -1;
    if (r) *dims = (int)d;
    if (!in) return bad(q, 400, "input", "missing_required_parameter", "you must provide an input");
    /* one input (a string, or a list of ids), or a list of them */
    nested = mlstack_json_type_of(in) == MLSTACK_JSON_ARRAY && mlstack_json_length(in) > 0 &&
             mlstack_json_type_of(mlstack_json_child(in)) != MLSTACK_JSON_NUMBER;
    if (nested && mlstack_json_length(in) > SRV_MAX_EMBED_INPUTS)
        return bad(q, 400, "input", "invalid_value", "at most 256 inputs in one request");
    if (!nested) return (*n_in = 1, embed_input(s, q, in, ids, &cap, off, 0));
    for (e = mlstack_json_child(in); e; e = mlstack_json_next(e), k++)
        if (embed_input(s, q, e, ids, &cap, off, k) != 0) return -1;
    *n_in = k;
    return 0;
}

/* The vectors as OpenAI's list of embeddings; `dims` below n_embd: the first dims components,
   normalised again when the model normalises (OpenAI's and Matryoshka models' way). */
static void embed_write(srv *s, cli_buf *b, float *out, int n_in, int b64, int dims, size_t n_tokens) {
    int i, j, D = s->info.n_embd;
    cli_buf_puts(b, "{\"object\":\"list\",\"data\":[");
    for (i = 0; i < n_in; i++) {
        float *v = out + (size_t)i * (size_t)D;
        if (dims < D && s->info.normalize) {
            double nrm = 0;
            for (j = 0; j < dims; j++) nrm += (double)v[j] * v[j];
            nrm = sqrt(nrm);
            for (j = 0; j < dims; j++) v[j] = (float)(v[j] / (nrm > 1e-12 ? nrm : 1e-12));
        }
        cli_buf_printf(b, "%s{\"object\":\"embedding\",\"index\":%d,\"embedding\":", i ? "," : "", i);
        if (b64) {
            unsigned char *le = (unsigned char *)v; /* little-endian f32, as OpenAI sends them */
            for (j = 0; j < dims; j++) {
                uint32_t x;
                memcpy(&x, &v[j], 4);
                le[4 * j] = (unsigned char)x, le[4 * j + 1] = (unsigned char)(x >> 8);
                le[4 * j + 2] = (unsigned char)(x >> 16), le[4 * j + 3] = (unsigned char)(x >> 24);
            }
            cli_buf_puts(b, "\"");
            base64_put(b, le, (size_t)dims * 4);
            cli_buf_puts(b, "\"}");
        } else {
            cli_buf_puts(b, "[");
            for (j = 0; j < dims; j++) cli_buf_printf(b, j ? ",%.9g" : "%.9g", (double)v[j]);
            cli_buf_puts(b, "]}");
        }
    }
    cli_buf_puts(b, "],\"model\":");
    cli_buf_json(b, s->model_id, strlen(s->model_id));
    cli_buf_printf(b, ",\"usage\":{\"prompt_tokens\":%zu,\"total_tokens\":%zu}}\n", n_tokens, n_tokens);
}

/* POST /v1/embeddings: the inputs' embeddings, computed on the engine thread between steps. */
static int handle_embeddings(conn *c, const http_req *hr, double t0) {
    srv *s = c->s;
    oai_req q;
    mlstack_json_doc *doc = NULL;
    int32_t *ids = NULL;
    size_t off[SRV_MAX_EMBED_INPUTS + 1];
    int keep = hr->keep_alive && !c->peer_eof, n_in = 0, b64 = 0, dims = 0, rc = 0, code = 200;
    srv_embed_job job;
    float *out = NULL;
    cli_buf b;
    memset(&q, 0, sizeof q);
    memset(&job, 0, sizeof job);
    memset(&b, 0, sizeof b);
    off[0] = 0;
    if (parse_body(c, hr, keep, t0, &doc) != 0) return c->closed || !keep ? -1 : 0;
    if (embed_parse(s, &q, mlstack_json_root(doc), &ids, off, &n_in, &b64, &dims) == 0 &&
        !(out = (float *)malloc(sizeof(float) * (size_t)n_in * (size_t)s->info.n_embd)))
        bad(&q, 500, NULL, NULL, "out of memory");
    if (!q.err_status) {
        job.ids = ids, job.off = off, job.n = n_in, job.out = out;
        pthread_mutex_lock(&s->mu);
        if (srv_stop) {
            bad(&q, 503, NULL, NULL, "the server is shutting down");
        } else {
            job.next = s->embeds; /* (order among waiting jobs does not matter) */
            s->embeds = &job;
            pthread_cond_signal(&s->wake);
            while (!job.done) pthread_cond_wait(&s->embed_cv, &s->mu);
        }
        pthread_mutex_unlock(&s->mu);
        if (job.done && job.res != MLSTACK_OK)
            bad(&q,
                job.res == MLSTACK_ERR_LIMIT         ? 503
                : job.res == MLSTACK_ERR_UNSUPPORTED ? 400
                                                     : 500,
                "input", NULL, job.msg);
    }
    if (q.err_status) {
        code = q.err_status;
        rc = send_error(c, code, code >= 500 ? "server_error" : "invalid_request_error", q.err_param, q.err_code, q.err,
                        keep);
    } else {
        embed_write(s, &b, out, n_in, b64, dims, off[n_in]);
        rc = b.oom ? send_error(c, code = 500, "server_error", NULL, NULL, "out of memory", 0)
                   : send_response(c, 200, "application/json", b.p, b.n, keep, NULL);
    }
    mlstack_json_free(doc); /* after the error: its param may name a key of the body */
    log_request(c, hr, code, t0, NULL);
    cli_buf_free(&b);
    free(out);
    free(ids);
    return rc || !keep ? -1 : 0;
}

/* POST /tokenize {"content": text, "add_special": false, "with_pieces": false} -> {"tokens":
   [ids]} (with_pieces: [{"id", "piece"}]); POST /detokenize {"tokens": [ids]} -> {"content":
   text}. As llama-server's. */
static int handle_tokenize(conn *c, const http_req *hr, int detok, double t0) {
    srv *s = c->s;
    oai_req q;
    mlstack_json_doc *doc = NULL;
    const mlstack_json *root, *v;
    int keep = hr->keep_alive && !c->peer_eof, rc, code = 200, special = 0, pieces = 0;
    int32_t *ids = NULL;
    size_t n = 0, len = 0, i;
    char *text = NULL;
    cli_buf b;
    memset(&q, 0, sizeof q);
    memset(&b, 0, sizeof b);
    if (parse_body(c, hr, keep, t0, &doc) != 0) return c->closed || !keep ? -1 : 0;
    root = mlstack_json_root(doc);
    if (mlstack_json_type_of(root) != MLSTACK_JSON_OBJECT) {
        bad(&q, 400, NULL, "invalid_json", "the body must be a JSON object");
    } else if (!detok) {
        const char *content = mlstack_json_string(mlstack_json_get(root, "content"), &len);
        if (!content) bad_type(&q, "content", "a string");
        else if (bool_field(&q, root, "add_special", &special) >= 0 &&
                 bool_field(&q, root, "with_pieces", &pieces) >= 0) {
            int fl = special ? MLSTACK_ENCODE_ADD_SPECIAL : 0;
            mlstack_tokenizer_encode(s->tok, content, len, fl, NULL, 0, &n);
            ids = (int32_t *)malloc(sizeof(int32_t) * (n ? n : 1));
            if (!ids || mlstack_tokenizer_encode(s->tok, content, len, fl, ids, n, &n) != MLSTACK_OK)
                bad(&q, 500, NULL, NULL, "could not encode the content");
        }
        cli_buf_puts(&b, "{\"tokens\":[");
        for (i = 0; !q.err_status && i < n; i++) {
            if (i) cli_buf_puts(&b, ",");
            if (pieces) {
                cli_buf_printf(&b, "{\"id\":%d,\"piece\":", (int)ids[i]);
                json_token_text(s, &b, ids[i], 0);
                cli_buf_puts(&b, "}");
            } else {
                cli_buf_printf(&b, "%d", (int)ids[i]);
            }
        }
        cli_buf_puts(&b, "]}\n");
    } else if (mlstack_json_type_of(v = mlstack_json_get(root, "tokens")) != MLSTACK_JSON_ARRAY) {
        bad_type(&q, "tokens", "a list of token ids");
    } else {
        const mlstack_json *e;
        n = mlstack_json_length(v);
        ids = (int32_t *)malloc(sizeof(int32_t) * (n ? n : 1));
        for (e = mlstack_json_child(v), i = 0; ids && e && !q.err_status; e = mlstack_json_next(e)) {
            int64_t x;
            if (!mlstack_json_int(e, &x) || x < 0 || x >= s->info.n_vocab)
                bad(&q, 400, "tokens", "invalid_value", "token ids must be integers in the vocabulary");
            else
                ids[i++] = (int32_t)x;
        }
        len = 0;
        if (!ids) bad(&q, 500, NULL, NULL, "out of memory");
        else if (!q.err_status) {
            mlstack_tokenizer_decode(s->tok, ids, n, 0, NULL, 0, &len);
            text = (char *)malloc(len + 1);
            if (!text || mlstack_tokenizer_decode(s->tok, ids, n, 0, text, len + 1, &len) != MLSTACK_OK)
                bad(&q, 500, NULL, NULL, "could not decode the tokens");
        }
        cli_buf_puts(&b, "{\"content\":");
        cli_buf_json(&b, text ? text : "", text ? len : 0);
        cli_buf_puts(&b, "}\n");
    }
    if (q.err_status) {
        code = q.err_status;
        rc = send_error(c, code, code >= 500 ? "server_error" : "invalid_request_error", q.err_param, q.err_code, q.err,
                        keep);
    } else {
        rc = b.oom ? send_error(c, code = 500, "server_error", NULL, NULL, "out of memory", 0)
                   : send_response(c, 200, "application/json", b.p, b.n, keep, NULL);
    }
    mlstack_json_free(doc);
    log_request(c, hr, code, t0, NULL);
    cli_buf_free(&b);
    free(ids);
    free(text);
    return rc || !keep ? -1 : 0;
}

/* "Authorization: Bearer KEY": the scheme in any case (RFC 9110 11.1), the key compared in time
   that depends on the key's length only, not on how much of it a guess gets right. */
static int authorized(const srv *s, const http_req *hr) {
    const char *a = hr->auth, *key = s->o.api_key;
    size_t n, m, i;
    volatile unsigned diff;
    if (!key) return 1;
    if (!a) return 0;
    for (i = 0; i < 6; i++)
        if ((a[i] | 0x20) != "bearer"[i]) return 0;
    if (a[6] != ' ' && a[6] != '\t') return 0;
    for (a += 6; *a == ' ' || *a == '\t'; a++) {}
    n = strlen(key);
    m = strlen(a);
    diff = (unsigned)(m != n);
    for (i = 0; i < n; i++) diff |= (unsigned char)key[i] ^ (unsigned char)(i < m ? a[i] : 0);
    return diff == 0;
}

/* Answers one request; returns 0 to keep the connection, -1 to close it. */
static int route(conn *c, const http_req *hr) {
    srv *s = c->s;
    double t0 = now_s();
    int keep = hr->keep_alive, get = strcmp(hr->method, "GET") == 0, post = strcmp(hr->method, "POST") == 0, r;
    const char *p = hr->path;
    int is_chat = !strcmp(p, "/v1/chat/completions") || !strcmp(p, "/chat/completions");
    int is_text = !strcmp(p, "/v1/completions") || !strcmp(p, "/completions");
    int is_models = !strcmp(p, "/v1/models") || !strncmp(p, "/v1/models/", 11);
    int is_resp = !strcmp(p, "/v1/responses") || !strcmp(p, "/responses");
    int is_embed = !strcmp(p, "/v1/embeddings") || !strcmp(p, "/embeddings");
    int is_tok = !strcmp(p, "/tokenize"), is_detok = !strcmp(p, "/detokenize");
    if (!strcmp(p, "/") || !strcmp(p, "/index.html")) { /* the chat page: static, no key (its requests send one) */
        r = get ? send_response(c, 200, "text/html; charset=utf-8", srv_chat_html, srv_chat_html_len(), keep,
                                "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n")
                : send_error(c, 405, "invalid_request_error", NULL, NULL, "use GET", keep);
        log_request(c, hr, get ? 200 : 405, t0, NULL);
        return r || !keep ? -1 : 0;
    }
    if (!strcmp(p, "/health")) {
        static const char ok[] = "{\"status\":\"ok\"}\n";
        r = get ? send_response(c, 200, "application/json", ok, sizeof ok - 1, keep, NULL)
                : send_error(c, 405, "invalid_request_error", NULL, NULL, "use GET", keep);
        log_request(c, hr, get ? 200 : 405, t0, NULL);
        return r || !keep ? -1 : 0;
    }
    if (!authorized(s, hr)) {
        r = send_error(c, 401, "invalid_request_error", NULL, "invalid_api_key",
                       "missing or wrong API key: send the header 'Authorization: Bearer KEY'", keep);
        log_request(c, hr, 401, t0, NULL);
        return r || !keep ? -1 : 0;
    }
    if (is_chat || is_text || is_resp || is_embed || is_tok || is_detok) {
        if (!post) r = send_error(c, 405, "invalid_request_error", NULL, NULL, "use POST", keep);
        else if (is_embed)
            return handle_embeddings(c, hr, t0);
        else if (is_tok || is_detok)
            return handle_tokenize(c, hr, is_detok, t0);
        else
            return handle_completion(c, hr, is_chat ? EP_CHAT : is_resp ? EP_RESP : EP_TEXT, t0);
    } else if (is_models || !strcmp(p, "/metrics")) {
        if (!get) r = send_error(c, 405, "invalid_request_error", NULL, NULL, "use GET", keep);
        else
            r = is_models ? handle_models(c, p, keep) : handle_metrics(c, keep);
    } else {
        char msg[1200];
        snprintf(msg, sizeof msg, "no endpoint %s %s", hr->method, p);
        r = send_error(c, 404, "invalid_request_error", NULL, "unknown_url", msg, keep);
    }
    log_request(c, hr, c->last_code, t0, NULL);
    return r || !keep ? -1 : 0;
}

/* Back to waiting for a request head (under mu). */
static void conn_wait(conn *c) {
    if (!c->waiting) c->waiting = 1, c->s->n_waiting++;
    c->wait_since = now_s();
}

/* Takes c out of the server's list of connections and its counts (s->mu held). */
static void conn_unlink(srv *s, conn *c) {
    if (c->prev) c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    if (c->waiting) s->n_waiting--;
    s->n_conns--;
}

static void *conn_main(void *arg) {
    conn *c = (conn *)arg;
    srv *s = c->s;
    for (;;) {
        http_req hr;
        size_t used = 0;
        int code = http_read_request(&c->in, &hr, &used);
        if (code == 1) break;
        if (code) {
            char msg[160];
            snprintf(msg, sizeof msg, "%s",
                     code == 408   ? "the request was not received in time"
                     : code == 413 ? "the request body is larger than the server accepts"
                     : code == 431 ? "the request head is too large or has too many headers"
                     : code == 411 ? "send the body with a Content-Length or in chunked transfer coding"
                     : code == 501 ? "the only transfer coding understood is chunked"
                     : code == 503 ? "the server is busy with other request bodies: retry"
                     : code == 505 ? "only HTTP/1.0 and HTTP/1.1 are served"
                                   : "malformed HTTP request");
            send_error(c, code, code == 503 ? "server_error" : "invalid_request_error", NULL, NULL, msg, 0);
            if (!s->o.quiet) {
                char when[40];
                log_time(when, sizeof when);
                fprintf(stderr, "%s %s (request) %d %s\n", when, c->client, code, msg);
            }
            linger_close(c);
            break;
        }
        c->in.deadline = 0; /* later requests: --timeout of idleness, then --timeout from their first byte */
        c->used = used;
        code = route(c, &hr);
        conn_consume(c); /* (if the request did not already) pipelined bytes stay for the next request */
        if (code != 0 || c->peer_eof) break;
        pthread_mutex_lock(&s->mu);
        conn_wait(c);
        pthread_mutex_unlock(&s->mu);
    }
    conn_hold(c, 0);
    pthread_mutex_lock(&s->mu);
    conn_unlink(s, c);
    close(c->fd); /* under mu: the accept thread may shut a listed connection's socket down */
    pthread_cond_broadcast(&s->conns_cv);
    pthread_mutex_unlock(&s->mu);
    free(c->in.buf);
    free(c);
    return NULL;
}

/* ==== MAIN ==== */

#define OPT(s, l, kind, lo, hi, field) CLI_OPT(s, l, kind, lo, hi, srv_opts, field)
static const cli_opt_spec SERVE_OPTS[] = {
    OPT("-m", "--model", 's', 0, 0, base.model),
    OPT("--host", NULL, 's', 0, 0, host),
    OPT("--port", NULL, 'i', 0, 65535, port),
    OPT("--api-key", NULL, 's', 0, 0, api_key),
    OPT("--api-key-file", NULL, 's', 0, 0, api_key_file),
    OPT("--alias", NULL, 's', 0, 0, alias),
    OPT("--parallel", "-np", 'i', 1, 1024, parallel),
    OPT("--kv-mem", NULL, 'u', 1, 1 << 20, base.kv_mib),
    OPT("--spec", NULL, 's', 0, 0, base.spec),
    OPT("--spec-tokens", NULL, 'i', 1, 64, base.spec_tokens),
    OPT("--max-conns", NULL, 'i', 1, 100000, max_conns),
    OPT("--max-conns-per-peer", NULL, 'i', 1, 100000, max_conns_per_peer),
    OPT("--max-body", NULL, 'z', 1, 1e10, max_body),
    OPT("--max-json-nodes", NULL, 'z', 1, 1e9, max_json_nodes),
    OPT("--body-mem", NULL, 'z', 1, 1 << 20, body_mem_mib),
    OPT("--timeout", NULL, 'i', 1, 86400, timeout_s),
    OPT("--shutdown-timeout", NULL, 'i', 0, 3600, shutdown_timeout_s),
    OPT("--quiet", NULL, 'b', 0, 0, quiet),
    OPT("--kv-type", NULL, 's', 0, 0, kv_type),
    OPT("--cache-type-k", "-ctk", 's', 0, 0, base.cache_type_k),
    OPT("--cache-type-v", "-ctv", 's', 0, 0, base.cache_type_v),
    OPT("--content-specials", NULL, 's', 0, 0, content_specials),
    OPT("-t", "--threads", 'i', 1, 256, base.threads),
    OPT("--gpu", NULL, 'b', 0, 0, base.gpu),
    OPT("--isa", NULL, 's', 0, 0, base.isa),
    OPT("--quant", NULL, 'q', 0, 0, base.quant),
};
#undef OPT

static int parse_serve(int argc, char **argv, srv_opts *o) {
    int i;
    memset(o, 0, sizeof *o);
    o->base.cmd = "serve";
    o->host = "127.0.0.1";
    o->port = 8080;
    o->parallel = 16;
    o->max_conns = 512;
    o->max_conns_per_peer = 128;
    o->max_body = (size_t)4 << 20;
    o->max_json_nodes = (size_t)1 << 18;
    o->body_mem_mib = 256;
    o->timeout_s = 10;
    o->shutdown_timeout_s = 5;
    for (i = 1; i < argc; i++) {
        int r;
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) return 1;
        if ((r = cli_parse_opt(SERVE_OPTS, sizeof SERVE_OPTS / sizeof SERVE_OPTS[0], o, "serve", argc, argv, &i)) == 2)
            return 2;
        if (r == 0) return cli_die("unknown option %s for serve (see mlstack serve --help)", argv[i]);
    }
    if (!o->base.model) return cli_die("%s", "serve needs -m MODEL (a model folder or .gguf file)");
    if (o->api_key && o->api_key_file) return cli_die("%s", "give --api-key or --api-key-file, not both");
    if (o->api_key_file) { /* the file's first line; a key kept off the command line (ps shows it) */
        static char key[4096];
        char *text = NULL;
        size_t n = 0;
        if (cli_read_file(o->api_key_file, sizeof key, &text, &n) != 0)
            return cli_die("--api-key-file %s: cannot read it", o->api_key_file);
        n = strcspn(text, "\r\n");
        if (n >= sizeof key) n = 0;
        memcpy(key, text, n);
        key[n] = 0;
        free(text);
        if (!n) return cli_die("--api-key-file %s: the first line is empty or longer than 4095 bytes", o->api_key_file);
        o->api_key = key;
    } else if (!o->api_key && getenv("MLSTACK_API_KEY") && getenv("MLSTACK_API_KEY")[0]) {
        o->api_key = getenv("MLSTACK_API_KEY");
    }
    if (o->api_key && !o->api_key[0])
        return cli_die("%s", "--api-key is empty: give a key, or leave the option out for an open server");
    if (o->kv_type && strcmp(o->kv_type, "f16") && strcmp(o->kv_type, "bf16") && strcmp(o->kv_type, "f32"))
        return cli_die("--kv-type %s: expected f16, bf16 or f32", o->kv_type);
    {
        mlstack_kv_type t;
        if (cli_kv_type("--cache-type-k", o->base.cache_type_k, &t) ||
            cli_kv_type("--cache-type-v", o->base.cache_type_v, &t))
            return 2;
    }
    if (o->content_specials && strcmp(o->content_specials, "text") && strcmp(o->content_specials, "parse"))
        return cli_die("--content-specials %s: expected text or parse", o->content_specials);
    return 0;
}

static int srv_listen(srv *s) {
    struct addrinfo hints, *res = NULL, *ai;
    char port[16];
    int fd = -1, one = 1, gai;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    snprintf(port, sizeof port, "%d", s->o.port);
    if ((gai = getaddrinfo(cli_host_local(s->o.host), port, &hints, &res)) != 0) {
        fprintf(stderr, "mlstack: --host %s: %s\n", s->o.host, gai_strerror(gai));
        return -1;
    }
    for (ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
        if (fd < 0) continue;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 1024) == 0) break;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        fprintf(stderr, "mlstack: cannot listen on %s:%d: %s (is the port in use? try --port)\n", s->o.host, s->o.port,
                strerror(errno));
        return -1;
    }
    {
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
            s->o.port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                       : ((struct sockaddr_in *)&ss)->sin_port);
    }
    s->listen_fd = fd;
    return 0;
}

/* The peer's key for --max-conns-per-peer: the family, then the IPv4 address or the IPv6 /64
   prefix (one host usually holds a whole /64); an IPv4-mapped IPv6 address counts as IPv4. */
static void peer_key(const struct sockaddr_storage *ss, unsigned char key[17]) {
    memset(key, 0, 17);
    if (ss->ss_family == AF_INET6) {
        const unsigned char *a = ((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr.s6_addr;
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(a, mapped, 12) == 0) {
            key[0] = 4;
            memcpy(key + 1, a + 12, 4);
        } else {
            key[0] = 6;
            memcpy(key + 1, a, 8);
        }
    } else if (ss->ss_family == AF_INET) {
        key[0] = 4;
        memcpy(key + 1, &((const struct sockaddr_in *)(const void *)ss)->sin_addr, 4);
    }
}

/* The peer's address as text ("127.0.0.1", "::1"; an IPv4-mapped IPv6 address as IPv4). */
static void peer_text(const struct sockaddr_storage *ss, char *out, size_t cap) {
    const void *a = NULL;
    int fam = ss->ss_family;
    if (fam == AF_INET6) {
        const unsigned char *b = ((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr.s6_addr;
        static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (memcmp(b, mapped, 12) == 0) fam = AF_INET, a = b + 12;
        else
            a = b;
    } else if (fam == AF_INET) {
        a = &((const struct sockaddr_in *)(const void *)ss)->sin_addr;
    }
    if (!a || !inet_ntop(fam, a, out, (socklen_t)cap)) snprintf(out, cap, "-");
}

/* Admits a new connection from `key` (under mu). Returns 0, or 503 when its peer holds
   --max-conns-per-peer connections already, or when every slot has a request in progress. At
   --max-conns, or with 7/8 of them waiting for a request head, the connection that has waited
   longest is shut down to make room: a client that trickles bytes or idles holds a slot only
   until someone needs it, while requests under way keep theirs. */
static int srv_admit(srv *s, const unsigned char key[17]) {
    conn *c, *oldest = NULL;
    int same = 0, wait_cap = s->o.max_conns - s->o.max_conns / 8, live_waiting = 0;
    for (c = s->conns; c; c = c->next) {
        if (!c->evicted && memcmp(c->peer, key, 17) == 0) same++;
        if (c->waiting && !c->evicted) {
            live_waiting++;
            if (!oldest || c->wait_since < oldest->wait_since) oldest = c;
        }
    }
    if (s->o.max_conns_per_peer > 0 && same >= s->o.max_conns_per_peer) {
        s->peer_rejected++;
        return 503;
    }
    if (s->n_conns - (s->n_waiting - live_waiting) >= s->o.max_conns || live_waiting >= wait_cap) {
        if (!oldest) return 503;
        oldest->evicted = 1;
        shutdown(oldest->fd, SHUT_RDWR); /* its thread wakes, sees the end and closes */
        s->conns_evicted++;
    }
    return 0;
}

static void srv_accept_loop(srv *s) {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, (size_t)1 << 20);
    while (!srv_stop) {
        struct pollfd p;
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        unsigned char key[17];
        int fd, over;
        conn *c;
        pthread_t th;
        p.fd = s->listen_fd;
        p.events = POLLIN;
        p.revents = 0;
        if (poll(&p, 1, 200) <= 0) continue;
        memset(&ss, 0, sizeof ss);
        fd = accept(s->listen_fd, (struct sockaddr *)&ss, &sl);
        if (fd < 0) continue;
        {
            int one = 1;
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        }
        peer_key(&ss, key);
        c = (conn *)calloc(1, sizeof *c);
        if (c) c->in.buf = (char *)malloc(HTTP_MAX_HEAD + 1);
        pthread_mutex_lock(&s->mu);
        over = !c || !c->in.buf ? 503 : srv_admit(s, key);
        if (over) {
            s->conns_rejected++, s->http_codes[over]++;
        } else {
            s->n_conns++, s->conns_total++;
            c->in.cap = HTTP_MAX_HEAD + 1, c->s = s, c->fd = fd;
            c->in.max_body = s->o.max_body, c->in.timeout_s = s->o.timeout_s;
            c->in.deadline = now_s() + s->o.timeout_s; /* the first request: from the accept on */
            c->in.recv = conn_recv, c->in.send_continue = conn_send_continue, c->in.ctx = c;
            c->in.reserve = conn_reserve, c->in.on_head = conn_on_head;
            memcpy(c->peer, key, sizeof key);
            peer_text(&ss, c->client, sizeof c->client);
            conn_wait(c);
            c->next = s->conns;
            if (s->conns) s->conns->prev = c;
            s->conns = c;
        }
        pthread_mutex_unlock(&s->mu);
        if (over) { /* answer without a thread: a short write that fits the socket buffer */
            static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                                       "Content-Length: 97\r\nConnection: close\r\nRetry-After: 1\r\n\r\n"
                                       "{\"error\":{\"message\":\"too many "
                                       "connections\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
            (void)!send(fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
            close(fd);
            if (c) free(c->in.buf);
            free(c);
            continue;
        }
        if (pthread_create(&th, &attr, conn_main, c) != 0) {
            pthread_mutex_lock(&s->mu);
            conn_unlink(s, c);
            close(fd);
            pthread_mutex_unlock(&s->mu);
            free(c->in.buf);
            free(c);
        }
    }
    pthread_attr_destroy(&attr);
}

int cli_cmd_serve(int argc, char **argv) {
    srv *s;
    pthread_t engine_th;
    struct sigaction sa;
    const char *base;
    size_t n;
    int r, rc = 0;
    s = (srv *)calloc(1, sizeof *s);
    if (!s) return cli_die("%s", "out of memory");
    r = parse_serve(argc, argv, &s->o);
    if (r) {
        if (r == 1) fputs(SERVE_USAGE, stdout);
        free(s);
        return r == 1 ? 0 : r;
    }
    /* the KV pool: enough for every parallel request to hold a conversation */
    if ((rc = cli_open_model(&s->o.base, s->o.parallel, &s->m, NULL, NULL)) != 0) {
        free(s);
        return rc;
    }
    mlstack_model_get_info(s->m, &s->info);
    if (!s->o.base.kv_mib) {
        mlstack_kv_type kt, vt;
        uint64_t per_tok;
        cli_kv_type("--cache-type-k", s->o.base.cache_type_k, &kt); /* checked by parse_serve */
        cli_kv_type("--cache-type-v", s->o.base.cache_type_v, &vt);
        per_tok = cli_kv_token_bytes(&s->info, kt, vt);
        uint64_t toks = (uint64_t)s->o.parallel * 1024,
                 min_toks = s->info.max_position_embeddings < 4096 ? (uint64_t)s->info.max_position_embeddings : 4096;
        s->o.base.kv_mib = ((toks > min_toks ? toks : min_toks) * per_tok + ((1u << 20) - 1)) >> 20;
    }
    {
        mlstack_engine_desc ed;
        mlstack_error err;
        memset(&ed, 0, sizeof ed);
        ed.n_threads = s->o.base.threads;
        ed.max_seqs = s->o.parallel;
        ed.isa = s->o.base.isa;
        ed.kv_mem = s->o.base.kv_mib << 20;
        ed.kv_type = !s->o.kv_type || !strcmp(s->o.kv_type, "f16") ? (mlstack_kv_type)0
                     : !strcmp(s->o.kv_type, "bf16")               ? MLSTACK_KV_BF16
                                                                   : MLSTACK_KV_F32;
        cli_kv_type("--cache-type-k", s->o.base.cache_type_k, &ed.kv_type_k);
        cli_kv_type("--cache-type-v", s->o.base.cache_type_v, &ed.kv_type_v);
        if ((rc = cli_spec_setup(s->o.base.spec, s->o.base.spec_tokens, s->o.base.model, &ed)) != 0) {
            mlstack_model_close(s->m);
            free(s);
            return rc;
        }
        cli_progress("%s: starting the engine...", s->o.base.model);
        if (cli_engine_init(s->m, &ed, s->o.base.gpu, &s->e, &err) != MLSTACK_OK) {
            cli_progress_done();
            fprintf(stderr, "mlstack: %s\n", err.message);
            mlstack_model_close(s->m);
            free(s);
            return 1;
        }
        cli_progress_done();
    }
    s->tok = mlstack_model_tokenizer(s->m);
    s->tpl = mlstack_model_chat_template(s->m);
    {
        mlstack_error err;
        if (s->tok && mlstack_vocab_from_model(s->m, &s->vocab, &err) != MLSTACK_OK) /* the rest still works */
            fprintf(stderr, "mlstack serve: no constrained decoding (response_format, tools): %s\n", err.message);
    }
    if (!s->tok) {
        fprintf(stderr, "mlstack: %s has no tokenizer.json: the server needs one\n", s->o.base.model);
        mlstack_engine_free(s->e);
        mlstack_model_close(s->m);
        free(s);
        return 1;
    }
    if (s->o.alias) {
        snprintf(s->model_id, sizeof s->model_id, "%s", s->o.alias);
    } else { /* the folder's name */
        n = strlen(s->o.base.model);
        while (n > 1 && s->o.base.model[n - 1] == '/') n--;
        base = s->o.base.model;
        {
            size_t i;
            for (i = 0; i < n; i++)
                if (s->o.base.model[i] == '/' && i + 1 < n) base = s->o.base.model + i + 1;
        }
        n -= (size_t)(base - s->o.base.model);
        if (n > 5 && memcmp(base + n - 5, ".gguf", 5) == 0) n -= 5; /* a GGUF file: its name without .gguf */
        snprintf(s->model_id, sizeof s->model_id, "%.*s", (int)n, base);
    }
    s->body_mem_max = s->o.body_mem_mib << 20;
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->wake, NULL);
    pthread_cond_init(&s->conns_cv, NULL);
    pthread_cond_init(&s->embed_cv, NULL);
    s->t_start = (double)time(NULL);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = srv_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (srv_listen(s) != 0) {
        rc = 1;
    } else if (pthread_create(&engine_th, NULL, srv_engine_main, s) != 0) {
        fprintf(stderr, "mlstack: cannot start the engine thread\n");
        close(s->listen_fd);
        rc = 1;
    } else {
        int v6 = strchr(s->o.host, ':') != NULL;
        fprintf(stderr, "mlstack serve: model '%s' (%s kernels, %d parallel, KV %llu MiB) on http://%s%s%s:%d%s\n",
                s->model_id, mlstack_engine_kernels(s->e), s->o.parallel, (unsigned long long)s->o.base.kv_mib,
                v6 ? "[" : "", s->o.host, v6 ? "]" : "", s->o.port, s->o.api_key ? " (API key required)" : "");
        fflush(stderr);
        srv_accept_loop(s);
        close(s->listen_fd); /* no new connections from here on */
        /* shutdown: connections see srv_stop within 200 ms, cancel their requests (streams end
           with an error event, waiting clients get 503) and close; idle ones just close. Work
           that cannot be cancelled (a grammar compile) gets --shutdown-timeout seconds. */
        pthread_mutex_lock(&s->mu);
        {
            double deadline = now_s() + s->o.shutdown_timeout_s;
            while (s->n_conns > 0 && now_s() < deadline) cond_wait_ms(&s->conns_cv, &s->mu, 100);
        }
        if (s->n_conns > 0) {
            /* threads still run on the model and engine: leave them as they are and exit */
            fprintf(stderr, "mlstack serve: %d connection(s) still busy after --shutdown-timeout %d s; exiting\n",
                    s->n_conns, s->o.shutdown_timeout_s);
            fflush(stderr);
            _exit(0);
        }
        s->stop_engine = 1;
        pthread_cond_signal(&s->wake);
        pthread_mutex_unlock(&s->mu);
        pthread_join(engine_th, NULL);
        if (!s->o.quiet) fprintf(stderr, "mlstack serve: stopped\n");
    }
    pthread_cond_destroy(&s->conns_cv);
    pthread_cond_destroy(&s->embed_cv);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->mu);
    mlstack_engine_free(s->e);
    {
        int i;
        for (i = 0; i < SRV_GRAMMARS; i++) gram_free(s->grams[i]); /* no request holds one now */
    }
    mlstack_vocab_free(s->vocab);
    mlstack_model_close(s->m);
    free(s);
    return rc;
}
#endif
