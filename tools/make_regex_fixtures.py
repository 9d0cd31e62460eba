#!/usr/bin/env python3
"""Records how Hugging Face tokenizers (Oniguruma) splits a corpus with real Split patterns.

Writes tests/fixtures/regex/splits.json: the patterns, the strings, and for each pattern and
string the non-empty matches as UTF-8 byte offsets [begin, end, begin, end, ...]. Matches are
recovered by comparing Split(behavior="isolated") with Split(behavior="removed").
Usage: python3 tools/make_regex_fixtures.py [--tokenizers DIR]   (DIR holds */tokenizer.json)
"""
import argparse, glob, json, os, random, unicodedata
from tokenizers import pre_tokenizers, Regex

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN2 = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
O200K = (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
         r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
         r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+")
DEEPSEEK3 = (r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
             r"| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
KNOWN = [
    ('gpt2-bytelevel', GPT2), ('llama3', LLAMA3), ('qwen2', QWEN2), ('gpt4o-o200k', O200K),
    ('deepseek-v3-digits', r"\p{N}{1,3}"), ('deepseek-v3-cjk', r"[一-龥\u3040-ゟ゠-ヿ]+"), ('deepseek-v3-main', DEEPSEEK3),
    ('bloom', r" ?[^(\s|[.,!?…。，、।۔،])]+"),
    ('digits-individual', r"\p{N}"), ('whitespace-split', r"\w+|[^\w\s]+"),
    # engine features beyond the real patterns
    ('lazy', r"a.*?b|\d+?"), ('possessive', r"\s++|\p{L}*+x|x?+y"), ('fold-class', r"(?i:[a-f]+|k|ǆ|σ)"),
    ('lookahead', r"\p{L}+(?=\p{N})|\p{N}+(?!\p{L})"), ('anchors', r"^\p{L}+|\p{N}+$|\A.|.\z"),
    ('interval', r"[ab]{2,3}|x{2}|\p{Lu}{1,}|y{,2}z"), ('negated-props', r"[\P{L}\P{N}]|[^\P{Lu}]+|\D\W"),
    ('atomic', r"(?>a+|ab)b|\bthe\b"), ('dot', r".{1,4}"), ('nested-groups', r"((a|b)c)+|(?:x(?:y|z)?)+"),
]
EXTRA_STRINGS = [
    "Hello world", "I'm here, you're there; we've been, they'll go, he'd say", "I'M HERE YOU'RE THERE WE'VE THEY'LL HE'D IT'S DON'T",
    "'s 't 're 've 'm 'll 'd 'S 'T 'RE 'VE 'M 'LL 'D 'ſ 'K", "12345678901 1,234.56 3.14159 2024-01-01",
    "   leading and trailing   ", "tabs\tand\nnewlines\r\nand\r\rmore\n\n\n", "  \n  \n\t \r\n x",
    "naïve café résumé Ærøskøbing", "Привет, мир! Съешь же ещё этих мягких булок", "Γειά σου Κόσμε ςσΣ",
    "日本語のテキストです。漢字とかなカナ", "中文文本，包含标点符号！还有数字123和English", "한국어 텍스트 입니다",
    "مرحبا بالعالم ١٢٣٤٥", "שלום עולם", "हिन्दी पाठ । देवनागरी ०१२३", "ภาษาไทยไม่มีช่องว่าง",
    "emoji 😀👍🏽 👨‍👩‍👧‍👦 🇫🇷 ✔️", "math 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝟘𝟙𝟚 ∑∫√∞ ≠ ≤", "a\u00a0b\u2000c\u3000d\u200be\u2028f\u0085g",
    "combining a\u0301e\u0300\u0308 o\u0328\u0304", "ǅungla ǈ ǋ ᾈ", "ſt ﬅ ß ẞ SS K K k",
    "$100 €50 £30 ¥1000 #hashtag @mention http://example.com/path?q=1&r=2", "<|endoftext|><s></s>[INST]",
    "((nested)) [brackets] {braces} \"quotes\" 'single' «guillemets» „German“",
    "aaa aab abb bbb ab ba abab", "the theme other the", "xxyxyyz yyz z xy", "!!!???...,,,;;;", "", " ", "\n", "a",
    "x" * 50 + " " * 30 + "y" * 20, "\u0660\u0661\u0662 \u06f1\u06f2 \u0966\u0967 \uff10\uff11",
    "ABCdefGHI jklMNO PqR sTu", "CamelCaseWordsAndHTTPServer", "under_score snake_case __dunder__",
    "line1\nline2\n", "end with newline\n", "\r\n\r\n", "a\n\nb", "x\u0300\u0301\u0302y",
]


def gen_random(rng, n):
    pools = [
        [chr(c) for c in range(0x20, 0x7f)], list(" \t\n\r\u00a0\u3000\u2009"), [chr(c) for c in range(0xc0, 0x250)],
        [chr(c) for c in range(0x370, 0x3ff)], [chr(c) for c in range(0x400, 0x4ff)], [chr(c) for c in range(0x300, 0x36f)],
        [chr(c) for c in range(0x4e00, 0x4e80)], [chr(c) for c in range(0x3040, 0x30ff)], [chr(c) for c in range(0x1f600, 0x1f64f)],
        list("0123456789١٢٣٤٥६७८"), list("'sStTreREvVmMlLdD"), list(".,;:!?-_()[]{}<>/\\|\"'`~@#$%^&*+="),
    ]
    out = []
    for _ in range(n):
        k = rng.randint(1, 40)
        s = []
        for _ in range(k):
            if rng.random() < 0.08:
                # Random code points assigned in Python's Unicode (14.0 for Python 3.11), so
                # characters added in Unicode 15/16 (which onig knows but our 15.0 tables may
                # not) stay out of the expected data; see the note in mlstack.h >>unicode.
                c = rng.randint(0x80, 0x10FFFF)
                while 0xD800 <= c < 0xE000 or unicodedata.category(chr(c)) == 'Cn':
                    c = rng.randint(0x80, 0x10FFFF)
                s.append(chr(c))
            else:
                s.append(rng.choice(rng.choice(pools)))
        out.append(''.join(s))
    return out


def matches(pattern, s):
    iso = pre_tokenizers.Split(Regex(pattern), behavior="isolated").pre_tokenize_str(s)
    rem = set(tuple(x[1]) for x in pre_tokenizers.Split(Regex(pattern), behavior="removed").pre_tokenize_str(s))
    spans = []
    for _, (a, b) in iso:
        if (a, b) not in rem:
            ba = len(s[:a].encode('utf-8'))
            spans += [ba, ba + len(s[a:b].encode('utf-8'))]
    return spans


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--tokenizers', default=os.path.join(os.path.dirname(__file__), '..', '..', 'shared', 'tokenizers'))
    ap.add_argument('--out', default=os.path.join(os.path.dirname(__file__), '..', 'tests', 'fixtures', 'regex', 'splits.json'))
    args = ap.parse_args()
    pats = list(KNOWN)
    seen = set(p for _, p in pats)

    def walk(o, name):
        if isinstance(o, dict):
            if isinstance(o.get('Regex'), str) and o['Regex'] not in seen:
                seen.add(o['Regex'])
                pats.append((name, o['Regex']))
            for v in o.values():
                walk(v, name)
        elif isinstance(o, list):
            for v in o:
                walk(v, name)
    for path in sorted(glob.glob(os.path.join(args.tokenizers, '*', 'tokenizer.json'))):
        walk(json.load(open(path, encoding='utf-8')), os.path.basename(os.path.dirname(path)))
    rng = random.Random(20240601)
    strings = EXTRA_STRINGS + gen_random(rng, 300)
    out = {'generator': 'tools/make_regex_fixtures.py', 'strings': strings, 'patterns': []}
    for name, p in pats:
        out['patterns'].append({'name': name, 'pattern': p, 'matches': [matches(p, s) for s in strings]})
    with open(args.out, 'w', encoding='utf-8') as f:
        json.dump(out, f, ensure_ascii=False, separators=(',', ':'))
        f.write('\n')
    print('%d patterns x %d strings -> %s (%d bytes)' % (len(pats), len(strings), args.out, os.path.getsize(args.out)))


if __name__ == '__main__':
    main()
