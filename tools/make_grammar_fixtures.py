#!/usr/bin/env python3
"""Records the reference data of tests/test_grammar.c into tests/fixtures/grammar/:

  regex.json    for each pattern, random strings with Python's verdicts: `full` (re.fullmatch
                with re.ASCII, the dialect of JSON Schema patterns) and `prefix` (the `regex`
                package's partial fullmatch: some continuation of the string matches); and, on a
                small vocabulary of byte strings (some splitting UTF-8 characters), the exact set
                of tokens that may follow given prefixes: token t is allowed after prefix p iff the
                bytes p + t are the start of the UTF-8 encoding of a string that fully matches.
  schemas.json  the JSON Schema cases (written here from the spec's keywords) that the test
                samples from; tools/check_grammar_outputs.py validates the samples with jsonschema.
  keys.json     patternProperties schemas and random objects (keys from a small alphabet), each
                with jsonschema's verdict.

Rerun after changing a case:  python3 tools/make_grammar_fixtures.py  (needs `pip install regex`).
"""
import json
import os
import random
import re

import regex

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures", "grammar")

# (pattern, strings that match): the matches seed the random strings
PATTERNS = [
    (r"[a-z]+@[a-z]+\.com", ["bob@ex.com", "a@b.com"]),
    (r"\d{3}-\d{4}", ["555-1234"]),
    (r"(ab|cd)*e?", ["abcde", "", "e", "cdab"]),
    (r"[^\s,]+(,[^\s,]+){0,3}", ["a,b", "xé,中", "q"]),
    (r"(?:[01]?\d|2[0-3]):[0-5]\d", ["23:59", "7:05"]),
    (r"\w+\s\w+", ["hello world", "a_1\tb"]),
    (r"(red|green|blue)( (red|green|blue)){0,2}", ["red green", "blue"]),
    (r"a{2,4}b{0,}c+", ["aabcc", "aaaac"]),
    (r"[A-Z][a-z]*(?: [A-Z][a-z]*)*", ["John Smith", "A"]),
    (r"-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?", ["-12.5e3", "0", "7"]),
    (r"é+[à-ÿ]?中?", ["éé", "éà中"]),
    (r"[\u4e00-\u9fff]{1,3}x", ["中文x"]),
    (r".{2,5}", ["ab", "ü中😀"]),
    (r"[^a-c]+", ["xyz", "😀", "\x00\n"]),
    (r'\{"k": \d\}', ['{"k": 1}']),
    (r"(a|ab)(c|bcd)(d*)", ["abcd", "acd"]),
    (r"x[\]\-\\]y", ["x]y", "x-y", "x\\y"]),
    (r"\$\d+\.\d\d", ["$10.00"]),
    (r"(?P<y>\d{4})-(?P<m>\d\d)", ["2024-01"]),
    (r"[\x00-\x7f]*?Z", ["abcZ", "Z"]),
    (r"(\S+ ?){1,3}!", ["hi there!", "a!"]),
    (r"\D\W\S", ["a!b", "-- "]),
    (r"(|x)y{2}", ["yy", "xyy"]),
    (r"[😀-😂]+é", ["😀😁é"]),
]

EXTRA_CHARS = "abcdexyzABZ019 ,.-:@_\t\n!$\\]{}\"éà中文😀ü\x7f"

# Vocabulary for the mask check: printable ASCII, pieces, and byte strings that split characters.
VOCAB = [bytes([c]) for c in range(32, 127)] + [
    b"\n", b"\t", b"ab", b"cd", b"com", b"@ex", b".c", b"12", b"-1", b"red", b" green", b" blue", b"e3",
    b"23", b":5", b"59", b"hello", b" world", b"John", b" Smith", b"aab", b"bcc", b"xy", b"{\"", b"k\":",
    b" 1}", b"$1", b"0.", b"00", b"2024", b"-0", b"Z", b"abc", b"yy", b"!", b" !",
    "é".encode(), "中".encode(), "文".encode(), "😀".encode(), "ü".encode(), "à".encode(), "éé".encode(),
    "é中".encode(), "中文x".encode(), b"x" + "中".encode(),
    b"\xc3", b"\xa9", b"\xa0", b"\xe4", b"\xe4\xb8", b"\xad", b"\xb8\xad", b"\xf0\x9f", b"\x98\x80", b"\x98\x81\xc3",
    b"\xc3\xa9x", b"\xed\xa0\x80", b"\xc0\x80", b"\xff", b"\xe0\x80", b"\xf4\x90", b"\xc3\xa9\xc3",
]


