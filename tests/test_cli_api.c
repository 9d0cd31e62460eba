/* The public calls added for tools and embedders (the CLI uses nothing else):
   mlstack_chat_template_apply_messages against the JSON form, the JSON document API, and the
   clock. The template is SmolLM2's, from the folder `make model` writes. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"

static const char *SMOLLM2_CONFIG = "models/smollm2-135m-instruct/tokenizer_config.json"; /* make model */

static void test_apply_messages(void) {
    static const char *msgs_json =
        "[{\"role\":\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\",\"content\":\"Hi "
        "\\\"there\\\"\\n\\u00e9\"},"
        "{\"role\":\"assistant\",\"content\":\"Hello!\"},{\"role\":\"user\",\"content\":\"Bye\"}]";
    mlstack_chat_message msgs[4] = {
        {"system", "Be brief."}, {"user", "Hi \"there\"\n\xc3\xa9"}, {"assistant", "Hello!"}, {"user", "Bye"}};
    mlstack_chat_message bad[1] = {{"user", NULL}};
    mlstack_chat_template *tpl;
    mlstack_template_options to;
    mlstack_error err;
    char *cfg, *a = NULL, *b = NULL;
    size_t cfg_len = 0, a_len = 0, b_len = 0;
    cfg = tl_read(SMOLLM2_CONFIG, &cfg_len);
    if (!cfg) {
        SKIP("%s not found (make model fetches it)", SMOLLM2_CONFIG);
        return;
    }
    CHECK(mlstack_chat_template_from_config(cfg, cfg_len, &tpl, &err) == MLSTACK_OK);
    memset(&to, 0, sizeof to);
    to.add_generation_prompt = 1;
    CHECK(mlstack_chat_template_apply(tpl, NULL, msgs_json, strlen(msgs_json), &to, &a, &a_len, &err) == MLSTACK_OK);
    CHECK(mlstack_chat_template_apply_messages(tpl, NULL, msgs, 4, &to, &b, &b_len, &err) == MLSTACK_OK);
    CHECK(a && b && a_len == b_len && memcmp(a, b, a_len) == 0);
    CHECK(b && strstr(b, "<|im_start|>assistant\n") != NULL);
    mlstack_template_free_output(a);
    mlstack_template_free_output(b);
    CHECK(mlstack_chat_template_apply_messages(tpl, NULL, msgs, 0, &to, &b, &b_len, &err) == MLSTACK_ERR_INVALID_ARG);
    CHECK(b == NULL && strstr(err.message, "empty") != NULL);
    CHECK(mlstack_chat_template_apply_messages(tpl, NULL, bad, 1, &to, &b, &b_len, &err) == MLSTACK_ERR_INVALID_ARG);
    CHECK(strstr(err.message, "message 0 has no content") != NULL);
    CHECK(mlstack_chat_template_apply_messages(tpl, "no-such-template", msgs, 4, &to, &b, &b_len, &err) ==
          MLSTACK_ERR_NOT_FOUND);
    mlstack_chat_template_close(tpl);
    free(cfg);
}

