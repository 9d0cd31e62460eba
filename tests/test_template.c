/* Chat templates (section 8): byte-identical with transformers/jinja2 on the recorded fixtures
   (tests/fixtures/template/, made by tools/make_template_fixtures.py), errors where they error,
   bounded failure on runaway templates, clear errors for unsupported constructs. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include <sys/stat.h>

#define FIX "tests/fixtures/template/"

static const char *jstr(const mlstack__json *obj, const char *key) {
    const mlstack__json *v = mlstack__json_get(obj, key);
    return v && v->type == MLSTACK__JSON_STRING ? v->str : NULL;
}

/* Shows where two outputs first differ. */
static void show_diff(const char *name, const char *got, size_t got_n, const char *want, size_t want_n) {
    size_t i = 0;
    while (i < got_n && i < want_n && got[i] == want[i]) i++;
    printf("  %s: first difference at byte %zu (got %zu bytes, want %zu)\n    got : ", name, i, got_n, want_n);
    fwrite(got + (i > 30 ? i - 30 : 0), 1, (got_n - (i > 30 ? i - 30 : 0)) > 80 ? 80 : got_n - (i > 30 ? i - 30 : 0), stdout);
    printf("\n    want: ");
    fwrite(want + (i > 30 ? i - 30 : 0), 1, (want_n - (i > 30 ? i - 30 : 0)) > 80 ? 80 : want_n - (i > 30 ? i - 30 : 0), stdout);
    printf("\n");
}

/* Compares one result with a fixture case ("output" or "error"). Returns 1 when it matches. */
static int check_case(const char *where, const mlstack__json *cs, mlstack_result r, const char *out, size_t out_n,
                      const mlstack_error *err) {
    const mlstack__json *want = mlstack__json_get(cs, "output");
    const char *name = jstr(cs, "name");
    if (want) {
        int same = r == MLSTACK_OK && out_n == want->len && memcmp(out, want->str, out_n) == 0;
        CHECKF(same, "%s %s: %s", where, name, r ? err->message : "output differs");
        if (!same && r == MLSTACK_OK) show_diff(name, out, out_n, want->str, want->len);
        return same;
    }
    CHECKF(r != MLSTACK_OK, "%s %s: rendered, but transformers raised %s", where, name, jstr(cs, "error"));
    return r != MLSTACK_OK;
}

static void test_unit_fixtures(void) {
    size_t n;
    char *text = tl_read(FIX "unit.json", &n);
    mlstack__json_doc doc;
    const mlstack__json *cs;
    mlstack_error err;
    int total = 0, same = 0;
    if (!text) {
        CHECKF(0, "missing %sunit.json", FIX);
        return;
    }
    CHECK(mlstack__json_parse(&doc, text, n, "unit.json", &err) == MLSTACK_OK);
    for (cs = mlstack__json_get(doc.root, "cases")->child; cs; cs = cs->next) {
        mlstack_template_options o;
        char *out = NULL;
        size_t out_n = 0;
        const mlstack__json *tpl = mlstack__json_get(cs, "template");
        mlstack_result r;
        memset(&o, 0, sizeof o);
        o.extra_json = jstr(cs, "vars_json");
        r = mlstack_template_render(tpl->str, tpl->len, NULL, 0, &o, &out, &out_n, &err);
        same += check_case("unit", cs, r, out, out_n, &err);
        total++;
        mlstack_template_free_output(out);
    }
    printf("unit templates: %d/%d match jinja2\n", same, total);
    mlstack__json_free(&doc);
    free(text);
}

