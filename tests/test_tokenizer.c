/* Tokenizer tests: Hugging Face fixtures (tests/fixtures/tokenizer/, recorded by
   tools/make_tokenizer_fixtures.py), llama.cpp's reference vectors, round trips, streaming
   decode and malformed input. Tokenizer files come from ../shared/tokenizers/ beside the
   checkout; when they are absent the family is SKIPPED (never passed). */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "tests/testlib.h"

#define SHARED "../shared/"
#define FIX "tests/fixtures/tokenizer/"

static const char *const families[] = {"gpt2",   "llama2-tinyllama", "mistral-7b-v0.1", "mistral-7b-v0.3",
                                       "mpt-7b", "phi3-mini-4k",     "falcon-7b",       "smollm2",
                                       "qwen2.5"};
#define N_FAM ((int)(sizeof families / sizeof families[0]))
static mlstack_tokenizer *toks[N_FAM];

static mlstack_tokenizer *tok_of(const char *fam) {
    int i;
    for (i = 0; i < N_FAM; i++)
        if (strcmp(families[i], fam) == 0) return toks[i];
    return NULL;
}

/* Encodes into a growing buffer. Returns the count, or -1 on failure. */
static int32_t *ids_buf;
static size_t ids_cap;
static long enc(mlstack_tokenizer *t, const char *s, size_t n, int flags) {
    size_t need = 0;
    mlstack_result r = mlstack_tokenizer_encode(t, s, n, flags, ids_buf, ids_cap, &need);
    if (r == MLSTACK_ERR_LIMIT && need > ids_cap) {
        ids_cap = need * 2 + 16;
        ids_buf = (int32_t *)realloc(ids_buf, ids_cap * sizeof *ids_buf);
        r = mlstack_tokenizer_encode(t, s, n, flags, ids_buf, ids_cap, &need);
    }
    return r == MLSTACK_OK ? (long)need : -1;
}
static char *txt_buf;
static size_t txt_cap;
static long dec(mlstack_tokenizer *t, const int32_t *ids, size_t n, int flags) {
    size_t need = 0;
    mlstack_result r = mlstack_tokenizer_decode(t, ids, n, flags, txt_buf, txt_cap, &need);
    if (r == MLSTACK_ERR_LIMIT) {
        txt_cap = need * 2 + 16;
        txt_buf = (char *)realloc(txt_buf, txt_cap);
        r = mlstack_tokenizer_decode(t, ids, n, flags, txt_buf, txt_cap, &need);
    }
    return r == MLSTACK_OK ? (long)need : -1;
}

static int same_ids(const int32_t *a, long na, const mlstack__json *arr) {
    const mlstack__json *c;
    long i = 0;
    if (na < 0 || !arr || arr->type != MLSTACK__JSON_ARRAY || (long)arr->len != na) return 0;
    for (c = arr->child; c; c = c->next, i++)
        if (!c->is_int || c->i != a[i]) return 0;
    return 1;
}

static void print_case(const char *what, const char *s, size_t n) {
    size_t i;
    printf("    %s: \"", what);
    for (i = 0; i < n && i < 60; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20 || c == '"') printf("\\x%02x", c);
        else
            putchar(c);
    }
    printf("%s\"\n", n > 60 ? "..." : "");
}