_comp_cache = {}


def greedy(pat):
    """The pattern with lazy quantifiers made greedy: the same set of whole-string matches, and
    the `regex` package's partial matching is wrong for lazy ones (it accepts "ü" as the start
    of a match of [a-z]*?Z)."""
    return re.sub(r"(?<=[*+?}])\?", "", pat)


def prefix_ok(pat, data):
    """Is `data` (bytes) the start of the UTF-8 encoding of some string that fully matches?"""
    pat = greedy(pat)
    try:
        return regex.fullmatch(pat, data.decode("utf-8"), flags=regex.ASCII, partial=True) is not None
    except UnicodeDecodeError:
        pass
    # valid text followed by one incomplete character?
    for cut in range(1, 4):
        if cut > len(data):
            break
        head, tail = data[:-cut], data[-cut:]
        try:
            text = head.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if tail not in _comp_cache:
            _comp_cache[tail] = completions(tail) if tail and tail[0] >= 0xC0 else []
        # a pattern tells code points apart only at the characters it names (its classes are
        # ASCII otherwise): the ends of each span and those characters and their neighbours
        # inside it decide as well as every code point would
        cands = set()
        for a, b in _comp_cache[tail]:
            cands |= {a, b} | {c for c in representative(pat) if a <= c <= b}
        for cp in sorted(cands):
            if regex.fullmatch(pat, text + chr(cp), flags=regex.ASCII, partial=True) is not None:
                return True
        return False
    return False


_rep_cache = {}


def representative(pat):
    if pat not in _rep_cache:
        cps = {ord(c) for c in pat}
        cps |= {int(h, 16) for h in re.findall(r"\\u([0-9a-fA-F]{4})", pat)}
        cps |= {int(h, 16) for h in re.findall(r"\\x([0-9a-fA-F]{2})", pat)}
        _rep_cache[pat] = {c + d for c in cps for d in (-1, 0, 1) if 0 <= c + d <= 0x10FFFF}
    return _rep_cache[pat]


def completions(lead):
    """Code points whose UTF-8 encoding starts with the incomplete sequence `lead` (by ranges)."""
    b0 = lead[0]
    length = 2 if 0xC2 <= b0 <= 0xDF else 3 if 0xE0 <= b0 <= 0xEF else 4 if 0xF0 <= b0 <= 0xF4 else 0
    if not length or any(b & 0xC0 != 0x80 for b in lead[1:]):
        return []
    acc = b0 & (0x1F, 0x0F, 0x07)[length - 2]
    for b in lead[1:]:
        acc = (acc << 6) | (b & 0x3F)
    rest = length - len(lead)
    lo, hi = acc << (6 * rest), (acc << (6 * rest)) | ((1 << (6 * rest)) - 1)
    lo = max(lo, (0x80, 0x800, 0x10000)[length - 2])
    hi = min(hi, (0x7FF, 0xFFFF, 0x10FFFF)[length - 2])
    spans = []
    for a, b in ((lo, min(hi, 0xD7FF)), (max(lo, 0xE000), hi)):
        if a <= b:
            spans.append((a, b))
    return spans


def mutate(rng, s):
    ops = rng.randrange(5)
    chars = list(s)
    if ops == 0 and chars:
        del chars[rng.randrange(len(chars))]
    elif ops == 1:
        chars.insert(rng.randrange(len(chars) + 1), rng.choice(EXTRA_CHARS))
    elif ops == 2 and chars:
        chars[rng.randrange(len(chars))] = rng.choice(EXTRA_CHARS)
    elif ops == 3:
        chars = chars[: rng.randrange(len(chars) + 1)]
    else:
        chars = chars + [rng.choice(EXTRA_CHARS)]
    return "".join(chars)