static void test_family(const char *family) {
    char path[512], dir[256];
    size_t n;
    char *text;
    mlstack__json_doc doc;
    const mlstack__json *cs;
    mlstack_error err;
    mlstack_chat_template *t = NULL;
    const char *source;
    int total = 0, same = 0, outputs = 0;
    struct stat st;
    snprintf(path, sizeof path, FIX "%s.json", family);
    text = tl_read(path, &n);
    if (!text) {
        CHECKF(0, "missing %s", path);
        return;
    }
    CHECK(mlstack__json_parse(&doc, text, n, path, &err) == MLSTACK_OK);
    source = jstr(doc.root, "template_source");
    if (source && strstr(source, ".jinja")) {
        /* the template is a fixture file; load it through a config as a folder would give it */
        size_t tn;
        char *tpl, *cfg;
        mlstack__json_doc tmp;
        snprintf(path, sizeof path, FIX "%s", source);
        tpl = tl_read(path, &tn);
        CHECKF(tpl != NULL, "missing %s", path);
        if (!tpl) goto done;
        cfg = (char *)malloc(tn * 6 + 64);
        {
            /* JSON-escape the template into {"chat_template": "..."} */
            size_t i, k = 0;
            k += (size_t)sprintf(cfg, "{\"chat_template\": \"");
            for (i = 0; i < tn; i++) {
                unsigned char ch = (unsigned char)tpl[i];
                if (ch == '"' || ch == '\\') { cfg[k++] = '\\'; cfg[k++] = (char)ch; }
                else if (ch == '\n') { cfg[k++] = '\\'; cfg[k++] = 'n'; }
                else if (ch < 0x20) k += (size_t)sprintf(cfg + k, "\\u%04x", ch);
                else cfg[k++] = (char)ch;
            }
            k += (size_t)sprintf(cfg + k, "\"}");
            CHECK(mlstack__json_parse(&tmp, cfg, k, "cfg", &err) == MLSTACK_OK);
            mlstack__json_free(&tmp);
            CHECKF(mlstack_chat_template_from_config(cfg, k, &t, &err) == MLSTACK_OK, "%s", err.message);
        }
        free(cfg);
        free(tpl);
    } else {
        snprintf(dir, sizeof dir, "../shared/tokenizers/%s", family);
        if (stat(dir, &st) != 0) {
            SKIP("%s: %s is absent, the %s templates were NOT checked", family, dir, family);
            goto done;
        }
        CHECKF(mlstack_chat_template_open(dir, &t, &err) == MLSTACK_OK, "%s: %s", dir, err.message);
    }
    if (!t) goto done;
    for (cs = mlstack__json_get(doc.root, "cases")->child; cs; cs = cs->next) {
        mlstack_template_options o;
        char *out = NULL;
        size_t out_n = 0;
        const mlstack__json *m = mlstack__json_get(cs, "messages_json"), *agp = mlstack__json_get(cs, "add_generation_prompt");
        mlstack_result r;
        memset(&o, 0, sizeof o);
        o.add_generation_prompt = agp && agp->type == MLSTACK__JSON_TRUE;
        o.tools_json = jstr(cs, "tools_json");
        o.extra_json = jstr(cs, "kwargs_json");
        r = mlstack_chat_template_apply(t, NULL, m->str, m->len, &o, &out, &out_n, &err);
        same += check_case(family, cs, r, out, out_n, &err);
        outputs += mlstack__json_get(cs, "output") != NULL;
        total++;
        mlstack_template_free_output(out);
    }
    printf("%-18s %2d cases (%2d rendered, %2d errors in transformers): %2d identical\n", family, total, outputs, total - outputs, same);
done:
    mlstack_chat_template_close(t);
    mlstack__json_free(&doc);
    free(text);
}

static mlstack_result render(const char *tpl, const char *vars, const mlstack_template_options *base, char **out, mlstack_error *err) {
    mlstack_template_options o;
    size_t n;
    if (base) o = *base;
    else memset(&o, 0, sizeof o);
    o.extra_json = vars;
    *out = NULL;
    return mlstack_template_render(tpl, strlen(tpl), NULL, 0, &o, out, &n, err);
}

/* The output of a template that must render; "" on failure (and a failed check). */
static int renders_as(const char *tpl, const char *vars, const char *want) {
    char *out;
    mlstack_error err;
    mlstack_result r = render(tpl, vars, NULL, &out, &err);
    int ok = r == MLSTACK_OK && strcmp(out, want) == 0;
    CHECKF(ok, "template %s: got \"%s\" (%s), want \"%s\"", tpl, r ? "" : out, r ? err.message : "ok", want);
    mlstack_template_free_output(out);
    return ok;
}

static void fails_with(const char *tpl, mlstack_result want, const char *must_mention) {
    char *out;
    mlstack_error err;
    mlstack_template_options o;
    mlstack_result r;
    memset(&o, 0, sizeof o);
    o.max_steps = 2000000;
    err.message[0] = 0;
    r = render(tpl, NULL, &o, &out, &err);
    CHECKF(r == want && out == NULL, "template %.60s: result %d (%s), want %d", tpl, r, r ? err.message : "rendered", want);
    if (must_mention) CHECKF(strstr(err.message, must_mention) != NULL, "message \"%s\" should mention \"%s\"", err.message, must_mention);
    mlstack_template_free_output(out);
}

