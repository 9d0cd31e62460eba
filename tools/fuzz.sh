#!/usr/bin/env bash
# Builds the libFuzzer targets in tests/fuzz/ with clang (ASan + UBSan) and runs each one.
# Usage: tools/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]
#   default 60 s and every tests/fuzz/fuzz_<target>.c (json, safetensors, ...)
# New inputs found go to build/fuzz/corpus-<target>/ (the seed corpus in tests/fuzz/corpus/ is
# only read); crashes are written as build/fuzz/crash-<target>-*. Runs from the repo root.
# Environment: CLANG (default clang); FUZZ_SAN (sanitizers besides fuzzer, default
# address,undefined; "address" alone builds faster); FUZZ_OPT (default -O1); FUZZ_BUILD=only
# builds and stops, FUZZ_BUILD=skip runs binaries built before; FUZZ_TIMEOUT (default 10 s) is the
# wall time one input may take (raise it on a loaded machine, where a niced fuzzer is starved).
# The SIMD kernels are left out (-DMLSTACK_NO_AVX2 -DMLSTACK_NO_AVX512): no parser reaches them,
# and they dominate the build.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for f in tests/fuzz/fuzz_*.c; do t=${f#tests/fuzz/fuzz_}; targets+=("${t%.c}"); done
fi
CLANG=${CLANG:-clang}
FUZZ_SAN=${FUZZ_SAN:-address,undefined}
FUZZ_OPT=${FUZZ_OPT:--O1}
FUZZ_BUILD=${FUZZ_BUILD:-yes}
out=build/fuzz
mkdir -p "$out"

# libFuzzer ships in clang's runtime package (Debian: libclang-rt-NN-dev); check it links.
probe="$out/probe.c"
echo 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$probe"
if ! "$CLANG" -fsanitize=fuzzer "$probe" -o "$out/probe" 2>/dev/null; then
    echo "fuzz.sh: $CLANG cannot link -fsanitize=fuzzer; install the clang runtime (e.g. apt-get install libclang-rt-14-dev)" >&2
    exit 1
fi

status=0
for t in "${targets[@]}"; do
    src=tests/fuzz/fuzz_$t.c
    [ -f "$src" ] || { echo "fuzz.sh: no $src" >&2; exit 1; }
    bin=$out/fuzz_$t
    if [ "$FUZZ_BUILD" != skip ]; then
        start=$(date +%s)
        "$CLANG" -g "$FUZZ_OPT" -std=c99 -I. -DMLSTACK_LIBFUZZER -DMLSTACK_NO_AVX2 -DMLSTACK_NO_AVX512 \
            -fsanitize=fuzzer,"$FUZZ_SAN" -fno-sanitize-recover=all \
            -o "$bin" "$src" -lpthread -lm
        echo "fuzz_$t built in $(( $(date +%s) - start )) s ($FUZZ_OPT, fuzzer,$FUZZ_SAN)"
    fi
    [ "$FUZZ_BUILD" = only ] && continue
    mkdir -p "$out/corpus-$t"
    seeds=()
    [ -d "tests/fuzz/corpus/$t" ] && seeds=("tests/fuzz/corpus/$t")
    echo "== fuzz_$t for ${secs}s =="
    rc=0
    "$bin" "$out/corpus-$t" ${seeds[@]+"${seeds[@]}"} \
        -max_total_time="$secs" -max_len=4096 -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$out/crash-$t-" >"$out/fuzz_$t.log" 2>&1 || rc=$?
    grep -E '^#[0-9]+ +DONE|ERROR|SUMMARY|stat::number_of_executed_units|stat::peak_rss' "$out/fuzz_$t.log" | tail -n 12 || true
    if [ "$rc" -ne 0 ]; then
        echo "fuzz_$t: FAILED (exit $rc; see $out/fuzz_$t.log and $out/crash-$t-*)"
        status=1
    fi
done
exit $status
