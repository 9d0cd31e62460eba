/* Ranks over MPI (mlstack_mpi.h), run by tests/mpi/run_mpi.sh under mpirun. Every rank opens
   the model given; rank 0 drives, the others follow.
     test_mpi MODEL             logits of a 40-token prefill and 64 decode steps memcmp-equal to
                                thread ranks of the same count (and to one rank); 8 concurrent
                                requests sharing prefixes give the same tokens as one rank, with
                                prefix-cache hits; in reduce mode, logits memcmp-equal to thread
                                ranks in reduce mode, within 1e-4 x max|logit| of one rank; with an
                                even rank count, 2 pipeline stages (a 2 x 2 mesh with 4 ranks): logits
                                memcmp-equal to thread ranks in 2 stages and to one rank, and the 8
                                requests give one rank's tokens.
                                Rank 0 prints "N passed, N failed".
     test_mpi MODEL --other M2  ranks other than 0 open M2: every rank must refuse at start
                                (exit 3 with the message)
     test_mpi MODEL --mixed     ranks other than 0 ask for reduce mode, rank 0 for gather: every
                                rank must refuse at start (exit 3 with the message)
     test_mpi MODEL --kill F    rank 1 writes its pid to F; rank 0 decodes until it fails (the
                                script kills rank 1) and exits 4 with the message
     test_mpi MODEL --stop F    as --kill, but the script stops rank 1 (SIGSTOP) and rank 0 ends
                                the way a program does after reporting the failure: engine and
                                model freed, then mlstack_mpi_finalize (which must abort, not
                                wait in MPI_Finalize for the stopped rank forever) */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "mlstack_mpi.h"
#include "../testlib.h"
#include <unistd.h>

#define N_PROMPT 40
#define N_DECODE 64

