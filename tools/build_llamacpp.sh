#!/usr/bin/env bash
# Build llama.cpp's benchmark tools (CPU only) from the llama.cpp copy that the
# llama-cpp-python source distribution on PyPI carries under vendor/llama.cpp.
# Used only by tools/bench_vs_llamacpp.py; nothing from llama.cpp is committed.
#
#   tools/build_llamacpp.sh [DEST]      # DEST defaults to peer/ (git-ignored; make clean leaves it)
#
# Result: DEST/bin/llama-bench, llama-batched-bench, llama-simple, llama-completion and DEST/VERSION
# (package version, llama.cpp build number and commit).  Does nothing when the
# binaries are already there (delete DEST, or set LLAMACPP_REBUILD=1, to redo).
#
# Environment:
#   LLAMA_CPP_PYTHON_VERSION  sdist version to fetch (default below; "latest" = newest)
#   LLAMACPP_SDIST            path to an already downloaded llama_cpp_python-*.tar.gz
#   LLAMACPP_JOBS             parallel compile jobs (default 2)
#   LLAMACPP_NATIVE           ON (default: -march=native) or OFF
#   LLAMACPP_TARGETS          cmake targets (default: llama-bench llama-batched-bench llama-simple llama-completion;
#                             llama-server, llama-cli and llama-quantize can be added)
#   LLAMACPP_REBUILD          1 to rebuild even if the binaries exist
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
cd "$root"

dest="${1:-peer}"
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
jobs="${LLAMACPP_JOBS:-2}"
native="${LLAMACPP_NATIVE:-ON}"
targets="${LLAMACPP_TARGETS:-llama-bench llama-batched-bench llama-simple llama-completion}"
py="${PYTHON:-python3}"

mkdir -p "$dest"
dest="$(cd "$dest" && pwd)"
bindir="$dest/bin"

have_all=1
for t in $targets; do
    [ -x "$bindir/$t" ] || have_all=0
done
# DEST/VERSION: the package version, the llama.cpp commit its changelog names
# and the one the vendored tree reports (the sdist carries a shallow .git, so
# the build number llama.cpp prints is meaningless), and how the build went.
write_version() {
    local src="$dest/src" pkgver upstream vcommit
    pkgver="$(sed -n 's/^Version: *//p' "$src/PKG-INFO" 2>/dev/null | head -n1)"
    upstream="$(grep -m1 -o 'llama\.cpp@[0-9a-f]*' "$src/CHANGELOG.md" 2>/dev/null | sed 's/.*@//')"
    vcommit="$(git -C "$src/vendor/llama.cpp" log -1 --format='%h %cs %s' 2>/dev/null || true)"
    {
        echo "llama-cpp-python ${pkgver:-?}"
        echo "llama.cpp commit ${upstream:-?} (vendored tree: ${vcommit:-no git metadata})"
        "$bindir/llama-bench" --version 2>&1 | grep -i -E 'version|built' | head -n2 || true
        if [ -n "${1:-}" ]; then echo "build: $1"; fi
    } > "$dest/VERSION"
    cat "$dest/VERSION"
}

if [ "$have_all" = 1 ] && [ "${LLAMACPP_REBUILD:-0}" != 1 ]; then
    echo "build_llamacpp: binaries already in $bindir (LLAMACPP_REBUILD=1 to redo)"
    if [ -f "$dest/VERSION" ]; then cat "$dest/VERSION"; else write_version; fi
    exit 0
fi

for tool in cmake tar; do
    command -v "$tool" >/dev/null || { echo "build_llamacpp: $tool not found" >&2; exit 1; }
done

# 1. the source distribution
sdist="${LLAMACPP_SDIST:-}"
pattern="llama_cpp_python-*.tar.gz"
[ "$version" != latest ] && pattern="llama_cpp_python-$version.tar.gz"
if [ -z "$sdist" ]; then
    # shellcheck disable=SC2086
    sdist="$(ls "$dest"/dl/$pattern 2>/dev/null | head -n1 || true)"
fi
if [ -z "$sdist" ]; then
    spec="llama-cpp-python"
    [ "$version" != latest ] && spec="llama-cpp-python==$version"
    echo "build_llamacpp: downloading $spec (sdist)"
    "$py" -m pip download --no-deps --no-binary :all: --dest "$dest/dl" "$spec"
    # shellcheck disable=SC2086
    sdist="$(ls -t "$dest"/dl/$pattern | head -n1)"
fi
echo "build_llamacpp: source $sdist"

# 2. unpack (once)
src="$dest/src"
want="$(basename "$sdist" .tar.gz)"
want="${want#llama_cpp_python-}"
have="$(sed -n 's/^Version: *//p' "$src/PKG-INFO" 2>/dev/null | head -n1 || true)"
if [ ! -f "$src/vendor/llama.cpp/CMakeLists.txt" ] || [ "$have" != "$want" ]; then
    rm -rf "$src" "$dest/unpack"
    mkdir -p "$dest/unpack"
    tar -xzf "$sdist" -C "$dest/unpack"
    mv "$dest/unpack"/llama_cpp_python-* "$src"
    rmdir "$dest/unpack"
fi
lcpp="$src/vendor/llama.cpp"
[ -f "$lcpp/CMakeLists.txt" ] || { echo "build_llamacpp: no vendor/llama.cpp in the sdist" >&2; exit 1; }

# 3. configure and build (CPU only, no network features, static libs so the
#    binaries do not depend on the build tree's shared objects)
gen=()
# llama-server only builds with LLAMA_BUILD_SERVER; turn it on when it is asked for
server=OFF
case " $targets " in *" llama-server "*) server=ON ;; esac
command -v ninja >/dev/null && gen=(-G Ninja)
bld="$dest/cmake-build"
start=$(date +%s)
nice -n 10 cmake -S "$lcpp" -B "$bld" "${gen[@]}" \
    -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE="$native" \
    -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_OPENCL=OFF \
    -DGGML_BLAS=OFF \
    -DLLAMA_CURL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_TOOLS=ON \
    -DLLAMA_BUILD_SERVER="$server"
# shellcheck disable=SC2086
nice -n 10 cmake --build "$bld" --config Release -j "$jobs" --target $targets
end=$(date +%s)

mkdir -p "$bindir"
for t in $targets; do
    f="$(find "$bld" -type f -name "$t" -perm -u+x | head -n1)"
    [ -n "$f" ] || { echo "build_llamacpp: $t was not built" >&2; exit 1; }
    cp "$f" "$bindir/$t"
done

# 4. record what was built
write_version "$((end - start)) s for cmake configure + build, $jobs jobs, GGML_NATIVE=$native, targets: $targets"
echo "build_llamacpp: done; binaries in $bindir"
