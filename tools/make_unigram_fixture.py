#!/usr/bin/env python3
"""Build the small Unigram tokenizers under tests/fixtures/unigram/ and record what the
Hugging Face `tokenizers` library encodes with them (tests/test_unigram.c checks that
mlstack's Viterbi segmentation gives the same ids, byte for byte, and decodes back alike).

Two tokenizers, both trained here with tokenizers' UnigramTrainer on the small corpus below
(so no download is needed):
  unigram.json     NFKC normalizer, Metaspace pre-tokenizer and decoder, <s> ... </s>
                   post-processor; unknown characters fuse into one <unk> (fuse_unk, as
                   tokenizers always does for Unigram)
  unigram_bf.json  the same model with byte_fallback: true and the 256 <0xNN> pieces appended
                   (lowest scores), so unknown characters become their UTF-8 bytes
vectors.json holds, per tokenizer, each test text with the ids of encode(text) with and
without special tokens, and decode(ids, skip_special_tokens=True).

Rerunnable: the same tokenizers version gives the same files.

    python3 tools/make_unigram_fixture.py

Needs: tokenizers.  Run time: a second.
"""

import json
import os
import random

from tokenizers import Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import Unigram
from tokenizers.trainers import UnigramTrainer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "unigram")

CORPUS = [
    "The quick brown fox jumps over the lazy dog.",
    "A unigram language model keeps the pieces that explain the corpus best.",
    "Viterbi finds the segmentation with the highest total score.",
    "Tokenizers split text into pieces; pieces map to ids.",
    "Numbers like 12, 345 and 6789 appear in text too.",
    "Le renard brun saute par-dessus le chien paresseux.",
    "Der schnelle braune Fuchs springt über den faulen Hund.",
    "El rápido zorro marrón salta sobre el perro perezoso.",
    "naïve café résumé coöperate façade",
    "tokenization tokenizer tokenize tokens token",
    "the then there these those this that thin thing think",
    "running runner runs ran run rerun",
    "Small models run on laptops and edge boxes.",
    "    indented line\twith a tab",
    "email@example.com and https://example.org/path?q=1",
]

TEXTS = [
    "The quick brown fox.",
    "the thing there then",
    "tokenizers tokenized the retokenization",
    "unseen letters: qxz jjj kkkk",
    "Über café — naïve résumé",
    "ＦＵＬＬＷＩＤＴＨ and ﬁ ligature (NFKC)",
    "日本語のテキスト and emoji 🙂🙂 with Ωmega",
    "  leading and   multiple   spaces  ",
    "numbers 0123456789 3.14159 -42",
    "mixed\ttabs\nand\nnewlines",
    "<s> literal special text </s> and <unk>",
    "",
    " ",
    "a",
    "zzzzzzzzzzzzzzzzzzzzzzzz",
    "punctuation!?!... (brackets) [more] {curly}",
]


def random_texts(n, seed=13):
    """Random cuts of the corpus glued with random characters (ASCII, accented, CJK, emoji,
    spaces), so segmentations meet many score ties, unknown runs and piece boundaries."""
    rng = random.Random(seed)
    joined = " ".join(CORPUS)
    extra = "aeiou xyzq  \u00e9\u00fc\u00f1\u65e5\u672c\U0001F642\u2581\t0123456789.,;"
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 6)):
            if rng.random() < 0.6:
                a = rng.randrange(len(joined))
                parts.append(joined[a:a + rng.randint(1, 24)])
            else:
                parts.append("".join(rng.choice(extra) for _ in range(rng.randint(1, 8))))
        out.append("".join(parts))
    return out


def build():
    tok = Tokenizer(Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    tok.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="always", split=True)
    trainer = UnigramTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"], unk_token="<unk>",
                             max_piece_length=12, show_progress=False)
    tok.train_from_iterator(CORPUS * 4, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))])
    return tok


def with_byte_fallback(tok):
    d = json.loads(tok.to_str())
    vocab = d["model"]["vocab"]
    low = min(s for _, s in vocab)
    have = {p for p, _ in vocab}
    for b in range(256):
        piece = "<0x%02X>" % b
        if piece not in have:
            vocab.append([piece, low - 1.0])
    d["model"]["byte_fallback"] = True
    d["decoder"] = {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, d["decoder"]]}
    return Tokenizer.from_str(json.dumps(d))


def main():
    os.makedirs(OUT, exist_ok=True)
    base = build()
    toks = {"unigram.json": base, "unigram_bf.json": with_byte_fallback(base)}
    vectors = {}
    for name, tok in toks.items():
        d = json.loads(tok.to_str())
        assert d["model"]["type"] == "Unigram"
        with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
            f.write(json.dumps(d, ensure_ascii=False, separators=(",", ":")) + "\n")
        tok = Tokenizer.from_file(os.path.join(OUT, name))  # the reference reads the file written
        cases = []
        for text in TEXTS + random_texts(40):
            plain = tok.encode(text, add_special_tokens=False).ids
            special = tok.encode(text, add_special_tokens=True).ids
            cases.append({"text": text, "ids": plain, "ids_special": special,
                          "decoded": tok.decode(plain, skip_special_tokens=True)})
        vectors[name] = cases
        unk = tok.token_to_id("<unk>")
        print("%-16s vocab %4d, %d texts, %d <unk> ids" % (name, tok.get_vocab_size(), len(cases),
                                                          sum(c["ids"].count(unk) for c in cases)))
    with open(os.path.join(OUT, "vectors.json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(vectors, ensure_ascii=False, indent=1) + "\n")
    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT))
    print("tests/fixtures/unigram: %d bytes" % total)


if __name__ == "__main__":
    main()