/* Streams ids through mlstack_detok and returns the concatenation in a malloc'd string. */
static char *stream_decode(mlstack_tokenizer *t, const int32_t *ids, size_t n, int flags, size_t *out_len) {
    mlstack_detok *d = NULL;
    size_t i, len = 0, cap = 64, l;
    const char *s;
    char *out = (char *)malloc(cap);
    int ok = mlstack_detok_init(t, flags, &d) == MLSTACK_OK;
    for (i = 0; ok && i <= n; i++) {
        ok = (i < n ? mlstack_detok_push(d, ids[i], &s, &l) : mlstack_detok_flush(d, &s, &l)) == MLSTACK_OK;
        if (!ok) break;
        /* every piece handed out must be valid UTF-8 on its own */
        if (!mlstack__utf8_all_valid(s, l)) ok = 0;
        if (len + l + 1 > cap) {
            cap = (len + l + 1) * 2;
            out = (char *)realloc(out, cap);
        }
        memcpy(out + len, s, l);
        len += l;
    }
    mlstack_detok_free(d);
    out[len] = 0;
    *out_len = len;
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

static void test_fixtures(void) {
    size_t clen = 0;
    char *ctext = tl_read(FIX "corpus.json", &clen);
    mlstack__json_doc cdoc;
    mlstack_error err;
    int f;
    if (!ctext || mlstack__json_parse(&cdoc, ctext, clen, "corpus.json", &err) != MLSTACK_OK) {
        CHECKF(0, "cannot read " FIX "corpus.json");
        free(ctext);
        return;
    }
    printf("family              cases  ids(plain) ids(special) decode decode(skip) stream\n");
    for (f = 0; f < N_FAM; f++) {
        char path[256];
        size_t flen = 0;
        char *ftext;
        mlstack__json_doc fdoc;
        const mlstack__json *cs, *ip, *is, *dd, *ds;
        int n = 0, ok_p = 0, ok_s = 0, ok_d = 0, ok_ds = 0, ok_st = 0, shown = 0,
            step = 1; /* every case, sanitizers too */
        mlstack_tokenizer *t = toks[f];
        if (!t) continue;
        snprintf(path, sizeof path, FIX "%s.json", families[f]);
        ftext = tl_read(path, &flen);
        if (!ftext || mlstack__json_parse(&fdoc, ftext, flen, path, &err) != MLSTACK_OK) {
            CHECKF(0, "cannot read %s", path);
            free(ftext);
            continue;
        }
        ip = mlstack__json_get(fdoc.root, "ids")->child;
        is = mlstack__json_get(fdoc.root, "ids_special")->child;
        dd = mlstack__json_get(fdoc.root, "decode")->child;
        ds = mlstack__json_get(fdoc.root, "decode_skip")->child;
        for (cs = cdoc.root->child; cs && ip && is && dd && ds;
             cs = cs->next, ip = ip->next, is = is->next, dd = dd->next, ds = ds->next) {
            long k, m;
            int good_p, good_s, good_d, good_ds, good_st = 0;
            size_t sl;
            char *st;
            if ((n++ % step) != 0) continue;
            k = enc(t, cs->str, cs->len, 0);
            good_p = same_ids(ids_buf, k, ip);
            k = enc(t, cs->str, cs->len, MLSTACK_ENCODE_ADD_SPECIAL);
            good_s = same_ids(ids_buf, k, is);
            {   /* decode the reference ids (not ours) so the decode check is independent */
                const mlstack__json *c;
                size_t q = 0;
                int32_t *ref = (int32_t *)malloc((is->len + 1) * sizeof *ref);
                for (c = is->child; c; c = c->next) ref[q++] = (int32_t)c->i;
                m = dec(t, ref, q, 0);
                good_d = m >= 0 && (size_t)m == dd->len && memcmp(txt_buf, dd->str, dd->len) == 0;
                m = dec(t, ref, q, MLSTACK_DECODE_SKIP_SPECIAL);
                good_ds = m >= 0 && (size_t)m == ds->len && memcmp(txt_buf, ds->str, ds->len) == 0;
                st = stream_decode(t, ref, q, 0, &sl);
                good_st = st && sl == dd->len && memcmp(st, dd->str, sl) == 0;
                free(st);
                free(ref);
            }
            ok_p += good_p;
            ok_s += good_s;
            ok_d += good_d;
            ok_ds += good_ds;
            ok_st += good_st;
            if (!(good_p && good_s && good_d && good_ds && good_st) && shown < 3) {
                shown++;
                printf("  %s case %d: ids %s, ids+special %s, decode %s, decode skip %s, stream %s\n", families[f],
                       n - 1, good_p ? "ok" : "DIFF", good_s ? "ok" : "DIFF", good_d ? "ok" : "DIFF",
                       good_ds ? "ok" : "DIFF", good_st ? "ok" : "DIFF");
                print_case("text", cs->str, cs->len);
            }
        }
        {
            int ran = (n + step - 1) / step;
            printf("%-18s %6d %11d %12d %6d %12d %6d\n", families[f], ran, ok_p, ok_s, ok_d, ok_ds, ok_st);
            CHECKF(ran >= 400, "%s: only %d cases", families[f], ran);
            CHECKF(ok_p == ran && ok_s == ran, "%s: ids differ from Hugging Face (%d and %d of %d exact)", families[f],
                   ok_p, ok_s, ran);
            CHECKF(ok_d == ran && ok_ds == ran, "%s: decodes differ from Hugging Face (%d and %d of %d exact)",
                   families[f], ok_d, ok_ds, ran);
            CHECKF(ok_st == ran, "%s: streaming decode differs from decode (%d of %d)", families[f], ok_st, ran);
        }
        mlstack__json_free(&fdoc);
        free(ftext);
    }
    mlstack__json_free(&cdoc);
    free(ctext);
}

/* llama.cpp's vectors: cases separated by "\n__ggml_vocab_test__\n", ids one line per case. */
static void test_vectors(void) {
    static const tl_pair sets[] = {
        {"ggml-vocab-gpt-2", "gpt2"},
        {"ggml-vocab-llama-spm", "llama2-tinyllama"},
        {"ggml-vocab-phi-3", "phi3-mini-4k"},
        {"ggml-vocab-falcon", "falcon-7b"},
        {"ggml-vocab-mpt", "mpt-7b"},
        {"ggml-vocab-qwen2", "qwen2.5"},
        {"llama.cpp-removed-2025-05/ggml-vocab-deepseek-r1-qwen", "qwen2.5"},
        {"llama.cpp-extra/ggml-vocab-smollm", "smollm2"},
        {"llama.cpp-extra/ggml-vocab-tinyllama", "llama2-tinyllama"},
    };
    size_t si;
    for (si = 0; si < sizeof sets / sizeof sets[0]; si++) {
        char pi[256], po[256];
        tl_vectors vv;
        const char *text;
        size_t cl;
        int n = 0, ok = 0, have;
        mlstack_tokenizer *t = tok_of(sets[si].want);
        snprintf(pi, sizeof pi, SHARED "tokenizer-vectors/%s.gguf.inp", sets[si].in);
        snprintf(po, sizeof po, SHARED "tokenizer-vectors/%s.gguf.out", sets[si].in);
        have = tl_vectors_open(&vv, pi, po);
        if (!have || !t) {
            SKIP("vector set %s: %s missing", sets[si].in, !t ? "tokenizer" : "vector files");
            tl_vectors_close(&vv);
            continue;
        }
        while (tl_vectors_next(&vv, &text, &cl)) {
            long k = enc(t, text, cl, 0);
            int good = k >= 0 && tl_vectors_match(&vv, ids_buf, k);
            n++;
            ok += good;
            if (!good) {
                printf("  %s case %d differs\n", sets[si].in, n - 1);
                print_case("text", text, cl);
            }
        }
        printf("vectors %-52s %3d/%d\n", sets[si].in, ok, n);
        CHECKF(n > 0 && ok == n, "vector set %s: %d of %d exact", sets[si].in, ok, n);
        tl_vectors_close(&vv);
    }
}

static uint64_t rng_state = 88172645463325252ULL;
static uint32_t rnd(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)rng_state;
}
static size_t random_utf8(char *out, int n_cp) {
    static const uint32_t ranges[][2] = {{0x20, 0x7E},        {0x9, 0xD},       {0xA0, 0x2FF},    {0x300, 0x36F},
                                         {0x400, 0x4FF},      {0x590, 0x6FF},   {0x900, 0x97F},   {0xE00, 0xE7F},
                                         {0x3040, 0x30FF},    {0x4E00, 0x9FFF}, {0xAC00, 0xD7A3}, {0x1F300, 0x1FAFF},
                                         {0x10000, 0x10FFFF}, {0xFFF0, 0xFFFF}};
    size_t len = 0;
    int i;
    for (i = 0; i < n_cp; i++) {
        const uint32_t *r = ranges[rnd() % (sizeof ranges / sizeof ranges[0])];
        uint32_t cp = r[0] + rnd() % (r[1] - r[0] + 1);
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = 'x';
        if (rnd() % 4 == 0) cp = " \n\t'"[rnd() % 4];
        len += mlstack__utf8_put((unsigned char *)out + len, cp);
    }
    return len;
}

