#!/usr/bin/env bash
# Tokenizer encode throughput, ours vs Hugging Face tokenizers, one thread, same 1 MB of English
# prose (../shared/DESIGN.md and STYLE.md repeated). HF's side needs `pip install tokenizers`;
# without it only ours is printed.
set -euo pipefail
cd "$(dirname "$0")/.."
b=build
mkdir -p "$b"
text="$b/bench_prose.txt"
if [ ! -f "$text" ]; then
    : > "$text"
    while [ "$(stat -c %s "$text")" -lt 1048576 ]; do cat ../shared/DESIGN.md ../shared/STYLE.md >> "$text"; done
    head -c 1048576 "$text" > "$text.tmp" && mv "$text.tmp" "$text"
fi
cc -O2 -std=c99 -I. -o "$b/bench_tokenizer" tools/bench_tokenizer.c -lpthread -lm
for fam in smollm2 llama2-tinyllama gpt2; do
    dir=../shared/tokenizers/$fam
    "$b/bench_tokenizer" "$dir" "$text"
    if python3 -c 'import tokenizers' 2>/dev/null; then
        RAYON_NUM_THREADS=1 python3 tools/bench_tokenizer_hf.py "$dir" "$text"
    fi
done
