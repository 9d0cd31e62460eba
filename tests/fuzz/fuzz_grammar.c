/* Fuzz target for the grammar compilers (GBNF parser, regex and JSON Schema translators) and the
   matcher.
   libFuzzer:  clang -g -O1 -fsanitize=fuzzer,address,undefined -DMLSTACK_LIBFUZZER -I. \
                   tests/fuzz/fuzz_grammar.c -o build/fuzz_grammar -lm -lpthread
   Input: the first byte picks the kind (GBNF, JSON Schema, regex, tool list by its value mod 4),
   the rest up to a NUL is the grammar text; bytes after the NUL are fed to a matcher as token
   ids of a small vocabulary (each byte one token), with a mask after each. Budgets are small so
   runaway inputs end quickly; every result must be a clean success or a clean error, and every
   token the matcher accepts must have been in its mask. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static mlstack_vocab *fz_vocab;

static void fz_init(void) {
    /* 64 tokens: single bytes of JSON and GBNF text, pieces, split UTF-8, the EOS (id 63) */
    static const char *const t[] = {"{",
                                    "}",
                                    "[",
                                    "]",
                                    "\"",
                                    ":",
                                    ",",
                                    " ",
                                    "\n",
                                    "a",
                                    "b",
                                    "x",
                                    "0",
                                    "1",
                                    "9",
                                    "-",
                                    ".",
                                    "e",
                                    "t",
                                    "r",
                                    "u",
                                    "f",
                                    "n",
                                    "l",
                                    "s",
                                    "\\",
                                    "/",
                                    "true",
                                    "false",
                                    "null",
                                    "\"a\"",
                                    "{\"",
                                    "\":",
                                    "\", \"",
                                    "12",
                                    "é",
                                    "\xC3",
                                    "\xA9",
                                    "\xE4\xB8",
                                    "\xAD",
                                    "\xF0\x9F",
                                    "\x98\x80",
                                    "\xFF",
                                    "\xED\xA0",
                                    "<tool_call>",
                                    "</tool_call>",
                                    "name",
                                    "arguments",
                                    "ab",
                                    "ba",
                                    "xx",
                                    "  ",
                                    "\t",
                                    "A",
                                    "Z",
                                    "_",
                                    "(",
                                    ")",
                                    "|",
                                    "*",
                                    "+",
                                    "?",
                                    "#"};
    int32_t eos = 63;
    const char *toks[64];
    mlstack_error err;
    int i;
    for (i = 0; i < 63; i++) toks[i] = t[i];
    toks[63] = NULL;
    if (mlstack_vocab_from_bytes(toks, NULL, 64, &eos, 1, &fz_vocab, &err) != MLSTACK_OK) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const mlstack_grammar_kind kinds[4] = {MLSTACK_GRAMMAR_GBNF, MLSTACK_GRAMMAR_JSON_SCHEMA,
                                                  MLSTACK_GRAMMAR_REGEX, MLSTACK_GRAMMAR_TOOL_CALLS};
    mlstack_grammar_desc d;
    mlstack_grammar *g;
    mlstack_matcher *m;
    mlstack_error err;
    const uint8_t *nul;
    size_t tlen, i;
    char *text;
    uint32_t bits[2];
    if (!fz_vocab) fz_init();
    if (size < 1) return 0;
    nul = (const uint8_t *)memchr(data + 1, 0, size - 1);
    tlen = nul ? (size_t)(nul - data) - 1 : size - 1;
    text = (char *)malloc(tlen + 1);
    if (!text) return 0;
    memcpy(text, data + 1, tlen);
    text[tlen] = 0;
    memset(&d, 0, sizeof d);
    d.kind = kinds[data[0] & 3];
    d.text = text;
    d.len = tlen;
    d.vocab = fz_vocab;
    d.max_elements = 20000;
    d.max_stacks = 256;
    d.max_memory = (size_t)8 << 20;
    if (tlen && mlstack_grammar_compile(&d, &g, &err) == MLSTACK_OK) {
        if (mlstack_matcher_init(g, &m) == MLSTACK_OK) {
            for (i = nul ? (size_t)(nul - data) + 1 : size; i < size; i++) {
                int32_t tok = data[i] & 63;
                int n = mlstack_matcher_mask(m, bits), allowed = (bits[tok >> 5] >> (tok & 31)) & 1;
                mlstack_result r;
                if (n < 0) break;
                r = mlstack_matcher_accept(m, tok);
                if ((r == MLSTACK_OK) != allowed && !(r == MLSTACK_ERR_STATE)) abort(); /* the mask must agree */
                if (r == MLSTACK_ERR_STATE) break;
            }
            mlstack_matcher_free(m);
        }
        mlstack_grammar_free(g);
    } else if (tlen && err.message[0] == 0) {
        abort(); /* a failure must say why */
    }
    free(text);
    return 0;
}

#define FZ_NAME "fuzz_grammar"
#include "replay.h"
