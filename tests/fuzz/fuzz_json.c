/* Fuzz target for the JSON parser (>>json) and the config.json reader (>>model).
   libFuzzer:  clang -fsanitize=fuzzer,address,undefined -DMLSTACK_LIBFUZZER -I. tests/fuzz/fuzz_json.c
   Replay:     cc -I. tests/fuzz/fuzz_json.c -lpthread -lm && ./a.out FILE_OR_DIR...
   Every accepted document is walked so that a node pointing outside its arena, a wrong child
   count or a decoded string that is not valid UTF-8 shows up under ASan or as an abort. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void fz_check(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "fuzz_json: invariant broken: %s\n", what);
        abort();
    }
}

static void fz_walk(const mlstack__json *v, int depth) {
    const mlstack__json *c;
    size_t n = 0, i;
    fz_check(depth <= MLSTACK_MAX_JSON_DEPTH + 1, "depth beyond the limit");
    switch (v->type) {
    case MLSTACK__JSON_STRING:
        fz_check(v->str[v->len] == 0, "string not NUL-terminated");
        for (i = 0; i < v->len;) {
            int l = mlstack__utf8_valid_len((const unsigned char *)v->str + i, v->len - i);
            fz_check(l > 0, "decoded string is not valid UTF-8");
            i += (size_t)l;
        }
        break;
    case MLSTACK__JSON_NUMBER:
        fz_check(v->len > 0, "empty number literal");
        if (v->is_int) fz_check((double)v->i == v->num, "is_int value disagrees with num");
        break;
    case MLSTACK__JSON_ARRAY:
    case MLSTACK__JSON_OBJECT:
        for (c = v->child; c; c = c->next) {
            if (v->type == MLSTACK__JSON_OBJECT) {
                fz_check(c->key != NULL && c->key[c->key_len] == 0, "object member without a key");
                fz_check(mlstack__json_get(v, c->key) != NULL || strlen(c->key) != c->key_len, "member not found");
            }
            fz_walk(c, depth + 1);
            n++;
        }
        fz_check(n == v->len, "child count disagrees with len");
        fz_check(mlstack__json_at(v, n) == NULL, "json_at past the end");
        break;
    default: break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    mlstack__json_doc doc;
    mlstack_error err;
    mlstack__config cfg;
    mlstack_result r;
    memset(&err, 0, sizeof err);
    r = mlstack__json_parse(&doc, (const char *)data, size, "fuzz", &err);
    if (r == MLSTACK_OK) {
        fz_check(doc.root != NULL, "no root on success");
        fz_walk(doc.root, 0);
        /* The same document as a config.json, with itself as generation_config.json. */
        r = mlstack__config_parse(&cfg, doc.root, doc.root, "config.json", &err);
        fz_check(r <= 0, "config result positive");
        fz_check(r == MLSTACK_OK || err.message[0] != 0, "config failure without a message");
        mlstack__json_free(&doc);
    } else {
        fz_check(doc.root == NULL && doc.arena.head == NULL, "failed parse left memory");
        fz_check(err.code == r && memchr(err.message, 0, sizeof err.message) != NULL, "bad error record");
        if (r == MLSTACK_ERR_FORMAT)
            fz_check(strstr(err.message, "line") != NULL && strstr(err.message, "column") != NULL,
                     "syntax error without line and column");
    }
    return 0;
}

#define FZ_NAME "fuzz_json"
#include "replay.h"
