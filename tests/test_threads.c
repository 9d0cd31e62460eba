/* The documented multi-thread uses, run at once so that ThreadSanitizer (make tsan) sees them:
   - one thread steps an engine while others submit, poll, cancel and release requests;
   - engines of different kernel tables sharing one model: one is created (and may pack panels
     into the model) while another generates;
   - several threads encoding and decoding with one tokenizer;
   - the thread pool's fork/join with one thread held up: the others take its tasks.
   Results are checked against the same work done on one thread. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include <pthread.h>

static const char *FIXTURE = "tests/fixtures/models/llama";
static void nap(void) { /* waiting threads must not starve the stepping one on a busy machine */
    struct timespec ts = {0, 200000};
    nanosleep(&ts, NULL);
}
static const char *TOKENIZER = "../shared/tokenizers/smollm2/tokenizer.json";

enum { N_CLIENTS = 3, N_REQ = 4, MAX_NEW = 6 };

typedef struct {
    mlstack_engine *e;
    int stop;
    pthread_mutex_t mu; /* guards stop */
} stepper;
static void *step_loop(void *arg) {
    stepper *s = (stepper *)arg;
    for (;;) {
        int n = 0, stop;
        mlstack_engine_step(s->e, &n);
        if (n == 0) nap();
        pthread_mutex_lock(&s->mu);
        stop = s->stop;
        pthread_mutex_unlock(&s->mu);
        if (stop) break;
    }
    return NULL;
}

typedef struct {
    mlstack_engine *e;
    int client;
    int32_t got[N_REQ][MAX_NEW];
    int ok;
} client;
static void *client_run(void *arg) {
    client *c = (client *)arg;
    int i;
    c->ok = 1;
    for (i = 0; i < N_REQ; i++) {
        mlstack_request_desc d;
        mlstack_request_status st;
        int32_t prompt[3], toks[3 + MAX_NEW];
        uint64_t id, extra;
        prompt[0] = 5 + c->client, prompt[1] = 6 + i, prompt[2] = 7;
        memset(&d, 0, sizeof d);
        d.prompt = prompt, d.n_prompt = 3, d.max_tokens = MAX_NEW, d.ignore_eos = 1;
        if (mlstack_engine_submit(c->e, &d, &id, NULL) != MLSTACK_OK) {
            c->ok = 0;
            return NULL;
        }
        /* a second request, cancelled at once and released: exercises the queues under the lock */
        if (mlstack_engine_submit(c->e, &d, &extra, NULL) == MLSTACK_OK) {
            mlstack_engine_cancel(c->e, extra);
            mlstack_engine_release(c->e, extra);
        }
        for (;;) {
            if (mlstack_engine_poll(c->e, id, &st, toks, 3 + MAX_NEW) != MLSTACK_OK) {
                c->ok = 0;
                break;
            }
            if (st.state == MLSTACK_REQUEST_DONE) break;
            nap();
        }
        if (st.n_generated == MAX_NEW) memcpy(c->got[i], toks, sizeof c->got[i]); /* generated tokens only */
        else
            c->ok = 0;
        mlstack_engine_release(c->e, id);
    }
    return NULL;
}

static mlstack_engine *engine(mlstack_model *m, const char *isa, int threads) {
    mlstack_engine_desc ed;
    mlstack_engine *e = NULL;
    mlstack_error err;
    memset(&ed, 0, sizeof ed);
    ed.n_threads = threads;
    ed.isa = isa;
    if (mlstack_engine_init(m, &ed, &e, &err) != MLSTACK_OK) printf("engine: %s\n", err.message);
    return e;
}

/* The same request alone on one thread: the reference. */
static void reference(mlstack_engine *e, int cl, int i, int32_t *out) {
    mlstack_request_desc d;
    mlstack_request_status st;
    int32_t prompt[3], toks[3 + MAX_NEW];
    prompt[0] = 5 + cl, prompt[1] = 6 + i, prompt[2] = 7;
    memset(&d, 0, sizeof d);
    d.prompt = prompt, d.n_prompt = 3, d.max_tokens = MAX_NEW, d.ignore_eos = 1;
    memset(toks, 0, sizeof toks);
    CHECK(mlstack_engine_complete(e, &d, &st, toks, 3 + MAX_NEW, NULL) == MLSTACK_OK);
    memcpy(out, toks, sizeof(int32_t) * MAX_NEW);
}

