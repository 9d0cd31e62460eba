/* The stb-style opt-outs (MLSTACK_NO_TEMPLATE, _NO_GRAMMAR, _NO_RANKS, _NO_GGUF): the
   implementation compiled with some of them (given with -D on the command line), then one call
   into each part that was left out, which must fail with MLSTACK_ERR_UNSUPPORTED and a message
   naming the macro. A part that was not left out is not called. Run from the repository root. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"

#include <stdio.h>
#include <string.h>

static int failures;

static void expect(const char *what, mlstack_result r, const char *message, const char *macro) {
    if (r != MLSTACK_ERR_UNSUPPORTED || !strstr(message, macro)) {
        printf("optout: %s: result %d (%s), message \"%s\": expected MLSTACK_ERR_UNSUPPORTED naming %s\n", what, (int)r,
               mlstack_result_string(r), message, macro);
        failures++;
    }
}

int main(void) {
    mlstack_error err;
    int checks = 0;
    (void)err;
#if defined(MLSTACK_NO_TEMPLATE)
    {
        char *out = NULL;
        size_t n = 0;
        mlstack_result r;
        memset(&err, 0, sizeof err);
        r = mlstack_template_render("{{ 1 }}", 7, "[]", 2, NULL, &out, &n, &err);
        expect("mlstack_template_render", r, err.message, "MLSTACK_NO_TEMPLATE");
        if (out) failures++;
        checks++;
    }
#endif
#if defined(MLSTACK_NO_GRAMMAR)
    {
        mlstack_grammar_desc d;
        mlstack_grammar *g = NULL;
        mlstack_result r;
        memset(&d, 0, sizeof d);
        memset(&err, 0, sizeof err);
        d.kind = MLSTACK_GRAMMAR_GBNF;
        d.text = "root ::= \"a\"";
        d.len = strlen(d.text);
        r = mlstack_grammar_compile(&d, &g, &err);
        expect("mlstack_grammar_compile", r, err.message, "MLSTACK_NO_GRAMMAR");
        if (g) failures++;
        checks++;
    }
#endif
#if defined(MLSTACK_NO_GGUF)
    {
        mlstack_model_desc d;
        mlstack_model *m = NULL;
        mlstack_result r;
        memset(&d, 0, sizeof d);
        memset(&err, 0, sizeof err);
        d.path = "tests/fixtures/gguf/llama-q8_0.gguf";
        r = mlstack_model_open(&d, &m, &err);
        expect("mlstack_model_open (GGUF)", r, err.message, "MLSTACK_NO_GGUF");
        if (m) failures++;
        checks++;
    }
#endif
#if defined(MLSTACK_NO_RANKS)
    {
        mlstack_model *m = NULL;
        mlstack_engine *e = NULL;
        mlstack_engine_desc d;
        mlstack_result r;
        memset(&err, 0, sizeof err);
        r = mlstack_model_open_random("tests/fixtures/models/llama", MLSTACK_DTYPE_F32, 0, 1, &m, &err);
        if (r != MLSTACK_OK) {
            printf("optout: mlstack_model_open_random: %s\n", err.message);
            return 1;
        }
        memset(&d, 0, sizeof d);
        d.n_ranks = 2;
        r = mlstack_engine_init(m, &d, &e, &err);
        expect("mlstack_engine_init (2 ranks)", r, err.message, "MLSTACK_NO_RANKS");
        if (e) mlstack_engine_free(e);
        d.n_ranks = 1; /* one rank is the plain engine and still runs */
        r = mlstack_engine_init(m, &d, &e, &err);
        if (r != MLSTACK_OK) {
            printf("optout: mlstack_engine_init (1 rank): %s\n", err.message);
            failures++;
        }
        mlstack_engine_free(e);
        mlstack_model_close(m);
        checks++;
    }
#endif
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures != 0;
}