static int argmax(const float *x, int n) {
    int i, b = 0;
    for (i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

static mlstack_rank_mode mode; /* of the engines engine() makes */
static int stages; /* of the engines of more than one rank engine() makes (0: one, or MLSTACK_STAGES) */

static mlstack_engine *engine(mlstack_model *m, const mlstack_transport *t, int R, int max_seqs, int step_tokens) {
    mlstack_engine_desc d;
    mlstack_engine *e = NULL;
    mlstack_error err;
    memset(&d, 0, sizeof d);
    d.n_threads = t ? 1 : R;
    d.n_ranks = R;
    d.threads_per_rank = 1;
    d.transport = t;
    d.max_seqs = max_seqs;
    d.step_tokens = step_tokens;
    d.rank_mode = mode;
    d.n_stages = R > 1 ? stages : 1;
    if (mlstack_engine_init(m, &d, &e, &err) != MLSTACK_OK) {
        fprintf(stderr, "rank %d: %s\n", t ? t->rank : 0, err.message);
        return NULL;
    }
    return e;
}

/* Prefill + decode (rank 0), logits into out ((N_PROMPT + N_DECODE) x V). */
static int run(mlstack_engine *e, int V, float *out) {
    mlstack_batch_row rows[N_PROMPT];
    int32_t seq, tok;
    int i;
    mlstack_engine_seq_new(e, &seq);
    for (i = 0; i < N_PROMPT; i++) rows[i].seq = seq, rows[i].pos = i, rows[i].token = (i * 7919 + 13) % V, rows[i].want_logits = 1;
    if (mlstack_engine_eval(e, rows, N_PROMPT) != MLSTACK_OK) return -1;
    for (i = 0; i < N_PROMPT; i++) memcpy(out + (size_t)i * V, mlstack_engine_logits(e, i), sizeof(float) * (size_t)V);
    tok = argmax(out + (size_t)(N_PROMPT - 1) * V, V);
    for (i = 0; i < N_DECODE; i++) {
        mlstack_batch_row r;
        r.seq = seq, r.pos = N_PROMPT + i, r.token = tok, r.want_logits = 1;
        if (mlstack_engine_eval(e, &r, 1) != MLSTACK_OK) return -1;
        memcpy(out + (size_t)(N_PROMPT + i) * V, mlstack_engine_logits(e, 0), sizeof(float) * (size_t)V);
        tok = argmax(out + (size_t)(N_PROMPT + i) * V, V);
    }
    return 0;
}

/* 8 requests (4 prompts twice, a shared 32-token prefix, one sampled), tokens into out. */
static int serve(mlstack_engine *e, int V, int32_t out[8][16], uint64_t *hits) {
    mlstack_cache_stats st;
    uint64_t id[8];
    int i, j, n_active = 1;
    for (i = 0; i < 8; i++) {
        int32_t p[48];
        mlstack_request_desc rd;
        for (j = 0; j < 48; j++) p[j] = (int32_t)(j < 32 ? (j * 31 + 5) % V : ((i / 2) * 97 + j * 13) % V);
        memset(&rd, 0, sizeof rd);
        rd.prompt = p;
        rd.n_prompt = 40 + (i / 2) * 2;
        rd.max_tokens = 16;
        rd.ignore_eos = 1;
        if (i == 7) rd.sampler.temperature = 0.8f, rd.sampler.seed = 7;
        if (mlstack_engine_submit(e, &rd, &id[i], NULL) != MLSTACK_OK) return -1;
        if (i == 3)
            for (j = 0; j < 4; j++) mlstack_engine_step(e, &n_active);
    }
    while (n_active)
        if (mlstack_engine_step(e, &n_active) != MLSTACK_OK) return -1;
    for (i = 0; i < 8; i++) {
        mlstack_request_status rs;
        if (mlstack_engine_poll(e, id[i], &rs, out[i], 16) != MLSTACK_OK || rs.n_generated != 16) return -1;
    }
    mlstack_engine_cache_stats(e, &st);
    *hits = st.hit_tokens;
    return 0;
}

int main(int argc, char **argv) {
    mlstack_transport t;
    mlstack_model *m = NULL;
    mlstack_model_desc md;
    mlstack_model_info mi;
    mlstack_error err;
    mlstack_engine *e;
    int rank, size, rc = 0;
    const char *other = argc > 3 && strcmp(argv[2], "--other") == 0 ? argv[3] : NULL;
    int stop = argc > 3 && strcmp(argv[2], "--stop") == 0;
    const char *killfile = argc > 3 && (stop || strcmp(argv[2], "--kill") == 0) ? argv[3] : NULL;
    int mixed = argc > 2 && strcmp(argv[2], "--mixed") == 0;
    MPI_Init(&argc, &argv);
    if (argc < 2 || mlstack_mpi_transport(MPI_COMM_WORLD, &t) != 0) {
        fprintf(stderr, "usage: mpirun -np N test_mpi MODEL [--other MODEL2 | --kill PIDFILE]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    rank = t.rank, size = t.size;
    memset(&md, 0, sizeof md);
    md.path = other && rank > 0 ? other : argv[1];
    if (mlstack_model_open(&md, &m, &err) != MLSTACK_OK) t.abort(t.user, err.message);
    mlstack_model_get_info(m, &mi);
    if (mixed) { /* modes differ: refused at start on every rank */
        mode = rank > 0 ? MLSTACK_RANK_REDUCE : MLSTACK_RANK_GATHER;
        e = engine(m, &t, size, 4, 0);
        rc = e ? 0 : 3;
        mlstack_engine_free(e);
    } else if (other) { /* must be refused at start on every rank */
        e = engine(m, &t, size, 4, 0);
        rc = e ? 0 : 3;
        mlstack_engine_free(e);
    } else if (killfile) {
        e = engine(m, &t, size, 4, 0);
        if (!e) t.abort(t.user, "engine");
        if (rank == 1) {
            FILE *f = fopen(killfile, "w");
            if (f) fprintf(f, "%d\n", (int)getpid()), fclose(f);
        }
        if (rank != 0) {
            rc = mlstack_engine_follow(e) == MLSTACK_OK ? 0 : 4;
        } else {
            float *lg = (float *)malloc(sizeof(float) * (size_t)(N_PROMPT + N_DECODE) * (size_t)mi.n_vocab);
            int i;
            for (i = 0; i < 100000 && rc == 0; i++) { /* decode until the killed rank makes it fail */
                mlstack_batch_row r;
                int32_t seq;
                if (i % 8 == 0 && i) mlstack_engine_seq_free(e, 0);
                if (i % 8 == 0) mlstack_engine_seq_new(e, &seq);
                r.seq = 0, r.pos = i % 8, r.token = 1, r.want_logits = 1;
                if (mlstack_engine_eval(e, &r, 1) != MLSTACK_OK) {
                    fprintf(stderr, "rank 0: eval failed: %s\n", mlstack_engine_error(e));
                    rc = 4;
                }
                if (i == 20) fprintf(stderr, "rank 0: decoding\n");
                usleep(2000);
            }
            free(lg);
        }
        if (rc && !stop) t.abort(t.user, "a rank failed; ending the job");
        mlstack_engine_free(e);
    } else {
        size_t n = (size_t)(N_PROMPT + N_DECODE) * (size_t)mi.n_vocab;
        float *a = rank == 0 ? (float *)malloc(sizeof(float) * n) : NULL, *b = rank == 0 ? (float *)malloc(sizeof(float) * n) : NULL;
        int32_t ta[8][16], tb[8][16];
        uint64_t ha = 0, hb = 0;
        /* collective engine 1: logits */
        e = engine(m, &t, size, 4, 0);
        if (!e) t.abort(t.user, "engine");
        if (rank != 0) {
            rc |= mlstack_engine_follow(e) != MLSTACK_OK;
        } else {
            mlstack_engine *te = engine(m, NULL, size, 4, 0), *one = engine(m, NULL, 1, 4, 0);
            mlstack_rank_info ri;
            CHECKF(run(e, mi.n_vocab, a) == 0, "MPI run: %s", mlstack_engine_error(e));
            CHECK(te && run(te, mi.n_vocab, b) == 0);
            CHECKF(memcmp(a, b, sizeof(float) * n) == 0, "%s: %d MPI ranks differ from %d thread ranks", argv[1], size, size);
            CHECK(one && run(one, mi.n_vocab, b) == 0);
            CHECKF(memcmp(a, b, sizeof(float) * n) == 0, "%s: %d MPI ranks differ from one rank", argv[1], size);
            CHECK(mlstack_engine_rank_info(e, 0, &ri) == MLSTACK_OK && ri.n_ranks == size && ri.bytes_in > 0);
            CHECK(mlstack_engine_rank_info(e, 1, &ri) == MLSTACK_ERR_INVALID_ARG);
            mlstack_engine_free(te);
            mlstack_engine_free(one);
        }
        mlstack_engine_free(e);
        /* collective engine 2: serving */
        e = engine(m, &t, size, 8, 24);
        if (!e) t.abort(t.user, "engine");
        if (rank != 0) {
            rc |= mlstack_engine_follow(e) != MLSTACK_OK;
        } else {
            mlstack_engine *one = engine(m, NULL, 1, 8, 24);
            memset(ta, 0, sizeof ta);
            memset(tb, 1, sizeof tb);
            CHECKF(serve(e, mi.n_vocab, ta, &ha) == 0, "MPI serve: %s", mlstack_engine_error(e));
            CHECK(one && serve(one, mi.n_vocab, tb, &hb) == 0);
            CHECKF(memcmp(ta, tb, sizeof ta) == 0, "%s: 8 requests over %d MPI ranks give other tokens than one rank", argv[1], size);
            CHECKF(ha > 0 && ha == hb, "prefix-cache hits %llu (MPI) vs %llu", (unsigned long long)ha, (unsigned long long)hb);
            mlstack_engine_free(one);
        }
        mlstack_engine_free(e);
        /* collective engine 3: reduce mode */
        mode = MLSTACK_RANK_REDUCE;
        e = engine(m, &t, size, 4, 0);
        if (!e) t.abort(t.user, "engine");
        if (rank != 0) {
            rc |= mlstack_engine_follow(e) != MLSTACK_OK;
        } else {
            mlstack_engine *te = engine(m, NULL, size, 4, 0), *one;
            size_t k;
            double dmax = 0, lmax = 0;
            mlstack_rank_info ri;
            CHECKF(run(e, mi.n_vocab, a) == 0, "MPI reduce run: %s", mlstack_engine_error(e));
            CHECK(te && run(te, mi.n_vocab, b) == 0);
            CHECKF(memcmp(a, b, sizeof(float) * n) == 0, "%s: reduce mode: %d MPI ranks differ from %d thread ranks",
                   argv[1], size, size);
            CHECK(mlstack_engine_rank_info(e, 0, &ri) == MLSTACK_OK && ri.bytes_in > 0);
            mlstack_engine_free(te);
            mode = MLSTACK_RANK_DEFAULT;
            one = engine(m, NULL, 1, 4, 0);
            CHECK(one && run(one, mi.n_vocab, b) == 0);
            for (k = 0; k < n; k++) {
                double dd = a[k] > b[k] ? a[k] - b[k] : b[k] - a[k];
                dmax = dd > dmax ? dd : dmax;
                lmax = b[k] > lmax ? b[k] : -b[k] > lmax ? -b[k] : lmax;
            }
            /* rounding differences grow with depth: the fixtures (2 layers) 1e-4, deeper models 1e-3 */
            CHECKF(dmax <= (mi.n_layers <= 4 ? 1e-4 : 1e-3) * lmax, "%s: reduce mode: %g off one rank (max|logit| %g)",
                   argv[1], dmax, lmax);
            mlstack_engine_free(one);
        }
        mode = MLSTACK_RANK_DEFAULT;
        mlstack_engine_free(e);
        if (size % 2 == 0) { /* collective engines 4 and 5: 2 pipeline stages of size / 2 ranks */
            stages = 2;
            e = engine(m, &t, size, 4, 0);
            if (!e) t.abort(t.user, "engine");
            if (rank != 0) {
                rc |= mlstack_engine_follow(e) != MLSTACK_OK;
            } else {
                mlstack_engine *te = engine(m, NULL, size, 4, 0), *one = engine(m, NULL, 1, 4, 0);
                mlstack_rank_info ri;
                CHECKF(run(e, mi.n_vocab, a) == 0, "MPI stages run: %s", mlstack_engine_error(e));
                CHECK(te && run(te, mi.n_vocab, b) == 0);
                CHECKF(memcmp(a, b, sizeof(float) * n) == 0, "%s: %d MPI ranks in 2 stages differ from thread ranks",
                       argv[1], size);
                CHECK(one && run(one, mi.n_vocab, b) == 0);
                CHECKF(memcmp(a, b, sizeof(float) * n) == 0, "%s: %d MPI ranks in 2 stages differ from one rank",
                       argv[1], size);
                CHECK(mlstack_engine_rank_info(e, 0, &ri) == MLSTACK_OK && ri.n_stages == 2 && ri.stage == 0 &&
                      ri.layer0 == 0 && ri.bytes_in > 0);
                { /* the same layer split as thread ranks */
                    mlstack_rank_info tri;
                    CHECK(te && mlstack_engine_rank_info(te, 0, &tri) == MLSTACK_OK && ri.layer1 == tri.layer1 &&
                          ri.layer1 > 0 && ri.layer1 < mi.n_layers);
                }
                mlstack_engine_free(te);
                mlstack_engine_free(one);
            }
            mlstack_engine_free(e);
            e = engine(m, &t, size, 8, 24);
            if (!e) t.abort(t.user, "engine");
            if (rank != 0) {
                rc |= mlstack_engine_follow(e) != MLSTACK_OK;
            } else {
                mlstack_engine *one = engine(m, NULL, 1, 8, 24);
                memset(ta, 0, sizeof ta);
                memset(tb, 1, sizeof tb);
                CHECKF(serve(e, mi.n_vocab, ta, &ha) == 0, "MPI stages serve: %s", mlstack_engine_error(e));
                CHECK(one && serve(one, mi.n_vocab, tb, &hb) == 0);
                CHECKF(memcmp(ta, tb, sizeof ta) == 0, "%s: 8 requests over %d MPI ranks in 2 stages give other tokens",
                       argv[1], size);
                CHECKF(ha > 0 && ha == hb, "stages: prefix-cache hits %llu (MPI) vs %llu", (unsigned long long)ha,
                       (unsigned long long)hb);
                mlstack_engine_free(one);
            }
            mlstack_engine_free(e);
            stages = 0;
        }
        free(a);
        free(b);
        if (rank == 0) rc = tl_finish();
    }
    mlstack_model_close(m);
    mlstack_mpi_finalize(&t, rc ? rc : 1); /* MPI_Abort after a failed exchange: a stopped rank never finalizes */
    return rc;
}