static void test_serving(mlstack_model *m) {
    mlstack_engine *e = engine(m, NULL, 2);
    stepper s;
    client c[N_CLIENTS];
    pthread_t st, ct[N_CLIENTS];
    int i, k;
    if (!e) {
        CHECK(e != NULL);
        return;
    }
    s.e = e;
    s.stop = 0;
    pthread_mutex_init(&s.mu, NULL);
    pthread_create(&st, NULL, step_loop, &s);
    for (i = 0; i < N_CLIENTS; i++) {
        c[i].e = e;
        c[i].client = i;
        pthread_create(&ct[i], NULL, client_run, &c[i]);
    }
    for (i = 0; i < N_CLIENTS; i++) pthread_join(ct[i], NULL);
    pthread_mutex_lock(&s.mu);
    s.stop = 1;
    pthread_mutex_unlock(&s.mu);
    pthread_join(st, NULL);
    pthread_mutex_destroy(&s.mu);
    for (i = 0; i < N_CLIENTS; i++) {
        CHECKF(c[i].ok, "client %d: every request completed", i);
        for (k = 0; k < N_REQ; k++) {
            int32_t want[MAX_NEW];
            reference(e, i, k, want);
            CHECKF(memcmp(want, c[i].got[k], sizeof want) == 0,
                   "client %d request %d: same tokens as alone (%d %d %d %d %d %d, alone %d %d %d %d %d %d)", i, k,
                   c[i].got[k][0], c[i].got[k][1], c[i].got[k][2], c[i].got[k][3], c[i].got[k][4], c[i].got[k][5],
                   want[0], want[1], want[2], want[3], want[4], want[5]);
        }
    }
    mlstack_engine_free(e);
}

typedef struct {
    mlstack_model *m;
    const char *isa;
    int32_t out[8];
    int n;
} gen_job;
static void *gen_run(void *arg) {
    gen_job *j = (gen_job *)arg;
    mlstack_engine *e = engine(j->m, j->isa, 2);
    mlstack_generate_desc g;
    int32_t prompt[2] = {3, 4}, seq;
    j->n = -1;
    if (!e) return NULL;
    if (mlstack_engine_seq_new(e, &seq) == MLSTACK_OK) {
        memset(&g, 0, sizeof g);
        g.seq = seq, g.prompt = prompt, g.n_prompt = 2, g.max_tokens = 8, g.ignore_eos = 1;
        if (mlstack_generate(e, &g) == MLSTACK_OK) j->n = g.n_generated;
    }
    mlstack_engine_free(e);
    return NULL;
}
/* Engines of two kernel tables created and run at once on one model (BF16 weights: the SIMD
   tables read them from panels that the first such engine packs into the model; Q8_0 weights
   quantized at open: the SIMD engines give the rows back once packed while the scalar one holds
   them, re-derived from the panels, >>model). */
static void test_shared_model(void) {
    static const char *paths[2] = {"tests/fixtures/models/llama_bf16", "tests/fixtures/models/llama"};
    mlstack_model_desc md;
    mlstack_model *m = NULL;
    mlstack_error err;
    gen_job j[3];
    pthread_t t[3];
    int i, k;
    for (k = 0; k < 2; k++) {
        memset(&md, 0, sizeof md);
        md.path = paths[k];
        md.quant = k ? MLSTACK_DTYPE_Q8_0 : (mlstack_dtype)0;
        if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK) {
            CHECKF(0, "open: %s", err.message);
            return;
        }
        for (i = 0; i < 3; i++) {
            j[i].m = m;
            j[i].isa = i == 1 ? "scalar" : NULL;
            pthread_create(&t[i], NULL, gen_run, &j[i]);
        }
        for (i = 0; i < 3; i++) pthread_join(t[i], NULL);
        for (i = 0; i < 3; i++) CHECKF(j[i].n == 8, "%s: engine %d generated %d tokens", paths[k], i, j[i].n);
        mlstack_model_close(m);
    }
}

