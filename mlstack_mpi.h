/* mlstack_mpi.h - ranks over MPI for mlstack.h (optional companion header) - MIT, see mlstack.h

   A mlstack_transport over an MPI communicator, so that the ranks of one engine (section RANKS
   of mlstack.h) run as MPI processes on one machine or many. Needs mpi.h (Open MPI, MPICH);
   everything here is static, so include it in any number of files; mlstack.h's implementation
   is made where MLSTACK_IMPLEMENTATION is defined, as usual.

       MPI_Init(&argc, &argv);
       mlstack_transport t;
       mlstack_mpi_transport(MPI_COMM_WORLD, &t);        // rank and size from the communicator
       ed.transport = &t;                                // every rank opens the same model
       mlstack_engine_init(model, &ed, &eng, &err);      // collective: ranks compare the model
       if (mlstack_engine_rank(eng) != 0) r = mlstack_engine_follow(eng);   // until rank 0 frees
       else ...drive the engine as usual...
       mlstack_engine_free(eng); mlstack_mpi_finalize(&t, 1);   // MPI_Finalize, or MPI_Abort after a failure

   Only MPI_BYTE moves: rank 0's step description (bcast), finished slices of activations and
   logits (gatherv / allgatherv), in reduce mode blocks of partial sums (alltoallv), which
   mlstack adds itself in rank order, and with pipeline stages (n_stages) the residual stream
   from a stage's rank to the next stage's and the last stage's logits to rank 0 (send / recv);
   stages of several ranks run their exchanges on a communicator of their own (MPI_Comm_split). Nothing is ever reduced in MPI, so results are bit-equal to
   the thread transport of mlstack.h (and, in gather mode, to one rank).
   Failures: the communicator's errors return instead of aborting; a collective that has not
   completed after MLSTACK_MPI_TIMEOUT seconds (environment variable, default 10) inside a step
   fails with a message naming the operation, so a rank whose peer died or hangs returns an error
   instead of waiting forever (with pipeline stages a receive waits for the earlier stages'
   layers of a prefill chunk: set the timeout above that on a large model). Waiting for the next
   step (followers between steps) has no time limit: an idle server is not a failure. abort() calls MPI_Abort on the communicator.
   After a failed exchange the job is broken: MPI_Finalize waits for every rank, so a peer that
   stopped answering (SIGSTOP, a hung machine) would hold this process forever after it has
   reported the failure. End with mlstack_mpi_finalize, which calls MPI_Abort instead once any
   exchange of the transport (or of a stage communicator split from it) has failed
   (mlstack_mpi_transport_failed), so every exit is bounded. */
#ifndef MLSTACK_MPI_H
#define MLSTACK_MPI_H

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "mlstack.h"

#if defined(__GNUC__)
#define MLSTACK_MPI__API static __attribute__((unused))
#else
#define MLSTACK_MPI__API static
#endif

typedef struct mlstack_mpi__ctx {
    MPI_Comm comm;
    int owns; /* made by split: freed by close */
    int size, rank;
    int *counts, *displs;
    double timeout;
    int *failed;    /* set by any failed exchange; split communicators share their parent's */
    int failed_own; /* the transport's own flag (what failed points at, but in split ones) */
} mlstack_mpi__ctx;

static double mlstack_mpi__now(void) { return MPI_Wtime(); }
static int mlstack_mpi__broken(mlstack_mpi__ctx *c) {
    *c->failed = 1;
    return -1;
}

/* Completes req, polling; fails after `timeout` seconds (0: never). */
static int mlstack_mpi__wait(mlstack_mpi__ctx *c, MPI_Request *req, double timeout, const char *what, char *msg, size_t cap) {
    double t0 = mlstack_mpi__now();
    long spins = 0;
    for (;;) {
        int done = 0, rc = MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            char es[MPI_MAX_ERROR_STRING];
            int n = 0;
            MPI_Error_string(rc, es, &n);
            snprintf(msg, cap, "rank %d: MPI %s failed: %s", c->rank, what, es);
            return mlstack_mpi__broken(c);
        }
        if (done) return 0;
        if (++spins > 20000) { /* a step's exchanges normally finish in microseconds: then back off */
            struct timespec ts = {0, 50000};
            nanosleep(&ts, NULL);
            if (timeout > 0 && mlstack_mpi__now() - t0 > timeout) {
                snprintf(msg, cap,
                         "rank %d: MPI %s did not complete in %.0f s: another rank died or stopped answering", c->rank, what,
                         timeout);
                return mlstack_mpi__broken(c);
            }
        }
    }
}

static int mlstack_mpi__bcast(void *user, void *buf, size_t bytes, char *msg, size_t cap) {
    mlstack_mpi__ctx *c = (mlstack_mpi__ctx *)user;
    MPI_Request req;
    if (bytes > (size_t)INT_MAX) {
        snprintf(msg, cap, "rank %d: broadcast of %zu bytes is too large for MPI", c->rank, bytes);
        return -1;
    }
    if (MPI_Ibcast(buf, (int)bytes, MPI_BYTE, 0, c->comm, &req) != MPI_SUCCESS) {
        snprintf(msg, cap, "rank %d: MPI_Ibcast failed", c->rank);
        return mlstack_mpi__broken(c);
    }
    /* followers wait for the next step without limit; rank 0's own send completes locally */
    return mlstack_mpi__wait(c, &req, 0, "broadcast", msg, cap);
}

