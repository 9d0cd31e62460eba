#!/usr/bin/env python3
"""Validates constrained-decoding outputs written by tests/test_grammar.c (one JSON object per line):
  {"schema": NAME, "output": TEXT}   json.loads(TEXT) must be valid for schemas.json's NAME
                                     (jsonschema, Draft 2020-12, with format checking)
  {"inline_schema": SCHEMA, "output": TEXT}  json.loads(TEXT) must be valid for the schema SCHEMA
                                     (JSON text), as for "schema"
  {"regex": PATTERN, "output": TEXT} re.fullmatch(PATTERN, TEXT, re.ASCII) must match
  {"tools": 1, "output": TEXT}       every <tool_call> block must parse and name a tool whose
                                     parameters schema its arguments satisfy
Prints one line per invalid output and a last line "checked N, invalid M"; exit 1 if M > 0.
Exit 3 when jsonschema is not installed (the C test then reports a skip).
Usage: check_grammar_outputs.py OUTPUTS.jsonl [tests/fixtures/grammar/schemas.json]"""
import json
import os
import re
import sys

try:
    import jsonschema
except ImportError:
    print("jsonschema is not installed (pip install jsonschema)")
    sys.exit(3)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    spath = sys.argv[2] if len(sys.argv) > 2 else os.path.join(here, "..", "tests", "fixtures", "grammar", "schemas.json")
    doc = json.load(open(spath, encoding="utf-8"))
    fc = jsonschema.Draft202012Validator.FORMAT_CHECKER
    validators = {s["name"]: jsonschema.Draft202012Validator(s["schema"], format_checker=fc) for s in doc["schemas"]}
    tools = {t["function"]["name"]: jsonschema.Draft202012Validator(t["function"]["parameters"], format_checker=fc)
             for t in doc["tools"]}
    n = bad = 0
    for line in open(sys.argv[1], encoding="utf-8", errors="strict"):
        rec = json.loads(line)
        out = rec["output"]
        n += 1
        why = None
        try:
            if "schema" in rec:
                errs = list(validators[rec["schema"]].iter_errors(json.loads(out)))
                if errs:
                    why = errs[0].message
            elif "inline_schema" in rec:
                val = jsonschema.validators.validator_for(json.loads(rec["inline_schema"]))
                errs = list(val(json.loads(rec["inline_schema"]), format_checker=fc).iter_errors(json.loads(out)))
                if errs:
                    why = errs[0].message
            elif "regex" in rec:
                if re.fullmatch(rec["regex"], out, re.ASCII) is None:
                    why = "no full match"
            else:
                blocks = re.findall(r"<tool_call>(.*?)</tool_call>", out, re.S)
                if not blocks or re.sub(r"<tool_call>.*?</tool_call>", "", out, flags=re.S).strip():
                    why = "not only tool calls"
                for b in blocks:
                    call = json.loads(b)
                    errs = list(tools[call["name"]].iter_errors(call["arguments"]))
                    if errs:
                        why = errs[0].message
        except Exception as e:  # unparsable JSON, unknown tool, ...
            why = "%s: %s" % (type(e).__name__, e)
        if why:
            bad += 1
            print("INVALID %s: %r: %s" % (rec.get("schema") or rec.get("inline_schema") or rec.get("regex") or "tools",
                                          out[:200], why))
    print("checked %d, invalid %d" % (n, bad))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