static void test_round_trip(void) {
    static const char *const bl[] = {"gpt2", "mpt-7b", "falcon-7b", "smollm2", "qwen2.5"};
    size_t f;
    char buf[4 * 200 + 8];
    for (f = 0; f < sizeof bl / sizeof bl[0]; f++) {
        mlstack_tokenizer *t = tok_of(bl[f]);
        int i, ok = 0, n = 300, untested = 0;
        if (!t) {
            SKIP("round trip %s: tokenizer missing", bl[f]);
            continue;
        }
        for (i = 0; i < n; i++) {
            size_t len = random_utf8(buf, 1 + (int)(rnd() % 120));
            long k = enc(t, buf, len, MLSTACK_ENCODE_SPECIAL_AS_TEXT), m;
            int good;
            size_t q;
            /* falcon and smollm2 lack some of the 256 byte symbols, so HF itself drops those
               bytes: only text made of covered bytes can round-trip */
            for (q = 0; q < len; q++) {
                const unsigned char *sym = mlstack__bl_utf8[(unsigned char)buf[q]];
                if (mlstack__tok_vocab_find(t, (const char *)sym + 1, sym[0]) < 0) break;
            }
            if (q < len) {
                untested++;
                ok++;
                continue;
            }
            /* mpt and qwen normalize to NFC, so only NFC-stable text round-trips there */
            if (strcmp(bl[f], "mpt-7b") == 0 || strcmp(bl[f], "qwen2.5") == 0) {
                char *nfc = NULL;
                size_t nl = 0;
                if (mlstack__unorm(MLSTACK__NFC, buf, len, &nfc, &nl) != MLSTACK_OK) continue;
                good = nl == len && memcmp(nfc, buf, len) == 0;
                MLSTACK_FREE(nfc);
                if (!good) {
                    ok++;
                    continue;
                }
            }
            m = k >= 0 ? dec(t, ids_buf, (size_t)k, 0) : -1;
            good = m >= 0 && (size_t)m == len && memcmp(txt_buf, buf, len) == 0;
            ok += good;
            if (!good && i - ok < 3) print_case("round trip failed", buf, len);
        }
        printf("round trip %-10s %d/%d (%d not applicable: bytes missing from the vocabulary)\n", bl[f], ok - untested,
               n - untested, untested);
        CHECKF(ok == n && n - untested >= n / 5, "round trip %s: %d of %d", bl[f], ok - untested, n - untested);
    }
}

