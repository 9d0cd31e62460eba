#!/usr/bin/env python3
"""Renumbers mlstack.h's section banners in file order and rewrites the TABLE OF CONTENTS to
match them (descriptions are kept by anchor). Run after adding, moving or merging sections:
    python3 tools/renumber_sections.py [mlstack.h]"""
import re
import sys

path = sys.argv[1] if len(sys.argv) > 1 else "mlstack.h"
text = open(path, encoding="utf-8").read()
banner = re.compile(r"/\* ==== (\d+)\. ([A-Z0-9 ]+?) ==== \*/ +/\* >>([a-z0-9]+) \*/")

toc_start = text.index("TABLE OF CONTENTS")
toc_end = text.index("BUILD OPTIONS", toc_start)
toc = text[toc_start:toc_end]
descr = {}
for line in toc.splitlines()[1:]:
    m = re.match(r"\s*\d+\.\s+(.*?)\s{2,}(.*?)\s*>>([a-z0-9]+)\s*$", line)
    if m:
        descr[m.group(3)] = m.group(2)

sections = []
def renumber(m):
    sections.append((m.group(2), m.group(3)))
    return "/* ==== %d. %s ==== */ /* >>%s */" % (len(sections), m.group(2), m.group(3))

body = banner.sub(renumber, text[toc_end:])
lines = [toc.splitlines()[0]]
for i, (name, anchor) in enumerate(sections, 1):
    d = descr.get(anchor, "")
    lines.append(("   %3d. %-18s%-59s >>%s" % (i, name, d, anchor)).rstrip())
new_toc = "\n".join(lines) + "\n\n   "
text = text[:toc_start] + new_toc + body
open(path, "w", encoding="utf-8").write(text)
print("%d sections" % len(sections))