static void test_limits(void) {
    char *big;
    size_t i;
    /* runaway templates end with a clear, bounded error */
    fails_with("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", MLSTACK_ERR_LIMIT, "recursion");
    fails_with("{% for i in range(10**9) %}x{% endfor %}", MLSTACK_ERR_LIMIT, "MAX_RANGE");
    fails_with("{% for i in range(100000) %}{% for j in range(100) %}{% endfor %}{% endfor %}", MLSTACK_ERR_LIMIT, "steps");
    fails_with("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", MLSTACK_ERR_LIMIT, NULL);
    fails_with("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", MLSTACK_ERR_LIMIT, "output");
    fails_with("{{ 'x' * 100000000000 }}", MLSTACK_ERR_LIMIT, NULL);
    fails_with("{{ 2 ** 100 }}", MLSTACK_ERR_UNSUPPORTED, "64 bits");
    /* deep nesting is refused before it can exhaust the C stack */
    big = (char *)malloc(400000);
    {
        char *p = big;
        p += sprintf(p, "{{ ");
        for (i = 0; i < 50000; i++) *p++ = '(';
        *p++ = '1';
        for (i = 0; i < 50000; i++) *p++ = ')';
        strcpy(p, " }}");
        fails_with(big, MLSTACK_ERR_LIMIT, "nested");
        p = big;
        for (i = 0; i < 20000; i++) p += sprintf(p, "{%% if 1 %%}");
        fails_with(big, MLSTACK_ERR_LIMIT, "nested");
    }
    for (i = 0; i < 60000; i++) big[i] = '[';
    big[60000] = 0;
    {
        char *out;
        mlstack_error err;
        mlstack_result r = mlstack_template_render("{{ x }}", 7, big, 60000, NULL, &out, NULL, &err);
        CHECK(r == MLSTACK_ERR_FORMAT && out == NULL);
    }
    free(big);
    {
        mlstack_template_options o;
        char *out;
        mlstack_error err;
        memset(&o, 0, sizeof o);
        o.max_memory = 1 << 20;
        CHECK(render("{% set ns = namespace(s='') %}{% for i in range(20000) %}{% set ns.s = ns.s ~ 'abcdefgh' %}{% endfor %}{{ ns.s | length }}",
                     NULL, &o, &out, &err) == MLSTACK_ERR_LIMIT);
    }
}

static void test_unsupported_and_errors(void) {
    fails_with("{% call foo() %}x{% endcall %}", MLSTACK_ERR_UNSUPPORTED, "call");
    fails_with("{% include 'x.jinja' %}", MLSTACK_ERR_UNSUPPORTED, "include");
    fails_with("{% extends 'x' %}", MLSTACK_ERR_UNSUPPORTED, "extends");
    fails_with("{{ [3, 1] | sort }}", MLSTACK_ERR_UNSUPPORTED, "sort");
    fails_with("{% for x in [1] recursive %}{% endfor %}", MLSTACK_ERR_UNSUPPORTED, "recursive");
    fails_with("{{ '%s' % 1 }}", MLSTACK_ERR_UNSUPPORTED, "formatting");
    fails_with("{{ '{}'.format(1) }}", MLSTACK_ERR_UNSUPPORTED, "format");
    fails_with("{{ 'x' is no_such_test }}", MLSTACK_ERR_UNSUPPORTED, "no_such_test");
    fails_with("{{ 'ǅ' | upper }}", MLSTACK_ERR_UNSUPPORTED, "case mapping");
    fails_with("{{ range(3) }}", MLSTACK_ERR_UNSUPPORTED, "range");
    fails_with("{% if x %}", MLSTACK_ERR_FORMAT, "never closed");
    fails_with("line1\n  {{ 1 + }}", MLSTACK_ERR_FORMAT, "line 2, column");
    fails_with("{{ 'unterminated }}", MLSTACK_ERR_FORMAT, "unterminated");
    fails_with("{{ raise_exception('Roles must alternate') }}", MLSTACK_ERR_INVALID_ARG, "raise_exception: Roles must alternate");
    fails_with("\xff{{ 1 }}", MLSTACK_ERR_FORMAT, "UTF-8");
    fails_with("{{ u.x }}", MLSTACK_ERR_INVALID_ARG, "'u' is undefined");
    renders_as("{{ x }}", "{\"x\": [1, \"a\"]}", "[1, 'a']");
}