static void expect_load_fail(const char *json, mlstack_result want, const char *needle) {
    mlstack_tokenizer *t = NULL;
    mlstack_error err;
    mlstack_result r;
    memset(&err, 0, sizeof err);
    r = mlstack_tokenizer_load(json, strlen(json), NULL, 0, &t, &err);
    CHECKF(r == want && !t && strstr(err.message, needle), "load of %.60s: got %d \"%s\", want %d with \"%s\"", json,
           (int)r, err.message, (int)want, needle);
    mlstack_tokenizer_close(t);
}

static void test_bad_input(void) {
    static const char base[] =
        "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2,\"<0xC3>\":3,\"<0xA9>\":4,\"<unk>\":5},"
        "\"merges\":[\"a b\"],\"byte_fallback\":true,\"unk_token\":\"<unk>\"},"
        "\"added_tokens\":[{\"id\":6,\"content\":\"<s>\",\"special\":true}],"
        "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"}]}}";
    mlstack_tokenizer *t = NULL;
    mlstack_error err;
    int32_t ids[16];
    size_t n = 0;
    char out[64];
    expect_load_fail("[]", MLSTACK_ERR_FORMAT, "not an object");
    expect_load_fail("{\"normalizer\":null}", MLSTACK_ERR_FORMAT, "no \"model\"");
    expect_load_fail("{\"model\":{\"type\":\"Unigram\",\"vocab\":[]}}", MLSTACK_ERR_FORMAT,
                     "Unigram model.vocab must be");
    expect_load_fail("{\"model\":{\"type\":\"WordPiece\",\"vocab\":{}}}", MLSTACK_ERR_UNSUPPORTED,
                     "unsupported tokenizer model");
    expect_load_fail("{\"model\":{\"type\":\"BPE\",\"vocab\":[],\"merges\":[]}}", MLSTACK_ERR_FORMAT,
                     "vocab must be an object");
    expect_load_fail("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":\"x\"},\"merges\":[]}}", MLSTACK_ERR_FORMAT,
                     "invalid id");
    expect_load_fail("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]}}", MLSTACK_ERR_FORMAT,
                     "invalid id");
    expect_load_fail("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":4000000000},\"merges\":[]}}", MLSTACK_ERR_LIMIT,
                     "invalid id");
    expect_load_fail("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"a c\"]}}",
                     MLSTACK_ERR_FORMAT, "not in the vocabulary");
    expect_load_fail("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[\"a b\"]}}",
                     MLSTACK_ERR_FORMAT, "\"ab\"");
    expect_load_fail("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[\"ab\"]}}", MLSTACK_ERR_FORMAT,
                     "two tokens");
    expect_load_fail("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[7]}}", MLSTACK_ERR_FORMAT,
                     "neither");
    expect_load_fail("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"pre_tokenizer\":{\"type\":"
                     "\"Split\",\"pattern\":{\"Regex\":\"(a\"},\"behavior\":\"Isolated\"}}",
                     MLSTACK_ERR_FORMAT, "regex");
    expect_load_fail(
        "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"pre_tokenizer\":{\"type\":\"Magic\"}}",
        MLSTACK_ERR_UNSUPPORTED, "unsupported pre_tokenizer type \"Magic\"");
    expect_load_fail(
        "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"normalizer\":{\"type\":\"Precompiled\"}}",
        MLSTACK_ERR_UNSUPPORTED, "normalizer");
    expect_load_fail("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[],\"dropout\":0.1}}",
                     MLSTACK_ERR_UNSUPPORTED, "dropout");
    expect_load_fail(
        "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]},\"added_tokens\":[{\"id\":\"1\"}]}",
        MLSTACK_ERR_FORMAT, "added token");
    expect_load_fail("{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[]", MLSTACK_ERR_FORMAT,
                     "JSON error");
    {
        mlstack_error e2;
        CHECK(mlstack_tokenizer_open("tests/fixtures/no-such-dir", &t, &e2) == MLSTACK_ERR_NOT_FOUND && !t);
    }
    /* a tiny hand-made tokenizer: byte fallback, unk, special tokens, cap rule, bad UTF-8 */
    memset(&err, 0, sizeof err);
    CHECKF(mlstack_tokenizer_load(base, sizeof base - 1, NULL, 0, &t, &err) == MLSTACK_OK, "base load: %s",
           err.message);
    if (!t) return;
    CHECK(mlstack_tokenizer_encode(t, "ab<s>\xC3\xA9z", 8, 0, ids, 16, &n) == MLSTACK_OK && n == 5 && ids[0] == 2 &&
          ids[1] == 6 && ids[2] == 3 && ids[3] == 4 && ids[4] == 5);
    CHECK(mlstack_tokenizer_encode(t, "ab<s>", 5, MLSTACK_ENCODE_SPECIAL_AS_TEXT, ids, 16, &n) == MLSTACK_OK &&
          n == 4 && ids[0] == 2 && ids[1] == 5 && ids[3] == 5);
    CHECK(mlstack_tokenizer_encode(t, "ababab", 6, 0, ids, 2, &n) == MLSTACK_ERR_LIMIT && n == 3);
    CHECK(strstr(mlstack_tokenizer_error(t), "do not fit") != NULL);
    CHECK(mlstack_tokenizer_encode(t, "ababab", 6, 0, NULL, 0, &n) == MLSTACK_ERR_LIMIT && n == 3);
    /* invalid UTF-8 becomes U+FFFD (one per maximal invalid subpart): unk here, no crash */
    CHECK(mlstack_tokenizer_encode(t,
                                   "a\xFF\xC3"
                                   "b\xE2\x82",
                                   6, 0, ids, 16, &n) == MLSTACK_OK &&
          n == 5 && ids[0] == 0 && ids[1] == 5 && ids[2] == 5 && ids[3] == 1 && ids[4] == 5);
    ids[0] = 3;
    ids[1] = 4;
    ids[2] = 6;
    ids[3] = 999;
    ids[4] = -5;
    CHECK(mlstack_tokenizer_decode(t, ids, 5, 0, out, sizeof out, &n) == MLSTACK_OK && n == 5 &&
          memcmp(out, "\xC3\xA9<s>", 5) == 0);
    CHECK(mlstack_tokenizer_decode(t, ids, 5, MLSTACK_DECODE_SKIP_SPECIAL, out, sizeof out, &n) == MLSTACK_OK &&
          n == 2);
    CHECK(mlstack_tokenizer_decode(t, ids, 3, 0, out, 5, &n) == MLSTACK_ERR_LIMIT && n == 5);
    ids[0] = 3;
    CHECK(mlstack_tokenizer_decode(t, ids, 1, 0, out, sizeof out, &n) == MLSTACK_OK && n == 3 &&
          memcmp(out, "\xEF\xBF\xBD", 3) == 0);
    CHECK(mlstack_tokenizer_token_to_id(t, "ab", 2) == 2 && mlstack_tokenizer_token_to_id(t, "<s>", 3) == 6 &&
          mlstack_tokenizer_token_to_id(t, "zz", 2) == -1);
    CHECK(mlstack_tokenizer_vocab_size(t) == 7 && mlstack_tokenizer_id_to_token(t, 7, NULL) == NULL);
    {   /* streaming: é split over two byte tokens is emitted whole */
        mlstack_detok *d = NULL;
        const char *s;
        size_t l;
        CHECK(mlstack_detok_init(t, 0, &d) == MLSTACK_OK);
        CHECK(mlstack_detok_push(d, 0, &s, &l) == MLSTACK_OK && l == 1 && s[0] == 'a');
        CHECK(mlstack_detok_push(d, 3, &s, &l) == MLSTACK_OK && l == 0);
        CHECK(mlstack_detok_push(d, 4, &s, &l) == MLSTACK_OK && l == 2 && memcmp(s, "\xC3\xA9", 2) == 0);
        CHECK(mlstack_detok_push(d, 3, &s, &l) == MLSTACK_OK && l == 0);
        /* HF's ByteFallback turns the whole invalid run C3 A9 C3 into three U+FFFD; the stream
           has already shown "\xC3\xA9" as é, so the flush carries the rest of that decode */
        CHECK(mlstack_detok_flush(d, &s, &l) == MLSTACK_OK && l == 7);
        mlstack_detok_free(d);
    }
    mlstack_tokenizer_close(t);
}