# JSON Schema cases, one or more per keyword the compiler supports; every case is bounded
# (strings, arrays and recursion end), so random sampling always finishes.
SCHEMAS = [
    ("person", {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0},
        "email": {"type": "string", "format": "email"}}, "required": ["name", "age"]}),
    ("enum_const", {"type": "object", "properties": {
        "color": {"enum": ["red", "green", "blue", 7, None, {"x": [1, "é"]}]}, "kind": {"const": "fixed \"q\""},
        "n": {"type": "number"}}, "required": ["color", "kind"], "additionalProperties": False}),
    ("int_array", {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 5}),
    ("nested", {"type": "object", "properties": {"items": {"type": "array", "maxItems": 3, "items": {
        "type": "object", "properties": {"id": {"type": "integer", "exclusiveMinimum": 0},
                                         "tags": {"type": "array", "maxItems": 3, "items": {"type": "string", "maxLength": 6}}},
        "required": ["id", "tags"]}}}, "required": ["items"]}),
    ("any_of", {"anyOf": [{"type": "string", "maxLength": 5}, {"type": "integer"}, {"type": "null"},
                          {"type": "array", "items": {"type": "boolean"}, "maxItems": 2}]}),
    ("pattern", {"type": "object", "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}(-[0-9]{4})?$"},
                                                  "code": {"type": "string", "pattern": "^[A-Z]{2}\\d[^\\d]?$"}},
                 "required": ["zip", "code"]}),
    ("formats", {"type": "object", "properties": {"d": {"type": "string", "format": "date"},
                                                  "t": {"type": "string", "format": "date-time"},
                                                  "tm": {"type": "string", "format": "time"},
                                                  "u": {"type": "string", "format": "uuid"},
                                                  "ip": {"type": "string", "format": "ipv4"}},
                 "required": ["d", "t", "tm", "u", "ip"]}),
    ("refs", {"$defs": {"pt": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number", "minimum": 0}},
                               "required": ["x", "y"]}},
              "type": "object", "properties": {"a": {"$ref": "#/$defs/pt"}, "b": {"$ref": "#/$defs/pt"}}, "required": ["a"]}),
    ("type_list", {"type": ["boolean", "null", "integer"]}),
    ("optional_mix", {"type": "object", "properties": {"a": {"type": "boolean"}, "b": {"type": "boolean"},
                                                       "c": {"type": "boolean"}, "d": {"type": "null"}},
                      "required": ["b"], "additionalProperties": False}),
    ("lengths", {"type": "string", "minLength": 3, "maxLength": 6}),
    ("recursive", {"$defs": {"node": {"type": "object", "properties": {
        "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}, "maxItems": 2}},
        "required": ["v"]}}, "$ref": "#/$defs/node"}),
    ("map", {"type": "object", "additionalProperties": {"type": "integer", "minimum": 1},
             "propertyNames": {"type": "string", "maxLength": 4}}),
    ("map_pattern_keys", {"type": "object", "additionalProperties": {"type": "boolean"},
                          "propertyNames": {"pattern": "^k[0-9]{1,2}$"}}),
    ("all_of_one", {"allOf": [{"type": "object", "properties": {"ok": {"const": True}}, "required": ["ok"]}],
                    "title": "t", "description": "annotations are ignored"}),
    ("empty_object", {"type": "object", "additionalProperties": False}),
    # generated by the random fixture model through the scheduler (tokens of a 512-entry vocabulary)
    ("engine_person", {"type": "object", "properties": {"name": {"type": "string", "maxLength": 8},
                                                        "age": {"type": "integer"}}, "required": ["name", "age"]}),
    ("engine_colors", {"type": "array", "items": {"enum": ["red", "green", 3]}, "minItems": 1, "maxItems": 4}),
    ("engine_any", {"anyOf": [{"type": "boolean"}, {"type": "string", "maxLength": 4}]}),
    # issue 47: exact numeric ranges, oneOf, if/then/else, not, prefixItems, other keys by schema
    ("ranges", {"type": "object", "properties": {
        "i": {"type": "integer", "minimum": -17, "exclusiveMaximum": 250},
        "x": {"type": "number", "minimum": -1.5, "maximum": 2.25},
        "e": {"type": "number", "exclusiveMinimum": 0.05, "exclusiveMaximum": 0.5},
        "m": {"type": "integer", "multipleOf": 7}}, "required": ["i", "x", "e", "m"]}),
    ("one_of", {"oneOf": [
        {"type": "object", "properties": {"kind": {"const": "a"}, "v": {"type": "integer"}}, "required": ["kind"]},
        {"type": "object", "properties": {"kind": {"const": "b"}, "w": {"type": "boolean"}}, "required": ["kind"]}]}),
    ("if_then", {"if": {"type": "integer"}, "then": {"minimum": 10, "maximum": 20},
                 "else": {"type": "string", "maxLength": 3}}),
    ("not_type", {"not": {"type": ["object", "array", "string", "number"]}}),
    ("prefix", {"type": "array", "prefixItems": [{"type": "integer"}, {"enum": ["x", "y"]}],
                "items": {"type": "boolean"}, "maxItems": 4}),
    ("other_keys", {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"],
                    "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9},
                    "maxProperties": 3}),
    # issue 47 part A: oneOf with overlapping members, not of compound schemas, if without else,
    # not integer, not enum over open types, $ref through embedded $id
    ("one_of_overlap", {"type": "object", "properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9},
                                                         "b": {"type": "boolean"}},
                        "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}),
    ("not_compound", {"type": "object", "properties": {"k": {"enum": ["x", "y", "z"]},
                                                       "n": {"type": "integer", "minimum": 0, "maximum": 5}},
                      "required": ["k", "n"], "not": {"properties": {"k": {"const": "x"}, "n": {"maximum": 2}},
                                                      "additionalProperties": True}}),
    ("not_enum", {"type": "array", "maxItems": 4, "items": {"type": ["integer", "boolean"], "minimum": -3,
                                                            "maximum": 3, "not": {"enum": [0, 1, True]}}}),
    ("if_no_else", {"type": "integer", "minimum": 0, "maximum": 30, "if": {"minimum": 10}, "then": {"maximum": 20}}),
    ("not_integer", {"type": "array", "maxItems": 3, "items": {"type": "number", "not": {"type": "integer"}}}),
    ("embedded_id", {"$id": "http://example.com/root.json", "type": "object", "properties": {"p": {"$ref": "item.json"}},
                     "required": ["p"], "$defs": {"it": {"$id": "item.json", "type": "integer", "minimum": 1,
                                                         "maximum": 3}}}),
    # issue 47, part B: keys by pattern (a key matching two patterns meets both schemas), dependencies
    ("pattern_props", {"type": "object", "properties": {"id": {"type": "integer"}},
                       "patternProperties": {"^x-[a-z]{1,6}$": {"type": "string", "maxLength": 5},
                                             "^[a-z]{1,3}[0-9]$": {"type": "integer", "minimum": 0, "maximum": 99},
                                             "^x-[a-z]1?$": {"enum": ["a", "b", 3]}},
                       "additionalProperties": False, "maxProperties": 4}),
    ("dependencies", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "boolean"},
                                                       "c": {"type": "null"}},
                      "dependentRequired": {"a": ["b"]}, "dependentSchemas": {"c": {"required": ["a"]}}}),
    # patterns with lengths, two patterns on one string, a format with a length: one automaton
    ("pattern_len", {"type": "object", "properties": {
        "w": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 5},
        "two": {"type": "string", "allOf": [{"pattern": "a"}, {"pattern": "^[a-c]{1,4}$"}]},
        "ip": {"type": "string", "format": "ipv4", "maxLength": 9},
        "u": {"type": "string", "pattern": "^(x|yz)$|^q[0-9]?$"}}, "required": ["w", "two", "ip"]}),
    # unevaluatedProperties / unevaluatedItems where what is evaluated is known statically: names
    # from allOf, $ref and beside; oneOf / if-then-else branches that evaluate the same names; the
    # Test Suite's 'not' of an anyOf whose branches always hold; contains and prefixItems for items
    ("uneval_props", {"type": "object", "$defs": {"base": {"properties": {"id": {"type": "integer", "minimum": 1,
                                                                                      "maximum": 99}},
                                                          "required": ["id"]}},
                      "$ref": "#/$defs/base", "allOf": [{"properties": {"a": {"type": "boolean"}}}],
                      "properties": {"tag": {"enum": ["p", "q"]}}, "unevaluatedProperties": False}),
    ("uneval_branches", {"type": "object", "unevaluatedProperties": False, "oneOf": [
        {"properties": {"k": {"const": "x"}, "n": {"type": "integer", "minimum": 0, "maximum": 5}}, "required": ["k"]},
        {"properties": {"k": {"const": "y"}, "n": {"type": "boolean"}}, "required": ["k"]}],
        "if": {"properties": {"k": {"const": "x"}}}, "then": {"properties": {"m": {"type": "null"}}},
        "else": {"properties": {"m": {"type": "integer", "minimum": 0, "maximum": 3}}}}),
    ("uneval_not", {"type": "object", "maxProperties": 3,
                    "patternProperties": {"^[a-c]$": {"type": "integer", "minimum": 0, "maximum": 9}},
                    "additionalProperties": False,
                    "not": {"anyOf": [True, {"properties": {"a": True}}], "unevaluatedProperties": False}}),
    ("uneval_if", {"type": "object", "if": {"properties": {"t": {"const": 1}}, "required": ["t"]},
                   "then": {"properties": {"a": {"type": "boolean"}}},
                   "else": {"properties": {"t": {"enum": [2, 3]}, "b": {"type": "null"}}, "required": ["t"]},
                   "unevaluatedProperties": False}),
    ("uneval_if_then", {"type": "object", "properties": {"t": {"enum": [1, 2]}}, "required": ["t"],
                        "if": {"properties": {"t": {"const": 1}}},
                        "then": {"properties": {"a": {"type": "integer", "minimum": 0, "maximum": 9}}},
                        "unevaluatedProperties": False}),
    ("uneval_items", {"type": "array", "maxItems": 4,
                      "allOf": [{"prefixItems": [{"type": "integer", "minimum": 0, "maximum": 9}]}],
                      "unevaluatedItems": {"type": "boolean"}}),
    ("uneval_contains", {"type": "array", "contains": {"type": "boolean"}, "unevaluatedItems": {"type": "null"}}),
]


