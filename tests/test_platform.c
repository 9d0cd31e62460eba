/* The platform layer (>>platform) on whatever host runs it: POSIX or Win32 (under Wine in make
   test), 64- or 32-bit. UTF-8 paths through every file call (on Windows a name outside the ANSI
   code page only survives the wide calls), files beyond a 32-bit address space refused with a
   clear message, the thread pool and locks, timers and CPU counts. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"

#define DIR_U8 "build/tmp_platform_\xc3\xa9\xe2\x9c\x93"     /* e-acute, check mark */
#define FILE_U8 DIR_U8 "/f\xc3\xbc\xe2\x82\xac.json"        /* u-umlaut, euro sign */

/* remove() and rmdir() of a UTF-8 path */
static int rm_u8(const char *path, int dir) {
#if defined(_WIN32)
    wchar_t *w = dir ? mlstack__wpath(path) : NULL;
    int ok = dir ? w != NULL && RemoveDirectoryW(w) != 0 : mlstack__remove(path) == 0;
    MLSTACK_FREE(w);
    return ok ? 0 : -1;
#else
    return dir ? rmdir(path) : mlstack__remove(path);
#endif
}

static void test_utf8_paths(void) {
    static const char body[] = "{\"x\": 1}";
    mlstack_error err;
    mlstack__map m;
    mlstack__dir *d;
    const char *name;
    char *text = NULL;
    size_t len = 0;
    int found = 0;
    FILE *f;
    mlstack__mkdir("build");
    CHECK(mlstack__mkdir(DIR_U8) == 0);
    CHECK(mlstack__mkdir(DIR_U8) == 0); /* already there is fine */
    f = mlstack__fopen(FILE_U8, "wb");
    CHECK(f != NULL);
    if (!f) return;
    fputs(body, f);
    fclose(f);
    CHECK(mlstack__file_exists(FILE_U8));
    CHECK(!mlstack__file_exists(DIR_U8)); /* a folder is not a file */
    CHECK(!mlstack__file_exists(DIR_U8 "/missing.json"));
    CHECK(mlstack__read_file(FILE_U8, 1024, &text, &len, &err) == MLSTACK_OK && len == strlen(body) &&
          memcmp(text, body, len) == 0);
    MLSTACK_FREE(text);
    CHECKF(mlstack__map_open(&m, FILE_U8, &err) == MLSTACK_OK && m.size == strlen(body) &&
               memcmp(m.data, body, m.size) == 0,
           "map: %s", err.message);
    mlstack__map_close(&m);
    CHECK(m.data == NULL);
    d = mlstack__dir_open(DIR_U8);
    CHECK(d != NULL);
    while (d && (name = mlstack__dir_next(d)) != NULL) found += strcmp(name, "f\xc3\xbc\xe2\x82\xac.json") == 0;
    mlstack__dir_close(d);
    CHECKF(found == 1, "the UTF-8 name came back from the listing %d times", found);
    /* errors name the file and say what went wrong */
    CHECK(mlstack__map_open(&m, DIR_U8 "/missing.json", &err) == MLSTACK_ERR_IO &&
          strstr(err.message, "missing.json") != NULL);
    CHECK(mlstack__map_open(&m, DIR_U8, &err) != MLSTACK_OK && m.data == NULL);
    CHECK(mlstack__map_open(&m, "build/tmp_platform_\xff\xfe/x", &err) == MLSTACK_ERR_IO); /* not UTF-8 */
    f = mlstack__fopen(DIR_U8 "/empty", "wb");
    if (f) fclose(f);
    CHECK(mlstack__map_open(&m, DIR_U8 "/empty", &err) == MLSTACK_ERR_FORMAT &&
          strstr(err.message, "empty file") != NULL);
    CHECK(rm_u8(DIR_U8 "/empty", 0) == 0);
    /* same file by identity, not spelling; a rename replaces an existing file (Windows too) */
    f = mlstack__fopen(DIR_U8 "/new.tmp", "wb");
    if (f) fputs("new", f), fclose(f);
    CHECK(mlstack__same_file(FILE_U8, DIR_U8 "/./f\xc3\xbc\xe2\x82\xac.json"));
    CHECK(mlstack__same_file(DIR_U8, DIR_U8 "/."));
    CHECK(!mlstack__same_file(FILE_U8, DIR_U8 "/new.tmp"));
    CHECK(!mlstack__same_file(FILE_U8, DIR_U8 "/missing.json"));
    CHECK(mlstack__rename(DIR_U8 "/new.tmp", FILE_U8) == 0 && !mlstack__file_exists(DIR_U8 "/new.tmp"));
    text = NULL;
    CHECK(mlstack__read_file(FILE_U8, 1024, &text, &len, &err) == MLSTACK_OK && len == 3 &&
          memcmp(text, "new", 3) == 0);
    MLSTACK_FREE(text);
    CHECK(mlstack__remove(DIR_U8 "/missing.json") != 0);
    /* temporary files for whole-file writes: beside the name, a new name each time (created
       with O_EXCL: never an existing file or link), renamed over the target */
    {
        char *t1 = NULL, *t2 = NULL;
        FILE *f1 = mlstack__tmp_create(FILE_U8, &t1), *f2 = mlstack__tmp_create(FILE_U8, &t2);
        size_t pl = strlen(FILE_U8);
        CHECK(f1 && f2 && t1 && t2 && strcmp(t1, t2) != 0 && strncmp(t1, FILE_U8 ".tmp-", pl + 5) == 0 &&
              strlen(t1) == pl + 17);
        if (f1) fputs("tmp", f1), fclose(f1);
        if (f2) fclose(f2);
        CHECK(t1 && mlstack__rename(t1, FILE_U8) == 0);
        text = NULL;
        CHECK(mlstack__read_file(FILE_U8, 1024, &text, &len, &err) == MLSTACK_OK && len == 3 &&
              memcmp(text, "tmp", 3) == 0);
        MLSTACK_FREE(text);
        CHECK(t2 && mlstack__remove(t2) == 0);
        MLSTACK_FREE(t1);
        MLSTACK_FREE(t2);
        CHECK(mlstack__tmp_create(DIR_U8 "/no-such-folder/x", &t1) == NULL && t1 == NULL && errno == ENOENT);
    }
    CHECK(rm_u8(FILE_U8, 0) == 0 && rm_u8(DIR_U8, 1) == 0);
}

