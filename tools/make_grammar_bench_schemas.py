#!/usr/bin/env python3
"""Writes tools/grammar_bench_schemas.tsv: the hard JSON Schemas that tools/bench_grammar.c (-M -s)
and tools/bench_grammar_llamacpp.cpp time side by side, one `name<TAB>schema` per line.
The cases: long enums, nested objects, patterns, numbers with bounds, bounded strings, oneOf and
integer multipleOf,
beside the person / catalog / event schemas the two tools have always run. Rerunnable:
  python3 tools/make_grammar_bench_schemas.py"""
import json
import os

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "grammar_bench_schemas.tsv")

WORDS = ("amber azure basil birch cedar coral crimson cyan dune ember fern flint frost garnet ginger granite "
         "hazel indigo iris ivory jade jasper juniper lava lemon lilac linen maple marble mint moss navy ochre "
         "olive onyx opal orchid pearl pine plum quartz rose ruby rust saffron sage sand scarlet sepia sky slate "
         "smoke snow spruce steel stone storm tan teal thistle topaz umber violet walnut wheat willow wine").split()


def long_enum():
    names = ["%s-%s" % (a, b) for a in WORDS[:20] for b in WORDS[20:30]]  # 200 values sharing prefixes
    return {"type": "object", "properties": {"color": {"enum": names}, "code": {"enum": list(range(0, 400, 3))}},
            "required": ["color", "code"]}


def nested():
    leaf = {"type": "object", "properties": {"id": {"type": "integer"}, "label": {"type": "string", "maxLength": 24},
                                             "on": {"type": "boolean"}}, "required": ["id"]}
    node = leaf
    for depth in range(4):
        node = {"type": "object", "properties": {"name": {"type": "string"}, "child": node,
                                                 "items": {"type": "array", "items": leaf, "maxItems": 3}},
                "required": ["name", "child"]}
    return node


def patterns():
    return {"type": "object", "properties": {
        "sku": {"type": "string", "pattern": "^[A-Z]{2}-[0-9]{4}(-[a-z]{1,3})?$"},
        "email": {"type": "string", "pattern": "^[a-z0-9._%+-]{1,20}@[a-z0-9-]{1,12}(\\.[a-z]{2,4}){1,2}$"},
        "phone": {"type": "string", "pattern": "^\\+?[0-9]{1,3}[ -]?\\(?[0-9]{3}\\)?[ -]?[0-9]{3}-[0-9]{4}$"},
        "when": {"type": "string", "format": "date-time"}, "id": {"type": "string", "format": "uuid"}},
        "required": ["sku", "email", "phone", "when", "id"]}


def numbers():
    return {"type": "object", "properties": {
        "year": {"type": "integer", "minimum": 1900, "maximum": 2100},
        "delta": {"type": "integer", "minimum": -1000, "maximum": 1000},
        "score": {"type": "number", "minimum": 0, "maximum": 100},
        "ratio": {"type": "number", "minimum": -1.5, "maximum": 2.25},
        "count": {"type": "integer", "minimum": 10}, "temps": {"type": "array", "items": {
            "type": "integer", "minimum": -40, "maximum": 60}, "minItems": 2, "maxItems": 8}},
        "required": ["year", "delta", "score", "ratio", "count", "temps"]}


def multiples():
    """multipleOf on integers: a small period with bounds, a large one with bounds, and period
    123456789 (0.123456789) last, where random logits keep writing digits (a new remainder, so a
    mask never seen before, at every token)."""
    return {"type": "object", "properties": {
        "step": {"type": "integer", "multipleOf": 7, "minimum": 0, "maximum": 700},
        "batch": {"type": "integer", "multipleOf": 1000000007, "minimum": -5e12, "maximum": 5e12},
        "id": {"type": "integer", "multipleOf": 0.123456789}},
        "required": ["step", "batch", "id"]}


def bounded_strings():
    return {"type": "object", "properties": {
        "title": {"type": "string", "maxLength": 60}, "code": {"type": "string", "minLength": 3, "maxLength": 8},
        "summary": {"type": "string", "minLength": 20, "maxLength": 200},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 16}, "maxItems": 5},
        "body": {"type": "string", "maxLength": 500}},
        "required": ["title", "code", "summary", "tags", "body"]}


def one_of():
    shape = [{"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number", "minimum": 0}},
              "required": ["kind", "r"], "additionalProperties": False},
             {"type": "object", "properties": {"kind": {"const": "rect"}, "w": {"type": "number"},
                                               "h": {"type": "number"}},
              "required": ["kind", "w", "h"], "additionalProperties": False},
             {"type": "object", "properties": {"kind": {"const": "label"}, "text": {"type": "string",
                                                                                    "maxLength": 40}},
              "required": ["kind", "text"], "additionalProperties": False}]
    return {"type": "object", "properties": {"shapes": {"type": "array", "items": {"oneOf": shape}, "maxItems": 6},
                                             "value": {"oneOf": [{"type": "integer"}, {"type": "string",
                                                                                       "maxLength": 10},
                                                                 {"type": "null"}]}},
            "required": ["shapes", "value"]}


def main():
    rows = [("long_enum", long_enum()), ("nested", nested()), ("patterns", patterns()), ("numbers", numbers()),
            ("bounded", bounded_strings()), ("one_of", one_of()), ("multiples", multiples())]
    with open(OUT, "w") as f:
        for name, schema in rows:
            f.write("%s\t%s\n" % (name, json.dumps(schema, separators=(",", ":"))))
    print("wrote %d schemas to %s" % (len(rows), OUT))


if __name__ == "__main__":
    main()
