/* Chat templates (>>template): byte-identical with transformers/jinja2 on the recorded fixtures
   (tests/fixtures/template/, made by tools/make_template_fixtures.py), errors where they error,
   bounded failure on runaway templates, clear errors for unsupported constructs. */
#define MLSTACK_IMPLEMENTATION
#include "mlstack.h"
#include "testlib.h"
#include <sys/stat.h>
#if !defined(_WIN32)
#include <pthread.h>
#endif

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
    fwrite(got + (i > 30 ? i - 30 : 0), 1, (got_n - (i > 30 ? i - 30 : 0)) > 80 ? 80 : got_n - (i > 30 ? i - 30 : 0),
           stdout);
    printf("\n    want: ");
    fwrite(want + (i > 30 ? i - 30 : 0), 1, (want_n - (i > 30 ? i - 30 : 0)) > 80 ? 80 : want_n - (i > 30 ? i - 30 : 0),
           stdout);
    printf("\n");
}

/* The error we give where transformers raised `error` (the fixtures record "Class: message", the
   class jinja2's or Python's, tools/make_template_fixtures.py's err_text): a template that does not
   parse is malformed (FORMAT); a filter or test we lack, found at compile time
   (TemplateAssertionError) or when reached (TemplateRuntimeError "No filter named"), is
   UNSUPPORTED; runaway recursion and ranges beyond the sandbox are LIMIT; every other failure while
   rendering (raise_exception, undefined values, wrong types, sandbox refusals) is in the data the
   template was given: INVALID_ARG. */
static mlstack_result want_error(const char *error) {
    size_t n = strcspn(error, ":");
#define IS_CLASS(name) (n == strlen(name) && strncmp(error, name, n) == 0)
    if (IS_CLASS("TemplateSyntaxError") || IS_CLASS("SyntaxError")) return MLSTACK_ERR_FORMAT;
    if (IS_CLASS("TemplateAssertionError") || strstr(error, ": No filter named") || strstr(error, ": No test named"))
        return MLSTACK_ERR_UNSUPPORTED;
    if (IS_CLASS("RecursionError") || IS_CLASS("OverflowError")) return MLSTACK_ERR_LIMIT;
#undef IS_CLASS
    return MLSTACK_ERR_INVALID_ARG;
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
    CHECKF(r == want_error(jstr(cs, "error")), "%s %s: %s (%s), but transformers raised %s (want %s)", where, name,
           mlstack_result_string(r), r ? err->message : "rendered", jstr(cs, "error"),
           mlstack_result_string(want_error(jstr(cs, "error"))));
    return r == want_error(jstr(cs, "error"));
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
                if (ch == '"' || ch == '\\') {
                    cfg[k++] = '\\';
                    cfg[k++] = (char)ch;
                } else if (ch == '\n') {
                    cfg[k++] = '\\';
                    cfg[k++] = 'n';
                } else if (ch < 0x20)
                    k += (size_t)sprintf(cfg + k, "\\u%04x", ch);
                else
                    cfg[k++] = (char)ch;
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
        const mlstack__json *m = mlstack__json_get(cs, "messages_json"),
                            *agp = mlstack__json_get(cs, "add_generation_prompt");
        mlstack_result r;
        memset(&o, 0, sizeof o);
        o.add_generation_prompt = agp && agp->type == MLSTACK__JSON_TRUE;
        o.tools_json = jstr(cs, "tools_json");
        o.extra_json = jstr(cs, "kwargs_json");
        if (mlstack__json_get(doc.root, "now_unix")) /* a template that prints strftime_now's date */
            o.now_unix = (int64_t)mlstack__json_get(doc.root, "now_unix")->i;
        r = mlstack_chat_template_apply(t, NULL, m->str, m->len, &o, &out, &out_n, &err);
        same += check_case(family, cs, r, out, out_n, &err);
        outputs += mlstack__json_get(cs, "output") != NULL;
        total++;
        mlstack_template_free_output(out);
    }
    printf("%-18s %2d cases (%2d rendered, %2d errors in transformers): %2d identical\n", family, total, outputs,
           total - outputs, same);