static void test_json(void) {
    static const char *text =
        "{\"a\": [1, -2.5, \"x\\u00e9\\n\", true, false, null], \"b\": {\"c\": 9007199254740993}, "
        "\"s\": \"nul\\u0000in\"}";
    mlstack_json_doc *doc;
    mlstack_error err;
    const mlstack_json *root, *a, *v;
    size_t len = 0;
    int64_t i = 0;
    int k = 0;
    CHECK(mlstack_json_parse(text, strlen(text), "t", &doc, &err) == MLSTACK_OK);
    root = mlstack_json_root(doc);
    CHECK(mlstack_json_type_of(root) == MLSTACK_JSON_OBJECT && mlstack_json_length(root) == 3);
    a = mlstack_json_get(root, "a");
    CHECK(mlstack_json_type_of(a) == MLSTACK_JSON_ARRAY && mlstack_json_length(a) == 6);
    v = mlstack_json_child(a);
    CHECK(mlstack_json_int(v, &i) == 1 && i == 1 && mlstack_json_key(v) == NULL);
    v = mlstack_json_next(v);
    CHECK(mlstack_json_int(v, &i) == 0 && mlstack_json_number(v) == -2.5);
    v = mlstack_json_next(v);
    CHECK(strcmp(mlstack_json_string(v, &len), "x\xc3\xa9\n") == 0 && len == 4);
    v = mlstack_json_next(v);
    CHECK(mlstack_json_type_of(v) == MLSTACK_JSON_TRUE);
    v = mlstack_json_next(mlstack_json_next(v));
    CHECK(mlstack_json_type_of(v) == MLSTACK_JSON_NULL && mlstack_json_next(v) == NULL);
    CHECK(mlstack_json_int(mlstack_json_get(mlstack_json_get(root, "b"), "c"), &i) == 1 && i == 9007199254740993LL);
    CHECK(mlstack_json_string(mlstack_json_get(root, "s"), &len) != NULL && len == 6);
    CHECK(mlstack_json_get(root, "missing") == NULL && mlstack_json_type_of(NULL) == MLSTACK_JSON_NULL);
    CHECK(mlstack_json_string(a, NULL) == NULL && mlstack_json_number(a) == 0 && mlstack_json_child(v) == NULL);
    for (v = mlstack_json_child(root); v; v = mlstack_json_next(v)) k++;
    CHECK(k == 3 && strcmp(mlstack_json_key(mlstack_json_child(root)), "a") == 0);
    mlstack_json_free(doc);
    CHECK(mlstack_json_parse("{\"a\": 1,\n \"b\": }", 16, "body", &doc, &err) == MLSTACK_ERR_FORMAT && doc == NULL);
    CHECK(strstr(err.message, "body") && strstr(err.message, "line 2"));
    CHECK(mlstack_json_parse("[1] x", 5, NULL, &doc, &err) == MLSTACK_ERR_FORMAT && strstr(err.message, "trailing"));
    CHECK(mlstack_json_parse("\"\xff\"", 3, NULL, &doc, &err) == MLSTACK_ERR_FORMAT);
    {
        char deep[400];
        memset(deep, '[', sizeof deep);
        CHECK(mlstack_json_parse(deep, sizeof deep, NULL, &doc, &err) != MLSTACK_OK && doc == NULL);
    }
    CHECK(mlstack_json_parse(NULL, 0, NULL, &doc, &err) == MLSTACK_ERR_FORMAT);
    mlstack_json_free(NULL);
    { /* limits for untrusted text: values (the root counts), memory, bytes, depth */
        mlstack_json_options o;
        const char *six = "[0,[1],{\"k\":\"v\"}]"; /* 6 values */
        memset(&o, 0, sizeof o);
        o.max_nodes = 6;
        CHECK(mlstack_json_parse_opts(six, strlen(six), "body", &o, &doc, &err) == MLSTACK_OK);
        mlstack_json_free(doc);
        o.max_nodes = 5;
        CHECK(mlstack_json_parse_opts(six, strlen(six), "body", &o, &doc, &err) == MLSTACK_ERR_LIMIT && doc == NULL);
        CHECK(strstr(err.message, "body") && strstr(err.message, "more than 5 values"));
        memset(&o, 0, sizeof o);
        o.max_memory = 200; /* a couple of nodes */
        CHECK(mlstack_json_parse_opts(six, strlen(six), NULL, &o, &doc, &err) == MLSTACK_ERR_LIMIT && doc == NULL);
        CHECK(strstr(err.message, "bytes of memory"));
        o.max_memory = 1 << 16;
        CHECK(mlstack_json_parse_opts(six, strlen(six), NULL, &o, &doc, &err) == MLSTACK_OK);
        mlstack_json_free(doc);
        memset(&o, 0, sizeof o);
        o.max_bytes = 10;
        CHECK(mlstack_json_parse_opts(six, strlen(six), NULL, &o, &doc, &err) == MLSTACK_ERR_LIMIT);
        memset(&o, 0, sizeof o);
        o.max_depth = 1;
        CHECK(mlstack_json_parse_opts(six, strlen(six), NULL, &o, &doc, &err) != MLSTACK_OK && doc == NULL);
        CHECK(mlstack_json_parse_opts("[0]", 3, NULL, &o, &doc, &err) == MLSTACK_OK);
        mlstack_json_free(doc);
        CHECK(mlstack_json_parse_opts("[0]", 3, NULL, NULL, &doc, &err) == MLSTACK_OK); /* NULL: no limits */
        mlstack_json_free(doc);
    }
}

static void test_clock(void) {
    double a = mlstack_clock_seconds(), b = mlstack_clock_seconds();
    CHECK(a > 0 && b >= a);
}

int main(void) {
    test_apply_messages();
    test_json();
    test_clock();
    return tl_finish();
}
