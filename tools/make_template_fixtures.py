#!/usr/bin/env python3
"""Records chat-template fixtures for tests/test_template.c with transformers and jinja2.

For every tokenizer folder in ../shared/tokenizers/ that carries a chat template, and for
SmolLM2 (whose template lives in tests/fixtures/template/smollm2.jinja because its folder has
no tokenizer_config.json), it records apply_chat_template(messages, tokenize=False, ...) for a
set of conversations, or the exception transformers raises. It also renders the unit templates
of unit_cases() through transformers' own jinja environment (the one apply_chat_template uses).

It also renders every template in ../shared/chat-templates/ over shared_conversations() and records
the length and FNV-1a 64 hash of each output (or the error) in shared_templates.json.

Usage: python3 tools/make_template_fixtures.py [--shared ../shared] [--out tests/fixtures/template]
"""
import argparse
import json
import os
import sys

import jinja2
import transformers
from transformers import AutoTokenizer
from transformers.utils.chat_template_utils import _compile_jinja_template

TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather in a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string", "description": "City name, e.g. Zürich"},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "add", "description": "Adds two numbers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                       "required": ["a", "b"]}}},
]


def conversations():
    sys_msg = {"role": "system", "content": "You are a terse assistant."}
    u1 = {"role": "user", "content": "Hello! How are you?"}
    a1 = {"role": "assistant", "content": "Fine, thanks. And you?"}
    u2 = {"role": "user", "content": "What is 2 + 2?"}
    a2 = {"role": "assistant", "content": "4"}
    c = []
    c.append(("user_only_gen", [u1], True, None))
    c.append(("user_only_nogen", [u1], False, None))
    c.append(("system_user_gen", [sys_msg, u1], True, None))
    c.append(("system_assistant_last", [sys_msg, u1, a1], False, None))
    c.append(("multi_turn_gen", [u1, a1, u2], True, None))
    c.append(("multi_turn_system_assistant_last", [sys_msg, u1, a1, u2, a2], False, None))
    c.append(("unicode", [{"role": "user", "content": "Grüße aus Zürich! 日本語のテキスト، مرحبا 👋🏽 👨‍👩‍👧 é"},
                          {"role": "assistant", "content": "Ça va ? ✓ — “quotes” ½"}, {"role": "user", "content": "\u00a0tab\there\r\nnext"}], True, None))
    c.append(("empty_content", [{"role": "user", "content": ""}, {"role": "assistant", "content": ""}, {"role": "user", "content": ""}], True, None))
    c.append(("jinja_looking_content", [{"role": "user", "content": "{{ x }} {% if true %}y{% endif %} {# c #} }} {%"},
                                        {"role": "assistant", "content": "{{- raise_exception('no') -}}"}, {"role": "user", "content": "ok"}], True, None))
    c.append(("whitespace_content", [{"role": "system", "content": "  padded system  \n"}, {"role": "user", "content": "\n\nline1\n  line2  \n"}], True, None))
    c.append(("tools_user", [u1], True, TOOLS))
    c.append(("tools_call_and_result", [
        {"role": "system", "content": "Use tools when useful."},
        {"role": "user", "content": "Weather in Zürich and 2+3?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}},
            {"type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 3.5}}}]},
        {"role": "tool", "name": "get_weather", "content": "{\"temp\": 21}"},
        {"role": "tool", "name": "add", "content": "5.5"},
        {"role": "assistant", "content": "21 °C and 5.5."}], False, TOOLS))
    c.append(("tool_call_with_content_none", [
        {"role": "user", "content": "Add 1 and 2"},
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "add", "arguments": {"a": 1, "b": 2}}}]},
        {"role": "tool", "content": "3"}], True, TOOLS))
    c.append(("long_alternating", [u1, a1, u2, a2, {"role": "user", "content": "Thanks."}, {"role": "assistant", "content": "You're welcome!"},
                                   {"role": "user", "content": "Bye"}], True, None))
    c.append(("multiline_markdown", [{"role": "user", "content": "Write code:\n```python\nprint('hi')\n```"},
                                     {"role": "assistant", "content": "```\n  indented\n\ttabbed\n```\n"}], False, None))
    c.append(("system_only", [sys_msg], True, None))
    c.append(("missing_content", [{"role": "user"}], True, None))
    c.append(("assistant_first", [a1, u1], True, None))
    c.append(("two_users", [u1, u2], True, None))
    c.append(("unknown_role", [{"role": "narrator", "content": "Once upon a time"}], True, None))
    c.append(("empty_conversation", [], True, None))
    return c