static void test_api(void) {
    mlstack_chat_template *t = NULL;
    mlstack_error err;
    char *out;
    size_t n;
    mlstack_template_options o;
    mlstack_chat_message msgs[2];
    static const char cfg[] =
        "{\"bos_token\": {\"content\": \"<s>\", \"lstrip\": false}, \"eos_token\": \"</s>\", \"pad_token\": null,"
        " \"chat_template\": [{\"name\": \"default\", \"template\": \"D{{ bos_token }}{{ messages[0].content }}{{ eos_token }}\"},"
        " {\"name\": \"tool_use\", \"template\": \"T{{ tools | length }}\"}, {\"name\": \"rag\", \"template\": \"R\"}]}";
    memset(&o, 0, sizeof o);
    CHECK(mlstack_chat_template_from_config(cfg, sizeof cfg - 1, &t, &err) == MLSTACK_OK);
    if (!t) return;
    CHECK(strcmp(mlstack_chat_template_token(t, "bos_token"), "<s>") == 0);
    CHECK(strcmp(mlstack_chat_template_token(t, "eos_token"), "</s>") == 0);
    CHECK(mlstack_chat_template_token(t, "pad_token") == NULL);
    CHECK(strcmp(mlstack_chat_template_get(t, NULL, 0), "D{{ bos_token }}{{ messages[0].content }}{{ eos_token }}") == 0);
    CHECK(strcmp(mlstack_chat_template_get(t, NULL, 1), "T{{ tools | length }}") == 0);
    CHECK(strcmp(mlstack_chat_template_get(t, "rag", 0), "R") == 0);
    CHECK(mlstack_chat_template_get(t, "nope", 0) == NULL);
    CHECK(mlstack_chat_template_apply(t, NULL, "[{\"role\":\"user\",\"content\":\"hi\"}]", strlen("[{\"role\":\"user\",\"content\":\"hi\"}]"), &o, &out, &n, &err) == MLSTACK_OK &&
          strcmp(out, "D<s>hi</s>") == 0 && n == 10);
    mlstack_template_free_output(out);
    o.tools_json = "[{\"a\": 1}, {\"b\": 2}]";
    CHECK(mlstack_chat_template_apply(t, NULL, "[{\"role\":\"user\",\"content\":\"hi\"}]", strlen("[{\"role\":\"user\",\"content\":\"hi\"}]"), &o, &out, &n, &err) == MLSTACK_OK &&
          strcmp(out, "T2") == 0);
    mlstack_template_free_output(out);
    o.tools_json = NULL;
    o.bos_token = "[BOS]";
    CHECK(mlstack_chat_template_apply(t, "default", "[{\"role\":\"user\",\"content\":\"x\"}]", strlen("[{\"role\":\"user\",\"content\":\"x\"}]"), &o, &out, &n, &err) == MLSTACK_OK &&
          strcmp(out, "D[BOS]x</s>") == 0);
    mlstack_template_free_output(out);
    CHECK(mlstack_chat_template_apply(t, NULL, "[]", strlen("[]"), &o, &out, &n, &err) == MLSTACK_ERR_INVALID_ARG && out == NULL);
    CHECK(mlstack_chat_template_apply(t, NULL, "{\"role\":1}", strlen("{\"role\":1}"), &o, &out, &n, &err) == MLSTACK_ERR_INVALID_ARG);
    CHECK(mlstack_chat_template_apply(t, NULL, "[1]", strlen("[1]"), &o, &out, &n, &err) == MLSTACK_ERR_INVALID_ARG);
    CHECK(mlstack_chat_template_apply(t, NULL, "[{", strlen("[{"), &o, &out, &n, &err) == MLSTACK_ERR_FORMAT);
    CHECK(mlstack_chat_template_apply(t, "nope", "[]", strlen("[]"), &o, &out, &n, &err) == MLSTACK_ERR_NOT_FOUND);
    mlstack_chat_template_close(t);
    CHECK(mlstack_chat_template_from_config("{\"eos_token\": \"x\"}", 18, &t, &err) == MLSTACK_ERR_NOT_FOUND && t == NULL);
    CHECK(mlstack_chat_template_from_config("{\"chat_template\": 5}", 20, &t, &err) == MLSTACK_ERR_FORMAT);
    CHECK(mlstack_chat_template_open("no/such/folder", &t, &err) == MLSTACK_ERR_NOT_FOUND);

    /* plain messages; null content is left out as transformers drops None */
    msgs[0].role = "user";
    msgs[0].content = "a";
    msgs[1].role = "assistant";
    msgs[1].content = NULL;
    memset(&o, 0, sizeof o);
    o.add_generation_prompt = 1;
    {
        static const char tpl[] = "{% for m in messages %}{{ m.role }}:{{ m.content is defined }};{% endfor %}{{ add_generation_prompt }}";
        CHECK(mlstack_template_render_messages(tpl, sizeof tpl - 1, msgs, 2, &o, &out, &n, &err) == MLSTACK_OK &&
              strcmp(out, "user:True;assistant:False;True") == 0);
        mlstack_template_free_output(out);
    }
    /* reasoning fields are aliased as transformers does */
    CHECK(mlstack_template_render("{{ messages[0] | tojson }}", 26, "[{\"role\":\"assistant\",\"reasoning\":\"r\",\"content\":\"c\",\"x\":null}]", 61,
                                  NULL, &out, &n, &err) == MLSTACK_OK &&
          strcmp(out, "{\"thinking\": \"r\", \"role\": \"assistant\", \"reasoning\": \"r\", \"content\": \"c\", \"reasoning_content\": \"r\"}") == 0);
    mlstack_template_free_output(out);
    /* strftime_now with a fixed clock (local time; 2024-01-15 12:00 UTC is mid-day everywhere) */
    memset(&o, 0, sizeof o);
    o.now_unix = 1705320000;
    CHECK(mlstack_template_render("{{ strftime_now('%Y-%m') }}", 27, NULL, 0, &o, &out, &n, &err) == MLSTACK_OK && strcmp(out, "2024-01") == 0);
    mlstack_template_free_output(out);
    CHECK(mlstack_template_render(NULL, 3, NULL, 0, NULL, &out, &n, &err) == MLSTACK_ERR_INVALID_ARG);
}