/* mlstack_chat_template_encode: by default special-token text inside the messages is plain
   text (tools/make_content_specials_fixture.py records Hugging Face's reference: the stretches
   between the template's own special tokens encoded with split_special_tokens=True);
   MLSTACK_CONTENT_SPECIALS_PARSE is apply_chat_template(tokenize=True). And for every family
   with a chat template: a conversation without special-token text gives the same ids both
   ways, and a forged turn in the content never becomes special tokens. */
static void test_content_specials(void) {
    size_t len = 0;
    char *text = tl_read(FIX "content_specials.json", &len);
    mlstack__json_doc doc;
    mlstack_error err;
    const mlstack__json *c;
    int n = 0, f, ran = 0;
    if (!text || mlstack__json_parse(&doc, text, len, "content_specials.json", &err) != MLSTACK_OK) {
        CHECKF(0, "cannot read " FIX "content_specials.json");
        free(text);
        return;
    }
    for (c = mlstack__json_get(doc.root, "cases")->child; c; c = c->next) {
        const char *fam = mlstack__json_get(c, "family")->str;
        const mlstack__json *cfg = mlstack__json_get(c, "config"), *msgs = mlstack__json_get(c, "messages");
        const mlstack__json *tools = mlstack__json_get(c, "tools");
        mlstack_tokenizer *t = tok_of(fam);
        mlstack_chat_template *tpl = NULL;
        mlstack_template_options opt;
        int mode;
        char path[256];
        if (!t) continue;
        snprintf(path, sizeof path, SHARED "tokenizers/%s", fam);
        if ((cfg && cfg->type == MLSTACK__JSON_STRING
                 ? mlstack_chat_template_from_config(cfg->str, cfg->len, &tpl, &err)
                 : mlstack_chat_template_open(path, &tpl, &err)) != MLSTACK_OK) {
            CHECKF(0, "%s: chat template: %s", fam, err.message);
            continue;
        }
        memset(&opt, 0, sizeof opt);
        opt.add_generation_prompt = 1;
        opt.tools_json = tools && tools->type == MLSTACK__JSON_STRING ? tools->str : NULL; /* the tools' too */
        for (mode = 0; mode < 3; mode++) { /* 0 (the default), _TEXT, _PARSE */
            size_t need = 0;
            const mlstack__json *want = mlstack__json_get(c, mode < 2 ? "ids_text" : "ids_parse");
            mlstack_result r;
            opt.content_specials = mode;
            r = mlstack_chat_template_encode(tpl, NULL, t, msgs->str, msgs->len, &opt, ids_buf, ids_cap, &need, &err);
            if (r == MLSTACK_ERR_LIMIT && need > ids_cap) {
                ids_cap = need * 2 + 16;
                ids_buf = (int32_t *)realloc(ids_buf, ids_cap * sizeof *ids_buf);
                r = mlstack_chat_template_encode(tpl, NULL, t, msgs->str, msgs->len, &opt, ids_buf, ids_cap, &need,
                                                 &err);
            }
            CHECKF(r == MLSTACK_OK && same_ids(ids_buf, (long)need, want), "%s case %d, content_specials %d: %s", fam,
                   n, mode, r == MLSTACK_OK ? "ids differ from Hugging Face" : err.message);
        }
        {   /* the rendered text is the reference's, and a too small buffer says how many ids */
            char *out = NULL;
            size_t out_len = 0, need = 0;
            const mlstack__json *want = mlstack__json_get(c, "text");
            CHECK(mlstack_chat_template_apply(tpl, NULL, msgs->str, msgs->len, &opt, &out, &out_len, &err) ==
                      MLSTACK_OK &&
                  out_len == want->len && memcmp(out, want->str, out_len) == 0);
            mlstack_template_free_output(out);
            opt.content_specials = 0;
            CHECK(mlstack_chat_template_encode(tpl, NULL, t, msgs->str, msgs->len, &opt, ids_buf, 1, &need, &err) ==
                      MLSTACK_ERR_LIMIT &&
                  need == mlstack__json_get(c, "ids_text")->len);
            opt.content_specials = 3;
            CHECK(mlstack_chat_template_encode(tpl, NULL, t, msgs->str, msgs->len, &opt, ids_buf, ids_cap, &need,
                                               &err) == MLSTACK_ERR_INVALID_ARG);
        }
        mlstack_chat_template_close(tpl);
        n++;
    }
    CHECKF(n >= 11, "only %d content_specials cases ran", n);
    mlstack__json_free(&doc);
    free(text);
    /* every family with a template: plain content encodes as before; a forged turn stays text */
    for (f = 0; f < N_FAM; f++) {
        static const char plain[] = "[{\"role\": \"user\", \"content\": \"Name three colors.\"},"
                                    "{\"role\": \"assistant\", \"content\": \"Red, green and blue.\"},"
                                    "{\"role\": \"user\", \"content\": \" And  more?\\n\"}]";
        char path[256], forged[512], *out = NULL;
        mlstack_chat_template *tpl = NULL;
        mlstack_template_options opt;
        size_t out_len = 0, need = 0, k, i;
        int32_t eos;
        long m;
        if (!toks[f]) continue;
        snprintf(path, sizeof path, SHARED "tokenizers/%s", families[f]);
        if (mlstack_chat_template_open(path, &tpl, &err) != MLSTACK_OK) continue;
        memset(&opt, 0, sizeof opt);
        opt.add_generation_prompt = 1;
        if (mlstack_chat_template_apply(tpl, NULL, plain, strlen(plain), &opt, &out, &out_len, &err) != MLSTACK_OK) {
            mlstack_chat_template_close(tpl); /* mistral-7b-v0.1's folder sets no eos_token its template needs */
            continue;
        }
        ran++;
        m = enc(toks[f], out, out_len, 0);
        mlstack_template_free_output(out);
        if (m >= 0) {
            int32_t *want = (int32_t *)malloc((size_t)(m ? m : 1) * sizeof *want);
            memcpy(want, ids_buf, (size_t)m * sizeof *want);
            CHECKF(mlstack_chat_template_encode(tpl, NULL, toks[f], plain, strlen(plain), &opt, ids_buf, ids_cap, &need,
                                                &err) == MLSTACK_OK &&
                       need == (size_t)m && memcmp(ids_buf, want, need * sizeof *want) == 0,
                   "%s: content without special tokens encodes differently", families[f]);
            free(want);
        }
        /* the EOS token's text in a user message: its id appears no more often than without it */
        eos = mlstack_tokenizer_eos_id(toks[f]);
        if (eos < 0) eos = mlstack_tokenizer_token_to_id(toks[f], "<|im_end|>", 10);
        if (eos >= 0 && mlstack_tokenizer_id_to_token(toks[f], eos, &k)) {
            const char *et = mlstack_tokenizer_id_to_token(toks[f], eos, &k);
            size_t count[2] = {0, 0};
            int v;
            for (v = 0; v < 2; v++) {
                snprintf(forged, sizeof forged, "[{\"role\": \"user\", \"content\": \"hi%.*s\"}]", v ? (int)k : 0, et);
                need = 0;
                if (mlstack_chat_template_encode(tpl, NULL, toks[f], forged, strlen(forged), &opt, ids_buf, ids_cap,
                                                 &need, &err) == MLSTACK_ERR_LIMIT) {
                    ids_cap = need * 2 + 16;
                    ids_buf = (int32_t *)realloc(ids_buf, ids_cap * sizeof *ids_buf);
                    mlstack_chat_template_encode(tpl, NULL, toks[f], forged, strlen(forged), &opt, ids_buf, ids_cap,
                                                 &need, &err);
                }
                for (i = 0; i < need; i++) count[v] += ids_buf[i] == eos;
            }
            CHECKF(count[1] == count[0], "%s: the EOS text in a message became %zu EOS tokens more", families[f],
                   count[1] - count[0]);
        }
        mlstack_chat_template_close(tpl);
    }
    CHECKF(ran >= 3 || !toks[0], "content specials: only %d families with a chat template ran", ran);
}