FAMILIES = [
    # family, how the template is found, extra kwargs transformers needs (tokens the folder lacks)
    ("llama2-tinyllama", "folder", {}),
    ("phi3-mini-4k", "folder", {}),
    ("qwen2.5", "folder", {}),
    ("mistral-7b-v0.1", "chat_template.json", {"bos_token": "<s>", "eos_token": "</s>"}),
    ("smollm2", "smollm2.jinja", {}),
    # Model families whose tokenizers are not in ../shared/tokenizers: their template is a fixture
    # file, rendered through the SmolLM2 tokenizer object with the family's special tokens.
    # gemma-it.jinja: google/gemma-7b-it's template (Gemma 1 and 2 instruct models ship the same),
    #   as quoted in huggingface/text-generation-inference router/src/infer/chat_template.rs
    #   (commit 058162685f0531edb4c566151eb68c490ebe8267).
    # gemma3-it.jinja: the template transformers' Gemma 3 converter writes into tokenizer_config.json
    #   (_CHAT_TEMPLATE of huggingface/transformers
    #   src/transformers/models/gemma3/convert_gemma3_weights_orbax_to_hf.py, commit
    #   58827fc9025aaffb9f9939678e77d1ab031af782; the Python string's value).
    ("gemma-it", "gemma-it.jinja", {"bos_token": "<bos>", "eos_token": "<eos>"}, "smollm2"),
    ("gemma3-it", "gemma3-it.jinja", {"bos_token": "<bos>", "eos_token": "<eos>"}, "smollm2"),
    # gpt-oss.jinja: openai/gpt-oss-120b's (and -20b's) harmony template, as llama.cpp keeps it in
    #   models/templates/openai-gpt-oss-120b.jinja; it prints strftime_now's date (FIXED_NOW here,
    #   now_unix in the fixture)
    ("gpt-oss", "gpt-oss.jinja", {}, "smollm2"),
]


def err_text(e):
    return f"{type(e).__name__}: {e}"


def dumps(x):
    return json.dumps(x, ensure_ascii=False)


def record_family(shared, out_dir, family, source, kwargs, tokenizer_folder=None):
    folder = os.path.join(shared, "tokenizers", tokenizer_folder or family)
    tok = AutoTokenizer.from_pretrained(folder)
    template = None
    if source == "chat_template.json":
        with open(os.path.join(folder, "chat_template.json"), encoding="utf-8") as f:
            template = json.load(f)["chat_template"]
    elif source.endswith(".jinja"):
        with open(os.path.join(out_dir, source), encoding="utf-8") as f:
            template = f.read()
    cases = []
    for name, msgs, agp, tools in conversations():
        case = {"name": name, "messages_json": dumps(msgs), "add_generation_prompt": agp,
                "tools_json": dumps(tools) if tools is not None else None,
                "kwargs_json": dumps(kwargs) if kwargs else None}
        try:
            case["output"] = tok.apply_chat_template(msgs, tools=tools, tokenize=False, add_generation_prompt=agp,
                                                     chat_template=template, **kwargs)
        except Exception as e:  # noqa: BLE001 - we record whatever transformers raises
            case["error"] = err_text(e)
        cases.append(case)
    rec = {"family": family, "template_source": source,
           "note": "kwargs_json: variables transformers was given because the folder lacks them",
           "special_tokens": tok.special_tokens_map, "cases": cases}
    if template and "strftime_now" in template:
        rec["now_unix"] = FIXED_NOW
    return rec


def render_unit(template, variables):
    env_vars = {"tools": None, "documents": None, "add_generation_prompt": False}
    env_vars.update(variables)
    try:
        return {"output": _compile_jinja_template(template).render(**env_vars)}
    except RecursionError as e:
        return {"error": err_text(e)[:200]}
    except Exception as e:  # noqa: BLE001
        return {"error": err_text(e)}


LLAMA3_STYLE = r"""{{- bos_token }}
{%- if custom_tools is defined %}{%- set tools = custom_tools %}{%- endif %}
{%- if not tools_in_user_message is defined %}{%- set tools_in_user_message = true %}{%- endif %}
{%- if not date_string is defined %}{%- set date_string = "26 Jul 2024" %}{%- endif %}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools is not none %}{{- "Environment: ipython\n" }}{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{{- system_message }}
{{- "<|eot_id|>" }}
{%- if tools_in_user_message and not tools is none %}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
    {%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}
{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
"""

NS_STYLE = r"""{%- set ns = namespace(found=false, sys='', n=0) -%}
{%- for m in messages -%}
  {%- if m.role == 'system' -%}{%- set ns.found = true -%}{%- set ns.sys = ns.sys ~ m.content -%}{%- endif -%}
  {%- set ns.n = ns.n + 1 -%}
{%- endfor -%}
{%- macro render(m, prefix='') -%}
{{ prefix }}[{{ m.role | upper }}]{{ m.content }}
{%- endmacro -%}
{% if ns.found %}SYS({{ ns.sys }}) {% endif %}count={{ ns.n }}
{% for m in messages if m.role != 'system' -%}
{{ render(m, prefix=loop.index ~ '/' ~ loop.length ~ ' ') }}{% if not loop.last %}
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}
[ASSISTANT]{% endif %}"""


