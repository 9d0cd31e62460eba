#!/usr/bin/env python3
"""Prints the built-in metaschema table of mlstack.h's schema compiler (mlstack__js_builtins): the
draft-07 metaschema and the 2020-12 one with its seven vocabularies, as the `jsonschema_specifications`
package ships them (the texts published at their URIs), minified, as C string literals. A schema's
$ref to one of those URIs resolves to it without a network. Rerun and paste over the table when the
package's copies change:
  python3 tools/make_metaschemas.py"""
import json
import os

import jsonschema_specifications

B12 = "https://json-schema.org/draft/2020-12/"
DOCS = [("http://json-schema.org/draft-07/schema", "draft7/metaschema.json"),
        (B12 + "schema", "draft202012/metaschema.json")] + [
            (B12 + "meta/" + v, "draft202012/vocabularies/" + v)
            for v in ("core", "applicator", "unevaluated", "validation", "meta-data", "format-annotation", "content")]


def c_literal(text, width=110):
    out, line = [], ""
    for ch in text:
        esc = "\\\"" if ch == '"' else "\\\\" if ch == "\\" else ch
        if len(line) + len(esc) > width:
            out.append('"%s"' % line)
            line = ""
        line += esc
    out.append('"%s"' % line)
    return "\n        ".join(out)


def main():
    base = os.path.join(os.path.dirname(jsonschema_specifications.__file__), "schemas")
    print("static const char *const mlstack__js_builtins[][2] = {")
    for uri, rel in DOCS:
        with open(os.path.join(base, rel)) as f:
            doc = json.load(f)
        print('    {"%s",\n        %s},' % (uri, c_literal(json.dumps(doc, separators=(",", ":")))))
    print("};")


if __name__ == "__main__":
    main()
