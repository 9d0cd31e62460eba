/* Unigram tokenizers (tokenizer.json "model": {"type": "Unigram"}): the two small tokenizers in
   tests/fixtures/unigram/ (trained with Hugging Face tokenizers by tools/make_unigram_fixture.py)
   encode every recorded text to exactly the ids `tokenizers` gave, with and without special
   tokens, and decode those ids to the same text; malformed Unigram models are refused by name. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"

#define FIX "tests/fixtures/unigram/"

static int same_ids(mlstack_tokenizer *t, const char *text, size_t len, int flags, const mlstack__json *want,
                    const char *what) {
    int32_t ids[1024];
    size_t n = 0, k = 0;
    const mlstack__json *v;
    mlstack_result r = mlstack_tokenizer_encode(t, text, len, flags, ids, 1024, &n);
    int ok = r == MLSTACK_OK;
    for (v = want ? want->child : NULL; ok && v; v = v->next, k++) ok = k < n && ids[k] == (int32_t)v->i;
    ok = ok && k == n;
    CHECKF(ok, "%s: \"%.60s\" encodes differently from tokenizers (%zu ids, %s)", what, text, n,
           r == MLSTACK_OK ? "ok" : mlstack_tokenizer_error(t));
    return ok;
}

static void check_file(const char *name, const mlstack__json *cases) {
    char path[256];
    size_t len;
    char *json;
    mlstack_tokenizer *t = NULL;
    mlstack_error err;
    const mlstack__json *c;
    int n = 0, good = 0;
    snprintf(path, sizeof path, FIX "%s", name);
    json = tl_read(path, &len);
    CHECKF(json != NULL, "%s missing", path);
    if (!json) return;
    CHECKF(mlstack_tokenizer_load(json, len, NULL, 0, &t, &err) == MLSTACK_OK, "%s: %s", name, err.message);
    for (c = cases ? cases->child : NULL; t && c; c = c->next, n++) {
        const mlstack__json *text = mlstack__json_get(c, "text"), *ids = mlstack__json_get(c, "ids"),
                            *dec = mlstack__json_get(c, "decoded");
        char out[4096];
        int32_t buf[1024];
        size_t k = 0, no = 0;
        const mlstack__json *v;
        int ok = same_ids(t, text->str, text->len, 0, ids, name);
        ok &= same_ids(t, text->str, text->len, MLSTACK_ENCODE_ADD_SPECIAL, mlstack__json_get(c, "ids_special"), name);
        for (v = ids->child; v && k < 1024; v = v->next) buf[k++] = (int32_t)v->i;
        CHECK(mlstack_tokenizer_decode(t, buf, k, MLSTACK_DECODE_SKIP_SPECIAL, out, sizeof out, &no) == MLSTACK_OK);
        CHECKF(no == dec->len && memcmp(out, dec->str, no) == 0, "%s: decode of \"%.60s\" gives \"%.60s\"", name,
               text->str, out);
        good += ok && no == dec->len && memcmp(out, dec->str, no) == 0;
    }
    printf("  %-16s %d/%d texts byte-exact against tokenizers (encode, encode with specials, decode)\n", name, good, n);
    mlstack_tokenizer_close(t);
    free(json);
}

static void check_refusals(void) {
    static const tl_pair cases[] = {
        {"{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\"]]}}", "vocab entry 0 is not [piece, score]"},
        {"{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\", -1.0], [\"b\", \"x\"]]}}", "vocab entry 1 is not"},
        {"{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\", -1.0]],\"unk_id\":3}}", "unk_id must be a piece index"},
        {"{\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\", -1.0]]}}", "without unk_id is not supported"},
        {"{\"model\":{\"type\":\"Unigram\",\"vocab\":{\"a\":0}}}", "Unigram model.vocab must be"},
    };
    size_t i;
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mlstack_tokenizer *t = NULL;
        mlstack_error err;
        mlstack_result r = mlstack_tokenizer_load(cases[i].in, strlen(cases[i].in), NULL, 0, &t, &err);
        CHECKF(r != MLSTACK_OK && strstr(err.message, cases[i].want), "refusal %d: got %d \"%s\"", (int)i, (int)r,
               r == MLSTACK_OK ? "" : err.message);
        mlstack_tokenizer_close(t);
    }
    /* a piece index chosen among equal-score splits, and a run of unknown characters fused */
    {
        const char *j = "{\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":[[\"<unk>\", 0.0], [\"a\", -1.0], "
                        "[\"b\", -1.0], [\"ab\", -2.0], [\"abab\", -4.5]]}}";
        mlstack_tokenizer *t = NULL;
        mlstack_error err;
        int32_t ids[8];
        size_t n = 0;
        CHECK(mlstack_tokenizer_load(j, strlen(j), NULL, 0, &t, &err) == MLSTACK_OK);
        /* "ab": a + b and ab both total -2: the split whose last piece starts earliest (ab) */
        CHECK(t && mlstack_tokenizer_encode(t, "ab", 2, 0, ids, 8, &n) == MLSTACK_OK && n == 1 && ids[0] == 3);
        CHECK(t && mlstack_tokenizer_encode(t, "xyzab", 5, 0, ids, 8, &n) == MLSTACK_OK && n == 2 && ids[0] == 0 &&
              ids[1] == 3);
        mlstack_tokenizer_close(t);
    }
}

int main(void) {
    size_t len;
    char *text = tl_read(FIX "vectors.json", &len);
    mlstack__json_doc doc;
    mlstack_error err;
    check_refusals();
    CHECKF(text != NULL, "%svectors.json missing (run from the repository root)", FIX);
    if (!text) return tl_finish();
    CHECK(mlstack__json_parse(&doc, text, len, "vectors.json", &err) == MLSTACK_OK);
    check_file("unigram.json", mlstack__json_get(doc.root, "unigram.json"));
    check_file("unigram_bf.json", mlstack__json_get(doc.root, "unigram_bf.json"));
    mlstack__json_free(&doc);
    free(text);
    return tl_finish();
}