def closed(schema):
    """additionalProperties false on every object schema with properties that leaves it open:
    other keys would be random strings, which random sampling never ends."""
    if isinstance(schema, dict):
        if "unevaluatedProperties" in schema:  # closed by it (and open below it on purpose)
            return schema
        if "properties" in schema and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
        for v in schema.values():
            closed(v)
    elif isinstance(schema, list):
        for v in schema:
            closed(v)
    return schema


SCHEMAS = [(n, closed(sc)) for n, sc in SCHEMAS]

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather in a city",
                                      "parameters": {"type": "object", "properties": {
                                          "city": {"type": "string", "maxLength": 10},
                                          "unit": {"enum": ["celsius", "fahrenheit"]}},
                                          "required": ["city"]}}},
    {"type": "function", "function": {"name": "add", "parameters": {"type": "object", "properties": {
        "a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}},
]


# patternProperties: objects with random keys, judged by jsonschema (Python's re.search, which
# reads these patterns as ECMAScript does); a named property, when present, comes first, the
# order the grammar writes
KEY_SCHEMAS = [
    {"patternProperties": {"^x-[a-z]{1,3}$": {"type": "string"}, "[0-9]{2}": {"type": "integer"},
                           "é|\"": {"type": "boolean"}}, "additionalProperties": {"type": "null"}},
    {"properties": {"ab": {"type": "integer"}}, "patternProperties": {"^a": {"minimum": 5}, "b$": {"maximum": 10}},
     "additionalProperties": False},
    {"patternProperties": {"^(a|b)+$": False, "\\\\|\n": {"type": "string"}, "^$": {"const": 1}}},
    {"patternProperties": {"(?:xy){2,}": {"type": "integer"}, "^[^ab]?$": {"enum": [1, "s"]}},
     "additionalProperties": False, "minProperties": 1},
]
KEY_SEEDS = ["x-a", "x-abc", "x-abcd", "12", "a12", "é", "\"", "ab", "a", "b", "aab", "xyxy", "axyxyb", "\\", "\n",
             "", "Z", "-", "1"]
KEY_CHARS = ["a", "b", "x", "y", "-", "1", "2", "é", "\"", "\\", "\n", "Z"]
KEY_VALUES = [None, True, 1, 7, 12, "s", 2.5]


def key_cases(rng):
    import jsonschema
    out = []
    for sc in KEY_SCHEMAS:
        v = jsonschema.Draft202012Validator(sc)
        seen, insts = set(), []
        while len(insts) < 48:
            d = {}
            for _ in range(rng.randrange(4)):
                k = rng.choice(KEY_SEEDS) if rng.random() < 0.5 else "".join(
                    rng.choice(KEY_CHARS) for _ in range(rng.randrange(5)))
                d[k] = rng.choice(KEY_VALUES)
            if "ab" in d and "properties" in sc:
                d = {"ab": d.pop("ab"), **d}
            t = json.dumps(d)
            if t not in seen:
                seen.add(t)
                insts.append({"data": d, "valid": v.is_valid(d)})
        out.append({"schema": sc, "instances": insts})
    return out


def main():
    rng = random.Random(12)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "schemas.json"), "w", encoding="utf-8") as f:
        json.dump({"schemas": [{"name": n, "schema": sc} for n, sc in SCHEMAS], "tools": TOOLS}, f, indent=1)
        f.write("\n")
    with open(os.path.join(OUT, "keys.json"), "w", encoding="utf-8") as f:
        cases = key_cases(random.Random(47))
        json.dump(cases, f, ensure_ascii=False)
        f.write("\n")
        print("keys.json: %d schemas, %d objects (%d valid)" % (len(cases), sum(len(c["instances"]) for c in cases),
              sum(i["valid"] for c in cases for i in c["instances"])))
    cases = []
    for pat, seeds in PATTERNS:
        re.compile(pat, re.ASCII)
        assert all((re.fullmatch(pat, x, re.ASCII) is None) == (re.fullmatch(greedy(pat), x, re.ASCII) is None) for x in seeds)
        strings = set(seeds)
        for s in seeds:
            for k in range(len(s) + 1):
                strings.add(s[:k])
        while len(strings) < 60:
            base = rng.choice(seeds) if rng.random() < 0.8 else "".join(rng.choice(EXTRA_CHARS) for _ in range(rng.randrange(8)))
            for _ in range(rng.randrange(1, 3)):
                base = mutate(rng, base)
            strings.add(base)
        items = []
        for s in sorted(strings):
            full = re.fullmatch(pat, s, re.ASCII) is not None
            prefix = prefix_ok(pat, s.encode())
            assert prefix or not full
            items.append({"s": s, "full": full, "prefix": prefix})
        # masks after a few valid prefixes (byte prefixes, some ending inside a character)
        masks = []
        prefixes = set()
        for s in seeds:
            b = s.encode()
            for k in range(len(b) + 1):
                if prefix_ok(pat, b[:k]):
                    prefixes.add(b[:k])
        for p in sorted(prefixes)[:12]:
            allowed = [i for i, t in enumerate(VOCAB) if prefix_ok(pat, p + t)]
            full = False
            try:
                full = re.fullmatch(pat, p.decode("utf-8"), re.ASCII) is not None
            except UnicodeDecodeError:
                pass
            masks.append({"prefix_hex": p.hex(), "allowed": allowed, "eos": full})
        cases.append({"pattern": pat, "strings": items, "masks": masks})
    doc = {
        "generator": "tools/make_grammar_fixtures.py (Python re %s, regex %s)" % (re.__version__ if hasattr(re, "__version__") else "stdlib", regex.__version__),
        "vocab_hex": [t.hex() for t in VOCAB],
        "cases": cases,
    }
    with open(os.path.join(OUT, "regex.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=True, indent=0)
        f.write("\n")
    print("regex.json: %d patterns, %d strings, %d masks" % (len(cases), sum(len(c["strings"]) for c in cases),
                                                              sum(len(c["masks"]) for c in cases)))


if __name__ == "__main__":
    main()