/* A file larger than this build can map is refused before mapping, with a message that says so;
   on a 32-bit host a real (sparse) 2 GiB + 1 file shows it end to end. */
static void test_address_space(void) {
    mlstack_error err;
    uint64_t too_big = (uint64_t)(SIZE_MAX / 2) + 1;
    err.message[0] = 0;
    CHECKF(mlstack__map_check("big.safetensors", too_big, &err) == MLSTACK_ERR_LIMIT &&
               strstr(err.message, "big.safetensors") && strstr(err.message, "more than this") &&
               strstr(err.message, "-bit build can map"),
           "%s", err.message);
    CHECK(mlstack__map_check("ok.safetensors", too_big - 1, &err) == MLSTACK_OK);
    if (sizeof(void *) == 4) {
        const char *path = "build/tmp_platform_2g.safetensors";
        mlstack__map m;
        FILE *f = mlstack__fopen(path, "wb");
        int ok = f != NULL;
#if defined(_WIN32)
        ok = ok && _fseeki64(f, (__int64)too_big - 1, SEEK_SET) == 0;
#else
        ok = ok && fseeko(f, (off_t)too_big - 1, SEEK_SET) == 0;
#endif
        ok = ok && fputc(0, f) != EOF;
        if (f) ok = fclose(f) == 0 && ok;
        if (!ok) {
            SKIP("cannot write a sparse file of %llu bytes here", (unsigned long long)too_big);
        } else {
            CHECKF(mlstack__map_open(&m, path, &err) == MLSTACK_ERR_LIMIT && m.data == NULL &&
                       strstr(err.message, "32-bit build"),
                   "%s", err.message);
        }
        remove(path);
    }
}

typedef struct pool_job {
    int hits[1000];
    int bad_thread, n_threads;
} pool_job;
static void pool_task(void *ctx, int task, int n_tasks, int thread) {
    pool_job *j = (pool_job *)ctx;
    (void)n_tasks;
    j->hits[task]++;
    if (thread < 0 || thread >= j->n_threads) j->bad_thread = 1;
}
static int once_calls;
static void once_fn(void) { once_calls++; }

static void test_threads(void) {
    static pool_job job;
    int threads[3] = {1, 3, 4}, k, round, t;
    mlstack__mutex mu = MLSTACK__MUTEX_INIT;
    mlstack__once_flag once = MLSTACK__ONCE_INIT;
    for (k = 0; k < 3; k++) {
        mlstack__pool pool;
        int ok = 1;
        CHECK(mlstack__pool_init(&pool, threads[k]) == 0);
        job.n_threads = pool.n_threads;
        memset(job.hits, 0, sizeof job.hits);
        job.bad_thread = 0;
        /* many short forks of every size (the spin path), then a few after a pause (the sleep
           path): task t runs once per fork with more than t tasks */
        for (round = 0; round < 300; round++) mlstack__pool_run(&pool, pool_task, &job, 1 + round * 7 % 1000);
        for (t = 0; t < 1000; t++) {
            int want = 0;
            for (round = 0; round < 300; round++) want += t < 1 + round * 7 % 1000;
            ok &= job.hits[t] == want;
        }
        CHECKF(ok && !job.bad_thread, "%d threads: every task ran exactly once per fork", threads[k]);
        memset(job.hits, 0, sizeof job.hits);
        for (round = 0; round < 5; round++) {
            double t0 = mlstack__now();
            while (mlstack__now() - t0 < 0.02) {}
            mlstack__pool_run(&pool, pool_task, &job, 1000);
        }
        for (t = 0; t < 1000; t++) ok &= job.hits[t] == 5;
        CHECKF(ok && !job.bad_thread, "%d threads: every task ran exactly once per fork", threads[k]);
        mlstack__pool_free(&pool);
    }
    mlstack__lock(&mu);
    mlstack__unlock(&mu);
    mlstack__once(&once, once_fn);
    mlstack__once(&once, once_fn);
    CHECK(once_calls == 1);
}

static void test_clock_and_cpus(void) {
    double t0 = mlstack__now(), t1, prev = t0;
    int monotonic = 1, n = mlstack__cpu_count(), cores = mlstack__core_count();
    do {
        t1 = mlstack__now();
        monotonic &= t1 >= prev;
        prev = t1;
    } while (t1 - t0 < 0.05 && t1 - t0 >= 0);
    CHECKF(monotonic && t1 - t0 >= 0.05 && t1 - t0 < 5, "clock: %.3f s", t1 - t0);
    CHECKF(n >= 1 && n <= 256 && cores >= 1 && cores <= n, "cpus %d cores %d", n, cores);
    {
        const uint16_t one = 1; /* the compile-time refusal let only little-endian hosts here */
        CHECK(*(const unsigned char *)&one == 1);
    }
}

int main(void) {
    test_utf8_paths();
    test_address_space();
    test_threads();
    test_clock_and_cpus();
    return tl_finish();
}