static int mlstack_mpi__gatherv(void *user, const void *send, size_t bytes, void *recv, const size_t *counts,
                                const size_t *displs, int all, char *msg, size_t cap) {
    mlstack_mpi__ctx *c = (mlstack_mpi__ctx *)user;
    MPI_Request req;
    int i, rc;
    for (i = 0; i < c->size; i++) {
        if (counts[i] > (size_t)INT_MAX || displs[i] > (size_t)INT_MAX) {
            snprintf(msg, cap, "rank %d: exchange of %zu bytes is too large for MPI", c->rank, counts[i]);
            return -1;
        }
        c->counts[i] = (int)counts[i];
        c->displs[i] = (int)displs[i];
    }
    if (all)
        rc = MPI_Iallgatherv(send, (int)bytes, MPI_BYTE, recv, c->counts, c->displs, MPI_BYTE, c->comm, &req);
    else
        rc = MPI_Igatherv(send, (int)bytes, MPI_BYTE, recv, c->counts, c->displs, MPI_BYTE, 0, c->comm, &req);
    if (rc != MPI_SUCCESS) {
        snprintf(msg, cap, "rank %d: MPI %s failed to start", c->rank, all ? "allgatherv" : "gatherv");
        return mlstack_mpi__broken(c);
    }
    return mlstack_mpi__wait(c, &req, c->timeout, all ? "allgatherv" : "gatherv", msg, cap);
}

/* Reduce mode's reduce-scatter: blocks of partial sums move, as bytes; the adding is mlstack's. */
static int mlstack_mpi__alltoallv(void *user, const void *send, const size_t *scounts, const size_t *sdispls, void *recv,
                                  const size_t *rcounts, const size_t *rdispls, char *msg, size_t cap) {
    mlstack_mpi__ctx *c = (mlstack_mpi__ctx *)user;
    int *sc = c->counts + 2 * c->size, *sd = sc + c->size, i;
    MPI_Request req;
    for (i = 0; i < c->size; i++) {
        if (scounts[i] > (size_t)INT_MAX || sdispls[i] > (size_t)INT_MAX || rcounts[i] > (size_t)INT_MAX ||
            rdispls[i] > (size_t)INT_MAX) {
            snprintf(msg, cap, "rank %d: exchange of %zu bytes is too large for MPI", c->rank, scounts[i]);
            return -1;
        }
        sc[i] = (int)scounts[i], sd[i] = (int)sdispls[i];
        c->counts[i] = (int)rcounts[i], c->displs[i] = (int)rdispls[i];
    }
    if (MPI_Ialltoallv(send, sc, sd, MPI_BYTE, recv, c->counts, c->displs, MPI_BYTE, c->comm, &req) != MPI_SUCCESS) {
        snprintf(msg, cap, "rank %d: MPI alltoallv failed to start", c->rank);
        return mlstack_mpi__broken(c);
    }
    return mlstack_mpi__wait(c, &req, c->timeout, "alltoallv", msg, cap);
}

/* Pipeline stages: the residual stream from stage to stage, logits to rank 0 (tag 1, matched in
   order between each pair). */
static int mlstack_mpi__p2p(mlstack_mpi__ctx *c, int send, void *buf, size_t bytes, int peer, char *msg, size_t cap) {
    MPI_Request req;
    int rc;
    if (bytes > (size_t)INT_MAX || peer < 0 || peer >= c->size) {
        snprintf(msg, cap, "rank %d: %s of %zu bytes with rank %d is not possible in MPI", c->rank,
                 send ? "send" : "receive", bytes, peer);
        return -1;
    }
    rc = send ? MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, 1, c->comm, &req)
              : MPI_Irecv(buf, (int)bytes, MPI_BYTE, peer, 1, c->comm, &req);
    if (rc != MPI_SUCCESS) {
        snprintf(msg, cap, "rank %d: MPI %s failed to start", c->rank, send ? "send" : "receive");
        return mlstack_mpi__broken(c);
    }
    return mlstack_mpi__wait(c, &req, c->timeout, send ? "send to the next stage" : "receive from another stage", msg,
                             cap);
}
static int mlstack_mpi__send(void *user, const void *buf, size_t bytes, int to, char *msg, size_t cap) {
    return mlstack_mpi__p2p((mlstack_mpi__ctx *)user, 1, (void *)(uintptr_t)buf, bytes, to, msg, cap);
}
static int mlstack_mpi__recv(void *user, void *buf, size_t bytes, int from, char *msg, size_t cap) {
    return mlstack_mpi__p2p((mlstack_mpi__ctx *)user, 0, buf, bytes, from, msg, cap);
}

static int mlstack_mpi__fill(MPI_Comm comm, double timeout, int owns, int *failed, mlstack_transport *t);

