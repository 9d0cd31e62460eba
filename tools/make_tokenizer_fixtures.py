#!/usr/bin/env python3
"""Records Hugging Face reference tokenizations for tests/test_tokenizer.c.

For every folder in ../shared/tokenizers/ (relative to the repository root) this loads the
tokenizer with transformers' AutoTokenizer (the fast, Rust-backed one), encodes every string of
a shared corpus with add_special_tokens False and True, and decodes the add_special_tokens=True
ids with skip_special_tokens False and True. The corpus is written once to
tests/fixtures/tokenizer/corpus.json, the results to tests/fixtures/tokenizer/<family>.json.

Qwen2.5 ships only vocab.json + merges.txt + tokenizer_config.json: transformers builds its
tokenizer from those, which is exactly what we record (its tokenizer.json is not committed).

Usage: python3 tools/make_tokenizer_fixtures.py [--shared ../shared] [--out tests/fixtures/tokenizer]
"""
import argparse
import json
import os
import random
import sys


def corpus():
    c = []
    add = c.append
    # scripts and languages
    for s in [
        "Hello world", "hello world", "HELLO WORLD", " Hello world", "Hello World!", "Hello, world!",
        "中文字符测试", "我爱北京天安门。", "日本語のテキスト", "ひらがなとカタカナ", "カタカナ", "ｶﾀｶﾅ半角",
        "한국어 텍스트입니다", "안녕하세요 세계", "مرحبا بالعالم", "السلام عليكم ورحمة الله", "שלום עולם",
        "עברית עם ניקוד: בְּרֵאשִׁית", "नमस्ते दुनिया", "हिन्दी में लिखा गया पाठ", "สวัสดีชาวโลก",
        "ภาษาไทยไม่มีช่องว่าง", "Привет, мир!", "Ελληνικά γράμματα", "Tiếng Việt có dấu", "Cửa Việt",
        "Äpfel", "Führer", "naïve café résumé", "ß ẞ ſ ﬁ ﬂ", "Ⅻ ① ⑴ ½ ¾ ²³", "ied 4 ½ months",
        "Zürich, São Paulo, Kraków", "ខ្មែរ ភាសា", "ᓀᐦᐃᔭᐍᐏᐣ", "ኢትዮጵያ", "Ꭰ Ꭱ Ꭲ",
        "𝔘𝔫𝔦𝔠𝔬𝔡𝔢 𝕄𝕒𝕥𝕙", "𐍈𐌰𐌿𐌸", "mixed 中文 and English 混合", "数字123和字母abc",
    ]:
        add(s)
    # emoji
    for s in [
        "🦙", " this is 🦙.cpp", "👨‍👩‍👧‍👦", "👩🏽‍💻", "👍🏻👍🏼👍🏽👍🏾👍🏿", "🇺🇸🇯🇵🇫🇷", "🏳️‍🌈",
        "❤️", "☺︎ ☺️", "1️⃣2️⃣", "🧑‍🤝‍🧑", "emoji 😀 in 😃 text 😄", "🦙🦙🦙", "🤷‍♀️", "🫠🫡🫥",
    ]:
        add(s)
    # combining marks, NFC vs NFD
    for s in ["é", "e\u0301", "résumé", "re\u0301sume\u0301", "Å", "A\u030a", "\u212b",
              "a" + "\u0300" * 5, "Vie\u0302\u0301t Nam", "n\u0303", "ñ", "가", "\u1100\u1161",
              "\u0915\u093f", "q\u0307\u0323", "\u0301 leading mark", "ﬃ ligature", "Ｆｕｌｌｗｉｄｔｈ",
              "x\u0308\u0308\u0308"]:
        add(s)
    # whitespace
    for s in ["", " ", "  ", "   ", "    ", "\t", "\n", "\n\n", "\n\n\n", "\t\n", "\r\n", "\r", "a\rb",
              "a\r\nb", "a\n\rb", "  leading", "trailing  ", "  both  ", "\tTab\tseparated\t",
              "a  b   c    d", "line1\nline2\r\nline3\rline4", " \n \n ", "\u00a0nbsp\u00a0", "\u3000ideographic",
              "\u2028sep\u2029", "\u200bzero\u200bwidth", "\x0bvt\x0cff", "\x00nul\x01", "Hello\n    Hello",
              "    Hello\n    Hello", " (", "\n =", "' era", "x\n\n\ny", "   \t  \n", " " * 40, "\n" * 20,
              "\t" * 7, "a" + " " * 17 + "b", "end with space ", " start"]:
        add(s)
    for k in range(5):
        add(" " * k + "Hello")
    # digits
    for k in range(1, 25):
        add("1234567890123456789012345"[:k])
    for s in ["3", "33", "333", "3333", "33333", "333333", "3333333", "33333333", "333333333",
              "3.14159", "1,000,000", "-42", "0x1F", "1e-10", "v1.2.3", "2024-01-31", "12:30:45",
              "٣٤٥", "१२३", "๑๒๓", "１２３", "w048 7tuijk dsdfhu", "abc123def456"]:
        add(s)
    # code
    for s in [
        "def foo(x):\n    return x * 2\n",
        "int main(void) {\n\treturn 0;\n}\n",
        "for (int i = 0; i < n; ++i) { a[i] += b[i]; }",
        "fn main() {\n    println!(\"Hello, {}!\", name);\n}",
        "console.log(`template ${x}`);",
        "SELECT * FROM users WHERE id = 42;",
        "<div class=\"x\">&amp;</div>",
        "#include <stdio.h>\n",
        "    if x:\n        pass\n    else:\n        raise ValueError('bad')",
        "x = {'a': [1, 2, 3], \"b\": None}",
        "$ ls -la | grep foo && echo ok",
        "!!!!!!", "...", "?!?!", "--", "—–", "«quoted»", "“smart quotes”", "‘single’",
        "a->b => c <= d != e == f", "i++; j--; k **= 2;", "/* comment */ // line",
        "@decorator\nclass A(B):\n    pass",
    ]:
        add(s)
    # urls, emails
    for s in ["https://huggingface.co/docs/tokenizers?x=1&y=2#frag", "http://example.com/a_b-c.d",
              "mailto:someone@example.org", "user@example.com", "ftp://192.168.0.1:21/file.tar.gz",
              "www.example.co.uk/path/to/page.html"]:
        add(s)
    # contractions
    for s in ["it's", "IT'S", "I'm", "I'M", "you're", "YOU'RE", "we've", "WE'VE", "he'll", "HE'LL",
              "she'd", "SHE'D", "don't", "DON'T", "'s", "'T", "'re", "'LL", "'Ll", "'lL", "rock 'n' roll",
              "the dog's bone's", "can't won't shan't", "O'Neil", "'quoted'", "''", "'''"]:
        add(s)
    add(" discards")
    add("3333333333333333333333333333333333333333 trailing")
    # special-token texts inside and beside text (union over families)
    specials = ["<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "[INST]", "[/INST]",
                "<|user|>", "<|assistant|>", "<|end|>", "<|system|>", ">>TITLE<<", "<|padding|>",
                "<repo_name>", "[TOOL_CALLS]", "<|fim_prefix|>", "<|box_start|>"]
    for sp in specials:
        add(sp)
        add("abc" + sp + "def")
        add("abc " + sp + " def")
        add(" " + sp + "\n")
        add(sp + sp)
    for s in ["<s> hello </s>", "abc</s> def ghi", "a</s>\nb", "<s>\n", "</s>", "[INST] hi [/INST] ok</s>",
              "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n", "<|user|>\nHello<|end|>\n<|assistant|>",
              "<s", "s>", "<|endoftext", "<|endoftext|", "<<s>>", "<|im_start|><|im_end|>", "x<|end|>   y",
              "   <|end|>   ", "<|assistant|>\n\n text", "\n<|system|>\n"]:
        add(s)
    # mpt whitespace tokens and markup
    for s in ["a" + " " * 24 + "b", "a" + " " * 30 + "b", "   code   indented", "<|padding|>  <|padding|>"]:
        add(s)
    # long words
    add("a" * 10000)
    add("ab" * 3000)
    add("x" * 513 + " " + "y" * 257)
    add("antidisestablishmentarianism " * 20)
    add("中" * 2000)
    add("🦙" * 300)
    # the llama.cpp "check" text
    add("\n \n\n \n\n\n \t \t\t \t\n  \n   \n    \n     \n🚀 (normal) 😶‍🌫️ (multiple emojis concatenated) ✅ 🦙🦙 3 33 333 3333 33333 333333 3333333 33333333 3.3 3..3 3...3  កាន់តែពិសេសអាច😁 ?我想在apple工作1314151天～ ------======= нещо на Български ''''''```````\"\"\"\"......!!!!!!?????? I've been 'told he's there, 'RE you sure? 'M not sure I'll make it, 'D you like some tea? We'Ve a'lL")
    # sentences
    for s in ["The quick brown fox jumps over the lazy dog.", "Lorem ipsum dolor sit amet, consectetur adipiscing elit.",
              "Mr. Smith paid $3.50 for 2.5kg (approx.) of apples; 50% off!", "tab\tseparated\tvalues\n1\t2\t3",
              "CamelCaseWordsAndALLCAPS and snake_case_words", "Hyphen-ated and en–dash and em—dash",
              "Ünïcödé mîxéd wîth ASCII", "ﬁnancial ﬂow", "Ⓐⓑⓒ", "™ © ®", "µ vs μ", "K vs K", "Ω vs Ω"]:
        add(s)
    # random valid UTF-8 strings
    rng = random.Random(1234)
    ranges = [(0x20, 0x7E), (0xA0, 0x24F), (0x370, 0x3FF), (0x400, 0x4FF), (0x590, 0x6FF), (0x900, 0x97F),
              (0xE00, 0xE7F), (0x1100, 0x11FF), (0x3040, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
              (0x1F300, 0x1F6FF), (0x1F900, 0x1F9FF), (0x300, 0x36F), (0x2000, 0x206F), (0x0, 0x1F),
              (0xFF00, 0xFFEF), (0x10000, 0x10FFFF)]
    while len(c) < 460:
        n = rng.randint(1, 40)
        chars = []
        for _ in range(n):
            if rng.random() < 0.25:
                chars.append(rng.choice(" \t\n'"))
                continue
            lo, hi = rng.choice(ranges)
            cp = rng.randint(lo, hi)
            if 0xD800 <= cp <= 0xDFFF:
                cp = 0x41
            chars.append(chr(cp))
        add("".join(chars))
    return c


def load(shared, fam, as_json=True):
    """AutoTokenizer for a folder. With as_json, the backend is tokenizer.json exactly as written
    (transformers 5's LlamaTokenizer otherwise rebuilds normalizer, pre-tokenizer and decoder from
    the vocabulary, which changes ids for text with leading spaces or after special tokens and
    contradicts llama.cpp's reference vectors). transformers still decides the special tokens:
    an explicit add_bos_token/add_eos_token in tokenizer_config.json replaces the post-processor."""
    from transformers import AutoTokenizer
    import tokenizers
    d = os.path.join(shared, "tokenizers", fam)
    j = os.path.join(d, "tokenizer.json")
    if as_json and os.path.exists(j):
        return AutoTokenizer.from_pretrained(d, tokenizer_object=tokenizers.Tokenizer.from_file(j))
    return AutoTokenizer.from_pretrained(d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", default="../shared")
    ap.add_argument("--out", default="tests/fixtures/tokenizer")
    ap.add_argument("--only", default=None)
    a = ap.parse_args()
    os.environ.setdefault("RAYON_NUM_THREADS", "1")
    texts = corpus()
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "corpus.json"), "w", encoding="utf-8") as f:
        json.dump(texts, f, ensure_ascii=False, indent=0)
        f.write("\n")
    fams = sorted(os.listdir(os.path.join(a.shared, "tokenizers")))
    import transformers
    import tokenizers
    for fam in fams:
        if not os.path.isdir(os.path.join(a.shared, "tokenizers", fam)) or (a.only and fam != a.only):
            continue
        tok = load(a.shared, fam)
        plain = load(a.shared, fam, as_json=False)
        class_differs = sum(1 for t in texts if plain.encode(t, add_special_tokens=True) != tok.encode(t, add_special_tokens=True))
        ids_plain, ids_special, dec, dec_skip = [], [], [], []
        for t in texts:
            ids_plain.append(tok.encode(t, add_special_tokens=False))
            i2 = tok.encode(t, add_special_tokens=True)
            ids_special.append(i2)
            dec.append(tok.decode(i2, skip_special_tokens=False))
            dec_skip.append(tok.decode(i2, skip_special_tokens=True))
        rec = {
            "family": fam,
            "generator": "transformers %s / tokenizers %s, AutoTokenizer (fast)" % (transformers.__version__,
                                                                                 tokenizers.__version__),
            "class": type(tok).__name__,
            "class_rebuild_differs": class_differs,
            "bos_id": tok.bos_token_id, "eos_id": tok.eos_token_id,
            "ids": ids_plain, "ids_special": ids_special, "decode": dec, "decode_skip": dec_skip,
        }
        path = os.path.join(a.out, fam + ".json")
        with open(path, "w", encoding="utf-8") as f:
            f.write("{")
            keys = list(rec)
            for ki, k in enumerate(keys):
                v = rec[k]
                f.write("\n" + json.dumps(k) + ": ")
                if isinstance(v, list):
                    f.write("[\n" + ",\n".join(json.dumps(x, ensure_ascii=False, separators=(",", ":")) for x in v) + "]")
                else:
                    f.write(json.dumps(v, ensure_ascii=False))
                if ki + 1 < len(keys):
                    f.write(",")
            f.write("\n}\n")
        print("%-18s %-28s %d cases -> %s (plain AutoTokenizer differs on %d)" % (fam, type(tok).__name__, len(texts), path, class_differs), file=sys.stderr)


if __name__ == "__main__":
    main()
