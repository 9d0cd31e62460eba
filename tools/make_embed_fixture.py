#!/usr/bin/env python3
"""Makes tests/fixtures/embed/: two tiny random decoder embedding models as sentence-transformers
saves them, with the embeddings sentence-transformers computes, for tests/test_embed.c and
tests/test_server.py.

  qwen3_last/  Qwen3-Embedding's layout: Transformer (Qwen3 weights saved from the base model, no
               "model." prefix, no lm_head, tied), Pooling lasttoken, Normalize; the tokenizer
               appends <|endoftext|> (TemplateProcessing), as Qwen3-Embedding's does
  qwen3_mean/  the same weights with mean pooling and no Normalize module

Each folder has reference.json: {"texts": [...], "ids": [[...]], "embeddings": [[...]]}, from
SentenceTransformer(folder).encode(text) one text at a time (no padding), float32.
Needs torch, transformers, tokenizers, sentence-transformers. Rerun:
    python3 tools/make_embed_fixture.py
"""
import json
import os
import shutil
import sys

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast, Qwen3Config, Qwen3Model

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "embed")
TEXTS = [
    "hello world",
    "The quick brown fox jumps over the lazy dog.",
    "a",
    "Embeddings turn text into vectors; similar texts land close together.",
    "caf\u00e9 \u00fcber na\u00efve \u2014 \u65e5\u672c\u8a9e",
]
CORPUS = TEXTS * 4 + ["the of and to in is for on that with as by this from at an be or are"] * 8


def make_tokenizer():
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(CORPUS, trainer)
    eos = tok.token_to_id("<|endoftext|>")
    tok.post_processor = processors.TemplateProcessing(single="$A <|endoftext|>", pair="$A <|endoftext|> $B:1 <|endoftext|>:1",
                                                       special_tokens=[("<|endoftext|>", eos)])
    return tok


def save(folder, model, fast, pooling, normalize):
    from sentence_transformers import SentenceTransformer, models as st_models
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    os.makedirs(folder)
    tr_dir = os.path.join(folder, "_tr")
    model.save_pretrained(tr_dir, safe_serialization=True)
    fast.save_pretrained(tr_dir)
    word = st_models.Transformer(tr_dir, max_seq_length=128)
    pool = st_models.Pooling(word.get_word_embedding_dimension(), pooling_mode=pooling)
    mods = [word, pool] + ([st_models.Normalize()] if normalize else [])
    st = SentenceTransformer(modules=mods, device="cpu")
    st.save(folder)
    shutil.rmtree(tr_dir)
    # as Qwen3-Embedding ships it: the architecture says Qwen3ForCausalLM, the weights are the
    # base model's (no "model." prefix, no lm_head)
    cfg_path = os.path.join(folder, "config.json")
    with open(cfg_path) as f:
        cfg = json.load(f)
    cfg["architectures"] = ["Qwen3ForCausalLM"]
    with open(cfg_path, "w") as f:
        json.dump(cfg, f, indent=2)
    st = SentenceTransformer(folder, device="cpu")
    ids, embs = [], []
    for t in TEXTS:
        ids.append(st.tokenizer(t)["input_ids"])
        e = st.encode([t], batch_size=1, convert_to_numpy=True, normalize_embeddings=False)[0]
        embs.append([float(x) for x in e])
    with open(os.path.join(folder, "reference.json"), "w") as f:
        json.dump({"texts": TEXTS, "ids": ids, "pooling": pooling, "normalize": normalize, "embeddings": embs}, f)
    for name in os.listdir(folder):  # what the engine does not read stays out of the repo
        if name in ("README.md", "config_sentence_transformers.json"):
            os.remove(os.path.join(folder, name))


def main():
    torch.manual_seed(1234)
    tok = make_tokenizer()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|endoftext|>", pad_token="<|endoftext|>")
    cfg = Qwen3Config(vocab_size=tok.get_vocab_size(), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, head_dim=16, max_position_embeddings=256,
                      rms_norm_eps=1e-6, tie_word_embeddings=True, eos_token_id=tok.token_to_id("<|endoftext|>"),
                      bos_token_id=None)
    model = Qwen3Model(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.normal_(0, 0.2 if p.dim() > 1 else 0.1)
            if p.dim() == 1:
                p.add_(1.0)
    save(os.path.join(ROOT, "qwen3_last"), model, fast, "lasttoken", True)
    save(os.path.join(ROOT, "qwen3_mean"), model, fast, "mean", False)
    print("wrote", ROOT, file=sys.stderr)


if __name__ == "__main__":
    main()
