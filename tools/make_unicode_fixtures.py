#!/usr/bin/env python3
"""Writes the reference data tests/test_unicode.c reads, so CI needs neither Python nor the UCD:

- tests/fixtures/unicode/categories.txt: Python's unicodedata general category for every code
  point, as runs "HEXSTART CAT" (Python's Unicode version is on the first line);
- tests/fixtures/unicode/normalization.txt: for every input of the UCD's NormalizationTest.txt,
  what Hugging Face tokenizers' NFC, NFD, NFKC and NFKD normalizers give. Lines are
  "src nfc nfd nfkc nfkd" in UTF-8, separated by tabs, where a field that repeats an earlier one is written as byte 0x01
  and that field's number (0 is src); "@Part1" starts the single-character section (every code point not listed
  there is unchanged by every form);
- tests/fixtures/unicode/lower.txt: "HEX HEX..." for each code point Hugging Face's Lowercase
  normalizer changes (Rust char::to_lowercase).
Usage: python3 tools/make_unicode_fixtures.py [--ucd /usr/share/unicode]
"""
import argparse, bz2, os, unicodedata
from tokenizers import normalizers as N

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'tests', 'fixtures', 'unicode')


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--ucd', default='/usr/share/unicode')
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, 'categories.txt'), 'w') as f:
        f.write('# Python unicodedata %s general categories as runs\n' % unicodedata.unidata_version)
        prev = None
        for c in range(0x110000):
            cat = unicodedata.category(chr(c))
            if cat != prev:
                f.write('%X %s\n' % (c, cat))
                prev = cat
    path = os.path.join(args.ucd, 'NormalizationTest.txt')
    text = open(path, encoding='utf-8').read() if os.path.exists(path) else bz2.open(path + '.bz2', 'rt', encoding='utf-8').read()
    forms = [N.NFC(), N.NFD(), N.NFKC(), N.NFKD()]
    n_lines = n_diff = 0
    with open(os.path.join(OUT, 'normalization.txt'), 'w', encoding='utf-8', newline='\n') as f:
        f.write('# NormalizationTest.txt inputs through Hugging Face tokenizers normalizers (Unicode 9.0 data)\n')
        for line in text.splitlines():
            if line.startswith('@Part'):
                f.write(line.split()[0] + '\n')
                continue
            line = line.split('#')[0].strip()
            if not line:
                continue
            cols = [''.join(chr(int(x, 16)) for x in col.split()) for col in line.split(';')[:5]]
            src = cols[0]
            got = [src] + [fm.normalize_str(src) for fm in forms]
            n_lines += 1
            n_diff += got != cols
            fields = []
            for i, g in enumerate(got):
                assert '\t' not in g and '\n' not in g and '\x01' not in g, (line, got)
                j = got.index(g)
                fields.append('\x01%d' % j if j < i else g)
            f.write('\t'.join(fields) + '\n')
    with open(os.path.join(OUT, 'lower.txt'), 'w') as f:
        lc = N.Lowercase()
        for c in range(0x110000):
            if 0xD800 <= c < 0xE000 or unicodedata.category(chr(c)) == 'Cn':
                continue
            lo = lc.normalize_str(chr(c))
            if lo != chr(c):
                f.write('%X %s\n' % (c, ' '.join('%X' % ord(x) for x in lo)))
    print('normalization: %d lines, %d differ from the UCD\'s expectations' % (n_lines, n_diff))


if __name__ == '__main__':
    main()
