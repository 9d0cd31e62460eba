#!/usr/bin/env bash
# Guest instructions per matmul on the AArch64 kernel tables, counted under qemu-user with
# tools/qemu_insns.c (repeatable, where wall time under emulation is not): each native GGML
# format from its rows (decoded on every call) and from its KQ panels, Q8_0 / Q4_1 panels for
# reference, one activation row (decode) and 8 (prefill or batched decode), on the plain NEON
# and the dotprod tables. Needs gcc-aarch64-linux-gnu and qemu-user.
#
#   tools/neon_insns.sh [N_IN N_OUT]      (default 768 1536; N_IN rounds up to a multiple of 256)
set -euo pipefail
cd "$(dirname "$0")/.."
N_IN=${1:-768}
N_OUT=${2:-1536}
if ((N_IN % 256)); then N_IN=$((N_IN / 256 * 256 + 256)); fi # the K formats' super-blocks
OUT=build/neon-insns
mkdir -p "$OUT"
CC=${AARCH64_CC:-aarch64-linux-gnu-gcc}
QEMU=${QEMU_AARCH64:-qemu-aarch64}
cc -shared -fPIC -O2 -Wall -Wextra -o "$OUT/libinsns.so" tools/qemu_insns.c
"$CC" -std=c99 -O2 -Wall -Wextra -I. -static -o "$OUT/kq_probe" tools/kq_probe.c -lpthread -lm
count() { # table type B reps panels -> instructions
    "$QEMU" -cpu max -plugin "$OUT/libinsns.so" "$OUT/kq_probe" "$1" "$2" "$N_IN" "$N_OUT" "$3" "$4" "$5" 2>&1 >/dev/null |
        sed -n 's/^insns: //p'
}
per_call() { # table type B panels -> instructions of one matmul
    local a b
    a=$(count "$1" "$2" "$3" 0 "$4")
    b=$(count "$1" "$2" "$3" 4 "$4")
    echo $(((b - a) / 4))
}
echo "guest instructions per ${N_IN} x ${N_OUT} matmul (qemu-aarch64 -cpu max)"
printf '| table | B | type | from rows | from panels | ratio |\n|---|---:|---|---:|---:|---:|\n'
for table in neon+dotprod neon; do
    for B in 1 8; do
        for t in Q4_K Q5_K Q6_K Q3_K Q2_K Q5_0 Q5_1 Q8_0 Q4_1; do
            p=$(per_call "$table" "$t" "$B" 1)
            case $t in
            Q8_0 | Q4_1) printf '| %s | %d | %s | - | %d | - |\n' "$table" "$B" "$t" "$p" ;;
            *)
                r=$(per_call "$table" "$t" "$B" 0)
                printf '| %s | %d | %s | %d | %d | %s |\n' "$table" "$B" "$t" "$r" "$p" "$(awk -v r="$r" -v p="$p" 'BEGIN { printf "%.1fx", r / p }')"
                ;;
            esac
        done
    done
done
