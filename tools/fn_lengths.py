#!/usr/bin/env python3
"""List functions longer than N lines in C (and Python) files.

usage: tools/fn_lengths.py [--max N] FILE...

A C function is counted from the first line of its definition (the line at column 0 where the
return type starts) to its closing brace, which clang-format puts alone at column 0. This matches
the header's style: signatures may wrap over several lines, one-line bodies count as 1. Python
files are measured with the ast module (def line to last line of the body). Prints
`lines  name  file:line`, longest first; exits 1 when any function is over the limit.
"""
import ast
import re
import sys

IDENT = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
COMMENT = re.compile(r"/\*.*?\*/|//.*$")
NOT_FUNCS = {"if", "for", "while", "switch", "return", "sizeof", "defined"}


def c_functions(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        raw = f.read().split("\n")
    lines = [COMMENT.sub("", l).rstrip() if l[:1] not in " \t" or "{" in l else l for l in raw]
    out, i, n = [], 0, len(lines)
    while i < n:
        line = lines[i]
        if not line or not (line[0].isalpha() or line[0] == "_") or line.startswith(("typedef", "extern \"C\"")):
            i += 1
            continue
        # Gather the signature up to the line that opens the body or ends a declaration.
        j = i
        while j + 1 < n and j - i < 12 and not lines[j].rstrip().endswith(("{", ";")):
            if lines[j + 1].startswith(("{", "#")) or not lines[j + 1].startswith((" ", "\t", "{")): break
            j += 1
        if j + 1 < n and lines[j + 1].startswith("{"): j += 1  # brace on its own line
        s = " ".join(l.strip() for l in lines[i : j + 1])
        head = s.split("(", 1)[0]
        m = IDENT.search(s)
        if not s.endswith("{") or "(" not in s or "=" in head or not m or m.group(1) in NOT_FUNCS:
            i = j + 1
            continue
        # Name: the last identifier before the parameter list's opening parenthesis.
        names = re.findall(r"[A-Za-z_][A-Za-z0-9_]*", head)
        name = names[-1] if names else "?"
        k = j + 1
        while k < n and not lines[k].startswith("}"):
            k += 1
        out.append((k - i + 1, name, path, i + 1))
        i = k + 1
    return out


def py_functions(path):
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out.append((node.end_lineno - start + 1, node.name, path, start))
    return out


def main(argv):
    limit, files = 150, []
    it = iter(argv)
    for a in it:
        if a == "--max": limit = int(next(it))
        else: files.append(a)
    found = []
    for p in files:
        found += py_functions(p) if p.endswith(".py") else c_functions(p)
    over = sorted((f for f in found if f[0] > limit), reverse=True)
    for length, name, path, line in over:
        print(f"{length:5d}  {name}  {path}:{line}")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