/* A stage's ranks: MPI_Comm_split of the communicator; close frees the new one. */
static int mlstack_mpi__split(void *user, int color, int key, mlstack_transport *out, char *msg, size_t cap) {
    mlstack_mpi__ctx *c = (mlstack_mpi__ctx *)user;
    MPI_Comm sub;
    if (MPI_Comm_split(c->comm, color, key, &sub) != MPI_SUCCESS) {
        snprintf(msg, cap, "rank %d: MPI_Comm_split failed", c->rank);
        return mlstack_mpi__broken(c);
    }
    if (mlstack_mpi__fill(sub, c->timeout, 1, c->failed, out) != 0) {
        MPI_Comm_free(&sub);
        snprintf(msg, cap, "rank %d: out of memory for a stage's transport", c->rank);
        return -1;
    }
    return 0;
}

static void mlstack_mpi__abort(void *user, const char *why) {
    mlstack_mpi__ctx *c = (mlstack_mpi__ctx *)user;
    fprintf(stderr, "mlstack (rank %d): %s\n", c->rank, why ? why : "aborting");
    fflush(stderr);
    MPI_Abort(c->comm, 1);
}

/* Fills t for comm. Returns 0, or -1 (MPI not initialised, or out of memory). Free with
   mlstack_mpi_transport_free after the engines that use it. */
static void mlstack_mpi__close(void *user) {
    mlstack_mpi__ctx *c = (mlstack_mpi__ctx *)user;
    if (!c) return;
    if (c->owns) MPI_Comm_free(&c->comm);
    free(c->counts);
    free(c);
}

MLSTACK_MPI__API int mlstack_mpi_transport(MPI_Comm comm, mlstack_transport *t) {
    const char *to = getenv("MLSTACK_MPI_TIMEOUT");
    int init = 0;
    memset(t, 0, sizeof *t);
    if (MPI_Initialized(&init) != MPI_SUCCESS || !init) return -1;
    return mlstack_mpi__fill(comm, to && atof(to) > 0 ? atof(to) : 10.0, 0, NULL, t);
}

static int mlstack_mpi__fill(MPI_Comm comm, double timeout, int owns, int *failed, mlstack_transport *t) {
    mlstack_mpi__ctx *c;
    memset(t, 0, sizeof *t);
    c = (mlstack_mpi__ctx *)calloc(1, sizeof *c);
    if (!c) return -1;
    c->comm = comm;
    c->owns = owns;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    MPI_Comm_size(comm, &c->size);
    MPI_Comm_rank(comm, &c->rank);
    c->counts = (int *)calloc((size_t)c->size * 4, sizeof(int)); /* counts, displs; alltoallv's send pair */
    if (!c->counts) {
        free(c);
        return -1;
    }
    c->displs = c->counts + c->size;
    c->timeout = timeout;
    c->failed = failed ? failed : &c->failed_own;
    t->rank = c->rank;
    t->size = c->size;
    t->user = c;
    t->bcast = mlstack_mpi__bcast;
    t->gatherv = mlstack_mpi__gatherv;
    t->abort = mlstack_mpi__abort;
    t->alltoallv = mlstack_mpi__alltoallv;
    t->send = mlstack_mpi__send;
    t->recv = mlstack_mpi__recv;
    t->split = mlstack_mpi__split;
    t->close = mlstack_mpi__close;
    return 0;
}

MLSTACK_MPI__API void mlstack_mpi_transport_free(mlstack_transport *t) {
    if (!t || !t->user) return;
    mlstack_mpi__close(t->user);
    t->user = NULL;
}

/* Non-zero once an exchange of t (or of a stage communicator split from it) has failed: a peer
   died, stopped answering or disagreed, and the job cannot end collectively. */
MLSTACK_MPI__API int mlstack_mpi_transport_failed(const mlstack_transport *t) {
    return t && t->user && *((const mlstack_mpi__ctx *)t->user)->failed;
}

/* Ends MPI for this process, in bounded time: frees t (after the engines that use it), then
   MPI_Finalize when every exchange succeeded, or, after a failure, MPI_Abort with `code` (it does
   not return: mpirun ends every rank, a stopped one included). MPI already finalized: only frees.
   Safe from an atexit handler. */
MLSTACK_MPI__API void mlstack_mpi_finalize(mlstack_transport *t, int code) {
    int done = 0, failed = mlstack_mpi_transport_failed(t);
    MPI_Comm comm = t && t->user ? ((mlstack_mpi__ctx *)t->user)->comm : MPI_COMM_WORLD;
    MPI_Finalized(&done);
    if (done) {
        mlstack_mpi_transport_free(t);
        return;
    }
    if (failed) {
        fprintf(stderr, "mlstack (rank %d): an MPI exchange failed earlier; aborting the job instead of finalizing\n",
                t->rank);
        fflush(stderr);
        MPI_Abort(comm, code ? code : 1);
    }
    mlstack_mpi_transport_free(t);
    MPI_Finalize();
}

#endif /* MLSTACK_MPI_H */