typedef struct {
    mlstack_tokenizer *t;
    const char *text;
    int32_t ids[256];
    size_t n;
    char back[1024];
    mlstack_result r;
} tok_job;
static void *tok_run(void *arg) {
    tok_job *j = (tok_job *)arg;
    size_t m;
    int rep;
    for (rep = 0; rep < 20; rep++) {
        j->r = mlstack_tokenizer_encode(j->t, j->text, strlen(j->text), 0, j->ids, 256, &j->n);
        if (j->r == MLSTACK_OK) j->r = mlstack_tokenizer_decode(j->t, j->ids, j->n, 0, j->back, sizeof j->back, &m);
        if (j->r != MLSTACK_OK) break;
    }
    return NULL;
}
static void test_tokenizer(void) {
    static const char *texts[4] = {"Hello world, this is a test.", "  spaces\tand\nnewlines  ",
                                   "Unicode: é, 日本語, 🙂!", "numbers 1234567 and symbols <>{}[]"};
    size_t len;
    char *json = tl_read(TOKENIZER, &len);
    mlstack_tokenizer *t = NULL;
    mlstack_error err;
    tok_job j[4];
    pthread_t th[4];
    int i;
    if (!json) {
        SKIP("%s missing (the shared tokenizers sit beside the repository)", TOKENIZER);
        return;
    }
    CHECKF(mlstack_tokenizer_load(json, len, NULL, 0, &t, &err) == MLSTACK_OK, "load: %s", err.message);
    for (i = 0; t && i < 4; i++) {
        j[i].t = t;
        j[i].text = texts[i];
        pthread_create(&th[i], NULL, tok_run, &j[i]);
    }
    for (i = 0; t && i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECKF(j[i].r == MLSTACK_OK && strcmp(j[i].back, texts[i]) == 0, "thread %d round trip: %s", i, j[i].back);
    }
    mlstack_tokenizer_close(t);
    free(json);
}

/* The pool: every task runs exactly once, and tasks of a held-up thread's share go to the
   others (thread 1 is held in each of its tasks until another thread has taken one of its
   share, 16..31: an event, not a nap, so a loaded machine that runs the others late cannot
   fail it; without stealing it gives up after 30 s, once). */
static int probe_gave_up;
typedef struct {
    int runs[64], by[64], stolen;
} pool_probe;
static void probe_task(void *ctx, int task, int n_tasks, int thread) {
    pool_probe *pp = (pool_probe *)ctx;
    (void)n_tasks;
    if (thread == 1) {
        double t0 = mlstack_clock_seconds();
        while (!__atomic_load_n(&pp->stolen, __ATOMIC_ACQUIRE) && !__atomic_load_n(&probe_gave_up, __ATOMIC_RELAXED))
            if (mlstack_clock_seconds() - t0 > 30) __atomic_store_n(&probe_gave_up, 1, __ATOMIC_RELAXED);
            else
                nap();
    } else if (task >= 16 && task < 32) {
        __atomic_store_n(&pp->stolen, 1, __ATOMIC_RELEASE);
    }
    __atomic_add_fetch(&pp->runs[task], 1, __ATOMIC_RELAXED);
    __atomic_store_n(&pp->by[task], thread, __ATOMIC_RELAXED);
}
static void test_pool(void) {
    mlstack__pool pool;
    int rep, t;
    CHECK(mlstack__pool_init(&pool, 4) == 0);
    for (rep = 0; rep < 3; rep++) {
        pool_probe pp;
        int once = 1, taken = 0;
        memset(&pp, 0, sizeof pp);
        mlstack__pool_run(&pool, probe_task, &pp, 64);
        for (t = 0; t < 64; t++) {
            once &= pp.runs[t] == 1;
            taken += t >= 16 && t < 32 && pp.by[t] != 1; /* thread 1's share: tasks 16..31 */
        }
        CHECKF(once, "pool run %d: a task ran other than once", rep);
        CHECKF(taken > 0, "pool run %d: no task of the held-up thread's share went to another thread", rep);
    }
    mlstack__pool_free(&pool);
}

int main(void) {
    mlstack_model_desc md;
    mlstack_model *m = NULL;
    mlstack_error err;
    memset(&md, 0, sizeof md);
    md.path = FIXTURE;
    if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK) {
        printf("open %s: %s\n", FIXTURE, err.message);
        return 1;
    }
    test_serving(m);
    mlstack_model_close(m);
    test_shared_model();
    test_tokenizer();
    test_pool();
    return tl_finish();
}
