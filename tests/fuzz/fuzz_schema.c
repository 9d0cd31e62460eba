/* Fuzz target for the JSON Schema compiler (schema and tool lists -> GBNF -> rules -> the start
   state) and its work budget.
   libFuzzer:  clang -g -O1 -fsanitize=fuzzer,address,undefined -DMLSTACK_LIBFUZZER -I. \
                   tests/fuzz/fuzz_schema.c -o build/fuzz_schema -lm -lpthread
   Input: the first byte picks the kind (bit 0: a JSON Schema or a tool list; bit 1: tool_choice
   "auto"), the rest is the text. Every compile runs under a small max_work, and:
   - a result is a clean success or a clean error with a message;
   - no compile uses more than max_work units and still succeeds: one that succeeded with W units
     must fail with MLSTACK_ERR_LIMIT under max_work W - 1 (the budget is exact and deterministic),
     and one that ran out stopped within one step's charge of the budget;
   - a cancel hook that says stop at its second poll ends every compile that polls twice with
     MLSTACK_ERR_CANCELLED, never with a grammar. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FZ_MAX_WORK 4000000u

static mlstack_vocab *fz_vocab;

static void fz_init(void) {
    /* the printable ASCII bytes, a few JSON pieces, the EOS (the last id) */
    static char one[95][2];
    static const char *const pieces[] = {"{\"",   "\":",  "\", \"",      "true",
                                         "false", "null", "<tool_call>", "</tool_call>"};
    const char *toks[95 + 8 + 1];
    int32_t eos = 95 + 8;
    mlstack_error err;
    int i;
    for (i = 0; i < 95; i++) one[i][0] = (char)(0x20 + i), one[i][1] = 0, toks[i] = one[i];
    for (i = 0; i < 8; i++) toks[95 + i] = pieces[i];
    toks[eos] = NULL;
    if (mlstack_vocab_from_bytes(toks, NULL, eos + 1, &eos, 1, &fz_vocab, &err) != MLSTACK_OK) abort();
}

static int fz_polls;
static int fz_cancel(void *user) {
    (void)user;
    return ++fz_polls >= 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const mlstack_grammar_kind kinds[4] = {MLSTACK_GRAMMAR_JSON_SCHEMA, MLSTACK_GRAMMAR_TOOL_CALLS,
                                                  MLSTACK_GRAMMAR_JSON_SCHEMA, MLSTACK_GRAMMAR_TOOL_CALLS_AUTO};
    mlstack_grammar_desc d;
    mlstack_grammar *g = NULL;
    mlstack_error err;
    mlstack_result r;
    uint64_t work = 0, again = 0;
    char *text;
    if (!fz_vocab) fz_init();
    if (size < 2) return 0;
    text = (char *)malloc(size);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = 0;
    memset(&d, 0, sizeof d);
    d.kind = kinds[data[0] & 3];
    d.text = text;
    d.len = size - 1;
    d.vocab = fz_vocab;
    d.max_elements = 200000;
    d.max_stacks = 256;
    d.max_memory = (size_t)8 << 20;
    d.max_work = FZ_MAX_WORK;
    err.message[0] = 0;
    r = mlstack__grammar_compile_work(&d, &g, &err, &work);
    if ((r == MLSTACK_OK) != (g != NULL)) abort();
    if (r != MLSTACK_OK && err.message[0] == 0) abort(); /* a failure must say why */
    if (r == MLSTACK_OK && work > FZ_MAX_WORK) abort();
    /* out of budget: stopped by the charge that crossed it (the largest single charge is a
       schema object's members, 64 units each, or the text's bytes) */
    if (r == MLSTACK_ERR_LIMIT && strstr(err.message, "max_work") && work > FZ_MAX_WORK + 64 * (uint64_t)size + 4096)
        abort();
    mlstack_grammar_free(g);
    g = NULL;
    if (r == MLSTACK_OK && work > 0) { /* the same input one unit short: the budget error, no grammar */
        d.max_work = work - 1;
        r = mlstack__grammar_compile_work(&d, &g, &err, &again);
        if (r != MLSTACK_ERR_LIMIT || g || !strstr(err.message, "max_work") || again < work) abort();
        mlstack_grammar_free(g);
        g = NULL;
        d.max_work = FZ_MAX_WORK;
    }
    if (work > ((uint64_t)1 << 16) + 1024) { /* polled at the start and after 64K units: cancelled there */
        fz_polls = 0;
        d.cancel = fz_cancel;
        r = mlstack__grammar_compile_work(&d, &g, &err, &again);
        if (r != MLSTACK_ERR_CANCELLED || g || fz_polls != 2 || !strstr(err.message, "cancelled")) abort();
        mlstack_grammar_free(g);
    }
    free(text);
    return 0;
}

#define FZ_NAME "fuzz_schema"
#include "replay.h"