done:
    mlstack_chat_template_close(t);
    mlstack__json_free(&doc);
    free(text);
}

static uint64_t fnv1a64(const char *s, size_t n) {
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i;
    for (i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

/* Every template of ../shared/chat-templates/ over the conversations of shared_templates.json:
   transformers' output (length and FNV-1a 64 hash) or, where transformers raised, an error too.
   A mismatching output is written to build/template_diff/ for comparison with the script's --dump. */
static void test_shared_templates(void) {
    size_t n;
    char *text = tl_read(FIX "shared_templates.json", &n);
    mlstack__json_doc doc;
    const mlstack__json *cases, *tp, *now;
    mlstack_error err;
    int all_total = 0, all_same = 0, n_templates = 0;
    if (!text) {
        CHECKF(0, "missing %sshared_templates.json", FIX);
        return;
    }
    CHECK(mlstack__json_parse(&doc, text, n, "shared_templates.json", &err) == MLSTACK_OK);
    cases = mlstack__json_get(doc.root, "cases");
    now = mlstack__json_get(doc.root, "now_unix");
    for (tp = mlstack__json_get(doc.root, "templates")->child; tp; tp = tp->next) {
        char path[512];
        const char *name = jstr(tp, "template") ? jstr(tp, "template") : "?";
        const mlstack__json *cs, *o;
        size_t tn;
        char *tpl;
        int total = 0, same = 0;
        snprintf(path, sizeof path, "../shared/chat-templates/%s", name);
        tpl = tl_read(path, &tn);
        if (!tpl) {
            SKIP("%s is absent: template %s was NOT checked", path, name);
            continue;
        }
        n_templates++;
        for (cs = cases->child, o = mlstack__json_get(tp, "outputs")->child; cs && o; cs = cs->next, o = o->next) {
            mlstack_template_options opt;
            char *out = NULL, want_hash[24];
            size_t out_n = 0;
            const mlstack__json *m = mlstack__json_get(cs, "messages_json"),
                                *agp = mlstack__json_get(cs, "add_generation_prompt");
            const mlstack__json *wlen = mlstack__json_get(o, "len");
            const char *cname = jstr(cs, "name") ? jstr(cs, "name") : "?", *whash = jstr(o, "fnv1a64");
            mlstack_result r;
            int ok;
            memset(&opt, 0, sizeof opt);
            opt.add_generation_prompt = agp && agp->type == MLSTACK__JSON_TRUE;
            opt.tools_json = jstr(cs, "tools_json");
            opt.extra_json = jstr(doc.root, "template_kwargs_json");
            opt.now_unix = now ? (int64_t)now->i : 0;
            r = mlstack_template_render(tpl, tn, m->str, m->len, &opt, &out, &out_n, &err);
            if (wlen) {
                snprintf(want_hash, sizeof want_hash, "%016llx",
                         (unsigned long long)(r == MLSTACK_OK ? fnv1a64(out, out_n) : 0));
                ok = r == MLSTACK_OK && out_n == (size_t)wlen->i && whash && strcmp(want_hash, whash) == 0;
                CHECKF(ok, "%s %s: %s", name, cname, r ? err.message : "output differs from transformers'");
                if (!ok && r == MLSTACK_OK) {
                    FILE *f;
                    mlstack__mkdir("build");
                    mlstack__mkdir("build/template_diff");
                    snprintf(path, sizeof path, "build/template_diff/%s.%s.txt", name, cname);
                    if ((f = fopen(path, "wb")) != NULL) {
                        fwrite(out, 1, out_n, f);
                        fclose(f);
                    }
                }
            } else {
                ok = r == want_error(jstr(o, "error"));
                CHECKF(ok, "%s %s: %s (%s), but transformers raised %s (want %s)", name, cname,
                       mlstack_result_string(r), r ? err.message : "rendered", jstr(o, "error"),
                       mlstack_result_string(want_error(jstr(o, "error"))));
            }
            same += ok;
            total++;
            mlstack_template_free_output(out);
        }
        printf("  %-72s %2d/%2d\n", name, same, total);
        all_same += same;
        all_total += total;
        free(tpl);
    }
    printf("shared chat templates: %d templates, %d/%d cases identical to transformers (or both failed)\n", n_templates,
           all_same, all_total);
    mlstack__json_free(&doc);
    free(text);
}

static mlstack_result render(const char *tpl, const char *vars, const mlstack_template_options *base, char **out,
                             mlstack_error *err) {
    mlstack_template_options o;
    size_t n;
    if (base) o = *base;
    else
        memset(&o, 0, sizeof o);
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
    CHECKF(r == want && out == NULL, "template %.60s: result %d (%s), want %d", tpl, r, r ? err.message : "rendered",
           want);
    if (must_mention)
        CHECKF(strstr(err.message, must_mention) != NULL, "message \"%s\" should mention \"%s\"", err.message,
               must_mention);
    mlstack_template_free_output(out);
}

static void test_limits(void) {
    char *big;
    size_t i;
    /* runaway templates end with a clear, bounded error */
    fails_with("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", MLSTACK_ERR_LIMIT, "recursion");
    fails_with("{% for i in range(10**9) %}x{% endfor %}", MLSTACK_ERR_LIMIT, "MAX_RANGE");
    fails_with("{% for i in range(100000) %}{% for j in range(100) %}{% endfor %}{% endfor %}", MLSTACK_ERR_LIMIT,
               "steps");
    fails_with("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}", MLSTACK_ERR_LIMIT,
               NULL);
    fails_with("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}", MLSTACK_ERR_LIMIT, NULL);
    {
        mlstack_template_options o;
        char *out;
        mlstack_error err;
        memset(&o, 0, sizeof o);
        o.max_output_bytes = 1000;
        CHECK(render("{% for i in range(100) %}{{ 'x' * 100 }}{% endfor %}", NULL, &o, &out, &err) ==
                  MLSTACK_ERR_LIMIT &&
              strstr(err.message, "output") != NULL);
    }
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
        CHECK(render("{% set ns = namespace(s='') %}{% for i in range(20000) %}{% set ns.s = ns.s ~ 'abcdefgh' %}{% "
                     "endfor %}{{ ns.s | length }}",
                     NULL, &o, &out, &err) == MLSTACK_ERR_LIMIT);
    }
}

/* ---- hostile templates and inputs (issue 9): each ends quickly, with output or a clear error ---- */
static double hostile_case(const char *name, const char *tpl, const char *messages, const char *vars,
                           mlstack_result want, const char *want_out_or_msg) {
    mlstack_template_options o;
    mlstack_error err;
    char *out = NULL;
    size_t n;
    double t0 = mlstack__now(), dt, cpu;
    clock_t c0 = clock();
    mlstack_result r;
    memset(&o, 0, sizeof o);
    o.extra_json = vars;
    o.max_steps = 2000000; /* a tenth of the default, as in test_limits: the sanitizer build is ~10x slower */
    err.message[0] = 0;
    r = mlstack_template_render(tpl, strlen(tpl), messages, messages ? strlen(messages) : 0, &o, &out, &n, &err);
    dt = mlstack__now() - t0;
    cpu = (double)(clock() - c0) / CLOCKS_PER_SEC; /* the bound is on work: CPU time, not a busy machine's wall time */
    CHECKF(r == want, "hostile %s: result %d (%s), want %d", name, r, r ? err.message : "rendered", want);
    if (want == MLSTACK_OK && r == MLSTACK_OK)
        CHECKF(strcmp(out, want_out_or_msg) == 0, "hostile %s: got \"%.80s\", want \"%s\"", name, out, want_out_or_msg);
    if (want != MLSTACK_OK && want_out_or_msg)
        CHECKF(strstr(err.message, want_out_or_msg) != NULL, "hostile %s: message \"%s\" should mention \"%s\"", name,
               err.message, want_out_or_msg);
    CHECKF(cpu < 2.0, "hostile %s took %.2f s of CPU time (limit 2 s)", name, cpu);
    printf("  hostile %-28s %7.3f s CPU %7.3f s wall  %s\n", name, cpu, dt, r ? err.message : "rendered");
    mlstack_template_free_output(out);
    return dt;
}

/* {"a": {"k0": 0, ...}, "b": {...}} with n keys each (or one message with n extra keys). */
static char *many_keys(int n, int as_message) {
    char *buf = (char *)malloc((size_t)n * 40 + 200), *p = buf;
    int half, i;
    p += sprintf(p, as_message ? "[{\"role\": \"user\", \"content\": \"x\"" : "{");
    for (half = 0; half < (as_message ? 1 : 2); half++) {
        if (!as_message) p += sprintf(p, "%s\"%c\": {", half ? ", " : "", 'a' + half);
        for (i = 0; i < n; i++) p += sprintf(p, "%s\"key_%d\": %d", i || as_message ? ", " : "", i, i);
        if (!as_message) p += sprintf(p, "}");
    }
    sprintf(p, as_message ? "}]" : "}");
    return buf;
}

typedef struct {
    int failures_before, ok;
} stack_job;

/* Deep templates on a thread with a 256 KiB stack: the byte-bounded depth limit must stop them
   before the stack ends (an AST-level limit let each level's frames overflow small stacks). */
static void *deep_on_small_stack(void *arg) {
    stack_job *job = (stack_job *)arg;
    char *big = (char *)malloc(400000), *p = big;
    size_t i;
    p += sprintf(p, "{{ ");
    for (i = 0; i < 50000; i++) *p++ = '(';
    *p++ = '1';
    for (i = 0; i < 50000; i++) *p++ = ')';
    strcpy(p, " }}");
    hostile_case("parens_50000_thread256k", big, NULL, NULL, MLSTACK_ERR_LIMIT, "nested");
    p = big;
    for (i = 0; i < 20000; i++) p += sprintf(p, "{%% if 1 %%}");
    hostile_case("ifs_20000_thread256k", big, NULL, NULL, MLSTACK_ERR_LIMIT, "nested");
    hostile_case("macro_recursion_thread256k", "{% macro f(n) %}{{ f(n + 1) | trim }}{% endmacro %}{{ f(0) }}", NULL,
                 NULL, MLSTACK_ERR_LIMIT, "recursion");
    hostile_case("caller_recursion_thread256k",
                 "{% macro f(n) %}{% call f(n + 1) %}{{ caller() }}{% endcall %}{% endmacro %}{{ f(0) }}", NULL, NULL,
                 MLSTACK_ERR_LIMIT, NULL);
    free(big);
    job->ok = 1;
    return NULL;
}

#if defined(_WIN32)
static unsigned __stdcall deep_on_small_stack_win(void *arg) {
    deep_on_small_stack(arg);
    return 0;
}
#endif

static void test_hostile(void) {
    char *keys;
#if !defined(_WIN32)
    pthread_attr_t attr;
    pthread_t th;
#endif
    stack_job job;
    /* repetition of empty values used to loop N times in one step */
    hostile_case("empty_repeat",
                 "{{ '' * 9223372036854775807 }}|{{ [] * 9223372036854775807 }}|{{ 9223372036854775807 * '' }}", NULL,
                 NULL, MLSTACK_OK, "|[]|");
    hostile_case("empty_repeat_loop", "{% for i in range(100000) %}{{ '' * 9223372036854775807 }}{% endfor %}x", NULL,
                 NULL, MLSTACK_OK, "x");
    /* unique was quadratic in one step */
    hostile_case("unique_100000", "{{ range(100000) | unique | list | length }}", NULL, NULL, MLSTACK_OK, "100000");
    hostile_case("unique_loop", "{% for i in range(100000) %}{{ range(100000) | unique | list | length }}{% endfor %}",
                 NULL, NULL, MLSTACK_ERR_LIMIT, "steps");
    /* substring search was naive: a 200 KB needle in a 400 KB haystack (4e10 byte compares) */
    hostile_case(
        "search_long_needle",
        "{% set h = 'a' * 400000 %}{% set nd = 'a' * 200000 ~ 'b' %}{{ nd in h }} {{ h.count(nd) }} {{ h.find(nd) }} "
        "{{ h.rfind(nd) }} {{ h.replace(nd, 'x') | length }} {{ h.split(nd) | length }} {{ h.rsplit(nd) | length }} "
        "{{ h | replace(nd, '') | length }}",
        NULL, NULL, MLSTACK_OK, "False 0 -1 -1 400000 1 1 400000");
    hostile_case("search_loop",
                 "{% set h = 'a' * 1000000 %}{% for i in range(100000) %}{% if 'b' in h %}{% endif %}{% endfor %}",
                 NULL, NULL, MLSTACK_ERR_LIMIT, "steps");
    /* a needle found within a few bytes was charged nothing (the charge per match rounded down to 0), and
       string methods were not charged for their string: a 1-byte count over 1 MB in a loop ran for hours */
    hostile_case("count_1byte_loop",
                 "{% set h = 'a' * 1000000 %}{% for i in range(100000) %}{{ h.count('a') }}{% endfor %}", NULL, NULL,
                 MLSTACK_ERR_LIMIT, "steps");
    hostile_case("count_1byte_once", "{% set h = 'a' * 1000000 %}{{ h.count('a') }}", NULL, NULL, MLSTACK_OK,
                 "1000000");
    hostile_case("count_7byte_loop",
                 "{% set h = 'abcdefg' * 150000 %}{% for i in range(100000) %}{{ h.count('abcdefg') }}{% endfor %}",
                 NULL, NULL, MLSTACK_ERR_LIMIT, "steps");
    hostile_case("replace_1byte_loop",
                 "{% set h = 'ab' * 500000 %}{% for i in range(100000) %}{{ h.replace('a', '') | length }}{% endfor %}",
                 NULL, NULL, MLSTACK_ERR_LIMIT, "steps");
    hostile_case("count_short_haystack_loop",
                 "{% for i in range(100000) %}{% for j in range(100000) %}{{ 'aaaa'.count('a') }}{% endfor %}"
                 "{% endfor %}",
                 NULL, NULL, MLSTACK_ERR_LIMIT, "steps");
    hostile_case("isspace_loop", "{% set h = ' ' * 1000000 %}{% for i in range(100000) %}{{ h.isspace() }}{% endfor %}",
                 NULL, NULL, MLSTACK_ERR_LIMIT, "steps");
    hostile_case("startswith_loop",
                 "{% set h = 'a' * 1000000 %}{% for i in range(100000) %}{{ h.startswith(h) }}{% endfor %}", NULL, NULL,
                 MLSTACK_ERR_LIMIT, "steps");
    hostile_case("length_loop", "{% set h = 'a' * 1000000 %}{% for i in range(100000) %}{{ h | length }}{% endfor %}",
                 NULL, NULL, MLSTACK_ERR_LIMIT, "steps");
    hostile_case(
        "list_in_loop",
        "{% set l = range(100000) | list %}{% for i in range(100000) %}{% if -1 in l %}{% endif %}{% endfor %}", NULL,
        NULL, MLSTACK_ERR_LIMIT, "steps");
    /* == on dicts was quadratic; JSON objects with many keys were quadratic to load */
    keys = many_keys(20000, 0);
    hostile_case("dict_eq_20000_keys", "{{ a == b }} {{ a | length }} {{ a.key_19999 }}", NULL, keys, MLSTACK_OK,
                 "True 20000 19999");
    hostile_case("dict_eq_loop", "{% for i in range(100000) %}{% if a == b %}{% endif %}{% endfor %}", NULL, keys,
                 MLSTACK_ERR_LIMIT, "steps");
    free(keys);
    keys = many_keys(100000, 1);
    hostile_case("message_100000_keys", "{{ messages[0] | length }} {{ messages[0].key_5 }}", keys, NULL, MLSTACK_OK,
                 "100002 5");
    free(keys);
    /* the nesting limit is in bytes of stack: a tight max_stack stops nesting well below the level cap */
    {
        mlstack_template_options o;
        char *out, tpl[700];
        mlstack_error err;
        int i;
        memset(&o, 0, sizeof o);
        o.max_stack = 4096;
        strcpy(tpl, "{{ ");
        for (i = 0; i < 250; i++) strcat(tpl, "(");
        strcat(tpl, "1");
        for (i = 0; i < 250; i++) strcat(tpl, ")");
        strcat(tpl, " }}");
        CHECK(render(tpl, NULL, &o, &out, &err) == MLSTACK_ERR_LIMIT &&
              strstr(err.message, "bytes of C stack") != NULL);
        CHECK(render("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(200) }}", NULL, &o, &out,
                     &err) == MLSTACK_ERR_LIMIT &&
              strstr(err.message, "bytes of C stack") != NULL);
        o.max_stack = 0;
        CHECK(render("{% macro f(n) %}{% if n %}{{ f(n - 1) }}{% endif %}x{% endmacro %}{{ f(20) | length }}", NULL, &o,
                     &out, &err) == MLSTACK_OK &&
              strcmp(out, "21") == 0);
        mlstack_template_free_output(out);
    }
    /* recursion is bounded by stack bytes: run on a thread with a small stack */
    memset(&job, 0, sizeof job);
#if defined(_WIN32)
    {
        HANDLE h = (HANDLE)_beginthreadex(NULL, 256 << 10, deep_on_small_stack_win, &job,
                                          STACK_SIZE_PARAM_IS_A_RESERVATION, NULL);
        CHECK(h != NULL);
        if (h) WaitForSingleObject(h, INFINITE), CloseHandle(h);
    }
#else
    pthread_attr_init(&attr);
    CHECK(pthread_attr_setstacksize(&attr, 256 << 10) == 0);
    CHECK(pthread_create(&th, &attr, deep_on_small_stack, &job) == 0);
    pthread_join(th, NULL);
    pthread_attr_destroy(&attr);
#endif
    CHECK(job.ok);
}

static void test_unsupported_and_errors(void) {
    fails_with("{% call foo() %}x{% endcall %}", MLSTACK_ERR_INVALID_ARG, "'foo' is undefined");
    fails_with("{% autoescape true %}x{% endautoescape %}", MLSTACK_ERR_UNSUPPORTED, "autoescape");
    fails_with("{% include 'x.jinja' %}", MLSTACK_ERR_UNSUPPORTED, "include");
    fails_with("{% extends 'x' %}", MLSTACK_ERR_UNSUPPORTED, "extends");
    fails_with("{{ 'a b' | wordwrap(1) }}", MLSTACK_ERR_UNSUPPORTED, "wordwrap");
    /* unknown filters and tests fail when reached, not when parsed (jinja2's timing) */
    renders_as("{% if false %}{{ x | no_such_filter }}{{ x is no_such_test }}{% endif %}ok", NULL, "ok");
    fails_with("{% if true %}{{ 'x' | no_such_filter }}{% endif %}", MLSTACK_ERR_UNSUPPORTED, "no_such_filter");
    fails_with("{% for x in [1] recursive %}{% endfor %}", MLSTACK_ERR_UNSUPPORTED, "recursive");
    fails_with("{{ '%*d' % (3, 1) }}", MLSTACK_ERR_UNSUPPORTED, "'*' widths");
    fails_with("{{ '{}'.format(1) }}", MLSTACK_ERR_UNSUPPORTED, "format");
    fails_with("{{ 'x' is no_such_test }}", MLSTACK_ERR_UNSUPPORTED, "no_such_test");
    fails_with("{{ 'ǅ' | upper }}", MLSTACK_ERR_UNSUPPORTED, "case mapping");
    fails_with("{{ range(3) }}", MLSTACK_ERR_UNSUPPORTED, "range");
    fails_with("{% if x %}", MLSTACK_ERR_FORMAT, "never closed");
    fails_with("line1\n  {{ 1 + }}", MLSTACK_ERR_FORMAT, "line 2, column");
    fails_with("{{ 'unterminated }}", MLSTACK_ERR_FORMAT, "unterminated");
    fails_with("{{ raise_exception('Roles must alternate') }}", MLSTACK_ERR_INVALID_ARG,
               "raise_exception: Roles must alternate");
    fails_with("\xff{{ 1 }}", MLSTACK_ERR_FORMAT, "UTF-8");
    fails_with("{{ u.x }}", MLSTACK_ERR_INVALID_ARG, "'u' is undefined");
    renders_as("{{ x }}", "{\"x\": [1, \"a\"]}", "[1, 'a']");
    { /* a filter block applies its whole chain, however long */
        char tpl[1024];
        int i;
        strcpy(tpl, "{% filter replace('a', 'b')");
        for (i = 0; i < 40; i++) strcat(tpl, i % 2 ? " | lower" : " | upper");
        strcat(tpl, " %}aaa{% endfilter %}");
        renders_as(tpl, NULL, "bbb");
    }
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
        " \"chat_template\": [{\"name\": \"default\", \"template\": \"D{{ bos_token }}{{ messages[0].content }}{{ "
        "eos_token }}\"},"
        " {\"name\": \"tool_use\", \"template\": \"T{{ tools | length }}\"}, {\"name\": \"rag\", \"template\": "
        "\"R\"}]}";
    memset(&o, 0, sizeof o);
    CHECK(mlstack_chat_template_from_config(cfg, sizeof cfg - 1, &t, &err) == MLSTACK_OK);
    if (!t) return;
    CHECK(strcmp(mlstack_chat_template_token(t, "bos_token"), "<s>") == 0);
    CHECK(strcmp(mlstack_chat_template_token(t, "eos_token"), "</s>") == 0);
    CHECK(mlstack_chat_template_token(t, "pad_token") == NULL);
    CHECK(strcmp(mlstack_chat_template_get(t, NULL, 0), "D{{ bos_token }}{{ messages[0].content }}{{ eos_token }}") ==
          0);
    CHECK(strcmp(mlstack_chat_template_get(t, NULL, 1), "T{{ tools | length }}") == 0);
    CHECK(strcmp(mlstack_chat_template_get(t, "rag", 0), "R") == 0);
    CHECK(mlstack_chat_template_get(t, "nope", 0) == NULL);
    CHECK(mlstack_chat_template_apply(t, NULL, "[{\"role\":\"user\",\"content\":\"hi\"}]",
                                      strlen("[{\"role\":\"user\",\"content\":\"hi\"}]"), &o, &out, &n,
                                      &err) == MLSTACK_OK &&
          strcmp(out, "D<s>hi</s>") == 0 && n == 10);
    mlstack_template_free_output(out);
    o.tools_json = "[{\"a\": 1}, {\"b\": 2}]";
    CHECK(mlstack_chat_template_apply(t, NULL, "[{\"role\":\"user\",\"content\":\"hi\"}]",
                                      strlen("[{\"role\":\"user\",\"content\":\"hi\"}]"), &o, &out, &n,
                                      &err) == MLSTACK_OK &&
          strcmp(out, "T2") == 0);
    mlstack_template_free_output(out);
    o.tools_json = NULL;
    o.bos_token = "[BOS]";
    CHECK(mlstack_chat_template_apply(t, "default", "[{\"role\":\"user\",\"content\":\"x\"}]",
                                      strlen("[{\"role\":\"user\",\"content\":\"x\"}]"), &o, &out, &n,
                                      &err) == MLSTACK_OK &&
          strcmp(out, "D[BOS]x</s>") == 0);
    mlstack_template_free_output(out);
    CHECK(mlstack_chat_template_apply(t, NULL, "[]", strlen("[]"), &o, &out, &n, &err) == MLSTACK_ERR_INVALID_ARG &&
          out == NULL);
    CHECK(mlstack_chat_template_apply(t, NULL, "{\"role\":1}", strlen("{\"role\":1}"), &o, &out, &n, &err) ==
          MLSTACK_ERR_INVALID_ARG);
    CHECK(mlstack_chat_template_apply(t, NULL, "[1]", strlen("[1]"), &o, &out, &n, &err) == MLSTACK_ERR_INVALID_ARG);
    CHECK(mlstack_chat_template_apply(t, NULL, "[{", strlen("[{"), &o, &out, &n, &err) == MLSTACK_ERR_FORMAT);
    CHECK(mlstack_chat_template_apply(t, "nope", "[]", strlen("[]"), &o, &out, &n, &err) == MLSTACK_ERR_NOT_FOUND);
    mlstack_chat_template_close(t);
    CHECK(mlstack_chat_template_from_config("{\"eos_token\": \"x\"}", 18, &t, &err) == MLSTACK_ERR_NOT_FOUND &&
          t == NULL);
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
        static const char tpl[] =
            "{% for m in messages %}{{ m.role }}:{{ m.content is defined }};{% endfor %}{{ add_generation_prompt }}";
        CHECK(mlstack_template_render_messages(tpl, sizeof tpl - 1, msgs, 2, &o, &out, &n, &err) == MLSTACK_OK &&
              strcmp(out, "user:True;assistant:False;True") == 0);
        mlstack_template_free_output(out);
    }
    /* reasoning fields are aliased as transformers does */
    CHECK(mlstack_template_render("{{ messages[0] | tojson }}", 26,
                                  "[{\"role\":\"assistant\",\"reasoning\":\"r\",\"content\":\"c\",\"x\":null}]", 61,
                                  NULL, &out, &n, &err) == MLSTACK_OK &&
          strcmp(out, "{\"thinking\": \"r\", \"role\": \"assistant\", \"reasoning\": \"r\", \"content\": \"c\", "
                      "\"reasoning_content\": \"r\"}") == 0);
    mlstack_template_free_output(out);
    /* strftime_now with a fixed clock (local time; 2024-01-15 12:00 UTC is mid-day everywhere) */
    memset(&o, 0, sizeof o);
    o.now_unix = 1705320000;
    CHECK(mlstack_template_render("{{ strftime_now('%Y-%m') }}", 27, NULL, 0, &o, &out, &n, &err) == MLSTACK_OK &&
          strcmp(out, "2024-01") == 0);
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
    CHECK(mlstack_chat_template_open(dir, &t, &err) == MLSTACK_OK &&
          strcmp(mlstack_chat_template_get(t, NULL, 0), "config") == 0);
    mlstack_chat_template_close(t);
    f = fopen("build/tmp_template_folder/chat_template.jinja", "wb");
    fputs("from jinja file", f);
    fclose(f);
    CHECK(mlstack_chat_template_open(dir, &t, &err) == MLSTACK_OK &&
          strcmp(mlstack_chat_template_get(t, NULL, 0), "from jinja file") == 0 &&
          strcmp(mlstack_chat_template_token(t, "eos_token"), "E") == 0);
    mlstack_chat_template_close(t);
    f = fopen("build/tmp_template_folder/additional_chat_templates/tool_use.jinja", "wb");
    fputs("tools!", f);
    fclose(f);
    CHECK(mlstack_chat_template_open(dir, &t, &err) == MLSTACK_OK &&
          strcmp(mlstack_chat_template_get(t, NULL, 0), "from jinja file") == 0 &&
          strcmp(mlstack_chat_template_get(t, NULL, 1), "tools!") == 0);
    mlstack_chat_template_close(t);
    remove("build/tmp_template_folder/additional_chat_templates/tool_use.jinja");
    remove("build/tmp_template_folder/chat_template.jinja");
    remove("build/tmp_template_folder/tokenizer_config.json");
    rmdir("build/tmp_template_folder/additional_chat_templates");
    rmdir(dir);
}

int main(void) {
    static const char *const families[] = {"llama2-tinyllama", "phi3-mini-4k", "qwen2.5",   "mistral-7b-v0.1",
                                           "smollm2",          "gemma-it",     "gemma3-it", "gpt-oss"};
    size_t i;
    test_unit_fixtures();
    test_shared_templates();
    for (i = 0; i < sizeof families / sizeof families[0]; i++) test_family(families[i]);
    test_limits();
    test_hostile();
    test_unsupported_and_errors();
    test_api();
    test_folder_files();
    return tl_finish();
}