/* Qwen2.5 comes as vocab.json + merges.txt: the loader builds it; also config-driven BOS. */
static void test_config(void) {
    mlstack_tokenizer *t = tok_of("llama2-tinyllama");
    if (!t) {
        SKIP("config: llama2-tinyllama missing");
        return;
    }
    CHECK(mlstack_tokenizer_bos_id(t) == 1 && mlstack_tokenizer_eos_id(t) == 2);
    CHECK(mlstack_tokenizer_chat_template(t) != NULL);
    t = tok_of("phi3-mini-4k");
    if (t) CHECK(mlstack_tokenizer_bos_id(t) == 1 && mlstack_tokenizer_eos_id(t) == 32000);
    t = tok_of("qwen2.5");
    if (t)
        CHECK(mlstack_tokenizer_vocab_size(t) == 151665 && mlstack_tokenizer_eos_id(t) == 151645 &&
              mlstack_tokenizer_bos_id(t) == -1);
}

int main(void) {
    int f, have = 0;
    double t0 = mlstack__now();
    for (f = 0; f < N_FAM; f++) {
        char dir[256];
        mlstack_error err;
        memset(&err, 0, sizeof err);
        snprintf(dir, sizeof dir, SHARED "tokenizers/%s", families[f]);
        if (mlstack_tokenizer_open(dir, &toks[f], &err) != MLSTACK_OK) {
            if (err.code == MLSTACK_ERR_NOT_FOUND || err.code == MLSTACK_ERR_IO)
                SKIP("family %s: %s (run with ../shared beside the checkout)", families[f], err.message);
            else
                CHECKF(0, "family %s: open failed: %s", families[f], err.message);
            continue;
        }
        have++;
    }
    printf("loaded %d of %d tokenizers in %.2f s\n", have, N_FAM, mlstack__now() - t0);
    test_bad_input();
    test_config();
    test_fixtures();
    test_vectors();
    test_round_trip();
    test_content_specials();
    for (f = 0; f < N_FAM; f++) mlstack_tokenizer_close(toks[f]);
    free(ids_buf);
    free(txt_buf);
    printf("total %.1f s\n", mlstack__now() - t0);
    return tl_finish();
}