/* A folder with chat_template.jinja and additional_chat_templates/ beside tokenizer_config.json:
   the .jinja files replace the config's template, as in transformers 5. */
static void test_folder_files(void) {
    const char *dir = "build/tmp_template_folder";
    FILE *f;
    mlstack_chat_template *t = NULL;
    mlstack_error err;
    mlstack__mkdir("build");
    mlstack__mkdir(dir);
    mlstack__mkdir("build/tmp_template_folder/additional_chat_templates");
    f = fopen("build/tmp_template_folder/tokenizer_config.json", "wb");
    if (!f) {
        SKIP("cannot write %s", dir);
        return;
    }
    fputs("{\"chat_template\": \"config\", \"eos_token\": \"E\"}", f);
    fclose(f);
    CHECK(mlstack_chat_template_open(dir, &t, &err) == MLSTACK_OK && strcmp(mlstack_chat_template_get(t, NULL, 0), "config") == 0);
    mlstack_chat_template_close(t);
    f = fopen("build/tmp_template_folder/chat_template.jinja", "wb");
    fputs("from jinja file", f);
    fclose(f);
    CHECK(mlstack_chat_template_open(dir, &t, &err) == MLSTACK_OK && strcmp(mlstack_chat_template_get(t, NULL, 0), "from jinja file") == 0 &&
          strcmp(mlstack_chat_template_token(t, "eos_token"), "E") == 0);
    mlstack_chat_template_close(t);
    f = fopen("build/tmp_template_folder/additional_chat_templates/tool_use.jinja", "wb");
    fputs("tools!", f);
    fclose(f);
    CHECK(mlstack_chat_template_open(dir, &t, &err) == MLSTACK_OK && strcmp(mlstack_chat_template_get(t, NULL, 0), "from jinja file") == 0 &&
          strcmp(mlstack_chat_template_get(t, NULL, 1), "tools!") == 0);
    mlstack_chat_template_close(t);
    remove("build/tmp_template_folder/additional_chat_templates/tool_use.jinja");
    remove("build/tmp_template_folder/chat_template.jinja");
    remove("build/tmp_template_folder/tokenizer_config.json");
    rmdir("build/tmp_template_folder/additional_chat_templates");
    rmdir(dir);
}

int main(void) {
    static const char *const families[] = {"llama2-tinyllama", "phi3-mini-4k", "qwen2.5", "mistral-7b-v0.1", "smollm2"};
    size_t i;
    test_unit_fixtures();
    for (i = 0; i < sizeof families / sizeof families[0]; i++) test_family(families[i]);
    test_limits();
    test_unsupported_and_errors();
    test_api();
    test_folder_files();
    return tl_finish();
}
