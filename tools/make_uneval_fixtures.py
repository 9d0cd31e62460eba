#!/usr/bin/env python3
"""Writes tests/fixtures/grammar/uneval.json: random small object schemas around
unevaluatedProperties (beside properties, patternProperties, allOf, anyOf, oneOf, if/then/else,
not, $ref, dependentSchemas), each with random flat objects judged by Python's jsonschema
(Draft 2020-12). tests/test_grammar.c compiles each schema: where it compiles, an object any of
whose key orders the grammar accepts must be valid, and every valid object must be accepted in
some key order.

Usage: tools/make_uneval_fixtures.py (deterministic: the same file on every run)."""
import json
import os
import random

import jsonschema

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures", "grammar", "uneval.json")
NAMES = ["a", "b", "c"]
VALS = [0, 1, True, None, "x"]


def leaf(rng):
    return rng.choice([True, {"type": "integer"}, {"const": 1}, {"type": "boolean"}, {"enum": [0, None]}])


def props(rng):
    return {k: leaf(rng) for k in rng.sample(NAMES, rng.randrange(1, 3))}


def sub(rng, d):
    s = {}
    if rng.random() < 0.5:
        s["properties"] = props(rng)
    if rng.random() < 0.3:
        s["required"] = rng.sample(NAMES, 1)
    if rng.random() < 0.15:
        s["patternProperties"] = {"^c$": leaf(rng)}
    if d < 2 and rng.random() < 0.2:
        s["unevaluatedProperties"] = rng.choice([False, {"type": "integer"}])
    if d < 2 and rng.random() < 0.2:
        s["allOf"] = [sub(rng, d + 1)]
    return s


def schema(rng):
    s = {"type": "object"}
    if rng.random() < 0.5:
        s["properties"] = props(rng)
    kind = rng.randrange(7)
    if kind == 0:
        s["anyOf"] = [sub(rng, 1) for _ in range(rng.randrange(1, 3))]
    elif kind == 1:
        s["oneOf"] = [sub(rng, 1) for _ in range(2)]
    elif kind == 2:
        s["if"], s["then"] = sub(rng, 1), sub(rng, 1)
    elif kind == 3:
        s["if"], s["else"] = sub(rng, 1), sub(rng, 1)
    elif kind == 4:
        s["allOf"] = [sub(rng, 1), sub(rng, 1)]
    elif kind == 5:
        s["not"] = sub(rng, 1)
    else:
        s["$defs"], s["$ref"] = {"d": sub(rng, 1)}, "#/$defs/d"
    if rng.random() < 0.3:
        s["dependentSchemas"] = {"a": sub(rng, 1)}
    s["unevaluatedProperties"] = rng.choice([False, False, {"type": "integer"}, {"const": None}])
    if rng.random() < 0.3:
        defs = s.pop("$defs", None)  # $ref "#/$defs/d" stays a pointer from the root
        s = {"not": s} if rng.random() < 0.5 else {"allOf": [s], "maxProperties": 3}
        if defs:
            s["$defs"] = defs
    return s


def main():
    rng = random.Random(47)
    cases = []
    for _ in range(100):
        sc = schema(rng)
        v = jsonschema.Draft202012Validator(sc)
        seen, insts = set(), []
        for _ in range(16):
            d = {k: rng.choice(VALS) for k in rng.sample(NAMES, rng.randrange(0, 4))}
            t = json.dumps(d, sort_keys=True)
            if t not in seen:
                seen.add(t)
                insts.append({"data": d, "valid": v.is_valid(d)})
        cases.append({"schema": sc, "instances": insts})
    with open(OUT, "w", encoding="utf-8") as f:
        json.dump(cases, f, separators=(",", ":"))
        f.write("\n")
    print("uneval.json: %d schemas, %d objects (%d valid)" % (len(cases), sum(len(c["instances"]) for c in cases),
          sum(i["valid"] for c in cases for i in c["instances"])))


if __name__ == "__main__":
    main()