def unit_cases():
    U = []

    def add(case_name, template, **variables):
        U.append((case_name, template, variables))

    msgs = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "yo"}, {"role": "user", "content": "bye"}]
    # statements
    add("for_loop_vars", "{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}{{ loop.revindex }}{{ loop.revindex0 }}|{% endfor %}", xs=["a", "b", "c"])
    add("for_else", "{% for x in xs %}{{ x }}{% else %}empty{% endfor %}", xs=[])
    add("for_filter", "{% for x in xs if x % 2 %}{{ x }}:{{ loop.length }} {% endfor %}", xs=[1, 2, 3, 4, 5])
    add("for_unpack_items", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", d={"a": 1, "b": [1, 2], "c": None})
    add("for_prev_next", "{% for x in xs %}{{ loop.previtem }}<{{ x }}>{{ loop.nextitem }} {% endfor %}", xs=[1, 2, 3])
    add("for_cycle", "{% for x in xs %}{{ loop.cycle('odd', 'even') }} {% endfor %}", xs=[1, 2, 3])
    add("for_string_and_dict", "{% for c in 'héllo' %}[{{ c }}]{% endfor %}{% for k in d %}{{ k }}{% endfor %}", d={"x": 1, "y": 2})
    add("for_scope", "{% set x = 5 %}{% for i in [1,2] %}[{{ x }}]{% set x = i %}{% endfor %}{{ x }}")
    add("for_break_continue", "{% for i in range(10) %}{% if i == 2 %}{% continue %}{% endif %}{% if i == 5 %}{% break %}{% endif %}{{ i }}{% endfor %}")
    add("if_elif_else", "{% for v in [0, 1, 2, 3] %}{% if v == 0 %}zero{% elif v == 1 %}one{% elif v == 2 %}two{% else %}many{% endif %} {% endfor %}")
    add("set_block", "{% set x %}Hello {{ name }}!{% endset %}[{{ x }}]{{ x | length }}", name="Wörld")
    add("set_tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set t = 1, 2 %}{{ t }}")
    add("namespace", "{% set ns = namespace(a=1, b='x') %}{% for i in [1,2,3] %}{% set ns.a = ns.a + i %}{% endfor %}{{ ns.a }}{{ ns.b }}{{ ns.missing }}|{{ ns }}")
    add("macro_defaults", "{% macro f(a, b=2, c='z') %}{{ a }}-{{ b }}-{{ c }}{% endmacro %}{{ f(1) }} {{ f(1, 3) }} {{ f(1, c='w') }} {{ f() }}")
    add("macro_recursion_bounded", "{% macro fact(n) %}{% if n <= 1 %}1{% else %}{{ n * (fact(n - 1) | int) }}{% endif %}{% endmacro %}{{ fact(10) }}")
    add("macro_sees_globals", "{% set g = 'G' %}{% macro f() %}{{ g }}{{ bos_token }}{% endmacro %}{{ f() }}", bos_token="<s>")
    add("raw_block", "{% raw %}{{ not evaluated }} {% if %}{% endraw %}")
    add("comments", "a{# comment {{ x }} #}b {#- trimmed -#} c")
    add("generation_block", "{% for m in messages %}{% generation %}{{ m.content }}{% endgeneration %}{% endfor %}", messages=msgs)
    add("filter_block", "{% filter upper %}hello {{ name }}{% endfilter %}", name="x")
    # whitespace control
    add("ws_trim_blocks", "{% if true %}\nA\n{% endif %}\nB\n  {% if true %}\n  C\n  {% endif %}\nD")
    add("ws_minus", "a  {%- if true -%}  b  {%- endif -%}  c {{- ' d ' -}} e")
    add("ws_plus", "x\n  {%+ if true +%}\ny\n{%- endif %}")
    add("ws_lstrip_not_for_vars", "line\n    {{ 'v' }}\n    {% if true %}w{% endif %}\n")
    add("ws_comment_line", "a\n  {# c #}\nb")
    add("ws_crlf_template", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc\r\n")
    add("ws_trailing_newline", "text\n\n")
    add("ws_inline_var_end", "{{ 'a' }}\n{{ 'b' -}}\n\n  c")
    # expressions
    add("arith", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }} {{ -3 }} {{ -(2) ** 2 }}")
    add("floats", "{{ 0.1 + 0.2 }} {{ 1e16 }} {{ 1.5e-5 }} {{ 3.0 }} {{ 1/3 }} {{ 100000000000000000.0 }} {{ 0.0001 }} {{ 1e22 }} {{ 2.5e-310 }}")
    add("compare", "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ 'a' < 'b' }} {{ 1 == 1.0 }} {{ true == 1 }} {{ [1,2] == [1,2] }} {{ (1,) == [1] }} {{ 'x' != 'y' }} {{ none == none }}")
    add("logic", "{{ true and 'x' }} {{ false or 'y' }} {{ 0 or '' or 'z' }} {{ not 0 }} {{ none and 1 }} {{ 1 if 0 else 2 }} {{ 'a' if 1 }}|{{ 'b' if 0 }}|")
    add("in_operator", "{{ 'a' in 'cat' }} {{ 2 in [1,2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1,2] }} {{ 'x' not in 'abc' }} {{ 'z' in u }}")
    add("concat_tilde", "{{ 'a' ~ 1 ~ none ~ true ~ u ~ 1.5 ~ [1] }}")
    add("string_literals", "{{ 'it\\'s' }} {{ \"dq \\\"x\\\"\" }} {{ 'tab\\there' }} {{ 'nl\\nx' }} {{ '\\u00e9\\x41\\101' }} {{ 'back\\\\slash' }} {{ 'unknown\\d' }} {{ 'ad' 'jacent' }}")
    add("literals", "{{ [1, 'a', none, true, false, 1.5] }} {{ {'a': 1, 'b': [2]} }} {{ (1,) }} {{ (1, 2) }} {{ () }} {{ True }} {{ None }} {{ 1_000 }}")
    add("print_values", "{{ none }} {{ true }} {{ 1.0 }} {{ ['x', \"it's\", 'q\"'] }} {{ {'k': none} }} {{ u }}|{{ 'a\\nb' }} {{ ['a\\nb\\\\'] }}")
    add("attr_subscript", "{{ d.a }} {{ d['a'] }} {{ d.b.c }} {{ d['b']['c'] }} {{ l[0] }} {{ l[-1] }} {{ l.1 }} {{ d.missing }}|{{ l[10] }}|", d={"a": 1, "b": {"c": "deep"}}, l=[10, 20, 30])
    add("slicing", "{{ l[1:] }} {{ l[:-1] }} {{ l[::2] }} {{ l[::-1] }} {{ l[5:] }} {{ s[1:3] }} {{ s[::-1] }} {{ s[-2:] }} {{ l[-10:2] }}", l=[1, 2, 3, 4], s="héllo→")
    add("dict_methods", "{{ d.keys() | list }} {{ d.values() | list }} {{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 'dflt') }} {{ d.items() | list }}", d={"a": 1, "b": 2})
    add("dict_views_print", "{{ d.items() }} {{ d.keys() }} {{ d.values() }}", d={"a": 1, "b": "x"})
    add("string_methods", "{{ s.startswith('He') }} {{ s.endswith(('x', 'd!')) }} {{ s.strip() }}|{{ s.lstrip() }}|{{ s.rstrip() }}|{{ s.upper() }} {{ s.lower() }} {{ s.title() }} {{ 'hello'.capitalize() }} {{ s.replace('l', 'L') }} {{ s.replace('l', 'L', 1) }} {{ s.count('l') }} {{ s.find('o') }} {{ s.find('zz') }} {{ s.rfind('o') }}", s="  Hello World!  ")
    add("string_split", "{{ 'a b  c'.split() }} {{ 'a,b,,c'.split(',') }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} {{ '  x  y '.rsplit() }} {{ 'l1\\nl2\\r\\nl3'.splitlines() }} {{ '-'.join(['a', 'b']) }}")
    add("string_strip_chars", "{{ 'xxhixx'.strip('x') }} {{ '<<a>>'.lstrip('<') }} {{ '..b..'.rstrip('.') }} {{ s.removeprefix('ab') }} {{ s.removesuffix('yz') }}", s="abcxyz")
    add("string_unicode_len", "{{ s | length }} {{ s[1] }} {{ s[-1] }} {{ s.find('ü') }} {{ s | upper }}", s="Grüße 👋")
    add("string_is_methods", "{{ '123'.isdigit() }} {{ 'abc'.isalpha() }} {{ ' \\t'.isspace() }} {{ 'abc'.islower() }} {{ 'ABC'.isupper() }} {{ ''.isdigit() }}")
    # filters
    add("filter_trim", "[{{ '  x  ' | trim }}][{{ 'xxaxx' | trim('x') }}][{{ none | trim }}]")
    add("filter_length", "{{ [1,2,3] | length }} {{ 'héllo' | length }} {{ {'a': 1} | count }} {{ u | length }}")
    add("filter_tojson", "{{ d | tojson }} {{ d | tojson(indent=2) }} {{ d | tojson(separators=(',', ':')) }} {{ [] | tojson(indent=2) }} {{ {} | tojson }} {{ 'é\"\\n' | tojson }} {{ d | tojson(sort_keys=true) }}",
        d={"z": 1, "a": [1, 2.5, None, True, "ü"], "m": {"k": {}}, "e": []})
    add("filter_tojson_ascii", "{{ s | tojson(ensure_ascii=true) }} {{ 1e100 | tojson }} {{ 0.1 | tojson }} {{ -0.0 | tojson }} {{ x | tojson(indent='\\t') }}", s="é👋\x7f", x=[1, {"a": 2}])
    add("filter_tojson_tools", "{% for t in tools %}{{ t | tojson(indent=4) }}\n{% endfor %}", tools=TOOLS)
    add("filter_case", "{{ 'hello world' | upper }} {{ 'HeLLo' | lower }} {{ 'hELLO wORLD' | capitalize }} {{ 'hello-world (x) it\\'s' | title }} {{ 'élan' | upper }}")
    add("filter_replace_join", "{{ 'aaa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'ab' | replace('', '-') }} {{ [1, 2, 3] | join(', ') }} {{ users | join(',', attribute='name') }} {{ 'abc' | join('.') }}", users=[{"name": "x"}, {"name": "y"}])
    add("filter_default", "{{ u | default('dflt') }} {{ none | default('dflt') }} {{ '' | default('dflt', true) }} {{ 0 | d('zero', boolean=true) }} {{ 'set' | default('dflt') }}")
    add("filter_first_last", "{{ [1, 2, 3] | first }} {{ [1, 2, 3] | last }} {{ 'abc' | first }} {{ 'abc' | last }} {{ [] | first }}|")
    add("filter_select", "{{ msgs | selectattr('role', 'equalto', 'user') | map(attribute='content') | list }} {{ msgs | rejectattr('role', 'eq', 'user') | list | length }} {{ msgs | selectattr('missing') | list }} {{ [0, 1, 2, '', 'x'] | select | list }} {{ [1, 2, 3, 4] | reject('odd') | list }} {{ [1,2,3] | select('divisibleby', 3) | list }}", msgs=msgs)
    add("filter_map", "{{ msgs | map(attribute='role') | join(',') }} {{ ['a', 'b'] | map('upper') | list }} {{ msgs | map(attribute='nope', default='-') | list }} {{ [1.7, 2.2] | map('int') | list }}", msgs=msgs)
    add("filter_items_list_string", "{{ d | items | list }} {{ 'ab' | list }} {{ 12 | string }} {{ [1] | string }} {% for k, v in d | items %}{{ k }}{{ v }}{% endfor %}", d={"x": 1, "y": 2})
    add("filter_numbers", "{{ '42' | int }} {{ '4.7' | int }} {{ 'x' | int }} {{ 'x' | int(7) }} {{ 3.9 | int }} {{ '1.5' | float }} {{ 'bad' | float }} {{ -3 | abs }} {{ -2.5 | abs }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ 2.1 | round(0, 'ceil') }} {{ 2.9 | round(method='floor') }} {{ 3 | round }}")
    add("filter_indent", "[{{ 'a\\nb\\n\\nc' | indent(2) }}] [{{ 'a\\nb' | indent(2, true) }}] [{{ 'a\\n\\nb' | indent(2, blank=true) }}] [{{ 'x\\ny' | indent('> ') }}] [{{ 'a\\n' | indent }}]")
    add("filter_safe_escape", "{{ '<b>' | safe }} {{ '<a href=\"x\">&\\'' | e }} {{ '<x>' | escape }}")
    add("filter_unique_reverse", "{{ ['a', 'A', 'b', 'a'] | unique | list }} {{ ['a', 'A'] | unique(case_sensitive=true) | list }} {{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }}")
    # builtins added for the real-template corpus (issue 17) and more of jinja2's lists
    add("filter_dictsort", "{% for k, v in d | dictsort %}{{ k }}={{ v }};{% endfor %} {{ d | dictsort(reverse=true) }} {{ d | dictsort(by='value') }} {{ m | dictsort }} {{ m | dictsort(true) }}",
        d={"b": 2, "a": 3, "c": 1}, m={"B": 1, "a": 2, "C": 3})
    add("filter_format", "{{ '%s-%s' | format(1, 'x') }} {{ '%d|%5.2f|%-4s|%04d|%x|%X|%e|%g|%+d|%%' | format(42, 3.14159, 'ab', 7, 255, 255, 12345.678, 0.0001, 5) }} {{ '%(a)s %(b)r' | format(a='A', b='B') }} {{ '%s' | format([1, 'a']) }} {{ '%c%c' | format(65, 'é') }} {{ '%.2s|%5s|%r' | format('héllo', 'ü', 'q') }}")
    add("percent_operator", "{{ '%s and %s' % ('a', 'b') }} {{ '%d items' % 3 }} {{ '%(x)s' % {'x': 1} }} {{ '%s' % {'k': 1} }} {{ '%.1f%%' % 99.44 }} {{ '%i' % 3.9 }}")
    add("format_edge_cases", "{{ '%5.1f%%|%-5d|%+.2e|%#x|%o|%r|%s|%s' | format(2.25, 42, -12345.6789, 255, 8, {'a': [1, None]}, none, true) }} {{ '%s|%10.3s|%-6r|%05.1f|% d|%G|%E' | format(1.5e300, 'abcdef', 'q', -2.5, 7, 1e-10, 0.5) }}")
    add("format_mapping_and_single", "{{ '%(a)s-%(b)05.1f-%(a)r' | format(a='x', b=3.14159) }} {{ '%s' % none }} {{ '%s|%s' % (none, (1, 2)) }} {{ '%s' % ((1, 2),) }} {{ '%c' % 'é' }}")
    add("sort_mixed_errors_none", "{{ [none, 1] | sort }}")
    add("dictsort_case_and_value", "{{ {'b': 'Y', 'a': 'x', 'C': 'z'} | dictsort(false, 'value') }} {{ {'b': 'Y', 'a': 'x', 'C': 'z'} | dictsort(true, 'value', true) }}")
    add("error_format_too_few", "{{ '%s %s' | format(1) }}")
    add("error_format_too_many", "{{ '%s' % (1, 2) }}")
    add("error_format_int_of_str", "{{ '%d' % 'x' }}")
    add("call_block", "{% macro wrap(tag) %}<{{ tag }}>{{ caller() }}</{{ tag }}>{% endmacro %}{% call wrap('b') %}bold {{ name }}{% endcall %}|{% macro each(xs) %}{% for x in xs %}{{ caller(x, loop.index) }}{% endfor %}{% endmacro %}{% call(item, i) each(['p', 'q']) %}[{{ i }}:{{ item }}]{% endcall %}", name="N")
    add("call_block_nested_namespace", "{% macro f(d) %}{% set ns = namespace(s=caller()) %}{{ ns.s | trim }}!{% endmacro %}{% for k in ['x', 'y'] %}{% call f(k) %} {{ k }} {% endcall %}{% endfor %}")
    add("error_caller_outside_call", "{% macro f() %}{{ caller() }}{% endmacro %}{{ f() }}")
    add("with_block", "{% set a = 1 %}{% with a = 2, b = a %}{{ a }}{{ b }}{% endwith %}{{ a }}{% with %}{% set c = 3 %}{{ c }}{% endwith %}[{{ c }}]")
    add("filter_sort", "{{ [3, 1, 2] | sort }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }} {{ [3, 1, 2] | sort(reverse=true) }} {{ users | sort(attribute='age') | map(attribute='name') | list }} {{ users | sort(attribute='age,name') | map(attribute='name') | list }}",
        users=[{"name": "z", "age": 3}, {"name": "y", "age": 1}, {"name": "x", "age": 3}])
    add("filter_min_max_sum", "{{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ ['B', 'a'] | min }} {{ users | max(attribute='age') }} {{ [1, 2.5] | sum }} {{ users | sum(attribute='age') }} {{ [] | sum(start=10) }} {{ [] | max }}|",
        users=[{"name": "z", "age": 3}, {"name": "y", "age": 1}])
    add("filter_batch_slice", "{{ range(7) | batch(3) | list }} {{ range(7) | batch(3, 'x') | list }} {{ range(7) | slice(3) | list }} {{ range(7) | slice(3, 0) | list }}")
    add("filter_center_attr", "[{{ 'ab' | center(7) }}][{{ 'abc' | center(8) }}][{{ 'x' | center }}] {{ d | attr('items') is defined }} {{ d | attr('k') is defined }} {% set ns = namespace(v=5) %}{{ ns | attr('v') }}", d={"k": 1})
    add("filter_unique_hash", "{{ ['a', 'A', 'b', 1, 1.0, true, (1, 2), (1, 2)] | unique | list }} {{ users | unique(attribute='n') | list | length }}",
        users=[{"n": 1}, {"n": 2}, {"n": 1}])
    add("tests_filter_test", "{{ 'upper' is filter }} {{ 'nope' is filter }} {{ 'odd' is test }} {{ 'upper' is test }}")
    add("deferred_unknown_filter_untaken", "{% if false %}{{ x | fromjson }}{{ y is frobnicated }}{% endif %}{% for m in [] %}{{ m | no_such }}{% endfor %}ok")
    add("error_unknown_filter_reached", "{% if true %}{{ '{}' | fromjson }}{% endif %}")
    add("error_unhashable_unique", "{{ [[1], [1]] | unique | list }}")
    add("error_dictsort_list", "{{ [1] | dictsort }}")
    # tests
    add("tests_types", "{{ u is defined }} {{ u is undefined }} {{ none is none }} {{ 'x' is string }} {{ {} is mapping }} {{ [] is iterable }} {{ 'x' is iterable }} {{ [] is sequence }} {{ 1 is number }} {{ 1.5 is number }} {{ 1 is integer }} {{ 1.0 is integer }} {{ 1.5 is float }} {{ true is boolean }} {{ true is true }} {{ false is false }} {{ 1 is true }} {{ u is sequence }} {{ {} is sequence }} {{ 'x' is mapping }}")
    add("tests_compare", "{{ 1 is equalto 1 }} {{ 1 is eq(2) }} {{ 'a' is eq 'a' }} {{ 3 is sameas 3 }} {{ none is sameas none }} {{ 3 is odd }} {{ 4 is even }} {{ 9 is divisibleby 3 }} {{ 2 is in [1, 2] }} {{ 'x' is not in 'abc' }} {{ 1 is not none }} {{ 5 is gt 3 }} {{ 2 is le 1 }} {{ 'abc' is lower }} {{ 'ABC' is upper }}")
    add("tests_in_loop_filter", "{% for m in messages if m.content is string and m.role is not equalto 'system' %}{{ m.role }} {% endfor %}", messages=msgs)
    # globals
    add("range_function", "{{ range(3) | list }} {{ range(1, 4) | list }} {{ range(10, 0, -3) | list }} {{ range(0) | list }} {% for i in range(2, 4) %}{{ i }}{% endfor %}")
    add("raise_exception", "{% if messages | length > 1 %}{{ raise_exception('Only one message allowed, got ' ~ messages | length) }}{% endif %}ok", messages=msgs)
    add("strftime_now_shape", "{{ strftime_now('%Y') | length }} {{ strftime_now('%%') }}")
    add("dict_global", "{{ dict(a=1, b='x') }} {{ dict(a=1).a }}")
    add("undefined_printing", "[{{ u }}][{{ u | default('d') }}][{{ none.x }}][{% for x in u %}{{ x }}{% endfor %}][{{ u is defined }}]")
    # errors jinja raises
    add("error_undefined_attribute", "{{ u.x }}")
    add("error_call_undefined", "{{ nothing() }}")
    add("error_type_add", "{{ 'a' + 1 }}")
    add("error_compare_types", "{{ 'a' < 1 }}")
    add("error_iterate_none", "{% for x in none %}{% endfor %}")
    add("error_generator_length", "{{ [1, 2] | selectattr('x') | length }}")
    add("error_division_zero", "{{ 1 / 0 }}")
    add("error_unpack", "{% for a, b in [[1, 2, 3]] %}{% endfor %}")
    add("error_macro_args", "{% macro f(a) %}{% endmacro %}{{ f(1, 2) }}")
    add("error_syntax_unclosed", "{% if true %}never closed")
    add("error_syntax_bad_tag", "{% endfor %}")
    add("error_unknown_filter", "{{ 'x' | no_such_filter }}")
    add("error_unknown_test", "{{ 'x' is no_such_test }}")
    add("error_list_append", "{% set l = [] %}{{ l.append(1) }}")
    add("error_set_attr_non_namespace", "{% set d = {} %}{% set d.x = 1 %}")
    add("error_range_too_big", "{% for i in range(10**9) %}{% endfor %}")
    add("error_macro_recursion", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}")
    add("error_tojson_undefined", "{{ u | tojson }}")
    add("error_break_outside_loop", "{% break %}")
    # template styles
    add("llama3_style_tools", LLAMA3_STYLE, messages=[{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Weather in Paris?"},
                                                     {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
                                                     {"role": "tool", "content": {"temp": 18, "sky": "clear"}}, {"role": "assistant", "content": "18 and clear."}],
        tools=TOOLS, bos_token="<|begin_of_text|>", add_generation_prompt=True)
    add("llama3_style_no_tools", LLAMA3_STYLE, messages=[{"role": "user", "content": "Hi"}], bos_token="<|begin_of_text|>", add_generation_prompt=True, date_string="01 Jan 2025")
    add("llama3_style_two_tool_calls_error", LLAMA3_STYLE, messages=[{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [{"function": {"name": "a", "arguments": {}}}, {"function": {"name": "b", "arguments": {}}}]}], bos_token="<s>", tools=TOOLS)
    add("namespace_macro_style", NS_STYLE, messages=msgs, add_generation_prompt=True)
    return U


# ---- every template in ../shared/chat-templates/ over shared_conversations() ----
def shared_conversations():
    """Conversations for the real-template corpus: (name, messages, add_generation_prompt, tools)."""
    sys_msg = {"role": "system", "content": "You are a helpful assistant."}
    u1 = {"role": "user", "content": "Hello! Who are you?"}
    a1 = {"role": "assistant", "content": "I am an assistant. How can I help?"}
    u2 = {"role": "user", "content": "What is 2 + 2?"}
    a2 = {"role": "assistant", "content": "2 + 2 = 4."}
    uni_u = {"role": "user", "content": "Grüße aus Zürich! 日本語 مرحبا 👋🏽 — “quotes” é\n\tsecond line"}
    uni_a = {"role": "assistant", "content": "Ça va ? ✓ ½ 👨‍👩‍👧"}
    call_w = {"id": "call_abc123", "type": "function",
              "function": {"name": "get_weather", "arguments": {"city": "Zürich", "unit": "celsius"}}}
    call_a = {"id": "call_def456", "type": "function", "function": {"name": "add", "arguments": {"a": 2, "b": 3.5}}}
    call_noid = {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
    call_str = {"id": "call_str789", "type": "function",
                "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}
    c = []
    c.append(("system_user_gen", [sys_msg, u1], True, None))
    c.append(("system_user_nogen", [sys_msg, u1], False, None))
    c.append(("user_only_gen", [u1], True, None))
    c.append(("multi_turn_gen", [sys_msg, u1, a1, u2], True, None))
    c.append(("assistant_last", [sys_msg, u1, a1, u2, a2], False, None))
    c.append(("unicode", [uni_u, uni_a, {"role": "user", "content": "¿Y ahora? 🙂"}], True, None))
    c.append(("tools_system_user", [sys_msg, u1], True, TOOLS))
    c.append(("tools_user_only", [{"role": "user", "content": "Weather in Paris?"}], True, TOOLS))
    c.append(("tool_call_ids_result", [
        sys_msg, {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "content": "", "tool_calls": [call_w]},
        {"role": "tool", "tool_call_id": "call_abc123", "name": "get_weather", "content": "{\"temp\": 21, \"sky\": \"clear\"}"},
        {"role": "assistant", "content": "It is 21 °C and clear in Zürich."}], False, TOOLS))
    c.append(("tool_call_no_id_gen", [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": None, "tool_calls": [call_noid]},
        {"role": "tool", "name": "get_weather", "content": "18"}], True, TOOLS))
    c.append(("parallel_tool_calls", [
        {"role": "user", "content": "Weather in Zürich and 2 + 3.5?"},
        {"role": "assistant", "content": "Let me check.", "tool_calls": [call_w, call_a]},
        {"role": "tool", "tool_call_id": "call_abc123", "name": "get_weather", "content": "21"},
        {"role": "tool", "tool_call_id": "call_def456", "name": "add", "content": "5.5"}], True, TOOLS))
    c.append(("tool_call_string_args_no_tools", [
        {"role": "user", "content": "Add 1 and 2"},
        {"role": "assistant", "content": "", "tool_calls": [call_str]},
        {"role": "tool", "tool_call_id": "call_str789", "content": "3"},
        {"role": "assistant", "content": "The sum is 3."}], False, None))
    c.append(("reasoning_content_multi", [
        sys_msg, u2, {"role": "assistant", "reasoning_content": "Two plus two is four.", "content": "4"},
        {"role": "user", "content": "And 3 + 3?"}], True, None))
    c.append(("thinking_assistant_last", [
        u2, {"role": "assistant", "thinking": "Simple sum.", "content": "4"}], False, None))
    c.append(("reasoning_with_tool_call", [
        {"role": "user", "content": "Weather in Zürich?"},
        {"role": "assistant", "reasoning": "I should call the weather tool.", "content": "", "tool_calls": [call_w]},
        {"role": "tool", "tool_call_id": "call_abc123", "content": "21"},
        {"role": "assistant", "reasoning_content": "Now answer.", "content": "21 °C."}], False, TOOLS))
    c.append(("empty_and_whitespace", [{"role": "system", "content": "  padded  \n"}, {"role": "user", "content": ""}], True, None))
    return c


SHARED_KWARGS = {"bos_token": "<s>", "eos_token": "</s>"}
FIXED_NOW = 1705320000  # 2024-01-15 12:00 UTC: the same date in every timezone from UTC-11 to UTC+11


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def fix_clock():
    """transformers' strftime_now reads the clock through chat_template_utils.datetime: FIXED_NOW."""
    import datetime as _dt
    import transformers.utils.chat_template_utils as ctu

    class FixedDatetime(_dt.datetime):
        @classmethod
        def now(cls, tz=None):
            return _dt.datetime.fromtimestamp(FIXED_NOW, tz)

    ctu.datetime = FixedDatetime


def record_shared_templates(shared, out_dir, dump_dir=None):
    """Renders every ../shared/chat-templates/*.jinja over shared_conversations() with apply_chat_template
    of a real tokenizer object (gpt2's files; bos/eos given as kwargs) and records length and FNV-1a 64 hash of
    each output (the outputs themselves are large; --dump writes them out for inspection)."""
    fix_clock()
    tok = AutoTokenizer.from_pretrained(os.path.join(shared, "tokenizers", "gpt2"))
    template_kwargs = dict(tok.special_tokens_map)
    template_kwargs.update(SHARED_KWARGS)
    tdir = os.path.join(shared, "chat-templates")
    names = sorted(f for f in os.listdir(tdir) if f.endswith(".jinja"))
    convs = shared_conversations()
    cases = [{"name": n, "messages_json": dumps(m), "add_generation_prompt": agp,
              "tools_json": dumps(t) if t is not None else None} for n, m, agp, t in convs]
    results = []
    for fname in names:
        with open(os.path.join(tdir, fname), "rb") as f:
            template = f.read().decode("utf-8")
        row = {"template": fname, "outputs": []}
        for (cname, msgs, agp, tools) in convs:
            try:
                text = tok.apply_chat_template(json.loads(dumps(msgs)), tools=tools, tokenize=False,
                                               add_generation_prompt=agp, chat_template=template, **SHARED_KWARGS)
                data = text.encode("utf-8")
                row["outputs"].append({"len": len(data), "fnv1a64": fnv1a64(data)})
                if dump_dir:
                    os.makedirs(dump_dir, exist_ok=True)
                    with open(os.path.join(dump_dir, f"{fname}.{cname}.txt"), "wb") as f:
                        f.write(data)
            except Exception as e:  # noqa: BLE001 - we record whatever transformers raises
                row["outputs"].append({"error": err_text(e)[:300]})
        results.append(row)
        print(f"  {fname}: {sum('len' in o for o in row['outputs'])} rendered, "
              f"{sum('error' in o for o in row['outputs'])} errors")
    return {"note": "outputs[i] belongs to cases[i]; len and fnv1a64 of the UTF-8 output, or transformers' error",
            "template_kwargs_json": dumps(template_kwargs), "now_unix": FIXED_NOW,
            "cases": cases, "templates": results}


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--shared", default=os.path.join(here, "..", "..", "shared"))
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "fixtures", "template"))
    ap.add_argument("--dump", help="also write every rendered output of the shared templates into this folder")
    ap.add_argument("--only-shared", action="store_true", help="record only shared_templates.json")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    meta = {"transformers": transformers.__version__, "jinja2": jinja2.__version__}
    rec = record_shared_templates(args.shared, args.out, args.dump)
    with open(os.path.join(args.out, "shared_templates.json"), "w", encoding="utf-8") as f:
        json.dump(dict(meta, **rec), f, ensure_ascii=False, indent=0)
        f.write("\n")
    if args.only_shared:
        return 0
    for family, source, kwargs, *folder in FAMILIES:
        rec = record_family(args.shared, args.out, family, source, kwargs, *folder)
        rec.update(meta)
        with open(os.path.join(args.out, family + ".json"), "w", encoding="utf-8") as f:
            json.dump(rec, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(family, sum("output" in c for c in rec["cases"]), "outputs,", sum("error" in c for c in rec["cases"]), "errors")
    unit = []
    for name, template, variables in unit_cases():
        case = {"name": name, "template": template, "vars_json": dumps(variables)}
        case.update(render_unit(template, variables))
        unit.append(case)
    with open(os.path.join(args.out, "unit.json"), "w", encoding="utf-8") as f:
        json.dump(dict(meta, cases=unit), f, ensure_ascii=False, indent=1)
        f.write("\n")
    print("unit", len(unit), "cases,", sum("error" in c for c in unit), "errors")


if __name__ == "__main__":
    sys.exit(main())
