/* Fuzz target for the chat-template engine (lexer, parser, evaluator) and the template
   selection from a tokenizer_config.json.
   libFuzzer:  clang -g -O1 -fsanitize=fuzzer,address,undefined -DMLSTACK_LIBFUZZER -I. \
                   tests/fuzz/fuzz_template.c -o build/fuzz_template -lm -lpthread
   replay:     cc -g -fsanitize=address,undefined -I. tests/fuzz/fuzz_template.c -o build/fuzz_template_replay \
                   -lm -lpthread && build/fuzz_template_replay tests/fuzz/corpus/template/FILES
   Input: the template text. If it contains a line "\n----\n", what follows is used as the
   messages JSON instead of the built-in conversation. Limits are small so that runaway
   inputs end quickly; every result must be a clean success or a clean error. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char default_messages[] =
    "[{\"role\":\"system\",\"content\":\"sys\"},{\"role\":\"user\",\"content\":\"h\\u00e9 {{x}}\"},"
    "{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":{\"a\":1.5}}}"
    "]},"
    "{\"role\":\"tool\",\"content\":\"ok\"}]";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data, *msgs = default_messages;
    size_t tlen = size, mlen = sizeof default_messages - 1, i;
    mlstack_template_options o;
    mlstack_error err;
    char *out = NULL;
    size_t out_len = 0;
    mlstack_result r;
    mlstack_chat_template *t = NULL;
    for (i = 0; i + 6 <= size; i++)
        if (memcmp(data + i, "\n----\n", 6) == 0) {
            tlen = i;
            msgs = text + i + 6;
            mlen = size - i - 6;
            break;
        }
    memset(&o, 0, sizeof o);
    o.add_generation_prompt = (int)(size & 1);
    o.bos_token = "<s>";
    o.tools_json = "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{}}}]";
    o.max_steps = 200000;
    o.max_output_bytes = 1 << 20;
    o.max_memory = 32 << 20;
    o.now_unix = 1700000000;
    r = mlstack_template_render(text, tlen, msgs, mlen, &o, &out, &out_len, &err);
    if (r == MLSTACK_OK && (!out || strlen(out) > out_len)) abort(); /* output must be NUL-terminated at out_len */
    if (r != MLSTACK_OK && out) abort();
    mlstack_template_free_output(out);
    /* the same bytes as a tokenizer_config.json */
    if (mlstack_chat_template_from_config(text, size, &t, &err) == MLSTACK_OK) {
        if (!mlstack_chat_template_get(t, NULL, 0) && !mlstack_chat_template_get(t, NULL, 1) && t == NULL) abort();
        r = mlstack_chat_template_apply(t, NULL, default_messages, sizeof default_messages - 1, &o, &out, &out_len,
                                        &err);
        mlstack_template_free_output(out);
        mlstack_chat_template_close(t);
    }
    return 0;
}

#define FZ_NAME "fuzz_template"
#include "replay.h"
